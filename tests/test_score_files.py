"""``quickscorer score`` on files: every input and output format, chunk sizes and threads give
the scores of ``model.predict`` on the whole file in memory, and the source libraries' own
predictions from the same files; ranking across chunks; errors name file, line and column; a
failed run leaves no output; a folder of files on a real Dask cluster."""
from __future__ import annotations

import gzip
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

import quickscorer
from quickscorer.batch import output_path, score_file
from quickscorer.cli import main
from quickscorer.errors import InputError
from quickscorer.inputs.files import read_libsvm
from quickscorer.progress import Progress

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "lightgbm-examples"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(),
                                  reason="the shared LightGBM example data is not beside the "
                                         "repository")

N_FEATURES = 12


def _rows(n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, N_FEATURES))
    X[:, 3] = np.round(X[:, 3] * 10)              # integer-valued
    X[rng.random((n, N_FEATURES)) < 0.05] = np.nan
    X[:, 5] *= 10.0 ** rng.integers(-12, 12, n)    # wide range: exponents in the text
    return X


@pytest.fixture(scope="module")
def lgb_model(tmp_path_factory):
    lgb = pytest.importorskip("lightgbm")
    X = _rows(3000, seed=1)
    y = np.nan_to_num(X[:, 0]) * 2 + np.sin(np.nan_to_num(X[:, 1])) + (np.isnan(X[:, 2]))
    names = [f"feat_{j}" for j in range(N_FEATURES)]
    b = lgb.train({"objective": "regression", "num_leaves": 15, "verbose": -1},
                  lgb.Dataset(X, y, feature_name=names), 25)
    path = tmp_path_factory.mktemp("m") / "model.txt"
    b.save_model(str(path))
    return str(path), quickscorer.load(str(path)), b


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """The same rows in every input format (text with the shortest repr of each double)."""
    d = tmp_path_factory.mktemp("data")
    X = _rows(157, seed=2)
    qid = np.repeat(np.arange(20), np.diff(np.linspace(0, 157, 21).astype(int)))
    names = [f"feat_{j}" for j in range(N_FEATURES)]

    def text(v):
        return "" if np.isnan(v) else repr(float(v))

    order = list(range(N_FEATURES))[::-1]             # columns in another order than the model
    with open(d / "rows.csv", "w") as fh:
        fh.write("qid,doc," + ",".join(names[j] for j in order) + "\n")
        for i, row in enumerate(X):
            fh.write(f"{qid[i]},d{i}," + ",".join(text(row[j]) for j in order) + "\n")
    with open(d / "rows.tsv", "w") as fh:                # no header, label first
        for row in X:
            fh.write("1\t" + "\t".join(text(v) if not np.isnan(v) else "NaN" for v in row)
                     + "\n")
    # LibSVM leaves out zeros and missing values: those rows read 0.0 for a LightGBM model
    Xs = np.where(np.isnan(X), 0.0, X)
    lines = [f"{i % 3} qid:{qid[i]} "
             + " ".join(f"{j}:{float(row[j])!r}" for j in range(N_FEATURES) if row[j] != 0)
             for i, row in enumerate(Xs)]
    (d / "rows.svm").write_text("\n".join(lines) + "\n")
    with gzip.open(d / "rows.svm.gz", "wt") as fh:
        fh.write("\n".join(lines) + "\n")
    np.save(d / "rows.npy", X)
    with gzip.open(d / "rows.npy.gz", "wb") as fh:
        np.save(fh, X)
    np.save(d / "rows32.npy", X.astype(np.float32))
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    cols = {"qid": pa.array(qid), "doc": pa.array([f"d{i}" for i in range(len(X))])}
    for j in order:
        cols[names[j]] = pa.array(X[:, j], from_pandas=True)    # NaN as null
    table = pa.table(cols)
    pq.write_table(table, d / "rows.parquet", row_group_size=40)
    import pyarrow.feather as feather
    feather.write_feather(table, d / "rows.feather", chunksize=50)
    with pa.OSFile(str(d / "rows.arrows"), "wb") as sink:
        with pa.ipc.new_stream(sink, table.schema) as w:
            for b in table.to_batches(max_chunksize=33):
                w.write_batch(b)
    return d, X, Xs, qid


