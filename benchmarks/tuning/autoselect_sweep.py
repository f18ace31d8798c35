"""Microseconds per document of the fast kernels against the rows per call, the measurement
behind ``quickscorer/algorithms/autoselect.py``.

    python -m benchmarks.tuning.autoselect_sweep                       # full-uniform-1000x64
    python -m benchmarks.tuning.autoselect_sweep --shape full-uniform-1000x31 --repeat 5

Each kernel scores consecutive slices of the rows in calls of each size, one thread, timed
interleaved (every kernel once per round); the table gives the best round. The last row is
the default ``Model.predict_raw`` (the automatic choice, its call overhead included).
"""
from __future__ import annotations

import argparse

import numpy as np

from benchmarks import matrix as M
from quickscorer.bench import interleaved


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shape", default="full-uniform-1000x64")
    p.add_argument("--rows", default="1,2,4,8,12,16,24,32,48,64,100,128")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args(argv)

    import quickscorer
    from quickscorer.algorithms.cpu import available_isas
    from quickscorer.algorithms.qs.qs import QuickScorer
    from quickscorer.algorithms.qs.vqs import VQuickScorer
    from quickscorer.algorithms.rapidscorer.rapidscorer import RapidScorer
    from quickscorer.algorithms.walk import Walk

    wl = M.workload(args.shape, 10_000)
    model = quickscorer.load(wl.lgb_path)
    ens, forest = model.ensemble, model.plan.forest
    kernels = {"quickscorer": QuickScorer(ens, forest), "walk": Walk(ens, forest),
               "vqs": VQuickScorer(ens, forest)}
    if RapidScorer.unsupported(ens) is None:
        for isa in ("avx512", "avx2"):
            if isa in available_isas():
                try:
                    kernels[f"rapidscorer ({isa})"] = RapidScorer(ens, forest, isa=isa)
                except ValueError:
                    pass
    kernels["default predict_raw"] = None
    sizes = [int(r) for r in args.rows.split(",")]
    k = model.n_outputs
    dtype = np.float32 if ens.family == "xgboost" else np.float64
    other = np.empty((0, k), np.float64 if dtype == np.float32 else np.float32)
    best: dict[tuple[str, int], float] = {}
    X = wl.X

    def calls(alg, n: int, out: np.ndarray):
        total = max(4 * n, 256)

        def run() -> int:
            for s in range(0, total, n):
                if alg is None:
                    model.predict_raw(X[s:s + n])
                elif dtype == np.float32:
                    alg.predict_raw(X[s:s + n], other, out, 1)
                else:
                    alg.predict_raw(X[s:s + n], out, other, 1)
            return total
        return run

    for n in sizes:
        out = np.empty((n, k), dtype)
        timings = interleaved([calls(alg, n, out) for alg in kernels.values()], args.repeat)
        for name, t in zip(kernels, timings):
            best[name, n] = t.minimum * 1e6
    print(f"{wl.name}, one thread, us/doc (best of {args.repeat}); {M.C.machine()}")
    print(f"{'rows per call':>22s} " + " ".join(f"{n:>6d}" for n in sizes))
    for name in kernels:
        print(f"{name:>22s} " + " ".join(f"{best[name, n]:6.1f}" for n in sizes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
