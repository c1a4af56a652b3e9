/* What the CUDA template tests share: finding templates in kf_builtin_templates, the table
 * checks, #define values of a rendered source, the spread of knob combinations compiled with
 * NVRTC (one job per distinct source) on a small thread pool with a clean-log filter, opening
 * NVRTC, fp16 / bf16 on the host, the tolerances, the seeded rng, the GPU context and the run
 * time at the end.
 *
 * Used by test_templates_cuda_norm.c, test_templates_cuda_reduce.c and
 * test_templates_pool.c (most of it), test_templates_cuda_softmax_eltwise.c (conversions,
 * rng, template lookup, opening NVRTC, the run time), test_templates_cuda_vectors.c (template
 * lookup, dtype names, #define values, the run time) and test_wrapped_scalars.c (opening NVRTC). */
#ifndef KF_TESTS_CUDA_TEMPLATE_TEST_H
#define KF_TESTS_CUDA_TEMPLATE_TEST_H

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
#include "tests/c/nvrtc_find.h"
#include "common/cuda_driver.h"
#include "compile/compiler.h"
#include "forge/templates/template.h"

#define MAX_KNOBS 8 /* knob index vectors the tests hold */

/* sizes as arguments of sig_tensor: SZ(2, 3, 4) is the count and the array */
#define SZ(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}

/* ---- the table ---- */

static inline const kf_template *find_template(const char *name)
{
    for (int i = 0; kf_builtin_templates[i]; i++)
        if (!strcmp(kf_builtin_templates[i]->name, name)) return kf_builtin_templates[i];
    return NULL;
}

/* how many nvrtc templates of the table apply, the pointwise engine aside (cuda_pointwise takes
 * every elementwise op by design; tests/c/test_templates_pointwise.c checks it) */
static inline int nvrtc_applies(const kf_job_sig *s)
{
    int n = 0;
    for (int i = 0; kf_builtin_templates[i]; i++)
        if (!strcmp(kf_builtin_templates[i]->backend, "nvrtc") &&
            strcmp(kf_builtin_templates[i]->name, "cuda_pointwise"))
            n += kf_builtin_templates[i]->applies(s);
    return n;
}

/* Template `name` is in the table exactly once: nvrtc, lo..hi knobs with distinct names of
 * 1..KF_KNOB_MAX_VALUES values, applies and render (and start when need_start), applies(NULL)
 * refused. NULL when absent. */
static inline const kf_template *check_template(const char *name, int lo, int hi, int need_start)
{
    const kf_template *t = find_template(name);
    if (!CHECK(t != NULL)) {
        printf("     %s is not in kf_builtin_templates\n", name);
        return NULL;
    }
    CHECK_STR(t->backend, "nvrtc");
    CHECK(t->n_knobs >= lo && t->n_knobs <= hi && t->applies && t->render &&
          (!need_start || t->start));
    for (int k = 0; k < t->n_knobs; k++) {
        CHECK(t->knobs[k].name && t->knobs[k].n_values >= 1 &&
              t->knobs[k].n_values <= KF_KNOB_MAX_VALUES);
        for (int j = 0; j < k; j++) CHECK(strcmp(t->knobs[k].name, t->knobs[j].name) != 0);
    }
    int count = 0;
    for (int i = 0; kf_builtin_templates[i]; i++)
        count += !strcmp(kf_builtin_templates[i]->name, name);
    CHECK_EQ_INT(count, 1);
    CHECK(!t->applies(NULL));
    return t;
}

/* t serves sig, and no other nvrtc template does; the label printed when not */
static inline void check_serves(const kf_template *t, const kf_job_sig *sig, const char *label)
{
    if (!CHECK(t && t->applies(sig)) || !CHECK_EQ_INT(nvrtc_applies(sig), 1))
        printf("     case %s\n", label);
}

static inline kf_job_scalar *scalar_mut(kf_job_sig *s, const char *name)
{
    return (kf_job_scalar *)kf_job_scalar_find(s, name);
}

