"""ONNX tree ensembles through quickscorer.load, against ONNX Runtime (one intra-op thread) as
the oracle: models written by skl2onnx and onnxmltools, and nodes built by hand for what the
converters do not write (opset 5's TreeEnsemble, LT/GT/GTE modes, NaN tracking, double
thresholds)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import quickscorer
from quickscorer.errors import ModelFormatError
from quickscorer.importers import protobuf
from quickscorer.ir import reference

pytest.importorskip("onnx", reason="the test extra installs onnx")
pytest.importorskip("onnxruntime", reason="the test extra installs onnxruntime")
pytest.importorskip("skl2onnx", reason="the test extra installs skl2onnx")
pytest.importorskip("onnxmltools", reason="the test extra installs onnxmltools")

import onnx
import onnxmltools
import onnxruntime as ort
import skl2onnx
from onnx import TensorProto, helper
from onnxmltools.convert.common.data_types import FloatTensorType as MLFloat
from skl2onnx.common.data_types import FloatTensorType

N_FEATURES = 5
#: ONNX Runtime's release: the newest serves no Python 3.10, whose newest (1.23) has two
#: known defects that the edge-case tests below meet
ORT_VERSION = tuple(int(p) for p in ort.__version__.split(".")[:2])


def _data(seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(800, N_FEATURES)).astype(np.float32)
    X[:, 4] = np.round(X[:, 4] * 2.0)                   # few values: rows on the thresholds
    y = X[:, 0] + X[:, 1] ** 2 + 0.1 * rng.normal(size=800).astype(np.float32)
    return X, y


def _test_rows(model_bytes: bytes, seed: int = 1) -> np.ndarray:
    """Random rows, NaN and infinities, and each threshold of the model with its float32
    neighbours in its own column."""
    rng = np.random.default_rng(seed)
    rows = [rng.normal(size=(300, N_FEATURES)).astype(np.float32) * 2]
    nan = rows[0][:60].copy()
    nan[rng.random(nan.shape) < 0.3] = np.nan
    rows.append(nan)
    cats = np.tile(np.arange(-2, 44, dtype=np.float32)[:, None], (1, N_FEATURES))
    rows.append(np.vstack([cats, cats + np.float32(0.5), cats + np.float32(1e-6)]))
    rows.append(np.full((2, N_FEATURES), np.inf, np.float32))
    rows.append(np.full((2, N_FEATURES), -np.inf, np.float32))
    node = _ensemble_node(onnx.load_from_string(model_bytes))
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if "nodes_values" in attrs:
        feats = np.asarray(attrs["nodes_featureids"])
        vals = np.asarray(attrs["nodes_values"], np.float32)
        pick = rng.choice(vals.size, size=min(200, vals.size), replace=False)
        edge = np.tile(rows[0][:1], (3 * pick.size, 1))
        for j, i in enumerate(pick):
            for d, v in enumerate((np.nextafter(vals[i], np.float32(-np.inf)), vals[i],
                                   np.nextafter(vals[i], np.float32(np.inf)))):
                edge[3 * j + d, feats[i]] = v
        rows.append(edge)
    return np.vstack(rows).astype(np.float32)


def _ensemble_node(model):
    return next(n for n in model.graph.node if n.op_type.startswith("TreeEnsemble"))


def _session(model_bytes: bytes):
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1          # trees summed in order (docs/semantics.md, ONNX)
    opts.log_severity_level = 3
    return ort.InferenceSession(model_bytes, opts, providers=["CPUExecutionProvider"])


def _ort_scores(model_bytes: bytes, X) -> np.ndarray:
    """The tree ensemble's scores as ONNX Runtime returns them (the classifier's
    probabilities, the regressor's values), row by row and as one batch."""
    s = _session(model_bytes)
    node = _ensemble_node(onnx.load_from_string(model_bytes))
    name = node.output[1] if node.op_type == "TreeEnsembleClassifier" else node.output[0]
    model = onnx.load_from_string(model_bytes)
    if name not in [o.name for o in model.graph.output]:
        model.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
        s = _session(model.SerializeToString())
    feed = s.get_inputs()[0].name
    return np.asarray(s.run([name], {feed: X})[0])


def _with_transform(model_bytes: bytes, post: str) -> bytes:
    model = onnx.load_from_string(model_bytes)
    node = _ensemble_node(model)
    for a in node.attribute:
        if a.name == "post_transform":
            a.s = post.encode()
    return model.SerializeToString()


def _ulps32(a, b) -> float:
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    if np.array_equal(a, b):
        return 0.0
    return float(np.max(np.abs(a.astype(np.float64) - b) /
                        np.spacing(np.maximum(np.abs(a), np.abs(b))).astype(np.float64)))


def _every_algorithm(model, X, want, **kw):
    for name in model.supported_algorithms():
        got = np.asarray(model.predict(X, algorithm=name, **kw))
        assert got.shape == want.shape, name
        assert np.array_equal(got, want, equal_nan=True), (name, np.max(np.abs(got - want)))


def _sklearn(kind: str) -> bytes:
    from sklearn.ensemble import (
        ExtraTreesRegressor,
        GradientBoostingClassifier,
        GradientBoostingRegressor,
        RandomForestClassifier,
    )
    X, y = _data()
    two = (y > np.median(y)).astype(int)
    three = np.digitize(y, np.quantile(y, [0.33, 0.66]))
    est = {"gbr": lambda: GradientBoostingRegressor(n_estimators=30, max_depth=4),
           "gbc2": lambda: GradientBoostingClassifier(n_estimators=20, max_depth=3),
           "gbc3": lambda: GradientBoostingClassifier(n_estimators=15, max_depth=3),
           "rfc2": lambda: RandomForestClassifier(n_estimators=8, max_depth=5, random_state=0),
           "rfc3": lambda: RandomForestClassifier(n_estimators=8, max_depth=5, random_state=0),
           "etr": lambda: ExtraTreesRegressor(n_estimators=8, max_depth=6, random_state=0)}[kind]()
    target = {"gbc2": two, "rfc2": two, "gbc3": three, "rfc3": three}.get(kind, y)
    est.fit(X, target)
    opts = {"zipmap": False} if kind[:2] in ("gb", "rf") and kind[-1] in "23" else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = skl2onnx.convert_sklearn(est, initial_types=[("input", FloatTensorType([None, 5]))],
                                     options={id(est): opts} if opts else None)
    return m.SerializeToString()


