# cython: language_level=3
"""Reference kernel: a plain root-to-leaf walk per tree and row.

It is the oracle the faster kernels are tested against, and it reproduces each library's
arithmetic (docs/semantics.md) through the shared node rule of _forest.pxd. The row loops are the
shared ones of _kernel.pyx.
"""
cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t, uint64_t

from quickscorer._forest cimport ForestView
from quickscorer._kernel cimport emit, Layout, NodeView, array_data, node_goes_left, set_nodes

import numpy as np

cnp.import_array()


cdef struct TraversalView:
    NodeView nodes
    const int32_t* left               # [n_nodes] children: c >= 0 internal, ~c leaf
    const int32_t* right


cdef class TraversalLayout(Layout):
    """Concatenated node arrays of all trees (canonical numbering), for the walk."""
    cdef TraversalView view

    def __cinit__(self, dict a, int64_t n_features):
        self._keep = dict(a)
        set_nodes(&self.view.nodes, a, "traversal")
        self.view.left = <const int32_t*>array_data(a["left"], np.int32, "traversal", "left")
        self.view.right = <const int32_t*>array_data(a["right"], np.int32, "traversal", "right")
        if a["left"].shape[0] != a["feature"].shape[0] or a["right"].shape != a["left"].shape:
            raise ValueError("traversal layout: left/right do not match the nodes")
        self.n_trees = a["node_offset"].shape[0] - 1
        self.n_features = n_features
        self.scratch_words = 0
        self.ctx = &self.view
        self.exits = traversal_exits

    def __reduce__(self):
        return (TraversalLayout, (self._keep, self.n_features))


cdef inline int64_t exit_leaf(const TraversalView* v, int family, int64_t t,
                              const double* row) noexcept nogil:
    cdef int64_t base = v.nodes.node_offset[t]
    cdef int64_t n
    if v.nodes.node_offset[t + 1] == base:
        return 0  # single-leaf tree
    n = 0
    while n >= 0:
        if node_goes_left(&v.nodes, family, base + n, row):
            n = v.left[base + n]
        else:
            n = v.right[base + n]
    return ~n


cdef void traversal_exits(const void* ctx, const ForestView* f, const double* row,
                          uint64_t* scratch, int32_t* leaves,
                          double* o64, float* o32) noexcept nogil:
    cdef const TraversalView* v = <const TraversalView*>ctx
    cdef int64_t t
    for t in range(f.n_trees):
        emit(f, t, exit_leaf(v, f.family, t, row), row, leaves, o64, o32)
