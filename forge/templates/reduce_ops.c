/* The generic reductions: the table of overloads, the plan of a signature and the combine text
 * (reduce_ops.h). What eager does, and so what the text does:
 *  - accumulation: float for f32/f16/bf16 outputs (eager's CUDA kernels; its CPU sum is a float
 *    cascade too), double for f64, int64 for integer and bool outputs (wrapping, as eager);
 *    `dtype=` casts the input first, which the load's conversion does;
 *  - amax/amin/max/min/argmax/argmin: NaN wins and stays (the first NaN's index), ties keep the
 *    lowest index;
 *  - var/std: two passes (the mean, then squared deviations), divided by max(N - correction, 0);
 *  - linalg_vector_norm: ord 2, 1, inf, -inf, 0 and any other p as (sum |x|^p)^(1/p);
 *  - logsumexp: the max shift, 0 where the max is infinite (eager masks it so), then
 *    log(sum(exp(x - m))) + m. */
#include "forge/templates/reduce_ops.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/dtype.h"

static const kf_red_op red_ops[] = {
    /* op, kind, dims, keepdim, float_only, n_out */
    {"aten::sum.dim_IntList", KF_RED_SUM, KF_RED_DIMS_LIST, 1, 0, 1},
    {"aten::sum", KF_RED_SUM, KF_RED_DIMS_ALL, 0, 0, 1},
    {"aten::mean.dim", KF_RED_MEAN, KF_RED_DIMS_LIST, 1, 1, 1},
    {"aten::mean", KF_RED_MEAN, KF_RED_DIMS_ALL, 0, 1, 1},
    {"aten::prod.dim_int", KF_RED_PROD, KF_RED_DIMS_INT, 1, 0, 1},
    {"aten::prod", KF_RED_PROD, KF_RED_DIMS_ALL, 0, 0, 1},
    {"aten::amax", KF_RED_AMAX, KF_RED_DIMS_LIST, 1, 0, 1},
    {"aten::amin", KF_RED_AMIN, KF_RED_DIMS_LIST, 1, 0, 1},
    {"aten::max.dim", KF_RED_MAX_DIM, KF_RED_DIMS_INT, 1, 0, 2},
    {"aten::min.dim", KF_RED_MIN_DIM, KF_RED_DIMS_INT, 1, 0, 2},
    {"aten::argmax", KF_RED_ARGMAX, KF_RED_DIMS_OPT, 1, 0, 1},
    {"aten::argmin", KF_RED_ARGMIN, KF_RED_DIMS_OPT, 1, 0, 1},
    {"aten::var.correction", KF_RED_VAR, KF_RED_DIMS_LIST, 1, 1, 1},
    {"aten::std.correction", KF_RED_STD, KF_RED_DIMS_LIST, 1, 1, 1},
    {"aten::var_mean.correction", KF_RED_VAR_MEAN, KF_RED_DIMS_LIST, 1, 1, 2},
    {"aten::linalg_vector_norm", KF_RED_NORM, KF_RED_DIMS_LIST, 1, 1, 1},
    {"aten::logsumexp", KF_RED_LOGSUMEXP, KF_RED_DIMS_LIST, 1, 1, 1},
};

const kf_red_op *kf_red_op_find(const char *op)
{
    if (!op) return NULL;
    for (size_t i = 0; i < sizeof red_ops / sizeof red_ops[0]; i++)
        if (!strcmp(red_ops[i].op, op)) return &red_ops[i];
    return NULL;
}

const char *kf_red_host_type(int dtype)
{
    switch (dtype) {
    case KF_F32: return "float";
    case KF_F64: return "double";
    case KF_I8: return "int8_t";
    case KF_U8: return "uint8_t";
    case KF_I16: return "int16_t";
    case KF_I32: return "int32_t";
    case KF_I64: return "int64_t";
    case KF_BOOL: return "_Bool";
    default: return NULL;
    }
}

static int is_float(int dt) { return dt == KF_F32 || dt == KF_F64 || dt == KF_F16 || dt == KF_BF16; }

static int backend_dtype(int dt, int host)
{
    if (host) return kf_red_host_type(dt) != NULL;
    return dt == KF_F32 || dt == KF_F16 || dt == KF_BF16 || dt == KF_F64;
}

static int is_index_kind(int k)
{
    return k == KF_RED_MAX_DIM || k == KF_RED_MIN_DIM || k == KF_RED_ARGMAX || k == KF_RED_ARGMIN;
}

