/* The generic reductions and gathers (forge/templates/reduce_ops.c, gather_ops.c): host renders
 * (host_reduce, host_gather) compiled with the host backend and run against an independent
 * reference in double that walks logical coordinates (not the plan's merged runs): dims lists,
 * negative dims, keepdim, dtype=, all dims, permuted and expanded inputs, NaN/Inf, integers,
 * index outputs; an out-of-range index makes the host gather decline (KF_KERNEL_LATER). CUDA
 * renders (cuda_reduce_generic, cuda_gather) of the float cases are compiled with NVRTC for
 * sm_90 when NVRTC is there (not run: no GPU here). Outputs are poisoned before each launch and
 * inputs must come back unchanged. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/c/check.h"
#include "tests/c/cuda_template_test.h"
#include "tests/c/job_sig_build.h"
#include "compile/compiler.h"
#include "compile/source_check.h"
#include "forge/templates/template.h"

static kf_compiler_i cc;

static int dsize(int dt)
{
    switch (dt) {
    case KF_F64: case KF_I64: return 8;
    case KF_F32: case KF_I32: return 4;
    case KF_F16: case KF_BF16: case KF_I16: return 2;
    default: return 1;
    }
}

static double load(const void *p, int dt, int64_t i)
{
    switch (dt) {
    case KF_F32: return ((const float *)p)[i];
    case KF_F64: return ((const double *)p)[i];
    case KF_I8: return ((const int8_t *)p)[i];
    case KF_U8: return ((const uint8_t *)p)[i];
    case KF_I16: return ((const int16_t *)p)[i];
    case KF_I32: return ((const int32_t *)p)[i];
    case KF_I64: return (double)((const int64_t *)p)[i];
    case KF_BOOL: return ((const _Bool *)p)[i];
    case KF_F16: case KF_BF16: return ((const uint16_t *)p)[i];
    default: return 0;
    }
}

static void store(void *p, int dt, int64_t i, double v)
{
    switch (dt) {
    case KF_F32: ((float *)p)[i] = (float)v; break;
    case KF_F64: ((double *)p)[i] = v; break;
    case KF_I8: ((int8_t *)p)[i] = (int8_t)v; break;
    case KF_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case KF_I16: ((int16_t *)p)[i] = (int16_t)v; break;
    case KF_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case KF_I64: ((int64_t *)p)[i] = (int64_t)v; break;
    case KF_BOOL: ((_Bool *)p)[i] = v != 0; break;
    case KF_F16: case KF_BF16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    default: break;
    }
}

static uint64_t rs = 0x1234567u;
static double rnd(void)
{
    rs = rs * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rs >> 11) * (1.0 / 9007199254740992.0);
}

static kf_job_tensor tens(int dt, int nd, const int64_t *sizes, const int64_t *strides)
{
    kf_job_tensor t = sig_tensor(dt, nd, sizes, 0, 0);
    if (strides)
        for (int d = 0; d < nd; d++) t.strides[d] = strides[d];
    return t;
}

static int64_t span(const kf_job_tensor *t)
{
    int64_t s = 1;
    for (int d = 0; d < t->ndim; d++) s += (t->sizes[d] - 1) * t->strides[d];
    return s;
}

/* ---- reductions: the case and its reference ---- */

typedef struct rcase {
    char label[96];
    kf_job_sig sig;
    int kind; /* as the op's name says */
    unsigned red;
    int flat, keep;
    double p, corr;
    int special; /* NaN / Inf in the data */
} rcase;

enum { R_SUM, R_PROD, R_MEAN, R_AMAX, R_AMIN, R_MAXD, R_MIND, R_ARGMAX, R_ARGMIN, R_VAR, R_STD,
       R_VARMEAN, R_NORM, R_LSE };

#define MAX_RCASES 64
static rcase rcases[MAX_RCASES];
static int n_rcases;

/* op on x over dims (n_dims of them; -1: the dim argument is None; -2: no dim argument) */
static rcase *rc_add(const char *label, const char *op, int kind, kf_job_tensor x, int n_dims,
                     const int64_t *dims, int keep, int out_dt, int out2_dt)
{
    rcase *c = &rcases[n_rcases++];
    memset(c, 0, sizeof *c);
    snprintf(c->label, sizeof c->label, "%s", label);
    c->kind = kind;
    c->keep = keep;
    kf_job_sig s = sig_of(op);
    s.n_in = 1;
    s.in[0] = x;
    int nd = x.ndim;
    if (n_dims == -2 || n_dims == -1) {
        c->red = (1u << nd) - 1;
        c->flat = kind == R_ARGMAX || kind == R_ARGMIN;
        if (n_dims == -1) sig_add_scalar(&s, "dim", 'n');
    } else if (kind == R_PROD || kind == R_MAXD || kind == R_MIND || kind == R_ARGMAX ||
               kind == R_ARGMIN) {
        sig_add_scalar(&s, "dim", 'i')->i = dims[0];
        c->red = 1u << (dims[0] < 0 ? dims[0] + nd : dims[0]);
    } else {
        kf_job_scalar *l = sig_add_scalar(&s, "dim", 'l');
        l->n = n_dims;
        for (int k = 0; k < n_dims; k++) {
            l->v[k] = dims[k];
            c->red |= 1u << (dims[k] < 0 ? dims[k] + nd : dims[k]);
        }
        if (n_dims == 0) c->red = (1u << nd) - 1;
    }
    if (n_dims != -2 || kind == R_ARGMAX) sig_add_scalar(&s, "keepdim", 'b')->i = keep;
    else c->keep = 0;
    int64_t os[KF_MAX_DIMS];
    int on = 0;
    for (int d = 0; d < nd; d++) {
        int r = c->red >> d & 1u;
        if (c->flat) {
            if (keep) os[on++] = 1;
        } else if (!r || c->keep) {
            os[on++] = r ? 1 : x.sizes[d];
        }
    }
    s.n_out = out2_dt ? 2 : 1;
    s.out[0] = sig_tensor(out_dt, on, os, 0, 0);
    if (out2_dt) s.out[1] = sig_tensor(out2_dt, on, os, 0, 0);
    c->sig = s;
    return c;
}

