"""CatBoost models from their JSON export (``save_model(path, format="json")``).

The scoring rules (docs/semantics.md, "CatBoost"):

* a row is read as float32; a split on float feature ``f`` is **true** (CatBoost's right, a set
  bit of an oblivious tree's leaf index) where ``float32(x) > border``, ``border`` a float32.
  The neutral node goes left where it is false, ``x <= t'`` with ``t'`` the float64 rounding
  boundary of ``border`` (:func:`~quickscorer.ir.float32.float32_boundary`), so float64
  rows go the way their float32 rounding goes;
* NaN is true where the feature's ``nan_value_treatment`` is ``AsTrue`` (the ``Max`` mode) and
  false otherwise (``Min``; ``AsIs``, where every comparison with NaN is false);
* an oblivious tree of depth ``D`` tests ``splits[d]`` for bit ``d`` of its leaf index; as a
  neutral tree it tests ``splits[D - 1]`` at the root, so its leaves left to right are the leaf
  indexes ``0 .. 2**D - 1``; a non-symmetric tree is taken node by node;
* output ``k`` is the sum, in float64 and tree order from 0.0, of the trees' values for ``k``,
  then ``scale * sum + bias[k]``: the bias is added after the trees, as a last iteration of
  one-leaf trees, and a scale other than 1 multiplies every leaf value instead (exact where it
  is a power of two);
* the prediction: ``Poisson`` and ``Tweedie`` the exponent of the raw value, ``Logloss`` and
  ``CrossEntropy`` the sigmoid (the probability of class 1), ``MultiClass`` the softmax,
  ``MultiClassOneVsAll`` a sigmoid per class, every other loss (ranking losses included) the raw
  value.

* a one-hot split on categorical feature ``f`` is true where the row's category is the one
  the split names. CatBoost names it by a 32-bit hash of the category's text; the JSON carries
  each training category's text beside its hash (``cat_features_hash``) when ``save_model``
  was given the training pool, and the importer maps every split back to that text (without
  it, to the integer from 0 to ``INTEGER_CATEGORIES`` of that hash, if one is:
  :func:`category_hash`). A feature
  whose texts are all integers from 0 to ``INTEGER_CATEGORIES`` (CatBoost's text of an
  integer category) is read as those integers: a row holds the integer. Any other is a text
  column, its categories numbered in sorted order (``Ensemble.category_labels``): a DataFrame
  holds the texts (or integers), a numeric row the number. The neutral node lists the split's
  category on its left, the true side; NaN and every other value go right.

* a CTR split compares a CTR feature, a number computed from the row's categories and the
  model's tables of training statistics (``ctr_data``), with a float32 border; the importer
  builds that stage (``ir/ctr.py``: :meth:`Features.ctr_stage`), whose columns follow the
  inputs. It needs the categories' texts, or integer categories it recovers from the tables'
  keys (:meth:`Features.ctr_categories`). A ``.cbm`` file's CTR features and tables become
  the JSON export's (:mod:`~quickscorer.importers.catboost_cbm`).

Text and embedding features are refused with the split that uses them, and so is a one-hot
split whose category text is not in the file and whose hash is no small integer's.
"""
from __future__ import annotations

import json
import math
import os
import re
import tempfile
from typing import Any

import numpy as np

from ..errors import ModelFormatError
from ..ir.ensemble import MISSING_NAN, Ensemble, build_tree, constant_tree
from ..ir.float32 import float32_boundary
from .catboost_cbm import cbm_document, looks_like_cbm
from .catboost_features import MAX_DEPTH, Features, all_splits, ctr_tables, get_field, number

_TRANSFORMS = {"Poisson": "exp", "Tweedie": "exp", "Logloss": "sigmoid",
               "CrossEntropy": "sigmoid", "MultiClass": "softmax",
               "MultiClassOneVsAll": "ova_sigmoid"}
_REFUSED_LOSSES = {"RMSEWithUncertainty": "its prediction is a mean and a variance"}


def looks_like_catboost(raw: bytes) -> bool:
    """Whether ``raw`` starts like a CatBoost JSON model (its first key, cheap: a model with
    CTR features starts with their tables)."""
    head = bytes(raw[:256]).lstrip(b"\xef\xbb\xbf \t\r\n")
    return head.startswith(b"{") and (b'"features_info"' in head or b'"ctr_data"' in head)


