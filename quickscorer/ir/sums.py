"""Sums of exit leaves that no kernel carries: XGBoost's float32 sum from a per-row margin
(``base_margin``; :func:`xgboost_sum`), and RankLib's Java ``float``
(``Ensemble.leaf_sum == "ranklib"``), read in its source (``Ensemble.eval``, ``Split.eval``,
``RFRanker.eval`` of RankLib 2.3 and later).

A tree's value is its leaf's ``float`` output (read from the file by ``Float.parseFloat``)
as a ``double``; the ensemble's score is a ``float`` ``s`` to which each tree adds, in
order, ``s += leaf * weight``: the product in ``double`` (exact: two floats), ``s`` widened
to ``double``, the sum rounded to ``double`` and then to ``float``. A random forest's score
is the mean, in ``double``, of its bags' ``float`` scores. That sum is C
(``src/quickscorer/forest.h``'s ``qs_ranklib_score``, which the C library runs too), built
without fused multiply-adds: IEEE 754 arithmetic as Java's, RankLib's scores bit for bit.
XGBoost's margin sum below is NumPy's float32, which is XGBoost's.
"""
from __future__ import annotations

import numpy as np

from .._forest import ranklib_scores
from .reference import FUSED_SUMS, fma_f32


def ranklib_sum(ens, leaves: np.ndarray) -> np.ndarray:
    """RankLib's scores, ``(n_rows, 1)`` float64, of the exit leaves ``leaves`` (rows x
    trees, in-order leaf numbers, from the kernels) of ``ens``: forest.h's
    ``qs_ranklib_score``, the C library's too."""
    values = np.ascontiguousarray(ens.trees.arrays["leaf_value"], np.float64)
    offset = np.ascontiguousarray(ens.trees.leaf_offset, np.int64)
    weight = (np.ones(ens.n_trees) if ens.tree_weight is None
              else np.ascontiguousarray(ens.tree_weight, np.float64))
    bags = (None if ens.bag_offsets is None
            else np.ascontiguousarray(ens.bag_offsets, np.int64))
    out = ranklib_scores(values, offset, weight, bags,
                         np.ascontiguousarray(leaves, np.int32), float(ens.base_score[0]))
    return out[:, None]


def xgboost_sum(ens, leaves: np.ndarray, margin: np.ndarray) -> np.ndarray:
    """XGBoost's float32 sum of the exit leaves' values starting from each row's margin, tree
    by tree in the model's order (``base_margin`` takes ``base_score``'s place), each DART
    weight applied as the build applies it (``ir.reference.FUSED_SUMS``)."""
    out = margin.astype(np.float32)
    values = np.asarray(ens.trees.arrays["leaf_value"]).astype(np.float32)
    offset = np.asarray(ens.trees.leaf_offset, np.int64)
    weight = ens.tree_weight
    for t, g in enumerate(np.asarray(ens.tree_group).tolist()):
        v = values[offset[t] + leaves[:, t]]
        if weight is None:
            out[:, g] += v
        elif FUSED_SUMS:
            out[:, g] = fma_f32(v, np.float32(weight[t]), out[:, g])
        else:
            out[:, g] += v * np.float32(weight[t])
    return out


#: the sums by ``Ensemble.leaf_sum``
SUMS = {"ranklib": ranklib_sum}
