"""Memory of several models served by one MLServer: the server's own baseline, then what each
model loaded through ``QuickScorerRuntime`` adds, against what ``Model.memory()`` says.

    python -m benchmarks.serving.memory                       # 4 models, one worker process
    python -m benchmarks.serving.memory --workers 0           # models in the server process
    python -m benchmarks.serving.memory --workers 2 --models full-uniform-1000x64,ltr-1000x64

An ``mlserver`` process starts on an empty model repository; its memory (and its workers')
is read once it is ready, and again after each model is loaded through the repository API
(``POST /v2/repository/models/<name>/load``; first the package's small sample model, whose
load also imports quickscorer in the server and each worker), a scored request checked against
``Model.predict`` and a second's pause. Memory is the proportional set size (PSS,
``/proc/<pid>/smaps_rollup``: a page shared by k processes counts 1/k to each, so forked
workers' shared pages count once) and the resident set (RSS), summed over the server and
every process below it. ``Model.memory()`` is read in this process from a model loaded and
warmed as the runtime warms it (one call each of 1, 16 and 256 rows), times the processes
that load each model (every inference worker; the server process itself with ``--workers
0``). Writes ``results/serving-memory-*.md``. Linux only (``/proc``).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np

from benchmarks import workloads as W
from benchmarks.serving.load import free_port, stop_server
from quickscorer.bench import machine

HERE = Path(__file__).resolve().parent


RESULTS = HERE.parent / "results"
MiB = 1 << 20


def model_file(shape: str) -> Path:
    """A model of the benchmark's shapes (trained into benchmarks/cache/ on first use):
    ``full-<kind>-<trees>x<leaves>``, ``ltr-<trees>x<leaves>`` or ``shared-rank-<trees>x<leaves>``;
    ``demo``: the package's small sample model."""
    if shape == "demo":
        from quickscorer import data
        return Path(data.__file__).parent / "demo_model.txt"
    head, size = shape.rsplit("-", 1)
    trees, leaves = (int(v) for v in size.split("x"))
    if head.startswith("full-"):
        return W.full(trees, leaves, kind=head.split("-", 1)[1]).lgb_path
    if head == "ltr":
        return W.ltr(trees, leaves, xgboost=False).lgb_path
    if head.startswith("shared-"):
        return W.shared(head, trees, leaves, xgboost=False).lgb_path
    raise SystemExit(f"unknown model shape {shape!r}")


