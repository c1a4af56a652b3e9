/* The pointwise engine's binding (pointwise_ops.h): a signature against a row of the table, with
 * eager's type promotion (c10's result_type: dimensioned tensors, then 0-dim ones, then Python
 * numbers, by category), its conversions of scalars and operands, and the element function both
 * templates print. Everything a row cannot serve exactly is refused here, so applies() is one
 * call. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dtype.h"
#include "forge/templates/bodies.h"
#include "forge/templates/pointwise_ops.h"

/* The element helpers themselves, in double: the renderer rounds scalars to f16/bf16 with the
 * very functions the kernels use. */
#define KF_PW_FN static inline
typedef double kf_ct;
#define KF_CT_F64 1
#define KF_CT_INT 0
static inline unsigned kf_pw_fbits(float f)
{
    unsigned u;
    memcpy(&u, &f, sizeof u);
    return u;
}
static inline float kf_pw_bitsf(unsigned u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
#include "forge/templates/kernels/pointwise_math.h"

/* 0 bool, 1 integer, 2 floating, -1 a dtype the engine does not take */
static int dt_cat(int dt)
{
    switch (dt) {
    case KF_BOOL: return 0;
    case KF_U8: case KF_I8: case KF_I16: case KF_I32: case KF_I64: return 1;
    case KF_F16: case KF_BF16: case KF_F32: case KF_F64: return 2;
    default: return -1;
    }
}

static int dt_size(int dt)
{
    switch (dt) {
    case KF_BOOL: case KF_U8: case KF_I8: return 1;
    case KF_I16: case KF_F16: case KF_BF16: return 2;
    case KF_I32: case KF_F32: return 4;
    default: return 8;
    }
}

int kf_pw_promote(int a, int b)
{
    if (a == KF_DTYPE_UNKNOWN) return b;
    if (b == KF_DTYPE_UNKNOWN || a == b) return a;
    if (a == KF_BOOL) return b;
    if (b == KF_BOOL) return a;
    int ca = dt_cat(a), cb = dt_cat(b);
    if (ca == 2 && cb == 2) {
        if ((a == KF_F16 && b == KF_BF16) || (a == KF_BF16 && b == KF_F16)) return KF_F32;
        return dt_size(a) >= dt_size(b) ? a : b;
    }
    if (ca == 2) return a;
    if (cb == 2) return b;
    if (a == KF_U8 || b == KF_U8) { /* u8 with a signed type: the next signed that holds both */
        int o = a == KF_U8 ? b : a;
        return o == KF_I8 ? KF_I16 : o;
    }
    return dt_size(a) >= dt_size(b) ? a : b;
}

/* c10's combine_categories (complex aside) */
static int combine(int higher, int lower)
{
    if (dt_cat(higher) == 2) return higher;
    if (higher == KF_BOOL || dt_cat(lower) == 2) return kf_pw_promote(higher, lower);
    return higher != KF_DTYPE_UNKNOWN ? higher : lower;
}

const char *kf_pw_ctype(int dtype, int cuda)
{
    switch (dtype) {
    case KF_F32: return "float";
    case KF_F64: return "double";
    case KF_F16: return cuda ? "__half" : "uint16_t";
    case KF_BF16: return cuda ? "__nv_bfloat16" : "uint16_t";
    case KF_I8: return cuda ? "signed char" : "int8_t";
    case KF_U8: return cuda ? "unsigned char" : "uint8_t";
    case KF_I16: return cuda ? "short" : "int16_t";
    case KF_I32: return cuda ? "int" : "int32_t";
    case KF_I64: return cuda ? "long long" : "int64_t";
    case KF_BOOL: return cuda ? "bool" : "_Bool";
    default: return NULL;
    }
}

const char *kf_pw_rectype(int dtype)
{
    switch (dtype) {
    case KF_F16: return "__half";
    case KF_BF16: return "__nv_bfloat16";
    case KF_BOOL: return "bool";
    default: return dt_cat(dtype) >= 0 ? kf_pw_ctype(dtype, 0) : NULL;
    }
}

/* one blank-separated token of `list` at *p into name (suffix characters into flags) */
static int next_token(const char **p, char *name, size_t cap, char *flags, size_t fcap)
{
    while (**p == ' ') (*p)++;
    if (!**p) return 0;
    size_t n = 0, f = 0;
    for (; **p && **p != ' '; (*p)++) {
        char c = **p;
        if (strchr("!&?@~^/", c)) {
            if (f + 1 < fcap) flags[f++] = c;
        } else if (n + 1 < cap) {
            name[n++] = c;
        }
    }
    name[n] = 0;
    flags[f] = 0;
    return 1;
}

/* scalar s (0: not passed) is `value`: "" None; digits an integer or bool of that value
 * (layout=0 is torch.strided); otherwise a string */
static int value_is(const kf_job_scalar *s, const char *name, const char *value)
{
    if (!*value) return !s || s->kind == 'n';
    if (!s) return !strcmp(name, "approximate") && !strcmp(value, "none"); /* its default */
    if (strspn(value, "0123456789") == strlen(value))
        return (s->kind == 'i' || s->kind == 'b') && s->i == strtoll(value, 0, 10);
    return s->kind == 's' && !strcmp(s->s, value);
}

/* the row's condition holds: blank-separated "name=value", each value one of '|'-separated
 * alternatives ("approximate=tanh"; "rounding_mode=": None; "layout=|0": None or 0) */
static int when_holds(const kf_job_sig *sig, const char *when)
{
    if (!when) return 1;
    for (const char *c = when; *c;) {
        char name[24], value[32];
        size_t len = strcspn(c, " ");
        const char *eq = memchr(c, '=', len);
        size_t n = eq ? (size_t)(eq - c) : 0, vl = eq ? len - n - 1 : 0;
        if (!eq || n >= sizeof name || vl >= sizeof value) return 0;
        memcpy(name, c, n);
        name[n] = 0;
        const kf_job_scalar *s = kf_job_scalar_find(sig, name);
        int holds = 0;
        for (const char *v = eq + 1, *end = c + len; !holds && v <= end;) {
            size_t al = strcspn(v, "| ");
            if (v + al > end) al = (size_t)(end - v);
            memcpy(value, v, al);
            value[al] = 0;
            holds = value_is(s, name, value);
            v += al + 1;
        }
        if (!holds) return 0;
        c += len;
        while (*c == ' ') c++;
    }
    return 1;
}

/* A scalar's value as eager converts it to dtype dt (the result exact in dt): *d for floating,
 * *i for integer and bool. 0 when it has no such value (NaN or out of range into an integer). */
static int scalar_to(const kf_job_scalar *s, int dt, double *d, long long *i)
{
    int c = dt_cat(dt);
    if (c == 2) {
        if (dt == KF_F64) *d = s->kind == 'd' ? s->d : (double)s->i;
        else {
            float f = s->kind == 'd' ? (float)s->d : (float)s->i; /* c10 goes through float */
            *d = dt == KF_F16 ? kf_pw_rnd_f16(f) : dt == KF_BF16 ? kf_pw_rnd_bf16(f) : f;
        }
        return 1;
    }
    long long v;
    if (s->kind == 'd') {
        if (!(s->d > -9.2e18 && s->d < 9.2e18)) return 0;
        v = (long long)s->d;
        if (c == 0) { *i = s->d != 0; return 1; }
    } else {
        v = s->i;
    }
    switch (dt) {
    case KF_BOOL: *i = v != 0; break;
    case KF_U8: *i = (unsigned char)(unsigned long long)v; break;
    case KF_I8: *i = (signed char)(unsigned char)(unsigned long long)v; break;
    case KF_I16: *i = (short)(unsigned short)(unsigned long long)v; break;
    case KF_I32: *i = (int)(unsigned)(unsigned long long)v; break;
    default: *i = v; break;
    }
    return 1;
}

/* the compute type of a promoted dtype: float, double or long long */
static int ct_of(int p)
{
    return dt_cat(p) < 2 ? KF_I64 : p == KF_F64 ? KF_F64 : KF_F32;
}

/* a value of dtype `from` (d or i) in compute type ct (exact: ct holds every value of it) */
static void value_in_ct(int from, int ct, double d, long long i, double *od, long long *oi)
{
    if (ct == KF_I64) *oi = dt_cat(from) == 2 ? (long long)d : i;
    else *od = dt_cat(from) == 2 ? d : ct == KF_F32 ? (double)(float)i : (double)i;
}

static int same_layout(const kf_job_tensor *a, const kf_job_tensor *b)
{
    if (!kf_job_tensor_same_shape(a, b) || a->dtype != b->dtype) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->sizes[d] != 1 && a->strides[d] != b->strides[d]) return 0;
    return 1;
}

