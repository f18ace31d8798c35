"""SHAP contributions: how much each feature moved a row's raw score away from the model's
expected value (``Model.contributions``; docs/contributions.md).

The neutral ensemble's trees and covers become a :class:`_shap.ShapLayout`
(:func:`shap_arrays`); its kernel (``src/quickscorer/explain/``) decides each row at every node
by the scoring rule and turns the decisions into contributions, by one of two methods:

- ``"quadrature"`` (the default): the Shapley weights written as an integral over [0, 1] and
  summed exactly by Gauss-Legendre quadrature, O(nodes x points) a tree;
- ``"treeshap"``: TreeSHAP's recursion in the order and precision LightGBM and XGBoost up to
  3.2 run it, O(leaves x depth^2) a tree, or for a model of XGBoost 3.3 and later that
  release's 8-point float32 quadrature: their contributions bit for bit on x86-64.
"""
from __future__ import annotations

import os
import threading

import numpy as np

from .. import threads
from ..algorithms import cpu, oblivious
from ..algorithms.traversal import node_arrays
from ..errors import InputError, ModelFormatError
from ..ir.ensemble import MISSING_NONE, MISSING_ZERO, Ensemble, release_of
from ..tuning import Tuning, current
from . import _shap

METHODS = {"quadrature": _shap.METHOD_QUADRATURE, "treeshap": _shap.METHOD_TREESHAP}
FAMILY_CODES = {"lightgbm": 0, "xgboost": 1, "plain": 2}   # _forest.pxd's FAMILY_*


