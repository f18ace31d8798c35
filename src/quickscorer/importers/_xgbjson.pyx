# cython: language_level=3
"""XGBoost JSON models read in C: the document as Python objects, except the node arrays of
its trees, which are checked, renumbered and packed tree by tree, as they are read, into the
flat canonical arrays of ``PackedTrees`` (``quickscorer/importers/xgboost.py`` calls it).

No Python object is made per node, so that a model's load peaks near what the loaded model
holds, where a parsed document holds a Python number per node and field (about 32 bytes each).
Each tree's ``sum_hessian`` becomes the node covers (float32 values, as XGBoost holds them);
they are advisory, so a tree whose ``sum_hessian`` is absent, of another length, negative or
beyond float32 leaves the model without covers, as on the Python path.

``parse_model`` accepts part of what the Python path (orjson or json, then
``packed_trees_fast``) accepts and gives the same numbers there; it declines everything else
(returns None), and the Python path reads the model and names the problem: any document that
is not strict JSON (a syntax error, NaN, invalid UTF-8), nesting deeper than 256, a second
``trees`` array, a tree that is not an object or lacks a node array, node arrays of different
lengths or holding other than integers (booleans count as 0 / 1) where XGBoost writes
integers, categorical splits (``split_type`` not all 0), nodes the pruner deleted, a split
condition that is not finite in float32, a tree that is not one binary tree.
``tests/test_xgboost_json.py`` compares both paths on every model and on damaged ones.

Numbers are read as the JSON parsers read them: integers exactly, decimals correctly rounded
to float64 (a fast path for up to 15 significant digits and powers of ten up to 22, whose one
multiplication or division is exact before its rounding; CPython's correctly rounded
``PyOS_string_to_double`` otherwise, which no locale changes), then to float32 where the model
holds float32, as the Python path does.
"""
import json

import numpy as np

cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcmp, memcpy
from libc.math cimport INFINITY, isfinite, nextafterf
from cpython.ref cimport PyObject
from cpython.unicode cimport PyUnicode_DecodeUTF8

from quickscorer.ir._build cimport (owning_array, pack_one_tree, pb_buf, pb_grow, pb_release_pages)

cnp.import_array()

cdef extern from "Python.h":
    double PyOS_string_to_double(const char* s, char** endptr,
                                 PyObject* overflow_exception) except? -1.0

cdef enum:
    MAX_DEPTH = 256
    # with release_read, the bytes read are given back in steps of this many (a multiple of
    # every page size)
    RELEASE_STEP = 1 << 20
    # strings up to this many bytes are shared (tree_param's values repeat in every tree)
    SHARED_STRING = 32

# the fields of a tree object read into the packed arrays
cdef enum:
    F_LEFT = 0
    F_RIGHT = 1
    F_FEATURE = 2
    F_COND = 3
    F_DEFAULT_LEFT = 4
    F_SPLIT_TYPE = 5
    F_COVER = 6           # sum_hessian: optional and advisory (the node covers)
    N_FIELDS = 7
cdef const char* FIELD_NAMES[7]
FIELD_NAMES[:] = [b"left_children", b"right_children", b"split_indices", b"split_conditions",
                  b"default_left", b"split_type", b"sum_hessian"]
# fields of a tree object that scoring does not read: checked as JSON, kept nowhere (the
# categories lists matter only where split_type marks categorical splits, which decline)
cdef const char* SKIPPED[7]
SKIPPED[:] = [b"parents", b"base_weights", b"loss_changes", b"categories",
              b"categories_nodes", b"categories_segments", b"categories_sizes"]

# output columns: the fields of PackedTrees this parser fills
cdef enum:
    C_NODE_OFFSET = 0
    C_LEAF_OFFSET = 1
    C_FEATURE = 2
    C_THRESHOLD = 3
    C_LEFT = 4
    C_RIGHT = 5
    C_DEFAULT_LEFT = 6
    C_NODE_SOURCE = 7
    C_LEAF_VALUE = 8
    C_LEAF_SOURCE = 9
    C_NODE_COVER = 10
    C_LEAF_COVER = 11
    N_COLS = 12
