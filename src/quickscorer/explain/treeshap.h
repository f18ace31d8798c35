/* SHAP contributions of one tree for one row (docs/contributions.md): the recursion, the
 * quadrature, and XGBoost 3.3's own 8-point float32 quadrature (shap_xgb_quadrature_f32).
 *
 * A tree here: internal nodes 0 .. n-1 in canonical numbering (children c >= 0 internal,
 * c < 0 the leaf ~c), each node's cover (the training mass that reached it) and each leaf's,
 * and the row's decision at every internal node (dec[n]: 1 where the row goes left), taken
 * beforehand by the shared node rule (_forest.pxd), so that these functions see no input value.
 *
 * Two ways to the same numbers:
 *
 * - shap_classic_f64 / shap_classic_f32: TreeSHAP as Lundberg, Erion and Lee published it
 *   (Algorithm 2 of "Consistent Individualized Feature Attribution for Tree Ensembles"), a
 *   recursion that extends and unwinds the path's permutation weights, O(L D^2) a tree. Its
 *   operations are in the order LightGBM (float64) and XGBoost 3.2 (float32) run them, so
 *   that their contributions come out bit for bit on x86-64.
 *
 * - shap_quad: the same values from the Shapley weights written as an integral. For a leaf
 *   of value v whose path splits on the features F (each feature j once: z_j the product of
 *   its splits' cover ratios on the path, o_j 1 where the row takes all of them, else 0),
 *   feature i in F gets
 *       phi_i = v * integral over t in [0, 1] of (o_i - z_i) * prod_{j in F, j != i} f_j(t),
 *       f_j(t) = z_j + t (o_j - z_j),
 *   since integral t^k (1 - t)^(d-1-k) dt = k! (d-1-k)! / d!, the weight of a coalition of k of
 *   the other d - 1 features. The integrand is a polynomial of degree d - 1, so Gauss-Legendre
 *   quadrature with ceil(d / 2) points is exact. With C(t) = prod_j f_j(t) carried down the
 *   tree and g_j = (o_j - z_j) / f_j, phi_i = sum_q w_q v C(t_q) g_i(t_q): each edge on feature
 *   j adds the subtree's leaf sums times (g_j after the edge - g_j before it), which telescopes
 *   to the deepest split on j of each leaf. O(N Q) a tree (N nodes, Q points), and z_j does not
 *   depend on the row: only o does. Rounds differently from the recursion (docs say by how
 *   much).
 *
 * Interactions. Held on, feature i leaves the players and multiplies the leaf by o_i; held
 * off, by z_i (XGBoost's conditioning). Half their difference gives, for j != i,
 *       Phi_ij = v / 2 * integral of C(t) g_i(t) g_j(t) dt,
 *   the integrand again of degree d - 1 at most. The recursion conditions on each feature in
 *   turn, as XGBoost does (O(F L D^2) a tree). The quadrature telescopes both g: each pair
 *   of edges on one path, on distinct features, adds the deeper edge's subtree sums times
 *   both edges' changes of g; at an edge on j the changes of g_i above it add up to g_i
 *   there. So each edge takes, per other feature on its path, one sum over the points:
 *   O(N D Q) a tree.
 */
#ifndef QS_TREESHAP_H
#define QS_TREESHAP_H

#include <stdint.h>
#include <string.h>

#include "quickscorer/cpu.h"   /* CPU_TARGET, CPU_ISA_* */

typedef struct {
    const int32_t* left;          /* [n_nodes] children: c >= 0 internal, ~c a leaf */
    const int32_t* right;
    const int32_t* feature;       /* [n_nodes] split feature */
    const double* node_cover;     /* [n_nodes] */
    const double* leaf_cover;     /* [n_leaves] */
    const double* leaf_value;     /* [n_leaves] */
    const float* node_cover32;    /* the same in float32 (XGBoost's arithmetic) */
    const float* leaf_cover32;
    const float* leaf_value32;
    const uint8_t* swapped;       /* [n_nodes] 1 where the source's left child is this right
                                     (XGBoost's categorical nodes), or NULL: none is */
    int64_t n_nodes;
} shap_tree;

/* ---- TreeSHAP, the libraries' recursion ---------------------------------------------------
 * REAL: the libraries' precision; GUARD: XGBoost skips a path element of zero weight and zero
 * fraction when it sums the unwound path (LightGBM divides by the zero). The casts and the
 * order of each product are the libraries', so that every rounding is theirs. */
#define QS_SHAP_CLASSIC(NAME, REAL, COVER, LEAF, GUARD)                                       \
typedef struct { int32_t feature; REAL zero, one, pweight; } NAME##_elem;                     \
                                                                                             \
static void NAME##_extend(NAME##_elem* p, int ud, REAL zero, REAL one, int32_t feature)      \
{                                                                                            \
    p[ud].feature = feature;                                                                 \
    p[ud].zero = zero;                                                                       \
    p[ud].one = one;                                                                         \
    p[ud].pweight = (REAL)(ud == 0 ? 1 : 0);                                                 \
    for (int i = ud - 1; i >= 0; i--) {                                                      \
        p[i + 1].pweight += one * p[i].pweight * (REAL)(i + 1) / (REAL)(ud + 1);             \
        p[i].pweight = zero * p[i].pweight * (REAL)(ud - i) / (REAL)(ud + 1);                \
    }                                                                                        \
}                                                                                            \
                                                                                             \
static void NAME##_unwind(NAME##_elem* p, int ud, int k)                                     \
{                                                                                            \
    const REAL one = p[k].one, zero = p[k].zero;                                             \
    REAL next = p[ud].pweight;                                                               \
    for (int i = ud - 1; i >= 0; --i) {                                                      \
        if (one != 0) {                                                                      \
            const REAL tmp = p[i].pweight;                                                   \
            p[i].pweight = next * (REAL)(ud + 1) / ((REAL)(i + 1) * one);                    \
            next = tmp - p[i].pweight * zero * (REAL)(ud - i) / (REAL)(ud + 1);              \
        } else {                                                                             \
            p[i].pweight = (p[i].pweight * (REAL)(ud + 1)) / (zero * (REAL)(ud - i));        \
        }                                                                                    \
    }                                                                                        \
    for (int i = k; i < ud; ++i) {                                                           \
        p[i].feature = p[i + 1].feature;                                                     \
        p[i].zero = p[i + 1].zero;                                                           \
        p[i].one = p[i + 1].one;                                                             \
    }                                                                                        \
}                                                                                            \
                                                                                             \
