"""SHAP contributions (Model.contributions): exact Shapley values by enumeration on random
models (``reference.shap_values``), both methods; threads; what is refused. The libraries'
own contributions are the oracle in test_contributions_libraries.py."""
from __future__ import annotations

import platform

import numpy as np
import pytest
from conftest import random_ensemble, special_rows
from hypothesis import given, settings
from hypothesis import strategies as st

from quickscorer import Model, current_tuning
from quickscorer.errors import InputError, ModelFormatError
from quickscorer.importers.lightgbm import load_lightgbm
from quickscorer.ir import Ensemble, reference

#: the libraries' x86-64 wheels round as our recursion does; their aarch64 wheels fuse some
#: of its products and sums (docs/contributions.md)
BIT_EXACT = platform.machine().lower() in ("x86_64", "amd64")


def _assert_close_to(got, want, rtol, what):
    """got within rtol of want, relative to the largest contribution of the row."""
    scale = np.abs(want).reshape(want.shape[0], -1).max(axis=1)
    scale = scale.reshape((-1,) + (1,) * (want.ndim - 1)) + 1e-30
    err = np.abs(got.astype(np.float64) - want.astype(np.float64)) / scale
    assert err.max() <= rtol, f"{what}: {err.max():.3g} of the row's largest contribution"


def _sums_to_raw(model, contrib, X, rtol):
    e = model.ensemble
    raw = model.predict_raw(X).astype(np.float64)
    c = contrib.astype(np.float64)
    if e.family == "lightgbm":
        c = c.reshape(c.shape[0], e.n_outputs, e.n_features + 1)
    elif e.n_outputs == 1:
        c = c[:, None, :]
    total = c.sum(axis=2)
    np.testing.assert_allclose(total, raw, rtol=rtol, atol=rtol * np.abs(raw).max())


# -- exact Shapley values on random models ----------------------------------------------------
def _with_covers(rng, ens: Ensemble) -> Ensemble:
    """ens with random covers, each node's the sum of its children's, a leaf in five empty
    (CatBoost's empty leaves: left out)."""
    trees = []
    for tree in ens.trees:
        leaf_cover = rng.integers(1, 50, size=tree.n_leaves).astype(np.float64)
        leaf_cover[rng.random(tree.n_leaves) < 0.2] = 0.0
        leaf_cover[rng.integers(tree.n_leaves)] = 7.0       # the root's cover positive
        node_cover = np.zeros(tree.n_internal)
        lo, mid, hi = tree.leaf_ranges() if tree.n_internal else ((), (), ())
        for k in range(tree.n_internal):
            node_cover[k] = leaf_cover[lo[k]:hi[k]].sum()
        trees.append(type(tree)(**{**{f: getattr(tree, f) for f in tree.__dataclass_fields__},
                                   "node_cover": node_cover, "leaf_cover": leaf_cover}))
    return Ensemble(trees=tuple(trees), tree_group=ens.tree_group, n_outputs=ens.n_outputs,
                    n_features=ens.n_features, family=ens.family, base_score=ens.base_score,
                    tree_weight=ens.tree_weight)


def _random_case(seed, family, n_outputs, max_leaves, dart, n_trees, n_rows):
    """A random model of five features with covers (DART weights where asked, on XGBoost),
    and rows of special values."""
    rng = np.random.default_rng(seed)
    ens = random_ensemble(rng, family, n_trees=n_trees, n_outputs=n_outputs, n_features=5,
                          max_leaves=max_leaves, thresholds=np.round(rng.normal(size=6), 1))
    ens = _with_covers(rng, ens)
    if dart and family == "xgboost":
        ens = Ensemble(trees=ens.trees, tree_group=ens.tree_group, n_outputs=ens.n_outputs,
                       n_features=5, family=family, base_score=ens.base_score,
                       tree_weight=rng.uniform(0.2, 1.0, ens.n_trees))
    return ens, Model(ens), special_rows(rng, n_rows, 5)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), family=st.sampled_from(["lightgbm", "xgboost", "plain"]),
       n_outputs=st.integers(1, 2), max_leaves=st.sampled_from([2, 6, 20]),
       dart=st.booleans())
