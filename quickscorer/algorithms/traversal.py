"""The "traversal" algorithm: the reference root-to-leaf walk (``src/quickscorer/_traversal.pyx``)."""
from __future__ import annotations

import numpy as np

from .. import _traversal
from .._forest import Forest
from ..ir.ensemble import Ensemble
from .base import Algorithm
from .forest import category_tables, node_flags


def node_arrays(ens: Ensemble) -> dict:
    """The canonical node fields of all trees, concatenated in tree order, with
    ``node_offset`` (first node of each tree) and the category bitsets of categorical nodes:
    the node table of every kernel that evaluates nodes one at a time."""
    node_offset = np.zeros(ens.n_trees + 1, np.int64)
    np.cumsum([t.n_internal for t in ens.trees], out=node_offset[1:])

    def cat(name, dtype):
        parts = [getattr(t, name) for t in ens.trees]
        return np.concatenate(parts).astype(dtype) if node_offset[-1] else np.zeros(0, dtype)

    cat_offset, cat_nwords, cat_words = category_tables(ens)
    return {
        "feature": cat("feature", np.int32),
        "threshold": cat("threshold", np.float64),
        "left": cat("left", np.int32),
        "right": cat("right", np.int32),
        "flags": (np.concatenate([node_flags(t) for t in ens.trees]) if node_offset[-1]
                  else np.zeros(0, np.uint8)),
        "cat_offset": cat_offset,
        "cat_nwords": cat_nwords,
        "cat_words": cat_words,
        "node_offset": node_offset,
    }


class Traversal(Algorithm):
    """The reference root-to-leaf walk (one node test per level)."""

    name = "traversal"
    test_vector = "node by node on the root-to-leaf path"

    def __init__(self, ens: Ensemble, forest: Forest):
        super().__init__(ens, forest)
        self._arrays = node_arrays(ens)
        self.layout = _traversal.TraversalLayout(self._arrays, ens.n_features)
