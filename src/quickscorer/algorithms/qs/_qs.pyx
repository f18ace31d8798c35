# cython: language_level=3
"""QuickScorer (Lucchese et al., SIGIR 2015, Algorithm 1): exit leaves by feature-wise scans.

Per row: every tree's leaf bitvector starts all ones; for each feature, the sorted thresholds
are walked while ``x > threshold`` (those nodes are false) and their masks ANDed in; values
that are not decided by comparison (NaN, LightGBM's zero-as-missing, categories) AND
precomputed mask lists instead. A tree's exit leaf is then its lowest set bit. The layout is
built by ``quickscorer.algorithms.qs.layout.quickscorer_arrays``, whose docstring describes
it; the row loops are the shared ones of _kernel.pyx, and the scans of 8 to 32 documents at
once (V-QuickScorer) are in _vqs.pyx.
"""
import numpy as np

cimport numpy as cnp
from libc.math cimport INFINITY, isnan
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memset

from quickscorer._forest cimport ForestView, FAMILY_XGBOOST, add_leaf_f32
from quickscorer._kernel cimport emit, array_data

cnp.import_array()


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

cdef inline const void* _data(dict a, str name) except NULL:
    return array_data(a[name], _FIELDS[name], "quickscorer", name)


cdef class QSLayout(Layout):
    """The QuickScorer arrays of one model, wrapped for the kernels without copying. The
    grouping of equal thresholds (``scan_thresholds``, ``scan_segment_offsets``,
    ``scan_node_offsets``) is optional: only the merged scan of ``vqs`` reads it
    (``merged`` says whether the layout has it)."""
    def __cinit__(self, dict a, int64_t n_features, n_leaves=None):
        self._keep = dict(a)
        F = n_features
        n_trees = a["tree_word_offsets"].shape[0] - 1
        n_keys = a["category_keys"].shape[0]
        n_direct = a["category_node_bits_offset"].shape[0]
        self.merged = "scan_thresholds" in a
        checks = {
            "segment_offsets": N_SEGMENT_KINDS * F + 1,
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
        self.view.thresholds = NULL
        self.view.node_offsets = NULL
        self.view.segment_offsets = NULL
        if self.merged:
            for name, n in (("scan_segment_offsets", N_SEGMENT_KINDS * F + 1),
                            ("scan_node_offsets", a["scan_thresholds"].shape[0] + 1)):
                if a[name].shape[0] != n:
                    raise ValueError(f"quickscorer layout field {name!r} has "
                                     f"{a[name].shape[0]} entries, expected {n}")
            n_scan = a["scan_node_offsets"].shape[0]
            if int(a["scan_node_offsets"][n_scan - 1]) != a["words"].shape[0]:
                raise ValueError("quickscorer layout: scan_node_offsets do not cover the "
                                 "entries")
            if (int(a["scan_segment_offsets"][N_SEGMENT_KINDS * F])
                    != a["scan_thresholds"].shape[0]):
                raise ValueError("quickscorer layout: scan_segment_offsets do not cover "
                                 "scan_thresholds")
            self.view.thresholds = <const double*>_data(a, "scan_thresholds")
            self.view.node_offsets = <const int64_t*>_data(a, "scan_node_offsets")
            self.view.segment_offsets = <const int64_t*>_data(a, "scan_segment_offsets")
        # the trees' leaf counts: the contents are checked against them (a model file's
        # layout is read, not built)
        self._n_leaves = None if n_leaves is None else np.ascontiguousarray(n_leaves, np.int64)
        if self._n_leaves is not None:
            _check_contents(a, F, self._n_leaves, self.merged)
        self.view.n_features = F
        self.view.n_trees = n_trees
        self.view.n_used = a["used_features"].shape[0]
        self.view.used_features = <const int32_t*>_data(a, "used_features")
        self.view.total_words = int(a["tree_word_offsets"][n_trees])
        self.view.tree_word_offsets = <const int64_t*>_data(a, "tree_word_offsets")
        self.view.words = <const uint32_t*>_data(a, "words")
        self.view.masks = <const uint64_t*>_data(a, "masks")
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
        self.n_trees = n_trees
        self.scratch_words = self.view.total_words
        self.ctx = &self.view
        self.exits = qs_exits

    @property
    def total_words(self):
        return self.view.total_words

    def __reduce__(self):
        return (QSLayout, (self._keep, self.n_features, self._n_leaves))


cdef bint _rising(const int64_t[::1] off, int64_t lo, int64_t hi) noexcept:
    """Whether off rises from at least lo to at most hi, never falling."""
    cdef Py_ssize_t i, n = off.shape[0]
    if n == 0 or off[0] < lo or off[n - 1] > hi:
        return False
    for i in range(1, n):
        if off[i] < off[i - 1]:
            return False
    return True


cdef bint _segments_closed(const int64_t[::1] seg, const double[::1] thr) noexcept:
    """Whether every segment seg[s]..seg[s + 1] holds at least one threshold and ends with the
    +inf sentinel that stops every scan inside it."""
    cdef Py_ssize_t s
    for s in range(seg.shape[0] - 1):
        if seg[s + 1] <= seg[s] or thr[seg[s + 1] - 1] != INFINITY:
            return False
    return True


cdef bint _masks_keep_last_leaf(const uint32_t[::1] words, const uint64_t[::1] masks,
                                const int64_t[::1] last_bit, int64_t total) noexcept:
    """Whether every (word, mask) entry names a word of the bitvectors and keeps the bit of
    its tree's last leaf (last_bit[w]: that bit's mask in word w, 0 where w is not a tree's
    last word): the last leaf is in no false node's left subtree, so a tree's bits never all
    clear and its exit leaf is one of its leaves."""
    cdef Py_ssize_t k
    cdef uint32_t w
    for k in range(words.shape[0]):
        w = words[k]
        if w >= total or (masks[k] & <uint64_t>last_bit[w]) != <uint64_t>last_bit[w]:
            return False
    return True


cdef int _check_contents(dict a, int64_t F, const int64_t[::1] n_leaves,
                         bint merged) except -1:
    """Refuse a layout whose offsets, words or masks would send a scan or an exit-leaf search
    outside its arrays (a model file's layout, read without being built): ValueError naming
    the field."""
    cdef Py_ssize_t t, n_trees = n_leaves.shape[0], n_entries = a["thresholds"].shape[0]
    cdef const int64_t[::1] two = a["tree_word_offsets"]
    if two.shape[0] != n_trees + 1 or two[0] != 0:
        raise ValueError("quickscorer layout field 'tree_word_offsets' does not match the trees")
    for t in range(n_trees):
        if n_leaves[t] < 1 or two[t + 1] - two[t] != (n_leaves[t] + 63) // 64:
            raise ValueError(f"quickscorer layout field 'tree_word_offsets': tree {t} does not "
                             f"have a word for each 64 of its {n_leaves[t]} leaves")
    cdef int64_t total = two[n_trees]
    last = np.zeros(max(1, total), np.int64)
    cdef int64_t[::1] last_bit = last
    for t in range(n_trees):
        last_bit[two[t + 1] - 1] = <int64_t>(<uint64_t>1 << ((n_leaves[t] - 1) & 63))
    if not _masks_keep_last_leaf(a["words"], a["masks"], last_bit, total):
        raise ValueError("quickscorer layout fields 'words' / 'masks': an entry names a word "
                         "past the bitvectors or clears a tree's last leaf")
    if not _masks_keep_last_leaf(a["list_words"], a["list_masks"], last_bit, total):
        raise ValueError("quickscorer layout fields 'list_words' / 'list_masks': an entry "
                         "names a word past the bitvectors or clears a tree's last leaf")
    if not (_rising(a["segment_offsets"], 0, n_entries)
            and _segments_closed(a["segment_offsets"], a["thresholds"])):
        raise ValueError("quickscorer layout field 'segment_offsets': a segment is out of "
                         "place or lacks its +inf sentinel")
    if not _rising(a["list_offsets"], 0, a["list_words"].shape[0]):
        raise ValueError("quickscorer layout field 'list_offsets' is out of order")
    used = a["used_features"]
    if used.shape[0] and (used.min() < 0 or used.max() >= F):
        raise ValueError("quickscorer layout field 'used_features' names a feature outside "
                         "the model's")
    mode = a["category_mode"]
    if mode.shape[0] and mode.max() > CATEGORY_MODE_DIRECT:
        raise ValueError("quickscorer layout field 'category_mode' holds an unknown mode")
    n_keys, n_direct = a["category_keys"].shape[0], a["category_node_bits_offset"].shape[0]
    if not (_rising(a["category_key_offsets"], 0, n_keys)
            and _rising(a["category_node_offsets"], 0, n_direct)):
        raise ValueError("quickscorer layout fields 'category_key_offsets' / "
                         "'category_node_offsets' are out of place")
    bits_off, nwords = a["category_node_bits_offset"], a["category_node_nwords"]
    if n_direct and (bits_off.min() < 0 or nwords.min() < 0
                     or (bits_off + nwords).max() > a["category_bits"].shape[0]):
        raise ValueError("quickscorer layout fields 'category_node_bits_offset' / "
                         "'category_node_nwords' leave 'category_bits'")
    if merged and not (_rising(a["scan_segment_offsets"], 0, a["scan_thresholds"].shape[0])
                       and _segments_closed(a["scan_segment_offsets"], a["scan_thresholds"])
                       and _rising(a["scan_node_offsets"], 0, n_entries)):
        raise ValueError("quickscorer layout fields 'scan_*': a segment or threshold group is "
                         "out of place or lacks its +inf sentinel")
    return 0


cdef inline void scan(const QSView* q, int64_t seg, double x, uint64_t* v) noexcept nogil:
    """AND the masks of segment seg's nodes that x makes false (x > threshold).

    One document: the entry-wise stream, whose loop exits once per segment. (Grouping equal
    thresholds, as the 8-lane scan can, costs a mispredicted branch per group here: slower.)"""
    cdef const double* thr = q.entry_thresholds
    cdef const uint32_t* word = q.words
    cdef const uint64_t* mask = q.masks
    cdef int64_t k = q.entry_segment_offsets[seg]
    while x > thr[k]:  # the +inf sentinel ends every segment
        v[word[k]] &= mask[k]
        k += 1


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


cdef void qs_exits(const void* ctx, const ForestView* f, const double* row,
                   uint64_t* v, int32_t* leaves,
                   double* o64, float* o32) noexcept nogil:
    cdef const QSView* q = <const QSView*>ctx
    cdef int64_t t
    exit_bits(q, f.family, row, v)
    if leaves == NULL and f.n_outputs == 1 and not f.has_linear:
        sum_exits(q, f, v, o64, o32)
        return
    for t in range(q.n_trees):
        emit(f, t, exit_leaf(q, t, v), row, leaves, o64, o32)


cdef inline void sum_exits(const QSView* q, const ForestView* f, const uint64_t* v,
                           double* o64, float* o32) noexcept nogil:
    """The one score of a model without linear leaves, kept in a register while the trees'
    exit leaves are added in tree order: the additions of emit, without a store and reload
    of the score per tree on the chain of additions (one-row calls on the 1,000-tree models
    of benchmarks/matrix.py, medians of 8 alternating runs)."""
    cdef int64_t t
    cdef double acc
    cdef float acc32
    if f.family == FAMILY_XGBOOST:
        acc32 = o32[0]
        for t in range(q.n_trees):
            acc32 = add_leaf_f32(f, t, f.tree_leaf_offset[t] + exit_leaf(q, t, v), acc32)
        o32[0] = acc32
    else:
        acc = o64[0]
        for t in range(q.n_trees):
            acc = acc + f.leaf_value[f.tree_leaf_offset[t] + exit_leaf(q, t, v)]
        o64[0] = acc
