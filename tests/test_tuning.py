"""The tuning table (``quickscorer.tuning``): resolved from the defaults and the environment,
passed to a model, and followed by every part of it: the automatic choice, the layouts, the
models of iteration ranges, copies and the explanations."""
from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest
from conftest import random_ensemble, special_rows

import quickscorer
from quickscorer import Tuning
from quickscorer.algorithms import autoselect, registry


def test_the_environment_sets_each_switch_by_its_kind_and_a_bad_value_is_named():
    t = Tuning.from_env({"QUICKSCORER_ISA": "scalar", "QUICKSCORER_LANES": "8",
                         "QUICKSCORER_RS_MIRROR": "0", "QUICKSCORER_WALK_COMPLETE": "1",
                         "QUICKSCORER_THREAD_POOL": "", "UNRELATED": "x"})
    assert (t.isa, t.lanes, t.rs_mirror, t.walk_complete, t.thread_pool) == (
        "scalar", 8, False, True, False)
    assert t.switches() == {"QUICKSCORER_ISA": "scalar", "QUICKSCORER_LANES": 8,
                            "QUICKSCORER_RS_MIRROR": False, "QUICKSCORER_WALK_COMPLETE": True}
    assert Tuning.from_env({}) == Tuning()
    with pytest.raises(ValueError, match=r"\$QUICKSCORER_DOC_GROUPS must be a number"):
        Tuning.from_env({"QUICKSCORER_DOC_GROUPS": "eight"})
    with pytest.raises(ValueError, match="doc_groups must be >= 1"):
        Tuning(doc_groups=0)
    with pytest.raises(TypeError):
        Tuning().replace(no_such_field=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        Tuning().isa = "avx2"
    assert Tuning.parse("walk_rs_nodes_per_step", "2.5") == 2.5
    assert Tuning.parse("rs_levels", "none") is None
    with pytest.raises(ValueError, match="no field"):
        Tuning.parse("nope", "1")
    assert quickscorer.current_tuning() is quickscorer.current_tuning()


def _oblivious_model():
    rng = np.random.default_rng(2)
    ens = random_ensemble(rng, "lightgbm", n_trees=12, max_leaves=4)
    # depth-2 complete trees, one feature and threshold a level: every tree oblivious
    trees = []
    for k in range(12):
        trees.append(quickscorer.ir.build_tree(
            left=[1, 3, 5, -1, -1, -1, -1], right=[2, 4, 6, -1, -1, -1, -1], root=0,
            feature=[k % 3, (k + 1) % 3, (k + 1) % 3, 0, 0, 0, 0],
            threshold=[0.5, -0.25, -0.25, 0, 0, 0, 0], default_left=[True] * 7,
            missing_type=[0] * 7, is_categorical=[False] * 7, categories=None,
            value=[0, 0, 0, 1.0 + k, -2.0, 0.5, 3.0 - k], n_features=3))
    return quickscorer.Ensemble(trees=tuple(trees), tree_group=[0] * 12, n_outputs=1,
                                n_features=3, family="lightgbm", base_score=ens.base_score[:1])


def test_a_model_follows_its_table_in_the_choice_and_scores_the_same():
    ens = _oblivious_model()
    default = quickscorer.Model(ens)
    assert "oblivious" in default.supported_algorithms()
    assert default.plan.choose(1, 1) == "oblivious"
    late = quickscorer.Model(ens, tuning=quickscorer.current_tuning().replace(
        oblivious_min_rows=5, parallel_min_rows=16))
    assert late.plan.choose(4, 1) != "oblivious" and late.plan.choose(5, 1) == "oblivious"
    assert len(late.plan.small_kernels) == 16 and len(late.plan.small_entries) == 16
    assert autoselect.threads_for(20, 4, late.tuning) == 2
    assert autoselect.threads_for(20, 4, default.tuning) == 1
    X = special_rows(np.random.default_rng(3), 40, 3)
    want = default.predict_raw(X, algorithm="traversal")
    for n in (1, 3, 4, 5, 17, 40):
        np.testing.assert_array_equal(late.predict_raw(X[:n]), want[:n])
        np.testing.assert_array_equal(late.predict_raw(X[:n], n_threads=2), want[:n])


def test_the_table_reaches_parts_copies_layouts_and_explanations():
    rng = np.random.default_rng(4)
    ens = random_ensemble(rng, "lightgbm", n_trees=20, max_leaves=9)
    t = quickscorer.current_tuning().replace(isa="scalar", walk_complete=False,
                                             thread_pool=True)
    model = quickscorer.Model(ens, tuning=t)
    assert model.info()["switches"] == t.switches()
    part = model.request(np.zeros((1, ens.n_features)), 1, 0, 5).part
    assert part is not model and part.tuning is t
    copy = pickle.loads(pickle.dumps(model))
    assert copy.tuning == t
    for name in ("walk", "vqs", "rapidscorer"):
        assert model.prepare(name).tuning is t
    assert not model.prepare("walk").complete
    assert model.prepare("vqs").isa_name == "scalar" == model.info()["vqs_instruction_set"]
    assert model.explainer.tuning is t
    X = special_rows(rng, 70, ens.n_features)
    plain = quickscorer.Model(ens)
    np.testing.assert_array_equal(model.predict(X, n_threads=2), plain.predict(X))
    np.testing.assert_array_equal(model.predict(X, num_iteration=5),
                                  plain.predict(X, num_iteration=5))


def test_every_family_the_choice_weighs_declares_its_regimes_and_costs():
    """A family competes only in the regimes it declares, and the choice's facts come from
    the families: the walk's steps and the scan's false nodes."""
    names = {n for n, cls in registry.ALGORITHMS.items() if cls.regimes}
    assert names == {"quickscorer", "vqs", "walk", "rapidscorer", "oblivious"}
    for n in names:
        assert set(registry.ALGORITHMS[n].regimes) <= set(autoselect.REGIMES), n
        assert registry.ALGORITHMS[n].small_calls, n
    ens = random_ensemble(np.random.default_rng(5), "xgboost", n_trees=8, max_leaves=8)
    f = autoselect.facts(ens)
    assert f.false is None and f.path is None          # no covers in a random ensemble
    assert f.nodes == int(ens.trees.node_offset[-1]) and f.n_trees == 8
    assert registry.get("vqs").cost("one_row", f, quickscorer.current_tuning()) is None
    assert registry.get("traversal").regimes == ()
