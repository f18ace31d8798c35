/* RapidScorer's level path: depth-wise trees walked level by level in registers, on the
 * ranks of scan.h, with no bitvector and no exit search (rapidscorer.levels.level_arrays,
 * rapidscorer/levels.py). The C prefix is `rs_lv_`. What a group computes and the layout it reads are
 * described below, above RS_LV_BYTE_LEVELS. */
#ifndef QUICKSCORER_ALGORITHMS_RAPIDSCORER_LEVELS_H
#define QUICKSCORER_ALGORITHMS_RAPIDSCORER_LEVELS_H

#include "quickscorer/algorithms/rapidscorer/scan.h"   /* RS_ISA_*, RS_HAVE_X86, rs_lanes, rs_add_*, rs_fill_missing */

#if RS_HAVE_X86
/* whether the level path's AVX-512 walk may take its byte permutations (AVX512_VBMI: Ice
 * Lake, Zen 4 and later; not Skylake-SP or Cascade Lake) */
static inline int rs_lv_vbmi_available(void)
{
    return rs_isa_available(RS_ISA_AVX512) && CPU_SUPPORTS("avx512vbmi");
}

/* whether the level path's AVX-512 calls walk their trees as the AVX2 wide path does, two
 * 256-bit registers a column of 64 lanes (the same columns; the ranks and the rest stay on
 * AVX-512), by default: on every AVX-512 core measured the wide walk took less time than
 * the walk by byte permutations in 512-bit registers at 100 and 10,000 rows on XGBoost depth
 * 6 to 10: 9% to 18% on Zen 4 (which runs a 512-bit operation as two halves), 3% to 16% on
 * Zen 5 and 1% to 10% on an Intel Xeon (family 6, model 167 as its guest reports it).
 * python -m benchmarks.tuning.rs_level_sweep --setting rs_halves --values 0,1 --models
 * xgb-depth6-uniform-1000,xgb-depth8-uniform-1000,xgb-depth9-uniform-1000,
 * xgb-depth10-uniform-1000 --rows 100,10000 re-measures it. */
static inline int rs_lv_halves_default(void)
{
    return rs_isa_available(RS_ISA_AVX512);
}
#else
static inline int rs_lv_vbmi_available(void) { return 0; }
static inline int rs_lv_halves_default(void) { return 0; }
#endif

/* ---- level by level (rapidscorer.levels.level_arrays): trees of depth <= 10, no bitvectors -------
 *
 * A lane's position p in a level of a tree goes to 2 p + 1 in the next where the node at
 * position p sends it right, to 2 p otherwise (no node there: it is below a leaf), so a
 * lane ends at the position P < 2^depth of the last level: the leaf's slot.
 *
 * The upper levels of a tree, those above its `split`, go node by node for all lanes: a
 * node compares one column of the group, cols[col * lanes + l] (the lane's rank, or for a
 * node with missing values that rank with the missing lanes set to 255 or 0), with its
 * threshold index (thr: right where the rank exceeds it) and applies only to the lanes at
 * its position, in registers (positions are bytes: split <= 8). On AVX2 a node only picks
 * the column of the lanes at its position, and the level compares them once with the
 * threshold index its table (`table`, biased by 0x80 for the signed byte compare) holds for
 * each lane's position. The levels from `split` down, whose nodes outnumber what the lanes
 * can reach, go lane by lane instead: the tree's `deep` records hold those levels complete
 * (level l at deep[2^l - 2^split + p]; a position without a node has thr 255, which no
 * rank exceeds), and each lane reads the record at its position and its own column value,
 * a few scalar operations a lane and level, independent across the lanes. */
#define RS_LV_BYTE_LEVELS 8
#define RS_LV_ENDS 10

typedef struct {
    uint16_t col;    /* the column the node reads */
    uint8_t thr;     /* threshold index: right where the column's rank exceeds it */
    uint8_t pos;     /* the node's position in its level (unused in deep records) */
} rs_lv_node;

