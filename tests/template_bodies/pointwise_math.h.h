/* What a render prints before forge/templates/kernels/pointwise_math.h, taken from real renders
 * of cuda_pointwise (the shared pieces as #includes), so that the body compiles alone: three
 * variants, float, double and integer compute types. (host_pointwise prints the same body after
 * its own KF_PW_FN and bit casts; tests/c/test_templates_pointwise.c compiles those.) */
#define KF_CHECK_VARIANTS 3
/* Kernel Forge builtin template cuda_pointwise for aten::add.Tensor; knobs: threads=256 unroll=4 grid=0 */
#include "cuda_common.cuh"
#define KF_THREADS 256
#define KF_UNROLL 4
#define KF_GRID 0
/* pointwise engine: aten::add.Tensor; promoted dtype 1, computed in float */
#define KF_PW_FN __device__ __forceinline__
KF_PW_FN unsigned kf_pw_fbits(float f) { return __float_as_uint(f); }
KF_PW_FN float kf_pw_bitsf(unsigned u) { return __uint_as_float(u); }
#define KF_PW_INF __longlong_as_double(0x7ff0000000000000LL)
#define KF_PW_NAN __longlong_as_double(0x7ff8000000000000LL)
#if KF_CHECK_VARIANT == 0
typedef float kf_ct;
#define KF_CT_F64 0
#define KF_CT_INT 0
#define KF_P_BOOL 0
#elif KF_CHECK_VARIANT == 1
typedef double kf_ct;
#define KF_CT_F64 1
#define KF_CT_INT 0
#define KF_P_BOOL 0
#else
typedef long long kf_ct;
#define KF_CT_F64 0
#define KF_CT_INT 1
#define KF_P_BOOL 0
#endif
