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
  builds that stage (``ir/ctr.py``: :meth:`_Features.ctr_stage`), whose columns follow the
  inputs. It needs the categories' texts, or integer categories it recovers from the tables'
  keys (:meth:`_Features.ctr_categories`). A ``.cbm`` file's CTR features and tables become
  the JSON export's (:func:`_cbm_ctrs`, :func:`_cbm_ctr_tables`).

Text and embedding features are refused with the split that uses them, and so is a one-hot
split whose category text is not in the file and whose hash is no small integer's.
"""
from __future__ import annotations

import json
import math
import os
import re
import struct
import tempfile
from typing import Any

import numpy as np

from ..errors import ModelFormatError
from ..ir.ensemble import MISSING_NAN, Ensemble, build_tree, constant_tree
from ..ir.cityhash import category_hash
from ..ir.ctr import (CLASS_COUNT_TYPES, COUNT_TYPES, EMPTY_KEY, HASH_MULT, CtrColumn,
                      CtrFeatures, Projection, bucket_counts, ctr_value)
from ..ir.float32 import float32_boundary
from . import flatbuffers

#: deepest tree read (CatBoost's own limit is 16)
MAX_DEPTH = 30

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


def looks_like_cbm(raw) -> bool:
    """Whether ``raw`` starts like CatBoost's binary model file (``.cbm``)."""
    return bytes(raw[:4]) == _CBM_MAGIC


_CBM_MAGIC = b"CBM1"
#: slots of the schema's fields (catboost/libs/model/flatbuffers/model.fbs, features.fbs)
_CORE_TREES, _CORE_INFO = 1, 2
(_T_DIM, _T_SPLITS, _T_SIZES, _T_STARTS, _T_CATS, _T_FLOATS, _T_ONEHOT, _T_CTRS, _T_LEAVES,
 _T_WEIGHTS, _T_STEPS, _T_LEAF_IDS, _T_TEXTS, _T_ESTIMATED, _T_SCALE, _T_BIAS,
 _T_MULTIBIAS) = range(17)
_T_EMBEDDINGS = 18
_NAN_TREATMENTS = ("AsIs", "AsFalse", "AsTrue")


