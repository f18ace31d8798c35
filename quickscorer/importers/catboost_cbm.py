"""CatBoost's binary model file (``.cbm``): its FlatBuffers tables (read by
:mod:`~quickscorer.importers.flatbuffers`) as the document CatBoost's JSON export holds for the
same model, trees, features, CTR features and their tables included, which
:mod:`~quickscorer.importers.catboost` then reads as it reads the export.
"""
from __future__ import annotations

import json
import re
import struct

import numpy as np

from ..errors import ModelFormatError
from ..ir.ctr import (
    COUNT_TYPES,
    EMPTY_KEY,
)
from . import flatbuffers
from .catboost_features import MAX_DEPTH, all_splits


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
#: each table's slots in the schema this reader knows (CatBoost 1.2): a field past them is
#: refused by its slot number
_CORE_SLOTS, _TREES_SLOTS, _FLOAT_SLOTS, _CAT_SLOTS, _ONEHOT_SLOTS = 4, 19, 6, 4, 3
_NAN_TREATMENTS = ("AsIs", "AsFalse", "AsTrue")


def _writer(info: dict) -> str:
    """The release that wrote the file, as its model info records it."""
    text = info.get("catboost_version_info") or ""
    m = re.search(r"release (\d+(?:\.\d+)+)", text) or re.search(r"tags/v(\d+(?:\.\d+)+)", text)
    return f"CatBoost {m.group(1)}" if m else "a CatBoost release that records no version"


def cbm_document(raw: bytes) -> dict:
    """A ``.cbm`` file as the dict CatBoost's JSON export holds for the same model.

    The file is ``CBM1``, a uint32 size and a FlatBuffers ``TModelCore`` of that size, then
    the tables of the CTR features (:func:`cbm_ctr_tables`). A tree's splits are
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
    writer = _writer(info)
    core.refuse_unknown_slots(_CORE_SLOTS, writer)
    trees.refuse_unknown_slots(_TREES_SLOTS, writer)
    for slot, n_known, what in ((_T_FLOATS, _FLOAT_SLOTS, "float feature"),
                                (_T_CATS, _CAT_SLOTS, "categorical feature"),
                                (_T_ONEHOT, _ONEHOT_SLOTS, "one-hot feature")):
        for table in trees.tables(slot, what):
            table.refuse_unknown_slots(n_known, writer)
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
    ctr_borders = cbm_ctrs(trees, cat_position, doc)
    if ctr_borders:
        doc["ctr_data"] = cbm_ctr_tables(raw[8 + size:], cat_position, doc)
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


def cbm_ctrs(trees, cat_position: dict, doc: dict) -> list:
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


def cbm_ctr_tables(rest: bytes, cat_position: dict, doc: dict) -> dict:
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
    splits = all_splits(doc)
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


