"""An MLServer runtime: quickscorer behind the Open Inference Protocol (V2), REST and gRPC.

``model-settings.json``::

    {"name": "ranker", "implementation": "quickscorer.serving.QuickScorerRuntime",
     "parameters": {"uri": "./model.txt", "extra": {"threads": 1}}}

Every file :func:`quickscorer.load` reads is a model URI. A request carries the features as
one FP32/FP64 tensor ``[rows, features]`` (NumPy codec), or one tensor per feature column
with ``content_type: "pd"`` (pandas codec, columns by the model's feature names). Optional:
an input ``qid`` (a query id per row) or ``group`` (query sizes) ranks each query's rows;
request parameters ``top_k``, ``raw_score``, ``leaf``, ``rank`` and ``contrib``. Outputs:
``predict`` (what :meth:`quickscorer.Model.predict` returns), and where asked ``rank`` (1 =
best within the query), ``order`` with ``offsets`` (each query's rows, best first), ``leaf``
and ``contrib`` (each row's SHAP contributions, :meth:`quickscorer.Model.contributions`).

A bad request (wrong width, a tensor of strings, a malformed tensor, NaN in a feature that
the model reads without missing-value handling) is a 400 response naming the problem; the
worker keeps serving. ``docs/serving.md`` has the settings, the start command and clients.
"""
from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np

try:
    from mlserver import MLModel, types
    from mlserver.codecs import NumpyCodec, PandasCodec
    from mlserver.errors import InferenceError
    from mlserver.utils import get_model_uri
except ImportError as exc:          # the optional dependency, named in the error
    raise ImportError("quickscorer.serving needs MLServer: pip install 'quickscorer[serve]'"
                      ) from exc

from .errors import InputError, ModelFormatError
from .inputs import _rowparse
from .inputs.arrays import as_inputs, category_number
from .ir.ensemble import MISSING_NONE
from .loading import load

#: files a model folder is searched for, in this order, when the URI names a folder
WELL_KNOWN_FILES = ["model.qsm", "model.txt", "model.json", "model.ubj", "model.bst",
                    "model.bin", "model.lgb", "model.deprecated"]

#: V2 datatypes read as features (numbers only; BOOL and BYTES are refused)
NUMERIC = {"FP16", "FP32", "FP64", "INT8", "INT16", "INT32", "INT64",
           "UINT8", "UINT16", "UINT32", "UINT64"}

#: datatypes decoded by the runtime's own list reader (others go through MLServer's codec)
FLOATS = {"FP64": np.float64, "FP32": np.float32}

#: V2 datatype of each output dtype
DATATYPES = {np.dtype(np.float64): "FP64", np.dtype(np.float32): "FP32",
             np.dtype(np.int64): "INT64", np.dtype(np.int32): "INT32"}

#: request parameters the runtime reads; a request with others is refused (a typo would
#: otherwise be ignored silently)
REQUEST_PARAMETERS = {"top_k", "raw_score", "leaf", "rank", "contrib", "content_type",
                      "headers"}


def _release_freed_heap() -> None:
    """Hand the heap that loading freed back to the system (glibc's ``malloc_trim``): a text
    model's parse frees several times the model's size, which the worker would otherwise
    keep for its lifetime (``benchmarks/serving/memory.py`` measures it). No-op elsewhere."""
    name = ctypes.util.find_library("c")
    try:
        ctypes.CDLL(name).malloc_trim(0)
    except (OSError, AttributeError, TypeError):
        pass


def _output(name: str, values: np.ndarray) -> types.ResponseOutput:
    """A NumPy-codec output as ``NumpyCodec.encode_output`` writes it (one-dimensional arrays
    as ``[n, 1]``, NaN as null), without its per-call dtype lookups."""
    data = values.ravel().tolist()
    if values.dtype.kind == "f" and values.size and np.isnan(values.sum()):  # or +inf and -inf
        data = [None if v != v else v for v in data]
    shape = list(values.shape) if values.ndim > 1 else [values.shape[0], 1]
    return types.ResponseOutput(name=name, datatype=DATATYPES[values.dtype], shape=shape,
                                data=data, parameters=types.Parameters(content_type="np"))


