# cython: language_level=3
"""The row loops and argument checks every exit-leaf kernel shares (declared in _kernel.pxd).

A kernel module (``_traversal``, ``_qs``, ``_arithmetic``) only builds a :class:`Layout`
whose ``exits`` function finds the exit leaf of every tree for one converted row and passes
each to ``emit``. The loops here convert each row (``load_row``), set its scores to the base
scores and call it; ``emit`` either stores the leaves or adds the leaf values in tree order in
the source library's precision (``scores_add``): so every kernel sums exactly like the
reference walk. Rows are split over OpenMP threads with the GIL released;
each thread has its own row of ``rowbuf`` and ``scratch``.
"""
import numpy as np

cimport numpy as cnp
from cython.parallel cimport prange, parallel, threadid
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

from libc.stdlib cimport free, malloc

from ._forest cimport (FAMILY_XGBOOST, NODE_CATEGORICAL, Forest, ForestView, floating,
                       load_row, load_row_ptr, scores_init)

cnp.import_array()

cdef uint64_t _EMPTY = 0


cdef class Layout:
    """Base class of the kernels' layouts: see _kernel.pxd."""

    pass


cdef const void* array_data(object arr, object dtype, str what, str name) except NULL:
    """The data of a contiguous 1-D array of dtype (a valid pointer even when it is empty)."""
    if (not isinstance(arr, np.ndarray) or arr.dtype != dtype or arr.ndim != 1
            or not arr.flags.c_contiguous):
        got = (f"{arr.dtype} {arr.shape}" if isinstance(arr, np.ndarray)
               else type(arr).__name__)
        raise ValueError(f"{what} layout field {name!r}: expected a contiguous 1-D "
                         f"{np.dtype(dtype)} array, got {got}")
    if arr.shape[0] == 0:
        return <const void*>&_EMPTY
    return <const void*>cnp.PyArray_DATA(arr)


cdef int set_nodes(NodeView* v, dict a, str what, bint cat_optional=False) except -1:
    """Point v at a layout's node table. With ``cat_optional``, a model without categorical
    nodes may give ``cat_offset`` and ``cat_nwords`` empty (16 bytes a node saved): its
    layout must then read them only at categorical nodes, which node_goes_left does not."""
    v.feature = <const int32_t*>array_data(a["feature"], np.int32, what, "feature")
    v.threshold = <const double*>array_data(a["threshold"], np.float64, what, "threshold")
    v.flags = <const uint8_t*>array_data(a["flags"], np.uint8, what, "flags")
    v.cat_offset = <const int64_t*>array_data(a["cat_offset"], np.int64, what, "cat_offset")
    v.cat_nwords = <const int64_t*>array_data(a["cat_nwords"], np.int64, what, "cat_nwords")
    v.cat_words = <const uint32_t*>array_data(a["cat_words"], np.uint32, what, "cat_words")
    v.node_offset = <const int64_t*>array_data(a["node_offset"], np.int64, what, "node_offset")
    n = a["feature"].shape[0]
    no_cats = (cat_optional and a["cat_offset"].shape[0] == 0
               and a["cat_nwords"].shape[0] == 0)
    if no_cats and n and (np.asarray(a["flags"]) & NODE_CATEGORICAL).any():
        raise ValueError(f"{what} layout: categorical nodes without their category tables")
    for name in ("threshold", "flags", "cat_offset", "cat_nwords"):
        if a[name].shape[0] != n and not (no_cats and name.startswith("cat_")):
            raise ValueError(f"{what} layout field {name!r} has {a[name].shape[0]} entries, "
                             f"expected {n} (one per node)")
    # (a layout may pad its arrays to one entry when no tree has a node)
    if a["node_offset"].shape[0] < 1 or int(a["node_offset"][a["node_offset"].shape[0] - 1]) > n:
        raise ValueError(f"{what} layout: node_offset names more nodes than there are")
    return 0


