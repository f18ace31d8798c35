/* RapidScorer's gathered walk: each lane of a group walks its own row down the trees in
 * tree order, one node a step, its node and its rank read by AVX-512 gathers, on the columns
 * of the level path (levels.h rs_lv_columns: the ranks, then the columns whose missing lanes
 * are sent to a side). The C prefix is `rs_gw_`; the layout is rapidscorer/walks.py's
 * walk_arrays.
 *
 * A record of gw_nodes is 64 bits. An internal node's upper word is RS_GW_INNER | thr << 12 |
 * col (a NaN pattern no finite leaf value has) and its lower word the index of its left
 * child, the right child the record after it: a lane goes right where its rank in column col
 * exceeds thr. A leaf's record is its value, a finite double. So a step is one 64-bit gather
 * of the lanes' records and one gather of their ranks; a lane whose record is a leaf adds it
 * to its sum (the same sum as the scans': tree order, float64) and goes to its next tree's
 * root. The lanes walk apart, each on its own tree; a lane past the last tree of a chunk
 * (RS_GW_TREES trees, their roots in registers) waits on the park record, an internal node
 * that is its own left child with threshold 255, which no rank exceeds.
 *
 * A lane's steps are its exit leaves' depths plus one a tree, where the scans visit every
 * threshold a group's lanes pass, and a level walk every level of the deepest leaf: it pays
 * on deep, leaf-wise trees (255 leaves) on a core whose gathers are cheap (Intel's):
 * rapidscorer/walks.py's cost model decides which layouts have its fields, rs_gw_default (or
 * Tuning.rs_gathered) which calls take it. */
#ifndef QUICKSCORER_ALGORITHMS_RAPIDSCORER_GW_H
#define QUICKSCORER_ALGORITHMS_RAPIDSCORER_GW_H

#include <stdint.h>
#include <string.h>

#include "quickscorer/algorithms/rapidscorer/scan.h"   /* RS_HAVE_X86, rs_isa_available */

#define RS_GW_INNER 0xFFF00000u   /* an internal record's upper word is at least this */
#define RS_GW_COLS 4096           /* the columns a record can name (12 bits) */
#define RS_GW_TREES 63            /* trees a chunk: their roots and the park record, 64 */
#define RS_GW_GROUPS 16           /* groups a thread walks through each chunk of trees */

/* The records of the chunk of trees from t (none past the last tree): where they start and
 * their bytes, *bytes. */
static inline const char* rs_gw_chunk_records(const uint64_t* nodes, const int32_t* roots,
                                              int32_t park, int64_t t, int64_t n_trees,
                                              int64_t* bytes)
{
    if (t >= n_trees) {
        *bytes = 0;
        return (const char*)nodes;
    }
    int64_t end = t + RS_GW_TREES < n_trees ? roots[t + RS_GW_TREES] : park;
    *bytes = (end - roots[t]) * 8;
    return (const char*)(nodes + roots[t]);
}

/* The walk lane by lane in portable C: the same records, steps and sums, for a build whose
 * intrinsics SIMDe emulates (it has no gathers) */
static inline void rs_gw_trees_c(const uint64_t* nodes, const int32_t* roots, int64_t t0,
                                 int64_t t1, const uint8_t* cols, double* acc)
{
    for (int l = 0; l < 64; l++) {
        double sum = acc[l];
        for (int64_t t = t0; t < t1; t++) {
            uint64_t rec = nodes[roots[t]];
            while ((uint32_t)(rec >> 32) >= RS_GW_INNER) {
                uint32_t up = (uint32_t)(rec >> 32), left = (uint32_t)rec;
                uint8_t rank = cols[64 * (int64_t)(up & (RS_GW_COLS - 1)) + l];
                rec = nodes[left + (rank > ((up >> 12) & 0xFF))];
            }
            double v;
            memcpy(&v, &rec, sizeof v);
            sum += v;
        }
        acc[l] = sum;
    }
}

#if RS_HAVE_X86 && CPU_NATIVE_X86 && CPU_SIMDE
#define RS_GW_COMPILED 1
static inline int rs_gw_default(void)
{
    return rs_isa_available(RS_ISA_AVX512) && cpu_is_intel();
}

static inline void rs_gw_trees(const uint64_t* nodes, const int32_t* roots, int32_t park,
                               int64_t t0, int64_t t1, const uint8_t* cols, double* acc,
                               const char* pf, int64_t pf_bytes)
{
    (void)park, (void)pf, (void)pf_bytes;
    rs_gw_trees_c(nodes, roots, t0, t1, cols, acc);
}
#elif RS_HAVE_X86 && CPU_NATIVE_X86
#define RS_GW_COMPILED 1
/* whether the gathered walk runs by default where the layout has it: AVX-512 on an Intel
 * core, where it took 1.9x less time than the scans on 1,000 full 255-leaf LightGBM trees at
 * 100 and 10,000 rows (python -m benchmarks.tuning.rs_level_sweep --setting
 * rs_gathered --values 0,1 --models full-uniform-1000x127,full-uniform-1000x255 --rows
 * 100,10000 re-measures it); it has been measured on no AMD core, which keeps the scans
 * unless Tuning.rs_gathered says otherwise */
static inline int rs_gw_default(void)
{
    return rs_isa_available(RS_ISA_AVX512) && cpu_is_intel();
}

