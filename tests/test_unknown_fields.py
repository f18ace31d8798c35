"""A field that can change a score and that an importer does not know is refused by name, for
every source format: real models written by LightGBM, XGBoost, CatBoost and the ONNX
converters, with one unknown field injected at each place where scores are decided. The
untouched models load (the same checks on what their libraries write today)."""
from __future__ import annotations

import copy
import json
import re
import struct

import numpy as np
import pytest

import quickscorer
from quickscorer.errors import ModelFormatError
from quickscorer.importers import flatbuffers
from quickscorer.importers.lightgbm import parse_fast, parse_reference


def _rows(seed=0, n=300, m=5):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, m))
    y = X[:, 0] - 0.5 * X[:, 1] + (X[:, 2] > 0)
    return X, y


# --------------------------------------------------------------------------------------------
# XGBoost

def _xgb_doc(**params):
    xgb = pytest.importorskip("xgboost", reason="the test extra installs xgboost-cpu")
    X, y = _rows()
    y = (y > 0).astype(float) if params.get("objective") == "binary:logistic" else y
    booster = xgb.train(dict(max_depth=3, nthread=1, **params), xgb.DMatrix(X, label=y), 4)
    return json.loads(booster.save_raw("json")), xgb.__version__


def _places(doc):
    """(label, the object at each place a scoring field may be) of an XGBoost document."""
    learner = doc["learner"]
    gb = learner["gradient_booster"]
    model = gb["model"] if "model" in gb else gb["gbtree"]["model"]
    tree = model["trees"][1]
    return [("root", doc), ("learner", learner),
            ("learner_model_param", learner["learner_model_param"]),
            ("objective", learner["objective"]), ("gradient_booster", gb), ("model", model),
            ("gbtree_model_param", model["gbtree_model_param"]), ("tree", tree),
            ("tree_param", tree["tree_param"])]


@pytest.mark.parametrize("place", ["root", "learner", "learner_model_param", "objective",
                                   "gradient_booster", "model", "gbtree_model_param", "tree",
                                   "tree_param"])
def test_xgboost_unknown_field_is_refused_by_name(place):
    doc, version = _xgb_doc(objective="binary:logistic")
    quickscorer.load(copy.deepcopy(doc))              # as written: loads
    injected = copy.deepcopy(doc)
    dict(_places(injected))[place]["leaf_scale_factor"] = "2"
    # the document path, and the JSON text through the C parser
    for source in (injected, json.dumps(injected).encode()):
        with pytest.raises(ModelFormatError,
                           match=rf"written by XGBoost {version}.*'[\w.\[\]]*leaf_scale_factor'"):
            quickscorer.load(source)


def test_xgboost_unknown_field_in_the_category_encodings_is_refused():
    doc, _ = _xgb_doc(objective="reg:squarederror")
    model = doc["learner"]["gradient_booster"]["model"]
    if "cats" not in model:
        pytest.skip("this XGBoost release writes no model.cats (3.1 and later do)")
    model["cats"]["recode_policy"] = "first"
    with pytest.raises(ModelFormatError, match="recode_policy"):
        quickscorer.load(doc)


# --------------------------------------------------------------------------------------------
# LightGBM

def _lgb_text(**params):
    lgb = pytest.importorskip("lightgbm", reason="the test extra installs lightgbm")
    X, y = _rows(1)
    booster = lgb.train(dict(num_leaves=6, verbose=-1, **params), lgb.Dataset(X, y), 3)
    return booster.model_to_string(), lgb.__version__


@pytest.mark.parametrize("where, line", [
    ("header", "leaf_scale_factor=2"),
    ("header", "use_quantized_leaves"),
    ("tree", "leaf_scale_factor=2"),
])
def test_lightgbm_unknown_field_is_refused_by_name(where, line):
    text, _ = _lgb_text(objective="regression")
    version = re.search(r"\nversion=(\S+)", text).group(1)     # the format's version
    assert parse_fast(text) is not None and parse_reference(text) is not None
    if where == "header":
        head, rest = text.split("\nnum_class=", 1)
        injected = f"{head}\n{line}\nnum_class={rest}"
    else:
        head, rest = text.split("\nTree=1\n", 1)
        injected = f"{head}\nTree=1\n{line}\n{rest}"
    word = line.split("=")[0]
    assert parse_fast(injected) is None           # the C parser declines; the reference names
    message = rf"LightGBM model \(format {version}\).*'{word}'"
    for parse in (parse_reference, quickscorer.load):
        with pytest.raises(ModelFormatError, match=message):
            parse(injected)


# --------------------------------------------------------------------------------------------
# CatBoost

