"""The numpy builders of RapidScorer's layout: slow, obvious, and the reference the C builders of
``src/quickscorer/algorithms/_layout.pyx`` are tested against (``tests/test_layout_builders.py``).
"""
from __future__ import annotations

import numpy as np

from quickscorer.algorithms import _layout
from quickscorer.algorithms.qs.layout import N_SEGMENT_KINDS, entry_trees
from quickscorer.algorithms.rapidscorer.categorical import categorical_fields
from quickscorer.algorithms.rapidscorer.layout import (
    changed_bytes,
    folded,
    leaf_arrays,
    tree_bytes,
)
from quickscorer.algorithms.rapidscorer.levels import no_level_fields
from quickscorer.algorithms.rapidscorer.ranks import (
    ENTRY_DTYPE,
    MAX_THRESHOLDS,
    N_HALVES,
    SENTINEL_THR,
    entry_features,
    rank_fields,
    slot_base,
    slot_table,
    unfold,
)
from quickscorer.algorithms.rapidscorer.walks import no_walk_fields
from quickscorer.errors import ModelFormatError
from quickscorer.ir.ensemble import Ensemble


def half_ranks_reference(qs: dict, F: int):
    """:func:`half_ranks` with the union sorted in numpy."""
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
            np.ascontiguousarray(to[new], np.float64), slot_base(counts))

def fold_halves_reference(qs: dict, n_features: int,
                          consume: bool = False) -> tuple[dict, np.ndarray, tuple, int]:
    """:func:`fold_halves` with the union of thresholds and the entries in numpy (its
    reference)."""
    F = n_features
    (half_offsets, half_rank, half_to_rank, counts, values,
     slot_base) = half_ranks_reference(qs, F)
    S = int(slot_base[-1])
    idx, seg, half = entry_features(qs)
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
    slot_column, slot_offsets = slot_table(F, counts, slot_base)
    return out, slot_column, (slot_offsets, values, slot_rank), S

def rapidscorer_arrays_reference(ens: Ensemble, block_starts: np.ndarray,
                                 mirror: bool = True) -> dict:
    """The layout (see the module docstring) in numpy (the reference of
    :func:`rapidscorer_arrays`)."""
    qs, leaf_order, slot_column, table, S, cat = folded(ens, mirror, fold_halves_reference)
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

    idx, seg, feat = entry_features(qs)
    rank = table[2][idx].astype(np.int64)        # the tests' threshold indices (fold's)
    rank_offsets, rank_thresholds = table[0], table[1]
    rank_zero = np.zeros(S, np.uint8)
    for f in range(S):
        rank_zero[f] = np.searchsorted(rank_thresholds[rank_offsets[f]:rank_offsets[f + 1]],
                                       0.0, side="left")
    fields = {**rank_fields(rank_offsets, rank_thresholds), "rank_zero": rank_zero}

    # --- entries: epitomes, sorted by (block, segment, rank), sentinels -------------------
    block, wbyte = word_bytes(qs["words"][idx])
    src, byte, bmask = changed_bytes(wbyte, qs["masks"][idx])
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
        **no_walk_fields(),         # (and the gathered walk's, walk_arrays)
        "model_used": np.unique(feat % S).astype(np.int32),
        "slot_column": slot_column,
        "tree_byte_offsets": tree_byte_offsets,
        "block_starts": block_starts,
        "entries": entries.view(np.uint32),
        "segments": unfold(segments, S),
        "block_segments": block_segments,
        "leaf_offset": np.asarray(ens.trees.leaf_offset, np.int64),
        **leaf_arrays(ens, leaf_order),
        **categorical_fields(cat, tree_byte_offsets, block_starts),
        "lv_only": np.zeros(1, np.uint8),
    }
