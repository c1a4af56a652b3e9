/* The pointwise engine (forge/templates/pointwise_ops.c, host_pointwise.c, cuda_pointwise.c).
 *
 * Every row of the table is rendered for several signatures (contiguous, broadcast, a transposed
 * operand, in place / out= as the row is, f16 / bf16 / f64 / int / bool, mixed input dtypes, a
 * Python number in place of an operand, NaN and +-inf), with the knob combinations spread over
 * them:
 *  - host renders compile with the host backend, run on poisoned outputs and are compared with an
 *    independent reference written here (double math, eager's NaN rules, exact for integers and
 *    bool); inputs must come back unchanged, every source passes the evaluator's source check;
 *  - CUDA renders of the same signatures compile with NVRTC for sm_90 with clean logs (SKIP
 *    when NVRTC or the CUDA headers are missing);
 *  - applies() refuses what the engine must not serve (zero elements, a destination that
 *    broadcasts, dtypes a row does not take, a wrong alias, missing scalars, an output dtype
 *    eager would not give);
 *  - the promotion table against c10's rules, and the f16 / bf16 conversions of
 *    kernels/pointwise_math.h against an independent decoder over every 16-bit pattern. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/c/check.h"
#include "tests/c/job_sig_build.h"
#include "tests/c/nvcc_ptx.h"
#include "tests/c/nvrtc_find.h"
#include "compile/compiler.h"
#include "compile/source_check.h"
#include "forge/templates/pointwise_ops.h"
#include "forge/templates/template.h"

static kf_compiler_i cc, nv;
static int have_nv;
static const kf_template *host_t, *cuda_t;

/* ---- storage, decoded independently of pointwise_math.h ---- */

static int esz(int dt)
{
    switch (dt) {
    case KF_BOOL: case KF_U8: case KF_I8: return 1;
    case KF_I16: case KF_F16: case KF_BF16: return 2;
    case KF_I32: case KF_F32: return 4;
    default: return 8;
    }
}
static int is_float(int dt) { return dt == KF_F32 || dt == KF_F16 || dt == KF_BF16 || dt == KF_F64; }

static double half_decode(uint16_t h)
{
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v = e == 31 ? (m ? NAN : INFINITY) : e == 0 ? ldexp(m, -24) : ldexp(m + 1024, e - 25);
    return s ? -v : v;
}
/* exact for the values the test stores (multiples of 1/64 below 8), NaN and +-inf */
static uint16_t half_encode(double v)
{
    if (isnan(v)) return 0x7e00;
    uint16_t s = signbit(v) ? 0x8000 : 0;
    v = fabs(v);
    if (isinf(v)) return s | 0x7c00;
    if (v == 0) return s;
    int e;
    double f = frexp(v, &e); /* v = f 2^e, f in [0.5, 1) */
    return s | (uint16_t)((e + 14) << 10) | (uint16_t)((f * 2 - 1) * 1024);
}
static double get(const void *p, int dt, int64_t o)
{
    const char *c = p;
    switch (dt) {
    case KF_F32: { float f; memcpy(&f, c + o * 4, 4); return f; }
    case KF_F64: { double d; memcpy(&d, c + o * 8, 8); return d; }
    case KF_F16: { uint16_t h; memcpy(&h, c + o * 2, 2); return half_decode(h); }
    case KF_BF16: { uint16_t h; memcpy(&h, c + o * 2, 2); uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f; }
    case KF_I8: return ((const int8_t *)p)[o];
    case KF_U8: return ((const uint8_t *)p)[o];
    case KF_I16: return ((const int16_t *)p)[o];
    case KF_I32: return ((const int32_t *)p)[o];
    case KF_I64: return (double)((const int64_t *)p)[o];
    default: return ((const uint8_t *)p)[o];
    }
}
static void put(void *p, int dt, int64_t o, double v)
{
    char *c = p;
    switch (dt) {
    case KF_F32: { float f = (float)v; memcpy(c + o * 4, &f, 4); break; }
    case KF_F64: memcpy(c + o * 8, &v, 8); break;
    case KF_F16: { uint16_t h = half_encode(v); memcpy(c + o * 2, &h, 2); break; }
    case KF_BF16: { float f = (float)v; uint32_t u; memcpy(&u, &f, 4); uint16_t h = (uint16_t)(u >> 16); memcpy(c + o * 2, &h, 2); break; }
    case KF_I8: ((int8_t *)p)[o] = (int8_t)v; break;
    case KF_U8: ((uint8_t *)p)[o] = (uint8_t)v; break;
    case KF_I16: ((int16_t *)p)[o] = (int16_t)v; break;
    case KF_I32: ((int32_t *)p)[o] = (int32_t)v; break;
    case KF_I64: ((int64_t *)p)[o] = (int64_t)v; break;
    default: ((uint8_t *)p)[o] = v != 0; break;
    }
}

/* ---- the reference: what eager computes, in double ---- */

typedef struct refsc {
    int has[8];
    double v[8];
    char name[8][24];
    int n;
} refsc;

static double sc(const refsc *s, const char *name, double dflt)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->name[i], name)) return s->has[i] ? s->v[i] : dflt;
    return dflt;
}
static int sc_has(const refsc *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->name[i], name)) return s->has[i];
    return 0;
}
static double nmax(double a, double b) { return isnan(a) || isnan(b) ? NAN : a > b ? a : b; }
static double nmin(double a, double b) { return isnan(a) || isnan(b) ? NAN : a < b ? a : b; }

/* "aten::add_.Tensor" -> "add" */
static void base_name(const char *op, char *out, size_t cap)
{
    const char *p = strstr(op, "::");
    p = p ? p + 2 : op;
    size_t n = strcspn(p, ".");
    if (n >= cap) n = cap - 1;
    memcpy(out, p, n);
    out[n] = 0;
    if (n > 1 && out[n - 1] == '_') out[n - 1] = 0;
}

