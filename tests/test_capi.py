"""The C library (libquickscorer, quickscorer.h): a prepared model file opened and scored with no
Python, called here through its own entry points (quickscorer.capi, ctypes) and by a C program
built against the installed header and library. Its scores are ``Model.predict``'s bit for
bit; a damaged or hostile file is refused with a message naming its section."""
from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from conftest import category_rows, random_ensemble, shared_data_or_skip, special_rows

import quickscorer
from quickscorer import capi, model_file
from quickscorer.errors import InputError, ModelFileError

LEGACY = Path(__file__).parent / "legacy"
EXAMPLE = Path(__file__).parents[1] / "docs" / "examples" / "score.c"

if sys.platform == "win32":                # setup.py builds the library on POSIX systems
    pytest.skip("no C library in a Windows build yet (docs/c-api.md)", allow_module_level=True)


def _same(c_model: capi.CModel, model, X, **kw) -> None:
    """The C library's scores of X (float64 and float32 rows, raw and not, 1 and 3 threads)
    are the model's, bit for bit, and so are its exit leaves."""
    for rows in (X, X.astype(np.float32)):
        for raw in (False, True):
            want = model.predict(rows, raw_score=raw, **kw)
            want = np.asarray(want, np.float64).reshape(rows.shape[0], -1)
            for n_threads in (1, 3):
                got = c_model.predict(rows, raw_score=raw, n_threads=n_threads)
                np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(c_model.predict_leaf(X, n_threads=2),
                                  model.predict_leaf(X.astype(np.float32)))


@pytest.mark.parametrize("family,n_outputs,transform", [
    ("lightgbm", 1, "identity"), ("lightgbm", 1, "sigmoid"), ("lightgbm", 3, "softmax"),
    ("xgboost", 1, "xgb_logistic"), ("xgboost", 3, "xgb_softmax"),
    ("xgboost", 3, "xgb_softmax_argmax"), ("plain", 1, "identity"),
    ("plain", 2, "onnx_softmax"), ("lightgbm", 1, "exp")])
def test_the_c_library_scores_as_predict_bit_for_bit(tmp_path, family, n_outputs, transform):
    rng = np.random.default_rng(n_outputs + len(transform))
    # trees of at most 8 leaves are at most 7 deep (the library lays them out complete);
    # of up to 60, some are deeper (its eight-cursor walk)
    ens = random_ensemble(rng, family, n_trees=48, n_outputs=n_outputs,
                          max_leaves=8 if len(transform) % 2 else 60,
                          p_categorical=0.0 if family == "xgboost" else 0.2)
    ens = dataclasses.replace(ens, transform=transform)
    model = quickscorer.Model(ens)
    path = model.save(tmp_path / "m.qsm")
    X = category_rows(rng, 500, ens.n_features)
    with capi.CModel(path) as c:
        assert (c.n_features, c.n_trees) == (ens.n_features, len(ens.trees))
        assert c.n_outputs(raw_score=True) == n_outputs
        _same(c, model, X)
        # one row, and no rows
        np.testing.assert_array_equal(c.predict(X[:1]).reshape(-1),
                                      np.asarray(model.predict(X[:1])).reshape(-1))
        assert c.predict(X[:0]).shape == (0, c.n_outputs())
    # the same from memory, and through the file Python opens
    with capi.CModel(path.read_bytes()) as c:
        _same(c, quickscorer.load(path), X[:100])


@pytest.mark.parametrize("release,kind", [
    ("lightgbm-2.1.2", "binary"), ("lightgbm-2.1.2", "multiclass"),
    ("lightgbm-2.1.2", "categorical"), ("lightgbm-2.1.2", "dart"),
    ("lightgbm-2.1.2", "random_forest"), ("lightgbm-2.1.2", "poisson"),
    ("lightgbm-2.1.2", "leaves_255"), ("xgboost-1.7.6", "binary"),
    ("xgboost-1.7.6", "softmax"), ("xgboost-1.7.6", "softprob"), ("xgboost-1.7.6", "dart")])
def test_real_models_files_score_in_c_as_in_python(tmp_path, release, kind):
    ext = ".txt" if release.startswith("lightgbm") else ".json"
    model = quickscorer.load(LEGACY / release / f"{kind}{ext}")
    path = model.save(tmp_path / "m.qsm")
    rng = np.random.default_rng(7)
    X = special_rows(rng, 400, model.n_features)
    with capi.CModel(path) as c:
        _same(c, model, X)


