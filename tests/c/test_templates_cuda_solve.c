/* The CUDA triangular-solve template (forge/templates/cuda_solve.c): cuda_solve_triangular for
 * aten::linalg_solve_triangular.
 *
 * Without NVRTC: applies() on signatures it must accept and on ones it must refuse (left=False,
 * other dtypes, n over 128, sizes that disagree, batch dims that do not broadcast, missing
 * scalars, in-place outputs), the start hook, and every knob combination rendered on every case
 * with its launch record checked (threads, grid, shared memory, the vector widths against the
 * strides and the alignment).
 * With NVRTC (no GPU needed): a spread of combinations covering every value of every knob, per
 * case, compiled for sm_90 with a clean log.
 * With a GPU: each of those kernels run on well-conditioned systems whose unread entries (the
 * other triangle, and the diagonal when unitriangular) are NaN, outputs poisoned with 0xff
 * bytes, compared with a double-precision substitution (atol = rtol = 1e-4); every output
 * written, inputs unchanged.
 *
 * Cases: Qwen 3.5's systems (unit lower 64x64, 128 right-hand sides) in a small batch and at
 * full size [4, 32, 16], lower and upper, unit and not, n = 1, 5, 7, 64, 128, k not a multiple
 * of a warp, broadcast batch dims (A without batch, size-1 dims on either side), A, B and X
 * column-major per matrix (vectors along the rows), a 4-byte aligned B. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/c/check.h"
#include "tests/c/cuda_template_test.h"
#include "tests/c/job_sig_build.h"
#include "common/cuda_driver.h"
#include "compile/compiler.h"
#include "forge/templates/template.h"

#define MAX_CASES 24

typedef struct scase {
    char label[160];
    kf_job_sig sig;
    int norun; /* too big for the host reference */
} scase;

static const kf_template *T;
static scase cases[MAX_CASES];
static int n_cases;

/* a tensor whose last two dims are column-major (the row stride 1) when fcol */
static kf_job_tensor mat(int ndim, const int64_t *sizes, int fcol, int align)
{
    kf_job_tensor t = sig_tensor(KF_F32, ndim, sizes, 0, align);
    if (fcol) {
        t.strides[ndim - 2] = 1;
        t.strides[ndim - 1] = sizes[ndim - 2];
    }
    return t;
}

/* linalg_solve_triangular(a, b, upper=, left=, unitriangular=) -> x */
static kf_job_sig sig_solve(kf_job_tensor a, kf_job_tensor b, kf_job_tensor x, int upper,
                            int left, int unit)
{
    kf_job_sig s = sig_of("aten::linalg_solve_triangular");
    s.n_in = 2;
    s.in[0] = a, s.in[1] = b;
    s.n_out = 1;
    s.out[0] = x;
    sig_add_scalar(&s, "upper", 'b')->i = upper;
    sig_add_scalar(&s, "left", 'b')->i = left;
    sig_add_scalar(&s, "unitriangular", 'b')->i = unit;
    return s;
}

static void add_case(kf_job_sig sig, int norun, const char *note)
{
    if (!CHECK(n_cases < MAX_CASES)) return;
    scase *c = &cases[n_cases++];
    c->sig = sig;
    c->norun = norun;
    int p = snprintf(c->label, sizeof c->label, "A[");
    p = label_sizes(c->label, sizeof c->label, p, &sig.in[0]);
    p += snprintf(c->label + p, sizeof c->label - (size_t)p, "] B[");
    p = label_sizes(c->label, sizeof c->label, p, &sig.in[1]);
    if (p < (int)sizeof c->label) snprintf(c->label + p, sizeof c->label - (size_t)p, "] %s", note);
    check_serves(T, &sig, c->label);
}

