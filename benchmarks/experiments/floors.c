/* The unit costs of benchmarks/floors.py: each operation a document and tree must execute in
 * the kernels the automatic choice runs on many rows, alone in a loop over state that stays in
 * L1 (no miss, no mispredicted branch, no call), in nanoseconds a unit on this CPU.
 *
 *     gcc -O3 -I src -o /tmp/floors benchmarks/experiments/floors.c && /tmp/floors 9
 *
 * Prints "unit isa ns" a line, the least of the rounds; a unit of an instruction set this CPU
 * lacks is left out. The same loops, compiled with -S, are what llvm-mca counts for cores
 * this machine is not: the body of each unit this file writes sits between "LLVM-MCA-BEGIN
 * unit.isa" and "LLVM-MCA-END" markers.
 *
 * Where the kernel has a function for the operation, the unit times that function
 * (rapidscorer/scan.h): isa avx512 is RS_ISA_AVX512, avx2 the AVX2 wide path (64 lanes).
 *   rank16, rank8, rank0   one document and rank slot of a group's ranks (rs_group_ranks), a
 *               slot of 16 buckets (16 pivots compared, then the 16 thresholds of a bucket),
 *               of at most 8, of one; rank32_* the same in float32 (XGBoost's models)
 *   entry       one scan entry for a group (rs_scan_avx512 / rs_scan_avx2w): the lanes whose
 *               rank passes its threshold have its mask ANDed into its byte row
 *   reset_row   one byte row set to all ones for a group at the start of a block (memset)
 *   exit_row    one byte row of a tree for a group's exit search (rs_exits, 8 rows a tree)
 *   leaf_n<n>   one document and tree of n leaves (at most): its exit leaf's value added to its
 *               sum (rs_add_f64); leaf32_n<n> in float32 (rs_add_f32)
 * The level walk's units time rapidscorer/levels.h's own walks too (rs_lv_tree, on AVX-512
 * by byte permutations, on avx2 as the AVX2 wide path, which is also AVX-512's walk in
 * halves; rs_lv_deep), on 64 complete trees:
 *   lv_node     one node above a tree's split, for a group: the lanes at its position take its
 *               column; lv_level one level above the split, for a group: each lane's threshold
 *               by its position, a compare, the positions doubled (and the tree's share of its
 *               call): from trees of 8 and of 4 such levels
 *   lv_deep     one level below the split, for one lane (eight lanes' chains at a time)
 * For llvm-mca, this file's own loops of the same operations stand for them (the regions
 * lv_node, lv_level and lv_deep: one lane's chain, not eight).
 * The gathered walk's unit times rapidscorer/gw.h's own walk (rs_gw_trees), on 16 complete
 * trees of depth 6 whose records stay in L1:
 *   gw_step     one lane's step: its record and its rank gathered, a node's child or a
 *               leaf's value added and the next tree's root taken (AVX-512)
 * and so is a walk no kernel of this library runs:
 *   heap        one document, tree and level of a complete heap walk in the manner of oneDAL's
 *               GBT inference (node i goes to 2i + 1 + (x > t)): gathers of the node's
 *               feature and threshold and of the row's value, a compare, the index moved;
 *               float32 values, 16 lanes (AVX-512) or 8 (AVX2) a register, 4 registers
 */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quickscorer/algorithms/rapidscorer/gw.h"
#include "quickscorer/algorithms/rapidscorer/levels.h"   /* and scan.h */

#define MCA_BEGIN(name) __asm__ volatile("# LLVM-MCA-BEGIN " name ::: "memory")
#define MCA_END() __asm__ volatile("# LLVM-MCA-END" ::: "memory")

#define AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi,popcnt,bmi2")))
#define AVX2 __attribute__((target("avx2,popcnt,bmi2")))

enum { LANES = 64, S = 136, ROWS = 1024, TREES = 64, NODES = 255, DEPTH = 8 };

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static uint64_t rng = 88172645463325252ULL;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* the state every unit reads: small enough for L1 and L2 */
static double X[LANES * S];                   /* a group's rows, row-major */
static double pivots[16 * S] __attribute__((aligned(64)));   /* set_buckets sets these */
static float pivots32[16 * S] __attribute__((aligned(64)));
static float X32[LANES * S];
static uint8_t ranks[S * LANES] __attribute__((aligned(64)));   /* column-major */
static uint8_t state[512 * LANES] __attribute__((aligned(64)));  /* byte rows of a block */
static uint8_t table[16 * 64] __attribute__((aligned(64)));
static uint32_t deep[1024];                   /* col | thr << 16 */
static double values[TREES * 256];
static float xf[ROWS * S];                    /* rows for the heap walk, float32 */
static int32_t hfeat[TREES * NODES];
static float hthr[TREES * NODES];

