"""RapidScorer's level path: depth-wise trees walked level by level in registers.

Where every tree is at most ``LEVELS_MAX_DEPTH`` deep and numeric, the layout can also hold
each tree level by level, and the kernel walks a group's lanes down the levels: a node compares
its column of ranks with its threshold index where the lanes stand at its position (on AVX2 a
node blends its column into those lanes, and the level compares once with the thresholds of
``lv_table``), with no byte rows written and no exit leaf searched. A tree's levels from its
first one of more than ``LEVELS_LANE_NODES`` nodes (from level ``LEVELS_BYTE`` at the latest:
positions are bytes) go lane by lane instead, each lane reading the node at its position in
those levels held complete (``lv_deep``).

Its cost follows the nodes plus a step per level, where the scans' follows the bytes the
nodes' masks span, so it pays on full depth-wise trees (XGBoost's) and loses on small ones;
:func:`levels_choice` decides from the nodes per level. A model whose trees have more than 256
leaves has no scans at all: the level path alone scores it
(``rapidscorer.layout.levels_only_arrays``); beside the scans only trees at most
``LEVELS_SCANS_MAX_DEPTH`` deep walk their levels.
"""
from __future__ import annotations

import numpy as np

from ...ir.ensemble import Ensemble
from ..nodes import node_levels
from ..qs.layout import SEGMENT_NAN
from .ranks import MAX_THRESHOLDS, SENTINEL_THR

#: the level-by-level path (:func:`level_arrays`) takes trees of at most this depth
LEVELS_MAX_DEPTH = 10

#: a lane's position in the levels walked node by node is a byte: they stop at this level
#: (positions below 256) at the latest, the levels below it go lane by lane
LEVELS_BYTE = 8

#: level ends a tree (``lv_level_end``)
LEVELS_ENDS = LEVELS_MAX_DEPTH

#: beside the scans (models whose trees have at most 256 leaves), the level path takes trees
#: of at most this depth: deeper ones walk levels 8 and 9 lane by lane whatever their nodes,
#: which loses to the scans on depth-limited LightGBM trees; ``python -m benchmarks.matrix
#: --shapes full-uniform-1000x31-d9,full-uniform-1000x64-d10 --algorithms rapidscorer``
#: beside ``python -m benchmarks.tuning.rs_level_sweep --setting rs_levels --values 0,1``
LEVELS_SCANS_MAX_DEPTH = LEVELS_BYTE

#: a tree's levels go lane by lane from the first one of more than this many nodes
#: (``Tuning.rs_lane_nodes`` is the switch; this the default of the layout functions): a level
#: that wide costs a group about the same walked node by node or lane by lane;
#: ``python -m benchmarks.tuning.rs_level_sweep --values 48,64,96,128``
LEVELS_LANE_NODES = 64

#: the automatic choice (:func:`levels_choice`) walks a model level by level where its trees
#: hold at least LEVELS_MIN_RATIO nodes a level on average, and in groups of 32 lanes too
#: (calls of fewer than 33 rows a thread) from LEVELS_NARROW_RATIO: the level path's cost
#: follows the nodes plus a step a level, so narrow trees keep the scans;
#: ``python -m benchmarks.tuning.rs_level_sweep --setting rs_levels --values 0,1 --models
#: xgb-depth4-heavy-1000,xgb-depth5-heavy-1000,xgb-depth5-uniform-1000,xgb-depth6-heavy-1000,
#: xgb-depth6-uniform-1000,cb-d6-uniform-1000-depthwise,full-uniform-1000x8
#: --rows 9,16,32,100,10000`` (figures: the report pages, under LEVELS_MIN_RATIO)
LEVELS_MIN_RATIO = 3.0
LEVELS_NARROW_RATIO = 6.0

#: lv_nodes record: the column (rank slot, or slot with its missing lanes sent to a side)
#: the node reads, its threshold index (right where the column's rank exceeds it) and its
#: position in its level
LV_NODE_DTYPE = np.dtype([("col", "<u2"), ("thr", "u1"), ("pos", "u1")])

#: ``lv_table``: each tree's threshold indices of its levels above the split, biased by 0x80
#: (AVX2 compares signed bytes), level ``l`` a table of max(16, 2^l) bytes by position, at
#: ``LEVEL_TABLE_AT[l]`` in the tree's tables (``LEVEL_TABLE_AT[split]`` bytes in all); a
#: position without a node holds 0x7F (255 biased), which no biased rank exceeds
LEVEL_TABLE_AT = np.concatenate([[0], np.cumsum(np.maximum(16, 1 << np.arange(LEVELS_BYTE)))])

