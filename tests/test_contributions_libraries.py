"""SHAP contributions against each library's own: LightGBM's pred_contrib, XGBoost's
pred_contribs, CatBoost's ShapValues; bit for bit with the libraries' recursion
(``method="treeshap"``) on x86-64, within the stated bounds with the quadrature."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import shared_data_or_skip
from test_contributions import BIT_EXACT, _assert_close_to, _sums_to_raw
from test_lightgbm_import import CASES as LGB_CASES
from test_lightgbm_import import _read_libsvm, lgb, lgb_probe_rows, lgb_train
from test_lightgbm_import import _trained as lgb_trained

import quickscorer
from quickscorer import Model
from quickscorer.errors import ModelFormatError
from quickscorer.importers.lightgbm import load_lightgbm


def _check(model, rows, want, tol_treeshap, tol_quadrature):
    """Both methods against the library's own contributions ``want``: the recursion bit for
    bit on x86-64 (else within tol_treeshap), the quadrature within tol_quadrature (of each
    row's largest contribution), in the library's shape and dtype. Returns the quadrature's."""
    got = model.contributions(rows, method="treeshap")
    assert got.shape == want.shape and got.dtype == want.dtype
    if BIT_EXACT:
        np.testing.assert_array_equal(got, want)
    else:
        _assert_close_to(got, want, tol_treeshap, "treeshap")
    quad = model.contributions(rows)
    assert quad.shape == want.shape and quad.dtype == want.dtype
    _assert_close_to(quad, want, tol_quadrature, "quadrature")
    return quad


# -- LightGBM ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", LGB_CASES)
def test_lightgbm_contributions_are_lightgbms(name):
    booster, X, categorical = lgb_trained(name)
    model = Model(load_lightgbm(booster))
    rows = lgb_probe_rows(model.ensemble, X[:60], seed=7, categorical=categorical)
    if name == "linear_tree":         # neither defines them
        with pytest.raises(lgb.basic.LightGBMError, match="linear trees"):
            booster.predict(rows, pred_contrib=True)
        with pytest.raises(ModelFormatError, match="linear trees"):
            model.contributions(rows)
        return
    quad = _check(model, rows, booster.predict(rows, pred_contrib=True), 1e-12, 1e-13)
    if name != "random_forest":
        # LightGBM explains a random forest's sum of trees, not its mean: the contributions
        # add up to the raw score everywhere else
        _sums_to_raw(model, quad, rows, 1e-12)


def test_lightgbm_partial_ensembles_and_predict_names():
    booster, X, _ = lgb_trained("multiclass")
    model = Model(load_lightgbm(booster))
    rows = X[:50]
    want = booster.predict(rows, pred_contrib=True, start_iteration=1, num_iteration=1)
    got = model.contributions(rows, method="treeshap", start_iteration=1, num_iteration=1)
    assert got.shape == want.shape
    _assert_close_to(got, want, 0.0 if BIT_EXACT else 1e-12, "a part")
    np.testing.assert_array_equal(model.predict(rows, pred_contrib=True),
                                  model.contributions(rows))
    np.testing.assert_array_equal(model.predict(rows, pred_contribs=True),
                                  model.contributions(rows))


def test_lightgbm_ranking_model_on_the_shared_data():
    root = shared_data_or_skip()
    n_features = 1 + max(int(tok.split(":")[0])
                         for line in (root / "rank.train").read_text().splitlines()
                         for tok in line.split()[1:])
    X, y = _read_libsvm(root / "rank.train", n_features)
    group = [int(s) for s in (root / "rank.train.query").read_text().split()]
    booster = lgb_train(dict(objective="lambdarank", num_leaves=31, min_data_in_leaf=20),
                        X, y, rounds=20, group=group)
    model = Model(load_lightgbm(booster))
    rows = X[:40]
    _check(model, rows, booster.predict(rows, pred_contrib=True), 1e-12, 1e-13)


# -- XGBoost ----------------------------------------------------------------------------------
xgb_cases = pytest.importorskip("test_xgboost_import", reason="xgboost is not installed")


@pytest.mark.parametrize("name", sorted(xgb_cases.CASES))
def test_xgboost_contributions_are_xgboosts(name):
    xgb = pytest.importorskip("xgboost")
    booster, X, kw = xgb_cases._trained(name)
    model = quickscorer.load(bytes(booster.save_raw("json")))
    rows = X[:120]
    want = booster.predict(xgb.DMatrix(rows, missing=np.nan, **kw), pred_contribs=True)
    # XGBoost's own recursion rounds to float32 at every step; the quadrature sums in float64
    quad = _check(model, rows, want, 1e-5, 5e-6)
    _sums_to_raw(model, quad, rows, 1e-5)


# -- CatBoost ---------------------------------------------------------------------------------
def test_catboost_contributions_are_catboosts(tmp_path):
    cb = pytest.importorskip("catboost")
    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 5))
    y = X[:, 0] + X[:, 1] * X[:, 2] + rng.normal(size=600) * 0.1
    booster = cb.CatBoostRegressor(iterations=30, depth=5, verbose=False, random_seed=1)
    booster.fit(X, y)
    path = tmp_path / "m.json"
    booster.save_model(str(path), format="json")
    model = quickscorer.load(path)
    rows = X[:80]
    want = booster.get_feature_importance(cb.Pool(rows), type="ShapValues")
    got = model.contributions(rows)
    assert got.shape == want.shape
    _assert_close_to(got, want, 1e-6, "quadrature")
    _assert_close_to(model.contributions(rows, method="treeshap"), want, 1e-6, "treeshap")


# -- scikit-learn, against shap.TreeExplainer --------------------------------------------------
@pytest.mark.parametrize("kind", ["forest", "gradient_boosting", "hist_gradient_boosting"])
def test_sklearn_contributions_are_shaps(kind):
    shap = pytest.importorskip("shap", reason="the test extra installs shap")
    from sklearn.ensemble import (
        GradientBoostingRegressor,
        HistGradientBoostingRegressor,
        RandomForestRegressor,
    )
    rng = np.random.default_rng(5)
    X = rng.normal(size=(500, 6))
    y = X[:, 0] + X[:, 1] * X[:, 2] + np.sin(X[:, 3]) + rng.normal(size=500) * 0.1
    est = {"forest": RandomForestRegressor(n_estimators=8, max_depth=6, random_state=0),
           "gradient_boosting": GradientBoostingRegressor(n_estimators=20, max_depth=4),
           "hist_gradient_boosting": HistGradientBoostingRegressor(max_iter=20)}[kind]
    est.fit(X, y)
    model = quickscorer.load(est)
    rows = X[:60]
    explainer = shap.TreeExplainer(est)
    want = np.asarray(explainer.shap_values(rows, check_additivity=False))
    got = model.contributions(rows)
    assert got.shape == (60, 7) and got.dtype == np.float64
    _assert_close_to(got[:, :-1], want, 1e-9, "quadrature")
    expected = float(np.ravel(explainer.expected_value)[0])
    np.testing.assert_allclose(got[:, -1], expected, rtol=1e-9, atol=1e-12)
    # each row's values sum to the estimator's prediction (a forest's: its trees' mean)
    np.testing.assert_allclose(got.sum(axis=1), est.predict(rows), rtol=1e-12, atol=1e-12)
