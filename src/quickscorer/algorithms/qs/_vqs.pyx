# cython: language_level=3
"""V-QuickScorer: QuickScorer's scan for a group of `lanes` documents (4, 8, 16 or 32) at once,
their bitvectors interleaved per word, on AVX-512, AVX2 or portable C (vqs.h, chosen at
run time), over the layout of _qs.pyx.

Block-wise: the trees come in consecutive blocks (a BlockedLayout; one block when the model
fits the cache budget), and a block of `doc_groups` groups of documents is scanned against
each tree block while that block is in cache. Every document still adds its trees in tree
order, so the scores are bit-exact with the reference walk.
"""
import numpy as np

cimport numpy as cnp
from cython.parallel cimport prange, parallel, threadid
from libc.math cimport isnan, INFINITY
from libc.stdint cimport int32_t, int64_t, uint32_t, uint64_t, uintptr_t
from libc.string cimport memset
from libc.stdlib cimport malloc, free

from quickscorer._forest cimport (Forest, ForestView, floating, load_row, load_row_ptr, scores_add,
                       scores_init, FAMILY_XGBOOST)
from quickscorer._kernel cimport (SmallCall, check_call, check_leaves, check_scores, init_scores,
                       small_call)
from quickscorer.algorithms.qs._qs cimport (QSLayout, QSView, apply_list, categorical, qs_ctz64,
                            N_SEGMENT_KINDS, SEGMENT_NONE, SEGMENT_ZERO, SEGMENT_NAN,
                            CATEGORY_MODE_NONE)

cnp.import_array()

cdef extern from "quickscorer/algorithms/qs/vqs.h":
    enum:
        QS_MAX_LANES
        CPU_ISA_SCALAR
        CPU_ISA_AVX2
        CPU_ISA_AVX512
    int cpu_isa_available(int isa) noexcept nogil
    int cpu_best_isa() noexcept nogil
    int qs_lanes_supported(int lanes) noexcept nogil
    int64_t qs_scan_merged(int isa, int lanes, const double* thr, const int64_t* nodes,
                           const uint32_t* word, const uint64_t* mask, int64_t j,
                           const double* x, uint64_t* v) noexcept nogil
    int64_t qs_scan_entries(int isa, int lanes, const double* thr, const uint32_t* word,
                            const uint64_t* mask, int64_t k, const double* x,
                            uint64_t* v) noexcept nogil


cdef inline void scan_lanes(const QSView* q, int isa, int lanes, bint merged, int64_t seg,
                            const double* x, uint64_t* v) noexcept nogil:
    """scan for a group of `lanes` documents: per distinct threshold (merged) or per entry."""
    if merged:
        qs_scan_merged(isa, lanes, q.thresholds, q.node_offsets, q.words, q.masks,
                       q.segment_offsets[seg], x, v)
    else:
        qs_scan_entries(isa, lanes, q.entry_thresholds, q.words, q.masks,
                        q.entry_segment_offsets[seg], x, v)


ISA_NAMES = {CPU_ISA_SCALAR: "scalar", CPU_ISA_AVX2: "avx2", CPU_ISA_AVX512: "avx512"}
LANE_CHOICES = (4, 8, 16, 32)


def isa_available(int isa):
    """Whether this CPU runs instruction-set path isa (0 scalar, 1 AVX2, 2 AVX-512)."""
    return bool(cpu_isa_available(isa))


def best_isa():
    return cpu_best_isa()


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
        if (q.entry_segment_offsets[seg + SEGMENT_ZERO] + 1
                != q.entry_segment_offsets[seg + SEGMENT_ZERO + 1]):
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


cdef class BlockedLayout:
    """Consecutive tree blocks, each with its own QuickScorer layout small enough that a
    document block's bitvectors stay in the L1/L2 cache (block-wise QuickScorer)."""
    cdef QSView* views
    cdef int64_t* starts
    cdef readonly int64_t n_blocks, max_words, n_trees, n_features
    cdef readonly bint merged          # every block groups its equal thresholds
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
        self.merged = True
        cdef QSLayout lay
        for i, lay in enumerate(layouts):
            self.views[i] = lay.view
            self.merged = self.merged and lay.merged
            self.max_words = max(self.max_words, lay.view.total_words)
        for i in range(self.n_blocks + 1):
            self.starts[i] = int(starts[i])
        for i in range(self.n_blocks):
            if self.starts[i + 1] - self.starts[i] != self.views[i].n_trees:
                raise ValueError(f"tree block {i} does not match its layout")
        self.n_trees = self.starts[self.n_blocks]
        self.n_features = (<QSLayout>layouts[0]).n_features
        for lay in layouts:
            if lay.n_features != self.n_features:
                raise ValueError("tree blocks disagree on the number of features")

    def __dealloc__(self):
        free(self.views)
        free(self.starts)

    def __reduce__(self):
        return (BlockedLayout, (self._layouts, [self.starts[i] for i in range(self.n_blocks + 1)]))


