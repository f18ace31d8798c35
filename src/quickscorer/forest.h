/* The rules every kernel shares, in one place for the Cython kernels (_forest.pxd declares
 * them) and the C library (capi/quickscorer.c): how an input value is converted, how one node
 * decides, and how exit leaves become scores. Each rule follows docs/semantics.md; the numpy
 * oracle in quickscorer/ir/reference.py states the same rules independently. */
#ifndef QS_FOREST_H
#define QS_FOREST_H

#include <math.h>
#include <stdint.h>

#include "quickscorer/sums.h"

enum {
    QS_FAMILY_LIGHTGBM = 0,  /* float64 comparisons and sum; |x| <= kZeroThreshold -> 0 */
    QS_FAMILY_XGBOOST = 1,   /* float32 input and sum */
    QS_FAMILY_PLAIN = 2,     /* float64 comparisons and sum of the row as given */
    QS_NODE_CATEGORICAL = 1, /* flags bit 0 */
    QS_NODE_DEFAULT_LEFT = 2, /* flags bit 1 */
    QS_MISSING_NONE = 0,     /* flags bits 2-3 */
    QS_MISSING_ZERO = 1,
    QS_MISSING_NAN = 2,
};

/* LightGBM's kZeroThreshold, the float 1e-35f read as a double. */
#define QS_K_ZERO 1.0000000180025095e-35

/* a value's one-byte category code, which the RapidScorer and walk tables are indexed by
 * (algorithms.nodes): the category below QS_CAT_CODES, QS_CAT_NONE where the value names none
 * of those, QS_CAT_NAN for NaN */
#define QS_CAT_CODES 254
#define QS_CAT_NONE 254
#define QS_CAT_NAN 255

/* A model's leaves, groups and base scores: what turns exit leaves into scores. */
typedef struct {
    int family;                      /* QS_FAMILY_* */
    int64_t n_features;              /* columns of an input row */
    int64_t n_outputs;               /* scores per row */
    int64_t n_trees;
    const int32_t* tree_group;       /* [n_trees] output of each tree */
    const float* tree_weight;        /* [n_trees] DART weight, NULL when there is none */
    const int64_t* tree_leaf_offset; /* [n_trees + 1] first global leaf of each tree */
    const double* leaf_value;        /* [n_leaves] in-order leaf values, all trees */
    const float* leaf_value_f32;     /* [n_leaves] the same as float32 (XGBoost) */
    int has_linear;                  /* some tree has linear leaves */
    const int64_t* lin_offset;       /* [n_leaves + 1] terms of each leaf's linear model */
    const double* lin_const;         /* [n_leaves] constant term (leaf_value for plain leaves) */
    const int32_t* lin_feature;      /* [n_terms] feature of each term */
    const double* lin_coeff;         /* [n_terms] coefficient of each term */
    const double* base_score;        /* [n_outputs] margin the sum starts from */
} qs_forest;

/* One input value as the source library sees it, widened to double. */
static inline double qs_convert(int family, double v)
{
    if (family == QS_FAMILY_XGBOOST)
        return (double)(float)v;
    if (family == QS_FAMILY_PLAIN)
        return v;
    return fabs(v) <= QS_K_ZERO ? 0.0 : v; /* false for NaN, which is kept */
}

/* A row of float32 (is32) or float64 values, converted into buf (n_features doubles): one
 * loop per family and input type, each qs_convert with its family a constant. */
#define QS_LOAD_ROW(FAMILY)                                                                  \
    {                                                                                        \
        if (is32)                                                                            \
            for (j = 0; j < n; j++) buf[j] = qs_convert((FAMILY), (double)x32[j]);           \
        else                                                                                 \
            for (j = 0; j < n; j++) buf[j] = qs_convert((FAMILY), x64[j]);                   \
    }
static inline void qs_load_row_ptr(const qs_forest* f, const void* x, int is32, double* buf)
{
    const float* x32 = (const float*)x;
    const double* x64 = (const double*)x;
    int64_t j, n = f->n_features;
    if (f->family == QS_FAMILY_XGBOOST)
        QS_LOAD_ROW(QS_FAMILY_XGBOOST)
    else if (f->family == QS_FAMILY_PLAIN)
        QS_LOAD_ROW(QS_FAMILY_PLAIN)
    else
        QS_LOAD_ROW(QS_FAMILY_LIGHTGBM)
}
#undef QS_LOAD_ROW

