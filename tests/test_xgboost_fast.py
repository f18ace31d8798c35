"""The whole-model tree path of the XGBoost importer (``packed_trees_fast``) against the
per-tree reference path (``_tree`` + ``build_tree``): the same PackedTrees on every model it
takes, and a refusal (``None``, so that the reference path names the problem) wherever the
reference refuses a tree."""
from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_xgboost_import import BREAKS, CASES, _break, _doc

from quickscorer.errors import ModelFormatError
from quickscorer.importers.xgboost import _tree, packed_trees_fast, xgboost_document
from quickscorer.ir.ensemble import PackedTrees

LEGACY = Path(__file__).resolve().parent / "legacy"


def _trees_and_features(doc):
    learner = doc["learner"]
    gb = learner["gradient_booster"]
    model = gb["model"] if "model" in gb else gb["gbtree"]["model"]
    return model["trees"], int(str(learner["learner_model_param"]["num_feature"]))


def _reference(trees, n_features):
    return PackedTrees.pack([_tree(t, raw, n_features) for t, raw in enumerate(trees)])


def assert_same(fast, ref):
    for name, a in ref.arrays.items():
        b = fast.arrays[name]
        if a is None:
            assert b is None, name
            continue
        assert b is not None and a.dtype == b.dtype and np.array_equal(a, b), name


def _documents():
    docs = {f"trained-{name}": _doc(name) for name in CASES}
    for path in sorted(LEGACY.glob("xgboost-*/*.model"))[::3]:
        docs[f"{path.parent.name}-{path.stem}"] = xgboost_document(path)[0]
    return docs


DOCS = _documents()


@pytest.mark.parametrize("name", sorted(DOCS))
def test_fast_path_gives_the_reference_trees(name):
    trees, n_features = _trees_and_features(DOCS[name])
    ref = _reference(trees, n_features)
    fast = packed_trees_fast(trees, n_features)
    if ref.arrays["cat_offset"] is not None or "pruned" in name:
        assert fast is None
        return
    assert fast is not None
    assert_same(fast, ref)


@pytest.mark.parametrize("how", [b for b in BREAKS if b not in ("no_trees",)])
def test_fast_path_declines_the_reference_refusals(how):
    doc = _break(how)
    try:
        trees, n_features = _trees_and_features(doc)
    except (KeyError, ValueError, TypeError):
        return          # a break outside the trees: the importer refuses it before them
    try:
        _reference(trees, n_features)
    except (ModelFormatError, KeyError, ValueError, TypeError):
        assert packed_trees_fast(trees, n_features) is None
        return
    fast = packed_trees_fast(trees, n_features)     # a break elsewhere in the model
    if fast is not None:
        assert_same(fast, _reference(trees, n_features))


FIELDS = ["left_children", "right_children", "split_indices", "split_conditions",
          "default_left", "split_type", "sum_hessian"]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(field=st.sampled_from(FIELDS), pos=st.floats(0, 1, exclude_max=True),
       value=st.sampled_from([-2, -1, 0, 1, 2, 3, 7, 40, 10**6, 0.5, -0.0, 1e39, "1",
                              None, True, float("inf")]),
       tree=st.integers(0, 9))
def test_damaged_trees_fast_path_never_accepts_more(field, pos, value, tree):
    doc = copy.deepcopy(DOCS["trained-reg:squarederror"])
    trees, n_features = _trees_and_features(doc)
    arr = trees[tree].setdefault(field, [0] * len(trees[tree]["left_children"]))
    arr[int(pos * len(arr))] = value
    try:
        ref = _reference(trees, n_features)
    except (ModelFormatError, ValueError, TypeError, OverflowError):
        assert packed_trees_fast(trees, n_features) is None
        return
    fast = packed_trees_fast(trees, n_features)
    if fast is not None:
        assert_same(fast, ref)
