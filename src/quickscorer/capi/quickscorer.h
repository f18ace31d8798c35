/* libquickscorer: score a prepared model file (.qsm) from C, C++, Go, Rust or a JVM, with no
 * Python at run time (docs/c-api.md).
 *
 *   qs_model* m;
 *   if (qs_open("model.qsm", &m) != QS_OK) { fprintf(stderr, "%s\n", qs_last_error()); ... }
 *   int64_t k;
 *   qs_num_outputs(m, 0, &k);
 *   qs_predict(m, rows, n_rows, 0, 1, scores);   // rows: n_rows x qs_num_features, row-major
 *   qs_close(m);
 *
 * Every call returns a status (QS_OK or a QS_E_ code) and never aborts; the message of the
 * calling thread's last failure is qs_last_error(). A model is read-only once open: any number
 * of threads may score through one handle at once. The scores are those of quickscorer's
 * Python predict on the same rows, bit for bit. */
#ifndef QUICKSCORER_H
#define QUICKSCORER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define QS_API __declspec(dllexport)
#elif defined(__GNUC__)
#define QS_API __attribute__((visibility("default")))
#else
#define QS_API
#endif

/* the version of this header's functions; a library of another major ABI refuses nothing but
 * may lack a function */
#define QS_ABI_VERSION 1

enum {
    QS_OK = 0,
    QS_E_ARGUMENT = 1,    /* a NULL pointer, a negative count, an unknown flag */
    QS_E_IO = 2,          /* the file could not be opened, read or mapped */
    QS_E_FORMAT = 3,      /* not a sound model file: the message names the section at fault */
    QS_E_MEMORY = 4,      /* an allocation failed */
    QS_E_UNSUPPORTED = 5, /* a model or request this library does not score (the message
                             says which and why) */
    QS_E_THREAD = 6,      /* a worker thread could not be started */
};

/* qs_predict's flags */
#define QS_RAW_SCORE 1 /* margins: no output transform, no averaging */

typedef struct qs_model qs_model;

/* quickscorer's version, as Python's quickscorer.__version__ */
QS_API const char* qs_version(void);

/* the message of the calling thread's last failed call ("" when none failed) */
QS_API const char* qs_last_error(void);

/* Map the prepared model file at path read-only and check every section it is scored from
 * (bounds, checksums, every index of the trees) before anything reads it. Processes that
 * open one file share its pages. Replace a deployed file by renaming a new one over it:
 * a handle keeps the file it opened. */
QS_API int qs_open(const char* path, qs_model** out);

/* The same from size bytes at data, which are copied (the buffer may be freed after). */
QS_API int qs_open_memory(const void* data, size_t size, qs_model** out);

/* Release the model (NULL is allowed); no call may be using it. */
QS_API int qs_close(qs_model* model);

/* columns of an input row */
QS_API int qs_num_features(const qs_model* model, int64_t* out);

/* values per row that qs_predict writes with these flags: the model's outputs, or 1 for an
 * XGBoost multi:softmax model's class index when QS_RAW_SCORE is not set */
QS_API int qs_num_outputs(const qs_model* model, int flags, int64_t* out);

/* trees: the values per row of qs_predict_leaf */
QS_API int qs_num_trees(const qs_model* model, int64_t* out);

/* Score n_rows rows of qs_num_features float32 values (row-major; NaN is a missing value)
 * into out, qs_num_outputs values a row, on n_threads threads (0 or less: every core). */
QS_API int qs_predict(const qs_model* model, const float* rows, int64_t n_rows, int flags,
                      int n_threads, double* out);

/* The same for float64 rows. */
QS_API int qs_predict_f64(const qs_model* model, const double* rows, int64_t n_rows, int flags,
                          int n_threads, double* out);

/* Each tree's exit leaf (its in-order index within the tree) for every row: qs_num_trees
 * values a row. */
QS_API int qs_predict_leaf(const qs_model* model, const float* rows, int64_t n_rows,
                           int n_threads, int32_t* out);

#ifdef __cplusplus
}
#endif

#endif
