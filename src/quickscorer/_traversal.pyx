# cython: language_level=3
"""Reference kernel: a plain root-to-leaf walk per tree and row, nogil, in parallel over rows.

It is the oracle the faster kernels are tested against, and it reproduces each library's
arithmetic (SEMANTICS.md) through the shared rules in _forest.pxd.
"""
import numpy as np

cimport numpy as cnp
from cython.parallel cimport prange, parallel, threadid
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t

from ._forest cimport (Forest, ForestView, floating, load_row, goes_left, scores_init,
                       scores_add)

cnp.import_array()


cdef class TraversalLayout:
    """Concatenated node arrays of all trees (canonical numbering), for the walk."""
    cdef const int32_t* feature
    cdef const double* threshold
    cdef const int32_t* left
    cdef const int32_t* right
    cdef const uint8_t* flags
    cdef const int64_t* cat_offset
    cdef const int64_t* cat_nwords
    cdef const uint32_t* cat_words
    cdef const int64_t* node_offset
    cdef object _keep

    def __cinit__(self, dict a):
        self._keep = dict(a)
        for name in ("feature", "threshold", "left", "right", "flags", "cat_offset",
                     "cat_nwords", "cat_words", "node_offset"):
            arr = a[name]
            if not arr.flags.c_contiguous:
                raise ValueError(f"traversal layout field {name!r} is not C-contiguous")
        self.feature = <const int32_t*>cnp.PyArray_DATA(a["feature"])
        self.threshold = <const double*>cnp.PyArray_DATA(a["threshold"])
        self.left = <const int32_t*>cnp.PyArray_DATA(a["left"])
        self.right = <const int32_t*>cnp.PyArray_DATA(a["right"])
        self.flags = <const uint8_t*>cnp.PyArray_DATA(a["flags"])
        self.cat_offset = <const int64_t*>cnp.PyArray_DATA(a["cat_offset"])
        self.cat_nwords = <const int64_t*>cnp.PyArray_DATA(a["cat_nwords"])
        self.cat_words = <const uint32_t*>cnp.PyArray_DATA(a["cat_words"])
        self.node_offset = <const int64_t*>cnp.PyArray_DATA(a["node_offset"])

    def __reduce__(self):
        return (TraversalLayout, (self._keep,))


cdef inline int64_t exit_leaf(const ForestView* f, TraversalLayout lay, int64_t t,
                              const double* row) noexcept nogil:
    cdef int64_t base = lay.node_offset[t]
    cdef int64_t n, g
    if lay.node_offset[t + 1] == base:
        return 0  # single-leaf tree
    n = 0
    while n >= 0:
        g = base + n
        if goes_left(f.family, lay.flags[g], lay.threshold[g], lay.cat_words + lay.cat_offset[g],
                     lay.cat_nwords[g], row[lay.feature[g]]):
            n = lay.left[g]
        else:
            n = lay.right[g]
    return ~n


def predict_raw(Forest forest, TraversalLayout lay, const floating[:, :] X,
                double[:, ::1] out64, float[:, ::1] out32, double[:, ::1] rowbuf,
                int n_threads):
    """Raw scores into out64 (LightGBM) or out32 (XGBoost); rowbuf is (n_threads, n_features)."""
    cdef const ForestView* f = &forest.view
    cdef Py_ssize_t n_rows = X.shape[0]
    cdef Py_ssize_t i
    cdef int64_t t
    cdef double* row
    cdef double* o64
    cdef float* o32
    with nogil, parallel(num_threads=n_threads):
        row = &rowbuf[threadid(), 0]
        for i in prange(n_rows, schedule="static"):
            load_row(f, X, i, row)
            o64 = &out64[i, 0] if out64.shape[0] else NULL
            o32 = &out32[i, 0] if out32.shape[0] else NULL
            scores_init(f, o64, o32)
            for t in range(f.n_trees):
                scores_add(f, t, exit_leaf(f, lay, t, row), row, o64, o32)


def predict_leaf(Forest forest, TraversalLayout lay, const floating[:, :] X,
                 int32_t[:, ::1] out, double[:, ::1] rowbuf, int n_threads):
    """Canonical exit leaf of every tree for every row."""
    cdef const ForestView* f = &forest.view
    cdef Py_ssize_t n_rows = X.shape[0]
    cdef Py_ssize_t i
    cdef int64_t t
    cdef double* row
    with nogil, parallel(num_threads=n_threads):
        row = &rowbuf[threadid(), 0]
        for i in prange(n_rows, schedule="static"):
            load_row(f, X, i, row)
            for t in range(f.n_trees):
                out[i, t] = <int32_t>exit_leaf(f, lay, t, row)
