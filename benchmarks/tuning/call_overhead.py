"""The fixed cost of a call: one-row ``predict`` on a one-tree model, where the work is
nothing but argument handling and the kernel's entry.

    python -m benchmarks.tuning.call_overhead                 # best and median of 7 rounds
    python -m benchmarks.tuning.call_overhead --rows 4,16,32,63,64

Times this library's default ``predict`` and ``predict_raw``, one named kernel, and the
kernel called directly (no argument handling, what a lower bound of the Python side looks
like), with LightGBM's ``Booster.predict`` on the same model as a reference. ``--rows``
adds the default ``predict`` on calls of that many rows, each against the general path of
the same kernel (a ``Model`` whose low-latency entries are turned off, as in
``benchmarks/tuning/small_calls.py``): us per call.
"""
from __future__ import annotations

import statistics

import numpy as np

from benchmarks import compare as C
from quickscorer.bench import interleaved


def main(argv=None) -> int:
    import argparse

    import lightgbm as lgb

    import quickscorer
    from benchmarks.tuning.small_calls import general_path
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", default="", help="more calls of this many rows, comma-separated")
    args = p.parse_args(argv)
    rng = np.random.default_rng(0)
    X = rng.random((200, 8))
    y = X[:, 0] + rng.normal(0, 0.1, 200)
    booster = lgb.train({"objective": "regression", "num_leaves": 8, "verbose": -1,
                         "min_data_in_leaf": 5}, lgb.Dataset(X, y), num_boost_round=1)
    model = quickscorer.load(booster)
    row = np.ascontiguousarray(X[:1])
    alg = model.prepare("quickscorer")
    out, other = np.empty((1, 1)), np.empty((0, 1), np.float32)
    calls = {
        "quickscorer predict (default)": lambda: model.predict(row),
        "quickscorer predict_raw (default)": lambda: model.predict_raw(row),
        "quickscorer predict_raw(algorithm='quickscorer')":
            lambda: model.predict_raw(row, algorithm="quickscorer"),
        "kernel called directly (Algorithm.predict_raw)": lambda: alg.predict_raw(
            row, out, other, 1),
        "lightgbm Booster.predict": lambda: booster.predict(row, num_threads=1),
    }
    general = general_path(model)
    for n in (int(r) for r in args.rows.split(",") if r):
        rows = np.ascontiguousarray(X[:n])
        kernel = model.plan.small_kernels[n] if n < len(model.plan.small_kernels) else "general"
        calls[f"{n} rows: predict (default, {kernel})"] = lambda rows=rows: model.predict(rows)
        calls[f"{n} rows: the general path"] = lambda rows=rows: general.predict(rows)
    n = 20_000

    def repeated(fn):
        def run() -> int:
            for _ in range(n):
                fn()
            return n
        return run

    timings = interleaved([repeated(fn) for fn in calls.values()], 7)
    rounds = {name: [v * 1e6 for v in t.samples] for name, t in zip(calls, timings)}
    print(f"one-row call on a one-tree model (8 leaves, 8 features), us per call, 7 "
          f"interleaved rounds of {n} calls; {C.machine()}")
    print("| call | best | median |")
    print("| --- | ---: | ---: |")
    for name, v in rounds.items():
        print(f"| {name} | {min(v):.2f} | {statistics.median(v):.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
