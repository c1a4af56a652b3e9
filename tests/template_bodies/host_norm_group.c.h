/* What a render prints before forge/templates/kernels/host_norm_group.c, taken from real renders, so that
 * the body compiles alone: 4 variants, chosen to take the #if branches of the body
 * (tests/python/test_template_bodies.py compiles it once per variant,
 * -DKF_CHECK_VARIANT=0..KF_CHECK_VARIANTS-1). */
#define KF_CHECK_VARIANTS 4
#if KF_CHECK_VARIANT == 0
/* Kernel Forge builtin template host_group_norm for aten::native_group_norm; knobs: variance=0 unroll=1 omp=0 */
#include <math.h>
#include <stdint.h>

#define KF_VARIANCE 0
#define KF_UNROLL 1
#define KF_OMP 0
#define KF_N 2LL
#define KF_C 8LL
#define KF_HW 25LL
#define KF_G 4LL
#define KF_D 2LL
#define KF_CL 0
#define KF_GB 1LL /* channels last: groups per task */
#define KF_EPS 1.0000000000000001e-05
#define KF_HAS_W 1
#define KF_HAS_B 1
/* inputs: input, weight, bias; outputs: out, mean, rstd */
#define KF_PARAMS const float *restrict x, const float *restrict w, const float *restrict b, float *restrict y, float *restrict mean, float *restrict rstd
#define KF_W w
#define KF_B b
#elif KF_CHECK_VARIANT == 1
/* Kernel Forge builtin template host_group_norm for aten::native_group_norm; knobs: variance=1 unroll=4 omp=1 */
#include <math.h>
#include <stdint.h>

#define KF_VARIANCE 1
#define KF_UNROLL 4
#define KF_OMP 1
#define KF_N 2LL
#define KF_C 6LL
#define KF_HW 30LL
#define KF_G 6LL
#define KF_D 1LL
#define KF_CL 1
#define KF_GB 6LL /* channels last: groups per task */
#define KF_EPS 0.001
#define KF_HAS_W 0
#define KF_HAS_B 1
/* inputs: input, bias; outputs: out, mean, rstd */
#define KF_PARAMS const float *restrict x, const float *restrict b, float *restrict y, float *restrict mean, float *restrict rstd
#define KF_W (const float *)0
#define KF_B b
#elif KF_CHECK_VARIANT == 2
/* Kernel Forge builtin template host_group_norm for aten::native_group_norm; knobs: variance=0 unroll=8 omp=2 */
#include <math.h>
#include <stdint.h>

#define KF_VARIANCE 0
#define KF_UNROLL 8
#define KF_OMP 2
#define KF_N 4LL
#define KF_C 6LL
#define KF_HW 1LL
#define KF_G 2LL
#define KF_D 3LL
#define KF_CL 0
#define KF_GB 1LL /* channels last: groups per task */
#define KF_EPS 1.0000000000000001e-05
#define KF_HAS_W 0
#define KF_HAS_B 0
/* inputs: input; outputs: out, mean, rstd */
#define KF_PARAMS const float *restrict x, float *restrict y, float *restrict mean, float *restrict rstd
#define KF_W (const float *)0
#define KF_B (const float *)0
#elif KF_CHECK_VARIANT == 3
/* Kernel Forge builtin template host_group_norm for aten::native_group_norm; knobs: variance=0 unroll=1 omp=2 */
#include <math.h>
#include <stdint.h>

#define KF_VARIANCE 0
#define KF_UNROLL 1
#define KF_OMP 2
#define KF_N 2LL
#define KF_C 8LL
#define KF_HW 25LL
#define KF_G 4LL
#define KF_D 2LL
#define KF_CL 1
#define KF_GB 4LL /* channels last: groups per task */
#define KF_EPS 1.0000000000000001e-05
#define KF_HAS_W 1
#define KF_HAS_B 0
/* inputs: input, weight; outputs: out, mean, rstd */
#define KF_PARAMS const float *restrict x, const float *restrict w, float *restrict y, float *restrict mean, float *restrict rstd
#define KF_W w
#define KF_B (const float *)0
#endif
