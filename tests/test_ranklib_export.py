"""Models written as RankLib's text (``quickscorer.export.to_ranklib``, ``quickscorer convert
--to ranklib``): every float32 row takes the source model's path in every tree, read back as
RankLib scores it (``tests/test_ranklib_import.py`` holds that reading to RankLib's own
scores), and RankLib itself scores the export so where ``$RANKLIB_JAR`` names a jar."""
from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest

import quickscorer
from quickscorer.cli import main
from quickscorer.errors import ModelFormatError
from quickscorer.export import check_export, to_ranklib

lgb = pytest.importorskip("lightgbm", reason="the test extra installs lightgbm")
xgb = pytest.importorskip("xgboost", reason="the test extra installs xgboost-cpu")


def _rows(n=800, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 6))
    X[:, 2] = np.round(X[:, 2], 1)                      # values at the thresholds
    y = (X[:, 0] + X[:, 1] ** 2 > 0.5).astype(int)
    return X, y


def _models():
    X, y = _rows()
    yield "lightgbm", lgb.train({"objective": "binary", "num_leaves": 15, "verbose": -1,
                                 "seed": 1}, lgb.Dataset(X, y), 30)
    yield "lightgbm-rf", lgb.train({"objective": "regression", "boosting": "rf",
                                    "bagging_fraction": 0.7, "bagging_freq": 1,
                                    "num_leaves": 9, "verbose": -1}, lgb.Dataset(X, y), 8)
    yield "xgboost", xgb.train({"max_depth": 4, "objective": "binary:logistic", "seed": 1},
                               xgb.DMatrix(X, y), 30)
    yield "xgboost-dart", xgb.train({"max_depth": 3, "booster": "dart", "rate_drop": 0.3,
                                     "one_drop": 1, "seed": 1}, xgb.DMatrix(X, y), 15)
    try:
        import catboost
    except ImportError:
        return
    yield "catboost", catboost.CatBoostRegressor(iterations=30, depth=4, verbose=0,
                                                 random_seed=1).fit(X, y)


@pytest.mark.parametrize("name, source", list(_models()), ids=lambda v: v if isinstance(
    v, str) else "")
def test_every_float32_row_takes_the_source_s_path(name, source):
    model = quickscorer.load(source)
    text = to_ranklib(source)
    back = quickscorer.load(text, n_features=model.n_features)
    assert back.ensemble.source["library"] == "ranklib"
    X = _rows(500, seed=2)[0].astype(np.float32)
    X = np.concatenate([X, np.nextafter(X, np.float32(np.inf)),
                        np.nextafter(X, np.float32(-np.inf))]).astype(np.float64)
    c = check_export(model, text, X)
    assert c["rows"] == X.shape[0] and c["decisions"] == 0, c
    if name.startswith("xgboost") and name != "xgboost-dart":
        assert c["scores"] == 0        # XGBoost's float32 sum is RankLib's, leaf by leaf
    assert c["max_abs"] < 1e-5, c      # the float sum of double (or DART-weighted) leaves


def test_what_ranklib_cannot_hold_is_refused_by_name(tmp_path):
    X, y = _rows()
    three = xgb.train({"objective": "multi:softprob", "num_class": 3, "max_depth": 2},
                      xgb.DMatrix(X, (y + (X[:, 3] > 0)).astype(int)), 3)
    with pytest.raises(ModelFormatError, match="3 outputs"):
        to_ranklib(three)
    from conftest import random_ensemble
    cat = random_ensemble(np.random.default_rng(1), "lightgbm", n_trees=4, p_categorical=0.5)
    assert cat.has_categorical
    with pytest.raises(ModelFormatError, match="categorical splits"):
        to_ranklib(cat)


def test_convert_writes_ranklib_and_checks_it_on_rows(tmp_path, capsys):
    X, y = _rows()
    booster = lgb.train({"objective": "binary", "num_leaves": 7, "verbose": -1},
                        lgb.Dataset(X, y), 10)
    booster.save_model(str(tmp_path / "m.txt"))
    rows = tmp_path / "rows.svm"
    rows.write_text("\n".join(" ".join(["0"] + [f"{j}:{float(np.float32(v))!r}"
                                                for j, v in enumerate(r)]) for r in X) + "\n")
    assert main(["convert", str(tmp_path / "m.txt"), str(tmp_path / "m.ranklib"),
                 "--to", "ranklib", "--check", str(rows)]) == 0
    out = capsys.readouterr().out
    assert "wrote" in out and "checked on 800 rows" in out and "0 rows take another path" in out
    back = quickscorer.load(tmp_path / "m.ranklib", n_features=6)
    np.testing.assert_allclose(back.predict(X.astype(np.float32)),
                               booster.predict(X.astype(np.float32), raw_score=True),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(not os.environ.get("RANKLIB_JAR") or shutil.which("java") is None,
                    reason="RankLib runs live where $RANKLIB_JAR names a jar and java runs")
@pytest.mark.parametrize("name, source", list(_models()), ids=lambda v: v if isinstance(
    v, str) else "")
def test_ranklib_scores_the_export_as_quickscorer_reads_it(name, source, tmp_path):
    model = quickscorer.load(source)
    to_ranklib(source, tmp_path / "m.txt")
    X = _rows(300, seed=4)[0].astype(np.float32)
    lines = [" ".join(["0", "qid:1"] + [f"{j + 1}:{float(v)!r}" for j, v in enumerate(r)])
             for r in X]
    (tmp_path / "d.txt").write_text("\n".join(lines) + "\n")
    subprocess.run(["java", "-cp", os.environ["RANKLIB_JAR"], "ciir.umass.edu.eval.Evaluator",
                    "-load", str(tmp_path / "m.txt"), "-rank", str(tmp_path / "d.txt"),
                    "-score", str(tmp_path / "s.txt")], check=True, capture_output=True)
    ranklib = [float(line.split("\t")[2]) for line in (tmp_path / "s.txt").read_text()
               .splitlines()]
    back = quickscorer.load(tmp_path / "m.txt", n_features=model.n_features)
    np.testing.assert_array_equal(back.predict(X), ranklib)
