"""RapidScorer's level-by-level path (rapidscorer.levels.level_arrays): trees of depth at most 10
walked a level at a time in rank space instead of scanned into bitvectors, and by itself
(rapidscorer.layout.levels_only_arrays) for trees of more than 256 leaves, which the scans cannot
take. It must give the reference's exit leaves and raw scores bit for bit on every path this
CPU runs, with NaN and zero as missing values on either default side, rank slots, multiclass
and DART weights, on models the libraries trained; and it must stand aside where it cannot
score a model."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import linear_tree, missing_rows, random_ensemble, run_kernel, special_rows
from hypothesis import given, settings
from hypothesis import strategies as st

import quickscorer
from quickscorer.algorithms import cpu, nodes
from quickscorer.algorithms.cpu import ISAS
from quickscorer.algorithms.rapidscorer import _rapidscorer
from quickscorer.algorithms.rapidscorer import layout as rs_layout
from quickscorer.algorithms.rapidscorer import ranks as rs_ranks
from quickscorer.algorithms.rapidscorer.levels import (
    LEVEL_TABLE_AT,
    LEVELS_ENDS,
    LEVELS_MAX_DEPTH,
    LEVELS_MIN_RATIO,
    LEVELS_NARROW_RATIO,
    LEVELS_SCANS_MAX_DEPTH,
    LV_NODE_DTYPE,
    level_arrays,
    levels_choice,
    no_level_fields,
)
from quickscorer.algorithms.rapidscorer.rapidscorer import RapidScorer
from quickscorer.ir import Ensemble, build_tree, reference

#: the paths by name (cpu.NAMES: the 256-bit one is "avx2" on x86-64, "neon" on AArch64)
VEC = cpu.isa_name(ISAS["avx2"])
RS_ISAS = [name for name, code in cpu.NAMES.items() if _rapidscorer.isa_available(code)]
if VEC in RS_ISAS:
    RS_ISAS.insert(RS_ISAS.index(VEC) + 1, f"{VEC}-32")
if "avx512" in RS_ISAS:
    # the AVX-512 walks the default does not take on this CPU: in 512-bit registers by byte
    # permutations (VBMI) or a node at a time, and in two 256-bit registers a column
    if _rapidscorer.lv_vbmi_available():
        RS_ISAS.append("avx512-nodes")
    if _rapidscorer.lv_halves_default():
        RS_ISAS.append("avx512-zmm")
    else:
        RS_ISAS.append("avx512-halves")

FINITE = (-1.0, 0.0, 0.5, 1e-36, 2.0, -0.0, 3.0)


def _alg(ens, isa, **kw):
    """The algorithm on path isa, its level path in every group where it can (levels=True)
    unless told otherwise."""
    kw.setdefault("levels", True)
    if isa == f"{VEC}-32":
        isa, kw = VEC, {**kw, "wide": False}
    if isa == "avx512-nodes":
        isa, kw = "avx512", {**kw, "vbmi": False, "halves": False}
    if isa == "avx512-zmm":
        isa, kw = "avx512", {**kw, "halves": False}
    if isa == "avx512-halves":
        isa, kw = "avx512", {**kw, "halves": True}
    return RapidScorer(ens, quickscorer.Model(ens).plan.forest, isa=isa, **kw)


#: the process's tuning table; a test that needs other switches passes a changed copy
T = quickscorer.current_tuning()


def _depth(ens) -> int:
    return max((t.depth() for t in ens.trees), default=0)


def _check_both(ens, X, isa, depth_decides=True):
    """The level path and the scans give the reference's leaves and scores (and, where
    ``depth_decides``, the level path is on exactly for trees of at most its depth)."""
    on = _alg(ens, isa)
    off = _alg(ens, isa, levels=False)
    if depth_decides:
        assert on.levels == (_depth(ens) <= LEVELS_SCANS_MAX_DEPTH)
    assert not off.levels
    want_leaves = reference.predict_leaf(ens, X)
    for alg in (on, off):
        raw, leaves = run_kernel(alg, ens, X)
        np.testing.assert_array_equal(leaves, want_leaves)
        np.testing.assert_array_equal(raw, reference.predict_raw(ens, X).astype(raw.dtype))
    return on


@pytest.mark.parametrize("isa", RS_ISAS)
@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), family=st.sampled_from(["lightgbm", "xgboost"]),
       n_rows=st.sampled_from([1, 20, 32, 33, 64, 100]), n_outputs=st.integers(1, 3),
       max_leaves=st.sampled_from([1, 2, 5, 9]))
def test_level_path_is_exact_on_random_trees(isa, seed, family, n_rows, n_outputs, max_leaves):
    rng = np.random.default_rng(seed)
    ens = random_ensemble(rng, family, n_trees=25, n_outputs=n_outputs, n_features=6,
                          max_leaves=max_leaves, p_categorical=0.0, thresholds=FINITE)
    X = special_rows(rng, n_rows, 6)
    _check_both(ens, X, isa)


@pytest.mark.parametrize("isa", RS_ISAS)
@pytest.mark.parametrize("missing", ["nan", "zero", "none"])
def test_level_path_on_lightgbm_missing_types(isa, missing):
    """LightGBM's three missing types, each default side, on rows of NaN and zeros."""
    lgb = pytest.importorskip("lightgbm", reason="the test extra installs lightgbm")
    rng = np.random.default_rng(7)
    X, y = missing_rows(rng, 3000)
    params = dict(objective="regression", num_leaves=40, max_depth=7, verbose=-1,
                  num_threads=1, seed=3, use_missing=missing != "none",
                  zero_as_missing=missing == "zero", min_data_in_leaf=5)
    booster = lgb.train(params, lgb.Dataset(X, y), num_boost_round=30)
    model = quickscorer.load(booster)
    ens = model.ensemble
    assert _depth(ens) <= LEVELS_SCANS_MAX_DEPTH
    rows = np.vstack([X[:150], special_rows(rng, 90, 8)])
    alg = _check_both(ens, rows, isa)
    assert alg.levels
    raw, _ = run_kernel(alg, ens, rows)
    np.testing.assert_array_equal(raw[:, 0], booster.predict(rows, raw_score=True))


