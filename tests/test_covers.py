"""Node covers (the training rows that reached each node: LightGBM's internal_count and
leaf_count, XGBoost's sum_hessian) in the IR, and the one-row kernel the default predict picks
from them (``autoselect.one_row``): the QuickScorer scan or the walk, both exact."""
from __future__ import annotations

import dataclasses
import json
import pickle
import re

import numpy as np
import pytest
from conftest import random_ensemble, special_rows
from test_legacy_formats import LEGACY
from test_lightgbm_import import _trained
from test_xgboost_import import _trained as _xgb_trained
from test_xgboost_json import _document_path, assert_same_ensemble

import quickscorer
from quickscorer.algorithms import autoselect, cpu
from quickscorer.algorithms import walk as walk_mod
from quickscorer.importers import xgboost as xgb_imp
from quickscorer.importers.lightgbm import load_lightgbm, parse_fast, parse_reference
from quickscorer.ir import Ensemble, build_tree

xgb = pytest.importorskip("xgboost", reason="the test extra installs xgboost-cpu")

#: the process's tuning table; a test that needs another choice passes a changed copy
T = quickscorer.current_tuning()


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


def _mean_path(model, X):
    """The rows' mean number of internal nodes on their paths, summed over the trees."""
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
    return depth_sum


def test_the_expected_path_is_the_training_rows_mean_path():
    booster, X, _ = _trained("regression")
    model = quickscorer.Model(load_lightgbm(booster))
    path, false = autoselect.expected_costs(model.ensemble)
    assert path == pytest.approx(_mean_path(model, X), rel=1e-12)
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
    (r"\nleaf_count=", "\nleaf_count=-1 "), (r"\ninternal_count=", "\ninternal_count=1.5 "),
    (r"\nleaf_count=[^\n]*", ""), (r"\ninternal_count=", "\ninternal_count=1 "),
    (r"\nleaf_count=", "\nleaf_count=1234567890123456789 "),
])
def test_a_damaged_count_costs_the_covers_not_the_load(edit):
    """A count that is no count, or a tree without its counts (the first tree's leaf_count
    line removed)."""
    booster, X, _ = _trained("binary")
    text = booster.model_to_string()
    changed = re.sub(edit[0], edit[1], text, count=1)
    assert changed != text
    ref = parse_reference(changed)
    fast = parse_fast(changed.encode())
    assert not ref.has_cover and fast is not None and not fast.has_cover
    assert parse_reference(text).has_cover
    model = quickscorer.Model(ref)
    assert "no node covers" in model.plan.one_row[1]
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


def test_a_model_without_covers_keeps_the_scan_or_counts_half_its_nodes_false():
    """Without covers the walk of complete trees, whose steps do not depend on the row,
    is weighed against half the nodes; a model the walk lays out no complete trees for
    keeps the scan."""
    # 20 trees of at most 4 leaves: 32 nodes, 64 steps (groups of depth 3, 2, 3); two
    # balanced trees of depth 6: 126 nodes, 48 steps (the group's six fill trees included)
    small = random_ensemble(np.random.default_rng(3), "lightgbm", n_trees=20, max_leaves=4)
    for ens, want in ((small, "quickscorer"), (_balanced(6, covers=False), "walk")):
        assert not ens.has_cover
        model = quickscorer.Model(ens)
        steps = walk_mod.GROUP_TREES * int(walk_mod.complete_groups(ens).sum())
        nodes = int(ens.trees.node_offset[-1])
        assert (nodes / 2 >= steps) == (want == "walk")
        kernel, why = autoselect.one_row(ens, model.supported_algorithms())
        assert kernel == want and "no node covers" in why
        assert model.info()["one_row_algorithm"] == kernel
        X = special_rows(np.random.default_rng(4), 30, model.n_features)
        got = np.concatenate([model.predict_raw(X[i]) for i in range(30)])
        assert np.array_equal(got, model.predict_raw(X, algorithm="traversal"))
    # a chain of 11 nodes, deeper than the complete trees go: no complete trees
    n = walk_mod.COMPLETE_MAX_DEPTH + 1
    left = [n + i if i < n else -1 for i in range(2 * n + 1)]
    right = [(i + 1 if i + 1 < n else 2 * n) if i < n else -1 for i in range(2 * n + 1)]
    tree = build_tree(left=left, right=right, root=0, feature=[0] * (2 * n + 1),
                      threshold=[float(i) for i in range(2 * n + 1)],
                      default_left=[True] * (2 * n + 1), missing_type=[0] * (2 * n + 1),
                      is_categorical=[False] * (2 * n + 1), categories=None,
                      value=[float(i) for i in range(2 * n + 1)], n_features=2)
    chain = Ensemble(trees=[tree], tree_group=[0], n_outputs=1, n_features=2,
                     family="lightgbm", base_score=[0.0])
    assert not chain.has_cover and walk_mod.complete_groups(chain) is None
    assert autoselect.one_row(chain, quickscorer.Model(chain).supported_algorithms()) == (
        "quickscorer", "the model gives no node covers")


