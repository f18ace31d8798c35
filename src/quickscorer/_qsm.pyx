# cython: language_level=3
"""The container of a prepared model file (``src/quickscorer/qsm.h``) for
``quickscorer/model_file.py``: its checksum and its check, run on a buffer (a file's mapping)
with the GIL released."""
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t

cimport numpy as cnp
from cpython.ref cimport Py_INCREF

import numpy as np

from .errors import ModelFileError

cnp.import_array()

cdef extern from "numpy/arrayobject.h":
    # steals a reference to descr
    object PyArray_NewFromDescr(void* subtype, cnp.dtype descr, int nd, cnp.npy_intp* dims,
                                cnp.npy_intp* strides, void* data, int flags, object obj)
    void* PyArray_Type_ptr "(&PyArray_Type)"

cdef extern from "quickscorer/qsm.h":
    uint32_t QSM_VERSION
    uint32_t QSM_HEADER_BYTES
    uint32_t QSM_ENTRY_BYTES
    uint32_t QSM_ALIGN
    const char* QSM_MAGIC
    ctypedef struct qsm_section:
        uint64_t offset
        uint64_t nbytes
        uint64_t checksum
        uint32_t kind
    uint64_t qsm_checksum_of(uint32_t version, const void* data, size_t n) nogil
    const uint64_t QSM2_KEY[32]
    int qsm_check(const uint8_t* base, uint64_t size, int verify, uint32_t* n_sections,
                  int64_t* bad_section, char* err, size_t cap) nogil
    qsm_section qsm_section_at(const uint8_t* base, uint64_t size, uint32_t s) nogil

VERSION = QSM_VERSION
HEADER_BYTES = QSM_HEADER_BYTES
ENTRY_BYTES = QSM_ENTRY_BYTES
ALIGN = QSM_ALIGN
MAGIC = QSM_MAGIC[:8]
#: format version 2's key words (qsm.h QSM2_KEY): 24 for the stripes, 8 for the blocks' scramble
CHECKSUM2_KEY = tuple([QSM2_KEY[i] for i in range(32)])


def checksum(const uint8_t[::1] data, uint32_t version=QSM_VERSION):
    """The container's 64-bit checksum of ``data`` in format ``version`` (qsm.h
    ``qsm_checksum_of``: 2, the written one, or 1)."""
    cdef uint64_t h
    cdef size_t n = data.shape[0]
    cdef const uint8_t* p = &data[0] if n else NULL
    if version < 1 or version > QSM_VERSION:
        raise ValueError(f"no checksum of format version {version}")
    with nogil:
        h = qsm_checksum_of(version, p, n)
    return h


def check(const uint8_t[::1] data, bint verify=True):
    """The sections ``(offset, nbytes, kind)`` of the container in ``data``, after its header,
    table, places and (with ``verify``) checksums are checked; ModelFileError naming the
    problem (its ``section`` the index at fault, or -1) otherwise."""
    cdef char err[512]
    cdef uint32_t n = 0, s
    cdef int64_t bad = -1
    cdef int rc
    cdef uint64_t size = data.shape[0]
    cdef const uint8_t* base = &data[0] if size else <const uint8_t*>""
    err[0] = 0
    with nogil:
        rc = qsm_check(base, size, verify, &n, &bad, err, sizeof(err))
    if rc != 0:
        raise ModelFileError(err.decode("utf-8", "replace"), section=bad, code=rc)
    cdef qsm_section sec
    out = []
    for s in range(n):
        sec = qsm_section_at(base, size, s)
        out.append((sec.offset, sec.nbytes, sec.kind))
    return out


def views(cnp.ndarray data, list sections, list specs, dict dtypes):
    """Each array section's read-only view of ``data`` (the file's bytes, ``check``'s
    ``sections``), as its description's ``specs`` ((name, dtype, shape) lists) and
    ``dtypes`` (each written dtype's name to its dtype, on a little-endian machine) give it,
    the views' base ``data``; an empty section's a read-only zeros array. None where any
    spec is not one of these or a section's size is not its shape's, for the caller's own
    loop to name it: the one loop of an open that runs once per array, in C."""
    cdef Py_ssize_t s, n = len(sections), d, nd
    cdef cnp.npy_intp dims[8]
    cdef int64_t count, nbytes, off
    cdef object spec, shape, dim, entry
    cdef cnp.dtype dtype
    cdef cnp.ndarray a
    cdef char* base = <char*>cnp.PyArray_DATA(data)
    if len(specs) != n - 1 or not cnp.PyArray_IS_C_CONTIGUOUS(data) \
            or data.dtype.itemsize != 1:
        return None
    out = [None]
    for s in range(1, n):
        spec = specs[s - 1]
        if type(spec) is not list or len(spec) != 3 or type(spec[0]) is not str:
            return None
        shape = spec[2]
        dtype = dtypes.get(spec[1]) if type(spec[1]) is str else None
        if dtype is None or type(shape) is not list or not 1 <= len(shape) <= 8:
            return None
        nd = len(shape)
        count = 1
        for d in range(nd):
            dim = shape[d]
            if type(dim) is not int or dim < 0 or dim >= 2 ** 40:
                return None
            dims[d] = <cnp.npy_intp>dim
            count *= dims[d]
            if count >= 2 ** 40:
                return None
        entry = sections[s]
        off = entry[0]
        nbytes = entry[1]
        if count * dtype.itemsize != nbytes:
            return None
        if count == 0:
            a = np.zeros(shape, dtype)
            a.setflags(write=False)
        else:
            Py_INCREF(dtype)            # the reference NewFromDescr takes
            # flags 0: read-only (numpy sets the contiguity and alignment flags itself)
            a = PyArray_NewFromDescr(PyArray_Type_ptr, dtype, <int>nd, dims, NULL,
                                     <void*>(base + off), 0, None)
            cnp.set_array_base(a, data)
        out.append(a)
    return out
