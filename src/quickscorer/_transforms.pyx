# cython: language_level=3
"""Output transforms computed with libm, so they match LightGBM and XGBoost bit for bit.

NumPy's vectorised exp differs from libm by an ulp on some inputs; the loops (transforms.h,
which the C library runs too) call the C functions the libraries call, in the same order and
precision (docs/semantics.md). The
``numpy_*`` transforms are scikit-learn's, which calls NumPy: they call the same NumPy
functions, so they agree with it on every CPU (NumPy's exp has its own AVX-512 code).
"""
import numpy as np

from libc.math cimport logf
from libc.stdint cimport int64_t

TRANSFORM_CODES = {
    "identity": 0, "sigmoid": 1, "softmax": 2, "ova_sigmoid": 3, "exp": 4, "log1p_exp": 5,
    "signed_square": 6, "xgb_logistic": 7, "xgb_softmax": 8, "xgb_softmax_argmax": 9,
    "xgb_exp": 10, "onnx_logistic": 11, "onnx_softmax": 12, "onnx_probit": 13,
    "onnx_softmax_zero": 14, "numpy_exp": 15, "numpy_softmax": 16,
}


cdef extern from "quickscorer/transforms.h" nogil:
    void qs_transform_rows_f64(int code, double s, double divide_by, double* a, int64_t n,
                               int64_t m)
    void qs_transform_rows_f32(int code, float* a, int64_t n, int64_t m)


cdef void _lgb(int code, double s, double divide_by, double[:, ::1] a) noexcept nogil:
    if a.shape[0] and a.shape[1]:
        qs_transform_rows_f64(code, s, divide_by, &a[0, 0], a.shape[0], a.shape[1])


cdef void _xgb(int code, float[:, ::1] a) noexcept nogil:
    if a.shape[0] and a.shape[1]:
        qs_transform_rows_f32(code, &a[0, 0], a.shape[0], a.shape[1])


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
