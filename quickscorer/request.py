"""A scoring call normalised once: :class:`Request`, what :meth:`Model.request` makes of the
arguments of every call (the part of the ensemble, the rows read as the model's inputs, the
thread count), and the steps each call takes with it through the part's plan, explainer and
output transform."""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from ._transforms import apply_transform
from .errors import InputError
from .explain import shaped
from .ir.sums import xgboost_sum
from .parts import base_scores


def squeezed(out: np.ndarray) -> np.ndarray:
    """One output as a 1-D array, as the libraries return it."""
    return out[:, 0] if out.shape[1] == 1 else out


def with_missing(ens, rows: np.ndarray, missing) -> np.ndarray:
    """``rows`` with every entry equal to ``missing`` read as NaN, as XGBoost's
    ``DMatrix(missing=...)`` reads it: compared in float32 for an XGBoost model (XGBoost reads
    every value as float32 first), as given otherwise; NaN (or None) changes nothing."""
    if missing is None or np.isnan(missing):
        return rows
    if ens.family == "xgboost":
        hit = np.asarray(rows, np.float32) == np.float32(missing)
    else:
        hit = rows == missing
    return np.where(hit, np.nan, rows).astype(rows.dtype, copy=False) if hit.any() else rows


def margins(ens, margin, n_rows: int) -> np.ndarray:
    """A per-row margin (XGBoost's ``base_margin``, LightGBM's ``init_score``) as ``(n_rows,
    n_outputs)`` float64: one value a row for one output, a row of ``n_outputs`` values (or
    LightGBM's output-major flat list) for several. An InputError names a shape that is not
    one of these, and a model that averages its trees."""
    if ens.average_output or ens.bag_offsets is not None:
        raise InputError("a model that averages its trees (a random forest) takes no per-row "
                         "margin")
    if ens.leaf_sum is not None:
        raise InputError(f"a {ens.source.get('library')} model takes no per-row margin")
    m = np.asarray(margin, np.float64)
    k = ens.n_outputs
    if m.ndim == 1 and m.shape[0] == n_rows * k:
        m = m.reshape(n_rows, k) if k == 1 else m.reshape(k, n_rows).T
    if m.shape != (n_rows, k):
        raise InputError(f"a margin of shape {np.shape(margin)} for {n_rows} rows of "
                         f"{k} output(s): give (n_rows,) or (n_rows, n_outputs)")
    return np.ascontiguousarray(m)


class Request(NamedTuple):
    """One call: ``model`` (the model called), ``part`` (the model of the iterations the call
    selects: ``model`` itself for all of them, None for a range of none), ``rows`` (read as
    the model's inputs, ``missing=`` applied, CTR columns not yet appended), ``n_threads`` (a
    count) and ``margin`` (each row's margin, ``(n_rows, n_outputs)``, or None)."""

    model: Any
    part: Any
    rows: np.ndarray
    n_threads: int
    margin: np.ndarray | None = None

    def raw(self, algorithm: str | None = None) -> np.ndarray:
        """Raw scores, ``(n_rows, n_outputs)`` in the model's precision; the base scores (or
        the margins) for a range of no iterations. A margin takes the base score's place in
        XGBoost's float32 sum (summed here leaf by leaf, in its order: slower than the
        kernels' sum), and is added to every other library's float64 raw score."""
        m = self.model
        if self.margin is not None and m.ensemble.family == "xgboost":
            if self.part is None:
                return self.margin.astype(np.float32)
            return xgboost_sum(self.part.ensemble,
                                self.part.plan.leaves(self.rows, algorithm, self.n_threads),
                                self.margin)
        if self.margin is not None:
            return self._raw(algorithm) + self.margin
        return self._raw(algorithm)

    def _raw(self, algorithm: str | None) -> np.ndarray:
        m = self.model
        if self.part is None:
            return base_scores(m.ensemble, self.rows.shape[0], m.plan.forest.dtype)
        return self.part.plan.raw(self.rows, algorithm, self.n_threads)

    def outputs(self, raw: np.ndarray, raw_score: bool = False) -> np.ndarray:
        """What ``predict`` returns for raw scores (rows x outputs): one output as 1-D, then,
        unless ``raw_score``, the transform and averaging of the part (the mean of no trees
        of a model that averages is 0 / 0)."""
        if raw_score:
            return squeezed(raw)
        if self.part is None and self.model.ensemble.average_output:
            raw = np.full(raw.shape, np.nan, raw.dtype)
        e = (self.part or self.model).ensemble
        divide_by = float(e.n_iterations) if e.average_output else 1.0
        if e.transform != "identity" or divide_by != 1.0:
            raw = apply_transform(e.transform, dict(e.transform_params), raw, divide_by)
        return squeezed(raw)

    def leaves(self, algorithm: str | None = None, source_ids: bool = False) -> np.ndarray:
        """The part's exit leaves, ``(n_rows, its n_trees)`` int32, in order within each tree
        or, with ``source_ids``, the source library's own ids."""
        if self.part is None:
            return np.empty((self.rows.shape[0], 0), np.int32)
        out = self.part.plan.leaves(self.rows, algorithm, self.n_threads)
        if source_ids:
            for t, tree in enumerate(self.part.ensemble.trees):
                out[:, t] = tree.leaf_source_id[out[:, t]]
        return out

    def contributions(self, interactions: bool = False, method: str = "quadrature",
                      max_bytes: int | None = None) -> np.ndarray:
        """The part's SHAP values in the source library's layout (``Model.contributions``)."""
        if self.part is None:
            raise InputError("contributions of a range of no iterations: the range is empty")
        e = self.part.ensemble
        raw = self.part.explainer.raw(self.rows, method,
                                      min(self.n_threads, max(1, self.rows.shape[0])),
                                      interactions, max_bytes)
        if e.average_output and e.family != "lightgbm":
            # a scikit-learn forest predicts its trees' mean, and shap explains that; LightGBM
            # explains a random forest's sum (its pred_contrib), which is kept
            raw = raw / float(e.n_iterations)
        return shaped(e, raw, interactions)