def _lightgbm(kind: str) -> bytes:
    import lightgbm
    X, y = _data()
    X = X.copy()
    X[::7, 2] = np.nan                                 # missing values in training
    kw = dict(n_estimators=25, num_leaves=15, verbose=-1, random_state=0)
    if kind == "reg":
        est = lightgbm.LGBMRegressor(**kw).fit(X, y)
    elif kind == "bin":
        est = lightgbm.LGBMClassifier(**kw).fit(X, (y > np.median(y)).astype(int))
    else:
        est = lightgbm.LGBMClassifier(**kw).fit(X, np.digitize(y, np.quantile(y, [.33, .66])))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = onnxmltools.convert_lightgbm(est, initial_types=[("input", MLFloat([None, 5]))],
                                         zipmap=False)
    return m.SerializeToString()


def _xgboost(kind: str) -> bytes:
    import xgboost
    X, y = _data()
    X = X.copy()
    X[::5, 3] = np.nan
    kw = dict(n_estimators=20, max_depth=4, random_state=0)
    if kind == "reg":
        est = xgboost.XGBRegressor(**kw).fit(X, y)
    elif kind == "bin":
        est = xgboost.XGBClassifier(**kw).fit(X, (y > np.median(y)).astype(int))
    else:
        est = xgboost.XGBClassifier(**kw).fit(X, np.digitize(y, np.quantile(y, [.33, .66])))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = onnxmltools.convert_xgboost(est, initial_types=[("input", MLFloat([None, 5]))])
    return m.SerializeToString()


def _lightgbm_categorical() -> bytes:
    """LightGBM categorical splits, which onnxmltools writes as chains of BRANCH_EQ nodes
    sharing their true child."""
    import lightgbm
    rng = np.random.default_rng(2)
    X = rng.normal(size=(3000, 5)).astype(np.float32)
    X[:, 0] = rng.integers(0, 8, 3000)
    X[:, 3] = rng.integers(0, 12, 3000)
    y = (X[:, 0] % 3 == 0) + np.sin(X[:, 3]) + X[:, 1]
    # small: each categorical split becomes threshold tests that copy the subtrees below it
    booster = lightgbm.train({"objective": "regression", "verbose": -1, "num_leaves": 6,
                              "min_data_per_group": 5, "cat_smooth": 1, "cat_l2": 1},
                             lightgbm.Dataset(X, y, categorical_feature=[0, 3]), 8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = onnxmltools.convert_lightgbm(booster, initial_types=[("input", MLFloat([None, 5]))])
    return m.SerializeToString()


CONVERTED = {
    "skl2onnx GradientBoostingRegressor": lambda: _sklearn("gbr"),
    "skl2onnx GradientBoostingClassifier 2 classes": lambda: _sklearn("gbc2"),
    "skl2onnx GradientBoostingClassifier 3 classes": lambda: _sklearn("gbc3"),
    "skl2onnx RandomForestClassifier 2 classes": lambda: _sklearn("rfc2"),
    "skl2onnx RandomForestClassifier 3 classes": lambda: _sklearn("rfc3"),
    "skl2onnx ExtraTreesRegressor": lambda: _sklearn("etr"),
    "onnxmltools LightGBM regression": lambda: _lightgbm("reg"),
    "onnxmltools LightGBM binary": lambda: _lightgbm("bin"),
    "onnxmltools LightGBM 3 classes": lambda: _lightgbm("three"),
    "onnxmltools XGBoost regression": lambda: _xgboost("reg"),
    "onnxmltools XGBoost binary": lambda: _xgboost("bin"),
    "onnxmltools XGBoost 3 classes": lambda: _xgboost("three"),
    "onnxmltools LightGBM categorical splits": _lightgbm_categorical,
}


def _positive_column(want: np.ndarray, model) -> np.ndarray:
    """ONNX Runtime's scores in quickscorer's layout: a two-class classifier scored as one
    output is the second column."""
    if want.ndim == 2 and want.shape[1] == 2 and model.n_outputs == 1:
        return want[:, 1:]
    return want.reshape(len(want), -1)


@pytest.mark.parametrize("label", list(CONVERTED))
def test_converted_models_give_onnx_runtimes_raw_scores_bit_for_bit(label, tmp_path):
    data = CONVERTED[label]()
    X = _test_rows(data)
    raw_bytes = _with_transform(data, "NONE")
    model = quickscorer.load(data)
    want = _positive_column(_ort_scores(raw_bytes, X), model)
    if model.n_outputs == 1:
        want = want[:, 0]
    _every_algorithm(model, X, want, raw_score=True)
    _every_algorithm(model, X.astype(np.float64), want, raw_score=True)
    assert np.array_equal(reference.predict_raw(model.ensemble, X).astype(np.float32)
                          .reshape(want.shape), want)
    path = tmp_path / "model.onnx"
    path.write_bytes(data)
    from_file = quickscorer.load(path)
    assert np.array_equal(np.asarray(from_file.predict(X, raw_score=True)), want)
    info = model.info()
    assert info["library"] == "onnx" and info["format"] == "onnx"


@pytest.mark.parametrize("label", list(CONVERTED))
def test_converted_models_predictions_are_onnx_runtimes_bit_for_bit(label):
    data = CONVERTED[label]()
    X = _test_rows(data)
    model = quickscorer.load(data)
    want = _positive_column(_ort_scores(data, X), model)
    got = np.asarray(model.predict(X)).reshape(want.shape)
    assert np.isfinite(got).all()
    assert np.array_equal(got, want), (label, _ulps32(got, want))


def test_a_model_object_and_bytes_load_the_same():
    data = CONVERTED["onnxmltools XGBoost regression"]()
    X = _test_rows(data)
    a = quickscorer.load(data)
    b = quickscorer.load(onnx.load_from_string(data))
    c = quickscorer.load(data, format="onnx")
    assert np.array_equal(a.predict(X), b.predict(X))
    assert np.array_equal(a.predict(X), c.predict(X))


def _hand_model(nodes: dict, weights: dict, *, op="TreeEnsembleRegressor", post="NONE",
                base=None, input_type=TensorProto.FLOAT, extra=None, opset=3, n_classes=3):
    attrs = dict(nodes)
    attrs.update(weights)
    attrs["post_transform"] = post
    if base is not None:
        attrs["base_values"] = base
    if op == "TreeEnsembleRegressor":
        attrs.setdefault("n_targets", 1)
        outputs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)]
        out_names = ["Y"]
    elif op == "TreeEnsembleClassifier":
        attrs["classlabels_int64s"] = list(range(n_classes))
        outputs = [helper.make_tensor_value_info("label", TensorProto.INT64, None),
                   helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)]
        out_names = ["label", "Y"]
    else:
        outputs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)]
        out_names = ["Y"]
    attrs.update(extra or {})
    node = helper.make_node(op, ["X"], out_names, domain="ai.onnx.ml", **attrs)
    graph = helper.make_graph([node], "trees",
                              [helper.make_tensor_value_info("X", input_type, [None, 3])],
                              outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19),
                                                    helper.make_opsetid("ai.onnx.ml", opset)])
    model.ir_version = 9
    return model.SerializeToString()


