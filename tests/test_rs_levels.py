"""RapidScorer's level-by-level path (rs_layout.level_arrays): trees of depth at most 8
walked a level at a time in rank space instead of scanned into bitvectors. It must give the
reference's exit leaves and raw scores bit for bit on every path this CPU runs, with NaN and
zero as missing values on either default side, rank slots, multiclass and DART weights, on
models the libraries trained; and it must stand aside where it cannot score a model."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import quickscorer
from quickscorer import _rapidscorer
from quickscorer.algorithms.cpu import ISAS
from quickscorer.algorithms.rapidscorer import RapidScorer
from quickscorer.algorithms.rs_layout import LEVELS_MAX_DEPTH, level_arrays
from quickscorer.ir import Ensemble, reference

from conftest import random_ensemble, run_kernel, special_rows

RS_ISAS = [name for name, code in ISAS.items() if _rapidscorer.isa_available(code)]
if "avx2" in RS_ISAS:
    RS_ISAS.insert(RS_ISAS.index("avx2") + 1, "avx2-32")

FINITE = (-1.0, 0.0, 0.5, 1e-36, 2.0, -0.0, 3.0)


def _alg(ens, isa, **kw):
    """The algorithm on path isa, its level path in every group where it can (levels=True)
    unless told otherwise."""
    kw.setdefault("levels", True)
    if isa == "avx2-32":
        isa, kw = "avx2", {**kw, "wide": False}
    return RapidScorer(ens, quickscorer.Model(ens)._forest, isa=isa, **kw)


def _depth(ens) -> int:
    return max((t.depth() for t in ens.trees), default=0)


def _check_both(ens, X, isa, depth_decides=True):
    """The level path and the scans give the reference's leaves and scores (and, where
    ``depth_decides``, the level path is on exactly for trees of at most its depth)."""
    on = _alg(ens, isa)
    off = _alg(ens, isa, levels=False)
    if depth_decides:
        assert on.levels == (_depth(ens) <= LEVELS_MAX_DEPTH)
    assert not off.levels
    want_leaves = reference.predict_leaf(ens, X)
    for alg in (on, off):
        raw, leaves = run_kernel(alg, ens, X)
        np.testing.assert_array_equal(leaves, want_leaves)
        np.testing.assert_array_equal(raw, reference.predict_raw(ens, X).astype(raw.dtype))
    return on


@pytest.mark.parametrize("isa", RS_ISAS)
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), family=st.sampled_from(["lightgbm", "xgboost"]),
       n_rows=st.sampled_from([1, 20, 32, 33, 64, 100]), n_outputs=st.integers(1, 3),
       max_leaves=st.sampled_from([1, 2, 5, 9]))
def test_level_path_is_exact_on_random_trees(isa, seed, family, n_rows, n_outputs, max_leaves):
    rng = np.random.default_rng(seed)
    ens = random_ensemble(rng, family, n_trees=25, n_outputs=n_outputs, n_features=6,
                          max_leaves=max_leaves, p_categorical=0.0, thresholds=FINITE)
    X = special_rows(rng, n_rows, 6)
    _check_both(ens, X, isa)


@pytest.mark.parametrize("isa", RS_ISAS)
@pytest.mark.parametrize("missing", ["nan", "zero", "none"])
def test_level_path_on_lightgbm_missing_types(isa, missing):
    """LightGBM's three missing types, each default side, on rows of NaN and zeros."""
    lgb = pytest.importorskip("lightgbm", reason="the test extra installs lightgbm")
    rng = np.random.default_rng(7)
    X = rng.normal(size=(3000, 8))
    X[rng.random(X.shape) < 0.15] = np.nan
    X[rng.random(X.shape) < 0.15] = 0.0
    y = np.nan_to_num(X[:, 0]) - 2 * (X[:, 1] == 0) + np.isnan(X[:, 2]) + rng.normal(size=3000)
    params = dict(objective="regression", num_leaves=40, max_depth=7, verbose=-1,
                  num_threads=1, seed=3, use_missing=missing != "none",
                  zero_as_missing=missing == "zero", min_data_in_leaf=5)
    booster = lgb.train(params, lgb.Dataset(X, y), num_boost_round=30)
    model = quickscorer.load(booster)
    ens = model.ensemble
    assert _depth(ens) <= LEVELS_MAX_DEPTH
    rows = np.vstack([X[:150], special_rows(rng, 90, 8)])
    alg = _check_both(ens, rows, isa)
    assert alg.levels
    raw, _ = run_kernel(alg, ens, rows)
    np.testing.assert_array_equal(raw[:, 0], booster.predict(rows, raw_score=True))


