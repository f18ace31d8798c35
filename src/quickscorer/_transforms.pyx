# cython: language_level=3
"""Output transforms computed with libm, so they match LightGBM and XGBoost bit for bit.

NumPy's vectorised exp differs from libm by an ulp on some inputs; these loops call the C
functions the libraries call, in the same order and precision (docs/semantics.md). The
``numpy_*`` transforms are scikit-learn's, which calls NumPy: they call the same NumPy
functions, so they agree with it on every CPU (NumPy's exp has its own AVX-512 code).
"""
import numpy as np

from libc.float cimport FLT_MAX
from libc.math cimport exp, expf, fabsf, log1p, fmaxf, logf, sqrtf

TRANSFORM_CODES = {
    "identity": 0, "sigmoid": 1, "softmax": 2, "ova_sigmoid": 3, "exp": 4, "log1p_exp": 5,
    "signed_square": 6, "xgb_logistic": 7, "xgb_softmax": 8, "xgb_softmax_argmax": 9,
    "xgb_exp": 10, "onnx_logistic": 11, "onnx_softmax": 12, "onnx_probit": 13,
    "onnx_softmax_zero": 14, "numpy_exp": 15, "numpy_softmax": 16,
}


cdef inline float _onnx_probit(float p) noexcept nogil:
    """ONNX Runtime's PROBIT of p in float32: sqrt(2) erfinv(2 p - 1), erfinv by Winitzki's
    approximation (a = 0.147, pi rounded to float32), libm's logf and sqrtf."""
    cdef float x = <float>2.0 * p - <float>1.0
    cdef float sgn = <float>-1.0 if x < 0 else <float>1.0
    cdef float a = <float>0.147
    cdef float lg, v, v2
    x = (<float>1.0 - x) * (<float>1.0 + x)
    lg = logf(x)
    v = <float>2.0 / (<float>3.141592653589793 * a) + <float>0.5 * lg
    v2 = <float>1.0 / a * lg
    return <float>1.4142135623730951 * (sgn * sqrtf(-v + sqrtf(v * v - v2)))


cdef void _lgb(int code, double s, double divide_by, double[:, ::1] a) noexcept nogil:
    cdef Py_ssize_t i, k, n = a.shape[0], m = a.shape[1]
    cdef double x, wmax, wsum, sign
    for i in range(n):
        if divide_by != 1.0:
            for k in range(m):
                a[i, k] = a[i, k] / divide_by
        if code == 1 or code == 3:
            for k in range(m):
                a[i, k] = 1.0 / (1.0 + exp(-s * a[i, k]))
        elif code == 2:
            wmax = a[i, 0]
            for k in range(1, m):
                if a[i, k] > wmax:
                    wmax = a[i, k]
            wsum = 0.0
            for k in range(m):
                a[i, k] = exp(a[i, k] - wmax)
                wsum += a[i, k]
            for k in range(m):
                a[i, k] = a[i, k] / wsum
        elif code == 4:
            for k in range(m):
                a[i, k] = exp(a[i, k])
        elif code == 5:
            for k in range(m):
                a[i, k] = log1p(exp(a[i, k]))
        elif code == 6:
            for k in range(m):
                x = a[i, k]
                sign = <double>((x > 0.0) - (x < 0.0))
                a[i, k] = sign * x * x


