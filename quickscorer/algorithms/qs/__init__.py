"""QuickScorer's family: the feature-sorted threshold scan over leaf bitvectors, one document
at a time and in SIMD groups (V-QuickScorer), over one shared layout.

- ``layout``: the layout (sorted thresholds, node masks, missing-value segments, categorical
  tables) as numpy arrays, built in C for models without categorical splits;
- ``qs``: :class:`~quickscorer.algorithms.qs.qs.QuickScorer`, the one-document scan;
- ``vqs``: :class:`~quickscorer.algorithms.qs.vqs.VQuickScorer`, scans of 8 to 32 documents;
- ``_qs``: the layout's extension type and the one-document scan
  (``src/quickscorer/algorithms/qs/_qs.pyx``);
- ``_vqs``: the group scans on AVX-512, AVX2 or portable C (``_vqs.pyx`` with ``vqs.h``).
"""
