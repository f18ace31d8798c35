"""Soft and general trees from the paper's matrix forms (``docs/algorithms.md`` 7 and 8).

* :func:`predict_soft`: node ``n`` goes left with probability
  ``p[n] = sigmoid((threshold - x) / temperature)``; a leaf's probability is the product of
  its row of the fuzzy matrix ``F = R diag(p) + L diag(1 - p)``; the prediction weighs the
  leaf values by them. Values the node decides by rule (missing values, LightGBM's zero,
  categories) go to their side with probability 1. As the temperature goes to 0 this tends
  to the hard prediction away from thresholds.
* :func:`leaf_attention`: ``softmax(D^-1 P s)`` per tree, a distribution over leaves that
  peaks at the exit leaf.
* :class:`GeneralTree`: nodes with ``k >= 2`` weighted edges, its leaf distribution from the
  path matrix and edge masks, and :meth:`GeneralTree.to_binary`, the equivalent binary tree
  with renormalised weights (paper, figure 3).
* :class:`ObliqueTree`: nodes ``w . x > gamma`` (true = false node = right); the test vector
  of a whole batch is one matrix product, then any exit formula finds the leaf.

These are numpy reference implementations for study, not the fast path.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _transforms
from ..inputs.arrays import as_rows
from ..ir.ensemble import MISSING_NONE, MISSING_ZERO, Ensemble, Tree
from ..ir.reference import K_ZERO, convert_input, goes_left, leaf_outputs
from . import representations as rep

__all__ = ["node_left_probabilities", "leaf_probabilities", "predict_soft", "leaf_attention",
           "GeneralTree", "BinaryWeightedTree", "ObliqueTree"]


def _sigmoid(z: np.ndarray) -> np.ndarray:
    out = np.empty_like(z)
    pos = z >= 0
    out[pos] = 1.0 / (1.0 + np.exp(-z[pos]))
    e = np.exp(z[~pos])
    out[~pos] = e / (1.0 + e)
    return out


def node_left_probabilities(ens: Ensemble, tree: Tree, Xc: np.ndarray,
                            temperature: float) -> np.ndarray:
    """``p`` (rows x nodes): the probability that each node sends each converted row left."""
    p = np.empty((Xc.shape[0], tree.n_internal))
    for n in range(tree.n_internal):
        x = Xc[:, tree.feature[n]]
        hard = goes_left(ens, tree, n, x).astype(np.float64)
        if tree.is_categorical[n]:
            p[:, n] = hard
            continue
        nan = np.isnan(x)
        mt = int(tree.missing_type[n])
        if ens.family != "xgboost":
            by_rule = nan & (mt != MISSING_NONE)
            if mt == MISSING_ZERO:
                by_rule |= np.abs(np.where(nan, 0.0, x)) <= K_ZERO
            x = np.where(nan & (mt == MISSING_NONE), 0.0, x)
        else:
            by_rule = nan
        with np.errstate(invalid="ignore", over="ignore"):
            z = (tree.threshold[n] - x) / temperature
        z = np.where(np.isnan(z), 0.0, z)  # inf - inf: a value at an infinite threshold
        soft = _sigmoid(z)   # exp of a non-positive number only: no overflow
        p[:, n] = np.where(by_rule, hard, soft)
    return p


def leaf_probabilities(ens: Ensemble, tree: Tree, X, temperature: float) -> np.ndarray:
    """Probability of every leaf (rows x leaves): products of the fuzzy matrix's rows."""
    if temperature <= 0:
        raise ValueError("temperature must be > 0")
    Xc = convert_input(ens, np.atleast_2d(X))
    p = node_left_probabilities(ens, tree, Xc, temperature)
    lo, mid, hi = tree.leaf_ranges()
    probs = np.ones((Xc.shape[0], tree.n_leaves))
    for n in range(tree.n_internal):   # the row products of F, one column at a time
        probs[:, lo[n]:mid[n]] *= p[:, n:n + 1]
        probs[:, mid[n]:hi[n]] *= 1.0 - p[:, n:n + 1]
    return probs


def _ensemble_and_rows(model, X) -> tuple[Ensemble, np.ndarray]:
    """The neutral ensemble of ``model`` (a ``Model`` or an ``Ensemble``) and ``X`` read as
    its rows, as ``predict`` reads them."""
    ens = model if isinstance(model, Ensemble) else model.ensemble
    return ens, np.atleast_2d(np.asarray(as_rows(ens, X), dtype=np.float64))


