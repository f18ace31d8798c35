"""Load test: quickscorer's MLServer runtime against mlserver-lightgbm (or mlserver-xgboost)
on one server.

One ``mlserver`` process serves the same 1,000-tree ranking model (LightGBM, or XGBoost with
``--source xgboost``; trained on the shared ranking data, ``benchmarks/cache/``) four times
through ``QuickScorerRuntime`` and through the training library's own runtime
(``mlserver_lightgbm.LightGBMModel``, ``mlserver_xgboost.XGBoostModel``), each with adaptive
batching off and on, and through a runtime that scores nothing (``floor_runtime.py``: what
the server itself costs a request, and so the most any runtime's ratio can be). An
asyncio client keeps ``C`` requests in flight (closed loop) for ``--seconds`` per step, at
rising ``C``, over REST (JSON) and gRPC (binary tensors), the runtimes interleaved step by
step; each request is one query of the shared test data (1 to 24 documents, mean 15). Every
distinct request is first checked against the training library's own ``predict`` through
each model.

    python -m benchmarks.serving.load                          # REST and gRPC, C = 1..32
    python -m benchmarks.serving.load --protocols grpc --concurrency 1,4,16 --seconds 5
    python -m benchmarks.serving.load --source xgboost

Also measures, in this process, the runtime's own cost per request (decode, score, encode of
a parsed request) against ``Model.predict`` on the same rows. Writes
``results/serving-*.md``: queries/s, documents/s, p50 and p99 latency per step, the server's
CPU time per query (its processes' user and system time over the step), and the highest
queries/s each model reaches within a p99 budget. ``--pin`` puts the server on one core and
the client on the rest, so that the client's work does not take the server's core. Needs the
bench extra (MLServer, mlserver-lightgbm, mlserver-xgboost) and ``../shared``.
"""
from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import workloads as W
from quickscorer.bench import machine

HERE = Path(__file__).resolve().parent


RESULTS = HERE.parent / "results"
BUDGETS_MS = (2, 5, 10, 20, 50)
OURS = "quickscorer.serving.QuickScorerRuntime"
#: source: (the peer's short name, its runtime, the model file name it looks for, package)
PEERS = {
    "lightgbm": ("lgb", "mlserver_lightgbm.LightGBMModel", "model.bst", "mlserver-lightgbm"),
    "xgboost": ("xgb", "mlserver_xgboost.XGBoostModel", "model.json", "mlserver-xgboost"),
}


#: the runtime that scores nothing (floor_runtime.py): the server's own cost of a request
FLOOR = "floor_runtime.FloorRuntime"


