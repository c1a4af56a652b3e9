/* Out-of-bounds reads are refused (forge/eval/eval.h): a row softmax on f32 [64, 100] whose row
 * maximum reads one element past each row (past the buffer on the last row), one before each
 * row (before the buffer on the first), or the next row too (in bounds, but rows are
 * independent). Softmax is invariant to the maximum it subtracts, so each gives the right output
 * on ordinary inputs; what catches them is the placement of every buffer against a guard page
 * (host) or between huge canary values (device), and a case whose rows sit at alternating
 * offsets of +-500 (exp underflows to 0 with another row's maximum). Each kernel is evaluated
 * on 20 jobs with fresh random values, through the evaluator child (this binary, --eval), and
 * must be refused (oob or wrong) in all 20; the correct one verified in all 20. The cost of the
 * second placement per candidate is measured in process. The memcheck plumbing (wrapper, exact
 * allocations, report parsing) runs with a stand-in for compute-sanitizer, so it needs no GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tests/c/check.h"
#include "forge/eval/eval_check.h"
#include "forge/eval/eval_impl.h"
#include "forge/eval/evaluator.h"
#include "tests/c/test_eval_util.h"

#define R 64
#define C 100
#define RUNS 20
#define ROW_OFFSET 500.0f

static char base[256];
static kf_compiler_i hcc;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void softmax_ref(const float *x, float *y)
{
    for (int r = 0; r < R; r++) {
        double m = -INFINITY, s = 0;
        for (int c = 0; c < C; c++) m = fmax(m, x[r * C + c]);
        for (int c = 0; c < C; c++) s += exp((double)x[r * C + c] - m);
        for (int c = 0; c < C; c++) y[r * C + c] = (float)(exp((double)x[r * C + c] - m) / s);
    }
}

/* A softmax job with fresh values from `seed`: case 0 in [-3, 3), case 1 the same spread around
 * row offsets of -500, +500, -500, ... (what kernel_forge's random softmax inputs hold). */
static void make_softmax_job(const char *name, const char *backend, unsigned seed, char *dir,
                             size_t cap)
{
    job_dir_make(base, name, dir, cap);
    static float x[R * C], y[R * C];
    unsigned s = seed * 2654435761u + 1;
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < R * C; i++) {
            s = s * 1103515245u + 12345u;
            x[i] = ((float)((s >> 8) & 0xffff) / 65536.0f) * 6.0f - 3.0f;
            if (k == 1) x[i] += (i / C) % 2 ? ROW_OFFSET : -ROW_OFFSET;
        }
        softmax_ref(x, y);
        char fn[32];
        snprintf(fn, sizeof fn, "x%d.bin", k);
        job_put_case(dir, fn, x, sizeof x);
        snprintf(fn, sizeof fn, "y%d.bin", k);
        job_put_case(dir, fn, y, sizeof y);
    }
    char head[512];
    snprintf(head, sizeof head,
             "{\"format\":1,\"op\":\"aten::_softmax\",\"signature\":\"test\",\"sig_hex\":\"0a0b\","
             "\"torch_version\":\"2.11.0\",\"outputs_layout\":[{\"alias_arg\":-1}],"
             "\"backend\":\"%s\",\"device_index\":0,",
             backend);
    job_put_json(dir,
                 "%s\"inputs\":[{\"dtype\":\"f32\",\"sizes\":[%d,%d],\"strides\":[%d,1],"
                 "\"align\":16}],"
                 "\"outputs\":[{\"dtype\":\"f32\",\"sizes\":[%d,%d],\"strides\":[%d,1],"
                 "\"alias\":-1}],"
                 "\"scalars\":[{\"name\":\"dim\",\"kind\":\"i\",\"value\":-1},"
                 "{\"name\":\"half_to_float\",\"kind\":\"b\",\"value\":false}],"
                 "\"cases\":[{\"kind\":\"recorded\",\"inputs\":[\"x0.bin\"],\"outputs\":"
                 "[\"y0.bin\"]},{\"kind\":\"random\",\"inputs\":[\"x1.bin\"],\"outputs\":"
                 "[\"y1.bin\"]}]," JOB_TAIL,
                 head, R, C, C, R, C, C);
}

/* The row maximum runs over xr[LO .. HI): the kernels differ only there. */
static const struct {
    const char *name, *lo, *hi;
    int good;
} kernels[] = {
    {"correct", "0", "C", 1},
    {"past_end", "0", "C + 1", 0},                   /* the last row: past the buffer */
    {"before_start", "-1", "C", 0},                  /* the first row: before the buffer */
    {"next_row", "0", "(r + 1 < R ? 2 * C : C)", 0}, /* in bounds, another row's values */
};
#define N_KERNELS (int)(sizeof kernels / sizeof kernels[0])

