# cython: language_level=3
"""Reference kernel: a plain root-to-leaf walk per tree and row.

It is the oracle the faster kernels are tested against, and it reproduces each library's
arithmetic (docs/semantics.md) through the shared node rule of forest.h, whose exit function
the C library (capi/) runs too. The row loops are the shared ones of _kernel.pyx.
"""
cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t, uint64_t

from quickscorer._forest cimport ForestView
from quickscorer._kernel cimport Layout, NodeView, array_data, set_nodes

import numpy as np

cnp.import_array()


cdef extern from "quickscorer/forest.h" nogil:
    ctypedef struct TraversalView "qs_traversal":
        NodeView nodes
        const int32_t* left               # [n_nodes] children: c >= 0 internal, ~c leaf
        const int32_t* right

    # the exit function, one copy for this module and the C library (forest.h)
    void traversal_exits "qs_traversal_exits"(const void* ctx, const ForestView* f,
                                               const double* row, uint64_t* scratch,
                                               int32_t* leaves, double* o64, float* o32)


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
