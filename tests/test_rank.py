"""Model.rank: per-query order, ranks and top_k against the training library's scores."""
import numpy as np
import pytest

import quickscorer as qs
from quickscorer import InputError
from quickscorer.ranking import rank_scores

lgb = pytest.importorskip("lightgbm", reason="the test extra installs lightgbm")
xgb = pytest.importorskip("xgboost", reason="the test extra installs xgboost-cpu")


@pytest.fixture(scope="module")
def ranker():
    rng = np.random.default_rng(7)
    sizes = rng.integers(1, 40, 30)
    X = rng.normal(size=(int(sizes.sum()), 6))
    X[rng.random(X.shape) < 0.05] = np.nan
    y = rng.integers(0, 5, X.shape[0])
    booster = lgb.train({"objective": "lambdarank", "verbose": -1, "num_leaves": 15,
                         "min_data_in_leaf": 3}, lgb.Dataset(X, y, group=sizes), 40)
    return booster, qs.load(booster), X, sizes


def expected_order(scores, sizes):
    """Per query, rows sorted by score descending, ties by row, NaN last (plain Python)."""
    out, start = [], 0
    for n in sizes:
        rows = list(range(start, start + n))
        out.append(sorted(rows, key=lambda i: (np.isnan(scores[i]),
                                               -scores[i] if not np.isnan(scores[i]) else 0, i)))
        start += n
    return out


def test_rank_orders_each_query_by_lightgbm_scores(ranker):
    booster, model, X, sizes = ranker
    r = model.rank(X, sizes)
    truth = booster.predict(X)
    assert np.array_equal(r.scores, truth)
    assert r.n_queries == len(sizes)
    for q, rows in enumerate(expected_order(truth, sizes)):
        assert r.query(q).tolist() == rows
        assert r.rank[rows].tolist() == list(range(1, len(rows) + 1))


def test_qid_and_group_give_the_same_ranking(ranker):
    _, model, X, sizes = ranker
    qid = np.repeat(np.arange(len(sizes)) * 13 + 5, sizes)
    a, b = model.rank(X, sizes), model.rank(X, qid=qid)
    assert np.array_equal(a.order, b.order) and np.array_equal(a.rank, b.rank)
    assert np.array_equal(a.offsets, b.offsets)


def test_top_k_keeps_each_querys_best_rows(ranker):
    booster, model, X, sizes = ranker
    r = model.rank(X, sizes, top_k=3)
    full = expected_order(booster.predict(X), sizes)
    assert [q.tolist() for q in r] == [rows[:3] for rows in full]
    assert np.array_equal(np.diff(r.offsets), np.minimum(sizes, 3))
    assert r.rank.max() == sizes.max()          # rank still covers every row


def test_ties_keep_input_order_and_nan_ranks_last():
    X = np.array([[0.0], [1.0], [0.0], [np.nan], [1.0]])
    booster = lgb.train({"objective": "regression", "verbose": -1, "min_data_in_leaf": 1,
                         "min_data_in_bin": 1},
                        lgb.Dataset(np.array([[0.0], [1.0]] * 10), [0.0, 1.0] * 10), 3)
    model = qs.load(booster)
    r = model.rank(X)
    s = booster.predict(X)
    assert r.order.tolist() == expected_order(s, [5])[0]
    scores = np.array([1.0, np.nan, 2.0, 1.0])
    ranked = rank_scores(scores, np.array([0]))
    assert ranked.order.tolist() == [2, 0, 3, 1]


def test_xgboost_ranking_model_with_qid():
    rng = np.random.default_rng(3)
    sizes = rng.integers(2, 20, 15)
    qid = np.repeat(np.arange(len(sizes)), sizes)
    X = rng.normal(size=(qid.shape[0], 5)).astype(np.float32)
    y = rng.integers(0, 4, qid.shape[0])
    booster = xgb.train({"objective": "rank:ndcg", "max_depth": 4},
                        xgb.DMatrix(X, y, qid=qid), 20)
    model = qs.load(booster)
    truth = booster.predict(xgb.DMatrix(X))
    r = model.rank(X, qid=qid, top_k=5)
    assert np.array_equal(r.scores, truth)
    assert [q.tolist() for q in r] == [rows[:5] for rows in expected_order(truth, sizes)]


def test_empty_queries_in_group_stay_in_place(ranker):
    _, model, X, _ = ranker
    r = model.rank(X[:5], [2, 0, 3])
    assert r.n_queries == 3 and r.query(1).size == 0
    assert sorted(r.query(0).tolist()) == [0, 1] and sorted(r.query(2).tolist()) == [2, 3, 4]


@pytest.mark.parametrize("kwargs, message", [
    ({"group": [3, 3]}, "add up to 6 rows, the input has 10"),
    ({"group": [[1, 2]]}, "1-D array of non-negative integers"),
    ({"group": [5, -1, 6]}, "non-negative"),
    ({"qid": [1] * 9}, "one query id per row (10)"),
    ({"qid": [1, 1, 2, 2, 1, 3, 3, 3, 3, 3]}, "query id 1 comes back"),
    ({"group": [10], "qid": [1] * 10}, "not both"),
    ({"top_k": 0}, "top_k must be a positive integer"),
    ({"top_k": 2.5}, "top_k must be a positive integer"),
])
def test_bad_query_arguments_name_the_problem(ranker, kwargs, message):
    _, model, X, _ = ranker
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        model.rank(X[:10], **kwargs)


def test_multiclass_model_is_refused():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(90, 3))
    booster = lgb.train({"objective": "multiclass", "num_class": 3, "verbose": -1},
                        lgb.Dataset(X, rng.integers(0, 3, 90)), 3)
    with pytest.raises(InputError, match="one output per row; this one has 3"):
        qs.load(booster).rank(X)