static const kf_pw_op *find_row(const kf_job_sig *sig)
{
    for (int r = 0; r < kf_pw_n_ops; r++)
        if (!strcmp(kf_pw_ops[r].name, sig->op) && when_holds(sig, kf_pw_ops[r].when))
            return &kf_pw_ops[r];
    return NULL;
}

/* the operands: from in[] in schema order, or a Python number in scalars[] by its name */
static int bind_operands(const kf_job_sig *sig, kf_pw_bind *b, const kf_job_scalar **wrapped)
{
    const char *p = b->op->args;
    char name[24], flags[8];
    int next = 0;
    b->dest_in = -1;
    while (next_token(&p, name, sizeof name, flags, sizeof flags)) {
        const kf_job_scalar *s = kf_job_scalar_find(sig, name);
        if (strchr(flags, '!')) { /* the destination: a tensor argument */
            if (next >= sig->n_in || b->dest_in >= 0) return 0;
            b->dest_in = next++;
            continue;
        }
        if (b->n >= KF_PW_MAX_OPS) return 0;
        int k = b->n++;
        snprintf(b->name[k], sizeof b->name[k], "%s", name);
        b->mask[k] = strchr(flags, '&') != NULL;
        b->unnarrowed[k] = strchr(flags, '~') != NULL;
        b->unnarrowed_cuda[k] = b->unnarrowed[k] || strchr(flags, '^') != NULL;
        b->recip[k] = strchr(flags, '/') != NULL;
        b->in_idx[k] = -1;
        b->present[k] = 1;
        b->dtype[k] = KF_DTYPE_UNKNOWN;
        if (s && (s->kind == 'd' || s->kind == 'i' || s->kind == 'b')) {
            if (b->mask[k]) return 0;
            wrapped[k] = s;
        } else if (s && s->kind == 'n') {
            if (!strchr(flags, '?')) return 0;
            b->present[k] = 0;
            b->recip[k] = 0;
        } else if (s) {
            return 0;
        } else {
            if (next >= sig->n_in) return 0;
            b->dtype[k] = sig->in[next].dtype;
            if (sig->in[next].ndim != 0) b->unnarrowed[k] = 0; /* '~' reads only a 0-dim one so */
            b->unnarrowed_cuda[k] = b->recip[k] = 0; /* '^', '/': Python numbers only */
            b->in_idx[k] = next++;
        }
    }
    if (next != sig->n_in) return 0; /* a tensor the row does not know */
    if (b->op->inplace) {
        if (b->n < 1 || b->in_idx[0] < 0 || b->dest_in >= 0) return 0;
        b->dest_in = b->in_idx[0];
    }
    return 1;
}

