"""float32 comparisons as float64 ones: the sources that compare a float32 copy of the row
(scikit-learn, CatBoost) become trees of the row as given.
"""
from __future__ import annotations

import numpy as np

#: the float32 value above FLT_MAX that rounding goes to (2 ** 128, infinity's place)
_BEYOND_MAX = 2.0 ** 128


def float32_boundary(threshold: np.ndarray) -> np.ndarray:
    """Float64 thresholds ``t'`` with ``x <= t'`` exactly when ``float32(x) <= threshold``,
    for every float64 ``x`` (round to nearest, ties to even): ``T``, the largest float32 at or
    below the threshold, goes left with every ``x`` that rounds to it or below, that is up to
    the midpoint between ``T`` and the next float32, the midpoint itself included where ``T``
    is even (a tie rounds to it) and excluded where it is odd."""
    low = float32_below(threshold)
    with np.errstate(over="ignore"):
        up = np.nextafter(low, np.float32(np.inf)).astype(np.float64)
    up = np.where(np.isinf(up) & (up > 0), _BEYOND_MAX, up)
    low64 = low.astype(np.float64)
    low64 = np.where(np.isinf(low64) & (low64 < 0), -_BEYOND_MAX, low64)
    mid = (low64 + up) / 2.0              # two neighbouring float32 values: exact (+inf: +inf)
    odd = (low.view(np.uint32) & 1).astype(bool)
    return np.where(odd, np.nextafter(mid, -np.inf), mid)


def float32_below(t: np.ndarray) -> np.ndarray:
    """The largest float32 at or below each float64 of ``t`` (NaN stays NaN)."""
    t = np.asarray(t, dtype=np.float64)
    with np.errstate(over="ignore"):
        low = t.astype(np.float32)
        return np.where(low.astype(np.float64) > t, np.nextafter(low, np.float32(-np.inf)), low)
