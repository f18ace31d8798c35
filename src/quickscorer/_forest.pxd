# Shared by every kernel: how an input row is converted, how one node decides, and how exit
# leaves become scores. Each rule follows docs/semantics.md; the numpy oracle in
# quickscorer/ir/reference.py states the same rules independently.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.math cimport isnan, fabs

ctypedef fused floating:
    float
    double

cdef enum:
    FAMILY_LIGHTGBM = 0        # float64 comparisons and sum; |x| <= kZeroThreshold -> 0
    FAMILY_XGBOOST = 1         # float32 input and sum
    FAMILY_PLAIN = 2           # float64 comparisons and sum of the row as given
    NODE_CATEGORICAL = 1       # flags bit 0
    NODE_DEFAULT_LEFT = 2      # flags bit 1
    MISSING_NONE = 0           # flags bits 2-3
    MISSING_ZERO = 1
    MISSING_NAN = 2

cdef extern from *:
    """
    /* LightGBM's kZeroThreshold, the float 1e-35f read as a double. */
    #define QS_K_ZERO 1.0000000180025095e-35
    """
    const double K_ZERO "QS_K_ZERO"


cdef extern from "quickscorer/sums.h":
    # the sums that add a product, fused where the source libraries' builds fuse them
    # (AArch64): a linear leaf's terms and a DART tree's weighted leaf
    const int QS_FUSED_SUMS
    double qs_linear_term(double acc, double coeff, double x) nogil
    float qs_weighted_add(float acc, float leaf, float weight) nogil


cdef struct ForestView:
    int family                       # FAMILY_*
    int64_t n_features               # columns of an input row
    int64_t n_outputs                # scores per row
    int64_t n_trees
    const int32_t* tree_group        # [n_trees] output of each tree
    const float* tree_weight         # [n_trees] DART weight, NULL when there is none
    const int64_t* tree_leaf_offset  # [n_trees + 1] first global leaf of each tree
    const double* leaf_value         # [n_leaves] in-order leaf values, all trees
    const float* leaf_value_f32      # [n_leaves] the same as float32 (XGBoost)
    bint has_linear                  # some tree has linear leaves
    const int64_t* lin_offset        # [n_leaves + 1] terms of each leaf's linear model
    const double* lin_const          # [n_leaves] constant term (leaf_value for plain leaves)
    const int32_t* lin_feature       # [n_terms] feature of each term
    const double* lin_coeff          # [n_terms] coefficient of each term
    const double* base_score         # [n_outputs] margin the sum starts from


cdef class Forest:
    cdef ForestView view
    cdef object _keep                # the numpy arrays the view points into
    cdef readonly object dtype       # numpy dtype of raw scores (float64 / float32)


cdef inline void load_row(const ForestView* f, const floating[:, :] X, Py_ssize_t i,
                          double* buf) noexcept nogil:
    """Row i of X as the source library sees it, widened to double."""
    cdef Py_ssize_t j
    cdef double v
    if f.family == FAMILY_XGBOOST:
        for j in range(f.n_features):
            buf[j] = <double>(<float>X[i, j])
    elif f.family == FAMILY_PLAIN:
        for j in range(f.n_features):
            buf[j] = <double>X[i, j]
    else:
        for j in range(f.n_features):
            v = <double>X[i, j]
            if fabs(v) <= K_ZERO:   # false for NaN, which is kept
                v = 0.0
            buf[j] = v


cdef inline void load_row_ptr(const ForestView* f, const char* x, bint is32,
                              double* buf) noexcept nogil:
    """load_row for a row of a C-contiguous float32 (is32) or float64 array given as a
    pointer (the low-latency entries): the same conversions."""
    cdef Py_ssize_t j
    cdef double v
    cdef const float* x32 = <const float*>x
    cdef const double* x64 = <const double*>x
    if f.family == FAMILY_XGBOOST:
        for j in range(f.n_features):
            buf[j] = <double>x32[j] if is32 else <double>(<float>x64[j])
    elif f.family == FAMILY_PLAIN:
        for j in range(f.n_features):
            buf[j] = <double>x32[j] if is32 else x64[j]
    else:
        for j in range(f.n_features):
            v = <double>x32[j] if is32 else x64[j]
            if fabs(v) <= K_ZERO:   # false for NaN, which is kept
                v = 0.0
            buf[j] = v


cdef inline int64_t category_of(int family, double x) noexcept nogil:
    """The category named by x, or -1 where it names none (NaN handled by the caller)."""
    if family == FAMILY_LIGHTGBM:
        # static_cast<int>: truncation; out of int range or inf gives INT_MIN, a negative
        if not (x > -2147483649.0 and x < 2147483648.0):
            return -1
        if <int64_t>x < 0:
            return -1
        return <int64_t>x
    if family == FAMILY_PLAIN:
        # only a non-negative integer names a category (scikit-learn's encoder matches the
        # value itself)
        if not (x >= 0.0 and x < 2147483648.0) or x != <double><int64_t>x:
            return -1
        return <int64_t>x
    # XGBoost checks the float before truncating it
    if not (x >= 0.0 and x < 16777216.0):
        return -1
    return <int64_t>x


