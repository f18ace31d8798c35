/* RapidScorer's row loops over a checked layout (view.h, check.h): a call's rows in groups of
 * 32 or 64 lanes, each ranked once, then scanned block by block (scan.h) or walked level by
 * level (levels.h), the exit leaves added in tree order in the source library's precision
 * (forest.h). The Python extension (_rapidscorer.pyx) and the C library (capi/) run these
 * same loops, each on its own threads: a call is planned as items (rs_plan_call), and any
 * thread may run any item (rs_run_item) on its own scratch (rs_carve). */
#ifndef QUICKSCORER_ALGORITHMS_RAPIDSCORER_RUN_H
#define QUICKSCORER_ALGORITHMS_RAPIDSCORER_RUN_H

#include <stdint.h>
#include <string.h>

#include "quickscorer/algorithms/rapidscorer/gw.h"
#include "quickscorer/algorithms/rapidscorer/levels.h"
#include "quickscorer/algorithms/rapidscorer/scan.h"
#include "quickscorer/algorithms/rapidscorer/view.h"
#include "quickscorer/forest.h"

static inline int64_t rs_min64(int64_t a, int64_t b) { return a < b ? a : b; }

static inline uint8_t* rs_align64(uint8_t* p)
{
    return (uint8_t*)(((uintptr_t)p + 63) & ~(uintptr_t)63);
}

/* Scratch bytes of one group of a level chunk: its columns, then its scores. */
static inline int64_t rs_chunk_stride(int64_t lanes, int64_t n_cols)
{
    return (lanes * n_cols + 63) / 64 * 64 + lanes * 8;
}

/* Scratch bytes of one group of a scan chunk: its ranks, its lanes each segment kind
 * skips, then its scores. */
static inline int64_t rs_scan_stride(int64_t lanes, int64_t n_slots)
{
    return (lanes * n_slots + 63) / 64 * 64 + (n_slots * 8 * RS_SEGMENT_KINDS + 63) / 64 * 64
           + lanes * 8;
}

/* the columns of a group's level or gathered walk (levels.h rs_lv_columns): the ranks, then
 * the combos of the one or the other */
static inline int64_t rs_walk_cols(const rs_view* r)
{
    return r->n_slots + (r->n_lv_combos > r->n_gw_combos ? r->n_lv_combos : r->n_gw_combos);
}

/* whether the gathered walk scores a call's groups of 64 lanes on path isa: one output of
 * float64 sums, no linear leaves, no exit leaves asked */
static inline int rs_gw_runs(const qs_forest* f, const rs_view* r, int isa)
{
    return RS_GW_COMPILED && r->gw_on && isa == RS_ISA_AVX512 && f->n_outputs == 1 &&
           !f->has_linear && f->family != QS_FAMILY_XGBOOST;
}

/* n groups of 64 lanes on the gathered walk, group k's columns at cols + k * stride and its
 * scores at (double*)(acc + k * stride): every group through each chunk of RS_GW_TREES trees
 * in turn (the chunk's records stay in cache), each group's trees in order, and while the
 * groups walk a chunk each brings its share of the next chunk's records towards L2. */
static inline void rs_gw_groups(const rs_view* r, int64_t n_trees, uint8_t* cols, char* acc,
                                int64_t stride, int64_t n)
{
    for (int64_t t0 = 0; t0 < n_trees; t0 += RS_GW_TREES) {
        int64_t pf_bytes;
        const char* pf = rs_gw_chunk_records(r->gw_nodes, r->gw_roots, r->gw_park,
                                             t0 + RS_GW_TREES, n_trees, &pf_bytes);
        int64_t share = (pf_bytes / n + 255) / 256 * 256;
        for (int64_t k = 0; k < n; k++) {
            int64_t from = rs_min64(pf_bytes, k * share);
            rs_gw_trees(r->gw_nodes, r->gw_roots, r->gw_park, t0,
                        rs_min64(n_trees, t0 + RS_GW_TREES), cols + k * stride,
                        (double*)(acc + k * stride), pf + from,
                        rs_min64(pf_bytes - from, share));
        }
    }
}

