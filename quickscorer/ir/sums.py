"""Sums of exit leaves that no kernel carries: XGBoost's float32 sum from a per-row margin
(``base_margin``; :func:`xgboost_sum`), and RankLib's Java ``float``
(``Ensemble.leaf_sum == "ranklib"``), read in its source (``Ensemble.eval``, ``Split.eval``,
``RFRanker.eval`` of RankLib 2.3 and later).

A tree's value is its leaf's ``float`` output (read from the file by ``Float.parseFloat``)
as a ``double``; the ensemble's score is a ``float`` ``s`` to which each tree adds, in
order, ``s += leaf * weight``: the product in ``double`` (exact: two floats), ``s`` widened
to ``double``, the sum rounded to ``double`` and then to ``float``. A random forest's score
is the mean, in ``double``, of its bags' ``float`` scores. numpy's float64 and float32
operations are those of Java (IEEE 754, round to nearest, no fused multiply-add), so the
sums below are RankLib's bit for bit.
"""
from __future__ import annotations

import numpy as np

from .reference import FUSED_SUMS, fma_f32


def ranklib_sum(ens, leaves: np.ndarray) -> np.ndarray:
    """RankLib's scores, ``(n_rows, 1)`` float64, of the exit leaves ``leaves`` (rows x
    trees, in-order leaf numbers) of ``ens``."""
    values = np.asarray(ens.trees.arrays["leaf_value"], np.float64)
    offset = np.asarray(ens.trees.leaf_offset, np.int64)
    weight = (np.ones(ens.n_trees) if ens.tree_weight is None
              else np.asarray(ens.tree_weight, np.float64))
    bags = ens.bag_offsets if ens.bag_offsets is not None else np.array([0, ens.n_trees])
    total = np.zeros(leaves.shape[0], np.float64)
    for b in range(bags.shape[0] - 1):
        s = np.zeros(leaves.shape[0], np.float32)
        for t in range(int(bags[b]), int(bags[b + 1])):
            product = values[offset[t] + leaves[:, t]] * weight[t]
            s = (s.astype(np.float64) + product).astype(np.float32)
        total += s
    if ens.bag_offsets is not None:
        total /= bags.shape[0] - 1
    return (total + ens.base_score[0])[:, None]


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