/* eager's promoted dtype of the operands (KF_PW_OPMATH / KF_PW_CAST) */
static int promoted(const kf_job_sig *sig, const kf_pw_bind *b, const kf_job_scalar **wrapped)
{
    int dim = KF_DTYPE_UNKNOWN, zero = KF_DTYPE_UNKNOWN, wr = KF_DTYPE_UNKNOWN, any = 0;
    for (int k = 0; k < b->n; k++) {
        if (b->mask[k] || !b->present[k]) continue;
        any = 1;
        if (wrapped[k]) {
            /* a Python float counts as the default dtype (float32) */
            int dt = wrapped[k]->kind == 'd' ? KF_F32 : wrapped[k]->kind == 'i' ? KF_I64 : KF_BOOL;
            wr = kf_pw_promote(wr, dt);
        } else {
            const kf_job_tensor *t = &sig->in[b->in_idx[k]];
            if (t->ndim == 0) zero = kf_pw_promote(zero, t->dtype);
            else dim = kf_pw_promote(dim, t->dtype);
        }
    }
    if (!any) return sig->out[0].dtype; /* fill_, zero_: the destination's */
    return combine(dim, combine(zero, wr));
}

/* the row's scalar arguments, as KF_S_<name> in the compute type */
static int bind_scalars(const kf_job_sig *sig, kf_pw_bind *b)
{
    const char *p = b->op->scalars ? b->op->scalars : "";
    char name[24], flags[8];
    while (next_token(&p, name, sizeof name, flags, sizeof flags)) {
        if (b->n_s >= KF_PW_MAX_SCALARS) return 0;
        int k = b->n_s++;
        snprintf(b->s_name[k], sizeof b->s_name[k], "%s", name);
        const kf_job_scalar *s = kf_job_scalar_find(sig, name);
        if (!s || s->kind == 'n') {
            if (!strchr(flags, '?')) return 0;
            continue; /* s_has 0 */
        }
        if (s->kind != 'd' && s->kind != 'i' && s->kind != 'b') return 0;
        b->s_has[k] = 1;
        double d = 0;
        long long i = 0;
        /* '@': to the promoted dtype first (Scalar.to<scalar_t>()); else to the compute type */
        int to = strchr(flags, '@') ? b->ptype : b->ct;
        if (b->ct == KF_I64 && s->kind == 'd' && !strchr(flags, '@') &&
            (!isfinite(s->d) || s->d != floor(s->d)))
            return 0; /* eager refuses a fractional alpha for integers */
        if (!scalar_to(s, to, &d, &i)) return 0;
        value_in_ct(to, b->ct, d, i, &b->s_d[k], &b->s_i[k]);
    }
    return 1;
}

