"""``quickscorer.load``: read a model from a file, string, bytes or library object."""
from __future__ import annotations

import mmap
import os
from pathlib import Path

from . import model_file
from .errors import ModelFormatError
from .importers import catboost as cb_imp
from .importers import lightgbm as lgb_imp
from .importers import lightgbm_dump as lgb_dump_imp
from .importers import onnx as onnx_imp
from .importers import ranklib as ranklib_imp
from .importers import sklearn as sk_imp
from .importers import solr as solr_imp
from .importers import xgboost as xgb_imp
from .importers import xgboost_dump as dump_imp
from .importers.model_file import map_model_file
from .ir.ensemble import Ensemble
from .model import Model
from .tuning import Tuning

#: values of ``format=``: None detects the format from the content
FORMATS = (None, "lightgbm", "xgboost", "catboost", "onnx", "ranklib", "xgboost-dump",
           "solr-ltr", "qsm")


def load_ensemble(source, *, format: str | None = None, n_features: int | None = None,
                  **dump) -> Ensemble:
    """The neutral :class:`Ensemble` of a LightGBM, XGBoost, CatBoost, scikit-learn, ONNX or
    RankLib model.

    ``source`` may be a path, a LightGBM model string, JSON text (XGBoost or CatBoost), JSON,
    UBJSON or XGBoost legacy binary bytes, ONNX bytes, a parsed JSON dict, a
    ``lightgbm.Booster``, an ``xgboost.Booster``, a CatBoost model object, an
    ``onnx.ModelProto`` or a fitted scikit-learn tree estimator
    (``importers.sklearn.SUPPORTED``). ``format`` forces ``"lightgbm"``, ``"xgboost"``,
    ``"catboost"``, ``"onnx"`` or ``"ranklib"``; otherwise it is detected from the content.
    ``n_features``: the columns a row gives, for a format that does not record them (a
    RankLib model: default the largest feature number its trees read). An XGBoost JSON dump
    (a JSON array of ``get_dump(dump_format="json")``'s trees, or that list of strings)
    records no base score, objective, classes or feature names: ``dump`` takes
    ``base_score``, ``objective``, ``num_class`` and ``feature_names``
    (:func:`quickscorer.importers.xgboost_dump.load_xgboost_dump`).
    """
    if isinstance(source, Ensemble):
        return source
    if not dump and n_features is None:
        opened = _prepared_file(source, format)
        if opened is not None:
            return opened.ensemble
    if format == "qsm":
        raise ValueError("n_features and a dump's options are not for a prepared model file, "
                         "which records its own")
    if isinstance(source, list) and source and isinstance(source[0], str):   # get_dump()
        return dump_imp.load_xgboost_dump(source, n_features=n_features, **dump)
    if dump and not isinstance(source, list) and not (
            isinstance(source, (str, bytes, bytearray, memoryview, os.PathLike))
            and _is_dump(source)):
        raise ValueError(f"{', '.join(sorted(dump))}: the options of an XGBoost JSON dump, "
                         f"which records none of them")
    if n_features is not None and not isinstance(source, (str, bytes, bytearray, memoryview,
                                                          os.PathLike, list)):
        raise ValueError("n_features is for a model file that does not record its features "
                         "(a RankLib model)")
    if sk_imp.is_sklearn_estimator(source):          # a fitted scikit-learn tree estimator
        return sk_imp.load_sklearn(source)
    if cb_imp.is_catboost_model(source):             # CatBoost, CatBoostRegressor, ...
        return cb_imp.load_catboost(source)
    if onnx_imp.is_onnx_model(source):               # onnx.ModelProto
        return onnx_imp.load_onnx(source)
    if format not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(map(repr, FORMATS[1:]))}, not "
                         f"{format!r}")
    if hasattr(source, "model_to_string"):           # lightgbm.Booster (or LGBMModel.booster_)
        return lgb_imp.load_lightgbm(source)
    if hasattr(source, "booster_") and hasattr(source.booster_, "model_to_string"):
        return lgb_imp.load_lightgbm(source.booster_)
    if hasattr(source, "save_raw"):                  # xgboost.Booster
        return xgb_imp.load_xgboost(source)
    if hasattr(source, "get_booster"):               # xgboost sklearn estimators
        return xgb_imp.load_xgboost(source.get_booster())
    if isinstance(source, list):                     # a dump's parsed trees
        return dump_imp.load_xgboost_dump(source, n_features=n_features, **dump)
    if isinstance(source, dict):
        if source.get("name") == "tree" and "tree_info" in source:    # LightGBM dump_model()
            return lgb_dump_imp.load_lightgbm_dump(source)
        if format == "solr-ltr" or str(source.get("class")).startswith("org.apache.solr.ltr."):
            return solr_imp.load_solr(source)
        if format == "catboost" or (format is None and "features_info" in source):
            return cb_imp.load_catboost(source)
        return xgb_imp.load_xgboost(source)

    data: bytes | str | mmap.mmap
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
    elif isinstance(source, str) and ("\n" in source or source.lstrip()[:1] in ("{", "[")):
        data = source
    elif isinstance(source, (str, os.PathLike)):
        data = map_model_file(Path(source))
    else:
        raise TypeError(f"cannot load a model from {type(source).__name__}: expected a path, "
                        f"a string, bytes, a dict, a LightGBM/XGBoost Booster, a CatBoost model, "
                        f"an onnx.ModelProto or a scikit-learn tree estimator")
    raw = data.encode() if isinstance(data, str) else data
    if format == "xgboost-dump" or dump_imp.looks_like_xgboost_dump(bytes(raw[:256])):
        try:
            return dump_imp.load_xgboost_dump(bytes(raw), n_features=n_features, **dump)
        finally:
            if isinstance(data, mmap.mmap):
                data.close()
    try:
        ens = _load_data(data, format, n_features)
    finally:
        if isinstance(data, mmap.mmap):
            try:
                data.close()
            except BufferError:     # a view is still alive: the collector unmaps it
                pass
    if n_features is not None and ens.source.get("format") != "ranklib":
        raise ValueError(f"n_features is for a model that does not record its features (a "
                         f"RankLib model); this {ens.source.get('library')} model has "
                         f"{ens.n_inputs}")
    return ens


