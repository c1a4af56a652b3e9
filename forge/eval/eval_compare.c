/* Comparing a candidate's output with eager's, element by element (eval_impl.h).
 *
 * The rule is common/match.h's (the one the plugin's first-use check and add_kernel use): floats
 * pass when |k - e| <= atol + rtol*|e|, with NaN exactly where eager has NaN and infinities
 * equal; integers and bools must be bit-identical. An
 * element that fails and still holds the poison bytes (where eager's bytes are different) counts
 * as poisoned: the kernel never wrote it. */
#include <math.h>
#include <string.h>

#include "common/match.h"
#include "forge/eval/eval_impl.h"

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

/* One float component: 1 if within tolerance (kf_match_value, the one rule); updates the error
 * maxima for finite pairs. */
static int float_ok(double k, double e, double atol, double rtol, ev_cmp *c, double *abs_err)
{
    int ok = kf_match_value(k, e, atol, rtol);
    if (isnan(e) || isnan(k) || isinf(e) || isinf(k)) {
        *abs_err = ok ? 0 : INFINITY;
        return ok;
    }
    double d = fabs(k - e);
    *abs_err = d;
    if (d > c->max_abs) c->max_abs = d;
    if (e != 0 && d / fabs(e) > c->max_rel) c->max_rel = d / fabs(e);
    return ok;
}

static int all_bytes(const unsigned char *p, int n, unsigned char v)
{
    for (int i = 0; i < n; i++)
        if (p[i] != v) return 0;
    return 1;
}

/* n elements of a common float type into doubles, one tight loop per type; 0 for other types. */
static int decode_block(int dtype, const unsigned char *p, int64_t n, double *out)
{
    switch (dtype) {
    case KF_F32:
        for (int64_t i = 0; i < n; i++) {
            float f;
            memcpy(&f, p + 4 * i, 4);
            out[i] = f;
        }
        return 1;
    case KF_F64: memcpy(out, p, (size_t)n * 8); return 1;
    case KF_BF16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            out[i] = kf_bf16_to_double(h);
        }
        return 1;
    case KF_F16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            out[i] = kf_half_to_double(h);
        }
        return 1;
    default: return 0;
    }
}

/* One element at `k` (kernel) vs `e` (eager); n names it in messages. */
static void compare_one(const kf_job_tensor *t, const unsigned char *k, const unsigned char *e,
                        int64_t n, int fl, int parts, int part_size, int es, double atol,
                        double rtol, ev_cmp *c)
{
    int ok = 1;
    double worst = 0;
    if (fl) {
        for (int p = 0; p < parts; p++) {
            double ae;
            if (!float_ok(kf_decode_value(t->dtype, k + p * part_size),
                          kf_decode_value(t->dtype, e + p * part_size), atol, rtol, c, &ae))
                ok = 0;
            if (ae > worst) worst = ae;
        }
    } else if (memcmp(k, e, (size_t)es) != 0) {
        ok = 0;
        worst = fabs(kf_decode_value(t->dtype, k) - kf_decode_value(t->dtype, e));
        if (worst > c->max_abs) c->max_abs = worst;
    }
    if (!ok) {
        if (c->bad++ == 0) {
            c->first_bad = n;
            c->first_got = kf_decode_value(t->dtype, k);
            c->first_exp = kf_decode_value(t->dtype, e);
        }
        if (c->worst_at < 0 || worst > c->worst_abs) c->worst_at = n, c->worst_abs = worst;
        if (all_bytes(k, es, EV_POISON) && !all_bytes(e, es, EV_POISON) && c->poisoned++ == 0)
            c->first_poisoned = n;
    }
    c->n++;
}

void kf_ev_compare(const kf_job_tensor *t, const unsigned char *got, const unsigned char *exp,
                   double atol, double rtol, ev_cmp *c)
{
    memset(c, 0, sizeof *c);
    c->first_bad = c->first_poisoned = c->worst_at = -1;
    int es = kf_dtype_size(t->dtype);
    int64_t numel = kf_job_tensor_numel(t);
    if (es <= 0 || numel <= 0) return;
    int fl = is_float(t->dtype);
    int parts = t->dtype == KF_C64 || t->dtype == KF_C128 ? 2 : 1;
    int part_size = es / parts;

    /* A dense tensor (its span holds exactly its elements: contiguous, channels_last, any
     * permutation) is compared in memory order, and blocks whose bytes equal eager's are skipped
     * whole: outputs of hundreds of MB are the common case here. */
    uint64_t span = 1;
    for (int d = 0; d < t->ndim; d++) span += (uint64_t)(t->sizes[d] - 1) * (uint64_t)t->strides[d];
    if (span == (uint64_t)numel) {
        const int64_t block = 512;
        for (int64_t b0 = 0; b0 < numel; b0 += block) {
            int64_t nb = numel - b0 < block ? numel - b0 : block;
            size_t off = (size_t)b0 * (size_t)es;
            if (!memcmp(got + off, exp + off, (size_t)nb * (size_t)es)) {
                c->n += nb;
                continue;
            }
            double kv[512], ev[512];
            int fast = decode_block(t->dtype, got + off, nb, kv) &&
                       decode_block(t->dtype, exp + off, nb, ev);
            for (int64_t i = 0; i < nb; i++) {
                /* the common case, finite and within tolerance, without the full bookkeeping */
                if (fast) {
                    double d = fabs(kv[i] - ev[i]), ae = fabs(ev[i]);
                    if (isfinite(kv[i]) && isfinite(ev[i]) && d <= atol + rtol * ae) {
                        if (d > c->max_abs) c->max_abs = d;
                        if (d > c->max_rel * ae && ae != 0) c->max_rel = d / ae;
                        c->n++;
                        continue;
                    }
                }
                int64_t n = b0 + i;
                compare_one(t, got + (size_t)n * es, exp + (size_t)n * es, n, fl, parts, part_size,
                            es, atol, rtol, c);
            }
        }
        return;
    }
    int64_t idx[KF_MAX_DIMS] = {0};
    uint64_t off = 0; /* in elements */
    for (int64_t n = 0; n < numel; n++) {
        compare_one(t, got + off * (uint64_t)es, exp + off * (uint64_t)es, n, fl, parts, part_size,
                    es, atol, rtol, c);
        /* next index, row-major */
        for (int d = t->ndim - 1; d >= 0; d--) {
            off += (uint64_t)t->strides[d];
            if (++idx[d] < t->sizes[d]) break;
            off -= (uint64_t)t->strides[d] * (uint64_t)t->sizes[d];
            idx[d] = 0;
        }
    }
}