def _cb_doc(tmp_path, **params):
    cb = pytest.importorskip("catboost", reason="the test extra installs catboost")
    X, y = _rows(2)
    model = cb.CatBoostRegressor(iterations=4, depth=3, verbose=0, random_seed=1,
                                 thread_count=1, **params)
    model.fit(X, y)
    path = tmp_path / "m.json"
    model.save_model(str(path), format="json")
    model.save_model(str(tmp_path / "m.cbm"))
    return json.loads(path.read_text()), cb.__version__


@pytest.mark.parametrize("place", ["model", "features_info", "float_feature", "tree", "split"])
def test_catboost_unknown_field_is_refused_by_name(place, tmp_path):
    doc, version = _cb_doc(tmp_path)
    quickscorer.load(json.dumps(doc).encode())
    target = {"model": doc, "features_info": doc["features_info"],
              "float_feature": doc["features_info"]["float_features"][0],
              "tree": doc["oblivious_trees"][0],
              "split": doc["oblivious_trees"][0]["splits"][0]}[place]
    target["leaf_scale_factor"] = 2
    with pytest.raises(ModelFormatError, match=rf"CatBoost {version}.*'leaf_scale_factor'"):
        quickscorer.load(json.dumps(doc).encode())


def test_catboost_unknown_field_of_a_non_symmetric_node_is_refused(tmp_path):
    doc, _ = _cb_doc(tmp_path, grow_policy="Depthwise")
    node = doc["trees"][0]
    while "split" in node:
        node = node["left"]
    node["leaf_scale_factor"] = 2
    with pytest.raises(ModelFormatError, match="'leaf_scale_factor' of a node of trees"):
        quickscorer.load(json.dumps(doc).encode())


def _flat_table(n_slots: int, present: list[int]) -> bytes:
    """A FlatBuffers buffer whose root table has ``n_slots`` slots, ``present`` of them set
    (each to a uint32 0)."""
    vt_size = 4 + 2 * n_slots
    table_size = 4 + 4 * len(present)
    vtable = [vt_size, table_size] + [4 + 4 * present.index(s) if s in present else 0
                                      for s in range(n_slots)]
    vt = struct.pack(f"<{len(vtable)}H", *vtable)
    root_at = 4 + len(vt)
    table = struct.pack("<i", root_at - 4) + b"\0" * (4 * len(present))
    return struct.pack("<I", root_at) + vt + table


def test_cbm_tables_refuse_a_field_past_the_schema(tmp_path):
    _cb_doc(tmp_path)
    quickscorer.load(tmp_path / "m.cbm")          # what CatBoost writes today: no such field
    known = flatbuffers.root(_flat_table(4, [0, 2]), "a table")
    known.refuse_unknown_slots(3, "CatBoost 9.9")
    beyond = flatbuffers.root(_flat_table(6, [0, 5]), "a table")
    with pytest.raises(ModelFormatError, match=r"a table \(written by CatBoost 9.9\) holds "
                                               r"field 5"):
        beyond.refuse_unknown_slots(4, "CatBoost 9.9")
    # an absent field past the schema is no field
    flatbuffers.root(_flat_table(6, [0, 1]), "a table").refuse_unknown_slots(4, "CatBoost 9.9")


# --------------------------------------------------------------------------------------------
# ONNX

def test_onnx_unknown_attribute_is_refused_by_name():
    onnx = pytest.importorskip("onnx", reason="the test extra installs onnx")
    skl2onnx = pytest.importorskip("skl2onnx", reason="the test extra installs skl2onnx")
    from onnx import helper
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.ensemble import GradientBoostingRegressor

    X, y = _rows(3)
    est = GradientBoostingRegressor(n_estimators=3, max_depth=2).fit(X, y)
    proto = skl2onnx.convert_sklearn(est, initial_types=[("X", FloatTensorType([None, 5]))])
    quickscorer.load(proto.SerializeToString())
    node = next(n for n in proto.graph.node if n.op_type.startswith("TreeEnsemble"))
    node.attribute.append(helper.make_attribute("leaf_scale_factor", 2.0))
    with pytest.raises(ModelFormatError,
                       match=rf"{node.op_type} \(ai.onnx.ml opset \d+\).*'leaf_scale_factor'"):
        quickscorer.load(onnx.ModelProto.FromString(proto.SerializeToString()))


# --------------------------------------------------------------------------------------------
# the training DataFrame's categories, recorded in the model: LightGBM's pandas_categorical,
# XGBoost's model.cats (3.1 and later)

