"""Solr LTR's MultipleAdditiveTreesModel JSON, read and written (``quickscorer convert --to
solr-ltr``). No Solr runs here: the oracle is Solr's scoring as its source states it
(``MultipleAdditiveTreesModel.scoreNode`` and ``score``), written out below in Java's float
arithmetic, node by node, independently of the importer."""
from __future__ import annotations

import json

import numpy as np
import pytest

import quickscorer
from quickscorer.errors import ModelFormatError
from quickscorer.export import check_export, to_solr_ltr

CLASS = "org.apache.solr.ltr.model.MultipleAdditiveTreesModel"


def _solr_score(doc: dict, X: np.ndarray) -> np.ndarray:
    """Solr's score of each row: float thresholds plus 1e-6f, value <= threshold goes left
    (NaN right), an unknown feature ends the tree with 0, each tree weight * value in float
    added to a float score."""
    index = {f["name"]: i for i, f in enumerate(doc["features"])}

    def f32(v):                     # Float.parseFloat / Float.valueOf: "2f" is 2
        return np.float32(float(v.rstrip("fF")) if isinstance(v, str) else v)
    out = []
    for row in X.astype(np.float32):
        score = f32(0)
        for tree in doc["params"]["trees"]:
            node = tree["root"]
            while "feature" in node:
                if node["feature"] not in index:
                    node = {"value": 0}
                    break
                thr = np.float32(f32(node["threshold"]) + np.float32(1e-6))
                node = node["left"] if row[index[node["feature"]]] <= thr else node["right"]
            score = np.float32(score + np.float32(f32(tree["weight"]) * f32(node["value"])))
        out.append(score)
    return np.array(out, np.float32)


def _example():
    """The model of Solr's own documentation, with a feature no row has and text floats."""
    return {"class": CLASS, "name": "m", "store": "s",
            "features": [{"name": "userTextTitleMatch"}, {"name": "originalScore"}],
            "params": {"trees": [
                {"weight": "1", "root": {"feature": "userTextTitleMatch", "threshold": "0.5",
                                         "left": {"value": "-100"},
                                         "right": {"feature": "originalScore",
                                                   "threshold": "10.0",
                                                   "left": {"value": "50"},
                                                   "right": {"value": "75"}}}},
                {"weight": "2f", "root": {"value": "-10"}},
                {"weight": 0.3, "root": {"feature": "gone", "threshold": 1.0,
                                         "left": {"value": 9}, "right": {"value": 8}}},
                {"weight": 0.7, "root": {"feature": "originalScore", "threshold": -2.5,
                                         "left": {"value": 1.25}, "right": {"value": 0.1}}}]}}


def test_solr_s_scoring_of_its_documented_model():
    doc = _example()
    model = quickscorer.load(doc)
    edge = np.float32([0.5, 0.5 + 1e-6, 10.0, 10.000001, -2.5, -2.4999990])
    rng = np.random.default_rng(3)
    X = np.column_stack([rng.choice(edge, 300), rng.choice(np.r_[edge, np.nan], 300)])
    X = np.concatenate([X, [[np.nan, np.nan], [0.5, 10.0]]]).astype(np.float64)
    want = _solr_score(doc, X)
    for source in (doc, json.dumps(doc), json.dumps(doc).encode()):
        m = quickscorer.load(source)
        np.testing.assert_array_equal(m.predict(X), want)
        for alg in ("walk", "vqs", "rapidscorer", "traversal"):
            np.testing.assert_array_equal(m.predict(X, algorithm=alg), want)
    assert model.feature_names == ("userTextTitleMatch", "originalScore")
    assert model.predict(X[:1]).dtype == np.float32


def test_what_a_solr_document_may_not_hold_is_refused_by_name():
    for change, message in (
            (lambda d: d.update({"class": "org.apache.solr.ltr.model.LinearModel"}),
             "is not org.apache"),
            (lambda d: d["features"][0].update(
                {"norm": {"class": "org.apache.solr.ltr.norm.MinMaxNormalizer",
                          "params": {"min": "0", "max": "1"}}}), "normalizer"),
            (lambda d: d["params"]["trees"][0]["root"].update({"missing": "left"}),
             r"holds \['missing'\]"),
            (lambda d: d["params"]["trees"][1].pop("weight"), "no weight"),
            (lambda d: d["params"]["trees"][0]["root"].update({"threshold": "half"}),
             "is not a number")):
        doc = _example()
        change(doc)
        with pytest.raises(ModelFormatError, match=message):
            quickscorer.load(doc)


def _models():
    lgb = pytest.importorskip("lightgbm")
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(800, 5))
    X[:, 2] = np.round(X[:, 2], 1)
    y = (X[:, 0] + X[:, 1] ** 2 > 0.5).astype(int)
    return X, {
        "lightgbm": lgb.train({"objective": "binary", "num_leaves": 15, "verbose": -1},
                              lgb.Dataset(X, y), 20),
        "xgboost": xgb.train({"max_depth": 4, "objective": "binary:logistic", "seed": 1},
                             xgb.DMatrix(X, y), 20)}


def test_an_export_sends_every_float32_row_down_the_source_s_paths(tmp_path):
    X, models = _models()
    rows = X.astype(np.float32)
    rows = np.concatenate([rows, np.nextafter(rows, np.float32(9)),
                           np.nextafter(rows, np.float32(-9))]).astype(np.float64)
    for name, source in models.items():
        model = quickscorer.load(source)
        text = to_solr_ltr(source, tmp_path / f"{name}.json")
        doc = json.loads(text)
        np.testing.assert_array_equal(quickscorer.load(doc).predict(rows),
                                      _solr_score(doc, rows))
        c = check_export(model, text, rows, "solr-ltr")
        assert c["decisions"] == 0, (name, c)
        if name == "xgboost":
            assert c["scores"] == 0, c        # XGBoost's float32 sum is Solr's
        assert c["max_abs"] < 1e-5, c
    from quickscorer.cli import main
    models["xgboost"].save_model(str(tmp_path / "model.json"))
    rows_file = tmp_path / "rows.svm"
    rows_file.write_text("\n".join(" ".join(["0"] + [f"{j}:{float(v)!r}" for j, v in
                                                     enumerate(r)]) for r in X.astype(
        np.float32)) + "\n")
    assert main(["convert", str(tmp_path / "model.json"), str(tmp_path / "out.json"), "--to",
                 "solr-ltr", "--check", str(rows_file)]) == 0
    back = quickscorer.load(tmp_path / "out.json")
    np.testing.assert_array_equal(back.predict(X.astype(np.float32)),
                                  quickscorer.load(models["xgboost"]).predict(
                                      X.astype(np.float32), raw_score=True))