@pytest.mark.parametrize("isa", RS_ISAS)
def test_level_path_on_xgboost_depthwise_trees_with_nan(isa):
    """XGBoost's depth-wise trees, as deep as the path takes, NaN to both default sides."""
    xgb = pytest.importorskip("xgboost", reason="the test extra installs xgboost-cpu")
    rng = np.random.default_rng(8)
    X = rng.normal(size=(3000, 6)).astype(np.float32)
    X[rng.random(X.shape) < 0.2] = np.nan
    y = np.nan_to_num(X[:, 0]) * 2 + np.isnan(X[:, 1]) - np.nan_to_num(X[:, 2]) ** 2
    booster = xgb.train(dict(max_depth=8, nthread=1, seed=1, base_score=0.3),
                        xgb.DMatrix(X, label=y, missing=np.nan), 25)
    model = quickscorer.load(booster)
    ens = model.ensemble
    rows = np.vstack([X[:200], special_rows(rng, 60, 6).astype(np.float32)]).astype(np.float64)
    alg = _check_both(ens, rows, isa)
    assert alg.levels
    raw, _ = run_kernel(alg, ens, rows)
    dm = xgb.DMatrix(rows[:200], missing=np.nan)      # (XGBoost refuses infinite values)
    np.testing.assert_array_equal(raw[:200, 0], booster.predict(dm, output_margin=True))


@pytest.mark.parametrize("isa", RS_ISAS)
def test_level_path_on_rank_slots_and_multiclass(isa):
    """A feature of more than 255 thresholds (ranked in slots) and three classes."""
    lgb = pytest.importorskip("lightgbm", reason="the test extra installs lightgbm")
    rng = np.random.default_rng(9)
    X = rng.normal(size=(6000, 3))
    y = np.digitize(X[:, 0] + 0.2 * rng.normal(size=6000), [-0.4, 0.4])
    booster = lgb.train(dict(objective="multiclass", num_class=3, num_leaves=31, max_depth=8,
                             max_bin=1023, verbose=-1, num_threads=1, seed=4,
                             min_data_in_leaf=2), lgb.Dataset(X, y), num_boost_round=40)
    ens = quickscorer.load(booster).ensemble
    alg = _alg(ens, isa)
    assert alg.levels and alg.layout.n_slots > ens.n_features      # several slots
    rows = np.vstack([X[:300], special_rows(rng, 50, 3)])
    _check_both(ens, rows, isa)


def test_trees_deeper_than_the_path_take_the_scans():
    rng = np.random.default_rng(10)
    ens = random_ensemble(rng, "lightgbm", n_trees=40, max_leaves=60, p_categorical=0.0,
                          thresholds=FINITE)
    assert _depth(ens) > LEVELS_MAX_DEPTH
    alg = _alg(ens, "scalar")
    assert not alg.levels
    with pytest.raises(ValueError, match="deeper than"):
        a = alg._arrays
        level_arrays(ens, a["slot_column"], np.zeros(1, np.int64), np.zeros(0))


def test_categorical_splits_take_the_scans_and_infinite_thresholds_either():
    rng = np.random.default_rng(11)
    cat = random_ensemble(rng, "lightgbm", n_trees=10, max_leaves=5, p_categorical=0.5,
                          thresholds=FINITE)
    assert not _alg(cat, "scalar").levels
    with pytest.raises(ValueError, match="categorical splits"):
        level_arrays(cat, np.arange(5, dtype=np.int32), np.zeros(6, np.int64), np.zeros(0))
    _check_both(cat, special_rows(rng, 40, 5), "scalar", depth_decides=False)
    for family in ("lightgbm", "xgboost"):
        inf = random_ensemble(rng, family, n_trees=10, max_leaves=5, p_categorical=0.0,
                              thresholds=(np.inf, -np.inf, 1.0, 0.0))
        for isa in RS_ISAS:     # on where the rank tables hold the thresholds, else off
            _check_both(inf, special_rows(rng, 70, 5), isa, depth_decides=False)


