# cython: language_level=3
"""The trees of a LightGBM text model, parsed in C straight into the flat canonical arrays of
``PackedTrees`` (``quickscorer/importers/lightgbm.py`` calls it; its Python parser stays the
reference and the source of every error message).

``parse_trees`` accepts exactly the trees the Python parser accepts, or declines (returns
None) and lets the Python parser read the model: for a model it would refuse (the Python
parser then names the problem), and for what this fast path does not handle (categorical
splits, linear trees, bytes outside printable ASCII in the tree section). ``tests/
test_lightgbm_fast.py`` compares both paths on every model and on damaged ones.
"""
import numpy as np

cimport numpy as cnp
from libc.stdint cimport INT64_MAX, int32_t, int64_t, uint8_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcmp, memcpy
from libc.math cimport INFINITY, isfinite, isinf

cnp.import_array()
pb_c_numeric_init()     # numbers read as in the "C" locale, whatever locale the program sets

cdef enum:
    MAX_KEYS = 64

from quickscorer.ir._build cimport (owning_array, pb_buf, pb_grow, pb_c_numeric_init, pb_release_pages,
                     pb_strtod_c)

cdef enum:
    # with release_read, the bytes read are given back in steps of this many (a multiple of
    # every page size)
    RELEASE_STEP = 1 << 20


cdef inline bint is_space(char c) noexcept nogil:
    return c == c' ' or c == c'\t' or c == c'\r' or c == c'\n' or c == c'\v' or c == c'\f'


cdef struct Span:
    const char* p
    Py_ssize_t n


cdef inline Span strip(Span s) noexcept nogil:
    while s.n > 0 and is_space(s.p[0]):
        s.p += 1
        s.n -= 1
    while s.n > 0 and is_space(s.p[s.n - 1]):
        s.n -= 1
    return s


cdef inline bint span_is(Span s, const char* word, Py_ssize_t n) noexcept nogil:
    return s.n == n and memcmp(s.p, word, n) == 0


cdef inline bint span_starts(Span s, const char* word, Py_ssize_t n) noexcept nogil:
    return s.n >= n and memcmp(s.p, word, n) == 0


cdef bint ends_trees(Span line) noexcept nogil:
    """'end of trees' or a section that follows the trees (stripped line)."""
    cdef Span s = strip(line)
    return (span_is(s, b"end of trees", 12) or span_starts(s, b"feature importances:", 20)
            or span_starts(s, b"feature_importances:", 20) or span_starts(s, b"parameters:", 11)
            or span_starts(s, b"pandas_categorical:", 19))


cdef int parse_int(Span tok, int64_t* out) noexcept nogil:
    """[+-]?\\d{1,18} exactly (the Python parser's _INT_TOKEN)."""
    cdef Py_ssize_t i = 0
    cdef int64_t v = 0
    cdef bint neg = False
    if tok.n > 0 and (tok.p[0] == c'+' or tok.p[0] == c'-'):
        neg = tok.p[0] == c'-'
        i = 1
    if tok.n - i < 1 or tok.n - i > 18:
        return -1
    while i < tok.n:
        if tok.p[i] < c'0' or tok.p[i] > c'9':
            return -1
        v = v * 10 + (tok.p[i] - c'0')
        i += 1
    out[0] = -v if neg else v
    return 0


cdef int parse_float(Span tok, bint allow_inf, double* out) noexcept nogil:
    """A decimal number as Python's float() reads it ([+-]?(d+(.d*)?|.d+)([eE][+-]?d+)?),
    or [+-]?inf where allowed; a literal that overflows is refused."""
    cdef Py_ssize_t i = 0, digits = 0
    cdef char buf[64]
    cdef char* end = NULL
    if tok.n > 0 and (tok.p[0] == c'+' or tok.p[0] == c'-'):
        i = 1
    if allow_inf and tok.n - i == 3 and memcmp(tok.p + i, b"inf", 3) == 0:
        out[0] = -INFINITY if tok.p[0] == c'-' else INFINITY
        return 0
    while i < tok.n and c'0' <= tok.p[i] <= c'9':
        i += 1
        digits += 1
    if i < tok.n and tok.p[i] == c'.':
        i += 1
        while i < tok.n and c'0' <= tok.p[i] <= c'9':
            i += 1
            digits += 1
    if digits == 0:
        return -1
    if i < tok.n and (tok.p[i] == c'e' or tok.p[i] == c'E'):
        i += 1
        if i < tok.n and (tok.p[i] == c'+' or tok.p[i] == c'-'):
            i += 1
        digits = 0
        while i < tok.n and c'0' <= tok.p[i] <= c'9':
            i += 1
            digits += 1
        if digits == 0:
            return -1
    if i != tok.n or tok.n >= 64:
        return -1
    memcpy(buf, tok.p, tok.n)
    buf[tok.n] = 0
    out[0] = pb_strtod_c(buf, &end)
    if end != buf + tok.n or isinf(out[0]):
        return -1     # (a strtod that stopped early: the Python parser reads the model)
    return 0


