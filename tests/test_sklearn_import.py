"""scikit-learn tree estimators through quickscorer.load, against the estimators' own
predict / predict_proba / decision_function, with every algorithm that can score them."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

import quickscorer
from quickscorer.errors import ModelFormatError
from quickscorer.ir import MISSING_NAN, MISSING_ZERO, Ensemble, build_tree, reference
from quickscorer.ir.float32 import float32_boundary

sklearn = pytest.importorskip("sklearn", reason="the test extra installs scikit-learn")
sk_ensemble = pytest.importorskip("sklearn.ensemble")
sk_tree = pytest.importorskip("sklearn.tree")


def _data(nan: bool, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(500, 6))
    X[:, 5] = np.round(X[:, 5] * 3.0)                    # few values: many ties at thresholds
    if nan:
        X[rng.random(X.shape) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) ** 2 + 0.1 * rng.normal(size=500)
    binary = (y > np.median(y)).astype(int)
    three = np.digitize(y, np.quantile(y, [0.33, 0.66]))
    # rows beyond the training range, on the training values themselves (ties), and NaN
    Xt = np.vstack([rng.normal(size=(300, 6)) * 2.0, X[:100]])
    if nan:
        Xt[rng.random(Xt.shape) < 0.1] = np.nan
    return X, {"regression": y, "binary": binary, "three": three}, Xt


FORESTS = [
    ("DecisionTreeRegressor", sk_tree.DecisionTreeRegressor, {"max_depth": 7}, "regression"),
    ("DecisionTreeClassifier", sk_tree.DecisionTreeClassifier, {"max_depth": 5}, "three"),
    ("RandomForestRegressor", sk_ensemble.RandomForestRegressor,
     {"n_estimators": 12, "max_depth": 8}, "regression"),
    ("RandomForestClassifier", sk_ensemble.RandomForestClassifier, {"n_estimators": 10},
     "three"),
    ("RandomForestClassifier", sk_ensemble.RandomForestClassifier, {"n_estimators": 10},
     "binary"),
    ("ExtraTreesRegressor", sk_ensemble.ExtraTreesRegressor, {"n_estimators": 10},
     "regression"),
    ("ExtraTreesClassifier", sk_ensemble.ExtraTreesClassifier, {"n_estimators": 8},
     "binary"),
]
BOOSTING = [
    ("GradientBoostingRegressor", {"n_estimators": 25}, "regression"),
    ("GradientBoostingRegressor", {"n_estimators": 25, "loss": "huber", "init": "zero",
                                   "subsample": 0.7, "learning_rate": 0.3}, "regression"),
    ("GradientBoostingClassifier", {"n_estimators": 20}, "binary"),
    ("GradientBoostingClassifier", {"n_estimators": 15, "max_depth": 4}, "three"),
]


def _every_algorithm(model, X, want, **kw):
    for name in model.supported_algorithms():
        got = model.predict(X, algorithm=name, **kw)
        assert np.array_equal(got, want), name


@pytest.mark.parametrize("nan", [False, True], ids=["finite", "nan"])
@pytest.mark.parametrize("name, cls, params, target", FORESTS,
                         ids=[f"{f[0]}-{f[3]}" for f in FORESTS])
def test_trees_and_forests_score_as_scikit_learn(name, cls, params, target, nan):
    """predict (regressors) and predict_proba (classifiers, one column a class) to the bit,
    NaN rows taking each node's missing_go_to_left side, float64 and float32 rows, every
    algorithm; info names the source."""
    X, ys, Xt = _data(nan)
    est = cls(random_state=0, **params).fit(X, ys[target])
    model = quickscorer.load(est)
    want = est.predict_proba(Xt) if name.endswith("Classifier") else est.predict(Xt)
    assert model.n_outputs == (want.shape[1] if want.ndim == 2 else 1)
    _every_algorithm(model, Xt, want)
    Xt32 = Xt.astype(np.float32)
    want32 = (est.predict_proba(Xt32) if name.endswith("Classifier")
              else est.predict(Xt32))
    assert np.array_equal(model.predict(Xt32), want32)
    for n in (1, 2, 5, 17):                             # the low-latency entries
        assert np.array_equal(model.predict(Xt[:n]), want[:n])
    info = model.info()
    assert (info["library"], info["objective"]) == ("scikit-learn", name)
    assert info["library_version"] == sklearn.__version__


@pytest.mark.parametrize("name, params, target", BOOSTING,
                         ids=[f"{b[0]}-{b[2]}-{i}" for i, b in enumerate(BOOSTING)])
def test_gradient_boosting_scores_as_scikit_learn(name, params, target):
    """predict (regressor), decision_function as the raw score and predict_proba (the
    positive class's column for two classes, as LightGBM's binary predict) to the bit,
    every algorithm."""
    X, ys, Xt = _data(False, seed=1)
    est = getattr(sk_ensemble, name)(random_state=0, **params).fit(X, ys[target])
    model = quickscorer.load(est)
    if name.endswith("Regressor"):
        _every_algorithm(model, Xt, est.predict(Xt))
        return
    _every_algorithm(model, Xt, est.decision_function(Xt), raw_score=True)
    proba = est.predict_proba(Xt)
    assert np.array_equal(model.predict(Xt), proba[:, 1] if proba.shape[1] == 2 else proba)


def test_a_pickled_estimator_loads_the_same():
    X, ys, Xt = _data(True)
    est = sk_ensemble.RandomForestRegressor(n_estimators=5, random_state=0).fit(
        X, ys["regression"])
    again = pickle.loads(pickle.dumps(est))
    assert np.array_equal(quickscorer.load(again).predict(Xt), est.predict(Xt))


def test_the_float32_boundary_sends_every_double_as_its_float32_rounding_would():
    """x <= float32_boundary(t) exactly when float32(x) <= t, for thresholds between float32
    values, on them (even and odd), at their rounding midpoints and beyond float32's range."""
    rng = np.random.default_rng(3)
    f = rng.normal(size=2000).astype(np.float32)
    up = np.nextafter(f, np.float32(np.inf))
    mids = (f.astype(np.float64) + up.astype(np.float64)) / 2.0
    thresholds = np.concatenate([f.astype(np.float64), mids, rng.normal(size=2000),
                                 [0.0, -0.0, 1e39, -1e39, np.inf, -np.inf, 3.4028234663852886e38]])
    xs = np.concatenate([mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf),
                         f.astype(np.float64), rng.normal(size=2000),
                         [3.4028235677973366e38, 3.4028235677973362e38, -3.4028235677973366e38,
                          np.inf, -np.inf, 1e300, -1e300]])
    b = float32_boundary(thresholds)
    for t, bt in zip(thresholds[::7], b[::7]):
        with np.errstate(over="ignore"):
            want = xs.astype(np.float32).astype(np.float64) <= t
        assert np.array_equal(xs <= bt, want), t