static void fill(void)
{
    for (int i = 0; i < LANES * S; i++) X[i] = (double)(rnd() % 1000) / 1000.0;
    for (int i = 0; i < LANES * S; i++) X32[i] = (float)X[i];
    for (int i = 0; i < S * LANES; i++) ranks[i] = (uint8_t)rnd();
    for (int i = 0; i < 16 * 64; i++) table[i] = (uint8_t)(rnd() % 255);
    for (int i = 0; i < 1024; i++) deep[i] = (uint32_t)(rnd() % S) | (uint32_t)(rnd() % 255) << 16;
    for (int i = 0; i < TREES * 256; i++) values[i] = (double)(rnd() % 1000) / 7.0;
    for (int i = 0; i < ROWS * S; i++) xf[i] = (float)(rnd() % 1000) / 1000.0f;
    for (int i = 0; i < TREES * NODES; i++) {
        hfeat[i] = (int32_t)(rnd() % S);
        hthr[i] = (float)(rnd() % 1000) / 1000.0f;
    }
    memset(state, 0xFF, sizeof state);
}

/* ---- the units the kernel has a function for; k_isa: RS_ISA_AVX512 or RS_ISA_AVX2_WIDE ---- */
static int k_isa, k_leaves;
static const float *k_piv32, *k_bkt32;          /* NULL: float64 ranks */
static int32_t used[S], column[S];
static int64_t bkt_off[S + 1];
static uint8_t rank_zero[S];
static uint64_t skip[3 * S];
static rs_entry kentries[4097];
static uint8_t rank_col[64] __attribute__((aligned(64)));
static uint8_t idxs[64 * 64] __attribute__((aligned(64)));
static double acc64[64] __attribute__((aligned(64)));
static float acc32[64] __attribute__((aligned(64)));
static double kbuckets[17 * 16 * S];
static float kbuckets32[17 * 16 * S];

/* every slot of nbk real buckets of 16 thresholds (16, 8 or 1: the kernel compares 16, 8 or
 * no pivots), then a bucket of +inf */
static void set_buckets(int nbk)
{
    bkt_off[0] = 0;
    for (int s = 0; s < S; s++) {
        bkt_off[s + 1] = bkt_off[s] + 16 * (nbk + 1);
        double* b = kbuckets + bkt_off[s];
        for (int k = 0; k < 16 * nbk; k++) b[k] = (k + 1) / (16.0 * nbk + 1);
        for (int k = 16 * nbk; k < 16 * (nbk + 1); k++) b[k] = __builtin_inf();
        for (int j = 0; j < 16; j++) pivots[16 * s + j] = j < nbk ? b[16 * j + 15] : __builtin_inf();
        for (int k = 0; k < 16 * (nbk + 1); k++) kbuckets32[bkt_off[s] + k] = (float)b[k];
        for (int j = 0; j < 16; j++) pivots32[16 * s + j] = (float)pivots[16 * s + j];
    }
}

static void k_ranks(void)           /* units: LANES * S */
{
    rs_group_ranks(k_isa, X, S, LANES, used, S, column, pivots, kbuckets, k_piv32, k_bkt32,
                   bkt_off, rank_zero, ranks, skip);
}

AVX512 static void k_entries_avx512(void)  /* units: 4096 */
{
    rs_scan_avx512(rank_col, kentries, state, 0);
}

AVX2 static void k_entries_avx2w(void)
{
    rs_scan_avx2w(rank_col, kentries, state, 0);
}

static void k_reset(void)           /* units: 512 byte rows */
{
    memset(state, 0xFF, sizeof state);
    __asm__ volatile("" ::: "memory");
}

static void k_exits(void)           /* units: 512 byte rows, 64 trees of 8 */
{
    for (int t = 0; t < 64; t++) rs_exits(k_isa, state + (size_t)t * 8 * LANES, 8, idxs + 64 * t);
}