FORMAT_CASES = [
    ("rows.csv", {"drop": ["qid", "doc"]}, "dense"),
    ("rows.tsv", {"label_column": 0}, "dense"),
    ("rows.svm", {}, "sparse"),
    ("rows.svm.gz", {}, "sparse"),
    ("rows.npy", {}, "dense"),
    ("rows.npy.gz", {}, "dense"),
    ("rows.parquet", {"drop": ["qid", "doc"]}, "dense"),
    ("rows.feather", {"drop": ["qid", "doc"]}, "dense"),
    ("rows.arrows", {"drop": ["doc", "qid"]}, "dense"),
]


@pytest.mark.parametrize("name,opts,kind", FORMAT_CASES, ids=[c[0] for c in FORMAT_CASES])
@pytest.mark.parametrize("chunk_rows,threads", [(1, 1), (13, 2), (None, 1), (None, 2)])
def test_every_format_chunk_size_and_thread_count_scores_as_predict(
        lgb_model, data, tmp_path, name, opts, kind, chunk_rows, threads):
    _, model, _ = lgb_model
    d, X, Xs, _ = data
    want = model.predict(X if kind == "dense" else Xs)
    out = tmp_path / "scores.npy"
    s = score_file(model, d / name, out, chunk_rows=chunk_rows, n_threads=threads, **opts)
    got = np.load(out)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got, want)
    assert s.rows == s.written == len(X)


def test_float32_npy_scores_as_predict_on_float32(lgb_model, data, tmp_path):
    _, model, _ = lgb_model
    d, X, _, _ = data
    score_file(model, d / "rows32.npy", tmp_path / "s.npy", chunk_rows=10)
    np.testing.assert_array_equal(np.load(tmp_path / "s.npy"),
                                  model.predict(X.astype(np.float32)))


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".txt", ".npy", ".parquet"])
def test_every_output_format_reads_back_the_scores(lgb_model, data, tmp_path, suffix):
    _, model, _ = lgb_model
    d, X, _, _ = data
    want = model.predict(X)
    out = tmp_path / f"scores{suffix}"
    score_file(model, d / "rows.npy", out, chunk_rows=50)
    if suffix == ".npy":
        got = np.load(out)
    elif suffix == ".parquet":
        import pyarrow.parquet as pq
        got = pq.read_table(out).column("score").to_numpy()
    else:
        lines = out.read_text().splitlines()
        header = suffix in (".csv", ".tsv")
        assert (lines[0] == "score") == header
        got = np.array([float(v) for v in lines[header:]])
    np.testing.assert_array_equal(got, want)             # text: the shortest exact repr
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


@needs_shared
def test_libsvm_file_scores_as_lightgbm_predicting_from_the_file(tmp_path):
    """LightGBM parses the file itself: the oracle for the parser as well as the scores."""
    lgb = pytest.importorskip("lightgbm")
    X, y = read_libsvm(SHARED / "rank.train", 301, 0.0)
    group = np.loadtxt(SHARED / "rank.train.query", dtype=int)
    b = lgb.train({"objective": "lambdarank", "num_leaves": 15, "verbose": -1,
                   "min_data_in_leaf": 5}, lgb.Dataset(X, y, group=group), 20)
    b.save_model(str(tmp_path / "rank.txt"))
    model = quickscorer.load(str(tmp_path / "rank.txt"))
    want = b.predict(str(SHARED / "rank.test"))
    with open(SHARED / "rank.test", "rb") as src,\
            gzip.open(tmp_path / "rank.test.gz", "wb") as dst:
        dst.write(src.read())
    for src in (SHARED / "rank.test", tmp_path / "rank.test.gz"):
        for chunk in (None, 100):
            score_file(model, src, tmp_path / "s.npy", chunk_rows=chunk)
            np.testing.assert_array_equal(np.load(tmp_path / "s.npy"), want)


