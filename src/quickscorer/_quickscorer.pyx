# cython: language_level=3
"""QuickScorer (Lucchese et al., SIGIR 2015, Algorithm 1): exit leaves by feature-wise scans.

Per row: every tree's leaf bitvector starts all ones; for each feature, the sorted thresholds
are walked while ``x > threshold`` (those nodes are false) and their masks ANDed in; values
that are not decided by comparison (NaN, LightGBM's zero-as-missing, categories) AND
precomputed mask lists instead. A tree's exit leaf is then its lowest set bit. The layout is
built by ``quickscorer.qs_layout.quickscorer_arrays``, whose docstring describes it.
"""
import numpy as np

cimport numpy as cnp
from cython.parallel cimport prange, parallel, threadid
from libc.math cimport isnan, INFINITY
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memset
from libc.stdlib cimport malloc, free

from ._forest cimport (Forest, ForestView, floating, load_row, category_of, scores_init,
                       scores_add)

cnp.import_array()

cdef extern from *:
    """
    #if defined(_MSC_VER)
    #include <intrin.h>
    static inline int qs_ctz64(unsigned long long x) {
        unsigned long i; _BitScanForward64(&i, x); return (int)i;
    }
    #else
    static inline int qs_ctz64(unsigned long long x) { return __builtin_ctzll(x); }
    #endif
    """
    int qs_ctz64(uint64_t x) noexcept nogil

cdef extern from "quickscorer/vqs_simd.h":
    enum:
        QS_LANES
        QS_ISA_SCALAR
        QS_ISA_AVX2
        QS_ISA_AVX512
    int qs_isa_available(int isa) noexcept nogil
    int qs_best_isa() noexcept nogil
    int64_t qs_scan_lanes(int isa, const double* thr, const uint32_t* word,
                          const uint64_t* mask, int64_t k, const double* x,
                          uint64_t* v) noexcept nogil

cdef enum:
    N_SEGMENT_KINDS = 3
    SEGMENT_NONE = 0           # NaN compared as 0.0
    SEGMENT_ZERO = 1           # 0.0 and NaN take the default side
    SEGMENT_NAN = 2            # NaN takes the default side
    CATEGORY_MODE_NONE = 0
    CATEGORY_MODE_TABLE = 1
    CATEGORY_MODE_DIRECT = 2


cdef struct QSView:
    int64_t n_features
    int64_t n_trees
    int64_t n_used
    const int32_t* used_features      # [n_used] features some node splits on
    int64_t total_words                # words of one row's bitvectors, all trees
    const int64_t* tree_word_offsets  # [n_trees + 1]
    const double* thresholds          # [n_entries] sorted per segment, +inf sentinels
    const uint32_t* words             # [n_entries] absolute word of each mask entry
    const uint64_t* masks             # [n_entries]
    const int64_t* segment_offsets    # [3 n_features + 1]
    const int64_t* list_offsets       # [n_lists + 1]
    const uint32_t* list_words
    const uint64_t* list_masks
    const uint8_t* category_mode      # [n_features] CATEGORY_MODE_*
    const int64_t* category_key_offsets   # [n_features + 1]
    const int64_t* category_keys
    int64_t first_key_list            # 3 n_features
    const int64_t* category_node_offsets  # [n_features + 1]
    const int64_t* category_node_bits_offset
    const int64_t* category_node_nwords
    const uint32_t* category_bits
    int64_t first_node_list           # 3 n_features + n_keys


_FIELDS = {
    "tree_word_offsets": np.int64, "thresholds": np.float64, "words": np.uint32,
    "masks": np.uint64, "segment_offsets": np.int64, "list_offsets": np.int64,
    "list_words": np.uint32, "list_masks": np.uint64, "category_mode": np.uint8,
    "category_key_offsets": np.int64, "category_keys": np.int64,
    "category_node_offsets": np.int64, "category_node_bits_offset": np.int64,
    "category_node_nwords": np.int64, "category_bits": np.uint32, "used_features": np.int32,
}

cdef uint64_t _EMPTY = 0


