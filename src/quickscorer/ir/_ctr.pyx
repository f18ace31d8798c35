# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""CatBoost's CTR stage in C (quickscorer/ir/ctr.py builds the arrays and states the rules):
each categorical value's 32-bit hash, each projection's 64-bit hash, its bucket in each table
(open addressing on the hash's top bits) and each CTR column's value, written after the row's
inputs. Rows go BLOCK at a time, each step for every row of the block before the next step,
so the probes of a table, independent of each other, overlap their cache misses; blocks are
shared among threads. The GIL is released around the rows.

Arrays (CtrFeatures._kernel_arrays, held by a Stage, which checks them once):
    cat_col[i], cat_off[i] .. cat_off[i + 1]: categorical feature i's input column and, for
        each number from 0, the hash of the category it names (cat_hash, int64; -1: none)
    p_cat_off / p_cat, p_flt_off / flt_col, flt_border (float32), flt_nan (uint8),
    p_ex_off / ex_cat, ex_hash: each projection's categorical features, float tests and
        one-hot tests, in hashing order
    t_proj[t], t_off[t] .. t_off[t + 1] (a power of two slots, at least 2, one empty),
        t_shift[t] (64 - its log2): table t's projection and its slots (key, bucket; -1:
        empty)
    t_col_off[t] .. t_col_off[t + 1]: the columns that read table t (t_col, in order), their
        values bucket by bucket from val[t_val_off[t]] (width: their number); c_unseen[c]
        column c's value where the row's hash is in no slot
