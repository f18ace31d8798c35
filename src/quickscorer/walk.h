/* Root-to-leaf walks of eight trees at once, without a branch on the data.
 *
 * A node is one test "go right when xr[col] > thr" on an expanded row xr whose columns already
 * hold each feature as a node of a given missing-value rule sees it (missing values mapped to
 * -inf or +inf, the side they go to), so a step is a load of the node, a load of the value,
 * one compare and a load of the chosen child: no test of NaN, of zero or of categories inside
 * the walk. A child is a node index (>= 0) or ~leaf (< 0, the leaf's in-order number).
 *
 * Eight cursors walk their own trees (cursor k takes trees k, k + 8, k + 16, ...), their
 * eight independent chains of loads overlapping where a single walk waits on each. A leaf
 * holds its cursor: child ~l is also an index, of the record nodes[~l] (that is
 * nodes[-1 - l], laid out before the table by _walk.WalkLayout for every leaf number of the
 * model), whose threshold is +inf and whose children are itself, so a cursor that reached
 * leaf l steps on the spot. Every QS_WALK_HARVEST steps each cursor on such a record stores
 * its leaf and restarts at its next tree's root, chosen by the sign of the index without a
 * branch; the only branch is the loop's, taken until every tree has its leaf. A cursor past
 * its last tree circles on a node whose children are itself.
 */
#ifndef QS_WALK_H
#define QS_WALK_H

#include <stdint.h>

typedef struct {
    double thr;
    int32_t col;
    int32_t kid[2];      /* [0]: left (xr[col] <= thr), [1]: right */
    int32_t pad;
} qs_walk_node;

#if defined(__GNUC__) || defined(__clang__)
#define QS_WALK_OPAQUE(v) __asm__("" : "+r"(v))
#else
#define QS_WALK_OPAQUE(v) ((void)0)
#endif

/* One cursor's step: node q to its child (a leaf's record to itself). */
#define QS_WALK_MOVE(q)                                                               \
    {                                                                                 \
        const qs_walk_node* p_ = nodes + (q);                                         \
        q = p_->kid[xr[p_->col] > p_->thr];                                           \
    }

/* One cursor's harvest: at a leaf's record (q < 0), store leaf ~q for tree t, count it in
 * `done` and move to tree t + 8's root, read before the choice (its address known since the
 * cursor's last leaf); elsewhere nothing changes but leaf[t], which a later leaf
 * overwrites. The empty asm keeps the compiler from turning the choice into a branch. */
#define QS_WALK_NEXT(q, t)                                                            \
    {                                                                                 \
        int64_t m_ = (q) >> 63;                                                       \
        int64_t next_ = roots[t + 8];                                                 \
        QS_WALK_OPAQUE(m_);                                                           \
        leaf[t] = (int32_t)~(q);                                                      \
        done -= m_;                                                                   \
        q = m_ ? next_ : (q);                                                         \
        t += 8 & m_;                                                                  \
    }

/* Steps between harvests. A step costs 8 instructions in gcc's code, a harvest about 9 a
 * cursor: harvesting after every step (as until session 27) spent more on the harvests than
 * on the steps, where a cursor that waits up to QS_WALK_HARVEST - 1 steps on its leaf wastes
 * less.
 * One row, the walk alone in C (benchmarks/walk_groups_floor.py, AMD EPYC Zen 3, medians of
 * 11 rounds), against a harvest every step: 3 steps 1.03x to 1.18x faster on five leaf-wise
 * 1,000-tree models (31 to 64 leaves; 255 leaves tied by the best rounds), 2 and 4 steps
 * less on most; against session 26's step 1.25x to 1.55x. */
#define QS_WALK_HARVEST 3

/* The exit leaf of each of the n_trees trees into leaf[0 .. n_trees). roots[t] is tree t's
 * root node for t < n_trees and the self-loop node for n_trees <= t < n_trees + 16; leaf has
 * room for n_trees + 8 entries (cursors past their last tree write there); nodes[-1 - l] is
 * leaf l's record (above) for every leaf number l of the trees. QS_WALK8(NAME, K) defines
 * the walk with a harvest every K steps: qs_walk8 with QS_WALK_HARVEST (other K:
 * benchmarks/walk_groups_floor.c). */