cdef const void* _data(dict a, str name) except NULL:
    cdef cnp.ndarray arr = <cnp.ndarray?>a[name]
    if arr.dtype != _FIELDS[name] or arr.ndim != 1 or not arr.flags.c_contiguous:
        raise ValueError(f"quickscorer layout field {name!r}: expected a contiguous 1-D "
                         f"{np.dtype(_FIELDS[name])} array, got {arr.dtype} {(<object>arr).shape}")
    if arr.shape[0] == 0:
        return <const void*>&_EMPTY
    return <const void*>cnp.PyArray_DATA(arr)


cdef class QSLayout:
    """The QuickScorer arrays of one model, wrapped for the kernels without copying."""
    cdef QSView view
    cdef object _keep
    cdef readonly int64_t n_features

    def __cinit__(self, dict a, int64_t n_features):
        self._keep = dict(a)
        F = n_features
        n_trees = a["tree_word_offsets"].shape[0] - 1
        n_keys = a["category_keys"].shape[0]
        n_direct = a["category_node_bits_offset"].shape[0]
        checks = {
            "segment_offsets": N_SEGMENT_KINDS * F + 1, "category_mode": F,
            "category_key_offsets": F + 1, "category_node_offsets": F + 1,
            "list_offsets": N_SEGMENT_KINDS * F + n_keys + n_direct + 1,
            "words": a["thresholds"].shape[0], "masks": a["thresholds"].shape[0],
            "list_words": a["list_masks"].shape[0],
            "category_node_nwords": n_direct,
        }
        for name, n in checks.items():
            if a[name].shape[0] != n:
                raise ValueError(f"quickscorer layout field {name!r} has {a[name].shape[0]} "
                                 f"entries, expected {n}")
        if int(a["list_offsets"][a["list_offsets"].shape[0] - 1]) != a["list_words"].shape[0]:
            raise ValueError("quickscorer layout: list_offsets do not cover list_words")
        self.view.n_features = F
        self.view.n_trees = n_trees
        self.view.n_used = a["used_features"].shape[0]
        self.view.used_features = <const int32_t*>_data(a, "used_features")
        self.view.total_words = int(a["tree_word_offsets"][n_trees])
        self.view.tree_word_offsets = <const int64_t*>_data(a, "tree_word_offsets")
        self.view.thresholds = <const double*>_data(a, "thresholds")
        self.view.words = <const uint32_t*>_data(a, "words")
        self.view.masks = <const uint64_t*>_data(a, "masks")
        self.view.segment_offsets = <const int64_t*>_data(a, "segment_offsets")
        self.view.list_offsets = <const int64_t*>_data(a, "list_offsets")
        self.view.list_words = <const uint32_t*>_data(a, "list_words")
        self.view.list_masks = <const uint64_t*>_data(a, "list_masks")
        self.view.category_mode = <const uint8_t*>_data(a, "category_mode")
        self.view.category_key_offsets = <const int64_t*>_data(a, "category_key_offsets")
        self.view.category_keys = <const int64_t*>_data(a, "category_keys")
        self.view.first_key_list = N_SEGMENT_KINDS * F
        self.view.category_node_offsets = <const int64_t*>_data(a, "category_node_offsets")
        self.view.category_node_bits_offset = <const int64_t*>_data(a, "category_node_bits_offset")
        self.view.category_node_nwords = <const int64_t*>_data(a, "category_node_nwords")
        self.view.category_bits = <const uint32_t*>_data(a, "category_bits")
        self.view.first_node_list = N_SEGMENT_KINDS * F + n_keys
        self.n_features = F

    @property
    def total_words(self):
        return self.view.total_words

    def __reduce__(self):
        return (QSLayout, (self._keep, self.n_features))


cdef inline void scan(const QSView* q, int64_t seg, double x, uint64_t* v) noexcept nogil:
    """AND the masks of segment seg's nodes that x makes false (x > threshold)."""
    cdef const double* thr = q.thresholds
    cdef const uint32_t* word = q.words
    cdef const uint64_t* mask = q.masks
    cdef int64_t k = q.segment_offsets[seg]
    while x > thr[k]:  # the +inf sentinel ends every segment
        v[word[k]] &= mask[k]
        k += 1


