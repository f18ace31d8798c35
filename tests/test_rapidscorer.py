"""RapidScorer (byte-transposed bitvectors, byte-run masks, rank comparisons) against the
reference: exit leaves and raw scores bit for bit, on every path this CPU runs (portable C
everywhere), with groups left partly empty, many tree blocks, NaN / zero / infinities, DART
weights, linear leaves and multiclass; and the models it refuses, with the reason."""
from __future__ import annotations

import itertools
import threading

import numpy as np
import pytest
from conftest import (
    SPECIAL_VALUES,
    category_rows,
    linear_tree,
    random_ensemble,
    random_tree,
    run_kernel,
    special_rows,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import quickscorer
from quickscorer.algorithms import cpu
from quickscorer.algorithms.cpu import ISAS
from quickscorer.algorithms.qs.qs import shared_layout
from quickscorer.algorithms.rapidscorer import _rapidscorer
from quickscorer.algorithms.rapidscorer.layout import half_arrays, unsupported
from quickscorer.algorithms.rapidscorer.ranks import (
    ENTRY_DTYPE,
    N_HALVES,
    SENTINEL_THR,
    entry_thr,
    rank_search_table,
    rank_table,
)
from quickscorer.algorithms.rapidscorer.rapidscorer import AVX2_WIDE, RapidScorer, rs_isa_code
from quickscorer.ir import MISSING_ZERO, Ensemble, build_tree, reference

#: the paths by name (cpu.NAMES: the 256-bit one is "avx2" on x86-64, "neon" on AArch64)
VEC = cpu.isa_name(ISAS["avx2"])
RS_ISAS = [name for name, code in cpu.NAMES.items() if _rapidscorer.isa_available(code)]
if VEC in RS_ISAS:       # AVX2 (NEON) with every group at 32 documents (no 64-lane groups)
    RS_ISAS.insert(RS_ISAS.index(VEC) + 1, f"{VEC}-32")


def _model(ens):
    return quickscorer.Model(ens)


def _alg(ens, isa, **kw):
    if isa == f"{VEC}-32":
        isa, kw = VEC, {**kw, "wide": False}
    return RapidScorer(ens, _model(ens).plan.forest, isa=isa, **kw)


def _run(ens, X, isa, n_threads=1, **kw):
    return run_kernel(_alg(ens, isa, **kw), ens, X, n_threads)


def _check(ens, X, isa, **kw):
    raw, leaves = _run(ens, X, isa, **kw)
    np.testing.assert_array_equal(leaves, reference.predict_leaf(ens, X))
    np.testing.assert_array_equal(raw, reference.predict_raw(ens, X).astype(raw.dtype))


def test_paths_of_this_cpu():
    assert "scalar" in RS_ISAS
    assert rs_isa_code("scalar") == 0
    assert {_rapidscorer.lanes_of(c) for c in (0, 1)} == {32}
    assert _rapidscorer.lanes_of(2) == _rapidscorer.lanes_of(AVX2_WIDE) == 64
    assert _rapidscorer.isa_available(AVX2_WIDE) == _rapidscorer.isa_available(ISAS["avx2"])


def test_calls_of_more_than_32_rows_take_the_wide_avx2_path(monkeypatch):
    monkeypatch.delenv("QUICKSCORER_ISA", raising=False)
    rng = np.random.default_rng(12)
    ens = random_ensemble(rng, "lightgbm", n_trees=5, p_categorical=0.0)
    if VEC not in RS_ISAS:
        pytest.skip("this CPU has no AVX2 (NEON) path")
    alg = RapidScorer(ens, _model(ens).plan.forest, isa=VEC)
    assert alg.isa_for(32, 1) == ISAS["avx2"] and alg.isa_for(33, 1) == AVX2_WIDE
    assert alg.isa_for(65, 2) == ISAS["avx2"] and alg.isa_for(66, 2) == AVX2_WIDE
    assert alg.lanes == 64          # tree blocks sized for the widest groups
    narrow = RapidScorer(ens, _model(ens).plan.forest, isa=VEC, wide=False)
    assert narrow.isa_for(10_000, 1) == ISAS["avx2"] and narrow.lanes == 32
    scalar = RapidScorer(ens, _model(ens).plan.forest, isa="scalar")
    assert scalar.isa_for(10_000, 1) == ISAS["scalar"] and scalar.lanes == 32
    assert "64 from there" in alg.groups and narrow.groups == scalar.groups == "32"


@pytest.mark.parametrize("isa", RS_ISAS)
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), family=st.sampled_from(["lightgbm", "xgboost"]),
       n_rows=st.sampled_from([1, 31, 32, 33, 64, 65, 150]), n_outputs=st.integers(1, 3),
       max_leaves=st.sampled_from([2, 9, 40, 70, 256]), mirror=st.booleans())
def test_random_models_match_the_reference(isa, seed, family, n_rows, n_outputs, max_leaves,
                                           mirror):
    rng = np.random.default_rng(seed)
    ens = random_ensemble(rng, family, n_trees=12, n_outputs=n_outputs, max_leaves=max_leaves,
                          p_categorical=0.0)
    X = special_rows(rng, n_rows, ens.n_features)
    _check(ens, X, isa, mirror=mirror)
    _check(ens, X.astype(np.float32), isa, mirror=mirror)
    _check(ens, X, isa, block_bytes=1, mirror=mirror)      # one tree per block