def served(source: str) -> dict:
    """name: (implementation, adaptive batching) of the six models one server serves."""
    peer, impl = PEERS[source][:2]
    return {"qs": (OURS, False), peer: (impl, False), "floor": (FLOOR, False),
            "qs-batched": (OURS, True), f"{peer}-batched": (impl, True),
            "floor-batched": (FLOOR, True)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def queries(source: str) -> tuple[list[np.ndarray], Path]:
    """The shared ranking test queries (rows float64) and the 1,000 x 31 ranking model."""
    wl = W.shared("shared-rank", 1000, 31, xgboost=source == "xgboost")
    d = W.shared_dir()
    X, _ = W._read_libsvm(d / "rank.test", n_features=wl.X.shape[1])
    sizes = np.loadtxt(d / "rank.test.query", dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    path = wl.xgb_path if source == "xgboost" else wl.lgb_path
    return [np.ascontiguousarray(X[s:s + n]) for s, n in zip(starts, sizes)], path


def truth(source: str, model_path: Path, qs_: list[np.ndarray]) -> list[np.ndarray]:
    """The training library's own scores of every query."""
    if source == "xgboost":
        import xgboost as xgb
        booster = xgb.Booster(model_file=str(model_path))
        return [booster.predict(xgb.DMatrix(X)) for X in qs_]
    import lightgbm as lgb
    booster = lgb.Booster(model_file=str(model_path))
    return [booster.predict(X) for X in qs_]


def server_cpu(pid: int) -> float:
    """CPU seconds (user and system) the server process and its descendants have used."""
    parent, cpu = {}, {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parent[int(d)] = int(fields[1])
            cpu[int(d)] = int(fields[11]) + int(fields[12])
    mine, grew = {pid}, True
    while grew:
        more = {p for p, pp in parent.items() if pp in mine} - mine
        grew, mine = bool(more), mine | more
    return sum(cpu.get(p, 0) for p in mine) / os.sysconf("SC_CLK_TCK")


def start_server(folder: Path, model_path: Path, models: dict, file_name: str, workers: int,
                 batch_size: int, batch_time: float, cores=None):
    http, grpc_port, metrics = free_port(), free_port(), free_port()
    (folder / "settings.json").write_text(json.dumps({
        "host": "127.0.0.1", "http_port": http, "grpc_port": grpc_port,
        "metrics_port": metrics, "parallel_workers": workers, "debug": False}))
    for name, (impl, batched) in models.items():
        (folder / name).mkdir()
        shutil.copy(model_path, folder / name / file_name)      # the peer's well-known name
        settings = {"name": name, "implementation": impl,
                    "parameters": {"uri": f"./{file_name}"}}
        if batched:
            settings.update(max_batch_size=batch_size, max_batch_time=batch_time)
        (folder / name / "model-settings.json").write_text(json.dumps(settings))
    shutil.copy(HERE / "floor_runtime.py", folder)      # mlserver imports from its folder
    exe = os.path.join(os.path.dirname(sys.executable), "mlserver")
    log = open(folder / "server.log", "w")
    pin = (lambda: os.sched_setaffinity(0, cores)) if cores else None
    proc = subprocess.Popen([exe, "start", str(folder)], stdout=log, stderr=subprocess.STDOUT,
                            cwd=folder, preexec_fn=pin)
    return proc, http, grpc_port


def stop_server(proc, folder: Path) -> None:
    """End the server and remove its model repository."""
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
    shutil.rmtree(folder, ignore_errors=True)


async def wait_ready(http: int, proc, models: dict, timeout: float = 300):
    import aiohttp
    end = time.time() + timeout
    async with aiohttp.ClientSession() as s:
        while time.time() < end:
            if proc.poll() is not None:
                raise RuntimeError("mlserver exited before it was ready")
            try:
                codes = []
                for m in models:
                    async with s.get(f"http://127.0.0.1:{http}/v2/models/{m}/ready") as r:
                        codes.append(r.status)
                if all(c == 200 for c in codes):
                    return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.5)
    raise RuntimeError("mlserver not ready in time")


def rest_body(X: np.ndarray) -> bytes:
    return json.dumps({"inputs": [{"name": "features", "shape": list(X.shape),
                                   "datatype": "FP64", "data": X.ravel().tolist()}]}).encode()


def grpc_request(model: str, X: np.ndarray):
    from mlserver.grpc import dataplane_pb2 as pb
    t = pb.ModelInferRequest.InferInputTensor(name="features", datatype="FP64",
                                              shape=list(X.shape))
    return pb.ModelInferRequest(model_name=model, inputs=[t],
                                raw_input_contents=[X.astype("<f8").tobytes()])


def grpc_scores(response) -> np.ndarray:
    fp32 = response.outputs[0].datatype == "FP32"
    if response.raw_output_contents:
        return np.frombuffer(response.raw_output_contents[0], "<f4" if fp32 else "<f8")
    c = response.outputs[0].contents
    return np.asarray(c.fp32_contents if fp32 else c.fp64_contents)


class Client:
    """REST and gRPC calls to one server, each request encoded once beforehand."""

    def __init__(self, http: int, grpc_port: int, qs_: list[np.ndarray], models: dict):
        self.http, self.grpc_port, self.queries, self.models = http, grpc_port, qs_, models

    async def __aenter__(self):
        import aiohttp
        import grpc
        from mlserver.grpc import dataplane_pb2_grpc
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0), headers={"Content-Type": "application/json"})
        self.channel = grpc.aio.insecure_channel(f"127.0.0.1:{self.grpc_port}")
        self.stub = dataplane_pb2_grpc.GRPCInferenceServiceStub(self.channel)
        self.bodies = [rest_body(X) for X in self.queries]
        self.pbs = {m: [grpc_request(m, X) for X in self.queries] for m in self.models}
        return self

    async def __aexit__(self, *exc):
        await self.session.close()
        await self.channel.close()

    async def call(self, protocol: str, model: str, i: int) -> np.ndarray:
        if protocol == "rest":
            url = f"http://127.0.0.1:{self.http}/v2/models/{model}/infer"
            async with self.session.post(url, data=self.bodies[i]) as r:
                body = await r.read()
                if r.status != 200:
                    raise RuntimeError(f"{model}: HTTP {r.status}: {body[:300]!r}")
                return body
        return await self.stub.ModelInfer(self.pbs[model][i], timeout=60)

    async def check(self, protocol: str, model: str, truth: list[np.ndarray]):
        for i, t in enumerate(truth):
            res = await self.call(protocol, model, i)
            if protocol == "rest":
                got = np.asarray(json.loads(res)["outputs"][0]["data"], np.float64)
            else:
                got = grpc_scores(res)
            if not np.array_equal(got.reshape(-1), t):
                raise AssertionError(f"{model} over {protocol}: query {i} differs from "
                                     "the training library (max "
                                     f"{np.max(np.abs(got.reshape(-1) - t))})")

    async def step(self, protocol: str, model: str, concurrency: int, seconds: float):
        """(queries done, documents done, latencies in seconds) of one closed-loop step."""
        lat: list[float] = []
        docs = [0]
        end = time.perf_counter() + seconds
        order = np.random.default_rng(concurrency).permutation(len(self.queries))

        async def worker(k: int):
            j = k
            while time.perf_counter() < end:
                i = int(order[j % len(order)])
                j += concurrency
                t0 = time.perf_counter()
                await self.call(protocol, model, i)
                lat.append(time.perf_counter() - t0)
                docs[0] += self.queries[i].shape[0]

        t0 = time.perf_counter()
        await asyncio.gather(*(worker(k) for k in range(concurrency)))
        wall = time.perf_counter() - t0
        return len(lat) / wall, docs[0] / wall, np.array(lat)


