"""Turning what a caller passes into rows a kernel can read, or a clear error."""
from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..ir.ensemble import Ensemble, release_of


def _is_dataframe(X) -> bool:
    return type(X).__name__ == "DataFrame" and hasattr(X, "columns") and hasattr(X, "dtypes")


def _is_sparse(X) -> bool:
    return hasattr(X, "tocsr") and hasattr(X, "nnz") and hasattr(X, "shape")


def _from_dataframe(ens: Ensemble, df) -> np.ndarray:
    positional = _positional_categories(ens, df)
    cols = [str(c) for c in df.columns]
    names = ens.feature_names
    if names is not None and set(names) <= set(cols) and cols != list(names):
        df = df[[df.columns[cols.index(n)] for n in names]]
    elif len(cols) != ens.n_inputs:
        raise InputError(f"the DataFrame has {len(cols)} columns, the model expects "
                         f"{ens.n_inputs} features"
                         + (f" named {list(names)[:5]}..." if names else ""))
    parts = []
    labels = ens.category_labels or {}
    recoding = ens.category_recoding or {}
    for j, c in enumerate(df.columns):
        s = df[c]
        if j in labels:
            parts.append(_category_numbers(s, labels[j], c))
        elif j in recoding and str(s.dtype) == "category":
            if recoding[j] is None:
                raise InputError(
                    f"column {c!r} is categorical, but the model file does not hold its "
                    f"categories' texts as themselves (XGBoost before 3.4 cut texts beyond "
                    f"ASCII short): pass the category codes as numbers (e.g. "
                    f"df[{c!r}].cat.codes with the training's categories), or save the model "
                    f"with XGBoost 3.4 or later")
            parts.append(_recoded(s, recoding[j], c, _refuses_unknown_categories(ens)))
        elif c in positional:
            parts.append(_recoded_by_value(s, positional[c]))
        elif str(s.dtype) == "category":
            codes = s.cat.codes.to_numpy().astype(np.float64)
            codes[codes < 0] = np.nan  # a missing category
            parts.append(codes)
        else:
            try:
                parts.append(s.to_numpy(dtype=np.float64, na_value=np.nan))
            except (TypeError, ValueError):
                if not ens.inputs_read()[j]:      # a column no split reads: any values do
                    parts.append(np.zeros(len(s)))
                    continue
                raise InputError(
                    f"column {c!r} has dtype {s.dtype}, which is not numeric") from None
    return np.column_stack(parts) if parts else np.zeros((len(df), 0))


def category_text(v, column) -> str | None:
    """The text a category value stands for (CatBoost's: an integer's decimal digits, an
    integral float's too, as a column of integers with a missing value holds them), or None
    for a missing value; anything else is an InputError naming the column."""
    if isinstance(v, str):
        return v
    if v is None:
        return None
    if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        if v != v:
            return None
        if abs(v) < 2.0 ** 63 and v == int(v):
            return str(int(v))
    raise InputError(f"column {column!r} holds {v!r}, which is neither a category's text nor "
                     f"an integer")


def category_number(table: dict[str, int], v, column) -> float:
    """A category value as the model's number: an unknown text names none (-1), a missing
    value is NaN."""
    text = category_text(v, column)
    return np.nan if text is None else table.get(text, -1)


def _category_numbers(s, table: dict[str, int], column) -> np.ndarray:
    """A DataFrame column of category values as the model's category numbers."""
    codes, uniques = s.factorize()            # each distinct value once; missing: -1
    lookup = np.empty(len(uniques) + 1, np.float64)
    for k, v in enumerate(uniques):
        lookup[k] = category_number(table, v, column)
    lookup[-1] = np.nan
    return lookup[np.asarray(codes)]


def _positional_categories(ens: Ensemble, df) -> dict:
    """LightGBM's re-coding (``Ensemble.pandas_categorical``): each categorical column of the
    DataFrame, in its column order, with the training categories at its position."""
    if ens.pandas_categorical is None:
        return {}
    cat_cols = [c for c in df.columns if str(df[c].dtype) == "category"]
    if len(cat_cols) != len(ens.pandas_categorical):
        raise InputError(f"the DataFrame has {len(cat_cols)} categorical columns, the model was "
                         f"trained with {len(ens.pandas_categorical)} (LightGBM's "
                         f"pandas_categorical)")
    return dict(zip(cat_cols, ens.pandas_categorical))