cdef inline Span peek_line(Span rest) noexcept nogil:
    """The next line of ``rest``, without its newline and trailing carriage returns (``.n``
    of the raw line is recovered by :func:`skip_line`)."""
    cdef Span line
    line.p = rest.p
    line.n = 0
    while line.n < rest.n and rest.p[line.n] != c'\n':
        line.n += 1
    return line


cdef inline void skip_line(Span* rest, Span line) noexcept nogil:
    """Advance ``rest`` past ``line`` (as peek_line returned it) and its newline."""
    cdef Py_ssize_t ln = line.n + 1 if line.n < rest.n else line.n
    rest.p += ln
    rest.n -= ln


cdef inline Span no_cr(Span line) noexcept nogil:
    while line.n > 0 and line.p[line.n - 1] == c'\r':
        line.n -= 1
    return line


cdef Py_ssize_t next_token(Span* rest, Span* tok) noexcept nogil:
    """Cut the next whitespace-separated token off ``rest``; 0 when none is left."""
    while rest.n > 0 and is_space(rest.p[0]):
        rest.p += 1
        rest.n -= 1
    if rest.n == 0:
        return 0
    tok.p = rest.p
    tok.n = 0
    while rest.n > 0 and not is_space(rest.p[0]):
        rest.p += 1
        rest.n -= 1
        tok.n += 1
    return 1


cdef int ints_field(Span value, int64_t n, int64_t lo, int64_t hi, int64_t* out) noexcept nogil:
    cdef Span tok
    cdef int64_t k = 0, v
    while next_token(&value, &tok):
        if k >= n or parse_int(tok, &v) or v < lo or v > hi:
            return -1
        out[k] = v
        k += 1
    return 0 if k == n else -1


cdef int floats_field(Span value, int64_t n, bint allow_inf, double* out) noexcept nogil:
    cdef Span tok
    cdef int64_t k = 0
    while next_token(&value, &tok):
        if k >= n or parse_float(tok, allow_inf, &out[k]):
            return -1
        k += 1
    return 0 if k == n else -1


cdef int scalar_int(Span value, int64_t lo, int64_t hi, int64_t* out) noexcept nogil:
    value = strip(value)
    if parse_int(value, out) or out[0] < lo or out[0] > hi:
        return -1
    return 0


cdef enum:
    F_NUM_LEAVES = 0
    F_NUM_CAT = 1
    F_IS_LINEAR = 2
    F_LEAF_VALUE = 3
    F_SPLIT_FEATURE = 4
    F_THRESHOLD = 5
    F_DECISION_TYPE = 6
    F_LEFT_CHILD = 7
    F_RIGHT_CHILD = 8
    F_LEAF_COUNT = 9
    F_INTERNAL_COUNT = 10
    N_FIELDS = 11

cdef const char* FIELD_NAMES[N_FIELDS]
FIELD_NAMES[:] = [b"num_leaves", b"num_cat", b"is_linear", b"leaf_value", b"split_feature",
                  b"threshold", b"decision_type", b"left_child", b"right_child",
                  b"leaf_count", b"internal_count"]
cdef Py_ssize_t FIELD_LENGTHS[N_FIELDS]
FIELD_LENGTHS[:] = [10, 7, 9, 10, 13, 9, 13, 10, 11, 10, 14]
# the other fields a tree may hold (training statistics, the shrinkage already applied to the
# leaf values, the categorical and linear fields of trees this parser declines); a field in
# neither list declines the model, whose reference parser names it
cdef enum:
    N_OTHER = 11
cdef const char* OTHER_NAMES[N_OTHER]
OTHER_NAMES[:] = [b"split_gain", b"leaf_weight", b"internal_value", b"internal_weight",
                  b"shrinkage", b"cat_boundaries", b"cat_threshold", b"leaf_const",
                  b"num_features", b"leaf_features", b"leaf_coeff"]