def test_random_models_give_the_exact_shapley_values(seed, family, n_outputs, max_leaves, dart):
    ens, model, X = _random_case(seed, family, n_outputs, max_leaves, dart, 6, 30)
    want = reference.shap_values(ens, X)
    for method in ("quadrature", "treeshap"):
        got = model.contributions(X, method=method).astype(np.float64)
        got = got.reshape(want.shape)
        tol = 2e-5 if (family == "xgboost" and method == "treeshap") else 1e-11
        if family == "xgboost" and method == "quadrature":
            tol = 1e-6          # float64 sums, rounded to XGBoost's float32 at the end
        _assert_close_to(got, want, tol, method)


def _model(seed=4, n_trees=30, max_leaves=40, family="lightgbm"):
    rng = np.random.default_rng(seed)
    ens = random_ensemble(rng, family, n_trees=n_trees, max_leaves=max_leaves,
                          p_categorical=0.2, thresholds=np.round(rng.normal(size=8), 1))
    return Model(_with_covers(rng, ens)), special_rows(rng, 200, 5)


def test_threads_give_the_same_values():
    model, rows = _model()
    pooled = Model(model.ensemble, tuning=current_tuning().replace(thread_pool=True))
    for method in ("quadrature", "treeshap"):
        one = model.contributions(rows, method=method)
        np.testing.assert_array_equal(model.contributions(rows, method=method, n_threads=2),
                                      one)
        np.testing.assert_array_equal(pooled.contributions(rows, method=method, n_threads=2),
                                      one)


# -- what is refused, and what it costs ---------------------------------------------------------
def test_a_model_without_covers_is_refused_by_name():
    rng = np.random.default_rng(1)
    model = Model(random_ensemble(rng, "lightgbm", n_trees=3))
    assert not model.ensemble.has_cover
    with pytest.raises(ModelFormatError, match="cover"):
        model.contributions(np.zeros((2, 5)))


def test_a_negative_cover_is_named():
    rng = np.random.default_rng(2)
    ens = _with_covers(rng, random_ensemble(rng, "lightgbm", n_trees=3, max_leaves=8))
    tree = ens.trees[1]
    lc = tree.leaf_cover.copy()
    lc[0] = -1.0
    bad = type(tree)(**{**{f: getattr(tree, f) for f in tree.__dataclass_fields__},
                        "leaf_cover": lc})
    ens = Ensemble(trees=(ens.trees[0], bad, ens.trees[2]), tree_group=ens.tree_group,
                   n_outputs=1, n_features=5, family="lightgbm", base_score=ens.base_score)
    with pytest.raises(ModelFormatError, match="tree 1: leaf .* cover -1.0"):
        Model(ens).contributions(np.zeros((1, 5)))


def test_bad_inputs_say_what_is_wrong():
    model, X = _model()
    with pytest.raises(InputError, match="features"):
        model.contributions(np.zeros((3, 7)))
    with pytest.raises(InputError, match="method"):
        model.contributions(X[:2], method="kernel")
    assert model.contributions(np.zeros((0, 5))).shape == (0, 6)


def test_memory_counts_the_layout_once_built():
    model, X = _model(max_leaves=100)
    before = model.memory()
    assert "contributions" not in before["bytes"]
    model.contributions(X[:2])
    after = model.memory()
    assert 0 < after["bytes"]["contributions"] <= 4 * after["bytes"]["ensemble"]


