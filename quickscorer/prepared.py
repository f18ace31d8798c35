"""Layouts prepared ahead of time: the results a prepared model file (``.qsm``,
:mod:`quickscorer.model_file`) holds beside the trees, and how the algorithms find them.

An algorithm builds its arrays through :func:`built`, naming what they are computed from
besides the ensemble (its switches, the CPU's cache size where that sizes its blocks). An
ensemble that a model file was opened into carries a :class:`Store` of the file's results:
a result whose name and parameters match is taken as it is (read-only views of the file), any
other is computed. An ensemble being compiled carries a recording store, which keeps every
result for the writer. Any other ensemble carries none, and ``built`` computes.

A result is a value of numpy arrays, numbers, strings, None, lists, tuples and dicts of
them; an algorithm may add arrays to a dict it got (the record then holds them too).
"""
from __future__ import annotations

import hashlib
import threading
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from .errors import ModelFileError

#: the most characters of a key's parameters written out; longer ones are hashed
_KEY_PARAMS = 200


class Store:
    """Results by key: those of a model file (``records``), or, when ``recording``, the
    results computed so far, for a model file to hold."""

    def __init__(self, records: dict[str, Any] | None = None, recording: bool = False):
        self.records: dict[str, Any] = dict(records or {})
        self.recording = recording
        #: the keys taken from the records, and those computed (``Model.info``, the tests)
        self.taken: set[str] = set()
        self.computed: set[str] = set()
        self._lock = threading.Lock()

    def get(self, key: str, build: Callable[[], Any],
            check: Callable[[Any], bool] | None = None) -> Any:
        """The result of ``key``: the record's, else ``build()`` (recorded when recording).
        A record that ``check`` refuses is a damaged file (ModelFileError)."""
        if key in self.records and not self.recording:
            value = self.records[key]
            if check is not None and not check(value):
                raise ModelFileError(f"the model file's record {key} is not what its layout "
                                     f"holds (a damaged file)", section=0,
                                     section_name=f"record {key}")
            self.taken.add(key)
            return value
        with self._lock:
            if self.recording and key in self.records:
                return self.records[key]
        value = build()
        self.computed.add(key)
        if self.recording:
            with self._lock:
                self.records.setdefault(key, value)
                value = self.records[key]
        return value


_STORES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def attach(ens, store: Store) -> None:
    """Give ``ens`` the results of ``store`` (a model file's, or a recording one)."""
    _STORES[ens] = store


def store_of(ens) -> Store | None:
    """The store ``ens`` carries, or None."""
    return _STORES.get(ens)


def key(name: str, params: tuple = ()) -> str:
    """The key of result ``name`` computed with ``params`` (numbers, strings, None, bools and
    tuples of them: what the result depends on besides the ensemble)."""
    text = repr(tuple(params))
    if len(text) > _KEY_PARAMS:
        text = "#" + hashlib.sha256(text.encode()).hexdigest()[:32]
    return f"{name}{text}"


def built(ens, name: str, params: tuple, build: Callable[[], Any],
          check: Callable[[Any], bool] | None = None) -> Any:
    """The result ``name`` of ``ens`` for ``params``: from the store ``ens`` carries where it
    holds one (``check``: whether a model file's record has the result's form, default
    :func:`arrays`), else ``build()``."""
    store = _STORES.get(ens)
    if store is None:
        return build()
    return store.get(key(name, params), build, arrays if check is None else check)


def arrays(value) -> bool:
    """Whether ``value`` is a layout's form: a dict of names to numpy arrays."""
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, np.ndarray) for k, v in value.items())


def array_list(value) -> bool:
    """Whether ``value`` is a list of layouts (:func:`arrays`)."""
    return isinstance(value, list) and all(arrays(v) for v in value)
