/* The nvrtc compile backend. Works on any machine: without NVRTC, creating the backend must fail
 * cleanly; with NVRTC but no driver (this CI), compiling to a named arch must work, including the
 * CUDA fixtures; with a GPU, kernels are also loaded and launched.
 *
 * NVRTC is found like the backend does (KFORGE_NVRTC, the loader path, /usr/local/cuda), else in
 * the nvidia-cuda-nvrtc pip wheel of the python3 on PATH. CUDA headers (for the fixtures'
 * cuda_bf16.h) come from KFORGE_CUDA_INCLUDE or /usr/local/cuda/include, if NVRTC lacks them.
 *
 * No cJSON here (launch records are built by hand), so this file also builds on a GPU machine
 * with just: cc -D_GNU_SOURCE -Iinclude -I. tests/c/test_compiler_nvrtc.c compile/compiler_nvrtc.c
 * common/cuda_driver.c common/log.c common/status.c -ldl -lpthread */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/c/check.h"
#include "tests/c/nvrtc_find.h"
#include "compile/compiler.h"

static kf_launch make_launch(const char *entry, unsigned gx, unsigned bx, unsigned smem, int n,
                             const char *const *types)
{
    kf_launch l;
    memset(&l, 0, sizeof l);
    snprintf(l.entry, sizeof l.entry, "%s", entry);
    l.grid[0] = gx, l.grid[1] = l.grid[2] = 1;
    l.block[0] = bx, l.block[1] = l.block[2] = 1;
    l.smem = smem;
    l.n_args = n;
    for (int i = 0; i < n; i++) snprintf(l.arg_types[i], sizeof l.arg_types[i], "%s", types[i]);
    return l;
}

/* A malloc'ed copy of a file, NULL if unreadable. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) == (size_t)n) {
        s[n] = 0;
    } else {
        free(s);
        s = NULL;
    }
    fclose(f);
    return s;
}

/* tests/fixtures/cuda/<name>, found from this file's own path */
static char *fixture(const char *name, const char *prefix)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", __FILE__);
    char *cut = strstr(path, "tests/c/test_compiler_nvrtc.c");
    if (!cut) return NULL;
    snprintf(cut, sizeof path - (size_t)(cut - path), "tests/fixtures/cuda/%s", name);
    char *body = slurp(path);
    if (!body) return NULL;
    size_t n = strlen(prefix) + strlen(body) + 1;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s%s", prefix, body);
    free(body);
    return s;
}

static void test_create_failures(void)
{
    kf_compiler_i c;
    char err[512];
    memset(&c, 0x5a, sizeof c);
    CHECK_EQ_INT(kf_compiler_nvrtc_create(&c, "/nonexistent/libnvrtc.so.99", NULL, err, sizeof err),
                 KF_ERR_CUDA);
    CHECK_CONTAINS(err, "NVRTC not available");
    CHECK_CONTAINS(err, "/nonexistent/libnvrtc.so.99");
    CHECK(c.self == NULL && c.compile == NULL);

    /* a library that is not NVRTC */
    CHECK_EQ_INT(kf_compiler_nvrtc_create(&c, "libc.so.6", NULL, err, sizeof err), KF_ERR_CUDA);
    CHECK_CONTAINS(err, "lacks");

    const char *old = getenv("KFORGE_NVRTC");
    char *saved = old ? strdup(old) : NULL;
    setenv("KFORGE_NVRTC", "/nonexistent/from-env.so", 1);
    CHECK_EQ_INT(kf_compiler_nvrtc_create(&c, NULL, NULL, err, sizeof err), KF_ERR_CUDA);
    CHECK_CONTAINS(err, "KFORGE_NVRTC");
    if (saved) {
        setenv("KFORGE_NVRTC", saved, 1);
        free(saved);
    } else {
        unsetenv("KFORGE_NVRTC");
    }
    CHECK_EQ_INT(kf_compiler_nvrtc_create(NULL, NULL, NULL, err, sizeof err), KF_ERR_INVALID);
}

/* ---- with a GPU: allocate, launch, compare (the driver entry points the backend lacks) ---- */

