"""Tree ensembles from ONNX files, scored as ONNX Runtime scores them.

Read without the ``onnx`` package (``protobuf.py`` decodes the file): one ``ai.onnx.ml`` tree
ensemble node, ``TreeEnsembleRegressor`` or ``TreeEnsembleClassifier`` (opsets 1 and 3) or
``TreeEnsemble`` (opset 5), fed by the graph's input. The rules (docs/semantics.md, "ONNX"):

* a node compares ``x`` with its threshold in the threshold's type: float32 thresholds
  (``nodes_values``) read a float32 row and sum float32 leaf values in tree order (the
  ``xgboost`` family); float64 thresholds (``*_as_tensor``, a double ``nodes_splits``) read the
  row as float64 and sum in float64 (the ``plain`` family);
* ``BRANCH_LEQ`` is true where ``x <= t``, ``BRANCH_LT`` ``x < t`` (``x <= t'``, ``t'`` the
  value before ``t``), ``BRANCH_GT`` and ``BRANCH_GTE`` are their complements; the true child is
  the neutral left one for the first two and the right one for the others; NaN compares false,
  so it takes the false child unless ``nodes_missing_value_tracks_true`` sends it to the true
  one;
* the base values are added after the trees (a last iteration of one-leaf trees);
* the output is the one ONNX Runtime returns: a regressor's ``variable`` (one target: its
  ``post_transform`` is not applied, as ONNX Runtime does not), a classifier's probabilities
  (two classes with weights for one of them: the second column, the positive class).

``BRANCH_EQ`` (a chain of them sharing a true child is a set), ``BRANCH_NEQ`` and
``BRANCH_MEMBER`` become threshold tests (:func:`_expand`). A ``BRANCH_MEMBER`` set is tested
as ONNX Runtime tests it (:func:`_member_sets`): by equality where it has fewer than 31 values
from 0 to 30, by the row's value truncated to an integer otherwise. Not read, each refused by
name: the ``AVERAGE``, ``MIN`` and ``MAX`` aggregates, a graph that computes anything before
the trees or after their scores (other than ``Identity``, ``Cast`` to a float type,
``ZipMap``, a multiplication by ones), tensors stored outside the file, and the shapes where
ONNX Runtime's scores are not the sums
(docs/semantics.md).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import ModelFormatError
from ..ir.ensemble import MISSING_NAN, Ensemble, build_tree, constant_tree
from . import protobuf as pb
from .onnx_graph import ML_DOMAIN, check_scores_path, find_ensemble, graph_input

_MODES_V5 = ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ",
             "BRANCH_MEMBER")
_TRANSFORMS_V5 = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")
_AGGREGATES_V5 = ("AVERAGE", "SUM", "MIN", "MAX")
_LEQ, _LT, _GTE, _GT, _EQ, _NEQ, _MEMBER = 0, 1, 2, 3, 4, 5, 6
_LEAF = -1
_MODE_CODES = {"BRANCH_LEQ": _LEQ, "BRANCH_LT": _LT, "BRANCH_GTE": _GTE, "BRANCH_GT": _GT,
               "BRANCH_EQ": _EQ, "BRANCH_NEQ": _NEQ, "LEAF": _LEAF}
#: most neutral nodes one source tree may become once its equality and set tests are written
#: as threshold tests (each copies the subtrees it leads to, once per value or gap)
MAX_EXPANDED_NODES = 1 << 18


def looks_like_onnx(raw: bytes) -> bool:
    """Whether ``raw`` reads as an ONNX model at its top level (cheap)."""
    return pb.looks_like_model(raw)


def is_onnx_model(obj) -> bool:
    """Whether ``obj`` is an ``onnx.ModelProto``."""
    return type(obj).__name__ == "ModelProto" and hasattr(obj, "SerializeToString")


def load_onnx(source: Any) -> Ensemble:
    """The neutral ensemble of an ONNX model: its bytes (or a mapped file) or an
    ``onnx.ModelProto``."""
    buf = source.SerializeToString() if is_onnx_model(source) else bytes(source)
    return _ensemble(pb.model(buf))


def _ints(a: dict, key: str, n: int | None = None, default: int | None = None) -> np.ndarray:
    v = a.get(key)
    if v is None:
        if default is not None and n is not None:      # absent: the default
            return np.full(n, default, np.int64)
        raise ModelFormatError(f"ONNX: attribute {key!r} is missing")
    v = np.asarray(v)
    if v.size == 0 and default is not None and n is not None:     # empty: the default
        return np.full(n, default, np.int64)
    if v.dtype.kind not in "iub" or v.ndim != 1:
        raise ModelFormatError(f"ONNX: attribute {key!r} is not a list of integers")
    if n is not None and v.size != n:
        raise ModelFormatError(f"ONNX: attribute {key!r} has {v.size} entries for {n}")
    return v.astype(np.int64)


def _numbers(a: dict, key: str, n: int | None = None) -> np.ndarray | None:
    """A float list or its ``_as_tensor`` double twin (float32 or float64 array)."""
    v = a.get(key)
    if v is None:
        v = a.get(key + "_as_tensor")
    if v is None:
        return None
    v = np.asarray(v)
    if v.dtype not in (np.float32, np.float64):
        raise ModelFormatError(f"ONNX: attribute {key!r} is not floats or doubles")
    v = v.ravel()
    if n is not None and v.size != n:
        raise ModelFormatError(f"ONNX: attribute {key!r} has {v.size} entries for {n}")
    return v


def _text(v, key: str, default: str) -> str:
    if v is None:
        return default
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("ascii", "replace")
    raise ModelFormatError(f"ONNX: attribute {key!r} is not a string")


class _Tree:
    """One source tree: per local node its mode (``_LEAF`` for a leaf), feature, threshold,
    NaN-to-true flag, true and false children (local), source id and leaf weights; its root is
    local node 0."""

    __slots__ = ("mode", "feature", "split", "nan_true", "true", "false", "ids", "weights",
                 "members")

    def __init__(self, mode, feature, split, nan_true, true, false, ids, weights,
                 members=None):
        self.mode, self.feature, self.split, self.nan_true = mode, feature, split, nan_true
        self.true, self.false, self.ids, self.weights = true, false, ids, weights
        #: a BRANCH_MEMBER node's set: local node -> (values, truncated) (:func:`_member_sets`)
        self.members = members or {}


def _trees_v1(a: dict, weight_prefix: str) -> tuple[list[_Tree], np.ndarray]:
    """The trees of ``TreeEnsembleRegressor``/``Classifier`` (opsets 1 and 3) and the
    threshold array (its dtype decides the family)."""
    tree_ids = _ints(a, "nodes_treeids")
    n = tree_ids.size
    if n == 0:
        raise ModelFormatError("ONNX: the ensemble has no nodes")
    node_ids = _ints(a, "nodes_nodeids", n)
    features = _ints(a, "nodes_featureids", n)
    modes_raw = a.get("nodes_modes")
    if not isinstance(modes_raw, list) or len(modes_raw) != n:
        raise ModelFormatError(f"ONNX: attribute 'nodes_modes' is not {n} strings")
    modes = np.empty(n, np.int64)
    for i, m in enumerate(modes_raw):
        text = bytes(m).decode("ascii", "replace")
        if text not in _MODE_CODES:
            raise ModelFormatError(
                f"ONNX: tree {int(tree_ids[i])} node {int(node_ids[i])}: unknown mode {text!r}")
        modes[i] = _MODE_CODES[text]
    splits = _numbers(a, "nodes_values", n)
    if splits is None:
        raise ModelFormatError("ONNX: attribute 'nodes_values' is missing")
    true_ids = _ints(a, "nodes_truenodeids", n)
    false_ids = _ints(a, "nodes_falsenodeids", n)
    tracks = _ints(a, "nodes_missing_value_tracks_true", n, default=0)

    w_tree = _ints(a, weight_prefix + "treeids")
    m = w_tree.size
    w_node = _ints(a, weight_prefix + "nodeids", m)
    w_target = _ints(a, weight_prefix + "ids", m)
    w_value = _numbers(a, weight_prefix + "weights", m)
    if w_value is None:
        raise ModelFormatError(f"ONNX: attribute {weight_prefix + 'weights'!r} is missing")

    order_keys, first = np.unique(tree_ids, return_index=True)
    tree_order = order_keys[np.argsort(first, kind="stable")]
    node_sort = np.lexsort((np.arange(n), tree_ids))
    starts = np.searchsorted(tree_ids[node_sort], tree_order)
    ends = np.searchsorted(tree_ids[node_sort], tree_order, side="right")
    w_sort = np.argsort(w_tree, kind="stable")
    w_starts = np.searchsorted(w_tree[w_sort], tree_order)
    w_ends = np.searchsorted(w_tree[w_sort], tree_order, side="right")
    known = set(tree_order.tolist())
    stray = [int(t) for t in np.unique(w_tree) if int(t) not in known]
    if stray:
        raise ModelFormatError(f"ONNX: a weight names tree {stray[0]}, which has no nodes")

    trees = []
    for k, tid in enumerate(tree_order.tolist()):
        idx = node_sort[starts[k]:ends[k]]
        ids = node_ids[idx]
        where = f"ONNX tree {tid}"
        local = {int(v): j for j, v in enumerate(ids.tolist())}
        if len(local) != ids.size:
            raise ModelFormatError(f"{where}: a node id appears twice")
        mode = modes[idx]
        inner = mode != _LEAF

        def to_local(children, which):
            out = np.full(ids.size, -1, np.int64)
            for j in np.flatnonzero(inner):
                c = int(children[j])
                if c not in local:
                    raise ModelFormatError(f"{where} node {int(ids[j])}: its {which} child "
                                           f"{c} is not a node of the tree")
                out[j] = local[c]
            return out

        true = to_local(true_ids[idx], "true")
        false = to_local(false_ids[idx], "false")
        weights: dict[int, dict[int, float]] = {}
        widx = w_sort[w_starts[k]:w_ends[k]]
        for j in widx.tolist():
            nid = int(w_node[j])
            if nid not in local:
                raise ModelFormatError(f"{where}: a weight names node {nid}, not a node of the "
                                       f"tree")
            li = local[nid]
            if mode[li] != _LEAF:
                raise ModelFormatError(f"{where}: a weight names node {nid}, which is not a "
                                       f"leaf")
            per = weights.setdefault(li, {})
            tgt = int(w_target[j])
            if tgt in per:
                raise ModelFormatError(f"{where} node {nid}: two weights for output {tgt}")
            per[tgt] = w_value[j]
        children = np.concatenate([true[inner], false[inner]])
        roots = np.setdiff1d(np.arange(ids.size), children)
        # converters list a tree's nodes together, its root first; ONNX Runtime scores other
        # listings otherwise than by the links, so they are refused
        if roots.size != 1 or roots[0] != 0 or idx[-1] - idx[0] != idx.size - 1:
            raise ModelFormatError(f"{where}: its nodes are not listed together with the root "
                                   f"(the one node that is no node's child) first")
        trees.append(_Tree(mode, features[idx], splits[idx], tracks[idx] != 0, true, false,
                           ids, weights))
    return trees, splits


def _trees_v5(a: dict) -> tuple[list[_Tree], np.ndarray]:
    """The trees of ``TreeEnsemble`` (opset 5): interior nodes by position, leaves in the
    ``leaf_*`` lists, a tree's root in ``tree_roots``."""
    roots = _ints(a, "tree_roots")
    features = _ints(a, "nodes_featureids")
    n = features.size
    modes_t = a.get("nodes_modes")
    modes_v = np.asarray(modes_t).ravel() if modes_t is not None else None
    if modes_v is None or modes_v.size != n or modes_v.dtype.kind not in "iu":
        raise ModelFormatError(f"ONNX: attribute 'nodes_modes' is not {n} mode codes")
    splits = a.get("nodes_splits")
    splits = None if splits is None else np.asarray(splits).ravel()
    if splits is None or splits.size != n or splits.dtype not in (np.float32, np.float64):
        raise ModelFormatError(f"ONNX: attribute 'nodes_splits' is not {n} floats or doubles")
    true_ids = _ints(a, "nodes_truenodeids", n)
    false_ids = _ints(a, "nodes_falsenodeids", n)
    true_leaf = _ints(a, "nodes_trueleafs", n)
    false_leaf = _ints(a, "nodes_falseleafs", n)
    tracks = _ints(a, "nodes_missing_value_tracks_true", n, default=0)
    leaf_target = _ints(a, "leaf_targetids")
    lw = a.get("leaf_weights")
    leaf_weight = None if lw is None else np.asarray(lw).ravel()
    if leaf_weight is None or leaf_weight.size != leaf_target.size or (
            leaf_weight.dtype not in (np.float32, np.float64)):
        raise ModelFormatError("ONNX: attribute 'leaf_weights' is not one number a leaf")
    modes = np.empty(n, np.int64)
    for i, c in enumerate(modes_v.tolist()):
        if not 0 <= c < len(_MODES_V5):
            raise ModelFormatError(f"ONNX: node {i}: unknown mode code {c}")
        modes[i] = c
    sets = _member_sets(a, modes, splits.dtype)
    trees = []
    n_leaves = leaf_target.size
    for k, r in enumerate(roots.tolist()):
        where = f"ONNX tree {k}"
        if not 0 <= r < n:
            raise ModelFormatError(f"{where}: root {r} is not a node")
        if true_leaf[r] and false_leaf[r] and true_ids[r] == false_ids[r]:
            j = int(true_ids[r])         # a one-leaf tree: both sides name the same leaf
            if not 0 <= j < n_leaves:
                raise ModelFormatError(f"{where}: leaf {j} is out of range")
            trees.append(_Tree(np.array([_LEAF]), np.zeros(1, np.int64),
                               np.zeros(1, splits.dtype), np.zeros(1, bool), np.full(1, -1),
                               np.full(1, -1), np.array([j]),
                               {0: {int(leaf_target[j]): leaf_weight[j]}}))
            continue
        mode, feat, split, nan_true, t_out, f_out, ids, weights = [], [], [], [], [], [], [], {}
        members: dict[int, tuple[np.ndarray, bool]] = {}
        seen: dict[int, int] = {}
        pending: list[tuple[int, int, int, bool]] = []    # (parent local, child, is leaf, side)

        def add(ref: int, is_leaf: bool) -> int:
            li = len(mode)
            if is_leaf:
                if not 0 <= ref < n_leaves:
                    raise ModelFormatError(f"{where}: leaf {ref} is out of range")
                mode.append(_LEAF)
                feat.append(0)
                split.append(0.0)
                nan_true.append(False)
                t_out.append(-1)
                f_out.append(-1)
                ids.append(ref)
                weights[li] = {int(leaf_target[ref]): leaf_weight[ref]}
                return li
            if not 0 <= ref < n:
                raise ModelFormatError(f"{where}: node {ref} is out of range")
            if ref in seen:          # a shared subtree (copied when the tree is expanded)
                return seen[ref]
            seen[ref] = li
            if ref in sets:
                members[li] = sets[ref]
            mode.append(int(modes[ref]))
            feat.append(int(features[ref]))
            split.append(splits[ref])
            nan_true.append(bool(tracks[ref]))
            t_out.append(-1)
            f_out.append(-1)
            ids.append(ref)
            pending.append((li, int(true_ids[ref]), int(true_leaf[ref]), True))
            pending.append((li, int(false_ids[ref]), int(false_leaf[ref]), False))
            return li

        add(r, False)
        while pending:
            parent, child, is_leaf, side = pending.pop()
            li = add(child, bool(is_leaf))
            (t_out if side else f_out)[parent] = li
        trees.append(_Tree(np.asarray(mode, np.int64), np.asarray(feat, np.int64),
                           np.asarray(split, splits.dtype), np.asarray(nan_true, bool),
                           np.asarray(t_out, np.int64), np.asarray(f_out, np.int64),
                           np.asarray(ids, np.int64), weights, members))
    return trees, splits


