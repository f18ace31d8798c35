"""The ``oblivious`` kernel: oblivious trees scored from their level tests, against the
reference traversal, bit for bit, on every path (AVX2 and portable C, groups of any size,
threads, the low-latency entry); and the models it refuses, saying why."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import special_rows

import quickscorer
from quickscorer.algorithms import _oblivious, autoselect
from quickscorer.algorithms.base import distinct_bytes
from quickscorer.algorithms.cpu import available_isas
from quickscorer.algorithms.oblivious import MAX_DEPTH as MAX_OBLIVIOUS_DEPTH
from quickscorer.algorithms.oblivious import Oblivious, oblivious_arrays, unsupported
from quickscorer.ir import MISSING_NAN, MISSING_NONE, MISSING_ZERO, Ensemble, build_tree

THRESHOLDS = np.array([-2.0, -0.5, 0.0, 1e-36, 0.5, 0.5000000000000001, 2.0, 3.0, 7.5, np.inf,
                       -np.inf, 100.0])


def oblivious_tree(rng, depth: int, n_features: int, family: str, *, thresholds=THRESHOLDS,
                   missing=None, default_left=None):
    """A complete tree of ``depth`` levels numbered level by level, one test a level."""
    n = (1 << (depth + 1)) - 1
    inner = (1 << depth) - 1
    left = [2 * i + 1 if i < inner else -1 for i in range(n)]
    right = [2 * i + 2 if i < inner else -1 for i in range(n)]
    level = np.floor(np.log2(np.arange(n) + 1)).astype(int)
    feat = rng.integers(n_features, size=depth + 1)
    thr = rng.choice(thresholds, size=depth + 1)
    dl = (rng.random(depth + 1) < 0.5 if default_left is None
          else np.full(depth + 1, default_left))
    if missing is None:
        missing = (rng.integers(3, size=depth + 1) if family == "lightgbm"
                   else rng.choice([MISSING_NAN, MISSING_NONE], size=depth + 1))
    else:
        missing = np.full(depth + 1, missing)
    return build_tree(left=left, right=right, root=0, feature=feat[level],
                      threshold=thr[level], default_left=dl[level], missing_type=missing[level],
                      is_categorical=[False] * n, categories=None,
                      value=np.round(rng.normal(size=n), 3), n_features=n_features)


def oblivious_ensemble(rng, family: str, n_trees=40, n_features=6, max_depth=8, n_outputs=1,
                       dart=False, **kw) -> Ensemble:
    """``dart``: XGBoost DART weights on the trees."""
    trees = tuple(oblivious_tree(rng, int(rng.integers(0, max_depth + 1)), n_features, family,
                                 **kw) for _ in range(n_trees))
    return Ensemble(trees=trees, tree_group=np.arange(n_trees) % n_outputs,
                    n_outputs=n_outputs, n_features=n_features, family=family,
                    base_score=np.round(rng.normal(size=n_outputs), 2),
                    tree_weight=rng.uniform(0.1, 1.0, size=n_trees) if dart else None)


def rows(rng, n: int, n_features: int) -> np.ndarray:
    """Special values, the thresholds themselves and their neighbours, and random reals."""
    X = special_rows(rng, n, n_features)
    k = n // 3
    near = rng.choice(THRESHOLDS, size=(k, n_features))
    step = rng.integers(-1, 2, size=(k, n_features))
    X[n - k:] = np.where(step < 0, np.nextafter(near, -np.inf),
                         np.where(step > 0, np.nextafter(near, np.inf), near))
    return X


@pytest.mark.parametrize("family", ["plain", "lightgbm", "xgboost"])
@pytest.mark.parametrize("isa", available_isas()[:2])
@pytest.mark.parametrize("seed", range(4))
def test_scores_and_leaves_equal_the_reference_traversal(family, isa, seed):
    rng = np.random.default_rng(seed)
    ens = oblivious_ensemble(rng, family, n_outputs=1 + seed % 2,
                             dart=family == "xgboost" and seed >= 2)
    model = quickscorer.Model(ens)
    alg = Oblivious(ens, model.plan.forest, isa=isa)
    model.plan.prepared["oblivious"] = alg
    X = rows(rng, 300, ens.n_features)
    want = model.predict_raw(X, algorithm="traversal")
    with np.errstate(over="ignore"):          # the largest double, next to +inf: inf
        X32 = X.astype(np.float32)
    for n in (1, 3, 31, 32, 33, 300):
        for threads in (1, 2):
            got = model.predict_raw(X[:n], algorithm="oblivious", n_threads=threads)
            assert np.array_equal(got, want[:n]), (n, threads)
        got32 = model.predict_raw(X32[:n], algorithm="oblivious")
        assert np.array_equal(got32, model.predict_raw(X32[:n], algorithm="traversal"))
    # the low-latency entry, rows one at a time and a few together
    for n in (1, 2, 5):
        assert np.array_equal(alg.predict_small(np.ascontiguousarray(X[:n]), False), want[:n])
    assert np.array_equal(model.predict_leaf(X, algorithm="oblivious"),
                          model.predict_leaf(X, algorithm="traversal"))


@pytest.mark.parametrize("family, n_outputs", [("plain", 1), ("plain", 3), ("xgboost", 1)])
@pytest.mark.parametrize("isa", available_isas()[:2])
def test_blocks_of_groups_and_trees_add_each_rows_trees_in_order(family, n_outputs, isa):
    """Calls of several blocks of groups (256 rows) with a partial last group, over trees in
    several blocks of leaf values (depth 8: 2 KB a tree), on 1 to 3 threads, from rows read
    in place (C-contiguous float64) and from rows converted first (float32, a strided view,
    Fortran order): every score as the reference traversal's, bit for bit."""
    rng = np.random.default_rng(40 + n_outputs)
    ens = oblivious_ensemble(rng, family, n_trees=120, max_depth=8, n_outputs=n_outputs)
    model = quickscorer.Model(ens)
    alg = Oblivious(ens, model.plan.forest, isa=isa)
    model.plan.prepared["oblivious"] = alg
    X = rows(rng, 1100, ens.n_features)
    want = model.predict_raw(X, algorithm="traversal")
    wide = np.concatenate([X, X], axis=1)[:, :ens.n_features]       # rows 2 F apart
    for n in (255, 256, 257, 545, 1100):
        for threads in (1, 2, 3):
            got = model.predict_raw(X[:n], algorithm="oblivious", n_threads=threads)
            assert np.array_equal(got, want[:n]), (n, threads)
        for other in (wide[:n], np.asfortranarray(X[:n])):
            assert np.array_equal(model.predict_raw(other, algorithm="oblivious"), want[:n])
        with np.errstate(over="ignore"):
            X32 = X[:n].astype(np.float32)
        assert np.array_equal(model.predict_raw(X32, algorithm="oblivious", n_threads=2),
                              model.predict_raw(X32, algorithm="traversal"))
    small = alg.predict_small(np.ascontiguousarray(X[:300]), False)
    assert small is not None and np.array_equal(small, want[:300])


