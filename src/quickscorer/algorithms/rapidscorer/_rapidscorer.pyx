# cython: language_level=3
"""RapidScorer-style scoring (Ye et al., KDD 2018) over the layout of
``quickscorer.algorithms.rapidscorer.layout``: 32 (AVX2, portable C) or 64 (AVX-512, AVX2 wide)
documents per group, byte-transposed leaf bitvectors, node masks as byte runs, comparisons
in rank space (the scans are in rapidscorer/scan.h, the level path in rapidscorer/levels.h).

Per group of documents: each document's value of each feature becomes its rank among that
feature's distinct thresholds, once; then for every tree block, the bitvectors are set to all
ones, every segment of every feature the block splits on is scanned (values that no
comparison decides, NaN and LightGBM's zero-as-missing, scan as the rank that sends them to
the nodes' default side: 0 or 255, per segment), and
every tree's exit leaf is found byte-wise and added to the group's scores in tree order, in
the source library's precision: bit-exact with the reference walk.
"""
import numpy as np

cimport numpy as cnp
from cython.parallel cimport prange, parallel, threadid
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memset

from quickscorer._forest cimport Forest, ForestView, floating, FAMILY_XGBOOST
from quickscorer._kernel cimport (SmallCall, array_data, check_leaves, check_scores, scratch_data,
                       small_call)

cnp.import_array()

cdef extern from "quickscorer/algorithms/rapidscorer/scan.h":
    ctypedef struct rs_entry:
        uint16_t byte
        uint8_t thr_b
        uint8_t mask
    enum:
        RS_ISA_AVX2
        RS_ISA_AVX512
        RS_ISA_AVX2_WIDE
    int rs_lanes(int isa) noexcept nogil
    int rs_isa_available(int isa) noexcept nogil
    int rs_wide_add_default() noexcept nogil

cdef extern from "quickscorer/algorithms/rapidscorer/levels.h":
    ctypedef struct rs_lv_node:
        uint16_t col
        uint8_t thr
        uint8_t pos
    ctypedef struct rs_lv_model:
        const rs_lv_node* nodes
        const int64_t* node_off
        const uint16_t* lend
        const uint8_t* depth
        const uint8_t* split
        const rs_lv_node* deep
        const int64_t* deep_off
        const int64_t* slot_off
        const uint8_t* table
        const int64_t* table_off
        int vbmi
        int halves
    int rs_lv_vbmi_available() noexcept nogil
    int rs_lv_halves_default() noexcept nogil

cdef extern from "quickscorer/algorithms/rapidscorer/view.h":
    # the layout as the row loops read it (view.h: what each field holds)
    ctypedef struct RSView "rs_view":
        int64_t n_features
        int64_t n_slots
        const int32_t* slot_column
        int64_t n_trees
        int64_t n_blocks
        int64_t n_leaves
        const double* rank_pivots
        const double* rank_buckets
        const float* rank_pivots32
        const float* rank_buckets32
        const int64_t* rank_bucket_offsets
        const uint8_t* rank_zero
        int64_t n_model_used
        const int32_t* model_used
        const int64_t* tree_byte_offsets
        const int64_t* block_starts
        const rs_entry* entries
        const uint64_t* segments
        const int64_t* block_segments
        int64_t max_block_bytes
        const uint8_t* leaf_order
        const double* leaf_value
        const float* leaf_value_f32
        int64_t n_cat_slots
        const int32_t* cat_slot_column
        const int32_t* cat_node_slot
        const uint8_t* cat_tables
        const int64_t* cat_entry_offsets
        const rs_entry* cat_entries
        const int64_t* block_cat
        bint lv_on
        int64_t lv_min_lanes
        rs_lv_model lv
        int64_t lv_chunk
        int wide_add
        int64_t n_lv_blocks
        const int64_t* lv_block_starts
        const uint16_t* lv_slot_leaf
        const double* lv_value
        const float* lv_value_f32
        const int32_t* lv_combos
        int64_t n_lv_combos
        int gw_on