@pytest.mark.parametrize("make, match", [
    (lambda: sk_ensemble.RandomForestRegressor(), "not fitted"),
    (lambda: sk_ensemble.IsolationForest(n_estimators=2).fit(np.eye(4)),
     "IsolationForest is not supported"),
    (lambda: sk_ensemble.HistGradientBoostingRegressor(
        max_iter=2, categorical_features=[0]).fit(np.array([[-1.0], [2.0]] * 10),
                                                  np.arange(20.0)), "integers in"),
    (lambda: sk_ensemble.RandomForestRegressor(n_estimators=2).fit(
        np.eye(6), np.eye(6)[:, :2]), "2 outputs"),
    (lambda: sk_ensemble.GradientBoostingRegressor(
        n_estimators=2, init=sk_tree.DecisionTreeRegressor()).fit(np.eye(6), np.arange(6.0)),
     "initial estimator"),
])
def test_estimators_it_cannot_score_are_refused_with_the_reason(make, match):
    with pytest.raises(ModelFormatError, match=match):
        quickscorer.load(make())


@pytest.mark.parametrize("cls", [sk_ensemble.RandomForestRegressor,
                                 sk_ensemble.ExtraTreesRegressor,
                                 sk_tree.DecisionTreeClassifier])
def test_nan_rows_on_trees_trained_without_nan_take_the_recorded_side(cls):
    X, ys, Xt = _data(False, seed=2)
    Xt[np.random.default_rng(4).random(Xt.shape) < 0.2] = np.nan
    target = ys["binary"] if cls is sk_tree.DecisionTreeClassifier else ys["regression"]
    est = cls(random_state=0).fit(X, target)
    want = est.predict_proba(Xt) if hasattr(est, "predict_proba") else est.predict(Xt)
    _every_algorithm(quickscorer.load(est), Xt, want)