int kf_pw_bind_sig(const kf_job_sig *sig, kf_pw_bind *b)
{
    if (!sig || !b) return 0;
    memset(b, 0, sizeof *b);
    if (sig->n_out != 1 || sig->n_in > KF_JOB_MAX_TENSORS) return 0;
    b->op = find_row(sig);
    if (!b->op) return 0;
    const kf_job_scalar *wrapped[KF_PW_MAX_OPS] = {0};
    if (!bind_operands(sig, b, wrapped)) return 0;
    const kf_job_tensor *y = &sig->out[0];
    b->out_dtype = y->dtype;
    if (dt_cat(y->dtype) < 0) return 0;
    if (b->dest_in >= 0 ? sig->out_alias[0] != b->dest_in + 1 : sig->out_alias[0] != 0) return 0;
    if (b->dest_in >= 0 && !same_layout(&sig->in[b->dest_in], y)) return 0;
    for (int i = 0; i < sig->n_in; i++)
        if (dt_cat(sig->in[i].dtype) < 0) return 0;
    for (int k = 0; k < b->n; k++)
        if (b->mask[k] && b->in_idx[k] >= 0 && sig->in[b->in_idx[k]].dtype != KF_BOOL) return 0;

    const kf_pw_op *op = b->op;
    if (op->rule == KF_PW_LOGICAL) {
        b->ptype = KF_BOOL;
        b->ct = KF_I64;
    } else {
        b->ptype = promoted(sig, b, wrapped);
        static const int flag[3] = {KF_PW_BOOL, KF_PW_INT, KF_PW_FLOAT};
        if (dt_cat(b->ptype) < 0 || !(op->dtypes & flag[dt_cat(b->ptype)])) return 0;
        if (op->result == KF_PW_TOFLOAT && dt_cat(b->ptype) < 2) b->ptype = KF_F32;
        b->ct = ct_of(b->ptype);
    }
    /* the result: what eager gives a fresh output; a destination takes any dtype eager casts
     * to, except an integer from float math (no exact conversion of NaN / out of range) */
    int fresh = b->dest_in < 0;
    if (op->result == KF_PW_BOOLRES) {
        if (y->dtype != KF_BOOL) return 0;
    } else if (op->result == KF_PW_ASDTYPE) {
        const kf_job_scalar *dt = kf_job_scalar_find(sig, "dtype");
        int want = !dt || dt->kind == 'n' ? b->ptype
                 : dt->kind == 'i'        ? kf_dtype_from_scalar_type(dt->i)
                                          : KF_DTYPE_UNKNOWN;
        if (!fresh || y->dtype != want) return 0;
    } else if (fresh && y->dtype != b->ptype) {
        return 0;
    }
    if (b->ct != KF_I64 && dt_cat(y->dtype) == 1) return 0;
    if (op->rule == KF_PW_OPMATH && !fresh && op->result != KF_PW_BOOLRES &&
        dt_cat(y->dtype) < dt_cat(b->ptype))
        return 0;

    for (int k = 0; k < b->n; k++) { /* constants (Python numbers) in the compute type */
        if (!wrapped[k]) continue;
        double d = 0;
        long long i = 0;
        if (op->rule == KF_PW_LOGICAL) {
            b->wint[k] = wrapped[k]->kind == 'd' ? wrapped[k]->d != 0 : wrapped[k]->i != 0;
            continue;
        }
        int half = b->ptype == KF_F16 || b->ptype == KF_BF16;
        int to = b->unnarrowed[k] && half ? b->ct : b->ptype;
        if (!scalar_to(wrapped[k], to, &d, &i)) return 0;
        value_in_ct(to, b->ct, d, i, &b->wval[k], &b->wint[k]);
        to = b->unnarrowed_cuda[k] && half ? b->ct : b->ptype;
        if (!scalar_to(wrapped[k], to, &d, &i)) return 0;
        value_in_ct(to, b->ct, d, i, &b->wval_cuda[k], &b->wint_cuda[k]);
        if (b->recip[k] && b->ct == KF_F32) b->wval_cuda[k] = 1.0f / (float)b->wval_cuda[k];
        else if (b->recip[k] && b->ct == KF_F64) b->wval_cuda[k] = 1.0 / b->wval_cuda[k];
        else b->recip[k] = 0; /* an integer quotient: no such rewrite */
    }
    if (!bind_scalars(sig, b)) return 0;

    for (int k = 0; k < b->n; k++) {
        if (b->in_idx[k] < 0) continue;
        b->op_of[b->n_tensors] = k;
        b->ops[b->n_tensors++] = sig->in[b->in_idx[k]];
    }
    if (kf_job_tensor_numel(y) > ((int64_t)1 << 46)) return 0;
    return kf_ew_collapse(y, b->ops, b->n_tensors, &b->dd);
}

