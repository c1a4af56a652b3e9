/* The eager-match rule (common/match.c): the one comparison the worker, the first-use check and
 * add_kernel use. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "common/match.h"
#include "tests/c/check.h"

static int64_t f32(const float *k, const float *e, int n, double atol, double rtol, kf_match_result *r)
{
    return kf_match_dense(KF_F32, k, e, n, atol, rtol, r);
}

/* The rule element by element, as match.h states it: kf_match_dense's fast paths must agree. */
static void reference(int dtype, const unsigned char *k, const unsigned char *e, int n, int es,
                      double atol, double rtol, kf_match_result *r)
{
    memset(r, 0, sizeof *r);
    r->first_bad = -1;
    for (int i = 0; i < n; i++) {
        if (!memcmp(k + i * es, e + i * es, (size_t)es)) continue;
        double kv = kf_decode_value(dtype, k + i * es), ev = kf_decode_value(dtype, e + i * es);
        int ok = kf_match_value(kv, ev, atol, rtol);
        if (isfinite(kv) && isfinite(ev)) {
            double d = fabs(kv - ev);
            if (d > r->max_abs) r->max_abs = d;
            if (ev != 0 && d / fabs(ev) > r->max_rel) r->max_rel = d / fabs(ev);
        } else if (!ok) {
            r->nonfinite_bad++;
        }
        if (!ok && r->bad++ == 0) r->first_bad = i;
    }
}

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

/* Random bit patterns (NaN, infinities, subnormals, signed zeros among them), kernels off by a
 * few low bits, or by anything. */
static void random_agreement(void)
{
    static const int dtypes[4] = {KF_F32, KF_F64, KF_F16, KF_BF16}, sizes[4] = {4, 8, 2, 2};
    enum { N = 4096 };
    static unsigned char k[N * 8], e[N * 8];
    uint64_t seed = 0x9e3779b97f4a7c15u;
    for (int t = 0; t < 4; t++)
        for (int round = 0; round < 50; round++) {
            const int es = sizes[t];
            for (int i = 0; i < N; i++) {
                uint64_t v = next(&seed), w = v, how = next(&seed) % 8;
                if (how < 5) w = v ^ (next(&seed) & 7); /* a few ulps off */
                if (how == 5) w = next(&seed);
                memcpy(e + i * es, &v, (size_t)es);
                memcpy(k + i * es, &w, (size_t)es);
            }
            const double atol = round % 2 ? 1e-3 : 0, rtol = round % 3 ? 1e-2 : 1e-6;
            kf_match_result got, want;
            CHECK_EQ_INT(kf_match_dense(dtypes[t], k, e, N, atol, rtol, &got),
                         (reference(dtypes[t], k, e, N, es, atol, rtol, &want), want.bad));
            CHECK_EQ_INT(got.first_bad, want.first_bad);
            CHECK_EQ_INT(got.nonfinite_bad, want.nonfinite_bad);
            CHECK(got.max_abs == want.max_abs);
            CHECK(got.max_rel == want.max_rel ||
                  fabs(got.max_rel - want.max_rel) <= 1e-12 * want.max_rel);
        }
}

int main(void)
{
    random_agreement();
    kf_match_result r;
    /* within atol + rtol * |e|, and just outside it */
    float e[4] = {1.0f, -2.0f, 100.0f, 0.0f}, k[4] = {1.0f, -2.0f, 100.0f, 0.0f};
    CHECK_EQ_INT(f32(k, e, 4, 1e-5, 1e-5, &r), 0);
    k[2] = 100.0009f; /* |d| ~ 9e-4 <= 1e-5 + 1e-5 * 100 = 1.01e-3 */
    CHECK_EQ_INT(f32(k, e, 4, 1e-5, 1e-5, &r), 0);
    CHECK(r.max_abs > 8e-4 && r.max_abs < 1e-3 && r.max_rel > 8e-6);
    k[2] = 100.002f;
    CHECK_EQ_INT(f32(k, e, 4, 1e-5, 1e-5, &r), 1);
    CHECK_EQ_INT(r.first_bad, 2);
    CHECK_EQ_INT(r.nonfinite_bad, 0);
    k[2] = 100.0f;
    /* NaN only where eager has NaN; infinities equal with their sign */
    e[0] = k[0] = NAN;
    CHECK_EQ_INT(f32(k, e, 4, 0, 0, &r), 0);
    k[0] = 1.0f;
    CHECK_EQ_INT(f32(k, e, 4, 1, 1, &r), 1);
    CHECK_EQ_INT(r.nonfinite_bad, 1);
    e[0] = 1.0f, k[1] = NAN;
    CHECK_EQ_INT(f32(k, e, 4, 1, 1, &r), 1);
    k[1] = -2.0f, e[3] = k[3] = INFINITY;
    CHECK_EQ_INT(f32(k, e, 4, 0, 0, &r), 0);
    k[3] = -INFINITY;
    CHECK_EQ_INT(f32(k, e, 4, 1e30, 1e30, &r), 1);
    k[3] = 3e38f;
    CHECK_EQ_INT(f32(k, e, 4, 1e30, 1e30, &r), 1);
    CHECK(kf_match_value(1.0, 1.0 + 1e-6, 1e-5, 0) && !kf_match_value(1.0, 1.1, 1e-5, 1e-5));
    /* integers and bools exact, whatever the tolerance */
    int32_t ia[3] = {1, 2, 3}, ib[3] = {1, 2, 4};
    CHECK_EQ_INT(kf_match_dense(KF_I32, ia, ia, 3, 1e9, 1e9, &r), 0);
    CHECK_EQ_INT(kf_match_dense(KF_I32, ib, ia, 3, 1e9, 1e9, &r), 1);
    CHECK_EQ_INT(r.first_bad, 2);
    /* half types decoded exactly: bf16 1.0 vs 1.0078125 (one ulp) at bf16's 1e-2 */
    uint16_t b1[1] = {0x3f80}, b2[1] = {0x3f81};
    CHECK_EQ_INT(kf_match_dense(KF_BF16, b2, b1, 1, 1e-2, 1e-2, &r), 0);
    CHECK_EQ_INT(kf_match_dense(KF_BF16, b2, b1, 1, 1e-3, 1e-3, &r), 1);
    uint16_t h1[1] = {0x3c00}, h2[1] = {0x3c01}; /* f16 1.0 and 1.0009765625 */
    CHECK_EQ_INT(kf_match_dense(KF_F16, h2, h1, 1, 1e-3, 1e-3, &r), 0);
    CHECK(fabs(r.max_abs - 0.0009765625) < 1e-12);
    /* bad arguments */
    CHECK_EQ_INT(kf_match_dense(KF_DTYPE_UNKNOWN, ia, ia, 3, 0, 0, &r), -1);
    CHECK_EQ_INT(kf_match_dense(KF_I32, NULL, ia, 3, 0, 0, &r), -1);
    CHECK_EQ_INT(kf_match_dense(KF_I32, ia, ia, 0, 0, 0, &r), 0);
    return check_done("match");
}
