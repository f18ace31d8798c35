/* One open of a prepared model file and its first one-row call in a process of its own, as a
 * C service starts: prints the seconds from qs_open to the score (the model's pages, the
 * library's code and the walk's table all met for the first time). Built and run by
 * benchmarks/load_time.py against the installed libquickscorer. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <quickscorer.h>

int main(int argc, char** argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: open_once MODEL.qsm\n");
        return 2;
    }
    struct timespec a, b;
    qs_model* m = NULL;
    int64_t n_features = 0, n_outputs = 0;
    clock_gettime(CLOCK_MONOTONIC, &a);
    if (qs_open(argv[1], &m) != QS_OK || qs_num_features(m, &n_features) != QS_OK ||
        qs_num_outputs(m, QS_RAW_SCORE, &n_outputs) != QS_OK) {
        fprintf(stderr, "%s\n", qs_last_error());
        return 1;
    }
    double* row = (double*)calloc((size_t)(n_features + n_outputs), sizeof(double));
    if (row == NULL || qs_predict_f64(m, row, 1, QS_RAW_SCORE, 1, row + n_features) != QS_OK) {
        fprintf(stderr, "%s\n", row == NULL ? "no memory" : qs_last_error());
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%.9f\n", (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec));
    free(row);
    qs_close(m);
    return 0;
}