def predict_soft(model, X, temperature: float, *, raw_score: bool = False) -> np.ndarray:
    """Soft prediction of ``model`` (a ``Model`` or an ``Ensemble``) for the rows of ``X``
    (anything ``predict`` takes): probability-weighted leaf values summed like the model, in
    float64; the outputs shaped as ``predict`` shapes them. Tends to ``predict`` as
    ``temperature -> 0``, away from thresholds."""
    ens, X = _ensemble_and_rows(model, X)
    Xc = convert_input(ens, X)
    out = np.tile(ens.base_score.astype(np.float64), (X.shape[0], 1))
    for t, tree in enumerate(ens.trees):
        probs = leaf_probabilities(ens, tree, X, temperature)
        if tree.linear is None:
            vals = probs @ tree.leaf_value
        else:
            per_leaf = np.stack([leaf_outputs(ens, tree, np.full(X.shape[0], j), Xc)
                                 for j in range(tree.n_leaves)], axis=1)
            vals = (probs * per_leaf).sum(axis=1)
        if ens.tree_weight is not None:
            vals = vals * ens.tree_weight[t]
        out[:, ens.tree_group[t]] += vals
    if not raw_score:
        divide_by = float(ens.n_iterations) if ens.average_output else 1.0
        if ens.family == "xgboost":
            out = out.astype(np.float32)
        if ens.transform != "identity" or divide_by != 1.0:
            out = _transforms.apply_transform(ens.transform, dict(ens.transform_params), out,
                                              divide_by)
    return out[:, 0] if out.shape[1] == 1 else out


def leaf_attention(model, X) -> list[np.ndarray]:
    """Per tree of ``model`` (a ``Model`` or an ``Ensemble``), ``softmax(D^-1 P s)`` over its
    leaves (rows x leaves): a distribution that peaks at the exit leaf."""
    ens, X = _ensemble_and_rows(model, X)
    out = []
    for tree in ens.trees:
        if tree.n_internal == 0:
            out.append(np.ones((np.atleast_2d(X).shape[0], 1)))
            continue
        s = rep.signed_test_vector(ens, tree, X).astype(np.float64)
        v = (s @ tree.path_matrix().T.astype(np.float64)) / tree.depth_vector()[None, :]
        e = np.exp(v - v.max(axis=1, keepdims=True))
        out.append(e / e.sum(axis=1, keepdims=True))
    return out


# --------------------------------------------------------------------------------------------
# general (multiway) trees


@dataclass(frozen=True)
class BinaryWeightedTree:
    """A binary tree whose node ``n`` goes left with probability ``p_left[n]``."""

    structure: rep.Structure
    p_left: np.ndarray

    def leaf_distribution(self) -> np.ndarray:
        """Products of the rows of ``F = R diag(p) + L diag(1 - p)``."""
        if self.structure.n_internal == 0:
            return np.ones(1)
        return np.prod(rep.fuzzy_matrix(self.structure, self.p_left), axis=1)


