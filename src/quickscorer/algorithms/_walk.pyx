# cython: language_level=3
"""The "walk" kernel: root-to-leaf walks of eight trees interleaved, one row at a time.

A row is first expanded (``xr``): each (feature, missing-value rule) pair that some node uses
gets a column holding the feature's value with its missing values already mapped to the side
they go to (-inf: left, +inf: right), and each node that no such column can decide
(categorical splits, thresholds that are NaN or +inf) gets a column of its own, set to -inf or
+inf by the shared node rule of _forest.pxd. Every node is then one test ``xr[col] > thr``,
and the walks of eight trees advance together without a branch on the data (walk.h). The
layout is built by ``quickscorer.algorithms.walk.walk_arrays``, whose docstring describes it;
the row loops are the shared ones of _kernel.pyx, and for calls of many rows _walk_chunks, which
walks a chunk of rows through each tree block in turn.
"""
cimport numpy as cnp
from cython.parallel cimport prange, parallel, threadid
from libc.math cimport INFINITY, isnan
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

from quickscorer._forest cimport (Forest, ForestView, FAMILY_XGBOOST, QS_FUSED_SUMS,
                                  add_leaf_f32, category_code, floating, leaf_f32, load_row)
from quickscorer._kernel cimport (emit, Layout, NodeView, array_data, check_call, check_leaves,
                       check_scores, node_goes_left, init_scores, set_nodes)

import numpy as np

cnp.import_array()

# the node_offset that set_nodes reads: the special nodes belong to no tree of their own
_NO_TREES = np.zeros(1, np.int64)


cdef extern from "quickscorer/algorithms/walk.h" nogil:
    ctypedef struct walk_node:
        double thr
        int32_t col
        int32_t kid[2]
        int32_t pad
    void walk8(const walk_node* nodes, const int32_t* roots, int64_t n_trees,
                  const double* xr, int32_t* leaf)
    int64_t walk_table_records(const walk_node* table, int64_t rows)
    bint walk_table_sound(const walk_node* table, int64_t rows, int64_t n_records,
                          const int64_t* offsets, int64_t n_trees, int64_t n_cols)
    bint walk_table_sound_isa(const walk_node* table, int64_t rows, int64_t n_records,
                              const int64_t* offsets, int64_t n_trees, int64_t n_cols,
                              int isa)
    int cpu_isa_available(int isa)
    enum:
        WALK_COMPLETE_SOUND, WALK_COMPLETE_NONE, WALK_COMPLETE_STRAY, WALK_COMPLETE_SHAPE,
        WALK_COMPLETE_SLOT, WALK_COMPLETE_LEAF
    int walk_complete_fault(const uint64_t* cnodes, int64_t n_words, const int64_t* off,
                            int64_t n_off, const uint8_t* depth, int64_t n_depth,
                            const int64_t* soff, int64_t n_soff, const int32_t* ends,
                            int64_t n_ends, const int64_t* node_offset, int64_t n_trees,
                            int64_t n_cols, int* cfloat)
    ctypedef struct walk_cnode:
        double thr
        int32_t col
    void walk_complete(const walk_cnode* nodes, const int32_t* slot_leaf, int depth,
                          const double* xr, int64_t xr_stride, int64_t n_rows, int32_t* leaf,
                          int64_t leaf_stride)
    ctypedef struct walk_cnode32:
        uint32_t key
        int32_t col
    uint32_t walk_key32(float f)
    void walk_complete32(const walk_cnode32* nodes, const int32_t* slot_leaf, int depth,
                            const uint32_t* xr, int64_t xr_stride, int64_t n_rows,
                            int32_t* leaf, int64_t leaf_stride)
    void walk_groups(const walk_cnode* nodes, const int64_t* node_offset,
                        const uint8_t* depth, const int32_t* slot_leaf,
                        const int64_t* slot_offset, int64_t n_trees, const double* xr,
                        int32_t* leaf)
    void walk_groups32(const walk_cnode32* nodes, const int64_t* node_offset,
                          const uint8_t* depth, const int32_t* slot_leaf,
                          const int64_t* slot_offset, int64_t n_trees, const uint32_t* xr,
                          int32_t* leaf)
    void walk_groups_pair(const walk_cnode* nodes, const int64_t* node_offset,
                             const uint8_t* depth, const int32_t* slot_leaf,
                             const int64_t* slot_offset, int64_t n_trees, const double* xa,
                             const double* xb, int32_t* la, int32_t* lb)
    void walk_groups_pair32(const walk_cnode32* nodes, const int64_t* node_offset,
                               const uint8_t* depth, const int32_t* slot_leaf,
                               const int64_t* slot_offset, int64_t n_trees,
                               const uint32_t* xa, const uint32_t* xb, int32_t* la,
                               int32_t* lb)
    double walk_groups_sum(const walk_cnode* nodes, const int64_t* node_offset,
                              const uint8_t* depth, const double* slot_value,
                              const int64_t* slot_offset, int64_t n_trees, const double* xr,
                              double acc)
    float walk_groups_sum_f(const walk_cnode* nodes, const int64_t* node_offset,
                               const uint8_t* depth, const float* slot_value,
                               const int64_t* slot_offset, int64_t n_trees, const double* xr,
                               float acc)
    float walk_groups_sum32(const walk_cnode32* nodes, const int64_t* node_offset,
                               const uint8_t* depth, const float* slot_value,
                               const int64_t* slot_offset, int64_t n_trees,
                               const uint32_t* xr, float acc)
    void walk_groups_pair_sum(const walk_cnode* nodes, const int64_t* node_offset,
                                 const uint8_t* depth, const double* slot_value,
                                 const int64_t* slot_offset, int64_t n_trees,
                                 const double* xa, const double* xb, double* acc)
    void walk_groups_pair_sum_f(const walk_cnode* nodes, const int64_t* node_offset,
                                   const uint8_t* depth, const float* slot_value,
                                   const int64_t* slot_offset, int64_t n_trees,
                                   const double* xa, const double* xb, float* acc)
    void walk_groups_pair_sum32(const walk_cnode32* nodes, const int64_t* node_offset,
                                   const uint8_t* depth, const float* slot_value,
                                   const int64_t* slot_offset, int64_t n_trees,
                                   const uint32_t* xa, const uint32_t* xb, float* acc)


