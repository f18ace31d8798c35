"""CatBoost models through quickscorer.load (the JSON export, the model object), against
CatBoost's own predict as the oracle, with every algorithm that can score them."""
from __future__ import annotations

import json
import random

import numpy as np
import pytest

import quickscorer
from quickscorer.errors import ModelFormatError
from quickscorer.ir import reference

catboost = pytest.importorskip("catboost", reason="the test extra installs catboost")


def _data(seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(1200, 5))
    X[:, 4] = np.round(X[:, 4] * 2.0)                    # few values: rows on the borders
    X[rng.random(X.shape) < 0.08] = np.nan
    y = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) ** 2 + 0.1 * rng.normal(size=1200)
    Xt = np.vstack([rng.normal(size=(400, 5)) * 2.0, X[:200],
                    np.full((2, 5), 1e300), np.full((2, 5), -np.inf)])
    Xt[rng.random(Xt.shape) < 0.08] = np.nan
    return X, y, Xt


def _fit(cls, X, y, **params):
    kw = {"iterations": 40, "verbose": 0, "allow_writing_files": False, "random_seed": 0}
    kw.update(params)
    return cls(**kw).fit(X, y)


def _every_algorithm(model, X, want, **kw):
    for name in model.supported_algorithms():
        got = model.predict(X, algorithm=name, **kw)
        assert np.array_equal(got, want), name


def _ulps(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b) / np.spacing(np.maximum(np.abs(a), np.abs(b)))))


EXACT = [
    ("RMSE", "regressor", {}),
    ("RMSE nan_mode Max", "regressor", {"nan_mode": "Max"}),
    ("RMSE Depthwise", "regressor", {"grow_policy": "Depthwise", "depth": 5}),
    ("RMSE Lossguide", "regressor", {"grow_policy": "Lossguide", "max_leaves": 24}),
    ("MAE depth 8", "regressor", {"loss_function": "MAE", "depth": 8}),
    ("Logloss", "binary", {}),
    ("Logloss Depthwise", "binary", {"grow_policy": "Depthwise"}),
    ("MultiClassOneVsAll", "three", {"loss_function": "MultiClassOneVsAll"}),
    ("YetiRank", "rank", {"loss_function": "YetiRank"}),
    ("QueryRMSE", "rank", {"loss_function": "QueryRMSE"}),
]


