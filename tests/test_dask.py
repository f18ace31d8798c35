"""quickscorer.dask on a real distributed.LocalCluster of two worker processes: the lazy
scores equal in-process predict exactly, for dask arrays and DataFrames, one output and
several, with predict's keywords; the model is one task of the graph that every partition
depends on."""
from __future__ import annotations

import numpy as np
import pytest

import quickscorer

pytest.importorskip("dask")
pytest.importorskip("distributed")
pytest.importorskip("pandas")
pytest.importorskip("pyarrow", reason="dask.dataframe reads and writes through pyarrow "
                    "(the dask extra installs it)")

import dask.array as da
import dask.dataframe as dd
import distributed
import pandas as pd
from conftest import random_ensemble, special_rows

import quickscorer.dask as qd


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=40) as cluster:
        with distributed.Client(cluster) as c:
            yield c


@pytest.fixture(scope="module")
def models():
    rng = np.random.default_rng(3)
    one = quickscorer.Model(random_ensemble(rng, "lightgbm", n_trees=30, n_features=6,
                                            p_categorical=0.0))
    three = quickscorer.Model(random_ensemble(rng, "xgboost", n_trees=30, n_outputs=3,
                                              n_features=6))
    return one, three


def test_dask_array_scores_equal_in_process_predict(client, models):
    rng = np.random.default_rng(4)
    X = special_rows(rng, 1000, 6)
    dX = da.from_array(X, chunks=(137, 3))      # column chunks are joined per block
    for model in models:
        for kw in ({}, {"raw_score": True}, {"num_iteration": 2}):
            lazy = qd.predict(model, dX, **kw)
            assert isinstance(lazy, da.Array)
            got = lazy.compute()
            np.testing.assert_array_equal(got, model.predict(X, **kw))
            assert got.dtype == model.predict(X[:1], **kw).dtype


def test_dask_dataframe_scores_equal_in_process_predict(client, models):
    rng = np.random.default_rng(5)
    X = special_rows(rng, 500, 6)
    df = pd.DataFrame(X, columns=[f"c{j}" for j in range(6)])
    ddf = dd.from_pandas(df, npartitions=4)
    one, three = models
    s = qd.predict(one, ddf).compute()
    assert isinstance(s, pd.Series) and (s.index == df.index).all()
    np.testing.assert_array_equal(s.to_numpy(), one.predict(X))
    m = qd.predict(three, ddf, raw_score=True).compute()
    assert list(m.columns) == ["score_0", "score_1", "score_2"]
    np.testing.assert_array_equal(m.to_numpy(), three.predict(X, raw_score=True))


def test_the_model_is_one_task_that_every_block_depends_on(models):
    model = models[0]
    dX = da.from_array(np.zeros((100, 6)), chunks=(10, 6))
    graph = dict(qd.predict(model, dX).__dask_graph__())
    holders = [key for key, task in graph.items() if _holds(task, model)]
    assert len(holders) == 1                     # the model is in the graph once
    blocks = [key for key in graph if isinstance(key, tuple) and key[0].startswith("_score")]
    assert len(blocks) == 10


def _holds(task, model) -> bool:
    if task is model:
        return True
    value = getattr(task, "value", None)         # dask's DataNode wrapper of a literal
    return value is model


def test_bad_inputs_are_refused(models):
    with pytest.raises(TypeError):
        qd.predict(models[0], np.zeros((3, 6)))
    with pytest.raises(quickscorer.InputError):
        qd.predict(models[0], da.zeros((10, 5), chunks=5))
