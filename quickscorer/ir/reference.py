"""A slow, obvious root-to-leaf traversal in numpy: the oracle for every kernel.

It follows ``docs/semantics.md`` line by line and shares no code with the Cython kernels, so a
mistake in either shows up as a disagreement in the tests. Not for production use.
"""
from __future__ import annotations

import math
import platform
from fractions import Fraction

import numpy as np

from .ensemble import MISSING_NAN, MISSING_NONE, MISSING_ZERO, Ensemble, Tree

#: LightGBM's kZeroThreshold (1e-35f) as a double
K_ZERO = float(np.float32(1e-35))

#: Whether the source libraries' builds for this machine fuse the two sums that add a product
#: (a linear leaf's terms, a DART tree's weighted leaf) into one rounding: on AArch64
#: (docs/semantics.md, "On AArch64").
FUSED_SUMS = platform.machine().lower() in ("aarch64", "arm64")


def fma(a: float, b: float, c: float) -> float:
    """a * b + c rounded once to float64."""
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(c)):
        return a * b + c        # inf or NaN either way
    exact = Fraction(a) * Fraction(b) + Fraction(c)
    if exact == 0:              # the sign of a zero, as IEEE 754 gives it
        return a * b + c if a * b == 0 else 0.0
    try:
        return float(exact)     # int / int: correctly rounded
    except OverflowError:
        return math.inf if exact > 0 else -math.inf


