"""``quickscorer.load``: read a model from a file, string, bytes or library object."""
from __future__ import annotations

import os
from pathlib import Path

from .errors import ModelFormatError
from .importers import lightgbm as lgb_imp
from .importers import xgboost as xgb_imp
from .ir.ensemble import Ensemble
from .model import Model

#: refuse to read model files larger than this (a corrupt size, not a model)
MAX_MODEL_BYTES = 4 << 30


def _read(path: Path) -> bytes:
    try:
        size = path.stat().st_size
        if size > MAX_MODEL_BYTES:
            raise ModelFormatError(f"{path}: {size} bytes is larger than any model we read")
        return path.read_bytes()
    except OSError as exc:
        raise ModelFormatError(f"cannot read model file {path}: {exc}") from None


def load_ensemble(source, *, format: str | None = None) -> Ensemble:
    """The neutral :class:`Ensemble` of a LightGBM or XGBoost model.

    ``source`` may be a path, a LightGBM model string, JSON text, JSON, UBJSON or XGBoost
    legacy binary bytes, a parsed JSON dict, a ``lightgbm.Booster`` or an ``xgboost.Booster``. ``format`` forces
    ``"lightgbm"`` or ``"xgboost"``; otherwise it is detected from the content.
    """
    if isinstance(source, Ensemble):
        return source
    if format not in (None, "lightgbm", "xgboost"):
        raise ValueError(f"format must be 'lightgbm' or 'xgboost', not {format!r}")
    if hasattr(source, "model_to_string"):           # lightgbm.Booster (or LGBMModel.booster_)
        return lgb_imp.load_lightgbm(source)
    if hasattr(source, "booster_") and hasattr(source.booster_, "model_to_string"):
        return lgb_imp.load_lightgbm(source.booster_)
    if hasattr(source, "save_raw"):                  # xgboost.Booster
        return xgb_imp.load_xgboost(source)
    if hasattr(source, "get_booster"):               # xgboost sklearn estimators
        return xgb_imp.load_xgboost(source.get_booster())
    if isinstance(source, dict):
        return xgb_imp.load_xgboost(source)

    data: bytes | str
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
    elif isinstance(source, str) and ("\n" in source or source.lstrip().startswith("{")):
        data = source
    elif isinstance(source, (str, os.PathLike)):
        data = _read(Path(source))
    else:
        raise TypeError(f"cannot load a model from {type(source).__name__}: expected a path, "
                        f"a string, bytes, a dict or a LightGBM/XGBoost Booster")

    if format == "lightgbm":
        return lgb_imp.load_lightgbm(data, utf8_errors="replace")
    if format == "xgboost":
        return xgb_imp.load_xgboost(data)
    raw = data.encode() if isinstance(data, str) else data
    if xgb_imp.looks_like_xgboost(raw):
        return xgb_imp.load_xgboost(data)
    if lgb_imp.looks_like_lightgbm_text(raw):
        # the bytes themselves: the tree parser reads them without a decoded copy
        return lgb_imp.load_lightgbm(data, utf8_errors="replace")
    raise ModelFormatError("not a LightGBM text model nor an XGBoost JSON, UBJSON or legacy "
                           "binary model "
                           f"(starts with {raw[:16]!r})")


def load(source, *, format: str | None = None, prepare: tuple[str, ...] = ()) -> Model:
    """Load a LightGBM or XGBoost model for scoring; see :func:`load_ensemble`."""
    return Model(load_ensemble(source, format=format), prepare=prepare)
