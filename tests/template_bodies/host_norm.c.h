/* What a render prints before forge/templates/kernels/host_norm.c, taken from real renders (the
 * shared pieces as #includes), so that the body compiles alone: 6 variants (4 and 5: strided
 * inputs), chosen to take the #if branches of the body (tests/python/test_template_bodies.py
 * compiles it once per variant, -DKF_CHECK_VARIANT=0..KF_CHECK_VARIANTS-1). */
#define KF_CHECK_VARIANTS 6
#if KF_CHECK_VARIANT == 0
/* Kernel Forge builtin template host_layer_norm for aten::native_layer_norm; knobs: variance=0 unroll=8 omp=2 */
#include <math.h>
#include <stdint.h>

#define KF_VARIANCE 0
#define KF_UNROLL 8
#define KF_OMP 2
#define KF_ROWS 2LL
#define KF_N 21LL
#define KF_EPS 9.9999999999999995e-07
#define KF_RPC 2
#define KF_HAS_W 0
#define KF_HAS_B 0
/* inputs: input; outputs: out, mean, rstd */
#define KF_PARAMS const float *restrict x, float *restrict y, float *restrict mean, float *restrict rstd
#define KF_W (const float *)0
#define KF_B (const float *)0
#elif KF_CHECK_VARIANT == 1
/* Kernel Forge builtin template host_layer_norm for aten::native_layer_norm; knobs: variance=1 unroll=1 omp=1 */
#include <math.h>
#include <stdint.h>

#define KF_VARIANCE 1
#define KF_UNROLL 1
#define KF_OMP 1
#define KF_ROWS 6LL
#define KF_N 37LL
#define KF_EPS 1.0000000000000001e-05
#define KF_RPC 6
#define KF_HAS_W 1
#define KF_HAS_B 1
/* inputs: input, weight, bias; outputs: out, mean, rstd */
#define KF_PARAMS const float *restrict x, const float *restrict w, const float *restrict b, float *restrict y, float *restrict mean, float *restrict rstd
#define KF_W w
#define KF_B b
#elif KF_CHECK_VARIANT == 2
/* Kernel Forge builtin template host_layer_norm for aten::native_layer_norm; knobs: variance=0 unroll=16 omp=3 */
#include <math.h>
#include <stdint.h>

#define KF_VARIANCE 0
#define KF_UNROLL 16
#define KF_OMP 3
#define KF_ROWS 2LL
#define KF_N 21LL
#define KF_EPS 9.9999999999999995e-07
#define KF_RPC 2
#define KF_HAS_W 0
#define KF_HAS_B 0
/* inputs: input; outputs: out, mean, rstd */
#define KF_PARAMS const float *restrict x, float *restrict y, float *restrict mean, float *restrict rstd
#define KF_W (const float *)0
#define KF_B (const float *)0
#elif KF_CHECK_VARIANT == 3
/* Kernel Forge builtin template host_layer_norm for aten::native_layer_norm; knobs: variance=0 unroll=4 omp=0 */
#include <math.h>
#include <stdint.h>

#define KF_VARIANCE 0
#define KF_UNROLL 4
#define KF_OMP 0
#define KF_ROWS 6LL
#define KF_N 37LL
#define KF_EPS 1.0000000000000001e-05
#define KF_RPC 6
#define KF_HAS_W 1
#define KF_HAS_B 1
/* inputs: input, weight, bias; outputs: out, mean, rstd */
#define KF_PARAMS const float *restrict x, const float *restrict w, const float *restrict b, float *restrict y, float *restrict mean, float *restrict rstd
#define KF_W w
#define KF_B b
#elif KF_CHECK_VARIANT == 4
/* Kernel Forge builtin template host_layer_norm for aten::native_layer_norm; knobs: variance=0 unroll=4 omp=2 */
#include <math.h>
#include <stdint.h>

#define KF_VARIANCE 0
#define KF_UNROLL 4
#define KF_OMP 2
#define KF_ROWS 74LL
#define KF_N 24LL
#define KF_EPS 1.0000000000000001e-05
#define KF_RPC 4
#define KF_HAS_W 1
#define KF_HAS_B 1
/* inputs: input, weight, bias; outputs: out, mean, rstd */
#define KF_PARAMS const float *restrict x, const float *restrict w, const float *restrict b, float *restrict y, float *restrict mean, float *restrict rstd
#define KF_W w
#define KF_B b
/* a strided input: rows at kf_xrow(r), elements at kf_xel(j) (gathered a tile of rows at a time) */
#define KF_STRIDED 1
#define KF_XDENSE 0
#define KF_TILE 16
static inline int64_t kf_xrow(int64_t i)
{
    int64_t o = 0;
    o += (i % 37LL) * 1LL;
    i /= 37LL;
    o += i * 888LL;
    return o;
}
static inline int64_t kf_xel(int64_t i)
{
    int64_t o = 0;
    o += i * 37LL;
    return o;
}
#elif KF_CHECK_VARIANT == 5
/* Kernel Forge builtin template host_layer_norm for aten::native_layer_norm; knobs: variance=2 unroll=1 omp=1 */
#include <math.h>
#include <stdint.h>

#define KF_VARIANCE 2
#define KF_UNROLL 1
#define KF_OMP 1
#define KF_ROWS 6LL
#define KF_N 48LL
#define KF_EPS 1.0000000000000001e-05
#define KF_RPC 6
#define KF_HAS_W 1
#define KF_HAS_B 0
/* inputs: input, weight; outputs: out, mean, rstd */
#define KF_PARAMS const float *restrict x, const float *restrict w, float *restrict y, float *restrict mean, float *restrict rstd
#define KF_W w
#define KF_B (const float *)0
/* a strided input: rows at kf_xrow(r), each row's elements adjacent (read in place) */
#define KF_STRIDED 1
#define KF_XDENSE 1
#define KF_TILE 16
static inline int64_t kf_xrow(int64_t i)
{
    int64_t o = 0;
    o += i * 0LL;
    return o;
}
#endif
