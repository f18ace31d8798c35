"""The XGBoost importer against the real xgboost: bit-exact margins and exit leaves, every
source form (JSON, UBJSON, Booster, dict), old model layouts, and damaged models."""
from __future__ import annotations

import copy
import functools
import json
import zlib

import numpy as np
import pytest
from conftest import DAMAGES, damaged, scoring_algorithms
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import quickscorer
from quickscorer.errors import ModelFormatError
from quickscorer.importers.ubjson import decode_ubjson
from quickscorer.importers.xgboost import load_xgboost, looks_like_xgboost

xgb = pytest.importorskip("xgboost", reason="the test extra installs xgboost-cpu")
_XGB_VERSION = tuple(int(p) for p in xgb.__version__.split(".")[:2])


def _data(rng, n=500, m=6):
    X = rng.normal(size=(n, m))
    X[rng.random(X.shape) < 0.08] = np.nan
    latent = np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 1]) * 0.7 + 0.3 * np.nan_to_num(X[:, 2])
    return X, latent


def _categorical_data(rng, n=600):
    X = rng.normal(size=(n, 4))
    X[:, 0] = rng.integers(0, 12, n)           # a categorical feature of 12 categories
    X[:, 3] = rng.integers(0, 5, n)            # and one of 5
    X[rng.random(X.shape) < 0.05] = np.nan
    effect = np.array([2, -1, 0, 3, -2, 1, 0, -3, 2, 1, -1, 0], float)
    latent = np.where(np.isnan(X[:, 0]), 0, effect[np.nan_to_num(X[:, 0]).astype(int)])
    latent += np.nan_to_num(X[:, 1]) + (np.nan_to_num(X[:, 3]) == 2)
    return X, latent


CASES = {
    "reg:squarederror": dict(objective="reg:squarederror"),
    "binary:logistic": dict(objective="binary:logistic"),
    "multi:softprob": dict(objective="multi:softprob", num_class=4),
    "rank:ndcg": dict(objective="rank:ndcg"),
    "count:poisson": dict(objective="count:poisson"),
    "dart": dict(objective="binary:logistic", booster="dart", rate_drop=0.3, skip_drop=0.0,
                 normalize_type="forest"),
    # DART as XGBoost 3.3 and later train it: the tree booster with dropout (earlier releases
    # take no dropout from these parameters and train a plain gbtree)
    "dropout": dict(objective="binary:logistic", rate_drop=0.3, skip_drop=0.0,
                    normalize_type="tree"),
    "categorical": dict(objective="reg:squarederror", max_cat_to_onehot=1),
    "categorical_onehot": dict(objective="reg:squarederror", max_cat_to_onehot=16),
    "multi_target": dict(objective="reg:squarederror", multi_strategy="one_output_per_tree"),
    "single_leaf": dict(objective="reg:squarederror", gamma=1e12),
    "deep": dict(objective="reg:squarederror", max_depth=0, max_leaves=200,
                 grow_policy="lossguide", min_child_weight=0),
    "random_forest": dict(objective="reg:squarederror", num_parallel_tree=4, subsample=0.7,
                          colsample_bynode=0.7),
}


def _label(name, latent, rng):
    if name in ("binary:logistic", "dart", "dropout"):
        return (latent > 0).astype(float)
    if name == "multi:softprob":
        return np.digitize(latent, [-1, 0, 1]).astype(float)
    if name == "rank:ndcg":
        return np.digitize(latent, [-1, 0, 1, 2]).astype(float)
    if name == "count:poisson":
        return rng.poisson(np.exp(np.clip(latent, -2, 2))).astype(float)
    if name == "multi_target":
        return np.c_[latent, latent ** 2 - 1, -latent]
    return latent


