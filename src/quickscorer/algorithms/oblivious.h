/* Oblivious trees from their level tests (quickscorer/algorithms/oblivious.py has the layout).
 *
 * A group is OBL_LANES rows. Its ranks: ranks[c * OBL_LANES + l] is row l's rank in column
 * c, the number of the column's thresholds below the row's value (on AVX2 a count of them
 * for a float32 column of few thresholds, else rapidscorer/scan.h's two-level search; a binary search
 * in portable C), or the rank of the value's side for NaN and, under LightGBM's
 * zero-as-missing, for 0.0. Tree t's leaf for row l is then
 * sum over its levels k of (rank of level k's column > level k's threshold index) << (d-1-k):
 * the in-order number of the leaf (children of a level's nodes: left first). The leaf values
 * are added to acc[g * OBL_LANES + l] (output g of tree t) in tree order, the sums every
 * kernel makes (in float32 for XGBoost forests, times DART's tree weights); both paths give
 * the same bits.
 */
#ifndef QUICKSCORER_OBLIVIOUS_H
#define QUICKSCORER_OBLIVIOUS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "quickscorer/algorithms/rapidscorer/scan.h"   /* rs_rank_avx2, RS_HAVE_X86, CPU_TARGET */

#define OBL_LANES 32
#define OBL_MAX_DEPTH 8

typedef struct {
    int64_t n_cols;
    const int32_t* col_feature;   /* [n_cols] input column */
    const uint8_t* nan_rank;      /* [n_cols] the rank NaN takes */
    const uint8_t* zero_rank;     /* [n_cols] the rank 0.0 takes where zero_special */
    const uint8_t* zero_special;  /* [n_cols] 0.0 takes zero_rank (LightGBM zero-as-missing) */
    const int32_t* npiv;          /* [n_cols] pivots the search compares: 0, 8 or 16 */
    const int64_t* bkt_off;       /* [n_cols + 1] each column's buckets of 16 thresholds */
    const double* piv;            /* [16 n_cols] the last threshold of each bucket */
    const double* bkt;            /* the buckets, +inf padded */
    const float* piv32;           /* the same in float32 where some column's thresholds are */
    const float* bkt32;           /*   all float32 boundaries (oblivious.py), else NULL */
    const uint8_t* col_f32;       /* [n_cols] the column is ranked in float32 (with piv32) */
    const int32_t* n_count;       /* [n_cols] how many of the column's float32 thresholds
                                   * are finite (they come first in its buckets; with bkt32) */
    /* the columns ranked by counting in buckets (obl_bucket_count_f32_avx2; NULL: none):
     * cnt_s[c] thresholds a bucket (0: the column is not), cnt_k[c] buckets, and at
     * cnt_tab + cnt_off[c] the 8 buckets' last thresholds, then for j < cnt_s[c] the j-th
     * threshold of each of the 8 buckets (+inf past the column's) */
    const int32_t* cnt_s;
    const int32_t* cnt_k;
    const int64_t* cnt_off;
    const float* cnt_tab;
    /* the columns that start a run of 8 reading 8 consecutive features, ascending, in the
     * order a scan from column 0 takes them (obl_xt_block8_avx2 converts those runs) */
    const int32_t* block8;
    int64_t n_block8;
    int64_t n_trees;
    const int32_t* depth;         /* [n_trees] */
    const int32_t* level_col;     /* [n_trees][OBL_MAX_DEPTH] */
    const uint8_t* level_thr;     /* [n_trees][OBL_MAX_DEPTH] threshold index in the column */
    const uint8_t* level_eq;      /* [n_trees][OBL_MAX_DEPTH] 1: a category test, right where
                                   * the rank is not level_thr (the category's index); NULL
                                   * where the model has none */
    const uint8_t* same_prev;     /* [n_trees] 1: the tree's levels are the previous tree's
                                   * (a multiclass CatBoost tree's outputs); NULL: none is */
    /* the levels again for one row, 8 trees a block, level by level: tree 8 b + j's level
     * at position p of row_depth (its levels last: a tree of d levels has row_depth - d
     * leading positions of column 0 and threshold 255, which no rank exceeds) */
    int32_t row_depth;
    const int32_t* row_col8;      /* [ceil(n_trees / 8)][row_depth][8] */
    const int32_t* row_thr8;      /* the same layout */
    const int32_t* row_eq8;       /* the same, -1 at a category test; NULL where none is */
} obl_view;

