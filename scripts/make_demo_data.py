"""Make the demo model and queries bundled in quickscorer/data (run from the repo root).

    python scripts/make_demo_data.py

Trains a small LightGBM lambdarank model on generated MSLR-shaped data
(quickscorer.data.make_ltr) and keeps a few held-out queries. Nothing is copied from
elsewhere; rerunning with the same LightGBM version rebuilds the same files.
"""
from pathlib import Path

import lightgbm as lgb
import numpy as np

from quickscorer.data import make_ltr

OUT = Path(__file__).resolve().parents[1] / "quickscorer" / "data"


def main() -> None:
    X, y, group = make_ltr(n_queries=300, min_docs=10, max_docs=120, seed=7)
    n_train_q = 290
    n_train = int(group[:n_train_q].sum())
    params = dict(objective="lambdarank", num_leaves=31, learning_rate=0.1, min_data_in_leaf=20,
                  verbose=-1, num_threads=1, seed=7, deterministic=True)
    train = lgb.Dataset(X[:n_train], y[:n_train], group=group[:n_train_q])
    booster = lgb.train(params, train, num_boost_round=100)
    OUT.mkdir(parents=True, exist_ok=True)
    booster.save_model(str(OUT / "demo_model.txt"))
    keep = group[n_train_q:n_train_q + 5]
    Xq = X[n_train:n_train + keep.sum()]
    qid = np.repeat(np.arange(1, keep.size + 1), keep)
    np.savez_compressed(OUT / "demo_queries.npz", X=Xq, labels=y[n_train:n_train + keep.sum()],
                        qid=qid)
    print(f"wrote {OUT}: {booster.num_trees()} trees, {Xq.shape[0]} documents in "
          f"{keep.size} queries")


if __name__ == "__main__":
    main()
