"""The paper's matrix forms of one binary tree (``docs/algorithms.md``, "Representations").

Matrices are leaves x internal nodes, leaves numbered left to right and nodes breadth-first,
as everywhere in this package:

* ``L[i, n] = 0`` iff leaf ``i`` is in the left subtree of node ``n`` (else 1);
* ``R[i, n] = 0`` iff leaf ``i`` is in the right subtree of ``n``;
* ``P = L - R``: +1 where leaf ``i``'s path goes right at ``n``, -1 where it goes left;
* ``d[i]``: the number of internal nodes on leaf ``i``'s path;
* ``t[n] = 1`` iff node ``n`` is false (goes right) for an input, ``s = 2 t - 1``;
* ``F = R diag(p) + L diag(1 - p)`` with ``p[n]`` the probability that ``n`` goes left.

The functions take any object with ``left``/``right`` child arrays in the IR encoding (a
:class:`~quickscorer.ir.Tree`, or :class:`Structure` for a bare shape). Dense forms are
for inspection and tests; :func:`pack_rows` gives the bit-packed rows the kernels read.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.ensemble import Ensemble, Tree
from ..ir.matrices import depth_vector, leaf_ranges, left_matrix, path_matrix, right_matrix
from ..ir.reference import convert_input, goes_left

__all__ = [
    "Structure", "leaf_ranges", "left_matrix", "right_matrix", "path_matrix", "depth_vector",
    "fuzzy_matrix", "test_vector", "signed_test_vector", "pack_rows", "pack_columns",
    "augmented_rank", "ranks", "prune", "structure_from_left_matrix",
    "structure_from_right_matrix", "perfect_left_matrix", "perfect_right_matrix",
    "exit_leaf_lt1", "exit_leaf_two_sided", "exit_leaf_sign", "exit_leaf_ecoc",
]


@dataclass(frozen=True)
class Structure:
    """The shape of a binary tree alone: children in the IR encoding (``c < 0`` is leaf ``~c``),
    internal nodes breadth-first, leaves left to right."""

    left: np.ndarray
    right: np.ndarray

    @property
    def n_internal(self) -> int:
        return int(len(self.left))

    @property
    def n_leaves(self) -> int:
        return self.n_internal + 1


def fuzzy_matrix(tree, p) -> np.ndarray:
    """``F = R diag(p) + L diag(1 - p)`` (float64) for node probabilities ``p`` of going left.

    Leaf ``i``'s probability is the product of row ``i``.
    """
    p = np.asarray(p, dtype=np.float64)
    return right_matrix(tree) * p[None, :] + left_matrix(tree) * (1.0 - p)[None, :]


def test_vector(ens: Ensemble, tree: Tree, X) -> np.ndarray:
    """``t`` (uint8, rows x nodes): 1 where the node is false (goes right) for each row.

    Every node is evaluated by the rules of the model's family, missing values and
    categories included (the numpy rules of :mod:`quickscorer.ir.reference`).
    """
    Xc = convert_input(ens, np.atleast_2d(X))
    t = np.zeros((Xc.shape[0], tree.n_internal), np.uint8)
    for n in range(tree.n_internal):
        t[:, n] = ~goes_left(ens, tree, n, Xc[:, tree.feature[n]])
    return t


def signed_test_vector(ens: Ensemble, tree: Tree, X) -> np.ndarray:
    """``s = 2 t - 1`` (int8): +1 for a false node, -1 for a true one."""
    return (2 * test_vector(ens, tree, X).astype(np.int8) - 1).astype(np.int8)


# --------------------------------------------------------------------------------------------
# bit packing (bit j of word j // 64 stands for column j)

def pack_rows(M: np.ndarray, n_words: int | None = None) -> np.ndarray:
    """Each row of a 0/1 matrix as ``uint64`` words over its columns: ``(rows, words)``."""
    M = np.asarray(M).astype(bool)
    rows, cols = M.shape
    words = n_words if n_words is not None else max(1, (cols + 63) // 64)
    padded = np.zeros((rows, words * 64), bool)
    padded[:, :cols] = M
    bits = np.packbits(padded.reshape(rows, words, 64)[:, :, ::-1], axis=2)  # MSB first
    return bits.view(">u8").reshape(rows, words).astype(np.uint64)


def pack_columns(M: np.ndarray, n_words: int | None = None) -> np.ndarray:
    """Each column of a 0/1 matrix as ``uint64`` words over its rows: ``(cols, words)``."""
    return pack_rows(np.asarray(M).T, n_words)


# --------------------------------------------------------------------------------------------
# exit leaves from the matrix forms (numpy, whole batches): what the kernels compute


def exit_leaf_lt1(L: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Algorithm 3: the leftmost maximum of ``L t + 1``."""
    return np.argmax(t.astype(np.int64) @ L.T.astype(np.int64) + 1, axis=1)


