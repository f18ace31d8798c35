"""The neutral ensemble model (IR) every importer writes and every layout reads.

Conventions (``docs/algorithms.md``):

* internal nodes are numbered breadth-first from the root (0 = root);
* leaves are numbered left to right (in order), 0 = leftmost;
* a child reference ``c >= 0`` is internal node ``c``; ``c < 0`` is leaf ``~c``;
* a numerical node is **true** (goes left) iff ``x <= threshold``.

Importers normalise each library's rule to that form (XGBoost's ``x < t`` becomes
``x <= nextafterf(t, -inf)``). What cannot be normalised into a node field -- how an input
value is converted before the comparisons, how categories are truncated, the precision of the
sum -- is decided by the ensemble's ``family`` (``"lightgbm"``, ``"xgboost"`` or ``"plain"``), see
``docs/semantics.md``.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import ModelFormatError
from . import _build, matrices
from .ctr import CtrFeatures

#: missing types of a numerical node (LightGBM's ``(decision_type >> 2) & 3``)
MISSING_NONE = 0  # NaN is compared as 0.0 (LightGBM "None")
MISSING_ZERO = 1  # zero (|x| <= kZeroThreshold) and NaN take the default side
MISSING_NAN = 2   # NaN takes the default side (every XGBoost node)

#: how a family reads a row and adds its trees (docs/semantics.md, "The families"):
#: "lightgbm" float64 with |x| <= kZeroThreshold read as 0.0; "xgboost" float32; "plain"
#: float64 as given (scikit-learn, and importers whose thresholds are made exact for it)
FAMILIES = ("lightgbm", "xgboost", "plain")

#: refuse trees and category sets beyond these sizes as corrupt rather than allocate them
MAX_NODES_PER_TREE = 1 << 24
MAX_CATEGORY = (1 << 31) - 1
#: the categorical nodes' bitsets of one model (a node's largest category // 32 + 1 words
#: each) hold at most this many words: the layouts refuse more, so the model is refused when
#: it is made, not at its first call
MAX_CATEGORY_WORDS = 1 << 24

#: output transforms known to the scorer (see ``src/quickscorer/_transforms.pyx``)
TRANSFORMS = (
    "identity",
    "sigmoid",          # LightGBM binary / cross_entropy: 1 / (1 + exp(-s x))
    "softmax",          # LightGBM multiclass
    "ova_sigmoid",      # LightGBM multiclassova: per-class sigmoid
    "exp",              # LightGBM poisson / gamma / tweedie
    "log1p_exp",        # LightGBM cross_entropy_lambda
    "signed_square",    # LightGBM "regression sqrt"
    "xgb_logistic",     # XGBoost binary:logistic and friends (float32)
    "xgb_softmax",      # XGBoost multi:softprob (float32)
    "xgb_softmax_argmax",  # XGBoost multi:softmax: the class index
    "xgb_exp",          # XGBoost count:poisson, reg:gamma, reg:tweedie (float32)
    "onnx_logistic",    # ONNX Runtime's LOGISTIC post-transform (float32)
    "onnx_softmax",     # ONNX Runtime's SOFTMAX post-transform (float32)
    "onnx_probit",      # ONNX Runtime's PROBIT post-transform (float32)
    "onnx_softmax_zero",  # ONNX Runtime's SOFTMAX_ZERO post-transform (float32)
    "numpy_exp",        # scikit-learn's LogLink: NumPy's exp
    "numpy_softmax",    # scikit-learn's MultinomialLogit: its softmax in NumPy
)


def _ro(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class LinearLeaves:
    """Linear models in the leaves of one tree (LightGBM ``linear_tree``).

    Leaf ``l`` predicts ``const[l] + sum_k coeff[k] * x[feature[k]]`` over
    ``k in range(offsets[l], offsets[l + 1])``, summed in that order; if any of those
    features is NaN, the leaf's plain ``leaf_value`` is used instead.
    """

    const: np.ndarray    # float64[n_leaves]
    offsets: np.ndarray  # int64[n_leaves + 1], into feature / coeff
    feature: np.ndarray  # int32[n_terms]
    coeff: np.ndarray    # float64[n_terms]


@dataclass(frozen=True, eq=False)
class Tree:
    """One binary tree in canonical numbering, struct of arrays, read-only."""

    feature: np.ndarray        # int32[n_internal]: split feature
    # float64[n_internal]: go left iff x <= threshold (0.0 if categorical)
    threshold: np.ndarray
    left: np.ndarray           # int32[n_internal]: left child (c >= 0 internal, c < 0 leaf ~c)
    right: np.ndarray          # int32[n_internal]: right child
    default_left: np.ndarray   # bool[n_internal]: side of a missing value
    missing_type: np.ndarray   # uint8[n_internal]: MISSING_NONE / _ZERO / _NAN
    is_categorical: np.ndarray  # bool[n_internal]
    cat_offsets: np.ndarray    # int64[n_internal + 1]: node n's categories are
    cat_values: np.ndarray     # int32[...] cat_values[cat_offsets[n]:cat_offsets[n + 1]], sorted
    leaf_value: np.ndarray     # float64[n_leaves]
    leaf_source_id: np.ndarray  # int32[n_leaves]: the source library's id of each leaf
    node_source_id: np.ndarray  # int32[n_internal]: the source library's id of each node
    linear: LinearLeaves | None = None
    #: the training rows that reached each node / leaf (LightGBM's internal_count and
    #: leaf_count; XGBoost's sum_hessian, the rows' hessian mass), where the source gives
    #: them; they decide no score, only which kernel the default predict runs for a few rows
    #: (algorithms/autoselect.py)
    node_cover: np.ndarray | None = None   # float64[n_internal]
    leaf_cover: np.ndarray | None = None   # float64[n_leaves]

    @property
    def n_internal(self) -> int:
        return int(self.feature.shape[0])

    @property
    def n_leaves(self) -> int:
        return int(self.leaf_value.shape[0])

    def categories(self, node: int) -> np.ndarray:
        """Sorted categories listed at categorical node ``node``."""
        return self.cat_values[self.cat_offsets[node]:self.cat_offsets[node + 1]]

    def leaf_ranges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per internal node: first leaf, first leaf of the right subtree, one past the last leaf.

        Leaves ``[lo, mid)`` are in the node's left subtree and ``[mid, hi)`` in its right one.
        """
        cached = self.__dict__.get("_leaf_ranges")
        if cached is not None:
            return cached
        # children have larger BFS numbers than parents: a reverse sweep sees children first
        lo, mid, hi = _build.leaf_ranges(np.ascontiguousarray(self.left, np.int32),
                                  np.ascontiguousarray(self.right, np.int32))
        for a in (lo, mid, hi):
            a.setflags(write=False)
        object.__setattr__(self, "_leaf_ranges", (lo, mid, hi))  # computed once per tree
        return lo, mid, hi

    def depth(self) -> int:
        """Number of internal nodes on the longest root-to-leaf path."""
        if self.n_internal == 0:
            return 0
        d = np.zeros(self.n_internal, np.int64)
        best = 1
        for n in range(self.n_internal):
            for c in (int(self.left[n]), int(self.right[n])):
                if c >= 0:
                    d[c] = d[n] + 1
                else:
                    best = max(best, int(d[n]) + 1)
        return best

    # The paper's matrices of this tree (``matrices.py``; the rest of the paper's forms are in
    # ``quickscorer.paper.representations``).
    def left_matrix(self) -> np.ndarray:
        return matrices.left_matrix(self)

    def right_matrix(self) -> np.ndarray:
        return matrices.right_matrix(self)

    def path_matrix(self) -> np.ndarray:
        return matrices.path_matrix(self)

    def depth_vector(self) -> np.ndarray:
        return matrices.depth_vector(self)


