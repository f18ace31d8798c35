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
from pathlib import Path

import pytest

pytest.importorskip("mlserver", reason="the serve extra (MLServer) is not installed")

from mlserver import types  # noqa: E402
from mlserver.settings import ModelSettings  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks" / "serving"))

import floor_runtime  # noqa: E402
import load  # noqa: E402

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
