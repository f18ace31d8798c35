"""The layout builders in C (src/quickscorer/algorithms/_layout.pyx) against the numpy references
kept in qs_layout / rs_layout: the same arrays, field by field, dtype included, on random
ensembles of every missing-value kind, trees of 1 to 300 leaves (several 64-bit words), +-inf
thresholds, both families, and on trained models; and the vqs tree blocks cut from the model's
layout equal to the layouts of the blocks' trees built alone."""
from __future__ import annotations

import numpy as np
import pytest
import rs_reference
from conftest import random_ensemble
from hypothesis import given, settings
from hypothesis import strategies as st

from quickscorer.algorithms import _layout
from quickscorer.algorithms.qs import layout as Q
from quickscorer.algorithms.rapidscorer import layout as R
from quickscorer.algorithms.rapidscorer import ranks as rs_ranks
from quickscorer.ir import Ensemble


def assert_same_arrays(got: dict, want: dict):
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key].dtype == want[key].dtype, key
        assert got[key].shape == want[key].shape, key
        np.testing.assert_array_equal(got[key], want[key], err_msg=key)


def numeric_ensemble(seed: int, family: str, n_trees: int, max_leaves: int,
                     n_features: int = 6, thresholds=None) -> Ensemble:
    kw = {} if thresholds is None else {"thresholds": thresholds}
    return random_ensemble(np.random.default_rng(seed), family, n_trees=n_trees,
                           n_features=n_features, max_leaves=max_leaves, p_categorical=0.0, **kw)


def sub_ensemble(ens: Ensemble, a: int, b: int) -> Ensemble:
    return Ensemble(trees=ens.trees[a:b], tree_group=ens.tree_group[a:b],
                    n_outputs=ens.n_outputs, n_features=ens.n_features, family=ens.family,
                    base_score=ens.base_score)


CASES = [(seed, family, n_trees, max_leaves)
         for seed, (n_trees, max_leaves) in enumerate([(1, 1), (5, 2), (30, 40), (12, 130),
                                                        (8, 300), (60, 64)])
         for family in ("lightgbm", "xgboost")]


@pytest.mark.parametrize("seed,family,n_trees,max_leaves", CASES)
def test_quickscorer_layout_in_c_equals_the_numpy_reference(seed, family, n_trees, max_leaves):
    ens = numeric_ensemble(seed, family, n_trees, max_leaves)
    assert not ens.has_categorical
    assert_same_arrays(Q.quickscorer_arrays(ens), Q.quickscorer_arrays_reference(ens))


@pytest.mark.parametrize("seed,family,n_trees,max_leaves", CASES)
def test_tree_blocks_cut_from_the_layout_equal_the_blocks_built_alone(seed, family, n_trees,
                                                                       max_leaves):
    ens = numeric_ensemble(seed, family, n_trees, max_leaves)
    arrays = Q.quickscorer_arrays(ens)
    rng = np.random.default_rng(seed)
    cuts = sorted(set(rng.integers(1, n_trees, size=3).tolist())) if n_trees > 1 else []
    starts = [0] + cuts + [n_trees]
    blocks = Q.block_arrays(ens, arrays, starts)
    assert len(blocks) == len(starts) - 1
    for block, a, b in zip(blocks, starts[:-1], starts[1:]):
        assert_same_arrays(block, Q.quickscorer_arrays_reference(sub_ensemble(ens, a, b)))


@pytest.mark.parametrize("seed,family,n_trees,max_leaves",
                         [c for c in CASES if c[3] <= R.MAX_LEAVES])
@pytest.mark.parametrize("budget", [8, 512, 1 << 20])
def test_rapidscorer_layout_in_c_equals_the_numpy_reference(seed, family, n_trees, max_leaves,
                                                            budget):
    ens = numeric_ensemble(seed, family, n_trees, max_leaves)
    assert R.unsupported(ens) is None
    starts = R.block_starts_for(R.tree_bytes(ens), budget, 32)
    assert_same_rapidscorer(ens, starts)


def assert_same_rapidscorer(ens, starts):
    """The layout, with and without mirrored nodes, in C and in numpy; whether the model
    had mirrored nodes."""
    for mirror in (False, True):
        got = R.rapidscorer_arrays(ens, starts, mirror)
        assert_same_arrays(got, rs_reference.rapidscorer_arrays_reference(ens, starts, mirror))
    return got["leaf_order"].shape[0] != 0


@pytest.mark.parametrize("family", ["lightgbm", "xgboost"])
@pytest.mark.parametrize("n_distinct", [256, 600])
def test_rapidscorer_layout_over_rank_slots_in_c_equals_the_numpy_reference(family,
                                                                             n_distinct):
    # features of more than 255 distinct thresholds: several rank slots each
    rng = np.random.default_rng(n_distinct)
    values = np.r_[0.0, -np.inf, np.unique(rng.normal(size=n_distinct))]
    ens = numeric_ensemble(n_distinct, family, 60, 150, n_features=2, thresholds=values)
    qs, _, _ = R.half_arrays(ens)
    # the union of the half-features' thresholds (C merge) is the one sorted in numpy
    for a, b in zip(rs_ranks.half_ranks(qs, ens.n_features),
                    rs_reference.half_ranks_reference(qs, ens.n_features)):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    for budget in (64, 1 << 20):
        starts = R.block_starts_for(R.tree_bytes(ens), budget, 32)
        assert assert_same_rapidscorer(ens, starts)
        got = R.rapidscorer_arrays(ens, starts)
        assert got["slot_column"].shape[0] > ens.n_features     # several slots a feature


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), family=st.sampled_from(["lightgbm", "xgboost"]),
       n_trees=st.integers(1, 25), max_leaves=st.integers(1, 140),
       n_features=st.integers(1, 5),
       thresholds=st.lists(st.sampled_from([-np.inf, -2.0, -0.0, 0.0, 1e-300, 0.5, 0.5000001,
                                            3.0, np.inf]), min_size=1, max_size=6))
