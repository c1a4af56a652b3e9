/* What a render prints before forge/templates/kernels/cuda_mufu.cuh, taken from real renders (the
 * shared pieces as #includes), so that the body compiles alone: one variant. */
#define KF_CHECK_VARIANTS 1
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
