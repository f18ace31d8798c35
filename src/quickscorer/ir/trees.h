/* Whether one tree's child arrays make one canonical tree: the check of a model file's trees
 * (quickscorer.ir.ensemble.check_packed, through _build.check_packed) before anything reads
 * them. A tree of m internal nodes and m + 1 leaves is canonical, as build_tree numbers it,
 * when its internal nodes are breadth-first, left child before right, and its leaves are
 * numbered left to right. Children are tree-local: c >= 0 an internal node, ~c a leaf.
 *
 * Forward, node by node, left child before right: the internal children are 1, 2, ..., m - 1
 * in turn, each node numbered below the count of children seen before it (every node but the
 * root a child once, after its parent). Backward, children first: each subtree's leaves one
 * run just before its right sibling's, the root's 0 .. m (every leaf a child once, numbered
 * left to right). Both by arithmetic, with no branch on the data; on CPU_ISA_AVX2 the forward
 * rules eight nodes a step, the count of children before each node a prefix sum. That is for
 * speed (python -m benchmarks.load_time times the open it is part of); tests/test_model_file.py
 * holds every path to the rules in plain Python. */
#ifndef QUICKSCORER_IR_TREES_H
#define QUICKSCORER_IR_TREES_H

#include <stdint.h>

#include "quickscorer/cpu.h"

/* the forward rules, node by node, and every leaf child's number at most m */
static inline int tree_forward_sound(const int32_t* left, const int32_t* right, int64_t m)
{
    int64_t nxt = 1, bad = 0;
    for (int64_t n = 0; n < m; n++) {
        bad |= (int64_t)(nxt <= n);
        int64_t c = left[n], neg = c >> 63;
        bad |= (~neg & (int64_t)(c != nxt)) | (neg & (int64_t)(~c > m));
        nxt += 1 + neg;
        c = right[n];
        neg = c >> 63;
        bad |= (~neg & (int64_t)(c != nxt)) | (neg & (int64_t)(~c > m));
        nxt += 1 + neg;
    }
    return !bad && nxt == m;
}

#if CPU_HAVE_X86
/* tree_forward_sound eight nodes a step: before node n, G(n) internal children were seen (a
 * running base plus the step's exclusive prefix sum), so its left child, where internal, must
 * be G(n) + 1, its right G(n) + 1 + (left internal), and n at most G(n) */
CPU_TARGET("avx2")
static int tree_forward_sound_avx2(const int32_t* left, const int32_t* right, int64_t m)
{
    const __m256i zero = _mm256_setzero_si256(), one = _mm256_set1_epi32(1);
    const __m256i none = _mm256_set1_epi32(-1), lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i last = _mm256_set1_epi32(7), most = _mm256_set1_epi32((int)m);
    __m256i base = zero, bad = zero;
    for (int64_t n = 0; n < m; n += 8) {
        __m256i live = none, L, R;
        if (n + 8 <= m) {
            L = _mm256_loadu_si256((const __m256i*)(left + n));
            R = _mm256_loadu_si256((const __m256i*)(right + n));
        } else { /* the tree's last nodes: lanes past them read nothing and count nothing */
            live = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(m - n)), lane);
            L = _mm256_maskload_epi32((const int*)(left + n), live);
            R = _mm256_maskload_epi32((const int*)(right + n), live);
        }
        __m256i il = _mm256_and_si256(_mm256_cmpgt_epi32(L, none), live); /* -1: internal */
        __m256i ir = _mm256_and_si256(_mm256_cmpgt_epi32(R, none), live);
        __m256i g = _mm256_sub_epi32(zero, _mm256_add_epi32(il, ir)); /* a node's 0 to 2 */
        __m256i p = _mm256_add_epi32(g, _mm256_slli_si256(g, 4));
        p = _mm256_add_epi32(p, _mm256_slli_si256(p, 8));                /* in each half */
        p = _mm256_add_epi32(p, _mm256_shuffle_epi32(_mm256_permute2x128_si256(p, p, 0x08),
                                                     0xFF));             /* across halves */
        __m256i G = _mm256_add_epi32(base, _mm256_sub_epi32(p, g));
        __m256i want_l = _mm256_add_epi32(G, one), want_r = _mm256_sub_epi32(want_l, il);
        bad = _mm256_or_si256(bad, _mm256_andnot_si256(_mm256_cmpeq_epi32(L, want_l), il));
        bad = _mm256_or_si256(bad, _mm256_andnot_si256(_mm256_cmpeq_epi32(R, want_r), ir));
        __m256i nv = _mm256_add_epi32(_mm256_set1_epi32((int)n), lane);
        bad = _mm256_or_si256(bad, _mm256_and_si256(_mm256_cmpgt_epi32(nv, G), live));
        /* a leaf child ~c with c past m (lanes past the tree read 0: internal, not live) */
        __m256i far_l = _mm256_cmpgt_epi32(_mm256_xor_si256(L, none), most);
        __m256i far_r = _mm256_cmpgt_epi32(_mm256_xor_si256(R, none), most);
        bad = _mm256_or_si256(bad, _mm256_and_si256(_mm256_or_si256(
                  _mm256_andnot_si256(il, far_l), _mm256_andnot_si256(ir, far_r)), live));
        base = _mm256_add_epi32(base, _mm256_permutevar8x32_epi32(p, last));
    }
    return _mm256_testz_si256(bad, bad) && 1 + (int64_t)_mm256_cvtsi256_si32(base) == m;
}
#endif