@pytest.mark.parametrize("ratio, kernel", [(0.0, "walk"), (float("inf"), "quickscorer")])
@pytest.mark.parametrize("name", ["regression", "multiclass", "categorical", "linear_tree"])
def test_the_default_runs_the_chosen_one_row_kernel_exactly(ratio, kernel, name):
    t = T.replace(walk_min_ratio=ratio, group_walk_min_ratio=ratio)
    booster, X, _ = _trained(name)
    model = quickscorer.Model(load_lightgbm(booster), tuning=t)
    assert model.info()["one_row_algorithm"] == kernel
    assert model.plan.small_kernels[1] == kernel
    rows = special_rows(np.random.default_rng(5), 40, model.n_features)
    rows[:, :] = np.where(np.isnan(rows), rows, X[:40])    # real values, with NaN and zeros
    want = model.predict_raw(rows, algorithm="traversal")
    got = np.concatenate([model.predict_raw(rows[i]) for i in range(rows.shape[0])])
    assert np.array_equal(got, want)
    assert set(model.info()["layout_bytes"]) == {"traversal", kernel}
    # two rows the general path reads (not C-contiguous) take the same kernel (from
    # VQS_SCAN_MIN_ROWS = 3 rows the scan hands calls to vqs)
    two = np.asfortranarray(rows[:2])
    assert np.array_equal(model.predict_raw(two), want[:2])
    assert set(model.info()["layout_bytes"]) == {"traversal", kernel}
    warm = quickscorer.Model(model.ensemble, prepare=("auto",), tuning=t)
    assert kernel in warm.info()["layout_bytes"]


@pytest.mark.parametrize("ratio, kernel", [(0.0, "walk"), (float("inf"), "vqs")])
@pytest.mark.parametrize("name", ["regression", "multiclass", "categorical", "linear_tree"])
def test_the_default_runs_the_chosen_few_rows_kernel_exactly(ratio, kernel, name):
    """Calls of VQS_MIN_ROWS to rs_min_rows - 1 rows run autoselect.few_rows's kernel (the
    walk through the low-latency entry, or vqs), exactly; from rs_min_rows the multi-row
    algorithm. The one-row kernel is kept the scan, so that the walk's layout appears only
    where the few-rows calls run it."""
    t = T.replace(few_rows_walk_ratio=ratio, group_few_rows_ratio=ratio,
                  walk_min_ratio=float("inf"), group_walk_min_ratio=float("inf"))
    booster, X, _ = _trained(name)
    model = quickscorer.Model(load_lightgbm(booster), tuning=t)
    assert model.info()["few_rows_algorithm"] == kernel
    assert model.info()["one_row_algorithm"] == "quickscorer"
    first = t.vqs_scan_min_rows if kernel == "vqs" else t.vqs_min_rows
    assert model.plan.small_kernels[first - 1] == "quickscorer"
    assert model.plan.small_kernels[first] == kernel
    rows = special_rows(np.random.default_rng(6), 40, model.n_features)
    rows[:, :] = np.where(np.isnan(rows), rows, X[:40])
    want = model.predict_raw(rows, algorithm="traversal")
    for n in range(first, model.plan.rs_from):
        assert model.plan.small_kernels[n] == kernel
        assert np.array_equal(model.predict_raw(rows[:n]), want[:n])
        assert np.array_equal(model.predict_raw(np.asfortranarray(rows[n:2 * n])),
                              want[n:2 * n])
        assert np.array_equal(model.predict(rows[:n], raw_score=True),
                              model.predict(rows[:n], raw_score=True, algorithm="traversal"))
    assert set(model.info()["layout_bytes"]) == {"traversal", kernel}
    many = "rapidscorer"                  # categorical splits too
    n = model.plan.rs_from
    assert model.plan.small_kernels[n] == many
    assert np.array_equal(model.predict_raw(rows[:n]), want[:n])
    assert set(model.info()["layout_bytes"]) == {"traversal", kernel, many}
    warm = quickscorer.Model(model.ensemble, prepare=("auto",), tuning=t)
    assert set(warm.info()["layout_bytes"]) == {"quickscorer", kernel, many}


