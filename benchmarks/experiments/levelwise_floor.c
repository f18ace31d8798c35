/* What a level-by-level traversal of complete trees costs on this CPU: the way oneDAL and
 * others score depth-limited trees (XGBoost's depth-wise ones), tried here as a possible
 * kernel for deep XGBoost models, where RapidScorer pays for every node of a tree.
 *
 *     gcc -O3 -march=native -o /tmp/levelwise_floor benchmarks/experiments/levelwise_floor.c
 *     /tmp/levelwise_floor 8 1000 10240     # depth, trees, rows (rounded up to 32)
 *
 * Random complete trees (2^depth - 1 nodes in breadth-first order, children of node i at
 * 2i + 1 and 2i + 2, go right when x[col] > thr), 136 float32 features (30% zeros, the rest
 * uniform), float64 leaf sums; us per document, three rounds:
 *   scalar     16 rows at a time, each a chain of dependent loads per level;
 *   simd       AVX2, 8 rows a register, 4 registers: per level a gather of the nodes'
 *              columns, of their thresholds and of the rows' values;
 *   simd+top   the same, with the first four levels' columns and thresholds permuted from
 *              two registers a tree instead of gathered.
 * The three must give the same sums (ok=1). x86-64 with AVX2, gcc or clang.
 */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static uint64_t rs = 88172645463325252ULL;
static uint64_t rnd(void) { rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17; return rs; }
static float urand(void) { return (rnd() >> 40) / (float)(1 << 24); }

enum { F = 136 };
static int D, T, NI, NL;           /* depth, trees, internal nodes and leaves a tree */
static int32_t* col;
static float* thr;
static double* val;

/* one level down: 2i + 1 (left) or 2i + 2 (right) */
#define STEP(idx, x, t)                                                                      \
    _mm256_sub_epi32(_mm256_add_epi32(_mm256_add_epi32(idx, idx), one),                      \
                     _mm256_castps_si256(_mm256_cmp_ps(x, t, _CMP_GT_OQ)))

static void scalar(const float* X, int n, double* out)
{
    enum { G = 16 };
    for (int g0 = 0; g0 < n; g0 += G) {
        double acc[G] = {0};
        for (int t = 0; t < T; ++t) {
            const int32_t* c = col + (size_t)t * NI;
            const float* th = thr + (size_t)t * NI;
            const double* v = val + (size_t)t * NL;
            uint32_t idx[G] = {0};
            for (int l = 0; l < D; ++l)
                for (int g = 0; g < G; ++g) {
                    const uint32_t i = idx[g];
                    idx[g] = 2 * i + 1 + (X[(size_t)(g0 + g) * F + c[i]] > th[i]);
                }
            for (int g = 0; g < G; ++g)
                acc[g] += v[idx[g] - NI];
        }
        for (int g = 0; g < G; ++g)
            out[g0 + g] = acc[g];
    }
}

