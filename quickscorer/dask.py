"""Scoring dask collections: a dask array or DataFrame in, a lazy dask collection out.

    import quickscorer, quickscorer.dask
    model = quickscorer.load("model.txt")
    scores = quickscorer.dask.predict(model, ddf)          # lazy; .compute() or persist
    margins = quickscorer.dask.predict(model, X, raw_score=True, num_iteration=100)

The model enters the task graph once, as one task that every partition depends on, so the
scheduler sends it to each worker once rather than pickling it into every task; each worker
then holds the loaded model (with its prepared layouts) and scores its partitions with the GIL
released. Every keyword of :meth:`quickscorer.Model.predict` is accepted; the scores are the
ones ``model.predict`` gives on the same rows in one process.

Files on a cluster: :func:`score_files` (from :mod:`quickscorer.batch`) runs
:func:`quickscorer.batch.score_file` for each input file on a worker (the model sent to every
worker once), one output file per input, the same bytes as one machine writes (what
``quickscorer score --dask`` / ``--scheduler`` runs).
Needs the ``dask`` extra (``pip install 'quickscorer[dask]'``: dask and distributed).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from .batch import score_files
from .errors import InputError
from .model import Model

try:
    import dask
    import dask.array as da
except ImportError as exc:          # the optional dependency, named in the error
    raise ImportError("quickscorer.dask needs dask: pip install 'quickscorer[dask]'") from exc


def _score_block(block: np.ndarray, model: Model, kw: dict) -> np.ndarray:
    return model.predict(block, **kw)


def _score_partition(part, model: Model, kw: dict, columns):
    import pandas as pd
    out = model.predict(part, **kw)
    if out.ndim == 1:
        return pd.Series(out, index=part.index, name=columns)
    return pd.DataFrame(out, index=part.index, columns=columns)


def _out_dtype(model: Model, kw: dict) -> np.dtype:
    """The dtype predict returns for this model and these keywords (from one row of zeros)."""
    return model.predict(np.zeros((1, model.n_features)), **kw).dtype


def predict(model: Model, X, **kw: Any):
    """``model.predict`` over a dask array (rows x features, chunked by rows) or a dask
    DataFrame, lazily: a dask array of shape (rows,) or (rows, outputs), or a dask Series /
    DataFrame with the input's index. Keywords as for :meth:`Model.predict`."""
    if not isinstance(model, Model):
        raise TypeError(f"expected a quickscorer.Model, got {type(model).__name__}")
    shared = dask.delayed(model, pure=True)      # one task, a dependency of every partition
    dtype = _out_dtype(model, kw)
    k = model.n_outputs
    if isinstance(X, da.Array):
        if X.ndim != 2 or X.shape[1] != model.n_features:
            raise InputError(f"expected a 2-D dask array of {model.n_features} columns, got "
                             f"shape {X.shape}")
        X = X.rechunk({1: -1})                   # every block holds whole rows
        if k == 1:
            return X.map_blocks(_score_block, shared, kw, dtype=dtype, drop_axis=1,
                                meta=np.zeros(0, dtype))
        return X.map_blocks(_score_block, shared, kw, dtype=dtype,
                            chunks=(X.chunks[0], (k,)), meta=np.zeros((0, 0), dtype))
    if hasattr(X, "map_partitions") and hasattr(X, "npartitions"):
        import pandas as pd
        if k == 1:
            meta = pd.Series(np.zeros(0, dtype), name="score")
            columns = "score"
        else:
            columns = [f"score_{j}" for j in range(k)]
            meta = pd.DataFrame(np.zeros((0, k), dtype), columns=columns)
        return X.map_partitions(_score_partition, shared, kw, columns, meta=meta)
    raise TypeError(f"expected a dask array or dask DataFrame, got {type(X).__name__}; "
                    f"score in-process data with model.predict")


__all__ = ["predict", "score_files"]
