"""The arithmetic exit-leaf kernels (both_vectors, lt1, two_sided, sign, ecoc) against the
reference: exit leaves and raw scores, bit for bit, on random trees of every size."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from conftest import random_ensemble, random_tree, special_rows
from hypothesis import given, settings
from hypothesis import strategies as st

import quickscorer
from quickscorer import _kernel
from quickscorer._forest import Forest
from quickscorer.algorithms import _arithmetic
from quickscorer.algorithms.arithmetic import arithmetic_arrays
from quickscorer.algorithms.forest import forest_arrays
from quickscorer.ir import Ensemble, reference

ARITHMETIC = ["both_vectors", "lt1", "two_sided", "sign", "ecoc"]


def test_all_are_registered():
    assert set(ARITHMETIC) <= set(quickscorer.available_algorithms())


def _check(model, X):
    want_leaf = reference.predict_leaf(model.ensemble, X)
    want_raw = reference.predict_raw(model.ensemble, X)
    for alg in ARITHMETIC:
        np.testing.assert_array_equal(model.predict_leaf(X, algorithm=alg), want_leaf,
                                      err_msg=alg)
        got = model.predict_raw(X, algorithm=alg)
        np.testing.assert_array_equal(got, want_raw.astype(got.dtype), err_msg=alg)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), family=st.sampled_from(["lightgbm", "xgboost"]),
       n_trees=st.integers(1, 12), max_leaves=st.sampled_from([2, 8, 40, 70]),
       n_outputs=st.integers(1, 3))
def test_random_models_match_the_reference(seed, family, n_trees, max_leaves, n_outputs):
    rng = np.random.default_rng(seed)
    ens = random_ensemble(rng, family, n_trees=n_trees, n_outputs=n_outputs,
                          max_leaves=max_leaves)
    _check(quickscorer.Model(ens), special_rows(rng, 50, ens.n_features))


@pytest.mark.parametrize("family", ["lightgbm", "xgboost"])
def test_trees_of_1_to_255_leaves_in_one_model(family):
    rng = np.random.default_rng(11)
    trees = tuple(random_tree(rng, n, 6, family) for n in (1, 2, 63, 64, 65, 255, 1, 130))
    ens = Ensemble(trees=trees, tree_group=np.zeros(len(trees)), n_outputs=1, n_features=6,
                   family=family, base_score=[0.5])
    model = quickscorer.Model(ens)
    X = special_rows(rng, 300, 6)
    _check(model, X)
    _check(model, X.astype(np.float32))


def test_layout_rows_are_the_packed_matrices():
    rng = np.random.default_rng(3)
    ens = random_ensemble(rng, "lightgbm", n_trees=3, max_leaves=70)
    from quickscorer.paper.representations import pack_columns, pack_rows
    lt1 = arithmetic_arrays(ens, "lt1")
    sign = arithmetic_arrays(ens, "sign")
    both = arithmetic_arrays(ens, "both_vectors")
    for t, tree in enumerate(ens.trees):
        if tree.n_internal == 0:
            continue
        nw, lw = int(lt1["node_words"][t]), int(lt1["leaf_words"][t])
        a, b = lt1["row_offset"][t], lt1["row_offset"][t + 1]
        np.testing.assert_array_equal(lt1["rows_a"][a:b],
                                      pack_rows(tree.left_matrix(), nw).ravel())
        P = tree.path_matrix()
        np.testing.assert_array_equal(sign["rows_b"][a:b], pack_rows(P > 0, nw).ravel())
        a, b = both["col_offset"][t], both["col_offset"][t + 1]
        np.testing.assert_array_equal(both["cols_r"][a:b],
                                      pack_columns(tree.right_matrix(), lw).ravel())


def test_threads_and_batches():
    rng = np.random.default_rng(5)
    ens = random_ensemble(rng, "lightgbm", n_trees=30, max_leaves=100, n_outputs=2)
    model = quickscorer.Model(ens)
    X = special_rows(rng, 257, ens.n_features)
    for alg in ARITHMETIC:
        one = model.predict_raw(X, algorithm=alg)
        np.testing.assert_array_equal(model.predict_raw(X, algorithm=alg, n_threads=2), one)
        np.testing.assert_array_equal(model.predict_raw(X[:1], algorithm=alg), one[:1])
        results = [None] * 4

        def work(k):
            results[k] = model.predict_raw(X, algorithm=alg)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        for r in results:
            np.testing.assert_array_equal(r, one)


def test_a_wrong_row_is_caught():
    """The layout is what the kernels trust: damaging one packed row changes exit leaves."""
    rng = np.random.default_rng(9)
    ens = random_ensemble(rng, "lightgbm", n_trees=1, max_leaves=20, p_categorical=0)
    while ens.trees[0].n_leaves < 8:
        ens = random_ensemble(rng, "lightgbm", n_trees=1, max_leaves=20, p_categorical=0)
    a = dict(arithmetic_arrays(ens, "sign"))
    rows = a["rows_b"].copy()
    rows[: len(rows)] ^= np.uint64(1)  # flip every leaf's expected sign at the root
    a["rows_b"] = rows
    lay = _arithmetic.ArithLayout(a, _arithmetic.KIND_SIGN, ens.n_features)
    forest = Forest(forest_arrays(ens))
    X = special_rows(rng, 200, ens.n_features)
    out = np.empty((200, 1), np.int32)
    _kernel.predict_leaf(forest, lay, X, out, np.empty((1, ens.n_features)),
                         np.empty((1, lay.scratch_words), np.uint64), 1)
    assert (out[:, 0] != reference.predict_leaf(ens, X)[:, 0]).any()
