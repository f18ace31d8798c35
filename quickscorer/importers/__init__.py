"""One importer per source format, each writing the neutral :class:`~quickscorer.ir.Ensemble`
through :func:`~quickscorer.ir.build_tree` (which validates and renumbers every tree):

- ``lightgbm.py``: LightGBM text models (file, string, ``Booster``);
- ``xgboost.py``: XGBoost JSON and UBJSON models (file, bytes, dict, ``Booster``), with
  ``ubjson.py``, our own UBJSON decoder.

:func:`quickscorer.load` (``loading.py``) detects the format and calls one of them.
"""
