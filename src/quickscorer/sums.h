/* The two sums that add a product, rounded as the source libraries' builds for this
 * architecture round them (docs/semantics.md, "On AArch64"): a LightGBM linear leaf's terms
 * (acc + coeff * x) and an XGBoost DART tree's weighted leaf (acc + leaf * weight, float32).
 * On x86-64 the libraries' wheels round the product, then the sum; on AArch64 their compilers
 * fuse the two into one fused multiply-add, rounded once. -ffp-contract=off keeps every other
 * sum of ours unfused everywhere, so these helpers are the only place a product is fused. */
#ifndef QS_SUMS_H
#define QS_SUMS_H

#include <math.h>

#if defined(__aarch64__) || defined(_M_ARM64)
#define QS_FUSED_SUMS 1
#else
#define QS_FUSED_SUMS 0
#endif

/* acc + coeff * x: one term of a linear leaf, float64 */
static inline double qs_linear_term(double acc, double coeff, double x)
{
#if QS_FUSED_SUMS
    return fma(coeff, x, acc);
#else
    return acc + coeff * x;
#endif
}

/* acc + leaf * weight: a DART tree's leaf added to a float32 score */
static inline float qs_weighted_add(float acc, float leaf, float weight)
{
#if QS_FUSED_SUMS
    return fmaf(leaf, weight, acc);
#else
    return acc + leaf * weight;
#endif
}

#endif
