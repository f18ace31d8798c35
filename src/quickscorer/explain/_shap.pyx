# cython: language_level=3
"""SHAP contributions of every row (quickscorer/explain.py builds the layout and calls it).

Each row is converted as for scoring (``load_row``) and decided at every internal node of a
tree by the shared node rule (``node_goes_left``); treeshap.h then turns the decisions into
the tree's contributions. Rows are split over OpenMP threads with the GIL released, each
thread with its own scratch (or, without OpenMP, one slice of rows a Python thread).
"""
import numpy as np

cimport numpy as cnp
from cython.parallel cimport parallel, prange, threadid
from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.stdlib cimport calloc, free
from libc.string cimport memset

from quickscorer._forest cimport (FAMILY_XGBOOST, ForestView, floating, load_row,
                                  qs_weighted_add)
from quickscorer._kernel cimport NodeView, array_data, node_goes_left, set_nodes

cnp.import_array()

cdef extern from "quickscorer/explain/treeshap.h" nogil:
    ctypedef struct shap_tree:
        const int32_t* left
        const int32_t* right
        const int32_t* feature
        const double* node_cover
        const double* leaf_cover
        const double* leaf_value
        const float* node_cover32
        const float* leaf_cover32
        const float* leaf_value32
        int64_t n_nodes
    void shap_classic_f64(const shap_tree* t, const uint8_t* dec, double* phi, void* path)
    void shap_classic_f32(const shap_tree* t, const uint8_t* dec, float* phi, void* path)
    int64_t shap_classic_path_len(int64_t depth)
    void shap_quad(const shap_tree* t, const uint8_t* dec, int nq, const double* tq,
                   const double* wq, double scale, double* phi, uint8_t* o, double* z,
                   double* buf)

cdef enum:
    QUAD = 0
    CLASSIC = 1

# the methods, as contributions() takes them
METHOD_QUADRATURE = QUAD
METHOD_TREESHAP = CLASSIC


cdef struct ShapView:
    NodeView nodes
    ForestView fv               # the family and width load_row converts a row by
    int family
    int64_t n_trees
    int64_t n_features          # columns of a converted row, and of phi before the bias
    int64_t n_outputs
    const int32_t* left
    const int32_t* right
    const double* node_cover
    const double* leaf_cover
    const double* leaf_value
    const float* node_cover32
    const float* leaf_cover32
    const float* leaf_value32
    const int64_t* leaf_offset  # [n_trees + 1]
    const int32_t* tree_group   # [n_trees]
    const double* tree_scale    # [n_trees] DART weight (float32's value), else 1
    const float* tree_weight32  # [n_trees] the same in float32, NULL without DART
    const int32_t* tree_depth   # [n_trees] levels of internal nodes
    const int32_t* tree_nq      # [n_trees] quadrature points
    const int64_t* tree_qoff    # [n_trees] offset of its points in qt / qw
    const double* qt
    const double* qw
    const double* bias64        # [n_outputs] the expected values' sum (quadrature: its own)
    const double* bias_classic  # [n_outputs] in the library's arithmetic (LightGBM)
    const float* bias32         # [n_outputs] XGBoost's, float32
    int64_t max_nodes           # the most internal nodes of one tree
    int32_t max_depth
    int32_t max_nq


cdef inline void tree_of(const ShapView* v, int64_t t, shap_tree* out) noexcept nogil:
    cdef int64_t n0 = v.nodes.node_offset[t], l0 = v.leaf_offset[t]
    out.left = v.left + n0
    out.right = v.right + n0
    out.feature = v.nodes.feature + n0
    out.node_cover = v.node_cover + n0
    out.leaf_cover = v.leaf_cover + l0
    out.leaf_value = v.leaf_value + l0
    out.node_cover32 = v.node_cover32 + n0 if v.node_cover32 != NULL else NULL
    out.leaf_cover32 = v.leaf_cover32 + l0 if v.leaf_cover32 != NULL else NULL
    out.leaf_value32 = v.leaf_value32 + l0 if v.leaf_value32 != NULL else NULL
    out.n_nodes = v.nodes.node_offset[t + 1] - n0


