"""XGBoost JSON and UBJSON models (1.x, 2.x, 3.x) and legacy binary models (0.x to 2.0) ->
:class:`Ensemble`, without xgboost.

The scoring rules are in ``docs/semantics.md``. Normalisation to the neutral IR:

* XGBoost goes left iff ``float32(x) < split_condition``. With float32 inputs that is
  ``x <= nextafterf(split_condition, -inf)``: the IR threshold.
* Categorical nodes send the *listed* categories right, everything else (negative, too large,
  unlisted) left. The IR sends its listed categories left, so the importer swaps the two
  children of a categorical node and flips ``default_left``; the exit leaves keep their
  XGBoost node ids as ``source_id``.
* ``base_score`` is stored in output space; the margin the sum starts from is XGBoost's
  ``ProbToMargin`` in float32 with libm.

Every array is checked against the tree's node count before use, so a damaged model ends in a
:class:`ModelFormatError` naming the tree and field.
"""
from __future__ import annotations

import itertools
import json
import mmap
import os
from pathlib import Path
from typing import Any

import numpy as np

try:            # a faster JSON parser, where installed (a dependency of the package)
    import orjson
except ImportError:  # pragma: no cover - the json module does the same, slower
    orjson = None

from .._transforms import xgb_prob_to_margin
from ..errors import ModelFormatError
from ..ir import _build as _walks
from ..ir.ensemble import (
    MAX_CATEGORY,
    MAX_NODES_PER_TREE,
    MISSING_NAN,
    Ensemble,
    PackedTrees,
    build_tree,
    release_of,
)
from . import _xgbjson
from .model_file import MAX_MODEL_BYTES, map_model_file
from .ubjson import decode_ubjson
from .xgboost_binary import decode_xgboost_binary, looks_like_xgboost_binary

__all__ = ["load_xgboost", "looks_like_xgboost", "xgboost_document"]

MAX_TREES = 1 << 24
MAX_OUTPUTS = 1 << 16
MAX_FEATURES = (1 << 31) - 1
#: the Python types a JSON number list may hold
_NUMBER_TYPES = frozenset({int, float, bool})
#: split index of a node XGBoost's pruner deleted (its ``kDeletedNodeMarker`` without the
#: default-left bit)
DELETED_SPLIT_INDEX = (1 << 31) - 1

# objective -> (ProbToMargin of base_score, output transform)
OBJECTIVES = {
    "reg:squarederror": ("identity", "identity"),
    "reg:linear": ("identity", "identity"),
    "reg:squaredlogerror": ("identity", "identity"),
    "reg:pseudohubererror": ("identity", "identity"),
    "reg:absoluteerror": ("identity", "identity"),
    "reg:quantileerror": ("identity", "identity"),
    "reg:logistic": ("logit", "xgb_logistic"),
    "binary:logistic": ("logit", "xgb_logistic"),
    "binary:logitraw": ("identity", "identity"),  # checked on 3.2: no ProbToMargin
    "count:poisson": ("log", "xgb_exp"),
    "reg:gamma": ("log", "xgb_exp"),
    "reg:tweedie": ("log", "xgb_exp"),
    "multi:softprob": ("identity", "xgb_softmax"),
    "multi:softmax": ("identity", "xgb_softmax_argmax"),
    "rank:pairwise": ("identity", "identity"),
    "rank:ndcg": ("identity", "identity"),
    "rank:map": ("identity", "identity"),
}


#: The fields of each object of a model document that this importer reads or knows to change no
#: score, per place in the document (JSON and UBJSON 1.0 to 3.4 and the legacy binary format's
#: decoding). A field outside them may change a score, so a model holding one is refused by
#: name (:func:`_refuse_unknown_fields`) rather than scored as if it were absent.
_KNOWN_FIELDS = {
    "": frozenset({"version", "learner"}),
    "learner": frozenset({"attributes", "feature_names", "feature_types", "gradient_booster",
                          "learner_model_param", "objective"}),
    "learner.learner_model_param": frozenset({"base_score", "boost_from_average", "num_class",
                                              "num_feature", "num_target"}),
    # training parameters of each objective: none of them enters a prediction
    "learner.objective": frozenset({
        "name", "reg_loss_param", "pseudo_huber_param", "poisson_regression_param",
        "tweedie_regression_param", "softmax_multiclass_param", "lambdarank_param",
        "lambda_rank_param", "quantile_loss_param", "aft_loss_param"}),
    # "gbtree": DART's booster before 3.3; "weight_drop": DART's weights (3.3: here; 3.4 and
    # later: inside "model")
    "learner.gradient_booster": frozenset({"name", "model", "gbtree", "weight_drop"}),
    "learner.gradient_booster.gbtree": frozenset({"name", "model"}),
    "model": frozenset({"gbtree_model_param", "trees", "tree_info", "iteration_indptr", "cats",
                        "weight_drop"}),
    "model.gbtree_model_param": frozenset({"num_trees", "num_parallel_tree",
                                           "size_leaf_vector"}),
    "model.cats": frozenset({"enc", "feature_segments", "sorted_idx"}),
    # "parents", "base_weights", "loss_changes", "leaf_child_counts" (1.0) are training
    # statistics; "sum_hessian" gives the covers
    "tree": frozenset({"id", "tree_param", "left_children", "right_children", "split_indices",
                       "split_conditions", "default_left", "split_type", "categories",
                       "categories_nodes", "categories_segments", "categories_sizes",
                       "parents", "base_weights", "loss_changes", "sum_hessian",
                       "leaf_child_counts", "leaf_weights"}),
    "tree.tree_param": frozenset({"num_nodes", "num_feature", "size_leaf_vector",
                                  "num_deleted"}),
}


def _refuse_unknown_fields(obj: Any, place: str, version: str, shown: str | None = None):
    """Raise ModelFormatError naming the first field of ``obj`` (a document object at
    ``place`` of :data:`_KNOWN_FIELDS`) this importer does not know."""
    if not isinstance(obj, dict):
        return                      # the typed access names what is wrong with it
    known = _KNOWN_FIELDS[place]
    if obj.keys() <= known:
        return
    field = sorted(str(k) for k in obj.keys() - known)[0]
    where = shown if shown is not None else place
    path = f"{where}.{field}" if where else field
    raise ModelFormatError(
        f"XGBoost model written by XGBoost {version}: field {path!r} is not one this importer "
        f"knows, and it may change the scores; refusing the model rather than scoring it as if "
        f"the field were absent")