static void k_leaf64(void)          /* units: 64 trees x 64 lanes */
{
    for (int t = 0; t < 64; t++) rs_add_f64(k_isa, idxs + 64 * t, values + 256 * t, k_leaves, acc64);
}

static void k_leaf32(void)
{
    for (int t = 0; t < 64; t++)
        rs_add_f32(k_isa, idxs + 64 * t, (const float*)values + 256 * t, k_leaves, acc32, 0, 1.0f);
}

/* ---- the level walk by the kernel's own functions (rs_lv_tree, rs_lv_deep): 64 complete
 * trees of lv_levels levels (8 or 4) above their split, every position a node; and two
 * levels below a split of 8 ---- */
enum { LV_TREES = 64 };
static rs_lv_node kv_nodes[LV_TREES * 255];
static int64_t kv_node_off[LV_TREES + 1], kv_deep_off[LV_TREES + 1], kv_slot_off[LV_TREES + 1];
static int64_t kv_table_off[LV_TREES + 1];
static uint16_t kv_lend[LV_TREES * RS_LV_ENDS];
static uint8_t kv_depth[LV_TREES], kv_split[LV_TREES];
static uint8_t kv_table[LV_TREES * 304];
static rs_lv_node kv_deep[768];
static uint8_t kv_idx[64] __attribute__((aligned(64)));
static uint16_t kv_slot[64];
static rs_lv_model kv;

static void set_levels(int levels, int vbmi)
{
    int per = (1 << levels) - 1;
    for (int t = 0; t < LV_TREES; t++) {
        kv_node_off[t + 1] = kv_node_off[t] + per;
        kv_table_off[t + 1] = kv_table_off[t] + RS_LV_TABLE_AT(levels);
        kv_slot_off[t + 1] = kv_slot_off[t] + (1 << levels);
        kv_deep_off[t + 1] = 0;
        kv_depth[t] = kv_split[t] = (uint8_t)levels;
        for (int l = 0; l < RS_LV_ENDS; l++)
            kv_lend[RS_LV_ENDS * t + l] = (uint16_t)(l < levels ? (2 << l) - 1 : per);
        for (int k = 0; k < per; k++) {
            int l = 31 - __builtin_clz((unsigned)k + 1);
            rs_lv_node* nd = kv_nodes + kv_node_off[t] + k;
            nd->col = (uint16_t)(rnd() % S);
            nd->thr = (uint8_t)(rnd() % 255);
            nd->pos = (uint8_t)(k + 1 - (1 << l));
        }
    }
    for (int i = 0; i < LV_TREES * 304; i++) kv_table[i] = (uint8_t)((rnd() % 255) ^ 0x80);
    for (int i = 0; i < 768; i++) {
        kv_deep[i].col = (uint16_t)(rnd() % S);
        kv_deep[i].thr = (uint8_t)(rnd() % 255);
    }
    kv.nodes = kv_nodes;
    kv.node_off = kv_node_off;
    kv.lend = kv_lend;
    kv.depth = kv_depth;
    kv.split = kv_split;
    kv.deep = kv_deep;
    kv.deep_off = kv_deep_off;
    kv.slot_off = kv_slot_off;
    kv.table = kv_table;
    kv.table_off = kv_table_off;
    kv.vbmi = vbmi;
    kv.halves = 0;
}

static void k_levels(void)          /* units: LV_TREES trees */
{
    for (int t = 0; t < LV_TREES; t++) rs_lv_tree(k_isa, &kv, t, ranks, kv_idx, kv_slot, 64);
}

static void k_deep(void)            /* units: 64 lanes x 2 levels */
{
    for (int l = 0; l < 64; l++) kv_idx[l] = (uint8_t)(l * 37);
    rs_lv_deep(kv_deep, 8, 10, ranks, 64, 64, kv_idx, kv_slot);
}

/* ---- lv_node and lv_level: a tree of lv_levels levels above its split (8 or 4), every
 * position a node: 2^lv_levels - 1 nodes ---- */
static uint32_t lvnodes[255];                 /* col | pos << 24 */
static int lv_levels = 8;