def test_a_row_gives_the_same_values_alone_in_a_block_and_on_every_path():
    """The quadrature explains rows eight at a time (a row alone in a block of one lane),
    each lane seeing the same operations on every instruction-set path: a row's values do
    not depend on its call, its place in it, or the path."""
    from quickscorer.algorithms import cpu
    model, rows = _model(seed=9, max_leaves=60)
    X = rows[:21]
    together = model.contributions(X)
    for i in range(X.shape[0]):
        np.testing.assert_array_equal(model.contributions(X[i:i + 1]), together[i:i + 1])
        np.testing.assert_array_equal(model.contributions(X[i:i + 3])[0], together[i])
    for isa in cpu.available_isas():
        on = Model(model.ensemble, tuning=current_tuning().replace(isa=isa))
        np.testing.assert_array_equal(on.contributions(X), together, err_msg=isa)


@pytest.mark.parametrize("family", ["lightgbm", "xgboost", "plain"])
def test_programs_built_per_block_give_the_stored_programs_values(family):
    """A layout without stored programs (a model of oblivious trees) builds each tree's in
    its own numbering as it goes: the same divisions, so bit for bit the values of the
    stored programs, for a row alone, two rows, blocks, interactions and every path;
    branches of zero cover and categorical nodes among them."""
    from quickscorer.algorithms import cpu
    from quickscorer.explain import _shap
    from quickscorer.explain import contributions as C
    rng = np.random.default_rng(31)
    extra = {"p_categorical": 0.2 if family == "lightgbm" else 0.0}
    ens = _with_covers(rng, random_ensemble(rng, family, n_trees=12, n_outputs=2,
                                            max_leaves=40, **extra))
    F1 = ens.n_features + 1
    layouts = [_shap.ShapLayout(C.shap_arrays(ens, stored), C.FAMILY_CODES[family],
                                ens.n_features, 2) for stored in (True, False)]
    X = special_rows(rng, 19, ens.n_features)
    for isa in cpu.available_isas():
        for inter in (False, True):
            for n in (1, 2, 19):
                width = 2 * (F1 * F1 if inter else F1)
                got = []
                for lay in layouts:
                    out = np.full((n, width), np.nan)
                    lay.contributions(X[:n], out, np.empty((0, width), np.float32), 0, 1,
                                      cpu.isa_code(isa), inter)
                    got.append(out)
                np.testing.assert_array_equal(got[1], got[0], err_msg=f"{isa} {inter} {n}")
                assert np.isfinite(got[0]).all()


def test_a_model_without_categorical_nodes_keeps_no_category_tables():
    """Only a categorical node reads the category tables: a layout of a model without any
    leaves them empty, and one that gives a categorical node none is refused."""
    from quickscorer.explain import _shap
    from quickscorer.explain import contributions as C
    rng = np.random.default_rng(8)
    ens = _with_covers(rng, random_ensemble(rng, "lightgbm", n_trees=5, max_leaves=10,
                                            p_categorical=0.0))
    a = C.shap_arrays(ens)
    assert a["cat_offset"].shape == a["cat_nwords"].shape == (0,)
    cat_model, _ = _model()
    b = C.shap_arrays(cat_model.ensemble)
    assert b["cat_offset"].shape[0] == b["feature"].shape[0]
    b["cat_offset"] = b["cat_nwords"] = np.zeros(0, np.int64)
    with pytest.raises(ValueError, match="categorical nodes without their category tables"):
        _shap.ShapLayout(b, C.FAMILY_CODES["lightgbm"], 5, 1)


# -- interactions -------------------------------------------------------------------------------
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), family=st.sampled_from(["lightgbm", "xgboost", "plain"]),
       n_outputs=st.integers(1, 2), max_leaves=st.sampled_from([2, 6, 20]),
       dart=st.booleans())