#: a BRANCH_MEMBER set ONNX Runtime tests value by value: fewer values than this, all whole
#: or not, from 0 to SMALL_SET_MAX; any other set it tests by the row's value truncated to an
#: integer (its "big sets")
SMALL_SET_SIZE = 31
SMALL_SET_MAX = 30
#: the largest magnitude of a big set's integer read here (every integer up to it is a float32)
BIG_SET_MAX = 1 << 24


def _member_sets(a: dict, modes: np.ndarray, dtype) -> dict[int, tuple[np.ndarray, bool]]:
    """Each BRANCH_MEMBER node's set of values from ``membership_values`` (one run of values
    a node in node order, each run closed by a NaN), and whether ONNX Runtime tests it by the
    row's value truncated toward zero to an int32 (a "big set": SMALL_SET_SIZE values or more,
    or one outside 0 .. SMALL_SET_MAX; its values must be int32 integers, as ONNX Runtime
    requires) rather than by equality."""
    nodes = np.flatnonzero(modes == _MEMBER)
    if not nodes.size:
        return {}
    raw = a.get("membership_values")
    values = None if raw is None else np.asarray(raw).ravel()
    if values is None or values.dtype not in (np.float32, np.float64):
        raise ModelFormatError("ONNX: BRANCH_MEMBER nodes without 'membership_values' floats")
    ends = np.flatnonzero(np.isnan(values))
    if ends.size != nodes.size or (ends.size and ends[-1] != values.size - 1):
        raise ModelFormatError(f"ONNX: 'membership_values' holds {ends.size} NaN-closed runs "
                               f"for {nodes.size} BRANCH_MEMBER nodes")
    out = {}
    start = 0
    for node, end in zip(nodes.tolist(), ends.tolist()):
        run = values[start:end].astype(dtype)
        start = end + 1
        if not run.size:
            raise ModelFormatError(f"ONNX: node {node}: a BRANCH_MEMBER node with no value")
        if not np.isfinite(run).all():
            raise ModelFormatError(f"ONNX: node {node}: an infinite membership value")
        small = run.size < SMALL_SET_SIZE and run.min() >= 0 and run.max() <= SMALL_SET_MAX
        if not small and ((run != np.trunc(run)).any()
                          or (np.abs(run.astype(np.float64)) > BIG_SET_MAX).any()):
            raise ModelFormatError(
                f"ONNX: node {node}: a set of {run.size} values that ONNX Runtime tests as "
                "integers holds "
                f"{run[(run != np.trunc(run)) | (np.abs(run) > BIG_SET_MAX)][0]!r}, "
                f"which is no integer of magnitude up to {BIG_SET_MAX}")
        out[node] = (run, not small)
    return out