@pytest.mark.parametrize("isa", RS_ISAS)
@pytest.mark.parametrize("family", ["lightgbm", "xgboost"])
@pytest.mark.parametrize("n_outputs", [1, 2])   # 1: a block's trees summed in one C call
def test_mixed_tree_sizes_threads_and_blocks(isa, family, n_outputs):
    rng = np.random.default_rng(21)
    sizes = (1, 2, 8, 9, 16, 17, 63, 64, 65, 255, 256, 1, 130, 7)
    trees = tuple(random_tree(rng, n, 6, family, p_categorical=0.0) for n in sizes)
    ens = Ensemble(trees=trees, tree_group=np.arange(len(trees)) % n_outputs,
                   n_outputs=n_outputs, n_features=6, family=family,
                   base_score=[0.5, -1.0][:n_outputs])
    X = special_rows(rng, 301, 6)
    for block_bytes in (None, 1, 3000):
        _check(ens, X, isa, block_bytes=block_bytes)
        _check(ens, X, isa, block_bytes=block_bytes, n_threads=2)
    assert _alg(ens, isa, block_bytes=1).tree_blocks == len(sizes)


@pytest.mark.parametrize("isa", RS_ISAS)
@pytest.mark.parametrize("family", ["lightgbm", "xgboost"])
def test_chunks_of_groups_scan_each_block_of_trees_in_turn_exactly(isa, family):
    """A call of several groups a thread on the scan (one output, no categorical or linear
    node, more than one tree block) scans chunks of groups through each block of trees in
    turn: the same scores as a group at a time through all the blocks, whatever the chunk,
    the blocks, the threads and a last group of few rows; trees of more than 32 leaves and of
    fewer, so that an AVX-512 block adds its exit leaves either way, and the wide add on
    (rs_wide_add) and off."""
    rng = np.random.default_rng(31)
    sizes = (40, 64, 65, 255, 3, 31, 33, 128, 200, 90) * 2
    trees = tuple(random_tree(rng, n, 6, family, p_categorical=0.0) for n in sizes)
    ens = Ensemble(trees=trees, tree_group=np.zeros(len(trees), np.int64), n_outputs=1,
                   n_features=6, family=family, base_score=[0.25])
    X = special_rows(rng, 301, 6)                # four groups of 64 and a part of one
    want = reference.predict_raw(ens, X).astype(
        np.float32 if family == "xgboost" else np.float64)
    t = quickscorer.current_tuning()
    for wide, chunk, block in itertools.product((False, True), (1, 3, 12, 2, None),
                                                (3000, 1, 500)):
        alg = _alg(ens, isa, block_bytes=block, levels=False,
                   tuning=t.replace(rs_lv_chunk=chunk, rs_wide_add=wide))
        assert not alg.levels and alg.tree_blocks > 1
        assert alg.layout.wide_add == wide
        for n_threads in (1, 2, 3):
            plan = _rapidscorer.call_plan(alg.forest, alg.layout, X.shape[0], n_threads,
                                          alg.isa_for(X.shape[0], n_threads))
            per_thread = -(-plan["groups"] // n_threads)
            assert plan["chunked"] == (alg.layout.levels_chunk > 1 and per_thread > 1)
            assert plan["chunks"] in (None, "scan")
            raw, _ = run_kernel(alg, ens, X, n_threads=n_threads)
            np.testing.assert_array_equal(raw, want)


@pytest.mark.parametrize("isa", RS_ISAS)
@pytest.mark.parametrize("n_thresholds", [12, 100, 200])
def test_float32_ranks_of_many_thresholds_a_feature_exactly(isa, n_thresholds):
    """XGBoost's float32 rank searches rank features of one, up to eight and up to sixteen
    buckets of thresholds exactly: rows on, between, below and above the thresholds, NaN,
    zeros and infinities, in float32 and float64 input, in full and partial groups."""
    rng = np.random.default_rng(n_thresholds)
    pool = np.unique(np.round(rng.normal(size=n_thresholds) * 4, 3).astype(np.float32))
    trees = tuple(random_tree(rng, 31, 3, "xgboost", thresholds=tuple(map(float, pool)),
                              p_categorical=0.0) for _ in range(90))
    ens = Ensemble(trees=trees, tree_group=np.zeros(len(trees), np.int64), n_outputs=1,
                   n_features=3, family="xgboost", base_score=[0.5])
    n = 333
    X = rng.choice(pool, size=(n, 3)).astype(np.float64)
    X[: n // 3] = rng.normal(size=(n // 3, 3)) * 6
    X[n // 3: n // 2] = rng.choice(SPECIAL_VALUES, size=(n // 2 - n // 3, 3))
    X[n // 2: n // 2 + 20] = np.nextafter(X[n // 2: n // 2 + 20].astype(np.float32),
                                          np.float32(np.inf))
    want = reference.predict_raw(ens, X).astype(np.float32)
    for levels in (True, False):
        alg = _alg(ens, isa, levels=levels)
        assert alg.layout.float32_ranks
        for rows in (X, X.astype(np.float32)):
            for m in (n, 64, 100, 7):
                raw, _ = run_kernel(alg, ens, np.ascontiguousarray(rows[:m]))
                np.testing.assert_array_equal(raw, want[:m])


def _splits_512() -> bool:
    """Whether /proc/cpuinfo names an AVX-512 core of AMD's family 25 (Zen 4)."""
    try:
        text = open("/proc/cpuinfo", encoding="utf-8").read()
    except OSError:
        return False
    fields = dict(line.split(":", 1) for line in text.split("\n\n")[0].splitlines()
                  if ":" in line)
    get = {k.strip(): v.strip() for k, v in fields.items()}.get
    return (get("vendor_id") == "AuthenticAMD" and get("cpu family") == "25"
            and "avx512f" in (get("flags") or "").split())


def test_the_wide_add_runs_by_default_on_cores_that_split_512_bit_operations():
    """AVX-512 calls add the exit leaves of trees of more than 32 leaves as the AVX2 wide path
    does on Zen 4 only, unless told; a pickled layout decides again where it is loaded,
    unless it was told; Model.info and show_config say which."""
    import pickle
    rng = np.random.default_rng(44)
    ens = random_ensemble(rng, "lightgbm", n_trees=6, max_leaves=40, p_categorical=0.0)
    default = _rapidscorer.wide_add_default()
    assert default == (_splits_512() and "avx512" in RS_ISAS)
    alg = _alg(ens, "scalar")
    assert alg.layout.wide_add == default
    assert pickle.loads(pickle.dumps(alg.layout)).wide_add == default
    t = quickscorer.current_tuning()
    for told in (False, True):
        layout = _alg(ens, "scalar", wide_add=told).layout
        assert layout.wide_add == told
        assert pickle.loads(pickle.dumps(layout)).wide_add == told
        assert _alg(ens, "scalar", tuning=t.replace(rs_wide_add=told)).layout.wide_add == told
    if "avx512" in RS_ISAS:
        assert "as on AVX2" in _alg(ens, "avx512", wide_add=True).groups
        assert "as on AVX2" not in _alg(ens, "avx512", wide_add=False).groups
    from quickscorer.config import config
    paths = config()["kernel_paths"]
    said = paths["rapidscorer exit leaves"]
    if paths["rapidscorer"] == "avx512":
        assert ("a block of trees at a time" in said) == default
    else:                         # QUICKSCORER_ISA or the CPU keeps calls off AVX-512
        assert said.startswith(paths["rapidscorer"])


@pytest.mark.parametrize("isa", RS_ISAS)
def test_zero_as_missing_nan_and_infinities(isa):
    """Lanes holding NaN or zero skip the segments that must not compare them and take their
    byte lists instead; infinities compare like any value."""
    rng = np.random.default_rng(2)
    ens = random_ensemble(rng, "lightgbm", n_trees=25, max_leaves=40, p_categorical=0.0)
    assert any((t.missing_type == MISSING_ZERO).any() for t in ens.trees)
    X = rng.choice([0.0, -0.0, np.nan, 1.0, 2.0, 33.0, -1.0, 1e-36, np.inf, -np.inf, 0.5],
                   size=(97, 5))
    assert _alg(ens, isa).mirrored       # mirrored nodes send missing values the other way
    for mirror in (True, False):
        _check(ens, X, isa, mirror=mirror)
        _check(ens, X, isa, block_bytes=500, mirror=mirror)


@pytest.mark.parametrize("isa", RS_ISAS)
def test_dart_weights_and_linear_leaves(isa):
    rng = np.random.default_rng(4)
    ens = random_ensemble(rng, "xgboost", n_trees=10, max_leaves=30, p_categorical=0.0)
    dart = Ensemble(trees=ens.trees, tree_group=ens.tree_group, n_outputs=1,
                    n_features=ens.n_features, family="xgboost", base_score=[0.25],
                    tree_weight=rng.uniform(0.1, 1.0, size=ens.n_trees))
    X = special_rows(rng, 90, ens.n_features)
    _check(dart, X, isa)
    # linear leaves (LightGBM linear_tree): the scalar per-lane sum
    tree = linear_tree()
    lin = Ensemble(trees=(tree, tree), tree_group=[0, 0], n_outputs=1, n_features=3,
                   family="lightgbm", base_score=[0.0])
    _check(lin, special_rows(rng, 70, 3), isa)


@pytest.mark.parametrize("isa", RS_ISAS)
def test_a_feature_with_255_distinct_thresholds(isa):
    """The rank of a value is a byte: 255 distinct thresholds is the most a feature may have,
    with values on, between and beyond every threshold."""
    rng = np.random.default_rng(5)
    thresholds = np.sort(rng.choice(np.arange(-1000, 1000), size=255, replace=False)) / 7.0
    trees = []
    for chunk in np.array_split(thresholds, 5):
        n = chunk.shape[0]     # a right comb: node i has leaf n + i on its left, node i + 1
        left = list(range(n, 2 * n)) + [-1] * (n + 1)
        right = list(range(1, n)) + [2 * n] + [-1] * (n + 1)
        trees.append(build_tree(left=left, right=right, root=0, feature=[0] * (2 * n + 1),
                                threshold=np.r_[chunk, np.zeros(n + 1)],
                                default_left=[False] * (2 * n + 1), missing_type=[2] * (2 * n + 1),
                                is_categorical=[False] * (2 * n + 1), categories=None,
                                value=rng.normal(size=2 * n + 1), n_features=2))
    ens = Ensemble(trees=tuple(trees), tree_group=[0] * 5, n_outputs=1, n_features=2,
                   family="lightgbm", base_score=[0.0])
    assert unsupported(ens) is None
    x = np.r_[thresholds, thresholds + 1e-9, thresholds - 1e-9, -np.inf, np.inf, np.nan, 0.0]
    X = np.c_[x, np.zeros_like(x)]
    _check(ens, X, isa)


@pytest.mark.parametrize("isa", RS_ISAS)
@pytest.mark.parametrize("n_distinct", [5, 16, 17, 100, 129, 200])
def test_features_with_one_to_sixteen_buckets(isa, n_distinct):
    """The rank search compares 0, 8 or 16 pivots by how many buckets a feature has."""
    rng = np.random.default_rng(n_distinct)
    values = np.unique(np.round(rng.normal(size=n_distinct * 3), 2))[:n_distinct]
    trees = tuple(random_tree(rng, 40, 2, "lightgbm", p_categorical=0.0, thresholds=values)
                  for _ in range(30))
    ens = Ensemble(trees=trees, tree_group=[0] * 30, n_outputs=1, n_features=2,
                   family="lightgbm", base_score=[0.0])
    X = np.c_[rng.choice(np.r_[values, values + 0.005, [np.nan, 0.0, -9.0, 9.0]], size=300),
              rng.normal(size=300)]
    _check(ens, X, isa)


def test_rank_search_table_gives_the_count_below():
    rng = np.random.default_rng(6)
    for n in (0, 1, 15, 16, 17, 31, 32, 100, 255):
        u = np.unique(rng.normal(size=n)) if n else np.zeros(0)
        offsets = np.array([0, u.shape[0]], np.int64)
        piv, bkt, boff = rank_search_table(offsets, u)
        for x in np.r_[u, u + 1e-12, u - 1e-12, -np.inf, np.inf, 0.0]:
            c1 = int((piv[:16] < x).sum())
            got = 16 * c1 + int((bkt[16 * c1:16 * c1 + 16] < x).sum())
            assert got == int((u < x).sum()), (n, x)


def test_layout_entries_are_byte_runs_of_their_trees():
    rng = np.random.default_rng(8)
    ens = random_ensemble(rng, "lightgbm", n_trees=30, max_leaves=120, p_categorical=0.0)
    alg = RapidScorer(ens, _model(ens).plan.forest, block_bytes=2000)
    a = alg.arrays()
    e = a["entries"].view(ENTRY_DTYPE)
    assert a["entries"].dtype == np.uint32 and e.itemsize == 4
    thr_of = entry_thr(a["entries"])
    tbo, bs = a["tree_byte_offsets"], a["block_starts"]
    for b in range(bs.shape[0] - 1):
        n_bytes = tbo[bs[b + 1]] - tbo[bs[b]]
        segs = a["segments"][a["block_segments"][b]:a["block_segments"][b + 1]]
        for s in segs:
            j = int(s & np.uint64(0xFFFFFFFF))
            thr = []
            while thr_of[j] != SENTINEL_THR:
                assert e["byte"][j] < n_bytes and e["mask"][j] != 0xFF
                thr.append(int(thr_of[j]))
                j += 1
            assert thr == sorted(thr) and thr         # ascending, never empty
    offsets, values = rank_table(shared_layout(ens)[0], ens.n_features)
    assert (np.diff(offsets) <= 255).all()
    assert all((np.diff(values[offsets[f]:offsets[f + 1]]) > 0).all()
               for f in range(ens.n_features))
    assert all(not arr.flags.writeable for arr in a.values())


@pytest.mark.parametrize("isa", RS_ISAS)
@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), family=st.sampled_from(["lightgbm", "xgboost"]),
       n_rows=st.sampled_from([1, 32, 33, 100]), n_outputs=st.integers(1, 2),
       max_leaves=st.sampled_from([2, 9, 40, 256]), mirror=st.booleans())
def test_categorical_splits_match_the_reference(isa, seed, family, n_rows, n_outputs,
                                                max_leaves, mirror):
    """Categorical nodes (applied per block after the scan, by each value's code) among
    numerical ones, on the same features too, with mirrored leaf orders and tree blocks."""
    rng = np.random.default_rng(seed)
    ens = random_ensemble(rng, family, n_trees=10, n_outputs=n_outputs, max_leaves=max_leaves,
                          p_categorical=0.4)
    assert RapidScorer.unsupported(ens) is None
    X = category_rows(rng, n_rows, ens.n_features)
    _check(ens, X, isa, mirror=mirror)
    _check(ens, X.astype(np.float32), isa, mirror=mirror)
    _check(ens, X, isa, block_bytes=1, mirror=mirror)
    _check(ens, X, isa, n_threads=2, mirror=mirror)


def test_a_model_of_categorical_splits_only_and_its_layout_checks():
    rng = np.random.default_rng(17)
    ens = random_ensemble(rng, "lightgbm", n_trees=8, max_leaves=30, p_categorical=1.0)
    assert ens.trees.arrays["is_categorical"].all()
    X = category_rows(rng, 70, ens.n_features)
    for isa in RS_ISAS:
        _check(ens, X, isa)
    alg = RapidScorer(ens, _model(ens).plan.forest)
    a = {k: v.copy() for k, v in alg.arrays().items()}
    assert a["cat_node_slot"].shape[0] == ens.trees.arrays["is_categorical"].sum()
    assert a["entries"].shape[0] <= 1         # no numerical node: no entry but a sentinel
    for field, value, message in (
            ("cat_node_slot", a["cat_node_slot"].shape[0] and 99, "categorical slot"),
            ("cat_slot_column", ens.n_features, "categorical slot"),
            ("cat_entries", 0xFFFF, "byte row"),
            ("cat_entry_offsets", 10**6, "entry offsets"),
            ("block_cat", 10**6, "block_cat")):
        bad = dict(a, **{field: np.full_like(a[field], value)})
        with pytest.raises(ValueError, match=message):
            _rapidscorer.RSLayout(bad, ens.n_features)


def test_models_it_cannot_score_are_refused_with_the_reason():
    rng = np.random.default_rng(9)
    numeric = random_tree(rng, 20, 3, "lightgbm", p_categorical=0.0)
    cat = Ensemble(trees=(build_tree(
        left=[1, -1, -1], right=[2, -1, -1], root=0, feature=[0, 0, 0], threshold=[0, 0, 0],
        default_left=[False] * 3, missing_type=[0] * 3, is_categorical=[True, False, False],
        categories={0: [2, 300]}, value=[0.0, 1.0, 2.0], n_features=3), numeric),
        tree_group=[0, 0], n_outputs=1, n_features=3, family="lightgbm", base_score=[0.0])
    assert "category 300" in RapidScorer.unsupported(cat)
    big = Ensemble(trees=(random_tree(rng, 257, 3, "lightgbm", p_categorical=0.0),),
                   tree_group=[0], n_outputs=1, n_features=3, family="lightgbm",
                   base_score=[0.0])
    assert "256 leaves" in RapidScorer.unsupported(big)
    for ens in (cat, big):
        model = quickscorer.Model(ens)
        assert "rapidscorer" not in model.supported_algorithms()
        assert "vqs (rapidscorer cannot score this model)" in model.info()["default_algorithm"]
        with pytest.raises(ValueError, match="'rapidscorer' cannot score this model"):
            model.predict(np.zeros((3, ens.n_features)), algorithm="rapidscorer")
        X = special_rows(rng, 40, ens.n_features)       # the default path still scores it
        np.testing.assert_array_equal(model.predict_raw(X), reference.predict_raw(ens, X))


def test_default_predict_uses_it_and_python_threads_share_it():
    rng = np.random.default_rng(10)
    ens = random_ensemble(rng, "lightgbm", n_trees=40, max_leaves=60, n_outputs=2,
                          p_categorical=0.0)
    model = quickscorer.Model(ens)
    assert "rapidscorer" in model.supported_algorithms()
    assert model.info()["default_algorithm"].startswith("auto: rapidscorer")
    X = special_rows(rng, 500, ens.n_features)
    want = reference.predict_raw(ens, X)
    np.testing.assert_array_equal(model.predict_raw(X), want)
    np.testing.assert_array_equal(model.predict_raw(X, n_threads=2), want)
    results = [None] * 6

    def work(k):
        results[k] = model.predict_raw(X[k:], algorithm="rapidscorer")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for k, r in enumerate(results):
        np.testing.assert_array_equal(r, want[k:])


def test_small_calls_take_the_narrow_path_on_avx512(monkeypatch):
    monkeypatch.delenv("QUICKSCORER_ISA", raising=False)
    rng = np.random.default_rng(11)
    ens = random_ensemble(rng, "lightgbm", n_trees=5, p_categorical=0.0)
    alg = RapidScorer(ens, _model(ens).plan.forest)
    if alg.isa != ISAS["avx512"]:
        pytest.skip("this CPU has no AVX-512 (AVX512BW) path")
    assert alg.isa_for(47, 1) == ISAS["avx2"] and alg.isa_for(48, 1) == ISAS["avx512"]
    assert alg.isa_for(95, 2) == ISAS["avx2"]
    forced = RapidScorer(ens, _model(ens).plan.forest, isa="avx512")
    assert forced.isa_for(3, 1) == ISAS["avx512"]



def _many_thresholds(rng, family, n_distinct, n_trees=40, n_features=3):
    """Trees whose nodes draw from n_distinct thresholds (zero, a tiny one, infinities and
    normal draws), so each feature has hundreds of distinct ones; LightGBM trees mix the
    three missing-value kinds."""
    values = np.unique(np.round(rng.normal(size=3 * n_distinct), 4))
    values = np.r_[0.0, 1e-36, -np.inf, np.inf,
                   rng.choice(values[values != 0.0], n_distinct - 4, replace=False)]
    trees = tuple(random_tree(rng, int(rng.integers(2, 200)), n_features, family,
                              p_categorical=0.0, thresholds=values) for _ in range(n_trees))
    ens = Ensemble(trees=trees, tree_group=[0] * n_trees, n_outputs=1,
                   n_features=n_features, family=family, base_score=[0.25])
    return ens, values


@pytest.mark.parametrize("isa", RS_ISAS)
@pytest.mark.parametrize("family", ["lightgbm", "xgboost"])
@pytest.mark.parametrize("n_distinct", [300, 700])
def test_features_of_more_than_255_thresholds_are_ranked_in_slots(isa, family, n_distinct):
    rng = np.random.default_rng(n_distinct + len(family))
    ens, values = _many_thresholds(rng, family, n_distinct)
    qs = shared_layout(ens)[0]
    offsets, _ = rank_table(qs, ens.n_features)
    assert np.diff(offsets).max() > 255                 # the case at hand
    column = _alg(ens, isa).arrays()["slot_column"]
    assert column.shape[0] == int(np.sum(np.maximum(1, -(-np.diff(offsets) // 255))))
    assert np.array_equal(np.unique(column), np.arange(ens.n_features))
    assert unsupported(ens) is None
    # every threshold, its neighbours on both sides, NaN, zeros and infinities, in 3 columns
    x = np.r_[values, np.nextafter(values, np.inf), np.nextafter(values, -np.inf), np.nan,
              -0.0]
    X = np.c_[x, rng.permutation(x), rng.permutation(x)]
    assert _alg(ens, isa).mirrored       # mirrored nodes test the complement of slot ranks
    for mirror in (True, False):
        _check(ens, X, isa, mirror=mirror)
        _check(ens, special_rows(rng, 200, ens.n_features), isa, block_bytes=300,
               mirror=mirror)


def test_a_model_of_few_thresholds_has_one_slot_a_feature():
    ens = random_ensemble(np.random.default_rng(4), "lightgbm", p_categorical=0.0)
    column = RapidScorer(ens, _model(ens).plan.forest).arrays()["slot_column"]
    assert np.array_equal(column, np.arange(ens.n_features))


def _noisy_rows(rng, n_rows, n_features):
    """Normal rows with 5% NaN and 5% exact zeros, and a target on the first two columns."""
    X = rng.normal(size=(n_rows, n_features))
    y = X[:, 0] + np.sin(3 * X[:, 1]) + 0.1 * rng.normal(size=n_rows)
    X[rng.random(X.shape) < 0.05] = np.nan
    X[rng.random(X.shape) < 0.05] = 0.0
    return X, y


def _assert_slotted_and_exact(model, rows, want):
    """The model has a feature of more than 255 thresholds, every rapidscorer path of the
    CPU and the default predict (rapidscorer) give the library's raw scores ``want``."""
    offsets, _ = rank_table(shared_layout(model.ensemble)[0], model.n_features)
    assert np.diff(offsets).max() > 255
    assert "rapidscorer" in model.supported_algorithms()
    for isa in RS_ISAS:
        got = run_kernel(_alg(model.ensemble, isa), model.ensemble, rows, 1)[0]
        assert np.array_equal(got.reshape(want.shape), want), isa
    assert np.array_equal(model.predict(rows, raw_score=True), want)
    assert "rapidscorer" in model.info()["default_algorithm"]


def test_an_xgboost_exact_model_takes_rapidscorer_and_scores_as_xgboost():
    xgb = pytest.importorskip("xgboost", reason="the test extra installs xgboost-cpu")
    X, y = _noisy_rows(np.random.default_rng(21), 3000, 4)
    booster = xgb.train(dict(tree_method="exact", max_depth=6, eta=0.3, nthread=1, seed=1),
                        xgb.DMatrix(X, label=y, missing=np.nan), 60)
    rows = X[:1000].astype(np.float32)
    want = booster.predict(xgb.DMatrix(rows, missing=np.nan), output_margin=True)
    _assert_slotted_and_exact(quickscorer.Model(quickscorer.load_ensemble(booster)), rows,
                              want)


def test_a_lightgbm_model_of_1023_bins_takes_rapidscorer_and_scores_as_lightgbm():
    lgb = pytest.importorskip("lightgbm", reason="the test extra installs lightgbm")
    X, y = _noisy_rows(np.random.default_rng(22), 4000, 3)
    booster = lgb.train(dict(objective="regression", max_bin=1023, num_leaves=63,
                             min_data_in_leaf=2, verbose=-1, num_threads=1,
                             zero_as_missing=False), lgb.Dataset(X, y), 60)
    _assert_slotted_and_exact(quickscorer.Model(quickscorer.load_ensemble(booster)), X[:1000],
                              booster.predict(X[:1000], raw_score=True))


def _span_total(left, right, flips):
    """Bytes spanned by every node's first subtree of one tree, the nodes in ``flips``
    putting their right subtree first (a brute-force count)."""
    total = 0

    def size(c):
        return 1 if c < 0 else size(left[c]) + size(right[c])

    def walk(n, p):
        nonlocal total
        a, b = (right[n], left[n]) if n in flips else (left[n], right[n])
        k = size(a)
        total += (p % 8 + k - 1) // 8 + 1
        for c, q in ((a, p), (b, p + k)):
            if c >= 0:
                walk(c, q)
    walk(0, 0)
    return total


@pytest.mark.parametrize("seed", range(6))
def test_mirrored_leaf_order_spans_the_fewest_bytes(seed):
    """_build.mirrored_ranges: a leaf order per tree, each node's first subtree a
    contiguous range of it, spanning the fewest bytes of all 2^nodes choices."""
    from itertools import combinations

    from quickscorer.ir import _build
    rng = np.random.default_rng(seed)
    trees = tuple(random_tree(rng, int(rng.integers(1, 12)), 3, "lightgbm",
                              p_categorical=0.0) for _ in range(8))
    ens = Ensemble(trees=trees, tree_group=np.zeros(8, np.int64), n_outputs=1, n_features=3,
                   family="lightgbm", base_score=[0.0])
    packed = ens.trees.arrays
    node_offset = np.ascontiguousarray(ens.trees.node_offset, np.int64)
    leaf_offset = np.ascontiguousarray(ens.trees.leaf_offset, np.int64)
    left = np.ascontiguousarray(packed["left"], np.int32)
    right = np.ascontiguousarray(packed["right"], np.int32)
    lo, mid, hi = _build.packed_leaf_ranges(left, right, node_offset)
    flip, first_lo, first_hi, order = _build.mirrored_ranges(left, right, node_offset,
                                                             leaf_offset, lo, mid, hi)
    for t, tree in enumerate(trees):
        a, b = node_offset[t], node_offset[t + 1]
        pos = order[leaf_offset[t]:leaf_offset[t + 1]]
        assert sorted(pos.tolist()) == list(range(tree.n_leaves))
        if b == a:
            continue
        got = int(np.sum((first_hi[a:b] - 1) // 8 - first_lo[a:b] // 8 + 1))
        chosen = {n for n in range(b - a) if flip[a + n]}
        assert got == _span_total(tree.left, tree.right, chosen)
        # each node's first subtree holds the leaves of the side it chose
        tlo, tmid, thi = tree.leaf_ranges()
        inv = np.empty_like(pos)
        inv[pos] = np.arange(pos.shape[0])
        for n in range(b - a):
            own = (range(tmid[n], thi[n]) if flip[a + n] else range(tlo[n], tmid[n]))
            assert sorted(inv[list(own)].tolist()) == list(range(first_lo[a + n],
                                                                  first_hi[a + n]))
        nodes = range(b - a)
        best = min(_span_total(tree.left, tree.right, set(c))
                   for k in range(len(nodes) + 1) for c in combinations(nodes, k))
        assert got == best


def _lopsided_tree(rng, n_leaves, n_features, family, linear=False):
    """A tree whose every node has about four fifths of its leaves on its left: the case
    mirrored nodes are for (``linear``: LightGBM linear leaves)."""
    left, right = [], []

    def grow(n):                # a subtree of n leaves; its source node
        k = len(left)
        left.append(-1)
        right.append(-1)
        if n > 1:
            small = max(1, n // 5)
            left[k] = grow(n - small)
            right[k] = grow(small)
        return k
    grow(n_leaves)
    k = len(left)
    return build_tree(left=left, right=right, root=0,
                      feature=rng.integers(0, n_features, k).tolist(),
                      threshold=np.round(rng.normal(size=k), 1).tolist(),
                      default_left=(rng.random(k) < 0.5).tolist(),
                      missing_type=(rng.integers(0, 3, k).tolist() if family == "lightgbm"
                                    else [2] * k),
                      is_categorical=[False] * k, categories=None,
                      value=np.round(rng.normal(size=k), 3).tolist(), n_features=n_features,
                      linear=({i: (float(rng.normal()), [i % n_features], [0.5 + 0.01 * i])
                               for i in range(k) if left[i] == -1} if linear else None))


@pytest.mark.parametrize("isa", RS_ISAS)
@pytest.mark.parametrize("family", ["lightgbm", "xgboost"])
def test_lopsided_trees_are_scored_with_mirrored_nodes(isa, family):
    rng = np.random.default_rng(17)
    trees = tuple(_lopsided_tree(rng, n, 4, family) for n in (40, 200, 64, 9, 256, 100))
    ens = Ensemble(trees=trees, tree_group=np.zeros(len(trees), np.int64), n_outputs=1,
                   n_features=4, family=family, base_score=[0.5])
    mirrored, plain = _alg(ens, isa), _alg(ens, isa, mirror=False)
    assert mirrored.mirrored and not plain.mirrored
    a, p = mirrored.arrays(), plain.arrays()
    real = entry_thr(a["entries"]) != SENTINEL_THR
    real_p = entry_thr(p["entries"]) != SENTINEL_THR
    assert real.sum() < 0.7 * real_p.sum()             # far fewer bytes to AND
    assert (a["segments"] >> np.uint64(63)).any()        # segments of mirrored nodes
    order = a["leaf_order"]
    assert not np.array_equal(order, np.concatenate([np.arange(t.n_leaves) for t in trees]))
    X = special_rows(rng, 150, 4)
    for kw in ({}, {"block_bytes": 1}, {"n_threads": 2}):
        _check(ens, X, isa, **kw)
        _check(ens, X, isa, mirror=False, **kw)


@pytest.mark.parametrize("isa", RS_ISAS)
def test_linear_leaves_of_mirrored_trees(isa):
    """Linear leaves add per lane by the tree's own leaf number, not the layout's position."""
    rng = np.random.default_rng(23)
    trees = tuple(_lopsided_tree(rng, n, 4, "lightgbm", linear=True) for n in (30, 90, 12))
    ens = Ensemble(trees=trees, tree_group=np.zeros(3, np.int64), n_outputs=1, n_features=4,
                   family="lightgbm", base_score=[0.0])
    assert _alg(ens, isa).mirrored
    X = special_rows(rng, 120, 4)
    X[np.isinf(X)] = 7.0             # an infinite value times a coefficient: no NaN sums
    _check(ens, X, isa)
    _check(ens, X, isa, mirror=False)


def test_the_tuning_table_can_turn_mirrored_nodes_off():
    rng = np.random.default_rng(29)
    ens = Ensemble(trees=tuple(_lopsided_tree(rng, n, 3, "lightgbm") for n in (50, 20)),
                   tree_group=np.zeros(2, np.int64), n_outputs=1, n_features=3,
                   family="lightgbm", base_score=[0.0])
    forest = _model(ens).plan.forest
    assert RapidScorer(ens, forest).mirrored
    off = quickscorer.Tuning.from_env({"QUICKSCORER_RS_MIRROR": "0"})
    assert off.rs_mirror is False
    assert not RapidScorer(ens, forest, tuning=off).mirrored
    assert RapidScorer(ens, forest, tuning=off, mirror=True).mirrored
    X = special_rows(rng, 50, 3)
    plain = quickscorer.Model(ens, tuning=off)
    np.testing.assert_array_equal(plain.predict_raw(X, algorithm="rapidscorer"),
                                  plain.predict_raw(X, algorithm="traversal"))


def test_full_balanced_trees_keep_the_plain_layout():
    """Mirroring a full tree of 2^d leaves saves no byte: the plain layout serves."""
    def full(depth):
        k = 2 ** (depth + 1) - 1
        left = [2 * i + 1 if 2 * i + 1 < k else -1 for i in range(k)]
        right = [2 * i + 2 if 2 * i + 2 < k else -1 for i in range(k)]
        return build_tree(left=left, right=right, root=0, feature=[i % 3 for i in range(k)],
                          threshold=[0.1 * i for i in range(k)], default_left=[True] * k,
                          missing_type=[2] * k, is_categorical=[False] * k, categories=None,
                          value=[float(i) for i in range(k)], n_features=3)
    trees = tuple(full(d) for d in (1, 3, 6, 8))
    ens = Ensemble(trees=trees, tree_group=np.zeros(4, np.int64), n_outputs=1, n_features=3,
                   family="lightgbm", base_score=[0.0])
    assert half_arrays(ens)[1] is None
    alg = RapidScorer(ens, _model(ens).plan.forest)
    assert not alg.mirrored and alg.arrays()["leaf_order"].shape[0] == 0
    _check(ens, special_rows(np.random.default_rng(3), 80, 3), "scalar")


def test_a_layout_whose_leaf_order_does_not_fit_its_trees_is_refused():
    ens = random_ensemble(np.random.default_rng(5), "lightgbm", n_trees=6, max_leaves=60,
                          p_categorical=0.0)
    alg = RapidScorer(ens, _model(ens).plan.forest)
    assert alg.mirrored
    a = {k: v.copy() for k, v in alg.arrays().items()}
    bad = dict(a, leaf_order=np.full_like(a["leaf_order"], 255))   # trees of <= 60 leaves
    with pytest.raises(ValueError, match="leaf order"):
        _rapidscorer.RSLayout(bad, ens.n_features)
    bad = dict(a, leaf_value=a["leaf_value"][:-1])
    with pytest.raises(ValueError, match="leaf order"):
        _rapidscorer.RSLayout(bad, ens.n_features)
    bad = dict(a, segments=a["segments"] | np.uint64(0x7FFF << 32))
    with pytest.raises(ValueError, match="segment"):
        _rapidscorer.RSLayout(bad, ens.n_features)


def test_tree_blocks_stay_within_16_bit_byte_rows():
    """An entry's byte row is 16 bits: blocks are cut at MAX_BLOCK_ROWS rows whatever the
    budget, and a block beyond it is refused, not wrapped."""
    from quickscorer.algorithms import _layout
    from quickscorer.algorithms.rapidscorer.layout import MAX_BLOCK_ROWS, block_starts_for
    from quickscorer.algorithms.rapidscorer.ranks import fold_halves
    n_bytes = np.full(5000, 32, np.int64)               # 255-leaf trees
    starts = block_starts_for(n_bytes, 1 << 40, 64)
    rows = np.add.reduceat(n_bytes, starts[:-1])
    assert len(starts) > 2 and rows.max() <= MAX_BLOCK_ROWS
    ens = random_ensemble(np.random.default_rng(6), "lightgbm", n_trees=3, max_leaves=20,
                          p_categorical=0.0)
    qs, _, (_, _, rank), S = fold_halves(half_arrays(ens)[0], ens.n_features)
    huge = np.array([0, 40000, 80000, 80001], np.int64)  # one block of 80,001 rows
    with pytest.raises(ValueError, match="byte rows"):
        _layout.rs_entries(qs["words"], qs["masks"], qs["trees"], rank,
                           qs["segment_offsets"], qs["tree_word_offsets"], huge,
                           np.array([0, 3], np.int64), N_HALVES * S)


@pytest.mark.parametrize("family", ["lightgbm", "xgboost"])
def test_xgboost_models_rank_in_float32_and_keep_it_through_pickle(family):
    """XGBoost rows are float32 values, so their rank search compares in float32 (float32
    copies of the search tables); LightGBM rows are doubles and keep the float64 search.
    Both stay exact, here on rows with NaN, zeros, subnormals and infinities, on every path
    the CPU has."""
    import pickle
    rng = np.random.default_rng(31)
    # float32 values as thresholds (XGBoost's are; a model with others keeps float64)
    thresholds = (-1.0, 0.0, 0.5, float(np.float32(1e-36)), 2.0, float(np.float32(2.7)),
                  np.inf, -np.inf)
    ens = random_ensemble(rng, family, n_trees=30, p_categorical=0.0, thresholds=thresholds)
    alg = _alg(ens, None)
    assert alg.layout.float32_ranks == (family == "xgboost")
    again = pickle.loads(pickle.dumps(alg.layout))
    assert again.float32_ranks == alg.layout.float32_ranks
    if family == "lightgbm":
        # float64 rows ranked in float32 would round: a LightGBM forest refuses such a layout
        f32 = _rapidscorer.RSLayout(alg._arrays, ens.n_features, float32_ranks=True)
        assert f32.float32_ranks
        out = np.empty((2, 1))
        with pytest.raises(ValueError, match="float32"):
            _rapidscorer.predict_raw(alg.forest, f32, np.zeros((2, ens.n_features)), out,
                                     np.empty((0, 1), np.float32), alg._scratch_rows(1), 1,
                                     alg.isa)
    X = special_rows(rng, 300, ens.n_features)
    for name in ("scalar", VEC, f"{VEC}-32", "avx512"):
        if name != f"{VEC}-32" and not (name in cpu.NAMES
                                        and _rapidscorer.isa_available(cpu.NAMES[name])):
            continue                      # a path this CPU does not have
        _check(ens, X, name)
