/* The evaluator child (forge/eval/evaluator.h), host backend: this test binary is also the child
 * (`test_evaluator --eval JOB_DIR`, run through /proc/self/exe). Candidates that crash, hang,
 * write past their output, or garble the protocol cost the child only: the parent reports them
 * and the next good candidate evaluates in a fresh child. No zombies are left behind. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/c/check.h"
#include "forge/eval/evaluator.h"
#include "tests/c/test_eval_util.h"

#define ROWS 4
#define COLS 1000
#define N (ROWS * COLS)

static char base[256];
static kf_compiler_i hcc;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A kernel the host compiler refuses (it writes to descriptors), built with cc directly: what
 * the evaluator must survive if one ever got past the source check. */
static int make_raw_blob(const char *src, const char *path)
{
    char c[4200], cmd[9000];
    snprintf(c, sizeof c, "%s.c", path);
    FILE *f = fopen(c, "w");
    if (!CHECK(f)) return -1;
    fprintf(f, "%s\nint kf_tramp(void *const *a);\nint kf_tramp(void *const *a)\n"
               "{ kf_kernel((const float *)a[0], (float *)a[1]); return 0; }\n", src);
    fclose(f);
    snprintf(cmd, sizeof cmd, "cc -O2 -shared -fPIC -o '%s' '%s'", path, c);
    int rc = system(cmd);
    unlink(c);
    return CHECK_EQ_INT(rc, 0) ? 0 : -1;
}

/* Compile a relu-shaped host kernel with `body` (x, y, i in scope) into base/<name>.so. */
static int make_blob(const char *name, const char *body, char *path, size_t cap)
{
    char src[2048];
    snprintf(src, sizeof src,
             "#include <math.h>\n#include <stdint.h>\n%s\n#define KF_N %d\n"
             "void kf_kernel(const float *x, float *y)\n{\n%s\n}\n",
             strstr(body, "write(") ? "#include <unistd.h>\n#include <string.h>\n"
                                    "#include <stdlib.h>" : "",
             N, body);
    snprintf(path, cap, "%s/%s.so", base, name);
    if (strstr(body, "write(")) return make_raw_blob(src, path);
    kf_launch l;
    void *blob = NULL;
    size_t len = 0;
    if (compile_blob(&hcc, NULL, src, HOST_UNARY_LAUNCH, &l, &blob, &len)) return -1;
    int rc = write_bytes(path, blob, len);
    free(blob);
    return CHECK(rc == 0) ? 0 : -1;
}

#define RELU_LOOP                                                                              \
    "    for (int i = 0; i < KF_N; i++) { float v = x[i]; "                                    \
    "y[i] = v > 0 ? v : (v != v ? v : 0.0f); }\n"

/* Children of this process still around (a zombie counts): none expected between runs. */
static int children(void)
{
    int n = 0;
    DIR *d = opendir("/proc");
    if (!d) return -1;
    struct dirent *e;
    pid_t me = getpid();
    while ((e = readdir(d))) {
        char p[300], buf[512];
        snprintf(p, sizeof p, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(p, "r");
        if (!f) continue;
        if (fgets(buf, sizeof buf, f)) {
            char *rp = strrchr(buf, ')');
            int ppid = 0;
            char state;
            if (rp && sscanf(rp + 2, "%c %d", &state, &ppid) == 2 && ppid == me) n++;
        }
        fclose(f);
    }
    closedir(d);
    return n;
}

static pid_t a_child(void)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    pid_t me = getpid(), found = 0;
    while (d && (e = readdir(d)) && !found) {
        char p[300], buf[512];
        snprintf(p, sizeof p, "/proc/%s/stat", e->d_name);
        FILE *f = fopen(p, "r");
        if (!f) continue;
        if (fgets(buf, sizeof buf, f)) {
            char *rp = strrchr(buf, ')');
            int ppid = 0;
            char state;
            if (rp && sscanf(rp + 2, "%c %d", &state, &ppid) == 2 && ppid == me)
                found = (pid_t)atoi(e->d_name);
        }
        fclose(f);
    }
    if (d) closedir(d);
    return found;
}

static void show(const char *what, const kf_eval_result *r, double secs)
{
    printf("  %-10s %-13s %.2f s  %s\n", what, kf_node_status_name(r->status), secs, r->error);
}

static kf_eval_result run(kf_evaluator *ev, const char *what, const char *blob, double timeout,
                          double *secs)
{
    kf_eval_result r;
    double t0 = now_s();
    kf_status st = kf_evaluator_run(ev, blob, HOST_UNARY_LAUNCH, timeout, &r);
    *secs = now_s() - t0;
    CHECK_EQ_INT(st, KF_OK);
    show(what, &r, *secs);
    return r;
}

