"""Transformed outputs (probabilities, softmax, exp, ...) equal the libraries' bit for bit."""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import quickscorer

lgb = pytest.importorskip("lightgbm", reason="the test extra installs lightgbm")
xgb = pytest.importorskip("xgboost", reason="the test extra installs xgboost-cpu")


def _data(rng, n=600, m=6):
    X = rng.normal(size=(n, m))
    X[rng.random(X.shape) < 0.05] = np.nan
    latent = np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) ** 2 - np.nan_to_num(X[:, 2])
    return X, latent


LGB_CASES = {
    "regression": dict(objective="regression"),
    "regression_sqrt": dict(objective="regression", reg_sqrt=True),
    "binary": dict(objective="binary", sigmoid=0.7),
    "cross_entropy": dict(objective="cross_entropy"),
    "cross_entropy_lambda": dict(objective="cross_entropy_lambda"),
    "poisson": dict(objective="poisson"),
    "gamma": dict(objective="gamma"),
    "tweedie": dict(objective="tweedie"),
    "multiclass": dict(objective="multiclass", num_class=4),
    "multiclassova": dict(objective="multiclassova", num_class=3, sigmoid=1.3),
    "random_forest": dict(objective="binary", boosting="rf", bagging_freq=1,
                          bagging_fraction=0.7, feature_fraction=0.8),
}


def _lgb_label(name, latent, rng):
    if name in ("binary", "cross_entropy", "random_forest"):
        return (latent > 0).astype(float)
    if name == "cross_entropy_lambda":
        return 1 / (1 + np.exp(-latent))
    if name in ("poisson", "tweedie"):
        return rng.poisson(np.exp(np.clip(latent, -2, 2)))
    if name == "gamma":
        return np.exp(np.clip(latent, -2, 2)) + 0.1
    if name == "multiclass":
        return np.digitize(latent, [-1, 0, 1]).astype(float)
    if name == "multiclassova":
        return np.digitize(latent, [-0.5, 0.5]).astype(float)
    if name == "regression_sqrt":
        return np.abs(latent) * 3
    return latent


@pytest.mark.parametrize("name", sorted(LGB_CASES))
def test_lightgbm_transformed_output_is_bit_exact(name):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    X, latent = _data(rng)
    y = _lgb_label(name, latent, rng)
    params = dict(LGB_CASES[name], num_leaves=15, learning_rate=0.2, verbose=-1, num_threads=1,
                  seed=1, min_data_in_leaf=5)
    booster = lgb.train(params, lgb.Dataset(X, y), num_boost_round=15)
    model = quickscorer.load(booster)
    Xt = np.vstack([X[:200], rng.normal(size=(50, X.shape[1])) * 4])
    np.testing.assert_array_equal(model.predict(Xt, raw_score=True),
                                  booster.predict(Xt, raw_score=True))
    np.testing.assert_array_equal(model.predict(Xt), booster.predict(Xt))


XGB_CASES = {
    "reg:squarederror": {},
    "reg:logistic": {},
    "binary:logistic": {},
    "binary:logitraw": {},
    "count:poisson": {},
    "reg:gamma": {},
    "reg:tweedie": {},
    "multi:softprob": dict(num_class=4),
    "multi:softmax": dict(num_class=4),
    "rank:ndcg": {},
}


def _xgb_label(name, latent, rng):
    if name in ("binary:logistic", "binary:logitraw"):
        return (latent > 0).astype(float)
    if name == "reg:logistic":
        return 1 / (1 + np.exp(-latent))
    if name in ("count:poisson", "reg:tweedie"):
        return rng.poisson(np.exp(np.clip(latent, -2, 2)))
    if name == "reg:gamma":
        return np.exp(np.clip(latent, -2, 2)) + 0.1
    if name.startswith("multi"):
        return np.digitize(latent, [-1, 0, 1]).astype(float)
    if name == "rank:ndcg":
        return np.digitize(latent, [-1, 0, 1, 2]).astype(float)
    return latent


@pytest.mark.parametrize("fmt", ["json", "ubj"])
@pytest.mark.parametrize("name", sorted(XGB_CASES))
def test_xgboost_transformed_output_is_bit_exact(name, fmt, tmp_path):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    X, latent = _data(rng)
    y = _xgb_label(name, latent, rng)
    dtrain = xgb.DMatrix(X, label=y, missing=np.nan)
    if name == "rank:ndcg":
        dtrain.set_group([100] * 6)
    params = dict(XGB_CASES[name], objective=name, max_depth=4, eta=0.3, nthread=1, seed=1)
    booster = xgb.train(params, dtrain, num_boost_round=12)
    path = tmp_path / f"model.{fmt}"
    booster.save_model(str(path))
    model = quickscorer.load(path)
    Xt = np.vstack([X[:200], rng.normal(size=(50, X.shape[1])) * 4])
    dm = xgb.DMatrix(Xt, missing=np.nan)
    want_raw = booster.predict(dm, output_margin=True)
    want = booster.predict(dm)
    np.testing.assert_array_equal(model.predict(Xt, raw_score=True), want_raw)
    np.testing.assert_array_equal(model.predict(Xt), want)
