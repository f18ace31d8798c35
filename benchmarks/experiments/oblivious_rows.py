"""Calls of a few rows on the ``oblivious`` kernel: each row scored on its own (its ranks by
search, then 8 trees' leaves a register and their values added in order) against a group of
32 lanes holding the call's rows, and the one-row ``walk``, on CatBoost models; interleaved,
one thread, the low-latency entry as ``predict`` calls it. Scores are checked equal first.

    python -m benchmarks.experiments.oblivious_rows
    python -m benchmarks.experiments.oblivious_rows --shapes cb-d6-uniform-1000 --rows 1,2,3

The ``oblivious`` layout's ``row_call_max`` picks the path: calls of at most that many rows
go row by row (the library's ``ROW_CALL_MAX``).
"""
from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import numpy as np

from benchmarks import matrix
from quickscorer.algorithms.oblivious import Oblivious
from quickscorer.bench import interleaved, machine

HERE = Path(__file__).resolve().parent



def main(argv=None) -> int:
    import quickscorer
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", default="cb-d6-uniform-1000,cb-d8-heavy-300,cb-d6-uniform-500-mc3")
    p.add_argument("--rows", default="1,2,3,4,6,8", help="rows a call, comma-separated")
    p.add_argument("--calls", type=int, default=300, help="calls a round")
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args(argv)
    print(machine())
    print("| model | rows a call | row by row | a group | walk | row by row vs a group |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for shape in args.shapes.split(","):
        wl = matrix.workload(shape, 4_000)
        model = quickscorer.load(wl.lgb_path)
        one = Oblivious(model.ensemble, model.plan.forest)
        one.layout.row_call_max = 1 << 30
        group = Oblivious(model.ensemble, model.plan.forest)
        group.layout.row_call_max = 0
        X = np.ascontiguousarray(wl.X)
        for n in (int(k) for k in args.rows.split(",")):
            calls = [X[i * n:(i + 1) * n] for i in range(args.calls)]
            want = model.predict_raw(np.concatenate(calls), algorithm="traversal")
            for alg in (one, group):
                got = np.concatenate([np.atleast_2d(alg.predict_small(c, False).reshape(n, -1))
                                      for c in calls])
                if not np.array_equal(got.reshape(want.shape), want):
                    raise SystemExit(f"{shape}, {n} rows: scores differ from the traversal")

            def timed(fn):
                def run():
                    for c in calls:
                        fn(c)
                    return len(calls) * n
                return run
            t = interleaved([timed(lambda c: one.predict_small(c, False)),
                             timed(lambda c: group.predict_small(c, False)),
                             timed(lambda c: model.predict(c, raw_score=True, algorithm="walk"))],
                            args.rounds)
            us = [statistics.median(x.samples) * 1e6 for x in t]
            print(f"| {wl.name} | {n} | {us[0]:.2f} | {us[1]:.2f} | {us[2]:.2f} | "
                  f"{us[1] / us[0]:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
