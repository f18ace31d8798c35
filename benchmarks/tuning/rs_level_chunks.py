"""The level path's chunks of groups and tree blocks (RapidScorer on trees of 9 or 10 levels),
swept on the matrix's models.

    python -m benchmarks.tuning.rs_level_chunks
    python -m benchmarks.tuning.rs_level_chunks --variants 12:128,64:128,96:128 --rows 10000 \
        --threads 2

Calls of several 64-document groups a thread walk ``chunk`` groups together through blocks
of ``block`` KiB of level fields (``rapidscorer.LEVEL_CHUNK``, ``default_level_block_bytes``;
set here through the tuning table's ``rs_lv_chunk`` and ``rs_lv_block_bytes`` each model is
prepared with). For each model (``--models``: shapes of ``benchmarks/matrix.py``),
one prepared model per variant ``chunk:KiB``, all scoring the same rows (the first
checked equal), timed interleaved in ``--repeat`` rounds of at least 20,000 rows; prints
each variant's fastest round in microseconds per document (this project's VMs stall whole
rounds) and its ratio to the fastest variant of the row.
"""
from __future__ import annotations

import argparse
import platform
import sys

from benchmarks import matrix as M
from benchmarks.tuning._variants import print_rows, rows_of, timing_args


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", help="shapes, named as in benchmarks/matrix.py",
                   default="xgb-depth9-uniform-1000,xgb-depth10-uniform-1000,"
                           "full-uniform-1000x300-d10,xgb-depth8-uniform-1000")
    p.add_argument("--variants", default="12:128,32:128,64:128,96:128,64:64",
                   help="chunk:KiB, comma-separated")
    timing_args(p, "4000,10000")
    args = p.parse_args(argv)

    import quickscorer

    variants = [tuple(int(x) for x in v.split(":")) for v in args.variants.split(",")]
    names = [f"{c} / {kb} KiB" for c, kb in variants]
    print(f"machine: {platform.machine()}, Python {platform.python_version()}, "
          f"{args.threads} thread(s); minimum us/doc of {args.repeat} interleaved rounds "
          "(ratio to the fastest variant of the row)")
    print("| model | rows per call | " + " | ".join(names) + " |")
    print("| --- | ---: |" + " ---: |" * len(names))
    base = quickscorer.current_tuning()
    for spec in args.models.split(","):
        wl = M.workload(spec, max(int(r) for r in args.rows.split(",")))
        models = [quickscorer.load(wl.lgb_path, prepare=("rapidscorer",),
                                   tuning=base.replace(rs_lv_chunk=chunk,
                                                       rs_lv_block_bytes=kib << 10))
                  for chunk, kib in variants]
        X = rows_of(models, wl.X)
        print_rows(wl.name, models, X, [int(r) for r in args.rows.split(",")], args.threads,
                   args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main())
