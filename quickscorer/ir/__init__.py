"""The neutral model: what every importer writes and every algorithm's layout reads.

- ``ensemble``: :class:`Ensemble`, :class:`Tree`, :class:`LinearLeaves` and
  :func:`build_tree`, which validates an imported tree and renumbers it canonically
  (internal nodes breadth-first, leaves left to right, ``x <= threshold`` goes left);
- ``_build``: that validation and renumbering in C, and the parse buffers the C parsers
  share;
- ``float32``: float32 comparisons as float64 thresholds, and back;
- ``matrices``: the paper's L, R, P and d of a tree shape;
- ``ctr``: CatBoost's CTR features, computed from a row before its trees (``_ctr`` in C);
- ``cityhash``: CityHash64 and CatBoost's category hash;
- ``sums``: leaf sums in arithmetic no kernel carries (RankLib's Java ``float``);
- ``reference``: a slow numpy traversal that states ``docs/semantics.md`` independently of
  the kernels, the oracle of the tests.
"""
from .ensemble import (
                       FAMILIES,
                       MAX_CATEGORY,
                       MAX_NODES_PER_TREE,
                       MISSING_NAN,
                       MISSING_NONE,
                       MISSING_ZERO,
                       TRANSFORMS,
                       Ensemble,
                       LinearLeaves,
                       Tree,
                       build_tree,
)

__all__ = [
    "Ensemble", "FAMILIES", "LinearLeaves", "MAX_CATEGORY", "MAX_NODES_PER_TREE",
    "MISSING_NAN", "MISSING_NONE", "MISSING_ZERO", "TRANSFORMS", "Tree", "build_tree",
]
