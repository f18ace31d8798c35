"""What the sweeps of one kernel constant share: prepared models of the same trees, one per
value of the constant, checked equal and timed interleaved on the same rows."""
from __future__ import annotations

import numpy as np

from quickscorer.bench import interleaved


def timing_args(parser, rows: str) -> None:
    """The options every sweep times with: ``--rows`` (call sizes, default ``rows``),
    ``--threads`` and ``--repeat``."""
    parser.add_argument("--rows", default=rows, help="rows per call")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=5)


def rows_of(models, X_all: np.ndarray) -> np.ndarray:
    """The workload's rows as the models take them (float32 for XGBoost's), after checking
    that every model scores the first 500 as the first model does."""
    X = X_all.astype(np.float32) if models[0].ensemble.family == "xgboost" else X_all
    first = models[0].predict_raw(X[:500], algorithm="rapidscorer")
    for m in models[1:]:
        np.testing.assert_array_equal(m.predict_raw(X[:500], algorithm="rapidscorer"), first)
    return X


def print_rows(name: str, models, X: np.ndarray, rows_list, threads: int, repeat: int) -> None:
    """For each call size of ``rows_list``, a table row: each model's fastest of ``repeat``
    interleaved rounds (of at least 20,000 rows each) in us/doc, and its ratio to the
    fastest model of the row."""
    for rows in rows_list:
        Xr = np.ascontiguousarray(X[:rows])
        calls = max(1, 20_000 // rows)

        def call(m):
            def run() -> int:
                for _ in range(calls):
                    m.predict_raw(Xr, algorithm="rapidscorer", n_threads=threads)
                return rows * calls
            return run

        best = [t.minimum * 1e6 for t in interleaved([call(m) for m in models], repeat)]
        low = min(best)
        print(f"| {name} | {rows} | "
              + " | ".join(f"{b:.2f} ({b / low:.2f}x)" for b in best) + " |", flush=True)