def is_catboost_model(obj) -> bool:
    """Whether ``obj`` is a CatBoost model object (by its class's module)."""
    return type(obj).__module__.startswith("catboost")


def _model_json(obj) -> dict:
    """A CatBoost model object's JSON export, parsed."""
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        obj.save_model(path, format="json")
        with open(path, "rb") as fh:
            return _parse(fh.read())
    finally:
        os.unlink(path)


def _parse(data: bytes | str) -> dict:
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise ModelFormatError(f"not a readable CatBoost JSON model: {exc}") from None
    if not isinstance(doc, dict):
        raise ModelFormatError("a CatBoost JSON model is an object")
    return doc


def load_catboost(source: Any) -> Ensemble:
    """The neutral ensemble of a CatBoost model: its JSON export's text or bytes (or a mapped
    file), the parsed dict, a ``.cbm`` file's bytes, or a CatBoost model object (exported to
    JSON through CatBoost itself)."""
    if is_catboost_model(source):
        doc = _model_json(source)
    elif isinstance(source, dict):
        doc = source
    elif not isinstance(source, str) and looks_like_cbm(source):
        return _ensemble(cbm_document(bytes(source)), "cbm")
    else:
        doc = _parse(bytes(source) if not isinstance(source, str) else source)
    return _ensemble(doc)


def _version(info: dict) -> str | None:
    text = info.get("catboost_version_info") if isinstance(info, dict) else None
    m = re.search(r"release (\d+(?:\.\d+)+)", text or "") or re.search(
        r"tags/v(\d+(?:\.\d+)+)", text or "")
    return m.group(1) if m else None


def _loss(info: dict) -> str:
    params = info.get("params") if isinstance(info, dict) else None
    if isinstance(params, str):
        try:
            params = json.loads(params)
        except ValueError:
            params = None
    loss = params.get("loss_function") if isinstance(params, dict) else None
    if isinstance(loss, dict):
        loss = loss.get("type")
    return loss if isinstance(loss, str) else "RMSE"


#: The fields of each object of a CatBoost JSON model that this importer reads or knows to
#: change no score (training statistics, names, the training's parameters in ``model_info``),
#: per place. A field outside them may change a score, so a model holding one is refused by
#: name rather than scored as if it were absent.
_KNOWN_FIELDS = {
    "model": frozenset({"features_info", "oblivious_trees", "trees", "scale_and_bias",
                        "model_info", "ctr_data"}),
    # text and embedding features: refused by the split that uses one
    "features_info": frozenset({"float_features", "categorical_features", "ctrs",
                                "cat_features_hash", "text_features", "embedding_features"}),
    "float_features[]": frozenset({"borders", "feature_id", "feature_index", "feature_name",
                                   "flat_feature_index", "has_nans", "nan_value_treatment"}),
    "categorical_features[]": frozenset({"feature_id", "feature_index", "feature_name",
                                         "flat_feature_index", "values"}),
    "ctrs[]": frozenset({"borders", "ctr_type", "elements", "identifier", "prior_denomerator",
                         "prior_numerator", "scale", "shift", "target_border_idx"}),
    "ctr_data.*": frozenset({"counter_denominator", "hash_map", "hash_stride"}),
    "oblivious_trees[]": frozenset({"splits", "leaf_values", "leaf_weights"}),
    "split": frozenset({"border", "cat_feature_index", "ctr_target_border_idx",
                        "float_feature_index", "split_index", "split_type", "value"}),
    "trees[] node": frozenset({"split", "left", "right", "value", "weight"}),
}


def _refuse_unknown(obj: Any, place: str, shown: str, version: str | None) -> None:
    """Raise ModelFormatError naming the first field of ``obj`` (at ``place`` of
    :data:`_KNOWN_FIELDS`, shown as ``shown``) this importer does not know."""
    if not isinstance(obj, dict) or obj.keys() <= _KNOWN_FIELDS[place]:
        return
    field = sorted(str(k) for k in obj.keys() - _KNOWN_FIELDS[place])[0]
    raise ModelFormatError(
        f"CatBoost model written by CatBoost {version or '(no version recorded)'}: field "
        f"{field[:60]!r} of {shown} is not one this importer knows, and it may change the "
        f"scores; refusing the model rather than scoring it as if the field were absent")


