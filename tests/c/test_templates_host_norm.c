/* The host normalization templates beyond contiguous layer norm (forge/templates/host_norm*.c):
 * host_group_norm (NCHW and channels last, any number of spatial dims), host_batch_norm_eval
 * (NCHW and channels last) and host_layer_norm on strided inputs (a transposed view, an expanded
 * one, a slice). Each signature renders, passes the evaluator's source check, compiles with the
 * host backend without a warning and computes its op against a double-precision reference over
 * logical coordinates, for its share of the knob grid (stride/offset; small signatures run the
 * whole grid). Outputs are poisoned with NaN first; inputs must come back unchanged. Then the
 * refusals: applies() says no and why_not() names the reason, and the builtin proposer's "no
 * template applies" message carries it. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/c/check.h"
#include "tests/c/job_sig_build.h"
#include "compile/compiler.h"
#include "forge/eval/eval.h"
#include "forge/propose/proposer.h"
#include "forge/templates/template.h"

static kf_compiler_i cc;

static const kf_template *find_template(const char *name)
{
    for (int i = 0; kf_builtin_templates[i]; i++)
        if (!strcmp(kf_builtin_templates[i]->name, name)) return kf_builtin_templates[i];
    return NULL;
}

/* the host templates that apply (the pointwise engine takes only elementwise ops) */
static int host_applies(const kf_job_sig *s)
{
    int n = 0;
    for (int i = 0; kf_builtin_templates[i]; i++)
        n += !strcmp(kf_builtin_templates[i]->backend, "host") &&
             kf_builtin_templates[i]->applies(s);
    return n;
}

/* ---- tensors by logical index ---- */

#define T32(cl, ...)                                                                   \
    sig_tensor(KF_F32, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
               (int64_t[]){__VA_ARGS__}, cl, 16)

/* 1 + the largest offset: the elements a buffer for t holds */
static int64_t span(const kf_job_tensor *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) {
        if (t->sizes[d] == 0) return 0;
        n += (t->sizes[d] - 1) * t->strides[d];
    }
    return n;
}

/* offset of logical (row-major) index i */
static int64_t off(const kf_job_tensor *t, int64_t i)
{
    int64_t o = 0;
    for (int d = t->ndim - 1; d >= 0; d--) {
        o += (i % t->sizes[d]) * t->strides[d];
        i /= t->sizes[d];
    }
    return o;
}

/* a view of x with dims a and b swapped (sizes and strides) */
static kf_job_tensor swapped(kf_job_tensor x, int a, int b)
{
    int64_t s = x.sizes[a], st = x.strides[a];
    x.sizes[a] = x.sizes[b], x.strides[a] = x.strides[b];
    x.sizes[b] = s, x.strides[b] = st;
    return x;
}

/* ---- cases ---- */

enum { DATA_PLAIN, DATA_OFFSET };

typedef struct tcase {
    char label[128];
    const kf_template *tmpl;
    int stride, offset; /* the knob combinations v with v % stride == offset */
    kf_job_sig sig;
    float *in[KF_JOB_MAX_TENSORS];
    int64_t in_n[KF_JOB_MAX_TENSORS];
    double *ref[KF_JOB_MAX_OUTPUTS];
    int64_t out_n[KF_JOB_MAX_OUTPUTS];
} tcase;

#define MAX_CASES 32
static tcase cases[MAX_CASES];
static int n_cases;
static uint64_t rng = 0x5eed5eedu;

static double urand(void) /* [0, 1) */
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng >> 11) * 0x1p-53;
}

/* element k of the tensor argument `name` ([C] or normalized_shape), `none` when it is None */
static double param(const tcase *c, const char *name, int64_t k, double none)
{
    static const char *const order[] = {"input", "weight", "bias", "running_mean", "running_var"};
    int i = 0;
    for (int a = 0; a < 5 && i < c->sig.n_in; a++) {
        const kf_job_scalar *s = kf_job_scalar_find(&c->sig, order[a]);
        int present = !(s && s->kind == 'n');
        if (!strcmp(order[a], name)) return present ? c->in[i][k] : none;
        i += present;
    }
    return none;
}

