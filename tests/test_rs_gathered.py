"""RapidScorer's gathered walk (rapidscorer.walks, rapidscorer/gw.h): each lane of a group walks
its row down the trees by AVX-512 gathers. It must give the reference's and LightGBM's raw
scores bit for bit at every call size and thread count (single groups, chunks of groups,
NaN and zero as missing values on either default side, trees of one leaf), hold every node
and leaf of the trees once, be chosen by its cost where it pays, travel in the model file to
the C library, and have its fields refused by name where a file's would loop or read outside
them."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import missing_rows, random_ensemble, run_kernel, special_rows

import quickscorer
from quickscorer import capi, model_file
from quickscorer.algorithms.rapidscorer import _rapidscorer
from quickscorer.algorithms.rapidscorer import walks as W
from quickscorer.algorithms.rapidscorer.layout import rapidscorer_arrays
from quickscorer.algorithms.rapidscorer.rapidscorer import RapidScorer
from quickscorer.errors import ModelFileError
from quickscorer.ir import reference

#: the walk runs where the AVX-512 path does (a forced walk; the default also asks an Intel
#: core); elsewhere its fields are kept and the scans score
RUNS = _rapidscorer.isa_available(2)


def _alg(ens, gathered=True, **kw):
    return RapidScorer(ens, quickscorer.Model(ens).plan.forest, isa="avx512" if RUNS else None,
                       levels=False, gathered=gathered, **kw)


def _deep_ensemble(seed, n_trees=40, max_leaves=220, n_features=7):
    return random_ensemble(np.random.default_rng(seed), "lightgbm", n_trees=n_trees,
                           n_features=n_features, max_leaves=max_leaves, p_categorical=0.0)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_walk_scores_as_the_reference_at_every_call_size(seed):
    ens = _deep_ensemble(seed)
    on, off = _alg(ens), _alg(ens, gathered=False)
    assert on.layout.gathered == RUNS
    assert not off.layout.gathered
    assert off._arrays["gw_nodes"].shape[0] == 0
    rng = np.random.default_rng(seed)
    X = special_rows(rng, 1300, ens.n_features)
    want = reference.predict_raw(ens, X)
    for n in (1, 33, 63, 64, 65, 130, 1300):      # one group, a part group, chunks of groups
        for n_threads in (1, 2, 3):
            raw, leaves = run_kernel(on, ens, X[:n], n_threads)
            np.testing.assert_array_equal(raw, want[:n])
            np.testing.assert_array_equal(leaves, reference.predict_leaf(ens, X[:n]))
        got = on.predict_small(X[:n], False)
        if got is not None:
            np.testing.assert_array_equal(np.asarray(got).reshape(n, -1), want[:n])


@pytest.mark.parametrize("missing", ["nan", "zero", "none"])
def test_the_walk_scores_as_lightgbm_with_missing_values(missing):
    """LightGBM's three missing types on deep leaf-wise trees: the walk takes them by default
    where the CPU runs it, and its scores are LightGBM's own."""
    lgb = pytest.importorskip("lightgbm", reason="the test extra installs lightgbm")
    rng = np.random.default_rng(5)
    X, y = missing_rows(rng, 6000)
    params = dict(objective="regression", num_leaves=255, verbose=-1, num_threads=1, seed=3,
                  use_missing=missing != "none", zero_as_missing=missing == "zero",
                  min_data_in_leaf=2, max_bin=63)
    booster = lgb.train(params, lgb.Dataset(X, y), num_boost_round=12)
    model = quickscorer.load(booster)
    alg = _alg(model.ensemble)
    assert alg._arrays["gw_nodes"].shape[0] > 0
    rows = np.vstack([X[:700], special_rows(rng, 200, 8)])
    want = booster.predict(rows, raw_score=True)
    raw, _ = run_kernel(alg, model.ensemble, rows, 2)
    np.testing.assert_array_equal(raw[:, 0], want)
    np.testing.assert_array_equal(model.predict(rows, raw_score=True), want)


