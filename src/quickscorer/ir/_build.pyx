# cython: language_level=3
"""The node walks of ``quickscorer.ir.ensemble.build_tree`` in C: a model of thousands of trees
is validated and renumbered in milliseconds instead of a Python loop per node."""
import numpy as np

cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, realloc
from libc.string cimport memset
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_New

cnp.import_array()


def canonical_order(const int64_t[::1] left, const int64_t[::1] right, int64_t root,
                    const uint8_t[::1] is_leaf):
    """Walk the source nodes of one tree from ``root`` (the one-tree case of
    :func:`pack_trees`, with the root moved to index 0).

    Returns ``(bfs, first, problem, node)``: ``bfs`` the internal nodes in breadth-first order
    (left child before right), ``first[n]`` the in-order number of leaf ``n``, and, when the
    nodes are not one tree, ``problem`` = 1 (``node`` reached twice: a cycle or a shared
    child) or 2 (``node`` not reachable from the root), else 0. Children must already be in
    range."""
    cdef Py_ssize_t k = left.shape[0]
    if right.shape[0] != k or is_leaf.shape[0] != k or not (0 <= root < k):
        raise ValueError("canonical_order: inconsistent node arrays")
    perm = np.arange(k, dtype=np.int64)          # new index -> source index (0 <-> root)
    perm[0], perm[root] = root, 0
    leaf = np.asarray(is_leaf, dtype=bool)[perm]
    lsrc = np.asarray(left)[perm]
    rsrc = np.asarray(right)[perm]
    new_left = np.where(leaf, -1, perm[np.where(leaf, 0, lsrc)])
    new_right = np.where(leaf, -1, perm[np.where(leaf, 0, rsrc)])
    got = pack_trees(new_left, new_right, np.array([0, k], np.int64))
    if got[0] is None:
        problem, node = got[2], got[3]
        return None, None, (1 if problem == 2 else 2), int(perm[node])
    internal, leaves = got[0], got[1]
    first = np.zeros(k, np.int64)
    first[perm[leaves]] = np.arange(leaves.shape[0])
    return perm[internal], first, 0, -1


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
    at ``node_offset[t] + n``; leaf numbers are the tree's own, int32 like the children)."""
    cdef Py_ssize_t n_nodes = left.shape[0], n_trees = node_offset.shape[0] - 1
    if right.shape[0] != n_nodes or n_trees < 0 or node_offset[n_trees] != n_nodes:
        raise ValueError("packed_leaf_ranges: inconsistent node arrays")
    lo_arr = np.zeros(n_nodes, np.int32)
    mid_arr = np.zeros(n_nodes, np.int32)
    hi_arr = np.zeros(n_nodes, np.int32)
    cdef int32_t[::1] lo = lo_arr
    cdef int32_t[::1] mid = mid_arr
    cdef int32_t[::1] hi = hi_arr
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
                lo[base + n] = lo[base + lc] if lc >= 0 else <int32_t>~lc
                mid[base + n] = lo[base + rc] if rc >= 0 else <int32_t>~rc
                hi[base + n] = hi[base + rc] if rc >= 0 else <int32_t>(~rc + 1)
    return lo_arr, mid_arr, hi_arr


cdef inline int64_t _span(int64_t a, int64_t n) noexcept nogil:
    """Bytes spanned by n >= 1 leaves from position a (mod 8)."""
    return (a + n - 1) // 8 + 1


