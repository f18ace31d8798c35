# The QuickScorer layout (built by quickscorer/algorithms/qs/layout.py) as the kernels read it,
# and the helpers the one-document scan (_qs.pyx) and the V-QuickScorer group scans
# (_vqs.pyx) share: the mask lists of values that no comparison decides (NaN, LightGBM's
# zero-as-missing, categories).
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

from quickscorer._forest cimport category_of
from quickscorer._kernel cimport Layout

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
                                      # +inf sentinels (this and the next two: NULL unless
                                      # the layout is merged)
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


cdef class QSLayout(Layout):
    cdef QSView view
    cdef readonly bint merged         # holds the grouping of equal thresholds (NULL else)
    cdef object _n_leaves             # the trees' leaf counts its contents were checked with


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
