/* RapidScorer's scans (Ye et al., KDD 2018): byte-transposed leaf bitvectors, node masks
 * as "epitomes", comparisons in rank space.
 *
 * A group holds RS_LANES(isa) documents: 64 on AVX-512 (AVX512BW), 32 on AVX2 and in portable
 * C. The leaf bitvector of a tree is kept byte by byte, and byte b of all documents of the
 * group is one row of `lanes` bytes: state[b * lanes + l] is byte b of document l. A node
 * clears the contiguous leaf range of its left subtree, so its mask touches a contiguous run
 * of bytes (its "epitome"): the first and last partially, those between entirely. An entry
 * is one byte of that run (`byte`, its AND `mask`) with the node's threshold as a rank: thr
 * is the index of the threshold among the distinct thresholds of its feature, and a document
 * whose value x has rank(x) = #{thresholds < x} makes the node false exactly when
 * rank(x) > thr; the entry holds thr_b = thr ^ 0x80, the threshold as a signed byte, and
 * the scans compare rank ^ 0x80 with it. (One entry per byte keeps the scan free of
 * branches on the run's length; a 64-leaf tree has 68 entries for its 63 nodes.)
 *
 * Entries of one (feature, missing-value kind) segment are sorted by thr and closed by a
 * sentinel with thr = 255, which no rank exceeds; a scan stops at the first entry no lane
 * exceeds. A segment of mirrored nodes (rapidscorer/layout.py: false when rank(x) <= j) compares
 * the complemented rank 255 - rank(x) with thr = 254 - j instead (`flip`). Three
 * implementations give identical results (the same byte ANDs).
 *
 * On AVX2 a group is 32 documents (one register per byte row) or, for calls that fill them,
 * 64 (RS_ISA_AVX2_WIDE: a row of 64 bytes in two registers, both halves of one cache line):
 * an entry's load, broadcasts and test are then shared by twice the documents, and a
 * document's scan costs about 0.6 of the 32-lane one (benchmarks/experiments/rs_scan_floor.c).
 */
#ifndef QUICKSCORER_ALGORITHMS_RAPIDSCORER_SCAN_H
#define QUICKSCORER_ALGORITHMS_RAPIDSCORER_SCAN_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>

#include "quickscorer/cpu.h"   /* cpu_isa_available, CPU_TARGET, the intrinsics */
#include "quickscorer/sums.h"  /* QS_FUSED_SUMS, qs_weighted_add */

#define RS_ISA_SCALAR CPU_ISA_SCALAR
#define RS_ISA_AVX2 CPU_ISA_AVX2
#define RS_ISA_AVX512 CPU_ISA_AVX512
#define RS_ISA_AVX2_WIDE 3   /* AVX2 instructions, 64 lanes (not one of vqs's paths) */

typedef struct {
    uint16_t byte;   /* the byte row, relative to the tree block (at most 65,536 a block) */
    uint8_t thr_b;   /* thr ^ 0x80: the node is false for a document iff its rank > thr
                      * (255: sentinel), compared signed as rank ^ 0x80 > thr_b */
    uint8_t mask;    /* AND mask of the byte */
} rs_entry;          /* 4 bytes */

static inline int rs_lanes(int isa) { return isa == RS_ISA_AVX512 || isa == RS_ISA_AVX2_WIDE ? 64 : 32; }

#if defined(_MSC_VER)
#include <intrin.h>
static inline int rs_ctz64(uint64_t x) { unsigned long i; _BitScanForward64(&i, x); return (int)i; }
#else
static inline int rs_ctz64(uint64_t x) { return __builtin_ctzll(x); }
#endif

/* trailing zeros of a nibble (0 for 0), for the byte-wise exit search */
#define RS_TZ_NIBBLE 0, 0, 1, 0, 2, 0, 1, 0, 3, 0, 1, 0, 2, 0, 1, 0

/* ---- portable C (32 lanes; the compiler vectorises the lane loops) --------------------- */
static inline const rs_entry* rs_scan_c(const uint8_t* rank, const rs_entry* e, uint8_t* state,
                                        int flip)
{
    enum { L = 32 };
    const uint8_t x = flip ? 0xFF : 0;
    for (;; ++e) {
        uint8_t keep[L];
        int any = 0;
        for (int l = 0; l < L; ++l) {
            const int gt = (uint8_t)(rank[l] ^ x) > (uint8_t)(e->thr_b ^ 0x80);
            keep[l] = gt ? e->mask : 0xFF;
            any |= gt;
        }
        if (!any)
            return e;
        uint8_t* p = state + (size_t)e->byte * L;
        for (int l = 0; l < L; ++l)
            p[l] &= keep[l];
    }
}

/* Exit leaf (lowest set bit over the tree's nb bytes) of each of the 32 lanes. */
static inline void rs_exits_c(const uint8_t* p, int nb, uint8_t* idx)
{
    enum { L = 32 };
    static const uint8_t tz[16] = {RS_TZ_NIBBLE};
    uint8_t found[L];
    memset(found, 0, sizeof(found));
    memset(idx, 0, L);
    for (int b = 0; b < nb; ++b) {
        int all = 1;
        for (int l = 0; l < L; ++l) {
            const uint8_t v = p[(size_t)b * L + l];
            if (!found[l] && v) {
                idx[l] = (uint8_t)(8 * b + ((v & 15) ? tz[v & 15] : 4 + tz[v >> 4]));
                found[l] = 1;
            }
            all &= found[l];
        }
        if (all)
            return;
    }
}

/* acc[l] += v[idx[l]] (float64), and acc[l] += v[idx[l]] (* w where weighted) in float32,
 * for exit leaves or slots of type IDX (uint8_t; uint16_t: the level path's deep slots) */
#define RS_ADD_C(F64, F32, IDX)                                                              \
static inline void F64(const IDX* idx, const double* v, double* acc, int lanes)             \
{                                                                                            \
    for (int l = 0; l < lanes; ++l)                                                          \
        acc[l] = acc[l] + v[idx[l]];                                                         \
}                                                                                            \
static inline void F32(const IDX* idx, const float* v, float* acc, int lanes, int weighted,  \
                       float w)                                                              \
{                                                                                            \
    for (int l = 0; l < lanes; ++l) {                                                        \
        const float g = v[idx[l]];                                                           \
        acc[l] = weighted ? qs_weighted_add(acc[l], g, w) : acc[l] + g;                      \
    }                                                                                        \
}
RS_ADD_C(rs_add_f64_c, rs_add_f32_c, uint8_t)
RS_ADD_C(rs_lv_add_f64, rs_lv_add_f32, uint16_t)

static inline int rs_rank_c(const double* piv, const double* bkt, double x, int npiv)
{
    int c1 = 0, c2 = 0;
    for (int j = 0; j < npiv; ++j)
        c1 += piv[j] < x;
    for (int j = 0; j < 16; ++j)
        c2 += bkt[16 * c1 + j] < x;
    return 16 * c1 + c2;
}

#if CPU_HAVE_X86
#define RS_HAVE_X86 1     /* intrinsics (native, or SIMDe's over NEON), CPU_TARGET, CPU_SUPPORTS: cpu.h */

#if CPU_NEON_NATIVE
/* ---- NEON, written natively: the scan entry, the exit search and the rank search --------
 * The NEON path is the AVX2 path compiled through SIMDe (cpu.h), but for the three steps that
 * take most of a document's instructions, whose SIMDe translation costs two to six times
 * AVX2's instructions (SIMDe's testz, movemask and blendv are several NEON instructions
 * each): they keep the AVX2 functions' names and results. A byte row of 32 or 64 lanes is two or four
 * 128-bit registers; an unsigned byte compare needs no bias. Instructions per scan entry and
 * per rank, against AVX2 and the SIMDe translation: python -m benchmarks.experiments.neon_ops */
