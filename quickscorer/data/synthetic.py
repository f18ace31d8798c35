"""Generated data shaped like public learning-to-rank sets, for demos, tests and benchmarks."""
from __future__ import annotations

import numpy as np


def make_ltr(n_queries: int = 100, n_features: int = 136, min_docs: int = 10,
             max_docs: int = 1000, seed: int = 0, dtype=np.float64):
    """An MSLR-WEB-shaped ranking set: dense features, graded labels 0-4, grouped queries.

    Each query draws a latent relevance per document; a handful of features carry it with
    noise (like BM25 and click features), a few are counts, some are constant zero or
    missing-free noise, and the label is the latent relevance cut into five grades with the
    skew of MSLR (most documents 0 or 1).

    Returns
    -------
    X : ndarray (n_docs, n_features)
    labels : ndarray (n_docs,) of float in {0, 1, 2, 3, 4}
    group : ndarray (n_queries,) documents per query, in order
    """
    rng = np.random.default_rng(seed)
    sizes = np.exp(rng.uniform(np.log(min_docs), np.log(max_docs + 1), n_queries)).astype(int)
    sizes = np.clip(sizes, min_docs, max_docs)
    n = int(sizes.sum())
    query_effect = np.repeat(rng.normal(0, 0.5, n_queries), sizes)
    latent = rng.normal(0, 1, n) + query_effect
    X = np.empty((n, n_features), np.float64)
    n_signal = min(n_features, 24)
    weights = rng.uniform(0.2, 1.0, n_signal)
    for j in range(n_features):
        if j < n_signal:
            X[:, j] = weights[j] * latent + rng.normal(0, 1.0, n)
        elif j % 7 == 0:
            X[:, j] = rng.poisson(np.exp(np.clip(latent, -3, 3)))  # count-like
        elif j % 11 == 0:
            X[:, j] = 0.0  # unused column, as MSLR has
        else:
            X[:, j] = rng.normal(0, 1, n)
    X = np.round(X, 4)  # MSLR values have few digits; makes ties and exact thresholds common
    cuts = np.quantile(latent, [0.5, 0.8, 0.93, 0.98])
    labels = np.searchsorted(cuts, latent).astype(np.float64)
    return X.astype(dtype), labels, sizes
