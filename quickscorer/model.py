"""The public scoring object: a loaded model and its prepared layouts."""
from __future__ import annotations

import os
import threading
from functools import cached_property
from typing import Any

import numpy as np

from ._forest import Forest
from ._transforms import apply_transform
from .algorithms import autoselect, registry
from .algorithms.base import Algorithm, distinct_bytes
from .algorithms.forest import forest_arrays
from .errors import InputError
from .inputs.arrays import as_inputs, as_rows
from .ir.ensemble import Ensemble
from .paper import soft
from .ranking import Ranking, query_starts, rank_scores

#: models of part of the ensemble (predict's iteration arguments) kept per model
PART_CACHE = 8

#: ``predict(..., algorithm=None)`` picks the fastest exact algorithm per call (algorithms/autoselect.py)
DEFAULT_ALGORITHM = "auto"


#: the algorithms with a low-latency entry for calls of a few rows (``predict_small``: one
#: thread, numpy's C API instead of typed memoryviews): every kernel the automatic choice
#: runs, so that all its calls of fewer than PARALLEL_MIN_ROWS rows (one thread whatever was
#: asked) take it
_SMALL_CALL_ALGORITHMS = ("quickscorer", "walk", "vqs", "rapidscorer", "oblivious")


def _resolve_threads(n_threads: int | None) -> int:
    if n_threads is None:
        return 1
    n = int(n_threads)
    if n <= 0:
        return os.cpu_count() or 1
    return n