def _previous(t: np.ndarray) -> np.ndarray:
    """The largest value of ``t``'s own type below each ``t`` (``x < t`` is ``x <= that``)."""
    return np.nextafter(t, np.asarray(-np.inf, t.dtype))


def _expand(tree: _Tree, where: str) -> dict:
    """The neutral nodes of a tree with equality tests or shared subtrees: every test becomes
    threshold tests, every reference to a subtree a copy of it.

    ``x == v`` for ``x`` and ``v`` of one float type is ``prev(v) < x <= v``; a set of values
    (a chain of ``BRANCH_EQ`` nodes on one feature that share their true child, as converters
    write a categorical split) cuts the line at ``prev(v)``
    and ``v`` for each value, and a balanced tree of those cuts leads each one-value interval to
    a copy of the member child and each gap to a copy of the other child. NaN, false in every
    comparison, is led to the side ONNX Runtime sends it: the member side where a test of the
    chain tracks missing values as true, the false side otherwise (``BRANCH_NEQ``: ``NaN !=
    v`` is true, so NaN takes the true child)."""
    left, right, feature, threshold, nan_left, src = [], [], [], [], [], []
    dtype = tree.split.dtype
    limit = MAX_EXPANDED_NODES

    def new(li: int, feat: int = 0, thr: float = 0.0, dleft: bool = False) -> int:
        if len(left) >= limit:
            raise ModelFormatError(
                f"{where}: its equality and set tests, written as threshold tests with the "
                f"subtrees they lead to copied, take more than {limit} nodes")
        left.append(-1)
        right.append(-1)
        feature.append(int(feat))
        threshold.append(float(thr))
        nan_left.append(bool(dleft))
        src.append(li)
        return len(left) - 1

    def set_test(li: int):
        """(values, member child, other child, NaN to the member child, values tested by
        the row's value truncated to an integer)."""
        m = tree.mode[li]
        if m == _NEQ:        # x != v is true: the member (x == v) goes to the false child
            return tree.split[li:li + 1], tree.false[li], tree.true[li], False, False
        if m == _MEMBER:
            values, truncated = tree.members[li]
            return values, tree.true[li], tree.false[li], bool(tree.nan_true[li]), truncated
        values, nan_member, cur = [tree.split[li]], bool(tree.nan_true[li]), li
        while True:          # a chain of BRANCH_EQ on one feature sharing the true child
            nxt = tree.false[cur]
            if (tree.mode[nxt] != _EQ or tree.feature[nxt] != tree.feature[li]
                    or tree.true[nxt] != tree.true[li] or len(values) > tree.mode.size):
                break
            values.append(tree.split[nxt])
            nan_member |= bool(tree.nan_true[nxt])
            cur = nxt
        return np.asarray(values, dtype), tree.true[li], tree.false[cur], nan_member, False

    def build(li: int, depth: int) -> int:
        if depth > 250:
            raise ModelFormatError(f"{where}: deeper than 250 tests (or a cycle)")
        m = tree.mode[li]
        if m == _LEAF:
            return new(li)
        if m in (_LEQ, _LT, _GT, _GTE):
            t = tree.split[li]
            thr = _previous(np.asarray(t, dtype)) if m in (_LT, _GTE) else t
            true_left = m in (_LEQ, _LT)
            n = new(li, tree.feature[li], thr,
                    bool(tree.nan_true[li]) == true_left)
            a, b = ((tree.true[li], tree.false[li]) if true_left
                    else (tree.false[li], tree.true[li]))
            left[n] = build(a, depth + 1)
            right[n] = build(b, depth + 1)
            return n
        values, member, other, nan_member, truncated = set_test(li)
        values = np.unique(values[~np.isnan(values)])
        if not np.isfinite(values).all():
            raise ModelFormatError(f"{where} node {int(tree.ids[li])}: an equality test with "
                                   f"an infinite value")
        if m == _NEQ:
            nan_member = False
        if not values.size:       # no value: every row takes the other child
            return build(other, depth + 1)
        # interval j is (cuts[j - 1], cuts[j]], interval 0 (-inf, cuts[0]], the last one
        # (cuts[-1], inf), both outside every set
        cuts, is_member = (_truncated_cuts(values) if truncated
                           else _equality_cuts(values))
        target = int(np.flatnonzero(is_member)[0]) if nan_member else 0
        feat = tree.feature[li]

        def over(lo: int, hi: int, d: int) -> int:
            if lo == hi:
                return build(member if is_member[lo] else other, d)
            mid = (lo + hi) // 2
            n = new(li, feat, cuts[mid], target <= mid)
            left[n] = over(lo, mid, d + 1)
            right[n] = over(mid + 1, hi, d + 1)
            return n
        return over(0, cuts.size, depth + 1)

    try:
        build(0, 0)
    except RecursionError:
        raise ModelFormatError(f"{where}: too deep to read") from None
    return dict(left=np.asarray(left, np.int64), right=np.asarray(right, np.int64),
                feature=np.asarray(feature, np.int64),
                threshold=np.asarray(threshold, np.float64),
                default_left=np.asarray(nan_left, bool), src=np.asarray(src, np.int64))


