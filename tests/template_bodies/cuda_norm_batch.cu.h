/* What a render prints before forge/templates/kernels/cuda_norm_batch.cu, taken from real renders (the
 * shared pieces as #includes), so that the body compiles alone: 4 variants, chosen to
 * take the #if branches of the body (tests/python/test_template_bodies.py compiles it once per
 * variant, -DKF_CHECK_VARIANT=0..KF_CHECK_VARIANTS-1). */
#define KF_CHECK_VARIANTS 4
#if KF_CHECK_VARIANT == 0
/* Kernel Forge builtin template cuda_batch_norm_eval for aten::native_batch_norm; knobs: threads=256 vec=8 per=8 table=2 form=0 */
#include "cuda_common.cuh"
#define KF_THREADS 256
#define KF_VEC 8
#define KF_PER 8
#define KF_TABLE 2
#define KF_FORM 0
/* effective knob values */
#undef KF_VEC
#define KF_VEC 1
#undef KF_TABLE
#define KF_TABLE 1 /* vectors of a thread start at different channels: table */
#define KF_BLOCK KF_THREADS
#define KF_TEAM 32
#define KF_REDUCE 0
/* the signature */
#define KF_TOTAL 15LL
#define KF_C 3
#define KF_HW 1LL
#define KF_CL 0
#define KF_EPS 1.0000000000000001e-05
#define KF_HAS_W 0
#define KF_HAS_B 0
#define KF_SAVE_MEAN 1
#define KF_SAVE_INVSTD 1
typedef float kf_x_t;
typedef float kf_w_t;
typedef float kf_b_t;
typedef float kf_rm_t;
typedef float kf_rv_t;
typedef float kf_y_t;
typedef float kf_sm_t;
typedef float kf_si_t;
#define KF_W (const float *)0
#define KF_B (const float *)0
#define KF_PARAMS const kf_x_t *__restrict__ x, const kf_rm_t *__restrict__ rm, const kf_rv_t *__restrict__ rv, kf_y_t *__restrict__ y, kf_sm_t *__restrict__ save_mean, kf_si_t *__restrict__ save_invstd

#include "cuda_norm_common.cuh"
#elif KF_CHECK_VARIANT == 1
/* Kernel Forge builtin template cuda_batch_norm_eval for aten::native_batch_norm; knobs: threads=128 vec=2 per=8 table=1 form=1 */
#include "cuda_common.cuh"
#define KF_THREADS 128
#define KF_VEC 2
#define KF_PER 8
#define KF_TABLE 1
#define KF_FORM 1
/* effective knob values */
#undef KF_VEC
#define KF_VEC 2
#undef KF_TABLE
#define KF_TABLE 1
#define KF_BLOCK KF_THREADS
#define KF_TEAM 32
#define KF_REDUCE 0
/* the signature */
#define KF_TOTAL 4608LL
#define KF_C 32
#define KF_HW 36LL
#define KF_CL 1
#define KF_EPS 1.0000000000000001e-05
#define KF_HAS_W 1
#define KF_HAS_B 1
#define KF_SAVE_MEAN 0
#define KF_SAVE_INVSTD 0
typedef __half kf_x_t;
typedef __half kf_w_t;
typedef __half kf_b_t;
typedef __half kf_rm_t;
typedef __half kf_rv_t;
typedef __half kf_y_t;
typedef float kf_sm_t;
typedef float kf_si_t;
#define KF_W w
#define KF_B b
#define KF_PARAMS const kf_x_t *__restrict__ x, const kf_w_t *__restrict__ w, const kf_b_t *__restrict__ b, const kf_rm_t *__restrict__ rm, const kf_rv_t *__restrict__ rv, kf_y_t *__restrict__ y, kf_sm_t *__restrict__ save_mean, kf_si_t *__restrict__ save_invstd

#include "cuda_norm_common.cuh"
#elif KF_CHECK_VARIANT == 2
/* Kernel Forge builtin template cuda_batch_norm_eval for aten::native_batch_norm; knobs: threads=512 vec=4 per=2 table=0 form=0 */
#include "cuda_common.cuh"
#define KF_THREADS 512
#define KF_VEC 4
#define KF_PER 2
#define KF_TABLE 0
#define KF_FORM 0
/* effective knob values */
#undef KF_VEC
#define KF_VEC 1
#undef KF_TABLE
#define KF_TABLE 0
#define KF_BLOCK KF_THREADS
#define KF_TEAM 32
#define KF_REDUCE 0
/* the signature */
#define KF_TOTAL 432LL
#define KF_C 24
#define KF_HW 9LL
#define KF_CL 0
#define KF_EPS 0.001
#define KF_HAS_W 0
#define KF_HAS_B 1
#define KF_SAVE_MEAN 0
#define KF_SAVE_INVSTD 0
typedef __nv_bfloat16 kf_x_t;
typedef float kf_w_t;
typedef __nv_bfloat16 kf_b_t;
typedef float kf_rm_t;
typedef float kf_rv_t;
typedef __nv_bfloat16 kf_y_t;
typedef float kf_sm_t;
typedef float kf_si_t;
#define KF_W (const float *)0
#define KF_B b
#define KF_PARAMS const kf_x_t *__restrict__ x, const kf_b_t *__restrict__ b, const kf_rm_t *__restrict__ rm, const kf_rv_t *__restrict__ rv, kf_y_t *__restrict__ y, kf_sm_t *__restrict__ save_mean, kf_si_t *__restrict__ save_invstd

#include "cuda_norm_common.cuh"
#elif KF_CHECK_VARIANT == 3
/* Kernel Forge builtin template cuda_batch_norm_eval for aten::native_batch_norm; knobs: threads=256 vec=8 per=4 table=2 form=0 */
#include "cuda_common.cuh"
#define KF_THREADS 256
#define KF_VEC 8
#define KF_PER 4
#define KF_TABLE 2
#define KF_FORM 0
/* effective knob values */
#undef KF_VEC
#define KF_VEC 8
#undef KF_TABLE
#define KF_TABLE 2
#define KF_BLOCK KF_THREADS
#define KF_TEAM 32
#define KF_REDUCE 0
/* the signature */
#define KF_TOTAL 131072LL
#define KF_C 64
#define KF_HW 256LL
#define KF_CL 1
#define KF_EPS 1.0000000000000001e-05
#define KF_HAS_W 1
#define KF_HAS_B 1
#define KF_SAVE_MEAN 0
#define KF_SAVE_INVSTD 0
typedef __half kf_x_t;
typedef __half kf_w_t;
typedef __half kf_b_t;
typedef __half kf_rm_t;
typedef __half kf_rv_t;
typedef __half kf_y_t;
typedef float kf_sm_t;
typedef float kf_si_t;
#define KF_W w
#define KF_B b
#define KF_PARAMS const kf_x_t *__restrict__ x, const kf_w_t *__restrict__ w, const kf_b_t *__restrict__ b, const kf_rm_t *__restrict__ rm, const kf_rv_t *__restrict__ rv, kf_y_t *__restrict__ y, kf_sm_t *__restrict__ save_mean, kf_si_t *__restrict__ save_invstd

#include "cuda_norm_common.cuh"
#endif
