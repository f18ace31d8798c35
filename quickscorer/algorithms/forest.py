"""What every algorithm shares: the forest arrays (leaf values, tree groups, DART weights,
linear leaves, base scores) that ``_forest.Forest`` wraps to turn exit leaves into scores, and
the encodings of node flags and category bitsets that the layouts reuse.

Every layout is a dict of plain numpy arrays (inspectable, picklable) that a Cython kernel
wraps without copying.
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelFormatError
from ..ir.ensemble import Ensemble, Tree

FAMILY_CODE = {"lightgbm": 0, "xgboost": 1}

#: a model whose category bitsets need more 32-bit words than this is refused as corrupt
MAX_CATEGORY_WORDS = 1 << 24


def node_flags(tree: Tree) -> np.ndarray:
    """Per internal node: bit 0 categorical, bit 1 default left, bits 2-3 missing type."""
    return (tree.is_categorical.astype(np.uint8)
            | (tree.default_left.astype(np.uint8) << 1)
            | (tree.missing_type.astype(np.uint8) << 2))


def category_bitset(cats: np.ndarray) -> np.ndarray:
    """32-bit words with bit c set for each category c."""
    if cats.size == 0:
        return np.zeros(0, np.uint32)
    words = np.zeros(int(cats.max()) // 32 + 1, np.uint32)
    np.bitwise_or.at(words, cats // 32, (np.uint32(1) << (cats % 32).astype(np.uint32)))
    return words


def category_tables(ens: Ensemble) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bitsets of all categorical nodes, concatenated in tree then node order.

    Returns (offset, nwords) per global internal node and the words themselves.
    """
    n_nodes = sum(t.n_internal for t in ens.trees)
    offset = np.zeros(n_nodes, np.int64)
    nwords = np.zeros(n_nodes, np.int64)
    chunks = []
    pos = 0
    g = 0
    for tree in ens.trees:
        for n in np.flatnonzero(tree.is_categorical):
            cats = tree.categories(int(n)).astype(np.int64)
            if cats.size and int(cats.max()) // 32 + 1 + pos > MAX_CATEGORY_WORDS:
                raise ModelFormatError(
                    f"categorical splits need more than {MAX_CATEGORY_WORDS} bitset words "
                    f"(largest category {int(cats.max())}); refusing an absurd model")
            words = category_bitset(cats)
            offset[g + n] = pos
            nwords[g + n] = words.size
            chunks.append(words)
            pos += words.size
        g += tree.n_internal
    words = np.concatenate(chunks) if chunks else np.zeros(1, np.uint32)
    return offset, nwords, words


def forest_arrays(ens: Ensemble) -> dict:
    """Leaf values, groups, weights, linear leaves and base scores for ``_forest.Forest``."""
    leaf_counts = np.array([t.n_leaves for t in ens.trees], np.int64)
    tree_leaf_offset = np.zeros(ens.n_trees + 1, np.int64)
    np.cumsum(leaf_counts, out=tree_leaf_offset[1:])
    leaf_value = np.concatenate([t.leaf_value for t in ens.trees]).astype(np.float64)
    a = {
        "family": FAMILY_CODE[ens.family],
        "n_features": ens.n_features,
        "tree_group": np.ascontiguousarray(ens.tree_group, np.int32),
        "tree_weight": (None if ens.tree_weight is None
                        else ens.tree_weight.astype(np.float32)),
        "tree_leaf_offset": tree_leaf_offset,
        "leaf_value": leaf_value,
        "leaf_value_f32": leaf_value.astype(np.float32),
        "base_score": np.ascontiguousarray(ens.base_score, np.float64),
        "lin_offset": None, "lin_const": None, "lin_feature": None, "lin_coeff": None,
    }
    if ens.has_linear:
        offs, consts, feats, coeffs = [np.zeros(1, np.int64)], [], [], []
        base = 0
        for t in ens.trees:
            lin = t.linear
            if lin is None:
                consts.append(t.leaf_value)
                offs.append(np.full(t.n_leaves, base, np.int64))
            else:
                consts.append(lin.const)
                offs.append(lin.offsets[1:] + base)
                feats.append(lin.feature)
                coeffs.append(lin.coeff)
                base += int(lin.offsets[-1])
        a["lin_offset"] = np.concatenate(offs).astype(np.int64)
        a["lin_const"] = np.concatenate(consts).astype(np.float64)
        a["lin_feature"] = (np.concatenate(feats) if feats else np.zeros(0)).astype(np.int32)
        a["lin_coeff"] = (np.concatenate(coeffs) if coeffs else np.zeros(0)).astype(np.float64)
    return a