@needs_shared
def test_tsv_file_with_a_label_scores_as_lightgbm_predicting_from_the_file(tmp_path):
    lgb = pytest.importorskip("lightgbm")
    Xy = np.loadtxt(SHARED / "binary.train")
    b = lgb.train({"objective": "binary", "verbose": -1}, lgb.Dataset(Xy[:, 1:], Xy[:, 0]), 20)
    b.save_model(str(tmp_path / "b.txt"))
    assert main(["score", str(tmp_path / "b.txt"), str(SHARED / "binary.test"),
                 "--format", "tsv", "--label-column", "0", "-o", str(tmp_path / "s.npy"),
                 "-q"]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "s.npy"),
                                  b.predict(str(SHARED / "binary.test")))


@needs_shared
def test_libsvm_file_scores_as_xgboost_reading_the_file(tmp_path):
    """XGBoost reads absent entries as missing; so does the reader for its models."""
    xgb = pytest.importorskip("xgboost")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")       # XGBoost's text input is deprecated, still works
        train = xgb.DMatrix(f"{SHARED / 'rank.train'}?format=libsvm")
        train.set_group(np.loadtxt(SHARED / "rank.train.query", dtype=int))
        b = xgb.train({"objective": "rank:ndcg", "max_depth": 4}, train, 15)
        want = b.predict(xgb.DMatrix(f"{SHARED / 'rank.test'}?format=libsvm"))
    b.save_model(str(tmp_path / "x.json"))
    model = quickscorer.load(str(tmp_path / "x.json"))
    score_file(model, SHARED / "rank.test", tmp_path / "s.npy", chunk_rows=64)
    got = np.load(tmp_path / "s.npy")
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want)


def test_text_parser_reads_numbers_as_python_does(tmp_path):
    """The fast decimal path and strtod's: every double written many ways reads back exact."""
    rng = np.random.default_rng(5)
    values = np.concatenate([rng.standard_normal(300),
                             rng.standard_normal(300) * 10.0 ** rng.integers(-40, 40, 300),
                             rng.integers(-10**6, 10**6, 100).astype(float), [0.0, -0.0]])
    forms = [repr, lambda v: f"{v:.17g}", lambda v: f"{v:.3e}", lambda v: f"{v:.25f}",
             lambda v: f"{v:+.6E}"]
    texts = [f(float(v)) for v in values for f in forms]
    texts += ["1.", ".5", "-.5", "+3", "1e5", "1E+05", "0000.00125", "123456789012345678",
              "1e-320", "1e400", "-1e400", "inf", "-inf", "nan"]
    n = len(texts) // N_FEATURES * N_FEATURES
    texts = texts[:n]
    path = tmp_path / "n.csv"
    path.write_text("\r\n".join(",".join(texts[i:i + N_FEATURES])
                                for i in range(0, n, N_FEATURES)) + "\r\n")
    from quickscorer.inputs.readers import read_all
    got = read_all(path, N_FEATURES, 0.0).ravel()
    want = np.array([float(t) for t in texts])
    same = (got.view(np.int64) == want.view(np.int64)) | (np.isnan(got) & np.isnan(want))
    assert same.all(), [texts[i] for i in np.flatnonzero(~same)[:5]]


def test_libsvm_comments_blank_lines_and_crlf(lgb_model, tmp_path):
    _, model, _ = lgb_model
    path = tmp_path / "c.svm"
    path.write_bytes(b"# a comment line\r\n1 0:1.5 3:2 # trailing\r\n\r\n  \n0 qid:3 11:-4e2\n"
                     b"2")                               # the last line without a newline
    X, labels = read_libsvm(path, N_FEATURES, 0.0)
    want = np.zeros((3, N_FEATURES))
    want[0, 0], want[0, 3], want[1, 11] = 1.5, 2.0, -400.0
    np.testing.assert_array_equal(X, want)
    np.testing.assert_array_equal(labels, [1, 0, 2])