/* x[]: the operands in the row's order (absent optional: has[] 0); bool_p: promoted bool */
static double ref(const kf_pw_op *op, const double *x, const int *has, const refsc *s, int int_p,
                  int bool_p)
{
    char b[32];
    base_name(op->name, b, sizeof b);
    double a = x[0], y = x[1], z = x[2];
    const char *when = op->when ? strchr(op->when, '=') + 1 : ""; /* the first condition's value */
    if (!strcmp(b, "add")) return bool_p ? (a != 0 || y != 0) : a + sc(s, "alpha", 1) * y;
    if (!strcmp(b, "sub")) return a - sc(s, "alpha", 1) * y;
    if (!strcmp(b, "rsub")) return y - sc(s, "alpha", 1) * a;
    if (!strcmp(b, "mul")) return bool_p ? (a != 0 && y != 0) : a * y;
    if (!strcmp(b, "div")) return !strcmp(when, "trunc") ? trunc(a / y)
                                  : !strcmp(when, "floor") ? floor(a / y) : a / y;
    if (!strcmp(b, "pow")) return pow(a, strstr(op->name, "Tensor_Tensor") ? y : sc(s, "exponent", 1));
    if (!strcmp(b, "neg")) return -a;
    if (!strcmp(b, "abs")) return fabs(a);
    if (!strcmp(b, "reciprocal")) return 1 / a;
    if (!strcmp(b, "exp")) return exp(a);
    if (!strcmp(b, "exp2")) return exp2(a);
    if (!strcmp(b, "expm1")) return expm1(a);
    if (!strcmp(b, "log")) return log(a);
    if (!strcmp(b, "log1p")) return log1p(a);
    if (!strcmp(b, "log2")) return log2(a);
    if (!strcmp(b, "sqrt")) return sqrt(a);
    if (!strcmp(b, "rsqrt")) return 1 / sqrt(a);
    if (!strcmp(b, "sin")) return sin(a);
    if (!strcmp(b, "cos")) return cos(a);
    if (!strcmp(b, "tanh")) return tanh(a);
    if (!strcmp(b, "erf")) return erf(a);
    if (!strcmp(b, "sigmoid")) return 1 / (1 + exp(-a));
    if (!strcmp(b, "gelu"))
        return !strcmp(when, "tanh")
                   ? 0.5 * a * (1 + tanh(sqrt(2 / M_PI) * (a + 0.044715 * a * a * a)))
                   : 0.5 * a * (1 + erf(a / sqrt(2.0)));
    if (!strcmp(b, "silu")) return a / (1 + exp(-a));
    if (!strcmp(b, "mish")) return a * tanh(log1p(exp(a)));
    if (!strcmp(b, "hardswish")) return a * nmin(nmax(a + 3, 0), 6) / 6;
    if (!strcmp(b, "hardsigmoid")) return nmin(nmax(a + 3, 0), 6) / 6;
    if (!strcmp(b, "relu")) return isnan(a) ? a : a < 0 ? 0 : a;
    if (!strcmp(b, "leaky_relu")) return a > 0 ? a : a * sc(s, "negative_slope", 0.01);
    if (!strcmp(b, "elu"))
        return a <= 0 ? expm1(a * sc(s, "input_scale", 1)) * sc(s, "alpha", 1) * sc(s, "scale", 1)
                      : a * sc(s, "scale", 1);
    if (!strcmp(b, "softplus")) {
        double be = sc(s, "beta", 1);
        return a * be > sc(s, "threshold", 20) ? a : log1p(exp(a * be)) / be;
    }
    if (!strcmp(b, "clamp") || !strcmp(b, "clamp_min") || !strcmp(b, "clamp_max") ||
        !strcmp(b, "hardtanh")) {
        int tensor = !strcmp(op->name, "aten::clamp.Tensor"), ht = !strcmp(b, "hardtanh");
        int hl = tensor ? has[1] : ht || sc_has(s, "min"), hh = tensor ? has[2] : ht || sc_has(s, "max");
        double lo = tensor ? y : ht ? sc(s, "min_val", 0) : sc(s, "min", 0);
        double hi = tensor ? z : ht ? sc(s, "max_val", 0) : sc(s, "max", 0);
        if (isnan(a)) return a;
        if (hl) a = nmax(a, lo);
        if (hh) a = nmin(a, hi);
        return a;
    }
    if (!strcmp(b, "minimum")) return nmin(a, y);
    if (!strcmp(b, "maximum")) return nmax(a, y);
    if (!strcmp(b, "where")) return a != 0 ? y : z;
    if (!strcmp(b, "masked_fill")) return y != 0 ? sc(s, "value", 0) : a;
    if (!strcmp(b, "lerp")) {
        double w = strstr(op->name, "lerp.Tensor") ? z : sc(s, "weight", 0);
        return a + w * (y - a);
    }
    if (!strcmp(b, "addcmul")) return a + sc(s, "value", 1) * y * z;
    if (!strcmp(b, "addcdiv")) return a + sc(s, "value", 1) * (y / z);
    if (!strcmp(b, "eq")) return a == y;
    if (!strcmp(b, "ne")) return a != y;
    if (!strcmp(b, "lt")) return a < y;
    if (!strcmp(b, "le")) return a <= y;
    if (!strcmp(b, "gt")) return a > y;
    if (!strcmp(b, "ge")) return a >= y;
    if (!strcmp(b, "logical_not")) return !(a != 0);
    if (!strcmp(b, "logical_and")) return (a != 0) && (y != 0);
    if (!strcmp(b, "logical_or")) return (a != 0) || (y != 0);
    if (!strcmp(b, "logical_xor")) return (a != 0) != (y != 0);
    if (!strcmp(b, "bitwise_and")) return (double)((long long)a & (long long)y);
    if (!strcmp(b, "bitwise_or")) return (double)((long long)a | (long long)y);
    if (!strcmp(b, "bitwise_xor")) return (double)((long long)a ^ (long long)y);
    if (!strcmp(b, "bitwise_not")) return bool_p ? !(a != 0) : (double)~(long long)a;
    if (!strcmp(b, "copy") || !strcmp(b, "_to_copy")) return a;
    if (!strcmp(b, "fill")) return sc(s, "value", 0);
    if (!strcmp(b, "zero")) return 0;
    (void)int_p;
    printf("     no reference for %s\n", op->name);
    return NAN;
}

/* ---- cases ---- */

enum { V_CONTIG, V_BCAST, V_TRANS, V_F16, V_MIXED, V_INT, V_BOOL, V_F64, V_WRAP, V_SPECIAL, V_COUNT };
static const char *const vname[V_COUNT] = {"contig", "bcast", "trans", "f16", "mixed_bf16_f32",
                                           "int", "bool", "f64", "wrapped", "nan_inf"};

#define R 5
#define C 7

