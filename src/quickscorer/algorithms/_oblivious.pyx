# cython: language_level=3
"""The "oblivious" kernel: oblivious trees scored from their level tests (oblivious.h; the
layout is ``quickscorer.algorithms.oblivious.oblivious_arrays``).

Calls of any size run in groups of OBL_LANES rows: the rows converted as the source library
reads them (_forest.pxd's load_row), their ranks, then each tree's leaves and their values,
with the GIL released and the groups shared among the threads. ``OblLayout.exits`` gives one
converted row's leaves by the same tests on its values, for the shared row loops of
_kernel.pyx (``predict_leaf``).
"""
cimport numpy as cnp
from cython.parallel cimport prange, parallel, threadid
from libc.math cimport isnan
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t

from quickscorer._forest cimport (Forest, ForestView, FAMILY_PLAIN, FAMILY_XGBOOST, floating, load_row,
                       load_row_ptr)
from quickscorer._kernel cimport (emit, Layout, SmallCall, array_data, check_scores, scratch_data,
                       small_call)

import numpy as np

cnp.import_array()

cdef extern from "quickscorer/algorithms/oblivious.h":
    enum:
        OBL_LANES
        OBL_MAX_DEPTH
        OBL_COUNT_MAX
    ctypedef struct obl_view:
        int64_t n_cols
        const int32_t* col_feature
        const uint8_t* nan_rank
        const uint8_t* zero_rank
        const uint8_t* zero_special
        const int32_t* npiv
        const int64_t* bkt_off
        const double* piv
        const double* bkt
        const float* piv32
        const float* bkt32
        const uint8_t* col_f32
        const int32_t* n_count
        const int32_t* cnt_s
        const int32_t* cnt_k
        const int64_t* cnt_off
        const float* cnt_tab
        const int32_t* block8
        int64_t n_block8
        int64_t n_trees
        const int32_t* depth
        const int32_t* level_col
        const uint8_t* level_thr
        const uint8_t* level_eq
        const uint8_t* same_prev
        int32_t row_depth
        const int32_t* row_col8
        const int32_t* row_thr8
        const int32_t* row_eq8
    void obl_ranks(int isa, const obl_view* v, const double* rows, int64_t F, int n_lanes,
                   float* xt, uint8_t* ranks) noexcept nogil
    void obl_add(int isa, const obl_view* v, const uint8_t* ranks, int n_groups, int n_last,
                 const double* leaf_value, const int64_t* leaf_off,
                 const int32_t* tree_group, int64_t n_outputs, double* acc) noexcept nogil
    void obl_add_f32(int isa, const obl_view* v, const uint8_t* ranks, int n_groups,
                     int n_last, const float* leaf_value, const int64_t* leaf_off,
                     const int32_t* tree_group, const float* tree_weight, int64_t n_outputs,
                     float* acc) noexcept nogil
    int obl_special(const obl_view* v, int64_t c, double x) noexcept nogil
    void obl_row_ranks(int isa, const obl_view* v, const double* row,
                       int32_t* r) noexcept nogil
    void obl_row_add(int isa, const obl_view* v, const int32_t* r, const double* leaf_value,
                     const int64_t* leaf_off, const int32_t* tree_group, int64_t n_outputs,
                     double* acc) noexcept nogil
    void obl_row_add_f32(int isa, const obl_view* v, const int32_t* r,
                         const float* leaf_value, const int64_t* leaf_off,
                         const int32_t* tree_group, const float* tree_weight,
                         int64_t n_outputs, float* acc) noexcept nogil


cdef struct OblView:
    obl_view v
    const double* level_value      # [n_trees][OBL_MAX_DEPTH] the levels' thresholds


#: the most thresholds a column ranked in float32 by counting has
COUNT_MAX = OBL_COUNT_MAX

#: float32 columns of BUCKET_MIN to BUCKET_MAX finite thresholds are ranked by counting in
#: buckets (oblivious.h obl_bucket_count_f32_avx2): at most 8 buckets of up to 16 thresholds;
#: below BUCKET_MIN plain counting takes as few compares
BUCKET_MIN = 17
BUCKET_MAX = 128