cdef Py_ssize_t OTHER_LENGTHS[N_OTHER]
OTHER_LENGTHS[:] = [10, 11, 14, 15, 9, 14, 13, 10, 12, 13, 10]


cdef struct Tmp:
    int64_t* lc
    int64_t* rc
    int64_t* ints
    double* thr
    double* lv
    int64_t* dec
    int64_t* feat
    int64_t* lcnt       # leaf_count, internal_count (the covers), where the tree gives them
    int64_t* icnt
    bint has_cover
    bint all_cover      # every tree so far gave them
    int64_t* order
    int64_t* first
    int64_t* count
    uint8_t* seen
    int64_t cap


cdef int tmp_reserve(Tmp* t, int64_t leaves) noexcept nogil:
    if leaves <= t.cap:
        return 0
    cdef int64_t k = 2 * leaves
    free(t.lc); free(t.rc); free(t.ints); free(t.thr); free(t.lv); free(t.dec); free(t.feat)
    free(t.order); free(t.first); free(t.count); free(t.seen); free(t.lcnt); free(t.icnt)
    t.lc = <int64_t*>malloc(leaves * 8)
    t.rc = <int64_t*>malloc(leaves * 8)
    t.ints = <int64_t*>malloc(leaves * 8)
    t.thr = <double*>malloc(leaves * 8)
    t.lv = <double*>malloc(leaves * 8)
    t.dec = <int64_t*>malloc(leaves * 8)
    t.feat = <int64_t*>malloc(leaves * 8)
    t.lcnt = <int64_t*>malloc(leaves * 8)
    t.icnt = <int64_t*>malloc(leaves * 8)
    t.order = <int64_t*>malloc(k * 8)
    t.first = <int64_t*>malloc(k * 8)
    t.count = <int64_t*>malloc(k * 8)
    t.seen = <uint8_t*>malloc(k)
    t.cap = leaves
    if (t.lc == NULL or t.rc == NULL or t.ints == NULL or t.thr == NULL or t.lv == NULL
            or t.dec == NULL or t.feat == NULL or t.order == NULL or t.first == NULL
            or t.count == NULL or t.seen == NULL or t.lcnt == NULL or t.icnt == NULL):
        return -1
    return 0


cdef void tmp_free(Tmp* t) noexcept nogil:
    free(t.lc); free(t.rc); free(t.ints); free(t.thr); free(t.lv); free(t.dec); free(t.feat)
    free(t.order); free(t.first); free(t.count); free(t.seen); free(t.lcnt); free(t.icnt)


# the output columns, in this order
cdef enum:
    C_FEATURE = 0
    C_THRESHOLD = 1
    C_LEFT = 2
    C_RIGHT = 3
    C_DEFAULT_LEFT = 4
    C_MISSING = 5
    C_NODE_SRC = 6
    C_LEAF_VALUE = 7
    C_LEAF_SRC = 8
    C_NODE_COVER = 9
    C_LEAF_COVER = 10
    C_NODE_OFFSET = 11
    C_LEAF_OFFSET = 12
    N_COLS = 13
    N_NODE_COLS = 7     # C_FEATURE .. C_NODE_SRC: one entry per internal node
_ITEMS = (4, 8, 4, 4, 1, 1, 4, 8, 4, 8, 8, 8, 8)
_TYPENUMS = (cnp.NPY_INT32, cnp.NPY_FLOAT64, cnp.NPY_INT32, cnp.NPY_INT32, cnp.NPY_BOOL,
             cnp.NPY_UINT8, cnp.NPY_INT32, cnp.NPY_FLOAT64, cnp.NPY_INT32, cnp.NPY_FLOAT64,
             cnp.NPY_FLOAT64, cnp.NPY_INT64, cnp.NPY_INT64)
_NAMES = ("feature", "threshold", "left", "right", "default_left", "missing_type",
          "node_source_id", "leaf_value", "leaf_source_id", "node_cover", "leaf_cover",
          "node_offset", "leaf_offset")