def test_the_tuning_table_turns_the_level_path_on_and_off():
    rng = np.random.default_rng(12)
    ens = random_ensemble(rng, "xgboost", n_trees=10, max_leaves=4, p_categorical=0.0,
                          thresholds=FINITE)
    assert _alg(ens, "scalar").levels
    assert _alg(ens, "scalar", levels=None, tuning=T.replace(rs_levels=True)).levels
    off = quickscorer.Tuning.from_env({"QUICKSCORER_RS_LEVELS": "0"})
    assert not _alg(ens, "scalar", levels=None, tuning=off).levels
    assert _alg(ens, "scalar", tuning=off).levels                # the argument wins


def test_vbmi_walk_follows_the_cpu_and_the_tuning_table():
    import pickle
    rng = np.random.default_rng(15)
    ens = random_ensemble(rng, "xgboost", n_trees=6, max_leaves=9, p_categorical=0.0,
                          thresholds=FINITE)
    assert _alg(ens, "scalar").layout.levels_vbmi == _rapidscorer.lv_vbmi_available()
    assert not _alg(ens, "scalar", vbmi=False).layout.levels_vbmi
    alg = _alg(ens, "scalar", tuning=T.replace(rs_vbmi=False))
    assert not alg.vbmi and not alg.layout.levels_vbmi
    assert not pickle.loads(pickle.dumps(alg.layout)).levels_vbmi
    if "avx512" in RS_ISAS:       # Model.info says which walk AVX-512 calls take
        vbmi = _rapidscorer.lv_vbmi_available()
        assert ("byte permutations" in _alg(ens, "avx512", halves=False).groups) == vbmi
        assert "a node at a time" in _alg(ens, "avx512", vbmi=False, halves=False).groups


def test_halves_walk_follows_the_cpu_and_the_tuning_table():
    """On AVX-512 the level walk runs in two 256-bit registers a column (on every AVX-512 CPU
    measured, levels.h rs_lv_halves_default), unless told; a pickled layout decides again
    where it is loaded, unless it was told."""
    import pickle
    rng = np.random.default_rng(16)
    ens = random_ensemble(rng, "xgboost", n_trees=6, max_leaves=9, p_categorical=0.0,
                          thresholds=FINITE)
    default = _rapidscorer.lv_halves_default()
    alg = _alg(ens, "scalar")
    assert alg.layout.levels_halves == default
    assert pickle.loads(pickle.dumps(alg.layout)).levels_halves == default
    for told in (False, True):
        layout = _alg(ens, "scalar", halves=told).layout
        assert layout.levels_halves == told
        assert pickle.loads(pickle.dumps(layout)).levels_halves == told
    assert _alg(ens, "scalar", tuning=T.replace(rs_halves=True)).layout.levels_halves
    assert not _alg(ens, "scalar", tuning=T.replace(rs_halves=False)).layout.levels_halves
    if "avx512" in RS_ISAS:       # Model.info says which walk AVX-512 calls take
        assert "two 256-bit registers" in _alg(ens, "avx512", halves=True).groups
        assert "two 256-bit registers" not in _alg(ens, "avx512", halves=False).groups


def test_damaged_level_fields_are_refused():
    rng = np.random.default_rng(13)
    ens = random_ensemble(rng, "lightgbm", n_trees=6, max_leaves=6, p_categorical=0.0,
                          thresholds=FINITE)
    a = dict(_alg(ens, "scalar")._arrays)
    nodes = a["lv_nodes"].copy()
    nodes[0] = (nodes[0] & ~np.uint32(0xFFFF)) | np.uint32(60000)     # a column past the end
    with pytest.raises(ValueError, match="level node is out of range"):
        _rapidscorer.RSLayout(dict(a, lv_nodes=nodes), ens.n_features)
    depth = a["lv_depth"].copy()
    depth[0] = 9
    with pytest.raises(ValueError, match="level"):
        _rapidscorer.RSLayout(dict(a, lv_depth=depth), ens.n_features)
    ends = a["lv_level_end"].copy()
    ends[:] = 0
    with pytest.raises(ValueError, match="level"):
        _rapidscorer.RSLayout(dict(a, lv_level_end=ends), ens.n_features)
    toff = a["lv_table_offset"].copy()
    toff[1:] += 16                                       # the first tree given one more table
    for bad in (dict(a, lv_table=a["lv_table"][:-1]), dict(a, lv_table_offset=toff),
                dict(a, lv_table_offset=toff[:-1])):
        with pytest.raises(ValueError, match="level tables do not fit"):
            _rapidscorer.RSLayout(bad, ens.n_features)


