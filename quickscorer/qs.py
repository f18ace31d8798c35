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


def aligned_empty(n_rows: int, width: int, dtype, align: int = 64) -> np.ndarray:
    """An uninitialised (n_rows, >= width) array of 8-byte items whose every row starts on an
    ``align``-byte boundary: a vector load or store of the scan then never straddles two cache
    lines (numpy itself only promises 16 bytes)."""
    per = align // 8
    width = max(per, -(-max(width, 1) // per) * per)
    flat = np.empty(n_rows * width + per, dtype)
    skip = (-flat.ctypes.data % align) // 8
    return flat[skip:skip + n_rows * width].reshape(n_rows, width)


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
        self._scratch = threading.local()

    def arrays(self) -> dict:
        return self._arrays

    def _scratch_buffer(self, name: str, n_threads: int, width: int, dtype) -> np.ndarray:
        """Scratch rows for n_threads kernel threads, kept per Python thread and reused by
        its later calls: a scoring call allocates nothing proportional to the model, and two
        Python threads scoring at once never share scratch."""
        buf = getattr(self._scratch, name, None)
        if buf is None or buf.shape[0] < n_threads or buf.shape[1] < width:
            buf = aligned_empty(n_threads, width, dtype)
            setattr(self._scratch, name, buf)
        return buf

    def _bitbuf(self, n_threads: int) -> np.ndarray:
        return self._scratch_buffer("bits", n_threads, self._words, np.uint64)

    def predict_raw(self, X, out64, out32, rowbuf, n_threads):
        self._k.predict_raw(self.forest, self._layout, X, out64, out32, rowbuf,
                            self._bitbuf(n_threads), n_threads)

    def predict_leaf(self, X, out, rowbuf, n_threads):
        self._k.predict_leaf(self.forest, self._layout, X, out, rowbuf,
                             self._bitbuf(n_threads), n_threads)


ISAS = {"scalar": 0, "avx2": 1, "avx512": 2}


def l2_cache_bytes() -> int:
    """This CPU's per-core L2 cache size (sysfs), 512 KiB where it cannot be read."""
    try:
        with open("/sys/devices/system/cpu/cpu0/cache/index2/size") as fh:
            text = fh.read().strip().upper()
        return int(text[:-1]) * 1024 if text.endswith("K") else int(text)
    except (OSError, ValueError):
        return 512 * 1024


def _env_int(name: str) -> int | None:
    import os
    text = os.environ.get(name)
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"${name} must be an integer, got {text!r}") from None


def default_block_bytes() -> int:
    """Layout bytes per tree block: ``$QUICKSCORER_BLOCK_BYTES``, else half the L2 cache, so
    that a tree block's thresholds and masks stay in L2 while a document block is scanned
    against them (block-wise QuickScorer)."""
    env = _env_int("QUICKSCORER_BLOCK_BYTES")
    return max(1, env) if env is not None else l2_cache_bytes() // 2


#: groups of documents scanned against one tree block before the next block
DEFAULT_DOC_GROUPS = 8

#: the widest group of documents per scan on each path (measured on the 1,000 x 64 model,
#: Xeon with AVX-512: 32 lanes 1.3x faster than 8 on AVX-512, 16 lanes 1.08x on AVX2)
MAX_LANES = {"scalar": 8, "avx2": 16, "avx512": 32}


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
    """V-QuickScorer: the same layout, scanned for a group of 8, 16 or 32 documents at once
    (``lanes``; by default the widest group the rows per thread fill) on AVX-512, AVX2 or
    portable C, chosen at run time (force one with ``isa=`` or ``$QUICKSCORER_ISA``).

    Models whose layout exceeds ``block_bytes`` (half the L2 cache by default) are cut into
    consecutive tree blocks, and ``doc_groups`` groups of documents are scanned against one
    tree block before the next. ``merge=True`` compares each distinct threshold of a feature
    once for all of its nodes instead of once per node (off by default: measured slower, see
    the README)."""

    test_vector = "feature-wise scans of sorted thresholds, 8 to 32 documents per SIMD scan"

    def __init__(self, ens: Ensemble, forest: Forest, isa: str | None = None,
                 block_bytes: int | None = None, doc_groups: int | None = None,
                 merge: bool | None = None, lanes: int | None = None,
                 block_trees: int | None = None):
        super().__init__(ens, forest)
        self.isa = isa_code(isa)
        #: a fixed group size, or None: chosen per call from the rows per thread
        self.lanes = lanes or _env_int("QUICKSCORER_LANES") or None
        if self.lanes is not None and self.lanes not in self._k.LANE_CHOICES:
            raise ValueError(f"lanes must be one of {self._k.LANE_CHOICES}, got {self.lanes}")
        self.max_lanes = self.lanes or MAX_LANES[self.isa_name]
        self.block_bytes = block_bytes or default_block_bytes()
        self.doc_groups = doc_groups or _env_int("QUICKSCORER_DOC_GROUPS") or DEFAULT_DOC_GROUPS
        if self.doc_groups < 1:
            raise ValueError(f"doc_groups must be >= 1, got {self.doc_groups}")
        if merge is None:
            env = _env_int("QUICKSCORER_MERGE")
            merge = False if env is None else bool(env)
        self.merge = bool(merge)
        self.block_trees = block_trees or _env_int("QUICKSCORER_BLOCK_TREES")
        self._blocked = self._tree_blocks(ens)

    def _tree_blocks(self, ens: Ensemble):
        """Consecutive trees whose layout (thresholds, words and masks of their entries, and
        their bitvectors for the widest group) fits ``block_bytes`` (and at most
        ``block_trees`` trees when given), one layout each; None when the whole model fits
        one block."""
        a = self._arrays
        entries = np.bincount(a["trees"][a["trees"] >= 0], minlength=ens.n_trees)
        words = np.diff(a["tree_word_offsets"])
        cost = entries * (8 + 4 + 8 + 8) + words * 8 * self.max_lanes
        starts = [0]
        acc = 0
        for t, c in enumerate(cost.tolist()):
            if acc and (acc + c > self.block_bytes
                        or (self.block_trees and t - starts[-1] >= self.block_trees)):
                starts.append(t)
                acc = 0
            acc += c
        starts.append(ens.n_trees)
        self.tree_blocks = len(starts) - 1
        if len(starts) == 2:
            return None
        layouts = []
        for a0, b0 in zip(starts[:-1], starts[1:]):
            sub = Ensemble(trees=ens.trees[a0:b0], tree_group=ens.tree_group[a0:b0],
                           n_outputs=ens.n_outputs, n_features=ens.n_features,
                           family=ens.family, base_score=ens.base_score)
            arrays = quickscorer_arrays(sub)
            for arr in arrays.values():
                arr.setflags(write=False)
            layouts.append(self._k.QSLayout(arrays, ens.n_features))
        return self._k.BlockedLayout(layouts, starts)

    @property
    def isa_name(self) -> str:
        return {v: k for k, v in ISAS.items()}[self.isa]

    def lanes_for(self, n_rows: int, n_threads: int) -> int:
        """Documents per scan for a call: the widest group the rows per thread fill."""
        if self.lanes is not None:
            return self.lanes
        per_thread = n_rows // max(1, n_threads)
        for lanes in (32, 16):
            if lanes <= self.max_lanes and per_thread >= lanes:
                return lanes
        return 8

    def _buffers(self, n_threads: int, words: int, groups: int = 1):
        lanes = self.max_lanes
        rows = self._scratch_buffer("lane_rows", n_threads,
                                    lanes * (groups * self.ens.n_features + 1), np.float64)
        bits = self._scratch_buffer("lane_bits", n_threads, lanes * words, np.uint64)
        return rows, bits

    def predict_raw(self, X, out64, out32, rowbuf, n_threads):
        lanes = self.lanes_for(X.shape[0], n_threads)
        if self._blocked is not None:
            rows, bits = self._buffers(n_threads, self._blocked.max_words, self.doc_groups)
            self._k.predict_raw_blocked(self.forest, self._blocked, X, out64, out32, rows,
                                        bits, n_threads, self.isa, self.merge,
                                        self.doc_groups, lanes)
            return
        rows, bits = self._buffers(n_threads, self._words)
        self._k.predict_raw_lanes(self.forest, self._layout, X, out64, out32, rows, bits,
                                  n_threads, self.isa, self.merge, lanes)

    def predict_leaf(self, X, out, rowbuf, n_threads):
        rows, bits = self._buffers(n_threads, self._words)
        self._k.predict_leaf_lanes(self.forest, self._layout, X, out, rows, bits, n_threads,
                                   self.isa, self.merge, self.lanes_for(X.shape[0], n_threads))
