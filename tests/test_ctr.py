"""The CTR stage (quickscorer/ir/ctr.py, src/quickscorer/ir/_ctr.pyx) on stages built by hand,
against the rules written out in Python integers: every projection part, unknown categories,
NaN, float32 rows, and damaged arrays. tests/test_catboost_import.py checks the stage of
trained models against CatBoost itself."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

from quickscorer.errors import InputError, ModelFormatError
from quickscorer.ir import _ctr
from quickscorer.ir.cityhash import category_hash
from quickscorer.ir.ctr import (
    HASH_MULT,
    CtrColumn,
    CtrFeatures,
    Projection,
    bucket_counts,
    ctr_value,
)

M64 = (1 << 64) - 1
TEXTS = {"red": 0, "green": 1, "blue": 2, "é ö": 3}
INTS = {str(k): k for k in (0, 3, 7, 250, 4000)}


def _mix(h: int, v: int) -> int:
    return (HASH_MULT * ((h + HASH_MULT * v) & M64)) & M64


def _signed(h: int) -> int:
    return (h - (1 << 32) if h & 0x80000000 else h) & M64


def _text_of(labels: dict, x: float):
    if x != x:
        return None
    for t, n in labels.items():
        if n == x:
            return t
    return None


def _projection_hash(p: Projection, labels, row) -> int | None:
    """The rules in Python integers; None where a categorical value is no known category."""
    h = 0
    for i in p.cats:
        t = _text_of(labels[i][1], row[labels[i][0]])
        if t is None:
            return None
        h = _mix(h, _signed(category_hash(t)))
    for col, border, nan_true in p.floats:
        x = row[col]
        h = _mix(h, int(nan_true) if x != x else int(np.float32(x) > np.float32(border)))
    for i, value in p.exact:
        t = _text_of(labels[i][1], row[labels[i][0]])
        h = _mix(h, int(t is not None and category_hash(t) == value))
    return h


def _stage(rng):
    """Inputs: 0 float, 1 text category, 2 float, 3 integer category. Projections: the text
    alone, text and integer with a float test, the integer with a one-hot test of the text.
    Each table holds the hashes of about half the combinations, and random keys."""
    labels = [(1, TEXTS), (3, INTS)]
    projections = [Projection(cats=(0,)),
                   Projection(cats=(0, 1), floats=((2, 0.25, True),)),
                   Projection(cats=(1,), exact=((0, category_hash("blue")),))]
    columns = []
    for k, p in enumerate(projections):
        seen = set()
        for t in TEXTS:
            for n in INTS:
                for x in (-1.0, 1.0, np.nan):
                    row = [0.0, TEXTS[t], x, INTS[n]]
                    h = _projection_hash(p, labels, row)
                    if h is not None and rng.random() < 0.6:
                        seen.add(h)
        seen |= {int(v) for v in rng.integers(0, 1 << 63, 20, dtype=np.int64)}
        keys = np.array(sorted(seen), np.uint64)
        counts = rng.integers(0, 50, (keys.shape[0], 2))
        good, total = bucket_counts("Borders", 0, counts, 0.0)
        for prior in (0.0, 0.5):
            columns.append(CtrColumn(projection=k, keys=keys,
                                     values=ctr_value(good, total, prior, 1.0, 0.0, 15.0),
                                     unseen=float(ctr_value(0, 0, prior, 1.0, 0.0, 15.0))))
    stage = CtrFeatures(4, [c for c, _ in labels], [t for _, t in labels], projections, columns)
    return stage, labels


def _rows(rng, n: int, dtype):
    X = np.empty((n, 4))
    X[:, 0] = rng.normal(size=n)
    X[:, 1] = rng.integers(-1, 5, n)                       # -1 and 4: no known category
    X[:, 2] = rng.choice([-1.0, 0.25, 1.0, np.nan, np.float32(0.25) + 1e-12], n)
    X[:, 3] = rng.choice([0, 3, 7, 250, 4000, 5, 99999], n)   # 5, 99999: unseen integers
    X[rng.random(n) < 0.1, 1] = np.nan
    X[rng.random(n) < 0.1, 3] = np.nan
    return X.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_the_stage_computes_the_rules(dtype):
    rng = np.random.default_rng(3)
    stage, labels = _stage(rng)
    X = _rows(rng, 400, dtype)
    out = stage.apply(X)
    assert out.dtype == dtype and out.shape == (400, 4 + stage.n_columns)
    assert np.array_equal(out[:, :4], X, equal_nan=True)
    for r in range(X.shape[0]):
        row = X[r].astype(np.float64)
        for j, c in enumerate(stage.columns):
            h = _projection_hash(stage.projections[c.projection], labels, row)
            pos = np.flatnonzero(c.keys == np.uint64(h)) if h is not None else []
            want = c.values[pos[0]] if len(pos) else np.float32(c.unseen)
            assert out[r, 4 + j] == want, (r, j)


def test_threads_share_the_rows_and_give_the_same_columns():
    rng = np.random.default_rng(7)
    stage, _ = _stage(rng)
    X = _rows(rng, 1000, np.float64)
    one = stage.apply(X)
    for n_threads in (2, 3, 8):
        assert np.array_equal(stage.apply(X, n_threads), one, equal_nan=True)
    X[[700, 300], 3] = [2.5, 7.5]                      # the first by row is named
    with pytest.raises(InputError, match="holds 7.5"):
        stage.apply(X, 4)


def test_fractions_in_a_categorical_column_are_an_input_error():
    rng = np.random.default_rng(4)
    stage, _ = _stage(rng)
    X = _rows(rng, 10, np.float64)
    X[3, 3] = 7.5
    with pytest.raises(InputError, match="column 3 holds 7.5"):
        stage.apply(X)


def test_the_stage_survives_pickling():
    rng = np.random.default_rng(5)
    stage, _ = _stage(rng)
    X = _rows(rng, 50, np.float64)
    again = pickle.loads(pickle.dumps(stage))
    assert np.array_equal(again.apply(X), stage.apply(X), equal_nan=True)


def test_damaged_stages_are_refused():
    rng = np.random.default_rng(6)
    stage, _ = _stage(rng)
    a = {k: np.array(v) for k, v in stage.arrays.items()}
    _ctr.Stage(a, 4)                                         # whole: accepted

    def broken(name, change, match):
        b = {k: v.copy() for k, v in a.items()}
        b[name] = change(b[name])
        with pytest.raises(ValueError, match=match):
            _ctr.Stage(b, 4)

    def no_empty_slot(v):
        v["bucket"] = 0
        return v

    broken("cat_col", lambda v: v + 9, "categorical column")
    broken("p_cat", lambda v: v + 9, "categorical feature")
    broken("t_col", lambda v: v + 9, "column")
    broken("t_col", lambda v: np.zeros_like(v), "sizes")
    broken("t_proj", lambda v: v + 9, "projection")
    broken("t_shift", lambda v: v - 1, "power of two")
    broken("slots", no_empty_slot, "empty slot")
    broken("t_val_off", lambda v: v + len(a["val"]), "values do not cover")
    broken("cat_off", lambda v: v[::-1].copy(), "offsets")
    broken("val", lambda v: v[:1], "values do not cover")
    with pytest.raises(ValueError, match="columns"):
        _ctr.apply(_ctr.Stage(a, 4), np.zeros((2, 3)), np.zeros((2, 3 + len(a["c_unseen"]))))
    with pytest.raises(ModelFormatError, match="not an input"):
        CtrFeatures(1, [3], [INTS], [], [])
    with pytest.raises(ModelFormatError, match="sorted"):
        CtrFeatures(4, [1], [TEXTS], [Projection(cats=(0,))],
                    [CtrColumn(0, np.array([5, 2], np.uint64), np.zeros(2, np.float32), 0.0)])