#: the table byte of a position without a node
LEVEL_TABLE_EMPTY = SENTINEL_THR ^ 0x80

def levels_only_refusal(ens: Ensemble) -> str | None:
    """Why the level path cannot score ``ens`` by itself (:func:`levels_only_arrays`), or
    None when it can: numerical splits only, no linear trees, no NaN threshold, trees at
    most LEVELS_MAX_DEPTH deep."""
    if ens.has_categorical:
        return "categorical splits"
    if ens.has_linear:
        return "linear trees"
    if np.isnan(np.asarray(ens.trees.arrays["threshold"], np.float64)).any():
        return "a NaN threshold"
    try:
        node_levels(ens, LEVELS_MAX_DEPTH)
    except ValueError as exc:
        return str(exc)
    return None

def no_level_fields() -> dict:
    """The level fields of a layout without the level-by-level path."""
    return {"lv_nodes": np.zeros(0, np.uint32), "lv_node_offset": np.zeros(1, np.int64),
            "lv_level_end": np.zeros(0, np.uint16), "lv_depth": np.zeros(0, np.uint8),
            "lv_split": np.zeros(0, np.uint8), "lv_deep": np.zeros(0, np.uint32),
            "lv_deep_offset": np.zeros(1, np.int64), "lv_block_starts": np.zeros(1, np.int64),
            "lv_slot_offset": np.zeros(1, np.int64), "lv_slot_leaf": np.zeros(0, np.uint16),
            "lv_value": np.zeros(0, np.float64), "lv_value_f32": np.zeros(0, np.float32),
            "lv_combos": np.zeros(0, np.int32), "lv_table": np.zeros(0, np.uint8),
            "lv_table_offset": np.zeros(1, np.int64)}

