"""LightGBM text models (``model.txt``, ``Booster.model_to_string()``) -> :class:`Ensemble`.

The format and its scoring rules are described in ``docs/semantics.md``. Every field that decides a
prediction is checked against the tree's declared sizes before anything is built from it, so
a damaged file ends in a :class:`ModelFormatError` that names the tree and field, never in
an ``IndexError`` or a huge allocation.

Numbering handed to :func:`build_tree`: LightGBM's internal node ``i`` is source node ``i``,
its leaf ``j`` is source node ``num_leaves - 1 + j``. The reported ``source_id`` is ``i`` for
internal nodes and ``j`` for leaves, so ``Tree.leaf_source_id`` holds the leaf indices that
``Booster.predict(pred_leaf=True)`` returns.
"""
from __future__ import annotations

import json
import mmap
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ModelFormatError
from ..ir.ensemble import (
    MAX_CATEGORY,
    MAX_NODES_PER_TREE,
    MISSING_NAN,
    Ensemble,
    PackedTrees,
    Tree,
    build_tree,
)
from . import _lgbtext
from .model_file import map_model_file

__all__ = ["load_lightgbm", "looks_like_lightgbm_text", "parse_fast", "parse_reference"]

#: feature indices are int32 in LightGBM
MAX_FEATURES = (1 << 31) - 1
#: most leaves a tree may declare (its node count must stay within the IR's limit)
MAX_LEAVES = (MAX_NODES_PER_TREE + 1) // 2
#: a categorical bitset covering every category up to MAX_CATEGORY
MAX_BITSET_WORDS = MAX_CATEGORY // 32 + 1

_CATEGORICAL_BIT = 1
_DEFAULT_LEFT_BIT = 2
_KNOWN_DECISION_BITS = 0b1111

# Characters a number field may hold; float()/int() then validate each token. Excluding
# letters (other than the exponent) and "_" rejects "nan", "inf" and "1_0", which LightGBM
# never writes.
_NOT_FLOAT_CHARS = re.compile(r"[^0-9eE.+\-\s]")
# thresholds may also be "inf" / "-inf" (a split that separates only NaN from the rest)
_NOT_THRESHOLD_CHARS = re.compile(r"[^0-9eE.+\-\sinf]")
_NOT_INT_CHARS = re.compile(r"[^0-9+\-\s]")
_INT_TOKEN = re.compile(r"[+-]?\d{1,18}")
_INT_LIST = re.compile(r"[+-]?\d{1,18}(?: [+-]?\d{1,18})*")

# Objective name -> output transform. "sqrt" (for the names in _SQRT_OBJECTIVES) turns the
# transform into signed_square; LightGBM ignores it for every other objective.
_IDENTITY_OBJECTIVES = frozenset({
    "regression", "regression_l1", "huber", "fair", "quantile", "mape",
    "lambdarank", "rank_xendcg", "custom",
})
_SQRT_OBJECTIVES = frozenset({"regression", "regression_l1", "fair", "quantile", "mape"})
_EXP_OBJECTIVES = frozenset({"poisson", "gamma", "tweedie"})

# Sections that may follow the last tree: LightGBM 2.2 and later write 'end of trees' first;
# 2.0 and 2.1 go straight to the feature importances.
_TRAILER_SECTIONS = ("feature importances:", "feature_importances:", "parameters:",
                     "pandas_categorical:")

#: the header's fields: what scoring reads, and what it knows to change no score (the
#: feature ranges, the training's label column and monotone constraints)
_HEADER_FIELDS = frozenset({"version", "num_class", "num_tree_per_iteration", "label_index",
                            "max_feature_idx", "objective", "feature_names", "feature_infos",
                            "monotone_constraints", "tree_sizes"})
#: a tree's fields: what scoring reads, and the training statistics beside them
#: (``shrinkage`` is already applied to the leaf values LightGBM writes)
_TREE_FIELDS = frozenset({"num_leaves", "num_cat", "split_feature", "split_gain", "threshold",
                          "decision_type", "left_child", "right_child", "leaf_value",
                          "leaf_weight", "leaf_count", "internal_value", "internal_weight",
                          "internal_count", "cat_boundaries", "cat_threshold", "is_linear",
                          "shrinkage", "leaf_const", "num_features", "leaf_features",
                          "leaf_coeff"})


