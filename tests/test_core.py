"""The neutral IR, input handling, pickling, threads: no source library needed."""
from __future__ import annotations

import pickle
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from conftest import random_ensemble, scoring_algorithms, special_rows

import quickscorer
from quickscorer import InputError, Model, ModelFormatError, threads
from quickscorer.algorithms.forest import category_tables
from quickscorer.ir import Ensemble, build_tree, reference
from quickscorer.ir.ensemble import MAX_CATEGORY_WORDS
from quickscorer.plan import resolve_threads

# The paper's worked example: n0 -> (n1, n2); n1 -> (v1, v2); n2 -> (n3, n4); n3 -> (v3, v4);
# n4 -> (v5, v6). Source nodes 0-4 internal, 5-10 leaves v1..v6.
PAPER_LEFT = [1, 5, 3, 7, 9] + [-1] * 6
PAPER_RIGHT = [2, 6, 4, 8, 10] + [-1] * 6


def paper_tree(**over):
    kw = dict(left=PAPER_LEFT, right=PAPER_RIGHT, root=0, feature=[0, 1, 2, 3, 4] + [0] * 6,
              threshold=[0.5] * 11, default_left=[False] * 11, missing_type=[2] * 11,
              is_categorical=[False] * 11, categories=None, value=np.arange(11.0),
              n_features=5)
    kw.update(over)
    return build_tree(**kw)


def test_canonical_numbering_of_the_paper_tree():
    t = paper_tree()
    assert t.left.tolist() == [1, ~0, 3, ~2, ~4]
    assert t.right.tolist() == [2, ~1, 4, ~3, ~5]
    assert t.leaf_value.tolist() == [5, 6, 7, 8, 9, 10]
    assert t.leaf_source_id.tolist() == [5, 6, 7, 8, 9, 10]
    lo, mid, hi = t.leaf_ranges()
    assert lo.tolist() == [0, 0, 2, 2, 4] and mid.tolist() == [2, 1, 4, 3, 5]
    assert hi.tolist() == [6, 2, 6, 4, 6]
    assert t.depth() == 3


def test_breadth_first_renumbering_of_a_shuffled_source():
    # The same tree with source ids permuted must give the same canonical arrays.
    perm = np.array([4, 9, 0, 7, 2, 10, 1, 6, 3, 8, 5])  # new id of old node i
    inv = np.argsort(perm)
    left = [perm[PAPER_LEFT[inv[j]]] if PAPER_LEFT[inv[j]] >= 0 else -1 for j in range(11)]
    right = [perm[PAPER_RIGHT[inv[j]]] if PAPER_RIGHT[inv[j]] >= 0 else -1 for j in range(11)]
    feature = np.array([0, 1, 2, 3, 4] + [0] * 6)[inv]
    t = paper_tree(left=left, right=right, root=int(perm[0]), feature=feature,
                   value=np.arange(11.0)[inv])
    ref = paper_tree()
    for name in ("left", "right", "feature", "leaf_value"):
        np.testing.assert_array_equal(getattr(t, name), getattr(ref, name))


@pytest.mark.parametrize("change, message", [
    (dict(left=[1, 5, 3, 7, 99] + [-1] * 6), "out of range"),
    (dict(left=[1, 5, 3, 7, 0] + [-1] * 6), "reached twice"),
    (dict(left=[1, 5, 3, 7, 9] + [-1] * 6, right=[2, 6, 4, 8, 9] + [-1] * 6), "reached twice"),
    (dict(threshold=[0.5, np.nan] + [0.5] * 9), "NaN threshold"),
    (dict(feature=[0, 1, 2, 3, 7] + [0] * 6), "feature 7"),
    (dict(value=[0.0] * 10), "expected 11"),
    (dict(value=[0.0] * 10 + [np.nan]), "leaf value is not finite"),
    (dict(missing_type=[5] * 11), "missing type"),
    (dict(root=11), "root 11"),
    (dict(left=[], right=[]), "empty tree"),
])
def test_invalid_trees_are_refused_with_a_named_reason(change, message):
    with pytest.raises(ModelFormatError, match=message):
        paper_tree(**change)


