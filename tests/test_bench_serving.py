"""benchmarks/serving/load.py's own measures: the server CPU time it charges each query (the
server's process and every process under it) and the runtime that scores nothing, whose
cost a query is the bound the benchmark states for any runtime's ratio."""
from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("mlserver", reason=(
    "MLServer 1.7.1 serves no build for Python 3.13 and later (the serve extra leaves it out)"
    if sys.version_info >= (3, 13) else "the serve extra (MLServer) is not installed"))

from mlserver import types
from mlserver.settings import ModelSettings

from benchmarks.serving import floor_runtime, inside, load, timed_runtime

BUSY = "import time\nend = time.process_time() + {s}\nwhile time.process_time() < end: pass\n"


def test_server_cpu_counts_the_work_of_the_process_and_of_a_child_it_started():
    # the parent busy for 0.3 s of CPU, then its child for 0.3 s more, then both wait
    code = ("import subprocess, sys, time\n" + BUSY.format(s=0.3)
            + f"c = subprocess.Popen([sys.executable, '-c', {BUSY.format(s=0.3)!r}"
            " + 'time.sleep(30)'])\ntime.sleep(30)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    try:
        start = load.server_cpu(proc.pid)
        deadline = time.time() + 20
        while load.server_cpu(proc.pid) - start < 0.6 and time.time() < deadline:
            time.sleep(0.05)
        used = load.server_cpu(proc.pid)
        assert 0.6 <= used < 2.0, used          # both processes' 0.3 s, not the parent's alone
        time.sleep(0.3)
        assert load.server_cpu(proc.pid) - used < 0.1      # waiting costs no CPU
    finally:
        os.killpg(proc.pid, signal.SIGKILL)           # the parent and its child
        proc.wait()


def test_the_floor_runtime_answers_each_request_with_a_score_a_row():
    rt = floor_runtime.FloorRuntime(ModelSettings(name="floor",
                                                  implementation=floor_runtime.FloorRuntime))
    loop = asyncio.new_event_loop()
    try:
        assert loop.run_until_complete(rt.load())
        for rows in (1, 15, 40):
            req = types.InferenceRequest(inputs=[types.RequestInput(
                name="features", datatype="FP64", shape=[rows, 3], data=[0.5] * (rows * 3))])
            out = loop.run_until_complete(rt.predict(req)).outputs
            assert [o.shape for o in out] == [[rows, 1]]
            assert len(out[0].data.root) == rows
    finally:
        loop.close()


def test_the_load_benchmark_serves_every_runtime_with_batching_off_and_on():
    models = load.served("lightgbm")
    assert {impl for impl, _ in models.values()} == {
        load.OURS, load.FLOOR, load.PEERS["lightgbm"][1]}
    for impl in {impl for impl, _ in models.values()}:
        assert sorted(b for i, b in models.values() if i == impl) == [False, True]


def test_the_timed_runtime_scores_as_the_runtime_and_adds_up_its_three_steps(tmp_path):
    import lightgbm as lgb
    import numpy as np
    from mlserver.settings import ModelParameters

    from quickscorer.serving import QuickScorerRuntime
    rng = np.random.default_rng(5)
    X = rng.random((300, 4))
    path = tmp_path / "m.txt"
    lgb.train({"objective": "regression", "verbose": -1, "num_leaves": 8},
              lgb.Dataset(X, X[:, 0] - X[:, 1]), 10).save_model(path)

    def runtime(cls):
        rt = cls(ModelSettings(name="m", implementation=cls,
                               parameters=ModelParameters(uri=str(path))))
        loop.run_until_complete(rt.load())
        return rt

    loop = asyncio.new_event_loop()
    try:
        timed, plain = runtime(timed_runtime.TimedRuntime), runtime(QuickScorerRuntime)
        for rows in (1, 7, 40):
            req = types.InferenceRequest(inputs=[types.RequestInput(
                name="x", datatype="FP64", shape=[rows, 4], data=X[:rows].ravel().tolist())])
            got, want = (loop.run_until_complete(rt.predict(req)) for rt in (timed, plain))
            assert got.outputs[0].model_dump() == want.outputs[0].model_dump()
    finally:
        loop.close()
    assert timed.requests == 3 and all(ns > 0 for ns in timed.ns)
    log = tmp_path / "server.log"
    log.write_text("INFO start\n" + timed.line() + "\n")
    n, totals = inside.last_line(log)
    assert n == 3 and all(t > 0 for t in totals)
    assert inside.last_line(tmp_path / "m.txt") == (0, [0.0, 0.0, 0.0])   # no such line
