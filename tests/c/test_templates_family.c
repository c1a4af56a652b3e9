/* Shape families of the row templates (docs/architecture.md, "Shape families"): the launch
 * record's "grid_from" (compile/launch.c: a grid that follows a launch-time size), and the
 * family records and launch records of the CUDA softmax, the host layer_norm and the CUDA
 * layer_norm / rms_norm row templates: which signatures state a family, which dims it frees,
 * and that their renders read the rows at launch (every render of these templates is also
 * compiled by NVRTC in test_templates_cuda_norm / test_templates_cuda_softmax_eltwise). */
#include <stdlib.h>
#include <string.h>

#include "tests/c/check.h"
#include "tests/c/job_sig_build.h"
#include "tests/c/nvcc_ptx.h"
#include "compile/compiler.h"
#include "forge/templates/template.h"

#define SZ(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}

static const kf_template *tmpl(const char *name)
{
    for (int i = 0; kf_builtin_templates[i]; i++)
        if (!strcmp(kf_builtin_templates[i]->name, name)) return kf_builtin_templates[i];
    return NULL;
}

static void test_grid_from(void)
{
    kf_launch l;
    char err[256];
    const char *ok = "{\"entry\":\"kf_kernel\",\"grid\":[16,1,1],\"block\":[256,1,1],"
                     "\"args\":[\"const float*\",\"float*\"],\"ints\":[\"numel(t0)/size(t0,-1)\"],"
                     "\"grid_from\":[0,4,2]}";
    CHECK_EQ_INT(kf_launch_parse(ok, &l, err, sizeof err), KF_OK);
    CHECK(l.grid_int == 0 && l.grid_per == 4 && l.grid_mul == 2);
    unsigned gx = 0;
    int64_t v[1] = {37};
    CHECK_EQ_INT(kf_launch_grid_x(&l, v, &gx), KF_OK);
    CHECK_EQ_INT(gx, 20); /* ceil(37 / 4) clusters of 2 */
    v[0] = 1;
    CHECK_EQ_INT(kf_launch_grid_x(&l, v, &gx), KF_OK);
    CHECK_EQ_INT(gx, 2);
    v[0] = 0; /* no rows: not launched (eager runs) */
    CHECK_EQ_INT(kf_launch_grid_x(&l, v, &gx), KF_ERR_INVALID);
    v[0] = (int64_t)1 << 40; /* more blocks than grid.x holds */
    CHECK_EQ_INT(kf_launch_grid_x(&l, v, &gx), KF_ERR_INVALID);
    v[0] = ((int64_t)2147483647 / 2) * 4; /* exactly the most whole clusters grid.x holds */
    CHECK_EQ_INT(kf_launch_grid_x(&l, v, &gx), KF_OK);
    CHECK_EQ_INT(gx, 2147483646u);

    /* without grid_from the record's grid is the grid */
    const char *fixed = "{\"entry\":\"kf_kernel\",\"grid\":[16,1,1],\"args\":[\"float*\"],"
                        "\"ints\":[\"numel(t0)\"]}";
    CHECK_EQ_INT(kf_launch_parse(fixed, &l, err, sizeof err), KF_OK);
    CHECK_EQ_INT(l.grid_per, 0);
    v[0] = 1000;
    CHECK_EQ_INT(kf_launch_grid_x(&l, v, &gx), KF_OK);
    CHECK_EQ_INT(gx, 16);

    /* refused: untrusted records */
    static const char *const bad[] = {
        "\"grid_from\":[0,4,2]}",                     /* no ints */
        "\"ints\":[\"numel(t0)\"],\"grid_from\":[1,4,2]}", /* not one of the ints */
        "\"ints\":[\"numel(t0)\"],\"grid_from\":[0,0,1]}",
        "\"ints\":[\"numel(t0)\"],\"grid_from\":[0,4,65]}",
        "\"ints\":[\"numel(t0)\"],\"grid_from\":[0,4]}",
        "\"ints\":[\"numel(t0)\"],\"grid_from\":[0,4.5,1]}",
        "\"ints\":[\"numel(t0)\"],\"grid_from\":[-1,4,1]}",
        "\"ints\":[\"numel(t0)\"],\"grid_from\":\"0,4,1\"}",
        "\"ints\":[\"numel(t0)\"],\"grid_from\":[0,4,1],\"grid_from\":[0,4,1]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char rec[512];
        snprintf(rec, sizeof rec, "{\"entry\":\"kf_kernel\",\"args\":[\"float*\"],%s", bad[i]);
        if (!CHECK_EQ_INT(kf_launch_parse(rec, &l, err, sizeof err), KF_ERR_INVALID))
            printf("     accepted: %s\n", rec);
    }
}

