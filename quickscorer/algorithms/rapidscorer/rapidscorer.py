"""The "rapidscorer" algorithm: QuickScorer's scan for 32 or 64 documents at once, after
RapidScorer (Ye et al., KDD 2018): byte-transposed leaf bitvectors, node masks as byte runs
and comparisons of byte ranks (layout: :mod:`~quickscorer.algorithms.rapidscorer.layout`; kernel:
``src/quickscorer/algorithms/rapidscorer/_rapidscorer.pyx`` ``rapidscorer/scan.h`` and
``rapidscorer/levels.h``).

It scores models whose trees have at most 256 leaves and whose categorical splits list
categories below 254, and, by its level path alone (``rapidscorer.layout.levels_only_arrays``),
models of numerical splits whose trees are at most 10 deep whatever their leaves
(:func:`rapidscorer.layout.unsupported` says why another model is not one; ``vqs`` scores every
model); a feature of more than 255 distinct thresholds is ranked in several byte-wide
slots (``rapidscorer.ranks.fold_halves``).
"""
from __future__ import annotations

import threading
import weakref

import numpy as np

from ... import prepared
from ..._forest import Forest
from ...ir.ensemble import Ensemble
from ...tuning import Tuning
from ..base import Algorithm
from ..cpu import ISAS, isa_code, isa_name, l2_cache_bytes
from . import _rapidscorer
from .layout import (
    MAX_LEAVES,
    block_starts_for,
    level_block_starts,
    levels_only_arrays,
    rapidscorer_arrays,
    tree_bytes,
    unsupported,
)
from .levels import levels_choice, no_level_fields
from .walks import no_walk_fields


def default_block_bytes() -> int:
    """Bytes of bitvector rows per tree block and group (the block's rows stay in L2 while the
    group's segments are scanned): a quarter of the L2 cache, the size that was best in the
    worst case over six 1,000-tree models at 100 and 10,000 rows
    (``python -m benchmarks.tuning.rs_blocks``).
    ``Tuning.rs_block_bytes`` overrides it."""
    return l2_cache_bytes() // 4


def default_level_block_bytes() -> int:
    """Bytes of level fields per tree block of the level path
    (rapidscorer.layout.level_block_starts), which a chunk of LEVEL_CHUNK groups walks before the
    next block: a quarter of the L2 cache (below)."""
    return l2_cache_bytes() // 4


#: groups a thread walks through each tree block of the level path (or scans through each
#: block of the scan's) together, at most ``Tuning.rs_lv_chunk_bytes`` of columns (ranks):
#: every chunk reads the level fields (entries and leaf values) of all the trees, so larger
#: chunks read them fewer times
#: (``python -m benchmarks.tuning.rs_level_chunks``)
LEVEL_CHUNK = 64

#: on AVX-512, calls with fewer rows per thread run on the 32-lane path
WIDE_MIN_ROWS = 48

#: on AVX2, calls of this many rows per thread or more run groups of 64 documents (two
#: registers per byte row): faster than groups of 32 from 33 rows on, on 8- and 255-leaf trees
#: (a one-off timing of ``RapidScorer(wide=False)`` against the default; no script keeps it)
AVX2_WIDE_MIN_ROWS = 33

#: the kernel's code of the 64-lane AVX2 path (rapidscorer/scan.h RS_ISA_AVX2_WIDE; not an
#: instruction set of its own, so not in cpu.ISAS)
AVX2_WIDE = 3

# why rapidscorer cannot score an ensemble (None: it can), computed once per ensemble
_UNSUPPORTED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_UNSUPPORTED_LOCK = threading.Lock()


def rs_isa_code(name: str | None = None) -> int:
    """The RapidScorer path: like :func:`cpu.isa_code`, but AVX-512 needs AVX512BW here;
    a CPU with AVX-512F alone runs the AVX2 path."""
    code = isa_code(name)
    while code > 0 and not _rapidscorer.isa_available(code):
        if name is not None and name == isa_name(code):
            raise ValueError(f"this CPU cannot run the {name!r} RapidScorer path")
        code -= 1
    return code


def _record_form(value) -> bool:
    """Whether a model file's record of the layout has its form."""
    return (isinstance(value, dict) and sorted(value) == ["arrays", "min_lanes"]
            and prepared.arrays(value["arrays"]) and isinstance(value["min_lanes"], int)
            and not isinstance(value["min_lanes"], bool) and 0 <= value["min_lanes"] <= 1 << 16)