cdef int check_call(Forest forest, Py_ssize_t n_cols, int64_t n_trees, int64_t n_features,
                    int n_threads, const double[:, ::1] rowbuf, Py_ssize_t row_width,
                    const uint64_t[:, ::1] scratch, Py_ssize_t scratch_width,
                    str what) except -1:
    """The checks of every kernel call: threads, input width, layout against forest, scratch."""
    if n_threads < 1:
        raise ValueError(f"n_threads must be >= 1, got {n_threads}")
    if n_cols != forest.view.n_features:
        raise ValueError(f"input has {n_cols} features, the model expects "
                         f"{forest.view.n_features}")
    if n_features != forest.view.n_features:
        raise ValueError(f"the {what} layout and the forest disagree on the features")
    if n_trees != forest.view.n_trees:
        raise ValueError(f"the {what} layout and the forest disagree on the tree count")
    if rowbuf.shape[0] < n_threads or rowbuf.shape[1] < row_width:
        raise ValueError(f"rowbuf must be at least ({n_threads}, {row_width})")
    if scratch.shape[0] < n_threads or scratch.shape[1] < scratch_width:
        raise ValueError(f"scratch must be at least ({n_threads}, {scratch_width})")
    return 0


cdef int check_scores(Forest forest, Py_ssize_t n_rows, const double[:, ::1] out64,
                      const float[:, ::1] out32) except -1:
    """Scores go to out32 for float32 (XGBoost) forests, to out64 otherwise."""
    cdef Py_ssize_t k = forest.view.n_outputs
    if forest.dtype == np.float32:
        if out32.shape[0] != n_rows or out32.shape[1] != k:
            raise ValueError(f"out32 must be ({n_rows}, {k})")
        if out64.shape[0] != 0:
            raise ValueError("out64 must be empty for a float32 forest")
    else:
        if out64.shape[0] != n_rows or out64.shape[1] != k:
            raise ValueError(f"out64 must be ({n_rows}, {k})")
        if out32.shape[0] != 0:
            raise ValueError("out32 must be empty for a float64 forest")
    return 0


cdef int check_leaves(Forest forest, Py_ssize_t n_rows, const int32_t[:, ::1] out) except -1:
    if out.shape[0] != n_rows or out.shape[1] != forest.view.n_trees:
        raise ValueError(f"out must be ({n_rows}, {forest.view.n_trees})")
    return 0


cdef void _run_rows(Forest forest, Layout lay, const floating[:, :] X, double[:, ::1] out64,
                    float[:, ::1] out32, int32_t[:, ::1] leaves, double[:, ::1] rowbuf,
                    uint64_t[:, ::1] scratch, int n_threads) noexcept:
    """Every row through lay.exits: its exit leaves into `leaves` when that is not empty, else
    its scores into out64 / out32."""
    cdef const ForestView* f = &forest.view
    cdef const void* ctx = lay.ctx
    cdef exits_fn exits = lay.exits
    cdef bint want_leaves = leaves.shape[0] != 0
    cdef Py_ssize_t i
    cdef double* row
    cdef double* o64
    cdef float* o32
    cdef uint64_t* s
    with nogil, parallel(num_threads=n_threads):
        row = &rowbuf[threadid(), 0]
        s = &scratch[threadid(), 0]
        for i in prange(X.shape[0], schedule="dynamic", chunksize=16):
            load_row(f, X, i, row)
            if want_leaves:
                exits(ctx, f, row, s, &leaves[i, 0], NULL, NULL)
            else:
                # assigned in the loop body: each thread's own (not through their addresses)
                o64 = &out64[i, 0] if out64.shape[0] else NULL
                o32 = &out32[i, 0] if out32.shape[0] else NULL
                scores_init(f, o64, o32)
                exits(ctx, f, row, s, NULL, o64, o32)