def runtime_cost(model_path: Path, qs_: list[np.ndarray], repeat: int) -> list[str]:
    """The runtime's decode + score + encode of a parsed V2 request against Model.predict
    on the same rows, interleaved, one thread, in this process."""
    from mlserver import types
    from mlserver.settings import ModelParameters, ModelSettings

    import quickscorer
    from quickscorer.bench import interleaved
    from quickscorer.serving import QuickScorerRuntime

    settings = ModelSettings(name="cost", implementation=QuickScorerRuntime,
                             parameters=ModelParameters(uri=str(model_path)))
    runtime = QuickScorerRuntime(settings)
    loop = asyncio.new_event_loop()
    loop.run_until_complete(runtime.load())
    model = quickscorer.load(model_path)
    from mlserver.grpc.converters import ModelInferRequestConverter
    reqs = [types.InferenceRequest.model_validate_json(rest_body(X)) for X in qs_]
    raws = [ModelInferRequestConverter.to_types(grpc_request("cost", X)) for X in qs_]
    n_docs = sum(X.shape[0] for X in qs_)

    def each(call, items):
        def run():
            for item in items:
                call(item)
            return n_docs
        return run

    def in_loop(r):
        loop.run_until_complete(runtime.predict(r))

    t = interleaved([each(model.predict, qs_), each(runtime._predict, reqs),
                     each(runtime._predict, raws), each(in_loop, reqs)], repeat)
    loop.close()
    per_q = [x.median * 1e6 * n_docs / len(qs_) for x in t]
    names = ["Model.predict on the rows", "runtime: a REST request (JSON numbers)",
             "runtime: a gRPC request (binary tensor)", "runtime: REST, through an event loop"]
    return ["| path | us per request | vs Model.predict |", "| --- | ---: | ---: |"] + [
        f"| {n} | {v:.1f} | {v / per_q[0]:.2f}x |" for n, v in zip(names, per_q)] + [
        "", f"{len(qs_)} requests of {n_docs / len(qs_):.1f} documents on average, "
            f"{qs_[0].shape[1]} features; a request parsed as MLServer parses it, then the "
            f"runtime's decode, score and encode, one thread, interleaved, median of "
            f"{repeat} rounds."]