def _balanced(depth: int, categorical_level: int | None = None, big: int = 3,
              covers: bool = True) -> Ensemble:
    """Two balanced trees of 2 ** depth leaves whose covers split evenly at every node: a row's
    path has ``depth`` nodes and it meets (2 ** depth - 1) / 2 false nodes per tree. With
    ``categorical_level``, the nodes of that level split feature 1 by category (listing
    ``big`` among them); without ``covers``, none."""
    n_internal = 2 ** depth - 1
    k = 2 * n_internal + 1                      # heap numbering, leaves last
    left = [2 * i + 1 if i < n_internal else -1 for i in range(k)]
    right = [2 * i + 2 if i < n_internal else -1 for i in range(k)]
    level = [int(np.log2(i + 1)) for i in range(k)]
    cat = [i < n_internal and level[i] == categorical_level for i in range(k)]
    tree = build_tree(left=left, right=right, root=0, feature=[int(c) for c in cat],
                      threshold=[float(i) for i in range(k)], default_left=[False] * k,
                      missing_type=[0] * k, is_categorical=cat,
                      categories={i: [i % 7, big] for i in range(k) if cat[i]},
                      value=[0.5 * i for i in range(k)],
                      cover=[2.0 ** (depth - lv) for lv in level] if covers else None,
                      n_features=2)
    return Ensemble(trees=[tree, tree], tree_group=[0, 0], n_outputs=1, n_features=2,
                    family="lightgbm", base_score=[0.0])


def test_the_walk_is_not_picked_where_it_decides_many_categorical_nodes_one_by_one():
    """The walk settles every categorical split before it starts (CODED_NODE_STEPS a node
    whose categories are below 254, SPECIAL_NODE_STEPS another): depth-8 trees whose last
    level splits by category keep the scan for one row and vqs for a few, where the same
    trees without categories walk."""
    plain, cat = _balanced(8), _balanced(8, categorical_level=7)
    big = _balanced(8, categorical_level=7, big=300)
    assert walk_mod.special_nodes(plain) == (0, 0)
    assert walk_mod.special_nodes(cat) == (256, 0)
    assert walk_mod.special_nodes(big) == (0, 256)
    assert autoselect.expected_costs(cat)[0] == pytest.approx(
        16 + T.coded_node_steps * 256)
    path, false = autoselect.expected_costs(big)
    assert path == pytest.approx(16 + T.special_node_steps * 256)
    assert false == pytest.approx(autoselect.expected_costs(plain)[1])
    for ens, one, few in ((plain, "walk", "walk"), (cat, "quickscorer", "vqs"),
                          (big, "quickscorer", "vqs")):
        model = quickscorer.Model(ens)
        assert autoselect.one_row(ens, model.supported_algorithms())[0] == one
        assert autoselect.few_rows(ens, model.supported_algorithms()) == few
        X = np.column_stack([np.linspace(-1.0, 600.0, 40), np.arange(40) % 9 - 1.0])
        for rows in (X[:1], X[:5], X):
            assert np.array_equal(model.predict_raw(rows),
                                  model.predict_raw(rows, algorithm="traversal"))


@pytest.mark.parametrize("depth, complete, kernel", [
    (3, False, "vqs"), (6, False, "vqs"), (7, False, "walk"), (8, False, "walk"),
    (3, True, "vqs"), (6, True, "vqs"), (7, True, "vqs"), (8, True, "walk")])
