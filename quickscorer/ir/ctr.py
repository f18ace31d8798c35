"""CatBoost's CTR features: numeric columns a model computes from a row's categorical values
(and, in combinations, from float and one-hot tests) before its trees read them.

A CTR column belongs to a *projection*: some categorical features (their values), some float
features tested against a border and some one-hot tests (a feature equal to one category).
The row's projection hash starts at 0 and takes in, in that order, each categorical value's
32-bit CatBoost hash (sign-extended to 64 bits), then each test's 0 or 1, each step
``h = MULT * (h + MULT * v)`` modulo 2**64. The hash names a bucket of a table of training
statistics; the column's value is ``((good + prior_num) / (total + prior_denom) + shift) *
scale`` in float32, with ``good`` and ``total`` read from the bucket as the CTR type says
(:func:`bucket_counts`), and ``good = total = 0`` where the table has no such bucket (a
category, or a combination, the training data did not hold). docs/semantics.md, "CatBoost",
states the rules; the importer (``importers/catboost.py``) builds the stage from the model's
JSON.

The stage runs on the rows as the model's inputs give them (:meth:`CtrFeatures.apply`): a
categorical column holds a category number (text columns: the place of the text in
``texts``; integer columns: the integer), as ``Ensemble.category_labels`` numbers them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError, ModelFormatError
from .cityhash import category_hash

#: the multiplier of CatBoost's projection hash
HASH_MULT = 0x4906BA494954CB65
_MULT = np.uint64(HASH_MULT)
#: the key an empty slot of CatBoost's bucket tables holds (the JSON export lists one)
EMPTY_KEY = (1 << 64) - 1

#: CTR types whose buckets hold class counts, and the one holding a count per category
CLASS_COUNT_TYPES = ("Borders", "Buckets")
COUNT_TYPES = ("Counter", "FeatureFreq")


def mix(h: np.ndarray, v: np.ndarray) -> np.ndarray:
    """One step of the projection hash, modulo 2**64 (uint64 arrays)."""
    with np.errstate(over="ignore"):
        return _MULT * (h + _MULT * v)


def bucket_counts(ctr_type: str, target: int, counts: np.ndarray,
                  denominator: float) -> tuple[np.ndarray, np.ndarray]:
    """(good, total) of each bucket, ``counts`` one row a bucket: ``Borders`` with two classes
    the second class's count and both; with more, the classes above ``target`` and all;
    ``Buckets`` class ``target``'s and all; ``Counter`` and ``FeatureFreq`` the bucket's count
    and the table's denominator."""
    counts = np.asarray(counts, np.float32)
    if ctr_type in COUNT_TYPES:
        return counts[:, 0], np.full(counts.shape[0], np.float32(denominator))
    total = counts.sum(axis=1, dtype=np.float32)
    if ctr_type == "Buckets":
        return counts[:, target], total
    if counts.shape[1] == 2:
        return counts[:, 1], total
    return counts[:, target + 1:].sum(axis=1, dtype=np.float32), total


def ctr_value(good, total, prior_num: float, prior_denom: float, shift: float,
              scale: float) -> np.ndarray:
    """``((good + prior_num) / (total + prior_denom) + shift) * scale``, every step in
    float32 as CatBoost's model evaluator computes it."""
    f = np.float32
    with np.errstate(divide="ignore", invalid="ignore"):
        ctr = (np.asarray(good, f) + f(prior_num)) / (np.asarray(total, f) + f(prior_denom))
        return (ctr + f(shift)) * f(scale)


@dataclass(frozen=True, eq=False)
class Projection:
    """What one projection hashes: categorical features (indexes into
    ``CtrFeatures.cat_columns``), float tests ``(input column, float32 border, NaN is
    true)`` (true where ``float32(x) > border``) and one-hot tests ``(categorical feature,
    32-bit hash)``."""
    cats: tuple[int, ...]
    floats: tuple[tuple[int, float, bool], ...] = ()
    exact: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True, eq=False)
class CtrColumn:
    """One CTR column: its projection (an index into ``CtrFeatures.projections``), the
    sorted keys of its table, its value for each key, and its value where the row's hash is
    no key."""
    projection: int
    keys: np.ndarray          # uint64, sorted, distinct
    values: np.ndarray        # float32, one a key
    unseen: float             # float32 value