_NAMES = ("node_offset", "leaf_offset", "feature", "threshold", "left", "right",
          "default_left", "node_source_id", "leaf_value", "leaf_source_id", "node_cover",
          "leaf_cover")
cdef int _TYPENUMS[12]
_TYPENUMS[:] = [cnp.NPY_INT64, cnp.NPY_INT64, cnp.NPY_INT32, cnp.NPY_FLOAT64, cnp.NPY_INT32,
                cnp.NPY_INT32, cnp.NPY_BOOL, cnp.NPY_INT32, cnp.NPY_FLOAT64, cnp.NPY_INT32,
                cnp.NPY_FLOAT64, cnp.NPY_FLOAT64]
cdef size_t _ITEMS[12]
_ITEMS[:] = [8, 8, 4, 8, 4, 4, 1, 4, 8, 4, 8, 8]

cdef double POW10[23]
POW10[:] = [1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14,
            1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22]


class _Decline(Exception):
    """Raised inside the parser: the document is left to the Python path."""


cdef struct Cursor:
    const char* p
    const char* end
    const char* base
    Py_ssize_t released
    bint release_read
    int depth


cdef struct Tree:
    # one tree's source fields (tree-local), then the scratch of pack_one_tree and its outputs
    pb_buf field[7]
    int got[7]
    int64_t cap
    int64_t* order
    int64_t* first
    int64_t* count
    int64_t* rank
    uint8_t* seen
    int64_t* internal
    int64_t* leaf
    int32_t* lref
    int32_t* rref


cdef struct Number:
    const char* start
    Py_ssize_t n
    bint is_int
    bint neg
    uint64_t mantissa     # the digits, while at most 19 of them are significant
    int sig               # significant digits (leading zeros left out)
    int64_t exp10         # value = mantissa * 10 ** exp10 when sig <= 19


cdef class Parser:
    cdef pb_buf cols[12]
    cdef Tree tree
    cdef object trees
    cdef int64_t max_nodes
    cdef bint all_cover       # every tree so far gave its sum_hessian as covers

    def __cinit__(self):
        cdef int i
        for i in range(N_COLS):
            self.cols[i].p = NULL
            self.cols[i].n = self.cols[i].cap = 0
            self.cols[i].item = _ITEMS[i]
        for i in range(N_FIELDS):
            self.tree.field[i].p = NULL
            self.tree.field[i].n = self.tree.field[i].cap = 0
            self.tree.field[i].item = 4 if i == F_COND or i == F_COVER else 8
        self.tree.cap = 0
        self.tree.order = self.tree.first = self.tree.count = self.tree.rank = NULL
        self.tree.internal = self.tree.leaf = NULL
        self.tree.seen = NULL
        self.tree.lref = self.tree.rref = NULL
        self.trees = None

    def __dealloc__(self):
        cdef int i
        for i in range(N_COLS):
            free(self.cols[i].p)
        for i in range(N_FIELDS):
            free(self.tree.field[i].p)
        self.free_scratch()

    cdef void free_scratch(self) noexcept:
        free(self.tree.order); free(self.tree.first); free(self.tree.count)
        free(self.tree.rank); free(self.tree.seen); free(self.tree.internal)
        free(self.tree.leaf); free(self.tree.lref); free(self.tree.rref)
        self.tree.order = self.tree.first = self.tree.count = self.tree.rank = NULL
        self.tree.internal = self.tree.leaf = NULL
        self.tree.seen = NULL
        self.tree.lref = self.tree.rref = NULL
        self.tree.cap = 0

    cdef int reserve(self, int64_t k) except -1:
        cdef Tree* t = &self.tree
        if k <= t.cap:
            return 0
        self.free_scratch()
        t.order = <int64_t*>malloc(k * 8)
        t.first = <int64_t*>malloc(k * 8)
        t.count = <int64_t*>malloc(k * 8)
        t.rank = <int64_t*>malloc(k * 8)
        t.seen = <uint8_t*>malloc(k)
        t.internal = <int64_t*>malloc(k * 8)
        t.leaf = <int64_t*>malloc(k * 8)
        t.lref = <int32_t*>malloc(k * 4)
        t.rref = <int32_t*>malloc(k * 4)
        if (t.order == NULL or t.first == NULL or t.count == NULL or t.rank == NULL
                or t.seen == NULL or t.internal == NULL or t.leaf == NULL or t.lref == NULL
                or t.rref == NULL):
            self.free_scratch()
            raise MemoryError()
        t.cap = k
        return 0


