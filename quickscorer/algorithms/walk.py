"""The "walk" algorithm: root-to-leaf walks of eight trees interleaved without a branch on the
data (kernel: ``src/quickscorer/algorithms/_walk.pyx`` and ``walk.h``).

Where QuickScorer pays for every false node of every tree, a walk pays for the nodes on the
path: on LightGBM's leaf-wise trees most rows leave by a short path (3.5 nodes a tree on
average on a model of 1,000 full 64-leaf trees, against 20 false nodes a tree), so a walk
that does not stall on each branch can beat the scan for one row at a time.

Where the trees are at most COMPLETE_MAX_DEPTH deep and hold few slots per node (depth-wise
trees: XGBoost's, YDF's, LightGBM's with ``max_depth``) they are also laid out complete
(:func:`complete_arrays`), in groups of eight trees of one depth: one row walks a group's
eight trees together in ``depth`` steps of index arithmetic (walk.h WALK_GROUPS; for
scores of one output, two groups of one depth together with the leaf values added as they
end, WALK_GROUPS_SUM), and
calls of many rows (BLOCKED_MIN_ROWS a thread) walk chunks of rows through blocks of
trees, the complete trees tree by tree from COMPLETE_MIN_ROWS rows.
"""
from __future__ import annotations

import numpy as np

from .. import prepared
from .._forest import Forest
from ..ir.ensemble import Ensemble
from ..tuning import Tuning
from . import _walk
from .base import Algorithm
from .cpu import l2_cache_bytes
from .nodes import coded_categorical, codes_going_left, node_levels
from .traversal import node_arrays

N_RULES = _walk.N_RULE_KINDS
_R = _walk.RULES

#: a node of the walk's table as walk.h reads it (24 bytes; the kernel's definition)
NODE_DTYPE = _walk.NODE_DTYPE

#: calls of this many rows per thread or more walk their rows a chunk at a time
#: (CHUNK_ROWS) through tree blocks whose nodes stay in cache, where the model needs more
#: than one block or its trees are walked complete; fewer rows walk every tree for one row,
#: then the next
BLOCKED_MIN_ROWS = 8
#: rows of a chunk: the chunk's scratch (each row converted and expanded, and its leaves of
#: a block) is also held to twice the L2 cache, and 16 rows at least (default_block_bytes
#: says how they were measured)
CHUNK_ROWS = 64
CHUNK_ROWS_COMPLETE = 48
#: calls of this many rows a thread or more walk the complete trees, where the layout has
#: them (fewer take eight trees a row): 16 rows step together, so a call of fewer leaves
#: some of them idle, and from 12 rows the complete trees won on deep XGBoost models
#: (``python -m benchmarks.matrix --shapes xgb-depth9-uniform-1000 --batch 9,12,16
#: --algorithms walk`` with and without ``Tuning.walk_complete=False``)
COMPLETE_MIN_ROWS = 12


def default_block_bytes(complete: bool = False) -> int:
    """Walk nodes (``NODE_DTYPE``) per tree block: twice the L2 cache where the chunks walk
    eight trees a row, half of it where they walk complete trees tree by tree
    (``Tuning.walk_block_bytes`` overrides it). A walk reads a small part of a
    block's nodes (about 10 of a tree's 480 on XGBoost depth 10), so the block's rows share
    its top levels in L2 and the rest in L3; a complete tree stays in L1 while the chunk's
    rows walk it. These sizes and CHUNK_ROWS were the fastest on deep XGBoost models
    (``python -m benchmarks.matrix --shapes xgb-depth9-uniform-1000,xgb-depth10-uniform-1000
    --batch 100,4000 --algorithms walk`` with ``Tuning.walk_block_bytes``)."""
    return l2_cache_bytes() // 2 if complete else 2 * l2_cache_bytes()


def _rules(ens: Ensemble, flags: np.ndarray) -> np.ndarray:
    """Each numeric node's missing-value rule (the RULE_* constants of _walk.pyx), from its
    default direction and missing type (the flag bits of ``node_flags``)."""
    default_left = (flags >> 1) & 1 == 1
    side = np.where(default_left, 0, 1)
    if ens.family == "xgboost":          # NaN takes the default direction, zero is a value
        return _R["nan_left"] + side
    missing = (flags >> 2) & 3
    return np.select([missing == 0, missing == 1],
                     [np.full_like(side, _R["nan_as_zero"]), _R["zero_left"] + side],
                     _R["nan_left"] + side)