@functools.cache
def _trained(name):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    categorical = name.startswith("categorical")
    X, latent = _categorical_data(rng) if categorical else _data(rng)
    y = _label(name, latent, rng)
    kw = {}
    if categorical:
        kw = dict(feature_types=["c", "q", "q", "c"], enable_categorical=True)
    dtrain = xgb.DMatrix(X, label=y, missing=np.nan, **kw)
    if name == "rank:ndcg":
        dtrain.set_group([100] * 5)
    params = dict(max_depth=4, eta=0.3, nthread=1, seed=3, tree_method="hist")
    params.update(CASES[name])
    booster = xgb.train(params, dtrain,
                        num_boost_round=25 if name in ("dart", "dropout") else 10)
    return booster, X, kw


def _probe_rows(ens, X, seed, categorical=()):
    """Training rows, plus rows holding every threshold, its float32 neighbours, NaN, huge,
    and for categorical features categories inside, outside and beyond the sets, negative,
    fractional and NaN."""
    rng = np.random.default_rng(seed)
    rows = [X[:80]]
    thr = {}
    for tree in ens.trees:
        for n in range(tree.n_internal):
            if not tree.is_categorical[n]:
                # the IR threshold is nextafterf(split, -inf); the split itself is one up
                t = np.float32(tree.threshold[n])
                up = np.nextafter(t, np.float32(np.inf))
                thr.setdefault(int(tree.feature[n]), set()).update(
                    {float(t), float(up), float(np.nextafter(up, np.float32(np.inf)))})
    for j, values in thr.items():
        block = X[rng.integers(len(X), size=len(values))].copy()
        block[:, j] = sorted(values)
        rows.append(block)
    special = X[rng.integers(len(X), size=40)].copy()
    special[rng.random(special.shape) < 0.3] = np.nan
    special[:5] = 3e38          # xgboost refuses inf input; the largest float32 values instead
    special[5:10] = -3e38
    special[10:15] = 0.0
    special[15:20] = -0.0
    rows.append(special)
    for j in categorical:
        block = X[rng.integers(len(X), size=16)].copy()
        block[:, j] = [0, 1, 5, 11, 12, 40, 2**24, 2**24 + 1, -1, -0.5, 0.5, 2.7, np.nan, 3.999,
                       1e10, -1e30]
        rows.append(block)
    return np.vstack(rows)


def _assert_exact(model, booster, rows, kw):
    dm = xgb.DMatrix(rows, missing=np.nan, **kw)
    want = booster.predict(dm, output_margin=True)
    want_out = booster.predict(dm)
    want_leaf = booster.predict(dm, pred_leaf=True).astype(np.int32)
    want_leaf = want_leaf.reshape(len(rows), -1)
    for alg in scoring_algorithms(model):
        got = model.predict(rows, raw_score=True, algorithm=alg)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, want, err_msg=alg)
        np.testing.assert_array_equal(model.predict(rows, algorithm=alg), want_out, err_msg=alg)
        np.testing.assert_array_equal(model.predict_leaf(rows, source_ids=True, algorithm=alg),
                                      want_leaf, err_msg=alg)


