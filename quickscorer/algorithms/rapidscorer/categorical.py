"""RapidScorer's categorical splits: no thresholds, so not ranked.

Each categorical feature gets a slot of its own whose byte per document is the value's code
(:mod:`~quickscorer.algorithms.nodes`), and each node a 256-bit table of the codes that send a
document away from its first subtree. The kernel applies a block's categorical nodes after its
scan, every node on every lane: a table lookup by byte shuffles, then the node's entries.
A model that lists a category from ``CAT_CODES`` up is not scored by ``rapidscorer``.
"""
from __future__ import annotations

import numpy as np

from ...ir.ensemble import Ensemble
from ..nodes import codes_going_left
from .ranks import ENTRY_DTYPE


def categorical_nodes(ens: Ensemble, nodes: np.ndarray, flip: np.ndarray, lo: np.ndarray,
                      mid: np.ndarray) -> dict:
    """The categorical nodes ``nodes`` (packed indices, tree order) as the kernel scans them:
    not by rank but each on its own, on its feature's *categorical slot* (one per feature
    some categorical node splits on), whose byte per document is the value's code
    (``CAT_*``). A node's table holds, for each of the 256 codes, whether a document of that
    code leaves the node away from its first subtree (the right one where ``flip``, the
    mirrored leaf order of :func:`half_arrays`, puts it first): the 32 bytes of a bitset,
    bit ``c % 8`` of byte ``c // 8``. The listed categories go left, NaN to the default side,
    every other value right. Its entries clear the leaves ``[lo, mid)`` of that subtree, as a
    numerical node's do. Returns ``slot_column`` (each slot's input column), per node its
    tree, slot, table and leaf range."""
    packed = ens.trees.arrays
    node_offset = np.asarray(ens.trees.node_offset, np.int64)
    feature = np.asarray(packed["feature"], np.int64)[nodes]
    slot_column, slot = np.unique(feature, return_inverse=True)
    # away from the first subtree: right for a node in its own order, left for a mirrored one
    away = codes_going_left(ens, nodes) == flip[nodes].astype(bool)[:, None]
    return {
        "slot_column": slot_column.astype(np.int32),
        "tree": (np.searchsorted(node_offset, nodes, side="right") - 1).astype(np.int64),
        "slot": slot.astype(np.int32).reshape(-1),
        "table": np.packbits(away, axis=1, bitorder="little"),
        "lo": np.asarray(lo, np.int64)[nodes],
        "hi": np.asarray(mid, np.int64)[nodes],
    }

def categorical_fields(cat: dict | None, tree_byte_offsets: np.ndarray,
                       block_starts: np.ndarray) -> dict:
    """The layout's categorical fields, from :func:`categorical_nodes` (empty without):
    ``cat_slot_column``, and per node (by tree, so by block: block ``b`` scans nodes
    ``block_cat[b]`` to ``block_cat[b + 1] - 1``) its ``cat_node_slot``, its 32-byte
    ``cat_tables`` row and its entries ``cat_entries[cat_entry_offsets[k] : ...[k + 1]]``,
    one per byte of its leaf range as a numerical node's (the threshold byte unused)."""
    n_blocks = block_starts.shape[0] - 1
    if cat is None:
        return {"cat_slot_column": np.zeros(0, np.int32), "cat_node_slot": np.zeros(0, np.int32),
                "cat_tables": np.zeros(0, np.uint8), "cat_entry_offsets": np.zeros(1, np.int64),
                "cat_entries": np.zeros(0, np.uint32),
                "block_cat": np.zeros(n_blocks + 1, np.int64)}
    tree, lo, hi = cat["tree"], cat["lo"], cat["hi"]
    first, last = lo // 8, (hi - 1) // 8
    n_bytes = last - first + 1
    offsets = np.zeros(tree.shape[0] + 1, np.int64)
    np.cumsum(n_bytes, out=offsets[1:])
    node = np.repeat(np.arange(tree.shape[0]), n_bytes)
    byte = first[node] + np.arange(int(offsets[-1])) - offsets[node]
    start = np.maximum(lo[node], 8 * byte) - 8 * byte         # the range within the byte
    end = np.minimum(hi[node], 8 * byte + 8) - 8 * byte
    bits = ((1 << end) - 1) ^ ((1 << start) - 1)
    block = np.searchsorted(block_starts, tree, side="right") - 1
    row = tree_byte_offsets[tree] - tree_byte_offsets[block_starts[block]]
    entries = np.zeros(byte.shape[0], ENTRY_DTYPE)
    entries["byte"] = row[node] + byte
    entries["mask"] = (~bits) & 0xFF
    return {"cat_slot_column": cat["slot_column"], "cat_node_slot": cat["slot"],
            "cat_tables": np.ascontiguousarray(cat["table"]).reshape(-1),
            "cat_entry_offsets": offsets, "cat_entries": entries.view(np.uint32),
            "block_cat": np.searchsorted(tree, block_starts, side="left").astype(np.int64)}
