"""Whether two builds of the kernels hold the same machine code, function by function.

A change that should not touch the kernels (comments, names, docstrings, a header split)
leaves every function's instruction sequence as it was; this compares the ``objdump``
disassembly of each extension module of two builds, opcode by opcode (operands are left out:
addresses of constants and strings move whenever a docstring does). A function renamed in C
is paired through ``--renamed OLD=NEW`` prefixes, and a module that moved or was renamed
through ``--module OLD=NEW`` (dotted names): its file is found by the new name, and the names
Cython gives its functions (which spell the module's dotted name) are read as the new ones.

    mkdir /tmp/before && cp --parents $(find quickscorer -name "*.so") /tmp/before/
    python setup.py build_ext --inplace          # the build after the change
    python -m benchmarks.machine_code /tmp/before/quickscorer quickscorer --renamed qs_walk=walk
    python -m benchmarks.machine_code /tmp/before/quickscorer quickscorer \
        --module quickscorer._walk=quickscorer.algorithms._walk
"""
from __future__ import annotations

import argparse
import importlib.machinery
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


def cython_name(module: str) -> str:
    """How Cython spells a dotted module name inside its C names: each part prefixed by its
    length (``quickscorer._walk``: ``11quickscorer_5_walk``)."""
    return "_".join(f"{len(part)}{part}" for part in module.split("."))


def extension_modules(folder: Path) -> dict[str, Path]:
    """The extension modules under ``folder`` (a package's directory) by dotted name: this
    interpreter's builds where the folder holds several Pythons' (``_walk.cpython-311-...so``
    beside ``-313``), else the one there is."""
    out = {}
    mine = importlib.machinery.EXTENSION_SUFFIXES[0]
    for so in sorted(folder.rglob("_*.so"), key=lambda p: p.name.endswith(mine)):
        rel = so.relative_to(folder.parent).with_name(so.name.split(".")[0])
        out[".".join(rel.parts)] = so
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("before", type=Path, help="folder of the first build's extension modules")
    p.add_argument("after", type=Path, help="folder of the second build's")
    p.add_argument("--renamed", action="append", default=[],
                   help="OLD=NEW: a C name prefix renamed between the builds")
    p.add_argument("--module", action="append", default=[],
                   help="OLD=NEW: an extension module's dotted name in each build")
    args = p.parse_args(argv)
    renames = [tuple(r.split("=", 1)) for r in args.renamed]
    moved = dict(m.split("=", 1) for m in args.module)
    spelled = [(cython_name(old), cython_name(new)) for old, new in moved.items()]
    # the module's init functions carry its last name alone
    inits = {f"{prefix}{old.rsplit('.', 1)[1]}": f"{prefix}{new.rsplit('.', 1)[1]}"
             for old, new in moved.items() for prefix in ("PyInit_", "__pyx_pymod_exec_")}
    before, after = extension_modules(args.before), extension_modules(args.after)
    differing = 0
    print("| module | functions | same opcodes | differ | unpaired |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for module, so in sorted(before.items()):
        twin = after.get(moved.get(module, module))
        if twin is None:
            print(f"| {module} | missing in {args.after} | | | |")
            differing += 1
            continue
        fb, fa = functions(so), functions(twin)
        same = differ = unpaired = 0
        for name, ops in fb.items():
            new = name
            for old, rename in renames:
                if new.startswith(old):
                    new = rename + new[len(old):]
            for old, rename in spelled:
                new = new.replace(old, rename)
            new = inits.get(new, new)
            if new not in fa:
                unpaired += 1
            elif fa[new] == ops:
                same += 1
            else:
                differ += 1
        differing += differ + unpaired
        print(f"| {module} | {len(fb)} | {same} | {differ} | {unpaired} |")
    print("same machine code" if differing == 0 else f"{differing} functions differ or unpaired")
    return 0 if differing == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
