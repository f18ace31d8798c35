"""Calls of a few rows: the kernels' low-latency entries against the general path, same model,
same kernel, same rows, interleaved in one process.

    python benchmarks/small_calls.py                       # the default shapes and batches
    python benchmarks/small_calls.py --shapes ltr-1000x64 --batch 4,10,32 --rounds 7

Every call of fewer than ``PARALLEL_MIN_ROWS`` rows (64) with the automatic choice runs the
low-latency entry of the kernel chosen for that many rows (``Algorithm.predict_small``: the
arguments read through numpy's C API, no typed memoryviews, no OpenMP region). The general
path is the same model through a ``Model`` whose ``_small`` declines every call, so the same
kernel runs through ``predict_raw``'s argument handling and the kernel's memoryview entry:
what calls of 4 to 63 rows took before ``vqs`` and ``rapidscorer`` had entries (calls of 1 to
3 rows took the one-row kernels' entry already). Both are timed
on the same batches of distinct rows (a batch ``b`` is rows ``i*b .. (i+1)*b - 1``, ``i``
cycling), in rounds that alternate the two, and their scores are checked equal.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import compare as C  # noqa: E402
import matrix as M  # noqa: E402

DEFAULT_SHAPES = ("full-uniform-1000x31", "full-uniform-1000x64", "full-uniform-1000x255",
                  "full-heavy-1000x31", "ltr-1000x64", "xgb-depth6-uniform-1000")
DEFAULT_BATCHES = "1,2,4,8,9,16,32,63"


def _models(wl):
    import quickscorer

    class GeneralPath(quickscorer.Model):
        def _small(self, X, squeeze, algorithm, n_threads):
            return None

    model = quickscorer.load(wl.lgb_path)
    return model, GeneralPath(model.ensemble)


def _time(fn, batches, seconds: float) -> float:
    """Microseconds per document of fn over the batches in turn for about `seconds`."""
    n_docs = 0
    t0 = time.perf_counter()
    end = t0 + seconds
    while True:
        for b in batches:
            fn(b)
            n_docs += b.shape[0]
        now = time.perf_counter()
        if now >= end:
            return (now - t0) / n_docs * 1e6


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", default=",".join(DEFAULT_SHAPES),
                   help="benchmarks/matrix.py shape names, comma-separated")
    p.add_argument("--batch", default=DEFAULT_BATCHES, help="rows per call, comma-separated")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds (median, best)")
    p.add_argument("--seconds", type=float, default=0.2, help="seconds per engine per round")
    args = p.parse_args(argv)
    batches = [int(b) for b in args.batch.split(",")]
    print(f"# small calls, 1 thread: entry (default predict) against the general path of "
          f"the same kernel; median of {args.rounds} interleaved rounds (best in brackets), "
          f"us/doc; {C.machine()}")
    print("| model | rows | kernel | entry | general path | general / entry |")
    print("| --- | ---: | --- | ---: | ---: | ---: |")
    for shape in args.shapes.split(","):
        wl = M.workload(shape, 10_000)
        model, general = _models(wl)
        X = wl.X
        for b in batches:
            sets = [np.ascontiguousarray(X[i * b:(i + 1) * b]) for i in range(min(64, len(X) // b))]
            for rows in sets[:4]:
                a, g = model.predict(rows), general.predict(rows)
                if not np.array_equal(a, g):
                    raise SystemExit(f"{shape}, {b} rows: the entry and the general path "
                                     f"disagree (max |diff| {np.abs(a - g).max():.3g})")
            times = {"entry": [], "general": []}
            for _ in range(args.rounds):
                times["entry"].append(_time(model.predict, sets, args.seconds))
                times["general"].append(_time(general.predict, sets, args.seconds))
            e, g = statistics.median(times["entry"]), statistics.median(times["general"])
            print(f"| {shape} | {b} | {model._small_kernels[b] if b < 64 else '-'} | "
                  f"{e:.2f} ({min(times['entry']):.2f}) | {g:.2f} ({min(times['general']):.2f}) "
                  f"| {g / e:.2f}x |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
