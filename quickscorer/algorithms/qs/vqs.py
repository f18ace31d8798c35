"""The "vqs" algorithm: V-QuickScorer, QuickScorer's scan for a group of 4, 8, 16 or 32
documents at once (kernel: ``src/quickscorer/algorithms/qs/_vqs.pyx`` and ``vqs.h``), over the same
layout as ``quickscorer``, cut into cache-sized tree blocks.

Legal note: QuickScorer is covered by US patent 11,106,685 (Istella/Tiscali).
"""
from __future__ import annotations

import threading

import numpy as np

from ... import prepared
from ..._forest import Forest
from ...ir.ensemble import Ensemble
from ...tuning import Tuning
from ..cpu import MAX_LANES, default_block_bytes, isa_code, isa_name
from . import _qs, _vqs
from .layout import block_arrays, entry_trees, with_merge
from .qs import QuickScorer


class VQuickScorer(QuickScorer):
    """V-QuickScorer: the QuickScorer layout, scanned for a group of 4, 8, 16 or 32 documents
    at once (``lanes``; by default the widest group the rows per thread fill) on AVX-512, AVX2 or
    portable C, chosen at run time (force one with ``isa=`` or the table's ``isa``).

    Models whose layout exceeds ``block_bytes`` (half the L2 cache by default) are cut into
    consecutive tree blocks, and ``doc_groups`` groups of documents are scanned against one
    tree block before the next, in calls with at least that many documents per thread
    (``lanes * doc_groups``); the blocks are built by the first such call. Smaller calls,
    whose documents could not reuse a block, scan the whole layout (no block of its own:
    faster at 4 to 2,000 rows a call on 31- and 64-leaf trees,
    ``python -m benchmarks.tuning.vqs_blocks``).
    ``merge=True`` compares each distinct threshold of a feature once for all of its nodes
    instead of once per node (off by default: slower, ``python
    benchmarks/tuning/vqs_variants.py``)."""

    name = "vqs"
    test_vector = "feature-wise scans of sorted thresholds, 8 to 32 documents per SIMD scan"
    # the scan's false nodes, for a group of documents at once
    regimes = ("few_rows",)

    @classmethod
    def cost(cls, regime: str, facts, t: Tuning) -> float | None:
        if regime not in cls.regimes:
            return None
        return facts.false if facts.false is not None else 0.0

    @classmethod
    def first_rows(cls, before: str, facts, t: Tuning) -> int:
        if before == "quickscorer":         # a group of 4 documents already beats the scan
            return t.vqs_scan_min_rows
        if before == "walk" and facts.steps is not None:    # its two rows through the entry
            return t.group_vqs_min_rows
        return t.vqs_min_rows

    def __init__(self, ens: Ensemble, forest: Forest, tuning: Tuning | None = None,
                 isa: str | None = None, block_bytes: int | None = None,
                 doc_groups: int | None = None, merge: bool | None = None,
                 lanes: int | None = None, block_trees: int | None = None):
        super().__init__(ens, forest, tuning)
        t = self.tuning
        self.isa = isa_code(isa or t.isa)
        #: a fixed group size, or None: chosen per call from the rows per thread
        self.lanes = lanes or t.lanes or None
        if self.lanes is not None and self.lanes not in _vqs.LANE_CHOICES:
            raise ValueError(f"lanes must be one of {_vqs.LANE_CHOICES}, got {self.lanes}")
        self.max_lanes = self.lanes or MAX_LANES[self.isa_name]
        self.block_bytes = block_bytes or default_block_bytes(t.block_bytes)
        self.doc_groups = doc_groups or t.doc_groups
        if self.doc_groups < 1:
            raise ValueError(f"doc_groups must be >= 1, got {self.doc_groups}")
        self.merge = bool(t.merge if merge is None else merge)
        self.block_trees = block_trees or t.block_trees
        self._block_arrays: list[dict] = []
        self._lock = threading.Lock()
        self._starts = self._tree_block_starts(ens)
        self.tree_blocks = len(self._starts) - 1
        if self.merge:        # the whole layout with its grouping of equal thresholds
            self._block_arrays.append(prepared.built(ens, "quickscorer_merge", (),
                                                     lambda: with_merge(self._arrays)))
            whole = _qs.QSLayout(self._block_arrays[0], ens.n_features, ens.n_leaves)
        else:
            whole = self.layout
        self._whole = _vqs.BlockedLayout([whole], [0, ens.n_trees])
        self._blocked = self._whole if self.tree_blocks == 1 else None
        #: rows of a low-latency call -> (lanes, tree blocks) it scans with (predict_small)
        self._small_plans: dict[int, tuple] = {}

    def _tree_block_starts(self, ens: Ensemble) -> list[int]:
        """The first tree of each tree block, then ``n_trees``: consecutive trees whose
        layout (thresholds, words and masks of their entries, and their bitvectors for the
        widest group) fits ``block_bytes`` (and at most ``block_trees`` trees when given)."""
        a = self._arrays
        trees = entry_trees(a)
        entries = np.bincount(trees[trees >= 0], minlength=ens.n_trees)
        del trees
        words = np.diff(a["tree_word_offsets"])
        cost = entries * (8 + 4 + 8 + 8) + words * 8 * self.max_lanes
        starts = [0]
        acc = 0
        for t, c in enumerate(cost.tolist()):
            if acc and (acc + c > self.block_bytes
                        or (self.block_trees and t - starts[-1] >= self.block_trees)):
                starts.append(t)
                acc = 0
            acc += c
        starts.append(ens.n_trees)
        return starts

    def _layout_for(self, n_rows: int, n_threads: int, lanes: int) -> _vqs.BlockedLayout:
        """The tree blocks for calls of at least ``lanes * doc_groups`` rows per thread
        (built by the first), else the whole layout."""
        if n_rows // max(1, n_threads) < lanes * self.doc_groups:
            return self._whole
        if self._blocked is None:
            with self._lock:
                if self._blocked is None:
                    params = (tuple(map(int, self._starts)), self.merge)
                    blocks = prepared.built(
                        self.ens, "quickscorer_blocks", params,
                        lambda: block_arrays(self.ens, self._arrays, self._starts,
                                             merged=self.merge), prepared.array_list)
                    layouts = []
                    if len(blocks) != len(self._starts) - 1:
                        raise ValueError(f"vqs: {len(blocks)} tree blocks for "
                                         f"{len(self._starts) - 1} block starts")
                    for b, arrays in enumerate(blocks):
                        for arr in arrays.values():
                            arr.setflags(write=False)
                        leaves = self.ens.n_leaves[self._starts[b]:self._starts[b + 1]]
                        layouts.append(_qs.QSLayout(arrays, self.ens.n_features, leaves))
                    self._block_arrays = self._block_arrays + blocks
                    self._blocked = _vqs.BlockedLayout(layouts, self._starts)
        return self._blocked

    def held_arrays(self) -> list:
        """The shared QuickScorer layout and the layouts of the tree blocks (once built)."""
        return super().held_arrays() + [a for arrays in self._block_arrays
                                        for a in arrays.values() if isinstance(a, np.ndarray)]

    @property
    def isa_name(self) -> str:
        return isa_name(self.isa)

    def describe(self) -> dict:
        return {"vqs_instruction_set": self.isa_name}

    def lanes_for(self, n_rows: int, n_threads: int) -> int:
        """Documents per scan for a call: the widest group the rows per thread fill."""
        if self.lanes is not None:
            return self.lanes
        per_thread = n_rows // max(1, n_threads)
        for lanes in (32, 16):
            if lanes <= self.max_lanes and per_thread >= lanes:
                return lanes
        # 4 lanes (one AVX2 register) for calls of up to 4 rows a thread, faster than a
        # half-empty group of 8; from 5 rows one group of 8 beats two of 4
        # (python -m benchmarks.tuning.small_calls --batch 4,5 --kernels vqs)
        return 4 if per_thread <= 4 else 8

    def _buffers(self, n_threads: int, groups: int, blocks: _vqs.BlockedLayout):
        lanes = self.max_lanes
        rows = self.scratch("lane_rows", n_threads,
                            lanes * (groups * self.ens.n_features + 1), np.float64)
        bits = self.scratch("lane_bits", n_threads, lanes * blocks.max_words)
        return rows, bits

    def predict_raw(self, X, out64, out32, n_threads):
        lanes = self.lanes_for(X.shape[0], n_threads)
        blocks = self._layout_for(X.shape[0], n_threads, lanes)
        rows, bits = self._buffers(n_threads, self.doc_groups, blocks)
        _RAW[X.dtype](self.forest, blocks, X, out64, out32, rows, bits, n_threads,
                      self.isa, self.merge, self.doc_groups, lanes)

    def _small_plan(self, n: int):
        plan = self._small_plans.get(n)
        if plan is None:
            lanes = self.lanes_for(n, 1)
            plan = self._small_plans[n] = (lanes, self._layout_for(n, 1, lanes))
        return plan

    def predict_small(self, X, squeeze):
        lanes, blocks = self._small_plan(X.shape[0] if X.ndim == 2 else 1)
        return _vqs.predict_small(self.forest, blocks, X, squeeze, self.isa, self.merge, lanes)

    def small_entry(self, n):
        lanes, blocks = self._small_plan(n)
        forest, isa, merge, call = self.forest, self.isa, self.merge, _vqs.predict_small

        def entry(X, squeeze):
            return call(forest, blocks, X, squeeze, isa, merge, lanes)
        return entry

    def predict_leaf(self, X, out, n_threads):
        lanes = self.lanes_for(X.shape[0], n_threads)
        blocks = self._layout_for(X.shape[0], n_threads, lanes)
        rows, bits = self._buffers(n_threads, self.doc_groups, blocks)
        _LEAF[X.dtype](self.forest, blocks, X, out, rows, bits, n_threads, self.isa,
                       self.merge, self.doc_groups, lanes)


_RAW = VQuickScorer.specialised(_vqs.predict_raw)
_LEAF = VQuickScorer.specialised(_vqs.predict_leaf)
