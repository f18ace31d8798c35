"""What every algorithm shares: the forest arrays (leaf values, tree groups, DART weights,
linear leaves, base scores) that ``_forest.Forest`` wraps to turn exit leaves into scores, and
the encodings of node flags and category bitsets that the layouts reuse.

Every layout is a dict of plain numpy arrays (inspectable, picklable) that a Cython kernel
wraps without copying.
"""
from __future__ import annotations

import numpy as np

from ..ir.ensemble import Ensemble

FAMILY_CODE = {"lightgbm": 0, "xgboost": 1, "plain": 2}


def node_flags(is_categorical: np.ndarray, default_left: np.ndarray,
               missing_type: np.ndarray) -> np.ndarray:
    """Per internal node: bit 0 categorical, bit 1 default left, bits 2-3 missing type."""
    return (is_categorical.astype(np.uint8)
            | (default_left.astype(np.uint8) << 1)
            | (missing_type.astype(np.uint8) << 2))


def category_bitset(cats: np.ndarray) -> np.ndarray:
    """32-bit words with bit c set for each category c."""
    if cats.size == 0:
        return np.zeros(0, np.uint32)
    words = np.zeros(int(cats.max()) // 32 + 1, np.uint32)
    np.bitwise_or.at(words, cats // 32, (np.uint32(1) << (cats % 32).astype(np.uint32)))
    return words


def listed_categories(ens: Ensemble, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The categories the nodes ``nodes`` (packed indices, categorical or not) list, all in
    one int64 array, and for each the position in ``nodes`` of the node that lists it."""
    packed = ens.trees.arrays
    if nodes.shape[0] == 0 or packed["cat_offset"] is None:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    cat_offset = np.asarray(packed["cat_offset"], np.int64)
    counts = cat_offset[nodes + 1] - cat_offset[nodes]
    owner = np.repeat(np.arange(nodes.shape[0]), counts)
    first = np.repeat(cat_offset[nodes] - np.cumsum(counts) + counts, counts)
    return (np.asarray(packed["cat_values"], np.int64)[first + np.arange(owner.shape[0])],
            owner)


def category_tables(ens: Ensemble) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bitsets of all categorical nodes, concatenated in tree then node order.

    Returns (offset, nwords) per global internal node and the words themselves.
    """
    packed = ens.trees.arrays
    n_nodes = packed["feature"].shape[0]
    offset = np.zeros(n_nodes, np.int64)
    nwords = np.zeros(n_nodes, np.int64)
    if packed["cat_offset"] is None:
        return offset, nwords, np.zeros(1, np.uint32)
    nodes = np.flatnonzero(packed["is_categorical"])
    if nodes.size == 0:
        return offset, nwords, np.zeros(1, np.uint32)
    # every listed category at once (a loop over the nodes took 0.43 s for 28,586 of them)
    cats, owner = listed_categories(ens, nodes)
    top = np.full(nodes.size, -1, np.int64)              # largest category per node (-1: none)
    np.maximum.at(top, owner, cats)
    size = top // 32 + 1
    end = np.cumsum(size)
    # at most MAX_CATEGORY_WORDS words in all: the Ensemble refused any more when it was made
    offset[nodes] = end - size
    nwords[nodes] = size
    words = np.zeros(int(end[-1]), np.uint32)
    np.bitwise_or.at(words, offset[nodes][owner] + cats // 32,
                     np.uint32(1) << (cats % 32).astype(np.uint32))
    return offset, nwords, words


def forest_arrays(ens: Ensemble) -> dict:
    """Leaf values, groups, weights, linear leaves and base scores for ``_forest.Forest``:
    views of the ensemble's own arrays where the types allow (no copy)."""
    packed = ens.trees.arrays
    leaf_value = packed["leaf_value"]
    a = {
        "family": FAMILY_CODE[ens.family],
        "n_features": ens.n_features,
        "tree_group": np.ascontiguousarray(ens.tree_group, np.int32),
        "tree_weight": (None if ens.tree_weight is None
                        else ens.tree_weight.astype(np.float32)),
        "tree_leaf_offset": np.ascontiguousarray(ens.trees.leaf_offset, np.int64),
        "leaf_value": np.ascontiguousarray(leaf_value, np.float64),
        # XGBoost models add float32 leaf values; LightGBM models never read them
        "leaf_value_f32": (leaf_value.astype(np.float32) if ens.family == "xgboost" else None),
        "base_score": np.ascontiguousarray(ens.base_score, np.float64),
        "lin_offset": None, "lin_const": None, "lin_feature": None, "lin_coeff": None,
    }
    if ens.has_linear:
        a["lin_offset"] = np.ascontiguousarray(packed["lin_offset"], np.int64)
        a["lin_const"] = np.ascontiguousarray(packed["lin_const"], np.float64)
        a["lin_feature"] = np.ascontiguousarray(packed["lin_feature"], np.int32)
        a["lin_coeff"] = np.ascontiguousarray(packed["lin_coeff"], np.float64)
    return a