def mirrored_ranges(const int32_t[::1] left, const int32_t[::1] right,
                    const int64_t[::1] node_offset, const int64_t[::1] leaf_offset,
                    const int32_t[::1] lo, const int32_t[::1] mid, const int32_t[::1] hi):
    """A leaf order per tree that minimises the bytes the nodes' masks span: each node
    puts first (its mask clears them when it is false) either its left subtree or, where
    that spans fewer bytes in all, its right one (``flip``); the choice per node and start position mod 8 by dynamic programming over the subtrees.

    Returns ``flip`` (uint8 per node), ``first_lo`` and ``first_hi`` (int32 per node: the
    first subtree's leaves in the new order), and ``order`` (int32 per leaf, ``leaf_offset[t]
    + p``: the tree's own number of the leaf at new position p)."""
    cdef Py_ssize_t n_nodes = left.shape[0], n_trees = node_offset.shape[0] - 1
    if (right.shape[0] != n_nodes or lo.shape[0] != n_nodes or mid.shape[0] != n_nodes
            or hi.shape[0] != n_nodes or n_trees < 0
            or leaf_offset.shape[0] != n_trees + 1 or node_offset[n_trees] != n_nodes):
        raise ValueError("mirrored_ranges: inconsistent node arrays")
    cdef Py_ssize_t t
    for t in range(n_trees):
        if (leaf_offset[t + 1] - leaf_offset[t]
                != node_offset[t + 1] - node_offset[t] + 1):
            raise ValueError(f"mirrored_ranges: tree {t} has not one leaf more than nodes")
    flip_arr = np.zeros(n_nodes, np.uint8)
    first_lo_arr = np.zeros(n_nodes, np.int32)
    first_hi_arr = np.zeros(n_nodes, np.int32)
    order_arr = np.zeros(leaf_offset[n_trees], np.int32)
    start_arr = np.zeros(n_nodes, np.int32)   # each node's first leaf in the new order
    cdef Py_ssize_t most = 1                  # nodes of the largest tree
    for t in range(n_trees):
        most = max(most, node_offset[t + 1] - node_offset[t])
    # per node of the tree at hand: bytes its subtrees' masks span from position a mod 8,
    # and whether its right subtree goes first there
    cost_arr = np.zeros((most, 8), np.int64)
    choice_arr = np.zeros((most, 8), np.uint8)
    cdef uint8_t[::1] flip = flip_arr
    cdef int32_t[::1] first_lo = first_lo_arr
    cdef int32_t[::1] first_hi = first_hi_arr
    cdef int32_t[::1] order = order_arr
    cdef int32_t[::1] start = start_arr
    cdef int64_t[:, ::1] cost = cost_arr
    cdef uint8_t[:, ::1] choice = choice_arr
    cdef Py_ssize_t n, m, base, lbase
    cdef int64_t a, b, c, p, nl, nr, keep, swap, ca, cb, al
    with nogil:
        for t in range(n_trees):
            base = node_offset[t]
            lbase = leaf_offset[t]
            m = node_offset[t + 1] - base
            if m == 0:
                order[lbase] = 0
                continue
            for n in range(m - 1, -1, -1):      # children after parents: bottom-up
                a, b = left[base + n], right[base + n]
                nl = mid[base + n] - lo[base + n]
                nr = hi[base + n] - mid[base + n]
                for al in range(8):
                    ca = cost[a, al] if a >= 0 else 0
                    cb = cost[b, (al + nl) % 8] if b >= 0 else 0
                    keep = _span(al, nl) + ca + cb
                    ca = cost[b, al] if b >= 0 else 0
                    cb = cost[a, (al + nr) % 8] if a >= 0 else 0
                    swap = _span(al, nr) + ca + cb
                    if swap < keep:
                        cost[n, al] = swap
                        choice[n, al] = 1
                    else:
                        cost[n, al] = keep
                        choice[n, al] = 0
            start[base] = 0
            for n in range(m):          # parents before children (packed_leaf_ranges checks)
                p = start[base + n]
                nl = mid[base + n] - lo[base + n]
                nr = hi[base + n] - mid[base + n]
                a, b = left[base + n], right[base + n]
                if choice[n, p % 8]:
                    flip[base + n] = 1
                    a, b = b, a
                    nl = nr
                first_lo[base + n] = <int32_t>p
                first_hi[base + n] = <int32_t>(p + nl)
                for c in range(2):
                    if c == 1:
                        a = b
                        p = p + nl
                    if a >= 0:
                        start[base + a] = <int32_t>p
                    else:
                        order[lbase + p] = <int32_t>~a
    return flip_arr, first_lo_arr, first_hi_arr, order_arr