/* a model's level fields (rapidscorer.levels.level_arrays), tree t: nodes[node_off[t] ..] by level
 * and position, lend[RS_LV_ENDS t + l] the nodes of levels 0 .. l (above split[t]),
 * deep[deep_off[t] ..] its levels from split[t] down, slots from slot_off[t] */
typedef struct {
    const rs_lv_node* nodes;
    const int64_t* node_off;
    const uint16_t* lend;
    const uint8_t* depth;
    const uint8_t* split;
    const rs_lv_node* deep;
    const int64_t* deep_off;
    const int64_t* slot_off;
    const uint8_t* table;      /* levels above split[t] as tables of thr ^ 0x80 by position: */
    const int64_t* table_off;  /* level l at table[table_off[t] + RS_LV_TABLE_AT(l)] */
    int vbmi;                  /* the AVX-512 walk by tables (rs_lv_tree_avx512v) */
    int halves;                /* the AVX-512 path walks as AVX2's 64 lanes (rs_lv_tree_avx2w) */
} rs_lv_model;

/* where level l's table starts among a tree's (rapidscorer.levels.LEVEL_TABLE_AT) */
#define RS_LV_TABLE_AT(l) ((l) <= 4 ? 16 * (l) : 48 + (1 << (l)))

/* the group's columns: the S rank slots, then each combo, slot | kind << 24 | right << 30:
 * the slot's ranks with the lanes of skip[3 slot + kind] set to 255 (right) or 0 */
static inline void rs_lv_columns(const uint8_t* ranks, const uint64_t* skip, int64_t S,
                                 const int32_t* combos, int64_t n_combos, int lanes,
                                 uint8_t* cols)
{
    memcpy(cols, ranks, (size_t)(S * lanes));
    for (int64_t i = 0; i < n_combos; ++i) {
        const int64_t s = combos[i] & 0xFFFFFF;
        const uint64_t m = skip[3 * s + ((combos[i] >> 24) & 3)];
        const uint8_t fill = ((combos[i] >> 30) & 1) ? 0xFF : 0x00;
        const uint8_t* src = cols + s * lanes;
        uint8_t* out = cols + (S + i) * lanes;
        if (m == 0)
            memcpy(out, src, (size_t)lanes);
        else
            rs_fill_missing(src, m, fill, out, lanes);      /* the scans' own fill */
    }
}

/* a lane's next position, 2 s + (thr < c): on x86-64 a compare and an add with carry (the
 * compiler's own code sets a byte from the flags and adds it, two more instructions a lane
 * and level; python benchmarks/experiments/builds_ab.py --before <that build> --shapes
 * xgb-depth8-uniform-1000,xgb-depth9-uniform-1000,xgb-depth10-uniform-1000 --rounds 5) */
#if RS_HAVE_X86 && defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RS_LV_STEP(s, thr, c)                                                                \
    __asm__("cmpb %b[cv], %[tv]\n\tadcq %[sv], %[sv]"                                        \
            : [sv] "+r"(s) : [tv] "m"(thr), [cv] "q"(c) : "cc")
#else
#define RS_LV_STEP(s, thr, c) ((s) = 2 * (s) + (size_t)((thr) < (c)))
#endif

/* the levels split .. depth - 1 of eight lanes, from their byte positions p[0 .. 8) at level
 * split: each lane's slot into s[0 .. 8) (lane j's column bytes at c + j, `lanes` apart).
 * The eight lanes go down all the levels together, their positions in registers: eight
 * chains of loads that do not wait on each other, and no position stored and read back a
 * level, where a level at a time over all the lanes stores each position and reads it back
 * (python -m benchmarks.experiments.builds_ab --before <that build> --shapes
 * xgb-depth8-uniform-1000,xgb-depth9-uniform-1000). A lane at a time alone waits on each
 * step, and AVX2 gathers (8 lanes a register) are slower still. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((always_inline))
#endif
static inline void rs_lv_deep8(const rs_lv_node* deep, int split, int depth, const uint8_t* c,
                               int lanes, const uint8_t* p, size_t* s)
{
    for (int j = 0; j < 8; ++j)
        s[j] = p[j];
#if defined(__GNUC__) || defined(__clang__)
    __asm__("" : "+r"(c));  /* lane j's byte at c + j, not a register per lane (spilled) */
