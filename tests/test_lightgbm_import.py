"""The LightGBM importer: structure, exactness against lightgbm itself, and damaged files.

Differential tests train small LightGBM models here and require the numpy oracle
(``quickscorer.ir.reference``) on the imported ensemble to give LightGBM's raw scores bit for bit,
and the same leaf ids as ``Booster.predict(pred_leaf=True)``, on rows built to sit on and next
to every threshold, at the zero-as-missing bound, and on NaN, +-0, +-inf and odd categories.
"""
from __future__ import annotations

import functools
import zlib
from pathlib import Path

import numpy as np
import pytest
from conftest import scoring_algorithms
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import quickscorer
from quickscorer.errors import ModelFormatError
from quickscorer.importers.lightgbm import load_lightgbm, looks_like_lightgbm_text
from quickscorer.ir import MISSING_NAN, MISSING_NONE, MISSING_ZERO, Ensemble, reference

lgb = pytest.importorskip("lightgbm", reason="the test extra installs lightgbm")

SHARED_EXAMPLES = (Path(__file__).resolve().parents[2] / "shared" / "data"
                   / "lightgbm-examples")

#: LightGBM's kZeroThreshold (1e-35f) as a double
K_ZERO = float(np.float32(1e-35))

NUMERIC_SPECIALS = [np.nan, 0.0, -0.0, 1e-40, -1e-40, 1e-36, -1e-36, K_ZERO, -K_ZERO,
                    float(np.nextafter(K_ZERO, np.inf)), float(np.nextafter(-K_ZERO, -np.inf)),
                    np.inf, -np.inf, 1e300, -1e300]
CATEGORY_SPECIALS = [0.0, -0.0, 1.0, 2.0, 3.0, 5.0, 7.0, 11.0, 19.0, 20.0, 21.0, 31.0, 32.0,
                     33.0, 63.0, 64.0, 65.0, 1000.0, 2.0**31 - 1, 2.0**31, 1e10, -1.0, -0.5,
                     0.5, 2.7, -2.7, 1e-40, np.nan, np.inf, -np.inf]


# --------------------------------------------------------------------------------------------
# helpers

def lgb_train(params, X, y, rounds=4, group=None, categorical=None):
    full = dict(verbose=-1, num_threads=1, seed=11, deterministic=True, force_row_wise=True)
    full.update(params)
    ds = lgb.Dataset(X, y, group=group,
                     categorical_feature=categorical if categorical else "auto",
                     free_raw_data=False)
    return lgb.train(full, ds, num_boost_round=rounds)


def lgb_probe_rows(ens: Ensemble, base: np.ndarray, seed: int,
                   categorical=()) -> np.ndarray:
    """Rows that put one feature on, just below and just above each of its thresholds.

    Every other feature of the row comes from a random row of ``base``; special values (NaN,
    signed zeros, the zero-as-missing bound, infinities; odd categories for categorical
    features) are probed the same way.
    """
    rng = np.random.default_rng(seed)
    values: dict[int, set] = {f: set() for f in range(ens.n_features)}
    for tree in ens.trees:
        for n in range(tree.n_internal):
            if not tree.is_categorical[n]:
                t = float(tree.threshold[n])
                values[int(tree.feature[n])].update(
                    (t, float(np.nextafter(t, -np.inf)), float(np.nextafter(t, np.inf))))
    rows = [base]
    for f, vals in values.items():
        probe = sorted(vals) + (CATEGORY_SPECIALS if f in categorical else NUMERIC_SPECIALS)
        block = base[rng.integers(len(base), size=len(probe))].copy()
        block[:, f] = probe
        rows.append(block)
    return np.vstack(rows)


def lgb_leaf_ids(ens: Ensemble, X) -> np.ndarray:
    """LightGBM leaf index of each row's exit leaf in each tree, via the oracle."""
    canon = reference.predict_leaf(ens, X)
    return np.stack([ens.trees[t].leaf_source_id[canon[:, t]] for t in range(ens.n_trees)],
                    axis=1)


def lgb_assert_same_ensemble(a: Ensemble, b: Ensemble) -> None:
    assert a.n_trees == b.n_trees and a.n_outputs == b.n_outputs
    assert (a.n_features, a.family, a.transform, a.transform_params, a.average_output,
            a.feature_names, a.source) == (b.n_features, b.family, b.transform,
                                           b.transform_params, b.average_output,
                                           b.feature_names, b.source)
    np.testing.assert_array_equal(a.tree_group, b.tree_group)
    np.testing.assert_array_equal(a.base_score, b.base_score)
    for ta, tb in zip(a.trees, b.trees):
        for name in ("feature", "threshold", "left", "right", "default_left", "missing_type",
                     "is_categorical", "cat_offsets", "cat_values", "leaf_value",
                     "leaf_source_id", "node_source_id"):
            np.testing.assert_array_equal(getattr(ta, name), getattr(tb, name), err_msg=name)
        assert (ta.linear is None) == (tb.linear is None)
        if ta.linear is not None:
            for name in ("const", "offsets", "feature", "coeff"):
                np.testing.assert_array_equal(getattr(ta.linear, name),
                                              getattr(tb.linear, name), err_msg=name)