cdef inline void skip_ws(Cursor* c) noexcept nogil:
    while c.p < c.end and (c.p[0] == c' ' or c.p[0] == c'\t' or c.p[0] == c'\n'
                           or c.p[0] == c'\r'):
        c.p += 1


cdef inline bint at(Cursor* c, char ch) noexcept nogil:
    return c.p < c.end and c.p[0] == ch


cdef inline bint is_digit(char ch) noexcept nogil:
    return c'0' <= ch <= c'9'


cdef bint open_container(Cursor* c, char close) except -1:
    """Pass the opening bracket at the cursor and the whitespace after it; True when the
    container is empty (its closing bracket passed too)."""
    c.depth += 1
    if c.depth > MAX_DEPTH:
        raise _Decline()
    c.p += 1
    skip_ws(c)
    if at(c, close):
        c.p += 1
        c.depth -= 1
        return True
    return False


cdef bint next_item(Cursor* c, char close) except -1:
    """After an item: True when another follows (the comma and whitespace passed), False at
    the closing bracket (passed)."""
    skip_ws(c)
    if at(c, c','):
        c.p += 1
        skip_ws(c)
        return True
    if at(c, close):
        c.p += 1
        c.depth -= 1
        return False
    raise _Decline()


cdef int scan_number(Cursor* c, Number* num) noexcept nogil:
    """A JSON number (-?(0|[1-9]d*)(.d+)?([eE][+-]?d+)?) at the cursor; -1 if none."""
    cdef int64_t e = 0, frac = 0
    cdef bint eneg = False
    cdef int edigits = 0
    num.start = c.p
    num.neg = False
    num.is_int = True
    num.mantissa = 0
    num.sig = 0
    if at(c, c'-'):
        num.neg = True
        c.p += 1
    if not (c.p < c.end and is_digit(c.p[0])):
        return -1
    if c.p[0] == c'0':
        c.p += 1
        if c.p < c.end and is_digit(c.p[0]):
            return -1                                 # a leading zero
    else:
        while c.p < c.end and is_digit(c.p[0]):
            if num.sig < 19:
                num.mantissa = num.mantissa * 10 + <uint64_t>(c.p[0] - c'0')
                num.sig += 1
            else:
                frac -= 1                             # a digit left out: one power of ten
            c.p += 1
    if at(c, c'.'):
        num.is_int = False
        c.p += 1
        if not (c.p < c.end and is_digit(c.p[0])):
            return -1
        while c.p < c.end and is_digit(c.p[0]):
            if num.sig < 19:
                if num.sig > 0 or c.p[0] != c'0':
                    num.mantissa = num.mantissa * 10 + <uint64_t>(c.p[0] - c'0')
                    num.sig += 1
                frac += 1
            c.p += 1
    if c.p < c.end and (c.p[0] == c'e' or c.p[0] == c'E'):
        num.is_int = False
        c.p += 1
        if c.p < c.end and (c.p[0] == c'+' or c.p[0] == c'-'):
            eneg = c.p[0] == c'-'
            c.p += 1
        if not (c.p < c.end and is_digit(c.p[0])):
            return -1
        while c.p < c.end and is_digit(c.p[0]):
            if edigits < 9:
                e = e * 10 + (c.p[0] - c'0')
            edigits += 1
            c.p += 1
        if edigits >= 9:
            num.sig = 99                              # a huge exponent: the slow path
    num.exp10 = (-e if eneg else e) - frac
    num.n = c.p - num.start
    return 0


