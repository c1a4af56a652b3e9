/* Helpers shared by the evaluator tests: job folders written by the test itself (job.json + case
 * files with reference outputs computed here), and host kernels compiled to blobs. */
#ifndef KF_TESTS_TEST_EVAL_UTIL_H
#define KF_TESTS_TEST_EVAL_UTIL_H

#include <ftw.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/c/check.h"
#include "compile/compiler.h"
#include "forge/eval/eval.h"
#include "forge/job/job.h"

static inline int rm_one_(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    remove(p);
    return 0;
}

static inline void rm_rf(const char *dir)
{
    if (dir && *dir) nftw(dir, rm_one_, 16, FTW_DEPTH | FTW_PHYS);
}

static inline int write_bytes(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    int ok = fwrite(p, 1, n, f) == n;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* base/name (and its cases/ folder), created; the path in out. */
static inline void job_dir_make(const char *base, const char *name, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%s", base, name);
    mkdir(out, 0700);
    char c[4200];
    snprintf(c, sizeof c, "%s/cases", out);
    mkdir(c, 0700);
}

static inline void job_put_json(const char *dir, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline void job_put_json(const char *dir, const char *fmt, ...)
{
    char *text = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&text, fmt, ap);
    va_end(ap);
    char path[4200];
    snprintf(path, sizeof path, "%s/job.json", dir);
    CHECK(n > 0 && write_bytes(path, text, (size_t)n) == 0);
    free(text);
}

static inline void job_put_case(const char *dir, const char *name, const void *p, size_t n)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/cases/%s", dir, name);
    CHECK(write_bytes(path, p, n) == 0);
}

/* The common head of a job.json up to (not including) "inputs". */
#define JOB_HEAD(op, backend)                                                                    \
    "{\"format\":1,\"op\":\"" op "\",\"signature\":\"test\",\"sig_hex\":\"0a0b\","               \
    "\"torch_version\":\"2.11.0\",\"outputs_layout\":[{\"alias_arg\":-1}],"                     \
    "\"backend\":\"" backend "\",\"device_index\":0,"

/* The common tail after "cases". */
#define JOB_TAIL                                                                                 \
    "\"eager_us\":10,\"bytes_moved\":32000,\"bandwidth_gbs\":100,\"atol\":1e-5,\"rtol\":1e-5,"   \
    "\"search\":{\"bench_reps\":5}}"

/* relu as torch computes it: NaN stays NaN */
static inline float relu_ref(float x)
{
    return isnan(x) ? x : (x > 0 ? x : 0.0f);
}

/* Deterministic values in [-2, 2) with some special ones sprinkled in (case > 0: different). */
static inline void fill_inputs(float *x, int n, int c)
{
    unsigned s = 12345u + 777u * (unsigned)c;
    for (int i = 0; i < n; i++) {
        s = s * 1103515245u + 12345u;
        x[i] = ((float)((s >> 8) & 0xffff) / 65536.0f) * 4.0f - 2.0f;
    }
    if (n > 20) {
        x[3 + c] = NAN;
        x[7] = INFINITY;
        x[11] = -INFINITY;
        x[13] = -0.0f;
    }
}

/* A float32 relu job [rows, cols] with two cases (recorded + random). inplace: relu_ (the
 * output is the input, alias 0). Returns the folder in dir. */
static inline void make_relu_job(const char *base, const char *name, const char *backend,
                                 int rows, int cols, int align, int inplace, char *dir, size_t cap)
{
    job_dir_make(base, name, dir, cap);
    int n = rows * cols;
    float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    for (int c = 0; c < 2; c++) {
        fill_inputs(x, n, c);
        for (int i = 0; i < n; i++) y[i] = relu_ref(x[i]);
        char fn[64];
        snprintf(fn, sizeof fn, "c%d_in0.bin", c);
        job_put_case(dir, fn, x, (size_t)n * sizeof *x);
        snprintf(fn, sizeof fn, "c%d_out0.bin", c);
        job_put_case(dir, fn, y, (size_t)n * sizeof *y);
    }
    free(x);
    free(y);
    char head[512];
    snprintf(head, sizeof head,
             "{\"format\":1,\"op\":\"%s\",\"signature\":\"test\",\"sig_hex\":\"0a0b\","
             "\"torch_version\":\"2.11.0\",\"outputs_layout\":[{\"alias_arg\":-1}],"
             "\"backend\":\"%s\",\"device_index\":0,",
             inplace ? "aten::relu_" : "aten::relu", backend);
    job_put_json(dir,
                 "%s\"inputs\":[{\"dtype\":\"f32\",\"sizes\":[%d,%d],\"strides\":[%d,1],"
                 "\"align\":%d}],"
                 "\"outputs\":[{\"dtype\":\"f32\",\"sizes\":[%d,%d],\"strides\":[%d,1],"
                 "\"alias\":%d}],\"scalars\":[],"
                 "\"cases\":[{\"kind\":\"recorded\",\"inputs\":[\"c0_in0.bin\"],"
                 "\"outputs\":[\"c0_out0.bin\"]},{\"kind\":\"random\",\"inputs\":[\"c1_in0.bin\"],"
                 "\"outputs\":[\"c1_out0.bin\"]}]," JOB_TAIL,
                 head, rows, cols, cols, align, rows, cols, cols, inplace ? 0 : -1);
}

/* Compile `src` with `cc`; the blob (malloc'ed) in *blob. 0 on success. */
static inline int compile_blob(kf_compiler_i *cc, const char *arch, const char *src,
                               const char *launch_json, kf_launch *l, void **blob, size_t *len)
{
    char err[512], *log = NULL;
    if (!CHECK_EQ_INT(kf_launch_parse(launch_json, l, err, sizeof err), KF_OK)) {
        printf("     %s\n", err);
        return -1;
    }
    kf_status st = cc->compile(cc->self, src, l, arch, blob, len, &log);
    if (!CHECK_EQ_INT(st, KF_OK)) {
        printf("     compile log: %s\n", log ? log : "(none)");
        free(log);
        return -1;
    }
    free(log);
    return 0;
}

#define HOST_UNARY_LAUNCH "{\"entry\":\"kf_kernel\",\"args\":[\"const float*\",\"float*\"]}"
#define HOST_INPLACE_LAUNCH "{\"entry\":\"kf_kernel\",\"args\":[\"float*\"]}"

#endif