def looks_like_xgboost(raw: bytes) -> bool:
    """Whether ``raw`` starts like an XGBoost JSON, UBJSON or legacy binary model (cheap, no
    validation)."""
    head = bytes(raw[:512]).lstrip(b"\xef\xbb\xbf \t\r\n")
    return (head.startswith(b"{") and b"learner" in head) or looks_like_xgboost_binary(raw)


def load_xgboost(source: Any) -> Ensemble:
    """Read an XGBoost model into the neutral :class:`~quickscorer.ir.Ensemble`.

    Parameters
    ----------
    source : dict, str, bytes, os.PathLike or xgboost.Booster
        A parsed JSON model, JSON text, JSON, UBJSON or legacy binary bytes, a path to a
        ``.json`` / ``.ubj`` / legacy binary (``.model``, ``.bin``) file, or an
        ``xgboost.Booster`` (or scikit-learn estimator).

    Raises
    ------
    ModelFormatError
        If the model is malformed (the message names the tree and field) or uses something
        this library does not score (vector-leaf trees, gblinear, an unknown objective).
    """
    source = _booster_json(source)
    fast = _load_json_fast(source)
    if fast is not None:
        return fast
    doc, fmt = xgboost_document(source)
    where = "XGBoost model"
    try:
        return _build(doc, fmt)
    except ModelFormatError:
        raise
    except (ValueError, TypeError, IndexError, KeyError, OverflowError, AttributeError,
            MemoryError, RecursionError) as exc:
        raise ModelFormatError(f"{where}: cannot read it ({type(exc).__name__}: {exc})") from None


def _booster_json(source: Any) -> Any:
    """An ``xgboost.Booster`` (or scikit-learn estimator) as its JSON bytes, which the C
    parser reads (UBJSON goes through a Python decoder: 0.16-0.20 s against 0.03-0.04 s for a
    1,000-tree model; XGBoost wrote the JSON in 0.11-0.15 s, the UBJSON in 0.03-0.11 s);
    anything else as it is."""
    if hasattr(source, "get_booster"):
        source = source.get_booster()
    if hasattr(source, "save_raw"):
        try:
            return bytes(source.save_raw(raw_format="json"))
        except TypeError:         # very old xgboost: no raw_format (the document path)
            return source
    return source


class _NotFast(Exception):
    """The C parser's model needs the document path (which then names any problem)."""


def _load_json_fast(source: Any) -> Ensemble | None:
    """The model read by the C parser (``_xgbjson.parse_model``: node arrays packed as they
    are read, a file mapped and its pages handed back as they are read) where ``source`` is
    JSON text, bytes, a mapped file or a path and the parser takes the model; else None,
    for :func:`xgboost_document` and the checks that name what is wrong."""
    mapped = None
    if isinstance(source, mmap.mmap):
        data = source
    elif isinstance(source, str) and source.lstrip().startswith("{"):
        try:
            data = source.encode("utf-8")
        except UnicodeEncodeError:
            return None
    elif isinstance(source, (bytes, bytearray)):
        data = source
    elif isinstance(source, (str, os.PathLike)):
        try:
            data = mapped = map_model_file(Path(source))
        except ModelFormatError:
            return None           # the document path reads it again and says why it cannot
    else:
        return None
    try:
        head = bytes(data[:256]).lstrip(b"\xef\xbb\xbf \t\r\n")
        if not (head[:1] == b"{" and head[1:].lstrip(b" \t\r\n")[:1] in (b'"', b"}")):
            return None           # UBJSON, legacy binary, or not a model
        got = _xgbjson.parse_model(data, MAX_NODES_PER_TREE,
                                   release_read=isinstance(data, mmap.mmap))
        if got is None:
            return None
        doc, trees, arrays = got
        try:
            return _build(doc, "json", parsed=(trees, arrays))
        except ModelFormatError:
            raise                 # about the document itself: the same message either way
        except (_NotFast, ValueError, TypeError, IndexError, KeyError, OverflowError,
                AttributeError, RecursionError):
            return None           # the document path names the problem
    finally:
        if mapped is not None and not isinstance(mapped, bytes):
            try:
                mapped.close()
            except BufferError:   # a view is still alive: the collector unmaps it
                pass


# --------------------------------------------------------------------------------------------
# source -> parsed document

def xgboost_document(source: Any) -> tuple[dict, str]:
    """``(document, format)``: the model as XGBoost's JSON document (parsed JSON or UBJSON,
    or decoded from the legacy binary format) and the format it was read from: ``"json"``,
    ``"ubj"``, ``"legacy binary"`` or ``"dict"``. Takes what :func:`load_xgboost` takes."""
    if hasattr(source, "get_booster"):            # XGBModel (scikit-learn API)
        source = source.get_booster()
    if hasattr(source, "save_raw"):               # xgboost.Booster, without importing xgboost
        try:
            return _parse_bytes(bytes(source.save_raw(raw_format="ubj")))
        except TypeError:                         # very old xgboost: no raw_format
            return _parse_bytes(bytes(source.save_raw()))
    if isinstance(source, dict):
        return source, "dict"
    if isinstance(source, mmap.mmap):             # a mapped file: its bytes, pages given back
        data = source[:]
        if hasattr(source, "madvise") and hasattr(mmap, "MADV_DONTNEED"):
            source.madvise(mmap.MADV_DONTNEED)
        return _parse_bytes(data)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _parse_bytes(bytes(source))
    if isinstance(source, str) and source.lstrip().startswith("{"):
        return _parse_json(source), "json"
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        try:
            if path.stat().st_size > MAX_MODEL_BYTES:
                raise ModelFormatError(f"{path}: too large to be a model")
            data = path.read_bytes()
        except OSError as exc:
            raise ModelFormatError(f"cannot read model file {path}: {exc}") from None
        return _parse_bytes(data)
    raise TypeError(f"cannot read an XGBoost model from {type(source).__name__}")


