/* The host compile backend: compile C kernels with the system compiler, load, launch, unload. */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "tests/c/check.h"
#include "compile/compiler.h"

static kf_compiler_i cc;
static char tmpdir[256]; /* TMPDIR for the backend: must be empty again after every compile */

static kf_launch launch_of(const char *json)
{
    kf_launch l;
    char err[256];
    memset(&l, 0, sizeof l);
    if (!CHECK_EQ_INT(kf_launch_parse(json, &l, err, sizeof err), KF_OK)) printf("     %s\n", err);
    return l;
}

static int dir_is_empty(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n == 0;
}

/* compile + load; NULL (and a printed log) on failure */
static kf_compiled *build(const char *src, const kf_launch *l, void **blob, size_t *len)
{
    char *log = NULL, err[512];
    kf_status st = cc.compile(cc.self, src, l, NULL, blob, len, &log);
    if (!CHECK_EQ_INT(st, KF_OK)) {
        printf("     log: %s\n", log ? log : "(none)");
        free(log);
        return NULL;
    }
    free(log);
    CHECK(*blob && *len > 0);
    kf_compiled *k = NULL;
    st = cc.load(cc.self, *blob, *len, l, 0, &k, err, sizeof err);
    if (!CHECK_EQ_INT(st, KF_OK)) {
        printf("     err: %s\n", err);
        return NULL;
    }
    CHECK(k != NULL);
    return k;
}

static const char affine_src[] =
    "#define KF_N 1000\n"
    "void kf_kernel(const float* x, float* y)\n"
    "{\n"
    "    for (int i = 0; i < KF_N; i++) y[i] = 2.0f * x[i] + 1.0f;\n"
    "}\n";

static void test_identity(void)
{
    char a[512], b[512];
    CHECK_STR(cc.name, "host");
    CHECK_EQ_INT(cc.toolchain(cc.self, a, sizeof a), KF_OK);
    CHECK_EQ_INT(cc.toolchain(cc.self, b, sizeof b), KF_OK);
    CHECK(strlen(a) > 10);
    CHECK_STR(a, b);
    CHECK_CONTAINS(a, "; flags: -O3 -march=native -fopenmp -shared -fPIC -std=c11");
    printf("toolchain: %s\n", a);

    CHECK_EQ_INT(cc.arch(cc.self, 0, a, sizeof a), KF_OK);
    CHECK_EQ_INT(cc.arch(cc.self, 0, b, sizeof b), KF_OK);
    CHECK(strlen(a) > 3);
    CHECK_STR(a, b);
    struct utsname u;
    if (uname(&u) == 0) CHECK_CONTAINS(a, u.machine);
    printf("arch: %s\n", a);

    /* a second backend probes afresh and must agree */
    kf_compiler_i c2;
    if (CHECK_EQ_INT(kf_compiler_host_create(&c2, NULL), KF_OK)) {
        CHECK_EQ_INT(c2.arch(c2.self, 0, b, sizeof b), KF_OK);
        CHECK_STR(a, b);
        CHECK_EQ_INT(c2.toolchain(c2.self, b, sizeof b), KF_OK);
        cc.toolchain(cc.self, a, sizeof a);
        CHECK_STR(a, b);
        c2.destroy(c2.self);
    }
    /* too small a buffer is an error, not a silent truncation */
    CHECK(cc.toolchain(cc.self, a, 8) != KF_OK);
}