static const char host_fmt[] =
    "#include <math.h>\n#define R %d\n#define C %d\n"
    "void kf_kernel(const float *x, float *y)\n{\n"
    "    for (int r = 0; r < R; r++) {\n"
    "        const float *xr = x + r * C;\n"
    "        float m = -INFINITY, s = 0.f;\n"
    "        for (int c = %s; c < %s; c++) m = xr[c] > m ? xr[c] : m;\n"
    "        for (int c = 0; c < C; c++) s += expf(xr[c] - m);\n"
    "        for (int c = 0; c < C; c++) y[r * C + c] = expf(xr[c] - m) / s;\n"
    "    }\n}\n";

static const char cuda_fmt[] =
    "#define R %d\n#define C %d\n"
    "extern \"C\" __global__ void kf_kernel(const float* x, float* y)\n{\n"
    "    int r = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (r >= R) return;\n"
    "    const float* xr = x + r * C;\n"
    "    float m = -__int_as_float(0x7f800000), s = 0.f;\n"
    "    for (int c = %s; c < %s; c++) m = xr[c] > m ? xr[c] : m;\n"
    "    for (int c = 0; c < C; c++) s += expf(xr[c] - m);\n"
    "    for (int c = 0; c < C; c++) y[r * C + c] = expf(xr[c] - m) / s;\n"
    "}\n";

#define CUDA_LAUNCH                                                                              \
    "{\"entry\":\"kf_kernel\",\"grid\":[1,1,1],\"block\":[64,1,1],\"smem\":0,"                   \
    "\"args\":[\"const float*\",\"float*\"]}"

/* Compile every kernel for `backend` into base/<backend>_<name>.blob. */
static int build_kernels(kf_compiler_i *cc, const char *arch, const char *backend,
                         char paths[N_KERNELS][4300])
{
    int cuda = !strcmp(backend, "nvrtc");
    for (int k = 0; k < N_KERNELS; k++) {
        char src[2048];
        snprintf(src, sizeof src, cuda ? cuda_fmt : host_fmt, R, C, kernels[k].lo, kernels[k].hi);
        kf_launch l;
        void *blob = NULL;
        size_t len = 0;
        if (compile_blob(cc, arch, src, cuda ? CUDA_LAUNCH : HOST_UNARY_LAUNCH, &l, &blob, &len))
            return -1;
        snprintf(paths[k], sizeof paths[k], "%s/%s_%s.blob", base, backend, kernels[k].name);
        int rc = write_bytes(paths[k], blob, len);
        free(blob);
        if (!CHECK(rc == 0)) return -1;
    }
    return 0;
}

/* RUNS fresh jobs; every kernel through the evaluator child on each. */
static void refuse_runs(const char *exe, const char *backend, char paths[N_KERNELS][4300])
{
    int cuda = !strcmp(backend, "nvrtc");
    int as_expected[N_KERNELS] = {0}, oob[N_KERNELS] = {0};
    for (int run = 0; run < RUNS; run++) {
        char dir[4200], err[512], name[64];
        snprintf(name, sizeof name, "%s_run%d", backend, run);
        make_softmax_job(name, backend, (unsigned)run + 1, dir, sizeof dir);
        kf_job *job = NULL;
        kf_evaluator *ev = NULL;
        if (!CHECK_EQ_INT(kf_job_load(dir, &job, err, sizeof err), KF_OK)) return;
        if (!CHECK_EQ_INT(kf_evaluator_create(job, exe, &ev, err, sizeof err), KF_OK)) {
            kf_job_free(job);
            return;
        }
        for (int k = 0; k < N_KERNELS; k++) {
            kf_eval_result r;
            CHECK_EQ_INT(kf_evaluator_run(ev, paths[k], cuda ? CUDA_LAUNCH : HOST_UNARY_LAUNCH,
                                          30, &r),
                         KF_OK);
            int ok = kernels[k].good
                         ? r.status == KF_NODE_VERIFIED
                         : r.status == KF_NODE_OOB || r.status == KF_NODE_WRONG;
            as_expected[k] += ok;
            oob[k] += r.status == KF_NODE_OOB;
            if (run == 0 || !ok)
                printf("  %s %-12s run %2d: %-8s %s\n", backend, kernels[k].name, run,
                       kf_node_status_name(r.status), r.error);
        }
        kf_evaluator_free(ev);
        kf_job_free(job);
        rm_rf(dir);
    }
    for (int k = 0; k < N_KERNELS; k++) {
        printf("%s %-12s: %s in %d of %d runs (%d of them oob)\n", backend, kernels[k].name,
               kernels[k].good ? "verified" : "refused", as_expected[k], RUNS, oob[k]);
        CHECK_EQ_INT(as_expected[k], RUNS);
    }
    /* on the host a read past the end or before the start faults in a guard page */
    if (!cuda) CHECK_EQ_INT(oob[1], RUNS);
}

