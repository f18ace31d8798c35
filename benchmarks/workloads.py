"""Benchmark workloads: models and rows, generated on demand and cached under ``cache/``.

* ``ltr``: an MSLR-shaped generated ranking set (136 dense features, graded labels, queries of
  10 to 1,000 documents, :func:`quickscorer.data.make_ltr`), LightGBM lambdarank models of
  any number of trees and leaves, and an XGBoost ``rank:ndcg`` twin of the same shape (lossguide
  trees of the same number of leaves) trained on the same data.
* ``cb``: CatBoost regression models (oblivious trees, or ``Depthwise``) and ``hgb``:
  scikit-learn ``HistGradientBoostingRegressor`` models, on the matrix's rows.
* ``shared-rank``, ``shared-binary``, ``shared-multiclass``, ``shared-regression``: LightGBM
  and XGBoost models on ``../shared/data/lightgbm-examples`` (read in place; absent on a user's
  clone, where :func:`shared_dir` raises :class:`Unavailable` with the reason).

Nothing here is committed: models go to ``benchmarks/cache/`` (git-ignored).
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("QUICKSCORER_BENCH_CACHE", HERE / "cache"))
SHARED = HERE.parent.parent / "shared" / "data" / "lightgbm-examples"


class Unavailable(RuntimeError):
    """A workload that cannot be built here (missing data or library)."""


@dataclass
class Workload:
    name: str               # e.g. "ltr-1000x64"
    lgb_path: Path          # LightGBM text model
    xgb_path: Path | None   # XGBoost JSON twin (same data, same shape), if built
    X: np.ndarray           # float64 rows to score (C-contiguous)
    n_trees: int
    n_leaves: int
    #: the library that trained it, where neither LightGBM nor XGBoost did ("catboost": a JSON
    #: model with a ``.cbm`` twin; "sklearn": a pickled estimator)
    source: str | None = None


def _progress(total: int, desc: str):
    """A progress bar on a terminal; nothing when the output is a log or a pipe (a bar
    redrawn there writes a line per update)."""
    import sys
    try:
        from tqdm import tqdm
        if not sys.stderr.isatty():
            raise ImportError
        return tqdm(total=total, desc=desc, leave=False)
    except ImportError:  # tqdm is in the bench extra; without it or a terminal, no bar
        class _Null:
            def update(self, n=1): pass
            def close(self): pass
        return _Null()


def shared_dir() -> Path:
    if not SHARED.is_dir():
        raise Unavailable(f"{SHARED} is absent (the shared example data sits beside the "
                          f"repository only on the developers' machines)")
    return SHARED


def query_sizes() -> np.ndarray:
    """Documents per query of the shared ranking data (train and test: 251 queries of 1 to
    27 documents, mean 15): the call sizes of a ranking service scoring query by query."""
    d = shared_dir()
    return np.concatenate([np.loadtxt(d / f, dtype=np.int64)
                           for f in ("rank.train.query", "rank.test.query")])


def query_slices(X: np.ndarray, sizes: np.ndarray, min_rows: int) -> list[np.ndarray]:
    """Consecutive slices of X sized as ``sizes`` (cycled, wrapping around X) until at least
    ``min_rows`` rows: one round of per-query calls, C-contiguous."""
    out, row, k, done = [], 0, 0, 0
    while done < min_rows:
        n = int(sizes[k % len(sizes)])
        k += 1
        if n == 0:
            continue
        if row + n > X.shape[0]:
            row = 0
        out.append(np.ascontiguousarray(X[row:row + n]))
        row += n
        done += n
    return out


def ltr_rows(n_rows: int, seed: int = 1) -> np.ndarray:
    """``n_rows`` MSLR-shaped documents (float64), from queries not used in training."""
    from quickscorer.data import make_ltr
    X, _, _ = make_ltr(n_queries=max(4, n_rows // 150 + 2), seed=seed)
    while X.shape[0] < n_rows:
        X = np.vstack([X, X])
    return np.ascontiguousarray(X[:n_rows])


def _ltr_train():
    from quickscorer.data import make_ltr
    return make_ltr(n_queries=300, seed=0)


def _train_lightgbm(path: Path, n_trees: int, n_leaves: int, X, y, group=None,
                    objective="lambdarank", extra=None) -> None:
    import lightgbm as lgb
    params = dict(objective=objective, num_leaves=n_leaves, learning_rate=0.05,
                  min_data_in_leaf=5, max_bin=63, verbose=-1,
                  num_threads=os.cpu_count() or 1, seed=1, feature_fraction=0.8,
                  bagging_fraction=0.8, bagging_freq=1, lambdarank_truncation_level=20)
    params.update(extra or {})
    bar = _progress(n_trees, f"lightgbm {path.stem}")
    ds = lgb.Dataset(X, y, group=group, free_raw_data=False)
    booster = lgb.train(params, ds, num_boost_round=n_trees,
                        callbacks=[lambda env: bar.update(1)])
    bar.close()
    tmp = path.with_suffix(".tmp")
    booster.save_model(str(tmp))
    tmp.replace(path)


def _train_xgboost(path: Path, n_trees: int, n_leaves: int, X, y, group=None,
                   objective="rank:ndcg", extra=None) -> None:
    import xgboost as xgb

    class Bar(xgb.callback.TrainingCallback):
        def __init__(self):
            self.bar = _progress(n_trees, f"xgboost {path.stem}")

        def after_iteration(self, model, epoch, evals_log):
            self.bar.update(1)
            return False

    dtrain = xgb.DMatrix(X, label=y, missing=np.nan)
    if group is not None:
        dtrain.set_group(group)
    params = dict(objective=objective, tree_method="hist", grow_policy="lossguide",
                  max_leaves=n_leaves, max_depth=0, eta=0.05, max_bin=63,
                  nthread=os.cpu_count() or 1, seed=1, subsample=0.8, colsample_bytree=0.8,
                  min_child_weight=0.0)
    params.update(extra or {})
    cb = Bar()
    booster = xgb.train(params, dtrain, num_boost_round=n_trees, callbacks=[cb])
    cb.bar.close()
    tmp = path.with_suffix(".tmp")
    booster.save_model(str(tmp) + ".json")
    Path(str(tmp) + ".json").replace(path)


def _prefix_of_larger(path: Path, n_trees: int, n_leaves: int, stem: str = "ltr_lgb") -> None:
    """Write the LightGBM model of ``n_trees`` trees as the first trees of a larger cached model
    of the same leaves, when there is one: boosting is sequential and seeded, so those trees are
    the ones a shorter training makes, and a tree sweep needs only its largest model trained."""
    larger = sorted((int(m.group(1)), p) for p in CACHE.glob(f"{stem}_*x{n_leaves}.txt")
                    if (m := re.fullmatch(rf"{stem}_(\d+)x{n_leaves}\.txt", p.name))
                    and int(m.group(1)) > n_trees)
    if not larger:
        return
    import lightgbm as lgb
    booster = lgb.Booster(model_file=str(larger[0][1]))
    tmp = path.with_suffix(".tmp")
    booster.save_model(str(tmp), num_iteration=n_trees)
    tmp.replace(path)


def ltr(n_trees: int, n_leaves: int, n_rows: int = 10_000, xgboost: bool = True) -> Workload:
    """The learning-to-rank workload of ``n_trees`` trees of ``n_leaves`` leaves."""
    CACHE.mkdir(parents=True, exist_ok=True)
    lgb_path = CACHE / f"ltr_lgb_{n_trees}x{n_leaves}.txt"
    xgb_path = CACHE / f"ltr_xgb_{n_trees}x{n_leaves}.json"
    if not lgb_path.exists():
        _prefix_of_larger(lgb_path, n_trees, n_leaves)
    need_lgb, need_xgb = not lgb_path.exists(), xgboost and not xgb_path.exists()
    if need_lgb or need_xgb:
        X, y, group = _ltr_train()
        if need_lgb:
            _train_lightgbm(lgb_path, n_trees, n_leaves, X, y, group)
        if need_xgb:
            _train_xgboost(xgb_path, n_trees, n_leaves, X, y, group)
    return Workload(f"ltr-{n_trees}x{n_leaves}", lgb_path, xgb_path if xgboost else None,
                    ltr_rows(n_rows), n_trees, n_leaves)


def sweep(n_trees: int, n_leaves: int, n_rows: int = 10_000) -> Workload:
    """Full trees for a sweep over the number of trees: LightGBM regression on the ranking
    features with noisy graded labels (40,000 training rows). A lambdarank model stops growing
    full trees once it ranks its training queries perfectly (on ``ltr``, trees past 2,000 are
    stumps), which would make a sweep to 20,000 trees measure stumps; the noise here keeps
    every tree at ``n_leaves`` leaves."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"sweep_lgb_{n_trees}x{n_leaves}.txt"
    if not path.exists():
        _prefix_of_larger(path, n_trees, n_leaves, stem="sweep_lgb")
    if not path.exists():
        X, y, _ = _ltr_train()
        rng = np.random.default_rng(5)
        X, y = X[:40_000], y[:40_000] + rng.normal(0.0, 1.0, size=min(40_000, y.shape[0]))
        _train_lightgbm(path, n_trees, n_leaves, X, y, None, "regression",
                        {"num_threads": int(os.environ.get("QUICKSCORER_TRAIN_THREADS", "0"))
                         or os.cpu_count() or 1, "bagging_fraction": 1.0, "bagging_freq": 0})
    return Workload(f"sweep-{n_trees}x{n_leaves}", path, None, ltr_rows(n_rows), n_trees,
                    n_leaves)


