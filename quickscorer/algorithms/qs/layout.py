"""The QuickScorer layout (Lucchese et al., SIGIR 2015, Algorithm 1), built once per model.

Every node of every tree becomes *mask entries*: the node's left bitvector (ones except zeros
on the leaves of its left subtree) restricted to the 64-bit words its zero run touches, one
entry ``(word, mask)`` per word. ``word`` is absolute: tree ``t`` owns the words
``tree_word_offsets[t] : tree_word_offsets[t + 1]`` of a row's bitvectors (``ceil(leaves / 64)``
of them), leaf ``i`` at bit ``i % 64`` of its word ``i // 64``. A node of a tree with more
than 64 leaves may thus give several entries; they carry the same threshold, so a scan
applies all or none of them. Entries of one tree with the same (feature, threshold, word)
are merged by AND.

How an input value decides a node is not always ``x > threshold`` (docs/semantics.md), so the
numerical entries of a feature are kept in three *segments*, by how the node treats a
missing value, each sorted by threshold and closed by a ``+inf`` sentinel (never passed by
the scan, so the scan needs no end test)::

    segment 3 f + 0  MISSING_NONE (LightGBM): NaN is compared as 0.0
    segment 3 f + 1  MISSING_ZERO (LightGBM): 0.0 and NaN take the default side
    segment 3 f + 2  MISSING_NAN and every XGBoost node: NaN takes the default side

A value that is not decided by comparison instead ANDs a precomputed *mask list* (entries of
the nodes that send it right, merged per word). Lists live in ``list_words``/``list_masks``,
list ``j`` being ``list_offsets[j] : list_offsets[j + 1]``:

    list f                 NaN on feature f: nodes of segments 1 and 2 and categorical nodes
                           whose default side is right
    list F + f             0.0 on feature f: segment-1 nodes whose default side is right
    list 2 F + f           a category no categorical node of f lists (or a value naming no
                           category): every categorical node of f
    list 3 F + j           category ``category_keys[j]``: the categorical nodes not listing it
    list 3 F + K + d       categorical node ``d`` of a feature in direct mode: its own mask

with ``F = n_features`` and ``K = len(category_keys)``. A feature's categories are looked up
by binary search in ``category_keys[category_key_offsets[f] : category_key_offsets[f + 1]]``.
When that table would be too large (many categories times many nodes), the feature is put in
*direct* mode instead: the kernel tests each categorical node's bitset and ANDs the node's
own list when it goes right.
"""
from __future__ import annotations

import numpy as np

from ...errors import ModelFormatError
from ...ir import _build
from ...ir.ensemble import MISSING_NAN, MISSING_NONE, MISSING_ZERO, Ensemble
from .. import _layout
from ..forest import category_bitset

N_SEGMENT_KINDS = 3
SEGMENT_NONE, SEGMENT_ZERO, SEGMENT_NAN = MISSING_NONE, MISSING_ZERO, MISSING_NAN

CATEGORY_MODE_NONE = 0    # the feature has no categorical node
CATEGORY_MODE_TABLE = 1   # look the category up in category_keys
CATEGORY_MODE_DIRECT = 2  # test every categorical node's bitset

#: per feature, a category table may hold at most this many (category, mask entry) pairs
#: before merging; beyond it the feature is scored in direct mode
MAX_CATEGORY_TABLE_PAIRS = 1 << 20

_ALL_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


def _low_ones(n: np.ndarray) -> np.ndarray:
    """uint64 words with the ``n`` lowest bits set, for ``0 <= n <= 64``."""
    n = n.astype(np.uint64)
    shifted = np.left_shift(np.uint64(1), np.minimum(n, np.uint64(63))) - np.uint64(1)
    return np.where(n >= 64, _ALL_ONES, shifted).astype(np.uint64)


def node_mask_words(lo: np.ndarray, mid: np.ndarray, word_base: np.ndarray):
    """Split each node's left bitvector into the words its zero run ``[lo, mid)`` touches.

    Returns ``(node, word, mask)``: for every entry the index of its node in the inputs, the
    absolute word (``word_base`` of the node's tree plus the word within the tree) and the
    mask (zeros exactly on the node's left leaves within that word).
    """
    lo = np.asarray(lo, np.int64)
    mid = np.asarray(mid, np.int64)
    first = lo // 64
    count = (mid - 1) // 64 - first + 1
    node = np.repeat(np.arange(lo.shape[0]), count)
    starts = np.cumsum(count) - count
    w = first[node] + (np.arange(node.shape[0]) - np.repeat(starts, count))
    a = np.maximum(lo[node] - 64 * w, 0)
    b = np.minimum(mid[node] - 64 * w, 64)
    zeros = _low_ones(b) & ~_low_ones(a)
    return node, (np.asarray(word_base, np.int64)[node] + w), ~zeros


