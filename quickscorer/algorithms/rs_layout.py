"""The RapidScorer layout (Ye et al., KDD 2018), built once per model from QuickScorer's
arrays (:mod:`~quickscorer.algorithms.qs_layout`) of its nodes split into half-features.

Three changes to QuickScorer's layout let one SIMD instruction serve 32 or 64 documents:

* **bytes, transposed**: a tree of ``L`` leaves keeps ``ceil(L / 8)`` bytes of bitvector per
  document (leaf ``i`` is bit ``i % 8`` of byte ``i // 8``), and the kernel stores byte ``b`` of
  all documents of a group side by side, so one register holds that byte for 32 (AVX2) or 64
  (AVX-512) documents;
* **epitomes**: a node clears the contiguous leaf range of its left subtree, so its mask
  changes a run of bytes only (the first and last partially, those between entirely); an
  entry is one changed byte (``byte``, its AND ``mask``), so a node has as many entries as its
  run has bytes (a full 64-leaf tree: 68 entries for 63 nodes) and the scan never branches on
  a run's length;
* **ranks**: per feature, the distinct thresholds of all its numerical nodes, sorted; a node
  with threshold index ``j`` is false for a value ``x`` exactly when ``rank(x) = #{thresholds
  < x} > j``. The kernel computes ``rank(x)`` once per document and feature, by a two-level
  search (:func:`rank_search_table`), and compares bytes; NaN and zero take ``rank_zero[f]``,
  the rank of 0.0, where no segment treats them as missing (below).

Trees are cut into consecutive blocks (``block_starts``) whose bitvectors for a group fit a
cache budget (at most ``MAX_BLOCK_ROWS`` byte rows: an entry's row is 16 bits); every block
has its own entries, sorted per segment (feature ``f``, missing-value kind ``k``: segment
``3 f + k`` as in QuickScorer) by threshold index and closed by a sentinel (``thr = 255``).
Block ``b`` scans the segments ``segments[block_segments[b] : block_segments[b + 1]]``, each
``(3 f + k) << 32 | first entry`` (bit 63 set for a segment of mirrored nodes, bit 62 for one
whose missing values fail every test, below); empty ones are left out. Byte positions are
relative to the block:
``tree_byte_offsets[t] - tree_byte_offsets[block_starts[b]]``.

**Missing values** (NaN; LightGBM's zero-as-missing, where zero is one too) are decided by no
comparison: they go to a node's default side. The nodes of a feature are split by that side
(*half-features*, :func:`half_arrays`): where it is the side the node's mask clears, the
segment's word has bit 62 set and its missing lanes scan with rank 255, failing every test;
elsewhere with rank 0, passing none. So the scan applies the default sides itself (before
session 15, byte lists per block and feature were ANDed into the missing lanes afterwards).

**Rank slots**: a rank is a byte, so a feature with more than 255 distinct thresholds
(XGBoost's ``exact`` method splits between any two training values; LightGBM with ``max_bin``
above 256) is ranked in several *slots*, slot ``v`` of the feature holding its thresholds
``255 v`` to ``255 v + 254``. A value's rank in slot ``v`` is the count of that slot's
thresholds below it, ``clamp(rank(x) - 255 v, 0, 255)``, and a node of threshold index ``j``
is false exactly when the rank in slot ``j // 255`` exceeds ``j % 255`` (a rank of 255 is
above every node of the slot, 0 above none). Segments are per slot (``3 s + k``, rank tables
per slot), and ``slot_column[s]`` names the input column slot ``s`` reads. Where no feature
has more than 255 thresholds, slot ``s`` is feature ``s``.

**Mirrored nodes**: a node's entries are the bytes its first subtree spans, and which
subtree comes first is a choice of leaf order. :func:`half_arrays` picks, per tree, the
order that minimises the bytes all nodes span (dynamic programming over each subtree and
its start position mod 8, ``_build.mirrored_ranges``): a *mirrored* node puts its right
subtree first, is false when ``x <= t`` (it then clears its right subtree: the exit leaf
lies after it) and sends missing values to the side opposite its default. Its test is
``rank(x) <= j``, that is ``255 - rank(x) > 254 - j``: it is scanned on the complemented
rank of its feature's own slot (no second search), in segments of their own, sorted by
``254 - j`` (segment word with bit 63 set). The leaf positions are then not the
trees' own leaf numbers: ``leaf_order`` maps them back and ``leaf_value`` /
``leaf_value_f32`` hold the values by position (all three empty when no node is mirrored).
On the 1,000-tree models of ``benchmarks/matrix.py`` this removes 31% of the entries of
full 255-leaf trees, 24% of 64-leaf ones, 13% of the lambdarank model's; a model where the
order saves under ``MIRROR_MIN_SAVING`` of the bytes keeps its own.

**Categorical splits** (:func:`categorical_nodes`) are no thresholds, so they are not
ranked: each categorical feature gets a slot of its own whose byte per document is the
value's code (the category, below ``CAT_CODES``; ``CAT_NONE``; ``CAT_NAN``), and each node a
256-bit table of the codes that send a document away from its first subtree; the kernel
applies a block's categorical nodes after its scan, every node on every lane (a table
lookup by byte shuffles, then the node's entries). Before session 17 the layout refused
these models and ``vqs`` scored them: on a LightGBM model of 500 full 64-leaf trees with 949
categorical nodes among 31,500, ``vqs`` ran at 0.80x lleaves (10,000 rows), this layout at
3.7x.

**Levels** (:func:`level_arrays`, session 19; 10 levels since session 21): where every
tree is at most ``LEVELS_MAX_DEPTH`` (10) deep and numeric, the layout can also hold each
tree level by level, and the kernel then walks a group's lanes down the levels in registers: a node
compares its column of ranks with its threshold index where the lanes are at its position
(a compare, a compare of positions and two logic operations for 32 lanes), with no byte
rows written and no exit leaf searched. The levels of a tree from its first one of more
than LEVELS_LANE_NODES nodes (from level 8 at the latest: positions are bytes) go lane by
lane instead, each lane reading the node at its position in those levels held complete
(``lv_deep``): a few scalar operations a lane, where every node of a wide level would cost
the group. Its cost follows the nodes plus a step per level,
where the scans' follows the bytes the nodes' masks span, so it pays on full depth-wise
trees (XGBoost's) and loses on small ones; :func:`levels_choice` decides from the nodes per
level (LEVELS_MIN_RATIO, LEVELS_NARROW_RATIO). A model whose trees have more than 256
leaves (XGBoost depth 9 and 10) has no scans at all: :func:`levels_only_arrays` builds the
level fields and the rank slots alone, and every group walks the levels (session 21; on
1,000 XGBoost trees of depth 9 and 10 at 10,000 rows, 6.63 and 9.56 us/doc in session
21's matrix against 15.68 and 27.19 for the walk in session 20's, AMD EPYC Zen 3, AVX2).
Beside the scans, only trees at most LEVELS_SCANS_MAX_DEPTH deep walk their levels.

The layout exists only for models it can score exactly: at most 256 leaves per tree and
no category from ``CAT_CODES`` up listed by a split, or trees the level path alone takes;
:func:`unsupported` says why a model is not one.
"""
from __future__ import annotations

