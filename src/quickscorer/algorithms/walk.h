/* Root-to-leaf walks of eight trees at once, without a branch on the data.
 *
 * A node is one test "go right when xr[col] > thr" on an expanded row xr whose columns already
 * hold each feature as a node of a given missing-value rule sees it (missing values mapped to
 * -inf or +inf, the side they go to), so a step is a load of the node, a load of the value,
 * one compare and the chosen child (WALK_MOVE): no test of NaN, of zero or of categories inside
 * the walk. In the table the walk reads (_walk.walk_tables) a child is the byte offset of its
 * record from the table's first node: a node's (>= 0), or a leaf's record's (< 0), so a step
 * adds the offset to the table's address, where an index would be scaled by the record's 24
 * bytes first (two more instructions on each step's chain of loads; python -m
 * benchmarks.experiments.walk_groups_floor on the leaf-wise models).
 *
 * Eight cursors walk their own trees (cursor k takes trees k, k + 8, k + 16, ...), their
 * eight independent chains of loads overlapping where a single walk waits on each. A leaf
 * holds its cursor: leaf l's record lies before the table (nodes[-1 - l], laid out by
 * _walk.walk_tables for every leaf number of the model); its threshold is +inf, its children
 * are itself and its pad holds l, so a cursor that reached leaf l steps on the spot. Every
 * WALK_HARVEST steps each cursor on such a record stores its leaf and restarts at its next
 * tree's root, chosen by the sign of the offset without a branch; the only branch is the
 * loop's, taken until every tree has its leaf. A cursor past its last tree circles on a node
 * whose children are itself.
 */
#ifndef WALK_H
#define WALK_H

#include <math.h>
#include <stdint.h>

#include "quickscorer/cpu.h"

typedef struct {
    double thr;
    int32_t col;
    int32_t kid[2];      /* [0]: left (xr[col] <= thr), [1]: right; byte offsets */
    int32_t pad;         /* a leaf's record: its leaf number */
} walk_node;

/* walk_table_sound's test of a whole row is for rows of 24 bytes */
typedef char walk_node_is_24_bytes[sizeof(walk_node) == 24 ? 1 : -1];

/* The number of leaf records at the head of a table of `rows` rows in walk_tables' form
 * (leaf l's at row n - 1 - l: threshold +inf, column 0, both children itself, l in pad), as
 * many as row 0's leaf number + 1; -1 where those rows are not exactly that. A model file's
 * table is checked by this and walk_table_sound before any walk reads it (Python's
 * _walk.WalkLayout and the C library's read_walk). */
static inline int64_t walk_table_records(const walk_node* table, int64_t rows)
{
    if (rows < 3)
        return -1;
    int64_t n = (int64_t)table[0].pad + 1, bad = 0;
    if (n < 1 || n > rows - 2)
        return -1;
    for (int64_t i = 0; i < n; i++) {
        int64_t l = n - 1 - i, off = (-1 - l) * (int64_t)sizeof(walk_node);
        bad |= (int64_t)!(table[i].thr >= (double)INFINITY) | (int64_t)(table[i].col != 0) |
               (int64_t)(table[i].kid[0] != off) | (int64_t)(table[i].kid[1] != off) |
               (int64_t)(table[i].pad != l);
    }
    return bad ? -1 : n;
}

/* Whether every node after the n_records leaf records of a table of `rows` rows has its
 * column among the expanded row's n_cols and its children below it, so that every walk ends
 * inside the table: a child is a byte offset of a whole row, a node's after its parent and
 * before the self-loop sentinel, or leaf l's record with l at most its tree's node count
 * (the tree has one leaf more) and among the records; the last row (the sentinel) is its
 * own two children. Tree by tree as `offsets` gives them (the rows past the trees: a tree of
 * one node each), each node checked by arithmetic, with no branch on the data.
 *
 * A table is under 2^31 bytes (a larger one is refused), so every rule is a compare of
 * 32-bit unsigned offsets: a node's child o in [first, top), a leaf's -24 - o in [0,
 * leaf_most]; "a whole row" is the test that o + 2147483640 (a multiple of 24 that makes
 * every offset of the table non-negative) times the inverse of 3 modulo 2^32, rotated right
 * by 3, is at most (2^32 - 1) / 24. On CPU_ISA_AVX2 (isa) a tree of eight nodes or more is
 * checked eight nodes a step, its last step over its last eight nodes. That is for speed
 * (python -m benchmarks.load_time times the open it is part of); tests/test_walk.py holds
 * every path to the rule. */
#define WALK_ROW_WHOLE(o) ((uint32_t)((((uint32_t)(o) + 2147483640u) * 0xAAAAAAABu) >> 3 |   \
                                      (((uint32_t)(o) + 2147483640u) * 0xAAAAAAABu) << 29) <= \
                           0x0AAAAAAAu)

/* whether node i (`first` the next row's offset) breaks a rule */
static inline uint32_t walk_node_bad(const walk_node* nd, uint32_t first, uint32_t top,
                                     uint32_t cols, uint32_t leaf_most)
{
    const uint32_t B = (uint32_t)sizeof(walk_node), k0 = (uint32_t)nd->kid[0],
                   k1 = (uint32_t)nd->kid[1];
    return (uint32_t)((uint32_t)nd->col >= cols) | (uint32_t)!WALK_ROW_WHOLE(k0) |
           (uint32_t)!WALK_ROW_WHOLE(k1) |
           ((uint32_t)(k0 - first >= top - first) & (uint32_t)(0u - B - k0 > leaf_most)) |
           ((uint32_t)(k1 - first >= top - first) & (uint32_t)(0u - B - k1 > leaf_most));
}