static void test_compile_launch(void)
{
    kf_launch l = launch_of("{\"entry\":\"kf_kernel\",\"args\":[\"const float *\",\"float*\"]}");
    void *blob = NULL;
    size_t len = 0;
    kf_compiled *k = build(affine_src, &l, &blob, &len);
    CHECK(dir_is_empty(tmpdir));
    if (!k) {
        free(blob);
        return;
    }
    static float x[1000], y[1000];
    for (int i = 0; i < 1000; i++) x[i] = (float)i * 0.5f - 7.0f, y[i] = -1234.0f;
    void *ptrs[2] = {x, y};
    CHECK_EQ_INT(cc.launch(cc.self, k, ptrs, 2, NULL), 0);
    int bad = 0;
    for (int i = 0; i < 1000; i++) bad += y[i] != 2.0f * x[i] + 1.0f;
    CHECK_EQ_INT(bad, 0);
    /* a launch with the wrong argument count is refused, not run */
    y[0] = 99.0f;
    CHECK(cc.launch(cc.self, k, ptrs, 1, NULL) != 0);
    CHECK(cc.launch(cc.self, k, ptrs, 3, NULL) != 0);
    CHECK(y[0] == 99.0f);

    /* the same blob loaded twice gives two independent kernels */
    char err[256];
    kf_compiled *k2 = NULL;
    CHECK_EQ_INT(cc.load(cc.self, blob, len, &l, 0, &k2, err, sizeof err), KF_OK);
    if (k2) {
        CHECK(k2 != k);
        cc.unload(cc.self, k);
        k = NULL;
        for (int i = 0; i < 1000; i++) y[i] = 0;
        CHECK_EQ_INT(cc.launch(cc.self, k2, ptrs, 2, NULL), 0);
        CHECK(y[999] == 2.0f * x[999] + 1.0f);
        cc.unload(cc.self, k2);
    }
    if (k) cc.unload(cc.self, k);
    cc.unload(cc.self, NULL); /* a no-op */
    free(blob);
}

/* Load A, unload it, load B: B's code must run, not a stale A (the loader caches by name). */
static void test_reload_different(void)
{
    kf_launch l = launch_of("{\"entry\":\"kf_kernel\",\"args\":[\"const int32_t*\",\"int32_t*\"]}");
    static const char *const src[3] = {
        "#include <stdint.h>\nvoid kf_kernel(const int32_t* x, int32_t* y) { y[0] = x[0] + 1; }\n",
        "#include <stdint.h>\nvoid kf_kernel(const int32_t* x, int32_t* y) { y[0] = x[0] * 3; }\n",
        "#include <stdint.h>\nvoid kf_kernel(const int32_t* x, int32_t* y) { y[0] = x[0] - 5; }\n",
    };
    const int32_t want[3] = {11, 30, 5};
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 3; i++) {
            void *blob = NULL;
            size_t len = 0;
            kf_compiled *k = build(src[i], &l, &blob, &len);
            if (k) {
                int32_t x = 10, y = 0;
                void *ptrs[2] = {&x, &y};
                CHECK_EQ_INT(cc.launch(cc.self, k, ptrs, 2, NULL), 0);
                CHECK_EQ_INT(y, want[i]);
                cc.unload(cc.self, k);
            }
            free(blob);
        }
    }
}

static void test_types(void)
{
    /* bf16 / fp16 are uint16_t bit patterns for host C; bool is _Bool; fp8 is uint8_t */
    kf_launch l = launch_of("{\"entry\":\"conv\",\"args\":[\"const __nv_bfloat16*\",\"float*\","
                            "\"__half*\",\"const bool*\",\"__nv_fp8_e4m3*\",\"int64_t*\"]}");
    static const char src[] =
        "#include <stdint.h>\n#include <string.h>\n"
        "static void conv(const uint16_t* x, float* y, uint16_t* h, const _Bool* b, uint8_t* f8,"
        " int64_t* n)\n{\n"
        "    for (int i = 0; i < 4; i++) {\n"
        "        uint32_t bits = (uint32_t)x[i] << 16;\n"
        "        memcpy(&y[i], &bits, 4);\n"
        "        h[i] = x[i];\n"
        "        f8[i] = b[i] ? 0x38 : 0;\n"
        "    }\n"
        "    n[0] = 4;\n}\n";
    void *blob = NULL;
    size_t len = 0;
    kf_compiled *k = build(src, &l, &blob, &len);
    if (k) {
        uint16_t x[4] = {0x3f80, 0x4000, 0xbf80, 0x0000}; /* 1, 2, -1, 0 */
        float y[4] = {0};
        uint16_t h[4] = {0};
        _Bool b[4] = {1, 0, 1, 0};
        uint8_t f8[4] = {7, 7, 7, 7};
        int64_t n = 0;
        void *ptrs[6] = {x, y, h, b, f8, &n};
        CHECK_EQ_INT(cc.launch(cc.self, k, ptrs, 6, NULL), 0);
        CHECK(y[0] == 1.0f && y[1] == 2.0f && y[2] == -1.0f && y[3] == 0.0f);
        CHECK(h[1] == 0x4000);
        CHECK(f8[0] == 0x38 && f8[1] == 0);
        CHECK_EQ_INT(n, 4);
        cc.unload(cc.self, k);
    }
    free(blob);
}