static void expect_good(kf_evaluator *ev, const char *good, int restarts)
{
    double s;
    kf_eval_result r = run(ev, "good", good, 10, &s);
    CHECK_EQ_INT(r.status, KF_NODE_VERIFIED);
    CHECK(r.median_us > 0 && r.reps == 5);
    CHECK_EQ_INT(kf_evaluator_restarts(ev), restarts);
}

static void test_evaluator(const char *exe)
{
    char dir[4200], err[512], good[4300], wrong[4300], segv[4300], hang[4300], oob[4300],
        garbage[4300], flood[4300], chatty[4300];
    make_relu_job(base, "relu", "host", ROWS, COLS, 16, 0, dir, sizeof dir);
    kf_job *job = NULL;
    if (!CHECK_EQ_INT(kf_job_load(dir, &job, err, sizeof err), KF_OK)) return;

    if (make_blob("good", RELU_LOOP, good, sizeof good) ||
        make_blob("wrong", RELU_LOOP "    y[5] = 42.0f;", wrong, sizeof wrong) ||
        make_blob("segv", RELU_LOOP "    *(volatile float *)(uintptr_t)16 = 1.0f;", segv,
                  sizeof segv) ||
        make_blob("hang", "    volatile int spin = 1;\n    while (spin) {}\n" RELU_LOOP, hang,
                  sizeof hang) ||
        make_blob("oob", RELU_LOOP "    y[KF_N] = 1.0f;", oob, sizeof oob) ||
        /* a kernel that writes a garbage line to every descriptor it can find */
        make_blob("garbage",
                  RELU_LOOP
                  "    for (int fd = 3; fd < 64; fd++) (void)!write(fd, \"garbage\\n\", 8);",
                  garbage, sizeof garbage) ||
        /* ... and one that floods them with an endless line */
        make_blob("flood",
                  RELU_LOOP "    char *b = malloc(1 << 17); memset(b, 'x', 1 << 17);\n"
                            "    for (int fd = 3; fd < 64; fd++) (void)!write(fd, b, 1 << 17);\n"
                            "    free(b);",
                  flood, sizeof flood) ||
        /* printing to stdout must not reach the protocol */
        make_blob("chatty",
                  RELU_LOOP "    (void)!write(1, \"{\\\"id\\\":1}\\n\", 9);", chatty,
                  sizeof chatty)) {
        kf_job_free(job);
        return;
    }

    kf_evaluator *ev = NULL;
    if (!CHECK_EQ_INT(kf_evaluator_create(job, exe, &ev, err, sizeof err), KF_OK)) {
        kf_job_free(job);
        return;
    }
    CHECK_EQ_INT(children(), 0); /* lazy: nothing started yet */
    double s;
    kf_eval_result r;

    expect_good(ev, good, 0);
    CHECK_EQ_INT(children(), 1);
    r = run(ev, "wrong", wrong, 10, &s);
    CHECK_EQ_INT(r.status, KF_NODE_WRONG);
    CHECK_CONTAINS(r.error, "case 0 (recorded), output 0: 1 of 4000 elements");
    CHECK_EQ_INT(r.failed_case, 0);
    CHECK_EQ_INT(kf_evaluator_restarts(ev), 0);

    r = run(ev, "segv", segv, 10, &s);
    CHECK_EQ_INT(r.status, KF_NODE_CRASH);
    CHECK_CONTAINS(r.error, "evaluator killed by signal SIGSEGV (Segmentation fault)");
    CHECK_EQ_INT(kf_evaluator_restarts(ev), 1);
    CHECK_EQ_INT(children(), 0); /* reaped */
    expect_good(ev, good, 1);

    r = run(ev, "hang", hang, 1.5, &s);
    CHECK_EQ_INT(r.status, KF_NODE_TIMEOUT);
    CHECK_CONTAINS(r.error, "ran past the 1.5 s candidate timeout");
    CHECK(s >= 1.4 && s < 5);
    CHECK_EQ_INT(children(), 0);
    expect_good(ev, good, 2);

    /* the guard page after the output: the fault is named OOB, and the child replaced */
    r = run(ev, "oob", oob, 10, &s);
    CHECK_EQ_INT(r.status, KF_NODE_OOB);
    CHECK_CONTAINS(r.error, "case 0 (recorded): the kernel accessed outside output 0: at byte "
                            "16000, past its end (16000 bytes) (a fault in the guard page)");
    CHECK_EQ_INT(r.failed_case, 0);
    CHECK_EQ_INT(children(), 0);
    expect_good(ev, good, 3);

    r = run(ev, "garbage", garbage, 10, &s);
    CHECK_EQ_INT(r.status, KF_NODE_CRASH);
    CHECK_CONTAINS(r.error, "malformed reply: 'garbage'");
    CHECK_EQ_INT(children(), 0);
    expect_good(ev, good, 4);

    r = run(ev, "flood", flood, 10, &s);
    CHECK_EQ_INT(r.status, KF_NODE_CRASH);
    CHECK_CONTAINS(r.error, "a line longer than 65536 bytes");
    CHECK(s < 5);
    CHECK_EQ_INT(children(), 0);
    expect_good(ev, good, 5);

    r = run(ev, "chatty", chatty, 10, &s);
    CHECK_EQ_INT(r.status, KF_NODE_VERIFIED);
    CHECK_EQ_INT(kf_evaluator_restarts(ev), 5);

    /* a child that died while idle: the next request gets EPIPE (never SIGPIPE), and a fresh
     * child takes it */
    pid_t idle = a_child();
    if (CHECK(idle > 0)) {
        kill(idle, SIGKILL);
        for (int i = 0; i < 200; i++) { /* until its pipe ends are closed */
            char p[64], buf[256] = "";
            snprintf(p, sizeof p, "/proc/%d/stat", (int)idle);
            FILE *f = fopen(p, "r");
            if (!f) break;
            char *got = fgets(buf, sizeof buf, f);
            fclose(f);
            char *rp = got ? strrchr(buf, ')') : NULL;
            if (rp && rp[2] == 'Z') break;
            struct timespec ts = {0, 10 * 1000000};
            nanosleep(&ts, NULL);
        }
    }
    expect_good(ev, good, 6);

    /* failures that never reach the child */
    CHECK_EQ_INT(kf_evaluator_run(ev, good, "{\"entry\":\"kf_kernel\"}", 10, &r), KF_OK);
    CHECK_EQ_INT(r.status, KF_NODE_LOAD_ERROR);
    CHECK_CONTAINS(r.error, "args");
    char missing[4300];
    snprintf(missing, sizeof missing, "%s/missing.so", base);
    CHECK_EQ_INT(kf_evaluator_run(ev, missing, HOST_UNARY_LAUNCH, 10, &r), KF_OK);
    CHECK_EQ_INT(r.status, KF_NODE_LOAD_ERROR);
    CHECK_CONTAINS(r.error, "missing.so");
    CHECK_EQ_INT(kf_evaluator_run(ev, dir, HOST_UNARY_LAUNCH, 10, &r), KF_OK); /* not a file */
    CHECK_EQ_INT(r.status, KF_NODE_LOAD_ERROR);
    CHECK_EQ_INT(kf_evaluator_restarts(ev), 6);
    expect_good(ev, good, 6);

    kf_evaluator_free(ev);
    CHECK_EQ_INT(children(), 0);
    CHECK(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD);

    /* a child that cannot start (a case file went away after the parent loaded the job) */
    char cf[4300], moved[4300];
    snprintf(cf, sizeof cf, "%s/cases/c1_out0.bin", dir);
    snprintf(moved, sizeof moved, "%s/cases/moved.bin", dir);
    CHECK(rename(cf, moved) == 0);
    CHECK_EQ_INT(kf_evaluator_create(job, exe, &ev, err, sizeof err), KF_OK);
    kf_status st = kf_evaluator_run(ev, good, HOST_UNARY_LAUNCH, 10, &r);
    CHECK(st != KF_OK);
    CHECK_EQ_INT(r.status, KF_NODE_CRASH);
    CHECK_CONTAINS(r.error, "the evaluator cannot start: ");
    CHECK_CONTAINS(r.error, "c1_out0.bin");
    CHECK_EQ_INT(children(), 0);
    CHECK(rename(moved, cf) == 0);
    expect_good(ev, good, 0); /* the next run starts it again */
    kf_evaluator_free(ev);

    /* an executable that is not there */
    CHECK_EQ_INT(kf_evaluator_create(job, "/nonexistent/kforge-worker", &ev, err, sizeof err),
                 KF_OK);
    CHECK(kf_evaluator_run(ev, good, HOST_UNARY_LAUNCH, 10, &r) != KF_OK);
    CHECK_EQ_INT(r.status, KF_NODE_CRASH);
    CHECK_CONTAINS(r.error, "/nonexistent/kforge-worker");
    kf_evaluator_free(ev);
    CHECK_EQ_INT(kf_evaluator_create(job, NULL, &ev, err, sizeof err), KF_ERR_INVALID);
    CHECK(ev == NULL);
    CHECK(waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD);
    kf_job_free(job);
}

