/* The builtin host templates (forge/templates/template.h): every template renders, compiles with the host
 * backend and computes its op against a double-precision reference (host_cat: torch.cat's rules
 * written out, tests/c/cat_ref.h, bit for bit), for every knob combination:
 * each template has small "full" signatures that run its whole knob grid, and the other
 * signatures (row lengths like 37 that the unroll does not divide, single rows, several OpenMP
 * chunks, huge values) split the grid between them. applies() refuses what a template cannot
 * serve exactly. Outputs are poisoned with NaN before each launch; inputs must come back
 * unchanged; every source passes the evaluator's source check. The inline math that the `math`
 * knob selects (kf_body_host_math_h) is checked on its own against libm in double over a sweep of
 * all floats and the special values.
 *
 * Variants are built and checked by a few threads (compilation dominates the run time). */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/c/cat_ref.h"
#include "tests/c/check.h"
#include "tests/c/job_sig_build.h"
#include "compile/compiler.h"
#include "forge/eval/eval.h"
#include "forge/job/job.h"
#include "forge/templates/template.h"

extern const char kf_body_host_math_h[]; /* forge/templates/kernels/host_math.h */

static kf_compiler_i cc;
static int applies_any(const kf_job_sig *s);

static int is_host(const kf_template *t)
{
    return !strcmp(t->backend, "host");
}

/* ---- building signatures ---- */

static kf_job_tensor tensor(int dtype, int ndim, const int64_t *sizes)
{
    kf_job_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dtype;
    t.ndim = ndim;
    int64_t st = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        t.sizes[d] = sizes[d];
        t.strides[d] = st;
        st *= sizes[d];
    }
    return t;
}
#define T32(...)                                                                  \
    tensor(KF_F32, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), \
           (int64_t[]){__VA_ARGS__})

static void add_int(kf_job_sig *s, const char *name, int64_t v) { sig_add_scalar(s, name, 'i')->i = v; }
static void add_bool(kf_job_sig *s, const char *name, int v) { sig_add_scalar(s, name, 'b')->i = v; }
static void add_double(kf_job_sig *s, const char *name, double v)
{
    sig_add_scalar(s, name, 'd')->d = v;
}
static void add_str(kf_job_sig *s, const char *name, const char *v)
{
    snprintf(sig_add_scalar(s, name, 's')->s, sizeof s->scalars[0].s, "%s", v);
}
static void add_list(kf_job_sig *s, const char *name, int n, const int64_t *v)
{
    kf_job_scalar *c = sig_add_scalar(s, name, 'l');
    c->n = n;
    for (int i = 0; i < n; i++) c->v[i] = v[i];
}

static kf_job_sig softmax_sig(const char *op, kf_job_tensor x, int64_t dim)
{
    kf_job_sig s = sig_of(op);
    s.n_in = 1;
    s.in[0] = x;
    s.n_out = 1;
    s.out[0] = x;
    add_int(&s, "dim", dim);
    add_bool(&s, "half_to_float", 0);
    return s;
}

/* native_layer_norm(input, normalized_shape (last `nn` dims), weight?, bias?, eps) */
static kf_job_sig ln_sig(kf_job_tensor x, int nn, int has_w, int has_b, double eps)
{
    kf_job_sig s = sig_of("aten::native_layer_norm");
    const int64_t *ns = x.sizes + x.ndim - nn;
    s.in[s.n_in++] = x;
    if (has_w) s.in[s.n_in++] = tensor(KF_F32, nn, ns);
    if (has_b) s.in[s.n_in++] = tensor(KF_F32, nn, ns);
    add_list(&s, "normalized_shape", nn, ns);
    if (!has_w) sig_add_scalar(&s, "weight", 'n');
    if (!has_b) sig_add_scalar(&s, "bias", 'n');
    add_double(&s, "eps", eps);
    int64_t stat[KF_MAX_DIMS];
    for (int d = 0; d < x.ndim; d++) stat[d] = d < x.ndim - nn ? x.sizes[d] : 1;
    s.n_out = 3;
    s.out[0] = x;
    s.out[1] = s.out[2] = tensor(KF_F32, x.ndim, stat);
    return s;
}

static kf_job_sig unary_sig(const char *op, kf_job_tensor x, const char *approximate)
{
    kf_job_sig s = sig_of(op);
    s.n_in = 1;
    s.in[0] = x;
    s.n_out = 1;
    s.out[0] = x;
    if (approximate) add_str(&s, "approximate", approximate);
    return s;
}

/* alpha_kind: 0 none, 'i' or 'd' */
static kf_job_sig binary_sig(const char *op, kf_job_tensor x, int alpha_kind, double alpha)
{
    kf_job_sig s = sig_of(op);
    s.n_in = 2;
    s.in[0] = s.in[1] = x;
    s.n_out = 1;
    s.out[0] = x;
    if (alpha_kind == 'i') add_int(&s, "alpha", (int64_t)alpha);
    if (alpha_kind == 'd') add_double(&s, "alpha", alpha);
    return s;
}

/* ---- data and references ---- */

static uint64_t rng_state;
static double urand(void) /* [0, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}

enum { DATA_PLAIN, DATA_SOFTMAX, DATA_HUGE, DATA_OFFSET };

/* Mostly [-3, 3); every so often a large magnitude; DATA_SOFTMAX adds -inf entries, makes the
 * second row all -inf and puts a NaN in the fourth; DATA_HUGE adds +-1e30 and a few +-inf and
 * NaN; DATA_OFFSET is 1000 + [-3, 3). */
static void fill(float *p, int64_t n, int64_t cols, int mode)
{
    for (int64_t i = 0; i < n; i++) {
        double u = urand(), v = urand() * 6.0 - 3.0;
        if (mode == DATA_OFFSET) v += 1000.0;
        else if (u < 0.06) v *= 3000.0; /* |v| up to ~1e4 */
        else if (mode == DATA_SOFTMAX && u < 0.10) v = -INFINITY;
        else if (mode == DATA_HUGE && u < 0.09) v = v < 0 ? -1e30 : 1e30;
        else if (mode == DATA_HUGE && u < 0.093) v = v < -1 ? -INFINITY : v < 1 ? NAN : INFINITY;
        p[i] = (float)v;
    }
    if (mode == DATA_SOFTMAX && n >= 2 * cols && cols > 0)
        for (int64_t j = cols; j < 2 * cols; j++) p[j] = -INFINITY;
    if (mode == DATA_SOFTMAX && n >= 4 * cols && cols > 0) p[3 * cols + cols / 2] = NAN;
}

static void ref_softmax(const float *x, double *y, int64_t rows, int64_t cols, int is_log)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        double *yr = y + r * cols;
        double m = -INFINITY, s = 0.0;
        for (int64_t j = 0; j < cols; j++) m = xr[j] > m ? xr[j] : m;
        for (int64_t j = 0; j < cols; j++) s += exp((double)xr[j] - m);
        for (int64_t j = 0; j < cols; j++)
            yr[j] = m == -INFINITY ? NAN : is_log ? ((double)xr[j] - m) - log(s)
                                               : exp((double)xr[j] - m) / s;
    }
}