/* dtype=None, or dtype= the output's (its c10::ScalarType code) */
static void add_dtype_arg(rcase *c, int given)
{
    kf_job_scalar *d = sig_add_scalar(&c->sig, "dtype", given ? 'i' : 'n');
    int dt = c->sig.out[0].dtype;
    d->i = !given ? 0 : dt == KF_F64 ? 7 : dt == KF_F32 ? 6 : dt == KF_I32 ? 3 : 4;
}

/* the reference of output element `oi` (its flat index in the output's logical order) */
static void rc_ref(const rcase *c, const void *x, int64_t oi, double *v, double *v2)
{
    const kf_job_tensor *t = &c->sig.in[0];
    int nd = t->ndim;
    int64_t kc[KF_MAX_DIMS] = {0};
    /* the kept coordinates from oi, last dim fastest */
    int64_t rest = oi;
    for (int d = nd - 1; d >= 0; d--)
        if (!(c->red >> d & 1u)) {
            kc[d] = rest % t->sizes[d];
            rest /= t->sizes[d];
        }
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        if (c->red >> d & 1u) n *= t->sizes[d];
    double *vals = malloc((size_t)n * sizeof(double));
    for (int64_t r = 0; r < n; r++) {
        int64_t cc[KF_MAX_DIMS], q = r, off = 0;
        memcpy(cc, kc, sizeof cc);
        for (int d = nd - 1; d >= 0; d--)
            if (c->red >> d & 1u) {
                cc[d] = q % t->sizes[d];
                q /= t->sizes[d];
            }
        for (int d = 0; d < nd; d++) off += cc[d] * t->strides[d];
        vals[r] = load(x, t->dtype, off);
    }
    double a = 0, m = 0;
    int64_t best = 0;
    switch (c->kind) {
    case R_SUM: case R_MEAN:
        for (int64_t r = 0; r < n; r++) a += vals[r];
        if (c->kind == R_MEAN) a /= (double)n;
        break;
    case R_PROD:
        a = 1;
        for (int64_t r = 0; r < n; r++) a *= vals[r];
        break;
    case R_AMAX: case R_AMIN: case R_MAXD: case R_MIND: case R_ARGMAX: case R_ARGMIN: {
        int mx = c->kind == R_AMAX || c->kind == R_MAXD || c->kind == R_ARGMAX;
        for (int64_t r = 1; r < n; r++) {
            if (isnan(vals[best])) break;
            if (isnan(vals[r]) || (mx ? vals[r] > vals[best] : vals[r] < vals[best])) best = r;
        }
        a = vals[best];
        break;
    }
    case R_VAR: case R_STD: case R_VARMEAN: {
        for (int64_t r = 0; r < n; r++) m += vals[r];
        m /= (double)n;
        for (int64_t r = 0; r < n; r++) a += (vals[r] - m) * (vals[r] - m);
        double dv = (double)n - c->corr;
        a /= dv > 0 ? dv : 0;
        if (c->kind == R_STD) a = sqrt(a);
        break;
    }
    case R_NORM:
        if (isinf(c->p)) {
            a = c->p > 0 ? 0 : INFINITY;
            for (int64_t r = 0; r < n; r++) {
                double f = fabs(vals[r]);
                if (isnan(f) || isnan(a)) a = NAN;
                else a = c->p > 0 ? fmax(a, f) : fmin(a, f);
            }
        } else if (c->p == 0) {
            for (int64_t r = 0; r < n; r++) a += vals[r] != 0;
        } else {
            for (int64_t r = 0; r < n; r++) a += pow(fabs(vals[r]), c->p);
            a = pow(a, 1 / c->p);
        }
        break;
    case R_LSE: {
        double mx = -INFINITY;
        for (int64_t r = 0; r < n; r++) mx = isnan(vals[r]) || vals[r] > mx ? vals[r] : mx;
        double sh = isinf(mx) ? 0 : mx;
        for (int64_t r = 0; r < n; r++) a += exp(vals[r] - sh);
        a = log(a) + sh;
        break;
    }
    }
    free(vals);
    if (c->kind == R_ARGMAX || c->kind == R_ARGMIN) {
        *v = (double)best;
        return;
    }
    *v = a;
    if (v2) *v2 = c->kind == R_VARMEAN ? m : (double)best;
}

static int is_fl(int dt) { return dt == KF_F32 || dt == KF_F64; }

/* got against ref: NaN/Inf where the reference has them, else 1e-4 relative + absolute for
 * f32 (1e-9 for f64), exact for integers */