static inline const rs_entry* rs_scan_avx2(const uint8_t* rank, const rs_entry* e,
                                           uint8_t* state, int flip)
{
    const uint8x16_t x = vdupq_n_u8(flip ? 0xFF : 0);
    const uint8x16_t r0 = veorq_u8(vld1q_u8(rank), x);
    const uint8x16_t r1 = veorq_u8(vld1q_u8(rank + 16), x);
    for (;; ++e) {
        /* rank > thr, thr = thr_b ^ 0x80, unsigned */
        const uint8x16_t t = vdupq_n_u8((uint8_t)(e->thr_b ^ 0x80));
        const uint8x16_t g0 = vcgtq_u8(r0, t), g1 = vcgtq_u8(r1, t);
        if (vmaxvq_u8(vorrq_u8(g0, g1)) == 0)
            return e;
        uint8_t* p = state + (size_t)e->byte * 32;
        const uint8x16_t m = vdupq_n_u8(e->mask);
        /* v &= ~(gt & ~mask) */
        vst1q_u8(p, vbicq_u8(vld1q_u8(p), vbicq_u8(g0, m)));
        vst1q_u8(p + 16, vbicq_u8(vld1q_u8(p + 16), vbicq_u8(g1, m)));
    }
}

static inline const rs_entry* rs_scan_avx2w(const uint8_t* rank, const rs_entry* e,
                                            uint8_t* state, int flip)
{
    const uint8x16_t x = vdupq_n_u8(flip ? 0xFF : 0);
    const uint8x16_t r0 = veorq_u8(vld1q_u8(rank), x);
    const uint8x16_t r1 = veorq_u8(vld1q_u8(rank + 16), x);
    const uint8x16_t r2 = veorq_u8(vld1q_u8(rank + 32), x);
    const uint8x16_t r3 = veorq_u8(vld1q_u8(rank + 48), x);
    for (;; ++e) {
        const uint8x16_t t = vdupq_n_u8((uint8_t)(e->thr_b ^ 0x80));
        const uint8x16_t g0 = vcgtq_u8(r0, t), g1 = vcgtq_u8(r1, t);
        const uint8x16_t g2 = vcgtq_u8(r2, t), g3 = vcgtq_u8(r3, t);
        if (vmaxvq_u8(vorrq_u8(vorrq_u8(g0, g1), vorrq_u8(g2, g3))) == 0)
            return e;
        uint8_t* p = state + (size_t)e->byte * 64;
        const uint8x16_t m = vdupq_n_u8(e->mask);
        vst1q_u8(p, vbicq_u8(vld1q_u8(p), vbicq_u8(g0, m)));
        vst1q_u8(p + 16, vbicq_u8(vld1q_u8(p + 16), vbicq_u8(g1, m)));
        vst1q_u8(p + 32, vbicq_u8(vld1q_u8(p + 32), vbicq_u8(g2, m)));
        vst1q_u8(p + 48, vbicq_u8(vld1q_u8(p + 48), vbicq_u8(g3, m)));
    }
}

#else
/* ---- AVX2: 32 lanes, one register per byte row ----------------------------------------- */
CPU_TARGET("avx2") __attribute__((always_inline))
static inline const rs_entry* rs_scan_avx2(const uint8_t* rank, const rs_entry* e,
                                           uint8_t* state, int flip)
{
    const __m256i bias = _mm256_set1_epi8((char)(flip ? 0x7F : 0x80));
    const __m256i r = _mm256_xor_si256(_mm256_loadu_si256((const __m256i*)rank), bias);
    for (;; ++e) {
        /* thr_b broadcast from memory, already biased: no scalar xor on an entry's way to
         * its compare (benchmarks/experiments/rs_scan_floor.c) */
        const __m256i gt = _mm256_cmpgt_epi8(r, _mm256_set1_epi8((char)e->thr_b));
        if (_mm256_testz_si256(gt, gt))                  /* unsigned rank > thr nowhere */
            return e;
        __m256i* p = (__m256i*)(state + (size_t)e->byte * 32);
        /* v &= ~(gt & ~mask): lanes that pass keep mask's bits, the others all bits */
        const __m256i clear = _mm256_andnot_si256(_mm256_set1_epi8((char)e->mask), gt);
        _mm256_store_si256(p, _mm256_andnot_si256(clear, _mm256_load_si256(p)));
    }
}

/* The same for 64 lanes (rank[0 .. 64), rows of 64 bytes): lanes 0-31 in the row's first
 * register, 32-63 in its second. */
CPU_TARGET("avx2") __attribute__((always_inline))
static inline const rs_entry* rs_scan_avx2w(const uint8_t* rank, const rs_entry* e,
                                            uint8_t* state, int flip)
{
    const __m256i bias = _mm256_set1_epi8((char)(flip ? 0x7F : 0x80));
    const __m256i r0 = _mm256_xor_si256(_mm256_loadu_si256((const __m256i*)rank), bias);
    const __m256i r1 = _mm256_xor_si256(_mm256_loadu_si256((const __m256i*)(rank + 32)), bias);
    for (;; ++e) {
        const __m256i t = _mm256_set1_epi8((char)e->thr_b);
        const __m256i gt0 = _mm256_cmpgt_epi8(r0, t);
        const __m256i gt1 = _mm256_cmpgt_epi8(r1, t);
        const __m256i any = _mm256_or_si256(gt0, gt1);
        if (_mm256_testz_si256(any, any))
            return e;
        __m256i* p = (__m256i*)(state + (size_t)e->byte * 64);
        const __m256i m = _mm256_set1_epi8((char)e->mask);
        _mm256_store_si256(p, _mm256_andnot_si256(_mm256_andnot_si256(m, gt0),
                                                  _mm256_load_si256(p)));
        _mm256_store_si256(p + 1, _mm256_andnot_si256(_mm256_andnot_si256(m, gt1),
                                                      _mm256_load_si256(p + 1)));
    }
}

#endif

#if CPU_NEON_NATIVE
/* lanes 0-15 of rows `stride` bytes apart: the search of rs_exits_avx2s below, 16 lanes a
 * register, with NEON's bit select for AVX2's blend and its table lookup for the shuffle */
static inline void rs_exits_neon16(const uint8_t* p, int nb, size_t stride, uint8_t* idx)
{
    static const uint8_t tz_nibble[16] = {RS_TZ_NIBBLE};
    const uint8x16_t lut = vld1q_u8(tz_nibble);
    const uint8x16_t eight = vdupq_n_u8(8);
    uint8x16_t val = vdupq_n_u8(0), row = vdupq_n_u8(0);
    uint8x16_t b8 = vdupq_n_u8((uint8_t)(8 * nb));
    for (int b = nb - 1; b >= 0; --b) {
        const uint8x16_t v = vld1q_u8(p + (size_t)b * stride);
        const uint8x16_t keep = vceqzq_u8(v);
        b8 = vsubq_u8(b8, eight);
        val = vbslq_u8(keep, val, v);
        row = vbslq_u8(keep, row, b8);
    }
    const uint8x16_t lo = vandq_u8(val, vdupq_n_u8(0x0F));
    const uint8x16_t hi = vshrq_n_u8(val, 4);
    const uint8x16_t tz = vbslq_u8(vceqzq_u8(lo), vaddq_u8(vqtbl1q_u8(lut, hi), vdupq_n_u8(4)),
                                   vqtbl1q_u8(lut, lo));
    vst1q_u8(idx, vbicq_u8(vaddq_u8(tz, row), vceqzq_u8(val)));
}

/* lanes 0-31 of rows `stride` bytes apart, as rs_exits_avx2s */
static inline void rs_exits_avx2s(const uint8_t* p, int nb, size_t stride, uint8_t* idx)
{
    rs_exits_neon16(p, nb, stride, idx);
    rs_exits_neon16(p + 16, nb, stride, idx + 16);
}