static void ref_group_norm(tcase *c)
{
    const kf_job_sig *s = &c->sig;
    const kf_job_tensor *x = &s->in[0], *y = &s->out[0];
    int64_t n = x->sizes[0], ch = x->sizes[1], g = kf_job_scalar_find(s, "group")->i;
    int64_t hw = kf_job_tensor_numel(x) / n / ch, d = ch / g;
    double eps = (double)(float)kf_job_scalar_find(s, "eps")->d;
    for (int64_t i = 0; i < n * g; i++) {
        int64_t base = i * d * hw; /* logical */
        double m = 0.0, v = 0.0;
        for (int64_t e = 0; e < d * hw; e++) m += c->in[0][off(x, base + e)];
        m /= (double)(d * hw);
        for (int64_t e = 0; e < d * hw; e++) {
            double t = c->in[0][off(x, base + e)] - m;
            v += t * t;
        }
        double rs = 1.0 / sqrt(v / (double)(d * hw) + eps);
        for (int64_t e = 0; e < d * hw; e++) {
            int64_t cc_ = (i % g) * d + e / hw;
            c->ref[0][off(y, base + e)] = (c->in[0][off(x, base + e)] - m) * rs *
                                              param(c, "weight", cc_, 1.0) +
                                          param(c, "bias", cc_, 0.0);
        }
        c->ref[1][i] = m;
        c->ref[2][i] = rs;
    }
}

static void ref_batch_norm(tcase *c)
{
    const kf_job_sig *s = &c->sig;
    const kf_job_tensor *x = &s->in[0], *y = &s->out[0];
    int64_t ch = x->sizes[1], total = kf_job_tensor_numel(x), hw = total / x->sizes[0] / ch;
    double eps = kf_job_scalar_find(s, "eps")->d;
    for (int64_t e = 0; e < total; e++) {
        int64_t k = e / hw % ch;
        double rm = param(c, "running_mean", k, 0), rv = param(c, "running_var", k, 1);
        c->ref[0][off(y, e)] = (c->in[0][off(x, e)] - rm) / sqrt(rv + eps) *
                                   param(c, "weight", k, 1.0) +
                               param(c, "bias", k, 0.0);
    }
}

/* training: the batch's statistics per channel; running ones updated with momentum 0.1 */
static void ref_batch_train(tcase *c)
{
    const kf_job_sig *s = &c->sig;
    const kf_job_tensor *x = &s->in[0], *y = &s->out[0];
    int64_t ch = x->sizes[1], total = kf_job_tensor_numel(x), hw = total / x->sizes[0] / ch;
    double eps = kf_job_scalar_find(s, "eps")->d, cnt = (double)(total / ch);
    for (int64_t k = 0; k < ch; k++) {
        double m = 0.0, v = 0.0;
        for (int64_t e = 0; e < total; e++)
            if (e / hw % ch == k) m += c->in[0][off(x, e)];
        m /= cnt;
        for (int64_t e = 0; e < total; e++)
            if (e / hw % ch == k) v += (c->in[0][off(x, e)] - m) * (c->in[0][off(x, e)] - m);
        double inv = 1.0 / sqrt(v / cnt + eps);
        for (int64_t e = 0; e < total; e++)
            if (e / hw % ch == k)
                c->ref[0][off(y, e)] = (c->in[0][off(x, e)] - m) * inv *
                                           param(c, "weight", k, 1.0) +
                                       param(c, "bias", k, 0.0);
        c->ref[1][k] = m;
        c->ref[2][k] = inv;
        if (s->n_out == 5) {
            c->ref[3][k] = 0.1 * m + 0.9 * param(c, "running_mean", k, 0.0);
            c->ref[4][k] = 0.1 * v / (cnt - 1.0) + 0.9 * param(c, "running_var", k, 0.0);
        }
    }
}

