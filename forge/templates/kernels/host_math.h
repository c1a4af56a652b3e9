/* ---- inline math (math=1): branch-free, vectorizable ---- */
static inline float kf_u2f(uint32_t u)
{
    union { uint32_t u; float f; } c;
    c.u = u;
    return c.f;
}
static inline uint32_t kf_f2u(float f)
{
    union { uint32_t u; float f; } c;
    c.f = f;
    return c.u;
}
/* expm1(r) for |r| <= ln2/2: r + r^2 P(r), P of degree 4 (the fit of exp's, 3e-9 of exp(r)) */
static inline float kf_expm1_poly(float r)
{
    float p = 1.3814539416e-03f;
    p = fmaf(p, r, 8.3687454462e-03f);
    p = fmaf(p, r, 4.1668388993e-02f);
    p = fmaf(p, r, 1.6666521132e-01f);
    p = fmaf(p, r, 4.9999994040e-01f);
    return fmaf(p, r * r, r);
}
/* exp(r) for |r| <= ln2/2: 1 + r + r^2 P(r) (a relative minimax fit, 3e-9) */
static inline float kf_exp_poly(float r)
{
    return kf_expm1_poly(r) + 1.0f;
}
/* clamped x (NaN stays NaN) -> t = 1.5 * 2^23 + n, n = round(x / ln2) in its low bits, and
 * r = x - n ln2, with ln2 in two parts so that r is exact enough for any n in range */
#define KF_EXP_REDUCE(xc, t, r)                                  \
    float t = fmaf(xc, 1.44269504088896341f, 0x1.8p23f);          \
    float n_ = t - 0x1.8p23f;                                    \
    float r = fmaf(n_, -0.693359375f, xc);                       \
    r = fmaf(n_, 2.12194440e-4f, r)
/* exp(x) for x <= 0 or NaN (softmax's x - max): 2^n = 2^(n+64) * 2^-64, the first product
 * exact, the second rounding once (to a denormal, or to 0 below exp(-104)) */
static inline float kf_expf_neg(float x)
{
    float xc = x < -104.0f ? -104.0f : x;
    KF_EXP_REDUCE(xc, t, r);
    float s = kf_u2f((kf_f2u(t) - 0x4B400000u + 191u) << 23);
    return kf_exp_poly(r) * s * 0x1p-64f;
}
/* exp(x) for any x: 2^n applied as 2^h * 2^(n-h), h = floor(n/2), so that both factors
 * are normal for n in [-150, 129] and the result (denormal, or overflow to inf) rounds once
 */
static inline float kf_expf(float x)
{
    float xc = x < -104.0f ? -104.0f : x;
    xc = xc > 89.0f ? 89.0f : xc; /* exp(89) > FLT_MAX */
    KF_EXP_REDUCE(xc, t, r);
    uint32_t n = kf_f2u(t) - 0x4B400000u;
    uint32_t h = (uint32_t)((int32_t)n >> 1);
    return kf_exp_poly(r) * kf_u2f((h + 127u) << 23) * kf_u2f((n - h + 127u) << 23);
}
/* expm1(x) = 2^n (expm1(r) + 1) - 1 = s expm1(r) + (s - 1), s - 1 exact; x clamped to [-30, 88]
 * (expm1 rounds to -1 below -17, s stays normal), exp itself above 88; +-0 and NaN stay. Worst
 * measured over every float: 1.2e-7 relative. */
static inline float kf_expm1f(float x)
{
    float xc = x < -30.0f ? -30.0f : x;
    xc = xc > 88.0f ? 88.0f : xc;
    KF_EXP_REDUCE(xc, t, r);
    float s = kf_u2f((kf_f2u(t) - 0x4B400000u + 127u) << 23);
    float y = fmaf(s, kf_expm1_poly(r), s - 1.0f);
    y = x > 88.0f ? kf_expf(x) : y;
    return x == 0.0f ? x : y;
}
/* 1 / (1 + exp(-z)) from e = exp(-|z|) <= 1, which cannot overflow: 1 / (1 + e) for z >= 0,
 * e / (1 + e) below */
