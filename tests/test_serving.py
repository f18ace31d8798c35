"""quickscorer.serving.QuickScorerRuntime inside a real MLServer, called over REST and gRPC.

One server (started once for the module, on free loopback ports) serves a LightGBM ranking
model, an XGBoost model, a LightGBM model with adaptive batching and one that the tests
reload; every answer is checked against the training library and ``Model.predict``.
"""
import concurrent.futures
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import numpy as np
import pytest

pytest.importorskip("mlserver", reason=(
    "MLServer 1.7.1 serves no build for Python 3.13 and later (the serve extra leaves it out)"
    if sys.version_info >= (3, 13) else "the serve extra (MLServer) is not installed"))
pytest.importorskip("lightgbm", reason="the test extra installs lightgbm")
pytest.importorskip("xgboost", reason="the test extra installs xgboost-cpu")

import grpc
import lightgbm as lgb
import xgboost as xgb
from mlserver import types
from mlserver.grpc import dataplane_pb2_grpc
from mlserver.grpc.converters import ModelInferRequestConverter, ModelInferResponseConverter

import quickscorer as qs

# MLServer's own gRPC response converter calls a pydantic method deprecated in pydantic 2
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

RUNTIME = "quickscorer.serving.QuickScorerRuntime"
N_FEATURES = 8


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_model(folder, name, model_file, **settings):
    os.makedirs(folder / name, exist_ok=True)
    shutil.copy(model_file, folder / name / os.path.basename(model_file))
    body = {"name": name, "implementation": RUNTIME,
            "parameters": {"uri": f"./{os.path.basename(model_file)}",
                           **settings.pop("parameters", {})}, **settings}
    (folder / name / "model-settings.json").write_text(json.dumps(body))