typedef struct tcase {
    char label[128];
    const kf_pw_op *op;
    kf_job_sig sig;
    int variant, knobs;
    int positive, nonzero; /* input ranges the op needs */
    char *cuda_src;        /* the CUDA render, for one nvcc run over all of them */
} tcase;

#define MAX_CASES 1200
static tcase cases[MAX_CASES];
static int n_cases;

static kf_job_tensor ten(int dt, int nd, int64_t s0, int64_t s1, int trans)
{
    int64_t sz[2] = {s0, s1};
    kf_job_tensor t = sig_tensor(dt, nd, nd == 1 ? sz + 1 : sz, 0, 16);
    if (trans && nd == 2) { /* a transposed [C, R] buffer seen as [R, C] */
        t.strides[0] = 1;
        t.strides[1] = s0;
    }
    return t;
}

/* the row's dtype classes in the order variants want them */
static int row_takes(const kf_pw_op *op, int cls) { return (op->dtypes & cls) != 0; }

/* a scalar's test value: exact in f16/bf16 where it is rounded ('@') */
static void add_scalar(kf_job_sig *s, const char *name, int int_ct, int bool_p)
{
    static const struct { const char *n; double f; long long i; } v[] = {
        {"alpha", 1.5, 2},   {"min", -1, -2},      {"max", 1.5, 3},    {"negative_slope", 0.125, 0},
        {"value", 0.75, 2},  {"weight", 0.3, 0},   {"exponent", 2.5, 2}, {"scale", 1.25, 1},
        {"input_scale", 0.5, 1}, {"beta", 1.5, 1}, {"threshold", 2, 20}, {"min_val", -1, -1},
        {"max_val", 1, 1},
    };
    for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) {
        if (strcmp(v[k].n, name)) continue;
        if (bool_p) {
            sig_add_scalar(s, name, 'b')->i = 1;
        } else if (int_ct) {
            sig_add_scalar(s, name, 'i')->i = v[k].i;
        } else {
            sig_add_scalar(s, name, 'd')->d = v[k].f;
        }
        return;
    }
    printf("     no test value for scalar %s\n", name);
}

static int make_case(const kf_pw_op *op, int variant, int knobs)
{
    int cls = variant == V_INT ? KF_PW_INT : variant == V_BOOL ? KF_PW_BOOL : KF_PW_FLOAT;
    if (op->rule == KF_PW_LOGICAL) cls = variant == V_BOOL ? KF_PW_BOOL : variant == V_INT ? KF_PW_INT : KF_PW_FLOAT;
    if (!row_takes(op, cls)) {
        if (variant != V_CONTIG) return 0;
        cls = row_takes(op, KF_PW_FLOAT) ? KF_PW_FLOAT : row_takes(op, KF_PW_INT) ? KF_PW_INT : KF_PW_BOOL;
    }
    int dt = cls == KF_PW_INT ? KF_I32 : cls == KF_PW_BOOL ? KF_BOOL
             : variant == V_F16 ? KF_F16 : variant == V_F64 ? KF_F64 : KF_F32;
    tcase *c = &cases[n_cases];
    memset(c, 0, sizeof *c);
    c->op = op;
    c->variant = variant;
    c->knobs = knobs;
    kf_job_sig *s = &c->sig;
    *s = sig_of(op->name);
    char b[32];
    base_name(op->name, b, sizeof b);
    c->positive = !strcmp(b, "log") || !strcmp(b, "log2") || !strcmp(b, "sqrt") ||
                  !strcmp(b, "rsqrt") || !strcmp(b, "pow") || !strcmp(b, "log1p");
    c->nonzero = !strcmp(b, "div") || !strcmp(b, "reciprocal") || !strcmp(b, "addcdiv");
    for (const char *w = op->when ? op->when : ""; *w;) { /* each "name=value" / "name=" */
        char name[24];
        size_t len = strcspn(w, " ");
        const char *eq = memchr(w, '=', len);
        snprintf(name, sizeof name, "%.*s", (int)(eq - w), w);
        size_t vl = strcspn(eq + 1, "| "); /* the first of its alternatives */
        if (vl) snprintf(sig_add_scalar(s, name, 's')->s, 32, "%.*s", (int)vl, eq + 1);
        else sig_add_scalar(s, name, 'n');
        w += len;
        while (*w == ' ') w++;
    }
    /* operands */
    const char *p = op->args;
    char name[24];
    int k = 0, dest = -1, first = 1, n_read = 0;
    int wrapped_done = 0, mixed = variant == V_MIXED;
    int dtypes_seen = KF_DTYPE_UNKNOWN;
    while (*p) {
        while (*p == ' ') p++;
        size_t n = strcspn(p, " ");
        snprintf(name, sizeof name, "%.*s", (int)n, p);
        p += n;
        size_t nl = strcspn(name, "!&?@~^/");
        char flags[8];
        snprintf(flags, sizeof flags, "%s", name + nl);
        name[nl] = 0;
        if (strchr(flags, '!')) {
            dest = s->n_in;
            s->in[s->n_in++] = ten(dt, 2, R, C, 0);
            continue;
        }
        if (strchr(flags, '&')) {
            s->in[s->n_in++] = ten(KF_BOOL, variant == V_BCAST ? 1 : 2, R, C, 0);
            k++;
            continue;
        }
        int odt = dt;
        if (mixed) odt = n_read == 0 ? KF_BF16 : KF_F32;
        if (variant == V_INT && n_read == 1 && op->rule != KF_PW_LOGICAL && strcmp(b, "copy")) odt = KF_I64;
        if (variant == V_WRAP && n_read == 1 && !wrapped_done) {
            kf_job_scalar *w = sig_add_scalar(s, name, cls == KF_PW_FLOAT ? 'd' : 'i');
            w->d = 0.5;
            w->i = 3;
            wrapped_done = 1;
            n_read++;
            k++;
            continue;
        }
        int nd = 2, trans = 0;
        if (variant == V_BCAST && !first) nd = 1;
        if (variant == V_TRANS && first) trans = 1;
        s->in[s->n_in++] = ten(odt, nd, R, C, trans);
        dtypes_seen = kf_pw_promote(dtypes_seen, odt);
        first = 0;
        n_read++;
        k++;
    }
    int to_copy = !strcmp(b, "_to_copy");
    if ((variant == V_WRAP && !wrapped_done) ||
        (variant == V_MIXED && n_read < 2 && strcmp(b, "copy") && !to_copy) ||
        (variant == V_BCAST && n_read < 2))
        return 0;
    if (!strcmp(b, "copy") && variant == V_MIXED) { /* a cast: f32 -> bf16 */
        s->in[1].dtype = KF_F32;
        s->in[0].dtype = KF_BF16;
        dtypes_seen = KF_F32;
    }
    int P = op->rule == KF_PW_LOGICAL ? KF_BOOL : dtypes_seen == KF_DTYPE_UNKNOWN ? dt : dtypes_seen;
    if (variant == V_WRAP && cls == KF_PW_FLOAT && P != KF_F64) P = P; /* a Python float keeps it */
    int int_ct = !is_float(P);
    int bool_p = P == KF_BOOL;
    const char *sp = op->scalars ? op->scalars : "";
    while (*sp) {
        while (*sp == ' ') sp++;
        size_t n = strcspn(sp, " ");
        snprintf(name, sizeof name, "%.*s", (int)n, sp);
        sp += n;
        name[strcspn(name, "?@")] = 0;
        add_scalar(s, name, int_ct && strcmp(b, "leaky_relu"), bool_p && !strcmp(b, "add"));
    }
    /* the output */
    int out_dt = op->result == KF_PW_BOOLRES ? KF_BOOL
                 : op->result == KF_PW_TOFLOAT && !is_float(P) ? KF_F32 : P;
    if (to_copy && variant == V_MIXED) { /* .to(torch.float32) of a bf16 tensor */
        sig_add_scalar(s, "dtype", 'i')->i = 6;
        out_dt = KF_F32;
    }
    if (dest >= 0 || op->inplace) {
        int d = dest >= 0 ? dest : 0;
        /* in place: self keeps its dtype (eager casts to it); copy_/fill_/zero_: the
         * destination's own; out=: eager's result dtype */
        if (dest < 0 || !strcmp(b, "copy") || !strcmp(b, "fill") || !strcmp(b, "zero"))
            out_dt = s->in[d].dtype;
        if (dest >= 0) s->in[d].dtype = out_dt;
        s->out[0] = s->in[d];
        s->out_alias[0] = d + 1;
    } else {
        s->out[0] = ten(out_dt, 2, R, C, 0);
    }
    s->n_out = 1;
    snprintf(c->label, sizeof c->label, "%s%s%s [%s]", op->name, op->when ? " " : "",
             op->when ? op->when : "", vname[variant]);
    n_cases++;
    return 1;
}