/* The reduced dims as a mask; *flat: dim None of argmax (all dims, one flattened index). */
static int reduced_mask(const kf_job_sig *sig, const kf_red_op *op, int ndim, unsigned *mask,
                        int *flat)
{
    const unsigned all = ndim >= 32 ? ~0u : (1u << ndim) - 1u;
    const kf_job_scalar *dim = kf_job_scalar_find(sig, "dim");
    *mask = 0;
    *flat = 0;
    if (op->dims == KF_RED_DIMS_ALL) {
        if (dim) return 0;
        *mask = all;
        return 1;
    }
    if (!dim) return 0;
    if (op->dims == KF_RED_DIMS_LIST && dim->kind == 'n') {
        *mask = all;
        return 1;
    }
    if (op->dims == KF_RED_DIMS_OPT && dim->kind == 'n') {
        *mask = all;
        *flat = 1;
        return 1;
    }
    int n = dim->kind == 'l' ? dim->n : 1;
    if (op->dims == KF_RED_DIMS_LIST ? dim->kind != 'l' : dim->kind != 'i') return 0;
    if (n == 0) { /* [] = all (amax, sum, var, norm; logsumexp refuses it before any output) */
        *mask = all;
        return 1;
    }
    for (int k = 0; k < n; k++) {
        int64_t d = dim->kind == 'l' ? dim->v[k] : dim->i;
        if (d < -ndim || d >= ndim) return 0;
        if (d < 0) d += ndim;
        if (*mask >> d & 1u) return 0;
        *mask |= 1u << d;
    }
    return 1;
}

static int scalar_num(const kf_job_scalar *s, double *v)
{
    if (!s) return 0;
    if (s->kind == 'i') *v = (double)s->i;
    else if (s->kind == 'd') *v = s->d;
    else return 0;
    return 1;
}

/* the accumulation type for a value dtype */
static int acc_of(int dt)
{
    return dt == KF_F64 ? KF_F64 : is_float(dt) ? KF_F32 : KF_I64;
}

