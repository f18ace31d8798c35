"""Whether two builds of the kernels hold the same machine code, function by function.

A change that should not touch the kernels (comments, names, docstrings, a header split)
leaves every function's instruction sequence as it was; this compares the ``objdump``
disassembly of each extension module of two builds, opcode by opcode (operands are left out:
addresses of constants and strings move whenever a docstring does). A function renamed in C
is paired through ``--renamed OLD=NEW`` prefixes.

    cp quickscorer/*.so /tmp/before/             # the build before the change
    python setup.py build_ext --inplace          # the build after it
    python benchmarks/machine_code.py /tmp/before quickscorer --renamed qs_walk=walk
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path


def functions(so: Path) -> dict[str, list[str]]:
    """Each function's opcodes, in order, by symbol name."""
    text = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(so)], check=True,
                          capture_output=True, text=True).stdout
    out: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        head = re.match(r"^[0-9a-f]+ <(.+)>:$", line)
        if head:
            current = out.setdefault(head.group(1), [])
            continue
        insn = re.match(r"^\s+[0-9a-f]+:\s+(\S+)", line)
        if insn and current is not None:
            current.append(insn.group(1))
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("before", type=Path, help="folder of the first build's extension modules")
    p.add_argument("after", type=Path, help="folder of the second build's")
    p.add_argument("--renamed", action="append", default=[],
                   help="OLD=NEW: a C name prefix renamed between the builds")
    args = p.parse_args(argv)
    renames = [tuple(r.split("=", 1)) for r in args.renamed]
    differing = 0
    print("| module | functions | same opcodes | differ | unpaired |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for so in sorted(args.before.glob("_*.so")):
        stem = so.name.split(".")[0]
        twins = sorted(args.after.glob(f"{stem}.*so"))
        if not twins:
            print(f"| {stem} | missing in {args.after} | | | |")
            differing += 1
            continue
        fb, fa = functions(so), functions(twins[0])
        same = differ = unpaired = 0
        for name, ops in fb.items():
            new = name
            for old, rename in renames:
                if new.startswith(old):
                    new = rename + new[len(old):]
            if new not in fa:
                unpaired += 1
            elif fa[new] == ops:
                same += 1
            else:
                differ += 1
        differing += differ + unpaired
        print(f"| {stem} | {len(fb)} | {same} | {differ} | {unpaired} |")
    print("same machine code" if differing == 0 else f"{differing} functions differ or unpaired")
    return 0 if differing == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