static void test_openmp(void)
{
    kf_launch l = launch_of("{\"entry\":\"kf_kernel\",\"args\":[\"const double*\",\"double*\","
                            "\"int32_t*\"]}");
    static const char src[] =
        "#include <omp.h>\n#include <math.h>\n#include <stdint.h>\n"
        "#define KF_N 100000\n"
        "void kf_kernel(const double* x, double* y, int32_t* threads)\n{\n"
        "    int most = 0;\n"
        "#pragma omp parallel for reduction(max : most)\n"
        "    for (int i = 0; i < KF_N; i++) {\n"
        "        y[i] = sqrt(x[i]) + 1.0;\n"
        "        most = omp_get_num_threads() > most ? omp_get_num_threads() : most;\n"
        "    }\n"
        "    threads[0] = most;\n}\n";
    void *blob = NULL;
    size_t len = 0;
    kf_compiled *k = build(src, &l, &blob, &len);
    if (k) {
        double *x = malloc(100000 * sizeof *x), *y = calloc(100000, sizeof *y);
        int32_t threads = 0;
        if (CHECK(x && y)) {
            for (int i = 0; i < 100000; i++) x[i] = (double)i;
            void *ptrs[3] = {x, y, &threads};
            for (int rep = 0; rep < 3; rep++) CHECK_EQ_INT(cc.launch(cc.self, k, ptrs, 3, NULL), 0);
            int bad = 0;
            for (int i = 0; i < 100000; i++) {
                double r = y[i] - 1.0, e = r * r - (double)i; /* y = sqrt(x) + 1, no libm here */
                bad += r < 0 || e > 1e-9 * (double)i + 1e-12 || e < -1e-9 * (double)i - 1e-12;
            }
            CHECK_EQ_INT(bad, 0);
            CHECK(threads >= 1);
            printf("openmp kernel ran with %d threads\n", (int)threads);
        }
        free(x);
        free(y);
        cc.unload(cc.self, k);
    }
    free(blob);
}

static void test_compile_errors(void)
{
    kf_launch l = launch_of("{\"entry\":\"kf_kernel\",\"args\":[\"const float*\",\"float*\"]}");
    void *blob = (void *)1;
    size_t len = 7;
    char *log = NULL;
    kf_status st = cc.compile(cc.self,
                              "void kf_kernel(const float* x, float* y)\n{\n"
                              "    y[0] = x[0] + undeclared_thing;\n}\n",
                              &l, NULL, &blob, &len, &log);
    CHECK_EQ_INT(st, KF_ERR_KERNEL);
    CHECK(blob == NULL && len == 0);
    CHECK_CONTAINS(log, "compile failed");
    CHECK_CONTAINS(log, "undeclared_thing");
    CHECK_CONTAINS(log, "error");
    free(log);
    CHECK(dir_is_empty(tmpdir));

    /* the entry named in the record does not exist */
    log = NULL;
    kf_launch l2 = launch_of("{\"entry\":\"nope\",\"args\":[\"const float*\",\"float*\"]}");
    st = cc.compile(cc.self, affine_src, &l2, NULL, &blob, &len, &log);
    CHECK_EQ_INT(st, KF_ERR_KERNEL);
    CHECK_CONTAINS(log, "nope");
    free(log);

    /* warnings come back in the log of a successful compile */
    log = NULL;
    st = cc.compile(cc.self,
                    "#warning \"kf-test-warning\"\n"
                    "void kf_kernel(const float* x, float* y) { y[0] = x[0]; }\n",
                    &l, NULL, &blob, &len, &log);
    CHECK_EQ_INT(st, KF_OK);
    CHECK_CONTAINS(log, "kf-test-warning");
    free(log);
    free(blob);

    /* a malformed record (not from the parser) is refused before anything runs */
    kf_launch bad = l;
    bad.n_args = 0;
    log = NULL;
    blob = NULL;
    CHECK_EQ_INT(cc.compile(cc.self, affine_src, &bad, NULL, &blob, &len, &log), KF_ERR_INVALID);
    free(log);
    bad = l;
    strcpy(bad.arg_types[1], "float*); evil(");
    log = NULL;
    CHECK_EQ_INT(cc.compile(cc.self, affine_src, &bad, NULL, &blob, &len, &log), KF_ERR_INVALID);
    free(log);
    CHECK(dir_is_empty(tmpdir));
}

