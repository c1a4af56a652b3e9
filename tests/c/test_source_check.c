/* The source check against code that runs at dlopen: names built by macros, attributes and
 * sections, line markers, macros that reach a system header, pragmas; on the raw text, on
 * preprocessor output, and through the host compiler (which checks what it compiles). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/c/check.h"
#include "compile/compiler.h"
#include "compile/source_check.h"

/* The bypass of the hardening issue: `system` assembled by a macro, called from a function
 * whose pointer sits in .init_array, so it would run when the kernel is loaded. */
static const char bypass_src[] =
    "#include <stdint.h>\n"
    "#define CAT(a, b) a##b\n"
    "#define SYS CAT(sys, tem)\n"
    "int SYS(const char *);\n"
    "static void kf_boot(void) { SYS(\"touch kf-pwned-by-init-array\"); }\n"
    "__attribute__((section(\".init_array\"))) static void (*kf_boot_p)(void) = kf_boot;\n"
    "void kf_kernel(const float *x, float *y) { y[0] = x[0]; }\n";

static void expect(const char *src, const char *backend, const char *why)
{
    char err[512];
    int ok = kf_source_check_backend(src, backend, err, sizeof err);
    if (!why) {
        if (!CHECK(ok)) printf("     refused: %s\n     %s\n", src, err);
        return;
    }
    if (!CHECK(!ok)) printf("     passed: %s\n", src);
    else if (!CHECK_CONTAINS(err, why)) printf("     source: %s\n", src);
}