class GeneralTree:
    """A tree whose internal nodes have ``k >= 2`` weighted edges.

    ``children[n]`` lists node ``n``'s children left to right, each an internal node index
    ``>= 0`` or a leaf ``~j``; ``weights[n]`` the edge weights (positive, summing to 1).
    Node 0 is the root; leaves are numbered left to right, ``0 .. n_leaves - 1``.
    """

    def __init__(self, children: list[list[int]], weights: list[list[float]]):
        if len(children) != len(weights) or not children:
            raise ValueError("children and weights need one entry per internal node")
        self.children = [list(map(int, c)) for c in children]
        self.weights = [np.asarray(w, dtype=np.float64) for w in weights]
        for n, (c, w) in enumerate(zip(self.children, self.weights)):
            if len(c) < 2 or len(c) != len(w):
                raise ValueError(f"node {n} needs k >= 2 children and one weight per edge")
            if (w <= 0).any() or abs(w.sum() - 1.0) > 1e-12:
                raise ValueError(f"node {n}: edge weights must be positive and sum to 1")
        leaves = sorted(~c for cs in self.children for c in cs if c < 0)
        if leaves != list(range(len(leaves))):
            raise ValueError("leaves must be numbered 0 .. n_leaves - 1")
        self.n_leaves = len(leaves)
        # leaves under each edge, as one contiguous range per (node, edge)
        self._ranges = {}
        self._walk(0)

    def _walk(self, n: int) -> tuple[int, int]:
        lo_all, hi_all = None, None
        for e, c in enumerate(self.children[n]):
            lo, hi = (~c, ~c + 1) if c < 0 else self._walk(c)
            if hi_all is not None and lo != hi_all:
                raise ValueError(f"node {n}: leaves are not numbered left to right")
            self._ranges[(n, e)] = (lo, hi)
            lo_all = lo if lo_all is None else lo_all
            hi_all = hi
        return lo_all, hi_all

    @property
    def n_internal(self) -> int:
        return len(self.children)

    def edge_masks(self) -> list[np.ndarray]:
        """``B_e`` per edge slot ``e`` (leaves x nodes, 0/1): 0 for the leaves that node ``n``
        reaches through its other edges, 1 elsewhere (nodes with fewer edges: all ones)."""
        k_max = max(len(c) for c in self.children)
        masks = []
        for e in range(k_max):
            B = np.ones((self.n_leaves, self.n_internal), np.int8)
            for n, cs in enumerate(self.children):
                if e >= len(cs):
                    B[:, n] = 0
                    continue
                for f in range(len(cs)):
                    if f != e:
                        lo, hi = self._ranges[(n, f)]
                        B[lo:hi, n] = 0
            masks.append(B)
        return masks

    def path_matrix(self) -> np.ndarray:
        """``F[i, n]`` = the weight of node ``n``'s edge toward leaf ``i``, 1 off the path."""
        return sum(B * np.array([w[e] if e < len(w) else 0.0 for w in self.weights])[None, :]
                   for e, B in enumerate(self.edge_masks()))

    def leaf_distribution(self) -> np.ndarray:
        """Probability of each leaf: the product of its row of the path matrix."""
        return np.prod(self.path_matrix(), axis=1)

    def to_binary(self) -> BinaryWeightedTree:
        """The equivalent binary tree: a node of edges ``e1 .. ek`` becomes a chain that
        takes ``e1`` with ``w1`` and otherwise continues with the rest renormalised, ``w2 /
        (1 - w1)`` and so on; leaves keep their order."""
        nodes: list[list] = []   # [left ref, right ref, p_left] in creation order

        def build(n: int) -> int:
            cs, w = self.children[n], self.weights[n]
            rest = 1.0
            first = None
            prev = None
            for e in range(len(cs) - 1):
                idx = len(nodes)
                nodes.append([None, None, w[e] / rest])
                rest -= w[e]
                nodes[idx][0] = cs[e] if cs[e] < 0 else build(cs[e])
                if prev is not None:
                    nodes[prev][1] = idx
                else:
                    first = idx
                prev = idx
            last = cs[-1]
            nodes[prev][1] = last if last < 0 else build(last)
            return first

        build(0)
        # renumber breadth-first, as the IR does
        order, queue = [], [0]
        while queue:
            n = queue.pop(0)
            order.append(n)
            for c in nodes[n][:2]:
                if c >= 0:
                    queue.append(c)
        new = {old: i for i, old in enumerate(order)}
        left = np.array([nodes[o][0] if nodes[o][0] < 0 else new[nodes[o][0]] for o in order])
        right = np.array([nodes[o][1] if nodes[o][1] < 0 else new[nodes[o][1]] for o in order])
        p = np.array([nodes[o][2] for o in order])
        return BinaryWeightedTree(rep.Structure(left.astype(np.int32), right.astype(np.int32)),
                                  np.clip(p, 0.0, 1.0))


# --------------------------------------------------------------------------------------------
# oblique trees


class ObliqueTree:
    """A binary tree of oblique nodes: node ``n`` is false (goes right) iff
    ``W[n] . x > gamma[n]``. ``structure`` gives the children (IR encoding)."""

    def __init__(self, structure: rep.Structure, W, gamma):
        self.structure = structure
        self.W = np.asarray(W, dtype=np.float64)
        self.gamma = np.asarray(gamma, dtype=np.float64)
        m = structure.n_internal
        if self.W.ndim != 2 or self.W.shape[0] != m or self.gamma.shape != (m,):
            raise ValueError(f"W must be ({m}, n_features) and gamma ({m},)")
        self.L = rep.left_matrix(structure)
        self.R = rep.right_matrix(structure)
        self.P = (self.L - self.R).astype(np.int8)
        self.d = np.abs(self.P).sum(axis=1)

    def test_vectors(self, X) -> np.ndarray:
        """``t = (X W^T - gamma > 0)`` for a whole batch: one matrix product."""
        return (np.atleast_2d(X) @ self.W.T - self.gamma[None, :] > 0).astype(np.uint8)

    def exit_leaves(self, X, method: str = "sign") -> np.ndarray:
        """Exit leaf of every row by ``"lt1"``, ``"two_sided"``, ``"sign"`` or ``"ecoc"``."""
        t = self.test_vectors(X)
        if self.structure.n_internal == 0:
            return np.zeros(t.shape[0], np.int64)
        s = 2 * t.astype(np.int64) - 1
        if method == "lt1":
            return rep.exit_leaf_lt1(self.L, t)
        if method == "two_sided":
            return rep.exit_leaf_two_sided(self.L, self.R, t)
        if method == "sign":
            return rep.exit_leaf_sign(self.P, self.d, s)
        if method == "ecoc":
            return rep.exit_leaf_ecoc(self.P, s)
        raise ValueError(f"unknown method {method!r}")

    def walk(self, x) -> int:
        """The exit leaf of one row by walking from the root (the check for the above)."""
        n = 0 if self.structure.n_internal else ~0
        while n >= 0:
            go_right = float(self.W[n] @ x) > self.gamma[n]
            n = int(self.structure.right[n] if go_right else self.structure.left[n])
        return ~n
