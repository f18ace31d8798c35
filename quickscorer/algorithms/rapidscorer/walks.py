"""RapidScorer's gathered walk: each lane of a group walks its own row down every tree, a node
a step, reading its node and its rank by AVX-512 gathers (``rapidscorer/gw.h``).

A lane's steps follow its exit leaves' depths, where the scans' work follows the thresholds
a group's lanes pass and the level path's the deepest leaf, so the walk pays on deep,
leaf-wise trees; it reads the level path's columns (the ranks, and the ranks with a node's
missing lanes sent to its default side), so its sums are the scans': float64, tree order.
A model gets its fields where :func:`walk_cost_ratio` is below GW_MAX_RATIO (or where
``Tuning.rs_gathered`` is True); ``rs_gw_default`` (an Intel core with AVX-512) or
``Tuning.rs_gathered`` decides which calls take it.
"""
from __future__ import annotations

import numpy as np

from ...ir.ensemble import Ensemble
from ..nodes import node_levels
from .levels import _node_columns

#: an internal record's upper word is at least this (gw.h RS_GW_INNER): a NaN pattern no
#: finite leaf value has
GW_INNER = 0xFFF00000

#: the columns (rank slots and combos) a record can name (gw.h RS_GW_COLS)
GW_COLS = 4096

#: the cost model that decides which models get the walk's fields (:func:`walk_pays`), in ns
#: a document on an Intel Xeon (family 6, model 167 as its guest reports it) at 10,000 rows,
#: fitted to full 31- to 255-leaf trees, LightGBM's binary and ranking examples and partial
#: 16-leaf trees, whose ratios it gave within 0.1 but one (2.9 against 3.7): a step of the
#: walk (a leaf's depth plus one), an entry of the scans (the layout's over 64 lanes) and a
#: tree's exit and leaf; ``python -m benchmarks.tuning.rs_level_sweep --setting rs_gathered
#: --values 0,1 --models full-uniform-1000x64,full-uniform-1000x127,full-uniform-1000x255,
#: shared-binary-500x255,shared-rank-1000x63 --rows 100,10000`` re-measures the ratios
GW_STEP_NS, GW_ENTRY_NS, GW_TREE_NS = 0.70, 1.83, 0.90

#: the walk's fields where its cost is below this share of the scans' (a margin for the call
#: sizes below 10,000 rows, where it gains less)
GW_MAX_RATIO = 0.9


def no_walk_fields() -> dict:
    """The gathered walk's fields of a layout without it."""
    return {"gw_nodes": np.zeros(0, np.uint64), "gw_roots": np.zeros(0, np.int32),
            "gw_combos": np.zeros(0, np.int32)}


def walk_refusal(ens: Ensemble) -> str | None:
    """Why ``ens`` cannot take the gathered walk (None: it can): one output summed in
    float64, no categorical split or linear tree, finite leaf values."""
    if ens.n_outputs != 1:
        return "more than one output"
    if ens.family == "xgboost":
        return "float32 sums"
    if ens.has_categorical or ens.has_linear:
        return "categorical splits or linear trees"
    if ens.n_trees == 0:
        return "no trees"
    if not np.isfinite(np.asarray(ens.trees.arrays["leaf_value"], np.float64)).all():
        return "a leaf value that is not finite"
    return None


def walk_steps(ens: Ensemble) -> float:
    """A document's steps through all the trees on the walk: each tree's mean exit depth
    plus one, its leaves weighted by their covers where the model has them (the training
    rows each leaf took), else alike (deep leaves, which take few rows, then weigh more)."""
    node_offset = np.asarray(ens.trees.node_offset, np.int64)
    leaf_offset = np.asarray(ens.trees.leaf_offset, np.int64)
    _, _, leaf_level, _ = node_levels(ens, 1 << 20)
    tree_of_leaf = np.repeat(np.arange(node_offset.shape[0] - 1), np.diff(leaf_offset))
    cover = ens.trees.arrays["leaf_cover"]
    w = (np.ones(leaf_level.shape[0]) if cover is None
         else np.asarray(cover, np.float64) + 1e-12)
    total = np.bincount(tree_of_leaf, w, minlength=ens.n_trees)
    depth = np.bincount(tree_of_leaf, w * leaf_level, minlength=ens.n_trees)
    return float(np.sum(depth / np.maximum(total, 1e-300) + 1.0))


