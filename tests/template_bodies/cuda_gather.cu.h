/* What a render prints before forge/templates/kernels/cuda_gather.cu, taken from real renders (the
 * shared pieces as #includes), so that the body compiles alone: 2 variants, chosen to
 * take the #if branches of the body (tests/python/test_template_bodies.py compiles it once per
 * variant, -DKF_CHECK_VARIANT=0..KF_CHECK_VARIANTS-1). */
#define KF_CHECK_VARIANTS 2
#if KF_CHECK_VARIANT == 0
/* Kernel Forge builtin template cuda_gather for aten::embedding; knobs: threads=256 ept=1 */
#include "cuda_common.cuh"
#define KF_THREADS 256
#define KF_EPT 1
/* inputs: weight, index; outputs: out */
typedef float KF_T;
typedef long long KF_IDX;
#define KF_NT 256 /* KF_EPT: the knob */
#define KF_Q 12LL /* rows: all but the last output dim */
#define KF_D0 8LL
#define KF_IST0 0LL
#define KF_SST0 1LL
#define KF_OST0 1LL
#define KF_GST 8LL
#define KF_V 10LL
#define KF_IN 12LL
__device__ __forceinline__ long long kf_io(long long q)
{
    (void)q;
    return 0 + q % 4LL + q / 4LL * 4LL;
}
__device__ __forceinline__ long long kf_so(long long q)
{
    (void)q;
    return 0;
}
__device__ __forceinline__ long long kf_oo(long long q)
{
    (void)q;
    return 0 + q % 4LL * 8LL + q / 4LL * 32LL;
}
__device__ __forceinline__ long long kf_ix(long long q)
{
    (void)q;
    return 0 + q % 4LL + q / 4LL * 4LL;
}

#elif KF_CHECK_VARIANT == 1
/* Kernel Forge builtin template cuda_gather for aten::gather; knobs: threads=128 ept=4 */
#include "cuda_common.cuh"
#define KF_THREADS 128
#define KF_EPT 4
/* inputs: self, index; outputs: out */
typedef __half KF_T;
typedef int KF_IDX;
#define KF_NT 128 /* KF_EPT: the knob */
#define KF_Q 4LL /* rows: all but the last output dim */
#define KF_D0 3LL
#define KF_IST0 1LL
#define KF_SST0 0LL
#define KF_OST0 1LL
#define KF_GST 1LL
#define KF_V 5LL
#define KF_IN 12LL
__device__ __forceinline__ long long kf_io(long long q)
{
    (void)q;
    return 0 + q * 3LL;
}
__device__ __forceinline__ long long kf_so(long long q)
{
    (void)q;
    return 0 + q * 5LL;
}
__device__ __forceinline__ long long kf_oo(long long q)
{
    (void)q;
    return 0 + q * 3LL;
}
__device__ __forceinline__ long long kf_ix(long long q)
{
    (void)q;
    return 0 + q % 3LL + q / 3LL * 3LL;
}

#endif