def cbm_document(raw: bytes) -> dict:
    """A ``.cbm`` file as the dict CatBoost's JSON export holds for the same model.

    The file is ``CBM1``, a uint32 size and a FlatBuffers ``TModelCore`` of that size, then
    the tables of the CTR features (:func:`_cbm_ctr_tables`). A tree's splits are
    indexes into the model's binary features: every border of every float feature in order,
    then every value of every one-hot feature, then the CTR and estimated features. An
    oblivious tree of depth ``D`` has ``D`` splits and ``2**D`` leaves of ``ApproxDimension``
    values; a non-symmetric tree is a list of nodes, each with a split and the steps to its
    false and true children (a step of 0: the node is where that side ends, its value at
    ``NonSymmetricNodeIdToLeafId``)."""
    if len(raw) < 8 or raw[:4] != _CBM_MAGIC:
        raise ModelFormatError("not a CatBoost .cbm file (no CBM1 header)")
    size = struct.unpack_from("<I", raw, 4)[0]
    if size > len(raw) - 8:
        raise ModelFormatError(f"CatBoost .cbm: the model core of {size} bytes runs past the "
                               f"end of the file ({len(raw) - 8} bytes; truncated)")
    core = flatbuffers.root(raw[8:8 + size], "CatBoost .cbm model core")
    trees = core.table(_CORE_TREES, "the model's trees")
    if trees is None:
        raise ModelFormatError("CatBoost .cbm: the model core has no trees")
    info = {kv.string(0): kv.string(1) for kv in core.tables(_CORE_INFO, "model info entry")}
    dim = trees.scalar(_T_DIM, "i", 1)
    if not 1 <= dim <= 1 << 16:
        raise ModelFormatError(f"CatBoost .cbm: {dim} outputs")
    floats, cats, bins = [], [], []
    for i, f in enumerate(trees.tables(_T_FLOATS, "float feature")):
        treatment = f.scalar(5, "b", 0)
        if not 0 <= treatment < len(_NAN_TREATMENTS):
            raise ModelFormatError(f"CatBoost .cbm: float feature {i}: NaN treatment "
                                   f"{treatment} is unknown")
        borders = f.array(3, np.float32)
        floats.append({"flat_feature_index": f.scalar(2, "i", -1), "feature_id": f.string(4),
                       "nan_value_treatment": _NAN_TREATMENTS[treatment],
                       "borders": borders.tolist()})
        bins += [{"split_type": "FloatFeature", "float_feature_index": i, "border": float(b)}
                 for b in borders]
    cat_position = {}
    for i, c in enumerate(trees.tables(_T_CATS, "categorical feature")):
        cat_position[c.scalar(0, "i", -1)] = i
        cats.append({"flat_feature_index": c.scalar(1, "i", -1), "feature_id": c.string(2)})
    for i, o in enumerate(trees.tables(_T_ONEHOT, "one-hot feature")):
        where = cat_position.get(o.scalar(0, "i", -1))
        if where is None:
            raise ModelFormatError(f"CatBoost .cbm: one-hot feature {i} names no categorical "
                                   f"feature")
        bins += [{"split_type": "OneHotFeature", "cat_feature_index": where, "value": int(v)}
                 for v in o.array(1, np.int32)]
    others = {"text_features": [{"flat_feature_index": t.scalar(1, "i", -1)}
                                for t in trees.tables(_T_TEXTS, "text feature")],
              "embedding_features": [{"flat_feature_index": t.scalar(1, "i", -1)}
                                     for t in trees.tables(_T_EMBEDDINGS, "embedding feature")]}
    doc = {"features_info": {"float_features": floats, "categorical_features": cats, **others},
           "model_info": {"params": info.get("params"),
                          "catboost_version_info": info.get("catboost_version_info")}}
    splits = trees.array(_T_SPLITS, np.int32)
    sizes = trees.array(_T_SIZES, np.int32)
    starts = trees.array(_T_STARTS, np.int32)
    leaves = trees.array(_T_LEAVES, np.float64)
    weights = trees.array(_T_WEIGHTS, np.float64)
    if starts.shape != sizes.shape or (sizes < 0).any() or (starts < 0).any() or (
            (starts + sizes) > splits.size).any():
        raise ModelFormatError("CatBoost .cbm: the trees' split lists do not fit their sizes")

    # past the float and one-hot features: the CTR features' borders, then the estimated ones
    ctr_borders = _cbm_ctrs(trees, cat_position, doc)
    if ctr_borders:
        doc["ctr_data"] = _cbm_ctr_tables(raw[8 + size:], cat_position, doc)
    beyond = "EstimatedFeature" if trees.tables(_T_ESTIMATED, "estimated feature") else None

    def split(k: int, where: str) -> dict:
        b = int(splits[k])
        if 0 <= b < len(bins):
            return bins[b]
        if 0 <= b - len(bins) < len(ctr_borders):
            i, border, target = ctr_borders[b - len(bins)]
            # split_index: its place as the JSON export numbers it, set once every one-hot
            # split is known (_cbm_ctr_split_indexes)
            return {"split_type": "OnlineCtr", "ctr": i, "border": border,
                    "ctr_target_border_idx": target, "ctr_border": b - len(bins)}
        if b >= len(bins) and beyond:
            return {"split_type": beyond}
        raise ModelFormatError(f"CatBoost .cbm: {where}: binary feature {b} is out of range")

    steps = trees.array(_T_STEPS, [("false", "<u2"), ("true", "<u2")])
    if steps.size:
        doc["trees"] = _cbm_non_symmetric(split, steps, trees.array(_T_LEAF_IDS, np.uint32),
                                          starts, sizes, leaves, weights, dim)
    else:
        out, at = [], 0
        for t, (start, depth) in enumerate(zip(starts.tolist(), sizes.tolist())):
            if depth > MAX_DEPTH:
                raise ModelFormatError(f"CatBoost .cbm: tree {t}: depth {depth} is more than "
                                       f"{MAX_DEPTH}")
            n = (1 << depth) * dim
            if at + n > leaves.size:
                raise ModelFormatError(f"CatBoost .cbm: tree {t}: its leaf values run past "
                                       f"the model's {leaves.size}")
            tree = {"splits": [split(start + d, f"tree {t}") for d in range(depth)],
                    "leaf_values": leaves[at:at + n].tolist()}
            w0 = at // dim
            if weights.size >= w0 + (n // dim):
                tree["leaf_weights"] = weights[w0:w0 + n // dim].tolist()
            out.append(tree)
            at += n
        doc["oblivious_trees"] = out
    if ctr_borders:
        _cbm_ctr_split_indexes(doc, len(ctr_borders))
    bias = trees.array(_T_MULTIBIAS, np.float64)
    doc["scale_and_bias"] = [trees.scalar(_T_SCALE, "d", 1.0),
                             bias.tolist() if bias.size else [trees.scalar(_T_BIAS, "d", 0.0)]]
    return doc


#: CatBoost's CTR types by their code in the model file (ctr_data.fbs ECtrType)
_CTR_TYPES = ("Borders", "Buckets", "BinarizedTargetMeanValue", "FloatTargetMeanValue",
              "Counter", "FeatureFreq")


def _cbm_combination(base, cat_position: dict, n_floats: int, where: str) -> tuple[list, str]:
    """A ``TModelCtrBase``: its projection as the JSON export's elements, and an identifier
    naming it with its CTR type."""
    kind = base.scalar(1, "b", 0)
    if not 0 <= kind < len(_CTR_TYPES):
        raise ModelFormatError(f"CatBoost .cbm: {where}: CTR type {kind} is unknown")
    comb = base.table(0, f"{where}'s projection")
    elements = []
    if comb is not None:
        for c in comb.array(0, np.int32).tolist():
            if c not in cat_position:
                raise ModelFormatError(f"CatBoost .cbm: {where}: categorical feature {c} is "
                                       f"unknown")
            elements.append({"combination_element": "cat_feature_value",
                             "cat_feature_index": cat_position[c]})
        for f, border in comb.array(1, [("index", "<i4"), ("border", "<f4")]).tolist():
            if not 0 <= f < n_floats:
                raise ModelFormatError(f"CatBoost .cbm: {where}: float feature {f} is unknown")
            elements.append({"combination_element": "float_feature",
                             "float_feature_index": int(f), "border": float(border)})
        for c, value in comb.array(2, [("index", "<i4"), ("value", "<i4")]).tolist():
            if c not in cat_position:
                raise ModelFormatError(f"CatBoost .cbm: {where}: categorical feature {c} is "
                                       f"unknown")
            elements.append({"combination_element": "cat_feature_exact_value",
                             "cat_feature_index": cat_position[c], "value": int(value)})
    return elements, json.dumps({"elements": elements, "type": _CTR_TYPES[kind]},
                                sort_keys=True)


def _cbm_ctrs(trees, cat_position: dict, doc: dict) -> list:
    """The core's CTR features into ``doc["features_info"]["ctrs"]`` as the JSON export
    writes them; returns every CTR border in the binary features' order, as (CTR feature,
    border, target class)."""
    out, borders = [], []
    n_floats = len(doc["features_info"]["float_features"])
    for i, f in enumerate(trees.tables(_T_CTRS, "CTR feature")):
        where = f"CTR feature {i}"
        ctr = f.table(0, where)
        base = None if ctr is None else ctr.table(0, f"{where}'s base")
        if base is None:
            raise ModelFormatError(f"CatBoost .cbm: {where} has no CTR")
        elements, ident = _cbm_combination(base, cat_position, n_floats, where)
        target = ctr.scalar(1, "i", 0)
        b = f.array(1, np.float32).tolist()
        out.append({"borders": b, "ctr_type": json.loads(ident)["type"], "elements": elements,
                    "identifier": ident, "target_border_idx": target,
                    "prior_numerator": ctr.scalar(2, "f", 0.0),
                    "prior_denomerator": ctr.scalar(3, "f", 1.0),
                    "shift": ctr.scalar(4, "f", 0.0), "scale": ctr.scalar(5, "f", 1.0)})
        borders += [(i, float(x), target) for x in b]
    if out:
        doc["features_info"]["ctrs"] = out
    return borders


def _cbm_ctr_tables(rest: bytes, cat_position: dict, doc: dict) -> dict:
    """The CTR tables after the model core: a uint32 count, then for each a uint32 size and a
    FlatBuffers ``TCtrValueTable`` (its projection and type; ``IndexHashRaw``, the slots of
    its hash table, 12 bytes each: the uint64 hash, the uint32 bucket, an empty slot's hash
    all ones; ``CTRBlob``, int32 counts bucket by bucket; the counter denominator; the number
    of classes) into the JSON export's ``ctr_data``."""
    n_floats = len(doc["features_info"]["float_features"])
    if len(rest) < 4:
        raise ModelFormatError("CatBoost .cbm: the file ends before its CTR tables")
    n = struct.unpack_from("<I", rest, 0)[0]
    pos, out = 4, {}
    for k in range(n):
        where = f"CTR table {k}"
        if pos + 4 > len(rest):
            raise ModelFormatError(f"CatBoost .cbm: the file ends before {where}")
        size = struct.unpack_from("<I", rest, pos)[0]
        if pos + 4 + size > len(rest):
            raise ModelFormatError(f"CatBoost .cbm: {where} runs past the end of the file")
        t = flatbuffers.root(rest[pos + 4:pos + 4 + size], f"CatBoost .cbm {where}")
        pos += 4 + size
        base = t.table(0, f"{where}'s base")
        if base is None:
            raise ModelFormatError(f"CatBoost .cbm: {where} names no CTR")
        _, ident = _cbm_combination(base, cat_position, n_floats, where)
        kind = json.loads(ident)["type"]
        slots = t.array(1, np.uint8)
        blob = t.array(2, np.uint8)
        if slots.size % 12 or blob.size % 4:
            raise ModelFormatError(f"CatBoost .cbm: {where}: its slots or counts are not whole")
        slots = slots.view([("hash", "<u8"), ("bucket", "<u4")])
        counts = blob.view("<i4")
        width = 1 if kind in COUNT_TYPES else t.scalar(4, "i", 0)
        if width < 1 or counts.size % width:
            raise ModelFormatError(f"CatBoost .cbm: {where}: {counts.size} counts in rows of "
                                   f"{width}")
        counts = counts.reshape(-1, width)
        full = slots["hash"] != np.uint64(EMPTY_KEY)
        buckets = slots["bucket"][full].astype(np.int64)
        if (buckets >= counts.shape[0]).any():
            raise ModelFormatError(f"CatBoost .cbm: {where}: a slot names a bucket past its "
                                   f"counts")
        flat = []
        for h, b in zip(slots["hash"][full].tolist(), buckets.tolist()):
            flat.append(str(h))
            flat += counts[b].tolist()
        out[ident] = {"hash_map": flat, "hash_stride": width + 1,
                      "counter_denominator": t.scalar(3, "i", 0)}
    return out


def _cbm_ctr_split_indexes(doc: dict, n_borders: int) -> None:
    """Each CTR split's ``split_index`` as the JSON export numbers the binary features: the
    float borders, the one-hot categories the splits test, then the CTR borders."""
    splits = _all_splits(doc)
    first = sum(len(f["borders"]) for f in doc["features_info"]["float_features"]) + len(
        {(s["cat_feature_index"], s["value"]) for s in splits
         if s.get("split_type") == "OneHotFeature"})
    for s in splits:
        if s.get("split_type") == "OnlineCtr" and "ctr_border" in s:
            s["split_index"] = first + s["ctr_border"]


def _cbm_non_symmetric(split, steps, leaf_ids, starts, sizes, leaves, weights, dim) -> list:
    """The non-symmetric trees of a ``.cbm`` file as the JSON export's nested nodes."""
    out = []
    for t, (start, n) in enumerate(zip(starts.tolist(), sizes.tolist())):
        end = start + n
        if end > steps.size or end > leaf_ids.size or n < 1:
            raise ModelFormatError(f"CatBoost .cbm: tree {t}: its nodes run past the model's")

        def leaf(i: int) -> dict:
            v = int(leaf_ids[i])
            if v + dim > leaves.size:
                raise ModelFormatError(f"CatBoost .cbm: tree {t} node {i - start}: leaf "
                                       f"value {v} is out of range")
            node = {"value": leaves[v:v + dim].tolist()}
            if weights.size > v // dim:
                node["weight"] = float(weights[v // dim])
            return node

        seen = set()

        def node(i: int, depth: int) -> dict:
            if depth > MAX_DEPTH:
                raise ModelFormatError(f"CatBoost .cbm: tree {t}: deeper than {MAX_DEPTH}")
            if i >= end or i in seen:
                raise ModelFormatError(f"CatBoost .cbm: tree {t}: a step leaves the tree or "
                                       f"reaches node {i - start} twice")
            seen.add(i)
            f, tr = int(steps["false"][i]), int(steps["true"][i])
            if f == 0 and tr == 0:
                return leaf(i)
            return {"split": split(i, f"tree {t}"),
                    "left": node(i + f, depth + 1) if f else leaf(i),
                    "right": node(i + tr, depth + 1) if tr else leaf(i)}

        out.append(node(start, 0))
    return out


def _get(obj, key: str, kind, where: str):
    if not isinstance(obj, dict) or key not in obj:
        raise ModelFormatError(f"{where}: no '{key}'")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise ModelFormatError(f"{where}: '{key}' is not {_KIND_NAMES.get(kind, kind)}")
    return value


_KIND_NAMES = {list: "a list", dict: "an object", str: "a string", int: "an integer",
               (int, float): "a number"}


def _number(v, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ModelFormatError(f"{where}: {v!r} is not a finite number")
    return float(v)


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


#: a category text CatBoost writes for a non-negative integer
_INTEGER_TEXT = re.compile(r"0|[1-9][0-9]{0,9}")

_INTEGER_HASHES: dict[int, str] = {}


def _integer_category(h: int) -> str | None:
    """The text of the integer category from 0 to INTEGER_CATEGORIES whose hash is ``h``, if
    one is (the table made on first use)."""
    if not _INTEGER_HASHES:
        _INTEGER_HASHES.update((category_hash(str(k)), str(k))
                               for k in range(INTEGER_CATEGORIES, -1, -1))
    return _INTEGER_HASHES.get(h)
#: the largest integer category read as itself: a categorical node keeps a bitset up to its
#: largest category (512 bytes at most here), so larger integers are numbered like texts
INTEGER_CATEGORIES = 4095


class _Features:
    """The float and categorical features: their input columns, thresholds, NaN sides and
    (for one-hot splits) the category texts the splits name."""

    def __init__(self, info: dict):
        floats = info.get("float_features", [])
        if not isinstance(floats, list):
            raise ModelFormatError("features_info: 'float_features' is not a list")
        self.column, self.nan_true, self.names = [], [], {}
        self.n_float_borders = 0         # the binary features' numbering starts with these
        last = -1
        for i, f in enumerate(floats):
            where = f"float feature {i}"
            col = _get(f, "flat_feature_index", int, where)
            if not 0 <= col < 1 << 24:
                raise ModelFormatError(f"{where}: flat_feature_index {col} is out of range")
            treatment = f.get("nan_value_treatment", "AsIs")
            if treatment not in ("AsIs", "AsFalse", "AsTrue"):
                raise ModelFormatError(f"{where}: unknown nan_value_treatment {treatment!r}")
            self.column.append(col)
            self.nan_true.append(treatment == "AsTrue")
            borders = f.get("borders", []) or []
            self.n_float_borders += len(borders) if isinstance(borders, list) else 0
            if isinstance(f.get("feature_id"), str) and f["feature_id"]:
                self.names[col] = f["feature_id"]
            last = max(last, col)
        cats = info.get("categorical_features", []) or []
        if not isinstance(cats, list):
            raise ModelFormatError("features_info: 'categorical_features' is not a list")
        self.cat_column = []
        for i, f in enumerate(cats):
            col = _get(f, "flat_feature_index", int, f"categorical feature {i}")
            if not 0 <= col < 1 << 24:
                raise ModelFormatError(f"categorical feature {i}: flat_feature_index {col} is "
                                       f"out of range")
            self.cat_column.append(col)
        self.texts = _hash_texts(info.get("cat_features_hash"))
        self.used: dict[int, set[str]] = {}      # column -> texts the one-hot splits name
        for kind in ("categorical_features", "text_features", "embedding_features"):
            for f in info.get(kind, []) or []:
                if isinstance(f, dict) and isinstance(f.get("flat_feature_index"), int):
                    last = max(last, f["flat_feature_index"])
                    if isinstance(f.get("feature_id"), str) and f["feature_id"]:
                        self.names[f["flat_feature_index"]] = f["feature_id"]
        self.n_features = last + 1
        if self.n_features < 1:
            raise ModelFormatError("features_info: the model has no features")
        self.ctrs: list = []                 # the file's CTR features (features_info.ctrs)
        self.ctr_column: dict[int, int] = {}   # a used CTR feature -> its column
        self.ctr_at: dict[int, tuple[int, float]] = {}  # split_index -> (CTR feature, border)

    def one_hot(self, s: dict, where: str) -> tuple[int, str]:
        """(column, category text) of a one-hot split."""
        i = _get(s, "cat_feature_index", int, where)
        if not 0 <= i < len(self.cat_column):
            raise ModelFormatError(f"{where}: cat_feature_index {i} is out of range")
        h = _get(s, "value", int, where)
        if not -(1 << 31) <= h < 1 << 32:
            raise ModelFormatError(f"{where}: category hash {h} is not a 32-bit value")
        # the file's texts, else an integer category whose hash it is (a .cbm file and the
        # JSON written without the pool keep the hashes only)
        text = self.texts.get(h & 0xFFFFFFFF)
        if text is None:
            text = _integer_category(h & 0xFFFFFFFF)
        if text is None:
            raise ModelFormatError(
                f"{where}: the text of category hash {h & 0xFFFFFFFF} is not in the file and "
                f"is no integer from 0 to {INTEGER_CATEGORIES} (CatBoost writes the "
                f"categories' texts, 'cat_features_hash', only when save_model is given the "
                f"training pool: save_model(path, format='json', pool=train_pool))")
        col = self.cat_column[i]
        self.used.setdefault(col, set()).add(text)
        return col, text

    # -- CTR features -----------------------------------------------------------------------
    def read_ctrs(self, info: dict, doc: dict, splits: list) -> None:
        """The CTR features the splits use, each given a column after the inputs in the order
        of the file's list; ``splits``: every split of the model. A CTR split names its
        feature by ``split_index``, its place among the model's binary features: the float
        features' borders, then the one-hot categories, then the CTR features' borders."""
        ctrs = info.get("ctrs", []) or []
        if not isinstance(ctrs, list):
            raise ModelFormatError("features_info: 'ctrs' is not a list")
        if not ctrs:
            return
        self.ctrs = ctrs
        binary = []
        for i, c in enumerate(ctrs):
            where = f"CTR feature {i}"
            for b in _get(c, "borders", list, where):
                binary.append((i, _number(b, where)))
        one_hot = {(s.get("cat_feature_index"), s.get("value")) for s in splits
                   if s.get("split_type") == "OneHotFeature"}
        first = self.n_float_borders + len(one_hot)
        for s in splits:
            if s.get("split_type") != "OnlineCtr":
                continue
            k = _get(s, "split_index", int, "a CTR split")
            if not 0 <= k - first < len(binary):
                raise ModelFormatError(f"a CTR split's split_index {k} names no CTR feature "
                                       f"border")
            self.ctr_at[k] = binary[k - first]
        for i in sorted({i for i, _ in self.ctr_at.values()}):
            self.ctr_column[i] = self.n_features + len(self.ctr_column)

    def ctr_split(self, s: dict, where: str) -> tuple[int, float]:
        """(CTR feature, float32 border) of a CTR split, checked against the feature's own
        border and target."""
        k = _get(s, "split_index", int, where)
        if k not in self.ctr_at:
            raise ModelFormatError(f"{where}: split_index {k} names no CTR feature border")
        i, border = self.ctr_at[k]
        if _number(_get(s, "border", (int, float), where), where) != border:
            raise ModelFormatError(f"{where}: its border is not that of CTR feature {i}'s "
                                   f"border at split_index {k}")
        target = s.get("ctr_target_border_idx", 0)
        if target != self.ctrs[i].get("target_border_idx", 0):
            raise ModelFormatError(f"{where}: ctr_target_border_idx {target!r} is not CTR "
                                   f"feature {i}'s")
        if float(np.float32(border)) != border:
            raise ModelFormatError(f"{where}: border {border!r} is not a float32 value")
        return i, border

    def ctr_categories(self, tables: dict) -> None:
        """The texts each categorical feature of the used CTR features holds, added to the
        column's texts (so that its category numbers cover them): where a table of that
        feature alone exists, the texts whose projection hash is one of its keys (the file's
        texts; without them, the integers from 0 to INTEGER_CATEGORIES the keys are the
        hashes of); else every text of the file."""
        singles: dict[int, np.ndarray] = {}
        for c in (self.ctrs[i] for i in self.ctr_column):
            e = c.get("elements")
            if (isinstance(e, list) and len(e) == 1 and isinstance(e[0], dict)
                    and e[0].get("combination_element") == "cat_feature_value"):
                table = tables.get(c.get("identifier"))
                if table is not None:
                    singles.setdefault(e[0].get("cat_feature_index"), table[0])
        inverse = pow(HASH_MULT * HASH_MULT, -1, 1 << 64)
        for f in sorted(self._ctr_cat_features()):
            col = self.cat_column[f]
            keys = singles.get(f)
            if self.texts and keys is not None:
                present = set(keys.tolist())
                texts = {t for h, t in self.texts.items() if _projection_key(h) in present}
            elif self.texts:
                texts = set(self.texts.values())
            elif keys is not None:
                texts = set()
                for key in keys.tolist():
                    b = (key * inverse) & ((1 << 64) - 1)
                    h = b & 0xFFFFFFFF
                    text = _integer_category(h) if b == _sign_extended(h) else None
                    if text is None:
                        raise ModelFormatError(
                            f"categorical feature {f}: a category of its CTR table is not in "
                            f"the file and is no integer from 0 to {INTEGER_CATEGORIES} "
                            f"(CatBoost writes the categories' texts only when save_model is "
                            f"given the training pool: save_model(path, format='json', "
                            f"pool=train_pool))")
                    texts.add(text)
            else:
                raise ModelFormatError(
                    f"categorical feature {f}: its CTR features need the categories' texts, "
                    f"which CatBoost writes only when save_model is given the training pool "
                    f"(save_model(path, format='json', pool=train_pool))")
            self.used.setdefault(col, set()).update(texts)

    def _ctr_cat_features(self) -> set[int]:
        out = set()
        for i in self.ctr_column:
            for e in self.ctrs[i].get("elements", []) or []:
                if isinstance(e, dict) and e.get("combination_element") in (
                        "cat_feature_value", "cat_feature_exact_value"):
                    f = e.get("cat_feature_index")
                    if not isinstance(f, int) or not 0 <= f < len(self.cat_column):
                        raise ModelFormatError(f"CTR feature {i}: cat_feature_index {f!r} is "
                                               f"out of range")
                    out.add(f)
        return out

    def ctr_stage(self, tables: dict, numbers: dict[int, dict[str, int]]) -> CtrFeatures:
        """The CTR stage of the used CTR features (``tables``: :func:`_ctr_tables`;
        ``numbers``: every categorical column's category numbers)."""
        cats = sorted(self._ctr_cat_features())
        local = {f: k for k, f in enumerate(cats)}
        projections, where_of, columns = [], {}, []
        for i in self.ctr_column:
            c = self.ctrs[i]
            where = f"CTR feature {i}"
            kind = _get(c, "ctr_type", str, where)
            if kind not in CLASS_COUNT_TYPES + COUNT_TYPES:
                raise ModelFormatError(f"{where}: CTR type {kind!r} is not read (Borders, "
                                       f"Buckets, Counter and FeatureFreq are)")
            p = self._projection(_get(c, "elements", list, where), local, where)
            key = (p.cats, p.floats, p.exact)
            if key not in where_of:
                where_of[key] = len(projections)
                projections.append(p)
            ident = _get(c, "identifier", str, where)
            if ident not in tables:
                raise ModelFormatError(f"{where}: its table is not in ctr_data")
            keys, counts, denominator = tables[ident]
            target = _get(c, "target_border_idx", int, where)
            width = counts.shape[1]
            if kind in COUNT_TYPES and width != 1:
                raise ModelFormatError(f"{where}: a {kind} table holds {width} counts a bucket")
            if kind in CLASS_COUNT_TYPES and not (width >= 2 and 0 <= target < width - (
                    kind == "Borders")):
                raise ModelFormatError(f"{where}: target_border_idx {target} of a table of "
                                       f"{width} classes")
            prior = [_number(_get(c, k, (int, float), where), where)
                     for k in ("prior_numerator", "prior_denomerator", "shift", "scale")]
            good, total = bucket_counts(kind, target, counts, denominator)
            columns.append(CtrColumn(projection=where_of[key], keys=keys,
                                     values=ctr_value(good, total, *prior),
                                     unseen=float(ctr_value(0.0, 0.0, *prior))))
        return CtrFeatures(self.n_features, [self.cat_column[f] for f in cats],
                           [numbers[self.cat_column[f]] for f in cats], projections, columns)

    def _projection(self, elements: list, local: dict[int, int], where: str) -> Projection:
        """A CTR feature's projection from its elements (categorical values first, then the
        float tests, then the one-hot tests, as CatBoost hashes them)."""
        cats, floats, exact = [], [], []
        for e in elements:
            kind = e.get("combination_element") if isinstance(e, dict) else None
            if kind == "cat_feature_value":
                cats.append(local[e["cat_feature_index"]])
            elif kind == "cat_feature_exact_value":
                h = _get(e, "value", int, where)
                if not -(1 << 31) <= h < 1 << 32:
                    raise ModelFormatError(f"{where}: category hash {h} is not a 32-bit value")
                exact.append((local[e["cat_feature_index"]], h & 0xFFFFFFFF))
            elif kind == "float_feature":
                floats.append(self.float_test(e, where))
            else:
                raise ModelFormatError(f"{where}: a projection element {kind!r} is not read")
        return Projection(cats=tuple(cats), floats=tuple(floats), exact=tuple(exact))

    def category_numbers(self) -> dict[int, dict[str, int]]:
        """Each categorical column's texts and their category numbers: the integers
        themselves where every text is one up to INTEGER_CATEGORIES, else the texts' places
        in sorted order."""
        out = {}
        for col, texts in self.used.items():
            if all(_INTEGER_TEXT.fullmatch(t) and int(t) <= INTEGER_CATEGORIES for t in texts):
                out[col] = {t: int(t) for t in texts}
            else:
                out[col] = {t: k for k, t in enumerate(sorted(texts))}
        return out

    def split(self, s, where: str) -> tuple[int, float, bool, str | None]:
        """(column, neutral threshold, NaN goes left, category text or None) of one split;
        a one-hot split's threshold is 0.0 and NaN goes to its false side."""
        kind = s.get("split_type", "FloatFeature") if isinstance(s, dict) else None
        if kind == "OneHotFeature":
            col, text = self.one_hot(s, where)
            return col, 0.0, False, text
        if kind == "OnlineCtr":
            i, border = self.ctr_split(s, where)
            return self.ctr_column[i], border, True, None     # a CTR value is never NaN
        if kind != "FloatFeature":
            raise ModelFormatError(
                f"{where}: a {kind} split (text and embedding features are computed from "
                f"statistics of the training data; float, one-hot and CTR features are read)")
        col, border, nan_true = self.float_test(s, where)
        return col, border, not nan_true, None

    def float_test(self, d: dict, where: str) -> tuple[int, float, bool]:
        """(column, float32 border, NaN is true) of a float feature's test, a split's or a
        CTR projection's (``float_feature_index`` and ``border``)."""
        i = _get(d, "float_feature_index", int, where)
        if not 0 <= i < len(self.column):
            raise ModelFormatError(f"{where}: float_feature_index {i} is out of range")
        border = _number(_get(d, "border", (int, float), where), where)
        if float(np.float32(border)) != border:
            raise ModelFormatError(f"{where}: border {border!r} is not a float32 value")
        return self.column[i], border, self.nan_true[i]


def _sign_extended(h: int) -> int:
    """A 32-bit hash as CatBoost's projection hash takes it: signed, widened to 64 bits."""
    return h | 0xFFFFFFFF00000000 if h & 0x80000000 else h


def _projection_key(h: int) -> int:
    """The key of a category of hash ``h`` in the table of its feature alone."""
    m = (1 << 64) - 1
    return (HASH_MULT * ((HASH_MULT * _sign_extended(h)) & m)) & m


def _ctr_tables(doc: dict) -> dict:
    """``ctr_data``: each table's identifier -> (sorted keys, counts a bucket, the counter
    denominator); an empty slot's key (EMPTY_KEY) is left out."""
    data = doc.get("ctr_data", {})
    if not isinstance(data, dict):
        raise ModelFormatError("ctr_data is not a mapping of tables")
    out = {}
    for ident, t in data.items():
        where = f"ctr_data table {ident[:80]!r}"
        flat = _get(t, "hash_map", list, where)
        stride = _get(t, "hash_stride", int, where)
        if stride < 2 or len(flat) % stride:
            raise ModelFormatError(f"{where}: {len(flat)} entries in rows of {stride}")
        try:
            keys = np.array([int(k) for k in flat[::stride]], dtype=np.uint64)
            counts = np.array([flat[j + 1:j + stride] for j in range(0, len(flat), stride)],
                              dtype=np.float64).reshape(-1, stride - 1)
        except (TypeError, ValueError, OverflowError):
            raise ModelFormatError(f"{where}: a key is not a 64-bit hash or a count is not a "
                                   f"number") from None
        if not np.isfinite(counts).all() or (counts < 0).any():
            raise ModelFormatError(f"{where}: a count is negative or not finite")
        full = keys != np.uint64(EMPTY_KEY)
        keys, counts = keys[full], counts[full]
        order = np.argsort(keys, kind="stable")
        keys, counts = keys[order], counts[order]
        if keys.shape[0] > 1 and not (keys[1:] > keys[:-1]).all():
            raise ModelFormatError(f"{where}: a key is listed twice")
        denominator = _number(t.get("counter_denominator", 0), where)
        out[ident] = (keys, counts, denominator)
    return out


def _all_splits(doc: dict) -> list:
    """Every split dict of the model's trees (oblivious or not), in no particular order."""
    out = []
    for t in doc.get("oblivious_trees", []) or []:
        if isinstance(t, dict) and isinstance(t.get("splits"), list):
            out.extend(s for s in t["splits"] if isinstance(s, dict))
    stack = [t for t in doc.get("trees", []) or []]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if isinstance(node.get("split"), dict):
                out.append(node["split"])
            stack.extend((node.get("left"), node.get("right")))
    return out


def _hash_texts(table) -> dict[int, str]:
    """``cat_features_hash``: each training category's 32-bit hash and text."""
    if table is None:
        return {}
    if not isinstance(table, list):
        raise ModelFormatError("features_info: 'cat_features_hash' is not a list")
    out = {}
    for i, e in enumerate(table):
        where = f"cat_features_hash entry {i}"
        h = _get(e, "hash", int, where)
        text = _get(e, "value", str, where)
        if not 0 <= h < 1 << 32:
            raise ModelFormatError(f"{where}: hash {h} is not a 32-bit value")
        out[h] = text
    return out


def _ensemble(doc: dict, file_format: str = "json") -> Ensemble:
    info = _get(doc, "features_info", dict, "the model")
    feats = _Features(info)
    feats.read_ctrs(info, doc, _all_splits(doc))
    tables = _ctr_tables(doc) if feats.ctr_column else {}
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
        scale = _number(sb[0], "scale_and_bias")
        bias = sb[1] if isinstance(sb[1], list) else [sb[1]]
        bias = [_number(b, "scale_and_bias") for b in bias]
    if "oblivious_trees" in doc:
        trees = _get(doc, "oblivious_trees", list, "the model")
        dim = _dimension(trees, bias, oblivious=True)
        nodes = [_oblivious(t, f"tree {i}", feats, dim) for i, t in enumerate(trees)]
    elif "trees" in doc:
        trees = _get(doc, "trees", list, "the model")
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
        values = _get(t, "leaf_values", list, "tree 0")
        splits = _get(t, "splits", list, "tree 0")
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


def _oblivious(t, where: str, feats: _Features, dim: int):
    splits = _get(t, "splits", list, where)
    values = _get(t, "leaf_values", list, where)
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


def _non_symmetric(t, where: str, feats: _Features, dim: int):
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
            value.append([_number(x, f"{where} node {me}") for x in v])
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