cdef inline void apply_list(const QSView* q, int64_t j, uint64_t* v,
                            int64_t stride=1) noexcept nogil:
    """AND the masks of list j into v (word w at v[w * stride]: interleaved lanes)."""
    cdef const uint32_t* word = q.list_words
    cdef const uint64_t* mask = q.list_masks
    cdef int64_t k
    for k in range(q.list_offsets[j], q.list_offsets[j + 1]):
        v[word[k] * stride] &= mask[k]


cdef inline void categorical(const QSView* q, int family, int64_t feat, double x,
                             uint64_t* v, int64_t stride=1) noexcept nogil:
    """AND the masks of the categorical nodes on feat that send non-NaN x right."""
    cdef int64_t c = category_of(family, x)
    cdef int64_t lo, hi, m, d, nw
    cdef const uint32_t* bits
    if q.category_mode[feat] == CATEGORY_MODE_TABLE:
        lo = q.category_key_offsets[feat]
        hi = q.category_key_offsets[feat + 1]
        if c >= 0:
            while lo < hi:  # first key >= c
                m = (lo + hi) >> 1
                if q.category_keys[m] < c:
                    lo = m + 1
                else:
                    hi = m
            if lo < q.category_key_offsets[feat + 1] and q.category_keys[lo] == c:
                apply_list(q, q.first_key_list + lo, v, stride)
                return
        apply_list(q, 2 * q.n_features + feat, v, stride)  # no node lists it: all go right
    else:
        for d in range(q.category_node_offsets[feat], q.category_node_offsets[feat + 1]):
            nw = q.category_node_nwords[d]
            bits = q.category_bits + q.category_node_bits_offset[d]
            if c < 0 or (c >> 5) >= nw or not ((bits[c >> 5] >> (c & 31)) & 1):
                apply_list(q, q.first_node_list + d, v, stride)


cdef inline void exit_bits(const QSView* q, int family, const double* row,
                           uint64_t* v) noexcept nogil:
    """Leave in v the bitvectors of all trees: the lowest set bit of each is its exit leaf."""
    cdef int64_t u, feat, seg
    cdef double x
    memset(v, 0xFF, q.total_words * sizeof(uint64_t))
    for u in range(q.n_used):
        feat = q.used_features[u]
        seg = feat * N_SEGMENT_KINDS
        x = row[feat]
        if isnan(x):
            apply_list(q, feat, v)
            scan(q, seg + SEGMENT_NONE, 0.0, v)
            continue
        scan(q, seg + SEGMENT_NONE, x, v)
        scan(q, seg + SEGMENT_NAN, x, v)
        if x == 0.0:
            apply_list(q, q.n_features + feat, v)  # LightGBM zero-as-missing, default right
        else:
            scan(q, seg + SEGMENT_ZERO, x, v)
        if q.category_mode[feat] != CATEGORY_MODE_NONE:
            categorical(q, family, feat, x, v)


cdef inline int64_t exit_leaf(const QSView* q, int64_t t, const uint64_t* v) noexcept nogil:
    cdef int64_t w0 = q.tree_word_offsets[t]
    cdef int64_t w = w0
    while v[w] == 0:  # the exit leaf's bit is never cleared
        w += 1
    return ((w - w0) << 6) + qs_ctz64(v[w])


def _check(Forest forest, QSLayout lay, Py_ssize_t n_rows, Py_ssize_t n_cols,
           double[:, ::1] rowbuf, uint64_t[:, ::1] bitbuf, int n_threads):
    if n_threads < 1:
        raise ValueError(f"n_threads must be >= 1, got {n_threads}")
    if n_cols != forest.view.n_features or lay.view.n_features != forest.view.n_features:
        raise ValueError(f"input has {n_cols} features, the model expects "
                         f"{forest.view.n_features}")
    if lay.view.n_trees != forest.view.n_trees:
        raise ValueError("the quickscorer layout and the forest disagree on the tree count")
    if rowbuf.shape[0] < n_threads or rowbuf.shape[1] < forest.view.n_features:
        raise ValueError(f"rowbuf must be at least ({n_threads}, {forest.view.n_features})")
    if bitbuf.shape[0] < n_threads or bitbuf.shape[1] < lay.view.total_words:
        raise ValueError(f"bitbuf must be at least ({n_threads}, {lay.view.total_words})")