def constant_tree(value: float, n_features: int, where: str = "tree") -> Tree:
    """A one-leaf tree worth ``value`` for every row (a base value added after the trees);
    its one leaf's cover is 1 (every row reaches it), so that it keeps a model's covers."""
    return build_tree(left=[-1], right=[-1], root=0, feature=[0], threshold=[0.0],
                      default_left=[False], missing_type=[MISSING_NAN], is_categorical=[False],
                      categories=None, value=[value], n_features=n_features, where=where,
                      cover=[1.0])


def _per_node(name: str, arr, dtype, k: int, where: str) -> np.ndarray:
    """A source field of one entry per node as ``dtype``, or a ModelFormatError naming it."""
    a = np.asarray(arr)
    if a.ndim != 1 or a.shape[0] != k:
        raise ModelFormatError(
            f"{where}: field '{name}' has {a.size} entries, expected {k} (one per node)")
    try:
        return a.astype(dtype, copy=False)
    except (ValueError, TypeError, OverflowError) as exc:
        raise ModelFormatError(f"{where}: field '{name}' is not numeric: {exc}") from None


def _canonical_order(left, right, root: int, is_leaf, src_a, where: str):
    """The internal source nodes breadth-first from the root, and each node's first leaf's
    in-order position: the walk proves every node reached exactly once (both walks in C,
    src/quickscorer/ir/_build.pyx)."""
    bfs, first, problem, bad_node = _build.canonical_order(
        np.ascontiguousarray(left), np.ascontiguousarray(right), int(root),
        np.ascontiguousarray(is_leaf).view(np.uint8))
    if problem == 1:
        raise ModelFormatError(
            f"{where}: node {src_a[bad_node]} is reached twice (a cycle or a shared child)")
    if problem == 2:
        raise ModelFormatError(f"{where}: node {src_a[bad_node]} is not reachable from the root")
    internal_ids = np.asarray(bfs, dtype=np.int64)
    m = internal_ids.shape[0]
    if left.shape[0] - m != m + 1:  # cannot fail after the walk, kept as the stated invariant
        raise ModelFormatError(f"{where}: {left.shape[0] - m} leaves for {m} internal nodes")
    return internal_ids, first