def test_c_builders_match_the_references_on_random_models(seed, family, n_trees, max_leaves,
                                                          n_features, thresholds):
    ens = numeric_ensemble(seed, family, n_trees, max_leaves, n_features, thresholds)
    qs = Q.quickscorer_arrays(ens)
    assert_same_arrays(qs, Q.quickscorer_arrays_reference(ens))
    if R.unsupported(ens) is None:
        starts = R.block_starts_for(R.tree_bytes(ens), 64 * (1 + seed % 4), 32)
        assert_same_rapidscorer(ens, starts)
    half = max(1, n_trees // 2)
    starts = [0, half, n_trees] if half < n_trees else [0, n_trees]
    for block, a, b in zip(Q.block_arrays(ens, qs, starts), starts[:-1], starts[1:]):
        assert_same_arrays(block, Q.quickscorer_arrays_reference(sub_ensemble(ens, a, b)))


def test_rank_table_sorts_dedupes_and_ranks_per_feature():
    rng = np.random.default_rng(0)
    for n_features, n, distinct in [(1, 1, 1), (7, 5000, 40), (3, 20000, 20000), (50, 10, 3)]:
        feature = rng.integers(0, n_features, n).astype(np.int32)
        threshold = rng.integers(0, distinct, n) * 0.25 - 3.0
        threshold[rng.random(n) < 0.05] = np.inf
        offsets, values, rank = _layout.rank_table(feature, threshold, n_features)
        for f in range(n_features):
            want = np.unique(threshold[feature == f])
            np.testing.assert_array_equal(values[offsets[f]:offsets[f + 1]], want)
            np.testing.assert_array_equal(rank[feature == f],
                                          np.searchsorted(want, threshold[feature == f]))
    for ordered in (np.arange(3000.0), np.arange(3000.0)[::-1].copy(), np.zeros(3000)):
        offsets, values, rank = _layout.rank_table(np.zeros(3000, np.int32), ordered, 1)
        np.testing.assert_array_equal(values, np.unique(ordered))


def test_rank_table_refuses_bad_input():
    with pytest.raises(ValueError, match="out of range"):
        _layout.rank_table(np.array([0, 3], np.int32), np.zeros(2), 3)
    with pytest.raises(ValueError, match="NaN"):
        _layout.rank_table(np.array([0, 1], np.int32), np.array([0.0, np.nan]), 3)
    with pytest.raises(ValueError, match="differ in length"):
        _layout.rank_table(np.array([0], np.int32), np.zeros(2), 3)


def test_split_refuses_inconsistent_blocks():
    ens = numeric_ensemble(1, "lightgbm", 6, 10)
    a = Q.quickscorer_arrays(ens)
    args = [a[k] for k in ("thresholds", "words", "masks", "trees", "segment_offsets",
                           "list_offsets", "list_words", "list_masks", "tree_word_offsets")]
    for starts in ([0, 3], [0, 3, 3, 6], [1, 6], [0, 7]):
        with pytest.raises(ValueError):
            _layout.qs_split_blocks(*args, np.asarray(starts, np.int64))
    # an array shorter than the entries is refused, not read past its end
    for k in range(4):
        short = list(args)
        short[k] = short[k][:-1]
        with pytest.raises(ValueError, match="inconsistent"):
            _layout.qs_split_blocks(*short, np.asarray([0, 6], np.int64))


@pytest.mark.parametrize("seed,family,n_trees,max_leaves", CASES)
def test_segment_rank_table_equals_the_numpy_rank_table(seed, family, n_trees, max_leaves):
    ens = numeric_ensemble(seed, family, n_trees, max_leaves)
    qs = Q.quickscorer_arrays(ens)
    offsets, values, rank = _layout.segment_rank_table(qs["thresholds"], qs["segment_offsets"],
                                                       ens.n_features)
    want_offsets, want_values = rs_ranks.rank_table(qs, ens.n_features)
    np.testing.assert_array_equal(offsets, want_offsets)
    np.testing.assert_array_equal(values, want_values)
    real = qs["trees"] >= 0
    assert (rank[~real] == -1).all()
    feature = np.repeat(np.arange(3 * ens.n_features), np.diff(qs["segment_offsets"])) // 3
    np.testing.assert_array_equal(values[offsets[feature[real]] + rank[real]],
                                  qs["thresholds"][real])


@pytest.mark.parametrize("seed,family,n_trees,max_leaves", CASES)
def test_held_layouts_keep_what_the_kernels_read(seed, family, n_trees, max_leaves):
    """A model keeps its layout without the tree of each entry (derived again from the words
    where a builder needs it) and without the grouping of equal thresholds (added back for a
    merged vqs scan): the derived fields equal the built ones."""
    ens = numeric_ensemble(seed, family, n_trees, max_leaves)
    built = Q.quickscorer_arrays(ens)
    held = Q.kernel_arrays(built)
    assert "trees" not in held and not set(Q.MERGE_FIELDS) & set(held)
    np.testing.assert_array_equal(Q.entry_trees(held), built["trees"])
    assert_same_arrays(Q.with_merge(held), Q.kernel_arrays(built, merged=True))
    starts = np.array([0, (n_trees + 1) // 2, n_trees], np.int64)
    if starts[1] in (0, n_trees):
        starts = np.array([0, n_trees], np.int64)
    for got, want in zip(Q.block_arrays(ens, held, starts, merged=False),
                         Q.block_arrays(ens, built, starts)):
        assert_same_arrays(got, Q.kernel_arrays(want))