def special_mask(ens: Ensemble) -> np.ndarray:
    """The nodes (packed order) that read a column of their own in the walk, decided one by
    one before it starts: categorical splits, and thresholds that are NaN or +inf (where
    +inf could not stand for "right")."""
    a = ens.trees.arrays
    thr = np.asarray(a["threshold"], np.float64)
    return np.asarray(a["is_categorical"], bool) | np.isnan(thr) | (thr == np.inf)


#: calls of many rows walk trees of at most this depth complete (:func:`complete_arrays`)
COMPLETE_MAX_DEPTH = 10
#: ... where the complete trees hold at most this many slots per node of the model (a tree
#: grown deep on one side would hold far more slots than nodes). Depth-wise XGBoost trees
#: of benchmarks/matrix.py hold 1.08 (depth 6), 1.37 (8), 1.62 (9) and 2.13 (10); the
#: bound itself is a guess, not measured
COMPLETE_MAX_SLOTS = 4.0
#: a slot of a complete tree (walk.h walk_cnode, 16 bytes)
CNODE_DTYPE = np.dtype([("thr", "<f8"), ("col", "<i4"), ("pad", "<i4")])
#: ... of an XGBoost model whose thresholds are all float32 values (walk_cnode32, 8 bytes):
#: the threshold's order key (float32_keys)
CNODE32_DTYPE = np.dtype([("key", "<u4"), ("col", "<i4")])


def float32_keys(values) -> np.ndarray:
    """The order keys (uint32) of float32 values, as walk.h walk_key32 computes the rows':
    ``a > b`` exactly when ``key(a) > key(b)``, for every pair of values but NaN (-0.0 and
    0.0 share one key). Where the sign bit is set every bit is flipped, else the sign bit."""
    v = np.asarray(values, np.float32) + np.float32(0.0)       # -0.0 + 0.0 is 0.0
    u = v.view(np.uint32)
    return u ^ np.where(u >> 31 != 0, np.uint32(0xFFFFFFFF), np.uint32(0x80000000))


def float32_slots(ens: Ensemble) -> bool:
    """Whether the walk lays the model's complete trees out as float32 slots
    (``CNODE32_DTYPE``): XGBoost's rows are float32 values (and the expanded ones +-inf or
    0), so where the thresholds of its nodes (special nodes aside: their columns hold +-inf)
    are float32 values too, comparing in float32 decides every node exactly."""
    if ens.family != "xgboost":
        return False
    thr = np.asarray(ens.trees.arrays["threshold"], np.float64)[~special_mask(ens)]
    return bool(np.all(thr.astype(np.float32) == thr))


def no_complete_fields() -> dict:
    """The complete-tree fields of a layout without them."""
    return {"cnodes": np.zeros(0, np.uint64), "cnode_offset": np.zeros(1, np.int64),
            "cdepth": np.zeros(0, np.uint8), "cslot_offset": np.zeros(1, np.int64),
            "cslot_leaf": np.zeros(0, np.int32)}


#: trees a group of complete trees holds (walk.h WALK_GROUPS: one row walks the eight
#: trees of a group together)
GROUP_TREES = 8


