"""The low-latency entry of calls of a few rows (``_kernel.predict_small`` through
``Model.predict``): the same numbers as the general path for every kind of model and input
it takes, the general path for everything else, and safe from many threads at once."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import quickscorer
from quickscorer import _kernel
from quickscorer.errors import InputError

from conftest import random_ensemble, special_rows


def _models():
    rng = np.random.default_rng(11)
    out = {}
    for family in ("lightgbm", "xgboost"):
        for k in (1, 3):
            ens = random_ensemble(rng, family, n_trees=12, n_outputs=k, n_features=6)
            out[f"{family}-{k}"] = quickscorer.Model(ens)
    return out


MODELS = _models()


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_small_calls_equal_the_general_path(name, dtype):
    model = MODELS[name]
    X = special_rows(np.random.default_rng(5), 40, model.n_features).astype(dtype)
    general = model.prepare("quickscorer")
    for n in (1, 2, 3):
        rows = np.ascontiguousarray(X[:n])
        # the general path, named kernel, many rows at once
        k = model.n_outputs
        want = np.empty((n, k), np.float32 if "xgboost" in name else np.float64)
        empty = np.empty((0, k), np.float64 if "xgboost" in name else np.float32)
        if "xgboost" in name:
            general.predict_raw(rows, empty, want, 1)
        else:
            general.predict_raw(rows, want, empty, 1)
        got = model.predict_raw(rows)
        assert got.dtype == want.dtype and np.array_equal(got, want)
        assert np.array_equal(model.predict(rows, raw_score=True),
                              want[:, 0] if k == 1 else want)
        out = model.predict(rows)
        assert np.array_equal(out, model.predict(np.asfortranarray(rows)))  # general path
        assert np.array_equal(model.predict(rows, algorithm="quickscorer"), out)
    one = np.ascontiguousarray(X[0])
    assert np.array_equal(model.predict(one), model.predict(X[:1]))
    assert model.predict_raw(one).shape == (1, model.n_outputs)


def test_the_entry_declines_what_it_does_not_read():
    model = MODELS["lightgbm-1"]
    lay = model.prepare("quickscorer").layout
    f = model._forest
    X = np.zeros((2, model.n_features))
    assert _kernel.predict_small(f, lay, X, True).shape == (2,)
    for bad in (np.asfortranarray(np.zeros((2, model.n_features))), X.astype(np.int64),
                np.zeros((2, model.n_features + 1)), np.zeros((2, 2 * model.n_features))[:, ::2],
                np.zeros((1, 2, model.n_features)), [[0.0] * model.n_features]):
        assert _kernel.predict_small(f, lay, bad, True) is None
    with pytest.raises(InputError, match="features"):
        model.predict(np.zeros((1, model.n_features + 1)))


def test_small_calls_from_many_threads():
    model = MODELS["xgboost-3"]
    X = special_rows(np.random.default_rng(9), 64, model.n_features)
    want = [model.predict(X[i:i + 1]) for i in range(64)]
    bad = []

    def work(seed):
        order = np.random.default_rng(seed).permutation(64)
        for _ in range(20):
            for i in order:
                if not np.array_equal(model.predict(X[i:i + 1]), want[i]):
                    bad.append(i)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == []
