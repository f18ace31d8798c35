# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""CatBoost's CTR stage in C (quickscorer/ir/ctr.py builds the arrays and states the rules):
for every row, each categorical value's 32-bit hash, each projection's 64-bit hash, its
bucket in each table (open addressing on the hash's top bits) and each CTR column's value,
written after the row's inputs. The GIL is released around the rows.

Arrays (CtrFeatures._kernel_arrays, held by a Stage):
    cat_col[i], cat_off[i] .. cat_off[i + 1]: categorical feature i's input column and its
        known values (cat_val, sorted float64) with their hashes (cat_hash, uint32)
    p_cat_off / p_cat, p_flt_off / flt_col, flt_border (float32), flt_nan (uint8),
    p_ex_off / ex_cat, ex_hash: each projection's categorical features, float tests and
        one-hot tests, in hashing order
    t_proj[t], t_off[t] .. t_off[t + 1] (a power of two slots, at least 2), t_shift[t] (64 -
        its log2): table t's projection and its slots (slot_key uint64, slot_bucket int32,
        -1 empty; at least one empty)
    c_table[c], c_off[c]: column c's table and its values (val, float32, one a bucket);
        c_unseen[c] its value where the row's hash is in no slot
"""
import numpy as np

from libc.math cimport isnan
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc

ctypedef fused real:
    float
    double

cdef uint64_t MULT = 0x4906BA494954CB65ULL


cdef inline uint64_t mix(uint64_t h, uint64_t v) noexcept nogil:
    return MULT * (h + MULT * v)


cdef inline int64_t find(const double* vals, int64_t lo, int64_t end, double x) noexcept nogil:
    """The index of x in the sorted vals[lo:end], or -1."""
    cdef int64_t mid, hi = end
    while lo < hi:
        mid = (lo + hi) >> 1
        if vals[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo if lo < end and vals[lo] == x else -1


cdef inline int32_t probe(const uint64_t* keys, const int32_t* bucket, int64_t size,
                          int64_t shift, uint64_t h) noexcept nogil:
    """The bucket of key h in a table of `size` slots (a power of two of at least 2, shift
    = 64 - its log2: the hash's top bits pick the first slot), or -1."""
    cdef uint64_t mask = <uint64_t>size - 1
    cdef uint64_t s = h >> shift
    while bucket[s] >= 0:
        if keys[s] == h:
            return bucket[s]
        s = (s + 1) & mask
    return -1


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


cdef class Stage:
    """The arrays above, checked once: every index within its array, every table a power of
    two slots with an empty one, every column's values covering its table's buckets."""
    cdef readonly const int64_t[::1] cat_col
    cdef readonly const int64_t[::1] cat_off
    cdef readonly const double[::1] cat_val
    cdef readonly const uint32_t[::1] cat_hash
    cdef readonly const int64_t[::1] p_cat_off
    cdef readonly const int64_t[::1] p_cat
    cdef readonly const int64_t[::1] p_flt_off
    cdef readonly const int64_t[::1] flt_col
    cdef readonly const float[::1] flt_border
    cdef readonly const uint8_t[::1] flt_nan
    cdef readonly const int64_t[::1] p_ex_off
    cdef readonly const int64_t[::1] ex_cat
    cdef readonly const uint32_t[::1] ex_hash
    cdef readonly const int64_t[::1] t_proj
    cdef readonly const int64_t[::1] t_off
    cdef readonly const int64_t[::1] t_shift
    cdef readonly const uint64_t[::1] slot_key
    cdef readonly const int32_t[::1] slot_bucket
    cdef readonly const int64_t[::1] c_table
    cdef readonly const int64_t[::1] c_off
    cdef readonly const float[::1] val
    cdef readonly const float[::1] c_unseen
    cdef readonly Py_ssize_t n_cat, n_proj, n_tab, n_col, n_inputs

    def __cinit__(self, dict a, Py_ssize_t n_inputs):
        self.cat_col = a["cat_col"]
        self.cat_off = a["cat_off"]
        self.cat_val = a["cat_val"]
        self.cat_hash = a["cat_hash"]
        self.p_cat_off = a["p_cat_off"]
        self.p_cat = a["p_cat"]
        self.p_flt_off = a["p_flt_off"]
        self.flt_col = a["flt_col"]
        self.flt_border = a["flt_border"]
        self.flt_nan = a["flt_nan"]
        self.p_ex_off = a["p_ex_off"]
        self.ex_cat = a["ex_cat"]
        self.ex_hash = a["ex_hash"]
        self.t_proj = a["t_proj"]
        self.t_off = a["t_off"]
        self.t_shift = a["t_shift"]
        self.slot_key = a["slot_key"]
        self.slot_bucket = a["slot_bucket"]
        self.c_table = a["c_table"]
        self.c_off = a["c_off"]
        self.val = a["val"]
        self.c_unseen = a["c_unseen"]
        cdef Py_ssize_t t, j, c, size
        cdef int64_t most
        self.n_inputs = n_inputs
        self.n_cat = self.cat_col.shape[0]
        self.n_proj = self.p_cat_off.shape[0] - 1
        self.n_tab = self.t_proj.shape[0]
        self.n_col = self.c_table.shape[0]
        _check(self.cat_col, n_inputs, "a categorical column")
        _check(self.flt_col, n_inputs, "a float test's column")
        _check(self.p_cat, self.n_cat, "a projection's categorical feature")
        _check(self.ex_cat, self.n_cat, "a one-hot test's categorical feature")
        _check(self.t_proj, self.n_proj, "a table's projection")
        _check(self.c_table, self.n_tab, "a column's table")
        _offsets(self.cat_off, self.n_cat, self.cat_val.shape[0], "the categories")
        _offsets(self.p_cat_off, self.n_proj, self.p_cat.shape[0],
                 "the projections' categorical features")
        _offsets(self.p_flt_off, self.n_proj, self.flt_col.shape[0],
                 "the projections' float tests")
        _offsets(self.p_ex_off, self.n_proj, self.ex_cat.shape[0],
                 "the projections' one-hot tests")
        _offsets(self.t_off, self.n_tab, self.slot_key.shape[0], "the tables' slots")
        if (self.cat_hash.shape[0] != self.cat_val.shape[0]
                or self.slot_bucket.shape[0] != self.slot_key.shape[0]
                or self.flt_border.shape[0] != self.flt_col.shape[0]
                or self.flt_nan.shape[0] != self.flt_col.shape[0]
                or self.ex_hash.shape[0] != self.ex_cat.shape[0]
                or self.c_off.shape[0] != self.n_col or self.c_unseen.shape[0] != self.n_col
                or self.t_shift.shape[0] != self.n_tab):
            raise ValueError("the CTR arrays disagree on their sizes")
        for t in range(self.n_tab):
            size = self.t_off[t + 1] - self.t_off[t]
            if (size < 2 or size & (size - 1)
                    or self.t_shift[t] != 64 - (size.bit_length() - 1)):
                raise ValueError(f"table {t} is not a power of two slots of at least 2")
            most = -1
            empty = False
            for j in range(self.t_off[t], self.t_off[t + 1]):
                most = max(most, self.slot_bucket[j])
                empty = empty or self.slot_bucket[j] < 0
            if not empty:
                raise ValueError(f"table {t} has no empty slot")
            for c in range(self.n_col):
                if self.c_table[c] == t and (self.c_off[c] < 0
                                             or self.c_off[c] + most + 1 > self.val.shape[0]):
                    raise ValueError(f"column {c}'s values do not cover its table's buckets")


def apply(Stage st, const real[:, :] X, real[:, ::1] out):
    """out[:, :n_inputs] = X, then the CTR columns."""
    cdef Py_ssize_t n = X.shape[0], m = X.shape[1]
    cdef Py_ssize_t r, i, j, p, t, c, size
    cdef int64_t k
    cdef double x
    cdef float xf
    cdef uint64_t h
    cdef Py_ssize_t n_cat = st.n_cat, n_proj = st.n_proj, n_tab = st.n_tab, n_col = st.n_col
    if m != st.n_inputs or out.shape[0] != n or out.shape[1] != m + n_col:
        raise ValueError("the rows or the output do not have the stage's columns")
    cdef const int64_t[::1] cat_col = st.cat_col
    cdef const int64_t[::1] cat_off = st.cat_off
    cdef const double[::1] cat_val = st.cat_val
    cdef const uint32_t[::1] cat_hash = st.cat_hash
    cdef const int64_t[::1] p_cat_off = st.p_cat_off
    cdef const int64_t[::1] p_cat = st.p_cat
    cdef const int64_t[::1] p_flt_off = st.p_flt_off
    cdef const int64_t[::1] flt_col = st.flt_col
    cdef const float[::1] flt_border = st.flt_border
    cdef const uint8_t[::1] flt_nan = st.flt_nan
    cdef const int64_t[::1] p_ex_off = st.p_ex_off
    cdef const int64_t[::1] ex_cat = st.ex_cat
    cdef const uint32_t[::1] ex_hash = st.ex_hash
    cdef const int64_t[::1] t_proj = st.t_proj
    cdef const int64_t[::1] t_off = st.t_off
    cdef const int64_t[::1] t_shift = st.t_shift
    cdef const uint64_t[::1] slot_key = st.slot_key
    cdef const int32_t[::1] slot_bucket = st.slot_bucket
    cdef const int64_t[::1] c_table = st.c_table
    cdef const int64_t[::1] c_off = st.c_off
    cdef const float[::1] val = st.val
    cdef const float[::1] c_unseen = st.c_unseen
    cdef int64_t* ibuf = <int64_t*>malloc((n_cat + n_proj + n_tab + 1) * sizeof(int64_t))
    cdef uint64_t* pbuf = <uint64_t*>malloc((n_proj + 1) * sizeof(uint64_t))
    if ibuf == NULL or pbuf == NULL:
        free(ibuf)
        free(pbuf)
        raise MemoryError()
    cdef int64_t* chash = ibuf               # a value's hash (>= 0) or -1: no known category
    cdef int64_t* unknown = ibuf + n_cat     # a projection holds a value of no known category
    cdef int64_t* tbucket = ibuf + n_cat + n_proj
    try:
        with nogil:
            for r in range(n):
                for j in range(m):
                    out[r, j] = X[r, j]
                for i in range(n_cat):
                    x = X[r, cat_col[i]]
                    k = -1 if isnan(x) else find(&cat_val[0], cat_off[i], cat_off[i + 1], x)
                    chash[i] = cat_hash[k] if k >= 0 else -1
                for p in range(n_proj):
                    h = 0
                    unknown[p] = 0
                    for j in range(p_cat_off[p], p_cat_off[p + 1]):
                        k = chash[p_cat[j]]
                        if k < 0:
                            unknown[p] = 1
                        # the 32-bit hash signed, widened to 64 bits
                        h = mix(h, <uint64_t><int64_t><int32_t><uint32_t>k)
                    for j in range(p_flt_off[p], p_flt_off[p + 1]):
                        x = X[r, flt_col[j]]
                        if isnan(x):
                            h = mix(h, flt_nan[j])
                        else:
                            xf = <float>x
                            h = mix(h, 1 if xf > flt_border[j] else 0)
                    for j in range(p_ex_off[p], p_ex_off[p + 1]):
                        k = chash[ex_cat[j]]
                        h = mix(h, 1 if k >= 0 and <uint32_t>k == ex_hash[j] else 0)
                    pbuf[p] = h
                for t in range(n_tab):
                    p = t_proj[t]
                    if unknown[p]:
                        tbucket[t] = -1
                        continue
                    size = t_off[t + 1] - t_off[t]
                    tbucket[t] = probe(&slot_key[t_off[t]], &slot_bucket[t_off[t]], size,
                                       t_shift[t], pbuf[p])
                for c in range(n_col):
                    k = tbucket[c_table[c]]
                    out[r, m + c] = val[c_off[c] + k] if k >= 0 else c_unseen[c]
    finally:
        free(ibuf)
        free(pbuf)