/* #{bkt[0 .. n) < x}: the buckets are ascending (+inf never counts) */
static inline int obl_rank_c(const double* bkt, int64_t n, double x)
{
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        const int64_t mid = (lo + hi) >> 1;
        if (bkt[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (int)(lo > 255 ? 255 : lo);
}

/* the special ranks of a value, or -1 where it is ranked among the thresholds */
static inline int obl_special(const obl_view* v, int64_t c, double x)
{
    if (isnan(x))
        return v->nan_rank[c];
    if (v->zero_special[c] && x == 0.0)
        return v->zero_rank[c];
    return -1;
}

static void obl_ranks_c(const obl_view* v, const double* rows, int64_t F, int n_lanes,
                        uint8_t* ranks)
{
    for (int64_t c = 0; c < v->n_cols; ++c) {
        uint8_t* out = ranks + c * OBL_LANES;
        const double* bkt = v->bkt + v->bkt_off[c];
        const int64_t nb = v->bkt_off[c + 1] - v->bkt_off[c];
        const int64_t f = v->col_feature[c];
        for (int l = 0; l < n_lanes; ++l) {
            const double x = rows[l * F + f];
            const int s = obl_special(v, c, x);
            out[l] = (uint8_t)(s >= 0 ? s : obl_rank_c(bkt, nb, x));
        }
        memset(out + n_lanes, 0, OBL_LANES - n_lanes);
    }
}

/* tree t's leaf for lane l (portable C) */
static inline int obl_leaf_c(const obl_view* v, int64_t t, const uint8_t* ranks, int l)
{
    const int d = v->depth[t];
    const int32_t* col = v->level_col + t * OBL_MAX_DEPTH;
    const uint8_t* thr = v->level_thr + t * OBL_MAX_DEPTH;
    const uint8_t* eq = v->level_eq != NULL ? v->level_eq + t * OBL_MAX_DEPTH : NULL;
    int leaf = 0;
    for (int k = 0; k < d; ++k) {
        const uint8_t r = ranks[col[k] * OBL_LANES + l];
        leaf = (leaf << 1) | (eq != NULL && eq[k] ? r != thr[k] : r > thr[k]);
    }
    return leaf;
}

/* the sums of trees [t0, t1) in portable C, any number of outputs */
static void obl_add_c(const obl_view* v, const uint8_t* ranks, int n_lanes,
                      const double* leaf_value, const int64_t* leaf_off,
                      const int32_t* tree_group, double* acc, int64_t t0, int64_t t1)
{
    for (int64_t t = t0; t < t1; ++t) {
        const double* lv = leaf_value + leaf_off[t];
        double* a = acc + (int64_t)tree_group[t] * OBL_LANES;
        for (int l = 0; l < n_lanes; ++l)
            a[l] += lv[obl_leaf_c(v, t, ranks, l)];
    }
}

/* XGBoost's float32 sums in portable C: each leaf value, times the tree's weight where
 * tree_weight is not NULL (DART), added in float32 in tree order */
static void obl_add_f32_c(const obl_view* v, const uint8_t* ranks, int n_lanes,
                          const float* leaf_value, const int64_t* leaf_off,
                          const int32_t* tree_group, const float* tree_weight, float* acc,
                          int64_t t0, int64_t t1)
{
    for (int64_t t = t0; t < t1; ++t) {
        const float* lv = leaf_value + leaf_off[t];
        float* a = acc + (int64_t)tree_group[t] * OBL_LANES;
        for (int l = 0; l < n_lanes; ++l) {
            const float x = lv[obl_leaf_c(v, t, ranks, l)];
            a[l] = tree_weight != NULL ? qs_weighted_add(a[l], x, tree_weight[t]) : a[l] + x;
        }
    }
}

#if RS_HAVE_X86
/* one column's ranks of n_lanes values x[l * F] on AVX2 (npiv a constant where inlined) */
CPU_TARGET("avx2") __attribute__((always_inline))
static inline void obl_column_avx2(const double* x, int64_t F, int n_lanes, const double* piv,
                                   const double* bkt, int npiv, int nan_rank, int zero_rank,
                                   int zero_special, uint8_t* out)
{
    for (int l = 0; l < n_lanes; ++l) {
        const double v = x[l * F];
        out[l] = (uint8_t)(isnan(v) ? nan_rank
                           : zero_special && v == 0.0 ? zero_rank
                                                      : rs_rank_avx2(piv, bkt, v, npiv));
    }
}

/* column c's ranks by the float64 two-level search, the lanes zeroed past n_lanes */
CPU_TARGET("avx2") __attribute__((always_inline))
static inline void obl_column_f64_avx2(const obl_view* v, int64_t c, const double* x,
                                       int64_t F, int n_lanes, uint8_t* out)
{
    /* the column's constants in locals: the stores to the ranks (bytes) may alias them */
    const double* piv = v->piv + 16 * c;
    const double* bkt = v->bkt + v->bkt_off[c];
    const int nan_rank = v->nan_rank[c], zero_rank = v->zero_rank[c];
    const int zero_special = v->zero_special[c];
    switch (v->npiv[c]) {
    case 16:
        obl_column_avx2(x, F, n_lanes, piv, bkt, 16, nan_rank, zero_rank, zero_special, out);
        break;
    case 8:
        obl_column_avx2(x, F, n_lanes, piv, bkt, 8, nan_rank, zero_rank, zero_special, out);
        break;
    default:
        obl_column_avx2(x, F, n_lanes, piv, bkt, 0, nan_rank, zero_rank, zero_special, out);
    }
    memset(out + n_lanes, 0, OBL_LANES - n_lanes);
}

/* A float32 column of at most OBL_COUNT_MAX finite thresholds is ranked by counting, 8 rows
 * a register, the thresholds below each value: a compare and an add a threshold and 8 rows,
 * where the two-level search spends two compares, two mask moves and two popcounts a row.
 * 64, 96 and 128 ranked alike and faster than 0 (every column searched) and 32 on CatBoost's
 * 1,000 trees of depth 6 (32 thresholds a column on average, 112 at most);
 * python -m benchmarks.experiments.oblivious_floor --count-max 0,32,64,96,128 */
#ifndef OBL_COUNT_MAX
#define OBL_COUNT_MAX 96
#endif

/* 32 ranks of at most 255 (four registers of 8 rows) stored as bytes, NaN lanes of x at
 * nan_rank: the packs interleave the registers' 128-bit halves, the permutation puts the
 * rows back in order */
CPU_TARGET("avx2") __attribute__((always_inline))
static inline void obl_store_ranks_avx2(__m256i* a, const __m256* x, int nan_rank, uint8_t* out)
{
    const __m256i nan_r = _mm256_set1_epi32(nan_rank);
    for (int i = 0; i < 4; ++i)
        a[i] = _mm256_blendv_epi8(a[i], nan_r,
                                  _mm256_castps_si256(_mm256_cmp_ps(x[i], x[i], _CMP_UNORD_Q)));
    const __m256i b = _mm256_packus_epi16(_mm256_packs_epi32(a[0], a[1]),
                                          _mm256_packs_epi32(a[2], a[3]));
    _mm256_storeu_si256((__m256i*)out,
                        _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
}

/* the ranks of 32 values (float32, in xt) among n ascending thresholds by counting, NaN at
 * nan_rank, as 32 bytes */
CPU_TARGET("avx2") __attribute__((always_inline))
static inline void obl_count_f32_avx2(const float* xt, const float* thr, int64_t n, int nan_rank,
                                      uint8_t* out)
{
    __m256 x[4];
    __m256i a[4];
    for (int i = 0; i < 4; ++i) {
        x[i] = _mm256_load_ps(xt + 8 * i);
        a[i] = _mm256_setzero_si256();
    }
    for (int64_t j = 0; j < n; ++j) {
        const __m256 t = _mm256_broadcast_ss(thr + j);
        for (int i = 0; i < 4; ++i)     /* t < x: all ones, -1, where the threshold is below */
            a[i] = _mm256_add_epi32(a[i], _mm256_castps_si256(_mm256_cmp_ps(t, x[i],
                                                                            _CMP_LT_OQ)));
    }
    for (int i = 0; i < 4; ++i)
        a[i] = _mm256_sub_epi32(_mm256_setzero_si256(), a[i]);
    obl_store_ranks_avx2(a, x, nan_rank, out);
}

/* The same ranks counted in buckets: a column's n thresholds cut into k <= 8 buckets of s
 * (tab: the buckets' last thresholds, then the j-th threshold of every bucket for each j < s,
 * +inf past the column's). A value's bucket b is the count of the buckets' last thresholds
 * below it (at most k - 1: beyond the last, the last bucket counts all of its own), its rank
 * s b plus the count of its bucket's thresholds below it, each fetched for the 8 rows of a
 * register by one permutation: k + s compares a register where counting takes n (k = 8, s =
 * 4 for 32 thresholds: 12 against 32) */
CPU_TARGET("avx2") __attribute__((always_inline))
static inline void obl_bucket_count_f32_avx2(const float* xt, const float* tab, int k, int s,
                                             int nan_rank, uint8_t* out)
{
    __m256 x[4];
    __m256i b[4], a[4];
    for (int i = 0; i < 4; ++i) {
        x[i] = _mm256_load_ps(xt + 8 * i);
        b[i] = a[i] = _mm256_setzero_si256();
    }
    for (int j = 0; j < k; ++j) {
        const __m256 t = _mm256_broadcast_ss(tab + j);
        for (int i = 0; i < 4; ++i)
            b[i] = _mm256_add_epi32(b[i], _mm256_castps_si256(_mm256_cmp_ps(t, x[i],
                                                                            _CMP_LT_OQ)));
    }
    const __m256i last = _mm256_set1_epi32(k - 1);
    for (int i = 0; i < 4; ++i)
        b[i] = _mm256_min_epi32(_mm256_sub_epi32(_mm256_setzero_si256(), b[i]), last);
    for (int j = 0; j < s; ++j) {
        const __m256 t = _mm256_loadu_ps(tab + 8 + 8 * j);
        for (int i = 0; i < 4; ++i)
            a[i] = _mm256_add_epi32(a[i], _mm256_castps_si256(_mm256_cmp_ps(
                _mm256_permutevar8x32_ps(t, b[i]), x[i], _CMP_LT_OQ)));
    }
    const __m256i sv = _mm256_set1_epi32(s);
    for (int i = 0; i < 4; ++i)
        a[i] = _mm256_sub_epi32(_mm256_mullo_epi32(b[i], sv), a[i]);
    obl_store_ranks_avx2(a, x, nan_rank, out);
}

/* xt's 8 x 8 block of columns c0 .. c0 + 7, whose features are f0 .. f0 + 7, and rows
 * l0 .. l0 + 7: each row's 8 values converted in two instructions (the IEEE conversion of
 * _mm_cvtsd_ss, four values at a time), the block transposed in registers and stored a
 * column at a time, the next group's same rows prefetched, where a value at a time takes a
 * load, a conversion and a store each (python
 * benchmarks/experiments/builds_ab.py --before <the former build> --shapes
 * cb-d6-uniform-1000,cb-d8-heavy-300,cb-d6-uniform-500-mc3 --rows 100,10000) */
CPU_TARGET("avx2") __attribute__((always_inline))
static inline void obl_xt_block8_avx2(const double* rows, int64_t F, int64_t f0, int l0,
                                      float* xt)
{
    __m256 r[8], u[8];
    for (int i = 0; i < 8; ++i) {
        const double* p = rows + (int64_t)(l0 + i) * F + f0;
        _mm_prefetch((const char*)(p + OBL_LANES * F), _MM_HINT_T0);   /* the next group's */
        r[i] = _mm256_insertf128_ps(_mm256_castps128_ps256(_mm256_cvtpd_ps(_mm256_loadu_pd(p))),
                                    _mm256_cvtpd_ps(_mm256_loadu_pd(p + 4)), 1);
    }
    for (int i = 0; i < 8; i += 2) {
        u[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        u[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int i = 0; i < 8; i += 4) {
        r[i] = _mm256_shuffle_ps(u[i], u[i + 2], 0x44);
        r[i + 1] = _mm256_shuffle_ps(u[i], u[i + 2], 0xEE);
        r[i + 2] = _mm256_shuffle_ps(u[i + 1], u[i + 3], 0x44);
        r[i + 3] = _mm256_shuffle_ps(u[i + 1], u[i + 3], 0xEE);
    }
    /* r[0..3]: columns 0, 1, 2, 3 of rows 0-3 (low half) and columns 4-7 (high half), and so
     * r[4..7] for rows 4-7 */
    for (int j = 0; j < 4; ++j) {
        _mm256_store_ps(xt + (size_t)j * OBL_LANES + l0,
                        _mm256_permute2f128_ps(r[j], r[j + 4], 0x20));
        _mm256_store_ps(xt + (size_t)(j + 4) * OBL_LANES + l0,
                        _mm256_permute2f128_ps(r[j], r[j + 4], 0x31));
    }
}

/* float32 ranks: the group's values first laid out column by column, rounded to float32
 * (xt: n_cols x OBL_LANES floats; each row's values read once and in order, not 32 rows
 * apart a column), then each column ranked by counting in buckets where the layout gives it
 * buckets (cnt_s), else by counting where it has at most OBL_COUNT_MAX thresholds, else by
 * the two-level search */
CPU_TARGET("avx2")
static void obl_ranks_f32_avx2(const obl_view* v, const double* rows, int64_t F, int n_lanes,
                               float* xt, uint8_t* ranks)
{
    const int full = n_lanes & ~7;          /* rows in blocks of 8 */
    const int64_t nb = full > 0 ? v->n_block8 : 0;
    /* the runs of 8 columns of consecutive features, 8 rows at a time: each block of rows
     * read along its rows (8 streams in order), not a column's stripe of every row in turn */
    for (int l0 = 0; l0 < full; l0 += 8)
        for (int64_t b = 0; b < nb; ++b)
            obl_xt_block8_avx2(rows, F, v->col_feature[v->block8[b]], l0,
                               xt + (int64_t)v->block8[b] * OBL_LANES);
    for (int64_t c = 0, b = 0; c < v->n_cols; ) {
        /* the same runs' rows past the last full 8, and the columns between the runs a row
         * at a time (each row's values read in order, not 32 rows apart a column); both an
         * IEEE conversion */
        const int block = b < nb && v->block8[b] == c;
        const int64_t e = block ? c + 8 : b < nb ? v->block8[b] : v->n_cols;
        b += block;
        for (int l = block ? full : 0; l < n_lanes; ++l) {
            const double* row = rows + l * F;
            for (int64_t k = c; k < e; ++k)
                xt[k * OBL_LANES + l] = _mm_cvtss_f32(_mm_cvtsd_ss(
                    _mm_setzero_ps(), _mm_set_sd(row[v->col_feature[k]])));
        }
        for (int64_t k = c; k < e; ++k)
            for (int l = n_lanes; l < OBL_LANES; ++l)
                xt[k * OBL_LANES + l] = 0.0f;
        c = e;
    }
    for (int64_t c = 0; c < v->n_cols; ++c) {
        uint8_t* out = ranks + c * OBL_LANES;
        const float* x = xt + c * OBL_LANES;
        const float* bkt = v->bkt32 + v->bkt_off[c];
        if (!v->col_f32[c]) {               /* a category's column: its lanes zeroed too */
            obl_column_f64_avx2(v, c, rows + v->col_feature[c], F, n_lanes, out);
            continue;
        }
        /* the +inf padding of the buckets is below no value: only the finite thresholds are
         * counted */
        const int64_t n_thr = v->n_count[c];
        if (v->cnt_s != NULL && v->cnt_s[c] > 0) {
            obl_bucket_count_f32_avx2(x, v->cnt_tab + v->cnt_off[c], v->cnt_k[c], v->cnt_s[c],
                                      v->nan_rank[c], out);
        } else if (n_thr <= OBL_COUNT_MAX) {
            obl_count_f32_avx2(x, bkt, n_thr, v->nan_rank[c], out);
        } else {
            const float* piv = v->piv32 + 16 * c;
            const int npiv = v->npiv[c], nan_rank = v->nan_rank[c];
            for (int l = 0; l < n_lanes; ++l)
                out[l] = (uint8_t)(isnan(x[l]) ? nan_rank
                                                : rs_rank_f32_avx2(piv, bkt, x[l], npiv));
        }
        memset(out + n_lanes, 0, OBL_LANES - n_lanes);
    }
}

CPU_TARGET("avx2")
static void obl_ranks_avx2(const obl_view* v, const double* rows, int64_t F, int n_lanes,
                           float* xt, uint8_t* ranks)
{
    if (v->piv32 != NULL) {
        obl_ranks_f32_avx2(v, rows, F, n_lanes, xt, ranks);
        return;
    }
    for (int64_t c = 0; c < v->n_cols; ++c)
        obl_column_f64_avx2(v, c, rows + v->col_feature[c], F, n_lanes,
                            ranks + c * OBL_LANES);
}

/* tree t's 32 leaves: a byte compare (ranks and thresholds biased to signed) and
 * leaf = 2 leaf + bit a level; with `eq` (a constant where inlined: the model has category
 * tests) a category level's bit is the rank's inequality to the category's index instead,
 * chosen by a blend (no branch a level) */
CPU_TARGET("avx2") __attribute__((always_inline))
static inline __m256i obl_tree_avx2(const obl_view* v, int64_t t, const uint8_t* ranks,
                                    const int eq)
{
    const __m256i bias = _mm256_set1_epi8((char)0x80);
    const int d = v->depth[t];
    const int32_t* col = v->level_col + t * OBL_MAX_DEPTH;
    const uint8_t* thr = v->level_thr + t * OBL_MAX_DEPTH;
    const uint8_t* is_eq = eq ? v->level_eq + t * OBL_MAX_DEPTH : NULL;
    __m256i leaf = _mm256_setzero_si256();
    for (int k = 0; k < d; ++k) {
        const __m256i r = _mm256_load_si256((const __m256i*)(ranks + (size_t)col[k] * OBL_LANES));
        __m256i right = _mm256_cmpgt_epi8(_mm256_xor_si256(r, bias),
                                          _mm256_set1_epi8((char)(thr[k] ^ 0x80)));
        if (eq) {
            const __m256i ne = _mm256_xor_si256(
                _mm256_cmpeq_epi8(r, _mm256_set1_epi8((char)thr[k])), _mm256_set1_epi8(-1));
            right = _mm256_blendv_epi8(right, ne, _mm256_set1_epi8((char)-(int)is_eq[k]));
        }
        /* leaf = 2 leaf + bit: the compare's -1 subtracted */
        leaf = _mm256_sub_epi8(_mm256_add_epi8(leaf, leaf), right);
    }
    return leaf;
}

/* one output: the 32 sums in eight registers across the trees, each four lanes' leaf values
 * loaded by rapidscorer/scan.h's rs_leaves4_pd (in tree order: the same additions as obl_add_c) */
CPU_TARGET("avx2") __attribute__((always_inline))
static inline void obl_add_avx2_n(const obl_view* v, const uint8_t* ranks, int n_lanes,
                                  const double* leaf_value, const int64_t* leaf_off,
                                  double* acc, int64_t t0, int64_t t1, const int eq)
{
    uint8_t idx[OBL_LANES] __attribute__((aligned(32)));
    const int nc = (n_lanes + 3) / 4;
    __m256d a[8];
    for (int c = 0; c < 8; ++c)
        a[c] = _mm256_loadu_pd(acc + 4 * c);
    for (int64_t t = t0; t < t1; ++t) {
        _mm256_store_si256((__m256i*)idx, obl_tree_avx2(v, t, ranks, eq));
        const double* lv = leaf_value + leaf_off[t];
        for (int c = 0; c < nc; ++c)
            a[c] = _mm256_add_pd(a[c], rs_leaves4_pd(lv, idx + 4 * c));
    }
    for (int c = 0; c < 8; ++c)
        _mm256_storeu_pd(acc + 4 * c, a[c]);
}

/* four lanes' leaf values, their leaf numbers the low four bytes of w */
CPU_TARGET("avx2") __attribute__((always_inline))
static inline __m256d obl_leaves4_w(const double* lv, uint64_t w)
{
    const __m128d lo = _mm_loadh_pd(_mm_load_sd(lv + (w & 0xFF)), lv + ((w >> 8) & 0xFF));
    const __m128d hi = _mm_loadh_pd(_mm_load_sd(lv + ((w >> 16) & 0xFF)),
                                    lv + ((w >> 24) & 0xFF));
    return _mm256_insertf128_pd(_mm256_castpd128_pd256(lo), hi, 1);
}

/* obl_add_avx2_n for a whole group of 32 lanes: the sums in eight named registers (the
 * compiler keeps an array of them in memory, a load and a store a tree each), and the leaf
 * numbers taken from the register eight at a time as 64-bit words and split by shifts, where
 * extracting them a byte at a time takes two operations each (python -m
 * benchmarks.experiments.builds_ab --before <the former build> --shapes
 * cb-d6-uniform-1000,cb-d8-heavy-300) */
CPU_TARGET("avx2") __attribute__((always_inline))
static inline void obl_add_avx2_32(const obl_view* v, const uint8_t* ranks,
                                   const double* leaf_value, const int64_t* leaf_off,
                                   double* acc, int64_t t0, int64_t t1, const int eq)
{
    __m256d a0 = _mm256_loadu_pd(acc), a1 = _mm256_loadu_pd(acc + 4);
    __m256d a2 = _mm256_loadu_pd(acc + 8), a3 = _mm256_loadu_pd(acc + 12);
    __m256d a4 = _mm256_loadu_pd(acc + 16), a5 = _mm256_loadu_pd(acc + 20);
    __m256d a6 = _mm256_loadu_pd(acc + 24), a7 = _mm256_loadu_pd(acc + 28);
    for (int64_t t = t0; t < t1; ++t) {
        const __m256i leaf = obl_tree_avx2(v, t, ranks, eq);
        const __m128i lo = _mm256_castsi256_si128(leaf);
        const __m128i hi = _mm256_extracti128_si256(leaf, 1);
        const uint64_t w0 = (uint64_t)_mm_cvtsi128_si64(lo);
        const uint64_t w1 = (uint64_t)_mm_extract_epi64(lo, 1);
        const uint64_t w2 = (uint64_t)_mm_cvtsi128_si64(hi);
        const uint64_t w3 = (uint64_t)_mm_extract_epi64(hi, 1);
        const double* lv = leaf_value + leaf_off[t];
        a0 = _mm256_add_pd(a0, obl_leaves4_w(lv, w0));
        a1 = _mm256_add_pd(a1, obl_leaves4_w(lv, w0 >> 32));
        a2 = _mm256_add_pd(a2, obl_leaves4_w(lv, w1));
        a3 = _mm256_add_pd(a3, obl_leaves4_w(lv, w1 >> 32));
        a4 = _mm256_add_pd(a4, obl_leaves4_w(lv, w2));
        a5 = _mm256_add_pd(a5, obl_leaves4_w(lv, w2 >> 32));
        a6 = _mm256_add_pd(a6, obl_leaves4_w(lv, w3));
        a7 = _mm256_add_pd(a7, obl_leaves4_w(lv, w3 >> 32));
    }
    _mm256_storeu_pd(acc, a0);
    _mm256_storeu_pd(acc + 4, a1);
    _mm256_storeu_pd(acc + 8, a2);
    _mm256_storeu_pd(acc + 12, a3);
    _mm256_storeu_pd(acc + 16, a4);
    _mm256_storeu_pd(acc + 20, a5);
    _mm256_storeu_pd(acc + 24, a6);
    _mm256_storeu_pd(acc + 28, a7);
}

CPU_TARGET("avx2")
static void obl_add_avx2(const obl_view* v, const uint8_t* ranks, int n_lanes,
                         const double* leaf_value, const int64_t* leaf_off, double* acc,
                         int64_t t0, int64_t t1)
{
    if (n_lanes == OBL_LANES && v->level_eq == NULL)
        obl_add_avx2_32(v, ranks, leaf_value, leaf_off, acc, t0, t1, 0);
    else if (n_lanes == OBL_LANES)
        obl_add_avx2_32(v, ranks, leaf_value, leaf_off, acc, t0, t1, 1);
    else if (v->level_eq != NULL)
        obl_add_avx2_n(v, ranks, n_lanes, leaf_value, leaf_off, acc, t0, t1, 1);
    else
        obl_add_avx2_n(v, ranks, n_lanes, leaf_value, leaf_off, acc, t0, t1, 0);
}

/* the most trees a block of trees has (their leaf numbers are kept while the outputs' sums
 * are made) */
#define OBL_BLOCK_TREES 256

/* several outputs: the 32 leaf numbers of trees [t0, t1) first, at idx + (t - t0) OBL_LANES
 * (a tree whose levels are the previous tree's takes its numbers), then each output's sums
 * in registers across its trees, in tree order; nc: the chunks of 4 lanes, a constant where
 * inlined */
CPU_TARGET("avx2") __attribute__((always_inline))
static inline void obl_numbers_avx2(const obl_view* v, const uint8_t* ranks, int64_t t0,
                                    int64_t t1, uint8_t* idx, const int eq)
{
    for (int64_t t = t0; t < t1; ++t) {
        uint8_t* out = idx + (size_t)(t - t0) * OBL_LANES;
        if (t > t0 && v->same_prev != NULL && v->same_prev[t])
            _mm256_store_si256((__m256i*)out,
                               _mm256_load_si256((const __m256i*)(out - OBL_LANES)));
        else
            _mm256_store_si256((__m256i*)out, obl_tree_avx2(v, t, ranks, eq));
    }
}

CPU_TARGET("avx2") __attribute__((always_inline))
static inline void obl_add_outputs_avx2_n(const uint8_t* idx, int64_t t0, int64_t t1,
                                          const double* leaf_value, const int64_t* leaf_off,
                                          const int32_t* tree_group, int64_t n_outputs,
                                          double* acc, const int nc)
{
    for (int64_t g = 0; g < n_outputs; ++g) {
        double* ag = acc + g * OBL_LANES;
        __m256d a[8];
        for (int c = 0; c < nc; ++c)
            a[c] = _mm256_loadu_pd(ag + 4 * c);
        for (int64_t t = t0; t < t1; ++t) {
            if (tree_group[t] != g)
                continue;
            const double* lv = leaf_value + leaf_off[t];
            const uint8_t* q = idx + (size_t)(t - t0) * OBL_LANES;
            for (int c = 0; c < nc; ++c)
                a[c] = _mm256_add_pd(a[c], rs_leaves4_pd(lv, q + 4 * c));
        }
        for (int c = 0; c < nc; ++c)
            _mm256_storeu_pd(ag + 4 * c, a[c]);
    }
}

CPU_TARGET("avx2")
static void obl_add_outputs_avx2(const obl_view* v, const uint8_t* ranks, int n_lanes,
                                 const double* leaf_value, const int64_t* leaf_off,
                                 const int32_t* tree_group, int64_t n_outputs, double* acc,
                                 int64_t t0, int64_t t1)
{
    uint8_t idx[OBL_BLOCK_TREES * OBL_LANES] __attribute__((aligned(32)));
    if (v->level_eq != NULL)
        obl_numbers_avx2(v, ranks, t0, t1, idx, 1);
    else
        obl_numbers_avx2(v, ranks, t0, t1, idx, 0);
    const int nc = (n_lanes + 3) / 4;
    if (nc == 8)
        obl_add_outputs_avx2_n(idx, t0, t1, leaf_value, leaf_off, tree_group, n_outputs, acc,
                               8);
    else
        obl_add_outputs_avx2_n(idx, t0, t1, leaf_value, leaf_off, tree_group, n_outputs, acc,
                               nc);
}

/* the same in float32, each eight lanes' leaf values by rs_add_leaves8_ps, times the tree's
 * weight where there is one */
CPU_TARGET("avx2") __attribute__((always_inline))
static inline void obl_add_outputs_f32_avx2_n(const uint8_t* idx, int64_t t0, int64_t t1,
                                              const float* leaf_value, const int64_t* leaf_off,
                                              const int32_t* tree_group,
                                              const float* tree_weight, int64_t n_outputs,
                                              float* acc, const int nc)
{
    const int weighted = tree_weight != NULL;
    for (int64_t g = 0; g < n_outputs; ++g) {
        float* ag = acc + g * OBL_LANES;
        __m256 a[4];
        for (int c = 0; c < nc; ++c)
            a[c] = _mm256_loadu_ps(ag + 8 * c);
        for (int64_t t = t0; t < t1; ++t) {
            if (tree_group[t] != g)
                continue;
            const float* lv = leaf_value + leaf_off[t];
            const uint8_t* q = idx + (size_t)(t - t0) * OBL_LANES;
            const float w = weighted ? tree_weight[t] : 1.0f;
            for (int c = 0; c < nc; ++c)
                a[c] = rs_add_leaves8_ps(a[c], lv, q + 8 * c, weighted, w);
        }
        for (int c = 0; c < nc; ++c)
            _mm256_storeu_ps(ag + 8 * c, a[c]);
    }
}

CPU_TARGET("avx2")
static void obl_add_outputs_f32_avx2(const obl_view* v, const uint8_t* ranks, int n_lanes,
                                     const float* leaf_value, const int64_t* leaf_off,
                                     const int32_t* tree_group, const float* tree_weight,
                                     int64_t n_outputs, float* acc, int64_t t0, int64_t t1)
{
    uint8_t idx[OBL_BLOCK_TREES * OBL_LANES] __attribute__((aligned(32)));
    if (v->level_eq != NULL)
        obl_numbers_avx2(v, ranks, t0, t1, idx, 1);
    else
        obl_numbers_avx2(v, ranks, t0, t1, idx, 0);
    const int nc = (n_lanes + 7) / 8;
    if (nc == 4)
        obl_add_outputs_f32_avx2_n(idx, t0, t1, leaf_value, leaf_off, tree_group, tree_weight,
                                   n_outputs, acc, 4);
    else
        obl_add_outputs_f32_avx2_n(idx, t0, t1, leaf_value, leaf_off, tree_group, tree_weight,
                                   n_outputs, acc, nc);
}

/* the same in float32 (one output): the 32 sums in four registers, each eight lanes' leaf
 * values by rs_add_leaves8_ps, times the tree's weight where there is one */
CPU_TARGET("avx2") __attribute__((always_inline))
static inline void obl_add_f32_avx2_n(const obl_view* v, const uint8_t* ranks, int n_lanes,
                                      const float* leaf_value, const int64_t* leaf_off,
                                      const float* tree_weight, float* acc, int64_t t0,
                                      int64_t t1, const int eq)
{
    uint8_t idx[OBL_LANES] __attribute__((aligned(32)));
    const int nc = (n_lanes + 7) / 8;
    __m256 a[4];
    for (int c = 0; c < 4; ++c)
        a[c] = _mm256_loadu_ps(acc + 8 * c);
    for (int64_t t = t0; t < t1; ++t) {
        _mm256_store_si256((__m256i*)idx, obl_tree_avx2(v, t, ranks, eq));
        const float* lv = leaf_value + leaf_off[t];
        const int weighted = tree_weight != NULL;
        const float w = weighted ? tree_weight[t] : 1.0f;
        for (int c = 0; c < nc; ++c)
            a[c] = rs_add_leaves8_ps(a[c], lv, idx + 8 * c, weighted, w);
    }
    for (int c = 0; c < 4; ++c)
        _mm256_storeu_ps(acc + 8 * c, a[c]);
}

CPU_TARGET("avx2")
static void obl_add_f32_avx2(const obl_view* v, const uint8_t* ranks, int n_lanes,
                             const float* leaf_value, const int64_t* leaf_off,
                             const float* tree_weight, float* acc, int64_t t0, int64_t t1)
{
    if (v->level_eq != NULL)
        obl_add_f32_avx2_n(v, ranks, n_lanes, leaf_value, leaf_off, tree_weight, acc, t0, t1,
                           1);
    else
        obl_add_f32_avx2_n(v, ranks, n_lanes, leaf_value, leaf_off, tree_weight, acc, t0, t1,
                           0);
}
#endif

/* One row on its own (calls of 1 to ROW_CALL_MAX rows, _oblivious.pyx, where a group's 32
 * lanes would be mostly empty): its ranks, an int32 a column, by the searches the group's
 * paths make (AVX2's two-level search in float32 or float64 as the group's, or the portable
 * binary search) */
#if RS_HAVE_X86
CPU_TARGET("avx2")
static void obl_row_ranks_avx2(const obl_view* v, const double* row, int32_t* r)
{
    for (int64_t c = 0; c < v->n_cols; ++c) {
        const double x = row[v->col_feature[c]];
        if (v->piv32 != NULL && v->col_f32[c]) {
            /* a float32 column ranks the value rounded to float32 (it has no zero rule) */
            const float x32 = (float)x;
            r[c] = isnan(x32) ? v->nan_rank[c]
                              : rs_rank_f32_avx2(v->piv32 + 16 * c, v->bkt32 + v->bkt_off[c],
                                                 x32, v->npiv[c]);
        } else {
            const int s = obl_special(v, c, x);
            r[c] = s >= 0 ? s : rs_rank_avx2(v->piv + 16 * c, v->bkt + v->bkt_off[c], x,
                                             v->npiv[c]);
        }
    }
}
#endif

static inline void obl_row_ranks(int isa, const obl_view* v, const double* row, int32_t* r)
{
#if RS_HAVE_X86
    if (isa == 1 && cpu_isa_available(CPU_ISA_AVX2)) {
        obl_row_ranks_avx2(v, row, r);
        return;
    }
#endif
    (void)isa;
    for (int64_t c = 0; c < v->n_cols; ++c) {
        const double x = row[v->col_feature[c]];
        const int s = obl_special(v, c, x);
        r[c] = s >= 0 ? s : obl_rank_c(v->bkt + v->bkt_off[c],
                                       v->bkt_off[c + 1] - v->bkt_off[c], x);
    }
}

/* tree t's leaf for a row's ranks r */
static inline int obl_row_leaf(const obl_view* v, int64_t t, const int32_t* r)
{
    const int d = v->depth[t];
    const int32_t* col = v->level_col + t * OBL_MAX_DEPTH;
    const uint8_t* thr = v->level_thr + t * OBL_MAX_DEPTH;
    int leaf = 0;
    if (v->level_eq == NULL) {
        for (int k = 0; k < d; ++k)
            leaf = 2 * leaf + (r[col[k]] > thr[k]);
        return leaf;
    }
    const uint8_t* eq = v->level_eq + t * OBL_MAX_DEPTH;
    for (int k = 0; k < d; ++k)
        leaf = 2 * leaf + (eq[k] ? r[col[k]] != thr[k] : r[col[k]] > thr[k]);
    return leaf;
}

#if RS_HAVE_X86
/* the leaves of trees [t0, t1) (t0 a multiple of 8) for a row's ranks r, 8 trees a register:
 * a level's ranks gathered by column, compared with its thresholds, leaf = 2 leaf + bit */
CPU_TARGET("avx2") __attribute__((always_inline))
static inline void obl_row_leaves_avx2_n(const obl_view* v, const int32_t* r, int64_t t0,
                                         int64_t t1, int32_t* leaf, const int eq)
{
    const int D = v->row_depth;
    const __m256i ones = _mm256_set1_epi32(-1);
    for (int64_t b = t0 / 8; b * 8 < t1; ++b) {
        const int32_t* col = v->row_col8 + b * D * 8;
        const int32_t* thr = v->row_thr8 + b * D * 8;
        __m256i lf = _mm256_setzero_si256();
        for (int k = 0; k < D; ++k) {
            const __m256i rk = _mm256_i32gather_epi32(
                (const int*)r, _mm256_loadu_si256((const __m256i*)(col + 8 * k)), 4);
            const __m256i tk = _mm256_loadu_si256((const __m256i*)(thr + 8 * k));
            __m256i right = _mm256_cmpgt_epi32(rk, tk);
            if (eq) {
                const __m256i ne = _mm256_xor_si256(_mm256_cmpeq_epi32(rk, tk), ones);
                right = _mm256_blendv_epi8(right, ne, _mm256_loadu_si256(
                    (const __m256i*)(v->row_eq8 + b * D * 8 + 8 * k)));
            }
            lf = _mm256_sub_epi32(_mm256_add_epi32(lf, lf), right);
        }
        _mm256_storeu_si256((__m256i*)(leaf + (b * 8 - t0)), lf);
    }
}

CPU_TARGET("avx2")
static void obl_row_leaves_avx2(const obl_view* v, const int32_t* r, int64_t t0, int64_t t1,
                                int32_t* leaf)
{
    if (v->row_eq8 != NULL)
        obl_row_leaves_avx2_n(v, r, t0, t1, leaf, 1);
    else
        obl_row_leaves_avx2_n(v, r, t0, t1, leaf, 0);
}
#endif

/* the leaves of trees [t0, t1) for a row's ranks r (AVX2: 8 trees at once, leaf holding 8
 * more than t1 - t0 rounded up; portable C: a tree at a time, a tree whose levels are the
 * previous tree's taking its leaf) */
static inline void obl_row_leaves(int isa, const obl_view* v, const int32_t* r, int64_t t0,
                                  int64_t t1, int32_t* leaf)
{
#if RS_HAVE_X86
    if (isa == 1 && v->row_col8 != NULL && cpu_isa_available(CPU_ISA_AVX2)) {
        obl_row_leaves_avx2(v, r, t0, t1, leaf);
        return;
    }
#endif
    (void)isa;
    for (int64_t t = t0; t < t1; ++t)
        leaf[t - t0] = (t > t0 && v->same_prev != NULL && v->same_prev[t])
                       ? leaf[t - t0 - 1] : obl_row_leaf(v, t, r);
}

/* The row's sums into acc[0 .. n_outputs) (set to the base scores by the caller), each
 * output's trees in order. The leaves of a block of trees are found first and their values
 * added after: the loads of the values (from a model of hundreds of KB, beyond the L2) do
 * not wait on one another's sums, where a loop finding a leaf and adding its value would
 * hold one load in flight a tree. */
static inline void obl_row_add(int isa, const obl_view* v, const int32_t* r,
                               const double* leaf_value, const int64_t* leaf_off,
                               const int32_t* tree_group, int64_t n_outputs, double* acc)
{
    int32_t leaf[OBL_BLOCK_TREES + 8];
    for (int64_t t0 = 0; t0 < v->n_trees; t0 += OBL_BLOCK_TREES) {
        const int64_t t1 = t0 + OBL_BLOCK_TREES < v->n_trees ? t0 + OBL_BLOCK_TREES
                                                             : v->n_trees;
        obl_row_leaves(isa, v, r, t0, t1, leaf);
        if (n_outputs == 1) {       /* the sum in a register */
            double a = acc[0];
            for (int64_t t = t0; t < t1; ++t)
                a += leaf_value[leaf_off[t] + leaf[t - t0]];
            acc[0] = a;
        } else {
            for (int64_t t = t0; t < t1; ++t)
                acc[tree_group[t]] += leaf_value[leaf_off[t] + leaf[t - t0]];
        }
    }
}

/* the same in float32 (XGBoost forests), times the tree's weight where there is one */
static inline void obl_row_add_f32(int isa, const obl_view* v, const int32_t* r,
                                   const float* leaf_value, const int64_t* leaf_off,
                                   const int32_t* tree_group, const float* tree_weight,
                                   int64_t n_outputs, float* acc)
{
    int32_t leaf[OBL_BLOCK_TREES + 8];
    for (int64_t t0 = 0; t0 < v->n_trees; t0 += OBL_BLOCK_TREES) {
        const int64_t t1 = t0 + OBL_BLOCK_TREES < v->n_trees ? t0 + OBL_BLOCK_TREES
                                                             : v->n_trees;
        obl_row_leaves(isa, v, r, t0, t1, leaf);
        if (n_outputs == 1 && tree_weight == NULL) {
            float a = acc[0];
            for (int64_t t = t0; t < t1; ++t)
                a = a + leaf_value[leaf_off[t] + leaf[t - t0]];
            acc[0] = a;
            continue;
        }
        for (int64_t t = t0; t < t1; ++t) {
            const float x = leaf_value[leaf_off[t] + leaf[t - t0]];
            float* g = acc + tree_group[t];
            *g = tree_weight != NULL ? qs_weighted_add(*g, x, tree_weight[t]) : *g + x;
        }
    }
}

/* the group's ranks on `isa` (1: AVX2, else portable C); xt: scratch of n_cols x OBL_LANES
 * floats, 32-byte aligned */
static inline void obl_ranks(int isa, const obl_view* v, const double* rows, int64_t F,
                             int n_lanes, float* xt, uint8_t* ranks)
{
#if RS_HAVE_X86
    if (isa == 1 && cpu_isa_available(CPU_ISA_AVX2)) {
        obl_ranks_avx2(v, rows, F, n_lanes, xt, ranks);
        return;
    }
#endif
    (void)isa;
    obl_ranks_c(v, rows, F, n_lanes, ranks);
}

/* OBL_LEAF_BLOCK: the bytes of leaf values a block of trees holds at most (one tree at
 * least). A block of groups is scored a block of trees at a time, each block of trees added
 * to every group before the next, so that its leaf values are read from the cache where the
 * whole model's do not fit (300 trees of depth 8: 600 KB); each row still adds its trees in
 * order. The size is re-measured against 32 KB and a single block (0) by python -m
 * benchmarks.experiments.oblivious_floor --leaf-block 0,16384,32768 --block-groups 8 */
#ifndef OBL_LEAF_BLOCK
#define OBL_LEAF_BLOCK 16384
#endif

/* the end of the block of trees from t0 (values of `size` bytes) */
static inline int64_t obl_block_end(const obl_view* v, int64_t t0, int64_t size)
{
    int64_t bytes = size << v->depth[t0], t = t0 + 1;
    if (OBL_LEAF_BLOCK <= 0)
        return t0 + OBL_BLOCK_TREES < v->n_trees ? t0 + OBL_BLOCK_TREES : v->n_trees;
    while (t < v->n_trees && t - t0 < OBL_BLOCK_TREES
           && (bytes += size << v->depth[t]) <= OBL_LEAF_BLOCK)
        ++t;
    return t;
}

/* The sums of n_groups groups into their acc (set to the base scores by the caller): group
 * g's ranks at ranks + g n_cols OBL_LANES, its sums at acc + g n_outputs OBL_LANES, every
 * group full but the last (n_last lanes) */
static inline void obl_add(int isa, const obl_view* v, const uint8_t* ranks, int n_groups,
                           int n_last, const double* leaf_value, const int64_t* leaf_off,
                           const int32_t* tree_group, int64_t n_outputs, double* acc)
{
    for (int64_t t0 = 0, t1; t0 < v->n_trees; t0 = t1) {
        t1 = obl_block_end(v, t0, sizeof(double));
        for (int g = 0; g < n_groups; ++g) {
            const uint8_t* r = ranks + (size_t)g * v->n_cols * OBL_LANES;
            double* a = acc + (size_t)g * n_outputs * OBL_LANES;
            const int n_lanes = g == n_groups - 1 ? n_last : OBL_LANES;
#if RS_HAVE_X86
            if (isa == 1 && cpu_isa_available(CPU_ISA_AVX2)) {
                if (n_outputs == 1)
                    obl_add_avx2(v, r, n_lanes, leaf_value, leaf_off, a, t0, t1);
                else
                    obl_add_outputs_avx2(v, r, n_lanes, leaf_value, leaf_off, tree_group,
                                         n_outputs, a, t0, t1);
                continue;
            }
#endif
            (void)isa;
            obl_add_c(v, r, n_lanes, leaf_value, leaf_off, tree_group, a, t0, t1);
        }
    }
}

/* the same in float32 (XGBoost forests) */
static inline void obl_add_f32(int isa, const obl_view* v, const uint8_t* ranks, int n_groups,
                               int n_last, const float* leaf_value, const int64_t* leaf_off,
                               const int32_t* tree_group, const float* tree_weight,
                               int64_t n_outputs, float* acc)
{
    for (int64_t t0 = 0, t1; t0 < v->n_trees; t0 = t1) {
        t1 = obl_block_end(v, t0, sizeof(float));
        for (int g = 0; g < n_groups; ++g) {
            const uint8_t* r = ranks + (size_t)g * v->n_cols * OBL_LANES;
            float* a = acc + (size_t)g * n_outputs * OBL_LANES;
            const int n_lanes = g == n_groups - 1 ? n_last : OBL_LANES;
#if RS_HAVE_X86
            if (isa == 1 && cpu_isa_available(CPU_ISA_AVX2)) {
                if (n_outputs == 1)
                    obl_add_f32_avx2(v, r, n_lanes, leaf_value, leaf_off, tree_weight, a, t0,
                                     t1);
                else
                    obl_add_outputs_f32_avx2(v, r, n_lanes, leaf_value, leaf_off, tree_group,
                                             tree_weight, n_outputs, a, t0, t1);
                continue;
            }
#endif
            (void)isa;
            obl_add_f32_c(v, r, n_lanes, leaf_value, leaf_off, tree_group, tree_weight, a, t0,
                          t1);
        }
    }
}

#endif