def lgb_assert_exact(booster, X, tmp_path) -> Ensemble:
    """Booster, model string and saved file all import to LightGBM's exact scores and leaves."""
    text = booster.model_to_string(num_iteration=-1)
    path = tmp_path / "model.txt"
    booster.save_model(str(path), num_iteration=-1)
    ens = load_lightgbm(booster)
    expected = booster.predict(X, raw_score=True).reshape(len(X), -1)
    np.testing.assert_array_equal(reference.predict_raw(ens, X), expected)
    np.testing.assert_array_equal(lgb_leaf_ids(ens, X), booster.predict(X, pred_leaf=True))
    for other in (load_lightgbm(text), load_lightgbm(str(path)), load_lightgbm(path)):
        lgb_assert_same_ensemble(ens, other)
        np.testing.assert_array_equal(reference.predict_raw(other, X), expected)
    return ens


def _all(ens: Ensemble, field: str) -> np.ndarray:
    return np.concatenate([getattr(t, field) for t in ens.trees])


# --------------------------------------------------------------------------------------------
# trained models

def _features(rng, n, nan_rate=0.05, zero_rate=0.1):
    X = rng.normal(size=(n, 4))
    X[:, 2] = np.round(rng.uniform(-2, 2, size=n), 1)  # many exact ties and exact zeros
    X[rng.random(X.shape) < zero_rate] = 0.0
    X[rng.random(X.shape) < nan_rate] = np.nan
    latent = (np.nan_to_num(X[:, 0]) + 0.5 * np.nan_to_num(X[:, 1]) ** 2
              - np.nan_to_num(X[:, 2]) + 0.3 * np.nan_to_num(X[:, 3]))
    return X, latent