def _equality_cuts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cuts and member intervals of ``x == v`` for the sorted distinct ``values``: the
    one-value interval ``(prev(v), v]`` of each."""
    cuts = np.unique(np.concatenate([_previous(values), values]))
    ends_at_value = np.isin(cuts, values)
    is_member = np.zeros(cuts.size + 1, bool)
    is_member[1:cuts.size] = ends_at_value[1:] & (cuts[:-1] == _previous(cuts[1:]))
    return cuts, is_member


def _truncated_cuts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The cuts and member intervals of ``trunc(x) in values`` (whole numbers, sorted,
    distinct, of magnitude up to BIG_SET_MAX, in their float type): ``[k, k + 1)`` for
    ``k > 0``, ``(k - 1, k]`` for ``k < 0`` and ``(-1, 1)`` for 0, each written ``(lo, hi]``.
    A value beyond int32 truncates to no set's integer (ONNX Runtime's cast gives INT_MIN,
    which no set read here holds)."""
    one = np.asarray(1, values.dtype)
    lo = np.where(values > 0, _previous(values), values - one)
    hi = np.where(values >= 0, _previous(values + one), values)
    cuts = np.unique(np.concatenate([lo, hi]))
    # interval j (cuts[j - 1], cuts[j]] is a member where it lies within some (lo, hi]
    k = np.searchsorted(lo, cuts[:-1], side="right") - 1
    inside = (k >= 0) & (hi[np.maximum(k, 0)] >= cuts[1:])
    is_member = np.zeros(cuts.size + 1, bool)
    is_member[1:cuts.size] = inside
    return cuts, is_member