cdef int pack_one_tree(const int64_t* left, const int64_t* right, int64_t k,
                       int64_t* order, int64_t* first, int64_t* count, int64_t* rank,
                       uint8_t* seen, int64_t* internal, int64_t* leaf, int32_t* lref,
                       int32_t* rref, int64_t* n_internal, int64_t* bad_node) noexcept nogil:
    cdef int64_t i, j, n, c, lc, rc, head, tail, side, n_int = 0
    if k < 1:
        bad_node[0] = 0
        return 1
    for i in range(k):
        lc, rc = left[i], right[i]
        if (lc == -1) != (rc == -1) or lc < -1 or rc < -1 or lc >= k or rc >= k:
            bad_node[0] = i
            return 1
    memset(seen, 0, <size_t>k)
    # breadth-first from the root (order[] is the queue)
    order[0] = 0
    seen[0] = 1
    head, tail = 0, 1
    while head < tail:
        n = order[head]
        head += 1
        if left[n] == -1:
            continue
        for side in range(2):
            c = left[n] if side == 0 else right[n]
            if seen[c]:
                bad_node[0] = c
                return 2
            seen[c] = 1
            order[tail] = c
            tail += 1
    if tail != k:
        for i in range(k):
            if not seen[i]:
                bad_node[0] = i
                break
        return 3
    # leaf counts bottom-up, then each node's first leaf top-down
    for i in range(k - 1, -1, -1):
        n = order[i]
        count[n] = 1 if left[n] == -1 else count[left[n]] + count[right[n]]
    first[0] = 0
    for i in range(k):
        n = order[i]
        if left[n] != -1:
            first[left[n]] = first[n]
            first[right[n]] = first[n] + count[left[n]]
            rank[n] = n_int                 # internal nodes: breadth-first rank
            internal[n_int] = n
            n_int += 1
        else:
            leaf[first[n]] = n              # leaves: in-order position
    for j in range(n_int):
        n = internal[j]
        for side in range(2):
            c = left[n] if side == 0 else right[n]
            c = ~first[c] if left[c] == -1 else rank[c]
            if side == 0:
                lref[j] = <int32_t>c
            else:
                rref[j] = <int32_t>c
    n_internal[0] = n_int
    return 0


def pack_trees(const int64_t[::1] left, const int64_t[::1] right,
               const int64_t[::1] node_offset):
    """The canonical order of every tree of concatenated source arrays at once.

    Tree ``t`` is source nodes ``node_offset[t] .. node_offset[t + 1] - 1``, root first;
    ``left`` / ``right`` hold tree-local child indices, both -1 at a leaf. Returns
    ``(internal, leaf, left_ref, right_ref, n_internal, n_leaves)``: the global source index of
    each internal node in canonical order (trees in order, each breadth-first) and of each leaf
    (trees in order, each left to right), the canonical child references of each internal
    node (``c >= 0`` internal, ``~c`` leaf; tree-local) and the per-tree counts; or
    ``(None, t, problem, node)`` when tree ``t`` is not one binary tree: ``problem`` 1 a child
    index out of range or a node with one child, 2 a node reached twice, 3 a node not
    reachable from the root (``node`` tree-local)."""
    cdef Py_ssize_t n_nodes = left.shape[0], n_trees = node_offset.shape[0] - 1
    if right.shape[0] != n_nodes or n_trees < 0 or node_offset[n_trees] != n_nodes:
        raise ValueError("pack_trees: inconsistent node arrays")
    cdef Py_ssize_t t, i
    cdef int64_t base, k, k_max = 1
    for t in range(n_trees):
        k_max = max(k_max, node_offset[t + 1] - node_offset[t])
    # A tree's internal nodes and leaves together are its nodes, so tree t's outputs start at
    # or before its first node: arrays of n_nodes entries hold them all.
    internal_arr = np.empty(n_nodes, np.int64)
    leaf_arr = np.empty(n_nodes, np.int64)
    lref_arr = np.empty(n_nodes, np.int32)
    rref_arr = np.empty(n_nodes, np.int32)
    n_int_arr = np.zeros(n_trees, np.int64)
    scratch_arr = np.empty((4, k_max), np.int64)
    seen_arr = np.empty(k_max, np.uint8)
    cdef int64_t[::1] internal = internal_arr
    cdef int64_t[::1] leaf = leaf_arr
    cdef int32_t[::1] lref = lref_arr
    cdef int32_t[::1] rref = rref_arr
    cdef int64_t[::1] n_int = n_int_arr
    cdef int64_t[:, ::1] scratch = scratch_arr
    cdef uint8_t[::1] seen = seen_arr
    cdef int64_t ib = 0, lb = 0, bad_node = -1
    cdef int problem = 0
    with nogil:
        for t in range(n_trees):
            base = node_offset[t]
            k = node_offset[t + 1] - base
            problem = pack_one_tree(&left[base], &right[base], k, &scratch[0, 0],
                                    &scratch[1, 0], &scratch[2, 0], &scratch[3, 0], &seen[0],
                                    &internal[ib], &leaf[lb], &lref[ib], &rref[ib], &n_int[t],
                                    &bad_node)
            if problem:
                break
            for i in range(n_int[t]):
                internal[ib + i] += base
            for i in range(k - n_int[t]):
                leaf[lb + i] += base
            ib += n_int[t]
            lb += k - n_int[t]
    if problem:
        return None, int(t), problem, int(bad_node)
    n_leaf_arr = np.diff(np.asarray(node_offset)) - n_int_arr
    return (internal_arr[:ib].copy(), leaf_arr[:lb].copy(), lref_arr[:ib].copy(),
            rref_arr[:ib].copy(), n_int_arr, n_leaf_arr)