@pytest.mark.parametrize("isa", RS_ISAS)
def test_level_path_on_xgboost_depthwise_trees_with_nan(isa):
    """XGBoost's depth-wise trees, as deep as the path takes, NaN to both default sides."""
    xgb = pytest.importorskip("xgboost", reason="the test extra installs xgboost-cpu")
    rng = np.random.default_rng(8)
    X = rng.normal(size=(3000, 6)).astype(np.float32)
    X[rng.random(X.shape) < 0.2] = np.nan
    y = np.nan_to_num(X[:, 0]) * 2 + np.isnan(X[:, 1]) - np.nan_to_num(X[:, 2]) ** 2
    booster = xgb.train(dict(max_depth=8, nthread=1, seed=1, base_score=0.3),
                        xgb.DMatrix(X, label=y, missing=np.nan), 25)
    model = quickscorer.load(booster)
    ens = model.ensemble
    rows = np.vstack([X[:200], special_rows(rng, 60, 6).astype(np.float32)]).astype(np.float64)
    alg = _check_both(ens, rows, isa)
    assert alg.levels
    raw, _ = run_kernel(alg, ens, rows)
    dm = xgb.DMatrix(rows[:200], missing=np.nan)      # (XGBoost refuses infinite values)
    np.testing.assert_array_equal(raw[:200, 0], booster.predict(dm, output_margin=True))


@pytest.mark.parametrize("isa", RS_ISAS)
def test_level_path_on_rank_slots_and_multiclass(isa):
    """A feature of more than 255 thresholds (ranked in slots) and three classes."""
    lgb = pytest.importorskip("lightgbm", reason="the test extra installs lightgbm")
    rng = np.random.default_rng(9)
    X = rng.normal(size=(6000, 3))
    y = np.digitize(X[:, 0] + 0.2 * rng.normal(size=6000), [-0.4, 0.4])
    booster = lgb.train(dict(objective="multiclass", num_class=3, num_leaves=31, max_depth=8,
                             max_bin=1023, verbose=-1, num_threads=1, seed=4,
                             min_data_in_leaf=2), lgb.Dataset(X, y), num_boost_round=40)
    ens = quickscorer.load(booster).ensemble
    alg = _alg(ens, isa)
    assert alg.levels and alg.layout.n_slots > ens.n_features      # several slots
    rows = np.vstack([X[:300], special_rows(rng, 50, 3)])
    _check_both(ens, rows, isa)


def test_trees_deeper_than_the_path_take_the_scans():
    rng = np.random.default_rng(10)
    ens = random_ensemble(rng, "lightgbm", n_trees=40, max_leaves=60, p_categorical=0.0,
                          thresholds=FINITE)
    assert _depth(ens) > LEVELS_MAX_DEPTH
    alg = _alg(ens, "scalar")
    assert not alg.levels
    with pytest.raises(ValueError, match="deeper than"):
        a = alg._arrays
        level_arrays(ens, a["slot_column"], np.zeros(1, np.int64), np.zeros(0))


def test_categorical_splits_take_the_scans_and_infinite_thresholds_either():
    rng = np.random.default_rng(11)
    cat = random_ensemble(rng, "lightgbm", n_trees=10, max_leaves=5, p_categorical=0.5,
                          thresholds=FINITE)
    assert not _alg(cat, "scalar").levels
    with pytest.raises(ValueError, match="categorical splits"):
        level_arrays(cat, np.arange(5, dtype=np.int32), np.zeros(6, np.int64), np.zeros(0))
    _check_both(cat, special_rows(rng, 40, 5), "scalar", depth_decides=False)
    for family in ("lightgbm", "xgboost"):
        inf = random_ensemble(rng, family, n_trees=10, max_leaves=5, p_categorical=0.0,
                              thresholds=(np.inf, -np.inf, 1.0, 0.0))
        for isa in RS_ISAS:     # on where the rank tables hold the thresholds, else off
            _check_both(inf, special_rows(rng, 70, 5), isa, depth_decides=False)


def test_environment_turns_the_level_path_off(monkeypatch):
    rng = np.random.default_rng(12)
    ens = random_ensemble(rng, "xgboost", n_trees=10, max_leaves=4, p_categorical=0.0,
                          thresholds=FINITE)
    assert _alg(ens, "scalar").levels
    monkeypatch.setenv("QUICKSCORER_RS_LEVELS", "0")
    assert not _alg(ens, "scalar").levels