cdef extern from "quickscorer/algorithms/rapidscorer/gw.h" nogil:
    int rs_gw_default()

cdef extern from "quickscorer/algorithms/rapidscorer/check.h" nogil:
    # the layout's arrays by number (view.h RS_ARRAY_NAMES), checked into a view by rs_check
    ctypedef struct rs_span:
        const void* data
        int64_t n
    ctypedef struct rs_arrays:
        int lv_only
    enum:
        RS_ARRAY_COUNT
    const char* const RS_ARRAY_NAMES[]
    rs_span* rs_array_at(rs_arrays* a, int k)
    const char* rs_check(const rs_arrays* a, int64_t n_features, RSView* v)

cdef extern from "quickscorer/algorithms/rapidscorer/run.h" nogil:
    ctypedef struct rs_bufs:
        pass
    ctypedef struct rs_rows:
        const char* base
        int64_t row_stride
        int64_t col_stride
        int is32
        int64_t n_rows
    ctypedef struct rs_plan:
        int isa
        int64_t lanes
        int64_t n_rows
        int64_t n_groups
        int chunked
        int gw
        int scan
        int64_t per_chunk
        int64_t n_items
    int64_t rs_chunk_stride(int64_t lanes, int64_t n_cols)
    int64_t rs_scan_stride(int64_t lanes, int64_t n_slots)
    int64_t rs_scratch_need(const RSView* r, int isa, int64_t n_outputs)
    rs_bufs rs_carve(const RSView* r, uint8_t* base, int64_t lanes, int64_t n_outputs)
    rs_plan rs_plan_call(const ForestView* f, const RSView* r, int isa, int64_t n_rows,
                         int n_threads, int may_chunk)
    int64_t rs_item_first(const rs_plan* p, int64_t k)
    void rs_item_rows(const rs_plan* p, int64_t k, int64_t* first, int64_t* last)
    void rs_run_item(const rs_plan* p, const ForestView* f, const RSView* r, const rs_rows* X,
                     int64_t k, const rs_bufs* b, double* out64, float* out32, int32_t* leaves)

def isa_available(int isa):
    """Whether this CPU runs the RapidScorer path isa (0 portable, 1 AVX2, 2 AVX-512 with BW,
    3 AVX2 with 64 lanes)."""
    return bool(rs_isa_available(isa))


def lv_vbmi_available():
    """Whether this CPU's AVX-512 level walk can take its byte permutations (AVX512_VBMI)."""
    return bool(rs_lv_vbmi_available())


def lv_halves_default():
    """Whether this CPU's AVX-512 level walk runs as the AVX2 wide path's, two 256-bit
    registers a column, by default (every AVX-512 CPU: rapidscorer/levels.h)."""
    return bool(rs_lv_halves_default())


def wide_add_default():
    """Whether the AVX-512 path adds the exit leaves of blocks of trees of more than 32 leaves
    as the AVX2 wide path does, by default (rapidscorer/scan.h rs_wide_add_default: a core
    that runs 512-bit operations as two halves)."""
    return bool(rs_wide_add_default())


def gw_default():
    """Whether the AVX-512 path takes the gathered walk by default where the layout has it
    (rapidscorer/gw.h rs_gw_default: an Intel core with AVX-512)."""
    return bool(rs_gw_default())


def lanes_of(int isa):
    """Documents per group on path isa."""
    return rs_lanes(isa)


_FIELDS = {
    "rank_pivots": np.float64, "rank_buckets": np.float64, "rank_bucket_offsets": np.int64,
    "rank_zero": np.uint8, "slot_column": np.int32,
    "model_used": np.int32, "tree_byte_offsets": np.int64, "block_starts": np.int64,
    "entries": np.uint32, "segments": np.uint64, "block_segments": np.int64,
    "leaf_offset": np.int64, "leaf_order": np.uint8,
    "leaf_value": np.float64, "leaf_value_f32": np.float32,
    "cat_slot_column": np.int32, "cat_node_slot": np.int32, "cat_tables": np.uint8,
    "cat_entry_offsets": np.int64, "cat_entries": np.uint32, "block_cat": np.int64,
}

