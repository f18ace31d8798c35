"""CatBoost models with CTR features: the default ``predict`` (the CTR stage, then the
kernel it chooses) against CatBoost's own ``predict`` on the same rows, interleaved, one
thread (``--threads``: as many for each), with the CTR stage's share of our time.

    python -m benchmarks.experiments.catboost_ctr
    python -m benchmarks.experiments.catboost_ctr --trees 300 --depth 8 --batch 1,100,10000
    python -m benchmarks.experiments.catboost_ctr --batch 10000 --threads 2

The model (cached in ``cache/``): CatBoost regression on the matrix's ``uniform`` rows of 136
columns plus ``--categorical`` integer columns of ``--values`` categories each, every one a
CTR feature (``one_hot_max_size`` 2), combinations of up to two, saved as JSON with the
training pool. Our rows are the numbers; CatBoost's a DataFrame whose categorical columns are
integers, as CatBoost takes them (the time of building that DataFrame is not counted).
Scores are checked equal first.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from benchmarks.experiments.catboost_one_hot import arguments, frame, print_table, rows, trained
from quickscorer.bench import machine

HERE = Path(__file__).resolve().parent



def model(trees: int, depth: int, n_cat: int, values: int):
    """The CTR model (every categorical column a CTR feature, combinations of two) and its
    JSON path."""
    return trained("cb_ctr", trees, depth, n_cat, values,
                   lambda C: ((C * 7919) % 5 == 1).sum(1), one_hot_max_size=2,
                   max_ctr_complexity=2)


def main(argv=None) -> int:
    import quickscorer
    args = arguments(__doc__, argv, values=50, batch="1,100,10000")
    est, path = model(args.trees, args.depth, args.categorical, args.values)
    ours = quickscorer.load(path)
    X, C = rows(10_000, args.categorical, args.values + 5, 5)     # some categories unseen
    Xq = np.ascontiguousarray(np.hstack([X, C.astype(np.float64)]))
    df = frame(X, C)
    want = est.predict(df, thread_count=args.threads)
    if not np.array_equal(ours.predict(Xq), want):
        raise SystemExit("scores differ from CatBoost's")
    stage = ours.ensemble.ctr
    print(machine())
    print(f"{path.name}: {ours.n_trees} trees, {stage.n_columns} CTR features of "
          f"{len(stage.projections)} projections; default: "
          f"{ours.info()['default_algorithm'].split(' (')[0]}; scores equal CatBoost's")
    t = args.threads
    calls = [(lambda s: ours.predict(s, n_threads=t), False),
             (lambda s: stage.apply(s, t), False),
             (lambda s: est.predict(s, thread_count=t), True)]
    print_table(calls, "its CTR stage", Xq, df, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
