/* Float sums in the generic reduction templates accumulate in double (reduce_ops.c): x.sum(0)
 * of a [4096, 64] f32 tensor of randn * 100 (the job's scale-100 random case; sums of thousands
 * of terms that cancel to near 0 in some columns) with host_reduce, every knob combination,
 * each output within two float roundings of the exact sum, where a sequential float sum is off
 * by up to ~1e-2 (over the 1e-4 + 1e-4 |sum| of tolerance.c in the columns near 0). The CUDA
 * template shares the plan: its sum renders declare a double accumulator. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/c/check.h"
#include "tests/c/job_sig_build.h"
#include "compile/compiler.h"

#define SZ(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}
#define R 4096
#define O 64

static const kf_template *tmpl(const char *name)
{
    for (int i = 0; kf_builtin_templates[i]; i++)
        if (!strcmp(kf_builtin_templates[i]->name, name)) return kf_builtin_templates[i];
    return NULL;
}

static kf_job_sig sum_sig(const char *op, int dt)
{
    kf_job_sig s = sig_of(op);
    s.n_in = 1;
    s.in[0] = sig_tensor(dt, SZ(R, O), 0, 16);
    s.n_out = 1;
    s.out[0] = sig_tensor(dt, SZ(O), 0, 0);
    kf_job_scalar *d = sig_add_scalar(&s, "dim", 'l');
    d->n = 1;
    d->v[0] = 0;
    sig_add_scalar(&s, "keepdim", 'b')->i = 0;
    sig_add_scalar(&s, "dtype", 'n');
    return s;
}

/* a standard normal by Box-Muller from a fixed LCG */
static double normal(uint64_t *st)
{
    double u[2];
    for (int k = 0; k < 2; k++) {
        *st = *st * 6364136223846793005ULL + 1442695040888963407ULL;
        u[k] = ((double)(*st >> 11) + 0.5) / 9007199254740992.0;
    }
    return sqrt(-2.0 * log(u[0])) * cos(6.283185307179586 * u[1]);
}

static void test_host_column_sums(void)
{
    const kf_template *t = tmpl("host_reduce");
    kf_compiler_i cc;
    if (!CHECK(t != NULL) || !CHECK_EQ_INT(kf_compiler_host_create(&cc, NULL), KF_OK)) return;
    kf_job_sig s = sum_sig("aten::sum.dim_IntList", KF_F32);
    if (!CHECK(t->applies(&s))) return;
    static float x[R * O], y[O];
    double exact[O] = {0}, seq_err = 0;
    uint64_t st = 3;
    for (int i = 0; i < R * O; i++) x[i] = (float)(100.0 * normal(&st));
    for (int o = 0; o < O; o++) {
        float f = 0;
        for (int r = 0; r < R; r++) exact[o] += x[r * O + o], f += x[r * O + o];
        if (fabs(f - exact[o]) > seq_err) seq_err = fabs(f - exact[o]);
    }
    /* the point of the test: a float sum in order is far from the exact one here */
    CHECK(seq_err > 1e-3);
    int total = 1;
    for (int k = 0; k < t->n_knobs; k++) total *= t->knobs[k].n_values;
    int worst = 0;
    double worst_err = 0;
    for (int v = 0; v < total; v++) {
        int idx[8] = {0}, w = v;
        for (int k = 0; k < t->n_knobs; k++) idx[k] = w % t->knobs[k].n_values, w /= t->knobs[k].n_values;
        char *src = NULL, *lj = NULL, err[256], *log = NULL;
        void *blob = NULL;
        size_t len = 0;
        kf_launch l;
        kf_compiled *k = NULL;
        if (!CHECK_EQ_INT(t->render(&s, idx, &src, &lj, err, sizeof err), KF_OK) ||
            !CHECK_EQ_INT(kf_launch_parse(lj, &l, err, sizeof err), KF_OK))
            goto next;
        CHECK(strstr(src, "typedef double kf_acc;") != NULL);
        if (!CHECK_EQ_INT(cc.compile(cc.self, src, &l, NULL, &blob, &len, &log), KF_OK) ||
            !CHECK_EQ_INT(cc.load(cc.self, blob, len, &l, 0, &k, err, sizeof err), KF_OK)) {
            printf("     knobs %d: %s\n", v, log ? log : err);
            goto next;
        }
        void *ptrs[2] = {x, y};
        for (int o = 0; o < O; o++) y[o] = NAN;
        if (CHECK_EQ_INT(cc.launch(cc.self, k, ptrs, 2, NULL), 0))
            for (int o = 0; o < O; o++) {
                /* one rounding of the double sum to float: half an ulp, and the double error */
                double e = fabs((double)y[o] - exact[o]), lim = ldexp(fabs(exact[o]), -23) + 1e-9;
                if (!(e <= lim) && e >= worst_err) worst = v, worst_err = isnan(e) ? INFINITY : e;
                CHECK(e <= lim);
            }
        cc.unload(cc.self, k);
    next:
        free(src);
        free(lj);
        free(log);
        free(blob);
    }
    if (worst_err > 0) printf("     worst: knobs %d off by %.3g\n", worst, worst_err);
    printf("%d host_reduce kernels within a float rounding of the exact column sums (a float sum "
           "in order: off by %.3g)\n", total, seq_err);
    cc.destroy(cc.self);
}

static void test_cuda_renders(void)
{
    const kf_template *t = tmpl("cuda_reduce_generic");
    if (!CHECK(t != NULL)) return;
    /* (mean.dim of these is cuda_reduce_mean's) */
    static const char *const ops[] = {"aten::sum.dim_IntList"};
    static const int dts[] = {KF_F32, KF_F16, KF_BF16};
    for (int i = 0; i < 1; i++)
        for (int j = 0; j < 3; j++) {
            kf_job_sig s = sum_sig(ops[i], dts[j]);
            if (!CHECK(t->applies(&s))) {
                printf("     %s %d: cuda_reduce_generic does not apply\n", ops[i], dts[j]);
                continue;
            }
            int idx[8] = {0};
            char *src = NULL, *lj = NULL, err[256];
            if (CHECK_EQ_INT(t->render(&s, idx, &src, &lj, err, sizeof err), KF_OK))
                CHECK(strstr(src, "typedef double kf_acc;") != NULL);
            free(src);
            free(lj);
        }
}

int main(void)
{
    test_host_column_sums();
    test_cuda_renders();
    return check_done("reduce_accuracy");
}
