/* What a render prints before forge/templates/kernels/cuda_norm_group.cu, taken from real renders (the
 * shared pieces as #includes), so that the body compiles alone: 4 variants, chosen to
 * take the #if branches of the body (tests/python/test_template_bodies.py compiles it once per
 * variant, -DKF_CHECK_VARIANT=0..KF_CHECK_VARIANTS-1). */
#define KF_CHECK_VARIANTS 4
#if KF_CHECK_VARIANT == 0
/* Kernel Forge builtin template cuda_group_norm for aten::native_group_norm; knobs: tpg=32 gpb=8 split=1 vec=2 regs=0 stage=0 stats=1 reduce=1 */
#include "cuda_common.cuh"
#define KF_TPG 32
#define KF_GPB 8
#define KF_SPLIT 1
#define KF_VEC 2
#define KF_REGS 0
#define KF_STAGE 0
#define KF_STATS 1
#define KF_REDUCE 1
/* effective knob values */
#undef KF_TPG
#define KF_TPG 32
#undef KF_GPB
#define KF_GPB 8
#undef KF_SPLIT
#define KF_SPLIT 1
#undef KF_VEC
#define KF_VEC 1
#undef KF_REGS
#define KF_REGS 0
#undef KF_STATS
#define KF_STATS 1
#undef KF_REDUCE
#define KF_REDUCE 1
#define KF_STAGED 0 /* vectors of a team's share kept in shared memory */
#define KF_ABTAB 0
#define KF_TEAM KF_TPG
#define KF_BLOCK (KF_TPG * KF_GPB)
/* the signature */
#define KF_N 4LL
#define KF_C 16
#define KF_HW 10LL
#define KF_G 16
#define KF_CL 0
#define KF_EPS 0.001
#define KF_HAS_W 1
#define KF_HAS_B 0
typedef float kf_x_t;
typedef float kf_w_t;
typedef float kf_b_t;
typedef float kf_y_t;
typedef float kf_m_t;
typedef float kf_r_t;
#define KF_PARAMS const kf_x_t *__restrict__ x, const kf_w_t *__restrict__ w, kf_y_t *__restrict__ y, kf_m_t *__restrict__ mean_out, kf_r_t *__restrict__ rstd_out

#include "cuda_norm_common.cuh"
#elif KF_CHECK_VARIANT == 1
/* Kernel Forge builtin template cuda_group_norm for aten::native_group_norm; knobs: tpg=64 gpb=8 split=2 vec=4 regs=1 stage=96 stats=2 reduce=0 */
#include "cuda_common.cuh"
#define KF_TPG 64
#define KF_GPB 8
#define KF_SPLIT 2
#define KF_VEC 4
#define KF_REGS 1
#define KF_STAGE 96
#define KF_STATS 2
#define KF_REDUCE 0
/* effective knob values */
#undef KF_TPG
#define KF_TPG 64
#undef KF_GPB
#define KF_GPB 1
#undef KF_SPLIT
#define KF_SPLIT 2
#undef KF_VEC
#define KF_VEC 4
#undef KF_REGS
#define KF_REGS 0 /* too many vectors per thread for registers */
#undef KF_STATS
#define KF_STATS 2
#undef KF_REDUCE
#define KF_REDUCE 0
#define KF_STAGED 4096 /* vectors of a team's share kept in shared memory */
#define KF_ABTAB 0
#define KF_TEAM KF_TPG
#define KF_BLOCK (KF_TPG * KF_GPB)
/* the signature */
#define KF_N 1LL
#define KF_C 32
#define KF_HW 4096LL
#define KF_G 4
#define KF_CL 0
#define KF_EPS 1.0000000000000001e-05
#define KF_HAS_W 0
#define KF_HAS_B 1
typedef __nv_bfloat16 kf_x_t;
typedef float kf_w_t;
typedef __nv_bfloat16 kf_b_t;
typedef __nv_bfloat16 kf_y_t;
typedef __nv_bfloat16 kf_m_t;
typedef __nv_bfloat16 kf_r_t;
#define KF_PARAMS const kf_x_t *__restrict__ x, const kf_b_t *__restrict__ b, kf_y_t *__restrict__ y, kf_m_t *__restrict__ mean_out, kf_r_t *__restrict__ rstd_out