#else
/* lanes 0-31 of rows `stride` bytes apart (32; 64 for a half of a wide group's rows) */
CPU_TARGET("avx2") __attribute__((always_inline))
static inline void rs_exits_avx2s(const uint8_t* p, int nb, size_t stride, uint8_t* idx)
{
    /* rows from the last to the first: each lane keeps its lowest non-zero byte and that
     * byte's row (8 b), and the byte's trailing zeros are counted once at the end */
    const __m256i lut = _mm256_setr_epi8(RS_TZ_NIBBLE, RS_TZ_NIBBLE);
    const __m256i low = _mm256_set1_epi8(0x0F);
    const __m256i four = _mm256_set1_epi8(4);
    const __m256i eight = _mm256_set1_epi8(8);
    const __m256i zero = _mm256_setzero_si256();
    __m256i val = zero, row = zero;
    __m256i b8 = _mm256_set1_epi8((char)(8 * nb));
    for (int b = nb - 1; b >= 0; --b) {
        const __m256i v = _mm256_load_si256((const __m256i*)(p + (size_t)b * stride));
        const __m256i keep = _mm256_cmpeq_epi8(v, zero);
        b8 = _mm256_sub_epi8(b8, eight);
        val = _mm256_blendv_epi8(v, val, keep);
        row = _mm256_blendv_epi8(b8, row, keep);
    }
    const __m256i lo = _mm256_and_si256(val, low);
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(val, 4), low);
    const __m256i tz = _mm256_blendv_epi8(_mm256_shuffle_epi8(lut, lo),
                                          _mm256_add_epi8(_mm256_shuffle_epi8(lut, hi), four),
                                          _mm256_cmpeq_epi8(lo, zero));
    /* a lane with no bit left (none has one: a tree keeps its exit leaf) would give 0 */
    const __m256i out = _mm256_andnot_si256(_mm256_cmpeq_epi8(val, zero),
                                            _mm256_add_epi8(tz, row));
    _mm256_storeu_si256((__m256i*)idx, out);
}

#endif

CPU_TARGET("avx2")
static void rs_exits_avx2(const uint8_t* p, int nb, uint8_t* idx)
{
    rs_exits_avx2s(p, nb, 32, idx);
}

CPU_TARGET("avx2")
static void rs_exits_avx2w(const uint8_t* p, int nb, uint8_t* idx)
{
    rs_exits_avx2s(p, nb, 64, idx);
    rs_exits_avx2s(p + 32, nb, 64, idx + 32);
}


#if CPU_NEON_NATIVE
/* how many of the n (8 or 16) doubles at p are below x: each compare leaves -1 in a lane
 * that is, summed in two 64-bit lanes (a NaN is below nothing, as _CMP_LT_OQ) */
static inline int rs_below_neon(const double* p, float64x2_t xb, int n)
{
    int64x2_t acc = vreinterpretq_s64_u64(vcltq_f64(vld1q_f64(p), xb));
    for (int i = 2; i < n; i += 2)
        acc = vaddq_s64(acc, vreinterpretq_s64_u64(vcltq_f64(vld1q_f64(p + i), xb)));
    return (int)-vaddvq_s64(acc);
}

static inline int rs_rank_avx2(const double* piv, const double* bkt, double x, int npiv)
{
    const float64x2_t xb = vdupq_n_f64(x);
    const int c1 = npiv == 0 ? 0 : rs_below_neon(piv, xb, npiv);
    return 16 * c1 + rs_below_neon(bkt + 16 * c1, xb, 16);
}

/* the same in float32: four lanes a register */
static inline int rs_below_f32_neon(const float* p, float32x4_t xb, int n)
{
    int32x4_t acc = vreinterpretq_s32_u32(vcltq_f32(vld1q_f32(p), xb));
    for (int i = 4; i < n; i += 4)
        acc = vaddq_s32(acc, vreinterpretq_s32_u32(vcltq_f32(vld1q_f32(p + i), xb)));
    return -vaddvq_s32(acc);
}

static inline int rs_rank_f32_avx2(const float* piv, const float* bkt, float x, int npiv)
{
    const float32x4_t xb = vdupq_n_f32(x);
    const int c1 = npiv == 0 ? 0 : rs_below_f32_neon(piv, xb, npiv);
    return 16 * c1 + rs_below_f32_neon(bkt + 16 * c1, xb, 16);
}

#else
/* how many of the 16 doubles at p are below xb: the four compare masks packed to bytes and
 * counted by one movemask (each 64-bit mask leaves 2 bits), fewer instructions than a
 * movemask per register, and faster in a one-off timing of a group's ranks */
CPU_TARGET("avx2") __attribute__((always_inline))
static inline int rs_below16_avx2(const double* p, __m256d xb)
{
    const __m256i a = _mm256_castpd_si256(_mm256_cmp_pd(_mm256_loadu_pd(p), xb, _CMP_LT_OQ));
    const __m256i b = _mm256_castpd_si256(_mm256_cmp_pd(_mm256_loadu_pd(p + 4), xb, _CMP_LT_OQ));
    const __m256i c = _mm256_castpd_si256(_mm256_cmp_pd(_mm256_loadu_pd(p + 8), xb, _CMP_LT_OQ));
    const __m256i d = _mm256_castpd_si256(_mm256_cmp_pd(_mm256_loadu_pd(p + 12), xb, _CMP_LT_OQ));
    const __m256i ab = _mm256_packs_epi32(a, b), cd = _mm256_packs_epi32(c, d);
    return __builtin_popcount((unsigned)_mm256_movemask_epi8(_mm256_packs_epi16(ab, cd))) >> 1;
}

/* how many of the 8 doubles at p are below xb */
CPU_TARGET("avx2") __attribute__((always_inline))
static inline int rs_below8_avx2(const double* p, __m256d xb)
{
    const int a = _mm256_movemask_pd(_mm256_cmp_pd(_mm256_loadu_pd(p), xb, _CMP_LT_OQ));
    const int b = _mm256_movemask_pd(_mm256_cmp_pd(_mm256_loadu_pd(p + 4), xb, _CMP_LT_OQ));
    return __builtin_popcount((unsigned)(a | (b << 4)));
}

/* npiv (0, 8 or 16) is a constant where RS_GROUP_RANKS inlines this: the pivots past the
 * feature's buckets are +inf, so a feature of at most 8 buckets compares 8 of them and one of
 * a single bucket none */
CPU_TARGET("avx2") __attribute__((always_inline))
static inline int rs_rank_avx2(const double* piv, const double* bkt, double x, int npiv)
{
    const __m256d xb = _mm256_set1_pd(x);
    const int c1 = npiv == 0 ? 0 : (npiv == 8 ? rs_below8_avx2(piv, xb)
                                              : rs_below16_avx2(piv, xb));
    return 16 * c1 + rs_below16_avx2(bkt + 16 * c1, xb);
}

/* The same search in float32, for XGBoost models (their rows and thresholds are float32
 * values, so float32 compares rank exactly): 8 thresholds a register, half the compares */
CPU_TARGET("avx2") __attribute__((always_inline))
static inline int rs_below16_f32_avx2(const float* p, __m256 xb)
{
    const int a = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(p), xb, _CMP_LT_OQ));
    const int b = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(p + 8), xb, _CMP_LT_OQ));
    return __builtin_popcount((unsigned)(a | (b << 8)));
}

CPU_TARGET("avx2") __attribute__((always_inline))
static inline int rs_below8_f32_avx2(const float* p, __m256 xb)
{
    return __builtin_popcount(
        (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(p), xb, _CMP_LT_OQ)));
}

CPU_TARGET("avx2") __attribute__((always_inline))
static inline int rs_rank_f32_avx2(const float* piv, const float* bkt, float x, int npiv)
{
    const __m256 xb = _mm256_set1_ps(x);
    const int c1 = npiv == 0 ? 0 : (npiv == 8 ? rs_below8_f32_avx2(piv, xb)
                                              : rs_below16_f32_avx2(piv, xb));
    return 16 * c1 + rs_below16_f32_avx2(bkt + 16 * c1, xb);
}

#endif