# a walk node (walk.h walk_node), as walk.walk_arrays writes them viewed as uint64
NODE_DTYPE = np.dtype([("thr", "<f8"), ("col", "<i4"), ("kid", "<i4", 2), ("pad", "<i4")])
#: the bytes of a walk_node record: a child's offset in the table is its index times this
NODE_BYTES = NODE_DTYPE.itemsize

# the missing-value rules of a column (its index is rule * n_features + feature)
cdef enum:
    RULE_NAN_AS_ZERO = 0      # LightGBM, missing type None: NaN compares as 0.0
    RULE_NAN_LEFT = 1         # NaN goes left (LightGBM missing type NaN, XGBoost)
    RULE_NAN_RIGHT = 2
    RULE_ZERO_LEFT = 3        # LightGBM missing type Zero: 0.0 and NaN go left
    RULE_ZERO_RIGHT = 4
    N_RULES = 5

# the same numbers for the layout builder (quickscorer.algorithms.walk)
RULES = {"nan_as_zero": RULE_NAN_AS_ZERO, "nan_left": RULE_NAN_LEFT,
         "nan_right": RULE_NAN_RIGHT, "zero_left": RULE_ZERO_LEFT,
         "zero_right": RULE_ZERO_RIGHT}
N_RULE_KINDS = N_RULES


cdef struct WalkView:
    NodeView nodes                # the special nodes' canonical fields, in column order
    const walk_node* walk      # [n_walk] the walk's nodes, then the two sentinels
    const int32_t* roots          # [n_trees + 16]
    const int32_t* fill_cols      # [n_fill] the rule columns some node reads
    const int64_t* rule_start     # [N_RULES + 1] where each rule's columns start in fill_cols
    int64_t n_fill
    const int32_t* special_table  # [n_special] a categorical node's row of tables, or -1
    const uint8_t* tables         # [32 rows] the codes (algorithms.nodes) that go right
    int64_t n_special
    int64_t n_cols
    int64_t n_features
    const int64_t* block_starts   # [n_blocks + 1] the first tree of each tree block
    const int32_t* block_roots    # [n_trees + 16 n_blocks] each block's roots, 16 sentinels
    int64_t n_blocks
    bint complete                 # the chunks walk the complete trees below
    bint cfloat                   # the slots are float32 keys (cnodes32), the rows' keys too
    const walk_cnode* cnodes   # each tree's 2^d - 1 slots (walk.py complete_arrays)
    const walk_cnode32* cnodes32
    const int64_t* cnode_offset   # [n_trees + 1]
    const uint8_t* cdepth         # [n_trees]
    const int64_t* cslot_offset   # [n_trees + 1] each tree's 2^d end slots
    const int32_t* cslot_leaf
    # each end slot's leaf value (WalkLayout.attach_values), the one of these that the
    # forest's scores take (float32: XGBoost's), or both NULL; cvalue_of: the leaf values
    # of the forest they were taken from (the walk adds them only for that forest)
    const double* cvalue64
    const float* cvalue32
    const double* cvalue_of