class Server:
    def __init__(self, folder):
        self.folder = folder
        self.http, self.grpc, metrics = free_port(), free_port(), free_port()
        (folder / "settings.json").write_text(json.dumps({
            "host": "127.0.0.1", "http_port": self.http, "grpc_port": self.grpc,
            "metrics_port": metrics, "parallel_workers": 1, "debug": False}))
        exe = os.path.join(os.path.dirname(sys.executable), "mlserver")
        self.log = open(folder / "server.log", "w")
        self.proc = subprocess.Popen([exe, "start", str(folder)], stdout=self.log,
                                     stderr=subprocess.STDOUT, cwd=folder)
        self.channel = None

    def wait_ready(self, models, timeout=180):
        end = time.time() + timeout
        while time.time() < end:
            if self.proc.poll() is not None:
                raise RuntimeError("mlserver exited:\n" + (self.folder / "server.log").read_text())
            try:
                if all(self.get(f"/v2/models/{m}/ready")[0] == 200 for m in models):
                    return
            except OSError:
                pass
            time.sleep(0.3)
        raise RuntimeError("mlserver not ready:\n" + (self.folder / "server.log").read_text())

    def get(self, path):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.http}{path}", timeout=30) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def post(self, path, body):
        req = urllib.request.Request(f"http://127.0.0.1:{self.http}{path}",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                raw = r.read()
                return r.status, json.loads(raw) if raw else {}
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def infer(self, model, body):
        return self.post(f"/v2/models/{model}/infer", body)

    def infer_grpc(self, model, request: types.InferenceRequest):
        if self.channel is None:
            self.channel = grpc.insecure_channel(f"127.0.0.1:{self.grpc}")
            self.stub = dataplane_pb2_grpc.GRPCInferenceServiceStub(self.channel)
        pb = ModelInferRequestConverter.from_types(request, model_name=model, use_raw=True)
        return ModelInferResponseConverter.to_types(self.stub.ModelInfer(pb, timeout=60))

    def stop(self):
        if self.channel is not None:
            self.channel.close()
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def tensor(name, X, datatype=None):
    X = np.asarray(X)
    datatype = datatype or {"float32": "FP32", "float64": "FP64", "int64": "INT64"}[str(X.dtype)]
    data = [v if v == v else "NaN" for v in X.ravel().tolist()]   # JSON has no NaN
    return {"name": name, "shape": list(X.shape), "datatype": datatype, "data": data}


def grpc_input(name, X, datatype):
    """A V2 gRPC input tensor of X's values (MLServer's types)."""
    return types.RequestInput(name=name, shape=list(X.shape), datatype=datatype,
                              data=X.ravel().tolist())


def output(response, name):
    out = {o["name"]: o for o in response["outputs"]}[name]
    return np.asarray(out["data"]), out


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(11)
    sizes = rng.integers(1, 30, 40)
    X = rng.normal(size=(int(sizes.sum()), N_FEATURES))
    y = rng.integers(0, 4, X.shape[0])
    Xn = X.copy()
    Xn[rng.random(X.shape) < 0.1] = np.nan
    return X, Xn, y, sizes


@pytest.fixture(scope="module")
def server(tmp_path_factory, data):
    X, Xn, y, sizes = data
    folder = tmp_path_factory.mktemp("mlserver")
    files = tmp_path_factory.mktemp("files")
    ranker = lgb.train({"objective": "lambdarank", "verbose": -1, "num_leaves": 31,
                        "min_data_in_leaf": 5}, lgb.Dataset(X, y, group=sizes), 60)
    ranker.save_model(files / "model.txt")
    nan_model = lgb.train({"objective": "binary", "verbose": -1, "num_leaves": 15},
                          lgb.Dataset(Xn, y > 1), 30)
    nan_model.save_model(files / "nan.txt")
    booster = xgb.train({"objective": "binary:logistic", "max_depth": 5},
                        xgb.DMatrix(Xn, y > 1), 40)
    booster.save_model(files / "model.json")
    other = lgb.train({"objective": "lambdarank", "verbose": -1, "num_leaves": 7},
                      lgb.Dataset(X, y, group=sizes), 25)
    other.save_model(files / "other.txt")
    write_model(folder, "ranker", files / "model.txt")
    write_model(folder, "nanmodel", files / "nan.txt",
                parameters={"extra": {"threads": 2}})
    write_model(folder, "xgb", files / "model.json")
    write_model(folder, "batched", files / "model.txt", max_batch_size=16,
                max_batch_time=0.02)
    write_model(folder, "swap", files / "model.txt", parameters={"version": "v1"})
    # a folder URI, as mlserver-lightgbm users have it: the runtime finds model.bst inside
    shutil.copy(files / "model.txt", files / "model.bst")
    write_model(folder, "infolder", files / "model.bst", parameters={"uri": "."})
    # a prepared model file, which every worker maps
    qs.load(files / "model.txt").save(files / "model.qsm")
    write_model(folder, "prepared", files / "model.qsm")
    names = ["ranker", "nanmodel", "xgb", "batched", "swap", "infolder", "prepared"]
    boosters = {"ranker": ranker, "nanmodel": nan_model, "xgb": booster, "other": other}
    try:
        import catboost
    except ImportError:
        catboost = None
    if catboost is not None:      # a model of text categories (the test extra has CatBoost)
        frame, cats = _catboost_frame(np.random.default_rng(12), 800), ["colour", "id"]
        # one-hot features (cbcat), and the same columns as CTR features (cbctr: the stage
        # before the trees)
        for name, one_hot in (("cbcat", 255), ("cbctr", 2)):
            est = catboost.CatBoostRegressor(iterations=30, depth=4, one_hot_max_size=one_hot,
                                             verbose=0, allow_writing_files=False,
                                             cat_features=cats)
            est.fit(frame, _catboost_target(frame))
            est.save_model(str(files / f"{name}.json"), format="json",
                           pool=catboost.Pool(frame, cat_features=cats))
            write_model(folder, name, files / f"{name}.json")
            names.append(name)
            boosters[name] = est
    srv = Server(folder)
    try:
        srv.wait_ready(names)
        srv.boosters = boosters
        srv.files = files
        yield srv
    finally:
        srv.stop()


def _catboost_frame(rng, n: int):
    """A float column, a text category and an integer one (ids beyond what a category
    number holds, so they are read through the model's texts as well)."""
    import pandas as pd
    return pd.DataFrame({"a": rng.normal(size=n),
                         "colour": rng.choice(["red", "green", "blue", "é x"], n),
                         "id": rng.integers(0, 6, n) * 1_000_003 + 9000})


def _catboost_target(frame):
    return (frame["a"] + 2.0 * (frame["colour"] == "red") - (frame["colour"] == "é x")
            + 0.5 * (frame["id"] % 3)).to_numpy()


@pytest.mark.parametrize("name", ["cbcat", "cbctr"])
def test_text_categories_of_a_catboost_model_over_rest_and_grpc(server, name):
    """One-hot (cbcat) and CTR (cbctr) features of text and integer categories."""
    pytest.importorskip("catboost")
    frame = _catboost_frame(np.random.default_rng(13), 60)
    frame.loc[::9, "colour"] = "purple"                    # unseen: no category
    frame.loc[::7, "id"] = 5
    want = server.boosters[name].predict(frame)
    colour = frame["colour"].tolist()
    body = {"parameters": {"content_type": "pd"},
            "inputs": [{"name": "id", "shape": [60], "datatype": "INT64",
                        "data": frame["id"].tolist()},
                       {"name": "colour", "shape": [60], "datatype": "BYTES", "data": colour},
                       tensor("a", frame["a"].to_numpy())]}
    code, res = server.infer(name, body)
    assert code == 200, res
    assert np.array_equal(output(res, "predict")[0], want)
    req = types.InferenceRequest(
        parameters=types.Parameters(content_type="pd"),
        inputs=[grpc_input("a", frame["a"].to_numpy(), "FP64"),
                types.RequestInput(name="colour", shape=[60], datatype="BYTES",
                                   data=[c.encode() for c in colour]),
                grpc_input("id", frame["id"].to_numpy(), "INT64")])
    res = server.infer_grpc(name, req)
    assert np.array_equal(np.asarray(res.outputs[0].data.root, np.float64), want)
    body["inputs"][0] = tensor("id", frame["id"].to_numpy(np.float64))   # floats: the same
    code, res = server.infer(name, body)
    assert code == 200 and np.array_equal(output(res, "predict")[0], want), res
    body["inputs"][0] = tensor("id", frame["id"].to_numpy(np.float64) + 0.5)
    code, res = server.infer(name, body)
    assert code == 400 and "'id'" in res["error"], res


def test_rest_scores_equal_lightgbm_and_model_predict(server, data):
    X = data[0][:50]
    model = qs.load(server.boosters["ranker"])
    for dt in ("float64", "float32"):
        code, body = server.infer("ranker", {"inputs": [tensor("x", X.astype(dt))]})
        assert code == 200, body
        got, meta = output(body, "predict")
        assert meta["datatype"] == "FP64"
        assert np.array_equal(got, model.predict(X.astype(dt)))
        assert np.array_equal(got, server.boosters["ranker"].predict(X.astype(dt)))


def test_a_prepared_model_file_serves_lightgbms_scores(server, data):
    X = data[0][:40]
    code, body = server.infer("prepared", {"inputs": [tensor("x", X)]})
    assert code == 200, body
    assert np.array_equal(output(body, "predict")[0], server.boosters["ranker"].predict(X))


def test_a_folder_uri_loads_the_well_known_file_inside(server, data):
    X = data[0][:20]
    code, body = server.infer("infolder", {"inputs": [tensor("x", X)]})
    assert code == 200, body
    assert np.array_equal(output(body, "predict")[0], server.boosters["ranker"].predict(X))


def test_grpc_scores_equal_lightgbm(server, data):
    X = data[0][:37]
    req = types.InferenceRequest(inputs=[grpc_input("x", X, "FP64")])
    res = server.infer_grpc("ranker", req)
    got = np.asarray(res.outputs[0].data.root, dtype=np.float64)
    assert np.array_equal(got, server.boosters["ranker"].predict(X))


def test_xgboost_model_with_missing_values_over_both_protocols(server, data):
    X = data[1][:64].astype(np.float32)
    truth = server.boosters["xgb"].predict(xgb.DMatrix(X))
    code, body = server.infer("xgb", {"inputs": [tensor("x", X)]})
    assert code == 200, body
    got, meta = output(body, "predict")
    assert meta["datatype"] == "FP32" and np.array_equal(got.astype(np.float32), truth)
    req = types.InferenceRequest(inputs=[grpc_input("x", X, "FP32")])
    res = server.infer_grpc("xgb", req)
    assert np.array_equal(np.asarray(res.outputs[0].data.root, np.float32), truth)


def test_nan_where_the_model_handles_missing_is_scored(server, data):
    X = data[1][:80]
    code, body = server.infer("nanmodel", {"inputs": [tensor("x", X)]})
    assert code == 200, body
    assert np.array_equal(output(body, "predict")[0], server.boosters["nanmodel"].predict(X))


def test_pandas_codec_columns_by_feature_name(server, data):
    X = data[0][:20]
    names = server.boosters["ranker"].feature_name()
    order = list(reversed(range(N_FEATURES)))          # columns in another order
    body = {"parameters": {"content_type": "pd"},
            "inputs": [tensor(names[j], X[:, j]) for j in order]}
    code, res = server.infer("ranker", body)
    assert code == 200, res
    assert np.array_equal(output(res, "predict")[0], server.boosters["ranker"].predict(X))
    body["inputs"] = body["inputs"][1:]
    code, res = server.infer("ranker", body)
    assert code == 400 and f"no column for feature '{names[order[0]]}'" in res["error"]


def expected_ranks(scores, sizes):
    ranks, orders, start = np.empty(len(scores), np.int64), [], 0
    for n in sizes:
        rows = sorted(range(start, start + n), key=lambda i: (-scores[i], i))
        ranks[rows] = np.arange(1, n + 1)
        orders.append(rows)
        start += n
    return ranks, orders


@pytest.mark.parametrize("form", ["qid", "group"])
def test_ranking_per_query_with_top_k_over_rest(server, data, form):
    X, _, _, sizes = data
    n = int(sizes[:6].sum())
    X = X[:n]
    ids = np.repeat(np.arange(6) * 7 + 100, sizes[:6]).astype(np.int64)
    query = tensor("qid", ids) if form == "qid" else tensor("group", sizes[:6].astype(np.int64))
    code, res = server.infer("ranker", {"inputs": [tensor("x", X), query],
                                        "parameters": {"top_k": 4}})
    assert code == 200, res
    scores = server.boosters["ranker"].predict(X)
    ranks, orders = expected_ranks(scores, sizes[:6])
    assert np.array_equal(output(res, "predict")[0], scores)
    assert np.array_equal(output(res, "rank")[0], ranks)
    offsets = output(res, "offsets")[0]
    order = output(res, "order")[0]
    assert [order[offsets[q]:offsets[q + 1]].tolist() for q in range(6)] ==\
        [rows[:4] for rows in orders]


def test_ranking_over_grpc(server, data):
    X, _, _, sizes = data
    n = int(sizes[:3].sum())
    ids = np.repeat([5, 9, 2], sizes[:3])
    req = types.InferenceRequest(inputs=[grpc_input("x", X[:n], "FP64"),
                                         grpc_input("qid", ids, "INT64")])
    res = server.infer_grpc("ranker", req)
    outs = {o.name: np.asarray(o.data.root) for o in res.outputs}
    ranks, _ = expected_ranks(server.boosters["ranker"].predict(X[:n]), sizes[:3])
    assert np.array_equal(outs["rank"], ranks)


def test_raw_score_and_leaf_outputs(server, data):
    X = data[1][:10]
    code, res = server.infer("nanmodel", {"inputs": [tensor("x", X)],
                                          "parameters": {"raw_score": True, "leaf": True}})
    assert code == 200, res
    b = server.boosters["nanmodel"]
    assert np.array_equal(output(res, "predict")[0], b.predict(X, raw_score=True))
    leaf, meta = output(res, "leaf")
    assert meta["shape"] == [10, b.num_trees()]
    got = leaf.reshape(10, -1)
    assert np.array_equal(qs.load(b).predict_leaf(X, source_ids=False), got)
    code, res = server.infer("nanmodel", {"inputs": [tensor("x", X)],
                                          "outputs": [{"name": "leaf"}],
                                          "parameters": {"leaf": True}})
    assert [o["name"] for o in res["outputs"]] == ["leaf"]


def test_contributions_output(server, data):
    """contrib: each row's SHAP contributions, LightGBM's pred_contrib and XGBoost's
    pred_contribs (to the quadrature's last bits); refused by name for a model without
    them (CatBoost's CTR features)."""
    X = data[1][:12]
    code, res = server.infer("nanmodel", {"inputs": [tensor("x", X)],
                                          "parameters": {"contrib": True}})
    assert code == 200, res
    got, meta = output(res, "contrib")
    want = server.boosters["nanmodel"].predict(X, pred_contrib=True)
    assert meta["shape"] == list(want.shape)
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=0, atol=1e-12)
    code, res = server.infer("xgb", {"inputs": [tensor("x", X)],
                                     "parameters": {"contrib": True}})
    assert code == 200, res
    got, meta = output(res, "contrib")
    want = server.boosters["xgb"].predict(xgb.DMatrix(X), pred_contribs=True)
    np.testing.assert_allclose(got.reshape(want.shape), want, rtol=0, atol=2e-6)
    if "cbctr" in server.boosters:
        frame = _catboost_frame(np.random.default_rng(3), 4)
        body = {"parameters": {"content_type": "pd", "contrib": True},
                "inputs": [{"name": "id", "shape": [4], "datatype": "INT64",
                            "data": frame["id"].tolist()},
                           {"name": "colour", "shape": [4], "datatype": "BYTES",
                            "data": frame["colour"].tolist()},
                           tensor("a", frame["a"].to_numpy())]}
        code, res = server.infer("cbctr", body)
        assert code == 400 and "no contributions" in res["error"] and "CTR" in res["error"]