def test_the_records_hold_every_node_and_leaf_once():
    ens = _deep_ensemble(4, n_trees=30)
    a = _alg(ens)._arrays
    rec, roots = a["gw_nodes"], a["gw_roots"]
    upper = (rec >> np.uint64(32)).astype(np.int64)
    inner = upper >= W.GW_INNER
    assert rec.shape[0] == int(ens.trees.node_offset[-1]) + int(ens.trees.leaf_offset[-1]) + 1
    assert int(inner[:-1].sum()) == int(ens.trees.node_offset[-1])
    np.testing.assert_array_equal(np.sort(rec[:-1][~inner[:-1]].view(np.float64)),
                                  np.sort(np.asarray(ens.trees.arrays["leaf_value"])))
    left = (rec & np.uint64(0xFFFFFFFF)).astype(np.int64)
    idx = np.arange(rec.shape[0])
    assert (left[:-1][inner[:-1]] > idx[:-1][inner[:-1]]).all()
    assert left[-1] == rec.shape[0] - 1 and (upper[-1] >> 12 & 0xFF) == 255
    # every record but the park is reached once: a root or one side of a node
    kids = np.concatenate([left[:-1][inner[:-1]], left[:-1][inner[:-1]] + 1, roots])
    np.testing.assert_array_equal(np.sort(kids), idx[:-1])


def test_the_cost_model_gives_the_walk_to_deep_trees_only():
    """LightGBM's 255-leaf trees get the walk's fields by default, its 15- and 63-leaf ones
    do not; True takes any model the walk can score, and one it cannot is refused by name."""
    lgb = pytest.importorskip("lightgbm", reason="the test extra installs lightgbm")
    rng = np.random.default_rng(5)
    X = rng.normal(size=(6000, 8))
    y = X[:, 0] + np.sin(3 * X[:, 1]) + rng.normal(size=6000)
    for leaves, pays in ((255, True), (63, False), (15, False)):
        params = dict(objective="regression", num_leaves=leaves, verbose=-1, num_threads=1,
                      seed=3, min_data_in_leaf=2, max_bin=63)
        ens = quickscorer.load(lgb.train(params, lgb.Dataset(X, y), 12)).ensemble
        starts = np.array([0, ens.n_trees])
        a = rapidscorer_arrays(ens, starts, walk=None)
        assert (W.walk_cost_ratio(ens, a["entries"].shape[0]) < W.GW_MAX_RATIO) == pays
        assert (a["gw_nodes"].shape[0] > 0) == pays
        assert rapidscorer_arrays(ens, starts, walk=True)["gw_nodes"].shape[0] > 0
        assert rapidscorer_arrays(ens, starts, walk=False)["gw_nodes"].shape[0] == 0
    xgb = random_ensemble(np.random.default_rng(6), "xgboost", max_leaves=200,
                          p_categorical=0.0)
    assert W.walk_refusal(xgb) == "float32 sums"
    assert rapidscorer_arrays(xgb, np.array([0, xgb.n_trees]), walk=True)["gw_nodes"].size == 0


def _refused(arrays, ens, change, message):
    bad = {k: v.copy() for k, v in arrays.items()}
    change(bad)
    with pytest.raises(ValueError, match=message):
        _rapidscorer.RSLayout(bad, ens.n_features)