def test_level_tables_hold_each_nodes_threshold_at_its_position():
    """A level walked node by node has a table of max(16, 2^l) bytes by position: each node's
    threshold index biased by 0x80 at its position, 0x7F (no biased rank exceeds it)
    elsewhere; levels 0 to 7 (every level node by node, as far as positions are bytes)."""
    wide = T.replace(rs_lane_nodes=10**6)
    rng = np.random.default_rng(14)
    for family in ("lightgbm", "xgboost"):
        ens = _deep_ensemble(rng, family, big=False, deepest=8)
        a = _alg(ens, "scalar", tuning=wide)._arrays
        assert a["lv_split"].max() == 8
        nodes = a["lv_nodes"].view(LV_NODE_DTYPE)
        ends = a["lv_level_end"].reshape(-1, LEVELS_ENDS).astype(np.int64)
        assert (np.diff(a["lv_table_offset"]) == LEVEL_TABLE_AT[a["lv_split"]]).all()
        for t in range(ens.n_trees):
            want = np.full(int(LEVEL_TABLE_AT[a["lv_split"][t]]), 0x7F, np.uint8)
            first = int(a["lv_node_offset"][t])
            for lv in range(int(a["lv_split"][t])):
                lo = first + (int(ends[t, lv - 1]) if lv else 0)
                for nd in nodes[lo:first + int(ends[t, lv])]:
                    want[LEVEL_TABLE_AT[lv] + nd["pos"]] = nd["thr"] ^ 0x80
            t0, t1 = a["lv_table_offset"][t:t + 2]
            np.testing.assert_array_equal(a["lv_table"][t0:t1], want)
        assert (a["lv_table"] != 0x7F).sum() == nodes.shape[0] - (nodes["thr"] == 0xFF).sum()


def test_automatic_choice_follows_nodes_per_level():

    def fields(nodes, depths):
        return {"lv_depth": np.asarray(depths, np.uint8),
                "lv_node_offset": np.array([0, nodes], np.int64),
                "lv_deep": np.zeros(0, np.uint32)}

    assert levels_choice(no_level_fields(), None) == 0
    assert levels_choice(no_level_fields(), True) == 0
    below = fields(int(LEVELS_MIN_RATIO * 8) - 1, [8])
    middle = fields(int(LEVELS_MIN_RATIO * 8), [8])
    high = fields(int(LEVELS_NARROW_RATIO * 8), [8])
    assert [levels_choice(f, None) for f in (below, middle, high)] == [0, 64, 32]
    assert [levels_choice(f, True) for f in (below, middle, high)] == [32, 32, 32]
    assert [levels_choice(f, False) for f in (below, middle, high)] == [0, 0, 0]


def test_level_layout_pickles_with_its_lane_floor():
    import pickle
    rng = np.random.default_rng(14)
    ens = random_ensemble(rng, "xgboost", n_trees=8, max_leaves=6, p_categorical=0.0,
                          thresholds=FINITE)
    alg = _alg(ens, "scalar")
    again = pickle.loads(pickle.dumps(alg.layout))
    assert again.levels and again.levels_min_lanes == alg.layout.levels_min_lanes == 32
    X = special_rows(rng, 40, 5)
    alg.layout = again
    raw, leaves = run_kernel(alg, ens, X)
    np.testing.assert_array_equal(leaves, reference.predict_leaf(ens, X))


@pytest.mark.parametrize("isa", RS_ISAS)
def test_level_path_with_dart_weights(isa):
    """XGBoost DART: each tree's leaf value times its weight, float32, in tree order."""
    rng = np.random.default_rng(15)
    ens = random_ensemble(rng, "xgboost", n_trees=30, max_leaves=9, p_categorical=0.0,
                          thresholds=FINITE)
    dart = Ensemble(trees=ens.trees, tree_group=ens.tree_group, n_outputs=1,
                    n_features=ens.n_features, family="xgboost", base_score=ens.base_score,
                    tree_weight=rng.uniform(0.1, 1.0, size=ens.n_trees))
    assert _check_both(dart, special_rows(rng, 100, 5), isa).levels


def test_level_values_kept_in_the_precision_the_model_sums():
    """float64 slot values for a LightGBM model, float32 only for an XGBoost one; a layout
    without the values its forest sums is refused when scoring, not read."""
    rng = np.random.default_rng(16)
    for family, have, lack in (("lightgbm", "lv_value", "lv_value_f32"),
                               ("xgboost", "lv_value_f32", "lv_value")):
        ens = random_ensemble(rng, family, n_trees=6, max_leaves=6, p_categorical=0.0,
                              thresholds=FINITE)
        alg = _alg(ens, "scalar")
        a = alg._arrays
        assert a[have].shape[0] == a["lv_slot_leaf"].shape[0] and a[lack].shape[0] == 0
        alg.layout = _rapidscorer.RSLayout(
            dict(a, **{have: np.zeros(0, a[have].dtype),
                       lack: np.zeros(a["lv_slot_leaf"].shape[0], a[lack].dtype)}),
            ens.n_features)
        with pytest.raises(ValueError, match="level path has no"):
            run_kernel(alg, ens, special_rows(rng, 10, 5))