/* ---- AVX-512 (AVX512BW): 64 lanes, one register per byte row, masked byte moves ---------- */
CPU_TARGET("avx512f,avx512bw") __attribute__((always_inline))
static inline const rs_entry* rs_scan_avx512(const uint8_t* rank, const rs_entry* e,
                                             uint8_t* state, int flip)
{
    /* A whole-register store of the row ANDed with a per-lane blend of the mask (not a
     * masked store: a later entry's load of the same row then takes the stored value). */
    const __m512i r = _mm512_xor_si512(_mm512_loadu_si512((const void*)rank),
                                       _mm512_set1_epi8((char)(flip ? 0x7F : 0x80)));
    const __m512i ones = _mm512_set1_epi8(-1);
    for (;; ++e) {
        const __mmask64 k = _mm512_cmpgt_epi8_mask(r, _mm512_set1_epi8((char)e->thr_b));
        if (!k)
            return e;
        __m512i* p = (__m512i*)(state + (size_t)e->byte * 64);
        const __m512i m = _mm512_mask_blend_epi8(k, ones, _mm512_set1_epi8((char)e->mask));
        _mm512_store_si512((void*)p, _mm512_and_si512(_mm512_load_si512((const void*)p), m));
    }
}

CPU_TARGET("avx512f,avx512bw")
static void rs_exits_avx512(const uint8_t* p, int nb, uint8_t* idx)
{
    /* rows from the last to the first: the lowest non-zero row of a lane writes last */
    const __m512i lut = _mm512_broadcast_i32x4(_mm_setr_epi8(RS_TZ_NIBBLE));
    const __m512i low = _mm512_set1_epi8(0x0F);
    const __m512i four = _mm512_set1_epi8(4);
    __m512i out = _mm512_setzero_si512();
    for (int b = nb - 1; b >= 0; --b) {
        const __m512i v = _mm512_load_si512((const void*)(p + (size_t)b * 64));
        const __mmask64 nz = _mm512_test_epi8_mask(v, v);
        const __m512i lo = _mm512_and_si512(v, low);
        const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
        const __m512i tz = _mm512_mask_blend_epi8(_mm512_test_epi8_mask(lo, lo),
                                                  _mm512_add_epi8(_mm512_shuffle_epi8(lut, hi), four),
                                                  _mm512_shuffle_epi8(lut, lo));
        out = _mm512_mask_add_epi8(out, nz, tz, _mm512_set1_epi8((char)(8 * b)));
    }
    _mm512_storeu_si512((void*)idx, out);
}

/* rank of x (not NaN): #{thresholds < x}, by a two-level search over a feature's thresholds
 * in buckets of 16 (see rapidscorer/layout.py): how many buckets lie wholly below x (their largest
 * thresholds, piv[0 .. npiv)), then how many thresholds of the next bucket do. Pivots past
 * the feature's buckets are +inf and never counted, so only the first npiv (0, 8 or 16: no
 * pivot is needed for a feature of one bucket) are compared. */
CPU_TARGET("avx512f,avx512bw") __attribute__((always_inline))
static inline int rs_rank_avx512(const double* piv, const double* bkt, double x, int npiv)
{
    const __m512d xb = _mm512_set1_pd(x);
    int c1 = 0;
    if (npiv > 0)
        c1 += __builtin_popcount(_mm512_cmp_pd_mask(_mm512_loadu_pd(piv), xb, _CMP_LT_OQ));
    if (npiv > 8)
        c1 += __builtin_popcount(_mm512_cmp_pd_mask(_mm512_loadu_pd(piv + 8), xb, _CMP_LT_OQ));
    const double* b = bkt + 16 * c1;
    return 16 * c1
         + __builtin_popcount(_mm512_cmp_pd_mask(_mm512_loadu_pd(b), xb, _CMP_LT_OQ))
         + __builtin_popcount(_mm512_cmp_pd_mask(_mm512_loadu_pd(b + 8), xb, _CMP_LT_OQ));
}

/* float32 (XGBoost models, as rs_rank_f32_avx2): one compare a level */
CPU_TARGET("avx512f,avx512bw") __attribute__((always_inline))
static inline int rs_rank_f32_avx512(const float* piv, const float* bkt, float x, int npiv)
{
    const __m512 xb = _mm512_set1_ps(x);
    const int c1 = npiv == 0 ? 0 : __builtin_popcount(_mm512_cmp_ps_mask(_mm512_loadu_ps(piv),
                                                                         xb, _CMP_LT_OQ));
    return 16 * c1 + __builtin_popcount(_mm512_cmp_ps_mask(_mm512_loadu_ps(bkt + 16 * c1), xb,
                                                           _CMP_LT_OQ));
}

/* the CPU checks of cpu.h, plus AVX512BW for the byte-wise AVX-512 path */
static inline int rs_isa_available(int isa)
{
    if (isa == RS_ISA_AVX512)
        return cpu_isa_available(CPU_ISA_AVX512) && CPU_SUPPORTS("avx512bw");
    if (isa == RS_ISA_AVX2_WIDE)
        return cpu_isa_available(CPU_ISA_AVX2);
    return cpu_isa_available(isa);
}

#else
#define RS_HAVE_X86 0
static inline int rs_isa_available(int isa) { return isa < RS_ISA_AVX512 && cpu_isa_available(isa); }
#endif

/* rs_bytes_of_bits[b]: byte i of the result 0xFF where bit i of b is set (little-endian) */
#define RS_B8(b) ((((b) & 1) ? 0xFFULL : 0) | (((b) & 2) ? 0xFF00ULL : 0)                     \
                  | (((b) & 4) ? 0xFF0000ULL : 0) | (((b) & 8) ? 0xFF000000ULL : 0)            \
                  | (((b) & 16) ? 0xFF00000000ULL : 0) | (((b) & 32) ? 0xFF0000000000ULL : 0)  \
                  | (((b) & 64) ? 0xFF000000000000ULL : 0)                                    \
                  | (((b) & 128) ? 0xFF00000000000000ULL : 0))
#define RS_B8x4(b) RS_B8(b), RS_B8((b) + 1), RS_B8((b) + 2), RS_B8((b) + 3)
#define RS_B8x16(b) RS_B8x4(b), RS_B8x4((b) + 4), RS_B8x4((b) + 8), RS_B8x4((b) + 12)
#define RS_B8x64(b) RS_B8x16(b), RS_B8x16((b) + 16), RS_B8x16((b) + 32), RS_B8x16((b) + 48)
static const uint64_t rs_bytes_of_bits[256] = {
    RS_B8x64(0), RS_B8x64(64), RS_B8x64(128), RS_B8x64(192)
};

/* tmp[l] = the lane's rank rk[l], or fill where bit l of skip is set, 8 lanes a step; out of
 * line, so that the scan loops it sits beside keep their registers (inlined, it cost the
 * clean rows of the 1,000 x 31 model 3-5%) */
__attribute__((noinline))
static void rs_fill_missing(const uint8_t* rk, uint64_t skip, uint8_t fill, uint8_t* tmp,
                            int lanes)
{
    const uint64_t fill8 = 0x0101010101010101ULL * fill;
    for (int l = 0; l < lanes; l += 8) {
        const uint64_t m = rs_bytes_of_bits[(skip >> l) & 0xFF];
        uint64_t v;
        memcpy(&v, rk + l, 8);
        v = (v & ~m) | (fill8 & m);
        memcpy(tmp + l, &v, 8);
    }
}

/* The scans of one tree block for one group: segment j of the block starts at entry
 * seg[j] & 0xFFFFFFFF and belongs to (feature, kind) = divmod((seg[j] >> 32) & 0x3FFFFFFF,
 * 3), its nodes mirrored where bit 63 is set. Lanes whose value no comparison decides (NaN
 * for kinds 1 and 2, zero for kind 1: out[3 f + kind]) go to the nodes' default side: they
 * scan with rank 0, which passes no threshold (the default side keeps the node's mask
 * out), or, where bit 62 is set, 255, which passes all (the default side is the one the
 * mask clears); both before a mirrored segment's complement. ranks[f * lanes + l] is lane
 * l's rank for f. */