def test_a_linear_tree_model_scores_in_c(tmp_path):
    lgb = pytest.importorskip("lightgbm", reason="the test extra installs lightgbm")
    rng = np.random.default_rng(3)
    X = rng.standard_normal((600, 4))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = X[:, 0] * 2 + np.nan_to_num(X[:, 1]) + rng.normal(size=600) * 0.1
    booster = lgb.train({"objective": "regression", "linear_tree": True, "num_leaves": 8,
                         "verbose": -1}, lgb.Dataset(X, y), 12)
    model = quickscorer.load(booster)
    path = model.save(tmp_path / "lin.qsm")
    with capi.CModel(path) as c:
        _same(c, model, X)
    np.testing.assert_array_equal(capi.CModel(path).predict(X)[:, 0], booster.predict(X))


@pytest.mark.parametrize("release", ["ranklib-2.3", "ranklib-2.9-SNAPSHOT"])
@pytest.mark.parametrize("kind", ["mart", "lambdamart", "rf"])
def test_ranklib_models_score_as_ranklib_in_c(tmp_path, release, kind):
    """RankLib's Java float sum and its forest's mean of bags, against the scores RankLib
    itself gave (tests/legacy/ranklib-*, from make_ranklib_fixtures.py) and Python's."""
    root = shared_data_or_skip()
    rows = np.zeros((768, 300))
    for i, line in enumerate((root / "rank.test").read_text().splitlines()):
        for token in line.split()[1:]:
            k, v = token.split(":")
            rows[i, int(k) - 1] = float(v)
    want = np.array([float(line.split("\t")[2]) for line in
                     (LEGACY / release / f"{kind}.scores").read_text().splitlines()])
    model = quickscorer.load(LEGACY / release / f"{kind}.txt", n_features=300)
    with capi.CModel(model.save(tmp_path / "r.qsm")) as c:
        got = c.predict(rows)[:, 0]
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(c.predict(rows.astype(np.float32), n_threads=3)[:, 0],
                                      want)
        np.testing.assert_array_equal(c.predict(rows[5:6])[:, 0], want[5:6])
        np.testing.assert_array_equal(c.predict_leaf(rows), model.predict_leaf(rows))


def test_what_the_c_library_does_not_score_is_refused_by_name(tmp_path):
    # scikit-learn's NumPy transforms: raw scores only
    ens = dataclasses.replace(random_ensemble(np.random.default_rng(0), "plain"),
                              transform="numpy_exp")
    model = quickscorer.Model(ens)
    with capi.CModel(model_file.to_bytes(model)) as c:
        X = np.random.default_rng(1).standard_normal((20, ens.n_features))
        np.testing.assert_array_equal(c.predict(X, raw_score=True),
                                      model.predict(X, raw_score=True).reshape(20, 1))
        with pytest.raises(RuntimeError, match="NumPy"):
            c.predict(X)


def test_damaged_old_and_newer_files_are_refused_naming_the_section(tmp_path):
    model = quickscorer.Model(random_ensemble(np.random.default_rng(4), "lightgbm"))
    good = model_file.to_bytes(model)
    with pytest.raises(ModelFileError, match="No such file"):
        capi.CModel(tmp_path / "absent.qsm")
    (tmp_path / "empty.qsm").write_bytes(b"")
    with pytest.raises(ModelFileError, match="empty"):
        capi.CModel(tmp_path / "empty.qsm")
    with pytest.raises(ModelFileError, match="truncated"):
        capi.CModel(good[:len(good) - 40])
    meta, arrays = model_file.unpack(good)
    index = arrays[-1]
    slots = dict(zip(model_file.C_INDEX_SLOTS, index[model_file.C_INDEX_HEAD:]))
    left = int(slots["left"])               # the section the C library reads children from
    off = good.index(arrays[left - 1].tobytes())
    flipped = bytearray(good)
    flipped[off] ^= 1
    with pytest.raises(ModelFileError, match=f"section {left}: checksum mismatch"):
        capi.CModel(bytes(flipped))
    # a hostile file: sound checksums, a child outside its tree
    hostile = [a.copy() for a in arrays]
    hostile[left - 1][0] = 10 ** 6
    with pytest.raises(ModelFileError, match=rf"section {left} \(left\): node 0 of tree 0 has "
                                             "child 1000000, outside its tree"):
        capi.CModel(model_file.pack(meta, hostile))
    # a file of a writer before the C index: told to compile again
    old = dict(meta)
    del old["c_index"]
    with pytest.raises(RuntimeError, match="no C index"):
        capi.CModel(model_file.pack({**old, "arrays": meta["arrays"][:-1]}, arrays[:-1]))
    # an index of a newer version
    newer = [a.copy() for a in arrays]
    newer[-1][1] = model_file.C_INDEX_VERSION + 1
    with pytest.raises(ModelFileError, match=f"index version {model_file.C_INDEX_VERSION + 1}"):
        capi.CModel(model_file.pack(meta, newer))