def _read_tsv(path: Path):
    data = np.loadtxt(path, delimiter="\t")
    return np.ascontiguousarray(data[:, 1:]), data[:, 0]


def _read_libsvm(path: Path, n_features: int | None = None):
    """Dense rows (absent entries 0.0, as LightGBM reads them) and labels."""
    from quickscorer.inputs.files import read_libsvm
    if n_features is None:
        n_features = 1 + max(int(tok.split(":")[0]) for line in path.read_text().splitlines()
                             for tok in line.split()[1:] if ":" in tok
                             and not tok.startswith("qid"))
    X, y = read_libsvm(str(path), n_features, 0.0)
    return np.ascontiguousarray(X), y


SHARED_TASKS = {
    # name: (train file, test file, reader, lightgbm objective, xgboost objective, extra)
    "shared-rank": ("rank.train", "rank.test", "libsvm", "lambdarank", "rank:ndcg"),
    "shared-binary": ("binary.train", "binary.test", "tsv", "binary", "binary:logistic"),
    "shared-multiclass": ("multiclass.train", "multiclass.test", "tsv", "multiclass",
                          "multi:softprob"),
    "shared-regression": ("regression.train", "regression.test", "tsv", "regression",
                          "reg:squarederror"),
}


def shared(name: str, n_trees: int, n_leaves: int, xgboost: bool = True) -> Workload:
    """A model of ``n_trees`` x ``n_leaves`` on one of the shared example datasets."""
    d = shared_dir()
    train, test, reader, lgb_obj, xgb_obj = SHARED_TASKS[name]
    if reader == "libsvm":
        Xtr, ytr = _read_libsvm(d / train)
        Xte, _ = _read_libsvm(d / test, n_features=Xtr.shape[1])
        group = np.loadtxt(d / (train + ".query"), dtype=np.int64)
    else:
        Xtr, ytr = _read_tsv(d / train)
        Xte, _ = _read_tsv(d / test)
        group = None
    extra_lgb, extra_xgb = {}, {}
    if name == "shared-multiclass":
        k = int(ytr.max()) + 1
        extra_lgb, extra_xgb = {"num_class": k}, {"num_class": k}
    CACHE.mkdir(parents=True, exist_ok=True)
    lgb_path = CACHE / f"{name}_lgb_{n_trees}x{n_leaves}.txt"
    xgb_path = CACHE / f"{name}_xgb_{n_trees}x{n_leaves}.json"
    if not lgb_path.exists():
        _train_lightgbm(lgb_path, n_trees, n_leaves, Xtr, ytr, group, lgb_obj, extra_lgb)
    if xgboost and not xgb_path.exists():
        _train_xgboost(xgb_path, n_trees, n_leaves, Xtr, ytr, group, xgb_obj, extra_xgb)
    X = Xte
    while X.shape[0] < 10_000:
        X = np.vstack([X, Xte])
    return Workload(f"{name}-{n_trees}x{n_leaves}", lgb_path, xgb_path if xgboost else None,
                    np.ascontiguousarray(X[:10_000]), n_trees, n_leaves)


