"""What the runtime costs inside a busy server, against the same work in a loop in one process.

One ``mlserver`` process serves the ranking model of ``load.py`` through ``TimedRuntime``
(``timed_runtime.py``: the runtime with a clock on its decode, ``Model.predict`` and response)
and through the runtime that scores nothing (``floor_runtime.py``); a client keeps ``C``
requests in flight for ``--seconds`` over each protocol, the server on one core and the
client on the others. Prints, for each protocol, the server's CPU time a query for both and
the timed runtime's thread time a request in each step, then the same three steps timed on
the same requests in this process (parsed as MLServer parses them), where the runtime's code
and data stay in the caches between requests.

    python -m benchmarks.serving.inside
    python -m benchmarks.serving.inside --concurrency 16 --seconds 10

Needs the bench extra (MLServer) and ``../shared``; two cores or more.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.serving import load as L
from quickscorer.bench import machine

HERE = Path(__file__).resolve().parent


TIMED = "timed_runtime.TimedRuntime"
LINE = re.compile(r"TIMED (\d+) decode ([\d.]+) predict ([\d.]+) encode ([\d.]+)")


def last_line(log: Path) -> tuple[int, list[float]]:
    """(requests, total microseconds of decode, predict, encode) of the log's last line."""
    found = LINE.findall(log.read_text())
    if not found:
        return 0, [0.0, 0.0, 0.0]
    n, *means = found[-1]
    return int(n), [float(m) * int(n) for m in means]


def in_process(model_path: Path, qs_: list, protocol: str, repeat: int) -> list[float]:
    """Mean microseconds a request of the three steps, in a loop in this process."""
    from mlserver import types
    from mlserver.grpc.converters import ModelInferRequestConverter
    from mlserver.settings import ModelParameters, ModelSettings

    from benchmarks.serving import timed_runtime as T
    T.EVERY = 1 << 62                                           # no log lines here
    runtime = T.TimedRuntime(ModelSettings(name="timed", implementation=T.TimedRuntime,
                                           parameters=ModelParameters(uri=str(model_path))))
    loop = asyncio.new_event_loop()
    loop.run_until_complete(runtime.load())
    if protocol == "rest":
        reqs = [types.InferenceRequest.model_validate_json(L.rest_body(X)) for X in qs_]
    else:
        reqs = [ModelInferRequestConverter.to_types(L.grpc_request("timed", X)) for X in qs_]
    for r in reqs:                                              # warm
        loop.run_until_complete(runtime.predict(r))
    runtime.requests, runtime.ns = 0, [0, 0, 0]
    for _ in range(repeat):
        for r in reqs:
            loop.run_until_complete(runtime.predict(r))
    loop.close()
    return [ns / runtime.requests / 1e3 for ns in runtime.ns]


async def serve(args, qs_, model_path) -> list[str]:
    models = {"timed": (TIMED, False), "floor": (L.FLOOR, False)}
    folder = Path(tempfile.mkdtemp(prefix="qs-inside-"))
    mine = sorted(os.sched_getaffinity(0))
    if len(mine) < 2:
        raise SystemExit("needs two cores: one for the server, the rest for the client")
    os.sched_setaffinity(0, set(mine[1:]))
    shutil.copy(HERE / "timed_runtime.py", folder)     # mlserver imports from its folder
    proc, http, grpc_port = L.start_server(folder, model_path, models, "model.bst", 0, 32,
                                           0.002, {mine[0]})
    out = []
    try:
        await L.wait_ready(http, proc, models)
        async with L.Client(http, grpc_port, qs_, models) as client:
            for protocol in args.protocols.split(","):
                for m in models:
                    await client.step(protocol, m, args.concurrency, 0.5)     # warm
                for m in models:
                    before = last_line(folder / "server.log")
                    cpu = L.server_cpu(proc.pid)
                    q, _, lat = await client.step(protocol, m, args.concurrency, args.seconds)
                    cpu = (L.server_cpu(proc.pid) - cpu) / len(lat) * 1e6
                    cells = ["-", "-", "-"]
                    if m == "timed":
                        time.sleep(0.2)                       # the log's last line written
                        after = last_line(folder / "server.log")
                        n = after[0] - before[0]
                        if n:
                            cells = [f"{(a - b) / n:.1f}" for a, b in zip(after[1], before[1])]
                    out.append(f"| {protocol} | {m} | {q:.0f} | {cpu:.0f} | "
                               + " | ".join(cells) + " |")
    finally:
        L.stop_server(proc, folder)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--protocols", default="grpc,rest")
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument("--repeat", type=int, default=20, help="rounds over the queries in process")
    args = p.parse_args(argv)
    qs_, model_path = L.queries("lightgbm")
    print(f"Machine: {machine()}")
    print(f"Command: python -m benchmarks.serving.inside "
          f"{' '.join(sys.argv[1:] if argv is None else argv)}\n")
    print("| where | model | queries/s | server CPU us/query | decode us | predict us "
          "| encode us |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for line in asyncio.run(serve(args, qs_, model_path)):
        print(line.replace("| grpc |", "| server, gRPC |").replace("| rest |", "| server, REST |"))
    for protocol in args.protocols.split(","):
        d, s, e = in_process(model_path, qs_, protocol, args.repeat)
        name = "gRPC" if protocol == "grpc" else "REST"
        print(f"| one process, {name} | timed | - | - | {d:.1f} | {s:.1f} | {e:.1f} |")
    print(f"\nC = {args.concurrency}, {args.seconds} s a step after a warm one; thread time a "
          f"request, means over the step (the server) or over {args.repeat} rounds of the "
          f"{len(qs_)} queries (one process).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
