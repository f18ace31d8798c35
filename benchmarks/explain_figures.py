"""The figures of docs/contributions.md: a LightGBM lambdarank model trained on the shared
ranking data (``rank.train`` of ``../shared/data/lightgbm-examples``), one test query
ranked with ``Model.rank(..., contributions=True)`` and explained with ``Model.explain``,
drawn by shap's own plots (the waterfall of the query's best document, the beeswarm of the
whole test set).

    python -m benchmarks.explain_figures

Needs the bench extra (matplotlib) and shap (the explain extra). Writes
``docs/images/ranking-waterfall.png`` and ``docs/images/ranking-beeswarm.png`` and prints the
query's ``why`` (the features that put its first document above its second).
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from benchmarks.plots import pyplot, save_png
from benchmarks.workloads import _read_libsvm, shared_dir

OUT = Path(__file__).resolve().parents[1] / "docs" / "images"


def main(argv=None) -> int:
    import lightgbm as lgb
    import shap

    import quickscorer
    plt = pyplot()
    if plt is None:
        print("matplotlib is not installed (the bench extra)", file=sys.stderr)
        return 1
    d = shared_dir()
    X, y = _read_libsvm(d / "rank.train")
    Xte, _ = _read_libsvm(d / "rank.test", n_features=X.shape[1])
    group = np.loadtxt(d / "rank.train.query", dtype=np.int64)
    sizes = np.loadtxt(d / "rank.test.query", dtype=np.int64)
    names = [f"feature_{i}" for i in range(X.shape[1])]
    booster = lgb.train({"objective": "lambdarank", "num_leaves": 31, "min_data_in_leaf": 20,
                         "verbose": -1, "seed": 1},
                        lgb.Dataset(X, y, group=group, feature_name=names), 100)
    model = quickscorer.load(booster)
    ranking = model.rank(Xte, sizes, top_k=5, contributions=True)
    q = int(np.argmax(sizes))                   # the largest test query
    best, second = ranking.query(q)[:2]
    print(f"query {q} ({sizes[q]} documents): document {best} ranks above {second} by "
          f"{ranking.scores[best] - ranking.scores[second]:.4f}; the features that did it:")
    for name, share in ranking.why(best, second, top=5):
        print(f"  {name:>12}  {share:+.4f}")
    OUT.mkdir(parents=True, exist_ok=True)
    shap.plots.waterfall(model.explain(Xte[best])[0], max_display=10, show=False)
    fig = plt.gcf()
    fig.set_size_inches(7.5, 4.8)
    fig.tight_layout()
    save_png(fig, OUT / "ranking-waterfall.png")
    shap.plots.beeswarm(model.explain(Xte), max_display=12, show=False)
    fig = plt.gcf()
    fig.set_size_inches(7.5, 5.2)
    fig.tight_layout()
    save_png(fig, OUT / "ranking-beeswarm.png")
    print(f"wrote {OUT / 'ranking-waterfall.png'} and {OUT / 'ranking-beeswarm.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
