"""The default ``predict`` of two builds of this library, timed in turn in fresh processes on the
same model and rows: what a kernel change did, with the machine's drift spread over both.

    git worktree add /tmp/before <rev> && (cd /tmp/before && python setup.py build_ext --inplace)
    python -m benchmarks.experiments.builds_ab --before /tmp/before \
        --shapes xgb-depth9-uniform-1000 --rows 100,10000 --rounds 4

Each round runs the before build, then this checkout, each in its own process (``PYTHONPATH``
set to the build's root) that times ``predict`` for about ``--seconds`` a try, five tries,
and keeps its best; the table gives each build's least over the rounds, us/doc, and the
change. The models come from ``benchmarks/cache`` (``matrix.py``'s shape names).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

CHILD = r"""
import time
import numpy as np
import quickscorer as qs
from benchmarks import matrix
wl = matrix.workload({shape!r}, max({rows}, 2000))
model = qs.load(str(wl.lgb_path or wl.xgb_path))
X = np.ascontiguousarray(wl.X[:{rows}])
model.predict(X)
best = float("inf")
for _ in range(5):
    n, t0 = 0, time.perf_counter()
    while True:
        model.predict(X)
        n += 1
        elapsed = time.perf_counter() - t0
        if elapsed > {seconds}:
            break
    best = min(best, elapsed / n / {rows} * 1e6)
print(best)
"""


def one_run(root: Path, shape: str, rows: int, seconds: float) -> float:
    # that build's quickscorer first, this checkout's benchmarks package after it
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((str(root), str(ROOT))), OMP_NUM_THREADS="1",
               QUICKSCORER_BENCH_CACHE=os.environ.get("QUICKSCORER_BENCH_CACHE",
                                                      str(ROOT / "benchmarks" / "cache")))
    code = CHILD.format(shape=shape, rows=rows, seconds=seconds)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd="/")
    if out.returncode != 0:
        raise SystemExit(f"{root} on {shape}: {out.stderr[-600:]}")
    return float(out.stdout.strip())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--before", required=True, help="root of the other build (built in place)")
    p.add_argument("--shapes", required=True, help="matrix.py shape names, comma-separated")
    p.add_argument("--rows", default="100,10000", help="rows per call, comma-separated")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--seconds", type=float, default=0.4)
    args = p.parse_args(argv)
    from quickscorer.bench import machine
    print(f"# two builds, default predict, 1 thread, least of {args.rounds} rounds, us/doc; "
          f"{machine()}")
    print("| model | rows | before | after | change |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for shape in args.shapes.split(","):
        for rows in (int(r) for r in args.rows.split(",")):
            before, after = [], []
            for _ in range(args.rounds):
                before.append(one_run(Path(args.before), shape, rows, args.seconds))
                after.append(one_run(ROOT, shape, rows, args.seconds))
            b, a = min(before), min(after)
            print(f"| {shape} | {rows:,} | {b:.3f} | {a:.3f} | {100 * (a / b - 1):+.1f}% |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