int kf_red_plan_make(const kf_job_sig *sig, int host, kf_red_plan *p)
{
    memset(p, 0, sizeof *p);
    if (!sig) return 0;
    const kf_red_op *op = kf_red_op_find(sig->op);
    if (!op || sig->n_in != 1 || sig->n_out != op->n_out) return 0;
    for (int j = 0; j < sig->n_out; j++)
        if (sig->out_alias[j] != 0) return 0;
    const kf_job_tensor *x = &sig->in[0], *y = &sig->out[0];
    const kf_job_tensor *y2 = op->n_out == 2 ? &sig->out[1] : NULL;
    if (x->ndim < 1 || x->ndim > KF_MAX_DIMS) return 0;
    int64_t n = kf_job_tensor_numel(x);
    if (n <= 0 || n > ((int64_t)1 << 46)) return 0;
    for (int d = 0; d < x->ndim; d++)
        if (x->strides[d] < 0) return 0;
    p->op = op;
    p->in_dt = x->dtype;
    p->out_dt = y->dtype;
    p->out2_dt = y2 ? y2->dtype : KF_DTYPE_UNKNOWN;
    p->index = is_index_kind(op->kind);
    if (!backend_dtype(x->dtype, host)) return 0;

    /* output dtypes as eager makes them */
    switch (op->kind) {
    case KF_RED_SUM: case KF_RED_PROD: case KF_RED_MEAN:
        if (!backend_dtype(y->dtype, host) || y->dtype == KF_BOOL) return 0;
        if (is_float(x->dtype) && !is_float(y->dtype)) return 0; /* a float cast to int */
        /* float sums and means accumulate in double. The tolerance is relative to the result,
         * a float sum's rounding error to its terms: eager's order (a cascade on the host,
         * short runs merged in trees on CUDA) stays within it where a sequential float sum of
         * thousands of terms does not (x.sum(0) of [4096, 2048] randn * 100: a few columns
         * near 0 off by 4e-3, over 1e-4 + 1e-4 |sum|). In double, one rounding at the end. */
        p->acc = op->kind != KF_RED_PROD && is_float(y->dtype) ? KF_F64 : acc_of(y->dtype);
        break;
    case KF_RED_AMAX: case KF_RED_AMIN:
        if (y->dtype != x->dtype) return 0;
        p->acc = acc_of(x->dtype);
        break;
    case KF_RED_MAX_DIM: case KF_RED_MIN_DIM:
        if (y->dtype != x->dtype || y2->dtype != KF_I64) return 0;
        p->acc = acc_of(x->dtype);
        break;
    case KF_RED_ARGMAX: case KF_RED_ARGMIN:
        if (y->dtype != KF_I64) return 0;
        p->acc = acc_of(x->dtype);
        break;
    default: /* float results */
        if (!is_float(y->dtype) || !backend_dtype(y->dtype, host)) return 0;
        if (y2 && y2->dtype != y->dtype) return 0;
        if (is_float(x->dtype) && acc_of(x->dtype) != acc_of(y->dtype) &&
            op->kind != KF_RED_NORM)
            return 0; /* only norm's dtype= changes a float input's type */
        p->acc = acc_of(y->dtype);
        break;
    }
    if (op->float_only && !is_float(y->dtype)) return 0;
    if (!host && p->acc == KF_I64 && !p->index) return 0; /* CUDA: float types only */

    /* the op's scalars */
    if (op->kind == KF_RED_NORM) {
        if (!scalar_num(kf_job_scalar_find(sig, "ord"), &p->p) || isnan(p->p)) return 0;
    }
    if (op->kind == KF_RED_VAR || op->kind == KF_RED_STD || op->kind == KF_RED_VAR_MEAN) {
        const kf_job_scalar *c = kf_job_scalar_find(sig, "correction");
        if (!c) return 0;
        if (c->kind == 'n') p->corr = 1;
        else if (!scalar_num(c, &p->corr) || !isfinite(p->corr)) return 0;
    }
    int keep = 0;
    if (op->keepdim) {
        const kf_job_scalar *kd = kf_job_scalar_find(sig, "keepdim");
        if (!kd || kd->kind != 'b') return 0;
        keep = kd->i != 0;
    }
    /* dtype=: the output has it; None: eager's default (a float input's own type, int64 for
     * an integer sum or prod, float for an integer logsumexp) */
    const kf_job_scalar *dt = kf_job_scalar_find(sig, "dtype");
    if (dt && dt->kind == 'i') {
        if (kf_dtype_from_scalar_type(dt->i) != y->dtype) return 0;
    } else if (dt && dt->kind != 'n') {
        return 0;
    } else if (!p->index && op->kind != KF_RED_AMAX && op->kind != KF_RED_AMIN) {
        int want = is_float(x->dtype) ? x->dtype
                   : op->kind == KF_RED_SUM || op->kind == KF_RED_PROD ? KF_I64
                   : op->kind == KF_RED_LOGSUMEXP ? KF_F32 : KF_DTYPE_UNKNOWN;
        if (y->dtype != want) return 0;
    }

    unsigned red;
    int flat;
    if (!reduced_mask(sig, op, x->ndim, &red, &flat)) return 0;

    /* output shape: od[d] the output dim of input dim d, -1 when dropped */
    int od[KF_MAX_DIMS], k = 0;
    for (int d = 0; d < x->ndim; d++) {
        int is_red = red >> d & 1u;
        if (flat) {
            od[d] = keep ? d : -1;
            if (keep && (k >= y->ndim || y->sizes[k] != 1)) return 0;
            k += keep;
            continue;
        }
        od[d] = keep ? d : is_red ? -1 : k;
        if (keep || !is_red) {
            if (k >= y->ndim || y->sizes[k] != (is_red ? 1 : x->sizes[d])) return 0;
            k++;
        }
    }
    if (k != y->ndim || !kf_job_tensor_dense(y)) return 0;
    if (y2 && (!kf_job_tensor_same_shape(y, y2) || !kf_job_tensor_dense(y2))) return 0;

    /* kept dims by input stride, innermost first (ties: the later dim inside) */
    int kd_[KF_MAX_DIMS], nk = 0;
    for (int d = x->ndim - 1; d >= 0; d--)
        if (!(red >> d & 1u) && x->sizes[d] != 1) kd_[nk++] = d;
    for (int a = 1; a < nk; a++)
        for (int b = a; b > 0 && x->strides[kd_[b]] < x->strides[kd_[b - 1]]; b--) {
            int t = kd_[b];
            kd_[b] = kd_[b - 1];
            kd_[b - 1] = t;
        }
    p->o = 1;
    for (int j = 0; j < nk; j++) {
        int d = kd_[j];
        int64_t sz = x->sizes[d], si = x->strides[d], so = y->strides[od[d]];
        int64_t so2 = y2 ? y2->strides[od[d]] : 0;
        int m = p->nk - 1;
        if (m >= 0 && si == p->kin[m] * p->ksize[m] && so == p->kout[m] * p->ksize[m] &&
            so2 == p->kout2[m] * p->ksize[m]) {
            p->ksize[m] *= sz;
        } else {
            p->ksize[p->nk] = sz;
            p->kin[p->nk] = si;
            p->kout[p->nk] = so;
            p->kout2[p->nk] = so2;
            p->nk++;
        }
        p->o *= sz;
    }
    /* reduced dims: index outputs count r in logical order (last dim fastest), the others
     * walk them by input stride */
    int rd[KF_MAX_DIMS], nr = 0;
    for (int d = x->ndim - 1; d >= 0; d--)
        if ((red >> d & 1u) && x->sizes[d] != 1) rd[nr++] = d;
    if (!p->index)
        for (int a = 1; a < nr; a++)
            for (int b = a; b > 0 && x->strides[rd[b]] < x->strides[rd[b - 1]]; b--) {
                int t = rd[b];
                rd[b] = rd[b - 1];
                rd[b - 1] = t;
            }
    p->r = 1;
    for (int j = 0; j < nr; j++) {
        int d = rd[j];
        int m = p->nr - 1;
        if (m >= 0 && x->strides[d] == p->rin[m] * p->rsize[m]) {
            p->rsize[m] *= x->sizes[d];
        } else {
            p->rsize[p->nr] = x->sizes[d];
            p->rin[p->nr] = x->strides[d];
            p->nr++;
        }
        p->r *= x->sizes[d];
    }
    return p->o >= 1 && p->r >= 1 && p->o <= ((int64_t)1 << 40);
}