cdef double number_value(Number* num) except? -1.0:
    """The float64 a JSON parser reads from the number (correctly rounded)."""
    cdef double d
    cdef char small[64]
    cdef char* buf = small
    cdef char* stop = NULL
    if num.mantissa == 0 and num.sig == 0:
        return -0.0 if num.neg and not num.is_int else 0.0   # "-0" is the integer 0
    if num.sig <= 15 and -22 <= num.exp10 <= 22:
        d = <double>num.mantissa                      # exact: fewer than 2**53
        d = d / POW10[-num.exp10] if num.exp10 < 0 else d * POW10[num.exp10]
        return -d if num.neg else d
    if num.n >= 64:
        buf = <char*>malloc(num.n + 1)
        if buf == NULL:
            raise MemoryError()
    try:
        memcpy(buf, num.start, num.n)
        buf[num.n] = 0
        d = PyOS_string_to_double(buf, &stop, NULL)   # overflow: +-inf, as json reads it
        if stop != buf + num.n:
            raise _Decline()
        return d
    finally:
        if buf != small:
            free(buf)


cdef inline int int_value(Number* num, int64_t* out) noexcept nogil:
    """The integer of an integer token of at most 18 digits; -1 otherwise."""
    if not num.is_int or num.sig > 18:
        return -1
    out[0] = -<int64_t>num.mantissa if num.neg else <int64_t>num.mantissa
    return 0


cdef object parse_string(Cursor* c, dict shared):
    """The string at the cursor (at its opening quote)."""
    cdef const char* start = c.p + 1
    cdef bint escaped = False
    cdef Py_ssize_t n
    c.p += 1
    while True:
        if c.p >= c.end:
            raise _Decline()
        if c.p[0] == c'"':
            break
        if c.p[0] == c'\\':
            escaped = True
            c.p += 2
            continue
        if <unsigned char>c.p[0] < 0x20:
            raise _Decline()                          # a control character
        c.p += 1
    n = c.p - start
    c.p += 1
    if escaped:
        try:
            s = json.loads((start - 1)[:n + 2])
        except ValueError:
            raise _Decline() from None
    else:
        try:
            s = PyUnicode_DecodeUTF8(start, n, NULL)
        except UnicodeDecodeError:
            raise _Decline() from None
    if n <= SHARED_STRING:
        s = shared.setdefault(s, s)
    return s


cdef object parse_literal(Cursor* c):
    if c.end - c.p >= 4 and memcmp(c.p, b"true", 4) == 0:
        c.p += 4
        return True
    if c.end - c.p >= 5 and memcmp(c.p, b"false", 5) == 0:
        c.p += 5
        return False
    if c.end - c.p >= 4 and memcmp(c.p, b"null", 4) == 0:
        c.p += 4
        return None
    raise _Decline()


cdef object parse_value(Cursor* c, dict shared, Parser ps):
    """Any JSON value at the cursor (after whitespace)."""
    cdef Number num
    cdef int64_t v
    cdef char ch
    if c.p >= c.end:
        raise _Decline()
    ch = c.p[0]
    if ch == c'"':
        return parse_string(c, shared)
    if ch == c'{':
        return parse_object(c, shared, ps)
    if ch == c'[':
        return parse_array(c, shared, ps)
    if ch == c'-' or is_digit(ch):
        if scan_number(c, &num):
            raise _Decline()
        if num.is_int:
            if int_value(&num, &v) == 0:
                return v
            return int(num.start[:num.n])
        return number_value(&num)
    return parse_literal(c)


cdef object parse_array(Cursor* c, dict shared, Parser ps):
    out = []
    if open_container(c, c']'):
        return out
    while True:
        out.append(parse_value(c, shared, ps))
        if not next_item(c, c']'):
            return out


cdef inline bint span_is(const char* p, Py_ssize_t n, const char* word) noexcept nogil:
    cdef Py_ssize_t i = 0
    while i < n and word[i] != 0 and word[i] == p[i]:
        i += 1
    return i == n and word[i] == 0


cdef Py_ssize_t raw_key(Cursor* c) noexcept nogil:
    """Length of the key at the cursor (at its quote) when it has no escape, else -1; the
    cursor does not move."""
    cdef const char* q = c.p + 1
    while q < c.end and q[0] != c'"':
        if q[0] == c'\\':
            return -1
        q += 1
    if q >= c.end:
        return -1
    return q - (c.p + 1)