@pytest.mark.parametrize("body, message", [
    ({"inputs": [tensor("x", np.zeros((2, N_FEATURES - 1)))]},
     f"has {N_FEATURES - 1} features per row, the model expects {N_FEATURES}"),
    ({"inputs": [{"name": "x", "shape": [1, N_FEATURES], "datatype": "BYTES",
                  "data": ["a"] * N_FEATURES}]}, "input 'x' is BYTES; expected numbers"),
    ({"inputs": [{"name": "x", "shape": [2, N_FEATURES], "datatype": "FP64",
                  "data": [0.0] * 5}]}, "input 'x' is malformed"),
    ({"inputs": [{"name": "x", "shape": [1, N_FEATURES], "datatype": "FP64",
                  "data": ["NaN"] + [0.0] * (N_FEATURES - 1)}]},
     "NaN in feature Column_0 (row 0), which the model splits on without missing-value"),
    ({"inputs": [{"name": "x", "shape": [2, N_FEATURES], "datatype": "FP64",    # JSON null
                  "data": [0.5] * (N_FEATURES + 1) + [None] + [0.5] * (N_FEATURES - 2)}]},
     "NaN in feature Column_1 (row 1), which the model splits on without missing-value"),
    ({"inputs": [tensor("x", np.zeros((2, N_FEATURES)))], "parameters": {"topk": 2}},
     "unknown request parameters ['topk']"),
    ({"inputs": [tensor("x", np.zeros((3, N_FEATURES))), tensor("group", np.array([1, 1]))]},
     "add up to 2 rows, the input has 3"),
    ({"inputs": [tensor("x", np.zeros((3, N_FEATURES))), tensor("group", np.array([1.0, 2.0]))]},
     "query sizes must be a 1-D array of non-negative integers"),
    ({"inputs": [tensor("x", np.zeros((2, 3, N_FEATURES)))]},
     "input must be 2-D (rows x features) or a single 1-D row"),
    ({"inputs": [tensor("x", np.zeros((3, N_FEATURES))), tensor("qid", np.array([1, 2, 1]))]},
     "query id 1 comes back"),
    ({"inputs": [tensor("x", np.zeros((2, N_FEATURES)))], "parameters": {"top_k": "many"}},
     "top_k must be an integer"),
    ({"inputs": [tensor("x", np.zeros((2, N_FEATURES)))], "outputs": [{"name": "rank"}]},
     "no output 'rank' for this request"),
    ({"inputs": [tensor("qid", np.array([1, 2]))]}, "the request has no feature input"),
])
def test_bad_requests_are_400_naming_the_problem_and_the_worker_keeps_serving(
        server, data, body, message):
    code, res = server.infer("ranker", body)
    assert code == 400, res
    assert message in res["error"]
    code, res = server.infer("ranker", {"inputs": [tensor("x", data[0][:3])]})
    assert code == 200


