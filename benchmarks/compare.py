"""Side-by-side comparison: this library's algorithms against the scorers people use instead.

In one process, on one model and one set of rows, with the same thread count for all, time
every engine and report microseconds per document (median of repeated runs after a warm-up),
the ratio to LightGBM and to this library's best, preparation time (load + compile), memory
of the prepared model, and whether each engine's scores agree with the source library.

Examples::

    python -m benchmarks.compare                                  # 1,000 trees x 64 leaves
    python -m benchmarks.compare --trees 100,1000,10000 --batch 10000 --plot
    python -m benchmarks.compare --model my_model.txt --batch 1,100,10000 --threads 2

The XGBoost engine cannot read a LightGBM model: it scores an XGBoost model of the same shape
(same data, lossguide trees with the same number of leaves), next to this library scoring that
same XGBoost model; the table says which model each row used.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import sys
from pathlib import Path

import numpy as np

from benchmarks import engines as E
from benchmarks import workloads as W
from quickscorer.bench import call_slices, interleaved, per_document

RESULTS = Path(__file__).resolve().parent / "results"


def machine() -> str:
    from quickscorer.bench import machine as described
    return described()


def time_engines(engines, X: np.ndarray, batch: int, repeat: int, min_rows: int,
                 pause: float = 0.0) -> list:
    """Median microseconds per document of each engine over ``repeat`` interleaved rounds
    after one warm-up (``quickscorer.bench.interleaved``); each round scores consecutive
    ``batch``-row slices until at least ``min_rows`` rows are done."""
    slices = call_slices(X, batch, min_rows)
    fns = [per_document(engine.predict, slices) for engine in engines]
    return [t.median * 1e6 for t in interleaved(fns, repeat, pause=pause)]


def time_calls(engines, slices, repeat: int, pause: float = 0.0) -> list:
    """Median microseconds per document of each engine scoring ``slices`` one call each,
    over ``repeat`` interleaved rounds after one warm-up."""
    fns = [per_document(engine.predict, slices) for engine in engines]
    return [t.median * 1e6 for t in interleaved(fns, repeat, pause=pause)]


def agreement(engine, X: np.ndarray, reference: np.ndarray) -> tuple[bool, str]:
    """Whether ``engine`` gives the source library's margins ``reference`` on ``X``; a peer
    that returns probabilities is compared with the margins turned the same way."""
    got = np.asarray(engine.predict(X), dtype=np.float64).reshape(reference.shape)
    ref = E.as_output(reference, engine.output)
    what = "" if engine.output == "margin" else f" ({engine.output})"
    if np.array_equal(got, ref):
        return True, "exact" + what
    diff = float(np.max(np.abs(got - ref)))
    return False, f"max diff {diff:.2g}{what}"


def build_engines(wl, names, n_threads, algorithms, dtypes, progress):
    import quickscorer
    built, skipped = [], []
    todo = []
    for name in names:
        if name == "quickscorer":
            scoring = set(quickscorer.load(wl.lgb_path).supported_algorithms())
            todo += [("ours", wl.lgb_path, a, dt) for a in algorithms if a in scoring
                     for dt in dtypes]
            if wl.xgb_path is not None:  # what predict() picks for big batches, on the twin
                todo.append(("ours-xgb", wl.xgb_path, "vqs", np.float32))
        elif name == "xgboost":
            if wl.xgb_path is not None:
                todo.append(("xgboost", wl.xgb_path, None, None))
        else:
            todo.append((name, wl.lgb_path, None, None))
    bar = progress(len(todo), f"prepare {wl.name}")
    for kind, path, alg, dt in todo:
        try:
            if kind == "ours":
                built.append(E.QuickScorer(path, n_threads, alg, dt, "lightgbm"))
            elif kind == "ours-xgb":
                built.append(E.QuickScorer(path, n_threads, alg, dt, "xgboost"))
            else:
                built.append(E.PEERS[kind](path, n_threads))
        except E.Missing as exc:
            skipped.append(f"{kind}: {exc}")
        bar.update(1)
    bar.close()
    return built, skipped


def run(args) -> str:
    import quickscorer
    algorithms = (args.algorithms.split(",") if args.algorithms
                  else quickscorer.available_algorithms())
    dtypes = [np.float64] + ([np.float32] if args.float32 else [])
    names = args.engines.split(",")
    trees_list = [int(t) for t in str(args.trees).split(",")]
    batches = [int(b) for b in str(args.batch).split(",")]

    rows_md = []
    plot_points: dict[str, list[tuple[int, float]]] = {}
    notes = []
    for n_trees in trees_list:
        if args.model:
            import quickscorer
            from quickscorer.bench import generated_rows
            from quickscorer.inputs.files import read_rows
            ens = quickscorer.load_ensemble(args.model)
            if args.data:
                fill = np.nan if ens.family == "xgboost" else 0.0
                rows = np.ascontiguousarray(read_rows(args.data, ens.n_features, fill),
                                            dtype=np.float64)
            else:                     # rows with the model's own number of features
                rows = generated_rows(max(10_000, max(batches) * 2), ens.n_features)
            wl = W.Workload(Path(args.model).stem, Path(args.model),
                            Path(args.xgb_model) if args.xgb_model else None,
                            rows, n_trees, 0)
        elif args.workload == "ltr":
            wl = W.ltr(n_trees, args.leaves, n_rows=max(10_000, max(batches)),
                       xgboost="xgboost" in names)
        elif args.workload == "sweep":
            wl = W.sweep(n_trees, args.leaves, n_rows=max(10_000, max(batches)))
        else:
            wl = W.shared(args.workload, n_trees, args.leaves)
        built, skipped = build_engines(wl, names, args.threads, algorithms, dtypes,
                                       W._progress)
        notes += [f"{wl.name}: skipped {s}" for s in skipped]
        X = wl.X
        check = X[: min(2000, X.shape[0])]
        import lightgbm as lgb
        ref_lgb = lgb.Booster(model_file=str(wl.lgb_path)).predict(check, raw_score=True)
        ref_xgb = None
        if wl.xgb_path is not None:
            import xgboost as xgb
            ref_xgb = xgb.Booster(model_file=str(wl.xgb_path)).predict(
                xgb.DMatrix(check, missing=np.nan), output_margin=True)
        agrees = [agreement(eng, check, ref_xgb if eng.source == "xgboost" else ref_lgb)[1]
                  for eng in built]
        for batch in batches:
            times = time_engines(built, X, batch, args.repeat, args.min_rows)
            results = [(eng, us, agree, *eng.nbytes())
                       for eng, us, agree in zip(built, times, agrees)]
            lgb_us = next((r[1] for r in results if r[0].name == "lightgbm"), None)
            ours_best = min((r[1] for r in results if isinstance(r[0], E.QuickScorer)
                             and r[0].source == "lightgbm"), default=None)
            for eng, us, agree, mem, how in sorted(results, key=lambda r: r[1]):
                rows_md.append(
                    f"| {wl.name} | {batch} | {eng.name} | {eng.source} | {us:.3f} | "
                    f"{(lgb_us / us) if lgb_us else float('nan'):.2f}x | "
                    f"{(us / ours_best) if ours_best else float('nan'):.2f} | "
                    f"{eng.prep_seconds * 1e3:.0f} | {mem / 1024:.0f} KiB ({how}) | {agree} |")
                if batch == max(batches):
                    plot_points.setdefault(eng.name + ("" if eng.source == "lightgbm"
                                                       else " (xgb model)"), []).append(
                        (n_trees, us))

    header = (f"Machine: {machine()}\n"
              f"Command: python -m benchmarks.compare {' '.join(sys.argv[1:])}\n"
              f"Threads per engine: {args.threads}; median of {args.repeat} runs after a "
              f"warm-up; at least {args.min_rows} rows per run\n\n"
              "| workload | batch | engine | model | us/doc | speed-up vs lightgbm | "
              "time / our best | prepare ms | prepared model | scores vs source library |\n"
              "| --- | ---: | --- | --- | ---: | ---: | ---: | ---: | --- | --- |\n")
    table = header + "\n".join(rows_md) + "\n"
    if notes:
        table += "\n" + "\n".join(f"- {n}" for n in notes) + "\n"
    RESULTS.mkdir(parents=True, exist_ok=True)
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = Path(args.out) if args.out else RESULTS / f"compare-{stamp}.md"
    out.write_text(table)
    if args.plot and len(trees_list) > 1:
        plot(plot_points, out.with_suffix(".png"), max(batches), args.threads)
    return table + f"\n(written to {out})\n"


def plot(points, path: Path, batch: int, threads: int) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(8, 5))
    for name, pts in sorted(points.items()):
        pts = sorted(pts)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("trees")
    ax.set_ylabel("microseconds per document")
    ax.set_title(f"batch {batch}, {threads} thread(s)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workload", default="ltr",
                   help="ltr (generated MSLR-shaped), sweep (full trees for a tree sweep) or "
                        "one of " + ", ".join(W.SHARED_TASKS))
    p.add_argument("--trees", default="1000", help="comma-separated, e.g. 100,1000,10000")
    p.add_argument("--leaves", type=int, default=64)
    p.add_argument("--batch", default="10000", help="rows per call, comma-separated")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--min-rows", type=int, default=10_000,
                   help="rows scored per timed run (small batches repeat the call)")
    p.add_argument("--engines", default="quickscorer," + ",".join(E.PEERS))
    p.add_argument("--algorithms", default="",
                   help="this library's algorithms (default: all that can score the model)")
    p.add_argument("--float32", action="store_true", help="also time float32 input")
    p.add_argument("--model", help="a LightGBM model file instead of a generated one")
    p.add_argument("--data", help="with --model: rows to score (LibSVM, CSV/TSV or .npy); "
                                  "default: generated rows with the model's features")
    p.add_argument("--xgb-model", help="with --model: an XGBoost twin to time xgboost on")
    p.add_argument("--plot", action="store_true", help="PNG of time per document vs trees")
    p.add_argument("--out", help="Markdown file to write (default results/compare-*.md)")
    args = p.parse_args(argv)
    print(run(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
