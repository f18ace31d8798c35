"""Damaged RankLib files, libraries' dumps and Solr documents give a ModelFormatError, never
another exception: random bytes changed, cut or inserted, and random fields given values of
other types, on real models of each format."""
from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

import quickscorer
from quickscorer.errors import ModelFormatError
from quickscorer.export import to_solr_ltr

lgb = pytest.importorskip("lightgbm", reason="the test extra installs lightgbm")
xgb = pytest.importorskip("xgboost", reason="the test extra installs xgboost-cpu")

VALUES = [None, True, -1, 0, 10 ** 12, 1e308, float("nan"), "x", "1||x", [], {}, [1, 2],
          {"a": 1}, "-5", 2 ** 40]


def _documents():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    X[:, 3] = rng.integers(0, 5, 300)
    y = (X[:, 0] > 0).astype(int)
    lb = lgb.train({"objective": "binary", "num_leaves": 7, "verbose": -1},
                   lgb.Dataset(X, y, categorical_feature=[3]), 3)
    xb = xgb.train({"max_depth": 3}, xgb.DMatrix(X[:, :3], y), 3)
    return {"lightgbm-dump": lb.dump_model(),
            "xgboost-dump": [json.loads(t) for t in xb.get_dump(dump_format="json")],
            "solr-ltr": json.loads(to_solr_ltr(xb))}


def _load(data, name):
    model = quickscorer.load(data, **({"n_features": 4} if name == "xgboost-dump" else {}))
    model.predict(np.zeros((2, model.n_features)))


def _paths(obj, path=()):
    yield path
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(
        obj, list) else ()
    for k, v in items:
        yield from _paths(v, path + (k,))


@pytest.mark.parametrize("name", ["lightgbm-dump", "xgboost-dump", "solr-ltr"])
def test_fields_of_other_types_are_refused_by_name(name):
    doc = _documents()[name]
    every = [p for p in _paths(doc) if p]
    rnd = random.Random(7)
    for _ in range(150):
        d = json.loads(json.dumps(doc))
        for _ in range(rnd.randint(1, 2)):
            path = rnd.choice(every)
            try:
                target = d
                for k in path[:-1]:
                    target = target[k]
                target[path[-1]] = rnd.choice(VALUES)
            except (KeyError, IndexError, TypeError):
                pass
        try:
            _load(d, name)
        except ModelFormatError:
            pass


@pytest.mark.parametrize("name", ["ranklib", "lightgbm-dump", "xgboost-dump", "solr-ltr"])
def test_damaged_bytes_are_refused_by_name(name):
    if name == "ranklib":
        data = (Path(__file__).parent / "legacy" / "ranklib-2.3" / "rf.txt").read_bytes()
    else:
        data = json.dumps(_documents()[name]).encode()
    rnd = random.Random(11)
    for _ in range(120):
        b = bytearray(data)
        for _ in range(rnd.randint(1, 4)):
            at = rnd.randrange(len(b))
            op = rnd.random()
            if op < 0.4:
                b[at] = rnd.randrange(256)
            elif op < 0.7:
                del b[at:at + rnd.randint(1, 20)]
            else:
                b[at:at] = rnd.choice([b"1e999", b'"x"', b"[", b"{", b"-", b"null",
                                       b"<split>", b"nan", b"99999999999"])
        try:
            _load(bytes(b), name)
        except ModelFormatError:
            pass
