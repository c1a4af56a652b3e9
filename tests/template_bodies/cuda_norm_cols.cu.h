/* What a render prints before forge/templates/kernels/cuda_norm_cols.cu, taken from real renders (the
 * shared pieces as #includes), so that the body compiles alone: 3 variants, chosen to
 * take the #if branches of the body (tests/python/test_template_bodies.py compiles it once per
 * variant, -DKF_CHECK_VARIANT=0..KF_CHECK_VARIANTS-1). */
#define KF_CHECK_VARIANTS 3
#if KF_CHECK_VARIANT == 0
/* Kernel Forge builtin template cuda_rms_norm_cols for aten::_fused_rms_norm; knobs: threads=64 rows=16 vec=1 unroll=2 tile=64 */
#include "cuda_common.cuh"
#define KF_THREADS 64
#define KF_ROWS 16
#define KF_VEC 1
#define KF_UNROLL 2
#define KF_TILE 64
/* effective knob values: every combination renders a kernel that is right for this signature */
#undef KF_THREADS
#define KF_THREADS 64
#undef KF_ROWS
#define KF_ROWS 16
#undef KF_VEC
#define KF_VEC 1
#undef KF_TILE
#define KF_TILE 0 /* y has x's layout: no tile */
#undef KF_STATS
#define KF_STATS 0
#define KF_BLOCK KF_THREADS
#define KF_R KF_ROWS
#define KF_U KF_UNROLL
#define KF_TEAM 32 /* kf_team_reduce is not used here */
#define KF_REDUCE 0
#define KF_RV 1 /* rows per reduction round (shared memory) */
#define KF_YT 0 /* y transposed: its rows are contiguous */
#define KF_VY 1 /* elements per vector store of a y row (transposed) */
/* the signature */
#define KF_M 80LL /* rows */
#define KF_NORM 24 /* elements per row */
#define KF_XN 40LL /* their stride */
#define KF_EPS 9.9999999999999995e-07
#define KF_RMS 1
#define KF_HAS_W 1
#define KF_HAS_B 0
typedef __half kf_x_t;
typedef __half kf_w_t;
typedef float kf_b_t;
typedef __half kf_y_t;
typedef float kf_m_t;
typedef float kf_r_t;
#define KF_PARAMS const kf_x_t *__restrict__ x, const kf_w_t *__restrict__ w, kf_y_t *__restrict__ y, kf_r_t *__restrict__ rstd_out

#include "cuda_norm_common.cuh"

/* element offset of logical row r (the leading dims, row-major) */
__device__ __forceinline__ long long kf_xrow(unsigned r)
{
    long long o = 0;
    o += (long long)(r % 40u) * 1LL;
    r /= 40u;
    o += (long long)r * 960LL;
    return o;
}
#elif KF_CHECK_VARIANT == 1
/* Kernel Forge builtin template cuda_layer_norm_cols for aten::native_layer_norm; knobs: threads=64 rows=16 vec=1 unroll=8 tile=64 stats=1 */
#include "cuda_common.cuh"
#define KF_THREADS 64
#define KF_ROWS 16
#define KF_VEC 1
#define KF_UNROLL 8
#define KF_TILE 64
#define KF_STATS 1
/* effective knob values: every combination renders a kernel that is right for this signature */
#undef KF_THREADS
#define KF_THREADS 64
#undef KF_ROWS
#define KF_ROWS 16
#undef KF_VEC
#define KF_VEC 1
#undef KF_TILE
#define KF_TILE 0 /* y has x's layout: no tile */
#undef KF_STATS
#define KF_STATS 1
#define KF_BLOCK KF_THREADS
#define KF_R KF_ROWS
#define KF_U KF_UNROLL
#define KF_TEAM 32 /* kf_team_reduce is not used here */
#define KF_REDUCE 0
#define KF_RV 1 /* rows per reduction round (shared memory) */
#define KF_YT 0 /* y transposed: its rows are contiguous */
#define KF_VY 1 /* elements per vector store of a y row (transposed) */
/* the signature */
#define KF_M 74LL /* rows */
#define KF_NORM 30 /* elements per row */
#define KF_XN 37LL /* their stride */
#define KF_EPS 1.0000000000000001e-05
#define KF_RMS 0
#define KF_HAS_W 0
#define KF_HAS_B 1
typedef __half kf_x_t;
typedef float kf_w_t;
typedef __half kf_b_t;
typedef __half kf_y_t;
typedef float kf_m_t;
typedef float kf_r_t;
#define KF_PARAMS const kf_x_t *__restrict__ x, const kf_b_t *__restrict__ b, kf_y_t *__restrict__ y, kf_m_t *__restrict__ mean_out, kf_r_t *__restrict__ rstd_out

#include "cuda_norm_common.cuh"

/* element offset of logical row r (the leading dims, row-major) */
__device__ __forceinline__ long long kf_xrow(unsigned r)
{
    long long o = 0;
    o += (long long)(r % 37u) * 1LL;
    r /= 37u;
    o += (long long)r * 1110LL;
    return o;
}
#elif KF_CHECK_VARIANT == 2
/* Kernel Forge builtin template cuda_layer_norm_cols for aten::native_layer_norm; knobs: threads=64 rows=16 vec=2 unroll=2 tile=16 stats=2 */
#include "cuda_common.cuh"
#define KF_THREADS 64
#define KF_ROWS 16
#define KF_VEC 2
#define KF_UNROLL 2
#define KF_TILE 16
#define KF_STATS 2
/* effective knob values: every combination renders a kernel that is right for this signature */
#undef KF_THREADS
#define KF_THREADS 64
#undef KF_ROWS
#define KF_ROWS 16
#undef KF_VEC
#define KF_VEC 2
#undef KF_TILE
#define KF_TILE 16
#undef KF_STATS
#define KF_STATS 2
#define KF_BLOCK KF_THREADS
#define KF_R KF_ROWS
#define KF_U KF_UNROLL
#define KF_TEAM 32 /* kf_team_reduce is not used here */
#define KF_REDUCE 0
#define KF_RV 2 /* rows per reduction round (shared memory) */
#define KF_YT 1 /* y transposed: its rows are contiguous */
#define KF_VY 8 /* elements per vector store of a y row (transposed) */
/* the signature */
#define KF_M 8192LL /* rows */
#define KF_NORM 1536 /* elements per row */
#define KF_XN 4096LL /* their stride */
#define KF_EPS 9.9999999999999995e-07
#define KF_RMS 0
#define KF_HAS_W 0
#define KF_HAS_B 0
typedef __nv_bfloat16 kf_x_t;
typedef float kf_w_t;
typedef float kf_b_t;
typedef __nv_bfloat16 kf_y_t;
typedef float kf_m_t;
typedef float kf_r_t;
#define KF_PARAMS const kf_x_t *__restrict__ x, kf_y_t *__restrict__ y, kf_m_t *__restrict__ mean_out, kf_r_t *__restrict__ rstd_out

#include "cuda_norm_common.cuh"

/* element offset of logical row r (the leading dims, row-major) */
__device__ __forceinline__ long long kf_xrow(unsigned r)
{
    long long o = 0;
    o += (long long)(r % 4096u) * 1LL;
    r /= 4096u;
    o += (long long)r * 6291456LL;
    return o;
}
/* element offset of logical row r (the leading dims, row-major) */
__device__ __forceinline__ long long kf_yrow(unsigned r)
{
    long long o = 0;
    o += (long long)r * 1536LL;
    return o;
}
#endif