def gauss_legendre(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The n Gauss-Legendre points of [0, 1] and their weights (summing to 1): exact for
    polynomials of degree up to 2 n - 1."""
    x, w = np.polynomial.legendre.leggauss(n)
    return (x + 1.0) / 2.0, w / 2.0


def _check_covers(ens: Ensemble, a: dict) -> None:
    """Every cover a finite number >= 0, every tree's root cover positive (a branch of zero
    cover, which no training row took, is left out of the contributions)."""
    packed = ens.trees.arrays
    roots = ens.trees.node_offset[:-1][np.diff(ens.trees.node_offset) > 0]
    for name, offs in (("node_cover", ens.trees.node_offset),
                       ("leaf_cover", ens.trees.leaf_offset)):
        c = a[name]
        bad = ~(np.isfinite(c) & (c >= 0))
        if name == "node_cover":
            bad[roots] |= ~(c[roots] > 0)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            t = int(np.searchsorted(offs, k, side="right") - 1)
            what = "node" if name == "node_cover" else "leaf"
            src = packed["node_source_id" if what == "node" else "leaf_source_id"][k]
            need = "a positive number at the root" if k in set(roots.tolist()) else \
                "a number >= 0"
            raise ModelFormatError(
                f"tree {t}: {what} {int(src)} has cover {float(c[k])!r}; contributions "
                f"weigh each branch by its cover, which must be {need}")


def _decision_codes(ens: Ensemble, a: dict) -> np.ndarray:
    """Each node's rule, as the quadrature's blocks decide a numeric node for their rows
    (_shap.pyx DEC_*): the scoring rule (_forest.pxd goes_left) on a converted value, where
    a NaN goes to the default side (to the side of 0.0 for LightGBM's and plain models' nodes
    without missing values) and, for LightGBM's zero-as-missing nodes, 0.0 does too.
    Categorical nodes are marked for goes_left itself."""
    packed = ens.trees.arrays
    left = np.asarray(packed["default_left"], bool)
    mt = np.asarray(packed["missing_type"], np.int64)
    if ens.family == "xgboost":
        nan_left = left
        zero_default = np.zeros(left.shape, bool)
    else:
        nan_left = np.where(mt == MISSING_NONE, 0.0 <= a["threshold"], left)
        zero_default = (mt == MISSING_ZERO) & (ens.family == "lightgbm")
    code = (left.astype(np.uint8) | (nan_left.astype(np.uint8) << 1)
            | (zero_default.astype(np.uint8) << 2)
            | (np.asarray(packed["is_categorical"], bool).astype(np.uint8) << 3))
    return np.ascontiguousarray(code, np.uint8)


def stores_programs(ens: Ensemble) -> bool:
    """Whether the layout keeps every tree's program, or each block of rows builds it again.
    Kept, except for models of oblivious trees: their scoring layout holds one test a level,
    and the programs (a float64 and an int32 an edge) would make the contributions layout
    ten times it. Building them costs a row alone 6% to 16% more time, blocks of rows about
    5%, on 1,000 trees of depth 6 (AMD Zen 3; python -m benchmarks.contributions --programs
    --shapes cb-d6-uniform-1000 --batch 1,8,100 times both)."""
    return oblivious.unsupported(ens) is not None


def shap_arrays(ens: Ensemble, stored_programs: bool | None = None) -> dict:
    """The arrays of a :class:`_shap.ShapLayout` for ``ens``: its nodes (as the traversal
    reads them), covers and leaf values, each tree's quadrature points (enough to be exact for
    its most distinct features on one path) and each output's bias (the trees' expected
    values summed, plus the base score) in each method's arithmetic.

    Raises ModelFormatError for a model without covers (the source gave none), with a
    negative or non-finite cover (or a root's of 0), with linear trees, or with CatBoost's
    CTR features. ``stored_programs``: keep each tree's program (default:
    :func:`stores_programs`)."""
    packed = ens.trees.arrays
    if not ens.has_cover:
        raise ModelFormatError(
            "contributions need each node's cover (the training rows or hessian that reached "
            "it); this model's source does not give them")
    if ens.has_linear:
        raise ModelFormatError(
            "contributions of linear trees are not defined: a leaf's linear model would need "
            "the training rows' means at the leaf, which the model does not store (LightGBM "
            "refuses them too)")
    if ens.ctr is not None:
        raise ModelFormatError(
            "contributions of CatBoost models with CTR features are not supported: their "
            "trees split on columns computed from several inputs")
    a = node_arrays(ens)
    if not np.asarray(packed["is_categorical"], bool).any():
        # only a categorical node reads them (_shap.pyx shap_goes_left)
        a["cat_offset"] = a["cat_nwords"] = np.zeros(0, np.int64)
    a["node_cover"] = np.ascontiguousarray(packed["node_cover"], np.float64)
    a["leaf_cover"] = np.ascontiguousarray(packed["leaf_cover"], np.float64)
    _check_covers(ens, a)
    a["leaf_value"] = np.ascontiguousarray(packed["leaf_value"], np.float64)
    a["dec_code"] = _decision_codes(ens, a)
    a["leaf_offset"] = np.ascontiguousarray(ens.trees.leaf_offset, np.int64)
    xgb = ens.family == "xgboost"
    for name in ("node_cover", "leaf_cover", "leaf_value"):
        a[name + "32"] = a[name].astype(np.float32) if xgb else None
    a["tree_group"] = np.ascontiguousarray(ens.tree_group, np.int32)
    n_trees = ens.n_trees
    if ens.tree_weight is not None:
        w32 = ens.tree_weight.astype(np.float32)
        a["tree_weight32"] = w32
        a["tree_scale"] = w32.astype(np.float64) if xgb else ens.tree_weight.copy()
    else:
        a["tree_weight32"] = None
        a["tree_scale"] = np.ones(n_trees)
    depth, unique, expected, mean32 = _shap.tree_facts(a, ens.n_features, xgb)
    a["tree_depth"] = depth
    nq = np.maximum(1, (unique + 1) // 2).astype(np.int32)
    a["tree_nq"] = nq
    # each size's points once, padded to a whole number of lanes with points of weight 0
    # (the kernel takes the edges' numbers a vector of points at a time)
    qt, qw, start = [], [], {}
    at = 0
    for n in np.unique(nq).tolist():
        t, w = gauss_legendre(n)
        pad = -n % _shap.LANES
        qt.append(np.concatenate([t, np.full(pad, 0.5)]))
        qw.append(np.concatenate([w, np.zeros(pad)]))
        start[n] = at
        at += n + pad
    a["qt"] = np.ascontiguousarray(np.concatenate(qt), np.float64)
    a["qw"] = np.ascontiguousarray(np.concatenate(qw), np.float64)
    a["qg"] = -1.0 / (1.0 - a["qt"])
    a["tree_qoff"] = np.array([start[n] for n in nq.tolist()], np.int64)
    a["xgboost_quadrature"] = xgb and xgboost_quadrature(ens)
    a["swapped"] = (np.ascontiguousarray(packed["is_categorical"], np.uint8)
                    if a["xgboost_quadrature"] and ens.has_categorical else None)
    a["bias64"], a["bias_classic"], a["bias32"] = _biases(ens, a, expected, mean32)
    if stored_programs is None:
        stored_programs = stores_programs(ens)
    if stored_programs:
        a.update(_shap.programs(a))
    else:
        a.update(prog_offset=None, prog_nid=None, prog_child=None, prog_ratio=None)
    a.update(_feature_trees(ens, a["feature"]))
    return a


def _feature_trees(ens: Ensemble, feature: np.ndarray) -> dict:
    """Which features each tree splits on (``tree_feat_offset`` / ``tree_feats``, ascending)
    and which trees split on each feature (``feat_tree_offset`` / ``feat_trees``, in tree
    order): the recursion's interactions condition only the trees that split on a feature."""
    T, F = ens.n_trees, ens.n_features
    counts = np.diff(ens.trees.node_offset)
    tree = np.repeat(np.arange(T, dtype=np.int64), counts)
    pairs = np.unique(tree * max(F, 1) + feature.astype(np.int64))
    trees, feats = pairs // max(F, 1), pairs % max(F, 1)
    by_feature = np.lexsort((trees, feats))
    return {
        "tree_feat_offset": np.searchsorted(trees, np.arange(T + 1)).astype(np.int64),
        "tree_feats": feats.astype(np.int32),
        "feat_tree_offset": np.searchsorted(feats[by_feature],
                                            np.arange(F + 1)).astype(np.int64),
        "feat_trees": trees[by_feature].astype(np.int32),
    }


