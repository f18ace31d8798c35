# What every exit-leaf kernel shares, declared once (implemented in _kernel.pyx):
#
# - Layout: the base class of a kernel's prepared arrays. A kernel module subclasses it, points
#   `ctx` at its own view of the arrays and `exits` at its exit-leaf function, and says how
#   much scratch a thread needs; the row loops below do the rest.
# - NodeView: the concatenated node table (feature, threshold, flags, category bitsets) of the
#   kernels that evaluate nodes one at a time, and the node decision on it.
# - The checks of a call's arguments (threads, shapes, scratch rows), raising ValueError.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint32_t, uint64_t

from ._forest cimport Forest, ForestView, goes_left, scores_add, scores_init

# The exit leaf (in-order, per tree) of every tree for one converted row, passed to `emit`:
# stored in leaves[0:n_trees] when leaves is not NULL, else added to the row's scores.
ctypedef void (*exits_fn)(const void* ctx, const ForestView* f, const double* row,
                          uint64_t* scratch, int32_t* leaves, double* o64,
                          float* o32) noexcept nogil

# two rows at once, scores only (scratch: twice scratch_words); the low-latency entry pairs
# the rows of a call through it where a kernel has one (the walk of complete trees)
ctypedef void (*exits2_fn)(const void* ctx, const ForestView* f, const double* row_a,
                           const double* row_b, uint64_t* scratch, double* oa64, float* oa32,
                           double* ob64, float* ob32) noexcept nogil


cdef class Layout:
    cdef const void* ctx                  # the kernel's view of its arrays
    cdef exits_fn exits                   # NULL for kernels with row loops of their own
    cdef exits2_fn exits2                 # NULL for kernels without a two-row exit function
    cdef readonly int64_t n_trees
    cdef readonly int64_t n_features
    cdef readonly int64_t scratch_words   # uint64 words of scratch per thread for `exits`
    cdef object _keep                     # the arrays the views point into


cdef extern from "quickscorer/forest.h" nogil:
    ctypedef struct NodeView "qs_nodes":
        const int32_t* feature
        const double* threshold
        const uint8_t* flags
        const int64_t* cat_offset
        const int64_t* cat_nwords
        const uint32_t* cat_words
        const int64_t* node_offset            # [n_trees + 1] first node of each tree

    bint node_goes_left "qs_node_goes_left"(const NodeView* v, int family, int64_t g,
                                             const double* row)


cdef int set_nodes(NodeView* v, dict a, str what, bint cat_optional=*) except -1


cdef const void* array_data(object arr, object dtype, str what, str name) except NULL

cdef int check_call(Forest forest, Py_ssize_t n_cols, int64_t n_trees, int64_t n_features,
                    int n_threads, const double[:, ::1] rowbuf, Py_ssize_t row_width,
                    const uint64_t[:, ::1] scratch, Py_ssize_t scratch_width,
                    str what) except -1

cdef int check_scores(Forest forest, Py_ssize_t n_rows, const double[:, ::1] out64,
                      const float[:, ::1] out32) except -1

cdef int check_leaves(Forest forest, Py_ssize_t n_rows, const int32_t[:, ::1] out) except -1


# A call of a few rows through a kernel's low-latency entry (predict_small): the rows of a
# C-contiguous float32 / float64 array and the scores of row i at o64 / o32 + i * n_outputs
# (o64 for float64 forests, o32 for float32 ones, the other NULL), not yet set
cdef struct SmallCall:
    const char* x
    Py_ssize_t n
    Py_ssize_t row_bytes
    bint is32
    double* o64
    float* o32

cdef object small_call(Forest forest, object X, int64_t n_trees, int64_t n_features,
                       bint squeeze, SmallCall* c)

cdef void* scratch_data(object buf, Py_ssize_t nbytes) except NULL


cdef inline void init_scores(const ForestView* f, double[:, ::1] out64, float[:, ::1] out32,
                             Py_ssize_t i) noexcept nogil:
    """Row i's scores (in out64 or out32, whichever is in use) set to the base scores. It hands
    back no pointer: a variable a prange body sets only through its address is shared by the
    threads (Cython makes a variable private where the body assigns it)."""
    scores_init(f, &out64[i, 0] if out64.shape[0] else NULL,
                &out32[i, 0] if out32.shape[0] else NULL)



cdef extern from "quickscorer/forest.h" nogil:
    # tree t's exit leaf: stored (leaves not NULL), or added to the scores in the source
    # library's precision; a kernel emits each leaf as it finds it, so the additions of the
    # scores overlap with the search for the next tree's leaf
    void emit "qs_emit"(const ForestView* f, int64_t t, int64_t leaf, const double* row,
                        int32_t* leaves, double* o64, float* o32)
