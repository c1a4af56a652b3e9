/* Static checks on a candidate's source (source_check.h).
 *
 * Two layers. First the forbidden names (no calls back into ATen/libtorch, no cuBLAS/cuDNN/
 * cuSPARSE/cuFFT, no host synchronization, no dlopen/dlsym/system/popen/fork/exec) on the raw
 * text, comments included. Then, on the text with comments removed and string literals skipped:
 * only whitelisted #includes and directives (no #line, which could fake the preprocessor's line
 * markers), no system calls or process control, no file I/O, no code run at load time, no
 * trigraphs (which could hide a directive from this scan). Host code also: no inline assembly,
 * no attributes (section, constructor, alias, ifunc: code run at dlopen), no extern
 * declarations, and only `#define KF_...` before its last #include, so its macros cannot change
 * what a system header says.
 *
 * The macro language can assemble any name, so for host code the host compiler runs its
 * preprocessor with the real compile's flags and checks the result too
 * (kf_source_check_preprocessed), then compiles exactly that text. CUDA code gets only the raw
 * check: NVRTC has no separate preprocessor pass, and device code cannot run at load time. This
 * is defence in depth, not a sandbox: candidates also run only in the evaluator child, and are
 * verified there. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kforge.h"
#include "compile/source_check.h"

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

/* After the word ending at p: optional blanks and ')' (a parenthesized name, "(write)(...)"),
 * then '('? */
static int called(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == '\v' ||
           *p == ')')
        p++;
    return *p == '(';
}

/* Line numbers: `map` (may be NULL) gives the source line of each line of the checked text. */
static int line_in(const char *txt, const char *at, const int *map)
{
    int line = line_of(txt, at);
    return map ? map[line - 1] : line;
}

/* Layer 1: the forbidden names, on the raw text. */
static int check_forbidden(const char *src, const int *map, char *err, size_t errcap)
{
    const char *hit;
    if ((hit = strstr(src, "ATen/")) || (hit = strstr(src, "<torch/")))
        return refuse(err, errcap, "calls back into ATen/libtorch", hit, hit[0] == 'A' ? 5 : 7,
                      line_in(src, hit, map));
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
                              line_in(src, w, map));
        }
        if (starts_with_ci(w, n, "cublas") || starts_with_ci(w, n, "cudnn") ||
            starts_with_ci(w, n, "cusparse") || starts_with_ci(w, n, "cufft"))
            return refuse(err, errcap, "calls cuBLAS/cuDNN libraries", w, n, line_in(src, w, map));
        if (IN(w, n, host_sync))
            return refuse(err, errcap, "synchronizes the host", w, n, line_in(src, w, map));
        if ((n == 6 && !memcmp(w, "dlopen", 6)) || (n == 5 && !memcmp(w, "dlsym", 5)) ||
            (n == 5 && !memcmp(w, "popen", 5)) ||
            (((n == 6 && !memcmp(w, "system", 6)) || (n == 4 && !memcmp(w, "fork", 4)) ||
              is_exec(w, n)) &&
             called(p)))
            return refuse(err, errcap, "loads code or starts processes", w, n, line_in(src, w, map));
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

static const char *const directives_allowed[] = {
    "include", "define", "undef", "if",    "ifdef",   "ifndef", "elif",
    "elifdef", "elifndef", "else", "endif", "pragma", "error",  "warning",
};

/* Where the directive on [p, eol) starts (after '#' or '%:' and blanks), or NULL if the line is
 * not a directive. */
