"""LightGBM's JSON dumps (``Booster.dump_model()``, as Vespa and other engines take LightGBM
models): the same trees as the text model, in nested objects. The dump is written back as
the text model it stands for and read by the text importer (``importers/lightgbm.py``), so
that one reader holds LightGBM's rules: the thresholds and values are doubles written with 17
digits, which read back as themselves.

Every field of the document, a tree and a node is read, or known to change no score
(training statistics, feature infos and importances), or refused by name; a linear tree's
leaves (``leaf_const``, ``leaf_features``, ``leaf_coeff``) are read too.
"""
from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np

from ..errors import ModelFormatError
from ..ir.ensemble import Ensemble
from .json_document import parsed, refuse_unknown
from .lightgbm import load_lightgbm

_DOCUMENT = frozenset({"name", "version", "num_class", "num_tree_per_iteration", "label_index",
                       "max_feature_idx", "objective", "average_output", "feature_names",
                       "monotone_constraints", "feature_infos", "tree_info",
                       "feature_importances", "pandas_categorical"})
_TREE = frozenset({"tree_index", "num_leaves", "num_cat", "shrinkage", "tree_structure"})
_SPLIT = frozenset({"split_index", "split_feature", "split_gain", "threshold", "decision_type",
                    "default_left", "missing_type", "internal_value", "internal_weight",
                    "internal_count", "left_child", "right_child"})
_LEAF = frozenset({"leaf_index", "leaf_value", "leaf_weight", "leaf_count"})
#: a linear tree's leaves: its linear model
_LINEAR = frozenset({"leaf_const", "leaf_features", "leaf_coeff"})
_MISSING = {"None": 0, "Zero": 1, "NaN": 2}


def looks_like_lightgbm_dump(raw: bytes) -> bool:
    """Whether the bytes start as ``dump_model()``'s JSON: an object whose first field is
    ``"name": "tree"``."""
    head = raw[:64].lstrip()
    return head.startswith(b"{") and head[1:].lstrip().startswith(b'"name"') and \
        b'"tree"' in head


def _document(source: Any) -> dict:
    source = parsed(source, "LightGBM dump")
    if not isinstance(source, dict) or source.get("name") != "tree":
        raise ModelFormatError("LightGBM dump: expected dump_model()'s object (name: tree)")
    return source


def _refuse(obj: dict, known: frozenset, where: str) -> None:
    refuse_unknown(obj, known, where, "LightGBM dump")


def _int(v: Any, where: str) -> int:
    """An integer of the document, or a ModelFormatError naming it."""
    if isinstance(v, bool) or not isinstance(v, int):
        raise ModelFormatError(f"LightGBM dump: {where} is not an integer: {v!r:.40}")
    return v


def _number(v: Any, where: str) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ModelFormatError(f"LightGBM dump: {where} is not a number: {v!r:.40}")
    return repr(float(v)) if isinstance(v, float) else str(v)


def _count(v: Any) -> int:
    """A training count (advisory: a damaged one is 0, which costs the covers only)."""
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0


