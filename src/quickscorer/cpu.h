/* Run-time CPU detection, shared by the SIMD kernels (vqs.h, rapidscorer/scan.h and the headers that include them).
 *
 * The kernels are compiled for every instruction set with target attributes (CPU_TARGET), not
 * with -march, and pick a path at run time: cpu_best_isa() gives the widest the CPU has,
 * cpu_isa_available() whether one can run; CPU_ISA_* name them (QUICKSCORER_ISA and the
 * kernels' isa= arguments force one). CPU_HAVE_X86 is 1 where the kernels' x86 intrinsics
 * compile, natively or through SIMDe, and 0 where they do not: the portable C paths alone.
 *
 * On AArch64 (gcc or clang, with SIMDe's headers: setup.py finds them through the simde-py
 * build requirement and defines QS_SIMDE) the AVX2 kernels are compiled through SIMDe's
 * translation of each intrinsic into NEON (Advanced SIMD, present on every AArch64 CPU): that
 * is the NEON path, code CPU_ISA_AVX2 under the name "neon" (CPU_NEON is 1). A 256-bit
 * register is two 128-bit NEON registers. The AVX-512 kernels compile there too, but never
 * report themselves available.
 *
 * A test build (QS_EMULATE_AVX512: setup.py's QUICKSCORER_EMULATE_AVX512=1) takes every AVX2
 * and AVX-512 intrinsic from SIMDe's portable C and reports every path available, so that the
 * AVX-512 kernels run, slowly, on CPUs without AVX-512 (.ci/avx512-emulated). */
#ifndef QUICKSCORER_CPU_H
#define QUICKSCORER_CPU_H

#include <stdint.h>

#define CPU_ISA_SCALAR 0
#define CPU_ISA_AVX2 1
#define CPU_ISA_AVX512 2

#if (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
#define CPU_NATIVE_X86 1
#if defined(QS_EMULATE_AVX512)
#define CPU_SIMDE 1
#endif
#elif (defined(__GNUC__) || defined(__clang__)) && defined(__aarch64__) && defined(QS_SIMDE)
#define CPU_NATIVE_X86 0
#define CPU_SIMDE 1
#define CPU_NEON 1
#else
#define CPU_NATIVE_X86 0
#endif
#ifndef CPU_SIMDE
#define CPU_SIMDE 0
#endif
#ifndef CPU_NEON
#define CPU_NEON 0
#endif
/* the NEON path's steps written natively (rapidscorer/scan.h: the scan entry, the exit
 * search and the rank search), unless QS_NEON_SIMDE_ONLY asks for SIMDe's translation of
 * every step (benchmarks/experiments/neon_ops.py counts both) */
#if CPU_NEON && !defined(QS_NEON_SIMDE_ONLY)
#define CPU_NEON_NATIVE 1
#else
#define CPU_NEON_NATIVE 0
#endif

#if CPU_NEON_NATIVE
#include <arm_neon.h>   /* the steps written natively (rapidscorer/scan.h) */
#endif
#if CPU_SIMDE
/* the intrinsics from SIMDe: over NEON on AArch64, in portable C on x86-64 (the emulated test
 * build, below) */
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
typedef simde__mmask8 __mmask8;
#if SIMDE_VERSION < HEDLEY_VERSION_ENCODE(0, 8, 0)
/* SIMDe 0.8 names these itself */
typedef simde__mmask16 __mmask16;
typedef simde__mmask32 __mmask32;
typedef simde__mmask64 __mmask64;
#endif
/* SIMDe's aliases take their arguments before they are expanded (RS_TZ_NIBBLE is one
 * argument there); these after */
#undef _mm256_setr_epi8
#define _mm256_setr_epi8(...) simde_mm256_setr_epi8(__VA_ARGS__)
#undef _mm_setr_epi8
#define _mm_setr_epi8(...) simde_mm_setr_epi8(__VA_ARGS__)
#if CPU_NEON
/* SIMDe (0.7.4 to 0.8.2) converts with NEON's round-to-odd (vcvtxd_f32_f64) here, where x86
 * rounds to nearest, ties to even: a double halfway between two floats lands on the other
 * float (the oblivious kernel's float32 ranks then differ). The C conversion rounds as x86. */