static void test_bad_blobs(void)
{
    kf_launch l = launch_of("{\"entry\":\"kf_kernel\",\"args\":[\"const float*\",\"float*\"]}");
    char err[512];
    kf_compiled *k = (kf_compiled *)1;
    CHECK_EQ_INT(cc.load(cc.self, "garbage", 7, &l, 0, &k, err, sizeof err), KF_ERR_INVALID);
    CHECK(k == NULL);
    CHECK_CONTAINS(err, "not a shared object");
    /* an ELF header followed by junk: dlopen fails cleanly */
    char junk[4096];
    memset(junk, 0x41, sizeof junk);
    memcpy(junk, "\x7f" "ELF", 4);
    CHECK_EQ_INT(cc.load(cc.self, junk, sizeof junk, &l, 0, &k, err, sizeof err), KF_ERR_KERNEL);
    CHECK_CONTAINS(err, "dlopen");
}

static void test_missing_compiler(void)
{
    kf_compiler_i c;
    CHECK_EQ_INT(kf_compiler_host_create(&c, "/nonexistent/kf-cc"), KF_OK);
    char out[512];
    CHECK(c.toolchain(c.self, out, sizeof out) != KF_OK);
    CHECK_CONTAINS(out, "kf-cc");
    CHECK(c.arch(c.self, 0, out, sizeof out) != KF_OK);
    kf_launch l = launch_of("{\"entry\":\"kf_kernel\",\"args\":[\"const float*\",\"float*\"]}");
    void *blob = NULL;
    size_t len = 0;
    char *log = NULL;
    kf_status st = c.compile(c.self, affine_src, &l, NULL, &blob, &len, &log);
    CHECK(st != KF_OK);
    CHECK(blob == NULL);
    CHECK_CONTAINS(log, "cannot run");
    free(log);
    c.destroy(c.self);
    CHECK(dir_is_empty(tmpdir));

    /* the command is split on blanks, never handed to a shell */
    CHECK_EQ_INT(kf_compiler_host_create(&c, "cc; touch kf-pwned"), KF_OK);
    log = NULL;
    st = c.compile(c.self, affine_src, &l, NULL, &blob, &len, &log);
    CHECK(st != KF_OK);
    free(log);
    free(blob);
    CHECK(access("kf-pwned", F_OK) != 0);
    c.destroy(c.self);
    CHECK_EQ_INT(kf_compiler_host_create(&c, "   "), KF_ERR_INVALID);
}

