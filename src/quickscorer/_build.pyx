# cython: language_level=3
"""The node walks of ``quickscorer.ir.ensemble.build_tree`` in C: a model of thousands of trees
is validated and renumbered in milliseconds instead of a Python loop per node."""
import numpy as np

cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t, uint8_t

cnp.import_array()


def canonical_order(const int64_t[::1] left, const int64_t[::1] right, int64_t root,
                    const uint8_t[::1] is_leaf):
    """Walk the source nodes from ``root``.

    Returns ``(bfs, first, problem, node)``: ``bfs`` the internal nodes in breadth-first order
    (left child before right), ``first[n]`` the in-order number of the first leaf under node
    ``n`` (for a leaf: its own in-order number), and, when the nodes are not one tree,
    ``problem`` = 1 (``node`` reached twice: a cycle or a shared child) or 2 (``node`` not
    reachable from the root), else 0. Children must already be in range."""
    cdef Py_ssize_t k = left.shape[0]
    if right.shape[0] != k or is_leaf.shape[0] != k or not (0 <= root < k):
        raise ValueError("canonical_order: inconsistent node arrays")
    order_arr = np.empty(k, np.int64)
    first_arr = np.zeros(k, np.int64)
    count_arr = np.zeros(k, np.int64)
    seen_arr = np.zeros(k, np.uint8)
    cdef int64_t[::1] order = order_arr
    cdef int64_t[::1] first = first_arr
    cdef int64_t[::1] count = count_arr
    cdef uint8_t[::1] seen = seen_arr
    cdef Py_ssize_t head = 0, tail = 1, i, n_internal = 0
    cdef int64_t n, c, side
    order[0] = root
    seen[root] = 1
    with nogil:
        # breadth-first: order[] is the queue, every node enters it once
        while head < tail:
            n = order[head]
            head += 1
            if is_leaf[n]:
                continue
            for side in range(2):
                c = left[n] if side == 0 else right[n]
                if seen[c]:
                    with gil:
                        return None, None, 1, int(c)
                seen[c] = 1
                order[tail] = c
                tail += 1
    for i in range(k):
        if not seen[i]:
            return None, None, 2, i
    with nogil:
        # leaf counts bottom-up (reverse breadth-first order sees children first) ...
        for i in range(k - 1, -1, -1):
            n = order[i]
            count[n] = 1 if is_leaf[n] else count[left[n]] + count[right[n]]
        # ... then each node's first leaf top-down
        for i in range(k):
            n = order[i]
            if not is_leaf[n]:
                first[left[n]] = first[n]
                first[right[n]] = first[n] + count[left[n]]
                n_internal += 1
    bfs = np.empty(n_internal, np.int64)
    cdef int64_t[::1] b = bfs
    cdef Py_ssize_t j = 0
    for i in range(k):
        if not is_leaf[order[i]]:
            b[j] = order[i]
            j += 1
    return bfs, first_arr, 0, -1


def leaf_ranges(const int32_t[::1] left, const int32_t[::1] right):
    """Per internal node of a canonical tree (children ``c >= 0`` internal, ``~c`` leaf, every
    child numbered after its parent): first leaf, first leaf of the right subtree, one past
    the last leaf."""
    if right.shape[0] != left.shape[0]:
        raise ValueError("leaf_ranges: left and right differ in length")
    return packed_leaf_ranges(left, right, np.array([0, left.shape[0]], np.int64))


def packed_leaf_ranges(const int32_t[::1] left, const int32_t[::1] right,
                       const int64_t[::1] node_offset):
    """:func:`leaf_ranges` of every tree of a packed ensemble at once (node ``n`` of tree ``t``
    at ``node_offset[t] + n``; leaf numbers are the tree's own)."""
    cdef Py_ssize_t n_nodes = left.shape[0], n_trees = node_offset.shape[0] - 1
    if right.shape[0] != n_nodes or n_trees < 0 or node_offset[n_trees] != n_nodes:
        raise ValueError("packed_leaf_ranges: inconsistent node arrays")
    lo_arr = np.zeros(n_nodes, np.int64)
    mid_arr = np.zeros(n_nodes, np.int64)
    hi_arr = np.zeros(n_nodes, np.int64)
    cdef int64_t[::1] lo = lo_arr
    cdef int64_t[::1] mid = mid_arr
    cdef int64_t[::1] hi = hi_arr
    cdef Py_ssize_t t, n, m, base
    cdef int64_t lc, rc
    for t in range(n_trees):
        base = node_offset[t]
        m = node_offset[t + 1] - base
        for n in range(m):
            lc, rc = left[base + n], right[base + n]
            if (lc >= 0 and lc <= n) or (rc >= 0 and rc <= n) or lc >= m or rc >= m:
                raise ValueError(f"packed_leaf_ranges: tree {t} node {n} has a child that is "
                                 f"not numbered after it")
    with nogil:
        for t in range(n_trees):
            base = node_offset[t]
            m = node_offset[t + 1] - base
            for n in range(m - 1, -1, -1):  # children first
                lc, rc = left[base + n], right[base + n]
                lo[base + n] = lo[base + lc] if lc >= 0 else ~lc
                mid[base + n] = lo[base + rc] if rc >= 0 else ~rc
                hi[base + n] = hi[base + rc] if rc >= 0 else ~rc + 1
    return lo_arr, mid_arr, hi_arr