cdef int emit_tree(Tmp* t, int64_t num_leaves, pb_buf* cols) noexcept nogil:
    """Validate one tree's shape (one tree from the root, every node reached once) and append
    it in canonical numbering: internal nodes breadth-first, leaves left to right."""
    cdef int64_t m = num_leaves - 1, k = 2 * num_leaves - 1
    cdef int64_t head = 0, tail = 1, i, n, c, side, j, src, leaf
    cdef int64_t node_base = cols[C_FEATURE].n, leaf_base = cols[C_LEAF_VALUE].n
    # source node s: internal s < m, leaf m + j; children refs c >= 0 internal, ~c leaf
    for i in range(k):
        t.seen[i] = 0
    t.order[0] = 0
    t.seen[0] = 1
    while head < tail:
        n = t.order[head]
        head += 1
        if n >= m:
            continue
        for side in range(2):
            c = t.lc[n] if side == 0 else t.rc[n]
            c = c if c >= 0 else m + ~c
            if t.seen[c]:
                return -1
            t.seen[c] = 1
            t.order[tail] = c
            tail += 1
    if tail != k:
        return -1
    for i in range(k - 1, -1, -1):
        n = t.order[i]
        if n >= m:
            t.count[n] = 1
        else:
            c = t.lc[n]
            src = t.rc[n]
            t.count[n] = (t.count[c if c >= 0 else m + ~c]
                          + t.count[src if src >= 0 else m + ~src])
    t.first[0] = 0
    # canonical index of each internal source node: its rank in breadth-first order
    j = 0
    for i in range(k):
        n = t.order[i]
        if n < m:
            t.ints[n] = j
            j += 1
            c = t.lc[n] if t.lc[n] >= 0 else m + ~t.lc[n]
            src = t.rc[n] if t.rc[n] >= 0 else m + ~t.rc[n]
            t.first[c] = t.first[n]
            t.first[src] = t.first[n] + t.count[c]
    for side in range(N_COLS - 2):
        if pb_grow(&cols[side], <size_t>(m if side < N_NODE_COLS or side == C_NODE_COVER
                                              else num_leaves)):
            return -2
    for i in range(k):
        n = t.order[i]
        if n >= m:
            continue
        j = node_base + t.ints[n]
        (<int32_t*>cols[C_FEATURE].p)[j] = <int32_t>t.feat[n]
        (<double*>cols[C_THRESHOLD].p)[j] = t.thr[n]
        for side in range(2):
            c = t.lc[n] if side == 0 else t.rc[n]
            if c >= 0:
                c = t.ints[c]
            else:
                c = ~t.first[m + ~c]
            (<int32_t*>cols[C_LEFT + side].p)[j] = <int32_t>c
        (<uint8_t*>cols[C_DEFAULT_LEFT].p)[j] = (t.dec[n] & 2) != 0
        (<uint8_t*>cols[C_MISSING].p)[j] = <uint8_t>((t.dec[n] >> 2) & 3)
        (<int32_t*>cols[C_NODE_SRC].p)[j] = <int32_t>n
        (<double*>cols[C_NODE_COVER].p)[j] = <double>t.icnt[n] if t.has_cover else 0.0
    for leaf in range(num_leaves):
        j = leaf_base + t.first[m + leaf]
        (<double*>cols[C_LEAF_VALUE].p)[j] = t.lv[leaf]
        (<int32_t*>cols[C_LEAF_SRC].p)[j] = <int32_t>leaf
        (<double*>cols[C_LEAF_COVER].p)[j] = <double>t.lcnt[leaf] if t.has_cover else 0.0
    for side in range(N_COLS - 2):
        cols[side].n += <size_t>(m if side < N_NODE_COLS or side == C_NODE_COVER
                                 else num_leaves)
    if pb_grow(&cols[C_NODE_OFFSET], 1) or pb_grow(&cols[C_LEAF_OFFSET], 1):
        return -2
    (<int64_t*>cols[C_NODE_OFFSET].p)[cols[C_NODE_OFFSET].n] = node_base + m
    (<int64_t*>cols[C_LEAF_OFFSET].p)[cols[C_LEAF_OFFSET].n] = leaf_base + num_leaves
    cols[C_NODE_OFFSET].n += 1
    cols[C_LEAF_OFFSET].n += 1
    return 0


