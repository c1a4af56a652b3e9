/* Static checks on a candidate's source (eval.h, kf_source_check).
 *
 * Two layers. First the rules of FORBIDDEN in kernel_forge/_verify.py, applied the same way to
 * the raw text (comments included): no calls back into ATen/libtorch, no cuBLAS/cuDNN/cuSPARSE/
 * cuFFT, no host synchronization, no dlopen/dlsym/system/popen/fork/exec. Then, on the text with
 * comments removed and string literals skipped: only whitelisted #includes, no inline assembly in
 * host code, no system calls or process control, no file I/O, no code run at load time, no
 * trigraphs (which could hide a directive from this scan).
 *
 * This is defence in depth, not a sandbox: the macro language can assemble any name. The real
 * guarantees are that candidates run only in the evaluator child, and are verified there. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forge/eval/eval.h"

static const char *const allowed_headers[] = {
    "math.h",     "stdint.h",    "stddef.h",    "string.h",  "float.h",
    "limits.h",   "omp.h",       "cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h",
    "cooperative_groups.h",
};

static const char *const host_sync[] = {
    "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
    "cuCtxSynchronize",      "cuStreamSynchronize",   "cuEventSynchronize",
};

/* loads code or starts processes, whatever follows (beyond _verify.py: the other spellings) */
static const char *const process_always[] = {
    "dlopen", "dlsym", "dlmopen", "dlvsym", "popen", "posix_spawn", "posix_spawnp", "fexecve",
    "execvpe", "vfork",
};

/* system calls and process control, when called */
static const char *const syscalls_called[] = {
    "ioctl",  "ptrace",  "prctl",   "mmap",     "munmap",       "mprotect", "mremap",
    "brk",    "sbrk",    "socket",  "connect",  "bind",         "listen",   "accept",
    "kill",   "raise",   "signal",  "sigaction", "setjmp",      "longjmp",  "exit",
    "_exit",  "_Exit",   "abort",   "atexit",   "at_quick_exit", "quick_exit", "pthread_create",
    "clone",  "unshare", "setuid",  "setgid",   "chdir",        "chroot",   "setenv",
    "putenv", "getenv",
};

/* file I/O: names that are I/O whatever follows, and names that are when called */
static const char *const file_always[] = {
    "FILE",   "fopen",  "fdopen", "freopen", "tmpfile", "tmpnam", "fileno", "opendir",
    "fprintf", "fwrite", "fread", "fputs",   "fputc",   "fgets",  "fgetc",  "fscanf",
    "fseek",  "ftell",  "rewind", "fflush",  "fclose",  "stdin",  "stderr",
};
static const char *const file_called[] = {
    "open",   "openat", "open64", "creat", "read",  "write",    "pread",     "pwrite",
    "close",  "unlink", "remove", "rename", "mkdir", "rmdir",   "truncate",  "ftruncate",
    "lseek",  "dup",    "dup2",   "pipe",
};

static int in_list(const char *w, size_t n, const char *const *list, size_t cnt)
{
    for (size_t i = 0; i < cnt; i++)
        if (strlen(list[i]) == n && !memcmp(w, list[i], n)) return 1;
    return 0;
}
#define IN(w, n, list) in_list(w, n, list, sizeof list / sizeof list[0])

static int word_char(char c)
{
    return c == '_' || isalnum((unsigned char)c);
}

static int line_of(const char *src, const char *at)
{
    int line = 1;
    for (const char *p = src; p < at; p++) line += *p == '\n';
    return line;
}

static int refuse(char *err, size_t errcap, const char *why, const char *what, size_t n,
                  int line)
{
    snprintf(err, errcap, "the source %s ('%.*s', line %d); kernels must be self-contained", why,
             (int)(n > 60 ? 60 : n), what, line);
    return 0;
}

/* "exec" + [lv] + optional p + optional e */
static int is_exec(const char *w, size_t n)
{
    if (n < 5 || memcmp(w, "exec", 4) || (w[4] != 'l' && w[4] != 'v')) return 0;
    size_t i = 5;
    if (i < n && w[i] == 'p') i++;
    if (i < n && w[i] == 'e') i++;
    return i == n;
}

static int starts_with_ci(const char *w, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    if (n < k) return 0;
    for (size_t i = 0; i < k; i++)
        if (tolower((unsigned char)w[i]) != prefix[i]) return 0;
    return 1;
}

/* After the word ending at p: optional blanks, then '('? */
static int called(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == '\v') p++;
    return *p == '(';
}