static double ref_unary(const char *op, const char *approx, double x)
{
    if (!strcmp(op, "aten::relu")) return x > 0 || isnan(x) ? x : 0.0;
    if (!strcmp(op, "aten::silu")) return x / (1.0 + exp(-x));
    if (approx && !strcmp(approx, "tanh"))
        return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
}

/* ---- one test case: a signature, its inputs, the reference outputs ---- */

typedef struct tcase {
    char label[96];
    const kf_template *tmpl;
    int stride, offset; /* runs the knob combinations v with v % stride == offset */
    kf_job_sig sig;
    double tol;
    float *in[KF_JOB_MAX_TENSORS];
    int64_t in_n[KF_JOB_MAX_TENSORS];
    double *ref[KF_JOB_MAX_OUTPUTS];
    int64_t out_n[KF_JOB_MAX_OUTPUTS];
} tcase;

#define MAX_CASES 32
static tcase cases[MAX_CASES];
static int n_cases;

static const kf_job_scalar *scalar(const kf_job_sig *s, const char *name)
{
    return kf_job_scalar_find(s, name);
}

/* stride 1: the whole knob grid; else the combinations v with v % stride == offset */
static void make_case(const char *tmpl_name, kf_job_sig sig, int mode, int stride, int offset)
{
    if (!CHECK(n_cases < MAX_CASES)) return;
    tcase *c = &cases[n_cases++];
    memset(c, 0, sizeof *c);
    c->sig = sig;
    c->stride = stride;
    c->offset = offset;
    for (int i = 0; kf_builtin_templates[i]; i++)
        if (!strcmp(kf_builtin_templates[i]->name, tmpl_name)) c->tmpl = kf_builtin_templates[i];
    CHECK(c->tmpl != NULL);
    /* exactly the intended host template serves it */
    CHECK(c->tmpl && c->tmpl->applies(&sig));
    CHECK_EQ_INT(applies_any(&sig), 1);

    const kf_job_tensor *x = &sig.in[0];
    int64_t cols = x->ndim ? x->sizes[x->ndim - 1] : 1;
    int pos = snprintf(c->label, sizeof c->label, "%s [", sig.op);
    for (int d = 0; d < x->ndim && pos < (int)sizeof c->label; d++)
        pos += snprintf(c->label + pos, sizeof c->label - (size_t)pos, "%s%lld", d ? "," : "",
                        (long long)x->sizes[d]);
    if (pos < (int)sizeof c->label) snprintf(c->label + pos, sizeof c->label - (size_t)pos, "]");

    for (int i = 0; i < sig.n_in; i++) {
        c->in_n[i] = kf_job_tensor_numel(&sig.in[i]);
        c->in[i] = malloc((size_t)c->in_n[i] * sizeof(float));
        fill(c->in[i], c->in_n[i], sig.in[i].sizes[sig.in[i].ndim - 1], i == 0 ? mode : DATA_PLAIN);
    }
    for (int i = 0; i < sig.n_out; i++) {
        c->out_n[i] = kf_job_tensor_numel(&sig.out[i]);
        c->ref[i] = malloc((size_t)c->out_n[i] * sizeof(double));
    }
    int64_t n = c->in_n[0];
    c->tol = 1e-5;
    if (!strcmp(sig.op, "aten::_softmax") || !strcmp(sig.op, "aten::_log_softmax")) {
        c->tol = 1e-4;
        ref_softmax(c->in[0], c->ref[0], n / cols, cols, !strcmp(sig.op, "aten::_log_softmax"));
    } else if (!strcmp(sig.op, "aten::native_layer_norm")) {
        c->tol = 1e-4;
        const kf_job_scalar *ns = scalar(&sig, "normalized_shape");
        int64_t nn = 1;
        for (int k = 0; k < ns->n; k++) nn *= ns->v[k];
        int has_w = !scalar(&sig, "weight"), has_b = !scalar(&sig, "bias");
        const float *w = has_w ? c->in[1] : NULL, *b = has_b ? c->in[has_w ? 2 : 1] : NULL;
        double eps = scalar(&sig, "eps")->d;
        for (int64_t r = 0; r < n / nn; r++) {
            const float *xr = c->in[0] + r * nn;
            double m = 0.0, v = 0.0;
            for (int64_t j = 0; j < nn; j++) m += xr[j];
            m /= (double)nn;
            for (int64_t j = 0; j < nn; j++) v += ((double)xr[j] - m) * ((double)xr[j] - m);
            v /= (double)nn;
            double rs = 1.0 / sqrt(v + eps);
            for (int64_t j = 0; j < nn; j++)
                c->ref[0][r * nn + j] =
                    ((double)xr[j] - m) * rs * (w ? w[j] : 1.0) + (b ? b[j] : 0.0);
            c->ref[1][r] = m;
            c->ref[2][r] = rs;
        }
    } else if (!strcmp(sig.op, "aten::add.Tensor") || !strcmp(sig.op, "aten::mul.Tensor")) {
        const kf_job_scalar *al = scalar(&sig, "alpha");
        double alpha = !al ? 1.0 : al->kind == 'i' ? (double)al->i : al->d;
        int mul = !strcmp(sig.op, "aten::mul.Tensor");
        for (int64_t i = 0; i < n; i++)
            c->ref[0][i] = mul ? (double)c->in[0][i] * c->in[1][i]
                               : (double)c->in[0][i] + alpha * c->in[1][i];
    } else {
        const kf_job_scalar *ap = scalar(&sig, "approximate");
        for (int64_t i = 0; i < n; i++)
            c->ref[0][i] = ref_unary(sig.op, ap ? ap->s : NULL, c->in[0][i]);
    }
}

static void free_cases(void)
{
    for (int k = 0; k < n_cases; k++) {
        for (int i = 0; i < KF_JOB_MAX_TENSORS; i++) free(cases[k].in[i]);
        for (int i = 0; i < KF_JOB_MAX_OUTPUTS; i++) free(cases[k].ref[i]);
    }
    n_cases = 0;
}

/* ---- jobs: (case, knob combination) ---- */

#define MAX_JOBS 2048
typedef struct job {
    int c;
    int idx[8];
} job;

static job *jobs;
static int n_jobs;
static _Atomic int next_job;
static _Atomic int n_variants_ok;

static void add_jobs(void)
{
    jobs = calloc(MAX_JOBS, sizeof *jobs);
    for (int k = 0; k < n_cases; k++) {
        const kf_template *t = cases[k].tmpl;
        if (!t) continue;
        int total = 1;
        for (int i = 0; i < t->n_knobs; i++) total *= t->knobs[i].n_values;
        for (int v = cases[k].offset; v < total; v += cases[k].stride) {
            if (!CHECK(n_jobs < MAX_JOBS)) return;
            job *j = &jobs[n_jobs++];
            j->c = k;
            for (int i = 0, rest = v; i < t->n_knobs; i++) {
                j->idx[i] = rest % t->knobs[i].n_values;
                rest /= t->knobs[i].n_values;
            }
        }
    }
}

