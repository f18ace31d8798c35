"""``quickscorer bench``: time a user's own model on their own rows (or generated ones); and
:func:`interleaved`, the one timing loop of this command and of every script in
``benchmarks/``.

This library's default ``predict`` and every fast algorithm that can score the model, and
LightGBM / XGBoost when they are installed and can read the file, are timed interleaved (one
run of each engine in turn, so a machine whose speed drifts slows every engine alike) in
calls of each batch size, with the same thread count; the table gives microseconds per
document (median of the runs), each engine against LightGBM or XGBoost, and whether its raw
scores equal the library's.
"""
from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .algorithms import cpu
from .config import cpu_name
from .inputs.files import read_rows
from .loading import load

#: the fast algorithms worth timing (the paper's arithmetic forms are for study)
FAST = ("rapidscorer", "vqs", "quickscorer")


def machine() -> str:
    """The CPU, its core count and the instruction-set paths this library runs on it."""
    return (f"{cpu_name()}, {os.cpu_count()} logical cores, paths: "
            f"{', '.join(cpu.available_isas())}; {platform.system()}, Python "
            f"{platform.python_version()}")


@dataclass
class Timing:
    """The rounds of one timed callable: ``samples`` holds, per round, the seconds it took
    divided by the units it reported (documents, calls: whatever it counts)."""
    samples: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        """The median of the rounds: the statistic the reports quote unless they say
        otherwise."""
        return statistics.median(self.samples)

    @property
    def minimum(self) -> float:
        """The fastest round."""
        return min(self.samples)


class Measured(float):
    """Seconds per unit that a callable measured itself (an engine timed by its own tool,
    such as YDF's ``model.benchmark``): :func:`interleaved` records it as the round's
    sample instead of the elapsed time."""


def interleaved(fns: Sequence[Callable[[], int | None]], rounds: int, *, warmup: bool = True,
                pause: float = 0.0) -> list[Timing]:
    """Time each callable over ``rounds`` rounds, interleaved: round 1 of every callable, then
    round 2, and so on, so that a machine whose speed drifts during the comparison (a shared
    virtual machine's does) slows every callable alike instead of whichever runs last.

    Each callable does one round's work and returns how many units it did (``None``: one);
    its sample is the elapsed seconds over that count, or the :class:`Measured` seconds per
    unit it returns. ``warmup`` calls each once untimed
    first (layouts built, caches and branch predictors filled); ``pause`` seconds of sleep
    before each timed call let worker threads an engine leaves spinning (OpenMP, ONNX
    Runtime) go idle instead of competing with the next one's."""
    if warmup:
        for fn in fns:
            fn()
    timings = [Timing() for _ in fns]
    for _ in range(rounds):
        for fn, timing in zip(fns, timings):
            if pause:
                time.sleep(pause)
            t0 = time.perf_counter()
            units = fn()
            elapsed = time.perf_counter() - t0
            timing.samples.append(float(units) if isinstance(units, Measured)
                                  else elapsed / (units if units else 1))
    return timings