static int close_to(int dt, double got, double ref)
{
    if (isnan(ref) || isnan(got)) return isnan(ref) && isnan(got);
    if (isinf(ref) || isinf(got)) return got == ref;
    if (!is_fl(dt)) return got == ref;
    double tol = dt == KF_F64 ? 1e-9 : 1e-4;
    return fabs(got - ref) <= tol + tol * fabs(ref);
}

static void fill_input(const rcase *c, void *x, int64_t n)
{
    int dt = c->sig.in[0].dtype;
    for (int64_t i = 0; i < n; i++) {
        double v;
        if (is_fl(dt)) {
            v = (rnd() - 0.5) * 4;
            if (c->kind == R_PROD) v = 0.5 + rnd();
            if (c->special && i % 7 == 3) v = (i / 7) % 3 == 0 ? NAN : (i / 7) % 3 == 1 ? INFINITY
                                                                                   : -INFINITY;
            if (c->kind == R_MAXD && i % 5 == 1) v = 1.0; /* ties: the first index wins */
        } else if (dt == KF_BOOL) {
            v = rnd() < 0.5;
        } else {
            v = (double)((int)(rnd() * 11) - 5);
            if (dt == KF_U8) v += 5;
            if (c->kind == R_PROD) v = (double)((int)(rnd() * 5) - 2);
        }
        store(x, dt, i, v);
    }
}

/* renders, compiles, runs one knob combination of host_reduce on case c; 1 when correct */
static int run_host_reduce(const kf_template *t, const rcase *c, const int *idx)
{
    char err[512] = "", *src = NULL, *lj = NULL;
    int ok = 0;
    if (!CHECK_EQ_INT(t->render(&c->sig, idx, &src, &lj, err, sizeof err), KF_OK)) {
        printf("     %s: %s\n", c->label, err);
        return 0;
    }
    if (!CHECK(kf_source_check_backend(src, "host", err, sizeof err)))
        printf("     %s: %s\n", c->label, err);
    kf_launch l;
    void *blob = NULL, *x = NULL, *y = NULL, *y2 = NULL, *x0 = NULL;
    size_t len = 0;
    char *log = NULL;
    kf_compiled *k = NULL;
    if (!CHECK_EQ_INT(kf_launch_parse(lj, &l, err, sizeof err), KF_OK)) goto out;
    if (!CHECK_EQ_INT(cc.compile(cc.self, src, &l, NULL, &blob, &len, &log), KF_OK) ||
        !CHECK(!log || !strstr(log, "warning"))) {
        printf("     %s: %s\n--- source ---\n%s\n", c->label, log ? log : "", src);
        goto out;
    }
    if (!CHECK_EQ_INT(cc.load(cc.self, blob, len, &l, 0, &k, err, sizeof err), KF_OK)) goto out;
    const kf_job_tensor *xt = &c->sig.in[0], *yt = &c->sig.out[0];
    int64_t nx = span(xt), ny = kf_job_tensor_numel(yt);
    x = malloc((size_t)nx * 8);
    x0 = malloc((size_t)nx * 8);
    y = malloc((size_t)ny * 8);
    y2 = malloc((size_t)ny * 8);
    fill_input(c, x, nx);
    memcpy(x0, x, (size_t)nx * (size_t)dsize(xt->dtype));
    memset(y, 0xff, (size_t)ny * 8); /* poison: NaN or -1 */
    memset(y2, 0xff, (size_t)ny * 8);
    void *ptrs[3] = {x, y, y2};
    if (!CHECK_EQ_INT(cc.launch(cc.self, k, ptrs, c->sig.n_out + 1, NULL), 0)) goto out;
    CHECK(memcmp(x, x0, (size_t)nx * (size_t)dsize(xt->dtype)) == 0);
    long bad = 0;
    for (int64_t o = 0; o < ny; o++) {
        double ref, ref2 = 0;
        rc_ref(c, x, o, &ref, c->sig.n_out == 2 ? &ref2 : NULL);
        double got = load(y, yt->dtype, o);
        if (!close_to(yt->dtype, got, ref) && bad++ < 3)
            printf("     %s: out[%lld] = %.9g, reference %.9g\n", c->label, (long long)o, got, ref);
        if (c->sig.n_out == 2) {
            double got2 = load(y2, c->sig.out[1].dtype, o);
            if (!close_to(c->sig.out[1].dtype, got2, ref2) && bad++ < 3)
                printf("     %s: out2[%lld] = %.9g, reference %.9g\n", c->label, (long long)o,
                       got2, ref2);
        }
    }
    ok = CHECK_EQ_INT(bad, 0);
out:
    if (!ok) {
        printf("     case %s, knobs:", c->label);
        for (int i = 0; i < t->n_knobs; i++) printf(" %s=%d", t->knobs[i].name, t->knobs[i].values[idx[i]]);
        printf("\n");
    }
    if (k) cc.unload(cc.self, k);
    free(blob), free(log), free(src), free(lj), free(x), free(x0), free(y), free(y2);
    return ok;
}

#define D(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}

