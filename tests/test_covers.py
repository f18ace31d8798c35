"""Node covers (the training rows that reached each node, LightGBM's internal_count and
leaf_count) in the IR, and the one-row kernel the default predict picks from them
(``autoselect.one_row``): the QuickScorer scan or the walk, both exact."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import quickscorer
from quickscorer.algorithms import autoselect
from quickscorer.importers.lightgbm import load_lightgbm, parse_fast, parse_reference
from quickscorer.ir import Ensemble, build_tree

from conftest import random_ensemble, special_rows
from test_lightgbm_import import _trained


def _counts_of(booster):
    """LightGBM's own counts: per tree, {split_index: internal_count}, {leaf_index: leaf_count}."""
    out = []
    for info in booster.dump_model()["tree_info"]:
        nodes, leaves = {}, {}
        stack = [info["tree_structure"]]
        while stack:
            nd = stack.pop()
            if "split_index" in nd:
                nodes[nd["split_index"]] = nd["internal_count"]
                stack += [nd["left_child"], nd["right_child"]]
            else:
                leaves[nd.get("leaf_index", 0)] = nd["leaf_count"]
        out.append((nodes, leaves))
    return out


@pytest.mark.parametrize("name", ["regression", "multiclass", "categorical", "linear_tree",
                                  "single_leaf"])
def test_lightgbm_covers_are_its_counts(name):
    booster = _trained(name)[0]
    ens = load_lightgbm(booster)
    assert ens.has_cover and ens.summary()["node_covers"]
    for tree, (nodes, leaves) in zip(ens.trees, _counts_of(booster)):
        assert [nodes[int(s)] for s in tree.node_source_id] == tree.node_cover.tolist()
        assert [leaves[int(s)] for s in tree.leaf_source_id] == tree.leaf_cover.tolist()


def test_the_expected_path_is_the_training_rows_mean_path():
    booster, X, _ = _trained("regression")
    model = quickscorer.Model(load_lightgbm(booster))
    path, false = autoselect.expected_costs(model.ensemble)
    leaves = model.predict_leaf(X, algorithm="traversal")
    depth_sum = 0.0
    for t, tree in enumerate(model.trees):
        depth = np.zeros(tree.n_leaves)
        stack = [(0, 0)] if tree.n_internal else []
        while stack:
            n, d = stack.pop()
            for kid in (int(tree.left[n]), int(tree.right[n])):
                if kid >= 0:
                    stack.append((kid, d + 1))
                else:
                    depth[~kid] = d + 1
        depth_sum += depth[leaves[:, t]].mean()
    assert path == pytest.approx(depth_sum, rel=1e-12)
    assert 0 < false < sum(t.n_internal for t in model.trees)


def test_expected_costs_of_a_small_tree():
    # root (10 rows) -> leaf (4) | node (6) -> leaf (1) | leaf (5)
    tree = build_tree(left=[1, -1, 3, -1, -1], right=[2, -1, 4, -1, -1], root=0,
                      feature=[0] * 5, threshold=[0.5, 0, 1.5, 0, 0], default_left=[False] * 5,
                      missing_type=[0] * 5, is_categorical=[False] * 5, categories=None,
                      value=[0, 1, 0, 2, 3], cover=[10, 4, 6, 1, 5], n_features=1)
    ens = Ensemble(trees=[tree, tree], tree_group=[0, 0], n_outputs=1, n_features=1,
                   family="lightgbm", base_score=[0.0])
    path, false = autoselect.expected_costs(ens)
    assert path == pytest.approx(2 * (1 + 6 / 10))
    assert false == pytest.approx(2 * (6 / 10 + 5 / 6))


@pytest.mark.parametrize("cover", [[10, 4, 6, 1, -5], [10, 4, np.nan, 1, 5], [1, 2],
                                   ["a", "b", "c", "d", "e"]])
