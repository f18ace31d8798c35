"""Threads for a build without OpenMP (Apple's clang, a build with ``QUICKSCORER_OPENMP=0``).

The kernels split a call's rows among OpenMP threads. Where the build has no OpenMP, their
parallel loops run on the calling thread alone; :func:`run` then splits the rows itself, into
one contiguous slice per thread, and runs the kernel on each slice in a pool of Python
threads. The kernels release the GIL and keep their scratch per Python thread
(``algorithms/base.py``), so the slices run at once, and each row's score is computed exactly
as on one thread: the results are the same, bit for bit.

``Tuning.thread_pool`` (``$QUICKSCORER_THREAD_POOL=1``) takes the pool on a build with OpenMP
too (the tests check it against OpenMP's threads there).
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from . import _config

#: whether the kernels' own loops start threads (the build has OpenMP)
OPENMP = bool(_config.build_info()["openmp"])

_POOL: ThreadPoolExecutor | None = None
_POOL_LOCK = threading.Lock()


def use_pool(n_threads: int, pool: bool = False) -> bool:
    """Whether a call on ``n_threads`` threads takes the pool of Python threads (``pool``:
    the model's ``Tuning.thread_pool``)."""
    if n_threads <= 1:
        return False
    return not OPENMP or pool


def _pool() -> ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2),
                                       thread_name_prefix="quickscorer")
        return _POOL


def run(kernel: Callable, X: np.ndarray, outs: tuple[np.ndarray, ...], n_threads: int,
        pool: bool = False) -> None:
    """``kernel(X, *outs, n_threads)``: on OpenMP's threads where the build has OpenMP (and
    ``pool`` is false), else ``kernel(X[a:b], *(o[a:b] for o in outs), 1)`` for
    ``n_threads`` slices of rows at once (an output with no rows, the unused one of a pair,
    is passed whole)."""
    if not use_pool(n_threads, pool):
        kernel(X, *outs, n_threads)
        return
    n = X.shape[0]
    bounds = np.linspace(0, n, min(n_threads, n) + 1).astype(np.int64)
    spans = [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]

    def one(span):
        a, b = span
        kernel(X[a:b], *(o[a:b] if o.shape[0] == n else o for o in outs), 1)

    # list() waits for every slice and raises the first slice's exception here
    list(_pool().map(one, spans))
