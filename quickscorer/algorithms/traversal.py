"""The "traversal" algorithm: the reference root-to-leaf walk
(``src/quickscorer/algorithms/_traversal.pyx``)."""
from __future__ import annotations

import numpy as np

from .._forest import Forest
from ..ir.ensemble import Ensemble
from ..tuning import Tuning
from . import _traversal
from .base import Algorithm
from .forest import category_tables, node_flags


def node_arrays(ens: Ensemble) -> dict:
    """The canonical node fields of all trees, concatenated in tree order, with
    ``node_offset`` (first node of each tree) and the category bitsets of categorical nodes:
    the node table of every kernel that evaluates nodes one at a time."""
    packed = ens.trees.arrays
    cat_offset, cat_nwords, cat_words = category_tables(ens)
    flags = node_flags(packed["is_categorical"], packed["default_left"], packed["missing_type"])
    return {
        "feature": np.ascontiguousarray(packed["feature"], np.int32),
        "threshold": np.ascontiguousarray(packed["threshold"], np.float64),
        "left": np.ascontiguousarray(packed["left"], np.int32),
        "right": np.ascontiguousarray(packed["right"], np.int32),
        "flags": flags,
        "cat_offset": cat_offset,
        "cat_nwords": cat_nwords,
        "cat_words": cat_words,
        "node_offset": np.ascontiguousarray(ens.trees.node_offset, np.int64),
    }


class Traversal(Algorithm):
    """The reference root-to-leaf walk (one node test per level)."""

    name = "traversal"
    test_vector = "node by node on the root-to-leaf path"

    def __init__(self, ens: Ensemble, forest: Forest, tuning: Tuning | None = None):
        super().__init__(ens, forest, tuning)
        self._arrays = node_arrays(ens)
        self.layout = _traversal.TraversalLayout(self._arrays, ens.n_features)
