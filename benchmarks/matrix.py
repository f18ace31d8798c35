"""The speed matrix: this library against the scorers people use instead, on model shapes and
data this project's other benchmarks do not flatter.

Workloads (``--shapes``; models trained once and cached in ``cache/``):

* ``full-<data>-<trees>x<leaves>``: LightGBM regression whose trees are all full (a noisy
  target), on ``uniform`` rows (values in [0, 1), 30% exact zeros), ``missing`` rows (the
  same with 10% NaN: every node learns a default side) or ``heavy`` rows
  (log-normal counts and reals), 136 features; after the leaves, ``-d<depth>`` limits the
  depth (``full-uniform-1000x300-d10``: trees of 300 leaves in 10 levels, far from
  complete), ``-m<rows>`` sets ``min_data_in_leaf`` (``full-heavy-1000x16-m200``: partial
  trees), ``-f<features>`` the columns and ``-b<bins>`` ``max_bin``
  (``full-uniform-1000x31-f20-b1023``: hundreds of thresholds a feature);
* ``xgb-depth<d>-<data>-<trees>[-exact|-approx][-f<features>]``: XGBoost grown depth-wise
  to depth d (6 is its default) by its hist method (or the one named), same data (or that
  many columns);
* ``xgb-leaves<l>-<data>-<trees>``: XGBoost grown leaf-wise (lossguide) to l leaves a tree,
  no depth limit: partial deep trees, same data;
* ``ltr-1000x64``: the partial trees of the lambdarank model of ``compare.py``;
* ``cat<c>x<k>-<trees>x<leaves>``: LightGBM regression with categorical splits, ``c``
  categorical columns of ``k`` categories among 136 (``cat2x8-500x64``: 3% of the nodes
  categorical; ``cat8x40-500x64``: 90%);
* ``cb-d<depth>-<data>-<trees>[-depthwise][-mc<classes>]``: CatBoost regression (or
  ``MultiClass`` of that many classes), oblivious trees of that depth (or ``Depthwise``
  trees), against CatBoost's own ``predict`` and ONNX Runtime (its ONNX export);
* ``hgb-<data>-<trees>x<leaves>``: scikit-learn ``HistGradientBoostingRegressor``, against
  its ``predict`` and ONNX Runtime (skl2onnx);
* ``shared-<task>-<iterations>x<leaves>``: LightGBM on one of the shared example datasets
  (``rank``, ``binary``, ``multiclass``: 5 trees an iteration, ``regression``), scoring its
  test rows; needs ``../shared`` beside the clone.

Engines, timed interleaved in one process on the same rows with the same thread count: this
library's default ``predict`` (and the same with ``QUICKSCORER_ISA=avx2``, what an AVX2-only
CPU gets) and its fast kernels, LightGBM, XGBoost (on XGBoost models), lleaves, TL2cgen,
ONNX Runtime and Intel oneDAL (on LightGBM and XGBoost models). Compiled peers are cached in
``cache/compiled/``; ``--compile-limit`` skips compiling models with more nodes than it,
whose compilation takes too long here, and says so.

    python -m benchmarks.matrix                       # the default matrix (long: trains, compiles)
    python -m benchmarks.matrix --shapes full-uniform-1000x64 --batch 100,10000 --threads 1,2
    python -m benchmarks.matrix --shapes ltr-1000x64 --batch queries --threads 1

``--batch queries`` scores a call per query, the queries sized as the shared ranking data's
(1 to 27 documents, mean 15), as a ranking service does.

Writes a Markdown table to ``results/matrix-*.md``: microseconds per document, each engine
against the fastest peer and against LightGBM, and whether its scores equal the source
library's.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import re
import sys
from pathlib import Path

import numpy as np

from benchmarks import compare as C
from benchmarks import engines as E
from benchmarks import workloads as W

DEFAULT_SHAPES = ",".join([
    "full-uniform-1000x8", "full-uniform-1000x31", "full-uniform-1000x64",
    "full-uniform-1000x255", "full-heavy-1000x31", "full-heavy-1000x64",
    "xgb-depth6-uniform-1000", "xgb-depth6-heavy-1000", "ltr-1000x64",
    "full-missing-1000x64", "xgb-depth6-missing-1000",
    # deep XGBoost trees: depth 10 (481 leaves a tree, more than rapidscorer's scans take:
    # its level path alone scores them) and
    # leaf-wise to 255 leaves
    "xgb-depth10-uniform-1000", "xgb-leaves255-uniform-1000",
])
OURS = ("quickscorer",)


def workload(shape: str, n_rows: int) -> W.Workload:
    m = re.fullmatch(r"full-([a-z]+)-(\d+)x(\d+)(?:-d(\d+))?(?:-m(\d+))?(?:-f(\d+))?"
                     r"(?:-b(\d+))?", shape)
    if m:
        opt = [int(g) if g else None for g in m.groups()[3:]]
        return W.full(int(m.group(2)), int(m.group(3)), m.group(1), n_rows, opt[0],
                      opt[1] or 1, opt[2] or 136, opt[3] or 255)
    m = re.fullmatch(r"xgb-depth(\d+)-([a-z]+)-(\d+)(?:-(exact|approx))?(?:-f(\d+))?", shape)
    if m:
        return W.xgb_depth(int(m.group(3)), int(m.group(1)), m.group(2), n_rows,
                           m.group(4) or "hist", int(m.group(5) or 136))
    m = re.fullmatch(r"xgb-leaves(\d+)-([a-z]+)-(\d+)", shape)
    if m:
        return W.xgb_leaves(int(m.group(3)), int(m.group(1)), m.group(2), n_rows)
    m = re.fullmatch(r"cat(\d+)x(\d+)-(\d+)x(\d+)", shape)
    if m:
        return W.categorical(int(m.group(3)), int(m.group(4)), int(m.group(1)),
                             int(m.group(2)), n_rows)
    m = re.fullmatch(r"cb-d(\d+)-([a-z]+)-(\d+)(?:-(depthwise))?(?:-mc(\d+))?", shape)
    if m:
        return W.catboost_model(int(m.group(3)), int(m.group(1)), m.group(2), n_rows,
                                "Depthwise" if m.group(4) else "SymmetricTree",
                                int(m.group(5) or 0))
    m = re.fullmatch(r"hgb-([a-z]+)-(\d+)x(\d+)", shape)
    if m:
        return W.hist_gb(int(m.group(2)), int(m.group(3)), m.group(1), n_rows)
    m = re.fullmatch(r"ltr-(\d+)x(\d+)", shape)
    if m:
        return W.ltr(int(m.group(1)), int(m.group(2)), n_rows, xgboost=False)
    m = re.fullmatch(r"(shared-[a-z]+)-(\d+)x(\d+)", shape)
    if m and m.group(1) in W.SHARED_TASKS:
        return W.shared(m.group(1), int(m.group(2)), int(m.group(3)), xgboost=False)
    raise SystemExit(f"unknown shape {shape!r}")


def cpu_flags() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "?"
    flags = set(re.search(r"^flags\s*:(.*)$", text, re.M).group(1).split())
    return ", ".join(f for f in ("avx2", "avx512f", "avx512bw") if f in flags) or "no AVX2"


def build(wl: W.Workload, n_threads: int, peers: list[str], algorithms: list[str],
          compile_limit: int, notes: list[str]) -> list[E.Engine]:
    src = wl.source or ("xgboost" if wl.xgb_path is not None and wl.xgb_path == wl.lgb_path
                        else "lightgbm")
    built = [E.QuickScorer(wl.lgb_path, n_threads, None, np.float64, src),
             E.QuickScorer(wl.lgb_path, n_threads, None, np.float64, src, isa="avx2")]
    for a in algorithms:
        try:
            built.append(E.QuickScorer(wl.lgb_path, n_threads, a, np.float64, src))
        except ValueError as exc:            # e.g. rapidscorer on a model it cannot score
            notes.append(f"{wl.name}: quickscorer[{a}] not run: {exc}")
    nodes = wl.n_trees * (wl.n_leaves - 1)
    if src in E.OTHER_PEERS:                 # CatBoost, scikit-learn: their own peers
        for name in peers + [p for p in E.OTHER_PEERS[src] if p not in peers]:
            if name not in E.OTHER_PEERS[src]:
                continue
            try:
                built.append(E.OTHER_PEERS[src][name](wl.lgb_path, n_threads))
            except E.Missing as exc:
                notes.append(f"{wl.name}: {name} not run: {exc}")
        peers = []
    for name in peers:
        if src == "xgboost" and name not in ("xgboost", "onedal"):
            continue                         # the other peers here read LightGBM models
        if src == "lightgbm" and name == "xgboost":
            continue
        if name in ("lleaves", "tl2cgen") and nodes > compile_limit:
            cached = E.compiled_path(wl.lgb_path, ".lleaves.o" if name == "lleaves"
                                     else ".tl2cgen.so").exists()
            if not cached:
                notes.append(f"{wl.name}: {name} not run: compiling {nodes} nodes is over "
                             f"--compile-limit {compile_limit}")
                continue
        try:
            built.append(E.PEERS[name](wl.lgb_path, n_threads))
        except E.Missing as exc:
            notes.append(f"{wl.name}: {name} not run: {exc}")
    for eng in built:
        eng.source = src
    return built


def reference(wl: W.Workload, X: np.ndarray) -> np.ndarray:
    """The source library's raw scores of the rows X. Kept beside the model
    (``<model>.reference.npz``, with a digest of X), so that a machine without that library
    checks against the scores an earlier run computed with it."""
    import hashlib
    saved = wl.lgb_path.with_name(wl.lgb_path.name + ".reference.npz")
    digest = hashlib.sha1(np.ascontiguousarray(X).tobytes()).hexdigest()
    try:
        ref = _library_scores(wl, X)
    except ImportError as exc:
        if saved.exists():
            with np.load(saved) as z:
                if str(z["rows"]) == digest:
                    return z["scores"]
        raise W.Unavailable(f"no oracle: {exc}, and no saved scores of these rows (rows "
                            f"drawn through numpy's exp differ between CPUs)") from None
    np.savez(saved, rows=np.array(digest), scores=ref)
    return ref


def _library_scores(wl: W.Workload, X: np.ndarray) -> np.ndarray:
    if wl.source == "catboost":
        import catboost as cb
        model = cb.CatBoost()
        model.load_model(str(wl.lgb_path.with_suffix(".cbm")))
        return model.predict(X, prediction_type="RawFormulaVal")
    if wl.source == "sklearn":
        import pickle
        return pickle.loads(wl.lgb_path.read_bytes()).predict(X)
    if wl.xgb_path is not None and wl.xgb_path == wl.lgb_path:
        import xgboost as xgb
        return xgb.Booster(model_file=str(wl.xgb_path)).predict(
            xgb.DMatrix(X, missing=np.nan), output_margin=True)
    import lightgbm as lgb
    return lgb.Booster(model_file=str(wl.lgb_path)).predict(X, raw_score=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", default=DEFAULT_SHAPES)
    p.add_argument("--batch", default="1,100,10000")
    p.add_argument("--threads", default="1,2")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--min-rows", type=int, default=5000,
                   help="rows per timed run (batch 1: a fifth as many one-row calls)")
    p.add_argument("--peers", default="lightgbm,xgboost,lleaves,tl2cgen,onnxruntime,onedal")
    p.add_argument("--algorithms", default="rapidscorer,vqs,quickscorer")
    p.add_argument("--compile-limit", type=int, default=70_000,
                   help="compile lleaves / TL2cgen only for models of at most this many nodes")
    p.add_argument("--prepare-only", action="store_true",
                   help="train the models and compile the peers into the cache, time nothing")
    p.add_argument("--out")
    args = p.parse_args(argv)
    batches = [b if b == "queries" else int(b) for b in args.batch.split(",")]
    sizes = W.query_sizes() if "queries" in batches else None
    threads = [int(t) for t in args.threads.split(",")]
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = Path(args.out) if args.out else C.RESULTS / f"matrix-{stamp}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"Machine: {C.machine()}; instruction sets: {cpu_flags()}",
             "Command: python -m benchmarks.matrix "
             + " ".join(sys.argv[1:] if argv is None else argv),
             f"Median of {args.repeat} interleaved runs after a warm-up, at least "
             f"{args.min_rows} rows per run ({args.min_rows // 5} calls at batch 1).", "",
             "| workload | threads | batch | engine | us/doc | vs fastest peer | vs lightgbm "
             "| scores vs source library |",
             "| --- | ---: | ---: | --- | ---: | ---: | ---: | --- |"]
    notes: list[str] = []
    out.write_text("\n".join(lines) + "\n")
    for shape in args.shapes.split(","):
        try:
            wl = workload(shape, max([10_000] + [b for b in batches if b != "queries"]))
        except W.Unavailable as exc:        # the shared data is absent from a user's clone
            notes.append(f"{shape}: not run: {exc}")
            print(f"{shape}: not run: {exc}", flush=True)
            continue
        if args.prepare_only:
            build(wl, 1, args.peers.split(","), [], args.compile_limit, notes)
            print(f"prepared {wl.name}", flush=True)
            continue
        check = wl.X[:2000]
        try:
            ref = reference(wl, check)
        except W.Unavailable as exc:
            notes.append(f"{wl.name}: not run: {exc}")
            print(f"{wl.name}: not run: {exc}", flush=True)
            continue
        for n_threads in threads:
            engines = build(wl, n_threads, args.peers.split(","),
                            args.algorithms.split(","), args.compile_limit, notes)
            agree = [C.agreement(e, check, ref)[1] for e in engines]
            for batch in batches:
                # with several threads, idle spinning workers of the engine timed before would
                # take a core from the next one: a pause lets them sleep (measured: without
                # it, our 2-thread runs looked no faster than 1-thread ones in this loop,
                # while alone they ran 1.95x faster)
                if batch == "queries":
                    # a call per query, sized as the shared ranking data's queries
                    slices = W.query_slices(wl.X, sizes, args.min_rows // 2)
                    times = C.time_calls(engines, slices, args.repeat,
                                         pause=0.3 if n_threads > 1 else 0.0)
                else:
                    times = C.time_engines(engines, wl.X, batch, args.repeat,
                                           max(args.min_rows // (5 if batch == 1 else 1),
                                               batch),
                                           pause=0.3 if n_threads > 1 else 0.0)
                peers = [t for e, t in zip(engines, times) if not isinstance(e, E.QuickScorer)]
                fastest = min(peers) if peers else float("nan")
                lgb = next((t for e, t in zip(engines, times) if e.name == "lightgbm"),
                           float("nan"))
                for e, t, a in sorted(zip(engines, times, agree), key=lambda r: r[1]):
                    vs_lgb = "n/a" if np.isnan(lgb) else f"{lgb / t:.2f}x"
                    lines.append(f"| {wl.name} | {n_threads} | {batch} | {e.name} | {t:.2f} | "
                                 f"{fastest / t:.2f}x | {vs_lgb} | {a} |")
                out.write_text("\n".join(lines + [""] + [f"- {n}" for n in notes]) + "\n")
                print(f"{wl.name} threads={n_threads} batch={batch}: " + ", ".join(
                    f"{e.name} {t:.2f}" for e, t in sorted(zip(engines, times),
                                                           key=lambda r: r[1])), flush=True)
    out.write_text("\n".join(lines + [""] + [f"- {n}" for n in notes]) + "\n")
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