static void job_name(const job *j, char *out, size_t cap)
{
    const tcase *c = &cases[j->c];
    int pos = snprintf(out, cap, "%s %s", c->tmpl->name, c->label);
    for (int i = 0; i < c->tmpl->n_knobs && pos > 0 && (size_t)pos < cap; i++)
        pos += snprintf(out + pos, cap - (size_t)pos, " %s=%d", c->tmpl->knobs[i].name,
                        c->tmpl->knobs[i].values[j->idx[i]]);
}

/* Compare one output; returns the number of bad elements (prints the first). */
static long compare(const char *what, int o, const float *got, const double *ref, int64_t n,
                    double tol)
{
    long bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double r = ref[i], g = got[i];
        int ok;
        if (isnan(r)) ok = isnan(g);
        else if (isinf(r)) ok = g == r;
        else ok = isfinite(g) && fabs(g - r) <= tol + tol * fabs(r);
        if (!ok && bad++ == 0)
            printf("     %s: out[%d][%lld] = %.9g, reference %.9g\n", what, o, (long long)i, g, r);
    }
    return bad;
}

static void run_job(const job *j)
{
    const tcase *c = &cases[j->c];
    char name[256], err[512];
    job_name(j, name, sizeof name);
    char *src = NULL, *lj = NULL;
    kf_status st = c->tmpl->render(&c->sig, j->idx, &src, &lj, err, sizeof err);
    if (!CHECK_EQ_INT(st, KF_OK)) {
        printf("     %s: %s\n", name, err);
        return;
    }
    CHECK_CONTAINS(src, "void kf_kernel(");
    CHECK_CONTAINS(src, "#define KF_");
    /* what the evaluator lets through */
    if (!CHECK(kf_source_check_backend(src, "host", err, sizeof err)))
        printf("     %s: %s\n", name, err);
    kf_launch l;
    memset(&l, 0, sizeof l);
    if (!CHECK_EQ_INT(kf_launch_parse(lj, &l, err, sizeof err), KF_OK)) {
        printf("     %s: %s: %s\n", name, lj, err);
        goto out;
    }
    CHECK_STR(l.entry, "kf_kernel");
    CHECK_EQ_INT(l.n_args, c->sig.n_in + c->sig.n_out);
    void *blob = NULL;
    size_t len = 0;
    char *log = NULL;
    st = cc.compile(cc.self, src, &l, NULL, &blob, &len, &log);
    if (!CHECK_EQ_INT(st, KF_OK)) {
        printf("     %s: compile log:\n%s\n--- source ---\n%s\n", name, log ? log : "(none)", src);
        free(log);
        free(blob);
        goto out;
    }
    /* nothing the compiler says is acceptable in a builtin template */
    if (log && strstr(log, "warning")) {
        CHECK(!strstr(log, "warning"));
        printf("     %s: %s\n", name, log);
    }
    free(log);
    kf_compiled *k = NULL;
    st = cc.load(cc.self, blob, len, &l, 0, &k, err, sizeof err);
    free(blob);
    if (!CHECK_EQ_INT(st, KF_OK)) {
        printf("     %s: load: %s\n", name, err);
        goto out;
    }
    void *ptrs[KF_JOB_MAX_TENSORS + KF_JOB_MAX_OUTPUTS];
    float *ins[KF_JOB_MAX_TENSORS] = {0}, *outs[KF_JOB_MAX_OUTPUTS] = {0};
    int np = 0;
    for (int i = 0; i < c->sig.n_in; i++) {
        ins[i] = malloc((size_t)c->in_n[i] * sizeof(float));
        memcpy(ins[i], c->in[i], (size_t)c->in_n[i] * sizeof(float));
        ptrs[np++] = ins[i];
    }
    for (int i = 0; i < c->sig.n_out; i++) {
        outs[i] = malloc((size_t)c->out_n[i] * sizeof(float));
        for (int64_t e = 0; e < c->out_n[i]; e++) outs[i][e] = NAN; /* poison */
        ptrs[np++] = outs[i];
    }
    /* a family kernel's launch-time sizes (the row count), as the plugin computes them */
    kf_dims dims[KF_LAUNCH_MAX_ARGS];
    int64_t iv[KF_LAUNCH_MAX_INTS];
    for (int a = 0; a < np && a < KF_LAUNCH_MAX_ARGS; a++) {
        const kf_job_tensor *t = a < c->sig.n_in ? &c->sig.in[a] : &c->sig.out[a - c->sig.n_in];
        dims[a].ndim = t->ndim, dims[a].sizes = t->sizes;
    }
    CHECK_EQ_INT(kf_launch_ints(&l, dims, np, iv), KF_OK);
    for (int j = 0; j < l.n_ints; j++) ptrs[np++] = (void *)(intptr_t)iv[j];
    if (CHECK_EQ_INT(cc.launch(cc.self, k, ptrs, np, NULL), 0)) {
        long bad = 0;
        for (int i = 0; i < c->sig.n_out; i++)
            bad += compare(name, i, outs[i], c->ref[i], c->out_n[i], c->tol);
        for (int i = 0; i < c->sig.n_in; i++)
            CHECK(memcmp(ins[i], c->in[i], (size_t)c->in_n[i] * sizeof(float)) == 0);
        if (CHECK_EQ_INT(bad, 0)) atomic_fetch_add(&n_variants_ok, 1);
    }
    for (int i = 0; i < c->sig.n_in; i++) free(ins[i]);
    for (int i = 0; i < c->sig.n_out; i++) free(outs[i]);
    cc.unload(cc.self, k);
out:
    free(src);
    free(lj);
}

static void *worker(void *arg)
{
    (void)arg;
    for (;;) {
        int i = atomic_fetch_add(&next_job, 1);
        if (i >= n_jobs) return NULL;
        run_job(&jobs[i]);
    }
}

static void test_table(void)
{
    static const char *const host_names[] = {"host_row_softmax", "host_layer_norm",
                                              /* tests/c/test_templates_host_norm.c */
                                              "host_group_norm", "host_batch_norm_eval",
                                              "host_batch_norm_train",
                                              "host_eltwise_unary", "host_eltwise_binary",
                                              "host_cat",
                                              /* tests/c/test_templates_reduce_generic.c */
                                              "host_reduce", "host_gather",
                                              /* tests/c/test_templates_pointwise.c */
                                              "host_pointwise",
                                              /* tests/c/test_templates_chain.c */
                                              "host_chain",
                                              /* tests/c/test_templates_pool.c */
                                              "host_max_pool2d"};
    enum { N_HOST = sizeof host_names / sizeof host_names[0] };
    int n = 0, seen[N_HOST] = {0};
    for (int i = 0; kf_builtin_templates[i]; i++) {
        const kf_template *t = kf_builtin_templates[i];
        CHECK(t->name && t->backend && t->applies && t->render);
        CHECK(t->n_knobs >= 1 && t->n_knobs <= 8);
        for (int k = 0; k < t->n_knobs; k++)
            CHECK(t->knobs[k].name && t->knobs[k].n_values >= 1 &&
                  t->knobs[k].n_values <= KF_KNOB_MAX_VALUES);
        for (int j = 0; j < i; j++) CHECK(strcmp(t->name, kf_builtin_templates[j]->name) != 0);
        if (!is_host(t)) continue;
        n++;
        for (int h = 0; h < N_HOST; h++) seen[h] += !strcmp(t->name, host_names[h]);
    }
    CHECK_EQ_INT(n, N_HOST);
    for (int h = 0; h < N_HOST; h++) CHECK_EQ_INT(seen[h], 1);
}