/* Scratch bytes one thread needs on path isa (a multiple of 64). */
static inline int64_t rs_scratch_need(const rs_view* r, int isa, int64_t n_outputs)
{
    int64_t lanes = rs_lanes(isa);
    int64_t F = r->n_features, S = r->n_slots;
    int64_t total = lanes * F * 8                 /* the group's converted rows (float64) */
                    + S * 8 * RS_SEGMENT_KINDS    /* lanes each segment kind of a slot skips */
                    + lanes * S                   /* ranks */
                    + lanes                       /* exit leaves of one tree */
                    + lanes * r->n_cat_slots      /* categorical codes */
                    + n_outputs * lanes * 8       /* the group's scores */
                    + r->max_block_bytes * lanes;
    total += lanes * rs_walk_cols(r) + 64 + 2 * lanes;   /* the walks' columns, carved always */
    {   /* the chunk of groups: the level walk's columns or the scan's ranks */
        int64_t lv = r->lv_on ? rs_chunk_stride(lanes, S + r->n_lv_combos) : 0;
        int64_t sc = rs_scan_stride(lanes, S);
        total += (r->lv_chunk > 1 ? r->lv_chunk : 1) * (lv > sc ? lv : sc);
    }
    if (r->gw_on && isa == RS_ISA_AVX512)    /* the only path that walks them (rs_gw_runs) */
        total += RS_GW_GROUPS * rs_chunk_stride(lanes, S + r->n_gw_combos);
    return (total + 64 * 8 + 63) / 64 * 64;
}

/* one thread's scratch (rs_scratch_need bytes), carved */
typedef struct {
    uint8_t* state;   /* the byte-transposed bitvectors of a block */
    double* rows;     /* the group's converted rows */
    double* acc64;    /* its scores (acc32 over the same bytes) */
    uint64_t* skip;
    uint8_t* ranks;
    uint8_t* idx;
    uint8_t* codes;
    uint8_t* cols;    /* the level path's columns */
    uint8_t* chunk;   /* rs_level_chunk's groups */
} rs_bufs;

static inline rs_bufs rs_carve(const rs_view* r, uint8_t* base, int64_t lanes,
                               int64_t n_outputs)
{
    rs_bufs b;
    b.state = rs_align64(base);
    b.rows = (double*)rs_align64(b.state + r->max_block_bytes * lanes);
    b.acc64 = b.rows + lanes * r->n_features;
    b.skip = (uint64_t*)(b.acc64 + n_outputs * lanes);
    b.ranks = rs_align64((uint8_t*)(b.skip + RS_SEGMENT_KINDS * r->n_slots));
    b.idx = b.ranks + lanes * r->n_slots;
    b.codes = b.idx + lanes;
    b.cols = rs_align64(b.codes + lanes * r->n_cat_slots);
    b.chunk = rs_align64(b.cols + lanes * rs_walk_cols(r) + 2 * lanes);
    return b;
}

/* Leave in state the byte rows of block b's trees for the group (missing values take their
 * default sides in the scan: rapidscorer.layout's half-features; then the categorical nodes,
 * on the group's codes). */
static inline void rs_block_bits(const rs_view* r, int isa, int64_t b, int64_t lanes,
                                 const uint8_t* ranks, const uint64_t* skip,
                                 const uint8_t* codes, uint8_t* state)
{
    int64_t t0 = r->block_starts[b];
    int64_t n_bytes = r->tree_byte_offsets[r->block_starts[b + 1]] - r->tree_byte_offsets[t0];
    memset(state, 0xFF, (size_t)(n_bytes * lanes));
    rs_block_scan(isa, r->segments + r->block_segments[b],
                  r->block_segments[b + 1] - r->block_segments[b], r->entries, ranks, skip,
                  state);
    rs_block_cat(isa, codes, r->cat_node_slot, r->cat_tables, r->cat_entry_offsets,
                 r->cat_entries, r->block_cat[b], r->block_cat[b + 1], state);
}

/* The tree's own number of the leaf at a position of the layout's order. */
static inline int32_t rs_leaf_number(const rs_view* r, int64_t base, uint8_t position)
{
    return r->leaf_order != NULL ? r->leaf_order[base + position] : position;
}

/* Add tree t's exit leaves idx (positions) to the group's scores (acc[g * lanes + l]), tree
 * order; lv64 / lv32: the leaf values by position (rs_score_group's). */