def _two_trees(modes, tracks, values=(0.5, -1.25, 2.0)):
    """Tree 0: node 0 on feature 0, its true child node 1 on feature 1; tree 1: one node on
    feature 2; the given modes, thresholds and NaN tracking for the three tests."""
    return dict(
        nodes_treeids=[0, 0, 0, 0, 0, 1, 1, 1],
        nodes_nodeids=[0, 1, 2, 3, 4, 0, 1, 2],
        nodes_featureids=[0, 1, 0, 0, 0, 2, 0, 0],
        nodes_modes=[modes[0], modes[1], "LEAF", "LEAF", "LEAF", modes[2], "LEAF", "LEAF"],
        nodes_values=[values[0], values[1], 0, 0, 0, values[2], 0, 0],
        nodes_truenodeids=[1, 3, 0, 0, 0, 1, 0, 0],
        nodes_falsenodeids=[2, 4, 0, 0, 0, 2, 0, 0],
        nodes_missing_value_tracks_true=[tracks[0], tracks[1], 0, 0, 0, tracks[2], 0, 0])


_WEIGHTS = dict(target_treeids=[0, 0, 0, 1, 1], target_nodeids=[2, 3, 4, 1, 2],
                target_ids=[0, 0, 0, 0, 0], target_weights=[0.25, -1.5, 3.0, 0.125, -0.75])


def _edge_rows():
    vals = np.float32([0.5, -1.25, 2.0])
    cols = []
    for v in vals:
        cols.append([np.nextafter(v, np.float32(-9)), v, np.nextafter(v, np.float32(9)),
                     np.nan, np.inf, -np.inf])
    grid = np.array(np.meshgrid(*cols, indexing="ij")).reshape(3, -1).T
    return grid.astype(np.float32)


@pytest.mark.parametrize("modes", [("BRANCH_LEQ",) * 3, ("BRANCH_LT",) * 3, ("BRANCH_GT",) * 3,
                                   ("BRANCH_GTE",) * 3, ("BRANCH_LT", "BRANCH_GTE", "BRANCH_GT")])
@pytest.mark.parametrize("tracks", [(0, 0, 0), (1, 1, 1), (1, 0, 1)])
def test_every_comparison_mode_and_nan_side_match_onnx_runtime(modes, tracks):
    data = _hand_model(_two_trees(modes, tracks), _WEIGHTS, base=[0.375])
    X = _edge_rows()
    want = _ort_scores(data, X)[:, 0]
    model = quickscorer.load(data)
    _every_algorithm(model, X, want)
    assert model.ensemble.family == "xgboost"


def _eq_tree(modes, tracks, values, share_true=True):
    """(nodes, weights): node 0 and node 1 of tree 0 test feature 0 against ``values[0]`` and
    ``values[1]`` with the given modes, node 1 being node 0's false child; with ``share_true``
    both lead to leaf 2 when true (a BRANCH_EQ chain, leaves 2 and 3), else node 1 leads to
    leaves 3 and 4; tree 1 tests feature 1 against ``values[2]``."""
    tree0 = 4 if share_true else 5
    leaves0 = tree0 - 2
    nodes = dict(
        nodes_treeids=[0] * tree0 + [1, 1, 1],
        nodes_nodeids=list(range(tree0)) + [0, 1, 2],
        nodes_featureids=[0] * tree0 + [1, 0, 0],
        nodes_modes=[modes[0], modes[1]] + ["LEAF"] * leaves0 + [modes[2], "LEAF", "LEAF"],
        nodes_values=[values[0], values[1]] + [0] * leaves0 + [values[2], 0, 0],
        nodes_truenodeids=[2, 2 if share_true else 3] + [0] * leaves0 + [1, 0, 0],
        nodes_falsenodeids=[1, 3 if share_true else 4] + [0] * leaves0 + [2, 0, 0],
        nodes_missing_value_tracks_true=[tracks[0], tracks[1]] + [0] * leaves0 + [tracks[2], 0,
                                                                                   0])
    w0 = [0.25, -1.5, 3.0][:leaves0]
    weights = dict(target_treeids=[0] * leaves0 + [1, 1],
                   target_nodeids=list(range(2, tree0)) + [1, 2],
                   target_ids=[0] * (leaves0 + 2), target_weights=w0 + [0.125, -0.75])
    return nodes, weights


def _category_rows():
    v = np.float32([-1.0, 0.0, 0.5, 1.0, 2.0, 3.0, 3.5, 7.0, 1e-7])
    v = np.concatenate([v, np.nextafter(v, np.float32(-9)), np.nextafter(v, np.float32(9)),
                        np.float32([np.nan, np.inf, -np.inf])])
    grid = np.array(np.meshgrid(v, v, [0.0], indexing="ij")).reshape(3, -1).T
    return grid.astype(np.float32)


