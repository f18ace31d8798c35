"""Write an XGBoost model (legacy binary, UBJSON, JSON or a ``Booster``) as XGBoost JSON.

XGBoost 2.1 and later no longer read the legacy binary format that ``save_model("x.model")``
wrote until 2.0; :func:`to_xgboost_json` turns such a file into the JSON model that today's
XGBoost loads and scores identically (and that quickscorer reads with the same scores). The
model is checked by loading it first, so a damaged file raises :class:`ModelFormatError`
instead of producing a broken JSON file.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from .importers.xgboost import DELETED_SPLIT_INDEX, load_xgboost, xgboost_document

__all__ = ["to_xgboost_json"]

#: a legacy binary model is written in the JSON layout of this XGBoost release (fields and
#: meanings as its JSON writer has them; base_score in output space, as from 1.0 on)
_JSON_LAYOUT_VERSION = [2, 0, 0]


def to_xgboost_json(source: Any, path: str | os.PathLike | None = None) -> str:
    """The XGBoost JSON text of an XGBoost model; written to ``path`` too when given.

    Parameters
    ----------
    source : path, bytes, dict or xgboost.Booster
        Anything :func:`quickscorer.load` reads as an XGBoost model: a legacy binary file
        (XGBoost 0.x to 2.0), UBJSON, JSON, a parsed document or a ``Booster``.
    path : str or os.PathLike, optional
        Where to write the JSON (UTF-8).

    Returns
    -------
    str
        The JSON document. Floats are written with the digits that read back as the same
        float32, so the scores do not change.

    Raises
    ------
    ModelFormatError
        If ``source`` is not a valid XGBoost model.
    """
    document, fmt = xgboost_document(source)
    ensemble = load_xgboost(document)     # validates every field the scores depend on
    document = _plain(document)
    _fix_deleted_counts(document)
    if fmt == "legacy binary":
        document["version"] = list(_JSON_LAYOUT_VERSION)
        step = ensemble.trees_per_iteration
        _gbtree_model(document)["iteration_indptr"] = list(range(0, ensemble.n_trees + 1, step))
    text = json.dumps(document, separators=(",", ":"), allow_nan=False)
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text


def _plain(obj: Any) -> Any:
    """A copy of the document with numpy arrays and scalars as JSON lists and numbers."""
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        if obj.dtype.kind == "f":
            # float32 values as the shortest float64 text that reads back to them
            return [float(v) for v in obj.astype(np.float64)]
        if obj.dtype.kind == "b":
            return [int(v) for v in obj]
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    return obj


def _fix_deleted_counts(document: dict) -> None:
    """``tree_param.num_deleted`` = the nodes marked deleted (XGBoost 1.0's JSON writes 0, which
    today's XGBoost refuses)."""
    for tree in _gbtree_model(document)["trees"]:
        left = np.asarray(tree["left_children"])
        index = np.asarray(tree["split_indices"])
        dleft = np.asarray(tree["default_left"]) != 0
        marked = int(((left == -1) & (index == DELETED_SPLIT_INDEX) & dleft).sum())
        param = tree.setdefault("tree_param", {})
        param["num_deleted"] = str(marked)


def _gbtree_model(document: dict) -> dict:
    gb = document["learner"]["gradient_booster"]
    return gb["model"] if "model" in gb else gb["gbtree"]["model"]