def test_few_rows_walks_only_trees_that_make_a_scan_pay_for_many_false_nodes(
        depth, complete, kernel):
    """Two balanced trees of depth d (2^d - 1 expected false nodes, 2 d path nodes). Without
    complete trees (``Tuning.walk_complete`` False), FEW_ROWS_WALK_RATIO = 5.5
    expected false nodes per path node: depth 6 (31.5 / 6) stays on vqs, depth 7 (63.5 / 7)
    and 8 (127.5 / 8) walk. With them, GROUP_FEW_ROWS_RATIO = 3 per step of the group walk,
    8 d steps (the group's six fill trees walk too): depth 7 (127 / 56) stays on vqs, 8
    (255 / 64) walks. Without covers, or without the walk among the supported algorithms,
    vqs."""
    t = T.replace(walk_complete=None if complete else False)
    ens = _balanced(depth)
    path, false = autoselect.expected_costs(ens, t)
    assert path == pytest.approx(2 * depth)
    assert false == pytest.approx(2 ** depth - 1)
    assert autoselect.group_steps(ens, t) == (8 * depth if complete else None)
    model = quickscorer.Model(ens, tuning=t)
    assert autoselect.few_rows(ens, model.supported_algorithms(), t=t) == kernel
    assert model.info()["few_rows_algorithm"] == kernel
    assert autoselect.few_rows(ens, ["quickscorer", "vqs", "rapidscorer"], t=t) == "vqs"
    n = model.plan.rs_from - 1                         # the most rows the few-rows kernel takes
    assert model.plan.small_kernels[n] == kernel
    X = np.linspace(-1.0, 2.0 ** (depth + 1), n * model.n_features).reshape(n, -1)
    assert np.array_equal(model.predict_raw(X), model.predict_raw(X, algorithm="traversal"))
    assert kernel in model.info()["layout_bytes"]
    bare = random_ensemble(np.random.default_rng(3), "lightgbm", n_trees=20)
    assert not bare.has_cover
    assert autoselect.few_rows(bare, quickscorer.Model(bare).supported_algorithms(),
                               t=t) == "vqs"


@pytest.mark.parametrize("complete, first", [(True, 6), (False, 4)])
def test_the_walk_of_complete_trees_keeps_calls_up_to_five_rows_from_vqs(
        complete, first):
    """Where the one-row kernel is the walk and the few-rows kernel vqs, vqs runs from
    GROUP_VQS_MIN_ROWS (6) rows where the walk lays out complete trees, from VQS_MIN_ROWS (4)
    where it does not; rapidscorer from rs_min_rows either way; every call exact."""
    t = T.replace(walk_complete=None if complete else False, group_vqs_min_rows=6,
                  vqs_min_rows=4)
    # depth 7: 127 expected false nodes against 56 steps through the complete trees (the
    # walk for one row, vqs for a few); depth 6 without them: 31.5 against a 6-node path
    ens = _balanced(7 if complete else 6)
    model = quickscorer.Model(ens, tuning=t)
    assert model.info()["one_row_algorithm"] == "walk"
    assert model.info()["few_rows_algorithm"] == "vqs"
    assert autoselect.few_rows_from("walk", "vqs", complete, t) == first
    rs_from = model.plan.rs_from
    assert rs_from == t.rs_min_rows > first
    want_kernels = ["walk"] * (first - 1) + ["vqs"] * (rs_from - first) + ["rapidscorer"]
    assert list(model.plan.small_kernels[1:rs_from + 1]) == want_kernels
    X = np.column_stack([np.linspace(-1.0, 2.0 ** 8, 30), np.arange(30) % 7 - 1.0])
    want = model.predict_raw(X, algorithm="traversal")
    for n in range(1, rs_from + 2):
        assert np.array_equal(model.predict_raw(X[:n]), want[:n])
    # a rapidscorer start before the vqs start: rapidscorer from there, vqs never
    assert autoselect.choose(model.supported_algorithms(), 5, 1, "walk", "vqs", 5,
                             complete, t) == "rapidscorer"
    assert autoselect.choose(model.supported_algorithms(), 4, 1, "walk", "vqs", 5,
                             complete, t) == ("walk" if complete else "vqs")


