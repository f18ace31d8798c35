"""The ``oblivious`` kernel's phases apart, in C (``oblivious_floor.c`` on ``oblivious.h``), on
a CatBoost model of oblivious trees, against the default ``predict`` and CatBoost's own on the
same rows.

    python -m benchmarks.experiments.oblivious_floor                      # cb-d6-uniform-1000
    python -m benchmarks.experiments.oblivious_floor --depth 8 --trees 300 --kind heavy --rounds 9
    python -m benchmarks.experiments.oblivious_floor --count-max 0,16,32,48,64
    python -m benchmarks.experiments.oblivious_floor --leaf-block 0,16384,32768 \
        --block-groups 1,4,8,16

``--count-max`` builds the program once per value of ``OBL_COUNT_MAX`` (the most thresholds
a column ranked by counting has; 0: every column by the two-level search), ``--leaf-block``
once per value of ``OBL_LEAF_BLOCK`` (the bytes of leaf values a block of trees holds; 0:
one block), and ``--block-groups`` runs each build with each number of groups a block; the
variants run in turn, ``--rounds`` times each, and each one's best phases are printed.

The layout is the library's (``oblivious_arrays``); the C program times a group's ranks alone,
the ranks and each tree's 32 leaf indexes, and the whole group with its sums (AVX2), and its
sums are checked here against ``Model.predict`` (exact, or the script stops). One output.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import workloads as W
from quickscorer.algorithms.oblivious import oblivious_arrays
from quickscorer.bench import machine

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent



def write_arrays(path: Path, model, X: np.ndarray) -> tuple[int, int]:
    """The model's oblivious layout (as the library builds it), its leaf values and the rows."""
    ens = model.ensemble
    if ens.n_outputs != 1:
        raise SystemExit("one output only")
    a = oblivious_arrays(ens)
    forest = model.plan.forest_arrays
    leaf_value = np.ascontiguousarray(forest["leaf_value"], np.float64)
    C, T = a["col_feature"].shape[0], a["depth"].shape[0]
    with open(path, "wb") as fh:
        fh.write(np.array([X.shape[0], X.shape[1], C, T, a["rank_buckets"].shape[0],
                           leaf_value.shape[0]], np.int64).tobytes())
        for arr in (np.asarray(X, np.float64), a["col_feature"], a["col_nan_rank"],
                    a["col_zero_rank"], a["col_zero_special"], a["col_npiv"],
                    a["rank_bucket_offsets"], a["rank_pivots"], a["rank_buckets"], a["depth"],
                    a["level_col"], a["level_thr"],
                    np.asarray(forest["tree_leaf_offset"][:-1], np.int64), leaf_value,
                    np.asarray(ens.base_score, np.float64)[:1],
                    np.array([a["rank_pivots_f32"].shape[0] > 0], np.int64),
                    a["rank_pivots_f32"], a["rank_buckets_f32"]):
            fh.write(np.ascontiguousarray(arr).tobytes())
    return C, int(a["depth"].max())


def main(argv=None) -> int:
    import quickscorer
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trees", type=int, default=1000)
    p.add_argument("--depth", type=int, default=6)
    p.add_argument("--kind", default="uniform", help="the rows: uniform or heavy")
    p.add_argument("--rows", type=int, default=10_000)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--count-max", default="",
                   help="OBL_COUNT_MAX values to build and compare, comma-separated "
                        "(default: oblivious.h's)")
    p.add_argument("--leaf-block", default="",
                   help="OBL_LEAF_BLOCK values (bytes of leaf values a block of trees holds; "
                        "0: one block) to build and compare, comma-separated")
    p.add_argument("--block-groups", default="8",
                   help="groups of 32 rows a block, comma-separated values to compare "
                        "(the library's: 8)")
    args = p.parse_args(argv)
    def values(text):
        return [int(k) for k in text.split(",") if k.strip()]
    # the variants: each build's defines, each run with each block size
    builds = ([("OBL_COUNT_MAX", k) for k in values(args.count_max)]
              + [("OBL_LEAF_BLOCK", k) for k in values(args.leaf_block)]) or [None]
    variants = [(d, g) for d in builds for g in values(args.block_groups)]
    wl = W.catboost_model(args.trees, args.depth, args.kind, n_rows=args.rows)
    model = quickscorer.load(wl.lgb_path)
    X = np.ascontiguousarray(wl.X)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        n_cols, depth = write_arrays(tmp / "a.bin", model, X)
        exes = {}
        for j, d in enumerate(builds):
            exes[d] = tmp / f"oblivious_floor_{j}"
            subprocess.run(["gcc", "-O3", "-mavx2", "-I", str(ROOT / "src"), "-o",
                            str(exes[d])] + ([f"-D{d[0]}={d[1]}"] if d is not None else [])
                           + [str(HERE / "oblivious_floor.c"), "-lm"], check=True)
        best_of: dict = {}
        want = model.predict(X, raw_score=True)
        single = len(variants) == 1
        for _ in range(1 if single else args.rounds):     # the variants in turn
            for d, g in variants:
                out = subprocess.run([str(exes[d]), str(tmp / "a.bin"), str(tmp / "s.bin"),
                                      str(args.rounds if single else 1), str(g)], check=True,
                                     capture_output=True, text=True)
                got = np.fromfile(tmp / "s.bin", np.float64)
                if not np.array_equal(got, want):
                    raise SystemExit(f"{d} {g} groups: scores differ from Model.predict: "
                                     f"max {np.abs(got - want).max()}")
                phases = [float(v) for v in re.findall(r"(?<=\s)(\d+\.\d+)", out.stdout)]
                old = best_of.get((d, g))
                best_of[(d, g)] = (phases, out.stdout) if old is None else (
                    [min(x, y) for x, y in zip(old[0], phases)], out.stdout)
    model.predict(X)
    best = np.inf
    for _ in range(args.rounds):
        t = time.perf_counter()
        model.predict(X, raw_score=True, n_threads=1)
        best = min(best, (time.perf_counter() - t) / X.shape[0] * 1e9)
    cb = None
    try:
        from catboost import CatBoost
        booster = CatBoost()
        booster.load_model(str(wl.lgb_path.with_suffix(".cbm")))
        booster.predict(X, prediction_type="RawFormulaVal", thread_count=1)
        cb = np.inf
        for _ in range(args.rounds):
            t = time.perf_counter()
            booster.predict(X, prediction_type="RawFormulaVal", thread_count=1)
            cb = min(cb, (time.perf_counter() - t) / X.shape[0] * 1e9)
    except ImportError:
        pass
    print(machine())
    print(f"{wl.name}: {args.trees} trees of depth {depth}, {n_cols} columns, "
          f"{X.shape[0]} rows; scores equal Model.predict")
    for (d, g), (phases, text) in best_of.items():
        label = ("" if d is None else f"{d[0]}={d[1]}, ") + f"{g} groups a block: "
        names = re.findall(r"([a-z][a-z0-9+ ]*?) \d+\.\d+", text.split(":", 1)[1])
        print("C, " + label + "ns a row: " + "  ".join(
            f"{n.strip()} {v:.1f}" for n, v in zip(names, phases)))
    print(f"default predict: {best:.1f} ns a row (best of {args.rounds})")
    if cb is not None:
        print(f"CatBoost predict: {cb:.1f} ns a row (best of {args.rounds})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