def _rs_part(arrays) -> tuple[np.ndarray, int]:
    """A file's C index and where its RapidScorer part starts."""
    index = arrays[-1]
    return index, model_file.C_INDEX_HEAD + len(model_file.C_INDEX_SLOTS)


def test_calls_of_many_rows_run_rapidscorer_in_c_as_python_does(tmp_path):
    """The index names RapidScorer's layout and the rows a thread from which Python's choice
    runs it; the C library's calls from there score as Python's, on every path a call size
    takes (32 and 64 lanes, chunks of groups, threads), and a file of the index's first
    version (no RapidScorer part) opens and scores the same through the walk."""
    rng = np.random.default_rng(11)
    for family, leaves, n_outputs in (("lightgbm", 40, 1), ("xgboost", 16, 1),
                                      ("lightgbm", 200, 1), ("xgboost", 12, 3)):
        ens = random_ensemble(rng, family, n_trees=60, max_leaves=leaves, n_outputs=n_outputs,
                              p_categorical=0.0 if family == "xgboost" else 0.2)
        model = quickscorer.Model(ens)
        data = model_file.to_bytes(model)
        meta, arrays = model_file.unpack(data)
        index, w0 = _rs_part(arrays)
        rs_from = model.plan.rs_from
        assert model.plan.choose(2000, 1) == "rapidscorer"
        assert int(index[w0]) == rs_from > 0
        with capi.CModel(data) as c:
            for n in sorted({max(1, rs_from - 1), rs_from, 33, 47, 48, 64, 65, 200, 2000}):
                X = category_rows(rng, n, ens.n_features)
                for n_threads in (1, 2, 3):
                    want = model.predict(X, raw_score=True, n_threads=n_threads)
                    got = c.predict(X, raw_score=True, n_threads=n_threads)
                    np.testing.assert_array_equal(got, np.asarray(want).reshape(n, -1))
                np.testing.assert_array_equal(c.predict_leaf(X, n_threads=2),
                                              model.predict_leaf(X.astype(np.float32)))
        first = [a.copy() for a in arrays]
        first[-1] = index[:w0].copy()
        first[-1][1] = 1
        X = category_rows(rng, 300, ens.n_features)
        with capi.CModel(model_file.pack(meta, first)) as c:
            np.testing.assert_array_equal(c.predict(X),
                                          np.asarray(model.predict(X)).reshape(300, -1))


def test_a_damaged_rapidscorer_layout_is_refused_by_the_c_library(tmp_path):
    model = quickscorer.Model(random_ensemble(np.random.default_rng(12), "lightgbm",
                                              n_trees=40, max_leaves=30))
    meta, arrays = model_file.unpack(model_file.to_bytes(model))
    index, w0 = _rs_part(arrays)
    section = dict(zip(model_file.C_INDEX_RS_SLOTS, index[w0 + 5:]))
    for name, change, message in (
            ("block_starts", lambda a: a.__setitem__(-1, a[-1] + 1), "block_starts"),
            ("tree_byte_offsets", lambda a: a.__setitem__(1, 10 ** 9), "RapidScorer layout"),
            ("rank_pivots", lambda a: None, "RapidScorer array rank_pivots")):
        hostile = [a.copy() for a in arrays]
        if name == "rank_pivots":      # an index naming a section that is not an array
            hostile[-1][w0 + 5] = len(arrays) + 5
        else:
            change(hostile[int(section[name]) - 1])
        with pytest.raises(ModelFileError, match=message):
            capi.CModel(model_file.pack(meta, hostile))