@pytest.mark.parametrize("family", ["plain", "xgboost"])
@pytest.mark.parametrize("isa", available_isas()[:2])
def test_the_outputs_of_one_multiclass_tree_share_its_leaf_numbers(family, isa):
    """A CatBoost multiclass tree is one neutral tree per class, with the same levels and
    each its own leaf values: the kernel computes their leaf numbers once (``same_prev``),
    and each output still adds its trees in order. Against the reference traversal, with
    trees of the same levels next to one another and others between them."""
    import dataclasses
    rng = np.random.default_rng(8)
    trees, groups = [], []
    for k in range(30):
        seed = int(rng.integers(1 << 30))
        base = oblivious_tree(np.random.default_rng(seed), int(rng.integers(0, 9)), 6, family)
        for g in range(3):
            trees.append(dataclasses.replace(
                base, leaf_value=np.round(rng.normal(size=base.leaf_value.shape[0]), 3)))
            groups.append(g)
        if k % 7 == 3:      # a tree of other levels between two classes' trees
            trees.append(oblivious_tree(rng, 5, 6, family))
            groups.append(int(rng.integers(3)))
    ens = Ensemble(trees=tuple(trees), tree_group=np.asarray(groups), n_outputs=3,
                   n_features=6, family=family, base_score=np.array([0.5, -0.25, 0.125]))
    model = quickscorer.Model(ens)
    alg = Oblivious(ens, model.plan.forest, isa=isa)
    assert alg.layout.__reduce__()[1][0]["same_prev"].sum() >= 60     # the kept arrays
    model.plan.prepared["oblivious"] = alg
    # the arrays the layout derives for the kernels (the row-by-row levels among them) count
    # in the model's memory
    assert model.memory()["bytes"]["oblivious"] >= distinct_bytes(alg.layout.held_arrays())
    X = rows(rng, 700, 6)
    want = model.predict_raw(X, algorithm="traversal")
    for n in (1, 5, 32, 33, 700):
        assert np.array_equal(model.predict_raw(X[:n], algorithm="oblivious", n_threads=2),
                              want[:n]), n