cdef int _check_rows(Forest forest, Layout lay, Py_ssize_t n_cols, double[:, ::1] rowbuf,
                     uint64_t[:, ::1] scratch, int n_threads) except -1:
    if lay.exits == NULL:
        raise ValueError(f"{type(lay).__name__} has no per-row exit function")
    return check_call(forest, n_cols, lay.n_trees, lay.n_features, n_threads, rowbuf,
                      forest.view.n_features, scratch, lay.scratch_words, type(lay).__name__)


def predict_raw(Forest forest, Layout lay, const floating[:, :] X, double[:, ::1] out64,
                float[:, ::1] out32, double[:, ::1] rowbuf, uint64_t[:, ::1] scratch,
                int n_threads):
    """Raw scores into out64 (float64 forests) or out32 (float32), the other one empty.

    rowbuf: (n_threads, n_features) float64; scratch: (n_threads, lay.scratch_words).
    """
    _check_rows(forest, lay, X.shape[1], rowbuf, scratch, n_threads)
    check_scores(forest, X.shape[0], out64, out32)
    cdef int32_t[:, ::1] no_leaves = np.empty((0, 0), np.int32)
    _run_rows(forest, lay, X, out64, out32, no_leaves, rowbuf, scratch, n_threads)


def predict_leaf(Forest forest, Layout lay, const floating[:, :] X, int32_t[:, ::1] out,
                 double[:, ::1] rowbuf, uint64_t[:, ::1] scratch, int n_threads):
    """In-order exit leaf of every tree for every row, into out (n_rows, n_trees); buffers as
    for predict_raw."""
    _check_rows(forest, lay, X.shape[1], rowbuf, scratch, n_threads)
    check_leaves(forest, X.shape[0], out)
    cdef double[:, ::1] no64 = np.empty((0, 0))
    cdef float[:, ::1] no32 = np.empty((0, 0), np.float32)
    if X.shape[0]:
        _run_rows(forest, lay, X, no64, no32, out, rowbuf, scratch, n_threads)


cdef object small_call(Forest forest, object X, int64_t n_trees, int64_t n_features,
                       bint squeeze, SmallCall* c):
    """The rows and the new scores array of a low-latency call, checked through numpy's C
    API (no typed memoryviews: acquiring one costs more than scoring a row of a small model).

    ``X`` must be a C-contiguous, aligned float32 or float64 array in the machine's byte
    order, 2-D with the model's features per row or one 1-D row, and the layout's ``n_trees`` and ``n_features`` the forest's. Returns
    the scores array, ``(n,)`` when ``squeeze`` and the model has one output, else ``(n, k)``
    (float32 for XGBoost forests), with ``c`` filled in; or None, c untouched, for anything
    else (the caller then takes the general path, which says what is wrong)."""
    cdef const ForestView* f = &forest.view
    if not cnp.PyArray_Check(X) or n_features != f.n_features or n_trees != f.n_trees:
        return None
    cdef cnp.ndarray a = <cnp.ndarray>X
    cdef int nd = cnp.PyArray_NDIM(a), typenum = cnp.PyArray_TYPE(a)
    # aligned and in the machine's byte order too: a big-endian float64 array has the same
    # type number as a native one
    if ((nd != 1 and nd != 2) or not cnp.PyArray_IS_C_CONTIGUOUS(a)
            or not cnp.PyArray_ISBEHAVED_RO(a)
            or (typenum != cnp.NPY_FLOAT64 and typenum != cnp.NPY_FLOAT32)):
        return None
    cdef Py_ssize_t n = 1 if nd == 1 else cnp.PyArray_DIM(a, 0)
    cdef Py_ssize_t cols = cnp.PyArray_DIM(a, nd - 1)
    if cols != f.n_features:
        return None
    cdef cnp.npy_intp dims[2]
    dims[0] = n
    dims[1] = f.n_outputs
    cdef bint xgb = f.family == FAMILY_XGBOOST
    out = cnp.PyArray_EMPTY(1 if (squeeze and f.n_outputs == 1) else 2, dims,
                            cnp.NPY_FLOAT32 if xgb else cnp.NPY_FLOAT64, 0)
    cdef char* o = <char*>cnp.PyArray_DATA(<cnp.ndarray>out)
    c.x = <const char*>cnp.PyArray_DATA(a)
    c.n = n
    c.is32 = typenum == cnp.NPY_FLOAT32
    c.row_bytes = cols * (4 if c.is32 else 8)
    c.o64 = NULL if xgb else <double*>o
    c.o32 = <float*>o if xgb else NULL
    return out


