/* Score the rows of a CSV file with a prepared model file, through libquickscorer:
 *
 *   cc $(python -m quickscorer.capi --cflags) score.c -o score $(python -m quickscorer.capi --libs)
 *   quickscorer compile model.txt -o model.qsm
 *   ./score model.qsm < rows.csv > scores.txt
 *
 * Each line of the input is one row of the model's features, comma-separated (an empty field
 * or "nan" is a missing value); each line of the output, the row's scores, space-separated,
 * printed with 17 significant digits (exact for a float64). Rows are scored 1,024 at a time. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <quickscorer.h>

#define BATCH 1024

static int flush(qs_model* m, const double* rows, int64_t n, int64_t k, double* scores)
{
    if (qs_predict_f64(m, rows, n, 0, 1, scores) != QS_OK) {
        fprintf(stderr, "score: %s\n", qs_last_error());
        return 1;
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < k; j++)
            printf("%.17g%c", scores[i * k + j], j + 1 < k ? ' ' : '\n');
    return 0;
}

int main(int argc, char** argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s MODEL.qsm < rows.csv (libquickscorer %s)\n", argv[0],
                qs_version());
        return 2;
    }
    qs_model* m;
    if (qs_open(argv[1], &m) != QS_OK) {
        fprintf(stderr, "score: %s\n", qs_last_error());
        return 1;
    }
    int64_t f, k;
    qs_num_features(m, &f);
    qs_num_outputs(m, 0, &k);
    double* rows = malloc(sizeof(double) * (size_t)(BATCH * f));
    double* scores = malloc(sizeof(double) * (size_t)(BATCH * k));
    size_t cap = 1 << 16;
    char* line = malloc(cap);
    int64_t n = 0, line_no = 0;
    int status = rows == NULL || scores == NULL || line == NULL;
    while (!status && fgets(line, (int)cap, stdin) != NULL) {
        line_no++;
        char* p = line;
        for (int64_t j = 0; j < f; j++) {
            char* end;
            double v = strtod(p, &end);
            if (end == p) /* an empty field */
                v = NAN;
            rows[n * f + j] = v;
            p = end;
            if (j + 1 < f) {
                if (*p != ',') {
                    fprintf(stderr, "score: line %lld has fewer than %lld fields\n",
                            (long long)line_no, (long long)f);
                    status = 1;
                    break;
                }
                p++;
            }
        }
        if (!status && ++n == BATCH) {
            status = flush(m, rows, n, k, scores);
            n = 0;
        }
    }
    if (!status && n)
        status = flush(m, rows, n, k, scores);
    free(line);
    free(scores);
    free(rows);
    qs_close(m);
    return status;
}
