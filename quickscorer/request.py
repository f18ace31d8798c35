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
from .parts import base_scores


def squeezed(out: np.ndarray) -> np.ndarray:
    """One output as a 1-D array, as the libraries return it."""
    return out[:, 0] if out.shape[1] == 1 else out


class Request(NamedTuple):
    """One call: ``model`` (the model called), ``part`` (the model of the iterations the call
    selects: ``model`` itself for all of them, None for a range of none), ``rows`` (read as
    the model's inputs, CTR columns not yet appended) and ``n_threads`` (a count)."""

    model: Any
    part: Any
    rows: np.ndarray
    n_threads: int

    def raw(self, algorithm: str | None = None) -> np.ndarray:
        """Raw scores, ``(n_rows, n_outputs)`` in the model's precision; the base scores for
        a range of no iterations."""
        if self.part is None:
            m = self.model
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
