/* One row through a model's trees, the walk alone (no expansion of the row, no sum): the
 * kernels of src/quickscorer/algorithms/walk.h on the walk's own layout, the eight-cursor walk as it
 * once stepped (the next root read after the step, on the chain of loads; the child indexed
 * by the compare's bit, where the kernel moves it conditionally) and
 * with a harvest after every 1, 2 or 4 steps (walk.h WALK_HARVEST is 3), the group walks of
 * float32 slots as they once stepped (a float compare; the kernel's compare order keys) and
 * AVX2 gathers of the same complete trees (tried for this comparison, not kernels), timed on
 * rows already expanded (walk_groups_floor.py writes the arrays, reads the leaves and prints
 * the times).
 *
 *   walk_groups_floor <dir> <rounds>
 *
 * <dir> holds raw little-endian arrays: meta.i64 (n_trees, n_cols, n_rows, f32, one depth,
 * complete, leaf records), walk_nodes.u64 (the leaf records of walk.h, then the table),
 * roots.i32 (n_trees + 16), cnodes.u64, cnode_offset.i64, cdepth.u8, cslot_offset.i64,
 * cslot_leaf.i32, xr.f64 (n_rows x n_cols), xrkey.u32 (the keys of its float32 values). Writes leaves_<name>.i32 (n_rows x
 * n_trees) and prints "name best_us median_us" per variant. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <immintrin.h>

#include "../../src/quickscorer/algorithms/walk.h"

static void* slurp(const char* dir, const char* name, size_t* bytes)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE* f = fopen(path, "rb");
    if (!f) { perror(path); exit(2); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void* p = aligned_alloc(64, (size_t)n + 64);
    if (!p || fread(p, 1, (size_t)n, f) != (size_t)n) { perror(path); exit(2); }
    fclose(f);
    if (bytes) *bytes = (size_t)n;
    return p;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* walk8 as it once stepped: the next tree's root loaded after the step found its leaf, at
 * an index that step computed, so every step's chain ran through that load and the update */
#define S26_STEP(q, t)                                                                       \
    {                                                                                        \
        const walk_node* p_ = WALK_AT(q);                                                    \
        int32_t nq_ = p_->kid[xr[p_->col] > p_->thr];                                        \
        int32_t m_ = nq_ >> 31;                                                              \
        WALK_OPAQUE(m_);                                                                  \
        leaf[t] = WALK_AT(nq_)->pad;                                                         \
        done -= m_;                                                                          \
        t += 8 & m_;                                                                         \
        q = (roots[t] & m_) | (nq_ & ~m_);                                                   \
    }

static void walk8_s26(const walk_node* nodes, const int32_t* roots, int64_t n_trees,
                      const double* xr, int32_t* leaf)
{
    int32_t t0 = 0, t1 = 1, t2 = 2, t3 = 3, t4 = 4, t5 = 5, t6 = 6, t7 = 7;
    int32_t q0 = roots[0], q1 = roots[1], q2 = roots[2], q3 = roots[3];
    int32_t q4 = roots[4], q5 = roots[5], q6 = roots[6], q7 = roots[7];
    int64_t done = 0;
    while (done < n_trees) {
        S26_STEP(q0, t0) S26_STEP(q1, t1) S26_STEP(q2, t2) S26_STEP(q3, t3)
        S26_STEP(q4, t4) S26_STEP(q5, t5) S26_STEP(q6, t6) S26_STEP(q7, t7)
    }
}

/* walk8 as it stepped before its conditional move (walk.h WALK_MOVE_INDEXED, the portable
 * step): the compare's bit indexes kid[], so the child's load waits on the compare */
WALK8_BY(walk8_indexed, WALK_HARVEST, WALK_MOVE_INDEXED)

/* walk8 with a harvest after every K steps */
WALK8(walk8_every1, 1)
WALK8(walk8_every2, 2)
WALK8(walk8_every4, 4)

/* The group walks of float32 slots with the float compare (walk.h WALK_THR_STEP, the
 * compiler's code computing the bit and the next slot's address), against the kernel's key
 * steps (WALK_KEY_STEP): the same walks but for the step */
typedef struct {
    float thr;
    int32_t col;
} float_node;
WALK_GROUPS(float_groups, float_node, float, WALK_THR_STEP)
WALK_GROUPS2(float_pairs, float_node, float, WALK_THR_STEP)