def build_tree(
    *,
    left: Sequence[int] | np.ndarray,
    right: Sequence[int] | np.ndarray,
    root: int,
    feature: Sequence[int] | np.ndarray,
    threshold: Sequence[float] | np.ndarray,
    default_left: Sequence[bool] | np.ndarray,
    missing_type: Sequence[int] | np.ndarray,
    is_categorical: Sequence[bool] | np.ndarray,
    categories: dict[int, Sequence[int] | np.ndarray] | None,
    value: Sequence[float] | np.ndarray,
    source_id: Sequence[int] | np.ndarray | None = None,
    linear: dict[int, tuple[float, Sequence[int], Sequence[float]]] | None = None,
    cover: Sequence[float] | np.ndarray | None = None,
    n_features: int,
    where: str = "tree",
) -> Tree:
    """Build a canonical :class:`Tree` from source-numbered nodes, validating everything.

    Source nodes are indexed ``0 .. k-1`` (internal and leaf nodes in one numbering of the
    importer's choice). ``left[i] == right[i] == -1`` marks a leaf; otherwise both name
    children. Per-node fields are read at internal nodes, ``value`` at leaves. ``categories``
    maps a categorical source node to its category list. ``linear`` maps a leaf source node to
    ``(const, features, coeffs)``. ``source_id`` gives the id to report for each source node
    (defaults to the index). ``cover`` gives the training rows that reached each source node;
    it is advisory (no score depends on it), so one that is not a finite, non-negative value
    per node is dropped rather than refused. ``where`` prefixes every error message (e.g.
    ``"tree 12"``).

    Raises :class:`ModelFormatError` if a child index is out of range, a node is reached twice
    (a cycle or shared child) or never (an orphan), a leaf count does not match, a threshold
    is NaN, a feature is out of range, or a category is invalid.
    """
    left = np.asarray(left, dtype=np.int64)
    right = np.asarray(right, dtype=np.int64)
    k = left.shape[0]
    if k == 0:
        raise ModelFormatError(f"{where}: empty tree (no nodes)")
    if k > MAX_NODES_PER_TREE:
        raise ModelFormatError(f"{where}: {k} nodes is more than the {MAX_NODES_PER_TREE} allowed")

    def per_node(name: str, arr, dtype) -> np.ndarray:
        return _per_node(name, arr, dtype, k, where)

    right = per_node("right", right, np.int64)
    feature_a = per_node("feature", feature, np.int64)
    threshold_a = per_node("threshold", threshold, np.float64)
    default_left_a = per_node("default_left", default_left, bool)
    missing_a = per_node("missing_type", missing_type, np.int64)
    is_cat_a = per_node("is_categorical", is_categorical, bool)
    value_a = per_node("value", value, np.float64)
    src_a = per_node("source_id", np.arange(k) if source_id is None else source_id, np.int64)
    if not (0 <= root < k):
        raise ModelFormatError(f"{where}: root {root} out of range [0, {k})")

    is_leaf = (left == -1) & (right == -1)
    bad = ~is_leaf & ((left < 0) | (left >= k) | (right < 0) | (right >= k))
    if bad.any():
        n = int(np.flatnonzero(bad)[0])
        raise ModelFormatError(
            f"{where}: node {src_a[n]} has a child index out of range "
            f"(left={left[n]}, right={right[n]}, nodes={k})")

    internal_ids, first = _canonical_order(left, right, root, is_leaf, src_a, where)
    m = internal_ids.shape[0]
    n_leaves = k - m

    new_internal = np.full(k, -1, np.int64)
    new_internal[internal_ids] = np.arange(m)
    new_leaf = np.where(is_leaf, first, -1)
    leaf_ids = np.empty(n_leaves, np.int64)
    leaf_ids[first[is_leaf]] = np.flatnonzero(is_leaf)

    def child_ref(c: np.ndarray) -> np.ndarray:
        return np.where(is_leaf[c], ~new_leaf[c], new_internal[c]).astype(np.int32)

    feat = feature_a[internal_ids]
    if m and ((feat < 0) | (feat >= n_features)).any():
        n = int(np.flatnonzero((feat < 0) | (feat >= n_features))[0])
        raise ModelFormatError(
            f"{where}: node {src_a[internal_ids[n]]} splits on feature {feat[n]}, "
            f"but the model has {n_features} features")
    cat = is_cat_a[internal_ids]
    thr = np.where(cat, 0.0, threshold_a[internal_ids])
    # +-inf is a real threshold (LightGBM writes "inf" for a split of NaN from the rest)
    if np.isnan(thr).any():
        n = int(np.flatnonzero(np.isnan(thr))[0])
        raise ModelFormatError(
            f"{where}: node {src_a[internal_ids[n]]} has a NaN threshold")
    miss = missing_a[internal_ids]
    if ((miss < 0) | (miss > MISSING_NAN)).any():
        raise ModelFormatError(f"{where}: unknown missing type in {sorted(set(miss.tolist()))}")
    leaf_vals = value_a[leaf_ids]
    if not np.isfinite(leaf_vals).all():
        raise ModelFormatError(f"{where}: a leaf value is not finite")

    cat_offsets, cat_values = _tree_categories(categories or {}, cat, internal_ids, src_a,
                                               where)
    lin = None if linear is None else _linear_leaves(linear, leaf_vals, leaf_ids, src_a,
                                                     n_features, where)
    node_cover, leaf_cover = _covers(cover, k, internal_ids, leaf_ids)

    return Tree(
        feature=_ro(feat.astype(np.int32)),
        threshold=_ro(thr.astype(np.float64)),
        left=_ro(child_ref(left[internal_ids]) if m else np.zeros(0, np.int32)),
        right=_ro(child_ref(right[internal_ids]) if m else np.zeros(0, np.int32)),
        default_left=_ro(default_left_a[internal_ids]),
        missing_type=_ro(miss.astype(np.uint8)),
        is_categorical=_ro(cat),
        cat_offsets=_ro(cat_offsets),
        cat_values=_ro(cat_values.astype(np.int32)),
        leaf_value=_ro(leaf_vals),
        leaf_source_id=_ro(src_a[leaf_ids].astype(np.int32)),
        node_source_id=_ro(src_a[internal_ids].astype(np.int32)),
        linear=lin,
        node_cover=node_cover,
        leaf_cover=leaf_cover,
    )


def _tree_categories(categories: dict, cat: np.ndarray, internal_ids: np.ndarray,
                     src_a: np.ndarray, where: str) -> tuple[np.ndarray, np.ndarray]:
    """The canonical nodes' category lists (``categories`` by source node; ``cat``: which
    canonical nodes are categorical) as offsets and sorted distinct values."""
    m = cat.shape[0]
    cat_offsets = np.zeros(m + 1, np.int64)
    chunks = []
    for j in np.flatnonzero(cat).tolist():
        src = int(internal_ids[j])
        cats = np.asarray(categories.get(src, ()), dtype=np.float64).ravel()
        if cats.size and (not np.isfinite(cats).all() or (cats != np.trunc(cats)).any()
                          or cats.min() < 0 or cats.max() > MAX_CATEGORY):
            raise ModelFormatError(
                f"{where}: node {src_a[src]} has an invalid category (categories must be "
                f"integers in [0, {MAX_CATEGORY}])")
        u = np.unique(cats.astype(np.int64)).astype(np.int32)
        chunks.append(u)
        cat_offsets[j + 1] = u.size
    cat_values = np.concatenate(chunks) if chunks else np.zeros(0, np.int32)
    return np.cumsum(cat_offsets), cat_values


def _linear_leaves(linear: dict, leaf_vals: np.ndarray, leaf_ids: np.ndarray,
                   src_a: np.ndarray, n_features: int, where: str) -> LinearLeaves:
    """The leaves' linear models (``linear`` by source leaf: constant, features,
    coefficients) in canonical leaf order; a leaf without one keeps its value as constant."""
    const = leaf_vals.copy()
    offs = np.zeros(leaf_ids.shape[0] + 1, np.int64)
    feats, coeffs = [], []
    for j, src in enumerate(leaf_ids.tolist()):
        if src not in linear:
            feats.append(np.zeros(0, np.int64))
            coeffs.append(np.zeros(0))
            continue
        c0, fs, cs = linear[src]
        fs = np.asarray(fs, dtype=np.int64).ravel()
        cs = np.asarray(cs, dtype=np.float64).ravel()
        if fs.shape != cs.shape:
            raise ModelFormatError(
                f"{where}: leaf {src_a[src]} has {fs.size} linear features but "
                f"{cs.size} coefficients")
        if fs.size and ((fs < 0) | (fs >= n_features)).any():
            raise ModelFormatError(
                f"{where}: leaf {src_a[src]} uses a feature out of range in its linear model")
        if not (np.isfinite(c0) and np.isfinite(cs).all()):
            raise ModelFormatError(f"{where}: leaf {src_a[src]} has a non-finite "
                                   f"linear coefficient")
        const[j] = c0
        feats.append(fs)
        coeffs.append(cs)
        offs[j + 1] = fs.size
    return LinearLeaves(
        const=_ro(const),
        offsets=_ro(np.cumsum(offs)),
        feature=_ro(np.concatenate(feats).astype(np.int32)),
        coeff=_ro(np.concatenate(coeffs).astype(np.float64)),
    )


