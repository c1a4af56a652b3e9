/* What a render prints before forge/templates/kernels/cuda_eltwise_tile.cuh, taken from real renders (the
 * shared pieces as #includes), so that the body compiles alone: 3 variants, chosen to
 * take the #if branches of the body (tests/python/test_template_bodies.py compiles it once per
 * variant, -DKF_CHECK_VARIANT=0..KF_CHECK_VARIANTS-1). */
#define KF_CHECK_VARIANTS 3
#if KF_CHECK_VARIANT == 0
/* Kernel Forge builtin template cuda_eltwise_copy for aten::copy_; knobs: vec=1 unroll=1 threads=128 grid=0 transpose_tile=32 */
#include "cuda_common.cuh"
#define KF_VEC 1
#define KF_UNROLL 1
#define KF_THREADS 128
#define KF_GRID 0
#define KF_TRANSPOSE_TILE 32
/* inputs: self, src; outputs: self (in place) */
/* tiles of 32 x 32 over collapsed dims 0 and 1; staged: a */
#define KF_VW 1 /* element accesses, coalesced by the tiles */
#define KF_TYPE __half
#define KF_TYPE_A __half
#define KF_COPY 1
#define KF_NIN 1
#define KF_INPLACE 1
#define KF_NT 128
#define KF_T 32
#define KF_D0 40LL
#define KF_DK 24LL
#define KF_PK ((kf_idx)40LL)
#define KF_T0 2LL
#define KF_TK 1LL
#define KF_NSH 1
#define KF_ASH 0
#define KF_A0 ((kf_idx)24LL)
#define KF_AK ((kf_idx)1LL)
#define KF_BSH -1
#define KF_PARAMS kf_t *y, const kf_ta *a
typedef unsigned kf_idx;

__device__ __forceinline__ float kf_op(float v) { return v; }

/* batch dims (size: output stride, a stride): [3: 960, 960] */
__device__ __forceinline__ void kf_bases(long long q, kf_idx &yo, kf_idx &ao)
{
    { const kf_idx c = (kf_idx)(q % 3LL); q /= 3LL; yo += c * 960u; ao += c * 960u; }
    (void)q;
}
#elif KF_CHECK_VARIANT == 1
/* Kernel Forge builtin template cuda_eltwise_binary for aten::add.Tensor; knobs: vec=2 unroll=4 threads=128 grid=4 transpose_tile=64 */
#include "cuda_common.cuh"
#define KF_VEC 2
#define KF_UNROLL 4
#define KF_THREADS 128
#define KF_GRID 4
#define KF_TRANSPOSE_TILE 64
/* inputs: self, other; outputs: out */
/* tiles of 64 x 64 over collapsed dims 0 and 1; staged: b */
#define KF_VW 1 /* element accesses, coalesced by the tiles */
#define KF_TYPE __nv_bfloat16
#define KF_TYPE_A __nv_bfloat16
#define KF_COPY 0
#define KF_NIN 2
#define KF_INPLACE 0
#define KF_NT 128
#define KF_T 64
#define KF_D0 24LL
#define KF_DK 16LL
#define KF_PK ((kf_idx)24LL)
#define KF_T0 1LL
#define KF_TK 1LL
#define KF_NSH 1
#define KF_ASH -1
#define KF_A0 ((kf_idx)1LL)
#define KF_AK ((kf_idx)24LL)
#define KF_BSH 0
#define KF_B0 ((kf_idx)16LL)
#define KF_BK ((kf_idx)1LL)
#define KF_PARAMS const kf_t *__restrict__ a, const kf_t *__restrict__ b, kf_t *__restrict__ y
typedef unsigned kf_idx;

__device__ __forceinline__ float kf_op(float a, float b)
{
    return a + b;
}

/* batch dims (size: output stride, a stride, b stride): */
__device__ __forceinline__ void kf_bases(long long q, kf_idx &yo, kf_idx &ao, kf_idx &bo)
{
    (void)q;
}
#elif KF_CHECK_VARIANT == 2
/* Kernel Forge builtin template cuda_eltwise_binary for aten::mul.Tensor; knobs: vec=8 unroll=1 threads=512 grid=2 transpose_tile=32 */
#include "cuda_common.cuh"
#define KF_VEC 8
#define KF_UNROLL 1
#define KF_THREADS 512
#define KF_GRID 2
#define KF_TRANSPOSE_TILE 32
/* inputs: self, other; outputs: out */
/* tiles of 32 x 32 over collapsed dims 0 and 1; staged: a b */
#define KF_VW 1 /* element accesses, coalesced by the tiles */
#define KF_TYPE __nv_bfloat16
#define KF_TYPE_A __nv_bfloat16
#define KF_COPY 0
#define KF_NIN 2
#define KF_INPLACE 0
#define KF_NT 512
#define KF_T 32
#define KF_D0 70LL
#define KF_DK 33LL
#define KF_PK ((kf_idx)70LL)
#define KF_T0 3LL
#define KF_TK 2LL
#define KF_NSH 2
#define KF_ASH 0
#define KF_A0 ((kf_idx)33LL)
#define KF_AK ((kf_idx)1LL)
#define KF_BSH 1
#define KF_B0 ((kf_idx)33LL)
#define KF_BK ((kf_idx)1LL)
#define KF_PARAMS const kf_t *__restrict__ a, const kf_t *__restrict__ b, kf_t *__restrict__ y
typedef unsigned kf_idx;

__device__ __forceinline__ float kf_op(float a, float b)
{
    return a * b;
}

/* batch dims (size: output stride, a stride, b stride): [2: 2310, 2310, 2310] */
__device__ __forceinline__ void kf_bases(long long q, kf_idx &yo, kf_idx &ao, kf_idx &bo)
{
    { const kf_idx c = (kf_idx)(q % 2LL); q /= 2LL; yo += c * 2310u; ao += c * 2310u; bo += c * 2310u; }
    (void)q;
}
#endif