typedef struct gpu {
    void *lib;
    int (*ctx_retain)(void **, int);
    int (*ctx_push)(void *);
    int (*ctx_pop)(void **);
    int (*alloc)(unsigned long long *, size_t);
    int (*free_)(unsigned long long);
    int (*htod)(unsigned long long, const void *, size_t);
    int (*dtoh)(void *, unsigned long long, size_t);
    int (*sync)(void);
} gpu;

static int gpu_open(gpu *g)
{
    memset(g, 0, sizeof *g);
    g->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!g->lib) return 0;
    *(void **)&g->ctx_retain = dlsym(g->lib, "cuDevicePrimaryCtxRetain");
    *(void **)&g->ctx_push = dlsym(g->lib, "cuCtxPushCurrent_v2");
    *(void **)&g->ctx_pop = dlsym(g->lib, "cuCtxPopCurrent_v2");
    *(void **)&g->alloc = dlsym(g->lib, "cuMemAlloc_v2");
    *(void **)&g->free_ = dlsym(g->lib, "cuMemFree_v2");
    *(void **)&g->htod = dlsym(g->lib, "cuMemcpyHtoD_v2");
    *(void **)&g->dtoh = dlsym(g->lib, "cuMemcpyDtoH_v2");
    *(void **)&g->sync = dlsym(g->lib, "cuCtxSynchronize");
    return g->ctx_retain && g->ctx_push && g->ctx_pop && g->alloc && g->free_ && g->htod &&
           g->dtoh && g->sync;
}

static void test_gpu(kf_compiler_i *c, const char *arch)
{
    gpu g;
    if (!CHECK(gpu_open(&g))) return;
    void *ctx = NULL, *dummy;
    if (!CHECK_EQ_INT(g.ctx_retain(&ctx, 0), 0)) return;
    CHECK_EQ_INT(g.ctx_push(ctx), 0);

    /* y = 2x + 1, plus a dynamic shared memory buffer above 48 KiB to exercise the opt-in */
    static const char src[] =
        "extern \"C\" __global__ void affine(const float* x, float* y, int n_unused) {}\n"
        "extern \"C\" __global__ void kf_kernel(const float* x, float* y) {\n"
        "  extern __shared__ float buf[];\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  buf[threadIdx.x + 16000] = x[i];\n"
        "  __syncthreads();\n"
        "  y[i] = 2.0f * buf[threadIdx.x + 16000] + 1.0f;\n"
        "}\n";
    static const char *const types[] = {"const float*", "float*"};
    enum { N = 4096 };
    kf_launch l = make_launch("kf_kernel", N / 256, 256, 65536, 2, types);
    void *blob = NULL;
    size_t len = 0;
    char *log = NULL, err[512];
    if (!CHECK_EQ_INT(c->compile(c->self, src, &l, arch, &blob, &len, &log), KF_OK))
        printf("     log: %s\n", log ? log : "");
    free(log);
    kf_compiled *k = NULL;
    if (blob && CHECK_EQ_INT(c->load(c->self, blob, len, &l, 0, &k, err, sizeof err), KF_OK)) {
        static float hx[N], hy[N];
        for (int i = 0; i < N; i++) hx[i] = (float)i - 100.0f;
        unsigned long long dx = 0, dy = 0;
        CHECK_EQ_INT(g.alloc(&dx, sizeof hx), 0);
        CHECK_EQ_INT(g.alloc(&dy, sizeof hy), 0);
        CHECK_EQ_INT(g.htod(dx, hx, sizeof hx), 0);
        void *ptrs[2] = {(void *)(uintptr_t)dx, (void *)(uintptr_t)dy};
        CHECK_EQ_INT(c->launch(c->self, k, ptrs, 2, NULL), 0);
        CHECK(c->launch(c->self, k, ptrs, 1, NULL) != 0);
        CHECK_EQ_INT(g.sync(), 0);
        CHECK_EQ_INT(g.dtoh(hy, dy, sizeof hy), 0);
        int bad = 0;
        for (int i = 0; i < N; i++) bad += hy[i] != 2.0f * hx[i] + 1.0f;
        CHECK_EQ_INT(bad, 0);
        c->unload(c->self, k);
        g.free_(dx);
        g.free_(dy);
    } else {
        printf("     err: %s\n", err);
    }

    /* a missing entry, too much shared memory, a bad device */
    kf_launch l2 = l;
    snprintf(l2.entry, sizeof l2.entry, "missing");
    CHECK_EQ_INT(c->load(c->self, blob, len, &l2, 0, &k, err, sizeof err), KF_ERR_KERNEL);
    CHECK_CONTAINS(err, "missing");
    l2 = l;
    l2.smem = 1 << 20;
    CHECK(c->load(c->self, blob, len, &l2, 0, &k, err, sizeof err) != KF_OK);
    CHECK_EQ_INT(c->load(c->self, blob, len, &l, 4096, &k, err, sizeof err), KF_ERR_INVALID);
    CHECK_EQ_INT(c->load(c->self, "\x7f" "ELFjunk", 8, &l, 0, &k, err, sizeof err),
                 KF_ERR_INVALID);
    free(blob);
    g.ctx_pop(&dummy);
}

