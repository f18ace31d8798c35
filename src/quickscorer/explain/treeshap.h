/* SHAP contributions of one tree for one row (docs/contributions.md).
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
 */
#ifndef QS_TREESHAP_H
#define QS_TREESHAP_H

#include <stdint.h>
#include <string.h>

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
                           int32_t pfeature)                                                 \
{                                                                                            \
    NAME##_elem* p = parent + ud + 1;                                                        \
    memcpy(p, parent, sizeof(NAME##_elem) * (size_t)(ud + 1));                               \
    NAME##_extend(p, ud, pzero, pone, pfeature);                                             \
    if (node < 0) {                                                                          \
        const REAL v = t->LEAF[~node];                                                       \
        for (int i = 1; i <= ud; ++i) {                                                      \
            const REAL w = NAME##_unwound_sum(p, ud, i);                                     \
            phi[p[i].feature] += w * (p[i].one - p[i].zero) * v;                             \
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
    if (hot_zero != 0)          /* a branch no training row took: skipped, as CatBoost does */ \
        NAME##_recurse(t, dec, phi, hot, ud + 1, p, hot_zero * in_zero, in_one, f);          \
    if (cold_zero != 0)                                                                      \
        NAME##_recurse(t, dec, phi, cold, ud + 1, p, cold_zero * in_zero, 0, f);             \
}                                                                                            \
                                                                                             \
/* phi[feature] += the tree's contributions (the bias is the caller's); path: scratch of     \
 * shap_classic_path_len(depth) elements */                                                  \
static void NAME(const shap_tree* t, const uint8_t* dec, REAL* phi, void* path)              \
{                                                                                            \
    if (t->n_nodes == 0)                                                                     \
        return;                                                                              \
    NAME##_recurse(t, dec, phi, 0, 0, (NAME##_elem*)path, 1, 1, -1);                         \
}

#define LEAF_COVER(i) leaf_cover[i]
QS_SHAP_CLASSIC(shap_classic_f64, double, node_cover, leaf_value, 0)
#undef LEAF_COVER
#define LEAF_COVER(i) leaf_cover32[i]
QS_SHAP_CLASSIC(shap_classic_f32, float, node_cover32, leaf_value32, 1)
#undef LEAF_COVER

/* path elements the recursion needs for a tree of `depth` levels of internal nodes: one
 * copy of the path per level, each one longer than the last */
static inline int64_t shap_classic_path_len(int64_t depth)
{
    return (depth + 2) * (depth + 3) / 2;
}

/* ---- the quadrature form --------------------------------------------------------------- */

/* g = (o - z) / f, 0 where o == z (f is 0 only where o == z == 0) */
static inline double shap_g(double o, double z, double f)
{
    return o == z ? 0.0 : (o - z) / f;
}

typedef struct {
    const shap_tree* t;
    const uint8_t* dec;
    int nq;
    const double* tq;         /* [nq] the points in (0, 1) */
    const double* wq;         /* [nq] their weights (summing to 1) */
    double scale;             /* the leaves' factor (a DART tree's weight), else 1 */
    double* phi;              /* [n_features] */
    uint8_t* o;               /* [n_features] each feature's o on the path so far (1 unseen) */
    double* z;                /* [n_features] and its z (1 unseen) */
    double* buf;              /* 3 nq (depth + 2) doubles: C, h and d at each level */
} shap_quad_ctx;

static void shap_quad_node(shap_quad_ctx* c, int32_t node, int level, double* h)
{
    const int nq = c->nq;
    double* C = c->buf + (size_t)level * 3 * nq;
    if (node < 0) {
        const double v = c->t->leaf_value[~node] * c->scale;
        for (int q = 0; q < nq; ++q)
            h[q] = C[q] * v * c->wq[q];
        return;
    }
    const shap_tree* t = c->t;
    double* Cc = C + 3 * nq;              /* the child's C, at the next level */
    double* hc = C + 4 * nq;              /* the child's sums */
    double* d = C + 5 * nq;
    const int32_t j = t->feature[node];
    const uint8_t o_old = c->o[j];
    const double z_old = c->z[j];
    const double cover = t->node_cover[node];
    for (int q = 0; q < nq; ++q)
        h[q] = 0.0;
    for (int side = 0; side < 2; ++side) {
        const int32_t child = side ? t->right[node] : t->left[node];
        const double ratio = (child >= 0 ? t->node_cover[child] : t->leaf_cover[~child]) / cover;
        if (ratio == 0.0)       /* a branch no training row took: it adds nothing */
            continue;
        const uint8_t o_e = o_old & (uint8_t)(c->dec[node] == (side == 0));
        const double z_e = z_old * ratio;
        for (int q = 0; q < nq; ++q) {
            const double tq = c->tq[q];
            const double f_old = z_old + tq * ((double)o_old - z_old);
            const double f_e = z_e + tq * ((double)o_e - z_e);
            Cc[q] = f_old == 0.0 ? 0.0 : C[q] * (f_e / f_old);
            d[q] = shap_g(o_e, z_e, f_e) - shap_g(o_old, z_old, f_old);
        }
        c->o[j] = o_e;
        c->z[j] = z_e;
        shap_quad_node(c, child, level + 1, hc);
        c->o[j] = o_old;
        c->z[j] = z_old;
        double s = 0.0;
        for (int q = 0; q < nq; ++q) {
            s += hc[q] * d[q];
            h[q] += hc[q];
        }
        c->phi[j] += s;
    }
}

/* phi[feature] += the tree's contributions; o, z: all 1 on entry and on return; buf: 3 nq
 * (depth + 2) doubles */
static void shap_quad(const shap_tree* t, const uint8_t* dec, int nq, const double* tq,
                      const double* wq, double scale, double* phi, uint8_t* o, double* z,
                      double* buf)
{
    if (t->n_nodes == 0)
        return;
    shap_quad_ctx c = {t, dec, nq, tq, wq, scale, phi, o, z, buf};
    for (int q = 0; q < nq; ++q)
        buf[q] = 1.0;
    double h[64];
    double* hr = nq <= 64 ? h : buf + 3 * (size_t)nq;   /* the root's sums: never read */
    shap_quad_node(&c, 0, 0, hr);
}

#endif