def _category_frames(pd, seed=0, n=400, colours=("red", "green", "blue", "élan")):
    rng = np.random.default_rng(seed)
    train = pd.DataFrame({
        "colour": pd.Categorical(rng.choice(list(colours), n)),
        "x": rng.normal(size=n),
        "size": pd.Categorical(rng.choice([10, 20, 30], n)),
    })
    y = ((train.colour == "green") * 2.0 + train.x + (train["size"] == 20)).to_numpy()
    # the same values with the categories in another order, a missing value, and (for the
    # libraries that read it as missing) a category the training never saw
    test = train.head(60).copy()
    test["colour"] = pd.Categorical(test.colour.astype(str), categories=list(colours)[::-1])
    test["size"] = pd.Categorical(test["size"].astype(int), categories=[30, 20, 10])
    test.loc[3, "colour"] = np.nan
    return train, y, test


def test_lightgbm_pandas_categorical_recodes_a_dataframe_as_lightgbm_does(tmp_path):
    lgb = pytest.importorskip("lightgbm", reason="the test extra installs lightgbm")
    pd = pytest.importorskip("pandas", reason="the test extra installs pandas")
    train, y, test = _category_frames(pd)
    booster = lgb.train(dict(num_leaves=8, verbose=-1, min_data_per_group=5, cat_smooth=1),
                        lgb.Dataset(train, y), 8)
    path = tmp_path / "m.txt"
    booster.save_model(str(path))
    model = quickscorer.load(path)
    assert model.ensemble.pandas_categorical is not None
    unseen = test.copy()
    unseen["colour"] = pd.Categorical(["mauve"] + ["red"] * (len(test) - 1))
    for frame in (train.head(80), test, unseen):
        want = lgb.Booster(model_file=str(path)).predict(frame, raw_score=True)
        np.testing.assert_array_equal(model.predict(frame, raw_score=True), want)
    with pytest.raises(quickscorer.InputError, match="categorical columns"):
        model.predict(test.drop(columns=["size"]))


@pytest.mark.parametrize("colours", [("red", "green", "blue", "teal"),
                                     ("red", "green", "blue", "élan")])
def test_xgboost_cats_recode_a_dataframe_as_xgboost_does(colours, tmp_path):
    """Texts beyond ASCII are in the file as themselves from XGBoost 3.4 on; an earlier
    release's file does not hold them (it cuts the UTF-8 bytes at character counts), and a
    DataFrame's column of them is refused by name."""
    xgb = pytest.importorskip("xgboost", reason="the test extra installs xgboost-cpu")
    pd = pytest.importorskip("pandas", reason="the test extra installs pandas")
    version = tuple(int(p) for p in xgb.__version__.split(".")[:2])
    if version < (3, 1):
        pytest.skip(f"XGBoost {xgb.__version__} records no categories (3.1 and later do)")
    train, y, test = _category_frames(pd, colours=colours)
    booster = xgb.train(dict(max_depth=3, nthread=1, max_cat_to_onehot=1),
                        xgb.DMatrix(train, label=y, enable_categorical=True), 8)
    for fmt in ("json", "ubj"):
        path = tmp_path / f"m.{fmt}"
        booster.save_model(str(path))
        model = quickscorer.load(path)
        assert model.ensemble.category_recoding is not None
        if version < (3, 4) and not all(c.isascii() for c in colours):
            assert model.ensemble.category_recoding[0] is None
            with pytest.raises(quickscorer.InputError, match="does not hold its categories' "
                                                             "texts as themselves"):
                model.predict(test)
            codes = test.assign(colour=test.colour.cat.set_categories(
                train.colour.cat.categories).cat.codes.replace(-1, np.nan).astype(float),
                size=test["size"].cat.set_categories(train["size"].cat.categories).cat.codes)
            want = booster.predict(xgb.DMatrix(test, enable_categorical=True),
                                   output_margin=True)
            np.testing.assert_array_equal(model.predict(codes.to_numpy(float), raw_score=True),
                                          want)
            continue
        for frame in (train.head(80), test):
            want = booster.predict(xgb.DMatrix(frame, enable_categorical=True),
                                   output_margin=True)
            np.testing.assert_array_equal(model.predict(frame, raw_score=True), want)
        unseen = test.copy()
        unseen["colour"] = pd.Categorical(["mauve"] + ["red"] * (len(test) - 1))
        if version < (3, 3):            # a category not trained with keeps the column's code
            want = booster.predict(xgb.DMatrix(unseen, enable_categorical=True),
                                   output_margin=True)
            np.testing.assert_array_equal(model.predict(unseen, raw_score=True), want)
            continue
        with pytest.raises(Exception, match="not in the training set"):
            booster.predict(xgb.DMatrix(unseen, enable_categorical=True))
        with pytest.raises(quickscorer.InputError, match="'mauve', which the model was not "
                                                         "trained with"):
            model.predict(unseen)