static void ref_layer_norm(tcase *c)
{
    const kf_job_sig *s = &c->sig;
    const kf_job_tensor *x = &s->in[0], *y = &s->out[0];
    const kf_job_scalar *ns = kf_job_scalar_find(s, "normalized_shape");
    int64_t nn = 1;
    for (int k = 0; k < ns->n; k++) nn *= ns->v[k];
    int64_t rows = kf_job_tensor_numel(x) / nn;
    double eps = (double)(float)kf_job_scalar_find(s, "eps")->d;
    for (int64_t r = 0; r < rows; r++) {
        double m = 0.0, v = 0.0;
        for (int64_t j = 0; j < nn; j++) m += c->in[0][off(x, r * nn + j)];
        m /= (double)nn;
        for (int64_t j = 0; j < nn; j++) {
            double t = c->in[0][off(x, r * nn + j)] - m;
            v += t * t;
        }
        double rs = 1.0 / sqrt(v / (double)nn + eps);
        for (int64_t j = 0; j < nn; j++)
            c->ref[0][off(y, r * nn + j)] = (c->in[0][off(x, r * nn + j)] - m) * rs *
                                                param(c, "weight", j, 1.0) +
                                            param(c, "bias", j, 0.0);
        c->ref[1][r] = m;
        c->ref[2][r] = rs;
    }
}

static void make_case(const char *tmpl_name, const char *label, kf_job_sig sig, int data,
                      int stride, int offset)
{
    if (!CHECK(n_cases < MAX_CASES)) return;
    tcase *c = &cases[n_cases++];
    memset(c, 0, sizeof *c);
    c->sig = sig;
    c->stride = stride;
    c->offset = offset;
    c->tmpl = find_template(tmpl_name);
    snprintf(c->label, sizeof c->label, "%s %s", sig.op, label);
    char why[256] = "";
    if (!CHECK(c->tmpl && c->tmpl->applies(&sig))) {
        if (c->tmpl && c->tmpl->why_not) c->tmpl->why_not(&sig, why, sizeof why);
        printf("     %s: refused: %s\n", c->label, why);
        c->tmpl = NULL;
        return;
    }
    CHECK_EQ_INT(host_applies(&sig), 1); /* exactly this template serves it */
    CHECK(!c->tmpl->why_not || !c->tmpl->why_not(&sig, why, sizeof why));
    for (int i = 0; i < sig.n_in; i++) {
        c->in_n[i] = span(&sig.in[i]);
        c->in[i] = malloc((size_t)c->in_n[i] * sizeof(float));
        int var = strstr(sig.op, "batch_norm") && i == sig.n_in - 1; /* running_var > 0 */
        for (int64_t e = 0; e < c->in_n[i]; e++) {
            double u = 2.0 * urand() - 1.0;
            c->in[i][e] = (float)(var ? 0.1 + urand() : i == 0 && data == DATA_OFFSET
                                                            ? 1000.0 + 0.01 * u
                                                            : 3.0 * u);
        }
    }
    for (int j = 0; j < sig.n_out; j++) {
        c->out_n[j] = span(&sig.out[j]);
        c->ref[j] = calloc((size_t)(c->out_n[j] ? c->out_n[j] : 1), sizeof(double));
    }
    if (!strcmp(sig.op, "aten::native_group_norm")) ref_group_norm(c);
    else if (!strcmp(sig.op, "aten::native_layer_norm")) ref_layer_norm(c);
    else if (kf_job_scalar_find(&sig, "training") &&
             kf_job_scalar_find(&sig, "training")->i)
        ref_batch_train(c);
    else ref_batch_norm(c);
}

static void free_cases(void)
{
    for (int k = 0; k < n_cases; k++) {
        for (int i = 0; i < KF_JOB_MAX_TENSORS; i++) free(cases[k].in[i]);
        for (int j = 0; j < KF_JOB_MAX_OUTPUTS; j++) free(cases[k].ref[j]);
    }
    n_cases = 0;
}