def test_orphan_node_is_refused():
    with pytest.raises(ModelFormatError, match="not reachable"):
        build_tree(left=[1, -1, -1, -1], right=[2, -1, -1, -1], root=0, feature=[0] * 4,
                   threshold=[0.0] * 4, default_left=[0] * 4, missing_type=[0] * 4,
                   is_categorical=[0] * 4, categories=None, value=[0.0] * 4, n_features=1,
                   where="tree 7")


def test_error_names_the_tree():
    with pytest.raises(ModelFormatError, match="tree 7: node 4 has a child index out of range"):
        paper_tree(left=[1, 5, 3, 7, 99] + [-1] * 6, where="tree 7")


def test_categorical_values_must_be_integers():
    cat = [True] + [False] * 10
    with pytest.raises(ModelFormatError, match="invalid category"):
        paper_tree(is_categorical=cat, categories={0: [1.5]})
    with pytest.raises(ModelFormatError, match="invalid category"):
        paper_tree(is_categorical=cat, categories={0: [-1]})


def test_category_bitsets_too_large_are_refused_and_others_laid_out_word_by_word():
    """forest.category_tables lays every categorical node's bitset out at once: its words
    hold exactly the listed categories, and bitsets past MAX_CATEGORY_WORDS in all are
    refused, naming the category, when the ensemble is made."""
    cat = [True] + [False] * 10
    ens = Ensemble(trees=(paper_tree(is_categorical=cat, categories={0: [0, 31, 32, 95]}),
                          paper_tree(is_categorical=cat, categories={0: []}),
                          paper_tree(is_categorical=cat, categories={0: [5]})),
                   tree_group=[0, 0, 0], n_outputs=1, n_features=8, family="lightgbm",
                   base_score=[0.0])
    offset, nwords, words = category_tables(ens)
    root = np.asarray(ens.trees.node_offset[:-1])
    assert list(nwords[root]) == [3, 0, 1] and list(offset[root]) == [0, 3, 3]
    assert list(words) == [1 | (1 << 31), 1, 1 << 31, 1 << 5]
    # refused when the ensemble is made (so at load, never at a first call), in all as well as
    # for one node
    huge = 32 * MAX_CATEGORY_WORDS
    with pytest.raises(ModelFormatError, match=f"largest category {huge}"):
        Ensemble(trees=(paper_tree(is_categorical=cat, categories={0: [3, huge]}),),
                 tree_group=[0], n_outputs=1, n_features=8, family="lightgbm",
                 base_score=[0.0])
    half = 16 * MAX_CATEGORY_WORDS
    with pytest.raises(ModelFormatError, match=f"largest category {half}"):
        Ensemble(trees=(paper_tree(is_categorical=cat, categories={0: [half]}),) * 2,
                 tree_group=[0, 0], n_outputs=1, n_features=8, family="lightgbm",
                 base_score=[0.0])


@pytest.mark.parametrize("change, message", [
    (dict(tree_group=[1]), "output group"),
    (dict(base_score=[np.nan]), "base_score"),
    (dict(family="catboost"), "unknown model family"),
    (dict(transform="tanh"), "unknown output transform"),
    (dict(trees=()), "no trees"),
    (dict(feature_names=("a", "b")), "feature names"),
])
def test_invalid_ensembles_are_refused(change, message):
    kw = dict(trees=(paper_tree(),), tree_group=[0], n_outputs=1, n_features=5,
              family="lightgbm", base_score=[0.0])
    kw.update(change)
    with pytest.raises(ModelFormatError, match=message):
        Ensemble(**kw)


def test_model_format_error_is_a_value_error():
    assert issubclass(ModelFormatError, ValueError) and issubclass(InputError, ValueError)


@pytest.fixture(scope="module", params=["lightgbm", "xgboost"])
def random_model(request):
    rng = np.random.default_rng(1 if request.param == "lightgbm" else 2)
    return Model(random_ensemble(rng, request.param, n_trees=24, n_outputs=3, n_features=6,
                                 max_leaves=70))


