"""The kernel plan of one model: the facts the automatic choice reads, the kernel each call
size runs, the layouts prepared so far and their low-latency entries.

A :class:`~quickscorer.model.Model` builds one plan when it is built and asks it, on every
call, which kernel to run (:meth:`KernelPlan.choose`) and for that kernel's prepared layout
(:meth:`KernelPlan.prepare`). The facts are computed on first use and kept; a layout is built
on a call's first need of it, under a lock, and published by replacing the dict, so readers
never take the lock.
"""
from __future__ import annotations

import os
import threading
from functools import cached_property
from typing import Any

import numpy as np

from ._forest import Forest
from .algorithms import autoselect, registry
from .algorithms.base import Algorithm, distinct_bytes
from .algorithms.forest import forest_arrays
from .inputs.arrays import as_inputs, as_rows
from .ir.ensemble import Ensemble

#: the name that stands for the automatic choice (``predict(..., algorithm=None)``)
AUTO = "auto"

#: the algorithms with a low-latency entry for calls of a few rows (``predict_small``: one
#: thread, numpy's C API instead of typed memoryviews): every kernel the automatic choice
#: runs, so that all its calls of fewer than PARALLEL_MIN_ROWS rows (one thread whatever was
#: asked) take it
SMALL_CALL_ALGORITHMS = ("quickscorer", "walk", "vqs", "rapidscorer", "oblivious")


def resolve_threads(n_threads: int | None) -> int:
    """``n_threads`` as a count: None is 1, 0 or less is every core."""
    if n_threads is None:
        return 1
    n = int(n_threads)
    if n <= 0:
        return os.cpu_count() or 1
    return n