/* ---- jobs: (case, knob combination), run by a few threads ---- */

#define MAX_JOBS 512
typedef struct job {
    int c;
    int idx[8];
} job;

static job jobs[MAX_JOBS];
static int n_jobs;
static _Atomic int next_job, n_ok;

static void add_jobs(void)
{
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

static long compare(const char *name, int o, const float *got, const double *ref, int64_t n)
{
    const double tol = 1e-4;
    long bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double r = ref[i], g = got[i];
        int ok = isfinite(g) && fabs(g - r) <= tol + tol * fabs(r);
        if (!ok && bad++ == 0)
            printf("     %s: out[%d][%lld] = %.9g, reference %.9g\n", name, o, (long long)i, g,
                   r);
    }
    return bad;
}

static void run_job(const job *j)
{
    const tcase *c = &cases[j->c];
    char name[256], err[512];
    int pos = snprintf(name, sizeof name, "%s", c->label);
    for (int i = 0; i < c->tmpl->n_knobs && pos > 0 && (size_t)pos < sizeof name; i++)
        pos += snprintf(name + pos, sizeof name - (size_t)pos, " %s=%d", c->tmpl->knobs[i].name,
                        c->tmpl->knobs[i].values[j->idx[i]]);
    char *src = NULL, *lj = NULL;
    void *blob = NULL;
    char *log = NULL;
    kf_compiled *k = NULL;
    float *ins[KF_JOB_MAX_TENSORS] = {0}, *outs[KF_JOB_MAX_OUTPUTS] = {0};
    kf_status st = c->tmpl->render(&c->sig, j->idx, &src, &lj, err, sizeof err);
    if (!CHECK_EQ_INT(st, KF_OK)) {
        printf("     %s: %s\n", name, err);
        goto out;
    }
    if (!CHECK(kf_source_check_backend(src, "host", err, sizeof err)))
        printf("     %s: %s\n", name, err);
    kf_launch l;
    memset(&l, 0, sizeof l);
    if (!CHECK_EQ_INT(kf_launch_parse(lj, &l, err, sizeof err), KF_OK)) goto out;
    int n_fresh = 0, aliased[KF_JOB_MAX_TENSORS] = {0};
    for (int o = 0; o < c->sig.n_out; o++) {
        n_fresh += !c->sig.out_alias[o];
        if (c->sig.out_alias[o]) aliased[c->sig.out_alias[o] - 1] = 1;
    }
    CHECK_EQ_INT(l.n_args, c->sig.n_in + n_fresh);
    size_t len = 0;
    st = cc.compile(cc.self, src, &l, NULL, &blob, &len, &log);
    if (!CHECK_EQ_INT(st, KF_OK)) {
        printf("     %s: compile log:\n%s\n--- source ---\n%s\n", name, log ? log : "", src);
        goto out;
    }
    if (log && strstr(log, "warning")) { /* nothing the compiler says is acceptable */
        CHECK(!strstr(log, "warning"));
        printf("     %s: %s\n", name, log);
    }
    st = cc.load(cc.self, blob, len, &l, 0, &k, err, sizeof err);
    if (!CHECK_EQ_INT(st, KF_OK)) {
        printf("     %s: load: %s\n", name, err);
        goto out;
    }
    void *ptrs[KF_JOB_MAX_TENSORS + KF_JOB_MAX_OUTPUTS];
    int np = 0;
    for (int i = 0; i < c->sig.n_in; i++) {
        ins[i] = malloc((size_t)c->in_n[i] * sizeof(float));
        memcpy(ins[i], c->in[i], (size_t)c->in_n[i] * sizeof(float));
        ptrs[np++] = ins[i];
    }
    for (int o = 0; o < c->sig.n_out; o++) {
        if (c->sig.out_alias[o]) continue; /* written through its input */
        outs[o] = malloc((size_t)(c->out_n[o] ? c->out_n[o] : 1) * sizeof(float));
        for (int64_t e = 0; e < c->out_n[o]; e++) outs[o][e] = NAN; /* poison */
        ptrs[np++] = outs[o];
    }
    if (CHECK_EQ_INT(l.n_ints, 0) && CHECK_EQ_INT(cc.launch(cc.self, k, ptrs, np, NULL), 0)) {
        long bad = 0;
        for (int o = 0; o < c->sig.n_out; o++) {
            const float *got = c->sig.out_alias[o] ? ins[c->sig.out_alias[o] - 1] : outs[o];
            bad += compare(name, o, got, c->ref[o], c->out_n[o]);
        }
        for (int i = 0; i < c->sig.n_in; i++)
            if (!aliased[i])
                CHECK(memcmp(ins[i], c->in[i], (size_t)c->in_n[i] * sizeof(float)) == 0);
        if (CHECK_EQ_INT(bad, 0)) atomic_fetch_add(&n_ok, 1);
    }
out:
    for (int i = 0; i < KF_JOB_MAX_TENSORS; i++) free(ins[i]);
    for (int o = 0; o < KF_JOB_MAX_OUTPUTS; o++) free(outs[o]);
    if (k) cc.unload(cc.self, k);
    free(log);
    free(blob);
    free(src);
    free(lj);
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i; (i = atomic_fetch_add(&next_job, 1)) < n_jobs;) run_job(&jobs[i]);
    return NULL;
}

