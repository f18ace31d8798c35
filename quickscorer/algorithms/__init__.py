"""The exit-leaf algorithms: for each, a layout built once per model from the neutral
ensemble, and the Python side of its Cython kernel (``src/quickscorer/``).

- ``base``: :class:`Algorithm`, what every algorithm is (layout, scratch, kernel calls);
- ``registry``: the algorithms by name; ``autoselect``: which one ``predict`` runs;
- ``forest``: the arrays every kernel shares (leaf values, groups, base scores, node flags,
  category bitsets);
- ``nodes``: node facts several algorithms use (levels, positions, categorical codes);
- ``cpu``: the instruction sets and cache sizes of this CPU;
- ``traversal``: the reference root-to-leaf walk;
- ``qs_layout``, ``qs``: QuickScorer's layout (sorted thresholds, masks, missing-value
  segments) and its one-document scan;
- ``vqs``: V-QuickScorer's SIMD scans of 8 to 32 documents;
- ``rs_layout``, ``rapidscorer``: RapidScorer's layout (byte-transposed bitvectors, rank
  comparisons) for groups of 32 or 64 documents, and its algorithm class;
- ``rs_ranks``: its rank tables (distinct thresholds, byte slots, half-words);
- ``rs_categorical``: its categorical nodes as 256-bit code tables;
- ``rs_levels``: its level-by-level path for depth-wise trees, and when it pays;
- ``walk``: the eight-cursor walk's layout (complete trees, tree blocks);
- ``oblivious``: oblivious trees, one test a level;
- ``arithmetic``: the paper's arithmetic traversals (Algorithms 2 to 7).
"""
from . import autoselect
from .base import Algorithm
from .registry import ALGORITHMS, available, get

__all__ = ["ALGORITHMS", "Algorithm", "autoselect", "available", "get"]