cdef class WalkLayout(Layout):
    """The walk's node table, roots and expanded-row columns of one model."""
    cdef WalkView view
    cdef object _rule_start
    cdef object _block_roots
    cdef object _roots
    cdef object _walk_table
    cdef Py_ssize_t _n_records
    #: tree blocks of the calls of many rows (_walk_chunks)
    cdef readonly int64_t n_blocks
    #: whether _walk_chunks walks complete trees, and whether in float32
    cdef readonly bint complete
    cdef readonly bint cfloat
    cdef int64_t xr32_words
    #: uint64 words of scratch per thread and row of a chunk of _walk_chunks
    cdef readonly int64_t chunk_row_words
    cdef int64_t lf_words
    #: each end slot's leaf value where attach_values took them (float32 for XGBoost
    #: forests), else None
    cdef readonly object slot_values
    cdef Py_ssize_t n_cslots      # end slots of the complete trees, the fill trees' included

    def __cinit__(self, dict a, int64_t n_features):
        self._keep = dict(a)
        F = n_features
        set_nodes(&self.view.nodes, dict(a, node_offset=_NO_TREES), "walk")
        offsets = a["node_offset"]
        if offsets.dtype != np.int64 or offsets.ndim != 1 or offsets.shape[0] < 1:
            raise ValueError("walk layout field 'node_offset' is not the trees' offsets")
        n_trees = offsets.shape[0] - 1
        table = a["walk_table"]
        array_data(table, np.uint64, "walk", "walk_table")     # its type and layout checked
        if table.shape[0] % 3:
            raise ValueError("walk layout field 'walk_table' is not a whole number of rows")
        # the leaf records first (walk_tables), as many as row 0's leaf number + 1
        n_records = _leaf_records_in_place(table)
        if n_records < 1:
            raise ValueError("walk layout field 'walk_table': the leaf records are not in "
                             "place")
        n_walk = table.shape[0] // 3 - n_records
        n_special = a["feature"].shape[0]
        # the expanded row: the fill columns, then the special nodes' (at least one column,
        # which the sentinels read)
        n_cols = max(1, a["fill_cols"].shape[0] + n_special)
        # every step must stay in the table and move down (children follow their parent: the
        # table is laid out in preorder, algorithms.walk), so that a walk ends; the last node
        # is the self-loop sentinel
        if n_walk < 2 or (n_records + n_walk) * NODE_BYTES >= 2 ** 31:
            raise ValueError(f"walk layout: {n_walk} nodes and {n_records} leaf records")
        if offsets[n_trees] != n_walk - 2 or (n_trees and offsets[0] != 0):
            raise ValueError("walk layout: the walk's nodes do not match the canonical nodes")
        if not _nodes_in_place(table, n_records, offsets, n_cols):
            raise ValueError("walk layout: a node's child or column is out of place")
        # the trees' roots, then the self-loop 8 times (a cursor past its last tree must
        # circle there, or it would walk on and write past the leaves' room)
        if a["roots"].shape[0] != n_trees + 8 or (a["roots"].shape[0] and (
                a["roots"].min() < 0 or a["roots"].max() >= n_walk
                or np.any(a["roots"][n_trees:] != n_walk - 1))):
            raise ValueError("walk layout field 'roots' does not match the nodes")
        fill = a["fill_cols"]
        if fill.shape[0] and (fill.min() < 0 or fill.max() >= N_RULES * F
                              or np.any(np.diff(fill) <= 0)):
            # increasing: expand reads each rule's columns as one run
            raise ValueError("walk layout field 'fill_cols' is out of range or out of order")
        # the table read in place (a model file's mapping): no copy
        self._walk_table = table
        self._n_records = n_records
        self._roots = (np.append(a["roots"], np.full(8, n_walk - 1, np.int32))
                       * NODE_BYTES).astype(np.int32)
        self.view.walk = (<const walk_node*>array_data(table, np.uint64, "walk",
                                                       "walk_table")) + <Py_ssize_t>n_records
        self.view.roots = <const int32_t*>array_data(self._roots, np.int32, "walk", "roots")
        self.view.fill_cols = <const int32_t*>array_data(fill, np.int32, "walk", "fill_cols")
        # fill_cols is rule * F + feature in increasing order: each rule's columns in one run
        self._rule_start = np.searchsorted(fill, np.arange(N_RULES + 1) * F).astype(np.int64)
        self.view.rule_start = <const int64_t*>array_data(self._rule_start, np.int64, "walk",
                                                          "rule_start")
        table, tables = a["special_table"], a["special_tables"]
        if (table.shape[0] != n_special or tables.shape[0] % 32 or (n_special and (
                table.min() < -1 or table.max() >= tables.shape[0] // 32
                or np.any((a["flags"][table >= 0] & 1) == 0)))):
            raise ValueError("walk layout fields 'special_table' / 'special_tables' do not "
                             "fit the special nodes")
        # the special nodes' own fields, which expand reads for every row: each feature a
        # column of the row, each category run inside the category words
        sp, co, cn = a["feature"], a["cat_offset"], a["cat_nwords"]
        n_cat = a["cat_words"].shape[0]
        if n_special and (sp.min() < 0 or sp.max() >= F or co.min() < 0 or co.max() > n_cat
                          or cn.min() < 0 or np.any(cn > n_cat - co)):
            raise ValueError("walk layout: a special node's feature or categories are out of "
                             "range")
        self.view.special_table = <const int32_t*>array_data(table, np.int32, "walk",
                                                             "special_table")
        self.view.tables = <const uint8_t*>array_data(tables, np.uint8, "walk",
                                                      "special_tables")
        self.view.n_fill = fill.shape[0]
        self.view.n_special = n_special
        self.view.n_cols = n_cols
        self.view.n_features = F
        starts = a["block_starts"]
        if (starts.dtype != np.int64 or starts.ndim != 1 or starts.shape[0] < 2
                or starts[0] != 0 or starts[starts.shape[0] - 1] != n_trees
                or np.any(np.diff(starts) <= 0) and n_trees):
            raise ValueError("walk layout field 'block_starts' does not split the trees into "
                             "blocks")
        self.view.block_starts = <const int64_t*>array_data(starts, np.int64, "walk",
                                                            "block_starts")
        self.n_blocks = self.view.n_blocks = starts.shape[0] - 1
        # each block's roots, then the self-loop node 16 times (a cursor past the block's
        # trees circles there; walk8 reads 8 roots ahead): block b's from
        # block_starts[b] + 16 b
        block_of_tree = np.repeat(np.arange(self.n_blocks), np.diff(starts))
        block_roots = np.full(n_trees + 16 * self.n_blocks, n_walk - 1, np.int32)
        block_roots[np.arange(n_trees) + 16 * block_of_tree] = a["roots"][:n_trees]
        block_roots *= NODE_BYTES         # byte offsets, as walk_tables's roots
        self._block_roots = block_roots
        self.view.block_roots = <const int32_t*>array_data(block_roots, np.int32, "walk",
                                                           "block_roots")
        self._set_complete(a, n_trees, n_cols, offsets)
        # _walk_chunks: a converted row, its expanded row and its exit leaves in a block
        self.lf_words = (int(np.diff(starts).max(initial=0)) + 8 + 1) // 2
        # and with float32 slots the keys of the expanded row in float32
        self.xr32_words = (n_cols + 1) // 2 if self.cfloat else 0
        self.chunk_row_words = F + n_cols + self.lf_words + self.xr32_words
        self.n_trees = n_trees
        self.n_features = F
        # the expanded row (one double a column), then the exit leaves (int32, n_trees + 8),
        # then with float32 slots the keys of the expanded row in float32
        self.scratch_words = n_cols + (n_trees + 8 + 1) // 2 + self.xr32_words
        self.ctx = &self.view
        self.exits = walk_exits
        # two rows at once where they walk complete trees (their slots read for both)
        self.exits2 = NULL
        if self.complete:
            self.exits2 = walk_exits2

    def walk_nodes(self):
        """The nodes of the table the kernels read, after its leaf records (a view; children
        as byte offsets, walk_tables)."""
        return self._walk_table[3 * self._n_records:]

    def attach_values(self, Forest forest):
        """Take each end slot's leaf value from ``forest`` (the model these trees are
        from), so that one or two rows walking the complete trees add their leaves' values
        to their score as each group of eight ends (walk.h WALK_GROUPS_SUM), instead of
        storing the leaves and adding them afterwards. Only for complete trees and forests
        of one output without linear leaves, and without DART weights where the weighted sum
        is fused (QS_FUSED_SUMS: a slot's value cannot hold a product rounded once with the
        sum); returns False, nothing taken, otherwise. The values are added only to the
        scores of this forest. Returns whether taken."""
        cdef const ForestView* f = &forest.view
        cdef Py_ssize_t t, s
        if (not self.complete or f.n_outputs != 1 or f.has_linear or f.n_trees != self.n_trees
                or f.n_features != self.n_features
                or (QS_FUSED_SUMS and f.tree_weight != NULL)):
            return False
        cdef bint xgb = f.family == FAMILY_XGBOOST
        # the fill trees' end slots too, never added: NaN, so that a walk adding them would
        # show (and none reads past the array)
        values = np.full(self.n_cslots, np.nan, np.float32 if xgb else np.float64)
        cdef float[::1] v32
        cdef double[::1] v64
        if xgb:
            v32 = values
        else:
            v64 = values
        cdef const int64_t* soff = self.view.cslot_offset
        cdef const int32_t* leaf = self.view.cslot_leaf
        cdef bint bad = False
        with nogil:
            for t in range(f.n_trees):
                for s in range(soff[t], soff[t + 1]):
                    if leaf[s] >= f.tree_leaf_offset[t + 1] - f.tree_leaf_offset[t]:
                        bad = True
                        break
                    if xgb:
                        v32[s] = leaf_f32(f, t, f.tree_leaf_offset[t] + leaf[s])
                    else:
                        v64[s] = f.leaf_value[f.tree_leaf_offset[t] + leaf[s]]
                if bad:
                    break
        if bad:
            raise ValueError("walk layout: a complete tree's leaf is not a leaf of the "
                             "forest whose values it takes")
        self.slot_values = values
        if xgb:
            self.view.cvalue32 = <const float*>cnp.PyArray_DATA(values)
        else:
            self.view.cvalue64 = <const double*>cnp.PyArray_DATA(values)
        self.view.cvalue_of = f.leaf_value
        return True

    cdef int _set_complete(self, dict a, int64_t n_trees, int64_t n_cols,
                           object node_offset) except -1:
        """The complete trees (none where cnode_offset is a single 0), checked so that every
        walk stays in its tree's slots and ends at one of its leaves (walk.h
        walk_complete_fault: tree t has node_offset[t + 1] - node_offset[t] + 1 leaves)."""
        off, depth = a["cnode_offset"], a["cdepth"]
        soff, leaf = a["cslot_offset"], a["cslot_leaf"]
        raw = a["cnodes"]
        self.view.cnodes = <const walk_cnode*>array_data(raw, np.uint64, "walk", "cnodes")
        self.view.cnodes32 = <const walk_cnode32*>self.view.cnodes
        self.cfloat = self.view.cfloat = False
        self.view.cnode_offset = <const int64_t*>array_data(off, np.int64, "walk",
                                                            "cnode_offset")
        self.view.cdepth = <const uint8_t*>array_data(depth, np.uint8, "walk", "cdepth")
        self.view.cslot_offset = <const int64_t*>array_data(soff, np.int64, "walk",
                                                            "cslot_offset")
        self.view.cslot_leaf = <const int32_t*>array_data(leaf, np.int32, "walk", "cslot_leaf")
        cdef int cfloat = 0, fault
        cdef const int64_t[::1] tree_offsets = node_offset
        cdef int64_t n_words = raw.shape[0], n_off = off.shape[0], n_depth = depth.shape[0]
        cdef int64_t n_soff = soff.shape[0], n_ends = leaf.shape[0]
        with nogil:
            fault = walk_complete_fault(
                <const uint64_t*>self.view.cnodes, n_words, self.view.cnode_offset, n_off,
                self.view.cdepth, n_depth, self.view.cslot_offset, n_soff,
                self.view.cslot_leaf, n_ends, &tree_offsets[0], n_trees, n_cols, &cfloat)
        if fault == WALK_COMPLETE_NONE:
            self.complete = self.view.complete = False
            return 0
        if fault == WALK_COMPLETE_STRAY:
            raise ValueError("walk layout: complete-tree fields without trees")
        if fault == WALK_COMPLETE_SHAPE:
            raise ValueError("walk layout: the complete trees' offsets do not match their "
                             "depths, or a group of eight trees has two depths")
        if fault == WALK_COMPLETE_SLOT or fault == WALK_COMPLETE_LEAF:
            raise ValueError("walk layout: a complete tree's column, threshold or leaf is out "
                             "of place")
        # one word a slot: float32 slots (walk.py CNODE32_DTYPE); two: float64
        self.cfloat = self.view.cfloat = cfloat != 0
        self.complete = self.view.complete = True
        self.n_cslots = leaf.shape[0]
        return 0

    def __reduce__(self):
        return (WalkLayout, (self._keep, self.n_features))


