/* The `oblivious` kernel's phases apart, in C, on a model's own layout (oblivious.h, the code
 * the library ships): a group's ranks alone, the ranks and each tree's leaf indexes, and the
 * whole group with its sums (groups in blocks, as the library scores them). Driven by
 * oblivious_floor.py, which writes the layout and the rows to a file, runs this and checks
 * the sums against the library's scores:
 *
 *     gcc -O3 -mavx2 -I src -o /tmp/oblivious_floor benchmarks/experiments/oblivious_floor.c -lm
 *     /tmp/oblivious_floor arrays.bin scores.bin rounds [groups a block, default 8]
 *
 * arrays.bin, little-endian: int64 n_rows, n_features, n_cols, n_trees, n_buckets, n_leaves;
 * double X[n_rows][n_features]; int32 col_feature[n_cols]; uint8 nan_rank[n_cols],
 * zero_rank[n_cols], zero_special[n_cols]; int32 npiv[n_cols]; int64 bkt_off[n_cols + 1];
 * double piv[16 n_cols], bkt[n_buckets]; int32 depth[n_trees], level_col[8 n_trees];
 * uint8 level_thr[8 n_trees]; int64 leaf_off[n_trees]; double leaf_value[n_leaves], base;
 * int64 has_f32; where it is 1, float piv32[16 n_cols], bkt32[n_buckets] (ranks in float32).
 * Prints ns a row of each phase (best of `rounds`, phases interleaved; AVX2), and the whole
 * group once more ranking with the float64 search where the layout has float32 tables
 * (its sums must equal the float32 tables' ones: exit status 3 where they do not); writes the
 * scores of the default path (one double a row).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quickscorer/algorithms/oblivious.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void* take(FILE* f, size_t bytes)
{
    void* p = aligned_alloc(64, (bytes + 63) / 64 * 64 + 64);
    if (bytes && fread(p, 1, bytes, f) != bytes) {
        fprintf(stderr, "short file\n");
        exit(1);
    }
    return p;
}

int main(int argc, char** argv)
{
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: %s arrays.bin scores.bin rounds [groups a block]\n", argv[0]);
        return 2;
    }
    FILE* f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    int64_t h[6];
    if (fread(h, 8, 6, f) != 6)
        return 1;
    const int64_t n = h[0], F = h[1], C = h[2], T = h[3], B = h[4], L = h[5];
    const double* X = take(f, 8 * n * F);
    obl_view v;
    v.n_cols = C;
    v.col_feature = take(f, 4 * C);
    v.nan_rank = take(f, C);
    v.zero_rank = take(f, C);
    v.zero_special = take(f, C);
    v.npiv = take(f, 4 * C);
    v.bkt_off = take(f, 8 * (C + 1));
    v.piv = take(f, 8 * 16 * C);
    v.bkt = take(f, 8 * B);
    v.n_trees = T;
    v.depth = take(f, 4 * T);
    v.level_col = take(f, 4 * OBL_MAX_DEPTH * T);
    v.level_thr = take(f, OBL_MAX_DEPTH * T);
    v.level_eq = NULL;      /* the program's models have no category tests */
    v.same_prev = NULL;     /* and one output */
    v.row_col8 = v.row_thr8 = v.row_eq8 = NULL;     /* the one-row path is not timed here */
    v.row_depth = 0;
    const int64_t* leaf_off = take(f, 8 * T);
    const double* leaf_value = take(f, 8 * L);
    const double base = *(const double*)take(f, 8);
    const int64_t has_f32 = *(const int64_t*)take(f, 8);
    v.piv32 = has_f32 ? take(f, 4 * 16 * C) : NULL;
    v.bkt32 = has_f32 ? take(f, 4 * B) : NULL;
    uint8_t* col_f32 = malloc((size_t)C);     /* the program's models: every column float32 */
    memset(col_f32, 1, (size_t)C);
    v.col_f32 = col_f32;
    int32_t* n_count = calloc((size_t)C, sizeof(int32_t));   /* finite thresholds a column */
    for (int64_t c = 0; has_f32 && c < C; ++c)
        for (int64_t j = v.bkt_off[c]; j < v.bkt_off[c + 1]; ++j)
            n_count[c] += v.bkt32[j] < INFINITY;
    v.n_count = n_count;
    v.cnt_s = v.cnt_k = NULL;   /* plain counting (OBL_COUNT_MAX), no buckets */
    v.cnt_off = NULL;
    v.cnt_tab = NULL;
    int32_t* block8 = calloc((size_t)C / 8 + 1, sizeof(int32_t));  /* runs of 8 features */
    v.n_block8 = 0;
    for (int64_t c = 0; c + 8 <= C; ) {
        int run = 1;
        for (int j = 1; j < 8; ++j)
            run &= v.col_feature[c + j] == v.col_feature[c] + j;
        if (run) {
            block8[v.n_block8++] = (int32_t)c;
            c += 8;
        } else {
            ++c;
        }
    }
    v.block8 = block8;
    fclose(f);
    if (!cpu_isa_available(CPU_ISA_AVX2)) {
        fprintf(stderr, "no AVX2\n");
        return 1;
    }
    const int rounds = atoi(argv[3]);
    const int G = argc > 4 ? atoi(argv[4]) : 8;    /* groups a block */
    uint8_t* ranks = aligned_alloc(64, (size_t)G * C * OBL_LANES + 64);
    float* xt = aligned_alloc(64, (size_t)C * OBL_LANES * sizeof(float) + 64);
    double* scores = malloc(sizeof(double) * (n + OBL_LANES));
    double* acc = aligned_alloc(64, sizeof(double) * G * OBL_LANES);
    __m256i sink = _mm256_setzero_si256();
    double best[4] = {1e30, 1e30, 1e30, 1e30};
    int differ = 0;   /* the float64 search's sums against the float32 tables' */
    const float* piv32 = v.piv32;
    const float* bkt32 = v.bkt32;
    const int64_t block_rows = (int64_t)G * OBL_LANES;
    for (int r = 0; r < rounds; ++r) {
        for (int phase = 0; phase < 4; ++phase) {
            /* phase 3: the whole group again with the float64 search (float32 tables off) */
            v.piv32 = phase == 3 ? NULL : piv32;
            v.bkt32 = phase == 3 ? NULL : bkt32;
            const double t0 = now();
            for (int64_t b0 = 0; b0 < n; b0 += block_rows) {
                /* a block of G groups as the library scores it: the groups' ranks, then the
                 * sums a block of trees at a time; X is row-major, lane l at X + (r0 + l) F */
                int ng = 0, nl = OBL_LANES;
                for (int64_t r0 = b0; r0 < n && r0 < b0 + block_rows; r0 += OBL_LANES, ++ng) {
                    nl = n - r0 < OBL_LANES ? (int)(n - r0) : OBL_LANES;
                    uint8_t* gr = ranks + (size_t)ng * C * OBL_LANES;
                    obl_ranks(1, &v, X + r0 * F, F, nl, xt, gr);
                    if (phase == 1)
                        for (int64_t t = 0; t < T; ++t)
                            sink = _mm256_xor_si256(sink, obl_tree_avx2(&v, t, gr, 0));
                    for (int l = 0; l < OBL_LANES; ++l)
                        acc[ng * OBL_LANES + l] = base;
                }
                if (phase < 2)
                    continue;
                obl_add(1, &v, ranks, ng, nl, leaf_value, leaf_off, NULL, 1, acc);
                for (int64_t i = b0; i < n && i < b0 + block_rows; ++i) {
                    if (phase == 2)
                        scores[i] = acc[i - b0];
                    else if (scores[i] != acc[i - b0])
                        differ = 1;
                }
            }
            const double dt = (now() - t0) / n * 1e9;
            if (dt < best[phase])
                best[phase] = dt;
        }
    }
    uint8_t s[32];
    _mm256_storeu_si256((__m256i*)s, sink);
    printf("ns a row: ranks %.1f  ranks+leaf indexes %.1f  whole %.1f  whole with the "
           "float64 search %.1f  (float32 tables: %s; sink %d)\n", best[0], best[1], best[2],
           best[3], has_f32 ? "yes" : "no", s[0]);
    if (differ) {
        fprintf(stderr, "the float64 search's sums differ from the float32 tables'\n");
        return 3;
    }
    FILE* o = fopen(argv[2], "wb");
    fwrite(scores, sizeof(double), n, o);
    fclose(o);
    return 0;
}
