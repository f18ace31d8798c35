"""V-QuickScorer with tree blocks against the whole layout, per call size.

    python -m benchmarks.tuning.vqs_blocks
    python -m benchmarks.tuning.vqs_blocks --rows 4,8,11,16,64,2000 --models full-uniform-1000x64

For each model (``--models``: the shapes of ``benchmarks/matrix.py``, built by its
``workload``), two ``VQuickScorer`` objects on the same model: one cut into tree blocks of
the default size (half the L2 cache), one with a block size no model reaches (the whole
layout), both called directly (``predict_raw``, one thread, the widest group the rows fill)
on consecutive slices of the rows, interleaved, ``--repeat`` rounds. Prints the median
microseconds per document of each and their ratio.

This is what decides when ``vqs`` uses its blocks (``VQuickScorer._layout_for``): only calls
with enough documents per thread to reuse a block (``lanes * doc_groups``).
"""
from __future__ import annotations

import argparse
import platform
import sys

import numpy as np

from benchmarks import matrix as M
from quickscorer.bench import interleaved


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", help="shapes, named as in benchmarks/matrix.py",
                   default="full-uniform-1000x31,full-uniform-1000x64,full-uniform-1000x255,"
                           "xgb-depth6-uniform-1000")
    p.add_argument("--rows", default="4,8,11,16,32,64,256,2000")
    p.add_argument("--calls-rows", type=int, default=3000,
                   help="rows scored per timed round (in calls of --rows each)")
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args(argv)

    import quickscorer
    from quickscorer.algorithms.qs import _vqs
    from quickscorer.algorithms.qs.vqs import VQuickScorer
    kernels = VQuickScorer.specialised(_vqs.predict_raw)

    print(f"machine: {platform.machine()}, {platform.processor() or '?'}, Python "
          f"{platform.python_version()}; median us/doc of {args.repeat} interleaved rounds")
    print("| model | tree blocks | rows per call | blocked | whole layout | blocked / whole |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for spec in args.models.split(","):
        wl = M.workload(spec, 10_000)
        model = quickscorer.load(wl.lgb_path)
        xgb = model.ensemble.family == "xgboost"
        X = wl.X.astype(np.float32) if xgb else wl.X
        blocked = VQuickScorer(model.ensemble, model.plan.forest)
        whole = VQuickScorer(model.ensemble, model.plan.forest, block_bytes=1 << 50)
        for rows in (int(r) for r in args.rows.split(",")):
            calls = max(1, args.calls_rows // rows)
            if calls * rows > X.shape[0]:
                calls = X.shape[0] // rows
            def scans(name, alg):
                out64 = np.zeros((0, 0)) if xgb else np.zeros((rows, 1))
                out32 = np.zeros((rows, 1), np.float32) if xgb else np.zeros((0, 0), np.float32)
                lanes = alg.lanes_for(rows, 1)
                layout = (alg._layout_for(1 << 30, 1, lanes) if name == "blocks"
                          else alg._layout_for(rows, 1, lanes))
                rowbuf, bits = alg._buffers(1, alg.doc_groups, layout)
                kernel = kernels[X.dtype]

                def run() -> int:
                    for i in range(0, calls * rows, rows):
                        kernel(alg.forest, layout, X[i:i + rows], out64, out32, rowbuf, bits,
                               1, alg.isa, alg.merge, alg.doc_groups, lanes)
                    return calls * rows
                return run

            b, w = (t.median * 1e6 for t in interleaved(
                [scans("blocks", blocked), scans("whole", whole)], args.repeat))
            print(f"| {wl.name} | {blocked.tree_blocks} | {rows} | {b:.2f} | {w:.2f} | "
                  f"{b / w:.2f}x |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