cdef inline void expand(const WalkView* v, int family, const double* row,
                        double* xr) noexcept nogil:
    """The columns of a converted row that the nodes read, rule by rule (fill_cols is
    sorted by rule, so no division per column finds its rule)."""
    cdef int64_t j, c, base, F = v.n_features
    cdef int rule
    cdef double x
    for rule in range(N_RULES):
        base = rule * F
        for j in range(v.rule_start[rule], v.rule_start[rule + 1]):
            c = v.fill_cols[j]
            x = row[c - base]
            if isnan(x):
                if rule == RULE_NAN_AS_ZERO:
                    x = 0.0
                elif rule == RULE_NAN_LEFT or rule == RULE_ZERO_LEFT:
                    x = -INFINITY
                else:
                    x = INFINITY
            elif x == 0.0 and rule >= RULE_ZERO_LEFT:
                x = -INFINITY if rule == RULE_ZERO_LEFT else INFINITY
            xr[j] = x
    c = v.n_fill
    cdef double sides[2]
    sides[0] = -INFINITY
    sides[1] = INFINITY
    cdef int32_t k
    cdef int code
    for j in range(v.n_special):
        k = v.special_table[j]
        if k >= 0:         # a categorical node: its side by its table, no branch on it
            code = category_code(family, row[v.nodes.feature[j]])
            xr[c + j] = sides[(v.tables[32 * k + (code >> 3)] >> (code & 7)) & 1]
        else:
            xr[c + j] = -INFINITY if node_goes_left(&v.nodes, family, j, row) else INFINITY


