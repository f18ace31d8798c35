"""benchmarks/floors.py: its counts of a model's operations and its sum of their costs (no
timing is asserted; the harness is only checked to build, run and name every unit)."""
from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import pytest
from conftest import random_ensemble, special_rows

import quickscorer
from benchmarks import floors as FL


def _model(family="xgboost", max_leaves=12):
    """Trees the level path takes too (finite thresholds, depth at most 10), its fields built
    (Tuning.rs_levels)."""
    rng = np.random.default_rng(3)
    ens = random_ensemble(rng, family, n_trees=30, n_features=6, max_leaves=max_leaves,
                          p_categorical=0.0, thresholds=(-1.0, 0.0, 0.5, 2.0, 3.0))
    tuning = dataclasses.replace(quickscorer.current_tuning(), rs_levels=True)
    return quickscorer.Model(ens, tuning=tuning), special_rows(rng, 300, 6)


def test_the_counts_are_the_layouts_own():
    model, X = _model()
    rs = model.prepare("rapidscorer").arrays()
    c = FL.counts(model, X)
    assert sum(c["ranks"].values()) == rs["model_used"].shape[0]
    assert sum(c["leaves"].values()) == model.ensemble.n_trees
    assert sum(c["slots"].values()) == model.ensemble.n_trees
    assert c["levels"]["lv_node"] * FL.LANES == rs["lv_node_offset"][-1]
    assert c["levels"]["lv_level"] * FL.LANES == rs["lv_split"].astype(int).sum()
    assert c["levels"]["lv_deep"] == (rs["lv_depth"].astype(int)
                                      - rs["lv_split"].astype(int)).sum()
    assert c["scan"]["exit_row"] * FL.LANES == rs["tree_byte_offsets"][-1]
    # every tree's leaves fit the size class it is counted in
    sizes = np.diff(rs["leaf_offset"])
    assert (FL._leaf_class(sizes) >= np.minimum(sizes, 256)).all()


def test_a_floor_is_each_stages_count_times_its_cost_a_partial_group_a_whole_one():
    c = {"ranks": {"rank16": 10.0}, "levels": {"lv_node": 2.0, "lv_level": 1.0,
                                                "lv_deep": 3.0},
         "slots": {"leaf_n64": 5.0}, "heap": {"heap": 7.0}, "leaves": {"leaf_n64": 5.0}}
    cost = {("rank16", "avx2"): 1.0, ("lv_node", "avx2"): 10.0, ("lv_level", "avx2"): 100.0,
            ("lv_deep", "scalar"): 1000.0, ("leaf_n64", "avx2"): 0.5, ("heap", "avx2"): 2.0}
    full = FL.floors(c, cost, "avx2", 64)
    assert set(full) == {"levels", "heap"}                # no scan stage: no scan way
    assert full["levels"] == {"ranks": 10.0, "levels": 20.0 + 100.0 + 3000.0, "slots": 2.5}
    assert full["heap"] == {"heap": 14.0, "leaves": 2.5}
    half = FL.floors(c, cost, "avx2", 32)                 # a group of 64 for 32 documents
    assert half["levels"]["levels"] == 2 * (20.0 + 100.0) + 3000.0
    # the AVX-512 path whose level walk runs in halves: the walk on AVX2's units, the rest not
    wide = {**cost, ("rank16", "avx512"): 3.0, ("lv_node", "avx512"): 1e6,
            ("leaf_n64", "avx512"): 0.5, ("heap", "avx512"): 2.0}
    halves = FL.floors(c, wide, "avx512", 64, walk="avx2")
    assert halves["levels"] == {"ranks": 30.0, "levels": 3120.0, "slots": 2.5}


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc to build floors.c")
def test_the_harness_builds_runs_and_names_every_unit_a_way_needs():
    from quickscorer.algorithms import cpu
    if not cpu.available_isas() or "avx2" not in cpu.available_isas():
        pytest.skip("floors.c times x86-64 AVX2 and AVX-512 units")
    costs = FL.unit_costs(rounds=1)
    isa = "avx512" if "avx512" in cpu.available_isas() else "avx2"
    names = {u for u, i in costs if i in (isa, "scalar")}
    model, X = _model(family="lightgbm")
    needed = {u for stage in FL.counts(model, X).values() for u in stage}
    assert needed <= names, needed - names
    assert all(v > 0 for v in costs.values())