static const kf_template *find_template(const char *name)
{
    for (int i = 0; kf_builtin_templates[i]; i++)
        if (!strcmp(kf_builtin_templates[i]->name, name)) return kf_builtin_templates[i];
    return NULL;
}

/* host templates that apply, the pointwise engine aside (host_pointwise takes every elementwise
 * op by design: tests/c/test_templates_pointwise.c) */
static int applies_any(const kf_job_sig *s)
{
    int n = 0;
    for (int i = 0; kf_builtin_templates[i]; i++)
        n += is_host(kf_builtin_templates[i]) && kf_builtin_templates[i]->applies(s) &&
             strcmp(kf_builtin_templates[i]->name, "host_pointwise");
    return n;
}

static void test_refusals(void)
{
    kf_job_tensor x = T32(8, 37), xt = T32(8, 37);
    xt.strides[0] = 1, xt.strides[1] = 8; /* a transposed view */
    kf_job_tensor x16 = x;
    x16.dtype = KF_F16;
    kf_job_tensor x64 = x;
    x64.dtype = KF_F64;

    /* softmax */
    kf_job_sig s = softmax_sig("aten::_softmax", x, -1);
    CHECK_EQ_INT(applies_any(&s), 1);
    s = softmax_sig("aten::_softmax", x, 1);
    CHECK_EQ_INT(applies_any(&s), 1);
    s = softmax_sig("aten::_softmax", x, 0); /* other dim */
    CHECK_EQ_INT(applies_any(&s), 0);
    s = softmax_sig("aten::_log_softmax", x, -2);
    CHECK_EQ_INT(applies_any(&s), 0);
    s = softmax_sig("aten::_softmax", x16, -1);
    CHECK_EQ_INT(applies_any(&s), 0);
    s = softmax_sig("aten::_softmax", x64, -1);
    CHECK_EQ_INT(applies_any(&s), 0);
    s = softmax_sig("aten::_softmax", xt, -1);
    CHECK_EQ_INT(applies_any(&s), 0);
    s = softmax_sig("aten::_softmax", x, -1);
    s.out[0] = xt; /* an output layout other than contiguous */
    CHECK_EQ_INT(applies_any(&s), 0);
    s = softmax_sig("aten::_softmax", x, -1);
    s.scalars[1].i = 1; /* half_to_float */
    CHECK_EQ_INT(applies_any(&s), 0);
    s = softmax_sig("aten::softmax.int", x, -1);
    CHECK_EQ_INT(applies_any(&s), 0);
    /* size-1 dims may have any stride (torch's is_contiguous) */
    kf_job_tensor x1 = T32(1, 37);
    x1.strides[0] = 12345;
    s = softmax_sig("aten::_softmax", x1, -1);
    CHECK_EQ_INT(applies_any(&s), 1);
    kf_job_tensor empty = T32(0, 37);
    s = softmax_sig("aten::_softmax", empty, -1);
    CHECK_EQ_INT(applies_any(&s), 0);

    /* layer norm */
    kf_job_sig l = ln_sig(x, 1, 1, 1, 1e-5);
    CHECK_EQ_INT(applies_any(&l), 1);
    l.in[0].dtype = KF_F16;
    CHECK_EQ_INT(applies_any(&l), 0);
    l = ln_sig(xt, 1, 1, 1, 1e-5);
    CHECK_EQ_INT(applies_any(&l), 0);
    l = ln_sig(x, 1, 1, 1, 1e-5);
    l.scalars[0].v[0] = 36; /* normalized_shape not the trailing dims */
    CHECK_EQ_INT(applies_any(&l), 0);
    l = ln_sig(x, 1, 1, 0, 1e-5);
    l.n_scalars = 0; /* which optional tensor is present? ambiguous without the None scalar */
    add_list(&l, "normalized_shape", 1, x.sizes + 1);
    add_double(&l, "eps", 1e-5);
    CHECK_EQ_INT(applies_any(&l), 0);
    l = ln_sig(x, 1, 1, 1, 1e-5);
    l.in[1].dtype = KF_F64; /* weight */
    CHECK_EQ_INT(applies_any(&l), 0);

    /* elementwise */
    kf_job_sig u = unary_sig("aten::gelu", x, "none");
    CHECK_EQ_INT(applies_any(&u), 1);
    u = unary_sig("aten::gelu", x, "fast");
    CHECK_EQ_INT(applies_any(&u), 0);
    u = unary_sig("aten::gelu", x, NULL);
    CHECK_EQ_INT(applies_any(&u), 0);
    u = unary_sig("aten::relu", x16, NULL);
    CHECK_EQ_INT(applies_any(&u), 0);
    u = unary_sig("aten::silu", xt, NULL);
    CHECK_EQ_INT(applies_any(&u), 0);
    u = unary_sig("aten::relu", x, NULL);
    u.out[0] = T32(37, 8);
    CHECK_EQ_INT(applies_any(&u), 0);

    kf_job_sig b = binary_sig("aten::add.Tensor", x, 'i', 1);
    CHECK_EQ_INT(applies_any(&b), 1);
    b.in[1] = T32(1, 37); /* broadcast */
    CHECK_EQ_INT(applies_any(&b), 0);
    b = binary_sig("aten::add.Tensor", x, 'i', 1);
    b.in[1] = T32(37);
    CHECK_EQ_INT(applies_any(&b), 0);
    b = binary_sig("aten::mul.Tensor", x, 0, 0);
    b.in[1] = xt;
    CHECK_EQ_INT(applies_any(&b), 0);
    b = binary_sig("aten::mul.Tensor", x64, 0, 0);
    CHECK_EQ_INT(applies_any(&b), 0);
    b = binary_sig("aten::add.Tensor", x, 'd', 1e300); /* alpha beyond float */
    CHECK_EQ_INT(applies_any(&b), 0);
    b = binary_sig("aten::sub.Tensor", x, 'i', 1);
    CHECK_EQ_INT(applies_any(&b), 0);

    /* render refuses what applies() refuses, and bad knob indices */
    char *src = (char *)1, *lj = (char *)1, err[256];
    int idx[8] = {0};
    const kf_template *sm = find_template("host_row_softmax");
    if (!CHECK(sm != NULL)) return;
    CHECK_EQ_INT(sm->render(&b, idx, &src, &lj, err, sizeof err), KF_ERR_UNSUPPORTED);
    CHECK(src == NULL && lj == NULL);
    s = softmax_sig("aten::_softmax", x, -1);
    idx[1] = sm->knobs[1].n_values;
    CHECK_EQ_INT(sm->render(&s, idx, &src, &lj, err, sizeof err), KF_ERR_INVALID);
    CHECK(src == NULL && lj == NULL);
    CHECK_CONTAINS(err, "unroll");
    idx[1] = -1;
    CHECK_EQ_INT(sm->render(&s, idx, &src, &lj, err, sizeof err), KF_ERR_INVALID);
}

