"""Model files written by old releases (fixtures in ``tests/legacy/``, made once by
``tests/legacy/make_fixtures.py`` in throwaway virtual environments): LightGBM 2.0 / 2.1 text
files and XGBoost's legacy binary format (0.90 and 1.0 without the ``binf`` magic, 1.5 to 2.0
with it), scored against the writing release's own stored scores and today's libraries; the JSON
conversion round trip; damaged binary files."""
from __future__ import annotations

import json
import platform
import struct
from pathlib import Path

import numpy as np
import pytest
from conftest import DAMAGES, damaged, scoring_algorithms
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import quickscorer
from quickscorer.cli import main as cli_main
from quickscorer.errors import ModelFormatError
from quickscorer.importers.xgboost import load_xgboost
from quickscorer.importers.xgboost_binary import (
    GBTREE_PARAM_BYTES,
    LEARNER_PARAM_BYTES,
    TREE_PARAM_BYTES,
    decode_xgboost_binary,
)

LEGACY = Path(__file__).resolve().parent / "legacy"


def _cases(library: str, formats: str = "legacy binary") -> list[tuple[str, str]]:
    """(release, kind) of the fixtures of ``library`` written in ``formats`` (XGBoost up to
    2.0: the legacy binary format and JSON; 3.3 and later: JSON and UBJSON)."""
    out = []
    for folder in sorted(LEGACY.glob(f"{library}-*")):
        listing = json.loads((folder / "kinds.json").read_text())
        if library == "xgboost" and formats not in listing.get("formats", ["legacy binary"]):
            continue
        out += [(folder.name, kind) for kind in listing["kinds"]]
    return out


def _expected(release: str) -> dict[str, np.ndarray]:
    with np.load(LEGACY / release / "expected.npz") as d:
        return dict(d)


def _assert_as_stored(model, exp: dict, kind: str, alg: str) -> None:
    """``alg``'s margins, outputs and exit leaves of the fixture's rows are the writing
    release's, bit for bit."""
    X = exp["X"]
    raw = model.predict(X, raw_score=True, algorithm=alg)
    assert np.array_equal(raw, exp[f"raw_{kind}"].reshape(raw.shape)), alg
    out = model.predict(X, algorithm=alg)
    assert np.array_equal(out, exp[f"out_{kind}"].reshape(out.shape)), alg
    leaves = model.predict_leaf(X, source_ids=True, algorithm=alg)
    assert np.array_equal(leaves, exp[f"leaf_{kind}"].reshape(leaves.shape)), alg


LGB_CASES = _cases("lightgbm")
XGB_CASES = _cases("xgboost")
XGB_3X_CASES = _cases("xgboost", formats="ubj")


def test_fixtures_are_all_there():
    releases = {r for r, _ in LGB_CASES + XGB_CASES}
    assert {"lightgbm-2.0.12", "lightgbm-2.1.2", "xgboost-0.90", "xgboost-1.0.2",
            "xgboost-1.5.2", "xgboost-1.7.6", "xgboost-2.0.3"} <= releases
    assert len(LGB_CASES) >= 20 and len(XGB_CASES) >= 60
    assert {r for r, _ in XGB_3X_CASES} >= {"xgboost-3.3.0", "xgboost-3.4.1"}
    assert {("xgboost-3.4.1", k) for k in ("dart", "dropout", "categorical")} <= set(XGB_3X_CASES)


# --------------------------------------------------------------------------------------------
# LightGBM 2.0 / 2.1: no 'end of trees' line

@pytest.mark.parametrize("release,kind", LGB_CASES)
def test_lightgbm_2x_file_scores_as_its_release_did(release, kind):
    path = LEGACY / release / f"{kind}.txt"
    assert "end of trees" not in path.read_text()
    exp = _expected(release)
    model = quickscorer.load(path)
    assert model.info()["format"].startswith("text without 'end of trees'")
    for alg in scoring_algorithms(model):
        _assert_as_stored(model, exp, kind, alg)


@pytest.mark.parametrize("release,kind", LGB_CASES)
def test_lightgbm_2x_file_scores_as_todays_lightgbm(release, kind):
    lgb = pytest.importorskip("lightgbm", reason="the test extra installs lightgbm")
    path = LEGACY / release / f"{kind}.txt"
    X = _expected(release)["X"]
    booster = lgb.Booster(model_file=str(path))
    model = quickscorer.load(path)
    raw = model.predict(X, raw_score=True)
    assert np.array_equal(raw, booster.predict(X, raw_score=True).reshape(raw.shape))