def test_adaptive_batching_gives_each_request_its_own_scores(server, data):
    X = data[0]
    truth = server.boosters["ranker"].predict(X)
    cuts = np.cumsum(np.arange(1, 25))
    parts = [(int(a), int(b)) for a, b in zip(cuts[:-1], cuts[1:])]

    def call(part):
        a, b = part
        return part, server.infer("batched", {"inputs": [tensor("x", X[a:b])]})

    with concurrent.futures.ThreadPoolExecutor(12) as pool:
        for (a, b), (code, res) in pool.map(call, parts):
            assert code == 200, res
            assert np.array_equal(output(res, "predict")[0], truth[a:b])


def test_ranking_and_request_parameters_are_refused_under_adaptive_batching(server, data):
    X = data[0][:4]
    code, res = server.infer("batched", {"inputs": [tensor("x", X),
                                                    tensor("qid", np.array([1, 1, 2, 2]))]})
    assert code == 400 and "ranking needs each request on its own" in res["error"]
    code, res = server.infer("batched", {"inputs": [tensor("x", X)],
                                         "parameters": {"raw_score": True}})
    assert code == 400 and "not taken with adaptive batching on" in res["error"]


def test_model_reload_while_requests_flow_answers_every_request_from_one_model(
        server, data):
    X = data[0][:30]
    old = server.boosters["ranker"].predict(X)
    new = server.boosters["other"].predict(X)
    assert not np.array_equal(old, new)
    stop = threading.Event()
    answers, failures = [], []

    def client():
        while not stop.is_set():
            code, res = server.infer("swap", {"inputs": [tensor("x", X)]})
            if code != 200:
                failures.append(res)
            else:
                answers.append(output(res, "predict")[0])

    threads = [threading.Thread(target=client) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        time.sleep(0.5)
        shutil.copy(server.files / "other.txt", server.folder / "swap" / "model.txt")
        code, res = server.post("/v2/repository/models/swap/load", {})
        assert code == 200, res
        deadline = time.time() + 30
        while time.time() < deadline and not any(np.array_equal(a, new) for a in answers[-3:]):
            time.sleep(0.1)
        time.sleep(0.3)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not failures
    kinds = [0 if np.array_equal(a, old) else 1 if np.array_equal(a, new) else -1
             for a in answers]
    assert -1 not in kinds                         # no mixed or wrong answer
    assert kinds[0] == 0 and kinds[-1] == 1
    assert kinds.index(1) > 0


def test_model_metadata_names_the_input_width_and_output(server):
    code, body = server.get("/v2/models/ranker")
    assert code == 200
    meta = json.loads(body)
    assert [(i["name"], i["datatype"], i["shape"]) for i in meta["inputs"]] ==\
        [("features", "FP64", [-1, N_FEATURES])]
    assert [(o["name"], o["datatype"]) for o in meta["outputs"]] == [("predict", "FP64")]


@pytest.mark.parametrize("datatype", ["FP64", "FP32"])
@pytest.mark.parametrize("items", [
    [0.1, -2.5, 1e300, -0.0, float("inf"), 3.25],
    [1, 2.5, True, False, -7, 0.1],                 # ints and bools among floats
    [0.5, None, 2.0, None, 1.0, 0.25],              # null: NaN, as MLServer writes NaN
    [0.5, "NaN", 2.0, "1.5", 1.0, 0.25],            # strings: the codec's reading of them
    [[0.5, 1.0, 2.0], [3.0, 4.0, 5.0]],             # nested rows
    [2 ** 60 + 1, 0.5, 1.0, 2.0, 3.0, 16777217],    # ints past 2**53 and 2**24
    [np.float32(0.1), np.float64(0.2), np.int64(3), 1.0, 2.0, 3.0],
])
def test_the_runtime_reads_a_tensor_as_mlservers_numpy_codec_does(tmp_path, data, datatype,
                                                                    items):
    """The runtime reads flat lists of numbers itself (several times faster than the
    codec); every other list goes through the codec. Both give the same array."""
    import asyncio

    from mlserver.codecs import NumpyCodec
    from mlserver.settings import ModelParameters, ModelSettings

    from quickscorer.serving import QuickScorerRuntime
    path = tmp_path / "m.txt"
    lgb.train({"objective": "regression", "verbose": -1, "num_leaves": 4},
              lgb.Dataset(data[0][:200, :3], data[2][:200]), 3).save_model(path)
    runtime = QuickScorerRuntime(ModelSettings(
        name="m", implementation=QuickScorerRuntime,
        parameters=ModelParameters(uri=str(path), extra={"reject_nan": False})))
    asyncio.run(runtime.load())
    inp = types.RequestInput(name="x", shape=[2, 3], datatype=datatype, data=items)
    want = NumpyCodec.decode_input(inp)
    got = runtime._tensor(inp)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want, equal_nan=True)
    response = runtime._predict(types.InferenceRequest(inputs=[inp]))
    assert np.array_equal(np.asarray(response.outputs[0].data.root),
                          runtime._model.predict(want), equal_nan=True)