@pytest.mark.parametrize("fmt", ["json", "ubj", "booster", "dict"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_scores_and_leaves_are_exact(name, fmt, tmp_path):
    booster, X, kw = _trained(name)
    if fmt == "booster":
        source = booster
    elif fmt == "dict":
        source = json.loads(booster.save_raw("json"))
    else:
        source = tmp_path / f"model.{fmt}"
        booster.save_model(str(source))
    model = quickscorer.load(source)
    assert model.ensemble.source["library"] == "xgboost"
    categorical = [j for j, t in enumerate(kw.get("feature_types", ())) if t == "c"]
    rows = _probe_rows(model.ensemble, X, zlib.crc32(name.encode()), categorical)
    _assert_exact(model, booster, rows, kw)


def test_cases_hold_what_they_are_named_after():
    """Guards the differential test: each case really exercises its feature."""
    ens = load_xgboost(_trained("dart")[0])
    assert ens.tree_weight is not None and len(set(ens.tree_weight.tolist())) > 1
    dropout = load_xgboost(_trained("dropout")[0])
    if _XGB_VERSION >= (3, 3):
        assert dropout.tree_weight is not None and len(set(dropout.tree_weight.tolist())) > 1
    assert load_xgboost(_trained("categorical")[0]).has_categorical
    assert load_xgboost(_trained("categorical_onehot")[0]).has_categorical
    multi = load_xgboost(_trained("multi:softprob")[0])
    assert multi.n_outputs == 4 and multi.transform == "xgb_softmax"
    assert len(set(multi.base_score.tolist())) > 1          # a vector base_score
    mt = load_xgboost(_trained("multi_target")[0])
    assert mt.n_outputs == 3 and len(set(mt.base_score.tolist())) == 3
    assert all(t.n_leaves == 1 for t in load_xgboost(_trained("single_leaf")[0]).trees)
    assert max(t.n_leaves for t in load_xgboost(_trained("deep")[0]).trees) > 64
    rf = load_xgboost(_trained("random_forest")[0])
    assert rf.n_trees == 40
    binary = load_xgboost(_trained("binary:logistic")[0])
    assert binary.transform == "xgb_logistic"
    assert binary.base_score[0] == np.float32(binary.base_score[0])   # a float32 margin


@pytest.mark.parametrize("fmt", ["json", "ubj"])
def test_every_source_form_gives_the_same_ensemble(fmt, tmp_path):
    booster, _, _ = _trained("categorical")
    path = tmp_path / f"m.{fmt}"
    booster.save_model(str(path))
    raw = path.read_bytes()
    forms = [path, str(path), raw, booster]
    if fmt == "json":
        forms += [raw.decode(), json.loads(raw)]
    ensembles = [load_xgboost(f) for f in forms]
    first = ensembles[0]
    for ens in ensembles[1:]:
        assert ens.n_trees == first.n_trees
        for a, b in zip(first.trees, ens.trees):
            for field in ("feature", "threshold", "left", "right", "default_left",
                          "leaf_value", "cat_values", "leaf_source_id"):
                np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
        np.testing.assert_array_equal(first.base_score, ens.base_score)


def test_ubjson_decoder_equals_json():
    booster, _, _ = _trained("multi:softprob")
    from_ubj = decode_ubjson(bytes(booster.save_raw("ubj")))
    from_json = json.loads(booster.save_raw("json"))

    def same(a, b, path="$"):
        if isinstance(b, dict):
            assert isinstance(a, dict) and a.keys() == b.keys(), path
            for k in b:
                same(a[k], b[k], f"{path}.{k}")
        elif isinstance(b, list) and (not b or not isinstance(b[0], (int, float))):
            assert len(a) == len(b), path
            for i, (x, y) in enumerate(zip(a, b)):
                same(x, y, f"{path}[{i}]")
        elif isinstance(b, list) and all(isinstance(v, int) for v in b):
            np.testing.assert_array_equal(np.asarray(a, np.int64), np.asarray(b, np.int64), path)
        elif isinstance(b, list):   # JSON floats are shortest round-trip float32 strings
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b, np.float32), path)
        else:
            assert a == b, path

    same(from_ubj, from_json)


def test_detection():
    booster, _, _ = _trained("reg:squarederror")
    assert looks_like_xgboost(bytes(booster.save_raw("json")))
    assert looks_like_xgboost(bytes(booster.save_raw("ubj")))
    assert not looks_like_xgboost(b"tree\nversion=v4\n")
    assert not looks_like_xgboost(b'{"foo": 1}')


# --------------------------------------------------------------------------------------------
# older layouts, written by hand from a current model; the real xgboost reads them too


def _doc(name):
    return json.loads(_trained(name)[0].save_raw("json"))


def _as_version_1(doc):
    """The layout of XGBoost 1.x: scalar base_score, boolean default_left, no split_type or
    category arrays, version 1.x."""
    doc = copy.deepcopy(doc)
    doc["version"] = [1, 7, 6]
    lmp = doc["learner"]["learner_model_param"]
    lmp["base_score"] = lmp["base_score"].strip("[]")
    gb = doc["learner"]["gradient_booster"]
    model = gb["model"] if "model" in gb else gb["gbtree"]["model"]
    for tree in model["trees"]:
        assert not any(tree["split_type"])
        tree["default_left"] = [bool(v) for v in tree["default_left"]]
        for key in ("split_type", "categories", "categories_nodes", "categories_segments",
                    "categories_sizes"):
            del tree[key]
    model.pop("iteration_indptr", None)
    return doc