#endif
    const rs_lv_node* lv = deep;
    for (int l = split; l < depth; ++l) {
        for (int j = 0; j < 8; ++j) {
            const rs_lv_node* r = lv + s[j];
            RS_LV_STEP(s[j], r->thr, c[(size_t)r->col * lanes + j]);
        }
        lv += (size_t)1 << l;
    }
}

/* the levels split .. depth - 1 lane by lane (rs_lv_deep8), from the byte positions p of
 * level split: each lane's slot into slot, for the first n lanes (a multiple of 8: the lanes
 * a group's rows fill, rounded up) of the group's `lanes` (32 or 64, the columns' stride) */
static inline void rs_lv_deep(const rs_lv_node* deep, int split, int depth,
                              const uint8_t* cols, int lanes, int n, const uint8_t* p,
                              uint16_t* slot)
{
    for (int k = 0; k < n; k += 8) {
        size_t s[8];
        rs_lv_deep8(deep, split, depth, cols + k, lanes, p + k, s);
        for (int j = 0; j < 8; ++j)
            slot[k + j] = (uint16_t)s[j];
    }
}

/* each lane's position at level split[t] of tree t into p, and where the tree goes deeper
 * its slot into slot (where it does not, p is the slot) (portable C) */
static inline void rs_lv_tree_c(const rs_lv_model* m, int64_t t, const uint8_t* cols,
                                int lanes, int n, uint8_t* p, uint16_t* slot)
{
    const rs_lv_node* nd = m->nodes + m->node_off[t];
    const uint16_t* lend = m->lend + RS_LV_ENDS * t;
    uint8_t b[64];
    memset(p, 0, (size_t)lanes);
    int i = 0;
    for (int l = 0; l < m->split[t]; ++l) {
        memset(b, 0, sizeof(b));
        for (; i < lend[l]; ++i) {
            const uint8_t* c = cols + (size_t)nd[i].col * lanes;
            for (int k = 0; k < lanes; ++k)
                b[k] |= (uint8_t)(p[k] == nd[i].pos && c[k] > nd[i].thr);
        }
        for (int k = 0; k < lanes; ++k)
            p[k] = (uint8_t)(2 * p[k] + b[k]);
    }
    if (m->split[t] < m->depth[t])
        rs_lv_deep(m->deep + m->deep_off[t], m->split[t], m->depth[t], cols, lanes, n, p,
                   slot);
}

#if RS_HAVE_X86
/* level l's threshold index for each lane at position p (bytes below 2^l, l <= 7) from the
 * level's table tab: a byte shuffle of each 16-byte part, then for l > 4 the parts chosen by
 * the position's bits 4, 5 and 6 (each moved to its byte's top bit for the blend) */
#define RS_LV_PART(k) _mm256_shuffle_epi8(                                                    \
    _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)(tab + 16 * (k)))), p)
CPU_TARGET("avx2")
static inline __m256i rs_lv_thr_avx2(const uint8_t* tab, int l, __m256i p)
{
    if (l <= 4)
        return RS_LV_PART(0);
    const __m256i b4 = _mm256_slli_epi16(p, 3);
    if (l == 5)
        return _mm256_blendv_epi8(RS_LV_PART(0), RS_LV_PART(1), b4);
    const __m256i b5 = _mm256_slli_epi16(p, 2);
    const __m256i q0 = _mm256_blendv_epi8(
        _mm256_blendv_epi8(RS_LV_PART(0), RS_LV_PART(1), b4),
        _mm256_blendv_epi8(RS_LV_PART(2), RS_LV_PART(3), b4), b5);
    if (l == 6)
        return q0;
    const __m256i q1 = _mm256_blendv_epi8(
        _mm256_blendv_epi8(RS_LV_PART(4), RS_LV_PART(5), b4),
        _mm256_blendv_epi8(RS_LV_PART(6), RS_LV_PART(7), b4), b5);
    return _mm256_blendv_epi8(q0, q1, _mm256_slli_epi16(p, 1));
}
#undef RS_LV_PART