def test_traversal_kernel_equals_numpy_oracle(random_model):
    rng = np.random.default_rng(3)
    X = special_rows(rng, 600, 6)
    e = random_model.ensemble
    for dtype in (np.float64, np.float32):
        Xd = X.astype(dtype)
        np.testing.assert_array_equal(random_model.predict_raw(Xd, algorithm="traversal"),
                                      reference.predict_raw(e, Xd))
        np.testing.assert_array_equal(random_model.predict_leaf(Xd, algorithm="traversal"),
                                      reference.predict_leaf(e, Xd))


def test_raw_dtype_follows_the_library(random_model):
    X = np.zeros((2, 6))
    want = np.float32 if random_model.ensemble.family == "xgboost" else np.float64
    assert random_model.predict_raw(X).dtype == want


def test_input_forms_give_the_same_scores(random_model):
    rng = np.random.default_rng(4)
    X = special_rows(rng, 50, 6)
    ref = random_model.predict(X, raw_score=True)
    np.testing.assert_array_equal(random_model.predict(np.asfortranarray(X), raw_score=True), ref)
    np.testing.assert_array_equal(random_model.predict(X[::1].copy()[:, :], raw_score=True), ref)
    np.testing.assert_array_equal(random_model.predict(X[3], raw_score=True), ref[3:4])
    np.testing.assert_array_equal(random_model.predict(X.tolist(), raw_score=True), ref)
    big = np.zeros((100, 12))
    big[::2, ::2] = X[:50]
    np.testing.assert_array_equal(random_model.predict(big[::2, ::2], raw_score=True), ref)
    Xi = np.round(np.clip(np.nan_to_num(X), -100, 100)).astype(np.int32)
    np.testing.assert_array_equal(random_model.predict(Xi, raw_score=True),
                                  random_model.predict(Xi.astype(np.float64), raw_score=True))


def test_empty_batch(random_model):
    out = random_model.predict(np.zeros((0, 6)), raw_score=True)
    assert out.shape == (0, 3)


@pytest.mark.parametrize("X, message", [
    (np.zeros((3, 5)), "5 features per row, the model expects 6"),
    (np.zeros((3, 7)), "7 features per row"),
    (np.array([["a"] * 6]), "not real-valued"),
    (np.zeros((2, 3, 6)), "must be 2-D"),
    (np.zeros((2, 6), dtype=complex), "not real-valued"),
])
def test_bad_inputs_raise_input_error(random_model, X, message):
    with pytest.raises(InputError, match=message):
        random_model.predict(X)


def test_dataframe_columns_are_matched_by_name():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(5)
    e = random_ensemble(rng, "lightgbm", n_features=4)
    e = Ensemble(**{**e.__dict__, "feature_names": ("a", "b", "c", "d")})
    m = Model(e)
    X = special_rows(rng, 40, 4)
    df = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    ref = m.predict(X, raw_score=True)
    np.testing.assert_array_equal(m.predict(df, raw_score=True), ref)
    np.testing.assert_array_equal(m.predict(df[["d", "b", "a", "c"]], raw_score=True), ref)
    with pytest.raises(InputError, match="3 columns"):
        m.predict(df[["a", "b", "c"]])


def test_sparse_absent_entries_follow_each_library():
    sp = pytest.importorskip("scipy.sparse")
    rng = np.random.default_rng(6)
    for family, fill in (("lightgbm", 0.0), ("xgboost", np.nan)):
        m = Model(random_ensemble(rng, family, n_features=5))
        dense = special_rows(rng, 30, 5)
        dense[rng.random(dense.shape) < 0.5] = 0.0
        zeroed = np.where(np.isnan(dense), 0.0, dense)
        csr = sp.csr_matrix(zeroed)  # explicit zeros are dropped
        want = np.where(zeroed == 0.0, fill, dense)
        np.testing.assert_array_equal(m.predict(csr, raw_score=True),
                                      m.predict(want, raw_score=True))