cdef object parse_object(Cursor* c, dict shared, Parser ps):
    out = {}
    cdef Py_ssize_t klen
    cdef bint is_trees
    if open_container(c, c'}'):
        return out
    while True:
        if not at(c, c'"'):
            raise _Decline()
        klen = raw_key(c)
        is_trees = klen == 5 and memcmp(c.p + 1, b"trees", 5) == 0
        key = parse_string(c, shared)
        skip_ws(c)
        if not at(c, c':'):
            raise _Decline()
        c.p += 1
        skip_ws(c)
        if is_trees and at(c, c'['):
            if ps.trees is not None:
                raise _Decline()                      # a second list of trees
            out[key] = ps.trees = parse_trees(c, shared, ps)
        else:
            out[key] = parse_value(c, shared, ps)
        if not next_item(c, c'}'):
            return out


cdef void skip_value(Cursor* c, dict shared, Parser ps) except *:
    """A JSON value checked and passed over; numbers make no object."""
    cdef Number num
    cdef char ch
    if c.p >= c.end:
        raise _Decline()
    ch = c.p[0]
    if ch == c'[':
        if not open_container(c, c']'):
            while True:
                skip_value(c, shared, ps)
                if not next_item(c, c']'):
                    break
    elif ch == c'-' or is_digit(ch):
        if scan_number(c, &num):
            raise _Decline()
    else:
        parse_value(c, shared, ps)        # strings, objects, literals: rare here


cdef int read_numbers(Cursor* c, pb_buf* out, bint as_float) except -1:
    """A JSON array of numbers into ``out``: int64 (integers of at most 18 digits, true /
    false as 1 / 0) or, with ``as_float``, float32 (numbers rounded to float64, then to
    float32). Anything else declines."""
    cdef Number num
    cdef int64_t v
    cdef double d
    out.n = 0
    if not at(c, c'['):
        raise _Decline()
    if open_container(c, c']'):
        return 0
    while True:
        if pb_grow(out, 1):
            raise MemoryError()
        if as_float:
            if c.p < c.end and (c.p[0] == c'-' or is_digit(c.p[0])):
                if scan_number(c, &num):
                    raise _Decline()
                d = number_value(&num)
                (<float*>out.p)[out.n] = <float>d
            else:
                raise _Decline()
        else:
            if c.p < c.end and (c.p[0] == c'-' or is_digit(c.p[0])):
                if scan_number(c, &num) or int_value(&num, &v):
                    raise _Decline()
            elif c.end - c.p >= 4 and memcmp(c.p, b"true", 4) == 0:
                c.p += 4
                v = 1
            elif c.end - c.p >= 5 and memcmp(c.p, b"false", 5) == 0:
                c.p += 5
                v = 0
            else:
                raise _Decline()
            (<int64_t*>out.p)[out.n] = v
        out.n += 1
        if not next_item(c, c']'):
            return 0


cdef object parse_trees(Cursor* c, dict shared, Parser ps):
    """The model's list of trees: each tree's node arrays packed, its other fields kept."""
    out = []
    if open_container(c, c']'):
        return out
    while True:
        out.append(parse_tree(c, shared, ps))
        if c.release_read and (c.p - c.base) - c.released >= 2 * RELEASE_STEP:
            pb_release_pages(c.base + c.released, RELEASE_STEP)
            c.released += RELEASE_STEP
        if not next_item(c, c']'):
            return out