# ---- trees deeper than 8 levels, and of more than 256 leaves (the level path alone) -------

def _bounded_tree(rng, n_leaves: int, depth: int, n_features: int, family: str,
                  thresholds=FINITE + (np.inf, -np.inf)):
    """A random tree of ``n_leaves`` leaves (at most ``2 ** depth``) no deeper than
    ``depth``, grown by splitting random leaves above that depth."""
    left, right, leaves, level = [-1], [-1], [0], [0]
    while len(leaves) < n_leaves:
        open_ = [k for k, n in enumerate(leaves) if level[n] < depth]
        leaf = leaves.pop(open_[int(rng.integers(len(open_)))])
        a = len(left)
        left[leaf], right[leaf] = a, a + 1
        left += [-1, -1]
        right += [-1, -1]
        level += [level[leaf] + 1] * 2
        leaves += [a, a + 1]
    k = len(left)
    missing = (rng.integers(3, size=k) if family == "lightgbm" else np.full(k, 2))
    return build_tree(left=left, right=right, root=0, feature=rng.integers(n_features, size=k),
                      threshold=rng.choice(np.asarray(thresholds, np.float64), size=k),
                      default_left=rng.random(k) < 0.5, missing_type=missing,
                      is_categorical=[False] * k, categories=None,
                      value=np.round(rng.normal(size=k), 3), n_features=n_features)


def _deep_ensemble(rng, family: str, n_outputs: int = 1, n_features: int = 5,
                   big: bool = True, weights: bool = False, deepest: int = 10) -> Ensemble:
    """Trees ``deepest`` and ``deepest - 1`` deep (of more than 256 leaves where ``big``, else
    at most 256), shallow ones and a single leaf, in a shuffled order."""
    d, e = deepest, deepest - 1
    sizes = ([(1024, d), (600, d), (300, e), (512, e)] if big
             else [(256, d), (100, d), (200, e), (40, e)])
    sizes += [(40, min(8, d)), (9, 4), (1, 0), (130, d)]
    trees = [_bounded_tree(rng, min(n, 2 ** d), d, n_features, family) for n, d in sizes]
    order = rng.permutation(len(trees))
    trees = [trees[i] for i in order]
    return Ensemble(trees=trees, tree_group=np.arange(len(trees)) % n_outputs,
                    n_outputs=n_outputs, n_features=n_features, family=family,
                    base_score=np.round(rng.normal(size=n_outputs), 2),
                    tree_weight=(rng.uniform(0.1, 1.0, size=len(trees)) if weights
                                 else None))


def _check_exact(alg, ens, X):
    raw, leaves = run_kernel(alg, ens, X)
    np.testing.assert_array_equal(leaves, reference.predict_leaf(ens, X))
    np.testing.assert_array_equal(raw, reference.predict_raw(ens, X).astype(raw.dtype))


@pytest.mark.parametrize("isa", RS_ISAS)
def test_a_group_its_rows_fill_in_part_walks_and_adds_their_lanes_alone(isa):
    """A group of fewer rows than lanes walks its deep levels lane by lane and adds its leaf
    values only for the lanes its rows fill (rounded up to 8, or 4 for float64 sums): every
    row count from 1 to 65 exact, float64 sums, float32 sums and DART weights."""
    rng = np.random.default_rng(31)
    for family, weights in (("lightgbm", False), ("xgboost", False), ("xgboost", True)):
        ens = _deep_ensemble(rng, family, big=False, weights=weights, deepest=8)
        alg = _alg(ens, isa)
        assert alg.levels and np.any(alg._arrays["lv_split"] < alg._arrays["lv_depth"])
        X = special_rows(rng, 65, 5)
        for n in range(1, 66):
            _check_exact(alg, ens, X[:n])


@pytest.mark.parametrize("isa", RS_ISAS)
@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), family=st.sampled_from(["lightgbm", "xgboost"]),
       n_rows=st.sampled_from([1, 20, 33, 64, 100]), n_outputs=st.integers(1, 3),
       weights=st.booleans())
def test_trees_of_more_than_256_leaves_walk_the_levels_alone(isa, seed, family, n_rows,
                                                             n_outputs, weights):
    """Trees of up to 1,024 leaves and 10 levels, beside shallow ones: no scans, every
    group walks the levels; exact, with NaN, zeros, infinities and DART weights."""
    rng = np.random.default_rng(seed)
    ens = _deep_ensemble(rng, family, n_outputs, weights=weights and family == "xgboost")
    assert int(ens.n_leaves.max()) > 256 and _depth(ens) == 10
    alg = _alg(ens, isa, levels=None)
    assert alg.levels and alg.levels_only and alg.layout.levels_min_lanes == 0
    assert alg._arrays["entries"].shape[0] == 0 and alg.tree_blocks == 1
    _check_exact(alg, ens, special_rows(rng, n_rows, 5))


