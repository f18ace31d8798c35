# cython: language_level=3
"""The layout builders' sorting and merging in C, for models without categorical splits.

``quickscorer.algorithms.qs.layout`` and ``quickscorer.algorithms.rapidscorer.layout`` describe the layouts; their numpy
builders stay the reference (and the path for categorical models). Here every sort is a
counting sort over keys the layout already bounds (distinct thresholds per feature, segments,
tree blocks, lists), so a layout costs a few passes over the nodes, without the temporaries of
``np.lexsort``:

* a node's *rank* is the position of its threshold among its feature's distinct thresholds;
  QuickScorer's order of entries (segment, threshold, word) is then (segment, rank, word);
* entries of one bucket (segment, rank) come in tree order, and a tree's words in order
  except between nodes of one tree of more than 64 leaves: an insertion sort per bucket puts
  them in word order, and equal words (same tree) are ANDed into one entry.
"""
import numpy as np

cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.math cimport INFINITY
from libc.stdlib cimport qsort

cnp.import_array()

cdef enum:
    N_KINDS = 3          # segments per feature (qs.layout.N_SEGMENT_KINDS)
    KIND_NONE = 0
    KIND_ZERO = 1
    KIND_NAN = 2
    SENTINEL_RANK = 255  # rapidscorer.ranks.SENTINEL_THR
    MAX_THR_SLOT = 255   # rapidscorer.ranks.MAX_THRESHOLDS: thresholds a rank slot holds
    MAX_BLOCK_ROWS = 65536  # rapidscorer.layout.MAX_BLOCK_ROWS: an entry's byte row is 16 bits
    N_HALVES = 4         # rapidscorer.layout.N_HALVES: node variants (mirrored, missing side) a feature

cdef uint64_t ALL_ONES = 0xFFFFFFFFFFFFFFFFULL


cdef int _cmp_double(const void* a, const void* b) noexcept nogil:
    cdef double x = (<const double*>a)[0]
    cdef double y = (<const double*>b)[0]
    return (x > y) - (x < y)


cdef void _sort_doubles(double* v, Py_ssize_t n, int depth) noexcept nogil:
    """Sort ``v[:n]`` ascending (no NaN): quicksort on the median of three, insertion sort
    below 17 values, the C library's sort past ``depth`` levels (a bad pivot run)."""
    cdef Py_ssize_t i, j
    cdef double x, p
    while n > 16:
        if depth == 0:
            qsort(v, n, sizeof(double), _cmp_double)
            return
        depth -= 1
        i = n >> 1
        if v[i] < v[0]:
            v[i], v[0] = v[0], v[i]
        if v[n - 1] < v[i]:
            v[i], v[n - 1] = v[n - 1], v[i]
            if v[i] < v[0]:
                v[i], v[0] = v[0], v[i]
        p = v[i]
        i, j = 0, n - 1
        while True:
            while v[i] < p:
                i += 1
            while p < v[j]:
                j -= 1
            if i >= j:
                break
            v[i], v[j] = v[j], v[i]
            i += 1
            j -= 1
        # v[:j + 1] <= p <= v[j + 1:]; recurse on the smaller side
        if j + 1 < n - j - 1:
            _sort_doubles(v, j + 1, depth)
            v += j + 1
            n -= j + 1
        else:
            _sort_doubles(v + j + 1, n - j - 1, depth)
            n = j + 1
    for i in range(1, n):
        x = v[i]
        j = i
        while j > 0 and v[j - 1] > x:
            v[j] = v[j - 1]
            j -= 1
        v[j] = x


cdef Py_ssize_t _lower_bound(const double* v, Py_ssize_t n, double x) noexcept nogil:
    """The number of ``v[:n]`` (ascending) below ``x`` (a search without branches on the
    data: the halving step compiles to a conditional move)."""
    cdef const double* base = v
    cdef Py_ssize_t half
    if n == 0:
        return 0
    while n > 1:
        half = n >> 1
        base = base + half if base[half] < x else base
        n -= half
    return (base - v) + (base[0] < x)


cdef uint64_t _zero_run(int64_t a, int64_t b) noexcept nogil:
    """A 64-bit word with zeros exactly on bits ``a .. b - 1`` (``0 <= a < b <= 64``)."""
    cdef uint64_t high = ALL_ONES if b >= 64 else ((<uint64_t>1) << b) - 1
    cdef uint64_t low = ((<uint64_t>1) << a) - 1
    return ~(high & ~low)


