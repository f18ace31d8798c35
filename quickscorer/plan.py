"""The kernel plan of one model: the facts the automatic choice reads, the kernel each call
size runs, the layouts prepared so far and their low-latency entries.

A :class:`~quickscorer.model.Model` builds one plan when it is built and asks it, on every
call, which kernel to run (:meth:`KernelPlan.choose`) and for that kernel's prepared layout
(:meth:`KernelPlan.prepare`). The facts are computed on first use and kept; a layout is built
on a call's first need of it, under a lock, and published by replacing the dict, so readers
never take the lock.
"""
from __future__ import annotations

import dataclasses
import os
import threading
from functools import cached_property
from typing import Any

import numpy as np

from . import prepared, threads
from ._forest import Forest
from .algorithms import autoselect, cpu, registry
from .algorithms.base import Algorithm, distinct_bytes
from .algorithms.forest import forest_arrays
from .errors import ModelFileError
from .inputs.arrays import as_rows
from .ir.ensemble import Ensemble
from .ir.sums import SUMS
from .tuning import Tuning, current

#: the name that stands for the automatic choice (``predict(..., algorithm=None)``)
AUTO = "auto"


def resolve_threads(n_threads: int | None) -> int:
    """``n_threads`` as a count: None is 1, 0 or less is every core."""
    if n_threads is None:
        return 1
    n = int(n_threads)
    if n <= 0:
        return os.cpu_count() or 1
    return n


def _algorithm_names(value) -> bool:
    """Whether a model file's record of the algorithms that score it names known ones."""
    return (isinstance(value, list) and all(isinstance(n, str) for n in value)
            and set(value) <= set(registry.available()))


