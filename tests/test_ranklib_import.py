"""RankLib's MART, LambdaMART and random-forest models, scored as RankLib scores them, bit
for bit: files RankLib 2.3 and 2.9-SNAPSHOT wrote with the scores RankLib computed for them
(tests/legacy/make_ranklib_fixtures.py), and RankLib itself run live where ``$RANKLIB_JAR``
names a jar."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import shared_data_or_skip

import quickscorer
from quickscorer.batch import score_file
from quickscorer.errors import ModelFormatError

LEGACY = Path(__file__).parent / "legacy"
RELEASES = ("2.3", "2.9-SNAPSHOT")
KINDS = ("mart", "lambdamart", "rf")


def _test_rows() -> tuple[np.ndarray, Path]:
    """LightGBM's ranking example's test rows, 300 features (feature k in column k - 1)."""
    root = shared_data_or_skip()
    X = np.zeros((768, 300))
    for i, line in enumerate((root / "rank.test").read_text().splitlines()):
        for token in line.split()[1:]:
            k, v = token.split(":")
            X[i, int(k) - 1] = float(v)
    return X, root / "rank.test"


def _ranklib_scores(path: Path) -> np.ndarray:
    return np.array([float(line.split("\t")[2]) for line in path.read_text().splitlines()])


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("kind", KINDS)
def test_ranklib_s_own_scores_bit_for_bit(release, kind):
    X, _ = _test_rows()
    model = quickscorer.load(LEGACY / f"ranklib-{release}" / f"{kind}.txt", n_features=300)
    want = _ranklib_scores(LEGACY / f"ranklib-{release}" / f"{kind}.scores")
    assert model.ensemble.source["library"] == "ranklib"
    np.testing.assert_array_equal(model.predict(X), want)
    for alg in ("walk", "vqs", "rapidscorer", "quickscorer", "traversal"):
        np.testing.assert_array_equal(model.predict(X, algorithm=alg, n_threads=2), want)
    for i in (0, 1, 17):                                  # calls of one row
        np.testing.assert_array_equal(model.predict(X[i]), want[i:i + 1])
    if kind != "rf":                     # each tree weighs its leaves by the learning rate
        np.testing.assert_array_equal(model.ensemble.tree_weight, np.float32(0.1))
    else:
        assert model.ensemble.bag_offsets.tolist() == [0, 3, 6, 9, 12]


@pytest.mark.parametrize("kind", KINDS)
def test_score_reads_letor_features_from_1_and_ranks_as_ranklib(kind, tmp_path):
    """``quickscorer score`` reads a LETOR/LibSVM file for a RankLib model as RankLib does,
    feature k from ``k:value``, and ranks its queries from the ``.query`` file beside it."""
    X, test = _test_rows()
    model_path = LEGACY / "ranklib-2.3" / f"{kind}.txt"
    want = _ranklib_scores(LEGACY / "ranklib-2.3" / f"{kind}.scores")
    model = quickscorer.load(model_path, n_features=300)
    score_file(model, test, tmp_path / "s.csv")
    np.testing.assert_array_equal(np.loadtxt(tmp_path / "s.csv", skiprows=1), want)
    data = tmp_path / "rank.test"
    shutil.copy(test, data)
    shutil.copy(str(test) + ".query", str(data) + ".query")
    score_file(model, data, tmp_path / "r.csv", rank=True)
    got = np.loadtxt(tmp_path / "r.csv", delimiter=",", skiprows=1)
    np.testing.assert_array_equal(got[:, 0], want)


def test_what_a_ranklib_file_may_not_hold_is_refused_by_name():
    good = (LEGACY / "ranklib-2.3" / "lambdamart.txt").read_text()
    cases = {
        "## Coordinate Ascent\n": "not a tree ensemble",
        "## Mystery\n<ensemble></ensemble>\n": "unknown ranker 'Mystery'",
        good.replace('weight="0.1"', 'weight="0.1" scale="2"', 1): r"attributes \['id', "
                                                                   r"'scale', 'weight'\]",
        good.replace("<threshold>", "<threshold>x", 1): "is not a number",
        good.replace("<feature> 100 </feature>", "<feature> 0 </feature>", 1):
            "not a number from 1",
        good.replace("<output>", "<value>", 1): r"<value> where a split holds",
        good[:good.index("</ensemble>")]: "the text ends inside",
        good.replace("</ensemble>", "</ensemble>\n<ensemble>" + good.split("<ensemble>")[1], 1):
            "2 ensembles in a LambdaMART model",
    }
    for text, message in cases.items():
        with pytest.raises(ModelFormatError, match=message):
            quickscorer.load(text if text.startswith("##") else text, format="ranklib")
    with pytest.raises(ModelFormatError, match="past the 50 features given"):
        quickscorer.load(good, n_features=50)
    model = quickscorer.load(good)                        # the largest feature it reads
    assert model.n_features == max(int(t.split("<feature>")[1].split("<")[0])
                                   for t in good.split("\n") if "<feature>" in t)
    with pytest.raises(ValueError, match="n_features is for"):
        quickscorer.load(str(LEGACY / "xgboost-3.4.1" / "binary.json"), n_features=3)


@pytest.mark.skipif(not os.environ.get("RANKLIB_JAR") or shutil.which("java") is None,
                    reason="RankLib runs live where $RANKLIB_JAR names a jar and java runs")
def test_ranklib_live_on_random_rows(tmp_path):
    """A model RankLib trains now on rows with values at and beside its thresholds, and the
    scores RankLib gives them."""
    rng = np.random.default_rng(3)
    X = np.round(rng.random((400, 8)), 2)
    X[rng.random(X.shape) < 0.2] = 0.5
    y = (X[:, 0] + X[:, 3] > 1).astype(int) + (X[:, 5] > 0.7)
    lines = [" ".join([str(y[i]), f"qid:{i // 20 + 1}"]
                      + [f"{j + 1}:{float(X[i, j])!r}" for j in range(8)]) for i in range(400)]
    (tmp_path / "d.txt").write_text("\n".join(lines) + "\n")
    jar = os.environ["RANKLIB_JAR"]
    for ranker, extra in (("0", ["-tree", "30"]), ("6", ["-tree", "30"]),
                          ("8", ["-bag", "3", "-tree", "4"])):
        run = ["java", "-cp", jar, "ciir.umass.edu.eval.Evaluator"]
        subprocess.run(run + ["-train", str(tmp_path / "d.txt"), "-ranker", ranker, *extra,
                              "-leaf", "6", "-silent", "-save", str(tmp_path / "m.txt")],
                       check=True, capture_output=True)
        subprocess.run(run + ["-load", str(tmp_path / "m.txt"), "-rank",
                              str(tmp_path / "d.txt"), "-score", str(tmp_path / "s.txt")],
                       check=True, capture_output=True)
        model = quickscorer.load(tmp_path / "m.txt", n_features=8)
        np.testing.assert_array_equal(model.predict(X), _ranklib_scores(tmp_path / "s.txt"))
