"""Explaining scores: how much each feature moved a row's score (``Model.contributions``).

- ``calls``: ``Model.contributions`` and ``Model.explain``, one request each;
- ``contributions``: the layout (each tree's nodes, covers and quadrature points), the biases
  and the output shapes, and :class:`Explainer`, a model's layout built on first use;
- ``_shap``: the kernel (``src/quickscorer/explain/_shap.pyx`` over ``treeshap.h``): each row
  decided at every node, then TreeSHAP's recursion or the quadrature.
"""
from .contributions import METHODS, Explainer, feature_labels, shap_arrays, shaped

__all__ = ["METHODS", "Explainer", "feature_labels", "shap_arrays", "shaped"]