# --- the speed matrix (benchmarks/matrix.py): full trees on two kinds of data --------------

DATA_KINDS = ("uniform", "heavy", "missing")


def matrix_rows(kind: str, n_rows: int, n_features: int = 136, seed: int = 0) -> np.ndarray:
    """Rows of one kind: ``uniform`` values in [0, 1) with 30% exact zeros, ``heavy``:
    log-normal counts (``floor(exp(N(0, 1.5)))``, most small, a long tail, many zeros) in
    the first half of the columns and log-normal reals in the rest, as MSLR's
    query-document features are, or ``missing``: ``uniform`` with 10% of the values NaN
    (models trained on it learn a default side for missing values at every node)."""
    rng = np.random.default_rng(seed)
    if kind in ("uniform", "missing"):
        X = rng.random((n_rows, n_features))
        X[rng.random(X.shape) < 0.3] = 0.0
        if kind == "missing":
            X[rng.random(X.shape) < 0.1] = np.nan
    elif kind == "heavy":
        X = np.exp(rng.normal(0.0, 1.5, size=(n_rows, n_features)))
        half = n_features // 2
        X[:, :half] = np.floor(X[:, :half])
    else:
        raise ValueError(f"unknown data kind {kind!r}; known: {DATA_KINDS}")
    return np.ascontiguousarray(X)