static void make_rcases(void)
{
    const int64_t s3[] = {5, 6, 7}, s2[] = {7, 33};
    kf_job_tensor x2 = tens(KF_F32, 2, s2, NULL), x3 = tens(KF_F32, 3, s3, NULL);
    /* [6, 5] read transposed: strides of a [5, 6] tensor's .t() */
    kf_job_tensor xt = tens(KF_F32, 2, (int64_t[]){6, 5}, (int64_t[]){1, 6});
    /* [4, 9, 3] expanded from [4, 1, 3] */
    kf_job_tensor xe = tens(KF_F32, 3, (int64_t[]){4, 9, 3}, (int64_t[]){3, 0, 1});
    kf_job_tensor cols = tens(KF_F32, 2, (int64_t[]){40, 24}, NULL);
    rcase *c;
    c = rc_add("sum last", "aten::sum.dim_IntList", R_SUM, x2, D(-1), 0, KF_F32, 0);
    add_dtype_arg(c, 0);
    c = rc_add("sum [0,2] keepdim", "aten::sum.dim_IntList", R_SUM, x3, D(0, -1), 1, KF_F32, 0);
    add_dtype_arg(c, 0);
    c = rc_add("sum cols", "aten::sum.dim_IntList", R_SUM, cols, D(0), 0, KF_F32, 0);
    add_dtype_arg(c, 0);
    c = rc_add("sum None", "aten::sum.dim_IntList", R_SUM, x3, -1, NULL, 0, KF_F32, 0);
    add_dtype_arg(c, 0);
    c = rc_add("sum [] keepdim", "aten::sum.dim_IntList", R_SUM, x3, 0, NULL, 1, KF_F32, 0);
    add_dtype_arg(c, 0);
    c = rc_add("sum transposed", "aten::sum.dim_IntList", R_SUM, xt, D(1), 0, KF_F32, 0);
    add_dtype_arg(c, 0);
    c = rc_add("sum expanded", "aten::sum.dim_IntList", R_SUM, xe, D(1), 0, KF_F32, 0);
    add_dtype_arg(c, 0);
    c = rc_add("sum full", "aten::sum", R_SUM, xt, -2, NULL, 0, KF_F32, 0);
    add_dtype_arg(c, 0);
    c = rc_add("sum i32 -> i64", "aten::sum.dim_IntList", R_SUM,
               tens(KF_I32, 2, (int64_t[]){6, 9}, NULL), D(1), 0, KF_I64, 0);
    add_dtype_arg(c, 0);
    c = rc_add("sum dtype=f64", "aten::sum.dim_IntList", R_SUM, x2, D(1), 0, KF_F64, 0);
    add_dtype_arg(c, 1);
    c = rc_add("sum bool", "aten::sum", R_SUM, tens(KF_BOOL, 2, (int64_t[]){3, 11}, NULL), -2,
               NULL, 0, KF_I64, 0);
    add_dtype_arg(c, 0);
    c = rc_add("mean f64", "aten::mean.dim", R_MEAN, tens(KF_F64, 3, s3, NULL), D(1), 0, KF_F64, 0);
    add_dtype_arg(c, 0);
    c = rc_add("mean full", "aten::mean", R_MEAN, x2, -2, NULL, 0, KF_F32, 0);
    add_dtype_arg(c, 0);
    c = rc_add("mean i32 dtype=f32", "aten::mean.dim", R_MEAN,
               tens(KF_I32, 2, (int64_t[]){6, 9}, NULL), D(0), 1, KF_F32, 0);
    add_dtype_arg(c, 1);
    c = rc_add("prod dim", "aten::prod.dim_int", R_PROD, tens(KF_F32, 2, (int64_t[]){5, 6}, NULL),
               D(1), 0, KF_F32, 0);
    add_dtype_arg(c, 0);
    c = rc_add("prod i64 full", "aten::prod", R_PROD, tens(KF_I64, 2, (int64_t[]){3, 5}, NULL), -2,
               NULL, 0, KF_I64, 0);
    add_dtype_arg(c, 0);
    c = rc_add("amax nan all", "aten::amax", R_AMAX, x3, 0, NULL, 0, KF_F32, 0);
    c->special = 1;
    c = rc_add("amax nan rows", "aten::amax", R_AMAX, x2, D(1), 1, KF_F32, 0);
    c->special = 1;
    rc_add("amin i16", "aten::amin", R_AMIN, tens(KF_I16, 2, (int64_t[]){4, 7}, NULL), D(0), 1,
           KF_I16, 0);
    rc_add("amax bool", "aten::amax", R_AMAX, tens(KF_BOOL, 2, (int64_t[]){4, 7}, NULL), D(1), 0,
           KF_BOOL, 0);
    rc_add("amax u8 cols", "aten::amax", R_AMAX, tens(KF_U8, 2, (int64_t[]){30, 20}, NULL), D(0), 0,
           KF_U8, 0);
    rc_add("max.dim ties", "aten::max.dim", R_MAXD, tens(KF_F32, 2, (int64_t[]){5, 19}, NULL),
           D(1), 0, KF_F32, KF_I64);
    c = rc_add("max.dim nan", "aten::max.dim", R_MAXD, x3, D(-2), 1, KF_F32, KF_I64);
    c->special = 1;
    rc_add("min.dim f64 cols", "aten::min.dim", R_MIND, tens(KF_F64, 3, (int64_t[]){4, 6, 3}, NULL),
           D(1), 1, KF_F64, KF_I64);
    rc_add("argmax None", "aten::argmax", R_ARGMAX, xt, -1, NULL, 0, KF_I64, 0);
    rc_add("argmax None keepdim", "aten::argmax", R_ARGMAX, x3, -1, NULL, 1, KF_I64, 0);
    c = rc_add("argmax nan", "aten::argmax", R_ARGMAX, x2, D(1), 0, KF_I64, 0);
    c->special = 1;
    rc_add("argmin i32", "aten::argmin", R_ARGMIN, tens(KF_I32, 2, (int64_t[]){5, 8}, NULL), D(0),
           0, KF_I64, 0);
    c = rc_add("var", "aten::var.correction", R_VAR, tens(KF_F32, 2, (int64_t[]){6, 40}, NULL),
               D(1), 0, KF_F32, 0);
    sig_add_scalar(&c->sig, "correction", 'n');
    c->corr = 1;
    c = rc_add("std corr0 keepdim", "aten::std.correction", R_STD, x3, D(0, 2), 1, KF_F32, 0);
    sig_add_scalar(&c->sig, "correction", 'i')->i = 0;
    c = rc_add("var corr>N", "aten::var.correction", R_VAR, tens(KF_F32, 2, (int64_t[]){3, 2}, NULL),
               D(1), 0, KF_F32, 0);
    sig_add_scalar(&c->sig, "correction", 'd')->d = 3;
    c->corr = 3;
    c = rc_add("var_mean", "aten::var_mean.correction", R_VARMEAN,
               tens(KF_F32, 2, (int64_t[]){8, 16}, NULL), D(-1), 0, KF_F32, KF_F32);
    sig_add_scalar(&c->sig, "correction", 'i')->i = 1;
    c->corr = 1;
    static const double ords[] = {2, 1, INFINITY, -INFINITY, 0, 3};
    for (int i = 0; i < 6; i++) {
        char label[64];
        snprintf(label, sizeof label, "norm ord %g", ords[i]);
        c = rc_add(label, "aten::linalg_vector_norm", R_NORM, i == 2 ? cols : x2, D(1), i == 3,
                   KF_F32, 0);
        sig_add_scalar(&c->sig, "ord", 'd')->d = ords[i];
        c->p = ords[i];
        c->special = i == 3;
        add_dtype_arg(c, 0);
    }
    c = rc_add("norm dtype=f64 all", "aten::linalg_vector_norm", R_NORM, x3, -1, NULL, 0, KF_F64, 0);
    sig_add_scalar(&c->sig, "ord", 'i')->i = 2;
    c->p = 2;
    add_dtype_arg(c, 1);
    c = rc_add("logsumexp", "aten::logsumexp", R_LSE, tens(KF_F32, 2, (int64_t[]){4, 30}, NULL),
               D(1), 0, KF_F32, 0);
    c = rc_add("logsumexp inf", "aten::logsumexp", R_LSE, x3, D(0, 2), 1, KF_F32, 0);
    c->special = 1;
}