def test_the_walk_takes_calls_of_a_few_rows_wherever_its_complete_trees_are_float32_slots():
    """XGBoost's float32 thresholds make the walk's complete trees float32 slots, whose steps
    compare order keys: the walk then takes calls from VQS_MIN_ROWS to RapidScorer's start
    after the walk, whatever the false nodes a step (here 127 against 56 steps, under
    GROUP_FEW_ROWS_RATIO); the same trees in a LightGBM model, or with a threshold that is no
    float32 value, keep vqs there. Every call exact."""
    base = _balanced(7)
    keyed = dataclasses.replace(base, family="xgboost")
    costs, steps = autoselect.expected_costs(keyed), autoselect.group_steps(keyed)
    assert costs[1] < T.group_few_rows_ratio * steps
    assert walk_mod.float32_slots(keyed) and not walk_mod.float32_slots(base)
    model = quickscorer.Model(keyed)
    assert model.info()["few_rows_algorithm"] == "walk"
    assert model.plan.rs_from == autoselect.rs_min_rows(keyed, "walk")
    assert list(model.plan.small_kernels[1:model.plan.rs_from]) == (
        ["walk"] * (model.plan.rs_from - 1))
    assert model.plan.small_kernels[model.plan.rs_from] == "rapidscorer"
    X = np.column_stack([np.linspace(-1.0, 2.0 ** 8, 30), np.arange(30) % 7 - 1.0])
    want = model.predict_raw(X, algorithm="traversal")
    for n in range(1, model.plan.rs_from + 2):
        assert np.array_equal(model.predict_raw(X[:n]), want[:n])
    assert quickscorer.Model(base).info()["few_rows_algorithm"] == "vqs"
    tree = base.trees[0]
    off = dataclasses.replace(tree, threshold=np.asarray(tree.threshold) + 0.1)
    wide = dataclasses.replace(keyed, trees=(off, off))
    assert not walk_mod.float32_slots(wide)
    assert quickscorer.Model(wide).info()["few_rows_algorithm"] == "vqs"


def test_models_rapidscorer_cannot_score_run_the_few_rows_kernel_for_many_rows():
    """Trees of 2,048 leaves, 11 deep (rapidscorer takes at most 256 leaves, or 10 levels
    by its level path alone): the walk for calls of any size from VQS_MIN_ROWS (1023.5
    expected false nodes per 11-node path, over FEW_ROWS_WALK_RATIO); trees of 512 leaves
    deciding a level by categories they list up to 300 (rapidscorer codes them below 254,
    its level path takes no categories, and each counts steps of the walk) stay on vqs.
    Both exact, and ``info`` names the kernel."""
    deep = _balanced(11)
    cat = _balanced(9, categorical_level=8, big=300)
    for ens, kernel in ((deep, "walk"), (cat, "vqs")):
        model = quickscorer.Model(ens)
        assert "rapidscorer" not in model.supported_algorithms()
        assert model.info()["few_rows_algorithm"] == kernel
        assert model.plan.choose(10_000, 1) == model.plan.choose(10_000, 2) == kernel
        assert model.plan.rs_from == (autoselect.rs_min_rows(ens, "walk") if kernel == "walk"
                                      else T.rs_min_rows)
        X = np.column_stack([np.linspace(-1.0, 1100.0, 300), np.arange(300) % 9 - 1.0])
        want = model.predict_raw(X, algorithm="traversal")
        for n_threads in (1, 2):
            assert np.array_equal(model.predict_raw(X, n_threads=n_threads), want)
        assert set(model.info()["layout_bytes"]) == {"traversal", kernel}
        warm = quickscorer.Model(ens, prepare=("auto",))
        assert set(warm.info()["layout_bytes"]) <= {"quickscorer", "walk", "vqs"}
        assert kernel in warm.info()["layout_bytes"]


# XGBoost: sum_hessian, the rows' count under squared error (a hessian of 1 per row)

SQUARED = ["reg:squarederror", "categorical", "multi_target", "single_leaf", "deep"]


