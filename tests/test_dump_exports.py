"""Models written as the libraries' JSON dumps (``quickscorer convert --to xgboost-dump`` /
``lightgbm-dump``), which the LTR plugins and Vespa load: read back by the dump importers
(held to XGBoost and LightGBM themselves in tests/test_xgboost_dump.py and
tests/test_lightgbm_dump.py), every float32 row takes the source model's path, and a model
written as its own library's dump scores exactly as the model."""
from __future__ import annotations

import numpy as np
import pytest

import quickscorer
from quickscorer.cli import main
from quickscorer.export import check_export, to_lightgbm_dump, to_xgboost_dump

lgb = pytest.importorskip("lightgbm", reason="the test extra installs lightgbm")
xgb = pytest.importorskip("xgboost", reason="the test extra installs xgboost-cpu")


def _data(n=800, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    X[:, 2] = np.round(X[:, 2], 1)
    y = (X[:, 0] + X[:, 1] ** 2 > 0.5).astype(int)
    return X, y


def _sources():
    X, y = _data()
    Xn = X.copy()
    Xn[np.random.default_rng(1).random(X.shape) < 0.1] = np.nan
    return {
        "lightgbm": lgb.train({"objective": "binary", "num_leaves": 15, "verbose": -1},
                              lgb.Dataset(Xn, y), 20),
        "xgboost": xgb.train({"max_depth": 4, "objective": "binary:logistic", "seed": 1},
                             xgb.DMatrix(Xn, y), 20),
        "xgboost-dart": xgb.train({"max_depth": 3, "booster": "dart", "rate_drop": 0.3,
                                   "one_drop": 1, "seed": 1}, xgb.DMatrix(X, y), 10),
    }


@pytest.mark.parametrize("fmt", ["xgboost-dump", "lightgbm-dump"])
@pytest.mark.parametrize("name", ["lightgbm", "xgboost", "xgboost-dart"])
def test_a_dump_export_keeps_every_float32_row_on_the_source_s_paths(fmt, name):
    source = _sources()[name]
    model = quickscorer.load(source)
    write = to_xgboost_dump if fmt == "xgboost-dump" else to_lightgbm_dump
    text = write(source)
    X = _data(400, seed=2)[0].astype(np.float32)
    X = np.concatenate([X, np.nextafter(X, np.float32(9)),
                        np.nextafter(X, np.float32(-9))]).astype(np.float64)
    c = check_export(model, text, X, fmt)
    assert c["decisions"] == 0, c
    own = (fmt == "xgboost-dump") == name.startswith("xgboost")
    if own and name != "xgboost-dart":       # the library's own arithmetic: the same scores
        assert c["scores"] == 0, c
        with_nan = X.copy()
        with_nan[::3, 1] = np.nan
        nan = check_export(model, text, with_nan, fmt)
        if fmt == "lightgbm-dump":
            assert nan["scores"] == 0, nan
        else:                   # the LTR plugins send NaN to "no" whatever "missing" says
            assert 0 < nan["decisions"] <= with_nan.shape[0] // 3 + 1, nan
    assert c["max_abs"] < 1e-5, c


def test_convert_writes_the_dumps(tmp_path, capsys):
    source = _sources()["xgboost"]
    source.save_model(str(tmp_path / "m.json"))
    X = _data()[0].astype(np.float32)
    (tmp_path / "rows.csv").write_text("\n".join(",".join(repr(float(v)) for v in r)
                                                for r in X) + "\n")
    for fmt in ("xgboost-dump", "lightgbm-dump"):
        assert main(["convert", str(tmp_path / "m.json"), str(tmp_path / f"{fmt}.json"),
                     "--to", fmt, "--check", str(tmp_path / "rows.csv")]) == 0
        assert "0 rows take another path" in capsys.readouterr().out
    back = quickscorer.load(tmp_path / "xgboost-dump.json", n_features=5)
    np.testing.assert_array_equal(back.predict_raw(X),
                                  quickscorer.load(source).predict_raw(X))