/* the backward rules, once the forward rules hold (every internal child after its parent,
 * every leaf number at most m). first and last: 2 m + 1 words each, a node's first and last
 * leaf at [n], leaf l's (l itself) at [m + l], so that a child's are one load whichever it is */
static inline int tree_leaves_sound(const int32_t* left, const int32_t* right, int64_t m,
                                    uint32_t* first, uint32_t* last)
{
    for (int64_t l = 0; l <= m; l++)
        first[m + l] = last[m + l] = (uint32_t)l;
    uint32_t bad = 0;
    for (int64_t n = m - 1; n >= 0; n--) {
        int64_t cl = left[n], cr = right[n], nl = cl >> 63, nr = cr >> 63;
        int64_t il = (cl ^ nl) + (m & nl), ir = (cr ^ nr) + (m & nr);
        bad |= (last[il] + 1) ^ first[ir];
        first[n] = first[il];
        last[n] = last[ir];
    }
    return bad == 0 && first[0] == 0 && last[0] == (uint32_t)m;
}

/* whether the tree of m >= 1 internal nodes is canonical, the forward rules on path isa
 * (CPU_ISA_SCALAR or CPU_ISA_AVX2); scratch: 4 m + 2 words */
static inline int tree_sound_isa(const int32_t* left, const int32_t* right, int64_t m,
                                 uint32_t* scratch, int isa)
{
#if CPU_HAVE_X86
    /* (the prefix sums are int32 lanes: up to 2 m) */
    if (isa == CPU_ISA_AVX2 && m < ((int64_t)1 << 29) ? !tree_forward_sound_avx2(left, right, m)
                                                      : !tree_forward_sound(left, right, m))
        return 0;
#else
    (void)isa;
    if (!tree_forward_sound(left, right, m))
        return 0;
#endif
    return tree_leaves_sound(left, right, m, scratch, scratch + 2 * m + 1);
}

/* The first of the trees' value rules a model file's arrays break, in check_packed's order
 * (TREES_VALUES_*), and whether any node is categorical: every feature in [0, F), every
 * default_left and is_categorical byte 0 or 1, every missing type at most max_missing, no
 * NaN threshold, every leaf value finite. Each rule one reduction that the compiler
 * vectorises (in AVX2 where the CPU has it: trees_values_fault). */
enum {
    TREES_VALUES_SOUND, TREES_VALUES_FEATURE, TREES_VALUES_DEFAULT_LEFT,
    TREES_VALUES_CATEGORICAL, TREES_VALUES_MISSING, TREES_VALUES_THRESHOLD, TREES_VALUES_LEAF
};

#if defined(__GNUC__) || defined(__clang__)
#define TREES_INLINE static inline __attribute__((always_inline))
#else
#define TREES_INLINE static inline
#endif