static REAL NAME##_unwound_sum(const NAME##_elem* p, int ud, int k)                          \
{                                                                                            \
    const REAL one = p[k].one, zero = p[k].zero;                                             \
    REAL next = p[ud].pweight, total = 0;                                                    \
    for (int i = ud - 1; i >= 0; --i) {                                                      \
        if (one != 0) {                                                                      \
            const REAL tmp = next * (REAL)(ud + 1) / ((REAL)(i + 1) * one);                  \
            total += tmp;                                                                    \
            next = p[i].pweight - tmp * zero * ((REAL)(ud - i) / (REAL)(ud + 1));            \
        } else if (!(GUARD) || zero != 0) {                                                  \
            total += (p[i].pweight / zero) / ((REAL)(ud - i) / (REAL)(ud + 1));              \
        }                                                                                    \
    }                                                                                        \
    return total;                                                                            \
}                                                                                            \
                                                                                             \
static void NAME##_recurse(const shap_tree* t, const uint8_t* dec, REAL* phi, int32_t node,  \
                           int ud, NAME##_elem* parent, REAL pzero, REAL pone,               \
                           int32_t pfeature, int cond, int32_t cfeature, REAL cf)            \
{                                                                                            \
    NAME##_elem* p = parent + ud + 1;                                                        \
    memcpy(p, parent, sizeof(NAME##_elem) * (size_t)(ud + 1));                               \
    if (cond == 0 || pfeature != cfeature)                                                   \
        NAME##_extend(p, ud, pzero, pone, pfeature);                                         \
    if (node < 0) {                                                                          \
        const REAL v = t->LEAF[~node];                                                       \
        for (int i = 1; i <= ud; ++i) {                                                      \
            const REAL w = NAME##_unwound_sum(p, ud, i);                                     \
            phi[p[i].feature] += w * (p[i].one - p[i].zero) * v * cf;                        \
        }                                                                                    \
        return;                                                                              \
    }                                                                                        \
    const int32_t f = t->feature[node];                                                      \
    const int32_t hot = dec[node] ? t->left[node] : t->right[node];                          \
    const int32_t cold = dec[node] ? t->right[node] : t->left[node];                         \
    const REAL w = (REAL)t->COVER[node];                                                     \
    const REAL hot_zero = (hot >= 0 ? (REAL)t->COVER[hot] : (REAL)t->LEAF_COVER(~hot)) / w;  \
    const REAL cold_zero = (cold >= 0 ? (REAL)t->COVER[cold] : (REAL)t->LEAF_COVER(~cold)) / w; \
    REAL in_zero = 1, in_one = 1;                                                            \
    int k = 0;                                                                               \
    for (; k <= ud; ++k)                                                                     \
        if (p[k].feature == f)                                                               \
            break;                                                                           \
    if (k != ud + 1) {                                                                       \
        in_zero = p[k].zero;                                                                 \
        in_one = p[k].one;                                                                   \
        NAME##_unwind(p, ud, k);                                                             \
        ud -= 1;                                                                             \
    }                                                                                        \
    /* a conditioned feature (interactions) stays off the path: on (cond > 0), the row's   */ \
    /* branch alone; off (cond < 0), both, weighed by their covers                         */ \
    REAL hot_cf = cf, cold_cf = cf;                                                          \
    if (cond != 0 && f == cfeature) {                                                        \
        if (cond > 0) {                                                                      \
            cold_cf = 0;                                                                     \
        } else {                                                                             \
            hot_cf *= hot_zero;                                                              \
            cold_cf *= cold_zero;                                                            \
        }                                                                                    \
        ud -= 1;                                                                             \
    }                                                                                        \
    /* a branch no training row took is skipped, as CatBoost does */                         \
    if (hot_zero != 0 && hot_cf != 0)                                                        \
        NAME##_recurse(t, dec, phi, hot, ud + 1, p, hot_zero * in_zero, in_one, f, cond,     \
                       cfeature, hot_cf);                                                    \
    if (cold_zero != 0 && cold_cf != 0)                                                      \
        NAME##_recurse(t, dec, phi, cold, ud + 1, p, cold_zero * in_zero, 0, f, cond,        \
                       cfeature, cold_cf);                                                   \
}                                                                                            \
                                                                                             \
/* phi[feature] += the tree's contributions (the bias is the caller's); path: scratch of     \
 * shap_classic_path_len(depth) elements. cond: 0, or +1 / -1 with feature cfeature held on  \
 * / off (XGBoost's conditioning, from which it takes interactions) */                       \
static void NAME(const shap_tree* t, const uint8_t* dec, REAL* phi, void* path, int cond,   \
                 int32_t cfeature)                                                           \
{                                                                                            \
    if (t->n_nodes == 0)                                                                     \
        return;                                                                              \
    NAME##_recurse(t, dec, phi, 0, 0, (NAME##_elem*)path, 1, 1, -1, cond, cfeature, 1);      \
}

#define LEAF_COVER(i) leaf_cover[i]
QS_SHAP_CLASSIC(shap_classic_f64, double, node_cover, leaf_value, 0)
#undef LEAF_COVER
#define LEAF_COVER(i) leaf_cover32[i]
QS_SHAP_CLASSIC(shap_classic_f32, float, node_cover32, leaf_value32, 1)
#undef LEAF_COVER

/* ---- XGBoost 3.3 and later: TreeSHAP by an 8-point quadrature, in float32 ------------------
 *
 * The integral of the header's comment in the variable s^2 (t = s^2), taken with the 8-point
 * Gauss-Legendre rule on s in [0, 1]: exact where a path splits on at most 8 distinct
 * features, an approximation beyond (XGBoost's choice). Per row and tree, in XGBoost's order
 * and float32 rounding, one operation at a time (-ffp-contract=off):
 * - each feature's state p (-999: not on the path yet); a child's weight is its cover over the
 *   parent's (0.5 under a parent of no cover, at least 1e-12), and a zero-cover child is
 *   visited too;
 * - down an edge on feature f: p_e = p / weight where the row takes the edge (1 / weight where
 *   f is new), else 0; each point's product c *= 1 + (p_e - 1) node, divided again by
 *   1 + (p - 1) node where f was on the path with p != 1;
 * - a leaf gives each point c * (w_prod * value) * weight;
 * - back up the edge, phi[f] += sum (p_e - 1) h / (1 + (p_e - 1) node) less the same sum
 *   with the state p before the edge (1 where f was new), the source's left child first.
 * The rule's nodes and weights are the float32 roundings XGBoost computes (s^2 and 2 s w/2 at
 * the Gauss-Legendre points on [-1, 1], mapped to s = (x + 1) / 2), in ascending order. */
