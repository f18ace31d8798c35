# cython: language_level=3
"""Exit-leaf kernels for the paper's arithmetic traversals (docs/algorithms.md, algorithms 2-6).

Per row and tree, the test vector ``t`` (bit n set iff node n is false) is computed by
evaluating every internal node with the shared rule ``goes_left`` of ``_forest.pxd`` (the
"both vectors" kernel evaluates nodes one at a time and may stop early). The exit leaf then
comes from bit-packed rows or columns of the tree's matrices, laid out by
``quickscorer.algorithms.arithmetic``:

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

The row loops and the summing of scores (in tree order, bit-exact with the reference walk)
are the shared ones of _kernel.pyx.
"""
import numpy as np

cimport numpy as cnp
from libc.stdint cimport int8_t, int32_t, int64_t, uint64_t
from libc.string cimport memset

from quickscorer._forest cimport ForestView
from quickscorer._kernel cimport emit, Layout, NodeView, array_data, node_goes_left, set_nodes

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
    NodeView nodes                  # as for the reference walk; nodes.node_offset [n_trees + 1]
    int64_t max_node_words          # scratch: test vector, then candidates, then signs
    int64_t max_leaf_words
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


_FIELDS = {
    "leaf_offset": np.int64, "node_words": np.int64, "leaf_words": np.int64,
    "row_offset": np.int64, "rows_a": np.uint64, "rows_b": np.uint64, "col_offset": np.int64,
    "cols_l": np.uint64, "cols_r": np.uint64, "p_offset": np.int64, "p_rows": np.int8,
    "depth": np.int32,
}


cdef class ArithLayout(Layout):
    """The arrays of one arithmetic algorithm, wrapped without copying."""
    cdef ArithView view
    cdef readonly int64_t max_node_words, max_leaf_words, max_nodes

    def __cinit__(self, dict a, int kind, int64_t n_features):
        self._keep = dict(a)
        self.view.kind = kind
        self.view.n_trees = a["node_offset"].shape[0] - 1
        set_nodes(&self.view.nodes, a, "arithmetic")
        for name, dtype in _FIELDS.items():
            array_data(a[name], dtype, "arithmetic", name)
        self.view.leaf_offset = <const int64_t*>cnp.PyArray_DATA(a["leaf_offset"])
        self.view.node_words = <const int64_t*>cnp.PyArray_DATA(a["node_words"])
        self.view.leaf_words = <const int64_t*>cnp.PyArray_DATA(a["leaf_words"])
        self.view.row_offset = <const int64_t*>cnp.PyArray_DATA(a["row_offset"])
        self.view.rows_a = <const uint64_t*>cnp.PyArray_DATA(a["rows_a"])
        self.view.rows_b = <const uint64_t*>cnp.PyArray_DATA(a["rows_b"])
        self.view.col_offset = <const int64_t*>cnp.PyArray_DATA(a["col_offset"])
        self.view.cols_l = <const uint64_t*>cnp.PyArray_DATA(a["cols_l"])
        self.view.cols_r = <const uint64_t*>cnp.PyArray_DATA(a["cols_r"])
        self.view.p_offset = <const int64_t*>cnp.PyArray_DATA(a["p_offset"])
        self.view.p_rows = <const int8_t*>cnp.PyArray_DATA(a["p_rows"])
        self.view.depth = <const int32_t*>cnp.PyArray_DATA(a["depth"])
        for name in _FIELDS:  # the layout pads every array to at least one entry
            if a[name].shape[0] == 0:
                raise ValueError(f"arithmetic layout field {name!r} is empty")
        self.max_node_words = int(a["node_words"].max()) if self.view.n_trees else 1
        self.max_leaf_words = int(a["leaf_words"].max()) if self.view.n_trees else 1
        counts = np.diff(a["node_offset"])
        self.max_nodes = max(1, int(counts.max()) if counts.size else 1)
        self.view.max_node_words = self.max_node_words
        self.view.max_leaf_words = self.max_leaf_words
        self.n_trees = self.view.n_trees
        self.n_features = n_features
        self.scratch_words = self.max_node_words + self.max_leaf_words + (self.max_nodes + 7) // 8
        self.ctx = &self.view
        self.exits = arith_exits

    def __reduce__(self):
        return (ArithLayout, (self._keep, self.view.kind, self.n_features))


cdef inline bint node_false(const ArithView* a, int family, int64_t g,
                            const double* row) noexcept nogil:
    return not node_goes_left(&a.nodes, family, g, row)


cdef inline void test_bits(const ArithView* a, int family, int64_t t, const double* row,
                           uint64_t* tv) noexcept nogil:
    """t: bit n set iff internal node n of tree t is false for row."""
    cdef int64_t base = a.nodes.node_offset[t]
    cdef int64_t m = a.nodes.node_offset[t + 1] - base
    cdef int64_t n
    memset(tv, 0, a.node_words[t] * sizeof(uint64_t))
    for n in range(m):
        if node_false(a, family, base + n, row):
            tv[n >> 6] |= (<uint64_t>1) << (n & 63)


cdef inline int64_t exit_both(const ArithView* a, int family, int64_t t, const double* row,
                              uint64_t* v) noexcept nogil:
    cdef int64_t base = a.nodes.node_offset[t]
    cdef int64_t m = a.nodes.node_offset[t + 1] - base
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
    cdef int64_t m = a.nodes.node_offset[t + 1] - a.nodes.node_offset[t]
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
        if a.nodes.node_offset[t + 1] == a.nodes.node_offset[t]:
            return 0
        return exit_both(a, family, t, row, v)
    test_bits(a, family, t, row, tv)
    if a.kind == KIND_ECOC:
        base = a.nodes.node_offset[t]
        m = a.nodes.node_offset[t + 1] - base
        for n in range(m):
            s[n] = <int8_t>(2 * <int>((tv[n >> 6] >> (n & 63)) & 1) - 1)
    return exit_rows(a, t, tv, s)


cdef void arith_exits(const void* ctx, const ForestView* f, const double* row,
                      uint64_t* scratch, int32_t* leaves,
                      double* o64, float* o32) noexcept nogil:
    cdef const ArithView* a = <const ArithView*>ctx
    cdef uint64_t* tv = scratch
    cdef uint64_t* v = tv + a.max_node_words
    cdef int8_t* s = <int8_t*>(v + a.max_leaf_words)
    cdef int64_t t
    for t in range(f.n_trees):
        emit(f, t, exit_leaf(a, f.family, t, row, tv, v, s), row, leaves, o64, o32)