def complete_arrays(ens: Ensemble, col: np.ndarray, thr: np.ndarray,
                    max_depth: int = COMPLETE_MAX_DEPTH) -> dict:
    """Every tree as a complete tree of ``2^d - 1`` slots in heap order, ``d`` the depth of
    the deepest tree of its group (trees ``8 g`` to ``8 g + 7``, GROUP_TREES), for the walks
    of complete trees (a chunk of rows tree by tree, or one row a group of eight trees at a
    time): the node at level ``l`` and position ``p`` (``nodes.node_levels``) in slot
    ``2^l - 1 + p`` with its ``col`` and ``thr`` (the walk's, canonical order), the other
    slots sending every row left (``thr`` +inf: an expanded value is never NaN), so a row
    walks exactly ``d`` steps by index arithmetic, no child loaded, and a leaf reached at
    level ``l``, position ``p`` ends its rows at slot ``p << (d - l)``:

    - ``cnodes`` (``CNODE_DTYPE`` as uint64, 2 words a slot), ``cnode_offset`` (int64,
      n_trees + 1), ``cdepth`` (uint8, the group's depth for each tree);
    - ``cslot_offset`` (int64, n_trees + 1; tree ``t`` has ``2^d`` end slots) and
      ``cslot_leaf`` (int32): the tree's own number of each end slot's leaf (0 for slots no
      row reaches);
    - after the last tree, as many fill trees of the last group's depth as make the number
      of trees a multiple of GROUP_TREES (their slots send every row left, to an end slot
      of leaf 0), so that the last group has eight trees too.

    Raises ValueError for a tree deeper than ``max_depth``."""
    level, pos, leaf_level, leaf_pos = node_levels(ens, max_depth)
    node_offset = np.asarray(ens.trees.node_offset, np.int64)
    leaf_offset = np.asarray(ens.trees.leaf_offset, np.int64)
    n_trees = node_offset.shape[0] - 1
    tree_of_node = np.repeat(np.arange(n_trees), np.diff(node_offset))
    depth = np.repeat(group_depths(ens, level), GROUP_TREES)     # trees and fill trees
    cnode_offset = np.zeros(depth.shape[0] + 1, np.int64)
    np.cumsum((1 << depth) - 1, out=cnode_offset[1:])
    cnodes = np.zeros(int(cnode_offset[-1]), CNODE_DTYPE)
    cnodes["thr"] = np.inf
    at = cnode_offset[tree_of_node] + (1 << level) - 1 + pos
    cnodes["thr"][at] = thr
    cnodes["col"][at] = col
    slot_offset = np.zeros(depth.shape[0] + 1, np.int64)
    np.cumsum(1 << depth, out=slot_offset[1:])
    tree_of_leaf = np.repeat(np.arange(n_trees), np.diff(leaf_offset))
    leaf_slot = slot_offset[tree_of_leaf] + (leaf_pos << (depth[tree_of_leaf] - leaf_level))
    slot_leaf = np.zeros(int(slot_offset[-1]), np.int32)
    slot_leaf[leaf_slot] = np.arange(leaf_offset[-1]) - leaf_offset[tree_of_leaf]
    return {"cnodes": cnodes.view(np.uint64), "cnode_offset": cnode_offset[:n_trees + 1],
            "cdepth": depth[:n_trees].astype(np.uint8),
            "cslot_offset": slot_offset[:n_trees + 1], "cslot_leaf": slot_leaf}


def group_depths(ens: Ensemble, level: np.ndarray) -> np.ndarray:
    """The depth of each group of GROUP_TREES trees laid out complete (its deepest tree's;
    the last group's fill trees count 0), from each node's level (``nodes.node_levels``)."""
    node_offset = np.asarray(ens.trees.node_offset, np.int64)
    n_trees = node_offset.shape[0] - 1
    own = np.zeros(n_trees + -n_trees % GROUP_TREES, np.int64)
    np.maximum.at(own, np.repeat(np.arange(n_trees), np.diff(node_offset)), level + 1)
    return own.reshape(-1, GROUP_TREES).max(axis=1)


def complete_groups(ens: Ensemble, complete: bool | None = None) -> np.ndarray | None:
    """The depths of the groups of complete trees that the walk lays out (``walk_arrays``
    with ``complete``: None, trees at most COMPLETE_MAX_DEPTH deep and at most
    COMPLETE_MAX_SLOTS slots per node; True, the depth alone; False, none), or None where it
    lays out none. A row walking them takes ``GROUP_TREES * depths.sum()`` steps, whatever
    its values."""
    if complete is False:
        return None
    try:
        level = node_levels(ens, COMPLETE_MAX_DEPTH)[0]
    except ValueError:          # too deep
        return None
    depths = group_depths(ens, level)
    n_trees = ens.trees.node_offset.shape[0] - 1
    in_group = np.minimum(GROUP_TREES, n_trees - GROUP_TREES * np.arange(depths.shape[0]))
    slots = int((in_group * ((1 << depths) - 1)).sum())       # the fill trees' left out
    return depths if complete or _few_slots(slots, level.shape[0]) else None