/* The category named by x, or -1 where it names none (NaN handled by the caller). */
static inline int64_t qs_category_of(int family, double x)
{
    if (family == QS_FAMILY_LIGHTGBM) {
        /* static_cast<int>: truncation; out of int range or inf gives INT_MIN, a negative */
        if (!(x > -2147483649.0 && x < 2147483648.0))
            return -1;
        if ((int64_t)x < 0)
            return -1;
        return (int64_t)x;
    }
    if (family == QS_FAMILY_PLAIN) {
        /* only a non-negative integer names a category (scikit-learn's encoder matches the
         * value itself) */
        if (!(x >= 0.0 && x < 2147483648.0) || x != (double)(int64_t)x)
            return -1;
        return (int64_t)x;
    }
    /* XGBoost checks the float before truncating it */
    if (!(x >= 0.0 && x < 16777216.0))
        return -1;
    return (int64_t)x;
}

/* The code of a converted value (a split listing only categories below QS_CAT_CODES decides
 * every value by it: NONE is listed by none). */
static inline int qs_category_code(int family, double x)
{
    if (isnan(x))
        return QS_CAT_NAN;
    int64_t c = qs_category_of(family, x);
    return (0 <= c && c < QS_CAT_CODES) ? (int)c : QS_CAT_NONE;
}

/* True (left) or false (right) for one node and one converted input value. */
static inline int qs_goes_left(int family, uint8_t flags, double threshold,
                               const uint32_t* cat_words, int64_t cat_nwords, double x)
{
    if (flags & QS_NODE_CATEGORICAL) {
        if (isnan(x))
            return (flags & QS_NODE_DEFAULT_LEFT) != 0;
        int64_t c = qs_category_of(family, x);
        if (c < 0 || (c >> 5) >= cat_nwords)
            return 0;
        return (cat_words[c >> 5] >> (c & 31)) & 1;
    }
    if (isnan(x)) {
        if (family == QS_FAMILY_XGBOOST)
            return (flags & QS_NODE_DEFAULT_LEFT) != 0;
        if (((flags >> 2) & 3) == QS_MISSING_NONE)
            x = 0.0;
        else
            return (flags & QS_NODE_DEFAULT_LEFT) != 0;
    } else if (family == QS_FAMILY_LIGHTGBM && x == 0.0 &&
               ((flags >> 2) & 3) == QS_MISSING_ZERO) {
        /* inputs were already snapped to 0.0 when |x| <= kZeroThreshold */
        return (flags & QS_NODE_DEFAULT_LEFT) != 0;
    }
    return x <= threshold;
}

/* Value of global leaf gleaf for a converted row (linear leaves evaluated in order). */
static inline double qs_leaf_output(const qs_forest* f, int64_t gleaf, const double* row)
{
    if (!f->has_linear)
        return f->leaf_value[gleaf];
    double acc = f->lin_const[gleaf];
    for (int64_t k = f->lin_offset[gleaf]; k < f->lin_offset[gleaf + 1]; k++) {
        double v = row[f->lin_feature[k]];
        if (isnan(v))
            return f->leaf_value[gleaf];
        acc = qs_linear_term(acc, f->lin_coeff[k], v);
    }
    return acc;
}

/* The scores of one row set to the base scores (out32 for XGBoost forests, else out64). */
static inline void qs_scores_init(const qs_forest* f, double* out64, float* out32)
{
    int64_t k;
    if (f->family == QS_FAMILY_XGBOOST)
        for (k = 0; k < f->n_outputs; k++) out32[k] = (float)f->base_score[k];
    else
        for (k = 0; k < f->n_outputs; k++) out64[k] = f->base_score[k];
}

/* What global leaf gleaf of tree t adds to an XGBoost (float32) score: its value, times the
 * tree's DART weight where there is one (rounded on its own: only where the sum is not fused,
 * QS_FUSED_SUMS false or no DART weights; else qs_add_leaf_f32). */
static inline float qs_leaf_f32(const qs_forest* f, int64_t t, int64_t gleaf)
{
    float v = f->leaf_value_f32[gleaf];
    if (f->tree_weight != NULL)
        v = v * f->tree_weight[t];
    return v;
}

/* acc plus global leaf gleaf of tree t, in XGBoost's float32 sum: times the tree's DART
 * weight where there is one, rounded as the source library's build rounds it. */
static inline float qs_add_leaf_f32(const qs_forest* f, int64_t t, int64_t gleaf, float acc)
{
    if (f->tree_weight != NULL)
        return qs_weighted_add(acc, f->leaf_value_f32[gleaf], f->tree_weight[t]);
    return acc + f->leaf_value_f32[gleaf];
}

/* Add tree t's exit leaf (local in-order index) in the source library's precision, to
 * scores kept `stride` apart (output g at out[g * stride]). */