/* the float32 value of an order key (walk.h walk_key32's inverse) */
static float key_value(uint32_t k)
{
    uint32_t u = k ^ ((k >> 31) ? 0x80000000u : 0xFFFFFFFFu);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* G groups of eight trees, one gather of the slots' columns, one of their thresholds and
 * one of the row's values a level (float32 slots; trees of a run of G groups of one depth,
 * the model's trees all of one depth here) */
#define GATHER_WALK(G)                                                                       \
static void gather##G(const float_node* nodes, const int64_t* off, const uint8_t* depth, \
                      const int32_t* slot_leaf, const int64_t* soff, int64_t n_trees,         \
                      const float* xr, int32_t* leaf)                                         \
{                                                                                             \
    int64_t t = 0;                                                                            \
    for (; t + 8 * G <= n_trees; t += 8 * G) {                                                \
        const int d = depth[t];                                                               \
        const int32_t span = (1 << d) - 1;                                                    \
        const int* base = (const int*)(nodes + off[t]);                                       \
        const __m256i lane = _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),   \
                                                _mm256_set1_epi32(2 * span));                 \
        __m256i i[G], first[G];                                                               \
        for (int g = 0; g < G; ++g) {                                                         \
            i[g] = _mm256_setzero_si256();                                                    \
            first[g] = _mm256_add_epi32(lane, _mm256_set1_epi32(g * 16 * span));              \
        }                                                                                     \
        for (int l = 0; l < d; ++l)                                                           \
            for (int g = 0; g < G; ++g) {                                                     \
                __m256i at = _mm256_add_epi32(first[g], _mm256_add_epi32(i[g], i[g]));        \
                __m256i col = _mm256_i32gather_epi32(base + 1, at, 4);                        \
                __m256 thr = _mm256_i32gather_ps((const float*)base, at, 4);                  \
                __m256 x = _mm256_i32gather_ps(xr, col, 4);                                   \
                __m256i gt = _mm256_castps_si256(_mm256_cmp_ps(x, thr, _CMP_GT_OQ));          \
                i[g] = _mm256_sub_epi32(_mm256_add_epi32(_mm256_add_epi32(i[g], i[g]),        \
                                                         _mm256_set1_epi32(1)), gt);          \
            }                                                                                 \
        for (int g = 0; g < G; ++g) {                                                         \
            int32_t ii[8];                                                                    \
            _mm256_storeu_si256((__m256i*)ii, i[g]);                                          \
            const int32_t* s = slot_leaf + soff[t + 8 * g];                                   \
            for (int k = 0; k < 8; ++k) leaf[t + 8 * g + k] = s[k * (span + 1) + ii[k] - span]; \
        }                                                                                     \
    }                                                                                         \
    if (t < n_trees)                                                                          \
        float_groups(nodes, off + t, depth + t, slot_leaf, soff + t, n_trees - t, xr,        \
                     leaf + t);                                                               \
}
GATHER_WALK(1)
GATHER_WALK(2)
GATHER_WALK(4)

enum { EIGHT_CURSORS, EIGHT_INDEXED, EIGHT_CURSORS_S26, HARVEST1, HARVEST2, HARVEST4, GROUPS, PAIRS,
       FLOAT_GROUPS, FLOAT_PAIRS, GATHER1, GATHER2, GATHER4, N_VARIANTS };
static const char* NAMES[N_VARIANTS] = {"eight_cursors", "eight_cursors_indexed",
                                        "eight_cursors_s26",
                                        "eight_cursors_every1", "eight_cursors_every2",
                                        "eight_cursors_every4", "groups", "pairs",
                                        "float_groups", "float_pairs", "gather1x8",
                                        "gather2x8", "gather4x8"};