def _few_slots(slots: int, n_nodes: int) -> bool:
    """Whether complete trees of ``slots`` slots (the model's trees', not the fill trees')
    are laid out by default for a model of ``n_nodes`` nodes (COMPLETE_MAX_SLOTS)."""
    return slots <= COMPLETE_MAX_SLOTS * max(1, n_nodes)


def special_nodes(ens: Ensemble) -> tuple[int, int]:
    """The nodes the walk decides one by one before it starts (:func:`walk_arrays`'s special
    nodes): the categorical splits it decides by a table (``nodes.coded_categorical``) and
    the others (other categorical splits, NaN and +inf thresholds)."""
    special = np.flatnonzero(special_mask(ens))
    coded = int(np.count_nonzero(coded_categorical(ens, special)))
    return coded, special.shape[0] - coded


def expected_path(ens: Ensemble) -> float | None:
    """The internal nodes on a row's path, summed over the trees, as the training rows went
    (each node's cover over its tree's root's); None without covers."""
    if not ens.has_cover:
        return None
    node_cover = ens.trees.arrays["node_cover"]
    node_off = ens.trees.node_offset
    tree_of = np.repeat(np.arange(ens.n_trees), np.diff(node_off))   # each node's tree
    root = node_cover[node_off[:-1][tree_of]]
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.where(root > 0, node_cover / root, 0.0).sum())


def row_costs(ens: Ensemble, t: Tuning) -> dict:
    """A row's cost to the walk, in steps: ``path``, its expected path with
    ``t.coded_node_steps`` or ``t.special_node_steps`` for each special node (None without
    covers), and ``steps``, its steps through the complete trees eight at a time where the
    walk lays them out (``GROUP_TREES`` times each group's depth, ``t.group_coded_steps`` and
    ``t.group_special_steps`` a special node; else None), with ``float32`` (the complete
    trees are float32 slots)."""
    coded, other = special_nodes(ens)
    path = expected_path(ens)
    if path is not None:
        path += t.coded_node_steps * coded + t.special_node_steps * other
    groups = complete_groups(ens, t.walk_complete)
    steps = None if groups is None else (GROUP_TREES * int(groups.sum())
                                         + t.group_coded_steps * coded
                                         + t.group_special_steps * other)
    return {"path": path, "steps": steps, "float32": steps is not None and float32_slots(ens)}


def walk_block_starts(node_offset: np.ndarray, budget_bytes: int) -> np.ndarray:
    """Consecutive trees whose walk nodes (``NODE_DTYPE``, 24 bytes each) fit in
    ``budget_bytes``, at least one tree a block: the first tree of each block, then the
    number of trees (``_walk.block_starts``, one pass in C: it runs on a model file's first
    call)."""
    return _walk.block_starts(node_offset, int(budget_bytes))