def test_the_list_reader_says_whether_it_met_nan():
    """The runtime skips its NaN check where the reader of a request's list met none."""
    from quickscorer.inputs import _rowparse
    out = np.empty(3)
    assert _rowparse.floats_from_list([0.5, 1, float("inf")], out) == -1
    for nan in (None, float("nan"), np.float64("nan"), np.float32("nan")):
        out[:] = 0
        assert _rowparse.floats_from_list([0.5, nan, 2.0], out) == -2
        assert np.isnan(out[1]) and list(out[[0, 2]]) == [0.5, 2.0]
    assert _rowparse.floats_from_list([0.5, None, "x"], out) == 2     # the bad item first
    assert _rowparse.floats_from_list([-1e308, True, 2 ** 53], out) == -1

    class Shrinks:                      # a number whose reading empties the list it is in
        def __float__(self):
            items.clear()
            return 1.0
    items = [0.5, Shrinks(), 2.0]
    with pytest.raises(ValueError, match="changed while it was read"):
        _rowparse.floats_from_list(items, out)


def test_the_runtimes_output_is_the_numpy_codecs(data):
    from mlserver.codecs import NumpyCodec

    from quickscorer.serving import _output
    rng = np.random.default_rng(3)
    with_nan = rng.random(9)
    with_nan[[2, 5]] = np.nan
    for values in (rng.random(15), with_nan, rng.random((4, 3)).astype(np.float32),
                   np.arange(7), np.arange(12, dtype=np.int32).reshape(3, 4), np.zeros(0),
                   np.array([np.inf, -np.inf, 0.5])):      # infinities that sum to NaN
        assert (_output("o", values).model_dump()
                == NumpyCodec.encode_output("o", values).model_dump())