/* CUDA renders of family kernels, for one nvcc run at the end */
#define MAX_SRCS 64
static char *cuda_srcs[MAX_SRCS], cuda_labels[MAX_SRCS][96];
static int n_srcs;

/* t's family record for sig (NULL: none) equals want */
static void check_family(const char *name, const kf_job_sig *sig, const char *want)
{
    const kf_template *t = tmpl(name);
    if (!CHECK(t != NULL && t->applies(sig))) {
        printf("     %s does not apply\n", name);
        return;
    }
    char *got = kf_template_family(t, sig);
    if (!CHECK((got == NULL) == (want == NULL)) || (want && !CHECK_STR(got, want)))
        printf("     %s: family %s, expected %s\n", name, got ? got : "NULL",
               want ? want : "NULL");
    /* the render reads its rows at launch exactly when there is a family: the first, the
     * last and the start knob values */
    for (int v = 0; v < 3; v++) {
        int idx[KF_KNOB_MAX_VALUES] = {0};
        for (int k = 0; v == 1 && k < t->n_knobs; k++) idx[k] = t->knobs[k].n_values - 1;
        if (v == 2 && !t->start) break;
        if (v == 2) t->start(sig, idx);
        char *src = NULL, *lj = NULL, err[256];
        kf_launch l;
        if (CHECK_EQ_INT(t->render(sig, idx, &src, &lj, err, sizeof err), KF_OK) &&
            CHECK_EQ_INT(kf_launch_parse(lj, &l, err, sizeof err), KF_OK)) {
            CHECK_EQ_INT(l.n_ints, want ? 1 : 0);
            if (want && !strcmp(t->backend, "nvrtc")) CHECK(l.grid_per >= 1); /* it follows */
            if (want && !strcmp(t->backend, "nvrtc") && n_srcs < MAX_SRCS) {
                snprintf(cuda_labels[n_srcs], sizeof cuda_labels[0], "%s %s #%d", name,
                         sig->op, v);
                cuda_srcs[n_srcs++] = src;
                src = NULL;
            }
        }
        free(src);
        free(lj);
    }
    free(got);
}

#define T(dt, ...) sig_tensor(dt, SZ(__VA_ARGS__), 0, 16)

static void test_softmax(void)
{
    const char *fam2 = "{\"tensors\":[0,1],\"free_dims\":[0],\"min\":1,\"max\":268435455,"
                       "\"multiple_of\":1}";
    check_family("cuda_row_softmax", (kf_job_sig[]){sig_softmax("aten::_softmax",
                                                                T(KF_F32, 64, 768), -1, 0)},
                 fam2);
    check_family("cuda_row_softmax", (kf_job_sig[]){sig_softmax("aten::_log_softmax",
                                                                T(KF_BF16, 64, 768), 1, 0)},
                 fam2);
    /* f16 in, f32 out: a family too */
    check_family("cuda_row_softmax", (kf_job_sig[]){sig_softmax("aten::_softmax",
                                                                T(KF_F16, 64, 768), -1, 1)},
                 fam2);
    /* rows of long rows: the element count caps the rows (2^46 / cols) */
    check_family("cuda_row_softmax", (kf_job_sig[]){sig_softmax("aten::_softmax",
                                                                T(KF_F32, 4, 1 << 20), -1, 0)},
                 "{\"tensors\":[0,1],\"free_dims\":[0],\"min\":1,\"max\":67108864,"
                 "\"multiple_of\":1}");
    check_family("cuda_row_softmax", (kf_job_sig[]){sig_softmax("aten::_softmax",
                                                                T(KF_F32, 4, 16, 768), 2, 0)},
                 "{\"tensors\":[0,1],\"free_dims\":[0,1],\"min\":1,\"max\":268435455,"
                 "\"multiple_of\":1}");
    /* columns (dim 0), a reduced dim that is not the last, one row: exact signatures only */
    check_family("cuda_row_softmax", (kf_job_sig[]){sig_softmax("aten::_softmax",
                                                                T(KF_F32, 64, 768), 0, 0)},
                 NULL);
    check_family("cuda_row_softmax", (kf_job_sig[]){sig_softmax("aten::_softmax",
                                                                T(KF_F32, 64, 768, 1), 1, 0)},
                 NULL);
    check_family("cuda_row_softmax", (kf_job_sig[]){sig_softmax("aten::_softmax",
                                                                T(KF_F32, 768), -1, 0)},
                 NULL);
}

