"""The "quickscorer" algorithm: QuickScorer's feature-wise threshold scans (Lucchese et al.,
SIGIR 2015, Algorithm 1), one document at a time, over the layout of
:mod:`~quickscorer.algorithms.qs.layout` (kernel:
``src/quickscorer/algorithms/qs/_qs.pyx``).

The layout is built once per ensemble and shared with ``vqs``
(:mod:`~quickscorer.algorithms.qs.vqs`), which scans the same arrays for groups of documents.

Legal note: QuickScorer is covered by US patent 11,106,685 (Istella/Tiscali).
"""
from __future__ import annotations

import threading
import weakref

from ..._forest import Forest
from ...ir.ensemble import Ensemble
from ..base import Algorithm
from . import _qs
from .layout import kernel_arrays, quickscorer_arrays

# one QuickScorer layout per ensemble, shared by "quickscorer" and "vqs" (built once)
_LAYOUTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_LAYOUTS_LOCK = threading.Lock()


def shared_layout(ens: Ensemble) -> tuple[dict, _qs.QSLayout]:
    """The QuickScorer arrays of ``ens`` that the kernels read (read-only,
    :func:`~quickscorer.algorithms.qs.layout.kernel_arrays`) and their kernel wrapper, built
    once."""
    with _LAYOUTS_LOCK:
        got = _LAYOUTS.get(ens)
        if got is None:
            arrays = kernel_arrays(quickscorer_arrays(ens))
            for a in arrays.values():
                a.setflags(write=False)
            got = (arrays, _qs.QSLayout(arrays, ens.n_features))
            _LAYOUTS[ens] = got
    return got


class QuickScorer(Algorithm):
    """Per feature, all thresholds sorted; false nodes AND their masks into leaf bitvectors."""

    name = "quickscorer"
    test_vector = "feature-wise scans of sorted thresholds (QuickScorer)"

    def __init__(self, ens: Ensemble, forest: Forest):
        super().__init__(ens, forest)
        self._arrays, self.layout = shared_layout(ens)
        self._words = int(self._arrays["tree_word_offsets"][-1])
