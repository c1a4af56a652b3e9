/* What a render prints before forge/templates/kernels/cuda_reduce.cu, taken from real renders (the
 * shared pieces as #includes), so that the body compiles alone: 4 variants, chosen to
 * take the #if branches of the body (tests/python/test_template_bodies.py compiles it once per
 * variant, -DKF_CHECK_VARIANT=0..KF_CHECK_VARIANTS-1). */
#define KF_CHECK_VARIANTS 4
#if KF_CHECK_VARIANT == 0
/* Kernel Forge builtin template cuda_reduce_mean for aten::mean.dim; knobs: threads=32 rows=8 vec=4 unroll=4 */
#include "cuda_common.cuh"
#define KF_THREADS 32
#define KF_ROWS 8
#define KF_VEC 4
#define KF_UNROLL 4
/* inputs: self; outputs: out; self in memory order as [O][R][I] */
#define KF_T float
#define KF_MODE 1 /* columns */
#define KF_O 1LL
#define KF_R 8
#define KF_I 60
#define KF_NT 32
#define KF_VW 4
#define KF_UN 2
#define KF_NPT 2
#define KF_TX 8
#define KF_TY 4
#define KF_IV 15LL
#define KF_NCG 15LL
#define KF_OVEC 1
typedef unsigned kf_idx;

__device__ __forceinline__ kf_idx kf_out_off(kf_idx o, kf_idx i)
{
    (void)o, (void)i;
    return 0 + i;
}
#elif KF_CHECK_VARIANT == 1
/* Kernel Forge builtin template cuda_reduce_mean for aten::mean.dim; knobs: threads=64 rows=1 vec=2 unroll=4 */
#include "cuda_common.cuh"
#define KF_THREADS 64
#define KF_ROWS 1
#define KF_VEC 2
#define KF_UNROLL 4
/* inputs: self; outputs: out; self in memory order as [O][R][I] */
#define KF_T float
#define KF_MODE 0 /* rows */
#define KF_O 1LL
#define KF_R 999
#define KF_I 1
#define KF_NT 64
#define KF_VW 1
#define KF_UN 4
#define KF_NPT 16
#define KF_TPR 64
#define KF_RPB 1
#define KF_NV 999
typedef unsigned kf_idx;

__device__ __forceinline__ kf_idx kf_out_off(kf_idx o, kf_idx i)
{
    (void)o, (void)i;
    return 0;
}
#elif KF_CHECK_VARIANT == 2
/* Kernel Forge builtin template cuda_reduce_mean for aten::mean.dim; knobs: threads=64 rows=2 vec=1 unroll=2 */
#include "cuda_common.cuh"
#define KF_THREADS 64
#define KF_ROWS 2
#define KF_VEC 1
#define KF_UNROLL 2
/* inputs: self; outputs: out; self in memory order as [O][R][I] */
#define KF_T float
#define KF_MODE 1 /* columns */
#define KF_O 1LL
#define KF_R 8
#define KF_I 60
#define KF_NT 64
#define KF_VW 1
#define KF_UN 1
#define KF_NPT 1
#define KF_TX 8
#define KF_TY 8
#define KF_IV 60LL
#define KF_NCG 60LL
#define KF_OVEC 0
typedef unsigned kf_idx;

__device__ __forceinline__ kf_idx kf_out_off(kf_idx o, kf_idx i)
{
    (void)o, (void)i;
    return 0 + i;
}
#elif KF_CHECK_VARIANT == 3
/* Kernel Forge builtin template cuda_reduce_mean for aten::mean.dim; knobs: threads=32 rows=8 vec=2 unroll=1 */
#include "cuda_common.cuh"
#define KF_THREADS 32
#define KF_ROWS 8
#define KF_VEC 2
#define KF_UNROLL 1
/* inputs: self; outputs: out; self in memory order as [O][R][I] */
#define KF_T float
#define KF_MODE 0 /* rows */
#define KF_O 1LL
#define KF_R 999
#define KF_I 1
#define KF_NT 32
#define KF_VW 1
#define KF_UN 1
#define KF_NPT 250
#define KF_TPR 4
#define KF_RPB 8
#define KF_NV 999
typedef unsigned kf_idx;

__device__ __forceinline__ kf_idx kf_out_off(kf_idx o, kf_idx i)
{
    (void)o, (void)i;
    return 0;
}
#endif