def test_bad_calls_give_a_status_and_a_message():
    lib = capi.library()
    model = quickscorer.Model(random_ensemble(np.random.default_rng(5), "xgboost"))
    with capi.CModel(model_file.to_bytes(model)) as c:
        out = np.empty(4)
        assert lib.qs_predict(c._h, None, 4, 0, 1, out.ctypes.data) == 1
        assert "NULL argument" in lib.qs_last_error().decode()
        X = np.zeros((4, c.n_features), np.float32)
        assert lib.qs_predict(c._h, X.ctypes.data, -1, 0, 1, out.ctypes.data) == 1
        assert lib.qs_predict(c._h, X.ctypes.data, 4, 8, 1, out.ctypes.data) == 1
        assert "unknown flags" in lib.qs_last_error().decode()
        assert lib.qs_predict(c._h, X.ctypes.data, 4, 0, 1, out.ctypes.data) == 0
        with pytest.raises(InputError):
            c.predict(np.zeros((2, c.n_features + 1)))
    assert lib.qs_close(None) == 0
    assert capi.version() == quickscorer.__version__


def test_one_handle_scores_from_many_threads_while_its_file_is_replaced(tmp_path):
    """Deploying by rename under load: a handle keeps scoring the file it opened, a new open
    gets the new one, and nothing crashes."""
    rng = np.random.default_rng(6)
    a = quickscorer.Model(random_ensemble(rng, "lightgbm", n_trees=80))
    b = quickscorer.Model(random_ensemble(rng, "lightgbm", n_trees=80))
    path = tmp_path / "live.qsm"
    a.save(path)
    X = rng.standard_normal((64, 5))
    want_a = a.predict(X).reshape(64, 1)
    c = capi.CModel(path)
    errors = []

    def score():
        try:
            for _ in range(150):
                np.testing.assert_array_equal(c.predict(X, n_threads=2), want_a)
        except Exception as exc:      # reported below
            errors.append(exc)

    threads = [threading.Thread(target=score) for _ in range(4)]
    for t in threads:
        t.start()
    for i in range(20):
        (b if i % 2 == 0 else a).save(path)
    b.save(path)
    for t in threads:
        t.join()
    assert not errors, errors[0]
    with capi.CModel(path) as fresh:
        np.testing.assert_array_equal(fresh.predict(X), b.predict(X).reshape(64, 1))
    c.close()


def test_the_flags_printed_build_the_c_example(tmp_path):
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler on the PATH to build docs/examples/score.c with")
    run = [sys.executable, "-m", "quickscorer.capi"]
    cflags = subprocess.run(run + ["--cflags"], capture_output=True, text=True, check=True)
    libs = subprocess.run(run + ["--libs"], capture_output=True, text=True, check=True)
    assert (Path(cflags.stdout.split()[0][2:]) / "quickscorer.h").is_file()
    exe = tmp_path / "score"
    subprocess.run([cc, *cflags.stdout.split(), str(EXAMPLE), "-o", str(exe),
                    *libs.stdout.split(), "-lm"], check=True, capture_output=True)
    model = quickscorer.load(LEGACY / "lightgbm-2.1.2" / "multiclass.txt")
    path = model.save(tmp_path / "m.qsm")
    rng = np.random.default_rng(8)
    X = special_rows(rng, 1500, model.n_features)
    X[X == np.inf] = 1e300          # (the example reads decimal text)
    X[X == -np.inf] = -1e300
    text = "\n".join(",".join("" if np.isnan(v) else repr(float(v)) for v in row)
                     for row in X) + "\n"
    out = subprocess.run([str(exe), str(path)], input=text, capture_output=True, text=True,
                         check=True)
    got = np.array([[float(v) for v in line.split()] for line in out.stdout.splitlines()])
    np.testing.assert_array_equal(got, model.predict(X))
    bad = subprocess.run([str(exe), str(tmp_path / "absent.qsm")], capture_output=True,
                         text=True)
    assert bad.returncode == 1 and "No such file" in bad.stderr