static inline void rs_add_leaves(const qs_forest* f, const rs_view* r, int isa, int64_t t,
                                 const uint8_t* idx, int64_t lanes, int64_t n_lanes,
                                 const double* rows, const double* lv64, const float* lv32,
                                 double* acc64, float* acc32)
{
    int64_t g = f->tree_group[t];
    int64_t base = f->tree_leaf_offset[t];
    int n = (int)(f->tree_leaf_offset[t + 1] - base);
    if (f->has_linear) {
        for (int64_t l = 0; l < n_lanes; l++)
            qs_scores_add_strided(f, t, rs_leaf_number(r, base, idx[l]),
                                  rows + l * f->n_features, acc64 + l, acc32 + l, lanes);
    } else if (f->family == QS_FAMILY_XGBOOST) {
        rs_add_f32(isa, idx, lv32 + base, n, acc32 + g * lanes, f->tree_weight != NULL,
                   f->tree_weight != NULL ? f->tree_weight[t] : 1.0f);
    } else {
        rs_add_f64(isa, idx, lv64 + base, n, acc64 + g * lanes);
    }
}

/* rs_score_group's trees level by level (rapidscorer.levels.level_arrays), once the ranks
 * are in; the slots of trees walked lane by lane below their split (uint16) go past the
 * group's columns. */
static inline void rs_level_group(const qs_forest* f, const rs_view* r, int isa,
                                  int64_t n_lanes, const uint8_t* ranks, const uint64_t* skip,
                                  uint8_t* cols, uint8_t* idx, double* acc64, float* acc32,
                                  int32_t* leaves, int64_t leaf_stride)
{
    int64_t lanes = rs_lanes(isa);
    uint16_t* slot = (uint16_t*)(cols + lanes * (r->n_slots + r->n_lv_combos));
    rs_lv_columns(ranks, skip, r->n_slots, r->lv_combos, r->n_lv_combos, (int)lanes, cols);
    if (leaves == NULL && f->n_outputs == 1) {   /* the sums in registers, where the path can */
        if (f->family == QS_FAMILY_XGBOOST) {
            if (rs_lv_sum_f32(isa, &r->lv, r->lv_value_f32, f->tree_weight, 0, f->n_trees,
                              cols, acc32, (int)n_lanes))
                return;
        } else if (rs_lv_sum_f64(isa, &r->lv, r->lv_value, 0, f->n_trees, cols, acc64,
                                 (int)n_lanes)) {
            return;
        }
    }
    for (int64_t t = 0; t < f->n_trees; t++) {
        /* every lane's slot: the adds below read all of them */
        rs_lv_tree(isa, &r->lv, t, cols, idx, slot, (int)lanes);
        int deep = r->lv.split[t] < r->lv.depth[t];
        int64_t so = r->lv.slot_off[t];
        if (leaves != NULL) {
            for (int64_t l = 0; l < n_lanes; l++)
                leaves[l * leaf_stride + t] = r->lv_slot_leaf[so + (deep ? slot[l] : idx[l])];
            continue;
        }
        int64_t g = f->tree_group[t];
        int n = (int)(r->lv.slot_off[t + 1] - so);
        int weighted = f->tree_weight != NULL;
        float w = weighted ? f->tree_weight[t] : 1.0f;
        if (f->family == QS_FAMILY_XGBOOST && deep)
            rs_lv_add_f32(slot, r->lv_value_f32 + so, acc32 + g * lanes, (int)lanes, weighted,
                          w);
        else if (f->family == QS_FAMILY_XGBOOST)
            rs_add_f32(isa, idx, r->lv_value_f32 + so, n, acc32 + g * lanes, weighted, w);
        else if (deep)
            rs_lv_add_f64(slot, r->lv_value + so, acc64 + g * lanes, (int)lanes);
        else
            rs_add_f64(isa, idx, r->lv_value + so, n, acc64 + g * lanes);
    }
}

/* Exit leaves of every tree for the group's n_lanes converted rows (b->rows): into
 * leaves[l * leaf_stride + t] when leaves is not NULL, else added to the group's scores
 * (b->acc64, as float32 over the same bytes for XGBoost; set to the base scores here) in
 * tree order. */