#if CPU_HAVE_X86
/* x > y for unsigned 32-bit lanes */
#define WALK_GTU(x, y) _mm256_cmpgt_epi32(_mm256_xor_si256((x), sgn), _mm256_xor_si256((y), sgn))

/* whether any node of nodes[i0 .. end) breaks a rule, end - i0 >= 8, eight a step */
CPU_TARGET("avx2")
static uint32_t walk_nodes_bad_avx2(const walk_node* nodes, int64_t i0, int64_t end,
                                    uint32_t top, uint32_t cols, uint32_t leaf_most)
{
    const int B = (int)sizeof(walk_node);
    const __m256i sgn = _mm256_set1_epi32((int)0x80000000u);
    const __m256i step = _mm256_setr_epi32(0, B, 2 * B, 3 * B, 4 * B, 5 * B, 6 * B, 7 * B);
    const __m256i topv = _mm256_set1_epi32((int)top), colsm = _mm256_set1_epi32((int)cols - 1);
    const __m256i most = _mm256_set1_epi32((int)leaf_most), negb = _mm256_set1_epi32(-B);
    const __m256i lift = _mm256_set1_epi32(2147483640), inv3 = _mm256_set1_epi32(
        (int)0xAAAAAAABu), whole = _mm256_set1_epi32(0x0AAAAAAA);
    __m256i bad = _mm256_setzero_si256();
    for (int64_t i = i0;; i += 8) {
        if (i > end - 8)
            i = end - 8;                  /* the last step: the tree's last eight nodes */
        /* (col, kid[0], kid[1], pad) of rows i .. i + 7, 16 bytes at 8 of each */
        const char* p = (const char*)(nodes + i) + 8;
#define WALK_ROWS2(r)                                                                         \
    _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(                          \
                                (const __m128i*)(p + (r) * B))),                              \
                            _mm_loadu_si128((const __m128i*)(p + ((r) + 4) * B)), 1)
        __m256i a = WALK_ROWS2(0), b = WALK_ROWS2(1), c = WALK_ROWS2(2), d = WALK_ROWS2(3);
#undef WALK_ROWS2
        __m256i ab0 = _mm256_unpacklo_epi32(a, b), ab1 = _mm256_unpackhi_epi32(a, b);
        __m256i cd0 = _mm256_unpacklo_epi32(c, d), cd1 = _mm256_unpackhi_epi32(c, d);
        __m256i col = _mm256_unpacklo_epi64(ab0, cd0), k0 = _mm256_unpackhi_epi64(ab0, cd0);
        __m256i k1 = _mm256_unpacklo_epi64(ab1, cd1);  /* lanes: rows i .. i + 7 in order */
        __m256i first = _mm256_add_epi32(_mm256_set1_epi32((int)((i + 1) * B)), step);
        __m256i room = _mm256_sub_epi32(topv, first);
        bad = _mm256_or_si256(bad, WALK_GTU(col, colsm));
        __m256i ks[2] = {k0, k1};
        for (int s = 0; s < 2; s++) {
            __m256i k = ks[s];
            __m256i r = _mm256_mullo_epi32(_mm256_add_epi32(k, lift), inv3);
            r = _mm256_or_si256(_mm256_srli_epi32(r, 3), _mm256_slli_epi32(r, 29));
            bad = _mm256_or_si256(bad, WALK_GTU(r, whole));
            /* outside [first, top) and not a leaf record within reach */
            __m256i below = WALK_GTU(room, _mm256_sub_epi32(k, first));
            __m256i leaf = WALK_GTU(_mm256_sub_epi32(negb, k), most);
            bad = _mm256_or_si256(bad, _mm256_andnot_si256(below, leaf));
        }
        if (i == end - 8)
            break;
    }
    return (uint32_t)!_mm256_testz_si256(bad, bad);
}
#undef WALK_GTU
#endif

static inline int walk_table_sound_isa(const walk_node* table, int64_t rows, int64_t n_records,
                                       const int64_t* offsets, int64_t n_trees, int64_t n_cols,
                                       int isa)
{
    const walk_node* nodes = table + n_records;
    const int64_t B = (int64_t)sizeof(walk_node), n_walk = rows - n_records;
    uint32_t bad = 0;
    int64_t i = 0, t = 0;
    if (n_walk < 2 || n_records < 1 || rows * B >= ((int64_t)1 << 31) || n_cols < 1 ||
        n_cols >= ((int64_t)1 << 31))
        return 0;
    const uint32_t top = (uint32_t)((n_walk - 1) * B), cols = (uint32_t)n_cols;
    (void)isa;
    while (i < n_walk - 1) {
        while (t < n_trees && offsets[t + 1] <= i)
            t++;
        int64_t size = 1, end = i + 1;
        if (t < n_trees && i >= offsets[t]) {
            size = offsets[t + 1] - offsets[t];
            end = offsets[t + 1] < n_walk - 1 ? offsets[t + 1] : n_walk - 1;
        }
        /* leaf l's offset is -B (1 + l), l at most size and below n_records */
        const uint32_t leaf_most =
            (uint32_t)(((size + 1 < n_records ? size + 1 : n_records) - 1) * B);
#if CPU_HAVE_X86
        if (isa == CPU_ISA_AVX2 && end - i >= 8) {
            bad |= walk_nodes_bad_avx2(nodes, i, end, top, cols, leaf_most);
            i = end;
            continue;
        }
#endif
        for (uint32_t first = (uint32_t)((i + 1) * B); i < end; i++, first += (uint32_t)B)
            bad |= walk_node_bad(nodes + i, first, top, cols, leaf_most);
    }
    return !bad && nodes[n_walk - 1].kid[0] == (n_walk - 1) * B &&
           nodes[n_walk - 1].kid[1] == (n_walk - 1) * B;
}