def test_damaged_level_fields_are_refused():
    rng = np.random.default_rng(13)
    ens = random_ensemble(rng, "lightgbm", n_trees=6, max_leaves=6, p_categorical=0.0,
                          thresholds=FINITE)
    a = dict(_alg(ens, "scalar")._arrays)
    nodes = a["lv_nodes"].copy()
    nodes[0] = (nodes[0] & ~np.uint32(0xFFFF)) | np.uint32(60000)     # a column past the end
    with pytest.raises(ValueError, match="level node is out of range"):
        _rapidscorer.RSLayout(dict(a, lv_nodes=nodes), ens.n_features)
    depth = a["lv_depth"].copy()
    depth[0] = 9
    with pytest.raises(ValueError, match="level"):
        _rapidscorer.RSLayout(dict(a, lv_depth=depth), ens.n_features)
    ends = a["lv_level_end"].copy()
    ends[:] = 0
    with pytest.raises(ValueError, match="level"):
        _rapidscorer.RSLayout(dict(a, lv_level_end=ends), ens.n_features)


def test_automatic_choice_follows_nodes_per_level():
    from quickscorer.algorithms.rs_layout import (LEVELS_MIN_RATIO, LEVELS_NARROW_RATIO,
                                                  levels_choice, no_level_fields)

    def fields(nodes, depths):
        return {"lv_depth": np.asarray(depths, np.uint8),
                "lv_node_offset": np.array([0, nodes], np.int64)}

    assert levels_choice(no_level_fields(), None) == 0
    assert levels_choice(no_level_fields(), True) == 0
    below = fields(int(LEVELS_MIN_RATIO * 8) - 1, [8])
    middle = fields(int(LEVELS_MIN_RATIO * 8), [8])
    high = fields(int(LEVELS_NARROW_RATIO * 8), [8])
    assert [levels_choice(f, None) for f in (below, middle, high)] == [0, 64, 32]
    assert [levels_choice(f, True) for f in (below, middle, high)] == [32, 32, 32]
    assert [levels_choice(f, False) for f in (below, middle, high)] == [0, 0, 0]


def test_level_layout_pickles_with_its_lane_floor():
    import pickle
    rng = np.random.default_rng(14)
    ens = random_ensemble(rng, "xgboost", n_trees=8, max_leaves=6, p_categorical=0.0,
                          thresholds=FINITE)
    alg = _alg(ens, "scalar")
    again = pickle.loads(pickle.dumps(alg.layout))
    assert again.levels and again.levels_min_lanes == alg.layout.levels_min_lanes == 32
    X = special_rows(rng, 40, 5)
    alg.layout = again
    raw, leaves = run_kernel(alg, ens, X)
    np.testing.assert_array_equal(leaves, reference.predict_leaf(ens, X))


@pytest.mark.parametrize("isa", RS_ISAS)
def test_level_path_with_dart_weights(isa):
    """XGBoost DART: each tree's leaf value times its weight, float32, in tree order."""
    rng = np.random.default_rng(15)
    ens = random_ensemble(rng, "xgboost", n_trees=30, max_leaves=9, p_categorical=0.0,
                          thresholds=FINITE)
    dart = Ensemble(trees=ens.trees, tree_group=ens.tree_group, n_outputs=1,
                    n_features=ens.n_features, family="xgboost", base_score=ens.base_score,
                    tree_weight=rng.uniform(0.1, 1.0, size=ens.n_trees))
    assert _check_both(dart, special_rows(rng, 100, 5), isa).levels


def test_level_values_kept_in_the_precision_the_model_sums():
    """float64 slot values for a LightGBM model, float32 only for an XGBoost one; a layout
    without the values its forest sums is refused when scoring, not read."""
    rng = np.random.default_rng(16)
    for family, have, lack in (("lightgbm", "lv_value", "lv_value_f32"),
                               ("xgboost", "lv_value_f32", "lv_value")):
        ens = random_ensemble(rng, family, n_trees=6, max_leaves=6, p_categorical=0.0,
                              thresholds=FINITE)
        alg = _alg(ens, "scalar")
        a = alg._arrays
        assert a[have].shape[0] == a["lv_slot_leaf"].shape[0] and a[lack].shape[0] == 0
        alg.layout = _rapidscorer.RSLayout(
            dict(a, **{have: np.zeros(0, a[have].dtype),
                       lack: np.zeros(a["lv_slot_leaf"].shape[0], a[lack].dtype)}),
            ens.n_features)
        with pytest.raises(ValueError, match="level path has no"):
            run_kernel(alg, ens, special_rows(rng, 10, 5))