/* ---- running one case ---- */

static int64_t span(const kf_job_tensor *t)
{
    int64_t s = 1;
    for (int d = 0; d < t->ndim; d++) s += (t->sizes[d] - 1) * t->strides[d];
    return s;
}

/* offset of output element (r, c) in t, broadcast from the right */
static int64_t off_of(const kf_job_tensor *t, int64_t r, int64_t c)
{
    int64_t idx[2] = {r, c}, o = 0;
    for (int d = 0; d < t->ndim; d++) {
        int od = d + 2 - t->ndim;
        if (t->sizes[d] != 1) o += idx[od] * t->strides[d];
    }
    return o;
}

static double gen(const tcase *c, int dt, int64_t e, int mask, uint64_t *rng)
{
    *rng = *rng * 6364136223846793005ULL + 1442695040888963407ULL;
    int r = (int)(*rng >> 33);
    if (mask || dt == KF_BOOL) return r & 1;
    if (!is_float(dt)) {
        int v = r % 11 - 5;
        if (dt == KF_U8 && v < 0) v = -v;
        if (c->nonzero && v == 0) v = 1;
        return v;
    }
    if (c->variant == V_SPECIAL && e < 3) return e == 0 ? NAN : e == 1 ? INFINITY : -INFINITY;
    double v = (r % 385 - 192) / 64.0; /* [-3, 3], exact in f16 and bf16 */
    if (c->positive) v = fabs(v) + 0.125;
    if (c->nonzero && v == 0) v = 0.5;
    return v;
}