def test_covers_that_are_not_counts_are_dropped_not_refused(cover):
    tree = build_tree(left=[1, -1, 3, -1, -1], right=[2, -1, 4, -1, -1], root=0,
                      feature=[0] * 5, threshold=[0.5, 0, 1.5, 0, 0], default_left=[False] * 5,
                      missing_type=[0] * 5, is_categorical=[False] * 5, categories=None,
                      value=[0, 1, 0, 2, 3], cover=cover, n_features=1)
    assert tree.node_cover is None and tree.leaf_cover is None


@pytest.mark.parametrize("edit", [
    ("\nleaf_count=", "\nleaf_count=-1 "), ("\ninternal_count=", "\ninternal_count=1.5 "),
    ("\nleaf_count=", "\nleaf_countx="), ("\ninternal_count=", "\ninternal_count=1 "),
    ("\nleaf_count=", "\nleaf_count=1234567890123456789 "),
])
def test_a_damaged_count_costs_the_covers_not_the_load(edit):
    booster, X, _ = _trained("binary")
    text = booster.model_to_string()
    changed = text.replace(edit[0], edit[1], 1)
    assert changed != text
    ref = parse_reference(changed)
    fast = parse_fast(changed.encode())
    assert not ref.has_cover and fast is not None and not fast.has_cover
    assert parse_reference(text).has_cover
    model = quickscorer.Model(ref)
    assert model.info()["one_row_algorithm"] == "quickscorer"
    assert np.array_equal(model.predict(X[:50], raw_score=True),
                          booster.predict(X[:50], raw_score=True))


def test_covers_survive_parts_and_pickling():
    ens = load_lightgbm(_trained("multiclass")[0])
    part = ens.iterations(1, 3)
    assert part.has_cover
    assert np.array_equal(part.trees.arrays["node_cover"],
                          np.concatenate([t.node_cover for t in list(ens.trees)[3:9]]))
    again = pickle.loads(pickle.dumps(ens))
    assert np.array_equal(again.trees.arrays["leaf_cover"], ens.trees.arrays["leaf_cover"])
    rebuilt = Ensemble(trees=list(ens.trees), tree_group=ens.tree_group, n_outputs=3,
                       n_features=ens.n_features, family="lightgbm", base_score=[0, 0, 0])
    assert np.array_equal(rebuilt.trees.arrays["node_cover"], ens.trees.arrays["node_cover"])


def test_a_model_without_covers_keeps_the_scan():
    ens = random_ensemble(np.random.default_rng(3), "lightgbm", n_trees=20)
    assert not ens.has_cover
    model = quickscorer.Model(ens)
    assert autoselect.one_row(ens, model.supported_algorithms()) == (
        "quickscorer", "the model gives no node covers")
    assert model.info()["one_row_algorithm"] == "quickscorer"


@pytest.mark.parametrize("ratio, kernel", [(0.0, "walk"), (float("inf"), "quickscorer")])
@pytest.mark.parametrize("name", ["regression", "multiclass", "categorical", "linear_tree"])
def test_the_default_runs_the_chosen_one_row_kernel_exactly(monkeypatch, ratio, kernel, name):
    monkeypatch.setattr(autoselect, "WALK_MIN_RATIO", ratio)
    booster, X, _ = _trained(name)
    model = quickscorer.Model(load_lightgbm(booster))
    assert model.info()["one_row_algorithm"] == kernel
    assert kernel in model.info()["default_algorithm"]
    rows = special_rows(np.random.default_rng(5), 40, model.n_features)
    rows[:, :] = np.where(np.isnan(rows), rows, X[:40])    # real values, with NaN and zeros
    want = model.predict_raw(rows, algorithm="traversal")
    got = np.concatenate([model.predict_raw(rows[i]) for i in range(rows.shape[0])])
    assert np.array_equal(got, want)
    assert set(model.info()["layout_bytes"]) == {"traversal", kernel}
    # a few rows the general path reads (not C-contiguous) take the same kernel
    three = np.asfortranarray(rows[:3])
    assert np.array_equal(model.predict_raw(three), want[:3])
    assert set(model.info()["layout_bytes"]) == {"traversal", kernel}
    warm = quickscorer.Model(model.ensemble, prepare=("auto",))
    assert kernel in warm.info()["layout_bytes"]