cdef class ShapLayout:
    """Node and leaf arrays of every tree (canonical numbering), covers, and each tree's
    quadrature points (explain.py ``shap_arrays``)."""
    cdef ShapView view
    cdef dict _keep

    def __cinit__(self, dict a, int family, int64_t n_features, int64_t n_outputs):
        self._keep = dict(a)
        v = &self.view
        set_nodes(&v.nodes, a, "shap")
        memset(&v.fv, 0, sizeof(ForestView))
        v.fv.family = family
        v.fv.n_features = n_features
        v.family = family
        v.n_features = n_features
        v.n_outputs = n_outputs
        n_nodes = a["feature"].shape[0]
        n_leaves = a["leaf_value"].shape[0]
        self.view.n_trees = a["node_offset"].shape[0] - 1
        n_trees = self.view.n_trees
        for name, size in (("left", n_nodes), ("right", n_nodes), ("node_cover", n_nodes),
                           ("leaf_cover", n_leaves), ("leaf_offset", n_trees + 1),
                           ("tree_group", n_trees), ("tree_scale", n_trees),
                           ("tree_depth", n_trees), ("tree_nq", n_trees),
                           ("tree_qoff", n_trees), ("bias64", n_outputs),
                           ("bias_classic", n_outputs), ("bias32", n_outputs)):
            if a[name].shape[0] != size:
                raise ValueError(f"shap layout field {name!r} has {a[name].shape[0]} "
                                 f"entries, expected {size}")
        if int(a["leaf_offset"][n_trees]) != n_leaves:
            raise ValueError("shap layout: leaf_offset does not end at the leaf count")
        v.left = <const int32_t*>array_data(a["left"], np.int32, "shap", "left")
        v.right = <const int32_t*>array_data(a["right"], np.int32, "shap", "right")
        v.node_cover = <const double*>array_data(a["node_cover"], np.float64, "shap",
                                                 "node_cover")
        v.leaf_cover = <const double*>array_data(a["leaf_cover"], np.float64, "shap",
                                                 "leaf_cover")
        v.leaf_value = <const double*>array_data(a["leaf_value"], np.float64, "shap",
                                                 "leaf_value")
        if family == FAMILY_XGBOOST:
            v.node_cover32 = <const float*>array_data(a["node_cover32"], np.float32, "shap",
                                                      "node_cover32")
            v.leaf_cover32 = <const float*>array_data(a["leaf_cover32"], np.float32, "shap",
                                                      "leaf_cover32")
            v.leaf_value32 = <const float*>array_data(a["leaf_value32"], np.float32, "shap",
                                                      "leaf_value32")
        else:
            v.node_cover32 = v.leaf_cover32 = v.leaf_value32 = NULL
        v.leaf_offset = <const int64_t*>array_data(a["leaf_offset"], np.int64, "shap",
                                                   "leaf_offset")
        v.tree_group = <const int32_t*>array_data(a["tree_group"], np.int32, "shap",
                                                  "tree_group")
        v.tree_scale = <const double*>array_data(a["tree_scale"], np.float64, "shap",
                                                 "tree_scale")
        v.tree_weight32 = NULL
        if a["tree_weight32"] is not None:
            v.tree_weight32 = <const float*>array_data(a["tree_weight32"], np.float32, "shap",
                                                       "tree_weight32")
        v.tree_depth = <const int32_t*>array_data(a["tree_depth"], np.int32, "shap",
                                                  "tree_depth")
        v.tree_nq = <const int32_t*>array_data(a["tree_nq"], np.int32, "shap", "tree_nq")
        v.tree_qoff = <const int64_t*>array_data(a["tree_qoff"], np.int64, "shap", "tree_qoff")
        v.qt = <const double*>array_data(a["qt"], np.float64, "shap", "qt")
        v.qw = <const double*>array_data(a["qw"], np.float64, "shap", "qw")
        v.bias64 = <const double*>array_data(a["bias64"], np.float64, "shap", "bias64")
        v.bias_classic = <const double*>array_data(a["bias_classic"], np.float64, "shap",
                                                   "bias_classic")
        v.bias32 = <const float*>array_data(a["bias32"], np.float32, "shap", "bias32")
        # every child and feature in range, so that no tree reads outside its arrays
        if n_trees:
            counts = np.diff(a["node_offset"])
            leaves = np.diff(a["leaf_offset"])
            if (counts < 0).any() or not np.array_equal(leaves, counts + 1):
                raise ValueError("shap layout: each tree must have one leaf more than nodes")
            tree = np.repeat(np.arange(n_trees), counts)
            for side in ("left", "right"):
                c = a[side].astype(np.int64)
                bad = np.where(c >= 0, c >= counts[tree], ~c >= leaves[tree])
                if bad.any():
                    raise ValueError(f"shap layout: a {side} child outside its tree")
            f = a["feature"]
            if f.shape[0] and (f.min() < 0 or f.max() >= n_features):
                raise ValueError("shap layout: a split feature outside the row")
            qoff, nq = a["tree_qoff"], a["tree_nq"]
            if ((nq < 1).any() or (qoff < 0).any()
                    or (qoff + nq > a["qt"].shape[0]).any()
                    or a["qw"].shape != a["qt"].shape):
                raise ValueError("shap layout: quadrature points out of range")
            v.max_nodes = int(counts.max())
            v.max_depth = int(a["tree_depth"].max())
            v.max_nq = int(nq.max())
        else:
            v.max_nodes = v.max_depth = 0
            v.max_nq = 1

    def __reduce__(self):
        return (ShapLayout, (self._keep, self.view.family, self.view.n_features,
                             self.view.n_outputs))

    @property
    def n_trees(self):
        return self.view.n_trees

    def contributions(self, const floating[:, :] X, double[:, ::1] out64,
                      float[:, ::1] out32, int method, int n_threads):
        """Every row's contributions, (n_rows, n_outputs * (n_features + 1)), each output's
        features then its bias: into out32 for XGBoost's float32 recursion
        (METHOD_TREESHAP on an XGBoost model), else into out64."""
        cdef const ShapView* v = &self.view
        cdef Py_ssize_t n = X.shape[0]
        cdef int64_t width = v.n_outputs * (v.n_features + 1)
        cdef bint f32 = method == CLASSIC and v.family == FAMILY_XGBOOST
        if n_threads < 1:
            raise ValueError(f"n_threads must be >= 1, got {n_threads}")
        if X.shape[1] != v.n_features:
            raise ValueError(f"input has {X.shape[1]} features, the model expects "
                             f"{v.n_features}")
        if method != CLASSIC and method != QUAD:
            raise ValueError(f"unknown method {method}")
        if f32:
            ok = out32.shape[0] == n and out32.shape[1] == width and out64.shape[0] == 0
        else:
            ok = out64.shape[0] == n and out64.shape[1] == width and out32.shape[0] == 0
        if not ok:
            raise ValueError(f"the contributions need a ({n}, {width}) "
                             f"{'float32' if f32 else 'float64'} array and an empty other")
        if n == 0:
            return
        cdef int64_t per = scratch_bytes(v)
        cdef char* base = <char*>calloc(<size_t>(per * n_threads), 1)
        if base == NULL:
            raise MemoryError(f"no memory for the contributions' scratch ({per * n_threads} "
                              f"bytes)")
        cdef Py_ssize_t i
        cdef int k
        cdef char* mem
        for k in range(n_threads):
            scratch_init(v, base + k * per)
        with nogil, parallel(num_threads=n_threads):
            mem = base + threadid() * per
            for i in prange(n, schedule="dynamic", chunksize=4):
                if method == CLASSIC:
                    if f32:
                        row_classic32(v, X, i, &out32[i, 0], mem)
                    else:
                        row_classic64(v, X, i, &out64[i, 0], mem)
                else:
                    row_quad(v, X, i, &out64[i, 0], mem)
        free(base)