static void test_norms(void)
{
    /* host layer_norm, with weight and bias: x, w, b, y, mean, rstd; w and b stay fixed */
    kf_job_sig s = sig_norm_row(0, T(KF_F32, 64, 768), 1, KF_F32, KF_F32, KF_F32, 1e-5);
    const char *ln = "{\"tensors\":[0,3,4,5],\"free_dims\":[0],\"min\":1,\"max\":2147483647,"
                     "\"multiple_of\":1}";
    check_family("host_layer_norm", &s, ln);
    check_family("cuda_layer_norm", &s, ln);
    /* no weight nor bias; two leading dims; two normalized dims */
    s = sig_norm_row(0, T(KF_F32, 8, 8, 768), 1, SIG_NONE, SIG_NONE, KF_F32, 1e-5);
    const char *ln3 = "{\"tensors\":[0,1,2,3],\"free_dims\":[0,1],\"min\":1,\"max\":2147483647,"
                      "\"multiple_of\":1}";
    check_family("host_layer_norm", &s, ln3);
    check_family("cuda_layer_norm", &s, ln3);
    s = sig_norm_row(0, T(KF_F32, 8, 12, 64), 2, KF_F32, SIG_NONE, KF_F32, 1e-5);
    const char *ln2 = "{\"tensors\":[0,2,3,4],\"free_dims\":[0],\"min\":1,\"max\":2147483647,"
                      "\"multiple_of\":1}";
    check_family("host_layer_norm", &s, ln2);
    check_family("cuda_layer_norm", &s, ln2);
    /* rms_norm (bf16, f32 rstd): x, w, y, rstd */
    s = sig_norm_row(1, T(KF_BF16, 64, 768), 1, KF_BF16, SIG_NONE, KF_F32, 1e-6);
    check_family("cuda_rms_norm", &s,
                 "{\"tensors\":[0,2,3],\"free_dims\":[0],\"min\":1,\"max\":2147483647,"
                 "\"multiple_of\":1}");
    /* statistics as one flat [rows] tensor: served exactly, no family */
    s = sig_norm_row(0, T(KF_F32, 64, 768), 1, KF_F32, KF_F32, KF_F32, 1e-5);
    s.out[1] = s.out[2] = sig_vec1(KF_F32, 64);
    check_family("host_layer_norm", &s, NULL);
    check_family("cuda_layer_norm", &s, NULL);
    /* every dim normalized: one row */
    s = sig_norm_row(0, T(KF_F32, 64, 768), 2, KF_F32, KF_F32, KF_F32, 1e-5);
    check_family("host_layer_norm", &s, NULL);
    check_family("cuda_layer_norm", &s, NULL);
    /* strided rows (a slice of wider rows): the kernel's row offsets are constants */
    s = sig_norm_row(0, T(KF_F32, 64, 768), 1, KF_F32, KF_F32, KF_F32, 1e-5);
    s.in[0].strides[0] = 1024;
    s.out[0] = sig_tensor(KF_F32, SZ(64, 768), 0, 0);
    check_family("cuda_layer_norm", &s, NULL);
}

int main(void)
{
    test_grid_from();
    test_softmax();
    test_norms();
    const char *labels[MAX_SRCS];
    for (int i = 0; i < n_srcs; i++) labels[i] = cuda_labels[i];
    nvcc_ptx_all((const char *const *)cuda_srcs, labels, n_srcs);
    for (int i = 0; i < n_srcs; i++) free(cuda_srcs[i]);
    return check_done("templates_family");
}