def _refuse_unknown_fields(doc: dict, version: str | None) -> None:
    """Every object of the model whose fields can change a score, checked against
    :data:`_KNOWN_FIELDS`."""
    _refuse_unknown(doc, "model", "the model", version)
    info = doc.get("features_info")
    if isinstance(info, dict):
        _refuse_unknown(info, "features_info", "features_info", version)
        for key in ("float_features", "categorical_features", "ctrs"):
            items = info.get(key)
            for i, item in enumerate(items if isinstance(items, list) else ()):
                _refuse_unknown(item, f"{key}[]", f"features_info.{key}[{i}]", version)
    ctr_data = doc.get("ctr_data")
    if isinstance(ctr_data, dict):
        for key, table in ctr_data.items():
            _refuse_unknown(table, "ctr_data.*", f"ctr_data[{str(key)[:40]!r}]", version)
    trees = doc.get("oblivious_trees")
    for t, tree in enumerate(trees if isinstance(trees, list) else ()):
        _refuse_unknown(tree, "oblivious_trees[]", f"oblivious_trees[{t}]", version)
        splits = tree.get("splits") if isinstance(tree, dict) else None
        for d, split in enumerate(splits if isinstance(splits, list) else ()):
            _refuse_unknown(split, "split", f"oblivious_trees[{t}].splits[{d}]", version)
    trees = doc.get("trees")
    for t, tree in enumerate(trees if isinstance(trees, list) else ()):
        stack = [tree]
        while stack:                    # depth is bounded where the tree is read
            node = stack.pop()
            if not isinstance(node, dict):
                continue
            _refuse_unknown(node, "trees[] node", f"a node of trees[{t}]", version)
            _refuse_unknown(node.get("split"), "split", f"a split of trees[{t}]", version)
            stack.extend(node[k] for k in ("left", "right") if k in node)


def _ensemble(doc: dict, file_format: str = "json") -> Ensemble:
    if file_format == "json":        # a .cbm file's document is the decoder's own
        _refuse_unknown_fields(doc, _version(doc.get("model_info", {})))
    info = get_field(doc, "features_info", dict, "the model")
    feats = Features(info)
    feats.read_ctrs(info, doc, all_splits(doc))
    tables = ctr_tables(doc) if feats.ctr_column else {}
    n_features = feats.n_features + len(feats.ctr_column)
    model_info = doc.get("model_info", {})
    loss = _loss(model_info)
    if loss in _REFUSED_LOSSES:
        raise ModelFormatError(f"CatBoost loss {loss}: not supported ({_REFUSED_LOSSES[loss]})")
    scale, bias = 1.0, [0.0]
    if "scale_and_bias" in doc:
        sb = doc["scale_and_bias"]
        if not isinstance(sb, list) or len(sb) != 2:
            raise ModelFormatError("scale_and_bias: expected [scale, bias]")
        scale = number(sb[0], "scale_and_bias")
        bias = sb[1] if isinstance(sb[1], list) else [sb[1]]
        bias = [number(b, "scale_and_bias") for b in bias]
    if "oblivious_trees" in doc:
        trees = get_field(doc, "oblivious_trees", list, "the model")
        dim = _dimension(trees, bias, oblivious=True)
        nodes = [_oblivious(t, f"tree {i}", feats, dim) for i, t in enumerate(trees)]
    elif "trees" in doc:
        trees = get_field(doc, "trees", list, "the model")
        dim = _dimension(trees, bias, oblivious=False)
        nodes = [_non_symmetric(t, f"tree {i}", feats, dim) for i, t in enumerate(trees)]
    else:
        raise ModelFormatError("the model has neither 'oblivious_trees' nor 'trees'")
    if not nodes:
        raise ModelFormatError("the model has no trees")
    if len(bias) == 1 and dim > 1:
        bias = bias * dim
    if len(bias) != dim:
        raise ModelFormatError(f"scale_and_bias: {len(bias)} bias values for {dim} outputs")
    if feats.ctr_column:
        feats.ctr_categories(tables)
    numbers = feats.category_numbers()
    ctr = feats.ctr_stage(tables, numbers) if feats.ctr_column else None
    out, groups = [], []
    for i, (fields, values) in enumerate(nodes):
        fields["categories"] = {n: [numbers[int(fields["feature"][n])][text]]
                                for n, text in fields["categories"].items()}
        for k in range(dim):
            v = values[:, k] if scale == 1.0 else values[:, k] * scale
            out.append(build_tree(**fields, value=v, n_features=n_features,
                                  where=f"tree {i}"))
            groups.append(k)
    with_bias = any(b != 0.0 for b in bias)
    if with_bias:
        # CatBoost adds the bias after the trees: a last iteration of one-leaf trees, which a
        # range of iterations from the first keeps (as CatBoost's ntree_end does; a range
        # from ntree_start > 0 has no bias)
        for k in range(dim):
            out.append(constant_tree(bias[k], n_features, "bias"))
            groups.append(k)
    transform = _TRANSFORMS.get(loss, "identity")
    if (transform == "softmax" and dim == 1) or (transform == "sigmoid" and dim != 1):
        raise ModelFormatError(f"CatBoost loss {loss} with {dim} outputs")
    names = None
    if feats.names and len(feats.names) == feats.n_features:
        names = tuple(feats.names[j] for j in range(feats.n_features))
    source = {"library": "catboost", "version": _version(model_info), "objective": loss,
              "format": file_format}
    return Ensemble(trees=out, tree_group=np.asarray(groups, np.int32), n_outputs=dim,
                    n_features=n_features, family="plain", base_score=np.zeros(dim),
                    transform=transform,
                    transform_params={"sigmoid": 1.0} if "sigmoid" in transform else {},
                    trees_per_iteration=dim, feature_names=names, source=source,
                    category_labels=numbers or None, ctr=ctr, bias_iteration=with_bias)


