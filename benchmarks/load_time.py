"""Time to load a model and score its first row, ours against the training library's own.

    python -m benchmarks.load_time                       # 100 / 1,000 / 20,000 trees, both
    python -m benchmarks.load_time --trees 1000 --repeat 7 --libraries xgboost

In one process, interleaved, ``--repeat`` rounds, each a load and a first one-row call:
``quickscorer.load(path)`` (read and validate; the call builds its layout), the same with
``prepare=("auto",)`` (every layout the default ``predict`` may pick built at load), the
prepared model file (``.qsm``, written once by ``Model.save`` before the rounds) opened with
``quickscorer.load`` and by the C library (``qs_open`` and ``qs_predict``, through
``quickscorer.capi`` in this process, and in a process of its own for each round:
``benchmarks/open_once.c``, built here, timed from ``qs_open`` to the score, as a C service
starts), and ``lightgbm.Booster(model_file=...)`` / ``xgboost.Booster(
model_file=...)`` with their ``predict``. Milliseconds, minimum / median, and the ratios of our
minimums to the library's.

``--page-cache`` says what state of the file's pages in the page cache the rounds see:
``written`` (as ``Model.save`` left them), ``reread`` (dropped once before the rounds, so that
the first open reads them back through the library's own mapping, as after a restart or an
eviction) or ``dropped`` (dropped before every round: each open reads the file in). The time
to map cached pages depends on how they came in (docs/model-file.md, "The page cache"). Dropping
is Linux's ``posix_fadvise(POSIX_FADV_DONTNEED)``, which leaves pages that a live mapping
holds.

Models: full 64-leaf LightGBM regression trees (``workloads.full``) and XGBoost depth-6 trees
(``workloads.xgb_depth6``), 1,000 trees trained once; 100 trees are the first 100, 20,000 the
1,000 repeated 20 times (valid models both libraries load; timing does not depend on the
values).
"""
from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.workloads import prefix, repeated, xgb_variant
from quickscorer import capi
from quickscorer.bench import Measured, interleaved

HERE = Path(__file__).resolve().parent



def open_once_command(out: Path) -> list[str]:
    """benchmarks/open_once.c built against the installed libquickscorer: the command that
    opens a file in a process of its own (its path appended)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise SystemExit("benchmarks.load_time: no C compiler to build open_once.c with")
    exe = out / "open_once"
    subprocess.run([cc, "-O2", *capi.cflags().split(), str(HERE / "open_once.c"), "-o",
                    str(exe), *capi.libs().split()], check=True)
    return [str(exe)]


def drop_cached(path: Path) -> None:
    """Drop the page cache's clean pages of ``path`` (those no live mapping holds)."""
    gc.collect()                          # the models of earlier rounds, and their mappings
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trees", default="100,1000,20000")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--libraries", default="lightgbm,xgboost")
    p.add_argument("--page-cache", choices=("written", "reread", "dropped"), default="written",
                   help="the state of the .qsm's pages the rounds see (above)")
    args = p.parse_args(argv)
    if args.page_cache != "written" and not hasattr(os, "posix_fadvise"):
        raise SystemExit("benchmarks.load_time: --page-cache needs posix_fadvise (Linux)")
    import quickscorer
    from benchmarks import workloads as W
    from quickscorer.bench import machine

    print(machine())
    print(f"page cache: {args.page_cache}")
    print("| model | library | `load` | `prepare=auto` | `.qsm` | `.qsm` by `qs_open` | "
          "`.qsm` by `qs_open`, a process of its own | library's load | "
          "ours / library (`load`, `.qsm`) |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    tmp = tempfile.TemporaryDirectory()
    open_once = open_once_command(Path(tmp.name))
    for lib in args.libraries.split(","):
        if lib == "lightgbm":
            import lightgbm
            base = Path(W.full(1000, 64).lgb_path)
            def variant(n, d, base=base):
                return prefix(base, n, d) if n < 1000 else repeated(base, n // 1000, d)

            def native(path, row):
                return lightgbm.Booster(model_file=str(path)).predict(row)
            shape, ext = "x 64 leaves", ".txt"
        else:
            import xgboost
            base = Path(W.xgb_depth6(1000).xgb_path)
            def variant(n, d, base=base):
                return xgb_variant(base, n, d)

            def native(path, row):
                return xgboost.Booster(model_file=str(path)).inplace_predict(row)
            shape, ext = "depth 6", ".json"
        for n in [int(v) for v in args.trees.split(",")]:
            path = base if n == 1000 else variant(n, base.parent / f"load_{lib}_{n}{ext}")
            qsm = quickscorer.load(path).save(base.parent / f"load_{lib}_{n}.qsm")
            row = np.zeros((1, quickscorer.load(qsm).n_features))
            if args.page_cache == "reread":
                drop_cached(qsm)
                quickscorer.load(qsm)                   # reads the pages in
            runs = {"load": lambda: quickscorer.load(path).predict(row),
                    "auto": lambda: quickscorer.load(path, prepare=("auto",)).predict(row),
                    "qsm": lambda: quickscorer.load(qsm).predict(row),
                    "c": lambda: capi.CModel(qsm).predict(row),
                    "fresh": lambda: Measured(float(subprocess.run(
                        [*open_once, str(qsm)], capture_output=True, text=True,
                        check=True).stdout)),
                    "native": lambda: native(path, row)}
            reps = max(2, args.repeat if n <= 1000 else args.repeat // 2)
            def once(fn, reads_qsm):
                def run() -> Measured:          # one load a round: the sample is its time
                    if reads_qsm and args.page_cache == "dropped":
                        drop_cached(qsm)        # (not timed)
                    t0 = time.perf_counter()
                    got = fn()
                    elapsed = time.perf_counter() - t0
                    return got if isinstance(got, Measured) else Measured(elapsed)
                return run

            times = {k: t.samples for k, t in zip(runs, interleaved(
                [once(fn, k in ("qsm", "c", "fresh")) for k, fn in runs.items()], reps,
                warmup=False))}
            cell = {k: f"{1e3 * min(v):.2f} / {1e3 * statistics.median(v):.2f}"
                    for k, v in times.items()}
            best = {k: min(v) for k, v in times.items()}
            print(f"| {n} {shape} | {lib} | {cell['load']} | {cell['auto']} | {cell['qsm']} | "
                  f"{cell['c']} | {cell['fresh']} | {cell['native']} | "
                  f"{best['load'] / best['native']:.2f}x, "
                  f"{best['qsm'] / best['native']:.3f}x |", flush=True)
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
