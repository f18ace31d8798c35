"""Ranking documents within queries: where each query's rows start, and each row's rank.

Rows of a query are consecutive (as in LibSVM ranking files and LightGBM's ``group``). Rank 1
is the highest score; equal scores keep their input order, and a NaN score ranks last.
"""
from __future__ import annotations

import numpy as np

from .errors import InputError


def group_starts(query) -> np.ndarray:
    """The row where each query begins, for an array of per-row query ids (consecutive runs of
    one id are one query)."""
    q = np.asarray(query)
    if q.shape[0] == 0:
        return np.zeros(0, np.int64)
    return np.concatenate(([0], np.flatnonzero(q[1:] != q[:-1]) + 1)).astype(np.int64)


def starts_from_sizes(sizes) -> np.ndarray:
    """The row where each query begins, for query sizes (LightGBM's ``group``)."""
    s = np.asarray(sizes)
    if s.ndim != 1 or s.dtype.kind not in "iu" or (s < 0).any():
        raise InputError("query sizes must be a 1-D array of non-negative integers")
    return np.concatenate(([0], np.cumsum(s)[:-1])).astype(np.int64) if s.size else s.astype(np.int64)


def order_within(scores: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Row indices query by query, best score first (ties in input order, NaN last)."""
    n = scores.shape[0]
    if n == 0:
        return np.zeros(0, np.int64)
    group = np.zeros(n, np.int64)
    group[starts[1:]] = 1
    group = np.cumsum(group)
    neg = -scores.astype(np.float64)
    neg[np.isnan(neg)] = np.inf                 # NaN last
    return np.lexsort((np.arange(n), neg, group)).astype(np.int64)


def ranks_within(scores: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rank of every row within its query, 1-based; the order of :func:`order_within`)."""
    n = scores.shape[0]
    order = order_within(scores, starts)
    sizes = np.diff(np.append(starts, n))
    first = np.repeat(starts, sizes)            # each sorted position's query start
    rank = np.empty(n, np.int64)
    rank[order] = np.arange(n) - first + 1
    return rank, order