static void run_case(const tcase *c)
{
    const kf_job_sig *s = &c->sig;
    kf_pw_bind pb;
    if (!CHECK(kf_pw_bind_sig(s, &pb)) || !CHECK(host_t->applies(s)) ||
        !CHECK(cuda_t->applies(s))) {
        printf("     %s: not applicable\n", c->label);
        return;
    }
    int idx[8] = {0}, v = c->knobs;
    for (int k = 0; k < host_t->n_knobs; k++) {
        idx[k] = v % host_t->knobs[k].n_values;
        v /= host_t->knobs[k].n_values;
    }
    char err[512], *src = NULL, *lj = NULL;
    if (!CHECK_EQ_INT(host_t->render(s, idx, &src, &lj, err, sizeof err), KF_OK)) {
        printf("     %s: %s\n", c->label, err);
        return;
    }
    if (!CHECK(kf_source_check_backend(src, "host", err, sizeof err)))
        printf("     %s: %s\n", c->label, err);
    kf_launch l;
    memset(&l, 0, sizeof l);
    void *blob = NULL;
    size_t len = 0;
    char *log = NULL;
    kf_compiled *k = NULL;
    void *bufs[KF_JOB_MAX_TENSORS + 1] = {0}, *orig[KF_JOB_MAX_TENSORS] = {0};
    if (!CHECK_EQ_INT(kf_launch_parse(lj, &l, err, sizeof err), KF_OK)) {
        printf("     %s: %s: %s\n", c->label, lj, err);
        goto out;
    }
    kf_status st = cc.compile(cc.self, src, &l, NULL, &blob, &len, &log);
    if (!CHECK_EQ_INT(st, KF_OK) || (log && !CHECK(!strstr(log, "warning")))) {
        printf("     %s: compile log:\n%s\n--- source ---\n%s\n", c->label, log ? log : "", src);
        goto out;
    }
    if (!CHECK_EQ_INT(cc.load(cc.self, blob, len, &l, 0, &k, err, sizeof err), KF_OK)) {
        printf("     %s: load: %s\n", c->label, err);
        goto out;
    }
    uint64_t rng = 0x9e3779b97f4a7c15ULL ^ (uint64_t)c->variant;
    int fresh = s->out_alias[0] == 0;
    /* inputs (the operands' values by in[] index), the output poisoned */
    int mask_of[KF_JOB_MAX_TENSORS] = {0};
    for (int j = 0; j < pb.n; j++)
        if (pb.in_idx[j] >= 0) mask_of[pb.in_idx[j]] = pb.mask[j];
    for (int i = 0; i < s->n_in; i++) {
        int64_t n = span(&s->in[i]);
        bufs[i] = calloc((size_t)n, (size_t)esz(s->in[i].dtype));
        orig[i] = calloc((size_t)n, (size_t)esz(s->in[i].dtype));
        for (int64_t e = 0; e < n; e++) put(bufs[i], s->in[i].dtype, e, gen(c, s->in[i].dtype, e, mask_of[i], &rng));
        if (i == pb.dest_in && pb.dest_in != pb.in_idx[0] && !is_float(s->in[i].dtype))
            for (int64_t e = 0; e < n; e++) put(bufs[i], s->in[i].dtype, e, 99); /* poison */
        else if (i == pb.dest_in && pb.dest_in != pb.in_idx[0])
            for (int64_t e = 0; e < n; e++) put(bufs[i], s->in[i].dtype, e, NAN);
        memcpy(orig[i], bufs[i], (size_t)n * (size_t)esz(s->in[i].dtype));
    }
    if (fresh) {
        int64_t n = span(&s->out[0]);
        bufs[s->n_in] = malloc((size_t)n * (size_t)esz(s->out[0].dtype));
        memset(bufs[s->n_in], 0x7f, (size_t)n * (size_t)esz(s->out[0].dtype));
    }
    if (!CHECK_EQ_INT(cc.launch(cc.self, k, bufs, s->n_in + fresh, NULL), 0)) goto out;
    /* the reference, from the original inputs */
    refsc rs = {.n = pb.n_s};
    for (int j = 0; j < pb.n_s; j++) {
        snprintf(rs.name[j], sizeof rs.name[j], "%s", pb.s_name[j]);
        rs.has[j] = pb.s_has[j];
        const kf_job_scalar *q = kf_job_scalar_find(s, pb.s_name[j]);
        rs.v[j] = q ? (q->kind == 'd' ? q->d : (double)q->i) : 0;
    }
    const kf_job_tensor *y = &s->out[0];
    int odt = y->dtype;
    double rtol = odt == KF_F16 ? 2e-3 : odt == KF_BF16 ? 1e-2 : odt == KF_F32 ? 2e-5 : 1e-12;
    if (pb.ptype == KF_BF16) rtol = 1e-2;
    if (pb.ptype == KF_F16 && rtol < 2e-3) rtol = 2e-3;
    long bad = 0;
    void *ybuf = bufs[fresh ? s->n_in : pb.dest_in];
    for (int64_t r = 0; r < R; r++)
        for (int64_t cc2 = 0; cc2 < C; cc2++) {
            double x[3] = {0, 0, 0};
            int has[3] = {1, 1, 1};
            for (int j = 0; j < pb.n; j++) {
                has[j] = pb.present[j];
                if (pb.in_idx[j] >= 0) {
                    const kf_job_tensor *t = &s->in[pb.in_idx[j]];
                    x[j] = get(orig[pb.in_idx[j]], t->dtype, off_of(t, r, cc2));
                } else if (pb.present[j]) {
                    const kf_job_scalar *q = kf_job_scalar_find(s, pb.name[j]);
                    x[j] = q->kind == 'd' ? q->d : (double)q->i;
                }
            }
            double want = ref(c->op, x, has, &rs, !is_float(pb.ptype), pb.ptype == KF_BOOL);
            if (odt == KF_BOOL) want = want != 0;
            else if (!is_float(odt)) want = (double)(long long)want;
            double got = get(ybuf, odt, off_of(y, r, cc2));
            int ok;
            if (isnan(want)) ok = isnan(got);
            else if (isinf(want)) ok = got == want;
            else if (!is_float(odt)) ok = got == want;
            else ok = fabs(got - want) <= 1e-5 + rtol * fabs(want) ||
                      (odt != KF_F32 && odt != KF_F64 && fabs(got - want) <= 1e-3 + rtol * fabs(want));
            if (!ok && bad++ < 3)
                printf("     %s: (%lld, %lld): got %.9g, want %.9g (x = %g %g %g)\n", c->label,
                       (long long)r, (long long)cc2, got, want, x[0], x[1], x[2]);
        }
    CHECK_EQ_INT(bad, 0);
    if (bad) printf("--- source of %s ---\n%s\n", c->label, src);
    for (int i = 0; i < s->n_in; i++) /* inputs unchanged */
        if (i != pb.dest_in)
            CHECK(!memcmp(orig[i], bufs[i], (size_t)span(&s->in[i]) * (size_t)esz(s->in[i].dtype)));
out:
    if (k) cc.unload(cc.self, k);
    for (int i = 0; i <= s->n_in; i++) free(bufs[i]);
    for (int i = 0; i < s->n_in; i++) free(orig[i]);
    free(blob);
    free(log);
    free(src);
    free(lj);
}

static void compile_cuda(tcase *c)
{
    int idx[8] = {0}, v = c->knobs;
    for (int k = 0; k < cuda_t->n_knobs; k++) {
        idx[k] = v % cuda_t->knobs[k].n_values;
        v /= cuda_t->knobs[k].n_values;
    }
    char err[512], *src = NULL, *lj = NULL, *log = NULL;
    void *blob = NULL;
    size_t len = 0;
    kf_launch l;
    memset(&l, 0, sizeof l);
    if (!CHECK_EQ_INT(cuda_t->render(&c->sig, idx, &src, &lj, err, sizeof err), KF_OK)) {
        printf("     %s (cuda): %s\n", c->label, err);
        return;
    }
    if (!CHECK(kf_source_check_backend(src, "nvrtc", err, sizeof err)))
        printf("     %s (cuda): %s\n", c->label, err);
    if (CHECK_EQ_INT(kf_launch_parse(lj, &l, err, sizeof err), KF_OK) && have_nv) {
        kf_status st = nv.compile(nv.self, src, &l, "sm_90", &blob, &len, &log);
        if (!CHECK_EQ_INT(st, KF_OK) || (log && !CHECK(!strstr(log, "warning"))))
            printf("     %s (cuda): log:\n%s\n--- source ---\n%s\n", c->label, log ? log : "", src);
    } else if (!have_nv) {
        c->cuda_src = src;
        src = NULL;
    }
    free(blob);
    free(log);
    free(src);
    free(lj);
}

