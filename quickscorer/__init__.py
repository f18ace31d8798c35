"""quickscorer: exact, fast CPU scoring of LightGBM, XGBoost, CatBoost, scikit-learn and ONNX
tree ensembles.

>>> import quickscorer
>>> model = quickscorer.load("model.txt")   # the format is detected from the content
>>> scores = model.predict(X)               # the same numbers as the source library

The package follows the data: ``importers/`` (one per source format) -> ``ir/`` (the neutral
model) -> ``algorithms/`` (a layout and a kernel per algorithm) -> scores. The public API is
what ``__all__`` lists. Its modules:

- ``loading``: :func:`load` and :func:`load_ensemble`, the format detected from the content;
- ``model``: :class:`Model`, the scoring object (``predict``, ``predict_leaf``, ``rank``);
- ``request``: :class:`~quickscorer.request.Request`, a call normalised once (the part of the
  ensemble, the rows read, the threads) and the steps it takes;
- ``plan``: :class:`~quickscorer.plan.KernelPlan`, the kernel each call size runs and the
  prepared layouts of one model;
- ``tuning``: :class:`Tuning`, the constants of the automatic choice and the kernels'
  switches in one frozen table (:func:`current_tuning`: the defaults and the environment);
- ``parts``: iteration ranges (LightGBM's and XGBoost's meanings) and the models of parts;
- ``threads``: a call's rows split among a pool of Python threads, where the build has no
  OpenMP;
- ``ranking``: :class:`Ranking`, each query's rows ordered by score;
- ``model_file``: the prepared model file (``.qsm``): written by ``Model.save``, mapped by
  :func:`load` (docs/model-file.md);
- ``prepared``: the layouts a model file holds, and how the algorithms find them;
- ``capi``: the C library libquickscorer (``python -m quickscorer.capi --cflags --libs``) and
  :class:`~quickscorer.capi.CModel`, a model file scored through it (docs/c-api.md);
- ``errors``: :class:`ModelFormatError`, ``ModelFileError`` and :class:`InputError`;
- ``config``: :func:`show_config`, the build and the path each kernel takes on this CPU;
- ``_version``: the version;
- ``export``: :func:`to_xgboost_json`, any XGBoost model as XGBoost JSON;
- ``batch``: scoring files in chunks, and many files, on Dask too;
- ``outputs``: the writers of scores (TSV/CSV, ``.npy``, Parquet), whole or not at all;
- ``progress``: the progress bar on a terminal;
- ``cli``: the ``quickscorer`` command; ``bench``: its ``bench`` and the interleaved timing
  loop of every benchmark;
- ``dask``: dask arrays, data frames and files on a cluster (the ``dask`` extra);
- ``serving``: the MLServer runtime (the ``serve`` extra; imported by nothing else).

Its subpackages: ``importers``, ``ir``, ``algorithms``, ``explain`` (SHAP contributions),
``inputs``, ``paper`` (the paper's forms for study) and ``data`` (the bundled demo). Each
extension module is built from the same place under ``src/``
(``src/quickscorer/algorithms/_walk.pyx`` is ``quickscorer.algorithms._walk``) and named in
its package's docstring; those every kernel
shares are here:

- ``_forest``: input conversion, the node rule and the sums every kernel shares;
- ``_kernel``: the ``Layout`` base class, argument checks, row loops, low-latency entries;
- ``_transforms``: the output transforms (libm, as the libraries compute them);
- ``_config``: how the build was compiled (compiler, OpenMP, the paths compiled in);
- ``_qsm``: the container of a prepared model file, checked and checksummed
  (``src/quickscorer/qsm.h``).
"""
from ._version import __version__
from .algorithms.registry import available as available_algorithms
from .config import show_config
from .errors import InputError, ModelFormatError
from .export import to_xgboost_json
from .ir import Ensemble, LinearLeaves, Tree
from .loading import load, load_ensemble
from .model import Model
from .ranking import Ranking
from .tuning import Tuning
from .tuning import current as current_tuning

__all__ = [
    "Ensemble", "InputError", "LinearLeaves", "Model", "ModelFormatError", "Ranking", "Tree",
    "Tuning", "available_algorithms", "current_tuning", "load", "load_ensemble", "show_config",
    "to_xgboost_json",
    "__version__",
]