#define RS_BLOCK_SCAN(NAME, SCAN, LANES, TARGET)                                              \
TARGET static void NAME(const uint64_t* seg, int64_t n_seg, const rs_entry* entries,         \
                        const uint8_t* ranks, const uint64_t* out, uint8_t* state)           \
{                                                                                            \
    uint8_t tmp[LANES] __attribute__((aligned(64)));                                         \
    for (int64_t j = 0; j < n_seg; ++j) {                                                    \
        const uint64_t fk = (seg[j] >> 32) & 0x3FFFFFFFu;                                    \
        const int flip = (int)(seg[j] >> 63);                                                \
        const uint8_t* rk = ranks + (fk / 3) * LANES;                                        \
        const uint64_t skip = out[fk];                                                       \
        if (skip) {                                                                          \
            /* a missing value passes no test (rank 0) or, bit 62, every test (255); the   \
             * same after a mirrored segment's complement */                                \
            const uint8_t fill = (uint8_t)((((seg[j] >> 62) & 1) ? 0xFF : 0)                \
                                           ^ (flip ? 0xFF : 0));                             \
            rs_fill_missing(rk, skip, fill, tmp, LANES);                                     \
            rk = tmp;                                                                        \
        }                                                                                    \
        SCAN(rk, entries + (seg[j] & 0xFFFFFFFFu), state, flip);                             \
    }                                                                                        \
}

RS_BLOCK_SCAN(rs_block_scan_c, rs_scan_c, 32, )
#if RS_HAVE_X86
RS_BLOCK_SCAN(rs_block_scan_avx2, rs_scan_avx2, 32, CPU_TARGET("avx2"))
RS_BLOCK_SCAN(rs_block_scan_avx2w, rs_scan_avx2w, 64, CPU_TARGET("avx2"))
RS_BLOCK_SCAN(rs_block_scan_avx512, rs_scan_avx512, 64,
              CPU_TARGET("avx512f,avx512bw"))
#endif

static inline void rs_block_scan(int isa, const uint64_t* seg, int64_t n_seg,
                                 const rs_entry* entries, const uint8_t* ranks,
                                 const uint64_t* out, uint8_t* state)
{
#if RS_HAVE_X86
    if (isa == RS_ISA_AVX512) { rs_block_scan_avx512(seg, n_seg, entries, ranks, out, state); return; }
    if (isa == RS_ISA_AVX2) { rs_block_scan_avx2(seg, n_seg, entries, ranks, out, state); return; }
    if (isa == RS_ISA_AVX2_WIDE) { rs_block_scan_avx2w(seg, n_seg, entries, ranks, out, state); return; }
#endif
    rs_block_scan_c(seg, n_seg, entries, ranks, out, state);
}

/* Exit leaf of every lane of one tree whose nb byte rows start at p (nb <= 32). */
static inline void rs_exits(int isa, const uint8_t* p, int nb, uint8_t* idx)
{
#if RS_HAVE_X86
    if (isa == RS_ISA_AVX512) { rs_exits_avx512(p, nb, idx); return; }
    if (isa == RS_ISA_AVX2) { rs_exits_avx2(p, nb, idx); return; }
    if (isa == RS_ISA_AVX2_WIDE) { rs_exits_avx2w(p, nb, idx); return; }
#endif
    rs_exits_c(p, nb, idx);
}

#if RS_HAVE_X86
/* AVX-512: a tree of at most 64 leaves keeps its values in at most 8 registers (float64) or
 * 4 (float32), and a lane's value is picked by permutes and blends on the bits of its leaf
 * index: no memory access per lane (gathers measured slower than plain loads on
 * an AVX-512 machine, in a build that had them). */
CPU_TARGET("avx512f,avx512bw") __attribute__((always_inline))
static inline __m512d rs_table_f64(const double* v, int n, int j)
{
    const int left = n - 8 * j;
    return left <= 0 ? _mm512_setzero_pd()
                     : _mm512_maskz_loadu_pd((__mmask8)(left >= 8 ? 0xFF : (1u << left) - 1), v + 8 * j);
}

CPU_TARGET("avx512f,avx512bw")
static void rs_add_f64_avx512(const uint8_t* idx, const double* v, int n, double* acc)
{
    __m512d t[8];
    const int nt = (n + 7) / 8;
    for (int j = 0; j < nt; ++j)
        t[j] = rs_table_f64(v, n, j);
    for (int c = 0; c < 8; ++c) {
        const __m512i i = _mm512_cvtepu8_epi64(_mm_loadl_epi64((const __m128i*)(idx + 8 * c)));
        __m512d g;
        if (nt == 1) {
            g = _mm512_permutexvar_pd(i, t[0]);
        } else {
            __m512d q[4] = {t[0], t[0], t[0], t[0]};
            for (int j = 0; 2 * j < nt; ++j)
                q[j] = _mm512_permutex2var_pd(t[2 * j], i, 2 * j + 1 < nt ? t[2 * j + 1] : t[2 * j]);
            g = q[0];
            if (nt > 2) {
                const __mmask8 b4 = _mm512_test_epi64_mask(i, _mm512_set1_epi64(16));
                g = _mm512_mask_blend_pd(b4, q[0], q[1]);
                if (nt > 4) {
                    const __mmask8 b5 = _mm512_test_epi64_mask(i, _mm512_set1_epi64(32));
                    g = _mm512_mask_blend_pd(b5, g, _mm512_mask_blend_pd(b4, q[2], q[3]));
                }
            }
        }
        _mm512_store_pd(acc + 8 * c, _mm512_add_pd(_mm512_load_pd(acc + 8 * c), g));
    }
}

CPU_TARGET("avx512f,avx512bw")
static void rs_add_f32_avx512(const uint8_t* idx, const float* v, int n, float* acc,
                              int weighted, float w)
{
    __m512 t[4];
    const int nt = (n + 15) / 16;
    for (int j = 0; j < nt; ++j) {
        const int left = n - 16 * j;
        t[j] = _mm512_maskz_loadu_ps((__mmask16)(left >= 16 ? 0xFFFF : (1u << left) - 1), v + 16 * j);
    }
    for (int c = 0; c < 4; ++c) {
        const __m512i i = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i*)(idx + 16 * c)));
        __m512 g;
        if (nt == 1) {
            g = _mm512_permutexvar_ps(i, t[0]);
        } else {
            g = _mm512_permutex2var_ps(t[0], i, t[1]);
            if (nt > 2) {
                const __m512 h = _mm512_permutex2var_ps(t[2], i, nt > 3 ? t[3] : t[2]);
                g = _mm512_mask_blend_ps(_mm512_test_epi32_mask(i, _mm512_set1_epi32(32)), g, h);
            }
        }
        if (weighted)   /* unfused: AVX-512 never runs where QS_FUSED_SUMS */
            g = _mm512_mul_ps(g, _mm512_set1_ps(w));
        _mm512_store_ps(acc + 16 * c, _mm512_add_ps(_mm512_load_ps(acc + 16 * c), g));
    }
}
#endif

#if RS_HAVE_X86
/* F4: the leaf values v[q[0 .. 4)] in one vector, loaded in pairs (no gather instruction:
 * slower than these loads); F8: acc + v[q[0 .. 8)], times w where weighted, rounded as
 * rs_add_f32_c rounds it (fused where QS_FUSED_SUMS); for exit leaves or slots of type IDX
 * (uint8_t; size_t: the level path's slots below the split, from rs_lv_deep8) */
#if QS_FUSED_SUMS
#define RS_WEIGHTED_ADD8(acc, g, w) _mm256_fmadd_ps(g, w, acc)
#else
#define RS_WEIGHTED_ADD8(acc, g, w) _mm256_add_ps(acc, _mm256_mul_ps(g, w))
#endif
#define RS_LEAVES(F4, F8, IDX)                                                               \
CPU_TARGET("avx2") __attribute__((always_inline))                                             \
static inline __m256d F4(const double* v, const IDX* q)                                      \
{                                                                                            \
    const __m128d lo = _mm_loadh_pd(_mm_load_sd(v + q[0]), v + q[1]);                        \
    const __m128d hi = _mm_loadh_pd(_mm_load_sd(v + q[2]), v + q[3]);                        \
    return _mm256_insertf128_pd(_mm256_castpd128_pd256(lo), hi, 1);                          \
}                                                                                            \
CPU_TARGET("avx2") __attribute__((always_inline))                                             \
static inline __m256 F8(__m256 acc, const float* v, const IDX* q, int weighted, float w)     \
{                                                                                            \
    const __m256 g = _mm256_setr_ps(v[q[0]], v[q[1]], v[q[2]], v[q[3]],                      \
                                    v[q[4]], v[q[5]], v[q[6]], v[q[7]]);                     \
    if (!weighted)                                                                           \
        return _mm256_add_ps(acc, g);                                                        \
    return RS_WEIGHTED_ADD8(acc, g, _mm256_set1_ps(w));                                      \
}
RS_LEAVES(rs_leaves4_pd, rs_add_leaves8_ps, uint8_t)
RS_LEAVES(rs_sl_leaves4_pd, rs_sl_add_leaves8_ps, size_t)

