/* What a render prints before forge/templates/kernels/host_norm_batch_train.c, taken from real
 * renders, so that the body compiles alone: 3 variants, chosen to take the #if branches of the
 * body (tests/python/test_template_bodies.py compiles it once per variant,
 * -DKF_CHECK_VARIANT=0..KF_CHECK_VARIANTS-1). */
#define KF_CHECK_VARIANTS 3
#if KF_CHECK_VARIANT == 0
/* Kernel Forge builtin template host_batch_norm_train for aten::native_batch_norm; knobs: omp=1 */
#include <math.h>
#include <stdint.h>

#define KF_OMP 1
#define KF_N 2LL
#define KF_C 8LL
#define KF_HW 25LL
#define KF_CL 0
#define KF_CB 1LL /* channels last: channels per task */
#define KF_EPS 1.0000000000000001e-05
#define KF_MOMENTUM 0.10000000000000001
#define KF_HAS_W 1
#define KF_HAS_B 1
#define KF_RUNNING 1
/* inputs: input, weight, bias, running_mean, running_var (written); outputs: out, save_mean, save_invstd (the running statistics updated in place) */
#define KF_PARAMS const float *restrict x, const float *restrict w, const float *restrict b, float *restrict rm, float *restrict rv, float *restrict y, float *restrict save_mean, float *restrict save_invstd
#define KF_W w
#define KF_B b
#define KF_RM rm
#define KF_RV rv
#elif KF_CHECK_VARIANT == 1
/* Kernel Forge builtin template host_batch_norm_train for aten::native_batch_norm; knobs: omp=2 */
#include <math.h>
#include <stdint.h>

#define KF_OMP 2
#define KF_N 2LL
#define KF_C 8LL
#define KF_HW 25LL
#define KF_CL 1
#define KF_CB 8LL /* channels last: channels per task */
#define KF_EPS 1.0000000000000001e-05
#define KF_MOMENTUM 0.10000000000000001
#define KF_HAS_W 0
#define KF_HAS_B 0
#define KF_RUNNING 0
/* inputs: input; outputs: out, save_mean, save_invstd */
#define KF_PARAMS const float *restrict x, float *restrict y, float *restrict save_mean, float *restrict save_invstd
#define KF_W (const float *)0
#define KF_B (const float *)0
#define KF_RM (float *)0
#define KF_RV (float *)0
#elif KF_CHECK_VARIANT == 2
/* Kernel Forge builtin template host_batch_norm_train for aten::native_batch_norm; knobs: omp=0 */
#include <math.h>
#include <stdint.h>

#define KF_OMP 0
#define KF_N 2LL
#define KF_C 8LL
#define KF_HW 25LL
#define KF_CL 1
#define KF_CB 8LL /* channels last: channels per task */
#define KF_EPS 1.0000000000000001e-05
#define KF_MOMENTUM 0.10000000000000001
#define KF_HAS_W 1
#define KF_HAS_B 0
#define KF_RUNNING 1
/* inputs: input, weight, running_mean, running_var (written); outputs: out, save_mean, save_invstd (the running statistics updated in place) */
#define KF_PARAMS const float *restrict x, const float *restrict w, float *restrict rm, float *restrict rv, float *restrict y, float *restrict save_mean, float *restrict save_invstd
#define KF_W w
#define KF_B (const float *)0
#define KF_RM rm
#define KF_RV rv
#endif