__attribute__((target("avx2")))
static void simd(const float* X, int n, double* out, int top)
{
    enum { U = 4, G = 8 * U };
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i one = _mm256_set1_epi32(1);
    for (int g0 = 0; g0 < n; g0 += G) {
        __m256d acc[2 * U];
        __m256i roff[U];             /* each row's offset in X, in floats */
        for (int u = 0; u < 2 * U; ++u)
            acc[u] = _mm256_setzero_pd();
        for (int u = 0; u < U; ++u)
            roff[u] = _mm256_mullo_epi32(_mm256_add_epi32(lane, _mm256_set1_epi32(8 * u)),
                                         _mm256_set1_epi32(F));
        const float* Xg = X + (size_t)g0 * F;
        for (int t = 0; t < T; ++t) {
            const int32_t* c = col + (size_t)t * NI;
            const float* th = thr + (size_t)t * NI;
            const double* v = val + (size_t)t * NL;
            __m256i idx[U];
            for (int u = 0; u < U; ++u)
                idx[u] = _mm256_setzero_si256();
            int l = 0;
            if (top) {
                /* nodes 0-6 (levels 0-2) from one register, 7-14 (level 3) from another */
                const __m256i c0 = _mm256_loadu_si256((const __m256i*)c);
                const __m256i c1 = _mm256_loadu_si256((const __m256i*)(c + 7));
                const __m256 t0 = _mm256_loadu_ps(th), t1 = _mm256_loadu_ps(th + 7);
                for (; l < 3; ++l)
                    for (int u = 0; u < U; ++u) {
                        const __m256i cc = _mm256_permutevar8x32_epi32(c0, idx[u]);
                        const __m256 x = _mm256_i32gather_ps(Xg, _mm256_add_epi32(roff[u], cc), 4);
                        idx[u] = STEP(idx[u], x, _mm256_permutevar8x32_ps(t0, idx[u]));
                    }
                for (int u = 0; u < U; ++u) {
                    const __m256i j = _mm256_sub_epi32(idx[u], _mm256_set1_epi32(7));
                    const __m256i cc = _mm256_permutevar8x32_epi32(c1, j);
                    const __m256 x = _mm256_i32gather_ps(Xg, _mm256_add_epi32(roff[u], cc), 4);
                    idx[u] = STEP(idx[u], x, _mm256_permutevar8x32_ps(t1, j));
                }
                l = 4;
            }
            for (; l < D; ++l)
                for (int u = 0; u < U; ++u) {
                    const __m256i cc = _mm256_i32gather_epi32(c, idx[u], 4);
                    const __m256 tt = _mm256_i32gather_ps(th, idx[u], 4);
                    const __m256 x = _mm256_i32gather_ps(Xg, _mm256_add_epi32(roff[u], cc), 4);
                    idx[u] = STEP(idx[u], x, tt);
                }
            for (int u = 0; u < U; ++u) {
                const __m256i li = _mm256_sub_epi32(idx[u], _mm256_set1_epi32(NI));
                acc[2 * u] = _mm256_add_pd(
                    acc[2 * u], _mm256_i32gather_pd(v, _mm256_castsi256_si128(li), 8));
                acc[2 * u + 1] = _mm256_add_pd(
                    acc[2 * u + 1], _mm256_i32gather_pd(v, _mm256_extracti128_si256(li, 1), 8));
            }
        }
        for (int u = 0; u < 2 * U; ++u)
            _mm256_storeu_pd(out + g0 + 4 * u, acc[u]);
    }
}

int main(int argc, char** argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s depth trees rows\n", argv[0]);
        return 2;
    }
    D = atoi(argv[1]);
    T = atoi(argv[2]);
    const int n = (atoi(argv[3]) + 31) / 32 * 32;
    if (D < 4 || D > 16 || T < 1 || n < 32) {
        fprintf(stderr, "depth 4 to 16, at least one tree and one row\n");
        return 2;
    }
    NI = (1 << D) - 1;
    NL = 1 << D;
    col = malloc(sizeof(int32_t) * NI * (size_t)T);
    thr = malloc(sizeof(float) * NI * (size_t)T);
    val = malloc(sizeof(double) * NL * (size_t)T);
    float* X = malloc(sizeof(float) * F * (size_t)n);
    double *o1 = malloc(8 * (size_t)n), *o2 = malloc(8 * (size_t)n), *o3 = malloc(8 * (size_t)n);
    if (!col || !thr || !val || !X || !o1 || !o2 || !o3) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < (size_t)NI * T; ++i) {
        col[i] = (int32_t)(rnd() % F);
        thr[i] = urand();
    }
    for (size_t i = 0; i < (size_t)NL * T; ++i)
        val[i] = urand() - 0.5;
    for (size_t i = 0; i < (size_t)F * n; ++i)
        X[i] = urand() < 0.3f ? 0.0f : urand();
    for (int rep = 0; rep < 3; ++rep) {
        const double t0 = now();
        scalar(X, n, o1);
        const double t1 = now();
        simd(X, n, o2, 0);
        const double t2 = now();
        simd(X, n, o3, 1);
        const double t3 = now();
        printf("depth %d, %d trees, %d rows: scalar %.2f  simd %.2f  simd+top %.2f us/doc  "
               "ok=%d %d\n", D, T, n, (t1 - t0) / n * 1e6, (t2 - t1) / n * 1e6,
               (t3 - t2) / n * 1e6, memcmp(o1, o2, 8 * (size_t)n) == 0,
               memcmp(o1, o3, 8 * (size_t)n) == 0);
    }
    return 0;
}
