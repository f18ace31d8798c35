"""What a one-row QuickScorer scan could save, on a model's own layout and rows.

The one-row scan ANDs a mask for every node whose test the row fails (``x > threshold``),
whether or not the node is on the row's path. A node whose test most rows fail could be
scanned the other way (from the top thresholds down, its mask ANDed when the row goes left,
its tree's leaves ordered with that node's right subtree first, as ``rapidscorer``'s
mirrored nodes are): this script counts the ANDs a row makes now, with each node turned the
way the rows themselves favour (the best any choice can do), and with each node turned by
what the model file says (the covers: per feature, a cover-weighted monotone fit of the
share of training rows that went left against the threshold). Then it times the scan alone
in C (``one_row_floor.c``) in the kernel's layout, in 16-byte records, and oriented. The C
floor reads the rows as float32 (the counts use LightGBM models' float64 rows): it times the
work, it does not score.

    python -m benchmarks.experiments.one_row_floor \
        --model benchmarks/cache/full_uniform_lgb_1000x31.txt
    python -m benchmarks.experiments.one_row_floor --ydf heavy:7   # YDF's model (ydf_reference.py)
"""
from __future__ import annotations

import argparse
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from benchmarks import compare as C
from benchmarks import workloads as W

HERE = Path(__file__).resolve().parent



def _monotone_fit(x: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Weighted least-squares non-decreasing fit of y against x (pool adjacent violators)."""
    order = np.argsort(x, kind="stable")
    vals, wts, sizes = [], [], []
    for v, ww in zip(y[order], w[order]):
        vals.append(v * ww)
        wts.append(ww)
        sizes.append(1)
        while len(vals) > 1 and vals[-2] / wts[-2] > vals[-1] / wts[-1]:
            v2, w2, s2 = vals.pop(), wts.pop(), sizes.pop()
            vals[-1] += v2
            wts[-1] += w2
            sizes[-1] += s2
    fit = np.repeat([v / ww for v, ww in zip(vals, wts)], sizes)
    out = np.empty_like(fit)
    out[order] = fit
    return out


def orientation_counts(ens, X: np.ndarray) -> dict:
    """ANDs a row makes, on average over X: now, with the best orientation of every node,
    and with each node turned by the covers' estimate (None without covers)."""
    A = ens.trees.arrays
    feat, thr, left = A["feature"], A["threshold"], A["left"]
    numeric = ~A["is_categorical"]
    p = np.zeros(feat.shape[0])            # share of rows failing the test (x > threshold)
    for f in np.unique(feat[numeric]):
        s = numeric & (feat == f)
        p[s] = (X[:, f][:, None] > thr[s][None, :]).mean(axis=0)
    out = {"nodes": int(numeric.sum()), "now": p[numeric].sum(),
           "best": np.minimum(p, 1 - p)[numeric].sum(), "covers": None}
    nc, lc = A["node_cover"], A["leaf_cover"]
    if nc is not None:
        no, lo = ens.trees.node_offset, ens.trees.leaf_offset
        tree = np.repeat(np.arange(no.shape[0] - 1), np.diff(no))
        inner = left >= 0
        left_cover = np.where(inner, nc[np.where(inner, left, 0) + no[tree]],
                              lc[np.where(inner, 0, ~left) + lo[tree]])
        share_left = left_cover / np.maximum(nc, 1e-300)
        est = np.empty(feat.shape[0])
        for f in np.unique(feat[numeric]):
            s = np.flatnonzero(numeric & (feat == f))
            est[s] = _monotone_fit(thr[s], share_left[s], np.maximum(nc[s], 1e-12))
        out["covers"] = np.where(est < 0.5, 1 - p, p)[numeric].sum()
    return out


def dump(path: Path, arrays: dict, ens, X32: np.ndarray) -> None:
    seg, thr = arrays["segment_offsets"], arrays["thresholds"]
    used = arrays["used_features"]
    down = np.zeros(thr.shape[0], np.uint8)       # turned by the rows themselves
    X = X32.astype(np.float64)
    for f in used:
        s, e = seg[3 * f], seg[3 * f + 3]
        if e > s:
            down[s:e] = (X[:, f][:, None] > thr[s:e][None, :]).mean(axis=0) > 0.5
    hdr = np.array([ens.n_features, used.shape[0], thr.shape[0],
                    int(arrays["tree_word_offsets"][-1]), X32.shape[0]], np.int64)
    with open(path, "wb") as fh:
        for a, dt in ((hdr, np.int64), (used, np.int32), (seg, np.int64), (thr, np.float64),
                      (arrays["words"], np.uint32), (arrays["masks"], np.uint64),
                      (X32, np.float32), (down, np.uint8)):
            np.ascontiguousarray(a, dtype=dt).tofile(fh)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", help="a LightGBM or XGBoost model file")
    p.add_argument("--data", default="uniform", choices=W.DATA_KINDS,
                   help="the generated rows to score (those the model was trained on)")
    p.add_argument("--ydf", metavar="DATA:DEPTH",
                   help="YDF's 1,000-tree model of ydf_reference.py (trained if not cached)")
    p.add_argument("--rows", type=int, default=4000)
    p.add_argument("--rounds", type=int, default=7)
    args = p.parse_args(argv)
    import quickscorer
    from quickscorer.algorithms.qs.layout import quickscorer_arrays

    if args.ydf:
        from benchmarks import ydf_reference as Y
        data, depth = args.ydf.split(":")
        ens = quickscorer.load_ensemble(Y.as_xgboost_json(Y.train_ydf(data, 1000, int(depth))))
        name = f"YDF {data} max_depth {depth}"
    elif args.model:
        data, ens, name = args.data, quickscorer.load_ensemble(args.model), args.model
    else:
        p.error("give --model or --ydf")
    if ens.n_leaves.max() > 64 or ens.has_categorical:
        raise SystemExit("the C floor takes trees of at most 64 leaves without categorical "
                         "splits")
    X32 = np.ascontiguousarray(W.matrix_rows(data, args.rows, n_features=ens.n_features,
                                             seed=13), dtype=np.float32)
    # the rows as the kernel compares them: XGBoost's float32 values, LightGBM's float64
    Xk = (X32.astype(np.float64) if ens.family == "xgboost"
          else W.matrix_rows(data, args.rows, n_features=ens.n_features, seed=13))
    counts = orientation_counts(ens, Xk)
    print(f"{name}: {ens.n_trees} trees, {counts['nodes']} nodes, {args.rows} {data} rows; "
          f"{C.machine()}")
    now = counts["now"]
    print(f"ANDs a row: now {now:.0f}; nodes turned as the rows favour {counts['best']:.0f} "
          f"({now / counts['best']:.2f}x fewer)", end="")
    if counts["covers"] is not None:
        print(f"; turned by the covers {counts['covers']:.0f} "
              f"({now / counts['covers']:.2f}x fewer)")
    else:
        print("; the model has no covers")
    with tempfile.TemporaryDirectory() as tmp:
        exe, blob = Path(tmp) / "one_row_floor", Path(tmp) / "layout.bin"
        dump(blob, quickscorer_arrays(ens), ens, X32)
        subprocess.run(["gcc", "-O3", "-o", str(exe), str(HERE / "one_row_floor.c"), "-lm"],
                       check=True)
        print(subprocess.run([str(exe), str(blob), str(args.rounds)], check=True,
                             capture_output=True, text=True).stdout, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