def test_hostile_walk_fields_are_refused_by_name():
    """A record that loops back, a child or root on the park record, a column past the
    layout's and a park record that is not one: each refused before a kernel reads them."""
    ens = _deep_ensemble(7, n_trees=10)
    arrays = dict(_alg(ens)._arrays)
    rec = arrays["gw_nodes"]
    inner = np.flatnonzero((rec[:-1] >> np.uint64(32)) >= np.uint64(W.GW_INNER))
    node = int(inner[3])
    park = rec.shape[0] - 1

    def set_left(to):
        def change(a):
            a["gw_nodes"][node] = (a["gw_nodes"][node] & ~np.uint64(0xFFFFFFFF)) | np.uint64(to)
        return change

    out = "a record of the gathered walk is out of range"
    _refused(arrays, ens, set_left(node), out)                  # its own child: a loop
    _refused(arrays, ens, set_left(0), out)                     # back to the root
    _refused(arrays, ens, set_left(park - 1), out)              # its right child the park
    _refused(arrays, ens, lambda a: a["gw_roots"].__setitem__(2, park),
             "a root of the gathered walk")
    _refused(arrays, ens, lambda a: a["gw_roots"].__setitem__(0, -1),
             "a root of the gathered walk")
    _refused(arrays, ens, lambda a: a.__setitem__("gw_roots", a["gw_roots"][:-1]),
             "records do not fit the trees")

    def far_column(a):
        up = np.uint64((W.GW_INNER | 0xFFF) << 32)
        a["gw_nodes"][node] = (a["gw_nodes"][node] & np.uint64(0xFFFFFFFF)) | up
    _refused(arrays, ens, far_column, out)
    _refused(arrays, ens, lambda a: a["gw_nodes"].__setitem__(-1, a["gw_nodes"][0]),
             "last record is not its park record")
    _rapidscorer.RSLayout({k: v.copy() for k, v in arrays.items()}, ens.n_features)


def test_the_walk_travels_in_the_model_file_to_the_c_library(tmp_path):
    """A compiled file holds the walk's fields (the C index's version 3 names them); the
    model it opens and the C library score as the model it came from, and so does the C
    library from an index of version 2; a damaged record is refused by the C library, naming
    the layout."""
    lgb = pytest.importorskip("lightgbm", reason="the test extra installs lightgbm")
    rng = np.random.default_rng(8)
    X = rng.normal(size=(6000, 8))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 0]) + np.sin(3 * np.nan_to_num(X[:, 1])) + rng.normal(size=6000)
    params = dict(objective="regression", num_leaves=255, verbose=-1, num_threads=1, seed=3,
                  min_data_in_leaf=2, max_bin=63)
    booster = lgb.train(params, lgb.Dataset(X, y), 12)
    model = quickscorer.load(booster)
    X = np.vstack([X[:600], special_rows(rng, 100, 8)])
    want = model.predict(X, raw_score=True)
    np.testing.assert_array_equal(want, booster.predict(X, raw_score=True))
    assert model.plan.choose(700, 1) == "rapidscorer"
    data = model_file.to_bytes(model)
    meta, arrays = model_file.unpack(data)
    index = arrays[-1]
    assert int(index[1]) == model_file.C_INDEX_VERSION == 5
    w0 = model_file.C_INDEX_HEAD + len(model_file.C_INDEX_SLOTS)
    section = dict(zip(model_file.C_INDEX_RS_SLOTS, index[w0 + 5:]))
    assert arrays[int(section["gw_nodes"]) - 1].shape[0] > 0
    path = tmp_path / "deep.qsm"
    path.write_bytes(data)
    np.testing.assert_array_equal(quickscorer.load(path).predict(X, raw_score=True), want)
    with capi.CModel(data) as c:
        for n_threads in (1, 3):
            np.testing.assert_array_equal(c.predict(X, raw_score=True, n_threads=n_threads),
                                          np.asarray(want).reshape(-1, 1))
    # an index of version 2 (no gathered walk: its first 36 RapidScorer arrays) still opens,
    # and scores the same through the scans
    n2 = len(model_file.C_INDEX_RS_SLOTS) - 3
    older = [a.copy() for a in arrays]
    older[-1] = index[:w0 + 5 + n2].copy()
    older[-1][1] = 2
    older[-1][w0 + 4] = n2
    with capi.CModel(model_file.pack(meta, older)) as c:
        np.testing.assert_array_equal(c.predict(X, raw_score=True),
                                      np.asarray(want).reshape(-1, 1))
    hostile = [a.copy() for a in arrays]
    roots = hostile[int(section["gw_roots"]) - 1]
    roots[0] = hostile[int(section["gw_nodes"]) - 1].shape[0] - 1
    with pytest.raises(ModelFileError, match="a root of the gathered walk"):
        capi.CModel(model_file.pack(meta, hostile))