@pytest.mark.parametrize("modes, values, share", [
    (("BRANCH_EQ", "BRANCH_EQ", "BRANCH_EQ"), (3.0, 0.0, 1.0), True),     # a set {3, 0}
    (("BRANCH_EQ", "BRANCH_EQ", "BRANCH_NEQ"), (0.5, -1.0, 2.0), False),  # two tests
    (("BRANCH_NEQ", "BRANCH_EQ", "BRANCH_LEQ"), (7.0, 1e-7, 0.5), True),
    (("BRANCH_EQ", "BRANCH_LT", "BRANCH_EQ"), (1.0, 2.0, 3.5), True),     # shared child, no set
])
@pytest.mark.parametrize("tracks", [(0, 0, 0), (1, 0, 1), (0, 1, 0)])
def test_equality_tests_and_shared_children_match_onnx_runtime(modes, values, share, tracks):
    data = _hand_model(*_eq_tree(modes, tracks, values, share), base=[0.375])
    X = _category_rows()
    want = _ort_scores(data, X)[:, 0]
    model = quickscorer.load(data)
    _every_algorithm(model, X, want)
    assert np.array_equal(reference.predict_raw(model.ensemble, X)[:, 0].astype(np.float32),
                          want)


def _check_v5_against_onnx_runtime(X, modes, splits, n_targets, leaf_targets,
                                   root_mistaken_for_a_leaf=False, **fields):
    """One opset-5 TreeEnsemble (float32 and float64 splits and weights) scored by every
    algorithm as ONNX Runtime scores it; the float64 model is of the plain family."""
    for dtype, tp in ((np.float32, TensorProto.FLOAT), (np.float64, TensorProto.DOUBLE)):
        node = helper.make_node(
            "TreeEnsemble", ["X"], ["Y"], domain="ai.onnx.ml", n_targets=n_targets,
            nodes_modes=helper.make_tensor("m", TensorProto.UINT8, [len(modes)], modes),
            nodes_splits=helper.make_tensor("s", tp, [len(splits)], splits),
            leaf_targetids=leaf_targets,
            leaf_weights=helper.make_tensor("w", tp, [4], [0.25, -1.5, 3.0, 0.125]),
            post_transform=0, aggregate_function=1, **fields)
        data = _v5_model(node, tp, 3)
        Xd = X.astype(dtype)
        want = _ort_scores(data, Xd)
        qs = quickscorer.load(data)
        if root_mistaken_for_a_leaf and ORT_VERSION < (1, 24):
            # before 1.24 ONNX Runtime takes a root whose true child is a branch and whose
            # false child is a leaf of the same index for a leaf (onnxruntime#24679); the
            # reference walks the links, as later releases do
            want = reference.predict_raw(qs.ensemble, Xd).astype(dtype).reshape(want.shape)
        assert qs.ensemble.family == ("plain" if dtype == np.float64 else "xgboost")
        for name in qs.supported_algorithms():
            got = np.asarray(qs.predict(Xd, algorithm=name)).astype(dtype).reshape(want.shape)
            assert np.array_equal(got, want), (dtype, name)


def test_equality_tests_of_opset_5_match_onnx_runtime():
    _check_v5_against_onnx_runtime(
        _category_rows(), [4, 5, 4], [3.0, -1.0, 2.0], 1, [0, 0, 0, 0],
        tree_roots=[0, 2], nodes_featureids=[0, 1, 1],
        nodes_truenodeids=[0, 1, 2], nodes_trueleafs=[1, 1, 1],
        nodes_falsenodeids=[1, 2, 3], nodes_falseleafs=[0, 1, 1],
        nodes_missing_value_tracks_true=[1, 0, 0])


def _member_model(sets, tracks, tp) -> bytes:
    """Two opset-5 trees of BRANCH_MEMBER nodes: tree 0 tests sets[0] on column 0, then
    sets[1] on column 1 on its false side; tree 1 tests sets[2] on column 1."""
    values = [v for run in sets for v in list(run) + [np.nan]]
    node = helper.make_node(
        "TreeEnsemble", ["X"], ["Y"], domain="ai.onnx.ml", n_targets=1, tree_roots=[0, 2],
        nodes_featureids=[0, 1, 1],
        nodes_modes=helper.make_tensor("m", TensorProto.UINT8, [3], [6, 6, 6]),
        nodes_splits=helper.make_tensor("s", tp, [3], [0.0, 0.0, 0.0]),
        nodes_truenodeids=[0, 1, 2], nodes_trueleafs=[1, 1, 1],
        nodes_falsenodeids=[1, 2, 3], nodes_falseleafs=[0, 1, 1],
        nodes_missing_value_tracks_true=list(tracks),
        membership_values=helper.make_tensor("v", tp, [len(values)], values),
        leaf_targetids=[0, 0, 0, 0],
        leaf_weights=helper.make_tensor("w", tp, [4], [0.25, -1.5, 3.0, 0.125]),
        post_transform=0, aggregate_function=1)
    return _v5_model(node, tp, 2)


def _member_rows():
    v = np.float64([-41, -40.5, -40, -3.5, -3, -2.5, -1.5, -1.0000001, -1, -0.5, -0.0, 0, 0.3,
                    1, 1.5, 2, 2.5, 3, 4.99, 5, 5.5, 7, 7.2, 29.9, 30, 30.5, 31, 31.5, 40, 40.9,
                    999.5, 1000, 1000.5, 3e9, -3e9, 2.0 ** 31, np.inf, -np.inf, np.nan])
    v = np.concatenate([v, np.nextafter(v, -np.inf), np.nextafter(v, np.inf)])
    return np.array(np.meshgrid(v, v[::7], indexing="ij")).reshape(2, -1).T


