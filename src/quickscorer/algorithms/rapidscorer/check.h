/* The checks of a RapidScorer layout's arrays (view.h rs_arrays) before its kernel reads
 * them, for layouts a file gave: every length against the counts, every offset in order and
 * inside its array, every index inside what it names, every scan segment ending in its
 * sentinel inside its block, and no mask clearing a tree's last leaf (so that a tree's exit
 * is a leaf). The one copy of these checks: Python's RSLayout (_rapidscorer.pyx) and the C
 * library's open both call rs_check, which gives NULL and fills the view, or a message. */
#ifndef QUICKSCORER_ALGORITHMS_RAPIDSCORER_CHECK_H
#define QUICKSCORER_ALGORITHMS_RAPIDSCORER_CHECK_H

#include <stdint.h>
#include <stdlib.h>

#include "quickscorer/algorithms/rapidscorer/view.h"

#define RS_I64(s) ((const int64_t*)(s).data)
#define RS_I32(s) ((const int32_t*)(s).data)
#define RS_U32(s) ((const uint32_t*)(s).data)
#define RS_U64(s) ((const uint64_t*)(s).data)
#define RS_U16(s) ((const uint16_t*)(s).data)
#define RS_U8(s) ((const uint8_t*)(s).data)

/* where level l's threshold table starts among a tree's (rapidscorer.levels.LEVEL_TABLE_AT) */
static const int64_t RS_LV_TABLE_SIZES[9] = {0, 16, 32, 48, 64, 80, 112, 176, 304};
static const uint64_t rs_empty_words[8] = {0};

/* offsets o[0 .. n] from 0, nondecreasing, ending at most at total (exactly, where exact) */
static inline int rs_offsets_ok(rs_span o, int64_t n, int64_t total, int exact)
{
    if (o.n != n + 1 || RS_I64(o)[0] != 0)
        return 0;
    for (int64_t i = 0; i < n; i++)
        if (RS_I64(o)[i + 1] < RS_I64(o)[i])
            return 0;
    return exact ? RS_I64(o)[n] == total : RS_I64(o)[n] <= total;
}

/* o[0 .. n] from 0, nondecreasing: every difference of two of them then fits an int64 (the
 * checks compare lengths as differences of offsets a hostile file sets) */
static inline int rs_rising(const int64_t* o, int64_t n)
{
    if (o[0] != 0)
        return 0;
    for (int64_t i = 0; i < n; i++)
        if (o[i + 1] < o[i])
            return 0;
    return 1;
}

static inline const void* rs_data(rs_span s) { return s.n ? s.data : (const void*)rs_empty_words; }

/* the combos of a level or gathered walk's columns: slot | kind << 24 | right << 30 */
static inline int rs_combos_fit(rs_span combos, int64_t S)
{
    for (int64_t i = 0; i < combos.n; i++) {
        int32_t c = RS_I32(combos)[i];
        int kind = (c >> 24) & 3;
        if ((c & 0xFFFFFF) >= S || kind == 0 || kind > 2)
            return 0;
    }
    return 1;
}

