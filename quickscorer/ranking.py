"""Ranking documents within queries: where each query's rows start, each row's rank, and
``Model.rank`` (:func:`rank`), which scores every query in one call and orders each.

Rows of a query are consecutive (as in LibSVM ranking files and LightGBM's ``group``). Rank 1
is the highest score; equal scores keep their input order, and a NaN score ranks last.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .errors import InputError
from .explain.contributions import feature_labels


def group_starts(query) -> np.ndarray:
    """The row where each query begins, for an array of per-row query ids (consecutive runs of
    one id are one query)."""
    q = np.asarray(query)
    if q.shape[0] == 0:
        return np.zeros(0, np.int64)
    return np.concatenate(([0], np.flatnonzero(q[1:] != q[:-1]) + 1)).astype(np.int64)


def starts_from_sizes(sizes) -> np.ndarray:
    """The row where each query begins, for query sizes (LightGBM's ``group``); an empty
    query begins where the next one does."""
    s = np.asarray(sizes)
    if s.ndim != 1 or s.dtype.kind not in "iu" or (s < 0).any():
        raise InputError("query sizes must be a 1-D array of non-negative integers")
    if not s.size:
        return s.astype(np.int64)
    return np.concatenate(([0], np.cumsum(s)[:-1])).astype(np.int64)


def order_within(scores: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Row indices query by query, best score first (ties in input order, NaN last)."""
    n = scores.shape[0]
    if n == 0:
        return np.zeros(0, np.int64)
    sizes = np.diff(np.append(starts, n))
    group = np.repeat(np.arange(starts.shape[0], dtype=np.int64), sizes)  # empty queries too
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


@dataclass(frozen=True, eq=False)
class Ranking:
    """Documents ranked within their queries (what :meth:`quickscorer.Model.rank` returns).

    ``order[offsets[q]:offsets[q + 1]]`` are query ``q``'s rows, best first (its ``top_k``
    best where a ``top_k`` was given); ``rank[i]`` is row ``i``'s place in its query (1 =
    best, every row, whatever ``top_k``); ``scores[i]`` its score. Equal scores keep their
    input order and a NaN score ranks last.

    With ``rank(..., contributions=True)``, ``contributions[j]`` are the SHAP contributions
    of row ``order[j]`` (one per feature, then the bias: they add up to its raw score), and
    :meth:`why` says which features put one document above another.
    """

    scores: np.ndarray    # (n_rows,) the model's output for each row
    rank: np.ndarray      # (n_rows,) int64, 1-based within the row's query
    order: np.ndarray     # int64 row indices, query by query, best first
    offsets: np.ndarray   # (n_queries + 1,) int64: query q's entries of ``order``
    starts: np.ndarray    # (n_queries,) int64: the first row of each query
    #: (len(order), n_features + 1) where asked: the contributions of the rows of ``order``
    contributions: np.ndarray | None = None
    feature_names: tuple | None = None

    @property
    def n_queries(self) -> int:
        return int(self.starts.shape[0])

    def __len__(self) -> int:
        return self.n_queries

    def query(self, q: int) -> np.ndarray:
        """Row indices of query ``q``, best first."""
        if not -self.n_queries <= q < self.n_queries:
            raise IndexError(f"query {q} out of range for {self.n_queries} queries")
        q %= self.n_queries
        return self.order[self.offsets[q]:self.offsets[q + 1]]

    def __iter__(self):
        for q in range(self.n_queries):
            yield self.order[self.offsets[q]:self.offsets[q + 1]]

    def explanation(self, row: int) -> np.ndarray:
        """The SHAP contributions of ``row`` (an input row among those ranked in ``order``):
        one per feature, then the bias."""
        return self.contributions[self._entry(row)]

    def why(self, a: int, b: int, top: int | None = 10) -> list[tuple[str, float]]:
        """Why row ``a`` scores above (or below) row ``b``: each feature's share of the
        difference of their raw scores, ``(name, contribution of a - contribution of b)``,
        largest first by size (the ``top`` largest; None: every feature that differs). The
        shares add up to the difference: the bias is the same for both."""
        d = (self.explanation(a).astype(np.float64)
             - self.explanation(b).astype(np.float64))[:-1]
        names = self.feature_names or feature_labels(None, d.shape[0])
        keep = np.flatnonzero(d != 0)
        keep = keep[np.argsort(-np.abs(d[keep]), kind="stable")]
        if top is not None:
            keep = keep[:top]
        return [(str(names[i]), float(d[i])) for i in keep]

    def _entry(self, row: int) -> int:
        if self.contributions is None:
            raise InputError("this ranking has no contributions: rank with "
                             "contributions=True")
        at = np.flatnonzero(self.order == row)
        if at.shape[0] == 0:
            raise InputError(f"row {row} is not among the ranked rows (those top_k kept)")
        return int(at[0])


def rank_scores(scores: np.ndarray, starts: np.ndarray, top_k: int | None = None) -> Ranking:
    """Rank one score per row within the queries that begin at ``starts``."""
    scores = np.asarray(scores)
    if scores.ndim != 1:
        raise InputError(f"ranking needs one score per row, got scores of shape {scores.shape}")
    n = scores.shape[0]
    starts = np.asarray(starts, np.int64)
    if top_k is not None:
        if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or top_k < 1:
            raise InputError(f"top_k must be a positive integer, got {top_k!r}")
    rank, order = ranks_within(scores, starts)
    sizes = np.diff(np.append(starts, n))
    if top_k is not None and n:
        order = order[rank[order] <= top_k]
        sizes = np.minimum(sizes, top_k)
    offsets = np.zeros(starts.shape[0] + 1, np.int64)
    np.cumsum(sizes, out=offsets[1:])
    return Ranking(scores, rank, order, offsets, starts)


def query_starts(n_rows: int, group=None, qid=None) -> np.ndarray:
    """The first row of each query, from LightGBM-style ``group`` (query sizes, summing to
    the rows) or XGBoost-style ``qid`` (a query id per row, a query's rows consecutive); one
    query of every row when neither is given."""
    if group is not None and qid is not None:
        raise InputError("give group (query sizes) or qid (a query id per row), not both")
    if qid is not None:
        q = np.asarray(qid)
        if q.ndim == 2 and q.shape[1] == 1:
            q = q[:, 0]
        if q.ndim != 1 or q.shape[0] != n_rows:
            raise InputError(f"qid needs one query id per row ({n_rows}), got shape {q.shape}")
        starts = group_starts(q)
        again = repeated_query(q, starts, set())
        if again is not None:
            raise InputError(f"query id {again[0]!r} comes back after other queries; the rows "
                             f"of a query must be consecutive")
        return starts
    if group is not None:
        s = np.asarray(group)
        starts = starts_from_sizes(s.reshape(1) if s.ndim == 0 else s)
        if int(s.sum()) != n_rows:
            raise InputError(f"the query sizes in group add up to {int(s.sum())} rows, the "
                             f"input has {n_rows} (for a query id per row, pass qid)")
        return starts
    return np.zeros(1 if n_rows else 0, np.int64)


def repeated_query(query: np.ndarray, starts: np.ndarray, seen: set):
    """The first query (id, start row) among those beginning at ``starts`` whose id is in
    ``seen`` or repeats an earlier one; None if none does. Adds the ids to ``seen``."""
    for s in starts:
        q = query[s]
        key = q.item() if hasattr(q, "item") else q
        if key in seen:
            return key, int(s)
        seen.add(key)
    return None


def rank(model, X, group=None, *, qid=None, top_k: int | None = None,
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
        As for :meth:`Model.predict`; the order is the same with or without ``raw_score``.
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
    if model.n_outputs != 1:
        raise InputError(f"rank needs a model of one output per row; this one has "
                         f"{model.n_outputs} (score it with predict)")
    req = model.request(X, n_threads)
    scores = req.outputs(req.raw(algorithm), raw_score)
    r = rank_scores(scores, query_starts(scores.shape[0], group, qid), top_k)
    if not contributions:
        return r
    ranked = req._replace(rows=req.rows[r.order])
    return dataclasses.replace(r, contributions=ranked.contributions(),
                               feature_names=tuple(feature_labels(model.feature_names,
                                                                  model.n_features)))
