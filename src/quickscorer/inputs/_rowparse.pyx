"""Rows to score from LibSVM and CSV/TSV text, and rows of results as text, in C.

``parse_libsvm`` and ``parse_csv`` read a block of whole lines (a ``bytes`` object whose last
line ends in a newline) into a float64 array with the GIL released (row_parse.h);
``format_rows`` writes columns of numbers and byte strings as delimited text lines;
``floats_from_list`` reads a request's list of numbers. Used by ``quickscorer.inputs.readers``,
``quickscorer.outputs`` and ``quickscorer.serving``.
"""
cimport cython
from libc.stdint cimport int32_t, int64_t
from libc.string cimport memcpy
from libc.math cimport NAN, fabs
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING
from cpython.mem cimport PyMem_Free
from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_AsDouble

import numpy as np

cdef extern from "quickscorer/importers/parse_buf.h":
    void pb_c_numeric_init()

cdef extern from "quickscorer/inputs/row_parse.h":
    ctypedef struct rp_result:
        int64_t rows
        int64_t pos
        int64_t lines
        int64_t skipped
        int err
        int64_t err_field
        int64_t err_start
        int64_t err_end
    rp_result rp_libsvm(const char* buf, int64_t pos, int64_t end, double* X,
                        int64_t n_features, int64_t cap, double fill, double* labels,
                        int64_t* qids, int skip_bad, int64_t* skipped_at,
                        int64_t skipped_room) nogil
    rp_result rp_csv(const char* buf, int64_t pos, int64_t end, char sep,
                     const int32_t* target, int64_t n_cols, double* X, int64_t n_features,
                     int64_t cap, double* labels, int64_t* keep, int64_t n_keep,
                     int skip_bad, int64_t* skipped_at, int64_t skipped_room) nogil

cdef extern from "Python.h":
    char* PyOS_double_to_string(double val, char format_code, int precision, int flags,
                                int* ptype) except NULL

pb_c_numeric_init()

#: what each error code of row_parse.h means, for the message that names the line
ERRORS = {
    1: "not a number",
    2: "not an index:value pair",
    3: "feature index outside the model's features",
    4: "a different number of fields",
    5: "a quoted field not closed on its line",
    6: "qid: without an integer",
}


def _result(rp_result r):
    return (r.rows, r.pos, r.lines, r.skipped, r.err, r.err_field, r.err_start, r.err_end)


def parse_libsvm(const unsigned char[::1] buf, Py_ssize_t pos, double[:, ::1] X,
                 Py_ssize_t row0, double fill, double[::1] labels, int64_t[::1] qids,
                 bint skip_bad, int64_t[::1] skipped_at):
    """Parse lines of ``buf`` from offset ``pos`` into ``X[row0:]`` (labels and qids alike,
    qid -1 where a line has none). Returns (rows, pos, lines, skipped, err, err_field,
    err_start, err_end): rows written, the offset of the first line not read, lines read,
    bad lines skipped (their line numbers in ``skipped_at`` while it has room), and, where
    ``err`` is not 0, the error of the line at ``pos`` and its token's offsets."""
    cdef rp_result r
    cdef int64_t cap = X.shape[0] - row0
    cdef int64_t nf = X.shape[1]
    cdef int64_t end = buf.shape[0]
    if buf.shape[0] == 0 or buf[end - 1] != b'\n':
        raise ValueError("the block must end with a newline")
    if labels.shape[0] < X.shape[0] or qids.shape[0] < X.shape[0]:
        raise ValueError("labels and qids need a place for every row of X")
    if pos >= end or cap <= 0:
        return (0, pos, 0, 0, 0, 0, 0, 0)
    cdef const char* p = <const char*>&buf[0]
    cdef double dummy
    cdef double* xp = &X[row0, 0] if nf > 0 else &dummy
    with nogil:
        r = rp_libsvm(p, pos, end, xp, nf, cap, fill, &labels[row0], &qids[row0],
                      skip_bad, &skipped_at[0] if skipped_at.shape[0] else NULL,
                      skipped_at.shape[0])
    return _result(r)


