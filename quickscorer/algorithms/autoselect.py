"""Which exact algorithm ``Model.predict`` runs when none is named.

Every registered algorithm gives the same scores; they differ in speed. Measured on this
project's 1,000-tree, 64-leaf learning-to-rank model (Xeon 2.5 GHz with AVX-512, one thread,
microseconds per document, consecutive slices of generated rows; ``python
benchmarks/compare.py --trees 1000 --batch 1,2,4,8,16,32,100,10000 --repeat 5 --min-rows 2000
--engines quickscorer --algorithms quickscorer,vqs``)::

    rows per call      1      2      4      8     16     32    100  10000
    quickscorer     59.6   49.8   44.3   40.9   39.1   38.3   38.0   36.3
    vqs            114.4   67.9   38.9   22.1   16.5   13.6   14.8   12.2

(that run caught the machine in one of its slow spells). So:
V-QuickScorer from 4 rows per thread (it scans 8, 16 or 32 documents at once, the widest
group the rows fill), scalar QuickScorer for the one-to-three-row calls of a latency-bound
service. The arithmetic traversals of the paper are for study and are never chosen.
"""
from __future__ import annotations

from ..ir.ensemble import Ensemble

#: below this many rows per thread the scalar scan wins (the 8-lane scan runs half empty)
VQS_MIN_ROWS = 4

#: below this many rows a call runs on one thread whatever was asked (no thread start-up)
PARALLEL_MIN_ROWS = 64

CANDIDATES = ("quickscorer", "vqs")


def choose(ens: Ensemble, n_rows: int, n_threads: int = 1) -> str:
    """The algorithm to run for ``n_rows`` rows on ``n_threads`` threads."""
    per_thread = n_rows / max(1, n_threads)
    return "vqs" if per_thread >= VQS_MIN_ROWS else "quickscorer"


def threads_for(n_rows: int, n_threads: int) -> int:
    """Threads worth starting for a call of ``n_rows`` rows."""
    if n_rows < PARALLEL_MIN_ROWS:
        return 1
    return max(1, min(n_threads, n_rows // 8))


def describe() -> str:
    return (f"vqs for {VQS_MIN_ROWS} or more rows per thread, quickscorer below; "
            f"one thread below {PARALLEL_MIN_ROWS} rows")