/* ---- the element function ---- */

/* a value of the compute type as an exact literal */
static void lit(kf_strbuf *b, int ct, double d, long long i)
{
    if (ct == KF_I64) {
        if (i == (-9223372036854775807LL - 1)) kf_strbuf_printf(b, "((kf_ct)(-9223372036854775807LL - 1))");
        else kf_strbuf_printf(b, "((kf_ct)%lldLL)", i);
    } else if (isnan(d)) {
        kf_strbuf_printf(b, "((kf_ct)KF_PW_NAN)");
    } else if (isinf(d)) {
        kf_strbuf_printf(b, "(%s(kf_ct)KF_PW_INF)", d < 0 ? "-" : "");
    } else {
        kf_strbuf_printf(b, "((kf_ct)%a)", d); /* hex: every bit of it */
    }
}

/* the value of element o of p (dtype dt) as its own C value */
static void raw_load(kf_strbuf *b, int dt, int cuda, const char *p)
{
    if (dt == KF_F16 || dt == KF_BF16) {
        if (cuda) kf_strbuf_printf(b, "kf_to_f(%s)", p);
        else kf_strbuf_printf(b, "%s(%s)", dt == KF_F16 ? "kf_pw_h2f" : "kf_pw_bf2f", p);
    } else if (dt_cat(dt) == 2) {
        kf_strbuf_printf(b, "%s", p);
    } else {
        kf_strbuf_printf(b, "(long long)%s", p);
    }
}

