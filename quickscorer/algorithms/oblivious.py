"""The "oblivious" algorithm: models whose every tree tests one feature against one threshold
per level (CatBoost's symmetric trees, its default), scored from the bits of the level tests
(kernel: ``src/quickscorer/algorithms/_oblivious.pyx`` and ``oblivious.h``).

A row's leaf in such a tree is its level tests read as a binary number, root first, so no
tree is walked and no leaf bitvector is kept. Layout:

* **columns**: the distinct (feature, missing-value rule) pairs of the model's tests, each
  with its sorted distinct thresholds (at most 255). A value's rank in a column is the number
  of its thresholds below the value; a test of threshold index ``j`` sends the row right
  exactly when the rank exceeds ``j`` (the shared rule, ``x <= threshold`` goes left, in rank
  space). NaN, and 0.0 under LightGBM's zero-as-missing, take the rank of their side: 0 (left
  at every threshold) or 255 (right), or the rank of 0.0 where the rule reads NaN as 0.0.
* **category columns**: a level that tests one category ``c`` (CatBoost's one-hot splits:
  the category's side left, NaN right; ``plain`` family) has a column of its own feature
  holding ``c`` and the float64 just below it; a value is ``c`` exactly when its rank is
  ``c``'s index, so the level sends the row right where the rank differs (``level_eq``).
  NaN takes rank 0, below every category's index.
* **levels**: per tree and level, the column and the threshold index; the tree's depth.

A group of 32 rows: the ranks of the columns (the two-level search of ``rs_ranks``, or on
AVX2 a count of the thresholds below each value for a float32 column of few), then per
tree the 32 leaf indexes, one byte compare, an add and a subtract a level, then each
row's leaf value added in tree order (the sums every kernel makes). One row at a time (leaf
indexes, the shared row loops): the same tests on the converted row's values.
"""
from __future__ import annotations

import numpy as np

from .. import prepared
from .._forest import Forest
from ..ir.ensemble import MISSING_NONE, MISSING_ZERO, Ensemble
from ..ir.float32 import float32_below, float32_boundary
from ..tuning import Tuning
from . import _oblivious
from .base import Algorithm
from .cpu import ISAS, isa_code, isa_name
from .rapidscorer.ranks import MAX_THRESHOLDS, rank_fields, rank_search_table

#: a tree's leaf index is a byte: trees of at most 8 levels
MAX_DEPTH = 8


def _levels(ens: Ensemble):
    """(depth per tree, the first node of each node's level) where every tree is complete
    and numbered level by level (children of local node i at 2i + 1 and 2i + 2), else a
    reason."""
    a = ens.trees.arrays
    off = np.asarray(ens.trees.node_offset, np.int64)
    n = np.diff(off)
    depth = np.zeros(n.shape[0], np.int64)
    nz = n > 0
    depth[nz] = np.round(np.log2(n[nz] + 1)).astype(np.int64)
    bad = np.flatnonzero((1 << depth) - 1 != n)
    if bad.size:
        return f"tree {int(bad[0])} is not complete (oblivious trees are)"
    if depth.max(initial=0) > MAX_DEPTH:
        return f"a tree is {int(depth.max())} levels deep (at most {MAX_DEPTH})"
    tree = np.repeat(np.arange(n.shape[0]), n)
    local = np.arange(int(off[-1])) - off[:-1][tree]
    level = np.floor(np.log2(local + 1)).astype(np.int64)
    inner = level < depth[tree] - 1
    left, right = a["left"].astype(np.int64), a["right"].astype(np.int64)
    if (np.any(inner & ((left != 2 * local + 1) | (right != 2 * local + 2)))
            or np.any(~inner & ((left >= 0) | (right >= 0)))):
        return "a tree's nodes are not numbered level by level"
    first = off[:-1][tree] + (1 << level) - 1
    return depth, first


def unsupported(ens: Ensemble) -> str | None:
    """Why ``oblivious`` cannot score ``ens``, or None."""
    got = _checked(ens)
    return got if isinstance(got, str) else None


def _checked(ens: Ensemble):
    if ens.has_linear:
        return "the model has linear leaves"
    a = ens.trees.arrays
    cat = np.asarray(a["is_categorical"], bool)
    if np.isnan(a["threshold"][~cat]).any():
        return "a split has a NaN threshold"
    value = _test_values(ens)
    if isinstance(value, str):
        return value
    got = _levels(ens)
    if isinstance(got, str):
        return got
    depth, first = got
    for name in ("feature", "default_left", "missing_type", "is_categorical"):
        if np.any(a[name] != a[name][first]):
            return "not every tree is oblivious (one test a level)"
    if np.any(value != value[first]):
        return "not every tree is oblivious (one test a level)"
    lv = np.flatnonzero(first == np.arange(first.shape[0]))     # one node a level
    key = _column_keys(a, lv)
    pairs = np.unique(np.stack([key.astype(np.float64), value[lv]]), axis=1)
    # a category takes two thresholds: the value below it and itself
    n = np.bincount(np.unique(pairs[0], return_inverse=True)[1],
                    weights=np.where(pairs[0] % 16 >= 8, 2, 1))
    if n.max(initial=0) > MAX_THRESHOLDS:
        return (f"a feature has more than {MAX_THRESHOLDS} thresholds (or "
                f"{MAX_THRESHOLDS // 2} categories) under one missing-value rule (a rank is a "
                f"byte)")
    return depth, first, value


