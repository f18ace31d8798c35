"""The public scoring object: a loaded model, scored through its kernel plan."""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from . import threads
from ._transforms import apply_transform
from .algorithms.base import Algorithm
from .errors import InputError
from .explain import Explainer, feature_labels, shaped
from .inputs.arrays import as_inputs
from .ir.ensemble import Ensemble
from .parts import Parts, base_scores, iteration_bounds, whole
from .plan import AUTO, KernelPlan, resolve_threads
from .ranking import Ranking, query_starts, rank_scores

#: models of part of the ensemble (predict's iteration arguments) kept per model
PART_CACHE = 8

#: ``predict(..., algorithm=None)`` picks the fastest exact algorithm per call
#: (quickscorer/plan.py, algorithms/autoselect.py)
DEFAULT_ALGORITHM = AUTO


def _squeezed(out: np.ndarray) -> np.ndarray:
    """One output as a 1-D array, as the libraries return it."""
    return out[:, 0] if out.shape[1] == 1 else out


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
        #: which kernel runs each call size, and the layouts prepared so far
        self.plan = KernelPlan(ensemble)
        #: raw scores are the output (no transform, no averaging)
        self._plain_output = ensemble.transform == "identity" and not ensemble.average_output
        self._parts = Parts(ensemble, Model, PART_CACHE)
        #: the contributions' layout, built by the first call that needs it
        self._explainer = Explainer(ensemble)
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

    def __reduce__(self):
        # the copy prepares the layouts this one had built
        return (Model, (self.ensemble, tuple(self.plan.prepared)))

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
        ex = self._explainer
        return self.plan.memory({"contributions": ex.arrays()} if ex.built else None)

    def __repr__(self) -> str:
        e = self.ensemble
        return (f"<quickscorer.Model {e.source.get('library')} {e.source.get('objective')!r}: "
                f"{e.n_trees} trees, {e.n_outputs} output(s), {e.n_inputs} features>")

    # -- part of the ensemble ---------------------------------------------------------------
    def iteration_bounds(self, start_iteration: int = 0, num_iteration: int | None = None,
                         iteration_range: tuple[int, int] | None = None) -> tuple[int, int]:
        """The boosting iterations ``[begin, end)`` that these arguments select, with
        LightGBM's meaning (``start_iteration``, ``num_iteration``) or XGBoost's
        (``iteration_range``): :func:`quickscorer.parts.iteration_bounds`."""
        return iteration_bounds(self.ensemble.n_iterations, start_iteration, num_iteration,
                                iteration_range)

    def _part(self, start_iteration, num_iteration, iteration_range) -> Model | None:
        """This model, the model of the selected iterations (kept: the last PART_CACHE
        ranges), or None for a range of no iterations."""
        if whole(start_iteration, num_iteration, iteration_range):
            return self
        begin, end = self.iteration_bounds(start_iteration, num_iteration, iteration_range)
        if (begin, end) == (0, self.ensemble.n_iterations):
            return self
        if begin == end:
            return None
        return self._parts.get(begin, end)

    def predict_raw(self, X, *, algorithm: str | None = None, n_threads: int | None = 1,
                    start_iteration: int = 0, num_iteration: int | None = None,
                    iteration_range: tuple[int, int] | None = None) -> np.ndarray:
        """Raw scores (margins), shape ``(n_rows, n_outputs)``.

        float64 for LightGBM models, float32 for XGBoost models, as each library returns.
        ``start_iteration`` / ``num_iteration`` (LightGBM) or ``iteration_range`` (XGBoost)
        score with part of the ensemble (:meth:`iteration_bounds`).
        """
        if type(X) is np.ndarray and whole(start_iteration, num_iteration, iteration_range):
            out = self.plan.small_call(X, False, algorithm, n_threads)
            if out is not None:
                return out
        part = self._part(start_iteration, num_iteration, iteration_range)
        if part is None:
            return base_scores(self.ensemble, as_inputs(self.ensemble, X).shape[0],
                              self.plan.forest.dtype)
        if part is not self:
            return part.predict_raw(X, algorithm=algorithm, n_threads=n_threads)
        X, alg, n_threads = self.plan.call(X, algorithm, n_threads)
        n, k = X.shape[0], self.n_outputs
        # the model's precision: one output full, the other empty
        f32 = self.plan.forest.dtype == np.float32
        out64 = np.empty((0 if f32 else n, k), np.float64)
        out32 = np.empty((n if f32 else 0, k), np.float32)
        if n_threads > 1:                 # OpenMP's threads, or a pool where there is none
            threads.run(alg.predict_raw, X, (out64, out32), n_threads)
        else:
            alg.predict_raw(X, out64, out32, 1)
        return out32 if f32 else out64

    def contributions(self, X, *, interactions: bool = False, method: str = "quadrature",
                      n_threads: int | None = 1, start_iteration: int = 0,
                      num_iteration: int | None = None,
                      iteration_range: tuple[int, int] | None = None,
                      max_bytes: int | None = None) -> np.ndarray:
        """SHAP contributions of each feature to each row's raw score (TreeSHAP's
        path-dependent values, weighted by the training covers the model stores).

        Each row's values sum to its raw score: one column per feature, then the bias (the
        model's expected raw score), per output. For a scikit-learn forest they explain its
        prediction, the trees' mean, as ``shap`` does; for a LightGBM random forest the sum
        of its trees, as LightGBM does. The layout is the source library's:
        LightGBM's ``predict(pred_contrib=True)``, outputs side by side, ``(n_rows,
        n_outputs * (n_features + 1))`` float64; every other library's ``(n_rows,
        n_features + 1)`` for one output, ``(n_rows, n_outputs, n_features + 1)`` for more
        (XGBoost's ``pred_contribs=True``, float32, as XGBoost returns them).

        With ``interactions=True``, SHAP interaction values as XGBoost's
        ``pred_interactions=True`` gives them, for every library: ``(n_rows, n_features + 1,
        n_features + 1)``, ``(n_rows, n_outputs, n_features + 1, n_features + 1)`` for more
        outputs; entry (i, j) half the pair's interaction, each way round, the diagonal the
        feature's contribution less its row's other entries, (bias, bias) the bias. Each
        matrix sums to the row's raw score.

        Parameters
        ----------
        X : array-like of shape (n_rows, n_features) or (n_features,)
            As for :meth:`predict`.
        interactions : bool
            Return the interaction values rather than the contributions.
        method : {"quadrature", "treeshap"}
            ``"quadrature"`` (default): the Shapley integral summed exactly by Gauss-Legendre
            quadrature, the fast way. ``"treeshap"``: the source library's own computation
            in its order and precision, TreeSHAP's recursion (XGBoost 3.3 and later: its
            8-point quadrature), LightGBM's and XGBoost's values bit for bit on x86-64. The
            two differ in the last bits only (docs/contributions.md).
        n_threads : int
            Threads over rows (0 or negative: all cores). Default 1.
        start_iteration, num_iteration, iteration_range
            Part of the ensemble, as for :meth:`predict`.
        max_bytes : int, optional
            Interactions only: the most memory the call may take (its output and each
            thread's sums); default half the memory available when it starts.

        Raises
        ------
        ModelFormatError
            The model has no covers (its source stores none), a cover that is not positive,
            or CatBoost CTR features.
        InputError
            Interactions that would need more than ``max_bytes``: raised before anything is
            allocated, naming the sizes.
        """
        part = self._part(start_iteration, num_iteration, iteration_range)
        if part is None:
            raise InputError("contributions of a range of no iterations: the range is empty")
        if part is not self:
            return part.contributions(X, interactions=interactions, method=method,
                                      n_threads=n_threads, max_bytes=max_bytes)
        X = as_inputs(self.ensemble, X)
        n_threads = resolve_threads(n_threads)
        raw = self._explainer.raw(X, method, min(n_threads, max(1, X.shape[0])),
                                  interactions, max_bytes)
        e = self.ensemble
        if e.average_output and e.family != "lightgbm":
            # a scikit-learn forest predicts its trees' mean, and shap explains that; LightGBM
            # explains a random forest's sum (its pred_contrib), which is kept
            raw = raw / float(e.n_iterations)
        return shaped(e, raw, interactions)

    def explain(self, X, *, method: str = "quadrature", n_threads: int | None = 1,
                start_iteration: int = 0, num_iteration: int | None = None,
                iteration_range: tuple[int, int] | None = None):
        """The rows' contributions as a ``shap.Explanation``, for shap's plots
        (``shap.plots.waterfall(model.explain(X)[0])``, ``beeswarm``, ``bar``): ``values``
        (n_rows, n_features), or (n_rows, n_features, n_outputs) for several outputs;
        ``base_values`` the bias; ``data`` the rows; the model's feature names.
        Needs shap (``pip install 'quickscorer[explain]'``); arguments as for
        :meth:`contributions`."""
        try:
            import shap
        except ImportError as exc:
            raise ImportError("Model.explain returns a shap.Explanation and needs shap: "
                              "pip install 'quickscorer[explain]'") from exc
        rows = as_inputs(self.ensemble, X)
        c = self.contributions(rows, method=method, n_threads=n_threads,
                               start_iteration=start_iteration, num_iteration=num_iteration,
                               iteration_range=iteration_range)
        e = self.ensemble
        F, K = e.n_features, e.n_outputs
        c = np.asarray(c, np.float64).reshape(rows.shape[0], K, F + 1)
        values, base = c[:, :, :F], c[:, :, F]
        if K == 1:
            values, base = values[:, 0, :], base[:, 0]
        else:
            values = np.moveaxis(values, 1, 2)
        return shap.Explanation(values=values, base_values=base,
                                data=np.asarray(rows, np.float64),
                                feature_names=feature_labels(self.feature_names, F))

    def predict(self, X, raw_score: bool = False, *, algorithm: str | None = None,
                n_threads: int | None = 1, start_iteration: int = 0,
                num_iteration: int | None = None,
                iteration_range: tuple[int, int] | None = None,
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
        pred_contrib, pred_contribs : bool
            LightGBM's and XGBoost's names: return :meth:`contributions` instead.
        pred_interactions : bool
            XGBoost's name: return ``contributions(X, interactions=True)`` instead.

        Returns
        -------
        ndarray of shape (n_rows,) for one output, (n_rows, n_outputs) otherwise.
        """
        if pred_contrib or pred_contribs or pred_interactions:
            return self.contributions(X, interactions=pred_interactions, n_threads=n_threads,
                                      start_iteration=start_iteration,
                                      num_iteration=num_iteration,
                                      iteration_range=iteration_range)
        if type(X) is np.ndarray and whole(start_iteration, num_iteration, iteration_range):
            plain = raw_score or self._plain_output
            out = self.plan.small_call(X, plain, algorithm, n_threads)
            if out is not None:
                if plain:
                    return out
                return self._transformed(out)
        part = self._part(start_iteration, num_iteration, iteration_range)
        if part is None:
            raw = base_scores(self.ensemble, as_inputs(self.ensemble, X).shape[0],
                              self.plan.forest.dtype)
            if not raw_score:
                if self.ensemble.average_output:     # LightGBM: the mean of no trees, 0 / 0
                    raw = np.full(raw.shape, np.nan, raw.dtype)
                return self._transformed(raw)
            return _squeezed(raw)
        if part is not self:
            return part.predict(X, raw_score, algorithm=algorithm, n_threads=n_threads)
        raw = self.predict_raw(X, algorithm=algorithm, n_threads=n_threads)
        return _squeezed(raw) if raw_score else self._transformed(raw)

    def rank(self, X, group=None, *, qid=None, top_k: int | None = None,
             raw_score: bool = False, algorithm: str | None = None,
             n_threads: int | None = 1, contributions: bool = False) -> Ranking:
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
        contributions : bool
            Also explain the ranked rows (each query's ``top_k`` where given):
            ``ranking.explanation(row)`` and ``ranking.why(a, b)``.

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
        r = rank_scores(scores, starts, top_k)
        if not contributions:
            return r
        rows = as_inputs(self.ensemble, X)[r.order]
        return dataclasses.replace(r, contributions=self.contributions(rows,
                                                                       n_threads=n_threads),
                                   feature_names=tuple(feature_labels(self.feature_names,
                                                                      self.n_features)))

    def _transformed(self, raw: np.ndarray) -> np.ndarray:
        """The outputs of raw scores (rows x outputs): transform, averaging, one output as 1-D."""
        e = self.ensemble
        out = raw
        divide_by = float(e.n_iterations) if e.average_output else 1.0
        if e.transform != "identity" or divide_by != 1.0:
            out = apply_transform(e.transform, dict(e.transform_params), raw, divide_by)
        return _squeezed(out)

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
        X, alg, n_threads = self.plan.call(X, algorithm, n_threads)
        out = np.empty((X.shape[0], self.n_trees), np.int32)
        if n_threads > 1:
            threads.run(alg.predict_leaf, X, (out,), n_threads)
        else:
            alg.predict_leaf(X, out, 1)
        if source_ids:
            for t, tree in enumerate(self.ensemble.trees):
                out[:, t] = tree.leaf_source_id[out[:, t]]
        return out
