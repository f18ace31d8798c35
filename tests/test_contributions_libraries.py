"""SHAP contributions against each library's own: LightGBM's pred_contrib, XGBoost's
pred_contribs, CatBoost's ShapValues; bit for bit with the libraries' recursion
(``method="treeshap"``) on x86-64, within the stated bounds with the quadrature.
Interactions against XGBoost's pred_interactions (bit for bit), CatBoost's
ShapInteractionValues and shap.TreeExplainer's for LightGBM and scikit-learn models."""
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


def _check(model, rows, want, tol_treeshap, tol_quadrature, interactions=False,
           exact=True):
    """Both methods against the library's own contributions (or interactions) ``want``: the
    recursion bit for bit on x86-64 where ``exact`` (else within tol_treeshap), the quadrature
    within tol_quadrature (of each row's largest contribution), in the library's shape and
    dtype. Returns the quadrature's."""
    got = model.contributions(rows, method="treeshap", interactions=interactions)
    assert got.shape == want.shape and got.dtype == want.dtype
    if BIT_EXACT and exact:
        np.testing.assert_array_equal(got, want)
    else:
        _assert_close_to(got, want, tol_treeshap, "treeshap")
    quad = model.contributions(rows, interactions=interactions)
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


@pytest.mark.parametrize("name", ["regression", "binary", "missing_none", "missing_zero",
                                  "many_leaves"])
def test_lightgbm_interactions_are_shaps(name):
    """LightGBM has no interactions of its own: each matrix's rows sum to its pred_contrib,
    and shap.TreeExplainer's (its own float64 recursion) are the oracle between features,
    except under zero-as-missing and use_missing=false, whose rules shap's recursion does not
    take (its rows do not sum to LightGBM's contributions there)."""
    shap = pytest.importorskip("shap", reason="the test extra installs shap")
    booster, X, categorical = lgb_trained(name)
    model = Model(load_lightgbm(booster))
    rows = np.asarray(X[:25], np.float64)
    F = model.ensemble.n_features
    contrib = booster.predict(rows, pred_contrib=True)
    want = None
    if name not in ("missing_zero", "missing_none"):
        want = np.asarray(shap.TreeExplainer(booster).shap_interaction_values(rows))
    for method in ("quadrature", "treeshap"):
        got = model.contributions(rows, interactions=True, method=method)
        assert got.shape == (25, F + 1, F + 1) and got.dtype == np.float64
        _assert_close_to(got.sum(axis=2), contrib, 1e-13, method + ": rows' sums")
        if want is not None:
            _assert_close_to(got[:, :F, :F], want, 1e-12, method)


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
def test_xgboost_contributions_and_interactions_are_xgboosts(name):
    xgb = pytest.importorskip("xgboost")
    booster, X, kw = xgb_cases._trained(name)
    model = quickscorer.load(bytes(booster.save_raw("json")))
    rows = X[:120]
    want = booster.predict(xgb.DMatrix(rows, missing=np.nan, **kw), pred_contribs=True)
    # treeshap repeats XGBoost's own arithmetic bit for bit: up to 3.2 its recursion, from 3.3
    # its 8-point float32 quadrature (chosen by the release that wrote the model, here the one
    # installed); its interactions follow the recursion, which 3.3's meet within float32
    # rounding (docs/contributions.md). Our quadrature sums in float64.
    quad = _check(model, rows, want, 1e-5, 5e-6)
    _sums_to_raw(model, quad, rows, 1e-5)
    rows = rows[:40]
    want = booster.predict(xgb.DMatrix(rows, missing=np.nan, **kw), pred_interactions=True)
    exact = tuple(int(p) for p in xgb.__version__.split(".")[:2]) < (3, 3)
    _check(model, rows, want, 1e-5, 5e-6, interactions=True, exact=exact)


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
    # oblivious trees: no stored programs, a layout no bigger than the scoring one
    model.predict(rows)
    held = model.memory()["bytes"]
    assert 0 < held["contributions"] <= held["oblivious"], held
    # CatBoost's interactions: the same between features; it spreads the bias over the
    # bias row and column where XGBoost's layout (ours) puts it at their crossing
    want2 = booster.get_feature_importance(cb.Pool(rows[:30]), type="ShapInteractionValues")
    got2 = model.contributions(rows[:30], interactions=True)
    assert got2.shape == want2.shape == (30, 6, 6)
    _assert_close_to(got2[:, :5, :5], want2[:, :5, :5], 1e-6, "interactions")
    np.testing.assert_allclose(got2[:, 5, 5], want[:30, 5], rtol=1e-9)


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
    want2 = np.asarray(explainer.shap_interaction_values(rows[:20]))
    for method in ("quadrature", "treeshap"):
        got2 = model.contributions(rows[:20], interactions=True, method=method)
        assert got2.shape == (20, 7, 7)
        _assert_close_to(got2[:, :-1, :-1], want2, 1e-9, "interactions " + method)
    expected = float(np.ravel(explainer.expected_value)[0])
    np.testing.assert_allclose(got[:, -1], expected, rtol=1e-9, atol=1e-12)
    # each row's values sum to the estimator's prediction (a forest's: its trees' mean)
    np.testing.assert_allclose(got.sum(axis=1), est.predict(rows), rtol=1e-12, atol=1e-12)