def _direct(tree: _Tree) -> dict:
    """The neutral nodes of a tree of threshold tests only, each subtree reached once: one
    neutral node per source node (:func:`_expand` states the same rules node by node)."""
    mode = tree.mode
    inner = mode != _LEAF
    strict = (mode == _LT) | (mode == _GTE)       # x < t, x >= t: compare with t's predecessor
    threshold = np.where(strict, _previous(tree.split), tree.split).astype(np.float64)
    true_left = (mode == _LEQ) | (mode == _LT)
    left = np.where(inner, np.where(true_left, tree.true, tree.false), -1)
    right = np.where(inner, np.where(true_left, tree.false, tree.true), -1)
    return dict(left=left, right=right, feature=np.where(inner, tree.feature, 0),
                threshold=np.where(inner, threshold, 0.0),
                default_left=np.where(true_left, tree.nan_true, ~tree.nan_true),
                src=np.arange(mode.size))


def _neutral(tree: _Tree, targets: list[int], n_features: int, where: str) -> list:
    """One neutral tree per output in ``targets`` (leaf values of the other outputs are 0)."""
    inner = tree.mode != _LEAF
    children = np.concatenate([tree.true[inner], tree.false[inner]])
    shared = np.unique(children).size != children.size
    nodes = _expand(tree, where) if shared or (tree.mode > _GT).any() else _direct(tree)
    src = nodes.pop("src")
    bad = np.flatnonzero((nodes["left"] >= 0) & ~np.isfinite(nodes["threshold"]))
    if bad.size:
        j = int(src[bad[0]])
        raise ModelFormatError(f"{where} node {int(tree.ids[j])}: threshold "
                               f"{float(tree.split[j])!r} is not finite")
    k = src.size
    leaves = np.flatnonzero(nodes["left"] < 0)
    out = []
    for tgt in targets:
        value = np.zeros(k, np.float64)
        for n in leaves.tolist():
            value[n] = float(tree.weights.get(int(src[n]), {}).get(tgt, 0.0))
        out.append(build_tree(**nodes, root=0, missing_type=np.full(k, MISSING_NAN, np.int64),
                              is_categorical=np.zeros(k, bool), categories=None, value=value,
                              source_id=tree.ids[src], n_features=n_features, where=where))
    return out