static void test_raw(void)
{
    expect(bypass_src, "host", "uses an attribute");
    expect(bypass_src, NULL, "uses an attribute");
    static const struct {
        const char *src, *why; /* host; why NULL: passes */
    } cases[] = {
        /* attributes in every spelling, sections, constructors */
        {"__attribute((constructor)) static void f(void) {}", "uses an attribute"},
        {"[[gnu::used]] static int x;", "uses an attribute"},
        {"[ [gnu::used] ] static int x;", "uses an attribute"},
        {"<:<:gnu::used:>:> static int x;", "uses an attribute"},
        {"void f(float *y, const int *i) { y[i[0]] = 1; }", NULL},
        {"static void (*p)(void) __asm__(\"x\");", "inline assembly"},
        /* declaring libc symbols oneself */
        {"extern char write[];\nvoid f(void) {}", "declares an external symbol"},
        {"long (write)(int, const void *, unsigned long);", "does file I/O ('write'"},
        {"void f(void) { (system)(\"id\"); }", "loads code or starts processes ('system'"},
        {"void f(void) { __builtin_execl(\"/bin/sh\", 0); }", "loads code or starts processes"},
        {"void f(void) { __builtin_exit(0); }", "makes system calls"},
        {"void *f(void) { return __builtin_return_address(0); }", "stack frame or return path"},
        {"int system_ok(int system) { return (system) + 1; }", NULL},
        /* directives: no #line or line markers (they could fake the preprocessor's own) */
        {"#line 1 \"/usr/include/math.h\"\nvoid f(void) {}", "only #include #define"},
        {"# 1 \"/usr/include/math.h\" 1 3 4\nvoid f(void) {}", "only #include #define"},
        {"#ident \"x\"\n", "only #include #define"},
        {"#assert machine(x86)\n", "only #include #define"},
        {"#\n#if 1\n#elif 0\n#else\n#endif\n#error no\n#warning w\n", NULL},
        /* the kernel's own macros never reach a system header */
        {"#define __leaf__ x\n#include <math.h>\n", "before its last #include"},
        {"#define sqrt system\n#include <math.h>\n", "before its last #include"},
        {"#undef __STDC__\n#include <math.h>\n", "before its last #include"},
        {"#pragma redefine_extname sqrt system\n#include <math.h>\n", "before its last #include"},
        {"#include <math.h>\n#define KF_ROWS 4\n#include <string.h>\n#define X 1\n", NULL},
        {"#define KF_ROWS 4\n#include <math.h>\n#undef KF_ROWS\n", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect(cases[i].src, "host", cases[i].why);
    /* device code keeps its own rules: PTX, extern "C", attributes, #undef before includes */
    expect("#define KF_VEC 4\n#undef KF_VEC\n#include <cuda_fp16.h>\n"
           "extern \"C\" __global__ void __launch_bounds__(256) kf_kernel(float *y)\n"
           "{ float v; asm volatile(\"ld.shared.v4.f32 {%0}, [%1];\" : \"=f\"(v)); y[0] = v; }\n",
           "nvrtc", NULL);
    expect("#line 3\n__global__ void k() {}\n", "nvrtc", "only #include #define");
}

/* Preprocessor output: only the main file's lines are checked, with their own line numbers. */
static void test_preprocessed(void)
{
    char err[512];
    static const char hdr[] = "# 0 \"/tmp/d/kernel.c\"\n"
                              "# 0 \"<built-in>\"\n"
                              "# 1 \"/usr/include/string.h\" 1 3 4\n"
                              "extern int system (const char *) __attribute__ ((__nothrow__));\n"
                              "# 3 \"/tmp/d/kernel.c\" 2\n";
    char buf[2048];
    snprintf(buf, sizeof buf, "%s\nvoid kf_kernel(float *y) { y[0] = 1; }\n"
             "#pragma omp parallel for\n#pragma GCC unroll 4\n#pragma GCC ivdep\n", hdr);
    if (!CHECK(kf_source_check_preprocessed(buf, err, sizeof err))) printf("     %s\n", err);

    snprintf(buf, sizeof buf, "%s\n\nint system(const char *);\n", hdr);
    CHECK(!kf_source_check_preprocessed(buf, err, sizeof err));
    CHECK_CONTAINS(err, "after preprocessing");
    CHECK_CONTAINS(err, "('system', line 5)");

    snprintf(buf, sizeof buf, "%s__attribute__((section(\".init_array\"))) void (*p)(void);\n", hdr);
    CHECK(!kf_source_check_preprocessed(buf, err, sizeof err));
    CHECK_CONTAINS(err, "uses an attribute");

    snprintf(buf, sizeof buf, "%s#pragma redefine_extname sqrt system\n", hdr);
    CHECK(!kf_source_check_preprocessed(buf, err, sizeof err));
    CHECK_CONTAINS(err, "only #pragma omp");

    /* a system macro's expansion inside the kernel's lines is the kernel's */
    snprintf(buf, sizeof buf, "%s# 3 \"/tmp/d/kernel.c\" 3 4\n__asm__ (\"x\")\n", hdr);
    CHECK(!kf_source_check_preprocessed(buf, err, sizeof err));
    CHECK_CONTAINS(err, "inline assembly");

    CHECK(!kf_source_check_preprocessed("int system(const char *);\n", err, sizeof err));
    CHECK_CONTAINS(err, "no line markers");
    CHECK(!kf_source_check_preprocessed(NULL, err, sizeof err));
}

/* The host compiler checks before and after its preprocessor, and compiles what it checked. */
static void test_compiler(void)
{
    kf_compiler_i cc;
    if (!CHECK_EQ_INT(kf_compiler_host_create(&cc, NULL), KF_OK)) return;
    kf_launch l;
    char err[256];
    if (!CHECK_EQ_INT(kf_launch_parse("{\"entry\":\"kf_kernel\",\"args\":[\"const float*\","
                                      "\"float*\"]}", &l, err, sizeof err), KF_OK)) {
        cc.destroy(cc.self);
        return;
    }
    static const struct {
        const char *src, *why;
    } cases[] = {
        {bypass_src, "uses an attribute"},
        /* no attribute in the text: the macros build it */
        {"#define CAT(a, b) a##b\n#define SYS CAT(sys, tem)\nint SYS(const char *);\n"
         "void kf_kernel(const float *x, float *y) { y[0] = x[0] + (float)SYS(\"id\"); }\n",
         "after preprocessing (macros expanded), the source loads code or starts processes "
         "('system', line 3)"},
        {"#define CAT(a, b) a##b\n#define AT CAT(__attri, bute__)\n"
         "static void boot(void) {}\nAT((CAT(sect, ion)(\".init_array\"))) static void (*p)(void) "
         "= boot;\nvoid kf_kernel(const float *x, float *y) { y[0] = x[0]; }\n",
         "uses an attribute"},
        {"#include <math.h>\n#define P(x) _Pragma(#x)\nP(redefine_extname sqrtf system)\n"
         "void kf_kernel(const float *x, float *y) { y[0] = sqrtf(x[0]); }\n",
         "only #pragma omp"},
        {"#define CAT(a, b) a##b\nvoid kf_kernel(const float *x, float *y) "
         "{ CAT(__builtin_ex, ecl)(\"/bin/sh\", 0); y[0] = x[0]; }\n",
         "loads code or starts processes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        void *blob = (void *)1;
        size_t len = 1;
        char *log = NULL;
        kf_status st = cc.compile(cc.self, cases[i].src, &l, NULL, &blob, &len, &log);
        CHECK_EQ_INT(st, KF_ERR_INVALID);
        CHECK(blob == NULL && len == 0);
        if (!CHECK_CONTAINS(log ? log : "", cases[i].why)) printf("     case %zu\n", i);
        free(log);
    }
    CHECK(access("kf-pwned-by-init-array", F_OK) != 0);

    /* what templates write still compiles and runs: omp pragmas, math macros, KF_ defines */
    static const char good[] =
        "#define KF_N 3\n#include <math.h>\n#include <stdint.h>\n#include <omp.h>\n"
        "#define P(x) _Pragma(#x)\n"
        "void kf_kernel(const float *x, float *y)\n{\n"
        "#pragma omp parallel for schedule(static)\n"
        "    for (int i = 0; i < KF_N; i++) y[i] = isnan(x[i]) ? NAN : fabsf(x[i]) + (float)(INT8_MAX - 127);\n"
        "    P(omp simd)\n    for (int i = 0; i < 1; i++) y[i] += 0.0f;\n}\n";
    void *blob = NULL;
    size_t len = 0;
    char *log = NULL;
    kf_status st = cc.compile(cc.self, good, &l, NULL, &blob, &len, &log);
    if (!CHECK_EQ_INT(st, KF_OK)) printf("     log: %s\n", log ? log : "");
    free(log);
    kf_compiled *k = NULL;
    if (st == KF_OK && CHECK_EQ_INT(cc.load(cc.self, blob, len, &l, 0, &k, err, sizeof err), KF_OK)) {
        float x[3] = {-1.0f, NAN, 2.5f}, y[3] = {0};
        void *ptrs[2] = {x, y};
        CHECK_EQ_INT(cc.launch(cc.self, k, ptrs, 2, NULL), 0);
        CHECK(y[0] == 1.0f && isnan(y[1]) && y[2] == 2.5f);
        cc.unload(cc.self, k);
    }
    free(blob);
    cc.destroy(cc.self);
}

int main(void)
{
    test_raw();
    test_preprocessed();
    test_compiler();
    return check_done("test_source_check");
}