#define QS_WALK8(NAME, K)                                                             \
static inline void NAME(const qs_walk_node* nodes, const int32_t* roots, int64_t n_trees,  \
                        const double* xr, int32_t* leaf)                              \
{                                                                                     \
    int64_t t0 = 0, t1 = 1, t2 = 2, t3 = 3, t4 = 4, t5 = 5, t6 = 6, t7 = 7;           \
    int64_t q0 = roots[0], q1 = roots[1], q2 = roots[2], q3 = roots[3];               \
    int64_t q4 = roots[4], q5 = roots[5], q6 = roots[6], q7 = roots[7];               \
    int64_t done = 0;                                                                 \
    while (done < n_trees) {                                                          \
        for (int s = 0; s < (K); ++s) {                                               \
            QS_WALK_MOVE(q0) QS_WALK_MOVE(q1) QS_WALK_MOVE(q2) QS_WALK_MOVE(q3)       \
            QS_WALK_MOVE(q4) QS_WALK_MOVE(q5) QS_WALK_MOVE(q6) QS_WALK_MOVE(q7)       \
        }                                                                             \
        QS_WALK_NEXT(q0, t0) QS_WALK_NEXT(q1, t1) QS_WALK_NEXT(q2, t2)                \
        QS_WALK_NEXT(q3, t3) QS_WALK_NEXT(q4, t4) QS_WALK_NEXT(q5, t5)                \
        QS_WALK_NEXT(q6, t6) QS_WALK_NEXT(q7, t7)                                     \
    }                                                                                 \
}
QS_WALK8(qs_walk8, QS_WALK_HARVEST)

/* A tree laid out complete for the walks of many rows (walk.py complete_arrays): slot i of
 * a tree of depth d (0 <= i < 2^d - 1, heap order: the children of i are 2 i + 1 and 2 i + 2)
 * holds the node at its level and position, or a node that sends every row left
 * (thr = +inf) below a leaf reached early, so every walk takes exactly d steps and ends at
 * slot 2^d - 1 + s, whose leaf is slot_leaf[s]. */
typedef struct {
    double thr;
    int32_t col;
    int32_t pad;
} qs_walk_cnode;

/* rows stepping together: 16 measured fastest of 8, 16 and 32 (walk.py default_block_bytes) */
#define QS_CWALK_ROWS 16

/* A slot of a complete tree whose thresholds are all float32 values (XGBoost's), compared
 * with the rows' float32 values: the same decisions, half the bytes. */
typedef struct {
    float thr;
    int32_t col;
} qs_walk_cnode32;

/* The exit leaf of one complete tree of depth `depth` for n_rows expanded rows (row r's at
 * xr + r * xr_stride) into leaf[r * leaf_stride]: QS_CWALK_ROWS rows step together, each
 * step a load of the node, a load of the value, a compare and two additions, so the rows'
 * chains overlap and nothing is loaded but the slot. A last group of fewer rows steps
 * together too, the rows it lacks replaced by copies of its last row (whose leaves are not
 * stored): one row alone would wait on each step. NODE / VALUE: the slot and value types
 * (qs_walk_complete: double; qs_walk_complete32: float, 1.4x to 1.6x faster on XGBoost
 * depth 9 and 10, walk.py CNODE32_DTYPE). */
#define QS_WALK_COMPLETE(NAME, NODE, VALUE)                                                   \
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
                i[k] = 2 * i[k] + 1 + (x[k][p->col] > p->thr);                               \
            }                                                                                \
        for (int k = 0; k < valid; ++k)                                                      \
            leaf[(r + k) * leaf_stride] = slot_leaf[i[k] - first];                           \
    }                                                                                        \
}
QS_WALK_COMPLETE(qs_walk_complete, qs_walk_cnode, double)
QS_WALK_COMPLETE(qs_walk_complete32, qs_walk_cnode32, float)

/* One row through complete trees in groups of eight (walk.py complete_arrays: trees 8 g to
 * 8 g + 7 have the same depth, the group's deepest, and lie one after the other, so tree k of a
 * group is at the group's first slot plus k (2^d - 1); the last group is filled up with trees
 * that send every row to their first leaf). The eight walks of a group step together, each
 * step a load of the slot, a load of the value, a compare and two additions, the eight
 * chains of loads overlapping; every tree takes exactly its group's depth in steps, with no
 * branch on the data and no child loaded. With the depth a constant (one copy of the group
 * walk per depth, up to QS_WALK_GROUP_DEPTHS) the eight slots' addresses are one register
 * plus constants. Measured against qs_walk8 on the same expanded rows (C harness, 1,000
 * trees of depth 6, AMD EPYC Zen 3): 9.5 against 20.8 us a row; with the depth a variable
 * 11.2. leaf[] receives n_trees rounded up to 8 leaves (the fill trees' past n_trees). */
#if defined(__GNUC__) || defined(__clang__)
#define QS_WALK_INLINE static inline __attribute__((always_inline))
#elif defined(_MSC_VER)
#define QS_WALK_INLINE static __forceinline
#else
#define QS_WALK_INLINE static inline
#endif