static inline void rs_score_group(const qs_forest* f, const rs_view* r, int isa,
                                  int64_t n_lanes, const rs_bufs* b, int32_t* leaves,
                                  int64_t leaf_stride)
{
    int64_t lanes = rs_lanes(isa);
    const double* rows = b->rows;
    double* acc64 = b->acc64;
    float* acc32 = (float*)b->acc64;
    if (leaves == NULL)
        for (int64_t k = 0; k < f->n_outputs; k++)
            for (int64_t l = 0; l < lanes; l++) {
                if (f->family == QS_FAMILY_XGBOOST)
                    acc32[k * lanes + l] = (float)f->base_score[k];
                else
                    acc64[k * lanes + l] = f->base_score[k];
            }
    rs_group_ranks(isa, rows, f->n_features, (int)n_lanes, r->model_used, r->n_model_used,
                   r->slot_column, r->rank_pivots, r->rank_buckets, r->rank_pivots32,
                   r->rank_buckets32, r->rank_bucket_offsets, r->rank_zero, b->ranks, b->skip);
    if (leaves == NULL && rs_gw_runs(f, r, isa)) {
        rs_lv_columns(b->ranks, b->skip, r->n_slots, r->gw_combos, r->n_gw_combos, 64, b->cols);
        rs_gw_groups(r, f->n_trees, b->cols, (char*)acc64, 0, 1);
        return;
    }
    if (r->lv_on && lanes >= r->lv_min_lanes) {
        rs_level_group(f, r, isa, n_lanes, b->ranks, b->skip, b->cols, b->idx, acc64, acc32,
                       leaves, leaf_stride);
        return;
    }
    for (int64_t k = 0; k < r->n_cat_slots; k++) {   /* each categorical slot's code a lane */
        for (int64_t l = 0; l < n_lanes; l++)
            b->codes[k * lanes + l] = (uint8_t)qs_category_code(
                f->family, rows[l * f->n_features + r->cat_slot_column[k]]);
        for (int64_t l = n_lanes; l < lanes; l++)
            b->codes[k * lanes + l] = QS_CAT_NONE;
    }
    /* one output, no linear leaves: a block's trees in one call (scores in registers) */
    int fused = leaves == NULL && f->n_outputs == 1 && !f->has_linear;
    const double* lv64 = r->leaf_order != NULL ? r->leaf_value : f->leaf_value;
    const float* lv32 = r->leaf_order != NULL ? r->leaf_value_f32 : f->leaf_value_f32;
    for (int64_t bl = 0; bl < r->n_blocks; bl++) {
        rs_block_bits(r, isa, bl, lanes, b->ranks, b->skip, b->codes, b->state);
        int64_t t0 = r->block_starts[bl], t1 = r->block_starts[bl + 1];
        if (fused) {
            if (f->family == QS_FAMILY_XGBOOST) {
                if (rs_block_add_f32(isa, b->state, r->tree_byte_offsets, t0, t1, lv32,
                                     f->tree_leaf_offset, f->tree_weight, acc32, (int)n_lanes))
                    continue;
            } else if (rs_block_add_f64(isa, r->wide_add, b->state, r->tree_byte_offsets, t0,
                                        t1, lv64, f->tree_leaf_offset, acc64, (int)n_lanes)) {
                continue;
            }
        }
        for (int64_t t = t0; t < t1; t++) {
            rs_exits(isa,
                     b->state + (r->tree_byte_offsets[t] - r->tree_byte_offsets[t0]) * lanes,
                     (int)(r->tree_byte_offsets[t + 1] - r->tree_byte_offsets[t]), b->idx);
            if (leaves != NULL) {
                for (int64_t l = 0; l < n_lanes; l++)
                    leaves[l * leaf_stride + t] =
                        rs_leaf_number(r, f->tree_leaf_offset[t], b->idx[l]);
            } else {
                rs_add_leaves(f, r, isa, t, b->idx, lanes, n_lanes, rows, lv64, lv32, acc64,
                              acc32);
            }
        }
    }
}

/* The path of a group of n_lanes rows: on the 64-lane paths, a group of at most 32 rows runs
 * on the 32-lane AVX2 path (measured faster than a 64-lane group that is half empty). */