static void test_host_reduce(void)
{
    const kf_template *t = find_template("host_reduce");
    if (!CHECK(t != NULL) || !CHECK_STR(t->backend, "host")) return;
    make_rcases();
    int ran = 0, passed = 0;
    for (int ci = 0; ci < n_rcases; ci++) {
        const rcase *c = &rcases[ci];
        if (!CHECK(t->applies(&c->sig))) {
            printf("     host_reduce does not apply to case %s\n", c->label);
            continue;
        }
        /* the start; the other mode with threads, 16 lanes or a single one, small tiles */
        int combos[2][4] = {{0, 0, 0, 0}, {0, 0, 1, 1}};
        if (t->start) t->start(&c->sig, combos[0]);
        combos[1][0] = !combos[0][0];
        combos[1][1] = ci % 2 ? 3 : 1;
        for (int j = 0; j < 2; j++) {
            ran++;
            passed += run_host_reduce(t, c, combos[j]);
        }
    }
    printf("host_reduce: %d of %d runs over %d cases correct\n", passed, ran, n_rcases);
}

static void test_reduce_refusals(void)
{
    const kf_template *h = find_template("host_reduce"), *g = find_template("cuda_reduce_generic");
    if (!h || !g) return;
    kf_job_tensor x = tens(KF_F32, 2, (int64_t[]){4, 5}, NULL);
    rcase *c = rc_add("refuse", "aten::sum.dim_IntList", R_SUM, x, D(1), 0, KF_F32, 0);
    add_dtype_arg(c, 0);
    kf_job_sig s = c->sig;
    CHECK(h->applies(&s) && g->applies(&s));
    kf_job_sig r = s;
    r.out[0].sizes[0] = 5; /* not eager's shape */
    CHECK(!h->applies(&r) && !g->applies(&r));
    r = s;
    ((kf_job_scalar *)kf_job_scalar_find(&r, "dim"))->v[0] = 2; /* out of range */
    CHECK(!h->applies(&r));
    r = s;
    kf_job_scalar *l = (kf_job_scalar *)kf_job_scalar_find(&r, "dim");
    l->n = 2, l->v[0] = 1, l->v[1] = -1; /* repeated */
    CHECK(!h->applies(&r));
    r = s;
    r.in[0].sizes[1] = 0; /* empty */
    CHECK(!h->applies(&r));
    r = s;
    r.out[0].strides[0] = 0; /* an output that overlaps itself */
    CHECK(!h->applies(&r));
    r = s;
    r.out[0].dtype = KF_I64; /* a float sum into int64 */
    CHECK(!h->applies(&r));
    r = s;
    r.out[0].dtype = KF_F64; /* not eager's output dtype for dtype=None */
    CHECK(!h->applies(&r));
    kf_job_scalar *dts = (kf_job_scalar *)kf_job_scalar_find(&r, "dtype");
    dts->kind = 'i', dts->i = 6; /* dtype=torch.float32 with an f64 output */
    CHECK(!h->applies(&r));
    dts->i = 7; /* dtype=torch.float64 */
    CHECK(h->applies(&r) && g->applies(&r));
    r = s;
    r.out_alias[0] = 1; /* out= */
    CHECK(!h->applies(&r));
    r = s;
    r.in[0].dtype = KF_I32, r.out[0].dtype = KF_I64; /* CUDA: float types only */
    CHECK(h->applies(&r) && !g->applies(&r));
    r = s;
    r.in[0].dtype = r.out[0].dtype = KF_F16; /* host: no f16 */
    CHECK(!h->applies(&r) && g->applies(&r));
    /* mean.dim where cuda_reduce_mean serves it is left to it */
    kf_job_sig m = s;
    snprintf(m.op, sizeof m.op, "aten::mean.dim");
    CHECK(h->applies(&m) && !g->applies(&m) && find_template("cuda_reduce_mean")->applies(&m));
    n_rcases--;
}