# ---- per-thread scratch: the converted row, the decisions, the path and the sums -----------
cdef inline int64_t _al(int64_t nbytes) noexcept nogil:
    return (nbytes + 63) // 64 * 64


cdef inline int64_t off_dec(const ShapView* v) noexcept nogil:
    return _al(v.n_features * 8)


cdef inline int64_t off_o(const ShapView* v) noexcept nogil:
    return off_dec(v) + _al(v.max_nodes + 1)


cdef inline int64_t off_z(const ShapView* v) noexcept nogil:
    return off_o(v) + _al(v.n_features)


cdef inline int64_t off_buf(const ShapView* v) noexcept nogil:
    return off_z(v) + _al(v.n_features * 8)


cdef inline int64_t off_path(const ShapView* v) noexcept nogil:
    return off_buf(v) + _al(3 * 8 * <int64_t>v.max_nq * (v.max_depth + 2))


cdef inline int64_t off_tmp(const ShapView* v) noexcept nogil:
    # path elements of at most 32 bytes (feature, and three float64)
    return off_path(v) + _al(32 * shap_classic_path_len(v.max_depth))


cdef inline int64_t scratch_bytes(const ShapView* v) noexcept nogil:
    return off_tmp(v) + _al(4 * (v.n_features + 1))


cdef inline void scratch_init(const ShapView* v, char* mem) noexcept nogil:
    """Every feature unseen on the path: o = 1, z = 1 (the quadrature's state)."""
    cdef int64_t j
    memset(mem + off_o(v), 1, <size_t>v.n_features)
    for j in range(v.n_features):
        (<double*>(mem + off_z(v)))[j] = 1.0