static void make_cases(void)
{
    kf_job_tensor a, b, x;
    a = mat(SZ(2, 3, 5, 64, 64), 0, 16), b = mat(SZ(2, 3, 5, 64, 128), 0, 16);
    add_case(sig_solve(a, b, b, 0, 1, 1), 0, "Qwen's systems, small batch");
    x = mat(SZ(2, 3, 5, 64, 128), 1, 16);
    add_case(sig_solve(a, b, x, 0, 1, 1), 0, "Qwen's systems, X column-major");
    a = mat(SZ(4, 32, 16, 64, 64), 0, 16), b = mat(SZ(4, 32, 16, 64, 128), 0, 16);
    add_case(sig_solve(a, b, b, 0, 1, 1), 1, "Qwen 3.5 prefill");
    a = mat(SZ(2, 5, 5), 0, 16), b = mat(SZ(2, 5, 3), 0, 16);
    add_case(sig_solve(a, b, b, 0, 1, 0), 0, "lower, n 5, k 3");
    a = mat(SZ(3, 7, 7), 0, 16), b = mat(SZ(3, 7, 40), 0, 16);
    add_case(sig_solve(a, b, b, 1, 1, 1), 0, "upper unit, k 40");
    a = mat(SZ(2, 64, 64), 1, 16), b = mat(SZ(2, 64, 1), 0, 16);
    add_case(sig_solve(a, b, b, 1, 1, 0), 0, "upper, A column-major, k 1");
    a = mat(SZ(64, 64), 0, 16), b = mat(SZ(3, 64, 16), 0, 16);
    add_case(sig_solve(a, b, b, 0, 1, 0), 0, "A without batch dims");
    a = mat(SZ(2, 1, 8, 8), 0, 16), b = mat(SZ(1, 3, 8, 8), 0, 16);
    x = mat(SZ(2, 3, 8, 8), 0, 16);
    add_case(sig_solve(a, b, x, 1, 1, 0), 0, "size-1 batch dims on both sides");
    a = mat(SZ(3, 16, 16), 0, 16), b = mat(SZ(3, 16, 33), 1, 16), x = mat(SZ(3, 16, 33), 1, 16);
    add_case(sig_solve(a, b, x, 0, 1, 0), 0, "B and X column-major");
    b = mat(SZ(3, 16, 33), 1, 4);
    add_case(sig_solve(a, b, x, 0, 1, 1), 0, "B column-major, 4-byte aligned");
    a = mat(SZ(1, 1), 0, 16), b = mat(SZ(1, 9), 0, 16);
    add_case(sig_solve(a, b, b, 0, 1, 0), 0, "n 1");
    a = mat(SZ(2, 128, 128), 0, 16), b = mat(SZ(2, 128, 64), 0, 16);
    add_case(sig_solve(a, b, b, 0, 1, 0), 0, "n 128");
}

/* ---- the table, the start, applies() ---- */

static void test_table(void) { T = check_template("cuda_solve_triangular", 4, 4, 1); }

static int knob_value(const int *idx, const char *name)
{
    for (int k = 0; k < T->n_knobs; k++)
        if (!strcmp(T->knobs[k].name, name)) return T->knobs[k].values[idx[k]];
    return -1;
}

static void test_start(void)
{
    kf_job_tensor a = mat(SZ(4, 64, 64), 0, 16), b = mat(SZ(4, 64, 128), 0, 16);
    kf_job_sig s = sig_solve(a, b, b, 0, 1, 1);
    int idx[MAX_KNOBS] = {0};
    T->start(&s, idx);
    for (int k = 0; k < T->n_knobs; k++) CHECK(idx[k] >= 0 && idx[k] < T->knobs[k].n_values);
    CHECK_EQ_INT(knob_value(idx, "threads"), 128);
}