def _and_merge(keys: list[np.ndarray], mask: np.ndarray):
    """Sort by ``keys`` (most significant first) and AND the masks of equal key tuples."""
    if mask.shape[0] == 0:
        return [k[:0] for k in keys], mask[:0]
    order = np.lexsort(tuple(reversed(keys)))
    keys = [k[order] for k in keys]
    mask = mask[order]
    new = np.ones(mask.shape[0], bool)
    new[1:] = False
    for k in keys:
        new[1:] |= k[1:] != k[:-1]
    starts = np.flatnonzero(new)
    return [k[starts] for k in keys], np.bitwise_and.reduceat(mask, starts)


def _lists(list_id: np.ndarray, word: np.ndarray, mask: np.ndarray, n_lists: int):
    """Mask lists: entries merged per (list, word), with offsets per list."""
    (list_id, word), mask = _and_merge([list_id, word], mask)
    offsets = np.zeros(n_lists + 1, np.int64)
    np.cumsum(np.bincount(list_id, minlength=n_lists), out=offsets[1:])
    return offsets, word, mask


def merge_equal_thresholds(thresholds: np.ndarray, segment_offsets: np.ndarray):
    """Group the entries of each segment by threshold, for a scan that compares once per
    distinct threshold (RapidScorer's node merging, Ye et al., KDD 2018).

    Trees split a feature at the same few values (LightGBM and XGBoost both split at histogram
    bin boundaries), so a segment holds long runs of equal thresholds. Returns
    ``(scan_thresholds, scan_segment_offsets, scan_node_offsets)``: segment ``s`` has the
    distinct thresholds ``scan_thresholds[scan_segment_offsets[s] : scan_segment_offsets[s+1]]``
    (ascending, the +inf sentinel last), and distinct threshold ``j`` owns the mask entries
    ``scan_node_offsets[j] : scan_node_offsets[j + 1]``. A scan passes threshold ``j`` when
    ``x > scan_thresholds[j]`` and then ANDs all of its entries, exactly as the entry-wise
    scan would; it still stops at the sentinel, whose entries it never applies.
    """
    n = thresholds.shape[0]
    start = np.ones(n, bool)
    if n > 1:
        start[1:] = thresholds[1:] != thresholds[:-1]
    start[segment_offsets[:-1][segment_offsets[:-1] < n]] = True  # never merge across segments
    first = np.flatnonzero(start)
    scan_node_offsets = np.append(first, n).astype(np.int64)
    scan_segment_offsets = np.searchsorted(first, segment_offsets).astype(np.int64)
    return thresholds[first].copy(), scan_segment_offsets, scan_node_offsets


def _categories(packed: dict, g: int) -> np.ndarray:
    """The categories of global internal node ``g`` of a packed ensemble (int64)."""
    offset = packed["cat_offset"]
    return packed["cat_values"][offset[g]:offset[g + 1]].astype(np.int64)


def quickscorer_arrays(ens: Ensemble, *,
                       max_category_table_pairs: int = MAX_CATEGORY_TABLE_PAIRS) -> dict:
    """The QuickScorer layout of ``ens`` as a dict of numpy arrays (see the module docstring
    and :func:`quickscorer_arrays_reference` for the keys): built in C
    (``src/quickscorer/algorithms/_layout.pyx``) for a model without categorical splits, by the
    numpy reference otherwise. Both give the same arrays."""
    if ens.has_categorical:
        return quickscorer_arrays_reference(
            ens, max_category_table_pairs=max_category_table_pairs)
    return _numeric_arrays(ens)


#: the grouping of equal thresholds (:func:`merge_equal_thresholds`): only ``vqs`` with
#: ``merge=True`` scans it
MERGE_FIELDS = ("scan_thresholds", "scan_segment_offsets", "scan_node_offsets")


