"""V-QuickScorer's variants side by side: instruction set, documents per scan, tree blocks,
equal-threshold merging, on one model and one set of rows.

Each variant is a ``quickscorer.algorithms.qs.vqs.VQuickScorer`` built with the given keywords,
timed at each
``--threads`` count; the timed runs are interleaved (run 1 of every variant, then run 2, ...)
and every variant's scores are checked against the first's. Prints min and median
microseconds per document.

Examples::

    python -m benchmarks.tuning.vqs_variants                       # the default set, ltr 1000 x 64
    python -m benchmarks.tuning.vqs_variants --trees 5000 isa=avx2,lanes=16 isa=avx2,lanes=8
    python -m benchmarks.tuning.vqs_variants --workload sweep --trees 1000,20000 lanes=32
    python -m benchmarks.tuning.vqs_variants --workload sweep --trees 20000 --slices 0,10000,19000
    python -m benchmarks.tuning.vqs_variants isa=avx512,lanes=32,block_trees=500,doc_groups=4

Keywords: isa (scalar, avx2, avx512), lanes (8, 16, 32), merge (0, 1), block_bytes,
block_trees, doc_groups.
"""
from __future__ import annotations

import argparse

import numpy as np

from benchmarks import workloads as W
from quickscorer.bench import interleaved

DEFAULT = ["lanes=32", "lanes=16", "lanes=8", "lanes=32,merge=1",
           "lanes=32,block_bytes=1000000000", "lanes=8,block_bytes=1000000000"]


def parse(spec: str) -> dict:
    kw = {}
    for item in spec.split(","):
        key, _, value = item.partition("=")
        kw[key] = value if key == "isa" else int(value)
    return kw


def slice_of(ens, start: int, n: int):
    """Trees ``start .. start + n - 1`` of ``ens`` as an ensemble of their own."""
    from quickscorer.ir import Ensemble
    if not 0 <= start < ens.n_trees:
        raise SystemExit(f"slice start {start} outside the model's {ens.n_trees} trees")
    end = min(ens.n_trees, start + n)
    return Ensemble(trees=ens.trees[start:end], tree_group=ens.tree_group[start:end],
                    n_outputs=ens.n_outputs, n_features=ens.n_features, family=ens.family,
                    base_score=ens.base_score)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("variants", nargs="*", help="comma-separated keywords, one variant each")
    p.add_argument("--workload", default="ltr", choices=["ltr", "sweep"])
    p.add_argument("--trees", default="1000",
                   help="comma-separated: several models, timed interleaved with each other")
    p.add_argument("--slices", default="",
                   help="with one --trees model: time its trees [s, s + --slice-trees) for "
                        "each comma-separated start s instead of the whole model")
    p.add_argument("--slice-trees", type=int, default=1000)
    p.add_argument("--threads", default="1", help="comma-separated thread counts to time")
    p.add_argument("--leaves", type=int, default=64)
    p.add_argument("--rows", type=int, default=10_000)
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args(argv)

    import quickscorer
    from quickscorer.algorithms.cpu import available_isas
    from quickscorer.algorithms.qs.vqs import VQuickScorer
    specs = args.variants or DEFAULT
    threads = [int(t) for t in args.threads.split(",")]
    runs = []   # (label, algorithm, rows, output buffers, threads)
    for n_trees in (int(t) for t in args.trees.split(",")):
        if args.workload == "sweep":
            wl = W.sweep(n_trees, args.leaves, n_rows=args.rows)
        else:
            wl = W.ltr(n_trees, args.leaves, n_rows=args.rows, xgboost=False)
        X = np.ascontiguousarray(wl.X[:args.rows])
        ens = quickscorer.load_ensemble(str(wl.lgb_path))
        parts = {wl.name: ens}
        if args.slices:
            parts = {f"{wl.name}[{a}:{a + args.slice_trees}]": slice_of(ens, a, args.slice_trees)
                     for a in (int(v) for v in args.slices.split(","))}
        for name, part in parts.items():
            model = quickscorer.Model(part)
            bufs = (np.empty((X.shape[0], model.n_outputs)),
                    np.empty((0, model.n_outputs), np.float32))
            for s in specs:
                alg = VQuickScorer(model.ensemble, model.plan.forest, **parse(s))
                for t in threads:
                    runs.append((f"{name} {s} threads={t}", alg, X, bufs, t))
    first: dict[int, np.ndarray] = {}
    for label, alg, X, (out, none32), n_threads in runs:
        alg.predict_raw(X, out, none32, n_threads)
        ref = first.setdefault(id(out), out.copy())
        if not np.array_equal(out, ref):
            raise SystemExit(f"{label}: scores differ from the first variant's")

    def call(alg, X, out, none32, n_threads):
        def run() -> int:
            alg.predict_raw(X, out, none32, n_threads)
            return X.shape[0]
        return run

    timings = interleaved([call(alg, X, out, none32, t) for _, alg, X, (out, none32), t in runs],
                          args.repeat, warmup=False)
    times = {label: [v * 1e6 for v in t.samples] for (label, *_), t in zip(runs, timings)}
    print(f"{args.rows} rows, paths on this CPU: {available_isas()}")
    for label, alg, *_ in runs:
        v = np.array(times[label])
        print(f"{label:66s} {alg.isa_name:7s} blocks={alg.tree_blocks:<3d} "
              f"min {v.min():8.2f}  median {np.median(v):8.2f} us/doc")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
