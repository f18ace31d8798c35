"""An operation count of one model on the default path: what each call size must do at the
least, at this CPU's measured cost per operation, against what the default ``predict`` takes.

    python -m benchmarks.experiments.op_count                          # full-uniform-1000x64
    python -m benchmarks.experiments.op_count --shape ltr-1000x64 --rows 1,16,100,10000
    perf record -F 2000 -o /tmp/perf.data python -m benchmarks.experiments.op_count --loop 10000
    perf report -i /tmp/perf.data --stdio --sort=symbol      # the kernel's phases

Counts, from the model and the layouts the default path builds:

* the walk (calls of a few rows): nodes stepped through per row (the exit leaves' depths);
* ``rapidscorer`` (calls of more rows): its scan entries (a node's entries are the bytes of
  the leaf vector its left subtree spans), the entries a group of 64 (AVX2) or 32 documents
  visits (a segment's scan stops at the first threshold no lane's rank passes; simulated here
  on the rows' ranks), one rank a document and used feature, one exit leaf and one leaf
  value a document and tree.

Unit costs: the scan entry from ``rs_scan_floor.c`` (compiled and run here: one entry alone,
32 and 64 lanes, 128 KiB of state); the rest are not isolated and are read from a profile
(``perf record`` on the call, as ``docs/benchmarks.md`` shows). Times the default ``predict``
at each call size, interleaved, one thread. x86-64 with gcc and AVX2.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.tuning import small_calls as S
from quickscorer.bench import interleaved, machine

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent



def path_steps(model, X: np.ndarray) -> float:
    """Mean internal nodes on a row's root-to-leaf path, summed over the trees."""
    trees = model.ensemble.trees
    leaves = model.predict_leaf(X, source_ids=False)         # in-order leaf per tree
    total = 0
    for t in range(model.ensemble.n_trees):
        tree = trees[t]
        depth = _leaf_depths(tree.left, tree.right)
        total += depth[leaves[:, t]].sum()
    return total / X.shape[0]


