"""QuickScorer vs the reference traversal vs LightGBM itself, on a learning-to-rank sized model.

The model (1,000 trees of 64 leaves, 136 features, lambdarank, as on MSLR-WEB30K) is trained
once on generated data and cached under ``benchmarks/cache/``. Run::

    python -m pytest benchmarks/bench_quickscorer.py --benchmark-columns=median,ops -q

Times are per call; divide by the batch size for the time per document.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import quickscorer

lightgbm = pytest.importorskip("lightgbm")
pytest.importorskip("pytest_benchmark")


CACHE = Path(__file__).resolve().parent / "cache"
MODEL_FILE = CACHE / "ltr_1000x64_136.txt"
N_FEATURES = 136
N_TREES = 1000
N_LEAVES = 64
BATCHES = (1, 100, 10_000)


def ltr_data(rng, n_rows: int, n_features: int = N_FEATURES):
    """Rows that look like web-search features: counts with many zeros, skewed scores,
    ratios in [0, 1] and a few dense Gaussians; graded labels 0-4 in queries of 100 docs."""
    kinds = rng.integers(4, size=n_features)
    X = np.empty((n_rows, n_features))
    for j, kind in enumerate(kinds):
        if kind == 0:
            X[:, j] = rng.poisson(rng.uniform(0.2, 5), n_rows) * (rng.random(n_rows) < 0.6)
        elif kind == 1:
            X[:, j] = np.round(rng.lognormal(rng.uniform(-1, 3), 1.5, n_rows), 3)
        elif kind == 2:
            X[:, j] = np.round(rng.beta(0.5, 2, n_rows), 4)
        else:
            X[:, j] = rng.normal(size=n_rows)
    w = rng.normal(size=n_features) * (rng.random(n_features) < 0.3)
    z = (X - X.mean(0)) / (X.std(0) + 1e-9)
    score = z @ w + np.sin(z[:, 0] * z[:, 1]) + 0.5 * rng.normal(size=n_rows)
    y = np.digitize(score, np.quantile(score, [0.5, 0.75, 0.9, 0.97]))
    return X, y


def trained_model() -> Path:
    """The cached model file, trained on first use (about a minute on 2 cores)."""
    if MODEL_FILE.exists():
        return MODEL_FILE
    rng = np.random.default_rng(136)
    X, y = ltr_data(rng, 20_000)
    params = dict(objective="lambdarank", num_leaves=N_LEAVES, learning_rate=0.05,
                  min_data_in_leaf=5, max_bin=255, num_threads=2, verbose=-1, seed=1,
                  deterministic=True)
    ds = lightgbm.Dataset(X, y, group=np.full(200, 100))
    booster = lightgbm.train(params, ds, num_boost_round=N_TREES)
    CACHE.mkdir(exist_ok=True)
    tmp = MODEL_FILE.with_suffix(f".tmp{os.getpid()}")
    booster.save_model(str(tmp))
    tmp.replace(MODEL_FILE)
    return MODEL_FILE


@pytest.fixture(scope="module")
def ltr():
    path = trained_model()
    booster = lightgbm.Booster(model_file=str(path))
    model = quickscorer.load(str(path))
    model.prepare("quickscorer")
    model.prepare("traversal")
    X, _ = ltr_data(np.random.default_rng(7), max(BATCHES))
    return booster, model, {n: np.ascontiguousarray(X[:n]) for n in BATCHES}


def test_model_is_learning_to_rank_sized(ltr):
    booster, model, _ = ltr
    assert model.n_trees == N_TREES and model.n_features == N_FEATURES
    leaves = np.array([t.n_leaves for t in model.trees])
    assert np.median(leaves) == N_LEAVES


def test_every_engine_gives_the_same_scores(ltr):
    booster, model, batches = ltr
    X = batches[max(BATCHES)]
    want = booster.predict(X, raw_score=True, num_threads=1)
    np.testing.assert_array_equal(model.predict(X, raw_score=True, algorithm="quickscorer"), want)
    np.testing.assert_array_equal(model.predict(X, raw_score=True, algorithm="traversal"), want)


@pytest.mark.parametrize("batch", BATCHES)
def test_quickscorer(benchmark, ltr, batch):
    _, model, batches = ltr
    benchmark.group = f"batch {batch}"
    benchmark.extra_info["rows"] = batch
    benchmark(model.predict, batches[batch], raw_score=True, algorithm="quickscorer",
              n_threads=1)


@pytest.mark.parametrize("batch", BATCHES)
def test_traversal(benchmark, ltr, batch):
    _, model, batches = ltr
    benchmark.group = f"batch {batch}"
    benchmark.extra_info["rows"] = batch
    benchmark(model.predict, batches[batch], raw_score=True, algorithm="traversal",
              n_threads=1)


@pytest.mark.parametrize("batch", BATCHES)
def test_lightgbm(benchmark, ltr, batch):
    booster, _, batches = ltr
    benchmark.group = f"batch {batch}"
    benchmark.extra_info["rows"] = batch
    benchmark(booster.predict, batches[batch], raw_score=True, num_threads=1)