def test_pickle_round_trip(random_model):
    rng = np.random.default_rng(7)
    X = special_rows(rng, 100, 6)
    clone = pickle.loads(pickle.dumps(random_model))
    for alg in scoring_algorithms(random_model):
        np.testing.assert_array_equal(clone.predict(X, raw_score=True, algorithm=alg),
                                      random_model.predict(X, raw_score=True, algorithm=alg))


def test_model_arrays_are_read_only(random_model):
    tree = random_model.ensemble.trees[0]
    with pytest.raises(ValueError):
        tree.leaf_value[0] = 1.0


def test_many_python_threads_share_one_model(random_model):
    rng = np.random.default_rng(8)
    batches = [special_rows(rng, int(rng.integers(1, 300)), 6) for _ in range(32)]
    algs = scoring_algorithms(random_model)
    want = [random_model.predict(b, raw_score=True, algorithm=algs[i % len(algs)])
            for i, b in enumerate(batches)]
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(
            lambda ib: random_model.predict(ib[1], raw_score=True,
                                            algorithm=algs[ib[0] % len(algs)]),
            enumerate(batches)))
    for w, g in zip(want, got):
        np.testing.assert_array_equal(w, g)


def test_n_threads_do_not_change_scores(random_model):
    rng = np.random.default_rng(9)
    X = special_rows(rng, 1001, 6)
    one = random_model.predict(X, raw_score=True, n_threads=1)
    np.testing.assert_array_equal(random_model.predict(X, raw_score=True, n_threads=2), one)
    np.testing.assert_array_equal(random_model.predict(X, raw_score=True, n_threads=0), one)


@pytest.mark.parametrize("n_threads", [2, 3, 0])
def test_the_python_thread_pool_scores_as_one_thread(random_model, n_threads):
    # the threads of a build without OpenMP (quickscorer/threads.py), taken here on request
    rng = np.random.default_rng(10)
    X = special_rows(rng, 1003, 6)
    algs = scoring_algorithms(random_model)
    want = {a: (random_model.predict(X, raw_score=True, algorithm=a, n_threads=1),
                random_model.predict_leaf(X, algorithm=a, n_threads=1)) for a in algs}
    pooled = Model(random_model.ensemble,
                   tuning=quickscorer.current_tuning().replace(thread_pool=True))
    assert threads.use_pool(2, True) and not threads.use_pool(1, True)
    for a in algs:
        np.testing.assert_array_equal(
            pooled.predict(X, raw_score=True, algorithm=a, n_threads=n_threads), want[a][0])
        np.testing.assert_array_equal(
            pooled.predict_leaf(X, algorithm=a, n_threads=n_threads), want[a][1])
    # the pool's threads each take a slice of rows (0: every core, one on a 1-core CPU)
    seen = []

    def kernel(rows, out, n):
        seen.append((threading.current_thread().name, rows.shape[0], n))
        out[:] = rows[:, :1]

    out = np.empty((X.shape[0], 1))
    threads.run(kernel, X, (out,), resolve_threads(n_threads), pool=True)
    np.testing.assert_array_equal(out, X[:, :1])
    if resolve_threads(n_threads) > 1:
        assert len(seen) == min(resolve_threads(n_threads), X.shape[0])
        assert all(name.startswith("quickscorer") and n == 1 for name, _, n in seen)
        assert sum(rows for _, rows, _ in seen) == X.shape[0]
    else:
        assert seen == [(threading.current_thread().name, X.shape[0], 1)]


def test_unknown_algorithm_is_refused(random_model):
    with pytest.raises(ValueError, match="unknown algorithm 'nope'"):
        random_model.predict(np.zeros((1, 6)), algorithm="nope")


def test_load_refuses_garbage(tmp_path):
    p = tmp_path / "junk.bin"
    p.write_bytes(b"\x00\x01garbage")
    with pytest.raises(ModelFormatError):
        quickscorer.load(p)
    with pytest.raises(ModelFormatError, match="cannot read model file"):
        quickscorer.load(tmp_path / "missing.txt")
