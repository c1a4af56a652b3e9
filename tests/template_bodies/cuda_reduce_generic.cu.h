/* What a render prints before forge/templates/kernels/cuda_reduce_generic.cu, taken from real renders (the
 * shared pieces as #includes), so that the body compiles alone: 3 variants, chosen to
 * take the #if branches of the body (tests/python/test_template_bodies.py compiles it once per
 * variant, -DKF_CHECK_VARIANT=0..KF_CHECK_VARIANTS-1). */
#define KF_CHECK_VARIANTS 3
#if KF_CHECK_VARIANT == 0
/* Kernel Forge builtin template cuda_reduce_generic for aten::sum.dim_IntList; knobs: threads=64 team=1 unroll=1 */
#include "cuda_common.cuh"
#define KF_THREADS 64
#define KF_TEAM 1
#define KF_UNROLL 1
/* inputs: self; outputs: out */
#define KF_NT 64
#define KF_TPR 1
#define KF_RPB 64
#define KF_UN 1
typedef __nv_bfloat16 KF_TIN;
typedef __nv_bfloat16 KF_TOUT;
/* aten::sum.dim_IntList: outputs 6, each reducing 40 elements */
#define KF_O 6LL
#define KF_R 40LL
typedef float kf_acc;
typedef struct kf_st {
    kf_acc a;
    long long i;
} kf_st;
#define KF_ISNAN(v) ((v) != (v))
#define KF_LD(e) ((kf_acc)kf_to_f(e))
#define KF_HIGHEST ((kf_acc)__int_as_float(0x7f800000))
#define KF_LOWEST ((kf_acc)(-__int_as_float(0x7f800000)))
#define KF_MAXN(a, v) (((v) > (a) || (KF_ISNAN(v) && !KF_ISNAN(a))) ? (v) : (a))
#define KF_MINN(a, v) (((v) < (a) || (KF_ISNAN(v) && !KF_ISNAN(a))) ? (v) : (a))
#define KF_PRE 0
#define KF_INDEX 0
#define KF_NOUT 1
#define KF_INIT(s) ((s).a = (kf_acc)0, (s).i = 0)
#define KF_STEP(s, v, r) ((void)(r), (s).a += (v))
#define KF_MERGE(s, t) ((s).a += (t).a)
#define KF_FINAL(s) ((s).a)
__device__ __forceinline__ long long kf_in_o(long long o)
{
    (void)o;
    return 0 + o * 40LL;
}
__device__ __forceinline__ long long kf_in_r(long long r)
{
    (void)r;
    return 0 + r;
}
__device__ __forceinline__ long long kf_out_o(long long o)
{
    (void)o;
    return 0 + o;
}
#define KF_K0 6LL
#define KF_K0_UNIT 0
#define KF_R_UNIT 1 /* the reduced elements are adjacent */
#define KF_PARAMS const KF_TIN *__restrict__ x, KF_TOUT *__restrict__ y
#define KF_STORE(o, s) (y[kf_out_o(o)] = kf_from_f<KF_TOUT>((float)KF_FINAL(s)))

#elif KF_CHECK_VARIANT == 1
/* Kernel Forge builtin template cuda_reduce_generic for aten::logsumexp; knobs: threads=256 team=64 unroll=4 */
#include "cuda_common.cuh"
#define KF_THREADS 256
#define KF_TEAM 64
#define KF_UNROLL 4
/* inputs: self; outputs: out */
#define KF_NT 256
#define KF_TPR 64
#define KF_RPB 4
#define KF_UN 4
typedef float KF_TIN;
typedef float KF_TOUT;
/* aten::logsumexp: outputs 6, each reducing 40 elements */
#define KF_O 6LL
#define KF_R 40LL
typedef float kf_acc;
typedef struct kf_st {
    kf_acc a;
    long long i;
} kf_st;
#define KF_ISNAN(v) ((v) != (v))
#define KF_LD(e) ((kf_acc)(e))
#define KF_HIGHEST ((kf_acc)__int_as_float(0x7f800000))
#define KF_LOWEST ((kf_acc)(-__int_as_float(0x7f800000)))
#define KF_MAXN(a, v) (((v) > (a) || (KF_ISNAN(v) && !KF_ISNAN(a))) ? (v) : (a))
#define KF_MINN(a, v) (((v) < (a) || (KF_ISNAN(v) && !KF_ISNAN(a))) ? (v) : (a))
#define KF_PRE 1
#define KF_INDEX 0
#define KF_NOUT 1
#define KF_PINIT(s) ((s).a = KF_LOWEST)
#define KF_PSTEP(s, v) ((s).a = KF_MAXN((s).a, (v)))
#define KF_PMERGE(s, t) ((s).a = KF_MAXN((s).a, (t).a))
/* eager shifts by the max, by 0 where it is infinite */
#define KF_PFINAL(s) (isinf((s).a) ? (kf_acc)0 : (s).a)
#define KF_INIT(s) ((s).a = (kf_acc)0, (s).i = 0)
#define KF_STEP(s, v, r) ((void)(r), (s).a += expf((v) - m))
#define KF_MERGE(s, t) ((s).a += (t).a)
#define KF_FINAL(s) ((logf((s).a) + m))
__device__ __forceinline__ long long kf_in_o(long long o)
{
    (void)o;
    return 0 + o * 40LL;
}
__device__ __forceinline__ long long kf_in_r(long long r)
{
    (void)r;
    return 0 + r;
}
__device__ __forceinline__ long long kf_out_o(long long o)
{
    (void)o;
    return 0 + o;
}
#define KF_K0 6LL
#define KF_K0_UNIT 0
#define KF_R_UNIT 1 /* the reduced elements are adjacent */
#define KF_PARAMS const KF_TIN *__restrict__ x, KF_TOUT *__restrict__ y
#define KF_STORE(o, s) (y[kf_out_o(o)] = (KF_TOUT)KF_FINAL(s))