# the level-by-level path's fields (rapidscorer.levels.level_arrays; empty: not used)
_LV_FIELDS = {
    "lv_nodes": np.uint32, "lv_node_offset": np.int64, "lv_level_end": np.uint16,
    "lv_depth": np.uint8, "lv_slot_offset": np.int64, "lv_slot_leaf": np.uint16,
    "lv_split": np.uint8, "lv_deep": np.uint32, "lv_deep_offset": np.int64,
    "lv_block_starts": np.int64,
    "lv_value": np.float64, "lv_value_f32": np.float32, "lv_combos": np.int32,
    "lv_table": np.uint8, "lv_table_offset": np.int64,
}

# the gathered walk's fields (rapidscorer.walks.walk_arrays; absent or empty: not used)
_GW_FIELDS = {"gw_nodes": np.uint64, "gw_roots": np.int32, "gw_combos": np.int32}

#: the layout's arrays in the order of rapidscorer/view.h's rs_arrays (RS_ARRAY_NAMES), which
#: the C index names them in (model_file.C_INDEX_RS_SLOTS)
ARRAY_NAMES = tuple(RS_ARRAY_NAMES[k].decode() for k in range(RS_ARRAY_COUNT))
# every array of the layout and its item type, as rs_check reads them
_DTYPES = {**_FIELDS, **_LV_FIELDS, **_GW_FIELDS}
if set(ARRAY_NAMES) != set(_DTYPES):
    raise ImportError("rapidscorer/view.h names other arrays than _rapidscorer's fields")