def _test_values(ens: Ensemble):
    """Each node's test value: a numerical node's threshold, a categorical node's one
    category; or why a categorical node cannot be a level test (only one-hot splits of the
    ``plain`` family, NaN on their other side: CatBoost's)."""
    a = ens.trees.arrays
    value = np.array(a["threshold"], np.float64)
    cat = np.asarray(a["is_categorical"], bool)
    if not cat.any():
        return value
    if ens.family != "plain":
        return "the model has categorical splits (one-hot splits of CatBoost models are read)"
    counts = np.diff(a["cat_offset"])
    if np.any(counts[cat] != 1):
        return "a categorical split lists more or fewer than one category (one-hot splits only)"
    if np.any(a["default_left"][cat]):
        return "a categorical split sends NaN to its category's side"
    value[cat] = a["cat_values"][a["cat_offset"][:-1][cat]]
    return value


def _column_keys(a: dict, nodes: np.ndarray) -> np.ndarray:
    """Each node's column: its feature, missing-value rule (NaN side, missing type) and
    whether it tests a category (8 in the key)."""
    rule = (a["default_left"][nodes].astype(np.int64)
            + 2 * a["missing_type"][nodes].astype(np.int64)
            + 8 * np.asarray(a["is_categorical"], bool)[nodes])
    return a["feature"][nodes].astype(np.int64) * 16 + rule