def _ranked(scores, qid, top=None):
    rows = []
    for q in np.unique(qid):
        idx = np.flatnonzero(qid == q)
        order = idx[np.argsort(-scores[idx], kind="stable")]
        rows += [(q, i, r + 1) for r, i in enumerate(order) if top is None or r < top]
    return rows


@pytest.mark.parametrize("chunk_rows", [1, 5, 64, None])
def test_rank_and_top_across_chunks(lgb_model, data, tmp_path, chunk_rows):
    _, model, _ = lgb_model
    d, X, Xs, qid = data
    scores = model.predict(Xs)
    out = tmp_path / "r.csv"
    score_file(model, d / "rows.svm", out, keep=["qid", "row"], rank=True,
               chunk_rows=chunk_rows)
    lines = out.read_text().splitlines()
    assert lines[0] == "qid,row,score,rank"
    got = np.array([[float(v) for v in line.split(",")] for line in lines[1:]])
    np.testing.assert_array_equal(got[:, 1], np.arange(len(X)))       # input order kept
    np.testing.assert_array_equal(got[:, 2], scores)
    want_rank = np.empty(len(X))
    for _q, i, r in _ranked(scores, qid):
        want_rank[i] = r
    np.testing.assert_array_equal(got[:, 3], want_rank)
    score_file(model, d / "rows.parquet", out, keep=["qid", "doc"], query_column="qid",
               top=3, rank=True, chunk_rows=chunk_rows, output_format="csv")
    lines = out.read_text().splitlines()[1:]
    want = [(f"{q}", f"d{i}", r) for q, i, r in _ranked(model.predict(X), qid, top=3)]
    assert [(ln.split(",")[0], ln.split(",")[1], int(ln.split(",")[3])) for ln in lines] == want


def test_a_query_that_comes_back_is_an_error(lgb_model, tmp_path):
    _, model, _ = lgb_model
    path = tmp_path / "q.svm"
    path.write_text("1 qid:1 0:1\n1 qid:2 0:2\n1 qid:1 0:3\n")
    with pytest.raises(InputError, match="query 1 comes back at row 3"):
        score_file(model, path, tmp_path / "o.csv", rank=True, chunk_rows=1)
    assert not list(tmp_path.glob("*o.csv*"))
    path.write_text("1 0:1\n")
    with pytest.raises(InputError, match="row 1 has no qid"):
        score_file(model, path, tmp_path / "o.csv", rank=True)
    np.savetxt(tmp_path / "q.tsv", np.ones((3, N_FEATURES)), delimiter="\t")
    with pytest.raises(InputError, match="ranking needs the queries: --query-column NAME, "
                                         "--group FILE"):
        score_file(model, tmp_path / "q.tsv", tmp_path / "o.csv", rank=True)


def _query_ranks(scores, sizes, top=None):
    """(query, row, rank) of every row, or of each query's best ``top``, best first, as a
    stable sort of each query's scores gives them."""
    out, start = [], 0
    for q, n in enumerate(sizes):
        order = start + np.argsort(-scores[start:start + n], kind="stable")
        out += [(q, int(i), r + 1) for r, i in enumerate(order) if top is None or r < top]
        start += n
    return out


