"""The C library (libquickscorer) against Python's ``predict``, one model and the same rows.

    python -m benchmarks.capi                        # the shapes below, 1 / 100 / 10,000 rows
    python -m benchmarks.capi --shapes full-uniform-300x64 --batch 1,100 --repeat 9

Each model is compiled to a ``.qsm``; ``quickscorer.load`` opens it for Python, ``qs_open``
for C. In one process, interleaved (``quickscorer.bench.interleaved``), ``--repeat`` rounds of
about ``--rows`` rows each: Python's ``predict`` of float32 rows, a call per ``batch`` rows,
and ``qs_predict`` of the same rows, called in a loop in C (benchmarks/capi_bench.c, built
here against the installed header and library) so that no Python is timed. One thread.
Microseconds a row, the median of the rounds, and C's throughput over Python's. Before the
rounds every C score is checked equal to Python's, bit for bit. With ``--java``, the same
calls from Java (``org.quickscorer.Model.predict``, benchmarks/java/CallCost.java, in a JVM of
its own after two rounds of warm-up) and what a Java call costs over the C call.
"""
from __future__ import annotations

import argparse
import ctypes
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import quickscorer
from benchmarks import matrix
from quickscorer import capi
from quickscorer.bench import Measured, interleaved

HERE = Path(__file__).resolve().parent
SHAPES = "full-uniform-300x64,full-uniform-300x255,xgb-depth6-uniform-300"


def build_harness(out: Path) -> ctypes.CDLL:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise SystemExit("benchmarks.capi: no C compiler to build capi_bench.c with")
    lib = out / "capi_bench.so"
    subprocess.run([cc, "-O2", "-fPIC", "-shared", *capi.cflags().split(),
                    str(HERE / "capi_bench.c"), "-o", str(lib), *capi.libs().split()],
                   check=True)
    h = ctypes.CDLL(str(lib))
    h.bench_predict.restype = ctypes.c_double
    h.bench_predict.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                ctypes.c_int64, ctypes.c_int64, ctypes.c_int, ctypes.c_int,
                                ctypes.c_void_p]
    return h


def build_java(out: Path) -> list[str]:
    """The Java binding (src/java/) and benchmarks/java/CallCost.java built into ``out``: the
    command line that runs CallCost."""
    javac = shutil.which("javac")
    if javac is None:
        raise SystemExit("benchmarks.capi --java: no javac (Debian: openjdk-17-jdk-headless)")
    home = Path(javac).resolve().parents[1]
    tree = HERE.parent
    subprocess.run(["cc", "-O2", "-fPIC", "-shared", f"-I{home / 'include'}",
                    f"-I{home / 'include' / 'linux'}", *capi.cflags().split(),
                    str(tree / "src" / "java" / "quickscorer_jni.c"), "-o",
                    str(out / "libquickscorer_jni.so"), *capi.libs().split()], check=True)
    sources = sorted((tree / "src" / "java" / "org" / "quickscorer").glob("*.java"))
    subprocess.run([javac, "-d", str(out / "classes"), *map(str, sources),
                    str(HERE / "java" / "CallCost.java")], check=True)
    return ["java", f"-Djava.library.path={out}", "-cp", str(out / "classes"), "CallCost"]


def java_call(cmd: list[str], qsm: Path, rows: Path, batch: int, calls: int,
              rounds: int) -> float:
    """The median seconds of a Java predict call of ``batch`` rows."""
    out = subprocess.run([*cmd, str(qsm), str(rows), str(batch), str(calls), str(rounds)],
                         capture_output=True, text=True, check=True)
    return float(np.median([float(v) for v in out.stdout.split()]))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", default=SHAPES)
    p.add_argument("--batch", default="1,100,10000")
    p.add_argument("--rows", type=int, default=10_000, help="rows a round scores")
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--java", action="store_true",
                   help="also time a call from Java (src/java/, a JVM of its own), and what "
                        "it adds to the same call from C")
    args = p.parse_args(argv)
    batches = [int(b) for b in args.batch.split(",")]
    print(f"# {platform.processor() or platform.machine()}, {matrix.cpu_flags()}; "
          f"quickscorer {quickscorer.__version__}, one thread")
    java_cols = " Java predict (us/row) | Java's cost over C (us/call) |" if args.java else ""
    print("| model | rows a call | Python predict (us/row) | qs_predict (us/row) | "
          f"C / Python throughput |{java_cols}")
    print("| --- | ---: | ---: | ---: | ---: |" + (" ---: | ---: |" if args.java else ""))
    with tempfile.TemporaryDirectory() as tmp:
        harness = build_harness(Path(tmp))
        java = build_java(Path(tmp)) if args.java else None
        for shape in args.shapes.split(","):
            wl = matrix.workload(shape, max(args.rows, max(batches)))
            source = wl.xgb_path if shape.startswith("xgb") else wl.lgb_path
            path = quickscorer.load(source).save(Path(tmp) / f"{shape}.qsm")
            model = quickscorer.load(path)
            c = capi.CModel(path)
            X = np.ascontiguousarray(wl.X, np.float32)
            np.testing.assert_array_equal(c.predict(X), np.asarray(
                model.predict(X), np.float64).reshape(X.shape[0], -1))
            for batch in batches:
                calls = max(1, args.rows // batch)
                windows = [X[(i * batch) % (X.shape[0] - batch + 1):][:batch]
                           for i in range(calls)]
                out = np.empty((batch, c.n_outputs()))

                def python(windows=windows):
                    for w in windows:
                        model.predict(w)
                    return len(windows) * windows[0].shape[0]

                def c_loop(batch=batch, calls=calls, out=out):
                    s = harness.bench_predict(c._h, X.ctypes.data, X.shape[0], X.shape[1],
                                              batch, calls, 1, out.ctypes.data)
                    if s < 0:
                        raise RuntimeError(capi.library().qs_last_error().decode())
                    return Measured(s / (batch * calls))

                tp, tc = interleaved([python, c_loop], args.repeat)
                py_us, c_us = 1e6 * tp.median, 1e6 * tc.median
                more = ""
                if java is not None:
                    rows = Path(tmp) / "rows.f32"
                    X.astype("<f4").tofile(rows)
                    j_us = 1e6 * java_call(java, path, rows, batch, calls, args.repeat) / batch
                    more = f" {j_us:.3f} | {(j_us - c_us) * batch:+.3f} |"
                print(f"| {shape} | {batch:,} | {py_us:.3f} | {c_us:.3f} | "
                      f"{py_us / c_us:.2f}x |{more}", flush=True)
            c.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