static void run_cases(void)
{
    add_jobs();
    long nth = sysconf(_SC_NPROCESSORS_ONLN);
    int n_threads = nth < 1 ? 1 : nth > 4 ? 4 : (int)nth;
    pthread_t th[4];
    for (int i = 0; i < n_threads; i++) CHECK(pthread_create(&th[i], NULL, worker, NULL) == 0);
    for (int i = 0; i < n_threads; i++) pthread_join(th[i], NULL);
    printf("%d variants over %d cases, %d correct\n", n_jobs, n_cases, atomic_load(&n_ok));
    CHECK_EQ_INT(atomic_load(&n_ok), n_jobs);
    free_cases();
}

/* ---- the signatures ---- */

#define N SIG_NONE
#define F KF_F32

static void add_group_norm_cases(void)
{
    make_case("host_group_norm", "[2,8,5,5] g4 affine",
              sig_group_norm(T32(0, 2, 8, 5, 5), 4, F, F, F, 1e-5), DATA_PLAIN, 1, 0);
    make_case("host_group_norm", "[2,8,5,5] cl g4 affine",
              sig_group_norm(T32(1, 2, 8, 5, 5), 4, F, F, F, 1e-5), DATA_PLAIN, 1, 0);
    make_case("host_group_norm", "[3,6,7] g3 weight",
              sig_group_norm(T32(0, 3, 6, 7), 3, F, N, F, 1e-6), DATA_PLAIN, 5, 0);
    make_case("host_group_norm", "[4,6] g2 none", sig_group_norm(T32(0, 4, 6), 2, N, N, F, 1e-5),
              DATA_PLAIN, 5, 1);
    make_case("host_group_norm", "[2,6,3,2,5] cl3d g6 bias",
              sig_group_norm(T32(1, 2, 6, 3, 2, 5), 6, N, F, F, 1e-3), DATA_PLAIN, 5, 2);
    make_case("host_group_norm", "[1,32,9,9] g32 offset",
              sig_group_norm(T32(0, 1, 32, 9, 9), 32, F, F, F, 1e-5), DATA_OFFSET, 5, 3);
    make_case("host_group_norm", "[2,16,37] cl g4 offset",
              sig_group_norm(T32(1, 2, 16, 37), 4, F, F, F, 1e-5), DATA_OFFSET, 5, 4);
    /* channels last, tasks of 13 groups (the last one of 6) */
    make_case("host_group_norm", "[2,320,6,5] cl g32",
              sig_group_norm(T32(1, 2, 320, 6, 5), 32, F, F, F, 1e-5), DATA_PLAIN, 1, 0);
    /* channels last, groups of 150 channels: a group per task */
    make_case("host_group_norm", "[1,300,3,3] cl g2 offset",
              sig_group_norm(T32(1, 1, 300, 3, 3), 2, F, N, F, 1e-5), DATA_OFFSET, 3, 1);
}