/* walk_table_sound_isa on the widest path of this CPU that it has */
static inline int walk_table_sound(const walk_node* table, int64_t rows, int64_t n_records,
                                   const int64_t* offsets, int64_t n_trees, int64_t n_cols)
{
    int isa = cpu_isa_available(CPU_ISA_AVX2) ? CPU_ISA_AVX2 : CPU_ISA_SCALAR;
    return walk_table_sound_isa(table, rows, n_records, offsets, n_trees, n_cols, isa);
}

/* the record at byte offset q from the table's first node */
#define WALK_AT(q) ((const walk_node*)((const char*)nodes + (q)))

#if defined(__GNUC__) || defined(__clang__)
#define WALK_OPAQUE(v) __asm__("" : "+r"(v))
#else
#define WALK_OPAQUE(v) ((void)0)
#endif

/* One cursor's step: the node at offset q to its child (a leaf's record to itself). On
 * x86-64 with GCC or Clang both children are loaded beside the value and the compare's flags
 * pick one by a conditional move (cmova: x > thr, ordered), so no load waits on the compare,
 * where indexing kid[] by the bit puts a load after it on the chain (python -m
 * benchmarks.experiments.walk_groups_floor --shapes ltr-1000x64,full-uniform-1000x31
 * --rounds 15: eight_cursors against eight_cursors_indexed, the step WALK_MOVE_INDEXED, which
 * other compilers and CPUs take). */
#define WALK_MOVE_INDEXED(q)                                                                 \
    {                                                                                        \
        const walk_node* p_ = WALK_AT(q);                                                    \
        q = p_->kid[xr[p_->col] > p_->thr];                                                  \
    }
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define WALK_MOVE(q)                                                                         \
    {                                                                                        \
        const walk_node* p_ = WALK_AT(q);                                                    \
        int64_t l_ = p_->kid[0];                                                             \
        const int64_t r_ = p_->kid[1];                                                       \
        const double x_ = xr[p_->col];                                                       \
        __asm__("ucomisd %[t], %[x]\n\t"                                                     \
                "cmova %[r], %[l]"                                                           \
                : [l] "+r"(l_)                                                               \
                : [r] "r"(r_), [x] "x"(x_), [t] "m"(p_->thr)                                 \
                : "cc");                                                                     \
        q = l_;                                                                              \
    }
#else
#define WALK_MOVE(q) WALK_MOVE_INDEXED(q)
#endif

/* One cursor's harvest: at a leaf's record (q < 0), store its leaf for tree t, count it in
 * `done` and move to tree t + 8's root, read before the choice (its address known since the
 * cursor's last leaf); elsewhere nothing changes but leaf[t], which a later leaf
 * overwrites. The empty asm keeps the compiler from turning the choice into a branch. */
#define WALK_NEXT(q, t)                                                            \
    {                                                                                 \
        int64_t m_ = (q) >> 63;                                                       \
        int64_t next_ = roots[t + 8];                                                 \
        WALK_OPAQUE(m_);                                                           \
        leaf[t] = WALK_AT(q)->pad;                                                    \
        done -= m_;                                                                   \
        q = m_ ? next_ : (q);                                                         \
        t += 8 & m_;                                                                  \
    }

/* Steps between harvests. A step costs 8 instructions in gcc's code, a harvest about 9 a
 * cursor: harvesting after every step spends more on the harvests than on the steps, where a
 * cursor that waits up to WALK_HARVEST - 1 steps on its leaf wastes less; 3 is the fastest
 * of 1 to 4 on leaf-wise models (python -m benchmarks.experiments.walk_groups_floor, which
 * times each K). */
#define WALK_HARVEST 3

/* The exit leaf of each of the n_trees trees into leaf[0 .. n_trees). roots[t] is tree t's
 * root node's offset for t < n_trees and the self-loop node's for n_trees <= t < n_trees + 16;
 * leaf has room for n_trees + 8 entries (cursors past their last tree write there);
 * nodes[-1 - l] is leaf l's record (above) for every leaf number l of the trees.
 * WALK8_BY(NAME, K, MOVE) defines the walk with a harvest every K steps of MOVE: walk8 with
 * WALK_HARVEST and WALK_MOVE (others: benchmarks/experiments/walk_groups_floor.c). */
