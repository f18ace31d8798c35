"""The level path's choices (RapidScorer on trees of at most 10 levels) swept on the matrix's
models: where a tree's levels start going lane by lane, and whether a model walks its levels
at all.

    python -m benchmarks.tuning.rs_level_sweep
    python -m benchmarks.tuning.rs_level_sweep --values 32,48,64 --rows 100,10000 --repeat 7
    python -m benchmarks.tuning.rs_level_sweep --setting rs_levels --values 0,1 \
        --rows 9,16,32

``--setting`` names the field of the tuning table (``quickscorer.tuning.Tuning``) each model
is prepared with, one prepared model per value: ``rs_lane_nodes`` (the default: a tree's
levels go lane by lane from its first level of more than that many nodes) or ``rs_levels``
(0: the scans, 1: the level path in every group where the model allows it;
``rapidscorer.levels.LEVELS_MIN_RATIO``, ``LEVELS_NARROW_RATIO``) or ``rs_vbmi`` (0: the
AVX-512 walk a node at a time, 1: by byte permutations where the CPU has AVX512_VBMI; equal
elsewhere) or ``rs_halves`` (1: the AVX-512 walk in two 256-bit registers a column, as the
AVX2 wide path's; 0: in 512-bit registers) or ``rs_gathered`` (1: the AVX-512 gathered walk
where the model can take it; 0: the scans) or ``rs_wide_add`` (1: the AVX-512 scan adds the
exit leaves of trees of more than 32 leaves as the AVX2 wide path does; 0: tree by tree) or
``isa`` (``avx2``, ``avx512``: the whole call on
one instruction set, the default's choice of group included). For each model
(``--models``: shapes of ``benchmarks/matrix.py``), all the prepared models score the same
rows (the first checked equal to the others), timed interleaved in ``--repeat`` rounds of at
least 20,000 rows each; prints each value's fastest round in microseconds per document (this
project's VMs stall whole rounds) and its ratio to the fastest value of the row, and the
model's nodes per level (``rapidscorer.levels.level_ratio``) or, for the lane-nodes sweep, how many
of its levels, all trees together, go lane by lane under each value.
"""
from __future__ import annotations

import argparse
import platform
import sys

import numpy as np

from benchmarks import matrix as M
from benchmarks.tuning._variants import print_rows, rows_of, timing_args

LANE_NODES = "rs_lane_nodes"


def lane_levels(ens, lane_nodes: int) -> int:
    """How many levels of the ensemble's trees (all trees together) go lane by lane."""
    total = 0
    for tree in ens.trees:
        d = np.zeros(tree.n_internal, np.int64)
        for n in range(tree.n_internal):      # children come after their parent
            for c in (int(tree.left[n]), int(tree.right[n])):
                if c >= 0:
                    d[c] = d[n] + 1
        counts = np.bincount(d)
        deep = [lv for lv, k in enumerate(counts) if k > lane_nodes or lv >= 8]
        total += len(counts) - deep[0] if deep else 0
    return total


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", help="shapes, named as in benchmarks/matrix.py",
                   default="xgb-depth7-uniform-1000,xgb-depth8-uniform-1000,"
                           "xgb-depth9-uniform-1000,xgb-depth10-uniform-1000,"
                           "full-uniform-1000x255-d8,full-uniform-1000x300-d10")
    p.add_argument("--setting", default=LANE_NODES,
                   help="the tuning field swept: rs_lane_nodes, rs_levels, rs_vbmi, rs_halves, "
                        "rs_gathered, rs_wide_add or isa")
    p.add_argument("--values", default="32,40,48,56,64",
                   help="the setting's values, comma-separated")
    timing_args(p, "100,10000")
    args = p.parse_args(argv)

    import quickscorer
    from quickscorer.algorithms.rapidscorer.levels import level_ratio
    from quickscorer.algorithms.rapidscorer.rapidscorer import RapidScorer

    setting = args.setting
    values = args.values.split(",")
    base = quickscorer.current_tuning()
    tunings = [base.replace(**{setting: quickscorer.Tuning.parse(setting, v)}) for v in values]
    print(f"machine: {platform.machine()}, Python {platform.python_version()}, "
          f"{args.threads} thread(s); minimum us/doc of {args.repeat} interleaved rounds "
          "(ratio to the fastest value of the row)")
    print("| model | rows per call | " + " | ".join(f"{v}" for v in values) + " |")
    print("| --- | ---: |" + " ---: |" * len(values))
    for spec in args.models.split(","):
        wl = M.workload(spec, max(int(r) for r in args.rows.split(",")))
        models = [quickscorer.load(wl.lgb_path, prepare=("rapidscorer",), tuning=t)
                  for t in tunings]
        X = rows_of(models, wl.X)
        if setting == LANE_NODES:
            print(f"| {wl.name}: lane-by-lane levels | | "
                  + " | ".join(str(lane_levels(models[0].ensemble, int(v))) for v in values)
                  + " |")
        else:
            walk = RapidScorer(models[0].ensemble, models[0].plan.forest, isa="scalar",
                               levels=True)
            print(f"| {wl.name}: {level_ratio(walk._arrays):.2f} nodes a level | |"
                  + " |" * len(values))
        print_rows(wl.name, models, X, [int(r) for r in args.rows.split(",")], args.threads,
                   args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