#include "cuda_norm_common.cuh"
#include "cuda_cluster.cuh"
#elif KF_CHECK_VARIANT == 2
/* Kernel Forge builtin template cuda_group_norm for aten::native_group_norm; knobs: tpg=32 gpb=1 split=4 vec=8 regs=0 stage=96 stats=0 reduce=1 */
#include "cuda_common.cuh"
#define KF_TPG 32
#define KF_GPB 1
#define KF_SPLIT 4
#define KF_VEC 8
#define KF_REGS 0
#define KF_STAGE 96
#define KF_STATS 0
#define KF_REDUCE 1
/* effective knob values */
#undef KF_TPG
#define KF_TPG 32
#undef KF_GPB
#define KF_GPB 1
#undef KF_SPLIT
#define KF_SPLIT 4
#undef KF_VEC
#define KF_VEC 8
#undef KF_REGS
#define KF_REGS 0
#undef KF_STATS
#define KF_STATS 0
#undef KF_REDUCE
#define KF_REDUCE 1
#define KF_STAGED 9 /* vectors of a team's share kept in shared memory */
#define KF_ABTAB 1
#define KF_TEAM KF_TPG
#define KF_BLOCK (KF_TPG * KF_GPB)
/* the signature */
#define KF_N 3LL
#define KF_C 48
#define KF_HW 36LL
#define KF_G 6
#define KF_CL 1
#define KF_EPS 1.0000000000000001e-05
#define KF_HAS_W 1
#define KF_HAS_B 1
typedef __half kf_x_t;
typedef __half kf_w_t;
typedef __half kf_b_t;
typedef __half kf_y_t;
typedef __half kf_m_t;
typedef __half kf_r_t;
#define KF_PARAMS const kf_x_t *__restrict__ x, const kf_w_t *__restrict__ w, const kf_b_t *__restrict__ b, kf_y_t *__restrict__ y, kf_m_t *__restrict__ mean_out, kf_r_t *__restrict__ rstd_out

#include "cuda_norm_common.cuh"
#include "cuda_cluster.cuh"
#elif KF_CHECK_VARIANT == 3
/* Kernel Forge builtin template cuda_group_norm for aten::native_group_norm; knobs: tpg=32 gpb=2 split=8 vec=2 regs=0 stage=64 stats=2 reduce=0 */
#include "cuda_common.cuh"
#define KF_TPG 32
#define KF_GPB 2
#define KF_SPLIT 8
#define KF_VEC 2
#define KF_REGS 0
#define KF_STAGE 64
#define KF_STATS 2
#define KF_REDUCE 0
/* effective knob values */
#undef KF_TPG
#define KF_TPG 32
#undef KF_GPB
#define KF_GPB 1
#undef KF_SPLIT
#define KF_SPLIT 8
#undef KF_VEC
#define KF_VEC 2
#undef KF_REGS
#define KF_REGS 0
#undef KF_STATS
#define KF_STATS 2
#undef KF_REDUCE
#define KF_REDUCE 0
#define KF_STAGED 4 /* vectors of a team's share kept in shared memory */
#define KF_ABTAB 0
#define KF_TEAM KF_TPG
#define KF_BLOCK (KF_TPG * KF_GPB)
/* the signature */
#define KF_N 2LL
#define KF_C 64
#define KF_HW 25LL
#define KF_G 32
#define KF_CL 1
#define KF_EPS 1.0000000000000001e-05
#define KF_HAS_W 0
#define KF_HAS_B 0
typedef __nv_bfloat16 kf_x_t;
typedef float kf_w_t;
typedef float kf_b_t;
typedef __nv_bfloat16 kf_y_t;
typedef __nv_bfloat16 kf_m_t;
typedef __nv_bfloat16 kf_r_t;
#define KF_PARAMS const kf_x_t *__restrict__ x, kf_y_t *__restrict__ y, kf_m_t *__restrict__ mean_out, kf_r_t *__restrict__ rstd_out

#include "cuda_norm_common.cuh"
#include "cuda_cluster.cuh"
#endif