def test_compile_checks_the_file_through_python_and_the_c_library(tmp_path):
    out = tmp_path / "m.qsm"
    r = subprocess.run([sys.executable, "-m", "quickscorer.cli", "compile",
                        str(LEGACY / "xgboost-1.7.6" / "softprob.json"), "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "identical on 256 generated rows" in r.stdout
    assert "the C library's identical too" in r.stdout
    model = quickscorer.load(LEGACY / "xgboost-1.7.6" / "softprob.json")
    X = np.random.default_rng(9).standard_normal((50, model.n_features))
    with capi.CModel(out) as c:
        np.testing.assert_array_equal(c.predict(X), model.predict(X))


def _walk_part(arrays) -> tuple[np.ndarray, int]:
    """A file's C index and where its walk part (version 4 on) starts."""
    index, w0 = _rs_part(arrays)
    return index, w0 + 5 + len(model_file.C_INDEX_RS_SLOTS)


def _changed(meta, arrays, section: int, change) -> bytes:
    """The file of ``meta`` and ``arrays`` with ``change`` made to a copy of array section
    ``section`` (1-based)."""
    out = [a.copy() for a in arrays]
    change(out[section - 1])
    return model_file.pack(meta, out)


def _complete_model(kind: str):
    """A model whose one-row walk lays its trees out complete, with its tuning: XGBoost's
    float32 slots with slot values (one output) or with exit leaves (three), or LightGBM's
    float64 slots (a small model trained here: the node covers the choice reads)."""
    tuning = quickscorer.current_tuning().replace(walk_complete=True, walk_min_ratio=0.0,
                                                  group_few_rows_ratio=0.0)
    if kind != "lightgbm":
        name = "deep_hist.json" if kind == "xgboost" else "softmax.json"
        return quickscorer.load(LEGACY / "xgboost-3.4.1" / name, tuning=tuning), tuning
    lightgbm = pytest.importorskip("lightgbm", reason="the test extra installs lightgbm")
    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 6))
    X[rng.random(X.shape) < 0.05] = np.nan
    booster = lightgbm.train({"num_leaves": 8, "max_depth": 3, "min_data_in_leaf": 5,
                              "verbose": -1}, lightgbm.Dataset(X, X[:, 0] - X[:, 1] ** 2),
                             num_boost_round=19)
    return quickscorer.load(booster, tuning=tuning), tuning


@pytest.mark.parametrize("kind", ["xgboost", "xgboost-multiclass", "lightgbm"])
def test_the_c_library_walks_the_file_s_complete_trees_in_place(tmp_path, kind):
    """Where the file's walk lays the trees out complete, the index (version 5) names its
    slots, offsets, depths and end slots, and the library walks them in place with Python's
    scores and leaves bit for bit; an index of version 4 (the walk's table alone, which the
    library then walks without complete trees) gives the same scores; a damaged slot, depth
    or end slot is refused by name."""
    model, tuning = _complete_model(kind)
    path = model.save(tmp_path / "complete.qsm")
    meta, arrays = model_file.unpack(path.read_bytes())
    index, w0 = _walk_part(arrays)
    assert int(index[w0]) == len(model_file.C_INDEX_WALK_SLOTS) and all(index[w0 + 1:])
    slot = dict(zip(model_file.C_INDEX_WALK_SLOTS, (int(s) for s in index[w0 + 1:])))
    cnodes, depth = arrays[slot["cnodes"] - 1], arrays[slot["cdepth"] - 1]
    assert depth.shape[0] == model.ensemble.n_trees and cnodes.shape[0] > 0
    words = 2 if kind == "lightgbm" else 1           # float64 slots, or float32 keys
    assert cnodes.shape[0] == words * int(((1 << depth.astype(np.int64)) - 1).sum()
                                          + (-len(depth) % 8) * ((1 << int(depth[-1])) - 1))
    rng = np.random.default_rng(5)
    X = special_rows(rng, 300, model.n_features)
    with capi.CModel(path) as c:
        _same(c, model, X)
    older = [a.copy() for a in arrays]                 # version 4: the walk's first 8 arrays
    older[-1] = index[:w0 + 9].copy()
    older[-1][1], older[-1][w0] = 4, 8
    with capi.CModel(model_file.pack(meta, older)) as c:
        _same(c, model, X)

    def hostile(name, change):
        return _changed(meta, arrays, slot[name], change)

    col = 2 if kind == "lightgbm" else 1               # a slot's column: int32 word 2 or 1
    for name, change, message in (
            ("cnodes", lambda a: a.view(np.int32).reshape(-1, 2 * words).__setitem__(
                (0, col), 10 ** 6), "a complete tree's column or threshold"),
            ("cnodes", lambda a: a.view(np.int32).reshape(-1, 2 * words).__setitem__(
                (-1, col), -1), "a complete tree's column or threshold"),
            ("cdepth", lambda a: a.__setitem__(0, a[0] + 1), "the complete trees. offsets"),
            ("cslot_leaf", lambda a: a.__setitem__(0, 10 ** 6), "an end slot names a leaf"),
            ("cslot_leaf", lambda a: a.__setitem__(-1, -1), "an end slot names a leaf")):
        with pytest.raises(ModelFileError, match=rf"\(({name}|cdepth)\): {message}"):
            capi.CModel(hostile(name, change))
    if kind == "lightgbm":
        nan = [a.copy() for a in arrays]
        nan[slot["cnodes"] - 1].view(np.float64).reshape(-1, 2)[0, 0] = np.nan
        with pytest.raises(ModelFileError, match="a complete tree's column or threshold"):
            capi.CModel(model_file.pack(meta, nan))