/* Without NVRTC: every CUDA render in one translation unit for `nvcc --ptx` (nvcc_ptx.h). */
static void nvcc_all(void)
{
    char path[] = "/tmp/kf_pw_cudaXXXXXX";
    FILE *f = nvcc_ptx_open(path);
    if (!f) return;
    int n = 0;
    for (int i = 0; i < n_cases; i++) {
        if (!cases[i].cuda_src) continue;
        nvcc_ptx_append(f, cases[i].label, i, cases[i].cuda_src);
        n++;
    }
    nvcc_ptx_compile(f, path, n);
}

static _Atomic int next_case;
static void *worker(void *arg)
{
    (void)arg;
    for (int i; (i = atomic_fetch_add(&next_case, 1)) < n_cases;) {
        run_case(&cases[i]);
        compile_cuda(&cases[i]);
    }
    return NULL;
}

static void test_rows(void)
{
    int combos = 1;
    for (int k = 0; k < host_t->n_knobs; k++) combos *= host_t->knobs[k].n_values;
    /* each row contiguous, and two other variants in turn (the next that applies to it):
     * every variant is seen across the table, every row compiled three times or so */
    int made = 0;
    const char *only = getenv("KF_TEST_PW_ONLY"); /* rows whose name has this (debugging) */
    for (int r = 0; r < kf_pw_n_ops; r++) {
        if (only && !strstr(kf_pw_ops[r].name, only)) continue;
        made += make_case(&kf_pw_ops[r], V_CONTIG, (r * 7) % combos);
        for (int j = 0, v = 1 + (r * 2) % (V_COUNT - 1), got = 0; j < V_COUNT - 1 && got < 2; j++) {
            int w = 1 + (v - 1 + j) % (V_COUNT - 1);
            got += make_case(&kf_pw_ops[r], w, (r * 7 + w) % combos);
        }
    }
    printf("%d cases over %d rows\n", n_cases, made);
    long nth = sysconf(_SC_NPROCESSORS_ONLN);
    int n = nth < 1 ? 1 : nth > 4 ? 4 : (int)nth;
    pthread_t th[4];
    for (int i = 0; i < n; i++) CHECK(pthread_create(&th[i], NULL, worker, NULL) == 0);
    for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    if (!have_nv) nvcc_all();
    for (int i = 0; i < n_cases; i++) free(cases[i].cuda_src);
}

/* ---- refusals, promotion, conversions ---- */

static kf_job_sig binary(const char *op, int da, int db, int dout)
{
    kf_job_sig s = sig_of(op);
    s.in[0] = ten(da, 2, R, C, 0);
    s.in[1] = ten(db, 2, R, C, 0);
    s.n_in = 2;
    s.out[0] = ten(dout, 2, R, C, 0);
    s.n_out = 1;
    sig_add_scalar(&s, "alpha", 'i')->i = 1;
    return s;
}

