/* ---- the pointwise engine's element helpers (forge/templates/pointwise_ops.c) ----
 * Neutral C: it compiles as host C11 and as CUDA C++ under NVRTC. The render defines before it:
 * KF_PW_FN (static inline | __device__ __forceinline__), kf_pw_fbits / kf_pw_bitsf (float <->
 * bits), KF_PW_INF / KF_PW_NAN, kf_ct (the compute type), KF_CT_F64 (1: double math, else
 * float), KF_CT_INT (1: integer compute in long long) and KF_P_BOOL (the promoted dtype is
 * bool). Math is the precise libm / CUDA one, as eager computes it, except under KF_FAST_MATH (a
 * host template's math knob): host_math.h's exp, expm1, tanh, erf, log and log1p,
 * each within the bound it states. */

#if KF_CT_F64
#define kf_exp(x) exp(x)
#define kf_exp2(x) exp2(x)
#define kf_expm1(x) expm1(x)
#define kf_log(x) log(x)
#define kf_log1p(x) log1p(x)
#define kf_log2(x) log2(x)
#define kf_sqrt(x) sqrt(x)
#define kf_sin(x) sin(x)
#define kf_cos(x) cos(x)
#define kf_tanh(x) tanh(x)
#define kf_erf(x) erf(x)
#define kf_fabs(x) fabs(x)
#define kf_trunc(x) trunc(x)
#define kf_floor(x) floor(x)
#define kf_fmod(x, y) fmod(x, y)
#define kf_pow(x, y) pow(x, y)
#define kf_copysign(x, y) copysign(x, y)
#else
#ifdef KF_FAST_MATH /* host_math.h's vectorizable forms (the host templates' math knob) */
#define kf_exp(x) kf_expf(x)
#define kf_tanh(x) kf_tanhf(x)
#define kf_erf(x) kf_erff(x)
#define kf_log(x) kf_logf(x)
#define kf_log1p(x) kf_log1pf(x)
#define kf_expm1(x) kf_expm1f(x)
#else
#define kf_exp(x) expf(x)
#define kf_tanh(x) tanhf(x)
#define kf_erf(x) erff(x)
#define kf_log(x) logf(x)
#define kf_log1p(x) log1pf(x)
#define kf_expm1(x) expm1f(x)
#endif
#define kf_exp2(x) exp2f(x)
#define kf_log2(x) log2f(x)
#define kf_sqrt(x) sqrtf(x)
#define kf_sin(x) sinf(x)
#define kf_cos(x) cosf(x)
#define kf_fabs(x) fabsf(x)
#define kf_trunc(x) truncf(x)
#define kf_floor(x) floorf(x)
#define kf_fmod(x, y) fmodf(x, y)
#define kf_pow(x, y) powf(x, y)
#define kf_copysign(x, y) copysignf(x, y)
#endif

/* integer + - * wrap like eager's (two's complement), without C's signed-overflow UB */
#if KF_CT_INT
#define KF_ADD(x, y) ((kf_ct)((unsigned long long)(x) + (unsigned long long)(y)))
#define KF_SUB(x, y) ((kf_ct)((unsigned long long)(x) - (unsigned long long)(y)))
#define KF_MUL(x, y) ((kf_ct)((unsigned long long)(x) * (unsigned long long)(y)))
#define KF_ISNAN(x) 0
#else
#define KF_ADD(x, y) ((x) + (y))
#define KF_SUB(x, y) ((x) - (y))
#define KF_MUL(x, y) ((x) * (y))
#define KF_ISNAN(x) ((x) != (x))
#endif

/* maximum / minimum: NaN in either propagates (eager's vectorized and scalar paths agree) */
KF_PW_FN kf_ct kf_pw_max(kf_ct a, kf_ct b)
{
    return KF_ISNAN(a) ? a : KF_ISNAN(b) ? b : a < b ? b : a;
}
KF_PW_FN kf_ct kf_pw_min(kf_ct a, kf_ct b)
{
    return KF_ISNAN(a) ? a : KF_ISNAN(b) ? b : b < a ? b : a;
}
/* clamp: NaN input stays, a NaN bound gives NaN, min above max gives max (eager) */
KF_PW_FN kf_ct kf_pw_clamp(kf_ct v, int has_lo, kf_ct lo, int has_hi, kf_ct hi)
{
    if (KF_ISNAN(v)) return v;
    if (has_lo) v = kf_pw_max(v, lo);
    if (has_hi) v = kf_pw_min(v, hi);
    return v;
}
/* eager's div_floor_floating: floor of the quotient with fmod's exact remainder */
KF_PW_FN kf_ct kf_pw_div_floor(kf_ct a, kf_ct b)
{
    if (b == 0) return a / b;
    kf_ct mod = kf_fmod(a, b);
    kf_ct div = (a - mod) / b;
    if (mod != 0 && (b < 0) != (mod < 0)) div -= 1;
    if (div == 0) return kf_copysign((kf_ct)0, a / b);
    kf_ct fl = kf_floor(div);
    if (div - fl > (kf_ct)0.5) fl += 1;
    return fl;
}
/* eager's lerp: two forms around weight 0.5, so that both ends are exact */
KF_PW_FN kf_ct kf_pw_lerp(kf_ct a, kf_ct b, kf_ct w)
{
    return kf_fabs(w) < (kf_ct)0.5 ? a + w * (b - a) : b - (b - a) * ((kf_ct)1 - w);
}