static inline int rs_group_isa(int isa, int64_t n_lanes)
{
    if ((isa == RS_ISA_AVX512 || isa == RS_ISA_AVX2_WIDE) && n_lanes <= 32)
        return RS_ISA_AVX2;
    return isa;
}

/* a call's input rows: row i's value j at base + i * row_stride + j * col_stride (bytes),
 * float32 values where is32, else float64 */
typedef struct {
    const char* base;
    int64_t row_stride;
    int64_t col_stride;
    int is32;
    int64_t n_rows;
} rs_rows;

/* Row i of X as the source library sees it (forest.h qs_convert), widened to double. */
static inline void rs_load_row(const qs_forest* f, const rs_rows* X, int64_t i, double* buf)
{
    const char* p = X->base + i * X->row_stride;
    if (X->col_stride == (X->is32 ? 4 : 8)) {
        qs_load_row_ptr(f, p, X->is32, buf);
        return;
    }
    for (int64_t j = 0; j < f->n_features; j++) {
        const char* q = p + j * X->col_stride;
        double v = X->is32 ? (double)*(const float*)q : *(const double*)q;
        buf[j] = qs_convert(f->family, v);
    }
}

/* The scores of a chunk's groups g0 .. g1 - 1 (group gi's at chunk + (gi - g0) * stride +
 * acc_at, float32 where xgb) to out64 / out32 [i - g0 * lanes] for row i < n_rows. */
static inline void rs_chunk_out(const uint8_t* chunk, int64_t stride, int64_t acc_at,
                                int64_t n_rows, int64_t g0, int64_t g1, int64_t lanes, int xgb,
                                double* out64, float* out32)
{
    for (int64_t gi = g0; gi < g1; gi++) {
        int64_t i = gi * lanes;
        int64_t n_lanes = rs_min64(lanes, n_rows - i);
        const double* acc64 = (const double*)(chunk + (gi - g0) * stride + acc_at);
        for (int64_t l = 0; l < n_lanes; l++) {
            if (xgb)
                out32[i - g0 * lanes + l] = ((const float*)acc64)[l];
            else
                out64[i - g0 * lanes + l] = acc64[l];
        }
    }
}

/* Groups g0 .. g1 - 1 of a one-output model (every group on the level path, in registers:
 * rs_plan_call checks): each group's columns and base scores into the chunk, then every
 * block of trees for each group in turn (the block's level fields stay in cache for the
 * chunk), the trees of each group in order: the same sums as one group at a time. The scores
 * go to out64 / out32 [i - g0 * lanes] for row i. */
static inline void rs_level_chunk(const qs_forest* f, const rs_view* r, int isa,
                                  const rs_rows* X, int64_t g0, int64_t g1, int64_t lanes,
                                  const rs_bufs* b, double* out64, float* out32)
{
    int64_t F = f->n_features;
    int64_t stride = rs_chunk_stride(lanes, r->n_slots + r->n_lv_combos);
    int64_t acc_at = stride - lanes * 8;   /* a group's scores after its columns */
    int xgb = f->family == QS_FAMILY_XGBOOST;
    for (int64_t gi = g0; gi < g1; gi++) {
        int64_t i = gi * lanes;
        int64_t n_lanes = rs_min64(lanes, X->n_rows - i);
        int gisa = rs_group_isa(isa, n_lanes);
        int64_t gl = rs_lanes(gisa);
        uint8_t* cg = b->chunk + (gi - g0) * stride;
        double* acc64 = (double*)(cg + acc_at);
        float* acc32 = (float*)acc64;
        for (int64_t l = 0; l < n_lanes; l++) rs_load_row(f, X, i + l, b->rows + l * F);
        for (int64_t l = 0; l < gl; l++) {
            if (xgb)
                acc32[l] = (float)f->base_score[0];
            else
                acc64[l] = f->base_score[0];
        }
        rs_group_ranks(gisa, b->rows, F, (int)n_lanes, r->model_used, r->n_model_used,
                       r->slot_column, r->rank_pivots, r->rank_buckets, r->rank_pivots32,
                       r->rank_buckets32, r->rank_bucket_offsets, r->rank_zero, b->ranks,
                       b->skip);
        rs_lv_columns(b->ranks, b->skip, r->n_slots, r->lv_combos, r->n_lv_combos, (int)gl, cg);
    }
    for (int64_t bl = 0; bl < r->n_lv_blocks; bl++)
        for (int64_t gi = g0; gi < g1; gi++) {
            int64_t n_lanes = rs_min64(lanes, X->n_rows - gi * lanes);
            int gisa = rs_group_isa(isa, n_lanes);
            uint8_t* cg = b->chunk + (gi - g0) * stride;
            double* acc64 = (double*)(cg + acc_at);
            if (xgb)
                rs_lv_sum_f32(gisa, &r->lv, r->lv_value_f32, f->tree_weight,
                              r->lv_block_starts[bl], r->lv_block_starts[bl + 1], cg,
                              (float*)acc64, (int)n_lanes);
            else
                rs_lv_sum_f64(gisa, &r->lv, r->lv_value, r->lv_block_starts[bl],
                              r->lv_block_starts[bl + 1], cg, acc64, (int)n_lanes);
        }
    rs_chunk_out(b->chunk, stride, acc_at, X->n_rows, g0, g1, lanes, xgb, out64, out32);
}

