/* V-QuickScorer scans: one feature's sorted thresholds against a group of documents at once.
 *
 * A group holds `lanes` documents (4, 8, 16 or 32: QS_LANE_CHOICES). Their leaf bitvectors are
 * interleaved: word w of lane l is v[w * lanes + l]. Two streams can be scanned:
 *
 *  - entry-wise: one threshold per mask entry (thr[k], word[k], mask[k]; equal thresholds
 *    repeated), ascending within a segment, +inf sentinel last;
 *  - merged: distinct thresholds thr[j], threshold j owning the mask entries nodes[j] ..
 *    nodes[j + 1] - 1 (equal-threshold nodes of all trees compared once, as in RapidScorer).
 *
 * For every threshold, the lanes whose value is > the threshold AND the masks into their copy
 * of the entry's word; the scan stops at the first threshold no lane exceeds. A lane holding
 * NaN or -inf never exceeds. Three implementations give identical results (the same ANDs):
 * portable C, AVX2 (4 lanes per register) and AVX-512 (8 lanes per register, masked AND).
 * cpu_best_isa() picks the widest the CPU has at run time; CPU_ISA_* values can force one (the
 * tests run each that the machine has).
 */
#ifndef QUICKSCORER_VQS_H
#define QUICKSCORER_VQS_H

#include <stdint.h>
#include <stddef.h>
#include "quickscorer/cpu.h"

#define QS_MAX_LANES 32

#if defined(__GNUC__) || defined(__clang__)
#define QS_INLINE static inline __attribute__((always_inline))
#else
#define QS_INLINE static inline
#endif

/* One implementation per instruction set serves both streams: with nodes == NULL, threshold
 * j owns just entry j (the entry-wise stream), else entries nodes[j] .. nodes[j + 1] - 1. The
 * wrappers below pass constant nodes == NULL and group widths, so the compiler emits a
 * specialised loop for each. */

/* ---- portable C ---------------------------------------------------------------------- */
QS_INLINE int64_t qs_scan_c(const double* thr, const int64_t* nodes, const uint32_t* word,
                            const uint64_t* mask, int64_t j, const double* x, uint64_t* v,
                            const int lanes)
{
    uint64_t keep[QS_MAX_LANES]; /* all ones for lanes not exceeding the threshold */
    for (;; ++j) {
        const double t = thr[j];
        int any = 0;
        for (int l = 0; l < lanes; ++l) {
            const int gt = x[l] > t;
            keep[l] = gt ? 0 : ~(uint64_t)0;
            any |= gt;
        }
        if (!any)
            return j;
        const int64_t end = nodes ? nodes[j + 1] : j + 1;
        for (int64_t k = nodes ? nodes[j] : j; k < end; ++k) {
            uint64_t* p = v + (size_t)word[k] * lanes;
            const uint64_t m = mask[k];
            for (int l = 0; l < lanes; ++l)
                p[l] &= m | keep[l];
        }
    }
}

#if CPU_HAVE_X86

/* ---- AVX2: lanes / 4 registers ------------------------------------------------------- */
CPU_TARGET("avx2") __attribute__((always_inline))
static inline int64_t qs_scan_avx2(const double* thr, const int64_t* nodes,
                                   const uint32_t* word, const uint64_t* mask, int64_t j,
                                   const double* x, uint64_t* v, const int nreg)
{
    __m256d xr[8];
    for (int r = 0; r < nreg; ++r)
        xr[r] = _mm256_loadu_pd(x + 4 * r);
    const __m256i ones = _mm256_set1_epi64x(-1);
    for (;; ++j) {
        const __m256d t = _mm256_broadcast_sd(thr + j);
        __m256i keep[8];
        __m256d any = _mm256_setzero_pd();
        for (int r = 0; r < nreg; ++r) {
            const __m256d c = _mm256_cmp_pd(xr[r], t, _CMP_GT_OQ);
            any = _mm256_or_pd(any, c);
            keep[r] = _mm256_xor_si256(_mm256_castpd_si256(c), ones);
        }
        if (_mm256_movemask_pd(any) == 0)
            return j;
        const int64_t end = nodes ? nodes[j + 1] : j + 1;
        for (int64_t k = nodes ? nodes[j] : j; k < end; ++k) {
            const __m256i m = _mm256_set1_epi64x((long long)mask[k]);
            __m256i* p = (__m256i*)(v + (size_t)word[k] * (4 * nreg));
            for (int r = 0; r < nreg; ++r)
                _mm256_storeu_si256(p + r, _mm256_and_si256(_mm256_loadu_si256(p + r),
                                                             _mm256_or_si256(m, keep[r])));
        }
    }
}

/* ---- AVX-512: lanes / 8 registers, masked AND ----------------------------------------- */
CPU_TARGET("avx512f") __attribute__((always_inline))
static inline int64_t qs_scan_avx512(const double* thr, const int64_t* nodes,
                                     const uint32_t* word, const uint64_t* mask, int64_t j,
                                     const double* x, uint64_t* v, const int nreg)
{
    __m512d xr[4];
    for (int r = 0; r < nreg; ++r)
        xr[r] = _mm512_loadu_pd(x + 8 * r);
    for (;; ++j) {
        const __m512d t = _mm512_set1_pd(thr[j]);
        __mmask8 c[4];
        unsigned any = 0;
        for (int r = 0; r < nreg; ++r) {
            c[r] = _mm512_cmp_pd_mask(xr[r], t, _CMP_GT_OQ);
            any |= c[r];
        }
        if (any == 0)
            return j;
        const int64_t end = nodes ? nodes[j + 1] : j + 1;
        for (int64_t k = nodes ? nodes[j] : j; k < end; ++k) {
            const __m512i m = _mm512_set1_epi64((long long)mask[k]);
            uint64_t* p = v + (size_t)word[k] * (8 * nreg);
            for (int r = 0; r < nreg; ++r) {
                const __m512i cur = _mm512_loadu_si512((const void*)(p + 8 * r));
                _mm512_storeu_si512((void*)(p + 8 * r), _mm512_mask_and_epi64(cur, c[r], cur, m));
            }
        }
    }
}