def _unknown_field(place: str, field: str, version: str | None) -> ModelFormatError:
    return ModelFormatError(
        f"LightGBM model (format {version or 'without a version line'}): {place} field "
        f"{field[:60]!r} is not one this importer knows, and it may change the scores; "
        f"refusing the model rather than scoring it as if the field were absent")


def looks_like_lightgbm_text(data: bytes | str) -> bool:
    """Whether ``data`` starts like a LightGBM text model (a ``tree`` line, then ``key=value``).

    A cheap test on the first bytes, for format detection; it does not validate the model.
    """
    head = data[:4096]
    if isinstance(head, (bytes, bytearray, memoryview)):
        head = bytes(head).decode("latin-1")
    head = head.lstrip("\ufeff\xef\xbb\xbf \t\r\n")
    first, _, rest = head.partition("\n")
    if first.rstrip("\r") != "tree":
        return False
    return "=" in rest.partition("\n")[0] or rest.startswith("Tree=")


def load_lightgbm(source: Any, *, utf8_errors: str = "strict") -> Ensemble:
    """Read a LightGBM model into the neutral :class:`~quickscorer.ir.Ensemble`.

    Parameters
    ----------
    source : str, os.PathLike, bytes or lightgbm.Booster
        A path to a text model file, the text of a model (a string holding a ``tree`` header
        line and ``Tree=`` blocks), its bytes, or a ``lightgbm.Booster`` (every iteration is
        taken, not ``best_iteration``).
    utf8_errors : str
        How bytes that are not UTF-8 are read (``"strict"``: refused; ``"replace"``: as
        U+FFFD, which ``quickscorer.load`` uses, as LightGBM reads names as plain bytes).

    Returns
    -------
    Ensemble
        ``family="lightgbm"``, ``base_score`` 0, one output per tree of an iteration.

    Raises
    ------
    ModelFormatError
        If the model is malformed (the message names the tree and field) or uses an objective
        this library does not know.
    """
    data, what = _data_of(source)
    fast = parse_fast(data, utf8_errors)
    if fast is not None:
        return fast
    text = data if isinstance(data, str) else _decode(data, what, utf8_errors)
    return parse_reference(text)


def parse_reference(text: str) -> Ensemble:
    """The Python parser: the reference for what a valid model is, and the source of every
    error message (the fast path declines what it would refuse)."""
    where = "LightGBM model"
    parser = _Parser(text)
    try:
        return parser.parse()
    except ModelFormatError:
        raise
    except (ValueError, TypeError, IndexError, KeyError, OverflowError, MemoryError,
            RecursionError, AttributeError) as exc:
        # Last line of defence: every expected failure is checked explicitly above.
        raise ModelFormatError(
            f"{where}: {parser.where}: cannot parse ({type(exc).__name__}: {exc})") from None


def _pandas_categorical(tail: str) -> tuple[tuple, ...] | None:
    """The ``pandas_categorical:`` line LightGBM's Python package writes last (JSON: the
    categories of each categorical column of the training DataFrame, in column order), or None
    where it is absent or null."""
    start = tail.rfind("pandas_categorical:")
    if start < 0 or (start and tail[start - 1] != "\n"):
        return None
    text = tail[start + len("pandas_categorical:"):].strip()
    try:
        value = json.loads(text) if text else None
    except ValueError:
        raise ModelFormatError(f"LightGBM model: pandas_categorical {text[:40]!r} is not "
                               f"JSON") from None
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(c, list) for c in value):
        raise ModelFormatError("LightGBM model: pandas_categorical is not a list of category "
                               "lists")
    for c in value:
        if not all(isinstance(v, (str, int, float)) for v in c) or len(set(c)) != len(c):
            raise ModelFormatError("LightGBM model: pandas_categorical holds a category that "
                                   "is not a text or a number, or one listed twice")
    return tuple(tuple(c) for c in value)