@pytest.mark.parametrize("name", SQUARED)
def test_xgboost_covers_count_the_rows_its_predictor_sends_to_each_leaf(name):
    booster, X, kw = _xgb_trained(name)
    for fmt in ("json", "ubj"):
        ens = xgb_imp.load_xgboost(bytes(booster.save_raw(fmt)))
        assert ens.has_cover and ens.summary()["node_covers"]
        leaves = booster.predict(xgb.DMatrix(X, missing=np.nan, **kw), pred_leaf=True)
        leaves = leaves.reshape(X.shape[0], -1).astype(np.int64)
        for t, tree in enumerate(ens.trees):
            counts = np.bincount(leaves[:, t], minlength=int(tree.leaf_source_id.max()) + 1)
            assert np.array_equal(tree.leaf_cover, counts[tree.leaf_source_id]), (fmt, t)
            if tree.n_internal:       # the root's cover is every training row
                assert tree.node_cover[0] == X.shape[0]


def test_xgboost_expected_path_is_the_training_rows_mean_path():
    booster, X, kw = _xgb_trained("deep")
    model = quickscorer.Model(xgb_imp.load_xgboost(booster))
    path, _ = autoselect.expected_costs(model.ensemble)
    assert path == pytest.approx(_mean_path(model, X), rel=1e-12)


@pytest.mark.parametrize("name", ["binary:logistic", "dart", "random_forest"])
def test_xgboost_hessian_weighted_covers_every_path_alike(name):
    # not counts (the logistic hessian weighs rows; subsampling), but the covers of the JSON
    # parser, the document path, UBJSON and the Booster are the same float32 sums
    booster = _xgb_trained(name)[0]
    raw = bytes(booster.save_raw("json"))
    fast, ref = xgb_imp._load_json_fast(raw), _document_path(raw)
    assert fast is not None and fast.has_cover
    assert_same_ensemble(fast, ref)
    for other in (xgb_imp.load_xgboost(bytes(booster.save_raw("ubj"))),
                  xgb_imp.load_xgboost(booster)):
        assert np.array_equal(other.trees.arrays["node_cover"], ref.trees.arrays["node_cover"])
        assert np.array_equal(other.trees.arrays["leaf_cover"], ref.trees.arrays["leaf_cover"])


def _with_sum_hessian(doc, tree, value):
    doc = json.loads(json.dumps(doc))
    trees = doc["learner"]["gradient_booster"]["model"]["trees"]
    if value is _ABSENT:
        del trees[tree]["sum_hessian"]
    elif callable(value):
        trees[tree]["sum_hessian"] = value(trees[tree]["sum_hessian"])
    else:
        trees[tree]["sum_hessian"][1] = value
    return json.dumps(doc).encode()


_ABSENT = object()


@pytest.mark.parametrize("tree", [0, 9])
@pytest.mark.parametrize("value", [_ABSENT, -1.0, 1e39, None, "3", [1.0, 2.0],
                                   lambda h: h[:-1], lambda h: h + [1.0], lambda h: 5.0])
def test_a_damaged_sum_hessian_costs_the_covers_not_the_load(tree, value):
    booster, X, _ = _xgb_trained("reg:squarederror")
    doc = json.loads(bytes(booster.save_raw("json")))
    raw = _with_sum_hessian(doc, tree, value)
    got, ref = xgb_imp.load_xgboost(raw), _document_path(raw)
    assert not got.has_cover and not ref.has_cover
    assert_same_ensemble(got, ref)
    model = quickscorer.Model(got)
    assert "no node covers" in model.plan.one_row[1]
    want = booster.predict(xgb.DMatrix(X[:50], missing=np.nan), output_margin=True)
    assert np.array_equal(model.predict(X[:50].astype(np.float32), raw_score=True), want)


