"""The C library, libquickscorer, from Python: where its header and library are
(``python -m quickscorer.capi --cflags --libs``, as ``numpy.get_include()`` tells where NumPy's
headers are), and :class:`CModel`, a prepared model file scored through the library itself
(ctypes), for a check of what a C, Java or Go service will get. docs/c-api.md.

The library scores a ``.qsm`` file with no Python: it reads the file's C index, checks every
array it is scored from, and runs the rules and transforms the Python kernels run
(``src/quickscorer/forest.h``, ``transforms.h``), so its scores are ``Model.predict``'s bit for
bit.
"""
from __future__ import annotations

import argparse
import ctypes
import sys
from pathlib import Path

import numpy as np

from .errors import InputError, ModelFileError

_HERE = Path(__file__).resolve().parent
#: qs_predict's flag for margins (quickscorer.h QS_RAW_SCORE)
RAW_SCORE = 1
_STATUS = {1: "argument", 2: "io", 3: "format", 4: "memory", 5: "unsupported", 6: "thread"}


def include_dir() -> Path:
    """The folder of ``quickscorer.h``."""
    return _HERE / "include"


def lib_dir() -> Path:
    """The folder of ``libquickscorer``."""
    return _HERE / "lib"


def library_path() -> Path:
    """The shared library itself; FileNotFoundError where this build has none (Windows)."""
    for name in ("libquickscorer.so", "libquickscorer.dylib"):
        path = lib_dir() / name
        if path.is_file():
            return path
    raise FileNotFoundError(f"libquickscorer is not in {lib_dir()}: this build of quickscorer "
                            f"has no C library (docs/c-api.md)")


def cflags() -> str:
    return f"-I{include_dir()}"


def libs() -> str:
    d = lib_dir()
    return f"-L{d} -Wl,-rpath,{d} -lquickscorer"


_LIB = None


def library() -> ctypes.CDLL:
    """libquickscorer loaded, its functions typed."""
    global _LIB
    if _LIB is None:
        lib = ctypes.CDLL(str(library_path()))
        i64p = ctypes.POINTER(ctypes.c_int64)
        handle = ctypes.c_void_p
        lib.qs_version.restype = ctypes.c_char_p
        lib.qs_last_error.restype = ctypes.c_char_p
        lib.qs_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(handle)]
        lib.qs_open_memory.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(handle)]
        lib.qs_close.argtypes = [handle]
        lib.qs_num_features.argtypes = [handle, i64p]
        lib.qs_num_outputs.argtypes = [handle, ctypes.c_int, i64p]
        lib.qs_num_trees.argtypes = [handle, i64p]
        for name in ("qs_predict", "qs_predict_f64"):
            getattr(lib, name).argtypes = [handle, ctypes.c_void_p, ctypes.c_int64,
                                           ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
        lib.qs_predict_leaf.argtypes = [handle, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int,
                                        ctypes.c_void_p]
        _LIB = lib
    return _LIB


def version() -> str:
    """The library's ``qs_version()``."""
    return library().qs_version().decode()


def _check(status: int) -> None:
    if status == 0:
        return
    message = library().qs_last_error().decode(errors="replace")
    if status in (2, 3):
        raise ModelFileError(message)
    if status == 1:
        raise InputError(message)
    raise RuntimeError(f"libquickscorer ({_STATUS.get(status, status)}): {message}")


class CModel:
    """A prepared model file opened by libquickscorer (``qs_open``, or ``qs_open_memory``
    for bytes), scored by it."""

    def __init__(self, source):
        lib = library()
        self._h = ctypes.c_void_p()
        if isinstance(source, (bytes, bytearray, memoryview)):
            data = bytes(source)
            _check(lib.qs_open_memory(data, len(data), ctypes.byref(self._h)))
        else:
            _check(lib.qs_open(str(source).encode(), ctypes.byref(self._h)))
        n = ctypes.c_int64()
        _check(lib.qs_num_features(self._h, ctypes.byref(n)))
        self.n_features = n.value
        _check(lib.qs_num_trees(self._h, ctypes.byref(n)))
        self.n_trees = n.value

    def n_outputs(self, raw_score: bool = False) -> int:
        n = ctypes.c_int64()
        _check(library().qs_num_outputs(self._h, RAW_SCORE if raw_score else 0,
                                        ctypes.byref(n)))
        return n.value

    def _rows(self, X) -> np.ndarray:
        X = np.asarray(X)
        if X.dtype not in (np.float32, np.float64):
            X = X.astype(np.float64)
        X = np.ascontiguousarray(X.reshape(-1, self.n_features) if X.ndim == 1 else X)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise InputError(f"rows of {self.n_features} features expected, got {X.shape}")
        return X

    def predict(self, X, raw_score: bool = False, n_threads: int = 1) -> np.ndarray:
        """``qs_predict`` (float32 rows) or ``qs_predict_f64``: ``(n_rows, outputs)``
        float64."""
        if self._h is None:
            raise ValueError("the model is closed")
        X = self._rows(X)
        out = np.empty((X.shape[0], self.n_outputs(raw_score)), np.float64)
        fn = library().qs_predict if X.dtype == np.float32 else library().qs_predict_f64
        _check(fn(self._h, X.ctypes.data, X.shape[0], RAW_SCORE if raw_score else 0,
                  n_threads, out.ctypes.data))
        return out

    def predict_leaf(self, X, n_threads: int = 1) -> np.ndarray:
        """``qs_predict_leaf`` of the rows as float32: ``(n_rows, n_trees)`` int32."""
        if self._h is None:
            raise ValueError("the model is closed")
        X = np.ascontiguousarray(self._rows(X), np.float32)
        out = np.empty((X.shape[0], self.n_trees), np.int32)
        _check(library().qs_predict_leaf(self._h, X.ctypes.data, X.shape[0], n_threads,
                                         out.ctypes.data))
        return out

    def close(self) -> None:
        if self._h is not None and self._h.value:
            library().qs_close(self._h)
        self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:       # interpreter shutdown: the library may be gone
            pass


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m quickscorer.capi",
                                description="How to build against libquickscorer: "
                                            "cc $(python -m quickscorer.capi --cflags) app.c "
                                            "$(python -m quickscorer.capi --libs)")
    p.add_argument("--cflags", action="store_true", help="the compiler flags (-I)")
    p.add_argument("--libs", action="store_true", help="the linker flags (-L, -rpath, -l)")
    p.add_argument("--include-dir", action="store_true", help="the folder of quickscorer.h")
    p.add_argument("--lib-dir", action="store_true", help="the folder of the library")
    args = p.parse_args(argv)
    try:
        library_path()
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        return 1
    out = []
    if args.cflags:
        out.append(cflags())
    if args.libs:
        out.append(libs())
    if args.include_dir:
        out.append(str(include_dir()))
    if args.lib_dir:
        out.append(str(lib_dir()))
    if not out:
        p.print_help()
        return 2
    print(" ".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