def _covers(cover, k: int, internal_ids: np.ndarray, leaf_ids: np.ndarray):
    """The nodes' and leaves' covers in canonical order, or (None, None) where ``cover`` is
    not a finite, non-negative number per source node (covers are advisory: dropped, never
    refused)."""
    try:
        cov = np.asarray(cover)
    except ValueError:        # ragged
        return None, None
    if (cov.dtype.kind in "biuf" and cov.shape == (k,) and np.isfinite(cov).all()
            and (cov >= 0).all()):
        return (_ro(cov[internal_ids].astype(np.float64)),
                _ro(cov[leaf_ids].astype(np.float64)))
    return None, None


class PackedTrees(Sequence):
    """All trees of an ensemble in a few flat arrays (struct of arrays), read-only.

    Node fields of every tree lie one after the other in tree order (``node_offset[t]`` is
    tree ``t``'s first node), leaf fields likewise (``leaf_offset``); categories are one list
    per node (``cat_offset``, absent when no node is categorical), linear leaves one term
    range per leaf (``lin_offset``, absent without linear trees), and the covers
    (``node_cover``, ``leaf_cover``) are absent unless every tree has them. A loaded model
    keeps these arrays and no object per tree: ``trees[t]`` is a :class:`Tree` of views into
    them, made when asked for (a slice is another :class:`PackedTrees` over the same memory).
    """

    NODE_FIELDS = (("feature", np.int32), ("threshold", np.float64), ("left", np.int32),
                   ("right", np.int32), ("default_left", np.bool_),
                   ("missing_type", np.uint8), ("is_categorical", np.bool_),
                   ("node_source_id", np.int32))
    LEAF_FIELDS = (("leaf_value", np.float64), ("leaf_source_id", np.int32))
    #: absent (None) when no node is categorical / no tree is linear / a tree lacks covers
    OPTIONAL = ("cat_offset", "cat_values", "lin_tree", "lin_const", "lin_offset",
                "lin_feature", "lin_coeff", "node_cover", "leaf_cover")

    def __init__(self, arrays: dict[str, np.ndarray | None]) -> None:
        self.arrays = dict(arrays)
        for name in self.OPTIONAL:
            self.arrays.setdefault(name, None)
        arrays = self.arrays
        self.node_offset = arrays["node_offset"]
        self.leaf_offset = arrays["leaf_offset"]
        nc, lc = arrays["node_cover"], arrays["leaf_cover"]
        if (nc is None or lc is None or nc.shape != arrays["feature"].shape
                or lc.shape != arrays["leaf_value"].shape):
            arrays["node_cover"] = arrays["leaf_cover"] = None   # both or neither

    @classmethod
    def pack(cls, trees: Sequence[Tree]) -> PackedTrees:
        """The packed form of a sequence of :class:`Tree` (itself if it is one already)."""
        if isinstance(trees, PackedTrees):
            return trees
        trees = list(trees)
        if not all(isinstance(t, Tree) for t in trees):
            raise ModelFormatError("an ensemble's trees must be Tree objects")
        n_int = np.fromiter((t.n_internal for t in trees), np.int64, len(trees))
        n_leaf = np.fromiter((t.n_leaves for t in trees), np.int64, len(trees))
        a: dict[str, np.ndarray | None] = {
            "node_offset": _ro(np.concatenate([[0], np.cumsum(n_int)]).astype(np.int64)),
            "leaf_offset": _ro(np.concatenate([[0], np.cumsum(n_leaf)]).astype(np.int64)),
        }
        for name, dtype in cls.NODE_FIELDS + cls.LEAF_FIELDS:
            a[name] = _ro(np.concatenate([getattr(t, name) for t in trees] or
                                         [np.zeros(0, dtype)]).astype(dtype, copy=False))
        if bool(a["is_categorical"].any()):
            counts = np.concatenate([np.diff(t.cat_offsets) for t in trees])
            a["cat_offset"] = _ro(np.concatenate([[0], np.cumsum(counts)]).astype(np.int64))
            a["cat_values"] = _ro(np.concatenate([t.cat_values for t in trees]).astype(np.int32))
        if any(t.linear is not None for t in trees):
            terms = [np.diff(t.linear.offsets) if t.linear is not None
                     else np.zeros(t.n_leaves, np.int64) for t in trees]
            a["lin_tree"] = _ro(np.array([t.linear is not None for t in trees]))
            a["lin_const"] = _ro(np.concatenate(
                [t.linear.const if t.linear is not None else t.leaf_value for t in trees]))
            a["lin_offset"] = _ro(np.concatenate([[0], np.cumsum(np.concatenate(terms))])
                                  .astype(np.int64))
            a["lin_feature"] = _ro(np.concatenate(
                [t.linear.feature for t in trees if t.linear is not None]).astype(np.int32))
            a["lin_coeff"] = _ro(np.concatenate(
                [t.linear.coeff for t in trees if t.linear is not None]).astype(np.float64))
        if trees and all(t.node_cover is not None and t.leaf_cover is not None for t in trees):
            a["node_cover"] = _ro(np.concatenate([t.node_cover for t in trees])
                                  .astype(np.float64, copy=False))
            a["leaf_cover"] = _ro(np.concatenate([t.leaf_cover for t in trees])
                                  .astype(np.float64, copy=False))
        return cls(a)

    def __len__(self) -> int:
        return self.node_offset.shape[0] - 1

    def __iter__(self):
        for t in range(len(self)):
            yield self._tree(t)

    def __getitem__(self, key):
        if isinstance(key, slice):
            start, stop, step = key.indices(len(self))
            if step != 1:
                return [self._tree(t) for t in range(start, stop, step)]
            return self._slice(start, max(start, stop))
        t = int(key)
        if t < 0:
            t += len(self)
        if not 0 <= t < len(self):
            raise IndexError(f"tree {key} of {len(self)}")
        return self._tree(t)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays.values() if isinstance(a, np.ndarray))

    def _tree(self, t: int) -> Tree:
        """Tree ``t`` as a :class:`Tree` of views: the one-tree slice's arrays."""
        a = self._slice(t, t + 1).arrays
        n_internal = a["feature"].shape[0]
        cat_offsets, cat_values = a["cat_offset"], a["cat_values"]
        if cat_offsets is None:
            cat_offsets = _ro(np.zeros(n_internal + 1, np.int64))
            cat_values = _NO_CATEGORIES
        linear = None
        if a["lin_tree"] is not None and a["lin_tree"][0]:
            linear = LinearLeaves(const=a["lin_const"], offsets=a["lin_offset"],
                                  feature=a["lin_feature"], coeff=a["lin_coeff"])
        return Tree(**{name: a[name] for name, _ in self.NODE_FIELDS + self.LEAF_FIELDS},
                    cat_offsets=cat_offsets, cat_values=cat_values, linear=linear,
                    node_cover=a["node_cover"], leaf_cover=a["leaf_cover"])

    def _slice(self, start: int, stop: int) -> PackedTrees:
        a = self.arrays
        n0, n1 = int(self.node_offset[start]), int(self.node_offset[stop])
        l0, l1 = int(self.leaf_offset[start]), int(self.leaf_offset[stop])
        out: dict[str, np.ndarray | None] = {
            "node_offset": _ro(self.node_offset[start:stop + 1] - n0),
            "leaf_offset": _ro(self.leaf_offset[start:stop + 1] - l0),
        }
        for name, _ in self.NODE_FIELDS:
            out[name] = a[name][n0:n1]
        for name, _ in self.LEAF_FIELDS:
            out[name] = a[name][l0:l1]
        if a["cat_offset"] is not None:
            c0, c1 = int(a["cat_offset"][n0]), int(a["cat_offset"][n1])
            out["cat_offset"] = _ro(a["cat_offset"][n0:n1 + 1] - c0)
            out["cat_values"] = a["cat_values"][c0:c1]
        if a["node_cover"] is not None:          # with leaf_cover (see __init__)
            out["node_cover"] = a["node_cover"][n0:n1]
            out["leaf_cover"] = a["leaf_cover"][l0:l1]
        if a["lin_tree"] is not None:
            k0, k1 = int(a["lin_offset"][l0]), int(a["lin_offset"][l1])
            out["lin_tree"] = a["lin_tree"][start:stop]
            out["lin_const"] = a["lin_const"][l0:l1]
            out["lin_offset"] = _ro(a["lin_offset"][l0:l1 + 1] - k0)
            out["lin_feature"] = a["lin_feature"][k0:k1]
            out["lin_coeff"] = a["lin_coeff"][k0:k1]
        return PackedTrees(out)

    def __reduce__(self):
        return (PackedTrees, ({k: (None if v is None else np.array(v))
                              for k, v in self.arrays.items()},))


