/* Compiling CUDA renders where NVRTC is missing: every source in one translation unit for
 * `nvcc --ptx` (a compile costs seconds), each in its own namespace with its kf_kernel renamed
 * and its macros #undef'ed after it, the headers its prologue includes once at the top. Used by
 * test_templates_family.c, test_templates_pointwise.c, test_templates_pointwise_vec.c and
 * test_templates_chain.c (which appends as it renders). */
#ifndef KF_TESTS_NVCC_PTX_H
#define KF_TESTS_NVCC_PTX_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/c/check.h"

#define NVCC_PTX "nvcc -std=c++17 -arch=sm_90 --ptx -x cu" /* then -o OUT FILE */

/* The translation unit, made from the mkstemp template path (rewritten in place); NULL with a
 * SKIP line without nvcc, NULL and a failed check when the file cannot be made. */
static inline FILE *nvcc_ptx_open(char *path)
{
    if (system("nvcc --version >/dev/null 2>&1") != 0) {
        printf("SKIP CUDA compiles: neither NVRTC nor nvcc here\n");
        return NULL;
    }
    int fd = mkstemp(path);
    if (!CHECK(fd >= 0)) return NULL;
    FILE *f = fdopen(fd, "w");
    if (!CHECK(f != NULL)) {
        close(fd);
        return NULL;
    }
    fprintf(f, "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n");
    return f;
}

/* src as unit `index` of f: in namespace kf_u<index>, kf_kernel named kf_kernel_<index>, its
 * own #includes dropped (the top has them), its macros undefined after it. */
static inline void nvcc_ptx_append(FILE *f, const char *label, int index, const char *src)
{
    fprintf(f, "\n/* ---- %s ---- */\n#define kf_kernel kf_kernel_%d\nnamespace kf_u%d {\n", label,
            index, index);
    for (const char *p = src; *p;) {
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        if (strncmp(p, "#include", 8)) fprintf(f, "%.*s\n", (int)len, p);
        p += len + (eol != NULL);
    }
    fprintf(f, "}\n#undef kf_kernel\n");
    for (const char *p = strstr(src, "#define "); p; p = strstr(p + 1, "#define ")) {
        size_t len = strcspn(p + 8, " (\n");
        fprintf(f, "#undef %.*s\n", (int)len, p + 8);
    }
}

/* Closes f, compiles path for sm_90 (n renders, for the summary line); 1 when nvcc succeeded
 * with an empty log (the file is removed then; kept with the log printed otherwise). */
static inline int nvcc_ptx_compile(FILE *f, const char *path, int n)
{
    fclose(f);
    char cmd[512], out[8192];
    snprintf(cmd, sizeof cmd, NVCC_PTX " -o /dev/null %s 2>&1", path);
    FILE *p = popen(cmd, "r");
    size_t got = p ? fread(out, 1, sizeof out - 1, p) : 0;
    out[got] = 0;
    int rc = p ? pclose(p) : -1;
    int ok = CHECK_EQ_INT(rc, 0) && CHECK(got == 0);
    if (!ok) printf("     nvcc on %s:\n%s\n", path, out);
    else unlink(path);
    printf("compiled %d CUDA renders with nvcc --ptx for sm_90\n", n);
    return ok;
}

/* 1 when nvcc compiled all n sources (labels[i] names source i; NULL ones are passed over)
 * with an empty log; -1 when it could not run (without nvcc: a SKIP line). */
static inline int nvcc_ptx_all(const char *const *srcs, const char *const *labels, int n)
{
    char path[] = "/tmp/kf_ptx_XXXXXX";
    FILE *f = nvcc_ptx_open(path);
    if (!f) return -1;
    for (int i = 0; i < n; i++)
        if (srcs[i]) nvcc_ptx_append(f, labels[i], i, srcs[i]);
    return nvcc_ptx_compile(f, path, n);
}

/* The PTX of one render compiled alone for sm_90 (malloc'd; free it), so that a test can count
 * the accesses the compiler made; NULL with a SKIP line without nvcc, NULL and a failed check
 * when it did not compile. */
static inline char *nvcc_ptx_text(const char *label, const char *src)
{
    char path[] = "/tmp/kf_ptx_XXXXXX", cmd[600], ptx[600];
    FILE *f = nvcc_ptx_open(path);
    if (!f) return NULL;
    nvcc_ptx_append(f, label, 0, src);
    fclose(f);
    snprintf(ptx, sizeof ptx, "%s.ptx", path);
    snprintf(cmd, sizeof cmd, NVCC_PTX " -o %s %s 2>&1", ptx, path);
    int rc = system(cmd);
    unlink(path);
    char *text = NULL;
    FILE *p = CHECK_EQ_INT(rc, 0) ? fopen(ptx, "r") : NULL;
    if (p) {
        fseek(p, 0, SEEK_END);
        long n = ftell(p);
        rewind(p);
        text = calloc(1, (size_t)n + 1);
        if (fread(text, 1, (size_t)n, p) != (size_t)n) CHECK(0);
        fclose(p);
    }
    unlink(ptx);
    return text;
}

/* occurrences of needle in text */
static inline int count_of(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

#endif