/* ---- gathers ---- */

typedef struct gcase_ {
    char label[64];
    kf_job_sig sig;
    int bad_index; /* one index out of range: the kernel declines */
} gcase_t;

#define MAX_GCASES 16
static gcase_t gcases[MAX_GCASES];
static int n_gcases;

static gcase_t *gc_add(const char *label, const char *op, kf_job_tensor src, kf_job_tensor idx,
                       int dim, int out_nd, const int64_t *out_sizes)
{
    gcase_t *c = &gcases[n_gcases++];
    memset(c, 0, sizeof *c);
    snprintf(c->label, sizeof c->label, "%s", label);
    kf_job_sig s = sig_of(op);
    s.n_in = 2;
    s.in[0] = src;
    s.in[1] = idx;
    if (strcmp(op, "aten::embedding")) sig_add_scalar(&s, "dim", 'i')->i = dim;
    else sig_add_scalar(&s, "padding_idx", 'i')->i = -1;
    s.n_out = 1;
    s.out[0] = sig_tensor(src.dtype, out_nd, out_sizes, 0, 0);
    c->sig = s;
    return c;
}

/* the source coordinate along the gathered dim, by the op's definition, for output coords oc */
static double gather_ref(const gcase_t *c, const void *src, const void *idx, const int64_t *oc)
{
    const kf_job_tensor *s = &c->sig.in[0], *ix = &c->sig.in[1];
    const kf_job_scalar *dim = kf_job_scalar_find(&c->sig, "dim");
    int64_t off = 0, ioff = 0;
    if (!strcmp(c->sig.op, "aten::embedding")) {
        for (int j = 0; j < ix->ndim; j++) ioff += oc[j] * ix->strides[j];
        int64_t row = (int64_t)load(idx, ix->dtype, ioff);
        off = row * s->strides[0] + oc[ix->ndim] * s->strides[1];
    } else {
        int d0 = (int)(dim->i < 0 ? dim->i + s->ndim : dim->i);
        if (!strcmp(c->sig.op, "aten::index_select"))
            ioff = ix->ndim ? oc[d0] * ix->strides[0] : 0;
        else
            for (int j = 0; j < ix->ndim; j++) ioff += oc[j] * ix->strides[j];
        int64_t g = (int64_t)load(idx, ix->dtype, ioff);
        for (int j = 0; j < s->ndim; j++) off += (j == d0 ? g : oc[j]) * s->strides[j];
    }
    return load(src, s->dtype, off);
}

static int run_host_gather(const kf_template *t, const gcase_t *c, const int *idx_knobs)
{
    char err[512] = "", *src = NULL, *lj = NULL, *log = NULL;
    void *blob = NULL, *s = NULL, *ix = NULL, *y = NULL;
    size_t len = 0;
    kf_compiled *k = NULL;
    kf_launch l;
    int ok = 0;
    if (!CHECK_EQ_INT(t->render(&c->sig, idx_knobs, &src, &lj, err, sizeof err), KF_OK)) {
        printf("     %s: %s\n", c->label, err);
        return 0;
    }
    CHECK(kf_source_check_backend(src, "host", err, sizeof err));
    if (!CHECK_EQ_INT(kf_launch_parse(lj, &l, err, sizeof err), KF_OK)) goto out;
    if (!CHECK_EQ_INT(cc.compile(cc.self, src, &l, NULL, &blob, &len, &log), KF_OK) ||
        !CHECK(!log || !strstr(log, "warning"))) {
        printf("     %s: %s\n--- source ---\n%s\n", c->label, log ? log : "", src);
        goto out;
    }
    if (!CHECK_EQ_INT(cc.load(cc.self, blob, len, &l, 0, &k, err, sizeof err), KF_OK)) goto out;
    const kf_job_tensor *st = &c->sig.in[0], *it = &c->sig.in[1], *yt = &c->sig.out[0];
    int64_t ns = span(st), ni = span(it), ny = kf_job_tensor_numel(yt);
    s = malloc((size_t)ns * 8), ix = malloc((size_t)ni * 8), y = malloc((size_t)ny * 8);
    for (int64_t i = 0; i < ns; i++)
        store(s, st->dtype, i, st->dtype == KF_BOOL ? (i % 3 == 0) : (double)(i % 251) - 100);
    /* the gathered dim's size */
    int64_t v;
    if (!strcmp(c->sig.op, "aten::embedding")) {
        v = st->sizes[0];
    } else {
        int64_t d = kf_job_scalar_find(&c->sig, "dim")->i;
        v = st->sizes[d < 0 ? d + st->ndim : d];
    }
    for (int64_t i = 0; i < ni; i++) store(ix, it->dtype, i, (double)(int64_t)(rnd() * (double)v));
    if (c->bad_index) store(ix, it->dtype, ni - 1, (double)v);
    memset(y, 0xa5, (size_t)ny * 8);
    void *ptrs[3] = {s, ix, y};
    int rc = cc.launch(cc.self, k, ptrs, 3, NULL);
    if (c->bad_index) {
        ok = CHECK_EQ_INT(rc, KF_KERNEL_LATER);
        goto out;
    }
    if (!CHECK_EQ_INT(rc, 0)) goto out;
    long bad = 0;
    for (int64_t o = 0; o < ny; o++) {
        int64_t oc[KF_MAX_DIMS], q = o;
        for (int d = yt->ndim - 1; d >= 0; d--) {
            oc[d] = q % yt->sizes[d];
            q /= yt->sizes[d];
        }
        double ref = gather_ref(c, s, ix, oc), got = load(y, yt->dtype, o);
        if (got != ref && bad++ < 3)
            printf("     %s: out[%lld] = %g, reference %g\n", c->label, (long long)o, got, ref);
    }
    ok = CHECK_EQ_INT(bad, 0);
out:
    if (!ok) printf("     case %s\n", c->label);
    if (k) cc.unload(cc.self, k);
    free(blob), free(log), free(src), free(lj), free(s), free(ix), free(y);
    return ok;
}

