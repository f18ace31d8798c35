"""The ``quickscorer`` command: info, score, convert, compile, bench, demo."""
from __future__ import annotations

import argparse
import glob
import os
import sys
import time
from importlib import resources
from pathlib import Path

import numpy as np

from . import bench, capi
from .algorithms import registry
from .batch import output_path, score_file, score_files
from .config import show_config
from .errors import InputError, ModelFormatError
from .export import (
    check_export,
    to_lightgbm_dump,
    to_ranklib,
    to_solr_ltr,
    to_xgboost_dump,
    to_xgboost_json,
)
from .inputs.readers import FORMATS, ReadOptions, read_all
from .loading import load
from .outputs import OUTPUT_FORMATS


def _info(args) -> int:
    if args.system:
        show_config()
        if args.model is None:
            return 0
        print()
    if args.model is None:
        print("quickscorer info: give a model, or --system", file=sys.stderr)
        return 2
    model = load(args.model)
    if args.algorithm:
        model.prepare(args.algorithm)
    for key, value in model.info().items():
        print(f"{key:18s} {value}")
    return 0


def _columns(text: str | None) -> tuple:
    """A comma-separated list of column names or numbers."""
    if not text:
        return ()
    return tuple(int(c) if c.strip().isdigit() else c.strip() for c in text.split(","))


def _column(text: str | None):
    return None if text is None else (int(text) if text.isdigit() else text)


def _job_options(args) -> dict:
    return dict(format=args.format, output_format=args.output_format, header=args.header,
                raw_score=args.raw, leaf=args.leaf, algorithm=args.algorithm,
                n_threads=args.threads, label_column=_column(args.label_column),
                query_column=_column(args.query_column), keep=_columns(args.keep),
                drop=_columns(args.drop), input_header=args.input_header, rank=args.rank,
                top=args.top, on_error=args.on_error, chunk_rows=args.chunk_rows,
                contrib=args.contrib, group=args.group, missing=args.missing,
                margin_column=_column(args.margin_column))


def _inputs(data: list[str]) -> list[str]:
    """The files named: each path, each file of a directory (sorted), each match of a glob."""
    found = []
    for d in data:
        if os.path.isdir(d):
            found += sorted(str(p) for p in Path(d).iterdir()
                            if p.is_file() and not p.name.startswith("."))
        elif any(ch in d for ch in "*?[") and not os.path.exists(d):
            matches = sorted(glob.glob(d))
            if not matches:
                raise InputError(f"{d}: no file matches")
            found += matches
        else:
            found.append(d)
    return found


def _score(args) -> int:
    model = load(args.model)
    inputs = _inputs(args.data)
    options = _job_options(args)
    cluster = args.scheduler is not None or args.dask is not None
    many = len(inputs) > 1 or any(Path(d).is_dir() for d in args.data) or cluster
    if not many:
        summary = score_file(model, inputs[0], args.output,
                             progress=False if args.quiet else None, **options)
        if not args.quiet:
            print(f"quickscorer: {summary.line()}", file=sys.stderr)
        return 0
    if not args.output:
        raise InputError("scoring several files writes one output file each: name a folder "
                         "with -o DIR")
    out_dir = Path(args.output)
    out_dir.mkdir(parents=True, exist_ok=True)
    if cluster:
        summaries = score_files(model, inputs, out_dir, scheduler=args.scheduler,
                                        workers=args.dask, **options)
    else:
        summaries = []
        for src in inputs:
            summaries.append(score_file(model, src, output_path(src, out_dir,
                                                                 args.output_format),
                                        progress=False if args.quiet else None, **options))
    if not args.quiet:
        for s in summaries:
            print(f"quickscorer: {s.line()}", file=sys.stderr)
        rows = sum(s.rows for s in summaries)
        print(f"quickscorer: {rows:,} rows in {len(summaries)} files", file=sys.stderr)
    return 0


def demo_files():
    """Paths of the bundled demo model and queries (package data)."""
    base = resources.files("quickscorer") / "data"
    return base / "demo_model.txt", base / "demo_queries.npz"


#: ``convert --to``'s formats past XGBoost JSON: the writer and the engine it writes for
_EXPORTS = {"ranklib": (to_ranklib, "RankLib"), "solr-ltr": (to_solr_ltr, "Solr LTR"),
            "xgboost-dump": (to_xgboost_dump, "an XGBoost JSON dump"),
            "lightgbm-dump": (to_lightgbm_dump, "a LightGBM JSON dump")}


