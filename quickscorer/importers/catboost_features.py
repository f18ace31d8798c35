"""CatBoost's features as the neutral model reads them, from a model's JSON document (a
``.cbm`` file's is made by :mod:`~quickscorer.importers.catboost_cbm`): float features, one-hot
categorical features (texts, their hashes and integer categories) and CTR features, built as
the neutral CTR stage (``ir/ctr.py``) with their tables; the rules are in the docstring of
:mod:`~quickscorer.importers.catboost`.
"""
from __future__ import annotations

import math
import re

import numpy as np

from ..errors import ModelFormatError
from ..ir.cityhash import category_hash
from ..ir.ctr import (
    CLASS_COUNT_TYPES,
    COUNT_TYPES,
    EMPTY_KEY,
    HASH_MULT,
    CtrColumn,
    CtrFeatures,
    Projection,
    bucket_counts,
    ctr_value,
)

#: deepest tree read (CatBoost's own limit is 16)
MAX_DEPTH = 30

def get_field(obj, key: str, kind, where: str):
    if not isinstance(obj, dict) or key not in obj:
        raise ModelFormatError(f"{where}: no '{key}'")
    value = obj[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise ModelFormatError(f"{where}: '{key}' is not {_KIND_NAMES.get(kind, kind)}")
    return value


_KIND_NAMES = {list: "a list", dict: "an object", str: "a string", int: "an integer",
               (int, float): "a number"}


def number(v, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ModelFormatError(f"{where}: {v!r} is not a finite number")
    return float(v)


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


class Features:
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
            col = get_field(f, "flat_feature_index", int, where)
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
            col = get_field(f, "flat_feature_index", int, f"categorical feature {i}")
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
        i = get_field(s, "cat_feature_index", int, where)
        if not 0 <= i < len(self.cat_column):
            raise ModelFormatError(f"{where}: cat_feature_index {i} is out of range")
        h = get_field(s, "value", int, where)
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
            for b in get_field(c, "borders", list, where):
                binary.append((i, number(b, where)))
        one_hot = {(s.get("cat_feature_index"), s.get("value")) for s in splits
                   if s.get("split_type") == "OneHotFeature"}
        first = self.n_float_borders + len(one_hot)
        for s in splits:
            if s.get("split_type") != "OnlineCtr":
                continue
            k = get_field(s, "split_index", int, "a CTR split")
            if not 0 <= k - first < len(binary):
                raise ModelFormatError(f"a CTR split's split_index {k} names no CTR feature "
                                       f"border")
            self.ctr_at[k] = binary[k - first]
        for i in sorted({i for i, _ in self.ctr_at.values()}):
            self.ctr_column[i] = self.n_features + len(self.ctr_column)

    def ctr_split(self, s: dict, where: str) -> tuple[int, float]:
        """(CTR feature, float32 border) of a CTR split, checked against the feature's own
        border and target."""
        k = get_field(s, "split_index", int, where)
        if k not in self.ctr_at:
            raise ModelFormatError(f"{where}: split_index {k} names no CTR feature border")
        i, border = self.ctr_at[k]
        if number(get_field(s, "border", (int, float), where), where) != border:
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
        """The CTR stage of the used CTR features (``tables``: :func:`ctr_tables`;
        ``numbers``: every categorical column's category numbers)."""
        cats = sorted(self._ctr_cat_features())
        local = {f: k for k, f in enumerate(cats)}
        projections, where_of, columns = [], {}, []
        for i in self.ctr_column:
            c = self.ctrs[i]
            where = f"CTR feature {i}"
            kind = get_field(c, "ctr_type", str, where)
            if kind not in CLASS_COUNT_TYPES + COUNT_TYPES:
                raise ModelFormatError(f"{where}: CTR type {kind!r} is not read (Borders, "
                                       f"Buckets, Counter and FeatureFreq are)")
            p = self._projection(get_field(c, "elements", list, where), local, where)
            key = (p.cats, p.floats, p.exact)
            if key not in where_of:
                where_of[key] = len(projections)
                projections.append(p)
            ident = get_field(c, "identifier", str, where)
            if ident not in tables:
                raise ModelFormatError(f"{where}: its table is not in ctr_data")
            keys, counts, denominator = tables[ident]
            target = get_field(c, "target_border_idx", int, where)
            width = counts.shape[1]
            if kind in COUNT_TYPES and width != 1:
                raise ModelFormatError(f"{where}: a {kind} table holds {width} counts a bucket")
            if kind in CLASS_COUNT_TYPES and not (width >= 2 and 0 <= target < width - (
                    kind == "Borders")):
                raise ModelFormatError(f"{where}: target_border_idx {target} of a table of "
                                       f"{width} classes")
            prior = [number(get_field(c, k, (int, float), where), where)
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
                h = get_field(e, "value", int, where)
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
        i = get_field(d, "float_feature_index", int, where)
        if not 0 <= i < len(self.column):
            raise ModelFormatError(f"{where}: float_feature_index {i} is out of range")
        border = number(get_field(d, "border", (int, float), where), where)
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


def ctr_tables(doc: dict) -> dict:
    """``ctr_data``: each table's identifier -> (sorted keys, counts a bucket, the counter
    denominator); an empty slot's key (EMPTY_KEY) is left out."""
    data = doc.get("ctr_data", {})
    if not isinstance(data, dict):
        raise ModelFormatError("ctr_data is not a mapping of tables")
    out = {}
    for ident, t in data.items():
        where = f"ctr_data table {ident[:80]!r}"
        flat = get_field(t, "hash_map", list, where)
        stride = get_field(t, "hash_stride", int, where)
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
        denominator = number(t.get("counter_denominator", 0), where)
        out[ident] = (keys, counts, denominator)
    return out


def all_splits(doc: dict) -> list:
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
        h = get_field(e, "hash", int, where)
        text = get_field(e, "value", str, where)
        if not 0 <= h < 1 << 32:
            raise ModelFormatError(f"{where}: hash {h} is not a 32-bit value")
        out[h] = text
    return out