@pytest.mark.parametrize("sets", [
    ([2, 5], [2.5, 7], [0]),                      # sets ONNX Runtime tests by equality
    ([-1], [-1, 2, 7], list(range(31))),          # ... and by the truncated value
    ([0, 31], [-3, 40, 1000], [30, 2, 5]),
])
@pytest.mark.parametrize("tracks", [(0, 0, 0), (1, 0, 1), (0, 1, 1)])
def test_set_membership_matches_onnx_runtime(sets, tracks):
    X = _member_rows()
    for dtype, tp in ((np.float32, TensorProto.FLOAT), (np.float64, TensorProto.DOUBLE)):
        data = _member_model(sets, tracks, tp)
        with np.errstate(over="ignore"):          # float64's extremes are float32's infinities
            Xd = X.astype(dtype)
        want = _ort_scores(data, Xd)
        model = quickscorer.load(data)
        for name in model.supported_algorithms():
            got = np.asarray(model.predict(Xd, algorithm=name)).astype(dtype)
            assert np.array_equal(got.reshape(want.shape), want), (dtype, name)


@pytest.mark.parametrize("sets, match", [
    (([-1, 2.5], [1], [2]), "no integer"),        # ONNX Runtime refuses these sets too
    (([5e7], [1], [2]), "no integer"),             # beyond what is read
])
def test_membership_sets_that_are_not_read_are_refused(sets, match):
    with pytest.raises(ModelFormatError, match=match):
        quickscorer.load(_member_model(sets, (0, 0, 0), TensorProto.FLOAT))


def test_membership_values_that_do_not_match_the_nodes_are_refused():
    data = _member_model(([1], [2], [3]), (0, 0, 0), TensorProto.FLOAT)
    model = onnx.load_from_string(data)
    attr = next(a for a in model.graph.node[0].attribute if a.name == "membership_values")
    attr.t.float_data[:] = [1.0, np.nan, 2.0, np.nan]          # two runs for three nodes
    attr.t.dims[:] = [4]
    with pytest.raises(ModelFormatError, match="2 NaN-closed runs for 3 BRANCH_MEMBER"):
        quickscorer.load(model.SerializeToString())


def _neq_chain(d: int) -> bytes:
    """A tree of d ``x != 1`` tests (features 0, 1, 2 in turn), each leading to the next when
    true and to leaf i + 1 (of value i + 1) when false; the last true leads to value 0."""
    n = 2 * d + 1
    nodes = dict(
        nodes_treeids=[0] * n, nodes_nodeids=list(range(n)),
        nodes_featureids=[i % 3 for i in range(d)] + [0] * (d + 1),
        nodes_modes=["BRANCH_NEQ"] * d + ["LEAF"] * (d + 1),
        nodes_values=[1.0] * d + [0.0] * (d + 1),
        nodes_truenodeids=list(range(1, d + 1)) + [0] * (d + 1),
        nodes_falsenodeids=list(range(d + 1, n)) + [0] * (d + 1),
        nodes_missing_value_tracks_true=[0] * n)
    weights = dict(target_treeids=[0] * (d + 1), target_nodeids=list(range(d, n)),
                   target_ids=[0] * (d + 1), target_weights=[float(i) for i in range(d + 1)])
    return _hand_model(nodes, weights)


def test_equality_tests_that_would_copy_too_much_are_refused():
    """A chain of d ``!=`` tests, each leading to the next when true: written as threshold
    tests each copies the rest of the chain twice (the values below and above its own), so
    the tree takes about 3 x 2^d nodes, past MAX_EXPANDED_NODES from d = 17 on."""
    from quickscorer.importers.onnx import MAX_EXPANDED_NODES
    assert 3 * 2 ** 17 > MAX_EXPANDED_NODES > 3 * 2 ** 14
    with pytest.raises(ModelFormatError, match=f"more than {MAX_EXPANDED_NODES} nodes"):
        quickscorer.load(_neq_chain(17))
    # the same chain 14 tests long is read, and scores as the chain reads
    short = 14
    model = quickscorer.load(_neq_chain(short))

    def chain(row):            # the first test that is false ends the walk; NaN != 1 is true
        for i in range(short):
            if not row[i % 3] != 1.0:
                return i + 1.0
        return 0.0
    X = np.float32([[1, 1, 1], [0, 1, 1], [0, 0, 1], [1, 1, 0], [0, 0, 0], [np.nan, 1, 1],
                    [np.nan, np.nan, np.nan], [0, 0, 1.5]])
    np.testing.assert_array_equal(model.predict(X), [chain(r) for r in X])


def _v5_model(node, tp, n_inputs: int) -> bytes:
    """A model of one opset-5 ``TreeEnsemble`` node reading input X of ``n_inputs`` columns."""
    graph = helper.make_graph([node], "trees",
                              [helper.make_tensor_value_info("X", tp, [None, n_inputs])],
                              [helper.make_tensor_value_info("Y", tp, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21),
                                                    helper.make_opsetid("ai.onnx.ml", 5)])
    model.ir_version = 10
    return model.SerializeToString()


def test_opset_5_tree_ensemble_with_float_and_double_splits():
    _check_v5_against_onnx_runtime(
        _edge_rows(), [0, 3, 1], [0.5, -1.25, 2.0], 2, [0, 1, 0, 1],
        root_mistaken_for_a_leaf=True,
        tree_roots=[0, 2], nodes_featureids=[0, 1, 2],
        nodes_truenodeids=[1, 0, 2], nodes_trueleafs=[0, 1, 1],
        nodes_falsenodeids=[1, 1, 3], nodes_falseleafs=[1, 1, 1],
        nodes_missing_value_tracks_true=[1, 0, 0])


def test_a_trees_nodes_in_any_order_after_its_root_make_the_same_tree():
    nodes = _two_trees(("BRANCH_LT", "BRANCH_GT", "BRANCH_LEQ"), (1, 0, 0))
    X = _edge_rows()
    a = quickscorer.load(_hand_model(nodes, _WEIGHTS))
    shuffled = {k: [v[i] for i in [0, 4, 2, 3, 1, 5, 7, 6]] for k, v in nodes.items()}
    b = quickscorer.load(_hand_model(shuffled, _WEIGHTS))
    assert np.array_equal(b.predict(X), _ort_scores(_hand_model(shuffled, _WEIGHTS), X)[:, 0])
    assert np.array_equal(a.predict_leaf(X, source_ids=True), b.predict_leaf(X, source_ids=True))
    # ONNX Runtime scores a tree whose root is not listed first by something else than its
    # links: refused
    for order in ([4, 2, 0, 3, 1, 5, 6, 7], [0, 1, 5, 2, 3, 4, 6, 7]):
        moved = {k: [v[i] for i in order] for k, v in nodes.items()}
        with pytest.raises(ModelFormatError, match="root"):
            quickscorer.load(_hand_model(moved, _WEIGHTS))


