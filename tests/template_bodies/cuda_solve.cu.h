/* What a render prints before forge/templates/kernels/cuda_solve.cu, taken from real renders (the
 * shared pieces as #includes), so that the body compiles alone: 3 variants, chosen to
 * take the #if branches of the body (tests/python/test_template_bodies.py compiles it once per
 * variant, -DKF_CHECK_VARIANT=0..KF_CHECK_VARIANTS-1). */
#define KF_CHECK_VARIANTS 3
#if KF_CHECK_VARIANT == 0
/* Kernel Forge builtin template cuda_solve_triangular for aten::linalg_solve_triangular; knobs: threads=32 vec=1 pitch=4 minblocks=1 */
#include "cuda_common.cuh"
#define KF_THREADS 32
#define KF_VEC 1
#define KF_PITCH 4
#define KF_MINBLOCKS 1
/* inputs: A, B; output: X; lower, left */
/* effective knob values */
#define KF_NT 32
#define KF_BVEC 1
#define KF_XVEC 1
#define KF_MINB 1
/* the signature */
#define KF_N 1
#define KF_K 9
#define KF_UPPER 0
#define KF_UNIT 0
#define KF_TILES 1LL
#define KF_AI 1LL
#define KF_AJ 1LL
#define KF_AJ_FAST 1
#define KF_BI 9LL
#define KF_BJ 1LL
#define KF_XI 9LL
#define KF_XJ 1LL
#define KF_BATCH_OFFSETS \
    /* batch 1 */
#elif KF_CHECK_VARIANT == 1
/* Kernel Forge builtin template cuda_solve_triangular for aten::linalg_solve_triangular; knobs: threads=32 vec=2 pitch=4 minblocks=2 */
#include "cuda_common.cuh"
#define KF_THREADS 32
#define KF_VEC 2
#define KF_PITCH 4
#define KF_MINBLOCKS 2
/* inputs: A, B; output: X; upper, left */
/* effective knob values */
#define KF_NT 32
#define KF_BVEC 2
#define KF_XVEC 2
#define KF_MINB 2
/* the signature */
#define KF_N 64
#define KF_K 1
#define KF_UPPER 1
#define KF_UNIT 0
#define KF_TILES 1LL
#define KF_AI 1LL
#define KF_AJ 64LL
#define KF_AJ_FAST 0
#define KF_BI 1LL
#define KF_BJ 1LL
#define KF_XI 1LL
#define KF_XJ 1LL
#define KF_BATCH_OFFSETS \
    long long r = blockIdx.x / KF_TILES; /* the batch index */ \
    { const long long q = r % 2LL; r /= 2LL; oa += q * 4096LL; ob += q * 64LL; ox += q * 64LL; } \
    /* batch 2 */
#elif KF_CHECK_VARIANT == 2
/* Kernel Forge builtin template cuda_solve_triangular for aten::linalg_solve_triangular; knobs: threads=32 vec=1 pitch=0 minblocks=4 */
#include "cuda_common.cuh"
#define KF_THREADS 32
#define KF_VEC 1
#define KF_PITCH 0
#define KF_MINBLOCKS 4
/* inputs: A, B; output: X; upper, unitriangular, left */
/* effective knob values */
#define KF_NT 32
#define KF_BVEC 1
#define KF_XVEC 1
#define KF_MINB 4
/* the signature */
#define KF_N 7
#define KF_K 40
#define KF_UPPER 1
#define KF_UNIT 1
#define KF_TILES 2LL
#define KF_AI 7LL
#define KF_AJ 1LL
#define KF_AJ_FAST 1
#define KF_BI 40LL
#define KF_BJ 1LL
#define KF_XI 40LL
#define KF_XJ 1LL
#define KF_BATCH_OFFSETS \
    long long r = blockIdx.x / KF_TILES; /* the batch index */ \
    { const long long q = r % 3LL; r /= 3LL; oa += q * 49LL; ob += q * 280LL; ox += q * 280LL; } \
    /* batch 3 */
#endif