def _dimension(trees: list, bias: list, oblivious: bool) -> int:
    """Outputs a leaf holds: from the first tree's leaves (every tree is checked against it)."""
    if not trees:
        return max(len(bias), 1)
    t = trees[0]
    if oblivious:
        values = get_field(t, "leaf_values", list, "tree 0")
        splits = get_field(t, "splits", list, "tree 0")
        leaves = 1 << len(splits) if len(splits) <= MAX_DEPTH else 1
        if not values or len(values) % leaves:
            raise ModelFormatError(f"tree 0: {len(values)} leaf values for {leaves} leaves")
        return len(values) // leaves
    node = t
    for _ in range(MAX_DEPTH + 1):
        if not isinstance(node, dict):
            break
        if "value" in node:
            v = node["value"]
            return len(v) if isinstance(v, list) and v else 1
        node = node.get("left")
    raise ModelFormatError("tree 0: no leaf found along its left edge")


def _oblivious(t, where: str, feats: Features, dim: int):
    splits = get_field(t, "splits", list, where)
    values = get_field(t, "leaf_values", list, where)
    depth = len(splits)
    if depth > MAX_DEPTH:
        raise ModelFormatError(f"{where}: depth {depth} is more than {MAX_DEPTH}")
    n_leaves = 1 << depth
    if len(values) != n_leaves * dim:
        raise ModelFormatError(f"{where}: {len(values)} leaf values for {n_leaves} leaves of "
                               f"{dim} values")
    try:
        leaf_values = np.asarray(values, dtype=np.float64).reshape(n_leaves, dim)
    except (TypeError, ValueError):
        raise ModelFormatError(f"{where}: a leaf value is not a number") from None
    if not np.isfinite(leaf_values).all():
        raise ModelFormatError(f"{where}: a leaf value is not finite")
    parts = [feats.split(s, f"{where} split {d}") for d, s in enumerate(splits)]
    n_internal = n_leaves - 1
    k = n_internal + n_leaves
    ids = np.arange(n_internal, dtype=np.int64)
    level = np.floor(np.log2(ids + 1)).astype(np.int64) if n_internal else ids
    tested = depth - 1 - level                       # the root tests the leaf index's top bit
    column = np.asarray([p[0] for p in parts], np.int64)
    border = np.asarray([p[1] for p in parts], np.float64)
    nan_left = np.asarray([p[2] for p in parts], bool)
    one_hot = np.asarray([p[3] is not None for p in parts], bool)
    left = np.full(k, -1, np.int64)
    right = np.full(k, -1, np.int64)
    left[:n_internal] = 2 * ids + 1
    right[:n_internal] = 2 * ids + 2
    feature = np.zeros(k, np.int64)
    threshold = np.zeros(k, np.float64)
    default_left = np.zeros(k, bool)
    is_cat = np.zeros(k, bool)
    texts = {}
    if n_internal:
        feature[:n_internal] = column[tested]
        threshold[:n_internal] = float32_boundary(border)[tested]
        default_left[:n_internal] = nan_left[tested]
        is_cat[:n_internal] = one_hot[tested]
        # a one-hot node lists its category on the left: its true side, the set bit
        swap = np.flatnonzero(is_cat)
        left[swap], right[swap] = right[swap], left[swap].copy()
        texts = {int(n): parts[tested[n]][3] for n in swap}
    value = np.zeros((k, dim), np.float64)
    value[n_internal:] = leaf_values
    cover = _oblivious_cover(t.get("leaf_weights"), depth)
    # a leaf's id is CatBoost's leaf index (its place left to right before any swap)
    source_id = np.concatenate([ids, np.arange(n_leaves, dtype=np.int64)])
    fields = dict(left=left, right=right, root=0, feature=feature, threshold=threshold,
                  default_left=default_left, missing_type=np.full(k, MISSING_NAN, np.int64),
                  is_categorical=is_cat, categories=texts, cover=cover, source_id=source_id)
    return fields, value