/* The CUDA path through the child (only with a GPU and NVRTC): a sticky CUDA error ends the
 * child (CRASH naming the error), a kernel spinning on the GPU is killed (TIMEOUT), and the next
 * good candidate runs in a fresh child with a fresh context. */
static void test_cuda_child(const char *exe)
{
    kf_compiler_i nv;
    char err[512], arch[256], dir[4200];
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
    make_relu_job(base, "relu_cuda", "nvrtc", ROWS, COLS, 4, 0, dir, sizeof dir);
    char launch[256];
    snprintf(launch, sizeof launch,
             "{\"entry\":\"kf_kernel\",\"grid\":[%d,1,1],\"block\":[256,1,1],\"smem\":0,"
             "\"args\":[\"const float*\",\"float*\"]}",
             (N + 255) / 256);
    static const char *const bodies[] = {
        /* good */
        "if (i < KF_N) { float v = x[i]; y[i] = v > 0.f ? v : (v != v ? v : 0.f); }",
        /* 16-byte loads from a 4-byte aligned input: misaligned address (sticky) */
        "if (i < KF_N / 4) ((float4*)y)[i] = ((const float4*)x)[i];",
        /* spins forever on the GPU */
        "while (clock64() >= 0) {} if (i < KF_N) y[i] = x[i];",
    };
    char paths[3][4300];
    for (int b = 0; b < 3; b++) {
        char src[1024];
        snprintf(src, sizeof src,
                 "#define KF_N %d\n"
                 "extern \"C\" __global__ void kf_kernel(const float* x, float* y)\n"
                 "{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    %s\n}\n",
                 N, bodies[b]);
        kf_launch l;
        void *blob = NULL;
        size_t len = 0;
        if (compile_blob(&nv, arch, src, launch, &l, &blob, &len)) goto destroy;
        snprintf(paths[b], sizeof paths[b], "%s/cuda%d.cubin", base, b);
        CHECK(write_bytes(paths[b], blob, len) == 0);
        free(blob);
    }
    kf_job *job = NULL;
    kf_evaluator *ev = NULL;
    if (!CHECK_EQ_INT(kf_job_load(dir, &job, err, sizeof err), KF_OK)) goto destroy;
    if (!CHECK_EQ_INT(kf_evaluator_create(job, exe, &ev, err, sizeof err), KF_OK)) goto free_job;
    kf_eval_result r;
    double t0;
    static const int want[] = {KF_NODE_VERIFIED, KF_NODE_CRASH, KF_NODE_VERIFIED,
                               KF_NODE_TIMEOUT, KF_NODE_VERIFIED};
    static const int which[] = {0, 1, 0, 2, 0};
    static const int restarts[] = {0, 1, 1, 2, 2};
    for (int k = 0; k < 5; k++) {
        t0 = now_s();
        CHECK_EQ_INT(kf_evaluator_run(ev, paths[which[k]], launch, 3, &r), KF_OK);
        printf("  cuda %d     %-13s %.2f s  %.2f us  %s\n", which[k], kf_node_status_name(r.status),
               now_s() - t0, r.median_us, r.error);
        CHECK_EQ_INT(r.status, want[k]);
        CHECK_EQ_INT(kf_evaluator_restarts(ev), restarts[k]);
        if (want[k] == KF_NODE_VERIFIED) CHECK(r.median_us > 0 && r.reps == 5);
        if (want[k] == KF_NODE_CRASH) CHECK_CONTAINS(r.error, "CUDA_ERROR_MISALIGNED_ADDRESS");
    }
    kf_evaluator_free(ev);
    CHECK_EQ_INT(children(), 0);
free_job:
    kf_job_free(job);
destroy:
    nv.destroy(nv.self);
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
    snprintf(base, sizeof base, "/tmp/kfevaluator-test-XXXXXX");
    if (!mkdtemp(base) || kf_compiler_host_create(&hcc, NULL) != KF_OK) {
        printf("cannot set up\n");
        return 1;
    }
    test_evaluator(exe);
    test_cuda_child(exe);
    hcc.destroy(hcc.self);
    rm_rf(base);
    return check_done("test_evaluator");
}