def walk_arrays(ens: Ensemble, block_bytes: int | None = None,
                complete: bool | None = False) -> dict:
    """The walk's layout:

    - ``walk_table``: ``NODE_DTYPE`` records viewed as uint64 (3 words a row), the table
      the kernels read as it is (``_walk.walk_tables``; a model file's mapped, not copied):
      first a record for every leaf number of the trees (leaf ``l``'s ``l + 1`` rows before
      the first node: threshold +inf, both children itself, ``l`` in ``pad``, where a
      cursor that reached leaf ``l`` stays), then the trees' nodes one tree after the other
      (tree ``t``'s from node ``node_offset[t]``, its root first), each tree's in
      depth-first preorder (``_walk.preorder``): a node tests ``xr[col] > thr`` and goes to
      ``kid[1]`` if so, else ``kid[0]``; a child is the byte offset of its row from the
      first node's: a node's (always later in the table), or leaf ``l``'s record (``(-1 -
      l) * 24``). Preorder rather than the canonical breadth-first order keeps a subtree in
      one run of memory, which pays where the table outgrows the L2 cache (full 255-leaf
      trees; ``python -m benchmarks.tuning.one_row``). Then two sentinels: a node whose
      children are both leaf 0 (the root of a tree that is one leaf) and the last node,
      whose children are itself (where a cursor with no trees left circles);
    - ``roots`` (int32, n_trees + 8): each tree's root, then the last node eight times
      (``_walk.WalkLayout`` appends eight more: a cursor on tree ``t`` reads its next
      tree's root, ``roots[t + 8]``, before each step, up to index n_trees + 15);
    - ``node_offset`` (int64, n_trees + 1): each tree's first canonical node;
    - ``fill_cols`` (int32): the (rule, feature) pairs ``rule * n_features + feature`` that
      some node reads, in increasing order: column ``i`` of the expanded row is pair
      ``fill_cols[i]``'s (a node's ``col``), so the row holds those alone;
    - the special nodes, those that read a column of their own, ``len(fill_cols) + j``
      for the j-th, set to -inf (left) or +inf (right) by the node's own decision:
      categorical splits, and thresholds that are NaN or +inf (where +inf could not stand
      for "right"). Their canonical fields (``feature``, ``threshold``, ``flags``,
      ``cat_offset``, ``cat_nwords``, ``cat_words``, as :func:`node_arrays` has them) are
      kept for those nodes only, in column order;
    - ``block_starts`` (int64): the tree blocks of calls of many rows
      (:func:`walk_block_starts` of ``block_bytes``; one block without it), whose rows are
      walked a chunk at a time through each block while its nodes stay in cache;
    - the complete trees of :func:`complete_arrays`, which the chunks of rows walk instead
      where ``complete`` is True (where it can: trees at most COMPLETE_MAX_DEPTH deep), or
      None and the trees hold at most COMPLETE_MAX_SLOTS slots per node; empty otherwise.
      On an XGBoost model whose thresholds are all float32 values their slots are
      ``CNODE32_DTYPE`` (one word each), their thresholds' order keys compared with the
      keys of the rows' float32 values: the same decisions (XGBoost's rows are float32; the
      expanded values +-inf or 0) in half the bytes, by an integer compare;
    - ``special_table`` (int32, one per special node): for a categorical node whose
      categories are all below ``nodes.CAT_CODES`` (``nodes.coded_categorical``),
      its row of ``special_tables``
      (uint8, 32 bytes a row: bit ``c % 8`` of byte ``c // 8`` set where a value of code ``c``,
      ``nodes.CAT_*``, goes right), so that expanding a row costs such a node a code and a
      bit, without a branch on its side (the others, -1, keep the node's own rule).
    """
    a = node_arrays(ens)
    F = ens.n_features
    n = a["feature"].shape[0]
    flags = a["flags"]
    thr = a["threshold"].copy()
    special = special_mask(ens)
    n_special = int(special.sum())
    pair = (_rules(ens, flags).astype(np.int64) * F + a["feature"]).astype(np.int64)
    fill_cols = np.unique(pair[~special])
    col = np.searchsorted(fill_cols, pair)
    col[special] = fill_cols.shape[0] + np.arange(n_special)
    thr[special] = 0.0
    offsets = a["node_offset"]
    n_trees = offsets.shape[0] - 1
    first = np.repeat(offsets[:-1], np.diff(offsets))
    # table row of each canonical node: each tree's nodes in depth-first preorder
    place = _walk.preorder(a["left"], a["right"], offsets)
    nodes = np.zeros(n + 2, NODE_DTYPE)
    nodes["thr"][place] = thr
    nodes["col"][place] = col
    for side, kids in enumerate((a["left"], a["right"])):
        nodes["kid"][place, side] = np.where(kids >= 0, place[first + np.maximum(kids, 0)],
                                             kids)
    if n + 2 >= 2 ** 31:
        raise ValueError(f"walk: a model of {n} nodes is too large for the walk's int32 nodes")
    nodes["thr"][n:] = np.inf            # never right: the value is not NaN, only finite or inf
    nodes["kid"][n] = -1                 # ~0: leaf 0
    nodes["kid"][n + 1] = n + 1
    roots = np.full(n_trees + 8, n + 1, np.int32)
    roots[:n_trees] = np.where(np.diff(offsets) > 0, offsets[:-1], n)
    out = {name: np.ascontiguousarray(a[name][special])
           for name in ("feature", "threshold", "flags", "cat_offset", "cat_nwords")}
    canon = np.flatnonzero(special)              # column order
    tabled = coded_categorical(ens, canon)
    table = np.full(n_special, -1, np.int32)
    table[tabled] = np.arange(int(tabled.sum()), dtype=np.int32)
    goes_right = ~codes_going_left(ens, canon[tabled])
    out.update(
        special_table=table,
        special_tables=np.packbits(goes_right, axis=1, bitorder="little").reshape(-1),
        cat_words=a["cat_words"],
        node_offset=offsets,
        walk_table=_walk.walk_tables(nodes.view(np.uint64), roots)[0],
        roots=roots,
        fill_cols=fill_cols.astype(np.int32),
        block_starts=(np.array([0, n_trees], np.int64) if block_bytes is None
                      else walk_block_starts(offsets, block_bytes)),
        **no_complete_fields(),
    )
    if complete is not False:
        try:
            full = complete_arrays(ens, col, thr)
        except ValueError:          # too deep
            full = None
        if full is not None and (complete or _few_slots(int(full["cnode_offset"][-1]), n)):
            out.update(full)
            cn = full["cnodes"].view(CNODE_DTYPE)
            if float32_slots(ens):
                c32 = np.zeros(cn.shape[0], CNODE32_DTYPE)
                c32["key"], c32["col"] = float32_keys(cn["thr"]), cn["col"]
                out["cnodes"] = c32.view(np.uint64)
    return out


