# cython: language_level=3
"""Exit-leaf kernels for the paper's arithmetic traversals (ALGORITHMS.md, algorithms 2-6).

Per row and tree, the test vector ``t`` (bit n set iff node n is false) is computed by
evaluating every internal node with the shared rule ``goes_left`` of ``_forest.pxd`` (the
"both vectors" kernel evaluates nodes one at a time and may stop early). The exit leaf then
comes from bit-packed rows or columns of the tree's matrices, laid out by
``quickscorer.arithmetic``:

* KIND_BOTH (Alg. 2): AND the left vector (column of L) of each false node and the right vector
  (column of R) of each true node into the candidate leaves, until one leaf is left;
* KIND_LT1 (Alg. 3): ``v_i = popcount(L_i & t) + 1``; the exit is the leftmost maximum,
  ``popcount(t) + 1``;
* KIND_TWO_SIDED (Alg. 4): ``v_i = popcount(L_i & t) + popcount(R_i & ~t)``; the exit is the
  unique leaf with ``v_i`` = number of nodes;
* KIND_SIGN (Alg. 5/7): ``P_i . s - d_i = -2 popcount((t ^ E_i) & M_i)``; the exit is the
  unique zero;
* KIND_ECOC (Alg. 6): ``<P_i, s>`` from the dense int8 path rows; the exit is the leaf whose
  similarity ``<P_i, s> / <P_i, P_i>`` is 1, i.e. ``<P_i, s> = d_i`` (compared as integers).

Scores are summed with ``scores_add`` in tree order: bit-exact with the reference walk.
"""
import numpy as np

cimport numpy as cnp
from cython.parallel cimport prange, parallel, threadid
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memset

from ._forest cimport (Forest, ForestView, floating, load_row, goes_left, scores_init,
                       scores_add)

cnp.import_array()

cdef extern from *:
    """
    #if defined(_MSC_VER)
    #include <intrin.h>
    static inline int ar_popcount64(unsigned long long x) { return (int)__popcnt64(x); }
    static inline int ar_ctz64(unsigned long long x) {
        unsigned long i; _BitScanForward64(&i, x); return (int)i;
    }
    #else
    static inline int ar_popcount64(unsigned long long x) { return __builtin_popcountll(x); }
    static inline int ar_ctz64(unsigned long long x) { return __builtin_ctzll(x); }
    #endif
    """
    int ar_popcount64(uint64_t x) noexcept nogil
    int ar_ctz64(uint64_t x) noexcept nogil

cpdef enum:
    KIND_BOTH = 0
    KIND_LT1 = 1
    KIND_TWO_SIDED = 2
    KIND_SIGN = 3
    KIND_ECOC = 4


cdef struct ArithView:
    int kind
    int64_t n_trees
    # nodes (canonical, concatenated over trees), as for the reference walk
    const int32_t* feature
    const double* threshold
    const uint8_t* flags
    const int64_t* cat_offset
    const int64_t* cat_nwords
    const uint32_t* cat_words
    const int64_t* node_offset      # [n_trees + 1]
    const int64_t* leaf_offset      # [n_trees + 1]
    const int64_t* node_words       # [n_trees]: words of a packed row over nodes
    const int64_t* leaf_words       # [n_trees]: words of a packed column over leaves
    # packed rows over nodes, per leaf: tree t's rows start at row_offset[t], nw words each
    const int64_t* row_offset
    const uint64_t* rows_a          # L rows (lt1, two_sided) or M path masks (sign)
    const uint64_t* rows_b          # R rows (two_sided) or E expected signs (sign)
    # packed columns over leaves, per node (both vectors)
    const int64_t* col_offset
    const uint64_t* cols_l
    const uint64_t* cols_r
    # dense path rows (ecoc)
    const int64_t* p_offset
    const int8_t* p_rows
    const int32_t* depth            # per global leaf


cdef const void* _ptr(dict a, str name) except NULL:
    arr = a[name]
    if not isinstance(arr, np.ndarray) or not arr.flags.c_contiguous:
        raise ValueError(f"arithmetic layout field {name!r} must be a C-contiguous array")
    if arr.size == 0:
        raise ValueError(f"arithmetic layout field {name!r} is empty")
    return cnp.PyArray_DATA(arr)