TREES_INLINE int trees_values_body(const int32_t* feature, const uint8_t* default_left,
                                   const uint8_t* categorical, const uint8_t* missing,
                                   const uint64_t* threshold, int64_t n_nodes,
                                   const uint64_t* leaf, int64_t n_leaves, int64_t n_features,
                                   int max_missing, int* any_categorical)
{
    const uint64_t abs = 0x7fffffffffffffffull, inf = 0x7ff0000000000000ull;
    uint32_t most = 0;
    uint8_t dl = 0, cat = 0, miss = 0;
    int64_t nan = 0, odd = 0;
    for (int64_t i = 0; i < n_nodes; i++) {
        uint32_t f = (uint32_t)feature[i];
        most = f > most ? f : most;
    }
    for (int64_t i = 0; i < n_nodes; i++)
        dl |= default_left[i];
    for (int64_t i = 0; i < n_nodes; i++)
        cat |= categorical[i];
    for (int64_t i = 0; i < n_nodes; i++)
        miss = missing[i] > miss ? missing[i] : miss;
    for (int64_t i = 0; i < n_nodes; i++)
        nan |= (int64_t)((int64_t)(threshold[i] & abs) > (int64_t)inf);
    for (int64_t i = 0; i < n_leaves; i++)
        odd |= (int64_t)((int64_t)(leaf[i] & abs) >= (int64_t)inf);
    *any_categorical = cat != 0;
    if (n_nodes && (int64_t)most >= n_features) /* (a negative feature is past 2^31) */
        return TREES_VALUES_FEATURE;
    if (dl > 1)
        return TREES_VALUES_DEFAULT_LEFT;
    if (cat > 1)
        return TREES_VALUES_CATEGORICAL;
    if (miss > max_missing)
        return TREES_VALUES_MISSING;
    if (nan)
        return TREES_VALUES_THRESHOLD;
    if (odd)
        return TREES_VALUES_LEAF;
    return TREES_VALUES_SOUND;
}

static int trees_values_portable(const int32_t* feature, const uint8_t* default_left,
                                 const uint8_t* categorical, const uint8_t* missing,
                                 const uint64_t* threshold, int64_t n_nodes,
                                 const uint64_t* leaf, int64_t n_leaves, int64_t n_features,
                                 int max_missing, int* any_categorical)
{
    return trees_values_body(feature, default_left, categorical, missing, threshold, n_nodes,
                             leaf, n_leaves, n_features, max_missing, any_categorical);
}

#if CPU_NATIVE_X86 && !CPU_SIMDE
CPU_TARGET("avx2")
static int trees_values_avx2(const int32_t* feature, const uint8_t* default_left,
                             const uint8_t* categorical, const uint8_t* missing,
                             const uint64_t* threshold, int64_t n_nodes, const uint64_t* leaf,
                             int64_t n_leaves, int64_t n_features, int max_missing,
                             int* any_categorical)
{
    return trees_values_body(feature, default_left, categorical, missing, threshold, n_nodes,
                             leaf, n_leaves, n_features, max_missing, any_categorical);
}
#endif

/* trees_values_body on path isa (CPU_ISA_AVX2: compiled for AVX2 where x86-64 runs it) */
static inline int trees_values_fault(const int32_t* feature, const uint8_t* default_left,
                                     const uint8_t* categorical, const uint8_t* missing,
                                     const uint64_t* threshold, int64_t n_nodes,
                                     const uint64_t* leaf, int64_t n_leaves, int64_t n_features,
                                     int max_missing, int* any_categorical, int isa)
{
#if CPU_NATIVE_X86 && !CPU_SIMDE
    if (isa == CPU_ISA_AVX2)
        return trees_values_avx2(feature, default_left, categorical, missing, threshold,
                                 n_nodes, leaf, n_leaves, n_features, max_missing,
                                 any_categorical);
#endif
    (void)isa;
    return trees_values_portable(feature, default_left, categorical, missing, threshold,
                                 n_nodes, leaf, n_leaves, n_features, max_missing,
                                 any_categorical);
}

#endif