/* Groups g0 .. g1 - 1 of a one-output model on the scan, with no categorical and no linear
 * node (rs_plan_call checks): each group's ranks and base scores into the chunk, then every
 * tree block for each group in turn, so that the block's entries and leaf values stay in
 * cache across the chunk's groups where one group at a time reads the whole model again
 * from memory: the same sums, tree order kept. The scores go to out64 / out32
 * [i - g0 * lanes] for row i. */
static inline void rs_scan_chunk(const qs_forest* f, const rs_view* r, int isa,
                                 const rs_rows* X, int64_t g0, int64_t g1, int64_t lanes,
                                 const rs_bufs* b, double* out64, float* out32)
{
    int64_t F = f->n_features, S = r->n_slots;
    int64_t stride = rs_scan_stride(lanes, S);
    int64_t skip_at = (lanes * S + 63) / 64 * 64;
    int64_t acc_at = stride - lanes * 8;
    int xgb = f->family == QS_FAMILY_XGBOOST;
    const double* lv64 = r->leaf_order != NULL ? r->leaf_value : f->leaf_value;
    const float* lv32 = r->leaf_order != NULL ? r->leaf_value_f32 : f->leaf_value_f32;
    for (int64_t gi = g0; gi < g1; gi++) {
        int64_t i = gi * lanes;
        int64_t n_lanes = rs_min64(lanes, X->n_rows - i);
        int gisa = rs_group_isa(isa, n_lanes);
        int64_t gl = rs_lanes(gisa);
        uint8_t* cg = b->chunk + (gi - g0) * stride;
        double* acc64 = (double*)(cg + acc_at);
        for (int64_t l = 0; l < n_lanes; l++) rs_load_row(f, X, i + l, b->rows + l * F);
        for (int64_t l = 0; l < gl; l++) {
            if (xgb)
                ((float*)acc64)[l] = (float)f->base_score[0];
            else
                acc64[l] = f->base_score[0];
        }
        rs_group_ranks(gisa, b->rows, F, (int)n_lanes, r->model_used, r->n_model_used,
                       r->slot_column, r->rank_pivots, r->rank_buckets, r->rank_pivots32,
                       r->rank_buckets32, r->rank_bucket_offsets, r->rank_zero, cg,
                       (uint64_t*)(cg + skip_at));
    }
    for (int64_t bl = 0; bl < r->n_blocks; bl++) {
        int64_t t0 = r->block_starts[bl], t1 = r->block_starts[bl + 1];
        for (int64_t gi = g0; gi < g1; gi++) {
            int64_t n_lanes = rs_min64(lanes, X->n_rows - gi * lanes);
            int gisa = rs_group_isa(isa, n_lanes);
            int64_t gl = rs_lanes(gisa);
            uint8_t* cg = b->chunk + (gi - g0) * stride;
            double* acc64 = (double*)(cg + acc_at);
            float* acc32 = (float*)acc64;
            rs_block_bits(r, gisa, bl, gl, cg, (const uint64_t*)(cg + skip_at), b->codes,
                          b->state);
            if (xgb ? rs_block_add_f32(gisa, b->state, r->tree_byte_offsets, t0, t1, lv32,
                                       f->tree_leaf_offset, f->tree_weight, acc32,
                                       (int)n_lanes)
                    : rs_block_add_f64(gisa, r->wide_add, b->state, r->tree_byte_offsets, t0,
                                       t1, lv64, f->tree_leaf_offset, acc64, (int)n_lanes))
                continue;
            for (int64_t t = t0; t < t1; t++) {
                rs_exits(gisa,
                         b->state + (r->tree_byte_offsets[t] - r->tree_byte_offsets[t0]) * gl,
                         (int)(r->tree_byte_offsets[t + 1] - r->tree_byte_offsets[t]), b->idx);
                rs_add_leaves(f, r, gisa, t, b->idx, gl, n_lanes, NULL, lv64, lv32, acc64,
                              acc32);
            }
        }
    }
    rs_chunk_out(b->chunk, stride, acc_at, X->n_rows, g0, g1, lanes, xgb, out64, out32);
}

