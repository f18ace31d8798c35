"""Write the legacy-format fixtures under ``tests/legacy/`` with the old releases themselves.

Run by hand, once, from the repository root (needs network access to PyPI and about 2 GB of
disk for the throwaway virtual environments)::

    python tests/legacy/make_fixtures.py [--venvs /tmp/qs-legacy-venvs] [--only xgboost-1.0.2]

For each release below it makes a virtual environment, installs that release (and a NumPy /
SciPy it runs with), and runs this same file inside it with ``--worker``. The worker trains
small models of every kind the release can make on fixed rows, saves them as that release
writes them, and stores the rows with that release's own raw scores in ``expected.npz``:

* LightGBM: ``<kind>.txt`` (``Booster.save_model``), raw scores and exit leaves;
* XGBoost up to 2.0: ``<kind>.model`` (the legacy binary format of ``save_model`` to a
  non-JSON name), its margins, and ``<kind>.json``, the same model saved as JSON by the same
  release (for 0.90, which cannot write JSON, by XGBoost 1.7.6 after loading the 0.90 file:
  the loading rules for a pre-1.0 file are the same in every later release);
* XGBoost 3.3 and later: ``<kind>.json`` and ``<kind>.ubj``, the margins, outputs, exit
  leaves, the margins of iterations 1 to 4 (``part_<kind>``) and the SHAP contributions
  (``contrib_<kind>``).

The test suite only reads these files; it never runs the old releases.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

# release -> what its virtual environment installs (old releases want an old NumPy)
RELEASES = {
    "lightgbm-2.0.12": ["lightgbm==2.0.12", "numpy==1.23.5", "scipy==1.10.1"],
    "lightgbm-2.1.2": ["lightgbm==2.1.2", "numpy==1.23.5", "scipy==1.10.1"],
    "xgboost-0.90": ["xgboost==0.90", "numpy==1.23.5", "scipy==1.10.1"],
    "xgboost-1.0.2": ["xgboost==1.0.2", "numpy==1.23.5", "scipy==1.10.1"],
    "xgboost-1.5.2": ["xgboost==1.5.2", "numpy==1.23.5", "scipy==1.10.1"],
    "xgboost-1.7.6": ["xgboost==1.7.6", "numpy==1.26.4", "scipy==1.11.4"],
    "xgboost-2.0.3": ["xgboost==2.0.3", "numpy==1.26.4", "scipy==1.11.4"],
    # JSON and UBJSON only (the legacy binary format is gone; DART is gbtree with dropout)
    "xgboost-3.3.0": ["xgboost-cpu==3.3.0", "numpy==2.5.5", "scipy==1.18.1"],
    "xgboost-3.4.1": ["xgboost-cpu==3.4.1", "numpy==2.5.5", "scipy==1.18.1"],
}
#: the Python a release's environment needs where it is not the driver's own (XGBoost 3.3 and
#: later are served to Python 3.12 and up)
PYTHONS = {"xgboost-3.3.0": "3.12", "xgboost-3.4.1": "3.12"}
#: the release that writes the JSON twins of 0.90's binary files
JSON_WRITER_FOR_OLD = "xgboost-1.7.6"


# --------------------------------------------------------------------------------------------
# worker side: runs inside an old release's virtual environment

def _rows(np, n=240, seed=7):
    """Fixed rows: column 0 holds category codes (unseen 12 and 40 too), the rest real
    values with exact zeros and NaN."""
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, 6))
    X[:, 0] = rng.randint(0, 10, n)
    X[rng.rand(n) < 0.04, 0] = 12
    X[rng.rand(n) < 0.02, 0] = 40
    X[rng.rand(*X.shape) < 0.06] = np.nan
    X[:, 1:][rng.rand(n, 5) < 0.08] = 0.0
    X[:3] = np.nan                     # rows of nothing but missing values
    X[3:5] = 0.0
    effect = np.array([2, -1, 0, 3, -2, 1, 0, -3, 2, 1], float)
    code = np.nan_to_num(X[:, 0], nan=0).astype(int) % 10
    latent = (effect[code] + np.nan_to_num(X[:, 1]) - 0.7 * np.nan_to_num(X[:, 2])
              + 0.3 * np.nan_to_num(X[:, 3]) * np.nan_to_num(X[:, 4]))
    return X, latent, rng


def _lightgbm_models(np, X, latent, rng):
    import lightgbm as lgb

    n = X.shape[0]
    group = [40] * (n // 40)
    base = dict(num_leaves=7, learning_rate=0.3, min_data_in_leaf=3, verbose=-1, seed=3,
                min_data_per_group=2, cat_smooth=1)
    kinds = {
        "regression": dict(objective="regression"),
        "binary": dict(objective="binary"),
        "multiclass": dict(objective="multiclass", num_class=3),
        "lambdarank": dict(objective="lambdarank"),
        "poisson": dict(objective="poisson"),
        "dart": dict(objective="binary", boosting="dart", drop_rate=0.5, skip_drop=0.0),
        "random_forest": dict(objective="regression", boosting="rf", bagging_freq=1,
                              bagging_fraction=0.6, feature_fraction=0.7),
        "zero_as_missing": dict(objective="regression", zero_as_missing=True),
        "leaves_255": dict(objective="regression", num_leaves=255, min_data_in_leaf=1,
                           min_sum_hessian_in_leaf=0),
        "categorical": dict(objective="regression", max_cat_to_onehot=2),
    }
    for kind, extra in kinds.items():
        params = dict(base, **extra)
        if kind == "binary" or kind == "dart":
            y = (latent > 0).astype(float)
        elif kind == "multiclass":
            y = np.digitize(latent, [-1, 1]).astype(float)
        elif kind == "lambdarank":
            y = np.digitize(latent, [-1, 0, 1, 2]).astype(float)
        elif kind == "poisson":
            y = rng.poisson(np.exp(np.clip(latent, -2, 2) / 2)).astype(float)
        else:
            y = latent
        ds = lgb.Dataset(X, y, group=group if kind == "lambdarank" else None,
                         categorical_feature=[0] if kind == "categorical" else "auto",
                         free_raw_data=False)
        rounds = 2 if kind == "leaves_255" else 6
        yield kind, lgb.train(params, ds, num_boost_round=rounds)


def _lightgbm_worker(out: Path, release: str) -> None:
    import numpy as np

    X, latent, rng = _rows(np)
    arrays = {"X": X}
    kinds = []
    for kind, booster in _lightgbm_models(np, X, latent, rng):
        path = out / f"{kind}.txt"
        booster.save_model(str(path))
        arrays[f"raw_{kind}"] = np.asarray(booster.predict(X, raw_score=True), np.float64)
        arrays[f"out_{kind}"] = np.asarray(booster.predict(X), np.float64)
        arrays[f"leaf_{kind}"] = np.asarray(booster.predict(X, pred_leaf=True), np.int64)
        kinds.append(kind)
    np.savez_compressed(out / "expected.npz", **arrays)
    (out / "kinds.json").write_text(json.dumps({"release": release, "kinds": kinds}) + "\n")


def _xgboost_models(np, X, latent, rng, version):
    import xgboost as xgb

    n = X.shape[0]
    old = version < (1, 0)
    reg = "reg:linear" if old else "reg:squarederror"
    base = dict(max_depth=3, eta=0.3, seed=3, nthread=1, base_score=0.5)
    kinds = {
        "regression": dict(objective=reg, base_score=0.3),
        "binary": dict(objective="binary:logistic", base_score=0.3),
        "logitraw": dict(objective="binary:logitraw"),
        "softprob": dict(objective="multi:softprob", num_class=3),
        "softmax": dict(objective="multi:softmax", num_class=3),
        "pairwise": dict(objective="rank:pairwise"),
        "poisson": dict(objective="count:poisson", base_score=1.5),
        "gamma": dict(objective="reg:gamma", base_score=2.0),
        "dart": dict(objective="binary:logistic", booster="dart", rate_drop=0.5,
                     skip_drop=0.0, normalize_type="forest"),
        "random_forest": dict(objective=reg, num_parallel_tree=4, subsample=0.7,
                              colsample_bynode=0.7),
        "pruned": dict(objective=reg, gamma=0.5, max_depth=5, tree_method="exact"),
        "deep_hist": dict(objective=reg, max_depth=8, tree_method="hist",
                          min_child_weight=0),
    }
    if version >= (3, 3):
        # DART as these releases train it (booster="dart" is deprecated), and categorical
        # splits on the codes of column 0
        kinds["dropout"] = dict(objective="binary:logistic", rate_drop=0.5, skip_drop=0.0,
                                normalize_type="tree")
        kinds["categorical"] = dict(objective=reg, max_cat_to_onehot=1, tree_method="hist")
    for kind, extra in kinds.items():
        params = dict(base, **extra)
        if kind in ("binary", "logitraw", "dart", "dropout"):
            y = (latent > 0).astype(float)
        elif kind in ("softprob", "softmax"):
            y = np.digitize(latent, [-1, 1]).astype(float)
        elif kind == "pairwise":
            y = np.digitize(latent, [-1, 0, 1, 2]).astype(float)
        elif kind == "poisson":
            y = rng.poisson(np.exp(np.clip(latent, -2, 2) / 2)).astype(float)
        elif kind == "gamma":
            y = np.exp(np.clip(latent, -2, 2) / 2) + 0.1
        else:
            y = latent
        cat = dict(feature_types=["c"] + ["q"] * (X.shape[1] - 1), enable_categorical=True) \
            if kind == "categorical" else {}
        dm = xgb.DMatrix(X, label=y, missing=np.nan, **cat)
        if kind == "pairwise":
            dm.set_group([40] * (n // 40))
        yield (kind, xgb.train(params, dm, num_boost_round=6),
               xgb.DMatrix(X, missing=np.nan, **cat))


def _xgboost_worker(out: Path, release: str) -> None:
    import numpy as np
    import xgboost as xgb

    version = tuple(int(p) for p in xgb.__version__.split(".")[:2])
    X, latent, rng = _rows(np)
    arrays = {"X": X}
    kinds = []
    modern = version >= (2, 1)          # no legacy binary: JSON and UBJSON
    formats = ["json", "ubj"] if modern else ["legacy binary", "json"]
    for kind, booster, dm in _xgboost_models(np, X, latent, rng, version):
        if modern:
            booster.save_model(str(out / f"{kind}.ubj"))
        else:
            booster.save_model(str(out / f"{kind}.model"))
        if version >= (1, 0):
            booster.save_model(str(out / f"{kind}.json"))
        margin = booster.predict(dm, output_margin=True)
        arrays[f"raw_{kind}"] = np.asarray(margin, np.float32)
        arrays[f"out_{kind}"] = np.asarray(booster.predict(dm), np.float32)
        if modern:
            arrays[f"leaf_{kind}"] = np.asarray(booster.predict(dm, pred_leaf=True), np.int64)
            arrays[f"part_{kind}"] = np.asarray(
                booster.predict(dm, output_margin=True, iteration_range=(1, 5)), np.float32)
            arrays[f"contrib_{kind}"] = np.asarray(booster.predict(dm, pred_contribs=True),
                                                   np.float32)
        kinds.append(kind)
    np.savez_compressed(out / "expected.npz", **arrays)
    (out / "kinds.json").write_text(json.dumps({"release": release, "kinds": kinds,
                                                "formats": formats}) + "\n")


def _json_twins_worker(folder: Path) -> None:
    """Save each ``.model`` of ``folder`` (written by a release before 1.0) as JSON."""
    import xgboost as xgb

    for path in sorted(folder.glob("*.model")):
        booster = xgb.Booster(model_file=str(path))
        booster.save_model(str(path.with_suffix(".json")))


# --------------------------------------------------------------------------------------------
# driver side

def _base_python(release: str) -> str:
    """The interpreter a release's environment is made with."""
    want = PYTHONS.get(release)
    if want is None:
        return sys.executable
    # pyenv's interpreter of that version, else one on the PATH (pyenv's shims on the PATH
    # run only the versions its settings select)
    found = next((str(p) for p in sorted(Path.home().glob(f".pyenv/versions/{want}.*/bin/python"))),
                 None) or shutil.which(f"python{want}")
    if found is None:
        raise SystemExit(f"{release} needs Python {want}, which is not on this machine")
    return found


