"""What a loaded model holds: flat arrays and no object per tree, layouts built only when a
call needs them, and ``Model.memory()``'s account of the bytes (issue 15)."""
from __future__ import annotations

import gc
import pickle

import numpy as np
import pytest
from conftest import random_ensemble

import quickscorer
from quickscorer.ir import Tree
from quickscorer.ir.ensemble import PackedTrees


def _model(seed=0, **kw):
    rng = np.random.default_rng(seed)
    return quickscorer.Model(random_ensemble(rng, "lightgbm", n_trees=30, **kw))


def test_loaded_model_keeps_no_object_per_tree():
    model = _model()
    gc.collect()
    assert isinstance(model.ensemble.trees, PackedTrees)
    alive = [o for o in gc.get_objects() if isinstance(o, Tree)]
    assert alive == []
    # a tree asked for is a view of the flat arrays, not a copy
    tree = model.ensemble.trees[7]
    flat = model.ensemble.trees.arrays
    assert np.shares_memory(tree.threshold, flat["threshold"])
    assert np.shares_memory(tree.leaf_value, flat["leaf_value"])
    n0 = int(model.ensemble.trees.node_offset[7])
    assert np.array_equal(tree.feature, flat["feature"][n0:n0 + tree.n_internal])


def test_slices_and_pickles_of_packed_trees_give_the_same_trees():
    model = _model(seed=3)
    trees = model.ensemble.trees
    part = trees[5:12]
    assert isinstance(part, PackedTrees) and len(part) == 7
    for i in range(7):
        a, b = part[i], trees[5 + i]
        for name in ("feature", "threshold", "left", "right", "leaf_value", "cat_offsets",
                     "cat_values", "leaf_source_id"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), name
    copy = pickle.loads(pickle.dumps(model))
    X = np.random.default_rng(1).normal(size=(50, model.n_features))
    assert np.array_equal(copy.predict(X, raw_score=True), model.predict(X, raw_score=True))


def test_layouts_are_built_when_a_call_needs_them():
    model = _model()
    assert model.info()["layout_bytes"] == {}
    X = np.random.default_rng(2).normal(size=(200, model.n_features))
    model.predict(X)
    chosen = quickscorer.algorithms.autoselect.choose(model.supported_algorithms(), 200, 1)
    assert list(model.info()["layout_bytes"]) == [chosen]
    warm = quickscorer.Model(model.ensemble, prepare=("auto",))
    assert set(warm.info()["layout_bytes"]) == set(
        quickscorer.algorithms.autoselect.candidates(warm.supported_algorithms(),
                                                     warm.info()["one_row_algorithm"]))


def test_memory_account_counts_each_buffer_once():
    model = quickscorer.Model(_model().ensemble, prepare=("quickscorer", "vqs", "traversal"))
    mem = model.memory()
    assert mem["total_bytes"] == sum(mem["bytes"].values())
    flat = model.ensemble.trees.nbytes
    assert mem["bytes"]["ensemble"] >= flat
    # the forest arrays are views of the ensemble's (LightGBM: no float32 copy)
    assert mem["bytes"]["forest"] == 0
    # vqs scans quickscorer's layout: a model of one tree block adds nothing of its own
    assert model.prepare("vqs").tree_blocks == 1
    assert mem["bytes"]["vqs"] == 0
    assert mem["bytes"]["quickscorer"] == model.prepare("quickscorer").nbytes


def test_a_merged_vqs_scan_brings_its_own_grouping():
    """The shared layout holds no grouping of equal thresholds; a vqs asked to merge adds it
    (its own arrays), and the kernel refuses a merged scan of layouts without it."""
    from quickscorer.algorithms.qs import _vqs
    from quickscorer.algorithms.qs.vqs import VQuickScorer
    model = quickscorer.Model(_model().ensemble, prepare=("quickscorer",))
    shared = model.prepare("quickscorer")
    assert not shared.layout.merged
    X = np.random.default_rng(3).normal(size=(40, model.n_features))
    want = model.predict(X, algorithm="quickscorer")
    for block_bytes in (None, 1):
        merged = VQuickScorer(model.ensemble, model.plan.forest, merge=True,
                              block_bytes=block_bytes)
        plain = VQuickScorer(model.ensemble, model.plan.forest, block_bytes=block_bytes)
        for alg, want_merged in ((merged, True), (plain, False)):
            for layout in (alg._layout_for(1, 1, 8), alg._layout_for(10_000, 1, 8)):
                assert layout.merged == want_merged
        out = np.zeros((X.shape[0], 1))
        with pytest.raises(ValueError, match="merged scan"):
            blocks = plain._layout_for(X.shape[0], 1, 8)
            _vqs.predict_raw(model.plan.forest, blocks, X, out, np.zeros((0, 0), np.float32),
                             *plain._buffers(1, plain.doc_groups, blocks), 1, plain.isa, True,
                             plain.doc_groups, 8)
    got = quickscorer.Model(model.ensemble).predict(X, algorithm="vqs")
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("algorithm", ["walk", "rapidscorer", "quickscorer"])
def test_a_layouts_numpy_memory_is_what_the_account_says(algorithm):
    """What preparing an algorithm leaves allocated (numpy reports its buffers to
    tracemalloc) is what Model.memory() counts for it: no second copy kept out of sight
    (the walk kept its nodes twice, once in its table)."""
    import tracemalloc
    model = quickscorer.Model(random_ensemble(np.random.default_rng(5), "lightgbm",
                                              n_trees=400, max_leaves=64))
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        model.prepare(algorithm)
        gc.collect()
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    counted = model.memory()["bytes"][algorithm]
    assert counted > 0
    assert counted <= kept <= 1.2 * counted + 16 * 1024, (kept, counted)