_NODE_ATTRIBUTES = frozenset({
    "nodes_treeids", "nodes_nodeids", "nodes_featureids", "nodes_modes", "nodes_values",
    "nodes_values_as_tensor", "nodes_truenodeids", "nodes_falsenodeids",
    "nodes_missing_value_tracks_true", "nodes_hitrates", "nodes_hitrates_as_tensor",
    "post_transform", "aggregate_function", "base_values", "base_values_as_tensor"})
#: each ensemble operator's attributes (ai.onnx.ml opsets 1, 3 and 5) that this importer reads
#: or knows to change no score (the hit rates, a hint for the runtime); an attribute outside
#: them may change a score, so a model holding one is refused by name
_KNOWN_ATTRIBUTES = {
    "TreeEnsembleRegressor": _NODE_ATTRIBUTES | {
        "n_targets", "target_ids", "target_nodeids", "target_treeids", "target_weights",
        "target_weights_as_tensor"},
    "TreeEnsembleClassifier": _NODE_ATTRIBUTES | {
        "class_ids", "class_nodeids", "class_treeids", "class_weights",
        "class_weights_as_tensor", "classlabels_int64s", "classlabels_strings"},
    "TreeEnsemble": frozenset({
        "aggregate_function", "leaf_targetids", "leaf_weights", "membership_values",
        "n_targets", "nodes_falseleafs", "nodes_falsenodeids", "nodes_featureids",
        "nodes_hitrates", "nodes_missing_value_tracks_true", "nodes_modes", "nodes_splits",
        "nodes_trueleafs", "nodes_truenodeids", "post_transform", "tree_roots"}),
}