/* ---- the source ---- */

/* "a % size * stride" terms of one offset function over runs, innermost first */
static void emit_off(kf_strbuf *b, const char *fnq, const char *name, const char *var, int n,
                     const int64_t *size, const int64_t *st)
{
    kf_strbuf_printf(b, "%s long long %s(long long %s)\n{\n    (void)%s;\n    return 0", fnq, name,
                     var, var);
    int64_t below = 1;
    for (int d = 0; d < n; d++) {
        kf_strbuf_printf(b, " + %s", var);
        if (below > 1) kf_strbuf_printf(b, " / %lldLL", (long long)below);
        if (d + 1 < n) kf_strbuf_printf(b, " %% %lldLL", (long long)size[d]);
        if (st[d] != 1) kf_strbuf_printf(b, " * %lldLL", (long long)st[d]);
        below *= size[d];
    }
    kf_strbuf_printf(b, ";\n}\n");
}

static const char *fn(const kf_red_plan *p, const char *f32, const char *f64)
{
    return p->acc == KF_F64 ? f64 : f32;
}

/* NaN-propagating max (gt = ">") or min ("<") of state field a and value v */
static void emit_pick(kf_strbuf *b, const char *name, const char *cmp)
{
    kf_strbuf_printf(b,
                     "#define %s(a, v) (((v) %s (a) || (KF_ISNAN(v) && !KF_ISNAN(a))) ? (v) : (a))\n",
                     name, cmp);
}

