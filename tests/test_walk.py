"""The "walk" kernel (eight root-to-leaf walks interleaved without branches): the reference's
leaves and scores bit for bit through its own layout, one-row calls through the low-latency
entry, and a clear error for a layout it cannot walk. (Its agreement on random models of every
kind, NaN, zero-as-missing, categories, linear leaves and multiclass included, is checked
with every other algorithm's in test_core.py, test_arithmetic.py and the other suites that
take each supported algorithm.)"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from conftest import category_rows, linear_tree, random_ensemble, special_rows
from test_covers import _balanced

import quickscorer
from quickscorer import _kernel
from quickscorer.algorithms import _walk
from quickscorer.algorithms import walk as walk_mod
from quickscorer.algorithms.traversal import node_arrays
from quickscorer.algorithms.walk import NODE_DTYPE, Walk, walk_arrays, walk_block_starts
from quickscorer.ir import Ensemble, build_tree
from quickscorer.ir.reference import FUSED_SUMS

#: the process's tuning table, and with the walk's complete trees wherever they are shallow
#: enough (``Tuning.walk_complete``)
T = quickscorer.current_tuning()
COMPLETE = T.replace(walk_complete=True)



def _index_nodes(a: dict) -> np.ndarray:
    """walk_arrays' nodes (after the table's leaf records) with children as indices
    (``_walk.to_indices``): a leaf child ~l, a node its row."""
    table = a["walk_table"]
    return _walk.to_indices(table[3 * (int(table.view(NODE_DTYPE)[0]["pad"]) + 1):])


def _with_nodes(a: dict, nodes: np.ndarray) -> dict:
    """walk_arrays' fields with the table made anew from ``nodes`` (children as indices)."""
    return dict(a, walk_table=_walk.walk_tables(nodes.view(np.uint64), a["roots"])[0])


def _model(family, n_trees=40, n_outputs=1, seed=3):
    rng = np.random.default_rng(seed)
    ens = random_ensemble(rng, family, n_trees=n_trees, n_outputs=n_outputs, n_features=7)
    return quickscorer.Model(ens)


@pytest.mark.parametrize("family", ["lightgbm", "xgboost"])
@pytest.mark.parametrize("n_trees", [1, 7, 8, 9, 40])
def test_leaves_and_scores_equal_the_reference_for_any_number_of_trees(family, n_trees):
    # fewer trees than cursors, exactly eight, one more: each cursor's last tree and the
    # self-loop sentinel
    model = _model(family, n_trees=n_trees, n_outputs=2 if n_trees == 40 else 1)
    X = special_rows(np.random.default_rng(1), 60, model.n_features)
    assert np.array_equal(model.predict_leaf(X, algorithm="walk"),
                          model.predict_leaf(X, algorithm="traversal"))
    assert np.array_equal(model.predict_raw(X, algorithm="walk"),
                          model.predict_raw(X, algorithm="traversal"))


@pytest.mark.parametrize("family", ["lightgbm", "xgboost"])
def test_one_row_calls_take_the_walk_through_the_low_latency_entry(family):
    model = _model(family, seed=8)
    X = special_rows(np.random.default_rng(2), 30, model.n_features)
    want = model.predict_raw(X, algorithm="traversal")
    for i in range(30):
        assert np.array_equal(model.predict_raw(X[i:i + 1], algorithm="walk"), want[i:i + 1])
        assert np.array_equal(model.predict_raw(np.ascontiguousarray(X[i]), algorithm="walk"),
                              want[i:i + 1])
    # the entry prepared the walk alone: a named one-row call does not build QuickScorer
    assert "walk" in model.plan.prepared and "quickscorer" not in model.plan.prepared