/* AVX2, a model of one output without linear leaves: the exit leaves of trees [t0, t1) of a
 * block (tree t's byte rows at state + (byte_off[t] - byte_off[t0]) * stride, stride 32, or
 * 64 for either half of a wide group) added to the scores acc of the first 4 nc lanes in
 * tree order, the scores held in registers across the trees and each 4 lanes' leaf values
 * loaded in pairs into one vector (no gather instruction: slower than these loads). The same additions in the
 * same order as rs_add_f64_c. */
CPU_TARGET("avx2") __attribute__((always_inline))
static inline void rs_block_add_f64_avx2_n(const uint8_t* state, size_t stride,
                                           const int64_t* byte_off, int64_t t0, int64_t t1,
                                           const double* leaf_value, const int64_t* leaf_off,
                                           double* acc, const int nc)
{
    uint8_t idx[32] __attribute__((aligned(32)));
    __m256d a[8];
    for (int c = 0; c < nc; ++c)
        a[c] = _mm256_loadu_pd(acc + 4 * c);
    for (int64_t t = t0; t < t1; ++t) {
        rs_exits_avx2s(state + (size_t)(byte_off[t] - byte_off[t0]) * stride,
                       (int)(byte_off[t + 1] - byte_off[t]), stride, idx);
        const double* v = leaf_value + leaf_off[t];
        for (int c = 0; c < nc; ++c)
            a[c] = _mm256_add_pd(a[c], rs_leaves4_pd(v, idx + 4 * c));
    }
    for (int c = 0; c < nc; ++c)
        _mm256_storeu_pd(acc + 4 * c, a[c]);
}

/* the first n_lanes lanes, in chunks of 4 (a 10-row call adds 12 lanes, not 32); a full
 * group's chunk count is passed as a constant, so that its scores stay in registers */
CPU_TARGET("avx2")
static void rs_block_add_f64_avx2(const uint8_t* state, size_t stride, const int64_t* byte_off,
                                  int64_t t0, int64_t t1, const double* leaf_value,
                                  const int64_t* leaf_off, double* acc, int n_lanes)
{
    const int nc = (n_lanes + 3) / 4;
    if (nc == 8)
        rs_block_add_f64_avx2_n(state, stride, byte_off, t0, t1, leaf_value, leaf_off, acc, 8);
    else
        rs_block_add_f64_avx2_n(state, stride, byte_off, t0, t1, leaf_value, leaf_off, acc, nc);
}

/* The same for XGBoost's float32 sum: each 8 lanes' leaf values (times the tree's weight
 * where tree_weight is not NULL, as rs_add_f32_c) added to scores held in four registers. */
CPU_TARGET("avx2") __attribute__((always_inline))
static inline void rs_block_add_f32_avx2_n(const uint8_t* state, size_t stride,
                                           const int64_t* byte_off, int64_t t0, int64_t t1,
                                           const float* leaf_value, const int64_t* leaf_off,
                                           const float* tree_weight, float* acc, const int nc)
{
    uint8_t idx[32] __attribute__((aligned(32)));
    __m256 a[4];
    for (int c = 0; c < nc; ++c)
        a[c] = _mm256_loadu_ps(acc + 8 * c);
    for (int64_t t = t0; t < t1; ++t) {
        rs_exits_avx2s(state + (size_t)(byte_off[t] - byte_off[t0]) * stride,
                       (int)(byte_off[t + 1] - byte_off[t]), stride, idx);
        const float* v = leaf_value + leaf_off[t];
        const float w = tree_weight != NULL ? tree_weight[t] : 1.0f;
        for (int c = 0; c < nc; ++c)
            a[c] = rs_add_leaves8_ps(a[c], v, idx + 8 * c, tree_weight != NULL, w);
    }
    for (int c = 0; c < nc; ++c)
        _mm256_storeu_ps(acc + 8 * c, a[c]);
}

/* as rs_block_add_f64_avx2, in chunks of 8 lanes */
CPU_TARGET("avx2")
static void rs_block_add_f32_avx2(const uint8_t* state, size_t stride, const int64_t* byte_off,
                                  int64_t t0, int64_t t1, const float* leaf_value,
                                  const int64_t* leaf_off, const float* tree_weight,
                                  float* acc, int n_lanes)
{
    const int nc = (n_lanes + 7) / 8;
    if (nc == 4)
        rs_block_add_f32_avx2_n(state, stride, byte_off, t0, t1, leaf_value, leaf_off,
                                tree_weight, acc, 4);
    else
        rs_block_add_f32_avx2_n(state, stride, byte_off, t0, t1, leaf_value, leaf_off,
                                tree_weight, acc, nc);
}
#endif

/* whether every tree of [t0, t1) has more than `most` leaves */
static inline int rs_leaves_above(const int64_t* leaf_off, int64_t t0, int64_t t1, int64_t most)
{
    for (int64_t t = t0; t < t1; ++t)
        if (leaf_off[t + 1] - leaf_off[t] <= most)
            return 0;
    return 1;
}

/* An AVX-512 group's block of trees of more than RS_WIDE_ADD_LEAVES leaves each finds and
 * adds its exit leaves as the AVX2 wide path does (the same byte rows, 64 lanes a row; the
 * scores in registers, the values loaded in pairs): less time than the exit search and the
 * adds of each tree on their own (rs_exits_avx512, then rs_add_f64_avx512's tables or
 * rs_add_f64_c past 64 leaves) on LightGBM's full 64-leaf trees, 4% at 10,000 rows and 8% at
 * 100, and the same on 255-leaf ones; more time (5% to 13%) on trees of 16 and 31 leaves,
 * whose values fit four tables (Zen 4; python -m benchmarks.experiments.rs_builds_ab
 * --builds <a build with another bound>,. --shapes full-heavy-1000x16-m200,
 * full-uniform-1000x31,full-uniform-1000x64,full-uniform-1000x255 --rows 100,10000). */
#define RS_WIDE_ADD_LEAVES 32

/* whether AVX-512 calls take the wide add above by default: on cores that run 512-bit
 * operations as two halves (Zen 4). On Zen 5, which runs them whole, the wide add took 2% to
 * 12% more time on full 64-, 127- and 255-leaf trees at 100 and 10,000 rows; Intel's cores,
 * which run them whole too, keep AVX-512's adds as well (python -m
 * benchmarks.tuning.rs_level_sweep --setting rs_wide_add --values 0,1 --models
 * full-uniform-1000x64,full-uniform-1000x127,full-uniform-1000x255 --rows 100,10000
 * re-measures it). */
static inline int rs_wide_add_default(void)
{
    return rs_isa_available(RS_ISA_AVX512) && cpu_splits_512();
}

/* rs_block_add_f64_avx2 (rs_block_add_f32: _f32) where isa is AVX2 or AVX2_WIDE, or for
 * f64 AVX512 where wide is set, on trees of more than RS_WIDE_ADD_LEAVES leaves (returns 1);
 * 0 elsewhere, the caller then finds and adds each tree's exit leaves itself */