static inline void qs_scores_add_strided(const qs_forest* f, int64_t t, int64_t leaf,
                                         const double* row, double* out64, float* out32,
                                         int64_t stride)
{
    int64_t g = (int64_t)f->tree_group[t] * stride;
    int64_t gleaf = f->tree_leaf_offset[t] + leaf;
    if (f->family == QS_FAMILY_XGBOOST)
        out32[g] = qs_add_leaf_f32(f, t, gleaf, out32[g]);
    else
        out64[g] = out64[g] + qs_leaf_output(f, gleaf, row);
}

static inline void qs_scores_add(const qs_forest* f, int64_t t, int64_t leaf,
                                 const double* row, double* out64, float* out32)
{
    qs_scores_add_strided(f, t, leaf, row, out64, out32, 1);
}

/* Tree t's exit leaf: stored (leaves not NULL), or added to the scores in the source
 * library's precision. */
static inline void qs_emit(const qs_forest* f, int64_t t, int64_t leaf, const double* row,
                           int32_t* leaves, double* o64, float* o32)
{
    if (leaves != NULL)
        leaves[t] = (int32_t)leaf;
    else
        qs_scores_add(f, t, leaf, row, o64, o32);
}

/* RankLib's score of one row's exit leaves lf[t] (in-order leaf numbers within tree t), read
 * in RankLib's source (Ensemble.eval, RFRanker.eval): each bag a Java float s, to which each
 * tree adds leaf * weight as (float)((double)s + product), the product in double (exact:
 * two floats); a forest's score (bag_offset not NULL: n_bags bags of trees in order) the
 * double mean of its bags' scores; then the base score. Python's RankLib sum (ir/sums.py)
 * and the C library run it. */
static inline double qs_ranklib_score(const double* leaf_value, const int64_t* leaf_offset,
                                      const double* weight, const int64_t* bag_offset,
                                      int64_t n_bags, int64_t n_trees, const int32_t* lf,
                                      double base)
{
    int64_t bags = bag_offset != NULL ? n_bags : 1;
    double total = 0.0;
    for (int64_t b = 0; b < bags; b++) {
        int64_t t0 = bag_offset != NULL ? bag_offset[b] : 0;
        int64_t t1 = bag_offset != NULL ? bag_offset[b + 1] : n_trees;
        float s = 0.0f;
        for (int64_t t = t0; t < t1; t++) {
            double product = leaf_value[leaf_offset[t] + lf[t]] * weight[t];
            s = (float)((double)s + product);
        }
        total += (double)s;
    }
    if (bag_offset != NULL)
        total /= (double)bags;
    return total + base;
}

/* The concatenated node table (feature, threshold, flags, category bitsets) of the kernels
 * that evaluate nodes one at a time, global node g of tree t in [node_offset[t],
 * node_offset[t + 1]). */
typedef struct {
    const int32_t* feature;
    const double* threshold;
    const uint8_t* flags;
    const int64_t* cat_offset;
    const int64_t* cat_nwords;
    const uint32_t* cat_words;
    const int64_t* node_offset; /* [n_trees + 1] first node of each tree */
} qs_nodes;

/* The decision of global node g for a converted row. */
static inline int qs_node_goes_left(const qs_nodes* v, int family, int64_t g, const double* row)
{
    return qs_goes_left(family, v->flags[g], v->threshold[g], v->cat_words + v->cat_offset[g],
                        v->cat_nwords[g], row[v->feature[g]]);
}

/* The reference walk's view: the node table and each node's children in canonical
 * (breadth-first) numbering within its tree, c >= 0 an internal node after its parent, ~c a
 * leaf (in-order). */
typedef struct {
    qs_nodes nodes;
    const int32_t* left;
    const int32_t* right;
} qs_traversal;

/* Tree t's exit leaf for a converted row, node by node on the root-to-leaf path. */
static inline int64_t qs_traversal_leaf(const qs_traversal* v, int family, int64_t t,
                                        const double* row)
{
    int64_t base = v->nodes.node_offset[t];
    if (v->nodes.node_offset[t + 1] == base)
        return 0; /* a single-leaf tree */
    int64_t n = 0;
    while (n >= 0)
        n = qs_node_goes_left(&v->nodes, family, base + n, row) ? v->left[base + n]
                                                                 : v->right[base + n];
    return ~n;
}

/* Every tree's exit leaf for one converted row, emitted in tree order (the exit function of
 * the reference kernel, _traversal.pyx, and of the C library). */
static inline void qs_traversal_exits(const void* ctx, const qs_forest* f, const double* row,
                                      uint64_t* scratch, int32_t* leaves, double* o64,
                                      float* o32)
{
    const qs_traversal* v = (const qs_traversal*)ctx;
    (void)scratch;
    for (int64_t t = 0; t < f->n_trees; t++)
        qs_emit(f, t, qs_traversal_leaf(v, f->family, t, row), row, leaves, o64, o32);
}

#endif