def level_arrays(ens: Ensemble, slot_column: np.ndarray, rank_offsets: np.ndarray,
                 rank_thresholds: np.ndarray, lane_nodes: int = LEVELS_LANE_NODES,
                 max_depth: int = LEVELS_MAX_DEPTH) -> dict:
    """The level-by-level path's fields: every tree of depth ``d <= max_depth`` as
    its levels, a lane's position ``p`` in level ``l`` going to ``2 p`` or ``2 p + 1`` in the
    next (the node at position ``p`` sends it right when its rank exceeds the node's
    threshold index; a position without a node, below a leaf, sends it left), so that a
    lane ends at slot ``P < 2^d`` of level ``d``: a leaf reached at level ``l`` and
    position ``p`` is slot ``p << (d - l)``. A tree's levels above its ``split`` (the
    first level of more than ``lane_nodes`` nodes, at most LEVELS_BYTE) are walked node by
    node for all lanes, those below lane by lane in complete form (rapidscorer/levels.h).

    - ``lv_nodes`` (LV_NODE_DTYPE as uint32): each tree's nodes above its split, level by
      level, by position; ``lv_node_offset`` (n_trees + 1) where each tree's start;
      ``lv_level_end`` (uint16, LEVELS_ENDS a tree): the nodes of levels up to ``l``;
      ``lv_depth``, ``lv_split`` (uint8);
    - ``lv_table`` (uint8) and ``lv_table_offset`` (n_trees + 1): the same nodes' threshold
      indices as tables by position, a level at a time (LEVEL_TABLE_AT), where a level
      walked node by node reads them (the AVX2 walk: one compare a level and lane, the
      nodes only choosing each lane's column);
    - ``lv_deep`` (LV_NODE_DTYPE as uint32, ``pos`` 0) and ``lv_deep_offset`` (n_trees + 1):
      each tree's levels from its split down, complete: level ``l``'s position ``p`` at
      ``2^l - 2^split + p``, a position without a node holding threshold index 255 (no rank
      exceeds it: left) and column 0;
    - ``lv_slot_offset`` (n_trees + 1; tree ``t`` has ``2^d`` slots), ``lv_slot_leaf`` (the
      tree's own number of the leaf each slot stands for, uint16; 0 for slots no lane
      reaches),
      ``lv_value`` (its value, float64; LightGBM models) or ``lv_value_f32`` (float32;
      XGBoost models, whose sums are float32);
    - ``lv_combos`` (int32): the columns past the ``S`` rank slots, ``slot | kind << 24 |
      right << 30``: slot ``slot``'s ranks with the lanes segment kind ``kind`` treats as
      missing set to 255 (``right``: the default side is right) or 0.

    Raises ValueError, saying why, for a model the path cannot score: categorical splits,
    linear trees, a tree deeper than ``max_depth`` (at most LEVELS_MAX_DEPTH), a threshold
    not in its feature's rank table (NaN).
    """
    if ens.has_categorical:
        raise ValueError("categorical splits")
    if ens.has_linear:
        raise ValueError("linear trees")
    node_offset = np.asarray(ens.trees.node_offset, np.int64)
    n_trees = node_offset.shape[0] - 1
    level, pos, leaf_level, leaf_pos = node_levels(ens, min(max_depth, LEVELS_MAX_DEPTH))
    tree_of_node = np.repeat(np.arange(n_trees), np.diff(node_offset))
    depth = np.zeros(n_trees, np.int64)
    np.maximum.at(depth, tree_of_node, level + 1)
    col, thr, combos = _node_columns(ens, slot_column, rank_offsets, rank_thresholds)
    # each tree's split: its first level of more than lane_nodes nodes, at most LEVELS_BYTE
    counts = np.zeros((n_trees, LEVELS_ENDS), np.int64)
    np.add.at(counts, (tree_of_node, level), 1)
    busy = np.column_stack([counts > lane_nodes, np.ones(n_trees, bool)])
    split = np.minimum(np.minimum(np.argmax(busy, axis=1), LEVELS_BYTE), depth)
    upper = level < split[tree_of_node]
    order = np.lexsort((pos, level, tree_of_node))
    order = order[upper[order]]
    nodes = np.zeros(order.shape[0], LV_NODE_DTYPE)
    nodes["col"] = col[order]
    nodes["thr"] = thr[order].astype(np.uint8)
    nodes["pos"] = pos[order]
    table_off = np.zeros(n_trees + 1, np.int64)
    np.cumsum(LEVEL_TABLE_AT[split], out=table_off[1:])
    table = np.full(int(table_off[-1]), LEVEL_TABLE_EMPTY, np.uint8)
    t_up = tree_of_node[order]
    table[table_off[t_up] + LEVEL_TABLE_AT[level[order]] + pos[order]] = nodes["thr"] ^ 0x80
    counts[np.arange(LEVELS_ENDS)[None, :] >= split[:, None]] = 0
    level_end = np.cumsum(counts, axis=1)
    node_off = np.zeros(n_trees + 1, np.int64)
    np.cumsum(level_end[:, -1], out=node_off[1:])
    deep_off = np.zeros(n_trees + 1, np.int64)
    np.cumsum(np.left_shift(1, depth) - np.left_shift(1, split), out=deep_off[1:])
    deep = np.zeros(int(deep_off[-1]), LV_NODE_DTYPE)
    deep["thr"] = SENTINEL_THR
    low = ~upper
    t_low = tree_of_node[low]
    at = deep_off[t_low] + np.left_shift(1, level[low]) - np.left_shift(1, split[t_low]) + pos[low]
    deep["col"][at] = col[low]
    deep["thr"][at] = thr[low].astype(np.uint8)
    slot_offset, slot_leaf, value = _level_slots(ens, depth, leaf_level, leaf_pos)
    xgb = ens.family == "xgboost"      # summed in float32: no float64 copy kept
    return {"lv_nodes": nodes.view(np.uint32), "lv_node_offset": node_off,
            "lv_level_end": level_end.astype(np.uint16).reshape(-1),
            "lv_depth": depth.astype(np.uint8), "lv_split": split.astype(np.uint8),
            "lv_deep": deep.view(np.uint32), "lv_deep_offset": deep_off,
            "lv_block_starts": np.array([0, n_trees], np.int64),
            "lv_slot_offset": slot_offset,
            "lv_slot_leaf": slot_leaf,
            "lv_value": np.zeros(0, np.float64) if xgb else value,
            "lv_value_f32": value.astype(np.float32) if xgb else np.zeros(0, np.float32),
            "lv_combos": combos.astype(np.int32),
            "lv_table": table, "lv_table_offset": table_off}