def _flag(value, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false", "1", "0"):
        return value.lower() in ("true", "1")
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise InferenceError(f"parameter {name} must be true or false, got {value!r}")


class QuickScorerRuntime(MLModel):
    """Scores V2 inference requests with a quickscorer model (see the module's text).

    Settings (``parameters.extra`` of ``model-settings.json``): ``threads`` (threads per
    request, default 1), ``raw_score``, ``leaf`` and ``contrib`` (defaults for the request
    parameters of those names), ``reject_nan`` (default true: NaN in a feature that the model
    compares without missing-value handling is an error rather than LightGBM's reading of it
    as 0.0).
    """

    async def load(self) -> bool:
        uri = await get_model_uri(self._settings, wellknown_filenames=WELL_KNOWN_FILES)
        extra = (self._settings.parameters.extra or {}) if self._settings.parameters else {}
        unknown = set(extra) - {"threads", "raw_score", "leaf", "contrib", "reject_nan"}
        if unknown:
            raise InferenceError(f"model {self.name}: unknown parameters.extra "
                                 f"{sorted(unknown)} (known: threads, raw_score, leaf, "
                                 f"contrib, reject_nan)")
        self._threads = int(extra.get("threads", 1))
        self._raw_score = _flag(extra.get("raw_score", False), "raw_score")
        self._leaf = _flag(extra.get("leaf", False), "leaf")
        self._contrib = _flag(extra.get("contrib", False), "contrib")
        reject_nan = _flag(extra.get("reject_nan", True), "reject_nan")
        self._model = load(uri)
        self._n_features = self._model.n_features
        self._names = list(self._model.feature_names or [])
        self._by_name = set(self._names)
        self._nan_unsafe = self._features_without_missing() if reject_nan else None
        if not self.inputs:
            self.inputs = [types.MetadataTensor(name="features", datatype="FP64",
                                                shape=[-1, self._n_features])]
        if not self.outputs:
            k = self._model.n_outputs
            self.outputs = [types.MetadataTensor(name="predict", datatype="FP32"
                                                 if self._model.ensemble.family == "xgboost"
                                                 else "FP64",
                                                 shape=[-1] if k == 1 else [-1, k])]
        s = self._settings
        self._batching = s.max_batch_size > 1 and s.max_batch_time > 0
        # build the layouts of the small-call and the batch paths now, not on a first request
        for rows in (1, 16, 256):
            self._model.predict(np.zeros((rows, self._n_features)), n_threads=self._threads)
        _release_freed_heap()
        return True

    def _features_without_missing(self) -> np.ndarray | None:
        """A bool per feature: a split reads it as a number with no missing-value rule
        (LightGBM's missing type None compares NaN as 0.0); None where there is none."""
        a = self._model.ensemble.trees.arrays
        plain = (a["missing_type"] == MISSING_NONE) & ~a["is_categorical"]
        if not plain.any():
            return None
        unsafe = np.zeros(self._n_features, bool)
        feature = a["feature"][plain]
        unsafe[feature[feature < self._n_features]] = True     # not the CTR columns
        return unsafe

    async def predict(self, payload: types.InferenceRequest) -> types.InferenceResponse:
        try:
            return self._predict(payload)
        except InputError as exc:
            raise InferenceError(f"model {self.name}: {exc}") from None

    # -- decoding -------------------------------------------------------------------------
    def _predict(self, payload: types.InferenceRequest) -> types.InferenceResponse:
        params = self._request_parameters(payload)
        X, qid, group = self._decode(payload)
        asked = sorted(set(params) - {"content_type", "headers"})
        if self._batching and asked:
            raise InferenceError(
                f"model {self.name}: request parameters {asked} are not taken with adaptive "
                "batching on (max_batch_size "
                f"{self._settings.max_batch_size}): it joins requests and keeps one set of "
                f"parameters for all; set raw_score, leaf and contrib in the model's "
                "parameters.extra")
        raw = _flag(params.get("raw_score", self._raw_score), "raw_score")
        leaf = _flag(params.get("leaf", self._leaf), "leaf")
        contrib = _flag(params.get("contrib", self._contrib), "contrib")
        top_k = params.get("top_k")
        ranking = (qid is not None or group is not None or top_k is not None
                   or _flag(params.get("rank", False), "rank"))
        if ranking and self._batching:
            raise InferenceError(
                f"model {self.name}: ranking needs each request on its own, and this model "
                f"has adaptive batching on (max_batch_size {self._settings.max_batch_size}), "
                f"which joins requests and loses where each one ends; serve the ranking model "
                f"with max_batch_size 1")
        if top_k is not None:
            try:
                top_k = int(top_k)
            except (TypeError, ValueError):
                raise InferenceError(f"parameter top_k must be an integer, got {top_k!r}")\
                    from None
        outputs = []
        if ranking:
            r = self._model.rank(X, group, qid=qid, top_k=top_k, raw_score=raw,
                                 n_threads=self._threads)
            scores = r.scores
            outputs += [_output("rank", r.rank), _output("order", r.order),
                        _output("offsets", r.offsets)]
        else:
            scores = self._model.predict(X, raw, n_threads=self._threads)
        outputs.insert(0, _output("predict", scores))
        if leaf:
            outputs.append(_output("leaf", self._model.predict_leaf(X,
                                                                    n_threads=self._threads)))
        if contrib:
            try:
                values = self._model.contributions(X, n_threads=self._threads)
            except ModelFormatError as exc:
                raise InferenceError(f"model {self.name}: no contributions: {exc}") from None
            outputs.append(_output("contrib", values))
        if payload.outputs:
            wanted = [o.name for o in payload.outputs]
            have = {o.name: o for o in outputs}
            missing = [w for w in wanted if w not in have]
            if missing:
                raise InferenceError(f"model {self.name}: no output {missing[0]!r} for this "
                                     f"request (it has {sorted(have)})")
            outputs = [have[w] for w in wanted]
        return types.InferenceResponse(model_name=self.name, model_version=self.version,
                                       id=payload.id, outputs=outputs)

    def _request_parameters(self, payload: types.InferenceRequest) -> dict:
        if payload.parameters is None:
            return {}
        params = payload.parameters.model_dump(exclude_none=True)
        unknown = set(params) - REQUEST_PARAMETERS
        if unknown:
            raise InferenceError(f"model {self.name}: unknown request parameters "
                                 f"{sorted(unknown)} (known: top_k, raw_score, leaf, rank, "
                                 f"contrib)")
        return params

    def _decode(self, payload: types.InferenceRequest):
        qid = group = None
        features = []
        for inp in payload.inputs:
            if inp.name == "qid":
                qid = self._tensor(inp).reshape(-1)
            elif inp.name == "group":               # sizes: an INT tensor (ranking checks)
                group = self._tensor(inp).reshape(-1)
            else:
                features.append(inp)
        if not features:
            raise InferenceError(f"model {self.name}: the request has no feature input")
        pandas = ((payload.parameters is not None
                   and payload.parameters.content_type == PandasCodec.ContentType)
                  or len(features) > 1)
        clean = False           # True: the list's conversion saw no NaN
        if pandas:
            X = self._columns(features)
        else:
            X, clean = self._floats(features[0])
        # the library's own checks of shape and width (InputError, a 400 through predict)
        X = as_inputs(self._model.ensemble, X)
        if not clean and self._nan_unsafe is not None and X.dtype.kind == "f":
            self._check_nan(X)
        return X, qid, group

    def _tensor(self, inp: types.RequestInput) -> np.ndarray:
        return self._floats(inp)[0]

    def _floats(self, inp: types.RequestInput) -> tuple[np.ndarray, bool]:
        """The input's values as an array, and whether they are known to hold no NaN (a
        list of numbers read in C, which notes NaN as it goes: the NaN check is then
        skipped, a pass over the rows that a request's few rows pay for in full)."""
        if inp.datatype not in NUMERIC:
            raise InferenceError(f"model {self.name}: input {inp.name!r} is {inp.datatype}; "
                                 f"expected numbers (FP32 or FP64)")
        data = getattr(inp.data, "root", inp.data)
        if inp.datatype in FLOATS and type(data) is list:
            values = np.empty(len(data))
            got = _rowparse.floats_from_list(data, values)
            if got < 0:
                try:
                    if inp.datatype != "FP64":
                        with np.errstate(over="ignore"):    # past float32: inf, as NumPy
                            values = values.astype(FLOATS[inp.datatype])
                    return values.reshape(inp.shape), got == -1
                except ValueError as exc:
                    raise InferenceError(f"model {self.name}: input {inp.name!r} is malformed "
                                         f"(shape {inp.shape}, datatype {inp.datatype}): "
                                         f"{exc}") from None
        try:                    # nested lists, integer tensors, items that are not numbers
            values = NumpyCodec.decode_input(inp)
        except Exception as exc:   # a shape that does not match the data, values not numbers
            raise InferenceError(f"model {self.name}: input {inp.name!r} is malformed "
                                 f"(shape {inp.shape}, datatype {inp.datatype}): {exc}")\
                from None
        if values.dtype.kind not in "iuf":
            raise InferenceError(f"model {self.name}: input {inp.name!r} does not hold "
                                 f"numbers")
        return values, False

    def _columns(self, features) -> np.ndarray:
        """One tensor per feature column (pandas codec), put in the model's order by name.
        A categorical feature of text categories (a CatBoost model's) may come as BYTES or
        integers: read through the model's category texts."""
        cols = {}
        labels = self._model.ensemble.category_labels or {}
        for k, inp in enumerate(features):
            col = ((self._names.index(inp.name) if inp.name in self._by_name else k)
                   if labels else -1)
            if col in labels:
                cols[inp.name] = self._categories(inp, labels[col])
            else:
                cols[inp.name] = self._tensor(inp).reshape(-1)
        rows = {v.shape[0] for v in cols.values()}
        if len(rows) != 1:
            raise InferenceError(f"model {self.name}: the feature columns have different "
                                 f"lengths {sorted(rows)}")
        if self._names and any(c in self._by_name for c in cols):
            missing = [n for n in self._names if n not in cols]
            extra = [c for c in cols if c not in self._by_name]
            if extra:
                raise InferenceError(f"model {self.name}: column {extra[0]!r} is not a "
                                     f"feature of the model")
            if missing:
                raise InferenceError(f"model {self.name}: the request has no column for "
                                     f"feature {missing[0]!r} ({len(missing)} missing)")
            order = self._names
        else:
            order = list(cols)                      # positional; as_inputs checks the count
        return np.column_stack([cols[n].astype(np.float64, copy=False) for n in order])

    def _categories(self, inp: types.RequestInput, table: dict[str, int]) -> np.ndarray:
        """A column of category texts (BYTES) or numbers (integers, integral floats) as the
        model's category numbers, as a DataFrame's are read: an unknown text names no
        category, a null is missing."""
        if inp.datatype == "BYTES":
            data = getattr(inp.data, "root", inp.data)
            if not isinstance(data, list):
                data = [data]
            try:
                values = [v.decode("utf-8") if isinstance(v, bytes) else v for v in data]
            except UnicodeDecodeError:
                raise InferenceError(f"model {self.name}: input {inp.name!r} holds bytes that "
                                     f"are not UTF-8 text") from None
        else:
            values = self._tensor(inp).reshape(-1).tolist()
        return np.array([category_number(table, v, inp.name) for v in values], np.float64)

    def _check_nan(self, X: np.ndarray):
        if not np.isnan(X.sum()):              # no NaN at all: one pass, no copy
            return
        bad = np.isnan(X[:, self._nan_unsafe])
        if bad.any():
            row, col = np.argwhere(bad)[0]
            feature = int(np.flatnonzero(self._nan_unsafe)[col])
            name = self._names[feature] if self._names else f"{feature}"
            raise InferenceError(
                f"model {self.name}: NaN in feature {name} (row {int(row)}), which the model "
                f"splits on without missing-value handling (LightGBM would read it as 0.0; "
                f"set parameters.extra.reject_nan to false to score it so)")