@pytest.mark.parametrize("release", ["xgboost-0.90", "xgboost-2.0.3"])
def test_xgboost_covers_of_a_pruned_model_and_of_the_legacy_binary(release):
    # the pruner's deleted nodes stay in the file, unreachable; the importer leaves them out,
    # their covers with them. The binary file's node statistics give the JSON twin's covers.
    folder = LEGACY / release
    binary = xgb_imp.load_xgboost(folder / "pruned.model")
    twin = xgb_imp.load_xgboost(folder / "pruned.json")
    assert binary.has_cover and twin.has_cover
    doc = xgb_imp.xgboost_document(folder / "pruned.json")[0]
    sizes = [len(t["left_children"]) for t in doc["learner"]["gradient_booster"]["model"]["trees"]]
    assert sum(t.n_internal + t.n_leaves for t in binary.trees) < sum(sizes)
    for name in ("node_cover", "leaf_cover"):
        assert np.array_equal(binary.trees.arrays[name], twin.trees.arrays[name])
    for tree in binary.trees:
        assert tree.node_cover.shape == (tree.n_internal,)
        assert tree.leaf_cover.shape == (tree.n_leaves,)
        # each training row goes one way: a node's cover is its children's (float32 sums)
        kid = [tree.node_cover[k] if k >= 0 else tree.leaf_cover[~k]
               for k in np.r_[tree.left, tree.right]]
        m = tree.n_internal
        assert np.allclose(np.add(kid[:m], kid[m:]), tree.node_cover, rtol=1e-5)


@pytest.mark.parametrize("ratio, kernel", [(0.0, "walk"), (float("inf"), "quickscorer")])
@pytest.mark.parametrize("name", ["deep", "multi:softprob", "categorical", "dart"])
def test_the_default_runs_the_chosen_one_row_kernel_exactly_on_xgboost(ratio, kernel, name):
    t = T.replace(walk_min_ratio=ratio, group_walk_min_ratio=ratio)
    booster, X, kw = _xgb_trained(name)
    model = quickscorer.Model(xgb_imp.load_xgboost(booster), tuning=t)
    assert model.ensemble.has_cover
    assert model.info()["one_row_algorithm"] == kernel
    rows = X[:40].astype(np.float32)
    want = booster.predict(xgb.DMatrix(rows, missing=np.nan, **kw), output_margin=True)
    got = np.concatenate([model.predict_raw(rows[i]) for i in range(rows.shape[0])])
    assert np.array_equal(got.reshape(want.shape), want)
    assert kernel in model.info()["layout_bytes"]


def test_after_the_walk_rapidscorer_starts_later_on_models_of_many_nodes_a_step():
    """walk_rs_min_rows: the model's internal nodes over WALK_RS_NODES_PER_STEP times a row's
    steps through the walk, rounded up, between RS_AFTER_WALK_MIN_ROWS and
    RS_AFTER_WALK_MAX_ROWS; rs_min_rows takes it after the walk, and the automatic choice runs
    the walk up to it, exactly."""
    ens = _balanced(8)                              # 2 x 255 nodes; 8 trees x 8 steps a group
    nodes = int(ens.trees.node_offset[-1])
    steps = autoselect.group_steps(ens)
    assert nodes == 510 and steps == 64
    # 510 nodes over (k x 64 steps) is 12.75 rows where k = 510 / (64 x 12.75)
    t = T.replace(walk_rs_nodes_per_step=510 / (64 * 12.75), rs_after_walk_min_rows=9,
                  rs_after_walk_max_rows=32)
    assert autoselect.rs_min_rows(ens, "walk", t=t) == 13
    plan = quickscorer.Model(ens, tuning=t).plan
    assert plan.rs_from == (13 if plan.few_rows == "walk"
                            else autoselect.rs_min_rows(ens, "vqs", t=t))
    # the bounds, and the path's expected steps where no complete trees are laid out
    f = autoselect.facts(ens, t)
    assert f.steps == 64 and f.nodes == 510
    assert autoselect.rs_min_rows(dataclasses.replace(f, steps=1e9), "walk", t=t) == 9
    assert autoselect.rs_min_rows(dataclasses.replace(f, steps=0.01), "walk", t=t) == 32
    k = t.walk_rs_nodes_per_step
    assert autoselect.rs_min_rows(dataclasses.replace(f, steps=None, path=nodes / (k * 19.5)),
                                  "walk", t=t) == 20
    assert autoselect.rs_min_rows(dataclasses.replace(f, steps=None, path=None), "walk",
                                  t=t) == 9


