"""Resident memory of a loaded model, ours against the training library, each in a fresh process.

    python -m benchmarks.memory                                  # 100 / 1,000 / 20,000 trees x 64
    python -m benchmarks.memory --trees 1000 --leaves 64 --engines quickscorer,lightgbm
    python -m benchmarks.memory --shared 8 --trees 1000       # 8 processes mapping one .qsm

Per model and engine, a new Python process imports the engine, collects garbage and trims the
heap (``malloc_trim(0)``), reads its resident set (``/proc/self/statm``), loads the model and
scores 1,000 rows (uniform with 30% zeros), collects and trims again and reads the resident set
once more. It reports:

* ``resident``: what loading and one call added to the resident set;
* ``peak``: the peak resident set during the load and the call (``VmHWM``, reset through
  ``/proc/self/clear_refs`` just before the load) above the starting resident set;
* ``quickscorer-auto``: ours with ``prepare=("auto",)``, every layout the default ``predict``
  may pick built up front (what a service that wants no first-call delay holds);
* ``held`` (ours): the numpy bytes ``Model.memory()`` accounts for.

The models are LightGBM regression models with full trees (``workloads.full``) and XGBoost
depth-6 JSON models (``workloads.xgb_depth6``, against ``xgboost.Booster`` with one thread and
``inplace_predict``); the 100-tree model is the first 100 trees of the 1,000-tree one, and the
20,000-tree model the 1,000 trees repeated 20 times (valid models the libraries load; for
memory the values do not matter), so that no 20,000-tree training is needed.

``lleaves`` (LightGBM models, ``--lleaves``, on by default up to 1,000 trees): the child loads
the model and its compiled object from the benchmark cache (compiled once, by this process,
before the measurement: minutes for 1,000 trees; 20,000 trees are left out, their compilation
takes far longer), so the figure is what a service that ships the compiled object holds.
"""
from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
from pathlib import Path

from benchmarks.engines import compiled_path
from benchmarks.workloads import prefix, repeated, xgb_variant

HERE = Path(__file__).resolve().parent


ENGINES = ("quickscorer", "quickscorer-auto", "lightgbm", "lleaves")
XGB_ENGINES = ("quickscorer", "quickscorer-auto", "xgboost")

_CHILD = r"""
import ctypes, gc, json, sys
import numpy as np
engine, path = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL("libc.so.6")
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
X = np.random.default_rng(0).random((1000, int(sys.argv[3])))
X[X < 0.3] = 0.0
if engine.startswith("quickscorer"):
    import quickscorer
elif engine == "xgboost":
    import xgboost
elif engine == "lleaves":
    import lleaves
else:
    import lightgbm
def hwm():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
gc.collect(); libc.malloc_trim(0)
before = rss()
with open("/proc/self/clear_refs", "w") as f:   # reset the peak (VmHWM) to the current set
    f.write("5")
if engine == "quickscorer":
    m = quickscorer.load(path)
elif engine == "quickscorer-auto":
    m = quickscorer.load(path, prepare=("auto",))
elif engine == "xgboost":
    m = xgboost.Booster(model_file=path)
    m.set_param({"nthread": 1})
    m.inplace_predict(X)
elif engine == "lleaves":
    m = lleaves.Model(model_file=path)
    m.compile(cache=sys.argv[4], raw_score=True)
    m.predict(X, n_jobs=1)
else:
    m = lightgbm.Booster(model_file=path)
if engine not in ("xgboost", "lleaves"):
    m.predict(X)
peak = hwm()
gc.collect(); libc.malloc_trim(0)
out = {"resident": rss() - before, "peak": peak - before}
if engine.startswith("quickscorer"):
    out["held"] = m.memory()["total_bytes"]
print(json.dumps(out))
"""


_SHARED_CHILD = r"""
import ctypes, gc, json, sys
import numpy as np
engine, path, width = sys.argv[1], sys.argv[2], int(sys.argv[3])
import quickscorer
from quickscorer import capi
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
X = np.random.default_rng(0).random((1000, width))
gc.collect(); ctypes.CDLL("libc.so.6").malloc_trim(0)
before = rss()
m = quickscorer.load(path) if engine == "python" else capi.CModel(path)
m.predict(X)
gc.collect(); ctypes.CDLL("libc.so.6").malloc_trim(0)
print(json.dumps({"added": rss() - before}), flush=True)
sys.stdin.readline()          # held until the parent has read the mappings
"""


def mapping_kib(pid: int, path: str) -> dict:
    """Rss, Pss and private kB of the mappings of ``path`` in process ``pid``
    (``/proc/PID/smaps``)."""
    out = {"Rss": 0, "Pss": 0, "Private_Clean": 0, "Private_Dirty": 0}
    inside = False
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split()
            if head and "-" in head[0] and len(head) >= 5 and ":" in head[3]:
                inside = len(head) >= 6 and head[5] == path
            elif inside and head and head[0].rstrip(":") in out:
                out[head[0].rstrip(":")] += int(head[1])
    return out


