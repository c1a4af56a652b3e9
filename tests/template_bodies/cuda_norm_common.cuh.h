/* What a render prints before forge/templates/kernels/cuda_norm_common.cuh, taken from real renders (the
 * shared pieces as #includes), so that the body compiles alone: 4 variants, chosen to
 * take the #if branches of the body (tests/python/test_template_bodies.py compiles it once per
 * variant, -DKF_CHECK_VARIANT=0..KF_CHECK_VARIANTS-1). */
#define KF_CHECK_VARIANTS 4
#if KF_CHECK_VARIANT == 0
/* Kernel Forge builtin template cuda_rms_norm for aten::_fused_rms_norm; knobs: tpr=8 rpb=1 vec=8 cache=2 reduce=0 */
#include "cuda_common.cuh"
#define KF_TPR 8
#define KF_RPB 1
#define KF_VEC 8
#define KF_CACHE 2
#define KF_REDUCE 0
/* effective knob values */
#undef KF_TPR
#define KF_TPR 8
#undef KF_RPB
#define KF_RPB 4
#undef KF_VEC
#define KF_VEC 8
#undef KF_CACHE
#define KF_CACHE 2
#undef KF_STATS
#define KF_STATS 0
#undef KF_REDUCE
#define KF_REDUCE 0
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
#elif KF_CHECK_VARIANT == 1
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
#elif KF_CHECK_VARIANT == 2
/* Kernel Forge builtin template cuda_batch_norm_eval for aten::native_batch_norm; knobs: threads=128 vec=8 per=1 table=1 form=1 */
#include "cuda_common.cuh"
#define KF_THREADS 128
#define KF_VEC 8
#define KF_PER 1
#define KF_TABLE 1
#define KF_FORM 1
/* effective knob values */
#undef KF_VEC
#define KF_VEC 1
#undef KF_TABLE
#define KF_TABLE 1
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
#elif KF_CHECK_VARIANT == 3
/* Kernel Forge builtin template cuda_rms_norm_cols for aten::_fused_rms_norm; knobs: threads=64 rows=32 vec=1 unroll=1 tile=16 */
#include "cuda_common.cuh"
#define KF_THREADS 64
#define KF_ROWS 32
#define KF_VEC 1
#define KF_UNROLL 1
#define KF_TILE 16
/* effective knob values: every combination renders a kernel that is right for this signature */
#undef KF_THREADS
#define KF_THREADS 64
#undef KF_ROWS
#define KF_ROWS 32
#undef KF_VEC
#define KF_VEC 1
#undef KF_TILE
#define KF_TILE 16
#undef KF_STATS
#define KF_STATS 0
#define KF_BLOCK KF_THREADS
#define KF_R KF_ROWS
#define KF_U KF_UNROLL
#define KF_TEAM 32 /* kf_team_reduce is not used here */
#define KF_REDUCE 0
#define KF_RV 1 /* rows per reduction round (shared memory) */
#define KF_YT 1 /* y transposed: its rows are contiguous */
#define KF_VY 4 /* elements per vector store of a y row (transposed) */
/* the signature */
#define KF_M 165LL /* rows */
#define KF_NORM 20 /* elements per row */
#define KF_XN 33LL /* their stride */
#define KF_EPS 1.0000000000000001e-05
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
#endif
