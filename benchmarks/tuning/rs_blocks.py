"""RapidScorer's tree-block size, swept on the matrix's models.

    python -m benchmarks.tuning.rs_blocks
    python -m benchmarks.tuning.rs_blocks --sizes 32,64,96,128,256 --rows 100,10000 --repeat 7

For each model (``--models``: the shapes of ``benchmarks/matrix.py``, built by its
``workload``), one ``RapidScorer`` per block size (KiB of bitvector byte rows per tree block
and group, ``block_bytes``), each called directly (``predict_raw``, one thread) on the same
10,000 rows in calls of ``--rows``; the sizes are timed interleaved, ``--repeat`` rounds.
Prints each size's fastest round in microseconds per document (the minimum: this project's
VMs stall whole rounds) and, per row, its time over the fastest size's; the last line gives
each size's worst ratio over all rows (what the default is chosen by: the size whose worst
case is best).
"""
from __future__ import annotations

import argparse
import platform
import sys

import numpy as np

from benchmarks import matrix as M
from quickscorer.bench import interleaved


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", help="shapes, named as in benchmarks/matrix.py",
                   default="full-uniform-1000x8,full-uniform-1000x31,full-uniform-1000x64,"
                           "full-uniform-1000x255,ltr-1000x64,xgb-depth6-uniform-1000")
    p.add_argument("--sizes", default="32,64,96,128,192,256", help="KiB per block")
    p.add_argument("--rows", default="100,10000", help="rows per call")
    p.add_argument("--repeat", type=int, default=9)
    args = p.parse_args(argv)

    import quickscorer
    from quickscorer.algorithms.rapidscorer.rapidscorer import RapidScorer

    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"machine: {platform.machine()}, Python {platform.python_version()}; minimum us/doc "
          f"of {args.repeat} interleaved rounds (ratio to the fastest size of the row)")
    print("| model | rows per call | " + " | ".join(f"{s} KiB" for s in sizes) + " |")
    print("| --- | ---: |" + " ---: |" * len(sizes))
    worst = {s: 1.0 for s in sizes}
    for spec in args.models.split(","):
        wl = M.workload(spec, 10_000)
        model = quickscorer.load(wl.lgb_path)
        xgb = model.ensemble.family == "xgboost"
        X = wl.X.astype(np.float32) if xgb else wl.X
        algs = [RapidScorer(model.ensemble, model.plan.forest, block_bytes=s << 10) for s in sizes]
        for rows in (int(r) for r in args.rows.split(",")):
            n = (X.shape[0] // rows) * rows
            out64 = np.zeros((0, 0)) if xgb else np.zeros((rows, 1))
            out32 = np.zeros((rows, 1), np.float32) if xgb else np.zeros((0, 0), np.float32)
            def calls(alg):
                def run() -> int:
                    for i in range(0, n, rows):
                        alg.predict_raw(X[i:i + rows], out64, out32, 1)
                    return n
                return run

            med = [t.median * 1e6 for t in interleaved([calls(a) for a in algs], args.repeat)]
            best = min(med)
            for s, m in zip(sizes, med):
                worst[s] = max(worst[s], m / best)
            print(f"| {wl.name} | {rows} | "
                  + " | ".join(f"{m:.2f} ({m / best:.2f}x, {a.tree_blocks} blocks)"
                               for m, a in zip(med, algs)) + " |", flush=True)
    print("| worst ratio | | " + " | ".join(f"{worst[s]:.2f}x" for s in sizes) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
