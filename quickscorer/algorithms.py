"""The registry of exit-leaf algorithms a :class:`~quickscorer.Model` can run.

An algorithm is a class built once per model from the neutral ensemble and its
:class:`~quickscorer._forest.Forest`; it fills raw scores and exit leaves through a Cython
kernel that releases the GIL. Register new ones with :func:`register`.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from . import layouts
from ._forest import Forest
from .ensemble import Ensemble

_REGISTRY: dict[str, Callable[[Ensemble, Forest], "Algorithm"]] = {}


class Algorithm:
    """Base class: a prepared layout plus the kernel calls that read it."""

    name = "?"
    #: how the node tests are evaluated, for the README and ``Model.info()``
    test_vector = ""

    def __init__(self, ens: Ensemble, forest: Forest):
        self.ens = ens
        self.forest = forest

    def predict_raw(self, X, out64, out32, rowbuf, n_threads: int) -> None:
        raise NotImplementedError

    def predict_leaf(self, X, out, rowbuf, n_threads: int) -> None:
        raise NotImplementedError

    def arrays(self) -> dict:
        """The layout as numpy arrays, for inspection and ``nbytes``."""
        return {}

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays().values() if isinstance(a, np.ndarray))


def register(name: str):
    def deco(cls):
        cls.name = name
        _REGISTRY[name] = cls
        return cls
    return deco


def available() -> list[str]:
    _load_all()
    return sorted(_REGISTRY)


def get(name: str):
    _load_all()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown algorithm {name!r}; available: {sorted(_REGISTRY)}") from None


_LOADED = False


def _load_all() -> None:
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    import importlib
    for mod in _OPTIONAL_MODULES:
        importlib.import_module(mod)


#: modules that register further algorithms when imported
_OPTIONAL_MODULES: list[str] = ["quickscorer.qs", "quickscorer.arithmetic"]


@register("traversal")
class Traversal(Algorithm):
    """The reference root-to-leaf walk (one node test per level)."""

    test_vector = "node by node on the root-to-leaf path"

    def __init__(self, ens: Ensemble, forest: Forest):
        super().__init__(ens, forest)
        from . import _traversal
        self._k = _traversal
        self._arrays = layouts.traversal_arrays(ens)
        self._layout = _traversal.TraversalLayout(self._arrays)

    def arrays(self) -> dict:
        return self._arrays

    def predict_raw(self, X, out64, out32, rowbuf, n_threads):
        self._k.predict_raw(self.forest, self._layout, X, out64, out32, rowbuf, n_threads)

    def predict_leaf(self, X, out, rowbuf, n_threads):
        self._k.predict_leaf(self.forest, self._layout, X, out, rowbuf, n_threads)
