"""Resident memory of a loaded model, ours against the training library, each in a fresh process.

    python -m benchmarks.memory                                  # 100 / 1,000 / 20,000 trees x 64
    python -m benchmarks.memory --trees 1000 --leaves 64 --engines quickscorer,lightgbm

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
    args = p.parse_args(argv)
    from benchmarks import workloads as W

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