@pytest.mark.parametrize("isa", RS_ISAS)
def test_trees_of_9_and_10_levels_in_the_scans_layout(isa):
    """Trees 9 and 10 deep of at most 256 leaves: the scans take them, the level path does
    not beside them (LEVELS_SCANS_MAX_DEPTH), even asked; trees 8 deep with levels of more
    than LEVELS_LANE_NODES nodes walk them both ways. All exact."""
    rng = np.random.default_rng(21)
    for family in ("lightgbm", "xgboost"):
        ens = _deep_ensemble(rng, family, n_outputs=2, big=False)
        on = _check_both(ens, special_rows(rng, 100, 5), isa)
        assert not on.levels and not on.levels_only
        eight = _deep_ensemble(rng, family, n_outputs=2, big=False, deepest=8)
        on = _check_both(eight, special_rows(rng, 100, 5), isa)
        assert on.levels and not on.levels_only
        assert (on._arrays["lv_split"] < on._arrays["lv_depth"]).any()


def test_deep_levels_lane_by_lane_in_complete_records():
    """A tree's levels from its split (its first level of more than ``lane_nodes`` nodes,
    at most 8) are held complete, level ``l``'s position ``p`` at ``2^l - 2^split + p``
    (threshold index 255 where no node is); the slots are the end positions: a full tree of
    depth 10 splits at level 7 (128 nodes), a chain of 10 nodes at level 8."""
    rng = np.random.default_rng(22)
    full = _bounded_tree(rng, 1024, 10, 3, "lightgbm")
    ens = Ensemble(trees=[full, _chain(10)], tree_group=[0, 0], n_outputs=1, n_features=5,
                   family="lightgbm", base_score=[0.0])
    a = _alg(ens, "scalar")._arrays
    assert a["lv_depth"].tolist() == [10, 10] and a["lv_split"].tolist() == [7, 8]
    assert np.diff(a["lv_node_offset"]).tolist() == [127, 8]          # levels above
    assert np.diff(a["lv_deep_offset"]).tolist() == [1024 - 128, 1024 - 256]
    thr = a["lv_deep"].view(LV_NODE_DTYPE)["thr"]
    deep0 = thr[:1024 - 128]
    assert (deep0 != rs_ranks.SENTINEL_THR).all()       # every position of a full tree
    deep1 = thr[1024 - 128:]                             # the chain: one node a level
    assert (deep1 != rs_ranks.SENTINEL_THR).sum() == 2
    _, _, leaf_level, leaf_pos = nodes.node_levels(ens, 10)
    lo = np.asarray(ens.trees.leaf_offset)
    end = leaf_pos[: lo[1]] << (10 - leaf_level[: lo[1]])
    np.testing.assert_array_equal(a["lv_slot_leaf"][end], np.arange(1024))
    _check_exact(_alg(ens, "scalar"), ens, special_rows(rng, 70, 5))


@pytest.mark.parametrize("isa", RS_ISAS)
@pytest.mark.parametrize("lane_nodes", [0, 3, 64, 10**6])
def test_every_split_of_the_levels_is_exact(isa, lane_nodes):
    """From every level lane by lane (0) to levels 8 and 9 alone (10**6), on trees the
    scans take and on trees of more than 256 leaves."""
    t = T.replace(rs_lane_nodes=lane_nodes)
    rng = np.random.default_rng(26)
    for family in ("lightgbm", "xgboost"):
        for big in (False, True):
            ens = _deep_ensemble(rng, family, n_outputs=2 if big else 1, big=big,
                                 deepest=10 if big else 8)
            alg = _alg(ens, isa, tuning=t)
            assert alg.levels and alg.lane_nodes == lane_nodes
            split, depth = alg._arrays["lv_split"], alg._arrays["lv_depth"]
            if lane_nodes == 0:
                assert (split == 0).all()
            if lane_nodes == 10**6:
                np.testing.assert_array_equal(split, np.minimum(depth, 8))
            _check_exact(alg, ens, special_rows(rng, 100, 5))


