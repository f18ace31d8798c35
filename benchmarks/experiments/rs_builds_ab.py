"""RapidScorer's kernel of two or more builds timed in one process, interleaved, on the same
layout and rows: what a change to ``_rapidscorer`` did, with the machine's drift spread over
every build alike.

    git worktree add /tmp/before <rev> && (cd /tmp/before && \
        QUICKSCORER_ONLY=_rapidscorer,capi python setup.py build_ext --inplace)
    python -m benchmarks.experiments.rs_builds_ab --builds /tmp/before,. \
        --shapes full-uniform-1000x64,xgb-depth9-uniform-1000 --rows 100,10000 --rounds 15

Each build's ``_rapidscorer`` extension (``quickscorer/algorithms/rapidscorer/_rapidscorer*.so``
under the build's root) is loaded into this process beside the others, each from its own file;
the layout's arrays are this checkout's (``RapidScorer.arrays()``), so the builds must read the
same layout. Each build scores the rows through ``predict_raw`` on one thread, on the path
``--isa`` names (``avx512``, ``avx2-wide``: AVX2 with 64 lanes, ``avx2``, ``scalar``; default:
the path this CPU's calls of 10,000 rows take); the scores of every build are checked equal
to the first's. Prints each build's least and median microseconds per document over
``--rounds`` interleaved rounds, and its least over the first build's.
"""
from __future__ import annotations

import argparse
import glob
import importlib.util
import time
from pathlib import Path

import numpy as np

from benchmarks import matrix as M
from quickscorer.bench import machine

ISAS = {"scalar": 0, "avx2": 1, "avx512": 2, "avx2-wide": 3}
MODULE = "quickscorer.algorithms.rapidscorer._rapidscorer"


def load_build(root: str):
    """The ``_rapidscorer`` extension of the build at root, as a module of its own."""
    found = sorted(glob.glob(str(Path(root) / "quickscorer" / "algorithms" / "rapidscorer"
                                 / "_rapidscorer*.so")))
    if not found:
        raise SystemExit(f"{root}: no built _rapidscorer extension")
    spec = importlib.util.spec_from_file_location(MODULE, found[0])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def calls(mods, model, X: np.ndarray, isa: int):
    """One call a build: predict_raw on a layout of that build over the same arrays."""
    alg = model.prepare("rapidscorer")
    lay0, ens = alg.layout, model.ensemble
    f32 = ens.family == "xgboost"
    out = []
    for mod in mods:
        lay = mod.RSLayout(alg.arrays(), ens.n_features, float32_ranks=f32,
                           levels_min_lanes=lay0.levels_min_lanes,
                           levels_chunk=lay0.levels_chunk, levels_vbmi=int(lay0.levels_vbmi),
                           levels_halves=int(lay0.levels_halves),
                           gathered=int(lay0.gathered))
        scratch = np.zeros((1, lay.scratch_bytes(isa, ens.n_outputs)), np.uint8)
        o64 = np.zeros((0 if f32 else X.shape[0], ens.n_outputs))
        o32 = np.zeros((X.shape[0] if f32 else 0, ens.n_outputs), np.float32)
        out.append((lambda mod=mod, lay=lay, s=scratch, a=o64, b=o32:
                    mod.predict_raw(alg.forest, lay, X, a, b, s, 1, isa), o64, o32))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--builds", required=True, help="build roots, the first the baseline")
    p.add_argument("--shapes", default="full-uniform-1000x64,xgb-depth9-uniform-1000")
    p.add_argument("--rows", default="100,10000")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--isa", choices=sorted(ISAS), default=None)
    args = p.parse_args(argv)
    import quickscorer
    from quickscorer.algorithms.rapidscorer import _rapidscorer

    roots = args.builds.split(",")
    mods = [load_build(r) for r in roots]
    isa = ISAS[args.isa] if args.isa else (2 if _rapidscorer.isa_available(2) else 3)
    print(f"{machine()}; path {args.isa or 'of this CPU'} ({isa}), one thread; us/doc, least / "
          f"median of {args.rounds} interleaved rounds")
    print("| model | rows | " + " | ".join(roots) + " |")
    print("| --- | ---: |" + " ---: |" * len(roots))
    for shape in args.shapes.split(","):
        wl = M.workload(shape, 10_000)
        model = quickscorer.load(wl.lgb_path or wl.xgb_path)
        for n in (int(r) for r in args.rows.split(",")):
            X = np.ascontiguousarray(wl.X[:n])
            fns = calls(mods, model, X, isa)
            for fn, _, _ in fns:
                fn()
            for _fn, o64, o32 in fns[1:]:
                if not (np.array_equal(o64, fns[0][1]) and np.array_equal(o32, fns[0][2])):
                    raise SystemExit(f"{shape}, {n} rows: the builds' scores differ")
            times = [[] for _ in fns]
            for _ in range(args.rounds):
                for k, (fn, _, _) in enumerate(fns):
                    t0 = time.perf_counter()
                    fn()
                    times[k].append((time.perf_counter() - t0) / n * 1e6)
            cells = []
            for k, t in enumerate(times):
                t.sort()
                ratio = "" if k == 0 else f" ({t[0] / times[0][0]:.2f}x)"
                cells.append(f"{t[0]:.3f} / {t[len(t) // 2]:.3f}{ratio}")
            print(f"| {shape} | {n} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