import numpy as np

from .. import _build, _forest, _layout
from ..errors import ModelFormatError
from ..ir.ensemble import Ensemble
from .forest import listed_categories
from .qs_layout import (N_SEGMENT_KINDS, SEGMENT_NAN, entry_trees, numeric_layout,
                        tree_word_offsets_of)

#: ranks are bytes: a feature may have this many distinct thresholds (index 255 is the sentinel)
MAX_THRESHOLDS = 255
#: exit leaves are found as bytes: a tree may have this many leaves
MAX_LEAVES = 256
SENTINEL_THR = 255
#: the level-by-level path (:func:`level_arrays`) takes trees of at most this depth
LEVELS_MAX_DEPTH = 10
#: a lane's position in the levels walked node by node is a byte: they stop at this level
#: (positions below 256) at the latest, the levels below it go lane by lane
LEVELS_BYTE = 8
#: level ends a tree (``lv_level_end``)
LEVELS_ENDS = LEVELS_MAX_DEPTH
#: beside the scans (models whose trees have at most 256 leaves), the level path takes trees
#: of at most this depth (its levels then go node by node unless wider than
#: LEVELS_LANE_NODES). Deeper ones walk levels 8 and 9 lane by lane whatever their nodes,
#: which lost to the scans on depth-limited LightGBM trees, 1,000 trees at 4,000 rows, us/doc
#: (session 21, AMD EPYC Zen 3, AVX2): 31 leaves, depth 9 3.72 against 2.09; depth 10 4.87
#: against 2.08; 64 leaves, depth 10 9.02 against 3.31
LEVELS_SCANS_MAX_DEPTH = LEVELS_BYTE
#: a tree's levels go lane by lane from the first one of more than this many nodes: a
#: level of that many nodes, walked node by node, costs a group about what a level walked
#: lane by lane does. Measured on 1,000 XGBoost trees of
#: depth 9 and 10, AMD EPYC Zen 3, AVX2, us/doc at 100 / 4,000 rows, best of 5 interleaved
#: (session 21): depth 9 9.31 / 7.26 at 24, 7.96 / 6.27 at 48, 7.74 / 6.05 at 80, 7.86 /
#: 6.12 with only levels 8 and 9 lane by lane; depth 10 15.00 / 11.00, 12.46 / 9.37, 12.43
#: / 9.70, 12.31 / 10.03. Levels 8 and 9 always go lane by lane (positions past a byte)
LEVELS_LANE_NODES = 64
#: the automatic choice (:func:`levels_choice`) walks a model level by level where its
#: trees hold at least this many nodes a level on average, and in groups of 32 lanes too
#: (calls of fewer than 33 rows a thread) from LEVELS_NARROW_RATIO. Measured on 1,000-tree
#: models of benchmarks/matrix.py, AMD EPYC Zen 3, AVX2, with the sums in registers
#: (session 19; levels against scans, us/doc at 10 / 100 / 4,000 rows a call, best of 5):
#: XGBoost depth 8 (23.3 nodes a level) 20.15 / 5.53 / 4.36 against 29.19 / 9.41 / 7.51;
#: depth 6 (9.7) 9.82 / 2.54 / 2.03 against 9.68 / 3.57 / 2.94; depth 5 (6.0) 6.51 / 1.88 /
#: 1.50 against 5.77 / 2.18 / 1.82; depth 4, heavy-tailed (3.5) 5.10 / 1.50 / 1.19 against
#: 3.79 / 1.53 / 1.28; LightGBM, full 8 leaves (1.3) 4.99 / 1.56 / 1.26 against 3.09 / 1.40
#: / 1.16. Calls of 10 rows walk levels only on the deepest (depth 7 with NaN, 15.2 a
#: level, before the sums in registers: 15.06 against 22.27)
LEVELS_MIN_RATIO = 3.0
LEVELS_NARROW_RATIO = 12.0
#: lv_nodes record: the column (rank slot, or slot with its missing lanes sent to a side)
#: the node reads, its threshold index as the scans compare it (``thr ^ 0x80``) and its
#: position in its level
LV_NODE_DTYPE = np.dtype([("col", "<u2"), ("thr_b", "u1"), ("pos", "u1")])