static void test_variants(void)
{
    /* DATA_SOFTMAX: -inf entries and an all -inf row; DATA_HUGE: +-1e30 and |x| up to 1e4;
     * DATA_OFFSET: rows of 1000 + small noise (cancellation in x - mean and one-pass variances);
     * stride 5 (coprime to every knob's count) splits the grid of the other signatures */
    make_case("host_row_softmax", softmax_sig("aten::_softmax", T32(3, 5, 37), -1), DATA_SOFTMAX,
              1, 0);
    make_case("host_row_softmax", softmax_sig("aten::_log_softmax", T32(3, 5, 37), 2),
              DATA_SOFTMAX, 1, 0);
    make_case("host_row_softmax", softmax_sig("aten::_softmax", T32(1, 1000), -1), DATA_SOFTMAX,
              1, 0);
    make_case("host_row_softmax", softmax_sig("aten::_log_softmax", T32(1, 1000), -1),
              DATA_SOFTMAX, 5, 1);
    make_case("host_row_softmax", softmax_sig("aten::_softmax", T32(257, 8), 1), DATA_SOFTMAX, 5,
              2);
    make_case("host_row_softmax", softmax_sig("aten::_log_softmax", T32(64, 3), -1), DATA_SOFTMAX,
              5, 3);
    make_case("host_row_softmax", softmax_sig("aten::_softmax", T32(9, 1537), -1), DATA_SOFTMAX, 5,
              4);
    make_case("host_row_softmax", softmax_sig("aten::_log_softmax", T32(9, 1537), -1),
              DATA_SOFTMAX, 1, 0);

    make_case("host_layer_norm", ln_sig(T32(6, 37), 1, 1, 1, 1e-5), DATA_PLAIN, 1, 0);
    make_case("host_layer_norm", ln_sig(T32(1, 2, 3, 7), 2, 0, 0, 1e-6), DATA_PLAIN, 5, 0);
    make_case("host_layer_norm", ln_sig(T32(5, 1000), 1, 1, 0, 1e-5), DATA_PLAIN, 5, 1);
    make_case("host_layer_norm", ln_sig(T32(33, 64), 1, 0, 1, 1e-3), DATA_PLAIN, 5, 2);
    make_case("host_layer_norm", ln_sig(T32(40, 515), 1, 1, 1, 1e-5), DATA_OFFSET, 1, 0);

    make_case("host_eltwise_unary", unary_sig("aten::gelu", T32(1037), "none"), DATA_HUGE, 1, 0);
    make_case("host_eltwise_unary", unary_sig("aten::gelu", T32(3, 37), "tanh"), DATA_HUGE, 1, 0);
    make_case("host_eltwise_unary", unary_sig("aten::gelu", T32(33001), "tanh"), DATA_HUGE, 5, 0);
    make_case("host_eltwise_unary", unary_sig("aten::gelu", T32(2, 16411), "none"), DATA_HUGE, 5,
              1);
    make_case("host_eltwise_unary", unary_sig("aten::silu", T32(5, 211), NULL), DATA_HUGE, 1, 0);
    make_case("host_eltwise_unary", unary_sig("aten::silu", T32(2, 16411), NULL), DATA_HUGE, 5, 2);
    make_case("host_eltwise_unary", unary_sig("aten::relu", T32(1, 37), NULL), DATA_HUGE, 1, 0);
    make_case("host_eltwise_unary", unary_sig("aten::relu", T32(40000), NULL), DATA_HUGE, 5, 3);

    make_case("host_eltwise_binary", binary_sig("aten::add.Tensor", T32(37, 41), 'd', 0.3),
              DATA_PLAIN, 1, 0);
    make_case("host_eltwise_binary", binary_sig("aten::add.Tensor", T32(1, 37), 'i', -2),
              DATA_PLAIN, 5, 0);
    make_case("host_eltwise_binary", binary_sig("aten::add.Tensor", T32(33001), 'i', 1),
              DATA_PLAIN, 5, 1);
    make_case("host_eltwise_binary", binary_sig("aten::mul.Tensor", T32(7, 4099), 0, 0),
              DATA_PLAIN, 1, 0);
    make_case("host_eltwise_binary", binary_sig("aten::mul.Tensor", T32(5), 0, 0), DATA_PLAIN, 5,
              2);

    add_jobs();
    long nth = sysconf(_SC_NPROCESSORS_ONLN);
    int n_threads = nth < 1 ? 1 : nth > 4 ? 4 : (int)nth;
    pthread_t th[4];
    for (int i = 0; i < n_threads; i++) CHECK(pthread_create(&th[i], NULL, worker, NULL) == 0);
    for (int i = 0; i < n_threads; i++) pthread_join(th[i], NULL);
    printf("%d variants over %d cases, %d correct (%d threads)\n", n_jobs, n_cases,
           atomic_load(&n_variants_ok), n_threads);
    CHECK_EQ_INT(atomic_load(&n_variants_ok), n_jobs);
    free(jobs);
    free_cases();
}

/* ---- host_cat: raw bytes against torch.cat's rules (cat_ref.h) ---- */

typedef struct cat_case {
    char label[96];
    kf_job_sig sig;
    int stride, offset; /* the knob combinations v with v % stride == offset */
    int es;
    unsigned char *in[KF_JOB_MAX_TENSORS]; /* each input's span */
    size_t in_bytes[KF_JOB_MAX_TENSORS];
    unsigned char *ref;
    size_t out_bytes;
} cat_case;

#define MAX_CAT_CASES 24
static cat_case cat_cases[MAX_CAT_CASES];
static int n_cat_cases;
static const kf_template *cat_t;

/* an input: contiguous (strides NULL) or a view with the given strides */
#define CI(dt, sizes, strides) cat_in(dt, (int)(sizeof(int64_t[])sizes / sizeof(int64_t)), \
                                      (int64_t[])sizes, strides)
static kf_job_tensor cat_in(int dtype, int nd, const int64_t *sizes, const int64_t *strides)
{
    return strides ? sig_tensor_strided(dtype, nd, sizes, strides, 16)
                   : sig_tensor(dtype, nd, sizes, 0, 16);
}
#define L(...) {__VA_ARGS__}
#define S(...) ((int64_t[]){__VA_ARGS__})

/* Inputs of random bytes other than 0xff (so an element the kernel leaves poisoned shows), the
 * reference output. */
static void make_cat_case(const char *label, kf_job_sig sig, int stride, int offset)
{
    if (!CHECK(n_cat_cases < MAX_CAT_CASES) || !cat_t) return;
    cat_case *c = &cat_cases[n_cat_cases++];
    memset(c, 0, sizeof *c);
    snprintf(c->label, sizeof c->label, "%s", label);
    c->sig = sig;
    c->stride = stride;
    c->offset = offset;
    c->es = kf_dtype_size(sig.out[0].dtype);
    if (!CHECK(cat_t->applies(&sig)) || !CHECK_EQ_INT(applies_any(&sig), 1))
        printf("     cat case %s\n", label);
    for (int i = 0; i < sig.n_in; i++) {
        c->in_bytes[i] = (size_t)cat_ref_span(&sig.in[i]) * (size_t)c->es;
        c->in[i] = malloc(c->in_bytes[i] + 1);
        for (size_t b = 0; b < c->in_bytes[i]; b++) c->in[i][b] = (unsigned char)(urand() * 255.0);
    }
    c->out_bytes = (size_t)kf_job_tensor_numel(&sig.out[0]) * (size_t)c->es;
    c->ref = malloc(c->out_bytes);
    cat_ref(&sig, c->es, (const unsigned char *const *)c->in, c->ref);
}