/* KF_LD<k>(p, o): operand k's element, converted to the promoted dtype, in the compute type */
static void emit_load(kf_strbuf *b, const kf_pw_bind *pb, int k, int dt, int cuda, const char *sfx)
{
    kf_strbuf_printf(b, "#define KF_LD%d%s(p, o) ((kf_ct)(", k, sfx);
    int P = pb->ptype;
    if (pb->mask[k] || pb->op->rule == KF_PW_LOGICAL) {
        raw_load(b, dt, cuda, "(p)[o]");
        kf_strbuf_printf(b, " != 0))\n");
        return;
    }
    if (pb->op->rule == KF_PW_CAST || dt == P || (dt_cat(dt) == 1 && P == KF_I64) ||
        (pb->unnarrowed[k] && !cuda && (P == KF_F16 || P == KF_BF16))) {
        raw_load(b, dt, cuda, "(p)[o]");
    } else if (dt_cat(P) == 2) {
        const char *r = P == KF_F16 ? "kf_pw_rnd_f16((float)" : P == KF_BF16 ? "kf_pw_rnd_bf16((float)"
                      : P == KF_F32 ? "((float)" : "((double)";
        kf_strbuf_printf(b, "%s(", r);
        raw_load(b, dt, cuda, "(p)[o]");
        kf_strbuf_printf(b, "))");
    } else if (P == KF_BOOL) {
        raw_load(b, dt, cuda, "(p)[o]");
        kf_strbuf_printf(b, " != 0");
    } else { /* a wider integer (a 0-dim operand) truncated to the promoted one */
        kf_strbuf_printf(b, "(%s)(unsigned long long)(", kf_pw_ctype(P, cuda));
        raw_load(b, dt, cuda, "(p)[o]");
        kf_strbuf_printf(b, ")");
    }
    kf_strbuf_printf(b, "))\n");
}

/* KF_ST(v): the result in the destination's storage type */
static void emit_store(kf_strbuf *b, const kf_pw_bind *pb, int cuda, const char *sfx)
{
    int o = pb->out_dtype;
    kf_strbuf_printf(b, "#define KF_ST%s(v) ", sfx);
    if (o == KF_F16 || o == KF_BF16) {
        if (cuda)
            kf_strbuf_printf(b, "kf_from_f<%s>((float)(v))\n", kf_pw_ctype(o, 1));
        else
            kf_strbuf_printf(b, "%s((float)(v))\n", o == KF_F16 ? "kf_pw_f2h" : "kf_pw_f2bf");
    } else if (o == KF_BOOL) {
        kf_strbuf_printf(b, "((%s)((v) != 0))\n", kf_pw_ctype(o, cuda));
    } else if (dt_cat(o) == 1) { /* from integer math: wraps */
        kf_strbuf_printf(b, "((%s)(unsigned long long)(long long)(v))\n", kf_pw_ctype(o, cuda));
    } else {
        kf_strbuf_printf(b, "((%s)(v))\n", kf_pw_ctype(o, cuda));
    }
}