def kernel_arrays(arrays: dict, merged: bool = False) -> dict:
    """The fields of a built layout that the kernels read, what a model keeps: without
    ``trees`` (:func:`entry_trees` derives them where a builder needs them) and, unless
    ``merged``, without :data:`MERGE_FIELDS`."""
    return {k: v for k, v in arrays.items()
            if k != "trees" and (merged or k not in MERGE_FIELDS)}


def with_merge(arrays: dict) -> dict:
    """``arrays`` with :data:`MERGE_FIELDS` (computed where they are absent; read-only)."""
    if all(k in arrays for k in MERGE_FIELDS):
        return arrays
    merged = dict(zip(MERGE_FIELDS, merge_equal_thresholds(arrays["thresholds"],
                                                           arrays["segment_offsets"])))
    for arr in merged.values():
        arr.setflags(write=False)
    return {**arrays, **merged}


def entry_trees(arrays: dict) -> np.ndarray:
    """The tree of each entry of a layout (-1 at the sentinel that closes each segment):
    ``trees`` where the layout holds it, else found from each entry's word."""
    if "trees" in arrays:
        return arrays["trees"]
    two = arrays["tree_word_offsets"]
    tree_of_word = np.repeat(np.arange(two.shape[0] - 1, dtype=np.int32), np.diff(two))
    trees = tree_of_word[arrays["words"]]
    trees[arrays["segment_offsets"][1:] - 1] = -1
    return trees