class CtrFeatures:
    """The CTR stage of a model: ``n_inputs`` input columns, ``cat_columns[i]`` the input
    column of categorical feature ``i``, ``cat_texts[i]`` its texts by category number (None:
    the column holds integer categories, hashed as their decimal text), then the
    projections and the columns, appended to the row in order."""

    def __init__(self, n_inputs: int, cat_columns, cat_texts, projections, columns):
        self.n_inputs = int(n_inputs)
        self.cat_columns = tuple(int(c) for c in cat_columns)
        self.cat_texts = tuple(None if t is None else tuple(t) for t in cat_texts)
        self.projections = tuple(projections)
        self.columns = tuple(columns)
        if len(self.cat_texts) != len(self.cat_columns):
            raise ModelFormatError("CTR features: one text table a categorical feature")
        for c in self.cat_columns:
            if not 0 <= c < self.n_inputs:
                raise ModelFormatError(f"CTR features: categorical column {c} is not an input")
        for p in self.projections:
            for i in p.cats + tuple(i for i, _ in p.exact):
                if not 0 <= i < len(self.cat_columns):
                    raise ModelFormatError(f"CTR features: categorical feature {i} is unknown")
            for col, _border, _nan in p.floats:
                if not 0 <= col < self.n_inputs:
                    raise ModelFormatError(f"CTR features: float column {col} is not an input")
        for c in self.columns:
            if not 0 <= c.projection < len(self.projections):
                raise ModelFormatError(f"CTR features: projection {c.projection} is unknown")
            k = np.asarray(c.keys)
            if k.dtype != np.uint64 or k.shape != np.shape(c.values) or (
                    k.size > 1 and not (k[1:] > k[:-1]).all()):
                raise ModelFormatError("CTR features: a table's keys are not sorted distinct "
                                       "64-bit hashes, one a value")
        # each text's hash, by category number
        self._text_hashes = tuple(
            None if t is None else np.array([category_hash(s) for s in t], np.uint32)
            for t in self.cat_texts)
        self._integer_hashes: dict[int, int] = {}

    @property
    def n_columns(self) -> int:
        return len(self.columns)

    def inputs_read(self) -> set[int]:
        """The input columns the projections read."""
        cols = set()
        for p in self.projections:
            cols.update(self.cat_columns[i] for i in p.cats + tuple(i for i, _ in p.exact))
            cols.update(col for col, _, _ in p.floats)
        return cols

    def __reduce__(self):
        return (CtrFeatures, (self.n_inputs, self.cat_columns, self.cat_texts,
                              self.projections, self.columns))

    def _hashes(self, i: int, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Categorical feature i's 32-bit hashes of the values x, and where x names a known
        category (NaN, an unknown text's -1: not)."""
        col = self.cat_columns[i]
        x = np.asarray(x, np.float64)
        finite = np.isfinite(x)
        whole = np.zeros(x.shape, bool)
        whole[finite] = x[finite] == np.floor(x[finite])
        if (finite & ~whole).any():
            v = x[finite & ~whole][0]
            raise InputError(f"column {col} holds {v!r}, which is no category: a categorical "
                             f"column holds whole numbers")
        h = np.zeros(x.shape, np.uint32)
        table = self._text_hashes[i]
        if table is not None:
            known = whole & (x >= 0) & (x < table.shape[0])
            h[known] = table[x[known].astype(np.int64)]
            return h, known
        known = whole & (np.abs(x) < 2.0 ** 63)
        values, inverse = np.unique(x[known], return_inverse=True)
        cache = self._integer_hashes
        if len(cache) > 1 << 16:
            cache.clear()
        hv = np.empty(values.shape[0], np.uint32)
        for k, v in enumerate(values.tolist()):
            n = int(v)
            got = cache.get(n)
            if got is None:
                got = cache[n] = category_hash(str(n))
            hv[k] = got
        h[known] = hv[inverse]
        return h, known

    def apply(self, X: np.ndarray) -> np.ndarray:
        """The rows ``X`` (n_rows x n_inputs) with the CTR columns appended, in X's dtype
        (a float32 value, exact in float64 too)."""
        n = X.shape[0]
        hashes: dict[int, tuple[np.ndarray, np.ndarray]] = {}

        def cat(i: int):
            if i not in hashes:
                hashes[i] = self._hashes(i, X[:, self.cat_columns[i]])
            return hashes[i]

        keys = []
        for p in self.projections:
            h = np.zeros(n, np.uint64)
            unknown = np.zeros(n, bool)
            for i in p.cats:
                h32, known = cat(i)
                h = mix(h, h32.view(np.int32).astype(np.int64).view(np.uint64))
                unknown |= ~known
            for col, border, nan_true in p.floats:
                x = X[:, col].astype(np.float32)
                bit = np.where(np.isnan(x), nan_true, x > np.float32(border))
                h = mix(h, bit.astype(np.uint64))
            for i, value in p.exact:
                h32, known = cat(i)
                h = mix(h, (known & (h32 == np.uint32(value))).astype(np.uint64))
            keys.append((h, unknown))
        out = np.empty((n, self.n_inputs + self.n_columns), X.dtype)
        out[:, :self.n_inputs] = X
        for j, c in enumerate(self.columns):
            h, unknown = keys[c.projection]
            if c.keys.shape[0]:
                pos = np.minimum(np.searchsorted(c.keys, h), c.keys.shape[0] - 1)
                found = (c.keys[pos] == h) & ~unknown
                out[:, self.n_inputs + j] = np.where(found, c.values[pos],
                                                     np.float32(c.unseen))
            else:
                out[:, self.n_inputs + j] = np.float32(c.unseen)
        return out