def test_what_the_level_path_alone_refuses():
    """A tree 11 deep, categorical splits or linear trees among trees of more than 256
    leaves: rapidscorer says why it cannot score the model; levels=False cannot be."""
    rng = np.random.default_rng(23)
    deep = _deep_ensemble(rng, "lightgbm")
    with pytest.raises(ValueError, match="level by level only"):
        _alg(deep, "scalar", levels=False)
    assert RapidScorer.unsupported(deep) is None
    eleven = Ensemble(trees=list(deep.trees) + [_chain(11)],
                      tree_group=[0] * (deep.n_trees + 1), n_outputs=1, n_features=5,
                      family="lightgbm", base_score=[0.0])
    assert "deeper than 10" in RapidScorer.unsupported(eleven)
    cat = random_ensemble(rng, "lightgbm", n_trees=3, max_leaves=5, p_categorical=1.0)
    with_cat = Ensemble(trees=list(deep.trees) + list(cat.trees),
                        tree_group=[0] * (deep.n_trees + 3), n_outputs=1, n_features=5,
                        family="lightgbm", base_score=[0.0])
    assert "categorical splits" in RapidScorer.unsupported(with_cat)
    with_linear = Ensemble(trees=list(deep.trees) + [linear_tree(5)],
                           tree_group=[0] * (deep.n_trees + 1), n_outputs=1, n_features=5,
                           family="lightgbm", base_score=[0.0])
    assert "linear trees" in RapidScorer.unsupported(with_linear)
    for ens in (eleven, with_cat, with_linear):
        with pytest.raises(ValueError):
            rs_layout.levels_only_arrays(ens)


def _chain(n: int):
    """A tree of ``n`` nodes, each the right child of the one before (``n`` deep)."""
    left, right = [-1] * (2 * n + 1), [-1] * (2 * n + 1)
    for i in range(n):
        left[i], right[i] = n + i, (i + 1 if i + 1 < n else 2 * n)
    k = 2 * n + 1
    return build_tree(left=left, right=right, root=0, feature=[i % 5 for i in range(k)],
                      threshold=[float(i) for i in range(k)], default_left=[True] * k,
                      missing_type=[0] * k, is_categorical=[False] * k, categories=None,
                      value=[float(i) for i in range(k)], n_features=5)


def test_a_layout_of_the_level_path_alone_is_checked():
    """Scan fields in a layout of the level path alone, a split past 8, deep records that
    do not fit, or no level fields, are refused."""
    rng = np.random.default_rng(24)
    ens = _deep_ensemble(rng, "xgboost")
    a = dict(_alg(ens, "scalar")._arrays)
    assert int(a["lv_only"][0]) == 1
    for bad in (dict(a, entries=np.ones(4, np.uint32)),
                dict(a, tree_byte_offsets=np.arange(ens.n_trees + 1, dtype=np.int64)),
                dict(a, leaf_order=np.zeros(int(a["leaf_offset"][-1]), np.uint8))):
        with pytest.raises(ValueError, match="level path alone holds scan fields"):
            _rapidscorer.RSLayout(bad, ens.n_features)
    split = a["lv_split"].copy()
    split[int(np.argmax(a["lv_depth"]))] = 9                   # past a byte of position
    deep = a["lv_deep"].copy()
    deep[0] = (deep[0] & ~np.uint32(0xFFFF)) | np.uint32(60000)      # a column past the end
    for bad, message in ((dict(a, lv_split=split), "level fields do not fit"),
                         (dict(a, lv_deep=deep), "deep level records"),
                         (dict(a, lv_deep=deep[:-1]), "deep level records")):
        with pytest.raises(ValueError, match=message):
            _rapidscorer.RSLayout(bad, ens.n_features)
    with pytest.raises(ValueError, match="no level fields"):
        _rapidscorer.RSLayout(dict(a, **no_level_fields()), ens.n_features)
    with pytest.raises(ValueError, match="32 bytes"):     # the scans
        _rapidscorer.RSLayout(dict(a, lv_only=np.zeros(1, np.uint8)), ens.n_features)