static inline int rs_block_add_f64(int isa, int wide, const uint8_t* state,
                                   const int64_t* byte_off, int64_t t0, int64_t t1,
                                   const double* leaf_value,
                                   const int64_t* leaf_off, double* acc, int n_lanes)
{
#if RS_HAVE_X86
    if (isa == RS_ISA_AVX2) {
        rs_block_add_f64_avx2(state, 32, byte_off, t0, t1, leaf_value, leaf_off, acc, n_lanes);
        return 1;
    }
    if (isa == RS_ISA_AVX2_WIDE ||      /* each half of the lanes on its own */
        (isa == RS_ISA_AVX512 && wide &&
         rs_leaves_above(leaf_off, t0, t1, RS_WIDE_ADD_LEAVES))) {
        rs_block_add_f64_avx2(state, 64, byte_off, t0, t1, leaf_value, leaf_off, acc, 32);
        rs_block_add_f64_avx2(state + 32, 64, byte_off, t0, t1, leaf_value, leaf_off, acc + 32,
                              n_lanes - 32);
        return 1;
    }
#endif
    (void)isa; (void)wide; (void)state; (void)byte_off; (void)t0; (void)t1; (void)leaf_value;
    (void)leaf_off; (void)acc; (void)n_lanes;
    return 0;
}

static inline int rs_block_add_f32(int isa, const uint8_t* state, const int64_t* byte_off,
                                   int64_t t0, int64_t t1, const float* leaf_value,
                                   const int64_t* leaf_off, const float* tree_weight,
                                   float* acc, int n_lanes)
{
#if RS_HAVE_X86
    if (isa == RS_ISA_AVX2) {
        rs_block_add_f32_avx2(state, 32, byte_off, t0, t1, leaf_value, leaf_off, tree_weight,
                              acc, n_lanes);
        return 1;
    }
    if (isa == RS_ISA_AVX2_WIDE) {
        rs_block_add_f32_avx2(state, 64, byte_off, t0, t1, leaf_value, leaf_off, tree_weight,
                              acc, 32);
        rs_block_add_f32_avx2(state + 32, 64, byte_off, t0, t1, leaf_value, leaf_off, tree_weight,
                              acc + 32, n_lanes - 32);
        return 1;
    }
#endif
    (void)isa; (void)state; (void)byte_off; (void)t0; (void)t1; (void)leaf_value;
    (void)leaf_off; (void)tree_weight; (void)acc; (void)n_lanes;
    return 0;
}

/* acc[l] += v[idx[l]] (float64, LightGBM's sum) for every lane of a group; v holds the n
 * leaf values of the tree. */
static inline void rs_add_f64(int isa, const uint8_t* idx, const double* v, int n, double* acc)
{
#if RS_HAVE_X86
    if (isa == RS_ISA_AVX512 && n <= 64) { rs_add_f64_avx512(idx, v, n, acc); return; }
#endif
    rs_add_f64_c(idx, v, acc, rs_lanes(isa));
}

/* acc[l] += v[idx[l]] (* w where weighted), float32 (XGBoost's sum). */
static inline void rs_add_f32(int isa, const uint8_t* idx, const float* v, int n, float* acc,
                              int weighted, float w)
{
#if RS_HAVE_X86
    if (isa == RS_ISA_AVX512 && n <= 64) { rs_add_f32_avx512(idx, v, n, acc, weighted, w); return; }
#endif
    rs_add_f32_c(idx, v, acc, rs_lanes(isa), weighted, w);
}

/* Ranks of a group's values of the rank slots used[0 .. n_used) (slot f reads column
 * column[f] of rows[l * F + ...], n_lanes lanes of `lanes`; rapidscorer/layout.py's rank slots): NaN
 * and zero take rank_zero[f] (NaN is compared as 0.0 by the "None" missing type) and are
 * marked in skip[3 f + kind], the lanes that segment kind skips (NaN for kinds 1 and 2, zero
 * for kind 1); lanes past n_lanes copy lane 0's rank, so that they end no scan later than
 * a real lane (rank 0, passing every test, would fail every mirrored one: its complement is
 * 255, and mirrored segments of a partial group would then run to their sentinels). */
#define RS_RANK_LANES(RANK, T, NPIV)                                                         \
        for (int l = 0; l < n_lanes; ++l)                                                   \
            rk[l] = (uint8_t)RANK(pv, bk, (T)xs[l * F], NPIV);

/* the lanes whose value is NaN and those whose value is 0.0 (or -0.0), as bits, of the
 * n_lanes values xs[l * F] */
static inline void rs_missing_c(const double* xs, int64_t F, int n_lanes, uint64_t* nan,
                                uint64_t* zero)
{
    uint64_t a = 0, b = 0;
    for (int l = 0; l < n_lanes; ++l) {
        const double x = xs[l * F];
        a |= (uint64_t)(x != x) << l;
        b |= (uint64_t)(x == 0.0) << l;
    }
    *nan = a;
    *zero = b;
}

#define RS_GROUP_RANKS(NAME, RANK, MISSING, T, TARGET)                                       \
TARGET static void NAME(const double* rows, int64_t F, int lanes, int n_lanes,              \
                        const int32_t* used, int64_t n_used, const int32_t* column,         \
                        const T* piv,                                                       \
                        const T* bkt, const int64_t* bkt_off, const uint8_t* rank_zero,     \
                        uint8_t* ranks, uint64_t* skip)                                     \
{                                                                                           \
    for (int64_t u = 0; u < n_used; ++u) {                                                  \
        const int64_t f = used[u];                                                          \
        uint8_t* rk = ranks + f * lanes;                                                    \
        uint64_t nan_lanes = 0, zero_lanes = 0;                                             \
        const int64_t nbk = (bkt_off[f + 1] - bkt_off[f]) / 16 - 1;  /* real buckets */     \
        const int npiv = nbk <= 1 ? 0 : (nbk <= 8 ? 8 : 16);                                \
        const int rz = rank_zero[f];                                                        \
        const double* xs = rows + column[f];     /* the slot's column, lane l at l * F */   \
        const T* pv = piv + 16 * f;                                                         \
        const T* bk = bkt + bkt_off[f];                                                     \
        /* no branch on the value (30% zeros in a column mispredict): a zero's rank by     \
         * the search is rank_zero; one loop per pivot count, a constant in each (features  \
         * of at most 8 buckets: 2 of the 4 AVX2 pivot compares; of one bucket: none) */    \
        if (npiv == 0)                                                                      \
            RS_RANK_LANES(RANK, T, 0)                                                       \
        else if (npiv == 8)                                                                 \
            RS_RANK_LANES(RANK, T, 8)                                                       \
        else                                                                                \
            RS_RANK_LANES(RANK, T, 16)                                                      \
        /* the NaN and zero lanes, several a compare; NaN, which the search ranks 0 (no    \
         * comparison holds), takes rank_zero */                                            \
        MISSING(xs, F, n_lanes, &nan_lanes, &zero_lanes);                                   \
        for (uint64_t m = nan_lanes; m; m &= m - 1)                                         \
            rk[rs_ctz64(m)] = (uint8_t)rz;                                                  \
        for (int l = n_lanes; l < lanes; ++l)                                               \
            rk[l] = rk[0];                                                                  \
        skip[3 * f + 0] = 0;                                                                \
        skip[3 * f + 1] = nan_lanes | zero_lanes;                                           \
        skip[3 * f + 2] = nan_lanes;                                                        \
    }                                                                                       \
}

#if RS_HAVE_X86
/* rs_missing_c four lanes a compare */
CPU_TARGET("avx2") __attribute__((always_inline))
static inline void rs_missing_avx2(const double* xs, int64_t F, int n_lanes, uint64_t* nan,
                                   uint64_t* zero)
{
    uint64_t a = 0, b = 0;
    int l = 0;
    const __m256d z = _mm256_setzero_pd();
    for (; l + 4 <= n_lanes; l += 4) {
        const __m128d lo = _mm_loadh_pd(_mm_load_sd(xs + l * F), xs + (l + 1) * F);
        const __m128d hi = _mm_loadh_pd(_mm_load_sd(xs + (l + 2) * F), xs + (l + 3) * F);
        const __m256d v = _mm256_insertf128_pd(_mm256_castpd128_pd256(lo), hi, 1);
        a |= (uint64_t)_mm256_movemask_pd(_mm256_cmp_pd(v, v, _CMP_UNORD_Q)) << l;
        b |= (uint64_t)_mm256_movemask_pd(_mm256_cmp_pd(v, z, _CMP_EQ_OQ)) << l;
    }
    for (; l < n_lanes; ++l) {
        const double x = xs[l * F];
        a |= (uint64_t)(x != x) << l;
        b |= (uint64_t)(x == 0.0) << l;
    }
    *nan = a;
    *zero = b;
}
#endif