/* 32 lanes (H = 1) or 64 (H = 2: two registers a column, as the AVX2 wide path). A level
 * walked node by node only picks each lane's column: a node blends its column into the lanes
 * at its position (a compare of positions and a blend), and the level then compares the
 * picked values with the thresholds its table gives each lane's position, once: two
 * operations a node where a test per node takes a compare, a compare of positions and two
 * logic operations (python benchmarks/experiments/builds_ab.py --before <that build> --shapes
 * xgb-depth6-heavy-1000,xgb-depth7-uniform-1000,xgb-depth8-uniform-1000,
 * xgb-depth9-uniform-1000 --rows 32,100,10000). Two nodes go a step, as a node at a time is
 * bound by the instructions that run the loop (four a step gain nothing over two).
 * rs_lv_tree_avx512v does the same on AVX-512 with VBMI. */
#define RS_LV_TREE_AVX2(NAME, H)                                                              \
CPU_TARGET("avx2")                                                                            \
static void NAME(const rs_lv_model* m, int64_t t, const uint8_t* cols, uint8_t* idx,         \
                 uint16_t* slot, int n)                                                      \
{                                                                                            \
    const rs_lv_node* nd = m->nodes + m->node_off[t];                                        \
    const uint16_t* lend = m->lend + RS_LV_ENDS * t;                                         \
    const uint8_t* tab = m->table + m->table_off[t];                                         \
    const __m256i bias = _mm256_set1_epi8((char)0x80);   /* ranks to the table's signs */   \
    __m256i p[H], v[H];                                                                      \
    for (int h = 0; h < H; ++h) {                                                            \
        p[h] = _mm256_setzero_si256();                                                       \
        v[h] = _mm256_setzero_si256();                                                       \
    }                                                                                        \
    const rs_lv_node* q = nd;                                                                \
    for (int l = 0; l < m->split[t]; ++l) {                                                  \
        const rs_lv_node* const e = nd + lend[l];                                            \
        for (; q + 2 <= e; q += 2) {    /* two nodes a step: their blends interleave */      \
            const __m256i j0 = _mm256_set1_epi8((char)q[0].pos);                             \
            const __m256i j1 = _mm256_set1_epi8((char)q[1].pos);                             \
            const __m256i* c0 = (const __m256i*)(cols + (size_t)q[0].col * 32 * H);         \
            const __m256i* c1 = (const __m256i*)(cols + (size_t)q[1].col * 32 * H);         \
            for (int h = 0; h < H; ++h) {                                                    \
                v[h] = _mm256_blendv_epi8(v[h], _mm256_load_si256(c0 + h),                   \
                                          _mm256_cmpeq_epi8(p[h], j0));                      \
                v[h] = _mm256_blendv_epi8(v[h], _mm256_load_si256(c1 + h),                   \
                                          _mm256_cmpeq_epi8(p[h], j1));                      \
            }                                                                                \
        }                                                                                    \
        if (q < e) {                                                                         \
            const __m256i j = _mm256_set1_epi8((char)q->pos);                                \
            const __m256i* c = (const __m256i*)(cols + (size_t)q->col * 32 * H);            \
            for (int h = 0; h < H; ++h)                                                      \
                v[h] = _mm256_blendv_epi8(v[h], _mm256_load_si256(c + h),                    \
                                          _mm256_cmpeq_epi8(p[h], j));                       \
            ++q;                                                                             \
        }                                                                                    \
        for (int h = 0; h < H; ++h) {   /* right: -1, and 2 p - (-1) */                      \
            const __m256i b = _mm256_cmpgt_epi8(_mm256_xor_si256(v[h], bias),                \
                rs_lv_thr_avx2(tab + RS_LV_TABLE_AT(l), l, p[h]));                           \
            p[h] = _mm256_sub_epi8(_mm256_add_epi8(p[h], p[h]), b);                          \
        }                                                                                    \
    }                                                                                        \
    for (int h = 0; h < H; ++h)                                                              \
        _mm256_storeu_si256((__m256i*)(idx + 32 * h), p[h]);                                 \
    if (m->split[t] < m->depth[t])                                                           \
        rs_lv_deep(m->deep + m->deep_off[t], m->split[t], m->depth[t], cols, 32 * H, n, idx, \
                   slot);                                                                    \
}
RS_LV_TREE_AVX2(rs_lv_tree_avx2, 1)
RS_LV_TREE_AVX2(rs_lv_tree_avx2w, 2)