/* What the second placement costs per candidate: the correct kernel evaluated in process with
 * both placements and with the end one only (median of 9). */
static void measure_cost(kf_compiler_i *cc, const char *arch, const char *backend)
{
    int cuda = !strcmp(backend, "nvrtc");
    char dir[4200], err[512], src[2048];
    make_softmax_job("cost", backend, 99, dir, sizeof dir);
    kf_job *job = NULL;
    kf_eval *ev = NULL;
    if (!CHECK_EQ_INT(kf_job_load(dir, &job, err, sizeof err), KF_OK)) return;
    if (!CHECK_EQ_INT(kf_eval_create(job, &ev, err, sizeof err), KF_OK)) {
        printf("     %s\n", err);
        kf_job_free(job);
        return;
    }
    snprintf(src, sizeof src, cuda ? cuda_fmt : host_fmt, R, C, kernels[0].lo, kernels[0].hi);
    kf_launch l;
    void *blob = NULL;
    size_t len = 0;
    kf_compiled *k = NULL;
    if (compile_blob(cc, arch, src, cuda ? CUDA_LAUNCH : HOST_UNARY_LAUNCH, &l, &blob, &len))
        goto free_ev;
    if (!CHECK_EQ_INT(cc->load(cc->self, blob, len, &l, 0, &k, err, sizeof err), KF_OK))
        goto free_blob;
    double ms[2][9];
    for (int rep = 0; rep < 9; rep++)
        for (int places = 1; places <= 2; places++) {
            ev->n_places = places;
            kf_eval_result r;
            double t0 = now_s();
            CHECK_EQ_INT(kf_eval_run(ev, cc, k, &l, &r), KF_OK);
            ms[places - 1][rep] = (now_s() - t0) * 1e3;
            CHECK_EQ_INT(r.status, KF_NODE_VERIFIED);
        }
    for (int p = 0; p < 2; p++) /* insertion sort, 9 values */
        for (int i = 1; i < 9; i++)
            for (int j = i; j > 0 && ms[p][j] < ms[p][j - 1]; j--) {
                double t = ms[p][j];
                ms[p][j] = ms[p][j - 1], ms[p][j - 1] = t;
            }
    printf("%s cost per candidate (f32 [%d,%d], 2 cases, 5 timed reps): %.3f ms with both "
           "placements, %.3f ms with the end one only: +%.3f ms\n",
           backend, R, C, ms[1][4], ms[0][4], ms[1][4] - ms[0][4]);
    cc->unload(cc->self, k);
free_blob:
    free(blob);
free_ev:
    kf_eval_free(ev);
    kf_job_free(job);
}

static void test_cuda(const char *exe)
{
    kf_compiler_i nv;
    char err[512], arch[256];
    const char *inc = getenv("KFORGE_CUDA_INCLUDE");
    if (kf_compiler_nvrtc_create(&nv, NULL, inc && *inc ? inc : "/usr/local/cuda/include", err,
                                 sizeof err) != KF_OK) {
        printf("SKIP cuda: %s\n", err);
        return;
    }
    if (nv.arch(nv.self, 0, arch, sizeof arch) != KF_OK) {
        printf("SKIP cuda: no GPU (%s)\n", arch);
        nv.destroy(nv.self);
        return;
    }
    char paths[N_KERNELS][4300];
    if (build_kernels(&nv, arch, "nvrtc", paths) == 0) {
        refuse_runs(exe, "nvrtc", paths);
        measure_cost(&nv, arch, "nvrtc");
    }
    nv.destroy(nv.self);
}

/* A shell script standing in for compute-sanitizer: it records the child's KFORGE_EVAL_EXACT,
 * writes a memcheck-like report to --log-file and runs the rest of its command line. */
