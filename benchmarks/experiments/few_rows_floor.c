/* Calls of a few rows, the kernels' inner loops alone in C on a model's own layouts: how
 * little time a document could take at 4, 8 and 16 rows a call with the walk of complete
 * trees and with the V-QuickScorer scan, against a scan of one row at a time (the loop of
 * YDF's QuickScorer engine). No conversion of the rows, no Python, no call: what
 * few_rows_floor.py times through predict adds those. Every variant's exit leaves are
 * checked against the reference traversal's.
 *
 *   few_rows_floor <dir> <rounds> <rows per call>
 *
 * <dir> holds raw little-endian arrays written by few_rows_floor.py: meta.i64 (n_trees,
 * n_features, n_rows, n_cols, float32 slots, complete trees laid out), the walk's complete
 * trees where it lays them out (cnodes.u64,
 * cnode_offset.i64, cdepth.u8, cslot_offset.i64, cslot_leaf.i32) and expanded rows
 * (xr.f64, xrkey.u32 the keys of its float32 values: n_rows x n_cols), the QuickScorer layout's entry-wise stream
 * (thr.f64, word.u32, mask.u64, seg.i64: 3 n_features + 1 offsets), the rows (x.f64:
 * n_rows x n_features) and the reference leaves (want.i32: n_rows x n_trees, in-order leaf
 * numbers, which the layout's bit numbers are). Prints "name best_us median_us ok" per
 * variant, microseconds a document ("name - - skipped" for the walks without complete
 * trees, and for the AVX-512 scan on a CPU without it). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quickscorer/algorithms/walk.h"
#include "quickscorer/algorithms/qs/vqs.h"

static void* slurp(const char* dir, const char* name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE* f = fopen(path, "rb");
    if (!f) { perror(path); exit(2); }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    void* p = aligned_alloc(64, ((size_t)n + 127) / 64 * 64);
    if (!p || fread(p, 1, (size_t)n, f) != (size_t)n) { perror(path); exit(2); }
    fclose(f);
    return p;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

/* Each group of eight trees walked for every row of the call, two rows at a time, before the
 * next group: the group's slots are in L1 for all but the first pair. */
#define BY_GROUP(NAME, NODE, VALUE)                                                          \
static void NAME(const NODE* nodes, const int64_t* off, const uint8_t* depth,                \
                 const int32_t* sleaf, const int64_t* soff, int64_t n_trees, const VALUE* x, \
                 int64_t n_cols, int rows, int32_t* leaf, int64_t stride)                    \
{                                                                                            \
    for (int64_t t = 0; t < n_trees; t += 8) {                                               \
        const NODE* b = nodes + off[t];                                                      \
        const int32_t* s = sleaf + soff[t];                                                  \
        for (int r = 0; r < rows; r += 2) {                                                  \
            const VALUE* xa = x + r * n_cols;                                                \
            int32_t* la = leaf + r * stride + t;                                             \
            WALK_BY_DEPTH(depth[t], NODE##_pair_group, b, s, xa, xa + n_cols, la,            \
                          la + stride)                                                       \
        }                                                                                    \
    }                                                                                        \
}
#define walk_cnode_pair_group walk_groups_pair_group
#define walk_cnode32_pair_group walk_groups_pair32_group
BY_GROUP(by_group, walk_cnode, double)
BY_GROUP(by_group32, walk_cnode32, uint32_t)

/* One row's scan of one segment, YDF's loop: AND the mask of every entry the value exceeds */
static inline void row_scan(const double* thr, const uint32_t* word, const uint64_t* mask,
                            int64_t k, double x, uint64_t* v)
{
    for (; x > thr[k]; ++k)
        v[word[k]] &= mask[k];
}

enum { WALK_PAIRS, WALK_BY_GROUP, VQS_SCAN, VQS_SCAN512, ROW_SCANS, N_VARIANTS };
static const char* NAMES[N_VARIANTS] = {"walk_pairs", "walk_by_group", "vqs_scan",
                                        "vqs_scan512", "row_scans"};