AVX512 static void levels_avx512(void)
{
    __m512i pos = _mm512_setzero_si512();
    int k = 0;
    for (int l = 0; l < lv_levels; l++) {
        __m512i col = _mm512_setzero_si512();
        for (int j = 0; j < (1 << l); j++, k++) {
            MCA_BEGIN("lv_node.avx512");
            uint32_t nd = lvnodes[k];
            __mmask64 at = _mm512_cmpeq_epi8_mask(pos, _mm512_set1_epi8((char)(nd >> 24)));
            col = _mm512_mask_mov_epi8(
                col, at, _mm512_load_si512((const void*)(ranks + (size_t)(nd & 0xFFFF) * LANES)));
            MCA_END();
        }
        MCA_BEGIN("lv_level.avx512");
        __m512i thr = _mm512_permutexvar_epi8(pos, _mm512_load_si512((const void*)(table + 64 * l)));
        __mmask64 right = _mm512_cmpgt_epu8_mask(col, thr);
        pos = _mm512_mask_add_epi8(_mm512_add_epi8(pos, pos), right, _mm512_add_epi8(pos, pos),
                                   _mm512_set1_epi8(1));
        MCA_END();
    }
    _mm512_store_si512((void*)(state), pos);
}

AVX2 static void levels_avx2(void)
{
    __m256i p0 = _mm256_setzero_si256(), p1 = _mm256_setzero_si256();
    const __m256i one = _mm256_set1_epi8(1), bias = _mm256_set1_epi8((char)0x80);
    int k = 0;
    for (int l = 0; l < lv_levels; l++) {
        __m256i c0 = _mm256_setzero_si256(), c1 = _mm256_setzero_si256();
        __m256i t0 = _mm256_setzero_si256(), t1 = _mm256_setzero_si256();
        for (int j = 0; j < (1 << l); j++, k++) {
            MCA_BEGIN("lv_node.avx2");
            uint32_t nd = lvnodes[k];
            const uint8_t* src = ranks + (size_t)(nd & 0xFFFF) * LANES;
            __m256i q = _mm256_set1_epi8((char)(nd >> 24));
            __m256i th = _mm256_set1_epi8((char)table[64 * l + (j & 63)]);
            __m256i a0 = _mm256_cmpeq_epi8(p0, q), a1 = _mm256_cmpeq_epi8(p1, q);
            c0 = _mm256_blendv_epi8(c0, _mm256_load_si256((const __m256i*)src), a0);
            c1 = _mm256_blendv_epi8(c1, _mm256_load_si256((const __m256i*)(src + 32)), a1);
            t0 = _mm256_blendv_epi8(t0, th, a0);
            t1 = _mm256_blendv_epi8(t1, th, a1);
            MCA_END();
        }
        MCA_BEGIN("lv_level.avx2");
        __m256i r0 = _mm256_cmpgt_epi8(_mm256_xor_si256(c0, bias), t0);
        __m256i r1 = _mm256_cmpgt_epi8(_mm256_xor_si256(c1, bias), t1);
        p0 = _mm256_sub_epi8(_mm256_add_epi8(p0, p0), _mm256_and_si256(r0, _mm256_sub_epi8(
                                                            _mm256_setzero_si256(), one)));
        p1 = _mm256_sub_epi8(_mm256_add_epi8(p1, p1), _mm256_and_si256(r1, _mm256_sub_epi8(
                                                            _mm256_setzero_si256(), one)));
        MCA_END();
    }
    _mm256_store_si256((__m256i*)state, p0);
    _mm256_store_si256((__m256i*)(state + 32), p1);
}

/* ---- lv_deep: 64 lanes, 2 levels from position < 256; units = 128 a call ---- */
static void deep_scalar(void)
{
    for (int lane = 0; lane < LANES; lane++) {
        uint32_t p = state[lane];
        for (int l = 0; l < 2; l++) {
            MCA_BEGIN("lv_deep.scalar");
            uint32_t rec = deep[(p + 256 * l) & 1023];
            uint32_t v = ranks[(rec & 0xFFFF) * LANES + (uint32_t)lane];
            p = 2 * p + (v > ((rec >> 16) & 0xFF));
            MCA_END();
        }
        state[64 + lane] = (uint8_t)p;
    }
}

