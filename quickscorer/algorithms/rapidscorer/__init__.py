"""RapidScorer's family: byte-transposed leaf bitvectors scanned for groups of 32 or 64
documents in rank space, a level-by-level path for depth-wise trees, and a gathered walk
for deep leaf-wise ones.

- ``rapidscorer``: :class:`~quickscorer.algorithms.rapidscorer.rapidscorer.RapidScorer`, the
  algorithm (groups, tree blocks, the level path's choice);
- ``layout``: its layout, assembled from the QuickScorer layout and the parts below;
- ``ranks``: rank tables (each feature's distinct thresholds, byte slots, half-words);
- ``categorical``: categorical nodes as 256-bit code tables;
- ``levels``: the level-by-level arrays of depth-wise trees, and when they pay;
- ``walks``: the gathered walk's records of deep trees, and when they pay;
- ``_rapidscorer``: the kernels (``_rapidscorer.pyx`` with ``scan.h``, the bitvector scans,
  ``levels.h``, the level path, and ``gw.h``, the gathered walk).
"""