cdef Py_ssize_t _leaf_records_in_place(const uint64_t[::1] table) except -2:
    """The number of leaf records at the head of a walk table, or -1 where those rows are
    not exactly walk_tables's (walk.h walk_table_records)."""
    cdef int64_t rows = table.shape[0] // 3
    if rows < 3:
        return -1
    with nogil:
        rows = walk_table_records(<const walk_node*>&table[0], rows)
    return rows


cdef bint _nodes_in_place(const uint64_t[::1] table, Py_ssize_t n_records,
                          const int64_t[::1] offsets, int64_t n_cols) except -1:
    """Whether every node of a walk table after its n_records leaf records has its column in
    the expanded row and its children rows of its tree below it (walk.h walk_table_sound)."""
    cdef bint ok
    with nogil:
        ok = walk_table_sound(<const walk_node*>&table[0], table.shape[0] // 3, n_records,
                              &offsets[0], offsets.shape[0] - 1, n_cols)
    return ok


def table_sound(const uint64_t[::1] table, Py_ssize_t n_records, const int64_t[::1] offsets,
                int64_t n_cols, int isa):
    """walk.h's check of a walk table's nodes (``WalkLayout``'s) on path ``isa`` (0 the
    portable C, 1 AVX2), for the tests that hold each path to its rule; ValueError where
    this CPU lacks the path."""
    if not 0 <= isa <= 1 or not cpu_isa_available(isa):
        raise ValueError(f"table_sound: path {isa} is not available on this CPU")
    if table.shape[0] < 3 or offsets.shape[0] < 1:
        raise ValueError("table_sound: no table")
    cdef bint ok
    with nogil:
        ok = walk_table_sound_isa(<const walk_node*>&table[0], table.shape[0] // 3, n_records,
                                  &offsets[0], offsets.shape[0] - 1, n_cols, isa)
    return bool(ok)


def walk_tables(walk_nodes, roots):
    """What walk8 reads, from a layout's ``walk_nodes`` and ``roots`` (walk.walk_arrays):
    the table with leaf l's record before it at index -1 - l for every leaf number of the
    trees (a cursor at a leaf stays on its record until the harvest: threshold +inf, never
    right, both children itself, its leaf number in ``pad``), the number of those records,
    and the roots with 8 more self-loop sentinels (a cursor on tree t reads roots[t + 8], t up
    to n_trees + 7). In the table and the roots, a node index i (a leaf child ~l: i = -1 - l)
    is its byte offset from the first node, ``i * NODE_BYTES`` (walk.h). Returns ``(table,
    n_records, roots)``; the walk's nodes start at ``table`` row ``n_records``; ``to_indices``
    turns the nodes back."""
    raw = np.ascontiguousarray(walk_nodes).view(np.uint64)
    n_nodes = raw.shape[0] // 3
    n_records = _leaf_records(raw)
    if (n_records + n_nodes) * NODE_BYTES >= 2 ** 31:
        raise ValueError(f"walk layout: {n_nodes} nodes and {n_records} leaf records, "
                         f"more than the walk's 32-bit byte offsets reach "
                         f"({2 ** 31 // NODE_BYTES - 1} in all)")
    table = np.empty(3 * (n_records + n_nodes), np.uint64)
    _fill_table(table, raw, n_records)        # every field of every row
    roots = np.append(roots, np.full(8, roots[roots.shape[0] - 1], np.int32)) * NODE_BYTES
    return table, n_records, roots.astype(np.int32)


cdef Py_ssize_t _leaf_records(const uint64_t[::1] raw) noexcept:
    """One more than the largest leaf number ~c of a child c < 0 of the nodes (1 if none)."""
    cdef const walk_node* nodes = <const walk_node*>&raw[0] if raw.shape[0] else NULL
    cdef Py_ssize_t i, n = raw.shape[0] // 3
    cdef int64_t most = 0, c, l
    cdef int side
    with nogil:
        for i in range(n):
            for side in range(2):
                c = nodes[i].kid[side]
                l = (~c + 1) & (c >> 63)        # a leaf child's number + 1, else 0
                most = l if l > most else most
    return most if most > 0 else 1