static void test_refusals(void)
{
    kf_job_tensor a = mat(SZ(2, 8, 8), 0, 16), b = mat(SZ(2, 8, 4), 0, 16);
    kf_job_sig s = sig_solve(a, b, b, 0, 1, 1), r;
    CHECK(T->applies(&s));
    r = s, r.op[6] = 'X';
    CHECK(!T->applies(&r));
    r = s, scalar_mut(&r, "left")->i = 0; /* X A = B */
    CHECK(!T->applies(&r));
    r = s, scalar_mut(&r, "upper")->kind = 'i';
    CHECK(!T->applies(&r));
    r = s, r.n_scalars = 2; /* unitriangular missing */
    CHECK(!T->applies(&r));
    r = s, r.in[0].dtype = KF_F16;
    CHECK(!T->applies(&r));
    r = s, r.out[0].dtype = KF_BF16;
    CHECK(!T->applies(&r));
    r = s, r.out_alias[0] = 2; /* written into B */
    CHECK(!T->applies(&r));
    r = s, r.out[0].sizes[2] = 5;
    CHECK(!T->applies(&r));
    r = s, r.in[0].sizes[1] = 7; /* A not square */
    CHECK(!T->applies(&r));
    r = s, r.in[1].sizes[0] = 3, r.out[0].sizes[0] = 3; /* batch 2 against 3 */
    CHECK(!T->applies(&r));
    r = s, r.out[0].sizes[0] = 1; /* X's batch is not the broadcast */
    CHECK(!T->applies(&r));
    r = s, r.in[1].strides[2] = -1;
    CHECK(!T->applies(&r));
    r = s, r.n_in = 1;
    CHECK(!T->applies(&r));
    kf_job_tensor big = mat(SZ(129, 129), 0, 16), bb = mat(SZ(129, 2), 0, 16);
    r = sig_solve(big, bb, bb, 0, 1, 0); /* the column would not fit in registers */
    CHECK(!T->applies(&r));
    kf_job_tensor a3 = mat(SZ(8, 8), 0, 16), b3 = mat(SZ(8, 0), 0, 16);
    r = sig_solve(a3, b3, b3, 0, 1, 0); /* nothing to solve */
    CHECK(!T->applies(&r));
    char *src = (char *)1, *lj = (char *)1, err[256];
    int idx[MAX_KNOBS] = {0};
    r = s, scalar_mut(&r, "left")->i = 0;
    CHECK_EQ_INT(T->render(&r, idx, &src, &lj, err, sizeof err), KF_ERR_UNSUPPORTED);
    CHECK(src == NULL && lj == NULL);
}

/* ---- every knob combination renders a consistent candidate ---- */

static long n_rendered;

/* rows of t (row stride 1) may move v at a time (the template's rule, restated) */
static int vec_ok(const kf_job_tensor *t, int fresh, int64_t n, int64_t k, int v)
{
    if (v == 1) return 1;
    int nd = t->ndim;
    if (t->strides[nd - 2] != 1 || n % v || (k > 1 && t->strides[nd - 1] % v)) return 0;
    for (int d = 0; d < nd - 2; d++)
        if (t->sizes[d] > 1 && t->strides[d] % v) return 0;
    int align = t->align > 0 ? t->align : fresh ? 16 : 4;
    return align >= 4 * v;
}

