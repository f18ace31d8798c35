"""The paper's forms, for study ("Arithmetical Binary Decision Tree Traversals").

- ``representations.py``: the dense and bit-packed L, R, P, d, F, t and s of a tree, and the
  paper's properties (ranks, pruning, recovering a tree from L or R, perfect trees);
- ``soft.py``: soft prediction through the fuzzy matrix, leaf attention, general (multiway)
  trees with their binary conversion, oblique trees.

The arithmetic traversals as scoring algorithms (Algorithms 2 to 7) are in
:mod:`quickscorer.algorithms.arithmetic`; nothing here is on the scoring path.
"""