static void test_refusals(void)
{
    kf_job_sig s = binary("aten::add.Tensor", KF_F32, KF_F32, KF_F32);
    CHECK(host_t->applies(&s) && cuda_t->applies(&s));
    CHECK(!host_t->applies(NULL));
    kf_job_sig r = s;
    r.out[0].dtype = KF_F16; /* not eager's result dtype */
    CHECK(!host_t->applies(&r));
    r = binary("aten::add.Tensor", KF_F16, KF_F32, KF_F32); /* mixed: f32 */
    CHECK(host_t->applies(&r));
    r = s;
    r.out[0].sizes[0] = r.in[0].sizes[0] = r.in[1].sizes[0] = 0; /* zero elements */
    CHECK(!host_t->applies(&r) && !cuda_t->applies(&r));
    r = s;
    r.n_scalars = 0; /* alpha missing */
    CHECK(!host_t->applies(&r));
    r = s;
    r.out_alias[0] = 1; /* claims to write self, but the op is out of place */
    CHECK(!host_t->applies(&r));
    r = binary("aten::add_.Tensor", KF_F32, KF_F32, KF_F32);
    CHECK(!host_t->applies(&r)); /* in place without the alias */
    r.out_alias[0] = 1;
    CHECK(host_t->applies(&r));
    r.in[0] = ten(KF_F32, 1, R, C, 0); /* self would broadcast: eager refuses */
    r.out[0] = r.in[0];
    r.out[0].sizes[0] = C;
    CHECK(!host_t->applies(&r));
    r = binary("aten::sub.Tensor", KF_BOOL, KF_BOOL, KF_BOOL); /* eager raises for bool sub */
    CHECK(!host_t->applies(&r));
    r = binary("aten::bitwise_and.Tensor", KF_F32, KF_F32, KF_F32);
    CHECK(!host_t->applies(&r));
    r = binary("aten::div.Tensor", KF_I32, KF_I32, KF_F32); /* true division: float32 */
    CHECK(host_t->applies(&r));
    r.out[0].dtype = KF_I32;
    CHECK(!host_t->applies(&r));
    r = binary("aten::div.Tensor_mode", KF_I32, KF_I32, KF_I32); /* integer floor: may raise */
    snprintf(sig_add_scalar(&r, "rounding_mode", 's')->s, 32, "floor");
    CHECK(!host_t->applies(&r));
    r = binary("aten::eq.Tensor", KF_F32, KF_F32, KF_BOOL);
    CHECK(host_t->applies(&r));
    r.out[0].dtype = KF_F32;
    CHECK(!host_t->applies(&r));
    r = binary("aten::where.self", KF_F32, KF_F32, KF_F32); /* condition not bool */
    r.in[2] = r.in[1];
    r.n_in = 3;
    CHECK(!host_t->applies(&r));
    r.in[0].dtype = KF_BOOL;
    CHECK(host_t->applies(&r));
    r = binary("aten::copy_", KF_F32, KF_F32, KF_F32);
    r.out_alias[0] = 1;
    CHECK(host_t->applies(&r));
    r.in[0].dtype = r.out[0].dtype = KF_I32; /* float -> int: not exact for NaN, refused */
    CHECK(!host_t->applies(&r));
    r = binary("aten::gelu", KF_F32, KF_F32, KF_F32);
    r.n_in = 1;
    r.n_scalars = 0;
    snprintf(sig_add_scalar(&r, "approximate", 's')->s, 32, "erf?");
    CHECK(!host_t->applies(&r));
    /* _to_copy: a cast to its dtype argument's, on its own device (None in a job), strided,
     * preserving format; given as those (layout=0, pin_memory=False, memory_format=1) too */
    static const char *const opt[] = {"layout", "device", "pin_memory", "memory_format"};
    static const int same[] = {0, -1, 0, 1}, other[] = {1, -1, 1, 0};
    for (int bad = -1; bad < 8; bad++) {
        int k_bad = bad < 4 ? bad : bad - 4; /* bad >= 4: that option given as its default */
        r = binary("aten::_to_copy", KF_BF16, KF_BF16, KF_F32);
        r.n_in = 1;
        r.n_scalars = 0; /* no alpha: scalars[] is dtype, the four options, non_blocking */
        sig_add_scalar(&r, "dtype", 'i')->i = 6;
        for (int k = 0; k < 4; k++) {
            if (k != k_bad) sig_add_scalar(&r, opt[k], 'n');
            else if (k == 1) snprintf(sig_add_scalar(&r, opt[k], 's')->s, 32, "cuda:0");
            else sig_add_scalar(&r, opt[k], k == 2 ? 'b' : 'i')->i = bad < 4 ? other[k] : same[k];
        }
        sig_add_scalar(&r, "non_blocking", 'b');
        int ok = bad < 0 || (bad >= 4 && k_bad != 1);
        if (!CHECK_EQ_INT(host_t->applies(&r) && cuda_t->applies(&r), ok))
            printf("     _to_copy with %s given%s\n", bad < 0 ? "nothing" : opt[k_bad],
                   bad >= 4 ? " as its default" : "");
    }
    r.scalars[4].kind = 'n'; /* memory_format=None again (the last one given) */
    r.scalars[0].i = 15; /* dtype=bf16 with an f32 output: not what eager gives */
    CHECK(!host_t->applies(&r));
    r.scalars[0].kind = 'n'; /* dtype=None: the input's */
    CHECK(!host_t->applies(&r));
    r.out[0].dtype = KF_BF16;
    CHECK(host_t->applies(&r));
    /* a Python number in place of `other` (scalars[] by its schema name) */
    r = binary("aten::mul.Tensor", KF_F16, KF_F16, KF_F16);
    r.n_in = 1;
    sig_add_scalar(&r, "other", 'd')->d = 0.1;
    CHECK(host_t->applies(&r));
    r.out[0].dtype = KF_F32; /* a Python float does not promote f16 */
    CHECK(!host_t->applies(&r));
    r = binary("aten::mul.Tensor", KF_I64, KF_I64, KF_F32); /* int * 0.5 -> float32 */
    r.n_in = 1;
    sig_add_scalar(&r, "other", 'd')->d = 0.5;
    CHECK(host_t->applies(&r));
    /* the wrapped constant is exact: 0.1 as a hex float of (float)0.1 */
    char *src = NULL, *lj = NULL, err[256];
    int idx[8] = {0};
    r = binary("aten::mul.Tensor", KF_F64, KF_F64, KF_F64);
    r.n_in = 1;
    sig_add_scalar(&r, "other", 'd')->d = 0.1;
    if (CHECK_EQ_INT(host_t->render(&r, idx, &src, &lj, err, sizeof err), KF_OK)) {
        char want[64];
        snprintf(want, sizeof want, "((kf_ct)%a)", 0.1);
        CHECK(strstr(src, want) != NULL);
    }
    free(src);
    free(lj);
    /* a Python number as eager's kernels on each device take it (H200, session 11): bf16 + 0.3
     * narrows it on the host (0.30078125) and not on CUDA (0.3f); f16 / 0.3 divides on the host
     * and multiplies by 1 / 0.3f on CUDA */
    static const struct {
        const char *op;
        int dt;
        double host, cuda;
        const char *host_div, *cuda_div;
    } dev[] = {
        {"aten::add.Tensor", KF_BF16, 0.30078125, (float)0.3, NULL, NULL},
        {"aten::sub.Tensor", KF_F16, 0.300048828125, (float)0.3, NULL, NULL},
        {"aten::mul.Tensor", KF_BF16, (float)0.3, (float)0.3, NULL, NULL},
        {"aten::div.Tensor", KF_F16, (float)0.3, 1.0f / (float)0.3, "((a) / (b))", "((a) * (b))"},
        {"aten::div.Tensor", KF_F64, 0.3, 1.0 / 0.3, "((a) / (b))", "((a) * (b))"},
        {"aten::eq.Scalar", KF_BF16, 0.30078125, 0.30078125, NULL, NULL},
    };
    for (size_t k = 0; k < sizeof dev / sizeof dev[0]; k++) {
        int res = strstr(dev[k].op, "eq.") ? KF_BOOL : dev[k].dt;
        r = binary(dev[k].op, dev[k].dt, dev[k].dt, res);
        r.n_in = 1;
        if (strstr(dev[k].op, "eq.")) r.n_scalars = 0; /* no alpha */
        sig_add_scalar(&r, "other", 'd')->d = 0.3;
        for (int cuda = 0; cuda < 2; cuda++) {
            const kf_template *t = cuda ? cuda_t : host_t;
            if (!CHECK_EQ_INT(t->render(&r, idx, &src, &lj, err, sizeof err), KF_OK)) {
                printf("     %s: %s\n", dev[k].op, err);
                continue;
            }
            char want[96];
            snprintf(want, sizeof want, "#define KF_W1 ((kf_ct)%a)", cuda ? dev[k].cuda : dev[k].host);
            if (!CHECK(strstr(src, want) != NULL)) printf("     %s (%s): no %s\n", dev[k].op, t->name, want);
            const char *div = cuda ? dev[k].cuda_div : dev[k].host_div;
            if (div) {
                snprintf(want, sizeof want, "#define KF_PW_DIV(a, b) %s", div);
                if (!CHECK(strstr(src, want) != NULL)) printf("     %s (%s): no %s\n", dev[k].op, t->name, want);
            }
            free(src);
            free(lj);
        }
    }
}

