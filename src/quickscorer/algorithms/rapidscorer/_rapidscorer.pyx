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
from libc.math cimport isnan
from libc.stdint cimport int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memset

from quickscorer._forest cimport (Forest, ForestView, floating, load_row, load_row_ptr,
                       scores_add_strided, category_code, CAT_NONE, FAMILY_XGBOOST)
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
    void rs_exits(int isa, const uint8_t* p, int nb, uint8_t* idx) noexcept nogil
    void rs_block_scan(int isa, const uint64_t* seg, int64_t n_seg, const rs_entry* entries,
                       const uint8_t* ranks, const uint64_t* out, uint8_t* state) noexcept nogil
    int rs_ctz64(uint64_t x) noexcept nogil
    void rs_add_f64(int isa, const uint8_t* idx, const double* v, int n,
                    double* acc) noexcept nogil
    void rs_add_f32(int isa, const uint8_t* idx, const float* v, int n, float* acc,
                    int weighted, float w) noexcept nogil
    int rs_block_add_f64(int isa, const uint8_t* state, const int64_t* byte_off, int64_t t0,
                         int64_t t1, const double* leaf_value, const int64_t* leaf_off,
                         double* acc, int n_lanes) noexcept nogil
    int rs_block_add_f32(int isa, const uint8_t* state, const int64_t* byte_off, int64_t t0,
                         int64_t t1, const float* leaf_value, const int64_t* leaf_off,
                         const float* tree_weight, float* acc, int n_lanes) noexcept nogil
    void rs_group_ranks(int isa, const double* rows, int64_t F, int n_lanes,
                        const int32_t* used, int64_t n_used, const int32_t* column,
                        const double* piv, const double* bkt, const float* piv32,
                        const float* bkt32, const int64_t* bkt_off, const uint8_t* rank_zero,
                        uint8_t* ranks, uint64_t* skip) noexcept nogil
    void rs_block_cat(int isa, const uint8_t* codes, const int32_t* node_slot,
                      const uint8_t* tables, const int64_t* eoff, const rs_entry* entries,
                      int64_t k0, int64_t k1, uint8_t* state) noexcept nogil

cdef extern from "quickscorer/algorithms/rapidscorer/levels.h":
    ctypedef struct rs_lv_node:
        uint16_t col
        uint8_t thr
        uint8_t pos
    void rs_lv_columns(const uint8_t* ranks, const uint64_t* skip, int64_t S,
                       const int32_t* combos, int64_t n_combos, int lanes,
                       uint8_t* cols) noexcept nogil
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
    void rs_lv_tree(int isa, const rs_lv_model* m, int64_t t, const uint8_t* cols,
                    uint8_t* idx, uint16_t* slot, int n) noexcept nogil
    void rs_lv_add_f64(const uint16_t* slot, const double* v, double* acc,
                       int lanes) noexcept nogil
    void rs_lv_add_f32(const uint16_t* slot, const float* v, float* acc, int lanes,
                       int weighted, float w) noexcept nogil
    int rs_lv_fused(int isa) noexcept nogil
    int rs_lv_sum_f32(int isa, const rs_lv_model* m, const float* value,
                      const float* tree_weight, int64_t t0, int64_t t1, const uint8_t* cols,
                      float* acc, int n_lanes) noexcept nogil
    int rs_lv_sum_f64(int isa, const rs_lv_model* m, const double* value, int64_t t0,
                      int64_t t1, const uint8_t* cols, double* acc, int n_lanes) noexcept nogil

cdef enum:
    N_SEGMENT_KINDS = 3     # segments per slot and node variant (none, zero, NaN missing)
    LV_MAX_DEPTH = 10       # rapidscorer.levels.LEVELS_MAX_DEPTH
    LV_BYTE_LEVELS = 8      # rapidscorer/levels.h RS_LV_BYTE_LEVELS: a tree's split is at most this
    LV_ENDS = 10            # rapidscorer/levels.h RS_LV_ENDS: level ends a tree


def isa_available(int isa):
    """Whether this CPU runs the RapidScorer path isa (0 portable, 1 AVX2, 2 AVX-512 with BW,
    3 AVX2 with 64 lanes)."""
    return bool(rs_isa_available(isa))


def lv_vbmi_available():
    """Whether this CPU's AVX-512 level walk can take its byte permutations (AVX512_VBMI)."""
    return bool(rs_lv_vbmi_available())


def lv_halves_default():
    """Whether this CPU's AVX-512 level walk runs as the AVX2 wide path's, two 256-bit
    registers a column, by default (a CPU that splits 512-bit operations: Zen 4)."""
    return bool(rs_lv_halves_default())


def lanes_of(int isa):
    """Documents per group on path isa."""
    return rs_lanes(isa)


cdef struct RSView:
    # S: the rank slots (rapidscorer/layout.py), ranked and scanned as features; F: the input's columns
    int64_t n_features
    int64_t n_slots
    const int32_t* slot_column        # [S] the column each slot reads
    int64_t n_trees
    int64_t n_blocks
    const double* rank_pivots         # [16 S]
    const double* rank_buckets
    const float* rank_pivots32        # the two in float32 (XGBoost models: _check), else NULL
    const float* rank_buckets32
    const int64_t* rank_bucket_offsets  # [S + 1]
    const uint8_t* rank_zero          # [S] rank of 0.0
    int64_t n_model_used
    const int32_t* model_used
    const int64_t* tree_byte_offsets  # [n_trees + 1]
    const int64_t* block_starts       # [n_blocks + 1]
    const rs_entry* entries
    const uint64_t* segments          # (3 s + kind) << 32 | first entry, per block
    const int64_t* block_segments     # [n_blocks + 1]
    int64_t max_block_bytes           # byte rows of the largest block
    # mirrored nodes (rapidscorer.layout.half_arrays): leaf positions are not the tree's own leaf
    # numbers; NULL where they are
    const uint8_t* leaf_order         # [n_leaves] the tree's own number of each position
    const double* leaf_value          # [n_leaves] float64 values by position
    const float* leaf_value_f32       # [n_leaves] float32 (XGBoost) values by position
    # categorical nodes (rapidscorer.categorical.categorical_nodes), applied per block after its scan
    int64_t n_cat_slots
    const int32_t* cat_slot_column    # [C] the column each categorical slot reads
    const int32_t* cat_node_slot      # [N] each node's slot
    const uint8_t* cat_tables         # [32 N] each node's codes that leave it away
    const int64_t* cat_entry_offsets  # [N + 1]
    const rs_entry* cat_entries
    const int64_t* block_cat          # [n_blocks + 1] each block's first node
    # the level-by-level path (rapidscorer.levels.level_arrays), used instead of the scans where on
    bint lv_on
    int64_t lv_min_lanes              # groups of fewer lanes take the scans
    rs_lv_model lv                    # nodes, ends, depths, splits, deep records, slots
    # calls of several groups a thread walk chunks of lv_chunk groups through the tree
    # blocks lv_block_starts (one-output models, on the paths that sum in registers)
    int64_t lv_chunk
    int64_t n_lv_blocks
    const int64_t* lv_block_starts    # [n_lv_blocks + 1]
    const uint16_t* lv_slot_leaf      # each slot's leaf, the tree's own number
    const double* lv_value            # each slot's leaf value
    const float* lv_value_f32         # the same in float32 (XGBoost models)
    const int32_t* lv_combos
    int64_t n_lv_combos


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

