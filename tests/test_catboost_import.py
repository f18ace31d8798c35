"""CatBoost models through quickscorer.load (the JSON export, the model object), against
CatBoost's own predict as the oracle, with every algorithm that can score them."""
from __future__ import annotations

import json
import pickle
import random

import numpy as np
import pytest

import quickscorer
from quickscorer import bench
from quickscorer.algorithms.base import distinct_bytes
from quickscorer.batch import score_file
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
    # the binary file: the same trees, node for node, as the JSON's
    cbm = tmp_path / "model.cbm"
    est.save_model(str(cbm))
    from_cbm = quickscorer.load(cbm)
    _every_algorithm(from_cbm, Xt, raw, raw_score=True)
    from_json = quickscorer.load(path).ensemble
    for name, a in from_json.trees.arrays.items():
        b = from_cbm.ensemble.trees.arrays[name]
        assert (a is None and b is None) or np.array_equal(a, b), name
    assert from_cbm.ensemble.transform == from_json.transform
    assert from_cbm.info()["library_version"] == catboost.__version__
    assert from_cbm.info()["format"] == "cbm"


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


@pytest.mark.parametrize("kind", ["regressor", "three"])
def test_iteration_ranges_from_the_first_keep_the_bias_as_catboost_does(kind):
    X, y, Xt = _data(7)
    est = _model(kind, X, y, {"loss_function": "MultiClass"} if kind == "three" else {})
    model = quickscorer.load(est)
    n = est.tree_count_
    with_bias = bool(np.any(np.asarray(est.get_scale_and_bias()[1]) != 0))
    assert with_bias == (kind == "regressor")          # RMSE starts from the mean
    assert model.ensemble.bias_iteration == with_bias and model.ensemble.n_iterations == n
    for begin, end in ((0, 1), (0, n // 2), (n // 3, n), (5, 6)):
        want = est.predict(Xt, prediction_type="RawFormulaVal", ntree_start=begin,
                           ntree_end=end)
        got = model.predict(Xt, raw_score=True, iteration_range=(begin, end))
        assert np.array_equal(got, want), (begin, end)
        got = model.predict(Xt, raw_score=True, start_iteration=begin,
                            num_iteration=end - begin)
        assert np.array_equal(got, want), (begin, end)


def test_info_names_catboost_and_its_version(tmp_path):
    X, y, _ = _data(4)
    est = _fit(catboost.CatBoostRegressor, X, y, iterations=3)
    path = tmp_path / "m.json"
    est.save_model(str(path), format="json")
    info = quickscorer.load(path).info()
    assert info["library"] == "catboost"
    assert info["library_version"] == catboost.__version__


def _categorical_frame(pd, seed: int, n: int):
    """Two float columns (with NaN), a text category and an integer category."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=n)
    a[rng.random(n) < 0.05] = np.nan
    return pd.DataFrame({"a": a, "colour": rng.choice(["red", "green", "blue", "x y", ""], n),
                         "b": rng.normal(size=n), "size": rng.integers(0, 7, n)})


def _categorical_target(frame):
    return (np.nan_to_num(frame["a"].to_numpy()) + 2.0 * (frame["colour"] == "red")
            - (frame["colour"] == "") + 0.7 * (frame["size"] % 3) + 0.3 * frame["b"])


def _categorical_rows(pd, frame, seed: int):
    """Rows to score: the training values, unseen categories, and NaN floats."""
    rng = np.random.default_rng(seed)
    test = pd.concat([frame.iloc[:300], _categorical_frame(pd, seed + 100, 300)],
                     ignore_index=True)
    unseen = rng.random(len(test)) < 0.1
    test.loc[unseen, "colour"] = "purple"
    test.loc[rng.random(len(test)) < 0.1, "size"] = 11
    return test


CATEGORICAL = [
    ("RMSE", "regressor", {}),
    ("RMSE Depthwise", "regressor", {"grow_policy": "Depthwise", "depth": 5}),
    ("RMSE Lossguide", "regressor", {"grow_policy": "Lossguide", "max_leaves": 20}),
    ("Logloss", "binary", {}),
    ("MultiClass", "three", {"loss_function": "MultiClass"}),
]


@pytest.mark.parametrize("label, kind, params", CATEGORICAL, ids=[e[0] for e in CATEGORICAL])
def test_one_hot_categorical_models_score_as_catboost(label, kind, params, tmp_path):
    pd = pytest.importorskip("pandas")
    frame = _categorical_frame(pd, 11, 1500)
    y = _categorical_target(frame).to_numpy()
    cats = ["colour", "size"]
    est = _model(kind, frame, y, dict(params, cat_features=cats, one_hot_max_size=255))
    path = tmp_path / "model.json"
    est.save_model(str(path), format="json", pool=catboost.Pool(frame, cat_features=cats))
    splits = path.read_text()
    assert '"OneHotFeature"' in splits and "Ctr" not in splits
    model = quickscorer.load(path)
    labels = model.ensemble.category_labels
    # the text column is numbered in sorted order, the integer one read as its integers
    assert sorted(labels[1]) == sorted(labels[1], key=labels[1].get)
    assert all(labels[3][t] == int(t) for t in labels[3])
    test = _categorical_rows(pd, frame, 12)
    raw = _raw(est, test)
    _every_algorithm(model, test, raw, raw_score=True)
    if kind != "three":
        _every_algorithm(model, test, _prediction(est, test))
    # the same rows as numbers: the text column's category numbers, the integers themselves
    numbers = test.copy()
    numbers["colour"] = test["colour"].map(labels[1]).fillna(-1.0)
    X = numbers.to_numpy(dtype=np.float64)
    _every_algorithm(model, X, raw, raw_score=True)
    assert np.array_equal(reference.predict_raw(model.ensemble, X).reshape(raw.shape), raw)
    # a pandas category column is read by its categories' texts, not by their codes
    as_category = test.astype({"colour": "category", "size": "category"})
    _every_algorithm(model, as_category, raw, raw_score=True)
    if "grow_policy" not in params:
        leaves = est.calc_leaf_indexes(test)
        got = model.predict_leaf(test, source_ids=True)   # one tree per output
        assert np.array_equal(got[:, :leaves.shape[1] * model.n_outputs:model.n_outputs],
                              leaves)


def test_large_integer_categories_are_numbered_like_texts(tmp_path):
    pd = pytest.importorskip("pandas")
    frame = _categorical_frame(pd, 16, 1200)
    frame["size"] = frame["size"] * 300_000_007 + 5000      # ids: past INTEGER_CATEGORIES
    y = _categorical_target(frame).to_numpy()
    cats = ["colour", "size"]
    est = _fit(catboost.CatBoostRegressor, frame, y, cat_features=cats, one_hot_max_size=255)
    path = tmp_path / "ids.json"
    est.save_model(str(path), format="json", pool=catboost.Pool(frame, cat_features=cats))
    model = quickscorer.load(path)
    labels = model.ensemble.category_labels
    assert model.info()["text_category_columns"] == [1, 3]
    assert sorted(labels[3].values()) == list(range(len(labels[3])))
    test = _categorical_rows(pd, frame, 17)
    raw = _raw(est, test)
    _every_algorithm(model, test, raw, raw_score=True)
    as_text = test.astype({"size": str})                   # CatBoost's text of each integer
    _every_algorithm(model, as_text, raw, raw_score=True)
    # integers as floats (a column of integers with a missing value is one): the same texts
    as_float = test.astype({"size": float})
    _every_algorithm(model, as_float, raw, raw_score=True)
    as_float.loc[::13, "size"] = np.nan                     # missing: no category
    unseen = test.copy()
    unseen.loc[::13, "size"] = 77
    assert np.array_equal(model.predict(as_float, raw_score=True), _raw(est, unseen))
    numbers = test.copy()
    for col, name in ((1, "colour"), (3, "size")):
        numbers[name] = test[name].astype(str).map(labels[col]).fillna(-1.0)
    _every_algorithm(model, numbers.to_numpy(dtype=np.float64), raw, raw_score=True)


def test_parquet_files_of_category_texts_score_as_catboost(tmp_path):
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    frame = _categorical_frame(pd, 19, 1200)
    frame["id"] = frame["size"] * 300_000_007 + 5000     # a text column of integers
    cats = ["colour", "size", "id"]
    est = _fit(catboost.CatBoostRegressor, frame, _categorical_target(frame),
               cat_features=cats, one_hot_max_size=255)
    path = tmp_path / "m.json"
    est.save_model(str(path), format="json", pool=catboost.Pool(frame, cat_features=cats))
    model = quickscorer.load(path)
    test = _categorical_rows(pd, frame, 20)
    test.loc[test.index[::7], "colour"] = None            # missing: no category
    test["id"] = (test["size"] * 300_000_007 + 5000).where(test.index % 5 > 0, 12345)
    table = pa.Table.from_pandas(test, preserve_index=False)
    # the same texts plain and dictionary-encoded, in chunks that split the rows
    encoded = table.set_column(1, "colour", pa.compute.dictionary_encode(table["colour"]))
    # the ids as floats with a null (a column of integers with a missing value)
    ids = test["id"].astype(float).where(test.index % 11 > 0)
    floats = table.set_column(4, "id", pa.array(ids, pa.float64(), from_pandas=True))
    filled = test.fillna({"colour": "none of them"})
    want = est.predict(filled)
    filled.loc[test.index % 11 == 0, "id"] = 1                # unseen, as the null is
    want_floats = est.predict(filled)
    for i, t in enumerate((table, encoded, floats)):
        src, out = tmp_path / f"in{i}.parquet", tmp_path / f"out{i}.npy"
        pq.write_table(t, src)
        summary = score_file(model, src, out, chunk_rows=97)
        assert summary.rows == len(test)
        assert np.array_equal(np.load(out).ravel(), want_floats if i == 2 else want)
    assert np.array_equal(model.predict(test), want)


def test_category_hash_is_catboosts_for_texts_of_every_length(tmp_path):
    """CityHash64's every branch (0 to 16, 17 to 32, 33 to 64 and past 64 bytes, in 64-byte
    steps), on UTF-8 texts: equal to the hashes CatBoost writes beside the texts."""
    pd = pytest.importorskip("pandas")
    from quickscorer.ir.cityhash import category_hash
    rng = np.random.default_rng(21)
    alphabet = list("abcXYZ019 _-é") + ["ü", "語"]
    texts = [""] + ["".join(rng.choice(alphabet, size=n)) for n in
                    list(range(1, 70)) + [100, 127, 128, 129, 200, 300]]
    texts = list(dict.fromkeys(texts))
    frame = pd.DataFrame({"a": rng.normal(size=len(texts) * 4),
                          "t": texts * 4})
    est = _fit(catboost.CatBoostRegressor, frame, frame["a"].to_numpy(), iterations=2,
               cat_features=["t"], one_hot_max_size=255)
    path = tmp_path / "h.json"
    est.save_model(str(path), format="json", pool=catboost.Pool(frame, cat_features=["t"]))
    pairs = json.loads(path.read_text())["features_info"]["cat_features_hash"]
    assert len(pairs) == len(texts)
    for pair in pairs:
        assert category_hash(pair["value"]) == pair["hash"], pair["value"]


def test_integer_categories_load_without_the_texts_from_cbm_and_model_objects(tmp_path):
    """An integer category's hash is found among those of 0 to 4,095: a .cbm file and a model
    object (whose JSON CatBoost writes without the texts) score as CatBoost."""
    pd = pytest.importorskip("pandas")
    frame = _categorical_frame(pd, 22, 1000).drop(columns="colour")
    frame["wide"] = np.random.default_rng(22).integers(4000, 4096, len(frame))
    y = (np.nan_to_num(frame["a"].to_numpy()) + 0.7 * (frame["size"] % 3)
         + (frame["wide"] % 5 == 1))
    cats = ["size", "wide"]
    est = _fit(catboost.CatBoostRegressor, frame, y, cat_features=cats, one_hot_max_size=255)
    path = tmp_path / "m.cbm"
    est.save_model(str(path))
    test = frame.head(300).copy()
    test.loc[::6, "size"] = 9                                 # unseen
    want = est.predict(test, prediction_type="RawFormulaVal")
    for source in (path, est):
        model = quickscorer.load(source)
        wide = model.ensemble.category_labels[3]        # read as the integers themselves
        assert wide and all(4000 <= n <= 4095 and t == str(n) for t, n in wide.items())
        _every_algorithm(model, test, want, raw_score=True)
        _every_algorithm(model, test.to_numpy(np.float64), want, raw_score=True)


def test_one_hot_splits_without_the_category_texts_are_refused_with_the_way_out():
    pd = pytest.importorskip("pandas")
    frame = _categorical_frame(pd, 13, 400)
    est = _fit(catboost.CatBoostRegressor, frame, _categorical_target(frame),
               cat_features=["colour", "size"], one_hot_max_size=255)
    with pytest.raises(ModelFormatError, match=r"OneHotFeature|pool=train_pool"):
        quickscorer.load(est)              # CatBoost exports no texts without the pool


CTR = [
    ("RMSE", "regressor", {}),
    ("RMSE Depthwise", "regressor", {"grow_policy": "Depthwise", "depth": 5}),
    ("Logloss combinations", "binary", {"max_ctr_complexity": 4}),
    ("Logloss Borders Buckets Counter", "binary",
     {"simple_ctr": ["Borders", "Buckets", "Counter"], "combinations_ctr": ["Buckets"]}),
    ("MultiClass", "three", {"loss_function": "MultiClass"}),
    ("YetiRank", "rank", {"loss_function": "YetiRank"}),
]


def _ctr_frame(pd, seed: int, n: int):
    """_categorical_frame with a third categorical column of many integer values and a
    two-value one (one-hot, so CTR combinations test it for equality)."""
    rng = np.random.default_rng(seed)
    frame = _categorical_frame(pd, seed, n)
    frame["shop"] = rng.integers(0, 60, n)
    frame["flag"] = rng.choice(["on", "off"], n)
    return frame


@pytest.mark.parametrize("label, kind, params", CTR, ids=[e[0] for e in CTR])
def test_ctr_models_score_as_catboost(label, kind, params, tmp_path):
    pd = pytest.importorskip("pandas")
    frame = _ctr_frame(pd, 21, 1500)
    y = (_categorical_target(frame) + 0.2 * (frame["shop"] % 4)).to_numpy()
    cats = ["colour", "size", "shop", "flag"]
    est = _model(kind, frame, y, dict(params, cat_features=cats, one_hot_max_size=2,
                                      depth=params.get("depth", 5)))
    path = tmp_path / "model.json"
    est.save_model(str(path), format="json", pool=catboost.Pool(frame, cat_features=cats))
    assert '"OnlineCtr"' in path.read_text()
    model = quickscorer.load(path)
    info = model.info()
    assert info["n_features"] == frame.shape[1] and info["ctr_features"] > 0
    assert model.ensemble.n_features == frame.shape[1] + info["ctr_features"]
    test = pd.concat([frame.iloc[:300], _ctr_frame(pd, 22, 300)], ignore_index=True)
    test.loc[test.index[::10], "colour"] = "purple"         # categories the training never saw
    test.loc[test.index[::11], "size"] = 11
    test.loc[test.index[::9], "shop"] = 75
    test.loc[test.index[::13], "flag"] = "unknown"
    raw = _raw(est, test)
    _every_algorithm(model, test, raw, raw_score=True)
    if kind not in ("three", "rank"):
        _every_algorithm(model, test, _prediction(est, test))
    # the same rows as numbers: text columns by category number, integers as themselves
    labels = model.ensemble.category_labels
    numbers = test.copy()
    for j, name in enumerate(test.columns):
        if j in labels and any(str(n) != t for t, n in labels[j].items()):
            numbers[name] = test[name].astype(str).map(labels[j]).fillna(-1.0)
        elif j not in labels and not model.ensemble.inputs_read()[j]:
            numbers[name] = 0.0                             # a column the model never reads
    X = numbers.to_numpy(dtype=np.float64)
    _every_algorithm(model, X, raw, raw_score=True)
    assert np.array_equal(reference.predict_raw(model.ensemble, model.ensemble.ctr.apply(X))
                          .reshape(raw.shape), raw)
    # one call a row gives the batch's scores (the low-latency entry declines CTR models)
    assert np.array_equal(np.concatenate([model.predict(test.iloc[[i]], raw_score=True)
                                          for i in range(5)]), raw[:5])
    with pytest.raises(quickscorer.InputError, match="features per row"):
        model.predict(model.ensemble.ctr.apply(X[:2]))    # rows already holding CTR columns
    # part of the ensemble reads the same CTR columns
    k = model.ensemble.n_iterations // 2
    leaves = model.predict_leaf(test)
    assert np.array_equal(model.predict_leaf(test, iteration_range=(k, 2 * k)),
                          leaves[:, k * model.n_outputs:2 * k * model.n_outputs])


def _saved_ctr_regressor(pd, tmp_path, seed: int, n: int, **params):
    """A regressor on _ctr_frame's four categorical columns, saved as JSON with the pool:
    (its frame, the estimator, the JSON's path)."""
    frame = _ctr_frame(pd, seed, n)
    cats = ["colour", "size", "shop", "flag"]
    est = _fit(catboost.CatBoostRegressor, frame, _categorical_target(frame),
               cat_features=cats, **params)
    path = tmp_path / "m.json"
    est.save_model(str(path), format="json", pool=catboost.Pool(frame, cat_features=cats))
    return frame, est, path


def test_ctr_models_score_parquet_files_and_survive_pickling(tmp_path):
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    frame, est, path = _saved_ctr_regressor(pd, tmp_path, 27, 1200, one_hot_max_size=2,
                                            max_ctr_complexity=3)
    model = quickscorer.load(path)
    test = pd.concat([frame.iloc[:200], _ctr_frame(pd, 28, 200)], ignore_index=True)
    test.loc[test.index[::7], "colour"] = None               # missing: as an unseen category
    want = est.predict(test.fillna({"colour": "none of them"}))
    src, out = tmp_path / "in.parquet", tmp_path / "out.npy"
    pq.write_table(pa.Table.from_pandas(test, preserve_index=False), src)
    assert score_file(model, src, out, chunk_rows=61).rows == len(test)
    assert np.array_equal(np.load(out).ravel(), want)
    again = pickle.loads(pickle.dumps(model))
    assert np.array_equal(again.predict(test), want)
    assert np.array_equal(model.predict(test, n_threads=2), want)   # the stage on 2 threads
    e = model.ensemble
    trees = distinct_bytes([a for a in e.trees.arrays.values() if isinstance(a, np.ndarray)]
                           + [e.tree_group, e.base_score])
    stage = distinct_bytes(list(e.ctr.arrays.values()))
    assert model.memory()["bytes"]["ensemble"] >= trees + stage > trees   # the stage counted


@pytest.mark.parametrize("one_hot", [255, 2], ids=["one-hot", "CTR"])
def test_csv_files_of_category_texts_score_as_catboost(one_hot, tmp_path):
    pd = pytest.importorskip("pandas")
    frame, est, path = _saved_ctr_regressor(pd, tmp_path, 29, 1000, one_hot_max_size=one_hot)
    model = quickscorer.load(path)
    test = pd.concat([frame.iloc[:200], _ctr_frame(pd, 30, 200)], ignore_index=True)
    test.loc[test.index[::9], "colour"] = "purple"        # unseen
    test.loc[test.index[::11], "colour"] = "x, y"         # quoted, a separator inside
    test.loc[test.index[::13], "colour"] = None           # an empty field: the text ""
    want = est.predict(test.fillna({"colour": ""}))
    for sep, name in ((",", "in.csv"), ("\t", "in.tsv")):
        src, out = tmp_path / name, tmp_path / f"{name}.npy"
        test.to_csv(src, sep=sep, index=False)
        assert score_file(model, src, out, chunk_rows=53).rows == len(test)
        assert np.array_equal(np.load(out).ravel(), want), name
    bad = test.astype({"colour": object})
    bad.loc[3, "colour"] = "2.5"                           # a text, as CatBoost reads it
    src = tmp_path / "text.csv"
    bad.to_csv(src, index=False)
    score_file(model, src, tmp_path / "t.npy")
    assert np.array_equal(np.load(tmp_path / "t.npy").ravel(),
                          est.predict(bad.fillna({"colour": ""})))


def test_the_benchmark_command_generates_rows_of_the_models_categories(tmp_path):
    pd = pytest.importorskip("pandas")
    frame, est, path = _saved_ctr_regressor(pd, tmp_path, 31, 600, one_hot_max_size=2,
                                            iterations=10)
    labels = quickscorer.load(path).ensemble.category_labels
    X = bench.generated_rows(500, frame.shape[1], categories=labels)
    for col, table in labels.items():
        assert set(X[:, col]) <= set(table.values())          # every value a category
    text = bench.run(path, batches=(1, 100), repeat=1, min_rows=200)
    assert "| 100 | quickscorer (default) |" in text and "| - |" in text   # no library ratio


def test_ctr_models_of_integer_categories_load_without_the_texts(tmp_path):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(24)
    frame = pd.DataFrame({"a": rng.normal(size=1200), "size": rng.integers(0, 30, 1200),
                          "shop": rng.integers(0, 200, 1200)})
    y = frame["a"] + (frame["size"] % 4) - 0.5 * (frame["shop"] % 3)
    est = _fit(catboost.CatBoostRegressor, frame, y, cat_features=["size", "shop"],
               one_hot_max_size=2, max_ctr_complexity=2)
    test = frame.copy()
    test.loc[::7, "shop"] = 999                             # unseen
    est.save_model(str(tmp_path / "no_pool.json"), format="json")
    est.save_model(str(tmp_path / "model.cbm"))             # its CTR tables after the core
    for source in (est, tmp_path / "no_pool.json", tmp_path / "model.cbm"):
        model = quickscorer.load(source)
        assert model.ensemble.ctr is not None
        _every_algorithm(model, test, est.predict(test))
        _every_algorithm(model, test.to_numpy(np.float64), est.predict(test))
    raw = (tmp_path / "model.cbm").read_bytes()
    for cut in (len(raw) - 1, len(raw) - 40, len(raw) - 300):   # into the CTR tables
        with pytest.raises(ModelFormatError):
            quickscorer.load(raw[:cut])
    texts = _ctr_frame(pd, 25, 600)
    est = _fit(catboost.CatBoostRegressor, texts, _categorical_target(texts),
               cat_features=["colour", "size", "shop", "flag"], one_hot_max_size=2)
    with pytest.raises(ModelFormatError, match="pool=train_pool"):
        quickscorer.load(est)              # text categories: CatBoost exports no texts


def test_damaged_ctr_models_give_a_model_format_error(tmp_path):
    pd = pytest.importorskip("pandas")
    frame, est, path = _saved_ctr_regressor(pd, tmp_path, 26, 800, one_hot_max_size=2,
                                            iterations=10)
    doc = json.loads(path.read_text())

    def broken(change, match):
        d = json.loads(json.dumps(doc))
        change(d)
        with pytest.raises(ModelFormatError, match=match):
            quickscorer.load(json.dumps(d).encode())

    def first_ctr_split(d):
        return next(s for t in d["oblivious_trees"] for s in t["splits"]
                    if s["split_type"] == "OnlineCtr")

    broken(lambda d: first_ctr_split(d).update(split_index=10_000), "split_index")
    broken(lambda d: first_ctr_split(d).update(border=0.123), "border")
    broken(lambda d: d["ctr_data"].clear(), "not in ctr_data")
    broken(lambda d: [t.update(hash_stride=7) for t in d["ctr_data"].values()], "entries")
    broken(lambda d: next(iter(d["ctr_data"].values()))["hash_map"].__setitem__(1, -3),
           "negative")
    broken(lambda d: [c.update(ctr_type="FloatTargetMeanValue")
                      for c in d["features_info"]["ctrs"]], "CTR type")
    broken(lambda d: [e.update(combination_element="text_feature")
                      for c in d["features_info"]["ctrs"] for e in c["elements"]],
           "projection element")


def test_a_category_column_of_other_values_is_an_input_error(tmp_path):
    pd = pytest.importorskip("pandas")
    frame = _categorical_frame(pd, 15, 500)
    cats = ["colour", "size"]
    est = _fit(catboost.CatBoostRegressor, frame, _categorical_target(frame),
               cat_features=cats, one_hot_max_size=255)
    path = tmp_path / "m.json"
    est.save_model(str(path), format="json", pool=catboost.Pool(frame, cat_features=cats))
    model = quickscorer.load(path)
    bad = frame.head(5).astype({"colour": object})
    bad.loc[2, "colour"] = 2.5
    with pytest.raises(quickscorer.InputError, match="'colour'.*2.5"):
        model.predict(bad)
    fraction = frame.head(5).astype({"size": float})
    fraction.loc[3, "size"] = 1.5
    with pytest.raises(quickscorer.InputError, match="'size'.*1.5"):
        model.predict(fraction)
    missing = frame.head(5).astype({"colour": object})
    missing.loc[1, "colour"] = None                   # no category: the false side
    got = model.predict(missing)
    filled = frame.head(5).copy()
    filled.loc[1, "colour"] = "never seen"
    assert np.array_equal(got, est.predict(filled))


def test_cbm_files_with_text_categories_are_refused_with_the_way_out(tmp_path):
    pd = pytest.importorskip("pandas")
    frame = _categorical_frame(pd, 18, 600)
    for one_hot, match in ((255, "pool=train_pool"), (2, "pool=train_pool")):
        est = _fit(catboost.CatBoostRegressor, frame, _categorical_target(frame),
                   cat_features=["colour", "size"], one_hot_max_size=one_hot)
        path = tmp_path / f"m{one_hot}.cbm"
        est.save_model(str(path))              # a .cbm keeps hashes, not the categories' texts
        with pytest.raises(ModelFormatError, match=match):
            quickscorer.load(path)


def test_damaged_cbm_files_give_a_model_format_error(tmp_path):
    X, y, Xt = _data(8)
    rng = random.Random(1)
    for params in ({"depth": 3}, {"grow_policy": "Depthwise", "depth": 4}):
        est = _fit(catboost.CatBoostRegressor, X, y, iterations=4, **params)
        path = tmp_path / "m.cbm"
        est.save_model(str(path))
        data = path.read_bytes()
        assert np.array_equal(quickscorer.load(data).predict(Xt, raw_score=True),
                              est.predict(Xt, prediction_type="RawFormulaVal"))
        damaged = [data[:n] for n in (4, 8, 40, len(data) // 2, len(data) - 1)]
        for _ in range(150):
            b = bytearray(data)
            for _ in range(rng.randint(1, 6)):
                b[rng.randrange(8, len(b))] = rng.randrange(256)
            damaged.append(bytes(b))
        for d in damaged:
            try:
                model = quickscorer.load(d)
            except ModelFormatError:
                continue
            model.predict(Xt)                  # a damage that reads as a model scores


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
                 lambda d: d["features_info"].update(cat_features_hash=[{"hash": -1,
                                                                         "value": "a"}]),
                 lambda d: d["features_info"].update(cat_features_hash={}),
                 lambda d: d["oblivious_trees"][0]["splits"][0].update(
                     split_type="OneHotFeature", cat_feature_index=0, value=5),
                 lambda d: d.pop("oblivious_trees")):
        d = json.loads(text)
        edit(d)
        with pytest.raises(ModelFormatError):
            quickscorer.load(json.dumps(d).encode())