"""
import numpy as np

from libc.math cimport floor, isnan
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc
from cython.parallel cimport parallel, prange, threadid

ctypedef fused real:
    float
    double

ctypedef struct slot_t:
    uint64_t key
    int32_t bucket
    int32_t pad

#: the slot's numpy dtype
SLOT_DTYPE = np.dtype([("key", np.uint64), ("bucket", np.int32), ("pad", np.int32)])

cdef enum:
    BLOCK = 32

cdef uint64_t MULT = 0x4906BA494954CB65ULL


cdef inline uint64_t mix(uint64_t h, uint64_t v) noexcept nogil:
    return MULT * (h + MULT * v)


cdef inline int32_t probe(const slot_t* slots, int64_t size, int64_t shift,
                          uint64_t h) noexcept nogil:
    """The bucket of key h in a table of `size` slots (a power of two of at least 2, shift
    = 64 - its log2: the hash's top bits pick the first slot), or -1."""
    cdef uint64_t mask = <uint64_t>size - 1
    cdef uint64_t s = h >> shift
    while slots[s].bucket >= 0:
        if slots[s].key == h:
            return slots[s].bucket
        s = (s + 1) & mask
    return -1


cdef inline const int64_t* _p(const int64_t[::1] a):
    return &a[0] if a.shape[0] else NULL


cdef int _check(const int64_t[::1] idx, Py_ssize_t n, str what) except -1:
    cdef Py_ssize_t i
    for i in range(idx.shape[0]):
        if not 0 <= idx[i] < n:
            raise ValueError(f"{what} is out of range")
    return 0


cdef int _offsets(const int64_t[::1] off, Py_ssize_t n, Py_ssize_t total, str what) except -1:
    cdef Py_ssize_t i
    if off.shape[0] != n + 1 or off[0] != 0 or off[n] != total:
        raise ValueError(f"the offsets of {what} do not span them")
    for i in range(n):
        if off[i + 1] < off[i]:
            raise ValueError(f"the offsets of {what} decrease")
    return 0


cdef struct View:
    # the Stage's arrays as pointers, for the loops (no memoryview checks inside them)
    Py_ssize_t n_inputs, n_cat, n_proj, n_tab
    const int64_t* cat_col
    const int64_t* cat_off
    const int64_t* cat_hash
    const int64_t* p_cat_off
    const int64_t* p_cat
    const int64_t* p_flt_off
    const int64_t* flt_col
    const float* flt_border
    const uint8_t* flt_nan
    const int64_t* p_ex_off
    const int64_t* ex_cat
    const uint32_t* ex_hash
    const int64_t* t_proj
    const int64_t* t_off
    const int64_t* t_shift
    const slot_t* slots
    const int64_t* t_col_off
    const int64_t* t_col
    const int64_t* t_val_off
    const float* val
    const float* c_unseen


cdef class Stage:
    """The arrays above, checked once: every index within its array, every table a power of
    two slots with an empty one, every table's values covering its buckets, every column
    read from one table."""
    cdef readonly const int64_t[::1] cat_col, cat_off, p_cat_off, p_cat, p_flt_off, flt_col
    cdef readonly const int64_t[::1] p_ex_off, ex_cat, t_proj, t_off, t_shift
    cdef readonly const int64_t[::1] t_col_off, t_col, t_val_off
    cdef readonly const int64_t[::1] cat_hash
    cdef readonly const uint32_t[::1] ex_hash
    cdef readonly const float[::1] flt_border, val, c_unseen
    cdef readonly const uint8_t[::1] flt_nan
    cdef readonly const slot_t[::1] slots
    cdef readonly Py_ssize_t n_cat, n_proj, n_tab, n_col, n_inputs
    cdef View view

    def __cinit__(self, dict a, Py_ssize_t n_inputs):
        cdef Py_ssize_t t, j, size
        cdef int64_t most, width
        cdef View* v
        self.cat_col, self.cat_off = a["cat_col"], a["cat_off"]
        self.cat_hash = a["cat_hash"]
        self.p_cat_off, self.p_cat = a["p_cat_off"], a["p_cat"]
        self.p_flt_off, self.flt_col = a["p_flt_off"], a["flt_col"]
        self.flt_border, self.flt_nan = a["flt_border"], a["flt_nan"]
        self.p_ex_off, self.ex_cat, self.ex_hash = a["p_ex_off"], a["ex_cat"], a["ex_hash"]
        self.t_proj, self.t_off, self.t_shift = a["t_proj"], a["t_off"], a["t_shift"]
        self.slots = a["slots"]
        self.t_col_off, self.t_col, self.t_val_off = a["t_col_off"], a["t_col"], a["t_val_off"]
        self.val, self.c_unseen = a["val"], a["c_unseen"]
        self.n_inputs = n_inputs
        self.n_cat = self.cat_col.shape[0]
        self.n_proj = self.p_cat_off.shape[0] - 1
        self.n_tab = self.t_proj.shape[0]
        self.n_col = self.c_unseen.shape[0]
        _check(self.cat_col, n_inputs, "a categorical column")
        _check(self.flt_col, n_inputs, "a float test's column")
        _check(self.p_cat, self.n_cat, "a projection's categorical feature")
        _check(self.ex_cat, self.n_cat, "a one-hot test's categorical feature")
        _check(self.t_proj, self.n_proj, "a table's projection")
        _check(self.t_col, self.n_col, "a table's column")
        _offsets(self.cat_off, self.n_cat, self.cat_hash.shape[0], "the categories")
        _offsets(self.p_cat_off, self.n_proj, self.p_cat.shape[0],
                 "the projections' categorical features")
        _offsets(self.p_flt_off, self.n_proj, self.flt_col.shape[0],
                 "the projections' float tests")
        _offsets(self.p_ex_off, self.n_proj, self.ex_cat.shape[0],
                 "the projections' one-hot tests")
        _offsets(self.t_off, self.n_tab, self.slots.shape[0], "the tables' slots")
        _offsets(self.t_col_off, self.n_tab, self.t_col.shape[0], "the tables' columns")
        if (self.flt_border.shape[0] != self.flt_col.shape[0]
                or self.flt_nan.shape[0] != self.flt_col.shape[0]
                or self.ex_hash.shape[0] != self.ex_cat.shape[0]
                or self.t_shift.shape[0] != self.n_tab or self.t_val_off.shape[0] != self.n_tab
                or self.t_col.shape[0] != self.n_col
                or np.unique(np.asarray(self.t_col)).shape[0] != self.n_col):
            raise ValueError("the CTR arrays disagree on their sizes")
        for t in range(self.n_tab):
            size = self.t_off[t + 1] - self.t_off[t]
            if (size < 2 or size & (size - 1)
                    or self.t_shift[t] != 64 - (size.bit_length() - 1)):
                raise ValueError(f"table {t} is not a power of two slots of at least 2")
            most = -1
            empty = False
            for j in range(self.t_off[t], self.t_off[t + 1]):
                most = max(most, self.slots[j].bucket)
                empty = empty or self.slots[j].bucket < 0
            if not empty:
                raise ValueError(f"table {t} has no empty slot")
            width = self.t_col_off[t + 1] - self.t_col_off[t]
            if self.t_val_off[t] < 0 or self.t_val_off[t] + (most + 1) * width > self.val.shape[0]:
                raise ValueError(f"table {t}'s values do not cover its buckets")
        v = &self.view
        v.n_inputs, v.n_cat, v.n_proj, v.n_tab = n_inputs, self.n_cat, self.n_proj, self.n_tab
        v.cat_col, v.cat_off, v.cat_hash = _p(self.cat_col), _p(self.cat_off), _p(self.cat_hash)
        v.p_cat_off, v.p_cat = _p(self.p_cat_off), _p(self.p_cat)
        v.p_flt_off, v.flt_col = _p(self.p_flt_off), _p(self.flt_col)
        v.flt_border = &self.flt_border[0] if self.flt_border.shape[0] else NULL
        v.flt_nan = &self.flt_nan[0] if self.flt_nan.shape[0] else NULL
        v.p_ex_off, v.ex_cat = _p(self.p_ex_off), _p(self.ex_cat)
        v.ex_hash = &self.ex_hash[0] if self.ex_hash.shape[0] else NULL
        v.t_proj, v.t_off, v.t_shift = _p(self.t_proj), _p(self.t_off), _p(self.t_shift)
        v.slots = &self.slots[0] if self.slots.shape[0] else NULL
        v.t_col_off, v.t_col, v.t_val_off = _p(self.t_col_off), _p(self.t_col), _p(self.t_val_off)
        v.val = &self.val[0] if self.val.shape[0] else NULL
        v.c_unseen = &self.c_unseen[0] if self.c_unseen.shape[0] else NULL


cdef void _rows(const View* st, const real[:, :] X, real[:, ::1] out, Py_ssize_t r0,
                Py_ssize_t nb, int64_t* chash, uint64_t* phash, double* bad) noexcept nogil:
    """Rows r0 .. r0 + nb - 1 (at most BLOCK): each step for every row before the next.
    chash: (n_cat + n_proj + n_tab) * BLOCK words of scratch, phash: n_proj * BLOCK; bad:
    (row, column, value) of the first fractional categorical value met, row -1 for none."""
    cdef Py_ssize_t m = st.n_inputs, n_cat = st.n_cat, n_proj = st.n_proj, n_tab = st.n_tab
    # the arrays in locals: a store to `out` cannot change them, so they stay in registers
    cdef const int64_t* cat_col = st.cat_col
    cdef const int64_t* cat_off = st.cat_off
    cdef const int64_t* cat_hash = st.cat_hash
    cdef const int64_t* p_cat_off = st.p_cat_off
    cdef const int64_t* p_cat = st.p_cat
    cdef const int64_t* p_flt_off = st.p_flt_off
    cdef const int64_t* flt_col = st.flt_col
    cdef const float* flt_border = st.flt_border
    cdef const uint8_t* flt_nan = st.flt_nan
    cdef const int64_t* p_ex_off = st.p_ex_off
    cdef const int64_t* ex_cat = st.ex_cat
    cdef const uint32_t* ex_hash = st.ex_hash
    cdef const int64_t* t_proj = st.t_proj
    cdef const int64_t* t_off = st.t_off
    cdef const int64_t* t_shift = st.t_shift
    cdef const slot_t* slots = st.slots
    cdef const int64_t* t_col_off = st.t_col_off
    cdef const int64_t* t_col = st.t_col
    cdef const int64_t* t_val_off = st.t_val_off
    cdef const float* val = st.val
    cdef const float* c_unseen = st.c_unseen
    cdef int64_t* unknown = chash + n_cat * BLOCK
    cdef int64_t* bucket = chash + (n_cat + n_proj) * BLOCK
    cdef Py_ssize_t r, i, j, p, t, c, w
    cdef int64_t k
    cdef double x
    cdef float xf
    cdef uint64_t h
    cdef const float* v
    for r in range(nb):
        for j in range(m):
            out[r0 + r, j] = X[r0 + r, j]
    for i in range(n_cat):
        for r in range(nb):
            x = X[r0 + r, cat_col[i]]
            k = -1
            if 0.0 <= x < <double>(cat_off[i + 1] - cat_off[i]):
                if x == floor(x):
                    k = cat_hash[cat_off[i] + <int64_t>x]
            if x != floor(x) and x - x == 0.0 and bad[0] < 0:      # a finite fraction
                bad[0] = r0 + r
                bad[1] = cat_col[i]
                bad[2] = x
            chash[i * BLOCK + r] = k
    for p in range(n_proj):
        for r in range(nb):
            h = 0
            unknown[p * BLOCK + r] = 0
            for j in range(p_cat_off[p], p_cat_off[p + 1]):
                k = chash[p_cat[j] * BLOCK + r]
                if k < 0:
                    unknown[p * BLOCK + r] = 1
                # the 32-bit hash signed, widened to 64 bits
                h = mix(h, <uint64_t><int64_t><int32_t><uint32_t>k)
            for j in range(p_flt_off[p], p_flt_off[p + 1]):
                x = X[r0 + r, flt_col[j]]
                if isnan(x):
                    h = mix(h, flt_nan[j])
                else:
                    xf = <float>x
                    h = mix(h, 1 if xf > flt_border[j] else 0)
            for j in range(p_ex_off[p], p_ex_off[p + 1]):
                k = chash[ex_cat[j] * BLOCK + r]
                h = mix(h, 1 if k >= 0 and <uint32_t>k == ex_hash[j] else 0)
            phash[p * BLOCK + r] = h
    for t in range(n_tab):
        p = t_proj[t]
        for r in range(nb):
            bucket[t * BLOCK + r] = -1 if unknown[p * BLOCK + r] else probe(
                slots + t_off[t], t_off[t + 1] - t_off[t], t_shift[t],
                phash[p * BLOCK + r])
        w = t_col_off[t + 1] - t_col_off[t]
        for j in range(w):                   # a column at a time, every row
            c = t_col[t_col_off[t] + j]
            v = val + t_val_off[t] + j
            for r in range(nb):
                k = bucket[t * BLOCK + r]
                out[r0 + r, m + c] = v[k * w] if k >= 0 else c_unseen[c]


def apply(Stage st, const real[:, :] X, real[:, ::1] out, int n_threads=1):
    """out[:, :n_inputs] = X, then the CTR columns, blocks of rows over n_threads threads. A
    categorical value that is not a whole number names no category; the first such (by row)
    is returned as (column, value), else None."""
    cdef Py_ssize_t n = X.shape[0], m = X.shape[1]
    if m != st.n_inputs or out.shape[0] != n or out.shape[1] != m + st.n_col:
        raise ValueError("the rows or the output do not have the stage's columns")
    if n_threads < 1:
        raise ValueError(f"n_threads must be >= 1, got {n_threads}")
    cdef Py_ssize_t n_blocks = (n + BLOCK - 1) // BLOCK
    if n_threads > n_blocks:
        n_threads = max(1, <int>n_blocks)
    cdef Py_ssize_t words = (st.n_cat + st.n_proj + st.n_tab + 1) * BLOCK
    cdef Py_ssize_t pwords = (st.n_proj + 1) * BLOCK
    cdef int64_t* chash = <int64_t*>malloc(n_threads * words * sizeof(int64_t))
    cdef uint64_t* phash = <uint64_t*>malloc(n_threads * pwords * sizeof(uint64_t))
    cdef double* bad = <double*>malloc(n_threads * 3 * sizeof(double))
    if chash == NULL or phash == NULL or bad == NULL:
        free(chash)
        free(phash)
        free(bad)
        raise MemoryError()
    cdef Py_ssize_t b, tid, first = -1
    for tid in range(n_threads):
        bad[3 * tid] = -1
    try:
        if n_threads == 1:                  # no parallel region for one thread
            with nogil:
                for b in range(n_blocks):
                    _rows(&st.view, X, out, b * BLOCK, min(<Py_ssize_t>BLOCK, n - b * BLOCK),
                          chash, phash, bad)
        else:
            with nogil, parallel(num_threads=n_threads):
                tid = threadid()
                for b in prange(n_blocks, schedule="static"):
                    _rows(&st.view, X, out, b * BLOCK, min(<Py_ssize_t>BLOCK, n - b * BLOCK),
                          chash + tid * words, phash + tid * pwords, bad + 3 * tid)
        for tid in range(n_threads):        # each thread's first in its rows: the earliest
            if bad[3 * tid] >= 0 and (first < 0 or bad[3 * tid] < bad[3 * first]):
                first = tid
        return None if first < 0 else (int(bad[3 * first + 1]), bad[3 * first + 2])
    finally:
        free(chash)
        free(phash)
        free(bad)