static void check_render(const scase *c, const int *idx, char **src_out, kf_launch *l_out)
{
    char *src, *lj;
    const kf_job_sig *s = &c->sig;
    kf_launch l;
    int ok = begin_render(T, s, idx, c->label, "kf_kernel(const float", &src, &lj, &l);
    if (ok < 0) return;
    n_rendered++;
    ok = ok && !strcmp(l.entry, "kf_kernel") && l.n_args == 3 &&
         !strcmp(l.arg_types[0], "const float*") && !strcmp(l.arg_types[1], "const float*") &&
         !strcmp(l.arg_types[2], "float*");
    const kf_job_tensor *a = &s->in[0], *b = &s->in[1], *x = &s->out[0];
    int64_t n = a->sizes[a->ndim - 1], k = b->sizes[b->ndim - 1], batch = 1;
    for (int d = 0; d < x->ndim - 2; d++) batch *= x->sizes[d];
    long long nt = src_define(src, "KF_NT", 0), bv = src_define(src, "KF_BVEC", 0);
    long long xv = src_define(src, "KF_XVEC", 0);
    int want_nt = knob_value(idx, "threads"), v = knob_value(idx, "vec");
    if (want_nt > (k + 31) / 32 * 32) want_nt = (int)((k + 31) / 32 * 32);
    long long tiles = (k + nt - 1) / (nt > 0 ? nt : 1);
    ok = ok && nt == want_nt && l.block[0] == (unsigned)nt && l.block[1] == 1 && l.block[2] == 1;
    ok = ok && l.grid[0] == (unsigned)(tiles * batch) && l.grid[1] == 1 && l.grid[2] == 1;
    ok = ok && l.smem == (unsigned)(n * ((n + 3) / 4 * 4 + knob_value(idx, "pitch")) * 4);
    /* the widest vectors the strides and alignment allow, up to the knob */
    int wb = v, wx = v;
    while (!vec_ok(b, 0, n, k, wb)) wb /= 2;
    while (!vec_ok(x, 1, n, k, wx)) wx /= 2;
    ok = ok && bv == wb && xv == wx;
    ok = ok && src_define(src, "KF_N", 0) == n && src_define(src, "KF_K", 0) == k;
    if (!CHECK(ok)) {
        print_knobs(T, c->label, idx);
        printf("     record %s (threads %lld, vec %lld/%lld)\n", lj, nt, bv, xv);
    }
    keep_render(ok, src, lj, &l, src_out, l_out);
}

KF_DEFINE_TEST_RENDER_ALL()

/* ---- compile a spread of combinations with NVRTC (cuda_template_test.h) ---- */

KF_DEFINE_TEST_JOBS()

/* ---- running them ---- */

/* largest element offset + 1 of t */
static int64_t reach(const kf_job_tensor *t)
{
    int64_t r = 1;
    for (int d = 0; d < t->ndim; d++) r += (t->sizes[d] - 1) * t->strides[d];
    return r;
}

/* t's offset of batch element q of X (x's batch dims, right-aligned broadcast) */
static int64_t batch_offset(const kf_job_tensor *t, const kf_job_tensor *x, int64_t q)
{
    int64_t off = 0;
    int nb = x->ndim - 2, tb = t->ndim - 2;
    for (int d = nb - 1; d >= 0; d--) {
        int64_t i = q % x->sizes[d];
        q /= x->sizes[d];
        int td = d - (nb - tb);
        if (td >= 0 && t->sizes[td] > 1) off += i * t->strides[td];
    }
    return off;
}

/* A: its triangle well conditioned (off-diagonal entries within 1/n, a diagonal of magnitude
 * 1 to 2), NaN wherever the solve must not read; B: uniform in [-1, 1) */
static void make_inputs(const scase *c, float *a, float *b)
{
    const kf_job_sig *s = &c->sig;
    const kf_job_tensor *ta = &s->in[0], *tb = &s->in[1];
    int upper = (int)kf_job_scalar_find(s, "upper")->i;
    int unit = (int)kf_job_scalar_find(s, "unitriangular")->i;
    int64_t n = ta->sizes[ta->ndim - 1], na = kf_job_tensor_numel(ta) / (n * n);
    for (int64_t e = 0; e < reach(ta); e++) a[e] = NAN;
    for (int64_t q = 0; q < na; q++) {
        int64_t off = 0, r = q; /* A's own batch element q */
        for (int d = ta->ndim - 3; d >= 0; d--) {
            off += (r % ta->sizes[d]) * ta->strides[d];
            r /= ta->sizes[d];
        }
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                float v = NAN;
                if (i == j && !unit) v = (float)((urand() < 0.5 ? -1 : 1) * (1 + urand()));
                else if (i != j && (upper ? j > i : j < i)) v = (float)((2 * urand() - 1) / n);
                a[off + i * ta->strides[ta->ndim - 2] + j * ta->strides[ta->ndim - 1]] = v;
            }
    }
    for (int64_t e = 0; e < reach(tb); e++) b[e] = (float)(2 * urand() - 1);
}