def _matrix_target(X: np.ndarray, seed: int) -> np.ndarray:
    """A target that keeps trees full: a smooth signal on a few columns plus noise."""
    rng = np.random.default_rng(seed)
    z = np.log1p(np.abs(np.nan_to_num(X[:, :12])))     # a missing value counts as 0
    return z[:, :6].sum(1) - z[:, 6:].sum(1) + rng.normal(0.0, 1.0, size=X.shape[0])


def full(n_trees: int, n_leaves: int, kind: str = "uniform", n_rows: int = 10_000,
         max_depth: int | None = None, min_leaf: int = 1, n_features: int = 136,
         max_bin: int = 255) -> Workload:
    """LightGBM regression of ``n_trees`` full trees of ``n_leaves`` leaves, trained on 20,000
    rows of ``kind`` data with a noisy target (every tree grows all its leaves); scored on
    other rows of the same kind. The other settings change the shape, for models unlike the
    matrix's own: ``max_depth`` LightGBM's depth limit (300 leaves at depth 10: trees wider
    than 256 leaves, far from complete), ``min_leaf`` its ``min_data_in_leaf`` (200 on 16
    leaves: partial trees), ``n_features`` columns (20: many thresholds a feature, with
    ``max_bin`` 1023 more than a byte rank holds)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    extra = ((f"-d{max_depth}" if max_depth else "") + (f"-m{min_leaf}" if min_leaf != 1 else "")
             + (f"-f{n_features}" if n_features != 136 else "")
             + (f"-b{max_bin}" if max_bin != 255 else ""))
    stem = f"full_{kind}_lgb" + extra.replace("-", "_")
    path = CACHE / f"{stem}_{n_trees}x{n_leaves}.txt"
    if not path.exists():
        _prefix_of_larger(path, n_trees, n_leaves, stem=stem)
    if not path.exists():
        X = matrix_rows(kind, 20_000, n_features, seed=11)
        _train_lightgbm(path, n_trees, n_leaves, X, _matrix_target(X, 12), None, "regression",
                        {"min_data_in_leaf": min_leaf, "max_bin": max_bin,
                         "bagging_fraction": 1.0, "bagging_freq": 0, "feature_fraction": 1.0,
                         "max_depth": max_depth or -1})
    return Workload(f"full-{kind}-{n_trees}x{n_leaves}{extra}", path, None,
                    matrix_rows(kind, n_rows, n_features, seed=13), n_trees, n_leaves)


def xgb_depth(n_trees: int, depth: int = 6, kind: str = "uniform", n_rows: int = 10_000,
              method: str = "hist", n_features: int = 136) -> Workload:
    """An XGBoost regression model grown depth-wise to ``depth`` (6 is XGBoost's default)
    by ``tree_method`` ``method`` (``exact``, the default of XGBoost before 2.0 on small data,
    splits between any two distinct values: hundreds of distinct thresholds per feature),
    trained on 20,000 rows of ``kind`` data; the LightGBM path is unused (``lgb_path`` is
    the XGBoost model too, scored by this library as an XGBoost model). ``n_features``:
    columns of the rows (fewer: more distinct thresholds a feature)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    suffix = ("" if method == "hist" else f"_{method}") + (
        "" if n_features == 136 else f"_f{n_features}")
    path = CACHE / f"depth{depth}_{kind}_xgb_{n_trees}{suffix}.json"
    if not path.exists():
        X = matrix_rows(kind, 20_000, n_features, seed=11)
        _train_xgboost(path, n_trees, 0, X, _matrix_target(X, 12), None, "reg:squarederror",
                       {"grow_policy": "depthwise", "max_depth": depth, "max_leaves": 0,
                        "max_bin": 256, "subsample": 1.0, "colsample_bytree": 1.0,
                        "tree_method": method})
    name = (f"xgb-depth{depth}-{kind}-{n_trees}" + (f"-{method}" if method != "hist" else "")
            + (f"-f{n_features}" if n_features != 136 else ""))
    return Workload(name, path, path, matrix_rows(kind, n_rows, n_features, seed=13), n_trees,
                    1 << depth)


def categorical_rows(n_rows: int, n_cat: int, n_categories: int, seed: int) -> np.ndarray:
    """``uniform`` rows (136 columns) whose first ``n_cat`` columns hold categories
    ``0 .. n_categories - 1`` (as floats)."""
    rng = np.random.default_rng(seed)
    X = rng.random((n_rows, 136))
    X[rng.random(X.shape) < 0.3] = 0.0
    X[:, :n_cat] = rng.integers(0, n_categories, size=(n_rows, n_cat))
    return np.ascontiguousarray(X)


def categorical(n_trees: int, n_leaves: int, n_cat: int, n_categories: int,
                n_rows: int = 10_000) -> Workload:
    """LightGBM regression with categorical splits: ``n_cat`` columns of ``n_categories``
    categories each (declared ``categorical_feature``) among 136, each category with an
    effect of its own, plus a smooth signal on six numerical columns and noise; full trees
    (``min_data_in_leaf`` 1). With 2 x 8 categories about 3% of the nodes of 500 x 64
    trees split by category, with 8 x 40 about 90%."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"cat_lgb_{n_trees}x{n_leaves}_{n_cat}x{n_categories}.txt"
    if not path.exists():
        import lightgbm as lgb
        X = categorical_rows(20_000, n_cat, n_categories, 1)
        effect = np.random.default_rng(5).normal(size=(n_cat, n_categories))
        y = (sum(effect[j][X[:, j].astype(int)] for j in range(n_cat))
             + np.log1p(X[:, n_cat:n_cat + 6]).sum(1)
             + np.random.default_rng(0).normal(size=20_000))
        ds = lgb.Dataset(X, y, categorical_feature=list(range(n_cat)), free_raw_data=False)
        booster = lgb.train(dict(objective="regression", num_leaves=n_leaves,
                                 min_data_in_leaf=1, max_bin=255, learning_rate=0.05,
                                 verbose=-1, cat_smooth=1, min_data_per_group=5,
                                 max_cat_threshold=32), ds, n_trees)
        tmp = path.with_suffix(".tmp")
        booster.save_model(str(tmp))
        tmp.replace(path)
    return Workload(f"cat{n_cat}x{n_categories}-{n_trees}x{n_leaves}", path, None,
                    categorical_rows(n_rows, n_cat, n_categories, 7), n_trees, n_leaves)


def xgb_leaves(n_trees: int, n_leaves: int, kind: str = "uniform",
               n_rows: int = 10_000) -> Workload:
    """An XGBoost regression model grown leaf-wise (``grow_policy="lossguide"``, no depth
    limit) to ``n_leaves`` leaves a tree by its hist method: partial, deep trees, as
    LightGBM grows them, scored as an XGBoost model; same data as :func:`xgb_depth`."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"leaves{n_leaves}_{kind}_xgb_{n_trees}.json"
    if not path.exists():
        X = matrix_rows(kind, 20_000, seed=11)
        _train_xgboost(path, n_trees, 0, X, _matrix_target(X, 12), None, "reg:squarederror",
                       {"grow_policy": "lossguide", "max_depth": 0, "max_leaves": n_leaves,
                        "max_bin": 256, "subsample": 1.0, "colsample_bytree": 1.0,
                        "tree_method": "hist"})
    return Workload(f"xgb-leaves{n_leaves}-{kind}-{n_trees}", path, path,
                    matrix_rows(kind, n_rows, seed=13), n_trees, n_leaves)


def xgb_depth6(n_trees: int, kind: str = "uniform", n_rows: int = 10_000) -> Workload:
    """:func:`xgb_depth` at XGBoost's default depth."""
    return xgb_depth(n_trees, 6, kind, n_rows)


def catboost_model(n_trees: int, depth: int, kind: str = "uniform", n_rows: int = 10_000,
                   policy: str = "SymmetricTree", n_classes: int = 0) -> Workload:
    """A CatBoost regression model of ``n_trees`` trees of depth ``depth`` (``policy``
    ``SymmetricTree``: oblivious trees, CatBoost's default; ``Depthwise``: non-symmetric
    trees), or with ``n_classes`` a ``MultiClass`` model of the matrix target cut at its
    quantiles (one tree an iteration, a leaf value per class), trained on 20,000 rows of
    ``kind`` data; saved as JSON (what quickscorer reads) and as ``.cbm`` beside it (what
    CatBoost itself loads)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    tag = ("" if policy == "SymmetricTree" else f"_{policy.lower()}") + (
        f"_mc{n_classes}" if n_classes else "")
    path = CACHE / f"cb_{kind}_{n_trees}_d{depth}{tag}.json"
    if not path.exists():
        from catboost import CatBoostClassifier, CatBoostRegressor
        X = matrix_rows(kind, 20_000, seed=11)
        y = _matrix_target(X, 12)
        settings = dict(iterations=n_trees, depth=depth, grow_policy=policy, learning_rate=0.05,
                        verbose=0, allow_writing_files=False, random_seed=1,
                        thread_count=os.cpu_count() or 1)
        if n_classes:
            est = CatBoostClassifier(loss_function="MultiClass", **settings)
            y = np.digitize(y, np.quantile(y, np.arange(1, n_classes) / n_classes))
        else:
            est = CatBoostRegressor(**settings)
        est.fit(X, y)
        est.save_model(str(path.with_suffix(".cbm")))
        tmp = path.with_suffix(".tmp")
        est.save_model(str(tmp), format="json")
        tmp.replace(path)
    name = f"cb-d{depth}-{kind}-{n_trees}" + ("" if policy == "SymmetricTree"
                                               else f"-{policy.lower()}") + (
        f"-mc{n_classes}" if n_classes else "")
    return Workload(name, path, None, matrix_rows(kind, n_rows, seed=13), n_trees, 1 << depth,
                    source="catboost")


def hist_gb(n_trees: int, n_leaves: int, kind: str = "uniform",
            n_rows: int = 10_000) -> Workload:
    """A scikit-learn ``HistGradientBoostingRegressor`` of ``n_trees`` iterations of at most
    ``n_leaves`` leaves (no early stopping), trained on 20,000 rows of ``kind`` data, pickled."""
    import pickle
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"hgb_{kind}_{n_trees}x{n_leaves}.pkl"
    if not path.exists():
        from sklearn.ensemble import HistGradientBoostingRegressor
        X = matrix_rows(kind, 20_000, seed=11)
        est = HistGradientBoostingRegressor(max_iter=n_trees, max_leaf_nodes=n_leaves,
                                            learning_rate=0.05, early_stopping=False,
                                            min_samples_leaf=5, random_state=1)
        est.fit(X, _matrix_target(X, 12))
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(pickle.dumps(est))
        tmp.replace(path)
    return Workload(f"hgb-{kind}-{n_trees}x{n_leaves}", path, None,
                    matrix_rows(kind, n_rows, seed=13), n_trees, n_leaves, source="sklearn")


# ---- models of another number of trees, made from a cached one (load time, memory) ----

def repeated(src: Path, copies: int, dst: Path) -> Path:
    """A LightGBM text model holding the trees of ``src`` ``copies`` times."""
    if dst.exists():
        return dst
    text = src.read_text()
    head, rest = text.split("\nTree=0\n", 1)
    trees_text, tail = rest.split("\nend of trees", 1)
    blocks = ("Tree=0\n" + trees_text).split("\n\n\n")
    blocks = [b.strip("\n") for b in blocks if b.strip()]
    out = []
    for c in range(copies):
        for i, b in enumerate(blocks):
            out.append(re.sub(r"^Tree=\d+", f"Tree={c * len(blocks) + i}", b))
    head = re.sub(r"\ntree_sizes=[^\n]*", "", head)
    dst.write_text(head + "\n\n" + "\n\n\n".join(out) + "\n\n\nend of trees" + tail)
    return dst


def prefix(src: Path, n: int, dst: Path) -> Path:
    """The first ``n`` trees of ``src`` as a model file."""
    if dst.exists():
        return dst
    import lightgbm as lgb
    lgb.Booster(model_file=str(src)).save_model(str(dst), num_iteration=n)
    return dst


def xgb_variant(src: Path, n: int, dst: Path) -> Path:
    """An XGBoost JSON model of ``n`` trees: the first ones of ``src``, or its trees repeated."""
    if dst.exists():
        return dst
    doc = json.loads(src.read_text())
    model = doc["learner"]["gradient_booster"]["model"]
    trees, info = model["trees"], model["tree_info"]
    reps = -(-n // len(trees))
    new = []
    for i in range(n):
        tree = dict(trees[i % len(trees)])
        tree["id"] = i
        new.append(tree)
    model["trees"] = new
    model["tree_info"] = (info * reps)[:n]
    model["gbtree_model_param"]["num_trees"] = str(n)
    model["iteration_indptr"] = list(range(n + 1))
    dst.write_text(json.dumps(doc))
    return dst