cdef int _check_scan(BlockedLayout bl, int isa, int lanes, bint merged) except -1:
    if merged and not bl.merged:
        raise ValueError("a merged scan needs layouts that group equal thresholds")
    if not qs_lanes_supported(lanes):
        raise ValueError(f"lanes must be one of {LANE_CHOICES}, got {lanes}")
    if not cpu_isa_available(isa):
        raise ValueError(f"this CPU cannot run instruction set {ISA_NAMES.get(isa, isa)!r}")
    return 0


cdef int _check_groups(Forest forest, BlockedLayout bl, Py_ssize_t n_cols, int n_threads,
                       int isa, int lanes, int64_t doc_groups, double[:, ::1] rowbuf,
                       uint64_t[:, ::1] bitbuf, bint merged) except -1:
    _check_scan(bl, isa, lanes, merged)
    if doc_groups < 1:
        raise ValueError(f"doc_groups must be >= 1, got {doc_groups}")
    check_call(forest, n_cols, bl.n_trees, bl.n_features, n_threads, rowbuf,
               lanes * (doc_groups * forest.view.n_features + 1), bitbuf,
               lanes * bl.max_words, "quickscorer")
    return 0


cdef void _run_groups(Forest forest, BlockedLayout bl, const floating[:, :] X,
                      double[:, ::1] out64, float[:, ::1] out32, int32_t[:, ::1] leaves,
                      double[:, ::1] rowbuf, uint64_t[:, ::1] bitbuf, int n_threads, int isa,
                      bint merged, int64_t doc_groups, int lanes) noexcept:
    """Documents in blocks of doc_groups groups of `lanes`; for each document block, the tree
    blocks in order, each scanned for every group of the block while its layout is in cache.
    Scores (out64 or out32) when leaves is empty, else exit leaves into leaves.

    rowbuf: (n_threads, lanes * (doc_groups * n_features + 1)) float64; bitbuf: (n_threads,
    lanes * bl.max_words) uint64."""
    cdef const ForestView* f = &forest.view
    cdef bint want_leaves = leaves.shape[0] != 0
    cdef Py_ssize_t n_rows = X.shape[0]
    cdef Py_ssize_t k = f.n_outputs
    cdef Py_ssize_t n_groups = (n_rows + lanes - 1) // lanes
    cdef Py_ssize_t n_dblocks = (n_groups + doc_groups - 1) // doc_groups
    cdef Py_ssize_t db, g, g0, g1, i
    cdef int64_t l, t, n_lanes, F = f.n_features, tb
    cdef const QSView* q
    cdef double* rows
    cdef double* grow
    cdef double* x
    cdef double* o64
    cdef float* o32
    cdef uint64_t* v
    with nogil, parallel(num_threads=n_threads):
        rows = &rowbuf[threadid(), 0]
        x = rows + lanes * doc_groups * F
        v = &bitbuf[threadid(), 0]
        for db in prange(n_dblocks, schedule="dynamic"):
            g0 = db * doc_groups
            g1 = min(g0 + doc_groups, n_groups)
            for g in range(g0, g1):
                n_lanes = min(lanes, n_rows - g * lanes)
                i = g * lanes
                for l in range(n_lanes):
                    load_row(f, X, i + l, rows + ((g - g0) * lanes + l) * F)
                    if not want_leaves:
                        init_scores(f, out64, out32, i + l)
            for tb in range(bl.n_blocks):
                q = &bl.views[tb]
                for g in range(g0, g1):
                    n_lanes = min(lanes, n_rows - g * lanes)
                    i = g * lanes
                    grow = rows + (g - g0) * lanes * F
                    exit_bits_lanes(q, f.family, isa, lanes, merged, grow, n_lanes, x, v)
                    if want_leaves:
                        for l in range(n_lanes):
                            for t in range(q.n_trees):
                                leaves[i + l, bl.starts[tb] + t] = <int32_t>exit_leaf_lane(
                                    q, t, v, l, lanes)
                    else:
                        o64 = &out64[i, 0] if out64.shape[0] else NULL
                        o32 = &out32[i, 0] if out32.shape[0] else NULL
                        add_exits_lanes(f, q, bl.starts[tb], v, lanes, n_lanes, grow, o64, o32)


