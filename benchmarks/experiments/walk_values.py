"""The walk of complete trees for one and two rows, with its leaves' values added group by
group (``WalkLayout.attach_values``, walk.h WALK_GROUPS_SUM, the default)
against the same walk storing the leaves and adding them after (a layout built from the same
arrays without the values): same model, same rows, the walk's low-latency entry
(``_kernel.predict_small``), interleaved rounds in one process, scores checked equal to each
other and to the QuickScorer scan.

    python -m benchmarks.experiments.walk_values
    python -m benchmarks.experiments.walk_values --shapes ydf-uniform-d6,xgb-depth6-uniform-1000 \
        --rows 1,2,4

Shapes as ``benchmarks/tuning/small_calls.py`` takes them (matrix shapes, ``ydf-<data>-d<depth>``);
models whose trees the walk does not lay out complete are skipped, saying so.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

from benchmarks import compare as C
from benchmarks.tuning import small_calls as S
from quickscorer.bench import interleaved

DEFAULT_SHAPES = ("ydf-uniform-d6", "ydf-uniform-d7", "xgb-depth6-uniform-1000",
                  "full-uniform-1000x63-d6")


def main(argv=None) -> int:
    from quickscorer import _kernel
    from quickscorer.algorithms import _walk

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", default=",".join(DEFAULT_SHAPES))
    p.add_argument("--rows", default="1,2,4", help="rows per call, comma-separated")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--calls", type=int, default=400, help="calls per engine per round")
    args = p.parse_args(argv)
    print(f"# walk of complete trees, values added group by group against leaves added after; "
          f"median of {args.rounds} interleaved rounds, us/doc; {C.machine()}")
    print("| model | rows | values by group | leaves, then sum | after / by group |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for shape in args.shapes.split(","):
        model, _, X = S._load(shape)
        walk = model.prepare("walk")
        if not walk.complete or walk.layout.slot_values is None:
            print(f"| {shape} | | | | no complete trees with values: skipped |")
            continue
        plain = _walk.WalkLayout(walk.arrays(), model.n_features)
        engines = {"values": walk.layout, "plain": plain}
        for rows in (int(r) for r in args.rows.split(",")):
            batches = [np.ascontiguousarray(X[i:i + rows])
                       for i in range(0, rows * args.calls, rows)]
            got = {k: np.concatenate([_kernel.predict_small(walk.forest, lay, b, True)
                                      for b in batches]) for k, lay in engines.items()}
            want = model.predict(np.concatenate(batches), raw_score=True,
                                 algorithm="quickscorer")
            if not (np.array_equal(got["values"], want) and np.array_equal(got["plain"], want)):
                raise SystemExit(f"{shape}: scores differ")
            def calls(lay):
                def run() -> int:
                    for b in batches:
                        _kernel.predict_small(walk.forest, lay, b, True)
                    return rows * len(batches)
                return run

            t = dict(zip(engines, interleaved([calls(lay) for lay in engines.values()],
                                              args.rounds)))
            a, b = t["values"].median * 1e6, t["plain"].median * 1e6
            print(f"| {shape} | {rows} | {a:.2f} | {b:.2f} | {b / a:.3f}x |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