#define SHAP_XQ_POINTS 8
#define SHAP_XQ_UNSEEN (-999.0f)
static const float SHAP_XQ_NODE[SHAP_XQ_POINTS] = {
    0x1.9d5faap-12f, 0x1.52b1bep-7f, 0x1.cd0b74p-5f, 0x1.55640ep-3f,
    0x1.668852p-2f, 0x1.29e34cp-1f, 0x1.9d2f72p-1f, 0x1.ebdec8p-1f};
static const float SHAP_XQ_WEIGHT[SHAP_XQ_POINTS] = {
    0x1.07710cp-9f, 0x1.726c02p-6f, 0x1.30d4eep-4f, 0x1.2f4342p-3f,
    0x1.b7837ep-3f, 0x1.ea0e2ap-3f, 0x1.992234p-3f, 0x1.966648p-4f};

static inline float shap_xq_cover(const shap_tree* t, int32_t ref)
{
    return ref >= 0 ? t->node_cover32[ref] : t->leaf_cover32[~ref];
}

static inline float shap_xq_weight(float child, float parent)
{
    if (parent <= 0.0f)
        return 0.5f;
    const float w = child / parent;
    return w < 1e-12f ? 1e-12f : w;
}

static void shap_xq_run(const shap_tree* t, const uint8_t* dec, float* phi, float* state,
                        int32_t ref, const float* c, float w_prod, float* h);

/* one edge of node k to child ch: h gets the child's point sums */
static void shap_xq_visit(const shap_tree* t, const uint8_t* dec, float* phi, float* state,
                          int32_t k, int32_t ch, float cw, int takes, const float* c,
                          float w_prod, float* h)
{
    const int32_t f = t->feature[k];
    const float before = state[f];
    const int seen = before != SHAP_XQ_UNSEEN;
    const float pe = takes ? (seen ? before / cw : 1.0f / cw) : 0.0f;
    const float ae = pe - 1.0f;
    float cc[SHAP_XQ_POINTS];
    for (int i = 0; i < SHAP_XQ_POINTS; ++i)
        cc[i] = c[i] * (1.0f + ae * SHAP_XQ_NODE[i]);
    if (seen) {
        const float ao = before - 1.0f;
        if (ao != 0.0f)
            for (int i = 0; i < SHAP_XQ_POINTS; ++i)
                cc[i] = cc[i] / (1.0f + ao * SHAP_XQ_NODE[i]);
    }
    state[f] = pe;
    shap_xq_run(t, dec, phi, state, ch, cc, w_prod * cw, h);
    const float exit = seen ? before : 1.0f;
    float acc = 0.0f;
    if (pe != 1.0f) {
        const float a = pe - 1.0f;
        for (int i = 0; i < SHAP_XQ_POINTS; ++i)
            acc = acc + (a * h[i]) / (1.0f + a * SHAP_XQ_NODE[i]);
    }
    if (exit != 1.0f) {
        const float a = exit - 1.0f;
        for (int i = 0; i < SHAP_XQ_POINTS; ++i)
            acc = acc - (a * h[i]) / (1.0f + a * SHAP_XQ_NODE[i]);
    }
    phi[f] = phi[f] + acc;
    state[f] = before;
}

static void shap_xq_run(const shap_tree* t, const uint8_t* dec, float* phi, float* state,
                        int32_t ref, const float* c, float w_prod, float* h)
{
    if (ref < 0) {
        const float scale = w_prod * t->leaf_value32[~ref];
        for (int i = 0; i < SHAP_XQ_POINTS; ++i)
            h[i] = (c[i] * scale) * SHAP_XQ_WEIGHT[i];
        return;
    }
    const int swap = t->swapped != NULL && t->swapped[ref];
    const int32_t first = swap ? t->right[ref] : t->left[ref];
    const int32_t second = swap ? t->left[ref] : t->right[ref];
    const int first_taken = swap ? !dec[ref] : dec[ref];
    const float parent = t->node_cover32[ref];
    float h2[SHAP_XQ_POINTS];
    shap_xq_visit(t, dec, phi, state, ref, first, shap_xq_weight(shap_xq_cover(t, first), parent),
                  first_taken, c, w_prod, h);
    shap_xq_visit(t, dec, phi, state, ref, second,
                  shap_xq_weight(shap_xq_cover(t, second), parent), !first_taken, c, w_prod,
                  h2);
    for (int i = 0; i < SHAP_XQ_POINTS; ++i)
        h[i] = h[i] + h2[i];
}

/* phi[feature] += the tree's contributions; state: one float32 per feature, every one
 * SHAP_XQ_UNSEEN, and so again on return */
static void shap_xgb_quadrature_f32(const shap_tree* t, const uint8_t* dec, float* phi,
                                    float* state)
{
    if (t->n_nodes == 0)
        return;
    float c[SHAP_XQ_POINTS], h[SHAP_XQ_POINTS];
    for (int i = 0; i < SHAP_XQ_POINTS; ++i)
        c[i] = 1.0f;
    shap_xq_run(t, dec, phi, state, 0, c, 1.0f, h);
}

/* path elements the recursion needs for a tree of `depth` levels of internal nodes: one
 * copy of the path per level, each one longer than the last */
static inline int64_t shap_classic_path_len(int64_t depth)
{
    return (depth + 2) * (depth + 3) / 2;
}

/* ---- the quadrature, eight rows at once ---------------------------------------------------
 *
 * A tree's program (shap_arrays, row-independent): its internal nodes in preorder, those
 * under a branch of zero cover left out; node k's two edges are 2k (left) and 2k + 1 (right),
 * each with its child (a preorder node k' >= 0, a leaf ~l, or SHAP_SKIP for zero cover) and
 * its cover ratio. Where the layout stores none, shap_prog_tree builds one per block in the
 * tree's own numbering; the walk follows the children either way.
 *
 * A walk down the program keeps, per feature, z (the product of the cover ratios of its
 * splits so far: the same for every row), 1 / f1(z) per point, and o per lane (1 where the
 * row took all those splits; 1 and z = 1 for a feature not split on yet). At an edge on
 * feature j from (o_old, z_old) to (o, z = z_old * ratio), a lane's C and phi_j change by
 *   o_old = 1, o = 1:  C *= f1(z) / f1(z_old),     phi_j += h (g1(z) - g1(z_old))
 *   o_old = 1, o = 0:  C *= f0(z) / f1(z_old),     phi_j += h (g0 - g1(z_old))
 *   o_old = 0 (o = 0): C *= ratio,                 nothing
 * with f1(z) = z + t (1 - z), f0(z) = z (1 - t), g1(z) = (1 - z) / f1(z), g0 = -1 / (1 - t),
 * and h the edge's subtree's sums of C v w. The four numbers per point are the same for every
 * lane: one division per edge and point serves the block's eight rows. A lane selects among
 * them by products with 0 and 1 (exact for finite values) and sees the same operations
 * whatever the other lanes hold, so a row's values do not depend on its block, thread or
 * instruction set. */