def _parse_bytes(data: bytes) -> tuple[dict, str]:
    if looks_like_xgboost_binary(data):
        doc, _about = decode_xgboost_binary(data)
        return doc, "legacy binary"
    head = data.lstrip(b"\xef\xbb\xbf \t\r\n")
    # JSON text opens with '{' then whitespace, a quote or '}'; UBJSON's '{' is followed by
    # a length marker of the first key, or by '$' / '#'.
    if head[:1] == b"{" and head[1:].lstrip(b" \t\r\n")[:1] in (b'"', b"}"):
        text = head
        return _parse_json(text), "json"
    if head[:1] != b"{":
        raise ModelFormatError(f"not an XGBoost JSON, UBJSON or legacy binary model (starts "
                               f"with {data[:8]!r})")
    doc = decode_ubjson(head)
    return doc, "ubj"


def _reject_constant(name: str):
    raise ModelFormatError(f"XGBoost JSON model holds {name}, which is not a number a model has")


def _parse_json(text: str | bytes) -> dict:
    """The JSON document: parsed by orjson where it is installed (2 to 3 times faster), else
    by the json module, which also parses whatever orjson refuses so that a bad document gets
    the same message either way."""
    if orjson is not None:
        try:
            doc = orjson.loads(text)
        except orjson.JSONDecodeError:
            doc = None
        if isinstance(doc, dict):
            return doc
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ModelFormatError(f"XGBoost JSON model is not UTF-8 text: {exc}") from None
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise ModelFormatError("XGBoost JSON model is nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise ModelFormatError(f"XGBoost JSON model does not parse: {exc}") from None


# --------------------------------------------------------------------------------------------
# typed access

def _get(obj: Any, key: str, where: str, kind=dict):
    if not isinstance(obj, dict):
        raise ModelFormatError(f"{where}: expected an object, found {type(obj).__name__}")
    if key not in obj:
        raise ModelFormatError(f"{where}: field '{key}' is missing")
    val = obj[key]
    if kind is not None and not isinstance(val, kind):
        raise ModelFormatError(f"{where}: field '{key}' is a {type(val).__name__}, "
                               f"expected {getattr(kind, '__name__', kind)}")
    return val


def _int_param(obj: dict, key: str, where: str, default: int | None = None,
               lo: int = 0, hi: int = MAX_FEATURES) -> int:
    if key not in obj and default is not None:
        return default
    raw = _get(obj, key, where, kind=None)
    try:
        val = int(str(raw).strip())
    except ValueError:
        raise ModelFormatError(f"{where}: field '{key}' = {str(raw)[:40]!r} is not an integer")\
            from None
    if not lo <= val <= hi:
        raise ModelFormatError(f"{where}: field '{key}' = {val} is outside [{lo}, {hi}]")
    return val


def _array(obj: dict, key: str, n: int, dtype, where: str, default=None) -> np.ndarray:
    """Field ``key`` as a 1-D numeric array of exactly ``n`` entries."""
    if key not in obj and default is not None:
        return np.full(n, default, dtype=dtype)
    raw = _get(obj, key, where, kind=None)
    if isinstance(raw, np.ndarray):
        arr = raw
    elif isinstance(raw, list):
        if not set(map(type, raw)) <= _NUMBER_TYPES:     # one C-level pass over the list
            raise ModelFormatError(f"{where}: field '{key}' holds a non-number")
        arr = np.asarray(raw, dtype=np.float64 if dtype in (np.float32, np.float64) else None)
    else:
        raise ModelFormatError(f"{where}: field '{key}' is not an array")
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ModelFormatError(f"{where}: field '{key}' has {arr.size} entries, expected {n}")
    if arr.dtype.kind == "f" and np.dtype(dtype).kind in "iub":
        if not np.isfinite(arr).all() or (arr != np.trunc(arr)).any():
            raise ModelFormatError(f"{where}: field '{key}' holds a non-integer")
    if np.dtype(dtype).kind in "iu" and arr.size:
        info = np.iinfo(np.int64)
        if arr.dtype.kind == "f" and (np.abs(arr) > 2.0**62).any():
            raise ModelFormatError(f"{where}: field '{key}' holds an absurd value")
        if arr.dtype.kind == "O" or (arr.dtype.kind == "u" and arr.max() > info.max):
            raise ModelFormatError(f"{where}: field '{key}' holds an absurd value")
    try:
        with np.errstate(over="ignore", invalid="ignore"):  # huge values: checked by callers
            return arr.astype(dtype)
    except (ValueError, TypeError, OverflowError):
        raise ModelFormatError(f"{where}: field '{key}' is not numeric") from None


def _sum_hessian(raw: Any, n: int) -> np.ndarray | None:
    """A tree's ``sum_hessian`` (the hessian mass of the training rows that reached each node:
    their count under squared error) as float64 of its float32 values, or None where it is
    absent or not ``n`` finite non-negative numbers. It is advisory (the node covers that
    pick the one-row kernel), so damage costs the model its covers, not its load."""
    value = raw.get("sum_hessian")
    if isinstance(value, list):
        if not set(map(type, value)) <= _NUMBER_TYPES:
            return None
        value = np.asarray(value, dtype=np.float64)
    if not isinstance(value, np.ndarray) or value.shape != (n,) or value.dtype.kind not in "iufb":
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        cover = value.astype(np.float32).astype(np.float64)
    if not (np.isfinite(cover).all() and (cover >= 0).all()):
        return None
    return cover


def _parse_base_score(raw: Any, where: str) -> np.ndarray:
    """``"5E-1"``, ``"[5E-1]"`` or ``"[a,b,c]"`` (or a number) -> float64 values."""
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        vals = [float(raw)]
    elif isinstance(raw, str):
        s = raw.strip()
        if s.startswith("[") and s.endswith("]"):
            s = s[1:-1]
        try:
            vals = [float(v) for v in s.split(",")] if s.strip() else []
        except ValueError:
            raise ModelFormatError(f"{where}: base_score {raw[:40]!r} is not a number") from None
    else:
        raise ModelFormatError(f"{where}: base_score is a {type(raw).__name__}")
    arr = np.asarray(vals, dtype=np.float64)
    if arr.size == 0 or not np.isfinite(arr).all():
        raise ModelFormatError(f"{where}: base_score {str(raw)[:40]!r} is not finite numbers")
    return arr


# --------------------------------------------------------------------------------------------
# document -> Ensemble

def _build(doc: dict, fmt: str, parsed: tuple | None = None) -> Ensemble:
    """The Ensemble of a document; ``parsed``: the trees list and packed node arrays of the C
    parser (raises _NotFast where they need the document path)."""
    where = "XGBoost model"
    learner = _get(doc, "learner", where)
    version = doc.get("version")
    version_str = (".".join(str(int(v)) for v in version)
                   if isinstance(version, (list, np.ndarray)) and len(version) == 3 else "?")
    if fmt == "legacy binary":   # it records major.minor only, and nothing before 1.0
        version_str = version_str.rsplit(".", 1)[0] if version is not None else "< 1.0"

    _refuse_unknown_fields(doc, "", version_str)
    _refuse_unknown_fields(learner, "learner", version_str)
    lmp = _get(learner, "learner_model_param", f"{where}: learner")
    _refuse_unknown_fields(lmp, "learner.learner_model_param", version_str)
    w = f"{where}: learner_model_param"
    n_features = _int_param(lmp, "num_feature", w, lo=1)
    num_class = _int_param(lmp, "num_class", w, default=0, hi=MAX_OUTPUTS)
    num_target = _int_param(lmp, "num_target", w, default=1, lo=1, hi=MAX_OUTPUTS)
    if num_class > 1 and num_target > 1:
        raise ModelFormatError(f"{w}: both num_class={num_class} and num_target={num_target}")
    n_outputs = max(num_class, num_target, 1)

    objective_doc = _get(learner, "objective", f"{where}: learner")
    _refuse_unknown_fields(objective_doc, "learner.objective", version_str)
    objective = _get(objective_doc, "name", f"{where}: learner.objective", kind=str)
    if objective not in OBJECTIVES:
        raise ModelFormatError(f"{where}: objective {objective!r} is not supported "
                               f"(supported: {', '.join(sorted(OBJECTIVES))})")
    margin_kind, transform = OBJECTIVES[objective]

    base = _parse_base_score(_get(lmp, "base_score", w, kind=None), w)
    if base.size == 1:
        base = np.repeat(base, n_outputs)
    elif base.size != n_outputs:
        raise ModelFormatError(f"{w}: base_score has {base.size} values for {n_outputs} outputs")
    margin = np.array([xgb_prob_to_margin(margin_kind, float(v)) for v in base], np.float64)
    if not np.isfinite(margin).all():
        raise ModelFormatError(f"{w}: base_score {base.tolist()} has no finite margin for "
                               f"{objective}")

    gb = _get(learner, "gradient_booster", f"{where}: learner")
    booster = _get(gb, "name", f"{where}: gradient_booster", kind=str)
    if booster == "gblinear":
        raise ModelFormatError(f"{where}: gblinear (a linear booster) is not a tree ensemble")
    if booster not in ("gbtree", "dart"):
        raise ModelFormatError(f"{where}: unknown gradient booster {booster!r}")
    _refuse_unknown_fields(gb, "learner.gradient_booster", version_str)
    # gbtree: {"model": {...}}; DART before 3.3: {"name": "dart", "gbtree": {"model": {...}},
    # "weight_drop": [...]}. From 3.3 DART is gbtree with dropout: {"name": "gbtree",
    # "model": {...}, "weight_drop": [...]} in 3.3, the weights inside "model" from 3.4.
    if "model" in gb:
        model = _get(gb, "model", f"{where}: gradient_booster")
        model_place = "learner.gradient_booster.model"
    else:
        inner = _get(gb, "gbtree", f"{where}: gradient_booster")
        _refuse_unknown_fields(inner, "learner.gradient_booster.gbtree", version_str)
        model = _get(inner, "model", f"{where}: gradient_booster.gbtree")
        model_place = "learner.gradient_booster.gbtree.model"
    _refuse_unknown_fields(model, "model", version_str, model_place)
    if isinstance(model.get("gbtree_model_param"), dict):
        _refuse_unknown_fields(model["gbtree_model_param"], "model.gbtree_model_param",
                               version_str, f"{model_place}.gbtree_model_param")
    trees_raw = _get(model, "trees", f"{where}: gbtree model", kind=list)
    n_trees = len(trees_raw)
    if n_trees == 0:
        raise ModelFormatError(f"{where}: the model has no trees")
    if n_trees > MAX_TREES:
        raise ModelFormatError(f"{where}: {n_trees} trees is absurd")
    for t, raw in enumerate(trees_raw):
        # XGBoost puts each tree at the position its id names (a repeated id crashes it):
        # the files it writes number them in order, and no other numbering is guessed at
        tid = raw.get("id", t) if isinstance(raw, dict) else t
        if isinstance(tid, bool) or not isinstance(tid, (int, np.integer)) or tid != t:
            raise ModelFormatError(f"{where}: tree {t} has id {tid!r} (the trees are "
                                   f"numbered 0 to {n_trees - 1} in order)")
    tree_info = _array(model, "tree_info", n_trees, np.int64, f"{where}: gbtree model")
    if ((tree_info < 0) | (tree_info >= n_outputs)).any():
        raise ModelFormatError(f"{where}: tree_info names an output outside [0, {n_outputs})")

    for t, raw in enumerate(trees_raw):
        _refuse_unknown_fields(raw, "tree", version_str, f"{model_place}.trees[{t}]")
        if isinstance(raw, dict):
            _refuse_unknown_fields(raw.get("tree_param"), "tree.tree_param", version_str,
                                   f"{model_place}.trees[{t}].tree_param")
    weights = _tree_weights(gb, model, booster, n_trees, where)
    categories = _category_encodings(model, n_features, where, version_str)

    vector = _leaf_vector_size(trees_raw)
    if vector > 1:        # a tree a leaf vector: one tree of its structure an output
        if parsed is not None:
            raise _NotFast()
        if vector != n_outputs:
            raise ModelFormatError(f"{where}: leaf vectors of {vector} values for "
                                   f"{n_outputs} outputs")
        trees = tuple(tree for t, raw in enumerate(trees_raw)
                      for tree in _vector_trees(t, raw, n_features, vector))
        tree_info = np.tile(np.arange(vector), n_trees)
        if weights is not None:
            weights = np.repeat(weights, vector)
        per_iteration = vector * _trees_per_iteration(model, n_trees, 1, where)
    else:
        if parsed is not None:
            trees = _packed_parsed(trees_raw, n_features, *parsed)
        else:
            trees = packed_trees_fast(trees_raw, n_features)
        if trees is None:     # the reference path: per tree, every check with its message
            trees = tuple(_tree(t, raw, n_features) for t, raw in enumerate(trees_raw))
        per_iteration = _trees_per_iteration(model, n_trees, n_outputs, where)

    names = learner.get("feature_names")
    feature_names = None
    if isinstance(names, list) and len(names) == n_features and all(isinstance(s, str)
                                                                    for s in names):
        feature_names = tuple(names)

    return Ensemble(
        category_recoding=categories,
        trees=trees,
        tree_group=tree_info,
        n_outputs=n_outputs,
        n_features=n_features,
        family="xgboost",
        base_score=margin,
        transform=transform,
        tree_weight=weights,
        feature_names=feature_names,
        source={"library": "xgboost", "version": version_str, "objective": objective,
                "format": fmt, "booster": booster},
        trees_per_iteration=per_iteration,
    )


def _tree_weights(gb: dict, model: dict, booster: str, n_trees: int,
                  where: str) -> np.ndarray | None:
    """Each tree's weight, ``weight_drop`` (DART, and from 3.3 any gbtree trained with
    dropout), wherever the release put it; None where every weight is 1 (a product by 1.0 in
    float32 is exact, so such weights change no score)."""
    holders = [h for h in (gb, model) if "weight_drop" in h]
    if not holders:
        if booster == "dart":
            raise ModelFormatError(f"{where}: dart: field 'weight_drop' is missing")
        return None
    got = [_array(h, "weight_drop", n_trees, np.float32, f"{where}: weight_drop")
           .astype(np.float64) for h in holders]
    if len(got) == 2 and not np.array_equal(got[0], got[1]):
        raise ModelFormatError(f"{where}: two different weight_drop lists (gradient_booster "
                               f"and its model)")
    weights = got[0]
    if not np.isfinite(weights).all():
        raise ModelFormatError(f"{where}: weight_drop holds a non-finite weight")
    return None if (weights == 1.0).all() else weights


#: the first release whose ``model.cats`` cuts string categories at byte offsets: earlier
#: ones cut the UTF-8 bytes of all of them at each one's length in characters, so a text
#: beyond ASCII is not in the file as itself
CATS_BYTE_OFFSETS_FROM = (3, 4)


def _category_encodings(model: dict, n_features: int, where: str,
                        version: str) -> dict[int, dict[str, int] | None] | None:
    """The categories each categorical feature was trained with (``model.cats``, from 3.1),
    as ``Ensemble.category_recoding``: XGBoost re-codes a DataFrame's categorical column to the
    index of each value among them, and refuses a value not among them. None where the model
    records none. String categories are UTF-8 bytes cut by ``offsets``; numeric ones are
    integers (a fractional category is refused by name). A feature whose texts a release
    before :data:`CATS_BYTE_OFFSETS_FROM` wrote beyond ASCII maps to None: the file does not
    hold them, and a DataFrame's column of it is refused (its codes as numbers are read)."""
    release = release_of(version)
    cut_by_characters = release is None or release < CATS_BYTE_OFFSETS_FROM
    cats = model.get("cats")
    if cats is None:
        return None
    w = f"{where}: cats"
    if not isinstance(cats, dict):
        raise ModelFormatError(f"{w} is not an object")
    _refuse_unknown_fields(cats, "model.cats", version, "cats")
    enc = cats.get("enc")
    if enc is None or (isinstance(enc, list) and not enc):
        return None               # no categories recorded (YDF's export writes "cats": {})
    if not isinstance(enc, list):
        raise ModelFormatError(f"{w}: field 'enc' is not a list")
    if len(enc) != n_features:
        raise ModelFormatError(f"{w}: 'enc' has {len(enc)} entries for {n_features} features")
    out: dict[int, dict[str, int]] = {}
    for j, e in enumerate(enc):
        wj = f"{w}: feature {j}"
        if not isinstance(e, dict):
            raise ModelFormatError(f"{wj}: expected an object")
        if not e.keys() <= {"offsets", "values", "type"}:
            field = sorted(e.keys() - {"offsets", "values", "type"})[0]
            raise ModelFormatError(f"{wj}: field {field!r} of a category encoding is not one "
                                   f"this importer knows")
        raw_values = e.get("values", [])
        values = (raw_values if isinstance(raw_values, np.ndarray)
                  else _array(e, "values", len(raw_values) if isinstance(raw_values, list)
                              else -1, np.float64, wj))
        if "type" in e:                            # numeric categories
            if values.size == 0:
                continue
            if (not np.isfinite(values).all() or (values != np.trunc(values)).any()
                    or (np.abs(values) >= 2.0**53).any()):
                raise ModelFormatError(f"{wj}: a category that is not an integer (this "
                                       f"importer reads integer and string categories)")
            texts = [str(int(v)) for v in values.tolist()]
        else:               # strings: UTF-8 bytes (as signed or unsigned 8-bit numbers)
            offsets = _array(e, "offsets", len(e.get("offsets", [])), np.int64, wj)
            if offsets.size == 0:
                continue
            data = values.astype(np.int64) if values.size else np.zeros(0, np.int64)
            if (offsets[0] != 0 or offsets[-1] != data.size or (np.diff(offsets) < 0).any()
                    or ((data < -128) | (data > 255)).any()):
                raise ModelFormatError(f"{wj}: the category strings' offsets or bytes are "
                                       f"damaged")
            blob = (data & 0xFF).astype(np.uint8).tobytes()
            if cut_by_characters and any(b > 127 for b in blob):
                out[j] = None
                continue
            try:
                texts = [blob[a:b].decode("utf-8")
                         for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]
            except UnicodeDecodeError:
                raise ModelFormatError(f"{wj}: a category is not UTF-8 text") from None
        if len(set(texts)) != len(texts):
            raise ModelFormatError(f"{wj}: a category is listed twice")
        out[j] = {text: k for k, text in enumerate(texts)}
    return out or None


def _trees_per_iteration(model: dict, n_trees: int, n_outputs: int, where: str) -> int:
    """Trees of one boosting round: from ``iteration_indptr`` (XGBoost 2 and later), else
    ``num_parallel_tree`` times the outputs (``gbtree_model_param``; 1 when absent)."""
    indptr = model.get("iteration_indptr")
    if isinstance(indptr, list) and len(indptr) >= 2:
        try:
            ptr = np.asarray(indptr, dtype=np.int64)
        except (TypeError, ValueError, OverflowError):
            raise ModelFormatError(
                f"{where}: iteration_indptr is not a list of integers") from None
        steps = np.diff(ptr)
        if ptr[0] != 0 or ptr[-1] != n_trees or (steps <= 0).any() or (steps != steps[0]).any():
            raise ModelFormatError(f"{where}: iteration_indptr does not split the {n_trees} "
                                   f"trees into equal rounds")
        return int(steps[0])
    param = model.get("gbtree_model_param")
    npt = 1
    if isinstance(param, dict) and "num_parallel_tree" in param:
        npt = _int_param(param, "num_parallel_tree", f"{where}: gbtree_model_param")
    if npt < 1 or n_trees % (npt * n_outputs):
        raise ModelFormatError(f"{where}: {n_trees} trees are not whole rounds of "
                               f"num_parallel_tree={npt} x {n_outputs} outputs")
    return npt * n_outputs


_FAST_FIELDS = ("left_children", "right_children", "split_indices", "split_conditions",
                "default_left")


def _tree_param_fits(param: dict, n: int) -> bool:
    """A tree's ``tree_param`` as the whole-model paths take it: no vector leaves, and
    ``num_nodes`` (where given) ``n``."""
    try:
        if "size_leaf_vector" in param and int(str(param["size_leaf_vector"])) > 1:
            return False
        return "num_nodes" not in param or int(str(param["num_nodes"])) == n
    except ValueError:
        return False


def _packed_parsed(trees_raw: list, n_features: int, trees: list,
                   arrays: dict[str, np.ndarray]) -> PackedTrees:
    """The PackedTrees of the C parser's arrays, after the checks it could not make: each
    tree's ``tree_param`` (:func:`_tree_param_fits`) and the features against
    ``num_feature``. Raises _NotFast where one fails, or where the parser's list of trees is
    not the model's."""
    if trees_raw is not trees:
        raise _NotFast()
    sizes = np.diff(arrays["node_offset"]) + np.diff(arrays["leaf_offset"])
    for raw, n in zip(trees_raw, sizes.tolist()):
        param = raw.get("tree_param", {})
        if not isinstance(param, dict) or not _tree_param_fits(param, n):
            raise _NotFast()
    feature = arrays["feature"]
    if feature.size and int(feature.max()) >= n_features:
        raise _NotFast()
    packed = dict(arrays)
    packed["missing_type"] = np.full(feature.shape[0], MISSING_NAN, np.uint8)
    packed["is_categorical"] = np.zeros(feature.shape[0], np.bool_)
    for arr in packed.values():
        if arr is not None:          # the covers, where a tree lacks them
            arr.setflags(write=False)
    return PackedTrees(packed)


def packed_trees_fast(trees_raw: list, n_features: int) -> PackedTrees | None:
    """All trees at once: each field of every tree concatenated and converted once, the
    checks of :func:`_tree` made on the whole arrays, the tree walks in one C call
    (``_build.pack_trees``). None where it declines: a tree the reference path (:func:`_tree`)
    would refuse (it then says why), categorical splits, pruned (deleted) nodes, vector leaves
    or fields it does not expect. Same PackedTrees as the reference path otherwise
    (``tests/test_xgboost_fast.py``)."""
    columns: dict[str, list] = {name: [] for name in _FAST_FIELDS}
    covers: list[np.ndarray] | None = []
    sizes = np.empty(len(trees_raw), np.int64)
    for t, raw in enumerate(trees_raw):
        if not isinstance(raw, dict):
            return None
        param = raw.get("tree_param", {})
        if not isinstance(param, dict):
            return None
        for name in _FAST_FIELDS:
            value = raw.get(name)
            if not isinstance(value, (list, np.ndarray)):
                return None
            columns[name].append(value)
        sizes[t] = n = len(raw["left_children"])
        if not 1 <= n <= MAX_NODES_PER_TREE:
            return None
        if any(len(columns[name][-1]) != n for name in _FAST_FIELDS):
            return None
        split_type = raw.get("split_type")
        if split_type is not None:
            if not isinstance(split_type, (list, np.ndarray)) or len(split_type) != n:
                return None
            if isinstance(split_type, list):
                if not set(map(type, split_type)) <= _NUMBER_TYPES:
                    return None
                split_type = np.array(split_type, dtype=np.float64)
            if split_type.dtype.kind not in "iufb" or (split_type != 0).any():
                return None        # categorical splits (or a damaged field)
        if not _tree_param_fits(param, n):
            return None
        if covers is not None:       # the covers are kept only if every tree gives them
            cover = _sum_hessian(raw, n)
            if cover is None:
                covers = None
            else:
                covers.append(cover)
    arrays = {}
    for name in _FAST_FIELDS:
        parts = columns[name]
        if all(type(p) is list for p in parts):
            flat = list(itertools.chain.from_iterable(parts))
            if not set(map(type, flat)) <= _NUMBER_TYPES:
                return None
            arr = np.array(flat, dtype=np.float64)
        elif all(isinstance(p, np.ndarray) and p.ndim == 1 and p.dtype.kind in "iufb"
                 for p in parts):
            arr = np.concatenate(parts).astype(np.float64)
        else:
            return None
        arrays[name] = arr
    cond64 = arrays["split_conditions"]
    whole = {name: arrays[name] for name in ("left_children", "right_children",
                                              "split_indices", "default_left")}
    for arr in whole.values():
        if not np.isfinite(arr).all() or (arr != np.trunc(arr)).any()\
                or (np.abs(arr) > 2.0**62).any():
            return None
    left = whole["left_children"].astype(np.int64)
    right = whole["right_children"].astype(np.int64)
    feature = whole["split_indices"].astype(np.int64)
    if ((whole["default_left"] != 0) & (whole["default_left"] != 1)).any():
        return None                # refused by the checked path, which names the node
    default_left = whole["default_left"] != 0
    leaf = left == -1
    if (leaf & (feature == DELETED_SPLIT_INDEX) & default_left).any():
        return None                # pruned nodes: the reference path leaves them out
    with np.errstate(over="ignore"):
        cond = cond64.astype(np.float32)
    internal = ~leaf
    if not np.isfinite(cond).all():
        return None
    if ((feature[internal] < 0) | (feature[internal] >= n_features)).any():
        return None
    node_offset = np.zeros(len(trees_raw) + 1, np.int64)
    np.cumsum(sizes, out=node_offset[1:])
    got = _walks.pack_trees(left, right, node_offset)
    if got[0] is None:
        return None
    inner, leaves, lref, rref, n_int, n_leaf = got
    local = np.arange(left.shape[0], dtype=np.int64) - np.repeat(node_offset[:-1], sizes)
    with np.errstate(over="ignore"):
        below = np.nextafter(cond[inner], np.float32(-np.inf)).astype(np.float64)
    packed = {
        "node_offset": np.concatenate([[0], np.cumsum(n_int)]).astype(np.int64),
        "leaf_offset": np.concatenate([[0], np.cumsum(n_leaf)]).astype(np.int64),
        "feature": feature[inner].astype(np.int32),
        "threshold": below,
        "left": lref,
        "right": rref,
        "default_left": default_left[inner],
        "missing_type": np.full(inner.shape[0], MISSING_NAN, np.uint8),
        "is_categorical": np.zeros(inner.shape[0], np.bool_),
        "node_source_id": local[inner].astype(np.int32),
        "leaf_value": cond[leaves].astype(np.float64),
        "leaf_source_id": local[leaves].astype(np.int32),
    }
    if covers is not None:
        cover = np.concatenate(covers)
        packed["node_cover"] = cover[inner]
        packed["leaf_cover"] = cover[leaves]
    for arr in packed.values():
        arr.setflags(write=False)
    return PackedTrees(packed)


def _leaf_vector_size(trees_raw: list) -> int:
    """The values a leaf holds (``tree_param.size_leaf_vector``, XGBoost's
    ``multi_strategy="multi_output_tree"``): 1 for scalar leaves; trees of both kinds in one
    model are refused."""
    sizes = set()
    for t, raw in enumerate(trees_raw):
        param = raw.get("tree_param", {}) if isinstance(raw, dict) else {}
        size = 1
        if isinstance(param, dict) and "size_leaf_vector" in param:
            size = max(1, _int_param(param, "size_leaf_vector", f"tree {t}: tree_param",
                                     hi=MAX_OUTPUTS))
        sizes.add(size)
    if len(sizes) > 1:
        raise ModelFormatError(f"XGBoost model: trees of leaf vectors of sizes {sorted(sizes)}")
    return sizes.pop()


def _vector_trees(t: int, raw: dict, n_features: int, size: int) -> list:
    """A tree of leaf vectors (``leaf_weights``: a leaf's ``size`` values, the leaf's number
    in ``right_children``) as ``size`` trees of its structure, tree ``k`` the leaves' value
    of output ``k``: XGBoost adds each value to its output in the trees' order, as the sum of
    these trees does, output by output."""
    where = f"tree {t}"
    left = _array(raw, "left_children", len(raw.get("left_children", ())), np.int64, where)
    n = left.shape[0]
    right = _array(raw, "right_children", n, np.int64, where)
    leaf = left == -1
    weights = _array(raw, "leaf_weights", len(raw.get("leaf_weights", ())), np.float32, where)
    number = right[leaf]
    if (number < 0).any() or ((number + 1) * size > weights.shape[0]).any() or \
            np.unique(number).shape[0] != number.shape[0]:
        raise ModelFormatError(f"{where}: its leaves' numbers do not index its {size}-value "
                               f"leaf_weights")
    cond = _array(raw, "split_conditions", n, np.float32, where)
    param = {**raw.get("tree_param", {}), "size_leaf_vector": "1"}
    out = []
    for k in range(size):
        values = cond.copy()
        values[leaf] = weights[number * size + k]
        kids = right.copy()
        kids[leaf] = -1
        scalar = {key: v for key, v in raw.items() if key not in ("leaf_weights",
                                                                     "base_weights")}
        out.append(_tree(t, {**scalar, "split_conditions": values.tolist(),
                             "right_children": kids.tolist(), "tree_param": param},
                         n_features))
    return out


def _tree(t: int, raw: Any, n_features: int):
    where = f"tree {t}"
    if not isinstance(raw, dict):
        raise ModelFormatError(f"{where}: expected an object")
    param = raw.get("tree_param", {})
    if isinstance(param, dict) and "size_leaf_vector" in param:
        slv = _int_param(param, "size_leaf_vector", f"{where}: tree_param")
        if slv > 1:
            raise ModelFormatError(f"{where}: vector-leaf trees (size_leaf_vector={slv}, "
                                   f"multi_strategy=multi_output_tree) are not supported")
    left_raw = _get(raw, "left_children", where, kind=None)
    if not isinstance(left_raw, (list, np.ndarray)):
        raise ModelFormatError(f"{where}: field 'left_children' is not an array")
    n = len(left_raw)
    if n == 0:
        raise ModelFormatError(f"{where}: empty tree (no nodes)")
    if n > MAX_NODES_PER_TREE:
        raise ModelFormatError(f"{where}: {n} nodes is more than the {MAX_NODES_PER_TREE} allowed")
    if isinstance(param, dict) and "num_nodes" in param:
        declared = _int_param(param, "num_nodes", f"{where}: tree_param", hi=MAX_NODES_PER_TREE)
        if declared != n:
            raise ModelFormatError(f"{where}: tree_param.num_nodes = {declared} but "
                                   f"left_children has {n} entries")
    left = _array(raw, "left_children", n, np.int64, where)
    right = _array(raw, "right_children", n, np.int64, where)
    feature = _array(raw, "split_indices", n, np.int64, where)
    cond = _array(raw, "split_conditions", n, np.float32, where)
    default_left = _array(raw, "default_left", n, np.int64, where)
    if ((default_left != 0) & (default_left != 1)).any():
        # XGBoost reads only 1 as "left" (5 or -1 go right): no value but 0 and 1 is a
        # model it wrote, so none is guessed at
        node = int(np.flatnonzero((default_left != 0) & (default_left != 1))[0])
        raise ModelFormatError(f"{where}: node {node} has default_left = "
                               f"{int(default_left[node])} (0 or 1 expected)")
    default_left = default_left != 0
    split_type = _array(raw, "split_type", n, np.int64, where, default=0)
    leaf = left == -1
    if (leaf != (right == -1)).any():
        node = int(np.flatnonzero(leaf != (right == -1))[0])
        raise ModelFormatError(f"{where}: node {node} has exactly one child")
    if ((split_type != 0) & (split_type != 1)).any():
        raise ModelFormatError(f"{where}: unknown split_type "
                               f"{int(split_type[(split_type != 0) & (split_type != 1)][0])}")
    is_cat = (split_type == 1) & ~leaf

    categories: dict[int, np.ndarray] = {}
    if is_cat.any():
        cat_nodes = _array(raw, "categories_nodes", len(raw.get("categories_nodes", ())),
                           np.int64, where)
        m = cat_nodes.size
        segments = _array(raw, "categories_segments", m, np.int64, where)
        sizes = _array(raw, "categories_sizes", m, np.int64, where)
        cats_all = _array(raw, "categories", len(raw.get("categories", ())), np.float64, where)
        for node, seg, size in zip(cat_nodes.tolist(), segments.tolist(), sizes.tolist()):
            if not 0 <= node < n or not is_cat[node]:
                raise ModelFormatError(f"{where}: categories_nodes names node {node}, "
                                       f"which is not a categorical split")
            if seg < 0 or size < 0 or seg + size > cats_all.size:
                raise ModelFormatError(f"{where}: node {node}: category segment "
                                       f"[{seg}, {seg + size}) is outside the {cats_all.size} "
                                       f"categories")
            if node in categories:
                raise ModelFormatError(f"{where}: node {node} has two category lists")
            cats = cats_all[seg:seg + size]
            if (cats < 0).any() or (cats > MAX_CATEGORY).any() or (cats != np.trunc(cats)).any():
                raise ModelFormatError(f"{where}: node {node} lists an invalid category")
            categories[node] = cats
        missing = np.flatnonzero(is_cat & ~np.isin(np.arange(n), cat_nodes))
        for node in missing.tolist():
            categories[int(node)] = np.zeros(0)   # an empty list: every category goes left

    # Nodes that XGBoost's pruner deleted (leaves marked by the largest split index with the
    # default-left bit) stay in the arrays, unreachable: leave them out, keeping the ids.
    # (tree_param.num_deleted is not checked: XGBoost 1.0's JSON writes 0 there.)
    keep = None
    deleted = leaf & (feature == DELETED_SPLIT_INDEX) & default_left
    if deleted.any():
        if deleted[0]:
            raise ModelFormatError(f"{where}: the root is marked deleted")
        keep = ~deleted
        new_index = np.cumsum(keep) - 1
        for child in (left, right):
            inside = (child >= 0) & (child < n)
            if deleted[child[inside]].any():
                node = int(np.flatnonzero(inside)[deleted[child[inside]]][0])
                raise ModelFormatError(f"{where}: node {node} has a deleted child")
        left = np.where((left >= 0) & (left < n), new_index[np.clip(left, 0, n - 1)], left)
        right = np.where((right >= 0) & (right < n), new_index[np.clip(right, 0, n - 1)], right)

    # IR: listed categories go left; XGBoost sends them right. Swap those children.
    ir_left = np.where(is_cat, right, left)
    ir_right = np.where(is_cat, left, right)
    ir_default_left = np.where(is_cat, ~default_left, default_left)

    with np.errstate(over="ignore"):
        below = np.nextafter(cond, np.float32(-np.inf)).astype(np.float64)
    threshold = np.where(leaf | is_cat, 0.0, below)
    value = np.where(leaf, cond.astype(np.float64), 0.0)
    if not np.isfinite(cond[~is_cat]).all():
        node = int(np.flatnonzero(~np.isfinite(cond) & ~is_cat)[0])
        raise ModelFormatError(f"{where}: node {node}: split_conditions is not finite")
    feature = np.where(leaf, 0, feature)
    if ((feature < 0) | (feature >= n_features)).any():
        node = int(np.flatnonzero((feature < 0) | (feature >= n_features))[0])
        raise ModelFormatError(f"{where}: node {node}: split_indices = {int(feature[node])} "
                               f"is outside [0, {n_features})")
    source_id = np.arange(n)
    cover = _sum_hessian(raw, n)
    if keep is not None:
        ir_left, ir_right, feature, threshold, ir_default_left, is_cat, value, source_id = (
            a[keep] for a in (ir_left, ir_right, feature, threshold, ir_default_left, is_cat,
                              value, source_id))
        cover = cover[keep] if cover is not None else None
        new_index = np.cumsum(keep) - 1
        categories = {int(new_index[node]): cats for node, cats in categories.items()}
    return build_tree(
        left=ir_left, right=ir_right, root=0, feature=feature, threshold=threshold,
        default_left=ir_default_left, missing_type=np.full(source_id.size, MISSING_NAN),
        is_categorical=is_cat, categories=categories, value=value,
        source_id=source_id, cover=cover, n_features=n_features, where=where)