static inline const char* rs_check_levels(const rs_arrays* a, rs_view* v, int64_t T, int64_t S)
{
    const char* fit = "rapidscorer layout: the level fields do not fit the trees";
    int64_t C = a->lv_combos.n;
    if (a->lv_node_offset.n != T + 1 || a->lv_slot_offset.n != T + 1 ||
        a->lv_level_end.n != RS_LV_ENDS * T || a->lv_split.n != T || a->lv_deep_offset.n != T + 1 ||
        a->lv_depth.n != T)
        return fit;
    const uint8_t* depth = RS_U8(a->lv_depth);
    const uint8_t* split = RS_U8(a->lv_split);
    for (int64_t t = 0; t < T; t++)
        if (depth[t] > RS_LV_MAX_DEPTH || split[t] > depth[t] || split[t] > RS_LV_BYTE_LEVELS)
            return fit;
    const int64_t* doff = RS_I64(a->lv_deep_offset);
    const int64_t* noff = RS_I64(a->lv_node_offset);
    const int64_t* soff = RS_I64(a->lv_slot_offset);
    if (!rs_rising(doff, T) || doff[T] != a->lv_deep.n)
        return "rapidscorer layout: the deep level records do not fit the trees";
    for (int64_t t = 0; t < T; t++)
        if (doff[t + 1] - doff[t] != ((int64_t)1 << depth[t]) - ((int64_t)1 << split[t]))
            return "rapidscorer layout: the deep level records do not fit the trees";
    for (int64_t i = 0; i < a->lv_deep.n; i++)
        if ((int64_t)(RS_U32(a->lv_deep)[i] & 0xFFFF) >= S + C)
            return "rapidscorer layout: the deep level records do not fit the trees";
    const char* offs = "rapidscorer layout: the level offsets do not fit the trees";
    if (!rs_rising(noff, T) || !rs_rising(soff, T) || noff[T] != a->lv_nodes.n)
        return offs;
    for (int64_t t = 0; t < T; t++)
        if (soff[t + 1] - soff[t] != ((int64_t)1 << depth[t]) || noff[t + 1] < noff[t])
            return offs;
    int64_t n_slots = soff[T];
    if (a->lv_slot_leaf.n != n_slots || (a->lv_value.n != 0 && a->lv_value.n != n_slots) ||
        (a->lv_value_f32.n != 0 && a->lv_value_f32.n != n_slots) ||
        a->lv_value.n + a->lv_value_f32.n == 0)
        return offs;
    const int64_t* toff = RS_I64(a->lv_table_offset);
    if (a->lv_table_offset.n != T + 1 || !rs_rising(toff, T) || toff[T] != a->lv_table.n)
        return "rapidscorer layout: the level tables do not fit the trees";
    for (int64_t t = 0; t < T; t++)
        if (toff[t + 1] - toff[t] != RS_LV_TABLE_SIZES[split[t]])
            return "rapidscorer layout: the level tables do not fit the trees";
    const int64_t* bst = RS_I64(a->lv_block_starts);
    int64_t nb = a->lv_block_starts.n;
    if (nb < 2 || bst[0] != 0 || bst[nb - 1] != T)
        return "rapidscorer layout: the level blocks do not cover the trees";
    for (int64_t i = 0; i + 1 < nb; i++)
        if (bst[i + 1] < bst[i])
            return "rapidscorer layout: the level blocks do not cover the trees";
    const uint16_t* ends = RS_U16(a->lv_level_end);
    for (int64_t t = 0; t < T; t++) {
        const uint16_t* e = ends + RS_LV_ENDS * t;
        for (int k = 0; k + 1 < RS_LV_ENDS; k++)
            if (e[k + 1] < e[k])
                return "rapidscorer layout: the level ends do not fit the trees' nodes";
        if ((int64_t)e[RS_LV_ENDS - 1] != noff[t + 1] - noff[t])
            return "rapidscorer layout: the level ends do not fit the trees' nodes";
        for (int64_t r = 0; r < noff[t + 1] - noff[t]; r++) {
            int64_t level = 0;
            for (int k = 0; k < RS_LV_ENDS; k++) level += r >= (int64_t)e[k];
            uint32_t x = RS_U32(a->lv_nodes)[noff[t] + r];
            if (level >= split[t] || (int64_t)(x >> 24) >= ((int64_t)1 << level) ||
                (int64_t)(x & 0xFFFF) >= S + C)
                return "rapidscorer layout: a level node is out of range";
        }
    }
    if (!rs_combos_fit(a->lv_combos, S))
        return "rapidscorer layout: a level column is out of range";
    v->lv.nodes = (const rs_lv_node*)rs_data(a->lv_nodes);
    v->lv.node_off = noff;
    v->lv.lend = ends;
    v->lv.depth = depth;
    v->lv.split = split;
    v->lv.deep = (const rs_lv_node*)rs_data(a->lv_deep);
    v->lv.deep_off = doff;
    v->lv.slot_off = soff;
    v->lv.table = RS_U8(a->lv_table) ? RS_U8(a->lv_table) : (const uint8_t*)rs_empty_words;
    v->lv.table_off = toff;
    v->lv_block_starts = bst;
    v->n_lv_blocks = nb - 1;
    v->lv_slot_leaf = (const uint16_t*)rs_data(a->lv_slot_leaf);
    v->lv_value = a->lv_value.n ? (const double*)a->lv_value.data : NULL;
    v->lv_value_f32 = a->lv_value_f32.n ? (const float*)a->lv_value_f32.data : NULL;
    v->lv_combos = (const int32_t*)rs_data(a->lv_combos);
    v->n_lv_combos = C;
    v->lv_on = 1;
    return NULL;
}