/* ---- dtypes ---- */

static inline const char *dname(int dt)
{
    return dt == KF_F32 ? "f32" : dt == KF_F16 ? "f16" : dt == KF_BF16 ? "bf16" : "?";
}

/* the CUDA element type of a float dtype */
static inline const char *cuda_type(int dt)
{
    return dt == KF_F32 ? "float" : dt == KF_F16 ? "__half" : "__nv_bfloat16";
}

/* bytes of an element: f32 4, int64 (max_pool2d's indices) 8, f16 and bf16 2 */
static inline int esize(int dt) { return dt == KF_F32 ? 4 : dt == KF_I64 ? 8 : 2; }

static inline size_t tensor_bytes(const kf_job_tensor *t)
{
    int64_t n = kf_job_tensor_numel(t);
    return (size_t)(n > 0 ? n : 0) * (size_t)esize(t->dtype);
}

/* Appends t's sizes, "a,b,c", to out at p; the new p. */
static inline int label_sizes(char *out, size_t cap, int p, const kf_job_tensor *t)
{
    for (int d = 0; d < t->ndim && p < (int)cap; d++)
        p += snprintf(out + p, cap - (size_t)p, "%s%lld", d ? "," : "", (long long)t->sizes[d]);
    return p;
}

/* ---- rendering ---- */

/* The value of the last `#define NAME v` in src (the effective one where a template #undefs and
 * redefines a knob it clamps), or `dflt`. */
static inline long long src_define(const char *src, const char *name, long long dflt)
{
    char pat[64];
    snprintf(pat, sizeof pat, "#define %s ", name);
    long long v = dflt;
    for (const char *p = strstr(src, pat); p; p = strstr(p + 1, pat)) v = atoll(p + strlen(pat));
    return v;
}

/* how many knob combinations t has */
static inline int knob_combinations(const kf_template *t)
{
    int total = 1;
    for (int k = 0; k < t->n_knobs; k++) total *= t->knobs[k].n_values;
    return total;
}

/* combination v (0 <= v < knob_combinations(t)) as knob value indices, knob 0 fastest */
static inline void knob_combination(const kf_template *t, int v, int *idx)
{
    for (int k = 0; k < t->n_knobs; k++) {
        idx[k] = v % t->knobs[k].n_values;
        v /= t->knobs[k].n_values;
    }
}

/* "     label: knob=value ..." */
static inline void print_knobs(const kf_template *t, const char *label, const int *idx)
{
    printf("     %s:", label);
    for (int k = 0; k < t->n_knobs; k++)
        printf(" %s=%d", t->knobs[k].name, t->knobs[k].values[idx[k]]);
    printf("\n");
}

/* The start of a checked render: `s` rendered with knob indices idx through t, then whether the
 * source declares the CUDA kernel and holds `entry` (e.g. "kf_kernel(KF_PARAMS)") and the
 * launch record parses into *l. -1 (reported under `label`) when the render itself failed;
 * else *src and *lj are the caller's, to hand to keep_render. */
static inline int begin_render(const kf_template *t, const kf_job_sig *s, const int *idx,
                               const char *label, const char *entry, char **src, char **lj,
                               kf_launch *l)
{
    char err[512];
    *src = *lj = NULL;
    kf_status st = t->render(s, idx, src, lj, err, sizeof err);
    if (!CHECK_EQ_INT(st, KF_OK)) {
        printf("     %s: %s\n", label, err);
        return -1;
    }
    memset(l, 0, sizeof *l);
    return strstr(*src, "extern \"C\" __global__ void") && strstr(*src, entry) &&
           kf_launch_parse(*lj, l, err, sizeof err) == KF_OK;
}

/* The end of a checked render: the source and record go to *src_out and *l_out when it passed
 * and the caller wants them (src_out not NULL), else the source is freed; lj is freed. */
