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
                       scores_add, FAMILY_XGBOOST)

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
        QS_MAX_LANES
        QS_ISA_SCALAR
        QS_ISA_AVX2
        QS_ISA_AVX512
    int qs_isa_available(int isa) noexcept nogil
    int qs_best_isa() noexcept nogil
    int qs_lanes_supported(int lanes) noexcept nogil
    int64_t qs_scan_merged(int isa, int lanes, const double* thr, const int64_t* nodes,
                           const uint32_t* word, const uint64_t* mask, int64_t j,
                           const double* x, uint64_t* v) noexcept nogil
    int64_t qs_scan_entries(int isa, int lanes, const double* thr, const uint32_t* word,
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
    const double* thresholds          # [n_distinct] distinct thresholds, sorted per segment,
                                      # +inf sentinels
    const int64_t* node_offsets       # [n_distinct + 1] the mask entries of each threshold
    const uint32_t* words             # [n_entries] absolute word of each mask entry
    const uint64_t* masks             # [n_entries]
    const int64_t* segment_offsets    # [3 n_features + 1] into thresholds
    const double* entry_thresholds    # [n_entries] the threshold of each entry (the
    const int64_t* entry_segment_offsets  # entry-wise stream) and [3 n_features + 1] into it
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
    "tree_word_offsets": np.int64, "scan_thresholds": np.float64,
    "scan_node_offsets": np.int64, "scan_segment_offsets": np.int64, "thresholds": np.float64,
    "words": np.uint32,
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
            "scan_segment_offsets": N_SEGMENT_KINDS * F + 1,
            "segment_offsets": N_SEGMENT_KINDS * F + 1,
            "scan_node_offsets": a["scan_thresholds"].shape[0] + 1,
            "category_mode": F,
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
        n_scan = a["scan_node_offsets"].shape[0]
        if int(a["scan_node_offsets"][n_scan - 1]) != a["words"].shape[0]:
            raise ValueError("quickscorer layout: scan_node_offsets do not cover the entries")
        if int(a["scan_segment_offsets"][N_SEGMENT_KINDS * F]) != a["scan_thresholds"].shape[0]:
            raise ValueError("quickscorer layout: scan_segment_offsets do not cover "
                             "scan_thresholds")
        self.view.n_features = F
        self.view.n_trees = n_trees
        self.view.n_used = a["used_features"].shape[0]
        self.view.used_features = <const int32_t*>_data(a, "used_features")
        self.view.total_words = int(a["tree_word_offsets"][n_trees])
        self.view.tree_word_offsets = <const int64_t*>_data(a, "tree_word_offsets")
        self.view.thresholds = <const double*>_data(a, "scan_thresholds")
        self.view.node_offsets = <const int64_t*>_data(a, "scan_node_offsets")
        self.view.words = <const uint32_t*>_data(a, "words")
        self.view.masks = <const uint64_t*>_data(a, "masks")
        self.view.segment_offsets = <const int64_t*>_data(a, "scan_segment_offsets")
        self.view.entry_thresholds = <const double*>_data(a, "thresholds")
        self.view.entry_segment_offsets = <const int64_t*>_data(a, "segment_offsets")
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
    """AND the masks of segment seg's nodes that x makes false (x > threshold).

    One document: the entry-wise stream, whose loop exits once per segment. (Grouping equal
    thresholds, as the 8-lane scan can, costs a mispredicted branch per group here: measured
    1.8x slower on the 1,000 x 64 model.)"""
    cdef const double* thr = q.entry_thresholds
    cdef const uint32_t* word = q.words
    cdef const uint64_t* mask = q.masks
    cdef int64_t k = q.entry_segment_offsets[seg]
    while x > thr[k]:  # the +inf sentinel ends every segment
        v[word[k]] &= mask[k]
        k += 1


cdef inline void scan_lanes(const QSView* q, int isa, int lanes, bint merged, int64_t seg,
                            const double* x, uint64_t* v) noexcept nogil:
    """scan for a group of `lanes` documents: per distinct threshold (merged) or per entry."""
    if merged:
        qs_scan_merged(isa, lanes, q.thresholds, q.node_offsets, q.words, q.masks,
                       q.segment_offsets[seg], x, v)
    else:
        qs_scan_entries(isa, lanes, q.entry_thresholds, q.words, q.masks,
                        q.entry_segment_offsets[seg], x, v)


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
# V-QuickScorer: a group of `lanes` documents (8, 16 or 32) per scan, bitvectors interleaved
# per word (vqs_simd.h)

ISA_NAMES = {QS_ISA_SCALAR: "scalar", QS_ISA_AVX2: "avx2", QS_ISA_AVX512: "avx512"}
LANE_CHOICES = (8, 16, 32)


def isa_available(int isa):
    """Whether this CPU runs instruction-set path isa (0 scalar, 1 AVX2, 2 AVX-512)."""
    return bool(qs_isa_available(isa))


def best_isa():
    return qs_best_isa()


cdef inline void exit_bits_lanes(const QSView* q, int family, int isa, int lanes, bint merged,
                                 const double* rows, int64_t n_lanes, double* x,
                                 uint64_t* v) noexcept nogil:
    """exit_bits for n_lanes converted rows (rows[l * n_features + j]) at once; lanes beyond
    n_lanes hold -inf and are never touched. v: total_words * lanes interleaved words."""
    cdef int64_t u, feat, seg, l
    cdef int64_t F = q.n_features
    cdef double val
    cdef bint any_nan, any_zero
    cdef double xs[QS_MAX_LANES]
    memset(v, 0xFF, q.total_words * lanes * sizeof(uint64_t))
    for u in range(q.n_used):
        feat = q.used_features[u]
        seg = feat * N_SEGMENT_KINDS
        any_nan = False
        any_zero = False
        for l in range(lanes):
            if l >= n_lanes:
                x[l] = -INFINITY
                xs[l] = -INFINITY
                continue
            val = rows[l * F + feat]
            x[l] = val
            if isnan(val):
                any_nan = True
                xs[l] = 0.0             # "None": NaN is compared as 0.0
            else:
                if val == 0.0:
                    any_zero = True
                xs[l] = val
        scan_lanes(q, isa, lanes, merged, seg + SEGMENT_NONE, xs, v)
        # "NaN" segment: NaN lanes never exceed a threshold; they take the NaN list below
        scan_lanes(q, isa, lanes, merged, seg + SEGMENT_NAN, x, v)
        if q.segment_offsets[seg + SEGMENT_ZERO] + 1 != q.segment_offsets[seg + SEGMENT_ZERO + 1]:
            if any_nan or any_zero:   # zero and NaN lanes take their lists instead of the scan
                for l in range(n_lanes):
                    xs[l] = -INFINITY if (isnan(x[l]) or x[l] == 0.0) else x[l]
                scan_lanes(q, isa, lanes, merged, seg + SEGMENT_ZERO, xs, v)
            else:
                scan_lanes(q, isa, lanes, merged, seg + SEGMENT_ZERO, x, v)
        if any_nan or any_zero:
            for l in range(n_lanes):
                if isnan(x[l]):
                    apply_list(q, feat, v + l, lanes)
                elif x[l] == 0.0:
                    apply_list(q, q.n_features + feat, v + l, lanes)
        if q.category_mode[feat] != CATEGORY_MODE_NONE:
            for l in range(n_lanes):
                if not isnan(x[l]):
                    categorical(q, family, feat, x[l], v + l, lanes)


cdef inline int64_t exit_leaf_lane(const QSView* q, int64_t t, const uint64_t* v,
                                   int64_t l, int lanes) noexcept nogil:
    cdef int64_t w0 = q.tree_word_offsets[t]
    cdef int64_t w = w0
    while v[w * lanes + l] == 0:
        w += 1
    return ((w - w0) << 6) + qs_ctz64(v[w * lanes + l])


cdef inline void add_exits_lanes(const ForestView* f, const QSView* q, int64_t t0,
                                 const uint64_t* v, int lanes, int64_t n_lanes,
                                 const double* rows, double* o64, float* o32) noexcept nogil:
    """Add the exit leaves of q's trees (trees t0 .. of f) for the n_lanes documents whose
    scores are o64 / o32 + l * n_outputs. Trees outer, lanes inner: each document still sums
    in tree order (the same roundings), but the documents' sums are independent chains the
    CPU overlaps instead of waiting on one addition after another."""
    cdef int64_t K = f.n_outputs
    cdef int64_t t, l, w, g, base
    cdef const uint64_t* p
    cdef bint plain = not f.has_linear and f.tree_weight == NULL
    for t in range(q.n_trees):
        w = q.tree_word_offsets[t]
        g = f.tree_group[t0 + t]
        base = f.tree_leaf_offset[t0 + t]
        p = v + w * lanes
        if plain and q.tree_word_offsets[t + 1] == w + 1:
            if f.family == FAMILY_XGBOOST:
                for l in range(n_lanes):
                    o32[l * K + g] = o32[l * K + g] + f.leaf_value_f32[base + qs_ctz64(p[l])]
            else:
                for l in range(n_lanes):
                    o64[l * K + g] = o64[l * K + g] + f.leaf_value[base + qs_ctz64(p[l])]
        else:
            for l in range(n_lanes):
                scores_add(f, t0 + t, exit_leaf_lane(q, t, v, l, lanes),
                           rows + l * f.n_features,
                           (o64 + l * K) if o64 != NULL else NULL,
                           (o32 + l * K) if o32 != NULL else NULL)


def _check_lanes(Forest forest, Py_ssize_t n_rows, Py_ssize_t n_cols, int64_t n_trees,
                 double[:, ::1] rowbuf, int64_t row_width, uint64_t[:, ::1] bitbuf,
                 int64_t words, int n_threads, int isa, int lanes,
                 double[:, ::1] out64=None, float[:, ::1] out32=None):
    if n_threads < 1:
        raise ValueError(f"n_threads must be >= 1, got {n_threads}")
    if not qs_lanes_supported(lanes):
        raise ValueError(f"lanes must be one of {LANE_CHOICES}, got {lanes}")
    if not qs_isa_available(isa):
        raise ValueError(f"this CPU cannot run instruction set {ISA_NAMES.get(isa, isa)!r}")
    if n_cols != forest.view.n_features:
        raise ValueError(f"input has {n_cols} features, the model expects "
                         f"{forest.view.n_features}")
    if n_trees != forest.view.n_trees:
        raise ValueError("the quickscorer layout and the forest disagree on the tree count")
    if rowbuf.shape[0] < n_threads or rowbuf.shape[1] < row_width:
        raise ValueError(f"rowbuf must be at least ({n_threads}, {row_width})")
    if bitbuf.shape[0] < n_threads or bitbuf.shape[1] < lanes * words:
        raise ValueError(f"bitbuf must be at least ({n_threads}, {lanes * words})")
    cdef Py_ssize_t k = forest.view.n_outputs
    if out64 is None:
        return
    if forest.dtype == np.float32:
        if out32.shape[0] != n_rows or out32.shape[1] != k:
            raise ValueError(f"out32 must be ({n_rows}, {k})")
    elif out64.shape[0] != n_rows or out64.shape[1] != k:
        raise ValueError(f"out64 must be ({n_rows}, {k})")


def predict_raw_lanes(Forest forest, QSLayout lay, const floating[:, :] X,
                      double[:, ::1] out64, float[:, ::1] out32, double[:, ::1] rowbuf,
                      uint64_t[:, ::1] bitbuf, int n_threads, int isa, bint merged=False,
                      int lanes=8):
    """Raw scores like predict_raw, `lanes` rows per scan on instruction set isa.

    rowbuf: (n_threads, lanes * (n_features + 1)) float64; bitbuf: (n_threads, lanes *
    total_words) uint64.
    """
    if lay.view.n_features != forest.view.n_features:
        raise ValueError("the quickscorer layout and the forest disagree on the features")
    _check_lanes(forest, X.shape[0], X.shape[1], lay.view.n_trees, rowbuf,
                 lanes * (forest.view.n_features + 1), bitbuf, lay.view.total_words,
                 n_threads, isa, lanes, out64, out32)
    cdef const ForestView* f = &forest.view
    cdef const QSView* q = &lay.view
    cdef Py_ssize_t n_rows = X.shape[0]
    cdef Py_ssize_t k = f.n_outputs
    cdef Py_ssize_t n_blocks = (n_rows + lanes - 1) // lanes
    cdef Py_ssize_t b, i
    cdef int64_t l, n_lanes, F = f.n_features
    cdef double* rows
    cdef double* x
    cdef uint64_t* v
    cdef double* o64
    cdef float* o32
    with nogil, parallel(num_threads=n_threads):
        rows = &rowbuf[threadid(), 0]
        x = rows + lanes * F
        v = &bitbuf[threadid(), 0]
        for b in prange(n_blocks, schedule="static"):
            n_lanes = min(lanes, n_rows - b * lanes)
            for l in range(n_lanes):
                load_row(f, X, b * lanes + l, rows + l * F)
            exit_bits_lanes(q, f.family, isa, lanes, merged, rows, n_lanes, x, v)
            i = b * lanes
            o64 = &out64[i, 0] if out64.shape[0] else NULL
            o32 = &out32[i, 0] if out32.shape[0] else NULL
            for l in range(n_lanes):
                scores_init(f, (o64 + l * k) if o64 != NULL else NULL,
                            (o32 + l * k) if o32 != NULL else NULL)
            add_exits_lanes(f, q, 0, v, lanes, n_lanes, rows, o64, o32)


def predict_leaf_lanes(Forest forest, QSLayout lay, const floating[:, :] X,
                       int32_t[:, ::1] out, double[:, ::1] rowbuf, uint64_t[:, ::1] bitbuf,
                       int n_threads, int isa, bint merged=False, int lanes=8):
    """Exit leaves like predict_leaf, `lanes` rows per scan."""
    if lay.view.n_features != forest.view.n_features:
        raise ValueError("the quickscorer layout and the forest disagree on the features")
    _check_lanes(forest, X.shape[0], X.shape[1], lay.view.n_trees, rowbuf,
                 lanes * (forest.view.n_features + 1), bitbuf, lay.view.total_words,
                 n_threads, isa, lanes)
    cdef const ForestView* f = &forest.view
    cdef const QSView* q = &lay.view
    cdef Py_ssize_t n_rows = X.shape[0]
    if out.shape[0] != n_rows or out.shape[1] != f.n_trees:
        raise ValueError(f"out must be ({n_rows}, {f.n_trees})")
    cdef Py_ssize_t n_blocks = (n_rows + lanes - 1) // lanes
    cdef Py_ssize_t b
    cdef int64_t t, l, n_lanes, F = f.n_features
    cdef double* rows
    cdef double* x
    cdef uint64_t* v
    with nogil, parallel(num_threads=n_threads):
        rows = &rowbuf[threadid(), 0]
        x = rows + lanes * F
        v = &bitbuf[threadid(), 0]
        for b in prange(n_blocks, schedule="static"):
            n_lanes = min(lanes, n_rows - b * lanes)
            for l in range(n_lanes):
                load_row(f, X, b * lanes + l, rows + l * F)
            exit_bits_lanes(q, f.family, isa, lanes, merged, rows, n_lanes, x, v)
            for l in range(n_lanes):
                for t in range(f.n_trees):
                    out[b * lanes + l, t] = <int32_t>exit_leaf_lane(q, t, v, l, lanes)


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
                        uint64_t[:, ::1] bitbuf, int n_threads, int isa, bint merged=False,
                        int64_t doc_groups=1, int lanes=8):
    """Raw scores, block-wise: documents in blocks of doc_groups groups of `lanes`, and for
    each document block the tree blocks of bl in order, each scanned for every group of the
    block while its layout is in cache. Each document still adds its trees in tree order.

    rowbuf: (n_threads, lanes * (doc_groups * n_features + 1)) float64; bitbuf: (n_threads,
    lanes * bl.max_words) uint64.
    """
    if doc_groups < 1:
        raise ValueError(f"doc_groups must be >= 1, got {doc_groups}")
    _check_lanes(forest, X.shape[0], X.shape[1], bl.n_trees, rowbuf,
                 lanes * (doc_groups * forest.view.n_features + 1), bitbuf, bl.max_words,
                 n_threads, isa, lanes, out64, out32)
    cdef const ForestView* f = &forest.view
    cdef Py_ssize_t n_rows = X.shape[0]
    cdef Py_ssize_t k = f.n_outputs
    cdef Py_ssize_t n_groups = (n_rows + lanes - 1) // lanes
    cdef Py_ssize_t n_dblocks = (n_groups + doc_groups - 1) // doc_groups
    cdef Py_ssize_t db, g, g0, g1, i
    cdef int64_t l, n_lanes, F = f.n_features, tb
    cdef const QSView* q
    cdef double* rows
    cdef double* x
    cdef uint64_t* v
    cdef double* o64
    cdef float* o32
    with nogil, parallel(num_threads=n_threads):
        rows = &rowbuf[threadid(), 0]
        x = rows + lanes * doc_groups * F
        v = &bitbuf[threadid(), 0]
        for db in prange(n_dblocks, schedule="static"):
            g0 = db * doc_groups
            g1 = min(g0 + doc_groups, n_groups)
            for g in range(g0, g1):
                n_lanes = min(lanes, n_rows - g * lanes)
                i = g * lanes
                o64 = &out64[i, 0] if out64.shape[0] else NULL
                o32 = &out32[i, 0] if out32.shape[0] else NULL
                for l in range(n_lanes):
                    load_row(f, X, i + l, rows + ((g - g0) * lanes + l) * F)
                    scores_init(f, (o64 + l * k) if o64 != NULL else NULL,
                                (o32 + l * k) if o32 != NULL else NULL)
            for tb in range(bl.n_blocks):
                q = &bl.views[tb]
                for g in range(g0, g1):
                    n_lanes = min(lanes, n_rows - g * lanes)
                    i = g * lanes
                    o64 = &out64[i, 0] if out64.shape[0] else NULL
                    o32 = &out32[i, 0] if out32.shape[0] else NULL
                    exit_bits_lanes(q, f.family, isa, lanes, merged,
                                    rows + (g - g0) * lanes * F, n_lanes, x, v)
                    add_exits_lanes(f, q, bl.starts[tb], v, lanes, n_lanes,
                                    rows + (g - g0) * lanes * F, o64, o32)