cdef void _fill_table(uint64_t[::1] table, const uint64_t[::1] raw, Py_ssize_t n_records):
    """walk_tables's table: leaf l's record at row n_records - 1 - l, then the nodes with
    their children as byte offsets from the first node."""
    cdef walk_node* out = <walk_node*>&table[0]
    cdef const walk_node* src = <const walk_node*>&raw[0] if raw.shape[0] else NULL
    cdef Py_ssize_t i, l, n = raw.shape[0] // 3
    with nogil:
        for i in range(n_records):
            l = n_records - 1 - i
            out[i].thr = INFINITY
            out[i].col = 0
            out[i].kid[0] = out[i].kid[1] = <int32_t>((-1 - l) * sizeof(walk_node))
            out[i].pad = <int32_t>l
        for i in range(n):
            out[n_records + i] = src[i]
            out[n_records + i].kid[0] = src[i].kid[0] * <int32_t>sizeof(walk_node)
            out[n_records + i].kid[1] = src[i].kid[1] * <int32_t>sizeof(walk_node)


def to_indices(table_nodes):
    """The nodes of walk_tables's table (the rows after the leaf records) with their children
    as indices again, as walk.walk_arrays has them."""
    nodes = table_nodes.view(NODE_DTYPE).copy()
    nodes["kid"] //= NODE_BYTES
    return nodes.view(np.uint64)


def preorder(const int32_t[::1] left, const int32_t[::1] right, const int64_t[::1] offsets):
    """Each canonical node's place in the walk's table: tree by tree as in ``offsets``, the
    nodes of a tree in depth-first preorder (a node, then its left subtree, then its right),
    so that a path that goes left reads consecutive nodes and a subtree lies in one run of
    memory. ``left`` / ``right`` are the canonical (breadth-first, per tree) children; returns
    int64 positions."""
    cdef Py_ssize_t n = left.shape[0], t, v, c, r, lo, hi
    cdef bint bad = False
    if right.shape[0] != n or offsets.shape[0] < 1 or offsets[offsets.shape[0] - 1] != n:
        raise ValueError("preorder: the children do not match the trees' offsets")
    out = np.full(n, -1, np.int64)
    size_a = np.ones(n, np.int64)
    cdef int64_t[::1] pos = out
    cdef int64_t[::1] size = size_a   # internal nodes in each node's subtree
    with nogil:
        for t in range(offsets.shape[0] - 1):
            lo = offsets[t]
            hi = offsets[t + 1]
            if lo < 0 or hi < lo or hi > n:
                bad = True
                break
            for v in range(hi - 1, lo - 1, -1):   # children come after their parent
                c = left[v]
                r = right[v]
                if (c >= 0 and (lo + c <= v or lo + c >= hi)) or (
                        r >= 0 and (lo + r <= v or lo + r >= hi)):
                    bad = True
                    break
                if c >= 0:
                    size[v] += size[lo + c]
                if r >= 0:
                    size[v] += size[lo + r]
            if bad:
                break
            if hi > lo:
                pos[lo] = lo
            for v in range(lo, hi):
                c = left[v]
                if c >= 0:
                    pos[lo + c] = pos[v] + 1
                if right[v] >= 0:
                    pos[lo + right[v]] = pos[v] + 1 + (size[lo + c] if c >= 0 else 0)
    # every node placed once: none left out (not reached from its root), none placed twice
    if bad or (n and ((out < 0).any() or np.bincount(out, minlength=n).max() != 1)):
        raise ValueError("preorder: a child is not below its parent in its tree, or a node "
                         "is not the child of one parent")
    return out


