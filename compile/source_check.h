/* Static checks on a candidate's source (compile/source_check.c). They live in the core library:
 * the host compiler applies them before and after its preprocessor pass, the plugin before it
 * compiles a candidate or a bundle's host entry, the worker before every compile. */
#ifndef KF_COMPILE_SOURCE_CHECK_H
#define KF_COMPILE_SOURCE_CHECK_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The raw text (no calls back into ATen/libtorch, cuBLAS/cuDNN, no host synchronization, no
 * dlopen/system/fork/exec, only whitelisted #includes and directives, no system calls, no file
 * I/O, no code run at load time; host code also: no inline assembly, attributes, extern
 * declarations, and only `#define KF_...` before its last #include). 1 when it passes; 0 and a
 * reason in err when it fails. `backend` ("host" | "nvrtc") picks the rules; kf_source_check
 * guesses it (CUDA when the source declares a __global__ kernel). */
int kf_source_check_backend(const char *source, const char *backend, char *err, size_t errcap);
int kf_source_check(const char *source, char *err, size_t errcap);

/* Host code after the C preprocessor (cc -E output, with its line markers): the same host rules
 * on every line that comes from the main file (so names built by macros are seen), and only
 * `#pragma omp` / `#pragma GCC unroll|ivdep` there. Lines of the whitelisted system headers are
 * not checked: the raw check keeps the candidate's own macros from reaching them. */
int kf_source_check_preprocessed(const char *pp, char *err, size_t errcap);

#ifdef __cplusplus
}
#endif
#endif
