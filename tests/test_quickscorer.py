"""The QuickScorer kernel (issue 3): exit leaves and raw scores equal the numpy oracle and the
reference traversal, bit for bit, on random trees and adversarial rows."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quickscorer import Model, _kernel
from quickscorer.algorithms.qs import _qs
from quickscorer.algorithms.qs.layout import (
    CATEGORY_MODE_DIRECT,
    CATEGORY_MODE_TABLE,
    N_SEGMENT_KINDS,
    node_mask_words,
    quickscorer_arrays,
)
from quickscorer.ir import MISSING_NAN, MISSING_NONE, MISSING_ZERO, Ensemble, build_tree, reference

# rows hold 1e300 on purpose: as float32 (and for XGBoost) it overflows to inf
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")

K_ZERO = reference.K_ZERO
ALL_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


# -- random models --------------------------------------------------------------------------
def grow(rng, n_leaves: int, shape: str):
    """Source arrays (left, right) of a tree with n_leaves leaves and the given shape."""
    left, right, leaves = [-1], [-1], [0]
    while len(leaves) < n_leaves:
        if shape == "left":
            pick = 0                      # always split the leftmost leaf: a left chain
        elif shape == "right":
            pick = len(leaves) - 1
        elif shape == "balanced":
            pick = 0                      # breadth-first queue: a balanced tree
        else:
            pick = int(rng.integers(len(leaves)))
        leaf = leaves.pop(pick)
        a = len(left)
        left[leaf], right[leaf] = a, a + 1
        left += [-1, -1]
        right += [-1, -1]
        if shape == "left":
            leaves[:0] = [a, a + 1]
        elif shape == "right":
            leaves += [a, a + 1]
        else:
            leaves += [a, a + 1]
    return left, right


def make_tree(rng, n_leaves, n_features, family, *, thresholds, p_categorical=0.15,
              shape="random", one_feature=False, max_category=70):
    left, right = grow(rng, n_leaves, shape)
    k = len(left)
    cat = rng.random(k) < p_categorical
    missing = (rng.integers(3, size=k) if family == "lightgbm" else np.full(k, MISSING_NAN))
    feature = np.zeros(k, np.int64) if one_feature else rng.integers(n_features, size=k)
    cats = {}
    for i in np.flatnonzero(cat):
        size = int(rng.integers(0, 6))
        c = rng.choice(max_category, size=size, replace=False)
        if rng.random() < 0.1:
            c = np.append(c, [31, 32, 63, 64][int(rng.integers(4))])
        cats[int(i)] = c
    return build_tree(
        left=left, right=right, root=0, feature=feature,
        threshold=rng.choice(np.asarray(thresholds, np.float64), size=k),
        default_left=rng.random(k) < 0.5, missing_type=missing, is_categorical=cat,
        categories=cats, value=np.round(rng.normal(size=k), 3), n_features=n_features)


def make_ensemble(rng, family, leaf_counts, n_features, *, n_outputs=1, dart=False, **kw):
    shapes = ("random", "left", "right", "balanced")
    trees = tuple(make_tree(rng, int(n), n_features, family,
                            shape=shapes[int(rng.integers(4))], **kw) for n in leaf_counts)
    n = len(trees)
    return Ensemble(trees=trees, tree_group=np.arange(n) % n_outputs, n_outputs=n_outputs,
                    n_features=n_features, family=family,
                    base_score=np.round(rng.normal(size=n_outputs), 2),
                    tree_weight=(np.round(rng.random(n) + 0.25, 3) if dart else None))


def threshold_pool(rng):
    """A few shared thresholds, with the awkward ones: 0, +-kZ, float32 and float64 values."""
    base = np.array([0.0, -1.0, 0.5, 2.0, 1e-36, K_ZERO, -K_ZERO, 3.25, -0.1, 1e30, 7.0])
    noise = np.round(rng.normal(size=4) * 3, 2)
    pool = np.concatenate([rng.choice(base, size=int(rng.integers(1, 6)), replace=False), noise])
    return pool[: int(rng.integers(1, pool.size + 1))]


def adversarial_rows(rng, ens: Ensemble, n: int) -> np.ndarray:
    """Rows mixing specials, every threshold and its float64/float32 neighbours, categories."""
    thr = np.unique(np.concatenate([t.threshold[~t.is_categorical] for t in ens.trees]
                                   + [np.zeros(1)]))
    f32 = thr.astype(np.float32)
    cats = np.concatenate([t.cat_values for t in ens.trees] + [np.array([0, 5])]).astype(float)
    values = np.concatenate([
        [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-36, -1e-36, 1e-40, K_ZERO, -K_ZERO,
         np.nextafter(K_ZERO, 1), np.nextafter(-K_ZERO, -1), 2.0**24, 2.0**31, -2.0**31 - 1,
         1e300, -1e300, 100.0, 1000.0, -0.5, 2.7, 31.0, 32.0, 64.0, 70.0],
        thr, np.nextafter(thr, np.inf), np.nextafter(thr, -np.inf),
        np.nextafter(f32, np.float32(np.inf)).astype(float),
        np.nextafter(f32, np.float32(-np.inf)).astype(float), f32.astype(float),
        cats, cats + 0.5, -cats - 0.5,
    ])
    X = rng.choice(values, size=(n, ens.n_features))
    X[: n // 4] = np.round(rng.normal(size=(n // 4, ens.n_features)) * 3, 1)
    return X


def expected(ens, X):
    return reference.predict_leaf(ens, X), reference.predict_raw(ens, X)


def check_model(ens, X, *, n_threads=1):
    """quickscorer == traversal == the oracle, leaves and raw scores, bit for bit."""
    m = Model(ens, prepare=("quickscorer",))
    leaves, raw = expected(ens, X)
    got_leaves = m.predict_leaf(X, algorithm="quickscorer", n_threads=n_threads)
    np.testing.assert_array_equal(got_leaves, leaves)
    np.testing.assert_array_equal(
        m.predict_leaf(X, algorithm="traversal", n_threads=n_threads), leaves)
    got_raw = m.predict_raw(X, algorithm="quickscorer", n_threads=n_threads)
    assert got_raw.dtype == raw.dtype
    np.testing.assert_array_equal(got_raw, raw)
    np.testing.assert_array_equal(m.predict_raw(X, algorithm="traversal", n_threads=n_threads),
                                  raw)
    return m


# -- properties -----------------------------------------------------------------------------
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), family=st.sampled_from(["lightgbm", "xgboost"]),
       n_trees=st.integers(1, 12), n_features=st.integers(1, 4),
       max_leaves=st.sampled_from([2, 8, 40, 70, 140]), p_categorical=st.sampled_from([0, .2, .6]),
       one_feature=st.booleans(), n_outputs=st.integers(1, 3), dart=st.booleans(),
       dtype=st.sampled_from([np.float64, np.float32]), order=st.sampled_from(["C", "F"]))
def test_random_models_and_rows_match_the_oracle(seed, family, n_trees, n_features, max_leaves,
                                                 p_categorical, one_feature, n_outputs, dart,
                                                 dtype, order):
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, max_leaves + 1, size=n_trees)
    ens = make_ensemble(rng, family, counts, n_features, n_outputs=n_outputs,
                        dart=dart and family == "xgboost", thresholds=threshold_pool(rng),
                        p_categorical=p_categorical, one_feature=one_feature)
    X = adversarial_rows(rng, ens, 60)
    X = np.asarray(X.astype(dtype), order=order)
    check_model(ens, X)


@pytest.mark.parametrize("family", ["lightgbm", "xgboost"])
def test_trees_of_1_to_1024_leaves_in_one_ensemble(family):
    rng = np.random.default_rng(3)
    counts = [1, 2, 63, 64, 65, 255, 1024, 64, 1, 129]
    ens = make_ensemble(rng, family, counts, 4, n_outputs=2,
                        thresholds=np.round(rng.normal(size=40), 1), p_categorical=0.1)
    X = adversarial_rows(rng, ens, 300)
    for dtype in (np.float64, np.float32):
        check_model(ens, X.astype(dtype))
    # every word boundary of the big trees is crossed by some node's zero run
    a = quickscorer_arrays(ens)
    w = a["tree_word_offsets"]
    assert np.diff(w).tolist() == [1, 1, 1, 1, 2, 4, 16, 1, 1, 3]


@pytest.mark.parametrize("shape", ["left", "right", "balanced"])
@pytest.mark.parametrize("n_leaves", [64, 65, 200])
def test_chains_and_perfect_trees_across_word_boundaries(shape, n_leaves):
    rng = np.random.default_rng(n_leaves)
    left, right = grow(rng, n_leaves, shape)
    k = len(left)
    tree = build_tree(left=left, right=right, root=0, feature=np.zeros(k, int),
                      threshold=rng.normal(size=k), default_left=np.zeros(k, bool),
                      missing_type=np.full(k, MISSING_NAN), is_categorical=np.zeros(k, bool),
                      categories=None, value=rng.normal(size=k), n_features=1)
    ens = Ensemble(trees=(tree,), tree_group=[0], n_outputs=1, n_features=1,
                   family="lightgbm", base_score=[0.0])
    X = np.concatenate([np.sort(tree.threshold)[:, None], [[np.nan], [np.inf], [-np.inf]],
                        rng.normal(size=(50, 1)) * 2])
    m = check_model(ens, X)
    # every leaf that some value reaches is found: scan the whole range of x
    xs = np.sort(np.concatenate([tree.threshold, np.nextafter(tree.threshold, np.inf)]))
    np.testing.assert_array_equal(m.predict_leaf(xs[:, None], algorithm="quickscorer"),
                                  reference.predict_leaf(ens, xs[:, None]))


def test_many_trees_on_one_feature_with_shared_thresholds():
    rng = np.random.default_rng(11)
    ens = make_ensemble(rng, "lightgbm", rng.integers(1, 30, size=200), 1,
                        thresholds=[-1.0, 0.0, 0.5, 2.0], one_feature=True, p_categorical=0.0)
    a = quickscorer_arrays(ens)
    # equal (feature, threshold) entries of one tree and word are merged into one mask
    seg = a["segment_offsets"]
    for s in range(N_SEGMENT_KINDS):
        lo, hi = seg[s], seg[s + 1] - 1
        assert np.isinf(a["thresholds"][hi]) and a["trees"][hi] == -1   # the sentinel
        key = np.stack([a["thresholds"][lo:hi], a["words"][lo:hi].astype(float)])
        assert np.unique(key, axis=1).shape[1] == hi - lo
        assert (np.diff(a["thresholds"][lo:hi]) >= 0).all()
    check_scan_groups(a)
    # 200 trees on 4 thresholds: the scan compares once per distinct threshold
    assert a["scan_thresholds"].shape[0] <= 3 * 5 < a["thresholds"].shape[0]
    check_model(ens, adversarial_rows(rng, ens, 200))


def check_scan_groups(a):
    """The distinct-threshold groups the kernels scan cover the entries exactly: per segment
    the thresholds strictly ascend to the sentinel, and group j holds precisely the entries
    of its segment whose threshold is scan_thresholds[j]."""
    seg, sseg, nodes = a["segment_offsets"], a["scan_segment_offsets"], a["scan_node_offsets"]
    thr, uthr = a["thresholds"], a["scan_thresholds"]
    assert nodes[0] == 0 and nodes[-1] == thr.shape[0] and (np.diff(nodes) > 0).all()
    for s in range(seg.shape[0] - 1):
        j0, j1 = sseg[s], sseg[s + 1]
        assert nodes[j0] == seg[s] and nodes[j1] == seg[s + 1]   # never across segments
        assert np.isinf(uthr[j1 - 1]) and (np.diff(uthr[j0:j1]) > 0).all()
        for j in range(j0, j1):
            assert (thr[nodes[j]:nodes[j + 1]] == uthr[j]).all()


def test_scan_groups_merge_equal_thresholds_across_trees(mixed_model):
    ens, m, X = mixed_model
    a = quickscorer_arrays(ens)
    check_scan_groups(a)
    assert a["scan_thresholds"].shape[0] < a["thresholds"].shape[0]


# -- the layout itself ----------------------------------------------------------------------
def paper_tree(**over):
    # n0 -> (n1, n2); n1 -> (v1, v2); n2 -> (n3, n4); n3 -> (v3, v4); n4 -> (v5, v6)
    kw = dict(left=[1, 5, 3, 7, 9] + [-1] * 6, right=[2, 6, 4, 8, 10] + [-1] * 6, root=0,
              feature=[0, 0, 0, 0, 0] + [0] * 6, threshold=[0.5, 0.2, 0.9, 0.7, 0.8] + [0] * 6,
              default_left=[False] * 11, missing_type=[MISSING_NAN] * 11,
              is_categorical=[False] * 11, categories=None, value=np.arange(11.0),
              n_features=1)
    kw.update(over)
    return build_tree(**kw)


def test_masks_are_the_columns_of_the_left_matrix():
    tree = paper_tree()
    ens = Ensemble(trees=(tree,), tree_group=[0], n_outputs=1, n_features=1, family="xgboost",
                   base_score=[0.0])
    a = quickscorer_arrays(ens)
    L = np.array([[0, 0, 1, 1, 1], [0, 1, 1, 1, 1], [1, 1, 0, 0, 1], [1, 1, 0, 1, 1],
                  [1, 1, 1, 1, 0], [1, 1, 1, 1, 1]])
    seg = a["segment_offsets"][2]  # XGBoost: every node in the NaN-default segment
    order = np.argsort(tree.threshold)
    for k, n in enumerate(order):
        mask = int(a["masks"][seg + k])
        assert a["thresholds"][seg + k] == tree.threshold[n]
        assert [(mask >> i) & 1 for i in range(6)] == L[:, n].tolist()
        assert mask >> 6 == (1 << 58) - 1   # bits beyond the leaves stay set
    # NaN goes right on every node (default_left False): the NaN list ANDs all of them
    nan = a["list_masks"][a["list_offsets"][0]:a["list_offsets"][1]]
    assert nan.tolist() == [int(np.bitwise_and.reduce(a["masks"][seg:seg + 5]))]


def test_mask_words_of_long_zero_runs():
    node, word, mask = node_mask_words(np.array([0, 60, 64, 10]), np.array([64, 130, 65, 11]),
                                       np.array([5, 5, 5, 0]))
    assert node.tolist() == [0, 1, 1, 1, 2, 3]
    assert word.tolist() == [5, 5, 6, 7, 6, 0]
    assert [int(m) for m in mask] == [0, (1 << 60) - 1, 0, ~0b11 & (2**64 - 1),
                                      2**64 - 2, (2**64 - 1) ^ (1 << 10)]


def test_equal_thresholds_of_one_tree_are_merged():
    # n0 and n2 both split feature 0 at 0.5 (n2 under n0's right child): one entry per word
    tree = paper_tree(threshold=[0.5, 0.2, 0.5, 0.7, 0.8] + [0] * 6)
    ens = Ensemble(trees=(tree,), tree_group=[0], n_outputs=1, n_features=1,
                   family="lightgbm", base_score=[0.0])
    a = quickscorer_arrays(ens)
    s = slice(a["segment_offsets"][2], a["segment_offsets"][3] - 1)
    assert a["thresholds"][s].tolist() == [0.2, 0.5, 0.7, 0.8]
    merged = int(a["masks"][s][1])
    assert merged & 0b111111 == 0b110000   # left leaves of n0 (0, 1) and of n2 (2, 3)
    check_model(ens, np.array([[0.5], [np.nextafter(0.5, 1)], [0.1], [0.75], [9.0], [np.nan]]))


# -- missing values and categories, one rule at a time -------------------------------------
def stump(family, missing_type, default_left, threshold=0.0, categories=None):
    cat = categories is not None
    tree = build_tree(left=[1, -1, -1], right=[2, -1, -1], root=0, feature=[0, 0, 0],
                      threshold=[threshold, 0, 0], default_left=[default_left] * 3,
                      missing_type=[missing_type] * 3, is_categorical=[cat] * 3,
                      categories={0: categories} if cat else None, value=[0.0, 1.0, 2.0],
                      n_features=1)
    return Ensemble(trees=(tree,), tree_group=[0], n_outputs=1, n_features=1, family=family,
                    base_score=[0.0])


SPECIALS = np.array([np.nan, 0.0, -0.0, 1e-36, -1e-36, K_ZERO, np.nextafter(K_ZERO, 1), -1.0,
                     1.0, np.inf, -np.inf, 0.5, 2.0, 2.5, 3.0, 31.0, 32.0, 33.0, 2.0**24,
                     2.0**24 - 1, 2.0**31, -0.5, 1e10])[:, None]


@pytest.mark.parametrize("threshold", [-1.0, 0.0, 1e-36, -1e-36, 1.0])
@pytest.mark.parametrize("default_left", [False, True])
@pytest.mark.parametrize("missing_type", [MISSING_NONE, MISSING_ZERO, MISSING_NAN])
@pytest.mark.parametrize("family", ["lightgbm", "xgboost"])
def test_missing_value_rules_on_a_stump(family, missing_type, default_left, threshold):
    for dtype in (np.float64, np.float32):
        check_model(stump(family, missing_type, default_left, threshold), SPECIALS.astype(dtype))


@pytest.mark.parametrize("cats", [[], [0], [2, 3], [31], [32], [0, 33, 100], [16777215]])
@pytest.mark.parametrize("missing_type", [MISSING_NONE, MISSING_ZERO, MISSING_NAN])
@pytest.mark.parametrize("default_left", [False, True])
@pytest.mark.parametrize("family", ["lightgbm", "xgboost"])
def test_categorical_rules_on_a_stump(family, default_left, missing_type, cats):
    # a categorical node sends NaN to its default side whatever its missing type
    X = np.concatenate([SPECIALS, [[100.0], [100.9], [16777215.0], [16777216.0]]])
    check_model(stump(family, missing_type, default_left, categories=cats), X)


@pytest.mark.parametrize("family", ["lightgbm", "xgboost"])
def test_direct_category_mode_equals_the_table(family):
    rng = np.random.default_rng(5)
    ens = make_ensemble(rng, family, rng.integers(2, 70, size=15), 3, thresholds=[0.0, 1.5],
                        p_categorical=0.6)
    X = adversarial_rows(rng, ens, 200)
    m = Model(ens)
    leaves = reference.predict_leaf(ens, X)
    for budget, mode in ((0, CATEGORY_MODE_DIRECT), (1 << 30, CATEGORY_MODE_TABLE)):
        a = quickscorer_arrays(ens, max_category_table_pairs=budget)
        assert set(a["category_mode"].tolist()) <= {0, mode} and mode in a["category_mode"]
        lay = _qs.QSLayout(a, ens.n_features)
        for n_threads in (1, 2):
            out = np.empty((X.shape[0], ens.n_trees), np.int32)
            _kernel.predict_leaf(m.plan.forest, lay, X, out, np.empty((n_threads, ens.n_features)),
                                 np.empty((n_threads, lay.scratch_words), np.uint64),
                                 n_threads)
            np.testing.assert_array_equal(out, leaves)


# -- batches, threads, input layouts --------------------------------------------------------
@pytest.fixture(scope="module")
def mixed_model():
    rng = np.random.default_rng(21)
    ens = make_ensemble(rng, "lightgbm", rng.integers(1, 100, size=40), 6, n_outputs=3,
                        thresholds=threshold_pool(rng), p_categorical=0.1)
    return ens, Model(ens, prepare=("quickscorer",)), adversarial_rows(rng, ens, 500)


def test_batches_of_any_size(mixed_model):
    ens, m, X = mixed_model
    raw = reference.predict_raw(ens, X)
    for n in (0, 1, 2, 7, 500):
        np.testing.assert_array_equal(m.predict_raw(X[:n], algorithm="quickscorer"), raw[:n])
    np.testing.assert_array_equal(m.predict_raw(X[3], algorithm="quickscorer"), raw[3:4])


def test_float32_float64_and_fortran_input(mixed_model):
    ens, m, X = mixed_model
    for dtype in (np.float32, np.float64):
        Xd = X.astype(dtype)
        raw = reference.predict_raw(ens, Xd)
        for arr in (Xd, np.asfortranarray(Xd), Xd[::-1][::-1], Xd[:, :]):
            np.testing.assert_array_equal(m.predict_raw(arr, algorithm="quickscorer"), raw)
        # a strided view (every other row) is read in place as well
        np.testing.assert_array_equal(m.predict_raw(Xd[::2], algorithm="quickscorer"), raw[::2])


def test_n_threads_two_equals_one(mixed_model):
    ens, m, X = mixed_model
    one = m.predict_raw(X, algorithm="quickscorer", n_threads=1)
    np.testing.assert_array_equal(m.predict_raw(X, algorithm="quickscorer", n_threads=2), one)
    np.testing.assert_array_equal(m.predict_leaf(X, algorithm="quickscorer", n_threads=2),
                                  m.predict_leaf(X, algorithm="quickscorer", n_threads=1))


def test_many_python_threads_share_one_model(mixed_model):
    ens, m, X = mixed_model
    one = m.predict_raw(X, algorithm="quickscorer")
    leaves = m.predict_leaf(X, algorithm="quickscorer")

    def job(i):
        Xi = X if i % 2 else np.asfortranarray(X)
        return (m.predict_raw(Xi, algorithm="quickscorer", n_threads=1 + i % 2),
                m.predict_leaf(Xi, algorithm="quickscorer"))

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(job, range(32)))
    for raw, lv in results:
        np.testing.assert_array_equal(raw, one)
        np.testing.assert_array_equal(lv, leaves)


def test_a_wrong_mask_is_caught():
    # the comparisons above can fail: forget the root's mask and x = 1 (every node false)
    # exits at leaf 1 (only n1 clears leaf 0) instead of the rightmost leaf 5
    tree = paper_tree()
    ens = Ensemble(trees=(tree,), tree_group=[0], n_outputs=1, n_features=1, family="lightgbm",
                   base_score=[0.0])
    a = {k: v.copy() for k, v in quickscorer_arrays(ens).items()}
    k = int(np.flatnonzero(a["thresholds"] == 0.5)[0])
    X = np.array([[1.0], [0.3]])
    for corrupt, want in ((False, [[5], [1]]), (True, [[1], [1]])):
        if corrupt:
            a["masks"][k] = ALL_ONES
        lay = _qs.QSLayout(a, 1)
        out = np.empty((2, 1), np.int32)
        _kernel.predict_leaf(Model(ens).plan.forest, lay, X, out, np.empty((1, 1)),
                             np.empty((1, lay.scratch_words), np.uint64), 1)
        assert out.tolist() == want
    assert reference.predict_leaf(ens, X).tolist() == [[5], [1]]


def test_layout_arrays_are_read_only_and_counted(mixed_model):
    ens, m, X = mixed_model
    alg = m.prepare("quickscorer")
    arrays = alg.arrays()
    assert all(not a.flags.writeable for a in arrays.values())
    assert alg.nbytes == sum(a.nbytes for a in arrays.values())
    assert m.info()["layout_bytes"]["quickscorer"] == alg.nbytes