cdef void _xgb(int code, float[:, ::1] a) noexcept nogil:
    cdef Py_ssize_t i, k, n = a.shape[0], m = a.shape[1]
    cdef float x, wmax, denom, fsum, v
    cdef double wsum
    cdef float eps = 1e-16
    cdef float one = 1.0
    for i in range(n):
        if code == 7:
            for k in range(m):
                x = -a[i, k]
                if x > 88.7:
                    x = 88.7
                denom = expf(x) + <float>1.0 + eps
                a[i, k] = <float>1.0 / denom
        elif code == 8:
            wmax = a[i, 0]
            for k in range(1, m):
                wmax = fmaxf(a[i, k], wmax)
            wsum = 0.0
            for k in range(m):
                a[i, k] = expf(a[i, k] - wmax)
                wsum += a[i, k]
            for k in range(m):
                a[i, k] = a[i, k] / <float>wsum
        elif code == 10:
            for k in range(m):
                a[i, k] = expf(a[i, k])
        elif code == 11:    # ONNX Runtime's logistic, in float32
            for k in range(m):
                x = a[i, k]
                v = one / (one + expf(-fabsf(x)))
                a[i, k] = one - v if x < 0 else v
        elif code == 13:
            for k in range(m):
                a[i, k] = _onnx_probit(a[i, k])
        elif code == 14:    # ONNX Runtime's SOFTMAX_ZERO: a score within 1e-7 of 0 is not
            wmax = -FLT_MAX  # exponentiated but scaled by exp(-max), and left out of the sum
            for k in range(m):
                if a[i, k] > wmax:
                    wmax = a[i, k]
            v = expf(-wmax)
            fsum = 0.0
            for k in range(m):
                x = a[i, k]
                if x > <float>1e-7 or x < <float>-1e-7:
                    a[i, k] = expf(x - wmax)
                    fsum = fsum + a[i, k]
                else:
                    a[i, k] = x * v
            for k in range(m):
                a[i, k] = a[i, k] / fsum
        elif code == 12:    # ONNX Runtime's softmax: float32 maximum, exponents and sum
            wmax = -FLT_MAX
            for k in range(m):
                if a[i, k] > wmax:
                    wmax = a[i, k]
            fsum = 0.0
            for k in range(m):
                a[i, k] = expf(a[i, k] - wmax)
                fsum = fsum + a[i, k]
            for k in range(m):
                a[i, k] = a[i, k] / fsum


def apply_transform(str name, dict params, raw, double divide_by=1.0):
    """Transformed copy of the raw score array ``raw`` (2-D: rows x outputs).

    ``divide_by`` is LightGBM's ``average_output`` division (number of iterations), applied
    before the transform. Returns a new array; ``xgb_softmax_argmax`` returns the class index
    of the largest softmax output as float32, one per row.
    """
    cdef int code = TRANSFORM_CODES[name]
    out = np.array(raw, copy=True, order="C")
    if name in ("numpy_exp", "numpy_softmax"):
        return _numpy_transform(name, out, divide_by)
    cdef double[:, ::1] a64
    cdef float[:, ::1] a32
    if out.dtype == np.float32:
        if code not in (0, 7, 8, 9, 10, 11, 12, 13, 14):
            raise ValueError(f"transform {name!r} expects float64 raw scores (a LightGBM model)")
        if code == 9:  # XGBoost's multi:softmax: first index of the largest raw margin
            return np.argmax(out, axis=1).astype(np.float32)[:, None]
        a32 = out
        with nogil:
            _xgb(code, a32)
        return out
    if 11 <= code <= 14:
        # ONNX Runtime's transforms of a model of double thresholds: its float64 sums are
        # returned as float32 and transformed in float32, as those of float models
        out32 = out.astype(np.float32)
        a32 = out32
        with nogil:
            _xgb(code, a32)
        return out32.astype(np.float64)
    if code >= 7:
        raise ValueError(f"transform {name!r} expects float32 raw scores (an XGBoost model)")
    a64 = out
    cdef double s = float(params.get("sigmoid", 1.0))
    with nogil:
        _lgb(code, s, divide_by, a64)
    return out


def _numpy_transform(str name, out, double divide_by):
    """scikit-learn's inverse links on ``out`` in place: ``LogLink``'s ``np.exp`` and
    ``MultinomialLogit``'s softmax (``sklearn.utils.extmath.softmax``: the row's maximum
    subtracted, ``np.exp``, then divided by the row's ``np.sum``), in those NumPy calls."""
    if out.dtype != np.float64:
        raise ValueError("the numpy_* transforms expect float64 raw scores")
    if divide_by != 1.0:
        out /= divide_by
    if name == "numpy_exp":
        np.exp(out, out=out)
        return out
    out -= np.max(out, axis=1).reshape(-1, 1)
    np.exp(out, out=out)
    out /= np.sum(out, axis=1).reshape(-1, 1)
    return out


def xgb_prob_to_margin(str kind, double base_score):
    """XGBoost's ``ProbToMargin`` of a stored ``base_score``, in float32 with libm.

    ``kind`` is ``"logit"`` (``-logf(1/x - 1)``), ``"log"`` (``logf(x)``) or ``"identity"``.
    Returns the margin as a Python float holding a float32 value.
    """
    cdef float x = <float>base_score
    cdef float one = 1.0
    if kind == "logit":
        return -logf(one / x - one)
    if kind == "log":
        return logf(x)
    if kind == "identity":
        return x
    raise ValueError(f"unknown margin kind {kind!r}")
