"""quickscorer.show_config and ``quickscorer info --system``: what the build is and which path
each kernel takes on this CPU, consistent with what the kernels themselves report."""
from __future__ import annotations

import io
import os
import platform

import numpy as np
import pytest

import quickscorer
from quickscorer import config, threads
from quickscorer.algorithms import cpu
from quickscorer.cli import main
from quickscorer.ir import reference


def test_the_config_reports_the_build_and_this_cpus_paths(monkeypatch):
    monkeypatch.delenv("QUICKSCORER_ISA", raising=False)
    c = config.config()
    assert c["quickscorer"] == quickscorer.__version__ and c["numpy"] == np.__version__
    build = c["build"]
    if platform.machine() in ("x86_64", "AMD64") and "gcc" in build["compiler"]:
        assert build["compiled_paths"] == ["scalar", "avx2", "avx512"]
        if os.environ.get("QUICKSCORER_OPENMP") == "0":     # built without it on purpose
            assert not build["openmp"] and not threads.OPENMP
        else:
            assert build["openmp"] and build["openmp_version"] >= 201107   # OpenMP 3.1+
    if platform.machine() in ("aarch64", "arm64") and build["compiler"] != "unknown":
        # the build requirement simde-py brings SIMDe's headers: the NEON path is in
        assert build["compiled_paths"] == ["scalar", "neon"] and "neon" in c["cpu_paths"]
    assert set(c["cpu_paths"]) <= set(build["compiled_paths"]) and "scalar" in c["cpu_paths"]
    paths = c["kernel_paths"]
    assert paths["vqs"] == cpu.available_isas()[-1]         # the widest this CPU runs
    assert paths["rapidscorer"] in c["cpu_paths"] and paths["oblivious"] != "avx512"
    if build["emulated_avx512"]:                            # a test build: every path runs
        assert "avx512" in c["cpu_paths"]
    # the kernels fuse a linear leaf's terms and DART's weighted leaves exactly where the
    # reference does (AArch64, where the source libraries' wheels fuse them)
    assert build["fused_sums"] == reference.FUSED_SUMS
    assert build["fused_sums"] == (platform.machine().lower() in ("aarch64", "arm64"))


def test_a_forced_instruction_set_shows_and_a_refused_one_says_why(monkeypatch):
    monkeypatch.setenv("QUICKSCORER_ISA", "scalar")
    c = config.config()
    assert c["kernel_paths"]["vqs"] == "scalar" and c["kernel_paths"]["rapidscorer"] == "scalar"
    assert c["switches"]["QUICKSCORER_ISA"] == "scalar"
    monkeypatch.setenv("QUICKSCORER_ISA", "sse9")
    assert config.config()["kernel_paths"]["vqs"].startswith("refused: unknown instruction set")


def test_show_config_and_info_system_print_every_fact(capsys):
    out = io.StringIO()
    quickscorer.show_config(out)
    text = out.getvalue()
    for key in ("quickscorer", "compiler", "openmp", "compiled_paths", "cpu_paths", "vqs",
                "rapidscorer level walk"):
        assert key in text
    assert main(["info", "--system"]) == 0
    assert "kernel_paths:" in capsys.readouterr().out
    assert main(["info"]) == 2
    with pytest.raises(SystemExit):
        main(["info", "--no-such-flag"])