class Model:
    """A tree ensemble ready to score.

    Immutable once built and safe to share between threads: scoring calls release the GIL
    and allocate their own scratch space. An algorithm's layout is built when a call first
    needs it (under a lock), so a model holds only the layouts its calls use; a service that
    wants no first-call delay names them in ``prepare`` (``"auto"``: every algorithm the
    default ``predict`` may pick for this model).

    Parameters
    ----------
    ensemble : Ensemble
        The neutral model, as returned by an importer.
    prepare : sequence of str, optional
        Algorithms whose layouts to build now rather than on first use; ``"auto"`` stands
        for those the automatic choice may run.
    """

    def __init__(self, ensemble: Ensemble, prepare: tuple[str, ...] = ()):
        self.ensemble = ensemble
        self._forest_arrays = forest_arrays(ensemble)
        self._forest = Forest(self._forest_arrays)
        #: raw scores are the output (no transform, no averaging)
        self._plain_output = ensemble.transform == "identity" and not ensemble.average_output
        self._lock = threading.Lock()
        self._prepared: dict[str, Algorithm] = {}
        #: the default kernel's low-latency entry for calls of n rows (Algorithm.small_entry),
        #: by n below PARALLEL_MIN_ROWS, made on the first such call
        self._small_entries: list = [None] * autoselect.PARALLEL_MIN_ROWS
        if isinstance(prepare, str):
            prepare = (prepare,)
        for name in prepare:
            for one in (autoselect.candidates(self._supported, self._one_row[0],
                                              self._few_rows)
                        if name == DEFAULT_ALGORITHM else (name,)):
                self.prepare(one)

    # -- set-up ---------------------------------------------------------------------------
    def prepare(self, algorithm: str):
        """Build (once) and return the layout of ``algorithm``."""
        alg = self._prepared.get(algorithm)
        if alg is not None:
            return alg
        cls = registry.get(algorithm)
        with self._lock:
            alg = self._prepared.get(algorithm)
            if alg is None:
                alg = cls(self.ensemble, self._forest)
                self._prepared = {**self._prepared, algorithm: alg}
        return alg

    def supported_algorithms(self) -> list[str]:
        """The algorithms that can score this model (all but ``rapidscorer`` score every
        model; ``Algorithm.unsupported`` says why one cannot)."""
        return list(self._supported)

    # facts of the model computed on first use and kept (attribute reads once computed)
    @cached_property
    def _supported(self) -> tuple[str, ...]:
        return tuple(registry.supported(self.ensemble))

    @cached_property
    def _costs(self) -> tuple[float, float] | None:
        """``autoselect.expected_costs`` (one pass over the node covers; None without)."""
        return autoselect.expected_costs(self.ensemble)

    @cached_property
    def _steps(self) -> float | None:
        """``autoselect.group_steps`` (the walk's complete trees, if it lays any out)."""
        return autoselect.group_steps(self.ensemble)

    @cached_property
    def _one_row(self) -> tuple[str, str]:
        """The one-row kernel the automatic choice runs for this model, and why
        (``autoselect.one_row``)."""
        return autoselect.one_row(self.ensemble, self._supported, self._costs, self._steps)

    @cached_property
    def _few_rows(self) -> str:
        """The kernel the automatic choice runs for ``autoselect.few_rows_from`` to
        ``_rs_from`` - 1 rows per thread (``autoselect.few_rows``)."""
        return autoselect.few_rows(self.ensemble, self._supported, self._costs, self._steps)

    @cached_property
    def _small_kernels(self) -> tuple[str, ...]:
        """The kernel the automatic choice runs for a call of n rows, for every n below
        PARALLEL_MIN_ROWS (such calls run on one thread)."""
        return tuple(autoselect.choose(self._supported, n, 1, self._one_row[0], self._few_rows,
                                       self._rs_from, self._steps is not None)
                     for n in range(autoselect.PARALLEL_MIN_ROWS))

    @cached_property
    def _rs_from(self) -> int:
        """Rows per thread from which the automatic choice runs ``rapidscorer``
        (``autoselect.rs_min_rows``)."""
        return autoselect.rs_min_rows(self.ensemble, self._few_rows, self._costs, self._steps)

    def __reduce__(self):
        # the copy prepares the layouts this one had built
        return (Model, (self.ensemble, tuple(self._prepared)))

    # -- facts ----------------------------------------------------------------------------
    @property
    def n_features(self) -> int:
        """Columns a row gives (the trees may read more: CatBoost's CTR columns, computed from
        these)."""
        return self.ensemble.n_inputs

    @property
    def n_outputs(self) -> int:
        return self.ensemble.n_outputs

    @property
    def n_trees(self) -> int:
        return self.ensemble.n_trees

    @property
    def feature_names(self):
        return self.ensemble.feature_names

    @property
    def trees(self):
        return self.ensemble.trees

    def info(self) -> dict[str, Any]:
        """Facts about the model and the prepared layouts (sizes in bytes)."""
        d = self.ensemble.summary()
        d["default_algorithm"] = (f"{DEFAULT_ALGORITHM}: " + autoselect.describe(
            self._supported, self._one_row, self._few_rows, self._rs_from,
            self._steps is not None))
        d["one_row_algorithm"] = self._one_row[0]
        # a model of oblivious trees runs ``oblivious`` from before any few-rows kernel
        d["few_rows_algorithm"] = ("oblivious" if "oblivious" in self._supported
                                   else self._few_rows)
        obl = self._prepared.get("oblivious")
        if obl is not None:
            d["oblivious_instruction_set"] = obl.isa_name
        rs = self._prepared.get("rapidscorer")
        if rs is not None:
            d["rapidscorer_instruction_set"] = rs.isa_name
            d["rapidscorer_documents_per_group"] = rs.groups
        vqs = self._prepared.get("vqs")
        if vqs is not None:
            d["vqs_instruction_set"] = vqs.isa_name
        walk = self._prepared.get("walk")
        if walk is not None:
            d["walk_few_rows"] = walk.few_rows
            d["walk_many_rows"] = walk.many_rows
        d["layout_bytes"] = {name: alg.nbytes for name, alg in self._prepared.items()}
        d.update(self.memory())
        return d

    def memory(self) -> dict[str, Any]:
        """The bytes of numpy memory this model holds: ``total_bytes`` (each buffer once) and
        ``bytes`` per part: ``ensemble`` (the neutral model's arrays, its CTR stage's
        included), ``forest`` (leaf
        values and groups every kernel reads, beyond the ensemble's own), then each prepared
        algorithm's layout beyond what earlier parts hold (``vqs`` shares ``quickscorer``'s
        layout and adds its tree blocks). Per-thread scratch rows and Python objects are not
        counted; the README says how to read it."""
        e = self.ensemble
        parts = {
            "ensemble": [a for a in e.trees.arrays.values() if isinstance(a, np.ndarray)]
            + [a for a in (e.tree_group, e.base_score, e.tree_weight)
               if isinstance(a, np.ndarray)]
            + ([] if e.ctr is None else list(e.ctr.arrays.values())
               + [a for c in e.ctr.columns for a in (c.keys, c.values)]),
            "forest": [a for a in self._forest_arrays.values() if isinstance(a, np.ndarray)],
        }
        for name, alg in self._prepared.items():
            parts[name] = alg.held_arrays()
        out: dict[str, int] = {}
        held: list = []
        for name, arrays in parts.items():
            before = distinct_bytes(held)
            held += arrays
            out[name] = distinct_bytes(held) - before
        return {"total_bytes": distinct_bytes(held), "bytes": out}

    def __repr__(self) -> str:
        e = self.ensemble
        return (f"<quickscorer.Model {e.source.get('library')} {e.source.get('objective')!r}: "
                f"{e.n_trees} trees, {e.n_outputs} output(s), {e.n_inputs} features>")

    # -- scoring --------------------------------------------------------------------------
    def _run(self, X, algorithm, n_threads):
        X = as_inputs(self.ensemble, X)
        n_threads = autoselect.threads_for(X.shape[0], _resolve_threads(n_threads))
        if self.ensemble.ctr is not None:         # the CTR columns, on the call's threads
            X = self.ensemble.ctr.apply(X, n_threads)
        if algorithm is None or algorithm == DEFAULT_ALGORITHM:
            algorithm = autoselect.choose(self._supported, X.shape[0], n_threads,
                                          self._one_row[0], self._few_rows, self._rs_from,
                                          self._steps is not None)
        return X, self.prepare(algorithm), n_threads

    # -- part of the ensemble ---------------------------------------------------------------
    def iteration_bounds(self, start_iteration: int = 0, num_iteration: int | None = None,
                         iteration_range: tuple[int, int] | None = None) -> tuple[int, int]:
        """The boosting iterations ``[begin, end)`` that these arguments select.

        LightGBM's meaning: from ``start_iteration``, ``num_iteration`` iterations (``None``
        or ``<= 0``: all the rest; more than there are: as many as there are). XGBoost's:
        ``iteration_range=(begin, end)``, end exclusive, ``end == 0`` meaning the last, so
        ``(0, 0)`` is all. An iteration is ``trees_per_iteration`` trees (one per output,
        times XGBoost's ``num_parallel_tree``). As LightGBM does, a ``start_iteration`` below
        0 counts from 0 and one at or past the last iteration selects none (``begin ==
        end``: the output of no trees). Raises :class:`InputError` for an ``iteration_range``
        outside the model, as XGBoost does, or for both forms at once.
        """
        n = self.ensemble.n_iterations
        if iteration_range is not None:
            if start_iteration or num_iteration is not None:
                raise InputError("give iteration_range or start_iteration / num_iteration, "
                                 "not both")
            try:
                begin, end = (int(v) for v in iteration_range)
            except (TypeError, ValueError):
                raise InputError(f"iteration_range must be two integers (begin, end), got "
                                 f"{iteration_range!r}") from None
            end = n if end == 0 else end
            if not 0 <= begin < end <= n:
                raise InputError(f"iteration_range {tuple(iteration_range)} is outside the "
                                 f"model's {n} iterations")
            return begin, end
        try:
            begin = int(start_iteration)
            count = None if num_iteration is None else int(num_iteration)
        except (TypeError, ValueError):
            raise InputError("start_iteration and num_iteration must be integers") from None
        begin = min(max(begin, 0), n)           # LightGBM clamps the start into [0, n]
        end = n if count is None or count <= 0 else min(n, begin + count)
        return begin, end

    def _part(self, start_iteration, num_iteration, iteration_range) -> "Model":
        """This model, or the model of the selected iterations: built once per range and
        kept (the last PART_CACHE ranges), so repeated calls build no layout."""
        if not start_iteration and num_iteration is None and iteration_range is None:
            return self
        begin, end = self.iteration_bounds(start_iteration, num_iteration, iteration_range)
        if (begin, end) == (0, self.ensemble.n_iterations):
            return self
        if begin == end:
            return None
        with self._lock:
            parts = self.__dict__.setdefault("_parts", {})
            part = parts.pop((begin, end), None)
            if part is None:
                part = Model(self.ensemble.iterations(begin, end))
            parts[(begin, end)] = part          # most recently used last
            while len(parts) > PART_CACHE:
                parts.pop(next(iter(parts)))
        return part

    def predict_raw(self, X, *, algorithm: str | None = None, n_threads: int | None = 1,
                    start_iteration: int = 0, num_iteration: int | None = None,
                    iteration_range: tuple[int, int] | None = None) -> np.ndarray:
        """Raw scores (margins), shape ``(n_rows, n_outputs)``.

        float64 for LightGBM models, float32 for XGBoost models, as each library returns.
        ``start_iteration`` / ``num_iteration`` (LightGBM) or ``iteration_range`` (XGBoost)
        score with part of the ensemble (:meth:`iteration_bounds`).
        """
        if (type(X) is np.ndarray and not start_iteration and num_iteration is None
                and iteration_range is None):
            out = self._small(X, False, algorithm, n_threads)
            if out is not None:
                return out
        part = self._part(start_iteration, num_iteration, iteration_range)
        if part is None:
            return self._no_trees(X)
        if part is not self:
            return part.predict_raw(X, algorithm=algorithm, n_threads=n_threads)
        X, alg, n_threads = self._run(X, algorithm, n_threads)
        n, k = X.shape[0], self.n_outputs
        if self._forest.dtype == np.float32:
            out32 = np.empty((n, k), np.float32)
            alg.predict_raw(X, np.empty((0, k)), out32, n_threads)
            return out32
        out64 = np.empty((n, k), np.float64)
        alg.predict_raw(X, out64, np.empty((0, k), np.float32), n_threads)
        return out64

    def predict(self, X, raw_score: bool = False, *, algorithm: str | None = None,
                n_threads: int | None = 1, start_iteration: int = 0,
                num_iteration: int | None = None,
                iteration_range: tuple[int, int] | None = None) -> np.ndarray:
        """Predictions for the rows of ``X``, as the source library's ``predict`` gives them.

        Parameters
        ----------
        X : array-like of shape (n_rows, n_features) or (n_features,)
            numpy array of any real dtype and memory order, pandas DataFrame or scipy sparse
            matrix. float32 and C-contiguous float64 arrays are read without a copy.
        raw_score : bool
            Return margins instead of transformed outputs (probabilities, ...).
        algorithm : str, optional
            Exit-leaf algorithm (see :func:`quickscorer.available_algorithms`).
        n_threads : int
            Threads over rows (0 or negative: all cores). Default 1.
        start_iteration, num_iteration : int, optional
            LightGBM's: score with ``num_iteration`` boosting iterations from
            ``start_iteration`` (``None`` or ``<= 0``: all the rest).
        iteration_range : (int, int), optional
            XGBoost's: iterations ``begin .. end - 1``; ``(0, 0)`` is all.

        Returns
        -------
        ndarray of shape (n_rows,) for one output, (n_rows, n_outputs) otherwise.
        """
        if (type(X) is np.ndarray and not start_iteration and num_iteration is None
                and iteration_range is None):
            plain = raw_score or self._plain_output
            out = self._small(X, plain, algorithm, n_threads)
            if out is not None:
                if plain:
                    return out
                return self._transformed(out)
        part = self._part(start_iteration, num_iteration, iteration_range)
        if part is None:
            raw = self._no_trees(X)
            if not raw_score:
                if self.ensemble.average_output:     # LightGBM: the mean of no trees, 0 / 0
                    raw = np.full(raw.shape, np.nan, raw.dtype)
                return self._transformed(raw)
            return raw[:, 0] if raw.shape[1] == 1 else raw
        if part is not self:
            return part.predict(X, raw_score, algorithm=algorithm, n_threads=n_threads)
        raw = self.predict_raw(X, algorithm=algorithm, n_threads=n_threads)
        if not raw_score:
            return self._transformed(raw)
        return raw[:, 0] if raw.shape[1] == 1 else raw

    def rank(self, X, group=None, *, qid=None, top_k: int | None = None,
             raw_score: bool = False, algorithm: str | None = None,
             n_threads: int | None = 1) -> Ranking:
        """Rank the rows of ``X`` within their queries by score, best first.

        All queries are scored in one call of the kernel, then each is ordered on its own.

        Parameters
        ----------
        X : array-like of shape (n_rows, n_features)
            The documents of every query, a query's rows consecutive.
        group : array of int, optional
            LightGBM's form: the number of rows of each query, in order (summing to n_rows).
        qid : array, optional
            XGBoost's form: a query id per row (a query's rows consecutive). With neither,
            all rows are one query.
        top_k : int, optional
            Keep each query's ``top_k`` best rows in ``order`` (``rank`` covers every row).
        raw_score, algorithm, n_threads
            As for :meth:`predict`; the order is the same with or without ``raw_score``.

        Returns
        -------
        Ranking
            ``scores`` and ``rank`` (1 = best) per row; ``order`` and ``offsets`` per query
            (``ranking.query(q)`` is query ``q``'s rows, best first). Equal scores keep their
            input order; a NaN score ranks last.
        """
        if self.n_outputs != 1:
            raise InputError(f"rank needs a model of one output per row; this one has "
                             f"{self.n_outputs} (score it with predict)")
        scores = self.predict(X, raw_score, algorithm=algorithm, n_threads=n_threads)
        starts = query_starts(scores.shape[0], group, qid)
        return rank_scores(scores, starts, top_k)

    def _no_trees(self, X) -> np.ndarray:
        """Raw scores of a range of no iterations: each output's base score (0.0 for
        LightGBM), in the dtype the model's scores have."""
        n = as_inputs(self.ensemble, X).shape[0]
        return np.broadcast_to(self.ensemble.base_score.astype(self._forest.dtype),
                               (n, self.n_outputs)).copy()

    def _small(self, X: np.ndarray, squeeze: bool, algorithm, n_threads):
        """Raw scores of a call of fewer than PARALLEL_MIN_ROWS rows (one thread whatever was
        asked) through the low-latency entry of the kernel the automatic choice runs for that
        many rows (``Algorithm.small_entry``, kept per number of rows), or of the named one
        where it has the entry (``Algorithm.predict_small``);
        None for every other call, and where X is not a C-contiguous float32/float64 array of
        the model's width (the general path then reads it, or says what is wrong)."""
        nd = X.ndim
        if nd == 2:
            rows = X.shape[0]
        elif nd == 1:
            rows = 1
        else:
            return None
        if rows >= autoselect.PARALLEL_MIN_ROWS or not (n_threads is None
                                                       or type(n_threads) is int):
            return None
        if self.ensemble.ctr is not None:
            X = as_rows(self.ensemble, X)     # the inputs checked, the CTR columns appended
        if algorithm is None or algorithm == DEFAULT_ALGORITHM:
            return (self._small_entries[rows] or self._small_entry(rows))(X, squeeze)
        if algorithm in _SMALL_CALL_ALGORITHMS:
            name = algorithm
        else:
            return None
        alg = self._prepared.get(name)
        if alg is None:
            alg = self.prepare(name)
        return alg.predict_small(X, squeeze)

    def _small_entry(self, rows: int):
        """The default kernel's low-latency entry for calls of ``rows`` rows, made once."""
        entry = self.prepare(self._small_kernels[rows]).small_entry(rows)
        self._small_entries[rows] = entry
        return entry

    def _transformed(self, raw: np.ndarray) -> np.ndarray:
        """The outputs of raw scores (rows x outputs): transform, averaging, one output as 1-D."""
        e = self.ensemble
        out = raw
        divide_by = float(e.n_iterations) if e.average_output else 1.0
        if e.transform != "identity" or divide_by != 1.0:
            out = apply_transform(e.transform, dict(e.transform_params), raw, divide_by)
        return out[:, 0] if out.shape[1] == 1 else out


    def predict_soft(self, X, temperature: float, *, raw_score: bool = False) -> np.ndarray:
        """Soft prediction: node ``n`` goes left with probability
        ``sigmoid((threshold - x) / temperature)`` (missing values and categories by their
        rules), leaf values weighted by the leaf probabilities of the fuzzy matrix. Tends to
        :meth:`predict` as ``temperature -> 0``, away from thresholds. A numpy
        implementation for study (see :mod:`quickscorer.paper.soft`), float64.
        """
        out = soft.predict_soft(self.ensemble, as_rows(self.ensemble, X), temperature,
                           raw_score=raw_score)
        return out[:, 0] if out.shape[1] == 1 else out

    def leaf_attention(self, X) -> list[np.ndarray]:
        """Per tree, ``softmax(D^-1 P s)``: a distribution over its leaves for each row that
        peaks at the exit leaf (see :mod:`quickscorer.paper.soft`)."""
        return soft.leaf_attention(self.ensemble, as_rows(self.ensemble, X))

    def predict_leaf(self, X, *, algorithm: str | None = None, source_ids: bool = False,
                     n_threads: int | None = 1, start_iteration: int = 0,
                     num_iteration: int | None = None,
                     iteration_range: tuple[int, int] | None = None) -> np.ndarray:
        """Exit leaf of every tree, shape ``(n_rows, n_trees)``, int32.

        Leaves are numbered left to right within each tree; with ``source_ids=True`` they are
        the source library's own ids (what ``pred_leaf=True`` returns there). With part of
        the ensemble (as for :meth:`predict`), the columns are its trees.
        """
        part = self._part(start_iteration, num_iteration, iteration_range)
        if part is None:
            return np.empty((as_inputs(self.ensemble, X).shape[0], 0), np.int32)
        if part is not self:
            return part.predict_leaf(X, algorithm=algorithm, source_ids=source_ids,
                                     n_threads=n_threads)
        X, alg, n_threads = self._run(X, algorithm, n_threads)
        out = np.empty((X.shape[0], self.n_trees), np.int32)
        alg.predict_leaf(X, out, n_threads)
        if source_ids:
            for t, tree in enumerate(self.ensemble.trees):
                out[:, t] = tree.leaf_source_id[out[:, t]]
        return out