def _tree_text(t: int, tree: dict) -> str:
    """One tree as the text model's ``Tree=`` block."""
    where = f"tree {t}"
    _refuse(tree, _TREE, where)
    root = tree.get("tree_structure")
    if not isinstance(root, dict):
        raise ModelFormatError(f"LightGBM dump: {where} has no tree_structure")
    splits: dict[int, dict] = {}
    leaves: dict[int, dict] = {}
    stack = [root]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            raise ModelFormatError(f"LightGBM dump: {where}: a node is not an object")
        if "leaf_value" in node:
            _refuse(node, _LEAF | _LINEAR, f"{where}, a leaf")
            j = _int(node.get("leaf_index", 0), f"{where}: leaf_index")
            if j in leaves:
                raise ModelFormatError(f"LightGBM dump: {where}: two leaves numbered {j}")
            leaves[j] = node
            continue
        _refuse(node, _SPLIT, f"{where}, a split")
        i = node.get("split_index")
        if isinstance(i, bool) or not isinstance(i, int) or i in splits or len(splits) > 1 << 20:
            raise ModelFormatError(f"LightGBM dump: {where}: split_index {i!r} is not a new "
                                   f"integer")
        splits[i] = node
        stack += [node.get("right_child"), node.get("left_child")]
    m = len(splits)
    if sorted(splits) != list(range(m)) or sorted(leaves) != list(range(m + 1)):
        raise ModelFormatError(f"LightGBM dump: {where}: its splits and leaves are not "
                               f"numbered 0 to {m - 1} and 0 to {m}")

    def ref(child: dict) -> int:
        return child["split_index"] if "split_index" in child else ~child.get("leaf_index", 0)

    lines = [f"Tree={t}", f"num_leaves={m + 1}"]
    cats, words = [], []
    if m:
        feature, thr, decision, left, right, count = [], [], [], [], [], []
        for i in range(m):
            s = splits[i]
            kind = s.get("decision_type")
            mt = s.get("missing_type")
            missing = _MISSING.get(mt) if isinstance(mt, str) else None
            if not isinstance(s.get("default_left", False), bool):
                raise ModelFormatError(f"LightGBM dump: {where}, split {i}: default_left is not "
                                       f"true or false")
            if kind not in ("<=", "==") or missing is None:
                raise ModelFormatError(f"LightGBM dump: {where}, split {i}: decision_type "
                                       f"{kind!r} / missing_type {s.get('missing_type')!r}")
            bits = (2 if s.get("default_left") else 0) | (missing << 2)
            if kind == "==":
                values = str(s.get("threshold", "")).split("||")
                try:
                    codes = sorted({int(v) for v in values if v != ""})
                except (ValueError, TypeError):
                    raise ModelFormatError(f"LightGBM dump: {where}, split {i}: categories "
                                           f"{s.get('threshold')!r:.40}") from None
                if any(c < 0 or c > (1 << 20) for c in codes):
                    raise ModelFormatError(f"LightGBM dump: {where}, split {i}: a category "
                                           f"outside [0, 2^20]")
                bitset = np.zeros((codes[-1] // 32 + 1) if codes else 1, np.uint64)
                for c in codes:
                    bitset[c // 32] |= np.uint64(1) << np.uint64(c % 32)
                thr.append(str(len(cats)))
                cats.append(len(words))
                words += [str(int(w)) for w in bitset]
                bits |= 1
            else:
                thr.append(_number(s.get("threshold"), f"{where}, split {i}: threshold"))
            feature.append(_number(s.get("split_feature"), f"{where}, split {i}: feature"))
            decision.append(str(bits))
            left.append(str(ref(s["left_child"])))
            right.append(str(ref(s["right_child"])))
            count.append(str(_count(s.get("internal_count"))))
        lines += [f"num_cat={len(cats)}", "split_feature=" + " ".join(feature),
                  "threshold=" + " ".join(thr), "decision_type=" + " ".join(decision),
                  "left_child=" + " ".join(left), "right_child=" + " ".join(right),
                  "internal_count=" + " ".join(count)]
        if cats:
            lines += ["cat_boundaries=" + " ".join(map(str, cats + [len(words)])),
                      "cat_threshold=" + " ".join(words)]
    else:
        lines.append("num_cat=0")
    lines.append("leaf_value=" + " ".join(
        _number(leaves[j].get("leaf_value"), f"{where}, leaf {j}") for j in range(m + 1)))
    lines.append("leaf_count=" + " ".join(str(_count(leaves[j].get("leaf_count")))
                                          for j in range(m + 1)))
    linear = [_LINEAR & set(leaves[j]) for j in range(m + 1)]
    if any(linear):
        if not all(s == _LINEAR for s in linear):
            raise ModelFormatError(f"LightGBM dump: {where}: some leaves have a linear model "
                                   f"and some do not")
        feats, coeffs = [], []
        for j in range(m + 1):
            f, c = leaves[j]["leaf_features"], leaves[j]["leaf_coeff"]
            if not isinstance(f, list) or not isinstance(c, list) or len(f) != len(c):
                raise ModelFormatError(f"LightGBM dump: {where}, leaf {j}: leaf_features and "
                                       f"leaf_coeff are not two lists of one length")
            feats.append(f)
            coeffs.append(c)
        lines += ["is_linear=1",
                  "leaf_const=" + " ".join(_number(leaves[j]["leaf_const"],
                                                   f"{where}, leaf {j}: leaf_const")
                                           for j in range(m + 1)),
                  "num_features=" + " ".join(str(len(f)) for f in feats),
                  "leaf_features=" + " ".join(_number(v, f"{where}: a leaf feature")
                                              for f in feats for v in f),
                  "leaf_coeff=" + " ".join(_number(v, f"{where}: a coefficient")
                                           for c in coeffs for v in c)]
    return "\n".join(lines) + "\n\n"


def lightgbm_text_of_dump(source: Any) -> str:
    """The text model a ``dump_model()`` document stands for."""
    doc = _document(source)
    _refuse(doc, _DOCUMENT, "the document")
    trees = doc.get("tree_info")
    if not isinstance(trees, list) or not trees:
        raise ModelFormatError("LightGBM dump: tree_info is not a list of trees")
    names = doc.get("feature_names") or []
    if not isinstance(names, list) or not all(isinstance(n, str) and n and " " not in n
                                              for n in names):
        raise ModelFormatError("LightGBM dump: feature_names is not a list of names")
    head = ["tree", f"version={doc.get('version', 'v4')}",
            f"num_class={_int(doc.get('num_class', 1), 'num_class')}",
            f"num_tree_per_iteration="
            f"{_int(doc.get('num_tree_per_iteration', 1), 'num_tree_per_iteration')}",
            f"label_index={_int(doc.get('label_index', 0), 'label_index')}",
            f"max_feature_idx="
            f"{_int(doc.get('max_feature_idx', len(names) - 1), 'max_feature_idx')}",
            f"objective={doc.get('objective', 'regression')}"]
    if doc.get("average_output"):
        head.append("average_output")
    if names:
        head.append("feature_names=" + " ".join(str(n) for n in names))
    text = "\n".join(head) + "\n\n" + "".join(_tree_text(t, tree) for t, tree in
                                                enumerate(trees)) + "end of trees\n"
    if doc.get("pandas_categorical") is not None:
        text += "\npandas_categorical:" + json.dumps(doc["pandas_categorical"]) + "\n"
    return text


def load_lightgbm_dump(source: Any) -> Ensemble:
    """The ensemble of a LightGBM ``dump_model()`` document (a dict, JSON text or bytes)."""
    ens = load_lightgbm(lightgbm_text_of_dump(source))
    return dataclasses.replace(ens, source={**ens.source, "format": "json dump"})