# --------------------------------------------------------------------------------------------
# XGBoost legacy binary

def _known_old_difference(release: str, kind: str) -> str | None:
    """Where the writing release's own scores are not today's (say why), else None."""
    if release == "xgboost-0.90" and kind == "dart":
        return "dropout"        # XGBoost < 1.0 dropped DART trees at prediction time too
    if release == "xgboost-1.0.2" and kind == "logitraw":
        return "logitraw base"  # 1.0 took logit(base_score) for binary:logitraw; later: none
    return None


@pytest.mark.parametrize("release,kind", XGB_CASES)
def test_xgboost_binary_scores_as_its_json_twin_and_its_release(release, kind):
    folder = LEGACY / release
    raw_file = (folder / f"{kind}.model").read_bytes()
    # the 'binf' magic: written by 1.5 and later (seen here), not by 0.90 nor 1.0.2
    assert (raw_file[:4] == b"binf") == (release not in ("xgboost-0.90", "xgboost-1.0.2"))
    exp = _expected(release)
    X = exp["X"]
    model = quickscorer.load(folder / f"{kind}.model")
    twin = quickscorer.load(folder / f"{kind}.json")
    info = model.info()
    assert info["format"] == "legacy binary"
    assert info["library_version"] == ("< 1.0" if release == "xgboost-0.90"
                                       else ".".join(release.split("-")[1].split(".")[:2]))
    old = exp[f"raw_{kind}"]
    for alg in scoring_algorithms(model):
        raw = model.predict(X, raw_score=True, algorithm=alg)
        assert raw.dtype == np.float32
        assert np.array_equal(raw, twin.predict(X, raw_score=True, algorithm=alg)), alg
        assert np.array_equal(model.predict_leaf(X, source_ids=True, algorithm=alg),
                              twin.predict_leaf(X, source_ids=True, algorithm=alg)), alg
        diff = raw.reshape(-1).astype(np.float64) - old.reshape(-1)
        why = _known_old_difference(release, kind)
        if why == "logitraw base":
            # today's margin starts from base_score itself, 1.0's from logit(base_score)
            assert np.allclose(diff, 0.5, atol=1e-5), alg
        elif why == "dropout":
            assert np.isfinite(raw).all()
        elif release in ("xgboost-0.90", "xgboost-1.0.2"):
            # their own float32 sums differ from today's by a few ulps
            assert np.abs(diff).max() <= 3e-6, alg
        else:
            assert np.array_equal(raw.reshape(-1), old.reshape(-1)), alg


@pytest.mark.filterwarnings("ignore:.*JSON model saved before XGBoost:UserWarning")
@pytest.mark.parametrize("release,kind", XGB_CASES)
def test_xgboost_binary_scores_as_todays_xgboost(release, kind):
    """Today's XGBoost reads the JSON twin (except 1.0's JSON of a pruned model, whose
    num_deleted it refuses) and our JSON conversion of the binary file: same margins,
    outputs and exit leaves, and the same with part of the ensemble."""
    xgb = pytest.importorskip("xgboost", reason="the test extra installs xgboost-cpu")
    folder = LEGACY / release
    X = _expected(release)["X"]
    model = quickscorer.load(folder / f"{kind}.model")
    dm = xgb.DMatrix(X, missing=np.nan)
    boosters = []
    if not (release == "xgboost-1.0.2" and kind == "pruned"):
        boosters.append(xgb.Booster(model_file=str(folder / f"{kind}.json")))
    converted = bytearray(quickscorer.to_xgboost_json(folder / f"{kind}.model").encode())
    b = xgb.Booster()
    b.load_model(converted)
    boosters.append(b)
    n_iter = model.ensemble.n_iterations
    for booster in boosters:
        margin = booster.predict(dm, output_margin=True)
        assert np.array_equal(model.predict(X, raw_score=True).reshape(margin.shape), margin)
        out = booster.predict(dm)
        assert np.array_equal(model.predict(X).reshape(out.shape), out)
        leaves = booster.predict(dm, pred_leaf=True)
        assert np.array_equal(model.predict_leaf(X, source_ids=True).reshape(leaves.shape),
                              leaves)
        part = booster.predict(dm, output_margin=True, iteration_range=(1, n_iter - 1))
        ours = model.predict(X, raw_score=True, iteration_range=(1, n_iter - 1))
        assert np.array_equal(ours.reshape(part.shape), part)


# --------------------------------------------------------------------------------------------
# XGBoost 3.3 and later: JSON and UBJSON, DART as a gbtree with its weights

