/* The RapidScorer layout of one model as its kernel reads it (rapidscorer/layout.py writes
 * the arrays): rs_arrays names each array and its length as given, rs_view the checked
 * pointers the row loops of run.h read. check.h's rs_check makes the one from the other,
 * for the Python extension and the C library alike. */
#ifndef QUICKSCORER_ALGORITHMS_RAPIDSCORER_VIEW_H
#define QUICKSCORER_ALGORITHMS_RAPIDSCORER_VIEW_H

#include <stdint.h>

#include "quickscorer/algorithms/rapidscorer/gw.h"       /* RS_GW_* */
#include "quickscorer/algorithms/rapidscorer/levels.h"   /* rs_lv_model, rs_entry */

#define RS_SEGMENT_KINDS 3   /* segments per slot and node variant (none, zero, NaN missing) */
#define RS_LV_MAX_DEPTH 10   /* rapidscorer.levels.LEVELS_MAX_DEPTH */
#define RS_MAX_LEAVES 256    /* a scanned tree's leaves: 32 bytes of bitvector */

/* one array: its first item and its number of items (data may be NULL where n is 0) */
typedef struct {
    const void* data;
    int64_t n;
} rs_span;

/* the layout's arrays, named as rapidscorer/layout.py names them, with their item types */
typedef struct {
    rs_span rank_pivots;          /* double [16 S] */
    rs_span rank_buckets;         /* double */
    rs_span rank_bucket_offsets;  /* int64 [S + 1] */
    rs_span rank_zero;            /* uint8 [S] */
    rs_span slot_column;          /* int32 [S] */
    rs_span model_used;           /* int32 */
    rs_span tree_byte_offsets;    /* int64 [T + 1] */
    rs_span block_starts;         /* int64 [B + 1] */
    rs_span entries;              /* uint32 (rs_entry) */
    rs_span segments;             /* uint64 */
    rs_span block_segments;       /* int64 [B + 1] */
    rs_span leaf_offset;          /* int64 [T + 1] */
    rs_span leaf_order;           /* uint8, empty where no node is mirrored */
    rs_span leaf_value;           /* double */
    rs_span leaf_value_f32;       /* float */
    rs_span cat_slot_column;      /* int32 [C] */
    rs_span cat_node_slot;        /* int32 [N] */
    rs_span cat_tables;           /* uint8 [32 N] */
    rs_span cat_entry_offsets;    /* int64 [N + 1] */
    rs_span cat_entries;          /* uint32 (rs_entry) */
    rs_span block_cat;            /* int64 [B + 1] */
    int lv_only;                  /* a layout of the level path alone (no scans) */
    /* the level path's fields (rapidscorer.levels.level_arrays): lv_depth empty, not used */
    rs_span lv_nodes;             /* uint32 (rs_lv_node) */
    rs_span lv_node_offset;       /* int64 [T + 1] */
    rs_span lv_level_end;         /* uint16 [RS_LV_ENDS T] */
    rs_span lv_depth;             /* uint8 [T] */
    rs_span lv_slot_offset;       /* int64 [T + 1] */
    rs_span lv_slot_leaf;         /* uint16 */
    rs_span lv_split;             /* uint8 [T] */
    rs_span lv_deep;              /* uint32 (rs_lv_node) */
    rs_span lv_deep_offset;       /* int64 [T + 1] */
    rs_span lv_block_starts;      /* int64 */
    rs_span lv_value;             /* double, or empty */
    rs_span lv_value_f32;         /* float, or empty */
    rs_span lv_combos;            /* int32 */
    rs_span lv_table;             /* uint8 */
    rs_span lv_table_offset;      /* int64 [T + 1] */
    /* the gathered walk's fields (rapidscorer.walks.walk_arrays): gw_nodes empty, not used */
    rs_span gw_nodes;             /* uint64 (gw.h's records), the park record last */
    rs_span gw_roots;             /* int32 [T] */
    rs_span gw_combos;            /* int32, as lv_combos */
} rs_arrays;

/* the arrays of rs_arrays by number, in the order of its fields (the C index's, model_file.py
 * C_INDEX_RS_SLOTS), with each one's item size in bytes */
#define RS_ARRAY_COUNT 39
#define RS_ARRAY_COUNT_V2 36   /* the arrays of the C index's version 2: the first ones */
static const char* const RS_ARRAY_NAMES[RS_ARRAY_COUNT] = {
    "rank_pivots", "rank_buckets", "rank_bucket_offsets", "rank_zero", "slot_column",
    "model_used", "tree_byte_offsets", "block_starts", "entries", "segments", "block_segments",
    "leaf_offset", "leaf_order", "leaf_value", "leaf_value_f32", "cat_slot_column",
    "cat_node_slot", "cat_tables", "cat_entry_offsets", "cat_entries", "block_cat",
    "lv_nodes", "lv_node_offset", "lv_level_end", "lv_depth", "lv_slot_offset",
    "lv_slot_leaf", "lv_split", "lv_deep", "lv_deep_offset", "lv_block_starts", "lv_value",
    "lv_value_f32", "lv_combos", "lv_table", "lv_table_offset", "gw_nodes", "gw_roots",
    "gw_combos"};