/* ---- heap: ROWS rows through TREES complete trees of DEPTH levels (internal nodes only, the
 * leaf index kept); units = ROWS * TREES * DEPTH a call ---- */
static int32_t hleaf[ROWS];

AVX512 static void heap_avx512(void)
{
    const __m512i one = _mm512_set1_epi32(1);
    const __m512i stride = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9,
                                                                10, 11, 12, 13, 14, 15),
                                              _mm512_set1_epi32(S));
    for (int r0 = 0; r0 < ROWS; r0 += 64) {
        __m512i acc = _mm512_setzero_si512();
        for (int t = 0; t < TREES; t++) {
            const int32_t* f = hfeat + t * NODES;
            const float* th = hthr + t * NODES;
            __m512i i0 = _mm512_setzero_si512(), i1 = i0, i2 = i0, i3 = i0;
            for (int l = 0; l < DEPTH; l++) {
                MCA_BEGIN("heap.avx512");
#define HEAP_STEP(idx, base)                                                                   \
    do {                                                                                       \
        __m512i fe = _mm512_i32gather_epi32(idx, f, 4);                                        \
        __m512 tv = _mm512_i32gather_ps(idx, th, 4);                                           \
        __m512 xv = _mm512_i32gather_ps(_mm512_add_epi32(stride, fe), xf + (size_t)(base) * S, 4); \
        __mmask16 gt = _mm512_cmp_ps_mask(xv, tv, _CMP_GT_OQ);                                 \
        idx = _mm512_mask_add_epi32(_mm512_add_epi32(_mm512_add_epi32(idx, idx), one), gt,     \
                                    _mm512_add_epi32(_mm512_add_epi32(idx, idx), one), one);   \
    } while (0)
                HEAP_STEP(i0, r0);
                HEAP_STEP(i1, r0 + 16);
                HEAP_STEP(i2, r0 + 32);
                HEAP_STEP(i3, r0 + 48);
#undef HEAP_STEP
                MCA_END();
            }
            acc = _mm512_add_epi32(acc, _mm512_add_epi32(_mm512_add_epi32(i0, i1),
                                                         _mm512_add_epi32(i2, i3)));
        }
        _mm512_storeu_si512((void*)(hleaf + (r0 % ROWS)), acc);
    }
}

AVX2 static void heap_avx2(void)
{
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i stride = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                                              _mm256_set1_epi32(S));
    for (int r0 = 0; r0 < ROWS; r0 += 32) {
        __m256i acc = _mm256_setzero_si256();
        for (int t = 0; t < TREES; t++) {
            const int32_t* f = hfeat + t * NODES;
            const float* th = hthr + t * NODES;
            __m256i i0 = _mm256_setzero_si256(), i1 = i0, i2 = i0, i3 = i0;
            for (int l = 0; l < DEPTH; l++) {
                MCA_BEGIN("heap.avx2");
#define HEAP_STEP(idx, base)                                                                   \
    do {                                                                                       \
        __m256i fe = _mm256_i32gather_epi32(f, idx, 4);                                        \
        __m256 tv = _mm256_i32gather_ps(th, idx, 4);                                           \
        __m256 xv = _mm256_i32gather_ps(xf + (size_t)(base) * S, _mm256_add_epi32(stride, fe), 4); \
        __m256i gt = _mm256_castps_si256(_mm256_cmp_ps(xv, tv, _CMP_GT_OQ));                   \
        idx = _mm256_sub_epi32(_mm256_add_epi32(_mm256_add_epi32(idx, idx), one), gt);         \
    } while (0)
                HEAP_STEP(i0, r0);
                HEAP_STEP(i1, r0 + 8);
                HEAP_STEP(i2, r0 + 16);
                HEAP_STEP(i3, r0 + 24);
#undef HEAP_STEP
                MCA_END();
            }
            acc = _mm256_add_epi32(acc, _mm256_add_epi32(_mm256_add_epi32(i0, i1),
                                                         _mm256_add_epi32(i2, i3)));
        }
        _mm256_storeu_si256((__m256i*)(hleaf + r0), acc);
    }
}

/* ---- gw_step: rs_gw_trees on GW_TREES complete trees of GW_DEPTH levels, breadth first with
 * a node's children side by side; units = 64 lanes * GW_TREES * (GW_DEPTH + 1) a call ---- */
