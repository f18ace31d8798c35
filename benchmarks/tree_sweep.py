"""Time per document against the number of trees, on prefixes of one model: does the cost
grow linearly?

    python -m benchmarks.tree_sweep                        # full-uniform 20,000 x 64
    python -m benchmarks.tree_sweep --trees 1000,5000,20000 --rows 4000 --repeat 5
    python -m benchmarks.tree_sweep --trees 1000,20000 --slices --no-lightgbm

The model of the largest tree count is trained once (``workloads.full``); each smaller count
is its first trees (what a shorter training makes: boosting is sequential and seeded), built
in process. This library's default ``predict`` and LightGBM (``num_iteration=n``) are timed
interleaved, one thread, and the table gives microseconds per document (minimum and median
of the runs) and the growth from the smallest count.

A prefix of more trees holds later trees, which need not cost what the first ones do, so the
growth mixes the scorer's scaling with the trees'. ``--slices`` separates the two: the largest
model is also scored as consecutive slices of the smallest count (trees 0 to n - 1, n to
2 n - 1, ...), one model each, called one after the other in the same rounds; the whole
model taking what its slices take together means its cost is linear in its trees.
"""
from __future__ import annotations

import argparse
import statistics

from benchmarks import compare as C
from benchmarks import workloads as W
from quickscorer.bench import interleaved


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trees", default="1000,5000,20000")
    p.add_argument("--leaves", type=int, default=64)
    p.add_argument("--data", default="uniform", choices=W.DATA_KINDS)
    p.add_argument("--rows", type=int, default=4000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--no-lightgbm", action="store_true")
    p.add_argument("--slices", action="store_true",
                   help="also time the largest model as slices of the smallest count of trees")
    args = p.parse_args(argv)
    import lightgbm as lgb

    import quickscorer
    from quickscorer.ir import Ensemble

    counts = sorted(int(t) for t in args.trees.split(","))
    wl = W.full(counts[-1], args.leaves, args.data, n_rows=args.rows)
    full = quickscorer.load_ensemble(wl.lgb_path)
    booster = None if args.no_lightgbm else lgb.Booster(model_file=str(wl.lgb_path))

    def trees(a: int, b: int):
        """A model of trees a .. b - 1 of the largest one."""
        return quickscorer.Model(Ensemble(
            trees=full.trees[a:b], tree_group=full.tree_group[a:b], n_outputs=full.n_outputs,
            n_features=full.n_features, family=full.family, base_score=full.base_score,
            transform=full.transform, transform_params=full.transform_params,
            source=full.source))

    models = {n: trees(0, n) for n in counts}
    step = counts[0]
    slices = ([trees(a, min(a + step, counts[-1])) for a in range(0, counts[-1], step)]
              if args.slices else [])
    X = wl.X[:args.rows]
    calls: dict[tuple[str, int], object] = {}

    def docs(fn):
        def run() -> int:
            fn()
            return X.shape[0]
        return run

    for n, model in models.items():
        calls["quickscorer", n] = docs(lambda m=model: m.predict(X, raw_score=True))
        if booster is not None:
            calls["lightgbm", n] = docs(lambda n=n: booster.predict(
                X, raw_score=True, num_iteration=n, num_threads=1))
    if slices:
        calls["slices", counts[-1]] = docs(
            lambda: [model.predict(X, raw_score=True) for model in slices])
    times = {k: [v * 1e6 for v in t.samples]
             for k, t in zip(calls, interleaved(list(calls.values()), args.repeat,
                                                warmup=False))}
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
    if slices:
        v = times["slices", counts[-1]]
        whole = times["quickscorer", counts[-1]]
        print(f"\nquickscorer, the {counts[-1]}-tree model as {len(slices)} models of {step} "
              f"trees called one after the other: {min(v):.2f} us/doc (min), "
              f"{statistics.median(v):.2f} (median); the whole model "
              f"{min(whole):.2f} / {statistics.median(whole):.2f}: whole / slices "
              f"{min(whole) / min(v):.3f} (min), "
              f"{statistics.median(whole) / statistics.median(v):.3f} (median)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
