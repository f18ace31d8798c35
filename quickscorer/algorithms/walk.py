"""The "walk" algorithm: root-to-leaf walks of eight trees interleaved without a branch on the
data (kernel: ``src/quickscorer/_walk.pyx`` and ``walk.h``).

Where QuickScorer pays for every false node of every tree, a walk pays for the nodes on the
path: on LightGBM's leaf-wise trees most rows leave by a short path (3.5 nodes a tree on
average on a model of 1,000 full 64-leaf trees, against 20 false nodes a tree), so a walk
that does not stall on each branch can beat the scan for one row at a time.
"""
from __future__ import annotations

import numpy as np

from .. import _walk
from .._forest import Forest
from ..ir.ensemble import Ensemble
from .base import Algorithm
from .rs_layout import coded_categorical, codes_going_left
from .traversal import node_arrays

N_RULES = _walk.N_RULE_KINDS
_R = _walk.RULES

#: a node of the walk's table as walk.h reads it (24 bytes)
NODE_DTYPE = np.dtype([("thr", "<f8"), ("col", "<i4"), ("kid", "<i4", 2), ("pad", "<i4")])


def _rules(ens: Ensemble, flags: np.ndarray) -> np.ndarray:
    """Each numeric node's missing-value rule (the RULE_* constants of _walk.pyx), from its
    default direction and missing type (the flag bits of ``node_flags``)."""
    default_left = (flags >> 1) & 1 == 1
    side = np.where(default_left, 0, 1)
    if ens.family == "xgboost":          # NaN takes the default direction, zero is a value
        return _R["nan_left"] + side
    missing = (flags >> 2) & 3
    return np.select([missing == 0, missing == 1],
                     [np.full_like(side, _R["nan_as_zero"]), _R["zero_left"] + side],
                     _R["nan_left"] + side)


def special_mask(ens: Ensemble) -> np.ndarray:
    """The nodes (packed order) that read a column of their own in the walk, decided one by
    one before it starts: categorical splits, and thresholds that are NaN or +inf (where
    +inf could not stand for "right")."""
    a = ens.trees.arrays
    thr = np.asarray(a["threshold"], np.float64)
    return np.asarray(a["is_categorical"], bool) | np.isnan(thr) | (thr == np.inf)


def walk_arrays(ens: Ensemble) -> dict:
    """The walk's layout:

    - ``walk_nodes``: ``NODE_DTYPE`` records viewed as uint64 (3 words a node), the trees'
      nodes one tree after the other (tree ``t``'s from ``node_offset[t]``, its root first),
      each tree's in depth-first preorder (``_walk.preorder``): a node tests
      ``xr[col] > thr`` and goes to ``kid[1]`` if so, else ``kid[0]``; a child is a node
      (>= 0, always later in the table) or ``~leaf`` (the leaf's in-order number in its
      tree). Preorder rather than the canonical breadth-first order keeps a subtree in one
      run of memory: on 1,000 full 255-leaf trees, whose table outgrows the L2 cache, the
      walk took 59 us a row against 86 in breadth-first order. Then two sentinels: a
      node whose children are both leaf 0 (the root of a tree that is one leaf) and the last
      node, whose children are itself (where a cursor with no trees left circles);
    - ``roots`` (int32, n_trees + 8): each tree's root, then the last node eight times;
    - ``node_offset`` (int64, n_trees + 1): each tree's first canonical node;
    - ``fill_cols`` (int32): the columns ``rule * n_features + feature`` that some node
      reads, in increasing order;
    - the special nodes, those that read a column of their own, ``N_RULES * n_features + j``
      for the j-th, set to -inf (left) or +inf (right) by the node's own decision:
      categorical splits, and thresholds that are NaN or +inf (where +inf could not stand
      for "right"). Their canonical fields (``feature``, ``threshold``, ``flags``,
      ``cat_offset``, ``cat_nwords``, ``cat_words``, as :func:`node_arrays` has them) are
      kept for those nodes only, in column order;
    - ``special_table`` (int32, one per special node): for a categorical node whose
      categories are all below ``rs_layout.CAT_CODES`` (``rs_layout.coded_categorical``),
      its row of ``special_tables``
      (uint8, 32 bytes a row: bit ``c % 8`` of byte ``c // 8`` set where a value of code ``c``,
      rs_layout's ``CAT_*``, goes right), so that expanding a row costs such a node a code
      and a bit, without a branch on its side (11 ns a node before, by the node's own rule,
      which the others, -1, keep).
    """
    a = node_arrays(ens)
    F = ens.n_features
    n = a["feature"].shape[0]
    flags = a["flags"]
    thr = a["threshold"].copy()
    special = special_mask(ens)
    n_special = int(special.sum())
    col = (_rules(ens, flags).astype(np.int64) * F + a["feature"]).astype(np.int64)
    col[special] = N_RULES * F + np.arange(n_special)
    thr[special] = 0.0
    offsets = a["node_offset"]
    n_trees = offsets.shape[0] - 1
    first = np.repeat(offsets[:-1], np.diff(offsets))
    # table row of each canonical node: each tree's nodes in depth-first preorder
    place = _walk.preorder(a["left"], a["right"], offsets)
    nodes = np.zeros(n + 2, NODE_DTYPE)
    nodes["thr"][place] = thr
    nodes["col"][place] = col
    for side, kids in enumerate((a["left"], a["right"])):
        nodes["kid"][place, side] = np.where(kids >= 0, place[first + np.maximum(kids, 0)],
                                             kids)
    if n + 2 >= 2 ** 31:
        raise ValueError(f"walk: a model of {n} nodes is too large for the walk's int32 nodes")
    nodes["thr"][n:] = np.inf            # never right: the value is not NaN, only finite or inf
    nodes["kid"][n] = -1                 # ~0: leaf 0
    nodes["kid"][n + 1] = n + 1
    roots = np.full(n_trees + 8, n + 1, np.int32)
    roots[:n_trees] = np.where(np.diff(offsets) > 0, offsets[:-1], n)
    out = {name: np.ascontiguousarray(a[name][special])
           for name in ("feature", "threshold", "flags", "cat_offset", "cat_nwords")}
    canon = np.flatnonzero(special)              # column order
    tabled = coded_categorical(ens, canon)
    table = np.full(n_special, -1, np.int32)
    table[tabled] = np.arange(int(tabled.sum()), dtype=np.int32)
    goes_right = ~codes_going_left(ens, canon[tabled])
    out.update(
        special_table=table,
        special_tables=np.packbits(goes_right, axis=1, bitorder="little").reshape(-1),
        cat_words=a["cat_words"],
        node_offset=offsets,
        walk_nodes=nodes.view(np.uint64),
        roots=roots,
        fill_cols=np.unique(col[~special]).astype(np.int32),
    )
    return out


class Walk(Algorithm):
    """Eight root-to-leaf walks interleaved, branch-free (one row at a time)."""

    name = "walk"
    test_vector = "node by node on the path, eight trees interleaved without branches"

    def __init__(self, ens: Ensemble, forest: Forest):
        super().__init__(ens, forest)
        self._arrays = walk_arrays(ens)
        self.layout = _walk.WalkLayout(self._arrays, ens.n_features)