enum { GW_TREES = 16, GW_DEPTH = 6, GW_TREE_RECORDS = (2 << GW_DEPTH) - 1 };
static uint64_t gw_records[GW_TREES * GW_TREE_RECORDS + 1];
static int32_t gw_roots[GW_TREES];
static uint8_t gw_cols[S * 64 + 64] __attribute__((aligned(64)));
static double gw_acc[64] __attribute__((aligned(64)));

static void set_gw(void)
{
    for (int t = 0; t < GW_TREES; t++) {
        int base = t * GW_TREE_RECORDS;
        gw_roots[t] = base;
        for (int k = 0; k < GW_TREE_RECORDS; k++) {
            if (k < (1 << GW_DEPTH) - 1) {    /* node k's children: 2k + 1 and 2k + 2 */
                uint32_t up = RS_GW_INNER | (uint32_t)(rnd() % 255) << 12 | (uint32_t)(rnd() % S);
                gw_records[base + k] = (uint64_t)up << 32 | (uint32_t)(base + 2 * k + 1);
            } else {
                double v = (double)(rnd() % 1000) / 7.0;
                memcpy(&gw_records[base + k], &v, 8);
            }
        }
    }
    int park = GW_TREES * GW_TREE_RECORDS;
    gw_records[park] = (uint64_t)(RS_GW_INNER | 255u << 12) << 32 | (uint32_t)park;
    for (int i = 0; i < S * 64; i++) gw_cols[i] = (uint8_t)rnd();
}

static void k_gw(void)
{
    rs_gw_trees(gw_records, gw_roots, GW_TREES * GW_TREE_RECORDS, 0, GW_TREES, gw_cols, gw_acc,
                NULL, 0);
}

static double best_ns(void (*run)(void), double units, int rounds)
{
    int calls = 1;
    for (;;) {                       /* calls enough for 2 ms a round */
        double t0 = now();
        for (int c = 0; c < calls; c++) run();
        if (now() - t0 > 2e-3) break;
        calls *= 2;
    }
    double best = 1e30;
    for (int r = 0; r < rounds; r++) {
        double t0 = now();
        for (int c = 0; c < calls; c++) run();
        double t = (now() - t0) / calls;
        if (t < best) best = t;
    }
    return best * 1e9 / units;
}

/* ---- for llvm-mca: the kernel units' AVX-512 instruction sequences as straight-line code
 * (the branch their arguments take resolved), never run: rank16 (rs_rank_avx512, 16
 * pivots), rank32_16 (rs_rank_f32_avx512), entry (rs_scan_avx512's loop body), exit_row
 * (rs_exits_avx512's), leaf_n64 (rs_add_f64_avx512 of 64 leaves, 8 lanes a region: 8
 * units), leaf32_n64 (rs_add_f32_avx512, 16 lanes a region), reset_row (a 64-byte store) */