def _leaf_depths(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Depth of each leaf, leaves in order (left subtree first; a child < 0 is a leaf)."""
    if left.shape[0] == 0:
        return np.zeros(1, np.int64)
    depths = []
    todo = [(0, 0)]
    while todo:
        node, d = todo.pop()
        if node < 0:
            depths.append(d)
        else:             # the right child below the left on the stack: left comes out first
            todo += [(right[node], d + 1), (left[node], d + 1)]
    return np.asarray(depths, np.int64)


def scan_visits(arrays: dict, X: np.ndarray, lanes: int, groups: int) -> tuple[float, int]:
    """Entries (sentinels included) a group of ``lanes`` rows visits, averaged over
    ``groups`` groups, and the layout's real entries. Ranks from the layout's own
    thresholds; rows without NaN (a model whose segments treat missing values apart is
    counted as if none were missing)."""
    from quickscorer.algorithms.rapidscorer.ranks import SENTINEL_THR, entry_thr
    thr = entry_thr(arrays["entries"]).astype(np.int64)
    off, bkt = arrays["rank_bucket_offsets"], arrays["rank_buckets"]
    S_ = arrays["slot_column"].shape[0]
    ranks = np.zeros((X.shape[0], S_), np.int64)
    for s in range(S_):
        t = bkt[off[s]:off[s + 1]]
        ranks[:, s] = np.searchsorted(t[np.isfinite(t)], X[:, arrays["slot_column"][s]])
    seg = arrays["segments"]
    mirrored = ((seg >> np.uint64(63)) & np.uint64(1)).astype(bool)
    slot = ((seg >> np.uint64(32)) & np.uint64(0x3FFFFFFF)).astype(np.int64) // 3
    start = (seg & np.uint64(0xFFFFFFFF)).astype(np.int64)
    sentinels = np.flatnonzero(thr == SENTINEL_THR)
    end = sentinels[np.searchsorted(sentinels, start)]        # each segment's sentinel
    visited = 0
    for g in range(groups):
        r = ranks[g * lanes:(g + 1) * lanes]
        top, top_mirrored = r.max(axis=0), (255 - r).max(axis=0)
        for k in range(seg.shape[0]):
            # a mirrored segment compares 255 - rank with 254 - j: rank passes below
            limit = top_mirrored[slot[k]] if mirrored[k] else top[slot[k]]
            visited += int(np.searchsorted(thr[start[k]:end[k]], limit)) + 1
    return visited / groups, int((thr != SENTINEL_THR).sum())


def entry_ns() -> dict[str, float]:
    """ns per scan entry (``shipped``: 32 lanes, ``wide64``: 64) from rs_scan_floor.c, the
    least of three runs."""
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "rs_scan_floor"
        subprocess.run(["gcc", "-O3", "-mavx2", "-I", str(ROOT / "src"), "-o", str(exe),
                        str(HERE / "rs_scan_floor.c")], check=True)
        best: dict[str, float] = {}
        for _ in range(3):                      # the least of three runs (a shared VM)
            out = subprocess.run([str(exe), "128"], check=True, capture_output=True,
                                 text=True).stdout
            for k, v in re.findall(r"(shipped|wide64) ([0-9.]+)", out):
                best[k] = min(best.get(k, np.inf), float(v))
    return best


def predict_calls(model, X: np.ndarray, sizes: list[int]) -> list:
    """For :func:`interleaved`: one round of the default predict on one thread at each call
    size, at least 20,000 rows a round (the rows it scored)."""
    calls = []
    for n in sizes:
        rows = np.ascontiguousarray(X[:n])
        reps = max(1, -(-20_000 // n))

        def run(rows=rows, reps=reps):
            for _ in range(reps):
                model.predict(rows, n_threads=1)
            return rows.shape[0] * reps
        calls.append(run)
    return calls


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shape", default="full-uniform-1000x64")
    p.add_argument("--rows", default="1,100,10000")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--loop", type=int, metavar="ROWS",
                   help="only call predict on this many rows, for --seconds (for a profiler)")
    p.add_argument("--seconds", type=float, default=10.0)
    args = p.parse_args(argv)
    model, _, X = S._load(args.shape)
    if args.loop:
        rows = np.ascontiguousarray(X[:args.loop])
        model.predict(rows, n_threads=1)
        end, calls = time.perf_counter() + args.seconds, 0
        start = time.perf_counter()
        while time.perf_counter() < end:
            model.predict(rows, n_threads=1)
            calls += 1
        print(f"{(time.perf_counter() - start) / calls / rows.shape[0] * 1e6:.2f} us/doc "
              f"over {calls} calls of {rows.shape[0]} rows")
        return 0
    ens = model.ensemble
    sizes = [int(v) for v in args.rows.split(",")]
    print(f"{machine()}\n{args.shape}: {ens.n_trees} trees, "
          f"{ens.trees.arrays['feature'].shape[0]} internal nodes, {ens.n_features} features")
    steps = path_steps(model, X[:2000])
    print(f"walk: {steps:.0f} node steps a row ({steps / ens.n_trees:.2f} a tree)")
    rs = model.prepare("rapidscorer").arrays()
    ns = entry_ns()
    for lanes, key in ((64, "wide64"), (32, "shipped")):
        visits, real = scan_visits(rs, X, lanes, groups=4)
        print(f"rapidscorer, {lanes}-lane groups: {visits:.0f} of {real} entries visited a "
              f"group ({visits / lanes:.0f} a document); at {ns[key]:.3f} ns an entry "
              f"(rs_scan_floor.c {key}): {visits * ns[key] / lanes / 1000:.2f} us/doc")
    one, _ = scan_visits(rs, X, 1, groups=64)
    print(f"rapidscorer, one row: {one:.0f} entries visited")
    print(f"ranks: {rs['model_used'].shape[0]} a document; exit leaves and leaf values: "
          f"{ens.n_trees} a document")
    times = [t.median * 1e6 for t in interleaved(predict_calls(model, X, sizes), args.repeat)]
    print("default predict, us/doc, median of", args.repeat, "rounds:")
    for n, t in zip(sizes, times):
        print(f"  {n} rows: {t:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
