"""quickscorer: exact, fast CPU scoring of LightGBM and XGBoost tree ensembles.

>>> import quickscorer
>>> model = quickscorer.load("model.txt")          # LightGBM text, XGBoost JSON/UBJSON, Booster
>>> scores = model.predict(X)                       # same numbers as the training library
"""
from .errors import InputError, ModelFormatError
from .ensemble import Ensemble, LinearLeaves, Tree
from .model import Model
from .loading import load, load_ensemble
from .algorithms import available as available_algorithms

__version__ = "0.1.0"
__all__ = [
    "Ensemble", "InputError", "LinearLeaves", "Model", "ModelFormatError", "Tree",
    "available_algorithms", "load", "load_ensemble", "__version__",
]
