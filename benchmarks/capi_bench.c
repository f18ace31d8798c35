/* The timing loop of benchmarks/capi.py: `reps` calls of qs_predict of `batch` float32 rows
 * each (row windows taken in turn from `rows`), timed in C so that the Python call's own cost
 * is not counted. Built by benchmarks/capi.py against the installed libquickscorer. */
#include <stdint.h>
#include <time.h>

#include <quickscorer.h>

double bench_predict(const qs_model* m, const float* rows, int64_t n_rows, int64_t n_features,
                     int64_t batch, int reps, int n_threads, double* out)
{
    struct timespec a, b;
    int64_t at = 0;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int r = 0; r < reps; r++) {
        if (at + batch > n_rows)
            at = 0;
        if (qs_predict(m, rows + at * n_features, batch, 0, n_threads, out) != QS_OK)
            return -1.0;
        at += batch;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    return (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
}