static void run_cat_job(const job *j)
{
    const cat_case *c = &cat_cases[j->c];
    const kf_job_sig *s = &c->sig;
    char name[256], err[512];
    int pos = snprintf(name, sizeof name, "host_cat %s", c->label);
    for (int i = 0; i < cat_t->n_knobs && pos > 0 && (size_t)pos < sizeof name; i++)
        pos += snprintf(name + pos, sizeof name - (size_t)pos, " %s=%d", cat_t->knobs[i].name,
                        cat_t->knobs[i].values[j->idx[i]]);
    char *src = NULL, *lj = NULL, *log = NULL;
    void *blob = NULL;
    size_t len = 0;
    kf_compiled *k = NULL;
    kf_launch l;
    if (!CHECK_EQ_INT(cat_t->render(s, j->idx, &src, &lj, err, sizeof err), KF_OK)) {
        printf("     %s: %s\n", name, err);
        goto out;
    }
    if (!CHECK(kf_source_check_backend(src, "host", err, sizeof err)))
        printf("     %s: %s\n", name, err);
    if (!CHECK_EQ_INT(kf_launch_parse(lj, &l, err, sizeof err), KF_OK) ||
        !CHECK_EQ_INT(l.n_args, s->n_in + 1))
        goto out;
    if (!CHECK_EQ_INT(cc.compile(cc.self, src, &l, NULL, &blob, &len, &log), KF_OK)) {
        printf("     %s: compile log:\n%s\n--- source ---\n%s\n", name, log ? log : "", src);
        goto out;
    }
    if (log && strstr(log, "warning")) {
        CHECK(!strstr(log, "warning"));
        printf("     %s: %s\n", name, log);
    }
    if (!CHECK_EQ_INT(cc.load(cc.self, blob, len, &l, 0, &k, err, sizeof err), KF_OK)) goto out;
    void *ptrs[KF_JOB_MAX_TENSORS + 1];
    unsigned char *ins[KF_JOB_MAX_TENSORS] = {0}, *y = malloc(c->out_bytes + 1);
    for (int i = 0; i < s->n_in; i++) {
        ins[i] = malloc(c->in_bytes[i] + 1);
        memcpy(ins[i], c->in[i], c->in_bytes[i]);
        ptrs[i] = ins[i];
    }
    memset(y, 0xff, c->out_bytes); /* poison */
    ptrs[s->n_in] = y;
    if (CHECK_EQ_INT(cc.launch(cc.self, k, ptrs, s->n_in + 1, NULL), 0)) {
        long bad = 0;
        for (size_t b = 0; b < c->out_bytes; b += (size_t)c->es)
            if (memcmp(y + b, c->ref + b, (size_t)c->es) && bad++ == 0)
                printf("     %s: element %zu differs\n", name, b / (size_t)c->es);
        for (int i = 0; i < s->n_in; i++) bad += memcmp(ins[i], c->in[i], c->in_bytes[i]) != 0;
        if (CHECK_EQ_INT(bad, 0)) atomic_fetch_add(&n_variants_ok, 1);
    }
    for (int i = 0; i < s->n_in; i++) free(ins[i]);
    free(y);
    cc.unload(cc.self, k);
out:
    free(blob);
    free(log);
    free(src);
    free(lj);
}

static void *cat_worker(void *arg)
{
    (void)arg;
    for (;;) {
        int i = atomic_fetch_add(&next_job, 1);
        if (i >= n_jobs) return NULL;
        run_cat_job(&jobs[i]);
    }
}