static void add_batch_norm_cases(void)
{
    make_case("host_batch_norm_eval", "[4,3,5,5]",
              sig_batch_norm(0, T32(0, 4, 3, 5, 5), F, F, F, F, 0, 1e-5), DATA_PLAIN, 1, 0);
    make_case("host_batch_norm_eval", "[4,3,5,5] cl",
              sig_batch_norm(0, T32(1, 4, 3, 5, 5), F, F, F, F, 0, 1e-5), DATA_PLAIN, 1, 0);
    make_case("host_batch_norm_eval", "[2,5,3,4,2] cl3d no affine",
              sig_batch_norm(0, T32(1, 2, 5, 3, 4, 2), N, N, F, F, 0, 1e-3), DATA_PLAIN, 1, 0);
    make_case("host_batch_norm_eval", "legit [6,7]",
              sig_batch_norm(1, T32(0, 6, 7), F, N, F, F, 0, 1e-5), DATA_PLAIN, 1, 0);
    make_case("host_batch_norm_eval", "legit [2,4,9] weight none",
              sig_batch_norm(1, T32(0, 2, 4, 9), N, F, F, F, 0, 1e-5), DATA_PLAIN, 1, 0);
}

/* native_layer_norm of a strided input over its last nn dims: y contiguous, as eager allocates
 * it */
static kf_job_sig ln_strided(kf_job_tensor x, int nn, int wdt, int bdt, double eps)
{
    kf_job_sig s = sig_norm_row(0, x, nn, wdt, bdt, KF_F32, eps);
    s.out[0] = sig_tensor(KF_F32, x.ndim, x.sizes, 0, 0);
    return s;
}

/* native_batch_norm(training=True): running statistics both given (updated in place: outputs
 * 3 and 4 alias them) or both None */
static kf_job_sig bn_train(kf_job_tensor x, int wdt, int bdt, int running)
{
    kf_job_sig s = sig_of("aten::native_batch_norm");
    int64_t c = x.sizes[1];
    s.in[s.n_in++] = x;
    sig_add_opt(&s, "weight", wdt, c);
    sig_add_opt(&s, "bias", bdt, c);
    sig_add_opt(&s, "running_mean", running ? F : N, c);
    sig_add_opt(&s, "running_var", running ? F : N, c);
    sig_add_scalar(&s, "training", 'b')->i = 1;
    sig_add_scalar(&s, "momentum", 'd')->d = 0.1;
    sig_add_scalar(&s, "eps", 'd')->d = 1e-5;
    s.out[s.n_out++] = x;
    s.out[s.n_out++] = sig_vec1(F, c);
    s.out[s.n_out++] = sig_vec1(F, c);
    if (running) {
        s.out[3] = s.in[s.n_in - 2], s.out_alias[3] = s.n_in - 1;
        s.out[4] = s.in[s.n_in - 1], s.out_alias[4] = s.n_in;
        s.n_out = 5;
    }
    return s;
}

/* no large-mean data: y is computed from the saved float mean, as eager computes it, an ulp of
 * the mean (1000: 6e-5) times invstd off the double reference */