static void make_gcases(void)
{
    kf_job_tensor w = tens(KF_F32, 2, (int64_t[]){10, 8}, NULL);
    gc_add("embedding", "aten::embedding", w, tens(KF_I64, 2, (int64_t[]){3, 4}, NULL), 0, 3,
           (int64_t[]){3, 4, 8});
    gc_add("embedding i32 bf16", "aten::embedding", tens(KF_BF16, 2, (int64_t[]){7, 5}, NULL),
           tens(KF_I32, 1, (int64_t[]){9}, NULL), 0, 2, (int64_t[]){9, 5});
    /* a transposed weight, ids read with a stride */
    gc_add("embedding strided", "aten::embedding",
           tens(KF_F64, 2, (int64_t[]){6, 4}, (int64_t[]){1, 6}),
           tens(KF_I64, 1, (int64_t[]){5}, (int64_t[]){3}), 0, 2, (int64_t[]){5, 4});
    gc_add("index_select dim1", "aten::index_select", tens(KF_F32, 3, (int64_t[]){5, 6, 7}, NULL),
           tens(KF_I32, 1, (int64_t[]){4}, NULL), 1, 3, (int64_t[]){5, 4, 7});
    gc_add("index_select last", "aten::index_select", tens(KF_I64, 2, (int64_t[]){3, 9}, NULL),
           tens(KF_I64, 1, (int64_t[]){11}, NULL), -1, 2, (int64_t[]){3, 11});
    gc_add("gather dim1", "aten::gather", tens(KF_F32, 2, (int64_t[]){4, 5}, NULL),
           tens(KF_I64, 2, (int64_t[]){4, 3}, NULL), 1, 2, (int64_t[]){4, 3});
    gc_add("gather dim0 transposed", "aten::gather",
           tens(KF_F32, 2, (int64_t[]){6, 5}, (int64_t[]){1, 6}),
           tens(KF_I64, 2, (int64_t[]){3, 4}, NULL), 0, 2, (int64_t[]){3, 4});
    gc_add("gather bool 3d", "aten::gather", tens(KF_BOOL, 3, (int64_t[]){3, 4, 5}, NULL),
           tens(KF_I32, 3, (int64_t[]){2, 4, 3}, NULL), -1, 3, (int64_t[]){2, 4, 3});
    gcase_t *c = gc_add("embedding bad index", "aten::embedding", w,
                        tens(KF_I64, 1, (int64_t[]){6}, NULL), 0, 2, (int64_t[]){6, 8});
    c->bad_index = 1;
    c = gc_add("gather bad index", "aten::gather", tens(KF_F32, 2, (int64_t[]){4, 5}, NULL),
               tens(KF_I64, 2, (int64_t[]){4, 3}, NULL), 1, 2, (int64_t[]){4, 3});
    c->bad_index = 1;
}

static void test_host_gather(void)
{
    const kf_template *t = find_template("host_gather");
    if (!CHECK(t != NULL)) return;
    make_gcases();
    int ran = 0, passed = 0;
    for (int ci = 0; ci < n_gcases; ci++) {
        if (!CHECK(t->applies(&gcases[ci].sig))) {
            printf("     host_gather does not apply to %s\n", gcases[ci].label);
            continue;
        }
        for (int o = 0; o < 2; o++) {
            int idx[1] = {o};
            ran++;
            passed += run_host_gather(t, &gcases[ci], idx);
        }
    }
    printf("host_gather: %d of %d runs correct\n", passed, ran);
    /* refusals: a float index, an index_select index of 2 dims, a gather index larger than the
     * source off the gathered dim */
    kf_job_sig s = gcases[0].sig;
    s.in[1].dtype = KF_F32;
    CHECK(!t->applies(&s));
    s = gcases[3].sig;
    s.in[1] = tens(KF_I64, 2, (int64_t[]){2, 2}, NULL);
    CHECK(!t->applies(&s));
    s = gcases[5].sig;
    s.in[1].sizes[0] = 5;
    s.out[0].sizes[0] = 5;
    CHECK(!t->applies(&s));
}

