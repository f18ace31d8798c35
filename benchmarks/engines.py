"""The scoring engines the comparison times, each behind one small interface.

An engine is prepared once from a model file (load plus any compilation, timed), then scores
float64 rows into raw margins with a fixed number of threads. Peers that are not installed
raise :class:`Missing` with the package and the extra that installs it.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np


class Missing(RuntimeError):
    """An optional peer is not installed."""


class Unsupported(Missing):
    """A peer that cannot score this kind of model (noted by the benchmarks, as a missing
    peer is)."""


def _need(module: str, package: str):
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError:
        raise Missing(f"{package} is not installed (pip install -e '.[bench]')") from None


class Engine:
    name = "?"
    source = "lightgbm"      # which twin model it scores: "lightgbm" or "xgboost"
    exact = True             # promises bit-exact raw scores with the source library
    # what predict returns: "margin" (raw scores), or for a peer that cannot give margins
    # "probability" (sigmoid of the margin) or "softmax" (of each row's margins)
    output = "margin"

    def __init__(self, model_path: Path, n_threads: int = 1):
        self.model_path = Path(model_path)
        self.n_threads = n_threads
        t0 = time.perf_counter()
        self._prepare()
        self.prep_seconds = time.perf_counter() - t0

    def _prepare(self) -> None:
        raise NotImplementedError

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Raw scores (margins) of float64 rows, shape (n_rows,) or (n_rows, n_outputs)."""
        raise NotImplementedError

    def nbytes(self) -> tuple[int, str]:
        """Memory of the prepared model and how it was measured."""
        return self.model_path.stat().st_size, "model file"


