/* What a render prints before forge/templates/kernels/cuda_chain_reduce.cuh (cuda_chain, a row
 * chain whose reduction is mean: RMSNorm; variant 1: a group norm's tail over a cluster of 4), cut
 * to the definitions the body uses, so that the body compiles alone. */
#define KF_CHECK_VARIANTS 2
typedef float kf_ct;
#define KF_C 512LL
#define KF_RINIT (kf_ct)0
#define KF_RCOMB(a, b) ((a) + (b))
#define KF_RFINAL(a) ((a) / (kf_ct)KF_C)
#define KF_PW_INF __longlong_as_double(0x7ff0000000000000LL)
#define KF_NT 256
#define KF_ROW_WARP 0
#if KF_CHECK_VARIANT == 1
#define KF_CL 4
#include "cuda_cluster.cuh"
#endif
