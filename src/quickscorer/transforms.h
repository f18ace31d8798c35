/* The output transforms, computed with libm so that they match LightGBM, XGBoost and ONNX
 * Runtime bit for bit: the C functions those libraries call, in the same order and precision
 * (docs/semantics.md). One copy for the Python package (_transforms.pyx) and the C library
 * (capi/quickscorer.c). The numpy_* transforms (scikit-learn's, which calls NumPy) are not
 * here: NumPy's exp has SIMD code of its own, so only NumPy reproduces them. */
#ifndef QS_TRANSFORMS_H
#define QS_TRANSFORMS_H

#include <float.h>
#include <math.h>
#include <stdint.h>

/* the codes of quickscorer._transforms.TRANSFORM_CODES */
enum {
    QS_T_IDENTITY = 0,
    QS_T_SIGMOID = 1,
    QS_T_SOFTMAX = 2,
    QS_T_OVA_SIGMOID = 3,
    QS_T_EXP = 4,
    QS_T_LOG1P_EXP = 5,
    QS_T_SIGNED_SQUARE = 6,
    QS_T_XGB_LOGISTIC = 7,
    QS_T_XGB_SOFTMAX = 8,
    QS_T_XGB_SOFTMAX_ARGMAX = 9,
    QS_T_XGB_EXP = 10,
    QS_T_ONNX_LOGISTIC = 11,
    QS_T_ONNX_SOFTMAX = 12,
    QS_T_ONNX_PROBIT = 13,
    QS_T_ONNX_SOFTMAX_ZERO = 14,
    QS_T_NUMPY_EXP = 15,
    QS_T_NUMPY_SOFTMAX = 16,
    QS_T_COUNT = 17,
};

/* Whether code transforms float64 raw scores (LightGBM, plain), float32 ones (XGBoost, and
 * ONNX Runtime's, whose float64 sums it transforms in float32), in this header at all. */
static inline int qs_transform_f64(int code) { return code >= 0 && code <= 6; }
static inline int qs_transform_f32(int code) { return code >= 7 && code <= 14; }

/* ONNX Runtime's PROBIT of p in float32: sqrt(2) erfinv(2 p - 1), erfinv by Winitzki's
 * approximation (a = 0.147, pi rounded to float32), libm's logf and sqrtf. */
static inline float qs_onnx_probit(float p)
{
    float x = 2.0f * p - 1.0f;
    float sgn = x < 0 ? -1.0f : 1.0f;
    float a = 0.147f;
    x = (1.0f - x) * (1.0f + x);
    float lg = logf(x);
    float v = 2.0f / ((float)3.141592653589793 * a) + 0.5f * lg;
    float v2 = 1.0f / a * lg;
    return (float)1.4142135623730951 * (sgn * sqrtf(-v + sqrtf(v * v - v2)));
}

/* LightGBM's transforms (codes 0 to 6) of n rows of m float64 scores in place, each row first
 * divided by divide_by (average_output) where that is not 1; s: the sigmoid's scale. */
static inline void qs_transform_rows_f64(int code, double s, double divide_by, double* a,
                                         int64_t n, int64_t m)
{
    for (int64_t i = 0; i < n; i++) {
        double* r = a + i * m;
        int64_t k;
        if (divide_by != 1.0)
            for (k = 0; k < m; k++) r[k] = r[k] / divide_by;
        if (code == QS_T_SIGMOID || code == QS_T_OVA_SIGMOID) {
            for (k = 0; k < m; k++) r[k] = 1.0 / (1.0 + exp(-s * r[k]));
        } else if (code == QS_T_SOFTMAX) {
            double wmax = r[0], wsum = 0.0;
            for (k = 1; k < m; k++)
                if (r[k] > wmax) wmax = r[k];
            for (k = 0; k < m; k++) {
                r[k] = exp(r[k] - wmax);
                wsum += r[k];
            }
            for (k = 0; k < m; k++) r[k] = r[k] / wsum;
        } else if (code == QS_T_EXP) {
            for (k = 0; k < m; k++) r[k] = exp(r[k]);
        } else if (code == QS_T_LOG1P_EXP) {
            for (k = 0; k < m; k++) r[k] = log1p(exp(r[k]));
        } else if (code == QS_T_SIGNED_SQUARE) {
            for (k = 0; k < m; k++) {
                double x = r[k];
                double sign = (double)((x > 0.0) - (x < 0.0));
                r[k] = sign * x * x;
            }
        }
    }
}

/* XGBoost's and ONNX Runtime's float32 transforms (codes 7, 8, 10 to 14) of n rows of m
 * scores in place (code 9, the index of the largest margin, changes the shape: the caller's). */
static inline void qs_transform_rows_f32(int code, float* a, int64_t n, int64_t m)
{
    const float eps = 1e-16f, one = 1.0f;
    for (int64_t i = 0; i < n; i++) {
        float* r = a + i * m;
        int64_t k;
        if (code == QS_T_XGB_LOGISTIC) {
            for (k = 0; k < m; k++) {
                float x = -r[k];
                if ((double)x > 88.7) /* no float lies between 88.7f and 88.7 */
                    x = 88.7f;
                float denom = expf(x) + 1.0f + eps;
                r[k] = 1.0f / denom;
            }
        } else if (code == QS_T_XGB_SOFTMAX) {
            float wmax = r[0];
            double wsum = 0.0;
            for (k = 1; k < m; k++) wmax = fmaxf(r[k], wmax);
            for (k = 0; k < m; k++) {
                r[k] = expf(r[k] - wmax);
                wsum += r[k];
            }
            for (k = 0; k < m; k++) r[k] = r[k] / (float)wsum;
        } else if (code == QS_T_XGB_EXP) {
            for (k = 0; k < m; k++) r[k] = expf(r[k]);
        } else if (code == QS_T_ONNX_LOGISTIC) {
            for (k = 0; k < m; k++) {
                float x = r[k];
                float v = one / (one + expf(-fabsf(x)));
                r[k] = x < 0 ? one - v : v;
            }
        } else if (code == QS_T_ONNX_PROBIT) {
            for (k = 0; k < m; k++) r[k] = qs_onnx_probit(r[k]);
        } else if (code == QS_T_ONNX_SOFTMAX_ZERO) {
            /* a score within 1e-7 of 0 is not exponentiated but scaled by exp(-max), and
             * left out of the sum */
            float wmax = -FLT_MAX, fsum = 0.0f;
            for (k = 0; k < m; k++)
                if (r[k] > wmax) wmax = r[k];
            float v = expf(-wmax);
            for (k = 0; k < m; k++) {
                float x = r[k];
                if (x > 1e-7f || x < -1e-7f) {
                    r[k] = expf(x - wmax);
                    fsum = fsum + r[k];
                } else {
                    r[k] = x * v;
                }
            }
            for (k = 0; k < m; k++) r[k] = r[k] / fsum;
        } else if (code == QS_T_ONNX_SOFTMAX) {
            float wmax = -FLT_MAX, fsum = 0.0f;
            for (k = 0; k < m; k++)
                if (r[k] > wmax) wmax = r[k];
            for (k = 0; k < m; k++) {
                r[k] = expf(r[k] - wmax);
                fsum = fsum + r[k];
            }
            for (k = 0; k < m; k++) r[k] = r[k] / fsum;
        }
    }
}

#endif