cdef void _free_capsule(object capsule) noexcept:
    free(PyCapsule_GetPointer(capsule, NULL))


cdef object owning_array(pb_buf* b, int typenum):
    """A numpy array that takes over the buffer's memory (no copy); the buffer is emptied."""
    cdef cnp.npy_intp dims[1]
    cdef char* p = b.p
    if b.n == 0:
        return np.empty(0, cnp.PyArray_TypeObjectFromType(typenum))
    p = <char*>realloc(b.p, b.n * b.item)     # give back the unused capacity
    if p == NULL:
        p = b.p
    b.p = NULL
    dims[0] = <cnp.npy_intp>b.n
    arr = cnp.PyArray_SimpleNewFromData(1, dims, typenum, p)
    cnp.set_array_base(arr, PyCapsule_New(p, NULL, _free_capsule))
    return arr


cdef extern from "quickscorer/ir/trees.h" nogil:
    int tree_sound_isa(const int32_t* left, const int32_t* right, int64_t m,
                       uint32_t* scratch, int isa)
    int cpu_isa_available(int isa)
    int trees_values_fault(const int32_t* feature, const uint8_t* default_left,
                           const uint8_t* categorical, const uint8_t* missing,
                           const uint64_t* threshold, int64_t n_nodes, const uint64_t* leaf,
                           int64_t n_leaves, int64_t n_features, int max_missing,
                           int* any_categorical, int isa)


cdef int _path(int isa, str what) except -2:
    """The path of a check: ``isa`` (0 the portable C, 1 AVX2) where this CPU runs it, -1
    the widest it has."""
    if isa == -1:
        return 1 if cpu_isa_available(1) else 0
    if not 0 <= isa <= 1 or not cpu_isa_available(isa):
        raise ValueError(f"{what}: path {isa} is not available on this CPU")
    return isa


def check_values(const int32_t[::1] feature, const uint8_t[::1] default_left,
                 const uint8_t[::1] is_categorical, const uint8_t[::1] missing_type,
                 const uint64_t[::1] threshold, const uint64_t[::1] leaf_value,
                 int64_t n_features, int max_missing, int isa=-1):
    """trees.h's value rules over a packed ensemble's node and leaf fields (the bools as
    uint8, the float64 fields as their uint64 bits): ``(fault, any_categorical)``, fault the
    first rule broken (1 a feature outside [0, n_features), 2 a default_left byte past 1, 3
    an is_categorical byte past 1, 4 a missing type past max_missing, 5 a NaN threshold, 6 a
    leaf value not finite) or 0. ``isa``: as for :func:`check_packed`."""
    cdef Py_ssize_t n = feature.shape[0], n_leaves = leaf_value.shape[0]
    if (default_left.shape[0] != n or is_categorical.shape[0] != n
            or missing_type.shape[0] != n or threshold.shape[0] != n):
        raise ValueError("check_values: the node fields differ in length")
    isa = _path(isa, "check_values")
    cdef int fault, any_cat = 0
    if n == 0 and n_leaves == 0:
        return 0, False
    with nogil:
        fault = trees_values_fault(
            &feature[0] if n else NULL, &default_left[0] if n else NULL,
            &is_categorical[0] if n else NULL, &missing_type[0] if n else NULL,
            &threshold[0] if n else NULL, n, &leaf_value[0] if n_leaves else NULL, n_leaves,
            n_features, max_missing, &any_cat, isa)
    return int(fault), bool(any_cat)


