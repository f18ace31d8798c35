"""Every engine the benchmark comparison times returns scores that agree with the source
library, so a broken engine cannot produce a fast number. Small models, seconds."""
from __future__ import annotations

import numpy as np
import pytest

from benchmarks import engines as E
from benchmarks import matrix as M
from benchmarks import workloads as W
from benchmarks.compare import agreement, time_engines

lgb = pytest.importorskip("lightgbm", reason="the test extra installs lightgbm")
xgb = pytest.importorskip("xgboost", reason="the test extra installs xgboost-cpu")

# how close each peer must be (max abs difference on scores of size ~1); ours are exact
TOLERANCE = {"lightgbm": 0.0, "xgboost": 0.0, "treelite-gtil": 1e-9, "tl2cgen": 1e-9,
             "lleaves": 1e-9, "onnxruntime": 1e-4, "onedal": 1e-5}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("engines")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 8))
    X[rng.random(X.shape) < 0.03] = np.nan
    y = np.nan_to_num(X[:, 0]) * 2 - np.nan_to_num(X[:, 1]) ** 2 + rng.normal(size=2000) * .1
    booster = lgb.train(dict(objective="regression", num_leaves=12, verbose=-1,
                             num_threads=1, seed=1), lgb.Dataset(X, y), num_boost_round=20)
    lgb_path = d / "model.txt"
    booster.save_model(str(lgb_path))
    xb = xgb.train(dict(max_leaves=12, max_depth=0, grow_policy="lossguide", nthread=1,
                        seed=1), xgb.DMatrix(X, label=y, missing=np.nan), 20)
    xgb_path = d / "model.json"
    xb.save_model(str(xgb_path))
    rows = np.vstack([X[:300], rng.normal(size=(100, 8)) * 3])
    return {"lightgbm": lgb_path, "xgboost": xgb_path, "rows": rows,
            "ref_lgb": booster.predict(rows, raw_score=True),
            "ref_xgb": xb.predict(xgb.DMatrix(rows, missing=np.nan), output_margin=True)}


@pytest.mark.parametrize("name", sorted(E.PEERS))
def test_peer_engine_agrees_with_its_source_library(name, models):
    cls = E.PEERS[name]
    try:
        engine = cls(models[cls.source], n_threads=1)
    except E.Missing as exc:
        pytest.skip(f"{exc} (the bench and test extras install it)")
    rows, ref = models["rows"], models["ref_xgb" if cls.source == "xgboost" else "ref_lgb"]
    got = np.asarray(engine.predict(rows), dtype=np.float64).reshape(ref.shape)
    assert np.max(np.abs(got - ref)) <= TOLERANCE[name], name
    exact, text = agreement(engine, rows, ref)
    assert exact == (text == "exact")
    assert engine.prep_seconds > 0
    assert engine.nbytes()[0] > 0


def test_onedal_scores_xgboost_models_too(models):
    """oneDAL converts XGBoost boosters as well: given the JSON file it scores the XGBoost
    model (float32 sums, so close, not exact)."""
    try:
        engine = E.OneDAL(models["xgboost"], n_threads=1)
    except E.Unsupported:
        raise
    except E.Missing as exc:
        pytest.skip(f"{exc} (the bench and test extras install it)")
    assert engine.source == "xgboost"
    got = np.asarray(engine.predict(models["rows"]), dtype=np.float64)
    ref = models["ref_xgb"]
    assert np.max(np.abs(got - ref)) <= TOLERANCE["onedal"]
    assert not np.array_equal(got, models["ref_lgb"])


def test_onedal_scores_a_ranker_as_its_regression_sum(tmp_path):
    """oneDAL refuses ranking objectives; the engine hands it the same trees as a regression
    model, whose raw score is the ranker's."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(600, 5))
    y = np.digitize(X[:, 0] + 0.3 * X[:, 1], [-0.5, 0.5])
    booster = lgb.train(dict(objective="lambdarank", num_leaves=8, verbose=-1, num_threads=1),
                        lgb.Dataset(X, y, group=[60] * 10), num_boost_round=10)
    path = tmp_path / "rank.txt"
    booster.save_model(str(path))
    try:
        engine = E.OneDAL(path, n_threads=1)
    except E.Unsupported:
        raise
    except E.Missing as exc:
        pytest.skip(f"{exc} (the bench and test extras install it)")
    assert engine.output == "margin"
    ref = booster.predict(X, raw_score=True)
    assert np.max(np.abs(engine.predict(X) - ref)) <= TOLERANCE["onedal"]


@pytest.mark.parametrize("source", ["lightgbm", "xgboost"])
def test_every_algorithm_of_ours_is_exact(source, models):
    dtype = np.float64 if source == "lightgbm" else np.float32
    ref = models["ref_lgb" if source == "lightgbm" else "ref_xgb"]
    for engine in E.ours(models[source], dtypes=(dtype,), source=source):
        exact, text = agreement(engine, models["rows"], ref)
        assert exact, f"{engine.name}: {text}"


def test_timing_is_per_document_and_positive(models):
    engines = [E.QuickScorer(models["lightgbm"]),
               E.QuickScorer(models["lightgbm"], algorithm="vqs")]
    X = models["rows"]
    times = time_engines(engines, X, batch=7, repeat=2, min_rows=50)
    assert len(times) == 2 and all(0 < us < 1e5 for us in times)


@pytest.mark.parametrize("objective", ["binary", "multiclass", "multiclassova"])
def test_classifier_peers_agree_in_their_own_output(objective, models, tmp_path):
    """ONNX Runtime and oneDAL give a classifier's probabilities, not its margins: the
    comparison turns LightGBM's margins the same way (sigmoid, softmax) before it compares,
    so a classifier model can be timed and checked like a regression one."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(1500, 6))
    k = 2 if objective == "binary" else 3
    y = np.digitize(X[:, 0] + X[:, 1] * X[:, 2], [-0.5, 0.5][: k - 1])
    params = dict(objective=objective, num_leaves=8, verbose=-1, num_threads=1, seed=2)
    if objective != "binary":
        params["num_class"] = k
    booster = lgb.train(params, lgb.Dataset(X, y), num_boost_round=10)
    path = tmp_path / f"{objective}.txt"
    booster.save_model(str(path))
    ref = booster.predict(X[:200], raw_score=True)
    for name in ("lightgbm", "onnxruntime", "onedal"):
        try:
            engine = E.PEERS[name](path, n_threads=1)
        except E.Unsupported as exc:
            # oneDAL converts softmax multiclass models only
            assert name == "onedal" and objective == "multiclassova", exc
            continue
        except E.Missing as exc:
            pytest.skip(f"{exc} (the bench and test extras install it)")
        want = E.as_output(ref, engine.output)
        got = np.asarray(engine.predict(X[:200]), dtype=np.float64).reshape(want.shape)
        assert np.max(np.abs(got - want)) <= TOLERANCE[name], name
        exact, text = agreement(engine, X[:200], ref)
        assert exact == (name == "lightgbm"), text
        if name != "lightgbm":
            assert engine.output == ("probability" if objective == "binary" else "softmax")