#define SHAP_R 8
#define SHAP_SKIP INT32_MIN

/* A tree's program in its own numbering, for a layout that stores none (a model of oblivious
 * trees, whose stored programs would outweigh its scoring layout): node k is internal node k,
 * its edges its children, each ratio the same division as shap_arrays' programs make, so the
 * walk (which follows the children, left first) gives the same values. nid must hold 0 ..
 * n_nodes - 1. */
#if defined(__GNUC__) || defined(__clang__)
typedef double shap_pair __attribute__((vector_size(16)));
#define SHAP_PROG_DIVIDE(num, w, out)                                                       \
    do {                                                                                     \
        const shap_pair q_ = (shap_pair){(num)[0], (num)[1]} / (w);                          \
        (out)[0] = q_[0];                                                                    \
        (out)[1] = q_[1];                                                                    \
    } while (0)
#else
#define SHAP_PROG_DIVIDE(num, w, out)                                                       \
    do {                                                                                     \
        (out)[0] = (num)[0] / (w);                                                           \
        (out)[1] = (num)[1] / (w);                                                           \
    } while (0)
#endif
#define SHAP_PROG_TREE(NAME, ATTR)                                                            \
ATTR                                                                                         \
static int32_t NAME(const shap_tree* t, int32_t* child, double* ratio)                       \
{                                                                                            \
    const int64_t n = t->n_nodes;                                                            \
    for (int64_t k = 0; k < n; ++k) {                                                        \
        const int32_t l = t->left[k], r = t->right[k];                                       \
        const double num[2] = {l >= 0 ? t->node_cover[l] : t->leaf_cover[~l],               \
                               r >= 0 ? t->node_cover[r] : t->leaf_cover[~r]};              \
        double q[2];                                                                         \
        SHAP_PROG_DIVIDE(num, t->node_cover[k], q);  /* both edges' in one division */     \
        ratio[2 * k] = q[0];                                                                 \
        ratio[2 * k + 1] = q[1];                                                             \
        child[2 * k] = q[0] == 0.0 ? SHAP_SKIP : l;                                          \
        child[2 * k + 1] = q[1] == 0.0 ? SHAP_SKIP : r;                                      \
    }                                                                                        \
    return (int32_t)n;                                                                       \
}

SHAP_PROG_TREE(shap_prog_tree_c, )
#if CPU_HAVE_X86 && !CPU_NEON
SHAP_PROG_TREE(shap_prog_tree_avx2, CPU_TARGET("avx2"))
#endif

static inline int32_t shap_prog_tree(int isa, const shap_tree* t, int32_t* child,
                                     double* ratio)
{
#if CPU_HAVE_X86 && !CPU_NEON
    if (isa == CPU_ISA_AVX2 || isa == CPU_ISA_AVX512)
        return shap_prog_tree_avx2(t, child, ratio);
#endif
    (void)isa;
    return shap_prog_tree_c(t, child, ratio);
}

/* The lanes are worked on in parts of the widest vector the function's instruction set has
 * (gcc's and clang's vector extensions: 4 doubles for AVX2, 8 for AVX-512, 2 for SSE2 and
 * NEON), else one double at a time; each part's operations are the same IEEE operations, so
 * a row's values are the same on every path. */
#if defined(__GNUC__) || defined(__clang__)
typedef double shap_v2 __attribute__((vector_size(16)));
typedef double shap_v4 __attribute__((vector_size(32)));
typedef double shap_v8 __attribute__((vector_size(64)));
#endif

typedef struct {
    const int32_t* nid;       /* [K] the tree's internal node (canonical) of preorder node k */
    const int32_t* child;     /* [2K] */
    const double* ratio;      /* [2K] */
    int32_t K;
} shap_prog;

/* bytes of one level of the walk's stack for blocks of `lanes` rows: its C and h (nq lane
 * vectors each), and per point 1 / f1 before and after the edge, m11, m10, d11 and d10 */
static inline int64_t shap_level_bytes(int64_t nq, int64_t lanes)
{
    const int64_t padded = (nq + SHAP_R - 1) / SHAP_R * SHAP_R;
    return 2 * nq * 8 * lanes + 6 * padded * 8;
}

/* bytes of work shap_quad_block needs for blocks of `lanes` rows, trees of `depth` levels,
 * nq points and n_features features (from a 64-byte boundary); shap_quad_init readies it.
 * In order: o, the stack, for interactions an edge's products per point and lane (aligned as
 * the stack), z and 1 / f1 of each feature, and for interactions each feature's splits on
 * the path so far and the path's distinct features. */
static inline int64_t shap_block_work(int64_t depth, int64_t nq, int64_t n_features,
                                      int64_t lanes)
{
    const int64_t padded = (nq + SHAP_R - 1) / SHAP_R * SHAP_R;
    return 8 * lanes * n_features + (depth + 2) * shap_level_bytes(nq, lanes)
           + 8 * n_features * (1 + padded) + 8 * padded * lanes
           + 4 * n_features + 4 * (depth + 2);
}

/* every feature not split on yet: o = 1 in every lane, z = 1, 1 / f1(1) = 1 */
static inline void shap_quad_init(void* work, int64_t depth, int64_t nq, int64_t n_features,
                                  int64_t lanes)
{
    double* o = (double*)work;
    const int64_t padded = (nq + SHAP_R - 1) / SHAP_R * SHAP_R;
    double* zf = (double*)((char*)work + 8 * lanes * n_features
                           + (depth + 2) * shap_level_bytes(nq, lanes)) + padded * lanes;
    double* rf = zf + n_features;
    for (int64_t i = 0; i < lanes * n_features; ++i)
        o[i] = 1.0;
    for (int64_t i = 0; i < n_features; ++i)
        zf[i] = 1.0;
    for (int64_t i = 0; i < n_features * padded; ++i)
        rf[i] = 1.0;
    int32_t* seen = (int32_t*)(rf + n_features * padded);
    for (int64_t i = 0; i < n_features; ++i)
        seen[i] = 0;
}