/* Layer 1: _verify.py's FORBIDDEN, on the raw text. */
static int check_forbidden(const char *src, char *err, size_t errcap)
{
    const char *hit;
    if ((hit = strstr(src, "ATen/")) || (hit = strstr(src, "<torch/")))
        return refuse(err, errcap, "calls back into ATen/libtorch", hit, hit[0] == 'A' ? 5 : 7,
                      line_of(src, hit));
    for (const char *p = src; *p;) {
        if (!word_char(*p)) {
            p++;
            continue;
        }
        const char *w = p;
        while (word_char(*p)) p++;
        size_t n = (size_t)(p - w);
        if ((n == 2 && !memcmp(w, "at", 2)) || (n == 5 && !memcmp(w, "torch", 5)) ||
            (n == 3 && !memcmp(w, "c10", 3))) {
            if (p[0] == ':' && p[1] == ':')
                return refuse(err, errcap, "calls back into ATen/libtorch", w, n + 2,
                              line_of(src, w));
        }
        if (starts_with_ci(w, n, "cublas") || starts_with_ci(w, n, "cudnn") ||
            starts_with_ci(w, n, "cusparse") || starts_with_ci(w, n, "cufft"))
            return refuse(err, errcap, "calls cuBLAS/cuDNN libraries", w, n, line_of(src, w));
        if (IN(w, n, host_sync))
            return refuse(err, errcap, "synchronizes the host", w, n, line_of(src, w));
        if ((n == 6 && !memcmp(w, "dlopen", 6)) || (n == 5 && !memcmp(w, "dlsym", 5)) ||
            (n == 5 && !memcmp(w, "popen", 5)) ||
            (((n == 6 && !memcmp(w, "system", 6)) || (n == 4 && !memcmp(w, "fork", 4)) ||
              is_exec(w, n)) &&
             called(p)))
            return refuse(err, errcap, "loads code or starts processes", w, n, line_of(src, w));
    }
    return 1;
}

/* The text with line splices removed and comments blanked (newlines kept); string and character
 * literals are kept as they are. */
static char *strip(const char *src)
{
    size_t n = strlen(src);
    char *spl = malloc(n + 1), *out = malloc(n + 1);
    if (!spl || !out) {
        free(spl);
        free(out);
        return NULL;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (src[i] == '\\' && src[i + 1] == '\n') {
            i++;
            continue;
        }
        if (src[i] == '\\' && src[i + 1] == '\r' && src[i + 2] == '\n') {
            i += 2;
            continue;
        }
        spl[k++] = src[i];
    }
    spl[k] = 0;
    size_t o = 0;
    for (size_t i = 0; i < k;) {
        char c = spl[i];
        if (c == '/' && spl[i + 1] == '/') {
            while (i < k && spl[i] != '\n') i++;
            out[o++] = ' ';
        } else if (c == '/' && spl[i + 1] == '*') {
            i += 2;
            while (i < k && !(spl[i] == '*' && spl[i + 1] == '/')) {
                if (spl[i] == '\n') out[o++] = '\n';
                i++;
            }
            i = i < k ? i + 2 : k;
            out[o++] = ' ';
        } else if (c == '"' || c == '\'') {
            out[o++] = spl[i++];
            while (i < k && spl[i] != c && spl[i] != '\n') {
                if (spl[i] == '\\' && i + 1 < k) out[o++] = spl[i++];
                out[o++] = spl[i++];
            }
            if (i < k && spl[i] == c) out[o++] = spl[i++];
        } else {
            out[o++] = spl[i++];
        }
    }
    out[o] = 0;
    free(spl);
    return out;
}

static int header_allowed(const char *h, size_t n)
{
    if (IN(h, n, allowed_headers)) return 1;
    static const char cg[] = "cooperative_groups/";
    size_t k = sizeof cg - 1;
    if (n <= k + 2 || memcmp(h, cg, k) || memcmp(h + n - 2, ".h", 2)) return 0;
    for (size_t i = k; i < n - 2; i++)
        if (!(islower((unsigned char)h[i]) || isdigit((unsigned char)h[i]) || h[i] == '_'))
            return 0;
    return 1;
}

