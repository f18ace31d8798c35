"""quickscorer: exact, fast CPU scoring of LightGBM and XGBoost tree ensembles.

>>> import quickscorer
>>> model = quickscorer.load("model.txt")   # LightGBM text, XGBoost JSON/UBJSON/binary, Booster
>>> scores = model.predict(X)                       # same numbers as the training library

The package follows the data: ``importers/`` (one per source format) -> ``ir/`` (the neutral
model) -> ``algorithms/`` (a layout and a kernel per algorithm; kernels in ``src/quickscorer/``)
-> scores. ``inputs/`` turns what callers pass into rows, ``paper/`` holds the paper's forms
for study, ``data/`` the bundled demo. The public API is what ``__all__`` lists.
"""
from .errors import InputError, ModelFormatError
from .ir import Ensemble, LinearLeaves, Tree
from .model import Model
from .ranking import Ranking
from .loading import load, load_ensemble
from .export import to_xgboost_json
from .algorithms.registry import available as available_algorithms

__version__ = "0.1.0"
__all__ = [
    "Ensemble", "InputError", "LinearLeaves", "Model", "ModelFormatError", "Ranking", "Tree",
    "available_algorithms", "load", "load_ensemble", "to_xgboost_json", "__version__",
]