cdef object parse_tree(Cursor* c, dict shared, Parser ps):
    cdef Tree* t = &ps.tree
    cdef Py_ssize_t klen
    cdef int f, s, i
    out = {}
    if not at(c, c'{'):
        raise _Decline()                              # a tree that is not an object
    for f in range(N_FIELDS):
        t.got[f] = 0
    if open_container(c, c'}'):
        raise _Decline()                              # no node arrays
    while True:
        if not at(c, c'"'):
            raise _Decline()
        klen = raw_key(c)
        f = -1
        s = -1
        if klen >= 0:
            for i in range(N_FIELDS):
                if span_is(c.p + 1, klen, FIELD_NAMES[i]):
                    f = i
                    break
            if f < 0:
                for i in range(7):
                    if span_is(c.p + 1, klen, SKIPPED[i]):
                        s = i
                        break
        key = parse_string(c, shared)
        skip_ws(c)
        if not at(c, c':'):
            raise _Decline()
        c.p += 1
        skip_ws(c)
        if f >= 0:
            if t.got[f]:
                raise _Decline()                      # the field twice
            t.got[f] = 1
            read_numbers(c, &t.field[f], f == F_COND or f == F_COVER)
        elif s >= 0:
            skip_value(c, shared, ps)
        else:
            out[key] = parse_value(c, shared, ps)
        if not next_item(c, c'}'):
            break
    pack_tree(ps)
    return out


cdef int pack_tree(Parser ps) except -1:
    """Check the tree just read (what packed_trees_fast checks) and append it, canonical,
    to the output columns."""
    cdef Tree* t = &ps.tree
    cdef int f
    cdef int64_t k = <int64_t>t.field[F_LEFT].n, i, j, n, n_int = 0, bad = -1
    cdef const int64_t* lc = <int64_t*>t.field[F_LEFT].p
    cdef const int64_t* rc = <int64_t*>t.field[F_RIGHT].p
    cdef const int64_t* feat = <int64_t*>t.field[F_FEATURE].p
    cdef const float* cond = <float*>t.field[F_COND].p
    cdef const int64_t* dl = <int64_t*>t.field[F_DEFAULT_LEFT].p
    cdef const int64_t* st = <int64_t*>t.field[F_SPLIT_TYPE].p
    cdef const float* hess = <float*>t.field[F_COVER].p
    cdef bint has_cover
    cdef pb_buf* cols = ps.cols
    for f in range(F_COVER):
        if f != F_SPLIT_TYPE and not t.got[f]:
            raise _Decline()
        if t.got[f] and <int64_t>t.field[f].n != k:
            raise _Decline()
    # the covers are advisory: a tree without them (or with a damaged one) loads, and the
    # model then has none (as _sum_hessian decides on the Python path)
    has_cover = t.got[F_COVER] and <int64_t>t.field[F_COVER].n == k
    if k < 1 or k > ps.max_nodes:
        raise _Decline()
    for i in range(k):
        if t.got[F_SPLIT_TYPE] and st[i] != 0:
            raise _Decline()                          # categorical splits (or damage)
        if not isfinite(cond[i]):
            raise _Decline()
        if dl[i] != 0 and dl[i] != 1:
            raise _Decline()                          # refused, by name, on the Python path
        if lc[i] == -1:
            if feat[i] == 2147483647 and dl[i] != 0:
                raise _Decline()                      # a node the pruner deleted
        elif feat[i] < 0 or feat[i] > 2147483647:
            raise _Decline()
        if has_cover and not (isfinite(hess[i]) and hess[i] >= 0):
            has_cover = False
    ps.all_cover = ps.all_cover and has_cover
    ps.reserve(k)
    if pack_one_tree(lc, rc, k, t.order, t.first, t.count, t.rank, t.seen, t.internal,
                     t.leaf, t.lref, t.rref, &n_int, &bad):
        raise _Decline()
    for f in range(N_COLS):
        if f >= C_NODE_COVER and not ps.all_cover:
            continue
        if pb_grow(&cols[f], <size_t>(k if f > C_LEAF_OFFSET else 1)):
            raise MemoryError()
    (<int64_t*>cols[C_NODE_OFFSET].p)[cols[C_NODE_OFFSET].n] = (
        (<int64_t*>cols[C_NODE_OFFSET].p)[cols[C_NODE_OFFSET].n - 1] + n_int)
    cols[C_NODE_OFFSET].n += 1
    (<int64_t*>cols[C_LEAF_OFFSET].p)[cols[C_LEAF_OFFSET].n] = (
        (<int64_t*>cols[C_LEAF_OFFSET].p)[cols[C_LEAF_OFFSET].n - 1] + (k - n_int))
    cols[C_LEAF_OFFSET].n += 1
    j = <int64_t>cols[C_FEATURE].n
    for i in range(n_int):
        n = t.internal[i]
        (<int32_t*>cols[C_FEATURE].p)[j + i] = <int32_t>feat[n]
        (<double*>cols[C_THRESHOLD].p)[j + i] = <double>nextafterf(cond[n], -INFINITY)
        (<int32_t*>cols[C_LEFT].p)[j + i] = t.lref[i]
        (<int32_t*>cols[C_RIGHT].p)[j + i] = t.rref[i]
        (<uint8_t*>cols[C_DEFAULT_LEFT].p)[j + i] = dl[n] != 0
        (<int32_t*>cols[C_NODE_SOURCE].p)[j + i] = <int32_t>n
        if ps.all_cover:
            (<double*>cols[C_NODE_COVER].p)[j + i] = <double>hess[n]
    for f in range(C_FEATURE, C_LEAF_VALUE):
        cols[f].n += n_int
    j = <int64_t>cols[C_LEAF_VALUE].n
    for i in range(k - n_int):
        n = t.leaf[i]
        (<double*>cols[C_LEAF_VALUE].p)[j + i] = <double>cond[n]
        (<int32_t*>cols[C_LEAF_SOURCE].p)[j + i] = <int32_t>n
        if ps.all_cover:
            (<double*>cols[C_LEAF_COVER].p)[j + i] = <double>hess[n]
    cols[C_LEAF_VALUE].n += k - n_int
    cols[C_LEAF_SOURCE].n += k - n_int
    if ps.all_cover:
        cols[C_NODE_COVER].n += n_int
        cols[C_LEAF_COVER].n += k - n_int
    return 0