/* Preprocessor lines: only `#include <whitelisted.h>`. */
static int check_directives(const char *txt, char *err, size_t errcap)
{
    int line = 1;
    for (const char *p = txt; *p; line++) {
        const char *eol = strchr(p, '\n');
        if (!eol) eol = p + strlen(p);
        const char *q = p;
        while (q < eol && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\f' || *q == '\v')) q++;
        int directive = q < eol && (*q == '#' || (q[0] == '%' && q + 1 < eol && q[1] == ':'));
        if (directive) {
            q += *q == '#' ? 1 : 2;
            while (q < eol && (*q == ' ' || *q == '\t')) q++;
            const char *name = q;
            while (q < eol && word_char(*q)) q++;
            size_t nl = (size_t)(q - name);
            if ((nl == 7 && !memcmp(name, "include", 7)) ||
                (nl == 12 && !memcmp(name, "include_next", 12)) ||
                (nl == 6 && !memcmp(name, "import", 6)) || (nl == 5 && !memcmp(name, "embed", 5))) {
                while (q < eol && (*q == ' ' || *q == '\t')) q++;
                const char *h = q + 1, *close = NULL;
                if (q < eol && *q == '<') close = memchr(h, '>', (size_t)(eol - h));
                const char *rest = close ? close + 1 : eol;
                while (rest < eol && (*rest == ' ' || *rest == '\t' || *rest == '\r')) rest++;
                if (nl != 7 || !close || rest != eol || !header_allowed(h, (size_t)(close - h))) {
                    snprintf(err, errcap,
                             "the source has '%.*s' (line %d); only #include <math.h> <stdint.h> "
                             "<stddef.h> <string.h> <float.h> <limits.h> <omp.h> <cuda_fp16.h> "
                             "<cuda_bf16.h> <cuda_fp8.h> <cooperative_groups.h> "
                             "<cooperative_groups/*.h> are allowed",
                             (int)(eol - p > 80 ? 80 : eol - p), p, line);
                    return 0;
                }
            }
        }
        p = *eol ? eol + 1 : eol;
    }
    return 1;
}

/* Identifiers outside string and character literals. */
static int check_words(const char *txt, int cuda, char *err, size_t errcap)
{
    for (const char *p = txt; *p;) {
        if (*p == '"' || *p == '\'') {
            char c = *p++;
            while (*p && *p != c && *p != '\n') p += (*p == '\\' && p[1]) ? 2 : 1;
            if (*p == c) p++;
            continue;
        }
        if (!word_char(*p)) {
            p++;
            continue;
        }
        const char *w = p;
        while (word_char(*p)) p++;
        size_t n = (size_t)(p - w);
        if (isdigit((unsigned char)*w)) continue; /* a number (1e5f, 0x1F) */
        int line = line_of(txt, w);
        if (!cuda && ((n == 3 && !memcmp(w, "asm", 3)) || (n == 5 && !memcmp(w, "__asm", 5)) ||
                      (n == 7 && !memcmp(w, "__asm__", 7))))
            return refuse(err, errcap, "uses inline assembly in host code", w, n, line);
        if (IN(w, n, process_always))
            return refuse(err, errcap, "loads code or starts processes", w, n, line);
        if ((n == 7 && !memcmp(w, "syscall", 7)) || (n >= 5 && !memcmp(w, "__NR_", 5)) ||
            (IN(w, n, syscalls_called) && called(p)))
            return refuse(err, errcap, "makes system calls", w, n, line);
        if (IN(w, n, file_always) || (IN(w, n, file_called) && called(p)))
            return refuse(err, errcap, "does file I/O", w, n, line);
        if ((n == 11 && !memcmp(w, "constructor", 11)) ||
            (n == 10 && !memcmp(w, "destructor", 10)) || (n == 5 && !memcmp(w, "_init", 5)) ||
            (n == 5 && !memcmp(w, "_fini", 5)))
            return refuse(err, errcap, "runs code when it is loaded", w, n, line);
    }
    return 1;
}

/* CUDA source: it declares a __global__ kernel and does not #define that keyword itself. */
static int looks_cuda(const char *txt)
{
    int global = 0;
    for (const char *p = txt; (p = strstr(p, "__global__")); p += 10) {
        if ((p > txt && word_char(p[-1])) || word_char(p[10])) continue;
        const char *b = p;
        while (b > txt && b[-1] != '\n') b--;
        while (*b == ' ' || *b == '\t') b++;
        if (*b == '#') return 0; /* #define __global__ ...: host code dressed up */
        global = 1;
    }
    return global;
}

int kf_source_check_backend(const char *source, const char *backend, char *err, size_t errcap)
{
    char dummy[1];
    if (!err || !errcap) err = dummy, errcap = sizeof dummy;
    err[0] = 0;
    if (!source) {
        snprintf(err, errcap, "no source");
        return 0;
    }
    if (!check_forbidden(source, err, errcap)) return 0;
    static const char trigraph_tails[] = "=/'()!<>-";
    for (const char *p = source; (p = strstr(p, "??")); p++)
        if (p[2] && strchr(trigraph_tails, p[2])) {
            snprintf(err, errcap, "the source uses a trigraph ('%.3s', line %d)", p,
                     line_of(source, p));
            return 0;
        }
    char *txt = strip(source);
    if (!txt) {
        snprintf(err, errcap, "out of memory");
        return 0;
    }
    int cuda = backend ? !strcmp(backend, "nvrtc") : looks_cuda(txt);
    int ok = check_directives(txt, err, errcap) && check_words(txt, cuda, err, errcap);
    free(txt);
    return ok;
}

int kf_source_check(const char *source, char *err, size_t errcap)
{
    return kf_source_check_backend(source, NULL, err, errcap);
}