static void add_batch_train_cases(void)
{
    make_case("host_batch_norm_train", "train [4,3,5,5]", bn_train(T32(0, 4, 3, 5, 5), F, F, 1),
              DATA_PLAIN, 1, 0);
    make_case("host_batch_norm_train", "train [4,3,5,5] cl",
              bn_train(T32(1, 4, 3, 5, 5), F, F, 1), DATA_PLAIN, 1, 0);
    make_case("host_batch_norm_train", "train [2,300,3,2] cl no running, weight",
              bn_train(T32(1, 2, 300, 3, 2), F, N, 0), DATA_PLAIN, 1, 0);
    make_case("host_batch_norm_train", "train [6,7] no affine",
              bn_train(T32(0, 6, 7), N, N, 1), DATA_PLAIN, 1, 0);
    make_case("host_batch_norm_train", "train [2,4,3,5,2] bias",
              bn_train(T32(0, 2, 4, 3, 5, 2), N, F, 0), DATA_PLAIN, 1, 0);
}

static void add_layer_norm_cases(void)
{
    /* Wav2Vec2: [B, C, T] transposed to [B, T, C], normalized over C (stride T) */
    make_case("host_layer_norm", "[2,37,24] transposed",
              ln_strided(swapped(T32(0, 2, 24, 37), 1, 2), 1, F, F, 1e-5), DATA_PLAIN, 1, 0);
    make_case("host_layer_norm", "[3,40,16] transposed, offset",
              ln_strided(swapped(T32(0, 3, 16, 40), 1, 2), 1, F, F, 1e-5), DATA_OFFSET, 5, 0);
    /* the 2-D transpose, 2 normalized dims, no affine */
    make_case("host_layer_norm", "[5,3,4] from [4,3,5] transposed",
              ln_strided(swapped(T32(0, 4, 3, 5), 0, 2), 2, N, N, 1e-6), DATA_PLAIN, 5, 1);
    /* rows from an expanded input (stride 0), weight only */
    kf_job_tensor e = T32(0, 1, 48);
    e.sizes[0] = 6, e.strides[0] = 0;
    make_case("host_layer_norm", "[6,48] expanded", ln_strided(e, 1, F, N, 1e-5), DATA_PLAIN, 5,
              2);
    /* a slice: rows 100 apart, 64 adjacent elements each; a large mean */
    kf_job_tensor sl = T32(0, 33, 64);
    sl.strides[0] = 100;
    make_case("host_layer_norm", "[33,64] slice", ln_strided(sl, 1, F, F, 1e-5), DATA_OFFSET, 5,
              3);
    /* channels-last [N, C, H, W] normalized over W (stride C) */
    make_case("host_layer_norm", "[2,3,4,5] channels last, over W",
              ln_strided(T32(1, 2, 3, 4, 5), 1, F, F, 1e-5), DATA_PLAIN, 5, 4);
}

/* ---- refusals and their reasons ---- */

static void check_refused(const char *tmpl_name, const kf_job_sig *s, const char *reason)
{
    const kf_template *t = find_template(tmpl_name);
    char why[256] = "";
    if (!CHECK(t && t->why_not)) return;
    CHECK(!t->applies(s));
    CHECK_EQ_INT(t->why_not(s, why, sizeof why), 1);
    CHECK_CONTAINS(why, tmpl_name);
    if (!CHECK_CONTAINS(why, reason)) printf("     %s\n", why);
}

static void set_training(kf_job_sig *s)
{
    for (int i = 0; i < s->n_scalars; i++)
        if (!strcmp(s->scalars[i].name, "training")) s->scalars[i].i = 1;
}

