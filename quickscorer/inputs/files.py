"""Reading rows to score from LibSVM, CSV/TSV and ``.npy`` files (for the command line)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import InputError


def read_libsvm(path, n_features: int, fill: float) -> tuple[np.ndarray, np.ndarray]:
    """Rows of a LibSVM file (``label [qid:q] idx:value ...``) as a dense array.

    ``idx`` is the column number as written (as LightGBM reads it); absent entries are
    ``fill`` (0.0 for LightGBM models, NaN for XGBoost models, as each library treats them).
    Returns (X, labels).
    """
    rows, labels = [], []
    with open(path, "r", encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            row = np.full(n_features, fill, np.float64)
            try:
                labels.append(float(parts[0]))
                for tok in parts[1:]:
                    k, v = tok.split(":", 1)
                    if k == "qid":
                        continue
                    j = int(k)
                    if not 0 <= j < n_features:
                        raise InputError(f"{path}:{lineno}: feature index {j} is outside the "
                                         f"model's {n_features} features")
                    row[j] = float(v)
            except ValueError as exc:
                raise InputError(f"{path}:{lineno}: not LibSVM ({exc})") from None
            rows.append(row)
    X = np.vstack(rows) if rows else np.zeros((0, n_features))
    return X, np.asarray(labels)


def read_rows(path, n_features: int, fill: float, label_column: int | None = None) -> np.ndarray:
    """Rows to score from ``.npy``, ``.csv``/``.tsv`` (numbers only) or LibSVM files.

    For CSV/TSV, ``label_column`` (if given) is dropped first. A LibSVM file is recognised by
    ``idx:value`` tokens; its first column is always the label.
    """
    p = Path(path)
    if p.suffix == ".npy":
        return np.load(p, allow_pickle=False)
    with open(p, "r", encoding="utf-8") as fh:
        head = fh.readline()
    if ":" in head:
        return read_libsvm(p, n_features, fill)[0]
    delim = "\t" if (p.suffix == ".tsv" or "\t" in head) else ","
    try:
        X = np.loadtxt(p, delimiter=delim, ndmin=2, dtype=np.float64)
    except ValueError as exc:
        raise InputError(f"{p}: cannot read numbers ({exc})") from None
    if label_column is not None:
        X = np.delete(X, label_column, axis=1)
    return X