def _recoded_by_value(s, categories: tuple) -> np.ndarray:
    """A categorical column as the index of each value among ``categories``; a value not
    among them, or missing, is NaN."""
    index = {v: k for k, v in enumerate(categories)}
    lookup = np.full(len(s.cat.categories) + 1, np.nan)
    for k, v in enumerate(s.cat.categories):
        key = v.item() if hasattr(v, "item") else v
        lookup[k] = index.get(key, np.nan)
    return lookup[s.cat.codes.to_numpy()]


def _refuses_unknown_categories(ens: Ensemble) -> bool:
    """Whether XGBoost refuses a DataFrame's category that the model was not trained with:
    from 3.3 on (the release that wrote the model stands for the one that scores it); up to
    3.2 such a value keeps the column's own code for it."""
    release = release_of(ens.source.get("version"))
    return release is None or release >= (3, 3)


def _recoded(s, table: dict[str, int], column, refuse_unknown: bool) -> np.ndarray:
    """A DataFrame's categorical column as the numbers of the categories the model was
    trained with (XGBoost's re-coding, ``Ensemble.category_recoding``): a missing value is
    NaN; a value the model was not trained with an InputError where ``refuse_unknown``, else
    the column's own code for it, as XGBoost 3.2 reads it."""
    codes = s.cat.codes.to_numpy()
    lookup = np.empty(len(s.cat.categories) + 1, np.float64)
    for k, v in enumerate(s.cat.categories):
        text = category_text(v, column)
        if text not in table:
            if not refuse_unknown:
                lookup[k] = k
            elif not (codes == k).any():
                lookup[k] = np.nan            # a category the column declares but never holds
            else:
                raise InputError(f"column {column!r} holds the category {v!r}, which the model "
                                 f"was not trained with")
            continue
        lookup[k] = table[text]
    lookup[-1] = np.nan
    return lookup[codes]


def _from_sparse(ens: Ensemble, X) -> np.ndarray:
    csr = X.tocsr()
    n, m = csr.shape
    if m != ens.n_inputs:
        raise InputError(f"the sparse matrix has {m} columns, the model expects "
                         f"{ens.n_inputs} features")
    if not np.issubdtype(csr.dtype, np.number) or np.issubdtype(csr.dtype, np.complexfloating):
        raise InputError(f"sparse input of dtype {csr.dtype} is not real-valued")
    dtype = np.float32 if csr.dtype == np.float32 else np.float64
    # An absent entry is 0.0 for LightGBM and missing for XGBoost, as in each library.
    fill = ens.absent_value
    out = np.full((n, m), fill, dtype=dtype)
    csr = csr.copy()
    csr.sum_duplicates()
    rows = np.repeat(np.arange(n), np.diff(csr.indptr))
    out[rows, csr.indices] = csr.data
    return out


def as_rows(ens: Ensemble, X) -> np.ndarray:
    """The rows the trees read: :func:`as_inputs`, then the model's CTR columns appended
    (CatBoost's, ``ir/ctr.py``) where it has them."""
    X = as_inputs(ens, X)
    return X if ens.ctr is None else ens.ctr.apply(X)


def as_inputs(ens: Ensemble, X) -> np.ndarray:
    """A 2-D float32 or float64 array of shape (n_rows, n_inputs), copied only if needed.

    Accepts numpy arrays of any real dtype and memory order (a 1-D array is one row), pandas
    DataFrames (columns matched by feature name when the model has names) and scipy sparse
    matrices. Raises :class:`InputError` naming what was expected and what came.
    """
    if (type(X) is np.ndarray and X.ndim == 2 and X.shape[1] == ens.n_inputs
            and (X.dtype == np.float64 or X.dtype == np.float32)):
        return X                      # the common case, without the checks below
    if _is_dataframe(X):
        X = _from_dataframe(ens, X)
    elif _is_sparse(X):
        X = _from_sparse(ens, X)
    else:
        try:
            X = np.asarray(X)
        except (TypeError, ValueError) as exc:
            raise InputError(f"cannot read the input as an array: {exc}") from None
    if X.dtype.kind not in "biuf":
        raise InputError(f"input dtype {X.dtype} is not real-valued numeric "
                         f"(expected float32, float64, integer or bool)")
    if X.ndim == 1:
        X = X.reshape(1, -1)
    if X.ndim != 2:
        raise InputError(f"input must be 2-D (rows x features) or a single 1-D row, "
                         f"got {X.ndim} dimensions with shape {X.shape}")
    if X.shape[1] != ens.n_inputs:
        raise InputError(f"input has {X.shape[1]} features per row, the model expects "
                         f"{ens.n_inputs}")
    if X.dtype != np.float32 and X.dtype != np.float64:
        X = X.astype(np.float64)
    return X
