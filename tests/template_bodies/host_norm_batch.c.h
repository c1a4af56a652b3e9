/* What a render prints before forge/templates/kernels/host_norm_batch.c, taken from real renders, so that
 * the body compiles alone: 3 variants, chosen to take the #if branches of the body
 * (tests/python/test_template_bodies.py compiles it once per variant,
 * -DKF_CHECK_VARIANT=0..KF_CHECK_VARIANTS-1). */
#define KF_CHECK_VARIANTS 3
#if KF_CHECK_VARIANT == 0
/* Kernel Forge builtin template host_batch_norm_eval for aten::native_batch_norm; knobs: omp=0 */
#include <math.h>
#include <stdint.h>

#define KF_OMP 0
#define KF_N 2LL
#define KF_C 8LL
#define KF_HW 25LL
#define KF_CL 0
#define KF_EPS 1.0000000000000001e-05
#define KF_IPC 327
#define KF_HAS_W 1
#define KF_HAS_B 1
/* inputs: input, weight, bias, running_mean, running_var; outputs: out, save_mean, save_invstd (empty) */
#define KF_PARAMS const float *restrict x, const float *restrict w, const float *restrict b, const float *restrict rm, const float *restrict rv, float *restrict y, float *restrict save_mean, float *restrict save_invstd
#define KF_W w
#define KF_B b
#elif KF_CHECK_VARIANT == 1
/* Kernel Forge builtin template host_batch_norm_eval for aten::_native_batch_norm_legit_no_training; knobs: omp=2 */
#include <math.h>
#include <stdint.h>

#define KF_OMP 2
#define KF_N 2LL
#define KF_C 6LL
#define KF_HW 30LL
#define KF_CL 1
#define KF_EPS 0.001
#define KF_IPC 1365
#define KF_HAS_W 0
#define KF_HAS_B 0
/* inputs: input, running_mean, running_var; outputs: out, save_mean, save_invstd (empty) */
#define KF_PARAMS const float *restrict x, const float *restrict rm, const float *restrict rv, float *restrict y, float *restrict save_mean, float *restrict save_invstd
#define KF_W (const float *)0
#define KF_B (const float *)0
#elif KF_CHECK_VARIANT == 2
/* Kernel Forge builtin template host_batch_norm_eval for aten::native_batch_norm; knobs: omp=1 */
#include <math.h>
#include <stdint.h>

#define KF_OMP 1
#define KF_N 2LL
#define KF_C 8LL
#define KF_HW 25LL
#define KF_CL 1
#define KF_EPS 1.0000000000000001e-05
#define KF_IPC 1024
#define KF_HAS_W 1
#define KF_HAS_B 0
/* inputs: input, weight, running_mean, running_var; outputs: out, save_mean, save_invstd (empty) */
#define KF_PARAMS const float *restrict x, const float *restrict w, const float *restrict rm, const float *restrict rv, float *restrict y, float *restrict save_mean, float *restrict save_invstd
#define KF_W w
#define KF_B (const float *)0
#endif