/* The gathered walk's fields (gw.h): every walk ends. A root and an internal record's
 * children lie after it and before the park record (the last, its own left child with
 * threshold 255), so that a lane's record rises until a leaf; columns name the ranks or a
 * combo. */
static inline const char* rs_check_walk(const rs_arrays* a, rs_view* v, int64_t T, int64_t S)
{
    int64_t N = a->gw_nodes.n, C = a->gw_combos.n;
    const char* fit = "rapidscorer layout: the gathered walk's records do not fit the trees";
    if (a->gw_roots.n != T || N < 2 || N > INT32_MAX || S + C > RS_GW_COLS)
        return fit;
    const uint64_t* nodes = RS_U64(a->gw_nodes);
    uint64_t park = nodes[N - 1];
    if ((uint32_t)(park >> 32) != (RS_GW_INNER | 255u << 12) || (int64_t)(uint32_t)park != N - 1)
        return "rapidscorer layout: the gathered walk's last record is not its park record";
    for (int64_t t = 0; t < T; t++)
        if (RS_I32(a->gw_roots)[t] < 0 || RS_I32(a->gw_roots)[t] >= N - 1)
            return "rapidscorer layout: a root of the gathered walk is out of range";
    for (int64_t i = 0; i + 1 < N; i++) {
        uint32_t up = (uint32_t)(nodes[i] >> 32), left = (uint32_t)nodes[i];
        if (up < RS_GW_INNER)
            continue;                                       /* a leaf's value */
        if ((int64_t)left <= i || (int64_t)left + 1 >= N - 1 || (int64_t)(up & 0xFFF) >= S + C)
            return "rapidscorer layout: a record of the gathered walk is out of range";
    }
    if (!rs_combos_fit(a->gw_combos, S))
        return "rapidscorer layout: a column of the gathered walk is out of range";
    v->gw_nodes = nodes;
    v->gw_roots = RS_I32(a->gw_roots);
    v->gw_park = (int32_t)(N - 1);
    v->gw_combos = (const int32_t*)rs_data(a->gw_combos);
    v->n_gw_combos = C;
    v->gw_on = rs_gw_default();
    return NULL;
}