def tree_pids(root: int) -> list[int]:
    """``root`` and every process below it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


def memory_of(root: int) -> dict[int, tuple[int, int]]:
    """pid: (PSS, RSS) in bytes, for ``root`` and the processes below it."""
    out = {}
    for pid in tree_pids(root):
        try:
            fields = dict(line.split(":", 1) for line in
                          Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:])
        except OSError:
            continue
        kib = {k: int(v.split()[0]) * 1024 for k, v in fields.items()}
        out[pid] = (kib["Pss"], kib["Rss"])
    return out


def call(port: int, path: str, body: dict | None = None) -> tuple[int, dict]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}",
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"},
                                 method="GET" if body is None else "POST")
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            text = r.read()
            return r.status, json.loads(text) if text else {}
    except urllib.error.HTTPError as e:
        return e.code, {"error": e.read().decode(errors="replace")}


def wait(port: int, path: str, proc, timeout: float = 300) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if proc.poll() is not None:
            raise RuntimeError("mlserver exited")
        try:
            if call(port, path)[0] == 200:
                return
        except (urllib.error.URLError, ConnectionError):
            pass
        time.sleep(0.3)
    raise RuntimeError(f"{path} not ready in {timeout} s")


def settle(root: int, seconds: float = 1.0) -> dict[int, tuple[int, int]]:
    time.sleep(seconds)
    return memory_of(root)


def main(argv=None) -> int:
    import quickscorer
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", default="full-uniform-1000x31,full-uniform-1000x64,"
                                       "ltr-1000x64,full-uniform-1000x255")
    p.add_argument("--workers", type=int, default=1, help="MLServer parallel_workers")
    p.add_argument("--out")
    args = p.parse_args(argv)
    shapes = ["demo"] + args.models.split(",")
    files = {s: model_file(s) for s in shapes}
    held = {}
    for s, path in files.items():
        m = quickscorer.load(path)
        for rows in (1, 16, 256):                       # as QuickScorerRuntime.load warms it
            m.predict(np.zeros((rows, m.n_features)))
        held[s] = m.memory()["total_bytes"]
        del m
    copies = max(args.workers, 1)
    folder = Path(tempfile.mkdtemp(prefix="qs-serving-memory-"))
    http, grpc_port, metrics = free_port(), free_port(), free_port()
    (folder / "settings.json").write_text(json.dumps({
        "host": "127.0.0.1", "http_port": http, "grpc_port": grpc_port,
        "metrics_port": metrics, "parallel_workers": args.workers, "debug": False}))
    exe = os.path.join(os.path.dirname(sys.executable), "mlserver")
    log = open(folder / "server.log", "w")
    proc = subprocess.Popen([exe, "start", str(folder)], stdout=log, stderr=subprocess.STDOUT,
                            cwd=folder)
    rows = []
    try:
        wait(http, "/v2/health/ready", proc)
        base = settle(proc.pid, 3.0)
        prev = base
        rng = np.random.default_rng(0)
        for i, s in enumerate(shapes):
            name = f"m{i}"
            (folder / name).mkdir()
            shutil.copy(files[s], folder / name / "model.txt")
            (folder / name / "model-settings.json").write_text(json.dumps({
                "name": name, "implementation": "quickscorer.serving.QuickScorerRuntime",
                "parameters": {"uri": "./model.txt"}}))
            code, res = call(http, f"/v2/repository/models/{name}/load", {})
            if code != 200:
                raise RuntimeError(f"loading {s}: HTTP {code} {res}")
            wait(http, f"/v2/models/{name}/ready", proc)
            model = quickscorer.load(files[s])
            X = rng.random((15, model.n_features))
            code, res = call(http, f"/v2/models/{name}/infer", {"inputs": [{
                "name": "x", "shape": list(X.shape), "datatype": "FP64",
                "data": X.ravel().tolist()}]})
            if code != 200 or not np.array_equal(np.asarray(res["outputs"][0]["data"]),
                                                 model.predict(X)):
                raise RuntimeError(f"{s}: the served scores differ from Model.predict")
            now = settle(proc.pid)
            pss = sum(v[0] for v in now.values()) - sum(v[0] for v in prev.values())
            rss = sum(v[1] for v in now.values()) - sum(v[1] for v in prev.values())
            rows.append((s, held[s], held[s] * copies, pss, rss,
                         sum(v[0] for v in now.values())))
            grew = {pid: (now[pid][0] - prev.get(pid, (0, 0))[0]) / MiB for pid in now}
            print(f"{s}: Model.memory {held[s] / MiB:.1f} MiB x {copies}, server PSS "
                  f"+{pss / MiB:.1f} MiB, RSS +{rss / MiB:.1f} MiB; PSS by process "
                  + ", ".join(f"{'server' if pid == proc.pid else pid} +{v:.1f}"
                              for pid, v in grew.items()), flush=True)
            prev = now
    finally:
        stop_server(proc, folder)
        log.close()
    base_pss = sum(v[0] for v in base.values())
    base_rss = sum(v[1] for v in base.values())
    lines = [f"Machine: {machine()}",
             f"Command: python -m benchmarks.serving.memory "
             f"{' '.join(sys.argv[1:] if argv is None else argv)}",
             f"MLServer parallel_workers {args.workers}: {len(base)} process"
             f"{'es' if len(base) != 1 else ''} at start, "
             f"PSS {base_pss / MiB:.1f} MiB, RSS {base_rss / MiB:.1f} MiB (the baseline).", "",
             "| model | Model.memory() | x processes loading it | server PSS added | "
             "server RSS added | added PSS / expected | server PSS after |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for s, h, want, pss, rss, total in rows:
        lines.append(f"| {s} | {h / MiB:.1f} MiB | {want / MiB:.1f} MiB | {pss / MiB:.1f} MiB "
                     f"| {rss / MiB:.1f} MiB | {pss / want:.2f} | {total / MiB:.1f} MiB |")
    all_pss = sum(r[3] for r in rows[1:])
    all_want = sum(r[2] for r in rows[1:])
    lines += ["", "demo: the package's sample model, loaded first; what it adds is mostly "
                  "quickscorer's modules, imported by the server and each worker on the first "
                  "load.", "",
              f"The {len(rows) - 1} model(s) after it: PSS added {all_pss / MiB:.1f} MiB against "
                  f"{all_want / MiB:.1f} MiB from Model.memory() "
                  f"({all_pss / all_want:.2f}x); the server's PSS is the baseline plus "
                  f"{all_pss / MiB:.1f} MiB."]
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = Path(args.out) if args.out else RESULTS / f"serving-memory-{stamp}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