static void test_promotion(void)
{
    CHECK_EQ_INT(kf_pw_promote(KF_F16, KF_BF16), KF_F32);
    CHECK_EQ_INT(kf_pw_promote(KF_U8, KF_I8), KF_I16);
    CHECK_EQ_INT(kf_pw_promote(KF_U8, KF_I32), KF_I32);
    CHECK_EQ_INT(kf_pw_promote(KF_BOOL, KF_U8), KF_U8);
    CHECK_EQ_INT(kf_pw_promote(KF_I64, KF_F16), KF_F16);
    CHECK_EQ_INT(kf_pw_promote(KF_F32, KF_F64), KF_F64);
    CHECK_EQ_INT(kf_pw_promote(KF_I16, KF_I32), KF_I32);
    /* 0-dim tensors and Python numbers count only across categories */
    kf_job_sig s = binary("aten::add.Tensor", KF_F16, KF_F32, KF_F16);
    s.in[1].ndim = 0;
    CHECK(host_t->applies(&s)); /* f16 + 0-dim f32 -> f16 */
    s.in[0].dtype = KF_I32;
    s.out[0].dtype = KF_F32;
    CHECK(host_t->applies(&s)); /* i32 + 0-dim f32 -> f32 */
    s.in[1].dtype = KF_I64;
    s.out[0].dtype = KF_I32;
    CHECK(host_t->applies(&s)); /* i32 + 0-dim i64 -> i32 */
}

/* f16 / bf16 conversions of pointwise_math.h (linked through pointwise.c) over all 65536
 * patterns, against the decoder here and a round-trip of every float near each boundary */
static void test_conversions(void)
{
    extern const char kf_body_pointwise_math_h[];
    CHECK(strstr(kf_body_pointwise_math_h, "kf_pw_f2h") != NULL);
    /* a tiny host render of fill_ to f16 for every pattern would be slow; instead the
     * rendered kernel of copy_ f32 -> f16 / bf16 runs over every half value and midpoints */
    kf_job_sig s = sig_of("aten::copy_");
    int64_t n = 65536 * 2;
    int64_t sz[1] = {n};
    for (int target = 0; target < 2; target++) {
        int dt = target ? KF_BF16 : KF_F16;
        s.in[0] = sig_tensor(dt, 1, sz, 0, 16);
        s.in[1] = sig_tensor(KF_F32, 1, sz, 0, 16);
        s.n_in = 2;
        s.out[0] = s.in[0];
        s.n_out = 1;
        s.out_alias[0] = 1;
        int idx[8] = {0};
        char *src = NULL, *lj = NULL, err[256], *log = NULL;
        void *blob = NULL;
        size_t len = 0;
        kf_launch l;
        kf_compiled *k = NULL;
        if (!CHECK_EQ_INT(host_t->render(&s, idx, &src, &lj, err, sizeof err), KF_OK) ||
            !CHECK_EQ_INT(kf_launch_parse(lj, &l, err, sizeof err), KF_OK) ||
            !CHECK_EQ_INT(cc.compile(cc.self, src, &l, NULL, &blob, &len, &log), KF_OK) ||
            !CHECK_EQ_INT(cc.load(cc.self, blob, len, &l, 0, &k, err, sizeof err), KF_OK)) {
            printf("     conversions: %s\n%s\n", err, log ? log : "");
        } else {
            float *in = malloc((size_t)n * 4);
            uint16_t *out = malloc((size_t)n * 2), *want = malloc((size_t)n * 2);
            /* every pattern's value, and the midpoint to the next pattern (ties to even) */
            for (int64_t h = 0; h < 65536; h++) {
                double v = dt == KF_F16 ? half_decode((uint16_t)h) : get(&(uint16_t){(uint16_t)h}, KF_BF16, 0);
                double w = dt == KF_F16 ? half_decode((uint16_t)(h + 1)) : get(&(uint16_t){(uint16_t)(h + 1)}, KF_BF16, 0);
                int tie = isfinite(v) && isfinite(w) && (h & 0x7fff) < 0x7c00 && (h & 0x7fff) != 0x7bff;
                if (dt == KF_BF16) tie = isfinite(v) && isfinite(w) && (h & 0x7fff) < 0x7f7f;
                in[2 * h] = (float)v;
                want[2 * h] = (uint16_t)h;
                in[2 * h + 1] = tie ? (float)((v + w) / 2) : (float)v; /* ties to even */
                want[2 * h + 1] = (uint16_t)(tie ? (h & 1 ? h + 1 : h) : h);
            }
            void *ptrs[2] = {out, in};
            long bad = 0;
            if (CHECK_EQ_INT(cc.launch(cc.self, k, ptrs, 2, NULL), 0))
                for (int64_t e = 0; e < n; e++) {
                    double got = get(out, dt, e), x = in[e];
                    int ok = isnan(x) ? isnan(got) : out[e] == want[e];
                    if (!ok && bad++ < 3) printf("     %s: %.9g -> %.9g (0x%04x)\n", target ? "bf16" : "f16", x, got, out[e]);
                }
            CHECK_EQ_INT(bad, 0);
            free(in);
            free(out);
            free(want);
        }
        if (k) cc.unload(cc.self, k);
        free(blob);
        free(log);
        free(src);
        free(lj);
    }
}

int main(void)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; kf_builtin_templates[i]; i++) {
        if (!strcmp(kf_builtin_templates[i]->name, "host_pointwise")) host_t = kf_builtin_templates[i];
        if (!strcmp(kf_builtin_templates[i]->name, "cuda_pointwise")) cuda_t = kf_builtin_templates[i];
    }
    if (!CHECK(host_t && cuda_t) || !CHECK_EQ_INT(kf_compiler_host_create(&cc, NULL), KF_OK))
        return check_done("templates_pointwise");
    CHECK_STR(host_t->backend, "host");
    CHECK_STR(cuda_t->backend, "nvrtc");
    const char *inc = nvrtc_find_include();
    char err[512], path[4096];
    if (inc) {
        kf_status st = kf_compiler_nvrtc_create(&nv, NULL, inc, err, sizeof err);
        if (st != KF_OK && nvrtc_find_wheel(path, sizeof path))
            st = kf_compiler_nvrtc_create(&nv, path, inc, err, sizeof err);
        have_nv = st == KF_OK;
    }
    if (!have_nv) printf("SKIP NVRTC compiles: no NVRTC or CUDA headers here\n");
    test_promotion();
    test_refusals();
    test_conversions();
    test_rows();
    if (have_nv) nv.destroy(nv.self);
    cc.destroy(cc.self);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("run time %.1f s\n", (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
    return check_done("templates_pointwise");
}