@pytest.mark.parametrize("fmt", ["json", "ubj"])
@pytest.mark.parametrize("release,kind", XGB_3X_CASES)
def test_xgboost_3x_file_scores_as_its_release_did(release, kind, fmt):
    """Margins, outputs and exit leaves bit for bit as the writing release gave them, on every
    algorithm, and the margins of iterations 1 to 4."""
    exp = _expected(release)
    X = exp["X"]
    model = quickscorer.load(LEGACY / release / f"{kind}.{fmt}")
    info = model.info()
    assert info["format"] == fmt and info["library_version"] == release.split("-")[1]
    if kind in ("dart", "dropout"):
        assert info["dart_weights"]            # 3.3 writes them beside the model, 3.4 inside
    for alg in scoring_algorithms(model):
        _assert_as_stored(model, exp, kind, alg)
        part = model.predict(X, raw_score=True, iteration_range=(1, 5), algorithm=alg)
        assert np.array_equal(part, exp[f"part_{kind}"].reshape(part.shape)), alg


@pytest.mark.parametrize("release,kind", XGB_3X_CASES)
def test_xgboost_3x_contributions_are_their_releases(release, kind):
    """TreeSHAP as 3.3 and later compute it (an 8-point float32 quadrature): bit for bit on
    x86-64, where the releases' wheels do not fuse a multiply and an add."""
    exp = _expected(release)
    model = quickscorer.load(LEGACY / release / f"{kind}.ubj")
    got = model.contributions(exp["X"], method="treeshap")
    want = exp[f"contrib_{kind}"].reshape(got.shape)
    if platform.machine().lower() in ("x86_64", "amd64"):
        assert np.array_equal(got, want)
    else:
        assert np.abs(got - want).max() <= 1e-5 * max(1.0, float(np.abs(want).max()))


@pytest.mark.parametrize("release,kind", XGB_3X_CASES)
def test_xgboost_3x_file_converts_to_json_that_scores_the_same(release, kind, tmp_path):
    """quickscorer convert passes a 3.x model through (its fields all known) and the JSON it
    writes loads with the same scores."""
    src = LEGACY / release / f"{kind}.ubj"
    out = tmp_path / "m.json"
    assert cli_main(["convert", str(src), str(out)]) == 0
    X = _expected(release)["X"]
    a, b = quickscorer.load(src), quickscorer.load(out)
    assert np.array_equal(a.predict(X, raw_score=True), b.predict(X, raw_score=True))


def test_convert_writes_json_that_loads_identically(tmp_path):
    for release in ("xgboost-0.90", "xgboost-1.0.2", "xgboost-2.0.3"):
        for kind in ("dart", "pruned", "softprob", "random_forest"):
            src = LEGACY / release / f"{kind}.model"
            out = tmp_path / f"{release}-{kind}.json"
            assert cli_main(["convert", str(src), str(out)]) == 0
            doc = json.loads(out.read_text())
            assert doc["version"] == [2, 0, 0]
            X = _expected(release)["X"]
            a, b = quickscorer.load(src), quickscorer.load(out)
            assert b.info()["format"] == "json"
            assert np.array_equal(a.predict(X, raw_score=True), b.predict(X, raw_score=True))
            assert a.ensemble.trees_per_iteration == b.ensemble.trees_per_iteration


def test_convert_mends_xgboost_1_0_json_of_a_pruned_model():
    doc = json.loads(quickscorer.to_xgboost_json(LEGACY / "xgboost-1.0.2" / "pruned.json"))
    trees = doc["learner"]["gradient_booster"]["model"]["trees"]
    assert sum(int(t["tree_param"]["num_deleted"]) for t in trees) > 0


def test_convert_refuses_what_is_not_an_xgboost_model(tmp_path):
    with pytest.raises(ModelFormatError):
        quickscorer.to_xgboost_json(LEGACY / "lightgbm-2.1.2" / "regression.txt")
    assert cli_main(["convert", str(LEGACY / "xgboost-2.0.3" / "binary.model")[:-6] + "nope",
                     str(tmp_path / "x.json")]) == 2


def test_info_names_format_and_version(capsys):
    assert cli_main(["info", str(LEGACY / "xgboost-0.90" / "softmax.model")]) == 0
    text = capsys.readouterr().out
    assert "legacy binary" in text and "< 1.0" in text
    assert cli_main(["info", str(LEGACY / "lightgbm-2.1.2" / "binary.txt")]) == 0
    assert "LightGBM 2.0 / 2.1 layout" in capsys.readouterr().out


