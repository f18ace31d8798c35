"""Whole data files in memory (``quickscorer bench``, the benchmarks): the chunked readers of
:mod:`quickscorer.inputs.readers`, every chunk at once."""
from __future__ import annotations

import numpy as np

from .readers import ReadOptions, open_input, read_all


def read_libsvm(path, n_features: int, fill: float) -> tuple[np.ndarray, np.ndarray]:
    """Rows of a LibSVM file (``label [qid:q] idx:value ...``) as a dense array, and the labels.

    ``idx`` is the column number as written (as LightGBM reads it); absent entries are
    ``fill`` (0.0 for LightGBM models, NaN for XGBoost models, as each library treats them).
    """
    reader = open_input(path, n_features, fill, None, ReadOptions(keep=("label",)), "libsvm")
    try:
        chunks = list(reader.chunks())
    finally:
        reader.close()
    if not chunks:
        return np.zeros((0, n_features)), np.zeros(0)
    return (np.concatenate([c.X for c in chunks]),
            np.concatenate([c.columns["label"] for c in chunks]))


def read_rows(path, n_features: int, fill: float, label_column: int | None = None) -> np.ndarray:
    """Every row to score from a data file of any format :mod:`~quickscorer.inputs.readers`
    reads; ``label_column`` (CSV/TSV/Parquet) is read past."""
    return read_all(path, n_features, fill, None, ReadOptions(label_column=label_column))