static void test_cat(void)
{
    cat_t = find_template("host_cat");
    if (!CHECK(cat_t != NULL)) return;
    kf_job_tensor x[4];
    kf_job_sig s;
    /* refusals (the analysis is shared with cuda_cat: test_templates_cuda_cat.c has more) */
    x[0] = CI(KF_F32, L(3, 5), NULL);
    x[1] = CI(KF_F32, L(3, 7), NULL);
    s = sig_cat(2, x, 1);
    CHECK_EQ_INT(applies_any(&s), 1);
    s.in[1].dtype = KF_F64; /* type promotion */
    CHECK_EQ_INT(applies_any(&s), 0);
    s = sig_cat(2, x, 2);
    CHECK_EQ_INT(applies_any(&s), 0);
    s = sig_cat(2, x, 0); /* sizes off the cat dim differ */
    CHECK_EQ_INT(applies_any(&s), 0);

    /* full grids on a few, the others split the grid (stride 4: three combinations each) */
    make_cat_case("f32 [3,5] + [3,7] dim 1", sig_cat(2, x, 1), 1, 0);
    x[0] = CI(KF_BF16, L(0), NULL); /* Gemma's KV cache, small: legacy empty + transposed */
    x[1] = CI(KF_BF16, L(2, 3, 5, 8), S(120, 8, 24, 1));
    make_cat_case("bf16 [0] + [2,3,5,8] transposed, dim -2", sig_cat(2, x, -2), 1, 0);
    x[0] = CI(KF_F32, L(300, 70), NULL); /* several chunks per part */
    x[1] = CI(KF_F32, L(300, 30), NULL);
    make_cat_case("f32 [300,70] + [300,30] dim 1", sig_cat(2, x, 1), 1, 0);
    x[0] = CI(KF_BF16, L(2, 3, 40, 8), S(960, 8, 24, 1)); /* MMDiT, small */
    x[1] = CI(KF_BF16, L(2, 3, 7, 8), S(168, 8, 24, 1));
    make_cat_case("bf16 mmdit-like dim 2", sig_cat(2, x, 2), 4, 0);
    x[0] = CI(KF_BF16, L(2, 16, 4, 8), NULL); /* RoPE, small: one input a slice */
    x[1] = CI(KF_BF16, L(2, 16, 4, 8), S(1024, 64, 16, 1));
    make_cat_case("bf16 rope-like dim -1", sig_cat(2, x, -1), 4, 1);
    x[0] = CI(KF_F32, L(2, 3), S(1, 2)); /* transposed: strided rows */
    x[1] = CI(KF_F32, L(4, 3), S(1, 4));
    make_cat_case("f32 transposed dim 0", sig_cat(2, x, 0), 4, 2);
    x[0] = CI(KF_F16, L(2, 3, 8), NULL); /* a zero-length input */
    x[1] = CI(KF_F16, L(2, 0, 8), NULL);
    x[2] = CI(KF_F16, L(2, 5, 8), NULL);
    make_cat_case("f16 zero length dim 1", sig_cat(3, x, 1), 4, 3);
    x[0] = sig_tensor(KF_BF16, 4, S(2, 3, 4, 5), 1, 16); /* channels_last along C */
    x[1] = sig_tensor(KF_BF16, 4, S(2, 2, 4, 5), 1, 16);
    s = sig_cat(2, x, 1);
    s.out[0] = sig_tensor(KF_BF16, 4, S(2, 5, 4, 5), 1, 0);
    make_cat_case("bf16 channels_last dim 1", s, 4, 0);
    x[0] = CI(KF_F32, L(3, 4), S(0, 1)); /* expanded */
    x[1] = CI(KF_F32, L(2, 4), NULL);
    make_cat_case("f32 expanded dim 0", sig_cat(2, x, 0), 4, 1);
    x[0] = CI(KF_I64, L(5, 3), NULL);
    x[1] = CI(KF_I64, L(4, 3), NULL);
    make_cat_case("i64 dim 0", sig_cat(2, x, 0), 4, 2);
    x[0] = CI(KF_U8, L(37), NULL);
    x[1] = CI(KF_U8, L(11), NULL);
    make_cat_case("u8 1-D", sig_cat(2, x, 0), 4, 3);
    x[0] = CI(KF_BOOL, L(4, 32), NULL);
    x[1] = CI(KF_BOOL, L(4, 48), NULL);
    x[2] = CI(KF_BOOL, L(4, 1), NULL);
    make_cat_case("bool dim -1", sig_cat(3, x, -1), 4, 0);
    x[0] = CI(KF_F64, L(6, 10), NULL);
    x[1] = CI(KF_F64, L(6, 6), NULL);
    make_cat_case("f64 dim 1", sig_cat(2, x, 1), 4, 1);
    x[0] = CI(KF_F32, L(0), NULL); /* one part: a strided copy */
    x[1] = CI(KF_F32, L(7, 9), S(1, 7));
    make_cat_case("f32 one part transposed", sig_cat(2, x, 0), 4, 2);
    x[0] = CI(KF_F16, L(1, 1), NULL);
    x[1] = CI(KF_F16, L(1, 0), NULL);
    make_cat_case("f16 one element", sig_cat(2, x, 1), 4, 3);

    jobs = calloc(MAX_JOBS, sizeof *jobs);
    n_jobs = 0;
    atomic_store(&next_job, 0);
    atomic_store(&n_variants_ok, 0);
    int total = 1;
    for (int i = 0; i < cat_t->n_knobs; i++) total *= cat_t->knobs[i].n_values;
    for (int k = 0; k < n_cat_cases; k++)
        for (int v = cat_cases[k].offset; v < total && n_jobs < MAX_JOBS;
             v += cat_cases[k].stride) {
            job *j = &jobs[n_jobs++];
            j->c = k;
            for (int i = 0, rest = v; i < cat_t->n_knobs; i++) {
                j->idx[i] = rest % cat_t->knobs[i].n_values;
                rest /= cat_t->knobs[i].n_values;
            }
        }
    long nth = sysconf(_SC_NPROCESSORS_ONLN);
    int n_threads = nth < 1 ? 1 : nth > 4 ? 4 : (int)nth;
    pthread_t th[4];
    for (int i = 0; i < n_threads; i++) CHECK(pthread_create(&th[i], NULL, cat_worker, NULL) == 0);
    for (int i = 0; i < n_threads; i++) pthread_join(th[i], NULL);
    printf("host_cat: %d variants over %d cases, %d correct\n", n_jobs, n_cat_cases,
           atomic_load(&n_variants_ok));
    CHECK_EQ_INT(atomic_load(&n_variants_ok), n_jobs);
    free(jobs);
    jobs = NULL;
    for (int k = 0; k < n_cat_cases; k++) {
        for (int i = 0; i < KF_JOB_MAX_TENSORS; i++) free(cat_cases[k].in[i]);
        free(cat_cases[k].ref);
    }
}

/* ---- the inline math (kf_body_host_math_h) against libm in double ---- */

static float f_of_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* exp result check: overflow is +inf, a denormal result within one denormal step, else a
 * relative error of at most 1.5e-7 (the measured worst is 8.5e-8). */
static int exp_ok(float x, float got)
{
    double r = exp((double)x);
    if (isnan(x)) return isnan(got);
    if (r > FLT_MAX) return isinf(got) && got > 0;
    if (r < FLT_MIN) return fabs((double)got - r) <= 0x1p-149;
    return fabs((double)got - r) <= 1.5e-7 * r;
}

/* sigmoid: within 3e-7 relative (the measured worst is 1.8e-7), a denormal result within one
 * denormal step */
static int sigmoid_ok(float x, float got)
{
    if (isnan(x)) return isnan(got);
    double r = 1.0 / (1.0 + exp(-(double)x));
    if (r < FLT_MIN) return fabs((double)got - r) <= 0x1p-149;
    return fabs((double)got - r) <= 3e-7 * r;
}

/* erf: +-1 exactly beyond 3.925, else within 4e-7 absolute and (for |x| >= 1e-37, where x P/Q
 * is no denormal) relative; the measured worst is 3.6e-7. */
static int erf_ok(float x, float got)
{
    if (isnan(x)) return isnan(got);
    if (fabsf(x) > 3.925f) return got == (x > 0 ? 1.0f : -1.0f);
    double r = erf((double)x), e = fabs((double)got - r);
    return e <= 4e-7 && (fabsf(x) < 1e-37f || e <= 4e-7 * fabs(r));
}

/* tanh: within 2e-7 relative (the measured worst is 1.4e-7, next to the switch at 0.625), a
 * denormal result within one denormal step, +-1 exactly from 9.1 on */
static int tanh_ok(float x, float got)
{
    if (isnan(x)) return isnan(got);
    if (fabsf(x) >= 9.1f) return got == (x > 0 ? 1.0f : -1.0f);
    double r = tanh((double)x);
    if (fabs(r) < FLT_MIN) return fabs((double)got - r) <= 0x1p-149;
    return fabs((double)got - r) <= 2e-7 * fabs(r);
}

/* log and log1p: libm's value exactly where that is 0, +-inf or NaN, else within 2e-7 (log) and
 * 3e-7 (log1p) relative; the measured worst over every float is 1.3e-7 and 2.3e-7. */
static int log_ok(float x, float got, int p1)
{
    float r = p1 ? log1pf(x) : logf(x);
    if (isnan(r)) return isnan(got);
    if (isinf(r) || r == 0.0f) return memcmp(&r, &got, sizeof r) == 0;
    double d = p1 ? log1p((double)x) : log((double)x);
    return fabs((double)got - d) <= (p1 ? 3e-7 : 2e-7) * fabs(d);
}

/* expm1: libm's value exactly where that is +-0, -1, inf or NaN, a denormal result within one
 * denormal step, else within 2e-7 relative (the measured worst over every float is 1.2e-7) */
static int expm1_ok(float x, float got)
{
    float r = expm1f(x);
    if (isnan(r)) return isnan(got);
    if (isinf(r) || r == 0.0f || r == -1.0f) return memcmp(&r, &got, sizeof r) == 0;
    double d = expm1((double)x);
    if (fabs(d) < FLT_MIN) return fabs((double)got - d) <= 0x1p-149;
    return fabs((double)got - d) <= 2e-7 * fabs(d);
}