def tree_word_offsets_of(ens: Ensemble) -> np.ndarray:
    """Tree ``t``'s first word of a row's bitvectors: ``ceil(leaves / 64)`` words per tree."""
    tree_word_offsets = np.zeros(ens.n_trees + 1, np.int64)
    np.cumsum((ens.n_leaves + 63) // 64, out=tree_word_offsets[1:])
    if tree_word_offsets[-1] >= 2**32:
        raise ModelFormatError("the model has too many leaves for the QuickScorer layout")
    return tree_word_offsets


def _layout_dict(tree_word_offsets, thresholds, words, masks, trees, segment_offsets,
                 list_offsets, list_words, list_masks, categories: dict,
                 used_features) -> dict:
    """The layout's fields in one dict, with the scan's grouping of equal thresholds."""
    scan_thresholds, scan_segment_offsets, scan_node_offsets = merge_equal_thresholds(
        thresholds, segment_offsets)
    return {
        "tree_word_offsets": tree_word_offsets,
        "scan_thresholds": scan_thresholds,
        "scan_segment_offsets": scan_segment_offsets,
        "scan_node_offsets": scan_node_offsets,
        "thresholds": thresholds,
        "words": words,
        "masks": masks,
        "trees": trees,
        "segment_offsets": segment_offsets,
        "list_offsets": list_offsets,
        "list_words": list_words.astype(np.uint32, copy=False),
        "list_masks": list_masks.astype(np.uint64, copy=False),
        **categories,
        "used_features": used_features,
    }


def _no_categories(n_features: int) -> dict:
    """The category fields of a model without categorical splits."""
    return {
        "category_mode": np.zeros(n_features, np.uint8),
        "category_key_offsets": np.zeros(n_features + 1, np.int64),
        "category_keys": np.zeros(0, np.int64),
        "category_node_offsets": np.zeros(n_features + 1, np.int64),
        "category_node_bits_offset": np.zeros(0, np.int64),
        "category_node_nwords": np.zeros(0, np.int64),
        "category_bits": np.zeros(1, np.uint32),
    }


def _numeric_arrays(ens: Ensemble) -> dict:
    """:func:`quickscorer_arrays` of a model whose nodes are all numerical, in C."""
    F = ens.n_features
    tree_word_offsets = tree_word_offsets_of(ens)
    packed = ens.trees.arrays
    if ens.family == "xgboost":   # XGBoost sends only NaN to the default side
        kind = np.full(packed["feature"].shape[0], SEGMENT_NAN, np.uint8)
    else:
        kind = np.ascontiguousarray(packed["missing_type"], np.uint8)
    node_offset = np.ascontiguousarray(ens.trees.node_offset, np.int64)
    lo, mid, _ = _build.packed_leaf_ranges(np.ascontiguousarray(packed["left"], np.int32),
                                           np.ascontiguousarray(packed["right"], np.int32),
                                           node_offset)
    return numeric_layout(node_offset, np.ascontiguousarray(packed["feature"], np.int32),
                          np.ascontiguousarray(packed["threshold"], np.float64),
                          packed["default_left"].view(np.uint8), kind, lo, mid,
                          tree_word_offsets, F)


def numeric_layout(node_offset, feature, threshold, default_left, kind, lo, mid,
                   tree_word_offsets, n_features: int) -> dict:
    """The layout of numerical nodes given per node (packed, tree by tree): feature,
    threshold, default side, segment kind and the leaves ``[lo, mid)`` its mask clears."""
    (thresholds, words, masks, trees, segment_offsets, list_offsets, list_words, list_masks,
     used) = _layout.qs_numeric(node_offset, feature, threshold, default_left, kind, lo, mid,
                                tree_word_offsets, n_features)
    return _layout_dict(tree_word_offsets, thresholds, words, masks, trees, segment_offsets,
                        list_offsets, list_words, list_masks, _no_categories(n_features),
                        np.flatnonzero(used).astype(np.int32))


def block_arrays(ens: Ensemble, arrays: dict, starts, merged: bool = True) -> list[dict]:
    """The QuickScorer layouts of consecutive tree blocks of ``ens`` (block ``b``: trees
    ``starts[b] .. starts[b + 1] - 1``), each the layout of those trees alone, from the
    model's own layout ``arrays``: cut in C for a model without categorical splits (the
    blocks' arrays are views of one buffer per field), built anew per block otherwise.
    Without ``merged``, the blocks hold only :func:`kernel_arrays`."""
    starts = np.asarray(starts, np.int64)
    if not merged:
        return [kernel_arrays(a) for a in block_arrays(ens, arrays, starts)]
    if ens.has_categorical:
        return [quickscorer_arrays(Ensemble(
                    trees=ens.trees[a:b], tree_group=ens.tree_group[a:b],
                    n_outputs=ens.n_outputs, n_features=ens.n_features, family=ens.family,
                    base_score=ens.base_score))
                for a, b in zip(starts[:-1].tolist(), starts[1:].tolist())]
    F = ens.n_features
    (entry_start, thresholds, words, masks, trees, seg, list_start, lst, list_words,
     list_masks) = _layout.qs_split_blocks(
        arrays["thresholds"], arrays["words"], arrays["masks"], entry_trees(arrays),
        arrays["segment_offsets"], arrays["list_offsets"], arrays["list_words"],
        arrays["list_masks"], arrays["tree_word_offsets"], starts)
    two = arrays["tree_word_offsets"]
    no_categories = _no_categories(F)
    out = []
    for b in range(starts.shape[0] - 1):
        e0, e1 = int(entry_start[b]), int(entry_start[b + 1])
        l0, l1 = int(list_start[b]), int(list_start[b + 1])
        counts = np.diff(seg[b]).reshape(F, N_SEGMENT_KINDS) - 1
        out.append(_layout_dict(
            two[starts[b]:starts[b + 1] + 1] - two[starts[b]], thresholds[e0:e1],
            words[e0:e1], masks[e0:e1], trees[e0:e1], seg[b], lst[b], list_words[l0:l1],
            list_masks[l0:l1], no_categories,
            np.flatnonzero(counts.sum(axis=1) > 0).astype(np.int32)))
    return out


def quickscorer_arrays_reference(ens: Ensemble, *,
                                 max_category_table_pairs: int = MAX_CATEGORY_TABLE_PAIRS) -> dict:
    """The QuickScorer layout of ``ens`` as a dict of numpy arrays (see the module docstring),
    built with numpy for every model (the reference of the C builder and the builder of models
    with categorical splits).

    Keys: ``tree_word_offsets`` int64[n_trees + 1]; ``scan_thresholds``,
    ``scan_segment_offsets`` and ``scan_node_offsets`` (the entries grouped by distinct
    threshold, :func:`merge_equal_thresholds`, which V-QuickScorer scans with
    ``merge=True``); ``thresholds`` float64, ``words`` uint32,
    ``masks`` uint64 and ``trees`` int32 (-1 at sentinels), one per mask entry, in segment
    order; ``segment_offsets`` int64[3 n_features + 1]; ``list_offsets`` int64, ``list_words``
    uint32, ``list_masks`` uint64; ``category_mode`` uint8[n_features];
    ``category_key_offsets`` int64[n_features + 1], ``category_keys`` int64;
    ``category_node_offsets`` int64[n_features + 1] and, per categorical node in direct mode,
    ``category_node_bits_offset`` int64, ``category_node_nwords`` int64, with the 32-bit
    bitsets in ``category_bits`` uint32; ``used_features`` int32 (features any node splits on).
    """
    F = ens.n_features
    xgb = ens.family == "xgboost"
    tree_word_offsets = tree_word_offsets_of(ens)

    # All internal nodes of all trees, in tree then node order: the packed arrays themselves.
    packed = ens.trees.arrays
    node_offset = ens.trees.node_offset
    lo, mid, _ = _build.packed_leaf_ranges(np.ascontiguousarray(packed["left"], np.int32),
                                           np.ascontiguousarray(packed["right"], np.int32),
                                           np.ascontiguousarray(node_offset, np.int64))
    tree_of = np.repeat(np.arange(ens.n_trees, dtype=np.int64), ens.n_internal)
    nodes = {
        "tree": tree_of,
        "node": np.arange(tree_of.shape[0], dtype=np.int64) - node_offset[tree_of],
        "feature": packed["feature"].astype(np.int64),
        "threshold": packed["threshold"].astype(np.float64),
        "lo": lo,
        "mid": mid,
        "cat": packed["is_categorical"].astype(bool),
        "default_left": packed["default_left"].astype(bool),
        "missing": packed["missing_type"].astype(np.int64),
    }
    # XGBoost sends only NaN to the default side, whatever the node's missing type says.
    kind = np.full(nodes["tree"].shape[0], SEGMENT_NAN) if xgb else nodes["missing"]

    # Every node's mask entries; e_node maps an entry back to its node.
    e_node, e_word, e_mask = node_mask_words(nodes["lo"], nodes["mid"],
                                             tree_word_offsets[nodes["tree"]])
    e_feat = nodes["feature"][e_node]
    e_cat = nodes["cat"][e_node]

    num = ~e_cat
    thresholds, words, masks, trees, segment_offsets = _sorted_segments(
        F, e_feat[num] * N_SEGMENT_KINDS + kind[e_node[num]], nodes["threshold"][e_node[num]],
        e_word[num], e_mask[num], tree_word_offsets)

    # --- mask lists ------------------------------------------------------------------------------
    dl = nodes["default_left"][e_node]
    k = kind[e_node]
    ids, lw, lm = [], [], []

    def add(list_id, sel):
        ids.append(np.asarray(list_id, np.int64))
        lw.append(e_word[sel])
        lm.append(e_mask[sel])

    nan_sel = ~dl & (e_cat | (k != SEGMENT_NONE))
    add(e_feat[nan_sel], nan_sel)
    zero_sel = ~dl & ~e_cat & (k == SEGMENT_ZERO)
    add(F + e_feat[zero_sel], zero_sel)
    add(2 * F + e_feat[e_cat], e_cat)
    categories, n_lists = _category_lists(F, packed, nodes, e_node, e_cat, e_feat, add,
                                          max_category_table_pairs)
    list_offsets, list_words, list_masks = _lists(
        np.concatenate(ids), np.concatenate(lw), np.concatenate(lm), n_lists)
    return _layout_dict(tree_word_offsets, thresholds, words, masks, trees, segment_offsets,
                        list_offsets, list_words, list_masks, categories,
                        np.unique(nodes["feature"]).astype(np.int32))


def _sorted_segments(F: int, seg, thr, word, mask, tree_word_offsets):
    """The numerical entries (segment, threshold, word, mask) AND-merged and sorted into
    their segments, each closed by a +inf sentinel: thresholds, words, masks, trees (-1 at
    sentinels) and segment_offsets."""
    (seg, thr, word), mask = _and_merge([seg, thr, word], mask)
    n_seg = F * N_SEGMENT_KINDS
    segment_offsets = np.zeros(n_seg + 1, np.int64)
    np.cumsum(np.bincount(seg, minlength=n_seg) + 1, out=segment_offsets[1:])
    n_entries = int(segment_offsets[-1])
    thresholds = np.full(n_entries, np.inf)
    words = np.zeros(n_entries, np.uint32)
    masks = np.full(n_entries, _ALL_ONES, np.uint64)
    pos = np.arange(seg.shape[0]) + seg  # entries are sorted by segment: one sentinel before
    thresholds[pos] = thr                # each for every earlier segment
    words[pos] = word
    masks[pos] = mask
    trees = np.full(n_entries, -1, np.int32)
    trees[pos] = np.searchsorted(tree_word_offsets, word, side="right") - 1
    return thresholds, words, masks, trees, segment_offsets


def _category_lists(F: int, packed, nodes, e_node, e_cat, e_feat, add,
                    max_category_table_pairs: int):
    """The categorical features' mask lists (through ``add(list ids, entry selection)``):
    a table of keys per feature where keys x entries stay within ``max_category_table_pairs``,
    else direct mode (each node's own list and bitset). Returns the ``category_*`` arrays and
    the number of lists in all."""
    category_mode = np.zeros(F, np.uint8)
    key_offsets = np.zeros(F + 1, np.int64)
    keys_parts: list[np.ndarray] = []
    key_lists: list[tuple] = []       # (first key index, entry indices, key index per pair)
    cnode_offsets = np.zeros(F + 1, np.int64)
    direct_nodes: list[int] = []      # node indices (into `nodes`) in direct mode
    cat_nodes = np.flatnonzero(nodes["cat"])
    n_keys = 0
    for f in np.unique(nodes["feature"][cat_nodes]).tolist():
        fnodes = cat_nodes[nodes["feature"][cat_nodes] == f]
        sets = [_categories(packed, int(n)) for n in fnodes]
        fkeys = np.unique(np.concatenate(sets)) if sets else np.zeros(0, np.int64)
        fentries = np.flatnonzero(e_cat & (e_feat == f))
        if fkeys.shape[0] * fentries.shape[0] <= max_category_table_pairs:
            category_mode[f] = CATEGORY_MODE_TABLE
            # contains[j, i]: key j is listed by categorical node i of this feature
            contains = np.zeros((fkeys.shape[0], fnodes.shape[0]), bool)
            for i, s in enumerate(sets):
                contains[np.searchsorted(fkeys, s), i] = True
            local = np.searchsorted(fnodes, e_node[fentries])
            kj, ei = np.nonzero(~contains[:, local])
            key_lists.append((n_keys, fentries[ei], kj))
            keys_parts.append(fkeys)
            n_keys += fkeys.shape[0]
        else:
            category_mode[f] = CATEGORY_MODE_DIRECT
            direct_nodes.extend(fnodes.tolist())
        key_offsets[f + 1] = fkeys.shape[0] if category_mode[f] == CATEGORY_MODE_TABLE else 0
        cnode_offsets[f + 1] = fnodes.shape[0] if category_mode[f] == CATEGORY_MODE_DIRECT else 0
    key_offsets = np.cumsum(key_offsets)
    cnode_offsets = np.cumsum(cnode_offsets)
    category_keys = np.concatenate(keys_parts) if keys_parts else np.zeros(0, np.int64)
    for first, entries, kj in key_lists:
        add(3 * F + first + kj, entries)

    # direct mode: each node's own list and bitset (nodes in feature order, as offsets say)
    direct = np.asarray(direct_nodes, np.int64)
    bits_offset = np.zeros(direct.shape[0], np.int64)
    nwords = np.zeros(direct.shape[0], np.int64)
    bit_parts: list[np.ndarray] = []
    n_bits = 0
    if direct.shape[0]:
        slot = np.full(nodes["tree"].shape[0], -1, np.int64)
        slot[direct] = np.arange(direct.shape[0])
        sel = slot[e_node] >= 0
        add(3 * F + n_keys + slot[e_node[sel]], sel)
        for d, n in enumerate(direct.tolist()):
            # (a subset of the model's bitsets: within ir.ensemble.MAX_CATEGORY_WORDS words)
            bits = category_bitset(_categories(packed, int(n)))
            bits_offset[d] = n_bits
            nwords[d] = bits.shape[0]
            bit_parts.append(bits)
            n_bits += bits.shape[0]
    category_bits = np.concatenate(bit_parts) if bit_parts else np.zeros(1, np.uint32)

    categories = {
        "category_mode": category_mode,
        "category_key_offsets": key_offsets,
        "category_keys": category_keys.astype(np.int64),
        "category_node_offsets": cnode_offsets,
        "category_node_bits_offset": bits_offset,
        "category_node_nwords": nwords,
        "category_bits": category_bits.astype(np.uint32),
    }
    return categories, 3 * F + n_keys + direct.shape[0]
