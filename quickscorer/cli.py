"""The ``quickscorer`` command: ``info``, ``score``, ``convert``, ``bench``, ``demo``."""
from __future__ import annotations

import argparse
import sys
import time
from importlib import resources

import numpy as np

from . import bench
from .algorithms import registry
from .errors import InputError, ModelFormatError
from .export import to_xgboost_json
from .inputs.files import read_rows
from .loading import load


def _info(args) -> int:
    model = load(args.model)
    if args.algorithm:
        model.prepare(args.algorithm)
    for key, value in model.info().items():
        print(f"{key:18s} {value}")
    return 0


def _score(args) -> int:
    model = load(args.model)
    fill = np.nan if model.ensemble.family == "xgboost" else 0.0
    X = read_rows(args.data, model.n_features, fill, args.label_column)
    if args.leaf:
        out = model.predict_leaf(X, algorithm=args.algorithm, n_threads=args.threads,
                                 source_ids=True)
        fmt = "%d"
    else:
        out = model.predict(X, raw_score=args.raw, algorithm=args.algorithm,
                            n_threads=args.threads)
        fmt = "%.17g"
    np.savetxt(args.output or sys.stdout, np.atleast_1d(out), fmt=fmt, delimiter="\t")
    return 0


def demo_files():
    """Paths of the bundled demo model and queries (package data)."""
    base = resources.files("quickscorer") / "data"
    return base / "demo_model.txt", base / "demo_queries.npz"


def _convert(args) -> int:
    to_xgboost_json(args.model, args.output)
    print(f"wrote {args.output} (XGBoost JSON)")
    return 0


def _dcg(labels: np.ndarray, k: int) -> float:
    gains = (2.0 ** labels[:k] - 1) / np.log2(np.arange(2, min(k, labels.size) + 2))
    return float(gains.sum())


def _demo(args) -> int:
    model_path, data_path = demo_files()
    t0 = time.perf_counter()
    model = load(str(model_path))
    load_ms = (time.perf_counter() - t0) * 1e3
    with np.load(str(data_path)) as d:
        X, labels, qid = d["X"], d["labels"], d["qid"]
    info = model.info()
    print(f"quickscorer demo: a LightGBM {info['objective']!r} model, {info['n_trees']} trees, "
          f"up to {info['max_leaves']} leaves, {info['n_features']} features "
          f"(loaded in {load_ms:.1f} ms)")
    print(f"scoring {X.shape[0]} documents in {np.unique(qid).size} queries\n")
    scores = model.predict(X)
    ndcgs = []
    for q in np.unique(qid):
        idx = np.flatnonzero(qid == q)
        order = idx[np.argsort(-scores[idx], kind="stable")]
        ideal = _dcg(np.sort(labels[idx])[::-1], 10)
        ndcg = _dcg(labels[order], 10) / ideal if ideal > 0 else 1.0
        ndcgs.append(ndcg)
        print(f"query {q}: {idx.size} documents, NDCG@10 = {ndcg:.3f}")
        for rank, doc in enumerate(order[:args.top], 1):
            print(f"  {rank:2d}. doc {doc - idx[0]:4d}  score {scores[doc]:+.6f}  "
                  f"relevance {int(labels[doc])}")
    print(f"\nmean NDCG@10 = {np.mean(ndcgs):.3f}")

    # Every algorithm must give the reference traversal's scores, bit for bit.
    ref = model.predict(X, raw_score=True, algorithm="traversal")
    failed = []
    for name in registry.available():
        if name not in model.supported_algorithms():
            print(f"check {name:14s} not run: {registry.get(name).unsupported(model.ensemble)}")
            continue
        got = model.predict(X, raw_score=True, algorithm=name)
        same = np.array_equal(got, ref)
        print(f"check {name:14s} {'identical to the reference traversal' if same else 'DIFFERS'}")
        if not same:
            failed.append(name)
    if failed:
        print(f"FAILED: {', '.join(failed)} disagree with the reference traversal")
        return 1
    print("OK: every algorithm agrees with the reference traversal bit for bit")
    return 0


def _bench(args) -> int:
    batches = tuple(int(b) for b in args.batch.split(","))
    if not batches or min(batches) < 1:
        raise InputError(f"--batch must be positive integers, got {args.batch!r}")
    print(bench.run(args.model, args.data, batches, args.threads, args.repeat,
                    label_column=args.label_column))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="quickscorer",
        description="Exact, fast scoring of LightGBM and XGBoost tree ensembles.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("info", help="describe a model: source, objective, trees, leaves, depth")
    p.add_argument("model", help="LightGBM text model or XGBoost JSON / UBJSON / legacy binary "
                                 "file")
    p.add_argument("--algorithm", help="also prepare this algorithm and report its layout size")
    p.set_defaults(func=_info)

    p = sub.add_parser("score", help="score rows from a LibSVM, CSV/TSV or .npy file")
    p.add_argument("model")
    p.add_argument("data", help="LibSVM (label idx:value ...), CSV/TSV of numbers, or .npy")
    p.add_argument("--raw", action="store_true", help="raw scores (margins)")
    p.add_argument("--leaf", action="store_true", help="exit leaf ids (the library's own ids)")
    p.add_argument("--algorithm", default=None, help=f"one of {registry.available()}")
    p.add_argument("--threads", type=int, default=1, help="threads (0: all cores)")
    p.add_argument("--label-column", type=int, default=None,
                   help="CSV/TSV: drop this column (the label) before scoring")
    p.add_argument("-o", "--output", help="write scores here instead of standard output")
    p.set_defaults(func=_score)

    p = sub.add_parser("convert", help="write an XGBoost model (legacy binary, UBJSON, JSON) "
                                       "as XGBoost JSON, which today's XGBoost loads")
    p.add_argument("model", help="XGBoost model file (legacy binary .model/.bin, .ubj, .json)")
    p.add_argument("output", help="the JSON file to write")
    p.set_defaults(func=_convert)

    p = sub.add_parser("bench", help="time your model on your rows (or generated ones) "
                                     "against LightGBM / XGBoost")
    p.add_argument("model")
    p.add_argument("data", nargs="?", default=None,
                   help="LibSVM, CSV/TSV or .npy rows; default: generated rows")
    p.add_argument("--batch", default="1,100,10000", help="rows per call, comma-separated")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--label-column", type=int, default=None,
                   help="CSV/TSV: drop this column (the label) before scoring")
    p.set_defaults(func=_bench)

    p = sub.add_parser("demo", help="rank a few bundled queries with a bundled model")
    p.add_argument("--top", type=int, default=5, help="documents to show per query")
    p.set_defaults(func=_demo)

    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ModelFormatError, InputError, OSError) as exc:
        print(f"quickscorer: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