class KernelPlan:
    """Which kernel scores each call size of one model, and the layouts prepared for it.

    Attributes read by the model on every call: ``forest`` (leaf values, groups and base
    scores every kernel reads), ``prepared`` (name to :class:`Algorithm`, the layouts built so
    far) and ``small_entries`` (the default kernel's low-latency entry by number of rows below
    PARALLEL_MIN_ROWS, made on the first such call).
    """

    def __init__(self, ensemble: Ensemble, tuning: Tuning | None = None):
        self.ensemble = ensemble
        #: the constants of the choice and the kernels' switches (``quickscorer.tuning``)
        self.tuning = t = current() if tuning is None else tuning
        self.forest_arrays = forest_arrays(ensemble)
        self.forest = Forest(self.forest_arrays)
        self.prepared: dict[str, Algorithm] = {}
        self.small_entries: list = [None] * t.parallel_min_rows
        self._parallel_min_rows = t.parallel_min_rows
        #: calls of fewer rows take the low-latency entries: none where the leaves are summed
        #: in arithmetic of the model's own (``Ensemble.leaf_sum``), which those do not carry
        self._small_rows = 0 if ensemble.leaf_sum is not None else t.parallel_min_rows
        #: that sum of the exit leaves (``ir.sums``), or None: the kernels sum them
        self._leaf_sum = None if ensemble.leaf_sum is None else SUMS[ensemble.leaf_sum]
        self._lock = threading.Lock()

    # -- the automatic choice's inputs, computed on first use -----------------------------
    @cached_property
    def supported(self) -> tuple[str, ...]:
        """The algorithms that can score the model (``Algorithm.unsupported`` says why one
        cannot; a model file's list where it holds one, each of which asks again when its
        layout is built)."""
        return tuple(prepared.built(self.ensemble, "supported", (),
                                    lambda: list(registry.supported(self.ensemble)),
                                    _algorithm_names))

    @cached_property
    def facts(self) -> autoselect.Facts:
        """What the kernel families' costs read of the model (``autoselect.facts``: one pass
        over the node covers, the walk's complete trees), for this table and this CPU's
        instruction set (a model file's where it was written for both)."""
        t = self.tuning
        got = prepared.built(self.ensemble, "facts", (repr(t), cpu.isa_code(t.isa)),
                             lambda: dataclasses.asdict(autoselect.facts(self.ensemble, t)),
                             lambda v: isinstance(v, dict))
        return autoselect.Facts.checked(got)

    @property
    def complete(self) -> bool:
        """Whether the walk lays the trees out complete (eight trees a step)."""
        return self.facts.complete

    @cached_property
    def one_row(self) -> tuple[str, str]:
        """The one-row kernel and why (``autoselect.one_row``)."""
        return autoselect.one_row(self.facts, self.supported, self.tuning)

    @cached_property
    def few_rows(self) -> str:
        """The kernel from ``autoselect.few_rows_from`` to ``rs_from`` - 1 rows per thread
        (``autoselect.few_rows``)."""
        return autoselect.few_rows(self.facts, self.supported, self.tuning)

    @cached_property
    def rs_from(self) -> int:
        """Rows per thread from which the many-rows family runs (``autoselect.rs_min_rows``)."""
        return autoselect.rs_min_rows(self.facts, self.few_rows, t=self.tuning)

    @cached_property
    def small_kernels(self) -> tuple[str, ...]:
        """The kernel of a call of n rows, for every n below ``parallel_min_rows`` (such
        calls run on one thread)."""
        return tuple(self.choose(n, 1) for n in range(self._parallel_min_rows))

    # -- the choice -----------------------------------------------------------------------
    @cached_property
    def bounds(self) -> tuple:
        """The rows a thread where the choice changes kernel (``autoselect.bounds``)."""
        return autoselect.bounds(self.supported, self.one_row[0], self.few_rows, self.rs_from,
                                 self.complete, self.tuning)

    def choose(self, n_rows: int, n_threads: int) -> str:
        """The kernel the automatic choice runs for ``n_rows`` rows on ``n_threads``."""
        return autoselect.choose_in(self.bounds, n_rows, n_threads)

    def candidates(self) -> tuple[str, ...]:
        """Every kernel the automatic choice may run for this model."""
        return autoselect.candidates(self.supported, self.one_row[0], self.few_rows)

    def describe(self) -> str:
        """The choice in words, call size by call size."""
        return f"{AUTO}: " + autoselect.describe(self.supported, self.one_row, self.few_rows,
                                                 self.rs_from, self.complete, self.tuning)

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
                alg = self._build(cls)
                self.prepared = {**self.prepared, name: alg}
        return alg

    def _build(self, cls) -> Algorithm:
        """A new layout of ``cls``; a layout a model file gave that its kernel's checks refuse
        is a damaged file, and ModelFileError says so."""
        store = prepared.store_of(self.ensemble)
        try:
            return cls(self.ensemble, self.forest, tuning=self.tuning)
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            # (a record without a field, or one of another type: what a hostile file gives)
            if (store is None or store.recording or isinstance(exc, ModelFileError)
                    or not store.taken):
                raise
            keys = ", ".join(sorted(store.taken))
            raise ModelFileError(f"the model file's layout of {cls.name!r} is damaged (its "
                                 f"records: {keys}): {type(exc).__name__}: {exc}", section=0,
                                 section_name="records") from None

    def _kernel(self, rows: np.ndarray, algorithm: str | None, n_threads: int):
        """A call's rows with the CTR columns appended, the prepared algorithm that scores
        them (``algorithm``, or the automatic choice for their number) and the threads worth
        starting (``rows``: read as the model's inputs; ``n_threads``: a count)."""
        n_threads = autoselect.threads_for(rows.shape[0], n_threads, self.tuning)
        if self.ensemble.ctr is not None:         # the CTR columns, on the call's threads
            rows = self.ensemble.ctr.apply(rows, n_threads)
        if algorithm is None or algorithm == AUTO:
            algorithm = self.choose(rows.shape[0], n_threads)
        return rows, self.prepare(algorithm), n_threads

    def raw(self, rows: np.ndarray, algorithm: str | None, n_threads: int) -> np.ndarray:
        """Raw scores of ``rows`` (read as the model's inputs), ``(n_rows, n_outputs)`` in the
        model's precision (float32 or float64; a sum of the model's own, ``ir.sums``, from the
        kernel's exit leaves)."""
        if self._leaf_sum is not None:
            return self._leaf_sum(self.ensemble, self.leaves(rows, algorithm, n_threads))
        X, alg, n_threads = self._kernel(rows, algorithm, n_threads)
        n, k = X.shape[0], self.ensemble.n_outputs
        # the model's precision: one output full, the other empty
        f32 = self.forest.dtype == np.float32
        out64 = np.empty((0 if f32 else n, k), np.float64)
        out32 = np.empty((n if f32 else 0, k), np.float32)
        if n_threads > 1:                 # OpenMP's threads, or a pool where there is none
            threads.run(alg.predict_raw, X, (out64, out32), n_threads, self.tuning.thread_pool)
        else:
            alg.predict_raw(X, out64, out32, 1)
        return out32 if f32 else out64

    def leaves(self, rows: np.ndarray, algorithm: str | None, n_threads: int) -> np.ndarray:
        """In-order exit leaf of every tree for ``rows``, ``(n_rows, n_trees)`` int32."""
        X, alg, n_threads = self._kernel(rows, algorithm, n_threads)
        out = np.empty((X.shape[0], self.ensemble.n_trees), np.int32)
        if n_threads > 1:
            threads.run(alg.predict_leaf, X, (out,), n_threads, self.tuning.thread_pool)
        else:
            alg.predict_leaf(X, out, 1)
        return out

    def small_call(self, X: np.ndarray, squeeze: bool, algorithm: str | None, n_threads):
        """Raw scores of a call of fewer than ``parallel_min_rows`` rows of a numpy array (one
        thread whatever was asked) through the low-latency entry of the default kernel for
        that many rows, or of the named one where it has such an entry
        (``Algorithm.small_calls``); None for every other call, and where the entry declines
        ``X`` (not a C-contiguous float32/float64 array of the model's width): the general
        path then reads it, or says what is wrong."""
        if X.ndim == 2:
            rows = X.shape[0]
        elif X.ndim == 1:
            rows = 1
        else:
            return None
        if rows >= self._small_rows or not (n_threads is None or type(n_threads) is int):
            return None
        if self.ensemble.ctr is not None:
            X = as_rows(self.ensemble, X)     # the inputs checked, the CTR columns appended
        if algorithm is None or algorithm == AUTO:
            entry = self.small_entries[rows]
            if entry is None:
                entry = self.prepare(self.choose(rows, 1)).small_entry(rows)
                self.small_entries[rows] = entry
            return entry(X, squeeze)
        if not registry.get(algorithm).small_calls:
            return None
        return self.prepare(algorithm).predict_small(X, squeeze)

    # -- facts ----------------------------------------------------------------------------
    def info(self) -> dict[str, Any]:
        """The choice, and each prepared layout's instruction set and size in bytes."""
        d: dict[str, Any] = {
            "default_algorithm": self.describe(),
            "one_row_algorithm": self.one_row[0],
            # a family of every call size (oblivious trees) runs before any few-rows kernel
            "few_rows_algorithm": next((n for n in self.supported
                                        if "every" in registry.get(n).regimes), self.few_rows),
        }
        for alg in self.prepared.values():
            d.update(alg.describe())
        switches = self.tuning.switches()
        if switches:
            d["switches"] = switches
        store = prepared.store_of(self.ensemble)
        if store is not None and not store.recording:
            # the layouts a model file gave and those computed at open (its records lacked
            # them: another CPU, table or release)
            d["model_file_layouts"] = {"taken": sorted(store.taken),
                                       "computed": sorted(store.computed)}
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