cdef class ArithLayout:
    """The arrays of one arithmetic algorithm, wrapped without copying."""
    cdef ArithView view
    cdef object _keep
    cdef readonly int64_t max_node_words, max_leaf_words, max_nodes

    def __cinit__(self, dict a, int kind):
        self._keep = dict(a)
        self.view.kind = kind
        self.view.n_trees = a["node_offset"].shape[0] - 1
        self.view.feature = <const int32_t*>_ptr(a, "feature")
        self.view.threshold = <const double*>_ptr(a, "threshold")
        self.view.flags = <const uint8_t*>_ptr(a, "flags")
        self.view.cat_offset = <const int64_t*>_ptr(a, "cat_offset")
        self.view.cat_nwords = <const int64_t*>_ptr(a, "cat_nwords")
        self.view.cat_words = <const uint32_t*>_ptr(a, "cat_words")
        self.view.node_offset = <const int64_t*>_ptr(a, "node_offset")
        self.view.leaf_offset = <const int64_t*>_ptr(a, "leaf_offset")
        self.view.node_words = <const int64_t*>_ptr(a, "node_words")
        self.view.leaf_words = <const int64_t*>_ptr(a, "leaf_words")
        self.view.row_offset = <const int64_t*>_ptr(a, "row_offset")
        self.view.rows_a = <const uint64_t*>_ptr(a, "rows_a")
        self.view.rows_b = <const uint64_t*>_ptr(a, "rows_b")
        self.view.col_offset = <const int64_t*>_ptr(a, "col_offset")
        self.view.cols_l = <const uint64_t*>_ptr(a, "cols_l")
        self.view.cols_r = <const uint64_t*>_ptr(a, "cols_r")
        self.view.p_offset = <const int64_t*>_ptr(a, "p_offset")
        self.view.p_rows = <const int8_t*>_ptr(a, "p_rows")
        self.view.depth = <const int32_t*>_ptr(a, "depth")
        self.max_node_words = int(a["node_words"].max()) if self.view.n_trees else 1
        self.max_leaf_words = int(a["leaf_words"].max()) if self.view.n_trees else 1
        counts = np.diff(a["node_offset"])
        self.max_nodes = max(1, int(counts.max()) if counts.size else 1)

    def __reduce__(self):
        return (ArithLayout, (self._keep, self.view.kind))


cdef inline bint node_false(const ArithView* a, int family, int64_t g,
                            const double* row) noexcept nogil:
    return not goes_left(family, a.flags[g], a.threshold[g], a.cat_words + a.cat_offset[g],
                         a.cat_nwords[g], row[a.feature[g]])


cdef inline void test_bits(const ArithView* a, int family, int64_t t, const double* row,
                           uint64_t* tv) noexcept nogil:
    """t: bit n set iff internal node n of tree t is false for row."""
    cdef int64_t base = a.node_offset[t]
    cdef int64_t m = a.node_offset[t + 1] - base
    cdef int64_t n
    memset(tv, 0, a.node_words[t] * sizeof(uint64_t))
    for n in range(m):
        if node_false(a, family, base + n, row):
            tv[n >> 6] |= (<uint64_t>1) << (n & 63)


cdef inline int64_t exit_both(const ArithView* a, int family, int64_t t, const double* row,
                              uint64_t* v) noexcept nogil:
    cdef int64_t base = a.node_offset[t]
    cdef int64_t m = a.node_offset[t + 1] - base
    cdef int64_t n_leaves = a.leaf_offset[t + 1] - a.leaf_offset[t]
    cdef int64_t lw = a.leaf_words[t]
    cdef int64_t n, w, left
    cdef const uint64_t* col
    cdef uint64_t acc
    for w in range(lw):  # candidates: the tree's leaves, no padding bits
        left = n_leaves - 64 * w
        v[w] = (~(<uint64_t>0)) if left >= 64 else (((<uint64_t>1) << left) - 1)
    for n in range(m):
        if node_false(a, family, base + n, row):
            col = a.cols_l + a.col_offset[t] + n * lw
        else:
            col = a.cols_r + a.col_offset[t] + n * lw
        if lw == 1:
            v[0] &= col[0]
            if (v[0] & (v[0] - 1)) == 0:
                break
        else:
            acc = 0
            for w in range(lw):
                v[w] &= col[w]
                acc += ar_popcount64(v[w])
            if acc == 1:
                break
    w = 0
    while v[w] == 0:
        w += 1
    return (w << 6) + ar_ctz64(v[w])