def test_random_models_give_the_exact_shapley_interactions(seed, family, n_outputs,
                                                           max_leaves, dart):
    ens, model, X = _random_case(seed, family, n_outputs, max_leaves, dart, 5, 20)
    want = reference.shap_values(ens, X, interactions=True)
    contrib = reference.shap_values(ens, X)
    for method in ("quadrature", "treeshap"):
        got = model.contributions(X, interactions=True, method=method).astype(np.float64)
        got = got.reshape(want.shape)
        tol = 2e-5 if family == "xgboost" else 1e-11
        _assert_close_to(got, want, tol, method)
        # each matrix symmetric (the quadrature's by construction; the recursion conditions
        # on each feature of a pair in turn, which round apart), its rows summing to the
        # contributions
        if method == "quadrature":
            np.testing.assert_array_equal(got, np.swapaxes(got, 2, 3))
        _assert_close_to(np.swapaxes(got, 2, 3), want, tol, method + ": transposed")
        _assert_close_to(got.sum(axis=3), contrib, tol, method + ": rows' sums")


def test_interactions_are_the_same_alone_in_a_block_on_every_path_and_thread():
    from quickscorer.algorithms import cpu
    model, rows = _model(seed=11, max_leaves=60)
    X = rows[:19]
    together = model.contributions(X, interactions=True)
    assert together.shape == (19, 6, 6)
    for i in (0, 7, 8, 18):
        np.testing.assert_array_equal(model.contributions(X[i], interactions=True),
                                      together[i:i + 1])
    for isa in cpu.available_isas():
        on = Model(model.ensemble, tuning=current_tuning().replace(isa=isa))
        np.testing.assert_array_equal(on.contributions(X, interactions=True), together,
                                      err_msg=isa)
    for method in ("quadrature", "treeshap"):
        one = model.contributions(X, interactions=True, method=method)
        np.testing.assert_array_equal(
            model.contributions(X, interactions=True, method=method, n_threads=2), one)
    np.testing.assert_array_equal(model.predict(X, pred_interactions=True), together)


def test_interactions_of_a_wide_model_go_a_row_at_a_time_with_the_same_values():
    """A model so wide that a block's pair sums would pass 64 MiB explains rows one at a
    time (test the switch, and that a wide row's matrix is right)."""
    rng = np.random.default_rng(5)
    F = 1100
    ens = _with_covers(rng, random_ensemble(rng, "lightgbm", n_trees=8, n_features=F,
                                            max_leaves=30))
    model = Model(ens)
    X = rng.normal(size=(3, F))
    got = model.contributions(X, interactions=True)
    assert got.shape == (3, F + 1, F + 1)
    want = model.contributions(X, interactions=True, method="treeshap")
    _assert_close_to(got, want, 1e-12, "wide")
    np.testing.assert_allclose(got.sum(axis=2), model.contributions(X), rtol=1e-9,
                               atol=1e-12)


def test_interactions_too_big_for_memory_are_refused_before_allocating():
    model, X = _model()
    with pytest.raises(InputError,
                       match=r"interactions of 200 rows need .* MiB .*\(max_bytes\)"):
        model.contributions(X, interactions=True, max_bytes=10_000)
    rng = np.random.default_rng(3)
    # 20,000 features: 3.2 GB of output a row, 3.2 TB for these 1,000 rows
    wide = Model(_with_covers(rng, random_ensemble(rng, "lightgbm", n_trees=2,
                                                   n_features=20_000, max_leaves=4)))
    with pytest.raises(InputError, match="half the memory available"):
        wide.contributions(np.zeros((1000, 20_000), np.float32), interactions=True)


