/* A Python number in a tensor argument's place (`x + 1e-6`: add.Tensor(x, other=1e-6)), from
 * job.json to a kernel: the loader puts it into scalars[] under its schema name with kind d/i/b
 * (never into in[]), the binary elementwise templates take it from there (host: rendered,
 * compiled and run against the value eager computes, bit for bit; CUDA: rendered, the number
 * compiled in, the kernel taking self alone; compiled by NVRTC for sm_90 where it is), and what
 * they cannot do exactly they refuse. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/c/cuda_template_test.h"
#include "tests/c/job_sig_build.h"
#include "tests/c/test_eval_util.h"
#include "compile/compiler.h"
#include "forge/job/job.h"
#include "forge/templates/template.h"

#define N 1000

static char g_base[256];

static const kf_template *find(const char *name)
{
    for (int i = 0; kf_builtin_templates[i]; i++)
        if (!strcmp(kf_builtin_templates[i]->name, name)) return kf_builtin_templates[i];
    return NULL;
}

/* job.json of `op`(f32[N], <scalars>) -> f32[N]; scalars is the JSON array's body */
static void put_job(const char *name, const char *op, const char *scalars, char *dir, size_t cap)
{
    job_dir_make(g_base, name, dir, cap);
    float x[N];
    fill_inputs(x, N, 0);
    job_put_case(dir, "c0_in0.bin", x, sizeof x);
    job_put_case(dir, "c0_out0.bin", x, sizeof x); /* not read here */
    job_put_json(dir,
                 "{\"format\":1,\"op\":\"%s\",\"signature\":\"test\",\"sig_hex\":\"0a0b\","
                 "\"torch_version\":\"2.13.0\",\"outputs_layout\":[{\"alias_arg\":-1}],"
                 "\"backend\":\"host\",\"device_index\":0,"
                 "\"inputs\":[{\"dtype\":\"f32\",\"sizes\":[%d],\"strides\":[1],\"align\":16,"
                 "\"name\":\"self\"}],"
                 "\"outputs\":[{\"dtype\":\"f32\",\"sizes\":[%d],\"strides\":[1],\"alias\":-1}],"
                 "\"scalars\":[%s],"
                 "\"cases\":[{\"kind\":\"example\",\"inputs\":[\"c0_in0.bin\"],"
                 "\"outputs\":[\"c0_out0.bin\"]}]," JOB_TAIL,
                 op, N, N, scalars);
}

static kf_job *load(const char *name, const char *op, const char *scalars, char *err, size_t cap)
{
    char dir[4200];
    put_job(name, op, scalars, dir, sizeof dir);
    kf_job *job = NULL;
    if (kf_job_load(dir, &job, err, cap) != KF_OK) return NULL;
    return job;
}

/* the loader: the number is scalars["other"], exact, and in[] holds self alone */
static void test_load(void)
{
    char err[512];
    kf_job *job = load("load", "aten::add.Tensor",
                       "{\"name\":\"other\",\"kind\":\"d\",\"value\":1e-06,\"wrapped\":true},"
                       "{\"name\":\"alpha\",\"kind\":\"i\",\"value\":1}",
                       err, sizeof err);
    if (!CHECK(job != NULL)) {
        printf("     %s\n", err);
        return;
    }
    CHECK_EQ_INT(job->sig.n_in, 1);
    const kf_job_scalar *o = kf_job_scalar_find(&job->sig, "other");
    if (CHECK(o != NULL)) {
        CHECK_EQ_INT(o->kind, 'd');
        CHECK(o->d == 1e-6); /* the double itself, not a float's rounding of it */
    }
    kf_job_free(job);

    job = load("load_int", "aten::mul.Tensor",
               "{\"name\":\"other\",\"kind\":\"i\",\"value\":-3,\"wrapped\":true}", err,
               sizeof err);
    if (CHECK(job != NULL)) {
        o = kf_job_scalar_find(&job->sig, "other");
        CHECK(o && o->kind == 'i' && o->i == -3);
        kf_job_free(job);
    }
    job = load("load_bool", "aten::mul.Tensor",
               "{\"name\":\"other\",\"kind\":\"b\",\"value\":true,\"wrapped\":true}", err,
               sizeof err);
    if (CHECK(job != NULL)) {
        o = kf_job_scalar_find(&job->sig, "other");
        CHECK(o && o->kind == 'b' && o->i == 1);
        kf_job_free(job);
    }

    /* untrusted input: a wrapped number is a number, and "wrapped" a boolean */
    job = load("bad_kind", "aten::mul.Tensor",
               "{\"name\":\"other\",\"kind\":\"s\",\"value\":\"x\",\"wrapped\":true}", err,
               sizeof err);
    CHECK(job == NULL);
    CHECK_CONTAINS(err, "scalars[0] (other): a wrapped Python number has kind");
    kf_job_free(job);
    job = load("bad_flag", "aten::mul.Tensor",
               "{\"name\":\"other\",\"kind\":\"d\",\"value\":0.5,\"wrapped\":1}", err, sizeof err);
    CHECK(job == NULL);
    CHECK_CONTAINS(err, "scalars[0] (other).wrapped must be a boolean");
    kf_job_free(job);
}