static inline void keep_render(int ok, char *src, char *lj, const kf_launch *l, char **src_out,
                               kf_launch *l_out)
{
    if (src_out && ok) {
        *src_out = src;
        *l_out = *l;
        src = NULL;
    }
    free(src);
    free(lj);
}

/* rendering is deterministic: the first values twice give the same source and record */
static inline void check_render_deterministic(const kf_template *t, const kf_job_sig *s)
{
    int idx[MAX_KNOBS] = {0};
    char *a = NULL, *b = NULL, *la = NULL, *lb = NULL, err[256];
    t->render(s, idx, &a, &la, err, sizeof err);
    t->render(s, idx, &b, &lb, err, sizeof err);
    CHECK(a && b && !strcmp(a, b) && la && lb && !strcmp(la, lb));
    free(a), free(b), free(la), free(lb);
}

/* ---- compiling a spread of combinations with NVRTC ---- */

typedef struct kernel_job {
    int c;                  /* the case's index */
    const kf_template *t;   /* its template */
    const char *label;      /* its label (for messages) */
    int idx[MAX_KNOBS];     /* knob value indices */
    char *src;              /* the rendered source */
    kf_launch l;            /* its launch record */
    void *blob;             /* the compiled cubin, NULL until compiled */
    size_t len;
} kernel_job;

/* "template label: knob=value ..." */
static inline void job_label(char *out, size_t cap, const kf_template *t, const char *label,
                             const int *idx)
{
    int p = snprintf(out, cap, "%s %s:", t->name, label);
    for (int k = 0; k < t->n_knobs && p > 0 && (size_t)p < cap; k++)
        p += snprintf(out + p, cap - (size_t)p, " %s=%d", t->knobs[k].name,
                      t->knobs[k].values[idx[k]]);
}

static inline void kernel_job_name(const kernel_job *j, char *out, size_t cap)
{
    job_label(out, cap, j->t, j->label, j->idx);
}

/* Combination j of case ci: j = 0 is every knob's first value (where the proposer starts
 * without a start hook), j = 1 the start hook's when t has one; then knob k walks all its
 * values from an offset that differs per case and per knob. */
static inline void spread(const kf_template *t, const kf_job_sig *s, int ci, int j, int *idx)
{
    int walk = t->start ? 2 : 1; /* the first walking combination */
    memset(idx, 0, sizeof(int) * MAX_KNOBS);
    if (j == 1 && t->start) t->start(s, idx);
    else if (j > 0)
        for (int k = 0; k < t->n_knobs; k++)
            idx[k] = (j - walk + ci * (k + 1) + k) % t->knobs[k].n_values;
}

/* Renders combination idx of case ci and checks it: its source (NULL when it failed) and record
 * when src is not NULL. */
typedef void (*render_job_fn)(int ci, const int *idx, char **src, kf_launch *l);

/* every knob combination of t rendered and checked on each of cases 0..n_cases */
static inline void render_every_combination(const kf_template *t, int n_cases,
                                            render_job_fn render)
{
    int total = knob_combinations(t), idx[MAX_KNOBS];
    for (int ci = 0; ci < n_cases; ci++)
        for (int v = 0; v < total; v++) {
            knob_combination(t, v, idx);
            render(ci, idx, NULL, NULL);
        }
}

/* The spread of case ci (template t, signature s) as jobs appended to jobs[*n_jobs..cap): enough
 * combinations that every value of every knob is taken, the same source once. */
static inline void add_spread_jobs(kernel_job *jobs, int *n_jobs, int cap, int ci,
                                   const kf_template *t, const kf_job_sig *s, const char *label,
                                   render_job_fn render)
{
    int most = 0;
    for (int k = 0; k < t->n_knobs; k++)
        if (t->knobs[k].n_values > most) most = t->knobs[k].n_values;
    int first = *n_jobs;
    for (int jn = 0; jn < most + (t->start ? 2 : 1) && *n_jobs < cap; jn++) {
        kernel_job *j = &jobs[*n_jobs];
        memset(j, 0, sizeof *j);
        j->c = ci, j->t = t, j->label = label;
        spread(t, s, ci, jn, j->idx);
        render(ci, j->idx, &j->src, &j->l);
        if (!j->src) continue;
        int dup = 0; /* clamped knobs can render the same kernel twice */
        for (int o = first; o < *n_jobs && !dup; o++) dup = !strcmp(jobs[o].src, j->src);
        if (dup) {
            free(j->src);
            j->src = NULL;
            continue;
        }
        (*n_jobs)++;
    }
}

