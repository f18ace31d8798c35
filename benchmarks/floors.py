"""The floor of scoring a model on this CPU, counted, beside what ``predict`` takes.

    python -m benchmarks.floors                                # the models of the targets
    python -m benchmarks.floors --shapes xgb-depth8-uniform-300 --batch 100,10000
    python -m benchmarks.floors --mca sapphirerapids,icelake-server

For each model (a ``benchmarks/matrix.py`` shape) and call size, the operations a document
must execute in four ways of scoring it, each a sum of stages:

* ``levels``, RapidScorer's level path (depth-wise trees): a rank a document and used slot;
  for each group of 64 documents and tree, each node above the tree's split and each of those
  levels; a step a document for each level below the split; a leaf value a document and tree;
* ``scan``, RapidScorer's scan: the ranks; the scan entries a group of 64 visits (a
  segment's scan stops at the first threshold no lane's rank passes, simulated on the rows'
  ranks); each byte row of each tree's bitvector, set at its block's start and read by the
  exit search; the leaf values;
* ``gathered``, RapidScorer's gathered walk (one output of float64 sums): the ranks; a step
  a document, tree and level of its exit leaf's depth, and one for the leaf (AVX-512 only);
* ``heap``, a walk in oneDAL's manner (each tree a complete heap, the rows walked together by
  gathers, float32 values): a step a document, tree and level of its exit leaf's depth; the
  leaf values.

Each operation's cost is that of its loop alone in ``benchmarks/experiments/floors.c``
(the kernel's own function where it has one), compiled and run here, state in L1, no branch
missed. A stage's floor is its count times that cost, a way's floor the sum of its stages,
and the call's floor the least of them. ``predict`` (the default, one thread) is timed
on every model and call size in the same interleaved rounds, the fastest of ``--repeat``;
the harness runs once before them and once a model after, each unit keeping its least cost
(this project's guests stall for whole rounds). With ``--mca``, llvm-mca's steady-state
throughput of the same operations (Block RThroughput: no dependency between iterations,
every load an L1 hit) gives the floor in cycles a document on each named AVX-512 core, which
this machine need not be. The last line is ``worst predict / floor: R.RRx`` over the calls
measured.
"""
from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from benchmarks import matrix as M
from benchmarks.experiments.op_count import path_steps, predict_calls, scan_visits
from benchmarks.experiments.rs_scan_mca import AVX512_CPUS
from quickscorer.algorithms.rapidscorer.walks import walk_refusal
from quickscorer.bench import interleaved, machine

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SOURCE = HERE / "experiments" / "floors.c"
#: the models of the targets: XGBoost depth 8 and 9, full 255- and 64-leaf LightGBM trees
SHAPES = ("xgb-depth8-uniform-1000,xgb-depth9-uniform-1000,full-uniform-1000x255,"
          "full-uniform-1000x64")
LANES = 64                                 # documents a group on AVX-512 and AVX2's wide path
#: the units an llvm-mca region of floors.c serves (a heap region steps four registers; a
#: leaf region adds a register of lanes)
REGION_UNITS = {"heap.avx512": 64, "heap.avx2": 32, "leaf_n64.avx512": 8,
                "leaf32_n64.avx512": 16}
#: for llvm-mca, the units of a size class floors.c gives one sequence for: the others at
#: their ratio to it measured here
MCA_CLASSES = {"rank": "rank16", "rank32_": "rank32_16", "leaf_n": "leaf_n64",
               "leaf32_n": "leaf32_n64"}
LEAF_CLASSES = (8, 16, 32, 64, 128, 256)


def unit_costs(rounds: int = 9) -> dict[tuple[str, str], float]:
    """ns a unit, by (unit, isa), from floors.c compiled and run here."""
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "floors"
        subprocess.run(["gcc", "-O3", "-I", str(ROOT / "src"), "-o", str(exe), str(SOURCE)],
                       check=True, stderr=subprocess.DEVNULL)
        out = subprocess.run([str(exe), str(rounds)], check=True, capture_output=True,
                             text=True).stdout
    return {(u, isa): float(ns) for u, isa, ns in re.findall(r"(\S+) (\S+) ([0-9.]+)", out)}