@pytest.mark.parametrize("name", ["reg:squarederror", "binary:logistic", "dart"])
def test_version_1_layout(name):
    booster, X, _ = _trained(name)
    doc = _as_version_1(_doc(name))
    assert isinstance(doc["learner"]["learner_model_param"]["base_score"], str)
    model = quickscorer.load(doc)
    rows = _probe_rows(model.ensemble, X, 5)
    np.testing.assert_array_equal(model.predict(rows, raw_score=True),
                                  booster.predict(xgb.DMatrix(rows), output_margin=True))
    # and the same text loaded as JSON
    np.testing.assert_array_equal(quickscorer.load(json.dumps(doc)).predict(rows, raw_score=True),
                                  model.predict(rows, raw_score=True))


def _dart_layouts(doc: dict) -> dict[str, dict]:
    """The DART document in each layout XGBoost has written it: up to 3.2 a ``dart`` booster
    around a ``gbtree`` with ``weight_drop`` beside it; 3.3 a ``gbtree`` with ``weight_drop``
    beside its model; 3.4 and later a ``gbtree`` with ``weight_drop`` inside its model."""
    gb = doc["learner"]["gradient_booster"]
    model = gb["model"] if "model" in gb else gb["gbtree"]["model"]
    weights = gb.get("weight_drop", model.get("weight_drop"))
    assert weights is not None and len(weights) == len(model["trees"])
    bare = {k: v for k, v in model.items() if k != "weight_drop"}
    boosters = {
        "up to 3.2": {"name": "dart", "gbtree": {"name": "gbtree", "model": bare},
                      "weight_drop": weights},
        "3.3": {"name": "gbtree", "model": bare, "weight_drop": weights},
        "3.4": {"name": "gbtree", "model": dict(bare, weight_drop=weights)},
    }
    out = {}
    for release, booster in boosters.items():
        d = copy.deepcopy(doc)
        d["learner"]["gradient_booster"] = copy.deepcopy(booster)
        out[release] = d
    return out


def test_dart_weights_in_every_release_layout():
    """DART's weights are read wherever a release put them, whatever the booster's name: a
    3.4 model names its booster gbtree and keeps the weights inside the model."""
    booster, X, _ = _trained("dart")
    layouts = _dart_layouts(_doc("dart"))
    loaded = {release: load_xgboost(d) for release, d in layouts.items()}
    first = loaded["up to 3.2"]
    assert first.tree_weight is not None and (first.tree_weight != 1).any()
    rows = _probe_rows(first, X, 6)
    want = booster.predict(xgb.DMatrix(rows), output_margin=True)
    for release, ens in loaded.items():
        np.testing.assert_array_equal(ens.tree_weight, first.tree_weight, err_msg=release)
        np.testing.assert_array_equal(quickscorer.Model(ens).predict(rows, raw_score=True),
                                      want, err_msg=release)
        # and the JSON text of the same layout, through the C parser
        text = json.dumps(layouts[release]).encode()
        np.testing.assert_array_equal(quickscorer.load(text).predict(rows, raw_score=True),
                                      want, err_msg=release)


def test_dart_weights_that_disagree_or_are_missing_are_refused():
    layouts = _dart_layouts(_doc("dart"))
    doc = layouts["3.3"]
    gb = doc["learner"]["gradient_booster"]
    gb["model"]["weight_drop"] = [w * 0.5 for w in gb["weight_drop"]]
    with pytest.raises(ModelFormatError, match="two different weight_drop"):
        load_xgboost(doc)
    doc = layouts["up to 3.2"]
    del doc["learner"]["gradient_booster"]["weight_drop"]
    with pytest.raises(ModelFormatError, match="weight_drop"):
        load_xgboost(doc)


def test_weights_of_one_change_nothing_and_keep_the_plain_sum():
    doc = _dart_layouts(_doc("dart"))["3.4"]
    model = doc["learner"]["gradient_booster"]["model"]
    model["weight_drop"] = [1.0] * len(model["trees"])
    assert load_xgboost(doc).tree_weight is None