/* Render `t` for job->sig (knobs all 0 but unroll 4), compile, run on x; y gets the output. */
static int run_host(kf_compiler_i *cc, const kf_template *t, const kf_job_sig *sig, const float *x,
                    float *y)
{
    char err[512], *src = NULL, *lj = NULL, *log = NULL;
    int idx[8] = {1, 0, 0, 0, 0, 0, 0, 0}, rc = -1;
    void *blob = NULL;
    size_t len = 0;
    kf_compiled *k = NULL;
    kf_launch l;
    if (!CHECK_EQ_INT(t->render(sig, idx, &src, &lj, err, sizeof err), KF_OK)) {
        printf("     %s\n", err);
        return -1;
    }
    CHECK_CONTAINS(src, "KF_OTHER");
    CHECK(kf_source_check_backend(src, "host", err, sizeof err));
    if (!CHECK_EQ_INT(kf_launch_parse(lj, &l, err, sizeof err), KF_OK)) goto free_src;
    CHECK_EQ_INT(l.n_args, 2); /* self and the output: the number is no argument */
    if (!CHECK_EQ_INT(cc->compile(cc->self, src, &l, NULL, &blob, &len, &log), KF_OK)) {
        printf("     %s\n%s\n", log ? log : "", src);
        goto free_src;
    }
    if (!CHECK_EQ_INT(cc->load(cc->self, blob, len, &l, 0, &k, err, sizeof err), KF_OK))
        goto free_blob;
    float *xin = malloc(N * sizeof *xin);
    memcpy(xin, x, N * sizeof *xin);
    for (int i = 0; i < N; i++) y[i] = NAN;
    void *ptrs[2] = {xin, y};
    rc = cc->launch(cc->self, k, ptrs, 2, NULL);
    CHECK(memcmp(xin, x, N * sizeof *xin) == 0);
    free(xin);
    cc->unload(cc->self, k);
free_blob:
    free(blob);
free_src:
    free(log);
    free(src);
    free(lj);
    return rc;
}

/* bit for bit (tol 0) or within tol relative, NaN where the reference is NaN */
static long mismatches(const float *got, const float *ref, double tol)
{
    long bad = 0;
    for (int i = 0; i < N; i++) {
        int ok = isnan(ref[i])  ? isnan(got[i])
                 : tol == 0.0   ? memcmp(&got[i], &ref[i], sizeof(float)) == 0
                 : isinf(ref[i]) ? got[i] == ref[i]
                                 : fabs((double)got[i] - ref[i]) <= tol * (1.0 + fabs(ref[i]));
        if (!ok && bad++ == 0) printf("     [%d] %.9g, eager %.9g\n", i, got[i], ref[i]);
    }
    return bad;
}

