"""One row through a model's trees, the walk alone, in C: the eight-cursor walk of the
walk's node table (``walk8``, a harvest of the leaves every ``WALK_HARVEST`` steps; as
it once stepped, the next root read on the chain of loads; with a harvest every
1, 2 or 4 steps), its complete trees eight at a time (``walk_groups``, the
one-row kernel where the model has them), two rows together (``walk_groups_pair``), both
on float32 slots also as they once stepped (``float_groups``, ``float_pairs``: a float
compare where the kernel compares order keys, ``walk.float32_keys``), and AVX2 gathers of
eight trees a level (one, two or four groups at a time; float32 slots, every
tree of one depth), on the same rows, expanded here as ``_walk.expand`` does (the rows have no
NaN; a LightGBM zero-as-missing column maps 0 to its side). No expansion of the row, no sum of
the leaves: what ``benchmarks/tuning/small_calls.py`` times through ``predict`` adds both and the
call. Every variant's leaves are checked against the reference traversal's.

    python -m benchmarks.experiments.walk_groups_floor \
        --shapes ydf-uniform-d7,xgb-depth6-uniform-1000
    python -m benchmarks.experiments.walk_groups_floor --shapes full-uniform-1000x64,ltr-1000x64

Models without complete trees (leaf-wise LightGBM trees) run the eight-cursor walks only.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from benchmarks import compare as C
from benchmarks.tuning import small_calls as S

HERE = Path(__file__).resolve().parent



def expanded(arrays: dict, X: np.ndarray, n_features: int) -> np.ndarray:
    """The walk's expanded rows (its fill columns; no special nodes, no NaN)."""
    from quickscorer.algorithms.walk import _R
    if arrays["feature"].shape[0]:
        raise SystemExit("the model has special nodes (categorical, NaN or +inf thresholds)")
    if np.isnan(X).any():
        raise SystemExit("the rows hold NaN")
    fill = arrays["fill_cols"].astype(np.int64)
    rule, feat = fill // n_features, fill % n_features
    xr = np.asarray(X, np.float64)[:, feat].copy()
    zero = xr == 0.0
    xr[zero & (rule == _R["zero_left"])[None, :]] = -np.inf
    xr[zero & (rule == _R["zero_right"])[None, :]] = np.inf
    return np.ascontiguousarray(xr)


def run(shape: str, n_rows: int, rounds: int, exe: Path) -> None:
    from quickscorer.algorithms import _walk
    from quickscorer.algorithms.walk import float32_keys, walk_arrays

    model, _, X = S._load(shape)
    ens = model.ensemble
    a = walk_arrays(ens, None, complete=True)
    complete = int(a["cdepth"].shape[0] > 0)
    # the table with its leaf records and the padded roots, as _walk.WalkLayout has them
    table = a["walk_table"]
    n_records = int(table[2] >> 32) + 1            # row 0's pad: the last leaf record's number
    roots = (np.append(a["roots"], np.full(8, a["roots"][-1], np.int32))
             * _walk.NODE_BYTES).astype(np.int32)
    a = dict(a, walk_nodes=table, roots=roots)
    X = np.asarray(X)[:n_rows]
    if ens.family == "xgboost":
        X = X.astype(np.float32)
    xr = expanded(a, X, ens.n_features)
    n_trees = ens.n_trees
    f32 = int(a["cnodes"].shape[0] < 2 * a["cnode_offset"][-1])
    one_depth = int(np.unique(a["cdepth"]).shape[0] == 1)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        np.array([n_trees, xr.shape[1], xr.shape[0], f32, one_depth, complete, n_records],
                 np.int64).tofile(
            d / "meta.i64")
        for name, ext in (("walk_nodes", "u64"), ("roots", "i32"), ("cnodes", "u64"),
                          ("cnode_offset", "i64"), ("cdepth", "u8"), ("cslot_offset", "i64"),
                          ("cslot_leaf", "i32")):
            a[name].tofile(d / f"{name}.{ext}")
        xr.tofile(d / "xr.f64")
        float32_keys(xr.astype(np.float32)).tofile(d / "xrkey.u32")
        out = subprocess.run([str(exe), str(d), str(rounds)], check=True, capture_output=True,
                             text=True).stdout
        want = model.predict_leaf(X, algorithm="traversal")
        rows = []
        for line in out.strip().splitlines():
            name, best, median = line.split()
            got = np.fromfile(d / f"leaves_{name}.i32", np.int32).reshape(xr.shape[0], n_trees)
            rows.append((name, float(best), float(median), np.array_equal(got, want)))
    if complete:
        depths = np.bincount(a["cdepth"]).nonzero()[0].tolist()
        steps = 8 * int(a["cdepth"][::8].astype(np.int64).sum())
        print(f"\n{shape}: {n_trees} trees, complete trees of depth {depths} "
              f"({'float32' if f32 else 'float64'} slots, "
              f"{a['cnodes'].nbytes / 2 ** 20:.2f} MiB), {steps} steps a row through the "
              f"groups; {xr.shape[0]} distinct rows, us a row")
    else:
        print(f"\n{shape}: {n_trees} trees, no complete trees; node table "
              f"{a['walk_nodes'].nbytes / 2 ** 20:.2f} MiB; {xr.shape[0]} distinct rows, "
              f"us a row")
    print("| variant | best | median | leaves equal the reference |")
    print("| --- | ---: | ---: | --- |")
    for name, best, median, ok in rows:
        print(f"| {name} | {best:.2f} | {median:.2f} | {'yes' if ok else 'NO'} |")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", default="ydf-uniform-d7,xgb-depth6-uniform-1000",
                   help="benchmarks/tuning/small_calls.py shape names, comma-separated")
    p.add_argument("--rows", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args(argv)
    print(C.machine())
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "walk_groups_floor"
        subprocess.run(["gcc", "-O3", "-mavx2", "-o", str(exe),
                        str(HERE / "walk_groups_floor.c")], check=True)
        for shape in args.shapes.split(","):
            run(shape, args.rows, args.rounds, exe)
    return 0


if __name__ == "__main__":
    sys.exit(main())