def rank_table(const int32_t[::1] feature, const double[::1] threshold, Py_ssize_t n_features):
    """Per feature, its distinct thresholds ascending: ``(offsets, values)``, feature ``f``'s
    being ``values[offsets[f] : offsets[f + 1]]``; and each item's rank (int64), the position
    of its threshold among its feature's (int32). Features must lie in ``[0, n_features)``
    and no threshold may be NaN."""
    cdef Py_ssize_t n = feature.shape[0], i, f, a, b, j, total = 0
    if threshold.shape[0] != n:
        raise ValueError("rank_table: feature and threshold differ in length")
    for i in range(n):
        if feature[i] < 0 or feature[i] >= n_features:
            raise ValueError(f"rank_table: feature {feature[i]} out of range")
        if threshold[i] != threshold[i]:
            raise ValueError("rank_table: a NaN threshold")
    start_arr = np.zeros(n_features + 1, np.int64)
    cursor_arr = np.empty(n_features, np.int64)
    offsets_arr = np.zeros(n_features + 1, np.int64)
    buf_arr = np.empty(n, np.float64)
    rank_arr = np.empty(n, np.int32)
    cdef int64_t[::1] start = start_arr
    cdef int64_t[::1] cursor = cursor_arr
    cdef int64_t[::1] offsets = offsets_arr
    cdef double[::1] buf = buf_arr
    cdef int32_t[::1] rank = rank_arr
    with nogil:
        for i in range(n):
            start[feature[i] + 1] += 1
        for f in range(n_features):
            start[f + 1] += start[f]
            cursor[f] = start[f]
        for i in range(n):               # group by feature
            buf[cursor[feature[i]]] = threshold[i]
            cursor[feature[i]] += 1
        for f in range(n_features):      # sort each group, keep one of equal values, pack left
            a, b = start[f], start[f + 1]
            offsets[f] = total
            if b > a:
                _sort_doubles(&buf[a], b - a, 64)
                buf[total] = buf[a]
                j = total + 1
                for i in range(a + 1, b):
                    if buf[i] != buf[j - 1]:
                        buf[j] = buf[i]
                        j += 1
                total = j
        offsets[n_features] = total
        for i in range(n):
            f = feature[i]
            rank[i] = <int32_t>_lower_bound(&buf[offsets[f]], offsets[f + 1] - offsets[f],
                                            threshold[i])
    return offsets_arr, buf_arr[:total].copy(), rank_arr


cdef void _sort_merge(uint32_t* word, uint64_t* mask, int32_t* tree, int64_t* count,
                      const int64_t* start, Py_ssize_t n_groups) noexcept nogil:
    """Within each group ``start[g] .. start[g + 1]``, sort the entries by word (insertion
    sort: they come nearly sorted) and AND equal words into one, packed to the group's start;
    ``count[g]`` receives the entries left."""
    cdef Py_ssize_t g, i, j, a, b, k
    cdef uint32_t w
    cdef uint64_t m
    cdef int32_t t
    for g in range(n_groups):
        a, b = start[g], start[g + 1]
        for i in range(a + 1, b):
            w, m = word[i], mask[i]
            if tree != NULL:
                t = tree[i]
            j = i
            while j > a and word[j - 1] > w:
                word[j], mask[j] = word[j - 1], mask[j - 1]
                if tree != NULL:
                    tree[j] = tree[j - 1]
                j -= 1
            word[j], mask[j] = w, m
            if tree != NULL:
                tree[j] = t
        k = a
        for i in range(a, b):
            if k > a and word[k - 1] == word[i]:
                mask[k - 1] &= mask[i]
            else:
                word[k], mask[k] = word[i], mask[i]
                if tree != NULL:
                    tree[k] = tree[i]
                k += 1
        count[g] = k - a


cdef inline Py_ssize_t _first_bucket(const int64_t* poff, Py_ssize_t s) noexcept nogil:
    """The first bucket of segment ``s = 3 f + k``: its feature's distinct thresholds ``poff[f]
    .. poff[f + 1]`` get a bucket each in each of the feature's three segments."""
    cdef Py_ssize_t f = s // N_KINDS
    return N_KINDS * poff[f] + (s % N_KINDS) * (poff[f + 1] - poff[f])