class RapidScorer(Algorithm):
    """32 (portable C, small AVX2 calls) or 64 (AVX-512, AVX2 in two registers) documents
    per scan, bitvectors byte-transposed, thresholds compared as byte ranks."""

    name = "rapidscorer"
    test_vector = ("feature-wise scans of sorted threshold ranks, 32 or 64 documents per "
                   "SIMD scan, byte-wise masks")
    small_calls = True
    # groups of 32 or 64 documents: every call of enough rows, where it scores the model
    regimes = ("many_rows",)

    @classmethod
    def cost(cls, regime: str, facts, t: Tuning) -> float | None:
        return 0.0 if regime in cls.regimes else None

    @classmethod
    def first_rows(cls, before: str, facts, t: Tuning) -> int:
        """After the walk, from the model's nodes over ``t.walk_rs_nodes_per_step`` times a
        row's steps through it (complete trees' steps, else its expected path), rounded up,
        between ``t.rs_after_walk_min_rows`` and ``t.rs_after_walk_max_rows`` (the least
        without covers); after vqs by the trees' mean number of leaves
        (``t.rs_small_trees_min_rows``, and on the ``avx2`` path ``t.rs_avx2_trees_min_rows``),
        else ``t.rs_min_rows``."""
        if before == "walk":
            steps = facts.steps if facts.steps is not None else facts.path
            if not steps or steps <= 0:
                return t.rs_after_walk_min_rows
            rows = int(np.ceil(facts.nodes / (t.walk_rs_nodes_per_step * steps)))
            return min(t.rs_after_walk_max_rows, max(t.rs_after_walk_min_rows, rows))
        for most, rows in t.rs_small_trees_min_rows:
            if facts.mean_leaves <= most:
                return rows
        if facts.isa == "avx2" and facts.mean_leaves <= t.rs_avx2_trees_min_rows[0]:
            return t.rs_avx2_trees_min_rows[1]
        return t.rs_min_rows

    @classmethod
    def unsupported(cls, ens: Ensemble) -> str | None:
        with _UNSUPPORTED_LOCK:
            if ens not in _UNSUPPORTED:
                why = unsupported(ens)
                _UNSUPPORTED[ens] = None if why is None else f"{why} ('vqs' scores every model)"
            return _UNSUPPORTED[ens]

    def __init__(self, ens: Ensemble, forest: Forest, tuning: Tuning | None = None,
                 isa: str | None = None, block_bytes: int | None = None, wide: bool = True,
                 mirror: bool | None = None, levels: bool | None = None,
                 vbmi: bool | None = None, halves: bool | None = None,
                 gathered: bool | None = None, wide_add: bool | None = None):
        super().__init__(ens, forest, tuning)
        t = self.tuning
        self.isa = rs_isa_code(isa or t.isa)
        #: the path named by isa= or the table's isa, used for every call; else None
        self.fixed_isa = isa or t.isa or None
        #: on AVX2, whether calls of AVX2_WIDE_MIN_ROWS rows per thread or more run groups of 64
        #: documents (two registers per byte row); False keeps every group at 32
        self.wide = bool(wide) and self.isa == ISAS["avx2"]
        #: the widest path calls may take, which sizes the tree blocks and the scratch space
        self.widest = AVX2_WIDE if self.wide else self.isa
        self.lanes = int(_rapidscorer.lanes_of(self.widest))
        self.block_bytes = block_bytes or t.rs_block_bytes or default_block_bytes()
        #: the level path walks a tree lane by lane from its first level of more than this
        #: many nodes (Tuning.rs_lane_nodes)
        self.lane_nodes = t.rs_lane_nodes
        #: on AVX-512, whether the level walk takes AVX512_VBMI's byte permutations where the
        #: CPU has them (rapidscorer/levels.h rs_lv_tree_avx512v); False compares a node at a
        #: time
        self.vbmi = t.rs_vbmi if vbmi is None else bool(vbmi)
        #: on AVX-512, whether the level walk runs as the AVX2 wide path's, two 256-bit
        #: registers a column: True, False, or None (as the CPU is best served: on every
        #: AVX-512 CPU measured, rapidscorer/levels.h rs_lv_halves_default)
        self.halves = t.rs_halves if halves is None else halves
        #: on AVX-512, whether groups of 64 lanes take the gathered walk where the layout has
        #: its fields (rapidscorer.walks): True, False, or None (on an Intel core,
        #: rapidscorer/gw.h rs_gw_default)
        self.gathered = t.rs_gathered if gathered is None else gathered
        #: on AVX-512, whether the scan adds the exit leaves of blocks of trees of more than
        #: 32 leaves as the AVX2 wide path does: True, False, or None (on a core that runs
        #: 512-bit operations as two halves, rapidscorer/scan.h rs_wide_add_default)
        self.wide_add = t.rs_wide_add if wide_add is None else wide_add
        # trees of more than 256 leaves: the level path alone (no scans; levels=False cannot
        # apply)
        self.levels_only = ens.n_trees > 0 and int(ens.n_leaves.max()) > MAX_LEAVES
        if levels is None:
            levels = t.rs_levels
        if self.levels_only:
            if levels is False:
                raise ValueError("this model's trees have more than "
                                 f"{MAX_LEAVES} leaves: rapidscorer scores it level by "
                                 "level only (levels=False cannot be)")
            try:
                arrays = prepared.built(ens, "rapidscorer_levels", (self.lane_nodes,),
                                        lambda: levels_only_arrays(ens, self.lane_nodes))
            except ValueError as exc:
                raise ValueError(f"rapidscorer cannot score this model: {exc}") from None
            self._finish(ens, arrays, 0, 1)
            return
        starts = block_starts_for(tree_bytes(ens), self.block_bytes, self.lanes)
        # mirrored nodes (rapidscorer.layout): False scores with every node's left subtree
        # first (a smaller layout, no copy of the leaf values)
        if mirror is None:
            mirror = t.rs_mirror
        # trees of depth <= 10 level by level (rapidscorer.levels.level_arrays) instead of the
        # scans: None chooses (rapidscorer.levels.levels_choice), True walks every group of a
        # model it can, False keeps the scans
        # the gathered walk's fields where they pay (None), where the model can take them
        # (True) or none (False), and never beside a level walk (rapidscorer.walks)
        walk = self.gathered

        def build() -> dict:
            arrays = rapidscorer_arrays(ens, starts, mirror, levels is not False,
                                        self.lane_nodes, walk)
            min_lanes = levels_choice(arrays, levels)
            if min_lanes == 0:
                arrays.update(no_level_fields())
            else:
                arrays.update(no_walk_fields())
            return {"arrays": arrays, "min_lanes": min_lanes}

        got = prepared.built(ens, "rapidscorer_arrays",
                             (tuple(map(int, starts)), mirror, levels, self.lane_nodes, walk),
                             build, _record_form)
        self._finish(ens, got["arrays"], int(got["min_lanes"]), len(starts) - 1)

    def _finish(self, ens: Ensemble, arrays: dict, min_lanes: int, n_blocks: int):
        """Wrap the layout's arrays (read-only) for the kernel, the level path's trees in
        blocks of default_level_block_bytes() (Tuning.rs_lv_block_bytes) walked by chunks of
        LEVEL_CHUNK groups, fewer where their columns (or the scan's ranks) would pass
        Tuning.rs_lv_chunk_bytes (Tuning.rs_lv_chunk)."""
        t = self.tuning
        #: bytes of level fields per tree block of the level path
        self.level_block_bytes = t.rs_lv_block_bytes or default_level_block_bytes()
        if arrays["lv_depth"].shape[0]:
            arrays["lv_block_starts"] = level_block_starts(arrays, self.level_block_bytes)
        #: the most groups a thread walks through each tree block of the level path, or scans
        #: through each block of the scan's, together
        group = _rapidscorer.chunk_group_bytes(
            64, arrays["slot_column"].shape[0] + arrays["lv_combos"].shape[0],
            arrays["slot_column"].shape[0])
        self.level_chunk = max(1, t.rs_lv_chunk
                               or min(LEVEL_CHUNK, t.rs_lv_chunk_bytes // group))
        self._arrays = arrays
        #: whether the layout's leaf order puts some nodes' right subtree first
        #: (rapidscorer.layout)
        self.mirrored = self._arrays["leaf_order"].shape[0] != 0
        for a in self._arrays.values():
            a.setflags(write=False)
        # XGBoost rows are float32 values: the rank search compares in float32 there
        self.layout = _rapidscorer.RSLayout(self._arrays, ens.n_features,
                                            float32_ranks=ens.family == "xgboost",
                                            levels_min_lanes=max(32, min_lanes),
                                            levels_chunk=self.level_chunk,
                                            levels_vbmi=self.vbmi,
                                            levels_halves=-1 if self.halves is None
                                            else int(bool(self.halves)),
                                            gathered=-1 if self.gathered is None
                                            else int(bool(self.gathered)),
                                            wide_add=-1 if self.wide_add is None
                                            else int(bool(self.wide_add)))
        self.tree_blocks = n_blocks
        #: whether calls walk the trees level by level (every tree at most 10 deep, numeric;
        #: groups of fewer than ``layout.levels_min_lanes`` lanes scan, unless
        #: ``levels_only``)
        self.levels = bool(self.layout.levels)
        #: uint64 words of scratch a thread needs (on the widest path, which covers the others)
        self._scratch_words = self.layout.scratch_bytes(self.widest, ens.n_outputs) // 8
        #: rows of a low-latency call -> the path it runs (predict_small)
        self._small_isas: dict[int, int] = {}

    @property
    def isa_name(self) -> str:
        return isa_name(self.isa)

    def describe(self) -> dict:
        return {"rapidscorer_instruction_set": self.isa_name,
                "rapidscorer_documents_per_group": self.groups}

    @property
    def groups(self) -> str:
        """The documents per group that calls take, in words (``Model.info``)."""
        if self.isa == ISAS["avx512"] and self.fixed_isa is None:
            text = f"32 below {WIDE_MIN_ROWS} rows per thread, 64 from there"
        elif self.wide:
            text = (f"32 below {AVX2_WIDE_MIN_ROWS} rows per thread, 64 from there (two "
                    "AVX2 registers a row of 64 bytes)")
        else:
            text = str(self.lanes)
        if self.levels_only:
            text += (f"; trees walked level by level (trees of more than {MAX_LEAVES} "
                     "leaves: no scans)")
        elif self.levels:
            text += ("; trees walked level by level in groups of "
                     f"{self.layout.levels_min_lanes} lanes or more")
        if self.layout.gathered and self.isa == ISAS["avx512"]:
            text += ("; groups of 64 walk each row down the trees by AVX-512 gathers (the "
                     "gathered walk)")
        if (self.layout.wide_add and self.isa == ISAS["avx512"] and not self.levels_only
                and not self.layout.gathered):
            text += ("; on AVX-512 the scan adds the exit leaves of trees of more than 32 "
                     "leaves as on AVX2")
        if (self.levels or self.levels_only) and self.isa == ISAS["avx512"]:
            if self.layout.levels_halves:
                text += ", on AVX-512 in two 256-bit registers a column, as on AVX2"
            elif self.layout.levels_vbmi:
                text += ", on AVX-512 by byte permutations (AVX512_VBMI)"
            else:
                text += ", on AVX-512 a node at a time"
        return text

    def _scratch_rows(self, n_threads: int) -> np.ndarray:
        return self.scratch("rs", n_threads, self._scratch_words).view(np.uint8)

    def isa_for(self, n_rows: int, n_threads: int) -> int:
        """The path for a call: on AVX-512, the 32-lane path below WIDE_MIN_ROWS rows per
        thread (a 64-document group that is half empty is slower, see autoselect.py); on
        AVX2, the 64-lane AVX2 path from AVX2_WIDE_MIN_ROWS rows per thread (``wide``)."""
        per_thread = n_rows / max(1, n_threads)
        if self.isa == ISAS["avx512"] and self.fixed_isa is None and per_thread < WIDE_MIN_ROWS:
            return ISAS["avx2"]
        if self.wide and per_thread >= AVX2_WIDE_MIN_ROWS:
            return AVX2_WIDE
        return self.isa

    def predict_raw(self, X, out64, out32, n_threads):
        _RAW[X.dtype](self.forest, self.layout, X, out64, out32, self._scratch_rows(n_threads),
                      n_threads, self.isa_for(X.shape[0], n_threads))

    def predict_small(self, X, squeeze):
        n = X.shape[0] if X.ndim == 2 else 1
        isa = self._small_isas.get(n)
        if isa is None:
            isa = self._small_isas[n] = self.isa_for(n, 1)
        return _rapidscorer.predict_small(self.forest, self.layout, X, squeeze, isa,
                                          self.scratch("rs", 1, self._scratch_words))

    def predict_leaf(self, X, out, n_threads):
        _LEAF[X.dtype](self.forest, self.layout, X, out, self._scratch_rows(n_threads),
                       n_threads, self.isa_for(X.shape[0], n_threads))


_RAW = Algorithm.specialised(_rapidscorer.predict_raw)
_LEAF = Algorithm.specialised(_rapidscorer.predict_leaf)

__all__ = ["RapidScorer", "rs_isa_code"]