static const uint8_t RS_ARRAY_SIZES[RS_ARRAY_COUNT] = {
    8, 8, 8, 1, 4, 4, 8, 8, 4, 8, 8, 8, 1, 8, 4, 4, 4, 1, 8, 4, 8, 4, 8, 2, 1, 8, 2, 1, 4, 8,
    8, 8, 4, 4, 1, 8, 8, 4, 4};

/* array k of a (0 <= k < RS_ARRAY_COUNT) */
static inline rs_span* rs_array_at(rs_arrays* a, int k)
{
    rs_span* const at[RS_ARRAY_COUNT] = {
        &a->rank_pivots, &a->rank_buckets, &a->rank_bucket_offsets, &a->rank_zero,
        &a->slot_column, &a->model_used, &a->tree_byte_offsets, &a->block_starts, &a->entries,
        &a->segments, &a->block_segments, &a->leaf_offset, &a->leaf_order, &a->leaf_value,
        &a->leaf_value_f32, &a->cat_slot_column, &a->cat_node_slot, &a->cat_tables,
        &a->cat_entry_offsets, &a->cat_entries, &a->block_cat, &a->lv_nodes,
        &a->lv_node_offset, &a->lv_level_end, &a->lv_depth, &a->lv_slot_offset,
        &a->lv_slot_leaf, &a->lv_split, &a->lv_deep, &a->lv_deep_offset, &a->lv_block_starts,
        &a->lv_value, &a->lv_value_f32, &a->lv_combos, &a->lv_table, &a->lv_table_offset,
        &a->gw_nodes, &a->gw_roots, &a->gw_combos};
    return at[k];
}

typedef struct {
    /* S: the rank slots (rapidscorer/layout.py), ranked and scanned as features; F: the
     * input's columns */
    int64_t n_features;
    int64_t n_slots;
    const int32_t* slot_column;        /* [S] the column each slot reads */
    int64_t n_trees;
    int64_t n_blocks;
    int64_t n_leaves;
    const double* rank_pivots;         /* [16 S] */
    const double* rank_buckets;
    const float* rank_pivots32;        /* the two in float32 (XGBoost rows), else NULL */
    const float* rank_buckets32;
    const int64_t* rank_bucket_offsets; /* [S + 1] */
    const uint8_t* rank_zero;          /* [S] rank of 0.0 */
    int64_t n_model_used;
    const int32_t* model_used;
    const int64_t* tree_byte_offsets;  /* [n_trees + 1] */
    const int64_t* block_starts;       /* [n_blocks + 1] */
    const rs_entry* entries;
    const uint64_t* segments;          /* (3 s + kind) << 32 | first entry, per block */
    const int64_t* block_segments;     /* [n_blocks + 1] */
    int64_t max_block_bytes;           /* byte rows of the largest block */
    /* mirrored nodes (rapidscorer.layout.half_arrays): leaf positions are not the tree's
     * own leaf numbers; NULL where they are */
    const uint8_t* leaf_order;         /* [n_leaves] the tree's own number of each position */
    const double* leaf_value;          /* [n_leaves] float64 values by position */
    const float* leaf_value_f32;       /* [n_leaves] float32 (XGBoost) values by position */
    /* categorical nodes (rapidscorer.categorical.categorical_nodes), applied per block
     * after its scan */
    int64_t n_cat_slots;
    const int32_t* cat_slot_column;    /* [C] the column each categorical slot reads */
    const int32_t* cat_node_slot;      /* [N] each node's slot */
    const uint8_t* cat_tables;         /* [32 N] each node's codes that leave it away */
    const int64_t* cat_entry_offsets;  /* [N + 1] */
    const rs_entry* cat_entries;
    const int64_t* block_cat;          /* [n_blocks + 1] each block's first node */
    /* the level-by-level path (rapidscorer.levels.level_arrays), used instead of the scans
     * where on */
    int lv_on;
    int64_t lv_min_lanes;              /* groups of fewer lanes take the scans */
    rs_lv_model lv;                    /* nodes, ends, depths, splits, deep records, slots */
    /* calls of several groups a thread walk chunks of lv_chunk groups through the tree
     * blocks, lv_block_starts on the level path (one-output models, on the paths that sum
     * in registers) or block_starts on the scan (one output, no categorical or linear node) */
    int64_t lv_chunk;
    /* on AVX-512, tree blocks whose trees all have more than RS_WIDE_ADD_LEAVES leaves find
     * and add their exit leaves as the AVX2 wide path does (rs_wide_add_default or the
     * caller's choice) */
    int wide_add;
    int64_t n_lv_blocks;
    const int64_t* lv_block_starts;    /* [n_lv_blocks + 1] */
    const uint16_t* lv_slot_leaf;      /* each slot's leaf, the tree's own number */
    const double* lv_value;            /* each slot's leaf value */
    const float* lv_value_f32;         /* the same in float32 (XGBoost models) */
    const int32_t* lv_combos;
    int64_t n_lv_combos;
    /* the gathered walk (gw.h), used instead of the scans on the AVX-512 path where on (its
     * fields present, rs_gw_default or the caller's choice) */
    int gw_on;
    const uint64_t* gw_nodes;
    const int32_t* gw_roots;           /* [n_trees] */
    int32_t gw_park;                   /* the park record: the last */
    const int32_t* gw_combos;
    int64_t n_gw_combos;
} rs_view;

#endif
