"""The two sums that add a product (a LightGBM linear leaf's terms, an XGBoost DART tree's
weighted leaf), rounded as the source libraries' builds for this machine round them: the
product rounded on its own on x86-64, fused with the sum into one rounding on AArch64
(docs/semantics.md, "On AArch64"). Every kernel against the rule, on values chosen so that
the two roundings give different scores."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from conftest import build_tree

from quickscorer import Model
from quickscorer.ir import Ensemble, reference

F32 = np.float32


def _nearest_f32(exact: Fraction) -> np.float32:
    """The float32 nearest to exact, ties to the even one, by search (no float arithmetic)."""
    guess = np.float32(float(exact))
    cands = [np.nextafter(guess, F32(-np.inf)), guess, np.nextafter(guess, F32(np.inf))]
    dist = [abs(Fraction(float(c)) - exact) for c in cands]
    best = min(dist)
    ties = [c for c, d in zip(cands, dist) if d == best]
    return min(ties, key=lambda c: int(np.array(c, F32).view(np.uint32)) & 1)


def test_fma_rounds_once():
    a, b = 1.0 + 2.0**-30, 1.0 - 2.0**-30
    assert a * b - 1.0 == 0.0                        # the product rounded first: 1.0
    assert reference.fma(a, b, -1.0) == -(2.0**-60)  # rounded once: the exact -2^-60
    assert reference.fma(3.0, 0.5, 0.25) == 1.75
    assert math.isnan(reference.fma(math.inf, 0.0, 1.0))
    assert reference.fma(1e308, 10.0, 0.0) == math.inf
    assert math.copysign(1.0, reference.fma(-0.0, 1.0, -0.0)) == -1.0


def test_fma_f32_is_the_nearest_float32_to_the_exact_sum():
    rng = np.random.default_rng(5)
    n = 3000
    a = (rng.normal(size=n) * 10.0 ** rng.integers(-3, 3, n)).astype(F32)
    b = rng.uniform(0.05, 1.5, n).astype(F32)
    c = (rng.normal(size=n) * 10.0 ** rng.integers(-3, 3, n)).astype(F32)
    # a sum whose float64 rounding lands on a midpoint between two float32 values, where
    # rounding it again to float32 (ties to even) goes the wrong way: 1 + 2^-23 plus
    # 2^-24 - 2^-70, just below the midpoint, is 1 + 2^-23
    a[0], b[0], c[0] = F32(1 + 2.0**-23), F32(2.0**-24 - 2.0**-47), F32(1 + 2.0**-23)
    # and just above one, where ties to even would round down
    a[1], b[1], c[1] = F32(1 + 2.0**-23), F32(2.0**-24 + 2.0**-47), F32(1.0)
    got = reference.fma_f32(a, b, c)
    assert got.dtype == F32
    want = np.array([_nearest_f32(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)))
                     for x, y, z in zip(a, b, c)], F32)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    assert got[0] == F32(1 + 2.0**-23)
    double_rounded = (a.astype(np.float64) * b + c).astype(F32)
    assert double_rounded[0] != got[0]               # the case the two-sum is there for
    assert (a * b + c != got).any()                  # product rounded first: other values


def _stump(value_left: float, value_right: float, threshold: float, n_features: int,
           linear=None):
    return build_tree(left=[1, -1, -1], right=[2, -1, -1], root=0, feature=[0, 0, 0],
                      threshold=[threshold, 0, 0], default_left=[True] * 3,
                      missing_type=[2] * 3, is_categorical=[False] * 3, categories=None,
                      value=[0.0, value_left, value_right], n_features=n_features,
                      linear=linear)


def _algorithms(ens, X):
    """Each algorithm that takes this model, with its raw scores."""
    m = Model(ens)
    algs = m.supported_algorithms()
    assert {"quickscorer", "rapidscorer", "traversal", "vqs", "walk"} <= set(algs)
    for alg in algs:
        yield alg, m.predict_raw(X, algorithm=alg)


def test_dart_weighted_leaves_round_as_the_library_build_does():
    rng = np.random.default_rng(11)
    n_trees, n = 40, 200
    trees = tuple(_stump(*rng.normal(size=2), float(rng.normal()), 2) for _ in range(n_trees))
    weights = rng.uniform(0.1, 1.0, n_trees)
    ens = Ensemble(trees=trees, tree_group=np.zeros(n_trees, np.int64), n_outputs=1,
                   n_features=2, family="xgboost", base_score=[0.5], tree_weight=weights)
    X = rng.normal(size=(n, 2))
    leaves = reference.predict_leaf(ens, X)
    fused = np.full(n, F32(0.5))
    unfused = fused.copy()
    for t, tree in enumerate(trees):
        v = tree.leaf_value[leaves[:, t]].astype(F32)
        w = F32(weights[t])
        fused = reference.fma_f32(v, w, fused)
        unfused = unfused + v * w
    assert (fused != unfused).sum() > n // 10       # the rule decides many of these scores
    want = fused if reference.FUSED_SUMS else unfused
    for alg, got in _algorithms(ens, X):
        np.testing.assert_array_equal(got[:, 0], want, err_msg=alg)
        got2 = Model(ens).predict_raw(X, algorithm=alg, n_threads=2)
        np.testing.assert_array_equal(got2[:, 0], want, err_msg=f"{alg}, 2 threads")


def test_linear_leaf_terms_round_as_the_library_build_does():
    rng = np.random.default_rng(13)
    n_trees, n, nf = 12, 200, 4

    def linear():
        return {i: (float(rng.normal()), [int(f) for f in rng.permutation(nf)[:3]],
                    rng.normal(size=3).tolist()) for i in (1, 2)}
    trees = tuple(_stump(0.0, 0.0, float(rng.normal()), nf, linear=linear())
                  for _ in range(n_trees))
    ens = Ensemble(trees=trees, tree_group=np.zeros(n_trees, np.int64), n_outputs=1,
                   n_features=nf, family="lightgbm", base_score=[0.0])
    X = rng.normal(size=(n, nf)) * 3
    leaves = reference.predict_leaf(ens, X)
    fused, unfused = np.zeros(n), np.zeros(n)
    for t, tree in enumerate(trees):
        lin = tree.linear
        for r in range(n):
            leaf = leaves[r, t]
            f = u = float(lin.const[leaf])
            for k in range(lin.offsets[leaf], lin.offsets[leaf + 1]):
                x, c = float(X[r, lin.feature[k]]), float(lin.coeff[k])
                f = reference.fma(c, x, f)
                u = u + c * x
            fused[r] += f
            unfused[r] += u
    assert (fused != unfused).sum() > n // 10
    want = fused if reference.FUSED_SUMS else unfused
    for alg, got in _algorithms(ens, X):
        np.testing.assert_array_equal(got[:, 0], want, err_msg=alg)