static inline float kf_sigmoidf(float z)
{
    float e = kf_expf_neg(-fabsf(z));
    return (z >= 0.0f ? 1.0f : e) / (1.0f + e);
}
/* erf(x) = x P(x^2) / Q(x^2) for |x| <= 3.925 (a relative minimax fit, 2e-8); beyond, erf
 * rounds to +-1 in float, and the select drops whatever the rational gave there (NaN at
 * inf) */
static inline float kf_erff(float x)
{
    float a = fabsf(x), u = a * a;
    float p = 2.041971186e-06f;
    p = fmaf(p, u, 2.848067523e-04f);
    p = fmaf(p, u, 3.779555667e-03f);
    p = fmaf(p, u, 5.279011766e-02f);
    p = fmaf(p, u, 1.907826764e-01f);
    p = fmaf(p, u, 1.128379145e+00f);
    float q = 3.800398222e-05f;
    q = fmaf(q, u, 1.165198537e-03f);
    q = fmaf(q, u, 1.499733027e-02f);
    q = fmaf(q, u, 1.142570311e-01f);
    q = fmaf(q, u, 5.024094646e-01f);
    q = fmaf(q, u, 1.0f);
    float y = a * p / q;
    return copysignf(a > 3.925f ? 1.0f : y, x);
}
/* tanh(x) = x + x^3 Q(x^2) for |x| < 0.625 (a relative fit, 4e-9), else 1 - 2 / (exp(2|x|) + 1),
 * which rounds to 1 from |x| = 9.01 on; the sign put back (-0 stays -0, NaN stays NaN). Worst
 * measured: 1.4e-7 relative, next to the switch. */
static inline float kf_tanhf(float x)
{
    float a = fabsf(x), z = a * a;
    float q = -5.704985000e-03f;
    q = fmaf(q, z, 2.063908614e-02f);
    q = fmaf(q, z, -5.373971537e-02f);
    q = fmaf(q, z, 1.333144158e-01f);
    q = fmaf(q, z, -3.333328068e-01f);
    float small = fmaf(a * z, q, a);
    float big = 1.0f - 2.0f / (kf_expf(2.0f * a) + 1.0f);
    return copysignf(a < 0.625f ? small : big, x);
}
/* log(x) = e ln2 + log1p(f), x = 2^e (1 + f), 1 + f in [sqrt(1/2), sqrt(2)) (denormals scaled
 * by 2^23 first); log1p(f) = f - f^2/2 + f^3 P(f), P a relative fit (6e-9). Worst measured
 * over every float: 1.3e-7 relative. +-0 gives -inf, below 0 gives NaN, inf and NaN stay. */
static inline float kf_logf(float x)
{
    float sc = x < 0x1p-126f ? 0x1p23f : 1.0f, se = x < 0x1p-126f ? 23.0f : 0.0f;
    uint32_t t = kf_f2u(x * sc) - 0x3f3504f3u; /* the bits of sqrt(1/2) */
    float e = (float)((int32_t)t >> 23) - se;
    float f = kf_u2f((t & 0x007fffffu) + 0x3f3504f3u) - 1.0f, z = f * f;
    float p = -7.634461671e-02f;
    p = fmaf(p, f, 1.276156753e-01f);
    p = fmaf(p, f, -1.316019148e-01f);
    p = fmaf(p, f, 1.420176029e-01f);
    p = fmaf(p, f, -1.662335694e-01f);
    p = fmaf(p, f, 2.000122666e-01f);
    p = fmaf(p, f, -2.500081956e-01f);
    p = fmaf(p, f, 3.333333135e-01f);
    float y = fmaf(f * z, p, fmaf(-0.5f, z, f));
    y = fmaf(e, -2.12194440e-4f, y); /* ln2 in two parts, as KF_EXP_REDUCE */
    y = fmaf(e, 0.693359375f, y);
    y = x == 0.0f ? -INFINITY : y;
    y = x == INFINITY || x != x ? x : y;
    return x < 0.0f ? NAN : y;
}
/* log1p(x) = log(u) x / (u - 1), u = 1 + x rounded, which corrects for that rounding; x itself
 * where u rounds to 1 (-0 stays -0). Worst measured over every float: 2.3e-7 relative. */
static inline float kf_log1pf(float x)
{
    float u = 1.0f + x, d = u - 1.0f;
    float l = d == 0.0f ? x : kf_logf(u) * (x / d);
    l = x == INFINITY ? x : l;
    return x == -1.0f ? -INFINITY : l;
}