def mca_costs(cpu: str, here: dict[tuple[str, str], float]) -> dict[tuple[str, str], float]:
    """Cycles a unit on llvm-mca's model of ``cpu``: each region's Block RThroughput over
    the units it serves (the median over the copies the compiler's unrolling made); a size
    class without a sequence of its own at its ratio ``here`` to the one with."""
    with tempfile.TemporaryDirectory() as tmp:
        asm = Path(tmp) / "floors.s"
        subprocess.run(["gcc", "-O3", "-I", str(ROOT / "src"), "-S", "-o", str(asm),
                        str(SOURCE)], check=True, stderr=subprocess.DEVNULL)
        out = subprocess.run(["llvm-mca", f"-mcpu={cpu}", str(asm)], capture_output=True,
                             text=True)
    if out.returncode:
        raise SystemExit(f"llvm-mca -mcpu={cpu}: {out.stderr.strip()[:200]}")
    copies: dict[str, list[float]] = {}
    for name, thr in re.findall(r"Code Region - (\S+).*?Block RThroughput:\s+([0-9.]+)",
                                out.stdout, re.S):
        copies.setdefault(name, []).append(float(thr) / REGION_UNITS.get(name, 1))
    costs = {tuple(name.split(".")): statistics.median(v) for name, v in copies.items()}
    for (unit, isa), ns in here.items():
        for prefix, main in MCA_CLASSES.items():
            if (unit.startswith(prefix) and unit[len(prefix):].lstrip("_n").isdigit()
                    and (unit, isa) not in costs and (main, isa) in costs):
                costs[(unit, isa)] = costs[(main, isa)] * ns / here[(main, isa)]
    return costs


def _leaf_class(n: np.ndarray) -> np.ndarray:
    """The least size class of LEAF_CLASSES that holds n leaves (256 past it)."""
    classes = np.asarray(LEAF_CLASSES)
    return classes[np.minimum(np.searchsorted(classes, n), classes.shape[0] - 1)]


def counts(model, X: np.ndarray) -> dict[str, dict[str, float]]:
    """Each stage's units a document, by unit (a group stage's per 64 documents already),
    for a call of full groups."""
    ens = model.ensemble
    alg = model.prepare("rapidscorer")
    rs = alg.arrays()
    f32 = ens.family == "xgboost"
    # the ranks: a slot of 16 buckets compares 16 pivots, of at most 8 eight, of one none;
    # XGBoost's rows rank in float32 where every threshold is a float32 value (RSLayout)
    nbk = np.diff(rs["rank_bucket_offsets"])[rs["model_used"]] // 16 - 1
    rank = "rank32_" if alg.layout.float32_ranks else "rank"
    ranks = {f"{rank}{k}": float(v) for k, v in
             zip((16, 8, 0), ((nbk > 8).sum(), ((nbk > 1) & (nbk <= 8)).sum(), (nbk <= 1).sum()))
             if v}
    leaf = "leaf32_n" if f32 else "leaf_n"
    sizes = np.diff(rs["leaf_offset"])

    def leaves(n):
        cls, k = np.unique(_leaf_class(n), return_counts=True)
        return {f"{leaf}{c}": float(v) for c, v in zip(cls, k)}
    rows = float(np.diff(rs["tree_byte_offsets"]).sum()) / LANES
    steps = path_steps(model, X[:2000])
    c = {"ranks": ranks, "leaves": leaves(sizes), "heap": {"heap": steps}}
    if walk_refusal(ens) is None:           # a step a level of the exit leaf, and the leaf's
        c["gathered"] = {"gw_step": steps + ens.n_trees}
    if rs["entries"].shape[0]:
        visits, _ = scan_visits(rs, X, LANES, groups=4)
        c["scan"] = {"reset_row": rows, "entry": visits / LANES, "exit_row": rows}
    if "lv_depth" in rs and rs["lv_depth"].shape[0]:
        depth = rs["lv_depth"].astype(np.int64)
        split = rs["lv_split"].astype(np.int64)
        c["levels"] = {"lv_node": float(np.diff(rs["lv_node_offset"]).sum()) / LANES,
                       "lv_level": float(split.sum()) / LANES,
                       "lv_deep": float((depth - split).sum())}
        c["slots"] = leaves(np.left_shift(1, depth))
    return c


def walk_isa(model, isa: str) -> str:
    """The instruction set whose level-walk units the model's walk on path ``isa`` takes: the
    AVX-512 walk in two 256-bit halves (rapidscorer/levels.h) is the AVX2 wide path's."""
    return "avx2" if isa == "avx512" and model.prepare("rapidscorer").layout.levels_halves \
        else isa


#: each way's stages (a leaf value a document and tree in each; the level walk's by the
#: tree's slots, 2^depth)
WAYS = {"levels": ("ranks", "levels", "slots"), "scan": ("ranks", "scan", "leaves"),
        "gathered": ("ranks", "gathered"), "heap": ("heap", "leaves")}
GROUP_UNITS = ("lv_node", "lv_level", "entry", "reset_row", "exit_row", "gw_step")


