"""scikit-learn tree estimators read through their fitted attributes.

Taken: ``DecisionTreeRegressor`` / ``DecisionTreeClassifier``, ``RandomForestRegressor`` /
``RandomForestClassifier``, ``ExtraTreesRegressor`` / ``ExtraTreesClassifier`` and
``GradientBoostingRegressor`` / ``GradientBoostingClassifier`` and
``HistGradientBoostingRegressor`` / ``HistGradientBoostingClassifier`` (one output each). The
scoring rules (docs/semantics.md, "scikit-learn"):

* a tree reads the row as float32 and sends it left where ``float32(x) <= threshold`` (a
  float64); a NaN goes to the node's ``missing_go_to_left`` side. A float64 test
  ``x <= t'`` gives the same side for every float64 ``x`` when ``t'`` is the float32 rounding
  boundary below the threshold (:func:`float32_boundary`), so the trees become trees of the
  ``plain`` family (float64 tests and sums of the row as given) and every kernel scores them;
* forests add the trees' outputs in tree order from 0.0 and divide by the number of trees
  (``average_output``); a classifier's tree outputs its leaf's class weights over their sum,
  one output per class (``predict_proba``);
* gradient boosting starts each output from the initial estimator's raw prediction and adds
  ``learning_rate * value`` stage by stage; the start is folded into the first stage's leaves
  (``start + learning_rate * value``, the same two operations in the same order), and the
  classifier's probabilities are its loss's sigmoid (two classes) or softmax;
* histogram gradient boosting compares float64 ``x <= num_threshold`` (no float32 cast),
  starts from its baseline (folded into the first iteration's leaves) and reads categorical
  columns through the encoder scikit-learn fitted before its trees (:func:`_hist_columns`).

The estimator's own arrays are read; scikit-learn is needed only to have the estimator.
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelFormatError
from ..ir.ensemble import MISSING_NAN, Ensemble, build_tree
from ..ir.float32 import float32_boundary

_FOREST = {"RandomForestRegressor", "RandomForestClassifier", "ExtraTreesRegressor",
           "ExtraTreesClassifier"}
_SINGLE = {"DecisionTreeRegressor", "DecisionTreeClassifier", "ExtraTreeRegressor",
           "ExtraTreeClassifier"}
_BOOSTING = {"GradientBoostingRegressor", "GradientBoostingClassifier"}
_HIST = {"HistGradientBoostingRegressor", "HistGradientBoostingClassifier"}
SUPPORTED = tuple(sorted(_FOREST | _SINGLE | _BOOSTING | _HIST))

#: the output transform of each inverse link of scikit-learn's losses
#: (its exp and softmax are NumPy's, whose exp has its own AVX-512 code: not libm's bits)
_LINKS = {"IdentityLink": "identity", "LogLink": "numpy_exp", "LogitLink": "sigmoid",
          "MultinomialLogit": "numpy_softmax"}

def is_sklearn_estimator(obj) -> bool:
    """Whether ``obj`` is a scikit-learn estimator (by its class's module)."""
    return type(obj).__module__.startswith("sklearn.")


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
    if name in _HIST:
        return _hist(est, name, n_features, names, source)
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
                    n_features=n_features, family="plain",
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
        transform = "sigmoid" if n_outputs == 1 else "numpy_softmax"
    return _boosted(trees, groups, n_outputs, n_features, transform, names, source)


def _boosted(trees, groups, n_outputs, n_features, transform, names, source) -> Ensemble:
    """A boosted model's ensemble: one tree an output an iteration, the start inside the
    first iteration's leaves (so ``base_score`` is 0)."""
    return Ensemble(trees=trees, tree_group=np.asarray(groups, np.int32), n_outputs=n_outputs,
                    n_features=n_features, family="plain", base_score=np.zeros(n_outputs),
                    transform=transform,
                    transform_params={"sigmoid": 1.0} if transform == "sigmoid" else {},
                    trees_per_iteration=n_outputs,
                    feature_names=None if names is None else tuple(map(str, names)),
                    source=source)


def _hist_columns(est, name: str, n_features: int):
    """Where each column the trees read comes from, and the category values of each
    categorical one. A model with categorical features encodes them first (its
    ``OrdinalEncoder`` maps each known value to its index, anything else to NaN) and puts
    them before the numerical columns; the trees read those encoded columns."""
    pre = getattr(est, "_preprocessor", None)
    is_cat = getattr(est, "is_categorical_", None)
    if is_cat is None or not np.asarray(is_cat).any():
        return np.arange(n_features), {}
    if pre is None:
        raise ModelFormatError(f"{name}: categorical features without the category encoder "
                               f"of scikit-learn 1.4 and later")
    is_cat = np.asarray(is_cat, dtype=bool)
    origin = np.concatenate([np.flatnonzero(is_cat), np.flatnonzero(~is_cat)])
    encoder = pre.named_transformers_["encoder"]
    values = {}
    for j, cats in enumerate(encoder.categories_):
        try:
            v = np.asarray(cats, dtype=np.float64)
        except (TypeError, ValueError):
            raise ModelFormatError(
                f"{name}: categorical feature {int(origin[j])} has non-numeric categories "
                f"({cats[0]!r}, ...); quickscorer scores numeric rows") from None
        v = v[~np.isnan(v)]
        bad = (v < 0) | (v >= 2.0 ** 31) | (v != np.trunc(v))
        if bad.any():
            raise ModelFormatError(
                f"{name}: categorical feature {int(origin[j])} has the category "
                f"{float(v[bad][0])!r}; categories must be integers in [0, 2**31)")
        values[j] = v
    return origin, values


def _bits(words: np.ndarray) -> np.ndarray:
    """The set bits of a bitset of 32-bit words."""
    w = np.asarray(words, dtype=np.uint32)
    return np.flatnonzero(np.unpackbits(w.view(np.uint8), bitorder="little"))


def _hist(est, name, n_features, names, source) -> Ensemble:
    """HistGradientBoosting*: each output is the baseline plus every tree in order (float64),
    the baseline folded into the first iteration's leaves; NaN follows the node's
    ``missing_go_to_left``, as do unknown categories."""
    link = type(est._loss.link).__name__
    if link not in _LINKS:
        raise ModelFormatError(f"{name}: the inverse link {link} is not supported")
    origin, cat_values = _hist_columns(est, name, n_features)
    known = {}
    if cat_values:
        known_bits, f_idx_map = est._bin_mapper.make_known_categories_bitsets()
        for j in cat_values:
            codes = _bits(known_bits[f_idx_map[j]])
            known[j] = codes[codes < cat_values[j].shape[0]]
    base = np.asarray(est._baseline_prediction, dtype=np.float64).reshape(-1)
    n_outputs = int(est.n_trees_per_iteration_)
    if base.shape != (n_outputs,):
        raise ModelFormatError(f"{name}: {base.shape[0]} baseline values for {n_outputs} "
                               f"outputs")
    trees, groups = [], []
    for i, iteration in enumerate(est._predictors):
        if len(iteration) != n_outputs:
            raise ModelFormatError(f"{name}: iteration {i} has {len(iteration)} trees for "
                                   f"{n_outputs} outputs")
        for k, predictor in enumerate(iteration):
            trees.append(_hist_tree(predictor, f"iteration {i} output {k}", origin, cat_values,
                                    known, base[k] if i == 0 else None, n_features))
            groups.append(k)
    return _boosted(trees, groups, n_outputs, n_features, _LINKS[link], names, source)


def _hist_tree(predictor, where, origin, cat_values, known, start, n_features):
    """One ``TreePredictor`` as a neutral tree. A categorical node whose missing side is the
    left one is stored with its children swapped: the neutral node then lists the known
    categories that go to scikit-learn's right, and NaN, unknown and negative values (listed
    by no node) reach scikit-learn's left through the neutral right."""
    nodes = predictor.nodes
    k = nodes.shape[0]
    leaf = nodes["is_leaf"].astype(bool)
    left = np.where(leaf, -1, nodes["left"].astype(np.int64))
    right = np.where(leaf, -1, nodes["right"].astype(np.int64))
    column = nodes["feature_idx"].astype(np.int64)
    if ((column < 0) | (column >= origin.shape[0]))[~leaf].any():
        raise ModelFormatError(f"{where}: a split feature is out of range")
    feature = np.where(leaf, 0, origin[np.where(leaf, 0, column)])
    threshold = np.where(leaf, 0.0, nodes["num_threshold"].astype(np.float64))
    default_left = nodes["missing_go_to_left"].astype(bool)
    is_cat = nodes["is_categorical"].astype(bool) & ~leaf
    categories = {}
    for n in np.flatnonzero(is_cat):
        j = int(column[n])
        if j not in cat_values:
            raise ModelFormatError(f"{where}: node {n} splits on a numerical feature as "
                                   f"categories")
        codes = _bits(predictor.raw_left_cat_bitsets[nodes["bitset_idx"][n]])
        values = cat_values[j]
        codes = codes[codes < values.shape[0]]
        if default_left[n]:
            codes = np.setdiff1d(known[j], codes)
            left[n], right[n] = right[n], left[n]
        categories[int(n)] = values[codes].astype(np.int64)
        default_left[n] = False
        threshold[n] = 0.0
    value = nodes["value"].astype(np.float64)
    if start is not None:
        value = start + value
    return build_tree(left=left, right=right, root=0, feature=feature, threshold=threshold,
                      default_left=default_left, missing_type=np.full(k, MISSING_NAN, np.int64),
                      is_categorical=is_cat, categories=categories or None, value=value,
                      cover=nodes["count"].astype(np.float64), n_features=n_features,
                      where=where)