def check_packed(const int32_t[::1] left, const int32_t[::1] right,
                 const int64_t[::1] node_offset, const int64_t[::1] leaf_offset,
                 int isa=-1):
    """Whether the child arrays of a packed ensemble make each tree one canonical tree (the
    form ``build_tree`` gives, which a model file must hold: the internal nodes numbered
    breadth-first, left child before right, so every child after its parent and every node
    but the root a child exactly once; every leaf a child exactly once, the leaves numbered
    left to right), for arrays read from a file that nothing else has checked.

    Returns ``(tree, node)`` of the first node at fault, ``(tree, -1)`` for a tree whose leaf
    count is not its node count plus one, or None. The offsets must already be sound
    (non-decreasing from 0 to the arrays' lengths). ``isa``: the path of trees.h's forward
    rules (0 the portable C, 1 AVX2; -1 the widest this CPU has), for the tests that hold
    each path to the rules; ValueError where this CPU lacks it."""
    isa = _path(isa, "check_packed")
    cdef Py_ssize_t n_nodes = left.shape[0], n_trees = node_offset.shape[0] - 1
    if (right.shape[0] != n_nodes or n_trees < 0 or leaf_offset.shape[0] != n_trees + 1
            or node_offset[n_trees] != n_nodes):
        raise ValueError("check_packed: inconsistent node arrays")
    cdef Py_ssize_t most = 1, t
    for t in range(n_trees):
        most = max(most, leaf_offset[t + 1] - leaf_offset[t])
    scratch_arr = np.zeros(4 * most + 2, np.uint32)
    lo_arr = np.zeros(most, np.int64)
    hi_arr = np.zeros(most, np.int64)
    cdef uint32_t[::1] scratch = scratch_arr
    cdef int64_t[::1] lo = lo_arr
    cdef int64_t[::1] hi = hi_arr
    cdef Py_ssize_t base, m, n_leaf, n, side
    cdef int64_t c, nxt, bad_tree = -1, bad_node = -1, a0, a1, b0, b1
    with nogil:
        for t in range(n_trees):
            base = node_offset[t]
            m = node_offset[t + 1] - base
            n_leaf = leaf_offset[t + 1] - leaf_offset[t]
            if n_leaf != m + 1:
                bad_tree = t
                break
            if m == 0 or tree_sound_isa(&left[base], &right[base], m, &scratch[0], isa):
                continue
            # the tree is not sound: the loops below name its first node at fault by the
            # forward rules, else the last by the leaf runs', else its root
            nxt = 1
            for n in range(m):
                if nxt <= n:                    # no node before it has it as a child
                    bad_node = n
                    break
                for side in range(2):
                    c = left[base + n] if side == 0 else right[base + n]
                    if c >= 0:
                        if c != nxt or c >= m:
                            bad_node = n
                            break
                        nxt += 1
                if bad_node >= 0:
                    break
            if bad_node < 0:
                for n in range(m - 1, -1, -1):   # children first: each subtree's leaf run
                    c = left[base + n]
                    a0 = lo[c] if c >= 0 else ~c
                    a1 = hi[c] if c >= 0 else ~c
                    c = right[base + n]
                    b0 = lo[c] if c >= 0 else ~c
                    b1 = hi[c] if c >= 0 else ~c
                    if a1 + 1 != b0:
                        bad_node = n
                        break
                    lo[n] = a0
                    hi[n] = b1
            bad_tree = t
            if bad_node < 0:                    # the root's leaves are not 0 .. m
                bad_node = 0
            break
    if bad_tree < 0:
        return None
    return int(bad_tree), int(bad_node)