static inline void free_jobs(kernel_job *jobs, int n_jobs)
{
    for (int i = 0; i < n_jobs; i++) {
        free(jobs[i].src);
        free(jobs[i].blob);
    }
}

/* Warnings from our own code are bugs; the shared CUDA prologue's unused static helpers
 * (templates_cuda.c) draw #177 "declared but never referenced", which is not ours. */
static inline int log_is_clean(const char *log)
{
    for (const char *p = log ? strstr(log, "warning #") : NULL; p;
         p = strstr(p + 1, "warning #")) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        if (!memmem(p, n, "#177-D", 6)) return 0;
        /* the line it points at must be a prologue helper: kf_to_f / kf_from_f */
        if (!eol) return 0;
        const char *q = eol + 1, *qe = strchr(q, '\n');
        size_t qn = qe ? (size_t)(qe - q) : strlen(q);
        if (!memmem(q, qn, "kf_to_f", 7) && !memmem(q, qn, "kf_from_f", 9)) return 0;
    }
    return 1;
}

typedef struct kernel_pool {
    kernel_job *jobs;
    int n_jobs;
    _Atomic int next;
    kf_compiler_i *nv;
} kernel_pool;

static inline void *kernel_pool_worker(void *arg)
{
    kernel_pool *p = arg;
    for (;;) {
        int i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n_jobs) return NULL;
        kernel_job *j = &p->jobs[i];
        char *log = NULL, name[400];
        kernel_job_name(j, name, sizeof name);
        kf_status st =
            p->nv->compile(p->nv->self, j->src, &j->l, "sm_90", &j->blob, &j->len, &log);
        if (!CHECK_EQ_INT(st, KF_OK)) {
            printf("     %s: compile log:\n%s\n", name, log ? log : "(none)");
        } else if (!CHECK(log_is_clean(log))) {
            printf("     %s: warnings:\n%s\n", name, log);
        }
        free(log);
    }
}

/* Every job compiled for sm_90 with a clean log, on up to 4 threads. */
static inline void compile_jobs(kf_compiler_i *nv, kernel_job *jobs, int n_jobs)
{
    kernel_pool pool = {.jobs = jobs, .n_jobs = n_jobs, .nv = nv};
    atomic_init(&pool.next, 0);
    long nth = sysconf(_SC_NPROCESSORS_ONLN);
    int n_threads = nth < 1 ? 1 : nth > 4 ? 4 : (int)nth;
    pthread_t th[4];
    for (int i = 0; i < n_threads; i++)
        CHECK(pthread_create(&th[i], NULL, kernel_pool_worker, &pool) == 0);
    for (int i = 0; i < n_threads; i++) pthread_join(th[i], NULL);
    int ok = 0;
    for (int i = 0; i < n_jobs; i++) ok += jobs[i].blob != NULL;
    printf("compiled %d of %d distinct kernels for sm_90 (%d threads)\n", ok, n_jobs, n_threads);
}

/* NVRTC with the CUDA headers (tests/c/nvrtc_find.h): from the usual places, else the pip
 * wheel's; 0 and a SKIP line when either is missing. */
static inline int open_nvrtc(kf_compiler_i *nv)
{
    char err[512], path[4096];
    const char *inc = nvrtc_find_include();
    if (!inc) {
        printf("SKIP compiling: no CUDA headers for <cuda_bf16.h> (set KFORGE_CUDA_INCLUDE)\n");
        return 0;
    }
    kf_status st = kf_compiler_nvrtc_create(nv, NULL, inc, err, sizeof err);
    if (st != KF_OK && nvrtc_find_wheel(path, sizeof path))
        st = kf_compiler_nvrtc_create(nv, path, inc, err, sizeof err);
    if (st != KF_OK) {
        printf("SKIP compiling: no NVRTC here (%s; set KFORGE_NVRTC)\n", err);
        return 0;
    }
    return 1;
}