def test_lightgbm_zero_as_missing_and_none_read_nan_and_zero_their_way():
    """A column's NaN and 0.0 take the side, or the rank of 0.0, that the node rule gives."""
    rng = np.random.default_rng(7)
    X = np.array([[np.nan], [0.0], [-0.0], [1e-36], [-1e-36], [0.25], [-0.25], [np.inf]])
    for missing in (MISSING_NONE, MISSING_ZERO, MISSING_NAN):
        ens = oblivious_ensemble(rng, "lightgbm", n_trees=30, n_features=1, max_depth=3,
                                 thresholds=np.array([-0.5, 0.0, 1e-36, 0.5]), missing=missing)
        model = quickscorer.Model(ens)
        assert np.array_equal(model.predict_raw(X, algorithm="oblivious"),
                              model.predict_raw(X, algorithm="traversal")), missing


def test_a_catboost_model_is_scored_by_oblivious_at_every_call_size():
    catboost = pytest.importorskip("catboost")
    rng = np.random.default_rng(3)
    X = rng.normal(size=(400, 5))
    y = X[:, 0] * 2 + X[:, 1]
    X[rng.random(X.shape) < 0.1] = np.nan
    est = catboost.CatBoostRegressor(iterations=30, depth=5, verbose=0,
                                     allow_writing_files=False, random_seed=0,
                                     nan_mode="Max", thread_count=1)
    est.fit(X, y)
    model = quickscorer.load(est)
    assert "oblivious" in model.supported_algorithms()
    assert all(model.plan.small_kernels[n] == "oblivious" for n in (1, 2, 3, 4))
    assert autoselect.choose(model.supported_algorithms(), 5000, 2) == "oblivious"
    assert "oblivious at every call size" in model.info()["default_algorithm"]
    assert model.info()["few_rows_algorithm"] == "oblivious"
    want = est.predict(X)
    assert np.array_equal(model.predict(X, algorithm="oblivious"), want)
    assert np.array_equal(model.predict(X), want)
    for n in (1, 2, 3, 4):      # row by row up to ROW_CALL_MAX rows, then a group
        for i in range(0, 40, n):
            assert np.array_equal(model.predict(X[i:i + n]), want[i:i + n]), (n, i)
    assert model.info()["oblivious_instruction_set"] in available_isas()


@pytest.mark.parametrize("family, edit, why", [
    ("plain", "uneven", "not complete"),
    ("plain", "mixed", "one test a level"),
    ("plain", "deep", "9 levels deep"),
    ("plain", "categorical", "one-hot splits only"),
    ("plain", "nan-category", "sends NaN to its category's side"),
    ("lightgbm", "categorical-lgb", "categorical splits"),
    ("plain", "many", "more than 255 thresholds"),
])
def test_models_that_are_not_oblivious_are_refused_saying_why(family, edit, why):
    rng = np.random.default_rng(1)
    if edit == "uneven":
        trees = (build_tree(left=[1, 3, -1, -1, -1], right=[2, 4, -1, -1, -1], root=0,
                            feature=[0, 1, 0, 0, 0], threshold=[0.5] * 5,
                            default_left=[True] * 5, missing_type=[MISSING_NAN] * 5,
                            is_categorical=[False] * 5, categories=None,
                            value=[0.0, 0.0, 1.0, 2.0, 3.0], n_features=3),)
    elif edit == "mixed":
        trees = (build_tree(left=[1, 3, 5, -1, -1, -1, -1], right=[2, 4, 6, -1, -1, -1, -1],
                            root=0, feature=[0, 1, 2, 0, 0, 0, 0], threshold=[0.5] * 7,
                            default_left=[True] * 7, missing_type=[MISSING_NAN] * 7,
                            is_categorical=[False] * 7, categories=None,
                            value=np.arange(7.0), n_features=3),)
    elif edit == "deep":
        trees = (oblivious_tree(rng, 9, 3, family),)
    elif edit == "categorical":
        trees = (build_tree(left=[1, -1, -1], right=[2, -1, -1], root=0, feature=[0, 0, 0],
                            threshold=[0.0] * 3, default_left=[True] * 3,
                            missing_type=[MISSING_NAN] * 3, is_categorical=[True, False, False],
                            categories={0: np.array([1, 4])}, value=[0.0, 1.0, 2.0],
                            n_features=3),)
    elif edit in ("nan-category", "categorical-lgb"):
        trees = (build_tree(left=[1, -1, -1], right=[2, -1, -1], root=0, feature=[0, 0, 0],
                            threshold=[0.0] * 3, default_left=[edit == "nan-category"] * 3,
                            missing_type=[MISSING_NAN] * 3, is_categorical=[True, False, False],
                            categories={0: np.array([4])}, value=[0.0, 1.0, 2.0],
                            n_features=3),)
    elif edit == "many":
        trees = tuple(oblivious_tree(rng, 1, 1, family, thresholds=np.array([float(t)]),
                                     missing=MISSING_NAN, default_left=True)
                      for t in range(300))
    else:
        trees = (oblivious_tree(rng, 3, 3, family),)
    ens = Ensemble(trees=trees, tree_group=np.zeros(len(trees), np.int64), n_outputs=1,
                   n_features=3 if edit != "many" else 1, family=family,
                   base_score=np.zeros(1))
    assert why in unsupported(ens)
    with pytest.raises(ValueError, match=why):
        oblivious_arrays(ens)
    assert "oblivious" not in quickscorer.Model(ens).supported_algorithms()