def _offsets(a, n: int, total: int, name: str) -> None:
    """Refuse an offsets array that is not ``n`` + 1 values rising from 0 to ``total``."""
    if a.shape != (n + 1,) or int(a[0]) != 0 or int(a[-1]) != total or (
            n and (np.diff(a) < 0).any()):
        raise ModelFormatError(f"trees field {name!r} is not {n + 1} offsets rising from 0 "
                               f"to {total}")


#: _build.check_values's faults, as check_packed names them
_VALUE_FAULTS = {
    1: "trees field 'feature' names a feature outside [0, {n_features})",
    2: "trees field 'default_left' holds a value that is not a bool",
    3: "trees field 'is_categorical' holds a value that is not a bool",
    4: "trees field 'missing_type' holds an unknown missing type",
    5: "trees field 'threshold' holds a NaN threshold",
    6: "trees field 'leaf_value' holds a value that is not finite",
}


def check_packed(arrays: dict, n_features: int) -> None:
    """Refuse packed tree arrays (``PackedTrees.arrays``) that are not trees as
    :func:`build_tree` makes them: each field of its dtype and length, the offsets in order,
    each tree one canonical tree, every feature, missing type, category and linear term in
    range, every leaf value finite. For arrays that no importer has checked (a model file's);
    ModelFormatError names the field, tree and node."""
    fields = dict(PackedTrees.NODE_FIELDS + PackedTrees.LEAF_FIELDS,
                  node_offset=np.int64, leaf_offset=np.int64, cat_offset=np.int64,
                  cat_values=np.int32, lin_tree=np.bool_, lin_const=np.float64,
                  lin_offset=np.int64, lin_feature=np.int32, lin_coeff=np.float64,
                  node_cover=np.float64, leaf_cover=np.float64)
    unknown = set(arrays) - set(fields)
    if unknown:
        raise ModelFormatError(f"unknown trees fields {sorted(unknown)}")
    for name, dtype in fields.items():
        a = arrays.get(name)
        if a is None:
            if name not in PackedTrees.OPTIONAL:
                raise ModelFormatError(f"trees field {name!r} is missing")
            continue
        if not isinstance(a, np.ndarray) or a.dtype != dtype or a.ndim != 1:
            raise ModelFormatError(f"trees field {name!r} is not a 1-D {np.dtype(dtype)} array")
    node_offset, leaf_offset = arrays["node_offset"], arrays["leaf_offset"]
    n_trees = node_offset.shape[0] - 1
    if n_trees < 1:
        raise ModelFormatError("trees field 'node_offset' holds no tree")
    n_nodes, n_leaves = arrays["feature"].shape[0], arrays["leaf_value"].shape[0]
    _offsets(node_offset, n_trees, n_nodes, "node_offset")
    _offsets(leaf_offset, n_trees, n_leaves, "leaf_offset")
    for name, _ in PackedTrees.NODE_FIELDS:
        if arrays[name].shape[0] != n_nodes:
            raise ModelFormatError(f"trees field {name!r} has {arrays[name].shape[0]} "
                                   f"values for {n_nodes} nodes")
    for name in ("leaf_source_id",) + (("leaf_cover",) if arrays.get("leaf_cover")
                                       is not None else ()):
        if arrays[name].shape[0] != n_leaves:
            raise ModelFormatError(f"trees field {name!r} has {arrays[name].shape[0]} "
                                   f"values for {n_leaves} leaves")
    if arrays.get("node_cover") is not None and arrays["node_cover"].shape[0] != n_nodes:
        raise ModelFormatError("trees field 'node_cover' is not one value a node")
    bad = _build.check_packed(arrays["left"], arrays["right"], node_offset, leaf_offset)
    if bad is not None:
        t, n = bad
        what = "has a leaf count that is not its node count plus one" if n < 0 else (
            f"node {n} has a child out of place or is out of place itself (not one tree in "
            f"canonical order: nodes breadth-first, leaves left to right)")
        raise ModelFormatError(f"tree {t} {what}")
    fault, any_categorical = _build.check_values(
        arrays["feature"], arrays["default_left"].view(np.uint8),
        arrays["is_categorical"].view(np.uint8), arrays["missing_type"],
        arrays["threshold"].view(np.uint64), arrays["leaf_value"].view(np.uint64), n_features,
        MISSING_NAN)
    if fault:
        raise ModelFormatError(_VALUE_FAULTS[fault].format(n_features=n_features))
    cat_offset, cat_values = arrays.get("cat_offset"), arrays.get("cat_values")
    if (cat_offset is None) != (cat_values is None):
        raise ModelFormatError("trees fields 'cat_offset' and 'cat_values' come together")
    if cat_offset is not None:
        _offsets(cat_offset, n_nodes, cat_values.shape[0], "cat_offset")
        if cat_values.shape[0] and int(cat_values.min()) < 0:
            raise ModelFormatError("trees field 'cat_values' holds a negative category")
    elif any_categorical:
        raise ModelFormatError("categorical nodes without 'cat_offset' and 'cat_values'")
    lin = [arrays.get(k) for k in ("lin_tree", "lin_const", "lin_offset", "lin_feature",
                                   "lin_coeff")]
    if any(a is not None for a in lin):
        if any(a is None for a in lin):
            raise ModelFormatError("trees fields 'lin_*' come together")
        lin_tree, lin_const, lin_offset, lin_feature, lin_coeff = lin
        if lin_tree.shape[0] != n_trees or lin_const.shape[0] != n_leaves:
            raise ModelFormatError("trees fields 'lin_tree' / 'lin_const' do not match the "
                                   "trees and leaves")
        _offsets(lin_offset, n_leaves, lin_feature.shape[0], "lin_offset")
        if lin_coeff.shape[0] != lin_feature.shape[0]:
            raise ModelFormatError("trees fields 'lin_feature' and 'lin_coeff' differ in length")
        if lin_feature.shape[0] and (int(lin_feature.min()) < 0
                                     or int(lin_feature.max()) >= n_features):
            raise ModelFormatError("trees field 'lin_feature' names a feature outside the "
                                   "model's")
        if not (np.isfinite(lin_const).all() and np.isfinite(lin_coeff).all()):
            raise ModelFormatError("trees fields 'lin_const' / 'lin_coeff' hold a value that "
                                   "is not finite")


