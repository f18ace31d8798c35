"""Soft prediction, leaf attention, general (multiway) trees and oblique trees."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import random_ensemble, special_rows
from hypothesis import given, settings
from hypothesis import strategies as st

import quickscorer
from quickscorer.ir import reference
from quickscorer.paper import representations as rep
from quickscorer.paper.soft import (
    GeneralTree,
    ObliqueTree,
    leaf_attention,
    leaf_probabilities,
    predict_soft,
)


def _away_from_thresholds(ens, X, margin=1e-3):
    """Rows whose numerical values are at least ``margin`` from every threshold they meet."""
    ok = np.ones(X.shape[0], bool)
    for tree in ens.trees:
        for n in range(tree.n_internal):
            if not tree.is_categorical[n]:
                thr = tree.threshold[n]
                x = X[:, tree.feature[n]]
                x0 = np.where(np.isnan(x), 0.0, x)   # LightGBM's None type compares NaN as 0
                with np.errstate(invalid="ignore"):
                    near = ((np.abs(x - thr) < margin) | (x == thr) | (np.abs(x0 - thr) < margin)
                            | (x0 == thr))
                ok &= ~near
    return ok


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), family=st.sampled_from(["lightgbm", "xgboost"]))
def test_leaf_probabilities_sum_to_one_and_harden(seed, family):
    rng = np.random.default_rng(seed)
    ens = random_ensemble(rng, family, n_trees=5, max_leaves=30)
    X = special_rows(rng, 60, ens.n_features)
    X = X[_away_from_thresholds(ens, X)]
    hard = reference.predict_leaf(ens, X)
    for t, tree in enumerate(ens.trees):
        soft = leaf_probabilities(ens, tree, X, temperature=1.0)
        np.testing.assert_allclose(soft.sum(axis=1), 1.0, rtol=1e-12)
        assert (soft >= 0).all()
        tiny = leaf_probabilities(ens, tree, X, temperature=1e-9)
        np.testing.assert_array_equal(tiny, np.eye(tree.n_leaves)[hard[:, t]])


def test_predict_soft_tends_to_predict():
    rng = np.random.default_rng(4)
    ens = random_ensemble(rng, "lightgbm", n_trees=8, max_leaves=20, n_outputs=2)
    model = quickscorer.Model(ens)
    X = rng.normal(size=(200, ens.n_features)) * 3
    X = X[_away_from_thresholds(ens, X)]
    hard = model.predict(X, raw_score=True)
    gaps = [np.abs(predict_soft(model, X, T, raw_score=True) - hard).max()
            for T in (10.0, 1.0, 0.1, 1e-9)]
    assert gaps[0] > gaps[-1]
    assert gaps[-1] < 1e-12
    assert predict_soft(model, X, 1.0).shape == hard.shape


def test_predict_soft_on_a_real_lightgbm_model():
    lgb = pytest.importorskip("lightgbm", reason="the test extra installs lightgbm")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 5))
    y = (X[:, 0] + X[:, 1] > 0).astype(float)
    booster = lgb.train(dict(objective="binary", num_leaves=8, verbose=-1, num_threads=1),
                        lgb.Dataset(X, y), num_boost_round=5)
    model = quickscorer.load(booster)
    Xt = X[:50][_away_from_thresholds(model.ensemble, X[:50], 1e-6)]
    np.testing.assert_allclose(predict_soft(model, Xt, 1e-12), booster.predict(Xt), rtol=1e-12)


def test_leaf_attention_peaks_at_the_exit_leaf():
    rng = np.random.default_rng(8)
    ens = random_ensemble(rng, "xgboost", n_trees=6, max_leaves=25)
    model = quickscorer.Model(ens)
    X = special_rows(rng, 50, ens.n_features)
    att = leaf_attention(model, X)
    leaves = model.predict_leaf(X, algorithm="traversal")
    for t, a in enumerate(att):
        np.testing.assert_allclose(a.sum(axis=1), 1.0, rtol=1e-12)
        np.testing.assert_array_equal(np.argmax(a, axis=1), leaves[:, t])


def _random_general_tree(rng, n_internal):
    """A random multiway tree: grow by turning a random leaf into a node of 2-4 edges."""
    children = [[-1, -2]]
    while len(children) < n_internal:
        k = int(rng.integers(2, 5))
        # pick a leaf slot to expand
        slots = [(n, e) for n, cs in enumerate(children) for e, c in enumerate(cs) if c < 0]
        n, e = slots[int(rng.integers(len(slots)))]
        children[n][e] = len(children)
        children.append([-1] * k)
    # number leaves left to right
    counter = [0]

    def number(n):
        for e, c in enumerate(children[n]):
            if c < 0:
                children[n][e] = ~counter[0]
                counter[0] += 1
            else:
                number(c)
    number(0)
    weights = []
    for cs in children:
        w = rng.uniform(0.05, 1.0, size=len(cs))
        weights.append(w / w.sum())
    return GeneralTree(children, weights)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 12))
def test_general_tree_and_its_binary_conversion_agree(seed, n):
    rng = np.random.default_rng(seed)
    g = _random_general_tree(rng, n)
    dist = g.leaf_distribution()
    assert dist.shape == (g.n_leaves,)
    assert dist.sum() == pytest.approx(1.0, rel=1e-12)
    b = g.to_binary()
    assert b.structure.n_leaves == g.n_leaves
    np.testing.assert_allclose(b.leaf_distribution(), dist, rtol=1e-12)
    # the path matrix equals sum_e B_e diag(p_e), and a leaf's probability is the product of
    # the edge weights on its path, computed here by walking
    for leaf in range(g.n_leaves):
        prob, node = 1.0, 0
        while True:
            e = next(e for e, c in enumerate(g.children[node])
                     if (c < 0 and ~c == leaf) or (c >= 0 and leaf in _leaves_under(g, c)))
            prob *= g.weights[node][e]
            c = g.children[node][e]
            if c < 0:
                break
            node = c
        assert dist[leaf] == pytest.approx(prob, rel=1e-12)


def _leaves_under(g, n):
    out = set()
    for c in g.children[n]:
        out |= {~c} if c < 0 else _leaves_under(g, c)
    return out


def test_general_tree_validates():
    with pytest.raises(ValueError):
        GeneralTree([[-1]], [[1.0]])
    with pytest.raises(ValueError):
        GeneralTree([[-1, -2]], [[0.7, 0.7]])


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_leaves=st.integers(1, 40))
def test_oblique_batch_equals_walking(seed, n_leaves):
    rng = np.random.default_rng(seed)
    from conftest import random_tree
    shape = random_tree(rng, n_leaves, 3, "lightgbm")
    structure = rep.Structure(shape.left, shape.right)
    m = structure.n_internal
    # small integers: products and sums are exact, so batch and walk cannot differ by rounding
    W = rng.integers(-3, 4, size=(m, 3)).astype(float)
    gamma = rng.integers(-4, 5, size=m).astype(float)
    X = rng.integers(-5, 6, size=(80, 3)).astype(float)
    tree = ObliqueTree(structure, W, gamma)
    want = np.array([tree.walk(x) for x in X])
    for method in ("lt1", "two_sided", "sign", "ecoc"):
        np.testing.assert_array_equal(tree.exit_leaves(X, method), want, err_msg=method)
