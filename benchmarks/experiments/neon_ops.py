"""Instructions per unit of RapidScorer's vector work, NEON path against AVX2 path, counted
rather than timed (an x86-64 machine has no ARM CPU to time on).

    python -m benchmarks.experiments.neon_ops            # needs gcc, aarch64-linux-gnu-gcc,
                                                         # qemu-user-static (Debian's packages)

``neon_ops.c`` is compiled three times from the same source: for x86-64 (the AVX2 intrinsics
as they are), and for AArch64 as the NEON path is built (SIMDe, with the scan entry, the
exit search and the rank search written natively: ``src/quickscorer/cpu.h``) and with every
step through SIMDe (``QS_NEON_SIMDE_ONLY``, the column ``SIMDe``), all ``-O3
-ffp-contract=off`` and static.
Each binary runs under QEMU's user-mode emulation with every translated block and every
block executed logged; the instructions executed are the sum over executed blocks of each
block's length. A unit's count is the difference between a run of ``2r`` repeats and one of
``r``, over the units ``r`` repeats do: set-up, start-up and exit cancel; rank's and exit
search's counts are less the driver loop's own (an empty call).

Then, with the work per document of a model on the 64-lane path (scan entries visited,
ranks, exit searches: ``benchmarks/experiments/op_count.py`` prints them, and ``--entries``,
``--ranks``, ``--trees`` take them), the vector instructions per document of each path. The
leaf values a document sums (one load and add a tree) are scalar code on both and are left
out.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
SOURCE = HERE / "neon_ops.c"
UNITS = ("scan", "scan32", "rank", "exits")
#: units of work one repeat does (a scan repeat runs neon_ops.c's 1,024 entries)
PER_REPEAT = {"scan": 1024, "scan32": 1024, "rank": 1, "exits": 1, "call": 1}
FLAGS = ["-O3", "-ffp-contract=off", "-static", "-I", str(ROOT / "src")]

_BLOCK_HEAD = re.compile(r"^IN:")
_INSN = re.compile(r"^0x([0-9a-f]+):")
_TRACE = re.compile(r"^Trace \d+: 0x[0-9a-f]+ \[[0-9a-f]+/([0-9a-f]+)/")


def simde_include() -> str:
    """SIMDe's headers: the simde-py package's where it is installed, else the system's."""
    try:
        import simde_py
    except ImportError:
        return "/usr/include"
    return simde_py.get_include()


def build(tmp: Path) -> dict[str, list[str]]:
    """The two binaries, as the command line that runs each under QEMU."""
    x86, arm = tmp / "ops_x86", tmp / "ops_arm"
    subprocess.run(["gcc", *FLAGS, "-o", str(x86), str(SOURCE)], check=True)
    arm_simde = tmp / "ops_arm_simde"
    for out, extra in ((arm, []), (arm_simde, ["-DQS_NEON_SIMDE_ONLY=1"])):
        subprocess.run(["aarch64-linux-gnu-gcc", *FLAGS, "-DQS_SIMDE=1", *extra, "-I",
                        simde_include(), "-o", str(out), str(SOURCE)], check=True)
    return {"avx2": ["qemu-x86_64-static", "-cpu", "max", str(x86)],
            "simde": ["qemu-aarch64-static", str(arm_simde)],
            "neon": ["qemu-aarch64-static", str(arm)]}


def executed(cmd: list[str], unit: str, n: int, log: Path) -> int:
    """Guest instructions executed by one run (QEMU's block log)."""
    subprocess.run([cmd[0], "-d", "in_asm,exec,nochain", "-D", str(log), *cmd[1:], unit,
                    str(n)], check=True, capture_output=True)
    length: dict[int, int] = {}
    total = 0
    start, count = None, 0
    with open(log, errors="replace") as fh:
        for line in fh:
            if _BLOCK_HEAD.match(line):
                start, count = None, 0
                continue
            m = _INSN.match(line)
            if m:
                if start is None:
                    start = int(m.group(1), 16)
                count += 1
                length[start] = count
                continue
            m = _TRACE.match(line)
            if m:
                total += length.get(int(m.group(1), 16), 0)
    return total


def per_unit(cmd: list[str], unit: str, repeats: int, tmp: Path) -> float:
    """Instructions per unit of work: the difference between 2r and r repeats, over the units
    r repeats do."""
    a = executed(cmd, unit, repeats, tmp / "a.log")
    b = executed(cmd, unit, 2 * repeats, tmp / "b.log")
    return (b - a) / (repeats * PER_REPEAT[unit])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=200, help="repeats of the shorter run")
    # full-uniform-1000x64 on 64-lane groups (python -m benchmarks.experiments.op_count)
    p.add_argument("--entries", type=float, default=None,
                   help="scan entries a 64-lane group visits, over its 64 documents")
    p.add_argument("--ranks", type=float, default=None, help="ranks a document")
    p.add_argument("--trees", type=int, default=None, help="trees (exit searches a group)")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        cmds = build(tmp)
        counts = {isa: {u: per_unit(cmd, u, args.repeats, tmp) for u in (*UNITS, "call")}
                  for isa, cmd in cmds.items()}
    for c in counts.values():        # rank's and exits' calls less the driver loop's own cost
        c["rank"] -= c["call"]
        c["exits"] -= c["call"]
    print("instructions per unit (QEMU block log, difference of r and 2r repeats):")
    print(f"  {'unit':36s} {'AVX2':>6s} {'SIMDe':>6s} {'NEON':>6s} {'NEON/AVX2':>10s}")
    what = {"scan": "scan entry, 64 lanes", "scan32": "scan entry, 32 lanes",
            "rank": "rank, 256 thresholds (one document)", "exits": "exit search, 64 lanes"}
    for u in UNITS:
        a, m, n = counts["avx2"][u], counts["simde"][u], counts["neon"][u]
        print(f"  {what[u]:36s} {a:6.1f} {m:6.1f} {n:6.1f} {n / a:10.2f}")
    if args.entries is not None and args.ranks is not None and args.trees is not None:
        print("per document, 64-lane groups:")
        for isa in ("avx2", "simde", "neon"):
            c = counts[isa]
            scan = args.entries * c["scan"] / 64
            ranks = args.ranks * c["rank"]
            exits = args.trees * c["exits"] / 64
            print(f"  {isa}: scan {scan:.0f} + ranks {ranks:.0f} + exits {exits:.0f} = "
                  f"{scan + ranks + exits:.0f} instructions")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