static void test_refusals(void)
{
    char why[256];
    kf_job_sig s = sig_group_norm(T32(0, 2, 8, 5, 5), 4, F, F, F, 1e-5);
    s.in[0].dtype = s.out[0].dtype = KF_F64;
    check_refused("host_group_norm", &s, "input dtype f64 not handled");
    s = sig_group_norm(swapped(T32(0, 2, 8, 5, 5), 2, 3), 4, F, F, F, 1e-5);
    check_refused("host_group_norm", &s, "input layout not handled");
    s = sig_group_norm(T32(0, 2, 8, 5, 5), 4, KF_F16, F, F, 1e-5);
    check_refused("host_group_norm", &s, "weight dtype f16 not handled");
    s = sig_group_norm(T32(0, 2, 8, 5, 5), 4, F, F, F, 1e-5);
    s.out[0] = T32(1, 2, 8, 5, 5); /* not the input's layout */
    check_refused("host_group_norm", &s, "output y");

    s = sig_batch_norm(0, T32(1, 4, 3, 5, 5), F, F, F, F, 0, 1e-5);
    set_training(&s); /* the other template's: no reason from this one */
    CHECK(!find_template("host_batch_norm_eval")->applies(&s));
    CHECK_EQ_INT(find_template("host_batch_norm_eval")->why_not(&s, why, sizeof why), 0);
    s = sig_batch_norm(0, T32(0, 4, 3, 5, 5), F, F, F, F, 3, 1e-5);
    check_refused("host_batch_norm_eval", &s, "save_mean / save_invstd");
    s = sig_batch_norm(1, T32(0, 4, 3, 5, 5), F, F, KF_F64, F, 0, 1e-5);
    check_refused("host_batch_norm_eval", &s, "running_mean dtype f64");

    s = bn_train(T32(0, 1, 3, 1, 1), F, F, 1);
    check_refused("host_batch_norm_train", &s, "one value per channel");
    s = bn_train(T32(0, 4, 3, 5, 5), F, F, 1);
    s.out_alias[4] = 0; /* running_var not written */
    check_refused("host_batch_norm_train", &s, "unexpected outputs");
    s = sig_batch_norm(0, T32(0, 4, 3, 5, 5), F, F, F, F, 0, 1e-5);
    CHECK_EQ_INT(find_template("host_batch_norm_train")->why_not(&s, why, sizeof why), 0);

    s = sig_norm_row(0, T32(0, 8, 37), 1, F, F, F, 1e-5);
    s.in[0].dtype = s.out[0].dtype = KF_F64;
    check_refused("host_layer_norm", &s, "input dtype f64 not handled");
    s = sig_norm_row(0, swapped(T32(0, 8, 37), 0, 1), 1, F, F, F, 1e-5);
    check_refused("host_layer_norm", &s, "output y"); /* y strided as x: eager's is contiguous */
    s = sig_norm_row(0, T32(0, 8, 37), 1, F, F, F, 1e-5);
    s.in[0].strides[0] = -37;
    check_refused("host_layer_norm", &s, "negative stride");

    /* another op: not these templates' business */
    kf_job_sig o = sig_softmax("aten::_softmax", T32(0, 4, 4), -1, 0);
    CHECK_EQ_INT(find_template("host_group_norm")->why_not(&o, why, sizeof why), 0);

    /* the proposer's message names the reason */
    kf_proposer_i p;
    char err[512] = "";
    s = sig_group_norm(T32(0, 2, 8, 5, 5), 4, F, F, F, 1e-5);
    s.in[0].dtype = s.out[0].dtype = KF_F64;
    CHECK_EQ_INT(kf_proposer_builtin_create(&s, "host", 1, &p, err, sizeof err), KF_ERR_NOT_FOUND);
    CHECK_CONTAINS(err, "no host template applies to this aten::native_group_norm signature: "
                        "host_group_norm: input dtype f64 not handled");
    /* both batch norm templates say why */
    s = bn_train(T32(1, 4, 3, 5, 5), F, F, 1);
    s.in[0].dtype = s.out[0].dtype = KF_F64;
    CHECK_EQ_INT(kf_proposer_builtin_create(&s, "host", 1, &p, err, sizeof err), KF_ERR_NOT_FOUND);
    CHECK_CONTAINS(err, "signature: host_batch_norm_train: input dtype f64 not handled");
}

int main(void)
{
    if (!CHECK_EQ_INT(kf_compiler_host_create(&cc, NULL), KF_OK))
        return check_done("templates_host_norm");
    test_refusals();
    add_group_norm_cases();
    add_batch_norm_cases();
    add_batch_train_cases();
    add_layer_norm_cases();
    run_cases();
    cc.destroy(cc.self);
    return check_done("templates_host_norm");
}