def _model(kind, X, y, params):
    if kind == "regressor":
        return _fit(catboost.CatBoostRegressor, X, y, **params)
    if kind == "binary":
        return _fit(catboost.CatBoostClassifier, X, (y > np.median(y)).astype(int), **params)
    three = np.digitize(y, np.quantile(y, [0.33, 0.66]))
    if kind == "three":
        return _fit(catboost.CatBoostClassifier, X, three, **params)
    groups = np.repeat(np.arange(X.shape[0] // 10), 10)
    kw = {"iterations": 40, "verbose": 0, "allow_writing_files": False, "random_seed": 0}
    kw.update(params)
    return catboost.CatBoostRanker(**kw).fit(X, three, group_id=groups)


def _raw(est, X):
    if isinstance(est, catboost.CatBoostRanker):     # its predict is the raw value
        return est.predict(X)
    return est.predict(X, prediction_type="RawFormulaVal")


def _prediction(est, Xt):
    if isinstance(est, catboost.CatBoostClassifier):
        p = est.predict_proba(Xt)
        return p[:, 1] if p.shape[1] == 2 else p
    return est.predict(Xt)


@pytest.mark.parametrize("label, kind, params", EXACT, ids=[e[0] for e in EXACT])
def test_catboost_models_score_as_catboost(label, kind, params, tmp_path):
    X, y, Xt = _data()
    est = _model(kind, X, y, params)
    model = quickscorer.load(est)
    assert model.ensemble.source["library"] == "catboost"
    _every_algorithm(model, Xt, _prediction(est, Xt))
    raw = _raw(est, Xt)
    _every_algorithm(model, Xt, raw, raw_score=True)
    assert np.array_equal(reference.predict_raw(model.ensemble, Xt).reshape(raw.shape), raw)
    # float32 rows: CatBoost reads every row as float32
    with np.errstate(over="ignore"):
        X32 = Xt.astype(np.float32)
    _every_algorithm(model, X32, _raw(est, X32), raw_score=True)
    # the JSON file, its text and its parsed form load the same model
    path = tmp_path / "model.json"
    est.save_model(str(path), format="json")
    for source in (path, str(path), path.read_text(), path.read_bytes(),
                   json.loads(path.read_text())):
        assert np.array_equal(quickscorer.load(source).predict(Xt, raw_score=True), raw)


@pytest.mark.parametrize("loss, bound", [("Poisson", 4), ("MultiClass", 16)])
def test_catboost_exp_and_softmax_are_within_the_stated_ulps(loss, bound):
    # raw scores are exact; CatBoost's own exponent is not libm's (docs/semantics.md)
    X, y, Xt = _data(1)
    if loss == "Poisson":
        est = _fit(catboost.CatBoostRegressor, X, np.exp(y / 4.0), loss_function=loss)
        want = est.predict(Xt)
    else:
        est = _fit(catboost.CatBoostClassifier, X, np.digitize(y, [0.0, 1.0]),
                   loss_function=loss)
        want = est.predict_proba(Xt)
    model = quickscorer.load(est)
    _every_algorithm(model, Xt, est.predict(Xt, prediction_type="RawFormulaVal"),
                     raw_score=True)
    assert _ulps(model.predict(Xt), want) <= bound


def test_oblivious_leaves_are_catboost_leaf_indexes():
    X, y, Xt = _data(2)
    est = _fit(catboost.CatBoostRegressor, X, y, depth=4)
    model = quickscorer.load(est)
    want = est.calc_leaf_indexes(Xt)
    got = model.predict_leaf(Xt)
    # the bias is a last iteration of one-leaf trees, after the model's own
    assert got.shape[1] == want.shape[1] + 1
    assert np.array_equal(got[:, :want.shape[1]], want)


def test_scale_and_bias_are_applied_after_the_sum():
    X, y, Xt = _data(3)
    est = _fit(catboost.CatBoostRegressor, X, y)
    est.set_scale_and_bias(0.5, 7.25)                 # a power of two: exact
    _every_algorithm(quickscorer.load(est), Xt, est.predict(Xt))
    est.set_scale_and_bias(1.3, -2.0)                 # folded into the leaves: rounding apart
    got = quickscorer.load(est).predict(Xt)
    assert np.allclose(got, est.predict(Xt), rtol=1e-13, atol=1e-13)


def test_info_names_catboost_and_its_version(tmp_path):
    X, y, _ = _data(4)
    est = _fit(catboost.CatBoostRegressor, X, y, iterations=3)
    path = tmp_path / "m.json"
    est.save_model(str(path), format="json")
    info = quickscorer.load(path).info()
    assert info["library"] == "catboost"
    assert info["library_version"] == catboost.__version__


def test_categorical_features_are_refused_naming_the_split():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"a": rng.normal(size=300), "b": rng.normal(size=300),
                          "c": rng.integers(0, 3, 300)})
    y = frame["a"] + (frame["c"] == 1)
    est = _fit(catboost.CatBoostRegressor, frame, y, cat_features=["c"])
    with pytest.raises(ModelFormatError, match="OneHotFeature|OnlineCtr"):
        quickscorer.load(est)


def test_a_binary_cbm_file_is_refused_with_the_way_out(tmp_path):
    X, y, _ = _data(6)
    est = _fit(catboost.CatBoostRegressor, X, y, iterations=3)
    path = tmp_path / "m.cbm"
    est.save_model(str(path))
    with pytest.raises(ModelFormatError, match="format='json'"):
        quickscorer.load(path)


def test_damaged_catboost_json_gives_a_model_format_error(tmp_path):
    X, y, _ = _data(7)
    est = _fit(catboost.CatBoostRegressor, X, y, iterations=5, depth=3)
    path = tmp_path / "m.json"
    est.save_model(str(path), format="json")
    text = path.read_bytes()
    rng = random.Random(0)
    damaged = [text[:n] for n in (10, len(text) // 3, len(text) - 2)]
    for _ in range(60):
        b = bytearray(text)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        damaged.append(bytes(b))
    for data in damaged:
        try:
            quickscorer.load(data, format="catboost")
        except ModelFormatError:
            pass
    for edit in (lambda d: d["oblivious_trees"][0]["leaf_values"].pop(),
                 lambda d: d["oblivious_trees"][1]["splits"][0].update(float_feature_index=99),
                 lambda d: d["oblivious_trees"][0]["splits"][0].update(border="x"),
                 lambda d: d["oblivious_trees"][0]["splits"][0].update(border=0.1),
                 lambda d: d["features_info"]["float_features"][0].update(
                     nan_value_treatment="Sometimes"),
                 lambda d: d.update(scale_and_bias=[1.0]),
                 lambda d: d.pop("oblivious_trees")):
        d = json.loads(text)
        edit(d)
        with pytest.raises(ModelFormatError):
            quickscorer.load(json.dumps(d).encode())
