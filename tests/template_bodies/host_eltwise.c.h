/* What a render prints before forge/templates/kernels/host_eltwise.c, taken from real renders (the
 * shared pieces as #includes), so that the body compiles alone: 3 variants, chosen to
 * take the #if branches of the body (tests/python/test_template_bodies.py compiles it once per
 * variant, -DKF_CHECK_VARIANT=0..KF_CHECK_VARIANTS-1). */
#define KF_CHECK_VARIANTS 3
#if KF_CHECK_VARIANT == 0
/* Kernel Forge builtin template host_eltwise_unary for aten::silu; knobs: unroll=8 omp=1 chunk=1024 math=1 */
#include <math.h>
#include <stdint.h>

#define KF_UNROLL 8
#define KF_OMP 1
#define KF_CHUNK 1024
#define KF_MATH 1
#define KF_N 1055LL
/* inputs: self; outputs: out */

#include "host_math.h"
static inline float kf_f(float v)
{
    return v * kf_sigmoidf(v);
}

#define KF_F(i) (y[i] = kf_f(x[i]))
void kf_kernel(const float *restrict x, float *restrict y)
#elif KF_CHECK_VARIANT == 1
/* Kernel Forge builtin template host_eltwise_binary for aten::add.Tensor; knobs: unroll=4 omp=0 chunk=1024 */
#include <math.h>
#include <stdint.h>

#define KF_UNROLL 4
#define KF_OMP 0
#define KF_CHUNK 1024
#define KF_N 1517LL
/* inputs: self, other; outputs: out */
#define KF_ALPHA ((float)0.300000012)
#define KF_F(i) (y[i] = a[i] + KF_ALPHA * c[i])

void kf_kernel(const float *restrict a, const float *restrict c, float *restrict y)
#elif KF_CHECK_VARIANT == 2
/* Kernel Forge builtin template host_eltwise_binary for aten::add.Tensor; knobs: unroll=1 omp=2 chunk=16384 */
#include <math.h>
#include <stdint.h>

#define KF_UNROLL 1
#define KF_OMP 2
#define KF_CHUNK 16384
#define KF_N 1517LL
/* inputs: self, other; outputs: out */
#define KF_ALPHA ((float)0.300000012)
#define KF_F(i) (y[i] = a[i] + KF_ALPHA * c[i])

void kf_kernel(const float *restrict a, const float *restrict c, float *restrict y)
#endif