cdef int parse_tree(Span* rest, int64_t n_features, int64_t max_leaves, Tmp* t,
                    pb_buf* cols) noexcept nogil:
    """The field lines of one tree (after its 'Tree=' line), up to the blank line, the next
    'Tree=' line or what ends the trees; appended to ``cols``. -1: decline."""
    cdef Span keys[MAX_KEYS]
    cdef Span vals[MAX_KEYS]
    cdef int n_keys = 0, a, b
    cdef Span line, key, value, raw
    cdef const char* eq
    cdef Py_ssize_t i
    cdef int64_t num_leaves = -1, num_cat = -1, is_linear = 0, m, v
    cdef Span f[N_FIELDS]
    cdef int got[N_FIELDS]
    while rest.n > 0:
        raw = peek_line(rest[0])
        line = no_cr(raw)
        if strip(line).n == 0 or span_starts(line, b"Tree=", 5) or ends_trees(line):
            break
        skip_line(rest, raw)
        eq = NULL
        for i in range(line.n):
            if line.p[i] == c'=':
                eq = line.p + i
                break
        if eq == NULL or n_keys >= MAX_KEYS:
            return -1
        key.p = line.p
        key.n = eq - line.p
        key = strip(key)
        value.p = eq + 1
        value.n = line.p + line.n - (eq + 1)
        for a in range(n_keys):
            if keys[a].n == key.n and memcmp(keys[a].p, key.p, key.n) == 0:
                return -1     # a field given twice
        keys[n_keys] = key
        vals[n_keys] = value
        n_keys += 1
    # the fields this parser reads, by their index in FIELD_NAMES
    for b in range(N_FIELDS):
        got[b] = 0
    for a in range(n_keys):
        for b in range(N_FIELDS):
            if span_is(keys[a], FIELD_NAMES[b], FIELD_LENGTHS[b]):
                got[b] = 1
                f[b] = vals[a]
                break
        else:
            for b in range(N_OTHER):
                if span_is(keys[a], OTHER_NAMES[b], OTHER_LENGTHS[b]):
                    break
            else:
                return -1     # a field this library does not know
    if got[F_NUM_LEAVES] and scalar_int(f[F_NUM_LEAVES], 1, max_leaves, &num_leaves):
        return -1
    if got[F_NUM_CAT] and scalar_int(f[F_NUM_CAT], 0, max_leaves, &num_cat):
        return -1
    if got[F_IS_LINEAR] and scalar_int(f[F_IS_LINEAR], 0, 1, &is_linear):
        return -1
    if num_leaves < 0 or num_cat != 0 or is_linear != 0 or not got[F_LEAF_VALUE]:
        return -1     # missing fields, or categorical / linear: the Python parser reads it
    if tmp_reserve(t, num_leaves):
        return -2
    if floats_field(f[F_LEAF_VALUE], num_leaves, False, t.lv):
        return -1
    for i in range(num_leaves):
        if not isfinite(t.lv[i]):
            return -1
    m = num_leaves - 1
    if m > 0:
        if not (got[F_SPLIT_FEATURE] and got[F_THRESHOLD] and got[F_DECISION_TYPE]
                and got[F_LEFT_CHILD] and got[F_RIGHT_CHILD]):
            return -1
        if (ints_field(f[F_SPLIT_FEATURE], m, 0, n_features - 1, t.feat)
                or floats_field(f[F_THRESHOLD], m, True, t.thr)
                or ints_field(f[F_DECISION_TYPE], m, -128, 127, t.dec)
                or ints_field(f[F_LEFT_CHILD], m, -num_leaves, m - 1, t.lc)
                or ints_field(f[F_RIGHT_CHILD], m, -num_leaves, m - 1, t.rc)):
            return -1
        for i in range(m):
            v = t.dec[i]
            if (v & ~0b1111) != 0 or (v & 1) != 0 or ((v >> 2) & 3) == 3:
                return -1     # unknown bits, categorical, or missing type 3
    # the covers are advisory: a tree without them (or with a damaged count) loads, and the
    # model then has none (as the Python parser's _cover decides)
    t.has_cover = (got[F_LEAF_COUNT] and (m == 0 or got[F_INTERNAL_COUNT])
                   and ints_field(f[F_LEAF_COUNT], num_leaves, 0, INT64_MAX, t.lcnt) == 0
                   and (m == 0 or ints_field(f[F_INTERNAL_COUNT], m, 0, INT64_MAX,
                                             t.icnt) == 0))
    t.all_cover = t.all_cover and t.has_cover
    return emit_tree(t, num_leaves, cols)