#: the first XGBoost release whose TreeSHAP is its 8-point float32 quadrature
#: (``treeshap.h`` shap_xgb_quadrature_f32) rather than the recursion
XGBOOST_QUADRATURE_FROM = (3, 3)


def xgboost_quadrature(ens: Ensemble) -> bool:
    """Whether ``method="treeshap"`` takes XGBoost's quadrature for this model: from the
    release that wrote it (which stands for the one that would explain it) on
    :data:`XGBOOST_QUADRATURE_FROM`."""
    if ens.family != "xgboost" or ens.source.get("library") != "xgboost":
        return False
    release = release_of(ens.source.get("version"))
    return release is not None and release >= XGBOOST_QUADRATURE_FROM


def _root_mean64(a: dict, n0: int, l0: int) -> float:
    """XGBoost 3.3's expected value of the tree whose nodes start at n0 and leaves at l0, in
    float64: a leaf's float32 value, a node's its children's weighted by their float32 covers
    (their mean under a node of no cover); children before their parent, without recursion."""
    left, right, cover = a["left"], a["right"], a["node_cover32"]

    def leaf_or(memo, ref):
        return float(a["leaf_value32"][l0 + ~ref]) if ref < 0 else memo[ref]

    def weight(ref):
        return float(cover[n0 + ref]) if ref >= 0 else float(a["leaf_cover32"][l0 + ~ref])

    memo: dict[int, float] = {}
    stack = [(0, False)]
    while stack:
        node, ready = stack.pop()
        lc, rc = int(left[n0 + node]), int(right[n0 + node])
        if not ready:
            stack.append((node, True))
            stack.extend((c, False) for c in (lc, rc) if c >= 0)
            continue
        lm, rm = leaf_or(memo, lc), leaf_or(memo, rc)
        parent = float(cover[n0 + node])
        memo[node] = (0.5 * (lm + rm) if parent == 0.0
                      else (lm * weight(lc) + rm * weight(rc)) / parent)
    return memo[0]


