"""Every kernel on many threads gives every row its own scores and leaves: the same as on one
thread, call after call. More threads than cores, so that the threads interleave inside the
row loops (a row's output pointer shared by the threads would send one row's scores to
another's place, a few rows in a call, not every call)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import random_ensemble, special_rows
from test_oblivious import oblivious_ensemble

import quickscorer

CALLS = 12


@pytest.mark.parametrize("family", ["lightgbm", "xgboost"])
@pytest.mark.parametrize("n_outputs", [1, 3])
@pytest.mark.parametrize("algorithm", quickscorer.available_algorithms())
def test_many_threads_give_each_row_its_own_scores(algorithm, family, n_outputs):
    rng = np.random.default_rng(5)
    if algorithm == "oblivious":           # it scores complete trees of one split a level
        ens = oblivious_ensemble(rng, family, n_trees=24, n_outputs=n_outputs)
    else:
        ens = random_ensemble(rng, family, n_trees=24, n_outputs=n_outputs, n_features=6,
                              max_leaves=60, p_categorical=0.0)
    model = quickscorer.Model(ens)
    X = special_rows(rng, 517, ens.n_features)
    one = model.predict_raw(X, algorithm=algorithm, n_threads=1)
    leaves = model.predict_leaf(X, algorithm=algorithm, n_threads=1)
    for call in range(CALLS):
        n_threads = (2, 3, 8)[call % 3]
        np.testing.assert_array_equal(
            model.predict_raw(X, algorithm=algorithm, n_threads=n_threads), one)
        np.testing.assert_array_equal(
            model.predict_leaf(X, algorithm=algorithm, n_threads=n_threads), leaves)


FIRST_CALL = """
import numpy as np
from conftest import random_ensemble, special_rows
from test_oblivious import oblivious_ensemble
import quickscorer
from quickscorer.ir import reference
rng = np.random.default_rng({seed})
algorithm = {algorithm!r}
ens = (oblivious_ensemble(rng, "xgboost", n_trees=14) if algorithm == "oblivious" else
       random_ensemble(rng, "xgboost", n_trees=14, n_features=6, max_leaves=200,
                       p_categorical=0.0))
X = special_rows(rng, 301, ens.n_features)
got = quickscorer.Model(ens).predict_raw(X, algorithm=algorithm, n_threads=2)
want = reference.predict_raw(ens, X).astype(np.float32)
print(int((got != want).sum()))
"""


@pytest.mark.parametrize("algorithm", quickscorer.available_algorithms())
def test_the_first_call_on_two_threads_of_a_fresh_process_scores_every_row(algorithm):
    """A process's first parallel call starts its threads together, the moment at which two
    of them most often reach the same line at once: each of a few fresh processes makes one
    such call, checked row by row against the reference traversal."""
    tests = str(Path(__file__).resolve().parent)       # where conftest imports from
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (tests, os.environ.get("PYTHONPATH", "")) if p)}
    for seed in range(4):
        code = FIRST_CALL.format(seed=seed, algorithm=algorithm)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=120, env=env)
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "0", f"process {seed}: {out.stdout.strip()} rows wrong"