def predict_raw(Forest forest, QSLayout lay, const floating[:, :] X,
                double[:, ::1] out64, float[:, ::1] out32, double[:, ::1] rowbuf,
                uint64_t[:, ::1] bitbuf, int n_threads):
    """Raw scores into out64 (LightGBM) or out32 (XGBoost).

    rowbuf is (n_threads, n_features) float64 and bitbuf (n_threads, total_words) uint64
    scratch space, one row per thread.
    """
    _check(forest, lay, X.shape[0], X.shape[1], rowbuf, bitbuf, n_threads)
    cdef const ForestView* f = &forest.view
    cdef const QSView* q = &lay.view
    cdef Py_ssize_t n_rows = X.shape[0]
    cdef Py_ssize_t k = f.n_outputs
    if forest.dtype == np.float32:
        if out32.shape[0] != n_rows or out32.shape[1] != k:
            raise ValueError(f"out32 must be ({n_rows}, {k})")
    elif out64.shape[0] != n_rows or out64.shape[1] != k:
        raise ValueError(f"out64 must be ({n_rows}, {k})")
    cdef Py_ssize_t i
    cdef int64_t t
    cdef double* row
    cdef uint64_t* v
    cdef double* o64
    cdef float* o32
    with nogil, parallel(num_threads=n_threads):
        row = &rowbuf[threadid(), 0]
        v = &bitbuf[threadid(), 0]
        for i in prange(n_rows, schedule="static"):
            load_row(f, X, i, row)
            exit_bits(q, f.family, row, v)
            o64 = &out64[i, 0] if out64.shape[0] else NULL
            o32 = &out32[i, 0] if out32.shape[0] else NULL
            scores_init(f, o64, o32)
            for t in range(f.n_trees):
                scores_add(f, t, exit_leaf(q, t, v), row, o64, o32)


def predict_leaf(Forest forest, QSLayout lay, const floating[:, :] X, int32_t[:, ::1] out,
                 double[:, ::1] rowbuf, uint64_t[:, ::1] bitbuf, int n_threads):
    """Canonical (in-order) exit leaf of every tree for every row, into out (n_rows, n_trees)."""
    _check(forest, lay, X.shape[0], X.shape[1], rowbuf, bitbuf, n_threads)
    cdef const ForestView* f = &forest.view
    cdef const QSView* q = &lay.view
    cdef Py_ssize_t n_rows = X.shape[0]
    if out.shape[0] != n_rows or out.shape[1] != f.n_trees:
        raise ValueError(f"out must be ({n_rows}, {f.n_trees})")
    cdef Py_ssize_t i
    cdef int64_t t
    cdef double* row
    cdef uint64_t* v
    with nogil, parallel(num_threads=n_threads):
        row = &rowbuf[threadid(), 0]
        v = &bitbuf[threadid(), 0]
        for i in prange(n_rows, schedule="static"):
            load_row(f, X, i, row)
            exit_bits(q, f.family, row, v)
            for t in range(f.n_trees):
                out[i, t] = <int32_t>exit_leaf(q, t, v)


# ---------------------------------------------------------------------------------------------
# V-QuickScorer: QS_LANES documents per scan, bitvectors interleaved per word (vqs_simd.h)

ISA_NAMES = {QS_ISA_SCALAR: "scalar", QS_ISA_AVX2: "avx2", QS_ISA_AVX512: "avx512"}
LANES = QS_LANES


def isa_available(int isa):
    """Whether this CPU runs instruction-set path isa (0 scalar, 1 AVX2, 2 AVX-512)."""
    return bool(qs_isa_available(isa))


def best_isa():
    return qs_best_isa()