def test_double_thresholds_of_the_older_operator_read_float64():
    nodes = _two_trees(("BRANCH_LEQ",) * 3, (0, 1, 0))
    vals = nodes.pop("nodes_values")
    nodes["nodes_values_as_tensor"] = helper.make_tensor("v", TensorProto.DOUBLE, [8],
                                                         [v + 1e-12 for v in vals])
    w = dict(_WEIGHTS)
    w["target_weights_as_tensor"] = helper.make_tensor("w", TensorProto.DOUBLE, [5],
                                                       w.pop("target_weights"))
    data = _hand_model(nodes, w, input_type=TensorProto.DOUBLE)
    X = np.vstack([_edge_rows().astype(np.float64),
                   _edge_rows().astype(np.float64) + 1e-12])
    want = _ort_scores(data, X)[:, 0]
    model = quickscorer.load(data)
    assert model.ensemble.family == "plain"
    for name in model.supported_algorithms():
        assert np.array_equal(np.asarray(model.predict(X, algorithm=name), np.float32),
                              want), name


def test_double_thresholds_take_each_transform_in_float32_as_onnx_runtime_does():
    """With double thresholds ONNX Runtime sums in float64, returns the float32 value of the
    sums and transforms that in float32: every post-transform, for several targets, three
    classes, one target (PROBIT) and a two-class classifier of one score (LOGISTIC). Our
    float64 outputs hold those float32 values."""
    nodes = _two_trees(("BRANCH_LEQ",) * 3, (0, 1, 0))
    nodes["nodes_values_as_tensor"] = helper.make_tensor(
        "v", TensorProto.DOUBLE, [8], [v + 1e-12 for v in nodes.pop("nodes_values")])
    ids = dict(treeids=[0, 0, 0, 1, 1, 1, 1], nodeids=[2, 3, 4, 1, 2, 1, 2],
               ids=[0, 1, 0, 1, 1, 0, 2])
    weights = [0.05, 0.3, 0.45, 0.125, 0.2, 0.1, 0.0375]
    X = np.vstack([_edge_rows().astype(np.float64), _edge_rows().astype(np.float64) + 1e-12])

    def tensor(prefix, values):
        return {prefix + "weights_as_tensor": helper.make_tensor(
            "w", TensorProto.DOUBLE, [len(values)], values)}

    for post in ("LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT"):
        cases = [
            (dict({"target_" + k: v for k, v in ids.items()}, **tensor("target_", weights)),
             "TreeEnsembleRegressor", {"n_targets": 3}),
            (dict({"class_" + k: v for k, v in ids.items()}, **tensor("class_", weights)),
             "TreeEnsembleClassifier", {})]
        if post == "PROBIT":        # one target: ONNX Runtime applies PROBIT only
            one = {k: v for k, v in _WEIGHTS.items() if k != "target_weights"}
            cases.append((dict(one, **tensor("target_", [0.05, 0.3, 0.45, 0.125, 0.2])),
                          "TreeEnsembleRegressor", {}))
        for w, op, extra in cases:
            data = _hand_model(nodes, w, op=op, post=post, input_type=TensorProto.DOUBLE,
                               extra=extra)
            want = _ort_scores(data, X)
            model = quickscorer.load(data)
            assert model.ensemble.family == "plain"
            for name in model.supported_algorithms():
                got = np.asarray(model.predict(X, algorithm=name)).reshape(want.shape)
                assert np.array_equal(got.astype(np.float32), want, equal_nan=True), (
                    post, op, name)
    binary = dict(class_treeids=[0, 0, 0, 1, 1], class_nodeids=[2, 3, 4, 1, 2],
                  class_ids=[0] * 5, **tensor("class_", [0.25, -1.5, 3.0, 0.125, -0.75]))
    data = _hand_model(nodes, binary, op="TreeEnsembleClassifier", post="LOGISTIC",
                       n_classes=2, input_type=TensorProto.DOUBLE)
    want = _ort_scores(data, X)[:, 1]
    assert np.array_equal(np.asarray(quickscorer.load(data).predict(X), np.float32), want)


def test_multiclass_softmax_and_logistic_and_two_class_rules():
    nodes = _two_trees(("BRANCH_LEQ",) * 3, (0, 0, 0))
    weights = dict(class_treeids=[0, 0, 0, 1, 1, 0], class_nodeids=[2, 3, 4, 1, 2, 2],
                   class_ids=[0, 1, 2, 2, 0, 1], class_weights=[0.25, -1.5, 3.0, 0.125, -0.75,
                                                                0.5])
    X = _edge_rows()
    for post in ("NONE", "SOFTMAX", "LOGISTIC"):
        data = _hand_model(nodes, weights, op="TreeEnsembleClassifier", post=post,
                           base=[0.1, -0.2, 0.3])
        want = _ort_scores(data, X)
        got = np.asarray(quickscorer.load(data).predict(X))
        assert _ulps32(got, want) == 0, post
    # two classes, weights for both: two outputs where every row gets a weight for the
    # second class; otherwise, or with base values, ONNX Runtime's scores are not the sums
    # (a row without a second-class weight is scored [-s, s]): refused
    both = dict(class_treeids=[0, 0, 0, 0, 1, 1, 1], class_nodeids=[2, 3, 4, 4, 1, 2, 2],
                class_ids=[1, 1, 0, 1, 1, 0, 1],
                class_weights=[0.25, -1.5, 3.0, 0.5, 0.125, -0.75, 0.5])
    for post in ("NONE", "SOFTMAX", "LOGISTIC"):
        data = _hand_model(nodes, both, op="TreeEnsembleClassifier", post=post, n_classes=2)
        want = _ort_scores(data, X)
        got = np.asarray(quickscorer.load(data).predict(X))
        assert got.shape == want.shape and _ulps32(got, want) == 0, post
    with pytest.raises(ModelFormatError, match="base values"):
        quickscorer.load(_hand_model(nodes, both, op="TreeEnsembleClassifier", n_classes=2,
                                     base=[0.1, -0.2]))
    with pytest.raises(ModelFormatError, match="no weight for the second class"):
        quickscorer.load(_hand_model(nodes, dict(both, class_ids=[1, 0, 0, 1, 0, 0, 1]),
                                     op="TreeEnsembleClassifier", n_classes=2))
    # two classes, weights for one of them: one output, ONNX Runtime's second column
    binary = dict(class_treeids=[0, 0, 0, 1, 1], class_nodeids=[2, 3, 4, 1, 2],
                  class_ids=[0] * 5, class_weights=[0.25, -1.5, 3.0, 0.125, -0.75])
    positive = dict(binary, class_weights=[0.25, 0.5, 0.0, 0.125, 0.75])
    for w in (binary, positive):
        for post in ("NONE", "LOGISTIC", "SOFTMAX"):
            data = _hand_model(nodes, w, op="TreeEnsembleClassifier", post=post, base=[0.25],
                               n_classes=2)
            want = _ort_scores(data, X)[:, 1]
            model = quickscorer.load(data)
            assert model.n_outputs == 1
            if w is positive and post == "LOGISTIC" and ORT_VERSION < (1, 26):
                # before 1.26 ONNX Runtime leaves out the sigmoid where every weight is
                # non-negative (onnxruntime#27533); quickscorer applies it, as 1.26 does
                assert _ulps32(model.predict(X, raw_score=True), want) == 0
                continue
            assert _ulps32(model.predict(X), want) == 0, (post, w is positive)