#: mirrored nodes only where they remove this share of the bytes the masks span: XGBoost
#: depth 6 (4.2% fewer) scored 0.1-0.5% faster with them, depth 8 (9.2%) 2.3%, the
#: lambdarank model (12.5%) 2-4% (one process, interleaved, AMD EPYC Zen 3); below it the
#: plain layout, quicker to build, serves
MIRROR_MIN_SAVING = 0.05

#: rs_entry of rs_simd.h, 4 bytes: uint16 byte (block-relative row), uint8 thr_b (the
#: threshold index ``thr`` as the scans compare it, ``thr ^ 0x80``: signed), uint8 mask
ENTRY_DTYPE = np.dtype([("byte", "<u2"), ("thr_b", "u1"), ("mask", "u1")])
#: an entry's byte row is 16 bits: a tree block holds at most this many byte rows
MAX_BLOCK_ROWS = 65536
#: node variants a feature is split into (mirrored or not, missing values cleared or not)
N_HALVES = 4
#: a categorical slot's byte code of a value (_forest.pxd's category_code, which the kernels
#: run): the category itself below CAT_CODES, CAT_NONE where the value names no category
#: below it (negative, too large, infinite: no split lists it), CAT_NAN for NaN
CAT_CODES, CAT_NONE, CAT_NAN = _forest.CATEGORY_CODES


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


def categorical_nodes(ens: Ensemble, nodes: np.ndarray, flip: np.ndarray, lo: np.ndarray,
                      mid: np.ndarray) -> dict:
    """The categorical nodes ``nodes`` (packed indices, tree order) as the kernel scans them:
    not by rank but each on its own, on its feature's *categorical slot* (one per feature
    some categorical node splits on), whose byte per document is the value's code
    (``CAT_*``). A node's table holds, for each of the 256 codes, whether a document of that
    code leaves the node away from its first subtree (the right one where ``flip``, the
    mirrored leaf order of :func:`half_arrays`, puts it first): the 32 bytes of a bitset,
    bit ``c % 8`` of byte ``c // 8``. The listed categories go left, NaN to the default side,
    every other value right. Its entries clear the leaves ``[lo, mid)`` of that subtree, as a
    numerical node's do. Returns ``slot_column`` (each slot's input column), per node its
    tree, slot, table and leaf range."""
    packed = ens.trees.arrays
    node_offset = np.asarray(ens.trees.node_offset, np.int64)
    feature = np.asarray(packed["feature"], np.int64)[nodes]
    slot_column, slot = np.unique(feature, return_inverse=True)
    # away from the first subtree: right for a node in its own order, left for a mirrored one
    away = codes_going_left(ens, nodes) == flip[nodes].astype(bool)[:, None]
    return {
        "slot_column": slot_column.astype(np.int32),
        "tree": (np.searchsorted(node_offset, nodes, side="right") - 1).astype(np.int64),
        "slot": slot.astype(np.int32).reshape(-1),
        "table": np.packbits(away, axis=1, bitorder="little"),
        "lo": np.asarray(lo, np.int64)[nodes],
        "hi": np.asarray(mid, np.int64)[nodes],
    }


def coded_categorical(ens: Ensemble, nodes: np.ndarray) -> np.ndarray:
    """Which of the nodes ``nodes`` (packed indices) are categorical splits whose listed
    categories are all below CAT_CODES (those a code decides: :func:`codes_going_left`)."""
    if nodes.shape[0] == 0 or not ens.has_categorical:
        return np.zeros(nodes.shape[0], bool)
    listed, owner = listed_categories(ens, nodes)
    top = np.full(nodes.shape[0], -1, np.int64)      # the largest listed category
    np.maximum.at(top, owner, listed)
    return np.asarray(ens.trees.arrays["is_categorical"], bool)[nodes] & (top < CAT_CODES)


def codes_going_left(ens: Ensemble, nodes: np.ndarray) -> np.ndarray:
    """For the categorical nodes ``nodes`` (packed indices) whose categories are all below
    CAT_CODES, which of the 256 codes (``CAT_*``) go left: the listed categories, and NaN
    where the node's default side is left. Shape (len(nodes), 256), bool."""
    packed = ens.trees.arrays
    listed, owner = listed_categories(ens, nodes)
    left = np.zeros((nodes.shape[0], 256), bool)
    left[owner, listed] = True
    left[:, CAT_NONE] = False
    left[:, CAT_NAN] = np.asarray(packed["default_left"], bool)[nodes]
    return left


