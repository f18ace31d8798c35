"""Scoring files end to end: ``quickscorer score`` against reading with scikit-learn and scoring
with LightGBM, its resident memory as the input grows, and Parquet against rows in memory.

    python -m benchmarks.score_files                   # all three parts (about 5 minutes)
    python -m benchmarks.score_files --parts pipeline,parquet --rounds 5
    python -m benchmarks.score_files --big-mb 500      # a smaller "big" input for memory

The model is a LightGBM lambdarank model of 1,000 trees x 31 leaves trained on the shared
ranking data (``workloads.shared("shared-rank", 1000, 31)``); the rows are the shared
``rank.train`` lines repeated (LibSVM, 301 columns, mostly absent), written once to the
benchmark cache.

* ``pipeline``: a 200,000-row LibSVM file (about 166 MB), one scoring thread. ``sklearn +
  lightgbm``: ``sklearn.datasets.load_svmlight_file`` then ``lightgbm.Booster.predict`` with
  ``num_threads=1`` on the sparse matrix, in this process. ``quickscorer score``: the command
  in a fresh process (``--threads 1 -o scores.npy``: Python's start and the model's load
  included; reading runs on a second thread). Interleaved rounds, median; the scores of both
  are checked equal.
* ``memory``: the peak resident set (``VmHWM``, read by the child as it ends) of
  ``quickscorer score`` on a LibSVM input of ``--small-mb`` and of ``--big-mb`` (the same
  lines repeated), and of ``sklearn + lightgbm`` on the small one.
* ``parquet``: the 200,000 rows as a Parquet file (dense float64 columns, row groups of 65,536
  rows): ``score_file`` from the file to ``.npy`` against ``model.predict`` on the same rows
  already in memory, 1 and 2 threads, interleaved in this process.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import workloads
from quickscorer import load
from quickscorer.batch import score_file
from quickscorer.bench import interleaved, machine
from quickscorer.inputs.files import read_libsvm
from quickscorer.progress import Progress

HERE = Path(__file__).resolve().parent


N_FEATURES = 301


def repeated_libsvm(path: Path, rows: int | None = None, megabytes: float | None = None) -> Path:
    """The shared rank.train lines repeated to ``rows`` lines or ``megabytes`` MB (kept)."""
    if path.exists():
        return path
    lines = (workloads.shared_dir() / "rank.train").read_bytes().splitlines(keepends=True)
    block = b"".join(lines)
    tmp = path.with_name(path.name + ".part")
    bar = Progress(f"writing {path.name}")
    with open(tmp, "wb") as fh:
        written = size = 0
        target_bytes = megabytes * 1e6 if megabytes else None
        while True:
            if rows is not None:
                take = min(len(lines), rows - written)
                if take <= 0:
                    break
                chunk = block if take == len(lines) else b"".join(lines[:take])
            else:
                if size >= target_bytes:
                    break
                chunk, take = block, len(lines)
            fh.write(chunk)
            written += take
            size += len(chunk)
            bar.update(written, size / target_bytes if target_bytes else written / rows)
    bar.close()
    os.replace(tmp, path)
    return path


# The children report their own peak resident set (VmHWM, of the process after its exec): a
# forked child's ru_maxrss also counts the pages it shared with this process before the exec.
_PEAK = r"""
def _peak():
    import sys
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            sys.stderr.write(f"peak-bytes {int(line.split()[1]) * 1024}\n")
"""

_CLI_CHILD = _PEAK + r"""
import sys
from quickscorer.cli import main
code = main(sys.argv[1:])
_peak()
sys.exit(code)
"""

_SKLEARN_CHILD = _PEAK + r"""
import sys, lightgbm, numpy as np
from sklearn.datasets import load_svmlight_file
X, _ = load_svmlight_file(sys.argv[2], n_features=int(sys.argv[3]), zero_based=True)
np.save(sys.argv[4], lightgbm.Booster(model_file=sys.argv[1]).predict(X, num_threads=1))
_peak()
"""


def _child(code: str, args: list[str]) -> tuple[float, int]:
    """Wall seconds and peak resident bytes of a fresh Python process running ``code``."""
    t0 = time.perf_counter()
    run = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if run.returncode != 0:
        raise SystemExit(f"a child failed ({run.returncode}): {run.stderr[-2000:]}")
    peak = [int(line.split()[1]) for line in run.stderr.splitlines()
            if line.startswith("peak-bytes ")]
    return seconds, peak[-1]


def _cli(model_path: Path, data: Path, out: Path, threads: int) -> tuple[float, int]:
    """``quickscorer score`` in a fresh process: seconds and peak resident bytes."""
    return _child(_CLI_CHILD, ["score", str(model_path), str(data), "--threads", str(threads),
                               "-o", str(out), "-q"])


def _sklearn_child(model_path: Path, data: Path, out: Path) -> tuple[float, int]:
    return _child(_SKLEARN_CHILD, [str(model_path), str(data), str(N_FEATURES), str(out)])


def part_pipeline(model_path: Path, data: Path, work: Path, rounds: int) -> list[str]:
    import lightgbm
    from sklearn.datasets import load_svmlight_file
    booster = lightgbm.Booster(model_file=str(model_path))
    out = work / "cli.npy"
    ref: dict = {}

    def sklearn_lightgbm():
        X, _ = load_svmlight_file(str(data), n_features=N_FEATURES, zero_based=True)
        ref["scores"] = booster.predict(X, num_threads=1)

    def quickscorer_score():
        _cli(model_path, data, out, 1)

    timings = interleaved([sklearn_lightgbm, quickscorer_score], rounds, warmup=False)
    same = np.array_equal(np.load(out), ref["scores"])
    a, b = timings[0].median, timings[1].median
    size = data.stat().st_size / 1e6
    return [f"### End to end: a {size:.0f} MB LibSVM file, 1 scoring thread",
            "",
            "| pipeline | seconds (median) | rounds |",
            "| --- | ---: | ---: |",
            f"| scikit-learn `load_svmlight_file` + `lightgbm.Booster.predict` | {a:.2f} | "
            f"{rounds} |",
            f"| `quickscorer score --threads 1` (a fresh process) | {b:.2f} | {rounds} |",
            "",
            f"quickscorer score is **{a / b:.1f}x** faster; scores equal: "
            f"{'yes' if same else 'NO'}.", ""]


def part_memory(model_path: Path, small: Path, big: Path, work: Path) -> list[str]:
    rows = []
    for data in (small, big):
        seconds, peak = _cli(model_path, data, work / "mem.npy", 1)
        rows.append((f"quickscorer score, {data.stat().st_size / 1e6:,.0f} MB LibSVM",
                     peak, seconds))
    seconds, peak = _sklearn_child(model_path, small, work / "skl.npy")
    rows.append((f"sklearn + lightgbm, {small.stat().st_size / 1e6:,.0f} MB LibSVM", peak,
                  seconds))
    lines = ["### Peak resident memory (VmHWM of a fresh process)", "",
             "| run | peak resident MB | seconds |", "| --- | ---: | ---: |"]
    lines += [f"| {name} | {peak / 1e6:,.0f} | {sec:.1f} |" for name, peak, sec in rows]
    lines += ["", f"big / small input, quickscorer: {rows[1][1] / rows[0][1]:.2f}x the memory "
              f"for {big.stat().st_size / small.stat().st_size:.1f}x the bytes.", ""]
    return lines


def part_parquet(model_path: Path, data: Path, work: Path, rounds: int) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq
    model = load(str(model_path))
    X, _ = read_libsvm(data, N_FEATURES, 0.0)
    path = work / "rows.parquet"
    if not path.exists():
        pq.write_table(pa.table({f"Column_{j}": X[:, j] for j in range(N_FEATURES)}), path,
                       row_group_size=65536)
    lines = [f"### Parquet ({path.stat().st_size / 1e6:.0f} MB, {len(X):,} rows x "
             f"{N_FEATURES} float64 columns) against the same rows in memory", "",
             "| threads | in memory s | from Parquet s | ratio | same scores |",
             "| ---: | ---: | ---: | ---: | --- |"]
    for threads in (1, 2):
        def in_memory():
            model.predict(X, n_threads=threads)

        def from_parquet():
            score_file(model, path, work / "pq.npy", n_threads=threads, progress=False)

        t = interleaved([in_memory, from_parquet], rounds)
        same = np.array_equal(np.load(work / "pq.npy"), model.predict(X, n_threads=threads))
        lines.append(f"| {threads} | {t[0].median:.2f} | {t[1].median:.2f} | "
                     f"{t[1].median / t[0].median:.2f}x | {'yes' if same else 'NO'} |")
    return lines + [""]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--parts", default="pipeline,memory,parquet")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rows", type=int, default=200_000, help="rows of the pipeline file")
    ap.add_argument("--small-mb", type=float, default=200)
    ap.add_argument("--big-mb", type=float, default=2000)
    args = ap.parse_args()
    parts = args.parts.split(",")
    cache = workloads.CACHE / "files"
    cache.mkdir(parents=True, exist_ok=True)
    model_path = workloads.shared("shared-rank", 1000, 31, xgboost=False).lgb_path
    data = repeated_libsvm(cache / f"rank_{args.rows}.svm", rows=args.rows)
    print(f"Machine: {machine()}\n")
    print(f"Model: {model_path.name} (LightGBM lambdarank, 1,000 trees x 31 leaves, "
          f"{N_FEATURES} features)\n")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if "pipeline" in parts:
            print("\n".join(part_pipeline(model_path, data, work, args.rounds)), flush=True)
        if "memory" in parts:
            small = repeated_libsvm(cache / f"rank_{args.small_mb:g}MB.svm",
                                    megabytes=args.small_mb)
            big = repeated_libsvm(cache / f"rank_{args.big_mb:g}MB.svm", megabytes=args.big_mb)
            print("\n".join(part_memory(model_path, small, big, work)), flush=True)
        if "parquet" in parts:
            print("\n".join(part_parquet(model_path, data, cache, args.rounds)), flush=True)


if __name__ == "__main__":
    main()
