"""Calls of a few rows: each kernel family's inner loop alone in C (``few_rows_floor.c``)
against what ``predict`` takes at the same call size, on one model and the same rows.

The C floors, microseconds a document at 4, 8 and 16 rows a call, on the model's own layouts:

* ``walk_pairs``: the walk of its complete trees, two rows at a time through every tree (how
  the walk scores calls of two rows and more);
* ``walk_by_group``: the same walk, each group of eight trees walked for every row of the call
  before the next group (the slots of a group read from L1 after the first two rows);
* ``vqs_scan``: V-QuickScorer's scan (``vqs.h`` ``qs_scan_entries``, AVX2) of a group of
  as many documents as the call has, and their exit leaves; ``vqs_scan512``: the same with
  AVX-512 (8 documents a register; "-" on a CPU without it);
* ``row_scans``: QuickScorer's scan of one row at a time, the loop of YDF's engine.

``predict`` is timed at the same sizes first (the default choice and each named kernel,
interleaved rounds, Python's call included). Where the floor of every family is no lower
than a peer's time, no choice among these kernels reaches a ratio over that peer: the
command below on YDF's model is how ``docs/benchmarks.md`` bounds the few-row target.

    python -m benchmarks.experiments.few_rows_floor --shapes ydf-uniform-d7,full-uniform-1000x64

Needs models whose trees have at most 64 leaves (the walks run where the walk lays the trees
out complete: depth at most 8), rows without NaN, and no zero-as-missing split where the rows
hold zeros (the scans here compare every value in every segment).
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import compare as C
from benchmarks.experiments.walk_groups_floor import expanded
from benchmarks.tuning import small_calls as S

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"


SIZES = (4, 8, 16)
VARIANTS = ("walk_pairs", "walk_by_group", "vqs_scan", "vqs_scan512", "row_scans")


def write_arrays(d: Path, model, X: np.ndarray) -> None:
    """The arrays few_rows_floor.c reads (its header lists them)."""
    from quickscorer.algorithms.qs.layout import quickscorer_arrays
    from quickscorer.algorithms.walk import float32_keys, walk_arrays

    ens = model.ensemble
    if np.isnan(X).any():
        raise SystemExit("the rows hold NaN")
    w = walk_arrays(ens, None, complete=True)
    complete = int(w["cdepth"].shape[0] > 0)
    q = quickscorer_arrays(ens)
    seg = q["segment_offsets"]
    if (X == 0).any() and (np.diff(seg)[1::3] > 1).any():
        raise SystemExit("the model sends zeros to a side of their own and the rows hold zeros")
    if q["tree_word_offsets"][-1] != ens.n_trees:
        raise SystemExit("a tree has more than 64 leaves")
    xr = expanded(w, X, ens.n_features)
    f32 = int(complete and w["cnodes"].shape[0] < 2 * w["cnode_offset"][-1])
    np.array([ens.n_trees, ens.n_features, X.shape[0], xr.shape[1], f32, complete],
             np.int64).tofile(d / "meta.i64")
    for name, ext in (("cnodes", "u64"), ("cnode_offset", "i64"), ("cdepth", "u8"),
                      ("cslot_offset", "i64"), ("cslot_leaf", "i32")):
        w[name].tofile(d / f"{name}.{ext}")
    xr.tofile(d / "xr.f64")
    float32_keys(xr.astype(np.float32)).tofile(d / "xrkey.u32")
    q["thresholds"].astype(np.float64).tofile(d / "thr.f64")
    q["words"].astype(np.uint32).tofile(d / "word.u32")
    q["masks"].astype(np.uint64).tofile(d / "mask.u64")
    q["segment_offsets"].astype(np.int64).tofile(d / "seg.i64")
    np.ascontiguousarray(X, np.float64).tofile(d / "x.f64")
    model.predict_leaf(X, algorithm="traversal").astype(np.int32).tofile(d / "want.i32")


def predict_times(model, X: np.ndarray, rows: int, rounds: int) -> dict:
    """Median microseconds a document of the default predict and each kernel that can score
    the model's few-row calls, on consecutive calls of ``rows`` rows, interleaved rounds."""
    calls = [np.ascontiguousarray(X[i:i + rows]) for i in range(0, X.shape[0] - rows + 1, rows)]
    names = [None] + [k for k in ("walk", "vqs", "rapidscorer")
                      if k in model.supported_algorithms()]
    times: dict = {n: [] for n in names}
    for _ in range(rounds):
        for n in names:
            t0 = time.perf_counter()
            for c in calls:
                model.predict(c) if n is None else model.predict(c, algorithm=n)
            times[n].append((time.perf_counter() - t0) * 1e6 / (len(calls) * rows))
    return {("predict" if n is None else n): statistics.median(t) for n, t in times.items()}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", default="ydf-uniform-d7,full-uniform-1000x64",
                   help="benchmarks/tuning/small_calls.py shape names, comma-separated")
    p.add_argument("--rows", type=int, default=2048, help="distinct rows scored")
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args(argv)
    print(f"# few-row calls: the kernels' inner loops in C against predict, us a document "
          f"(median of {args.rounds} rounds); {C.machine()}")
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "few_rows_floor"
        subprocess.run(["gcc", "-O3", "-mavx2", "-I", str(SRC), "-o", str(exe),
                        str(HERE / "few_rows_floor.c")], check=True)
        for shape in args.shapes.split(","):
            model, _, X = S._load(shape)
            X = np.ascontiguousarray(X[:args.rows])
            d = Path(tmp) / shape
            d.mkdir()
            write_arrays(d, model, X)
            print(f"\n{shape}: {model.ensemble.n_trees} trees, "
                  f"{int(model.ensemble.n_leaves.sum())} leaves")
            heads = None
            for rows in SIZES:
                py = predict_times(model, X, rows, args.rounds)
                out = subprocess.run([str(exe), str(d), str(args.rounds), str(rows)],
                                     check=True, capture_output=True, text=True).stdout
                floor = {}
                for line in out.strip().splitlines():
                    name, _best, median, ok = line.split()
                    if ok == "skipped":
                        floor[name] = float("nan")
                        continue
                    if ok != "yes":
                        raise SystemExit(f"{shape}, {rows} rows: {name}'s leaves differ "
                                         f"from the reference")
                    floor[name] = float(median)
                if heads is None:
                    heads = list(py)
                    print("| rows | " + " | ".join(f"{h} (C)" for h in VARIANTS) + " | "
                          + " | ".join(heads) + " |")
                    print("| ---: |" + " ---: |" * (len(VARIANTS) + len(heads)))
                print(f"| {rows} | "
                      + " | ".join(f"{floor[v]:.2f}" if floor[v] == floor[v] else "-"
                                   for v in VARIANTS) + " | "
                      + " | ".join(f"{py[h]:.2f}" for h in heads) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