void kf_red_emit(kf_strbuf *b, const kf_red_plan *p, const char *fnq, int cuda)
{
    const int kind = p->op->kind, fl = p->acc != KF_I64;
    const char *acc = p->acc == KF_F64 ? "double" : p->acc == KF_F32 ? "float" : "long long";
    kf_strbuf_printf(b, "/* %s: outputs %lld, each reducing %lld elements */\n", p->op->op,
                     (long long)p->o, (long long)p->r);
    kf_strbuf_printf(b, "#define KF_O %lldLL\n#define KF_R %lldLL\n", (long long)p->o,
                     (long long)p->r);
    kf_strbuf_printf(b, "typedef %s kf_acc;\ntypedef struct kf_st {\n    kf_acc a;\n"
                        "    long long i;\n} kf_st;\n", acc);
    kf_strbuf_printf(b, "#define KF_ISNAN(v) %s\n", fl ? "((v) != (v))" : "0");
    /* the element as kf_acc: f16/bf16 through float */
    int half = p->in_dt == KF_F16 || p->in_dt == KF_BF16;
    kf_strbuf_printf(b, "#define KF_LD(e) ((kf_acc)%s)\n", cuda && half ? "kf_to_f(e)" : "(e)");
    const char *inf = !fl ? "9223372036854775807LL"
                      : cuda ? (p->acc == KF_F64 ? "__longlong_as_double(0x7ff0000000000000ULL)"
                                                 : "__int_as_float(0x7f800000)")
                             : "INFINITY";
    const char *lowest = fl ? NULL : "(-9223372036854775807LL - 1)";
    char neg_inf[80];
    snprintf(neg_inf, sizeof neg_inf, "(-%s)", inf);
    kf_strbuf_printf(b, "#define KF_HIGHEST ((kf_acc)%s)\n#define KF_LOWEST ((kf_acc)%s)\n", inf,
                     lowest ? lowest : neg_inf);
    emit_pick(b, "KF_MAXN", ">");
    emit_pick(b, "KF_MINN", "<");
    const char *fabs_ = fn(p, "fabsf", "fabs"), *sqrt_ = fn(p, "sqrtf", "sqrt");
    const char *exp_ = fn(p, "expf", "exp"), *log_ = fn(p, "logf", "log"),
               *pow_ = fn(p, "powf", "pow");

    /* the first pass */
    int pre = kind == KF_RED_VAR || kind == KF_RED_STD || kind == KF_RED_VAR_MEAN ||
              kind == KF_RED_LOGSUMEXP;
    kf_strbuf_printf(b, "#define KF_PRE %d\n#define KF_INDEX %d\n#define KF_NOUT %d\n", pre,
                     p->index, p->op->n_out);
    if (kind == KF_RED_LOGSUMEXP)
        kf_strbuf_printf(b,
                         "#define KF_PINIT(s) ((s).a = KF_LOWEST)\n"
                         "#define KF_PSTEP(s, v) ((s).a = KF_MAXN((s).a, (v)))\n"
                         "#define KF_PMERGE(s, t) ((s).a = KF_MAXN((s).a, (t).a))\n"
                         "/* eager shifts by the max, by 0 where it is infinite */\n"
                         "#define KF_PFINAL(s) (isinf((s).a) ? (kf_acc)0 : (s).a)\n");
    else if (pre)
        kf_strbuf_printf(b,
                         "#define KF_PINIT(s) ((s).a = (kf_acc)0)\n"
                         "#define KF_PSTEP(s, v) ((s).a += (v))\n"
                         "#define KF_PMERGE(s, t) ((s).a += (t).a)\n"
                         "#define KF_PFINAL(s) ((s).a / (kf_acc)KF_R)\n");

    /* the main pass */
    const char *init = "(kf_acc)0", *step = NULL, *merge = "(s).a += (t).a", *fin = "(s).a";
    char buf[256], fbuf[256];
    switch (kind) {
    case KF_RED_SUM: step = "(s).a += (v)"; break;
    case KF_RED_MEAN: step = "(s).a += (v)"; fin = "((s).a / (kf_acc)KF_R)"; break;
    case KF_RED_PROD: init = "(kf_acc)1"; step = "(s).a *= (v)"; merge = "(s).a *= (t).a"; break;
    case KF_RED_AMAX: case KF_RED_MAX_DIM: case KF_RED_ARGMAX:
        init = "KF_LOWEST";
        step = "(s).a = KF_MAXN((s).a, (v))";
        merge = "(s).a = KF_MAXN((s).a, (t).a)";
        break;
    case KF_RED_AMIN: case KF_RED_MIN_DIM: case KF_RED_ARGMIN:
        init = "KF_HIGHEST";
        step = "(s).a = KF_MINN((s).a, (v))";
        merge = "(s).a = KF_MINN((s).a, (t).a)";
        break;
    case KF_RED_VAR: case KF_RED_STD: case KF_RED_VAR_MEAN: {
        /* divided by max(N - correction, 0): by 0 as a product with inf (0 -> NaN, else inf),
         * which compilers do not flag */
        double div = (double)p->r - p->corr;
        if (div > 0)
            kf_strbuf_printf(b, "#define KF_VAR(a) ((a) / (kf_acc)%.17g)\n", div);
        else
            kf_strbuf_printf(b, "#define KF_VAR(a) ((a) * KF_HIGHEST) /* N - correction <= 0 */\n");
        step = "(s).a += ((v) - m) * ((v) - m)";
        snprintf(fbuf, sizeof fbuf, kind == KF_RED_STD ? "%s(KF_VAR((s).a))" : "KF_VAR((s).a)",
                 sqrt_);
        fin = fbuf;
        break;
    }
    case KF_RED_NORM:
        if (p->p == 2) {
            step = "(s).a += (v) * (v)";
            snprintf(fbuf, sizeof fbuf, "%s((s).a)", sqrt_);
            fin = fbuf;
        } else if (p->p == 1) {
            snprintf(buf, sizeof buf, "(s).a += %s(v)", fabs_);
            step = buf;
        } else if (isinf(p->p)) {
            init = p->p > 0 ? "(kf_acc)0" : "KF_HIGHEST";
            snprintf(buf, sizeof buf, "(s).a = %s((s).a, %s(v))", p->p > 0 ? "KF_MAXN" : "KF_MINN",
                     fabs_);
            step = buf;
            merge = p->p > 0 ? "(s).a = KF_MAXN((s).a, (t).a)" : "(s).a = KF_MINN((s).a, (t).a)";
        } else if (p->p == 0) {
            step = "(s).a += (kf_acc)((v) != 0)";
        } else {
            snprintf(buf, sizeof buf, "(s).a += %s(%s(v), (kf_acc)%.17g)", pow_, fabs_, p->p);
            step = buf;
            snprintf(fbuf, sizeof fbuf, "%s((s).a, (kf_acc)%.17g)", pow_, 1.0 / p->p);
            fin = fbuf;
        }
        break;
    case KF_RED_LOGSUMEXP:
        snprintf(buf, sizeof buf, "(s).a += %s((v) - m)", exp_);
        step = buf;
        snprintf(fbuf, sizeof fbuf, "(%s((s).a) + m)", log_);
        fin = fbuf;
        break;
    }
    if (p->index) {
        /* the first best element: strictly better, or NaN over a number; merges prefer the
         * lower index among equals (NaNs count as equal) */
        const char *pick = kind == KF_RED_MIN_DIM || kind == KF_RED_ARGMIN ? "<" : ">";
        kf_strbuf_printf(b,
                         "#define KF_BETTER(v, a) ((v) %s (a) || (KF_ISNAN(v) && !KF_ISNAN(a)))\n"
                         "#define KF_INIT(s) ((s).a = %s, (s).i = 0)\n"
                         "#define KF_STEP(s, v, r) do { if (KF_BETTER((v), (s).a)) { (s).a = (v); "
                         "(s).i = (r); } } while (0)\n"
                         "#define KF_MERGE(s, t) do { if (KF_BETTER((t).a, (s).a) || "
                         "(((t).a == (s).a || (KF_ISNAN((t).a) && KF_ISNAN((s).a))) && "
                         "(t).i < (s).i)) (s) = (t); } while (0)\n",
                         pick, init);
    } else {
        kf_strbuf_printf(b,
                         "#define KF_INIT(s) ((s).a = %s, (s).i = 0)\n"
                         "#define KF_STEP(s, v, r) ((void)(r), %s)\n"
                         "#define KF_MERGE(s, t) (%s)\n",
                         init, step, merge);
    }
    kf_strbuf_printf(b, "#define KF_FINAL(s) (%s)\n", fin);
    /* the offsets */
    emit_off(b, fnq, "kf_in_o", "o", p->nk, p->ksize, p->kin);
    emit_off(b, fnq, "kf_in_r", "r", p->nr, p->rsize, p->rin);
    emit_off(b, fnq, "kf_out_o", "o", p->nk, p->ksize, p->kout);
    if (p->op->n_out == 2) emit_off(b, fnq, "kf_out2_o", "o", p->nk, p->ksize, p->kout2);
    /* the innermost kept run, when it is contiguous in the input (host columns mode) */
    kf_strbuf_printf(b, "#define KF_K0 %lldLL\n#define KF_K0_UNIT %d\n",
                     (long long)(p->nk ? p->ksize[0] : 1), p->nk > 0 && p->kin[0] == 1);
    kf_strbuf_printf(b, "#define KF_R_UNIT %d /* the reduced elements are adjacent */\n",
                     p->nr <= 1 && (p->nr == 0 || p->rin[0] == 1));
}