def _venv(root: Path, release: str) -> Path:
    env = root / release
    python = env / "bin" / "python"
    if not python.exists():
        subprocess.run([_base_python(release), "-m", "venv", str(env)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps",
                        "--only-binary=:all:", *RELEASES[release]], check=True)
    return python


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venvs", default="/tmp/qs-legacy-venvs")
    parser.add_argument("--only", action="append", help="release(s) to (re)make")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--json-twins", help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.json_twins:
        _json_twins_worker(Path(args.json_twins))
        return 0
    if args.worker:
        out = HERE / args.worker
        out.mkdir(parents=True, exist_ok=True)
        for old in out.iterdir():
            old.unlink()
        if args.worker.startswith("lightgbm"):
            _lightgbm_worker(out, args.worker)
        else:
            _xgboost_worker(out, args.worker)
        return 0

    root = Path(args.venvs)
    root.mkdir(parents=True, exist_ok=True)
    for release in args.only or RELEASES:
        python = _venv(root, release)
        print(f"{release}: training and saving", flush=True)
        env = dict(os.environ, PYTHONWARNINGS="ignore", OMP_NUM_THREADS="1")
        subprocess.run([str(python), str(Path(__file__).resolve()), "--worker", release],
                       check=True, env=env)
        if release == "xgboost-0.90":
            twin = _venv(root, JSON_WRITER_FOR_OLD)
            subprocess.run([str(twin), str(Path(__file__).resolve()),
                            "--json-twins", str(HERE / release)], check=True, env=env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
