/* What a render prints before forge/templates/kernels/cuda_eltwise_loop_tail.cuh, taken from real renders (the
 * shared pieces as #includes), so that the body compiles alone: 4 variants, chosen to
 * take the #if branches of the body (tests/python/test_template_bodies.py compiles it once per
 * variant, -DKF_CHECK_VARIANT=0..KF_CHECK_VARIANTS-1). */
#define KF_CHECK_VARIANTS 4
#if KF_CHECK_VARIANT == 0
/* Kernel Forge builtin template cuda_eltwise_unary for aten::silu; knobs: vec=4 unroll=2 threads=512 grid=1 */
#include "cuda_common.cuh"
#define KF_VEC 4
#define KF_UNROLL 2
#define KF_THREADS 512
#define KF_GRID 1
/* inputs: self; outputs: out */
#define KF_TYPE_A float
#define KF_COPY 0
#define KF_TYPE float
#define KF_NIN 1
#define KF_INPLACE 0
#define KF_VW 4
#define KF_UN 2
#define KF_NT 512
#define KF_GS 1
#define KF_N 2112LL
#define KF_NVEC 528LL
#define KF_TAIL 0
#define KF_AMODE 0
#define KF_AIS0 1LL
#define KF_BMODE 0
#define KF_BIS0 0LL
#define KF_PARAMS const kf_t *__restrict__ a, kf_t *__restrict__ y
typedef unsigned kf_idx;

#include "cuda_mufu.cuh"
__device__ __forceinline__ float kf_op(float v)
{
    return v * kf_rcp(1.0f + kf_ex2(v * -1.4426950408889634f));
}

__device__ __forceinline__ kf_idx kf_off_a(kf_idx i)
{
    return i;
}

#include "cuda_eltwise_loop.cuh"
                kf_v::stw(y + q * KF_VW, r);
#elif KF_CHECK_VARIANT == 1
/* Kernel Forge builtin template cuda_eltwise_copy for aten::copy_; knobs: vec=4 unroll=4 threads=128 grid=0 transpose_tile=0 */
#include "cuda_common.cuh"
#define KF_VEC 4
#define KF_UNROLL 4
#define KF_THREADS 128
#define KF_GRID 0
#define KF_TRANSPOSE_TILE 0
/* inputs: self, src; outputs: self (in place) */
#define KF_TYPE_A __nv_bfloat16
#define KF_COPY 1
#define KF_TYPE float
#define KF_NIN 1
#define KF_INPLACE 1
#define KF_VW 4
#define KF_UN 4
#define KF_NT 128
#define KF_GS 0
#define KF_N 3552LL
#define KF_NVEC 888LL
#define KF_TAIL 0
#define KF_AMODE 0
#define KF_AIS0 1LL
#define KF_BMODE 0
#define KF_BIS0 0LL
#define KF_PARAMS kf_t *y, const kf_ta *a
typedef unsigned kf_idx;

__device__ __forceinline__ float kf_op(float v) { return v; }

__device__ __forceinline__ kf_idx kf_off_a(kf_idx i)
{
    return i;
}

#include "cuda_eltwise_loop.cuh"
                kf_v::stw(y + q * KF_VW, r);
#elif KF_CHECK_VARIANT == 2
/* Kernel Forge builtin template cuda_eltwise_binary for aten::add.Tensor; knobs: vec=8 unroll=8 threads=128 grid=2 transpose_tile=0 */
#include "cuda_common.cuh"
#define KF_VEC 8
#define KF_UNROLL 8
#define KF_THREADS 128
#define KF_GRID 2
#define KF_TRANSPOSE_TILE 0
/* inputs: self, other; outputs: out */
#define KF_TYPE_A __half
#define KF_COPY 0
#define KF_TYPE __half
#define KF_NIN 2
#define KF_INPLACE 0
#define KF_VW 8
#define KF_UN 8
#define KF_NT 128
#define KF_GS 1
#define KF_N 3330LL
#define KF_NVEC 416LL
#define KF_TAIL 2
#define KF_AMODE 0
#define KF_AIS0 1LL
#define KF_BMODE 0
#define KF_BIS0 1LL
#define KF_PARAMS const kf_t *__restrict__ a, const kf_t *__restrict__ b, kf_t *__restrict__ y
typedef unsigned kf_idx;

__device__ __forceinline__ float kf_op(float a, float b)
{
    return a + b;
}

__device__ __forceinline__ kf_idx kf_off_a(kf_idx i)
{
    return i;
}
__device__ __forceinline__ kf_idx kf_off_b(kf_idx i)
{
    return i;
}

#include "cuda_eltwise_loop.cuh"
                kf_v::stw(y + q * KF_VW, r);
#elif KF_CHECK_VARIANT == 3
/* Kernel Forge builtin template cuda_eltwise_unary for aten::pow.Tensor_Scalar; knobs: vec=8 unroll=1 threads=256 grid=0 */
#include "cuda_common.cuh"
#define KF_VEC 8
#define KF_UNROLL 1
#define KF_THREADS 256
#define KF_GRID 0
/* inputs: self; outputs: out */
#define KF_TYPE_A __nv_bfloat16
#define KF_COPY 0
#define KF_TYPE __nv_bfloat16
#define KF_NIN 1
#define KF_INPLACE 0
#define KF_VW 8
#define KF_UN 1
#define KF_NT 256
#define KF_GS 0
#define KF_N 111LL
#define KF_NVEC 13LL
#define KF_TAIL 7
#define KF_AMODE 0
#define KF_AIS0 1LL
#define KF_BMODE 0
#define KF_BIS0 0LL
#define KF_PARAMS const kf_t *__restrict__ a, kf_t *__restrict__ y
typedef unsigned kf_idx;

/* exponent = 0.5 */
__device__ __forceinline__ float kf_op(float v)
{
    return sqrtf(v);
}

__device__ __forceinline__ kf_idx kf_off_a(kf_idx i)
{
    return i;
}

#include "cuda_eltwise_loop.cuh"
                kf_v::stw(y + q * KF_VW, r);
#endif