/* 64 lanes in one register: a node's test only where the lanes are at its position */
CPU_TARGET("avx512f,avx512bw")
static void rs_lv_tree_avx512(const rs_lv_model* m, int64_t t, const uint8_t* cols,
                              uint8_t* idx, uint16_t* slot, int n)
{
    const rs_lv_node* nd = m->nodes + m->node_off[t];
    const uint16_t* lend = m->lend + RS_LV_ENDS * t;
    const __m512i one = _mm512_set1_epi8(1);
    __m512i p = _mm512_setzero_si512();
    int i = 0;
    for (int l = 0; l < m->split[t]; ++l) {
        __mmask64 b = 0;
        for (; i < lend[l]; ++i) {
            const __m512i c = _mm512_load_si512((const void*)(cols + (size_t)nd[i].col * 64));
            const __mmask64 at = _mm512_cmpeq_epi8_mask(p, _mm512_set1_epi8((char)nd[i].pos));
            b |= at & _mm512_cmpgt_epu8_mask(c, _mm512_set1_epi8((char)nd[i].thr));
        }
        p = _mm512_add_epi8(p, p);
        p = _mm512_mask_add_epi8(p, b, p, one);
    }
    _mm512_storeu_si512((void*)idx, p);
    if (m->split[t] < m->depth[t])
        rs_lv_deep(m->deep + m->deep_off[t], m->split[t], m->depth[t], cols, 64, n, idx, slot);
}

/* level l's threshold index for each lane at position p (l <= 7) from the level's table tab,
 * by one byte permutation: the 16 or 32 bytes of levels 0 to 5 repeated across the register
 * (no byte read past the level's table), level 6's 64 bytes, level 7's 128 in two registers
 * (vpermi2b: bit 6 of the position picks the register) */
CPU_TARGET("avx512f,avx512bw,avx512vbmi") __attribute__((always_inline))
static inline __m512i rs_lv_thr_avx512v(const uint8_t* tab, int l, __m512i p)
{
    if (l <= 4)
        return _mm512_permutexvar_epi8(
            p, _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i*)tab)));
    if (l == 5)
        return _mm512_permutexvar_epi8(
            p, _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i*)tab)));
    if (l == 6)
        return _mm512_permutexvar_epi8(p, _mm512_loadu_si512((const void*)tab));
    return _mm512_permutex2var_epi8(_mm512_loadu_si512((const void*)tab), p,
                                    _mm512_loadu_si512((const void*)(tab + 64)));
}

/* 64 lanes in one register with AVX512_VBMI, as the AVX2 walk: a node moves its column into
 * the lanes at its position (a compare of positions and a masked move), and the level
 * compares the moved values once with the threshold indices its table gives each lane's
 * position (rs_lv_thr_avx512v). Against rs_lv_tree_avx512 (a compare of positions, a compare
 * of the column and two mask operations a node), which Tuning.rs_vbmi off keeps: two
 * operations a node, not four (python
 * benchmarks/tuning/rs_level_sweep.py --setting rs_vbmi --values 0,1 --models
 * xgb-depth6-uniform-1000,xgb-depth8-uniform-1000,xgb-depth9-uniform-1000 --rows
 * 32,100,10000). */
