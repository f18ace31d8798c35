"""The paper's arithmetic traversals as selectable algorithms (``docs/algorithms.md`` 2-6).

Each builds, once per model, the bit-packed matrix rows or columns its kernel reads (see
``src/quickscorer/algorithms/_arithmetic.pyx``) from :mod:`quickscorer.paper.representations`; the
node tests come from evaluating every node with the shared rules, as the reference walk does.
"""
from __future__ import annotations

import numpy as np

from .._forest import Forest
from ..ir.ensemble import Ensemble
from ..paper.representations import (
    depth_vector,
    left_matrix,
    pack_columns,
    pack_rows,
    path_matrix,
    right_matrix,
)
from ..tuning import Tuning
from . import _arithmetic
from .base import Algorithm
from .traversal import node_arrays


def arithmetic_arrays(ens: Ensemble, kind: str) -> dict:
    """The layout of one arithmetic algorithm as numpy arrays.

    Node fields as for the reference walk, plus per tree the words of a packed node row
    (``node_words``) and leaf column (``leaf_words``), and, by ``kind``: packed L / R rows
    (``lt1``, ``two_sided``), path masks M and expected-sign masks E (``sign``: E has bit n
    where the leaf's path goes right at n), packed L / R columns (``both_vectors``) or dense
    int8 path rows and depths (``ecoc``).
    """
    a = node_arrays(ens)
    for unused in ("left", "right"):
        del a[unused]
    m = np.array([t.n_internal for t in ens.trees], np.int64)
    nl = m + 1
    a["leaf_offset"] = np.r_[0, np.cumsum(nl)].astype(np.int64)
    a["node_words"] = np.maximum(1, (m + 63) // 64)
    a["leaf_words"] = np.maximum(1, (nl + 63) // 64)
    a["row_offset"] = np.r_[0, np.cumsum(nl * a["node_words"])].astype(np.int64)
    a["col_offset"] = np.r_[0, np.cumsum(m * a["leaf_words"])].astype(np.int64)
    a["p_offset"] = np.r_[0, np.cumsum(nl * m)].astype(np.int64)
    rows_a, rows_b, cols_l, cols_r, p_rows, depth = [], [], [], [], [], []
    for t, tree in enumerate(ens.trees):
        nw, lw = int(a["node_words"][t]), int(a["leaf_words"][t])
        if kind == "ecoc":
            P = path_matrix(tree)
            p_rows.append(P.ravel())
            depth.append(depth_vector(tree).astype(np.int32))
            continue
        L, R = left_matrix(tree), right_matrix(tree)
        if kind in ("lt1", "two_sided"):
            rows_a.append(pack_rows(L, nw).ravel())
            rows_b.append(pack_rows(R, nw).ravel())
        elif kind == "sign":
            P = L.astype(np.int8) - R
            rows_a.append(pack_rows(P != 0, nw).ravel())
            rows_b.append(pack_rows(P > 0, nw).ravel())
        elif kind == "both_vectors":
            cols_l.append(pack_columns(L, lw).ravel())
            cols_r.append(pack_columns(R, lw).ravel())

    def joined(parts, dtype):
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(1, dtype)

    a["rows_a"] = joined(rows_a, np.uint64)
    a["rows_b"] = joined(rows_b, np.uint64)
    a["cols_l"] = joined(cols_l, np.uint64)
    a["cols_r"] = joined(cols_r, np.uint64)
    a["p_rows"] = joined(p_rows, np.int8)
    a["depth"] = joined(depth, np.int32)
    for k, arr in a.items():  # e.g. a model of single-leaf trees has no nodes: never empty
        if arr.size == 0:
            a[k] = np.zeros(1, arr.dtype)
    for arr in a.values():
        arr.setflags(write=False)
    return a


class _Arithmetic(Algorithm):
    kind = ""
    code = -1

    def __init__(self, ens: Ensemble, forest: Forest, tuning: Tuning | None = None):
        super().__init__(ens, forest, tuning)
        self._arrays = arithmetic_arrays(ens, self.kind)
        self.layout = _arithmetic.ArithLayout(self._arrays, self.code, ens.n_features)


_EVERY_NODE = "every node evaluated, then bit-packed matrix rows"


class BothVectors(_Arithmetic):
    """Algorithm 2: AND left vectors of false nodes and right vectors of true nodes, stopping
    when one candidate leaf is left."""
    name = kind = "both_vectors"
    code = _arithmetic.KIND_BOTH
    test_vector = "node by node in breadth-first order, stopping at one candidate leaf"


class LeftPlusOne(_Arithmetic):
    """Algorithm 3: leftmost maximum of L t + 1 by popcounts."""
    name = kind = "lt1"
    code = _arithmetic.KIND_LT1
    test_vector = _EVERY_NODE


class TwoSided(_Arithmetic):
    """Algorithm 4: unique maximum of L t + R (1 - t) by popcounts."""
    name = kind = "two_sided"
    code = _arithmetic.KIND_TWO_SIDED
    test_vector = _EVERY_NODE


class Sign(_Arithmetic):
    """SignQuickScorer (Algorithms 5 and 7): unique zero of P s - d from path and sign
    masks."""
    name = kind = "sign"
    code = _arithmetic.KIND_SIGN
    test_vector = _EVERY_NODE


class Ecoc(_Arithmetic):
    """Algorithm 6: similarity decoding <P_i, s> / <P_i, P_i> = 1 on dense int8 path rows."""
    name = kind = "ecoc"
    code = _arithmetic.KIND_ECOC
    test_vector = "every node evaluated, then dense int8 path rows"


ARITHMETIC = (BothVectors, LeftPlusOne, TwoSided, Sign, Ecoc)