def test_probit_and_softmax_zero_are_onnx_runtimes_bit_for_bit():
    """PROBIT (Winitzki's erfinv in float32, applied even to one target) and SOFTMAX_ZERO (a
    score within 1e-7 of zero scaled by exp(-max) and left out of the sum) on a random
    forest's class probabilities (in [0, 1]: PROBIT's domain), on hand-made targets with
    zero, tiny and out-of-domain scores, every algorithm."""
    data = _sklearn("rfc3")
    X = _test_rows(data)
    for post in ("PROBIT", "SOFTMAX_ZERO"):
        changed = _with_transform(data, post)
        want = _ort_scores(changed, X)
        model = quickscorer.load(changed)
        assert model.ensemble.transform == {"PROBIT": "onnx_probit",
                                            "SOFTMAX_ZERO": "onnx_softmax_zero"}[post]
        assert np.isfinite(want).mean() > 0.5 and len(np.unique(want)) > 20
        _every_algorithm(model, X, want)
    # target 1: no weight on some rows (0.0), a weight of 5e-8 (within 1e-7) on others
    nodes = _two_trees(("BRANCH_LEQ",) * 3, (0, 1, 0))
    weights = dict(target_treeids=[0, 0, 0, 1, 1, 1], target_nodeids=[2, 3, 4, 1, 2, 1],
                   target_ids=[0, 1, 0, 0, 0, 2],
                   target_weights=[0.25, 5e-8, 0.875, 0.125, -0.0625, 0.5])
    X = _edge_rows()
    for post in ("PROBIT", "SOFTMAX_ZERO"):
        for extra in ({"n_targets": 3}, {"n_targets": 1}):
            w = weights if extra["n_targets"] == 3 else _WEIGHTS
            data = _hand_model(nodes, w, post=post, extra=extra)
            want = _ort_scores(data, X)
            if extra["n_targets"] == 1:
                want = want[:, 0]
            _every_algorithm(quickscorer.load(data), X, want)
    classes = dict(class_treeids=weights["target_treeids"],
                   class_nodeids=weights["target_nodeids"], class_ids=weights["target_ids"],
                   class_weights=weights["target_weights"])
    for post in ("PROBIT", "SOFTMAX_ZERO"):
        data = _hand_model(nodes, classes, op="TreeEnsembleClassifier", post=post)
        _every_algorithm(quickscorer.load(data), X, _ort_scores(data, X))
    # one score of a two-class classifier: ONNX Runtime writes one column under PROBIT
    binary = dict(class_treeids=[0, 0, 0, 1, 1], class_nodeids=[2, 3, 4, 1, 2],
                  class_ids=[0] * 5, class_weights=[0.25, 0.5, 0.0, 0.125, 0.75])
    with pytest.raises(ModelFormatError, match="PROBIT"):
        quickscorer.load(_hand_model(nodes, binary, op="TreeEnsembleClassifier", post="PROBIT",
                                     n_classes=2))


def test_a_one_target_regressor_ignores_its_transform_as_onnx_runtime_does():
    data = _hand_model(_two_trees(("BRANCH_LEQ",) * 3, (0, 0, 0)), _WEIGHTS, post="LOGISTIC")
    X = _edge_rows()
    want = _ort_scores(data, X)[:, 0]
    assert np.array_equal(quickscorer.load(data).predict(X), want)


def test_several_targets_take_their_transform_across_the_targets():
    # every leaf of tree 1 holds both targets, so every row gets a weight for each
    weights = dict(target_treeids=[0, 0, 0, 1, 1, 1, 1], target_nodeids=[2, 3, 4, 1, 2, 1, 2],
                   target_ids=[0, 1, 0, 1, 1, 0, 0],
                   target_weights=[0.25, -1.5, 3.0, 0.125, -0.75, 0.5, 0.375])
    X = _edge_rows()
    for post in ("NONE", "LOGISTIC", "SOFTMAX"):
        data = _hand_model(_two_trees(("BRANCH_LEQ",) * 3, (0, 1, 0)), weights, post=post,
                           base=[0.5, -0.25], extra={"n_targets": 2})
        want = _ort_scores(data, X)
        got = np.asarray(quickscorer.load(data).predict(X))
        assert got.shape == want.shape == (len(X), 2)
        assert _ulps32(got, want) == 0, post
    # a row without a weight for target 0 gets no base value from ONNX Runtime: refused
    with pytest.raises(ModelFormatError, match="target 0 has a base value"):
        quickscorer.load(_hand_model(_two_trees(("BRANCH_LEQ",) * 3, (0, 1, 0)),
                                     dict(_WEIGHTS, target_ids=[0, 1, 0, 1, 1]),
                                     base=[0.5, -0.25], extra={"n_targets": 2}))