cdef inline void decide(const ShapView* v, int64_t t, const double* row,
                        uint8_t* dec) noexcept nogil:
    cdef int64_t n0 = v.nodes.node_offset[t], k
    for k in range(v.nodes.node_offset[t + 1] - n0):
        dec[k] = node_goes_left(&v.nodes, v.family, n0 + k, row)


cdef void row_classic64(const ShapView* v, const floating[:, :] X, Py_ssize_t i, double* out,
                        char* mem) noexcept nogil:
    """LightGBM's order: each output's contributions summed over its trees in place, the
    bias the sum of the trees' expected values."""
    cdef double* row = <double*>mem
    cdef uint8_t* dec = <uint8_t*>(mem + off_dec(v))
    cdef void* path = <void*>(mem + off_path(v))
    cdef int64_t t, k, F1 = v.n_features + 1
    cdef shap_tree tr
    load_row(&v.fv, X, i, row)
    for k in range(v.n_outputs * F1):
        out[k] = 0.0
    for t in range(v.n_trees):
        tree_of(v, t, &tr)
        decide(v, t, row, dec)
        shap_classic_f64(&tr, dec, out + v.tree_group[t] * F1, path)
    for k in range(v.n_outputs):
        out[k * F1 + v.n_features] = v.bias_classic[k]


cdef void row_classic32(const ShapView* v, const floating[:, :] X, Py_ssize_t i, float* out,
                        char* mem) noexcept nogil:
    """XGBoost's order: each tree's contributions in a buffer of their own, then added to its
    output's (times the tree's DART weight), the bias and base score last."""
    cdef double* row = <double*>mem
    cdef uint8_t* dec = <uint8_t*>(mem + off_dec(v))
    cdef void* path = <void*>(mem + off_path(v))
    cdef float* tmp = <float*>(mem + off_tmp(v))
    cdef int64_t t, k, F = v.n_features, F1 = v.n_features + 1
    cdef float* o
    cdef shap_tree tr
    load_row(&v.fv, X, i, row)
    for k in range(v.n_outputs * F1):
        out[k] = 0.0
    for t in range(v.n_trees):
        tree_of(v, t, &tr)
        decide(v, t, row, dec)
        for k in range(F):
            tmp[k] = 0.0
        shap_classic_f32(&tr, dec, tmp, path)
        o = out + v.tree_group[t] * F1
        if v.tree_weight32 != NULL:
            for k in range(F):
                o[k] = qs_weighted_add(o[k], tmp[k], v.tree_weight32[t])
        else:
            for k in range(F):
                o[k] = o[k] + tmp[k]
    for k in range(v.n_outputs):
        out[k * F1 + F] = v.bias32[k]


cdef void row_quad(const ShapView* v, const floating[:, :] X, Py_ssize_t i, double* out,
                   char* mem) noexcept nogil:
    cdef double* row = <double*>mem
    cdef uint8_t* dec = <uint8_t*>(mem + off_dec(v))
    cdef uint8_t* o = <uint8_t*>(mem + off_o(v))
    cdef double* z = <double*>(mem + off_z(v))
    cdef double* buf = <double*>(mem + off_buf(v))
    cdef int64_t t, k, F1 = v.n_features + 1
    cdef shap_tree tr
    load_row(&v.fv, X, i, row)
    for k in range(v.n_outputs * F1):
        out[k] = 0.0
    for t in range(v.n_trees):
        tree_of(v, t, &tr)
        decide(v, t, row, dec)
        shap_quad(&tr, dec, v.tree_nq[t], v.qt + v.tree_qoff[t], v.qw + v.tree_qoff[t],
                  v.tree_scale[t], out + v.tree_group[t] * F1, o, z, buf)
    for k in range(v.n_outputs):
        out[k * F1 + v.n_features] = v.bias64[k]


# ---- facts of each tree the layout needs ---------------------------------------------------
cdef struct FactsCtx:
    shap_tree t
    int32_t* seen                # [n_features] splits on each feature on the path so far
    int32_t unique               # features on the path so far
    int32_t max_unique
    int32_t max_depth