int main(int argc, char** argv)
{
    if (argc != 4) { fprintf(stderr, "usage: %s dir rounds rows\n", argv[0]); return 2; }
    const char* dir = argv[1];
    int rounds = atoi(argv[2]), R = atoi(argv[3]);
    if (rounds < 1 || rounds > 64 || !(R == 4 || R == 8 || R == 16)) {
        fprintf(stderr, "rounds 1 to 64, rows 4, 8 or 16\n");
        return 2;
    }
    const int64_t* meta = slurp(dir, "meta.i64");
    const int64_t T = meta[0], F = meta[1], N = meta[2] / R * R, C = meta[3], f32 = meta[4];
    const int64_t complete = meta[5];
    const void* cn = slurp(dir, "cnodes.u64");
    const int64_t* off = slurp(dir, "cnode_offset.i64");
    const uint8_t* depth = slurp(dir, "cdepth.u8");
    const int64_t* soff = slurp(dir, "cslot_offset.i64");
    const int32_t* sleaf = slurp(dir, "cslot_leaf.i32");
    const double* xr = slurp(dir, "xr.f64");
    const uint32_t* xr32 = slurp(dir, "xrkey.u32");   /* the keys of the float32 values */
    const double* thr = slurp(dir, "thr.f64");
    const uint32_t* word = slurp(dir, "word.u32");
    const uint64_t* mask = slurp(dir, "mask.u64");
    const int64_t* seg = slurp(dir, "seg.i64");
    const double* X = slurp(dir, "x.f64");
    const int32_t* want = slurp(dir, "want.i32");
    const int64_t stride = T + 16;           /* the walks write up to 8 fill trees' leaves */
    int32_t* leaves[N_VARIANTS];          /* each variant's own, checked at the end */
    for (int var = 0; var < N_VARIANTS; ++var)
        leaves[var] = calloc((size_t)(N * stride), sizeof(int32_t));
    uint64_t* v = aligned_alloc(64, (size_t)(T * R * 8 + 64));
    double xs[16];
    double times[N_VARIANTS][64];
    int isa = cpu_isa_available(CPU_ISA_AVX2) ? CPU_ISA_AVX2 : CPU_ISA_SCALAR;
    const int has512 = cpu_isa_available(CPU_ISA_AVX512);
    for (int round = 0; round < rounds; ++round)
        for (int var = 0; var < N_VARIANTS; ++var) {
            if ((!complete && var <= WALK_BY_GROUP) || (!has512 && var == VQS_SCAN512))
                continue;
            double t0 = now();
            for (int64_t i = 0; i < N; i += R) {
                int32_t* lf = leaves[var] + i * stride;
                if (var == WALK_PAIRS) {
                    for (int r = 0; r < R; r += 2) {
                        int32_t* la = lf + r * stride;
                        if (f32)
                            walk_groups_pair32(cn, off, depth, sleaf, soff, T,
                                               xr32 + (i + r) * C, xr32 + (i + r + 1) * C,
                                               la, la + stride);
                        else
                            walk_groups_pair(cn, off, depth, sleaf, soff, T, xr + (i + r) * C,
                                             xr + (i + r + 1) * C, la, la + stride);
                    }
                } else if (var == WALK_BY_GROUP) {
                    if (f32)
                        by_group32(cn, off, depth, sleaf, soff, T, xr32 + i * C, C, R, lf,
                                   stride);
                    else
                        by_group(cn, off, depth, sleaf, soff, T, xr + i * C, C, R, lf, stride);
                } else if (var == VQS_SCAN || var == VQS_SCAN512) {
                    /* the rows interleaved a word (one word a tree), every segment of every
                     * feature scanned (the rows hold no NaN and no zero) */
                    memset(v, 0xFF, (size_t)(T * R * 8));
                    for (int64_t f = 0; f < F; ++f) {
                        for (int l = 0; l < R; ++l)
                            xs[l] = X[(i + l) * F + f];
                        for (int s = 0; s < 3; ++s)
                            qs_scan_entries(var == VQS_SCAN ? isa : CPU_ISA_AVX512, R, thr,
                                            word, mask, seg[3 * f + s], xs, v);
                    }
                    for (int64_t t = 0; t < T; ++t)
                        for (int l = 0; l < R; ++l)
                            lf[l * stride + t] = __builtin_ctzll(v[t * R + l]);
                } else {
                    for (int l = 0; l < R; ++l) {
                        memset(v, 0xFF, (size_t)(T * 8));
                        const double* x = X + (i + l) * F;
                        for (int64_t f = 0; f < F; ++f)
                            for (int s = 0; s < 3; ++s)
                                row_scan(thr, word, mask, seg[3 * f + s], x[f], v);
                        for (int64_t t = 0; t < T; ++t)
                            lf[l * stride + t] = __builtin_ctzll(v[t]);
                    }
                }
            }
            times[var][round] = (now() - t0) * 1e6 / (double)N;
        }
    for (int var = 0; var < N_VARIANTS; ++var) {
        if ((!complete && var <= WALK_BY_GROUP) || (!has512 && var == VQS_SCAN512)) {
            printf("%s - - skipped\n", NAMES[var]);
            continue;
        }
        double m[64];
        memcpy(m, times[var], sizeof(double) * (size_t)rounds);
        for (int a = 1; a < rounds; ++a)          /* insertion sort for the median */
            for (int b = a; b > 0 && m[b] < m[b - 1]; --b) {
                double s = m[b];
                m[b] = m[b - 1];
                m[b - 1] = s;
            }
        int64_t bad = 0;
        for (int64_t i = 0; i < N; ++i)
            for (int64_t t = 0; t < T; ++t)
                bad += leaves[var][i * stride + t] != want[i * T + t];
        printf("%s %.3f %.3f %s\n", NAMES[var], m[0], m[rounds / 2], bad ? "NO" : "yes");
    }
    return 0;
}
