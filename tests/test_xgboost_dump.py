"""XGBoost's JSON dumps (``get_dump(dump_format="json")``, as the LTR plugins' and Vespa's
XGBoost models): with the base score, objective and classes the dump leaves out, the margins
and outputs of XGBoost bit for bit, on models of several settings."""
from __future__ import annotations

import json

import numpy as np
import pytest

import quickscorer
from quickscorer.errors import ModelFormatError

xgb = pytest.importorskip("xgboost", reason="the test extra installs xgboost-cpu")


def _rows(n=700, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 7))
    X[rng.random(X.shape) < 0.1] = np.nan
    X[:, 3] = np.round(X[:, 3], 1)
    return X


def _base_score(booster) -> list[float]:
    text = json.loads(booster.save_config())["learner"]["learner_model_param"]["base_score"]
    return [float(v) for v in text.strip("[]").split(",")]


SETTINGS = [
    ({"objective": "binary:logistic", "max_depth": 4}, 25),
    ({"objective": "reg:squarederror", "max_depth": 6, "tree_method": "exact"}, 15),
    ({"objective": "count:poisson", "max_depth": 3}, 20),
    ({"objective": "rank:ndcg", "max_depth": 0, "grow_policy": "lossguide",
      "max_leaves": 12, "tree_method": "hist"}, 20),
    ({"objective": "multi:softprob", "num_class": 3, "max_depth": 3}, 10),
    ({"objective": "reg:squarederror", "max_depth": 4, "num_parallel_tree": 3}, 5),
]


@pytest.mark.parametrize("params, rounds", SETTINGS)
def test_a_dump_scores_as_xgboost_with_the_fields_it_leaves_out(params, rounds, tmp_path):
    X = _rows()
    rng = np.random.default_rng(1)
    k = params.get("num_class", 1)
    y = (rng.random(X.shape[0]) * max(k, 2)).astype(int) if k > 1 else \
        (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 3]) > 0).astype(float)
    if params["objective"] == "count:poisson":
        y = rng.poisson(1.5, X.shape[0]).astype(float)
    extra = {"group": [35] * 20} if params["objective"].startswith("rank") else {}
    d = xgb.DMatrix(X, label=y)
    if extra:
        d.set_group(extra["group"])
    booster = xgb.train({**params, "eta": 0.3, "nthread": 1, "seed": 2}, d, rounds)
    dump = booster.get_dump(dump_format="json", with_stats=True)
    kw = dict(base_score=_base_score(booster), objective=params["objective"],
              num_class=params.get("num_class"), n_features=X.shape[1])
    want = booster.predict(xgb.DMatrix(X), output_margin=True)
    for source in (dump, "[" + ",".join(dump) + "]"):
        model = quickscorer.load(source, **kw)
        np.testing.assert_array_equal(model.predict_raw(X).reshape(want.shape), want)
        np.testing.assert_array_equal(model.predict(X), booster.predict(xgb.DMatrix(X)))
    (tmp_path / "dump.json").write_text("[" + ",".join(dump) + "]")
    model = quickscorer.load(tmp_path / "dump.json", **kw)
    assert model.ensemble.source["format"] == "json dump" and model.ensemble.has_cover
    np.testing.assert_array_equal(model.predict_raw(X[:3]).reshape(-1),
                                  want.reshape(X.shape[0], -1)[:3].reshape(-1))
    leaves = booster.predict(xgb.DMatrix(X), pred_leaf=True).reshape(X.shape[0], -1)
    np.testing.assert_array_equal(model.predict_leaf(X, source_ids=True), leaves)
    # without the base score and objective: the trees' sum from 0
    bare = quickscorer.load(dump if k == 1 else dump[:k], n_features=X.shape[1],
                            **({"objective": params["objective"], "num_class": k}
                               if k > 1 else {}))
    assert bare.ensemble.base_score.tolist() == [0.0] * k


def test_feature_names_of_a_feature_map_and_what_a_dump_may_not_hold():
    X = _rows()
    y = (np.nan_to_num(X[:, 1]) > 0).astype(int)
    names = [f"feat_{j}" for j in range(7)]
    booster = xgb.train({"objective": "binary:logitraw", "max_depth": 3, "base_score": 0.0},
                        xgb.DMatrix(X, y, feature_names=names), 8)
    dump = booster.get_dump(dump_format="json")
    assert '"split": "feat_' in dump[0]
    with pytest.raises(ModelFormatError, match="give them"):
        quickscorer.load(dump)
    model = quickscorer.load(dump, feature_names=names)
    np.testing.assert_array_equal(
        model.predict_raw(X)[:, 0],
        booster.predict(xgb.DMatrix(X, feature_names=names), output_margin=True))
    assert model.feature_names == tuple(names)
    tree = json.loads(dump[0])
    tree["children"][0]["weight"] = 2.0
    with pytest.raises(ModelFormatError, match=r"holds \['weight'\]"):
        quickscorer.load([json.dumps(tree)], feature_names=names)
    tree = json.loads(dump[0])
    tree["missing"] = 99
    with pytest.raises(ModelFormatError, match="do not name its two children"):
        quickscorer.load([json.dumps(tree)], feature_names=names)
    with pytest.raises(ModelFormatError, match="goes with a multi"):
        quickscorer.load(dump, feature_names=names, num_class=3)
    with pytest.raises(ValueError, match="the options of an XGBoost JSON dump"):
        quickscorer.load(booster, base_score=0.5)


@pytest.mark.parametrize("onehot", [1, 16])
def test_a_dump_of_categorical_splits_scores_as_xgboost(onehot):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"a": rng.normal(size=700), "c": pd.Categorical(rng.integers(0, 9, 700)),
                          "b": rng.normal(size=700)})
    y = (frame.a + (frame.c.cat.codes == 2) - (frame.c.cat.codes == 5) * 0.5) > 0.3
    booster = xgb.train({"max_depth": 3, "tree_method": "hist", "max_cat_to_onehot": onehot,
                         "nthread": 1}, xgb.DMatrix(frame, y, enable_categorical=True), 12)
    model = quickscorer.load(booster.get_dump(dump_format="json"), feature_names=["a", "c", "b"],
                             base_score=_base_score(booster), objective="reg:squarederror")
    assert model.ensemble.has_categorical
    X = np.column_stack([frame.a, frame.c.cat.codes.astype(float), frame.b])
    X[::7, 1] = np.nan
    codes = np.where(np.isnan(X[:, 1]), -1, X[:, 1]).astype(int)
    rows = pd.DataFrame({"a": X[:, 0], "c": pd.Categorical.from_codes(codes, list(range(9))),
                         "b": X[:, 2]})
    want = booster.predict(xgb.DMatrix(rows, enable_categorical=True), output_margin=True)
    np.testing.assert_array_equal(model.predict_raw(X)[:, 0], want)