CPU_TARGET("avx512f,avx512bw,avx512vbmi")
static void rs_lv_tree_avx512v(const rs_lv_model* m, int64_t t, const uint8_t* cols,
                               uint8_t* idx, uint16_t* slot, int n)
{
    const rs_lv_node* q = m->nodes + m->node_off[t];
    const rs_lv_node* const nd = q;
    const uint16_t* lend = m->lend + RS_LV_ENDS * t;
    const uint8_t* tab = m->table + m->table_off[t];
    const __m512i bias = _mm512_set1_epi8((char)0x80);  /* ranks to the table's signs */
    const __m512i one = _mm512_set1_epi8(1);
    __m512i p = _mm512_setzero_si512(), v = _mm512_setzero_si512();
    for (int l = 0; l < m->split[t]; ++l) {
        for (const rs_lv_node* const e = nd + lend[l]; q < e; ++q)
            v = _mm512_mask_mov_epi8(
                v, _mm512_cmpeq_epi8_mask(p, _mm512_set1_epi8((char)q->pos)),
                _mm512_load_si512((const void*)(cols + (size_t)q->col * 64)));
        const __mmask64 right = _mm512_cmpgt_epi8_mask(
            _mm512_xor_si512(v, bias), rs_lv_thr_avx512v(tab + RS_LV_TABLE_AT(l), l, p));
        const __m512i twice = _mm512_add_epi8(p, p);
        p = _mm512_mask_add_epi8(twice, right, twice, one);
    }
    _mm512_storeu_si512((void*)idx, p);
    if (m->split[t] < m->depth[t])
        rs_lv_deep(m->deep + m->deep_off[t], m->split[t], m->depth[t], cols, 64, n, idx, slot);
}

/* Every tree of a one-output model level by level, its leaf values summed in tree order (as
 * rs_add_f32 / rs_add_f64: acc + v, float32 acc + v * w where weighted, fused where
 * QS_FUSED_SUMS): NL lanes (32 or 64)
 * on the walk TREE (AVX2, or AVX-512 for TARGET "avx512f,avx512bw") above each tree's split;
 * value: the leaf value of each slot. Only the lanes the group's n_lanes rows fill are
 * walked below the split and summed, in blocks of 8 (float32) or 4 (float64): a call of 8
 * rows in a group of 32 adds a quarter of the values. Below the split each 8 lanes' slots go
 * from the walk (rs_lv_deep8) straight to their leaf values, not through memory: 4% to 7%
 * less time than slots stored and read back on XGBoost depth 8 and 9 at 100 and 10,000
 * rows (Zen 4; python -m benchmarks.experiments.rs_builds_ab --builds <that build>,.
 * --shapes xgb-depth8-uniform-1000,xgb-depth9-uniform-1000 --rows 100,10000). The float32
 * scores stay in registers across the trees (the whole group's blocks a constant count, so
 * that they do; a partial group's a variable one); the float64 ones (16 registers for 64
 * lanes) in acc. */