def _ensemble(trees, header: dict[str, Any], ended_by: str | None,
              tail: str = "") -> Ensemble:
    """The Ensemble of parsed trees (Tree objects or PackedTrees), the header and the text
    after the trees."""
    k = header["n_outputs"]
    return Ensemble(
        pandas_categorical=_pandas_categorical(tail),
        trees=trees,
        tree_group=np.arange(len(trees), dtype=np.int64) % k,
        n_outputs=k,
        n_features=header["n_features"],
        family="lightgbm",
        base_score=np.zeros(k),
        transform=header["transform"],
        transform_params=header["transform_params"],
        average_output=header["average_output"],
        feature_names=header["feature_names"],
        trees_per_iteration=k,
        source={
            "library": "lightgbm",
            "version": header["version"],
            "format": ("text" if ended_by == "end of trees" else
                       "text without 'end of trees' (LightGBM 2.0 / 2.1 layout)"),
            "objective": header["objective"],
        },
    )


def parse_fast(data: bytes | str, utf8_errors: str = "strict") -> Ensemble | None:
    """The model parsed by the C tree parser (``_lgbtext``) into flat arrays, or None where it
    declines: a model the reference parser would refuse (it then says why), or one with
    categorical splits or linear trees. Same Ensemble as :func:`parse_reference` otherwise
    (``tests/test_lightgbm_fast.py``)."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    start = raw.find(b"\nTree=")
    if start < 0:
        return None
    try:
        head = raw[:start + 1].decode("utf-8", utf8_errors)
    except UnicodeDecodeError:
        return None
    parser = _Parser(head)
    try:
        header = parser.header()
    except (ModelFormatError, ValueError):
        return None
    parser.skip_blank()
    if parser.peek() is not None:     # something ended the header before the trees
        return None
    got = _lgbtext.parse_trees(np.frombuffer(raw, np.uint8), start + 1, header["n_features"],
                               MAX_LEAVES, isinstance(raw, mmap.mmap))
    if got is None:
        return None
    arrays, n_trees, stop = got
    declared = header["tree_sizes"]
    if n_trees == 0 or n_trees % header["n_outputs"]:
        return None
    if declared is not None and len(declared) != n_trees:
        return None
    ended_by = None
    tail = ""
    if stop < len(raw):
        end = raw.find(b"\n", stop)
        ended_by = raw[stop:len(raw) if end < 0 else end].decode("ascii").strip()
        try:
            tail = raw[stop:].decode("utf-8", utf8_errors)   # as the reference decodes it
        except UnicodeDecodeError:
            return None
    elif declared is None:
        return None                        # ends without the trees' end: truncated?
    n_nodes = arrays["feature"].shape[0]
    arrays["is_categorical"] = _ro_zeros(n_nodes, np.bool_)
    try:
        return _ensemble(PackedTrees(arrays), header, ended_by, tail)
    except ModelFormatError:
        return None                        # the reference parser names the problem


def _ro_zeros(n: int, dtype) -> np.ndarray:
    a = np.zeros(n, dtype)
    a.setflags(write=False)
    return a


# --------------------------------------------------------------------------------------------
# source -> text

def _data_of(source: Any) -> tuple[bytes | str | mmap.mmap, str]:
    """The model's text (str) or its file's bytes, and what to call it in a message."""
    if hasattr(source, "model_to_string"):  # lightgbm.Booster, without importing lightgbm
        text = source.model_to_string(num_iteration=-1)
        if not isinstance(text, str):
            raise ModelFormatError(
                f"{type(source).__name__}.model_to_string() returned {type(text).__name__}, "
                f"not a string")
        return text, "LightGBM model text"
    if isinstance(source, mmap.mmap):
        return source, "LightGBM model file"
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source), "LightGBM model bytes"
    if isinstance(source, str) and "\n" in source:
        return source, "LightGBM model text"
    if isinstance(source, (str, os.PathLike)):
        path = Path(source)
        return map_model_file(path, "LightGBM model file"), str(path)
    raise TypeError(f"cannot load a LightGBM model from {type(source).__name__}: expected a "
                    f"path, the model text or a lightgbm.Booster")


def _decode(data: bytes | mmap.mmap, what: str, errors: str = "strict") -> str:
    try:
        return (data[:] if isinstance(data, mmap.mmap) else data).decode("utf-8", errors)
    except UnicodeDecodeError as exc:
        raise ModelFormatError(f"{what}: not a LightGBM text model (not UTF-8: {exc})") from None


# --------------------------------------------------------------------------------------------
# parsing

class _Parser:
    """One pass over the lines of a model text; ``where`` tracks the part being read."""

    def __init__(self, text: str) -> None:
        # Lines are cut from the text one at a time (no list of every line: a 20,000-tree
        # model has millions); ``pos`` counts the lines consumed, for messages.
        self.text = text
        self.off = 0          # where the current line starts in the text
        self.pos = 0
        self.where = "header"
        self.version: str | None = None
        self._cut: tuple[int, str, int] | None = None   # (offset, line, next offset)

    # -- lines ---------------------------------------------------------------------------

    def _current(self) -> tuple[str, int] | None:
        if self.off > len(self.text) or (self.off == len(self.text) and self.pos > 0
                                          and not self.text.endswith("\n")):
            return None
        cut = self._cut
        if cut is None or cut[0] != self.off:
            end = self.text.find("\n", self.off)
            end = len(self.text) if end < 0 else end
            cut = self._cut = (self.off, self.text[self.off:end], end + 1)
        return cut[1], cut[2]

    def _advance(self) -> None:
        got = self._current()
        if got is not None:
            self.off = got[1]
            self.pos += 1

    def _next_line(self) -> str | None:
        got = self._current()
        if got is None:
            return None
        self._advance()
        return got[0].rstrip("\r")

    def peek(self) -> str | None:
        got = self._current()
        return None if got is None else got[0].rstrip("\r")

    def skip_blank(self) -> None:
        while True:
            got = self._current()
            if got is None or got[0].strip():
                return
            self._advance()

    # -- whole model -----------------------------------------------------------------------

    def parse(self) -> Ensemble:
        header = self.header()
        n_features = header["n_features"]
        declared = header["tree_sizes"]
        trees = []
        # The trees are the Tree= blocks after the header; they end at the first other line,
        # as LightGBM 4 reads them: 'end of trees' (LightGBM >= 2.2) or, in files written by
        # 2.0 / 2.1, the section that follows the trees directly.
        tail_start = len(self.text)
        while True:
            self.skip_blank()
            line_start = self.off
            line = self._next_line()
            if line is None:
                if declared is not None and len(trees) == len(declared):
                    ended_by = None
                    break   # every tree that tree_sizes declares is here
                raise ModelFormatError(
                    f"LightGBM model: the text ends after {len(trees)} trees without the "
                    f"'end of trees' line" + (
                        f" (tree_sizes declares {len(declared)})" if declared is not None
                        else "") + " (truncated file?)")
            stripped = line.strip()
            if stripped == "end of trees" or stripped.startswith(_TRAILER_SECTIONS):
                ended_by = stripped
                tail_start = line_start
                break
            if not line.startswith("Tree="):
                raise ModelFormatError(
                    f"LightGBM model: line {self.pos}: expected 'Tree={len(trees)}', "
                    f"'end of trees' or a section after the trees, found {line[:40]!r}")
            self.where = f"tree {len(trees)}"
            index = line[len("Tree="):].strip()
            if index != str(len(trees)):
                raise ModelFormatError(
                    f"LightGBM model: line {self.pos}: tree {len(trees)} is labelled "
                    f"{line[:40]!r} (trees must be numbered 0, 1, 2, ... in order)")
            trees.append(self._tree(len(trees), n_features))
        if trees and declared is not None and len(trees) != len(declared):
            raise ModelFormatError(
                f"LightGBM model: tree_sizes declares {len(declared)} trees but the text "
                f"holds {len(trees)} (truncated or edited file?)")

        self.where = "model"
        k = header["n_outputs"]
        if not trees:
            raise ModelFormatError("LightGBM model: the model has no trees")
        if len(trees) % k:
            raise ModelFormatError(
                f"LightGBM model: {len(trees)} trees is not a whole number of iterations of "
                f"num_tree_per_iteration={k} trees")
        return _ensemble(trees, header, ended_by, self.text[tail_start:])

    # -- header ----------------------------------------------------------------------------

    def header(self) -> dict[str, Any]:
        self.skip_blank()
        first = self._next_line()
        if first is None or first.strip().lstrip("\ufeff") != "tree":
            shown = "" if first is None else first[:40]
            raise ModelFormatError(
                f"not a LightGBM text model: the first line is {shown!r}, expected 'tree'")
        values: dict[str, str] = {}
        bare: list[str] = []          # lines without '=': average_output alone is known
        average_output = False
        while True:
            line = self.peek()
            if (line is None or line.startswith("Tree=") or line.strip() == "end of trees"
                    or line.strip().startswith(_TRAILER_SECTIONS)):
                break
            self._advance()
            if not line.strip():
                continue
            if "=" not in line:
                if line.strip() == "average_output":
                    average_output = True
                else:
                    bare.append(line.strip())
                continue
            key, _, value = line.partition("=")
            key = key.strip()
            if key in values:
                raise ModelFormatError(f"LightGBM model header: '{key}' is given twice")
            values[key] = value.strip()
        for key in [*values, *bare]:
            if key not in _HEADER_FIELDS:
                raise _unknown_field("header", key, values.get("version"))

        def header_int(key: str, lo: int, hi: int, default: int | None = None) -> int:
            if key not in values:
                if default is not None:
                    return default
                raise ModelFormatError(f"LightGBM model header: the '{key}' line is missing")
            v = values[key]
            if not _INT_TOKEN.fullmatch(v):
                raise ModelFormatError(
                    f"LightGBM model header: '{key}' is {v[:40]!r}, not an integer")
            n = int(v)
            if not lo <= n <= hi:
                raise ModelFormatError(
                    f"LightGBM model header: '{key}' is {n}, expected {lo} to {hi}")
            return n

        num_class = header_int("num_class", 1, MAX_NODES_PER_TREE)
        k = header_int("num_tree_per_iteration", 1, MAX_NODES_PER_TREE, default=num_class)
        if k != num_class:
            raise ModelFormatError(
                f"LightGBM model header: num_tree_per_iteration={k} but num_class={num_class}")
        n_features = header_int("max_feature_idx", 0, MAX_FEATURES - 1) + 1

        feature_names = None
        if "feature_names" in values:
            names = values["feature_names"].split()
            if len(names) != n_features:
                raise ModelFormatError(
                    f"LightGBM model header: {len(names)} feature_names for max_feature_idx="
                    f"{n_features - 1} ({n_features} features)")
            feature_names = tuple(names)
        if "feature_infos" in values:
            infos = values["feature_infos"].split()
            if len(infos) != n_features:
                raise ModelFormatError(
                    f"LightGBM model header: {len(infos)} feature_infos for {n_features} "
                    f"features")

        tree_sizes = None
        if "tree_sizes" in values:
            sizes = values["tree_sizes"]
            if sizes and not _INT_LIST.fullmatch(sizes):
                raise ModelFormatError(
                    f"LightGBM model header: tree_sizes {sizes[:40]!r} is not a list of "
                    f"integers")
            tree_sizes = sizes.split()

        objective = values.get("objective")
        transform, params = _objective_transform(objective, k)
        self.version = values.get("version")
        return {
            "version": values.get("version"),
            "n_outputs": k,
            "n_features": n_features,
            "feature_names": feature_names,
            "objective": objective,
            "transform": transform,
            "transform_params": params,
            "average_output": average_output,
            "tree_sizes": tree_sizes,
        }

    # -- one tree --------------------------------------------------------------------------

    def _tree(self, t: int, n_features: int) -> Tree:
        where = f"tree {t}"
        fields: dict[str, str] = {}
        while True:
            line = self.peek()
            if line is None or not line.strip():
                break
            if (line.startswith("Tree=") or line.strip() == "end of trees"
                    or line.strip().startswith(_TRAILER_SECTIONS)):
                break
            self._advance()
            if "=" not in line:
                raise ModelFormatError(
                    f"{where}: line {self.pos}: expected 'field=values', found {line[:40]!r}")
            key, _, value = line.partition("=")
            key = key.strip()
            if key in fields:
                raise ModelFormatError(f"{where}: field '{key}' is given twice")
            if key not in _TREE_FIELDS:
                raise _unknown_field(f"{where}:", key, self.version)
            fields[key] = value

        f = _Fields(fields, where)
        num_leaves = f.scalar_int("num_leaves", 1, MAX_LEAVES)
        num_cat = f.scalar_int("num_cat", 0, MAX_LEAVES)
        leaf_value = f.floats("leaf_value", num_leaves)
        is_linear = f.scalar_int("is_linear", 0, 1, default=0)
        m = num_leaves - 1  # internal nodes
        k = 2 * num_leaves - 1

        if m == 0:
            if num_cat:
                raise ModelFormatError(f"{where}: num_cat={num_cat} in a tree without splits")
            left = right = np.full(1, -1, np.int64)
            feature = np.zeros(1, np.int64)
            threshold = np.zeros(1)
            default_left = is_cat = np.zeros(1, bool)
            missing = np.zeros(1, np.int64)
            categories: dict[int, np.ndarray] = {}
        else:
            split_feature = f.ints("split_feature", m, 0, n_features - 1)
            thr = f.floats("threshold", m, allow_inf=True)
            decision = f.ints("decision_type", m, -128, 127)
            lc = f.ints("left_child", m, -num_leaves, m - 1)
            rc = f.ints("right_child", m, -num_leaves, m - 1)

            bad = (decision & ~_KNOWN_DECISION_BITS) != 0
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise ModelFormatError(
                    f"{where}: node {i}: decision_type {decision[i]} sets bits this library "
                    f"does not know")
            is_cat = (decision & _CATEGORICAL_BIT) != 0
            missing = (decision >> 2) & 3
            if (missing > MISSING_NAN).any():
                i = int(np.flatnonzero(missing > MISSING_NAN)[0])
                raise ModelFormatError(
                    f"{where}: node {i}: decision_type {decision[i]} has the invalid missing "
                    f"type 3")
            # A categorical node sends NaN right whatever its default-left bit says.
            default_left = ((decision & _DEFAULT_LEFT_BIT) != 0) & ~is_cat

            categories = {}
            if is_cat.any() or num_cat:
                categories = self._categories(f, where, thr, is_cat, num_cat)
            threshold = np.where(is_cat, 0.0, thr)

            def source_children(c: np.ndarray) -> np.ndarray:
                # leaf ~c is source node m + ~c
                return np.where(c >= 0, c, m + ~c)

            left = np.concatenate([source_children(lc), np.full(num_leaves, -1, np.int64)])
            right = np.concatenate([source_children(rc), np.full(num_leaves, -1, np.int64)])
            pad_i = np.zeros(num_leaves, np.int64)
            pad_b = np.zeros(num_leaves, bool)
            feature = np.concatenate([split_feature, pad_i])
            threshold = np.concatenate([threshold, np.zeros(num_leaves)])
            default_left = np.concatenate([default_left, pad_b])
            is_cat = np.concatenate([is_cat, pad_b])
            missing = np.concatenate([missing, pad_i])

        linear = self._linear(f, where, num_leaves, m, n_features) if is_linear else None
        value = np.concatenate([np.zeros(m), leaf_value])
        source_id = np.concatenate([np.arange(m), np.arange(num_leaves)])
        assert left.shape[0] == k
        return build_tree(
            left=left, right=right, root=0, feature=feature, threshold=threshold,
            default_left=default_left, missing_type=missing, is_categorical=is_cat,
            categories=categories, value=value, source_id=source_id, linear=linear,
            cover=self._cover(f, num_leaves, m), n_features=n_features, where=where)

    @staticmethod
    def _cover(f: _Fields, num_leaves: int, m: int) -> np.ndarray | None:
        """The training rows of each source node (internal_count, then leaf_count), or None
        where the tree does not give them as non-negative integers: they are advisory, so a
        damaged count costs the model its covers, not its load."""
        try:
            leaf = f.ints("leaf_count", num_leaves, 0, None, allow_absent=True)
            internal = (f.ints("internal_count", m, 0, None, allow_absent=True) if m
                        else np.zeros(0, np.int64))
        except (ModelFormatError, OverflowError, ValueError):
            return None
        if leaf.shape[0] != num_leaves or internal.shape[0] != m:
            return None          # absent
        return np.concatenate([internal, leaf]).astype(np.float64)

    @staticmethod
    def _categories(f: _Fields, where: str, thr: np.ndarray, is_cat: np.ndarray,
                    num_cat: int) -> dict[int, np.ndarray]:
        """Category list of each categorical node, from its bitset."""
        if num_cat == 0:
            i = int(np.flatnonzero(is_cat)[0])
            raise ModelFormatError(f"{where}: node {i} is categorical but num_cat=0")
        bounds = f.ints("cat_boundaries", num_cat + 1, 0, None)
        if bounds[0] != 0 or (np.diff(bounds) < 0).any():
            raise ModelFormatError(
                f"{where}: cat_boundaries must start at 0 and never decrease")
        words = f.ints("cat_threshold", int(bounds[-1]), 0, (1 << 32) - 1)
        out = {}
        for i in np.flatnonzero(is_cat).tolist():
            c = float(thr[i])
            if not (0 <= c < num_cat and c == int(c)):
                raise ModelFormatError(
                    f"{where}: node {i}: categorical threshold {c!r} is not an index into "
                    f"cat_boundaries (num_cat={num_cat})")
            lo, hi = int(bounds[int(c)]), int(bounds[int(c) + 1])
            if hi - lo > MAX_BITSET_WORDS:
                raise ModelFormatError(
                    f"{where}: node {i}: cat_threshold bitset of {hi - lo} words goes beyond "
                    f"category {MAX_CATEGORY}")
            bits = np.unpackbits(words[lo:hi].astype("<u4").view(np.uint8), bitorder="little")
            out[i] = np.flatnonzero(bits)
        return out

    @staticmethod
    def _linear(f: _Fields, where: str, num_leaves: int, m: int,
                n_features: int) -> dict[int, tuple[float, np.ndarray, np.ndarray]]:
        """``{source leaf node: (const, features, coeffs)}`` of a linear tree."""
        const = f.floats("leaf_const", num_leaves)
        counts = f.ints("num_features", num_leaves, 0, n_features)
        total = int(counts.sum())
        feats = f.ints("leaf_features", total, 0, n_features - 1, allow_absent=total == 0)
        coeffs = f.floats("leaf_coeff", total, allow_absent=total == 0)
        offsets = np.concatenate([[0], np.cumsum(counts)])
        return {m + j: (float(const[j]), feats[offsets[j]:offsets[j + 1]],
                        coeffs[offsets[j]:offsets[j + 1]])
                for j in range(num_leaves)}


class _Fields:
    """Typed, size-checked access to the ``key=value`` lines of one tree."""

    def __init__(self, fields: dict[str, str], where: str) -> None:
        self.fields = fields
        self.where = where

    def _get(self, key: str, allow_absent: bool = False) -> str | None:
        if key not in self.fields:
            if allow_absent:
                return None
            raise ModelFormatError(f"{self.where}: the '{key}' field is missing")
        return self.fields[key]

    def _tokens(self, key: str, n: int, bad_chars: re.Pattern,
                allow_absent: bool) -> list[str]:
        value = self._get(key, allow_absent)
        if value is None:
            return []
        m = bad_chars.search(value)
        if m:
            # name the whole value the character sits in ('nan', not 'a')
            start = max(value.rfind(" ", 0, m.start()), value.rfind("\t", 0, m.start())) + 1
            token = value[start:].split(None, 1)[0][:40]
            raise ModelFormatError(
                f"{self.where}: field '{key}' holds {token!r}, which is not a number "
                f"this field can hold")
        tokens = value.split()
        if len(tokens) != n:
            raise ModelFormatError(
                f"{self.where}: field '{key}' has {len(tokens)} values, expected {n}")
        return tokens

    def scalar_int(self, key: str, lo: int, hi: int, default: int | None = None) -> int:
        value = self._get(key, allow_absent=default is not None)
        if value is None:
            return int(default)  # type: ignore[arg-type]
        v = value.strip()
        if not _INT_TOKEN.fullmatch(v):
            raise ModelFormatError(f"{self.where}: field '{key}' is {v[:40]!r}, not an integer")
        n = int(v)
        if not lo <= n <= hi:
            raise ModelFormatError(f"{self.where}: field '{key}' is {n}, expected {lo} to {hi}")
        return n

    def ints(self, key: str, n: int, lo: int, hi: int | None,
             allow_absent: bool = False) -> np.ndarray:
        tokens = self._tokens(key, n, _NOT_INT_CHARS, allow_absent)
        if tokens and not _INT_LIST.fullmatch(" ".join(tokens)):  # one C-level match per field
            tok = next(t for t in tokens if not _INT_TOKEN.fullmatch(t))
            raise ModelFormatError(
                f"{self.where}: field '{key}' holds {tok[:40]!r}, not an integer")
        a = np.array(tokens, dtype=np.int64) if tokens else np.zeros(0, np.int64)
        out_of_range = (a < lo) if hi is None else ((a < lo) | (a > hi))
        if out_of_range.any():
            i = int(np.flatnonzero(out_of_range)[0])
            expected = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
            raise ModelFormatError(
                f"{self.where}: field '{key}' entry {i} is {a[i]}, expected {expected}")
        return a

    def floats(self, key: str, n: int, allow_absent: bool = False,
               allow_inf: bool = False) -> np.ndarray:
        tokens = self._tokens(key, n, _NOT_THRESHOLD_CHARS if allow_inf else _NOT_FLOAT_CHARS,
                              allow_absent)
        try:
            a = np.array(tokens, dtype=np.float64)  # numpy parses the strings, rounding as float()
        except ValueError:
            bad = next(t for t in tokens if not _is_float(t))
            raise ModelFormatError(
                f"{self.where}: field '{key}' holds {bad[:40]!r}, not a number") from None
        # only a literal "inf" may be infinite; "1e999" is an overflow, not a value written
        for i in np.flatnonzero(np.isinf(a)):
            if tokens[i].lstrip("+-") != "inf":
                raise ModelFormatError(
                    f"{self.where}: field '{key}' holds {tokens[i][:40]!r}, which overflows")
        return a


def _is_float(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


# --------------------------------------------------------------------------------------------
# objective -> transform

def _objective_transform(objective: str | None, n_outputs: int) -> tuple[str, dict[str, Any]]:
    """Output transform and its parameters for an ``objective=`` header value."""
    if objective is None:  # custom objective: LightGBM writes no objective line
        return "identity", {}
    tokens = objective.split()
    if not tokens:
        raise ModelFormatError("LightGBM model header: the objective line is empty")
    name, rest = tokens[0], tokens[1:]
    params: dict[str, str] = {}
    flags = set()
    for tok in rest:
        if ":" in tok:
            key, _, value = tok.partition(":")
            params[key] = value
        else:
            flags.add(tok)

    def sigmoid() -> float:
        if "sigmoid" not in params:
            raise ModelFormatError(
                f"LightGBM model header: objective {objective!r} gives no sigmoid parameter")
        try:
            s = float(params["sigmoid"])
        except ValueError:
            s = float("nan")
        if not (np.isfinite(s) and s > 0):
            raise ModelFormatError(
                f"LightGBM model header: objective {objective!r}: sigmoid must be a positive "
                f"number")
        return s

    def check_num_class() -> None:
        v = params.get("num_class")
        if v is None or not _INT_TOKEN.fullmatch(v) or int(v) != n_outputs:
            raise ModelFormatError(
                f"LightGBM model header: objective {objective!r} does not match "
                f"num_tree_per_iteration={n_outputs}")

    if n_outputs != 1 and name not in ("multiclass", "multiclassova", "custom"):
        raise ModelFormatError(
            f"LightGBM model header: objective {name!r} has one output, but "
            f"num_tree_per_iteration={n_outputs}")
    if name in _IDENTITY_OBJECTIVES:
        if name in _SQRT_OBJECTIVES and "sqrt" in flags:
            return "signed_square", {}
        return "identity", {}
    if name == "binary":
        return "sigmoid", {"sigmoid": sigmoid()}
    if name == "cross_entropy":
        return "sigmoid", {"sigmoid": 1.0}
    if name == "cross_entropy_lambda":
        return "log1p_exp", {}
    if name in _EXP_OBJECTIVES:
        return "exp", {}
    if name == "multiclass":
        check_num_class()
        return "softmax", {}
    if name == "multiclassova":
        check_num_class()
        return "ova_sigmoid", {"sigmoid": sigmoid()}
    raise ModelFormatError(
        f"LightGBM model header: unknown objective {name!r}; refusing to guess its output "
        f"transform")