def oblivious_arrays(ens: Ensemble) -> dict:
    """The layout (see the module's text); ValueError where ``ens`` is not oblivious."""
    got = _checked(ens)
    if isinstance(got, str):
        raise ValueError(got)
    depth, _, value = got
    a = ens.trees.arrays
    T = ens.n_trees
    roots = np.asarray(ens.trees.node_offset[:-1], np.int64)
    # the level nodes: tree t's level k is node roots[t] + 2**k - 1
    has = np.arange(MAX_DEPTH)[None, :] < depth[:, None]
    node = np.where(has, roots[:, None] + (1 << np.arange(MAX_DEPTH))[None, :] - 1, -1)
    lv = node[has]
    test = value[lv]
    cols, col_of = np.unique(_column_keys(a, lv), return_inverse=True)
    is_eq = np.asarray(a["is_categorical"], bool)[lv]
    # each column's distinct thresholds, ascending: a level's value, and below a category
    # the float64 just under it (x equals the category exactly when its rank is the
    # category's index: one threshold below x, the category not)
    pair_col = np.concatenate([col_of, col_of[is_eq]])
    pair_thr = np.concatenate([test, np.nextafter(test[is_eq], -np.inf)])
    pairs, inverse = np.unique(np.stack([pair_col.astype(np.float64), pair_thr]), axis=1,
                               return_inverse=True)
    counts = np.bincount(pairs[0].astype(np.int64), minlength=cols.shape[0])
    offsets = np.zeros(cols.shape[0] + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    thr_index = np.ravel(inverse)[:lv.shape[0]] - offsets[col_of]
    values = np.ascontiguousarray(pairs[1], np.float64)
    # the two-level search tables and each column's rank of 0.0 (NaN under MISSING_NONE
    # reads as 0.0), as RapidScorer's ranks have them
    ranked = rank_fields(offsets, values)
    zero_rank = ranked["rank_zero"].astype(np.int64)
    n_buckets = (counts + 15) // 16
    feature = (cols // 16).astype(np.int32)
    default_left = (cols % 2).astype(bool)
    missing = (cols % 8) // 2
    categorical = cols % 16 >= 8
    side = np.where(default_left, 0, 255)
    # XGBoost sends NaN to the default side whatever the node's missing type; NaN names no
    # category: rank 0, below every category's index
    nan_rank = (side if ens.family == "xgboost"
                else np.where(missing == MISSING_NONE, zero_rank, side))
    nan_rank = np.where(categorical, 0, nan_rank)
    zero_special = (missing == MISSING_ZERO) & (ens.family == "lightgbm")
    level_col = np.zeros((T, MAX_DEPTH), np.int32)
    level_thr = np.zeros((T, MAX_DEPTH), np.uint8)
    level_value = np.zeros((T, MAX_DEPTH), np.float64)
    level_eq = np.zeros((T, MAX_DEPTH), np.uint8)
    level_col[has] = col_of
    level_thr[has] = thr_index
    level_value[has] = test
    level_eq[has] = is_eq
    # where every threshold is the float32 boundary of a float32 value T (scikit-learn's and
    # CatBoost's are: x <= t exactly when float32(x) <= T), t < x exactly when T < float32(x),
    # so a value is ranked in float32 among the T: twice the thresholds a compare. XGBoost's
    # rows are float32 values already: t < x exactly when T < x, T the float32 below t
    below = float32_below(values)
    # per column; a category's column ranks in float64 (it holds the float64 just below the
    # category, which float32 cannot tell from the category)
    exact = np.full(values.shape[0], ens.family == "xgboost") | (float32_boundary(below)
                                                                 == values)
    col_f32 = np.logical_and.reduceat(exact, offsets[:-1]) & ~zero_special & ~categorical
    f32 = bool(col_f32.any())
    none32 = np.zeros(0, np.float32)
    if f32:
        piv32, bkt32, _ = rank_search_table(offsets, below.astype(np.float64))
    return {
        "depth": depth.astype(np.int32),
        "level_col": level_col,
        "level_thr": level_thr,
        "level_value": level_value,
        "level_eq": level_eq,
        "col_feature": feature,
        "col_nan_rank": nan_rank.astype(np.uint8),
        "col_zero_rank": np.where(zero_special, side, zero_rank).astype(np.uint8),
        "col_zero_special": zero_special.astype(np.uint8),
        "col_npiv": np.where(n_buckets <= 1, 0, np.where(n_buckets <= 8, 8, 16)).astype(np.int32),
        "rank_pivots": ranked["rank_pivots"],
        "rank_buckets": ranked["rank_buckets"],
        "rank_bucket_offsets": ranked["rank_bucket_offsets"],
        "rank_pivots_f32": piv32.astype(np.float32) if f32 else none32,
        "rank_buckets_f32": bkt32.astype(np.float32) if f32 else none32,
        "col_f32": col_f32.astype(np.uint8),
    }


class Oblivious(Algorithm):
    """Oblivious trees scored from their level tests: 32 rows' ranks, then each tree's 32 leaf
    indexes from byte compares, then the leaf values in tree order (AVX2 or portable C,
    chosen at run time; ``isa=`` or the table's ``isa`` forces one). Scores models whose
    every tree is complete, at most 8 levels deep, with one test a level (the same feature,
    threshold or one-hot category, and missing-value rule across the level), in the source's
    precision (float32 for XGBoost forests, times DART's tree weights)."""

    name = "oblivious"
    test_vector = "a leaf index from each level's test, 32 documents a byte compare"
    small_calls = True
    # a model of oblivious trees: every call from its first rows, whatever the rest would
    # choose
    regimes = ("every",)

    @classmethod
    def first_rows(cls, before: str, facts, t: Tuning) -> int:
        return t.oblivious_min_rows

    @classmethod
    def unsupported(cls, ens: Ensemble) -> str | None:
        return unsupported(ens)

    def __init__(self, ens: Ensemble, forest: Forest, tuning: Tuning | None = None,
                 isa: str | None = None):
        super().__init__(ens, forest, tuning)
        self.isa = isa_code(isa or self.tuning.isa)
        if self.isa == ISAS["avx512"]:      # no AVX-512 path of its own: AVX2's
            self.isa = ISAS["avx2"]
        self._arrays = prepared.built(ens, "oblivious_arrays", (),
                                      lambda: oblivious_arrays(ens))
        self.layout = _oblivious.OblLayout(self._arrays, ens.n_features)

    @property
    def isa_name(self) -> str:
        return isa_name(self.isa)

    def describe(self) -> dict:
        return {"oblivious_instruction_set": self.isa_name}

    def predict_raw(self, X, out64, out32, n_threads):
        _RAW[X.dtype](self.forest, self.layout, X, out64, out32,
                      self._group_scratch(n_threads), n_threads, self.isa)

    def _group_scratch(self, n_threads: int) -> np.ndarray:
        return self.scratch("group", n_threads,
                            self.layout.group_bytes(self.ens.n_outputs) // 8).view(np.uint8)

    def predict_small(self, X, squeeze):
        return _oblivious.predict_small(self.forest, self.layout, X, squeeze, self.isa,
                                        self._group_scratch(1))

    def small_entry(self, n: int):
        return self.predict_small

    def held_arrays(self) -> list:
        return super().held_arrays() + self.layout.held_arrays()


_RAW = Algorithm.specialised(_oblivious.predict_raw)

__all__ = ["MAX_DEPTH", "Oblivious", "oblivious_arrays", "unsupported"]