def _node_columns(ens: Ensemble, slot_column, rank_offsets, rank_thresholds):
    """Each node's column (its rank slot, or past the ``S`` slots the slot with its missing
    lanes sent to a side: ``lv_combos``) and its threshold index in that slot, in the rank
    slots of rapidscorer.layout. Raises ValueError for a threshold not in its feature's rank
    table, or more columns than the path holds."""
    packed = ens.trees.arrays
    S = int(slot_column.shape[0])
    n_nodes = int(ens.trees.node_offset[-1])
    feature = np.asarray(packed["feature"], np.int64)
    threshold = np.asarray(packed["threshold"], np.float64)
    slot_base = np.searchsorted(slot_column, np.arange(ens.n_features + 1), side="left")
    first = rank_offsets[slot_base[feature]]
    # each node's threshold among its feature's, in one search: the tables are sorted by
    # (feature, threshold), which complex numbers compare in that order, exactly
    table = np.empty(rank_thresholds.shape[0], np.complex128)
    table.real = np.repeat(slot_column, np.diff(rank_offsets))
    table.imag = rank_thresholds          # (assigned: 1j * inf would be nan + inf j)
    key = np.empty(n_nodes, np.complex128)
    key.real = feature
    key.imag = threshold
    at = np.searchsorted(table, key)
    if n_nodes and ((at >= table.shape[0])
                    | (table[np.minimum(at, max(0, table.shape[0] - 1))] != key)).any():
        raise ValueError("a node's threshold is not in its feature's rank table")
    j = at - first
    slot = slot_base[feature] + j // MAX_THRESHOLDS
    if ens.family == "xgboost":
        kind = np.full(n_nodes, SEGMENT_NAN, np.int64)
    else:
        kind = np.asarray(packed["missing_type"], np.int64)
    go_right = (np.asarray(packed["default_left"]).view(np.uint8) == 0).astype(np.int64)
    code = np.where(kind == 0, -1, slot | (kind << 24) | (go_right << 30))
    combos, inv = np.unique(code[kind != 0], return_inverse=True)
    col = slot.copy()
    col[kind != 0] = S + inv
    if S + combos.shape[0] > 65536:
        raise ValueError("too many columns for the level-by-level path")
    return col, j % MAX_THRESHOLDS, combos


def _level_slots(ens: Ensemble, depth, leaf_level, leaf_pos):
    """Each tree's ``2^depth`` end slots (offsets), the tree's own number of the leaf each
    stands for and its value (float64)."""
    leaf_offset = np.asarray(ens.trees.leaf_offset, np.int64)
    n_trees = leaf_offset.shape[0] - 1
    slot_offset = np.zeros(n_trees + 1, np.int64)
    np.cumsum(np.left_shift(1, depth), out=slot_offset[1:])
    tree_of_leaf = np.repeat(np.arange(n_trees), np.diff(leaf_offset))
    leaf_slot = slot_offset[tree_of_leaf] + (leaf_pos << (depth[tree_of_leaf] - leaf_level))
    slot_leaf = np.zeros(int(slot_offset[-1]), np.uint16)
    slot_leaf[leaf_slot] = np.arange(leaf_offset[-1]) - leaf_offset[tree_of_leaf]
    value = np.zeros(int(slot_offset[-1]), np.float64)
    value[leaf_slot] = np.asarray(ens.trees.arrays["leaf_value"], np.float64)
    return slot_offset, slot_leaf, value


def level_ratio(arrays: dict) -> float:
    """A layout's nodes per level of its trees (0 without the level fields): those walked
    node by node and the deep records' real nodes (a threshold index below 255)."""
    levels = int(np.sum(arrays["lv_depth"], dtype=np.int64))
    deep = int(np.count_nonzero(arrays["lv_deep"].view(LV_NODE_DTYPE)["thr"] != SENTINEL_THR))
    return (int(arrays["lv_node_offset"][-1]) + deep) / levels if levels else 0.0

def levels_choice(arrays: dict, levels) -> int:
    """The fewest lanes a group walks the layout's levels with (64 or 32; 0: never), for
    ``levels`` True (every group, where the fields exist), False, or None (automatic:
    LEVELS_MIN_RATIO and LEVELS_NARROW_RATIO)."""
    if levels is False or arrays["lv_depth"].shape[0] == 0:
        return 0
    if levels is True:
        return 32
    ratio = level_ratio(arrays)
    return 0 if ratio < LEVELS_MIN_RATIO else (32 if ratio >= LEVELS_NARROW_RATIO else 64)
