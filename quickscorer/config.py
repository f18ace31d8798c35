"""What this installation is and what it runs on this CPU: :func:`config` as a dict,
:func:`show_config` as text (``quickscorer info --system``), for a bug report or a benchmark's
record."""
from __future__ import annotations

import os
import platform
import sys
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from . import _config
from ._version import __version__
from .algorithms import cpu
from .algorithms.rapidscorer import _rapidscorer
from .algorithms.rapidscorer.rapidscorer import rs_isa_code
from .tuning import Tuning


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo``; the platform's word for it elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _level_walk(rs_isa: str) -> str:
    """The walk RapidScorer's level path takes on calls of the AVX-512 path, as its default."""
    if rs_isa != "avx512":
        return f"{rs_isa} (the level walk of that path)"
    if _rapidscorer.lv_halves_default():
        return "two 256-bit halves a column (the faster walk on every AVX-512 CPU measured)"
    if _rapidscorer.lv_vbmi_available():
        return "byte permutations (AVX512_VBMI)"
    return "a node at a time (no AVX512_VBMI)"


def _exit_leaves(rs_isa: str) -> str:
    """How RapidScorer's scan on the AVX-512 path adds the exit leaves of trees of more than
    32 leaves, by default."""
    if rs_isa != "avx512":
        return f"{rs_isa} (the adds of that path)"
    if _rapidscorer.wide_add_default():
        return "as on AVX2, a block of trees at a time (this CPU splits 512-bit operations)"
    return "tree by tree (AVX-512)"


def config() -> dict[str, Any]:
    """The version, the build (compiler, OpenMP, the instruction-set paths compiled in), the
    platform and CPU, and the path each kernel takes on this CPU by default, with the
    ``QUICKSCORER_*`` variables set now (which may change those paths)."""
    try:
        tuning = Tuning.from_env()        # the environment as it is now
        isa = cpu.isa_name(cpu.isa_code(tuning.isa))
        rs_isa = cpu.isa_name(rs_isa_code(tuning.isa))
    except ValueError as exc:         # a $QUICKSCORER_ISA this CPU cannot run, or no integer
        isa = rs_isa = f"refused: {exc}"
    return {
        "quickscorer": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "platform": f"{platform.system()} {platform.machine()}",
        "cpu": cpu_name(),
        "logical_cores": os.cpu_count(),
        "l2_cache_bytes": cpu.l2_cache_bytes(),
        "build": _config.build_info(),
        "cpu_paths": cpu.available_isas(),
        "kernel_paths": {
            "walk": "portable C (the one-row and few-row walks need no SIMD)",
            "quickscorer": "portable C",
            "vqs": isa,
            "rapidscorer": rs_isa,
            "rapidscorer level walk": _level_walk(rs_isa),
            "rapidscorer exit leaves": _exit_leaves(rs_isa),
            # oblivious has no AVX-512 path of its own: AVX2's
            "oblivious": "avx2" if isa == "avx512" else isa,
        },
        "switches": {k: v for k, v in sorted(os.environ.items())
                     if k.startswith("QUICKSCORER_")},
    }


def show_config(file: TextIO | None = None) -> None:
    """Print :func:`config`, one fact a line (to ``file``, standard output by default)."""
    out = file or sys.stdout
    for key, value in config().items():
        if isinstance(value, dict):
            print(f"{key}:", file=out)
            for k, v in value.items():
                print(f"  {k:24s} {v}", file=out)
        else:
            print(f"{key:26s} {value}", file=out)
