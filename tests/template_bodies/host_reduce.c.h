/* What a render prints before forge/templates/kernels/host_reduce.c, taken from real renders (the
 * shared pieces as #includes), so that the body compiles alone: 3 variants, chosen to
 * take the #if branches of the body (tests/python/test_template_bodies.py compiles it once per
 * variant, -DKF_CHECK_VARIANT=0..KF_CHECK_VARIANTS-1). */
#define KF_CHECK_VARIANTS 3
#if KF_CHECK_VARIANT == 0
/* Kernel Forge builtin template host_reduce for aten::sum.dim_IntList; knobs: mode=0 lanes=8 omp=0 tile=64 */
#include <math.h>
#include <stdint.h>

#define KF_MODE 0
#define KF_LANES 8
#define KF_OMP 0
#define KF_TILE 64
/* inputs: self; outputs: out */
#define KF_COLS 0
typedef float KF_TIN;
typedef float KF_TOUT;
/* aten::sum.dim_IntList: outputs 6, each reducing 40 elements */
#define KF_O 6LL
#define KF_R 40LL
typedef float kf_acc;
typedef struct kf_st {
    kf_acc a;
    long long i;
} kf_st;
#define KF_ISNAN(v) ((v) != (v))
#define KF_LD(e) ((kf_acc)(e))
#define KF_HIGHEST ((kf_acc)INFINITY)
#define KF_LOWEST ((kf_acc)(-INFINITY))
#define KF_MAXN(a, v) (((v) > (a) || (KF_ISNAN(v) && !KF_ISNAN(a))) ? (v) : (a))
#define KF_MINN(a, v) (((v) < (a) || (KF_ISNAN(v) && !KF_ISNAN(a))) ? (v) : (a))
#define KF_PRE 0
#define KF_INDEX 0
#define KF_NOUT 1
#define KF_INIT(s) ((s).a = (kf_acc)0, (s).i = 0)
#define KF_STEP(s, v, r) ((void)(r), (s).a += (v))
#define KF_MERGE(s, t) ((s).a += (t).a)
#define KF_FINAL(s) ((s).a)
static inline long long kf_in_o(long long o)
{
    (void)o;
    return 0 + o * 40LL;
}
static inline long long kf_in_r(long long r)
{
    (void)r;
    return 0 + r;
}
static inline long long kf_out_o(long long o)
{
    (void)o;
    return 0 + o;
}
#define KF_K0 6LL
#define KF_K0_UNIT 0
#define KF_R_UNIT 1 /* the reduced elements are adjacent */
#define KF_PARAMS const KF_TIN *restrict x, KF_TOUT *restrict y
#define KF_PARAMS_OUT KF_TOUT *restrict y
#define KF_ARGS_OUT y
#define KF_STORE(o, s) (y[kf_out_o(o)] = (KF_TOUT)KF_FINAL(s))

#elif KF_CHECK_VARIANT == 1
/* Kernel Forge builtin template host_reduce for aten::var_mean.correction; knobs: mode=1 lanes=1 omp=1 tile=16 */
#include <math.h>
#include <stdint.h>