static void test_with_nvrtc(kf_compiler_i *c)
{
    char tc[512], arch[256], err[512];
    CHECK_STR(c->name, "nvrtc");
    CHECK_EQ_INT(c->toolchain(c->self, tc, sizeof tc), KF_OK);
    CHECK(!strncmp(tc, "nvrtc ", 6));
    CHECK_CONTAINS(tc, "; driver ");
    CHECK_CONTAINS(tc, "flags: -std=c++17 -default-device");
    char tc2[512];
    CHECK_EQ_INT(c->toolchain(c->self, tc2, sizeof tc2), KF_OK);
    CHECK_STR(tc, tc2);
    printf("toolchain: %s\n", tc);

    kf_status ast = c->arch(c->self, 0, arch, sizeof arch);
    int have_gpu = ast == KF_OK;
    if (have_gpu) {
        CHECK(!strncmp(arch, "sm_", 3));
        printf("arch: %s\n", arch);
    } else {
        CHECK_EQ_INT(ast, KF_ERR_CUDA);
        CHECK(strlen(arch) > 10); /* the reason */
        printf("no GPU: %s\n", arch);
        snprintf(arch, sizeof arch, "sm_90");
    }

    /* a trivial kernel to a cubin */
    static const char *const types[] = {"const float*", "float*"};
    kf_launch l = make_launch("kf_kernel", 1, 32, 0, 2, types);
    static const char ok_src[] =
        "extern \"C\" __global__ void kf_kernel(const float* x, float* y) {\n"
        "  y[threadIdx.x] = expf(x[threadIdx.x]);\n}\n";
    void *blob = NULL;
    size_t len = 0;
    char *log = NULL;
    if (CHECK_EQ_INT(c->compile(c->self, ok_src, &l, "sm_90", &blob, &len, &log), KF_OK)) {
        CHECK(len > 64 && !memcmp(blob, "\x7f" "ELF", 4));
        CHECK(log != NULL);
    } else {
        printf("     log: %s\n", log ? log : "");
    }
    free(log);

    /* without a driver, loading says so */
    if (!have_gpu && blob) {
        kf_compiled *k = (kf_compiled *)1;
        CHECK_EQ_INT(c->load(c->self, blob, len, &l, 0, &k, err, sizeof err), KF_ERR_CUDA);
        CHECK(k == NULL);
        CHECK_CONTAINS(err, "no CUDA driver");
    }
    free(blob);

    /* compile errors come back with NVRTC's log */
    blob = (void *)1;
    log = NULL;
    kf_status st = c->compile(c->self,
                              "extern \"C\" __global__ void kf_kernel(const float* x, float* y) {\n"
                              "  y[0] = x[0] + undeclared_thing;\n}\n",
                              &l, "sm_90", &blob, &len, &log);
    CHECK_EQ_INT(st, KF_ERR_KERNEL);
    CHECK(blob == NULL);
    CHECK_CONTAINS(log, "nvrtc: compile failed");
    CHECK_CONTAINS(log, "undeclared_thing");
    free(log);

    /* arch strings are checked before they become an option */
    static const char *const bad_arch[] = {"compute_90", "sm_9", "sm_9000", "sm_90 -G",
                                           "sm_90;rm", "", "SM_90", "sm_90ab"};
    for (size_t i = 0; i < sizeof bad_arch / sizeof bad_arch[0]; i++) {
        log = NULL;
        blob = NULL;
        CHECK_EQ_INT(c->compile(c->self, ok_src, &l, bad_arch[i], &blob, &len, &log),
                     KF_ERR_INVALID);
        CHECK_CONTAINS(log, "arch");
        free(log);
    }
    /* no arch: device 0's, which needs a driver */
    log = NULL;
    st = c->compile(c->self, ok_src, &l, NULL, &blob, &len, &log);
    if (have_gpu) {
        CHECK_EQ_INT(st, KF_OK);
        free(blob);
    } else {
        CHECK_EQ_INT(st, KF_ERR_CUDA);
        CHECK_CONTAINS(log, "no arch given");
    }
    free(log);

    /* the fixtures, as the forge would compile them */
    static const char *const sm_types[] = {"const __nv_bfloat16*", "__nv_bfloat16*"};
    static const char *const gn_types[] = {"const __nv_bfloat16*", "const __nv_bfloat16*",
                                           "const __nv_bfloat16*", "__nv_bfloat16*",
                                           "__nv_bfloat16*", "__nv_bfloat16*"};
    struct {
        const char *file, *prefix;
        kf_launch l;
    } fx[] = {
        {"softmax_bf16_rows.cu", "#define KF_ROWS 4096\n#define KF_COLS 151936\n",
         make_launch("kf_kernel", 4096, 1024, 229376, 2, sm_types)},
        {"softmax_bf16_rows.cu", "#define KF_ROWS 3\n#define KF_COLS 1001\n",
         make_launch("kf_kernel", 3, 1024, 0, 2, sm_types)},
        {"group_norm_bf16_nchw.cu",
         "#define KF_N 4\n#define KF_C 512\n#define KF_HW 16384\n#define KF_G 32\n"
         "#define KF_EPS 1e-05\n",
         make_launch("kf_kernel", 1024, 512, 65536, 6, gn_types)},
    };
    if (!nvrtc_find_include()) {
        printf("SKIP the fixtures: they include <cuda_bf16.h> and no CUDA headers were found "
               "(set KFORGE_CUDA_INCLUDE)\n");
    }
    for (size_t i = 0; nvrtc_find_include() && i < sizeof fx / sizeof fx[0]; i++) {
        char *src = fixture(fx[i].file, fx[i].prefix);
        if (!CHECK(src)) continue;
        blob = NULL;
        log = NULL;
        st = c->compile(c->self, src, &fx[i].l, "sm_90", &blob, &len, &log);
        if (CHECK_EQ_INT(st, KF_OK)) {
            CHECK(len > 64 && !memcmp(blob, "\x7f" "ELF", 4));
            printf("fixture %s compiled for sm_90: %zu-byte cubin\n", fx[i].file, len);
            if (log && *log) printf("     log: %s\n", log);
        } else {
            printf("     %s log: %s\n", fx[i].file, log ? log : "");
        }
        free(blob);
        free(log);
        free(src);
    }

    if (have_gpu) test_gpu(c, arch);
}

int main(void)
{
    test_create_failures();

    char err[512];
    kf_compiler_i c;
    const char *inc = nvrtc_find_include();
    kf_status st = kf_compiler_nvrtc_create(&c, NULL, inc, err, sizeof err);
    if (st != KF_OK) {
        CHECK_EQ_INT(st, KF_ERR_CUDA);
        CHECK_CONTAINS(err, "NVRTC");
        printf("default search: %s\n", err);
        char path[4096];
        if (nvrtc_find_wheel(path, sizeof path)) {
            printf("trying the pip wheel's %s\n", path);
            st = kf_compiler_nvrtc_create(&c, path, inc, err, sizeof err);
            if (!CHECK_EQ_INT(st, KF_OK)) printf("     %s\n", err);
        }
    }
    if (st == KF_OK) {
        test_with_nvrtc(&c);
        c.destroy(c.self);
    } else {
        printf("SKIP the NVRTC compile tests: no libnvrtc here (pip install nvidia-cuda-nvrtc, or "
               "set KFORGE_NVRTC)\n");
    }
    return check_done("test_compiler_nvrtc");
}