def parse_csv(const unsigned char[::1] buf, Py_ssize_t pos, str sep, int32_t[::1] target,
              double[:, ::1] X, Py_ssize_t row0, double[::1] labels, int64_t[:, :, ::1] keep,
              bint skip_bad, int64_t[::1] skipped_at):
    """Parse CSV/TSV lines of ``buf`` from offset ``pos`` into ``X[row0:]``; ``target`` maps
    each column (see row_parse.h's rp_csv); kept columns' field offsets go to
    ``keep[row, k, 0:2]``. Returns as :func:`parse_libsvm`."""
    cdef rp_result r
    cdef int64_t cap = X.shape[0] - row0
    cdef int64_t end = buf.shape[0]
    cdef int64_t nf = X.shape[1]
    cdef int64_t n_keep = keep.shape[1]
    cdef char c = ord(sep)
    if buf.shape[0] == 0 or buf[end - 1] != b'\n':
        raise ValueError("the block must end with a newline")
    if labels.shape[0] < X.shape[0] or keep.shape[0] < X.shape[0]:
        raise ValueError("labels and kept columns need a place for every row of X")
    if pos >= end or cap <= 0:
        return (0, pos, 0, 0, 0, 0, 0, 0)
    for k in range(target.shape[0]):
        if target[k] >= nf or target[k] < -3 - n_keep + 1:
            raise ValueError(f"column {k}'s target {target[k]} is out of range")
    cdef const char* p = <const char*>&buf[0]
    cdef double dummy
    cdef int64_t kdummy
    cdef double* xp = &X[row0, 0] if nf > 0 else &dummy
    cdef int64_t* kp = &keep[row0, 0, 0] if n_keep > 0 else &kdummy
    with nogil:
        r = rp_csv(p, pos, end, c, &target[0], target.shape[0], xp, nf, cap, &labels[row0],
                   kp, n_keep, skip_bad, &skipped_at[0] if skipped_at.shape[0] else NULL,
                   skipped_at.shape[0])
    return _result(r)


cdef inline Py_ssize_t _put_int(char* out, long long v):
    cdef char tmp[24]
    cdef Py_ssize_t n = 0, i
    cdef unsigned long long u = <unsigned long long>(-v) if v < 0 else <unsigned long long>v
    while True:
        tmp[n] = <char>(48 + u % 10)
        n += 1
        u //= 10
        if u == 0:
            break
    i = 0
    if v < 0:
        out[0] = b'-'
        i = 1
    while n > 0:
        n -= 1
        out[i] = tmp[n]
        i += 1
    return i


def format_rows(list columns, str sep) -> bytes:
    """Lines of text, one per row: the columns' values joined by ``sep``. A column is a 1-D
    numpy array: float64/float32 (written as Python's ``repr`` writes a float: the shortest
    text that reads back to the same double), int32/int64, or fixed-width bytes (``S``,
    written as they are, trailing NULs dropped)."""
    cdef Py_ssize_t n_cols = len(columns)
    if n_cols == 0:
        return b""
    cdef Py_ssize_t n = len(columns[0])
    cdef Py_ssize_t width = 0, k, i, w
    kinds = []
    arrays = []
    for col in columns:
        a = np.ascontiguousarray(col)
        if a.ndim != 1 or a.shape[0] != n:
            raise ValueError("every column must be 1-D and of the same length")
        if a.dtype == np.float32:
            a = a.astype(np.float64)
        if a.dtype == np.float64:
            kinds.append(0); width += 32
        elif a.dtype.kind in "iu" and a.dtype.itemsize <= 8 and a.dtype != np.uint64:
            a = a.astype(np.int64, copy=False)
            kinds.append(1); width += 21
        elif a.dtype.kind == "S":
            kinds.append(2); width += a.dtype.itemsize
        else:
            raise TypeError(f"cannot write a column of dtype {a.dtype} as text")
        arrays.append(a)
    width += n_cols                                  # separators and the newline
    cdef bytes out = PyBytes_FromStringAndSize(NULL, n * width)
    cdef char* o = PyBytes_AS_STRING(out)
    cdef Py_ssize_t at = 0
    cdef char csep = ord(sep)
    cdef char* text
    cdef int kind
    cdef const char* base
    cdef Py_ssize_t itemsize
    cdef size_t[::1] data = np.empty(n_cols, np.uintp)
    cdef int[::1] kind_of = np.empty(n_cols, np.intc)
    cdef Py_ssize_t[::1] size_of = np.empty(n_cols, np.intp)
    for k in range(n_cols):
        data[k] = <size_t>arrays[k].ctypes.data
        kind_of[k] = kinds[k]
        size_of[k] = arrays[k].dtype.itemsize
    for i in range(n):
        for k in range(n_cols):
            kind = kind_of[k]
            if kind == 0:
                text = PyOS_double_to_string((<const double*>data[k])[i], b'r', 0, 0, NULL)
                w = 0
                while text[w] != 0:
                    o[at + w] = text[w]
                    w += 1
                PyMem_Free(text)
                at += w
            elif kind == 1:
                at += _put_int(o + at, (<const long long*>data[k])[i])
            else:
                itemsize = size_of[k]
                base = <const char*>data[k] + i * itemsize
                w = itemsize
                while w > 0 and base[w - 1] == 0:
                    w -= 1
                memcpy(o + at, base, w)
                at += w
            o[at] = csep if k + 1 < n_cols else b'\n'
            at += 1
    return out[:at]