/* dec: each node's decisions as doubles, R a node (lane r: 1.0 where row r goes left): blocks
 * of R rows (8, or 1 for a row alone), in NH parts of type VT (R / NH doubles; R and NH
 * numbers). */
#define SHAP_QUAD_BLOCK(NAME, ATTR, VT, NH, R)                                               \
typedef struct {                                                                             \
    const shap_prog* p;                                                                      \
    const int32_t* feature;                                                                  \
    const double* leaf_value;                                                                \
    double scale;                                                                            \
    const double* dec;                                                                       \
    int nq;                                                                                  \
    const double* tq;         /* the points, padded to a multiple of SHAP_R (t = 1/2) */     \
    const double* wq;                                                                        \
    const double* gq;         /* g0 = -1 / (1 - t) at each point */                          \
    double* phi;              /* [n_features][R] */                                          \
    VT* of;                   /* [n_features][NH] o of each feature */                       \
    double* zf;               /* [n_features] z of each feature */                           \
    double* rf;               /* [n_features][mq] 1 / f1(z) of each feature per point */     \
    int64_t level;            /* bytes of a level of the stack (shap_level_bytes(nq)) */     \
    int mq;                                                                                  \
    /* interactions (phi2 NULL: none) */                                                     \
    double* phi2;             /* [n_features][n_features][R], pairs of distinct features */  \
    int64_t nf;                                                                              \
    VT* pe;                   /* [mq][NH] the edge's subtree sums times its change of g */   \
    int32_t* seen;            /* [n_features] splits on each feature on the path so far */   \
    int32_t* pf;              /* the path's distinct features, npf of them */                \
    int npf;                                                                                 \
} NAME##_ctx;                                                                                \
                                                                                             \
/* interactions at an edge on feature f (pe: its subtree's sums times its change of g, per  \
 * point and lane): with each other feature i on the path above, whose g there is         \
 * g_i = o_i (1 - z_i) / f1(z_i) + (1 - o_i) g0, the pair gets half the sum of g_i pe over  \
 * the points, once each way round (docs/contributions.md) */                                \
ATTR                                                                                         \
static void NAME##_pairs(NAME##_ctx* c, int32_t f, const VT* pe)                             \
{                                                                                            \
    const int nq = c->nq;                                                                    \
    VT sg[NH];                                                                               \
    for (int h = 0; h < NH; ++h) {                                                           \
        VT acc = (VT){0};                                                                    \
        for (int q = 0; q < nq; ++q)                                                         \
            acc = acc + c->gq[q] * pe[q * NH + h];                                           \
        sg[h] = acc;                                                                         \
    }                                                                                        \
    for (int m = 0; m < c->npf; ++m) {                                                       \
        const int32_t i = c->pf[m];                                                          \
        if (i == f)                                                                          \
            continue;                                                                        \
        const double* ri = c->rf + (int64_t)i * c->mq;                                       \
        const double zi = 1.0 - c->zf[i];                                                    \
        VT* a = (VT*)(c->phi2 + ((int64_t)i * c->nf + f) * (R));                             \
        VT* b = (VT*)(c->phi2 + ((int64_t)f * c->nf + i) * (R));                             \
        for (int h = 0; h < NH; ++h) {                                                       \
            VT acc = (VT){0};                                                                \
            for (int q = 0; q < nq; ++q)                                                     \
                acc = acc + ri[q] * pe[q * NH + h];                                          \
            const VT oi = c->of[(int64_t)i * NH + h];                                        \
            const VT x = 0.5 * (oi * (zi * acc) + (1.0 - oi) * sg[h]);                       \
            a[h] = a[h] + x;                                                                 \
            b[h] = b[h] + x;                                                                 \
        }                                                                                    \
    }                                                                                        \
}                                                                                            \
                                                                                             \
