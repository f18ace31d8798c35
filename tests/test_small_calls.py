"""The low-latency entries of calls of fewer than PARALLEL_MIN_ROWS rows (``predict_small`` of
``_kernel``, ``_vqs`` and ``_rapidscorer``, through ``Model.predict``): the same numbers as
the general path of the same kernel for every kind of model and input they take, taken by
every such call of the automatic choice, the general path for everything else, and safe
from many threads at once."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from conftest import linear_tree, random_ensemble, special_rows

import quickscorer
from quickscorer import _kernel
from quickscorer.algorithms import autoselect, cpu
from quickscorer.algorithms.cpu import ISAS, available_isas
from quickscorer.algorithms.qs import _vqs
from quickscorer.algorithms.qs.vqs import VQuickScorer
from quickscorer.algorithms.rapidscorer import _rapidscorer
from quickscorer.algorithms.rapidscorer.rapidscorer import RapidScorer
from quickscorer.errors import InputError


def _models():
    rng = np.random.default_rng(11)
    out = {}
    for family in ("lightgbm", "xgboost"):
        for k in (1, 3):
            ens = random_ensemble(rng, family, n_trees=12, n_outputs=k, n_features=6)
            out[f"{family}-{k}"] = quickscorer.Model(ens)
    return out


MODELS = _models()


def _general(model, name, rows):
    """Raw scores of the general path of kernel `name` (typed memoryviews, OpenMP loop)."""
    k = model.n_outputs
    xgb = model.plan.forest.dtype == np.float32
    want = np.empty((rows.shape[0], k), np.float32 if xgb else np.float64)
    empty = np.empty((0, k), np.float64 if xgb else np.float32)
    alg = model.prepare(name)
    if xgb:
        alg.predict_raw(rows, empty, want, 1)
    else:
        alg.predict_raw(rows, want, empty, 1)
    return want


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_small_calls_equal_the_general_path(name, dtype):
    model = MODELS[name]
    X = special_rows(np.random.default_rng(5), 40, model.n_features).astype(dtype)
    k = model.n_outputs
    for n in (1, 2, 3):
        rows = np.ascontiguousarray(X[:n])
        want = _general(model, "quickscorer", rows)
        got = model.predict_raw(rows)
        assert got.dtype == want.dtype and np.array_equal(got, want)
        assert np.array_equal(model.predict(rows, raw_score=True),
                              want[:, 0] if k == 1 else want)
        out = model.predict(rows)
        assert np.array_equal(out, model.predict(np.asfortranarray(rows)))  # general path
        assert np.array_equal(model.predict(rows, algorithm="quickscorer"), out)
    one = np.ascontiguousarray(X[0])
    assert np.array_equal(model.predict(one), model.predict(X[:1]))
    assert model.predict_raw(one).shape == (1, model.n_outputs)


def test_the_entry_declines_what_it_does_not_read():
    model = MODELS["lightgbm-1"]
    lay = model.prepare("quickscorer").layout
    f = model.plan.forest
    X = np.zeros((2, model.n_features))
    assert _kernel.predict_small(f, lay, X, True).shape == (2,)
    for bad in (np.asfortranarray(np.zeros((2, model.n_features))), X.astype(np.int64),
                np.zeros((2, model.n_features + 1)), np.zeros((2, 2 * model.n_features))[:, ::2],
                np.zeros((1, 2, model.n_features)), [[0.0] * model.n_features]):
        assert _kernel.predict_small(f, lay, bad, True) is None
    with pytest.raises(InputError, match="features"):
        model.predict(np.zeros((1, model.n_features + 1)))


SIZES = (1, 3, 4, 5, 8, 9, 16, 31, 32, 33, 47, 63)


def _wide_models():
    """Models every kernel with an entry scores, rapidscorer included (numeric splits, at
    most 64 leaves), with NaN / zero / infinite thresholds; and one with categories."""
    rng = np.random.default_rng(21)
    out = {}
    for family in ("lightgbm", "xgboost"):
        for k in (1, 3):
            ens = random_ensemble(rng, family, n_trees=30, n_outputs=k, n_features=7,
                                  max_leaves=64, p_categorical=0.0)
            out[f"{family}-{k}"] = quickscorer.Model(ens)
    out["lightgbm-categorical"] = quickscorer.Model(
        random_ensemble(rng, "lightgbm", n_trees=30, n_features=7, max_leaves=64))
    return out


WIDE = _wide_models()


@pytest.mark.parametrize("name", sorted(WIDE))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_entry_equals_its_general_path(name, dtype):
    model = WIDE[name]
    X = special_rows(np.random.default_rng(6), 63, model.n_features).astype(dtype)
    supported = model.supported_algorithms()
    for algorithm in ("quickscorer", "walk", "vqs", "rapidscorer"):
        if algorithm not in supported:
            continue
        for n in SIZES:
            rows = np.ascontiguousarray(X[:n])
            want = _general(model, algorithm, rows)
            got = model.predict_raw(rows, algorithm=algorithm)
            assert got.dtype == want.dtype and np.array_equal(got, want), (algorithm, n)
            small = model.prepare(algorithm).predict_small(rows, False)
            assert small is not None and np.array_equal(small, want), (algorithm, n)
    for n in SIZES:
        rows = np.ascontiguousarray(X[:n])
        kernel = model.plan.small_kernels[n]
        assert kernel == autoselect.choose(supported, n, 1, model.plan.one_row[0],
                                           model.plan.few_rows)
        want = _general(model, kernel, rows)
        assert np.array_equal(model.predict_raw(rows), want)
        assert np.array_equal(model.predict_raw(rows, n_threads=2), want)
        assert np.array_equal(model.predict(rows, raw_score=True),
                              want[:, 0] if model.n_outputs == 1 else want)
        # the same rows read by the general path (Fortran order is not the entries')
        assert np.array_equal(model.predict(np.asfortranarray(rows)), model.predict(rows))


def test_linear_trees_through_every_entry():
    from quickscorer.ir.ensemble import Ensemble
    t = linear_tree()
    ens = Ensemble(trees=(t,) * 5, tree_group=np.zeros(5, np.int64), n_outputs=1,
                   n_features=3, family="lightgbm", base_score=np.array([0.5]))
    model = quickscorer.Model(ens)
    X = special_rows(np.random.default_rng(8), 40, 3)
    for algorithm in ("quickscorer", "vqs", "rapidscorer"):
        if algorithm not in model.supported_algorithms():
            continue
        for n in (1, 4, 8, 9, 40):
            rows = np.ascontiguousarray(X[:n])
            assert np.array_equal(model.predict_raw(rows, algorithm=algorithm),
                                  _general(model, algorithm, rows))


def test_calls_below_parallel_min_rows_take_an_entry(monkeypatch):
    """Every call of the automatic choice below PARALLEL_MIN_ROWS rows runs the kernel's
    low-latency entry, never its general path; from PARALLEL_MIN_ROWS the general path."""
    model = WIDE["lightgbm-1"]
    X = special_rows(np.random.default_rng(7), model.tuning.parallel_min_rows, model.n_features)
    for n in SIZES:
        model.predict(X[:n])                                # prepare what each size runs

    def general(*args):
        raise AssertionError("the general path ran")

    for name in set(model.plan.small_kernels):
        monkeypatch.setattr(model.prepare(name), "predict_raw", general)
    for n in SIZES:
        model.predict(np.ascontiguousarray(X[:n]))
        model.predict(np.ascontiguousarray(X[:n]).astype(np.float32), n_threads=4)
    with pytest.raises(AssertionError, match="general path"):
        model.predict(X)


def test_the_default_entries_are_made_once_per_number_of_rows():
    """The automatic choice keeps one entry per number of rows below PARALLEL_MIN_ROWS
    (Algorithm.small_entry, the kernel's choices for that many rows made once): made on the
    first call of that many rows, reused after, and scoring as the kernel named."""
    model = quickscorer.Model(WIDE["xgboost-3"].ensemble)
    X = special_rows(np.random.default_rng(8), 2 * model.tuning.parallel_min_rows,
                     model.n_features)
    assert model.plan.small_entries == [None] * model.tuning.parallel_min_rows
    for n in SIZES:
        got = model.predict(X[:n], raw_score=True)
        entry = model.plan.small_entries[n]
        assert entry is not None
        assert np.array_equal(got, model.predict(X[:n], raw_score=True,
                                                 algorithm=model.plan.small_kernels[n]))
        assert np.array_equal(model.predict(X[n:2 * n], raw_score=True),
                              model.predict(X[n:2 * n], raw_score=True, algorithm="traversal"))
        assert model.plan.small_entries[n] is entry
    assert len({model.plan.small_kernels[n] for n in SIZES}) >= 3
    made = [n for n, e in enumerate(model.plan.small_entries) if e is not None]
    assert made == sorted(set(SIZES) - {0})


def _unaligned(X):
    """X's values in an array whose data starts one byte past an aligned address."""
    raw = np.zeros(X.nbytes + 1, np.uint8)
    out = np.frombuffer(raw.data, X.dtype, X.size, offset=1).reshape(X.shape)
    out[...] = X
    assert not out.flags.aligned
    return out


@pytest.mark.parametrize("n", [1, 3, 5, 20, 40])
def test_byte_swapped_and_unaligned_rows_score_as_native_ones(n):
    """A big-endian float array has the numpy type number of a native one: the entries
    must decline it (and unaligned arrays), the general path converts them."""
    model = WIDE["lightgbm-3"]
    X = special_rows(np.random.default_rng(14), n, model.n_features)
    for dtype in (np.float64, np.float32):
        want = model.predict(X.astype(dtype))
        swapped = X.astype(np.dtype(dtype).newbyteorder())
        assert np.array_equal(model.predict(swapped), want)
        assert np.array_equal(model.predict(_unaligned(X.astype(dtype))), want)
        for name in ("quickscorer", "vqs", "rapidscorer"):
            assert model.prepare(name).predict_small(swapped, False) is None
            assert np.array_equal(model.predict(swapped, algorithm=name), want)


def test_the_vector_entries_decline_what_they_do_not_read():
    model = WIDE["xgboost-3"]
    f = model.plan.forest
    v = model.prepare("vqs")
    r = model.prepare("rapidscorer")
    width = model.n_features

    def entries(X):
        return (_vqs.predict_small(f, v._whole, X, True, v.isa, v.merge, 8),
                _rapidscorer.predict_small(f, r.layout, X, True, r.isa,
                                           r.scratch("rs", 1, r._scratch_words)))

    for out in entries(np.zeros((5, width), np.float32)):
        assert out.shape == (5, 3) and out.dtype == np.float32
    for bad in (np.asfortranarray(np.zeros((5, width))), np.zeros((5, width), np.int64),
                np.zeros((5, width + 1)), np.zeros((5, 2 * width))[:, ::2],
                np.zeros((1, 5, width)), [[0.0] * width]):
        assert entries(bad) == (None, None)
    with pytest.raises(ValueError, match="lanes"):
        _vqs.predict_small(f, v._whole, np.zeros((5, width)), True, v.isa, v.merge, 5)
    with pytest.raises(ValueError, match="scratch"):
        _rapidscorer.predict_small(f, r.layout, np.zeros((5, width)), True, r.isa,
                                   np.zeros(8, np.uint64))
    other = quickscorer.Model(random_ensemble(np.random.default_rng(1), "xgboost",
                                              n_trees=3, n_features=width))
    with pytest.raises(ValueError, match="disagree"):
        _rapidscorer.predict_small(other.plan.forest, r.layout, np.zeros((5, width)), True,
                                   r.isa, r.scratch("rs", 1, r._scratch_words))
    assert _vqs.predict_small(other.plan.forest, v._whole, np.zeros((5, width)), True, v.isa,
                              v.merge, 8) is None
    with pytest.raises(InputError, match="features"):
        model.predict(np.zeros((9, width + 1)))


@pytest.mark.parametrize("n", [1, 3, 5, 20, 40])
def test_small_calls_from_many_threads(n):
    """Eight Python threads through the entries of the one-row scan, vqs and rapidscorer,
    each on its own scratch, give every call's scores."""
    model = WIDE["xgboost-3"]
    X = special_rows(np.random.default_rng(9), 200, model.n_features)
    starts = range(0, 200 - n, 7)
    want = {s: model.predict(X[s:s + n]) for s in starts}
    bad = []

    def work(seed):
        order = np.random.default_rng(seed).permutation(list(starts))
        for _ in range(5):
            for s in order:
                if not np.array_equal(model.predict(X[s:s + n]), want[s]):
                    bad.append(s)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == []


VQS_ISAS = available_isas()
#: the paths by name (cpu.NAMES: the 256-bit one is "avx2" on x86-64, "neon" on AArch64)
VEC = cpu.isa_name(ISAS["avx2"])
RS_ISAS = [name for name, code in cpu.NAMES.items() if _rapidscorer.isa_available(code)]


@pytest.mark.parametrize("isa", VQS_ISAS)
@pytest.mark.parametrize("block_bytes", [None, 1])
def test_the_vqs_entry_on_every_instruction_set_and_tree_blocks(isa, block_bytes):
    """block_bytes=1: a tree block per tree, so the entry runs every block in turn."""
    model = WIDE["lightgbm-3"]
    X = special_rows(np.random.default_rng(12), 63, model.n_features)
    for merge in (False, True):
        alg = VQuickScorer(model.ensemble, model.plan.forest, isa=isa, block_bytes=block_bytes,
                           merge=merge)
        assert block_bytes is None or alg.tree_blocks == model.ensemble.n_trees
        for n in SIZES:
            rows = np.ascontiguousarray(X[:n])
            want = np.empty((n, 3))
            alg.predict_raw(rows, want, np.empty((0, 3), np.float32), 1)
            assert np.array_equal(alg.predict_small(rows, False), want), (merge, n)
            # the calls above scan the whole layout; the entry scans tree blocks in turn too
            lanes = alg.lanes_for(n, 1)
            blocks = alg._layout_for(10**6, 1, lanes)
            assert blocks.n_blocks == alg.tree_blocks
            got = _vqs.predict_small(model.plan.forest, blocks, rows, False, alg.isa, alg.merge,
                                     lanes)
            assert np.array_equal(got, want), (merge, n)


RS_CASES = [(isa, kw) for isa in RS_ISAS
            for kw in ({}, {"block_bytes": 1}, {"levels": False})] + (
    [(VEC, {"wide": False})] if VEC in RS_ISAS else [])


@pytest.mark.parametrize("isa, kw", RS_CASES)
def test_the_rapidscorer_entry_on_every_path(isa, kw):
    """The entry against the general path of the same layout: every path the CPU has, tree
    blocks of one tree, scans only (no level path), and AVX2 without 64-lane groups."""
    for name in ("xgboost-1", "lightgbm-3", "lightgbm-categorical"):
        model = WIDE[name]
        X = special_rows(np.random.default_rng(13), 63, model.n_features)
        alg = RapidScorer(model.ensemble, model.plan.forest, isa=isa, **kw)
        k = model.n_outputs
        xgb = name.startswith("xgboost")
        for n in SIZES:
            rows = np.ascontiguousarray(X[:n].astype(np.float32))
            want = np.empty((n, k), np.float32 if xgb else np.float64)
            empty = np.empty((0, k), np.float64 if xgb else np.float32)
            alg.predict_raw(rows, *((empty, want) if xgb else (want, empty)), 1)
            assert np.array_equal(alg.predict_small(rows, False), want), (name, n)
            # the widest path for any number of rows (a group of up to 32 on the 32-lane
            # path, as a call's last group)
            got = _rapidscorer.predict_small(model.plan.forest, alg.layout, rows, False,
                                             alg.widest, alg.scratch("rs", 1,
                                                                     alg._scratch_words))
            assert np.array_equal(got, want), (name, n)