def _is_dump(source) -> bool:
    """Whether ``source`` (a path, text or bytes) holds an XGBoost JSON dump."""
    if isinstance(source, (str, os.PathLike)) and not (isinstance(source, str)
                                                       and ("\n" in source or "[" in source)):
        try:
            with open(source, "rb") as fh:
                return dump_imp.looks_like_xgboost_dump(fh.read(256))
        except OSError:
            return False
    raw = source.encode() if isinstance(source, str) else bytes(source)[:256]
    return dump_imp.looks_like_xgboost_dump(raw)


def _load_data(data: bytes | str | mmap.mmap, format: str | None,
               n_features: int | None = None) -> Ensemble:
    """The ensemble of a model's text or bytes (a file's mapped bytes: LightGBM text and
    XGBoost JSON are parsed from the mapping, anything else from a copy)."""
    if format == "lightgbm":
        return lgb_imp.load_lightgbm(data, utf8_errors="replace")
    if format == "xgboost":
        return xgb_imp.load_xgboost(data)
    if format == "catboost":
        return cb_imp.load_catboost(data)
    if format == "onnx":
        return onnx_imp.load_onnx(data)
    raw = data.encode() if isinstance(data, str) else data
    if lgb_dump_imp.looks_like_lightgbm_dump(bytes(raw[:64])):
        return lgb_dump_imp.load_lightgbm_dump(bytes(raw))
    if format == "solr-ltr" or solr_imp.looks_like_solr(bytes(raw[:512])):
        return solr_imp.load_solr(bytes(raw))
    if format == "ranklib" or ranklib_imp.looks_like_ranklib(raw):
        return ranklib_imp.load_ranklib(raw, n_features)
    if onnx_imp.looks_like_onnx(raw):
        return onnx_imp.load_onnx(data)
    if cb_imp.looks_like_catboost(raw) or cb_imp.looks_like_cbm(raw):
        return cb_imp.load_catboost(data)
    if xgb_imp.looks_like_xgboost(raw):
        # JSON is parsed from the mapping itself, anything else from a copy
        return xgb_imp.load_xgboost(data)
    if lgb_imp.looks_like_lightgbm_text(raw):
        # the bytes themselves: the tree parser reads them without a decoded copy
        return lgb_imp.load_lightgbm(data, utf8_errors="replace")
    raise ModelFormatError("not a LightGBM text model, an XGBoost JSON, UBJSON or legacy "
                           "binary model, a CatBoost JSON or .cbm model, an ONNX model nor a "
                           f"RankLib model (starts with {raw[:16]!r})")


def _prepared_file(source, format: str | None):
    """The opened prepared model file (``.qsm``) that ``source`` is, or None."""
    if format not in (None, "qsm"):
        return None
    if isinstance(source, (bytes, bytearray, memoryview)):
        if model_file.looks_like_qsm(bytes(source[:8])):
            return model_file.open_bytes(source)
    elif isinstance(source, os.PathLike) or (isinstance(source, str) and "\n" not in source
                                             and source.lstrip()[:1] not in ("{", "[")):
        try:
            with open(source, "rb") as fh:
                head = fh.read(8)
        except OSError:
            return None
        if model_file.looks_like_qsm(head):
            return model_file.open_path(source)
    if format == "qsm":
        raise ModelFormatError("not a prepared model file (.qsm): no .qsm magic number")
    return None


def load(source, *, format: str | None = None, prepare: tuple[str, ...] = (),
         tuning: Tuning | None = None, n_features: int | None = None, **dump) -> Model:
    """Load a LightGBM, XGBoost (a model or its JSON dump), CatBoost, scikit-learn, ONNX or
    RankLib model for scoring, or a prepared model file (``.qsm``: mapped, its layouts taken
    as written; docs/model-file.md); see :func:`load_ensemble` (``prepare`` and ``tuning``:
    as for :class:`Model`; ``dump``: an XGBoost dump's ``base_score``, ``objective``,
    ``num_class`` and ``feature_names``)."""
    return Model(load_ensemble(source, format=format, n_features=n_features, **dump),
                 prepare=prepare, tuning=tuning)