# --------------------------------------------------------------------------------------------
# damaged legacy binary files

def _binary(release="xgboost-2.0.3", kind="dart") -> bytes:
    return (LEGACY / release / f"{kind}.model").read_bytes()


@pytest.mark.parametrize("release,kind", [("xgboost-2.0.3", "dart"), ("xgboost-0.90", "softprob"),
                                          ("xgboost-1.7.6", "pruned")])
def test_every_truncation_is_a_model_format_error(release, kind):
    raw = _binary(release, kind)
    # The trailing attribute strings do not take part in scoring, but a cut inside them is
    # still a damaged file.
    for cut in range(0, len(raw), max(1, len(raw) // 400)):
        with pytest.raises(ModelFormatError):
            quickscorer.load(raw[:cut], format="xgboost")


def _offsets(raw: bytes) -> dict[str, int]:
    """Byte offsets of the fields the damage tests change (files with the magic)."""
    at = 4
    obj_len = at + LEARNER_PARAM_BYTES
    (n,) = struct.unpack_from("<Q", raw, obj_len)
    booster_len = obj_len + 8 + n
    (m,) = struct.unpack_from("<Q", raw, booster_len)
    gbtree = booster_len + 8 + m
    tree0 = gbtree + GBTREE_PARAM_BYTES
    return {"num_feature": at + 4, "num_class": at + 8, "objective_length": obj_len,
            "booster_length": booster_len, "num_trees": gbtree, "num_nodes": tree0 + 4,
            "num_deleted": tree0 + 8, "first_node": tree0 + TREE_PARAM_BYTES}


@pytest.mark.parametrize("field,value,message", [
    ("objective_length", 2**62, "objective name length"),
    ("objective_length", 3, "booster|objective|not"),
    ("booster_length", 2**40, "booster name length"),
    ("num_trees", 2**30, "num_trees"),
    ("num_trees", -5, "num_trees"),
    ("num_nodes", 2**30, "num_nodes|nodes"),
    ("num_nodes", 0, "num_nodes"),
    ("num_deleted", 10**6, "num_deleted"),
    ("num_feature", 0, "num_feature"),
    ("num_class", -3, "num_class"),
    ("first_node", 7, "child|reach|node"),
])
def test_flipped_lengths_and_counts(field, value, message):
    raw = bytearray(_binary())
    at = _offsets(bytes(raw))[field]
    if field.endswith("length"):
        struct.pack_into("<Q", raw, at, value)
    elif field == "first_node":     # the root's left child
        struct.pack_into("<i", raw, at + 4, value)
    else:
        struct.pack_into("<i", raw, at, value)
    with pytest.raises(ModelFormatError, match=message):
        quickscorer.load(bytes(raw))


def test_dart_weight_count_must_match_the_trees():
    raw = _binary()
    doc, about = decode_xgboost_binary(raw)
    assert about == {"format": "binary", "magic": True, "version": "2.0"}
    n = len(doc["learner"]["gradient_booster"]["gbtree"]["model"]["trees"])
    at = raw.index(struct.pack("<Q", n) + doc["learner"]["gradient_booster"]["weight_drop"]
                   .astype("<f4").tobytes())
    damaged = bytearray(raw)
    struct.pack_into("<Q", damaged, at, n - 1)
    with pytest.raises(ModelFormatError, match="weight_drop"):
        quickscorer.load(bytes(damaged))


def test_unsupported_boosters_are_named():
    raw = bytearray(_binary("xgboost-2.0.3", "regression"))
    at = _offsets(bytes(raw))["booster_length"]
    fake = bytes(raw[:at]) + struct.pack("<Q", 8) + b"gblinear" + bytes(raw[at + 8 + 6:])
    with pytest.raises(ModelFormatError, match="gblinear"):
        quickscorer.load(fake)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(which=st.sampled_from([("xgboost-2.0.3", "dart"), ("xgboost-0.90", "pruned"),
                              ("xgboost-1.5.2", "softmax")]),
       pos=st.floats(0, 1, exclude_max=True),
       kind=st.sampled_from(DAMAGES), byte=st.integers(0, 255))
def test_random_damage_raises_only_model_format_error(which, pos, kind, byte):
    raw = damaged(_binary(*which), pos, kind, byte)
    try:
        ens = load_xgboost(bytes(raw))
    except ModelFormatError:
        return
    # a damage that still decodes must give a model that scores without crashing
    X = np.random.default_rng(0).normal(size=(20, min(ens.n_features, 64)))
    if ens.n_features <= 64:
        quickscorer.Model(ens).predict(X)