def _case(name):
    """(params, X, y, rounds, group, categorical) of a named training case."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    X, latent = _features(rng, 400)
    params = dict(num_leaves=8, min_data_in_leaf=5)
    group = categorical = None
    rounds = 4
    y = latent
    if name == "regression":
        params.update(objective="regression")
    elif name == "binary":
        params.update(objective="binary", sigmoid=0.7)
        y = (latent > 0).astype(float)
    elif name == "multiclass":
        params.update(objective="multiclass", num_class=3)
        y = np.digitize(latent, [-0.5, 0.5]).astype(float)
        rounds = 3
    elif name == "multiclassova":
        params.update(objective="multiclassova", num_class=3, sigmoid=1.3)
        y = np.digitize(latent, [-0.5, 0.5]).astype(float)
        rounds = 3
    elif name == "lambdarank":
        params.update(objective="lambdarank")
        y = np.digitize(latent + rng.normal(scale=0.3, size=len(latent)),
                        [-1, 0, 1, 2]).astype(float)
        group = [20] * 20
    elif name == "cross_entropy":
        params.update(objective="cross_entropy")
        y = 1 / (1 + np.exp(-latent))
    elif name == "poisson":
        params.update(objective="poisson")
        y = rng.poisson(np.exp(np.clip(latent, -2, 2))).astype(float)
    elif name == "random_forest":
        params.update(objective="binary", boosting="rf", bagging_freq=1, bagging_fraction=0.7,
                      feature_fraction=0.8)
        y = (latent > 0).astype(float)
    elif name == "linear_tree":
        params.update(objective="regression", linear_tree=True)
        y = latent + 0.5 * np.nan_to_num(X[:, 0])
    elif name == "missing_none":
        params.update(objective="regression", use_missing=False)
    elif name == "missing_zero":
        params.update(objective="regression", zero_as_missing=True)
    elif name == "categorical":
        X[:, 3] = rng.integers(0, 21, size=len(X))
        X[rng.random(len(X)) < 0.05, 3] = np.nan
        y = latent + np.isin(X[:, 3], [1, 3, 7, 11, 19]) * 2.0
        params.update(objective="regression", min_data_per_group=5, cat_smooth=1.0,
                      max_cat_to_onehot=4, cat_l2=1.0)
        categorical = [3]
        rounds = 6
    elif name == "many_leaves":
        X, latent = _features(rng, 1500)
        y = latent + rng.normal(scale=0.1, size=len(latent))
        params.update(objective="regression", num_leaves=100, min_data_in_leaf=1,
                      min_sum_hessian_in_leaf=0.0)
        rounds = 2
    elif name == "single_leaf":
        params.update(objective="regression")
        y = np.full(len(X), 2.5)
    else:
        raise AssertionError(name)
    return params, X, y, rounds, group, categorical


CASES = ["regression", "binary", "multiclass", "multiclassova", "lambdarank", "cross_entropy",
         "poisson", "random_forest", "linear_tree", "missing_none", "missing_zero",
         "categorical", "many_leaves", "single_leaf"]


@functools.cache
def _trained(name):
    params, X, y, rounds, group, categorical = _case(name)
    return lgb_train(params, X, y, rounds, group, categorical), X, categorical or ()


@pytest.mark.parametrize("name", CASES)
def test_raw_scores_and_leaves_are_exact(name, tmp_path):
    booster, X, categorical = _trained(name)
    ens = load_lightgbm(booster)
    rows = lgb_probe_rows(ens, X[:100], seed=zlib.crc32(name.encode()), categorical=categorical)
    lgb_assert_exact(booster, rows, tmp_path)


EXPECTED_TRANSFORM = {
    "regression": ("identity", {}),
    "binary": ("sigmoid", {"sigmoid": 0.7}),
    "multiclass": ("softmax", {}),
    "multiclassova": ("ova_sigmoid", {"sigmoid": 1.3}),
    "lambdarank": ("identity", {}),
    "cross_entropy": ("sigmoid", {"sigmoid": 1.0}),
    "poisson": ("exp", {}),
    "random_forest": ("sigmoid", {"sigmoid": 1.0}),
}


@pytest.mark.parametrize("name", sorted(EXPECTED_TRANSFORM))
def test_objective_sets_transform(name):
    booster, _, _ = _trained(name)
    ens = load_lightgbm(booster)
    assert (ens.transform, ens.transform_params) == EXPECTED_TRANSFORM[name]
    k = 3 if name.startswith("multiclass") else 1
    assert ens.n_outputs == k
    np.testing.assert_array_equal(ens.tree_group, np.arange(ens.n_trees) % k)
    np.testing.assert_array_equal(ens.base_score, np.zeros(k))
    assert ens.average_output == (name == "random_forest")
    assert ens.family == "lightgbm"
    assert ens.source == {"library": "lightgbm", "version": "v4", "format": "text",
                          "objective": booster.model_to_string().split("objective=")[1]
                          .split("\n")[0]}
    assert ens.feature_names == tuple(booster.feature_name())


def test_cases_cover_what_they_claim():
    """Guards the differential tests: each case really holds the feature it is named after."""
    assert set(_all(load_lightgbm(_trained("regression")[0]), "missing_type")) == {MISSING_NAN}
    assert set(_all(load_lightgbm(_trained("missing_zero")[0]), "missing_type")) == {MISSING_ZERO}
    assert set(_all(load_lightgbm(_trained("missing_none")[0]), "missing_type")) == {MISSING_NONE}
    assert _all(load_lightgbm(_trained("regression")[0]), "default_left").any()
    cat = load_lightgbm(_trained("categorical")[0])
    assert cat.has_categorical and cat.trees[0].cat_values.size >= 2
    assert load_lightgbm(_trained("linear_tree")[0]).has_linear
    many = load_lightgbm(_trained("many_leaves")[0])
    assert max(t.n_leaves for t in many.trees) > 64
    single = load_lightgbm(_trained("single_leaf")[0])
    assert [t.n_leaves for t in single.trees] == [1]
    assert single.trees[0].leaf_value.tolist() == [2.5]
    assert load_lightgbm(_trained("random_forest")[0]).average_output


@pytest.mark.parametrize("name", CASES)
def test_model_scores_match_lightgbm(name):
    """Every compiled algorithm, fed by this importer, matches LightGBM end to end."""
    booster, X, categorical = _trained(name)
    ens = load_lightgbm(booster)
    rows = lgb_probe_rows(ens, X[:50], seed=1, categorical=categorical)
    model = quickscorer.Model(ens)
    want_raw = booster.predict(rows, raw_score=True)
    want = booster.predict(rows)
    want_leaf = booster.predict(rows, pred_leaf=True)
    for alg in scoring_algorithms(model):
        np.testing.assert_array_equal(model.predict(rows, raw_score=True, algorithm=alg),
                                      want_raw, err_msg=alg)
        np.testing.assert_array_equal(model.predict(rows, algorithm=alg), want, err_msg=alg)
        np.testing.assert_array_equal(model.predict_leaf(rows, source_ids=True, algorithm=alg),
                                      want_leaf.reshape(len(rows), -1), err_msg=alg)


# --------------------------------------------------------------------------------------------
# a hand-written model: every field checked by value, and LightGBM agrees with it

HAND_MODEL = """tree
version=v4
num_class=2
num_tree_per_iteration=2
label_index=0
max_feature_idx=3
objective=multiclassova num_class:2 sigmoid:1.5
average_output
feature_names=a b c d
feature_infos=[-1:1] [-1:1] 0:1:2:31:33 [0:1]

Tree=0
num_leaves=3
num_cat=0
split_feature=1 0
split_gain=1 1
threshold=1.0000000180025095e-35 -0.29999999999999999
decision_type=6 8
left_child=-3 -2
right_child=1 -1
leaf_value=0.25 -1.5 3
leaf_weight=1 1 1
leaf_count=1 1 1
internal_value=0 0
internal_weight=0 0
internal_count=3 2
is_linear=0
shrinkage=1


Tree=1
num_leaves=3
num_cat=2
split_feature=2 2
split_gain=1 1
threshold=1 0
decision_type=1 11
left_child=-1 -2
right_child=1 -3
leaf_value=0.5 0.75 -0.125
leaf_weight=1 1 1
leaf_count=1 1 1
internal_value=0 0
internal_weight=0 0
internal_count=3 2
cat_boundaries=0 2 3
cat_threshold=2147483650 2 5
is_linear=0
shrinkage=1


Tree=2
num_leaves=1
num_cat=0
split_feature=
split_gain=
threshold=
decision_type=
left_child=
right_child=
leaf_value=0.0625
leaf_weight=
leaf_count=10
internal_value=
internal_weight=
internal_count=
is_linear=0
shrinkage=12345


