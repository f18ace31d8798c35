"""Shared test helpers: random trees in the neutral IR, and where the shared data lives."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

from quickscorer.ir import MISSING_NAN, Ensemble, build_tree

# CI draws every property test's examples from the test itself (derandomised), so that a run
# that passed passes again and a failure it finds repeats; a developer's run draws new ones
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "lightgbm-examples"


def shared_data_or_skip() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"{SHARED_DATA} is absent (the shared data sits beside the repo only on "
                    f"the developers' machines)")
    return SHARED_DATA


def random_tree(rng, n_leaves: int, n_features: int, family: str, *,
                thresholds=(-1.0, 0.0, 0.5, 1e-36, 2.0, np.inf, -np.inf), p_categorical=0.15):
    """A random tree of ``n_leaves`` leaves grown by splitting random leaves."""
    left, right, leaves = [-1], [-1], [0]
    while len(leaves) < n_leaves:
        leaf = leaves.pop(int(rng.integers(len(leaves))))
        a = len(left)
        left[leaf], right[leaf] = a, a + 1
        left += [-1, -1]
        right += [-1, -1]
        leaves += [a, a + 1]
    k = len(left)
    cat = rng.random(k) < p_categorical
    missing = (rng.integers(3, size=k) if family == "lightgbm" else np.full(k, MISSING_NAN))
    return build_tree(
        left=left, right=right, root=0,
        feature=rng.integers(n_features, size=k),
        threshold=rng.choice(np.asarray(thresholds, dtype=np.float64), size=k),
        default_left=rng.random(k) < 0.5, missing_type=missing, is_categorical=cat,
        categories={i: rng.choice(70, size=int(rng.integers(0, 5)), replace=False)
                    for i in range(k) if cat[i]},
        value=np.round(rng.normal(size=k), 3), n_features=n_features)


def linear_tree(n_features: int = 3):
    """A LightGBM linear tree of three leaves (two of them linear, on features 0 to 2)."""
    left, right = [1, 3, -1, -1, -1], [2, 4, -1, -1, -1]
    return build_tree(left=left, right=right, root=0, feature=[0, 1, 0, 0, 0],
                      threshold=[0.5, -1.0, 0, 0, 0], default_left=[True] * 5,
                      missing_type=[2] * 5, is_categorical=[False] * 5, categories=None,
                      value=[0, 0, 1.5, -2.0, 3.25], n_features=n_features,
                      linear={2: (0.5, [1, 2], [0.25, -1.5]), 4: (1.0, [0], [2.0])})


def random_ensemble(rng, family: str, n_trees=20, n_outputs=1, n_features=5, max_leaves=40,
                    **kw) -> Ensemble:
    trees = tuple(random_tree(rng, int(rng.integers(1, max_leaves + 1)), n_features, family, **kw)
                  for _ in range(n_trees))
    return Ensemble(trees=trees, tree_group=np.arange(n_trees) % n_outputs,
                    n_outputs=n_outputs, n_features=n_features, family=family,
                    base_score=np.round(rng.normal(size=n_outputs), 2))


SPECIAL_VALUES = np.array([np.nan, -0.0, 0.0, 1e-36, -1e-40, 0.5, 2.0, 3.0, 7.5, -2.0, -0.5,
                           2.7, 69.0, 100.0, np.inf, -np.inf, 1e10, 2.0**31, -1.0])


def special_rows(rng, n: int, n_features: int) -> np.ndarray:
    X = rng.choice(SPECIAL_VALUES, size=(n, n_features))
    X[: n // 3] = np.round(rng.normal(size=(n // 3, n_features)) * 3, 1)
    return X


def missing_rows(rng, n: int, n_features: int = 8):
    """Normal rows with 15% NaN and 15% zeros, and a target that NaN and zeros in the first
    columns move: data that trains LightGBM's missing types on both default sides."""
    X = rng.normal(size=(n, n_features))
    X[rng.random(X.shape) < 0.15] = np.nan
    X[rng.random(X.shape) < 0.15] = 0.0
    y = np.nan_to_num(X[:, 0]) - 2 * (X[:, 1] == 0) + np.isnan(X[:, 2]) + rng.normal(size=n)
    return X, y


def category_rows(rng, n: int, n_features: int) -> np.ndarray:
    """special_rows, a third of them category-like: small integers and their neighbours
    (fractions that truncate to them, -0.5, -1), categories past the codes (254, 300, 2**24),
    NaN and infinities."""
    X = special_rows(rng, n, n_features)
    k = n // 3
    cats = rng.integers(-2, 80, size=(k, n_features)).astype(np.float64)
    cats += rng.choice([0.0, 0.0, 0.3, 0.999, -0.5], size=cats.shape)
    odd = rng.random(cats.shape) < 0.15
    cats[odd] = rng.choice([253.0, 254.0, 300.0, 2.0**24, 2.0**31, -np.inf, np.inf, np.nan,
                            -0.0], size=int(odd.sum()))
    X[n - k:] = cats
    return X


def scoring_algorithms(model) -> list[str]:
    """The algorithms that can score ``model``; every other one must refuse it clearly."""
    import quickscorer
    supported = model.supported_algorithms()
    for name in set(quickscorer.available_algorithms()) - set(supported):
        with pytest.raises(ValueError, match=f"algorithm '{name}' cannot score this model"):
            model.prepare(name)
    return supported


def run_kernel(alg, ens, X, n_threads=1):
    """Raw scores (in the model's precision) and exit leaves of an Algorithm's own calls."""
    k = ens.n_outputs
    dtype = np.float32 if ens.family == "xgboost" else np.float64
    out = np.empty((X.shape[0], k), dtype)
    empty = np.empty((0, k), np.float64 if dtype == np.float32 else np.float32)
    if dtype == np.float32:
        alg.predict_raw(X, empty, out, n_threads)
    else:
        alg.predict_raw(X, out, empty, n_threads)
    leaves = np.empty((X.shape[0], ens.n_trees), np.int32)
    alg.predict_leaf(X, leaves, n_threads)
    return out, leaves


#: the kinds of damage :func:`damaged` does
DAMAGES = ["flip", "truncate", "delete", "insert", "byte"]


def damaged(raw: bytes, pos: float, kind: str, byte: int) -> bytes:
    """``raw`` with one damage at relative position ``pos`` (0 <= pos < 1): a flipped bit, the
    rest cut off, a byte deleted, ``byte`` inserted, or a byte set to ``byte``."""
    out = bytearray(raw)
    i = int(pos * len(out))
    if kind == "flip":
        out[i] ^= 1 << (byte % 8)
    elif kind == "truncate":
        del out[i:]
    elif kind == "delete":
        del out[i]
    elif kind == "insert":
        out.insert(i, byte)
    else:
        out[i] = byte
    return bytes(out)