cdef class RSLayout:
    """The RapidScorer arrays of one model, wrapped for the kernel without copying."""
    cdef RSView view
    cdef object _keep, _ranks32
    cdef readonly int64_t n_features, n_slots, n_trees, max_block_bytes, n_leaves
    cdef readonly bint reordered, has_f32, float32_ranks, levels, levels_vbmi, levels_halves
    cdef readonly bint gathered, wide_add
    cdef readonly int64_t levels_min_lanes, levels_chunk
    cdef int _halves_asked, _gathered_asked, _wide_asked

    def __cinit__(self, dict a, int64_t n_features, bint float32_ranks=False,
                  int64_t levels_min_lanes=32, int64_t levels_chunk=8, bint levels_vbmi=True,
                  int levels_halves=-1, int gathered=-1, int wide_add=-1):
        """float32_ranks: also keep the rank search's thresholds in float32, for a model
        whose rows the kernel reads as float32 values (XGBoost's), where the AVX2 and
        AVX-512 searches then compare 8 or 16 thresholds a register; ignored where a
        threshold is not a float32 value. levels_min_lanes: groups of fewer lanes scan even
        where the layout has the level-by-level fields (32: every group walks them).
        levels_chunk: the most groups a thread walks through each block of trees together
        (1: a group at a time through all the trees). levels_vbmi: the AVX-512 level walk
        takes its byte permutations where the CPU has AVX512_VBMI (False: it compares a
        node at a time, as on AVX-512 CPUs without them). levels_halves: the AVX-512 level
        walk runs as the AVX2 wide path's, two 256-bit registers a column (1), or in 512-bit
        registers (0); -1: as this CPU is best served (lv_halves_default), decided where the
        layout is made or unpickled. gathered: the AVX-512 path takes the gathered walk
        where the layout has its fields (1), or the scans (0); -1: as this CPU is best
        served (gw_default). wide_add: the AVX-512 scan adds the exit leaves of blocks of
        trees of more than 32 leaves as the AVX2 wide path does (1), or tree by tree (0);
        -1: as this CPU is best served (wide_add_default)."""
        if levels_chunk < 1:
            raise ValueError(f"levels_chunk must be >= 1, got {levels_chunk}")
        self.levels_min_lanes = levels_min_lanes
        self.levels_chunk = levels_chunk
        self.levels_vbmi = levels_vbmi and rs_lv_vbmi_available() != 0
        self._halves_asked = levels_halves
        self.levels_halves = (rs_lv_halves_default() != 0 if levels_halves < 0
                              else levels_halves != 0)
        self._keep = dict(a)
        cdef rs_arrays arr
        cdef rs_span* span
        memset(&arr, 0, sizeof(arr))
        levels = "lv_depth" in a and a["lv_depth"].shape[0] != 0
        walk = "gw_nodes" in a and a["gw_nodes"].shape[0] != 0
        for k in range(RS_ARRAY_COUNT):
            name = RS_ARRAY_NAMES[k].decode()
            if name in _LV_FIELDS and not levels:
                continue                  # no level fields: the spans stay empty
            if name in _GW_FIELDS and not walk:
                continue
            span = rs_array_at(&arr, k)
            span.data = array_data(a[name], _DTYPES[name], "rapidscorer", name)
            span.n = a[name].shape[0]
        # a layout of the level path alone (rapidscorer.layout.levels_only_arrays) has no scans
        arr.lv_only = "lv_only" in a and a["lv_only"].shape[0] == 1 and bool(a["lv_only"][0])
        cdef const char* why = rs_check(&arr, n_features, &self.view)
        if why != NULL:
            raise ValueError(why.decode())
        self.float32_ranks = False
        if float32_ranks:
            piv, bkt = a["rank_pivots"], a["rank_buckets"]
            piv32, bkt32 = piv.astype(np.float32), bkt.astype(np.float32)
            if (np.array_equal(piv32.astype(np.float64), piv)
                    and np.array_equal(bkt32.astype(np.float64), bkt)):
                self._ranks32 = (piv32, bkt32)
                self.view.rank_pivots32 = <const float*>array_data(piv32, np.float32,
                                                                   "rapidscorer", "ranks32")
                self.view.rank_buckets32 = <const float*>array_data(bkt32, np.float32,
                                                                    "rapidscorer", "ranks32")
                self.float32_ranks = True
        self.levels = self.view.lv_on != 0
        self.view.lv.vbmi = self.levels_vbmi
        self.view.lv.halves = self.levels_halves
        self.view.lv_chunk = self.levels_chunk   # the level walk's chunks or the scan's
        if arr.lv_only:
            self.levels_min_lanes = 0        # every group walks the levels
        self.view.lv_min_lanes = self.levels_min_lanes
        self._gathered_asked = gathered
        if gathered >= 0:
            self.view.gw_on = walk and gathered != 0
        self.gathered = self.view.gw_on != 0
        self._wide_asked = wide_add
        self.wide_add = rs_wide_add_default() != 0 if wide_add < 0 else wide_add != 0
        self.view.wide_add = self.wide_add
        self.n_leaves = self.view.n_leaves
        self.reordered = self.view.leaf_order != NULL
        self.has_f32 = a["leaf_value_f32"].shape[0] != 0
        self.n_features = n_features
        self.n_slots = self.view.n_slots
        self.n_trees = self.view.n_trees
        self.max_block_bytes = self.view.max_block_bytes

    def scratch_bytes(self, int isa, int64_t n_outputs):
        """Scratch bytes one thread needs on path isa (a multiple of 64)."""
        return self._scratch_need(isa, n_outputs)

    cdef Py_ssize_t _scratch_need(self, int isa, int64_t n_outputs):
        return rs_scratch_need(&self.view, isa, n_outputs)

    def __reduce__(self):
        return (RSLayout, (self._keep, self.n_features, self._ranks32 is not None,
                           self.levels_min_lanes, self.levels_chunk, self.levels_vbmi,
                           self._halves_asked, self._gathered_asked, self._wide_asked))


def chunk_group_bytes(int64_t lanes, int64_t n_cols, int64_t n_slots=0):
    """Scratch bytes one group of ``lanes`` lanes takes in a chunk of a layout of ``n_cols``
    level columns (rank slots and combos) and ``n_slots`` rank slots: the more of a level
    chunk's and a scan chunk's, what sizes the chunks (Tuning.rs_lv_chunk_bytes)."""
    return max(rs_chunk_stride(lanes, n_cols), rs_scan_stride(lanes, n_slots))


def call_plan(Forest forest, RSLayout lay, int64_t n_rows, int n_threads, int isa):
    """How run.h plans a call of n_rows rows asking for scores on n_threads threads, path isa
    (rs_plan_call): its items and whether they are chunks of groups, and whose."""
    cdef rs_plan p = rs_plan_call(&forest.view, &lay.view, isa, n_rows, n_threads, 1)
    return {"groups": p.n_groups, "items": p.n_items, "chunked": bool(p.chunked),
            "per_chunk": p.per_chunk,
            "chunks": ("gathered" if p.gw else "scan" if p.scan else "levels")
            if p.chunked else None}


cdef inline rs_rows _rows_of(const floating[:, :] X) noexcept nogil:
    """X as run.h reads it: its first value, strides and type."""
    cdef rs_rows x
    x.base = <const char*>&X[0, 0] if X.shape[0] and X.shape[1] else NULL
    x.row_stride = X.strides[0]
    x.col_stride = X.strides[1]
    x.is32 = floating is float
    x.n_rows = X.shape[0]
    return x


cdef void _run(Forest forest, RSLayout lay, const floating[:, :] X, double[:, ::1] out64,
               float[:, ::1] out32, int32_t[:, ::1] leaves, uint8_t[:, ::1] scratch,
               int n_threads, int isa) noexcept:
    """The call as run.h plans it (rs_plan_call: groups of rs_lanes(isa) rows, or chunks of
    groups through the level path's tree blocks), its items on OpenMP's threads."""
    cdef const ForestView* f = &forest.view
    cdef const RSView* r = &lay.view
    cdef rs_rows x = _rows_of(X)
    cdef bint want_leaves = leaves.shape[0] != 0
    cdef rs_plan p = rs_plan_call(f, r, isa, X.shape[0], n_threads, not want_leaves)
    cdef int64_t K = f.n_outputs, T = f.n_trees
    cdef double* o64 = &out64[0, 0] if out64.shape[0] and out64.shape[1] else NULL
    cdef float* o32 = &out32[0, 0] if out32.shape[0] and out32.shape[1] else NULL
    cdef int32_t* lf = &leaves[0, 0] if want_leaves and leaves.shape[1] else NULL
    cdef Py_ssize_t k
    cdef int64_t first
    cdef rs_bufs bufs
    if want_leaves and T == 0:
        return
    with nogil, parallel(num_threads=n_threads):
        bufs = rs_carve(r, &scratch[threadid(), 0], p.lanes, K)
        # items handed out one by one, not split in equal shares up front: a thread slowed
        # by another process then takes fewer of them (python benchmarks/scaling.py with a
        # second process on one core)
        for k in prange(p.n_items, schedule="dynamic"):
            first = rs_item_first(&p, k)        # assigned here: private to the thread
            rs_run_item(&p, f, r, &x, k, &bufs,
                        o64 + first * K if o64 != NULL else NULL,
                        o32 + first * K if o32 != NULL else NULL,
                        lf + first * T if lf != NULL else NULL)



cdef int _check(Forest forest, RSLayout lay, Py_ssize_t n_cols, uint8_t[:, ::1] scratch,
                int n_threads, int isa) except -1:
    if n_threads < 1:
        raise ValueError(f"n_threads must be >= 1, got {n_threads}")
    if n_cols != forest.view.n_features:
        raise ValueError(f"input has {n_cols} features, the model expects "
                         f"{forest.view.n_features}")
    _check_layout(forest, lay, isa)
    need = lay._scratch_need(isa, forest.view.n_outputs)
    if scratch.shape[0] < n_threads or scratch.shape[1] < need:
        raise ValueError(f"scratch must be at least ({n_threads}, {need}) bytes")
    return 0


