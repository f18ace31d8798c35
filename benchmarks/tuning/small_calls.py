"""Calls of a few rows: the kernels' low-latency entries against the general path, same model,
same kernel, same rows, interleaved in one process.

    python -m benchmarks.tuning.small_calls                       # the default shapes and batches
    python -m benchmarks.tuning.small_calls --shapes ltr-1000x64 --batch 4,10,32 --rounds 7
    python -m benchmarks.tuning.small_calls --batch 2,3,4 --kernels quickscorer,walk,vqs

Every call of fewer than ``PARALLEL_MIN_ROWS`` rows (64) with the automatic choice runs the
low-latency entry of the kernel chosen for that many rows (``Algorithm.predict_small``: the
arguments read through numpy's C API, no typed memoryviews, no OpenMP region). The general
path is the same model through a ``Model`` whose ``_small`` declines every call, so the same
kernel runs through ``predict_raw``'s argument handling and the kernel's memoryview entry:
what calls of 4 to 63 rows took before ``vqs`` and ``rapidscorer`` had entries (calls of 1 to
3 rows took the one-row kernels' entry already). Both are timed
on the same batches of distinct rows (a batch ``b`` is rows ``i*b .. (i+1)*b - 1``, ``i``
cycling), in rounds that alternate the two, and their scores are checked equal.
``--kernels`` adds named kernels through their entries (``predict(X, algorithm=name)``) to
the rounds, which is how the row counts where the automatic choice switches kernels are
checked (``Tuning.vqs_min_rows``, ``rs_min_rows``).

``--amid N`` times each call right after an untimed default call of N other rows of the same
model, as a service's calls of many sizes come: a kernel whose layout the calls between had
pushed out of the caches pays to read it again (with ``--amid 24`` on 1,000 trees of 255
leaves, the walk of 10 rows took 40 us/doc against 26 alone).
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
import time

import numpy as np

from benchmarks import compare as C
from benchmarks import matrix as M
from benchmarks import workloads as W
from quickscorer.bench import Measured, interleaved

DEFAULT_SHAPES = ("full-uniform-1000x31", "full-uniform-1000x64", "full-uniform-1000x255",
                  "full-heavy-1000x31", "ltr-1000x64", "xgb-depth6-uniform-1000")
DEFAULT_BATCHES = "1,2,4,8,9,16,32,63"


def general_path(model):
    """A copy of the model whose calls all take the general path (no low-latency entry)."""
    import quickscorer

    copy = quickscorer.Model(model.ensemble)
    copy.plan.small_call = lambda X, squeeze, algorithm, n_threads: None
    return copy


def _load(shape: str):
    """A model of the shape and its rows: a benchmarks/matrix.py shape, or
    ``ydf-<data>-d<max_depth>``, YDF's own model of 1,000 trees (benchmarks/ydf_reference.py)
    on float32 rows."""
    import quickscorer

    m = re.fullmatch(r"ydf-([a-z]+)-d(\d+)", shape)
    if m:
        from benchmarks import ydf_reference as Y
        model = quickscorer.load(Y.as_xgboost_json(Y.train_ydf(m.group(1), 1000,
                                                               int(m.group(2)))))
        X = np.ascontiguousarray(W.matrix_rows(m.group(1), 10_000, seed=13), np.float32)
    else:
        wl = M.workload(shape, 10_000)
        model, X = quickscorer.load(wl.lgb_path), wl.X
    return model, general_path(model), X


def _for_seconds(fn, batches, seconds: float, amid=None):
    """A round for ``interleaved``: fn over the batches in turn for about ``seconds``; the
    documents scored. ``amid``: (call, row sets), an untimed call before each timed one, whose
    round then returns the seconds a document of the timed calls alone."""
    def run() -> int:
        n_docs = 0
        end = time.perf_counter() + seconds
        while True:
            for b in batches:
                fn(b)
                n_docs += b.shape[0]
            if time.perf_counter() >= end:
                return n_docs

    def run_amid() -> Measured:
        call, other = amid
        n_docs, spent, k = 0, 0.0, 0
        end = time.perf_counter() + seconds
        while True:
            for b in batches:
                call(other[k % len(other)])
                k += 1
                t0 = time.perf_counter()
                fn(b)
                spent += time.perf_counter() - t0
                n_docs += b.shape[0]
            if time.perf_counter() >= end:
                return Measured(spent / n_docs)
    return run if amid is None else run_amid


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", default=",".join(DEFAULT_SHAPES),
                   help="benchmarks/matrix.py shape names or ydf-<data>-d<max_depth> (YDF's "
                        "model, needs ydf), comma-separated")
    p.add_argument("--batch", default=DEFAULT_BATCHES, help="rows per call, comma-separated")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds (median, best)")
    p.add_argument("--seconds", type=float, default=0.2, help="seconds per engine per round")
    p.add_argument("--kernels", default="",
                   help="named kernels to time through their entries too, comma-separated")
    p.add_argument("--amid", type=int, default=0,
                   help="before each timed call, an untimed default call of this many other "
                        "rows (0: none)")
    args = p.parse_args(argv)
    batches = [int(b) for b in args.batch.split(",")]
    kernels = [k for k in args.kernels.split(",") if k]
    print(f"# small calls, 1 thread: entry (default predict) against the general path of "
          f"the same kernel; median of {args.rounds} interleaved rounds (best in brackets), "
          f"us/doc; {C.machine()}"
          + (f"; each call after an untimed default call of {args.amid} other rows"
             if args.amid else ""))
    print("| model | rows | kernel | entry | general path | general / entry |"
          + "".join(f" {k} (entry) |" for k in kernels))
    print("| --- | ---: | --- | ---: | ---: | ---: |" + " ---: |" * len(kernels))
    for shape in args.shapes.split(","):
        model, general, X = _load(shape)
        for b in batches:
            sets = [np.ascontiguousarray(X[i * b:(i + 1) * b])
                    for i in range(min(64, len(X) // b))]
            for rows in sets[:4]:
                a, g = model.predict(rows), general.predict(rows)
                if not np.array_equal(a, g):
                    raise SystemExit(f"{shape}, {b} rows: the entry and the general path "
                                     f"disagree (max |diff| {np.abs(a - g).max():.3g})")
            calls = {"entry": model.predict, "general": general.predict}
            for k in kernels:
                if k in model.supported_algorithms():
                    calls[k] = lambda rows, k=k: model.predict(rows, algorithm=k)
                    if not np.array_equal(calls[k](sets[0]), model.predict(sets[0])):
                        raise SystemExit(f"{shape}, {b} rows: {k} disagrees with the default")
            amid = None
            if args.amid:
                half = X.shape[0] // 2   # rows of their own: the second half of X
                amid = (model.predict, [np.ascontiguousarray(X[half + i * args.amid:][:args.amid])
                                        for i in range(max(1, min(64, half // args.amid)))])
            timings = interleaved([_for_seconds(fn, sets, args.seconds, amid)
                                   for fn in calls.values()], args.rounds, warmup=False)
            times = {name: [v * 1e6 for v in t.samples] for name, t in zip(calls, timings)}
            med = {name: statistics.median(v) for name, v in times.items()}
            cell = {name: f"{med[name]:.2f} ({min(times[name]):.2f})" for name in times}
            e, g = med["entry"], med["general"]
            print(f"| {shape} | {b} | {model.plan.small_kernels[b] if b < 64 else '-'} | "
                  f"{cell['entry']} | {cell['general']} | {g / e:.2f}x |"
                  + "".join(f" {cell.get(k, '-')} |" for k in kernels), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
