"""The "quickscorer" algorithm: QuickScorer's feature-wise threshold scans (Lucchese et al.,
SIGIR 2015, Algorithm 1) over the layout of :mod:`quickscorer.qs_layout`.

Legal note: QuickScorer is covered by US patent 11,106,685 (Istella/Tiscali).
"""
from __future__ import annotations

import threading
import weakref

import numpy as np

from .algorithms import Algorithm, register
from .ensemble import Ensemble
from ._forest import Forest
from .qs_layout import quickscorer_arrays


# one QuickScorer layout per ensemble, shared by "quickscorer" and "vqs" (built once)
_LAYOUTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_LAYOUTS_LOCK = threading.Lock()


def _shared_layout(ens: Ensemble):
    from . import _quickscorer
    with _LAYOUTS_LOCK:
        got = _LAYOUTS.get(ens)
        if got is None:
            arrays = quickscorer_arrays(ens)
            for a in arrays.values():
                a.setflags(write=False)
            got = (arrays, _quickscorer.QSLayout(arrays, ens.n_features))
            _LAYOUTS[ens] = got
    return got


@register("quickscorer")
class QuickScorer(Algorithm):
    """Per feature, all thresholds sorted; false nodes AND their masks into leaf bitvectors."""

    test_vector = "feature-wise scans of sorted thresholds (QuickScorer)"

    def __init__(self, ens: Ensemble, forest: Forest):
        super().__init__(ens, forest)
        from . import _quickscorer
        self._k = _quickscorer
        self._arrays, self._layout = _shared_layout(ens)
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


ISAS = {"scalar": 0, "avx2": 1, "avx512": 2}


def default_block_words() -> int:
    """Bitvector words per tree block: ``$QUICKSCORER_BLOCK_WORDS``, else half the L2 cache
    (read from sysfs) divided among the 8 lanes, at least 64. (Measured on the 1,000 x 64
    model: blocks sized to L1 were slower than none; the bitvectors of a document block only
    need to stay in L2.)"""
    import os
    env = os.environ.get("QUICKSCORER_BLOCK_WORDS")
    if env:
        return max(1, int(env))
    l2 = 512 * 1024
    try:
        with open("/sys/devices/system/cpu/cpu0/cache/index2/size") as fh:
            text = fh.read().strip().upper()
        l2 = int(text[:-1]) * 1024 if text.endswith("K") else int(text)
    except (OSError, ValueError):
        pass
    return max(64, l2 // (2 * 8 * 8))


def isa_code(name: str | None = None) -> int:
    """The instruction-set path to run: ``name``, else ``$QUICKSCORER_ISA``, else the widest
    this CPU has. Raises ``ValueError`` for an unknown name or one the CPU cannot run."""
    from . import _quickscorer
    import os
    name = name or os.environ.get("QUICKSCORER_ISA") or None
    if name is None:
        return int(_quickscorer.best_isa())
    if name not in ISAS:
        raise ValueError(f"unknown instruction set {name!r}; known: {sorted(ISAS)}")
    if not _quickscorer.isa_available(ISAS[name]):
        raise ValueError(f"this CPU cannot run the {name!r} path")
    return ISAS[name]


def available_isas() -> list[str]:
    from . import _quickscorer
    return [n for n, c in ISAS.items() if _quickscorer.isa_available(c)]


@register("vqs")
class VQuickScorer(QuickScorer):
    """V-QuickScorer: the same layout, scanned for 8 documents at once (AVX-512, AVX2 or
    portable C, chosen at run time; force one with ``isa=`` or ``$QUICKSCORER_ISA``)."""

    test_vector = "feature-wise scans of sorted thresholds, 8 documents per SIMD scan"

    def __init__(self, ens: Ensemble, forest: Forest, isa: str | None = None,
                 block_words: int | None = None):
        super().__init__(ens, forest)
        self.isa = isa_code(isa)
        self.block_words = block_words or default_block_words()
        self._blocked = self._tree_blocks(ens)

    def _tree_blocks(self, ens: Ensemble):
        """Consecutive trees whose bitvectors (8 lanes) fit the word budget, one layout each;
        None when the whole model fits one block."""
        words = (np.array([t.n_leaves for t in ens.trees]) + 63) // 64
        starts = [0]
        acc = 0
        for t, w in enumerate(words):
            if acc and acc + w > self.block_words:
                starts.append(t)
                acc = 0
            acc += int(w)
        starts.append(ens.n_trees)
        if len(starts) == 2:
            return None
        layouts = []
        for a, b in zip(starts[:-1], starts[1:]):
            sub = Ensemble(trees=ens.trees[a:b], tree_group=ens.tree_group[a:b],
                           n_outputs=ens.n_outputs, n_features=ens.n_features,
                           family=ens.family, base_score=ens.base_score)
            arrays = quickscorer_arrays(sub)
            for arr in arrays.values():
                arr.setflags(write=False)
            layouts.append(self._k.QSLayout(arrays, ens.n_features))
        self._block_arrays = None
        return self._k.BlockedLayout(layouts, starts)

    @property
    def isa_name(self) -> str:
        return {v: k for k, v in ISAS.items()}[self.isa]

    def _buffers(self, n_threads: int):
        lanes = self._k.LANES
        rows = np.empty((n_threads, lanes * (self.ens.n_features + 1)), np.float64)
        bits = np.empty((n_threads, lanes * max(self._words, 1)), np.uint64)
        return rows, bits

    def predict_raw(self, X, out64, out32, rowbuf, n_threads):
        rows, bits = self._buffers(n_threads)
        if self._blocked is not None:
            self._k.predict_raw_blocked(self.forest, self._blocked, X, out64, out32, rows,
                                        bits, n_threads, self.isa)
            return
        self._k.predict_raw_lanes(self.forest, self._layout, X, out64, out32, rows, bits,
                                  n_threads, self.isa)

    def predict_leaf(self, X, out, rowbuf, n_threads):
        rows, bits = self._buffers(n_threads)
        self._k.predict_leaf_lanes(self.forest, self._layout, X, out, rows, bits, n_threads,
                                   self.isa)