cdef int _check_layout(Forest forest, RSLayout lay, int isa) except -1:
    if not rs_isa_available(isa):
        raise ValueError(f"this CPU cannot run RapidScorer path {isa}")
    if (lay.n_features != forest.view.n_features or lay.n_trees != forest.view.n_trees
            or lay.n_leaves != forest.view.tree_leaf_offset[forest.view.n_trees]
            or (lay.reordered and forest.view.family == FAMILY_XGBOOST and not lay.has_f32)):
        raise ValueError("the rapidscorer layout and the forest disagree on the model's shape")
    if lay.levels and forest.view.family == FAMILY_XGBOOST and lay.view.lv_value_f32 == NULL:
        raise ValueError("the rapidscorer layout's level path has no float32 leaf values, "
                         "which an XGBoost forest sums")
    if lay.levels and forest.view.family != FAMILY_XGBOOST and lay.view.lv_value == NULL:
        raise ValueError("the rapidscorer layout's level path has no float64 leaf values, "
                         "which this forest sums")
    if lay.float32_ranks and forest.view.family != FAMILY_XGBOOST:
        # float32 ranks are exact for float32 rows only (XGBoost's, as load_row reads them)
        raise ValueError("the rapidscorer layout ranks in float32, which only an XGBoost "
                         "forest's rows allow")
    return 0


def predict_raw(Forest forest, RSLayout lay, const floating[:, :] X, double[:, ::1] out64,
                float[:, ::1] out32, uint8_t[:, ::1] scratch, int n_threads, int isa):
    """Raw scores into out64 (float64 forests) or out32 (float32), the other one empty.
    scratch: (n_threads, lay.scratch_bytes(isa, n_outputs)) uint8."""
    _check(forest, lay, X.shape[1], scratch, n_threads, isa)
    check_scores(forest, X.shape[0], out64, out32)
    cdef int32_t[:, ::1] no_leaves = np.empty((0, 0), np.int32)
    _run(forest, lay, X, out64, out32, no_leaves, scratch, n_threads, isa)


def predict_leaf(Forest forest, RSLayout lay, const floating[:, :] X, int32_t[:, ::1] out,
                 uint8_t[:, ::1] scratch, int n_threads, int isa):
    """In-order exit leaf of every tree for every row, into out (n_rows, n_trees)."""
    _check(forest, lay, X.shape[1], scratch, n_threads, isa)
    check_leaves(forest, X.shape[0], out)
    cdef double[:, ::1] no64 = np.empty((0, 0))
    cdef float[:, ::1] no32 = np.empty((0, 0), np.float32)
    if X.shape[0]:
        _run(forest, lay, X, no64, no32, out, scratch, n_threads, isa)


def predict_small(Forest forest, RSLayout lay, object X, bint squeeze, int isa,
                  object scratch):
    """Raw scores of a call of a few rows on one thread, the low-latency entry (rows and
    scores as _kernel.small_call takes them, None for anything else): groups as _run makes
    them, a group at a time (run.h rs_run_item: the same sums in the same order). scratch: at least
    lay.scratch_bytes(isa, n_outputs) bytes (a Python thread's, as predict_raw's first row)."""
    _check_layout(forest, lay, isa)
    cdef SmallCall c
    out = small_call(forest, X, lay.n_trees, lay.n_features, squeeze, &c)
    if out is None:
        return None
    cdef const ForestView* f = &forest.view
    cdef const RSView* r = &lay.view
    cdef int64_t K = f.n_outputs
    cdef rs_bufs b = rs_carve(r, <uint8_t*>scratch_data(scratch, lay._scratch_need(isa, K)),
                              rs_lanes(isa), K)
    cdef rs_rows x
    x.base = <const char*>c.x
    x.row_stride = c.row_bytes
    x.col_stride = 4 if c.is32 else 8
    x.is32 = c.is32
    x.n_rows = c.n
    cdef rs_plan p = rs_plan_call(f, r, isa, c.n, 1, False)
    cdef Py_ssize_t k
    cdef int64_t first, last
    with nogil:
        for k in range(p.n_items):
            rs_item_rows(&p, k, &first, &last)
            rs_run_item(&p, f, r, &x, k, &b, c.o64 + first * K if c.o64 != NULL else NULL,
                        c.o32 + first * K if c.o32 != NULL else NULL, NULL)
    return out
