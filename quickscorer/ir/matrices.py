"""The paper's matrices of one tree shape, from its child arrays alone.

They need nothing but ``left`` / ``right`` in the IR encoding (``c >= 0`` internal node,
``c < 0`` leaf ``~c``; nodes breadth-first, leaves left to right), so :class:`Tree` offers
them as methods and :mod:`quickscorer.paper.representations` builds the rest of the paper's
forms on them:

* ``L[i, n] = 0`` iff leaf ``i`` is in the left subtree of node ``n`` (else 1);
* ``R[i, n] = 0`` iff leaf ``i`` is in the right subtree of ``n``;
* ``P = L - R``; ``d[i]`` the number of internal nodes on leaf ``i``'s path.
"""
from __future__ import annotations

import numpy as np


def leaf_ranges(tree) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per internal node ``(lo, mid, hi)``: leaves ``[lo, mid)`` left, ``[mid, hi)`` right.

    Uses the tree's own (cached) ``leaf_ranges()`` where it has one.
    """
    own = getattr(tree, "leaf_ranges", None)
    if callable(own):
        return own()
    m = len(tree.left)
    lo, mid, hi = (np.zeros(m, np.int64) for _ in range(3))
    for n in range(m - 1, -1, -1):
        lc, rc = int(tree.left[n]), int(tree.right[n])
        lo[n] = lo[lc] if lc >= 0 else ~lc
        mid[n] = lo[rc] if rc >= 0 else ~rc
        hi[n] = hi[rc] if rc >= 0 else ~rc + 1
    return lo, mid, hi


def _n_leaves(tree) -> int:
    return len(tree.left) + 1


def left_matrix(tree) -> np.ndarray:
    """``L`` (int8, leaves x nodes): 0 on each node's left-subtree leaves, 1 elsewhere."""
    lo, mid, _ = leaf_ranges(tree)
    leaf = np.arange(_n_leaves(tree))[:, None]
    return (~((leaf >= lo) & (leaf < mid))).astype(np.int8)


def right_matrix(tree) -> np.ndarray:
    """``R`` (int8, leaves x nodes): 0 on each node's right-subtree leaves, 1 elsewhere."""
    _, mid, hi = leaf_ranges(tree)
    leaf = np.arange(_n_leaves(tree))[:, None]
    return (~((leaf >= mid) & (leaf < hi))).astype(np.int8)


def path_matrix(tree) -> np.ndarray:
    """``P = L - R`` (int8): +1 where the leaf's path goes right, -1 left, 0 off the path."""
    return (left_matrix(tree) - right_matrix(tree)).astype(np.int8)


def depth_vector(tree) -> np.ndarray:
    """``d`` (int64): the number of internal nodes on each leaf's path."""
    return np.abs(path_matrix(tree)).sum(axis=1).astype(np.int64)