def fma_f32(a: np.ndarray, b, c: np.ndarray) -> np.ndarray:
    """a * b + c rounded once to float32, elementwise (float32 operands). The product is exact
    in float64 (24 + 24 bits); the sum s + e is exact (Knuth's two-sum); s rounds to float32
    as the exact sum does except where s falls on a midpoint between two float32 values, where
    e (nonzero) decides."""
    p = np.asarray(a, np.float64) * np.float64(b)
    c64 = np.asarray(c, np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        s = p + c64
        bb = s - p
        e = (p - (s - bb)) + (c64 - bb)
        r = s.astype(np.float32)
        toward = np.nextafter(r, np.where(s > r.astype(np.float64), np.inf, -np.inf)
                              .astype(np.float32))
        mid = (r.astype(np.float64) + toward.astype(np.float64)) / 2
        tie = np.isfinite(s) & (s == mid) & (e != 0) & (s != r.astype(np.float64))
        up = np.maximum(r, toward)
        down = np.minimum(r, toward)
        return np.where(tie, np.where(e > 0, up, down), r).astype(np.float32)


def convert_input(ens: Ensemble, X) -> np.ndarray:
    """Rows as the source library sees them, as float64."""
    X = np.asarray(X, dtype=np.float64)
    if ens.family == "xgboost":
        return X.astype(np.float32).astype(np.float64)
    out = X.copy()
    if ens.family == "plain":       # read as given
        return out
    out[np.abs(out) <= K_ZERO] = 0.0  # NaN compares False, so it is kept
    return out


def _category_index(ens: Ensemble, x: np.ndarray) -> np.ndarray:
    """Category of each value, -1 where the value names no category."""
    idx = np.full(x.shape, -1, np.int64)
    with np.errstate(invalid="ignore"):
        if ens.family == "lightgbm":
            # static_cast<int>: truncation; out-of-range and inf give INT_MIN (negative)
            ok = np.isfinite(x) & (x > -2.0**31 - 1) & (x < 2.0**31)
        elif ens.family == "plain":
            ok = (x >= 0) & (x < 2.0**31) & (x == np.trunc(x))   # integers only
        else:
            ok = (x >= 0) & (x < 2.0**24)  # checked on the float, before truncation
        idx[ok] = np.trunc(x[ok]).astype(np.int64)
    idx[idx < 0] = -1
    return idx


def goes_left(ens: Ensemble, tree: Tree, n: int, x: np.ndarray) -> np.ndarray:
    nan = np.isnan(x)
    if tree.is_categorical[n]:
        cats = tree.categories(n)
        ci = _category_index(ens, x)
        left = np.isin(ci, cats) & (ci >= 0)
        return np.where(nan, bool(tree.default_left[n]), left)
    mt = int(tree.missing_type[n])
    if ens.family != "xgboost":
        if mt != MISSING_NAN:
            x = np.where(nan, 0.0, x)
        if mt == MISSING_ZERO:
            default = np.abs(x) <= K_ZERO
        elif mt == MISSING_NAN:
            default = nan
        else:
            assert mt == MISSING_NONE
            default = np.zeros(x.shape, bool)
    else:
        default = nan
    with np.errstate(invalid="ignore"):
        left = x <= tree.threshold[n]
    return np.where(default, bool(tree.default_left[n]), left)


def tree_exit_leaves(ens: Ensemble, tree: Tree, Xc: np.ndarray) -> np.ndarray:
    """Canonical exit leaf of every (already converted) row."""
    node = np.zeros(Xc.shape[0], np.int64)
    if tree.n_internal == 0:
        return node
    active = np.ones(Xc.shape[0], bool)
    while active.any():
        rows = np.flatnonzero(active)
        cur = node[rows]
        for n in np.unique(cur):
            sel = rows[cur == n]
            go_left = goes_left(ens, tree, int(n), Xc[sel, tree.feature[n]])
            node[sel] = np.where(go_left, tree.left[n], tree.right[n])
        active = node >= 0
    return ~node


def predict_leaf(ens: Ensemble, X) -> np.ndarray:
    """Canonical (left-to-right) exit leaf, shape ``(n_rows, n_trees)``."""
    Xc = convert_input(ens, X)
    return np.stack([tree_exit_leaves(ens, t, Xc) for t in ens.trees], axis=1).astype(np.int32)


def leaf_outputs(ens: Ensemble, tree: Tree, leaves: np.ndarray, Xc: np.ndarray) -> np.ndarray:
    """Value of each row's exit leaf, float64 (linear leaves evaluated term by term)."""
    vals = tree.leaf_value[leaves].astype(np.float64)
    lin = tree.linear
    if lin is None:
        return vals
    out = vals.copy()
    for r, leaf in enumerate(leaves):
        lo, hi = lin.offsets[leaf], lin.offsets[leaf + 1]
        acc = float(lin.const[leaf])
        nan_found = False
        for k in range(lo, hi):
            v = float(Xc[r, lin.feature[k]])
            if np.isnan(v):
                nan_found = True
                break
            if FUSED_SUMS:
                acc = fma(float(lin.coeff[k]), v, acc)
            else:
                acc = acc + float(lin.coeff[k]) * v  # two roundings, as without FMA
        out[r] = vals[r] if nan_found else acc
    return out


def predict_raw(ens: Ensemble, X) -> np.ndarray:
    """Raw scores (margins), shape ``(n_rows, n_outputs)``; float32 for XGBoost models."""
    Xc = convert_input(ens, X)
    n = Xc.shape[0]
    if ens.family == "xgboost":
        out = np.tile(ens.base_score.astype(np.float32), (n, 1))
        for t, tree in enumerate(ens.trees):
            leaves = tree_exit_leaves(ens, tree, Xc)
            v = tree.leaf_value[leaves].astype(np.float32)
            g = ens.tree_group[t]
            if ens.tree_weight is None:
                out[:, g] = out[:, g] + v
            elif FUSED_SUMS:
                out[:, g] = fma_f32(v, np.float32(ens.tree_weight[t]), out[:, g])
            else:
                out[:, g] = out[:, g] + v * np.float32(ens.tree_weight[t])
        return out
    out = np.tile(ens.base_score, (n, 1))
    for t, tree in enumerate(ens.trees):
        leaves = tree_exit_leaves(ens, tree, Xc)
        g = ens.tree_group[t]
        out[:, g] = out[:, g] + leaf_outputs(ens, tree, leaves, Xc)
    return out


def shap_values(ens: Ensemble, X, max_features: int = 12,
                interactions: bool = False) -> np.ndarray:
    """Exact Shapley values of each tree's path-dependent expectation, by enumeration:
    ``(n_rows, n_outputs, n_features + 1)`` float64, the last column the bias.
    With ``interactions``, the Shapley interaction values, ``(n_rows, n_outputs,
    n_features + 1, n_features + 1)``: for i != j, half the interaction index,
    sum over S holding neither of |S|! (d - |S| - 2)! / (2 (d - 1)!) (v(S + i + j) -
    v(S + i) - v(S + j) + v(S)); on the diagonal the contribution less the row's other
    entries; the bias at (bias, bias).

    For a coalition S of the features a tree splits on, v(S) follows the row at nodes that
    split on a feature in S and averages both children by their covers elsewhere (a branch
    of zero cover counts 0);
    feature i gets sum over S not holding i of |S|! (d - |S| - 1)! / d! (v(S + i) - v(S)),
    and the bias is v({}). Each tree's values (times its DART weight) are summed, the base
    score added to the bias. Cost 2^d per tree and row: for trees of at most
    ``max_features`` distinct features (ValueError else)."""
    from itertools import combinations
    from math import factorial

    Xc = convert_input(ens, X)
    n, F = Xc.shape[0], ens.n_features
    out = np.zeros((n, ens.n_outputs, F + 1))
    out[:, :, F] = ens.base_score
    pairs = np.zeros((n, ens.n_outputs, F + 1, F + 1)) if interactions else None
    for t, tree in enumerate(ens.trees):
        g = int(ens.tree_group[t])
        w = 1.0 if ens.tree_weight is None else float(ens.tree_weight[t])
        if tree.n_internal == 0:
            out[:, g, F] += w * float(tree.leaf_value[0])
            continue
        used = sorted({int(f) for f in tree.feature})
        d = len(used)
        if d > max_features:
            raise ValueError(f"tree {t} splits on {d} features, more than {max_features}")
        left_of = np.stack([goes_left(ens, tree, k, Xc[:, tree.feature[k]])
                            for k in range(tree.n_internal)], axis=1)

        def cover(c):
            return tree.node_cover[c] if c >= 0 else tree.leaf_cover[~c]

        def value(c, S, r):
            if cover(c) == 0:           # a branch no training row took is left out
                return 0.0
            if c < 0:
                return float(tree.leaf_value[~c])
            if int(tree.feature[c]) in S:
                return value(tree.left[c] if left_of[r, c] else tree.right[c], S, r)
            lc, rc = tree.left[c], tree.right[c]
            return (cover(lc) * value(lc, S, r) + cover(rc) * value(rc, S, r)) / cover(c)

        for r in range(n):
            v = {}
            for k in range(d + 1):
                for S in combinations(used, k):
                    v[frozenset(S)] = value(0, frozenset(S), r)
            out[r, g, F] += w * v[frozenset()]
            for i in used:
                others = [f for f in used if f != i]
                phi = 0.0
                for k in range(d):
                    wk = factorial(k) * factorial(d - k - 1) / factorial(d)
                    for S in combinations(others, k):
                        s = frozenset(S)
                        phi += wk * (v[s | {i}] - v[s])
                out[r, g, i] += w * phi
            if interactions:
                for i, j in combinations(used, 2):
                    others = [f for f in used if f not in (i, j)]
                    phi = 0.0
                    for k in range(d - 1):
                        wk = factorial(k) * factorial(d - k - 2) / (2 * factorial(d - 1))
                        for S in combinations(others, k):
                            s = frozenset(S)
                            phi += wk * (v[s | {i, j}] - v[s | {i}] - v[s | {j}] + v[s])
                    pairs[r, g, i, j] += w * phi
                    pairs[r, g, j, i] += w * phi
    if not interactions:
        return out
    for i in range(F):
        pairs[:, :, i, i] = out[:, :, i] - pairs[:, :, i, :].sum(axis=2)
    pairs[:, :, F, F] = out[:, :, F]
    return pairs
