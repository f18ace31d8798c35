"""The "quickscorer" algorithm: QuickScorer's feature-wise threshold scans (Lucchese et al.,
SIGIR 2015, Algorithm 1) over the layout of :mod:`quickscorer.qs_layout`.

Legal note: QuickScorer is covered by US patent 11,106,685 (Istella/Tiscali).
"""
from __future__ import annotations

import numpy as np

from .algorithms import Algorithm, register
from .ensemble import Ensemble
from ._forest import Forest
from .qs_layout import quickscorer_arrays


@register("quickscorer")
class QuickScorer(Algorithm):
    """Per feature, all thresholds sorted; false nodes AND their masks into leaf bitvectors."""

    test_vector = "feature-wise scans of sorted thresholds (QuickScorer)"

    def __init__(self, ens: Ensemble, forest: Forest):
        super().__init__(ens, forest)
        from . import _quickscorer
        self._k = _quickscorer
        self._arrays = quickscorer_arrays(ens)
        for a in self._arrays.values():
            a.setflags(write=False)
        self._layout = _quickscorer.QSLayout(self._arrays, ens.n_features)
        self._words = int(self._arrays["tree_word_offsets"][-1])

    def arrays(self) -> dict:
        return self._arrays

    def _bitbuf(self, n_threads: int) -> np.ndarray:
        # per call, so that concurrent calls from several Python threads never share scratch
        return np.empty((n_threads, max(self._words, 1)), np.uint64)

    def predict_raw(self, X, out64, out32, rowbuf, n_threads):
        self._k.predict_raw(self.forest, self._layout, X, out64, out32, rowbuf,
                            self._bitbuf(n_threads), n_threads)

    def predict_leaf(self, X, out, rowbuf, n_threads):
        self._k.predict_leaf(self.forest, self._layout, X, out, rowbuf,
                             self._bitbuf(n_threads), n_threads)
