"""The RapidScorer layout (Ye et al., KDD 2018), built once per model from QuickScorer's
arrays (:mod:`~quickscorer.algorithms.qs.layout`) of its nodes split into half-features.

Three changes to QuickScorer's layout let one SIMD instruction serve 32 or 64 documents:

* **bytes, transposed**: a tree of ``L`` leaves keeps ``ceil(L / 8)`` bytes of bitvector per
  document (leaf ``i`` is bit ``i % 8`` of byte ``i // 8``), and the kernel stores byte ``b``
  of all documents of a group side by side, so one register holds that byte for 32 (AVX2) or
  64 (AVX-512) documents;
* **epitomes**: a node clears the contiguous leaf range of its first subtree, so its mask
  changes a run of bytes only; an entry is one changed byte (``byte``, its AND ``mask``), so
  a node has as many entries as its run has bytes and the scan never branches on a run's
  length;
* **ranks** (:mod:`~quickscorer.algorithms.rapidscorer.ranks`): thresholds compared as bytes.

Trees are cut into consecutive blocks (``block_starts``) whose bitvectors for a group fit a
cache budget (at most ``MAX_BLOCK_ROWS`` byte rows: an entry's row is 16 bits); every block
has its own entries, sorted per segment (slot ``s``, missing-value kind ``k``: segment
``3 s + k`` as in QuickScorer) by threshold index and closed by a sentinel. Block ``b`` scans
the segments ``segments[block_segments[b] : block_segments[b + 1]]``, each
``(3 s + k) << 32 | first entry`` (bit 63 set for a segment of mirrored nodes, bit 62 for one
whose missing values fail every test); empty ones are left out. Byte positions are relative
to the block: ``tree_byte_offsets[t] - tree_byte_offsets[block_starts[b]]``.

**Missing values** (NaN; LightGBM's zero-as-missing, where zero is one too) are decided by no
comparison: they go to a node's default side. The nodes of a feature are split by that side
(*half-features*, :func:`half_arrays`): where it is the side the node's mask clears, the
segment's word has bit 62 set and its missing lanes scan with rank 255, failing every test;
elsewhere with rank 0, passing none. So the scan applies the default sides itself.

**Mirrored nodes**: which subtree comes first is a choice of leaf order. :func:`half_arrays`
picks, per tree, the order that minimises the bytes all nodes span (dynamic programming over
each subtree and its start position mod 8, ``_build.mirrored_ranges``): a *mirrored* node puts
its right subtree first, is false when ``x <= t`` and sends missing values to the side opposite
its default. Its test is ``rank(x) <= j``, that is ``255 - rank(x) > 254 - j``: it is scanned
on the complemented rank of its own slot, in segments of their own. The leaf positions are
then not the trees' own leaf numbers: ``leaf_order`` maps them back and ``leaf_value`` /
``leaf_value_f32`` hold the values by position (all three empty when no node is mirrored). A
model where the order saves under ``MIRROR_MIN_SAVING`` of the bytes keeps its own.

**Categorical splits**: :mod:`~quickscorer.algorithms.rapidscorer.categorical`. **Levels**:
:mod:`~quickscorer.algorithms.rapidscorer.levels`. The numpy reference builders the tests hold the
C builders to: ``tests/rs_reference.py``.

The layout exists only for models it can score exactly: at most ``MAX_LEAVES`` leaves per tree
and no category from ``CAT_CODES`` up listed by a split, or trees the level path alone takes;
:func:`unsupported` says why a model is not one.
"""
from __future__ import annotations

import numpy as np

from ...errors import ModelFormatError
from ...ir import _build
from ...ir.ensemble import Ensemble
from .. import _layout
from ..nodes import CAT_CODES
from ..qs.layout import SEGMENT_NAN, numeric_layout, tree_word_offsets_of
from .categorical import categorical_fields, categorical_nodes
from .levels import (
    LEVELS_ENDS,
    LEVELS_LANE_NODES,
    LEVELS_SCANS_MAX_DEPTH,
    level_arrays,
    levels_only_refusal,
    no_level_fields,
)
from .ranks import (
    N_HALVES,
    distinct_pairs,
    fold_halves,
    rank_fields,
    slot_base,
    slot_table,
    unfold,
)
from .walks import (
    GW_MAX_RATIO,
    no_walk_fields,
    walk_arrays,
    walk_cost_ratio,
    walk_refusal,
)

#: exit leaves are found as bytes: a tree may have this many leaves
MAX_LEAVES = 256