def qs_numeric(const int64_t[::1] node_offset, const int32_t[::1] feature,
               const double[::1] threshold, const uint8_t[::1] default_left,
               const uint8_t[::1] kind, const int32_t[::1] lo, const int32_t[::1] mid,
               const int64_t[::1] tree_word_offsets, Py_ssize_t n_features):
    """The sorted segments and mask lists of QuickScorer's layout for a model whose nodes are
    all numerical (see ``qs_layout``): node ``g`` of the packed ensemble splits ``feature[g]``
    at ``threshold[g]``, is of segment kind ``kind[g]`` (0 .. 2), sends missing values left
    when ``default_left[g]``, and has the left leaves ``lo[g] .. mid[g] - 1`` of its tree
    (``_build.packed_leaf_ranges``).

    Returns ``(thresholds, words, masks, trees, segment_offsets, list_offsets, list_words,
    list_masks, used)`` with ``used[f]`` 1 when a node splits on ``f``."""
    cdef Py_ssize_t N = feature.shape[0], F = n_features, T = node_offset.shape[0] - 1
    cdef Py_ssize_t n_seg = N_KINDS * F, n_lists = N_KINDS * F
    if (threshold.shape[0] != N or default_left.shape[0] != N or kind.shape[0] != N
            or lo.shape[0] != N or mid.shape[0] != N or tree_word_offsets.shape[0] != T + 1
            or T < 0 or node_offset[T] != N):
        raise ValueError("qs_numeric: inconsistent node arrays")
    cdef Py_ssize_t g, t, i, s, f, b, e, pos
    for g in range(N):
        if kind[g] >= N_KINDS or not (0 <= lo[g] < mid[g]):
            raise ValueError(f"qs_numeric: node {g} has a bad kind or leaf range")
    pair_offsets, values_arr, rank_arr = rank_table(feature, threshold, F)
    cdef int64_t[::1] poff = pair_offsets
    cdef int32_t[::1] rank = rank_arr
    cdef Py_ssize_t P = poff[F]

    # buckets: segment 3 f + k owns ranks 0 .. P_f - 1 of feature f, in segment order
    cdef Py_ssize_t n_buckets = N_KINDS * P
    bstart_arr = np.zeros(n_buckets + 1, np.int64)
    bcount_arr = np.zeros(n_buckets, np.int64)
    lstart_arr = np.zeros(n_lists + 1, np.int64)
    lcount_arr = np.zeros(n_lists, np.int64)
    used_arr = np.zeros(F, np.uint8)
    cdef int64_t[::1] bstart = bstart_arr
    cdef int64_t[::1] bcount = bcount_arr
    cdef int64_t[::1] lstart = lstart_arr
    cdef int64_t[::1] lcount = lcount_arr
    cdef uint8_t[::1] used = used_arr
    cdef Py_ssize_t n_entries = 0, n_list_entries = 0, nw
    with nogil:
        for g in range(N):
            f = feature[g]
            used[f] = 1
            nw = (mid[g] - 1) // 64 - lo[g] // 64 + 1
            b = _first_bucket(&poff[0], N_KINDS * f + kind[g]) + rank[g]
            bstart[b + 1] += nw
            n_entries += nw
            if not default_left[g] and kind[g] != KIND_NONE:
                lstart[f + 1] += nw
                n_list_entries += nw
                if kind[g] == KIND_ZERO:
                    lstart[F + f + 1] += nw
                    n_list_entries += nw
        for b in range(n_buckets):
            bstart[b + 1] += bstart[b]
        for s in range(n_lists):
            lstart[s + 1] += lstart[s]
    # Every entry goes straight to its place in the output arrays (segment s's buckets start
    # s sentinels later than bstart says), is sorted and merged there, and the arrays are
    # packed in place: no second copy of the entries.
    cdef Py_ssize_t total = n_entries + n_seg
    thresholds_arr = np.empty(total, np.float64)
    words_arr = np.empty(total, np.uint32)
    masks_arr = np.empty(total, np.uint64)
    trees_arr = np.empty(total, np.int32)
    list_words_arr = np.empty(n_list_entries, np.uint32)
    list_masks_arr = np.empty(n_list_entries, np.uint64)
    segment_offsets_arr = np.zeros(n_seg + 1, np.int64)
    list_offsets_arr = np.zeros(n_lists + 1, np.int64)
    cdef double[::1] o_thr = thresholds_arr
    cdef uint32_t[::1] o_word = words_arr
    cdef uint64_t[::1] o_mask = masks_arr
    cdef int32_t[::1] o_tree = trees_arr
    cdef uint32_t[::1] ol_word = list_words_arr
    cdef uint64_t[::1] ol_mask = list_masks_arr
    cdef int64_t[::1] soff = segment_offsets_arr
    cdef int64_t[::1] loff = list_offsets_arr
    cdef double[::1] values = values_arr
    cdef int64_t w, a0, a1
    cdef uint64_t m
    cdef uint32_t word
    with nogil:
        t = 0
        for g in range(N):
            while g >= node_offset[t + 1]:
                t += 1
            f = feature[g]
            s = N_KINDS * f + kind[g]
            b = _first_bucket(&poff[0], s) + rank[g]
            for w in range(lo[g] // 64, (mid[g] - 1) // 64 + 1):
                a0 = lo[g] - 64 * w if lo[g] > 64 * w else 0
                a1 = mid[g] - 64 * w if mid[g] - 64 * w < 64 else 64
                m = _zero_run(a0, a1)
                word = <uint32_t>(tree_word_offsets[t] + w)
                pos = bstart[b] + s + bcount[b]
                bcount[b] += 1
                o_word[pos], o_mask[pos], o_tree[pos] = word, m, <int32_t>t
                if not default_left[g] and kind[g] != KIND_NONE:
                    pos = lstart[f] + lcount[f]
                    lcount[f] += 1
                    ol_word[pos], ol_mask[pos] = word, m
                    if kind[g] == KIND_ZERO:
                        pos = lstart[F + f] + lcount[F + f]
                        lcount[F + f] += 1
                        ol_word[pos], ol_mask[pos] = word, m
        for s in range(n_seg):
            a0 = _first_bucket(&poff[0], s)
            a1 = a0 + poff[s // N_KINDS + 1] - poff[s // N_KINDS]
            if a1 > a0:
                _sort_merge(&o_word[s], &o_mask[s], &o_tree[s], &bcount[a0], &bstart[a0],
                            a1 - a0)
        _sort_merge(&ol_word[0] if n_list_entries else NULL,
                    &ol_mask[0] if n_list_entries else NULL, NULL,
                    &lcount[0] if n_lists else NULL, &lstart[0], n_lists)
        # pack: each segment's buckets in rank order, then a sentinel (entries only move left)
        pos = 0
        for s in range(n_seg):
            f = s // N_KINDS
            a0 = _first_bucket(&poff[0], s)
            for b in range(a0, a0 + poff[f + 1] - poff[f]):
                for e in range(bstart[b] + s, bstart[b] + s + bcount[b]):
                    o_thr[pos] = values[poff[f] + b - a0]
                    o_word[pos] = o_word[e]
                    o_mask[pos] = o_mask[e]
                    o_tree[pos] = o_tree[e]
                    pos += 1
            o_thr[pos] = INFINITY
            o_word[pos] = 0
            o_mask[pos] = ALL_ONES
            o_tree[pos] = -1
            pos += 1
            soff[s + 1] = pos
        for s in range(n_lists):
            loff[s + 1] = loff[s] + lcount[s]
            for i in range(lcount[s]):
                ol_word[loff[s] + i] = ol_word[lstart[s] + i]
                ol_mask[loff[s] + i] = ol_mask[lstart[s] + i]
    # equal words merged: the arrays shrink in place (the views on them released first)
    cdef Py_ssize_t n_packed = soff[n_seg], n_list_packed = loff[n_lists]
    o_thr = None
    o_word = None
    o_mask = None
    o_tree = None
    ol_word = None
    ol_mask = None
    for arr in (thresholds_arr, words_arr, masks_arr, trees_arr):
        arr.resize(n_packed, refcheck=False)
    for arr in (list_words_arr, list_masks_arr):
        arr.resize(n_list_packed, refcheck=False)
    return (thresholds_arr, words_arr, masks_arr, trees_arr, segment_offsets_arr,
            list_offsets_arr, list_words_arr, list_masks_arr, used_arr)


def qs_split_blocks(const double[::1] thresholds, const uint32_t[::1] words,
                    const uint64_t[::1] masks, const int32_t[::1] trees,
                    const int64_t[::1] segment_offsets, const int64_t[::1] list_offsets,
                    const uint32_t[::1] list_words, const uint64_t[::1] list_masks,
                    const int64_t[::1] tree_word_offsets, const int64_t[::1] block_starts):
    """QuickScorer's layout of a model without categorical splits cut into the layouts of
    consecutive tree blocks (block ``b``: trees ``block_starts[b] .. block_starts[b + 1]``),
    each what ``qs_numeric`` gives for those trees alone: the same entries in the same order,
    words and trees counted from the block's first.

    Returns ``(entry_start, thresholds, words, masks, trees, segment_offsets, list_start,
    list_offsets, list_words, list_masks)``: block ``b``'s entries are ``entry_start[b] ..
    entry_start[b + 1]`` of the four entry arrays, its segment offsets (relative to its first
    entry) row ``b`` of ``segment_offsets``; its lists likewise."""
    cdef Py_ssize_t n_seg = segment_offsets.shape[0] - 1, n_lists = list_offsets.shape[0] - 1
    cdef Py_ssize_t T = tree_word_offsets.shape[0] - 1, nb = block_starts.shape[0] - 1
    cdef Py_ssize_t E = thresholds.shape[0], L = list_words.shape[0]
    if (words.shape[0] != E or masks.shape[0] != E or trees.shape[0] != E or n_seg < 0
            or segment_offsets[n_seg] != E or list_masks.shape[0] != L or n_lists < 0
            or list_offsets[n_lists] != L or T < 0 or nb < 1 or block_starts[0] != 0
            or block_starts[nb] != T):
        raise ValueError("qs_split_blocks: inconsistent layout arrays")
    cdef Py_ssize_t b, s, e, t, k, pos
    for b in range(nb):
        if block_starts[b + 1] <= block_starts[b]:
            raise ValueError("qs_split_blocks: an empty tree block")
    cdef Py_ssize_t W = tree_word_offsets[T]
    for e in range(E):
        if trees[e] >= T or (trees[e] >= 0 and words[e] >= W):
            raise ValueError("qs_split_blocks: an entry out of range")
    for e in range(L):
        if list_words[e] >= W:
            raise ValueError("qs_split_blocks: a list entry out of range")
    block_of_tree_arr = np.empty(max(T, 1), np.int64)
    block_of_word_arr = np.empty(max(W, 1), np.int64)
    seg_arr = np.zeros((nb, n_seg + 1), np.int64)
    lst_arr = np.zeros((nb, n_lists + 1), np.int64)
    entry_start_arr = np.zeros(nb + 1, np.int64)
    list_start_arr = np.zeros(nb + 1, np.int64)
    cdef int64_t[::1] block_of_tree = block_of_tree_arr
    cdef int64_t[::1] block_of_word = block_of_word_arr
    cdef int64_t[:, ::1] seg = seg_arr
    cdef int64_t[:, ::1] lst = lst_arr
    cdef int64_t[::1] entry_start = entry_start_arr
    cdef int64_t[::1] list_start = list_start_arr
    with nogil:
        for b in range(nb):
            for t in range(block_starts[b], block_starts[b + 1]):
                block_of_tree[t] = b
                for k in range(tree_word_offsets[t], tree_word_offsets[t + 1]):
                    block_of_word[k] = b
        # counts per (block, segment) and (block, list), one sentinel per segment
        for s in range(n_seg):
            for b in range(nb):
                seg[b, s + 1] = 1
            for e in range(segment_offsets[s], segment_offsets[s + 1]):
                if trees[e] >= 0:
                    seg[block_of_tree[trees[e]], s + 1] += 1
        for s in range(n_lists):
            for e in range(list_offsets[s], list_offsets[s + 1]):
                lst[block_of_word[list_words[e]], s + 1] += 1
        for b in range(nb):
            for s in range(n_seg):
                seg[b, s + 1] += seg[b, s]
            for s in range(n_lists):
                lst[b, s + 1] += lst[b, s]
            entry_start[b + 1] = entry_start[b] + seg[b, n_seg]
            list_start[b + 1] = list_start[b] + lst[b, n_lists]
    cdef Py_ssize_t total = entry_start[nb], ltotal = list_start[nb]
    o_thr_arr = np.empty(total, np.float64)
    o_word_arr = np.empty(total, np.uint32)
    o_mask_arr = np.empty(total, np.uint64)
    o_tree_arr = np.empty(total, np.int32)
    ol_word_arr = np.empty(ltotal, np.uint32)
    ol_mask_arr = np.empty(ltotal, np.uint64)
    cursor_arr = np.empty(nb, np.int64)
    cdef double[::1] o_thr = o_thr_arr
    cdef uint32_t[::1] o_word = o_word_arr
    cdef uint64_t[::1] o_mask = o_mask_arr
    cdef int32_t[::1] o_tree = o_tree_arr
    cdef uint32_t[::1] ol_word = ol_word_arr
    cdef uint64_t[::1] ol_mask = ol_mask_arr
    cdef int64_t[::1] cursor = cursor_arr
    with nogil:
        for s in range(n_seg):
            for b in range(nb):
                cursor[b] = entry_start[b] + seg[b, s]
            for e in range(segment_offsets[s], segment_offsets[s + 1]):
                if trees[e] < 0:
                    continue
                t = trees[e]
                b = block_of_tree[t]
                pos = cursor[b]
                cursor[b] += 1
                o_thr[pos] = thresholds[e]
                o_word[pos] = <uint32_t>(words[e] - tree_word_offsets[block_starts[b]])
                o_mask[pos] = masks[e]
                o_tree[pos] = <int32_t>(t - block_starts[b])
            for b in range(nb):          # the block's sentinel closing segment s
                pos = cursor[b]
                o_thr[pos] = INFINITY
                o_word[pos] = 0
                o_mask[pos] = ALL_ONES
                o_tree[pos] = -1
        for s in range(n_lists):
            for b in range(nb):
                cursor[b] = list_start[b] + lst[b, s]
            for e in range(list_offsets[s], list_offsets[s + 1]):
                b = block_of_word[list_words[e]]
                pos = cursor[b]
                cursor[b] += 1
                ol_word[pos] = <uint32_t>(list_words[e] - tree_word_offsets[block_starts[b]])
                ol_mask[pos] = list_masks[e]
    return (entry_start_arr, o_thr_arr, o_word_arr, o_mask_arr, o_tree_arr, seg_arr,
            list_start_arr, lst_arr, ol_word_arr, ol_mask_arr)


def segment_rank_table(const double[::1] thresholds, const int64_t[::1] segment_offsets,
                       Py_ssize_t n_features):
    """QuickScorer's segments ``3 f + k`` (each ascending, closed by a sentinel) merged per
    feature: ``(offsets, values, rank)``, feature ``f``'s distinct thresholds being
    ``values[offsets[f] : offsets[f + 1]]`` and ``rank[e]`` the position of entry ``e``'s
    threshold among them (-1 at sentinels)."""
    cdef Py_ssize_t F = n_features, E = thresholds.shape[0]
    if segment_offsets.shape[0] != N_KINDS * F + 1 or segment_offsets[N_KINDS * F] != E:
        raise ValueError("segment_rank_table: inconsistent layout arrays")
    cdef Py_ssize_t s
    for s in range(N_KINDS * F):
        if segment_offsets[s + 1] <= segment_offsets[s]:
            raise ValueError("segment_rank_table: a segment without its sentinel")
    offsets_arr = np.zeros(F + 1, np.int64)
    values_arr = np.empty(E, np.float64)
    rank_arr = np.full(E, -1, np.int32)
    cdef int64_t[::1] offsets = offsets_arr
    cdef double[::1] values = values_arr
    cdef int32_t[::1] rank = rank_arr
    cdef Py_ssize_t f, k, total = 0
    cdef Py_ssize_t head[N_KINDS]
    cdef Py_ssize_t end[N_KINDS]
    cdef double best
    cdef bint found
    with nogil:
        for f in range(F):
            offsets[f] = total
            for k in range(N_KINDS):
                head[k] = segment_offsets[N_KINDS * f + k]
                end[k] = segment_offsets[N_KINDS * f + k + 1] - 1   # the sentinel
            while True:
                found = False
                for k in range(N_KINDS):
                    if head[k] < end[k] and (not found or thresholds[head[k]] < best):
                        best = thresholds[head[k]]
                        found = True
                if not found:
                    break
                values[total] = best
                for k in range(N_KINDS):
                    while head[k] < end[k] and thresholds[head[k]] == best:
                        rank[head[k]] = <int32_t>(total - offsets[f])
                        head[k] += 1
                total += 1
        offsets[F] = total
    return offsets_arr, values_arr[:total].copy(), rank_arr


def rs_entries(const uint32_t[::1] words, const uint64_t[::1] masks, const int32_t[::1] trees,
               const int32_t[::1] rank, const int64_t[::1] segment_offsets,
               const int64_t[::1] tree_word_offsets, const int64_t[::1] tree_byte_offsets,
               const int64_t[::1] block_starts, Py_ssize_t n_features):
    """RapidScorer's entries and segments (``quickscorer.algorithms.rapidscorer.layout``) from QuickScorer's arrays over
    ``n_features`` segment features (``rapidscorer.ranks.fold_halves``) whose ranks are below 255:
    every 64-bit mask entry becomes one entry per byte it changes, grouped by (tree block,
    segment), each group in QuickScorer's order (by rank) and closed by a sentinel.

    Returns ``(entries, segments, block_segments)``."""
    cdef Py_ssize_t n_seg = N_KINDS * n_features
    cdef Py_ssize_t E = words.shape[0], T = tree_word_offsets.shape[0] - 1
    cdef Py_ssize_t nb = block_starts.shape[0] - 1
    if (masks.shape[0] != E or trees.shape[0] != E or rank.shape[0] != E
            or segment_offsets.shape[0] != n_seg + 1 or segment_offsets[n_seg] != E
            or tree_byte_offsets.shape[0] != T + 1 or T < 0 or nb < 1
            or block_starts[0] != 0 or block_starts[nb] != T):
        raise ValueError("rs_entries: inconsistent layout arrays")
    cdef Py_ssize_t W = tree_word_offsets[T], e, s, b, t, j, k, n_keys, key
    for b in range(nb):
        if block_starts[b + 1] <= block_starts[b]:
            raise ValueError("rs_entries: an empty tree block")
        if (tree_byte_offsets[block_starts[b + 1]] - tree_byte_offsets[block_starts[b]]
                > MAX_BLOCK_ROWS):
            raise ValueError(f"rs_entries: a tree block of more than {MAX_BLOCK_ROWS} byte rows")
    for e in range(E):
        if trees[e] >= T or (trees[e] >= 0 and (words[e] >= W or not 0 <= rank[e] < 255)):
            raise ValueError("rs_entries: an entry out of range")
    block_of_tree_arr = np.empty(max(T, 1), np.int64)
    key_count_arr = np.zeros(nb * n_seg, np.int64)
    cdef int64_t[::1] block_of_tree = block_of_tree_arr
    cdef int64_t[::1] key_count = key_count_arr
    cdef uint64_t m
    cdef int64_t n_entries = 0
    with nogil:
        for b in range(nb):
            for t in range(block_starts[b], block_starts[b + 1]):
                block_of_tree[t] = b
        for s in range(n_seg):
            for e in range(segment_offsets[s], segment_offsets[s + 1]):
                if trees[e] >= 0:
                    m = masks[e]
                    for j in range(8):
                        if ((m >> (8 * j)) & 0xFF) != 0xFF:
                            key_count[block_of_tree[trees[e]] * n_seg + s] += 1
        n_keys = 0
        for key in range(nb * n_seg):
            if key_count[key]:
                n_keys += 1
                n_entries += key_count[key] + 1
    if n_entries >= 2**32:
        raise ValueError("the model has too many nodes for the rapidscorer layout")
    entries_arr = np.empty(n_entries, np.uint32)
    segments_arr = np.empty(n_keys, np.uint64)
    block_segments_arr = np.zeros(nb + 1, np.int64)
    cursor_arr = np.empty(nb * n_seg, np.int64)
    cdef uint32_t[::1] entries = entries_arr
    cdef uint64_t[::1] segments = segments_arr
    cdef int64_t[::1] block_segments = block_segments_arr
    cdef int64_t[::1] cursor = cursor_arr
    cdef int64_t wbyte, start = 0
    with nogil:
        # groups in (block, segment) order, each followed by its sentinel
        k = 0
        for b in range(nb):
            for s in range(n_seg):
                key = b * n_seg + s
                if key_count[key]:
                    cursor[key] = start
                    segments[k] = ((<uint64_t>s) << 32) | <uint64_t>start
                    k += 1
                    start += key_count[key]
                    entries[start] = ((<uint32_t>(SENTINEL_RANK ^ 0x80)) << 16) | (<uint32_t>0xFF << 24)
                    start += 1
            block_segments[b + 1] = k
        for s in range(n_seg):
            for e in range(segment_offsets[s], segment_offsets[s + 1]):
                t = trees[e]
                if t < 0:
                    continue
                b = block_of_tree[t]
                key = b * n_seg + s
                m = masks[e]
                wbyte = (tree_byte_offsets[t] - tree_byte_offsets[block_starts[b]]
                         + (words[e] - tree_word_offsets[t]) * 8)
                for j in range(8):
                    if ((m >> (8 * j)) & 0xFF) != 0xFF:
                        entries[cursor[key]] = (
                            <uint32_t>(wbyte + j) | ((<uint32_t>(rank[e] ^ 0x80)) << 16)
                            | (<uint32_t>((m >> (8 * j)) & 0xFF) << 24))
                        cursor[key] += 1
    return entries_arr, segments_arr, block_segments_arr


def rs_fold_halves(const uint32_t[::1] words, const uint64_t[::1] masks,
                   const int32_t[::1] trees, const int64_t[::1] segment_offsets,
                   const int32_t[::1] half_rank, const int64_t[::1] half_offsets,
                   const int32_t[::1] half_to_rank, const int64_t[::1] slot_base,
                   Py_ssize_t n_features):
    """``rapidscorer.ranks.fold_halves``'s entries in two counting passes: QuickScorer's arrays over
    ``4 F`` half-features (``f + F r``: the nodes of ``f`` of variant ``r``, bit 0 mirrored,
    bit 1 missing values sent to the side the mask clears), entry ``e``'s threshold at
    position ``half_rank[e]`` of its half-feature's table and that position's rank among all
    of ``f``'s thresholds ``half_to_rank[half_offsets[h] + half_rank[e]]``, become the arrays
    over ``4 S`` segment features (``S = slot_base[F]``): segment ``3 (slot_base[f] +
    rank // 255 + S r) + k``, threshold index ``rank % 255`` or, mirrored, ``254 - rank %
    255``, each segment in its source segment's order and closed by a sentinel.

    Returns ``(words, masks, trees, segment_offsets, slot_rank)`` (the thresholds are not
    needed past their ranks)."""
    cdef Py_ssize_t F = n_features, E = words.shape[0]
    cdef Py_ssize_t n_src = N_KINDS * N_HALVES * F
    if (masks.shape[0] != E or trees.shape[0] != E
            or half_rank.shape[0] != E or segment_offsets.shape[0] != n_src + 1
            or segment_offsets[n_src] != E or half_offsets.shape[0] != N_HALVES * F + 1
            or half_offsets[N_HALVES * F] != half_to_rank.shape[0]
            or slot_base.shape[0] != F + 1):
        raise ValueError("rs_fold_halves: inconsistent layout arrays")
    cdef Py_ssize_t S = slot_base[F], n_seg = N_KINDS * N_HALVES * S
    cdef Py_ssize_t s, e, h, f, k, v, ns, pos, total = 0
    cdef int64_t r
    offsets_arr = np.zeros(n_seg + 1, np.int64)
    cursor_arr = np.zeros(n_seg, np.int64)
    cdef int64_t[::1] offsets = offsets_arr
    cdef int64_t[::1] cursor = cursor_arr
    cdef Py_ssize_t sentinel = segment_offsets[1] - 1
    # first pass (checking every entry): the entries of each new segment
    for s in range(n_src):
        if segment_offsets[s + 1] <= segment_offsets[s]:
            raise ValueError("rs_fold_halves: a segment without its sentinel")
        h = s // N_KINDS
        k = s % N_KINDS
        v = h // F
        f = h - F * v
        for e in range(segment_offsets[s], segment_offsets[s + 1] - 1):
            if not 0 <= half_rank[e] < half_offsets[h + 1] - half_offsets[h]:
                raise ValueError("rs_fold_halves: an entry's rank is out of range")
            r = half_to_rank[half_offsets[h] + half_rank[e]]
            if not 0 <= r < MAX_THR_SLOT * (slot_base[f + 1] - slot_base[f]):
                raise ValueError("rs_fold_halves: a rank beyond its feature's slots")
            cursor[N_KINDS * (slot_base[f] + r // MAX_THR_SLOT + S * v) + k] += 1
    with nogil:
        for ns in range(n_seg):
            offsets[ns] = total
            total += cursor[ns] + 1          # and its sentinel
            cursor[ns] = offsets[ns]
        offsets[n_seg] = total
    words_arr = np.empty(total, np.uint32)
    masks_arr = np.empty(total, np.uint64)
    trees_arr = np.empty(total, np.int32)
    rank_arr = np.empty(total, np.int32)
    cdef uint32_t[::1] words_out = words_arr
    cdef uint64_t[::1] masks_out = masks_arr
    cdef int32_t[::1] trees_out = trees_arr
    cdef int32_t[::1] rank_out = rank_arr
    with nogil:
        for s in range(n_src):
            h = s // N_KINDS
            k = s % N_KINDS
            v = h // F
            f = h - F * v
            for e in range(segment_offsets[s], segment_offsets[s + 1] - 1):
                r = half_to_rank[half_offsets[h] + half_rank[e]]
                ns = N_KINDS * (slot_base[f] + r // MAX_THR_SLOT + S * v) + k
                pos = cursor[ns]
                cursor[ns] += 1
                words_out[pos] = words[e]
                masks_out[pos] = masks[e]
                trees_out[pos] = trees[e]
                rank_out[pos] = <int32_t>(MAX_THR_SLOT - 1 - r % MAX_THR_SLOT if v & 1
                                          else r % MAX_THR_SLOT)
        for ns in range(n_seg):
            pos = offsets[ns + 1] - 1
            words_out[pos] = words[sentinel]
            masks_out[pos] = masks[sentinel]
            trees_out[pos] = trees[sentinel]
            rank_out[pos] = -1
    return words_arr, masks_arr, trees_arr, offsets_arr, rank_arr


def rs_union_ranks(const int64_t[::1] half_offsets, const double[::1] half_values,
                   Py_ssize_t n_features):
    """The union per feature of the distinct thresholds of its ``N_HALVES`` half-features
    (``segment_rank_table`` over ``4 F``: ``f + F r``, ascending, their thresholds negated
    where ``r`` is odd (mirrored nodes), so ascending ``-t`` there), merged. Returns
    ``(offsets, values, half_to_rank)``: feature ``f``'s thresholds ``values[offsets[f] :
    offsets[f + 1]]`` ascending, and for each position of a half-table its threshold's rank
    among them (int32)."""
    cdef Py_ssize_t F = n_features
    if (half_offsets.shape[0] != N_HALVES * F + 1
            or half_offsets[N_HALVES * F] != half_values.shape[0]):
        raise ValueError("rs_union_ranks: inconsistent tables")
    cdef Py_ssize_t H = half_values.shape[0]
    offsets_arr = np.zeros(F + 1, np.int64)
    values_arr = np.empty(H, np.float64)
    to_rank_arr = np.empty(H, np.int32)
    cdef int64_t[::1] offsets = offsets_arr
    cdef double[::1] values = values_arr
    cdef int32_t[::1] to_rank = to_rank_arr
    cdef Py_ssize_t f, q, h, total = 0, n
    cdef Py_ssize_t at[N_HALVES]      # each run's next position (mirrored: from its end)
    cdef Py_ssize_t stop[N_HALVES]
    cdef double v, x
    cdef bint found
    with nogil:
        for f in range(F):
            offsets[f] = total
            for q in range(N_HALVES):
                h = f + F * q
                if q & 1:
                    at[q] = half_offsets[h + 1] - 1
                    stop[q] = half_offsets[h] - 1
                else:
                    at[q] = half_offsets[h]
                    stop[q] = half_offsets[h + 1]
            n = 0
            while True:
                found = False
                for q in range(N_HALVES):
                    if at[q] != stop[q]:
                        x = -half_values[at[q]] if q & 1 else half_values[at[q]]
                        if not found or x < v:
                            v = x
                            found = True
                if not found:
                    break
                values[total] = v
                for q in range(N_HALVES):
                    if q & 1:
                        while at[q] != stop[q] and -half_values[at[q]] == v:
                            to_rank[at[q]] = <int32_t>n
                            at[q] -= 1
                    else:
                        while at[q] != stop[q] and half_values[at[q]] == v:
                            to_rank[at[q]] = <int32_t>n
                            at[q] += 1
                n += 1
                total += 1
        offsets[F] = total
    return offsets_arr, values_arr[:total].copy(), to_rank_arr
