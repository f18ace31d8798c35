"""How this build was compiled: what ``quickscorer.show_config()`` reports of the build.

Compiled with the flags of every other extension module (setup.py gives them all one set),
so what it sees of the compiler, OpenMP and the instruction-set paths is what the kernels
were built with.
"""

cdef extern from *:
    """
    #include "quickscorer/cpu.h"
    #include "quickscorer/sums.h"
    #ifdef _OPENMP
    #include <omp.h>
    #define QS_OPENMP _OPENMP
    static int qs_omp_max_threads(void) { return omp_get_max_threads(); }
    #else
    #define QS_OPENMP 0
    static int qs_omp_max_threads(void) { return 1; }
    #endif
    #if defined(__clang__)
    #define QS_COMPILER "clang " __clang_version__
    #elif defined(__GNUC__)
    #define QS_COMPILER "gcc " __VERSION__
    #elif defined(_MSC_VER)
    #define QS_STR2(x) #x
    #define QS_STR(x) QS_STR2(x)
    #define QS_COMPILER "msvc " QS_STR(_MSC_VER)
    #else
    #define QS_COMPILER "unknown"
    #endif
    #ifdef QS_EMULATE_AVX512
    #define QS_EMULATED 1
    #else
    #define QS_EMULATED 0
    #endif
    #if defined(__AVX2__)
    #define QS_BASELINE_AVX2 1
    #else
    #define QS_BASELINE_AVX2 0
    #endif
    """
    const char* QS_COMPILER
    int QS_OPENMP
    int QS_EMULATED
    int QS_BASELINE_AVX2
    int CPU_HAVE_X86
    int CPU_NEON
    int QS_FUSED_SUMS
    int qs_omp_max_threads() noexcept nogil


def build_info() -> dict:
    """The compiler, whether OpenMP is in (its version as ``_OPENMP``, yyyymm, and its thread
    count now), the instruction-set paths compiled in (AVX2 and AVX-512 by target attributes
    on x86-64 with gcc or clang, chosen when the kernels run; NEON on AArch64 where SIMDe's
    headers were found; portable C elsewhere), whether
    the whole build assumes AVX2 (``-march=native`` on such a CPU), whether its AVX2 and
    AVX-512 paths are emulated (a test build), and whether it fuses the sums that add a
    product (linear leaves, DART weights) as the source libraries' builds for this
    architecture do (AArch64; docs/semantics.md)."""
    return {
        "compiler": QS_COMPILER.decode(),
        "openmp": QS_OPENMP != 0,
        "openmp_version": int(QS_OPENMP),
        "openmp_max_threads": int(qs_omp_max_threads()),
        "compiled_paths": (["scalar", "neon"] if CPU_NEON
                           else ["scalar", "avx2", "avx512"] if CPU_HAVE_X86 else ["scalar"]),
        "baseline_avx2": QS_BASELINE_AVX2 != 0,
        "emulated_avx512": QS_EMULATED != 0,
        "fused_sums": QS_FUSED_SUMS != 0,
    }
