"""Build the Cython sources under ``src/quickscorer/`` as extension modules of the ``quickscorer``
package: ``src/quickscorer/algorithms/_walk.pyx`` is ``quickscorer.algorithms._walk``, built
beside ``quickscorer/algorithms/walk.py`` (the source tree mirrors the package).

Environment switches:
  QUICKSCORER_NATIVE=1  add -march=native (opt-in; wheels stay portable without it)
  QUICKSCORER_DEBUG=1   bounds and wraparound checks on, -O0 -g, for a debug test run
  QUICKSCORER_ANNOTATE=1  write cython -a HTML next to each .pyx
  QUICKSCORER_ONLY=_vqs,_walk  build only these modules (a developer's quick rebuild; "capi"
                        names the C library)
  QUICKSCORER_JOBS=N    translate and compile N modules at a time (default: every core)
  QUICKSCORER_EMULATE_AVX512=1  a test build whose AVX2 and AVX-512 paths run on SIMDe's
                        portable C (Debian's libsimde-dev), every path available on any x86-64
                        CPU: .ci/run tests the AVX-512 kernels so on CPUs without them. Slow;
                        never for use.
  QUICKSCORER_OPENMP=0  build without OpenMP even where the compiler has it (threads then come
                        from a pool of Python threads: quickscorer/threads.py)

Beside the extension modules, the C library libquickscorer (src/quickscorer/capi/, docs/c-api.md)
is built into the package's lib/ folder and its header copied into include/, where
`python -m quickscorer.capi --cflags --libs` finds them (POSIX systems; not with MSVC yet).

What each platform gets (docs/install.md): on x86-64 with gcc or clang, the AVX2 and AVX-512
kernels by target attributes, chosen at run time; on AArch64 with gcc or clang, the NEON path
(the AVX2 kernels through SIMDe, whose headers the simde-py build requirement brings); with
MSVC, the portable C kernels. OpenMP where a test program compiles and links with it (gcc;
not Apple's clang).
"""
import copy
import os
import platform
import sys
import tempfile
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).parent
DEBUG = os.environ.get("QUICKSCORER_DEBUG", "") not in ("", "0")
NATIVE = os.environ.get("QUICKSCORER_NATIVE", "") not in ("", "0")
EMULATE_AVX512 = os.environ.get("QUICKSCORER_EMULATE_AVX512", "") not in ("", "0")
ONLY = {s.strip() for s in os.environ.get("QUICKSCORER_ONLY", "").split(",") if s.strip()}
#: modules translated (Cython) and compiled (the C compiler) at a time, instead of one after
#: the other: `pip install .` from a clean clone took 152 s instead of 296 s on 2 cores (AMD
#: EPYC Zen 3; `/usr/bin/time pip install .` in a fresh venv)
JOBS = int(os.environ.get("QUICKSCORER_JOBS", "0") or 0) or os.cpu_count() or 1

# All compiler directives live here, once.
DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "nonecheck": False,
    "embedsignature": True,
}


def openmp_flags() -> tuple[list[str], list[str]]:
    """The compile and link flags of OpenMP where this compiler has it: a test program that
    includes omp.h is compiled and linked with them; none where that fails."""
    if os.environ.get("QUICKSCORER_OPENMP", "") == "0":
        return [], []
    if sys.platform == "win32":
        return ["/openmp"], []
    from setuptools._distutils.ccompiler import new_compiler
    from setuptools._distutils.sysconfig import customize_compiler

    cc = new_compiler()
    customize_compiler(cc)
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp, "omp.c")
        src.write_text("#include <omp.h>\nint main(void) { return omp_get_max_threads() < 1; }\n")
        try:
            objects = cc.compile([str(src)], output_dir=tmp, extra_postargs=["-fopenmp"])
            cc.link_executable(objects, str(Path(tmp, "omp")), extra_postargs=["-fopenmp"])
        except Exception as exc:  # CompileError, LinkError: the compiler has no OpenMP
            print(f"quickscorer: building without OpenMP ({type(exc).__name__}); n_threads "
                  "then runs a pool of Python threads", file=sys.stderr)
            return [], []
    return ["-fopenmp"], ["-fopenmp"]


def simde_include() -> str | None:
    """Where SIMDe's headers are, for the NEON path on AArch64: the simde-py build
    requirement's, else the system's (Debian's libsimde-dev); None where neither is."""
    try:
        import simde_py
    except ImportError:
        pass
    else:
        return simde_py.get_include()
    for base in ("/usr/include", "/usr/local/include", "/opt/homebrew/include"):
        if Path(base, "simde", "x86", "avx2.h").is_file():
            return base
    return None