#define WALK8(NAME, K) WALK8_BY(NAME, K, WALK_MOVE)
#define WALK8_BY(NAME, K, MOVE)                                                    \
static inline void NAME(const walk_node* nodes, const int32_t* roots, int64_t n_trees,  \
                        const double* xr, int32_t* leaf)                              \
{                                                                                     \
    int64_t t0 = 0, t1 = 1, t2 = 2, t3 = 3, t4 = 4, t5 = 5, t6 = 6, t7 = 7;           \
    int64_t q0 = roots[0], q1 = roots[1], q2 = roots[2], q3 = roots[3];               \
    int64_t q4 = roots[4], q5 = roots[5], q6 = roots[6], q7 = roots[7];               \
    int64_t done = 0;                                                                 \
    while (done < n_trees) {                                                          \
        for (int s = 0; s < (K); ++s) {                                               \
            MOVE(q0) MOVE(q1) MOVE(q2) MOVE(q3)                                       \
            MOVE(q4) MOVE(q5) MOVE(q6) MOVE(q7)                                       \
        }                                                                             \
        WALK_NEXT(q0, t0) WALK_NEXT(q1, t1) WALK_NEXT(q2, t2)                \
        WALK_NEXT(q3, t3) WALK_NEXT(q4, t4) WALK_NEXT(q5, t5)                \
        WALK_NEXT(q6, t6) WALK_NEXT(q7, t7)                                     \
    }                                                                                 \
}
WALK8(walk8, WALK_HARVEST)

/* A tree laid out complete for the walks of many rows (walk.py complete_arrays): slot i of
 * a tree of depth d (0 <= i < 2^d - 1, heap order: the children of i are 2 i + 1 and 2 i + 2)
 * holds the node at its level and position, or a node that sends every row left
 * (thr = +inf) below a leaf reached early, so every walk takes exactly d steps and ends at
 * slot 2^d - 1 + s, whose leaf is slot_leaf[s]. */
typedef struct {
    double thr;
    int32_t col;
    int32_t pad;
} walk_cnode;

/* rows stepping together: 16 measured fastest of 8, 16 and 32 (walk.py default_block_bytes) */
#define QS_CWALK_ROWS 16

/* A slot of a complete tree whose thresholds are all float32 values (XGBoost's): the
 * threshold as its order key (walk_key32), compared with the keys of the rows' float32
 * values: the same decisions as the float32 compare, half the bytes of a walk_cnode, and an
 * unsigned integer compare whose carry flag is the step's bit (WALK_KEY_STEP). */
typedef struct {
    uint32_t key;
    int32_t col;
} walk_cnode32;

/* The order key of a float32 value: for any two values a and b but NaN, a > b exactly when
 * key(a) > key(b) as unsigned integers (-0.0 and 0.0, equal, share the key of 0.0: adding
 * 0.0 turns -0.0 into 0.0 and leaves every other value as it is). The sign bit set: every
 * bit flipped; else the sign bit set. The layout's keys: walk.py float32_keys. */
static inline uint32_t walk_key32(float f)
{
    union {
        float f;
        uint32_t u;
    } c;
    c.f = f + 0.0f;
    return c.u ^ ((0u - (c.u >> 31)) | 0x80000000u);
}

/* The faults walk_complete_fault finds, in the order it looks for them. */
enum {
    WALK_COMPLETE_SOUND = 0,     /* complete trees every walk stays inside */
    WALK_COMPLETE_NONE = 1,      /* no complete trees: every field empty */
    WALK_COMPLETE_STRAY = 2,     /* fields of complete trees that say there are none */
    WALK_COMPLETE_SHAPE = 3,     /* offsets not their depths', two depths in a group of 8 */
    WALK_COMPLETE_SLOT = 4,      /* a slot's column or threshold */
    WALK_COMPLETE_LEAF = 5       /* an end slot's leaf */
};

/* Whether a layout's complete trees (walk.py complete_arrays, as a model file holds them)
 * keep every walk inside its tree's slots and end it at one of its leaves: cnode_offset,
 * cdepth and cslot_offset per tree (n_off, n_depth, n_soff values), the slots (n_words
 * 64-bit words: two a walk_cnode, or one a walk_cnode32, which *cfloat then says), the end
 * slots' leaves (n_ends). Tree t's slots are cnode_offset[t] .. + 2^d - 1 and its end slots
 * cslot_offset[t] .. + 2^d for its depth d (at most 30); the trees of a group of eight
 * share one depth, the last group filled up to eight with trees of its last tree's depth,
 * whose slots follow the real trees' and whose end slots name leaf 0 of a one-leaf tree.
 * Every slot reads a column of the expanded row's n_cols and holds no NaN threshold; every
 * end slot names a leaf of its tree (tree t's node_offset[t + 1] - node_offset[t] + 1).
 * Python's WalkLayout and the C library's read_walk check a file's trees by this. */
