"""The Java binding's test data: prepared model files of the repository's test models and, for
each, rows and the scores Python gives them, in little-endian binary (rows float32, scores
float64, leaves int32), one folder each. The JUnit tests (``ModelTest``) compare against them.
(RankLib's scores are Python's, which the suite checks against RankLib's own.)

    python src/java/test/make_fixtures.py OUT_DIR
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import quickscorer

TESTS = Path(__file__).resolve().parents[3] / "tests"
MODELS = {
    "lightgbm-binary": TESTS / "legacy" / "lightgbm-2.1.2" / "binary.txt",
    "lightgbm-multiclass": TESTS / "legacy" / "lightgbm-2.1.2" / "multiclass.txt",
    "lightgbm-categorical": TESTS / "legacy" / "lightgbm-2.1.2" / "categorical.txt",
    "xgboost-softprob": TESTS / "legacy" / "xgboost-1.7.6" / "softprob.json",
    "xgboost-dart": TESTS / "legacy" / "xgboost-1.7.6" / "dart.json",
    # RankLib's own Java float sum, as the LTR plugins' JVMs score these files
    "ranklib-lambdamart": TESTS / "legacy" / "ranklib-2.3" / "lambdamart.txt",
    "ranklib-rf": TESTS / "legacy" / "ranklib-2.3" / "rf.txt",
}


def main(out: Path) -> None:
    rng = np.random.default_rng(0)
    for name, source in MODELS.items():
        d = out / name
        d.mkdir(parents=True, exist_ok=True)
        model = quickscorer.load(source)
        model.save(d / "model.qsm")
        X = (rng.standard_normal((300, model.n_features)) * 2).astype(np.float32)
        X[rng.random(X.shape) < 0.1] = np.nan
        X[::5] = np.round(X[::5])             # category-like values
        X.astype("<f4").tofile(d / "rows.f32")
        np.asarray(model.predict(X), "<f8").tofile(d / "scores.f64")
        np.asarray(model.predict(X, raw_score=True), "<f8").tofile(d / "raw.f64")
        np.asarray(model.predict(X.astype(np.float64)), "<f8").tofile(d / "scores64.f64")
        model.predict_leaf(X).astype("<i4").tofile(d / "leaves.i32")
        print(f"{name}: {model.n_features} features, {X.shape[0]} rows")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
