"""Part of an ensemble: the boosting iterations that LightGBM's and XGBoost's arguments select,
and the models of such parts that a model keeps, so repeated calls build no layout."""
from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from .errors import InputError
from .ir.ensemble import Ensemble


def whole(start_iteration, num_iteration, iteration_range) -> bool:
    """Whether the iteration arguments are their defaults (the whole ensemble as given)."""
    return not start_iteration and num_iteration is None and iteration_range is None


def iteration_bounds(n: int, start_iteration: int = 0, num_iteration: int | None = None,
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


def base_scores(ensemble: Ensemble, n_rows: int, dtype) -> np.ndarray:
    """Raw scores of a range of no iterations: each output's base score (0.0 for LightGBM)
    for every row, in the dtype of the model's scores."""
    return np.broadcast_to(ensemble.base_score.astype(dtype),
                           (n_rows, ensemble.n_outputs)).copy()


class Parts:
    """The models of parts of one ensemble, the last ``keep`` ranges used, each made once by
    ``make`` (the model class) from the ensemble of its iterations."""

    def __init__(self, ensemble: Ensemble, make: Callable[[Ensemble], Any], keep: int = 8):
        self.ensemble, self.make, self.keep = ensemble, make, keep
        self.models: dict[tuple[int, int], Any] = {}      # most recently used last
        self._lock = threading.Lock()

    def get(self, begin: int, end: int):
        with self._lock:
            part = self.models.pop((begin, end), None)
            if part is None:
                part = self.make(self.ensemble.iterations(begin, end))
            self.models[(begin, end)] = part
            while len(self.models) > self.keep:
                self.models.pop(next(iter(self.models)))
        return part