#: mirrored nodes only where they remove this share of the bytes the masks span: below it they
#: gained under 1%, and the plain layout is quicker to build; ``python -m benchmarks.matrix``
#: with ``QUICKSCORER_RS_MIRROR=0`` against the default re-measures it
MIRROR_MIN_SAVING = 0.05

#: an entry's byte row is 16 bits: a tree block holds at most this many byte rows
MAX_BLOCK_ROWS = 65536

def unsupported(ens: Ensemble) -> str | None:
    """Why ``ens`` cannot be scored with this layout, or None when it can (from the nodes
    alone: no layout is built). Trees of more than 256 leaves are scored by the level path
    alone (:func:`levels_only_arrays`) where it takes the model."""
    if int(ens.n_leaves.max()) > MAX_LEAVES:
        why = levels_only_refusal(ens)
        return None if why is None else (f"a tree has more than {MAX_LEAVES} leaves, and the "
                                         f"level path cannot take the model: {why}")
    if ens.has_categorical:
        packed = ens.trees.arrays
        listed = packed["cat_values"]
        if listed.shape[0] and (int(listed.max()) >= CAT_CODES or int(listed.min()) < 0):
            return (f"a categorical split lists category {int(listed.max())} (the layout "
                    f"codes categories 0 to {CAT_CODES - 1} in a byte)")
    return None