/* Groups g0 .. g1 - 1 of 64 lanes on the gathered walk (rs_gw_runs): each group's columns and
 * base score into the chunk, then the groups walked together (rs_gw_groups): the same sums
 * as one group at a time. The scores go to out64[i - g0 * 64] for row i. */
static inline void rs_gw_chunk(const qs_forest* f, const rs_view* r, const rs_rows* X,
                               int64_t g0, int64_t g1, const rs_bufs* b, double* out64)
{
    int64_t F = f->n_features;
    int64_t stride = rs_chunk_stride(64, r->n_slots + r->n_gw_combos);
    int64_t acc_at = stride - 64 * 8;
    for (int64_t gi = g0; gi < g1; gi++) {
        int64_t i = gi * 64;
        int64_t n_lanes = rs_min64(64, X->n_rows - i);
        uint8_t* cg = b->chunk + (gi - g0) * stride;
        double* acc = (double*)(cg + acc_at);
        for (int64_t l = 0; l < n_lanes; l++) rs_load_row(f, X, i + l, b->rows + l * F);
        for (int64_t l = 0; l < 64; l++) acc[l] = f->base_score[0];
        rs_group_ranks(RS_ISA_AVX512, b->rows, F, (int)n_lanes, r->model_used, r->n_model_used,
                       r->slot_column, r->rank_pivots, r->rank_buckets, r->rank_pivots32,
                       r->rank_buckets32, r->rank_bucket_offsets, r->rank_zero, b->ranks,
                       b->skip);
        rs_lv_columns(b->ranks, b->skip, r->n_slots, r->gw_combos, r->n_gw_combos, 64, cg);
    }
    rs_gw_groups(r, f->n_trees, b->chunk, (char*)b->chunk + acc_at, stride, g1 - g0);
    for (int64_t gi = g0; gi < g1; gi++) {
        int64_t i = gi * 64;
        int64_t n_lanes = rs_min64(64, X->n_rows - i);
        const double* acc = (const double*)(b->chunk + (gi - g0) * stride + acc_at);
        for (int64_t l = 0; l < n_lanes; l++) out64[i - g0 * 64 + l] = acc[l];
    }
}

/* A call of n_rows rows on n_threads threads as items: groups of rs_lanes(isa) rows, or
 * for one-output calls of several groups a thread on the level path, summed in registers,
 * chunks of groups through the tree blocks (rs_level_chunk), at most lv_chunk groups each,
 * as many chunks as a multiple of the threads and of equal sizes (within a group), so that
 * no thread is left with a short last chunk while the others wait. may_chunk: 0 for a group
 * an item (calls that ask for exit leaves, and the low-latency calls of a few rows). */
typedef struct {
    int isa;
    int64_t lanes;       /* the widest group, which sizes the scratch */
    int64_t n_rows;
    int64_t n_groups;
    int chunked;
    int gw;              /* the chunks are the gathered walk's (rs_gw_chunk) */
    int scan;            /* the chunks are the scan's (rs_scan_chunk) */
    int64_t per_chunk;   /* groups an item, where chunked */
    int64_t n_items;
} rs_plan;

