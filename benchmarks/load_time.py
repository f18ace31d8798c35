"""Time to load a model, ours against the training library's own load of the same file.

    python -m benchmarks.load_time                       # 100 / 1,000 / 20,000 trees, both
    python -m benchmarks.load_time --trees 1000 --repeat 7 --libraries xgboost

In one process, interleaved, ``--repeat`` rounds: ``quickscorer.load(path)`` (read and
validate; layouts are built on first use), the same with ``prepare=("rapidscorer",)`` (what a
first call of 12 rows or more needs) and ``prepare=("auto",)`` (every layout the default
``predict`` may pick), and ``lightgbm.Booster(model_file=...)`` / ``xgboost.Booster(
model_file=...)``. Seconds, minimum / median, and the ratio of our minimum to the library's.

Models: full 64-leaf LightGBM regression trees (``workloads.full``) and XGBoost depth-6 trees
(``workloads.xgb_depth6``), 1,000 trees trained once; 100 trees are the first 100, 20,000 the
1,000 repeated 20 times (valid models both libraries load; timing does not depend on the
values).
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from benchmarks.workloads import prefix, repeated, xgb_variant
from quickscorer.bench import interleaved

HERE = Path(__file__).resolve().parent



def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trees", default="100,1000,20000")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--libraries", default="lightgbm,xgboost")
    args = p.parse_args(argv)
    import quickscorer
    from benchmarks import workloads as W
    from quickscorer.bench import machine

    print(machine())
    print("| model | library | `load` | + rapidscorer | + every default layout | library's "
          "load | ours / library (load, + default layouts) |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for lib in args.libraries.split(","):
        if lib == "lightgbm":
            import lightgbm
            base = Path(W.full(1000, 64).lgb_path)
            def variant(n, d, base=base):
                return prefix(base, n, d) if n < 1000 else repeated(base, n // 1000, d)

            def native(path):
                return lightgbm.Booster(model_file=str(path))
            shape, ext = "x 64 leaves", ".txt"
        else:
            import xgboost
            base = Path(W.xgb_depth6(1000).xgb_path)
            def variant(n, d, base=base):
                return xgb_variant(base, n, d)

            def native(path):
                return xgboost.Booster(model_file=str(path))
            shape, ext = "depth 6", ".json"
        for n in [int(v) for v in args.trees.split(",")]:
            path = base if n == 1000 else variant(n, base.parent / f"load_{lib}_{n}{ext}")
            runs = {"load": lambda: quickscorer.load(path),
                    "rs": lambda: quickscorer.load(path, prepare=("rapidscorer",)),
                    "auto": lambda: quickscorer.load(path, prepare=("auto",)),
                    "native": lambda: native(path)}
            reps = max(2, args.repeat if n <= 1000 else args.repeat // 2)
            def once(fn):
                def run() -> None:              # one load a round: the sample is its time
                    fn()
                return run

            times = {k: t.samples for k, t in zip(runs, interleaved(
                [once(fn) for fn in runs.values()], reps, warmup=False))}
            cell = {k: f"{min(v):.3f} / {statistics.median(v):.3f}" for k, v in times.items()}
            best = {k: min(v) for k, v in times.items()}
            print(f"| {n} {shape} | {lib} | {cell['load']} | {cell['rs']} | {cell['auto']} | "
                  f"{cell['native']} | {best['load'] / best['native']:.2f}x, "
                  f"{best['auto'] / best['native']:.2f}x |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
