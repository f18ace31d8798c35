# cython: language_level=3
"""Forest: the per-model arrays every kernel reads to turn exit leaves into scores."""
import numpy as np

cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t

cnp.import_array()

#: (CAT_CODES, CAT_NONE, CAT_NAN) of _forest.pxd's category_code, for the layout builders
CATEGORY_CODES = (CAT_CODES, CAT_NONE, CAT_NAN)


cdef const void* _ptr(object a, object dtype, Py_ssize_t n, str name) except NULL:
    cdef cnp.ndarray arr = <cnp.ndarray?>a
    if arr.dtype != dtype or not arr.flags.c_contiguous or arr.shape[0] != n:
        raise ValueError(f"forest layout field {name!r}: expected {n} x {dtype}, "
                         f"got {a.shape} x {a.dtype}")
    if n == 0:
        return <const void*>&_EMPTY
    return <const void*>cnp.PyArray_DATA(arr)

cdef double _EMPTY = 0.0


cdef class Forest:
    """Read-only view of a model's leaves, groups and base scores for the C kernels.

    Built from the dict of arrays made by ``quickscorer.algorithms.forest.forest_arrays``.
    """

    def __cinit__(self, dict a):
        n_trees = a["tree_group"].shape[0]
        n_leaves = a["leaf_value"].shape[0]
        n_outputs = a["base_score"].shape[0]
        self._keep = dict(a)
        self.view.family = a["family"]
        self.view.n_features = a["n_features"]
        self.view.n_outputs = n_outputs
        self.view.n_trees = n_trees
        self.view.tree_group = <const int32_t*>_ptr(a["tree_group"], np.int32, n_trees, "tree_group")
        if a["tree_weight"] is None:
            self.view.tree_weight = NULL
        else:
            self.view.tree_weight = <const float*>_ptr(a["tree_weight"], np.float32, n_trees, "tree_weight")
        self.view.tree_leaf_offset = <const int64_t*>_ptr(a["tree_leaf_offset"], np.int64, n_trees + 1, "tree_leaf_offset")
        self.view.leaf_value = <const double*>_ptr(a["leaf_value"], np.float64, n_leaves, "leaf_value")
        # read by XGBoost models only (every read is behind a family test)
        if a["family"] == FAMILY_XGBOOST:
            self.view.leaf_value_f32 = <const float*>_ptr(a["leaf_value_f32"], np.float32, n_leaves, "leaf_value_f32")
        else:
            self.view.leaf_value_f32 = NULL
        self.view.has_linear = a["lin_offset"] is not None
        if self.view.has_linear:
            n_terms = a["lin_feature"].shape[0]
            self.view.lin_offset = <const int64_t*>_ptr(a["lin_offset"], np.int64, n_leaves + 1, "lin_offset")
            self.view.lin_const = <const double*>_ptr(a["lin_const"], np.float64, n_leaves, "lin_const")
            self.view.lin_feature = <const int32_t*>_ptr(a["lin_feature"], np.int32, n_terms, "lin_feature")
            self.view.lin_coeff = <const double*>_ptr(a["lin_coeff"], np.float64, n_terms, "lin_coeff")
        self.view.base_score = <const double*>_ptr(a["base_score"], np.float64, n_outputs, "base_score")
        self.dtype = np.dtype(np.float32 if a["family"] == FAMILY_XGBOOST else np.float64)

    @property
    def n_outputs(self):
        return self.view.n_outputs

    @property
    def n_features(self):
        return self.view.n_features

    @property
    def n_trees(self):
        return self.view.n_trees

    def __reduce__(self):
        return (Forest, (self._keep,))


cdef extern from "quickscorer/forest.h" nogil:
    double qs_ranklib_score(const double* leaf_value, const int64_t* leaf_offset,
                            const double* weight, const int64_t* bag_offset, int64_t n_bags,
                            int64_t n_trees, const int32_t* lf, double base)


def ranklib_scores(const double[::1] leaf_value, const int64_t[::1] leaf_offset,
                   const double[::1] weight, object bag_offset, const int32_t[:, ::1] leaves,
                   double base):
    """RankLib's score of each row of exit leaves ``leaves`` (rows x trees, in-order leaf
    numbers, as the kernels give them): forest.h's qs_ranklib_score, which the C library
    runs too. ``bag_offset``: a random forest's bags (int64, n_bags + 1), or None."""
    cdef Py_ssize_t n = leaves.shape[0], T = leaves.shape[1], i
    if weight.shape[0] != T or leaf_offset.shape[0] != T + 1 or T < 1:
        raise ValueError("RankLib sum: the weights or leaf offsets do not match the trees")
    cdef const int64_t[::1] bags
    cdef const int64_t* bp = NULL
    cdef int64_t n_bags = 0
    if bag_offset is not None:
        bags = bag_offset
        n_bags = bags.shape[0] - 1
        if n_bags < 1 or bags[0] != 0 or bags[n_bags] != T:
            raise ValueError("RankLib sum: the bags do not cover the trees")
        bp = &bags[0]
    out = np.empty(n, np.float64)
    if n == 0:
        return out
    cdef double[::1] o = out
    with nogil:
        for i in range(n):
            o[i] = qs_ranklib_score(&leaf_value[0], &leaf_offset[0], &weight[0], bp, n_bags,
                                    T, &leaves[i, 0], base)
    return out