def _ensemble(model: dict) -> Ensemble:
    graph = model["graph"]
    node = find_ensemble(graph)
    op = node["op_type"]
    a = node["attributes"]
    unknown = sorted(str(k) for k in a.keys() - _KNOWN_ATTRIBUTES[op])
    if unknown:
        raise ModelFormatError(
            f"ONNX: {op} (ai.onnx.ml opset {model['opsets'].get(ML_DOMAIN, '?')}) has the "
            f"attribute {unknown[0][:60]!r}, which this importer does not know, and it may "
            f"change the scores; refusing the model rather than scoring it as if the "
            f"attribute were absent")
    elem, n_inputs = graph_input(graph, node)
    classifier = op == "TreeEnsembleClassifier"
    if not node["output"]:
        raise ModelFormatError(f"ONNX: {op} has no output")
    scores_name = node["output"][1] if classifier and len(node["output"]) > 1 else (
        node["output"][0])
    check_scores_path(graph, scores_name, model)

    if op == "TreeEnsemble":
        trees, splits = _trees_v5(a)
        post = _code_name(a.get("post_transform", 0), _TRANSFORMS_V5, "post_transform")
        aggregate = _code_name(a.get("aggregate_function", 1), _AGGREGATES_V5,
                               "aggregate_function")
        base = None
    else:
        trees, splits = _trees_v1(a, "class_" if classifier else "target_")
        post = _text(a.get("post_transform"), "post_transform", "NONE")
        aggregate = _text(a.get("aggregate_function"), "aggregate_function", "SUM")
        base = _numbers(a, "base_values")
    if aggregate != "SUM":
        raise ModelFormatError(f"ONNX: aggregate_function {aggregate}: quickscorer reads sums "
                               f"of tree values (SUM)")
    if post not in ("NONE", "LOGISTIC", "SOFTMAX", "SOFTMAX_ZERO", "PROBIT"):
        raise ModelFormatError(f"ONNX: unknown post_transform {post!r}")
    double = splits.dtype == np.float64
    weight_types = {np.asarray(w).dtype for tree in trees for per in tree.weights.values()
                    for w in per.values()}
    if weight_types - {splits.dtype}:
        raise ModelFormatError("ONNX: leaf weights and thresholds of different types (float "
                               "and double)")
    if not double and elem == pb.ELEM_DOUBLE:
        raise ModelFormatError(
            "ONNX: float thresholds on a double input: ONNX Runtime compares the double row "
            "with the float thresholds and sums in float, a mix no quickscorer family "
            "computes; export with float input or double thresholds")
    family = "plain" if double else "xgboost"
    max_feature = max((int(t.feature[t.mode != _LEAF].max()) for t in trees
                       if (t.mode != _LEAF).any()), default=-1)
    if min((int(t.feature[t.mode != _LEAF].min()) for t in trees
            if (t.mode != _LEAF).any()), default=0) < 0:
        raise ModelFormatError("ONNX: a node has a negative feature id")
    n_features = n_inputs if n_inputs is not None else max_feature + 1
    if max_feature >= n_features:
        raise ModelFormatError(f"ONNX: a node reads feature {max_feature}; the input has "
                               f"{n_features}")
    n_features = max(n_features, 1)

    n_out, transform, base_values = _outputs(op, a, trees, post, base)
    out, groups, per_tree = [], [], []
    for k, tree in enumerate(trees):
        targets = sorted({t for per in tree.weights.values() for t in per}) or [0]
        per_tree.append(targets)
        out.extend(_neutral(tree, targets, n_features, f"ONNX tree {k}"))
        groups.extend(targets)
    # whole iterations of one tree per output (boosting), or every output in each tree
    # (forests); anything else is one iteration
    regular = (len(trees) % n_out == 0 and all(t == [k % n_out]
                                               for k, t in enumerate(per_tree))) or all(
        t == list(range(n_out)) for t in per_tree)
    while not regular and len(out) % n_out:    # one iteration of whole outputs: add zeros
        out.append(constant_tree(0.0, n_features, "padding"))
        groups.append(0)
    if base_values is not None and np.any(base_values != 0):
        for k in range(n_out):          # ONNX Runtime adds the base values after the trees
            out.append(constant_tree(float(base_values[k]), n_features, "base values"))
            groups.append(k)
    per_iteration = n_out if regular else len(out)
    source = {"library": "onnx", "version": f"ai.onnx.ml {model['opsets'].get(ML_DOMAIN, '?')}",
              "objective": f"{op} {post}", "format": "onnx",
              "producer": " ".join(s for s in (model["producer_name"],
                                                model["producer_version"]) if s) or None}
    return Ensemble(trees=out, tree_group=np.asarray(groups, np.int32), n_outputs=n_out,
                    n_features=n_features, family=family, base_score=np.zeros(n_out),
                    transform=_family_transform(transform),
                    transform_params={"sigmoid": 1.0} if transform == "logistic" else {},
                    trees_per_iteration=per_iteration, source=source)