def parse_model(const unsigned char[::1] data, int64_t max_nodes, bint release_read=False):
    """Parse an XGBoost JSON model (UTF-8 text, an optional byte-order mark first).

    ``release_read``: ``data`` is a read-only file mapping whose first byte starts a page; the
    pages read are handed back to the system as the parser goes (``madvise``).

    Returns ``(document, trees, arrays)``: the document with each tree's object holding its
    fields other than the node arrays (``trees`` is that list, wherever the document holds
    it), and the node and leaf fields of ``PackedTrees`` that the node arrays give
    (``node_offset``, ``leaf_offset``, ``feature``, ``threshold``, ``left``, ``right``,
    ``default_left``, ``node_source_id``, ``leaf_value``, ``leaf_source_id``, and the covers
    ``node_cover`` / ``leaf_cover`` from ``sum_hessian``, None unless every tree gives them
    as finite non-negative float32 numbers); or None to decline (see the module docstring)."""
    cdef Py_ssize_t n = data.shape[0]
    cdef Cursor c
    cdef Parser ps = Parser()
    cdef int i
    c.base = <const char*>&data[0] if n else NULL
    c.p = c.base
    c.end = c.base + n
    c.released = 0
    c.release_read = release_read
    c.depth = 0
    ps.max_nodes = max_nodes
    ps.all_cover = True
    if n >= 3 and memcmp(c.p, b"\xef\xbb\xbf", 3) == 0:
        c.p += 3
    for i in (C_NODE_OFFSET, C_LEAF_OFFSET):
        if pb_grow(&ps.cols[i], 1):
            raise MemoryError()
        (<int64_t*>ps.cols[i].p)[0] = 0
        ps.cols[i].n = 1
    shared = {}
    try:
        skip_ws(&c)
        if not at(&c, c'{'):
            return None
        doc = parse_object(&c, shared, ps)
        skip_ws(&c)
        if c.p != c.end or ps.trees is None:
            return None
    except _Decline:
        return None
    arrays = {}
    for i in range(N_COLS):
        if i >= C_NODE_COVER and not ps.all_cover:
            arrays[_NAMES[i]] = None
            continue
        arr = owning_array(&ps.cols[i], _TYPENUMS[i])
        arr.setflags(write=False)
        arrays[_NAMES[i]] = arr
    return doc, ps.trees, arrays