def _hist_data(seed: int, categorical: bool):
    """Rows with NaN, a categorical column of integer categories with gaps (0, 3, 6, ...), and
    test rows with unknown, negative and non-integer categories."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(600, 5))
    X[:, 2] = np.round(X[:, 2] * 2.0)                    # ties on few values
    if categorical:
        X[:, 3] = rng.integers(0, 9, 600) * 3.0
    X[rng.random(X.shape) < 0.08] = np.nan
    c = np.nan_to_num(X[:, 3]) if categorical else 0.0
    y = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) ** 2 + (c % 4 == 0) + 0.1 * rng.normal(
        size=600)
    Xt = np.vstack([rng.normal(size=(300, 5)) * 2.0, X[:100]])
    if categorical:
        Xt[:300, 3] = rng.choice([0.0, 3.0, 6.0, 9.0, 24.0, 1.0, 27.0, 300.0, -3.0, 4.5,
                                  -0.5, 2.0**31, 1e300, np.nan], size=300)
    Xt[rng.random(Xt.shape) < 0.05] = np.nan
    return X, y, Xt


HIST = [
    ("squared_error", {}, "regression"),
    ("poisson", {"loss": "poisson"}, "positive"),
    ("absolute_error", {"loss": "absolute_error", "max_leaf_nodes": 8}, "regression"),
    ("binary", {}, "binary"),
    ("three classes", {"max_depth": 4}, "three"),
]


@pytest.mark.parametrize("categorical", [False, True], ids=["numerical", "categorical"])
@pytest.mark.parametrize("label, params, target", HIST, ids=[h[0] for h in HIST])
def test_hist_gradient_boosting_scores_as_scikit_learn(label, params, target, categorical):
    X, y, Xt = _hist_data(3, categorical)
    extra = {"categorical_features": [3]} if categorical else {}
    if target == "regression":
        est = sk_ensemble.HistGradientBoostingRegressor(max_iter=30, **params, **extra)
        est.fit(X, y)
        want = est.predict(Xt)
    elif target == "positive":
        est = sk_ensemble.HistGradientBoostingRegressor(max_iter=30, **params, **extra)
        est.fit(X, np.exp(y / 4.0))
        want = est.predict(Xt)
    else:
        labels = (y > np.median(y)).astype(int) if target == "binary" else np.digitize(
            y, np.quantile(y, [0.33, 0.66]))
        est = sk_ensemble.HistGradientBoostingClassifier(max_iter=20, **params, **extra)
        est.fit(X, labels)
        proba = est.predict_proba(Xt)
        want = proba[:, 1] if proba.shape[1] == 2 else proba
    model = quickscorer.load(est)
    assert model.ensemble.family == "plain"
    _every_algorithm(model, Xt, want)
    raw = est._raw_predict(Xt)
    _every_algorithm(model, Xt, raw[:, 0] if raw.shape[1] == 1 else raw, raw_score=True)
    assert np.array_equal(reference.predict_raw(model.ensemble, Xt), raw)   # the oracle too
    # float32 rows against the estimator itself (rows whose values float32 holds: its encoder
    # refuses the infinity a cast makes of 1e300)
    X32 = Xt[~(np.abs(Xt) > 3e38).any(axis=1)].astype(np.float32)
    raw32 = est._raw_predict(X32)
    _every_algorithm(model, X32, raw32[:, 0] if raw32.shape[1] == 1 else raw32, raw_score=True)
    if target in ("binary", "three"):
        assert np.array_equal(model.predict(Xt, raw_score=True).reshape(raw.shape),
                              est.decision_function(Xt).reshape(raw.shape))


def test_hist_gradient_boosting_reads_categories_named_in_a_dataframe():
    pd = pytest.importorskip("pandas")
    X, y, Xt = _hist_data(5, True)
    cols = ["a", "b", "c", "cat", "e"]
    frame = pd.DataFrame(X, columns=cols)
    frame["cat"] = frame["cat"].astype("category")
    est = sk_ensemble.HistGradientBoostingRegressor(max_iter=15, categorical_features="from_dtype")
    est.fit(frame, y)
    known = Xt[:, 3].copy()
    known[~np.isin(known, frame["cat"].cat.categories)] = np.nan   # a dataframe's unknown
    Xk = Xt.copy()
    Xk[:, 3] = known
    test = pd.DataFrame(Xk, columns=cols)
    test["cat"] = pd.Categorical(test["cat"], categories=frame["cat"].cat.categories)
    model = quickscorer.load(est)
    assert model.feature_names == tuple(cols)
    _every_algorithm(model, Xk, est.predict(test))


def test_a_value_too_small_to_matter_to_lightgbm_still_decides_a_scikit_learn_split():
    # LightGBM reads |x| <= 1e-35 as 0.0; scikit-learn compares the value itself
    est = sk_tree.DecisionTreeRegressor().fit(np.array([[-1.0], [1.0]]), np.array([0.0, 1.0]))
    assert est.tree_.threshold[0] == 0.0
    Xt = np.array([[1e-37], [5e-36], [0.0], [-5e-36], [2e-45]])
    _every_algorithm(quickscorer.load(est), Xt, est.predict(Xt))


def test_the_plain_family_refuses_lightgbms_zero_as_missing_rule():
    def tree(missing):
        return build_tree(left=[1, -1, -1], right=[2, -1, -1], root=0, feature=[0, 0, 0],
                          threshold=[0.5, 0, 0], default_left=[True, False, False],
                          missing_type=[missing] * 3, is_categorical=[False] * 3,
                          categories=None, value=[0.0, 1.0, 2.0], n_features=1)
    Ensemble(trees=[tree(MISSING_NAN)], tree_group=[0], n_outputs=1, n_features=1,
             family="plain", base_score=[0.0])
    with pytest.raises(ModelFormatError, match="zero-as-missing"):
        Ensemble(trees=[tree(MISSING_ZERO)], tree_group=[0], n_outputs=1, n_features=1,
                 family="plain", base_score=[0.0])


@pytest.mark.parametrize("link", ["numpy_exp", "numpy_softmax"])
def test_numpy_links_match_scikit_learns_own_arithmetic(link):
    """The exp and softmax links are computed by NumPy's functions, as scikit-learn's are, so
    they agree to the bit on CPUs where NumPy's exp is its own AVX-512 code (libm's exp
    differs there in the last place on some inputs)."""
    from sklearn.utils.extmath import softmax

    from quickscorer._transforms import apply_transform
    raw = np.random.default_rng(3).normal(scale=4.0, size=(20000, 3))
    want = np.exp(raw) if link == "numpy_exp" else softmax(raw)
    assert np.array_equal(apply_transform(link, {}, raw), want)
    assert np.array_equal(raw, np.random.default_rng(3).normal(scale=4.0, size=(20000, 3)))
