"""Intel oneDAL's one-thread speed before and after its thread count is raised: wall and process
CPU time of 10,000-row calls of oneDAL (``daal4py``) with its thread count set to 1, then 16,
then 1 again, in one process on one model, beside this library's default ``predict`` on one
thread.

    python -m benchmarks.experiments.onedal_threads
    python -m benchmarks.experiments.onedal_threads --shape full-uniform-1000x255 --threads 1,16,1

Process CPU time over wall time is the cores a call kept busy: 1.00 is one thread. On the
AVX-512 Xeon (benchmarks/reports/xeon-emerald-rapids-avx512.md) oneDAL's
one-thread calls took twice as long after its count had been 16 as before, one core busy in
both; the speed matrix sets each process's count once, so its oneDAL rows read either.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from benchmarks import engines as E
from benchmarks import matrix as M


def timed(engine, X, calls: int) -> tuple[float, float]:
    """Wall and process CPU microseconds per document over ``calls`` calls, after one."""
    engine.predict(X)
    w0, c0 = time.perf_counter(), time.process_time()
    for _ in range(calls):
        engine.predict(X)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    n = calls * X.shape[0]
    return wall * 1e6 / n, cpu * 1e6 / n


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shape", default="xgb-depth8-uniform-1000",
                   help="a benchmarks/matrix.py shape of a LightGBM or XGBoost model")
    p.add_argument("--rows", type=int, default=10_000)
    p.add_argument("--threads", default="1,16,1", help="oneDAL's thread counts, in turn")
    p.add_argument("--calls", type=int, default=3)
    args = p.parse_args(argv)
    wl = M.workload(args.shape, args.rows)
    X = np.ascontiguousarray(wl.X[:args.rows])
    source = "xgboost" if wl.lgb_path.suffix == ".json" else "lightgbm"
    ours = E.QuickScorer(wl.lgb_path, 1, None, np.float64, source)
    print(f"{wl.name}, {X.shape[0]} rows a call, {args.calls} calls after one")
    print("| oneDAL threads | engine | wall us/doc | CPU us/doc | CPU / wall |")
    print("| ---: | --- | ---: | ---: | ---: |")
    for n in (int(t) for t in args.threads.split(",")):
        for engine in (E.OneDAL(wl.lgb_path, n), ours):
            wall, cpu = timed(engine, X, args.calls)
            print(f"| {n} | {engine.name} | {wall:.2f} | {cpu:.2f} | {cpu / wall:.2f} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