ATTR                                                                                         \
static void NAME##_node(NAME##_ctx* c, int32_t k, char* lv)                                 \
{                                                                                            \
    /* lv: this level of the stack: C (from the caller), h (to the caller), the points' */   \
    /* numbers; the children's level follows it */                                           \
    const shap_prog* p = c->p;                                                               \
    const int nq = c->nq;                                                                    \
    const int32_t n = p->nid[k], f = c->feature[n];                                          \
    const VT* left = (const VT*)(c->dec + (int64_t)n * (R));                              \
    const VT* Cin = (const VT*)lv;                                                           \
    VT* hout = (VT*)lv + nq * NH;                                                            \
    const int pq = (nq + SHAP_R - 1) / SHAP_R * SHAP_R;        /* points, padded */         \
    const int W = (int)(sizeof(VT) / sizeof(double));         /* points a vector holds */  \
    const int qv = (nq + W - 1) / W * W;                      /* the points worked on */   \
    double* r1o = (double*)(hout + nq * NH);                                                 \
    double* r1e = r1o + pq;                                                                  \
    double* m11 = r1e + pq;                                                                  \
    double* m10 = m11 + pq;                                                                  \
    double* d11 = m10 + pq;                                                                  \
    double* d10 = d11 + pq;                                                                  \
    char* next = lv + c->level;                                                              \
    VT* Cc = (VT*)next;                                                                      \
    VT* hc = Cc + nq * NH;                                                                   \
    VT op[NH];                                                                               \
    const double zo = c->zf[f];                                                              \
    double* rff = c->rf + (int64_t)f * c->mq;                                                \
    for (int h = 0; h < NH; ++h)                                                             \
        op[h] = c->of[(int64_t)f * NH + h];                                                  \
    for (int q = 0; q < qv; ++q)                                                             \
        r1o[q] = rff[q];                                                                     \
    for (int i = 0; i < nq * NH; ++i)                                                        \
        hout[i] = (VT){0};                                                                   \
    for (int s = 0; s < 2; ++s) {                                                            \
        const int64_t e = 2 * (int64_t)k + s;                                                \
        const int32_t ch = p->child[e];                                                      \
        if (ch == SHAP_SKIP)                                                                 \
            continue;                                                                        \
        const double ratio = p->ratio[e], ze = zo * ratio;                                   \
        /* the edge's numbers at every point, a vector of points at a time, 1 / f1(z) after */ \
        /* the edge among them */                                                            \
        for (int q = 0; q < qv; q += W) {                                                    \
            VT t, ro, gq;                                                                    \
            memcpy(&t, c->tq + q, sizeof t);                                                 \
            memcpy(&ro, r1o + q, sizeof ro);                                                 \
            memcpy(&gq, c->gq + q, sizeof gq);                                               \
            const VT f1e = ze + t * (1.0 - ze);                                              \
            const VT re = 1.0 / f1e;                                                         \
            memcpy(r1e + q, &re, sizeof re);                                                 \
            const VT g1o = (1.0 - zo) * ro;                                                  \
            const VT a = f1e * ro, b = ze * (1.0 - t) * ro;                                  \
            const VT d1 = (1.0 - ze) * re - g1o, d0 = gq - g1o;                              \
            memcpy(m11 + q, &a, sizeof a);                                                   \
            memcpy(m10 + q, &b, sizeof b);                                                   \
            memcpy(d11 + q, &d1, sizeof d1);                                                 \
            memcpy(d10 + q, &d0, sizeof d0);                                                 \
        }                                                                                    \
        VT oe[NH], not_oe[NH], not_op[NH];                                                   \
        for (int h = 0; h < NH; ++h) {                                                       \
            const VT hot = s == 0 ? left[h] : 1.0 - left[h];                                 \
            oe[h] = op[h] * hot;                                                             \
            not_oe[h] = 1.0 - oe[h];                                                         \
            not_op[h] = 1.0 - op[h];                                                         \
        }                                                                                    \
        for (int q = 0; q < nq; ++q) {                                                       \
            const double coef = ch < 0 ? c->leaf_value[~ch] * c->scale * c->wq[q] : 1.0;     \
            for (int h = 0; h < NH; ++h) {                                                   \
                const VT m = op[h] * (oe[h] * m11[q] + not_oe[h] * m10[q])                   \
                             + not_op[h] * ratio;                                            \
                Cc[q * NH + h] = Cin[q * NH + h] * m * coef;                                 \
            }                                                                                \
        }                                                                                    \
        const VT* he = Cc;                    /* a leaf's sums: its C v w */                 \
        if (ch >= 0) {                                                                       \
            for (int h = 0; h < NH; ++h)                                                     \
                c->of[(int64_t)f * NH + h] = oe[h];                                          \
            c->zf[f] = ze;                                                                   \
            for (int q = 0; q < qv; ++q)                                                     \
                rff[q] = r1e[q];                                                             \
            if (c->phi2 != NULL && c->seen[f]++ == 0)                                        \
                c->pf[c->npf++] = f;                                                         \
            NAME##_node(c, ch, next);                                                        \
            if (c->phi2 != NULL && --c->seen[f] == 0)                                        \
                c->npf--;                                                                    \
            for (int h = 0; h < NH; ++h)                                                     \
                c->of[(int64_t)f * NH + h] = op[h];                                          \
            c->zf[f] = zo;                                                                   \
            for (int q = 0; q < qv; ++q)                                                     \
                rff[q] = r1o[q];                                                             \
            he = hc;                                                                         \
        }                                                                                    \
        VT* ph = (VT*)(c->phi + (int64_t)f * (R));                                        \
        VT* pe = c->pe;                                                                      \
        for (int h = 0; h < NH; ++h) {                                                       \
            VT acc = (VT){0};                                                                \
            for (int q = 0; q < nq; ++q) {                                                   \
                const VT d = op[h] * (oe[h] * d11[q] + not_oe[h] * d10[q]);                  \
                const VT hd = he[q * NH + h] * d;                                            \
                pe[q * NH + h] = hd;                                                         \
                acc = acc + hd;                                                              \
                hout[q * NH + h] = hout[q * NH + h] + he[q * NH + h];                        \
            }                                                                                \
            ph[h] = ph[h] + acc;                                                             \
        }                                                                                    \
        if (c->phi2 != NULL)                                                                 \
            NAME##_pairs(c, f, pe);                                                          \
    }                                                                                        \
}                                                                                            \
                                                                                             \
ATTR                                                                                         \
static void NAME(const shap_prog* p, const int32_t* feature, const double* leaf_value,     \
                 double scale, const double* dec, int nq, const double* tq,                 \
                 const double* wq, const double* gq, double* phi, double* phi2,             \
                 void* work, int64_t depth, int64_t mq, int64_t n_features)                 \
{                                                                                            \
    NAME##_ctx c;                                                                            \
    if (p->K == 0)                                                                           \
        return;                                                                              \
    c.p = p;                                                                                 \
    c.feature = feature;                                                                     \
    c.leaf_value = leaf_value;                                                               \
    c.scale = scale;                                                                         \
    c.dec = dec;                                                                             \
    c.nq = nq;                                                                               \
    c.tq = tq;                                                                               \
    c.wq = wq;                                                                               \
    c.gq = gq;                                                                               \
    c.phi = phi;                                                                             \
    c.of = (VT*)work;                                                                        \
    c.level = shap_level_bytes(mq, R);                                                          \
    char* stack = (char*)work + 8 * (R) * n_features;                                     \
    c.mq = (int)((mq + SHAP_R - 1) / SHAP_R * SHAP_R);                                       \
    c.pe = (VT*)(stack + (depth + 2) * c.level);                                             \
    c.zf = (double*)c.pe + (int64_t)c.mq * (R);                                              \
    c.rf = c.zf + n_features;                                                                \
    c.phi2 = phi2;                                                                           \
    c.nf = n_features;                                                                       \
    c.seen = (int32_t*)(c.rf + n_features * c.mq);                                           \
    c.pf = c.seen + n_features;                                                              \
    c.npf = 0;                                                                               \
    for (int i = 0; i < nq * NH; ++i)                                                        \
        ((VT*)stack)[i] = (VT){0} + 1.0;        /* the root's C */                           \
    NAME##_node(&c, 0, stack);                                                               \
}

#if defined(__GNUC__) || defined(__clang__)
SHAP_QUAD_BLOCK(shap_quad_block_c, , shap_v2, 4, 8)
#else
SHAP_QUAD_BLOCK(shap_quad_block_c, , double, 8, 8)
#endif
/* a row alone: one lane, its numbers in scalars (the same operations as each lane of a block) */
SHAP_QUAD_BLOCK(shap_quad_block_1, , double, 1, 1)
#if CPU_HAVE_X86 && !CPU_NEON
/* the same C, for each instruction set (no FMA: a row's values are the same on every path) */
SHAP_QUAD_BLOCK(shap_quad_block_avx2, CPU_TARGET("avx2"), shap_v4, 2, 8)
SHAP_QUAD_BLOCK(shap_quad_block_avx512, CPU_TARGET("avx512f"), shap_v8, 1, 8)
#endif