cdef inline void exit_bits_lanes(const QSView* q, int family, int isa, const double* rows,
                                 int64_t n_lanes, double* x, uint64_t* v) noexcept nogil:
    """exit_bits for n_lanes converted rows (rows[l * n_features + j]) at once; lanes beyond
    n_lanes hold NaN and are never touched. v: total_words * QS_LANES interleaved words."""
    cdef int64_t u, feat, seg, l
    cdef int64_t F = q.n_features
    cdef double val
    cdef bint any_nan, any_zero
    cdef double xs[QS_LANES]
    memset(v, 0xFF, q.total_words * QS_LANES * sizeof(uint64_t))
    for u in range(q.n_used):
        feat = q.used_features[u]
        seg = feat * N_SEGMENT_KINDS
        any_nan = False
        any_zero = False
        for l in range(QS_LANES):
            val = rows[l * F + feat] if l < n_lanes else 0.0
            if l >= n_lanes:
                x[l] = -INFINITY
                xs[l] = -INFINITY
                continue
            x[l] = val
            if isnan(val):
                any_nan = True
                xs[l] = 0.0             # "None": NaN is compared as 0.0
            else:
                if val == 0.0:
                    any_zero = True
                xs[l] = val
        qs_scan_lanes(isa, q.thresholds, q.words, q.masks, q.segment_offsets[seg + SEGMENT_NONE],
                      xs, v)
        # "NaN" segment: NaN lanes never exceed a threshold; they take the NaN list below
        qs_scan_lanes(isa, q.thresholds, q.words, q.masks, q.segment_offsets[seg + SEGMENT_NAN],
                      x, v)
        if q.segment_offsets[seg + SEGMENT_ZERO] + 1 != q.segment_offsets[seg + SEGMENT_ZERO + 1]:
            if any_nan or any_zero:   # zero and NaN lanes take their lists instead of the scan
                for l in range(n_lanes):
                    xs[l] = -INFINITY if (isnan(x[l]) or x[l] == 0.0) else x[l]
                qs_scan_lanes(isa, q.thresholds, q.words, q.masks,
                              q.segment_offsets[seg + SEGMENT_ZERO], xs, v)
            else:
                qs_scan_lanes(isa, q.thresholds, q.words, q.masks,
                              q.segment_offsets[seg + SEGMENT_ZERO], x, v)
        if any_nan or any_zero:
            for l in range(n_lanes):
                if isnan(x[l]):
                    apply_list(q, feat, v + l, QS_LANES)
                elif x[l] == 0.0:
                    apply_list(q, q.n_features + feat, v + l, QS_LANES)
        if q.category_mode[feat] != CATEGORY_MODE_NONE:
            for l in range(n_lanes):
                if not isnan(x[l]):
                    categorical(q, family, feat, x[l], v + l, QS_LANES)


cdef inline int64_t exit_leaf_lane(const QSView* q, int64_t t, const uint64_t* v,
                                   int64_t l) noexcept nogil:
    cdef int64_t w0 = q.tree_word_offsets[t]
    cdef int64_t w = w0
    while v[w * QS_LANES + l] == 0:
        w += 1
    return ((w - w0) << 6) + qs_ctz64(v[w * QS_LANES + l])


def _check_lanes(Forest forest, QSLayout lay, Py_ssize_t n_cols, double[:, ::1] rowbuf,
                 uint64_t[:, ::1] bitbuf, int n_threads, int isa):
    if n_threads < 1:
        raise ValueError(f"n_threads must be >= 1, got {n_threads}")
    if n_cols != forest.view.n_features or lay.view.n_features != forest.view.n_features:
        raise ValueError(f"input has {n_cols} features, the model expects "
                         f"{forest.view.n_features}")
    if lay.view.n_trees != forest.view.n_trees:
        raise ValueError("the quickscorer layout and the forest disagree on the tree count")
    if rowbuf.shape[0] < n_threads or rowbuf.shape[1] < QS_LANES * (forest.view.n_features + 1):
        raise ValueError("rowbuf must be at least (n_threads, LANES * (n_features + 1))")
    if bitbuf.shape[0] < n_threads or bitbuf.shape[1] < QS_LANES * lay.view.total_words:
        raise ValueError("bitbuf must be at least (n_threads, LANES * total_words)")
    if not qs_isa_available(isa):
        raise ValueError(f"this CPU cannot run instruction set {ISA_NAMES.get(isa, isa)!r}")