# a value's one-byte category code, which the RapidScorer and walk tables are indexed by
# (algorithms.nodes): the category below CAT_CODES, CAT_NONE where the value names none of
# those, CAT_NAN for NaN
cdef enum:
    CAT_CODES = 254
    CAT_NONE = 254
    CAT_NAN = 255


cdef inline int category_code(int family, double x) noexcept nogil:
    """The code of a converted value (a split listing only categories below CAT_CODES
    decides every value by it: NONE is listed by none)."""
    cdef int64_t c
    if isnan(x):
        return CAT_NAN
    c = category_of(family, x)
    return <int>c if 0 <= c < CAT_CODES else CAT_NONE


cdef inline bint goes_left(int family, uint8_t flags, double threshold,
                           const uint32_t* cat_words, int64_t cat_nwords,
                           double x) noexcept nogil:
    """True (left) or false (right) for one node and one converted input value."""
    cdef int64_t c
    cdef int mt
    if flags & NODE_CATEGORICAL:
        if isnan(x):
            return (flags & NODE_DEFAULT_LEFT) != 0
        c = category_of(family, x)
        if c < 0 or (c >> 5) >= cat_nwords:
            return False
        return (cat_words[c >> 5] >> (c & 31)) & 1
    if isnan(x):
        if family == FAMILY_XGBOOST:
            return (flags & NODE_DEFAULT_LEFT) != 0
        mt = (flags >> 2) & 3
        if mt == MISSING_NONE:
            x = 0.0
        else:
            return (flags & NODE_DEFAULT_LEFT) != 0
    elif family == FAMILY_LIGHTGBM and x == 0.0 and ((flags >> 2) & 3) == MISSING_ZERO:
        # inputs were already snapped to 0.0 when |x| <= kZeroThreshold
        return (flags & NODE_DEFAULT_LEFT) != 0
    return x <= threshold


cdef inline double leaf_output(const ForestView* f, int64_t gleaf,
                               const double* row) noexcept nogil:
    """Value of global leaf gleaf for a converted row (linear leaves evaluated in order)."""
    cdef int64_t k
    cdef double acc, v
    if not f.has_linear:
        return f.leaf_value[gleaf]
    acc = f.lin_const[gleaf]
    for k in range(f.lin_offset[gleaf], f.lin_offset[gleaf + 1]):
        v = row[f.lin_feature[k]]
        if isnan(v):
            return f.leaf_value[gleaf]
        acc = qs_linear_term(acc, f.lin_coeff[k], v)
    return acc


cdef inline void scores_init(const ForestView* f, double* out64, float* out32) noexcept nogil:
    cdef int64_t k
    if f.family == FAMILY_XGBOOST:
        for k in range(f.n_outputs):
            out32[k] = <float>f.base_score[k]
    else:
        for k in range(f.n_outputs):
            out64[k] = f.base_score[k]


cdef inline void scores_add(const ForestView* f, int64_t t, int64_t leaf, const double* row,
                            double* out64, float* out32) noexcept nogil:
    """Add tree t's exit leaf (local in-order index) in the source library's precision."""
    scores_add_strided(f, t, leaf, row, out64, out32, 1)


cdef inline float leaf_f32(const ForestView* f, int64_t t, int64_t gleaf) noexcept nogil:
    """What global leaf gleaf of tree t adds to an XGBoost (float32) score: its value, times
    the tree's DART weight where there is one (rounded on its own: only where the sum is not
    fused, QS_FUSED_SUMS false or no DART weights; else add_leaf_f32)."""
    cdef float v = f.leaf_value_f32[gleaf]
    if f.tree_weight != NULL:
        v = v * f.tree_weight[t]
    return v


cdef inline float add_leaf_f32(const ForestView* f, int64_t t, int64_t gleaf,
                               float acc) noexcept nogil:
    """acc plus global leaf gleaf of tree t, in XGBoost's float32 sum: times the tree's DART
    weight where there is one, rounded as the source library's build rounds it."""
    if f.tree_weight != NULL:
        return qs_weighted_add(acc, f.leaf_value_f32[gleaf], f.tree_weight[t])
    return acc + f.leaf_value_f32[gleaf]


cdef inline void scores_add_strided(const ForestView* f, int64_t t, int64_t leaf,
                                    const double* row, double* out64, float* out32,
                                    int64_t stride) noexcept nogil:
    """scores_add for scores kept `stride` apart (output g at out[g * stride])."""
    cdef int64_t g = f.tree_group[t] * stride
    cdef int64_t gleaf = f.tree_leaf_offset[t] + leaf
    if f.family == FAMILY_XGBOOST:
        out32[g] = add_leaf_f32(f, t, gleaf, out32[g])
    else:
        out64[g] = out64[g] + leaf_output(f, gleaf, row)