def _biases(ens: Ensemble, a: dict, expected: np.ndarray, mean32: np.ndarray):
    """Each output's bias column: the base score plus the trees' expected values (each times
    its DART weight), in tree order: in float64 from the quadrature's expected values; in
    LightGBM's order (each tree's leaves' count shares times their values, in the source's
    leaf order); and in XGBoost's float32 order (each tree's root mean, the base score
    last)."""
    k = ens.n_outputs
    scale = a["tree_scale"]
    bias64 = ens.base_score.astype(np.float64).copy()
    for t in range(ens.n_trees):
        g = ens.tree_group[t]
        bias64[g] += expected[t] * scale[t]
    bias_classic = ens.base_score.astype(np.float64).copy()
    if ens.family != "xgboost":
        lo, hi = ens.trees.leaf_offset, ens.trees.node_offset
        src = ens.trees.arrays["leaf_source_id"]
        for t in range(ens.n_trees):
            values = a["leaf_value"][lo[t]:lo[t + 1]]
            if hi[t + 1] == hi[t]:
                e = float(values[0])
            else:
                total = float(a["node_cover"][hi[t]])
                order = np.argsort(src[lo[t]:lo[t + 1]], kind="stable")
                e = 0.0
                for i in order.tolist():
                    e += (float(a["leaf_cover"][lo[t] + i]) / total) * float(values[i])
            bias_classic[ens.tree_group[t]] += e * float(scale[t])
    bias32 = np.zeros(k, np.float32)
    if a.get("xgboost_quadrature"):
        # 3.3 and later: each tree's root mean in float64 (times its weight), summed in
        # float64, then rounded and added to the base score in float32
        w32 = a["tree_weight32"]
        n_off, l_off = ens.trees.node_offset, ens.trees.leaf_offset
        sums = np.zeros(k, np.float64)
        for t in range(ens.n_trees):
            n0, l0 = int(n_off[t]), int(l_off[t])
            m = (_root_mean64(a, n0, l0) if n_off[t + 1] > n0
                 else float(a["leaf_value32"][l0]))
            sums[ens.tree_group[t]] += m if w32 is None else m * float(w32[t])
        for g in range(k):
            bias32[g] = np.float32(np.float32(sums[g]) + np.float32(ens.base_score[g]))
    elif ens.family == "xgboost":
        w32 = a["tree_weight32"]
        for g in range(k):
            acc = np.float32(0.0)
            for t in np.flatnonzero(ens.tree_group == g).tolist():
                m = mean32[t]
                acc = np.float32(acc + (m if w32 is None else np.float32(m * w32[t])))
            bias32[g] = np.float32(acc + np.float32(ens.base_score[g]))
    return bias64, bias_classic, bias32


class Explainer:
    """The contributions layout of one model, built on first use (under a lock)."""

    def __init__(self, ens: Ensemble, tuning: Tuning | None = None):
        self.ens = ens
        #: the instruction set and thread pool the calls take (``quickscorer.tuning``)
        self.tuning = current() if tuning is None else tuning
        self._layout = None
        self._lock = threading.Lock()

    @property
    def layout(self):
        if self._layout is None:
            with self._lock:
                if self._layout is None:
                    e = self.ens
                    a = shap_arrays(e)
                    self._layout = (_shap.ShapLayout(a, FAMILY_CODES[e.family], e.n_features,
                                                     e.n_outputs), a)
        return self._layout[0]

    @property
    def built(self) -> bool:
        return self._layout is not None

    def arrays(self) -> list[np.ndarray]:
        """The arrays the layout holds (views of the ensemble's among them), for
        ``Model.memory``."""
        return [] if self._layout is None else [
            v for v in self._layout[1].values() if isinstance(v, np.ndarray)]

    def raw(self, X: np.ndarray, method: str, n_threads: int,
            interactions: bool = False, max_bytes: int | None = None) -> np.ndarray:
        """(n_rows, n_outputs * (n_features + 1)): each output's features, then its bias;
        with ``interactions``, (n_rows, n_outputs * (n_features + 1)^2), each output's
        matrix row by row. float32 for XGBoost's own recursion, else float64."""
        if method not in METHODS:
            raise InputError(f"unknown contributions method {method!r}; the methods are "
                             f"{sorted(METHODS)}")
        e = self.ens
        n, F1 = X.shape[0], e.n_features + 1
        width = e.n_outputs * (F1 * F1 if interactions else F1)
        if interactions:
            check_interaction_memory(n, e.n_outputs, e.n_features, n_threads, max_bytes)
        lay = self.layout
        f32 = method == "treeshap" and e.family == "xgboost"
        out64 = np.empty((0 if f32 else n, width), np.float64)
        out32 = np.empty((n if f32 else 0, width), np.float32)
        code = METHODS[method]

        isa = cpu.isa_code(self.tuning.isa)

        def kernel(x, o64, o32, nt):
            lay.contributions(x, o64, o32, code, nt, isa, interactions)
        if n_threads > 1:
            threads.run(kernel, X, (out64, out32), n_threads, self.tuning.thread_pool)
        else:
            kernel(X, out64, out32, 1)
        return out32 if f32 else out64