def test_logistic_base_score_becomes_a_float32_logit():
    doc = _doc("binary:logistic")
    doc["learner"]["learner_model_param"]["base_score"] = "[2.5E-1]"
    ens = load_xgboost(doc)
    want = -np.log(np.float32(1) / np.float32(0.25) - np.float32(1))
    assert ens.base_score[0] == pytest.approx(float(want), abs=1e-7)
    assert ens.base_score[0] == float(np.float32(ens.base_score[0]))


# --------------------------------------------------------------------------------------------
# refusals and damage


def _tree0(doc):
    gb = doc["learner"]["gradient_booster"]
    model = gb["model"] if "model" in gb else gb["gbtree"]["model"]
    return model["trees"][0]


def _break(how):
    doc = _doc("categorical") if how.startswith("cat") else _doc("reg:squarederror")
    t = _tree0(doc)
    lmp = doc["learner"]["learner_model_param"]
    if how == "short_array":
        t["split_conditions"] = t["split_conditions"][:-1]
    elif how == "child_out_of_range":
        t["left_children"][0] = 10_000
    elif how == "cycle":
        t["left_children"][0] = 0
    elif how == "one_child":
        leaf = t["left_children"].index(-1)
        t["right_children"][leaf] = 1
    elif how == "feature_out_of_range":
        t["split_indices"][0] = 99
    elif how == "negative_feature":
        t["split_indices"][0] = -1
    elif how == "num_nodes_mismatch":
        t["tree_param"]["num_nodes"] = "3"
    elif how == "absurd_num_feature":
        lmp["num_feature"] = "99999999999999"
    elif how == "absurd_num_class":
        lmp["num_class"] = "1000000000"
    elif how == "base_score_text":
        lmp["base_score"] = "half"
    elif how == "base_score_length":
        lmp["base_score"] = "[1,2,3]"
    elif how == "unknown_objective":
        doc["learner"]["objective"]["name"] = "reg:mystery"
    elif how == "gblinear":
        doc["learner"]["gradient_booster"]["name"] = "gblinear"
    elif how == "vector_leaf":
        t["tree_param"]["size_leaf_vector"] = "3"
    elif how == "tree_info_out_of_range":
        doc["learner"]["gradient_booster"]["model"]["tree_info"][0] = 5
    elif how == "tree_info_short":
        doc["learner"]["gradient_booster"]["model"]["tree_info"].pop()
    elif how == "no_trees":
        doc["learner"]["gradient_booster"]["model"]["trees"] = []
    elif how == "string_in_array":
        t["split_conditions"][0] = "x"
    elif how == "unknown_split_type":
        t["split_type"][0] = 7
    elif how == "default_left_not_bool":
        t["default_left"][1] = 5          # XGBoost sends it right: only 1 means left
    elif how == "default_left_negative":
        t["default_left"][0] = -1
    elif how == "tree_id_repeated":
        doc["learner"]["gradient_booster"]["model"]["trees"][1]["id"] = 0
    elif how == "cat_segment_out_of_range":
        t = next(tr for tr in doc["learner"]["gradient_booster"]["model"]["trees"]
                 if tr["categories_nodes"])
        t["categories_segments"][0] = 10_000
    elif how == "cat_negative":
        t = next(tr for tr in doc["learner"]["gradient_booster"]["model"]["trees"]
                 if tr["categories_nodes"])
        t["categories"][0] = -3
    elif how == "cat_node_not_categorical":
        t = next(tr for tr in doc["learner"]["gradient_booster"]["model"]["trees"]
                 if tr["categories_nodes"])
        leaf = t["left_children"].index(-1)
        t["categories_nodes"][0] = leaf
    elif how == "missing_learner":
        del doc["learner"]
    else:
        raise AssertionError(how)
    return doc