def categorical_fields(cat: dict | None, tree_byte_offsets: np.ndarray,
                       block_starts: np.ndarray) -> dict:
    """The layout's categorical fields, from :func:`categorical_nodes` (empty without):
    ``cat_slot_column``, and per node (by tree, so by block: block ``b`` scans nodes
    ``block_cat[b]`` to ``block_cat[b + 1] - 1``) its ``cat_node_slot``, its 32-byte
    ``cat_tables`` row and its entries ``cat_entries[cat_entry_offsets[k] : ...[k + 1]]``,
    one per byte of its leaf range as a numerical node's (the threshold byte unused)."""
    n_blocks = block_starts.shape[0] - 1
    if cat is None:
        return {"cat_slot_column": np.zeros(0, np.int32), "cat_node_slot": np.zeros(0, np.int32),
                "cat_tables": np.zeros(0, np.uint8), "cat_entry_offsets": np.zeros(1, np.int64),
                "cat_entries": np.zeros(0, np.uint32),
                "block_cat": np.zeros(n_blocks + 1, np.int64)}
    tree, lo, hi = cat["tree"], cat["lo"], cat["hi"]
    first, last = lo // 8, (hi - 1) // 8
    n_bytes = last - first + 1
    offsets = np.zeros(tree.shape[0] + 1, np.int64)
    np.cumsum(n_bytes, out=offsets[1:])
    node = np.repeat(np.arange(tree.shape[0]), n_bytes)
    byte = first[node] + np.arange(int(offsets[-1])) - offsets[node]
    start = np.maximum(lo[node], 8 * byte) - 8 * byte         # the range within the byte
    end = np.minimum(hi[node], 8 * byte + 8) - 8 * byte
    bits = ((1 << end) - 1) ^ ((1 << start) - 1)
    block = np.searchsorted(block_starts, tree, side="right") - 1
    row = tree_byte_offsets[tree] - tree_byte_offsets[block_starts[block]]
    entries = np.zeros(byte.shape[0], ENTRY_DTYPE)
    entries["byte"] = row[node] + byte
    entries["mask"] = (~bits) & 0xFF
    return {"cat_slot_column": cat["slot_column"], "cat_node_slot": cat["slot"],
            "cat_tables": np.ascontiguousarray(cat["table"]).reshape(-1),
            "cat_entry_offsets": offsets, "cat_entries": entries.view(np.uint32),
            "block_cat": np.searchsorted(tree, block_starts, side="left").astype(np.int64)}


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


def _half_ranks(qs: dict, F: int):
    """The rank tables of :func:`fold_halves`: each half-feature's distinct thresholds and
    their union per feature (C: merges of sorted runs), and the slots. Returns
    ``(half_offsets, half_rank, half_to_rank, counts, values, slot_base)``: entry ``e`` of
    half-feature ``h`` has rank ``half_to_rank[half_offsets[h] + half_rank[e]]`` among the
    ``counts[f]`` thresholds of its feature, ``values`` (all features' thresholds, feature
    by feature, ascending)."""
    half_offsets, half_values, half_rank = _layout.segment_rank_table(
        qs["thresholds"], qs["segment_offsets"], N_HALVES * F)
    offsets, values, half_to_rank = _layout.rs_union_ranks(half_offsets, half_values, F)
    counts = np.diff(offsets)
    return half_offsets, half_rank, half_to_rank, counts, values, _slot_base(counts)