def feature_labels(names, n_features: int) -> list[str]:
    """The model's feature names, or XGBoost's ``f0``, ``f1``, ... where it has none: the
    labels contributions are shown under (shap's Explanation, ``score --contrib``'s columns,
    ``Ranking.why``)."""
    return [str(n) for n in names] if names else [f"f{i}" for i in range(n_features)]


def memory_available() -> int:
    """Bytes of memory the system has free for a new allocation (MemAvailable on Linux,
    else the physical memory)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 62


def check_interaction_memory(n_rows: int, n_outputs: int, n_features: int, n_threads: int,
                             max_bytes: int | None) -> None:
    """InputError, before anything is allocated, where a call's interactions would need more
    than ``max_bytes`` (default: half the memory available now): the output, float64,
    (n_rows, n_outputs, (n_features + 1)^2), and each thread's sums."""
    F1 = n_features + 1
    out = 8 * n_rows * n_outputs * F1 * F1
    pairs = 8 * n_outputs * n_features * n_features      # a lane's pair sums
    per_thread = pairs * (_shap.LANES if pairs * _shap.LANES <= _shap.INTERACTION_BLOCK_BYTES
                          else 1)
    need = out + n_threads * per_thread
    limit = memory_available() // 2 if max_bytes is None else int(max_bytes)
    if need > limit:
        what = "max_bytes" if max_bytes is not None else "half the memory available"
        raise InputError(
            f"interactions of {n_rows} rows need {need / 2**20:.1f} MiB ({n_outputs} x "
            f"{F1} x {F1} float64 a row, for {n_features} features), more than the limit "
            f"of {limit / 2**20:.1f} MiB ({what}); explain fewer rows a call")


def shaped(ens: Ensemble, raw: np.ndarray, interactions: bool = False) -> np.ndarray:
    """Contributions in the source library's layout: LightGBM's outputs side by side,
    ``(n_rows, n_outputs * (n_features + 1))``; every other library's ``(n_rows,
    n_features + 1)`` for one output, ``(n_rows, n_outputs, n_features + 1)`` for more.
    Interactions in XGBoost's, for every library: ``(n_rows, n_features + 1, n_features +
    1)`` for one output, ``(n_rows, n_outputs, n_features + 1, n_features + 1)`` for more.
    float32 for XGBoost models, float64 otherwise."""
    if ens.family == "xgboost":
        raw = raw.astype(np.float32, copy=False)
    if interactions:
        F1 = ens.n_features + 1
        if ens.n_outputs == 1:
            return raw.reshape(raw.shape[0], F1, F1)
        return raw.reshape(raw.shape[0], ens.n_outputs, F1, F1)
    if ens.family == "lightgbm" or ens.n_outputs == 1:
        return raw
    return raw.reshape(raw.shape[0], ens.n_outputs, ens.n_features + 1)