static void test_math(void)
{
    /* every 4099th bit pattern (all exponents, varied mantissas), a dense sweep over the
     * interesting range, and the special and threshold values */
    static const float special[] = {
        0.0f,         -0.0f,         INFINITY,     -INFINITY,    NAN,          -NAN,
        FLT_MAX,      -FLT_MAX,      FLT_MIN,      -FLT_MIN,     0x1p-149f,    -0x1p-149f,
        88.7228394f,  88.7228317f,   88.72283f,    89.0f,        89.5f,        -87.3365479f,
        -103.972084f, -103.97208f,   -104.0f,      -104.5f,      -150.0f,      3.925f,
        -3.925f,      3.92f,         -3.92f,       3.9250002f,   4.0f,         -4.0f,
        0.5f,         -0.5f,         1.0f,         -1.0f,        0.34657359f,  -0.34657359f,
        0.625f,       -0.625f,       0.62499994f,  9.0f,         9.1f,         -9.1f,
        -0x1p-25f,    0x1p-25f,      0x1.6a09e6p-1f, 0x1.6a09e8p-1f, -0x1.fffffep-1f, 0x1p-126f,
    };
    const int64_t n_bits = (int64_t)(0x100000000ull / 4099) + 1, n_sweep = 400000;
    const int64_t n_special = (int64_t)(sizeof special / sizeof special[0]);
    const int64_t n = n_bits + n_sweep + n_special;
    float *x = malloc((size_t)n * sizeof(float)), *out[8];
    for (int i = 0; i < 8; i++) out[i] = malloc((size_t)n * sizeof(float));
    int64_t k = 0;
    for (int64_t i = 0; i < n_bits; i++) x[k++] = f_of_bits((uint32_t)(i * 4099));
    for (int64_t i = 0; i < n_sweep; i++) x[k++] = (float)(-110.0 + 200.0 * (double)i / n_sweep);
    for (int64_t i = 0; i < n_special; i++) x[k++] = special[i];

    kf_strbuf b = {0};
    kf_strbuf_printf(&b, "#include <math.h>\n#include <stdint.h>\n#define KF_N %lldLL\n%s",
                     (long long)n, kf_body_host_math_h);
    kf_strbuf_printf(&b, "void kf_kernel(const float *restrict x, float *restrict e,\n"
                         "               float *restrict en, float *restrict er,\n"
                         "               float *restrict sg, float *restrict th,\n"
                         "               float *restrict lg, float *restrict l1,\n"
                         "               float *restrict em)\n"
                         "{\n"
                         "    for (int64_t i = 0; i < KF_N; i++) {\n"
                         "        e[i] = kf_expf(x[i]);\n"
                         "        en[i] = kf_expf_neg(-fabsf(x[i]));\n"
                         "        er[i] = kf_erff(x[i]);\n"
                         "        sg[i] = kf_sigmoidf(x[i]);\n"
                         "        th[i] = kf_tanhf(x[i]);\n"
                         "        lg[i] = kf_logf(x[i]);\n"
                         "        l1[i] = kf_log1pf(x[i]);\n"
                         "        em[i] = kf_expm1f(x[i]);\n"
                         "    }\n"
                         "}\n");
    char *src = kf_strbuf_take(&b), err[512];
    static const char *const types[] = {"const float*", "float*", "float*", "float*", "float*",
                                        "float*",       "float*", "float*", "float*"};
    char *lj = kf_template_host_launch_json(types, 9);
    kf_launch l;
    void *blob = NULL;
    size_t len = 0;
    char *log = NULL;
    kf_compiled *kc = NULL;
    if (!CHECK(src && lj) || !CHECK_EQ_INT(kf_launch_parse(lj, &l, err, sizeof err), KF_OK))
        goto out;
    if (!CHECK_EQ_INT(cc.compile(cc.self, src, &l, NULL, &blob, &len, &log), KF_OK)) {
        printf("     math: %s\n", log ? log : "(no log)");
        goto out;
    }
    if (!CHECK_EQ_INT(cc.load(cc.self, blob, len, &l, 0, &kc, err, sizeof err), KF_OK)) goto out;
    void *ptrs[9] = {x, out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7]};
    if (!CHECK_EQ_INT(cc.launch(cc.self, kc, ptrs, 9, NULL), 0)) goto out;
    long bad[8] = {0};
    for (int64_t i = 0; i < n; i++) {
        float v = x[i], nv = -fabsf(v);
        int ok[8] = {exp_ok(v, out[0][i]),     exp_ok(nv, out[1][i]),   erf_ok(v, out[2][i]),
                     sigmoid_ok(v, out[3][i]), tanh_ok(v, out[4][i]),   log_ok(v, out[5][i], 0),
                     log_ok(v, out[6][i], 1),  expm1_ok(v, out[7][i])};
        static const char *const fn[8] = {"kf_expf",  "kf_expf_neg", "kf_erff",   "kf_sigmoidf",
                                          "kf_tanhf", "kf_logf",     "kf_log1pf", "kf_expm1f"};
        const float arg[8] = {v, nv, v, v, v, v, v, v};
        for (int f = 0; f < 8; f++)
            if (!ok[f] && bad[f]++ < 3)
                printf("     %s(%a = %.9g) = %.9g (%a)\n", fn[f], (double)arg[f], (double)arg[f],
                       (double)out[f][i], (double)out[f][i]);
    }
    CHECK_EQ_INT(bad[0], 0);
    CHECK_EQ_INT(bad[1], 0);
    CHECK_EQ_INT(bad[2], 0);
    CHECK_EQ_INT(bad[3], 0);
    CHECK_EQ_INT(bad[4], 0);
    CHECK_EQ_INT(bad[5], 0);
    CHECK_EQ_INT(bad[6], 0);
    CHECK_EQ_INT(bad[7], 0);
    /* exact where softmax and gelu rely on it: the row's max gives 1, -inf gives 0, erf(0) = 0 */
    for (int64_t i = n - n_special; i < n; i++) {
        if (x[i] == 0.0f)
            CHECK(out[0][i] == 1.0f && out[1][i] == 1.0f && out[2][i] == 0.0f && out[4][i] == 0.0f &&
                  signbit(out[4][i]) == signbit(x[i]));
        if (x[i] == -INFINITY)
            CHECK(out[0][i] == 0.0f && out[1][i] == 0.0f && out[2][i] == -1.0f &&
                  out[3][i] == 0.0f && out[4][i] == -1.0f);
        if (x[i] == INFINITY)
            CHECK(isinf(out[0][i]) && out[0][i] > 0 && out[1][i] == 0.0f && out[2][i] == 1.0f &&
                  out[3][i] == 1.0f && out[4][i] == 1.0f);
    }
out:
    if (kc) cc.unload(cc.self, kc);
    free(blob);
    free(log);
    free(src);
    free(lj);
    free(x);
    for (int i = 0; i < 8; i++) free(out[i]);
}

int main(void)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rng_state = 0x5eed1234u;
    if (!CHECK_EQ_INT(kf_compiler_host_create(&cc, NULL), KF_OK))
        return check_done("templates_host");
    test_table();
    test_refusals();
    test_math();
    test_variants();
    test_cat();
    cc.destroy(cc.self);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("run time %.1f s\n", (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
    return check_done("templates_host");
}
