"""Data that comes with the package: the bundled demo model and queries (``demo_*``, made by
``scripts/make_demo_data.py``) and

- ``synthetic``: :func:`make_ltr`, generated learning-to-rank rows for demos, tests and
  benchmarks.
"""
from .synthetic import make_ltr

__all__ = ["make_ltr"]