static inline int walk_complete_fault(const uint64_t* cnodes, int64_t n_words,
                                      const int64_t* off, int64_t n_off, const uint8_t* depth,
                                      int64_t n_depth, const int64_t* soff, int64_t n_soff,
                                      const int32_t* ends, int64_t n_ends,
                                      const int64_t* node_offset, int64_t n_trees,
                                      int64_t n_cols, int* cfloat)
{
    *cfloat = 0;
    if (n_off == 1 && n_depth == 0)
        return n_words == 0 && n_soff == 1 && n_ends == 0 && off[0] == 0 ? WALK_COMPLETE_NONE
                                                                          : WALK_COMPLETE_STRAY;
    if (n_trees < 1 || n_depth != n_trees || n_off != n_trees + 1 || n_soff != n_trees + 1 ||
        off[0] != 0 || soff[0] != 0)
        return WALK_COMPLETE_SHAPE;
    int64_t bad = 0;
    for (int64_t t = 0; t < n_trees; t++) {
        int64_t d = depth[t] <= 30 ? depth[t] : 30;
        bad |= (int64_t)(depth[t] > 30) | (int64_t)(depth[t] != depth[t & ~(int64_t)7]) |
               (int64_t)(off[t + 1] - off[t] != ((int64_t)1 << d) - 1) |
               (int64_t)(soff[t + 1] - soff[t] != (int64_t)1 << d);
    }
    if (bad)
        return WALK_COMPLETE_SHAPE;
    const int64_t fill = (8 - n_trees % 8) % 8, last = depth[n_trees - 1];
    const int64_t slots = off[n_trees] + fill * (((int64_t)1 << last) - 1);
    const int64_t n_end = soff[n_trees] + fill * ((int64_t)1 << last);
    if ((n_words != slots && n_words != 2 * slots) || n_ends != n_end)
        return WALK_COMPLETE_SHAPE;
    *cfloat = n_words == slots && slots > 0;
    if (*cfloat) {
        const walk_cnode32* c = (const walk_cnode32*)cnodes;
        const uint32_t most = walk_key32(INFINITY), least = walk_key32(-INFINITY);
        for (int64_t i = 0; i < slots; i++)
            bad |= (int64_t)((uint64_t)(uint32_t)c[i].col >= (uint64_t)n_cols) |
                   (int64_t)(c[i].key > most) | (int64_t)(c[i].key < least);
    } else {
        const walk_cnode* c = (const walk_cnode*)cnodes;
        for (int64_t i = 0; i < slots; i++)
            bad |= (int64_t)((uint64_t)(uint32_t)c[i].col >= (uint64_t)n_cols) |
                   (int64_t)(c[i].thr != c[i].thr);
    }
    if (bad)
        return WALK_COMPLETE_SLOT;
    for (int64_t t = 0, e = 0; t < n_trees + fill; t++) {
        const int64_t leaves = t < n_trees ? node_offset[t + 1] - node_offset[t] + 1 : 1;
        const int64_t stop = e + ((int64_t)1 << (t < n_trees ? depth[t] : last));
        for (; e < stop; e++)
            bad |= (int64_t)((uint64_t)(uint32_t)ends[e] >= (uint64_t)leaves);
    }
    return bad ? WALK_COMPLETE_LEAF : WALK_COMPLETE_SOUND;
}

/* The exit leaf of one complete tree of depth `depth` for n_rows expanded rows (row r's at
 * xr + r * xr_stride) into leaf[r * leaf_stride]: QS_CWALK_ROWS rows step together, each
 * step a load of the node, a load of the value, a compare and two additions, so the rows'
 * chains overlap and nothing is loaded but the slot. A last group of fewer rows steps
 * together too, the rows it lacks replaced by copies of its last row (whose leaves are not
 * stored): one row alone would wait on each step. NODE / VALUE: the slot and value types
 * (walk_complete: double; walk_complete32: float32 order keys, half the bytes, for XGBoost
 * models whose thresholds are float32 values: walk.py CNODE32_DTYPE). RIGHT: the test. */
#define WALK_GOES_RIGHT(p, x) ((x)[(p)->col] > (p)->thr)
#define WALK_KEY_RIGHT(p, x) ((p)->key < (x)[(p)->col])
#define WALK_COMPLETE(NAME, NODE, VALUE, RIGHT)                                            \
static inline void NAME(const NODE* nodes, const int32_t* slot_leaf, int depth,              \
                        const VALUE* xr, int64_t xr_stride, int64_t n_rows, int32_t* leaf,   \
                        int64_t leaf_stride)                                                 \
{                                                                                            \
    const int32_t first = (int32_t)((1u << depth) - 1u);                                     \
    for (int64_t r = 0; r < n_rows; r += QS_CWALK_ROWS) {                                    \
        const int64_t valid = n_rows - r < QS_CWALK_ROWS ? n_rows - r : QS_CWALK_ROWS;       \
        const VALUE* x[QS_CWALK_ROWS];                                                       \
        int32_t i[QS_CWALK_ROWS];                                                            \
        for (int k = 0; k < QS_CWALK_ROWS; ++k) {                                            \
            x[k] = xr + (r + (k < valid ? k : valid - 1)) * xr_stride;                       \
            i[k] = 0;                                                                        \
        }                                                                                    \
        for (int l = 0; l < depth; ++l)                                                      \
            for (int k = 0; k < QS_CWALK_ROWS; ++k) {                                        \
                const NODE* p = nodes + i[k];                                                \
                i[k] = 2 * i[k] + 1 + RIGHT(p, x[k]);                                        \
            }                                                                                \
        for (int k = 0; k < valid; ++k)                                                      \
            leaf[(r + k) * leaf_stride] = slot_leaf[i[k] - first];                           \
    }                                                                                        \
}
WALK_COMPLETE(walk_complete, walk_cnode, double, WALK_GOES_RIGHT)
WALK_COMPLETE(walk_complete32, walk_cnode32, uint32_t, WALK_KEY_RIGHT)