AVX512 __attribute__((noinline)) static void mca_units(const double* x, const float* x32, int n)
{
    const __m512i lut = _mm512_broadcast_i32x4(_mm_setr_epi8(RS_TZ_NIBBLE));
    const __m512i low = _mm512_set1_epi8(0x0F), four = _mm512_set1_epi8(4);
    const __m512i r = _mm512_load_si512((const void*)rank_col), ones = _mm512_set1_epi8(-1);
    __m512i out = _mm512_setzero_si512();
    __m512d t[8];
    __m512 t32[4];
    for (int j = 0; j < 8; j++) t[j] = _mm512_loadu_pd(values + 8 * j);
    for (int j = 0; j < 4; j++) t32[j] = _mm512_loadu_ps((const float*)values + 16 * j);
    for (int i = 0; i < n; i++) {
        MCA_BEGIN("rank16.avx512");
        {
            const __m512d xb = _mm512_set1_pd(x[i]);
            const double* p = pivots + 16 * (i % S);
            int c1 = __builtin_popcount(_mm512_cmp_pd_mask(_mm512_loadu_pd(p), xb, _CMP_LT_OQ)) +
                     __builtin_popcount(_mm512_cmp_pd_mask(_mm512_loadu_pd(p + 8), xb, _CMP_LT_OQ));
            const double* b = kbuckets + 16 * c1;
            ranks[i] = (uint8_t)(16 * c1 +
                __builtin_popcount(_mm512_cmp_pd_mask(_mm512_loadu_pd(b), xb, _CMP_LT_OQ)) +
                __builtin_popcount(_mm512_cmp_pd_mask(_mm512_loadu_pd(b + 8), xb, _CMP_LT_OQ)));
        }
        MCA_END();
        MCA_BEGIN("rank32_16.avx512");
        {
            const __m512 xb = _mm512_set1_ps(x32[i]);
            int c1 = __builtin_popcount(
                _mm512_cmp_ps_mask(_mm512_loadu_ps(pivots32 + 16 * (i % S)), xb, _CMP_LT_OQ));
            ranks[i + 1] = (uint8_t)(16 * c1 + __builtin_popcount(_mm512_cmp_ps_mask(
                                                   _mm512_loadu_ps(kbuckets32 + 16 * c1), xb,
                                                   _CMP_LT_OQ)));
        }
        MCA_END();
        MCA_BEGIN("entry.avx512");
        {
            const rs_entry* e = kentries + (i & 4095);
            const __mmask64 k = _mm512_cmpgt_epi8_mask(r, _mm512_set1_epi8((char)e->thr_b));
            __m512i* p = (__m512i*)(state + (size_t)e->byte * 64);
            const __m512i m = _mm512_mask_blend_epi8(k, ones, _mm512_set1_epi8((char)e->mask));
            _mm512_store_si512((void*)p, _mm512_and_si512(_mm512_load_si512((const void*)p), m));
        }
        MCA_END();
        MCA_BEGIN("exit_row.avx512");
        {
            const __m512i v = _mm512_load_si512((const void*)(state + (size_t)(i & 511) * 64));
            const __mmask64 nz = _mm512_test_epi8_mask(v, v);
            const __m512i lo = _mm512_and_si512(v, low);
            const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
            const __m512i tz = _mm512_mask_blend_epi8(_mm512_test_epi8_mask(lo, lo),
                                                      _mm512_add_epi8(_mm512_shuffle_epi8(lut, hi), four),
                                                      _mm512_shuffle_epi8(lut, lo));
            out = _mm512_mask_add_epi8(out, nz, tz, _mm512_set1_epi8((char)(8 * (i & 7))));
        }
        MCA_END();
        MCA_BEGIN("leaf_n64.avx512");
        {
            const __m512i ix = _mm512_cvtepu8_epi64(_mm_loadl_epi64((const __m128i*)(idxs + 8 * (i & 511))));
            __m512d q[4];
            for (int j = 0; j < 4; ++j) q[j] = _mm512_permutex2var_pd(t[2 * j], ix, t[2 * j + 1]);
            const __mmask8 b4 = _mm512_test_epi64_mask(ix, _mm512_set1_epi64(16));
            const __mmask8 b5 = _mm512_test_epi64_mask(ix, _mm512_set1_epi64(32));
            __m512d g = _mm512_mask_blend_pd(b4, q[0], q[1]);
            g = _mm512_mask_blend_pd(b5, g, _mm512_mask_blend_pd(b4, q[2], q[3]));
            _mm512_store_pd(acc64 + 8 * (i & 7), _mm512_add_pd(_mm512_load_pd(acc64 + 8 * (i & 7)), g));
        }
        MCA_END();
        MCA_BEGIN("leaf32_n64.avx512");
        {
            const __m512i ix = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(idxs + 16 * (i & 255))));
            __m512 g = _mm512_permutex2var_ps(t32[0], ix, t32[1]);
            const __m512 h = _mm512_permutex2var_ps(t32[2], ix, t32[3]);
            g = _mm512_mask_blend_ps(_mm512_test_epi32_mask(ix, _mm512_set1_epi32(32)), g, h);
            _mm512_store_ps(acc32 + 16 * (i & 3), _mm512_add_ps(_mm512_load_ps(acc32 + 16 * (i & 3)), g));
        }
        MCA_END();
        MCA_BEGIN("reset_row.avx512");
        _mm512_store_si512((void*)(state + (size_t)(i & 511) * 64), ones);
        MCA_END();
    }
    _mm512_storeu_si512((void*)idxs, out);
}

static void print(const char* unit, const char* isa, void (*run)(void), double units,
                  int rounds)
{
    printf("%s %s %.4f\n", unit, isa, best_ns(run, units, rounds));
}