cdef void* scratch_data(object buf, Py_ssize_t nbytes) except NULL:
    """The data of a C-contiguous scratch array of at least nbytes bytes (ValueError else)."""
    if (not cnp.PyArray_Check(buf) or not cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>buf)
            or cnp.PyArray_NBYTES(<cnp.ndarray>buf) < nbytes
            or not cnp.PyArray_ISWRITEABLE(<cnp.ndarray>buf)):
        raise ValueError(f"scratch must be a writeable C-contiguous array of at least "
                         f"{nbytes} bytes")
    return cnp.PyArray_DATA(<cnp.ndarray>buf)


def predict_small(Forest forest, Layout lay, object X, bint squeeze):
    """Raw scores of the rows of ``X`` on one thread through ``lay.exits`` (two rows at a
    time through ``lay.exits2`` where the layout has it), the low-latency path of a call of
    a few rows (rows and scores as ``small_call`` takes them; None for
    anything else, and for layouts without a per-row exit function). The row and scratch
    buffers are the call's own; the GIL is released around the rows."""
    if lay.exits == NULL:
        return None
    cdef SmallCall c
    out = small_call(forest, X, lay.n_trees, lay.n_features, squeeze, &c)
    if out is None:
        return None
    cdef const ForestView* f = &forest.view
    cdef exits2_fn exits2 = lay.exits2 if c.n >= 2 else NULL
    # one row and its scratch, or two rows and twice the scratch
    cdef Py_ssize_t rows = 2 if exits2 != NULL else 1, i = 0
    cdef Py_ssize_t words = rows * (f.n_features + lay.scratch_words) + 1
    cdef double* buf = <double*>malloc(words * sizeof(double))
    if buf == NULL:
        raise MemoryError()
    cdef double* buf_b = buf + f.n_features
    cdef uint64_t* s = <uint64_t*>(buf + rows * f.n_features)
    cdef double* o64
    cdef float* o32
    cdef double* ob64
    cdef float* ob32
    cdef exits_fn exits = lay.exits
    cdef const void* ctx = lay.ctx
    cdef int64_t K = f.n_outputs
    with nogil:
        if exits2 != NULL:
            while i + 1 < c.n:
                load_row_ptr(f, c.x + i * c.row_bytes, c.is32, buf)
                load_row_ptr(f, c.x + (i + 1) * c.row_bytes, c.is32, buf_b)
                o64 = c.o64 + i * K if c.o64 != NULL else NULL
                o32 = c.o32 + i * K if c.o32 != NULL else NULL
                ob64 = o64 + K if o64 != NULL else NULL
                ob32 = o32 + K if o32 != NULL else NULL
                scores_init(f, o64, o32)
                scores_init(f, ob64, ob32)
                exits2(ctx, f, buf, buf_b, s, o64, o32, ob64, ob32)
                i += 2
        while i < c.n:
            load_row_ptr(f, c.x + i * c.row_bytes, c.is32, buf)
            o64 = c.o64 + i * K if c.o64 != NULL else NULL
            o32 = c.o32 + i * K if c.o32 != NULL else NULL
            scores_init(f, o64, o32)
            exits(ctx, f, buf, s, NULL, o64, o32)
            i += 1
    free(buf)
    return out