/* One row through complete trees in groups of eight (walk.py complete_arrays: trees 8 g to
 * 8 g + 7 have the same depth, the group's deepest, and lie one after the other, so tree k of a
 * group is at the group's first slot plus k (2^d - 1); the last group is filled up with trees
 * that send every row to their first leaf). The eight walks of a group step together, each
 * step a load of the slot, a load of the value, a compare and two additions, the eight
 * chains of loads overlapping; every tree takes exactly its group's depth in steps, with no
 * branch on the data and no child loaded. With the depth a constant (one copy of the group
 * walk per depth, up to WALK_GROUP_DEPTHS) the eight slots' addresses are one register
 * plus constants, faster than with the depth a variable and than walk8 on the same rows
 * (benchmarks/experiments/walk_groups_floor.py). leaf[] receives n_trees rounded up to 8
 * leaves (the fill trees' past n_trees). */
#if defined(__GNUC__) || defined(__clang__)
#define WALK_INLINE static inline __attribute__((always_inline))
#elif defined(_MSC_VER)
#define WALK_INLINE static __forceinline
#else
#define WALK_INLINE static inline
#endif

#define WALK_GROUP_DEPTHS 8

/* FN(B, S, depth, ...) with the depth a constant from 1 to WALK_GROUP_DEPTHS (0 and
 * deeper groups: the variable d itself), so that each copy of FN is unrolled for its depth */
#define WALK_BY_DEPTH(d, FN, B, S, ...)                                                   \
    switch (d) {                                                                             \
    case 1: FN(B, S, 1, __VA_ARGS__); break;                                                 \
    case 2: FN(B, S, 2, __VA_ARGS__); break;                                                 \
    case 3: FN(B, S, 3, __VA_ARGS__); break;                                                 \
    case 4: FN(B, S, 4, __VA_ARGS__); break;                                                 \
    case 5: FN(B, S, 5, __VA_ARGS__); break;                                                 \
    case 6: FN(B, S, 6, __VA_ARGS__); break;                                                 \
    case 7: FN(B, S, 7, __VA_ARGS__); break;                                                 \
    case 8: FN(B, S, 8, __VA_ARGS__); break;                                                 \
    default: FN(B, S, d, __VA_ARGS__);                                                       \
    }

/* One step of a walk of a complete tree, its index I (uint64_t) 1-based in heap order (the
 * root 1, the children of i 2 i and 2 i + 1): slot i of the tree is BASE[OFF + i], OFF (in
 * slots) a constant where the group's depth is one, the row's expanded values X.
 * WALK_THR_STEP: a node with a threshold thr (walk_cnode) compared with the values (double).
 * WALK_KEY_STEP: a walk_cnode32 and the
 * values' keys; on x86-64 with GCC four instructions, the slot's address taken by
 * each load from I (no address computed), the compare's carry flag the step's bit and
 * `adc I, I` the step (2 I + bit), where the compiler's code computes the bit and the address
 * in seven to nine (measured against the same walks with WALK_THR_STEP on float32 slots:
 * python -m benchmarks.experiments.walk_groups_floor --shapes ydf-uniform-d7,
 * xgb-depth8-uniform-1000 --rounds 15: groups and pairs against float_groups and
 * float_pairs). The "memory" clobber keeps the steps after the stores of the row they read. */
#define WALK_THR_STEP(NODE, BASE, OFF, X, I)                                                 \
    {                                                                                        \
        const NODE* p_ = (BASE) + (OFF) + (I);                                               \
        (I) = 2 * (I) + WALK_GOES_RIGHT(p_, X);                                              \
    }
/* GCC only: the slot's offset is an immediate ("i") where __builtin_constant_p says it is a
 * constant, which GCC decides after inlining and unrolling; other compilers take the C step */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define WALK_KEY_ASM(COL, KEY, OPERAND)                                                      \
    __asm__("movslq " COL ", %[c]\n\t"                                                      \
            "movl (%[x],%[c],4), %k[c]\n\t"                                                  \
            "cmpl %k[c], " KEY "\n\t"                                                        \
            "adcq %[i], %[i]"                                                                \
            : [i] "+r"(I_), [c] "=&r"(c_)                                                    \
            : [b] "r"(b_), [x] "r"(X_), OPERAND                                              \
            : "cc", "memory")
#define WALK_KEY_STEP(NODE, BASE, OFF, X, I)                                                 \
    {                                                                                        \
        uint64_t c_;                                                                         \
        uint64_t I_ = (I);                                                                   \
        const uint32_t* X_ = (X);                                                            \
        if (__builtin_constant_p(OFF)) {                                                     \
            const NODE* b_ = (BASE);                                                         \
            WALK_KEY_ASM("%c[d]+4(%[b],%[i],8)", "%c[d](%[b],%[i],8)",                      \
                         [d] "i"(8 * (OFF)));                                                \
        } else {                                                                             \
            const NODE* b_ = (BASE) + (OFF);                                                 \
            WALK_KEY_ASM("4(%[b],%[i],8)", "(%[b],%[i],8)", [d] "i"(0));                    \
        }                                                                                    \
        (I) = I_;                                                                            \
    }
#else
#define WALK_KEY_STEP(NODE, BASE, OFF, X, I)                                                 \
    {                                                                                        \
        const NODE* p_ = (BASE) + (OFF) + (I);                                               \
        (I) = 2 * (I) + WALK_KEY_RIGHT(p_, X);                                               \
    }
#endif

/* The steps of a group's walks: W trees of one depth (tree k's slots from base + k span),
 * index i[k] of tree k, one row's expanded values x; or eight trees and two rows (i[], j[]).
 * Sixteen chains (W 16, or two rows) spill some indices to the stack, yet keep twice as many
 * loads in flight as eight where the nodes outgrow the L2 cache, for the key steps too. */