def test_base_values_are_added_after_the_trees():
    # 2**-24 is lost when added to 1.0 first, kept when the trees' small values come first
    nodes = dict(nodes_treeids=[0, 1], nodes_nodeids=[0, 0], nodes_featureids=[0, 0],
                 nodes_modes=["LEAF", "LEAF"], nodes_values=[0.0, 0.0],
                 nodes_truenodeids=[0, 0], nodes_falsenodeids=[0, 0])
    w = dict(target_treeids=[0, 1], target_nodeids=[0, 0], target_ids=[0, 0],
             target_weights=[2.0 ** -24, 2.0 ** -24])
    data = _hand_model(nodes, w, base=[1.0])
    X = np.zeros((2, 3), np.float32)
    want = _ort_scores(data, X)[:, 0]
    assert want[0] == np.float32(1.0) + np.float32(2.0 ** -23)
    assert np.array_equal(quickscorer.load(data).predict(X), want)


@pytest.mark.parametrize("change, message", [
    (dict(nodes_modes=["BRANCH_LIKE", "BRANCH_LEQ", "LEAF", "LEAF", "LEAF", "BRANCH_LEQ", "LEAF",
                       "LEAF"]), "unknown mode"),
    (dict(aggregate_function="AVERAGE"), "AVERAGE"),
    (dict(nodes_truenodeids=[1, 3, 0, 0, 0, 7, 0, 0]), "not a node of the tree"),
    (dict(nodes_truenodeids=[1, 1, 0, 0, 0, 1, 0, 0]), "tree 0"),
    (dict(target_nodeids=[2, 3, 4, 1, 0]), "not a leaf"),
    (dict(target_ids=[0, 0, 0, 0, 3]), "target id"),
    (dict(nodes_featureids=[0, 1, 0, 0, 0, 7, 0, 0]), "feature 7"),
    (dict(nodes_values=[0.5, -1.25, 0, 0, 0, float("nan"), 0, 0]), "nan is not finite"),
    (dict(nodes_nodeids=[0, 1, 2, 3, 4, 0, 1]), "entries"),
])
def test_malformed_ensembles_are_refused_naming_the_problem(change, message):
    nodes = _two_trees(("BRANCH_LEQ",) * 3, (0, 0, 0))
    weights = dict(_WEIGHTS)
    extra = {}
    for k, v in change.items():
        if k in nodes:
            nodes[k] = v
        elif k in weights:
            weights[k] = v
        else:
            extra[k] = v
    data = _hand_model(nodes, weights, extra=extra)
    with pytest.raises(ModelFormatError, match=message):
        quickscorer.load(data)


def test_a_graph_that_computes_on_the_scores_is_refused():
    model = onnx.load_from_string(_hand_model(_two_trees(("BRANCH_LEQ",) * 3, (0, 0, 0)),
                                              _WEIGHTS))
    model.graph.node[0].output[0] = "raw"
    model.graph.node.append(helper.make_node("Sigmoid", ["raw"], ["Y"]))
    with pytest.raises(ModelFormatError, match="Sigmoid"):
        quickscorer.load(model.SerializeToString())


def test_a_graph_that_computes_before_the_trees_is_refused():
    model = onnx.load_from_string(_hand_model(_two_trees(("BRANCH_LEQ",) * 3, (0, 0, 0)),
                                              _WEIGHTS))
    model.graph.node[0].input[0] = "scaled"
    model.graph.node.insert(0, helper.make_node("Abs", ["X"], ["scaled"]))
    with pytest.raises(ModelFormatError, match="Abs"):
        quickscorer.load(model.SerializeToString())


def test_damaged_onnx_bytes_give_a_model_format_error():
    data = CONVERTED["skl2onnx GradientBoostingRegressor"]()
    rng = np.random.default_rng(3)
    for cut in sorted(rng.choice(len(data), 40, replace=False)):
        with pytest.raises((ModelFormatError, ValueError)):
            quickscorer.load(data[:cut], format="onnx")
    for _ in range(60):
        bad = bytearray(data)
        for i in rng.choice(len(bad), 4, replace=False):
            bad[i] = rng.integers(256)
        try:
            model = quickscorer.load(bytes(bad), format="onnx")
        except (ModelFormatError, ValueError):
            continue
        assert np.isfinite(model.predict(np.zeros((3, 5), np.float32))).all()


def test_the_protobuf_reader_reads_packed_and_unpacked_numbers():
    t = helper.make_tensor("t", TensorProto.INT64, [4], [1, -2, 3, 1 << 40])
    attr = helper.make_attribute("a", [5, -7, 1 << 33])
    for message in (t, ):
        buf = message.SerializeToString()
        assert protobuf.tensor(buf, 0, len(buf)).tolist() == [1, -2, 3, 1 << 40]
    buf = attr.SerializeToString()
    name, value = protobuf.attribute(buf, 0, len(buf))
    assert name == "a" and value.tolist() == [5, -7, 1 << 33]
    raw = helper.make_tensor("r", TensorProto.DOUBLE, [2, 2], np.arange(4.0).tobytes(),
                             raw=True).SerializeToString()
    assert protobuf.tensor(raw, 0, len(raw)).tolist() == [[0.0, 1.0], [2.0, 3.0]]
    # field 8 (ints) under a two-byte key, then the usual one-byte key: read, and no stall
    odd = bytes([0x0A, 0x01, 0x61, 0xC0, 0x00, 0x05, 0x40, 0x06, 0xA0, 0x01, 0x07])
    assert [int(v) for v in protobuf.attribute(odd, 0, len(odd))[1]] == [5, 6]
    packed = bytes([0x3A, 0x03, 0x05, 0x79, 0x01])   # field 7 packed varints 5, 121, 1
    got = protobuf._Repeated("varint")
    for _num, wire, v in protobuf.fields(packed, 0, len(packed)):
        got.add(packed, wire, v)
    assert got.array().tolist() == [5, 121, 1]
