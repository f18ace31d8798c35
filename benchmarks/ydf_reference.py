"""YDF (Yggdrasil Decision Forests), whose C++ serving engines include a QuickScorer (one of
them vectorised with Highway), against this library on the same model, on one thread.

YDF cannot read a LightGBM or XGBoost model, so this script trains YDF's own gradient-boosted
regression model (cached in ``cache/``), writes its trees out as an XGBoost JSON document
(YDF's numerical condition ``x >= t`` goes to the positive child, XGBoost's ``x < t`` to the
left one: the negative child becomes the left child, the threshold stays the same float32; a
missing value goes where YDF's condition sends it), loads that with ``quickscorer.load`` and
checks our scores against YDF's own ``predict``. Then, in rounds interleaved in one process,
it times YDF's C++ serving API (``model.benchmark``, which scores a dataset already in YDF's
form, so YDF pays no conversion) and our default ``predict`` on the same float32 rows, in
calls of the batch size, one thread each (the result ``model.benchmark`` returns holds its
single-thread time only).

    python -m benchmarks.ydf_reference                          # 1,000 trees, depth 7
    python -m benchmarks.ydf_reference --data heavy --depth 6 --batch 1,100,10000
    python -m benchmarks.ydf_reference --engines all            # every YDF engine that can
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from benchmarks import compare as C
from benchmarks import workloads as W
from quickscorer.bench import Measured, interleaved


def train_ydf(data: str, trees: int, depth: int):
    import ydf
    path = W.CACHE / f"ydf_{data}_{trees}_d{depth}"
    if path.exists():
        return ydf.load_model(str(path))
    X = W.matrix_rows(data, 20_000, seed=11)
    train = {f"f{j}": X[:, j] for j in range(X.shape[1])}
    train["y"] = W._matrix_target(X, 12)
    model = ydf.GradientBoostedTreesLearner(
        label="y", task=ydf.Task.REGRESSION, num_trees=trees, max_depth=depth,
        shrinkage=0.05, early_stopping="NONE", validation_ratio=0.0,
        subsample=1.0).train(train, verbose=0)
    W.CACHE.mkdir(parents=True, exist_ok=True)
    model.save(str(path))
    return model


def _xgboost_tree(tree, column_of: dict, t: int, n_features: int) -> dict:
    """One YDF tree as an XGBoost JSON tree (nodes numbered breadth-first, as XGBoost does)."""
    left, right, cond, feat, dleft, hess, parents = [], [], [], [], [], [], []
    queue = [(tree.root, 2147483647)]
    k = 0
    while k < len(queue):
        node, parent = queue[k]
        parents.append(parent)
        hess.append(float(node.value.num_examples))
        if hasattr(node, "condition"):
            c = node.condition
            if type(c).__name__ != "NumericalHigherThanCondition":
                raise SystemExit(f"tree {t}: a {type(c).__name__}, which this converter "
                                 f"does not write")
            left.append(len(queue))
            queue.append((node.neg_child, k))
            right.append(len(queue))
            queue.append((node.pos_child, k))
            cond.append(float(np.float32(c.threshold)))
            feat.append(column_of[c.attribute])
            dleft.append(0 if c.missing else 1)
        else:
            left.append(-1)
            right.append(-1)
            cond.append(float(np.float32(node.value.value)))
            feat.append(0)
            dleft.append(0)
        k += 1
    n = len(queue)
    return {"base_weights": cond[:], "categories": [], "categories_nodes": [],
            "categories_segments": [], "categories_sizes": [], "default_left": dleft,
            "id": t, "left_children": left, "loss_changes": [0.0] * n, "parents": parents,
            "right_children": right, "split_conditions": cond, "split_indices": feat,
            "split_type": [0] * n, "sum_hessian": hess,
            "tree_param": {"num_deleted": "0", "num_feature": str(n_features),
                           "num_nodes": str(n), "size_leaf_vector": "1"}}


def as_xgboost_json(model) -> bytes:
    """The YDF regression model as an XGBoost JSON document (squared error, YDF's initial
    prediction as the base score)."""
    names = model.input_feature_names()
    column_of = {c: j for j, c in enumerate(model.input_features_col_idxs())}
    n = len(names)
    trees = [_xgboost_tree(model.get_tree(t), column_of, t, n) for t in range(model.num_trees())]
    base = float(np.asarray(model.initial_predictions(), dtype=np.float32)[0])
    doc = {"version": [3, 0, 0], "learner": {
        "attributes": {}, "feature_names": list(names), "feature_types": ["float"] * n,
        "objective": {"name": "reg:squarederror", "reg_loss_param": {"scale_pos_weight": "1"}},
        "learner_model_param": {"base_score": f"[{base:.9E}]", "boost_from_average": "1",
                                "num_class": "0", "num_feature": str(n), "num_target": "1"},
        "gradient_booster": {"name": "gbtree", "model": {
            "gbtree_model_param": {"num_parallel_tree": "1", "num_trees": str(len(trees))},
            "iteration_indptr": list(range(len(trees) + 1)), "tree_info": [0] * len(trees),
            "trees": trees, "cats": {}}}}}
    return json.dumps(doc).encode()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default="uniform", choices=W.DATA_KINDS)
    p.add_argument("--trees", type=int, default=1000)
    p.add_argument("--depth", type=int, default=7,
                   help="YDF's max_depth counts the root as depth 1: 7 gives up to 64 leaves")
    p.add_argument("--batch", default="1,100,10000", help="rows per call, comma-separated")
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds")
    p.add_argument("--seconds", type=float, default=1.0,
                   help="YDF's benchmark_duration a round (ours scores as many rows)")
    p.add_argument("--engines", default="default",
                   help="'default' (the engine YDF picks), 'all', or YDF engine names")
    args = p.parse_args(argv)
    try:
        import ydf
    except ImportError:
        raise SystemExit("ydf is not installed (pip install -e '.[bench]')") from None
    import quickscorer

    model = train_ydf(args.data, args.trees, args.depth)
    ours = quickscorer.load(as_xgboost_json(model))
    X = np.ascontiguousarray(W.matrix_rows(args.data, 10_000, seed=13), dtype=np.float32)
    ds = {name: X[:, j] for j, name in enumerate(model.input_feature_names())}
    ref = np.asarray(model.predict(ds), dtype=np.float64)
    got = np.asarray(ours.predict(X), dtype=np.float64)
    diff = float(np.max(np.abs(got - ref)))
    info = ours.info()
    print(f"YDF {ydf.__version__}, {model.num_trees()} trees, max_depth {args.depth} "
          f"({info['total_leaves'] / info['n_trees']:.1f} leaves a tree on average, at most "
          f"{info['max_leaves']}), {args.data} "
          f"rows, 1 thread; {C.machine()}")
    print(f"scores, ours against YDF's predict: max abs diff {diff:.3g} "
          f"(scores up to {np.max(np.abs(ref)):.3g}; both sum float32 leaf values)")

    engines = model.list_compatible_engines()
    if args.engines == "default":
        chosen = [None]
    elif args.engines == "all":
        chosen = list(engines)
    else:
        chosen = args.engines.split(",")
    print(f"YDF's compatible engines (YDF lists the likely fastest first): "
          f"{', '.join(engines)}")

    print("\n| batch | engine | us/doc, median | us/doc, best | ours vs it (median) |")
    print("| ---: | --- | ---: | ---: | ---: |")
    for batch in [int(b) for b in args.batch.split(",")]:
        calls = max(1, -(-10_000 // batch))
        slices = [np.ascontiguousarray(X[(k * batch) % (X.shape[0] - batch + 1):][:batch])
                  for k in range(calls)]
        for s in slices[:50]:
            ours.predict(s, n_threads=1)

        def ydf_engine(name, batch=batch):
            def run() -> Measured:
                model.force_engine(name)
                r = model.benchmark(ds, benchmark_duration=args.seconds,
                                    warmup_duration=0.2, batch_size=batch, num_threads=1)
                model.force_engine(None)
                return Measured(r.duration_per_example)
            return run

        def ours_calls(slices=slices, done=calls * batch) -> int:
            n, end = 0, time.perf_counter() + args.seconds
            while time.perf_counter() < end:
                for s in slices:
                    ours.predict(s, n_threads=1)
                n += done
            return n

        names = [name or "(the engine YDF picks)" for name in chosen] + ["ours"]
        timings = interleaved([ydf_engine(name) for name in chosen] + [ours_calls], args.rounds,
                              warmup=False)
        times = {name: [v * 1e6 for v in t.samples] for name, t in zip(names, timings)}
        mine = statistics.median(times["ours"])
        for name, v in times.items():
            med = statistics.median(v)
            ratio = "" if name == "ours" else f"{med / mine:.2f}x"
            label = "quickscorer (default predict)" if name == "ours" else f"YDF {name}"
            print(f"| {batch} | {label} | {med:.2f} | {min(v):.2f} | {ratio} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