#define WALK_ROW_STEPS(STEP, NODE, BASE, SPAN, DEPTH, X, I, W)                               \
    for (int l = 0; l < (DEPTH); ++l)                                                        \
        for (int k = 0; k < (W); ++k)                                                        \
            STEP(NODE, BASE, k * (SPAN) - 1, X, (I)[k])
#define WALK_PAIR_STEPS(STEP, NODE, BASE, SPAN, DEPTH, XA, XB, I, J)                         \
    for (int l = 0; l < (DEPTH); ++l)                                                        \
        for (int k = 0; k < 8; ++k) {                                                        \
            STEP(NODE, BASE, k * (SPAN) - 1, XA, (I)[k])                                     \
            STEP(NODE, BASE, k * (SPAN) - 1, XB, (J)[k])                                     \
        }

/* tree k's end slot of index i (2^d .. 2^(d + 1) - 1) in the group's end slots */
#define WALK_END(k, span, i) ((k) * ((span) + 1) + (int64_t)(i) - ((span) + 1))

#define WALK_GROUPS(NAME, NODE, VALUE, STEP)                                               \
WALK_INLINE void NAME##_group(const NODE* base, const int32_t* slot_leaf, int depth,      \
                                 const VALUE* xr, int32_t* leaf)                             \
{                                                                                            \
    const int32_t span = (int32_t)((1u << depth) - 1u);                                      \
    uint64_t i[8] = {1, 1, 1, 1, 1, 1, 1, 1};                                                \
    WALK_ROW_STEPS(STEP, NODE, base, span, depth, xr, i, 8)                                  \
    for (int k = 0; k < 8; ++k)                                                              \
        leaf[k] = slot_leaf[WALK_END(k, span, i[k])];                                        \
}                                                                                            \
static inline void NAME(const NODE* nodes, const int64_t* node_offset, const uint8_t* depth, \
                        const int32_t* slot_leaf, const int64_t* slot_offset,                \
                        int64_t n_trees, const VALUE* xr, int32_t* leaf)                     \
{                                                                                            \
    for (int64_t t = 0; t < n_trees; t += 8) {                                               \
        const NODE* b = nodes + node_offset[t];                                              \
        const int32_t* s = slot_leaf + slot_offset[t];                                       \
        WALK_BY_DEPTH(depth[t], NAME##_group, b, s, xr, leaf + t)                         \
    }                                                                                        \
}
WALK_GROUPS(walk_groups, walk_cnode, double, WALK_THR_STEP)
WALK_GROUPS(walk_groups32, walk_cnode32, uint32_t, WALK_KEY_STEP)

/* Two rows through the groups of complete trees together: sixteen chains of loads a group
 * (eight trees, two rows) where one row has eight, the same slots read for both rows: less
 * time a row than one row at a time (same harness). leaf_a[] / leaf_b[] as leaf[] of
 * WALK_GROUPS. */
#define WALK_GROUPS2(NAME, NODE, VALUE, STEP)                                           \
WALK_INLINE void NAME##_group(const NODE* base, const int32_t* slot_leaf, int depth,      \
                                 const VALUE* xa, const VALUE* xb, int32_t* la,              \
                                 int32_t* lb)                                                \
{                                                                                            \
    const int32_t span = (int32_t)((1u << depth) - 1u);                                      \
    uint64_t i[8] = {1, 1, 1, 1, 1, 1, 1, 1};                                                \
    uint64_t j[8] = {1, 1, 1, 1, 1, 1, 1, 1};                                                \
    WALK_PAIR_STEPS(STEP, NODE, base, span, depth, xa, xb, i, j)                          \
    for (int k = 0; k < 8; ++k) {                                                            \
        la[k] = slot_leaf[WALK_END(k, span, i[k])];                                          \
        lb[k] = slot_leaf[WALK_END(k, span, j[k])];                                          \
    }                                                                                        \
}                                                                                            \
static inline void NAME(const NODE* nodes, const int64_t* node_offset, const uint8_t* depth, \
                        const int32_t* slot_leaf, const int64_t* slot_offset,                \
                        int64_t n_trees, const VALUE* xa, const VALUE* xb, int32_t* la,      \
                        int32_t* lb)                                                         \
{                                                                                            \
    for (int64_t t = 0; t < n_trees; t += 8) {                                               \
        const NODE* b = nodes + node_offset[t];                                              \
        const int32_t* s = slot_leaf + slot_offset[t];                                       \
        WALK_BY_DEPTH(depth[t], NAME##_group, b, s, xa, xb, la + t, lb + t)               \
    }                                                                                        \
}
WALK_GROUPS2(walk_groups_pair, walk_cnode, double, WALK_THR_STEP)
WALK_GROUPS2(walk_groups_pair32, walk_cnode32, uint32_t, WALK_KEY_STEP)

/* One row's score through the groups of complete trees, the leaves' values added as each
 * group ends: slot_value[s] is end slot s's leaf value (what the tree adds to the score),
 * added to acc in tree order (the fill trees' slots are never read: the last group adds
 * only its n_trees % 8 real trees). Adding the values after the walk is a chain of one
 * dependent addition a tree; added group by group the chain overlaps the next group's loads.
 * Two consecutive groups of one depth (the usual case: depth-wise trees) walk together, 16
 * chains of loads in flight where 8 wait on the cache when the nodes outgrow the L2 cache
 * (for the key steps too; 32 trees at a time spill the indices;
 * benchmarks/experiments/walk_values.py). NODE / VALUE / STEP as WALK_GROUPS; ACC: the
 * score's type (float for XGBoost's float32 sums, double otherwise). */
#define WALK_SUM_MAX 16
#define WALK_GROUPS_SUM(NAME, NODE, VALUE, ACC, STEP)                                \
WALK_INLINE void NAME##_group(const NODE* base, const ACC* slot_value, int depth,         \
                                 const VALUE* xr, ACC* acc, int n, const int w)              \
{                                                                                            \
    const int32_t span = (int32_t)((1u << depth) - 1u);                                      \
    uint64_t i[WALK_SUM_MAX];                                                                \
    for (int k = 0; k < WALK_SUM_MAX; ++k)                                                   \
        i[k] = 1;                                                                            \
    WALK_ROW_STEPS(STEP, NODE, base, span, depth, xr, i, w)                                  \
    ACC a = *acc;                                                                            \
    for (int k = 0; k < n; ++k)                                                              \
        a = a + slot_value[WALK_END(k, span, i[k])];                                         \
    *acc = a;                                                                                \
}                                                                                            \
static inline ACC NAME(const NODE* nodes, const int64_t* node_offset, const uint8_t* depth,  \
                       const ACC* slot_value, const int64_t* slot_offset, int64_t n_trees,   \
                       const VALUE* xr, ACC acc)                                             \
{                                                                                            \
    int64_t t = 0;                                                                           \
    while (t < n_trees) {                                                                    \
        const NODE* b = nodes + node_offset[t];                                              \
        const ACC* s = slot_value + slot_offset[t];                                          \
        if (t + 16 <= n_trees && depth[t + 8] == depth[t]) {                       \
            WALK_BY_DEPTH(depth[t], NAME##_group, b, s, xr, &acc, 16, 16)                 \
            t += 16;                                                                         \
        } else {                                                                             \
            const int n = n_trees - t < 8 ? (int)(n_trees - t) : 8;                          \
            WALK_BY_DEPTH(depth[t], NAME##_group, b, s, xr, &acc, n, 8)                   \
            t += 8;                                                                          \
        }                                                                                    \
    }                                                                                        \
    return acc;                                                                              \
}
WALK_GROUPS_SUM(walk_groups_sum, walk_cnode, double, double, WALK_THR_STEP)
WALK_GROUPS_SUM(walk_groups_sum_f, walk_cnode, double, float, WALK_THR_STEP)
WALK_GROUPS_SUM(walk_groups_sum32, walk_cnode32, uint32_t, float, WALK_KEY_STEP)

/* Two rows' scores through the groups together (WALK_GROUPS2 with the sums of
 * WALK_GROUPS_SUM): acc[0] row a's, acc[1] row b's. */
#define WALK_GROUPS2_SUM(NAME, NODE, VALUE, ACC, STEP)                                  \
WALK_INLINE void NAME##_group(const NODE* base, const ACC* slot_value, int depth,         \
                                 const VALUE* xa, const VALUE* xb, ACC* acc, int n)          \
{                                                                                            \
    const int32_t span = (int32_t)((1u << depth) - 1u);                                      \
    uint64_t i[8] = {1, 1, 1, 1, 1, 1, 1, 1};                                                \
    uint64_t j[8] = {1, 1, 1, 1, 1, 1, 1, 1};                                                \
    WALK_PAIR_STEPS(STEP, NODE, base, span, depth, xa, xb, i, j)                          \
    ACC a = acc[0], b = acc[1];                                                              \
    for (int k = 0; k < n; ++k) {                                                            \
        a = a + slot_value[WALK_END(k, span, i[k])];                                         \
        b = b + slot_value[WALK_END(k, span, j[k])];                                         \
    }                                                                                        \
    acc[0] = a;                                                                              \
    acc[1] = b;                                                                              \
}                                                                                            \
static inline void NAME(const NODE* nodes, const int64_t* node_offset, const uint8_t* depth, \
                        const ACC* slot_value, const int64_t* slot_offset, int64_t n_trees,  \
                        const VALUE* xa, const VALUE* xb, ACC* acc)                          \
{                                                                                            \
    ACC two[2] = {acc[0], acc[1]};                                                           \
    for (int64_t t = 0; t < n_trees; t += 8) {                                               \
        const NODE* b = nodes + node_offset[t];                                              \
        const ACC* s = slot_value + slot_offset[t];                                          \
        const int n = n_trees - t < 8 ? (int)(n_trees - t) : 8;                              \
        WALK_BY_DEPTH(depth[t], NAME##_group, b, s, xa, xb, two, n)                       \
    }                                                                                        \
    acc[0] = two[0];                                                                         \
    acc[1] = two[1];                                                                         \
}
WALK_GROUPS2_SUM(walk_groups_pair_sum, walk_cnode, double, double, WALK_THR_STEP)
WALK_GROUPS2_SUM(walk_groups_pair_sum_f, walk_cnode, double, float, WALK_THR_STEP)
WALK_GROUPS2_SUM(walk_groups_pair_sum32, walk_cnode32, uint32_t, float, WALK_KEY_STEP)

#endif
