"""pytest-benchmark suite: every algorithm of this library on the benchmark workloads.

Run (kept out of the default test run)::

    python -m pytest benchmarks/bench_algorithms.py --benchmark-group-by=group \
        --benchmark-columns=median,ops --benchmark-sort=median

Each group is one workload x batch size x input dtype, so pytest-benchmark's table compares
the algorithms (and LightGBM itself, as the yardstick) directly. Default: the 1,000 x 64
learning-to-rank model, batches 1, 100 and 10,000. ``QUICKSCORER_BENCH_FULL=1`` runs the
whole matrix of the benchmarks issue (100 / 1,000 / 10,000 trees of 16 / 64 / 256 leaves,
batches 1 to 10,000, the shared datasets); training its models takes a while the first time
(they are cached in benchmarks/cache/).
"""
from __future__ import annotations

import os

import numpy as np
import pytest

import quickscorer
from benchmarks import workloads as W

pytest.importorskip("pytest_benchmark")
lgb = pytest.importorskip("lightgbm")


FULL = os.environ.get("QUICKSCORER_BENCH_FULL", "") not in ("", "0")
SHAPES = ([(t, n) for t in (100, 1000, 10_000) for n in (16, 64, 256)] if FULL
          else [(1000, 64)])
BATCHES = (1, 10, 100, 1000, 10_000) if FULL else (1, 100, 10_000)
SHARED = ("shared-rank", "shared-binary", "shared-multiclass", "shared-regression") if FULL\
    else ()
DTYPES = (np.float64, np.float32)

_cache: dict = {}


def _workload(key):
    if key not in _cache:
        kind, trees, leaves = key
        if kind == "ltr":
            _cache[key] = W.ltr(trees, leaves, xgboost=False)
        else:
            try:
                _cache[key] = W.shared(kind, trees, leaves, xgboost=False)
            except W.Unavailable as exc:
                pytest.skip(str(exc))
    return _cache[key]


def _model(wl):
    key = ("model", wl.lgb_path)
    if key not in _cache:
        _cache[key] = quickscorer.load(wl.lgb_path)
    return _cache[key]


WORKLOADS = [("ltr", t, n) for t, n in SHAPES] + [(s, 500, 64) for s in SHARED]
CASES = [(w, b, dt) for w in WORKLOADS for b in BATCHES for dt in DTYPES]


def _ids(case):
    (kind, t, n), b, dt = case
    return f"{kind}-{t}x{n}-batch{b}-{np.dtype(dt).name}"


@pytest.mark.parametrize("case", CASES, ids=[_ids(c) for c in CASES])
@pytest.mark.parametrize("algorithm", quickscorer.available_algorithms())
def bench_algorithm(benchmark, case, algorithm):
    wkey, batch, dtype = case
    wl = _workload(wkey)
    model = _model(wl)
    if algorithm not in model.supported_algorithms():
        from quickscorer.algorithms import registry
        pytest.skip(f"{algorithm}: {registry.get(algorithm).unsupported(model.ensemble)}")
    X = np.ascontiguousarray(wl.X[:batch], dtype=dtype)
    model.prepare(algorithm)
    benchmark.group = _ids(case)
    benchmark.extra_info["rows"] = batch
    out = benchmark(model.predict_raw, X, algorithm=algorithm)
    assert out.shape[0] == batch


@pytest.mark.parametrize("case", [c for c in CASES if c[2] == np.float64],
                         ids=[_ids(c) for c in CASES if c[2] == np.float64])
def bench_lightgbm(benchmark, case):
    wkey, batch, dtype = case
    wl = _workload(wkey)
    booster = lgb.Booster(model_file=str(wl.lgb_path))
    X = np.ascontiguousarray(wl.X[:batch], dtype=dtype)
    benchmark.group = _ids(case)
    benchmark(booster.predict, X, raw_score=True, num_threads=1)