cdef double facts_node(FactsCtx* c, int32_t node, int32_t depth) noexcept nogil:
    """The node's expected value (its leaves' values, weighted by the products of the cover
    ratios on the way), recording the depth and the unique features of every path."""
    cdef int32_t f, side, child
    cdef double e = 0.0, ratio
    if node < 0:
        if depth > c.max_depth:
            c.max_depth = depth
        if c.unique > c.max_unique:
            c.max_unique = c.unique
        return c.t.leaf_value[~node]
    f = c.t.feature[node]
    if c.seen[f] == 0:
        c.unique += 1
    c.seen[f] += 1
    for side in range(2):
        child = c.t.right[node] if side else c.t.left[node]
        ratio = ((c.t.node_cover[child] if child >= 0 else c.t.leaf_cover[~child])
                 / c.t.node_cover[node])
        if ratio != 0.0:        # (a branch of zero cover is left out, as the kernels do)
            e += ratio * facts_node(c, child, depth + 1)
        else:
            facts_node(c, child, depth + 1)
    c.seen[f] -= 1
    if c.seen[f] == 0:
        c.unique -= 1
    return e


cdef float mean_f32(const FactsCtx* c, int32_t node) noexcept nogil:
    """XGBoost's node mean in its float32 order: the children's means times their covers,
    added, over the node's cover (a child of zero cover left out, as the kernels leave it)."""
    cdef float r = 0.0, w
    if node < 0:
        return c.t.leaf_value32[~node]
    w = _cover32(c, c.t.left[node])
    if w != 0:
        r = mean_f32(c, c.t.left[node]) * w
    w = _cover32(c, c.t.right[node])
    if w != 0:
        r = r + mean_f32(c, c.t.right[node]) * w
    return r / c.t.node_cover32[node]


cdef inline float _cover32(const FactsCtx* c, int32_t node) noexcept nogil:
    return c.t.node_cover32[node] if node >= 0 else c.t.leaf_cover32[~node]


def tree_facts(dict a, int64_t n_features, bint f32):
    """Per tree: levels of internal nodes on its longest path, the most distinct features on
    one path, its expected value (float64, as the quadrature's fractions give it) and, with
    ``f32``, XGBoost's float32 root mean. The arrays as ShapLayout takes them, checked there
    first."""
    cdef int64_t n_trees = a["node_offset"].shape[0] - 1, t, n0, l0
    depth = np.zeros(n_trees, np.int32)
    unique = np.zeros(n_trees, np.int32)
    expected = np.zeros(n_trees, np.float64)
    mean32 = np.zeros(n_trees, np.float32)
    cdef const int64_t[::1] noff = a["node_offset"]
    cdef const int64_t[::1] loff = a["leaf_offset"]
    cdef const int32_t[::1] left = a["left"]
    cdef const int32_t[::1] right = a["right"]
    cdef const int32_t[::1] feature = a["feature"]
    cdef const double[::1] ncov = a["node_cover"]
    cdef const double[::1] lcov = a["leaf_cover"]
    cdef const double[::1] lval = a["leaf_value"]
    cdef const float[::1] ncov32 = a["node_cover32"] if f32 else np.ones(1, np.float32)
    cdef const float[::1] lcov32 = a["leaf_cover32"] if f32 else np.ones(1, np.float32)
    cdef const float[::1] lval32 = a["leaf_value32"] if f32 else np.ones(1, np.float32)
    cdef int32_t[::1] d = depth, u = unique
    cdef double[::1] e = expected
    cdef float[::1] m = mean32
    seen = np.zeros(max(n_features, 1), np.int32)
    cdef int32_t[::1] sv = seen
    cdef FactsCtx c
    with nogil:
        for t in range(n_trees):
            n0 = noff[t]
            l0 = loff[t]
            if noff[t + 1] == n0:
                e[t] = lval[l0]
                if f32:
                    m[t] = lval32[l0]
                continue
            c.t.left = &left[n0]
            c.t.right = &right[n0]
            c.t.feature = &feature[n0]
            c.t.node_cover = &ncov[n0]
            c.t.leaf_cover = &lcov[l0]
            c.t.leaf_value = &lval[l0]
            c.seen = &sv[0]
            c.unique = c.max_unique = c.max_depth = 0
            e[t] = facts_node(&c, 0, 0)
            d[t] = c.max_depth
            u[t] = c.max_unique
            if f32:
                c.t.node_cover32 = &ncov32[n0]
                c.t.leaf_cover32 = &lcov32[l0]
                c.t.leaf_value32 = &lval32[l0]
                m[t] = mean_f32(&c, 0)
    return depth, unique, expected, mean32