cdef inline int64_t exit_rows(const ArithView* a, int64_t t, const uint64_t* tv,
                              const int8_t* s) noexcept nogil:
    """Exit leaf of tree t from its test vector, by the row kernels (lt1, two_sided, sign,
    ecoc); -1 if no leaf qualifies (impossible for a valid layout)."""
    cdef int64_t m = a.node_offset[t + 1] - a.node_offset[t]
    cdef int64_t n_leaves = a.leaf_offset[t + 1] - a.leaf_offset[t]
    cdef int64_t nw = a.node_words[t]
    cdef int64_t i, w, n, target
    cdef int64_t acc
    cdef const uint64_t* ra
    cdef const uint64_t* rb
    cdef const int8_t* p
    cdef uint64_t valid
    if m == 0:
        return 0
    if a.kind == KIND_LT1:
        target = 0
        for w in range(nw):
            target += ar_popcount64(tv[w])
        for i in range(n_leaves):
            ra = a.rows_a + a.row_offset[t] + i * nw
            acc = 0
            for w in range(nw):
                acc += ar_popcount64(ra[w] & tv[w])
            if acc == target:      # the leftmost leaf reaching popcount(t) + 1 - 1
                return i
    elif a.kind == KIND_TWO_SIDED:
        for i in range(n_leaves):
            ra = a.rows_a + a.row_offset[t] + i * nw
            rb = a.rows_b + a.row_offset[t] + i * nw
            acc = 0
            for w in range(nw):    # R rows carry no padding bits, so ~t needs no mask
                acc += ar_popcount64(ra[w] & tv[w]) + ar_popcount64(rb[w] & ~tv[w])
            if acc == m:
                return i
    elif a.kind == KIND_SIGN:
        for i in range(n_leaves):
            ra = a.rows_a + a.row_offset[t] + i * nw
            rb = a.rows_b + a.row_offset[t] + i * nw
            acc = 0
            for w in range(nw):
                acc += ar_popcount64((tv[w] ^ rb[w]) & ra[w])
            if acc == 0:           # P_i . s - d_i = -2 acc
                return i
    else:  # KIND_ECOC
        for i in range(n_leaves):
            p = a.p_rows + a.p_offset[t] + i * m
            acc = 0
            for n in range(m):
                acc += p[n] * s[n]
            if acc == a.depth[a.leaf_offset[t] + i]:
                return i
    return -1


cdef inline int64_t exit_leaf(const ArithView* a, int family, int64_t t, const double* row,
                              uint64_t* tv, uint64_t* v, int8_t* s) noexcept nogil:
    cdef int64_t base, m, n
    if a.kind == KIND_BOTH:
        if a.node_offset[t + 1] == a.node_offset[t]:
            return 0
        return exit_both(a, family, t, row, v)
    test_bits(a, family, t, row, tv)
    if a.kind == KIND_ECOC:
        base = a.node_offset[t]
        m = a.node_offset[t + 1] - base
        for n in range(m):
            s[n] = <int8_t>(2 * <int>((tv[n >> 6] >> (n & 63)) & 1) - 1)
    return exit_rows(a, t, tv, s)


def _check(Forest forest, ArithLayout lay, Py_ssize_t n_cols, double[:, ::1] rowbuf,
           uint64_t[:, ::1] wordbuf, int8_t[:, ::1] signbuf, int n_threads):
    if n_threads < 1:
        raise ValueError(f"n_threads must be >= 1, got {n_threads}")
    if n_cols != forest.view.n_features:
        raise ValueError(f"input has {n_cols} features, the model expects "
                         f"{forest.view.n_features}")
    if lay.view.n_trees != forest.view.n_trees:
        raise ValueError("the arithmetic layout and the forest disagree on the tree count")
    if rowbuf.shape[0] < n_threads or rowbuf.shape[1] < forest.view.n_features:
        raise ValueError(f"rowbuf must be at least ({n_threads}, {forest.view.n_features})")
    if (wordbuf.shape[0] < n_threads
            or wordbuf.shape[1] < lay.max_node_words + lay.max_leaf_words):
        raise ValueError("wordbuf is too small")
    if signbuf.shape[0] < n_threads or signbuf.shape[1] < lay.max_nodes:
        raise ValueError("signbuf is too small")