def walk_cost_ratio(ens: Ensemble, n_entries: int) -> float:
    """The walk's cost over the scans' by the model above GW_MAX_RATIO, for a layout of
    ``n_entries`` scan entries."""
    scan = GW_ENTRY_NS * n_entries / 64 + GW_TREE_NS * ens.n_trees
    return GW_STEP_NS * walk_steps(ens) / max(scan, 1e-9)


def walk_arrays(ens: Ensemble, slot_column: np.ndarray, rank_offsets: np.ndarray,
                rank_thresholds: np.ndarray) -> dict:
    """The gathered walk's fields of ``ens`` in the rank slots of rapidscorer.layout:

    - ``gw_nodes`` (uint64): each tree's records breadth first, a node's two children side
      by side after it; an internal node ``(GW_INNER | thr << 12 | col) << 32 | left``
      (``col``: its column, ``thr``: its threshold index, ``left``: its left child's record,
      the right child's the next), a leaf its float64 value's bits; last, the park record
      (its own left child, threshold 255);
    - ``gw_roots`` (int32, a tree): each tree's first record;
    - ``gw_combos`` (int32): the columns past the ``S`` rank slots, as the level path's
      ``lv_combos``.

    Raises ValueError, saying why, for a model the walk cannot take (:func:`walk_refusal`)
    or whose columns pass GW_COLS."""
    why = walk_refusal(ens)
    if why is not None:
        raise ValueError(why)
    col, thr, combos = _node_columns(ens, slot_column, rank_offsets, rank_thresholds)
    if int(slot_column.shape[0]) + combos.shape[0] > GW_COLS:
        raise ValueError(f"more than {GW_COLS} columns")
    packed = ens.trees.arrays
    node_offset = np.asarray(ens.trees.node_offset, np.int64)
    leaf_offset = np.asarray(ens.trees.leaf_offset, np.int64)
    left = np.asarray(packed["left"], np.int64)
    right = np.asarray(packed["right"], np.int64)
    n_nodes, n_leaves = np.diff(node_offset), np.diff(leaf_offset)
    T = n_nodes.shape[0]
    first = np.zeros(T + 1, np.int64)
    np.cumsum(n_nodes + n_leaves, out=first[1:])
    records = np.zeros(int(first[-1]) + 1, np.uint64)
    upper = GW_INNER | (thr.astype(np.int64) << 12) | col.astype(np.int64)
    value_bits = np.asarray(packed["leaf_value"], np.float64).view(np.uint64)
    # level by level over all trees: the frontier's records (in order within each tree), the
    # packed node (>= 0) or ~leaf each holds, and its tree
    tree = np.arange(T)
    at = first[:-1].copy()
    item = np.where(n_nodes > 0, node_offset[:-1], ~leaf_offset[:-1])
    free = first[:-1] + 1                      # each tree's next free record
    while tree.shape[0]:
        leaf = item < 0
        records[at[leaf]] = value_bits[~item[leaf]]
        inner = ~leaf
        t, a, n = tree[inner], at[inner], item[inner]
        # the k-th internal record of a tree in this level takes the two records at
        # free + 2 k for its children
        counts = np.bincount(t, minlength=T)
        start = np.zeros(T + 1, np.int64)
        np.cumsum(counts, out=start[1:])
        k = np.arange(t.shape[0]) - start[t]
        kid = free[t] + 2 * k
        records[a] = (upper[n].astype(np.uint64) << np.uint64(32)) | kid.astype(np.uint64)
        free += 2 * counts
        base_n, base_l = node_offset[t], leaf_offset[t]

        def child(c):
            return np.where(c >= 0, base_n + c, ~(base_l + ~c))

        tree = np.repeat(t, 2)
        at = np.stack([kid, kid + 1], 1).reshape(-1)
        item = np.stack([child(left[n]), child(right[n])], 1).reshape(-1)
    park = records.shape[0] - 1
    records[park] = (np.uint64(GW_INNER | 255 << 12) << np.uint64(32)) | np.uint64(park)
    return {"gw_nodes": records, "gw_roots": first[:-1].astype(np.int32),
            "gw_combos": combos.astype(np.int32)}