#elif KF_CHECK_VARIANT == 2
/* Kernel Forge builtin template cuda_reduce_generic for aten::max.dim; knobs: threads=128 team=32 unroll=2 */
#include "cuda_common.cuh"
#define KF_THREADS 128
#define KF_TEAM 32
#define KF_UNROLL 2
/* inputs: self; outputs: out, out2 */
#define KF_NT 128
#define KF_TPR 32
#define KF_RPB 4
#define KF_UN 2
typedef __half KF_TIN;
typedef __half KF_TOUT;
typedef long long KF_TOUT2;
/* aten::max.dim: outputs 6, each reducing 40 elements */
#define KF_O 6LL
#define KF_R 40LL
typedef float kf_acc;
typedef struct kf_st {
    kf_acc a;
    long long i;
} kf_st;
#define KF_ISNAN(v) ((v) != (v))
#define KF_LD(e) ((kf_acc)kf_to_f(e))
#define KF_HIGHEST ((kf_acc)__int_as_float(0x7f800000))
#define KF_LOWEST ((kf_acc)(-__int_as_float(0x7f800000)))
#define KF_MAXN(a, v) (((v) > (a) || (KF_ISNAN(v) && !KF_ISNAN(a))) ? (v) : (a))
#define KF_MINN(a, v) (((v) < (a) || (KF_ISNAN(v) && !KF_ISNAN(a))) ? (v) : (a))
#define KF_PRE 0
#define KF_INDEX 1
#define KF_NOUT 2
#define KF_BETTER(v, a) ((v) > (a) || (KF_ISNAN(v) && !KF_ISNAN(a)))
#define KF_INIT(s) ((s).a = KF_LOWEST, (s).i = 0)
#define KF_STEP(s, v, r) do { if (KF_BETTER((v), (s).a)) { (s).a = (v); (s).i = (r); } } while (0)
#define KF_MERGE(s, t) do { if (KF_BETTER((t).a, (s).a) || (((t).a == (s).a || (KF_ISNAN((t).a) && KF_ISNAN((s).a))) && (t).i < (s).i)) (s) = (t); } while (0)
#define KF_FINAL(s) ((s).a)
__device__ __forceinline__ long long kf_in_o(long long o)
{
    (void)o;
    return 0 + o * 40LL;
}
__device__ __forceinline__ long long kf_in_r(long long r)
{
    (void)r;
    return 0 + r;
}
__device__ __forceinline__ long long kf_out_o(long long o)
{
    (void)o;
    return 0 + o;
}
__device__ __forceinline__ long long kf_out2_o(long long o)
{
    (void)o;
    return 0 + o;
}
#define KF_K0 6LL
#define KF_K0_UNIT 0
#define KF_R_UNIT 1 /* the reduced elements are adjacent */
#define KF_PARAMS const KF_TIN *__restrict__ x, KF_TOUT *__restrict__ y, KF_TOUT2 *__restrict__ y2
#define KF_STORE(o, s) (y[kf_out_o(o)] = kf_from_f<KF_TOUT>((float)KF_FINAL(s)), y2[kf_out2_o(o)] = (KF_TOUT2)(s).i)

#endif