def parse_trees(const unsigned char[::1] data, Py_ssize_t start, int64_t n_features,
                int64_t max_leaves, bint release_read=False):
    """Parse the trees of the model text ``data`` from byte ``start`` (a 'Tree=0' line).

    ``release_read``: ``data`` is a read-only file mapping whose first byte starts a page;
    the pages read are handed back to the system as the parser goes (``madvise``), so that
    loading a large model does not hold its whole text in memory.

    Returns ``(arrays, n_trees, stop)``: the flat canonical arrays (PackedTrees' node and
    leaf fields, the covers ``node_cover`` / ``leaf_cover`` or None where a tree lacks them,
    ``node_offset``, ``leaf_offset``), the number of trees and the offset of the
    line that ended the trees ('end of trees' or a following section; ``len(data)`` at the end
    of the text), or None to decline (see the module docstring)."""
    cdef Py_ssize_t n = data.shape[0], i
    cdef pb_buf cols[N_COLS]
    cdef Tmp t
    cdef Span rest, line, idx, raw
    cdef int64_t n_trees = 0, got
    cdef int status = 0
    cdef const char* base = <const char*>&data[0] if n else NULL
    cdef Py_ssize_t released = 0
    if start < 0 or start > n:
        return None
    for i in range(start, n):     # printable ASCII and ordinary whitespace only
        if data[i] >= 0x7f or (data[i] < 0x20 and not is_space(<char>data[i])):
            return None
        if release_read and i - released >= 2 * RELEASE_STEP:
            pb_release_pages(base + released, RELEASE_STEP)
            released += RELEASE_STEP
    released = 0                  # the parse reads the text again from its start
    for i in range(N_COLS):
        cols[i].p = NULL
        cols[i].n = cols[i].cap = 0
        cols[i].item = _ITEMS[i]
        # Room for as many nodes as the text could hold at 4 bytes a value: address space,
        # of which only the pages written become resident (no copies while growing).
        if pb_grow(&cols[i], <size_t>((n - start) // 4 + 64)):
            cols[i].p = NULL
            cols[i].cap = 0
    t.cap = 0
    t.all_cover = True
    t.lcnt = t.icnt = NULL
    t.lc = t.rc = t.ints = t.dec = t.feat = t.order = t.first = t.count = NULL
    t.thr = t.lv = NULL
    t.seen = NULL
    rest.p = base + start
    rest.n = n - start
    try:
        with nogil:
            if pb_grow(&cols[C_NODE_OFFSET], 1) or pb_grow(&cols[C_LEAF_OFFSET], 1):
                status = -2
            else:
                (<int64_t*>cols[C_NODE_OFFSET].p)[0] = 0
                (<int64_t*>cols[C_LEAF_OFFSET].p)[0] = 0
                cols[C_NODE_OFFSET].n = cols[C_LEAF_OFFSET].n = 1
            while status == 0:
                # skip blank lines, then 'Tree=<n_trees>' or the end of the trees
                while rest.n > 0:
                    raw = peek_line(rest)
                    if strip(raw).n != 0:
                        break
                    skip_line(&rest, raw)
                if rest.n == 0:
                    break
                line = no_cr(raw)
                if ends_trees(line):
                    break
                if not span_starts(line, b"Tree=", 5):
                    status = -1
                    break
                idx.p = line.p + 5
                idx.n = line.n - 5
                idx = strip(idx)
                if (idx.n == 0 or (idx.n > 1 and idx.p[0] == c'0') or idx.p[0] == c'+'
                        or idx.p[0] == c'-' or parse_int(idx, &got) or got != n_trees):
                    status = -1
                    break
                skip_line(&rest, raw)
                status = parse_tree(&rest, n_features, max_leaves, &t, cols)
                n_trees += 1
                if release_read and (rest.p - base) - released >= 2 * RELEASE_STEP:
                    pb_release_pages(base + released, RELEASE_STEP)
                    released += RELEASE_STEP
        if status == -2:
            raise MemoryError("parsing the LightGBM trees")
        if status != 0:
            return None
        arrays = {}
        for i in range(N_COLS):
            arr = owning_array(&cols[i], _TYPENUMS[i])
            arr.setflags(write=False)
            arrays[_NAMES[i]] = arr
        if not t.all_cover:
            arrays["node_cover"] = arrays["leaf_cover"] = None
        return arrays, n_trees, <Py_ssize_t>(rest.p - base)
    finally:
        for i in range(N_COLS):
            free(cols[i].p)
        tmp_free(&t)