@pytest.mark.parametrize("chunk_rows", [7, None])
def test_the_query_file_beside_the_data_ranks_as_lightgbm_groups_it(tmp_path, chunk_rows):
    """LightGBM's ranking data keeps each query's size in DATA.query: ``score --rank`` and
    ``--top`` find it as LightGBM does, or take ``--group FILE``; the ranks are those of a
    stable sort of LightGBM's own scores within each query."""
    from conftest import shared_data_or_skip
    lgb = pytest.importorskip("lightgbm")
    root = shared_data_or_skip()
    train = lgb.Dataset(str(root / "rank.train"), params={"verbose": -1})  # finds .query
    booster = lgb.train({"objective": "lambdarank", "num_leaves": 15, "verbose": -1,
                         "num_threads": 1}, train, 10)
    booster.save_model(str(tmp_path / "rank.txt"))
    model = quickscorer.load(str(tmp_path / "rank.txt"))
    data = tmp_path / "rank.test"
    data.write_bytes((root / "rank.test").read_bytes())
    sizes = [int(v) for v in (root / "rank.test.query").read_text().split()]
    scores = booster.predict(str(root / "rank.test"))
    with pytest.raises(InputError, match="row 1 has no qid"):       # no query file yet
        score_file(model, data, tmp_path / "o.csv", rank=True)
    (tmp_path / "rank.test.query").write_text("\n".join(map(str, sizes)) + "\n")
    score_file(model, data, tmp_path / "r.csv", rank=True, keep=["row"],
               chunk_rows=chunk_rows)
    got = np.loadtxt(tmp_path / "r.csv", delimiter=",", skiprows=1)
    np.testing.assert_array_equal(got[:, 1], scores)
    want = np.empty(len(scores))
    for _q, i, r in _query_ranks(scores, sizes):
        want[i] = r
    np.testing.assert_array_equal(got[:, 2], want)
    # the command, --top, and --group naming the file elsewhere
    (tmp_path / "sizes.txt").write_text((tmp_path / "rank.test.query").read_text())
    (tmp_path / "rank.test.query").unlink()
    assert main(["score", str(tmp_path / "rank.txt"), str(data), "--top", "3", "--keep", "row",
                 "--group", str(tmp_path / "sizes.txt"), "-o", str(tmp_path / "t.csv"),
                 "--quiet"]) == 0
    got = np.loadtxt(tmp_path / "t.csv", delimiter=",", skiprows=1)
    want = _query_ranks(scores, sizes, top=3)
    np.testing.assert_array_equal(got[:, 0], [i for _, i, _ in want])
    np.testing.assert_array_equal(got[:, 1], scores[[i for _, i, _ in want]])
    # sizes that do not add up to the rows, a bad line, and skipping lines are refused
    # before any output is left
    more = f"add up to {sum(sizes) + 5} rows; .* has {sum(sizes)}$"
    for text, message in (("\n".join(map(str, sizes[:-1])), "add up to .* has more"),
                          ("\n".join(map(str, sizes + [5])), more),
                          ("12\nten\n", "line 2 is not a number of rows")):
        (tmp_path / "bad.txt").write_text(text)
        with pytest.raises(InputError, match=message):
            score_file(model, data, tmp_path / "b.csv", rank=True, group=tmp_path / "bad.txt")
        assert not list(tmp_path.glob("*b.csv*"))
    with pytest.raises(InputError, match="skipping bad lines would move the queries"):
        score_file(model, data, tmp_path / "b.csv", rank=True, group=tmp_path / "sizes.txt",
                   on_error="skip")
    with pytest.raises(InputError, match="not both"):
        score_file(model, data, tmp_path / "b.csv", rank=True, group=tmp_path / "sizes.txt",
                   query_column="qid")


def test_header_columns_are_matched_by_name_and_checked(lgb_model, data, tmp_path):
    _, model, _ = lgb_model
    d, X, _, _ = data
    with pytest.raises(InputError, match="column 'qid' is not a feature of the model"):
        score_file(model, d / "rows.csv", tmp_path / "o.npy")
    score_file(model, d / "rows.csv", tmp_path / "o.npy", drop=["qid", "doc"])
    np.testing.assert_array_equal(np.load(tmp_path / "o.npy"), model.predict(X))
    text = (d / "rows.csv").read_text().replace("feat_7", "feat_seven", 1)
    (tmp_path / "m.csv").write_text(text)
    with pytest.raises(InputError, match="feature 'feat_7' is not among the file's columns"):
        score_file(model, tmp_path / "m.csv", tmp_path / "o.npy", drop=["qid", "doc"])
    with pytest.raises(InputError, match="'nope' is not a column of the file"):
        score_file(model, d / "rows.parquet", tmp_path / "o.csv", keep=["nope"])
    with pytest.raises(InputError, match="the file has 13 columns; the model expects 12"):
        score_file(model, d / "rows.tsv", tmp_path / "o.npy")


