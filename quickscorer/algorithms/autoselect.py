"""Which exact algorithm ``Model.predict`` runs when none is named.

Every algorithm gives the same scores; they differ in speed. Measured on a LightGBM
regression model of 1,000 full 64-leaf trees (136 features, rows uniform in [0, 1) with 30%
zeros), AMD EPYC (Zen 4) VM with AVX-512, one thread, microseconds per document, best of 3
(``python benchmarks/autoselect_sweep.py --repeat 3``)::

    rows per call          1      2      4      8     12     16     24     32     64    128
    quickscorer         24.9   24.0   22.1   21.0   21.5   20.7   21.0   20.4   20.1   20.0
    vqs                 57.1   33.6   21.1   12.9   15.4   10.7   13.0    9.4    9.2    9.2
    rapidscorer (64)    81.0   48.3   28.1   16.0   11.8    9.4    6.9    5.4    3.9    3.6
    rapidscorer (32)    78.0   46.5   27.4   15.4   11.7    9.1    6.9    5.3    5.3    5.0

(the 64-lane path runs a last group of at most 32 rows on the 32-lane path, hence the equal
figures below 32 rows). So: ``quickscorer`` for 1 to 3 rows per thread, ``vqs`` from 4,
``rapidscorer`` from 12 where it can score the model (no categorical split, at most 255
distinct thresholds per feature, at most 256 leaves per tree; ``vqs`` otherwise); the
arithmetic traversals of the paper are for study and are never chosen.
"""
from __future__ import annotations

from collections.abc import Sequence

#: below this many rows per thread the scalar scan wins (the 8-lane scan runs half empty)
VQS_MIN_ROWS = 4

#: from this many rows per thread RapidScorer's 32- or 64-document groups win
RS_MIN_ROWS = 12

#: below this many rows a call runs on one thread whatever was asked (no thread start-up)
PARALLEL_MIN_ROWS = 64

#: the algorithms predict may choose, prepared when a model is loaded (those it supports)
CANDIDATES = ("quickscorer", "vqs", "rapidscorer")


def candidates(supported: Sequence[str]) -> tuple[str, ...]:
    """The candidates among the algorithms that can score a model."""
    return tuple(name for name in CANDIDATES if name in supported)


def choose(supported: Sequence[str], n_rows: int, n_threads: int = 1) -> str:
    """The algorithm to run for ``n_rows`` rows on ``n_threads`` threads, among those that
    can score the model (``supported``)."""
    per_thread = n_rows / max(1, n_threads)
    if per_thread < VQS_MIN_ROWS:
        return "quickscorer"
    if per_thread >= RS_MIN_ROWS and "rapidscorer" in supported:
        return "rapidscorer"
    return "vqs"


def threads_for(n_rows: int, n_threads: int) -> int:
    """Threads worth starting for a call of ``n_rows`` rows."""
    if n_rows < PARALLEL_MIN_ROWS:
        return 1
    return max(1, min(n_threads, n_rows // 8))


def describe(supported: Sequence[str]) -> str:
    fast = ("rapidscorer" if "rapidscorer" in supported
            else "vqs (rapidscorer cannot score this model)")
    return (f"{fast} for {RS_MIN_ROWS} or more rows per thread, vqs for {VQS_MIN_ROWS} or "
            f"more, quickscorer below; one thread below {PARALLEL_MIN_ROWS} rows")
