"""Which exact algorithm ``Model.predict`` runs when none is named.

Every registered algorithm gives the same scores; they differ in speed. Measured on this
project's 1,000-tree, 64-leaf learning-to-rank model (AMD EPYC, AVX2, one thread; microseconds
per document, consecutive slices of generated rows)::

    rows per call      1      2      4      8     16    100
    quickscorer     27.0   21.6   18.8   17.3   16.6   16.0
    vqs             47.5   30.9   20.0   12.3   11.6   11.2

So: V-QuickScorer (8 documents per scan) from a few rows up, scalar QuickScorer for the
one-to-four-row calls of a latency-bound service. The arithmetic traversals of the paper are
for study and are never chosen.
"""
from __future__ import annotations

from .ensemble import Ensemble

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