int main(int argc, char** argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 9;
    fill();
    for (int k = 0; k < 255; k++) {
        int l = 31 - __builtin_clz((unsigned)k + 1);
        lvnodes[k] = (uint32_t)(rnd() % S) | (uint32_t)(k + 1 - (1 << l)) << 24;
    }
    for (int s = 0; s < S; s++) used[s] = column[s] = s;
    for (int i = 0; i < 4096; i++) {
        kentries[i].byte = (uint16_t)(rnd() % 512);
        kentries[i].thr_b = (uint8_t)((rnd() % 255) ^ 0x80);   /* thresholds 0 .. 254 */
        kentries[i].mask = (uint8_t)rnd();
    }
    kentries[4096].thr_b = 0x7F;    /* the sentinel, 255 */
    for (int l = 0; l < 64; l++) rank_col[l] = (uint8_t)rnd();
    rank_col[0] = 255;              /* a lane passes every entry: the scan never stops early */
    __builtin_cpu_init();
    int has512 = __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vbmi");
    if (!__builtin_cpu_supports("avx2")) {
        fprintf(stderr, "floors: this CPU has no AVX2\n");
        return 1;
    }
    static const char* const rank_names[2][3] = {{"rank16", "rank8", "rank0"},
                                                 {"rank32_16", "rank32_8", "rank32_0"}};
    static const int nbks[3] = {16, 8, 1};
    static const int leaves[6] = {8, 16, 32, 64, 128, 256};
    for (int w = has512 ? 0 : 1; w < 2; w++) {
        const char* isa = w == 0 ? "avx512" : "avx2";
        k_isa = w == 0 ? RS_ISA_AVX512 : RS_ISA_AVX2_WIDE;
        for (int f32 = 0; f32 < 2; f32++)
            for (int k = 0; k < 3; k++) {
                set_buckets(nbks[k]);
                k_piv32 = f32 ? pivots32 : NULL;
                k_bkt32 = f32 ? kbuckets32 : NULL;
                print(rank_names[f32][k], isa, k_ranks, LANES * S, rounds);
            }
        print("entry", isa, w == 0 ? k_entries_avx512 : k_entries_avx2w, 4096, rounds);
        print("reset_row", isa, k_reset, 512, rounds);
        print("exit_row", isa, k_exits, 512, rounds);
        for (int k = 0; k < 6; k++) {
            char name[32];
            k_leaves = leaves[k];
            for (int i = 0; i < 64 * 64; i++) idxs[i] = (uint8_t)(rnd() % (uint64_t)k_leaves);
            snprintf(name, sizeof name, "leaf_n%d", k_leaves);
            print(name, isa, k_leaf64, 64 * 64, rounds);
            snprintf(name, sizeof name, "leaf32_n%d", k_leaves);
            print(name, isa, k_leaf32, 64 * 64, rounds);
        }
        /* the level walk: 255 nodes and 8 levels a tree, then 15 and 4; a node's and a
         * level's cost from the two */
        set_levels(8, w == 0 && rs_lv_vbmi_available());
        double t8 = best_ns(k_levels, LV_TREES, rounds);
        set_levels(4, w == 0 && rs_lv_vbmi_available());
        double t4 = best_ns(k_levels, LV_TREES, rounds);
        double level = (255 * t4 - 15 * t8) / (255 * 4 - 15 * 8);
        printf("lv_node %s %.4f\n", isa, (t8 - 8 * level) / 255);
        printf("lv_level %s %.4f\n", isa, level);
        print("heap", isa, w == 0 ? heap_avx512 : heap_avx2, (double)ROWS * TREES * DEPTH, rounds);
        if (w == 0) {
            set_gw();
            print("gw_step", isa, k_gw, 64.0 * GW_TREES * (GW_DEPTH + 1), rounds);
        }
    }
    print("lv_deep", "scalar", k_deep, LANES * 2, rounds);
    if (argc > 3) {                   /* never: keeps the llvm-mca sequences in the build */
        levels_avx512();
        levels_avx2();
        deep_scalar();
    }
    if (argc > 2)                     /* never: keeps the llvm-mca sequences in the build */
        mca_units(X, X32, atoi(argv[2]));
    return 0;
}