static const char *const ctn[] = {[KF_F32] = "float", [KF_F64] = "double", [KF_I64] = "long long"};

static void emit_comment(kf_strbuf *b, const kf_pw_bind *pb)
{
    const kf_pw_op *op = pb->op;
    kf_strbuf_printf(b, "/* pointwise engine: %s%s%s; promoted dtype %d, computed in %s */\n",
                     op->name, op->when ? " " : "", op->when ? op->when : "", pb->ptype,
                     ctn[pb->ct]);
}

void kf_pw_emit_math(kf_strbuf *b, int ct, int p_bool, int cuda)
{
    if (cuda)
        kf_strbuf_printf(b,
                         "#define KF_PW_FN __device__ __forceinline__\n"
                         "KF_PW_FN unsigned kf_pw_fbits(float f) { return __float_as_uint(f); }\n"
                         "KF_PW_FN float kf_pw_bitsf(unsigned u) { return __uint_as_float(u); }\n"
                         "#define KF_PW_INF __longlong_as_double(0x7ff0000000000000LL)\n"
                         "#define KF_PW_NAN __longlong_as_double(0x7ff8000000000000LL)\n");
    else
        kf_strbuf_printf(b,
                         "#define KF_PW_FN static inline\n"
                         "KF_PW_FN unsigned kf_pw_fbits(float f)\n"
                         "{\n    union { float f; unsigned u; } c;\n    c.f = f;\n    return c.u;\n}\n"
                         "KF_PW_FN float kf_pw_bitsf(unsigned u)\n"
                         "{\n    union { float f; unsigned u; } c;\n    c.u = u;\n    return c.f;\n}\n"
                         "#define KF_PW_INF HUGE_VAL\n#define KF_PW_NAN ((double)NAN)\n");
    kf_strbuf_printf(b, "typedef %s kf_ct;\n#define KF_CT_F64 %d\n#define KF_CT_INT %d\n"
                        "#define KF_P_BOOL %d\n%s",
                     ctn[ct], ct == KF_F64, ct == KF_I64, p_bool, kf_body_pointwise_math_h);
}

void kf_pw_emit_op(kf_strbuf *b, const kf_pw_bind *pb, int cuda, const char *sfx)
{
    const kf_pw_op *op = pb->op;
    if (sfx[0]) emit_comment(b, pb);
    kf_strbuf_printf(b, "typedef %s kf_rt%s;\n", op->result == KF_PW_BOOLRES ? "int" : "kf_ct", sfx);
    /* where eager multiplies in the storage type (kf_pw_pow_scalar): BFloat16 on CPU and CUDA,
     * Half on CUDA only (CPU's Half pow computes in float) */
    kf_strbuf_printf(b, "#define KF_PW_PROD_RND %d\n",
                     pb->ptype == KF_BF16 ? 2 : pb->ptype == KF_F16 && cuda ? 1 : 0);
    int recip = 0;
    for (int k = 0; k < pb->n; k++) recip |= cuda && pb->in_idx[k] < 0 && pb->recip[k];
    kf_strbuf_printf(b, "#define KF_PW_DIV(a, b) ((a) %c (b))\n", recip ? '*' : '/');
    for (int k = 0; k < pb->n_s; k++) {
        kf_strbuf_printf(b, "#define has_%s %d\n#define KF_S_%s ", pb->s_name[k], pb->s_has[k],
                         pb->s_name[k]);
        lit(b, pb->ct, pb->s_d[k], pb->s_i[k]);
        kf_strbuf_printf(b, "\n");
    }
    for (int k = 0; k < pb->n; k++) {
        kf_strbuf_printf(b, "#define has_%s %d\n", pb->name[k], pb->present[k]);
        if (pb->in_idx[k] >= 0) {
            emit_load(b, pb, k, pb->dtype[k], cuda, sfx);
        } else { /* a Python number, or an absent optional operand (0, unused) */
            kf_strbuf_printf(b, "#define KF_W%d%s ", k, sfx);
            if (cuda) lit(b, pb->ct, pb->wval_cuda[k], pb->wint_cuda[k]);
            else lit(b, pb->ct, pb->wval[k], pb->wint[k]);
            kf_strbuf_printf(b, "\n");
        }
    }
    emit_store(b, pb, cuda, sfx);
    kf_strbuf_printf(b, "KF_PW_FN kf_rt%s kf_pw_f%s(", sfx, sfx);
    for (int k = 0; k < pb->n; k++) kf_strbuf_printf(b, "%skf_ct x_%s", k ? ", " : "", pb->name[k]);
    kf_strbuf_printf(b, "%s)\n{\n    return (kf_rt%s)(%s);\n}\n", pb->n ? "" : "void", sfx,
                     op->expr);
    if (!sfx[0]) return;
    /* another op's function follows: its names are its own */
    for (int k = 0; k < pb->n_s; k++)
        kf_strbuf_printf(b, "#undef has_%s\n#undef KF_S_%s\n", pb->s_name[k], pb->s_name[k]);
    for (int k = 0; k < pb->n; k++) kf_strbuf_printf(b, "#undef has_%s\n", pb->name[k]);
    kf_strbuf_printf(b, "#undef KF_PW_PROD_RND\n#undef KF_PW_DIV\n");
}