def test_rapidscorer_starts_earlier_on_avx2_for_trees_of_up_to_48_leaves():
    """On AVX2 a call of 6 rows takes two registers of vqs's documents: RapidScorer runs from
    RS_AVX2_TREES_MIN_ROWS[1] rows on trees of at most RS_AVX2_TREES_MIN_ROWS[0] leaves on
    average; on AVX-512 (and on larger trees) from RS_MIN_ROWS, as before."""
    most, rows = T.rs_avx2_trees_min_rows
    small, big = _balanced(5).trees[0], _balanced(6).trees[0]      # 32 and 64 leaves
    mixed = Ensemble(trees=[small, big], tree_group=[0, 0], n_outputs=1, n_features=2,
                     family="lightgbm", base_score=[0.0])          # 48 leaves on average
    large = _balanced(6)
    assert T.rs_small_trees_min_rows[-1][0] < 48 <= most < 64     # the models fit the test
    assert autoselect.rs_min_rows(mixed, "vqs", isa="avx2") == rows < T.rs_min_rows
    assert autoselect.rs_min_rows(mixed, "vqs", isa="avx512") == T.rs_min_rows
    assert autoselect.rs_min_rows(large, "vqs", isa="avx2") == T.rs_min_rows
    # the plan takes the path its table names
    for isa in cpu.available_isas():
        t = T.replace(isa=isa)
        plan = quickscorer.Model(mixed, tuning=t).plan
        assert plan.few_rows == "vqs"
        assert plan.rs_from == (rows if isa == "avx2" else T.rs_min_rows)
        assert plan.small_kernels[plan.rs_from - 1] == "vqs"
        assert plan.small_kernels[plan.rs_from] == "rapidscorer"


def test_the_default_walks_calls_up_to_the_later_rapidscorer_start_exactly():
    """With a model whose nodes per step put RapidScorer's start at 20 rows, calls of 4 to 19
    rows walk and 20 rows run rapidscorer; every call scores as the reference traversal."""
    ens = _balanced(8)
    steps = autoselect.group_steps(ens)
    t = T.replace(group_few_rows_ratio=0.0, group_walk_min_ratio=0.0,
                  walk_rs_nodes_per_step=int(ens.trees.node_offset[-1]) / (19.5 * steps))
    model = quickscorer.Model(ens, tuning=t)
    assert model.info()["few_rows_algorithm"] == "walk"
    assert model.plan.rs_from == 20
    assert [model.plan.small_kernels[n] for n in (4, 9, 19, 20)] == ["walk"] * 3 + ["rapidscorer"]
    X = np.column_stack([np.linspace(-1.0, 520.0, 40), np.arange(40) % 9 - 1.0])
    want = model.predict_raw(X, algorithm="traversal")
    for n in (4, 9, 12, 19, 20, 21):
        assert np.array_equal(model.predict_raw(X[:n]), want[:n])


def test_rapidscorer_starts_earlier_on_small_trees():
    """rs_min_rows: rapidscorer from 5 rows where the trees hold at most 16 leaves on
    average, 6 up to 32, RS_MIN_ROWS (8) above, RS_AFTER_WALK_MIN_ROWS (9) after the walk;
    the automatic choice and ``info`` follow it."""
    t = T.replace(rs_min_rows=8, rs_after_walk_min_rows=9, isa="scalar")
    for depth, want in ((3, 5), (4, 5), (5, 6), (6, 8)):
        ens = _balanced(depth)                     # two trees of 2 ** depth leaves
        assert autoselect.rs_min_rows(ens, "vqs", t=t) == want
        assert autoselect.rs_min_rows(ens, "walk", t=t) == 9
    # the mean decides: one tree of 2 leaves and one of 32 (17 on average)
    mixed = Ensemble(trees=(_balanced(1).trees[0], _balanced(5).trees[0]),
                     tree_group=[0, 0], n_outputs=1, n_features=2, family="lightgbm",
                     base_score=[0.0])
    assert autoselect.rs_min_rows(mixed) == 6
    model = quickscorer.Model(_balanced(4))
    assert model.info()["few_rows_algorithm"] == "vqs"
    assert [model.plan.small_kernels[n] for n in (4, 5)] == ["vqs", "rapidscorer"]
    assert model.plan.choose(5, 1) == "rapidscorer" and model.plan.choose(4, 1) == "vqs"
