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

The stage runs on the rows as the model's inputs give them (:meth:`CtrFeatures.apply`, in C:
``src/quickscorer/ir/_ctr.pyx``): a categorical column holds a category number (text columns:
the place of the text in sorted order; integer columns: the integer), as
``Ensemble.category_labels`` numbers them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InputError, ModelFormatError
from . import _ctr
from .cityhash import category_hash

#: the multiplier of CatBoost's projection hash
HASH_MULT = 0x4906BA494954CB65
#: the key an empty slot of CatBoost's bucket tables holds (the JSON export lists one)
EMPTY_KEY = (1 << 64) - 1

#: the most category numbers of one feature the stage looks up directly (the importers number
#: text categories 0, 1, ... and read integer categories as themselves up to 4,095)
MAX_DENSE = 1 << 24

#: CTR types whose buckets hold class counts, and those holding one count a bucket
CLASS_COUNT_TYPES = ("Borders", "Buckets")
COUNT_TYPES = ("Counter", "FeatureFreq")


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
    float32: CatBoost's model format stores the priors, shift and scale as float32
    (``TModelCtr`` in its ``ctr_data.fbs``) and its evaluator computes in that type (the same
    computation in float64 gives the same columns on every row of the tests: the borders sit
    a float32 step below the values the counts give)."""
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
    column of categorical feature ``i`` and ``cat_labels[i]`` its known categories (text ->
    the number a row holds: ``Ensemble.category_labels``' table of that column), then the
    projections and the columns, appended to the row in order. A number no known category
    has (an unseen category, NaN) hashes to no key: the training data held every category
    and combination the tables list."""

    def __init__(self, n_inputs: int, cat_columns, cat_labels, projections, columns):
        self.n_inputs = int(n_inputs)
        self.cat_columns = tuple(int(c) for c in cat_columns)
        self.cat_labels = tuple(dict(t) for t in cat_labels)
        self.projections = tuple(projections)
        self.columns = tuple(columns)
        if len(self.cat_labels) != len(self.cat_columns):
            raise ModelFormatError("CTR features: one category table a categorical feature")
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
        #: the flat arrays of the stage in C, and the C stage that holds them, checked
        self.arrays = self._kernel_arrays()
        self._stage = _ctr.Stage(self.arrays, self.n_inputs)

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
        return (CtrFeatures, (self.n_inputs, self.cat_columns, self.cat_labels,
                              self.projections, self.columns))

    def _kernel_arrays(self) -> dict:
        """The flat arrays ``_ctr.apply`` reads (its docstring lists them): each categorical
        feature's hashes by category number, the projections' parts, and
        one open-addressing table of slots per distinct (projection, keys), shared by the
        columns that read it (their values bucket by bucket, side by side)."""
        a: dict = {}
        dense, off = [], [0]
        for labels in self.cat_labels:
            size = max(labels.values(), default=-1) + 1
            if size > MAX_DENSE:
                raise ModelFormatError(f"CTR features: category number {size - 1} is beyond "
                                       f"{MAX_DENSE - 1}")
            table = np.full(size, -1, np.int64)
            for t, n in labels.items():
                table[n] = category_hash(t)
            dense.append(table)
            off.append(off[-1] + size)
        a["cat_col"] = np.asarray(self.cat_columns, np.int64)
        a["cat_off"] = np.asarray(off, np.int64)
        a["cat_hash"] = np.concatenate(dense) if dense else np.zeros(0, np.int64)
        for name, parts in (("p_cat", [p.cats for p in self.projections]),
                            ("p_flt", [p.floats for p in self.projections]),
                            ("p_ex", [p.exact for p in self.projections])):
            a[f"{name}_off"] = np.cumsum([0] + [len(q) for q in parts]).astype(np.int64)
        a["p_cat"] = np.asarray([i for p in self.projections for i in p.cats], np.int64)
        flt = [f for p in self.projections for f in p.floats]
        a["flt_col"] = np.asarray([f[0] for f in flt], np.int64)
        a["flt_border"] = np.asarray([f[1] for f in flt], np.float32)
        a["flt_nan"] = np.asarray([f[2] for f in flt], np.uint8)
        ex = [e for p in self.projections for e in p.exact]
        a["ex_cat"] = np.asarray([e[0] for e in ex], np.int64)
        a["ex_hash"] = np.asarray([e[1] for e in ex], np.uint32)
        tables: dict = {}                 # (projection, keys) -> its columns
        for j, c in enumerate(self.columns):
            tables.setdefault((c.projection, c.keys.tobytes()), []).append(j)
        t_proj, t_off, t_shift, slots = [], [0], [], []
        t_col_off, t_col, t_val_off, val = [0], [], [], []
        for cols in tables.values():
            first = self.columns[cols[0]]
            size = 2
            while size < 2 * first.keys.shape[0]:
                size *= 2
            shift = 64 - (size.bit_length() - 1)
            table = np.zeros(size, _ctr.SLOT_DTYPE)
            table["bucket"] = -1
            for b, h in enumerate(first.keys.tolist()):
                s = h >> shift
                while table["bucket"][s] >= 0:
                    s = (s + 1) & (size - 1)
                table[s] = (h, b, 0)
            t_proj.append(first.projection)
            t_shift.append(shift)
            t_off.append(t_off[-1] + size)
            slots.append(table)
            t_col += cols
            t_col_off.append(len(t_col))
            t_val_off.append(len(val))
            # the table's columns' values bucket by bucket
            val += np.stack([np.asarray(self.columns[j].values, np.float32) for j in cols],
                            axis=1).ravel().tolist()
        a["t_proj"] = np.asarray(t_proj, np.int64)
        a["t_off"] = np.asarray(t_off, np.int64)
        a["t_shift"] = np.asarray(t_shift, np.int64)
        a["slots"] = np.concatenate(slots) if slots else np.zeros(0, _ctr.SLOT_DTYPE)
        a["t_col_off"] = np.asarray(t_col_off, np.int64)
        a["t_col"] = np.asarray(t_col, np.int64)
        a["t_val_off"] = np.asarray(t_val_off, np.int64)
        a["val"] = np.asarray(val, np.float32)
        a["c_unseen"] = np.asarray([c.unseen for c in self.columns], np.float32)
        for arr in a.values():
            arr.setflags(write=False)
        return a

    def apply(self, X: np.ndarray, n_threads: int = 1) -> np.ndarray:
        """The rows ``X`` (n_rows x n_inputs) with the CTR columns appended, in X's dtype
        (a float32 value, exact in float64 too), on up to ``n_threads`` threads. A
        categorical value that is not a whole number is an InputError naming its column."""
        out = np.empty((X.shape[0], self.n_inputs + self.n_columns), X.dtype)
        bad = _ctr.apply(self._stage, X, out, n_threads)
        if bad is not None:
            raise InputError(f"column {bad[0]} holds {bad[1]!r}, which is no category: a "
                             f"categorical column holds whole numbers")
        return out
