"""One-row calls of the one-row kernels, interleaved in one process: ``quickscorer`` (the
QuickScorer scan) against ``walk`` (eight interleaved root-to-leaf walks), each through
``Model.predict_raw(row, algorithm=...)`` (the low-latency entry), and the default
``predict_raw(row)``, which runs the one the model's node counts pick
(``model.info()["one_row_algorithm"]``, printed as "picks").

    python -m benchmarks.tuning.one_row                       # the nine shapes of the matrix
    python -m benchmarks.tuning.one_row --shapes full-uniform-1000x64 --rounds 15

Prints the minimum over rounds of the mean time of a call, per shape and kernel, and the
ratio (above 1: the walk is faster). Every row's scores are first checked equal to the
reference traversal's, the default's included.
"""
from __future__ import annotations

import argparse

import numpy as np

from benchmarks.matrix import workload
from quickscorer.bench import interleaved

SHAPES = ("full-uniform-1000x8,full-uniform-1000x31,full-uniform-1000x64,full-uniform-1000x255,"
          "full-heavy-1000x31,full-heavy-1000x64,xgb-depth6-uniform-1000,xgb-depth6-heavy-1000,"
          "xgb-depth8-uniform-1000,"
          "ltr-1000x64")
KERNELS = ("quickscorer", "walk", None)    # None: the default


def main() -> int:
    import quickscorer
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--rows", type=int, default=300, help="one-row calls per round")
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    for shape in args.shapes.split(","):
        wl = workload(shape, max(args.rows, 1))
        model = quickscorer.load(wl.lgb_path)
        X = np.ascontiguousarray(wl.X[:args.rows])
        rows = [X[i:i + 1] for i in range(X.shape[0])]
        want = model.predict_raw(X, algorithm="traversal")
        for name in KERNELS:
            got = np.concatenate([model.predict_raw(r, algorithm=name) for r in rows])
            if not np.array_equal(got, want):
                raise SystemExit(f"{shape}: {name} differs from the reference")
        def calls(name):
            def run() -> int:
                for r in rows:
                    model.predict_raw(r, algorithm=name)
                return len(rows)
            return run

        timings = interleaved([calls(name) for name in KERNELS], args.rounds, warmup=False)
        best = {name: t.minimum * 1e6 for name, t in zip(KERNELS, timings)}
        print(f"{shape:26s} quickscorer {best['quickscorer']:8.2f}  walk {best['walk']:8.2f}  "
              f"default {best[None]:8.2f} us/call  quickscorer/walk "
              f"{best['quickscorer'] / best['walk']:.2f}  picks "
              f"{model.info()['one_row_algorithm']}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
