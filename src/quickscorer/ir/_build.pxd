# The canonical numbering of one tree (implemented in _build.pyx), shared by `pack_trees` and
# the XGBoost JSON parser (_xgbjson.pyx), which packs each tree as it reads it.
from libc.stdint cimport int32_t, int64_t, uint8_t

# Tree of `k` nodes, tree-local children (`left[i] == right[i] == -1` at a leaf), root 0.
# Scratch: order, first, count, rank (k each), seen (k bytes). Writes the internal nodes in
# canonical (breadth-first) order to internal[0:n_internal], the leaves in in-order position to
# leaf[0:k - n_internal], the canonical child references (c >= 0 internal, ~c leaf) to
# lref / rref[0:n_internal], all tree-local. Returns 0, or the problem (bad_node set): 1 a
# child out of range or a node with one child, 2 a node reached twice, 3 a node not reached.
cdef int pack_one_tree(const int64_t* left, const int64_t* right, int64_t k,
                       int64_t* order, int64_t* first, int64_t* count, int64_t* rank,
                       uint8_t* seen, int64_t* internal, int64_t* leaf, int32_t* lref,
                       int32_t* rref, int64_t* n_internal, int64_t* bad_node) noexcept nogil


# What the C model parsers share: growable arrays (quickscorer/importers/parse_buf.h), the pages of a file
# mapping given back as they are read, and a buffer turned into a numpy array without a copy.
cdef extern from "quickscorer/importers/parse_buf.h":
    ctypedef struct pb_buf:
        char* p
        size_t n
        size_t cap
        size_t item
    int pb_grow(pb_buf* b, size_t extra) nogil
    void pb_release_pages(const char* p, size_t n) nogil
    void pb_c_numeric_init()
    double pb_strtod_c(const char* s, char** end) nogil

cdef object owning_array(pb_buf* b, int typenum)
