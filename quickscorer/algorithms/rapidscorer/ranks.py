"""RapidScorer's rank space: thresholds compared as bytes.

Per feature, the distinct thresholds of all its numerical nodes, sorted; a node with threshold
index ``j`` is false for a value ``x`` exactly when ``rank(x) = #{thresholds < x} > j``. The
kernel computes ``rank(x)`` once per document and feature by a two-level search
(:func:`rank_search_table`) and compares bytes; NaN and zero take ``rank_zero[f]``, the rank of
0.0, where no segment treats them as missing.

**Rank slots**: a rank is a byte, so a feature with more than 255 distinct thresholds
(XGBoost's ``exact`` method; LightGBM with ``max_bin`` above 256) is ranked in several slots,
slot ``v`` holding its thresholds ``255 v`` to ``255 v + 254``. A value's rank in slot ``v`` is
``clamp(rank(x) - 255 v, 0, 255)``, and a node of threshold index ``j`` is false exactly when
the rank in slot ``j // 255`` exceeds ``j % 255``. ``slot_column[s]`` names the input column
slot ``s`` reads; where no feature has more than 255 thresholds, slot ``s`` is feature ``s``.

**Half-features**: a feature's nodes are split by the side their missing values go to and by
whether they are mirrored (``N_HALVES`` variants, :func:`fold_halves` folds their threshold
indices into the slots). An entry (``ENTRY_DTYPE``, ``rs_entry`` of ``rapidscorer/scan.h``) stores
its threshold index as the scans compare it, ``thr ^ 0x80`` (signed); ``SENTINEL_THR`` closes a
segment.
"""
from __future__ import annotations

import numpy as np

from .. import _layout
from ..qs.layout import N_SEGMENT_KINDS, entry_trees

#: ranks are bytes: a feature may have this many distinct thresholds (index 255 is the sentinel)
MAX_THRESHOLDS = 255

SENTINEL_THR = 255

#: rs_entry of rapidscorer/scan.h, 4 bytes: uint16 byte (block-relative row), uint8 thr_b (the
#: threshold index ``thr`` as the scans compare it, ``thr ^ 0x80``: signed), uint8 mask
ENTRY_DTYPE = np.dtype([("byte", "<u2"), ("thr_b", "u1"), ("mask", "u1")])

#: node variants a feature is split into (mirrored or not, missing values cleared or not)
N_HALVES = 4

def half_ranks(qs: dict, F: int):
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
    return half_offsets, half_rank, half_to_rank, counts, values, slot_base(counts)

def slot_base(counts: np.ndarray) -> np.ndarray:
    """The first slot of each feature of ``counts`` thresholds (one slot per 255, at least
    one), and the number of slots last."""
    slot_base = np.zeros(counts.shape[0] + 1, np.int64)
    np.cumsum(np.maximum(1, -(-counts // MAX_THRESHOLDS)), out=slot_base[1:])
    return slot_base

def slot_table(F: int, counts, slot_base):
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
    half_offsets, half_rank, half_to_rank, counts, values, slot_base = half_ranks(qs, F)
    words, masks, trees, segment_offsets, slot_rank = _layout.rs_fold_halves(
        qs["words"], qs["masks"], entry_trees(qs), qs["segment_offsets"], half_rank,
        half_offsets, half_to_rank, slot_base, F)
    del half_rank
    S = int(slot_base[-1])
    out = {"tree_word_offsets": qs["tree_word_offsets"], "segment_offsets": segment_offsets,
           "words": words, "masks": masks, "trees": trees}
    if consume:
        qs.clear()
    slot_column, slot_offsets = slot_table(F, counts, slot_base)
    return out, slot_column, (slot_offsets, values, slot_rank), S

def unfold(segments: np.ndarray, S: int) -> np.ndarray:
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

def entry_features(qs: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Indices of the real (non-sentinel) QuickScorer entries, their segment and feature."""
    real = np.ones(qs["words"].shape[0], bool)
    real[qs["segment_offsets"][1:] - 1] = False          # the sentinel closing each segment
    idx = np.flatnonzero(real)
    seg = np.searchsorted(qs["segment_offsets"], idx, side="right") - 1
    return idx, seg, seg // N_SEGMENT_KINDS

def feature_thresholds(qs: dict, n_features: int):
    """Per feature, the sorted distinct thresholds of its numerical entries (all segments):
    ``(features, thresholds)`` of the distinct pairs in (feature, threshold) order, and the
    count per feature."""
    idx, _, feat = entry_features(qs)
    return distinct_pairs(feat, qs["thresholds"][idx], n_features)

def distinct_pairs(feature: np.ndarray, threshold: np.ndarray, n_features: int):
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
    pairs, counts = feature_thresholds(qs, n_features)
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

def entry_thr(entries: np.ndarray) -> np.ndarray:
    """The threshold index of each entry of a layout's ``entries`` (uint32 or
    ``ENTRY_DTYPE``); ``SENTINEL_THR`` at sentinels."""
    return entries.view(ENTRY_DTYPE)["thr_b"] ^ 0x80

def rank_fields(rank_offsets: np.ndarray, rank_thresholds: np.ndarray) -> dict:
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
