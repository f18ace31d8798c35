# cython: language_level=3
"""SHAP contributions of every row (quickscorer/explain/contributions.py builds the layout
and calls it).

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
        const uint8_t* swapped
        int64_t n_nodes
    void shap_xgb_quadrature_f32(const shap_tree* t, const uint8_t* dec, float* phi,
                                 float* state)
    float SHAP_XQ_UNSEEN
    void shap_classic_f64(const shap_tree* t, const uint8_t* dec, double* phi, void* path,
                          int cond, int32_t cfeature)
    void shap_classic_f32(const shap_tree* t, const uint8_t* dec, float* phi, void* path,
                          int cond, int32_t cfeature)
    int64_t shap_classic_path_len(int64_t depth)
    ctypedef struct shap_prog:
        const int32_t* nid
        const int32_t* child
        const double* ratio
        int32_t K
    int SHAP_R
    int32_t SHAP_SKIP
    int32_t shap_prog_tree(int isa, const shap_tree* t, int32_t* child, double* ratio)
    int64_t shap_block_work(int64_t depth, int64_t nq, int64_t n_features, int64_t lanes)
    void shap_quad_init(void* work, int64_t depth, int64_t nq, int64_t n_features,
                        int64_t lanes)
    int64_t shap_row_work(int64_t depth, int64_t nq, int64_t n_features)
    void shap_row_init(void* work, int64_t depth, int64_t nq, int64_t n_features)
    int shap_quad_row_isa(int isa, const shap_prog* p, const int32_t* feature,
                          const double* leaf_value, double scale, const double* dec, int nq,
                          const double* tq, const double* wq, const double* gq, double* phi,
                          void* work, int64_t depth, int64_t mq, int64_t n_features)
    void shap_quad_block_isa(int isa, int lanes, const shap_prog* p, const int32_t* feature,
                             const double* leaf_value, double scale, const double* dec,
                             int nq, const double* tq, const double* wq, const double* gq,
                             double* phi, double* phi2, void* work, int64_t depth,
                             int64_t mq, int64_t n_features)

cdef enum:
    QUAD = 0
    CLASSIC = 1
    # dec_code: the shared node rule (_forest.pxd goes_left) of a node, for a block's lanes
    DEC_LEFT = 1             # the default side is left
    DEC_NAN_LEFT = 2         # a NaN goes left
    DEC_ZERO_DEFAULT = 4     # 0.0 takes the default side (LightGBM's zero as missing)
    DEC_SCALAR = 8           # a categorical node: goes_left itself, lane by lane

# the methods, as contributions() takes them; the lanes of a block
METHOD_QUADRATURE = QUAD
METHOD_TREESHAP = CLASSIC
LANES = SHAP_R


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
    const uint8_t* swapped      # [n_nodes] XGBoost's categorical nodes (children swapped), or
                                #   NULL
    bint xgb_quadrature         # XGBoost 3.3 and later: treeshap is its 8-point quadrature
    const int64_t* leaf_offset  # [n_trees + 1]
    const int32_t* tree_group   # [n_trees]
    const double* tree_scale    # [n_trees] DART weight (float32's value), else 1
    const float* tree_weight32  # [n_trees] the same in float32, NULL without DART
    const int32_t* tree_nq      # [n_trees] quadrature points
    const int64_t* tree_qoff    # [n_trees] offset of its points in qt / qw
    const double* qt            # each tree's points, from tree_qoff, padded to SHAP_R
    const double* qw
    const double* qg            # -1 / (1 - t) at each point
    const double* bias64        # [n_outputs] the expected values' sum (quadrature: its own)
    const double* bias_classic  # [n_outputs] in the library's arithmetic (LightGBM)
    const float* bias32         # [n_outputs] XGBoost's, float32
    const int64_t* prog_offset  # [n_trees + 1] the quadrature's programs (programs()), or
                                #   NULL: each block builds each tree's into its scratch
    const int32_t* prog_nid
    const int32_t* prog_child
    const double* prog_ratio
    const uint8_t* dec_code     # [n_nodes] the node rule for a numeric node (DEC_*)
    const int64_t* tree_foff    # [n_trees + 1] each tree's distinct split features in
    const int32_t* tree_feats   #   tree_feats, ascending (interactions)
    const int64_t* feat_toff    # [n_features + 1] the trees that split on each feature in
    const int32_t* feat_trees   #   feat_trees, in tree order
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
    out.swapped = v.swapped + n0 if v.swapped != NULL else NULL
    out.n_nodes = v.nodes.node_offset[t + 1] - n0


cdef class ShapLayout:
    """Node and leaf arrays of every tree (canonical numbering), covers, and each tree's
    quadrature points (explain/contributions.py ``shap_arrays``)."""
    cdef ShapView view
    cdef dict _keep

    def __cinit__(self, dict a, int family, int64_t n_features, int64_t n_outputs):
        self._keep = dict(a)
        v = &self.view
        set_nodes(&v.nodes, a, "shap", True)
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
        v.swapped = NULL
        v.xgb_quadrature = bool(a.get("xgboost_quadrature", False))
        if v.xgb_quadrature:
            if family != FAMILY_XGBOOST:
                raise ValueError("shap layout: XGBoost's quadrature for another family")
            if a.get("swapped") is not None:
                if a["swapped"].shape[0] != n_nodes:
                    raise ValueError("shap layout field 'swapped' has one entry per node")
                v.swapped = <const uint8_t*>array_data(a["swapped"], np.uint8, "shap",
                                                       "swapped")
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
        v.tree_nq = <const int32_t*>array_data(a["tree_nq"], np.int32, "shap", "tree_nq")
        v.tree_qoff = <const int64_t*>array_data(a["tree_qoff"], np.int64, "shap", "tree_qoff")
        v.qt = <const double*>array_data(a["qt"], np.float64, "shap", "qt")
        v.qw = <const double*>array_data(a["qw"], np.float64, "shap", "qw")
        v.qg = <const double*>array_data(a["qg"], np.float64, "shap", "qg")
        v.bias64 = <const double*>array_data(a["bias64"], np.float64, "shap", "bias64")
        v.bias_classic = <const double*>array_data(a["bias_classic"], np.float64, "shap",
                                                   "bias_classic")
        v.bias32 = <const float*>array_data(a["bias32"], np.float32, "shap", "bias32")
        poff = a["prog_offset"]
        stored = poff is not None
        if not stored:
            poff = np.zeros(n_trees + 1, np.int64)
            a = dict(a, prog_nid=np.zeros(0, np.int32), prog_child=np.zeros(0, np.int32),
                     prog_ratio=np.zeros(0, np.float64))
        if poff.shape[0] != n_trees + 1:
            raise ValueError("shap layout: prog_offset must have one entry per tree and one")
        n_prog = int(poff[n_trees]) if n_trees else 0
        for name, size in (("prog_nid", n_prog), ("prog_child", 2 * n_prog),
                           ("prog_ratio", 2 * n_prog)):
            if a[name].shape[0] != size:
                raise ValueError(f"shap layout field {name!r} has {a[name].shape[0]} "
                                 f"entries, expected {size}")
        v.dec_code = <const uint8_t*>array_data(a["dec_code"], np.uint8, "shap", "dec_code")
        if a["dec_code"].shape[0] != n_nodes:
            raise ValueError("shap layout: dec_code must have one entry per node")
        v.prog_offset = <const int64_t*>array_data(poff, np.int64, "shap", "prog_offset") \
            if stored else NULL
        v.prog_nid = <const int32_t*>array_data(a["prog_nid"], np.int32, "shap", "prog_nid")
        v.prog_child = <const int32_t*>array_data(a["prog_child"], np.int32, "shap",
                                                  "prog_child")
        v.prog_ratio = <const double*>array_data(a["prog_ratio"], np.float64, "shap",
                                                 "prog_ratio")
        tfo, tf = a["tree_feat_offset"], a["tree_feats"]
        fto, ft = a["feat_tree_offset"], a["feat_trees"]
        if (tfo.shape[0] != n_trees + 1 or fto.shape[0] != n_features + 1
                or int(tfo[0]) != 0 or int(tfo[n_trees]) != tf.shape[0]
                or int(fto[0]) != 0 or int(fto[n_features]) != ft.shape[0]
                or (np.diff(tfo) < 0).any() or (np.diff(fto) < 0).any()
                or tf.shape[0] != ft.shape[0]
                or (tf.shape[0] and (tf.min() < 0 or tf.max() >= n_features
                                     or ft.min() < 0 or ft.max() >= n_trees))):
            raise ValueError("shap layout: the trees' features and the features' trees do "
                             "not match the model")
        v.tree_foff = <const int64_t*>array_data(tfo, np.int64, "shap", "tree_feat_offset")
        v.tree_feats = <const int32_t*>array_data(tf, np.int32, "shap", "tree_feats")
        v.feat_toff = <const int64_t*>array_data(fto, np.int64, "shap", "feat_tree_offset")
        v.feat_trees = <const int32_t*>array_data(ft, np.int32, "shap", "feat_trees")
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
            padded = (nq + SHAP_R - 1) // SHAP_R * SHAP_R
            if ((nq < 1).any() or (qoff < 0).any()
                    or (qoff + padded > a["qt"].shape[0]).any()
                    or a["qw"].shape != a["qt"].shape or a["qg"].shape != a["qt"].shape):
                raise ValueError("shap layout: quadrature points out of range")
            v.max_nodes = int(counts.max())
            v.max_depth = int(a["tree_depth"].max())
            v.max_nq = int(nq.max())
            pk = np.diff(poff)
            if (pk < 0).any() or (pk > counts).any():
                raise ValueError("shap layout: a program longer than its tree")
            # every program reference inside its tree's program and nodes
            ptree = np.repeat(np.arange(n_trees), pk)
            nid = a["prog_nid"].astype(np.int64)
            if nid.shape[0] and ((nid < 0) | (nid >= counts[ptree])).any():
                raise ValueError("shap layout: a program node outside its tree")
            etree = np.repeat(ptree, 2)
            ch = a["prog_child"].astype(np.int64)
            own = 2 * np.repeat(np.arange(ptree.shape[0]) - poff[ptree], 2) \
                + np.tile([0, 1], ptree.shape[0])
            inner = (ch >= 0) & (ch != SHAP_SKIP)
            # a child comes later in its tree's preorder (so that every walk ends)
            if (((ch >= pk[etree]) & inner).any() or ((ch <= own // 2) & inner).any()
                    or ((ch < 0) & (ch != SHAP_SKIP) & (~ch >= leaves[etree])).any()):
                raise ValueError("shap layout: a program edge outside its tree")
            if (a["tree_depth"] < 0).any() or (a["tree_depth"] > counts).any():
                raise ValueError("shap layout: a tree deeper than its nodes")
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
                      float[:, ::1] out32, int method, int n_threads, int isa=0,
                      bint interactions=False):
        """Every row's contributions, (n_rows, n_outputs * (n_features + 1)), each output's
        features then its bias: into out32 for XGBoost's float32 recursion
        (METHOD_TREESHAP on an XGBoost model), else into out64. ``isa``: the instruction
        set the quadrature's blocks run on (cpu.h CPU_ISA_*; the values are the same).

        With ``interactions``: (n_rows, n_outputs * (n_features + 1)^2), each output's
        matrix row by row (XGBoost's ``pred_interactions`` layout)."""
        cdef const ShapView* v = &self.view
        cdef Py_ssize_t n = X.shape[0]
        cdef int64_t F1 = v.n_features + 1
        cdef int64_t width = v.n_outputs * (F1 * F1 if interactions else F1)
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
        cdef Offsets of
        offsets(v, &of, interactions)
        cdef int64_t per = of.total
        # each thread's part from a 64-byte boundary (the quadrature's vectors of 8 doubles)
        cdef char* raw = <char*>calloc(<size_t>(per * n_threads + 64), 1)
        if raw == NULL:
            raise MemoryError(f"no memory for the contributions' scratch ({per * n_threads} "
                              f"bytes)")
        cdef char* base = raw + (64 - (<size_t>raw) % 64) % 64
        cdef Py_ssize_t i, b, step = of.block
        cdef Py_ssize_t n_blocks = (n + step - 1) // step
        cdef char* mem
        cdef int k
        cdef int32_t* own
        cdef int64_t j
        for k in range(n_threads):
            shap_quad_init(base + k * per + of.work, v.max_depth, v.max_nq, v.n_features,
                           SHAP_R)
            shap_quad_init(base + k * per + of.work1, v.max_depth, v.max_nq, v.n_features, 1)
            shap_row_init(base + k * per + of.work_row, v.max_depth, v.max_nq, v.n_features)
            if v.prog_offset == NULL:
                # the node numbers of the programs block_quad builds (each tree's own)
                own = <int32_t*>(base + k * per + of.prog)
                for j in range(v.max_nodes):
                    own[j] = <int32_t>j
        with nogil, parallel(num_threads=n_threads):
            mem = base + threadid() * per
            if method == CLASSIC:
                for i in prange(n, schedule="dynamic", chunksize=1 if interactions else 4):
                    if interactions and f32:
                        row_inter_classic(v, &of, X, i, &out32[i, 0], mem)
                    elif interactions:
                        row_inter_classic(v, &of, X, i, &out64[i, 0], mem)
                    elif f32:
                        row_classic32(v, &of, X, i, &out32[i, 0], mem)
                    else:
                        row_classic64(v, &of, X, i, &out64[i, 0], mem)
            else:
                for b in prange(n_blocks, schedule="dynamic", chunksize=1):
                    block_quad(v, &of, X, b * step, step, out64, mem, isa, interactions)
        free(raw)


# ---- per-thread scratch --------------------------------------------------------------------
cdef enum:
    # the most bytes a block's interaction sums may take before rows go one at a time
    PAIR_BLOCK_BYTES = 64 << 20
    # the most rows of a block that take one walk each rather than the block's: up to this
    # many rows, a walk each costs less than the block's one eight-lane walk
    # (python -m benchmarks.contributions --batch 1,2,3,8)
    ROW_WALKS = 2

INTERACTION_BLOCK_BYTES = PAIR_BLOCK_BYTES

cdef struct Offsets:
    int64_t dec        # each node's decisions (rows: at 0)
    int64_t path       # the recursion's path elements
    int64_t tmp        # float32 [n_features + 1]: one tree's contributions (XGBoost's order)
    int64_t state      # float32 [n_features]: XGBoost's quadrature's state of each feature
    int64_t phi        # float64 [n_outputs][n_features][SHAP_R]: a block's sums
    int64_t work       # shap_block_work(.., SHAP_R): the quadrature's for blocks of rows
    int64_t work1      # shap_block_work(.., 1): for a row alone (interactions)
    int64_t work_row   # shap_row_work: for a row alone (contributions)
    int64_t prog       # a tree's program, built per block where the layout stores none
    # interactions only (else empty)
    int64_t phi2       # float64 [n_outputs][n_features][n_features][block]: pairs' sums
    int64_t diag       # [n_outputs][n_features + 1]: the row's contributions (recursion)
    int64_t on         # [n_outputs][n_features + 1]: with the conditioned feature on
    int64_t off        # the same, off
    int64_t tmp_on     # [n_features]: one tree's, on
    int64_t tmp_off    # and off
    int64_t cache      # [tree_feats]: each tree's contributions, unconditioned
    int64_t block      # rows a quadrature block takes (SHAP_R, or 1 for wide interactions)
    int64_t total


cdef inline int64_t _al(int64_t nbytes) noexcept nogil:
    return (nbytes + 63) // 64 * 64


cdef void offsets(const ShapView* v, Offsets* o, bint interactions) noexcept nogil:
    """Where each part of a thread's scratch lies: the converted rows (SHAP_R of them) at 0.
    The recursion's interaction buffers hold float64 whatever the precision."""
    cdef int64_t F = v.n_features, K = v.n_outputs, pairs = K * F * F * 8
    o.dec = _al(2 * SHAP_R * F * 8)         # (and the rows feature by feature)
    # (the quadrature's: float64, lane r of node k at k SHAP_R + r)
    o.path = o.dec + _al(8 * SHAP_R * (v.max_nodes + 1))
    # path elements of at most 32 bytes (a feature and three float64)
    o.tmp = o.path + _al(32 * shap_classic_path_len(v.max_depth))
    o.state = o.tmp + _al(4 * (F + 1))
    o.phi = o.state + _al(4 * F)
    o.work = o.phi + _al(8 * K * F * SHAP_R)
    o.work1 = o.work + _al(shap_block_work(v.max_depth, v.max_nq, F, SHAP_R))
    o.work_row = o.work1 + _al(shap_block_work(v.max_depth, v.max_nq, F, 1))
    o.prog = o.work_row + _al(shap_row_work(v.max_depth, v.max_nq, F))
    # (nid int32 a node, in 8 bytes; ratio float64 and child int32 an edge)
    o.phi2 = o.prog + (_al(32 * v.max_nodes) if v.prog_offset == NULL else 0)
    o.block = SHAP_R
    if not interactions:
        pairs = 0
    elif pairs * SHAP_R > PAIR_BLOCK_BYTES:
        o.block = 1
    o.diag = o.phi2 + _al(pairs * o.block)
    o.on = o.diag + _al(8 * K * (F + 1) if interactions else 0)
    o.off = o.on + _al(8 * K * (F + 1) if interactions else 0)
    o.tmp_on = o.off + _al(8 * K * (F + 1) if interactions else 0)
    o.tmp_off = o.tmp_on + _al(8 * F if interactions else 0)
    o.cache = o.tmp_off + _al(8 * F if interactions else 0)
    o.total = o.cache + _al(8 * v.tree_foff[v.n_trees] if interactions else 0)


cdef inline bint shap_goes_left(const ShapView* v, int64_t g, const double* row) noexcept nogil:
    """Node g's decision for a converted row: goes_left's rule, read from the node's dec_code
    (a categorical node by goes_left itself: only there are the category tables read, which
    a model without categorical nodes leaves empty)."""
    cdef uint8_t code = v.dec_code[g]
    cdef double x
    if code & DEC_SCALAR:
        return node_goes_left(&v.nodes, v.family, g, row)
    x = row[v.nodes.feature[g]]
    if x != x:
        return (code & DEC_NAN_LEFT) != 0
    if (code & DEC_ZERO_DEFAULT) and x == 0.0:
        return (code & DEC_LEFT) != 0
    return x <= v.nodes.threshold[g]


cdef inline void decide(const ShapView* v, int64_t t, const double* row,
                        uint8_t* dec) noexcept nogil:
    cdef int64_t n0 = v.nodes.node_offset[t], k
    for k in range(v.nodes.node_offset[t + 1] - n0):
        dec[k] = shap_goes_left(v, n0 + k, row)


cdef inline void decide_block(const ShapView* v, int64_t t, const double* rows,
                              const double* rows_t, Py_ssize_t lanes, int R,
                              double* dec) noexcept nogil:
    """Tree t's decisions for a block's rows (R lanes): node k's for lane r at dec[k R + r],
    1.0 where it goes left. A numeric node by its dec_code (goes_left's rule, branch-free, on
    the rows feature by feature); a categorical one by goes_left itself."""
    cdef int64_t n0 = v.nodes.node_offset[t], k, r
    cdef uint8_t code
    cdef double thr, x, l, nan_l, def_l
    cdef const double* xs
    cdef double* d
    for k in range(v.nodes.node_offset[t + 1] - n0):
        code = v.dec_code[n0 + k]
        d = dec + k * R
        if code & DEC_SCALAR:
            for r in range(lanes):
                d[r] = 1.0 if node_goes_left(&v.nodes, v.family, n0 + k,
                                             rows + r * v.n_features) else 0.0
            continue
        thr = v.nodes.threshold[n0 + k]
        xs = rows_t + v.nodes.feature[n0 + k] * R
        nan_l = 1.0 if code & DEC_NAN_LEFT else 0.0
        def_l = 1.0 if code & DEC_LEFT else 0.0
        for r in range(R):
            x = xs[r]
            l = 1.0 if x <= thr else 0.0
            if x != x:
                l = nan_l
            if (code & DEC_ZERO_DEFAULT) and x == 0.0:
                l = def_l
            d[r] = l


cdef void row_classic64(const ShapView* v, const Offsets* of, const floating[:, :] X,
                        Py_ssize_t i, double* out, char* mem) noexcept nogil:
    """LightGBM's order: each output's contributions summed over its trees in place, the
    bias the sum of the trees' expected values."""
    cdef double* row = <double*>mem
    cdef uint8_t* dec = <uint8_t*>(mem + of.dec)
    cdef void* path = <void*>(mem + of.path)
    cdef int64_t t, k, F1 = v.n_features + 1
    cdef shap_tree tr
    load_row(&v.fv, X, i, row)
    for k in range(v.n_outputs * F1):
        out[k] = 0.0
    for t in range(v.n_trees):
        tree_of(v, t, &tr)
        decide(v, t, row, dec)
        shap_classic_f64(&tr, dec, out + v.tree_group[t] * F1, path, 0, 0)
    for k in range(v.n_outputs):
        out[k * F1 + v.n_features] = v.bias_classic[k]


cdef void row_classic32(const ShapView* v, const Offsets* of, const floating[:, :] X,
                        Py_ssize_t i, float* out, char* mem) noexcept nogil:
    """XGBoost's order: each tree's contributions in a buffer of their own (its recursion, or
    from 3.3 its quadrature), then added to its output's (times the tree's DART weight), the
    bias and base score last."""
    cdef double* row = <double*>mem
    cdef uint8_t* dec = <uint8_t*>(mem + of.dec)
    cdef void* path = <void*>(mem + of.path)
    cdef float* tmp = <float*>(mem + of.tmp)
    cdef float* state = <float*>(mem + of.state)
    cdef int64_t t, k, F = v.n_features, F1 = v.n_features + 1
    cdef float* o
    cdef shap_tree tr
    load_row(&v.fv, X, i, row)
    for k in range(v.n_outputs * F1):
        out[k] = 0.0
    if v.xgb_quadrature:
        for k in range(F):
            state[k] = SHAP_XQ_UNSEEN
    for t in range(v.n_trees):
        tree_of(v, t, &tr)
        decide(v, t, row, dec)
        for k in range(F):
            tmp[k] = 0.0
        if v.xgb_quadrature:
            shap_xgb_quadrature_f32(&tr, dec, tmp, state)
        else:
            shap_classic_f32(&tr, dec, tmp, path, 0, 0)
        o = out + v.tree_group[t] * F1
        if v.tree_weight32 != NULL:
            for k in range(F):
                o[k] = qs_weighted_add(o[k], tmp[k], v.tree_weight32[t])
        else:
            for k in range(F):
                o[k] = o[k] + tmp[k]
    for k in range(v.n_outputs):
        out[k * F1 + F] = v.bias32[k]


cdef void block_quad(const ShapView* v, const Offsets* of, const floating[:, :] X,
                     Py_ssize_t i0, Py_ssize_t most, double[:, ::1] out, char* mem, int isa,
                     bint inter) noexcept nogil:
    """Rows i0 .. i0 + most - 1 (those there are; most is SHAP_R or 1), one a lane, through
    every tree's program (a row alone in a block of one lane); each output's sums kept per
    lane, then written with its bias. With ``inter``: the interactions."""
    cdef double* rows = <double*>mem
    cdef double* dec = <double*>(mem + of.dec)
    cdef double* phi = <double*>(mem + of.phi)
    cdef double* phi2 = <double*>(mem + of.phi2) if inter else NULL
    cdef int64_t F = v.n_features, F1 = v.n_features + 1, t, k, r, g, n0, l0, p0
    cdef Py_ssize_t lanes = min(most, X.shape[0] - i0)
    cdef int R = 1 if lanes == 1 else SHAP_R
    if 1 < lanes <= ROW_WALKS and not inter:
        # a row's walk costs less than a block's for a block of few rows (its values are
        # the same either way)
        for r in range(lanes):
            block_quad(v, of, X, i0 + r, 1, out, mem, isa, inter)
        return
    cdef void* work = <void*>(mem + (of.work1 if R == 1 else of.work))
    cdef double* rows_t = rows + SHAP_R * F
    cdef double* ph2
    cdef shap_prog prog
    cdef shap_tree tr
    # (own_nid: 0 .. max_nodes - 1, written once per thread by contributions())
    cdef int32_t* own_nid = <int32_t*>(mem + of.prog)
    cdef double* own_ratio = <double*>(mem + of.prog + 8 * v.max_nodes)
    cdef int32_t* own_child = <int32_t*>(mem + of.prog + 24 * v.max_nodes)
    for r in range(lanes):
        load_row(&v.fv, X, i0 + r, rows + r * F)
    if R == 1:
        rows_t = rows                   # one row is its own feature-by-feature form
    else:
        for k in range(F):              # feature by feature, a lane a row
            for r in range(SHAP_R):
                rows_t[k * SHAP_R + r] = rows[(r if r < lanes else 0) * F + k]
    memset(dec, 0, <size_t>(8 * R * (v.max_nodes + 1)))
    memset(phi, 0, <size_t>(8 * v.n_outputs * F * R))
    if inter:
        memset(phi2, 0, <size_t>(8 * v.n_outputs * F * F * R))
    for t in range(v.n_trees):
        n0 = v.nodes.node_offset[t]
        l0 = v.leaf_offset[t]
        if v.prog_offset != NULL:
            p0 = v.prog_offset[t]
            prog.K = <int32_t>(v.prog_offset[t + 1] - p0)
            prog.nid = v.prog_nid + p0
            prog.child = v.prog_child + 2 * p0
            prog.ratio = v.prog_ratio + 2 * p0
        else:
            # the tree's own numbering, built here: the same divisions as programs()
            tree_of(v, t, &tr)
            prog.K = shap_prog_tree(isa, &tr, own_child, own_ratio)
            prog.nid = own_nid
            prog.child = own_child
            prog.ratio = own_ratio
        if prog.K == 0:
            continue
        decide_block(v, t, rows, rows_t, lanes, R, dec)
        g = v.tree_group[t]
        if R == 1 and not inter and shap_quad_row_isa(
                isa, &prog, v.nodes.feature + n0, v.leaf_value + l0, v.tree_scale[t], dec,
                v.tree_nq[t], v.qt + v.tree_qoff[t], v.qw + v.tree_qoff[t],
                v.qg + v.tree_qoff[t], phi + g * F, <void*>(mem + of.work_row), v.max_depth,
                v.max_nq, F):
            continue
        shap_quad_block_isa(isa, R, &prog, v.nodes.feature + n0, v.leaf_value + l0,
                            v.tree_scale[t], dec, v.tree_nq[t],
                            v.qt + v.tree_qoff[t], v.qw + v.tree_qoff[t], v.qg + v.tree_qoff[t],
                            phi + g * F * R, phi2 + g * F * F * R if inter else NULL, work,
                            v.max_depth, v.max_nq, F)
    if not inter:
        for r in range(lanes):
            for g in range(v.n_outputs):
                for k in range(F):
                    out[i0 + r, g * F1 + k] = phi[(g * F + k) * R + r]
                out[i0 + r, g * F1 + F] = v.bias64[g]
        return
    cdef double d
    cdef int64_t j, o
    for r in range(lanes):
        for g in range(v.n_outputs):
            o = g * F1 * F1
            ph2 = phi2 + g * F * F * R
            for k in range(F):
                # the diagonal: the feature's contribution less its interactions
                d = phi[(g * F + k) * R + r]
                for j in range(F):
                    if j != k:
                        out[i0 + r, o + k * F1 + j] = ph2[(k * F + j) * R + r]
                        d = d - ph2[(k * F + j) * R + r]
                out[i0 + r, o + k * F1 + k] = d
                out[i0 + r, o + k * F1 + F] = 0.0
                out[i0 + r, o + F * F1 + k] = 0.0
            out[i0 + r, o + F * F1 + F] = v.bias64[g]


ctypedef fused real_out:
    float
    double


cdef void row_inter_classic(const ShapView* v, const Offsets* of, const floating[:, :] X,
                            Py_ssize_t i, real_out* out, char* mem) noexcept nogil:
    """A row's interactions as XGBoost takes them: its contributions on the diagonal less the
    row's other entries; off it, half the difference between the contributions with each
    feature held on and held off (the recursion conditioned on it). Each tree's sums are
    added in tree order, as XGBoost adds them; a tree that does not split on the held
    feature gives its unconditioned values (kept from a first pass), since its recursion
    would."""
    cdef double* row = <double*>mem
    cdef uint8_t* dec = <uint8_t*>(mem + of.dec)
    cdef void* path = <void*>(mem + of.path)
    cdef real_out* diag = <real_out*>(mem + of.diag)
    cdef real_out* on = <real_out*>(mem + of.on)
    cdef real_out* off = <real_out*>(mem + of.off)
    cdef real_out* ton = <real_out*>(mem + of.tmp_on)
    cdef real_out* toff = <real_out*>(mem + of.tmp_off)
    cdef real_out* cache = <real_out*>(mem + of.cache)
    cdef int64_t F = v.n_features, F1 = v.n_features + 1, K = v.n_outputs
    cdef int64_t t, k, m, c, g, ptr, end, f0, f1, base
    cdef real_out* o
    cdef real_out x
    cdef shap_tree tr
    # (row_classic* leave the row converted at the start of mem, where `row` reads it)
    if real_out is float:
        row_classic32(v, of, X, i, diag, mem)
    else:
        row_classic64(v, of, X, i, diag, mem)
    for k in range(F):
        ton[k] = 0
    # each tree's own contributions, at the features it splits on
    for t in range(v.n_trees):
        f0 = v.tree_foff[t]
        f1 = v.tree_foff[t + 1]
        if f1 == f0:
            continue
        tree_of(v, t, &tr)
        decide(v, t, row, dec)
        if real_out is float:
            shap_classic_f32(&tr, dec, ton, path, 0, 0)
        else:
            shap_classic_f64(&tr, dec, ton, path, 0, 0)
        for m in range(f0, f1):
            cache[m] = ton[v.tree_feats[m]]
            ton[v.tree_feats[m]] = 0
    for k in range(K * F1 * F1):
        out[k] = 0
    for c in range(F1):
        if c == F or v.feat_toff[c + 1] == v.feat_toff[c]:
            # no tree splits on c: held on or off, every tree gives what it gives unheld
            for g in range(K):
                o = out + g * F1 * F1 + c * F1
                o[c] = o[c] + diag[g * F1 + c]
            continue
        for k in range(K * F1):
            on[k] = 0
            off[k] = 0
        ptr = v.feat_toff[c]
        end = v.feat_toff[c + 1]
        for t in range(v.n_trees):
            f0 = v.tree_foff[t]
            f1 = v.tree_foff[t + 1]
            g = v.tree_group[t]
            if ptr < end and v.feat_trees[ptr] == t:
                ptr += 1
                tree_of(v, t, &tr)
                decide(v, t, row, dec)
                if real_out is float:
                    shap_classic_f32(&tr, dec, ton, path, 1, <int32_t>c)
                    shap_classic_f32(&tr, dec, toff, path, -1, <int32_t>c)
                else:
                    shap_classic_f64(&tr, dec, ton, path, 1, <int32_t>c)
                    shap_classic_f64(&tr, dec, toff, path, -1, <int32_t>c)
                for m in range(f0, f1):
                    k = v.tree_feats[m]
                    _tree_add(v, t, &on[g * F1 + k], ton[k])
                    _tree_add(v, t, &off[g * F1 + k], toff[k])
                    ton[k] = 0
                    toff[k] = 0
            else:
                for m in range(f0, f1):
                    k = v.tree_feats[m]
                    _tree_add(v, t, &on[g * F1 + k], cache[m])
                    _tree_add(v, t, &off[g * F1 + k], cache[m])
        for g in range(K):
            o = out + g * F1 * F1 + c * F1
            base = g * F1
            o[c] = 0
            for k in range(F1):
                if k == c:
                    o[c] = o[c] + diag[base + k]
                else:
                    # (XGBoost halves the float difference in double)
                    x = on[base + k] - off[base + k]
                    o[k] = <real_out>(<double>x / 2.0)
                    o[c] = o[c] - o[k]


cdef inline void _tree_add(const ShapView* v, int64_t t, real_out* acc,
                           real_out value) noexcept nogil:
    """acc += a tree's value, times its DART weight: XGBoost's float32 sum, or float64."""
    if real_out is float:
        if v.tree_weight32 != NULL:
            acc[0] = qs_weighted_add(acc[0], value, v.tree_weight32[t])
        else:
            acc[0] = acc[0] + value
    else:
        acc[0] = acc[0] + value * v.tree_scale[t]


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


# ---- the quadrature's programs (treeshap.h shap_prog) ---------------------------------------
cdef struct ProgCtx:
    shap_tree t
    int32_t* nid
    int32_t* child
    double* ratio
    int32_t k                    # preorder nodes so far


cdef void prog_node(ProgCtx* c, int32_t node) noexcept nogil:
    cdef int32_t k = c.k, side, ch, e
    cdef double r
    c.k += 1
    c.nid[k] = node
    for side in range(2):
        e = 2 * k + side
        ch = c.t.right[node] if side else c.t.left[node]
        r = (c.t.node_cover[ch] if ch >= 0 else c.t.leaf_cover[~ch]) / c.t.node_cover[node]
        c.ratio[e] = r
        if r == 0.0:
            c.child[e] = SHAP_SKIP
        elif ch < 0:
            c.child[e] = ch
        else:
            c.child[e] = c.k
            prog_node(c, ch)


def programs(dict a):
    """Each tree's quadrature program: its internal nodes in preorder (those under a branch
    of zero cover left out) and each node's two edges (treeshap.h ``shap_prog``). Returns
    ``prog_offset`` (int64, each tree's first preorder node; its edges start at twice that),
    ``prog_nid`` (per node), ``prog_child`` and ``prog_ratio`` (per edge). (1 / f1(z) after
    each edge at each point is the kernels' to divide: a table of it, every edge's, cost
    more to read from memory than the division, for blocks of rows and for a row alone.)"""
    cdef int64_t n_trees = a["node_offset"].shape[0] - 1, t, n0, l0, n_nodes
    cdef const int64_t[::1] noff = a["node_offset"]
    cdef const int64_t[::1] loff = a["leaf_offset"]
    n_nodes = noff[n_trees]
    nid = np.zeros(n_nodes, np.int32)
    child = np.zeros(2 * n_nodes, np.int32)
    ratio = np.zeros(2 * n_nodes, np.float64)
    offset = np.zeros(n_trees + 1, np.int64)
    cdef int32_t[::1] vnid = nid, vch = child
    cdef double[::1] vra = ratio
    cdef int64_t[::1] voff = offset
    cdef const int32_t[::1] left = a["left"]
    cdef const int32_t[::1] right = a["right"]
    cdef const int32_t[::1] feature = a["feature"]
    cdef const double[::1] ncov = a["node_cover"]
    cdef const double[::1] lcov = a["leaf_cover"]
    cdef ProgCtx c
    cdef int64_t at = 0
    with nogil:
        for t in range(n_trees):
            n0 = noff[t]
            l0 = loff[t]
            voff[t] = at
            if noff[t + 1] == n0:
                continue
            c.t.left = &left[n0]
            c.t.right = &right[n0]
            c.t.feature = &feature[n0]
            c.t.node_cover = &ncov[n0]
            c.t.leaf_cover = &lcov[l0]
            c.nid = &vnid[at]
            c.child = &vch[2 * at]
            c.ratio = &vra[2 * at]
            c.k = 0
            prog_node(&c, 0)
            at += c.k
        voff[n_trees] = at
    return {"prog_offset": offset, "prog_nid": nid[:at].copy(),
            "prog_child": child[:2 * at].copy(), "prog_ratio": ratio[:2 * at].copy()}