class Walk(Algorithm):
    """Eight root-to-leaf walks interleaved, branch-free, one row at a time; chunks of rows
    through tree blocks, or complete trees, for calls of many rows."""

    name = "walk"
    test_vector = "node by node on the path, eight trees interleaved without branches"
    small_calls = True
    # a row pays for the steps of its path (on complete trees a fixed number a group of
    # eight), against the false nodes a scan pays for: the families meet where the tuning
    # table's ratios put them, and at a tie the walk runs
    regimes = ("one_row", "few_rows")
    tie_rank = 0

    @classmethod
    def facts(cls, ens: Ensemble, t: Tuning) -> dict:
        return row_costs(ens, t)

    @classmethod
    def cost(cls, regime: str, facts, t: Tuning) -> float | None:
        steps, path = facts.steps, facts.path
        if regime == "one_row":
            if steps is not None:
                return t.group_walk_min_ratio * steps
            if path is None:
                return None
            return t.walk_min_ratio * path if path > 0 or t.walk_min_ratio <= 0 else None
        if regime == "few_rows" and path is not None:
            if steps is not None:
                return 0.0 if t.group_few_rows_keys and facts.float32 else (
                    t.group_few_rows_ratio * steps)
            return t.few_rows_walk_ratio * path if path > 0 else None
        return None

    @classmethod
    def first_rows(cls, before: str, facts, t: Tuning) -> int:
        return t.vqs_min_rows

    def __init__(self, ens: Ensemble, forest: Forest, tuning: Tuning | None = None,
                 block_bytes: int | None = None, chunk_rows: int | None = None,
                 complete: bool | None = None):
        super().__init__(ens, forest, tuning)
        t = self.tuning
        # complete trees (walk_arrays), which one row walks eight trees at a time and the
        # chunks of many rows tree by tree: True where the trees are shallow enough, False
        # never; None (Tuning.walk_complete's default) where they also hold at most
        # COMPLETE_MAX_SLOTS slots per node
        if complete is None:
            complete = t.walk_complete
        # a copy: the record's own dict stays as it was
        arrays = dict(prepared.built(ens, "walk_arrays", (complete,),
                                     lambda: walk_arrays(ens, None, complete)))
        # a model file's record: its trees must be the ensemble's, whose leaves the walk's
        # leaf numbers index (the table's check bounds each leaf by its tree's nodes)
        if not np.array_equal(arrays["node_offset"], ens.trees.node_offset):
            raise ValueError("walk layout field 'node_offset' is not the trees' offsets")
        #: whether the chunks of rows walk complete trees (complete_arrays)
        self.complete = arrays["cdepth"].shape[0] > 0
        #: walk nodes per tree block of the calls of BLOCKED_MIN_ROWS rows a thread or more
        self.block_bytes = (block_bytes or t.walk_block_bytes
                            or default_block_bytes(self.complete))
        arrays["block_starts"] = walk_block_starts(arrays["node_offset"], self.block_bytes)
        self._arrays = arrays
        self.layout = _walk.WalkLayout(arrays, ens.n_features)
        # one or two rows add their leaves' values group by group (one output, no linear
        # leaves): the layout takes each end slot's value from this forest
        self.layout.attach_values(forest)
        #: rows a thread walks through each tree block together
        self.chunk_rows = chunk_rows or t.walk_chunk_rows
        if not self.chunk_rows:
            fit = 2 * l2_cache_bytes() // (8 * self.layout.chunk_row_words)
            self.chunk_rows = int(min(CHUNK_ROWS_COMPLETE if self.complete else CHUNK_ROWS,
                                      max(16, fit)))

    def describe(self) -> dict:
        return {"walk_few_rows": self.few_rows, "walk_many_rows": self.many_rows}

    @property
    def few_rows(self) -> str:
        """How calls of fewer than BLOCKED_MIN_ROWS rows a thread walk, in words
        (``Model.info``)."""
        if self.complete:
            kind = f"complete trees{' (float32)' if self.layout.cfloat else ''}"
            if self.layout.slot_values is None:       # leaves stored, then summed
                return f"{kind}, eight trees at a time, two rows together through the "\
                       f"low-latency entry"
            return (f"{kind}, leaf values added group by group, one row sixteen trees at a "
                    f"time where two groups share a depth (else eight), two rows together "
                    f"through the low-latency entry")
        return "eight trees a row, interleaved"

    @property
    def many_rows(self) -> str:
        """How calls of BLOCKED_MIN_ROWS rows a thread or more walk, in words
        (``Model.info``)."""
        if self.complete:
            below = "eight trees a row" if self.layout.n_blocks > 1 else "row by row"
            how = (f"complete trees{' (float32)' if self.layout.cfloat else ''}, tree by tree, "
                   f"from {COMPLETE_MIN_ROWS} rows a thread ({below} below)")
        elif self.layout.n_blocks > 1:
            how = "eight trees a row"
        else:
            return "row by row (the model is one tree block)"
        return (f"from {BLOCKED_MIN_ROWS} rows a thread, {self.chunk_rows} rows at a time "
                f"through {self.layout.n_blocks} tree block(s), {how}")

    def _chunk_scratch(self, n_threads: int) -> np.ndarray:
        return self.scratch("chunk", n_threads, self.chunk_rows * self.layout.chunk_row_words)

    def _complete_for(self, X, n_threads: int) -> bool:
        """Whether a call walks the complete trees (COMPLETE_MIN_ROWS)."""
        return self.complete and X.shape[0] >= COMPLETE_MIN_ROWS * max(1, n_threads)

    def _blocked(self, X, n_threads: int) -> bool:
        """Whether a call walks chunks of rows through the tree blocks (BLOCKED_MIN_ROWS)."""
        return (X.shape[0] >= BLOCKED_MIN_ROWS * max(1, n_threads)
                and (self.layout.n_blocks > 1 or self._complete_for(X, n_threads)))

    def predict_raw(self, X, out64, out32, n_threads: int) -> None:
        if not self._blocked(X, n_threads):
            return super().predict_raw(X, out64, out32, n_threads)
        _RAW[X.dtype](self.forest, self.layout, X, out64, out32, self._chunk_scratch(n_threads),
                      n_threads, self.chunk_rows, self._complete_for(X, n_threads))

    def predict_leaf(self, X, out, n_threads: int) -> None:
        if not self._blocked(X, n_threads):
            return super().predict_leaf(X, out, n_threads)
        _LEAF[X.dtype](self.forest, self.layout, X, out, self._chunk_scratch(n_threads),
                       n_threads, self.chunk_rows, self._complete_for(X, n_threads))


_RAW = Algorithm.specialised(_walk.predict_raw_blocked)
_LEAF = Algorithm.specialised(_walk.predict_leaf_blocked)
