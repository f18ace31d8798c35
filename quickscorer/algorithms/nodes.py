"""Facts about the nodes of an ensemble that several algorithms' layouts use: each node's
level and position in its tree, and how a categorical node is decided from a value's byte
code (the code ``_forest.pxd``'s ``category_code`` gives: the category itself below
``CAT_CODES``, ``CAT_NONE`` where the value names no category below it, ``CAT_NAN`` for NaN).
The walk, RapidScorer's layouts and the automatic choice read them; none of them owns them.
"""
from __future__ import annotations

import numpy as np

from .. import _forest
from ..ir.ensemble import Ensemble
from .forest import listed_categories

#: a categorical slot's byte code of a value (_forest.pxd's category_code, which the kernels
#: run): the category itself below CAT_CODES, CAT_NONE where the value names no category
#: below it (negative, too large, infinite: no split lists it), CAT_NAN for NaN
CAT_CODES, CAT_NONE, CAT_NAN = _forest.CATEGORY_CODES

def coded_categorical(ens: Ensemble, nodes: np.ndarray) -> np.ndarray:
    """Which of the nodes ``nodes`` (packed indices) are categorical splits whose listed
    categories are all below CAT_CODES (those a code decides: :func:`codes_going_left`)."""
    if nodes.shape[0] == 0 or not ens.has_categorical:
        return np.zeros(nodes.shape[0], bool)
    listed, owner = listed_categories(ens, nodes)
    top = np.full(nodes.shape[0], -1, np.int64)      # the largest listed category
    np.maximum.at(top, owner, listed)
    return np.asarray(ens.trees.arrays["is_categorical"], bool)[nodes] & (top < CAT_CODES)

def codes_going_left(ens: Ensemble, nodes: np.ndarray) -> np.ndarray:
    """For the categorical nodes ``nodes`` (packed indices) whose categories are all below
    CAT_CODES, which of the 256 codes (``CAT_*``) go left: the listed categories, and NaN
    where the node's default side is left. Shape (len(nodes), 256), bool."""
    packed = ens.trees.arrays
    listed, owner = listed_categories(ens, nodes)
    left = np.zeros((nodes.shape[0], 256), bool)
    left[owner, listed] = True
    left[:, CAT_NONE] = False
    left[:, CAT_NAN] = np.asarray(packed["default_left"], bool)[nodes]
    return left

def node_levels(ens: Ensemble, max_depth: int):
    """Every node's and every leaf's level and position in it, over all trees (packed
    order): the root is level 0, position 0; the children of position ``p`` are ``2 p``
    (left) and ``2 p + 1``. Returns ``(level, pos, leaf_level, leaf_pos)`` (int64); raises
    ValueError for a tree deeper than ``max_depth`` or a node no root reaches."""
    packed = ens.trees.arrays
    node_offset = np.asarray(ens.trees.node_offset, np.int64)
    leaf_offset = np.asarray(ens.trees.leaf_offset, np.int64)
    n_nodes = int(node_offset[-1])
    left = np.asarray(packed["left"], np.int64)
    right = np.asarray(packed["right"], np.int64)
    level = np.full(n_nodes, -1, np.int64)
    pos = np.zeros(n_nodes, np.int64)
    leaf_level = np.zeros(int(leaf_offset[-1]), np.int64)
    leaf_pos = np.zeros(int(leaf_offset[-1]), np.int64)
    has_nodes = np.diff(node_offset) > 0
    tree = np.flatnonzero(has_nodes)
    cur = node_offset[:-1][has_nodes]
    cur_pos = np.zeros(cur.shape[0], np.int64)
    lv = 0
    while cur.shape[0]:
        if lv >= max_depth:
            raise ValueError(f"a tree deeper than {max_depth}")
        level[cur] = lv
        pos[cur] = cur_pos
        nxt_t, nxt, nxt_pos = [], [], []
        for side, kids in ((0, left), (1, right)):
            k = kids[cur]
            p2 = 2 * cur_pos + side
            inner = k >= 0
            nxt_t.append(tree[inner])
            nxt.append(node_offset[tree[inner]] + k[inner])
            nxt_pos.append(p2[inner])
            lf = leaf_offset[tree[~inner]] + ~k[~inner]
            leaf_level[lf] = lv + 1
            leaf_pos[lf] = p2[~inner]
        tree = np.concatenate(nxt_t)
        cur = np.concatenate(nxt)
        cur_pos = np.concatenate(nxt_pos)
        lv += 1
    if (level < 0).any():
        raise ValueError("a node no root reaches")
    return level, pos, leaf_level, leaf_pos