def _checked_labels(labels, n_features: int) -> dict[int, dict[str, int]]:
    """A copy of ``category_labels`` with every column and number checked."""
    if not isinstance(labels, dict):
        raise ModelFormatError("category_labels is not a mapping of columns")
    out = {}
    for col, table in labels.items():
        if (isinstance(col, bool) or not isinstance(col, (int, np.integer))
                or not 0 <= col < n_features or not isinstance(table, dict)):
            raise ModelFormatError(f"category_labels: column {col!r} is not a feature with a "
                                   f"table of category texts")
        for text, number in table.items():
            if (not isinstance(text, str) or isinstance(number, bool)
                    or not isinstance(number, (int, np.integer))
                    or not 0 <= number <= MAX_CATEGORY):
                raise ModelFormatError(f"category_labels: column {col}: {text!r} -> {number!r} "
                                       f"is not a text and a category in [0, {MAX_CATEGORY}]")
        out[int(col)] = {t: int(n) for t, n in table.items()}
    return out


def release_of(version: Any) -> tuple[int, ...] | None:
    """A dotted release ("3.4.1") as a tuple of integers; None for anything else ("< 1.0",
    None). Rules that changed between a library's releases are keyed by the release that wrote
    the model (``Ensemble.source["version"]``)."""
    try:
        return tuple(int(p) for p in str(version).split("."))
    except ValueError:
        return None