static inline simde__m128 cpu_neon_cvtsd_ss(simde__m128 a, simde__m128d b)
{
    float v[4];
    double w[2];
    simde_mm_storeu_ps(v, a);
    simde_mm_storeu_pd(w, b);
    v[0] = (float)w[0];
    return simde_mm_loadu_ps(v);
}
#undef _mm_cvtsd_ss
#define _mm_cvtsd_ss(a, b) cpu_neon_cvtsd_ss((a), (b))
#endif
/* what SIMDe 0.7.4~rc2 lacks, in plain C: a masked load reads no element its mask clears */
#ifndef _mm512_maskz_loadu_pd
static inline simde__m512d cpu_emu_maskz_loadu_pd(simde__mmask8 k, const void* p)
{
    double v[8] = {0};
    for (int i = 0; i < 8; ++i)
        if ((k >> i) & 1)
            v[i] = ((const double*)p)[i];
    return simde_mm512_loadu_pd(v);
}
#define _mm512_maskz_loadu_pd(k, p) cpu_emu_maskz_loadu_pd((k), (p))
#endif
#ifndef _mm512_maskz_loadu_ps
static inline simde__m512 cpu_emu_maskz_loadu_ps(simde__mmask16 k, const void* p)
{
    float v[16] = {0};
    for (int i = 0; i < 16; ++i)
        if ((k >> i) & 1)
            v[i] = ((const float*)p)[i];
    return simde_mm512_loadu_ps(v);
}
#define _mm512_maskz_loadu_ps(k, p) cpu_emu_maskz_loadu_ps((k), (p))
#endif
#ifndef _mm512_cvtepu8_epi64
static inline simde__m512i cpu_emu_cvtepu8_epi64(simde__m128i a)
{
    uint8_t b[16];
    int64_t v[8];
    simde_mm_storeu_si128((simde__m128i*)b, a);
    for (int i = 0; i < 8; ++i)
        v[i] = b[i];
    return simde_mm512_loadu_si512(v);
}
#define _mm512_cvtepu8_epi64(a) cpu_emu_cvtepu8_epi64(a)
#endif
#ifndef _mm512_cvtepu8_epi32
static inline simde__m512i cpu_emu_cvtepu8_epi32(simde__m128i a)
{
    uint8_t b[16];
    int32_t v[16];
    simde_mm_storeu_si128((simde__m128i*)b, a);
    for (int i = 0; i < 16; ++i)
        v[i] = b[i];
    return simde_mm512_loadu_si512(v);
}
#define _mm512_cvtepu8_epi32(a) cpu_emu_cvtepu8_epi32(a)
#endif
#define CPU_TARGET(t)
#endif

#if CPU_NATIVE_X86
#define CPU_HAVE_X86 1
#ifdef QS_EMULATE_AVX512
/* Test builds only (QUICKSCORER_EMULATE_AVX512=1 python setup.py build_ext): every AVX2 and
 * AVX-512 intrinsic comes from SIMDe's portable C (Debian's libsimde-dev), no function gets
 * a target attribute (the compiler may not emit AVX-512 code) and every path reports itself
 * available, so that a CPU without AVX-512 runs the AVX-512 paths, slowly, and the tests that
 * force each instruction set check them against the reference. */
/* SIMDe 0.7.4~rc2's portable testz answers 1 when either 64-bit half of a 128-bit pair ANDs to
 * zero (both must); checked against the native instruction on AVX2 */
static inline int cpu_emu_testz_si256(simde__m256i a, simde__m256i b)
{
    uint64_t x[4], y[4], r = 0;
    simde_mm256_storeu_si256((simde__m256i*)x, a);
    simde_mm256_storeu_si256((simde__m256i*)y, b);
    for (int i = 0; i < 4; ++i)
        r |= x[i] & y[i];
    return r == 0;
}
#undef _mm256_testz_si256
#define _mm256_testz_si256(a, b) cpu_emu_testz_si256((a), (b))
#define CPU_SUPPORTS(feature) 1
#else
#include <immintrin.h>
#define CPU_TARGET(t) __attribute__((target(t)))
#define CPU_SUPPORTS(feature) __builtin_cpu_supports(feature)
#endif

static inline int cpu_isa_available(int isa)
{
    __builtin_cpu_init();
    if (isa == CPU_ISA_SCALAR)
        return 1;
    if (isa == CPU_ISA_AVX2)
        return CPU_SUPPORTS("avx2");
    if (isa == CPU_ISA_AVX512)
        return CPU_SUPPORTS("avx512f");
    return 0;
}
#elif CPU_NEON
/* the NEON path (the AVX2 kernels through SIMDe): every AArch64 CPU runs it */
#define CPU_HAVE_X86 1
#define CPU_SUPPORTS(feature) 0
static inline int cpu_isa_available(int isa)
{
    return isa == CPU_ISA_SCALAR || isa == CPU_ISA_AVX2;
}
#else
#define CPU_HAVE_X86 0
static inline int cpu_isa_available(int isa) { return isa == CPU_ISA_SCALAR; }
#endif

/* whether the CPU is an Intel one ("GenuineIntel") */
#if CPU_NATIVE_X86
#include <cpuid.h>
static inline int cpu_is_intel(void)
{
    unsigned int a, b, c, d;
    return __get_cpuid(0, &a, &b, &c, &d) && b == 0x756E6547u && d == 0x49656E69u &&
           c == 0x6C65746Eu;
}

/* whether the CPU runs each 512-bit operation as two 256-bit halves: AMD's family 0x19, whose
 * only AVX-512 cores are Zen 4's (Zen 5, family 0x1A, and Intel's AVX-512 cores run them
 * whole) */
static inline int cpu_splits_512(void)
{
    unsigned int a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d) || b != 0x68747541u || d != 0x69746E65u ||
        c != 0x444D4163u || !__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    unsigned int family = (a >> 8) & 0xFu;
    if (family == 0xFu)
        family += (a >> 20) & 0xFFu;
    return family == 0x19u;
}
#else
static inline int cpu_is_intel(void) { return 0; }
static inline int cpu_splits_512(void) { return 0; }
#endif

static inline int cpu_best_isa(void)
{
    if (cpu_isa_available(CPU_ISA_AVX512))
        return CPU_ISA_AVX512;
    if (cpu_isa_available(CPU_ISA_AVX2))
        return CPU_ISA_AVX2;
    return CPU_ISA_SCALAR;
}

#endif