/* the host template on job.json signatures, against eager's float32 arithmetic */
static void test_host(void)
{
    kf_compiler_i cc;
    if (!CHECK_EQ_INT(kf_compiler_host_create(&cc, NULL), KF_OK)) return;
    const kf_template *t = find("host_eltwise_binary");
    if (!CHECK(t != NULL)) return;
    struct {
        const char *name, *op, *scalars;
        int mul;
        float other, alpha;
    } cases[] = {
        {"add_eps", "aten::add.Tensor",
         "{\"name\":\"other\",\"kind\":\"d\",\"value\":1e-06,\"wrapped\":true},"
         "{\"name\":\"alpha\",\"kind\":\"i\",\"value\":1}",
         0, (float)1e-6, 1.0f},
        {"add_alpha", "aten::add.Tensor",
         "{\"name\":\"other\",\"kind\":\"d\",\"value\":0.1,\"wrapped\":true},"
         "{\"name\":\"alpha\",\"kind\":\"d\",\"value\":-2.5}",
         0, 0.1f, -2.5f},
        {"add_int", "aten::add.Tensor",
         "{\"name\":\"other\",\"kind\":\"i\",\"value\":1,\"wrapped\":true},"
         "{\"name\":\"alpha\",\"kind\":\"i\",\"value\":1}",
         0, 1.0f, 1.0f},
        {"add_bool", "aten::add.Tensor",
         "{\"name\":\"other\",\"kind\":\"b\",\"value\":true,\"wrapped\":true},"
         "{\"name\":\"alpha\",\"kind\":\"i\",\"value\":1}",
         0, 1.0f, 1.0f},
        {"mul_half", "aten::mul.Tensor",
         "{\"name\":\"other\",\"kind\":\"d\",\"value\":0.5,\"wrapped\":true}", 1, 0.5f, 1.0f},
        {"mul_third", "aten::mul.Tensor",
         "{\"name\":\"other\",\"kind\":\"d\",\"value\":0.33333333333333331,\"wrapped\":true}", 1,
         (float)(1.0 / 3.0), 1.0f},
    };
    float x[N], y[N], ref[N];
    fill_inputs(x, N, 0);
    char err[512];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        kf_job *job = load(cases[c].name, cases[c].op, cases[c].scalars, err, sizeof err);
        if (!CHECK(job != NULL)) {
            printf("     %s: %s\n", cases[c].name, err);
            continue;
        }
        if (CHECK(t->applies(&job->sig))) {
            /* eager on a float32 tensor: the number as a float, a + alpha * b, one rounding */
            const float s = cases[c].other, al = cases[c].alpha;
            for (int i = 0; i < N; i++)
                ref[i] = cases[c].mul ? x[i] * s : x[i] + al * s;
            /* with alpha, eager may fuse the multiply-add: one rounding apart at most */
            const double tol = al == 1.0f ? 0.0 : 1e-6;
            if (CHECK_EQ_INT(run_host(&cc, t, &job->sig, x, y), 0) &&
                !CHECK_EQ_INT(mismatches(y, ref, tol), 0))
                printf("     case %s\n", cases[c].name);
        }
        kf_job_free(job);
    }
    cc.destroy(cc.self);
}

/* NVRTC (when here) compiles a rendered CUDA candidate for sm_90 */
static void nvrtc_compiles(kf_compiler_i *nv, int have_nv, const char *src, const char *lj)
{
    char err[512], *log = NULL;
    void *blob = NULL;
    size_t len = 0;
    kf_launch l;
    if (!have_nv || !CHECK_EQ_INT(kf_launch_parse(lj, &l, err, sizeof err), KF_OK)) return;
    if (!CHECK_EQ_INT(nv->compile(nv->self, src, &l, "sm_90", &blob, &len, &log), KF_OK))
        printf("     %s\n", log ? log : "");
    free(log);
    free(blob);
}

