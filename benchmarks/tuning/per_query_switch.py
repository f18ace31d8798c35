"""Where the default hands calls from the few-rows walk to RapidScorer, swept on a ranking
service's traffic: a call per query, the queries sized as the shared ranking data's (1 to 27
documents, mean 15), one thread.

    python -m benchmarks.tuning.per_query_switch
    python -m benchmarks.tuning.per_query_switch --shapes full-uniform-1000x255 --values 2.9,5
    python -m benchmarks.tuning.per_query_switch --constant rs_after_walk_min_rows --values 9,7,5

Each value of ``Tuning.walk_rs_nodes_per_step`` (or of the ``--constant`` named) prepares
the model once (RapidScorer runs from the model's nodes over that value times a row's steps
through the walk, at least ``rs_after_walk_min_rows``); the prepared models and
``rapidscorer`` forced on every call score the same per-query calls, timed interleaved over
``--repeat`` rounds; prints the median and the best round in microseconds per document, and
each value's first RapidScorer call size.

Calls of one size alone (``small_calls.py``) do not show what a mix of sizes costs: a call
that runs the other kernel than the call before finds its layout pushed out of the caches by
it, so every switch between the two costs both.
"""
from __future__ import annotations

import argparse
import statistics
import sys

import numpy as np

from benchmarks import compare as C
from benchmarks import matrix as M
from benchmarks import workloads as W
from quickscorer.bench import interleaved, per_document


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", default="full-uniform-1000x255,xgb-depth9-uniform-1000,"
                                       "xgb-depth8-uniform-1000,full-uniform-1000x64")
    p.add_argument("--constant", default="walk_rs_nodes_per_step",
                   choices=["walk_rs_nodes_per_step", "rs_after_walk_min_rows"])
    p.add_argument("--values", default="2.9,5", help="the constant's values")
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--min-rows", type=int, default=5000, help="documents a round")
    args = p.parse_args(argv)

    import quickscorer
    from quickscorer.algorithms import autoselect as A

    kind = float if args.constant == "walk_rs_nodes_per_step" else int
    values = [kind(v) for v in args.values.split(",")]
    base = quickscorer.current_tuning()
    print(f"# per-query calls, 1 thread, us/doc by {args.constant}: median of {args.repeat} "
          f"interleaved rounds (best); {C.machine()}")
    print("| model | " + " | ".join(f"{v:g} (RapidScorer from)" for v in values)
          + " | rapidscorer forced |")
    print("| --- |" + " ---: |" * (len(values) + 1))
    for shape in args.shapes.split(","):
        wl = M.workload(shape, 10_000)
        slices = W.query_slices(wl.X, W.query_sizes(), args.min_rows)
        models, starts = [], []
        for v in values:
            t = base.replace(**{args.constant: v})
            m = quickscorer.load(wl.lgb_path, tuning=t)
            m.predict(slices[0])             # the layouts built
            models.append(m)
            starts.append(A.rs_min_rows(m.ensemble, "walk", t=t))
        want = models[0].predict(slices[1])
        for m in models[1:]:
            np.testing.assert_array_equal(m.predict(slices[1]), want)
        fns = [per_document(m.predict, slices) for m in models]
        fns.append(per_document(lambda s: models[0].predict(s, algorithm="rapidscorer"),
                                slices))
        t = interleaved(fns, args.repeat)
        cells = [f"{statistics.median(x.samples) * 1e6:.2f} ({min(x.samples) * 1e6:.2f})"
                 for x in t]
        print(f"| {shape} | " + " | ".join(f"{c} ({s})" for c, s in zip(cells, starts))
              + f" | {cells[-1]} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
