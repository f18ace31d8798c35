"""``predict(X, missing=v)`` read as XGBoost's ``DMatrix(missing=v)`` reads it, and per-row
margins (XGBoost's ``base_margin``, LightGBM's ``init_score``) added where each library adds
them: XGBoost's margins bit for bit against XGBoost itself."""
from __future__ import annotations

import math

import numpy as np
import pytest

import quickscorer
from quickscorer.errors import InputError

xgb = pytest.importorskip("xgboost", reason="the test extra installs xgboost-cpu")


def _rows(n, seed, missing=-999.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 5))
    X[rng.random(X.shape) < 0.15] = missing
    X[rng.random(X.shape) < 0.05] = np.nan
    X[:, 4] = np.round(X[:, 4], 1)                     # values equal to some thresholds
    return X


@pytest.mark.parametrize("params, rounds", [
    ({"objective": "binary:logistic", "max_depth": 4}, 30),
    ({"objective": "multi:softprob", "num_class": 3, "max_depth": 3}, 10),
    ({"objective": "reg:squarederror", "booster": "dart", "rate_drop": 0.3, "max_depth": 3,
      "one_drop": 1}, 20),
])
def test_missing_and_base_margin_are_xgboost_s_bit_for_bit(params, rounds):
    X = _rows(500, 1)
    rng = np.random.default_rng(2)
    y = (rng.random(500) * params.get("num_class", 2)).astype(int)
    booster = xgb.train({**params, "eta": 0.3, "nthread": 1, "seed": 3},
                        xgb.DMatrix(X, label=y, missing=-999.0), rounds)
    model = quickscorer.Model(quickscorer.load_ensemble(booster))
    k = model.n_outputs
    margin = rng.normal(size=(500, k)).astype(np.float32) * 3
    d = xgb.DMatrix(X, missing=-999.0, base_margin=margin if k > 1 else margin[:, 0])
    want = booster.predict(d, output_margin=True)
    got = model.predict_raw(X, missing=-999.0, base_margin=margin)
    np.testing.assert_array_equal(got.reshape(want.shape), want)
    np.testing.assert_array_equal(model.predict(X, missing=-999.0, base_margin=margin),
                                  booster.predict(d))
    # the margins on every kernel, threads, one row, and a part of the ensemble
    for alg in ("walk", "vqs", "rapidscorer", "traversal"):
        np.testing.assert_array_equal(
            model.predict_raw(X, missing=-999.0, base_margin=margin, algorithm=alg,
                              n_threads=2).reshape(want.shape), want)
    one = model.predict_raw(X[7], missing=-999.0, base_margin=margin[7])
    np.testing.assert_array_equal(one.reshape(-1), want.reshape(500, -1)[7])
    part = booster.predict(d, output_margin=True, iteration_range=(0, 3))
    np.testing.assert_array_equal(
        model.predict_raw(X, missing=-999.0, base_margin=margin,
                          iteration_range=(0, 3)).reshape(part.shape), part)
    # missing alone, and leaves: what the DMatrix reads, whatever the path
    plain = booster.predict(xgb.DMatrix(X, missing=-999.0), output_margin=True)
    np.testing.assert_array_equal(model.predict_raw(X, missing=-999.0).reshape(plain.shape),
                                  plain)
    np.testing.assert_array_equal(model.predict_raw(X[:3], missing=-999.0).reshape(-1),
                                  plain.reshape(500, -1)[:3].reshape(-1))
    np.testing.assert_array_equal(
        model.predict_leaf(X, missing=-999.0, source_ids=True),
        booster.predict(xgb.DMatrix(X, missing=-999.0), pred_leaf=True).reshape(500, -1))
    # the value compared in float32, as XGBoost compares it
    near = X.astype(np.float32).astype(np.float64)
    near[near == -999.0] = -999.0 + 1e-9
    np.testing.assert_array_equal(model.predict_raw(near, missing=-999.0).reshape(plain.shape),
                                  plain)


def test_init_score_is_added_to_lightgbm_s_raw_score_and_the_transform_follows():
    lgb = pytest.importorskip("lightgbm")
    X = _rows(400, 4, missing=np.nan)
    y = (np.nan_to_num(X[:, 0]) > 0).astype(int)
    init = np.random.default_rng(5).normal(size=400)
    booster = lgb.train({"objective": "binary", "num_leaves": 7, "verbose": -1},
                        lgb.Dataset(X, y, init_score=init), 15)
    model = quickscorer.Model(quickscorer.load_ensemble(booster))
    raw = booster.predict(X, raw_score=True)
    np.testing.assert_array_equal(model.predict_raw(X, init_score=init)[:, 0], raw + init)
    # LightGBM's sigmoid calls libm's exp (math.exp), which NumPy's SIMD exp differs from
    # by an ulp on some inputs on AVX-512 CPUs
    np.testing.assert_array_equal(model.predict(X, init_score=init),
                                  [1.0 / (1.0 + math.exp(-v)) for v in raw + init])
    with pytest.raises(InputError, match="two names of one margin"):
        model.predict(X, init_score=init, base_margin=init)
    with pytest.raises(InputError, match="a margin of shape"):
        model.predict(X, init_score=init[:10])


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_score_takes_the_missing_value_and_a_margin_column(tmp_path, suffix):
    X = _rows(300, 6)
    y = (np.nan_to_num(X[:, 1]) > 0).astype(int)
    booster = xgb.train({"objective": "binary:logistic", "max_depth": 3, "nthread": 1},
                        xgb.DMatrix(X, label=y, missing=-999.0), 12)
    booster.save_model(str(tmp_path / "m.json"))
    margin = np.random.default_rng(7).normal(size=300).astype(np.float32)
    names = [f"f{j}" for j in range(5)]
    data = tmp_path / f"rows{suffix}"
    if suffix == ".csv":
        with open(data, "w") as fh:
            fh.write(",".join(names + ["margin"]) + "\n")
            for row, m in zip(X, margin):
                fh.write(",".join(repr(float(v)) for v in row) + f",{float(m)!r}\n")
    else:
        pa = pytest.importorskip("pyarrow")
        import pyarrow.parquet as pq
        cols = {n: X[:, j] for j, n in enumerate(names)}
        pq.write_table(pa.table({**cols, "margin": margin.astype(np.float64)}), data)
    from quickscorer.cli import main
    out = tmp_path / "s.csv"
    assert main(["score", str(tmp_path / "m.json"), str(data), "--missing", "-999",
                 "--margin-column", "margin", "--raw", "-o", str(out), "--quiet"]) == 0
    got = np.loadtxt(out, delimiter=",", skiprows=1, dtype=np.float32)
    want = booster.predict(xgb.DMatrix(X, missing=-999.0, base_margin=margin),
                           output_margin=True)
    np.testing.assert_array_equal(got, want)
    assert out.read_text().splitlines()[0] == "score"          # the margin read past
    assert main(["score", str(tmp_path / "m.json"), str(data), "--missing", "-999",
                 "--margin-column", "margin", "--keep", "margin", "-o", str(out),
                 "--quiet"]) == 0
    assert out.read_text().splitlines()[0] == "margin,score"
