"""CatBoost models with one-hot categorical features: the default ``predict`` (the
``oblivious`` kernel, whose levels may test a category) against ``rapidscorer`` and CatBoost's
own ``predict`` on the same rows, interleaved, one thread (``--threads``: as many for each).

    python -m benchmarks.experiments.catboost_one_hot
    python -m benchmarks.experiments.catboost_one_hot --trees 300 --depth 8 --batch 100,10000

The model (cached in ``cache/``): CatBoost regression on the matrix's ``uniform`` rows of 136
columns plus ``--categorical`` integer columns of ``--values`` categories each, all one-hot
(``one_hot_max_size`` above them), saved as JSON with the training pool (the categories'
texts). Our rows are the numbers; CatBoost's a DataFrame whose categorical columns are
integers, as CatBoost takes them. Scores are checked equal first.
"""
from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import numpy as np

from benchmarks import workloads as W
from quickscorer.algorithms.oblivious import oblivious_arrays
from quickscorer.bench import call_slices, interleaved, machine, per_document

HERE = Path(__file__).resolve().parent



def frame(X: np.ndarray, cats: np.ndarray):
    import pandas as pd
    df = pd.DataFrame(X, columns=[f"f{j}" for j in range(X.shape[1])])
    for j in range(cats.shape[1]):
        df[f"c{j}"] = cats[:, j]
    return df


def rows(n: int, n_cat: int, values: int, seed: int):
    rng = np.random.default_rng(seed)
    return W.matrix_rows("uniform", n, seed=seed), rng.integers(0, values, (n, n_cat))


def trained(name: str, trees: int, depth: int, n_cat: int, values: int, categorical_target,
            **params):
    """A CatBoost regressor on 20,000 ``rows`` (trained once, cached as ``name``'s JSON,
    saved with the pool, and ``.cbm``) and its JSON path: the matrix's target plus
    ``categorical_target(C)`` of the categorical columns C; ``params`` CatBoost's."""
    from catboost import CatBoostRegressor, Pool
    path = W.CACHE / f"{name}_{trees}_d{depth}_{n_cat}x{values}.json"
    est = CatBoostRegressor()
    if path.with_suffix(".cbm").exists() and path.exists():
        est.load_model(str(path.with_suffix(".cbm")))
        return est, path
    X, C = rows(20_000, n_cat, values, 11)
    names = [f"c{j}" for j in range(n_cat)]
    est = CatBoostRegressor(iterations=trees, depth=depth, learning_rate=0.05, verbose=0,
                            random_seed=0, thread_count=1, allow_writing_files=False,
                            cat_features=names, **params)
    df = frame(X, C)
    est.fit(df, W._matrix_target(X, 12) + categorical_target(C))
    W.CACHE.mkdir(parents=True, exist_ok=True)
    est.save_model(str(path), format="json", pool=Pool(df, cat_features=names))
    est.save_model(str(path.with_suffix(".cbm")))
    return est, path


def model(trees: int, depth: int, n_cat: int, values: int):
    """The one-hot model (every categorical column one-hot) and its JSON path."""
    return trained("cb_onehot", trees, depth, n_cat, values,
                   lambda C: (C % 3 == 1).sum(1), one_hot_max_size=values + 1)


def arguments(doc: str, argv, values: int, batch: str):
    """The options both CatBoost experiments take."""
    p = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    p.add_argument("--trees", type=int, default=1000)
    p.add_argument("--depth", type=int, default=6)
    p.add_argument("--categorical", type=int, default=4)
    p.add_argument("--values", type=int, default=values)
    p.add_argument("--batch", default=batch)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--threads", type=int, default=1,
                   help="threads for every engine (ours and CatBoost's alike)")
    return p.parse_args(argv)


def medians(calls, Xq: np.ndarray, df, batch: int, rounds: int) -> list[float]:
    """Median microseconds a document of each ``(function, takes the DataFrame)`` over calls
    of ``batch`` rows of the first 10,000, interleaved rounds."""
    ours_slices = call_slices(Xq, batch, 10_000)
    df_slices = [df.iloc[k:k + batch] for k in range(0, 10_000, batch)][:len(ours_slices)]
    fns = [per_document(f, df_slices if on_frame else ours_slices) for f, on_frame in calls]
    return [statistics.median(t.samples) * 1e6 for t in interleaved(fns, rounds)]


def print_table(calls, second: str, Xq: np.ndarray, df, args) -> None:
    """The experiments' table: per call size, the default ``predict`` (calls[0]), calls[1]
    (headed ``second``) and CatBoost's ``predict`` (calls[2]), and the default's lead."""
    print(f"| rows per call | default | {second} | CatBoost | default vs CatBoost |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for batch in (int(b) for b in args.batch.split(",")):
        med = medians(calls, Xq, df, batch, args.rounds)
        print(f"| {batch:,} | {med[0]:.2f} | {med[1]:.2f} | {med[2]:.2f} | "
              f"{med[2] / med[0]:.2f}x |")


def main(argv=None) -> int:
    import quickscorer
    args = arguments(__doc__, argv, values=8, batch="100,10000")
    est, path = model(args.trees, args.depth, args.categorical, args.values)
    ours = quickscorer.load(path)
    X, C = rows(10_000, args.categorical, args.values, 5)
    Xq = np.ascontiguousarray(np.hstack([X, C.astype(np.float64)]))
    df = frame(X, C)
    want = est.predict(df, thread_count=args.threads)
    if not np.array_equal(ours.predict(Xq), want):
        raise SystemExit("scores differ from CatBoost's")
    a = oblivious_arrays(ours.ensemble)
    print(machine())
    print(f"{path.name}: {ours.n_trees} trees, {int(a['level_eq'].sum())} of their "
          f"{int(a['depth'].sum())} levels test a category; default: "
          f"{ours.info()['default_algorithm'].split(' (')[0]}; scores equal CatBoost's")
    t = args.threads
    calls = [(lambda s: ours.predict(s, n_threads=t), False),
             (lambda s: ours.predict(s, algorithm="rapidscorer", n_threads=t), False),
             (lambda s: est.predict(s, thread_count=t), True)]
    print_table(calls, "rapidscorer", Xq, df, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