def test_deep_models_trained_by_xgboost_and_lightgbm_score_as_the_libraries_do():
    """XGBoost depth 10 with NaN, LightGBM 600 leaves 10 deep with zero as missing: trees of
    more than 256 leaves, scored by the level path alone as the libraries score them."""
    xgb = pytest.importorskip("xgboost", reason="the test extra installs xgboost-cpu")
    lgb = pytest.importorskip("lightgbm", reason="the test extra installs lightgbm")
    rng = np.random.default_rng(25)
    X = rng.normal(size=(6000, 6)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    y = (np.nan_to_num(X[:, 0]) * 2 + np.sin(3 * np.nan_to_num(X[:, 1]))
         + np.isnan(X[:, 2]) + rng.normal(size=6000))
    booster = xgb.train(dict(max_depth=10, nthread=1, seed=1, min_child_weight=0, eta=0.3,
                             base_score=0.3), xgb.DMatrix(X, label=y, missing=np.nan), 8)
    xm = quickscorer.load(booster)
    Xz = X.astype(np.float64)
    Xz[:, 3][np.abs(Xz[:, 3]) < 0.3] = 0.0
    lb = lgb.train(dict(objective="regression", num_leaves=600, max_depth=10, verbose=-1,
                        num_threads=1, seed=3, zero_as_missing=True, min_data_in_leaf=2),
                   lgb.Dataset(Xz, y), num_boost_round=6)
    lm = quickscorer.load(lb)
    for model, rows, want in (
            (xm, X[:500].astype(np.float64),
             booster.predict(xgb.DMatrix(X[:500], missing=np.nan), output_margin=True)),
            (lm, Xz[:500], lb.predict(Xz[:500], raw_score=True))):
        ens = model.ensemble
        assert int(ens.n_leaves.max()) > 256, "the test wants trees the scans cannot take"
        assert RapidScorer.unsupported(ens) is None
        for isa in RS_ISAS:
            alg = _alg(ens, isa, levels=None)
            assert alg.levels_only
            raw, _ = run_kernel(alg, ens, rows)
            np.testing.assert_array_equal(raw[:, 0], want.astype(raw.dtype))
            _check_exact(alg, ens, np.vstack([rows[:100], special_rows(rng, 60, 6)]))
        got = np.asarray(model.predict_raw(rows, algorithm="rapidscorer")).reshape(-1)
        np.testing.assert_array_equal(got, want.astype(got.dtype))


@pytest.mark.parametrize("isa", RS_ISAS)
def test_chunks_of_groups_through_blocks_of_trees_are_exact(isa):
    """Calls of several groups a thread walk chunks of groups through blocks of trees (one
    output, sums in registers): the same scores as a group at a time through all the trees,
    whatever the chunk, the blocks, the threads and a last group of few rows."""
    rng = np.random.default_rng(27)
    for family, big in (("xgboost", True), ("lightgbm", False)):
        ens = _deep_ensemble(rng, family, big=big, weights=family == "xgboost",
                             deepest=10 if big else 8)
        X = special_rows(rng, 300, 5)            # 4 or 5 groups and a part of one
        want = reference.predict_raw(ens, X)
        for chunk, block in ((1, None), (3, 4096), (12, 1), (2, 50_000)):
            alg = _alg(ens, isa, tuning=T.replace(rs_lv_chunk=chunk, rs_lv_block_bytes=block))
            assert alg.levels and alg.layout.levels_chunk == chunk
            if block == 1:                        # a block a tree
                assert alg._arrays["lv_block_starts"].tolist() == list(range(ens.n_trees + 1))
            for n_threads in (1, 2, 3):      # 3: chunks evened out over the threads
                raw, _ = run_kernel(alg, ens, X, n_threads=n_threads)
                np.testing.assert_array_equal(raw, want.astype(raw.dtype))


def test_level_chunks_default_to_a_size_in_bytes():
    """Without ``Tuning.rs_lv_chunk`` a chunk is LEVEL_CHUNK groups, fewer where their
    columns would pass ``Tuning.rs_lv_chunk_bytes``; the scores stay exact whatever it comes
    to."""
    from quickscorer.algorithms.rapidscorer import rapidscorer as rs_mod
    t = T.replace(rs_lv_chunk=None, rs_lv_block_bytes=4096)
    rng = np.random.default_rng(29)
    ens = _deep_ensemble(rng, "xgboost", big=True, deepest=10)
    X = special_rows(rng, 700, 5)                # 11 groups of 64 on the wide paths
    want = reference.predict_raw(ens, X)
    isa = VEC if VEC in RS_ISAS else "scalar"
    a = _alg(ens, isa, tuning=t)._arrays
    group = _rapidscorer.chunk_group_bytes(64, a["slot_column"].shape[0]
                                           + a["lv_combos"].shape[0], a["slot_column"].shape[0])
    assert group >= 64 * (a["slot_column"].shape[0] + a["lv_combos"].shape[0])
    for cap, chunk in ((t.rs_lv_chunk_bytes,
                        min(rs_mod.LEVEL_CHUNK, t.rs_lv_chunk_bytes // group)),
                       (3 * group + 1, 3), (1, 1)):          # never below one group
        alg = _alg(ens, isa, tuning=t.replace(rs_lv_chunk_bytes=cap))
        assert alg.layout.levels_chunk == chunk
        for n_threads in (1, 2):
            raw, _ = run_kernel(alg, ens, X, n_threads=n_threads)
            np.testing.assert_array_equal(raw, want.astype(raw.dtype))


def test_level_blocks_that_do_not_cover_the_trees_are_refused():
    rng = np.random.default_rng(28)
    ens = _deep_ensemble(rng, "xgboost")
    a = dict(_alg(ens, "scalar")._arrays)
    for bad in (np.array([0], np.int64), np.array([0, ens.n_trees - 1], np.int64),
                np.array([0, 5, 3, ens.n_trees], np.int64)):
        with pytest.raises(ValueError, match="level blocks do not cover"):
            _rapidscorer.RSLayout(dict(a, lv_block_starts=bad), ens.n_features)
    with pytest.raises(ValueError, match="levels_chunk"):
        _rapidscorer.RSLayout(a, ens.n_features, levels_chunk=0)
