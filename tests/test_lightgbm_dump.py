"""LightGBM's JSON dumps (``Booster.dump_model()``): read as the text model they stand for,
LightGBM's raw scores and outputs bit for bit on models of several settings."""
from __future__ import annotations

import json

import numpy as np
import pytest

import quickscorer
from quickscorer.errors import ModelFormatError

lgb = pytest.importorskip("lightgbm", reason="the test extra installs lightgbm")


def _rows(n=900, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    X[:, 3] = rng.integers(0, 9, n)
    X[rng.random(X.shape) < 0.05] = np.nan
    X[:, 4] = np.where(rng.random(n) < 0.2, 0.0, X[:, 4])
    return X


SETTINGS = [
    {"objective": "binary", "num_leaves": 15},
    {"objective": "regression", "num_leaves": 31, "zero_as_missing": True},
    {"objective": "multiclass", "num_class": 3, "num_leaves": 7},
    {"objective": "regression", "boosting": "rf", "bagging_fraction": 0.7, "bagging_freq": 1,
     "num_leaves": 9},
    {"objective": "lambdarank", "num_leaves": 20, "max_depth": 5},
    {"objective": "poisson", "num_leaves": 12, "use_missing": False},
]


@pytest.mark.parametrize("params", SETTINGS, ids=lambda p: p["objective"])
def test_a_dump_scores_as_lightgbm(params, tmp_path):
    X = _rows()
    rng = np.random.default_rng(1)
    y = (np.nan_to_num(X[:, 0]) + (X[:, 3] == 2) > 0.3).astype(int)
    if params["objective"] == "multiclass":
        y = (y + (np.nan_to_num(X[:, 1]) > 0)).astype(int)
    if params["objective"] == "poisson":
        y = rng.poisson(2.0, X.shape[0])
    data = lgb.Dataset(X, y, categorical_feature=[3],
                       group=[30] * 30 if params["objective"] == "lambdarank" else None)
    booster = lgb.train({**params, "verbose": -1, "min_data_per_group": 5, "cat_smooth": 1,
                         "seed": 3}, data, 15)
    doc = booster.dump_model()
    (tmp_path / "dump.json").write_text(json.dumps(doc))
    for source in (doc, json.dumps(doc), tmp_path / "dump.json"):
        model = quickscorer.load(source)
        assert model.ensemble.source["format"] == "json dump"
        np.testing.assert_array_equal(model.predict(X, raw_score=True),
                                      booster.predict(X, raw_score=True))
        np.testing.assert_array_equal(model.predict(X), booster.predict(X))
    np.testing.assert_array_equal(model.predict_leaf(X, source_ids=True),
                                  booster.predict(X, pred_leaf=True))
    assert model.ensemble.has_categorical == ('"decision_type": "=="' in json.dumps(doc))
    text = quickscorer.load(booster.model_to_string())
    np.testing.assert_array_equal(model.predict(X[:5]), text.predict(X[:5]))


def test_a_dataframe_s_categories_and_what_a_dump_may_not_hold():
    pd = pytest.importorskip("pandas")
    X = _rows()
    frame = pd.DataFrame(X, columns=[f"c{j}" for j in range(6)])
    frame["c3"] = pd.Categorical.from_codes(np.nan_to_num(X[:, 3]).astype(int),
                                            [f"k{i}" for i in range(9)])
    y = (np.nan_to_num(X[:, 0]) + (frame["c3"] == "k2") > 0.3).astype(int)
    booster = lgb.train({"objective": "binary", "verbose": -1, "num_leaves": 7,
                         "min_data_per_group": 5}, lgb.Dataset(frame, y), 10)
    doc = booster.dump_model()
    assert doc["pandas_categorical"]
    model = quickscorer.load(doc)
    part = frame.iloc[::7].copy()
    part["c3"] = part["c3"].cat.reorder_categories(list(reversed(part["c3"].cat.categories)))
    np.testing.assert_array_equal(model.predict(part), booster.predict(part))
    linear = lgb.train({"objective": "regression", "linear_tree": True, "verbose": -1,
                        "num_leaves": 6}, lgb.Dataset(X[:, :3], y), 8)
    model = quickscorer.load(linear.dump_model())
    assert model.ensemble.has_linear
    np.testing.assert_array_equal(model.predict(X[:, :3]), linear.predict(X[:, :3]))
    bad = json.loads(json.dumps(doc))
    bad["tree_info"][0]["tree_structure"]["split_scale"] = 2.0
    with pytest.raises(ModelFormatError, match=r"holds \['split_scale'\]"):
        quickscorer.load(bad)
    bad = json.loads(json.dumps(doc))
    bad["boosting"] = "dart"
    with pytest.raises(ModelFormatError, match=r"the document holds \['boosting'\]"):
        quickscorer.load(bad)
