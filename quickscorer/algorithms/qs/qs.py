"""The "quickscorer" algorithm: QuickScorer's feature-wise threshold scans (Lucchese et al.,
SIGIR 2015, Algorithm 1), one document at a time, over the layout of
:mod:`~quickscorer.algorithms.qs.layout` (kernel:
``src/quickscorer/algorithms/qs/_qs.pyx``).

The layout is built once per ensemble and shared with ``vqs``
(:mod:`~quickscorer.algorithms.qs.vqs`), which scans the same arrays for groups of documents.

Legal note: QuickScorer is covered by US patent 11,106,685 (Istella/Tiscali).
"""
from __future__ import annotations

import threading
import weakref

import numpy as np

from ... import prepared
from ..._forest import Forest
from ...ir.ensemble import Ensemble
from ...tuning import Tuning
from ..base import Algorithm
from . import _qs
from .layout import kernel_arrays, quickscorer_arrays

# one QuickScorer layout per ensemble, shared by "quickscorer" and "vqs" (built once)
_LAYOUTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LAYOUTS_LOCK = threading.Lock()


def shared_layout(ens: Ensemble) -> tuple[dict, _qs.QSLayout]:
    """The QuickScorer arrays of ``ens`` that the kernels read (read-only,
    :func:`~quickscorer.algorithms.qs.layout.kernel_arrays`) and their kernel wrapper, built
    once."""
    with _LAYOUTS_LOCK:
        got = _LAYOUTS.get(ens)
        if got is None:
            arrays = prepared.built(ens, "quickscorer_arrays", (),
                                    lambda: kernel_arrays(quickscorer_arrays(ens)))
            for a in arrays.values():
                a.setflags(write=False)
            got = (arrays, _qs.QSLayout(arrays, ens.n_features, ens.n_leaves))
            _LAYOUTS[ens] = got
    return got


def expected_false_nodes(ens: Ensemble) -> float | None:
    """The nodes whose test sends a row right (those a scan pays for), summed over the trees,
    as the training rows went (the share of each node's rows that went right); None without
    covers."""
    if not ens.has_cover:
        return None
    a = ens.trees.arrays
    node_cover, leaf_cover = a["node_cover"], a["leaf_cover"]
    node_off, leaf_off = ens.trees.node_offset, ens.trees.leaf_offset
    tree_of = np.repeat(np.arange(ens.n_trees), np.diff(node_off))   # each node's tree
    first = node_off[:-1][tree_of]                                   # its tree's root
    right = a["right"].astype(np.int64)
    right_cover = np.where(right >= 0, node_cover[first + np.maximum(right, 0)],
                           leaf_cover[leaf_off[:-1][tree_of] + np.maximum(~right, 0)])
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.where(node_cover > 0, right_cover / node_cover, 0.5).sum())


class QuickScorer(Algorithm):
    """Per feature, all thresholds sorted; false nodes AND their masks into leaf bitvectors."""

    name = "quickscorer"
    test_vector = "feature-wise scans of sorted thresholds (QuickScorer)"
    small_calls = True
    # a row pays for each false node it meets (without covers, half the nodes)
    regimes = ("one_row",)

    @classmethod
    def facts(cls, ens: Ensemble, t: Tuning) -> dict:
        return {"false": expected_false_nodes(ens)}

    @classmethod
    def cost(cls, regime: str, facts, t: Tuning) -> float | None:
        if regime not in cls.regimes:
            return None
        return facts.false if facts.false is not None else 0.5 * facts.nodes

    def __init__(self, ens: Ensemble, forest: Forest, tuning: Tuning | None = None):
        super().__init__(ens, forest, tuning)
        self._arrays, self.layout = shared_layout(ens)
        self._words = int(self._arrays["tree_word_offsets"][-1])
