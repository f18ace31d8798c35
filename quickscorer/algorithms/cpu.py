"""What the CPU offers the kernels.

- instruction sets: ``scalar`` (portable C), ``avx2`` and ``avx512`` on x86-64, ``neon`` on
  AArch64, detected at run time by the kernel (``src/quickscorer/cpu.h``);
  a model's tuning table (``Tuning.isa``, ``$QUICKSCORER_ISA``) forces one;
- the per-core L2 cache size (sysfs), which sizes the tree blocks.

The kernels know a path by its code (:data:`ISAS`). Code 1 is the 256-bit path: AVX2 on
x86-64, and on AArch64 the same kernels compiled through SIMDe into NEON (two 128-bit
registers for each 256-bit one), named ``neon`` there (:data:`NAMES`).
"""
from __future__ import annotations

import functools

from .. import _config
from .qs import _vqs

#: the kernels' code of each path (code 1 is the NEON path on AArch64: see above)
ISAS = {"scalar": 0, "avx2": 1, "avx512": 2}

#: whether this build's 256-bit path is NEON (an AArch64 build with SIMDe)
NEON = "neon" in _config.build_info()["compiled_paths"]

#: the paths by the names users give them (``Tuning.isa``, ``isa=``, ``model.info()``)
NAMES = {"scalar": 0, "neon": 1} if NEON else dict(ISAS)

#: the widest group of documents per scan on each path, the fastest width measured there;
#: ``python -m benchmarks.tuning.vqs_variants isa=avx2,lanes=8 isa=avx2,lanes=16`` re-measures it
#: (NEON takes AVX2's width, unmeasured on an ARM CPU)
MAX_LANES = {"scalar": 8, "avx2": 16, "avx512": 32, "neon": 16}


@functools.cache
def l2_cache_bytes() -> int:
    """This CPU's per-core L2 cache size (sysfs, read once), 512 KiB where it cannot be
    read."""
    try:
        with open("/sys/devices/system/cpu/cpu0/cache/index2/size") as fh:
            text = fh.read().strip().upper()
        return int(text[:-1]) * 1024 if text.endswith("K") else int(text)
    except (OSError, ValueError):
        return 512 * 1024


def default_block_bytes(configured: int | None = None) -> int:
    """Layout bytes per tree block: ``configured`` (``Tuning.block_bytes``), else half the L2
    cache, so that a tree block's thresholds and masks stay in L2 while a document block is
    scanned against them (block-wise QuickScorer)."""
    return max(1, configured) if configured is not None else l2_cache_bytes() // 2


def isa_code(name: str | None = None) -> int:
    """The instruction-set path to run: ``name`` (an argument, or a model's ``Tuning.isa``),
    else the widest this CPU has. Raises ``ValueError`` for an unknown name or one the CPU
    cannot run."""
    name = name or None
    if name is None:
        return int(_vqs.best_isa())
    if name not in NAMES:
        known = sorted({*ISAS, "neon"})
        if name in known:
            raise ValueError(f"this CPU cannot run the {name!r} path; it runs "
                             f"{available_isas()}")
        raise ValueError(f"unknown instruction set {name!r}; known: {known}")
    if not _vqs.isa_available(NAMES[name]):
        raise ValueError(f"this CPU cannot run the {name!r} path; it runs {available_isas()}")
    return NAMES[name]


def isa_name(code: int) -> str:
    """The name users give the path of kernel code ``code``."""
    return {v: k for k, v in NAMES.items()}[code]


def available_isas() -> list[str]:
    """The instruction-set paths this CPU runs, narrowest first."""
    return [n for n, c in NAMES.items() if _vqs.isa_available(c)]