/* ---- the quadrature, one row -------------------------------------------------------------
 *
 * A row alone takes the walk of a one-lane block with its selections turned into branches:
 * at an edge on feature f it computes only the case its o's give (o_old = 0: C *= ratio;
 * staying on: f1(z) / f1(z_old); leaving: f0(z) / f1(z_old)), the points four at a time, and
 * divides for 1 / f1(z) after the edge only where it stays on. A feature's 1 / f1 is a
 * pointer to the level that took it, not a copy. Each
 * number is the one the block computes, operation for operation (a block's selections
 * multiply the chosen value by 1 and the others by 0, then add), and phi's sums run over the
 * points in the same order, so a row's values are the same here as in a block. */
#define SHAP_V4_LOAD(p) ({ shap_v4 v_; memcpy(&v_, (p), sizeof v_); v_; })

/* bytes of work shap_quad_row needs (64-byte boundary), for trees of `depth` levels,
 * nq points and n_features features; shap_row_init readies it */
static inline int64_t shap_row_work(int64_t depth, int64_t nq, int64_t n_features)
{
    const int64_t nv = (nq + 3) / 4;
    return (depth + 2) * 3 * nv * 32 + 4 * nv * 8 + 8 * n_features + sizeof(void*) * n_features
           + n_features;
}

static inline void shap_row_init(void* work, int64_t depth, int64_t nq, int64_t n_features)
{
    const int64_t nv = (nq + 3) / 4;
    double* ones = (double*)((char*)work + (depth + 2) * 3 * nv * 32);
    double* zf = ones + 4 * nv;
    const double** rfp = (const double**)(zf + n_features);
    uint8_t* of = (uint8_t*)(rfp + n_features);
    for (int64_t i = 0; i < 4 * nv; ++i)
        ones[i] = 1.0;
    for (int64_t i = 0; i < n_features; ++i) {
        zf[i] = 1.0;
        rfp[i] = ones;
        of[i] = 1;
    }
}

/* NV: the vectors of points, where a literal 1 or 2 lets the compiler unroll (0: any) */
#define SHAP_QUAD_ROW(NAME, ATTR, NV)                                                        \
typedef struct {                                                                             \
    const shap_prog* p;                                                                      \
    const int32_t* feature;                                                                  \
    const double* leaf_value;                                                                \
    double scale;                                                                            \
    const double* dec;        /* 1.0 where the row goes left, a node */                      \
    int nq, nv;               /* points; vectors of four of them */                          \
    const double* tq;                                                                        \
    const double* wq;                                                                        \
    const double* gq;                                                                        \
    double* phi;                                                                             \
    uint8_t* of;              /* [n_features] o of each feature */                           \
    double* zf;               /* [n_features] z of each feature */                           \
    const double** rfp;       /* [n_features] its 1 / f1(z) per point, where a level took it */ \
} NAME##_ctx;                                                                                \
                                                                                             \
ATTR                                                                                         \
static void NAME##_node(NAME##_ctx* c, int32_t k, const shap_v4* Cin, shap_v4* hout,        \
                        shap_v4* lv)                                                         \
{                                                                                            \
    const shap_prog* p = c->p;                                                               \
    const int nq = c->nq, nv = (NV) ? (NV) : c->nv;                                          \
    const int32_t n = p->nid[k], f = c->feature[n];                                          \
    const int op = c->of[f];                                                                 \
    const int left = c->dec[n] != 0.0;                                                       \
    const double zo = c->zf[f];                                                              \
    const double* ro_p = c->rfp[f];                                                          \
    shap_v4* Cc = lv;                                                                        \
    shap_v4* hc = lv + nv;                                                                   \
    shap_v4* re = lv + 2 * nv;              /* 1 / f1(z) after the edge, staying on */       \
    for (int v = 0; v < nv; ++v)                                                             \
        hout[v] = (shap_v4){0};                                                              \
    for (int s = 0; s < 2; ++s) {                                                            \
        const int64_t e = 2 * (int64_t)k + s;                                                \
        const int32_t ch = p->child[e];                                                      \
        if (ch == SHAP_SKIP)                                                                 \
            continue;                                                                        \
        const double ratio = p->ratio[e], ze = zo * ratio;                                   \
        const int hot = op && (s == 0 ? left : !left);                                       \
        for (int v = 0; v < nv; ++v) {                                                       \
            shap_v4 m;                                                                       \
            if (!op) {                                                                       \
                m = (shap_v4){0} + ratio;                                                    \
            } else {                                                                         \
                const shap_v4 t = SHAP_V4_LOAD(c->tq + 4 * v);                               \
                const shap_v4 ro = SHAP_V4_LOAD(ro_p + 4 * v);                               \
                if (hot) {                                                                   \
                    const shap_v4 f1e = ze + t * (1.0 - ze);                                 \
                    re[v] = 1.0 / f1e;                                                       \
                    m = f1e * ro;                                                            \
                } else {                                                                     \
                    m = ze * (1.0 - t) * ro;                                                 \
                }                                                                            \
            }                                                                                \
            Cc[v] = Cin[v] * m;                                                              \
            if (ch < 0)                                                                      \
                Cc[v] = Cc[v] * (c->leaf_value[~ch] * c->scale * SHAP_V4_LOAD(c->wq + 4 * v)); \
        }                                                                                    \
        const shap_v4* he = Cc;                                                              \
        if (ch >= 0) {                                                                       \
            c->of[f] = (uint8_t)hot;                                                         \
            c->zf[f] = ze;                                                                   \
            c->rfp[f] = (const double*)re;  /* (read only where o stays 1: hot) */           \
            NAME##_node(c, ch, Cc, hc, lv + 3 * nv);                                         \
            c->of[f] = (uint8_t)op;                                                          \
            c->zf[f] = zo;                                                                   \
            c->rfp[f] = ro_p;                                                                \
            he = hc;                                                                         \
        }                                                                                    \
        for (int v = 0; v < nv; ++v)                                                         \
            hout[v] = hout[v] + he[v];                                                       \
        if (!op)                                                                             \
            continue;            /* phi_f does not change */                                 \
        double acc = 0.0;                                                                    \
        for (int v = 0; v < nv; ++v) {                                                       \
            const shap_v4 ro = SHAP_V4_LOAD(ro_p + 4 * v);                                   \
            const shap_v4 g1o = (1.0 - zo) * ro;                                             \
            const shap_v4 d = hot ? (1.0 - ze) * re[v] - g1o                                 \
                                  : SHAP_V4_LOAD(c->gq + 4 * v) - g1o;                       \
            const shap_v4 hd = he[v] * d;                                                    \
            double part[4];                                                                  \
            memcpy(part, &hd, sizeof part);                                                  \
            for (int j = 0; j < 4 && 4 * v + j < nq; ++j)                                    \
                acc = acc + part[j];                                                         \
        }                                                                                    \
        c->phi[f] = c->phi[f] + acc;                                                         \
    }                                                                                        \
}                                                                                            \
                                                                                             \