static inline rs_plan rs_plan_call(const qs_forest* f, const rs_view* r, int isa,
                                   int64_t n_rows, int n_threads, int may_chunk)
{
    rs_plan p;
    p.isa = isa;
    p.lanes = rs_lanes(isa);
    p.n_rows = n_rows;
    p.n_groups = (n_rows + p.lanes - 1) / p.lanes;
    int gw = rs_gw_runs(f, r, isa);
    int64_t most = gw ? RS_GW_GROUPS : r->lv_chunk > 1 ? r->lv_chunk : 1;
    int64_t nt = n_threads > 1 ? n_threads : 1;
    int64_t n_chunks = (p.n_groups + most - 1) / most;
    n_chunks = (n_chunks + nt - 1) / nt * nt;
    int64_t per_chunk = n_chunks ? (p.n_groups + n_chunks - 1) / n_chunks : 0;
    n_chunks = per_chunk ? (p.n_groups + per_chunk - 1) / per_chunk : 0;
    p.gw = gw;
    /* the scan's groups chunked where no group walks its levels and the model has more
     * than one tree block */
    p.scan = !gw && !(r->lv_on && p.lanes >= r->lv_min_lanes) && r->n_blocks > 1
             && r->n_cat_slots == 0 && !f->has_linear;
    p.chunked = may_chunk && f->n_outputs == 1 && per_chunk > 1
                && (gw || p.scan || (r->lv_on && r->lv_min_lanes <= 32 && rs_lv_fused(isa)
                                     && r->n_lv_blocks > 1));

    p.per_chunk = p.chunked ? per_chunk : 1;
    p.n_items = p.chunked ? n_chunks : p.n_groups;
    return p;
}

/* the first row of item k (a value, not through a pointer: Cython's prange makes a variable
 * private to each thread only where the loop assigns it) */
static inline int64_t rs_item_first(const rs_plan* p, int64_t k)
{
    return k * p->per_chunk * p->lanes;
}

/* the rows of item k: [*first, *last) */
static inline void rs_item_rows(const rs_plan* p, int64_t k, int64_t* first, int64_t* last)
{
    *first = rs_item_first(p, k);
    *last = rs_min64(p->n_rows, (k + 1) * p->per_chunk * p->lanes);
}

/* Item k of the plan on one thread's scratch b: the raw scores of its rows into out64 or
 * out32 (the model's precision; n_outputs a row) or their exit leaves into leaves (n_trees a
 * row; not NULL: leaves are asked), each pointing at the item's first row. */
static inline void rs_run_item(const rs_plan* p, const qs_forest* f, const rs_view* r,
                               const rs_rows* X, int64_t k, const rs_bufs* b, double* out64,
                               float* out32, int32_t* leaves)
{
    if (p->chunked && p->gw) {
        rs_gw_chunk(f, r, X, k * p->per_chunk, rs_min64(p->n_groups, (k + 1) * p->per_chunk), b,
                    out64);
        return;
    }
    if (p->chunked && p->scan) {
        rs_scan_chunk(f, r, p->isa, X, k * p->per_chunk,
                      rs_min64(p->n_groups, (k + 1) * p->per_chunk), p->lanes, b, out64, out32);
        return;
    }
    if (p->chunked) {
        rs_level_chunk(f, r, p->isa, X, k * p->per_chunk,
                       rs_min64(p->n_groups, (k + 1) * p->per_chunk), p->lanes, b, out64, out32);
        return;
    }
    int64_t i = k * p->lanes, K = f->n_outputs;
    int64_t n_lanes = rs_min64(p->lanes, p->n_rows - i);
    int gisa = rs_group_isa(p->isa, n_lanes);
    int64_t gl = rs_lanes(gisa);
    for (int64_t l = 0; l < n_lanes; l++) rs_load_row(f, X, i + l, b->rows + l * f->n_features);
    if (leaves != NULL) {
        rs_score_group(f, r, gisa, n_lanes, b, leaves, f->n_trees);
        return;
    }
    rs_score_group(f, r, gisa, n_lanes, b, NULL, 0);
    const float* acc32 = (const float*)b->acc64;
    for (int64_t l = 0; l < n_lanes; l++)
        for (int64_t o = 0; o < K; o++) {
            if (f->family == QS_FAMILY_XGBOOST)
                out32[l * K + o] = acc32[o * gl + l];
            else
                out64[l * K + o] = b->acc64[o * gl + l];
        }
}

#endif
