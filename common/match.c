/* The eager-match rule (match.h). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "common/match.h"

double kf_half_to_double(uint16_t h)
{
    /* bit manipulation into a float: this runs once per element of every output */
    uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 0x1f, m = h & 0x3ff, u;
    if (e == 31) {
        u = sign | 0x7f800000u | (m << 13); /* inf / nan */
    } else if (e == 0) {
        float v = (float)m * 5.9604644775390625e-8f; /* subnormal: m * 2^-24, exact */
        return sign ? -(double)v : v;
    } else {
        u = sign | ((e + 112) << 23) | (m << 13);
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

double kf_bf16_to_double(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* float8 e4m3fn: bias 7, no infinities, S.1111.111 is NaN */
static double e4m3_to_double(uint8_t b)
{
    int s = b >> 7, e = (b >> 3) & 0xf, m = b & 7;
    double v;
    if (e == 15 && m == 7)
        v = NAN;
    else if (e == 0)
        v = ldexp(m, -9);
    else
        v = ldexp(m | 8, e - 10);
    return s ? -v : v;
}

/* float8 e5m2: IEEE-like, bias 15 */
static double e5m2_to_double(uint8_t b)
{
    int s = b >> 7, e = (b >> 2) & 0x1f, m = b & 3;
    double v;
    if (e == 31)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp(m, -16);
    else
        v = ldexp(m | 4, e - 17);
    return s ? -v : v;
}

double kf_decode_value(int dtype, const unsigned char *p)
{
    union {
        float f;
        double d;
        int8_t i8;
        uint8_t u8;
        int16_t i16;
        uint16_t u16;
        int32_t i32;
        int64_t i64;
    } u;
    int es = kf_dtype_size(dtype);
    if (dtype == KF_C64) es = 4;
    if (dtype == KF_C128) es = 8;
    if (es <= 0 || es > 8) return NAN;
    memcpy(&u, p, (size_t)es);
    switch (dtype) {
    case KF_F32: case KF_C64: return u.f;
    case KF_F64: case KF_C128: return u.d;
    case KF_F16: return kf_half_to_double(u.u16);
    case KF_BF16: return kf_bf16_to_double(u.u16);
    case KF_F8E4M3: return e4m3_to_double(u.u8);
    case KF_F8E5M2: return e5m2_to_double(u.u8);
    case KF_I8: return u.i8;
    case KF_U8: return u.u8;
    case KF_BOOL: return u.u8;
    case KF_I16: return u.i16;
    case KF_I32: return u.i32;
    case KF_I64: return (double)u.i64;
    default: return NAN;
    }
}


int kf_match_value(double k, double e, double atol, double rtol)
{
    if (isnan(e) || isnan(k)) return isnan(e) && isnan(k);
    if (isinf(e) || isinf(k)) return k == e;
    return fabs(k - e) <= atol + rtol * fabs(e);
}

static int is_float(int dtype)
{
    switch (dtype) {
    case KF_F32: case KF_F64: case KF_F16: case KF_BF16: case KF_F8E4M3: case KF_F8E5M2:
    case KF_C64: case KF_C128:
        return 1;
    default:
        return 0;
    }
}

/* The common case of a float element, inline: both finite and within the tolerance (a NaN or
 * an infinity fails the test and takes the general path). Keeps r's maxima as the general
 * path does. */
static inline int fast_match(double kv, double ev, double atol, double rtol, kf_match_result *r)
{
    double d = fabs(kv - ev), ae = fabs(ev);
    if (!(ae <= DBL_MAX && d <= atol + rtol * ae)) return 0;
    if (d > r->max_abs) r->max_abs = d;
    if (ae != 0 && d > r->max_rel * ae) r->max_rel = d / ae;
    return 1;
}

/* The first-use check runs this on every output element of a served kernel while the model
 * waits: the dense float dtypes decode inline, one branch per matching element. */
static int64_t skip_matching(int dtype, const unsigned char *k, const unsigned char *e, int64_t i,
                             int64_t n, double atol, double rtol, kf_match_result *r)
{
    for (; i < n; i++) {
        double kv, ev;
        if (dtype == KF_F32) {
            float a, b;
            memcpy(&a, k + (size_t)i * 4, 4);
            memcpy(&b, e + (size_t)i * 4, 4);
            kv = a, ev = b;
        } else if (dtype == KF_F64) {
            memcpy(&kv, k + (size_t)i * 8, 8);
            memcpy(&ev, e + (size_t)i * 8, 8);
        } else {
            uint16_t a, b;
            memcpy(&a, k + (size_t)i * 2, 2);
            memcpy(&b, e + (size_t)i * 2, 2);
            if (a == b) continue;
            kv = dtype == KF_BF16 ? kf_bf16_to_double(a) : kf_half_to_double(a);
            ev = dtype == KF_BF16 ? kf_bf16_to_double(b) : kf_half_to_double(b);
        }
        if (!fast_match(kv, ev, atol, rtol, r)) break;
    }
    return i;
}

int64_t kf_match_dense(int dtype, const void *got, const void *want, int64_t n, double atol,
                       double rtol, kf_match_result *r)
{
    memset(r, 0, sizeof *r);
    r->first_bad = -1;
    int es = kf_dtype_size(dtype);
    if (es <= 0 || n < 0 || !got || !want) return -1;
    const unsigned char *k = got, *e = want;
    int parts = dtype == KF_C64 || dtype == KF_C128 ? 2 : 1, ps = es / parts;
    const int fast = dtype == KF_F32 || dtype == KF_F64 || dtype == KF_F16 || dtype == KF_BF16;
    for (int64_t i = 0; i < n; i++) {
        if (fast && (i = skip_matching(dtype, k, e, i, n, atol, rtol, r)) >= n) break;
        const unsigned char *ki = k + (size_t)i * (size_t)es, *ei = e + (size_t)i * (size_t)es;
        if (!memcmp(ki, ei, (size_t)es)) continue;
        int ok = 1;
        if (is_float(dtype)) {
            for (int p = 0; p < parts; p++) {
                double kv = kf_decode_value(dtype, ki + p * ps), ev = kf_decode_value(dtype, ei + p * ps);
                if (!kf_match_value(kv, ev, atol, rtol)) ok = 0;
                if (isfinite(kv) && isfinite(ev)) {
                    double d = fabs(kv - ev);
                    if (d > r->max_abs) r->max_abs = d;
                    if (ev != 0 && d / fabs(ev) > r->max_rel) r->max_rel = d / fabs(ev);
                } else if (!kf_match_value(kv, ev, atol, rtol)) {
                    r->nonfinite_bad++;
                }
            }
        } else {
            ok = 0;
            double d = fabs(kf_decode_value(dtype, ki) - kf_decode_value(dtype, ei));
            if (d > r->max_abs) r->max_abs = d;
        }
        if (!ok && r->bad++ == 0) r->first_bad = i;
    }
    return r->bad;
}
