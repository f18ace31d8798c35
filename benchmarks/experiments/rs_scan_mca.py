"""A static cycle count of one RapidScorer scan entry (and of one node of the level-by-level
walk), per instruction set and CPU model.

No timing: ``llvm-mca`` (LLVM's machine-code analyser) estimates the steady-state cycles of
the scan's inner loop, as the compiler built it into ``quickscorer/_rapidscorer*.so``, on
its models of several CPUs. It stands in where no machine of a kind is at hand (AVX-512
here): a model of the core with every access an L1 hit, no frequency change, no branch
miss; measured times are higher. The loop is found in ``objdump -d`` of the built module as
the shortest backward branch in ``rs_block_scan_<path>`` whose body compares bytes and stores
a row.

    python -m benchmarks.experiments.rs_scan_mca        # AVX2 (64 lanes) and AVX-512 paths
    python -m benchmarks.experiments.rs_scan_mca --cpus znver3,skylake-avx512
"""
from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# the scan of each path and the lanes one entry serves; then the level walk's, a node a turn
PATHS = {"avx2": ("rs_block_scan_avx2", 32), "avx2w": ("rs_block_scan_avx2w", 64),
         "avx512": ("rs_block_scan_avx512", 64),
         "levels-avx2w": ("rs_lv_tree_avx2w", 64), "levels-avx512": ("rs_lv_tree_avx512", 64)}
AVX512_CPUS = ("skylake-avx512", "icelake-server", "sapphirerapids")
DEFAULT_CPUS = ("haswell", "skylake", "znver3") + AVX512_CPUS


def function_lines(so: Path, name: str) -> list[tuple[int, str]]:
    """(address, instruction) of one function of the module, as objdump prints it."""
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(so)], check=True,
                          capture_output=True, text=True).stdout
    m = re.search(rf"^[0-9a-f]+ <{re.escape(name)}>:\n(.*?)(?:\n\n|\Z)", text, re.M | re.S)
    if not m:
        raise SystemExit(f"{name} not found in {so}")
    out = []
    for line in m.group(1).splitlines():
        parts = line.split("\t", 1)
        if len(parts) == 2 and parts[0].strip().endswith(":"):
            out.append((int(parts[0].strip()[:-1], 16), parts[1].strip()))
    return out


def inner_loop(lines: list[tuple[int, str]], stores: bool = True) -> list[str]:
    """The shortest backward-branch body that compares bytes and stores a row (without
    ``stores``: that compares bytes, the level walk's node loop)."""
    best = None
    for i, (_, ins) in enumerate(lines):
        m = re.match(r"j\w+\s+([0-9a-f]+)", ins)
        if not m or ins.startswith("jmp"):
            continue
        target = int(m.group(1), 16)
        start = next((k for k, (a, _) in enumerate(lines) if a == target), None)
        if start is None or start > i:
            continue
        body = [t for _, t in lines[start:i + 1] if not t.startswith("nop")]
        if (any(re.match(r"vpcmp", t) for t in body)
                and (not stores
                     or any(re.match(r"vmovdq\w*\s+%[xyz]mm\d+,.*\(", t) for t in body))
                and (best is None or len(body) < len(best))):
            best = body
    if best is None:
        raise SystemExit("no scan loop found")
    best[-1] = re.sub(r"\s+[0-9a-f]+(\s+<.*>)?$", " .Lloop", best[-1])
    return [re.sub(r"\s+<.*>$", "", t) for t in best]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cpus", default=",".join(DEFAULT_CPUS))
    args = p.parse_args(argv)
    if not shutil.which("llvm-mca") or not shutil.which("objdump"):
        raise SystemExit("needs llvm-mca (LLVM) and objdump (binutils)")
    so = next(iter(sorted((ROOT / "quickscorer").glob("_rapidscorer*.so"))), None)
    if so is None:
        raise SystemExit("build the extension first (pip install -e .)")
    print("| path | lanes | instructions | CPU model | cycles an entry (a node) | cycles per 64 "
          "documents |")
    print("| --- | ---: | ---: | --- | ---: | ---: |")
    for path, (func, lanes) in PATHS.items():
        body = inner_loop(function_lines(so, func), stores=not path.startswith("levels"))
        with tempfile.NamedTemporaryFile("w", suffix=".s", delete=False) as f:
            f.write(".Lloop:\n" + "\n".join(body) + "\n")
        for cpu in args.cpus.split(","):
            if path.endswith("avx512") and cpu not in AVX512_CPUS:
                continue
            out = subprocess.run(["llvm-mca", f"-mcpu={cpu}", "-iterations=1000", f.name],
                                 capture_output=True, text=True)
            m = re.search(r"Total Cycles:\s+(\d+)", out.stdout)
            if not m:
                print(f"| {path} | {lanes} | {len(body)} | {cpu} | llvm-mca failed: "
                      f"{out.stderr.strip()[:80]} | |")
                continue
            cyc = int(m.group(1)) / 1000
            print(f"| {path} | {lanes} | {len(body)} | {cpu} | {cyc:.2f} | "
                  f"{cyc * 64 / lanes:.2f} |")
        Path(f.name).unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
