"""benchmarks/ydf_reference.py times YDF against this library on one model, written out from
YDF's trees as an XGBoost JSON document: that document must score as YDF does, missing values
included, or the comparison would not be of the same model."""
from __future__ import annotations

import numpy as np
import pytest

import quickscorer
from benchmarks import ydf_reference as Y

ydf = pytest.importorskip("ydf", reason="the test extra installs ydf")


def _dataset(X):
    return {f"f{j}": X[:, j] for j in range(X.shape[1])}


def test_ydf_model_as_xgboost_json_scores_as_ydf():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3000, 6)).astype(np.float32)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.nan_to_num(X[:, 0]) * 2 - np.nan_to_num(X[:, 1]) ** 2 + np.isnan(X[:, 2])
    train = _dataset(X)
    train["y"] = y
    model = ydf.GradientBoostedTreesLearner(
        label="y", task=ydf.Task.REGRESSION, num_trees=40, max_depth=6,
        validation_ratio=0.0, early_stopping="NONE").train(train, verbose=0)
    ours = quickscorer.load(Y.as_xgboost_json(model))
    assert ours.info()["n_trees"] == model.num_trees() == 40

    rows = np.vstack([X[:500], rng.normal(size=(300, 6)).astype(np.float32) * 3])
    rows[rng.random(rows.shape) < 0.1] = np.nan
    ref = np.asarray(model.predict(_dataset(rows)), dtype=np.float32)
    got = ours.predict(rows)
    assert np.isnan(rows).any(axis=1).sum() > 100
    # a missing value sent the wrong way would move a score by a leaf value (about 0.01 to 1)
    np.testing.assert_allclose(got, ref, rtol=0, atol=1e-6)
