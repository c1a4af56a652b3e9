/* Compiling CUDA renders where NVRTC is missing: every source in one translation unit for
 * `nvcc --ptx` (a compile costs seconds), each in its own namespace with its kf_kernel renamed
 * and its macros #undef'ed after it, the headers its prologue includes once at the top (as
 * test_templates_pointwise.c's nvcc_all does). Used by test_templates_family.c and
 * test_templates_pointwise_vec.c. */
#ifndef KF_TESTS_NVCC_PTX_H
#define KF_TESTS_NVCC_PTX_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/c/check.h"

/* 1 when nvcc compiled all n sources (labels[i] names source i) with an empty log; -1 (and a
 * SKIP line) without nvcc. */
static inline int nvcc_ptx_all(const char *const *srcs, const char *const *labels, int n)
{
    if (system("nvcc --version >/dev/null 2>&1") != 0) {
        printf("SKIP CUDA compiles: neither NVRTC nor nvcc here\n");
        return -1;
    }
    char path[] = "/tmp/kf_ptx_XXXXXX";
    int fd = mkstemp(path);
    if (!CHECK(fd >= 0)) return 0;
    FILE *f = fdopen(fd, "w");
    fprintf(f, "#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n");
    for (int i = 0; i < n; i++) {
        const char *src = srcs[i];
        if (!src) continue;
        fprintf(f, "\n/* ---- %s ---- */\n#define kf_kernel kf_kernel_%d\nnamespace kf_u%d {\n",
                labels[i], i, i);
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
    fclose(f);
    char cmd[512], out[8192];
    snprintf(cmd, sizeof cmd, "nvcc -std=c++17 -arch=sm_90 --ptx -x cu -o /dev/null %s 2>&1",
             path);
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

#endif
