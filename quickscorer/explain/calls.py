"""The explanations a model gives (``Model.contributions``, ``Model.explain``): one call of
the model's request (:class:`quickscorer.request.Request`) each, shaped as the source
library and shap shape them."""
from __future__ import annotations

import numpy as np

from .contributions import feature_labels


def contributions(model, X, *, interactions: bool = False, method: str = "quadrature",
                  n_threads: int | None = 1, start_iteration: int = 0,
                  num_iteration: int | None = None,
                  iteration_range: tuple[int, int] | None = None,
                  max_bytes: int | None = None, missing=None) -> np.ndarray:
    """SHAP contributions of each feature to each row's raw score (TreeSHAP's
    path-dependent values, weighted by the training covers the model stores).

    Each row's values sum to its raw score: one column per feature, then the bias (the
    model's expected raw score), per output. For a scikit-learn forest they explain its
    prediction, the trees' mean, as ``shap`` does; for a LightGBM random forest the sum
    of its trees, as LightGBM does. The layout is the source library's:
    LightGBM's ``predict(pred_contrib=True)``, outputs side by side, ``(n_rows,
    n_outputs * (n_features + 1))`` float64; every other library's ``(n_rows,
    n_features + 1)`` for one output, ``(n_rows, n_outputs, n_features + 1)`` for more
    (XGBoost's ``pred_contribs=True``, float32, as XGBoost returns them).

    With ``interactions=True``, SHAP interaction values as XGBoost's
    ``pred_interactions=True`` gives them, for every library: ``(n_rows, n_features + 1,
    n_features + 1)``, ``(n_rows, n_outputs, n_features + 1, n_features + 1)`` for more
    outputs; entry (i, j) half the pair's interaction, each way round, the diagonal the
    feature's contribution less its row's other entries, (bias, bias) the bias. Each
    matrix sums to the row's raw score.

    Parameters
    ----------
    X : array-like of shape (n_rows, n_features) or (n_features,)
        As for :meth:`Model.predict`.
    interactions : bool
        Return the interaction values rather than the contributions.
    method : {"quadrature", "treeshap"}
        ``"quadrature"`` (default): the Shapley integral summed exactly by Gauss-Legendre
        quadrature, the fast way. ``"treeshap"``: the source library's own computation
        in its order and precision, TreeSHAP's recursion (XGBoost 3.3 and later: its
        8-point quadrature), LightGBM's and XGBoost's values bit for bit on x86-64. The
        two differ in the last bits only (docs/contributions.md).
    n_threads : int
        Threads over rows (0 or negative: all cores). Default 1.
    start_iteration, num_iteration, iteration_range
        Part of the ensemble, as for :meth:`Model.predict`.
    max_bytes : int, optional
        Interactions only: the most memory the call may take (its output and each
        thread's sums); default half the memory available when it starts.
    missing : float, optional
        A value read as missing, as for :meth:`Model.predict`.

    Raises
    ------
    ModelFormatError
        The model has no covers (its source stores none), a cover that is not positive,
        or CatBoost CTR features.
    InputError
        Interactions that would need more than ``max_bytes``: raised before anything is
        allocated, naming the sizes.
    """
    r = model.request(X, n_threads, start_iteration, num_iteration, iteration_range, missing)
    return r.contributions(interactions, method, max_bytes)


def explain(model, X, *, method: str = "quadrature", n_threads: int | None = 1,
            start_iteration: int = 0, num_iteration: int | None = None,
            iteration_range: tuple[int, int] | None = None):
    """The rows' contributions as a ``shap.Explanation``, for shap's plots
    (``shap.plots.waterfall(model.explain(X)[0])``, ``beeswarm``, ``bar``): ``values``
    (n_rows, n_features), or (n_rows, n_features, n_outputs) for several outputs;
    ``base_values`` the bias; ``data`` the rows; the model's feature names.
    Needs shap (``pip install 'quickscorer[explain]'``); arguments as for
    :meth:`Model.contributions`."""
    try:
        import shap
    except ImportError as exc:
        raise ImportError("Model.explain returns a shap.Explanation and needs shap: "
                          "pip install 'quickscorer[explain]'") from exc
    r = model.request(X, n_threads, start_iteration, num_iteration, iteration_range)
    c = r.contributions(False, method)
    F, K = model.ensemble.n_features, model.ensemble.n_outputs
    c = np.asarray(c, np.float64).reshape(r.rows.shape[0], K, F + 1)
    values, base = c[:, :, :F], c[:, :, F]
    values = values[:, 0, :] if K == 1 else np.moveaxis(values, 1, 2)
    return shap.Explanation(values=values, base_values=base[:, 0] if K == 1 else base,
                            data=np.asarray(r.rows, np.float64),
                            feature_names=feature_labels(model.feature_names, F))