def _spanned_bytes(lo: np.ndarray, hi: np.ndarray) -> int:
    """Bytes spanned by the leaf ranges ``[lo, hi)`` of all nodes (their entries, but for
    merged equal thresholds)."""
    return int(np.sum((hi.astype(np.int64) - 1) // 8 - lo // 8 + 1))

def half_arrays(ens: Ensemble,
                mirror: bool = True) -> tuple[dict, np.ndarray | None, dict | None]:
    """The QuickScorer arrays of the model's nodes over ``4 F`` *half-features*: node ``n``
    of feature ``f`` goes to ``f + F r``, bit 0 of ``r`` set where the node is mirrored (its
    threshold then negated, so that a segment of them runs from the largest threshold
    down), bit 1 where its missing values go to the side its mask clears (they then fail
    every test of the node's segment: no byte lists). With ``mirror``, the leaf order of
    fewest spanned bytes (``_build.mirrored_ranges``) where it saves at least
    ``MIRROR_MIN_SAVING`` of them. Returns the arrays of the numerical nodes, each tree's
    leaf order (``order[leaf_offset[t] + p]``: the tree's own number of the leaf at
    position ``p``), None where no node is mirrored, and the categorical nodes
    (:func:`categorical_nodes`), None where there are none."""
    F = ens.n_features
    packed = ens.trees.arrays
    node_offset = np.ascontiguousarray(ens.trees.node_offset, np.int64)
    left = np.ascontiguousarray(packed["left"], np.int32)
    right = np.ascontiguousarray(packed["right"], np.int32)
    lo, mid, hi = _build.packed_leaf_ranges(left, right, node_offset)
    order = None
    flip = np.zeros(left.shape[0], np.uint8)
    if mirror and left.shape[0]:
        flip2, first_lo, first_hi, order2 = _build.mirrored_ranges(
            left, right, node_offset, np.ascontiguousarray(ens.trees.leaf_offset, np.int64),
            lo, mid, hi)
        if (_spanned_bytes(first_lo, first_hi)
                <= (1.0 - MIRROR_MIN_SAVING) * _spanned_bytes(lo, mid)):
            flip, lo, mid, order = flip2, first_lo, first_hi, order2
    del hi
    if ens.family == "xgboost":   # XGBoost sends only NaN to the default side
        kind = np.full(left.shape[0], SEGMENT_NAN, np.uint8)
    else:
        kind = np.ascontiguousarray(packed["missing_type"], np.uint8)
    # a mirrored node's first subtree is its right one: missing values change sides
    default_left = packed["default_left"].view(np.uint8) ^ flip
    cleared = ((kind != 0) & (default_left == 0)).astype(np.int32)
    feature = (packed["feature"].astype(np.int32) + F * flip.astype(np.int32)
               + 2 * F * cleared)
    threshold = np.ascontiguousarray(packed["threshold"], np.float64)
    threshold = np.where(flip.view(bool), -threshold, threshold)
    cat = None
    if ens.has_categorical:
        is_cat = np.asarray(packed["is_categorical"], bool)
        cat = categorical_nodes(ens, np.flatnonzero(is_cat), flip, lo, mid)
        # the numerical nodes alone, tree by tree as before
        num = ~is_cat
        tree_of = np.repeat(np.arange(node_offset.shape[0] - 1), np.diff(node_offset))
        per_tree = np.bincount(tree_of[num], minlength=node_offset.shape[0] - 1)
        node_offset = np.zeros_like(node_offset)
        np.cumsum(per_tree, out=node_offset[1:])
        feature, threshold, default_left, kind, lo, mid = (
            np.ascontiguousarray(a[num]) for a in (feature, threshold, default_left, kind,
                                                   lo, mid))
    return (numeric_layout(node_offset, feature, threshold, default_left, kind, lo, mid,
                           tree_word_offsets_of(ens), N_HALVES * F), order, cat)

def leaf_arrays(ens: Ensemble, order: np.ndarray | None) -> dict:
    """The leaf fields of the layout: for a leaf ``order`` (:func:`half_arrays`), the
    tree's own number of each position's leaf and the leaf values in that order (float64,
    and float32 for XGBoost, as ``forest.forest_arrays``); empty without one."""
    if order is None:
        return {"leaf_order": np.zeros(0, np.uint8), "leaf_value": np.zeros(0, np.float64),
                "leaf_value_f32": np.zeros(0, np.float32)}
    offset = np.repeat(np.asarray(ens.trees.leaf_offset[:-1], np.int64),
                       np.diff(ens.trees.leaf_offset))
    value = np.ascontiguousarray(ens.trees.arrays["leaf_value"], np.float64)[offset + order]
    return {"leaf_order": order.astype(np.uint8), "leaf_value": value,   # MAX_LEAVES: a byte
            "leaf_value_f32": (value.astype(np.float32) if ens.family == "xgboost"
                               else np.zeros(0, np.float32))}

def changed_bytes(word_byte: np.ndarray, masks: np.ndarray):
    """The bytes each 64-bit mask changes: (source index, byte, its mask)."""
    m8 = masks.astype("<u8").view(np.uint8).reshape(-1, 8)
    r, j = np.nonzero(m8 != 0xFF)
    return r, word_byte[r] + j, m8[r, j]

def tree_bytes(ens: Ensemble) -> np.ndarray:
    """Bytes of bitvector per tree and document: ceil(leaves / 8), at least 1."""
    return np.maximum(1, (ens.n_leaves.astype(np.int64) + 7) // 8)

def block_starts_for(n_bytes: np.ndarray, budget_bytes: int, lanes: int) -> np.ndarray:
    """Consecutive trees whose byte rows for a group of ``lanes`` documents fit
    ``budget_bytes`` (a tree larger than the budget gets a block of its own), at most
    ``MAX_BLOCK_ROWS`` byte rows a block."""
    return greedy_blocks(n_bytes * lanes, min(int(budget_bytes), MAX_BLOCK_ROWS * int(lanes)))

def greedy_blocks(sizes: np.ndarray, budget: int) -> np.ndarray:
    """Consecutive items whose ``sizes`` sum to at most ``budget`` (an item larger than it
    gets a block of its own): the first item of each block, then the number of items."""
    starts = [0]
    acc = 0
    for t, c in enumerate(np.asarray(sizes).tolist()):
        if acc and acc + c > budget:
            starts.append(t)
            acc = 0
        acc += c
    starts.append(len(sizes))
    return np.asarray(starts, np.int64)

def folded(ens: Ensemble, mirror: bool, fold):
    """:func:`half_arrays` folded by ``fold`` (:func:`fold_halves` or its reference), the
    half-features' arrays freed once read."""
    qs, order, cat = half_arrays(ens, mirror)
    qs, slot_column, table, S = fold(qs, ens.n_features, consume=True)
    return qs, order, slot_column, table, S, cat

def level_block_starts(arrays: dict, budget_bytes: int) -> np.ndarray:
    """Consecutive trees whose level fields that a group's walk reads (the nodes walked
    node by node and their threshold tables, the deep records, the slots' values and the
    level ends) fit in ``budget_bytes``, at least one tree a block: the first tree of each
    block, then the number of trees."""
    value_bytes = 8 if arrays["lv_value"].shape[0] else 4
    per_tree = (4 * np.diff(arrays["lv_node_offset"]) + 4 * np.diff(arrays["lv_deep_offset"])
                + np.diff(arrays["lv_table_offset"])
                + value_bytes * np.diff(arrays["lv_slot_offset"]) + 2 * LEVELS_ENDS)
    return greedy_blocks(per_tree, int(budget_bytes))

def levels_only_arrays(ens: Ensemble, lane_nodes: int = LEVELS_LANE_NODES) -> dict:
    """A layout of the level path alone (``lv_only``), for a model whose trees have more
    leaves than the scans take (:data:`MAX_LEAVES`) and which :func:`levels_only_refusal`
    passes: the rank slots of every numerical node's threshold (as :func:`fold_halves`
    ranks them, without the half-features), the level fields, and empty scan fields (no
    bitvector bytes, one block, no entries); raises ValueError where the level path cannot
    take the model."""
    why = levels_only_refusal(ens)
    if why is not None:
        raise ValueError(why)
    F = ens.n_features
    packed = ens.trees.arrays
    (_, thresholds), counts = distinct_pairs(np.asarray(packed["feature"], np.int64),
                                              np.asarray(packed["threshold"], np.float64), F)
    slot_column, rank_offsets = slot_table(F, counts, slot_base(counts))
    rank_thresholds = np.ascontiguousarray(thresholds, np.float64)
    n_trees = ens.n_trees
    block_starts = np.array([0, n_trees], np.int64)
    tree_byte_offsets = np.zeros(n_trees + 1, np.int64)
    return {
        **level_arrays(ens, slot_column, rank_offsets, rank_thresholds, lane_nodes),
        **rank_fields(rank_offsets, rank_thresholds),
        "slot_column": slot_column,
        "tree_byte_offsets": tree_byte_offsets,
        "block_starts": block_starts,
        "entries": np.zeros(0, np.uint32),
        "segments": np.zeros(0, np.uint64),
        "block_segments": np.zeros(2, np.int64),
        "leaf_offset": np.asarray(ens.trees.leaf_offset, np.int64),
        **leaf_arrays(ens, None),
        **categorical_fields(None, tree_byte_offsets, block_starts),
        "lv_only": np.ones(1, np.uint8),
        **no_walk_fields(),
    }

def rapidscorer_arrays(ens: Ensemble, block_starts: np.ndarray, mirror: bool = True,
                       levels: bool = False, lane_nodes: int = LEVELS_LANE_NODES,
                       walk: bool | None = False) -> dict:
    """The layout (see the module docstring) of ``ens`` in tree blocks ``block_starts``
    (``mirror``: with mirrored nodes where they pay; ``walk``: with the gathered walk's
    fields where the model can take them, None where they pay too, rapidscorer.walks), its
    sorting and byte splitting in C (``src/quickscorer/algorithms/_layout.pyx``); the same
    arrays as :func:`rapidscorer_arrays_reference`."""
    qs, order, slot_column, (rank_offsets, rank_thresholds, rank), S, cat = folded(
        ens, mirror, fold_halves)
    n_trees = ens.n_trees
    tree_byte_offsets = np.zeros(n_trees + 1, np.int64)
    np.cumsum(tree_bytes(ens), out=tree_byte_offsets[1:])
    block_starts = np.asarray(block_starts, np.int64)
    try:
        entries, segments, block_segments = _layout.rs_entries(
            qs["words"], qs["masks"], qs["trees"], rank, qs["segment_offsets"],
            qs["tree_word_offsets"], tree_byte_offsets, block_starts, N_HALVES * S)
    except ValueError as exc:
        raise ModelFormatError(f"cannot build the rapidscorer layout: {exc}") from None
    del rank, qs
    lv = no_level_fields()
    if levels:
        try:
            lv = level_arrays(ens, slot_column, rank_offsets, rank_thresholds, lane_nodes,
                              LEVELS_SCANS_MAX_DEPTH)
        except ValueError:      # a model the level path cannot score: the scans alone
            pass
    gw = no_walk_fields()
    if walk or (walk is None and walk_refusal(ens) is None
                and walk_cost_ratio(ens, entries.shape[0]) < GW_MAX_RATIO):
        try:
            gw = walk_arrays(ens, slot_column, rank_offsets, rank_thresholds)
        except ValueError:      # a model the walk does not take
            pass
    return {
        **lv,
        **gw,
        **rank_fields(rank_offsets, rank_thresholds),
        "slot_column": slot_column,
        "tree_byte_offsets": tree_byte_offsets,
        "block_starts": block_starts,
        "entries": entries,
        "segments": unfold(segments, S),
        "block_segments": block_segments,
        "leaf_offset": np.asarray(ens.trees.leaf_offset, np.int64),
        **leaf_arrays(ens, order),
        **categorical_fields(cat, tree_byte_offsets, block_starts),
        "lv_only": np.zeros(1, np.uint8),
    }