def bucket_tables(bkt32, offsets, n_count, col_f32):
    """The tables of the columns ranked by counting in buckets: for each column its thresholds
    a bucket ``s`` (0: the column is not), its buckets ``k``, and where its table starts in
    ``tab`` (float32): the 8 buckets' last thresholds (+inf past the k-th), then for each
    j < s the j-th threshold of each of the 8 buckets (+inf past the column's). A column's
    thresholds are its first ``n_count`` float32 buckets' entries (ascending)."""
    C = n_count.shape[0]
    size = np.zeros(C, np.int32)
    nb = np.zeros(C, np.int32)
    at = np.zeros(C, np.int64)
    parts, end = [], 0
    for c in range(C):
        n = int(n_count[c])
        if not col_f32[c] or n < BUCKET_MIN or n > BUCKET_MAX:
            continue
        s = -(-n // 8)
        k = -(-n // s)
        full = np.full(8 * s, np.inf, np.float32)
        full[:n] = bkt32[offsets[c]:offsets[c] + n]
        last = np.full(8, np.inf, np.float32)
        last[:k] = full[np.minimum(np.arange(1, k + 1) * s, n) - 1]
        size[c], nb[c], at[c] = s, k, end
        parts += [last, full.reshape(8, s).T.reshape(-1)]
        end += 8 + 8 * s
    tab = np.concatenate(parts) if parts else np.zeros(0, np.float32)
    return size, nb, at, np.ascontiguousarray(tab, np.float32)


def block8_starts(col_feature):
    """The columns that start a run of 8 columns reading 8 consecutive features, taken
    from column 0 on as the kernel's scan takes them (a run's columns start no other),
    whose values the AVX2 path converts 8 rows by 8 columns at a time."""
    cf = np.asarray(col_feature, np.int64)
    starts, c = [], 0
    while c + 8 <= cf.shape[0]:
        if (np.diff(cf[c:c + 8]) == 1).all():
            starts.append(c)
            c += 8
        else:
            c += 1
    return np.array(starts, np.int32)


# the most groups a block has: the groups whose sums each block of trees (its leaf values
# in the cache) is added to before the next. 8 (256 rows) and 16 ranked alike, 1 and 4 slower
# on CatBoost's 300 trees of depth 8; python -m benchmarks.experiments.oblivious_floor
# --depth 8 --trees 300 --kind heavy --leaf-block 16384 --block-groups 1,4,8,16
cdef enum:
    BLOCK_GROUPS = 8


# calls of at most this many rows score each row on its own (obl_row_ranks, obl_row_add):
# a group of 32 lanes holding a few rows ranks and walks 32. Row by row was 1.9x to 2.6x
# faster at 1 and 2 rows on CatBoost's 1,000 trees of depth 6, 300 of depth 8 and a 3-class
# model of 500 of depth 6, 1.3x faster to 0.95x at 3, and the group faster from 6;
# python -m benchmarks.experiments.oblivious_rows
cdef enum:
    ROW_CALL_MAX = 3


cdef inline int64_t _align(int64_t n) noexcept nogil:
    return (n + 63) // 64 * 64


cdef class OblLayout(Layout):
    """The oblivious layout's arrays for the kernels (checked against each other)."""
    cdef OblView view
    cdef readonly int64_t n_cols
    #: calls of at most this many rows score each row on its own (ROW_CALL_MAX; settable to
    #: time the two paths against each other)
    cdef public int row_call_max

    def __cinit__(self, dict a, int64_t n_features):
        self._keep = dict(a)
        depth, level_col, level_thr = a["depth"], a["level_col"], a["level_thr"]
        T = depth.shape[0]
        C = a["col_feature"].shape[0]
        if (level_col.shape != (T, OBL_MAX_DEPTH) or level_thr.shape != (T, OBL_MAX_DEPTH)
                or a["level_value"].shape != (T, OBL_MAX_DEPTH)):
            raise ValueError("oblivious layout: the levels do not match the trees")
        if T and (depth.min() < 0 or depth.max() > OBL_MAX_DEPTH):
            raise ValueError(f"oblivious layout: a depth outside 0 to {OBL_MAX_DEPTH}")
        used = np.arange(OBL_MAX_DEPTH)[None, :] < depth[:, None]
        if np.any(used & ((level_col < 0) | (level_col >= C))) or np.any(level_thr[used] == 255):
            raise ValueError("oblivious layout: a level's column or threshold is out of range")
        level_eq = a.get("level_eq")
        if level_eq is None:
            level_eq = np.zeros((T, OBL_MAX_DEPTH), np.uint8)
        # a category's index is at least 1 (the value below it comes first): NaN's rank 0
        # names no category
        if level_eq.shape != (T, OBL_MAX_DEPTH) or np.any(used & (level_eq != 0)
                                                         & (level_thr == 0)):
            raise ValueError("oblivious layout: a category test is out of range")
        for name in ("col_nan_rank", "col_zero_rank", "col_zero_special", "col_npiv"):
            if a[name].shape != (C,):
                raise ValueError(f"oblivious layout field {name!r} does not match the columns")
        off = a["rank_bucket_offsets"]
        if (off.shape != (C + 1,) or (C and (off[0] != 0 or np.any(np.diff(off) < 16)
                                              or off[C] != a["rank_buckets"].shape[0]))
                or a["rank_pivots"].shape != (16 * C,)):
            raise ValueError("oblivious layout: the rank tables do not match the columns")
        if C and (a["col_feature"].min() < 0 or a["col_feature"].max() >= n_features):
            raise ValueError("oblivious layout: a column's feature is out of range")
        v = &self.view.v
        v.n_cols = C
        v.col_feature = <const int32_t*>array_data(a["col_feature"], np.int32, "oblivious",
                                                   "col_feature")
        v.nan_rank = <const uint8_t*>array_data(a["col_nan_rank"], np.uint8, "oblivious",
                                                "col_nan_rank")
        v.zero_rank = <const uint8_t*>array_data(a["col_zero_rank"], np.uint8, "oblivious",
                                                 "col_zero_rank")
        v.zero_special = <const uint8_t*>array_data(a["col_zero_special"], np.uint8,
                                                    "oblivious", "col_zero_special")
        v.npiv = <const int32_t*>array_data(a["col_npiv"], np.int32, "oblivious", "col_npiv")
        v.bkt_off = <const int64_t*>array_data(off, np.int64, "oblivious",
                                               "rank_bucket_offsets")
        v.piv = <const double*>array_data(a["rank_pivots"], np.float64, "oblivious",
                                          "rank_pivots")
        v.bkt = <const double*>array_data(a["rank_buckets"], np.float64, "oblivious",
                                          "rank_buckets")
        # float32 copies of the rank tables where the layout has them (every threshold a
        # float32 boundary): the AVX2 path then ranks in float32
        v.piv32 = v.bkt32 = NULL
        v.col_f32 = NULL
        v.n_count = NULL
        v.cnt_s = v.cnt_k = NULL
        v.cnt_off = NULL
        v.cnt_tab = NULL
        v.block8 = NULL
        v.n_block8 = 0
        if a["rank_pivots_f32"].shape[0]:
            col_f32 = np.ascontiguousarray(a.get("col_f32", np.ones(C, np.uint8)), np.uint8)
            if (a["rank_pivots_f32"].shape != a["rank_pivots"].shape
                    or a["rank_buckets_f32"].shape != a["rank_buckets"].shape
                    or col_f32.shape != (C,)
                    or (a["col_zero_special"].astype(bool) & col_f32.astype(bool)).any()):
                raise ValueError("oblivious layout: the float32 rank tables do not match")
            self._keep["col_f32"] = col_f32
            v.col_f32 = <const uint8_t*>array_data(col_f32, np.uint8, "oblivious", "col_f32")
            v.piv32 = <const float*>array_data(a["rank_pivots_f32"], np.float32, "oblivious",
                                               "rank_pivots_f32")
            v.bkt32 = <const float*>array_data(a["rank_buckets_f32"], np.float32, "oblivious",
                                               "rank_buckets_f32")
            # each column's finite thresholds (its buckets ascending, +inf padded)
            n_count = np.add.reduceat(np.asarray(a["rank_buckets_f32"]) < np.inf,
                                      off[:C]).astype(np.int32) if C else np.zeros(0, np.int32)
            self._keep["n_count"] = n_count
            v.n_count = <const int32_t*>array_data(n_count, np.int32, "oblivious", "n_count")
            cnt = bucket_tables(np.asarray(a["rank_buckets_f32"]), off, n_count, col_f32)
            self._keep["bucket_tables"] = cnt
            if cnt[0].any():
                v.cnt_s = <const int32_t*>array_data(cnt[0], np.int32, "oblivious", "cnt_s")
                v.cnt_k = <const int32_t*>array_data(cnt[1], np.int32, "oblivious", "cnt_k")
                v.cnt_off = <const int64_t*>array_data(cnt[2], np.int64, "oblivious", "cnt_off")
                v.cnt_tab = <const float*>array_data(cnt[3], np.float32, "oblivious", "cnt_tab")
            block8 = block8_starts(a["col_feature"])
            self._keep["block8"] = block8
            if block8.shape[0]:
                v.block8 = <const int32_t*>array_data(block8, np.int32, "oblivious", "block8")
                v.n_block8 = block8.shape[0]
        v.n_trees = T
        v.depth = <const int32_t*>array_data(depth, np.int32, "oblivious", "depth")
        # the level arrays as the kernels read them: flat, OBL_MAX_DEPTH a tree
        v.level_col = <const int32_t*>array_data(level_col.reshape(-1), np.int32, "oblivious",
                                                 "level_col")
        v.level_thr = <const uint8_t*>array_data(level_thr.reshape(-1), np.uint8, "oblivious",
                                                 "level_thr")
        self.view.level_value = <const double*>array_data(a["level_value"].reshape(-1),
                                                          np.float64, "oblivious",
                                                          "level_value")
        # the category tests, where the model has any (the kernels' faster loop otherwise)
        v.level_eq = NULL
        if np.any(used & (level_eq != 0)):
            self._keep["level_eq"] = level_eq = np.ascontiguousarray(level_eq, np.uint8)
            v.level_eq = <const uint8_t*>array_data(level_eq.reshape(-1), np.uint8,
                                                    "oblivious", "level_eq")
        # a tree whose levels are the previous tree's (the outputs of one multiclass CatBoost
        # tree) takes its leaf numbers where several outputs are summed
        lc, lt, le = (np.where(used, x, 0) for x in (level_col, level_thr, level_eq))
        same_prev = np.zeros(T, np.uint8)
        if T > 1:
            prev, this = slice(0, T - 1), slice(1, T)
            same_prev[this] = ((depth[this] == depth[prev])
                               & (lc[this] == lc[prev]).all(axis=1)
                               & (lt[this] == lt[prev]).all(axis=1)
                               & (le[this] == le[prev]).all(axis=1))
        self._keep["same_prev"] = same_prev
        v.same_prev = <const uint8_t*>array_data(same_prev, np.uint8, "oblivious", "same_prev")
        # the levels for one row, 8 trees a block level by level, each tree's levels last
        # (its leading positions test column 0 against 255, which no rank exceeds)
        D = int(depth.max()) if T else 0
        n8 = (T + 7) // 8 * 8
        pos = np.arange(D)[None, :] - (D - depth[:, None])         # the level at a position
        live = pos >= 0
        k = np.maximum(pos, 0)
        col8 = np.zeros((n8, D), np.int32)
        thr8 = np.full((n8, D), 255, np.int32)
        eq8 = np.zeros((n8, D), np.int32)
        col8[:T] = np.where(live, np.take_along_axis(lc, k, axis=1), 0)
        thr8[:T] = np.where(live, np.take_along_axis(lt, k, axis=1), 255)
        eq8[:T] = np.where(live, -np.take_along_axis(le, k, axis=1).astype(np.int32), 0)
        for name, arr in (("row_col8", col8), ("row_thr8", thr8), ("row_eq8", eq8)):
            self._keep[name] = np.ascontiguousarray(
                arr.reshape(n8 // 8, 8, D).transpose(0, 2, 1)).reshape(-1)
        v.row_depth = D
        v.row_col8 = <const int32_t*>array_data(self._keep["row_col8"], np.int32, "oblivious",
                                                "row_col8")
        v.row_thr8 = <const int32_t*>array_data(self._keep["row_thr8"], np.int32, "oblivious",
                                                "row_thr8")
        v.row_eq8 = NULL
        if v.level_eq != NULL:
            v.row_eq8 = <const int32_t*>array_data(self._keep["row_eq8"], np.int32,
                                                   "oblivious", "row_eq8")
        self.row_call_max = ROW_CALL_MAX
        self.n_cols = C
        self.n_trees = T
        self.n_features = n_features
        self.scratch_words = 0
        self.ctx = &self.view
        self.exits = obl_exits

    def group_bytes(self, int64_t n_outputs):
        """Scratch bytes a thread needs for a block of groups: a group's converted rows and
        their values column by column in float32, the block's ranks and sums."""
        return (_align(8 * OBL_LANES * self.n_features) + _align(4 * OBL_LANES * self.n_cols)
                + _align(BLOCK_GROUPS * OBL_LANES * self.n_cols)
                + _align(8 * BLOCK_GROUPS * OBL_LANES * n_outputs) + 64)

    def held_arrays(self):
        """Every array the layout keeps for the kernels: the layout's own and those derived
        from it here (counts, the row-by-row levels), for ``Model.memory()``."""
        return [a for a in self._keep.values() if isinstance(a, np.ndarray)]

    def __reduce__(self):
        return (OblLayout, (self._keep, self.n_features))


cdef void obl_exits(const void* ctx, const ForestView* f, const double* row, uint64_t* scratch,
                    int32_t* leaves, double* o64, float* o32) noexcept nogil:
    """Each tree's leaf for one converted row: its level tests on the row's values (a value
    right of a threshold index j exactly when its rank exceeds j: greater than the
    threshold, or a special rank above j)."""
    cdef const OblView* w = <const OblView*>ctx
    cdef const obl_view* v = &w.v
    cdef int64_t t, c
    cdef int k, d, leaf, s
    cdef double x
    for t in range(v.n_trees):
        d = v.depth[t]
        leaf = 0
        for k in range(d):
            c = v.level_col[t * OBL_MAX_DEPTH + k]
            x = row[v.col_feature[c]]
            s = obl_special(v, c, x)
            if v.level_eq != NULL and v.level_eq[t * OBL_MAX_DEPTH + k]:
                # a category test: right unless the value is the category (NaN never is)
                if s >= 0:
                    leaf = (leaf << 1) | (s != v.level_thr[t * OBL_MAX_DEPTH + k])
                else:
                    leaf = (leaf << 1) | (x != w.level_value[t * OBL_MAX_DEPTH + k])
            elif s >= 0:
                leaf = (leaf << 1) | (s > v.level_thr[t * OBL_MAX_DEPTH + k])
            else:
                leaf = (leaf << 1) | (x > w.level_value[t * OBL_MAX_DEPTH + k])
        emit(f, t, leaf, row, leaves, o64, o32)


cdef struct Bufs:
    double* rows        # one group's converted rows
    float* xt           # one group's values column by column
    uint8_t* ranks      # the block's ranks, n_cols * OBL_LANES a group
    double* acc         # the block's sums, n_outputs * OBL_LANES a group


cdef inline Bufs _carve(uint8_t* base, int64_t F, int64_t C) noexcept nogil:
    cdef Bufs b
    cdef uint8_t* p = <uint8_t*>((<size_t>base + 63) // 64 * 64)
    b.rows = <double*>p
    p += _align(8 * OBL_LANES * F)
    b.xt = <float*>p
    p += _align(4 * OBL_LANES * C)
    b.ranks = p
    p += _align(BLOCK_GROUPS * OBL_LANES * C)
    b.acc = <double*>p
    return b


cdef inline void _ranks(const ForestView* f, const obl_view* v, int isa, int gj, int n_lanes,
                        const double* rows, Bufs b) noexcept nogil:
    """Group gj of the block: its ranks from its converted rows (b.rows, or the caller's
    rows where they need no conversion) and its sums set to the base scores (in float32,
    acc read as floats, for XGBoost forests)."""
    cdef int64_t g, l, K = f.n_outputs
    cdef float* acc32 = <float*>b.acc + gj * K * OBL_LANES
    cdef double* acc = b.acc + gj * K * OBL_LANES
    obl_ranks(isa, v, rows, f.n_features, n_lanes, b.xt, b.ranks + gj * v.n_cols * OBL_LANES)
    for g in range(K):
        for l in range(OBL_LANES):
            if f.family == FAMILY_XGBOOST:
                acc32[g * OBL_LANES + l] = <float>f.base_score[g]
            else:
                acc[g * OBL_LANES + l] = f.base_score[g]


cdef inline void _sums(const ForestView* f, const obl_view* v, int isa, int n_groups,
                       int n_last, Bufs b) noexcept nogil:
    """The block's sums (its groups ranked): every group full but the last, n_last lanes."""
    if f.family == FAMILY_XGBOOST:
        obl_add_f32(isa, v, b.ranks, n_groups, n_last, f.leaf_value_f32, f.tree_leaf_offset,
                    f.tree_group, f.tree_weight, f.n_outputs, <float*>b.acc)
    else:
        obl_add(isa, v, b.ranks, n_groups, n_last, f.leaf_value, f.tree_leaf_offset,
                f.tree_group, f.n_outputs, b.acc)


cdef inline void _row(const ForestView* f, const obl_view* v, int isa, const double* row,
                      Bufs b, double* o64, float* o32) noexcept nogil:
    """One converted row's scores into o64 (float64 forests) or o32, each row alone: its
    ranks in b.ranks, each output's trees added in order from its base score."""
    cdef int64_t k
    cdef int32_t* r = <int32_t*>b.ranks       # n_cols int32: within the block's ranks
    obl_row_ranks(isa, v, row, r)
    if o32 != NULL:
        for k in range(f.n_outputs):
            o32[k] = <float>f.base_score[k]
        obl_row_add_f32(isa, v, r, f.leaf_value_f32, f.tree_leaf_offset, f.tree_group,
                        f.tree_weight, f.n_outputs, o32)
    else:
        for k in range(f.n_outputs):
            o64[k] = f.base_score[k]
        obl_row_add(isa, v, r, f.leaf_value, f.tree_leaf_offset, f.tree_group, f.n_outputs,
                    o64)


cdef int _check(Forest forest, OblLayout lay, Py_ssize_t n_cols, int n_threads,
                object scratch) except -1:
    cdef const ForestView* f = &forest.view
    if n_threads < 1:
        raise ValueError(f"n_threads must be >= 1, got {n_threads}")
    if n_cols != f.n_features:
        raise ValueError(f"input has {n_cols} features, the model expects {f.n_features}")
    if lay.n_features != f.n_features or lay.n_trees != f.n_trees or f.has_linear:
        raise ValueError("the oblivious layout and the forest disagree on the model")
    need = lay.group_bytes(f.n_outputs)
    if scratch.shape[0] < n_threads or scratch.shape[1] < need:
        raise ValueError(f"scratch must be at least ({n_threads}, {need}) bytes")
    return 0


def predict_raw(Forest forest, OblLayout lay, const floating[:, :] X, double[:, ::1] out64,
                float[:, ::1] out32, uint8_t[:, ::1] scratch, int n_threads, int isa):
    """Raw scores of the rows of X into out64 (float64 forests) or out32 (float32), blocks
    of up to BLOCK_GROUPS groups of OBL_LANES rows shared among ``n_threads`` threads.
    scratch: (n_threads, lay.group_bytes(n_outputs)) uint8."""
    _check(forest, lay, X.shape[1], n_threads, scratch)
    check_scores(forest, X.shape[0], out64, out32)
    cdef const ForestView* f = &forest.view
    cdef const obl_view* v = &lay.view.v
    cdef int64_t F = f.n_features, K = f.n_outputs, C = lay.n_cols
    cdef Py_ssize_t n_rows = X.shape[0]
    cdef Py_ssize_t n_groups = (n_rows + OBL_LANES - 1) // OBL_LANES
    # groups a block: at most BLOCK_GROUPS, and at least four blocks a thread where the
    # call has that many groups (the threads' shares stay even)
    cdef Py_ssize_t per = max(1, min(<Py_ssize_t>BLOCK_GROUPS, n_groups // (4 * n_threads)))
    cdef Py_ssize_t n_blocks = (n_groups + per - 1) // per
    cdef Py_ssize_t bi, g0, i
    cdef int64_t l, k
    cdef int gj, ng, n_lanes
    cdef Bufs b
    cdef bint xgb = f.family == FAMILY_XGBOOST
    # the source library reads a C-contiguous float64 row of a plain model (CatBoost,
    # scikit-learn) as it is: the groups read X in place, not a copy of each row
    cdef bint direct = (n_rows > 0 and f.family == FAMILY_PLAIN and floating is double
                        and X.strides[1] == sizeof(double)
                        and X.strides[0] == F * <Py_ssize_t>sizeof(double))
    cdef const char* base = <const char*>&X[0, 0] if direct else NULL
    with nogil, parallel(num_threads=n_threads):
        b = _carve(&scratch[threadid(), 0], F, C)
        for bi in prange(n_blocks, schedule="dynamic"):
            g0 = bi * per
            ng = <int>min(per, n_groups - g0)
            for gj in range(ng):
                i = (g0 + gj) * OBL_LANES
                n_lanes = <int>min(<Py_ssize_t>OBL_LANES, n_rows - i)
                if direct:
                    _ranks(f, v, isa, gj, n_lanes,
                           <const double*>(base + i * F * sizeof(double)), b)
                else:
                    for l in range(n_lanes):
                        load_row(f, X, i + l, b.rows + l * F)
                    _ranks(f, v, isa, gj, n_lanes, b.rows, b)
            _sums(f, v, isa, ng, <int>min(<Py_ssize_t>OBL_LANES,
                                          n_rows - (g0 + ng - 1) * OBL_LANES), b)
            for gj in range(ng):
                i = (g0 + gj) * OBL_LANES
                n_lanes = <int>min(<Py_ssize_t>OBL_LANES, n_rows - i)
                for l in range(n_lanes):
                    for k in range(K):
                        if xgb:
                            out32[i + l, k] = (<float*>b.acc)[(gj * K + k) * OBL_LANES + l]
                        else:
                            out64[i + l, k] = b.acc[(gj * K + k) * OBL_LANES + l]


def predict_small(Forest forest, OblLayout lay, object X, bint squeeze, int isa,
                  object scratch):
    """Raw scores of a call of a few rows on one thread, the low-latency entry (rows and
    scores as _kernel.small_call takes them, None for anything else): the blocks of
    predict_raw, the same sums. scratch: at least lay.group_bytes(n_outputs) bytes."""
    cdef const ForestView* f = &forest.view
    if lay.n_features != f.n_features or lay.n_trees != f.n_trees or f.has_linear:
        raise ValueError("the oblivious layout and the forest disagree on the model")
    cdef SmallCall c
    out = small_call(forest, X, lay.n_trees, lay.n_features, squeeze, &c)
    if out is None:
        return None
    cdef const obl_view* v = &lay.view.v
    cdef int64_t F = f.n_features, K = f.n_outputs
    cdef Bufs b = _carve(<uint8_t*>scratch_data(scratch, lay.group_bytes(K)), F, lay.n_cols)
    cdef bint direct = (f.family == FAMILY_PLAIN and not c.is32
                        and c.row_bytes == F * <Py_ssize_t>sizeof(double))
    cdef Py_ssize_t n_groups = (c.n + OBL_LANES - 1) // OBL_LANES
    cdef Py_ssize_t g0, i
    cdef int64_t l, k
    cdef int gj, ng, n_lanes
    cdef const double* row
    if c.n <= lay.row_call_max:
        with nogil:
            for i in range(c.n):
                if direct:
                    row = <const double*>(c.x + i * c.row_bytes)
                else:
                    load_row_ptr(f, c.x + i * c.row_bytes, c.is32, b.rows)
                    row = b.rows
                _row(f, v, isa, row, b, c.o64 + i * K if c.o64 != NULL else NULL,
                     c.o32 + i * K if c.o32 != NULL else NULL)
        return out
    with nogil:
        g0 = 0
        while g0 < n_groups:
            ng = <int>min(<Py_ssize_t>BLOCK_GROUPS, n_groups - g0)
            for gj in range(ng):
                i = (g0 + gj) * OBL_LANES
                n_lanes = <int>min(<Py_ssize_t>OBL_LANES, c.n - i)
                if direct:
                    _ranks(f, v, isa, gj, n_lanes, <const double*>(c.x + i * c.row_bytes), b)
                else:
                    for l in range(n_lanes):
                        load_row_ptr(f, c.x + (i + l) * c.row_bytes, c.is32, b.rows + l * F)
                    _ranks(f, v, isa, gj, n_lanes, b.rows, b)
            _sums(f, v, isa, ng, <int>min(<Py_ssize_t>OBL_LANES,
                                          c.n - (g0 + ng - 1) * OBL_LANES), b)
            for gj in range(ng):
                i = (g0 + gj) * OBL_LANES
                n_lanes = <int>min(<Py_ssize_t>OBL_LANES, c.n - i)
                for l in range(n_lanes):
                    for k in range(K):
                        if c.o32 != NULL:
                            c.o32[(i + l) * K + k] = (<float*>b.acc)[(gj * K + k) * OBL_LANES
                                                                      + l]
                        else:
                            c.o64[(i + l) * K + k] = b.acc[(gj * K + k) * OBL_LANES + l]
            g0 += ng
    return out