async def run(args) -> list[str]:
    qs_, model_path = queries(args.source)
    want = truth(args.source, model_path, qs_)
    models = served(args.source)
    peer, _, file_name, package = PEERS[args.source]
    folder = Path(tempfile.mkdtemp(prefix="qs-serving-"))
    cores = None
    if args.pin:
        mine = sorted(os.sched_getaffinity(0))
        if len(mine) < 2:
            raise SystemExit("--pin needs two cores: one for the server, the rest for the client")
        cores = {mine[0]}
        os.sched_setaffinity(0, set(mine[1:]))
    proc, http, grpc_port = start_server(folder, model_path, models, file_name, args.workers,
                                         args.batch_size, args.batch_time, cores)
    lines = []
    try:
        await wait_ready(http, proc, models)
        async with Client(http, grpc_port, qs_, models) as client:
            for protocol in args.protocols.split(","):
                for m in models:
                    if not m.startswith("floor"):
                        await client.check(protocol, m, want)
            print("scores checked: every query, both runtimes, "
                  f"{args.protocols}, batching off and on: equal to {args.source}", flush=True)
            rows = []
            for protocol in args.protocols.split(","):
                for c in [int(x) for x in args.concurrency.split(",")]:
                    names = list(models)
                    for r in range(args.rounds):
                        for m in (names if r % 2 == 0 else names[::-1]):
                            await client.step(protocol, m, c, 0.3)      # warm
                            cpu = server_cpu(proc.pid)
                            q, d, lat = await client.step(protocol, m, c, args.seconds)
                            cpu = (server_cpu(proc.pid) - cpu) / len(lat) * 1e6
                            p50, p99 = (np.percentile(lat, [50, 99]) * 1e3).tolist()
                            rows.append((protocol, m, c, r, q, d, p50, p99, cpu))
                            print(f"{protocol} {m} C={c}: {q:.0f} q/s, {d:.0f} docs/s, "
                                  f"p50 {p50:.2f} ms, p99 {p99:.2f} ms, "
                                  f"server CPU {cpu:.0f} us/query", flush=True)
    finally:
        stop_server(proc, folder)
    lines += ["| protocol | model | concurrency | queries/s | documents/s | p50 ms | p99 ms "
              "| server CPU us/query |", "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    best = {}
    for protocol, m, c, _round, q, d, p50, p99, cpu in rows:
        key = (protocol, m, c)
        if key not in best or q > best[key][0]:       # the best of the rounds
            best[key] = (q, d, p50, p99, cpu)
    for (protocol, m, c), (q, d, p50, p99, cpu) in best.items():
        lines.append(f"| {protocol} | {m} | {c} | {q:.0f} | {d:.0f} | {p50:.2f} | {p99:.2f} "
                     f"| {cpu:.0f} |")
    lines += ["", "Server CPU per query (user and system time of the server's processes over "
              "a step, over its queries; the least over the steps). The floor is a runtime "
              "that scores nothing (floor_runtime.py): the peer's cost over the floor's "
              "bounds what any runtime's ratio can be on this server.",
              "", f"| protocol | batching | quickscorer us | {package} us | floor us | ratio "
              "| bound |", "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for protocol in args.protocols.split(","):
        for suffix, label in (("", "off"), ("-batched", "on")):
            a, b, f = (min(v[4] for (p, mm, c), v in best.items() if p == protocol and mm == m)
                       for m in ("qs" + suffix, peer + suffix, "floor" + suffix))
            lines.append(f"| {protocol} | {label} | {a:.0f} | {b:.0f} | {f:.0f} | {b / a:.2f}x "
                         f"| {b / f:.2f}x |")
    lines += ["", "Highest queries/s within a p99 budget (each model's best step whose p99 "
              f"is within it; none: no step kept its p99 within; ours against {package}):",
              "", f"| protocol | batching | p99 budget | quickscorer q/s | {package} q/s "
              "| ratio |", "| --- | --- | ---: | ---: | ---: | ---: |"]
    for protocol in args.protocols.split(","):
        for suffix, label in (("", "off"), ("-batched", "on")):
            for budget in BUDGETS_MS:
                def top(m):
                    ok = [v[0] for (p, mm, c), v in best.items()
                          if p == protocol and mm == m and v[3] <= budget]
                    return max(ok) if ok else float("nan")
                a, b = top("qs" + suffix), top(peer + suffix)
                ratio = f"{a / b:.2f}x" if b == b and a == a else "-"
                shown = ["none" if v != v else f"{v:.0f}" for v in (a, b)]
                lines.append(f"| {protocol} | {label} | {budget} ms | {shown[0]} | "
                             f"{shown[1]} | {ratio} |")
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--source", choices=sorted(PEERS), default="lightgbm",
                   help="the model's library, and so the peer runtime")
    p.add_argument("--protocols", default="rest,grpc")
    p.add_argument("--concurrency", default="1,2,4,8,16,32")
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--rounds", type=int, default=2,
                   help="steps per model and concurrency, orders alternated; the best is kept")
    p.add_argument("--workers", type=int, default=1, help="MLServer parallel_workers")
    p.add_argument("--batch-size", type=int, default=32, help="max_batch_size when batching")
    p.add_argument("--batch-time", type=float, default=0.002,
                   help="max_batch_time (seconds) when batching")
    p.add_argument("--cost-repeat", type=int, default=15)
    p.add_argument("--pin", action="store_true",
                   help="the server on one core of this process's, the client on the others")
    p.add_argument("--out")
    args = p.parse_args(argv)
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out = Path(args.out) if args.out else RESULTS / f"serving-{stamp}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    head = [f"Machine: {machine()}",
            f"Command: python -m benchmarks.serving.load "
            f"{' '.join(sys.argv[1:] if argv is None else argv)}",
            f"MLServer parallel_workers {args.workers}; batching: max_batch_size "
            f"{args.batch_size}, max_batch_time {args.batch_time} s; closed loop, "
            f"{args.seconds} s a step, best of {args.rounds} rounds"
            + ("; the server on one core, the client on the others." if args.pin else "."), ""]
    qs_, model_path = queries(args.source)
    cost = runtime_cost(model_path, qs_, args.cost_repeat)
    print("\n".join(cost), flush=True)
    lines = asyncio.run(run(args))
    out.write_text("\n".join(head + ["The runtime's own cost, in one process:", ""] + cost
                             + ["", "Under load:", ""] + lines) + "\n")
    print("\n".join(lines))
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