def _oblivious_cover(weights, depth: int) -> np.ndarray | None:
    """Training weight of every node of a full tree (breadth-first, leaves last) from its
    leaves' weights: each level the pairwise sums of the one below; None where the weights
    are not one number a leaf (advisory: no score reads them)."""
    try:
        level = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    if level.shape != (1 << depth,):
        return None
    levels = [level]
    for _ in range(depth):
        levels.append(levels[-1].reshape(-1, 2).sum(axis=1))
    return np.concatenate(levels[::-1])


def _non_symmetric(t, where: str, feats: Features, dim: int):
    """A tree of nested ``{"split", "left", "right"}`` nodes and ``{"value", "weight"}``
    leaves; the split is true on the right."""
    left, right, feature, threshold, nan_left, value, cover = [], [], [], [], [], [], []
    texts = {}
    stack = [(t, -1, False, 0)]
    while stack:
        node, parent, is_right, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ModelFormatError(f"{where}: deeper than {MAX_DEPTH}")
        if not isinstance(node, dict):
            raise ModelFormatError(f"{where}: a node is not an object")
        me = len(left)
        if parent >= 0:
            (right if is_right else left)[parent] = me
        left.append(-1)
        right.append(-1)
        w = node.get("weight")
        cover.append(float(w) if isinstance(w, (int, float)) and not isinstance(w, bool)
                     else math.nan)
        if "split" in node:
            col, border, nl, text = feats.split(node["split"], f"{where} node {me}")
            feature.append(col)
            threshold.append(border)
            nan_left.append(nl)
            value.append([0.0] * dim)
            if "left" not in node or "right" not in node:
                raise ModelFormatError(f"{where} node {me}: a split without both children")
            # a one-hot node lists its category on the left: CatBoost's right, the true side
            true_left = text is not None
            if true_left:
                texts[me] = text
            stack.append((node["right"], me, not true_left, depth + 1))
            stack.append((node["left"], me, true_left, depth + 1))
        elif "value" in node:
            v = node["value"]
            v = v if isinstance(v, list) else [v]
            if len(v) != dim:
                raise ModelFormatError(f"{where} node {me}: {len(v)} values for {dim} outputs")
            value.append([number(x, f"{where} node {me}") for x in v])
            feature.append(0)
            threshold.append(0.0)
            nan_left.append(False)
        else:
            raise ModelFormatError(f"{where} node {me}: neither a split nor a value")
    k = len(left)
    cover_a = np.asarray(cover, np.float64)
    fields = dict(left=np.asarray(left, np.int64), right=np.asarray(right, np.int64), root=0,
                  feature=np.asarray(feature, np.int64),
                  threshold=float32_boundary(np.asarray(threshold, np.float64)),
                  default_left=np.asarray(nan_left, bool),
                  missing_type=np.full(k, MISSING_NAN, np.int64),
                  is_categorical=np.isin(np.arange(k), list(texts)), categories=texts,
                  cover=None if np.isnan(cover_a).any() else cover_a)
    return fields, np.asarray(value, np.float64).reshape(k, dim)