#define KF_MODE 1
#define KF_LANES 1
#define KF_OMP 1
#define KF_TILE 16
/* inputs: self; outputs: out, out2 */
#define KF_COLS 1
typedef float KF_TIN;
typedef float KF_TOUT;
typedef float KF_TOUT2;
/* aten::var_mean.correction: outputs 24, each reducing 5 elements */
#define KF_O 24LL
#define KF_R 5LL
typedef float kf_acc;
typedef struct kf_st {
    kf_acc a;
    long long i;
} kf_st;
#define KF_ISNAN(v) ((v) != (v))
#define KF_LD(e) ((kf_acc)(e))
#define KF_HIGHEST ((kf_acc)INFINITY)
#define KF_LOWEST ((kf_acc)(-INFINITY))
#define KF_MAXN(a, v) (((v) > (a) || (KF_ISNAN(v) && !KF_ISNAN(a))) ? (v) : (a))
#define KF_MINN(a, v) (((v) < (a) || (KF_ISNAN(v) && !KF_ISNAN(a))) ? (v) : (a))
#define KF_PRE 1
#define KF_INDEX 0
#define KF_NOUT 2
#define KF_PINIT(s) ((s).a = (kf_acc)0)
#define KF_PSTEP(s, v) ((s).a += (v))
#define KF_PMERGE(s, t) ((s).a += (t).a)
#define KF_PFINAL(s) ((s).a / (kf_acc)KF_R)
#define KF_VAR(a) ((a) / (kf_acc)4)
#define KF_INIT(s) ((s).a = (kf_acc)0, (s).i = 0)
#define KF_STEP(s, v, r) ((void)(r), (s).a += ((v) - m) * ((v) - m))
#define KF_MERGE(s, t) ((s).a += (t).a)
#define KF_FINAL(s) (KF_VAR((s).a))
static inline long long kf_in_o(long long o)
{
    (void)o;
    return 0 + o % 6LL + o / 6LL * 30LL;
}
static inline long long kf_in_r(long long r)
{
    (void)r;
    return 0 + r * 6LL;
}
static inline long long kf_out_o(long long o)
{
    (void)o;
    return 0 + o % 6LL + o / 6LL * 6LL;
}
static inline long long kf_out2_o(long long o)
{
    (void)o;
    return 0 + o % 6LL + o / 6LL * 6LL;
}
#define KF_K0 6LL
#define KF_K0_UNIT 1
#define KF_R_UNIT 0 /* the reduced elements are adjacent */
#define KF_PARAMS const KF_TIN *restrict x, KF_TOUT *restrict y, KF_TOUT2 *restrict y2
#define KF_PARAMS_OUT KF_TOUT *restrict y, KF_TOUT2 *restrict y2
#define KF_ARGS_OUT y, y2
#define KF_STORE(o, s) (y[kf_out_o(o)] = (KF_TOUT)KF_FINAL(s), y2[kf_out2_o(o)] = (KF_TOUT2)m)

#elif KF_CHECK_VARIANT == 2
/* Kernel Forge builtin template host_reduce for aten::max.dim; knobs: mode=0 lanes=16 omp=1 tile=64 */
#include <math.h>
#include <stdint.h>

#define KF_MODE 0
#define KF_LANES 16
#define KF_OMP 1
#define KF_TILE 64
/* inputs: self; outputs: out, out2 */
#define KF_COLS 0
typedef int32_t KF_TIN;
typedef int32_t KF_TOUT;
typedef int64_t KF_TOUT2;
/* aten::max.dim: outputs 6, each reducing 40 elements */
#define KF_O 6LL
#define KF_R 40LL
typedef long long kf_acc;
typedef struct kf_st {
    kf_acc a;
    long long i;
} kf_st;
#define KF_ISNAN(v) 0
#define KF_LD(e) ((kf_acc)(e))
#define KF_HIGHEST ((kf_acc)9223372036854775807LL)
#define KF_LOWEST ((kf_acc)(-9223372036854775807LL - 1))
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
static inline long long kf_in_o(long long o)
{
    (void)o;
    return 0 + o * 40LL;
}
static inline long long kf_in_r(long long r)
{
    (void)r;
    return 0 + r;
}
static inline long long kf_out_o(long long o)
{
    (void)o;
    return 0 + o;
}
static inline long long kf_out2_o(long long o)
{
    (void)o;
    return 0 + o;
}
#define KF_K0 6LL
#define KF_K0_UNIT 0
#define KF_R_UNIT 1 /* the reduced elements are adjacent */
#define KF_PARAMS const KF_TIN *restrict x, KF_TOUT *restrict y, KF_TOUT2 *restrict y2
#define KF_PARAMS_OUT KF_TOUT *restrict y, KF_TOUT2 *restrict y2
#define KF_ARGS_OUT y, y2
#define KF_STORE(o, s) (y[kf_out_o(o)] = (KF_TOUT)KF_FINAL(s), y2[kf_out2_o(o)] = (KF_TOUT2)(s).i)

#endif
