"""V-QuickScorer (8 documents per scan, tree blocks) against the reference, on every
instruction-set path this CPU has, forced one at a time."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from conftest import random_ensemble, random_tree, run_kernel, special_rows
from hypothesis import given, settings
from hypothesis import strategies as st

import quickscorer
from quickscorer.algorithms import cpu
from quickscorer.algorithms.cpu import ISAS, available_isas, isa_code
from quickscorer.algorithms.qs.vqs import VQuickScorer
from quickscorer.ir import MISSING_ZERO, Ensemble, reference

ISA_LIST = available_isas()


def _run(ens, X, isa, n_threads=1, **kw):
    alg = VQuickScorer(ens, quickscorer.Model(ens).plan.forest, isa=isa, **kw)
    return run_kernel(alg, ens, np.ascontiguousarray(X), n_threads)


def _check(ens, X, isa, **kw):
    raw, leaves = _run(ens, X, isa, **kw)
    np.testing.assert_array_equal(leaves, reference.predict_leaf(ens, X))
    want = reference.predict_raw(ens, X)
    np.testing.assert_array_equal(raw, want.astype(raw.dtype))


def test_scalar_and_this_cpus_paths_are_listed():
    assert "scalar" in ISA_LIST
    assert set(ISA_LIST) <= set(cpu.NAMES) and set(cpu.NAMES.values()) <= set(ISAS.values())
    with pytest.raises(ValueError, match="unknown instruction set"):
        isa_code("sse9")
    # the other architecture's vector path: refused, naming the paths this CPU runs
    other = "avx2" if cpu.NEON else "neon"
    with pytest.raises(ValueError, match=f"cannot run the '{other}' path; it runs"):
        isa_code(other)
    for name in ISA_LIST:
        assert cpu.isa_name(isa_code(name)) == name


@pytest.mark.parametrize("isa", ISA_LIST)
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), family=st.sampled_from(["lightgbm", "xgboost"]),
       n_rows=st.sampled_from([1, 7, 8, 9, 17, 100]), n_outputs=st.integers(1, 3),
       max_leaves=st.sampled_from([2, 40, 70]))
def test_random_models_match_the_reference(isa, seed, family, n_rows, n_outputs, max_leaves):
    rng = np.random.default_rng(seed)
    ens = random_ensemble(rng, family, n_trees=15, n_outputs=n_outputs, max_leaves=max_leaves)
    X = special_rows(rng, n_rows, ens.n_features)
    _check(ens, X, isa)
    _check(ens, X.astype(np.float32), isa)
    _check(ens, X, isa, merge=True)
    _check(ens, X, isa, lanes=16)
    _check(ens, X, isa, lanes=32, merge=True)
    _check(ens, X, isa, lanes=4, merge=True)


@pytest.mark.parametrize("isa", ISA_LIST)
@pytest.mark.parametrize("family", ["lightgbm", "xgboost"])
@pytest.mark.parametrize("p_categorical", [0.0, 0.15])   # blocks cut in C / built per block
def test_mixed_tree_sizes_and_tree_blocks(isa, family, p_categorical):
    rng = np.random.default_rng(21)
    sizes = (1, 2, 63, 64, 65, 255, 1, 130, 7, 300)
    trees = tuple(random_tree(rng, n, 6, family, p_categorical=p_categorical) for n in sizes)
    ens = Ensemble(trees=trees, tree_group=np.arange(len(trees)) % 2, n_outputs=2,
                   n_features=6, family=family, base_score=[0.5, -1.0])
    assert ens.has_categorical == (p_categorical > 0)
    X = special_rows(rng, 77, 6)
    _check(ens, X, isa)                   # one block
    for merge in (True, False):
        for groups, lanes in ((1, 8), (3, 16), (8, 8), (2, 32), (5, 4)):   # blocked kernel
            _check(ens, X, isa, block_bytes=20_000, doc_groups=groups, merge=merge, lanes=lanes)
            _check(ens, X, isa, block_bytes=1, doc_groups=groups, merge=merge, lanes=lanes)
    alg = VQuickScorer(ens, quickscorer.Model(ens).plan.forest, isa=isa, block_bytes=1)
    assert alg.tree_blocks == len(sizes)  # one tree per block
    assert VQuickScorer(ens, quickscorer.Model(ens).plan.forest, isa=isa).tree_blocks == 1


@pytest.mark.parametrize("isa", ISA_LIST)
def test_zero_missing_type_and_categories(isa):
    """Rows full of zeros, -0.0, NaN and categories exercise every lane fix-up."""
    rng = np.random.default_rng(2)
    ens = random_ensemble(rng, "lightgbm", n_trees=20, max_leaves=30, p_categorical=0.4)
    assert any((t.missing_type == MISSING_ZERO).any() for t in ens.trees)
    X = rng.choice([0.0, -0.0, np.nan, 1.0, 2.0, 33.0, -1.0, 1e-36], size=(41, 5))
    for lanes in (4, 8, 16, 32):
        _check(ens, X, isa, lanes=lanes)
        _check(ens, X, isa, lanes=lanes, merge=True)


def test_threads_and_python_threads():
    rng = np.random.default_rng(7)
    ens = random_ensemble(rng, "lightgbm", n_trees=40, max_leaves=80, n_outputs=2)
    model = quickscorer.Model(ens)
    X = special_rows(rng, 333, ens.n_features)
    one = model.predict_raw(X, algorithm="vqs")
    np.testing.assert_array_equal(one, reference.predict_raw(ens, X))
    np.testing.assert_array_equal(model.predict_raw(X, algorithm="vqs", n_threads=2), one)
    results = [None] * 6

    def work(k):
        results[k] = model.predict_raw(X, algorithm="vqs")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for r in results:
        np.testing.assert_array_equal(r, one)


def test_the_tuning_table_and_the_environment_force_the_path():
    rng = np.random.default_rng(1)
    ens = random_ensemble(rng, "lightgbm", n_trees=3)
    forest = quickscorer.Model(ens).plan.forest
    scalar = quickscorer.Tuning.from_env({"QUICKSCORER_ISA": "scalar"})
    assert scalar.isa == "scalar"
    assert VQuickScorer(ens, forest, tuning=scalar).isa_name == "scalar"
    assert quickscorer.Model(ens, tuning=scalar, prepare=("vqs",)).info()[
        "vqs_instruction_set"] == "scalar"
    with pytest.raises(ValueError, match="unknown instruction set 'nope'"):
        VQuickScorer(ens, forest, tuning=scalar.replace(isa="nope"))
    for bad in (2, 12, 64):
        with pytest.raises(ValueError, match="lanes must be one of"):
            VQuickScorer(ens, forest, lanes=bad)
    with pytest.raises(ValueError, match="QUICKSCORER_LANES"):
        quickscorer.Tuning.from_env({"QUICKSCORER_LANES": "many"})


def test_autoselect_picks_a_registered_exact_algorithm():
    from quickscorer.algorithms import autoselect
    rng = np.random.default_rng(12)
    ens = random_ensemble(rng, "xgboost", n_trees=25, max_leaves=50)
    model = quickscorer.Model(ens)
    # every algorithm but the one for oblivious trees, which takes every call it can
    names = [n for n in quickscorer.available_algorithms() if n != "oblivious"]
    supported = model.supported_algorithms()
    assert "rapidscorer" in supported         # categorical splits too
    for n_rows in (1, 4, 5, 8, 100, 1000):
        for n_threads in (1, 2):
            assert autoselect.choose(supported, n_rows, n_threads) in names
            assert 1 <= autoselect.threads_for(n_rows, n_threads) <= n_threads
    assert autoselect.choose(supported, 1, 1) == "quickscorer"
    assert autoselect.choose(supported, 1000, 1) == "rapidscorer"
    assert autoselect.choose([n for n in supported if n != "rapidscorer"], 1000, 1) == "vqs"
    assert autoselect.choose(names, quickscorer.current_tuning().rs_min_rows - 1, 1) == "vqs"
    assert autoselect.choose(names, quickscorer.current_tuning().rs_min_rows, 1) == "rapidscorer"
    assert autoselect.choose(names, 4, 1, rs_from=5) == "vqs"
    assert autoselect.choose(names, 5, 1, rs_from=5) == "rapidscorer"
    assert autoselect.choose(names, 1000, 1) == "rapidscorer"
    # the boundaries: one-row kernel below 4 rows (below 3 from the scan to vqs, below),
    # few-rows kernel below rs_from (9 after the walk), then rapidscorer
    assert autoselect.choose(names, 3, 1, "walk", "walk") == "walk"
    assert autoselect.choose(names, 4, 1, "walk", "vqs") == "vqs"
    # the scan hands 3-row calls to vqs's 4-lane group; the walk keeps them
    assert autoselect.choose(names, 3, 1, "quickscorer", "vqs") == "vqs"
    assert autoselect.choose(names, 2, 1, "quickscorer", "vqs") == "quickscorer"
    assert autoselect.choose(names, 3, 1, "walk", "vqs") == "walk"
    assert autoselect.choose(names, 3, 1, "quickscorer", "walk") == "quickscorer"
    assert autoselect.choose(names, 6, 2, "quickscorer", "vqs") == "vqs"
    # a model of oblivious trees: ``oblivious`` from OBLIVIOUS_MIN_ROWS rows a thread
    every = quickscorer.available_algorithms()
    first = quickscorer.current_tuning().oblivious_min_rows
    assert autoselect.choose(every, first, 1, "walk", "vqs") == "oblivious"
    assert autoselect.choose(every, 1000, 4, "walk", "vqs") == "oblivious"
    assert autoselect.choose(every, first - 1, 1, "walk", "vqs") == "walk"
    assert autoselect.choose(every, 2 * first - 1, 2, "walk", "vqs") == "walk"
    walk_rs = quickscorer.current_tuning().rs_after_walk_min_rows
    assert autoselect.choose(names, 8, 1, "quickscorer", "walk", walk_rs) == "walk"
    assert autoselect.choose(names, 9, 1, "walk", "walk", walk_rs) == "rapidscorer"
    # where rapidscorer cannot score the model, many rows take the few-rows kernel
    assert autoselect.choose(["quickscorer", "vqs", "walk"], 9, 1, "walk", "walk") == "walk"
    assert autoselect.choose(["quickscorer", "vqs", "walk"], 900, 1, "walk", "vqs") == "vqs"
    assert autoselect.candidates(["quickscorer", "vqs", "walk"], "walk", "walk") == ("walk",)
    assert autoselect.choose(names, 17, 2, "walk", "walk", walk_rs) == "walk"  # 8.5 a thread
    assert autoselect.candidates(names, "walk", "walk") == ("walk", "rapidscorer")
    assert autoselect.candidates(supported, "quickscorer", "vqs") == ("quickscorer", "vqs",
                                                                      "rapidscorer")
    assert autoselect.candidates(["quickscorer", "vqs"], "quickscorer", "vqs") == (
        "quickscorer", "vqs")
    X = special_rows(rng, 300, ens.n_features)
    want = reference.predict_raw(ens, X)
    for n in (1, 3, 5, 300):            # the one-row, few-rows and many-rows kernels
        np.testing.assert_array_equal(model.predict_raw(X[:n]), want[:n])
    assert model.info()["default_algorithm"].startswith("auto")
    assert model.info()["vqs_instruction_set"] in ISA_LIST
    assert "rapidscorer" in model.info()["layout_bytes"]


@pytest.mark.parametrize("algorithm", ["quickscorer", "vqs"])
def test_a_call_allocates_nothing_proportional_to_the_model(algorithm):
    """Scratch bitvectors are kept per Python thread: after the first call, scoring a few rows
    allocates only the output, not the model-sized scratch (8 lanes x some 2,000 words here)."""
    import tracemalloc
    rng = np.random.default_rng(3)
    ens = random_ensemble(rng, "lightgbm", n_trees=1500, max_leaves=100)
    model = quickscorer.Model(ens)
    X = special_rows(rng, 16, ens.n_features)
    words = model.prepare(algorithm)._words
    assert words >= 1500
    want = model.predict_raw(X, algorithm=algorithm)   # first call: scratch allocated
    tracemalloc.start()
    try:
        got = model.predict_raw(X, algorithm=algorithm)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(got, want)
    assert peak < words * 8, (peak, words)


@pytest.mark.parametrize("isa", ISA_LIST)
def test_group_width_follows_the_rows_per_thread(isa):
    from quickscorer.algorithms.cpu import MAX_LANES
    rng = np.random.default_rng(4)
    ens = random_ensemble(rng, "lightgbm", n_trees=10)
    alg = VQuickScorer(ens, quickscorer.Model(ens).plan.forest, isa=isa)
    widest = MAX_LANES[isa]
    assert alg.lanes_for(1, 1) == 4 and alg.lanes_for(4, 1) == 4 and alg.lanes_for(9, 2) == 4
    assert alg.lanes_for(5, 1) == 8 and alg.lanes_for(15, 1) == 8
    assert alg.lanes_for(16, 1) == min(16, widest)
    assert alg.lanes_for(10_000, 1) == widest and alg.lanes_for(40, 2) == min(16, widest)
    fixed = VQuickScorer(ens, quickscorer.Model(ens).plan.forest, isa=isa, lanes=16)
    assert fixed.lanes_for(10_000, 1) == 16 and fixed.lanes_for(1, 1) == 16


@pytest.mark.parametrize("merge", [False, True])
def test_calls_too_small_to_reuse_a_block_scan_the_whole_layout(merge):
    """Tree blocks are built by the first call of lanes x doc_groups rows per thread; smaller
    calls scan the whole layout (no blocks built); both are exact."""
    rng = np.random.default_rng(5)
    ens = random_ensemble(rng, "lightgbm", n_trees=12, n_features=6, max_leaves=40)
    model = quickscorer.Model(ens)
    alg = VQuickScorer(ens, model.plan.forest, block_bytes=1, doc_groups=2, lanes=8, merge=merge)
    assert alg.tree_blocks == 12
    X = special_rows(rng, 40, 6)
    before = len(alg.held_arrays())
    for n in (1, 5, 15):                   # below 8 x 2 rows: the whole layout
        raw = np.zeros((n, 1))
        alg.predict_raw(X[:n], raw, np.zeros((0, 0), np.float32), 1)
        np.testing.assert_array_equal(raw, reference.predict_raw(ens, X[:n]))
    assert alg._blocked is None and len(alg.held_arrays()) == before
    raw = np.zeros((40, 1))
    alg.predict_raw(X, raw, np.zeros((0, 0), np.float32), 1)
    np.testing.assert_array_equal(raw, reference.predict_raw(ens, X))
    assert alg._blocked is not None and alg._blocked.n_blocks == 12
    assert len(alg.held_arrays()) > before
