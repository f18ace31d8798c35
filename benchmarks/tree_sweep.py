"""Time per document against the number of trees, on prefixes of one model: does the cost
grow linearly?

    python benchmarks/tree_sweep.py                        # full-uniform 20,000 x 64
    python benchmarks/tree_sweep.py --trees 1000,5000,20000 --rows 4000 --repeat 5

The model of the largest tree count is trained once (``workloads.full``); each smaller count
is its first trees (what a shorter training makes: boosting is sequential and seeded), built
in process. This library's default ``predict`` and LightGBM (``num_iteration=n``) are timed
interleaved, one thread, and the table gives microseconds per document (minimum and median
of the runs) and the growth from the smallest count.
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
import workloads as W  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trees", default="1000,5000,20000")
    p.add_argument("--leaves", type=int, default=64)
    p.add_argument("--data", default="uniform", choices=W.DATA_KINDS)
    p.add_argument("--rows", type=int, default=4000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--no-lightgbm", action="store_true")
    args = p.parse_args(argv)
    import lightgbm as lgb
    import quickscorer
    from quickscorer.ir import Ensemble

    counts = sorted(int(t) for t in args.trees.split(","))
    wl = W.full(counts[-1], args.leaves, args.data, n_rows=args.rows)
    full = quickscorer.load_ensemble(wl.lgb_path)
    booster = None if args.no_lightgbm else lgb.Booster(model_file=str(wl.lgb_path))
    models = {}
    for n in counts:
        ens = Ensemble(trees=full.trees[:n], tree_group=full.tree_group[:n],
                       n_outputs=full.n_outputs, n_features=full.n_features,
                       family=full.family, base_score=full.base_score,
                       transform=full.transform, transform_params=full.transform_params,
                       source=full.source)
        models[n] = quickscorer.Model(ens)
    X = wl.X[:args.rows]
    times: dict[tuple[str, int], list[float]] = {}
    for _ in range(args.repeat):
        for n, model in models.items():
            t0 = time.perf_counter()
            model.predict(X, raw_score=True)
            times.setdefault(("quickscorer", n), []).append(
                (time.perf_counter() - t0) / X.shape[0] * 1e6)
            if booster is not None:
                t0 = time.perf_counter()
                booster.predict(X, raw_score=True, num_iteration=n, num_threads=1)
                times.setdefault(("lightgbm", n), []).append(
                    (time.perf_counter() - t0) / X.shape[0] * 1e6)
    print(f"{wl.name} prefixes, {args.rows} rows, 1 thread, {args.repeat} interleaved runs; "
          f"{C.machine()}")
    print("| engine | trees | us/doc (min) | us/doc (median) | per tree (ns) | growth vs "
          f"{counts[0]} trees |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for engine in ("quickscorer", "lightgbm"):
        if (engine, counts[0]) not in times:
            continue
        base = min(times[engine, counts[0]])
        for n in counts:
            v = times[engine, n]
            print(f"| {engine} | {n} | {min(v):.2f} | {statistics.median(v):.2f} | "
                  f"{min(v) / n * 1e3:.2f} | {min(v) / base:.1f}x for {n / counts[0]:.0f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
