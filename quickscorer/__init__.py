"""quickscorer: exact, fast CPU scoring of LightGBM and XGBoost tree ensembles."""
from .errors import InputError, ModelFormatError

__version__ = "0.1.0"
__all__ = ["InputError", "ModelFormatError", "__version__"]