static inline const char* rs_check(const rs_arrays* a, int64_t n_features, rs_view* v)
{
    int64_t S = a->slot_column.n, F = n_features;
    memset(v, 0, sizeof *v);
    if (S < F)
        return "rapidscorer layout: slot_column names a column outside the input";
    for (int64_t s = 0; s < S; s++)
        if (RS_I32(a->slot_column)[s] < 0 || RS_I32(a->slot_column)[s] >= F)
            return "rapidscorer layout: slot_column names a column outside the input";
    for (int64_t i = 0; i < a->model_used.n; i++)
        if (RS_I32(a->model_used)[i] < 0 || RS_I32(a->model_used)[i] >= S)
            return "rapidscorer layout: model_used names a slot out of range";
    int64_t T = a->tree_byte_offsets.n - 1, B = a->block_starts.n - 1;
    if (T < 0 || a->rank_pivots.n != 16 * S || a->rank_bucket_offsets.n != S + 1 ||
        a->rank_zero.n != S || a->block_segments.n != B + 1)
        return "rapidscorer layout: a field's length does not fit the slots or blocks";
    const int64_t* bs = RS_I64(a->block_starts);
    if (B < 1 || bs[0] != 0 || bs[B] != T)
        return "rapidscorer layout: block_starts do not cover the trees";
    for (int64_t b = 0; b < B; b++)
        if (bs[b + 1] < bs[b])
            return "rapidscorer layout: block_starts do not cover the trees";
    const int64_t* bsg = RS_I64(a->block_segments);
    if (bsg[B] != a->segments.n)
        return "rapidscorer layout: block_segments do not cover the segments";
    for (int64_t i = 0; i < a->segments.n; i++) {
        uint64_t g = RS_U64(a->segments)[i];
        if ((int64_t)(g & 0xFFFFFFFFu) >= a->entries.n ||
            (int64_t)((g >> 32) & 0x3FFFFFFF) >= RS_SEGMENT_KINDS * S)
            return "rapidscorer layout: a segment is out of range";
    }
    const int64_t* bo = RS_I64(a->rank_bucket_offsets);
    if (bo[0] < 0 || bo[S] != a->rank_buckets.n)
        return "rapidscorer layout: rank_bucket_offsets do not fit the buckets";
    for (int64_t s = 0; s < S; s++)
        if (bo[s + 1] < bo[s] || bo[s + 1] - bo[s] < 16)   /* bo[s] >= 0: no overflow */
            return "rapidscorer layout: rank_bucket_offsets do not fit the buckets";
    const int64_t* tbo = RS_I64(a->tree_byte_offsets);
    int only = a->lv_only;
    int64_t max_leaves = only ? (int64_t)1 << RS_LV_MAX_DEPTH : RS_MAX_LEAVES;
    if (!rs_rising(tbo, T))
        return "rapidscorer layout: a tree has fewer than 1 or more than 32 bytes";
    for (int64_t t = 0; t < T; t++) {
        int64_t nb = tbo[t + 1] - tbo[t];
        if (only ? nb != 0 : (nb < 1 || nb > 32))
            return only ? "rapidscorer layout: a layout of the level path alone holds scan "
                          "fields"
                        : "rapidscorer layout: a tree has fewer than 1 or more than 32 bytes";
    }
    if (only && (a->entries.n || a->segments.n || a->cat_node_slot.n || a->cat_slot_column.n ||
                 a->leaf_order.n))
        return "rapidscorer layout: a layout of the level path alone holds scan fields";
    int64_t max_block = 1;
    for (int64_t b = 0; b < B; b++) {
        int64_t n = tbo[bs[b + 1]] - tbo[bs[b]];
        if (n > 65536)
            return "rapidscorer layout: a tree block of more than 65,536 byte rows";
        if (n > max_block)
            max_block = n;
    }
    const int64_t* lof = RS_I64(a->leaf_offset);
    if (a->leaf_offset.n != T + 1 || !rs_rising(lof, T))
        return "rapidscorer layout: leaf_offset does not give each tree its leaves";
    for (int64_t t = 0; t < T; t++) {
        int64_t n = lof[t + 1] - lof[t];
        if (n < 1 || n > max_leaves || (!only && tbo[t + 1] - tbo[t] != (n + 7) / 8))
            return "rapidscorer layout: leaf_offset does not give each tree its leaves";
    }
    int64_t n_leaves = lof[T];
    if (a->leaf_order.n) {
        if (a->leaf_order.n != n_leaves || a->leaf_value.n != n_leaves ||
            (a->leaf_value_f32.n != 0 && a->leaf_value_f32.n != n_leaves))
            return "rapidscorer layout: the leaf order does not fit the trees";
        for (int64_t t = 0; t < T; t++)
            for (int64_t k = lof[t]; k < lof[t + 1]; k++)
                if (RS_U8(a->leaf_order)[k] >= lof[t + 1] - lof[t])
                    return "rapidscorer layout: the leaf order does not fit the trees";
    }
    /* the categorical nodes */
    int64_t N = a->cat_node_slot.n, CS = a->cat_slot_column.n;
    for (int64_t k = 0; k < CS; k++)
        if (RS_I32(a->cat_slot_column)[k] < 0 || RS_I32(a->cat_slot_column)[k] >= F)
            return "rapidscorer layout: a categorical slot or its column is out of range";
    for (int64_t d = 0; d < N; d++)
        if (RS_I32(a->cat_node_slot)[d] < 0 || RS_I32(a->cat_node_slot)[d] >= CS)
            return "rapidscorer layout: a categorical slot or its column is out of range";
    if (a->cat_tables.n != 32 * N || !rs_offsets_ok(a->cat_entry_offsets, N, a->cat_entries.n, 1))
        return "rapidscorer layout: the categorical tables or entry offsets do not fit the "
               "nodes";
    const int64_t* bc = RS_I64(a->block_cat);
    if (a->block_cat.n != B + 1 || !rs_offsets_ok(a->block_cat, B, N, 1))
        return "rapidscorer layout: block_cat does not cover the categorical nodes";
    const int64_t* ceo = RS_I64(a->cat_entry_offsets);
    for (int64_t b = 0; b < B; b++) {
        int64_t rows = tbo[bs[b + 1]] - tbo[bs[b]];
        for (int64_t d = bc[b]; d < bc[b + 1]; d++)
            for (int64_t k = ceo[d]; k < ceo[d + 1]; k++)
                if ((int64_t)(RS_U32(a->cat_entries)[k] & 0xFFFF) >= rows)
                    return "rapidscorer layout: a categorical entry's byte row is outside its "
                           "block";
    }
    if (!only) {
        for (int64_t b = 0; b < B; b++)
            if (bsg[b + 1] < bsg[b] || bsg[0] != 0)
                return "rapidscorer layout: block_segments are out of order";
        /* each byte row's bit of its tree's last leaf, which no mask may clear */
        uint8_t* keep = (uint8_t*)calloc((size_t)(tbo[T] > 0 ? tbo[T] : 1), 1);
        if (keep == NULL)
            return "rapidscorer layout: no memory for the checks";
        for (int64_t t = 0; t < T; t++) {
            int64_t n = lof[t + 1] - lof[t];
            keep[tbo[t] + (n - 1) / 8] = (uint8_t)(1u << ((n - 1) % 8));
        }
        const char* why = NULL;
        for (int64_t b = 0; b < B && why == NULL; b++) {
            int64_t base = tbo[bs[b]], rows = tbo[bs[b + 1]] - base;
            for (int64_t j = bsg[b]; j < bsg[b + 1] && why == NULL; j++) {
                int64_t k = (int64_t)(RS_U64(a->segments)[j] & 0xFFFFFFFFu);
                for (;; k++) {
                    if (k >= a->entries.n) {
                        why = "rapidscorer layout: a scan's entries leave their block, lack "
                              "their sentinel or clear a tree's last leaf";
                        break;
                    }
                    uint32_t e = RS_U32(a->entries)[k];
                    if (((e >> 16) & 0xFF) == 0x7F)
                        break;
                    int64_t row = e & 0xFFFF;
                    uint8_t m = (uint8_t)(e >> 24);
                    if (row >= rows || (m & keep[base + row]) != keep[base + row]) {
                        why = "rapidscorer layout: a scan's entries leave their block, lack "
                              "their sentinel or clear a tree's last leaf";
                        break;
                    }
                }
            }
            for (int64_t d = bc[b]; d < bc[b + 1] && why == NULL; d++)
                for (int64_t k = ceo[d]; k < ceo[d + 1]; k++) {
                    uint32_t e = RS_U32(a->cat_entries)[k];
                    uint8_t kp = keep[base + (e & 0xFFFF)], m = (uint8_t)(e >> 24);
                    if ((m & kp) != kp) {
                        why = "rapidscorer layout: a categorical entry clears a tree's last "
                              "leaf";
                        break;
                    }
                }
        }
        free(keep);
        if (why != NULL)
            return why;
    }
    v->n_features = F;
    v->n_slots = S;
    v->slot_column = (const int32_t*)rs_data(a->slot_column);
    v->n_trees = T;
    v->n_blocks = B;
    v->n_leaves = n_leaves;
    v->rank_pivots = (const double*)rs_data(a->rank_pivots);
    v->rank_buckets = (const double*)rs_data(a->rank_buckets);
    v->rank_bucket_offsets = bo;
    v->rank_zero = (const uint8_t*)rs_data(a->rank_zero);
    v->n_model_used = a->model_used.n;
    v->model_used = (const int32_t*)rs_data(a->model_used);
    v->tree_byte_offsets = tbo;
    v->block_starts = bs;
    v->entries = (const rs_entry*)rs_data(a->entries);
    v->segments = (const uint64_t*)rs_data(a->segments);
    v->block_segments = bsg;
    v->max_block_bytes = max_block;
    if (a->leaf_order.n) {
        v->leaf_order = RS_U8(a->leaf_order);
        v->leaf_value = (const double*)a->leaf_value.data;
        v->leaf_value_f32 = a->leaf_value_f32.n ? (const float*)a->leaf_value_f32.data : NULL;
    }
    v->n_cat_slots = CS;
    v->cat_slot_column = (const int32_t*)rs_data(a->cat_slot_column);
    v->cat_node_slot = (const int32_t*)rs_data(a->cat_node_slot);
    v->cat_tables = (const uint8_t*)rs_data(a->cat_tables);
    v->cat_entry_offsets = ceo;
    v->cat_entries = (const rs_entry*)rs_data(a->cat_entries);
    v->block_cat = bc;
    v->lv_chunk = 1;
    v->lv_min_lanes = 32;
    if (a->lv_depth.n) {
        const char* why = rs_check_levels(a, v, T, S);
        if (why != NULL)
            return why;
    }
    if (a->gw_nodes.n) {
        const char* why = rs_check_walk(a, v, T, S);
        if (why != NULL)
            return why;
    }
    if (only) {
        if (!v->lv_on)
            return "rapidscorer layout: a layout of the level path alone has no level fields";
        v->lv_min_lanes = 0;
    }
    return NULL;
}

#endif