def as_output(margins: np.ndarray, output: str) -> np.ndarray:
    """The source library's margins turned into what an engine with ``output`` returns."""
    m = np.asarray(margins, dtype=np.float64)
    if output == "probability":
        return 1.0 / (1.0 + np.exp(-m))
    if output == "softmax":
        e = np.exp(m - m.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    return m


def compiled_path(model_path: Path, suffix: str) -> Path:
    """Where a compiled peer (lleaves object, TL2cgen library) of this model file is cached:
    ``cache/compiled/<sha1 of the model file><suffix>``, so a later run loads it instead of
    compiling again (minutes for 1,000 trees)."""
    import hashlib
    digest = hashlib.sha1(Path(model_path).read_bytes()).hexdigest()[:16]
    d = Path(os.environ.get("QUICKSCORER_BENCH_CACHE",
                            Path(__file__).resolve().parent / "cache")) / "compiled"
    d.mkdir(parents=True, exist_ok=True)
    return d / f"{digest}{suffix}"


class QuickScorer(Engine):
    """One algorithm of this library (``algorithm=None``: what ``predict`` picks), optionally
    with its instruction set forced (``isa``: the model's ``Tuning.isa``)."""

    def __init__(self, model_path, n_threads=1, algorithm="quickscorer", dtype=np.float64,
                 source="lightgbm", isa=None):
        self.algorithm = algorithm
        self.dtype = dtype
        self.source = source
        self.isa = isa
        self.name = (f"quickscorer[{algorithm or 'default'}]"
                     + ("" if dtype == np.float64 else "/f32") + (f"/{isa}" if isa else ""))
        super().__init__(model_path, n_threads)

    def _prepare(self):
        import quickscorer
        tuning = quickscorer.current_tuning()
        if self.isa:
            tuning = tuning.replace(isa=self.isa)
        # every layout is built here (layouts are otherwise built on first use, which would
        # time them inside the first scoring call)
        source = self.model_path
        if self.model_path.suffix == ".pkl":        # a pickled scikit-learn estimator
            import pickle
            source = pickle.loads(self.model_path.read_bytes())
        self.model = quickscorer.load(source, prepare=(self.algorithm or "auto",),
                                      tuning=tuning)

    def predict(self, X):
        if X.dtype != self.dtype:
            X = X.astype(self.dtype)
        out = self.model.predict_raw(X, algorithm=self.algorithm, n_threads=self.n_threads)
        return out[:, 0] if out.shape[1] == 1 else out

    def nbytes(self):
        return self.model.memory()["total_bytes"], "numpy arrays held (Model.memory)"


class LightGBM(Engine):
    name = "lightgbm"

    def _prepare(self):
        lgb = _need("lightgbm", "lightgbm")
        self.booster = lgb.Booster(model_file=str(self.model_path))

    def predict(self, X):
        return self.booster.predict(X, raw_score=True, num_threads=self.n_threads)


class XGBoost(Engine):
    name = "xgboost"
    source = "xgboost"

    def _prepare(self):
        xgb = _need("xgboost", "xgboost")
        self.booster = xgb.Booster(model_file=str(self.model_path))
        self.booster.set_param({"nthread": self.n_threads})

    def predict(self, X):
        return self.booster.inplace_predict(X, predict_type="margin")


class TreeliteGTIL(Engine):
    name = "treelite-gtil"
    exact = False  # GTIL sums in float32 or float64 per model type; compared, not promised

    def _prepare(self):
        treelite = _need("treelite", "treelite")
        self.model = treelite.frontend.load_lightgbm_model(str(self.model_path))
        self._gtil = treelite.gtil

    def predict(self, X):
        out = self._gtil.predict(self.model, X, nthread=self.n_threads, pred_margin=True)
        return np.squeeze(out)


class TL2cgen(Engine):
    name = "tl2cgen"
    exact = False

    def _prepare(self):
        treelite = _need("treelite", "treelite")
        tl2cgen = _need("tl2cgen", "tl2cgen")
        lib = compiled_path(self.model_path, ".tl2cgen.so")
        if not lib.exists():
            model = treelite.frontend.load_lightgbm_model(str(self.model_path))
            tmp = lib.with_suffix(".tmp.so")
            tl2cgen.export_lib(model, toolchain="gcc", libpath=str(tmp),
                               params={"parallel_comp": os.cpu_count() or 1},
                               nthread=os.cpu_count() or 1)
            tmp.replace(lib)
        self._lib = lib
        self._tl2cgen = tl2cgen
        self.predictor = tl2cgen.Predictor(str(lib), nthread=self.n_threads)

    def predict(self, X):
        dmat = self._tl2cgen.DMatrix(X, dtype="float64")
        return np.squeeze(self.predictor.predict(dmat, pred_margin=True))

    def nbytes(self):
        return self._lib.stat().st_size, "compiled .so"


class LLeaves(Engine):
    name = "lleaves"
    exact = False

    def _prepare(self):
        lleaves = _need("lleaves", "lleaves")
        self.model = lleaves.Model(model_file=str(self.model_path))
        self._cache = compiled_path(self.model_path, ".lleaves.o")
        self.model.compile(cache=str(self._cache), raw_score=True)

    def predict(self, X):
        return self.model.predict(X, n_jobs=self.n_threads)

    def nbytes(self):
        return self._cache.stat().st_size, "compiled object"


class ONNXRuntime(Engine):
    name = "onnxruntime"
    exact = False  # float32 input and thresholds: close, not exact, for LightGBM models

    def _prepare(self):
        lgb = _need("lightgbm", "lightgbm")
        onnxmltools = _need("onnxmltools", "onnxmltools")
        ort = _need("onnxruntime", "onnxruntime")
        from onnxmltools.convert.common.data_types import FloatTensorType
        booster = lgb.Booster(model_file=str(self.model_path))
        n_features = booster.num_feature()
        objective = booster.dump_model()["objective"].split()[0]
        if objective in ("lambdarank", "rank_xendcg"):
            # the converter knows regressors and classifiers; a ranker's raw score is a
            # regression sum, so score the same trees as a regression model
            text = booster.model_to_string().replace(f"objective={objective}",
                                                     "objective=regression", 1)
            booster = lgb.Booster(model_str=text)
        onx = onnxmltools.convert_lightgbm(
            booster, initial_types=[("input", FloatTensorType([None, n_features]))],
            target_opset=15, zipmap=False)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = self.n_threads
        opts.inter_op_num_threads = 1
        self._bytes = len(onx.SerializeToString())
        self.session = ort.InferenceSession(onx.SerializeToString(), opts,
                                            providers=["CPUExecutionProvider"])
        self._input = self.session.get_inputs()[0].name
        self._objective = objective
        # the converter makes a classifier of a binary or multiclass model: its outputs are a
        # label and the probabilities, never the margins; time that, and say so
        outputs = [o.name for o in self.session.get_outputs()]
        self._output = outputs[-1] if len(outputs) > 1 else outputs[0]
        # (for multiclassova too the converter writes a softmax, not LightGBM's sigmoid per
        # class: measured, softmax of the margins within 1e-7; cross_entropy it refuses)
        if objective == "binary":
            self.output = "probability"
        elif objective.startswith("multiclass"):
            self.output = "softmax"

    def predict(self, X):
        out = self.session.run([self._output], {self._input: X.astype(np.float32)})[0]
        out = np.asarray(out, dtype=np.float64)
        if self.output == "probability" and out.ndim == 2:
            out = out[:, -1]
        return np.squeeze(out)

    def nbytes(self):
        return self._bytes, "ONNX model"


class OneDAL(Engine):
    """Intel oneDAL's gradient-boosted-trees inference (daal4py's model builders, shipped in
    scikit-learn-intelex), which converts a LightGBM or an XGBoost booster. It scores both
    sources, so its source is read from the file (JSON or UBJSON: XGBoost)."""
    name = "onedal"
    exact = False   # float32 sums on XGBoost models, its own summation order on LightGBM ones
    _threads = None  # oneDAL's thread count is one setting of the process

    def _prepare(self):
        d4p = _need("daal4py", "scikit-learn-intelex")
        if self.model_path.suffix in (".json", ".ubj"):
            xgb = _need("xgboost", "xgboost")
            self.source = "xgboost"
            booster = xgb.Booster(model_file=str(self.model_path))
            config = booster.save_config()
            kind = ("probability" if '"binary:logistic"' in config
                    else "softmax" if '"multi:softprob"' in config
                    or '"multi:softmax"' in config else "margin")
        else:
            lgb = _need("lightgbm", "lightgbm")
            booster = lgb.Booster(model_file=str(self.model_path))
            objective = booster.dump_model()["objective"].split()[0]
            if objective in ("lambdarank", "rank_xendcg"):
                # oneDAL refuses ranking objectives (it reads the parameters section too); a
                # ranker's raw score is a regression sum, so score the same trees as a
                # regression model, as for ONNX Runtime
                text = (booster.model_to_string()
                        .replace(f"objective={objective}", "objective=regression", 1)
                        .replace(f"[objective: {objective}]", "[objective: regression]", 1))
                booster = lgb.Booster(model_str=text)
                objective = "regression"
            if objective not in ("regression", "regression_l2", "binary", "multiclass"):
                raise Unsupported(f"oneDAL is not compared on LightGBM objective {objective!r}"
                                  " (its output is not the raw margin there, or it refuses it)")
            kind = ("probability" if objective == "binary"
                    else "softmax" if objective == "multiclass" else "margin")
        try:
            self.model = d4p.mb.convert_model(booster)
        except (TypeError, ValueError) as exc:
            raise Unsupported(f"oneDAL cannot convert this model: {exc}") from None
        self.output = kind
        self._d4p = d4p
        self._set_threads()

    def _set_threads(self):
        if OneDAL._threads != self.n_threads:
            self._d4p.daalinit(self.n_threads)
            OneDAL._threads = self.n_threads

    def predict(self, X):
        self._set_threads()
        if self.output == "margin":
            return np.asarray(self.model.predict(X), dtype=np.float64)
        p = np.asarray(self.model.predict_proba(X), dtype=np.float64)
        return p[:, 1] if self.output == "probability" else p


class CatBoost(Engine):
    """CatBoost's own ``predict`` (raw values, its oblivious-tree evaluator), on the ``.cbm``
    twin of the JSON model."""
    name = "catboost"
    source = "catboost"

    def _prepare(self):
        cb = _need("catboost", "catboost")
        self.model = cb.CatBoost()
        self.model.load_model(str(self.model_path.with_suffix(".cbm")))

    def predict(self, X):
        return self.model.predict(X, prediction_type="RawFormulaVal",
                                  thread_count=self.n_threads)


class Sklearn(Engine):
    """A pickled scikit-learn estimator's ``predict`` (a regressor's raw score), its OpenMP
    threads limited to the engine's count."""
    name = "sklearn"
    source = "sklearn"

    def _prepare(self):
        import pickle
        _need("sklearn", "scikit-learn")
        self._limits = _need("threadpoolctl", "threadpoolctl").threadpool_limits
        self.model = pickle.loads(self.model_path.read_bytes())

    def predict(self, X):
        with self._limits(limits=self.n_threads, user_api="openmp"):
            return self.model.predict(X)


class ONNXRuntimeOf(ONNXRuntime):
    """ONNX Runtime on a CatBoost model (CatBoost's own ONNX export) or a scikit-learn
    estimator (skl2onnx), float32 input as ONNX-ML's tree ensembles take it."""

    def _prepare(self):
        ort = _need("onnxruntime", "onnxruntime")
        if self.model_path.suffix == ".pkl":
            import pickle
            skl2onnx = _need("skl2onnx", "skl2onnx")
            from skl2onnx.common.data_types import FloatTensorType
            est = pickle.loads(self.model_path.read_bytes())
            try:
                onx = skl2onnx.convert_sklearn(
                    est, initial_types=[("input", FloatTensorType([None, est.n_features_in_]))],
                    target_opset={"": 15, "ai.onnx.ml": 3})
            except (TypeError, ValueError) as exc:  # a converter that fails on this estimator
                raise Unsupported(f"skl2onnx {skl2onnx.__version__} cannot convert this "
                                  f"{type(est).__name__}: {str(exc).splitlines()[0][:120]}"
                                  ) from None
            data = onx.SerializeToString()
        elif self.model_path.with_suffix(".onnx").exists():
            # the export of an earlier run, kept beside the model: a machine without CatBoost
            # times ONNX Runtime on it
            data = self.model_path.with_suffix(".onnx").read_bytes()
        else:
            cb = _need("catboost", "catboost")
            import tempfile
            model = cb.CatBoost()
            model.load_model(str(self.model_path.with_suffix(".cbm")))
            with tempfile.TemporaryDirectory() as d:
                out = Path(d) / "m.onnx"
                try:
                    model.save_model(str(out), format="onnx")
                except cb.CatBoostError as exc:      # non-symmetric trees: no ONNX export
                    raise Unsupported(f"CatBoost cannot export this model to ONNX: "
                                      f"{str(exc).split(': ')[-1]}") from None
                data = out.read_bytes()
            self.model_path.with_suffix(".onnx").write_bytes(data)
        data = _without_zipmap(data)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = self.n_threads
        opts.inter_op_num_threads = 1
        opts.log_severity_level = 3   # CatBoost's export declares a 1-d output it gives 2-d
        self._bytes = len(data)
        self.session = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"])
        self._input = self.session.get_inputs()[0].name
        outputs = self.session.get_outputs()
        self._output = outputs[0].name
        if len(outputs) > 1:        # a classifier's export: a label, then the probabilities
            self._output = outputs[-1].name
            self.output = "softmax"


def _without_zipmap(data: bytes) -> bytes:
    """A classifier's ONNX graph whose probabilities come out as a tensor: CatBoost's export
    ends in a ``ZipMap`` (a list of dicts a row), which a user timing ONNX Runtime would drop
    as well; any other graph as it is."""
    onnx = _need("onnx", "onnx")
    model = onnx.load_from_string(data)
    zipmaps = [n for n in model.graph.node if n.op_type == "ZipMap"]
    if not zipmaps:
        return data
    for node in zipmaps:
        for out in list(model.graph.output):
            if out.name == node.output[0]:
                model.graph.output.remove(out)
        model.graph.output.append(onnx.helper.make_tensor_value_info(
            node.input[0], onnx.TensorProto.FLOAT, None))
        model.graph.node.remove(node)
    return model.SerializeToString()


#: peers of the models neither LightGBM nor XGBoost trained, by their source
OTHER_PEERS = {"catboost": {"catboost": CatBoost, "onnxruntime": ONNXRuntimeOf},
               "sklearn": {"sklearn": Sklearn, "onnxruntime": ONNXRuntimeOf}}

PEERS = {"lightgbm": LightGBM, "xgboost": XGBoost, "treelite-gtil": TreeliteGTIL,
         "tl2cgen": TL2cgen, "lleaves": LLeaves, "onnxruntime": ONNXRuntime,
         "onedal": OneDAL}


def ours(model_path: Path, n_threads: int = 1, algorithms=None, dtypes=(np.float64,),
         source="lightgbm") -> list[Engine]:
    import quickscorer
    names = algorithms or quickscorer.load(model_path).supported_algorithms()
    return [QuickScorer(model_path, n_threads, a, dt, source) for a in names for dt in dtypes]