BREAKS = ["short_array", "child_out_of_range", "cycle", "one_child", "feature_out_of_range",
          "negative_feature", "num_nodes_mismatch", "absurd_num_feature", "absurd_num_class",
          "base_score_text", "base_score_length", "unknown_objective", "gblinear",
          "vector_leaf", "tree_info_out_of_range", "tree_info_short", "no_trees",
          "string_in_array", "unknown_split_type", "default_left_not_bool",
          "default_left_negative", "tree_id_repeated", "cat_segment_out_of_range", "cat_negative",
          "cat_node_not_categorical", "missing_learner"]


@pytest.mark.parametrize("how", BREAKS)
def test_damaged_model_is_refused(how):
    doc = _break(how)
    with pytest.raises(ModelFormatError):
        load_xgboost(doc)
    with pytest.raises(ModelFormatError):
        load_xgboost(json.dumps(doc).encode())


def test_messages_name_the_problem():
    with pytest.raises(ModelFormatError, match=r"tree 0: .*split_indices = 99"):
        load_xgboost(_break("feature_out_of_range"))
    with pytest.raises(ModelFormatError, match=r"tree 0: field 'split_conditions' has"):
        load_xgboost(_break("short_array"))
    with pytest.raises(ModelFormatError, match="reg:mystery"):
        load_xgboost(_break("unknown_objective"))
    with pytest.raises(ModelFormatError, match=r"trees of leaf vectors of sizes \[1, 3\]"):
        load_xgboost(_break("vector_leaf"))
    with pytest.raises(ModelFormatError, match=r"tree 0: node 1 has default_left = 5"):
        load_xgboost(json.dumps(_break("default_left_not_bool")).encode())
    with pytest.raises(ModelFormatError, match=r"tree 1 has id 0"):
        load_xgboost(json.dumps(_break("tree_id_repeated")).encode())


@pytest.mark.parametrize("category", [536_870_920, 2**31 - 1])
def test_a_category_past_what_the_layouts_hold_is_refused_at_load(category):
    """A categorical split naming a category whose bitset the layouts would refuse is refused
    when the model loads, not at its first call."""
    doc = _doc("categorical")
    trees = doc["learner"]["gradient_booster"]["model"]["trees"]
    tree = next(t for t in trees if t["categories"])
    tree["categories"][0] = category
    for source in (doc, json.dumps(doc).encode()):
        with pytest.raises(ModelFormatError, match=f"bitset words.*largest category {category}"):
            load_xgboost(source)


def test_truncated_files_are_refused():
    booster, _, _ = _trained("categorical")
    for raw in (bytes(booster.save_raw("json")), bytes(booster.save_raw("ubj"))):
        for cut in (1, 2, 10, len(raw) // 3, len(raw) // 2, len(raw) - 1):
            with pytest.raises(ModelFormatError):
                load_xgboost(raw[:cut])


def test_ubjson_absurd_count_fails_fast():
    # an optimized float32 array claiming 2**60 entries
    data = b"{L\x00\x00\x00\x00\x00\x00\x00\x01a[$d#L" + (2**60).to_bytes(8, "big") + b"\x00" * 8
    with pytest.raises(ModelFormatError, match="count"):
        decode_ubjson(data)
    with pytest.raises(ModelFormatError, match="nested"):
        decode_ubjson(b"[" * 100 + b"]" * 100)


def _valid_sources():
    booster, _, _ = _trained("categorical")
    return bytes(booster.save_raw("json")), bytes(booster.save_raw("ubj"))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(which=st.sampled_from([0, 1]), pos=st.floats(0, 1, exclude_max=True),
       kind=st.sampled_from(DAMAGES + ["digit"]), byte=st.integers(0, 255))
def test_random_damage_raises_only_model_format_error(which, pos, kind, byte):
    raw = _valid_sources()[which]
    if kind == "digit":    # a digit changed in the JSON text
        kind, byte = ("byte", ord("0") + byte % 10) if which == 0 else ("byte", byte)
    raw = damaged(raw, pos, kind, byte)
    try:
        ens = load_xgboost(bytes(raw))
    except ModelFormatError:
        return
    # a damage that still parses must give a model that scores without crashing
    X = np.random.default_rng(0).normal(size=(20, ens.n_features))
    quickscorer.Model(ens).predict(X)