#define QS_SPECIALISE(ISA, TARGET, NREG)                                                      \
CPU_TARGET(TARGET) static int64_t qs_entries_##ISA##_##NREG(                    \
    const double* thr, const uint32_t* word, const uint64_t* mask, int64_t k,                \
    const double* x, uint64_t* v)                                                            \
{ return qs_scan_##ISA(thr, NULL, word, mask, k, x, v, NREG); }                              \
CPU_TARGET(TARGET) static int64_t qs_merged_##ISA##_##NREG(                     \
    const double* thr, const int64_t* nodes, const uint32_t* word, const uint64_t* mask,     \
    int64_t j, const double* x, uint64_t* v)                                                 \
{ return qs_scan_##ISA(thr, nodes, word, mask, j, x, v, NREG); }

QS_SPECIALISE(avx2, "avx2", 1)
QS_SPECIALISE(avx2, "avx2", 2)
QS_SPECIALISE(avx2, "avx2", 4)
QS_SPECIALISE(avx2, "avx2", 8)
QS_SPECIALISE(avx512, "avx512f", 1)
QS_SPECIALISE(avx512, "avx512f", 2)
QS_SPECIALISE(avx512, "avx512f", 4)

#endif

/* lanes must be 4, 8, 16 or 32 (the callers check) */
static inline int qs_lanes_supported(int lanes)
{
    return lanes == 4 || lanes == 8 || lanes == 16 || lanes == 32;
}

#define QS_SPECIALISE_C(LANES)                                                                \
static int64_t qs_entries_c##LANES(const double* thr, const uint32_t* word,                  \
                                   const uint64_t* mask, int64_t k, const double* x,         \
                                   uint64_t* v)                                              \
{ return qs_scan_c(thr, NULL, word, mask, k, x, v, LANES); }                                 \
static int64_t qs_merged_c##LANES(const double* thr, const int64_t* nodes,                   \
                                  const uint32_t* word, const uint64_t* mask, int64_t j,     \
                                  const double* x, uint64_t* v)                              \
{ return qs_scan_c(thr, nodes, word, mask, j, x, v, LANES); }

QS_SPECIALISE_C(4)
QS_SPECIALISE_C(8)
QS_SPECIALISE_C(16)
QS_SPECIALISE_C(32)

/* Scan one segment of the entry-wise stream from entry k for `lanes` values x; returns where
 * it stopped. */
static inline int64_t qs_scan_entries(int isa, int lanes, const double* thr,
                                      const uint32_t* word, const uint64_t* mask, int64_t k,
                                      const double* x, uint64_t* v)
{
#if CPU_HAVE_X86
    if (lanes == 4 && isa != CPU_ISA_SCALAR)   /* one AVX2 register (AVX-512 CPUs have AVX2) */
        return qs_entries_avx2_1(thr, word, mask, k, x, v);
    if (isa == CPU_ISA_AVX512) {
        if (lanes == 8) return qs_entries_avx512_1(thr, word, mask, k, x, v);
        if (lanes == 16) return qs_entries_avx512_2(thr, word, mask, k, x, v);
        return qs_entries_avx512_4(thr, word, mask, k, x, v);
    }
    if (isa == CPU_ISA_AVX2) {
        if (lanes == 8) return qs_entries_avx2_2(thr, word, mask, k, x, v);
        if (lanes == 16) return qs_entries_avx2_4(thr, word, mask, k, x, v);
        return qs_entries_avx2_8(thr, word, mask, k, x, v);
    }
#endif
    if (lanes == 4) return qs_entries_c4(thr, word, mask, k, x, v);
    if (lanes == 8) return qs_entries_c8(thr, word, mask, k, x, v);
    if (lanes == 16) return qs_entries_c16(thr, word, mask, k, x, v);
    return qs_entries_c32(thr, word, mask, k, x, v);
}

/* Scan one segment of the merged stream from distinct threshold j; returns where it stopped. */
static inline int64_t qs_scan_merged(int isa, int lanes, const double* thr,
                                     const int64_t* nodes, const uint32_t* word,
                                     const uint64_t* mask, int64_t j, const double* x,
                                     uint64_t* v)
{
#if CPU_HAVE_X86
    if (lanes == 4 && isa != CPU_ISA_SCALAR)
        return qs_merged_avx2_1(thr, nodes, word, mask, j, x, v);
    if (isa == CPU_ISA_AVX512) {
        if (lanes == 8) return qs_merged_avx512_1(thr, nodes, word, mask, j, x, v);
        if (lanes == 16) return qs_merged_avx512_2(thr, nodes, word, mask, j, x, v);
        return qs_merged_avx512_4(thr, nodes, word, mask, j, x, v);
    }
    if (isa == CPU_ISA_AVX2) {
        if (lanes == 8) return qs_merged_avx2_2(thr, nodes, word, mask, j, x, v);
        if (lanes == 16) return qs_merged_avx2_4(thr, nodes, word, mask, j, x, v);
        return qs_merged_avx2_8(thr, nodes, word, mask, j, x, v);
    }
#endif
    if (lanes == 4) return qs_merged_c4(thr, nodes, word, mask, j, x, v);
    if (lanes == 8) return qs_merged_c8(thr, nodes, word, mask, j, x, v);
    if (lanes == 16) return qs_merged_c16(thr, nodes, word, mask, j, x, v);
    return qs_merged_c32(thr, nodes, word, mask, j, x, v);
}

#endif