def test_the_c_library_walks_the_file_s_walk_table_in_place(tmp_path):
    """Where the file holds Python's walk layout without complete trees, the index names it
    and the library walks that table (preorder, Python's columns and special nodes: here a
    LightGBM model's categorical splits) with Python's scores bit for bit; an index that
    names none gets the library's own table, the same scores; a damaged table, root, column
    or special node is refused by name."""
    tuning = quickscorer.current_tuning().replace(walk_complete=False, walk_min_ratio=0.0)
    model = quickscorer.load(LEGACY / "lightgbm-2.1.2" / "categorical.txt", tuning=tuning)
    path = model.save(tmp_path / "walk.qsm")
    meta, arrays = model_file.unpack(path.read_bytes())
    index, w0 = _walk_part(arrays)
    assert int(index[w0]) == len(model_file.C_INDEX_WALK_SLOTS) and all(index[w0 + 1:])
    slot = dict(zip(model_file.C_INDEX_WALK_SLOTS, (int(s) for s in index[w0 + 1:])))
    assert arrays[slot["feature"] - 1].shape[0] > 0            # special nodes to decide
    assert arrays[slot["fill_cols"] - 1].shape[0] > 1
    rng = np.random.default_rng(8)
    X = np.vstack([special_rows(rng, 200, model.n_features),
                   category_rows(rng, 200, model.n_features)])
    with capi.CModel(path) as c:
        _same(c, model, X)
    own = [a.copy() for a in arrays]
    own[-1][w0 + 1:] = 0
    with capi.CModel(model_file.pack(meta, own)) as c:
        _same(c, model, X)
    older = [a.copy() for a in arrays]                  # an index of version 3: no walk part
    older[-1] = index[:w0].copy()
    older[-1][1] = 3
    with capi.CModel(model_file.pack(meta, older)) as c:
        _same(c, model, X)

    def hostile(name, change):
        return _changed(meta, arrays, slot[name], change)

    def rows(a):            # a walk table's rows: thr (two words), col, left, right, pad
        return a.view(np.int32).reshape(-1, 6)

    table = rows(arrays[slot["walk_table"] - 1])
    n = int(table[0, 5]) + 1                                   # row 0's pad + 1: the records
    leaf = n + int(np.flatnonzero(table[n:-2, 4] < 0)[0])       # a node whose right is a leaf
    for name, change, message in (
            ("walk_table", lambda a: rows(a).__setitem__((1, 5), 7), "the leaf records"),
            ("walk_table", lambda a: rows(a).__setitem__((leaf, 4), -(n + 1) * 24),
             "a node's child"),
            ("walk_table", lambda a: rows(a).__setitem__((n, 3), 7), "a node's child"),
            ("walk_table", lambda a: rows(a).__setitem__((n, 2), 10 ** 6), "a node's child"),
            ("roots", lambda a: a.__setitem__(0, 10 ** 6), "a root"),
            ("fill_cols", lambda a: a.__setitem__(slice(None), a[::-1].copy()), "the columns"),
            ("feature", lambda a: a.__setitem__(0, 10 ** 6), "a special node")):
        with pytest.raises(ModelFileError, match=rf"section {slot[name]} \({name}\): {message}"):
            capi.CModel(hostile(name, change))