def _convert(args) -> int:
    if args.to == "xgboost-json":
        if args.check:
            raise InputError("--check compares an export to its engine's scoring: with --to "
                             f"{', '.join(_EXPORTS)}")
        to_xgboost_json(args.model, args.output)
        print(f"wrote {args.output} (XGBoost JSON)")
        return 0
    model = load(args.model)
    write, engine = _EXPORTS[args.to]
    text = write(model.ensemble, args.output)
    print(f"wrote {args.output} ({engine}, {model.n_trees} trees)")
    if args.check:
        rows = read_all(args.check, model.n_features, model.ensemble.absent_value,
                        model.feature_names,
                        ReadOptions(index_base=model.ensemble.feature_id_base))
        c = check_export(model, text, rows, args.to)
        print(f"checked on {c['rows']:,} rows of {args.check} scored as {engine} scores them: "
              f"{c['decisions']:,} rows take another path in some tree; {c['scores']:,} "
              f"scores differ, by at most {c['max_abs']:.3g} ({c['max_rel']:.3g} of the "
              f"score)")
    return 0


def _compile(args) -> int:
    t0 = time.perf_counter()
    model = load(args.model)
    out = Path(args.output) if args.output else Path(args.model).with_suffix(".qsm")
    if out.resolve() == Path(args.model).resolve():
        raise InputError(f"{out}: the prepared model file would replace the model itself; "
                         f"give -o")
    model.save(out)
    seconds = time.perf_counter() - t0
    # the file opened as a scoring process opens it, and its scores checked against the model's
    opened = load(out)
    rows = np.random.default_rng(0).standard_normal((256, model.n_features))
    if not np.array_equal(opened.predict_raw(rows), model.predict_raw(rows)):
        out.unlink()
        print(f"quickscorer: error: {out} scores differently from {args.model}; removed it",
              file=sys.stderr)
        return 1
    c_note = _c_library_check(out, model, rows)
    if c_note is None:
        out.unlink()
        print(f"quickscorer: error: the C library scores {out} differently from "
              f"{args.model}; removed it", file=sys.stderr)
        return 1
    layouts = opened.info()["model_file_layouts"]
    print(f"wrote {out} ({out.stat().st_size:,} bytes, {seconds:.2f} s): {model.n_trees} "
          f"trees and {len(opened.plan.candidates())} prepared layout(s) for "
          f"{', '.join(opened.plan.candidates())}; scores identical on 256 generated rows"
          + (f" ({len(layouts['computed'])} result(s) computed at open)"
             if layouts["computed"] else "") + f"; {c_note}")
    return 0