def test_rules_and_special_columns():
    model = _model("lightgbm", seed=4)
    a = walk_arrays(model.ensemble)
    canon = node_arrays(model.ensemble)
    F = model.n_features
    # the table's rows in canonical order
    nodes = _index_nodes(a).view(NODE_DTYPE)[
        _walk.preorder(canon["left"], canon["right"], canon["node_offset"])]
    n = canon["feature"].shape[0]
    special = (((canon["flags"] & 1) == 1) | np.isnan(canon["threshold"])
               | (canon["threshold"] == np.inf))
    assert special.any() and not special.all()
    # the layout keeps the special nodes' own fields, in column order, and nothing of the rest
    for name in ("feature", "threshold", "flags", "cat_offset", "cat_nwords"):
        assert np.array_equal(a[name], canon[name][special], equal_nan=True), name
    assert "left" not in a and "right" not in a
    # a special node reads its own column, after the fill columns, with threshold 0; the
    # others read the column of their (rule, feature) pair rule * F + feature in fill_cols
    fill = a["fill_cols"]
    assert np.array_equal(nodes["col"][:n][special],
                          fill.shape[0] + np.arange(special.sum()))
    assert np.all(nodes["thr"][:n][special] == 0.0)
    plain = ~special
    pairs = fill[nodes["col"][:n][plain]]
    assert np.array_equal(pairs % F, canon["feature"][plain])
    assert np.all(pairs // F < _walk.N_RULE_KINDS)
    assert np.array_equal(nodes["thr"][:n][plain], canon["threshold"][plain])
    assert np.array_equal(np.unique(nodes["col"][:n][plain]), np.arange(fill.shape[0]))


@pytest.mark.parametrize("family", ["lightgbm", "xgboost"])
def test_each_tree_is_laid_out_in_preorder(family):
    model = _model(family, seed=9)
    canon = node_arrays(model.ensemble)
    offsets = canon["node_offset"]
    place = _walk.preorder(canon["left"], canon["right"], offsets)
    n = canon["feature"].shape[0]
    assert np.array_equal(np.sort(place), np.arange(n))
    nodes = _index_nodes(walk_arrays(model.ensemble)).view(NODE_DTYPE)
    for t in range(offsets.shape[0] - 1):
        lo, hi = int(offsets[t]), int(offsets[t + 1])
        if hi == lo:
            continue
        assert place[lo] == lo                           # the root first
        # a depth-first preorder: walking the table's rows from the root visits the tree in
        # the order "node, left subtree, right subtree"
        order, stack = [], [lo]
        while stack:
            g = stack.pop()
            order.append(g)
            for kid in (canon["right"][g], canon["left"][g]):
                if kid >= 0:
                    stack.append(lo + int(kid))
        assert np.array_equal(place[order], np.arange(lo, hi))
        # and the table's children are the canonical children moved to their rows
        for side, kids in ((0, canon["left"]), (1, canon["right"])):
            k = kids[lo:hi]
            want = np.where(k >= 0, place[lo + np.maximum(k, 0)], k)
            assert np.array_equal(nodes["kid"][place[lo:hi], side], want)
    assert nodes.shape[0] == n + 2


def test_preorder_refuses_children_above_their_parent():
    left = np.array([1, -1], np.int32)
    right = np.array([-2, 0], np.int32)          # node 1's right child is the root
    with pytest.raises(ValueError, match="preorder"):
        _walk.preorder(left, right, np.array([0, 2], np.int64))
    with pytest.raises(ValueError, match="preorder"):
        _walk.preorder(left, right, np.array([0, 3], np.int64))
    # node 1 is nobody's child: it would keep no place
    with pytest.raises(ValueError, match="preorder"):
        _walk.preorder(np.array([-1, -1], np.int32), np.array([-2, -3], np.int32),
                       np.array([0, 2], np.int64))


def _table_fault(rows, n_records, offsets, n_cols):
    """walk.h walk_table_sound's rule in plain Python: the first walk row (counted after the
    leaf records) whose column is outside the expanded row or whose child is not a whole
    row below it (a node's after it and before the sentinel, or leaf l's record with l at
    most its tree's node count and among the records), "sentinel" where the last row is not
    its own two children, else None."""
    nodes = rows[n_records:]
    n_walk = nodes.shape[0]
    for i in range(n_walk - 1):
        t = np.searchsorted(offsets, i, side="right") - 1
        size = int(offsets[t + 1] - offsets[t]) if t < offsets.shape[0] - 1 else 1
        if not 0 <= int(nodes["col"][i]) < n_cols:
            return i
        for o in (int(k) for k in nodes["kid"][i]):
            if o % 24:
                return i
            if o >= 0 and not i < o // 24 < n_walk - 1:
                return i
            if o < 0 and not (-o // 24 - 1 <= size and -o // 24 - 1 < n_records):
                return i
    if list(nodes["kid"][n_walk - 1]) != [(n_walk - 1) * 24] * 2:
        return "sentinel"
    return None


def test_the_walk_table_check_is_its_rule_at_every_edge():
    """The table check's unsigned 32-bit compares and its test of a whole row against the
    rule in plain Python, on children and columns damaged at random and at each rule's
    edges (the next row, the sentinel, the tree's last leaf, the last record, a row and a
    byte past them, the int32 extremes): refused exactly where the rule finds a fault."""
    model = _model("lightgbm", n_trees=12, seed=8)
    a = walk_arrays(model.ensemble)
    n_cols = max(1, a["fill_cols"].shape[0] + a["feature"].shape[0])
    good = a["walk_table"].view(NODE_DTYPE)
    n_records = int(good[0]["pad"]) + 1
    n_walk = good.shape[0] - n_records
    offsets = a["node_offset"]
    assert _table_fault(good, n_records, offsets, n_cols) is None
    paths = []
    for isa in (0, 1):
        try:
            _walk.table_sound(good.view(np.uint64), n_records, offsets, n_cols, isa)
            paths.append(isa)
        except ValueError:                      # (AVX2 where the CPU has it)
            pass
    assert 0 in paths
    rng = np.random.default_rng(12)
    refused = 0
    for _ in range(600):
        t = good.copy()
        i = int(rng.integers(n_walk - 1))
        tree = np.searchsorted(offsets, i, side="right") - 1
        size = int(offsets[tree + 1] - offsets[tree]) if tree < offsets.shape[0] - 1 else 1
        if rng.random() < 0.15:
            t["col"][n_records + i] = int(rng.choice([-1, n_cols - 1, n_cols, 2 ** 31 - 1,
                                                      -2 ** 31]))
        else:
            old = int(t["kid"][n_records + i, side := int(rng.integers(2))])
            edges = [(i + 1) * 24, i * 24, (n_walk - 2) * 24, (n_walk - 1) * 24, -24,
                     -24 * (size + 1), -24 * (size + 2), -24 * n_records,
                     -24 * (n_records + 1), 2 ** 31 - 1, -2 ** 31, -2147483640, 2147483640,
                     -2147483616, int(rng.integers(-2 ** 31, 2 ** 31))]
            value = int(rng.choice(edges)) + int(rng.choice([0, 0, 0, 1, -1, 8, -8, 24, -24]))
            t["kid"][n_records + i, side] = max(-2 ** 31, min(2 ** 31 - 1, value)) \
                if rng.random() < 0.9 else old
        want = _table_fault(t, n_records, offsets, n_cols)
        for isa in paths:                      # each path of the check on its own
            assert _walk.table_sound(t.view(np.uint64), n_records, offsets, n_cols, isa) == (
                want is None), (isa, i, want)
        try:
            _walk.WalkLayout(dict(a, walk_table=t.view(np.uint64)), model.n_features)
            got = None
        except ValueError as exc:
            assert "out of place" in str(exc), exc
            got = "refused"
        assert (got is None) == (want is None), (i, want)
        refused += got is not None
    assert 100 < refused < 600          # both sides of the rule were met


def test_a_layout_the_walk_cannot_follow_is_refused():
    model = _model("xgboost", seed=6)
    a = walk_arrays(model.ensemble)
    nodes = _index_nodes(a).view(NODE_DTYPE).copy()
    internal = np.flatnonzero(nodes["kid"][:, 0] >= 0)
    g = int(internal[internal < nodes.shape[0] - 2][-1])
    nodes["kid"][g, 0] = g                     # a child that is its parent: a walk never ends
    with pytest.raises(ValueError, match="out of place"):
        _walk.WalkLayout(_with_nodes(a, nodes), model.n_features)
    cols = _index_nodes(a).view(NODE_DTYPE).copy()
    cols["col"][0] = 10 ** 6
    with pytest.raises(ValueError, match="out of place"):
        _walk.WalkLayout(_with_nodes(a, cols), model.n_features)
    leaves = _index_nodes(a).view(NODE_DTYPE).copy()
    g = int(np.flatnonzero(leaves["kid"][:-2, 1] < 0)[0])
    leaves["kid"][g, 1] = ~1000                # a leaf its tree does not have
    with pytest.raises(ValueError, match="out of place"):
        _walk.WalkLayout(_with_nodes(a, leaves), model.n_features)
    with pytest.raises(ValueError, match="do not match the canonical nodes"):
        _walk.WalkLayout(_with_nodes(a, _index_nodes(a)[3:].copy()), model.n_features)
    # the table as a file holds it: a child between two rows, a leaf record that names
    # another leaf or steps away, a leaf child past the records
    rows = a["walk_table"].view(NODE_DTYPE)
    n = int(rows[0]["pad"]) + 1
    for field, at, value, match in (("kid", (n + 2, 0), 7 * 24 + 5, "out of place"),
                                    ("pad", (n - 1,), 3, "leaf records"),
                                    ("kid", (0, 1), 0, "leaf records"),
                                    ("thr", (1,), 0.5, "leaf records")):
        t = rows.copy()
        t[field][at] = value
        with pytest.raises(ValueError, match=match):
            _walk.WalkLayout(dict(a, walk_table=t.view(np.uint64)), model.n_features)
    t = rows.copy()
    g = int(np.flatnonzero(t["kid"][n:-2, 1] < 0)[0]) + n
    t["kid"][g, 1] = -(n + 1) * 24             # the record before the first: not a record
    with pytest.raises(ValueError, match="out of place"):
        _walk.WalkLayout(dict(a, walk_table=t.view(np.uint64)), model.n_features)
    with pytest.raises(ValueError, match="roots"):
        _walk.WalkLayout(dict(a, roots=a["roots"][:-1].copy()), model.n_features)
    # a root where the self-loop belongs: a cursor past its last tree would walk on
    roots = a["roots"].copy()
    roots[model.ensemble.n_trees] = roots[0]
    with pytest.raises(ValueError, match="roots"):
        _walk.WalkLayout(dict(a, roots=roots), model.n_features)
    # the row is expanded rule by rule over fill_cols, which must increase
    assert a["fill_cols"].shape[0] > 1
    with pytest.raises(ValueError, match="fill_cols"):
        _walk.WalkLayout(dict(a, fill_cols=a["fill_cols"][::-1].copy()), model.n_features)
    with pytest.raises(ValueError, match="fill_cols"):
        _walk.WalkLayout(dict(a, fill_cols=np.repeat(a["fill_cols"], 2)), model.n_features)


@pytest.mark.parametrize("family", ["lightgbm", "xgboost"])
def test_categorical_nodes_decided_by_their_tables(family):
    """Categorical splits whose categories are below 254 are settled by a code and a table
    bit (special_tables), the others by their own rule; both exact on category-like rows
    (fractions, negatives, categories past the codes, infinities, NaN), float32 rows too."""
    rng = np.random.default_rng(23)
    ens = random_ensemble(rng, family, n_trees=30, n_features=5, p_categorical=0.5)
    a = walk_arrays(ens)
    special = a["special_table"]
    is_cat = (a["flags"] & 1) == 1          # the others: NaN and +inf thresholds
    assert is_cat.any() and not is_cat.all()
    assert np.array_equal(special >= 0, is_cat)
    assert a["special_tables"].shape[0] == 32 * int(is_cat.sum())
    X = category_rows(rng, 90, ens.n_features)
    model = quickscorer.Model(ens)
    for rows in (X, X.astype(np.float32)):
        want = model.predict_raw(rows, algorithm="traversal")
        got = np.concatenate([model.predict_raw(rows[i:i + 1], algorithm="walk")
                              for i in range(rows.shape[0])])
        assert np.array_equal(got, want)
    # a node listing category 300 keeps its own rule; the others keep their tables
    big = build_tree(left=[1, -1, -1], right=[2, -1, -1], root=0, feature=[2, 0, 0],
                     threshold=[0.0] * 3, default_left=[True] * 3, missing_type=[0] * 3,
                     is_categorical=[True, False, False], categories={0: [1, 300]},
                     value=[0.0, 1.5, -2.0], n_features=5)
    mixed = Ensemble(trees=(big,) + tuple(ens.trees), tree_group=np.zeros(31, np.int64),
                     n_outputs=1, n_features=5, family=family, base_score=[0.0])
    b = walk_arrays(mixed)
    assert b["special_table"][0] == -1
    assert np.array_equal(b["special_table"][1:] >= 0, is_cat)
    mixed_model = quickscorer.Model(mixed)
    X[:5, 2] = [300.0, 1.0, 300.7, np.nan, 299.0]
    got = np.concatenate([mixed_model.predict_raw(X[i:i + 1], algorithm="walk")
                          for i in range(X.shape[0])])
    assert np.array_equal(got, mixed_model.predict_raw(X, algorithm="traversal"))
    # tables that do not fit the special nodes are refused
    for bad in (dict(a, special_table=special[:-1]),
                dict(a, special_table=np.full_like(special, special.shape[0])),
                dict(a, special_tables=a["special_tables"][:-1])):
        with pytest.raises(ValueError, match="special_table"):
            _walk.WalkLayout(bad, ens.n_features)


def test_block_starts_fill_each_block_up_to_the_budget():
    offsets = np.cumsum([0, 3, 0, 5, 1, 10, 2])          # nodes 3, 0, 5, 1, 10, 2
    assert walk_block_starts(offsets, 8 * 24).tolist() == [0, 3, 4, 5, 6]
    # a tree a block, but the tree of no node, which joins the next
    assert walk_block_starts(offsets, 1).tolist() == [0, 1, 3, 4, 5, 6]
    assert walk_block_starts(offsets, 10 ** 9).tolist() == [0, 6]
    assert walk_block_starts(np.zeros(1, np.int64), 100).tolist() == [0, 0]
    a = walk_arrays(_model("lightgbm").ensemble)
    assert a["block_starts"].tolist() == [0, 40]               # without a budget, one block


def _linear_ensemble() -> Ensemble:
    return Ensemble(trees=(linear_tree(7),) * 19, tree_group=[0] * 19, n_outputs=1, n_features=7,
                    family="lightgbm", base_score=[0.25])


@pytest.mark.parametrize("complete", [False, True])
@pytest.mark.parametrize("kind", ["lightgbm", "xgboost", "multiclass", "categorical",
                                  "linear"])
def test_calls_of_many_rows_walk_chunks_of_rows_through_tree_blocks_exactly(kind, complete):
    """From BLOCKED_MIN_ROWS rows a thread, where the model takes several tree blocks (or
    its trees are walked complete), the rows walk a chunk at a time through each block,
    tree by tree (complete trees) or eight trees a row: the reference's leaves and scores
    for any block size (a tree a block, a few trees, a block too small for any tree), chunk
    (one row, three, more than the call) and thread count, rows past the last full chunk
    included."""
    rng = np.random.default_rng(31)
    if kind == "linear":
        ens = _linear_ensemble()
    else:
        family = "xgboost" if kind == "xgboost" else "lightgbm"
        ens = random_ensemble(rng, family, n_trees=37, n_outputs=3 if kind == "multiclass"
                              else 1, n_features=7, max_leaves=16,
                              p_categorical=0.4 if kind == "categorical" else 0.0)
    model = quickscorer.Model(ens)
    X = (category_rows if kind == "categorical" else special_rows)(rng, 101, 7)
    want_raw = model.predict_raw(X, algorithm="traversal")
    want_leaf = model.predict_leaf(X, algorithm="traversal")
    k = ens.n_outputs
    table = 24 * int(np.sum(ens.n_leaves - 1))
    for block_bytes in (1, table // 5, table // 2):
        for chunk in (1, 3, 500):
            walk = Walk(ens, model.plan.forest, block_bytes=block_bytes, chunk_rows=chunk,
                        complete=complete)
            assert walk.layout.n_blocks > 1 and walk.complete == complete
            for rows in (X, X[:walk_mod.BLOCKED_MIN_ROWS], X[:walk_mod.COMPLETE_MIN_ROWS + 5],
                         X.astype(np.float32)):
                xgbm = ens.family == "xgboost"
                for n_threads in (1, 2):
                    assert walk._blocked(rows, 1)
                    out = np.full((rows.shape[0], k), np.nan, np.float32 if xgbm else float)
                    none64, none32 = np.empty((0, 0)), np.empty((0, 0), np.float32)
                    walk.predict_raw(rows, none64 if xgbm else out, out if xgbm else none32,
                                     n_threads)
                    n = rows.shape[0]
                    assert np.array_equal(out, want_raw[:n] if rows.dtype == X.dtype
                                          else model.predict_raw(rows, algorithm="traversal"))
                    leaves = np.full((n, ens.n_trees), -1, np.int32)
                    walk.predict_leaf(rows, leaves, n_threads)
                    assert np.array_equal(leaves, want_leaf[:n] if rows.dtype == X.dtype
                                          else model.predict_leaf(rows, algorithm="traversal"))
    # below BLOCKED_MIN_ROWS a thread, and on a model of one block, the row-by-row walk
    walk = Walk(ens, model.plan.forest, block_bytes=1, chunk_rows=4, complete=complete)
    assert not walk._blocked(X[:walk_mod.BLOCKED_MIN_ROWS - 1], 1)
    assert not walk._blocked(X[:2 * walk_mod.BLOCKED_MIN_ROWS - 1], 2)
    one = Walk(ens, model.plan.forest, block_bytes=10 ** 9, complete=complete)
    assert one.layout.n_blocks == 1 and one._blocked(X, 1) == complete
    # complete trees from COMPLETE_MIN_ROWS rows a thread; fewer, on one block, row by row
    assert not one._blocked(X[:walk_mod.COMPLETE_MIN_ROWS - 1], 1)
    assert one._blocked(X[:walk_mod.COMPLETE_MIN_ROWS], 1) == complete
    assert not one._blocked(X[:2 * walk_mod.COMPLETE_MIN_ROWS - 1], 2)
    got = np.empty((X.shape[0], k), np.float32 if ens.family == "xgboost" else float)
    one.predict_raw(X, np.empty((0, 0)) if ens.family == "xgboost" else got,
                    got if ens.family == "xgboost" else np.empty((0, 0), np.float32), 1)
    assert np.array_equal(got, want_raw)


def test_the_default_walk_blocks_by_the_l2_cache_and_the_tuning_table():
    ens = random_ensemble(np.random.default_rng(5), "lightgbm", n_trees=200, n_features=7,
                          max_leaves=60)
    model = quickscorer.Model(ens)
    nodes = int(np.sum(ens.n_leaves - 1))
    eight = Walk(ens, model.plan.forest, complete=False)
    assert eight.block_bytes == walk_mod.default_block_bytes(False)
    assert eight.chunk_rows == walk_mod.CHUNK_ROWS
    shallow = random_ensemble(np.random.default_rng(5), "xgboost", n_trees=50, n_features=7,
                              max_leaves=8)
    full = Walk(shallow, quickscorer.Model(shallow).plan.forest, complete=True)
    assert full.complete and full.block_bytes == walk_mod.default_block_bytes(True)
    assert full.chunk_rows == walk_mod.CHUNK_ROWS_COMPLETE
    assert walk_mod.default_block_bytes(True) < walk_mod.default_block_bytes(False)
    assert "complete trees, tree by tree" in full.many_rows
    assert eight.many_rows.startswith("row by row")      # 144 KiB of nodes: one block
    blocked = Walk(ens, model.plan.forest, block_bytes=24 * nodes // 4, complete=False)
    assert "eight trees a row" in blocked.many_rows
    m = quickscorer.Model(shallow)
    assert "walk_many_rows" not in m.info()
    m.predict_raw(special_rows(np.random.default_rng(1), 3, 7), algorithm="walk")
    # these random trees hold too many slots a node for complete trees by default, and
    # their nodes fit one block
    assert not m.prepare("walk").complete
    assert m.info()["walk_many_rows"] == "row by row (the model is one tree block)"
    forest = quickscorer.Model(shallow).plan.forest
    assert Walk(shallow, forest, tuning=T.replace(walk_complete=True)).complete
    off = T.replace(walk_complete=False)
    assert not Walk(shallow, forest, tuning=off).complete
    assert Walk(shallow, forest, tuning=off, complete=True).complete     # the argument wins
    walk = Walk(ens, model.plan.forest,
                tuning=T.replace(walk_block_bytes=24 * nodes // 4, walk_chunk_rows=5))
    assert walk.chunk_rows == 5 and walk.layout.n_blocks >= 4
    X = special_rows(np.random.default_rng(6), 64, 7)
    got = np.empty((64, 1))
    walk.predict_raw(X, got, np.empty((0, 0), np.float32), 1)
    assert np.array_equal(got, model.predict_raw(X, algorithm="traversal"))


def test_block_starts_that_do_not_split_the_trees_are_refused():
    model = _model("lightgbm", seed=9)
    a = walk_arrays(model.ensemble, 24 * 20)
    assert a["block_starts"].shape[0] > 2
    for bad in (a["block_starts"][1:], a["block_starts"][:-1], a["block_starts"][::-1],
                np.array([0, 5, 5, 40], np.int64), np.array([0], np.int64),
                a["block_starts"].astype(np.int32)):
        with pytest.raises(ValueError, match="block_starts"):
            _walk.WalkLayout(dict(a, block_starts=bad), model.n_features)
    lay = _walk.WalkLayout(a, model.n_features)
    assert lay.n_blocks == a["block_starts"].shape[0] - 1
    X = special_rows(np.random.default_rng(3), 20, model.n_features)
    with pytest.raises(ValueError, match="chunk"):
        _walk.predict_raw_blocked(model.plan.forest, lay, X, np.empty((20, 1)),
                                  np.empty((0, 0), np.float32),
                                  np.zeros((1, 10 ** 5), np.uint64), 1, 0)
    with pytest.raises(ValueError, match="scratch"):
        _walk.predict_raw_blocked(model.plan.forest, lay, X, np.empty((20, 1)),
                                  np.empty((0, 0), np.float32),
                                  np.zeros((1, 4 * lay.chunk_row_words - 1), np.uint64), 1, 4)


def test_complete_trees_put_each_node_in_its_heap_slot_and_each_leaf_below_it():
    """A tree of depth 3 whose nodes go right: the root in slot 0, its right child n1 in
    slot 2 (level 1, position 1), n1's right child n2 in slot 6 (level 2, position 3); slots
    1, 3, 4 and 5 send rows left (+inf). End slots by position: the root's left leaf (level
    1, position 0) at slot 0, n1's (level 2, position 2) at 4, n2's two at 6 and 7. The
    one-leaf tree beside it takes its group's depth, 3: seven slots sending rows left, eight
    end slots of its leaf; six fill trees of depth 3 make the group's eight."""
    tree = build_tree(left=[1, -1, 3, -1, 5, -1, -1], right=[2, -1, 4, -1, 6, -1, -1],
                      root=0, feature=[0, 0, 1, 0, 0, 0, 0],
                      threshold=[1.0, 0, 2.0, 0, 3.0, 0, 0], default_left=[True] * 7,
                      missing_type=[2] * 7, is_categorical=[False] * 7, categories=None,
                      value=[0, 10.0, 0, 20.0, 0, 30.0, 40.0], n_features=2)
    one = build_tree(left=[-1], right=[-1], root=0, feature=[0], threshold=[0.0],
                     default_left=[True], missing_type=[0], is_categorical=[False],
                     categories=None, value=[5.0], n_features=2)
    ens = Ensemble(trees=(tree, one), tree_group=[0, 0], n_outputs=1, n_features=2,
                   family="lightgbm", base_score=[0.0])
    a = walk_arrays(ens, complete=True)
    cn = a["cnodes"].view(walk_mod.CNODE_DTYPE)
    assert a["cdepth"].tolist() == [3, 3]
    assert a["cnode_offset"].tolist() == [0, 7, 14]
    assert a["cslot_offset"].tolist() == [0, 8, 16]
    assert cn.shape[0] == 8 * 7 and a["cslot_leaf"].shape[0] == 8 * 8
    assert cn["thr"][:7].tolist() == [1.0, np.inf, 2.0, np.inf, np.inf, np.inf, 3.0]
    assert np.all(cn["thr"][7:] == np.inf)         # the one-leaf tree and the fill trees
    fill = a["fill_cols"]
    assert [int(fill[c] % 2) for c in cn["col"][[0, 2, 6]]] == [0, 1, 0]
    assert a["cslot_leaf"][[0, 4, 6, 7]].tolist() == [0, 1, 2, 3]
    assert np.all(a["cslot_leaf"][8:] == 0)        # leaf 0 of the one-leaf tree, fill trees'
    assert walk_mod.group_depths(ens, walk_mod.node_levels(ens, 9)[0]).tolist() == [3]
    assert walk_mod.complete_groups(ens) is None    # 14 slots for 3 nodes: not by default
    X = np.array([[0.5, 9.0], [1.5, 1.0], [1.5, 3.0], [9.0, 3.0], [np.nan, 5.0],
                  [2.0, np.nan], [np.inf, np.inf], [-np.inf, 0.0]] * 3)
    model = quickscorer.Model(ens)
    walk = Walk(ens, model.plan.forest, complete=True)
    leaves = np.empty((X.shape[0], 2), np.int32)
    walk.predict_leaf(X, leaves, 1)
    assert np.array_equal(leaves, model.predict_leaf(X, algorithm="traversal"))
    with pytest.raises(ValueError, match="deeper"):
        walk_mod.complete_arrays(ens, np.zeros(3, np.int64), np.zeros(3), max_depth=2)


def test_complete_trees_are_chosen_where_they_hold_few_slots_per_node():
    """The automatic choice walks complete trees where they hold at most COMPLETE_MAX_SLOTS
    slots per node: balanced trees do (1 slot a node), a chain of 10 nodes does not (102.3)."""
    rng = np.random.default_rng(12)
    n = 10
    # nodes 0 .. n - 1 in a chain through their right children, each left child a leaf
    left = [-1] * (2 * n + 1)
    right = [-1] * (2 * n + 1)
    for i in range(n):
        left[i] = n + i                      # a leaf
        right[i] = i + 1 if i + 1 < n else 2 * n
    chain = build_tree(left=left, right=right, root=0, feature=[0] * (2 * n + 1),
                       threshold=[float(i) for i in range(2 * n + 1)],
                       default_left=[True] * (2 * n + 1), missing_type=[0] * (2 * n + 1),
                       is_categorical=[False] * (2 * n + 1), categories=None,
                       value=[float(i) for i in range(2 * n + 1)], n_features=2)
    deep = Ensemble(trees=(chain,), tree_group=[0], n_outputs=1, n_features=2,
                    family="lightgbm", base_score=[0.0])
    assert walk_arrays(deep, complete=None)["cdepth"].shape[0] == 0
    assert walk_arrays(deep, complete=True)["cdepth"].tolist() == [10]
    assert walk_arrays(deep, complete=False)["cdepth"].shape[0] == 0
    # one node deeper than COMPLETE_MAX_DEPTH: no complete trees even when asked
    n1 = walk_mod.COMPLETE_MAX_DEPTH + 1
    left, right = [-1] * (2 * n1 + 1), [-1] * (2 * n1 + 1)
    for i in range(n1):
        left[i], right[i] = n1 + i, (i + 1 if i + 1 < n1 else 2 * n1)
    longer = build_tree(left=left, right=right, root=0, feature=[0] * (2 * n1 + 1),
                        threshold=[float(i) for i in range(2 * n1 + 1)],
                        default_left=[True] * (2 * n1 + 1), missing_type=[0] * (2 * n1 + 1),
                        is_categorical=[False] * (2 * n1 + 1), categories=None,
                        value=[float(i) for i in range(2 * n1 + 1)], n_features=2)
    too_deep = Ensemble(trees=(chain, longer), tree_group=[0, 0], n_outputs=1, n_features=2,
                        family="lightgbm", base_score=[0.0])
    assert walk_arrays(too_deep, complete=True)["cdepth"].shape[0] == 0
    assert not Walk(too_deep, quickscorer.Model(too_deep).plan.forest, complete=True).complete
    bal = random_ensemble(rng, "xgboost", n_trees=5, n_features=4, max_leaves=2)
    assert walk_arrays(bal, complete=None)["cdepth"].shape[0] == 5
    model = quickscorer.Model(deep)
    assert Walk(deep, model.plan.forest).complete is False
    assert Walk(deep, model.plan.forest, complete=True).complete is True
    assert walk_mod.complete_groups(deep) is None and walk_mod.complete_groups(too_deep) is None
    assert walk_mod.complete_groups(bal).tolist() == [_depth(bal)]
    # Walk lays them out wherever they fit (one row walks them eight trees at a time):
    # balanced trees of 512 leaves whose root splits by category, trees of 4 leaves
    big = _balanced(9, categorical_level=0)
    assert "rapidscorer" not in quickscorer.Model(big).supported_algorithms()
    m = quickscorer.Model(big)
    assert Walk(big, m.plan.forest).complete
    assert Walk(bal, quickscorer.Model(bal).plan.forest).complete
    X = np.column_stack([np.linspace(-1.0, 1100.0, 100), np.arange(100) % 9 - 1.0])
    assert np.array_equal(m.predict_raw(X), m.predict_raw(X, algorithm="traversal"))
    assert "complete trees" in m.info()["walk_many_rows"]
    assert "(float32)" not in m.info()["walk_many_rows"]      # a LightGBM model: float64


def test_complete_fields_that_do_not_fit_are_refused():
    ens = random_ensemble(np.random.default_rng(13), "xgboost", n_trees=30, n_features=7,
                          max_leaves=12)
    model = quickscorer.Model(ens)
    a = walk_arrays(ens, complete=True)
    assert _walk.WalkLayout(a, model.n_features).complete
    cn = a["cnodes"].view(walk_mod.CNODE_DTYPE)
    for bad, message in (
            (dict(a, cdepth=a["cdepth"] + 1), "offsets"),
            (dict(a, cnode_offset=a["cnode_offset"][:-1].copy()), "offsets"),
            (dict(a, cslot_leaf=a["cslot_leaf"][:-1].copy()), "offsets"),
            (dict(a, cslot_leaf=a["cslot_leaf"] + 1000), "out of place"),
            (dict(a, cnodes=_cols(cn, 10 ** 6)), "out of place"),
            (dict(a, cnodes=_cols(cn, -1)), "out of place")):
        with pytest.raises(ValueError, match=message):
            _walk.WalkLayout(bad, model.n_features)


def _depth(ens):
    """The depth of the deepest tree of a model of at most eight trees."""
    level = walk_mod.node_levels(ens, 64)[0]
    return int(level.max()) + 1 if level.shape[0] else 0


def _cols(cn, value):
    bad = cn.copy()
    bad["col"][0] = value
    return bad.view(np.uint64)


def test_xgboost_complete_trees_compare_in_float32_where_every_threshold_is_a_float32():
    """XGBoost models whose thresholds are all float32 values (as the importers make them)
    get float32 slots (CNODE32_DTYPE): the thresholds' order keys, compared with the keys of
    the rows' float32 values. The reference's scores and leaves on rows with NaN,
    infinities, both zeros (and thresholds of both) and values next to the thresholds,
    through every walk of them: chunks of rows, one row and two rows together (their sums
    and their leaves; one output and three). A threshold that is no float32, or a LightGBM
    model, keeps float64 slots."""
    rng = np.random.default_rng(41)
    f32_thresholds = (-1.0, 0.0, -0.0, 0.5, 2.0, float(np.float32(1e-36)), np.inf, -np.inf)
    ens = random_ensemble(rng, "xgboost", n_trees=30, n_features=5, max_leaves=14,
                          p_categorical=0.0, thresholds=f32_thresholds)
    model = quickscorer.Model(ens)
    walk = Walk(ens, model.plan.forest, complete=True)
    assert walk.complete and walk.layout.cfloat
    a = walk._arrays
    # one word a slot (the two fill trees of the last group included)
    assert a["cnodes"].shape[0] == a["cnode_offset"][-1] + 2 * (2 ** int(a["cdepth"][-1]) - 1)
    X = special_rows(rng, 150, 5).astype(np.float32)
    X[:40] = np.float32(1e-36) * rng.choice([-1, 1, 0.5, 2], size=(40, 5))
    X[40:50] = np.nextafter(np.float32(0.5), np.float32([[-np.inf], [np.inf]] * 5))[:10]
    X[50:60] = rng.choice(np.float32([0.0, -0.0, 1e-36, -1e-36]), size=(10, 5))
    out = np.empty((150, 1), np.float32)
    walk.predict_raw(X, np.empty((0, 0)), out, 1)
    assert np.array_equal(out, model.predict_raw(X, algorithm="traversal"))
    leaves = np.empty((150, 30), np.int32)
    walk.predict_leaf(X, leaves, 2)
    assert np.array_equal(leaves, model.predict_leaf(X, algorithm="traversal"))
    # the low-latency entry (one row; two rows together), and the row loop's leaves
    multi = random_ensemble(np.random.default_rng(42), "xgboost", n_trees=30, n_outputs=3,
                            n_features=5, max_leaves=14, p_categorical=0.0,
                            thresholds=f32_thresholds)
    for e in (ens, multi):
        m = quickscorer.Model(e)
        w = Walk(e, m.plan.forest, complete=True)
        assert w.layout.cfloat
        for n in (1, 2, 3, 5):
            for i in range(0, 60, n):
                rows = X[i:i + n]
                want = m.predict_raw(rows, algorithm="traversal")
                got = _kernel.predict_small(m.plan.forest, w.layout, rows, False)
                assert np.array_equal(got.reshape(want.shape), want)
        got = np.empty((60, 30), np.int32)
        for i in range(0, 60, 5):       # under 8 rows a call: row by row
            w.predict_leaf(X[i:i + 5], got[i:i + 5], 1)
        assert np.array_equal(got, m.predict_leaf(X[:60], algorithm="traversal"))
    # 1e-36 itself is no float32: those slots stay float64
    wide = random_ensemble(np.random.default_rng(41), "xgboost", n_trees=30, n_features=5,
                           max_leaves=14, p_categorical=0.0)
    assert np.any(np.asarray(wide.trees.arrays["threshold"]) == 1e-36)
    w64 = Walk(wide, quickscorer.Model(wide).plan.forest, complete=True)
    assert w64.complete and not w64.layout.cfloat
    lgb = random_ensemble(rng, "lightgbm", n_trees=10, n_features=5, max_leaves=14,
                          p_categorical=0.0, thresholds=f32_thresholds)
    assert not Walk(lgb, quickscorer.Model(lgb).plan.forest, complete=True).layout.cfloat
    # float32 slots that do not fit are refused
    c32 = a["cnodes"].view(walk_mod.CNODE32_DTYPE).copy()
    c32["col"][0] = 10 ** 6
    with pytest.raises(ValueError, match="out of place"):
        _walk.WalkLayout(dict(a, cnodes=c32.view(np.uint64)), 5)
    for nan in (np.float32(np.nan), -np.float32(np.nan)):      # a NaN's key, either sign
        c32 = a["cnodes"].view(walk_mod.CNODE32_DTYPE).copy()
        c32["key"][0] = np.array([nan], np.float32).view(np.uint32)[0] ^ np.uint32(
            0xFFFFFFFF if np.signbit(nan) else 0x80000000)
        with pytest.raises(ValueError, match="out of place"):
            _walk.WalkLayout(dict(a, cnodes=c32.view(np.uint64)), 5)


def test_float32_keys_order_as_the_values_do():
    """walk.float32_keys (the float32 slots' thresholds; walk.h walk_key32 the rows'):
    ``a > b`` exactly when ``key(a) > key(b)``, on every pair of a set of float32 values
    with both zeros, both infinities, subnormals, the extremes and random values of every
    magnitude; -0.0 and 0.0 share one key."""
    rng = np.random.default_rng(47)
    f32 = np.finfo(np.float32)
    special = np.array([0.0, -0.0, np.inf, -np.inf, f32.max, -f32.max, f32.tiny, -f32.tiny,
                        f32.smallest_subnormal, -f32.smallest_subnormal, 1.0, -1.0,
                        np.nextafter(np.float32(1), np.float32(2)),
                        np.nextafter(np.float32(-1), np.float32(-2))], np.float32)
    bits = rng.integers(0, 2 ** 32, 3000, dtype=np.uint64).astype(np.uint32)
    values = np.concatenate([special, bits.view(np.float32)])
    values = values[~np.isnan(values)]
    keys = walk_mod.float32_keys(values)
    assert keys.dtype == np.uint32
    assert np.array_equal(values[:, None] > values[None, :], keys[:, None] > keys[None, :])
    assert walk_mod.float32_keys(np.float32(-0.0)) == walk_mod.float32_keys(np.float32(0.0))


def test_a_real_xgboost_model_walks_float32_complete_trees_exactly():
    """An XGBoost model trained by XGBoost (depth 4, NaN in its training rows): its imported
    thresholds are float32 values, so the walk's complete trees ($QUICKSCORER_WALK_COMPLETE:
    rapidscorer takes this model's calls of many rows by default) compare in float32;
    XGBoost's own margins, float32 rows and float64 rows (which XGBoost reads as float32)."""
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(43)
    X = rng.normal(size=(600, 6))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 0]) * 2 + np.nan_to_num(X[:, 1]) ** 2 + rng.normal(size=600) * 0.1
    booster = xgb.train({"max_depth": 4, "eta": 0.3, "base_score": 0.5, "nthread": 1},
                        xgb.DMatrix(X, label=y, missing=np.nan), num_boost_round=40)
    model = quickscorer.Model(quickscorer.load_ensemble(booster), tuning=COMPLETE)
    walk = model.prepare("walk")
    assert walk.complete and walk.layout.cfloat
    want = booster.predict(xgb.DMatrix(X, missing=np.nan), output_margin=True)
    for rows in (X, X.astype(np.float32)):
        got = model.predict_raw(rows, algorithm="walk")[:, 0]
        assert np.array_equal(got, want)


def _chain(depth: int, family: str) -> Ensemble:
    """One tree: a chain of ``depth`` nodes through their right children, each left child a
    leaf, thresholds 0, 1, 2, ... on feature 0 and 1 in turn."""
    k = 2 * depth + 1
    left = [depth + i if i < depth else -1 for i in range(k)]
    right = [(i + 1 if i + 1 < depth else 2 * depth) if i < depth else -1 for i in range(k)]
    tree = build_tree(left=left, right=right, root=0, feature=[i % 2 for i in range(k)],
                      threshold=[float(i) for i in range(k)], default_left=[True] * k,
                      missing_type=[2] * k, is_categorical=[False] * k, categories=None,
                      value=[0.25 * i for i in range(k)], n_features=2)
    return tree


@pytest.mark.parametrize("family, f32", [("lightgbm", False), ("xgboost", False),
                                         ("xgboost", True)])
@pytest.mark.parametrize("n_trees, n_outputs", [(1, 1), (7, 1), (9, 1), (17, 1), (24, 2)])
def test_one_row_walks_complete_trees_eight_at_a_time_exactly(family, f32,
                                                              n_trees, n_outputs):
    """Where the walk has complete trees, a row walks them eight trees of a group at a time
    (walk.h WALK_GROUPS; the last group filled up with trees past the model's): trees of
    1 to 12 leaves, so groups of several depths, each tree padded to its group's; categorical
    splits; float32 slots (XGBoost thresholds that are float32 values) and float64; one
    output (the sum in tree order) and two. The reference's scores of one-row calls (the
    entry) and leaves of calls of a few rows (the general path, row by row), on rows with
    NaN, zeros, infinities and values next to the thresholds."""
    rng = np.random.default_rng(50 + n_trees)
    # float32 values only, or 0.1 and 1e-36 among them (no float32: float64 slots)
    thresholds = (-1.0, 0.0, 0.5, 2.0, np.inf, -np.inf) + (() if f32 else (0.1, 1e-36))
    ens = random_ensemble(rng, family, n_trees=n_trees, n_outputs=n_outputs, n_features=5,
                          max_leaves=12, thresholds=thresholds)
    model = quickscorer.Model(ens, tuning=COMPLETE)
    walk = model.prepare("walk")
    assert walk.complete and walk.layout.cfloat == f32
    kind = "complete trees (float32), " if f32 else "complete trees, "
    # one output: the leaf values added group by group; two: the leaves stored, then summed
    assert model.info()["walk_few_rows"].startswith(
        kind + ("leaf values added group by group, one row sixteen" if n_outputs == 1
                else "eight trees at a time"))
    assert (walk.layout.slot_values is None) == (n_outputs > 1)
    depth = walk._arrays["cdepth"]
    assert np.all(depth.reshape(-1)[: n_trees // 8 * 8].reshape(-1, 8) == depth[::8][
        : n_trees // 8, None])
    X = category_rows(rng, 60, 5)
    near = [np.nextafter(t, side) for t in (-1.0, 0.1, 0.5, 2.0) for side in (-np.inf, np.inf)]
    X[:10] = rng.choice(near + [0.1, 0.5, 2.0], size=(10, 5))
    if family == "xgboost":
        X = X.astype(np.float32)
    want = model.predict_raw(X, algorithm="traversal")
    for i in range(X.shape[0]):
        assert np.array_equal(model.predict_raw(X[i:i + 1], algorithm="walk"), want[i:i + 1])
    # calls of 2 to 9 rows through the entry: two rows at a time (walk_exits2), an odd last
    # one alone
    for n in range(2, 10):
        for i in range(0, X.shape[0] - n, 7):
            got = model.predict_raw(X[i:i + n], algorithm="walk")
            assert np.array_equal(got, want[i:i + n]), (n, i)
    leaves = model.predict_leaf(X[:5], algorithm="walk")
    assert np.array_equal(leaves, model.predict_leaf(X[:5], algorithm="traversal"))


@pytest.mark.parametrize("family", ["lightgbm", "xgboost"])
def test_groups_of_complete_trees_deeper_than_the_unrolled_depths(family):
    """Groups 9 and 10 levels deep (the group walk's copies by depth stop at
    WALK_GROUP_DEPTHS, 8; deeper groups take its loop with the depth a variable), beside
    a group of depth 0 (trees that are one leaf) and of depth 8, in one model."""
    leaf = build_tree(left=[-1], right=[-1], root=0, feature=[0], threshold=[0.0],
                      default_left=[True], missing_type=[0], is_categorical=[False],
                      categories=None, value=[1.5], n_features=2)
    trees = [leaf] * 8 + [_chain(8, family)] * 3 + [leaf] * 5 + [_chain(9, family)] * 8 + [
        _chain(10, family)] + [leaf] * 2
    ens = Ensemble(trees=tuple(trees), tree_group=[0] * len(trees), n_outputs=1,
                   n_features=2, family=family, base_score=[0.25])
    model = quickscorer.Model(ens, tuning=COMPLETE)
    walk = model.prepare("walk")
    assert walk.complete
    assert walk._arrays["cdepth"][::8].tolist() == [0, 8, 9, 10]
    X = np.column_stack([np.arange(-1.0, 12.0, 0.5), np.arange(12.0, -1.0, -0.5)])
    X = np.vstack([X, [[np.nan, 3.0], [np.inf, np.inf], [-np.inf, np.nan], [0.0, -0.0]]])
    want = model.predict_raw(X, algorithm="traversal")
    for i in range(X.shape[0]):
        assert np.array_equal(model.predict_raw(X[i:i + 1], algorithm="walk"), want[i:i + 1])
    assert np.array_equal(model.predict_leaf(X[:3], algorithm="walk"),
                          model.predict_leaf(X[:3], algorithm="traversal"))


@pytest.mark.parametrize("family, f32, dart", [("lightgbm", False, False),
                                               ("xgboost", False, False),
                                               ("xgboost", True, False),
                                               ("xgboost", True, True)])
def test_one_and_two_rows_add_the_leaf_values_group_by_group(family, f32, dart):
    """Where the forest has one output and no linear leaves, the walk's layout takes each
    end slot's leaf value (attach_values: float32 for XGBoost, times the DART weight; float64
    otherwise), and one or two rows add them as each group of eight trees ends
    (WALK_GROUPS_SUM), in tree order: the reference's scores bit for bit, for 1 to 17
    trees (a last group of 1 to 8 trees, whose fill trees add nothing) and rows of 1 to 5.
    Values taken from another forest are never added to this one's scores."""
    thresholds = (-1.0, 0.0, 0.5, 2.0) + (() if f32 else (0.1,))
    for n_trees in (1, 3, 8, 9, 16, 17):
        rng = np.random.default_rng(900 + n_trees)
        ens = random_ensemble(rng, family, n_trees=n_trees, n_features=4, max_leaves=9,
                              thresholds=thresholds)
        if dart:
            ens = Ensemble(trees=ens.trees, tree_group=ens.tree_group, n_outputs=1,
                           n_features=4, family=family, base_score=ens.base_score,
                           tree_weight=np.round(rng.random(n_trees) + 0.25, 3))
        model = quickscorer.Model(ens, tuning=COMPLETE)
        walk = model.prepare("walk")
        assert walk.complete and walk.layout.cfloat == f32
        values = walk.layout.slot_values
        X = special_rows(rng, 40, 4).astype(np.float32 if family == "xgboost" else np.float64)
        if dart and FUSED_SUMS:
            # where the DART sum is fused (AArch64) a slot cannot hold the weighted leaf: the
            # leaves are stored, then summed, still the reference's scores
            assert values is None and not walk.layout.attach_values(walk.forest)
            want = model.predict_raw(X, algorithm="traversal")
            for i in range(0, X.shape[0] - 2, 3):
                assert np.array_equal(model.predict_raw(X[i:i + 2], algorithm="walk"),
                                      want[i:i + 2])
            continue
        assert values is not None
        assert values.dtype == (np.float32 if family == "xgboost" else np.float64)
        # every end slot's, the fill trees' NaN (never added)
        real = walk._arrays["cslot_offset"][n_trees]
        assert values.shape[0] == walk._arrays["cslot_leaf"].shape[0]
        assert not np.isnan(values[:real]).any() and np.isnan(values[real:]).all()
        assert values.shape[0] - real == (-n_trees % 8) * (1 << int(walk._arrays["cdepth"][-1]))
        want = model.predict_raw(X, algorithm="traversal")
        for n in (1, 2, 3, 5):
            for i in range(0, X.shape[0] - n, 3):
                got = model.predict_raw(X[i:i + n], algorithm="walk")
                assert np.array_equal(got, want[i:i + n]), (n_trees, n, i)
                assert np.array_equal(np.signbit(got), np.signbit(want[i:i + n]))
        # another forest's values (every leaf doubled) are not this forest's
        doubled = tuple(dataclasses.replace(t, leaf_value=2 * t.leaf_value) for t in ens.trees)
        other = quickscorer.Model(dataclasses.replace(ens, trees=doubled), tuning=COMPLETE)
        assert walk.layout.attach_values(other.plan.forest)
        assert np.array_equal(walk.layout.slot_values, 2 * values, equal_nan=True)
        for i in range(0, 10):
            assert np.array_equal(model.predict_raw(X[i:i + 2], algorithm="walk"),
                                  want[i:i + 2])
        assert walk.layout.attach_values(walk.forest)
        assert np.array_equal(walk.layout.slot_values, values, equal_nan=True)
        # a forest whose trees have fewer leaves than the layout's is refused
        if max(t.n_leaves for t in ens.trees) > 1:
            one = build_tree(left=[-1], right=[-1], root=0, feature=[0], threshold=[0.0],
                             default_left=[True], missing_type=[0], is_categorical=[False],
                             categories=None, value=[1.5], n_features=4)
            small = quickscorer.Model(dataclasses.replace(ens, trees=(one,) * n_trees),
                                      tuning=COMPLETE)
            with pytest.raises(ValueError, match="not a leaf of the forest"):
                walk.layout.attach_values(small.plan.forest)


def test_no_leaf_values_are_taken_for_several_outputs_or_linear_leaves():
    """attach_values takes nothing where the walk stores the leaves instead (several
    outputs, linear leaves) or the trees are not laid out complete."""
    rng = np.random.default_rng(5)
    two = quickscorer.Model(random_ensemble(rng, "lightgbm", n_trees=10, n_outputs=2,
                                            max_leaves=6), tuning=COMPLETE)
    assert two.prepare("walk").complete and two.prepare("walk").layout.slot_values is None
    lin = quickscorer.Model(Ensemble(trees=(linear_tree(),) * 3, tree_group=[0] * 3,
                                     n_outputs=1, n_features=3, family="lightgbm",
                                     base_score=[0.0]), tuning=COMPLETE)
    walk = lin.prepare("walk")
    assert walk.complete and walk.layout.slot_values is None
    assert not walk.layout.attach_values(lin.plan.forest)
    one = quickscorer.Model(random_ensemble(rng, "lightgbm", n_trees=10, max_leaves=6),
                            tuning=T.replace(walk_complete=False))
    walk = one.prepare("walk")
    assert not walk.complete and not walk.layout.attach_values(one.plan.forest)


def test_walk_tables_put_each_leaf_number_s_record_before_the_table():
    """walk8 steps on leaf l's record at index -1 - l until the harvest: the record sends
    every row to itself (threshold +inf, both children its own offset) and holds l, one for
    every leaf number; children and roots are byte offsets, which to_indices undoes."""
    model = _model("lightgbm", seed=3)
    a = walk_arrays(model.ensemble)
    index = _index_nodes(a)
    table, n, roots = _walk.walk_tables(index, a["roots"])
    assert np.array_equal(table, a["walk_table"])           # walk_arrays' table is this one
    size = _walk.NODE_BYTES
    assert size == 24
    # leaf numbers are in-order numbers within a tree: one record per leaf of the largest
    assert model.info()["max_leaves"] > 1 and n == model.info()["max_leaves"]
    rec = table.view(NODE_DTYPE)
    want = index.view(NODE_DTYPE)
    got = rec[n:]
    assert np.array_equal(got["thr"], want["thr"]) and np.array_equal(got["col"], want["col"])
    assert np.array_equal(got["kid"], want["kid"] * size)
    for leaf in range(n):
        r = rec[n - 1 - leaf]                  # index -1 - leaf from the table's start
        assert r["thr"] == np.inf and r["pad"] == leaf
        assert tuple(r["kid"]) == ((-1 - leaf) * size, (-1 - leaf) * size)
    assert np.array_equal(roots[:a["roots"].shape[0]], a["roots"] * size)
    assert roots.shape[0] == model.ensemble.n_trees + 16
    assert np.all(roots[model.ensemble.n_trees:] == (index.shape[0] // 3 - 1) * size)


def test_walk_layout_survives_pickling_with_its_byte_offsets():
    """A pickled walk layout is rebuilt from its table, byte offsets as they were: the copy's
    table is the original's."""
    import pickle
    model = _model("lightgbm", seed=5)
    layout = model.prepare("walk").layout
    copy = pickle.loads(pickle.dumps(layout))
    assert np.array_equal(copy.walk_nodes(), layout.walk_nodes())
    assert copy.n_blocks == layout.n_blocks and copy.complete == layout.complete


def test_a_table_past_the_walk_s_byte_offsets_is_refused():
    """Children are 32-bit byte offsets: a table whose records would lie past 2**31 bytes is
    refused with a message that says so (here a real layout with one child renumbered to a
    leaf of that number, so the leaf records alone pass it), not wrapped around nor
    allocated."""
    model = _model("lightgbm", seed=3)
    a = walk_arrays(model.ensemble)
    nodes = _index_nodes(a).copy().view(NODE_DTYPE)
    nodes["kid"][0, 0] = ~(2 ** 31 // NODE_DTYPE.itemsize)
    with pytest.raises(ValueError, match="32-bit byte offsets"):
        _walk.walk_tables(nodes.view(np.uint64), a["roots"])
    records = 2 ** 31 // NODE_DTYPE.itemsize - nodes.shape[0] + 2   # short of it alone
    nodes["kid"][0, 0] = ~(records - 1)
    with pytest.raises(ValueError, match="32-bit byte offsets"):     # the nodes count too
        _walk.walk_tables(nodes.view(np.uint64), a["roots"])



def test_block_starts_match_the_greedy_rule_on_random_trees():
    """_walk.block_starts against the rule in plain Python: a tree opens a new block where
    the block holds nodes already and the tree would take it past the budget."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        nodes = rng.integers(0, 40, rng.integers(0, 30))
        budget = int(rng.integers(1, 1200))
        starts, size = [0], 0
        for t, n in enumerate(nodes.tolist()):
            if size and size + 24 * n > budget:
                starts.append(t)
                size = 0
            size += 24 * n
        starts.append(len(nodes))
        offsets = np.concatenate([[0], np.cumsum(nodes)]).astype(np.int64)
        assert walk_block_starts(offsets, budget).tolist() == starts


def test_a_special_node_reading_outside_the_row_is_refused():
    """The special nodes' fields are a model file's to give: a feature past the row or a
    category run past the category words is refused, never read."""
    model = _model("lightgbm", seed=4)
    a = walk_arrays(model.ensemble)
    assert a["feature"].shape[0] > 0
    for name, value in (("feature", model.n_features), ("feature", -1),
                        ("cat_offset", a["cat_words"].shape[0] + 1),
                        ("cat_nwords", a["cat_words"].shape[0] + 1)):
        bad = a[name].copy()
        bad[0] = value
        with pytest.raises(ValueError, match="special node's feature or categories"):
            _walk.WalkLayout(dict(a, **{name: bad}), model.n_features)