/* Trees t0 .. t1 - 1 (at most RS_GW_TREES) for the 64 lanes of a group whose columns are
 * cols (column c of lane l at cols[64 c + l]): their leaves added to acc[l] in tree order.
 * pf, pf_bytes: records the next walk reads, brought towards L2 four lines a round of steps
 * while this one walks (a call of a few groups reads every record from L3 once). */
CPU_TARGET("avx512f,avx512bw,avx512dq")
static void rs_gw_trees(const uint64_t* nodes, const int32_t* roots, int32_t park, int64_t t0,
                        int64_t t1, const uint8_t* cols, double* acc, const char* pf,
                        int64_t pf_bytes)
{
    const __m512i one = _mm512_set1_epi32(1);
    const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26,
                                           28, 30);
    const __m512i odd = _mm512_add_epi32(even, one);
    const __m512i col_mask = _mm512_set1_epi32(RS_GW_COLS - 1);
    const __m512i byte = _mm512_set1_epi32(0xFF);
    const __m512i inner = _mm512_set1_epi32((int)RS_GW_INNER);
    const __m512i bit5 = _mm512_set1_epi32(32);
    int32_t rt[64];
    for (int k = 0; k < 64; k++) rt[k] = t0 + k < t1 ? roots[t0 + k] : park;
    const __m512i r0 = _mm512_loadu_si512(rt), r1 = _mm512_loadu_si512(rt + 16);
    const __m512i r2 = _mm512_loadu_si512(rt + 32), r3 = _mm512_loadu_si512(rt + 48);
    const __m512i end = _mm512_set1_epi32((int)(t1 - t0));
    __m512i at[4], tree[4], lane[4];
    __m512d lo[4], hi[4];
    for (int v = 0; v < 4; v++) {
        at[v] = _mm512_set1_epi32(rt[0]);
        tree[v] = _mm512_setzero_si512();
        lane[v] = _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
                                                     13, 14, 15),
                                   _mm512_set1_epi32(16 * v));
        lo[v] = _mm512_loadu_pd(acc + 16 * v);
        hi[v] = _mm512_loadu_pd(acc + 16 * v + 8);
    }
    __mmask16 live;
    int64_t pf_at = 0;
    do {
        live = 0;
        if (pf_at < pf_bytes) {
            _mm_prefetch(pf + pf_at, _MM_HINT_T1);
            _mm_prefetch(pf + pf_at + 64, _MM_HINT_T1);
            _mm_prefetch(pf + pf_at + 128, _MM_HINT_T1);
            _mm_prefetch(pf + pf_at + 192, _MM_HINT_T1);
            pf_at += 256;
        }
        for (int v = 0; v < 4; v++) {   /* four independent chains of gathers */
            __m512i n0 = _mm512_i32gather_epi64(_mm512_castsi512_si256(at[v]),
                                                (const long long*)nodes, 8);
            __m512i n1 = _mm512_i32gather_epi64(_mm512_extracti64x4_epi64(at[v], 1),
                                                (const long long*)nodes, 8);
            __m512i left = _mm512_permutex2var_epi32(n0, even, n1);
            __m512i up = _mm512_permutex2var_epi32(n0, odd, n1);
            __mmask16 node = _mm512_cmpge_epu32_mask(up, inner);
            __m512i where = _mm512_add_epi32(_mm512_slli_epi32(_mm512_and_si512(up, col_mask),
                                                               6), lane[v]);
            __m512i rank = _mm512_and_si512(
                _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), node, where,
                                            (const int*)cols, 1), byte);
            __mmask16 right = _mm512_mask_cmpgt_epu32_mask(
                node, rank, _mm512_and_si512(_mm512_srli_epi32(up, 12), byte));
            __mmask16 leaf = (__mmask16)~node;
            lo[v] = _mm512_mask_add_pd(lo[v], (__mmask8)leaf, lo[v], _mm512_castsi512_pd(n0));
            hi[v] = _mm512_mask_add_pd(hi[v], (__mmask8)(leaf >> 8), hi[v],
                                       _mm512_castsi512_pd(n1));
            tree[v] = _mm512_mask_add_epi32(tree[v], leaf, tree[v], one);
            __m512i root = _mm512_mask_blend_epi32(
                _mm512_test_epi32_mask(tree[v], bit5), _mm512_permutex2var_epi32(r0, tree[v], r1),
                _mm512_permutex2var_epi32(r2, tree[v], r3));
            at[v] = _mm512_mask_blend_epi32(leaf, _mm512_mask_add_epi32(left, right, left, one),
                                            root);
            live |= _mm512_cmplt_epi32_mask(tree[v], end);
        }
    } while (live);
    for (int v = 0; v < 4; v++) {
        _mm512_storeu_pd(acc + 16 * v, lo[v]);
        _mm512_storeu_pd(acc + 16 * v + 8, hi[v]);
    }
}
#else
#define RS_GW_COMPILED 0
static inline int rs_gw_default(void) { return 0; }
static inline void rs_gw_trees(const uint64_t* nodes, const int32_t* roots, int32_t park,
                               int64_t t0, int64_t t1, const uint8_t* cols, double* acc,
                               const char* pf, int64_t pf_bytes)
{
    (void)nodes, (void)roots, (void)park, (void)t0, (void)t1, (void)cols, (void)acc, (void)pf,
        (void)pf_bytes;
}
#endif

#endif
