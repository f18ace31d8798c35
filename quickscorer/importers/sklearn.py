"""scikit-learn tree estimators read through their fitted attributes.

Taken: ``DecisionTreeRegressor`` / ``DecisionTreeClassifier``, ``RandomForestRegressor`` /
``RandomForestClassifier``, ``ExtraTreesRegressor`` / ``ExtraTreesClassifier`` and
``GradientBoostingRegressor`` / ``GradientBoostingClassifier`` (one output each). The scoring
rules (docs/semantics.md, "scikit-learn"):

* a tree reads the row as float32 and sends it left where ``float32(x) <= threshold`` (a
  float64); a NaN goes to the node's ``missing_go_to_left`` side. A float64 test
  ``x <= t'`` gives the same side for every float64 ``x`` when ``t'`` is the float32 rounding
  boundary below the threshold (:func:`float32_boundary`), so the trees become LightGBM-family
  trees (float64 tests and sums) and every kernel scores them;
* forests add the trees' outputs in tree order from 0.0 and divide by the number of trees
  (``average_output``); a classifier's tree outputs its leaf's class weights over their sum,
  one output per class (``predict_proba``);
* gradient boosting starts each output from the initial estimator's raw prediction and adds
  ``learning_rate * value`` stage by stage; the start is folded into the first stage's leaves
  (``start + learning_rate * value``, the same two operations in the same order), and the
  classifier's probabilities are its loss's sigmoid (two classes) or softmax.

The estimator's own arrays are read; scikit-learn is needed only to have the estimator.
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelFormatError
from ..ir.ensemble import MISSING_NAN, Ensemble, build_tree

_FOREST = {"RandomForestRegressor", "RandomForestClassifier", "ExtraTreesRegressor",
           "ExtraTreesClassifier"}
_SINGLE = {"DecisionTreeRegressor", "DecisionTreeClassifier", "ExtraTreeRegressor",
           "ExtraTreeClassifier"}
_BOOSTING = {"GradientBoostingRegressor", "GradientBoostingClassifier"}
SUPPORTED = tuple(sorted(_FOREST | _SINGLE | _BOOSTING))

#: the float32 value above FLT_MAX that rounding goes to (2 ** 128, infinity's place)
_BEYOND_MAX = 2.0 ** 128


def is_sklearn_estimator(obj) -> bool:
    """Whether ``obj`` is a scikit-learn estimator (by its class's module)."""
    return type(obj).__module__.startswith("sklearn.")


def float32_boundary(threshold: np.ndarray) -> np.ndarray:
    """Float64 thresholds ``t'`` with ``x <= t'`` exactly when ``float32(x) <= threshold``,
    for every float64 ``x`` (round to nearest, ties to even): ``T``, the largest float32 at or
    below the threshold, goes left with every ``x`` that rounds to it or below, that is up to
    the midpoint between ``T`` and the next float32, the midpoint itself included where ``T``
    is even (a tie rounds to it) and excluded where it is odd."""
    t = np.asarray(threshold, dtype=np.float64)
    with np.errstate(over="ignore"):
        low = t.astype(np.float32)
        low = np.where(low.astype(np.float64) > t, np.nextafter(low, np.float32(-np.inf)), low)
        up = np.nextafter(low, np.float32(np.inf)).astype(np.float64)
    up = np.where(np.isinf(up) & (up > 0), _BEYOND_MAX, up)
    low64 = low.astype(np.float64)
    low64 = np.where(np.isinf(low64) & (low64 < 0), -_BEYOND_MAX, low64)
    mid = (low64 + up) / 2.0              # two neighbouring float32 values: exact (+inf: +inf)
    odd = (low.view(np.uint32) & 1).astype(bool)
    return np.where(odd, np.nextafter(mid, -np.inf), mid)


def _tree(est, where: str, leaf_values: np.ndarray, n_features: int):
    """One fitted ``sklearn.tree._tree.Tree`` as a neutral tree whose leaves hold
    ``leaf_values`` (one per node; read at leaves)."""
    t = est.tree_
    left = np.asarray(t.children_left, dtype=np.int64)
    right = np.asarray(t.children_right, dtype=np.int64)
    k = left.shape[0]
    leaf = left == -1
    feature = np.where(leaf, 0, np.asarray(t.feature, dtype=np.int64))
    threshold = np.where(leaf, 0.0, np.asarray(t.threshold, dtype=np.float64))
    if np.isnan(threshold).any():
        raise ModelFormatError(f"{where}: a threshold is NaN")
    go_left = getattr(t, "missing_go_to_left", None)
    default_left = (np.zeros(k, bool) if go_left is None
                    else np.asarray(go_left).astype(bool))
    return build_tree(left=left, right=right, root=0, feature=feature,
                      threshold=float32_boundary(threshold), default_left=default_left,
                      missing_type=np.full(k, MISSING_NAN, np.int64),
                      is_categorical=np.zeros(k, bool), categories=None,
                      value=leaf_values, cover=np.asarray(t.weighted_n_node_samples,
                                                          dtype=np.float64),
                      n_features=n_features, where=where)


def _class_fractions(est) -> np.ndarray:
    """A classifier tree's leaf outputs: its value over their sum per node, as
    ``DecisionTreeClassifier.predict_proba`` divides them (nodes x classes)."""
    value = np.asarray(est.tree_.value, dtype=np.float64)[:, 0, :]
    total = value.sum(axis=1)
    total[total == 0.0] = 1.0
    return value / total[:, None]


def load_sklearn(est) -> Ensemble:
    """The neutral ensemble of a fitted scikit-learn tree estimator (module docstring)."""
    name = type(est).__name__
    if name not in SUPPORTED:
        raise ModelFormatError(f"scikit-learn {name} is not supported; supported: "
                               f"{', '.join(SUPPORTED)}")
    if not hasattr(est, "n_features_in_"):
        raise ModelFormatError(f"{name} is not fitted")
    if getattr(est, "n_outputs_", 1) != 1:          # gradient boosting has one output a stage
        raise ModelFormatError(f"{name} with {est.n_outputs_} outputs: only single-output "
                               f"estimators are supported")
    n_features = int(est.n_features_in_)
    names = getattr(est, "feature_names_in_", None)
    import sklearn
    source = {"library": "scikit-learn", "version": sklearn.__version__, "objective": name,
              "format": "estimator"}
    classifier = name.endswith("Classifier")
    if name in _BOOSTING:
        return _boosting(est, name, n_features, names, source, classifier)
    members = [est] if name in _SINGLE else list(est.estimators_)
    trees, groups = [], []
    n_outputs = len(est.classes_) if classifier else 1
    for i, m in enumerate(members):
        if classifier:
            frac = _class_fractions(m)
            if frac.shape[1] != n_outputs:
                raise ModelFormatError(f"{name} tree {i}: {frac.shape[1]} classes, the "
                                       f"estimator has {n_outputs}")
            for c in range(n_outputs):
                trees.append(_tree(m, f"tree {i}", frac[:, c], n_features))
                groups.append(c)
        else:
            value = np.asarray(m.tree_.value, dtype=np.float64)[:, 0, 0]
            trees.append(_tree(m, f"tree {i}", value, n_features))
            groups.append(0)
    return Ensemble(trees=trees, tree_group=np.asarray(groups, np.int32), n_outputs=n_outputs,
                    n_features=n_features, family="lightgbm",
                    base_score=np.zeros(n_outputs), average_output=name in _FOREST,
                    trees_per_iteration=n_outputs,
                    feature_names=None if names is None else tuple(map(str, names)),
                    source=source)


def _boosting(est, name, n_features, names, source, classifier) -> Ensemble:
    stages = np.asarray(est.estimators_, dtype=object)
    n_stages, n_outputs = stages.shape
    init = est.init_
    if not (init == "zero" or type(init).__name__ in ("DummyRegressor", "DummyClassifier")):
        raise ModelFormatError(f"{name} with init={type(init).__name__}: only the default "
                               f"initial estimator (or 'zero') gives one start for every row")
    # the start of every row: the raw prediction of the (constant) initial estimator
    start = np.asarray(est._raw_predict_init(np.zeros((1, n_features))),
                       dtype=np.float64).reshape(-1)
    if start.shape != (n_outputs,):
        raise ModelFormatError(f"{name}: {start.shape[0]} starting values for {n_outputs} "
                               f"outputs")
    rate = float(est.learning_rate)
    trees, groups = [], []
    for s in range(n_stages):
        for k in range(n_outputs):
            m = stages[s, k]
            value = rate * np.asarray(m.tree_.value, dtype=np.float64)[:, 0, 0]
            if s == 0:
                value = start[k] + value
            trees.append(_tree(m, f"stage {s} output {k}", value, n_features))
            groups.append(k)
    transform = "identity"
    if classifier:
        transform = "sigmoid" if n_outputs == 1 else "softmax"
    return Ensemble(trees=trees, tree_group=np.asarray(groups, np.int32), n_outputs=n_outputs,
                    n_features=n_features, family="lightgbm", base_score=np.zeros(n_outputs),
                    transform=transform,
                    transform_params={"sigmoid": 1.0} if transform == "sigmoid" else {},
                    trees_per_iteration=n_outputs,
                    feature_names=None if names is None else tuple(map(str, names)),
                    source=source)