/* the solution in double, X's layout */
static void reference(const scase *c, const float *a, const float *b, double *xr)
{
    const kf_job_sig *s = &c->sig;
    const kf_job_tensor *ta = &s->in[0], *tb = &s->in[1], *tx = &s->out[0];
    int upper = (int)kf_job_scalar_find(s, "upper")->i;
    int unit = (int)kf_job_scalar_find(s, "unitriangular")->i;
    int na = ta->ndim, nb = tb->ndim, nx = tx->ndim;
    int64_t n = ta->sizes[na - 1], k = tb->sizes[nb - 1], batch = 1;
    for (int d = 0; d < nx - 2; d++) batch *= tx->sizes[d];
    double *col = malloc((size_t)n * sizeof *col);
    for (int64_t q = 0; q < batch; q++) {
        int64_t oa = batch_offset(ta, tx, q), ob = batch_offset(tb, tx, q), ox = 0, r = q;
        for (int d = nx - 3; d >= 0; d--) {
            ox += (r % tx->sizes[d]) * tx->strides[d];
            r /= tx->sizes[d];
        }
        for (int64_t cc = 0; cc < k; cc++) {
            for (int64_t i = 0; i < n; i++)
                col[i] = b[ob + i * tb->strides[nb - 2] + cc * tb->strides[nb - 1]];
            for (int64_t t = 0; t < n; t++) {
                int64_t i = upper ? n - 1 - t : t;
                double sum = col[i];
                for (int64_t j = upper ? i + 1 : 0; j < (upper ? n : i); j++)
                    sum -= (double)a[oa + i * ta->strides[na - 2] + j * ta->strides[na - 1]] *
                           col[j];
                col[i] = unit ? sum
                              : sum / a[oa + i * ta->strides[na - 2] + i * ta->strides[na - 1]];
            }
            for (int64_t i = 0; i < n; i++)
                xr[ox + i * tx->strides[nx - 2] + cc * tx->strides[nx - 1]] = col[i];
        }
    }
    free(col);
}

typedef struct gcase {
    int ok;
    size_t ba, bb, bx;
    float *a, *b;
    double *xr;
    unsigned long long base[3], dev[3];
} gcase;

static void gcase_make(gpu *G, const scase *c, gcase *g)
{
    memset(g, 0, sizeof *g);
    const kf_job_sig *s = &c->sig;
    g->ba = (size_t)reach(&s->in[0]) * 4, g->bb = (size_t)reach(&s->in[1]) * 4;
    g->bx = (size_t)reach(&s->out[0]) * 4;
    g->a = malloc(g->ba), g->b = malloc(g->bb);
    g->xr = calloc(g->bx / 4, sizeof *g->xr);
    make_inputs(c, g->a, g->b);
    reference(c, g->a, g->b, g->xr);
    size_t sizes[3] = {g->ba + 16, g->bb + 16, g->bx};
    g->ok = 1;
    for (int i = 0; i < 3; i++)
        g->ok = g->ok && CHECK_EQ_INT(G->d.mem_alloc(&g->base[i], sizes[i]), 0);
    if (!g->ok) return;
    int al = s->in[1].align; /* B at its recorded (mis)alignment */
    g->dev[0] = g->base[0], g->dev[1] = g->base[1] + (al > 0 && al < 16 ? (unsigned)al : 0u);
    g->dev[2] = g->base[2];
    g->ok = CHECK_EQ_INT(G->d.memcpy_htod(g->dev[0], g->a, g->ba), 0) &&
            CHECK_EQ_INT(G->d.memcpy_htod(g->dev[1], g->b, g->bb), 0);
}

static void gcase_free(gpu *G, gcase *g)
{
    for (int i = 0; i < 3; i++)
        if (g->base[i]) G->d.mem_free(g->base[i]);
    free(g->a), free(g->b), free(g->xr);
}

