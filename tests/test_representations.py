"""The paper's matrix representations: its worked example, and its properties on random trees."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import random_tree, special_rows
from hypothesis import given, settings
from hypothesis import strategies as st

from quickscorer.ir import MISSING_NAN, Ensemble, build_tree
from quickscorer.paper import representations as rep


def paper_tree():
    """n0 -> (n1, n2); n1 -> (v1, v2); n2 -> (n3, n4); n3 -> (v3, v4); n4 -> (v5, v6).

    Source numbering: internal 0-4 as in the paper, leaves v1..v6 as 5..10. Node n tests
    feature n against 0.5, so an input chooses which nodes are false.
    """
    left = [1, 5, 3, 7, 9, -1, -1, -1, -1, -1, -1]
    right = [2, 6, 4, 8, 10, -1, -1, -1, -1, -1, -1]
    k = len(left)
    return build_tree(left=left, right=right, root=0, feature=[0, 1, 2, 3, 4] + [0] * 6,
                      threshold=[0.5] * k, default_left=[False] * k,
                      missing_type=[MISSING_NAN] * k, is_categorical=[False] * k,
                      categories=None, value=[0.0] * 5 + [1, 2, 3, 4, 5, 6], n_features=5)


PAPER_L = [[0, 0, 1, 1, 1], [0, 1, 1, 1, 1], [1, 1, 0, 0, 1], [1, 1, 0, 1, 1],
           [1, 1, 1, 1, 0], [1, 1, 1, 1, 1]]
PAPER_R = [[1, 1, 1, 1, 1], [1, 0, 1, 1, 1], [0, 1, 1, 1, 1], [0, 1, 1, 0, 1],
           [0, 1, 0, 1, 1], [0, 1, 0, 1, 0]]
PAPER_P = [[-1, -1, 0, 0, 0], [-1, 1, 0, 0, 0], [1, 0, -1, -1, 0], [1, 0, -1, 1, 0],
           [1, 0, 1, 0, -1], [1, 0, 1, 0, 1]]


def test_paper_worked_example():
    tree = paper_tree()
    np.testing.assert_array_equal(tree.left_matrix(), PAPER_L)
    np.testing.assert_array_equal(tree.right_matrix(), PAPER_R)
    np.testing.assert_array_equal(tree.path_matrix(), PAPER_P)
    np.testing.assert_array_equal(tree.depth_vector(), [2, 2, 3, 3, 3, 3])
    # s = [+1, +1, -1, -1, +1]: n0, n1, n4 false (x > 0.5), n2, n3 true
    ens = Ensemble(trees=(tree,), tree_group=[0], n_outputs=1, n_features=5,
                   family="lightgbm", base_score=[0.0])
    x = np.array([[1.0, 1.0, 0.0, 0.0, 1.0]])
    s = rep.signed_test_vector(ens, tree, x)
    np.testing.assert_array_equal(s, [[1, 1, -1, -1, 1]])
    v = (tree.path_matrix() @ s[0]) / tree.depth_vector()
    np.testing.assert_allclose(v, [-1, 0, 1, 1 / 3, -1 / 3, 1 / 3], rtol=0, atol=1e-15)
    assert int(np.argmax(v)) == 2  # v3
    from quickscorer.ir.reference import predict_leaf
    assert predict_leaf(ens, x)[0, 0] == 2


def test_fuzzy_matrix_rows_multiply_to_leaf_probabilities():
    tree = paper_tree()
    p = np.array([0.9, 0.2, 0.6, 0.5, 0.3])
    F = rep.fuzzy_matrix(tree, p)
    probs = np.prod(F, axis=1)
    want = [0.9 * 0.2, 0.9 * 0.8, 0.1 * 0.6 * 0.5, 0.1 * 0.6 * 0.5, 0.1 * 0.4 * 0.3,
            0.1 * 0.4 * 0.7]
    np.testing.assert_allclose(probs, want, rtol=1e-15)
    assert probs.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(np.exp(np.log(F).sum(axis=1)), probs, rtol=1e-12)


trees = st.builds(
    lambda seed, n: random_tree(np.random.default_rng(seed), n, 4, "lightgbm"),
    st.integers(0, 2**32 - 1), st.integers(1, 80))


@settings(max_examples=60, deadline=None)
@given(trees)
def test_matrix_identities(tree):
    L, R, P, d = tree.left_matrix(), tree.right_matrix(), tree.path_matrix(), tree.depth_vector()
    m, n = tree.n_internal, tree.n_leaves
    assert L.shape == R.shape == P.shape == (n, m)
    np.testing.assert_array_equal(P, L - R)
    np.testing.assert_array_equal(d, (P != 0).sum(axis=1))
    assert ((L == 0) & (R == 0)).sum() == 0          # no leaf on both sides of a node
    assert (P != 0).sum() == d.sum()
    # leaf depths of a binary tree satisfy Kraft's equality
    assert np.sum(0.5 ** d) == pytest.approx(1.0)


@settings(max_examples=60, deadline=None)
@given(trees)
def test_ranks_are_full(tree):
    r = rep.ranks(tree)
    assert r["L1"] == tree.n_leaves
    assert r["R1"] == tree.n_leaves
    assert r["P"] == tree.n_internal


@settings(max_examples=60, deadline=None)
@given(trees)
def test_structure_recovered_from_left_or_right_matrix_alone(tree):
    for recovered in (rep.structure_from_left_matrix(tree.left_matrix()),
                      rep.structure_from_right_matrix(tree.right_matrix())):
        np.testing.assert_array_equal(recovered.left, tree.left)
        np.testing.assert_array_equal(recovered.right, tree.right)
        np.testing.assert_array_equal(rep.left_matrix(recovered), tree.left_matrix())


def test_recovery_refuses_a_matrix_of_no_tree():
    bad = np.array([[0, 1], [1, 1], [0, 1]])  # column 0's zeros are not contiguous
    with pytest.raises(ValueError):
        rep.structure_from_left_matrix(bad)


def _perfect_tree(k):
    m = (1 << k) - 1
    # source numbering: the heap order, internal 0..m-1 breadth-first, leaves m..2m
    lc = [(2 * i + 1) for i in range(m)]
    rc = [(2 * i + 2) for i in range(m)]
    k_all = 2 * m + 1
    left = lc + [-1] * (m + 1)
    right = rc + [-1] * (m + 1)
    return build_tree(left=left, right=right, root=0, feature=[0] * k_all,
                      threshold=[0.0] * k_all, default_left=[False] * k_all,
                      missing_type=[MISSING_NAN] * k_all, is_categorical=[False] * k_all,
                      categories=None, value=np.arange(k_all, dtype=float), n_features=1)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 6])
def test_perfect_tree_matrices_follow_the_recursive_pattern(k):
    tree = _perfect_tree(k)
    np.testing.assert_array_equal(rep.perfect_left_matrix(k), tree.left_matrix())
    np.testing.assert_array_equal(rep.perfect_right_matrix(k), tree.right_matrix())


def _ens(tree, family="lightgbm"):
    return Ensemble(trees=(tree,), tree_group=[0], n_outputs=1, n_features=4, family=family,
                    base_score=[0.0])


@settings(max_examples=40, deadline=None)
@given(trees, st.integers(0, 2**32 - 1))
def test_every_exit_formula_finds_the_reference_leaf(tree, seed):
    from quickscorer.ir.reference import predict_leaf
    rng = np.random.default_rng(seed)
    ens = _ens(tree)
    X = special_rows(rng, 40, 4)
    want = predict_leaf(ens, X)[:, 0]
    t = rep.test_vector(ens, tree, X)
    s = 2 * t.astype(np.int64) - 1
    L, R, P, d = tree.left_matrix(), tree.right_matrix(), tree.path_matrix(), tree.depth_vector()
    np.testing.assert_array_equal(rep.exit_leaf_lt1(L, t), want)
    np.testing.assert_array_equal(rep.exit_leaf_two_sided(L, R, t), want)
    np.testing.assert_array_equal(rep.exit_leaf_sign(P, d, s), want)
    np.testing.assert_array_equal(rep.exit_leaf_ecoc(P, s), want)
    # D^-1 P s has its unique maximum, 1, at the exit leaf
    if tree.n_internal:
        v = (s @ P.T) / d[None, :]
        assert (v.max(axis=1) == 1).all()
        assert ((v == 1).sum(axis=1) == 1).all()
    # argmax invariance: positive weights on t, and -1 for 0 in L, keep the leftmost maximum.
    # Integer weights, so that the tied leaves' sums are exact: with fractional ones, BLAS may
    # round the same terms differently on different rows and break the tie at random.
    w = rng.integers(1, 50, size=tree.n_internal).astype(np.float64)
    np.testing.assert_array_equal(np.argmax((t * w) @ L.T, axis=1), want)
    Lneg = np.where(L == 0, -1, L)
    np.testing.assert_array_equal(np.argmax(t.astype(np.int64) @ Lneg.T, axis=1), want)


@settings(max_examples=30, deadline=None)
@given(trees, st.integers(0, 2**32 - 1))
def test_pruning_removes_leaves_from_every_result(tree, seed):
    if tree.n_leaves < 3:
        return
    rng = np.random.default_rng(seed)
    ens = _ens(tree)
    X = special_rows(rng, 30, 4)
    t = rep.test_vector(ens, tree, X).astype(np.int64)
    gone = rng.choice(tree.n_leaves, size=tree.n_leaves // 2, replace=False)
    L = rep.prune(tree.left_matrix(), gone)
    v = t @ L.T + 1
    # a pruned leaf scores 1 at most, below every remaining leaf that is consistent with t;
    # the exit leaf, if kept, is still the leftmost maximum
    from quickscorer.ir.reference import predict_leaf
    want = predict_leaf(ens, X)[:, 0]
    kept = ~np.isin(want, gone)
    np.testing.assert_array_equal(np.argmax(v, axis=1)[kept & (t.sum(axis=1) > 0)],
                                  want[kept & (t.sum(axis=1) > 0)])
    assert (v[:, gone] <= 1).all()


def test_pack_rows_bit_order():
    M = np.zeros((2, 130), np.int8)
    M[0, [0, 63, 64, 129]] = 1
    M[1, 1] = 1
    packed = rep.pack_rows(M)
    assert packed.shape == (2, 3)
    assert packed[0].tolist() == [1 | (1 << 63), 1, 2]
    assert packed[1].tolist() == [2, 0, 0]
    np.testing.assert_array_equal(rep.pack_columns(M.T), packed)