class KernelPlan:
    """Which kernel scores each call size of one model, and the layouts prepared for it.

    Attributes read by the model on every call: ``forest`` (leaf values, groups and base
    scores every kernel reads), ``prepared`` (name to :class:`Algorithm`, the layouts built so
    far) and ``small_entries`` (the default kernel's low-latency entry by number of rows below
    PARALLEL_MIN_ROWS, made on the first such call).
    """

    def __init__(self, ensemble: Ensemble):
        self.ensemble = ensemble
        self.forest_arrays = forest_arrays(ensemble)
        self.forest = Forest(self.forest_arrays)
        self.prepared: dict[str, Algorithm] = {}
        self.small_entries: list = [None] * autoselect.PARALLEL_MIN_ROWS
        self._lock = threading.Lock()

    # -- the automatic choice's inputs, computed on first use -----------------------------
    @cached_property
    def supported(self) -> tuple[str, ...]:
        """The algorithms that can score the model (``Algorithm.unsupported`` says why one
        cannot)."""
        return tuple(registry.supported(self.ensemble))

    @cached_property
    def costs(self) -> tuple[float, float] | None:
        """``autoselect.expected_costs`` (one pass over the node covers; None without)."""
        return autoselect.expected_costs(self.ensemble)

    @cached_property
    def steps(self) -> float | None:
        """``autoselect.group_steps`` (the walk's complete trees, if it lays any out)."""
        return autoselect.group_steps(self.ensemble)

    @property
    def complete(self) -> bool:
        """Whether the walk lays the trees out complete (eight trees a step)."""
        return self.steps is not None

    @cached_property
    def one_row(self) -> tuple[str, str]:
        """The one-row kernel and why (``autoselect.one_row``)."""
        return autoselect.one_row(self.ensemble, self.supported, self.costs, self.steps)

    @cached_property
    def few_rows(self) -> str:
        """The kernel from ``autoselect.few_rows_from`` to ``rs_from`` - 1 rows per thread
        (``autoselect.few_rows``)."""
        return autoselect.few_rows(self.ensemble, self.supported, self.costs, self.steps)

    @cached_property
    def rs_from(self) -> int:
        """Rows per thread from which ``rapidscorer`` runs (``autoselect.rs_min_rows``)."""
        return autoselect.rs_min_rows(self.ensemble, self.few_rows, self.costs, self.steps)

    @cached_property
    def small_kernels(self) -> tuple[str, ...]:
        """The kernel of a call of n rows, for every n below PARALLEL_MIN_ROWS (such calls run
        on one thread)."""
        return tuple(self.choose(n, 1) for n in range(autoselect.PARALLEL_MIN_ROWS))

    # -- the choice -----------------------------------------------------------------------
    def choose(self, n_rows: int, n_threads: int) -> str:
        """The kernel the automatic choice runs for ``n_rows`` rows on ``n_threads``."""
        return autoselect.choose(self.supported, n_rows, n_threads, self.one_row[0],
                                 self.few_rows, self.rs_from, self.complete)

    def candidates(self) -> tuple[str, ...]:
        """Every kernel the automatic choice may run for this model."""
        return autoselect.candidates(self.supported, self.one_row[0], self.few_rows)

    def describe(self) -> str:
        """The choice in words, call size by call size."""
        return f"{AUTO}: " + autoselect.describe(self.supported, self.one_row, self.few_rows,
                                                 self.rs_from, self.complete)

    # -- layouts --------------------------------------------------------------------------
    def prepare(self, name: str) -> Algorithm:
        """Build (once) and return the layout of algorithm ``name``."""
        alg = self.prepared.get(name)
        if alg is not None:
            return alg
        cls = registry.get(name)
        with self._lock:
            alg = self.prepared.get(name)
            if alg is None:
                alg = cls(self.ensemble, self.forest)
                self.prepared = {**self.prepared, name: alg}
        return alg

    def call(self, X, algorithm: str | None, n_threads: int | None):
        """A call's rows (read as the model's inputs, CTR columns appended), the prepared
        algorithm that scores them (``algorithm``, or the automatic choice for their number)
        and the threads worth starting."""
        X = as_inputs(self.ensemble, X)
        n_threads = autoselect.threads_for(X.shape[0], resolve_threads(n_threads))
        if self.ensemble.ctr is not None:         # the CTR columns, on the call's threads
            X = self.ensemble.ctr.apply(X, n_threads)
        if algorithm is None or algorithm == AUTO:
            algorithm = self.choose(X.shape[0], n_threads)
        return X, self.prepare(algorithm), n_threads

    def small_call(self, X: np.ndarray, squeeze: bool, algorithm: str | None, n_threads):
        """Raw scores of a call of fewer than PARALLEL_MIN_ROWS rows of a numpy array (one
        thread whatever was asked) through the low-latency entry of the default kernel for
        that many rows, or of the named one where it has such an entry; None for every other
        call, and where the entry declines ``X`` (not a C-contiguous float32/float64 array of
        the model's width): the general path then reads it, or says what is wrong."""
        if X.ndim == 2:
            rows = X.shape[0]
        elif X.ndim == 1:
            rows = 1
        else:
            return None
        if rows >= autoselect.PARALLEL_MIN_ROWS or not (n_threads is None
                                                       or type(n_threads) is int):
            return None
        if self.ensemble.ctr is not None:
            X = as_rows(self.ensemble, X)     # the inputs checked, the CTR columns appended
        if algorithm is None or algorithm == AUTO:
            entry = self.small_entries[rows]
            if entry is None:
                entry = self.prepare(self.small_kernels[rows]).small_entry(rows)
                self.small_entries[rows] = entry
            return entry(X, squeeze)
        if algorithm not in SMALL_CALL_ALGORITHMS:
            return None
        return self.prepare(algorithm).predict_small(X, squeeze)

    # -- facts ----------------------------------------------------------------------------
    def info(self) -> dict[str, Any]:
        """The choice, and each prepared layout's instruction set and size in bytes."""
        d: dict[str, Any] = {
            "default_algorithm": self.describe(),
            "one_row_algorithm": self.one_row[0],
            # a model of oblivious trees runs ``oblivious`` from before any few-rows kernel
            "few_rows_algorithm": ("oblivious" if "oblivious" in self.supported
                                   else self.few_rows),
        }
        for name in ("oblivious", "rapidscorer", "vqs"):
            alg = self.prepared.get(name)
            if alg is not None:
                d[f"{name}_instruction_set"] = alg.isa_name
        rs = self.prepared.get("rapidscorer")
        if rs is not None:
            d["rapidscorer_documents_per_group"] = rs.groups
        walk = self.prepared.get("walk")
        if walk is not None:
            d["walk_few_rows"] = walk.few_rows
            d["walk_many_rows"] = walk.many_rows
        d["layout_bytes"] = {name: alg.nbytes for name, alg in self.prepared.items()}
        return d

    def memory(self, extra: dict[str, list] | None = None) -> dict[str, Any]:
        """The bytes of numpy memory the model holds: ``total_bytes`` (each buffer once) and
        ``bytes`` per part: ``ensemble`` (the neutral model's arrays, its CTR stage's
        included), ``forest`` (what every kernel reads beyond the ensemble's own), then each
        prepared layout beyond what earlier parts hold, then the ``extra`` parts (name:
        arrays) likewise."""
        e = self.ensemble
        parts = {
            "ensemble": [a for a in e.trees.arrays.values() if isinstance(a, np.ndarray)]
            + [a for a in (e.tree_group, e.base_score, e.tree_weight)
               if isinstance(a, np.ndarray)]
            + ([] if e.ctr is None else list(e.ctr.arrays.values())
               + [a for c in e.ctr.columns for a in (c.keys, c.values)]),
            "forest": [a for a in self.forest_arrays.values() if isinstance(a, np.ndarray)],
        }
        for name, alg in self.prepared.items():
            parts[name] = alg.held_arrays()
        parts.update(extra or {})
        out: dict[str, int] = {}
        held: list = []
        for name, arrays in parts.items():
            before = distinct_bytes(held)
            held += arrays
            out[name] = distinct_bytes(held) - before
        return {"total_bytes": distinct_bytes(held), "bytes": out}