def call_slices(X: np.ndarray, batch: int, min_rows: int) -> list[np.ndarray]:
    """Consecutive ``batch``-row slices of X (wrapping around), C-contiguous, enough for at
    least ``min_rows`` rows: the calls a timed round makes."""
    n = X.shape[0]
    calls = max(1, -(-min_rows // batch))
    return [np.ascontiguousarray(X[(k * batch) % max(1, n - batch + 1):][:batch])
            for k in range(calls)]


def per_document(predict: Callable[[np.ndarray], object],
                 slices: Sequence[np.ndarray]) -> Callable[[], int]:
    """A callable for :func:`interleaved` that scores every slice with ``predict`` and counts
    the documents."""
    n_docs = sum(s.shape[0] for s in slices)

    def run() -> int:
        for s in slices:
            predict(s)
        return n_docs
    return run


def generated_rows(n_rows: int, n_features: int, seed: int = 0,
                   categories: dict | None = None) -> np.ndarray:
    """Rows when the user gives none: uniform in [0, 1) with 30% exact zeros; a column of
    ``categories`` (``Ensemble.category_labels``) holds one of its category numbers."""
    rng = np.random.default_rng(seed)
    X = rng.random((n_rows, n_features))
    X[rng.random(X.shape) < 0.3] = 0.0
    for col, table in (categories or {}).items():
        numbers = np.fromiter(table.values(), np.float64, len(table))
        X[:, col] = rng.choice(numbers, n_rows) if numbers.size else 0.0
    return X


def _library_engine(path: Path, family: str, n_threads: int):
    """(name, raw-score function) of the source library, or None when it cannot run here."""
    try:
        if family == "lightgbm":
            import lightgbm as lgb
            booster = lgb.Booster(model_file=str(path))
            return "lightgbm", lambda X: booster.predict(X, raw_score=True,
                                                         num_threads=n_threads)
        import xgboost as xgb
        booster = xgb.Booster(model_file=str(path))
        booster.set_param({"nthread": n_threads})
        return "xgboost", lambda X: booster.inplace_predict(X, predict_type="margin")
    except Exception:          # not installed, or it cannot read this file: not timed
        return None


def run(model_path, data=None, batches=(1, 100, 10_000), n_threads: int = 1,
        repeat: int = 5, min_rows: int = 5000, label_column: int | None = None) -> str:
    """The benchmark table as text (see the module docstring)."""
    model = load(model_path, prepare=("auto",))   # layouts built before any timing
    family = model.ensemble.family
    if data is None:
        X = generated_rows(max(10_000, max(batches)), model.n_features,
                           categories=model.ensemble.category_labels)
        what = f"{X.shape[0]} generated rows (uniform, 30% zeros)"
    else:
        X = np.ascontiguousarray(read_rows(data, model.n_features,
                                           model.ensemble.absent_value, label_column),
                                 dtype=np.float64)
        what = f"{X.shape[0]} rows of {data}"
    engines = [("quickscorer (default)", lambda Z: model.predict_raw(Z, n_threads=n_threads))]
    for name in FAST:
        if name in model.supported_algorithms():
            engines.append((f"quickscorer[{name}]",
                            lambda Z, a=name: model.predict_raw(Z, algorithm=a,
                                                                n_threads=n_threads)))
    lib = _library_engine(Path(model_path), family, n_threads)
    if lib is not None:
        engines.append(lib)
    check = X[:2000]
    ref = np.asarray((lib[1] if lib else engines[-1][1])(check), np.float64).reshape(
        check.shape[0], -1)
    agree = []
    for _, fn in engines:
        got = np.asarray(fn(check), np.float64).reshape(ref.shape)
        agree.append("exact" if np.array_equal(got, ref)
                     else f"max diff {float(np.max(np.abs(got - ref))):.2g}")
    lines = [f"Model: {model_path} ({model.n_trees} trees, {model.n_features} features, "
             f"{family}); data: {what}; {n_threads} thread(s)",
             f"Machine: {machine()}",
             f"Median of {repeat} interleaved runs after a warm-up, at least {min_rows} rows "
             f"per run (batch 1: a twentieth)", "",
             "| batch | engine | us/doc | vs the library | scores vs the library |",
             "| ---: | --- | ---: | ---: | --- |"]
    for batch in batches:
        slices = call_slices(X, batch, max(batch, min_rows // (20 if batch == 1 else 1)))
        times = [t.median * 1e6 for t in
                 interleaved([per_document(fn, slices) for _, fn in engines], repeat)]
        base = times[-1] if lib is not None else None
        for (name, _), t, a in sorted(zip(engines, times, agree), key=lambda r: r[1]):
            ratio = "-" if base is None else f"{base / t:.2f}x"
            lines.append(f"| {batch} | {name} | {t:.2f} | {ratio} | {a} |")
    if lib is None:
        lines.append("\n(LightGBM / XGBoost not installed or unable to read the file: not "
                     "timed; scores compared with this library's quickscorer)")
    return "\n".join(lines)