def one_hot_tree(rng, depth: int, n_features: int, thresholds=THRESHOLDS):
    """A complete oblivious tree of the plain family whose levels are numerical tests or
    one-hot category tests (the category's side on the left, NaN on the right: CatBoost's
    one-hot splits as the importer writes them)."""
    n = (1 << (depth + 1)) - 1
    inner = (1 << depth) - 1
    level = np.floor(np.log2(np.arange(n) + 1)).astype(int)
    feat = rng.integers(n_features, size=depth + 1)
    cat = rng.random(depth + 1) < 0.5
    thr = rng.choice(thresholds, size=depth + 1)
    category = rng.choice([0, 1, 2, 3, 7, 4095], size=depth + 1)
    is_cat = cat[level] & (np.arange(n) < inner)
    return build_tree(left=[2 * i + 1 if i < inner else -1 for i in range(n)],
                      right=[2 * i + 2 if i < inner else -1 for i in range(n)], root=0,
                      feature=feat[level], threshold=np.where(is_cat, 0.0, thr[level]),
                      default_left=np.where(is_cat, False, (rng.random(depth + 1) < 0.5)[level]),
                      missing_type=[MISSING_NAN] * n, is_categorical=is_cat,
                      categories={int(i): [int(category[level[i]])]
                                  for i in np.flatnonzero(is_cat)},
                      value=np.round(rng.normal(size=n), 3), n_features=n_features)


@pytest.mark.parametrize("isa", available_isas()[:2])
@pytest.mark.parametrize("seed", range(3))
def test_one_hot_category_levels_score_as_the_reference_traversal(isa, seed):
    """Levels that test a category (CatBoost's one-hot splits) beside numerical ones, on the
    same features: exact for the categories, their float64 neighbours, fractions, negative
    values, -0.0, NaN, infinities and huge values, on every entry of the kernel."""
    from quickscorer.ir.float32 import float32_boundary
    rng = np.random.default_rng(100 + seed)
    n_features = 3
    # seed 2: numerical thresholds that are float32 boundaries (CatBoost's), so that their
    # columns rank in float32 beside the categories' columns in float64
    thresholds = (float32_boundary(np.float32([-2.0, -0.5, 0.5, 2.0, 3.0, 7.5, 100.0])
                                   .astype(np.float64)) if seed == 2 else THRESHOLDS)
    trees = tuple(one_hot_tree(rng, int(rng.integers(1, MAX_OBLIVIOUS_DEPTH + 1)), n_features,
                               thresholds) for _ in range(50))
    ens = Ensemble(trees=trees, tree_group=np.zeros(len(trees), np.int64), n_outputs=1,
                   n_features=n_features, family="plain", base_score=np.array([0.5]))
    a = oblivious_arrays(ens)
    assert unsupported(ens) is None and a["level_eq"].any()
    assert set(a["col_f32"].tolist()) == ({0, 1} if seed == 2 else {0})
    model = quickscorer.Model(ens)
    alg = Oblivious(ens, model.plan.forest, isa=isa)
    model.plan.prepared["oblivious"] = alg
    special = np.array([0.0, -0.0, 1.0, 2.0, 3.0, 7.0, 4095.0, 4096.0, 2.5, -1.0, -3.0,
                        np.nan, np.inf, -np.inf, 1e300, 2147483648.0])
    near = np.concatenate([special, np.nextafter(special, np.inf),
                           np.nextafter(special, -np.inf), thresholds,
                           np.nextafter(thresholds, np.inf), np.float32(thresholds)])
    X = rng.choice(near, size=(300, n_features))
    want = model.predict_raw(X, algorithm="traversal")
    for n in (1, 3, 31, 32, 33, 300):
        for threads in (1, 2):
            got = model.predict_raw(X[:n], algorithm="oblivious", n_threads=threads)
            assert np.array_equal(got, want[:n]), (n, threads)
    for n in (1, 2, 5):
        assert np.array_equal(alg.predict_small(np.ascontiguousarray(X[:n]), False), want[:n])
    assert np.array_equal(model.predict_leaf(X, algorithm="oblivious"),
                          model.predict_leaf(X, algorithm="traversal"))