def exit_leaf_two_sided(L: np.ndarray, R: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Algorithm 4: the unique maximum (= number of nodes) of ``L t + R (1 - t)``."""
    t = t.astype(np.int64)
    v = t @ L.T.astype(np.int64) + (1 - t) @ R.T.astype(np.int64)
    return np.argmax(v, axis=1)


def exit_leaf_sign(P: np.ndarray, d: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Algorithms 5 and 7: the unique zero of ``P s - d``."""
    v = s.astype(np.int64) @ P.T.astype(np.int64) - d[None, :]
    return np.argmax(v == 0, axis=1)


def exit_leaf_ecoc(P: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Algorithm 6: the leaf whose code ``P_i`` decodes ``s`` with similarity 1."""
    Pf = P.astype(np.float64)
    m = (s.astype(np.float64) @ Pf.T) / np.maximum((Pf * Pf).sum(axis=1), 1.0)[None, :]
    return np.argmax(m == 1.0, axis=1)


# --------------------------------------------------------------------------------------------
# properties (paper, section 2)


def augmented_rank(M: np.ndarray) -> int:
    """Rank of ``(M 1)``: the matrix with a column of ones appended."""
    M = np.asarray(M, dtype=np.float64)
    return int(np.linalg.matrix_rank(np.hstack([M, np.ones((M.shape[0], 1))])))


def ranks(tree) -> dict[str, int]:
    """Ranks of ``(L 1)``, ``(R 1)`` and ``P``: full (= leaves, leaves, nodes) for every tree."""
    return {"L1": augmented_rank(left_matrix(tree)), "R1": augmented_rank(right_matrix(tree)),
            "P": int(np.linalg.matrix_rank(path_matrix(tree).astype(np.float64)))
            if len(tree.left) else 0}


def prune(M: np.ndarray, leaves) -> np.ndarray:
    """A copy of a leaves x nodes representation with the rows of ``leaves`` zeroed: those
    leaves can no longer be the maximum of ``L t + 1`` (nor the zero of ``P s - d``)."""
    out = np.array(M, copy=True)
    out[np.asarray(leaves, dtype=np.int64)] = 0
    return out


def _structure_from_sets(n_leaves: int, lo_of, hi_of, side: str) -> Structure:
    """Rebuild the children of every node from one contiguous leaf range per node."""
    m = n_leaves - 1
    left = np.zeros(m, np.int64)
    right = np.zeros(m, np.int64)
    if m == 0:
        return Structure(left.astype(np.int32), right.astype(np.int32))
    size = hi_of - lo_of

    def root_of(lo: int, hi: int) -> int:
        # Left sets: the nodes whose left set starts at lo and ends before hi are the chain of
        # left descendants of the range's root; the root has the largest. Right sets mirror.
        if side == "left":
            cand = np.flatnonzero((lo_of == lo) & (hi_of < hi))
        else:
            cand = np.flatnonzero((hi_of == hi) & (lo_of > lo))
        if cand.size == 0:
            raise ValueError(f"no node splits the leaf range [{lo}, {hi})")
        return int(cand[np.argmax(size[cand])])

    stack = [(0, n_leaves, None, None)]
    seen = np.zeros(m, bool)
    while stack:
        lo, hi, parent, is_left = stack.pop()
        if hi - lo == 1:
            ref = ~lo
        else:
            n = root_of(lo, hi)
            if seen[n]:
                raise ValueError(f"node {n} roots two leaf ranges")
            seen[n] = True
            ref = n
            cut = int(hi_of[n]) if side == "left" else int(lo_of[n])
            stack.append((lo, cut, n, True))
            stack.append((cut, hi, n, False))
        if parent is not None:
            (left if is_left else right)[parent] = ref
    if not seen.all():
        raise ValueError("some columns are no node of the tree")
    return Structure(left.astype(np.int32), right.astype(np.int32))


def _zero_run(M: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column, the contiguous run of zero rows as ``[lo, hi)``."""
    Z = np.asarray(M) == 0
    if not Z.any(axis=0).all():
        raise ValueError("every column needs at least one zero")
    lo = np.argmax(Z, axis=0)
    hi = Z.shape[0] - np.argmax(Z[::-1], axis=0)
    if (Z.sum(axis=0) != hi - lo).any():
        raise ValueError("a column's zeros are not one contiguous run of leaves")
    return lo.astype(np.int64), hi.astype(np.int64)


def structure_from_left_matrix(L: np.ndarray) -> Structure:
    """The tree (children of every node) that has left matrix ``L``."""
    lo, hi = _zero_run(L)
    return _structure_from_sets(L.shape[0], lo, hi, "left")


def structure_from_right_matrix(R: np.ndarray) -> Structure:
    """The tree (children of every node) that has right matrix ``R``."""
    lo, hi = _zero_run(R)
    return _structure_from_sets(R.shape[0], lo, hi, "right")


def _perfect_matrix(k: int, left: bool) -> np.ndarray:
    """``L`` (``left``) or ``R`` of the perfect tree of depth ``k``, built recursively.

    The columns of level ``j`` of the depth-``k`` tree are the level-``j - 1`` columns of the
    left subtree (its leaves are the top half; the bottom half is off their subtrees: 1)
    followed by those of the right subtree; the root's column is 0 on the top half for ``L``
    and on the bottom half for ``R``.
    """
    if k < 0:
        raise ValueError("depth must be >= 0")
    if k == 0:
        return np.zeros((1, 0), np.int8)
    sub = _perfect_matrix(k - 1, left)
    h = sub.shape[0]
    halves = [np.zeros(h, np.int8), np.ones(h, np.int8)]
    cols = [np.concatenate(halves if left else halves[::-1])[:, None]]
    for j in range(k - 1):  # level j + 1 of the big tree = level j of each subtree
        block = sub[:, (1 << j) - 1:(1 << (j + 1)) - 1]
        ones = np.ones_like(block)
        cols.append(np.vstack([np.hstack([block, ones]), np.hstack([ones, block])]))
    return np.hstack(cols).astype(np.int8)


def perfect_left_matrix(k: int) -> np.ndarray:
    """``L`` of the perfect tree of depth ``k`` (2**k leaves), built recursively."""
    return _perfect_matrix(k, left=True)


def perfect_right_matrix(k: int) -> np.ndarray:
    """``R`` of the perfect tree of depth ``k``, built recursively."""
    return _perfect_matrix(k, left=False)