cdef inline uint64_t* row_scratch(const WalkView* v, int64_t n_trees, uint64_t* s,
                                  double** xr, int32_t** lf, uint32_t** xr32) noexcept nogil:
    """One row's scratch for walk_exits (WalkLayout.scratch_words): the expanded row, its
    exit leaves (n_trees + 8), with float32 slots its values' keys; returns the word after
    it."""
    cdef int64_t lf_words = (n_trees + 8 + 1) // 2
    xr[0] = <double*>s
    lf[0] = <int32_t*>(s + v.n_cols)
    xr32[0] = <uint32_t*>(s + v.n_cols + lf_words) if v.cfloat else NULL
    return s + v.n_cols + lf_words + ((v.n_cols + 1) // 2 if v.cfloat else 0)


cdef inline void expand_row(const WalkView* v, int family, const double* row, double* xr,
                            uint32_t* xr32) noexcept nogil:
    """expand, then where xr32 is not NULL (float32 slots) the keys (walk.h walk_key32) of
    the expanded row in float32: the values of float32 rows, +-inf and 0, float32
    exactly."""
    cdef int64_t j
    expand(v, family, row, xr)
    if xr32 != NULL:
        for j in range(v.n_cols):
            xr32[j] = walk_key32(<float>xr[j])


cdef void walk_exits(const void* ctx, const ForestView* f, const double* row,
                     uint64_t* scratch, int32_t* leaves,
                     double* o64, float* o32) noexcept nogil:
    cdef const WalkView* v = <const WalkView*>ctx
    cdef double* xr
    cdef int32_t* lf
    cdef uint32_t* xr32
    row_scratch(v, f.n_trees, scratch, &xr, &lf, &xr32)
    expand_row(v, f.family, row, xr, xr32)     # xr32: NULL unless float32 slots
    if leaves == NULL and v.cvalue_of == f.leaf_value and v.cvalue_of != NULL:
        # the leaves' values added group by group (attach_values)
        if v.cvalue64 != NULL:
            o64[0] = walk_groups_sum(v.cnodes, v.cnode_offset, v.cdepth, v.cvalue64,
                                        v.cslot_offset, f.n_trees, xr, o64[0])
        elif v.cfloat:
            o32[0] = walk_groups_sum32(v.cnodes32, v.cnode_offset, v.cdepth, v.cvalue32,
                                          v.cslot_offset, f.n_trees, xr32, o32[0])
        else:
            o32[0] = walk_groups_sum_f(v.cnodes, v.cnode_offset, v.cdepth, v.cvalue32,
                                          v.cslot_offset, f.n_trees, xr, o32[0])
        return
    if not v.complete:
        walk8(v.walk, v.roots, f.n_trees, xr, lf)
    elif v.cfloat:
        walk_groups32(v.cnodes32, v.cnode_offset, v.cdepth, v.cslot_leaf, v.cslot_offset,
                         f.n_trees, xr32, lf)
    else:
        walk_groups(v.cnodes, v.cnode_offset, v.cdepth, v.cslot_leaf, v.cslot_offset,
                       f.n_trees, xr, lf)
    walk_emit(f, 0, f.n_trees, lf, row, leaves, o64, o32)


cdef void walk_exits2(const void* ctx, const ForestView* f, const double* row_a,
                      const double* row_b, uint64_t* scratch, double* oa64, float* oa32,
                      double* ob64, float* ob32) noexcept nogil:
    """Two rows' scores through the complete trees, the rows walking each group together
    (the layout has complete trees): each row's scratch as walk_exits's, one after the
    other."""
    cdef const WalkView* v = <const WalkView*>ctx
    cdef double* xa
    cdef double* xb
    cdef int32_t* la
    cdef int32_t* lb
    cdef uint32_t* xa32
    cdef uint32_t* xb32
    row_scratch(v, f.n_trees, row_scratch(v, f.n_trees, scratch, &xa, &la, &xa32),
                &xb, &lb, &xb32)
    expand_row(v, f.family, row_a, xa, xa32)
    expand_row(v, f.family, row_b, xb, xb32)
    cdef double acc64[2]
    cdef float acc32[2]
    if v.cvalue_of == f.leaf_value and v.cvalue_of != NULL:
        # the leaves' values added group by group (attach_values)
        if v.cvalue64 != NULL:
            acc64[0] = oa64[0]
            acc64[1] = ob64[0]
            walk_groups_pair_sum(v.cnodes, v.cnode_offset, v.cdepth, v.cvalue64,
                                    v.cslot_offset, f.n_trees, xa, xb, acc64)
            oa64[0] = acc64[0]
            ob64[0] = acc64[1]
            return
        acc32[0] = oa32[0]
        acc32[1] = ob32[0]
        if v.cfloat:
            walk_groups_pair_sum32(v.cnodes32, v.cnode_offset, v.cdepth, v.cvalue32,
                                      v.cslot_offset, f.n_trees, xa32, xb32, acc32)
        else:
            walk_groups_pair_sum_f(v.cnodes, v.cnode_offset, v.cdepth, v.cvalue32,
                                      v.cslot_offset, f.n_trees, xa, xb, acc32)
        oa32[0] = acc32[0]
        ob32[0] = acc32[1]
        return
    if v.cfloat:
        walk_groups_pair32(v.cnodes32, v.cnode_offset, v.cdepth, v.cslot_leaf,
                              v.cslot_offset, f.n_trees, xa32, xb32, la, lb)
    else:
        walk_groups_pair(v.cnodes, v.cnode_offset, v.cdepth, v.cslot_leaf, v.cslot_offset,
                            f.n_trees, xa, xb, la, lb)
    walk_emit(f, 0, f.n_trees, la, row_a, NULL, oa64, oa32)
    walk_emit(f, 0, f.n_trees, lb, row_b, NULL, ob64, ob32)


cdef inline void walk_emit(const ForestView* f, int64_t t0, int64_t t1, const int32_t* lf,
                           const double* row, int32_t* leaves, double* o64,
                           float* o32) noexcept nogil:
    """A row's exit leaves of trees t0 .. t1 - 1 (lf[0]: tree t0's): stored, or added to its
    scores in tree order."""
    cdef int64_t t
    cdef double acc
    cdef float acc32
    if leaves == NULL and f.n_outputs == 1 and not f.has_linear:
        # one score, kept in a register while the leaves are added in tree order
        if f.family == FAMILY_XGBOOST:
            acc32 = o32[0]
            for t in range(t0, t1):
                acc32 = add_leaf_f32(f, t, f.tree_leaf_offset[t] + lf[t - t0], acc32)
            o32[0] = acc32
        else:
            acc = o64[0]
            for t in range(t0, t1):
                acc = acc + f.leaf_value[f.tree_leaf_offset[t] + lf[t - t0]]
            o64[0] = acc
        return
    for t in range(t0, t1):
        emit(f, t, lf[t - t0], row, leaves, o64, o32)


cdef void _walk_chunks(Forest forest, WalkLayout lay, const floating[:, :] X,
                       double[:, ::1] out64, float[:, ::1] out32, int32_t[:, ::1] leaves,
                       uint64_t[:, ::1] scratch, int n_threads, int64_t chunk,
                       bint complete) noexcept:
    """Every row of X, ``chunk`` at a time per thread: the chunk's rows converted and
    expanded, then walked tree block by tree block (each block's nodes stay in cache for the
    chunk's rows; the complete trees where ``complete`` and the layout has them), the leaves
    of each block emitted after it (in tree order still)."""
    cdef const ForestView* f = &forest.view
    cdef const WalkView* v = &lay.view
    cdef bint want_leaves = leaves.shape[0] != 0
    cdef bint full = complete and v.complete
    cdef Py_ssize_t n_rows = X.shape[0]
    cdef Py_ssize_t n_chunks = (n_rows + chunk - 1) // chunk
    cdef Py_ssize_t c, i0, n, r
    cdef int64_t b, t, t0, t1, F = f.n_features
    cdef int64_t lf_width = 2 * lay.lf_words, x32_width = 2 * lay.xr32_words
    cdef bint f32 = full and v.cfloat
    cdef double* rows
    cdef double* xr
    cdef int32_t* lf
    cdef uint32_t* xr32
    cdef double* o64
    cdef float* o32
    with nogil, parallel(num_threads=n_threads):
        rows = <double*>&scratch[threadid(), 0]
        xr = rows + chunk * F
        lf = <int32_t*>(xr + chunk * v.n_cols)
        xr32 = <uint32_t*>(lf + chunk * lf_width)
        for c in prange(n_chunks, schedule="dynamic"):
            i0 = c * chunk
            n = min(<Py_ssize_t>chunk, n_rows - i0)
            for r in range(n):
                load_row(f, X, i0 + r, rows + r * F)
                expand_row(v, f.family, rows + r * F, xr + r * v.n_cols,
                           xr32 + r * x32_width if f32 else NULL)
            if not want_leaves:
                for r in range(n):
                    init_scores(f, out64, out32, i0 + r)
            for b in range(v.n_blocks):
                t0 = v.block_starts[b]
                t1 = v.block_starts[b + 1]
                if f32:
                    for t in range(t0, t1):
                        walk_complete32(v.cnodes32 + v.cnode_offset[t],
                                           v.cslot_leaf + v.cslot_offset[t], v.cdepth[t],
                                           xr32, x32_width, n, lf + (t - t0), lf_width)
                elif full:
                    for t in range(t0, t1):
                        walk_complete(v.cnodes + v.cnode_offset[t],
                                         v.cslot_leaf + v.cslot_offset[t], v.cdepth[t], xr,
                                         v.n_cols, n, lf + (t - t0), lf_width)
                else:
                    for r in range(n):
                        walk8(v.walk, v.block_roots + t0 + 16 * b, t1 - t0,
                                 xr + r * v.n_cols, lf + r * lf_width)
                for r in range(n):
                    if want_leaves:
                        walk_emit(f, t0, t1, lf + r * lf_width, rows + r * F,
                                  &leaves[i0 + r, 0], NULL, NULL)
                    else:
                        o64 = &out64[i0 + r, 0] if out64.shape[0] else NULL
                        o32 = &out32[i0 + r, 0] if out32.shape[0] else NULL
                        walk_emit(f, t0, t1, lf + r * lf_width, rows + r * F, NULL, o64, o32)


cdef int _check_chunks(Forest forest, WalkLayout lay, Py_ssize_t n_cols,
                       uint64_t[:, ::1] scratch, int n_threads, int64_t chunk) except -1:
    cdef double[:, ::1] rowbuf = np.empty((n_threads, 0))
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    return check_call(forest, n_cols, lay.n_trees, lay.n_features, n_threads, rowbuf, 0,
                      scratch, chunk * lay.chunk_row_words, "WalkLayout")


def predict_raw_blocked(Forest forest, WalkLayout lay, const floating[:, :] X,
                        double[:, ::1] out64, float[:, ::1] out32, uint64_t[:, ::1] scratch,
                        int n_threads, int64_t chunk, bint complete=True):
    """Raw scores into out64 (float64 forests) or out32 (float32), the other one empty, the
    rows walked ``chunk`` at a time through each tree block (its complete trees where
    ``complete`` and the layout has them); scratch: (n_threads, chunk * lay.chunk_row_words)."""
    _check_chunks(forest, lay, X.shape[1], scratch, n_threads, chunk)
    check_scores(forest, X.shape[0], out64, out32)
    cdef int32_t[:, ::1] no_leaves = np.empty((0, 0), np.int32)
    _walk_chunks(forest, lay, X, out64, out32, no_leaves, scratch, n_threads, chunk,
                 complete)


def predict_leaf_blocked(Forest forest, WalkLayout lay, const floating[:, :] X,
                         int32_t[:, ::1] out, uint64_t[:, ::1] scratch, int n_threads,
                         int64_t chunk, bint complete=True):
    """In-order exit leaf of every tree for every row, into out (n_rows, n_trees); as
    predict_raw_blocked."""
    _check_chunks(forest, lay, X.shape[1], scratch, n_threads, chunk)
    check_leaves(forest, X.shape[0], out)
    cdef double[:, ::1] no64 = np.empty((0, 0))
    cdef float[:, ::1] no32 = np.empty((0, 0), np.float32)
    if X.shape[0]:
        _walk_chunks(forest, lay, X, no64, no32, out, scratch, n_threads, chunk,
                     complete)


def block_starts(node_offset, int64_t budget_bytes):
    """walk.walk_block_starts: each block's first tree, then the number of trees; a block
    is consecutive trees whose nodes fit in ``budget_bytes``, at least one tree."""
    cdef const int64_t[::1] off = np.ascontiguousarray(node_offset, np.int64)
    cdef Py_ssize_t t, n_trees = off.shape[0] - 1, k = 1
    cdef int64_t size = 0, n
    out = np.empty(max(n_trees, 0) + 2, np.int64)
    cdef int64_t[::1] s = out
    s[0] = 0
    with nogil:
        for t in range(n_trees):
            n = (off[t + 1] - off[t]) * <int64_t>sizeof(walk_node)
            if size and size + n > budget_bytes:
                s[k] = t
                k += 1
                size = 0
            size += n
        s[k] = n_trees if n_trees > 0 else 0
    return out[:k + 1].copy()
