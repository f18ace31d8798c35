"""Multi-core scaling: one call spread over 1 to N threads, and N callers sharing one loaded
model, this library against its peers on the speed matrix's models.

Two ways a service uses the cores, both timed here with the same engines as ``matrix.py``:

* ``threads``: one caller scores ``--batch`` rows with ``n_threads`` = 1, 2, 4, ... (each
  engine's own thread count: OpenMP here, LightGBM's ``num_threads``, XGBoost's
  ``nthread``, lleaves' ``n_jobs``, ONNX Runtime's intra-op threads, TL2cgen's ``nthread``);
* ``callers``: ``--callers`` Python threads share one loaded model (each engine built with
  1 thread) and each scores ``--caller-batch`` rows per call, as the request threads of a
  scoring service do. The figure is wall time over all documents scored, so it only drops
  with more callers where the engine releases the GIL and its calls do not serialise.

    python -m benchmarks.scaling --shapes full-uniform-1000x64 --threads 1,2,4,8,16 --callers 16
    python -m benchmarks.scaling --plot-from reports/scaling-table.md   # redraw a saved table

Microseconds per document (wall time / documents; lower is better), each engine's speed-up
over its own 1-thread figure, and each engine against the fastest peer of the same row.
Rows are interleaved as in ``matrix.py``; each timed run starts after a pause that lets the
worker threads of the engine timed before go idle. TL2cgen is left out of ``callers`` (its
``Predictor`` owns one pool of workers; concurrent calls on it are not documented as safe).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import os
import re
import sys
import threading
from pathlib import Path

import numpy as np

from benchmarks import compare as C
from benchmarks import engines as E
from benchmarks import matrix as M
from benchmarks.plots import pyplot, save_png
from quickscorer.bench import interleaved


def time_callers(engines, X: np.ndarray, n_callers: int, batch: int, calls: int,
                 repeat: int, pause: float) -> list[float]:
    """Median microseconds of wall time per document, ``n_callers`` threads each making
    ``calls`` calls of ``batch`` rows on the same engine object, started together."""
    n = X.shape[0]
    slices = [[np.ascontiguousarray(X[((c * calls + k) * batch) % max(1, n - batch + 1):]
                                    [:batch]) for k in range(calls)] for c in range(n_callers)]
    errors: list[BaseException] = []

    def one(engine, mine, barrier):
        try:
            barrier.wait()
            for s in mine:
                engine.predict(s)
        except BaseException as exc:          # reported after the run, never swallowed
            errors.append(exc)

    for engine in engines:                  # warm-up: every caller once
        engine.predict(slices[0][0])

    def callers(engine):
        def run() -> int:
            barrier = threading.Barrier(n_callers)
            workers = [threading.Thread(target=one, args=(engine, slices[c], barrier))
                       for c in range(n_callers)]
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            if errors:
                raise RuntimeError(f"{engine.name} failed under {n_callers} callers: "
                                   f"{errors[0]!r}")
            return n_callers * calls * batch
        return run

    return [t.median * 1e6 for t in interleaved([callers(e) for e in engines], repeat,
                                                  warmup=False, pause=pause)]


def rows_for(lines, shape, mode, engines, times, base):
    peers = [t for e, t in zip(engines, times) if not isinstance(e, E.QuickScorer)]
    fastest = min(peers) if peers else float("nan")
    for e, t in sorted(zip(engines, times), key=lambda r: r[1]):
        b = base.get(e.name)
        speedup = f"{b / t:.2f}x" if b else "-"
        lines.append(f"| {shape} | {mode} | {e.name} | {t:.2f} | {speedup} | "
                     f"{fastest / t:.2f}x |")
    print(f"{shape} {mode}: " + ", ".join(f"{e.name} {t:.2f}" for e, t in
                                          sorted(zip(engines, times), key=lambda r: r[1])),
          flush=True)


def read_table(path: Path) -> list[tuple[str, str, str, float]]:
    """(workload, mode, engine, us/doc) of each row of a table this script wrote."""
    rows = []
    for line in Path(path).read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and cells[0] not in ("workload", "---"):
            try:
                rows.append((cells[0], cells[1], cells[2], float(cells[3])))
            except ValueError:
                continue
    return rows


def plot(rows, path: Path) -> bool:
    """A PNG beside the table: for each workload, microseconds per document against threads
    (one call spread over them) and against concurrent callers, one line an engine, both
    axes logarithmic. False where matplotlib (the bench extra) is not installed."""
    plt = pyplot()
    if plt is None:
        return False
    shapes = list(dict.fromkeys(r[0] for r in rows))
    fig, axes = plt.subplots(len(shapes), 2, figsize=(11, 4.2 * len(shapes)), squeeze=False)
    for row_axes, shape in zip(axes, shapes):
        for ax, kind in zip(row_axes, ("threads", "callers")):
            lines: dict[str, dict[int, float]] = {}
            for w, mode, engine, t in rows:
                m = re.fullmatch(kind + r"=(\d+)(?: \(batch \d+\))?", mode)
                if w == shape and m:
                    # callers=1 appears once per caller count: keep the first
                    lines.setdefault(engine, {}).setdefault(int(m.group(1)), t)
            for engine, pts in sorted(lines.items()):
                xs = sorted(pts)
                ax.plot(xs, [pts[x] for x in xs], marker="o", label=engine)
            ax.set_xscale("log", base=2)
            ticks = sorted({x for pts in lines.values() for x in pts})
            ax.set_xticks(ticks, [str(x) for x in ticks])
            ax.minorticks_off()
            ax.set_yscale("log")
            ax.set_xlabel("threads, one call" if kind == "threads"
                          else "callers sharing one model, 1 thread each")
            ax.set_ylabel("microseconds per document (wall)")
            ax.set_title(f"{shape}: {kind}")
            ax.grid(True, which="both", alpha=0.3)
            if lines:
                ax.legend(fontsize=7)
    fig.tight_layout()
    save_png(fig, path, dpi=110)
    return True


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", default="full-uniform-1000x64,xgb-depth6-uniform-1000")
    p.add_argument("--threads", default="1,2,4,8,16")
    p.add_argument("--batch", type=int, default=10_000, help="rows per call, threads mode")
    p.add_argument("--callers", default="16", help="caller counts, comma-separated; 0: none")
    p.add_argument("--caller-batch", type=int, default=100, help="rows per call, callers mode")
    p.add_argument("--caller-calls", type=int, default=50, help="calls per caller per run")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--min-rows", type=int, default=20_000, help="rows per timed run, threads mode")
    p.add_argument("--peers", default="lightgbm,xgboost,lleaves,tl2cgen,onnxruntime,onedal")
    p.add_argument("--isa", default="",
                   help="also time our default with this instruction set forced (avx2)")
    p.add_argument("--compile-limit", type=int, default=70_000)
    p.add_argument("--out")
    p.add_argument("--plot-from", help="draw the PNG of a table this script wrote (beside it) "
                                       "and exit")
    args = p.parse_args(argv)
    if args.plot_from:
        png = Path(args.plot_from).with_suffix(".png")
        if not plot(read_table(Path(args.plot_from)), png):
            p.error("the plot needs matplotlib (pip install -e '.[bench]')")
        print(f"written to {png}")
        return 0
    threads = [int(t) for t in args.threads.split(",")]
    callers = [int(c) for c in args.callers.split(",") if int(c) > 0]
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = Path(args.out) if args.out else C.RESULTS / f"scaling-{stamp}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"Machine: {C.machine()}; {os.cpu_count()} logical CPUs; instruction sets: "
             f"{M.cpu_flags()}",
             f"Command: python -m benchmarks.scaling "
             f"{' '.join(sys.argv[1:] if argv is None else argv)}",
             f"Median of {args.repeat} interleaved runs. threads=k: one caller, {args.batch} "
             f"rows per call, k threads per call; callers=c: c Python threads sharing one "
             f"model (1 thread each), {args.caller_batch} rows per call, {args.caller_calls} "
             f"calls each.", "",
             "| workload | mode | engine | us/doc (wall) | vs itself at 1 thread "
             "| vs fastest peer |", "| --- | --- | --- | ---: | ---: | ---: |"]
    notes: list[str] = []
    peers = args.peers.split(",")

    def build(wl, k, peer_names):
        built = M.build(wl, k, peer_names, [], args.compile_limit, notes)
        if not args.isa:
            built = [e for e in built if not (isinstance(e, E.QuickScorer) and e.isa)]
        return built

    for shape in args.shapes.split(","):
        wl = M.workload(shape, max(10_000, args.batch))
        base: dict[str, float] = {}
        for k in threads:
            engines = build(wl, k, peers)
            times = C.time_engines(engines, wl.X, args.batch, args.repeat,
                                   max(args.min_rows, args.batch), pause=0.3)
            if k == threads[0]:
                base = {e.name: t for e, t in zip(engines, times)} if k == 1 else {}
            rows_for(lines, wl.name, f"threads={k}", engines, times, base)
            del engines
            out.write_text("\n".join(lines + [""] + [f"- {n}" for n in notes]) + "\n")
        for c in callers:
            engines = build(wl, 1, [q for q in peers if q != "tl2cgen"])
            times = time_callers(engines, wl.X, c, args.caller_batch, args.caller_calls,
                                 args.repeat, pause=0.3)
            # the 1-thread figure at the callers' batch size: one caller alone
            one = C.time_engines(engines, wl.X, args.caller_batch, args.repeat,
                                 args.caller_batch * args.caller_calls, pause=0.3)
            alone = {e.name: t for e, t in zip(engines, one)}
            rows_for(lines, wl.name, f"callers=1 (batch {args.caller_batch})", engines, one,
                     alone)
            rows_for(lines, wl.name, f"callers={c} (batch {args.caller_batch})", engines,
                     times, alone)
            del engines
            out.write_text("\n".join(lines + [""] + [f"- {n}" for n in notes]) + "\n")
    if plot(read_table(out), out.with_suffix(".png")):
        print(f"plot written to {out.with_suffix('.png')}")
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