/* A compiler that hangs is killed (with its children) after KFORGE_CC_TIMEOUT seconds. */
static void test_timeout(void)
{
    char script[512];
    snprintf(script, sizeof script, "%s/../kf-hanging-cc-%d.sh", tmpdir, (int)getpid());
    FILE *f = fopen(script, "w");
    if (!CHECK(f)) return;
    fprintf(f, "#!/bin/sh\n"
               "if [ \"$1\" = --version ]; then echo 'hanging cc 1.0'; exit 0; fi\n"
               "echo 'about to hang' >&2\n"
               "sleep 30\n");
    fclose(f);
    chmod(script, 0700);
    setenv("KFORGE_CC_TIMEOUT", "0.5", 1);
    kf_compiler_i c;
    kf_status st = kf_compiler_host_create(&c, script);
    unsetenv("KFORGE_CC_TIMEOUT");
    if (CHECK_EQ_INT(st, KF_OK)) {
        char tc[512];
        CHECK_EQ_INT(c.toolchain(c.self, tc, sizeof tc), KF_ERR_NOT_FOUND); /* -Q hangs */
        CHECK_CONTAINS(tc, "timed out");
        kf_launch l = launch_of("{\"entry\":\"kf_kernel\",\"args\":[\"float*\"]}");
        void *blob = NULL;
        size_t len = 0;
        char *log = NULL;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        st = c.compile(c.self, "void kf_kernel(float* y) { y[0] = 1; }\n", &l, NULL, &blob, &len,
                       &log);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
        CHECK(st != KF_OK);
        CHECK(blob == NULL);
        CHECK_CONTAINS(log, "timed out after 0.5 s");
        CHECK_CONTAINS(log, "about to hang"); /* output before the kill is kept */
        CHECK(secs < 5.0);
        free(log);
        c.destroy(c.self);
    }
    unlink(script);
    CHECK(dir_is_empty(tmpdir));
}

typedef struct thread_arg {
    int id;
    int ok;
} thread_arg;

static void *thread_main(void *p)
{
    thread_arg *a = p;
    char json[128], src[256];
    snprintf(json, sizeof json, "{\"entry\":\"k%d\",\"args\":[\"const int32_t*\",\"int32_t*\"]}",
             a->id);
    snprintf(src, sizeof src,
             "#include <stdint.h>\nvoid k%d(const int32_t* x, int32_t* y) { y[0] = x[0] + %d; }\n",
             a->id, a->id);
    kf_launch l;
    char err[256];
    if (kf_launch_parse(json, &l, err, sizeof err) != KF_OK) return NULL;
    void *blob = NULL;
    size_t len = 0;
    char *log = NULL;
    if (cc.compile(cc.self, src, &l, NULL, &blob, &len, &log) == KF_OK) {
        kf_compiled *k = NULL;
        if (cc.load(cc.self, blob, len, &l, 0, &k, err, sizeof err) == KF_OK) {
            int32_t x = 100, y = 0;
            void *ptrs[2] = {&x, &y};
            a->ok = cc.launch(cc.self, k, ptrs, 2, NULL) == 0 && y == 100 + a->id;
            cc.unload(cc.self, k);
        }
    }
    free(log);
    free(blob);
    return NULL;
}

static void test_threads(void)
{
    pthread_t t[3];
    thread_arg a[3];
    for (int i = 0; i < 3; i++) {
        a[i] = (thread_arg){.id = i + 1, .ok = 0};
        pthread_create(&t[i], NULL, thread_main, &a[i]);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        CHECK(a[i].ok);
    }
}

int main(void)
{
    /* a private TMPDIR, so that leftovers are visible */
    snprintf(tmpdir, sizeof tmpdir, "/tmp/kf-test-host-XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    setenv("TMPDIR", tmpdir, 1);
    if (!CHECK_EQ_INT(kf_compiler_host_create(&cc, NULL), KF_OK))
        return check_done("test_compiler_host");

    test_identity();
    test_compile_launch();
    test_reload_different();
    test_types();
    test_openmp();
    test_compile_errors();
    test_bad_blobs();
    test_missing_compiler();
    test_timeout();
    test_threads();

    cc.destroy(cc.self);
    CHECK(dir_is_empty(tmpdir));
    rmdir(tmpdir);
    return check_done("test_compiler_host");
}