def shared(processes: int, trees: int, leaves: int) -> None:
    """``processes`` processes opening one prepared model file (``.qsm``) and scoring 1,000
    rows, through Python and through the C library: what the file's mapping costs them
    together (the sum of its proportional set size, PSS) against one process's resident set
    of it, and what each process adds of its own."""
    import tempfile

    import quickscorer
    from benchmarks import workloads as W

    base = Path(W.full(trees, leaves).lgb_path)
    with tempfile.TemporaryDirectory() as tmp:
        qsm = str(quickscorer.load(base).save(Path(tmp) / "model.qsm").resolve())
        size = Path(qsm).stat().st_size
        print(f"{trees} x {leaves} leaves: the .qsm is {size / 2**20:.1f} MiB; "
              f"{processes} processes, each opening it and scoring 1,000 rows")
        print("| engine | one process's mapping (Rss) | all processes' mapping (sum of Pss) | "
              "sum / one | each process's own (median) |")
        print("| --- | ---: | ---: | ---: | ---: |")
        for engine in ("python", "c"):
            procs = [subprocess.Popen([sys.executable, "-c", _SHARED_CHILD, engine, qsm, "136"],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                     for _ in range(processes)]
            try:
                added = [json.loads(p.stdout.readline())["added"] for p in procs]
                maps = [mapping_kib(p.pid, qsm) for p in procs]
            finally:
                for p in procs:
                    p.communicate("\n")
            one = max(m["Rss"] for m in maps)
            pss = sum(m["Pss"] for m in maps)
            own = sorted(a / 1024 - m["Rss"] for a, m in zip(added, maps))[processes // 2]
            print(f"| {engine} | {one / 1024:.1f} MiB | {pss / 1024:.1f} MiB | "
                  f"{pss / max(one, 1):.2f}x | {own / 1024:.1f} MiB |", flush=True)


def compile_lleaves(path: Path) -> Path:
    """The compiled lleaves object of a model file, compiled into the benchmark cache once."""
    cached = compiled_path(path, ".lleaves.o")
    if not cached.exists():
        import lleaves
        lleaves.Model(model_file=str(path)).compile(cache=str(cached), raw_score=True)
    return cached


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trees", default="100,1000,20000")
    p.add_argument("--leaves", type=int, default=64)
    p.add_argument("--engines", default=",".join(dict.fromkeys(ENGINES + XGB_ENGINES)),
                   help="those to measure, of each library's own (LightGBM models: "
                        f"{', '.join(ENGINES)}; XGBoost: {', '.join(XGB_ENGINES)})")
    p.add_argument("--libraries", default="lightgbm,xgboost",
                   help="models of which libraries (XGBoost: depth-6 JSON models)")
    p.add_argument("--lleaves-max-trees", type=int, default=1000,
                   help="measure lleaves on LightGBM models of at most this many trees")
    p.add_argument("--shared", type=int, default=0, metavar="N",
                   help="instead: N processes mapping one .qsm of a --trees x --leaves model "
                        "(the first of --trees), the sum of their PSS of it against one's")
    args = p.parse_args(argv)
    from benchmarks import workloads as W

    if args.shared:
        shared(args.shared, int(args.trees.split(",")[0]), args.leaves)
        return 0

    base = W.full(1000, args.leaves).lgb_path
    cache = Path(base).parent
    print(f"machine: {platform.processor() or platform.machine()}, Python "
          f"{platform.python_version()}; resident / peak added, MiB (fresh process each)")
    print("| model | engine | resident | peak | peak / resident | held (numpy) |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    wanted = set(args.engines.split(","))
    lgb_engines = [e for e in ENGINES if e in wanted]
    for lib in args.libraries.split(","):
        for n in [int(v) for v in args.trees.split(",")]:
            if lib == "xgboost":
                xbase = Path(W.xgb_depth6(1000).xgb_path)
                path = (xbase if n == 1000
                        else xgb_variant(xbase, n, cache / f"load_xgboost_{n}.json"))
                engines = [e for e in XGB_ENGINES if e in wanted]
                label = f"XGBoost {n}, depth 6"
            elif n == 1000:
                path, engines, label = Path(base), lgb_engines, f"{n} x {args.leaves}"
            elif n < 1000:
                path = prefix(Path(base), n, cache / f"memory_{n}x{args.leaves}.txt")
                engines, label = lgb_engines, f"{n} x {args.leaves}"
            else:
                path = repeated(Path(base), n // 1000, cache / f"memory_{n}x{args.leaves}.txt")
                engines, label = lgb_engines, f"{n} x {args.leaves}"
            for engine in engines:
                extra = []
                if engine == "lleaves":
                    if n > args.lleaves_max_trees:
                        continue
                    extra = [str(compile_lleaves(path))]
                res = subprocess.run([sys.executable, "-c", _CHILD, engine, str(path), "136",
                                      *extra], capture_output=True, text=True, check=True)
                r = json.loads(res.stdout.strip().splitlines()[-1])
                held = f"{r['held'] / 2**20:.1f}" if "held" in r else ""
                print(f"| {label} | {engine} | {r['resident'] / 2**20:.1f} | "
                      f"{r['peak'] / 2**20:.1f} | {r['peak'] / max(r['resident'], 1):.1f} | "
                      f"{held} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