def _c_library_check(path: Path, model, rows: np.ndarray) -> str | None:
    """What the C library makes of the file: a note for the report, or None where its raw
    scores differ from the model's."""
    try:
        c = capi.CModel(path)
    except FileNotFoundError:
        return "no C library in this build"
    except (ModelFormatError, RuntimeError) as exc:     # a model the library refuses
        return f"the C library does not score it ({exc})"
    with c:
        want = np.asarray(model.predict_raw(rows), np.float64).reshape(rows.shape[0], -1)
        if not np.array_equal(c.predict(rows, raw_score=True), want):
            return None
    return "the C library's identical too"


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
        description="Exact, fast scoring of LightGBM, XGBoost, CatBoost, scikit-learn and ONNX "
                    "tree ensembles.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("info", help="describe a model: source, objective, trees, leaves, depth; "
                                    "--system: this build and CPU")
    p.add_argument("model", nargs="?",
                   help="a model file (LightGBM, XGBoost, CatBoost, ONNX)")
    p.add_argument("--system", action="store_true",
                   help="the version, the build (compiler, OpenMP, instruction sets compiled "
                        "in) and the path each kernel takes on this CPU, for a bug report")
    p.add_argument("--algorithm", help="also prepare this algorithm and report its layout size")
    p.set_defaults(func=_info)

    p = sub.add_parser(
        "score", help="score a data file (or a folder of them) chunk by chunk",
        description="Score rows from LibSVM, CSV/TSV, Parquet, Arrow/Feather or .npy files "
                    "(text ones optionally .gz), in bounded memory, to CSV/TSV, .npy or "
                    "Parquet. Several files, a folder or a glob: one output file each in "
                    "the -o folder, on a Dask cluster with --dask or --scheduler.")
    p.add_argument("model")
    p.add_argument("data", nargs="+", help="data file(s), a folder or a quoted glob")
    p.add_argument("-o", "--output", help="output file (a folder for several inputs); "
                                          "default: standard output")
    p.add_argument("--format", choices=FORMATS, help="input format (default: by suffix, "
                                                     "else by content)")
    p.add_argument("--output-format", choices=OUTPUT_FORMATS,
                   help="output format (default: by the output's suffix; TSV otherwise)")
    p.add_argument("--raw", action="store_true", help="raw scores (margins)")
    p.add_argument("--leaf", action="store_true", help="exit leaf ids (the library's own ids)")
    p.add_argument("--contrib", action="store_true",
                   help="also each row's SHAP contributions: a column per feature, named "
                        "contrib_<feature>, then contrib_bias")
    p.add_argument("--algorithm", default=None, help=f"one of {registry.available()}")
    p.add_argument("--threads", type=int, default=1, help="scoring threads (0: all cores); "
                                                          "reading runs on one more")
    p.add_argument("--label-column", default=None,
                   help="CSV/TSV/Parquet: the label column (name or number), read past")
    p.add_argument("--query-column", default=None,
                   help="the query id column for --rank / --top (LibSVM: qid)")
    p.add_argument("--missing", type=float, default=None, metavar="V",
                   help="a value read as missing, as XGBoost's DMatrix(missing=V) reads it")
    p.add_argument("--margin-column", default=None, metavar="NAME",
                   help="a column of each row's margin (XGBoost's base_margin, LightGBM's "
                        "init_score), added where the model's library adds it")
    p.add_argument("--group", default=None, metavar="FILE",
                   help="the rows of each query for --rank / --top, one number a line, as "
                        "LightGBM's query files (default: DATA.query where it exists)")
    p.add_argument("--keep", default=None,
                   help="columns to carry to the output, comma-separated (names or numbers; "
                        "'row' is the input's row number; LibSVM: label, qid, row)")
    p.add_argument("--drop", default=None,
                   help="columns to read past, comma-separated (names or numbers)")
    p.add_argument("--input-header", choices=("auto", "yes", "no"), default="auto",
                   help="CSV/TSV: whether the first line names the columns (default: when "
                        "it is not all numbers)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--header", dest="header", action="store_true", default=None,
                   help="text output: a line of column names first (default for .csv/.tsv "
                        "files)")
    g.add_argument("--no-header", dest="header", action="store_false")
    p.add_argument("--rank", action="store_true",
                   help="add each row's rank within its query (1: best score)")
    p.add_argument("--top", type=int, default=None, metavar="K",
                   help="keep each query's best K rows, best first")
    p.add_argument("--on-error", choices=("raise", "skip"), default="raise",
                   help="a malformed line: stop with an error naming it (default), or skip "
                        "it and report the count")
    p.add_argument("--chunk-rows", type=int, default=None,
                   help="rows per chunk (default: about 16 MB of features)")
    p.add_argument("--dask", type=int, nargs="?", const=0, default=None, metavar="WORKERS",
                   help="score the files on a local Dask cluster (WORKERS processes; "
                        "default: one per core)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="score the files on the Dask cluster at ADDRESS")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bar, no summary line")
    p.set_defaults(func=_score)

    p = sub.add_parser("convert", help="write a model for another engine: an XGBoost model "
                                       "(legacy binary, UBJSON, JSON) as XGBoost JSON, which "
                                       "today's XGBoost loads, or any model as RankLib's text")
    p.add_argument("model", help="the model file")
    p.add_argument("output", help="the file to write")
    p.add_argument("--to", choices=("xgboost-json", *_EXPORTS),
                   default="xgboost-json",
                   help="the format written (default: xgboost-json)")
    p.add_argument("--check", default=None, metavar="ROWS",
                   help="score ROWS (a data file) with the export as RankLib scores it and "
                        "report the rows whose decisions or scores differ from the model's")
    p.set_defaults(func=_convert)

    p = sub.add_parser("compile", help="write a prepared model file (.qsm): the trees and "
                                       "every layout the automatic choice runs, which every "
                                       "scoring process maps instead of building")
    p.add_argument("model", help="the model file (any format quickscorer reads)")
    p.add_argument("-o", "--output", default=None,
                   help="the .qsm file to write (default: the model's name with .qsm)")
    p.set_defaults(func=_compile)

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
    except BrokenPipeError:
        # the reader of standard output went away (`quickscorer score ... | head`): stop
        # quietly, as command-line tools do, without a second error at exit
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except (ModelFormatError, InputError, OSError) as exc:
        print(f"quickscorer: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("quickscorer: interrupted (no output written)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
