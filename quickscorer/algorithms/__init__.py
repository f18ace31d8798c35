"""The exit-leaf algorithms: for each, a layout built once per model from the neutral
ensemble, and the Python side of its Cython kernel (``src/quickscorer/``).

- ``base.py``: :class:`Algorithm`, what every algorithm is (layout, scratch, kernel calls);
- ``forest.py``: the arrays every kernel shares (leaf values, groups, base scores, node flags,
  category bitsets);
- ``traversal.py``: the reference root-to-leaf walk;
- ``qs_layout.py``, ``qs.py``, ``vqs.py``, ``cpu.py``: QuickScorer's layout, its one-document
  scan, V-QuickScorer's SIMD scans of 8 to 32 documents, and the CPU facts they use;
- ``rs_layout.py``, ``rapidscorer.py``: the RapidScorer form (byte-transposed bitvectors,
  byte-run masks, rank comparisons) for 32 or 64 documents per scan, built from the
  QuickScorer layout;
- ``arithmetic.py``: the paper's arithmetic traversals (Algorithms 2 to 7);
- ``registry.py``: the algorithms by name; ``autoselect.py``: which one ``predict`` runs.
"""
from . import autoselect
from .base import Algorithm
from .registry import ALGORITHMS, available, get

__all__ = ["ALGORITHMS", "Algorithm", "autoselect", "available", "get"]
