"""The paper's forms, for study ("Arithmetical Binary Decision Tree Traversals").

- ``representations``: the dense and bit-packed L, R, P, d, F, t and s of a tree, and the
  paper's properties (ranks, pruning, recovering a tree from L or R, perfect trees); the
  arithmetic algorithms (``algorithms.arithmetic``) build their layouts from it;
- ``soft``: soft prediction through the fuzzy matrix, leaf attention, general (multiway)
  trees with their binary conversion, oblique trees (``soft.predict_soft(model, X, t)``).
"""