/* one row: phi[feature] += the tree's contributions; work: shap_row_work bytes readied by   \
 * shap_row_init (depth, mq at least the tree's levels and points) */                        \
ATTR                                                                                         \
static void NAME(const shap_prog* p, const int32_t* feature, const double* leaf_value,     \
                 double scale, const double* dec, int nq, const double* tq,                 \
                 const double* wq, const double* gq, double* phi, void* work,               \
                 int64_t depth, int64_t mq, int64_t n_features)                             \
{                                                                                            \
    NAME##_ctx c;                                                                            \
    if (p->K == 0)                                                                           \
        return;                                                                              \
    const int64_t mv = (mq + 3) / 4;                                                         \
    shap_v4* stack = (shap_v4*)work;                                                         \
    double* ones = (double*)((char*)work + (depth + 2) * 3 * mv * 32);                       \
    c.p = p;                                                                                 \
    c.feature = feature;                                                                     \
    c.leaf_value = leaf_value;                                                               \
    c.scale = scale;                                                                         \
    c.dec = dec;                                                                             \
    c.nq = nq;                                                                               \
    c.nv = (nq + 3) / 4;                                                                     \
    c.tq = tq;                                                                               \
    c.wq = wq;                                                                               \
    c.gq = gq;                                                                               \
    c.phi = phi;                                                                             \
    c.zf = ones + 4 * mv;                                                                    \
    c.rfp = (const double**)(c.zf + n_features);                                             \
    c.of = (uint8_t*)(c.rfp + n_features);                                                   \
    for (int v = 0; v < c.nv; ++v)                                                           \
        stack[v] = (shap_v4){0} + 1.0;          /* the root's C */                           \
    NAME##_node(&c, 0, stack, stack + c.nv, stack + 3 * c.nv);                               \
}

#if defined(__GNUC__) || defined(__clang__)
SHAP_QUAD_ROW(shap_quad_row_c1, , 1)
SHAP_QUAD_ROW(shap_quad_row_c2, , 2)
SHAP_QUAD_ROW(shap_quad_row_c, , 0)
#if CPU_HAVE_X86 && !CPU_NEON
SHAP_QUAD_ROW(shap_quad_row_avx2_1, CPU_TARGET("avx2"), 1)
SHAP_QUAD_ROW(shap_quad_row_avx2_2, CPU_TARGET("avx2"), 2)
SHAP_QUAD_ROW(shap_quad_row_avx2, CPU_TARGET("avx2"), 0)
#endif
#define SHAP_HAVE_ROW 1
#else
#define SHAP_HAVE_ROW 0
#endif

/* shap_quad_block for blocks of `lanes` rows (1 or SHAP_R; dec, phi and phi2 so laid out;
 * phi2 NULL for contributions alone) on the widest path `isa` allows (the lanes' values are the same on each); work:
 * shap_block_work(depth, mq, n_features, lanes) bytes readied by shap_quad_init, depth and mq
 * at least the tree's levels and points */
static inline void shap_quad_block_isa(int isa, int lanes, const shap_prog* p,
                                       const int32_t* feature,
                                       const double* leaf_value, double scale,
                                       const double* dec, int nq, const double* tq,
                                       const double* wq, const double* gq, double* phi,
                                       double* phi2, void* work, int64_t depth, int64_t mq,
                                       int64_t n_features)
{
    if (lanes == 1) {
        shap_quad_block_1(p, feature, leaf_value, scale, dec, nq, tq, wq, gq, phi, phi2, work,
                          depth, mq, n_features);
        return;
    }
#if CPU_HAVE_X86 && !CPU_NEON
    if (isa == CPU_ISA_AVX512) {
        shap_quad_block_avx512(p, feature, leaf_value, scale, dec, nq, tq, wq, gq, phi, phi2, work,
                               depth, mq, n_features);
        return;
    }
    if (isa == CPU_ISA_AVX2) {
        shap_quad_block_avx2(p, feature, leaf_value, scale, dec, nq, tq, wq, gq, phi, phi2, work,
                             depth, mq, n_features);
        return;
    }
#endif
    (void)isa;
    shap_quad_block_c(p, feature, leaf_value, scale, dec, nq, tq, wq, gq, phi, phi2, work,
                      depth, mq, n_features);
}

/* one row on the widest path `isa` allows (the values are the same on each); 0 where this
 * compiler has no vector types (the caller takes a one-lane block) */
static inline int shap_quad_row_isa(int isa, const shap_prog* p, const int32_t* feature,
                                    const double* leaf_value, double scale, const double* dec,
                                    int nq, const double* tq, const double* wq,
                                    const double* gq, double* phi, void* work, int64_t depth,
                                    int64_t mq, int64_t n_features)
{
#if SHAP_HAVE_ROW
#define SHAP_ROW_CALL(F) F(p, feature, leaf_value, scale, dec, nq, tq, wq, gq, phi, work,    \
                           depth, mq, n_features)
#if CPU_HAVE_X86 && !CPU_NEON
    if (isa == CPU_ISA_AVX2 || isa == CPU_ISA_AVX512) {
        if (nq <= 4)
            SHAP_ROW_CALL(shap_quad_row_avx2_1);
        else if (nq <= 8)
            SHAP_ROW_CALL(shap_quad_row_avx2_2);
        else
            SHAP_ROW_CALL(shap_quad_row_avx2);
        return 1;
    }
#endif
    (void)isa;
    if (nq <= 4)
        SHAP_ROW_CALL(shap_quad_row_c1);
    else if (nq <= 8)
        SHAP_ROW_CALL(shap_quad_row_c2);
    else
        SHAP_ROW_CALL(shap_quad_row_c);
#undef SHAP_ROW_CALL
    return 1;
#else
    (void)isa; (void)p; (void)feature; (void)leaf_value; (void)scale; (void)dec; (void)nq;
    (void)tq; (void)wq; (void)gq; (void)phi; (void)work; (void)depth; (void)mq;
    (void)n_features;
    return 0;
#endif
}

#endif