@pytest.mark.parametrize("content,message", [
    (b"1 0:1 3:x\n", "line 1, token 3: not a number ('3:x')"),
    (b"1 0:1\n1 0:2 zz\n", "line 2, token 3: not an index:value pair ('zz')"),
    (b"1 0:1\n\n1 40:2\n",
     "line 3, token 2: feature index outside the model's features ('40:2')"),
    (b"abc 0:1\n", "line 1, the label: not a number ('abc')"),
    (b"1 qid:x 0:1\n", "line 1, token 2: qid: without an integer ('qid:x')"),
])
def test_bad_libsvm_names_file_line_and_token(lgb_model, tmp_path, content, message):
    _, model, _ = lgb_model
    path = tmp_path / "bad.svm"
    path.write_bytes(content)
    with pytest.raises(InputError) as exc:
        score_file(model, path, tmp_path / "o.csv")
    assert str(exc.value) == f"{path}: {message}"
    assert not list(tmp_path.glob("*o.csv*"))


def test_bad_csv_names_line_and_column_and_skip_counts(lgb_model, data, tmp_path):
    _, model, _ = lgb_model
    d, X, _, _ = data
    lines = (d / "rows.csv").read_text().splitlines()
    lines[5] = lines[5].replace(",", ",oops", 3)[:]          # a bad value in a named column
    lines[9] = lines[9] + ",1"                              # one field too many
    (tmp_path / "bad.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"bad.csv: line 6, column 'feat_11': not a number"):
        score_file(model, tmp_path / "bad.csv", tmp_path / "o.npy", drop=["qid", "doc"])
    assert not (tmp_path / "o.npy").exists()
    s = score_file(model, tmp_path / "bad.csv", tmp_path / "o.npy", drop=["qid", "doc"],
                   on_error="skip", chunk_rows=3)
    assert (s.skipped, s.skipped_lines) == (2, [6, 10])
    assert "skipped 2 bad lines (6, 10)" in s.line()
    keep = np.setdiff1d(np.arange(len(X)), [4, 8])
    np.testing.assert_array_equal(np.load(tmp_path / "o.npy"), model.predict(X[keep]))
    lines = (d / "rows.csv").read_text().splitlines()
    lines[3] = lines[3] + ",1"
    (tmp_path / "bad.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match="line 4 has 15 fields, the first line 14"):
        score_file(model, tmp_path / "bad.csv", tmp_path / "o.npy", drop=["qid", "doc"])


def test_a_failed_run_leaves_the_old_output_and_no_partial_file(lgb_model, data, tmp_path):
    _, model, _ = lgb_model
    d, X, _, _ = data
    out = tmp_path / "o.csv"
    out.write_text("previous results\n")
    rows = (d / "rows.tsv").read_text().splitlines()
    rows[120] = "1\t" + "\t".join(["x"] * N_FEATURES)
    (tmp_path / "late.tsv").write_text("\n".join(rows) + "\n")
    with pytest.raises(InputError, match="line 121"):
        score_file(model, tmp_path / "late.tsv", out, label_column=0, chunk_rows=10)
    assert out.read_text() == "previous results\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["late.tsv", "o.csv"]


def test_cli_summary_progress_and_quiet(lgb_model, data, tmp_path, capsys):
    path, model, _ = lgb_model
    d, X, _, _ = data
    assert main(["score", path, str(d / "rows.npy"), "-o", str(tmp_path / "s.tsv")]) == 0
    err = capsys.readouterr().err
    assert f"scored {len(X)} rows of {d / 'rows.npy'}" in err and "rows/s" in err
    assert "\r" not in err                                   # not a terminal: no bar
    assert main(["score", path, str(d / "rows.npy"), "-q"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    np.testing.assert_array_equal([float(v) for v in out.split()], model.predict(X))


def test_progress_bar_draws_rate_and_time_left():
    import io
    stream = io.StringIO()
    bar = Progress("scoring x", enabled=True, stream=stream, interval=0.0)
    bar.update(5000, 0.25)
    text = stream.getvalue()
    assert text.startswith("\rscoring x  [######.................")
    assert "25%" in text and "5,000 rows" in text and "rows/s" in text and "left" in text
    bar.close()
    assert stream.getvalue().endswith("\r")
    quiet = io.StringIO()
    Progress("x", stream=quiet).update(1, 0.5)               # StringIO is not a terminal
    assert quiet.getvalue() == ""


def test_several_files_into_a_folder_and_output_names(lgb_model, data, tmp_path, capsys):
    path, model, _ = lgb_model
    d, X, _, _ = data
    assert output_path("a/b.svm.gz", tmp_path).name == "b.tsv"
    assert output_path(d / "rows.parquet", tmp_path).name == "rows.parquet"
    out = tmp_path / "out"
    assert main(["score", path, str(d / "rows.npy"), str(d / "rows.csv"), "--drop", "qid,doc",
                 "-o", str(out), "-q"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["rows.csv", "rows.npy"]
    np.testing.assert_array_equal(np.load(out / "rows.npy"), model.predict(X))


def test_a_cluster_run_scores_into_a_folder(lgb_model, data, capsys):
    """--dask alone (workers: one per core) asks for a cluster run, whose outputs go to a
    folder: without -o it is refused before any cluster starts."""
    path, _, _ = lgb_model
    for flag in (["--dask"], ["--scheduler", "tcp://127.0.0.1:1"]):
        assert main(["score", path, str(data[0] / "rows.npy"), *flag, "-q"]) == 2
        assert "name a folder with -o DIR" in capsys.readouterr().err


def test_folder_of_parquet_files_on_a_dask_cluster(lgb_model, data, tmp_path):
    """A real LocalCluster of two worker processes: each file's output is the bytes that one
    machine writes."""
    pytest.importorskip("distributed")
    import pyarrow.parquet as pq
    path, model, _ = lgb_model
    d, X, _, _ = data
    table = pq.read_table(d / "rows.parquet")
    src = tmp_path / "in"
    src.mkdir()
    for k in range(3):
        pq.write_table(table.slice(k * 50, 50), src / f"part-{k}.parquet")
    local = tmp_path / "local"
    assert main(["score", path, str(src), "--keep", "doc", "--drop", "qid", "-o", str(local),
                 "-q"]) == 0
    cluster = tmp_path / "cluster"
    assert main(["score", path, str(src / "*.parquet"), "--keep", "doc", "--drop", "qid",
                 "--output-format", "csv", "--dask", "2", "-o", str(cluster), "-q"]) == 0
    for k in range(3):
        got = pq.read_table(local / f"part-{k}.parquet")
        np.testing.assert_array_equal(got.column("score").to_numpy(),
                                      model.predict(X[k * 50:(k + 1) * 50]))
        lines = (cluster / f"part-{k}.csv").read_text().splitlines()
        assert lines[0] == "doc,score"
        assert [ln.split(",")[0] for ln in lines[1:]] == got.column("doc").to_pylist()
        np.testing.assert_array_equal([float(ln.split(",")[1]) for ln in lines[1:]],
                                      got.column("score").to_numpy())


def test_formats_are_found_by_content_when_the_suffix_says_nothing(lgb_model, data, tmp_path):
    from quickscorer.inputs.readers import detect_format
    d = data[0]
    for name, fmt in [("rows.svm", "libsvm"), ("rows.parquet", "parquet"),
                      ("rows.feather", "arrow"), ("rows.npy", "npy"), ("rows.tsv", "tsv"),
                      ("rows.csv", "csv")]:
        plain = tmp_path / name.replace(".", "_")
        plain.write_bytes((d / name).read_bytes())
        assert detect_format(plain) == (fmt, False)
    assert detect_format(d / "rows.svm.gz") == ("libsvm", True)
    os.rename(tmp_path / "rows_svm", tmp_path / "blob")
    with gzip.open(tmp_path / "blob2", "wb") as fh:
        fh.write((tmp_path / "blob").read_bytes())
    assert detect_format(tmp_path / "blob2") == ("libsvm", True)


def test_multiclass_columns_and_leaves(tmp_path):
    lgb = pytest.importorskip("lightgbm")
    pytest.importorskip("pyarrow", reason="the parquet extra (pyarrow) writes Parquet")
    X = _rows(600, seed=3)
    y = (np.nan_to_num(X[:, 0]) > 0).astype(int) + (np.nan_to_num(X[:, 1]) > 0.5)
    b = lgb.train({"objective": "multiclass", "num_class": 3, "num_leaves": 7, "verbose": -1},
                  lgb.Dataset(X, y), 6)
    b.save_model(str(tmp_path / "mc.txt"))
    model = quickscorer.load(str(tmp_path / "mc.txt"))
    np.save(tmp_path / "x.npy", X)
    score_file(model, tmp_path / "x.npy", tmp_path / "p.csv", chunk_rows=100)
    lines = (tmp_path / "p.csv").read_text().splitlines()
    assert lines[0] == "score_0,score_1,score_2"
    got = np.array([[float(v) for v in line.split(",")] for line in lines[1:]])
    np.testing.assert_array_equal(got, b.predict(X))
    score_file(model, tmp_path / "x.npy", tmp_path / "l.parquet", leaf=True, chunk_rows=64)
    import pyarrow.parquet as pq
    leaves = pq.read_table(tmp_path / "l.parquet")
    assert leaves.column_names == [f"leaf_{t}" for t in range(model.n_trees)]
    np.testing.assert_array_equal(np.column_stack([c.to_numpy() for c in leaves.columns]),
                                  b.predict(X, pred_leaf=True))
    score_file(model, tmp_path / "x.npy", tmp_path / "l.tsv", leaf=True, chunk_rows=64)
    rows = (tmp_path / "l.tsv").read_text().splitlines()
    assert rows[0].split("\t") == [f"leaf_{t}" for t in range(model.n_trees)]
    np.testing.assert_array_equal([[int(v) for v in r.split("\t")] for r in rows[1:]],
                                  b.predict(X, pred_leaf=True))
    # the same leaves written in slices of 2 rows (50 cells of 18 columns) read the same
    from quickscorer.outputs import TextWriter
    leaves = b.predict(X, pred_leaf=True)
    sliced = TextWriter(tmp_path / "s.tsv", "\t", True, cells=50)
    sliced.write({f"leaf_{t}": leaves[:, t] for t in range(leaves.shape[1])})
    sliced.close()
    assert (tmp_path / "s.tsv").read_text() == (tmp_path / "l.tsv").read_text()
    with pytest.raises(InputError, match="ranking needs one score per row"):
        score_file(model, tmp_path / "x.npy", tmp_path / "r.csv", rank=True)


def test_a_closed_pipe_stops_the_command_quietly(lgb_model, data):
    import subprocess
    import sys
    path, _, _ = lgb_model
    d = data[0]
    cmd = (f"{sys.executable} -m quickscorer.cli score {path} {d / 'rows.npy'} --chunk-rows 1 "
           f"| head -n 2")
    r = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=120)
    assert len(r.stdout.splitlines()) == 2
    assert "Traceback" not in r.stderr and "error" not in r.stderr
