/* What a render prints before forge/templates/kernels/cuda_cat_move.cuh, taken from real renders (the
 * shared pieces as #includes), so that the body compiles alone: 4 variants, chosen to
 * take the #if branches of the body (tests/python/test_template_bodies.py compiles it once per
 * variant, -DKF_CHECK_VARIANT=0..KF_CHECK_VARIANTS-1). */
#define KF_CHECK_VARIANTS 4
#if KF_CHECK_VARIANT == 0
/* Kernel Forge builtin template cuda_cat for aten::cat; knobs: vec=2 unroll=2 threads=256 by_part=1 */
#include "cuda_common.cuh"
#define KF_VEC 2
#define KF_UNROLL 2
#define KF_THREADS 256
#define KF_BY_PART 1
/* inputs: tensors.0..1 (list order; unused: legacy empty or zero length); outputs: out */
/* collapsed dims, innermost first [size: out stride; part strides]: [9: 1; 7] [7: 9; 1] */
#define KF_ES 4
#define KF_VW 1
#define KF_UN 2
#define KF_NT 256
#define KF_SPLIT 1 /* by_part, as rendered */
#define KF_N 63LL
#define KF_NVEC 63LL
#define KF_TILE ((long long)KF_NT * KF_UN)
typedef unsigned kf_e;
typedef unsigned kf_idx;

#if KF_VW > 1
__device__ __forceinline__ void kf_put_e(unsigned *w, int k, kf_e e)
{
    w[k] = e;
}
#endif
#elif KF_CHECK_VARIANT == 1
/* Kernel Forge builtin template cuda_cat for aten::cat; knobs: vec=4 unroll=2 threads=512 by_part=0 */
#include "cuda_common.cuh"
#define KF_VEC 4
#define KF_UNROLL 2
#define KF_THREADS 512
#define KF_BY_PART 0
/* inputs: tensors.0..1 (list order; unused: legacy empty or zero length); outputs: out */
/* collapsed dims, innermost first [size: out stride; part strides]: [4: 1; 1 1] [5 cat: 4; 0 4] */
#define KF_ES 4
#define KF_VW 4
#define KF_UN 2
#define KF_NT 512
#define KF_SPLIT 0 /* by_part, as rendered */
#define KF_N 20LL
#define KF_NVEC 5LL
#define KF_TILE ((long long)KF_NT * KF_UN)
typedef unsigned kf_e;
typedef unsigned kf_idx;

#if KF_VW > 1
__device__ __forceinline__ void kf_put_e(unsigned *w, int k, kf_e e)
{
    w[k] = e;
}
#endif
#elif KF_CHECK_VARIANT == 2
/* Kernel Forge builtin template cuda_cat for aten::cat; knobs: vec=2 unroll=1 threads=256 by_part=1 */
#include "cuda_common.cuh"
#define KF_VEC 2
#define KF_UNROLL 1
#define KF_THREADS 256
#define KF_BY_PART 1
/* inputs: tensors.0..1 (list order; unused: legacy empty or zero length); outputs: out */
/* collapsed dims, innermost first [size: out stride; part strides]: [8: 1; 1 1] [6 cat: 8; 8 8] */
#define KF_ES 4
#define KF_VW 2
#define KF_UN 1
#define KF_NT 256
#define KF_SPLIT 1 /* by_part, as rendered */
#define KF_N 48LL
#define KF_NVEC 24LL
#define KF_TILE ((long long)KF_NT * KF_UN)
typedef unsigned kf_e;
typedef unsigned kf_idx;

#if KF_VW > 1
__device__ __forceinline__ void kf_put_e(unsigned *w, int k, kf_e e)
{
    w[k] = e;
}
#endif
#elif KF_CHECK_VARIANT == 3
/* Kernel Forge builtin template cuda_cat for aten::cat; knobs: vec=8 unroll=8 threads=256 by_part=0 */
#include "cuda_common.cuh"
#define KF_VEC 8
#define KF_UNROLL 8
#define KF_THREADS 256
#define KF_BY_PART 0
/* inputs: tensors.0..1 (list order; unused: legacy empty or zero length); outputs: out */
/* collapsed dims, innermost first [size: out stride; part strides]: [24 cat: 1; 0 1] [6: 24; 1 8] */
#define KF_ES 2
#define KF_VW 8
#define KF_UN 8
#define KF_NT 256
#define KF_SPLIT 0 /* by_part, as rendered */
#define KF_N 144LL
#define KF_NVEC 18LL
#define KF_TILE ((long long)KF_NT * KF_UN)
typedef unsigned short kf_e;
typedef unsigned kf_idx;

#if KF_VW > 1
__device__ __forceinline__ void kf_put_e(unsigned *w, int k, kf_e e)
{
    w[k >> 1] |= (unsigned)e << (16 * (k & 1));
}
#endif
#endif
