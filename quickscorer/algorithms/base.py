"""What every algorithm is: a layout prepared once per model, and calls of its Cython kernel.

An algorithm is built from the neutral :class:`~quickscorer.ir.Ensemble` and the model's
:class:`~quickscorer._forest.Forest` (leaf values, groups, base scores: what turns exit leaves
into scores). Most kernels define only their layout (a subclass of ``_kernel.Layout``) and use
the shared row loops of ``src/quickscorer/_kernel.pyx``; :class:`Algorithm` calls those with
scratch rows that it keeps per Python thread, so a scoring call allocates nothing
proportional to the model and two Python threads never share scratch.
"""
from __future__ import annotations

import threading
from functools import partial

import numpy as np

from .. import _kernel
from .._forest import Forest
from ..ir.ensemble import Ensemble
from ..tuning import Tuning, current


def aligned_empty(n_rows: int, width: int, dtype, align: int = 64) -> np.ndarray:
    """An uninitialised (n_rows, >= width) array of 8-byte items whose every row starts on an
    ``align``-byte boundary: a vector load or store of a scan then never straddles two cache
    lines (numpy itself only promises 16 bytes)."""
    per = align // 8
    width = max(per, -(-max(width, 1) // per) * per)
    flat = np.empty(n_rows * width + per, dtype)
    skip = (-flat.ctypes.data % align) // 8
    return flat[skip:skip + n_rows * width].reshape(n_rows, width)


class Algorithm:
    """A prepared layout plus the kernel calls that read it.

    Subclasses set ``self.layout`` (a ``_kernel.Layout``) and ``self._arrays`` (the numpy
    arrays it wraps) in ``__init__``; those with row loops of their own (``vqs``) override
    :meth:`predict_raw` and :meth:`predict_leaf`.
    """

    name = "?"
    #: how the node tests are evaluated, for the README and ``Model.info()``
    test_vector = ""
    #: whether :meth:`predict_small` is a low-latency entry (``Model`` sends the calls of
    #: fewer than ``Tuning.parallel_min_rows`` rows of a named algorithm to it)
    small_calls = False
    #: the call sizes the automatic choice weighs this family for (``autoselect.REGIMES``):
    #: ``one_row``, ``few_rows``, ``many_rows``, or ``every`` (it takes every call it can
    #: from :meth:`first_rows` on, whatever the others cost); none: never chosen
    regimes: tuple[str, ...] = ()
    #: at equal :meth:`cost` the family of the lower rank runs
    tie_rank = 1

    @classmethod
    def unsupported(cls, ens: Ensemble) -> str | None:
        """Why this algorithm cannot score ``ens``, or None when it can (every algorithm but
        ``rapidscorer`` scores every model)."""
        return None

    @classmethod
    def facts(cls, ens: Ensemble, t: Tuning) -> dict:
        """What this family's costs read of ``ens`` (from the node covers the model file
        holds and its layout's shape), computed once per model by the automatic choice;
        every family's facts share one dict (``autoselect.Facts``)."""
        return {}

    @classmethod
    def cost(cls, regime: str, facts, t: Tuning) -> float | None:
        """A row's expected cost in ``regime`` on the model of ``facts``, in the unit the
        families of that regime share (the least runs), or None where the family does not
        compete there."""
        return None

    @classmethod
    def first_rows(cls, before: str, facts, t: Tuning) -> int:
        """Rows a thread from which this family takes a model's calls over from ``before``,
        the family of the smaller calls."""
        return 1

    def __init__(self, ens: Ensemble, forest: Forest, tuning: Tuning | None = None):
        why = self.unsupported(ens)
        if why is not None:
            raise ValueError(f"algorithm {self.name!r} cannot score this model: {why}")
        self.ens = ens
        self.forest = forest
        #: the switches this layout was built with (``quickscorer.tuning``)
        self.tuning = current() if tuning is None else tuning
        self.layout = None
        self._arrays: dict = {}
        self._scratch = threading.local()

    def scratch(self, name: str, n_threads: int, width: int, dtype=np.uint64) -> np.ndarray:
        """Scratch rows (``n_threads`` x at least ``width``, 64-byte aligned) kept for this
        Python thread and reused by its later calls."""
        buf = getattr(self._scratch, name, None)
        if buf is None or buf.shape[0] < n_threads or buf.shape[1] < width:
            buf = aligned_empty(n_threads, width, dtype)
            setattr(self._scratch, name, buf)
        return buf

    @staticmethod
    def specialised(fused) -> dict:
        """A fused-type kernel function by input dtype: calling the specialisation directly
        skips the dispatch on the arguments' types."""
        sig = fused.__signatures__
        return {np.dtype(np.float32): sig["float"], np.dtype(np.float64): sig["double"]}

    def _rowbuf(self, n_threads: int) -> np.ndarray:
        return self.scratch("row", n_threads, self.ens.n_features, np.float64)

    def predict_raw(self, X, out64, out32, n_threads: int) -> None:
        """Raw scores of the rows of X into out64 (float64 models) or out32 (float32), the
        other one empty."""
        _RAW[X.dtype](self.forest, self.layout, X, out64, out32, self._rowbuf(n_threads),
                      self.scratch("kernel", n_threads, self.layout.scratch_words), n_threads)

    def predict_small(self, X, squeeze: bool):
        """Raw scores of a call of a few rows on one thread through the kernel's low-latency
        entry (numpy's C API instead of typed memoryviews, no thread start-up): a new array,
        ``(n,)`` when ``squeeze`` and the model has one output, else ``(n, k)``; None where
        the entry does not take X (not a C-contiguous float32 / float64 array of the model's
        width, 2-D or one 1-D row) or the kernel has none: the caller then takes the general
        path, which reads any input and says what is wrong."""
        if not isinstance(self.layout, _kernel.Layout):
            return None
        return _kernel.predict_small(self.forest, self.layout, X, squeeze)

    def small_entry(self, n: int):
        """``predict_small`` for calls of ``n`` rows as one callable ``(X, squeeze)``, its
        per-call choices made once (Model keeps one per row count): a call through it skips
        the Python frames of the dispatch (``python -m benchmarks.tuning.call_overhead``)."""
        if isinstance(self.layout, _kernel.Layout):
            return partial(_kernel.predict_small, self.forest, self.layout)
        return self.predict_small

    def predict_leaf(self, X, out, n_threads: int) -> None:
        """In-order exit leaf of every tree for the rows of X, into out (rows x trees)."""
        _LEAF[X.dtype](self.forest, self.layout, X, out, self._rowbuf(n_threads),
                       self.scratch("kernel", n_threads, self.layout.scratch_words), n_threads)

    def describe(self) -> dict:
        """Facts of this prepared layout for ``Model.info()`` (its instruction set and the
        like), keys prefixed by the algorithm's name."""
        return {}

    def arrays(self) -> dict:
        """The layout as numpy arrays, for inspection and ``nbytes``."""
        return self._arrays

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays().values() if isinstance(a, np.ndarray))

    def held_arrays(self) -> list:
        """Every array this algorithm keeps alive (its layout, and any copies cut from it),
        for ``Model.info()``'s memory account; per-thread scratch is not included."""
        return [a for a in self.arrays().values() if isinstance(a, np.ndarray)]


def distinct_bytes(arrays) -> int:
    """Bytes of the memory behind ``arrays``, each buffer counted once (views and shared
    layouts count where their memory is owned)."""
    seen: dict[int, int] = {}
    for a in arrays:
        owner = a
        while isinstance(owner.base, np.ndarray):
            owner = owner.base
        if owner.base is None:
            seen[id(owner)] = owner.nbytes
        else:   # memory owned by a non-numpy object (a buffer): count the view
            seen[id(a)] = a.nbytes
    return sum(seen.values())


_RAW = Algorithm.specialised(_kernel.predict_raw)
_LEAF = Algorithm.specialised(_kernel.predict_leaf)
