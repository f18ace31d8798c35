"""XGBoost's vector-leaf trees (``multi_strategy="multi_output_tree"``): each tree read as one
tree of its structure an output, XGBoost's margins and outputs bit for bit, iteration ranges
included."""
from __future__ import annotations

import numpy as np
import pytest

import quickscorer

xgb = pytest.importorskip("xgboost", reason="the test extra installs xgboost-cpu")


@pytest.mark.parametrize("params", [
    {"max_depth": 4},
    {"max_depth": 3, "objective": "multi:softprob", "num_class": 4},
    {"max_depth": 3, "num_parallel_tree": 2, "subsample": 0.8},
    {"max_depth": 5, "booster": "dart", "rate_drop": 0.2, "one_drop": 1},
], ids=["regression", "multiclass", "forest", "dart"])
def test_vector_leaves_score_as_xgboost(params):
    if params.get("booster") == "dart" and tuple(
            int(v) for v in xgb.__version__.split(".")[:2]) < (3, 3):
        pytest.skip(f"XGBoost {xgb.__version__} trains no DART of vector leaves (3.3 does)")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 5))
    X[rng.random(X.shape) < 0.1] = np.nan
    if params.get("num_class"):
        y = (rng.random(600) * 4).astype(int)
    else:
        c = np.nan_to_num(X)
        y = np.column_stack([c[:, 0] + c[:, 1], c[:, 2] * 2, c[:, 3] - c[:, 0]])
    booster = xgb.train({**params, "tree_method": "hist", "multi_strategy": "multi_output_tree",
                         "nthread": 1, "seed": 1}, xgb.DMatrix(X, y), 12)
    d = xgb.DMatrix(X)
    want = booster.predict(d, output_margin=True)
    for fmt in ("json", "ubj"):
        model = quickscorer.load(bytes(booster.save_raw(fmt)))
        k = model.n_outputs
        assert model.n_trees == 12 * k * max(1, int(params.get("num_parallel_tree", 1)))
        np.testing.assert_array_equal(model.predict_raw(X).reshape(want.shape), want)
        np.testing.assert_array_equal(model.predict(X), booster.predict(d))
        for alg in ("walk", "vqs", "rapidscorer"):
            np.testing.assert_array_equal(
                model.predict_raw(X, algorithm=alg, n_threads=2).reshape(want.shape), want)
    part = booster.predict(d, output_margin=True, iteration_range=(3, 9))
    np.testing.assert_array_equal(
        model.predict_raw(X, iteration_range=(3, 9)).reshape(part.shape), part)
    # a column per tree and output: each of a tree's k columns is XGBoost's leaf of it
    leaves = model.predict_leaf(X, source_ids=True)
    theirs = booster.predict(d, pred_leaf=True).reshape(600, -1)
    for j in range(k):
        np.testing.assert_array_equal(leaves[:, j::k], theirs)


def test_contributions_of_vector_leaves_are_xgboost_s():
    """XGBoost 3.3 and later explain vector-leaf trees (``pred_contribs``): the source's
    computation (``method="treeshap"``) gives its values bit for bit, the quadrature within
    float32's rounding."""
    if tuple(int(v) for v in xgb.__version__.split(".")[:2]) < (3, 3):
        pytest.skip(f"XGBoost {xgb.__version__} gives no contributions of vector leaves "
                    f"(3.3 does)")
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 4))
    y = np.column_stack([X[:, 0] + X[:, 1], X[:, 2] * 2])
    booster = xgb.train({"tree_method": "hist", "multi_strategy": "multi_output_tree",
                         "max_depth": 3, "nthread": 1}, xgb.DMatrix(X, y), 6)
    model = quickscorer.load(booster)
    want = booster.predict(xgb.DMatrix(X[:60]), pred_contribs=True)
    np.testing.assert_array_equal(model.contributions(X[:60], method="treeshap"), want)
    np.testing.assert_allclose(model.contributions(X[:60]), want, rtol=0, atol=1e-5)