# where level l's threshold table starts among a tree's (rapidscorer.levels.LEVEL_TABLE_AT: tables of
# max(16, 2^l) bytes); a tree of split s has _LV_TABLE_AT[s] bytes of tables
_LV_TABLE_AT = np.array([0, 16, 32, 48, 64, 80, 112, 176, 304], np.int64)


def _last_leaf_bits(const int64_t[::1] tbo, const int64_t[::1] bs, const int64_t[::1] sizes):
    """Per byte row of the layout (rows of a block from tbo[bs[b]]), the bit of the tree's
    last leaf in layout order where the row holds it, else 0: no node has that leaf in the
    subtree its masks clear, so a tree's bits never all clear and its exit is a leaf."""
    keep = np.zeros(max(1, tbo[tbo.shape[0] - 1]), np.uint8)
    cdef uint8_t[::1] k = keep
    cdef Py_ssize_t t
    for t in range(sizes.shape[0]):
        k[tbo[t] + (sizes[t] - 1) // 8] = <uint8_t>(1 << ((sizes[t] - 1) % 8))
    return keep


cdef bint _scans_in_place(const uint32_t[::1] entries, const uint64_t[::1] seg,
                          const int64_t[::1] bseg, const int64_t[::1] tbo,
                          const int64_t[::1] bs, const uint8_t[::1] keep) noexcept:
    """Whether each segment of each block runs to a sentinel (threshold byte 0x7F, which no
    rank passes) inside the entries, every entry before it naming a byte row of the block and
    keeping the bits of ``keep`` (_last_leaf_bits) in its mask."""
    cdef Py_ssize_t b, j, k, n = entries.shape[0]
    cdef int64_t base, rows
    cdef uint32_t e, row
    cdef uint8_t m
    for b in range(bs.shape[0] - 1):
        base = tbo[bs[b]]
        rows = tbo[bs[b + 1]] - base
        for j in range(bseg[b], bseg[b + 1]):
            k = <Py_ssize_t>(seg[j] & 0xFFFFFFFFu)
            while True:
                if k >= n:
                    return False
                e = entries[k]
                if ((e >> 16) & 0xFF) == 0x7F:
                    break
                row = e & 0xFFFF
                m = (e >> 24) & 0xFF
                if row >= rows or (m & keep[base + row]) != keep[base + row]:
                    return False
                k += 1
    return True


cdef bint _cat_entries_in_place(const uint32_t[::1] entries, const int64_t[::1] off,
                                const int64_t[::1] bc, const int64_t[::1] tbo,
                                const int64_t[::1] bs, const uint8_t[::1] keep) noexcept:
    """Whether every categorical node's entries keep the bits of ``keep`` of its block (their
    byte rows are checked by _check_categorical)."""
    cdef Py_ssize_t b, d, k
    cdef int64_t base
    cdef uint32_t e
    cdef uint8_t m, kp
    for b in range(bc.shape[0] - 1):
        base = tbo[bs[b]]
        for d in range(bc[b], bc[b + 1]):
            for k in range(off[d], off[d + 1]):
                e = entries[k]
                kp = keep[base + (e & 0xFFFF)]
                m = (e >> 24) & 0xFF
                if (m & kp) != kp:
                    return False
    return True


cdef class RSLayout:
    """The RapidScorer arrays of one model, wrapped for the kernel without copying."""
    cdef RSView view
    cdef object _keep, _ranks32
    cdef readonly int64_t n_features, n_slots, n_trees, max_block_bytes, n_leaves
    cdef readonly bint reordered, has_f32, float32_ranks, levels, levels_vbmi, levels_halves
    cdef readonly int64_t levels_min_lanes, levels_chunk
    cdef int _halves_asked

    def __cinit__(self, dict a, int64_t n_features, bint float32_ranks=False,
                  int64_t levels_min_lanes=32, int64_t levels_chunk=8, bint levels_vbmi=True,
                  int levels_halves=-1):
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
        layout is made or unpickled."""
        if levels_chunk < 1:
            raise ValueError(f"levels_chunk must be >= 1, got {levels_chunk}")
        self.levels_min_lanes = levels_min_lanes
        self.levels_chunk = levels_chunk
        self.levels_vbmi = levels_vbmi and rs_lv_vbmi_available() != 0
        self._halves_asked = levels_halves
        self.levels_halves = (rs_lv_halves_default() != 0 if levels_halves < 0
                              else levels_halves != 0)
        self._keep = dict(a)
        for name, dtype in _FIELDS.items():
            array_data(a[name], dtype, "rapidscorer", name)
        F = a["slot_column"].shape[0]      # the checks below are of the slots
        sc = a["slot_column"]
        if F < n_features or (F and (int(sc.min()) < 0 or int(sc.max()) >= n_features)):
            raise ValueError("rapidscorer layout: slot_column names a column outside the input")
        if a["model_used"].shape[0] and (int(a["model_used"].min()) < 0
                                         or int(a["model_used"].max()) >= F):
            raise ValueError("rapidscorer layout: model_used names a slot out of range")
        n_trees = a["tree_byte_offsets"].shape[0] - 1
        n_blocks = a["block_starts"].shape[0] - 1
        checks = {"rank_pivots": 16 * F, "rank_bucket_offsets": F + 1, "rank_zero": F,
                  "block_segments": n_blocks + 1}
        for name, n in checks.items():
            if a[name].shape[0] != n:
                raise ValueError(f"rapidscorer layout field {name!r} has {a[name].shape[0]} "
                                 f"entries, expected {n}")
        if n_blocks < 1 or int(a["block_starts"][0]) != 0 or int(a["block_starts"][a["block_starts"].shape[0] - 1]) != n_trees:
            raise ValueError("rapidscorer layout: block_starts do not cover the trees")
        if int(a["block_segments"][n_blocks]) != a["segments"].shape[0]:
            raise ValueError("rapidscorer layout: block_segments do not cover the segments")
        seg = a["segments"]
        if seg.shape[0] and (int((seg & 0xFFFFFFFF).max()) >= a["entries"].shape[0]
                             or int(((seg >> 32) & 0x3FFFFFFF).max()) >= N_SEGMENT_KINDS * F):
            raise ValueError("rapidscorer layout: a segment is out of range")
        bo = a["rank_bucket_offsets"]
        if int(bo[F]) != a["rank_buckets"].shape[0] or (np.diff(bo) < 16).any():
            raise ValueError("rapidscorer layout: rank_bucket_offsets do not fit the buckets")
        tbo = a["tree_byte_offsets"]
        bs = a["block_starts"]
        tree_bytes = np.diff(tbo)
        # a layout of the level path alone (rapidscorer.layout.levels_only_arrays) has no scans: no
        # bitvector bytes, entries or categorical nodes, and trees of up to 1,024 leaves
        only = "lv_only" in a and a["lv_only"].shape[0] == 1 and bool(a["lv_only"][0])
        max_leaves = 1 << LV_MAX_DEPTH if only else 256
        if only and (tree_bytes.any() or a["entries"].shape[0] or a["segments"].shape[0]
                     or a["cat_node_slot"].shape[0] or a["cat_slot_column"].shape[0]
                     or a["leaf_order"].shape[0]):
            raise ValueError("rapidscorer layout: a layout of the level path alone holds "
                             "scan fields")
        if not only and tree_bytes.size and (tree_bytes.min() < 1 or tree_bytes.max() > 32):
            raise ValueError("rapidscorer layout: a tree has fewer than 1 or more than 32 bytes")
        block_bytes = np.diff(tbo[bs])
        if block_bytes.size and block_bytes.max() > 65536:
            raise ValueError("rapidscorer layout: a tree block of more than 65,536 byte rows")
        lof, order = a["leaf_offset"], a["leaf_order"]
        sizes = np.diff(lof)
        if lof.shape[0] != n_trees + 1 or (n_trees and (int(lof[0]) != 0 or (sizes < 1).any()
                                                        or (sizes > max_leaves).any())):
            raise ValueError(f"rapidscorer layout: leaf_offset does not give each tree 1 to "
                             f"{max_leaves} leaves")
        n_leaves = int(lof[n_trees]) if n_trees else 0
        if order.shape[0]:
            size = np.repeat(sizes, sizes)
            if (order.shape[0] != n_leaves or a["leaf_value"].shape[0] != n_leaves
                    or a["leaf_value_f32"].shape[0] not in (0, n_leaves)
                    or (order < 0).any() or (order >= size).any()):
                raise ValueError("rapidscorer layout: the leaf order does not fit the trees")
        self._check_categorical(a, n_features, n_blocks, np.diff(tbo[bs]))
        if not only:
            if not np.array_equal(tree_bytes, (sizes + 7) // 8):
                raise ValueError("rapidscorer layout: a tree's bytes are not one a 8 of its "
                                 "leaves")
            bsg = a["block_segments"]
            if int(bsg[0]) != 0 or (np.diff(bsg) < 0).any():
                raise ValueError("rapidscorer layout: block_segments are out of order")
            keep = _last_leaf_bits(tbo, bs, sizes)
            if not _scans_in_place(a["entries"], seg, bsg, tbo, bs, keep):
                raise ValueError("rapidscorer layout: a scan's entries leave their block, "
                                 "lack their sentinel or clear a tree's last leaf")
            if not _cat_entries_in_place(a["cat_entries"], a["cat_entry_offsets"],
                                         a["block_cat"], tbo, bs, keep):
                raise ValueError("rapidscorer layout: a categorical entry clears a tree's "
                                 "last leaf")
        self.view.n_features = n_features
        self.view.n_slots = F
        self.view.slot_column = <const int32_t*>cnp.PyArray_DATA(sc)
        self.view.n_trees = n_trees
        self.view.n_blocks = n_blocks
        self.view.rank_pivots = <const double*>cnp.PyArray_DATA(a["rank_pivots"])
        self.view.rank_buckets = <const double*>array_data(a["rank_buckets"], np.float64,
                                                           "rapidscorer", "rank_buckets")
        self.view.rank_bucket_offsets = <const int64_t*>cnp.PyArray_DATA(bo)
        self.view.rank_pivots32 = NULL
        self.view.rank_buckets32 = NULL
        self.float32_ranks = False
        if float32_ranks:
            piv, bkt = a["rank_pivots"], a["rank_buckets"]
            piv32, bkt32 = piv.astype(np.float32), bkt.astype(np.float32)
            if (np.array_equal(piv32.astype(np.float64), piv)
                    and np.array_equal(bkt32.astype(np.float64), bkt)):
                self._ranks32 = (piv32, bkt32)
                self.view.rank_pivots32 = <const float*>cnp.PyArray_DATA(piv32)
                self.view.rank_buckets32 = <const float*>cnp.PyArray_DATA(bkt32)
                self.float32_ranks = True
        self.view.rank_zero = <const uint8_t*>array_data(a["rank_zero"], np.uint8,
                                                         "rapidscorer", "rank_zero")
        self.view.n_model_used = a["model_used"].shape[0]
        self.view.model_used = <const int32_t*>array_data(a["model_used"], np.int32,
                                                          "rapidscorer", "model_used")
        self.view.tree_byte_offsets = <const int64_t*>cnp.PyArray_DATA(tbo)
        self.view.block_starts = <const int64_t*>cnp.PyArray_DATA(bs)
        self.view.entries = <const rs_entry*>array_data(a["entries"], np.uint32,
                                                        "rapidscorer", "entries")
        self.view.segments = <const uint64_t*>array_data(a["segments"], np.uint64,
                                                         "rapidscorer", "segments")
        self.view.block_segments = <const int64_t*>cnp.PyArray_DATA(a["block_segments"])
        self.view.max_block_bytes = max(1, int(block_bytes.max()))
        self.view.leaf_order = NULL
        self.view.leaf_value = NULL
        self.view.leaf_value_f32 = NULL
        if order.shape[0]:
            self.view.leaf_order = <const uint8_t*>cnp.PyArray_DATA(order)
            self.view.leaf_value = <const double*>cnp.PyArray_DATA(a["leaf_value"])
            if a["leaf_value_f32"].shape[0]:
                self.view.leaf_value_f32 = <const float*>cnp.PyArray_DATA(a["leaf_value_f32"])
        self.view.n_cat_slots = a["cat_slot_column"].shape[0]
        self.view.cat_slot_column = <const int32_t*>array_data(
            a["cat_slot_column"], np.int32, "rapidscorer", "cat_slot_column")
        self.view.cat_node_slot = <const int32_t*>array_data(
            a["cat_node_slot"], np.int32, "rapidscorer", "cat_node_slot")
        self.view.cat_tables = <const uint8_t*>array_data(a["cat_tables"], np.uint8,
                                                          "rapidscorer", "cat_tables")
        self.view.cat_entry_offsets = <const int64_t*>cnp.PyArray_DATA(a["cat_entry_offsets"])
        self.view.cat_entries = <const rs_entry*>array_data(a["cat_entries"], np.uint32,
                                                            "rapidscorer", "cat_entries")
        self.view.block_cat = <const int64_t*>cnp.PyArray_DATA(a["block_cat"])
        self._set_levels(a, n_trees, F)
        if only:
            if not self.levels:
                raise ValueError("rapidscorer layout: a layout of the level path alone has no "
                                 "level fields")
            self.levels_min_lanes = 0
            self.view.lv_min_lanes = 0       # every group walks the levels
        self.n_leaves = n_leaves
        self.reordered = order.shape[0] != 0
        self.has_f32 = a["leaf_value_f32"].shape[0] != 0
        self.n_features = n_features
        self.n_slots = F
        self.n_trees = n_trees
        self.max_block_bytes = self.view.max_block_bytes

    def _set_levels(self, dict a, int64_t n_trees, int64_t S):
        """The level-by-level fields, checked against each other and the model: on where
        they hold every tree, off where absent or empty."""
        self.view.lv_on = False
        self.levels = False
        if "lv_depth" not in a or a["lv_depth"].shape[0] == 0:
            return
        for name, dtype in _LV_FIELDS.items():
            array_data(a[name], dtype, "rapidscorer", name)
        depth = a["lv_depth"].astype(np.int64)
        split = a["lv_split"].astype(np.int64)
        deep, doff = a["lv_deep"], a["lv_deep_offset"]
        noff, soff = a["lv_node_offset"], a["lv_slot_offset"]
        ends = a["lv_level_end"].reshape(-1)
        combos = a["lv_combos"]
        nodes = a["lv_nodes"]
        if (depth.shape[0] != n_trees or noff.shape[0] != n_trees + 1
                or soff.shape[0] != n_trees + 1 or ends.shape[0] != LV_ENDS * n_trees
                or split.shape[0] != n_trees or doff.shape[0] != n_trees + 1
                or (depth > LV_MAX_DEPTH).any() or (split > depth).any()
                or (split > LV_BYTE_LEVELS).any()):
            raise ValueError("rapidscorer layout: the level fields do not fit the trees")
        n_slots = np.left_shift(1, depth)
        if (int(doff[0]) != 0 or (np.diff(doff) != n_slots - np.left_shift(1, split)).any()
                or int(doff[n_trees]) != deep.shape[0]
                or (deep.shape[0] and int((deep & 0xFFFF).max()) >= S + combos.shape[0])):
            raise ValueError("rapidscorer layout: the deep level records do not fit the trees")
        if (int(noff[0]) != 0 or int(soff[0]) != 0 or (np.diff(soff) != n_slots).any()
                or int(noff[n_trees]) != nodes.shape[0]
                or a["lv_slot_leaf"].shape[0] != int(soff[n_trees])
                or a["lv_value"].shape[0] not in (0, int(soff[n_trees]))
                or a["lv_value_f32"].shape[0] not in (0, int(soff[n_trees]))
                or a["lv_value"].shape[0] + a["lv_value_f32"].shape[0] == 0):
            raise ValueError("rapidscorer layout: the level offsets do not fit the trees")
        toff, table = a["lv_table_offset"], a["lv_table"]
        if (toff.shape[0] != n_trees + 1 or int(toff[0]) != 0
                or (np.diff(toff) != _LV_TABLE_AT[split]).any()
                or int(toff[n_trees]) != table.shape[0]):
            raise ValueError("rapidscorer layout: the level tables do not fit the trees")
        bst = a["lv_block_starts"]
        if (bst.shape[0] < 2 or int(bst[0]) != 0 or int(bst[bst.shape[0] - 1]) != n_trees
                or (np.diff(bst) < 0).any()):
            raise ValueError("rapidscorer layout: the level blocks do not cover the trees")
        per_tree = np.diff(noff)
        e = ends.astype(np.int64).reshape(n_trees, LV_ENDS)
        if n_trees and ((np.diff(e, axis=1) < 0).any() or (e[:, -1] != per_tree).any()):
            raise ValueError("rapidscorer layout: the level ends do not fit the trees' nodes")
        if nodes.shape[0]:
            tree = np.repeat(np.arange(n_trees), per_tree)
            rank = np.arange(nodes.shape[0]) - noff[tree]
            level = np.zeros(nodes.shape[0], np.int64)
            for k in range(LV_ENDS):      # the levels whose nodes come before each
                level += rank >= e[tree, k]
            col = (nodes & 0xFFFF).astype(np.int64)
            pos = (nodes >> 24).astype(np.int64)
            if ((level >= split[tree]).any() or (pos >= np.left_shift(1, level)).any()
                    or (col >= S + combos.shape[0]).any()):
                raise ValueError("rapidscorer layout: a level node is out of range")
        kind = (combos >> 24) & 3
        if combos.shape[0] and (((combos & 0xFFFFFF) >= S) | (kind == 0) | (kind > 2)).any():
            raise ValueError("rapidscorer layout: a level column is out of range")
        self.view.lv.nodes = <const rs_lv_node*>cnp.PyArray_DATA(nodes)
        self.view.lv.node_off = <const int64_t*>cnp.PyArray_DATA(noff)
        self.view.lv.lend = <const uint16_t*>cnp.PyArray_DATA(a["lv_level_end"])
        self.view.lv.depth = <const uint8_t*>cnp.PyArray_DATA(a["lv_depth"])
        self.view.lv.split = <const uint8_t*>cnp.PyArray_DATA(a["lv_split"])
        self.view.lv.deep = <const rs_lv_node*>cnp.PyArray_DATA(deep)
        self.view.lv.deep_off = <const int64_t*>cnp.PyArray_DATA(doff)
        self.view.lv.slot_off = <const int64_t*>cnp.PyArray_DATA(soff)
        self.view.lv.table = <const uint8_t*>cnp.PyArray_DATA(table)
        self.view.lv.table_off = <const int64_t*>cnp.PyArray_DATA(toff)
        self.view.lv.vbmi = self.levels_vbmi
        self.view.lv.halves = self.levels_halves
        self.view.lv_block_starts = <const int64_t*>cnp.PyArray_DATA(bst)
        self.view.n_lv_blocks = bst.shape[0] - 1
        self.view.lv_chunk = self.levels_chunk
        self.view.lv_slot_leaf = <const uint16_t*>cnp.PyArray_DATA(a["lv_slot_leaf"])
        self.view.lv_value = (<const double*>cnp.PyArray_DATA(a["lv_value"])
                              if a["lv_value"].shape[0] else NULL)
        self.view.lv_value_f32 = (<const float*>cnp.PyArray_DATA(a["lv_value_f32"])
                                  if a["lv_value_f32"].shape[0] else NULL)
        self.view.lv_combos = <const int32_t*>cnp.PyArray_DATA(combos)
        self.view.n_lv_combos = combos.shape[0]
        self.view.lv_on = True
        self.view.lv_min_lanes = self.levels_min_lanes
        self.levels = True

    @staticmethod
    def _check_categorical(dict a, int64_t n_features, int64_t n_blocks, block_bytes):
        """The categorical fields fit each other, the input and the blocks: every node's
        slot, table and entries in range, every entry's byte row inside its block."""
        col, slot, off = a["cat_slot_column"], a["cat_node_slot"], a["cat_entry_offsets"]
        bc, ent = a["block_cat"], a["cat_entries"]
        n = slot.shape[0]
        if (col.shape[0] and (int(col.min()) < 0 or int(col.max()) >= n_features)) or (
                n and (int(slot.min()) < 0 or int(slot.max()) >= col.shape[0])):
            raise ValueError("rapidscorer layout: a categorical slot or its column is out "
                             "of range")
        if (a["cat_tables"].shape[0] != 32 * n or off.shape[0] != n + 1 or int(off[0]) != 0
                or int(off[n]) != ent.shape[0] or (np.diff(off) < 0).any()):
            raise ValueError("rapidscorer layout: the categorical tables or entry offsets "
                             "do not fit the nodes")
        if (bc.shape[0] != n_blocks + 1 or int(bc[0]) != 0 or int(bc[n_blocks]) != n
                or (np.diff(bc) < 0).any()):
            raise ValueError("rapidscorer layout: block_cat does not cover the categorical "
                             "nodes")
        if ent.shape[0]:
            node = np.repeat(np.arange(n), np.diff(off))
            block = np.searchsorted(bc, node, side="right") - 1
            if ((ent & 0xFFFF).astype(np.int64) >= block_bytes[block]).any():
                raise ValueError("rapidscorer layout: a categorical entry's byte row is "
                                 "outside its block")

    def scratch_bytes(self, int isa, int64_t n_outputs):
        """Scratch bytes one thread needs on path isa (a multiple of 64)."""
        return self._scratch_need(isa, n_outputs)

    cdef Py_ssize_t _scratch_need(self, int isa, int64_t n_outputs):
        cdef int64_t lanes = rs_lanes(isa)
        cdef int64_t F = self.n_features, S = self.n_slots
        total = (lanes * F * 8              # the group's converted rows (float64)
                 + S * 24                   # lanes each segment kind of a slot skips
                 + lanes * S                # ranks
                 + lanes                    # exit leaves of one tree
                 + lanes * self.view.n_cat_slots  # categorical codes
                 + n_outputs * lanes * 8    # the group's scores
                 + self.max_block_bytes * lanes
                 + (lanes * (S + self.view.n_lv_combos) + 64 + 2 * lanes
                    + self.levels_chunk * _chunk_stride(lanes, S + self.view.n_lv_combos)
                    if self.view.lv_on else 0))
        return (total + 64 * 8 + 63) // 64 * 64

    def __reduce__(self):
        return (RSLayout, (self._keep, self.n_features, self._ranks32 is not None,
                           self.levels_min_lanes, self.levels_chunk, self.levels_vbmi,
                           self._halves_asked))


cdef inline uint8_t* _align64(uint8_t* p) noexcept nogil:
    return <uint8_t*>((<size_t>p + 63) & ~(<size_t>63))


cdef inline int64_t _chunk_stride(int64_t lanes, int64_t n_cols) noexcept nogil:
    """Scratch bytes of one group of a level chunk: its columns, then its scores."""
    return (lanes * n_cols + 63) // 64 * 64 + lanes * 8


def chunk_group_bytes(int64_t lanes, int64_t n_cols):
    """Scratch bytes one group of ``lanes`` lanes takes in a level chunk of a layout of
    ``n_cols`` level columns (rank slots and combos): what sizes the chunks
    (Tuning.rs_lv_chunk_bytes)."""
    return _chunk_stride(lanes, n_cols)


cdef struct RSBufs:
    # one thread's scratch (RSLayout.scratch_bytes), carved as _run and predict_small use it
    uint8_t* state       # the byte-transposed bitvectors of a block
    double* rows         # the group's converted rows
    double* acc64        # its scores (acc32 over the same bytes)
    uint64_t* skip
    uint8_t* ranks
    uint8_t* idx
    uint8_t* codes
    uint8_t* cols        # the level path's columns
    uint8_t* chunk       # level_chunk's groups


cdef inline RSBufs _carve(const RSView* r, uint8_t* base, int64_t lanes, int64_t F,
                          int64_t K) noexcept nogil:
    cdef RSBufs b
    b.state = _align64(base)
    b.rows = <double*>_align64(b.state + r.max_block_bytes * lanes)
    b.acc64 = b.rows + lanes * F
    b.skip = <uint64_t*>(b.acc64 + K * lanes)
    b.ranks = _align64(<uint8_t*>(b.skip + N_SEGMENT_KINDS * r.n_slots))
    b.idx = b.ranks + lanes * r.n_slots
    b.codes = b.idx + lanes
    b.cols = _align64(b.codes + lanes * r.n_cat_slots)
    b.chunk = _align64(b.cols + lanes * (r.n_slots + r.n_lv_combos) + 2 * lanes)
    return b


cdef inline void block_bits(const RSView* r, int isa, int64_t b, int64_t lanes,
                            const uint8_t* ranks, const uint64_t* skip, const uint8_t* codes,
                            uint8_t* state) noexcept nogil:
    """Leave in state the byte rows of block b's trees for the group (missing values take
    their default sides in the scan: rapidscorer.layout's half-features; then the categorical
    nodes, on the group's codes)."""
    cdef int64_t t0 = r.block_starts[b]
    cdef int64_t n_bytes = r.tree_byte_offsets[r.block_starts[b + 1]] - r.tree_byte_offsets[t0]
    memset(state, 0xFF, n_bytes * lanes)
    rs_block_scan(isa, r.segments + r.block_segments[b],
                  r.block_segments[b + 1] - r.block_segments[b], r.entries, ranks, skip, state)
    rs_block_cat(isa, codes, r.cat_node_slot, r.cat_tables, r.cat_entry_offsets, r.cat_entries,
                 r.block_cat[b], r.block_cat[b + 1], state)


cdef inline int32_t leaf_number(const RSView* r, int64_t base, uint8_t position) noexcept nogil:
    """The tree's own number of the leaf at a position of the layout's order."""
    return r.leaf_order[base + position] if r.leaf_order != NULL else position


cdef inline void add_leaves(const ForestView* f, const RSView* r, int isa, int64_t t,
                            const uint8_t* idx, int64_t lanes, int64_t n_lanes,
                            const double* rows, const double* lv64, const float* lv32,
                            double* acc64, float* acc32) noexcept nogil:
    """Add tree t's exit leaves idx (positions) to the group's scores (acc[g * lanes + l]),
    tree order; lv64 / lv32: the leaf values by position (score_group's)."""
    cdef int64_t l
    cdef int64_t g = f.tree_group[t]
    cdef int64_t base = f.tree_leaf_offset[t]
    cdef int n = <int>(f.tree_leaf_offset[t + 1] - base)
    if f.has_linear:
        for l in range(n_lanes):
            scores_add_strided(f, t, leaf_number(r, base, idx[l]), rows + l * f.n_features,
                               acc64 + l, acc32 + l, lanes)
    elif f.family == FAMILY_XGBOOST:
        rs_add_f32(isa, idx, lv32 + base, n, acc32 + g * lanes,
                   f.tree_weight != NULL, f.tree_weight[t] if f.tree_weight != NULL else 1.0)
    else:
        rs_add_f64(isa, idx, lv64 + base, n, acc64 + g * lanes)

cdef inline void level_group(const ForestView* f, const RSView* r, int isa, int64_t n_lanes,
                             const uint8_t* ranks, const uint64_t* skip, uint8_t* cols,
                             uint8_t* idx, double* acc64, float* acc32, int32_t* leaves,
                             int64_t leaf_stride) noexcept nogil:
    """score_group's trees level by level (rapidscorer.levels.level_arrays), once the ranks are in;
    the slots of trees walked lane by lane below their split (uint16) go past the group's
    columns."""
    cdef int64_t lanes = rs_lanes(isa)
    cdef int64_t t, l, so, g
    cdef int n
    cdef bint deep
    cdef uint16_t* slot = <uint16_t*>(cols + lanes * (r.n_slots + r.n_lv_combos))
    rs_lv_columns(ranks, skip, r.n_slots, r.lv_combos, r.n_lv_combos, <int>lanes, cols)
    if leaves == NULL and f.n_outputs == 1:     # the sums in registers, where the path can
        if f.family == FAMILY_XGBOOST:
            if rs_lv_sum_f32(isa, &r.lv, r.lv_value_f32, f.tree_weight, 0, f.n_trees, cols,
                             acc32, <int>n_lanes):
                return
        elif rs_lv_sum_f64(isa, &r.lv, r.lv_value, 0, f.n_trees, cols, acc64, <int>n_lanes):
            return
    for t in range(f.n_trees):
        # every lane's slot: the adds below read all of them
        rs_lv_tree(isa, &r.lv, t, cols, idx, slot, <int>lanes)
        deep = r.lv.split[t] < r.lv.depth[t]
        so = r.lv.slot_off[t]
        if leaves != NULL:
            for l in range(n_lanes):
                leaves[l * leaf_stride + t] = r.lv_slot_leaf[so + (slot[l] if deep else idx[l])]
            continue
        g = f.tree_group[t]
        n = <int>(r.lv.slot_off[t + 1] - so)
        if f.family == FAMILY_XGBOOST and deep:
            rs_lv_add_f32(slot, r.lv_value_f32 + so, acc32 + g * lanes, <int>lanes,
                          f.tree_weight != NULL,
                          f.tree_weight[t] if f.tree_weight != NULL else 1.0)
        elif f.family == FAMILY_XGBOOST:
            rs_add_f32(isa, idx, r.lv_value_f32 + so, n, acc32 + g * lanes,
                       f.tree_weight != NULL,
                       f.tree_weight[t] if f.tree_weight != NULL else 1.0)
        elif deep:
            rs_lv_add_f64(slot, r.lv_value + so, acc64 + g * lanes, <int>lanes)
        else:
            rs_add_f64(isa, idx, r.lv_value + so, n, acc64 + g * lanes)


cdef inline void score_group(const ForestView* f, const RSView* r, int isa,
                             int64_t n_lanes, const double* rows, uint8_t* state,
                             uint8_t* ranks, uint64_t* skip, uint8_t* idx, uint8_t* codes,
                             double* acc64, float* acc32, int32_t* leaves,
                             int64_t leaf_stride, uint8_t* cols) noexcept nogil:
    """Exit leaves of every tree for the group's n_lanes converted rows: into
    leaves[l * leaf_stride + t] when leaves is not NULL, else added to acc (set to the base
    scores here) in tree order."""
    cdef int64_t lanes = rs_lanes(isa)
    cdef int64_t l, k, b, t, t0
    if leaves == NULL:
        for k in range(f.n_outputs):
            for l in range(lanes):
                if f.family == FAMILY_XGBOOST:
                    acc32[k * lanes + l] = <float>f.base_score[k]
                else:
                    acc64[k * lanes + l] = f.base_score[k]
    rs_group_ranks(isa, rows, f.n_features, <int>n_lanes, r.model_used, r.n_model_used,
                   r.slot_column, r.rank_pivots, r.rank_buckets, r.rank_pivots32,
                   r.rank_buckets32, r.rank_bucket_offsets, r.rank_zero, ranks, skip)
    if r.lv_on and lanes >= r.lv_min_lanes:
        level_group(f, r, isa, n_lanes, ranks, skip, cols, idx, acc64, acc32, leaves,
                    leaf_stride)
        return
    for k in range(r.n_cat_slots):       # each categorical slot's code per lane
        for l in range(n_lanes):
            codes[k * lanes + l] = <uint8_t>category_code(
                f.family, rows[l * f.n_features + r.cat_slot_column[k]])
        for l in range(n_lanes, lanes):
            codes[k * lanes + l] = CAT_NONE
    # one output, no linear leaves: a block's trees in one C call (scores in registers)
    cdef bint fused = leaves == NULL and f.n_outputs == 1 and not f.has_linear
    cdef const double* lv64 = r.leaf_value if r.leaf_order != NULL else f.leaf_value
    cdef const float* lv32 = r.leaf_value_f32 if r.leaf_order != NULL else f.leaf_value_f32
    for b in range(r.n_blocks):
        block_bits(r, isa, b, lanes, ranks, skip, codes, state)
        t0 = r.block_starts[b]
        if fused:
            if f.family == FAMILY_XGBOOST:
                if rs_block_add_f32(isa, state, r.tree_byte_offsets, t0, r.block_starts[b + 1],
                                    lv32, f.tree_leaf_offset, f.tree_weight, acc32,
                                    <int>n_lanes):
                    continue
            elif rs_block_add_f64(isa, state, r.tree_byte_offsets, t0, r.block_starts[b + 1],
                                  lv64, f.tree_leaf_offset, acc64, <int>n_lanes):
                continue
        for t in range(t0, r.block_starts[b + 1]):
            rs_exits(isa, state + (r.tree_byte_offsets[t] - r.tree_byte_offsets[t0]) * lanes,
                     <int>(r.tree_byte_offsets[t + 1] - r.tree_byte_offsets[t]), idx)
            if leaves != NULL:
                for l in range(n_lanes):
                    leaves[l * leaf_stride + t] = leaf_number(r, f.tree_leaf_offset[t], idx[l])
            else:
                add_leaves(f, r, isa, t, idx, lanes, n_lanes, rows, lv64, lv32, acc64, acc32)


cdef inline int _group_isa(int isa, int64_t n_lanes) noexcept nogil:
    """The path of a group of n_lanes rows: on the 64-lane paths, a group of at most 32
    rows runs on the 32-lane AVX2 path."""
    if (isa == RS_ISA_AVX512 or isa == RS_ISA_AVX2_WIDE) and n_lanes <= 32:
        return RS_ISA_AVX2
    return isa


cdef void level_chunk(const ForestView* f, const RSView* r, int isa, const floating[:, :] X,
                      Py_ssize_t g0, Py_ssize_t g1, int64_t lanes, double* rows,
                      uint8_t* ranks, uint64_t* skip, uint8_t* chunk, double[:, ::1] out64,
                      float[:, ::1] out32) noexcept nogil:
    """Groups g0 .. g1 - 1 of a one-output model (every group on the level path, in
    registers: _run checks): each group's columns and base scores into chunk, then every
    block of trees for each group in turn (the block's level fields stay in cache for the
    chunk), the trees of each group in order: the same sums as one group at a time."""
    cdef Py_ssize_t n_rows = X.shape[0]
    cdef int64_t F = f.n_features
    cdef int64_t n_cols = r.n_slots + r.n_lv_combos
    cdef int64_t stride = _chunk_stride(lanes, n_cols)
    cdef int64_t acc_at = stride - lanes * 8        # a group's scores after its columns
    cdef int64_t gl, n_lanes, l, b, i
    cdef Py_ssize_t gi
    cdef int gisa
    cdef uint8_t* cg
    cdef double* acc64
    cdef float* acc32
    for gi in range(g0, g1):
        i = gi * lanes
        n_lanes = min(lanes, n_rows - i)
        gisa = _group_isa(isa, n_lanes)
        gl = rs_lanes(gisa)
        cg = chunk + (gi - g0) * stride
        acc64 = <double*>(cg + acc_at)
        acc32 = <float*>acc64
        for l in range(n_lanes):
            load_row(f, X, i + l, rows + l * F)
        for l in range(gl):
            if f.family == FAMILY_XGBOOST:
                acc32[l] = <float>f.base_score[0]
            else:
                acc64[l] = f.base_score[0]
        rs_group_ranks(gisa, rows, F, <int>n_lanes, r.model_used, r.n_model_used,
                       r.slot_column, r.rank_pivots, r.rank_buckets, r.rank_pivots32,
                       r.rank_buckets32, r.rank_bucket_offsets, r.rank_zero, ranks, skip)
        rs_lv_columns(ranks, skip, r.n_slots, r.lv_combos, r.n_lv_combos, <int>gl, cg)
    for b in range(r.n_lv_blocks):
        for gi in range(g0, g1):
            n_lanes = min(lanes, n_rows - gi * lanes)
            gisa = _group_isa(isa, n_lanes)
            cg = chunk + (gi - g0) * stride
            acc64 = <double*>(cg + acc_at)
            if f.family == FAMILY_XGBOOST:
                rs_lv_sum_f32(gisa, &r.lv, r.lv_value_f32, f.tree_weight,
                              r.lv_block_starts[b], r.lv_block_starts[b + 1], cg,
                              <float*>acc64, <int>n_lanes)
            else:
                rs_lv_sum_f64(gisa, &r.lv, r.lv_value, r.lv_block_starts[b],
                              r.lv_block_starts[b + 1], cg, acc64, <int>n_lanes)
    for gi in range(g0, g1):
        i = gi * lanes
        n_lanes = min(lanes, n_rows - i)
        acc64 = <double*>(chunk + (gi - g0) * stride + acc_at)
        acc32 = <float*>acc64
        for l in range(n_lanes):
            if f.family == FAMILY_XGBOOST:
                out32[i + l, 0] = acc32[l]
            else:
                out64[i + l, 0] = acc64[l]


cdef void _run(Forest forest, RSLayout lay, const floating[:, :] X, double[:, ::1] out64,
               float[:, ::1] out32, int32_t[:, ::1] leaves, uint8_t[:, ::1] scratch,
               int n_threads, int isa) noexcept:
    """Groups of rs_lanes(isa) rows; on the 64-lane paths (AVX-512, AVX2 wide), a last
    group of at most 32 rows runs on the 32-lane AVX2 path (measured faster than a 64-lane
    group that is half empty)."""
    cdef const ForestView* f = &forest.view
    cdef const RSView* r = &lay.view
    cdef bint want_leaves = leaves.shape[0] != 0
    cdef int64_t lanes = rs_lanes(isa)         # the widest group, which sizes the scratch
    cdef int64_t F = f.n_features, K = f.n_outputs
    cdef Py_ssize_t n_rows = X.shape[0]
    cdef Py_ssize_t n_groups = (n_rows + lanes - 1) // lanes
    cdef Py_ssize_t gi, i
    cdef int64_t l, k, n_lanes, gl
    cdef int gisa
    cdef uint8_t* state
    cdef uint8_t* ranks
    cdef uint8_t* idx
    cdef uint8_t* codes
    cdef uint8_t* cols
    cdef uint8_t* chunk
    cdef Py_ssize_t ci
    # one-output calls of several groups a thread on the level path, summed in registers:
    # chunks of groups through the tree blocks (level_chunk), at most lv_chunk groups each,
    # as many chunks as a multiple of the threads and of equal sizes (within a group), so
    # that no thread is left with a short last chunk while the others wait
    cdef Py_ssize_t most = max(1, r.lv_chunk)     # 0 where the layout has no levels
    cdef Py_ssize_t n_chunks = (n_groups + most - 1) // most
    n_chunks = (n_chunks + n_threads - 1) // n_threads * n_threads
    cdef Py_ssize_t per_chunk = (n_groups + n_chunks - 1) // n_chunks if n_chunks else 0
    n_chunks = (n_groups + per_chunk - 1) // per_chunk if per_chunk else 0
    cdef bint chunked = (not want_leaves and K == 1 and r.lv_on and r.lv_min_lanes <= 32
                         and rs_lv_fused(isa) and r.n_lv_blocks > 1 and per_chunk > 1)
    cdef double* rows
    cdef double* acc64
    cdef float* acc32
    cdef uint64_t* skip
    cdef RSBufs bufs
    with nogil, parallel(num_threads=n_threads):
        bufs = _carve(r, &scratch[threadid(), 0], lanes, F, K)
        state = bufs.state
        rows = bufs.rows
        acc64 = bufs.acc64
        acc32 = <float*>acc64
        skip = bufs.skip
        ranks = bufs.ranks
        idx = bufs.idx
        codes = bufs.codes
        cols = bufs.cols
        chunk = bufs.chunk
        if chunked:
            for ci in prange(n_chunks, schedule="dynamic"):
                level_chunk(f, r, isa, X, ci * per_chunk, min(n_groups, (ci + 1) * per_chunk),
                            lanes, rows, ranks, skip, chunk, out64, out32)
        else:
            # groups handed out one by one, not split in equal shares up front: a thread
            # slowed by another process then takes fewer groups (python
            # benchmarks/scaling.py with a second process on one core)
            for gi in prange(n_groups, schedule="dynamic"):
                i = gi * lanes
                n_lanes = min(lanes, n_rows - i)
                gisa = _group_isa(isa, n_lanes)
                gl = rs_lanes(gisa)
                for l in range(n_lanes):
                    load_row(f, X, i + l, rows + l * F)
                if want_leaves:
                    score_group(f, r, gisa, n_lanes, rows, state, ranks, skip, idx, codes,
                                acc64, acc32, &leaves[i, 0], f.n_trees, cols)
                else:
                    score_group(f, r, gisa, n_lanes, rows, state, ranks, skip, idx, codes,
                                acc64, acc32, NULL, 0, cols)
                    for l in range(n_lanes):
                        for k in range(K):
                            if f.family == FAMILY_XGBOOST:
                                out32[i + l, k] = acc32[k * gl + l]
                            else:
                                out64[i + l, k] = acc64[k * gl + l]


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
    them, each scored with score_group (the same sums in the same order). scratch: at least
    lay.scratch_bytes(isa, n_outputs) bytes (a Python thread's, as predict_raw's first row)."""
    _check_layout(forest, lay, isa)
    cdef SmallCall c
    out = small_call(forest, X, lay.n_trees, lay.n_features, squeeze, &c)
    if out is None:
        return None
    cdef const ForestView* f = &forest.view
    cdef const RSView* r = &lay.view
    cdef int64_t lanes = rs_lanes(isa), F = f.n_features, K = f.n_outputs
    cdef RSBufs b = _carve(r, <uint8_t*>scratch_data(scratch, lay._scratch_need(isa, K)),
                           lanes, F, K)
    cdef float* acc32 = <float*>b.acc64
    cdef Py_ssize_t g, i
    cdef int64_t l, k, n_lanes, gl
    cdef int gisa
    with nogil:
        for g in range((c.n + lanes - 1) // lanes):
            i = g * lanes
            n_lanes = min(lanes, c.n - i)
            gisa = _group_isa(isa, n_lanes)
            gl = rs_lanes(gisa)
            for l in range(n_lanes):
                load_row_ptr(f, c.x + (i + l) * c.row_bytes, c.is32, b.rows + l * F)
            score_group(f, r, gisa, n_lanes, b.rows, b.state, b.ranks, b.skip, b.idx, b.codes,
                        b.acc64, acc32, NULL, 0, b.cols)
            for l in range(n_lanes):
                for k in range(K):
                    if c.o32 != NULL:
                        c.o32[(i + l) * K + k] = acc32[k * gl + l]
                    else:
                        c.o64[(i + l) * K + k] = b.acc64[k * gl + l]
    return out