/* what the templates must refuse, and the CUDA template's rendering */
static void test_refusals_and_cuda(void)
{
    kf_compiler_i nv;
    const int have_nv = open_nvrtc(&nv);
    const kf_template *host = find("host_eltwise_binary"), *cuda = find("cuda_eltwise_binary");
    if (!CHECK(host && cuda)) return;
    const int64_t sz[1] = {N};
    kf_job_sig s = sig_of("aten::mul.Tensor");
    s.n_in = s.n_out = 1;
    s.in[0] = s.out[0] = sig_tensor(KF_BF16, 1, sz, 0, 16);
    sig_add_scalar(&s, "other", 'd')->d = 0.1;
    CHECK(!host->applies(&s)); /* the host one is float32 only */
    CHECK(cuda->applies(&s));
    char err[512], *src = NULL, *lj = NULL;
    int idx[8] = {0};
    if (CHECK_EQ_INT(cuda->render(&s, idx, &src, &lj, err, sizeof err), KF_OK)) {
        /* eager's CUDA functor takes the number as a float (not narrowed to bf16 first: the
         * H200 showed one-ulp differences that way): 0.1f's bits; and the kernel takes self and
         * the output, no second operand */
        char want[96];
        float f = 0.1f;
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        snprintf(want, sizeof want, "const float s = __uint_as_float(0x%08xu);", u);
        CHECK_CONTAINS(src, want);
        CHECK_CONTAINS(src, "return v * s;");
        CHECK_CONTAINS(src, "#define KF_NIN 1");
        kf_launch l;
        if (CHECK_EQ_INT(kf_launch_parse(lj, &l, err, sizeof err), KF_OK))
            CHECK_EQ_INT(l.n_args, 2);
        nvrtc_compiles(&nv, have_nv, src, lj);
    }
    free(src);
    free(lj);

    /* in place: x.add_(1e-6, alpha=2) writes self, the only argument */
    kf_job_sig ip = sig_of("aten::add_.Tensor");
    ip.n_in = ip.n_out = 1;
    ip.in[0] = ip.out[0] = sig_tensor(KF_F32, 1, sz, 0, 16);
    ip.out_alias[0] = 1;
    sig_add_scalar(&ip, "other", 'd')->d = 1e-6;
    sig_add_scalar(&ip, "alpha", 'i')->i = 2;
    CHECK(cuda->applies(&ip));
    if (CHECK_EQ_INT(cuda->render(&ip, idx, &src, &lj, err, sizeof err), KF_OK)) {
        CHECK_CONTAINS(src, "#define KF_PARAMS kf_t *y\n");
        CHECK_CONTAINS(src, "return v + __uint_as_float(0x40000000u) * s;"); /* alpha 2.0f */
        nvrtc_compiles(&nv, have_nv, src, lj);
    }
    free(src);
    free(lj);

    /* an int tensor + 2.5 is float32 out of an int input: no float template's job */
    kf_job_sig p = sig_of("aten::add.Tensor");
    p.n_in = p.n_out = 1;
    p.in[0] = sig_tensor(KF_I64, 1, sz, 0, 16);
    p.out[0] = sig_tensor(KF_F32, 1, sz, 0, 16);
    sig_add_scalar(&p, "other", 'd')->d = 2.5;
    sig_add_scalar(&p, "alpha", 'i')->i = 1;
    CHECK(!host->applies(&p));
    CHECK(!cuda->applies(&p));
    /* a bf16 tensor whose output is f32 with a number: not what a number does, refused */
    p.in[0] = sig_tensor(KF_BF16, 1, sz, 0, 16);
    CHECK(!cuda->applies(&p));

    /* a number beyond float (1e300 * x): eager's inf arithmetic stays eager's */
    kf_job_sig b = sig_of("aten::mul.Tensor");
    b.n_in = b.n_out = 1;
    b.in[0] = b.out[0] = sig_tensor(KF_F32, 1, sz, 0, 16);
    kf_job_scalar *o = sig_add_scalar(&b, "other", 'd');
    o->d = 1e300;
    CHECK(!host->applies(&b));
    CHECK(!cuda->applies(&b));
    o->d = 0.5;
    CHECK(host->applies(&b) && cuda->applies(&b));
    /* a second tensor as well as the number: not a signature torch makes, refused */
    b.n_in = 2;
    b.in[1] = b.in[0];
    CHECK(!host->applies(&b));
    CHECK(!cuda->applies(&b));
    /* the number in self's place (torch.mul(0.5, x) through torch.ops): other is in[0] then,
     * and add's alpha would apply to the wrong operand: refused */
    b.n_in = 1;
    snprintf(o->name, sizeof o->name, "self");
    CHECK(!host->applies(&b));
    CHECK(!cuda->applies(&b));
    /* a string where a number belongs */
    o->kind = 's';
    snprintf(o->name, sizeof o->name, "other");
    CHECK(!host->applies(&b));
    CHECK(!cuda->applies(&b));
    if (have_nv) nv.destroy(nv.self);
}

int main(void)
{
    snprintf(g_base, sizeof g_base, "/tmp/kf_test_wrapped_XXXXXX");
    if (!mkdtemp(g_base)) return 1;
    test_load();
    test_host();
    test_refusals_and_cuda();
    rm_rf(g_base);
    return check_done("test_wrapped_scalars");
}
