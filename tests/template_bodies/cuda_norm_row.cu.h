/* What a render prints before forge/templates/kernels/cuda_norm_row.cu, taken from real renders (the
 * shared pieces as #includes), so that the body compiles alone: 3 variants, chosen to
 * take the #if branches of the body (tests/python/test_template_bodies.py compiles it once per
 * variant, -DKF_CHECK_VARIANT=0..KF_CHECK_VARIANTS-1). */
#define KF_CHECK_VARIANTS 3
#if KF_CHECK_VARIANT == 0
/* Kernel Forge builtin template cuda_rms_norm for aten::_fused_rms_norm; knobs: tpr=8 rpb=2 vec=4 cache=1 reduce=1 */
#include "cuda_common.cuh"
#define KF_TPR 8
#define KF_RPB 2
#define KF_VEC 4
#define KF_CACHE 1
#define KF_REDUCE 1
/* effective knob values */
#undef KF_TPR
#define KF_TPR 8
#undef KF_RPB
#define KF_RPB 8
#undef KF_VEC
#define KF_VEC 4
#undef KF_CACHE
#define KF_CACHE 0 /* a row is too long for registers: re-read */
#undef KF_STATS
#define KF_STATS 0
#undef KF_REDUCE
#define KF_REDUCE 1
#define KF_TEAM KF_TPR
#define KF_BLOCK (KF_TPR * KF_RPB)
/* the signature */
#define KF_M 7LL /* rows */
#define KF_NORM 1000 /* elements per row */
#define KF_EPS 1.1920928955078125e-07
#define KF_RMS 1
#define KF_HAS_W 0
#define KF_HAS_B 0
typedef float kf_x_t;
typedef float kf_w_t;
typedef float kf_b_t;
typedef float kf_y_t;
typedef float kf_m_t;
typedef float kf_r_t;
#define KF_PARAMS const kf_x_t *__restrict__ x, kf_y_t *__restrict__ y, kf_r_t *__restrict__ rstd_out

#include "cuda_norm_common.cuh"

#define KF_XROW(r) ((r) * KF_NORM)
#define KF_YROW(r) ((r) * KF_NORM)
#elif KF_CHECK_VARIANT == 1
/* Kernel Forge builtin template cuda_layer_norm for aten::native_layer_norm; knobs: tpr=8 rpb=8 vec=1 cache=2 stats=1 reduce=0 */
#include "cuda_common.cuh"
#define KF_TPR 8
#define KF_RPB 8
#define KF_VEC 1
#define KF_CACHE 2
#define KF_STATS 1
#define KF_REDUCE 0
/* effective knob values */
#undef KF_TPR
#define KF_TPR 8
#undef KF_RPB
#define KF_RPB 32
#undef KF_VEC
#define KF_VEC 1
#undef KF_CACHE
#define KF_CACHE 0 /* rows too long for shared memory: re-read */
#undef KF_STATS
#define KF_STATS 1
#undef KF_REDUCE
#define KF_REDUCE 0
#define KF_TEAM KF_TPR
#define KF_BLOCK (KF_TPR * KF_RPB)
/* the signature */
#define KF_M 8LL /* rows */
#define KF_NORM 4096 /* elements per row */
#define KF_EPS 1.0000000000000001e-05
#define KF_RMS 0
#define KF_HAS_W 1
#define KF_HAS_B 1
typedef __nv_bfloat16 kf_x_t;
typedef __nv_bfloat16 kf_w_t;
typedef __nv_bfloat16 kf_b_t;
typedef __nv_bfloat16 kf_y_t;
typedef float kf_m_t;
typedef float kf_r_t;
#define KF_PARAMS const kf_x_t *__restrict__ x, const kf_w_t *__restrict__ w, const kf_b_t *__restrict__ b, kf_y_t *__restrict__ y, kf_m_t *__restrict__ mean_out, kf_r_t *__restrict__ rstd_out

#include "cuda_norm_common.cuh"

#define KF_XROW(r) ((r) * KF_NORM)
#define KF_YROW(r) ((r) * KF_NORM)
#elif KF_CHECK_VARIANT == 2
/* Kernel Forge builtin template cuda_layer_norm for aten::native_layer_norm; knobs: tpr=8 rpb=1 vec=2 cache=0 stats=2 reduce=0 */
#include "cuda_common.cuh"
#define KF_TPR 8
#define KF_RPB 1
#define KF_VEC 2
#define KF_CACHE 0
#define KF_STATS 2
#define KF_REDUCE 0
/* effective knob values */
#undef KF_TPR
#define KF_TPR 8
#undef KF_RPB
#define KF_RPB 4
#undef KF_VEC
#define KF_VEC 2
#undef KF_CACHE
#define KF_CACHE 0
#undef KF_STATS
#define KF_STATS 2
#undef KF_REDUCE
#define KF_REDUCE 0
#define KF_TEAM KF_TPR
#define KF_BLOCK (KF_TPR * KF_RPB)
/* the signature */
#define KF_M 3LL /* rows */
#define KF_NORM 448 /* elements per row */
#define KF_EPS 9.9999999999999995e-07
#define KF_RMS 0
#define KF_HAS_W 0
#define KF_HAS_B 0
typedef __half kf_x_t;
typedef float kf_w_t;
typedef float kf_b_t;
typedef __half kf_y_t;
typedef float kf_m_t;
typedef float kf_r_t;
#define KF_PARAMS const kf_x_t *__restrict__ x, kf_y_t *__restrict__ y, kf_m_t *__restrict__ mean_out, kf_r_t *__restrict__ rstd_out

#include "cuda_norm_common.cuh"

#define KF_XROW(r) ((r) * KF_NORM)
#define KF_YROW(r) ((r) * KF_NORM)
#endif