void kf_pw_emit_element(kf_strbuf *b, const kf_pw_bind *pb, int cuda)
{
    emit_comment(b, pb);
    kf_pw_emit_math(b, pb->ct, pb->ptype == KF_BOOL, cuda);
    kf_pw_emit_op(b, pb, cuda, "");
}

void kf_pw_emit_call_as(kf_strbuf *b, const kf_pw_bind *pb, const char *sfx,
                        const char *const *src, const char *const *off)
{
    kf_strbuf_printf(b, "kf_pw_f%s(", sfx);
    for (int k = 0; k < pb->n; k++) {
        if (k) kf_strbuf_printf(b, ", ");
        if (pb->in_idx[k] < 0) kf_strbuf_printf(b, "KF_W%d%s", k, sfx);
        else if (src && src[k]) kf_strbuf_printf(b, "KF_LD%d%s(%s, %s)", k, sfx, src[k], off[k]);
        else kf_strbuf_printf(b, "KF_LD%d%s(p%d, %s)", k, sfx, pb->in_idx[k], off[k]);
    }
    kf_strbuf_printf(b, ")");
}

int kf_pw_emit_params(kf_strbuf *b, const kf_job_sig *sig, const kf_pw_bind *pb, int cuda,
                      const char **args, char (*types)[32])
{
    int fresh = pb->dest_in < 0, na = 0;
    for (int i = 0; i <= sig->n_in; i++) {
        if (i == sig->n_in && !fresh) break;
        int dt = i < sig->n_in ? sig->in[i].dtype : sig->out[0].dtype;
        int w = i == sig->n_in || i == pb->dest_in;
        /* restrict only beside a fresh output, which no input can alias */
        kf_strbuf_printf(b, "%s%s%s *%sp%d", i ? ", " : "", w ? "" : "const ",
                         kf_pw_ctype(dt, cuda), fresh ? (cuda ? "__restrict__ " : "restrict ") : "",
                         i);
        snprintf(types[na], sizeof types[na], "%s%s*", w ? "" : "const ", kf_pw_rectype(dt));
        args[na] = types[na];
        na++;
    }
    return na;
}

void kf_pw_emit_call(kf_strbuf *b, const kf_pw_bind *pb, const char *const *off)
{
    kf_pw_emit_call_as(b, pb, "", NULL, off);
}
