"""Build the Cython sources under ``src/quickscorer/`` as extension modules of the ``quickscorer``
package: ``src/quickscorer/algorithms/_walk.pyx`` is ``quickscorer.algorithms._walk``, built
beside ``quickscorer/algorithms/walk.py`` (the source tree mirrors the package).

Environment switches:
  QUICKSCORER_NATIVE=1  add -march=native (opt-in; wheels stay portable without it)
  QUICKSCORER_DEBUG=1   bounds and wraparound checks on, -O0 -g, for a debug test run
  QUICKSCORER_ANNOTATE=1  write cython -a HTML next to each .pyx
  QUICKSCORER_ONLY=_vqs,_walk  build only these modules (a developer's quick rebuild)
  QUICKSCORER_JOBS=N    translate and compile N modules at a time (default: every core)
  QUICKSCORER_EMULATE_AVX512=1  a test build whose AVX2 and AVX-512 paths run on SIMDe's
                        portable C (Debian's libsimde-dev), every path available on any x86-64
                        CPU: .ci/run tests the AVX-512 kernels so on CPUs without them. Slow;
                        never for use.
"""
import os
import sys
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

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

if sys.platform == "win32":
    compile_args = ["/O2", "/fp:precise", "/openmp"]
    link_args = []
else:
    # -ffp-contract=off: no fused multiply-add, so linear leaves and sums round like the
    # source libraries do.
    compile_args = ["-O0" if DEBUG else "-O3", "-ffp-contract=off", "-fno-fast-math", "-fopenmp"]
    if DEBUG:
        compile_args.append("-g")
    if NATIVE:
        compile_args.append("-march=native")
    link_args = ["-fopenmp"]

SRC = HERE / "src"
extensions = [
    Extension(
        ".".join(pyx.relative_to(SRC).with_suffix("").parts),
        [str(pyx.relative_to(HERE))],
        include_dirs=[np.get_include(), "src"],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]
        + ([("QS_EMULATE_AVX512", "1")] if EMULATE_AVX512 else []),
        extra_compile_args=compile_args,
        extra_link_args=link_args,
    )
    for pyx in sorted((SRC / "quickscorer").rglob("*.pyx"))
    if not ONLY or pyx.stem in ONLY
]

setup(
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
