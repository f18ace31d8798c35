"""Solr LTR's ``MultipleAdditiveTreesModel``: the JSON a Solr collection's model store takes
(``/schema/model-store``), trees of named features.

A document: ``class`` (this model's), ``name``, ``features`` (``[{"name": ...}]``: their
order is the columns of ``X``), ``params.trees`` (each a ``weight`` and a ``root``), and
optionally ``store``. A node holds ``feature``, ``threshold``, ``left`` and ``right``; a leaf
``value``; numbers as JSON numbers or as texts. The rules, as read in Solr's source
(``MultipleAdditiveTreesModel``): values, thresholds and weights are Java ``float``s; a
node's threshold is ``float(threshold) + 1e-6f`` (``NODE_SPLIT_SLACK``, in float); a row goes
left where ``value <= threshold`` (NaN goes right); a node on a feature the model does not
list ends its tree with 0; a tree adds ``weight * value`` (a float product) to a float
score. That score is an XGBoost model's float32 sum of leaves that hold those products, so
every kernel scores it exactly. Feature normalizers (``norm``) change the inputs and are
refused, as is any other field that could change a score.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ModelFormatError
from ..ir.ensemble import MAX_NODES_PER_TREE, MISSING_NAN, Ensemble, build_tree
from .json_document import parsed, refuse_unknown

#: the class this reads, and the fields of its document, feature, tree and node
CLASS = "org.apache.solr.ltr.model.MultipleAdditiveTreesModel"
_DOCUMENT = frozenset({"class", "name", "features", "params", "store"})
_FEATURE = frozenset({"name", "norm"})
_TREE = frozenset({"weight", "root"})
_NODE = frozenset({"feature", "threshold", "left", "right"})
_LEAF = frozenset({"value"})
#: Solr's NODE_SPLIT_SLACK, added to every threshold in float
SPLIT_SLACK = np.float32(1e-6)
_IDENTITY = "org.apache.solr.ltr.norm.IdentityNormalizer"


def looks_like_solr(raw: bytes) -> bool:
    """Whether the bytes are JSON naming a Solr LTR model class early on."""
    head = raw[:512].lstrip()
    return head.startswith(b"{") and b'"org.apache.solr.ltr.' in head


def _float(v: Any, what: str) -> np.float32:
    """A number as Solr reads it (``Float.parseFloat`` of a text, a JSON number as float)."""
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise ModelFormatError(f"Solr model: {what} is not a number: {v!r:.40}")
    try:
        with np.errstate(over="ignore"):
            f = np.float32(float(v.strip().rstrip("fFdD")) if isinstance(v, str) else float(v))
    except ValueError:
        raise ModelFormatError(f"Solr model: {what} {v!r:.40} is not a number") from None
    if not np.isfinite(f):
        raise ModelFormatError(f"Solr model: {what} {v!r:.40} is not finite in float")
    return f


def _refuse(obj: dict, known: frozenset, where: str) -> None:
    refuse_unknown(obj, known, where, "Solr model")


def load_solr(source: Any) -> Ensemble:
    """The ensemble of a Solr ``MultipleAdditiveTreesModel`` document (a dict, JSON text or
    bytes)."""
    source = parsed(source, "Solr model")
    _refuse(source, _DOCUMENT, "the document")
    if source.get("class") != CLASS:
        raise ModelFormatError(f"Solr model: class {source.get('class')!r:.80} is not "
                               f"{CLASS} (the tree model this reads)")
    features = source.get("features")
    if not isinstance(features, list) or not features:
        raise ModelFormatError("Solr model: features is not a list of features")
    names = []
    for i, f in enumerate(features):
        _refuse(f, _FEATURE, f"feature {i}")
        norm = f.get("norm")
        if norm is not None and (not isinstance(norm, dict) or norm.get("class") != _IDENTITY
                                 or norm.get("params")):
            raise ModelFormatError(f"Solr model: feature {f.get('name')!r} has the normalizer "
                                   f"{norm!r:.80}, which changes its values before the trees")
        names.append(str(f.get("name")))
    column = {n: i for i, n in enumerate(names)}
    params = source.get("params")
    _refuse(params, frozenset({"trees"}), "params")
    trees_raw = params.get("trees")
    if not isinstance(trees_raw, list) or not trees_raw:
        raise ModelFormatError("Solr model: params.trees is not a list of trees")
    built = []
    for t, tree in enumerate(trees_raw):
        where = f"tree {t}"
        _refuse(tree, _TREE, where)
        if "weight" not in tree or "root" not in tree:
            raise ModelFormatError(f"Solr model: {where} has no weight or no root")
        weight = _float(tree["weight"], f"{where}: the weight")
        built.append(_tree(tree["root"], weight, column, len(names), where))
    return Ensemble(trees=built, tree_group=np.zeros(len(built), np.int32), n_outputs=1,
                    n_features=len(names), family="xgboost", base_score=[0.0],
                    feature_names=tuple(names),
                    source={"library": "solr", "format": "solr-ltr",
                            "objective": "MultipleAdditiveTreesModel",
                            "name": source.get("name")})


def _tree(root: dict, weight: np.float32, column: dict, n_features: int, where: str):
    """One tree: its nodes in the order met, each leaf's value times the tree's weight in
    float (what Solr adds)."""
    left, right, feature, threshold, value = [], [], [], [], []
    stack = [(root, None, None)]
    while stack:
        node, parent, side = stack.pop()
        n = len(left)
        if n >= MAX_NODES_PER_TREE:
            raise ModelFormatError(f"Solr model: {where} has more than {MAX_NODES_PER_TREE} "
                                   f"nodes")
        if parent is not None:
            (left if side == "left" else right)[parent] = n
        left.append(-1)
        right.append(-1)
        feature.append(0)
        threshold.append(0.0)
        value.append(0.0)
        if isinstance(node, dict) and "feature" not in node:
            _refuse(node, _LEAF, f"{where}: a leaf")
            v = _float(node.get("value", 0.0), f"{where}: a value")
            value[n] = float(np.float32(weight * v))
            continue
        _refuse(node, _NODE, f"{where}: a node")
        for key in ("threshold", "left", "right"):
            if key not in node:
                raise ModelFormatError(f"Solr model: {where}: a node without {key!r}")
        name = str(node["feature"])
        if name not in column:             # Solr: the tree scores 0 from here
            continue
        feature[n] = column[name]
        thr = _float(node["threshold"], f"{where}: a threshold")
        threshold[n] = float(np.float32(thr + SPLIT_SLACK))
        stack.append((node["right"], n, "right"))
        stack.append((node["left"], n, "left"))
    k = len(left)
    return build_tree(left=left, right=right, root=0, feature=feature, threshold=threshold,
                      default_left=[False] * k, missing_type=[MISSING_NAN] * k,
                      is_categorical=[False] * k, categories=None, value=value,
                      n_features=n_features, where=f"Solr model: {where}")