#define RS_LV_SUM(NAME, TREE, NL, TARGET)                                                     \
CPU_TARGET(TARGET) __attribute__((always_inline))                                             \
static inline void NAME##_f32_n(const rs_lv_model* m, const float* value,                    \
                                const float* tree_weight, int64_t t0, int64_t t1,            \
                                const uint8_t* cols, float* acc, const int nc)               \
{                                                                                            \
    uint8_t idx[NL] __attribute__((aligned(32)));                                            \
    uint16_t slot[NL] __attribute__((aligned(32)));                                          \
    __m256 a[NL / 8];                                                                        \
    for (int c = 0; c < nc; ++c)                                                             \
        a[c] = _mm256_loadu_ps(acc + 8 * c);                                                 \
    for (int64_t t = t0; t < t1; ++t) {                                                      \
        TREE(m, t, cols, idx, slot, 0);           /* the levels above the split */          \
        const float* v = value + m->slot_off[t];                                             \
        const float w = tree_weight != NULL ? tree_weight[t] : 1.0f;                         \
        if (m->split[t] < m->depth[t])                                                       \
            for (int c = 0; c < nc; ++c) {                                                   \
                size_t s[8];                                                                 \
                rs_lv_deep8(m->deep + m->deep_off[t], m->split[t], m->depth[t],              \
                            cols + 8 * c, NL, idx + 8 * c, s);                               \
                a[c] = rs_sl_add_leaves8_ps(a[c], v, s, tree_weight != NULL, w);             \
            }                                                                                \
        else                                                                                 \
            for (int c = 0; c < nc; ++c)                                                     \
                a[c] = rs_add_leaves8_ps(a[c], v, idx + 8 * c, tree_weight != NULL, w);      \
    }                                                                                        \
    for (int c = 0; c < nc; ++c)                                                             \
        _mm256_storeu_ps(acc + 8 * c, a[c]);                                                 \
}                                                                                            \
CPU_TARGET(TARGET)                                                                            \
static void NAME##_f32(const rs_lv_model* m, const float* value, const float* tree_weight,  \
                       int64_t t0, int64_t t1, const uint8_t* cols, float* acc, int n_lanes) \
{                                                                                            \
    const int nc = (n_lanes + 7) / 8;                                                        \
    if (nc >= NL / 8)                                                                        \
        NAME##_f32_n(m, value, tree_weight, t0, t1, cols, acc, NL / 8);                      \
    else                                                                                     \
        NAME##_f32_n(m, value, tree_weight, t0, t1, cols, acc, nc);                          \
}                                                                                            \
CPU_TARGET(TARGET)                                                                            \
static void NAME##_f64(const rs_lv_model* m, const double* value, int64_t t0, int64_t t1,   \
                       const uint8_t* cols, double* acc, int n_lanes)                        \
{                                                                                            \
    uint8_t idx[NL] __attribute__((aligned(32)));                                            \
    uint16_t slot[NL] __attribute__((aligned(32)));                                          \
    const int nc = n_lanes >= NL ? NL / 4 : (n_lanes + 3) / 4;                               \
    for (int64_t t = t0; t < t1; ++t) {                                                      \
        TREE(m, t, cols, idx, slot, 0);           /* the levels above the split */          \
        const double* v = value + m->slot_off[t];                                            \
        if (m->split[t] < m->depth[t])                                                       \
            for (int c = 0; c < nc; c += 2) {    /* 8 lanes' slots, 4 lanes' adds */        \
                size_t s[8];                                                                 \
                rs_lv_deep8(m->deep + m->deep_off[t], m->split[t], m->depth[t],              \
                            cols + 4 * c, NL, idx + 4 * c, s);                               \
                _mm256_storeu_pd(acc + 4 * c, _mm256_add_pd(_mm256_loadu_pd(acc + 4 * c),    \
                                 rs_sl_leaves4_pd(v, s)));                                   \
                if (c + 1 < nc)                                                              \
                    _mm256_storeu_pd(acc + 4 * c + 4, _mm256_add_pd(                         \
                        _mm256_loadu_pd(acc + 4 * c + 4), rs_sl_leaves4_pd(v, s + 4)));      \
            }                                                                                \
        else                                                                                 \
            for (int c = 0; c < nc; ++c)                                                     \
                _mm256_storeu_pd(acc + 4 * c, _mm256_add_pd(_mm256_loadu_pd(acc + 4 * c),    \
                                                            rs_leaves4_pd(v, idx + 4 * c)));  \
    }                                                                                        \
}
RS_LV_SUM(rs_lv_sum_avx2, rs_lv_tree_avx2, 32, "avx2")
RS_LV_SUM(rs_lv_sum_avx2w, rs_lv_tree_avx2w, 64, "avx2")
RS_LV_SUM(rs_lv_sum_avx512, rs_lv_tree_avx512, 64, "avx512f,avx512bw")
RS_LV_SUM(rs_lv_sum_avx512v, rs_lv_tree_avx512v, 64, "avx512f,avx512bw,avx512vbmi")
#endif

/* whether rs_lv_sum_f32 / _f64 sum on path isa (AVX2, AVX2_WIDE, AVX512) */
static inline int rs_lv_fused(int isa)
{
#if RS_HAVE_X86
    return isa == RS_ISA_AVX2 || isa == RS_ISA_AVX2_WIDE || isa == RS_ISA_AVX512;
#else
    (void)isa;
    return 0;
#endif
}

