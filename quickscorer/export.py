"""Models written for other engines: any XGBoost model (legacy binary, UBJSON, JSON or a
``Booster``) as XGBoost JSON (:func:`to_xgboost_json`), and any model as RankLib's text
(:func:`to_ranklib`) and Solr LTR's ``MultipleAdditiveTreesModel`` JSON (:func:`to_solr_ltr`),
each checked by :func:`check_export`.

XGBoost 2.1 and later no longer read the legacy binary format that ``save_model("x.model")``
wrote until 2.0; :func:`to_xgboost_json` turns such a file into the JSON model that today's
XGBoost loads and scores identically (and that quickscorer reads with the same scores). The
model is checked by loading it first, so a damaged file raises :class:`ModelFormatError`
instead of producing a broken JSON file.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ModelFormatError
from .importers.xgboost import DELETED_SPLIT_INDEX, load_xgboost, xgboost_document
from .importers.xgboost_dump import load_xgboost_dump
from .ir.float32 import float32_below
from .loading import load, load_ensemble
from .model import Model

__all__ = ["check_export", "to_lightgbm_dump", "to_ranklib", "to_solr_ltr", "to_xgboost_dump",
           "to_xgboost_json"]

#: a legacy binary model is written in the JSON layout of this XGBoost release (fields and
#: meanings as its JSON writer has them; base_score in output space, as from 1.0 on)
_JSON_LAYOUT_VERSION = [2, 0, 0]


def to_xgboost_json(source: Any, path: str | os.PathLike | None = None) -> str:
    """The XGBoost JSON text of an XGBoost model; written to ``path`` too when given.

    Parameters
    ----------
    source : path, bytes, dict or xgboost.Booster
        Anything :func:`quickscorer.load` reads as an XGBoost model: a legacy binary file
        (XGBoost 0.x to 2.0), UBJSON, JSON, a parsed document or a ``Booster``.
    path : str or os.PathLike, optional
        Where to write the JSON (UTF-8).

    Returns
    -------
    str
        The JSON document. Floats are written with the digits that read back as the same
        float32, so the scores do not change.

    Raises
    ------
    ModelFormatError
        If ``source`` is not a valid XGBoost model.
    """
    document, fmt = xgboost_document(source)
    ensemble = load_xgboost(document)     # validates every field the scores depend on
    document = _plain(document)
    _fix_deleted_counts(document)
    if fmt == "legacy binary":
        document["version"] = list(_JSON_LAYOUT_VERSION)
        step = ensemble.trees_per_iteration
        _gbtree_model(document)["iteration_indptr"] = list(range(0, ensemble.n_trees + 1, step))
    text = json.dumps(document, separators=(",", ":"), allow_nan=False)
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text


def _plain(obj: Any) -> Any:
    """A copy of the document with numpy arrays and scalars as JSON lists and numbers."""
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind == "f":
            # float32 values as the shortest float64 text that reads back to them
            return [float(v) for v in obj.astype(np.float64)]
        if obj.dtype.kind == "b":
            return [int(v) for v in obj]
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def _fix_deleted_counts(document: dict) -> None:
    """``tree_param.num_deleted`` = the nodes marked deleted (XGBoost 1.0's JSON writes 0, which
    today's XGBoost refuses)."""
    for tree in _gbtree_model(document)["trees"]:
        left = np.asarray(tree["left_children"])
        index = np.asarray(tree["split_indices"])
        dleft = np.asarray(tree["default_left"]) != 0
        marked = int(((left == -1) & (index == DELETED_SPLIT_INDEX) & dleft).sum())
        param = tree.setdefault("tree_param", {})
        param["num_deleted"] = str(marked)


def _gbtree_model(document: dict) -> dict:
    gb = document["learner"]["gradient_booster"]
    return gb["model"] if "model" in gb else gb["gbtree"]["model"]


def to_ranklib(source: Any, path: str | os.PathLike | None = None) -> str:
    """The RankLib text of a model (anything :func:`quickscorer.load` reads), which RankLib
    and the LTR plugins' ``model/ranklib`` load; written to ``path`` too when given.

    Each tree in order, its thresholds written as the largest float32 at or below the
    source's, so that every float32 row takes, at every node, the branch it takes in the
    source model (RankLib compares ``float(value) <= threshold``); the leaves as float32
    values; DART's tree weights as the trees' weights; the base score a tree of one leaf
    first; a model that averages its trees (a random forest) one RankLib bag a tree. What
    RankLib cannot express is not written and is said here: it sends NaN right where the
    source has a default side, reads a value LightGBM treats as missing (zero, by its missing
    type) as a number, and sums in float (``quickscorer convert --check`` reports the rows
    where decisions or scores differ).

    Raises
    ------
    ModelFormatError
        A model of several outputs, categorical splits or linear trees, which RankLib's trees
        do not have.
    """
    ens = _exportable(load_ensemble(source), "RankLib")
    weights = (np.ones(ens.n_trees) if ens.tree_weight is None else ens.tree_weight)
    trees = [_ranklib_tree(tree, float(np.float32(w))).replace("{id}", str(i + 1), 1)
             for i, (tree, w) in enumerate(zip(ens.trees, weights))]
    base = float(np.float32(ens.base_score[0]))
    leading = [f'\t<tree id="0" weight="1.0">\n\t\t<split>\n\t\t\t<output> {base!r} '
               f'</output>\n\t\t</split>\n\t</tree>\n'] if base != 0.0 else []
    bags = ens.average_output
    head = (f"## {'Random Forests' if bags else 'LambdaMART'}\n"
            f"## Written by quickscorer from a {ens.source.get('library')} model of "
            f"{ens.n_trees} trees\n\n")
    if bags:                                   # one bag a tree: their mean, as the source's
        body = "".join(f"<ensemble>\n{t}</ensemble>\n" for t in leading + trees)
    else:
        body = "<ensemble>\n" + "".join(leading + trees) + "</ensemble>\n"
    text = head + body
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text


def _exportable(ens, engine: str):
    """``ens``, or a ModelFormatError naming what the engine's trees do not have."""
    if ens.n_outputs != 1:
        raise ModelFormatError(f"{engine}'s trees give one score a row; this model has "
                               f"{ens.n_outputs} outputs")
    if ens.has_categorical:
        raise ModelFormatError(f"{engine}'s splits are numeric: this model has categorical "
                               f"splits")
    if ens.has_linear:
        raise ModelFormatError(f"{engine}'s leaves are values: this model has linear trees")
    if ens.ctr is not None:
        raise ModelFormatError(f"{engine} reads the row's features alone: this model computes "
                               f"CTR features first")
    if ens.leaf_sum is not None or ens.bag_offsets is not None:
        if engine != "RankLib" or ens.bag_offsets is not None:
            raise ModelFormatError(f"a {ens.source.get('library')} model's arithmetic is not "
                                   f"{engine}'s")
    return ens


def _ranklib_tree(tree, weight: float) -> str:
    """One tree as RankLib writes it: ``<split>`` nests, features from 1, thresholds the
    largest float32 at or below the source's."""
    thresholds = float32_below(np.asarray(tree.threshold, np.float64)).astype(np.float64)
    values = np.asarray(tree.leaf_value, np.float64).astype(np.float32).astype(np.float64)
    out = [f'\t<tree id="{{id}}" weight="{weight!r}">\n']

    def node(ref: int, depth: int, pos: str) -> None:
        pad = "\t" * depth
        out.append(f"{pad}<split{pos}>\n")
        if ref < 0:
            out.append(f"{pad}\t<output> {float(values[~ref])!r} </output>\n")
        else:
            out.append(f"{pad}\t<feature> {int(tree.feature[ref]) + 1} </feature>\n")
            out.append(f"{pad}\t<threshold> {float(thresholds[ref])!r} </threshold>\n")
            node(int(tree.left[ref]), depth + 1, ' pos="left"')
            node(int(tree.right[ref]), depth + 1, ' pos="right"')
        out.append(f"{pad}</split>\n")

    node(0 if tree.n_internal else ~0, 2, "")
    out.append("\t</tree>\n")
    return "".join(out)


def check_export(model, exported, X, format: str = "ranklib") -> dict:
    """Where the exported model (a RankLib text or a Solr LTR document, ``format``, read as
    that engine scores it) and ``model`` part on rows ``X``: ``rows``, ``decisions`` (rows
    whose exit leaf differs in some tree), ``scores`` (rows whose score differs),
    ``max_abs`` and ``max_rel`` (the largest score difference, absolute and relative to the
    source's score)."""
    if format == "ranklib":
        target = load(exported, format="ranklib", n_features=model.n_features)
    elif format == "xgboost-dump":          # as the LTR plugins evaluate it: NaN to "no"
        target = Model(load_xgboost_dump(exported, n_features=model.n_features,
                                         feature_names=model.feature_names, nan_to_no=True))
    else:          # a Solr document, a LightGBM dump: detected from the content
        target = load(exported, format="solr-ltr" if format == "solr-ltr" else None)
    rows = model.request(X).rows
    mine = model.predict_leaf(rows)
    theirs = target.predict_leaf(rows)
    theirs = theirs[:, theirs.shape[1] - mine.shape[1]:]   # past the base score's tree
    if model.ensemble.average_output:       # the trees' means (the engine's, too)
        source = np.asarray(model.predict(rows), np.float64).reshape(-1)
        got = np.asarray(target.predict(rows), np.float64).reshape(-1)
    else:                                   # the margins: the engines' transforms differ
        source = np.asarray(model.predict_raw(rows), np.float64).reshape(-1)
        got = np.asarray(target.predict_raw(rows), np.float64).reshape(-1)
    diff = np.abs(got - source)
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(source != 0, diff / np.abs(source), np.where(diff > 0, np.inf, 0.0))
    return {"rows": int(rows.shape[0]),
            "decisions": int(np.count_nonzero((mine != theirs).any(axis=1))),
            "scores": int(np.count_nonzero(diff > 0)),
            "max_abs": float(diff.max(initial=0.0)), "max_rel": float(rel.max(initial=0.0))}


def _solr_threshold(target: np.float32) -> float:
    """The float32 ``a`` Solr reads so that ``float(a) + 1e-6f`` is ``target`` (Solr adds
    NODE_SPLIT_SLACK to every threshold), or where no float does, the largest whose sum is
    below it (the float32 rows between then go the other way: ``--check`` counts them)."""
    slack = np.float32(1e-6)
    a = np.float32(target - slack)
    with np.errstate(over="ignore"):
        while np.float32(a + slack) > target:
            a = np.nextafter(a, np.float32(-np.inf))
        while np.float32(np.nextafter(a, np.float32(np.inf)) + slack) <= target:
            a = np.nextafter(a, np.float32(np.inf))
    return float(a)


def to_solr_ltr(source: Any, path: str | os.PathLike | None = None,
                name: str = "quickscorer") -> str:
    """The Solr LTR ``MultipleAdditiveTreesModel`` JSON of a model (anything
    :func:`quickscorer.load` reads), for a collection's model store; written to ``path`` too
    when given. The features are named as the model names them (``f<k>`` where it does not);
    the thresholds are written so that Solr's (the text as a float, plus 1e-6 in float) is the
    largest float32 at or below the source's, so that every float32 row takes the source's
    branch wherever such a text exists; leaves as float32 values, DART's weights as the
    trees' weights, the base score a tree of one leaf. Solr sends NaN right and sums in float,
    as RankLib does (``quickscorer convert --check``). Refused as :func:`to_ranklib` refuses,
    and a model that averages its trees (Solr adds them)."""
    ens = _exportable(load_ensemble(source), "Solr")
    if ens.average_output:
        raise ModelFormatError("Solr adds its trees: this model averages them (a random "
                               "forest)")
    names = list(ens.feature_names) if ens.feature_names else [f"f{j}"
                                                              for j in range(ens.n_features)]
    weights = np.ones(ens.n_trees) if ens.tree_weight is None else ens.tree_weight
    trees = []
    base = float(np.float32(ens.base_score[0]))
    if base != 0.0:
        trees.append({"weight": "1.0", "root": {"value": repr(base)}})
    for tree, w in zip(ens.trees, weights):
        thresholds = float32_below(np.asarray(tree.threshold, np.float64))
        values = np.asarray(tree.leaf_value, np.float64).astype(np.float32)

        def node(ref: int) -> dict:
            if ref < 0:
                return {"value": repr(float(values[~ref]))}
            return {"feature": names[int(tree.feature[ref])],
                    "threshold": repr(_solr_threshold(thresholds[ref])),
                    "left": node(int(tree.left[ref])), "right": node(int(tree.right[ref]))}
        trees.append({"weight": repr(float(np.float32(w))),
                      "root": node(0 if tree.n_internal else ~0)})
    doc = {"class": "org.apache.solr.ltr.model.MultipleAdditiveTreesModel", "name": name,
           "features": [{"name": n} for n in names], "params": {"trees": trees}}
    text = json.dumps(doc, indent=1)
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text


def _names(ens) -> list[str]:
    return list(ens.feature_names) if ens.feature_names else [f"f{j}"
                                                             for j in range(ens.n_features)]


def to_xgboost_dump(source: Any, path: str | os.PathLike | None = None) -> str:
    """XGBoost's JSON dump of a model (anything :func:`quickscorer.load` reads): a JSON array
    of ``get_dump(dump_format="json")``'s tree objects, what the LTR plugins load as
    ``model/xgboost+json``; written to ``path`` too when given. Each split's
    ``split_condition`` is the float32 above the largest float32 at or below the source's
    threshold (XGBoost goes to ``yes`` where ``value < split_condition``), so every float32
    row takes the source's branch; NaN goes to the source's default side (``missing``); the
    base score is a first tree of one leaf, so the dump's sum is the model's margin. LightGBM's
    rule for a value its missing type reads as missing (zero, or NaN as zero) is not XGBoost's,
    and its double leaves sum in float32 (``--check``). Refused as :func:`to_ranklib`."""
    ens = _exportable(load_ensemble(source), "An XGBoost dump")
    trees = []
    base = float(np.float32(ens.base_score[0]))
    if base != 0.0:
        trees.append({"nodeid": 0, "leaf": base})
    names = _names(ens)
    weights = np.ones(ens.n_trees) if ens.tree_weight is None else ens.tree_weight
    for tree, w in zip(ens.trees, weights):
        below = float32_below(np.asarray(tree.threshold, np.float64))
        with np.errstate(over="ignore"):
            cond = np.nextafter(below, np.float32(np.inf))
        values = (np.asarray(tree.leaf_value, np.float64) * float(w)).astype(np.float32)
        counter = iter(range(1 << 30))

        def node(ref: int, depth: int) -> dict:
            nid = next(counter)
            if ref < 0:
                return {"nodeid": nid, "leaf": float(values[~ref])}
            out = {"nodeid": nid, "depth": depth, "split": names[int(tree.feature[ref])],
                   "split_condition": float(cond[ref])}
            kids = [node(int(tree.left[ref]), depth + 1), node(int(tree.right[ref]), depth + 1)]
            yes, no = kids[0]["nodeid"], kids[1]["nodeid"]
            out.update(yes=yes, no=no, missing=yes if tree.default_left[ref] else no,
                       children=kids)
            return out
        trees.append(node(0 if tree.n_internal else ~0, 0))
    text = json.dumps(trees)
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text


def to_lightgbm_dump(source: Any, path: str | os.PathLike | None = None) -> str:
    """LightGBM's ``dump_model()`` JSON of a model (anything :func:`quickscorer.load` reads),
    as Vespa takes LightGBM models; written to ``path`` too when given. A LightGBM model's
    own dump is exact; another's thresholds are written as doubles a row is compared with
    (``value <= threshold``), NaN going to the default side (``missing_type`` NaN), and its
    base score a first tree of one leaf (LightGBM's dump has no base). Refused as
    :func:`to_ranklib`, and for a model that averages its trees."""
    ens = _exportable(load_ensemble(source), "A LightGBM dump")
    names = _names(ens)
    trees = []
    base = float(ens.base_score[0])
    if base != 0.0:
        trees.append({"num_leaves": 1, "num_cat": 0, "shrinkage": 1,
                      "tree_structure": {"leaf_value": base}})
    weights = np.ones(ens.n_trees) if ens.tree_weight is None else ens.tree_weight
    for tree, w in zip(ens.trees, weights):
        values = np.asarray(tree.leaf_value, np.float64) * float(w)
        missing = np.asarray(tree.missing_type)
        kinds = ("None", "Zero", "NaN")
        splits = iter(range(1 << 30))

        def node(ref: int) -> dict:
            if ref < 0:
                return {"leaf_index": int(~ref), "leaf_value": float(values[~ref])}
            return {"split_index": next(splits), "split_feature": int(tree.feature[ref]),
                    "threshold": float(tree.threshold[ref]), "decision_type": "<=",
                    "default_left": bool(tree.default_left[ref]),
                    "missing_type": kinds[int(missing[ref])] if ens.family == "lightgbm"
                    else "NaN",
                    "left_child": node(int(tree.left[ref])),
                    "right_child": node(int(tree.right[ref]))}
        trees.append({"num_leaves": int(tree.n_leaves), "num_cat": 0, "shrinkage": 1,
                      "tree_structure": node(0 if tree.n_internal else ~0)})
    for i, t in enumerate(trees):
        t["tree_index"] = i
    transform = {"identity": "regression", "sigmoid": "binary sigmoid:"
                 + repr(float(ens.transform_params.get("sigmoid", 1.0)))}
    doc = {"name": "tree", "version": "v4", "num_class": 1, "num_tree_per_iteration": 1,
           "label_index": 0, "max_feature_idx": ens.n_features - 1,
           "objective": (ens.source.get("objective") if ens.family == "lightgbm"
                         and ens.source.get("objective") else
                         transform.get(ens.transform, "regression")),
           "average_output": bool(ens.average_output), "feature_names": names,
           "tree_info": trees}
    text = json.dumps(doc)
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text