ARM64 = platform.machine().lower() in ("aarch64", "arm64")
macros = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]
include_dirs = [np.get_include(), "src"]
if EMULATE_AVX512:
    macros.append(("QS_EMULATE_AVX512", "1"))
if ARM64 and sys.platform != "win32":
    SIMDE = simde_include()
    if SIMDE is None:
        print("quickscorer: SIMDe's headers not found (pip install simde-py): the portable C "
              "kernels alone, no NEON path", file=sys.stderr)
    else:
        macros.append(("QS_SIMDE", "1"))
        include_dirs.append(SIMDE)

omp_compile, omp_link = openmp_flags()
if sys.platform == "win32":
    compile_args = ["/O2", "/fp:precise", *omp_compile]
    link_args = []
else:
    # -ffp-contract=off: no fused multiply-add, so linear leaves and sums round like the
    # source libraries' x86-64 builds (their aarch64 wheels fuse two sums: docs/semantics.md,
    # On AArch64).
    compile_args = ["-O0" if DEBUG else "-O3", "-ffp-contract=off", "-fno-fast-math",
                    *omp_compile]
    if DEBUG:
        compile_args.append("-g")
    if NATIVE:
        compile_args.append("-march=native")
    link_args = omp_link

SRC = HERE / "src"
extensions = [
    Extension(
        ".".join(pyx.relative_to(SRC).with_suffix("").parts),
        [str(pyx.relative_to(HERE))],
        include_dirs=include_dirs,
        define_macros=macros,
        extra_compile_args=compile_args,
        extra_link_args=link_args,
    )
    for pyx in sorted((SRC / "quickscorer").rglob("*.pyx"))
    if not ONLY or pyx.stem in ONLY
]

CAPI = SRC / "quickscorer" / "capi"


def version() -> str:
    text = (HERE / "quickscorer" / "_version.py").read_text()
    return text.split('__version__ = "', 1)[1].split('"', 1)[0]


class BuildWithCLibrary(build_ext):
    """build_ext, then the C library: compiled from capi/quickscorer.c with the kernels'
    flags (no OpenMP: its threads are its own) and linked as lib/libquickscorer.so of the
    package, beside the extension modules (in the source tree for an in-place build)."""

    def run(self):
        super().run()
        if sys.platform == "win32" or (ONLY and "capi" not in ONLY):
            return
        package = Path(self.get_ext_fullpath("quickscorer._capi_probe")).parent
        lib_dir, include_dir = package / "lib", package / "include"
        lib_dir.mkdir(parents=True, exist_ok=True)
        include_dir.mkdir(parents=True, exist_ok=True)
        name = "libquickscorer.dylib" if sys.platform == "darwin" else "libquickscorer.so"
        flags = [a for a in compile_args if "openmp" not in a]
        flags += ["-std=gnu11", "-fvisibility=hidden", "-pthread"]
        # the compiler as Python's build configured it, less the interpreter's library paths
        # (the C library links no Python)
        cc = copy.copy(self.compiler)
        if getattr(cc, "linker_so", None):
            cc.linker_so = [a for a in cc.linker_so
                            if not a.startswith(("-L", "-Wl,-rpath", "-Wl,-R"))]
        with tempfile.TemporaryDirectory() as tmp:
            objects = cc.compile(
                [str(CAPI / "quickscorer.c")], output_dir=tmp, include_dirs=["src"],
                macros=[("QS_VERSION_STRING", f'"{version()}"')], extra_postargs=flags)
            link = ["-pthread", "-lm"]
            if sys.platform == "darwin":
                link += ["-install_name", "@rpath/" + name]
            else:
                link += ["-Wl,-soname," + name]
            cc.link_shared_object(objects, str(lib_dir / name),
                                             extra_postargs=link)
        (include_dir / "quickscorer.h").write_bytes((CAPI / "quickscorer.h").read_bytes())


setup(
    cmdclass={"build_ext": BuildWithCLibrary},
    ext_modules=cythonize(
        extensions,
        compiler_directives=DIRECTIVES,
        include_path=["src"],
        annotate=os.environ.get("QUICKSCORER_ANNOTATE", "") not in ("", "0"),
        # Cython's pool of processes forks; where processes are spawned (Windows, macOS) the
        # translation stays in this process and only the compile runs in parallel
        nthreads=JOBS if sys.platform.startswith("linux") else 0,
    ),
    options={"build_ext": {"parallel": JOBS}},
)