def fill_columns(list columns, const int64_t[::1] feature_of, double[:, ::1] X):
    """``X[:, feature_of[k]] = columns[k]`` for float64 columns of X's length, a block of rows
    at a time so that both sides stay in cache (a column-major table into row-major rows)."""
    cdef Py_ssize_t n = X.shape[0], m = len(columns), k, r, r0, r1, f
    cdef Py_ssize_t nf = X.shape[1]
    if feature_of.shape[0] != m:
        raise ValueError("one feature number per column")
    cdef size_t[::1] src = np.empty(max(m, 1), np.uintp)
    arrays = []
    for k in range(m):
        a = columns[k]
        if a.dtype != np.float64 or a.ndim != 1 or a.shape[0] != n or not a.flags.c_contiguous:
            raise ValueError("columns must be C-contiguous float64 arrays of X's length")
        if not 0 <= feature_of[k] < nf:
            raise ValueError(f"feature {feature_of[k]} is outside X's {nf} columns")
        arrays.append(a)
        src[k] = <size_t>a.ctypes.data
    cdef double* out = &X[0, 0] if n > 0 and nf > 0 else NULL
    if out == NULL:
        return
    with nogil:
        r0 = 0
        while r0 < n:
            r1 = r0 + 64 if r0 + 64 < n else n
            for k in range(m):
                f = feature_of[k]
                for r in range(r0, r1):
                    out[r * nf + f] = (<const double*>src[k])[r]
            r0 = r1


cdef extern from "Python.h":
    ctypedef struct PyObject
    PyObject* PyList_GET_ITEM(object, Py_ssize_t) noexcept
    bint PyFloat_CheckExact(PyObject*) noexcept
    double PyFloat_AS_DOUBLE_P "PyFloat_AS_DOUBLE"(PyObject*) noexcept


@cython.boundscheck(False)
@cython.wraparound(False)
def floats_from_list(list values, double[::1] out):
    """Write the numbers of a flat list (floats, ints, and None for NaN, as a V2 request's
    JSON or MLServer's unpacked binary tensor holds them) into ``out``, several times faster
    than ``np.array(values, float)``, which asks every item whether it is a sequence.
    Returns -1 when every item was a number and none NaN, -2 when every item was a number
    or None and some NaN (so that a caller checks for NaN only then), or the index of the
    first item that is none of these (a nested list, a string, an int past 2**53); ``out``
    must have ``len(values)`` places."""
    cdef Py_ssize_t n = len(values), i
    cdef PyObject* p
    cdef object v
    cdef double d
    cdef bint nan = False
    if out.shape[0] != n:
        raise ValueError(f"out has {out.shape[0]} places for {n} values")
    for i in range(n):
        p = PyList_GET_ITEM(values, i)          # borrowed: the list holds it
        if PyFloat_CheckExact(p):
            d = PyFloat_AS_DOUBLE_P(p)
            out[i] = d
            nan |= d != d
            continue
        v = <object>p
        if v is None:
            out[i] = NAN
            nan = True
        elif isinstance(v, (str, bytes, list, tuple, dict)):
            return i
        else:
            try:
                d = PyFloat_AsDouble(v)           # ints, bools, NumPy scalars
            except (TypeError, ValueError, OverflowError):
                return i
            if fabs(d) > 9007199254740992.0 and isinstance(v, int):
                return i      # past 2**53: rounded twice on the way to float32 otherwise
            out[i] = d
            nan |= d != d
            if len(values) != n:  # an item's __float__ changed the list: stop reading it
                raise ValueError("the list changed while it was read")
    return -2 if nan else -1