def _check_category_words(packed: dict) -> None:
    """Refuse a model whose categorical nodes' bitsets need more than
    :data:`MAX_CATEGORY_WORDS` words in all."""
    cat_offset = packed["cat_offset"]
    if cat_offset is None:
        return
    cat_offset = np.asarray(cat_offset, np.int64)
    counts = np.diff(cat_offset)
    listing = np.flatnonzero(counts)
    if listing.size == 0:
        return
    values = np.asarray(packed["cat_values"], np.int64)[:int(cat_offset[-1])]
    top = np.maximum.reduceat(values, cat_offset[listing])
    words = int((top // 32 + 1).sum())
    if words > MAX_CATEGORY_WORDS:
        raise ModelFormatError(
            f"categorical splits need {words} bitset words (largest category "
            f"{int(top.max())}), more than the {MAX_CATEGORY_WORDS} allowed; refusing an absurd "
            f"model")


_NO_CATEGORIES = np.zeros(0, np.int32)
_NO_CATEGORIES.setflags(write=False)


@dataclass(frozen=True, eq=False)
class Ensemble:
    """A tree ensemble in neutral form: what every layout and kernel reads.

    Raw score of output ``k`` = ``base_score[k]`` + the sum, in tree order, of the exit-leaf
    value (times ``tree_weight[t]`` where given) of every tree ``t`` with
    ``tree_group[t] == k``, in the precision of ``family`` (float64 for LightGBM and plain,
    float32 for XGBoost).
    """

    trees: Sequence[Tree]        # kept as PackedTrees: flat arrays, a Tree view per access
    tree_group: np.ndarray       # int32[n_trees]: output of each tree
    n_outputs: int
    n_features: int
    family: str                  # one of FAMILIES: input conversion and arithmetic
    base_score: np.ndarray       # float64[n_outputs]: raw margin the sum starts from
    transform: str = "identity"  # one of TRANSFORMS
    transform_params: dict[str, Any] = field(default_factory=dict)
    tree_weight: np.ndarray | None = None  # float64[n_trees] (XGBoost DART), else None
    average_output: bool = False  # LightGBM random-forest mode: divide by iterations
    feature_names: tuple[str, ...] | None = None
    source: dict[str, Any] = field(default_factory=dict)  # library, version, objective, format
    #: trees of one boosting iteration (n_outputs times XGBoost's num_parallel_tree); 0: n_outputs
    trees_per_iteration: int = 0
    #: input columns whose categories are text (CatBoost's): each text's category number, as
    #: the categorical nodes list it; a DataFrame's text is read through it (None: no such column)
    category_labels: dict[int, dict[str, int]] | None = None
    #: input columns whose categories XGBoost recorded at training (``model.cats``, from 3.1):
    #: each category's number; a DataFrame's categorical column is re-coded through it, and a
    #: value it lacks is refused, as XGBoost does; a column's None: categories the file does
    #: not hold as themselves, a DataFrame's column refused (None: no such column; numeric
    #: rows and files give the numbers themselves)
    category_recoding: dict[int, dict[str, int] | None] | None = None
    #: LightGBM's ``pandas_categorical``: the categories of each categorical column of the
    #: training DataFrame, in column order; a DataFrame's categorical columns are re-coded
    #: through them by position, a value they lack read as missing, as LightGBM's predict does
    #: (None: the model records none)
    pandas_categorical: tuple[tuple, ...] | None = None
    #: CatBoost's CTR features: columns computed from the inputs before the trees, appended
    #: after them (``ir/ctr.py``); the trees read ``n_features`` columns, a row gives
    #: ``n_inputs`` (None: no such stage, the two are equal)
    ctr: CtrFeatures | None = None
    #: the last iteration holds one-leaf trees of the source's bias, added after the other
    #: trees' sum, which a range of iterations from the first keeps (CatBoost's
    #: ``ntree_end`` keeps its bias, a range from ``ntree_start > 0`` does not);
    #: ``n_iterations`` does not count it
    bias_iteration: bool = False
    #: how the exit leaves' values are summed where not as ``family`` says: ``"ranklib"``,
    #: RankLib's Java arithmetic (``ir/sums.py``), which the kernels find the leaves for
    #: (None: the family's sum)
    leaf_sum: str | None = None
    #: RankLib's random forest: each bag's first tree, then n_trees; the score is the mean of
    #: the bags' sums (None: one sum)
    bag_offsets: np.ndarray | None = None
    #: the number the model's file gives its first feature (RankLib's and LETOR's 1: feature
    #: ``k`` is column ``k - 1``); a LibSVM file's indices are read with it
    feature_id_base: int = 0

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ModelFormatError(f"unknown model family {self.family!r}")
        if self.transform not in TRANSFORMS:
            raise ModelFormatError(f"unknown output transform {self.transform!r}")
        object.__setattr__(self, "trees", PackedTrees.pack(self.trees))
        if not len(self.trees):
            raise ModelFormatError("the model has no trees")
        if self.n_outputs < 1:
            raise ModelFormatError(f"the model has {self.n_outputs} outputs")
        if self.n_features < 1:
            raise ModelFormatError(f"the model has {self.n_features} features")
        tg = np.asarray(self.tree_group, dtype=np.int64)
        if tg.shape != (len(self.trees),):
            raise ModelFormatError(
                f"tree_group has {tg.size} entries for {len(self.trees)} trees")
        if ((tg < 0) | (tg >= self.n_outputs)).any():
            raise ModelFormatError(f"a tree's output group is outside [0, {self.n_outputs})")
        object.__setattr__(self, "tree_group", _ro(tg.astype(np.int32)))
        bs = np.asarray(self.base_score, dtype=np.float64).ravel()
        if bs.size == 1 and self.n_outputs > 1:
            bs = np.repeat(bs, self.n_outputs)
        if bs.shape != (self.n_outputs,) or not np.isfinite(bs).all():
            raise ModelFormatError(
                f"base_score must be {self.n_outputs} finite values, got {bs.tolist()}")
        object.__setattr__(self, "base_score", _ro(bs))
        if self.tree_weight is not None:
            tw = np.asarray(self.tree_weight, dtype=np.float64).ravel()
            if tw.shape != (len(self.trees),) or not np.isfinite(tw).all():
                raise ModelFormatError(
                    f"tree_weight must be {len(self.trees)} finite values, got {tw.size}")
            object.__setattr__(self, "tree_weight", _ro(tw))
        if self.leaf_sum not in (None, "ranklib"):
            raise ModelFormatError(f"unknown leaf sum {self.leaf_sum!r}")
        if self.bag_offsets is not None:
            bo = np.asarray(self.bag_offsets, np.int64)
            if (bo.ndim != 1 or bo.shape[0] < 2 or bo[0] != 0 or bo[-1] != len(self.trees)
                    or (np.diff(bo) <= 0).any()):
                raise ModelFormatError("the bags do not cover the trees in order")
            object.__setattr__(self, "bag_offsets", _ro(bo))
        if self.ctr is not None and (not isinstance(self.ctr, CtrFeatures) or
                                     self.ctr.n_inputs + self.ctr.n_columns != self.n_features):
            raise ModelFormatError("the CTR stage does not fill the model's features")
        if self.feature_names is not None:
            names = tuple(map(str, self.feature_names))
            if len(names) != self.n_inputs:
                raise ModelFormatError(
                    f"{len(names)} feature names for {self.n_inputs} features")
            object.__setattr__(self, "feature_names", names)
        if self.category_labels is not None:
            object.__setattr__(self, "category_labels", _checked_labels(self.category_labels,
                                                                        self.n_inputs))
        if self.pandas_categorical is not None:
            pc = self.pandas_categorical
            if (not isinstance(pc, tuple)
                    or not all(isinstance(c, tuple) and len(set(c)) == len(c) for c in pc)
                    or len(pc) > self.n_inputs):
                raise ModelFormatError("pandas_categorical is not one tuple of distinct "
                                       "categories per categorical column")
        if self.category_recoding is not None:
            if not isinstance(self.category_recoding, dict):
                raise ModelFormatError("category_recoding is not a mapping of columns")
            unreadable = {c for c, t in self.category_recoding.items() if t is None}
            tables = {c: t for c, t in self.category_recoding.items() if t is not None}
            checked: dict = _checked_labels(tables, self.n_inputs)
            for c in unreadable:
                if isinstance(c, bool) or not isinstance(c, (int, np.integer)) or not (
                        0 <= c < self.n_inputs):
                    raise ModelFormatError(f"category_recoding: column {c!r} is not a feature")
                checked[int(c)] = None
            object.__setattr__(self, "category_recoding", checked)
        # importers give the trees of an iteration, and their models are whole iterations; a
        # hand-built ensemble may leave it 0 (one tree per output, a partial last iteration)
        tpi = int(self.trees_per_iteration)
        if tpi and (tpi < 0 or len(self.trees) % tpi or tpi % self.n_outputs):
            raise ModelFormatError(
                f"{len(self.trees)} trees are not whole iterations of {tpi} trees "
                f"({self.n_outputs} outputs)")
        object.__setattr__(self, "trees_per_iteration", tpi or self.n_outputs)
        if self.bias_iteration and len(self.trees) < self.trees_per_iteration:
            raise ModelFormatError("the model has no iteration of bias trees")
        if (self.family == "plain"
                and (self.trees.arrays["missing_type"] == MISSING_ZERO).any()):
            raise ModelFormatError("a node of a plain-family model has LightGBM's zero-as-missing "
                                   "rule, which only the lightgbm family reads")
        _check_category_words(self.trees.arrays)
        feature = self.trees.arrays["feature"]
        if feature.size and int(feature.max()) >= self.n_features:
            t = int(np.searchsorted(self.trees.node_offset,
                                    int(np.argmax(feature >= self.n_features)), "right")) - 1
            raise ModelFormatError(f"tree {t}: a split feature is >= n_features")

    @property
    def n_trees(self) -> int:
        return len(self.trees)

    @property
    def n_inputs(self) -> int:
        """Columns a row gives: ``n_features`` less the CTR stage's."""
        return self.n_features - (self.ctr.n_columns if self.ctr is not None else 0)

    def inputs_read(self) -> np.ndarray:
        """A bool per input column: whether a split, a linear leaf or the CTR stage reads it."""
        a = self.trees.arrays
        read = np.zeros(self.n_features, bool)
        read[a["feature"]] = True
        if a.get("lin_feature") is not None:
            read[a["lin_feature"]] = True
        read = read[:self.n_inputs]
        if self.ctr is not None:
            read[list(self.ctr.inputs_read())] = True
        return read

    @property
    def has_linear(self) -> bool:
        return self.trees.arrays["lin_tree"] is not None

    @property
    def has_categorical(self) -> bool:
        return self.trees.arrays["cat_offset"] is not None

    @property
    def has_cover(self) -> bool:
        """Whether every tree says how many training rows reached each node and leaf."""
        return self.trees.arrays["node_cover"] is not None

    @property
    def n_leaves(self) -> np.ndarray:
        """Leaves of each tree."""
        return np.diff(self.trees.leaf_offset)

    @property
    def n_internal(self) -> np.ndarray:
        """Internal nodes of each tree."""
        return np.diff(self.trees.node_offset)

    @property
    def n_iterations(self) -> int:
        """Boosting rounds (iterations of ``trees_per_iteration`` trees); ``average_output``
        divides by it."""
        return max(1, self.n_trees // self.trees_per_iteration - self.bias_iteration)

    @property
    def absent_value(self) -> float:
        """What an entry a sparse row or a LibSVM line leaves out reads as, as the source
        library reads it: missing (NaN) for XGBoost, 0 for every other library (RankLib's
        sparse rows included, whose decisions are XGBoost's)."""
        return np.nan if self.family == "xgboost" and self.leaf_sum is None else 0.0

    def iterations(self, begin: int, end: int) -> Ensemble:
        """The ensemble of iterations ``begin .. end - 1`` (their trees, base scores kept, and
        from ``begin == 0`` the bias iteration where there is one), as LightGBM's
        ``start_iteration`` / ``num_iteration``, XGBoost's ``iteration_range`` and CatBoost's
        ``ntree_start`` / ``ntree_end`` select them. Requires ``0 <= begin < end <=
        n_iterations``."""
        if not 0 <= begin < end <= self.n_iterations:
            raise ValueError(f"iterations [{begin}, {end}) are not within the model's "
                             f"{self.n_iterations}")
        if self.bag_offsets is not None:
            raise ValueError("a random forest of bags scores whole: its trees are no "
                             "iterations")
        tpi = self.trees_per_iteration
        keep = np.arange(begin * tpi, end * tpi)
        trees = self.trees[begin * tpi:end * tpi]
        if self.bias_iteration and begin == 0:
            keep = np.concatenate([keep, np.arange(self.n_trees - tpi, self.n_trees)])
            trees = list(trees) + list(self.trees[self.n_trees - tpi:])
        return Ensemble(
            trees=trees, tree_group=self.tree_group[keep], n_outputs=self.n_outputs,
            n_features=self.n_features, family=self.family, base_score=self.base_score,
            transform=self.transform, transform_params=dict(self.transform_params),
            tree_weight=None if self.tree_weight is None else self.tree_weight[keep],
            average_output=self.average_output, feature_names=self.feature_names,
            source=dict(self.source), trees_per_iteration=self.trees_per_iteration,
            category_labels=self.category_labels, category_recoding=self.category_recoding,
            pandas_categorical=self.pandas_categorical, ctr=self.ctr,
            bias_iteration=self.bias_iteration and begin == 0, leaf_sum=self.leaf_sum,
            feature_id_base=self.feature_id_base)

    def summary(self) -> dict[str, Any]:
        """Plain facts about the model, for ``quickscorer info`` and ``Model.info()``."""
        leaves = self.n_leaves
        return {
            "library": self.source.get("library"),
            "library_version": self.source.get("version"),
            "format": self.source.get("format"),
            "objective": self.source.get("objective"),
            "family": self.family,
            "transform": self.transform,
            "n_trees": self.n_trees,
            "n_outputs": self.n_outputs,
            "n_features": self.n_inputs,
            "ctr_features": self.ctr.n_columns if self.ctr is not None else 0,
            "total_leaves": int(leaves.sum()),
            "max_leaves": int(leaves.max()),
            "max_depth": max(t.depth() for t in self.trees),
            "categorical": self.has_categorical,
            # columns whose categories a numeric row gives by number, not as themselves
            "text_category_columns": sorted(
                c for c, t in (self.category_labels or {}).items()
                if any(str(n) != text for text, n in t.items())),
            "linear_trees": self.has_linear,
            "node_covers": self.has_cover,
            "average_output": self.average_output,
            "dart_weights": self.tree_weight is not None,
            "iterations": self.n_iterations,
            "trees_per_iteration": self.trees_per_iteration,
        }
