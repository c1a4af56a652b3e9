/* What a render prints before forge/templates/kernels/host_pool.c, taken from real renders (the
 * shared pieces as #includes), so that the body compiles alone: 2 variants, chosen to take the
 * #if branches of the body (tests/python/test_template_bodies.py compiles it once per variant,
 * -DKF_CHECK_VARIANT=0..KF_CHECK_VARIANTS-1). */
#define KF_CHECK_VARIANTS 2
#if KF_CHECK_VARIANT == 0
/* Kernel Forge builtin template host_max_pool2d for aten::max_pool2d_with_indices; knobs: omp=0 */
#include <math.h>
#include <stdint.h>

#define KF_OMP 0
/* inputs: self; outputs: values, indices */
typedef float KF_T;
#define KF_LD(v) (v)
#define KF_ST(v) (v)
#define KF_CL 0
#define KF_N 2LL
#define KF_C 3LL
#define KF_H 7LL
#define KF_W 9LL
#define KF_OH 4LL
#define KF_OW 5LL
#define KF_KH 3LL
#define KF_KW 3LL
#define KF_SH 2LL
#define KF_SW 2LL
#define KF_PH 1LL
#define KF_PW 1LL
#define KF_DH 1LL
#define KF_DW 1LL

#elif KF_CHECK_VARIANT == 1
/* Kernel Forge builtin template host_max_pool2d for aten::max_pool2d_with_indices; knobs: omp=1 */
#include <math.h>
#include <stdint.h>

#define KF_OMP 1
#define KF_PW_FN static inline
KF_PW_FN unsigned kf_pw_fbits(float f)
{
    union { float f; unsigned u; } c;
    c.f = f;
    return c.u;
}
KF_PW_FN float kf_pw_bitsf(unsigned u)
{
    union { float f; unsigned u; } c;
    c.u = u;
    return c.f;
}
#define KF_PW_INF HUGE_VAL
#define KF_PW_NAN ((double)NAN)
typedef float kf_ct;
#define KF_CT_F64 0
#define KF_CT_INT 0
#define KF_P_BOOL 0
#include "pointwise_math.h"
/* inputs: self; outputs: values, indices */
typedef uint16_t KF_T;
#define KF_LD(v) kf_pw_bf2f(v)
#define KF_ST(v) kf_pw_f2bf(v)
#define KF_CL 1
#define KF_N 2LL
#define KF_C 16LL
#define KF_H 13LL
#define KF_W 13LL
#define KF_OH 7LL
#define KF_OW 7LL
#define KF_KH 3LL
#define KF_KW 3LL
#define KF_SH 2LL
#define KF_SW 2LL
#define KF_PH 1LL
#define KF_PW 1LL
#define KF_DH 1LL
#define KF_DW 1LL

#endif