/* ---- CUDA: the float cases rendered and compiled with NVRTC ---- */

/* Without NVRTC, the start render of each case goes to a folder and nvcc --ptx compiles them
 * all in one call (when nvcc is there): what NVRTC would say, without a GPU machine. */
static char dump_dir[256];
static int n_dumped;

/* the first case of its op and dtypes (nvcc is slow: one source each) */
static int first_of_kind(const kf_job_sig *s)
{
    static char seen[64][96];
    static int n_seen;
    char key[96];
    snprintf(key, sizeof key, "%s %d %d %d", s->op, s->in[0].dtype, s->out[0].dtype,
             s->n_out > 1 ? s->out[1].dtype : 0);
    for (int i = 0; i < n_seen; i++)
        if (!strcmp(seen[i], key)) return 0;
    if (n_seen < 64) snprintf(seen[n_seen++], sizeof seen[0], "%s", key);
    return 1;
}

static void dump_source(const char *src)
{
    char path[320];
    snprintf(path, sizeof path, "%s/k%03d.cu", dump_dir, n_dumped++);
    FILE *f = fopen(path, "w");
    if (!CHECK(f != NULL)) return;
    fputs(src, f);
    fclose(f);
}

static void nvcc_dumped(void)
{
    if (!n_dumped) return;
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "cd %s && nvcc --ptx -arch=sm_90 -std=c++17 -Werror all-warnings k*.cu > nvcc.log 2>&1",
             dump_dir);
    int rc = system(cmd);
    if (!CHECK_EQ_INT(rc, 0)) {
        snprintf(cmd, sizeof cmd, "head -c 6000 %s/nvcc.log", dump_dir);
        if (system(cmd) != 0) printf("     (no log)\n");
    }
    printf("nvcc --ptx: %d CUDA sources %s\n", n_dumped, rc == 0 ? "compiled" : "FAILED");
    snprintf(cmd, sizeof cmd, "rm -rf %s", dump_dir);
    if (system(cmd) != 0) printf("     could not remove %s\n", dump_dir);
}

static void test_cuda_compile(void)
{
    const kf_template *r = check_template("cuda_reduce_generic", 3, 3, 1);
    const kf_template *g = check_template("cuda_gather", 2, 2, 0);
    if (!r || !g) return;
    kf_compiler_i nv;
    int have_nv = open_nvrtc(&nv);
    if (!have_nv && system("nvcc --version > /dev/null 2>&1") == 0) {
        snprintf(dump_dir, sizeof dump_dir, "/tmp/kf-reduce-cuda-XXXXXX");
        if (!mkdtemp(dump_dir)) dump_dir[0] = 0;
    } else if (!have_nv) {
        printf("SKIP nvcc: not found either\n");
    }
    int rendered = 0, compiled = 0;
    for (int pass = 0; pass < 2; pass++) {
        const kf_template *t = pass ? g : r;
        int n = pass ? n_gcases : n_rcases;
        for (int ci = 0; ci < n; ci++) {
            kf_job_sig s = pass ? gcases[ci].sig : rcases[ci].sig;
            const char *label = pass ? gcases[ci].label : rcases[ci].label;
            if (!t->applies(&s)) continue; /* integer reductions are the host's */
            for (int j = 0; j < 2; j++) {
                int idx[MAX_KNOBS] = {0};
                if (j == 0 && t->start) t->start(&s, idx);
                if (j == 1)
                    for (int k = 0; k < t->n_knobs; k++)
                        idx[k] = (ci + k + 1) % t->knobs[k].n_values;
                char err[512] = "", *src = NULL, *lj = NULL;
                if (!CHECK_EQ_INT(t->render(&s, idx, &src, &lj, err, sizeof err), KF_OK)) {
                    printf("     %s %s: %s\n", t->name, label, err);
                    continue;
                }
                rendered++;
                CHECK(kf_source_check_backend(src, "nvrtc", err, sizeof err));
                kf_launch l;
                if (!have_nv && dump_dir[0] && j == 0 && first_of_kind(&s)) dump_source(src);
                if (CHECK_EQ_INT(kf_launch_parse(lj, &l, err, sizeof err), KF_OK) && have_nv) {
                    void *blob = NULL;
                    size_t len = 0;
                    char *log = NULL;
                    kf_status st = nv.compile(nv.self, src, &l, "sm_90", &blob, &len, &log);
                    if (CHECK_EQ_INT(st, KF_OK) && CHECK(log_is_clean(log))) compiled++;
                    else printf("     %s %s:\n%s\n--- source ---\n%s\n", t->name, label,
                                log ? log : "", src);
                    free(blob);
                    free(log);
                }
                free(src);
                free(lj);
            }
        }
    }
    printf("CUDA: rendered %d, compiled %d with NVRTC\n", rendered, compiled);
    if (have_nv) nv.destroy(nv.self);
    else if (dump_dir[0]) nvcc_dumped();
}

int main(void)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (!CHECK_EQ_INT(kf_compiler_host_create(&cc, NULL), KF_OK))
        return check_done("templates_reduce_generic");
    test_reduce_refusals();
    test_host_reduce();
    printf("  %.1f s\n", seconds_since(&t0));
    test_host_gather();
    printf("  %.1f s\n", seconds_since(&t0));
    test_cuda_compile();
    cc.destroy(cc.self);
    return test_done(&t0, "templates_reduce_generic");
}