@pytest.mark.parametrize("n_thresholds", [8, 40, 110, 230],
                         ids=["counted", "bucketed", "bucketed-wide", "searched"])
@pytest.mark.parametrize("isa", available_isas()[:2])
def test_float32_boundaries_are_ranked_in_float32_exactly(isa, n_thresholds):
    """Thresholds that are float32 boundaries (scikit-learn's and CatBoost's) are ranked in
    float32 on the AVX2 path, by counting (a column of few thresholds), by counting in
    buckets (BUCKET_MIN to BUCKET_MAX) or by the two-level search (more): every value beside
    a boundary, at it, at its float32 value, and beyond the float32 range (an infinity in
    float32) goes where the float64 test sends it."""
    from quickscorer.ir.float32 import float32_boundary
    rng = np.random.default_rng(21)
    T = np.concatenate([rng.normal(size=n_thresholds).astype(np.float32),
                        np.float32([0.0, -0.0, 1e-30, 3.4e38, -3.4e38, np.inf])])
    bounds = float32_boundary(T.astype(np.float64))
    ens = oblivious_ensemble(rng, "plain", n_trees=60 if n_thresholds < 30 else 400,
                             n_features=3 if n_thresholds < 30 else 1, max_depth=6,
                             thresholds=bounds)
    model = quickscorer.Model(ens)
    alg = Oblivious(ens, model.plan.forest, isa=isa)
    assert alg._arrays["rank_pivots_f32"].shape[0] > 0        # the float32 tables are built
    # a column's finite thresholds: more than the kernel counts where the test means the search
    offsets = alg._arrays["rank_bucket_offsets"]
    finite = np.add.reduceat(alg._arrays["rank_buckets_f32"] < np.inf, offsets[:-1])
    bucketed = (finite >= _oblivious.BUCKET_MIN) & (finite <= _oblivious.BUCKET_MAX)
    assert {"counted": (finite < _oblivious.BUCKET_MIN).all(),
            "bucketed": bucketed.any() and (finite <= 64).all(),
            "bucketed-wide": bucketed.any() and (finite > 100).any(),
            "searched": (finite > max(_oblivious.BUCKET_MAX, _oblivious.COUNT_MAX)).any()
            }[{8: "counted", 40: "bucketed", 110: "bucketed-wide", 230: "searched"}[n_thresholds]]
    tables = _oblivious.bucket_tables(alg._arrays["rank_buckets_f32"], offsets,
                                      finite.astype(np.int32), np.ones(finite.shape, np.uint8))
    assert (tables[0] > 0).tolist() == bucketed.tolist()
    model.plan.prepared["oblivious"] = alg
    near = np.concatenate([bounds, np.nextafter(bounds, np.inf), np.nextafter(bounds, -np.inf),
                           T.astype(np.float64), np.nextafter(T, np.float32(np.inf)),
                           [3.5e38, -3.5e38, 1e300, np.inf, -np.inf, np.nan, 0.0]])
    X = rng.choice(near, size=(400, ens.n_features))
    assert np.array_equal(model.predict_raw(X, algorithm="oblivious"),
                          model.predict_raw(X, algorithm="traversal"))