def _code_name(v, names: tuple, key: str) -> str:
    if not isinstance(v, int) or not 0 <= v < len(names):
        raise ModelFormatError(f"ONNX: {key} {v!r} is not one of {', '.join(names)}")
    return names[v]


def _family_transform(kind: str) -> str:
    """The transform of ONNX Runtime's post_transform: in float32, for double thresholds too
    (it transforms the float32 value of their float64 sums)."""
    if kind == "identity":
        return "identity"
    return {"logistic": "onnx_logistic", "softmax": "onnx_softmax", "probit": "onnx_probit",
            "softmax_zero": "onnx_softmax_zero"}[kind]


def _always_weighted(trees: list[_Tree], k: int) -> bool:
    """Whether every row gets a leaf weight for output ``k`` (some tree weights it at every
    leaf)."""
    return any(all(k in tree.weights.get(li, {}) for li in np.flatnonzero(tree.mode == _LEAF))
               for tree in trees)


def _outputs(op: str, a: dict, trees: list[_Tree], post: str, base):
    """(outputs, transform kind, base values per output or None); a two-class classifier
    scored as one output gets its weights moved to output 0."""
    used = sorted({t for tree in trees for per in tree.weights.values() for t in per})
    if op == "TreeEnsembleClassifier":
        labels = a.get("classlabels_int64s")
        if labels is None:
            labels = a.get("classlabels_strings")
        if labels is not None and not isinstance(labels, (list, np.ndarray)):
            raise ModelFormatError("ONNX: the classifier's class labels are not a list")
        n_classes = 0 if labels is None else len(labels)
        if n_classes < 2:
            raise ModelFormatError(f"ONNX: the classifier has {n_classes} class labels")
        if used and (used[0] < 0 or used[-1] >= n_classes):
            raise ModelFormatError(f"ONNX: a class id is outside [0, {n_classes})")
        if n_classes == 2 and len(used) <= 1:
            # ONNX Runtime's binary case: one score s for the second class, its probabilities
            # [-s, s] or [1 - s, s] (NONE) or [sigmoid(-s), sigmoid(s)] (LOGISTIC)
            if base is not None and base.size not in (0, 1):
                raise ModelFormatError("ONNX: a two-class classifier with weights for one class "
                                       "and two base values (ONNX leaves its scores undefined)")
            if post == "PROBIT":
                raise ModelFormatError("ONNX: a two-class classifier with weights for one class "
                                       "and post_transform PROBIT (ONNX Runtime writes one "
                                       "probability of the two)")
            for tree in trees:
                tree.weights = _merge_targets(tree)
            return 1, "logistic" if post == "LOGISTIC" else "identity", (
                None if base is None or not base.size else base)
        if n_classes == 2 and base is not None and base.size:
            raise ModelFormatError("ONNX: a two-class classifier with weights for both classes "
                                   "and base values (ONNX Runtime's scores there do not follow "
                                   "the sum)")
        if n_classes == 2 and not _always_weighted(trees, 1):
            raise ModelFormatError("ONNX: a two-class classifier where a row can get no weight "
                                   "for the second class (ONNX Runtime then scores that row as "
                                   "a one-score binary model, not by the sums)")
        n_out = n_classes
    else:
        n_out = a.get("n_targets", 1)
        if not isinstance(n_out, int) or n_out < 1:
            raise ModelFormatError(f"ONNX: n_targets {n_out!r} is not a positive integer")
        if used and (used[0] < 0 or used[-1] >= n_out):
            raise ModelFormatError(f"ONNX: a target id is outside [0, {n_out})")
    if base is not None and base.size and base.size != n_out:
        raise ModelFormatError(f"ONNX: {base.size} base values for {n_out} outputs")
    if op != "TreeEnsembleClassifier" and base is not None and base.size:
        for k in np.flatnonzero(base != 0).tolist():
            if not _always_weighted(trees, k):
                raise ModelFormatError(
                    f"ONNX: target {k} has a base value but a row can get no leaf weight for "
                    f"it (ONNX Runtime then leaves out the base value, not a sum)")
    if n_out == 1 and op != "TreeEnsembleClassifier":
        # ONNX Runtime applies no transform to one target but PROBIT
        kind = "probit" if post == "PROBIT" else "identity"
    else:
        kind = {"NONE": "identity", "LOGISTIC": "logistic", "SOFTMAX": "softmax",
                "SOFTMAX_ZERO": "softmax_zero", "PROBIT": "probit"}[post]
    return n_out, kind, (None if base is None or not base.size else base)


def _merge_targets(tree: _Tree) -> dict:
    """A binary classifier's leaf weights, all for output 0."""
    out = {}
    for li, per in tree.weights.items():
        if len(per) > 1:
            raise ModelFormatError("ONNX: a leaf holds weights for two classes of a two-class "
                                   "classifier with one scored class")
        out[li] = {0: next(iter(per.values()))}
    return out

