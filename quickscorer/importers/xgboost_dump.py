"""XGBoost's JSON dumps: ``Booster.get_dump(dump_format="json")``, one JSON object a tree, as
a JSON array (what the Elasticsearch and OpenSearch LTR plugins load as
``model/xgboost+json``, and Vespa as an XGBoost model) or as the list of strings
``get_dump`` returns.

A tree is a nest of objects: an inner node holds ``nodeid``, ``depth``, ``split`` (``f<k>``,
or a feature's name where the dump was written with a feature map), ``split_condition``,
``yes``, ``no``, ``missing`` (the child a NaN takes) and ``children``; a leaf holds
``nodeid`` and ``leaf``; both may hold the statistics ``gain`` and ``cover`` (read as the
covers). A row goes to ``yes`` where ``value < split_condition`` in float32, as XGBoost's
predictor decides; values and leaves are float32, written with the nine digits that read back
as themselves.

A dump holds no base score, objective, number of classes or DART weights: it loads as the sum
of its trees from a base of 0 (:func:`load_xgboost_dump`'s ``base_score``, ``objective`` and
``num_class`` give them, with which the margins and outputs equal XGBoost's bit for bit). A
DART model's dump has lost its trees' weights, and nothing in it says so.
"""
from __future__ import annotations

import json
import re

import numpy as np

from .._transforms import xgb_prob_to_margin
from ..errors import ModelFormatError
from ..ir.ensemble import MAX_CATEGORY, MAX_NODES_PER_TREE, MISSING_NAN, Ensemble, build_tree
from .json_document import parsed
from .xgboost import OBJECTIVES

#: the fields of a dump's nodes: those read, and the statistics that change no score
_INNER = frozenset({"nodeid", "depth", "split", "split_condition", "yes", "no", "missing",
                    "children", "gain", "cover"})
_LEAF = frozenset({"nodeid", "leaf", "cover"})
_FEATURE = re.compile(r"f(\d+)$")


def looks_like_xgboost_dump(raw: bytes) -> bool:
    """Whether the bytes are a JSON array whose first tree object starts with ``nodeid``."""
    head = raw[:256].lstrip()
    return head.startswith(b"[") and head[1:].lstrip().startswith(b"{") and \
        head[1:].lstrip()[1:].lstrip().startswith(b'"nodeid"')


def _trees(source) -> list:
    """The dump's trees as parsed objects."""
    source = parsed(source, "XGBoost dump")
    if not isinstance(source, list) or not source:
        raise ModelFormatError("XGBoost dump: expected a list of trees")
    out = []
    for i, t in enumerate(source):
        if isinstance(t, str):
            try:
                t = json.loads(t)
            except ValueError as exc:
                raise ModelFormatError(f"XGBoost dump: tree {i} is not JSON ({exc})") from None
        if not isinstance(t, dict):
            raise ModelFormatError(f"XGBoost dump: tree {i} is not an object")
        out.append(t)
    return out