static const char *directive_name(const char *p, const char *eol)
{
    const char *q = p;
    while (q < eol && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\f' || *q == '\v')) q++;
    if (!(q < eol && (*q == '#' || (q[0] == '%' && q + 1 < eol && q[1] == ':')))) return NULL;
    q += *q == '#' ? 1 : 2;
    while (q < eol && (*q == ' ' || *q == '\t')) q++;
    return q;
}

static int is_word(const char *w, size_t n, const char *lit)
{
    return strlen(lit) == n && !memcmp(w, lit, n);
}

/* Preprocessor lines: only whitelisted directives (no #line or GNU line markers, which could
 * fake the preprocessor's own markers), only `#include <whitelisted.h>`, and in host code only
 * conditionals and `#define KF_...` before the last #include. */
static int check_directives(const char *txt, int host, char *err, size_t errcap)
{
    int last_include = 0, line = 1, early_len = 0, early_line = 0;
    const char *early = NULL; /* the first directive host code may not have before an #include */
    for (const char *p = txt; *p; line++) {
        const char *eol = strchr(p, '\n');
        if (!eol) eol = p + strlen(p);
        const char *q = directive_name(p, eol), *name = q;
        while (q && q < eol && word_char(*q)) q++;
        if (q && is_word(name, (size_t)(q - name), "include")) last_include = line;
        p = *eol ? eol + 1 : eol;
    }
    line = 1;
    for (const char *p = txt; *p; line++) {
        const char *eol = strchr(p, '\n');
        if (!eol) eol = p + strlen(p);
        int shown = (int)(eol - p > 80 ? 80 : eol - p);
        const char *q = directive_name(p, eol);
        if (q) {
            const char *name = q;
            while (q < eol && word_char(*q)) q++;
            size_t nl = (size_t)(q - name);
            if (nl == 0 ? q < eol && *q != ' ' && *q != '\t' && *q != '\r'
                        : !IN(name, nl, directives_allowed)) {
                snprintf(err, errcap,
                         "the source has '%.*s' (line %d); only #include #define #undef #if "
                         "#ifdef #ifndef #elif #else #endif #pragma #error #warning are allowed",
                         shown, p, line);
                return 0;
            }
            if (is_word(name, nl, "include")) {
                while (q < eol && (*q == ' ' || *q == '\t')) q++;
                const char *h = q + 1, *close = NULL;
                if (q < eol && *q == '<') close = memchr(h, '>', (size_t)(eol - h));
                const char *rest = close ? close + 1 : eol;
                while (rest < eol && (*rest == ' ' || *rest == '\t' || *rest == '\r')) rest++;
                if (!close || rest != eol || !header_allowed(h, (size_t)(close - h))) {
                    snprintf(err, errcap,
                             "the source has '%.*s' (line %d); only #include <math.h> <stdint.h> "
                             "<stddef.h> <string.h> <float.h> <limits.h> <omp.h> <cuda_fp16.h> "
                             "<cuda_bf16.h> <cuda_fp8.h> <cooperative_groups.h> "
                             "<cooperative_groups/*.h> are allowed",
                             shown, p, line);
                    return 0;
                }
            }
            if (host && line < last_include && !early &&
                (is_word(name, nl, "undef") || is_word(name, nl, "pragma") ||
                 is_word(name, nl, "define"))) {
                while (q < eol && (*q == ' ' || *q == '\t')) q++;
                if (!is_word(name, nl, "define") || eol - q < 3 || memcmp(q, "KF_", 3))
                    early = p, early_len = shown, early_line = line;
            }
        }
        p = *eol ? eol + 1 : eol;
    }
    if (early) { /* reported after the include whitelist, which says more */
        snprintf(err, errcap,
                 "the source has '%.*s' (line %d) before its last #include; host code may only "
                 "#define KF_... names there (a system header must not see the kernel's macros)",
                 early_len, early, early_line);
        return 0;
    }
    return 1;
}

/* GCC builtins that reach the stack frame, the return path or the instruction cache (host). */
static const char *const builtins_refused[] = {
    "__builtin_apply",          "__builtin_apply_args",     "__builtin_return",
    "__builtin_frame_address",  "__builtin_return_address", "__builtin_extract_return_addr",
    "__builtin_frob_return_addr", "__builtin_eh_return",    "__builtin_unwind_init",
    "__builtin_dwarf_cfa",      "__builtin_call_with_static_chain", "__builtin___clear_cache",
    "__builtin_longjmp",        "__builtin_setjmp",
};

/* Why the identifier w[0..n) (followed by `after`) is refused, or NULL. */
static const char *word_rule(const char *w, size_t n, const char *after, int cuda)
{
    if (!cuda && (is_word(w, n, "asm") || is_word(w, n, "__asm") || is_word(w, n, "__asm__")))
        return "uses inline assembly in host code";
    if (!cuda && (is_word(w, n, "__attribute__") || is_word(w, n, "__attribute") ||
                  is_word(w, n, "__declspec")))
        return "uses an attribute (a section or constructor could run code when it is loaded)";
    if (!cuda && is_word(w, n, "extern"))
        return "declares an external symbol (only the whitelisted headers may)";
    if (!cuda && IN(w, n, builtins_refused))
        return "uses a builtin that reaches the stack frame or return path";
    if (IN(w, n, process_always) ||
        ((is_word(w, n, "system") || is_word(w, n, "fork") || is_exec(w, n)) && called(after)))
        return "loads code or starts processes";
    if (is_word(w, n, "syscall") || (n >= 5 && !memcmp(w, "__NR_", 5)) ||
        (IN(w, n, syscalls_called) && called(after)))
        return "makes system calls";
    if (IN(w, n, file_always) || (IN(w, n, file_called) && called(after)))
        return "does file I/O";
    if (is_word(w, n, "constructor") || is_word(w, n, "destructor") || is_word(w, n, "_init") ||
        is_word(w, n, "_fini"))
        return "runs code when it is loaded";
    return NULL;
}

/* '[' or its digraph '<:' at p: the length, else 0. */
static int open_bracket(const char *p)
{
    return *p == '[' ? 1 : (p[0] == '<' && p[1] == ':') ? 2 : 0;
}

/* Identifiers (and, in host code, `[[` attribute brackets) outside string and character
 * literals. A `__builtin_` name is also checked without its prefix (`__builtin_execl`). */
static int check_words(const char *txt, int cuda, const int *map, char *err, size_t errcap)
{
    for (const char *p = txt; *p;) {
        if (*p == '"' || *p == '\'') {
            char c = *p++;
            while (*p && *p != c && *p != '\n') p += (*p == '\\' && p[1]) ? 2 : 1;
            if (*p == c) p++;
            continue;
        }
        int ob = cuda ? 0 : open_bracket(p);
        if (ob) {
            const char *q = p + ob;
            while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r') q++;
            if (open_bracket(q))
                return refuse(err, errcap,
                              "uses an attribute (a section or constructor could run code when "
                              "it is loaded)", p, (size_t)(q - p) + 2, line_in(txt, p, map));
            p += ob;
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
        const char *why = word_rule(w, n, p, cuda);
        if (!why && n > 10 && !memcmp(w, "__builtin_", 10)) why = word_rule(w + 10, n - 10, p, cuda);
        if (why) return refuse(err, errcap, why, w, n, line_in(txt, w, map));
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
    if (!check_forbidden(source, NULL, err, errcap)) return 0;
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
    int ok = check_directives(txt, !cuda, err, errcap) && check_words(txt, cuda, NULL, err, errcap);
    free(txt);
    return ok;
}

int kf_source_check(const char *source, char *err, size_t errcap)
{
    return kf_source_check_backend(source, NULL, err, errcap);
}

/* A GNU line marker `# 12 "file" flags`: the line number and the quoted file name (with its
 * quotes, escapes as written). 0 if the line is not one. */
static int line_marker(const char *p, const char *eol, int *lineno, const char **name,
                       size_t *name_len)
{
    if (p[0] != '#' || p[1] != ' ' || !isdigit((unsigned char)p[2])) return 0;
    char *end;
    long v = strtol(p + 2, &end, 10);
    if (end >= eol || *end != ' ' || end[1] != '"' || v < 0 || v > 100000000) return 0;
    const char *q = end + 2;
    while (q < eol && *q != '"') q += (*q == '\\' && q + 1 < eol) ? 2 : 1;
    if (q >= eol) return 0;
    *lineno = (int)v;
    *name = end + 1;
    *name_len = (size_t)(q + 1 - *name);
    return 1;
}

int kf_source_check_preprocessed(const char *pp, char *err, size_t errcap)
{
    char dummy[1];
    if (!err || !errcap) err = dummy, errcap = sizeof dummy;
    err[0] = 0;
    if (!pp) {
        snprintf(err, errcap, "no preprocessed source");
        return 0;
    }
    /* The main file is the one the first marker names; its lines are gathered (with their
     * source line numbers) and checked like host source, everything else is a system header. */
    size_t n = strlen(pp), lines = 1;
    for (const char *p = pp; *p; p++) lines += *p == '\n';
    char *txt = malloc(n + 1);
    int *map = malloc((lines + 1) * sizeof *map);
    if (!txt || !map) {
        free(txt);
        free(map);
        snprintf(err, errcap, "out of memory");
        return 0;
    }
    const char *main_name = NULL;
    size_t main_len = 0, o = 0, k = 0;
    int in_main = 0, lineno = 1, ok = 1;
    for (const char *p = pp; *p && ok;) {
        const char *eol = strchr(p, '\n');
        if (!eol) eol = p + strlen(p);
        const char *name;
        size_t nl;
        int at;
        if (line_marker(p, eol, &at, &name, &nl)) {
            if (!main_name) main_name = name, main_len = nl;
            in_main = nl == main_len && !memcmp(name, main_name, nl);
            lineno = at;
        } else {
            if (in_main) {
                const char *q = p;
                while (q < eol && (*q == ' ' || *q == '\t')) q++;
                if (q < eol && *q == '#') {
                    /* what the preprocessor passes on: pragmas (from #pragma and _Pragma) */
                    const char *d = q + 1;
                    while (d < eol && (*d == ' ' || *d == '\t')) d++;
                    int omp = eol - d > 11 && !memcmp(d, "pragma omp ", 11);
                    int gcc = (eol - d >= 17 && !memcmp(d, "pragma GCC unroll", 17)) ||
                              (eol - d >= 16 && !memcmp(d, "pragma GCC ivdep", 16));
                    if (!omp && !gcc) {
                        snprintf(err, errcap,
                                 "after preprocessing, the source has '%.*s' (line %d); only "
                                 "#pragma omp and #pragma GCC unroll/ivdep are allowed",
                                 (int)(eol - q > 80 ? 80 : eol - q), q, lineno);
                        ok = 0;
                    }
                } else {
                    memcpy(txt + o, p, (size_t)(eol - p));
                    o += (size_t)(eol - p);
                    txt[o++] = '\n';
                    map[k++] = lineno;
                }
            }
            lineno++;
        }
        p = *eol ? eol + 1 : eol;
    }
    txt[o] = 0;
    if (ok && !main_name) {
        snprintf(err, errcap, "the preprocessor output has no line markers (cannot tell the "
                              "kernel's lines from the headers')");
        ok = 0;
    }
    map[k] = lineno; /* the line after the last one */
    if (ok && (!check_forbidden(txt, map, err, errcap) || !check_words(txt, 0, map, err, errcap))) {
        /* name the pass, so a refusal of a name no line shows explains itself */
        char why[512];
        snprintf(why, sizeof why, "%s", err);
        snprintf(err, errcap, "after preprocessing (macros expanded), %s", why);
        ok = 0;
    }
    free(txt);
    free(map);
    return ok;
}

KF_API int kf_source_check_text(const char *backend, const char *source, char *err, size_t errcap)
{
    return kf_source_check_backend(source, backend, err, errcap);
}