#define QS_WALK_GROUP_DEPTHS 8

/* FN(B, S, depth, ...) with the depth a constant from 1 to QS_WALK_GROUP_DEPTHS (0 and
 * deeper groups: the variable d itself), so that each copy of FN is unrolled for its depth */
#define QS_WALK_BY_DEPTH(d, FN, B, S, ...)                                                   \
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

/* The steps of a group's walks: W trees of one depth (tree k's slots from base + k span),
 * index i[k] of tree k, one row's expanded values x; or eight trees and two rows (i[], j[]). */
#define QS_WALK_ROW_STEPS(NODE, BASE, SPAN, DEPTH, X, I, W)                                  \
    for (int l = 0; l < (DEPTH); ++l)                                                        \
        for (int k = 0; k < (W); ++k) {                                                      \
            const NODE* p = (BASE) + k * (SPAN) + (I)[k];                                    \
            (I)[k] = 2 * (I)[k] + 1 + ((X)[p->col] > p->thr);                                \
        }
#define QS_WALK_PAIR_STEPS(NODE, BASE, SPAN, DEPTH, XA, XB, I, J)                            \
    for (int l = 0; l < (DEPTH); ++l)                                                        \
        for (int k = 0; k < 8; ++k) {                                                        \
            const NODE* p = (BASE) + k * (SPAN) + (I)[k];                                    \
            const NODE* q = (BASE) + k * (SPAN) + (J)[k];                                    \
            (I)[k] = 2 * (I)[k] + 1 + ((XA)[p->col] > p->thr);                               \
            (J)[k] = 2 * (J)[k] + 1 + ((XB)[q->col] > q->thr);                               \
        }