@pytest.mark.parametrize("isa", available_isas()[:2])
def test_columns_of_consecutive_features_convert_in_blocks_of_eight(isa):
    """Where 8 columns read 8 consecutive features, the AVX2 path converts a group's values 8
    rows by 8 columns at a time (a transpose in registers), the rows past the last full 8 and
    the other columns a value at a time: every group size gives the reference's scores."""
    from quickscorer.ir.float32 import float32_boundary
    rng = np.random.default_rng(8)
    bounds = float32_boundary(rng.normal(size=40).astype(np.float32).astype(np.float64))
    trees = tuple(oblivious_tree(rng, 6, 21, "xgboost", thresholds=bounds,
                                 missing=MISSING_NAN, default_left=True) for _ in range(80))
    ens = Ensemble(trees=trees, tree_group=np.zeros(80, np.int64), n_outputs=1, n_features=21,
                   family="xgboost", base_score=np.array([0.5]))
    model = quickscorer.Model(ens)
    alg = Oblivious(ens, model.plan.forest, isa=isa)
    assert alg._arrays["col_feature"][:16].tolist() == list(range(16))    # two blocks, a tail
    assert _oblivious.block8_starts(alg._arrays["col_feature"]).tolist() == [0, 8]
    assert _oblivious.block8_starts([0, 0, 1, 2, 3, 4, 5, 6, 7, 9]).tolist() == [1]
    assert _oblivious.block8_starts([0, 1, 2, 3, 4, 5, 6, 8, 9]).tolist() == []
    model.plan.prepared["oblivious"] = alg
    X = special_rows(rng, 90, 21)
    X[30:] = rng.choice(np.concatenate([bounds, np.nextafter(bounds, np.inf)]), size=(60, 21))
    want = model.predict_raw(X, algorithm="traversal")
    for n in (1, 7, 8, 13, 16, 31, 32, 33, 90):
        assert np.array_equal(model.predict_raw(X[:n], algorithm="oblivious"), want[:n]), n


def test_bucket_tables_give_each_values_rank_by_its_bucket():
    """bucket_tables cuts a column's thresholds into at most 8 buckets: a value's rank is the
    bucket size times its bucket (the buckets' last thresholds below it, at most the last
    bucket) plus its bucket's thresholds below it, as the AVX2 kernel counts."""
    thr = np.arange(1, 38, dtype=np.float32)                        # 37: 8 buckets of 5
    bkt = np.concatenate([thr, np.full(11, np.inf, np.float32)])    # +inf padded to 48
    size, n_buckets, at, tab = _oblivious.bucket_tables(
        bkt, np.array([0, 48]), np.array([37], np.int32), np.ones(1, np.uint8))
    assert (size[0], n_buckets[0], at[0], tab.shape[0]) == (5, 8, 0, 8 + 5 * 8)
    assert tab[:8].tolist() == [5, 10, 15, 20, 25, 30, 35, 37]
    jth = tab[8:].reshape(5, 8)
    assert jth[:, 0].tolist() == [1, 2, 3, 4, 5]
    assert jth[:2, 7].tolist() == [36, 37] and np.isinf(jth[2:, 7]).all()
    x = np.concatenate([np.arange(0, 39, 0.5), [-np.inf, np.inf]]).astype(np.float32)
    b = np.minimum((tab[:8][None, :8] < x[:, None]).sum(1), n_buckets[0] - 1)
    rank = 5 * b + (jth[:, b].T < x[:, None]).sum(1)
    assert rank.tolist() == (thr[None, :] < x[:, None]).sum(1).tolist()
    few = _oblivious.bucket_tables(bkt, np.array([0, 48]), np.array([16], np.int32),
                                   np.ones(1, np.uint8))
    assert few[0][0] == 0 and few[3].shape[0] == 0      # 16 thresholds: plain counting


def test_catboosts_onnx_export_is_scored_by_oblivious_as_onnx_runtime_scores_it(tmp_path):
    """CatBoost's ONNX export is float32 (the XGBoost family here): the float32 sums, exact
    against ONNX Runtime."""
    catboost = pytest.importorskip("catboost")
    ort = pytest.importorskip("onnxruntime")
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 4))
    est = catboost.CatBoostRegressor(iterations=40, depth=4, verbose=0,
                                     allow_writing_files=False, random_seed=0, thread_count=1)
    est.fit(X, X[:, 0] - 2 * X[:, 2])
    path = tmp_path / "m.onnx"
    est.save_model(str(path), format="onnx")
    model = quickscorer.load(path)
    assert model.ensemble.family == "xgboost" and "oblivious" in model.supported_algorithms()
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 3
    session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    X32 = X.astype(np.float32)
    want = session.run(None, {session.get_inputs()[0].name: X32})[0].reshape(-1)
    assert np.array_equal(model.predict(X32, algorithm="oblivious"), want)
    assert np.array_equal(model.predict(X32), want)