def _slot_base(counts: np.ndarray) -> np.ndarray:
    """The first slot of each feature of ``counts`` thresholds (one slot per 255, at least
    one), and the number of slots last."""
    slot_base = np.zeros(counts.shape[0] + 1, np.int64)
    np.cumsum(np.maximum(1, -(-counts // MAX_THRESHOLDS)), out=slot_base[1:])
    return slot_base


def _half_ranks_reference(qs: dict, F: int):
    """:func:`_half_ranks` with the union sorted in numpy."""
    half_offsets, half_values, half_rank = _layout.segment_rank_table(
        qs["thresholds"], qs["segment_offsets"], N_HALVES * F)
    half = np.repeat(np.arange(N_HALVES * F), np.diff(half_offsets))
    pf = half % F
    pt = np.where((half // F) & 1 == 1, -half_values, half_values)   # mirrored: negated
    order = np.lexsort((pt, pf))
    fo, to = pf[order], pt[order]
    new = np.ones(fo.shape[0], bool)
    new[1:] = (fo[1:] != fo[:-1]) | (to[1:] != to[:-1])
    counts = np.bincount(fo[new], minlength=F)
    offsets = np.zeros(F + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    half_to_rank = np.empty(fo.shape[0], np.int32)
    half_to_rank[order] = np.cumsum(new) - 1 - offsets[fo]
    return (half_offsets, half_rank, half_to_rank, counts,
            np.ascontiguousarray(to[new], np.float64), _slot_base(counts))


def _slot_table(F: int, counts, slot_base):
    """Each slot's input column and the slots' rank table offsets (a feature's thresholds
    in runs of 255)."""
    S = int(slot_base[-1])
    slot_column = np.repeat(np.arange(F, dtype=np.int32), np.diff(slot_base))
    v = np.arange(S) - slot_base[slot_column]
    slot_offsets = np.zeros(S + 1, np.int64)
    np.cumsum(np.clip(counts[slot_column] - MAX_THRESHOLDS * v, 0, MAX_THRESHOLDS),
              out=slot_offsets[1:])
    return slot_column, slot_offsets


def fold_halves(qs: dict, n_features: int,
                consume: bool = False) -> tuple[dict, np.ndarray, tuple, int]:
    """The arrays of :func:`half_arrays` over rank slots: every node is ranked among the
    thresholds of its feature, split into slots of 255 (a rank is a byte), and lands in
    segment ``3 (s + S r) + k`` (``S`` slots; slot ``s`` of its feature, variant ``r`` of
    its half-feature) with threshold index ``j % 255``, ``254 - j % 255`` where mirrored
    (the scan's test on the complemented rank). Returns the arrays over ``4 S`` segment
    features (no thresholds: ranks replace them; no byte lists), ``slot_column`` (``S``),
    the slots' rank table, and ``S``. With ``consume``, ``qs`` is emptied once read (its
    arrays freed while the layout is built). The entries are placed in C
    (``_layout.rs_fold_halves``): the same arrays as :func:`fold_halves_reference`."""
    F = n_features
    half_offsets, half_rank, half_to_rank, counts, values, slot_base = _half_ranks(qs, F)
    words, masks, trees, segment_offsets, slot_rank = _layout.rs_fold_halves(
        qs["words"], qs["masks"], entry_trees(qs), qs["segment_offsets"], half_rank,
        half_offsets, half_to_rank, slot_base, F)
    del half_rank
    S = int(slot_base[-1])
    out = {"tree_word_offsets": qs["tree_word_offsets"], "segment_offsets": segment_offsets,
           "words": words, "masks": masks, "trees": trees}
    if consume:
        qs.clear()
    slot_column, slot_offsets = _slot_table(F, counts, slot_base)
    return out, slot_column, (slot_offsets, values, slot_rank), S


def fold_halves_reference(qs: dict, n_features: int,
                          consume: bool = False) -> tuple[dict, np.ndarray, tuple, int]:
    """:func:`fold_halves` with the union of thresholds and the entries in numpy (its
    reference)."""
    F = n_features
    (half_offsets, half_rank, half_to_rank, counts, values,
     slot_base) = _half_ranks_reference(qs, F)
    S = int(slot_base[-1])
    idx, seg, half = _entry_features(qs)
    kind = seg % N_SEGMENT_KINDS
    variant = half // F
    f = half % F
    rank = half_to_rank[half_offsets[half] + half_rank[idx]].astype(np.int64)
    within = rank % MAX_THRESHOLDS
    thr = np.where(variant & 1 == 1, MAX_THRESHOLDS - 1 - within, within)
    new_seg = N_SEGMENT_KINDS * (slot_base[f] + rank // MAX_THRESHOLDS + S * variant) + kind
    # the entries are in segment order, each segment by threshold (a mirrored one from the
    # largest down): splitting features into slots is a stable sort by the new segment
    o = np.argsort(new_seg, kind="stable")
    key = new_seg[o]
    n_seg = N_SEGMENT_KINDS * N_HALVES * S
    segment_offsets = np.zeros(n_seg + 1, np.int64)
    np.cumsum(np.bincount(key, minlength=n_seg) + 1, out=segment_offsets[1:])
    pos = np.arange(key.shape[0]) + key        # one sentinel closes each earlier segment
    sentinel = qs["segment_offsets"][1] - 1
    out = {"tree_word_offsets": qs["tree_word_offsets"], "segment_offsets": segment_offsets}
    for name, src in (("words", qs["words"]), ("masks", qs["masks"]),
                      ("trees", entry_trees(qs))):
        arr = np.full(int(segment_offsets[-1]), src[sentinel], src.dtype)
        arr[pos] = src[idx[o]]
        out[name] = arr
    slot_rank = np.full(int(segment_offsets[-1]), -1, np.int32)
    slot_rank[pos] = thr[o]
    if consume:
        qs.clear()
    slot_column, slot_offsets = _slot_table(F, counts, slot_base)
    return out, slot_column, (slot_offsets, values, slot_rank), S


def _unfold(segments: np.ndarray, S: int) -> np.ndarray:
    """The segments of the layout over ``4 S`` segment features (:func:`fold_halves`) in
    the kernel's terms: a segment of feature ``s + S r`` becomes segment ``3 s + k`` of slot
    ``s``, bit 63 of its word set where ``r`` is odd (mirrored nodes), bit 62 where ``r >=
    2`` (missing values fail every test)."""
    fk = segments >> np.uint64(32)
    f4 = (fk // np.uint64(N_SEGMENT_KINDS)).astype(np.int64)
    variant = (f4 // S).astype(np.uint64)
    fk = fk - np.uint64(N_SEGMENT_KINDS * S) * variant
    return (((variant & np.uint64(1)) << np.uint64(63))
            | ((variant >> np.uint64(1)) << np.uint64(62)) | (fk << np.uint64(32))
            | (segments & np.uint64(0xFFFFFFFF)))


def _entry_features(qs: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Indices of the real (non-sentinel) QuickScorer entries, their segment and feature."""
    real = np.ones(qs["words"].shape[0], bool)
    real[qs["segment_offsets"][1:] - 1] = False          # the sentinel closing each segment
    idx = np.flatnonzero(real)
    seg = np.searchsorted(qs["segment_offsets"], idx, side="right") - 1
    return idx, seg, seg // N_SEGMENT_KINDS


def _feature_thresholds(qs: dict, n_features: int):
    """Per feature, the sorted distinct thresholds of its numerical entries (all segments):
    ``(features, thresholds)`` of the distinct pairs in (feature, threshold) order, and the
    count per feature."""
    idx, _, feat = _entry_features(qs)
    return _distinct_pairs(feat, qs["thresholds"][idx], n_features)


def _distinct_pairs(feature: np.ndarray, threshold: np.ndarray, n_features: int):
    """The distinct (feature, threshold) pairs in (feature, threshold) order, as
    ``(features, thresholds)``, and the count per feature."""
    order = np.lexsort((threshold, feature))
    f, t = feature[order], threshold[order]
    new = np.ones(f.shape[0], bool)
    new[1:] = (f[1:] != f[:-1]) | (t[1:] != t[:-1])
    pairs = (f[new], t[new])
    return pairs, np.bincount(pairs[0], minlength=n_features)


def rank_table(qs: dict, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    """``(rank_offsets, rank_thresholds)``: feature f's distinct thresholds, ascending."""
    pairs, counts = _feature_thresholds(qs, n_features)
    offsets = np.zeros(n_features + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    return offsets, np.ascontiguousarray(pairs[1], np.float64)


def rank_search_table(rank_offsets: np.ndarray, rank_thresholds: np.ndarray):
    """The thresholds of each feature laid out for the kernel's two-level rank search:
    buckets of 16 ascending thresholds, +inf padding the last, and one bucket of +inf after
    it (``rank_buckets[rank_bucket_offsets[f] :]``); and per feature 16 pivots, the largest
    threshold of each bucket, +inf past the last (``rank_pivots[16 f : 16 f + 16]``). Then
    ``rank(x) = 16 c1 + c2`` with ``c1`` the pivots below ``x`` and ``c2`` the thresholds of
    bucket ``c1`` below ``x``."""
    F = rank_offsets.shape[0] - 1
    counts = np.diff(rank_offsets)
    n_buckets = (counts + 15) // 16
    if n_buckets.size and n_buckets.max() > 16:
        raise ValueError(f"a feature has more than {MAX_THRESHOLDS + 1} thresholds")
    bucket_offsets = np.zeros(F + 1, np.int64)
    np.cumsum(16 * (n_buckets + 1), out=bucket_offsets[1:])
    buckets = np.full(int(bucket_offsets[-1]), np.inf)
    feature_of = np.repeat(np.arange(F), counts)
    position = np.arange(rank_thresholds.shape[0]) - rank_offsets[feature_of]
    buckets[bucket_offsets[feature_of] + position] = rank_thresholds
    # pivot j of f: the last threshold of its bucket j (+inf padding a partial last bucket)
    pivots = np.full(16 * F, np.inf)
    bucket_feature = np.repeat(np.arange(F), n_buckets)
    j = np.arange(bucket_feature.shape[0]) - np.repeat(np.cumsum(n_buckets) - n_buckets,
                                                       n_buckets)
    pivots[16 * bucket_feature + j] = buckets[bucket_offsets[bucket_feature] + 16 * j + 15]
    return pivots, buckets, bucket_offsets


def _changed_bytes(word_byte: np.ndarray, masks: np.ndarray):
    """The bytes each 64-bit mask changes: (source index, byte, its mask)."""
    m8 = masks.astype("<u8").view(np.uint8).reshape(-1, 8)
    r, j = np.nonzero(m8 != 0xFF)
    return r, word_byte[r] + j, m8[r, j]


def entry_thr(entries: np.ndarray) -> np.ndarray:
    """The threshold index of each entry of a layout's ``entries`` (uint32 or
    ``ENTRY_DTYPE``); ``SENTINEL_THR`` at sentinels."""
    return entries.view(ENTRY_DTYPE)["thr_b"] ^ 0x80


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


def _folded(ens: Ensemble, mirror: bool, fold):
    """:func:`half_arrays` folded by ``fold`` (:func:`fold_halves` or its reference), the
    half-features' arrays freed once read."""
    qs, order, cat = half_arrays(ens, mirror)
    qs, slot_column, table, S = fold(qs, ens.n_features, consume=True)
    return qs, order, slot_column, table, S, cat


def _rank_fields(rank_offsets: np.ndarray, rank_thresholds: np.ndarray) -> dict:
    """The slots' rank-search fields and ``rank_zero`` (the thresholds below 0.0; -0.0 is
    not below it)."""
    below = np.zeros(rank_thresholds.shape[0] + 1, np.int64)
    np.cumsum(rank_thresholds < 0.0, out=below[1:])
    rank_pivots, rank_buckets, rank_bucket_offsets = rank_search_table(rank_offsets,
                                                                       rank_thresholds)
    return {"rank_pivots": rank_pivots, "rank_buckets": rank_buckets,
            "rank_bucket_offsets": rank_bucket_offsets,
            "rank_zero": (below[rank_offsets[1:]] - below[rank_offsets[:-1]]).astype(np.uint8),
            "model_used": np.flatnonzero(np.diff(rank_offsets)).astype(np.int32)}


def no_level_fields() -> dict:
    """The level fields of a layout without the level-by-level path."""
    return {"lv_nodes": np.zeros(0, np.uint32), "lv_node_offset": np.zeros(1, np.int64),
            "lv_level_end": np.zeros(0, np.uint16), "lv_depth": np.zeros(0, np.uint8),
            "lv_split": np.zeros(0, np.uint8), "lv_deep": np.zeros(0, np.uint32),
            "lv_deep_offset": np.zeros(1, np.int64), "lv_block_starts": np.zeros(1, np.int64),
            "lv_slot_offset": np.zeros(1, np.int64), "lv_slot_leaf": np.zeros(0, np.uint16),
            "lv_value": np.zeros(0, np.float64), "lv_value_f32": np.zeros(0, np.float32),
            "lv_combos": np.zeros(0, np.int32)}


def node_levels(ens: Ensemble, max_depth: int):
    """Every node's and every leaf's level and position in it, over all trees (packed
    order): the root is level 0, position 0; the children of position ``p`` are ``2 p``
    (left) and ``2 p + 1``. Returns ``(level, pos, leaf_level, leaf_pos)`` (int64); raises
    ValueError for a tree deeper than ``max_depth`` or a node no root reaches."""
    packed = ens.trees.arrays
    node_offset = np.asarray(ens.trees.node_offset, np.int64)
    leaf_offset = np.asarray(ens.trees.leaf_offset, np.int64)
    n_nodes = int(node_offset[-1])
    left = np.asarray(packed["left"], np.int64)
    right = np.asarray(packed["right"], np.int64)
    level = np.full(n_nodes, -1, np.int64)
    pos = np.zeros(n_nodes, np.int64)
    leaf_level = np.zeros(int(leaf_offset[-1]), np.int64)
    leaf_pos = np.zeros(int(leaf_offset[-1]), np.int64)
    has_nodes = np.diff(node_offset) > 0
    tree = np.flatnonzero(has_nodes)
    cur = node_offset[:-1][has_nodes]
    cur_pos = np.zeros(cur.shape[0], np.int64)
    lv = 0
    while cur.shape[0]:
        if lv >= max_depth:
            raise ValueError(f"a tree deeper than {max_depth}")
        level[cur] = lv
        pos[cur] = cur_pos
        nxt_t, nxt, nxt_pos = [], [], []
        for side, kids in ((0, left), (1, right)):
            k = kids[cur]
            p2 = 2 * cur_pos + side
            inner = k >= 0
            nxt_t.append(tree[inner])
            nxt.append(node_offset[tree[inner]] + k[inner])
            nxt_pos.append(p2[inner])
            lf = leaf_offset[tree[~inner]] + ~k[~inner]
            leaf_level[lf] = lv + 1
            leaf_pos[lf] = p2[~inner]
        tree = np.concatenate(nxt_t)
        cur = np.concatenate(nxt)
        cur_pos = np.concatenate(nxt_pos)
        lv += 1
    if (level < 0).any():
        raise ValueError("a node no root reaches")
    return level, pos, leaf_level, leaf_pos


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
    node for all lanes, those below lane by lane in complete form (rs_simd.h).

    - ``lv_nodes`` (LV_NODE_DTYPE as uint32): each tree's nodes above its split, level by
      level, by position; ``lv_node_offset`` (n_trees + 1) where each tree's start;
      ``lv_level_end`` (uint16, LEVELS_ENDS a tree): the nodes of levels up to ``l``;
      ``lv_depth``, ``lv_split`` (uint8);
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
    F = ens.n_features
    packed = ens.trees.arrays
    S = int(slot_column.shape[0])
    node_offset = np.asarray(ens.trees.node_offset, np.int64)
    leaf_offset = np.asarray(ens.trees.leaf_offset, np.int64)
    n_trees = node_offset.shape[0] - 1
    n_nodes = int(node_offset[-1])
    level, pos, leaf_level, leaf_pos = node_levels(ens, min(max_depth, LEVELS_MAX_DEPTH))
    tree_of_node = np.repeat(np.arange(n_trees), np.diff(node_offset))
    depth = np.zeros(n_trees, np.int64)
    np.maximum.at(depth, tree_of_node, level + 1)
    # the nodes' columns and threshold indices, in the rank slots of rs_layout
    feature = np.asarray(packed["feature"], np.int64)
    threshold = np.asarray(packed["threshold"], np.float64)
    slot_base = np.searchsorted(slot_column, np.arange(F + 1), side="left")
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
    thr = j % MAX_THRESHOLDS
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
    nodes["thr_b"] = (thr[order] ^ 0x80).astype(np.uint8)
    nodes["pos"] = pos[order]
    counts[np.arange(LEVELS_ENDS)[None, :] >= split[:, None]] = 0
    level_end = np.cumsum(counts, axis=1)
    node_off = np.zeros(n_trees + 1, np.int64)
    np.cumsum(level_end[:, -1], out=node_off[1:])
    deep_off = np.zeros(n_trees + 1, np.int64)
    np.cumsum(np.left_shift(1, depth) - np.left_shift(1, split), out=deep_off[1:])
    deep = np.zeros(int(deep_off[-1]), LV_NODE_DTYPE)
    deep["thr_b"] = SENTINEL_THR ^ 0x80
    low = ~upper
    t_low = tree_of_node[low]
    at = deep_off[t_low] + np.left_shift(1, level[low]) - np.left_shift(1, split[t_low]) + pos[low]
    deep["col"][at] = col[low]
    deep["thr_b"][at] = (thr[low] ^ 0x80).astype(np.uint8)
    slot_count = np.left_shift(1, depth)
    slot_offset = np.zeros(n_trees + 1, np.int64)
    np.cumsum(slot_count, out=slot_offset[1:])
    tree_of_leaf = np.repeat(np.arange(n_trees), np.diff(leaf_offset))
    leaf_slot = slot_offset[tree_of_leaf] + (leaf_pos << (depth[tree_of_leaf] - leaf_level))
    slot_leaf = np.zeros(int(slot_offset[-1]), np.uint16)
    slot_leaf[leaf_slot] = np.arange(leaf_offset[-1]) - leaf_offset[tree_of_leaf]
    value = np.zeros(int(slot_offset[-1]), np.float64)
    value[leaf_slot] = np.asarray(packed["leaf_value"], np.float64)
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
            "lv_combos": combos.astype(np.int32)}


def level_block_starts(arrays: dict, budget_bytes: int) -> np.ndarray:
    """Consecutive trees whose level fields that a group's walk reads (the nodes walked
    node by node, the deep records, the slots' values and the level ends) fit in
    ``budget_bytes``, at least one tree a block: the first tree of each block, then the
    number of trees."""
    value_bytes = 8 if arrays["lv_value"].shape[0] else 4
    per_tree = (4 * np.diff(arrays["lv_node_offset"]) + 4 * np.diff(arrays["lv_deep_offset"])
                + value_bytes * np.diff(arrays["lv_slot_offset"]) + 2 * LEVELS_ENDS)
    return greedy_blocks(per_tree, int(budget_bytes))


def level_ratio(arrays: dict) -> float:
    """A layout's nodes per level of its trees (0 without the level fields): those walked
    node by node and the deep records' real nodes (a threshold index below 255)."""
    levels = int(np.sum(arrays["lv_depth"], dtype=np.int64))
    deep = int(np.count_nonzero(entry_thr(arrays["lv_deep"]) != SENTINEL_THR))
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
    (_, thresholds), counts = _distinct_pairs(np.asarray(packed["feature"], np.int64),
                                              np.asarray(packed["threshold"], np.float64), F)
    slot_column, rank_offsets = _slot_table(F, counts, _slot_base(counts))
    rank_thresholds = np.ascontiguousarray(thresholds, np.float64)
    n_trees = ens.n_trees
    block_starts = np.array([0, n_trees], np.int64)
    tree_byte_offsets = np.zeros(n_trees + 1, np.int64)
    return {
        **level_arrays(ens, slot_column, rank_offsets, rank_thresholds, lane_nodes),
        **_rank_fields(rank_offsets, rank_thresholds),
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
    }


def rapidscorer_arrays(ens: Ensemble, block_starts: np.ndarray, mirror: bool = True,
                       levels: bool = False, lane_nodes: int = LEVELS_LANE_NODES) -> dict:
    """The layout (see the module docstring) of ``ens`` in tree blocks ``block_starts``
    (``mirror``: with mirrored nodes where they pay), its sorting and byte splitting in C
    (``src/quickscorer/_layout.pyx``); the same arrays as
    :func:`rapidscorer_arrays_reference`."""
    qs, order, slot_column, (rank_offsets, rank_thresholds, rank), S, cat = _folded(
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
    return {
        **lv,
        **_rank_fields(rank_offsets, rank_thresholds),
        "slot_column": slot_column,
        "tree_byte_offsets": tree_byte_offsets,
        "block_starts": block_starts,
        "entries": entries,
        "segments": _unfold(segments, S),
        "block_segments": block_segments,
        "leaf_offset": np.asarray(ens.trees.leaf_offset, np.int64),
        **leaf_arrays(ens, order),
        **categorical_fields(cat, tree_byte_offsets, block_starts),
        "lv_only": np.zeros(1, np.uint8),
    }


def rapidscorer_arrays_reference(ens: Ensemble, block_starts: np.ndarray,
                                 mirror: bool = True) -> dict:
    """The layout (see the module docstring) in numpy (the reference of
    :func:`rapidscorer_arrays`)."""
    qs, leaf_order, slot_column, table, S, cat = _folded(ens, mirror, fold_halves_reference)
    F = N_HALVES * S                  # segment features
    n_seg = N_SEGMENT_KINDS * F
    n_trees = ens.n_trees
    n_bytes = tree_bytes(ens)
    tree_byte_offsets = np.zeros(n_trees + 1, np.int64)
    np.cumsum(n_bytes, out=tree_byte_offsets[1:])
    block_starts = np.asarray(block_starts, np.int64)
    n_blocks = block_starts.shape[0] - 1
    block_of_tree = np.repeat(np.arange(n_blocks), np.diff(block_starts))
    block_base = tree_byte_offsets[block_starts[:-1]]
    two = qs["tree_word_offsets"]

    def word_bytes(word: np.ndarray):
        """Tree, block and block-relative first byte of absolute QuickScorer words."""
        tree = np.searchsorted(two, word, side="right") - 1
        block = block_of_tree[tree]
        return block, (tree_byte_offsets[tree] - block_base[block]
                       + (word.astype(np.int64) - two[tree]) * 8)

    idx, seg, feat = _entry_features(qs)
    rank = table[2][idx].astype(np.int64)        # the tests' threshold indices (fold's)
    rank_offsets, rank_thresholds = table[0], table[1]
    rank_zero = np.zeros(S, np.uint8)
    for f in range(S):
        rank_zero[f] = np.searchsorted(rank_thresholds[rank_offsets[f]:rank_offsets[f + 1]],
                                       0.0, side="left")
    fields = {**_rank_fields(rank_offsets, rank_thresholds), "rank_zero": rank_zero}

    # --- entries: epitomes, sorted by (block, segment, rank), sentinels -------------------
    block, wbyte = word_bytes(qs["words"][idx])
    src, byte, bmask = _changed_bytes(wbyte, qs["masks"][idx])
    key = block[src] * n_seg + seg[src]
    order = np.lexsort((rank[src], key))
    key = key[order]
    keys, counts = np.unique(key, return_counts=True)   # the non-empty (block, segment)s
    starts = np.zeros(keys.shape[0] + 1, np.int64)
    np.cumsum(counts + 1, out=starts[1:])               # each closed by a sentinel
    if starts[-1] >= 2**32:
        raise ModelFormatError("the model has too many nodes for the rapidscorer layout")
    entries = np.zeros(int(starts[-1]), ENTRY_DTYPE)
    entries["thr_b"] = SENTINEL_THR ^ 0x80
    entries["mask"] = 0xFF
    pos = np.arange(key.shape[0]) + np.searchsorted(keys, key)   # skip earlier sentinels
    entries["byte"][pos] = byte[order]
    entries["thr_b"][pos] = rank[src][order] ^ 0x80
    entries["mask"][pos] = bmask[order]
    segments = ((keys % n_seg).astype(np.uint64) << np.uint64(32)) | starts[:-1].astype(np.uint64)
    block_segments = np.zeros(n_blocks + 1, np.int64)
    np.cumsum(np.bincount(keys // n_seg, minlength=n_blocks), out=block_segments[1:])

    return {
        **fields,
        **no_level_fields(),        # (the level fields have one builder, level_arrays)
        "model_used": np.unique(feat % S).astype(np.int32),
        "slot_column": slot_column,
        "tree_byte_offsets": tree_byte_offsets,
        "block_starts": block_starts,
        "entries": entries.view(np.uint32),
        "segments": _unfold(segments, S),
        "block_segments": block_segments,
        "leaf_offset": np.asarray(ens.trees.leaf_offset, np.int64),
        **leaf_arrays(ens, leaf_order),
        **categorical_fields(cat, tree_byte_offsets, block_starts),
        "lv_only": np.zeros(1, np.uint8),
    }