#define QS_WALK_GROUPS(NAME, NODE, VALUE)                                                     \
QS_WALK_INLINE void NAME##_group(const NODE* base, const int32_t* slot_leaf, int depth,      \
                                 const VALUE* xr, int32_t* leaf)                             \
{                                                                                            \
    const int32_t span = (int32_t)((1u << depth) - 1u);                                      \
    int32_t i[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                 \
    QS_WALK_ROW_STEPS(NODE, base, span, depth, xr, i, 8)                                     \
    for (int k = 0; k < 8; ++k)                                                              \
        leaf[k] = slot_leaf[k * (span + 1) + i[k] - span];                                   \
}                                                                                            \
static inline void NAME(const NODE* nodes, const int64_t* node_offset, const uint8_t* depth, \
                        const int32_t* slot_leaf, const int64_t* slot_offset,                \
                        int64_t n_trees, const VALUE* xr, int32_t* leaf)                     \
{                                                                                            \
    for (int64_t t = 0; t < n_trees; t += 8) {                                               \
        const NODE* b = nodes + node_offset[t];                                              \
        const int32_t* s = slot_leaf + slot_offset[t];                                       \
        QS_WALK_BY_DEPTH(depth[t], NAME##_group, b, s, xr, leaf + t)                         \
    }                                                                                        \
}
QS_WALK_GROUPS(qs_walk_groups, qs_walk_cnode, double)
QS_WALK_GROUPS(qs_walk_groups32, qs_walk_cnode32, float)

/* Two rows through the groups of complete trees together: sixteen chains of loads a group
 * (eight trees, two rows) where one row has eight, the same slots read for both rows. C
 * harness as above, 1,000 trees of depth 6: 7.7 to 8.7 us a row against 9.5 to 10.3 one
 * row at a time. leaf_a[] / leaf_b[] as leaf[] of QS_WALK_GROUPS. */
#define QS_WALK_GROUPS2(NAME, NODE, VALUE)                                                    \
QS_WALK_INLINE void NAME##_group(const NODE* base, const int32_t* slot_leaf, int depth,      \
                                 const VALUE* xa, const VALUE* xb, int32_t* la,              \
                                 int32_t* lb)                                                \
{                                                                                            \
    const int32_t span = (int32_t)((1u << depth) - 1u);                                      \
    int32_t i[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                 \
    int32_t j[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                 \
    QS_WALK_PAIR_STEPS(NODE, base, span, depth, xa, xb, i, j)                                \
    for (int k = 0; k < 8; ++k) {                                                            \
        la[k] = slot_leaf[k * (span + 1) + i[k] - span];                                     \
        lb[k] = slot_leaf[k * (span + 1) + j[k] - span];                                     \
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
        QS_WALK_BY_DEPTH(depth[t], NAME##_group, b, s, xa, xb, la + t, lb + t)               \
    }                                                                                        \
}
QS_WALK_GROUPS2(qs_walk_groups_pair, qs_walk_cnode, double)
QS_WALK_GROUPS2(qs_walk_groups_pair32, qs_walk_cnode32, float)

/* One row's score through the groups of complete trees, the leaves' values added as each
 * group ends: slot_value[s] is end slot s's leaf value (what the tree adds to the score),
 * added to acc in tree order (the fill trees' slots are never read: the last group adds
 * only its n_trees % 8 real trees). Adding the 1,000 values after the walk is a chain of
 * 1,000 dependent additions (3 cycles each, Zen 3: about 1 us, 13% of a one-row call on
 * 1,000 trees of depth 6); added group by group the chain overlaps the next group's loads.
 * Two consecutive groups of one depth (the usual case: depth-wise trees) walk together, 16
 * chains of loads in flight where 8 wait on the cache (the nodes of 1,000 trees of depth 6
 * outgrow Zen 3's L2): through the entry, 1.29x to 1.35x the time of eight trees at a time
 * with the sum after on four models of depth 5 and 6 (32 trees at a time spill the indices:
 * 0.97x to 1.03x; benchmarks/walk_values.py). NODE / VALUE as QS_WALK_GROUPS; ACC: the
 * score's type (float for XGBoost's float32 sums, double otherwise). */
#define QS_WALK_SUM_MAX 16
#define QS_WALK_GROUPS_SUM(NAME, NODE, VALUE, ACC)                                            \
QS_WALK_INLINE void NAME##_group(const NODE* base, const ACC* slot_value, int depth,         \
                                 const VALUE* xr, ACC* acc, int n, const int w)              \
{                                                                                            \
    const int32_t span = (int32_t)((1u << depth) - 1u);                                      \
    int32_t i[QS_WALK_SUM_MAX] = {0};                                                        \
    QS_WALK_ROW_STEPS(NODE, base, span, depth, xr, i, w)                                     \
    ACC a = *acc;                                                                            \
    for (int k = 0; k < n; ++k)                                                              \
        a = a + slot_value[k * (span + 1) + i[k] - span];                                    \
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
        if (t + 16 <= n_trees && depth[t + 8] == depth[t]) {                                 \
            QS_WALK_BY_DEPTH(depth[t], NAME##_group, b, s, xr, &acc, 16, 16)                 \
            t += 16;                                                                         \
        } else {                                                                             \
            const int n = n_trees - t < 8 ? (int)(n_trees - t) : 8;                          \
            QS_WALK_BY_DEPTH(depth[t], NAME##_group, b, s, xr, &acc, n, 8)                   \
            t += 8;                                                                          \
        }                                                                                    \
    }                                                                                        \
    return acc;                                                                              \
}
QS_WALK_GROUPS_SUM(qs_walk_groups_sum, qs_walk_cnode, double, double)
QS_WALK_GROUPS_SUM(qs_walk_groups_sum_f, qs_walk_cnode, double, float)
QS_WALK_GROUPS_SUM(qs_walk_groups_sum32, qs_walk_cnode32, float, float)

/* Two rows' scores through the groups together (QS_WALK_GROUPS2 with the sums of
 * QS_WALK_GROUPS_SUM): acc[0] row a's, acc[1] row b's. */
#define QS_WALK_GROUPS2_SUM(NAME, NODE, VALUE, ACC)                                           \
QS_WALK_INLINE void NAME##_group(const NODE* base, const ACC* slot_value, int depth,         \
                                 const VALUE* xa, const VALUE* xb, ACC* acc, int n)          \
{                                                                                            \
    const int32_t span = (int32_t)((1u << depth) - 1u);                                      \
    int32_t i[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                 \
    int32_t j[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                 \
    QS_WALK_PAIR_STEPS(NODE, base, span, depth, xa, xb, i, j)                                \
    ACC a = acc[0], b = acc[1];                                                              \
    for (int k = 0; k < n; ++k) {                                                            \
        a = a + slot_value[k * (span + 1) + i[k] - span];                                    \
        b = b + slot_value[k * (span + 1) + j[k] - span];                                    \
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
        QS_WALK_BY_DEPTH(depth[t], NAME##_group, b, s, xa, xb, two, n)                       \
    }                                                                                        \
    acc[0] = two[0];                                                                         \
    acc[1] = two[1];                                                                         \
}
QS_WALK_GROUPS2_SUM(qs_walk_groups_pair_sum, qs_walk_cnode, double, double)
QS_WALK_GROUPS2_SUM(qs_walk_groups_pair_sum_f, qs_walk_cnode, double, float)
QS_WALK_GROUPS2_SUM(qs_walk_groups_pair_sum32, qs_walk_cnode32, float, float)

#endif