Tree=3
num_leaves=2
num_cat=0
split_feature=3
split_gain=1
threshold=0.5
decision_type=0
left_child=-1
right_child=-2
leaf_value=1 2
leaf_weight=1 1
leaf_count=1 1
internal_value=0
internal_weight=0
internal_count=2
is_linear=1
leaf_const=0.5 -0.25
num_features=2 0
leaf_features=0 1\x20\x20
leaf_coeff=0.5 -2\x20\x20
shrinkage=1


end of trees

feature_importances:
a=1

parameters:
[boosting: gbdt]
[objective: multiclassova]
[linear_tree: 1]

end of parameters

pandas_categorical:null
"""


def test_hand_model_fields():
    ens = load_lightgbm(HAND_MODEL)
    assert ens.n_trees == 4 and ens.n_outputs == 2 and ens.n_features == 4
    assert ens.tree_group.tolist() == [0, 1, 0, 1]
    assert ens.average_output and ens.n_iterations == 2
    assert (ens.transform, ens.transform_params) == ("ova_sigmoid", {"sigmoid": 1.5})
    assert ens.feature_names == ("a", "b", "c", "d")
    assert ens.source == {"library": "lightgbm", "version": "v4", "format": "text",
                          "objective": "multiclassova num_class:2 sigmoid:1.5"}

    t0 = ens.trees[0]
    # LightGBM node 0 (root) then node 1; leaves in order are LightGBM leaves 2, 1, 0
    assert t0.node_source_id.tolist() == [0, 1]
    assert t0.leaf_source_id.tolist() == [2, 1, 0]
    assert t0.leaf_value.tolist() == [3.0, -1.5, 0.25]
    assert t0.feature.tolist() == [1, 0]
    assert t0.threshold[0] == K_ZERO and t0.threshold[1] == -0.3  # exact doubles
    assert t0.default_left.tolist() == [True, False]
    assert t0.missing_type.tolist() == [MISSING_ZERO, MISSING_NAN]
    assert t0.left.tolist() == [~0, ~1] and t0.right.tolist() == [1, ~2]

    t1 = ens.trees[1]
    assert t1.is_categorical.tolist() == [True, True]
    # node 0: words [cat_boundaries[1], cat_boundaries[2]) = [5] -> {0, 2};
    # node 1: words [0, 2) = [2147483650, 2] -> bits 1, 31 and 32 + 1
    assert t1.categories(0).tolist() == [0, 2]
    assert t1.categories(1).tolist() == [1, 31, 33]
    assert not t1.default_left.any()  # NaN goes right at categorical nodes
    assert t1.leaf_source_id.tolist() == [0, 1, 2]

    t2 = ens.trees[2]
    assert t2.n_internal == 0 and t2.leaf_value.tolist() == [0.0625]
    assert t2.leaf_source_id.tolist() == [0]

    t3 = ens.trees[3]
    assert t3.missing_type.tolist() == [MISSING_NONE]
    lin = t3.linear
    assert lin.const.tolist() == [0.5, -0.25]
    assert lin.offsets.tolist() == [0, 2, 2]
    assert lin.feature.tolist() == [0, 1] and lin.coeff.tolist() == [0.5, -2.0]
    assert t3.leaf_value.tolist() == [1.0, 2.0]
    assert ens.trees[0].linear is None


def test_hand_model_matches_lightgbm():
    booster = lgb.Booster(model_str=HAND_MODEL)
    ens = load_lightgbm(HAND_MODEL)
    vals = [np.nan, 0.0, -0.0, 1e-40, -1e-36, K_ZERO, -K_ZERO,
            float(np.nextafter(K_ZERO, 1)), -0.3, float(np.nextafter(-0.3, 0)),
            float(np.nextafter(-0.3, -1)), 0.5, 0.6, 1.0, 2.0, 31.0, 32.0, 33.0, 34.0, 2.7,
            -0.5, -1.0, np.inf, -np.inf, 1e10, 2.0**31]
    X = np.random.default_rng(5).choice(vals, size=(2000, 4))
    np.testing.assert_array_equal(reference.predict_raw(ens, X),
                                  booster.predict(X, raw_score=True))
    np.testing.assert_array_equal(lgb_leaf_ids(ens, X), booster.predict(X, pred_leaf=True))


def test_every_source_form_gives_the_same_ensemble(tmp_path):
    path = tmp_path / "hand.txt"
    path.write_text(HAND_MODEL)
    ens = load_lightgbm(HAND_MODEL)
    for src in (str(path), path, HAND_MODEL.encode(), HAND_MODEL.replace("\n", "\r\n"),
                lgb.Booster(model_str=HAND_MODEL)):
        lgb_assert_same_ensemble(ens, load_lightgbm(src))


def test_format_detection():
    booster, _, _ = _trained("regression")
    text = booster.model_to_string()
    assert looks_like_lightgbm_text(text)
    assert looks_like_lightgbm_text(text.encode())
    assert looks_like_lightgbm_text(HAND_MODEL.replace("\n", "\r\n").encode())
    for other in (b"", b"{\"learner\": {}}", b"{L\x00\x00\x00", "tree", b"tree\nhello\n",
                  b"trees\nversion=v4\n", b"\x00\x01binary"):
        assert not looks_like_lightgbm_text(other)


# --------------------------------------------------------------------------------------------
# objectives

def _with_header(text: str, key: str, value: str | None) -> str:
    lines = text.split("\n")
    out = [ln for ln in lines if not ln.startswith(key + "=")]
    if value is not None:
        out.insert(2, f"{key}={value}")
    return "\n".join(out)


def _one_output_model() -> str:
    return _trained("regression")[0].model_to_string()


@pytest.mark.parametrize("objective, transform, params", [
    ("regression", "identity", {}),
    ("regression sqrt", "signed_square", {}),
    ("regression_l1 sqrt", "signed_square", {}),
    ("quantile sqrt", "signed_square", {}),
    ("fair sqrt", "signed_square", {}),
    ("mape sqrt", "signed_square", {}),
    ("huber sqrt", "identity", {}),     # LightGBM drops sqrt for huber
    ("poisson sqrt", "exp", {}),        # ... and for poisson, gamma, tweedie
    ("regression_l1", "identity", {}),
    ("huber", "identity", {}),
    ("fair", "identity", {}),
    ("quantile", "identity", {}),
    ("mape", "identity", {}),
    ("lambdarank", "identity", {}),
    ("rank_xendcg", "identity", {}),
    ("custom", "identity", {}),
    (None, "identity", {}),
    ("binary sigmoid:0.25", "sigmoid", {"sigmoid": 0.25}),
    ("cross_entropy", "sigmoid", {"sigmoid": 1.0}),
    ("cross_entropy_lambda", "log1p_exp", {}),
    ("poisson", "exp", {}),
    ("gamma", "exp", {}),
    ("tweedie", "exp", {}),
])
def test_objective_line_to_transform(objective, transform, params):
    ens = load_lightgbm(_with_header(_one_output_model(), "objective", objective))
    assert (ens.transform, ens.transform_params) == (transform, params)
    assert ens.source["objective"] == objective


@pytest.mark.parametrize("objective", ["xentropy_v2", "binary", "binary sigmoid:-1",
                                       "binary sigmoid:abc", "multiclass num_class:5",
                                       "multiclassova num_class:1", "", "Regression"])
def test_unknown_or_inconsistent_objective_is_refused(objective):
    with pytest.raises(ModelFormatError, match="objective"):
        load_lightgbm(_with_header(_one_output_model(), "objective", objective))


def test_transformed_outputs_follow_lightgbm_for_sqrt():
    """``regression_l1 sqrt`` squares like ``regression sqrt`` does (docs/semantics.md names only
    the latter)."""
    rng = np.random.default_rng(3)
    X, latent = _features(rng, 300)
    booster = lgb_train(dict(objective="regression_l1", reg_sqrt=True, num_leaves=6),
                        X, np.abs(latent) * 3, rounds=3)
    ens = load_lightgbm(booster)
    assert ens.transform == "signed_square"
    raw = reference.predict_raw(ens, X)[:, 0]
    np.testing.assert_array_equal(raw, booster.predict(X, raw_score=True))
    np.testing.assert_array_equal(np.sign(raw) * raw * raw, booster.predict(X))


# --------------------------------------------------------------------------------------------
# real data (read in place, never copied)

def _shared_or_skip() -> Path:
    if not SHARED_EXAMPLES.is_dir():
        pytest.skip(f"{SHARED_EXAMPLES} is absent: the LightGBM example data sits beside the "
                    f"repository only on the developers' machines")
    return SHARED_EXAMPLES


def _read_libsvm(path: Path, n_features: int) -> tuple[np.ndarray, np.ndarray]:
    labels, rows = [], []
    for line in path.read_text().splitlines():
        parts = line.split()
        if not parts:
            continue
        labels.append(float(parts[0]))
        row = np.zeros(n_features)
        for tok in parts[1:]:
            k, v = tok.split(":")
            row[int(k)] = float(v)
        rows.append(row)
    return np.vstack(rows), np.asarray(labels)


def test_shared_binary_example(tmp_path):
    root = _shared_or_skip()
    train = np.loadtxt(root / "binary.train", delimiter="\t")
    test = np.loadtxt(root / "binary.test", delimiter="\t")
    booster = lgb_train(dict(objective="binary", num_leaves=31), train[:, 1:], train[:, 0],
                        rounds=8)
    rows = np.vstack([test[:200, 1:], train[:100, 1:]])
    ens = lgb_assert_exact(booster, rows, tmp_path)
    assert ens.n_features == 28


def test_shared_rank_example(tmp_path):
    root = _shared_or_skip()
    n_features = 1 + max(int(tok.split(":")[0])
                         for name in ("rank.train", "rank.test")
                         for line in (root / name).read_text().splitlines()
                         for tok in line.split()[1:])
    X, y = _read_libsvm(root / "rank.train", n_features)
    group = [int(s) for s in (root / "rank.train.query").read_text().split()]
    assert sum(group) == len(X)
    booster = lgb_train(dict(objective="lambdarank", num_leaves=31), X, y, rounds=6,
                        group=group)
    X_test, _ = _read_libsvm(root / "rank.test", n_features)
    ens = lgb_assert_exact(booster, X_test[:300], tmp_path)
    assert ens.transform == "identity"


# --------------------------------------------------------------------------------------------
# damaged models

def _edit_tree_field(text: str, tree: int, key: str, value: str | None) -> str:
    """``text`` with field ``key`` of tree ``tree`` set to ``value`` (None deletes the line)."""
    lines = text.split("\n")
    start = lines.index(f"Tree={tree}")
    for i in range(start + 1, len(lines)):
        if lines[i].startswith(key + "="):
            if value is None:
                del lines[i]
            else:
                lines[i] = f"{key}={value}"
            return "\n".join(lines)
        if not lines[i].strip():
            break
    raise AssertionError(f"tree {tree} has no field {key}")


def _field(text: str, tree: int, key: str) -> list[str]:
    lines = text.split("\n")
    start = lines.index(f"Tree={tree}")
    for line in lines[start + 1:]:
        if line.startswith(key + "="):
            return line.split("=", 1)[1].split()
    raise AssertionError(key)


def _break(text: str, how: str) -> tuple[str, str]:
    """A damaged copy of ``text`` and a regex its error message must match."""
    thr = _field(text, 1, "threshold")
    left = _field(text, 1, "left_child")
    n_trees = text.count("\nTree=")
    n_leaves = int(_field(text, 1, "num_leaves")[0])
    edits = {
        "truncated": (text[: len(text) // 2], "truncated|end of trees|tree"),
        "truncated_in_tree": (text[: text.index("Tree=1") + 60], r"tree 1"),
        "trees_missing": (text[: text.index(f"Tree={n_trees - 1}")]
                          + text[text.index("end of trees"):], "tree_sizes declares"),
        "no_trailer_no_tree_sizes": (
            _with_header(text, "tree_sizes", None)[
                : _with_header(text, "tree_sizes", None).index("end of trees")],
            "end of trees.*truncated"),
        "missing_leaf_value": (_edit_tree_field(text, 1, "leaf_value", None),
                               r"tree 1: .*leaf_value"),
        "missing_left_child": (_edit_tree_field(text, 1, "left_child", None),
                               r"tree 1: .*left_child"),
        "missing_decision_type": (_edit_tree_field(text, 1, "decision_type", None),
                                  r"tree 1: .*decision_type"),
        "missing_num_cat": (_edit_tree_field(text, 1, "num_cat", None), r"tree 1: .*num_cat"),
        "short_threshold": (_edit_tree_field(text, 1, "threshold", " ".join(thr[:-1])),
                            r"tree 1: .*threshold.* expected"),
        "long_leaf_value": (_edit_tree_field(
            text, 1, "leaf_value", " ".join(_field(text, 1, "leaf_value") + ["1.5"])),
            r"tree 1: .*leaf_value"),
        "non_numeric_threshold": (_edit_tree_field(
            text, 1, "threshold", " ".join(["abc"] + thr[1:])), r"tree 1: .*threshold.*'abc'"),
        "two_dots": (_edit_tree_field(text, 1, "threshold", " ".join(["1.2.3"] + thr[1:])),
                     r"tree 1: .*threshold"),
        "nan_threshold": (_edit_tree_field(text, 1, "threshold", " ".join(["nan"] + thr[1:])),
                          r"tree 1: .*threshold.* holds 'nan'"),
        "infinite_threshold": (_edit_tree_field(
            text, 1, "threshold", " ".join(["1e999"] + thr[1:])), r"tree 1: .*threshold"),
        "float_child": (_edit_tree_field(text, 1, "left_child", " ".join(["1.5"] + left[1:])),
                        r"tree 1: .*left_child"),
        "child_out_of_range": (_edit_tree_field(
            text, 1, "left_child", " ".join([str(n_leaves + 5)] + left[1:])),
            r"tree 1: .*left_child"),
        "leaf_out_of_range": (_edit_tree_field(
            text, 1, "left_child", " ".join([str(-n_leaves - 1)] + left[1:])),
            r"tree 1: .*left_child"),
        "huge_child": (_edit_tree_field(
            text, 1, "left_child", " ".join(["9" * 40] + left[1:])), r"tree 1: .*left_child"),
        "cycle": (_edit_tree_field(text, 1, "left_child", " ".join(["0"] + left[1:])),
                  r"tree 1: .*(twice|cycle)"),
        "unknown_decision_bit": (_edit_tree_field(
            text, 1, "decision_type",
            " ".join(["18"] + _field(text, 1, "decision_type")[1:])),
            r"tree 1: node 0: decision_type"),
        "negative_decision_type": (_edit_tree_field(
            text, 1, "decision_type", " ".join(["-2"] + _field(text, 1, "decision_type")[1:])),
            r"tree 1: node 0: decision_type"),
        "missing_type_3": (_edit_tree_field(
            text, 1, "decision_type", " ".join(["14"] + _field(text, 1, "decision_type")[1:])),
            r"tree 1: node 0: .*missing type"),
        "split_feature_out_of_range": (_edit_tree_field(
            text, 1, "split_feature",
            " ".join(["4"] + _field(text, 1, "split_feature")[1:])),
            r"tree 1: .*split_feature"),
        "absurd_num_leaves": (_edit_tree_field(text, 1, "num_leaves", str(10**12)),
                              r"tree 1: .*num_leaves"),
        "bigger_num_leaves": (_edit_tree_field(text, 1, "num_leaves", str(n_leaves + 1)),
                              r"tree 1: .*expected"),
        "negative_num_leaves": (_edit_tree_field(text, 1, "num_leaves", "-3"),
                                r"tree 1: .*num_leaves"),
        "zero_num_leaves": (_edit_tree_field(text, 1, "num_leaves", "0"),
                            r"tree 1: .*num_leaves"),
        "negative_num_cat": (_edit_tree_field(text, 1, "num_cat", "-1"), r"tree 1: .*num_cat"),
        "tree_numbering": (text.replace("Tree=1\n", "Tree=7\n"), r"Tree=7"),
        "unknown_objective": (_with_header(text, "objective", "telepathy"), "objective"),
        "no_max_feature_idx": (_with_header(text, "max_feature_idx", None), "max_feature_idx"),
        "feature_names_count": (_with_header(text, "max_feature_idx", "9"), "feature_names"),
        "num_class_mismatch": (_with_header(text, "num_tree_per_iteration", "2"),
                               "num_tree_per_iteration"),
        "not_a_model": ("hello\nworld\n", "not a LightGBM"),
        "empty": ("\n", "not a LightGBM"),
        "header_only": (text[: text.index("Tree=0")], "end of trees"),
        "no_trees": (text[: text.index("Tree=0")] + "end of trees\n", "no trees"),
    }
    return edits[how]


BREAKS = ["truncated", "truncated_in_tree", "trees_missing", "no_trailer_no_tree_sizes",
          "missing_leaf_value",
          "missing_left_child", "missing_decision_type", "missing_num_cat", "short_threshold",
          "long_leaf_value", "non_numeric_threshold", "two_dots", "nan_threshold",
          "infinite_threshold", "float_child", "child_out_of_range", "leaf_out_of_range",
          "huge_child", "cycle", "unknown_decision_bit", "negative_decision_type",
          "missing_type_3", "split_feature_out_of_range", "absurd_num_leaves",
          "bigger_num_leaves", "negative_num_leaves", "zero_num_leaves", "negative_num_cat",
          "tree_numbering", "unknown_objective", "no_max_feature_idx", "feature_names_count",
          "num_class_mismatch", "not_a_model", "empty", "header_only", "no_trees"]


def test_trees_end_where_lightgbm_4_ends_them():
    """Without 'end of trees' (LightGBM 2.0 / 2.1 files, or a line removed), the trees end at
    the next section, or at the end of the text when tree_sizes says every tree is there;
    LightGBM reads all of these, with the same scores."""
    booster, X = _trained("regression")[:2]
    text = booster.model_to_string()
    want = booster.predict(X, raw_score=True)
    no_end = text.replace("end of trees\n", "")
    assert "end of trees" not in no_end
    only_trees = text[: text.index("end of trees")]
    for variant in (no_end, only_trees):
        got = quickscorer.load(variant).predict(X, raw_score=True)
        assert np.array_equal(got, want)
        assert np.array_equal(got, lgb.Booster(model_str=variant).predict(X, raw_score=True))


@pytest.mark.parametrize("how", BREAKS)
def test_damaged_model_is_refused(how):
    text = _trained("regression")[0].model_to_string()
    damaged, message = _break(text, how)
    with pytest.raises(ModelFormatError, match=message):
        load_lightgbm(damaged)


def _cat_text() -> str:
    return _trained("categorical")[0].model_to_string()


def _first_categorical_tree(text: str) -> int:
    t = 0
    while f"Tree={t}" in text:
        if int(_field(text, t, "num_cat")[0]) > 0:
            return t
        t += 1
    raise AssertionError("no categorical tree")


@pytest.mark.parametrize("how, message", [
    ("decreasing_boundaries", r"cat_boundaries"),
    ("boundaries_beyond_words", r"cat_threshold"),
    ("short_boundaries", r"cat_boundaries"),
    ("absurd_bitset", r"cat_threshold"),
    ("cat_index_out_of_range", r"categorical threshold"),
    ("cat_index_fractional", r"categorical threshold"),
    ("word_too_big", r"cat_threshold"),
    ("negative_word", r"cat_threshold"),
    ("num_cat_zero", r"num_cat"),
])
def test_damaged_categorical_split_is_refused(how, message):
    text = _cat_text()
    t = _first_categorical_tree(text)
    bounds = _field(text, t, "cat_boundaries")
    words = _field(text, t, "cat_threshold")
    dt = [int(d) for d in _field(text, t, "decision_type")]
    node = next(i for i, d in enumerate(dt) if d & 1)
    thr = _field(text, t, "threshold")
    if how == "decreasing_boundaries":
        damaged = _edit_tree_field(text, t, "cat_boundaries",
                                   " ".join(["0", str(int(bounds[-1]) + 1)] + bounds[2:])
                                   if len(bounds) > 2 else "0 -1")
    elif how == "boundaries_beyond_words":
        damaged = _edit_tree_field(text, t, "cat_boundaries",
                                   " ".join(bounds[:-1] + [str(int(bounds[-1]) + 3)]))
    elif how == "short_boundaries":
        damaged = _edit_tree_field(text, t, "cat_boundaries", " ".join(bounds[:-1]))
    elif how == "absurd_bitset":
        damaged = _edit_tree_field(text, t, "cat_boundaries",
                                   " ".join(bounds[:-1] + [str(10**12)]))
    elif how == "cat_index_out_of_range":
        thr[node] = str(len(bounds) + 3)
        damaged = _edit_tree_field(text, t, "threshold", " ".join(thr))
    elif how == "cat_index_fractional":
        thr[node] = "0.5"
        damaged = _edit_tree_field(text, t, "threshold", " ".join(thr))
    elif how == "word_too_big":
        damaged = _edit_tree_field(text, t, "cat_threshold",
                                   " ".join([str(1 << 32)] + words[1:]))
    elif how == "negative_word":
        damaged = _edit_tree_field(text, t, "cat_threshold", " ".join(["-1"] + words[1:]))
    else:
        damaged = _edit_tree_field(text, t, "num_cat", "0")
    with pytest.raises(ModelFormatError, match=rf"tree {t}: .*{message}"):
        load_lightgbm(damaged)


@pytest.mark.parametrize("field, value, message", [
    ("num_features", "-1 0", "num_features"),
    ("num_features", "2 1", "leaf_features"),
    ("leaf_features", "0 7", "feature"),
    ("leaf_coeff", "0.5", "leaf_coeff"),
    ("leaf_const", "0.5", "leaf_const"),
    ("leaf_const", None, "leaf_const"),
    ("is_linear", "2", "is_linear"),
])
def test_damaged_linear_tree_is_refused(field, value, message):
    damaged = _edit_tree_field(HAND_MODEL, 3, field, value)
    with pytest.raises(ModelFormatError, match=rf"tree 3: .*{message}"):
        load_lightgbm(damaged)


def test_garbage_shrinkage_is_ignored():
    text = _edit_tree_field(HAND_MODEL, 2, "shrinkage", "nan")
    lgb_assert_same_ensemble(load_lightgbm(text), load_lightgbm(HAND_MODEL))


def test_bad_sources():
    with pytest.raises(ModelFormatError, match="cannot read"):
        load_lightgbm("/nonexistent/dir/model.txt")
    with pytest.raises(ModelFormatError, match="UTF-8"):
        load_lightgbm(HAND_MODEL.encode()[:100] + b"\xff\xfe" + HAND_MODEL.encode()[100:])
    with pytest.raises(TypeError):
        load_lightgbm(12345)


# --------------------------------------------------------------------------------------------
# random damage: only ModelFormatError (or a model that scores) may come out

_NASTY_TOKENS = ["", "-1", "0", "1", "2", "-2", "3", "7", "12", "16", "255", "-129",
                 "999999999999", "2147483648", "-2147483649", "1e400", "-1e400", "nan", "inf",
                 "1.5", "0.5", "abc", "1_0", "0x10", "--1", "+", "=", "Tree=0", "end of trees",
                 " ", "\t", "9" * 40]


@functools.cache
def _fuzz_bases() -> tuple[str, ...]:
    rng = np.random.default_rng(9)
    X = rng.normal(size=(300, 3))
    X[:, 2] = rng.integers(0, 40, size=300)
    X[rng.random(X.shape) < 0.05] = np.nan
    y = np.nan_to_num(X[:, 0]) + np.isin(X[:, 2], [3, 5, 33]) * 2.0
    cat = lgb_train(dict(objective="regression", num_leaves=5, min_data_per_group=5,
                         cat_smooth=1.0), X, y, rounds=3, categorical=[2])
    multi = lgb_train(dict(objective="multiclass", num_class=3, num_leaves=4), X[:, :2],
                      np.digitize(y, [0, 1]).astype(float), rounds=2)
    return (cat.model_to_string(), multi.model_to_string(), HAND_MODEL)


def _mutate(text: str, kind: str, a: int, b: int, token: str) -> bytes | str:
    if kind == "truncate":
        return text[: a % (len(text) + 1)]
    if kind == "flip_byte":
        raw = bytearray(text.encode())
        raw[a % len(raw)] = b % 256
        return bytes(raw)
    lines = text.split("\n")
    i = a % len(lines)
    if kind == "delete_line":
        del lines[i]
    elif kind == "duplicate_line":
        lines.insert(i, lines[i])
    else:  # replace one token of a key=value line
        key, eq, value = lines[i].partition("=")
        tokens = value.split(" ") if eq else key.split(" ")
        tokens[b % len(tokens)] = token
        lines[i] = key + eq + " ".join(tokens) if eq else " ".join(tokens)
    return "\n".join(lines)


@settings(max_examples=100, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(base=st.integers(0, 2),
       kind=st.sampled_from(["truncate", "flip_byte", "delete_line", "duplicate_line",
                             "token", "token", "token"]),
       a=st.integers(0, 1 << 30), b=st.integers(0, 1 << 30),
       token=st.one_of(st.sampled_from(_NASTY_TOKENS),
                       st.integers(-(1 << 40), 1 << 40).map(str),
                       st.floats(allow_nan=True, allow_infinity=True).map(repr)))
def test_random_damage_raises_only_model_format_error(base, kind, a, b, token):
    damaged = _mutate(_fuzz_bases()[base], kind, a, b, token)
    try:
        ens = load_lightgbm(damaged)
    except ModelFormatError as exc:
        assert str(exc)
        return
    assert isinstance(ens, Ensemble)
    if ens.n_features <= 64:
        X = np.random.default_rng(0).choice(NUMERIC_SPECIALS + CATEGORY_SPECIALS,
                                            size=(20, ens.n_features))
        assert reference.predict_raw(ens, X).shape == (20, ens.n_outputs)
