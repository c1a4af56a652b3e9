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

int main(void)
{
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
