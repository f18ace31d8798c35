"""A reference line from YDF (Yggdrasil Decision Forests), whose C++ serving engines include a
QuickScorer: its own gradient-boosted model of the same shape, trained on the same kind of
data, timed by YDF's own C++ benchmark (``model.benchmark``). YDF cannot score a LightGBM or
XGBoost model, so this is a model of the same shape, not the same model: a reference line
beside ``matrix.py``, not a row of it.

    python benchmarks/ydf_reference.py                          # 1,000 trees, depth 6
    python benchmarks/ydf_reference.py --data heavy --trees 1000 --depth 6 --batch 100
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import compare as C  # noqa: E402
import workloads as W  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default="uniform", choices=W.DATA_KINDS)
    p.add_argument("--trees", type=int, default=1000)
    p.add_argument("--depth", type=int, default=6, help="6: up to 64 leaves per tree")
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    try:
        import ydf
    except ImportError:
        raise SystemExit("ydf is not installed (pip install -e '.[bench]')") from None
    path = W.CACHE / f"ydf_{args.data}_{args.trees}_d{args.depth}"
    if path.exists():
        model = ydf.load_model(str(path))
    else:
        X = W.matrix_rows(args.data, 20_000, seed=11)
        train = {f"f{j}": X[:, j] for j in range(X.shape[1])}
        train["y"] = W._matrix_target(X, 12)
        model = ydf.GradientBoostedTreesLearner(
            label="y", task=ydf.Task.REGRESSION, num_trees=args.trees, max_depth=args.depth,
            shrinkage=0.05, early_stopping="NONE", validation_ratio=0.0,
            subsample=1.0).train(train, verbose=0)
        W.CACHE.mkdir(parents=True, exist_ok=True)
        model.save(str(path))

    def n_leaves(node) -> int:
        kids = [getattr(node, k, None) for k in ("neg_child", "pos_child")]
        kids = [k for k in kids if k is not None]
        return 1 if not kids else sum(n_leaves(k) for k in kids)

    leaves = [n_leaves(model.get_tree(t).root) for t in range(min(20, args.trees))]
    Xt = W.matrix_rows(args.data, 10_000, seed=13)
    test = {f"f{j}": Xt[:, j] for j in range(Xt.shape[1])}
    result = model.benchmark(test, batch_size=args.batch, num_threads=args.threads)
    print(f"YDF {ydf.__version__}, {args.trees} trees of depth {args.depth} (leaves per tree "
          f"in the first {len(leaves)}: {min(leaves)} to {max(leaves)}), {args.data} data, "
          f"batch {args.batch}, {args.threads} thread(s); {C.machine()}")
    print(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