/* the level walk a call on path isa runs: on AVX-512, the AVX2 wide walk where the layout
 * walks in halves, else the walk by byte permutations where it has VBMI, else a node at a
 * time (RS_LV_AVX512V and RS_LV_AVX512 below); on the other paths, the path's own */
#define RS_LV_AVX512V (-1)
static inline int rs_lv_walk(int isa, const rs_lv_model* m)
{
    if (isa != RS_ISA_AVX512)
        return isa;
    return m->halves ? RS_ISA_AVX2_WIDE : m->vbmi ? RS_LV_AVX512V : RS_ISA_AVX512;
}

/* trees [t0, t1) of a one-output model added to the scores acc of a group's first n_lanes
 * lanes (the rows it holds), in tree order, in registers, on path isa (returns 1); 0 where
 * rs_lv_fused(isa) is not, the caller then walks and adds tree by tree */
static inline int rs_lv_sum_f32(int isa, const rs_lv_model* m, const float* value,
                                const float* tree_weight, int64_t t0, int64_t t1,
                                const uint8_t* cols, float* acc, int n_lanes)
{
#if RS_HAVE_X86
    switch (rs_lv_walk(isa, m)) {
    case RS_ISA_AVX2:
        rs_lv_sum_avx2_f32(m, value, tree_weight, t0, t1, cols, acc, n_lanes);
        return 1;
    case RS_ISA_AVX2_WIDE:
        rs_lv_sum_avx2w_f32(m, value, tree_weight, t0, t1, cols, acc, n_lanes);
        return 1;
    case RS_LV_AVX512V:
        rs_lv_sum_avx512v_f32(m, value, tree_weight, t0, t1, cols, acc, n_lanes);
        return 1;
    case RS_ISA_AVX512:
        rs_lv_sum_avx512_f32(m, value, tree_weight, t0, t1, cols, acc, n_lanes);
        return 1;
    }
#endif
    (void)isa; (void)m; (void)value; (void)tree_weight; (void)t0; (void)t1; (void)cols;
    (void)acc; (void)n_lanes;
    return 0;
}

static inline int rs_lv_sum_f64(int isa, const rs_lv_model* m, const double* value,
                                int64_t t0, int64_t t1, const uint8_t* cols, double* acc,
                                int n_lanes)
{
#if RS_HAVE_X86
    switch (rs_lv_walk(isa, m)) {
    case RS_ISA_AVX2: rs_lv_sum_avx2_f64(m, value, t0, t1, cols, acc, n_lanes); return 1;
    case RS_ISA_AVX2_WIDE: rs_lv_sum_avx2w_f64(m, value, t0, t1, cols, acc, n_lanes); return 1;
    case RS_LV_AVX512V: rs_lv_sum_avx512v_f64(m, value, t0, t1, cols, acc, n_lanes); return 1;
    case RS_ISA_AVX512: rs_lv_sum_avx512_f64(m, value, t0, t1, cols, acc, n_lanes); return 1;
    }
#endif
    (void)isa; (void)m; (void)value; (void)t0; (void)t1; (void)cols; (void)acc; (void)n_lanes;
    return 0;
}

/* a group's slot of every lane in tree t, on path isa: in idx where the tree is no deeper
 * than its split, else in slot (its first n lanes, a multiple of 8) */
static inline void rs_lv_tree(int isa, const rs_lv_model* m, int64_t t, const uint8_t* cols,
                              uint8_t* idx, uint16_t* slot, int n)
{
#if RS_HAVE_X86
    switch (rs_lv_walk(isa, m)) {
    case RS_ISA_AVX2: rs_lv_tree_avx2(m, t, cols, idx, slot, n); return;
    case RS_ISA_AVX2_WIDE: rs_lv_tree_avx2w(m, t, cols, idx, slot, n); return;
    case RS_LV_AVX512V: rs_lv_tree_avx512v(m, t, cols, idx, slot, n); return;
    case RS_ISA_AVX512: rs_lv_tree_avx512(m, t, cols, idx, slot, n); return;
    }
#endif
    rs_lv_tree_c(m, t, cols, rs_lanes(isa), n, idx, slot);
}

#endif
