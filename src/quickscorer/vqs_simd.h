/* V-QuickScorer scans: one feature's sorted thresholds against QS_LANES documents at once.
 *
 * The leaf bitvectors of a block of documents are interleaved: word w of lane l is
 * v[w * QS_LANES + l]. For every entry k of a segment (thresholds ascending, +inf sentinel at
 * the end) the lanes whose value is > thr[k] AND mask[k] into their word word[k]; the scan
 * stops at the first entry no lane exceeds. A lane holding NaN or -inf never exceeds.
 *
 * Three implementations give identical results (the same ANDs): portable C, AVX2 (two
 * 4-lane halves) and AVX-512 (8 lanes, masked AND). qs_best_isa() picks the widest the CPU
 * has at run time; QS_ISA_* values can force one (tests run each that the machine has).
 */
#ifndef QUICKSCORER_VQS_SIMD_H
#define QUICKSCORER_VQS_SIMD_H

#include <stdint.h>
#include <stddef.h>

#define QS_LANES 8
#define QS_ISA_SCALAR 0
#define QS_ISA_AVX2 1
#define QS_ISA_AVX512 2

static inline int64_t qs_scan_scalar(const double* thr, const uint32_t* word,
                                     const uint64_t* mask, int64_t k, const double* x,
                                     uint64_t* v)
{
    for (;; ++k) {
        const double t = thr[k];
        int any = 0;
        uint64_t* p = v + (size_t)word[k] * QS_LANES;
        for (int l = 0; l < QS_LANES; ++l) {
            if (x[l] > t) {
                p[l] &= mask[k];
                any = 1;
            }
        }
        if (!any)
            return k;
    }
}

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define QS_HAVE_X86 1
#include <immintrin.h>

__attribute__((target("avx2")))
static int64_t qs_scan_avx2(const double* thr, const uint32_t* word, const uint64_t* mask,
                            int64_t k, const double* x, uint64_t* v)
{
    const __m256d xa = _mm256_loadu_pd(x);
    const __m256d xb = _mm256_loadu_pd(x + 4);
    const __m256i ones = _mm256_set1_epi64x(-1);
    for (;; ++k) {
        const __m256d t = _mm256_broadcast_sd(thr + k);
        const __m256d ca = _mm256_cmp_pd(xa, t, _CMP_GT_OQ);
        const __m256d cb = _mm256_cmp_pd(xb, t, _CMP_GT_OQ);
        if (_mm256_movemask_pd(_mm256_or_pd(ca, cb)) == 0)
            return k;
        const __m256i m = _mm256_set1_epi64x((long long)mask[k]);
        uint64_t* p = v + (size_t)word[k] * QS_LANES;
        /* lanes that exceed AND the mask; the others AND all ones */
        const __m256i ka = _mm256_or_si256(m, _mm256_xor_si256(_mm256_castpd_si256(ca), ones));
        const __m256i kb = _mm256_or_si256(m, _mm256_xor_si256(_mm256_castpd_si256(cb), ones));
        __m256i* pa = (__m256i*)p;
        __m256i* pb = (__m256i*)(p + 4);
        _mm256_storeu_si256(pa, _mm256_and_si256(_mm256_loadu_si256(pa), ka));
        _mm256_storeu_si256(pb, _mm256_and_si256(_mm256_loadu_si256(pb), kb));
    }
}

__attribute__((target("avx512f")))
static int64_t qs_scan_avx512(const double* thr, const uint32_t* word, const uint64_t* mask,
                              int64_t k, const double* x, uint64_t* v)
{
    const __m512d xv = _mm512_loadu_pd(x);
    for (;; ++k) {
        const __mmask8 c = _mm512_cmp_pd_mask(xv, _mm512_set1_pd(thr[k]), _CMP_GT_OQ);
        if (c == 0)
            return k;
        uint64_t* p = v + (size_t)word[k] * QS_LANES;
        const __m512i cur = _mm512_loadu_si512((const void*)p);
        const __m512i m = _mm512_set1_epi64((long long)mask[k]);
        _mm512_storeu_si512((void*)p, _mm512_mask_and_epi64(cur, c, cur, m));
    }
}

static inline int qs_isa_available(int isa)
{
    __builtin_cpu_init();
    if (isa == QS_ISA_SCALAR)
        return 1;
    if (isa == QS_ISA_AVX2)
        return __builtin_cpu_supports("avx2");
    if (isa == QS_ISA_AVX512)
        return __builtin_cpu_supports("avx512f");
    return 0;
}
#else
#define QS_HAVE_X86 0
static inline int qs_isa_available(int isa) { return isa == QS_ISA_SCALAR; }
#endif

static inline int qs_best_isa(void)
{
    if (qs_isa_available(QS_ISA_AVX512))
        return QS_ISA_AVX512;
    if (qs_isa_available(QS_ISA_AVX2))
        return QS_ISA_AVX2;
    return QS_ISA_SCALAR;
}

/* Scan one segment from entry k for the QS_LANES values x; returns where it stopped. */
static inline int64_t qs_scan_lanes(int isa, const double* thr, const uint32_t* word,
                                    const uint64_t* mask, int64_t k, const double* x,
                                    uint64_t* v)
{
#if QS_HAVE_X86
    if (isa == QS_ISA_AVX512)
        return qs_scan_avx512(thr, word, mask, k, x, v);
    if (isa == QS_ISA_AVX2)
        return qs_scan_avx2(thr, word, mask, k, x, v);
#endif
    return qs_scan_scalar(thr, word, mask, k, x, v);
}

#endif