/* one kernel of a case on the prepared buffers; 1 when right */
static int gpu_run(gpu *G, kernel_job *j, gcase *g)
{
    char name[400], err[512];
    kernel_job_name(j, name, sizeof name);
    kf_compiled *k = NULL;
    if (!CHECK_EQ_INT(nv.load(nv.self, j->blob, j->len, &j->l, 0, &k, err, sizeof err), KF_OK)) {
        printf("     %s: load: %s\n", name, err);
        return 0;
    }
    void *ptrs[3] = {(void *)(uintptr_t)g->dev[0], (void *)(uintptr_t)g->dev[1],
                     (void *)(uintptr_t)g->dev[2]};
    CHECK_EQ_INT(G->d.memset_d8(g->dev[2], 0xff, g->bx), 0);
    int good = 0;
    if (CHECK_EQ_INT(nv.launch(nv.self, k, ptrs, 3, NULL), 0) &&
        CHECK_EQ_INT(G->d.ctx_synchronize(), 0)) {
        float *gx = malloc(g->bx), *ga = malloc(g->ba), *gb = malloc(g->bb);
        CHECK_EQ_INT(G->d.memcpy_dtoh(gx, g->dev[2], g->bx), 0);
        CHECK_EQ_INT(G->d.memcpy_dtoh(ga, g->dev[0], g->ba), 0);
        CHECK_EQ_INT(G->d.memcpy_dtoh(gb, g->dev[1], g->bb), 0);
        long bad = 0;
        /* every element of X (its layout may leave no gaps: all of reach is X) */
        for (int64_t e = 0; e < (int64_t)(g->bx / 4); e++) {
            double r = g->xr[e], v = gx[e];
            if (!(fabs(v - r) <= 1e-4 + 1e-4 * fabs(r)) && bad++ == 0)
                printf("     %s: X storage[%lld] = %g, reference %g\n", name, (long long)e, v, r);
        }
        if (memcmp(ga, g->a, g->ba) || memcmp(gb, g->b, g->bb)) {
            printf("     %s: an input changed\n", name);
            bad++;
        }
        good = CHECK_EQ_INT(bad, 0);
        free(gx), free(ga), free(gb);
    }
    nv.unload(nv.self, k);
    return good;
}

KF_DEFINE_TEST_GPU(!cases[ci].norun)

/* the reference on a hand-worked 3x3 unit lower system and its upper, non-unit twin */
static void test_reference(void)
{
    kf_job_tensor a = mat(SZ(3, 3), 0, 16), b = mat(SZ(3, 1), 0, 16);
    scase c;
    memset(&c, 0, sizeof c);
    c.sig = sig_solve(a, b, b, 0, 1, 1);
    /* [1 . .; 2 1 .; -1 3 1] x = [1; 4; 0]: x = [1; 2; -5] */
    float av[9] = {NAN, NAN, NAN, 2, NAN, NAN, -1, 3, NAN}, bv[3] = {1, 4, 0};
    double x[3];
    reference(&c, av, bv, x);
    CHECK(x[0] == 1 && x[1] == 2 && x[2] == -5);
    /* [2 1 -1; . 1 3; . . 4] x = [1; 7; 4]: x = [-1; 4; 1] */
    c.sig = sig_solve(a, b, b, 1, 1, 0);
    float au[9] = {2, 1, -1, NAN, 1, 3, NAN, NAN, 4}, bu[3] = {1, 7, 4};
    reference(&c, au, bu, x);
    CHECK(x[2] == 1 && x[1] == 4 && x[0] == -1);
}

int main(void)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rng_state = 0x736f6c76u;
    test_table();
    if (!T) return check_done("templates_cuda_solve");
    test_start();
    test_refusals();
    test_reference();
    make_cases();
    test_render_all();
    nvrtc_levels(&nv, make_jobs, jobs, &n_jobs, test_gpu);
    free_jobs(jobs, n_jobs);
    return test_done(&t0, "templates_cuda_solve");
}
