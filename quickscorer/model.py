"""The public scoring object: a loaded model, scored through its kernel plan."""
from __future__ import annotations

from typing import Any

import numpy as np

from . import model_file, ranking
from .algorithms.base import Algorithm
from .errors import InputError
from .explain import Explainer, calls
from .inputs.arrays import as_inputs
from .ir.ensemble import Ensemble
from .parts import Parts, iteration_bounds, whole
from .plan import AUTO, KernelPlan, resolve_threads
from .request import Request, margins, with_missing
from .tuning import Tuning

#: models of part of the ensemble (predict's iteration arguments) kept per model
PART_CACHE = 8

#: ``predict(..., algorithm=None)`` picks the fastest exact algorithm per call
#: (quickscorer/plan.py, algorithms/autoselect.py)
DEFAULT_ALGORITHM = AUTO


def _margin(base_margin, init_score):
    """The one per-row margin of XGBoost's and LightGBM's spellings."""
    if base_margin is not None and init_score is not None:
        raise InputError("base_margin and init_score are two names of one margin: give one")
    return init_score if base_margin is None else base_margin


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
    tuning : Tuning, optional
        The constants of the automatic choice and the kernels' switches
        (:mod:`quickscorer.tuning`); default the process's (:func:`quickscorer.current_tuning`).
    """

    def __init__(self, ensemble: Ensemble, prepare: tuple[str, ...] = (),
                 tuning: Tuning | None = None):
        self.ensemble = ensemble
        #: which kernel runs each call size, and the layouts prepared so far
        self.plan = KernelPlan(ensemble, tuning)
        self.tuning = self.plan.tuning
        #: raw scores are the output (no transform, no averaging)
        self._plain_output = ensemble.transform == "identity" and not ensemble.average_output
        self._parts = Parts(ensemble, lambda part: Model(part, tuning=self.tuning), PART_CACHE)
        #: the contributions' layout, built by the first call that needs it
        self.explainer = Explainer(ensemble, self.tuning)
        if isinstance(prepare, str):
            prepare = (prepare,)
        for name in prepare:
            for one in (self.plan.candidates() if name == DEFAULT_ALGORITHM else (name,)):
                self.plan.prepare(one)

    # -- set-up ---------------------------------------------------------------------------
    def prepare(self, algorithm: str) -> Algorithm:
        """Build (once) and return the layout of ``algorithm``."""
        return self.plan.prepare(algorithm)

    def supported_algorithms(self) -> list[str]:
        """The algorithms that can score this model (all but ``rapidscorer`` score every
        model; ``Algorithm.unsupported`` says why one cannot)."""
        return list(self.plan.supported)

    def save(self, path, tuning: Tuning | None = None):
        """Write this model's prepared model file (``.qsm``, docs/model-file.md): its trees
        and every layout the automatic choice runs for it under ``tuning`` (default the
        model's), which ``quickscorer.load(path)`` maps without building anything. Written
        to a temporary file and renamed over ``path``. Returns the path."""
        return model_file.save(self, path, tuning)

    def __reduce__(self):
        # the copy prepares the layouts this one had built
        return (Model, (self.ensemble, tuple(self.plan.prepared), self.tuning))

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
        """Facts about the model, the kernel each call size runs and the prepared layouts
        (sizes in bytes)."""
        return {**self.ensemble.summary(), **self.plan.info(), **self.memory()}

    def memory(self) -> dict[str, Any]:
        """The bytes of numpy memory this model holds: ``total_bytes`` (each buffer once) and
        ``bytes`` per part: ``ensemble`` (the neutral model's arrays, its CTR stage's
        included), ``forest`` (leaf values and groups every kernel reads, beyond the
        ensemble's own), then each prepared algorithm's layout beyond what earlier parts hold
        (``vqs`` shares ``quickscorer``'s layout and adds its tree blocks). Per-thread scratch
        rows and Python objects are not counted; docs/memory-and-loading.md says how to read
        it. ``contributions`` is the layout of :meth:`contributions`, once a call built it."""
        ex = self.explainer
        return self.plan.memory({"contributions": ex.arrays()} if ex.built else None)

    def __repr__(self) -> str:
        e = self.ensemble
        return (f"<quickscorer.Model {e.source.get('library')} {e.source.get('objective')!r}: "
                f"{e.n_trees} trees, {e.n_outputs} output(s), {e.n_inputs} features>")

    # -- the call path: one request, the plan runs it, the output shaped -----------------
    def iteration_bounds(self, start_iteration: int = 0, num_iteration: int | None = None,
                         iteration_range: tuple[int, int] | None = None) -> tuple[int, int]:
        """The boosting iterations ``[begin, end)`` that these arguments select, with
        LightGBM's meaning (``start_iteration``, ``num_iteration``) or XGBoost's
        (``iteration_range``): :func:`quickscorer.parts.iteration_bounds`."""
        return iteration_bounds(self.ensemble.n_iterations, start_iteration, num_iteration,
                                iteration_range)

    def request(self, X, n_threads: int | None = 1, start_iteration: int = 0,
                num_iteration: int | None = None,
                iteration_range: tuple[int, int] | None = None, missing=None,
                margin=None) -> Request:
        """A call normalised (:class:`~quickscorer.request.Request`): the part of the
        ensemble it selects (this model, the model of those iterations, kept for the last
        PART_CACHE ranges, or None for a range of none), its rows read once as the model's
        inputs (``missing``: the value read as NaN), its threads as a count, its rows'
        margins (``request.margins``)."""
        part = self
        if not whole(start_iteration, num_iteration, iteration_range):
            begin, end = self.iteration_bounds(start_iteration, num_iteration, iteration_range)
            if begin == end:
                part = None
            elif (begin, end) != (0, self.ensemble.n_iterations):
                part = self._parts.get(begin, end)
        rows = with_missing(self.ensemble, as_inputs(self.ensemble, X), missing)
        return Request(self, part, rows, resolve_threads(n_threads),
                       None if margin is None else margins(self.ensemble, margin,
                                                           rows.shape[0]))

    def predict_raw(self, X, *, algorithm: str | None = None, n_threads: int | None = 1,
                    start_iteration: int = 0, num_iteration: int | None = None,
                    iteration_range: tuple[int, int] | None = None, missing=None,
                    base_margin=None, init_score=None) -> np.ndarray:
        """Raw scores (margins), shape ``(n_rows, n_outputs)``.

        float64 for LightGBM models, float32 for XGBoost models, as each library returns.
        ``start_iteration`` / ``num_iteration`` (LightGBM) or ``iteration_range`` (XGBoost)
        score with part of the ensemble (:meth:`iteration_bounds`); ``missing``,
        ``base_margin`` and ``init_score`` as for :meth:`predict`.
        """
        # a numpy array, the whole ensemble, no option: the plan's low-latency path (None
        # where it declines the call), the test written out, a frame less on every call
        if (type(X) is np.ndarray and not start_iteration and num_iteration is None
                and iteration_range is None and missing is None and base_margin is None
                and init_score is None):
            out = self.plan.small_call(X, False, algorithm, n_threads)
            if out is not None:
                return out
        return self.request(X, n_threads, start_iteration, num_iteration, iteration_range,
                            missing, _margin(base_margin, init_score)).raw(algorithm)

    def predict(self, X, raw_score: bool = False, *, algorithm: str | None = None,
                n_threads: int | None = 1, start_iteration: int = 0,
                num_iteration: int | None = None,
                iteration_range: tuple[int, int] | None = None, missing=None,
                base_margin=None, init_score=None,
                pred_contrib: bool = False, pred_contribs: bool = False,
                pred_interactions: bool = False) -> np.ndarray:
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
        missing : float, optional
            A value read as missing (NaN), as XGBoost's ``DMatrix(missing=...)`` reads it
            (compared in float32 for an XGBoost model); NaN is missing whatever it is.
        base_margin, init_score : array, optional
            Each row's margin, ``(n_rows,)`` or ``(n_rows, n_outputs)``: XGBoost's
            ``base_margin`` takes the base score's place at the start of its float32 sum (its
            margins bit for bit); for every other library (LightGBM's ``init_score``) it is
            added to the raw score, as its users add it. The transform applies after.
        pred_contrib, pred_contribs : bool
            LightGBM's and XGBoost's names: return :meth:`contributions` instead.
        pred_interactions : bool
            XGBoost's name: return ``contributions(X, interactions=True)`` instead.

        Returns
        -------
        ndarray of shape (n_rows,) for one output, (n_rows, n_outputs) otherwise.
        """
        if pred_contrib or pred_contribs or pred_interactions:     # the libraries' spellings
            return self.request(X, n_threads, start_iteration, num_iteration,
                                iteration_range, missing).contributions(pred_interactions)
        plain = raw_score or self._plain_output
        if (type(X) is np.ndarray and not start_iteration and num_iteration is None
                and iteration_range is None and missing is None and base_margin is None
                and init_score is None):              # as in predict_raw
            out = self.plan.small_call(X, plain, algorithm, n_threads)
            if out is not None:
                return out if plain else Request(self, self, X, 1).outputs(out)
        r = self.request(X, n_threads, start_iteration, num_iteration, iteration_range,
                         missing, _margin(base_margin, init_score))
        return r.outputs(r.raw(algorithm), raw_score)

    def predict_leaf(self, X, *, algorithm: str | None = None, source_ids: bool = False,
                     n_threads: int | None = 1, start_iteration: int = 0,
                     num_iteration: int | None = None,
                     iteration_range: tuple[int, int] | None = None,
                     missing=None) -> np.ndarray:
        """Exit leaf of every tree, shape ``(n_rows, n_trees)``, int32.

        Leaves are numbered left to right within each tree; with ``source_ids=True`` they are
        the source library's own ids (what ``pred_leaf=True`` returns there). With part of
        the ensemble (as for :meth:`predict`), the columns are its trees; ``missing`` as
        for :meth:`predict`.
        """
        r = self.request(X, n_threads, start_iteration, num_iteration, iteration_range,
                         missing)
        return r.leaves(algorithm, source_ids)

    # -- explaining and ranking: one request each (explain/calls.py, ranking.py) ----------
    contributions = calls.contributions
    explain = calls.explain
    rank = ranking.rank