/* ---- storage conversions (host: f16/bf16 are raw 16-bit patterns; rounding to nearest even,
 * as torch's Half / BFloat16 do; NaN becomes the canonical quiet NaN). Branch-free, each case
 * computed and picked by a mask: a loop that converts then vectorizes (with a branch, gcc kept
 * a bf16 chain's row loop scalar, about 2x slower). ---- */
KF_PW_FN float kf_pw_h2f(unsigned h)
{
    unsigned s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    unsigned normal = s | ((e + 112u) << 23) | (m << 13);
    unsigned infnan = s | 0x7f800000u | (m << 13);
    unsigned sub = s | kf_pw_fbits((float)m * 5.9604644775390625e-8f); /* m 2^-24, exact */
    unsigned mi = 0u - (unsigned)(e == 0x1fu), mz = 0u - (unsigned)(e == 0u);
    return kf_pw_bitsf((normal & ~(mi | mz)) | (infnan & mi) | (sub & mz));
}
KF_PW_FN unsigned short kf_pw_f2h(float f)
{
    unsigned x = kf_pw_fbits(f), s = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
    unsigned h = (((a >> 23) - 112u) << 10) | ((a & 0x7fffffu) >> 13), rem = a & 0x1fffu;
    h += (unsigned)(rem > 0x1000u) | ((unsigned)(rem == 0x1000u) & h & 1u);
    /* a half subnormal: round(|f| 2^24), ties to even (0 in the other lanes: no conversion of
     * an out-of-range float) */
    unsigned ms = 0u - (unsigned)(a < 0x38800000u);
    float v = kf_pw_bitsf(a & ms) * 16777216.0f;
    v = (v + 12582912.0f) - 12582912.0f;
    unsigned mi = 0u - (unsigned)(a >= 0x477ff000u); /* 65520 and up: inf */
    unsigned mn = 0u - (unsigned)(a > 0x7f800000u);
    unsigned r = (h & ~(ms | mi)) | ((unsigned)v & ms) | (0x7c00u & mi);
    return (unsigned short)(s | (r & ~mn) | (0x7e00u & mn));
}
KF_PW_FN float kf_pw_bf2f(unsigned h) { return kf_pw_bitsf(h << 16); }
KF_PW_FN unsigned short kf_pw_f2bf(float f)
{
    unsigned x = kf_pw_fbits(f);
    unsigned r = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    unsigned mn = 0u - (unsigned)((x & 0x7fffffffu) > 0x7f800000u);
    return (unsigned short)((r & ~mn) | (0x7fc0u & mn));
}
/* a float rounded to f16 / bf16 and back (an operand promoted to a narrower type) */
KF_PW_FN float kf_pw_rnd_f16(float f) { return kf_pw_h2f(kf_pw_f2h(f)); }
KF_PW_FN float kf_pw_rnd_bf16(float f) { return kf_pw_bf2f(kf_pw_f2bf(f)); }
/* pow(x, e) for a compile-time exponent: eager's special cases, else pow. x^3 and x^-2 take
 * x * x rounded as eager rounds it (r, KF_PW_PROD_RND: 1 to f16, 2 to bf16, 0 not): eager
 * multiplies in the storage type there (BFloat16 on CPU and CUDA, Half on CUDA), not in float */
KF_PW_FN kf_ct kf_pw_pow_scalar(kf_ct x, kf_ct e, int r)
{
    kf_ct x2 = x * x;
    if (r == 1) x2 = (kf_ct)kf_pw_rnd_f16((float)x2);
    if (r == 2) x2 = (kf_ct)kf_pw_rnd_bf16((float)x2);
    return e == 0      ? (kf_ct)1
           : e == 1    ? x
           : e == 2    ? x * x
           : e == 3    ? x2 * x
           : e == 0.5  ? kf_sqrt(x)
           : e == -0.5 ? (kf_ct)1 / kf_sqrt(x)
           : e == -1   ? (kf_ct)1 / x
           : e == -2   ? (kf_ct)1 / x2
                       : kf_pow(x, e);
}
/* neg / abs: float sign flips (NaN and -0 as eager), integers wrap */
#if KF_CT_INT
#define KF_NEG(x) KF_SUB((kf_ct)0, x)
#define KF_ABS(x) ((x) < 0 ? KF_SUB((kf_ct)0, x) : (x))
#else
#define KF_NEG(x) (-(x))
#define KF_ABS(x) kf_fabs(x)
#endif
