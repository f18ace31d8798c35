# Shared by every kernel: how an input row is converted, how one node decides, and how exit
# leaves become scores. The rules are C (forest.h), so the Cython kernels and the C library
# (capi/) run one copy of them; load_row reads a typed memoryview, which C cannot.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

ctypedef fused floating:
    float
    double

cdef extern from "quickscorer/forest.h" nogil:
    enum:
        FAMILY_LIGHTGBM "QS_FAMILY_LIGHTGBM"
        FAMILY_XGBOOST "QS_FAMILY_XGBOOST"
        FAMILY_PLAIN "QS_FAMILY_PLAIN"
        NODE_CATEGORICAL "QS_NODE_CATEGORICAL"
        NODE_DEFAULT_LEFT "QS_NODE_DEFAULT_LEFT"
        MISSING_NONE "QS_MISSING_NONE"
        MISSING_ZERO "QS_MISSING_ZERO"
        MISSING_NAN "QS_MISSING_NAN"
        CAT_CODES "QS_CAT_CODES"
        CAT_NONE "QS_CAT_NONE"
        CAT_NAN "QS_CAT_NAN"
    const double K_ZERO "QS_K_ZERO"
    # the sums that add a product, fused where the source libraries' builds fuse them
    # (AArch64): a linear leaf's terms and a DART tree's weighted leaf (sums.h)
    const int QS_FUSED_SUMS
    double qs_linear_term(double acc, double coeff, double x)
    float qs_weighted_add(float acc, float leaf, float weight)

    ctypedef struct ForestView "qs_forest":
        int family
        int64_t n_features
        int64_t n_outputs
        int64_t n_trees
        const int32_t* tree_group
        const float* tree_weight
        const int64_t* tree_leaf_offset
        const double* leaf_value
        const float* leaf_value_f32
        bint has_linear
        const int64_t* lin_offset
        const double* lin_const
        const int32_t* lin_feature
        const double* lin_coeff
        const double* base_score

    double convert_value "qs_convert"(int family, double v)
    void load_row_ptr "qs_load_row_ptr"(const ForestView* f, const void* x, bint is32,
                                        double* buf)
    int64_t category_of "qs_category_of"(int family, double x)
    int category_code "qs_category_code"(int family, double x)
    bint goes_left "qs_goes_left"(int family, uint8_t flags, double threshold,
                                  const uint32_t* cat_words, int64_t cat_nwords, double x)
    double leaf_output "qs_leaf_output"(const ForestView* f, int64_t gleaf, const double* row)
    void scores_init "qs_scores_init"(const ForestView* f, double* out64, float* out32)
    float leaf_f32 "qs_leaf_f32"(const ForestView* f, int64_t t, int64_t gleaf)
    float add_leaf_f32 "qs_add_leaf_f32"(const ForestView* f, int64_t t, int64_t gleaf,
                                         float acc)
    void scores_add_strided "qs_scores_add_strided"(const ForestView* f, int64_t t,
                                                    int64_t leaf, const double* row,
                                                    double* out64, float* out32,
                                                    int64_t stride)
    void scores_add "qs_scores_add"(const ForestView* f, int64_t t, int64_t leaf,
                                    const double* row, double* out64, float* out32)


cdef class Forest:
    cdef ForestView view
    cdef object _keep                # the numpy arrays the view points into
    cdef readonly object dtype       # numpy dtype of raw scores (float64 / float32)


cdef inline void load_row(const ForestView* f, const floating[:, :] X, Py_ssize_t i,
                          double* buf) noexcept nogil:
    """Row i of X as the source library sees it, widened to double (forest.h's qs_convert,
    one loop per family)."""
    cdef Py_ssize_t j
    if f.family == FAMILY_XGBOOST:
        for j in range(f.n_features):
            buf[j] = convert_value(FAMILY_XGBOOST, <double>X[i, j])
    elif f.family == FAMILY_PLAIN:
        for j in range(f.n_features):
            buf[j] = <double>X[i, j]
    else:
        for j in range(f.n_features):
            buf[j] = convert_value(FAMILY_LIGHTGBM, <double>X[i, j])