def scratch(ArithLayout lay, int n_threads):
    """Per-call scratch buffers (words for t and candidates, signs), one row per thread."""
    return (np.empty((n_threads, lay.max_node_words + lay.max_leaf_words), np.uint64),
            np.empty((n_threads, lay.max_nodes), np.int8))


def predict_raw(Forest forest, ArithLayout lay, const floating[:, :] X,
                double[:, ::1] out64, float[:, ::1] out32, double[:, ::1] rowbuf,
                uint64_t[:, ::1] wordbuf, int8_t[:, ::1] signbuf, int n_threads):
    """Raw scores into out64 (LightGBM) or out32 (XGBoost)."""
    _check(forest, lay, X.shape[1], rowbuf, wordbuf, signbuf, n_threads)
    cdef const ForestView* f = &forest.view
    cdef const ArithView* a = &lay.view
    cdef Py_ssize_t n_rows = X.shape[0]
    cdef Py_ssize_t k = f.n_outputs
    if forest.dtype == np.float32:
        if out32.shape[0] != n_rows or out32.shape[1] != k:
            raise ValueError(f"out32 must be ({n_rows}, {k})")
    elif out64.shape[0] != n_rows or out64.shape[1] != k:
        raise ValueError(f"out64 must be ({n_rows}, {k})")
    cdef int64_t nwmax = lay.max_node_words
    cdef Py_ssize_t i
    cdef int64_t t
    cdef double* row
    cdef uint64_t* tv
    cdef uint64_t* v
    cdef int8_t* s
    cdef double* o64
    cdef float* o32
    with nogil, parallel(num_threads=n_threads):
        row = &rowbuf[threadid(), 0]
        tv = &wordbuf[threadid(), 0]
        v = tv + nwmax
        s = &signbuf[threadid(), 0]
        for i in prange(n_rows, schedule="static"):
            load_row(f, X, i, row)
            o64 = &out64[i, 0] if out64.shape[0] else NULL
            o32 = &out32[i, 0] if out32.shape[0] else NULL
            scores_init(f, o64, o32)
            for t in range(f.n_trees):
                scores_add(f, t, exit_leaf(a, f.family, t, row, tv, v, s), row, o64, o32)


def predict_leaf(Forest forest, ArithLayout lay, const floating[:, :] X, int32_t[:, ::1] out,
                 double[:, ::1] rowbuf, uint64_t[:, ::1] wordbuf, int8_t[:, ::1] signbuf,
                 int n_threads):
    """Canonical exit leaf of every tree for every row, into out (n_rows, n_trees)."""
    _check(forest, lay, X.shape[1], rowbuf, wordbuf, signbuf, n_threads)
    cdef const ForestView* f = &forest.view
    cdef const ArithView* a = &lay.view
    cdef Py_ssize_t n_rows = X.shape[0]
    if out.shape[0] != n_rows or out.shape[1] != f.n_trees:
        raise ValueError(f"out must be ({n_rows}, {f.n_trees})")
    cdef int64_t nwmax = lay.max_node_words
    cdef Py_ssize_t i
    cdef int64_t t
    cdef double* row
    cdef uint64_t* tv
    cdef uint64_t* v
    cdef int8_t* s
    with nogil, parallel(num_threads=n_threads):
        row = &rowbuf[threadid(), 0]
        tv = &wordbuf[threadid(), 0]
        v = tv + nwmax
        s = &signbuf[threadid(), 0]
        for i in prange(n_rows, schedule="static"):
            load_row(f, X, i, row)
            for t in range(f.n_trees):
                out[i, t] = <int32_t>exit_leaf(a, f.family, t, row, tv, v, s)
