"""Scoring with part of an ensemble: LightGBM's ``start_iteration`` / ``num_iteration`` and
XGBoost's ``iteration_range``, against the libraries themselves (raw scores, outputs and exit
leaves, bit for bit), on every algorithm that scores the model; out-of-range arguments."""
from __future__ import annotations

import numpy as np
import pytest
import test_lightgbm_import as L
import test_xgboost_import as XG
from conftest import scoring_algorithms

import quickscorer
from quickscorer import InputError

lgb = pytest.importorskip("lightgbm")
xgb = pytest.importorskip("xgboost")

LGB_KINDS = ["regression", "binary", "multiclass", "lambdarank", "random_forest",
             "linear_tree", "categorical"]
LGB_ARGS = [(0, 1), (1, 2), (2, None), (1, 0), (0, 100), (3, 1), (0, -1)]


@pytest.mark.parametrize("kind", LGB_KINDS)
def test_lightgbm_iterations(kind):
    booster, X, categorical = L._trained(kind)
    model = quickscorer.load(booster)
    n_it = model.ensemble.n_iterations
    assert n_it == booster.current_iteration()
    rows = L.lgb_probe_rows(model.ensemble, X[:40], seed=3, categorical=categorical)
    for start, num in LGB_ARGS:
        if start >= n_it:
            continue
        kw = dict(start_iteration=start, num_iteration=num)
        want_raw = booster.predict(rows, raw_score=True, **kw)
        want = booster.predict(rows, **kw)
        want_leaf = booster.predict(rows, pred_leaf=True, **kw).reshape(len(rows), -1)
        for alg in scoring_algorithms(model):
            msg = f"{kind} {kw} {alg}"
            np.testing.assert_array_equal(model.predict(rows, raw_score=True, algorithm=alg,
                                                        **kw), want_raw, err_msg=msg)
            np.testing.assert_array_equal(model.predict(rows, algorithm=alg, **kw), want,
                                          err_msg=msg)
            np.testing.assert_array_equal(
                model.predict_leaf(rows, source_ids=True, algorithm=alg, **kw), want_leaf,
                err_msg=msg)


XGB_KINDS = ["reg:squarederror", "binary:logistic", "multi:softprob", "dart",
             "random_forest", "categorical"]


@pytest.mark.parametrize("kind", XGB_KINDS)
def test_xgboost_iteration_range(kind):
    booster, X, kw = XG._trained(kind)
    model = quickscorer.load(booster)
    n_rounds = booster.num_boosted_rounds()
    assert model.ensemble.n_iterations == n_rounds
    if kind == "random_forest":
        assert model.ensemble.trees_per_iteration == 4
    rows = XG._probe_rows(model.ensemble, X, 5, kw.get("feature_types") and [0, 3] or ())
    dm = xgb.DMatrix(rows, missing=np.nan, **kw)
    for rng in [(0, 1), (1, 3), (2, n_rounds), (0, 0), (n_rounds - 1, n_rounds), (3, 0)]:
        want = booster.predict(dm, output_margin=True, iteration_range=rng)
        want_out = booster.predict(dm, iteration_range=rng)
        # XGBoost's pred_leaf takes ranges from 0 only; a slice of the booster gives the rest
        sliced = booster[rng[0]:rng[1] or n_rounds]
        want_leaf = sliced.predict(dm, pred_leaf=True).astype(np.int32)
        for alg in scoring_algorithms(model):
            msg = f"{kind} {rng} {alg}"
            got = model.predict(rows, raw_score=True, algorithm=alg, iteration_range=rng)
            np.testing.assert_array_equal(got, want, err_msg=msg)
            np.testing.assert_array_equal(model.predict(rows, algorithm=alg,
                                                        iteration_range=rng), want_out,
                                          err_msg=msg)
            np.testing.assert_array_equal(
                model.predict_leaf(rows, source_ids=True, algorithm=alg, iteration_range=rng),
                want_leaf.reshape(len(rows), -1), err_msg=msg)


def test_out_of_range_and_mixed_arguments_are_refused():
    booster, X, _ = L._trained("regression")
    model = quickscorer.load(booster)
    n = model.ensemble.n_iterations
    for kw in (dict(iteration_range=(0, n + 1)),
               dict(iteration_range=(2, 1)), dict(iteration_range=(n, 0)),
               dict(iteration_range=(0, 1), num_iteration=1), dict(iteration_range="ab"),
               dict(start_iteration="x")):
        with pytest.raises(InputError):
            model.predict(X[:3], **kw)
    assert model.iteration_bounds() == (0, n)
    assert model.iteration_bounds(1, None) == (1, n)
    assert model.iteration_bounds(iteration_range=(0, 0)) == (0, n)


@pytest.mark.parametrize("objective", ["regression", "binary", "multiclass", "rf"])
def test_a_start_past_the_last_iteration_or_below_zero_is_clamped_as_lightgbm_does(objective):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 4))
    y = rng.integers(0, 3, 300) if objective == "multiclass" else (X[:, 0] > 0).astype(float)
    params = {"objective": "binary" if objective == "rf" else objective, "verbose": -1}
    if objective == "multiclass":
        params["num_class"] = 3
    if objective == "rf":
        params.update(boosting="rf", bagging_fraction=0.5, bagging_freq=1)
    booster = lgb.train(params, lgb.Dataset(X, y), 5)
    model = quickscorer.load(booster)
    n = booster.current_iteration()
    rows = X[:9]
    for kw in (dict(start_iteration=n), dict(start_iteration=n + 3),
               dict(start_iteration=n, num_iteration=2), dict(start_iteration=-2),
               dict(start_iteration=-2, num_iteration=2),
               dict(start_iteration=3, num_iteration=10)):
        msg = f"{objective} {kw}"
        np.testing.assert_array_equal(model.predict(rows, **kw), booster.predict(rows, **kw),
                                      err_msg=msg)       # rf of no trees: NaN, as LightGBM
        np.testing.assert_array_equal(model.predict(rows, raw_score=True, **kw),
                                      booster.predict(rows, raw_score=True, **kw), err_msg=msg)
        np.testing.assert_array_equal(model.predict_leaf(rows, source_ids=True, **kw),
                                      booster.predict(rows, pred_leaf=True, **kw)
                                      .reshape(len(rows), -1), err_msg=msg)
    assert model.iteration_bounds(n + 3) == (n, n)
    assert model.iteration_bounds(-2, 2) == (0, 2)


def test_a_range_is_prepared_once_and_kept():
    booster, X, _ = L._trained("binary")
    model = quickscorer.load(booster)
    model.predict(X[:5], num_iteration=2)
    part = model._parts.models[(0, 2)]
    model.predict(X[:5], num_iteration=2)
    assert model._parts.models[(0, 2)] is part
    for k in range(1, model.ensemble.n_iterations):
        model.predict(X[:2], start_iteration=k)
    assert len(model._parts.models) <= quickscorer.model.PART_CACHE