def _float32(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ModelFormatError(f"{where} is not a number: {value!r:.40}")
    with np.errstate(over="ignore"):
        f = np.float32(value)
    if not np.isfinite(f):
        raise ModelFormatError(f"{where} is not finite in float32: {value!r}")
    return float(f)


def _feature(name, names: dict | None, where: str) -> int:
    if not isinstance(name, str):
        raise ModelFormatError(f"{where}: split {name!r:.40} is not a feature's name")
    if names is not None:
        if name not in names:
            raise ModelFormatError(f"{where}: split on {name!r}, which the feature names "
                                   f"given do not hold")
        return names[name]
    m = _FEATURE.match(name)
    if m is None:
        raise ModelFormatError(f"{where}: split on {name!r}: a dump written with a feature map "
                               f"names its features; give them (feature_names=[...])")
    return int(m.group(1))


def _tree(t: int, root: dict, names: dict | None, nan_to_no: bool = False) -> dict:
    """One tree's nodes, numbered in the order they are met (preorder)."""
    where = f"XGBoost dump: tree {t}"
    nodes = {"left": [], "right": [], "feature": [], "threshold": [], "default_left": [],
             "value": [], "cover": [], "id": [], "categories": {}}
    stack = [(root, None, None)]
    while stack:
        node, parent, side = stack.pop()
        n = len(nodes["id"])
        if n >= MAX_NODES_PER_TREE:
            raise ModelFormatError(f"{where}: more than {MAX_NODES_PER_TREE} nodes")
        if not isinstance(node, dict):
            raise ModelFormatError(f"{where}: a node is not an object")
        if parent is not None:
            nodes[side][parent] = n
        at = f"{where}, node {node.get('nodeid', '?')}"
        nid = node.get("nodeid")
        if isinstance(nid, bool) or not isinstance(nid, int):
            raise ModelFormatError(f"{at}: nodeid is not an integer")
        for k in ("left", "right", "feature", "threshold", "default_left", "value", "cover"):
            nodes[k].append(-1 if k in ("left", "right") else 0)
        nodes["id"].append(nid)
        cover = node.get("cover")
        nodes["cover"][n] = float(cover) if isinstance(cover, (int, float)) else np.nan
        if "leaf" in node:
            unknown = set(node) - _LEAF
            if unknown:
                raise ModelFormatError(f"{at}: a leaf holds {sorted(unknown)}, which this "
                                       f"reader does not know (vector leaves are not read)")
            nodes["value"][n] = _float32(node["leaf"], f"{at}: leaf")
            continue
        unknown = set(node) - _INNER
        if unknown:
            raise ModelFormatError(f"{at}: a split holds {sorted(unknown)}, which this reader "
                                   f"does not know")
        for key in ("split", "split_condition", "yes", "no", "missing", "children"):
            if key not in node:
                raise ModelFormatError(f"{at}: a split without {key!r}")
        nodes["feature"][n] = _feature(node["split"], names, at)
        cond = node["split_condition"]
        if isinstance(cond, list):          # a categorical split
            if any(isinstance(c, bool) or not isinstance(c, int) or not 0 <= c <= MAX_CATEGORY
                   for c in cond):
                raise ModelFormatError(f"{at}: categories {cond!r:.60} are not integers in "
                                       f"[0, {MAX_CATEGORY}]")
            nodes["categories"][n] = cond
        else:
            cond = np.float32(_float32(cond, f"{at}: split_condition"))
            # x < cond in float32: x <= the float32 below it
            nodes["threshold"][n] = float(np.nextafter(cond, np.float32(-np.inf)))
        children = node["children"]
        if not isinstance(children, list) or len(children) != 2:
            raise ModelFormatError(f"{at}: a split's children are not two nodes")
        by_id = {c.get("nodeid"): c for c in children
                 if isinstance(c, dict) and type(c.get("nodeid")) is int}
        yes, no, missing = node["yes"], node["no"], node["missing"]
        if (any(type(v) is not int for v in (yes, no, missing)) or yes not in by_id
                or no not in by_id or yes == no or missing not in (yes, no)):
            raise ModelFormatError(f"{at}: yes={yes!r}, no={no!r}, missing={missing!r} do not "
                                   f"name its two children")
        nodes["default_left"][n] = missing == yes and not nan_to_no
        stack.append((by_id[no], n, "right"))
        stack.append((by_id[yes], n, "left"))
    return nodes


def load_xgboost_dump(source, *, base_score: float | None = None,
                      objective: str | None = None, num_class: int | None = None,
                      feature_names=None, n_features: int | None = None,
                      nan_to_no: bool = False) -> Ensemble:
    """The ensemble of an XGBoost JSON dump (text, bytes, a list of tree objects or of the
    strings ``Booster.get_dump`` returns).

    ``base_score`` and ``objective``: the model's, as XGBoost's configuration gives them
    (``base_score`` in the objective's output space, as ``save_config`` shows it: one value,
    or one a class where XGBoost 3 keeps a vector); without
    them, the sum of the trees from 0 with no transform. ``num_class``: for a
    ``multi:*`` objective, the trees are the classes' in turn. ``feature_names``: the names
    a dump written with a feature map splits on (else ``f<k>`` is column ``k``);
    ``n_features``: the columns a row has (default: the names', else the largest column
    read, plus one). ``nan_to_no``: NaN goes to ``no`` at every split, whatever ``missing``
    says, as the Elasticsearch and OpenSearch LTR plugins' evaluator sends it (their
    ``NaiveAdditiveDecisionTree``: left where ``threshold > value``)."""
    trees_raw = _trees(source)
    names = None
    if feature_names is not None:
        feature_names = tuple(str(n) for n in feature_names)
        names = {n: i for i, n in enumerate(feature_names)}
    if objective is not None and objective not in OBJECTIVES:
        raise ModelFormatError(f"XGBoost dump: objective {objective!r} is not supported "
                               f"(supported: {', '.join(sorted(OBJECTIVES))})")
    margin_kind, transform = OBJECTIVES.get(objective or "", ("identity", "identity"))
    k = int(num_class or 1)
    if (objective or "").startswith("multi:") != (k > 1):
        raise ModelFormatError("XGBoost dump: num_class goes with a multi:* objective, and a "
                               "multi:* objective with num_class")
    if len(trees_raw) % k:
        raise ModelFormatError(f"XGBoost dump: {len(trees_raw)} trees are no whole rounds of "
                               f"{k} classes")
    parsed = [_tree(t, raw, names, nan_to_no) for t, raw in enumerate(trees_raw)]
    used = max((max(p["feature"]) for p in parsed), default=0)
    width = n_features or (len(feature_names) if feature_names is not None else used + 1)
    if used >= width:
        raise ModelFormatError(f"XGBoost dump: its trees read column {used}, past the "
                               f"{width} features given")
    built = []
    for t, p in enumerate(parsed):
        n = len(p["id"])
        cover = np.asarray(p["cover"])
        built.append(build_tree(
            left=p["left"], right=p["right"], root=0, feature=p["feature"],
            threshold=p["threshold"], default_left=p["default_left"],
            missing_type=[MISSING_NAN] * n,
            is_categorical=[j in p["categories"] for j in range(n)],
            categories=p["categories"],
            value=p["value"], source_id=p["id"],
            cover=None if np.isnan(cover).any() else cover, n_features=width,
            where=f"XGBoost dump: tree {t}"))
    scores = np.atleast_1d(np.asarray(0.0 if base_score is None else base_score, np.float64))
    if scores.ndim != 1 or scores.shape[0] not in (1, k):
        raise ModelFormatError(f"XGBoost dump: base_score has {scores.size} values for {k} "
                               f"output(s)")
    base = np.array([0.0 if base_score is None else xgb_prob_to_margin(margin_kind, float(v))
                     for v in np.broadcast_to(scores, (k,))])
    if not np.isfinite(base).all():
        raise ModelFormatError(f"XGBoost dump: base_score {scores.tolist()} has no finite "
                               f"margin for {objective}")
    return Ensemble(
        trees=built, tree_group=np.arange(len(built)) % k, n_outputs=k, n_features=width,
        family="xgboost", base_score=base, transform=transform,
        feature_names=feature_names, trees_per_iteration=k,
        source={"library": "xgboost", "format": "json dump", "objective": objective})
