"""The exit-leaf algorithms: for each, a layout built once per model from the neutral
ensemble, and its kernel, an extension module built from the same folder under
``src/quickscorer/algorithms/`` (``walk`` and ``_walk.pyx`` with ``walk.h``).

- ``base``: :class:`Algorithm`, what every algorithm is (layout, scratch, kernel calls);
- ``registry``: the algorithms by name; ``autoselect``: which one ``predict`` runs;
- ``forest``: the arrays every kernel shares (leaf values, groups, base scores, node flags,
  category bitsets);
- ``nodes``: node facts several algorithms use (levels, positions, categorical codes);
- ``cpu``: the instruction sets and cache sizes of this CPU;
- ``_layout``: the QuickScorer and RapidScorer layouts' counting sorts in C;
- ``traversal``, ``_traversal``: the reference root-to-leaf walk;
- ``qs``: QuickScorer's family, the one-document scan and V-QuickScorer's SIMD groups over
  one layout (a subpackage);
- ``rapidscorer``: RapidScorer's family, groups of 32 or 64 documents in rank space and the
  level path of depth-wise trees (a subpackage);
- ``walk``, ``_walk``: the eight-cursor walk (complete trees, tree blocks; ``walk.h``);
- ``oblivious``, ``_oblivious``: oblivious trees, one test a level (``oblivious.h``);
- ``arithmetic``, ``_arithmetic``: the paper's arithmetic traversals (Algorithms 2 to 7).
"""
from . import autoselect
from .base import Algorithm
from .registry import ALGORITHMS, available, get

__all__ = ["ALGORITHMS", "Algorithm", "autoselect", "available", "get"]