/* The NVRTC level and the GPU level: make_jobs() fills jobs[0..*n_jobs), compiled for sm_90;
 * then test_gpu() where the compiler finds a GPU. SKIP lines for what is missing. */
static inline void nvrtc_levels(kf_compiler_i *nv, void (*make_jobs)(void), kernel_job *jobs,
                                const int *n_jobs, void (*test_gpu)(void))
{
    if (!open_nvrtc(nv)) return;
    make_jobs();
    compile_jobs(nv, jobs, *n_jobs);
    char arch[256];
    if (nv->arch(nv->self, 0, arch, sizeof arch) == KF_OK) {
        printf("GPU: %s\n", arch);
        test_gpu();
    } else {
        printf("SKIP running: %s\n", arch);
    }
    nv->destroy(nv->self);
}

/* ---- fp16 / bf16 on the host (round to nearest even, as the device does) ---- */

static inline float bf16_to_f(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint16_t f_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float f16_to_f(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, u;
    if (e == 0) {
        float f = ldexpf((float)m, -24);
        return sign ? -f : f;
    }
    u = e == 31 ? sign | 0x7f800000u | (m << 13) : sign | ((e + 112u) << 23) | (m << 13);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint16_t f_to_f16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to infinity */
    if (a < 0x38800000u) {                                     /* subnormal or zero */
        float v;
        memcpy(&v, &a, 4);
        return (uint16_t)(sign | (uint32_t)nearbyintf(v * 16777216.0f));
    }
    uint32_t mant = a & 0x7fffffu, h = (((a >> 23) - 112u) << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++;
    return (uint16_t)(sign | h);
}

/* element i of a buffer of dtype dt as a double, and a value stored rounded to dt */
static inline double get(const void *p, int dt, int64_t i)
{
    if (dt == KF_F32) return ((const float *)p)[i];
    uint16_t h = ((const uint16_t *)p)[i];
    return dt == KF_F16 ? f16_to_f(h) : bf16_to_f(h);
}

static inline void put(void *p, int dt, int64_t i, double v)
{
    if (dt == KF_F32) ((float *)p)[i] = (float)v;
    else ((uint16_t *)p)[i] = dt == KF_F16 ? f_to_f16((float)v) : f_to_bf16((float)v);
}

/* A reference value as eager would store it: to float (the fp32 result), then to dtype dt. */
static inline double round_to(int dt, double v)
{
    if (isnan(v)) return v;
    if (fabs(v) >= 3.4028235677973366e38) return copysign(INFINITY, v); /* beyond float */
    uint32_t buf = 0;
    put(&buf, dt, 0, v);
    return get(&buf, dt, 0);
}

/* atol and rtol of a dtype: fp32 1e-4, fp16 1e-3, bf16 1e-2 */
static inline double tol_of(int dt) { return dt == KF_F32 ? 1e-4 : dt == KF_F16 ? 1e-3 : 1e-2; }

/* ---- random numbers: a 64-bit LCG each test seeds in main ---- */

static uint64_t rng_state;

static inline double urand(void) /* [0, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}

/* ---- the GPU: device 0's primary context, current while the test runs ---- */

typedef struct gpu {
    kf_cuda_driver d;
    kf_cu_device dev;
    kf_cu_context ctx;
} gpu;

static inline int gpu_open(gpu *G)
{
    char err[512];
    memset(G, 0, sizeof *G);
    if (!CHECK_EQ_INT(kf_cuda_driver_open(&G->d, NULL, err, sizeof err), KF_OK)) {
        printf("     %s\n", err);
        return 0;
    }
    if (!CHECK_EQ_INT(G->d.init(0), 0) || !CHECK_EQ_INT(G->d.device_get(&G->dev, 0), 0) ||
        !CHECK_EQ_INT(G->d.primary_ctx_retain(&G->ctx, G->dev), 0))
        return 0;
    CHECK_EQ_INT(G->d.ctx_push_current(G->ctx), 0);
    return 1;
}

static inline void gpu_close(gpu *G)
{
    kf_cu_context dummy;
    G->d.ctx_pop_current(&dummy);
    G->d.primary_ctx_release(G->dev);
    kf_cuda_driver_close(&G->d);
}

/* Every knob combination of every case rendered and checked (the test's check_render over
 * cases, n_cases, with template T; it counts n_rendered), and one signature rendered twice
 * alike. */
#define KF_DEFINE_TEST_RENDER_ALL()                                                             \
    static void render_job(int ci, const int *idx, char **src, kf_launch *l)                    \
    {                                                                                           \
        check_render(&cases[ci], idx, src, l);                                                  \
    }                                                                                           \
    static void test_render_all(void)                                                           \
    {                                                                                           \
        if (!T) return;                                                                         \
        render_every_combination(T, n_cases, render_job);                                       \
        if (n_cases > 0) check_render_deterministic(T, &cases[0].sig);                          \
        printf("rendered %ld knob combinations over %d cases\n", n_rendered, n_cases);          \
    }

/* The NVRTC level of a test of one template T (cases, n_cases, render_job): its jobs, up to 512
 * distinct kernels, each case's spread of knob combinations (add_spread_jobs), and the compiler. */
#define KF_DEFINE_TEST_JOBS()                                                                   \
    enum { MAX_JOBS = 512 };                                                                    \
    static kernel_job jobs[MAX_JOBS];                                                           \
    static int n_jobs;                                                                          \
    static kf_compiler_i nv;                                                                    \
    static void make_jobs(void)                                                                 \
    {                                                                                           \
        for (int ci = 0; ci < n_cases; ci++)                                                    \
            add_spread_jobs(jobs, &n_jobs, MAX_JOBS, ci, T, &cases[ci].sig, cases[ci].label,    \
                            render_job);                                                        \
    }

/* The GPU pass of a test whose cases each get device buffers and a reference: for every case
 * where `wanted` holds (an expression of ci), gcase_make, run and check each of its compiled
 * jobs (gpu_run), gcase_free. The test defines cases, n_cases, jobs, n_jobs, gcase and those
 * three functions. */
#define KF_DEFINE_TEST_GPU(wanted)                                                              \
    static void test_gpu(void)                                                                  \
    {                                                                                           \
        gpu G;                                                                                  \
        if (!gpu_open(&G)) return;                                                              \
        int ran = 0, passed = 0;                                                                \
        for (int ci = 0; ci < n_cases; ci++) {                                                  \
            if (!(wanted)) continue;                                                            \
            gcase g;                                                                            \
            gcase_make(&G, &cases[ci], &g);                                                     \
            for (int i = 0; g.ok && i < n_jobs; i++) {                                          \
                if (jobs[i].c != ci || !jobs[i].blob) continue;                                 \
                ran++;                                                                          \
                passed += gpu_run(&G, &jobs[i], &g);                                            \
            }                                                                                   \
            gcase_free(&G, &g);                                                                 \
        }                                                                                       \
        printf("ran %d kernels on the GPU, %d correct\n", ran, passed);                         \
        CHECK_EQ_INT(passed, ran);                                                              \
        gpu_close(&G);                                                                          \
    }

/* ---- the end ---- */

static inline double seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (t1.tv_nsec - t0->tv_nsec) * 1e-9;
}

/* "run time N s" since t0 (CLOCK_MONOTONIC), the summary line; the exit code */
static inline int test_done(const struct timespec *t0, const char *name)
{
    printf("run time %.1f s\n", seconds_since(t0));
    return check_done(name);
}

#endif