def predict_raw(Forest forest, BlockedLayout bl, const floating[:, :] X, double[:, ::1] out64,
                float[:, ::1] out32, double[:, ::1] rowbuf, uint64_t[:, ::1] bitbuf,
                int n_threads, int isa, bint merged=False, int64_t doc_groups=1, int lanes=8):
    """Raw scores into out64 (float64 forests) or out32 (float32), the other one empty,
    `lanes` documents per scan on instruction set isa (see _run_groups for the buffers)."""
    _check_groups(forest, bl, X.shape[1], n_threads, isa, lanes, doc_groups, rowbuf, bitbuf,
                  merged)
    check_scores(forest, X.shape[0], out64, out32)
    cdef int32_t[:, ::1] no_leaves = np.empty((0, 0), np.int32)
    _run_groups(forest, bl, X, out64, out32, no_leaves, rowbuf, bitbuf, n_threads, isa, merged,
                doc_groups, lanes)


def predict_leaf(Forest forest, BlockedLayout bl, const floating[:, :] X, int32_t[:, ::1] out,
                 double[:, ::1] rowbuf, uint64_t[:, ::1] bitbuf, int n_threads, int isa,
                 bint merged=False, int64_t doc_groups=1, int lanes=8):
    """In-order exit leaf of every tree for every row, into out (n_rows, n_trees)."""
    _check_groups(forest, bl, X.shape[1], n_threads, isa, lanes, doc_groups, rowbuf, bitbuf,
                  merged)
    check_leaves(forest, X.shape[0], out)
    if X.shape[0] == 0:
        return
    cdef double[:, ::1] no64 = np.empty((0, 0))
    cdef float[:, ::1] no32 = np.empty((0, 0), np.float32)
    _run_groups(forest, bl, X, no64, no32, out, rowbuf, bitbuf, n_threads, isa, merged,
                doc_groups, lanes)


def predict_small(Forest forest, BlockedLayout bl, object X, bint squeeze, int isa,
                  bint merged, int lanes):
    """Raw scores of a call of a few rows on one thread, the low-latency entry (rows and
    scores as _kernel.small_call takes them, None for anything else): groups of `lanes`
    documents, each group through the tree blocks in order, as predict_raw sums them. The
    converted rows and the bitvectors are the call's own (64-byte aligned, as the scratch of
    predict_raw), the GIL is released around the groups."""
    _check_scan(bl, isa, lanes, merged)
    cdef SmallCall c
    out = small_call(forest, X, bl.n_trees, bl.n_features, squeeze, &c)
    if out is None:
        return None
    cdef const ForestView* f = &forest.view
    cdef int64_t F = f.n_features, K = f.n_outputs
    # the bitvectors first (their vector stores want the alignment), then the rows and x
    cdef size_t bits_bytes = (lanes * bl.max_words * sizeof(uint64_t) + 63) // 64 * 64
    cdef void* mem = malloc(bits_bytes + lanes * (F + 1) * sizeof(double) + 64)
    if mem == NULL:
        raise MemoryError()
    cdef uint64_t* v = <uint64_t*>((<uintptr_t>mem + 63) // 64 * 64)
    cdef double* rows = <double*>(<char*>v + bits_bytes)
    cdef double* x = rows + lanes * F
    cdef Py_ssize_t g, i
    cdef int64_t l, n_lanes, tb
    cdef double* o64
    cdef float* o32
    with nogil:
        for g in range((c.n + lanes - 1) // lanes):
            i = g * lanes
            n_lanes = min(<Py_ssize_t>lanes, c.n - i)
            o64 = c.o64 + i * K if c.o64 != NULL else NULL
            o32 = c.o32 + i * K if c.o32 != NULL else NULL
            for l in range(n_lanes):
                load_row_ptr(f, c.x + (i + l) * c.row_bytes, c.is32, rows + l * F)
                scores_init(f, o64 + l * K if o64 != NULL else NULL,
                            o32 + l * K if o32 != NULL else NULL)
            for tb in range(bl.n_blocks):
                exit_bits_lanes(&bl.views[tb], f.family, isa, lanes, merged, rows, n_lanes, x,
                                v)
                add_exits_lanes(f, &bl.views[tb], bl.starts[tb], v, lanes, n_lanes, rows,
                                o64, o32)
    free(mem)
    return out