def floors(c: dict[str, dict[str, float]], cost: dict[tuple[str, str], float], isa: str,
           n_rows: int, walk: str | None = None) -> dict[str, dict[str, float]]:
    """Each way's stages, in the cost's unit a document, for a call of n_rows rows (a
    partial group costs a full one), the level walk's on ``walk``'s units (None: ``isa``'s);
    a way whose stages the model lacks, or whose units have no cost on the path (the gathered
    walk's off AVX-512, and on llvm-mca's models), is left out."""
    groups = -(-n_rows // LANES) * LANES / n_rows
    out = {}
    for way, stages in WAYS.items():
        if any(s not in c for s in stages):
            continue
        row = {}
        for s in stages:
            at = (walk or isa) if s == "levels" else isa
            units = [(n, (u, at) if (u, at) in cost else (u, "scalar"), u)
                     for u, n in c[s].items()]
            if any(key not in cost for _, key, _ in units):
                break
            row[s] = sum(n * cost[key] * (groups if u in GROUP_UNITS else 1.0)
                         for n, key, u in units)
        else:
            out[way] = row
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", default=SHAPES)
    p.add_argument("--batch", default="100,10000")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--mca", default="sapphirerapids" if shutil.which("llvm-mca") else "",
                   help="llvm-mca CPU models to count cycles on (empty: none)")
    args = p.parse_args(argv)
    import quickscorer
    from quickscorer.algorithms import cpu as C

    # the path predict takes: Tuning.isa where it is forced (QUICKSCORER_ISA=avx2 on an AVX-512
    # CPU), else this CPU's best
    forced = quickscorer.current_tuning().isa
    isa = forced if forced in ("avx2", "avx512") else (
        "avx512" if "avx512" in C.available_isas() else "avx2")
    batches = [int(b) for b in args.batch.split(",")]
    names = [name for name in args.mca.split(",") if name]
    if set(names) - set(AVX512_CPUS):
        raise SystemExit(f"--mca: floors.c writes llvm-mca's sequences for AVX-512 only: one "
                         f"of {', '.join(AVX512_CPUS)}")
    # the harness runs before each model's timing and after the last, each unit keeping its
    # least cost; every model's calls are timed in the same interleaved rounds: a guest whose
    # host is busy for a while slows some rounds of each, not all of one
    loaded = []
    for shape in args.shapes.split(","):
        wl = M.workload(shape, 10_000)
        model, X = quickscorer.load(wl.lgb_path), np.ascontiguousarray(wl.X)
        loaded.append((shape, model, X, counts(model, X)))
    ns = unit_costs()
    calls = [predict_calls(model, X, batches) for _, model, X, _ in loaded]
    timings = interleaved([f for fs in calls for f in fs], args.repeat)
    for _ in loaded:
        ns = {k: min(v, ns.get(k, v)) for k, v in unit_costs().items()}
    it = iter(t.minimum * 1e6 for t in timings)
    models = [(shape, model, c, [next(it) for _ in batches]) for shape, model, _, c in loaded]
    mca = {name: mca_costs(name, ns) for name in names}
    print(f"{machine()}; units of the {isa} path")
    print("unit costs here, ns: " + ", ".join(f"{u}.{i} {v:.3f}" for (u, i), v in ns.items()))
    worst = 0.0
    for shape, model, c, times in models:
        ens = model.ensemble
        print(f"\n{shape}: {ens.n_trees} trees, {ens.n_features} features; units a "
              "document: " + "; ".join(f"{s} " + ", ".join(f"{u} {n:.0f}" for u, n in d.items())
                                       for s, d in c.items()))
        print("| rows | predict runs | way | stages, us a document | floor | predict | "
              "predict / least floor |")
        print("| ---: | --- | --- | --- | ---: | ---: | ---: |")
        for n, t in zip(batches, times):
            ways = floors(c, ns, isa, n, walk_isa(model, isa))
            totals = {w: sum(v.values()) / 1000 for w, v in ways.items()}
            least = min(totals.values())
            worst = max(worst, t / least)
            kernel = model.plan.choose(n, 1)
            for k, (w, stages) in enumerate(ways.items()):
                parts = ", ".join(f"{s} {v / 1000:.2f}" for s, v in stages.items())
                tail = (f"{t:.2f} | {t / least:.2f}x" if k == 0 else " | ")
                print(f"| {n if k == 0 else ''} | {kernel if k == 0 else ''} | {w} | {parts} | "
                      f"{totals[w]:.2f} | {tail} |")
        for name, cyc in mca.items():
            for n in batches:
                # Intel's AVX-512 level walk is the one by byte permutations, not in halves
                ways = floors(c, cyc, "avx512", n)
                print(f"llvm-mca -mcpu={name}, {n} rows, kilocycles a document: " + ", ".join(
                    f"{w} {sum(v.values()) / 1000:.2f}" for w, v in ways.items()))
    print(f"\nworst predict / floor: {worst:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