def predict_raw_lanes(Forest forest, QSLayout lay, const floating[:, :] X,
                      double[:, ::1] out64, float[:, ::1] out32, double[:, ::1] rowbuf,
                      uint64_t[:, ::1] bitbuf, int n_threads, int isa):
    """Raw scores like predict_raw, QS_LANES rows per scan on instruction set isa.

    rowbuf: (n_threads, LANES * (n_features + 1)) float64; bitbuf: (n_threads, LANES *
    total_words) uint64.
    """
    _check_lanes(forest, lay, X.shape[1], rowbuf, bitbuf, n_threads, isa)
    cdef const ForestView* f = &forest.view
    cdef const QSView* q = &lay.view
    cdef Py_ssize_t n_rows = X.shape[0]
    cdef Py_ssize_t k = f.n_outputs
    if forest.dtype == np.float32:
        if out32.shape[0] != n_rows or out32.shape[1] != k:
            raise ValueError(f"out32 must be ({n_rows}, {k})")
    elif out64.shape[0] != n_rows or out64.shape[1] != k:
        raise ValueError(f"out64 must be ({n_rows}, {k})")
    cdef Py_ssize_t n_blocks = (n_rows + QS_LANES - 1) // QS_LANES
    cdef Py_ssize_t b, i
    cdef int64_t t, l, n_lanes, F = f.n_features
    cdef double* rows
    cdef double* x
    cdef uint64_t* v
    cdef double* o64
    cdef float* o32
    with nogil, parallel(num_threads=n_threads):
        rows = &rowbuf[threadid(), 0]
        x = rows + QS_LANES * F
        v = &bitbuf[threadid(), 0]
        for b in prange(n_blocks, schedule="static"):
            n_lanes = min(QS_LANES, n_rows - b * QS_LANES)
            for l in range(n_lanes):
                load_row(f, X, b * QS_LANES + l, rows + l * F)
            exit_bits_lanes(q, f.family, isa, rows, n_lanes, x, v)
            for l in range(n_lanes):
                i = b * QS_LANES + l
                o64 = &out64[i, 0] if out64.shape[0] else NULL
                o32 = &out32[i, 0] if out32.shape[0] else NULL
                scores_init(f, o64, o32)
                for t in range(f.n_trees):
                    scores_add(f, t, exit_leaf_lane(q, t, v, l), rows + l * F, o64, o32)


def predict_leaf_lanes(Forest forest, QSLayout lay, const floating[:, :] X,
                       int32_t[:, ::1] out, double[:, ::1] rowbuf, uint64_t[:, ::1] bitbuf,
                       int n_threads, int isa):
    """Exit leaves like predict_leaf, QS_LANES rows per scan."""
    _check_lanes(forest, lay, X.shape[1], rowbuf, bitbuf, n_threads, isa)
    cdef const ForestView* f = &forest.view
    cdef const QSView* q = &lay.view
    cdef Py_ssize_t n_rows = X.shape[0]
    if out.shape[0] != n_rows or out.shape[1] != f.n_trees:
        raise ValueError(f"out must be ({n_rows}, {f.n_trees})")
    cdef Py_ssize_t n_blocks = (n_rows + QS_LANES - 1) // QS_LANES
    cdef Py_ssize_t b
    cdef int64_t t, l, n_lanes, F = f.n_features
    cdef double* rows
    cdef double* x
    cdef uint64_t* v
    with nogil, parallel(num_threads=n_threads):
        rows = &rowbuf[threadid(), 0]
        x = rows + QS_LANES * F
        v = &bitbuf[threadid(), 0]
        for b in prange(n_blocks, schedule="static"):
            n_lanes = min(QS_LANES, n_rows - b * QS_LANES)
            for l in range(n_lanes):
                load_row(f, X, b * QS_LANES + l, rows + l * F)
            exit_bits_lanes(q, f.family, isa, rows, n_lanes, x, v)
            for l in range(n_lanes):
                for t in range(f.n_trees):
                    out[b * QS_LANES + l, t] = <int32_t>exit_leaf_lane(q, t, v, l)


