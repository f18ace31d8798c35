"""The command line: info, score in every input format, and the bundled demo."""
from __future__ import annotations

import importlib.util
import subprocess
import sys

import numpy as np
import pytest

import quickscorer
from quickscorer.cli import demo_files, main


@pytest.fixture(scope="module")
def demo():
    model_path, data_path = demo_files()
    with np.load(str(data_path)) as d:
        return str(model_path), d["X"], d["labels"]


def test_demo_runs_and_checks_every_algorithm(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "mean NDCG@10" in out
    for name in quickscorer.available_algorithms():
        assert f"check {name}" in out
    assert "OK: every algorithm agrees" in out


def test_demo_ranking_is_better_than_chance(demo, capsys):
    main(["demo"])
    ndcg = float(capsys.readouterr().out.split("mean NDCG@10 = ")[1].split()[0])
    assert ndcg > 0.5  # a trained model ranks relevant documents first


def test_console_script_entry_point():
    r = subprocess.run([sys.executable, "-m", "quickscorer.cli", "info",
                        str(demo_files()[0])], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "lambdarank" in r.stdout and "n_trees" in r.stdout


def test_score_npy_csv_tsv_and_libsvm_agree(demo, tmp_path, capsys):
    model_path, X, labels = demo
    X = X[:20]
    want = quickscorer.load(model_path).predict(X)
    np.save(tmp_path / "x.npy", X)
    np.savetxt(tmp_path / "x.csv", X, delimiter=",", fmt="%.17g")
    np.savetxt(tmp_path / "x.tsv", np.column_stack([labels[:20], X]), delimiter="\t",
               fmt="%.17g")
    with open(tmp_path / "x.svm", "w") as fh:
        for lab, row in zip(labels, X):
            fh.write(f"{lab:g} qid:1 " + " ".join(f"{j}:{v:.17g}" for j, v in enumerate(row)
                                                  if v != 0) + "\n")
    runs = [["x.npy"], ["x.csv"], ["x.tsv", "--label-column", "0"], ["x.svm"]]
    for args in runs:
        out = tmp_path / "scores.txt"
        assert main(["score", model_path, str(tmp_path / args[0]), *args[1:], "-o", str(out)]) == 0
        np.testing.assert_array_equal(np.loadtxt(out), want)


def test_score_leaf_ids(demo, tmp_path):
    model_path, X, _ = demo
    np.save(tmp_path / "x.npy", X[:5])
    out = tmp_path / "leaves.txt"
    assert main(["score", model_path, str(tmp_path / "x.npy"), "--leaf", "-o", str(out)]) == 0
    want = quickscorer.load(model_path).predict_leaf(X[:5], source_ids=True)
    np.testing.assert_array_equal(np.loadtxt(out, dtype=np.int64), want)


def test_score_with_contributions_names_a_column_per_feature(demo, tmp_path):
    model_path, X, _ = demo
    model = quickscorer.load(model_path)
    np.save(tmp_path / "x.npy", X[:30])
    out = tmp_path / "scores.csv"
    assert main(["score", model_path, str(tmp_path / "x.npy"), "--contrib", "-o", str(out),
                 "--chunk-rows", "7", "-q"]) == 0
    header = out.read_text().splitlines()[0].split(",")
    names = list(model.feature_names)
    assert header == ["score"] + [f"contrib_{n}" for n in names] + ["contrib_bias"]
    table = np.loadtxt(out, delimiter=",", skiprows=1)
    np.testing.assert_allclose(table[:, 0], model.predict(X[:30]), rtol=1e-15)
    np.testing.assert_allclose(table[:, 1:], model.contributions(X[:30]), rtol=1e-15)
    # each row's contributions add up to its score (a ranking model's raw score)
    np.testing.assert_allclose(table[:, 1:].sum(axis=1), table[:, 0], rtol=1e-9, atol=1e-9)
    assert main(["score", model_path, str(tmp_path / "x.npy"), "--contrib", "--leaf"]) == 2


def test_errors_are_reported_not_raised(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("tree\nversion=v4\nnum_class=1\n")
    assert main(["info", str(bad)]) == 2
    assert "error" in capsys.readouterr().err
    np.save(tmp_path / "x.npy", np.zeros((2, 3)))
    assert main(["score", str(demo_files()[0]), str(tmp_path / "x.npy")]) == 2
    err = capsys.readouterr().err
    assert "x.npy: the array has 3 columns; the model expects 136 features" in err


def test_bench_times_the_model_against_its_library(tmp_path, capsys):
    model_path, queries = demo_files()
    X = np.load(queries)["X"][:300]
    data = tmp_path / "rows.npy"
    np.save(data, X)
    for argv in (["bench", str(model_path), "--batch", "1,50", "--repeat", "1"],
                 ["bench", str(model_path), str(data), "--batch", "20", "--repeat", "2"]):
        assert main(argv) == 0
        out = capsys.readouterr().out
        rows = [line for line in out.splitlines() if line.startswith("| ") and "---" not in line
                and not line.startswith("| batch")]
        engines = {line.split("|")[2].strip() for line in rows}
        assert {"quickscorer (default)", "quickscorer[rapidscorer]", "quickscorer[vqs]",
                "quickscorer[quickscorer]"} <= engines
        # the model's own library is timed beside it where it is installed
        assert ("lightgbm" in engines) == (importlib.util.find_spec("lightgbm") is not None)
        assert all(line.rstrip(" |").endswith("exact") for line in rows)
        assert "Machine:" in out and "paths: scalar" in out
    assert main(["bench", str(model_path), "--batch", "0"]) == 2