RS_GROUP_RANKS(rs_group_ranks_c, rs_rank_c, rs_missing_c, double, )
#if RS_HAVE_X86
RS_GROUP_RANKS(rs_group_ranks_avx2, rs_rank_avx2, rs_missing_avx2, double, CPU_TARGET("avx2"))
RS_GROUP_RANKS(rs_group_ranks_avx512, rs_rank_avx512, rs_missing_avx2, double,
               CPU_TARGET("avx512f,avx512bw"))
RS_GROUP_RANKS(rs_group_ranks_f32_avx2, rs_rank_f32_avx2, rs_missing_avx2, float,
               CPU_TARGET("avx2"))
RS_GROUP_RANKS(rs_group_ranks_f32_avx512, rs_rank_f32_avx512, rs_missing_avx2, float,
               CPU_TARGET("avx512f,avx512bw"))
#endif

/* piv32 / bkt32: the same tables in float32, or NULL; where given (an XGBoost model, whose
 * rows hold float32 values), the AVX2 and AVX-512 searches compare in float32 */
static inline void rs_group_ranks(int isa, const double* rows, int64_t F, int n_lanes,
                                  const int32_t* used, int64_t n_used,
                                  const int32_t* column, const double* piv,
                                  const double* bkt, const float* piv32, const float* bkt32,
                                  const int64_t* bkt_off,
                                  const uint8_t* rank_zero, uint8_t* ranks, uint64_t* skip)
{
    const int lanes = rs_lanes(isa);
#if RS_HAVE_X86
    if (isa == RS_ISA_AVX512 && piv32 != NULL) { rs_group_ranks_f32_avx512(rows, F, lanes, n_lanes, used, n_used, column, piv32, bkt32, bkt_off, rank_zero, ranks, skip); return; }
    if (isa == RS_ISA_AVX512) { rs_group_ranks_avx512(rows, F, lanes, n_lanes, used, n_used, column, piv, bkt, bkt_off, rank_zero, ranks, skip); return; }
    if ((isa == RS_ISA_AVX2 || isa == RS_ISA_AVX2_WIDE) && piv32 != NULL) { rs_group_ranks_f32_avx2(rows, F, lanes, n_lanes, used, n_used, column, piv32, bkt32, bkt_off, rank_zero, ranks, skip); return; }
    if (isa == RS_ISA_AVX2 || isa == RS_ISA_AVX2_WIDE) { rs_group_ranks_avx2(rows, F, lanes, n_lanes, used, n_used, column, piv, bkt, bkt_off, rank_zero, ranks, skip); return; }
#endif
    (void)piv32; (void)bkt32;
    rs_group_ranks_c(rows, F, lanes, n_lanes, used, n_used, column, piv, bkt, bkt_off, rank_zero, ranks, skip);
}

/* ---- categorical nodes ------------------------------------------------------------------
 * A categorical node is not a threshold, so it is not scanned by rank: each categorical
 * feature has a slot whose byte per document is the value's code (_forest.pxd's
 * category_code: the category below 254, 254 where the value names none of those, 255 for
 * NaN; computed by _rapidscorer.pyx's score_group), and each
 * node has a 256-bit table (32 bytes, bit c % 8 of byte c / 8) of the codes that leave it
 * away from its first subtree, whose leaves its entries then clear (rapidscorer/layout.py's
 * categorical_nodes). A block's categorical nodes are applied after its scan: every node,
 * every lane, no early stop (a node's cost is its table lookup and its entries). */

/* nodes k0 .. k1 - 1 on a group of `lanes` lanes (portable C) */
static void rs_cat_c(const uint8_t* codes, int lanes, const int32_t* node_slot,
                     const uint8_t* tables, const int64_t* eoff, const rs_entry* entries,
                     int64_t k0, int64_t k1, uint8_t* state)
{
    for (int64_t k = k0; k < k1; ++k) {
        const uint8_t* c = codes + (size_t)node_slot[k] * lanes;
        const uint8_t* t = tables + 32 * k;
        for (int64_t e = eoff[k]; e < eoff[k + 1]; ++e) {
            uint8_t* p = state + (size_t)entries[e].byte * lanes;
            const uint8_t m = entries[e].mask;
            for (int l = 0; l < lanes; ++l)
                if ((t[c[l] >> 3] >> (c[l] & 7)) & 1)
                    p[l] &= m;
        }
    }
}

#if RS_HAVE_X86
/* the same for 32 lanes of rows `stride` bytes apart (32; 64 for a half of a wide group):
 * a lane's table byte by two 16-byte shuffles (codes below and from 128), its bit by a
 * third, so a node costs about as many instructions as an entry's test in the scan */
CPU_TARGET("avx2")
static void rs_cat_avx2s(const uint8_t* codes, size_t stride, const int32_t* node_slot,
                         const uint8_t* tables, const int64_t* eoff, const rs_entry* entries,
                         int64_t k0, int64_t k1, uint8_t* state)
{
    const __m256i bit_of = _mm256_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32,
                                            64, -128, 1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4,
                                            8, 16, 32, 64, -128);
    const __m256i seven = _mm256_set1_epi8(7), low5 = _mm256_set1_epi8(0x1F);
    int32_t last = -1;
    __m256i c = _mm256_setzero_si256(), byte_of = c, bit = c;
    for (int64_t k = k0; k < k1; ++k) {
        if (node_slot[k] != last) {      /* consecutive nodes of one slot share these */
            last = node_slot[k];
            c = _mm256_loadu_si256((const __m256i*)(codes + (size_t)last * stride));
            byte_of = _mm256_and_si256(_mm256_srli_epi16(c, 3), low5);
            bit = _mm256_shuffle_epi8(bit_of, _mm256_and_si256(c, seven));
        }
        const __m128i* t = (const __m128i*)(tables + 32 * k);
        const __m256i lo = _mm256_broadcastsi128_si256(_mm_loadu_si128(t));
        const __m256i hi = _mm256_broadcastsi128_si256(_mm_loadu_si128(t + 1));
        const __m256i tb = _mm256_blendv_epi8(_mm256_shuffle_epi8(lo, byte_of),
                                              _mm256_shuffle_epi8(hi, byte_of), c);
        const __m256i away = _mm256_cmpeq_epi8(_mm256_and_si256(tb, bit), bit);
        for (int64_t e = eoff[k]; e < eoff[k + 1]; ++e) {
            __m256i* p = (__m256i*)(state + (size_t)entries[e].byte * stride);
            const __m256i m = _mm256_set1_epi8((char)entries[e].mask);
            _mm256_store_si256(p, _mm256_andnot_si256(_mm256_andnot_si256(m, away),
                                                      _mm256_load_si256(p)));
        }
    }
}
#endif

/* a block's categorical nodes k0 .. k1 - 1 for a group on path isa (AVX-512 groups, of 64
 * lanes in rows of 64 bytes, by the AVX2 code on each half, as the AVX2 wide path) */
static inline void rs_block_cat(int isa, const uint8_t* codes, const int32_t* node_slot,
                                const uint8_t* tables, const int64_t* eoff,
                                const rs_entry* entries, int64_t k0, int64_t k1,
                                uint8_t* state)
{
    if (k0 >= k1)
        return;
#if RS_HAVE_X86
    if (isa == RS_ISA_AVX2) {
        rs_cat_avx2s(codes, 32, node_slot, tables, eoff, entries, k0, k1, state);
        return;
    }
    if (isa == RS_ISA_AVX2_WIDE || isa == RS_ISA_AVX512) {
        rs_cat_avx2s(codes, 64, node_slot, tables, eoff, entries, k0, k1, state);
        rs_cat_avx2s(codes + 32, 64, node_slot, tables, eoff, entries, k0, k1, state + 32);
        return;
    }
#endif
    rs_cat_c(codes, rs_lanes(isa), node_slot, tables, eoff, entries, k0, k1, state);
}

#endif