int main(int argc, char** argv)
{
    if (argc != 3) { fprintf(stderr, "usage: %s dir rounds\n", argv[0]); return 2; }
    const char* dir = argv[1];
    int rounds = atoi(argv[2]);
    int64_t* meta = slurp(dir, "meta.i64", NULL);
    int64_t n_trees = meta[0], n_cols = meta[1], n_rows = meta[2], f32 = meta[3];
    int64_t one_depth = meta[4];      /* every tree of one depth: the gathers can run */
    int64_t complete = meta[5];       /* complete trees laid out: the group walks can run */
    int64_t n_records = meta[6];      /* leaf records before the walk's table */
    const walk_node* walk = (const walk_node*)slurp(dir, "walk_nodes.u64", NULL) + n_records;
    const int32_t* roots = slurp(dir, "roots.i32", NULL);
    const void* cn = slurp(dir, "cnodes.u64", NULL);
    const int64_t* off = slurp(dir, "cnode_offset.i64", NULL);
    const uint8_t* depth = slurp(dir, "cdepth.u8", NULL);
    const int64_t* soff = slurp(dir, "cslot_offset.i64", NULL);
    const int32_t* sleaf = slurp(dir, "cslot_leaf.i32", NULL);
    const double* xr = slurp(dir, "xr.f64", NULL);
    const uint32_t* xr32 = slurp(dir, "xrkey.u32", NULL);    /* keys of the float32 values */
    int64_t stride = n_trees + 16;
    /* the float32 slots and rows as floats, for the float steps and the gathers */
    float_node* fn = NULL;
    float* fx = NULL;
    if (f32 && complete) {
        size_t nb;
        const walk_cnode32* kn = slurp(dir, "cnodes.u64", &nb);
        fn = malloc(nb);
        for (size_t j = 0; j < nb / sizeof(walk_cnode32); ++j) {
            fn[j].thr = key_value(kn[j].key);
            fn[j].col = kn[j].col;
        }
        fx = malloc((size_t)(n_rows * n_cols) * sizeof(float));
        for (int64_t j = 0; j < n_rows * n_cols; ++j)
            fx[j] = key_value(xr32[j]);
    }
    int32_t* leaves = calloc((size_t)(n_rows * stride), sizeof(int32_t));
    double best[N_VARIANTS], times[N_VARIANTS][64];
    int n_variants = !complete ? GROUPS : !f32 ? FLOAT_GROUPS : one_depth ? N_VARIANTS : GATHER1;
    for (int v = 0; v < n_variants; ++v) best[v] = 1e300;
    if (rounds > 64) rounds = 64;
    for (int r = 0; r < rounds; ++r)
        for (int v = 0; v < n_variants; ++v) {
            double t0 = now();
            for (int64_t i = 0; i < n_rows; ++i) {
                const double* x = xr + i * n_cols;
                const uint32_t* x32 = xr32 + i * n_cols;
                const float* xf = f32 && complete ? fx + i * n_cols : NULL;
                int32_t* lf = leaves + i * stride;
                switch (v) {
                case EIGHT_CURSORS: walk8(walk, roots, n_trees, x, lf); break;
                case EIGHT_INDEXED: walk8_indexed(walk, roots, n_trees, x, lf); break;
                case EIGHT_CURSORS_S26: walk8_s26(walk, roots, n_trees, x, lf); break;
                case HARVEST1: walk8_every1(walk, roots, n_trees, x, lf); break;
                case HARVEST2: walk8_every2(walk, roots, n_trees, x, lf); break;
                case HARVEST4: walk8_every4(walk, roots, n_trees, x, lf); break;
                case GROUPS:
                    if (f32) walk_groups32(cn, off, depth, sleaf, soff, n_trees, x32, lf);
                    else walk_groups(cn, off, depth, sleaf, soff, n_trees, x, lf);
                    break;
                case PAIRS:
                    if (i + 1 < n_rows) {
                        if (f32) walk_groups_pair32(cn, off, depth, sleaf, soff, n_trees, x32,
                                                       x32 + n_cols, lf, lf + stride);
                        else walk_groups_pair(cn, off, depth, sleaf, soff, n_trees, x,
                                                 x + n_cols, lf, lf + stride);
                        ++i;
                    } else if (f32) {
                        walk_groups32(cn, off, depth, sleaf, soff, n_trees, x32, lf);
                    } else {
                        walk_groups(cn, off, depth, sleaf, soff, n_trees, x, lf);
                    }
                    break;
                case FLOAT_GROUPS: float_groups(fn, off, depth, sleaf, soff, n_trees, xf, lf); break;
                case FLOAT_PAIRS:
                    if (i + 1 < n_rows) {
                        float_pairs(fn, off, depth, sleaf, soff, n_trees, xf, xf + n_cols, lf,
                                    lf + stride);
                        ++i;
                    } else {
                        float_groups(fn, off, depth, sleaf, soff, n_trees, xf, lf);
                    }
                    break;
                case GATHER1: gather1(fn, off, depth, sleaf, soff, n_trees, xf, lf); break;
                case GATHER2: gather2(fn, off, depth, sleaf, soff, n_trees, xf, lf); break;
                default: gather4(fn, off, depth, sleaf, soff, n_trees, xf, lf); break;
                }
            }
            double us = (now() - t0) * 1e6 / (double)n_rows;
            times[v][r] = us;
            if (us < best[v]) best[v] = us;
            if (r == rounds - 1) {
                char name[256];
                snprintf(name, sizeof name, "%s/leaves_%s.i32", dir, NAMES[v]);
                FILE* f = fopen(name, "wb");
                for (int64_t i = 0; i < n_rows; ++i)
                    fwrite(leaves + i * stride, sizeof(int32_t), (size_t)n_trees, f);
                fclose(f);
            }
        }
    for (int v = 0; v < n_variants; ++v) {
        double m[64];
        memcpy(m, times[v], sizeof(double) * (size_t)rounds);
        for (int a = 0; a < rounds; ++a)        /* insertion sort for the median */
            for (int b = a; b > 0 && m[b] < m[b - 1]; --b) {
                double s = m[b];
                m[b] = m[b - 1];
                m[b - 1] = s;
            }
        printf("%s %.3f %.3f\n", NAMES[v], best[v], m[rounds / 2]);
    }
    return 0;
}