cdef class BlockedLayout:
    """Consecutive tree blocks, each with its own QuickScorer layout small enough that a
    document block's bitvectors stay in the L1/L2 cache (block-wise QuickScorer)."""
    cdef QSView* views
    cdef int64_t* starts
    cdef readonly int64_t n_blocks, max_words, n_trees
    cdef object _layouts

    def __cinit__(self, list layouts, starts):
        self._layouts = list(layouts)
        self.n_blocks = len(layouts)
        if self.n_blocks < 1 or len(starts) != self.n_blocks + 1:
            raise ValueError("need one start per block and the end")
        self.views = <QSView*>malloc(self.n_blocks * sizeof(QSView))
        self.starts = <int64_t*>malloc((self.n_blocks + 1) * sizeof(int64_t))
        if self.views == NULL or self.starts == NULL:
            raise MemoryError()
        self.max_words = 1
        cdef QSLayout lay
        for i, lay in enumerate(layouts):
            self.views[i] = lay.view
            self.max_words = max(self.max_words, lay.view.total_words)
        for i in range(self.n_blocks + 1):
            self.starts[i] = int(starts[i])
        for i in range(self.n_blocks):
            if self.starts[i + 1] - self.starts[i] != self.views[i].n_trees:
                raise ValueError(f"tree block {i} does not match its layout")
        self.n_trees = self.starts[self.n_blocks]

    def __dealloc__(self):
        free(self.views)
        free(self.starts)

    def __reduce__(self):
        return (BlockedLayout, (self._layouts, [self.starts[i] for i in range(self.n_blocks + 1)]))


def predict_raw_blocked(Forest forest, BlockedLayout bl, const floating[:, :] X,
                        double[:, ::1] out64, float[:, ::1] out32, double[:, ::1] rowbuf,
                        uint64_t[:, ::1] bitbuf, int n_threads, int isa):
    """Raw scores: documents in blocks of QS_LANES, trees in the blocks of bl, in tree order."""
    if n_threads < 1:
        raise ValueError(f"n_threads must be >= 1, got {n_threads}")
    if X.shape[1] != forest.view.n_features or bl.n_trees != forest.view.n_trees:
        raise ValueError(f"input has {X.shape[1]} features, the model expects "
                         f"{forest.view.n_features}")
    if rowbuf.shape[0] < n_threads or rowbuf.shape[1] < QS_LANES * (forest.view.n_features + 1):
        raise ValueError("rowbuf must be at least (n_threads, LANES * (n_features + 1))")
    if bitbuf.shape[0] < n_threads or bitbuf.shape[1] < QS_LANES * bl.max_words:
        raise ValueError("bitbuf must be at least (n_threads, LANES * max block words)")
    if not qs_isa_available(isa):
        raise ValueError(f"this CPU cannot run instruction set {ISA_NAMES.get(isa, isa)!r}")
    cdef const ForestView* f = &forest.view
    cdef Py_ssize_t n_rows = X.shape[0]
    cdef Py_ssize_t k = f.n_outputs
    if forest.dtype == np.float32:
        if out32.shape[0] != n_rows or out32.shape[1] != k:
            raise ValueError(f"out32 must be ({n_rows}, {k})")
    elif out64.shape[0] != n_rows or out64.shape[1] != k:
        raise ValueError(f"out64 must be ({n_rows}, {k})")
    cdef Py_ssize_t n_blocks = (n_rows + QS_LANES - 1) // QS_LANES
    cdef Py_ssize_t b, i
    cdef int64_t t, l, n_lanes, F = f.n_features, tb, t0
    cdef const QSView* q
    cdef double* rows
    cdef double* x
    cdef uint64_t* v
    cdef double* o64
    cdef float* o32
    with nogil, parallel(num_threads=n_threads):
        rows = &rowbuf[threadid(), 0]
        x = rows + QS_LANES * F
        v = &bitbuf[threadid(), 0]
        for b in prange(n_blocks, schedule="static"):
            n_lanes = min(QS_LANES, n_rows - b * QS_LANES)
            for l in range(n_lanes):
                load_row(f, X, b * QS_LANES + l, rows + l * F)
                i = b * QS_LANES + l
                o64 = &out64[i, 0] if out64.shape[0] else NULL
                o32 = &out32[i, 0] if out32.shape[0] else NULL
                scores_init(f, o64, o32)
            for tb in range(bl.n_blocks):
                q = &bl.views[tb]
                t0 = bl.starts[tb]
                exit_bits_lanes(q, f.family, isa, rows, n_lanes, x, v)
                for l in range(n_lanes):
                    i = b * QS_LANES + l
                    o64 = &out64[i, 0] if out64.shape[0] else NULL
                    o32 = &out32[i, 0] if out32.shape[0] else NULL
                    for t in range(q.n_trees):
                        scores_add(f, t0 + t, exit_leaf_lane(q, t, v, l), rows + l * F,
                                   o64, o32)