static const char fake_tool[] =
    "#!/bin/sh\n"
    "log=\n"
    "while [ $# -gt 0 ]; do\n"
    "  case \"$1\" in\n"
    "    --log-file) log=\"$2\"; shift 2;;\n"
    "    --tool|--print-limit) shift 2;;\n"
    "    *) break;;\n"
    "  esac\n"
    "done\n"
    "{ echo '========= COMPUTE-SANITIZER'\n"
    "  echo '========= Invalid __global__ read of size 4 bytes'\n"
    "  echo '=========     at kf_kernel+0x90'\n"
    "  echo \"exact=$KFORGE_EVAL_EXACT\"; } > \"$log\"\n"
    "\"$@\"\n"
    "echo '========= ERROR SUMMARY: 1 error' >> \"$log\"\n";

static void test_memcheck_plumbing(const char *exe)
{
    char dir[4200], err[512], tool[4300], blob[4300], log[4300], found[4096];
    make_softmax_job("memcheck", "nvrtc", 7, dir, sizeof dir);
    kf_job *job = NULL;
    if (!CHECK_EQ_INT(kf_job_load(dir, &job, err, sizeof err), KF_OK)) return;
    snprintf(tool, sizeof tool, "%s/fake-compute-sanitizer", base);
    snprintf(blob, sizeof blob, "%s/memcheck.blob", base);
    snprintf(log, sizeof log, "%s/memcheck.log", base);
    CHECK(write_bytes(tool, fake_tool, strlen(fake_tool)) == 0 && chmod(tool, 0700) == 0);
    CHECK(write_bytes(blob, "not a cubin", 11) == 0);

    kf_eval_result r;
    kf_memcheck_result mc;
    setenv("KFORGE_COMPUTE_SANITIZER", "0", 1);
    CHECK_EQ_INT(kf_memcheck_find(found, sizeof found), 0);
    CHECK_CONTAINS(found, "KFORGE_COMPUTE_SANITIZER=0 turns it off");
    CHECK_EQ_INT(kf_memcheck_run(job, exe, blob, CUDA_LAUNCH, 30, log, &r, &mc), KF_OK);
    CHECK_EQ_INT(mc.ran, 0);
    CHECK_CONTAINS(mc.detail, "turns it off");

    setenv("KFORGE_COMPUTE_SANITIZER", tool, 1);
    CHECK_EQ_INT(kf_memcheck_find(found, sizeof found), 1);
    CHECK_STR(found, tool);
    CHECK_EQ_INT(kf_memcheck_run(job, exe, blob, CUDA_LAUNCH, 30, log, &r, &mc), KF_OK);
    printf("  memcheck (stand-in): ran %d, errors %d, %.2f s: %s\n", mc.ran, mc.errors,
           mc.seconds, mc.detail);
    CHECK_EQ_INT(mc.ran, 1);
    CHECK_EQ_INT(mc.errors, 1);
    CHECK_STR(mc.detail, "Invalid __global__ read of size 4 bytes");
    FILE *f = fopen(log, "r");
    char text[1024] = "";
    if (CHECK(f != NULL)) {
        size_t n = fread(text, 1, sizeof text - 1, f);
        text[n] = 0;
        fclose(f);
    }
    CHECK_CONTAINS(text, "exact=1"); /* the child allocates exactly */
    CHECK_CONTAINS(text, "ERROR SUMMARY: 1 error");
    unsetenv("KFORGE_COMPUTE_SANITIZER");
    kf_job_free(job);

    /* a host job: memcheck is for CUDA kernels */
    make_softmax_job("memcheck_host", "host", 7, dir, sizeof dir);
    if (!CHECK_EQ_INT(kf_job_load(dir, &job, err, sizeof err), KF_OK)) return;
    CHECK_EQ_INT(kf_memcheck_run(job, exe, blob, HOST_UNARY_LAUNCH, 30, log, &r, &mc), KF_OK);
    CHECK_EQ_INT(mc.ran, 0);
    CHECK_CONTAINS(mc.detail, "memcheck is for CUDA kernels");
    kf_job_free(job);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--eval")) return kf_evaluator_child_main(argv[2]);
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        perror("readlink /proc/self/exe");
        return 1;
    }
    exe[n] = 0;
    snprintf(base, sizeof base, "/tmp/kfoob-test-XXXXXX");
    if (!mkdtemp(base) || kf_compiler_host_create(&hcc, NULL) != KF_OK) {
        printf("cannot set up\n");
        return 1;
    }
    char paths[N_KERNELS][4300];
    if (build_kernels(&hcc, NULL, "host", paths) == 0) {
        refuse_runs(exe, "host", paths);
        measure_cost(&hcc, NULL, "host");
    }
    test_memcheck_plumbing(exe);
    test_cuda(exe);
    hcc.destroy(hcc.self);
    rm_rf(base);
    return check_done("test_eval_oob");
}