def test_margins_turned_into_probabilities():
    m = np.array([[0.0, np.log(3.0)], [2.0, 2.0]])
    np.testing.assert_allclose(E.as_output(m, "softmax"), [[0.25, 0.75], [0.5, 0.5]])
    np.testing.assert_allclose(E.as_output(np.array([0.0, np.log(3.0)]), "probability"),
                               [0.5, 0.75])
    assert np.array_equal(E.as_output(m, "margin"), m)


def test_matrix_shape_names_set_the_training_settings(monkeypatch):
    """matrix.py's shape names reach the trainers with their settings (a misparsed name
    would time another model than the report names)."""
    calls = []
    monkeypatch.setattr(W, "full", lambda *a: calls.append(("full",) + a))
    monkeypatch.setattr(W, "xgb_depth", lambda *a: calls.append(("xgb_depth",) + a))
    monkeypatch.setattr(W, "catboost_model", lambda *a: calls.append(("catboost",) + a))
    monkeypatch.setattr(W, "hist_gb", lambda *a: calls.append(("hist_gb",) + a))
    M.workload("full-uniform-1000x64", 10)
    M.workload("full-uniform-1000x300-d10", 10)
    M.workload("full-heavy-1000x16-m200", 10)
    M.workload("full-uniform-1000x31-f20-b1023", 10)
    M.workload("xgb-depth6-uniform-1000-exact-f20", 10)
    M.workload("xgb-depth8-heavy-1000", 10)
    M.workload("cb-d6-uniform-1000", 10)
    M.workload("cb-d8-heavy-500-depthwise", 10)
    M.workload("cb-d6-uniform-500-mc3", 10)
    M.workload("hgb-missing-1000x31", 10)
    assert calls[6:] == [("catboost", 1000, 6, "uniform", 10, "SymmetricTree", 0),
                         ("catboost", 500, 8, "heavy", 10, "Depthwise", 0),
                         ("catboost", 500, 6, "uniform", 10, "SymmetricTree", 3),
                         ("hist_gb", 1000, 31, "missing", 10)]
    assert calls[:6] == [("full", 1000, 64, "uniform", 10, None, 1, 136, 255),
                     ("full", 1000, 300, "uniform", 10, 10, 1, 136, 255),
                     ("full", 1000, 16, "heavy", 10, None, 200, 136, 255),
                     ("full", 1000, 31, "uniform", 10, None, 1, 20, 1023),
                     ("xgb_depth", 1000, 6, "uniform", 10, "exact", 20),
                     ("xgb_depth", 1000, 8, "heavy", 10, "hist", 136)]
    with pytest.raises(SystemExit, match="unknown shape"):
        M.workload("full-uniform-1000x64-q3", 10)


@pytest.mark.parametrize("source", ["catboost", "sklearn"])
def test_catboost_and_scikit_learn_peers_agree_with_their_library(source, tmp_path,
                                                                  monkeypatch):
    pytest.importorskip("catboost" if source == "catboost" else "sklearn")
    monkeypatch.setattr(W, "CACHE", tmp_path)
    wl = (W.catboost_model(20, 4, "missing", 400) if source == "catboost"
          else W.hist_gb(20, 12, "missing", 400))
    assert wl.source == source
    ref = M.reference(wl, wl.X)
    notes: list[str] = []
    engines = M.build(wl, 1, ["lightgbm", "onnxruntime"], ["rapidscorer"], 10 ** 9, notes)
    names = {e.name for e in engines}
    assert {source, "quickscorer[default]"} <= names, notes
    # ONNX Runtime runs wherever the converter converts the model, and is noted otherwise
    assert "onnxruntime" in names or (
        source == "sklearn" and any("skl2onnx" in n and "cannot convert" in n for n in notes)
    ), notes
    assert "lightgbm" not in names                     # it cannot read these models
    for e in engines:
        got = np.asarray(e.predict(wl.X), dtype=np.float64).reshape(ref.shape)
        if e.name == "onnxruntime":                    # float32 thresholds and sums
            assert np.max(np.abs(got - ref)) < 1e-4, e.name
        else:
            assert np.array_equal(got, ref), e.name
