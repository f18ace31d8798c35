/* The one-row QuickScorer scan alone, in C, on a model's own layout and rows, in three
 * layouts: the kernel's (thresholds, tree words and masks in three arrays, three segments a
 * feature), one 16-byte record an entry (float32 threshold, word, mask: exact only where
 * every threshold is a float32 value, as on XGBoost models), and oriented (a node whose
 * test sends most rows left is scanned from the top thresholds down and ANDed when the row
 * goes left; which nodes, the driver decides). The masks are not recomputed for the
 * oriented order, so its scores are not the model's: it counts the work, not the answer.
 * Written by benchmarks/experiments/one_row_floor.py, which dumps the layout and prints the counts.
 *
 *   gcc -O3 -o /tmp/one_row_floor benchmarks/experiments/one_row_floor.c -lm && /tmp/one_row_floor DUMP
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t F, U, E, T, R;
static int32_t *used;
static int64_t *seg, *aseg, *dseg, *rseg;
static double *thr, *athr, *dthr;
static uint32_t *word, *aw, *dw;
static uint64_t *mask, *am, *dm;
static uint8_t *down;
static float *X, *leaf;

typedef struct { float t; uint32_t w; uint64_t m; } rec16;
static rec16 *rec;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static float exits(const uint64_t *v) {   /* the lowest set bit of each tree, summed */
    float acc = 0.0f;
    for (int64_t t = 0; t < T; t++) acc += leaf[t * 64 + __builtin_ctzll(v[t])];
    return acc;
}

static float kernel_layout(const float *x, uint64_t *v) {
    memset(v, 0xff, T * 8);
    for (int64_t u = 0; u < U; u++) {
        int64_t f = used[u];
        double xv = x[f];
        for (int k = 0; k < 3; k++) {
            if (k == 1 && xv == 0.0) continue;
            for (int64_t j = seg[3 * f + k]; xv > thr[j]; j++) v[word[j]] &= mask[j];
        }
    }
    return exits(v);
}

static float record_layout(const float *x, uint64_t *v) {
    memset(v, 0xff, T * 8);
    for (int64_t u = 0; u < U; u++) {
        float xv = x[used[u]];
        for (const rec16 *p = rec + rseg[u]; xv > p->t; p++) v[p->w] &= p->m;
    }
    return exits(v);
}

static float oriented_layout(const float *x, uint64_t *v) {
    memset(v, 0xff, T * 8);
    for (int64_t u = 0; u < U; u++) {
        double xv = x[used[u]];
        for (int64_t j = aseg[u]; xv > athr[j]; j++) v[aw[j]] &= am[j];
        for (int64_t j = dseg[u]; xv <= dthr[j]; j++) v[dw[j]] &= dm[j];  /* NaN ends it */
    }
    return exits(v);
}

static void *take(FILE *fh, size_t size, int64_t n) {
    void *p = malloc(size * (size_t)(n > 0 ? n : 1));
    if (!p || fread(p, size, (size_t)n, fh) != (size_t)n) { fprintf(stderr, "bad dump\n"); exit(1); }
    return p;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s DUMP [rounds]\n", argv[0]); return 2; }
    int rounds = argc > 2 ? atoi(argv[2]) : 7;
    FILE *fh = fopen(argv[1], "rb");
    if (!fh) { perror(argv[1]); return 1; }
    int64_t *h = take(fh, 8, 5);
    F = h[0]; U = h[1]; E = h[2]; T = h[3]; R = h[4];
    used = take(fh, 4, U); seg = take(fh, 8, 3 * F + 1); thr = take(fh, 8, E);
    word = take(fh, 4, E); mask = take(fh, 8, E); X = take(fh, 4, R * F); down = take(fh, 1, E);
    fclose(fh);
    leaf = malloc(T * 64 * sizeof(float));
    for (int64_t i = 0; i < T * 64; i++) leaf[i] = (float)(i % 97) * 0.001f;

    /* records and the oriented split, one segment a feature (the kinds concatenated) */
    rec = malloc((E + U) * sizeof(rec16)); rseg = malloc(U * 8);
    athr = malloc((E + U) * 8); aw = malloc((E + U) * 4); am = malloc((E + U) * 8);
    dthr = malloc((E + U) * 8); dw = malloc((E + U) * 4); dm = malloc((E + U) * 8);
    aseg = malloc(U * 8); dseg = malloc(U * 8);
    int64_t nr = 0, na = 0, nd = 0;
    for (int64_t u = 0; u < U; u++) {
        int64_t f = used[u], r0 = nr, d0 = nd;
        rseg[u] = nr; aseg[u] = na; dseg[u] = nd;
        for (int k = 0; k < 3; k++)
            for (int64_t j = seg[3 * f + k]; j < seg[3 * f + k + 1] - 1; j++) {
                rec[nr].t = (float)thr[j]; rec[nr].w = word[j]; rec[nr].m = mask[j]; nr++;
                if (down[j]) { dthr[nd] = thr[j]; dw[nd] = word[j]; dm[nd] = mask[j]; nd++; }
                else { athr[na] = thr[j]; aw[na] = word[j]; am[na] = mask[j]; na++; }
            }
        for (int64_t i = r0 + 1; i < nr; i++) {          /* ascending thresholds */
            rec16 key = rec[i]; int64_t j = i - 1;
            while (j >= r0 && rec[j].t > key.t) { rec[j + 1] = rec[j]; j--; }
            rec[j + 1] = key;
        }
        for (int64_t i = d0 + 1; i < nd; i++) {          /* descending thresholds */
            double kt = dthr[i]; uint32_t kw = dw[i]; uint64_t km = dm[i]; int64_t j = i - 1;
            while (j >= d0 && dthr[j] < kt) { dthr[j + 1] = dthr[j]; dw[j + 1] = dw[j]; dm[j + 1] = dm[j]; j--; }
            dthr[j + 1] = kt; dw[j + 1] = kw; dm[j + 1] = km;
        }
        rec[nr].t = INFINITY; rec[nr].w = 0; rec[nr].m = ~0ull; nr++;
        athr[na] = INFINITY; aw[na] = 0; am[na] = ~0ull; na++;
        dthr[nd] = NAN; dw[nd] = 0; dm[nd] = ~0ull; nd++;
    }

    const char *names[] = {"kernel's layout (3 arrays, 3 segments a feature)",
                           "16-byte records, float32 thresholds",
                           "oriented (the driver's choice of nodes)"};
    double best[3] = {1e30, 1e30, 1e30};
    uint64_t *v = aligned_alloc(64, ((T * 8 + 63) / 64) * 64);
    volatile float sink = 0.0f;
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < 3; k++) {
            double t0 = now();
            for (int64_t i = 0; i < R; i++) {
                const float *x = X + i * F;
                sink += k == 0 ? kernel_layout(x, v) : k == 1 ? record_layout(x, v)
                                                               : oriented_layout(x, v);
            }
            double us = (now() - t0) / R * 1e6;
            if (us < best[k]) best[k] = us;
        }
    for (int k = 0; k < 3; k++) printf("%-50s %8.2f us a row (best of %d)\n", names[k], best[k], rounds);
    return 0;
}