# -- where users meet them: rankings, shap's Explanation ---------------------------------------
def test_a_ranking_explains_its_rows_and_why_one_outranks_another():
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(6)
    X = rng.normal(size=(400, 5))
    y = np.clip(np.round(X[:, 0] + X[:, 1] * X[:, 2] + 1), 0, 3)
    booster = lgb.train({"objective": "lambdarank", "verbose": -1, "num_leaves": 15,
                         "min_data_in_leaf": 5}, lgb.Dataset(X, y, group=[20] * 20), 20)
    model = Model(load_lightgbm(booster))
    X = X[:30]
    r = model.rank(X, group=[12, 18], top_k=4, contributions=True)
    assert r.contributions.shape == (r.order.shape[0], 6) == (8, 6)
    raw = model.predict(X, raw_score=True)
    for row in r.order:
        np.testing.assert_array_equal(r.explanation(row), model.contributions(X[row])[0])
    a, b = r.query(1)[:2]
    shares = r.why(a, b, top=None)
    assert [abs(v) for _, v in shares] == sorted((abs(v) for _, v in shares), reverse=True)
    assert sum(v for _, v in shares) == pytest.approx(raw[a] - raw[b], rel=1e-12, abs=1e-12)
    assert len(r.why(a, b, top=2)) == min(2, len(shares))
    assert {n for n, _ in shares} <= {f"Column_{i}" for i in range(5)}
    dropped = next(i for i in range(30) if i not in set(r.order.tolist()))
    with pytest.raises(InputError, match=f"row {dropped} is not among the ranked rows"):
        r.why(dropped, a)
    with pytest.raises(InputError, match="contributions=True"):
        model.rank(X, group=[12, 18]).explanation(0)


def test_explain_gives_shaps_explanation_for_its_plots():
    shap = pytest.importorskip("shap", reason="the explain extra installs shap")
    model, X = _model(seed=8)
    e = model.explain(X[:10])
    assert isinstance(e, shap.Explanation) and e.values.shape == (10, 5)
    c = model.contributions(X[:10])
    np.testing.assert_array_equal(e.values, c[:, :-1])
    np.testing.assert_array_equal(e.base_values, c[:, -1])
    np.testing.assert_array_equal(e.data, X[:10])
    rng = np.random.default_rng(2)
    multi = Model(_with_covers(rng, random_ensemble(rng, "xgboost", n_trees=6, n_outputs=3)))
    e = multi.explain(X[:4])
    assert e.values.shape == (4, 5, 3) and e.base_values.shape == (4, 3)
    c = multi.contributions(X[:4]).astype(np.float64)
    np.testing.assert_array_equal(e.values, np.moveaxis(c[:, :, :-1], 1, 2))
    assert e.feature_names == [f"f{i}" for i in range(5)]


def test_a_row_alone_takes_the_same_values_on_paths_of_many_features(monkeypatch):
    """A lone row's walk takes the points four, eight or any number at a time, by the tree's
    most distinct features on a path: each the block's values, and the recursion's."""
    from quickscorer.algorithms import cpu
    rng = np.random.default_rng(21)
    trees = [random_ensemble(rng, "lightgbm", n_trees=4, n_features=60, max_leaves=m,
                             p_categorical=0.1).trees for m in (30, 300, 1500)]
    ens = random_ensemble(rng, "lightgbm", n_trees=1, n_features=60)
    ens = _with_covers(rng, Ensemble(trees=tuple(t for ts in trees for t in ts),
                                     tree_group=np.zeros(12, np.int64),
                                     n_outputs=1, n_features=60, family="lightgbm",
                                     base_score=ens.base_score))
    model = Model(ens)
    model.contributions(np.zeros((1, 60)))
    nq = model.explainer._layout[1]["tree_nq"]
    assert nq.min() <= 4 and ((nq > 4) & (nq <= 8)).any() and nq.max() > 8
    X = special_rows(rng, 11, 60)
    together = model.contributions(X)
    _assert_close_to(together, model.contributions(X, method="treeshap"), 1e-12, "recursion")
    for isa in cpu.available_isas():
        on = Model(model.ensemble, tuning=current_tuning().replace(isa=isa))
        for i in (0, 5, 10):
            np.testing.assert_array_equal(on.contributions(X[i:i + 1]), together[i:i + 1],
                                          err_msg=isa)
        np.testing.assert_array_equal(on.contributions(X[3:5]), together[3:5], err_msg=isa)
