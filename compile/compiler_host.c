/* The host compile backend: C source -> shared object with the system C compiler.
 *
 * The kernel's entry takes typed pointers; we append a trampoline `int kf_tramp(void *const *a)`
 * that casts each pointer to its launch-record type and calls the entry, so loading needs only
 * one dlsym and launching one indirect call. __half / __nv_bfloat16 / fp8 have no C type: host
 * kernels see them as uint16_t / uint8_t bit patterns. The compiler runs without a shell, in a
 * private temp dir, with a time limit and a bounded log.
 *
 * Every compile is checked (source_check.h): the raw source, then the preprocessor's output made
 * with the very flags of the compile, and it is that checked text (kernel.i) that is compiled,
 * so what was checked is what runs. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/spawn.h"
#include "compile/compiler.h"
#include "compile/source_check.h"


/* Fixed flags, recorded verbatim in the toolchain id. A call to an undeclared or undefined
 * function (a misspelt entry) fails the compile rather than the later dlopen. -lm: kernels may
 * call expf & co. -fno-math-errno: no kernel reads errno, and with it GCC cannot vectorize sqrt
 * (every sqrtf becomes a branch to libm for errno's sake). -fno-trapping-math: no kernel reads
 * the FP exception flags either, and with them GCC will not compute both sides of a select
 * (softplus's `x > t ? x : log1p(exp(x))`), so such a loop stays scalar. The values are the
 * same under both: IEEE arithmetic, rounding and NaNs unchanged. */
static const char *const host_flags[] = {"-O3", "-march=native", "-fopenmp", "-shared", "-fPIC",
                                         "-std=c11", "-Werror=implicit-function-declaration",
                                         "-Wl,-z,defs", "-fno-math-errno", "-fno-trapping-math"};
#define HOST_LIBS "-lm"

#define HOST_LOG_MAX (64 * 1024)
#define HOST_TIMEOUT_MS 60000 /* KFORGE_CC_TIMEOUT (seconds) overrides */
#define HOST_PROBE_TIMEOUT_MS 20000
#define HOST_BLOB_MAX (256u << 20)
#define HOST_CC_WORDS 8
#define HOST_MAGIC 0x6b66686fu /* "kfho": catches a kernel from another backend */

typedef struct host_self {
    char cc_buf[512];                /* the command, split in place into cc_argv */
    char *cc_argv[HOST_CC_WORDS + 1];
    int cc_argc;
    int timeout_ms;

    pthread_mutex_t lock; /* guards the lazily probed facts below */
    int probed;           /* 1: toolchain/arch filled (or probe_err) */
    kf_status probe_st;
    char probe_err[512];
    char toolchain[512];
    char arch[256];
    int omp_checked; /* 1: omp_st/omp_err valid */
    kf_status omp_st;
    char *omp_err; /* malloc'ed log when -fopenmp does not work */
} host_self;

typedef struct host_kernel {
    unsigned magic;
    void *dl;
    int (*tramp)(void *const *);
    int n_args;
    int fd;             /* memfd holding the image, or -1 */
    char tmpdir[4096];  /* fallback: private dir holding the image, or "" */
    char path[4096 + 16]; /* what dlopen was given */
} host_kernel;

/* ---- small helpers ---- */

/* A malloc'ed "prefix" + "body" (body may be NULL). */
static char *join_log(const char *prefix, const char *body)
{
    size_t a = strlen(prefix), b = body ? strlen(body) : 0;
    char *p = malloc(a + b + 2);
    if (!p) return NULL;
    memcpy(p, prefix, a);
    if (b) {
        p[a] = '\n';
        memcpy(p + a + 1, body, b + 1);
    } else {
        p[a] = 0;
    }
    return p;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *tmp_root(void)
{
    const char *t = getenv("TMPDIR");
    return t && *t && strlen(t) < 3000 ? t : "/tmp";
}

/* Remove a flat directory we created (the compiler may leave files we did not name). */
static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d) {
        struct dirent *e;
        char p[4200];
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    if (rmdir(dir) != 0) KF_WARN("host compiler: cannot remove %s: %s", dir, strerror(errno));
}

static kf_status write_file(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) return KF_ERR_IO;
    const char *p = data;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            close(fd);
            return KF_ERR_IO;
        }
        p += n, len -= (size_t)n;
    }
    return close(fd) == 0 ? KF_OK : KF_ERR_IO;
}

/* ---- running the compiler ---- */

typedef struct proc_result {
    int spawn_errno; /* non-zero: the program could not be started */
    int timeout_ms;
    int timed_out;
    int status;      /* waitpid status */
    char *out;       /* stdout + stderr, NUL-terminated, at most HOST_LOG_MAX (+ a note) */
} proc_result;

/* Run argv (no shell) with stdin from /dev/null, capture stdout+stderr, kill the whole process
 * group (cc1, as, ld) after timeout_ms. */
static kf_status run_capture(char *const argv[], int timeout_ms, proc_result *r)
{
    memset(r, 0, sizeof *r);
    r->timeout_ms = timeout_ms;
    size_t cap = HOST_LOG_MAX, len = 0;
    r->out = malloc(cap + 64);
    if (!r->out) return KF_ERR_NOMEM;
    r->out[0] = 0;

    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) != 0) {
        r->spawn_errno = errno;
        return KF_OK;
    }
    pid_t pid;
    int rc = kf_spawn(&pid, argv, 1, (const int[3]){KF_SPAWN_DEVNULL, pfd[1], pfd[1]});
    close(pfd[1]);
    if (rc != 0) {
        close(pfd[0]);
        r->spawn_errno = rc;
        return KF_OK;
    }

    int64_t deadline = now_ms() + timeout_ms;
    int truncated = 0;
    char buf[4096];
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left <= 0) {
            r->timed_out = 1;
            break;
        }
        struct pollfd p = {.fd = pfd[0], .events = POLLIN};
        int pr = poll(&p, 1, (int)(left > 1000 ? 1000 : left));
        if (pr < 0 && errno != EINTR) break;
        if (pr <= 0) continue;
        ssize_t n = read(pfd[0], buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break; /* EOF: every writer is gone */
        /* keep the beginning (the first errors matter most), drain the rest */
        size_t take = (size_t)n < cap - len ? (size_t)n : cap - len;
        memcpy(r->out + len, buf, take);
        len += take;
        if (take < (size_t)n) truncated = 1;
    }
    close(pfd[0]);
    if (truncated) {
        memcpy(r->out + len, "\n[log truncated]\n", 18);
        len += 17;
    }
    r->out[len] = 0;

    /* The pipe can close before the process exits; wait for it within the same deadline. */
    while (!r->timed_out) {
        pid_t w = waitpid(pid, &r->status, WNOHANG);
        if (w == pid) return KF_OK;
        if (w < 0 && errno != EINTR) return KF_OK; /* reaped by someone else: treat as done */
        if (now_ms() >= deadline) {
            r->timed_out = 1;
            break;
        }
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    kill(-pid, SIGKILL);
    while (waitpid(pid, &r->status, 0) < 0 && errno == EINTR) {
    }
    return KF_OK;
}

/* A readable one-line description of how the process ended, for logs. */
static void describe_exit(const host_self *h, const proc_result *r, char *buf, size_t cap)
{
    if (r->spawn_errno)
        snprintf(buf, cap, "cannot run '%s': %s", h->cc_argv[0], strerror(r->spawn_errno));
    else if (r->timed_out)
        snprintf(buf, cap, "'%s' timed out after %.1f s and was killed", h->cc_argv[0],
                 r->timeout_ms / 1000.0);
    else if (WIFEXITED(r->status))
        snprintf(buf, cap, "'%s' exited with status %d", h->cc_argv[0], WEXITSTATUS(r->status));
    else if (WIFSIGNALED(r->status))
        snprintf(buf, cap, "'%s' was killed by signal %d", h->cc_argv[0], WTERMSIG(r->status));
    else
        snprintf(buf, cap, "'%s' ended abnormally", h->cc_argv[0]);
}

static int ran_ok(const proc_result *r)
{
    return !r->spawn_errno && !r->timed_out && WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0;
}

/* The compiler's arguments after the command: the fixed flags, then either `-E -o pre src`
 * (so == NULL: the preprocessor, with the same flags so the same macros are defined) or
 * `-o so src -lm`. */
static int cc_args(const char *args[20], const char *so, const char *pre, const char *src)
{
    int na = 0;
    for (size_t i = 0; i < sizeof host_flags / sizeof host_flags[0]; i++) args[na++] = host_flags[i];
    if (!so) args[na++] = "-E";
    args[na++] = "-o";
    args[na++] = so ? so : pre;
    args[na++] = src;
    if (so) args[na++] = HOST_LIBS;
    return na;
}

static kf_status run_cc(const host_self *h, const char *const extra[], int n_extra, int timeout_ms,
                        proc_result *r)
{
    if (timeout_ms > h->timeout_ms) timeout_ms = h->timeout_ms; /* probes never wait longer */
    char *argv[HOST_CC_WORDS + 24];
    int n = 0;
    for (int i = 0; i < h->cc_argc; i++) argv[n++] = h->cc_argv[i];
    for (int i = 0; i < n_extra && n < (int)(sizeof argv / sizeof argv[0]) - 1; i++)
        argv[n++] = (char *)extra[i];
    argv[n] = NULL;
    return run_capture(argv, timeout_ms, r);
}

/* ---- probing the compiler: version, native target, OpenMP ---- */

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001b3ull;
    return h;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The value of option `opt` ("-march=") in `cc -Q --help=target` output, or "". */
static void target_option(const char *help, const char *opt, char *out, size_t cap)
{
    out[0] = 0;
    for (const char *line = help; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        const char *p = line;
        while (p < line + n && (*p == ' ' || *p == '\t')) p++;
        size_t ol = strlen(opt);
        if ((size_t)(line + n - p) > ol && !strncmp(p, opt, ol)) {
            p += ol;
            while (p < line + n && (*p == ' ' || *p == '\t')) p++;
            size_t k = 0;
            while (p < line + n && *p != ' ' && *p != '\t' && k + 1 < cap) out[k++] = *p++;
            out[k] = 0;
            return;
        }
        line = end ? end + 1 : NULL;
    }
}

/* A token from /proc/cpuinfo's model name, for compilers without -Q --help=target. */
static void cpu_model(char *out, size_t cap)
{
    snprintf(out, cap, "unknown-cpu");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10)) continue;
        const char *v = strchr(line, ':');
        if (!v) break;
        v++;
        while (*v == ' ') v++;
        size_t k = 0;
        for (; *v && *v != '\n' && k + 1 < cap; v++)
            out[k++] = (*v == ' ' || *v == '\t') ? '_' : *v;
        out[k] = 0;
        break;
    }
    fclose(f);
}

/* Under h->lock. Fills toolchain and arch once. The arch names the -march=native target plus a
 * hash of the ISA macros it enables, so two machines whose native code differs (even with the
 * same CPU name, e.g. a VM that hides AVX-512) get different arch strings. */
static void probe(host_self *h)
{
    if (h->probed) return;
    h->probed = 1;
    h->probe_st = KF_ERR_NOT_FOUND;
    proc_result r;
    char why[512];

    /* 1. version */
    static const char *const ver_args[] = {"--version"};
    if (run_cc(h, ver_args, 1, HOST_PROBE_TIMEOUT_MS, &r) != KF_OK) {
        h->probe_st = KF_ERR_NOMEM;
        snprintf(h->probe_err, sizeof h->probe_err, "host compiler: out of memory");
        goto done;
    }
    if (!ran_ok(&r) || !r.out[0]) {
        describe_exit(h, &r, why, sizeof why);
        snprintf(h->probe_err, sizeof h->probe_err,
                 "host compiler: %.100s --version failed: %.360s", h->cc_argv[0], why);
        free(r.out);
        goto done;
    }
    size_t n = strcspn(r.out, "\n");
    r.out[n] = 0;
    int len = snprintf(h->toolchain, sizeof h->toolchain, "%.300s; flags:", r.out);
    for (size_t i = 0; i < sizeof host_flags / sizeof host_flags[0]; i++)
        len += snprintf(h->toolchain + len, sizeof h->toolchain - (size_t)len, " %s",
                        host_flags[i]);
    snprintf(h->toolchain + len, sizeof h->toolchain - (size_t)len, " %s", HOST_LIBS);
    free(r.out);

    /* 2. the target -march=native resolves to (gcc), else the CPU's name */
    char march[96] = "", mtune[96] = "";
    static const char *const q_args[] = {"-march=native", "-Q", "--help=target"};
    if (run_cc(h, q_args, 3, HOST_PROBE_TIMEOUT_MS, &r) == KF_OK) {
        if (ran_ok(&r)) {
            target_option(r.out, "-march=", march, sizeof march);
            target_option(r.out, "-mtune=", mtune, sizeof mtune);
        }
        free(r.out);
    }
    if (!march[0] || !strcmp(march, "native")) cpu_model(march, sizeof march);

    /* 3. the ISA macros -march=native defines, sorted so that their order does not matter */
    static const char *const dm_args[] = {"-march=native", "-dM", "-E", "-x", "c", "/dev/null"};
    if (run_cc(h, dm_args, 6, HOST_PROBE_TIMEOUT_MS, &r) != KF_OK) {
        h->probe_st = KF_ERR_NOMEM;
        snprintf(h->probe_err, sizeof h->probe_err, "host compiler: out of memory");
        goto done;
    }
    if (!ran_ok(&r)) {
        describe_exit(h, &r, why, sizeof why);
        snprintf(h->probe_err, sizeof h->probe_err,
                 "host compiler: -march=native is not supported: %.400s", why);
        free(r.out);
        goto done;
    }
    size_t n_lines = 0;
    for (char *p = r.out; *p; p++) n_lines += *p == '\n';
    char **lines = calloc(n_lines + 1, sizeof *lines);
    if (!lines) {
        free(r.out);
        h->probe_st = KF_ERR_NOMEM;
        snprintf(h->probe_err, sizeof h->probe_err, "host compiler: out of memory");
        goto done;
    }
    size_t k = 0;
    for (char *save = NULL, *t = strtok_r(r.out, "\n", &save); t && k <= n_lines;
         t = strtok_r(NULL, "\n", &save))
        lines[k++] = t;
    qsort(lines, k, sizeof *lines, cmp_str);
    uint64_t hash = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < k; i++) hash = fnv1a(hash, lines[i], strlen(lines[i]) + 1);
    hash = fnv1a(hash, mtune, strlen(mtune));
    free(lines);
    free(r.out);

    struct utsname u;
    if (uname(&u) != 0) snprintf(u.machine, sizeof u.machine, "unknown");
    snprintf(h->arch, sizeof h->arch, "%s %s isa:%016llx", u.machine, march,
             (unsigned long long)hash);
    h->probe_st = KF_OK;
done:
    if (h->probe_st != KF_OK) KF_WARN("%s", h->probe_err);
}

static kf_status host_toolchain(void *self, char *out, size_t cap)
{
    host_self *h = self;
    if (!out || !cap) return KF_ERR_INVALID;
    pthread_mutex_lock(&h->lock);
    probe(h);
    kf_status st = h->probe_st;
    int n = snprintf(out, cap, "%s", st == KF_OK ? h->toolchain : h->probe_err);
    pthread_mutex_unlock(&h->lock);
    if (st == KF_OK && (size_t)n >= cap) return KF_ERR_INVALID;
    return st;
}

static kf_status host_arch(void *self, int device_index, char *out, size_t cap)
{
    host_self *h = self;
    (void)device_index; /* one host */
    if (!out || !cap) return KF_ERR_INVALID;
    pthread_mutex_lock(&h->lock);
    probe(h);
    kf_status st = h->probe_st;
    int n = snprintf(out, cap, "%s", st == KF_OK ? h->arch : h->probe_err);
    pthread_mutex_unlock(&h->lock);
    if (st == KF_OK && (size_t)n >= cap) return KF_ERR_INVALID;
    return st;
}

/* ---- compile ---- */

/* The C type a launch-record element type becomes in host code: the compiler's predefined
 * names of the <stdint.h> types, so the trampoline needs no #include after the kernel's own
 * macros (a system header must never see those: source_check.c). */
static const char *c_elem_type(const char *t)
{
    static const struct {
        const char *rec, *c;
    } map[] = {
        {"float", "float"},
        {"double", "double"},
        {"__half", "__UINT16_TYPE__"},
        {"__nv_bfloat16", "__UINT16_TYPE__"},
        {"__nv_fp8_e4m3", "__UINT8_TYPE__"},
        {"__nv_fp8_e5m2", "__UINT8_TYPE__"},
        {"int8_t", "__INT8_TYPE__"},
        {"uint8_t", "__UINT8_TYPE__"},
        {"int16_t", "__INT16_TYPE__"},
        {"uint16_t", "__UINT16_TYPE__"},
        {"int32_t", "__INT32_TYPE__"},
        {"uint32_t", "__UINT32_TYPE__"},
        {"int64_t", "__INT64_TYPE__"},
        {"uint64_t", "__UINT64_TYPE__"},
        {"bool", "_Bool"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(t, map[i].rec)) return map[i].c;
    return NULL;
}

/* Append the trampoline to `src` (malloc'ed result). Types come from a parsed record, but are
 * mapped through the table again so nothing unchecked reaches the generated code. */
static char *with_trampoline(const char *source, const kf_launch *l, char *err, size_t errcap)
{
    size_t cap = strlen(source) + 512 + (size_t)(l->n_args + l->n_ints) * 64;
    char *s = malloc(cap);
    if (!s) {
        snprintf(err, errcap, "out of memory");
        return NULL;
    }
    size_t n = (size_t)snprintf(s, cap,
                                "%s\n\n/* ---- generated by kernel forge ---- */\n"
                                "int kf_tramp(void *const *a);\n"
                                "int kf_tramp(void *const *a)\n{\n"
                                /* a kernel may decline a call (an out-of-range index): eager
                                 * then runs and raises eager's error */
                                "#if defined(KF_KERNEL_RETURNS_INT) && KF_KERNEL_RETURNS_INT\n"
                                "    return\n#endif\n    %s(",
                                source, l->entry);
    for (int i = 0; i < l->n_args; i++) {
        const char *t = l->arg_types[i];
        int is_const = !strncmp(t, "const ", 6);
        char base[KF_LAUNCH_TYPE_MAX];
        snprintf(base, sizeof base, "%s", t + (is_const ? 6 : 0));
        size_t bl = strlen(base);
        if (bl && base[bl - 1] == '*') base[bl - 1] = 0;
        const char *c = c_elem_type(base);
        if (!c) {
            snprintf(err, errcap, "argument %d has type \"%s\", which is not a known pointer type",
                     i, t);
            free(s);
            return NULL;
        }
        n += (size_t)snprintf(s + n, cap - n, "%s(%s%s *)a[%d]", i ? ", " : "",
                              is_const ? "const " : "", c, i);
    }
    /* launch-time sizes travel as values in the pointer array (compiler.h) */
    for (int j = 0; j < l->n_ints; j++)
        n += (size_t)snprintf(s + n, cap - n, ", (__INT64_TYPE__)(__INTPTR_TYPE__)a[%d]",
                              l->n_args + j);
    snprintf(s + n, cap - n, ");\n    return 0;\n}\n");
    return s;
}

/* Under h->lock. Does -fopenmp work at all (flag accepted, omp.h present, runtime links)? Checked
 * once, so a missing libgomp is reported as such rather than as every kernel's failure. */
static kf_status check_openmp(host_self *h, const char *dir)
{
    if (h->omp_checked) return h->omp_st;
    h->omp_checked = 1;
    h->omp_st = KF_ERR_UNSUPPORTED;
    char src[4200], so[4200], why[512];
    snprintf(src, sizeof src, "%s/omp_probe.c", dir);
    snprintf(so, sizeof so, "%s/omp_probe.so", dir);
    static const char probe_src[] =
        "#include <omp.h>\n"
        "int kf_omp_probe(void);\n"
        "int kf_omp_probe(void)\n{\n    int n = 0;\n"
        "#pragma omp parallel reduction(+ : n)\n    n += 1;\n"
        "    return n + omp_get_max_threads();\n}\n";
    if (write_file(src, probe_src, sizeof probe_src - 1) != KF_OK) {
        h->omp_checked = 0; /* our problem, not the compiler's: try again next time */
        h->omp_st = KF_ERR_IO;
        return KF_ERR_IO;
    }
    const char *args[20];
    int na = cc_args(args, so, NULL, src);
    proc_result r;
    if (run_cc(h, args, na, HOST_PROBE_TIMEOUT_MS, &r) != KF_OK) {
        h->omp_checked = 0;
        return h->omp_st = KF_ERR_NOMEM;
    }
    if (ran_ok(&r)) {
        h->omp_st = KF_OK;
    } else {
        describe_exit(h, &r, why, sizeof why);
        char head[800];
        snprintf(head, sizeof head,
                 "host: the C compiler cannot build OpenMP code (-fopenmp, omp.h, libgomp/libomp),"
                 " which every host kernel is built with: %s",
                 why);
        h->omp_err = join_log(head, r.out);
        h->omp_st = r.spawn_errno ? KF_ERR_NOT_FOUND : KF_ERR_UNSUPPORTED;
    }
    free(r.out);
    unlink(src);
    unlink(so);
    return h->omp_st;
}

static kf_status read_blob(const char *path, void **blob, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return KF_ERR_IO;
    kf_status st = KF_ERR_IO;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || sb.st_size <= 0 || (uint64_t)sb.st_size > HOST_BLOB_MAX)
        goto close_fd;
    size_t n = (size_t)sb.st_size, got = 0;
    char *p = malloc(n);
    if (!p) {
        st = KF_ERR_NOMEM;
        goto close_fd;
    }
    while (got < n) {
        ssize_t k = read(fd, p + got, n - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    if (got != n) {
        free(p);
        goto close_fd;
    }
    *blob = p;
    *len = n;
    st = KF_OK;
close_fd:
    close(fd);
    return st;
}

/* Run one compiler step. KF_OK: *out holds its output (warnings, often ""); otherwise *out says
 * why, followed by the output. */
static kf_status cc_step(const host_self *h, const char *const *args, int na, const char *what,
                         char **out)
{
    proc_result r;
    *out = NULL;
    if (run_cc(h, args, na, h->timeout_ms, &r) != KF_OK) {
        *out = strdup("host: out of memory");
        return KF_ERR_NOMEM;
    }
    if (ran_ok(&r)) {
        *out = r.out;
        return KF_OK;
    }
    char why[600], head[760];
    describe_exit(h, &r, why, sizeof why);
    snprintf(head, sizeof head, "host: compile failed%s%s%s: %s", what ? " (" : "",
             what ? what : "", what ? ")" : "", why);
    *out = join_log(head, r.out);
    free(r.out);
    return r.spawn_errno ? KF_ERR_NOT_FOUND : KF_ERR_KERNEL;
}

/* A whole file as a NUL-terminated string. */
static kf_status read_text(const char *path, char **text)
{
    void *p = NULL;
    size_t n = 0;
    kf_status st = read_blob(path, &p, &n);
    if (st != KF_OK) return st;
    char *t = realloc(p, n + 1);
    if (!t) {
        free(p);
        return KF_ERR_NOMEM;
    }
    t[n] = 0;
    *text = t;
    return KF_OK;
}

static kf_status host_compile(void *self, const char *source, const kf_launch *launch,
                              const char *arch, void **blob, size_t *blob_len, char **log)
{
    host_self *h = self;
    (void)arch; /* always -march=native: the arch string only keys the cache */
    char err[512];
    kf_status st;
    char *src_text = NULL, *pp_log = NULL, *pp_text = NULL;
    if (log) *log = NULL;
    if (blob) *blob = NULL;
    if (blob_len) *blob_len = 0;
    if (!source || !launch || !blob || !blob_len) {
        if (log) *log = strdup("host: compile: missing argument");
        return KF_ERR_INVALID;
    }
    if (launch->n_args < 1 || launch->n_args > KF_LAUNCH_MAX_ARGS ||
        strnlen(launch->entry, KF_ENTRY_MAX) == KF_ENTRY_MAX) {
        if (log) *log = strdup("host: compile: malformed launch record");
        return KF_ERR_INVALID;
    }
    if (!kf_source_check_backend(source, "host", err, sizeof err)) {
        if (log) *log = kf_aprintf("host: compile: refused: %s", err);
        return KF_ERR_INVALID;
    }
    src_text = with_trampoline(source, launch, err, sizeof err);
    if (!src_text) {
        if (log) *log = kf_aprintf("host: compile: %s", err);
        return KF_ERR_INVALID;
    }

    char dir[4096];
    snprintf(dir, sizeof dir, "%s/kforge-cc-XXXXXX", tmp_root());
    if (!mkdtemp(dir)) {
        if (log) *log = kf_aprintf("host: cannot create a temp dir in %s: %s", tmp_root(),
                                strerror(errno));
        st = KF_ERR_IO;
        goto free_src;
    }

    pthread_mutex_lock(&h->lock);
    st = check_openmp(h, dir);
    if (st != KF_OK && log)
        *log = h->omp_err ? strdup(h->omp_err)
                          : kf_aprintf("host: cannot check OpenMP support: %s", kf_status_str(st));
    pthread_mutex_unlock(&h->lock);
    if (st != KF_OK) goto remove_tmp;

    char src[4200], pre[4200], so[4200];
    snprintf(src, sizeof src, "%s/kernel.c", dir);
    snprintf(pre, sizeof pre, "%s/kernel.i", dir);
    snprintf(so, sizeof so, "%s/kernel.so", dir);
    if (write_file(src, src_text, strlen(src_text)) != KF_OK) {
        if (log) *log = kf_aprintf("host: cannot write %s: %s", src, strerror(errno));
        st = KF_ERR_IO;
        goto remove_tmp;
    }
    const char *args[20];
    int na = cc_args(args, NULL, pre, src);
    st = cc_step(h, args, na, "preprocessor", &pp_log);
    if (st != KF_OK) {
        if (log) *log = pp_log;
        pp_log = NULL;
        goto remove_tmp;
    }
    st = read_text(pre, &pp_text);
    if (st != KF_OK) {
        if (log) *log = kf_aprintf("host: cannot read the preprocessed %s", pre);
        goto remove_tmp;
    }
    if (!kf_source_check_preprocessed(pp_text, err, sizeof err)) {
        if (log) *log = kf_aprintf("host: compile: refused: %s", err);
        st = KF_ERR_INVALID;
        goto remove_tmp;
    }
    na = cc_args(args, so, NULL, pre);
    char *cc_log = NULL;
    st = cc_step(h, args, na, NULL, &cc_log);
    if (log && pp_log && *pp_log && cc_log) {
        /* the preprocessor's warnings (#warning) too: after a failure's reason, else first */
        *log = st == KF_OK ? join_log(pp_log, *cc_log ? cc_log : NULL) : join_log(cc_log, pp_log);
        free(cc_log);
    } else if (log) {
        *log = cc_log;
    } else {
        free(cc_log);
    }
    if (st != KF_OK) goto remove_tmp;
    st = read_blob(so, blob, blob_len);
    if (st != KF_OK && log) {
        free(*log);
        *log = kf_aprintf("host: cannot read the compiled %s", so);
    }

remove_tmp:
    remove_dir(dir);
free_src:
    free(pp_log);
    free(pp_text);
    free(src_text);
    return st;
}

/* ---- load / launch / unload ---- */

/* libgomp (and LLVM's libomp) keep worker threads parked inside the library; if dlclose of the
 * last kernel unloaded it, those threads would return into unmapped code. Pin them. */
static void pin_openmp_runtime(void)
{
    static const char *const names[] = {"libgomp.so.1", "libomp.so", "libomp.so.5"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *p = dlopen(names[i], RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
        if (p) dlclose(p);
    }
}

static kf_status host_load(void *self, const void *blob, size_t blob_len, const kf_launch *launch,
                           int device_index, kf_compiled **out, char *err, size_t errcap)
{
    (void)self;
    (void)device_index;
    kf_status st = KF_ERR_INVALID;
    if (out) *out = NULL;
    if (!blob || !launch || !out || blob_len < 4 || memcmp(blob, "\x7f" "ELF", 4) != 0) {
        snprintf(err, errcap, "host: load: not a shared object (missing or bad blob)");
        return KF_ERR_INVALID;
    }
    if (launch->n_args < 1 || launch->n_args > KF_LAUNCH_MAX_ARGS) {
        snprintf(err, errcap, "host: load: malformed launch record");
        return KF_ERR_INVALID;
    }
    host_kernel *k = calloc(1, sizeof *k);
    if (!k) {
        snprintf(err, errcap, "host: load: out of memory");
        return KF_ERR_NOMEM;
    }
    k->magic = HOST_MAGIC;
    k->n_args = launch->n_args + launch->n_ints; /* pointers, then launch-time sizes */
    k->fd = -1;

    /* Preferred: an anonymous memfd, kept open while loaded. glibc also finds loaded objects by
     * name, so /proc/self/fd/N must not be reused for another image while this one lives. */
    k->fd = memfd_create("kforge-host-kernel", MFD_CLOEXEC);
    if (k->fd >= 0) {
        snprintf(k->path, sizeof k->path, "/proc/self/fd/%d", k->fd);
    } else {
        /* Fallback: a file in a private dir, removed at unload. */
        snprintf(k->tmpdir, sizeof k->tmpdir, "%s/kforge-so-XXXXXX", tmp_root());
        if (!mkdtemp(k->tmpdir)) {
            snprintf(err, errcap, "host: load: no memfd and no temp dir: %s", strerror(errno));
            k->tmpdir[0] = 0;
            st = KF_ERR_IO;
            goto free_k;
        }
        snprintf(k->path, sizeof k->path, "%s/kernel.so", k->tmpdir);
    }
    if (k->fd >= 0) {
        const char *p = blob;
        size_t left = blob_len;
        while (left) {
            ssize_t n = write(k->fd, p, left);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                snprintf(err, errcap, "host: load: cannot write the image: %s", strerror(errno));
                st = KF_ERR_IO;
                goto free_k;
            }
            p += n, left -= (size_t)n;
        }
    } else if (write_file(k->path, blob, blob_len) != KF_OK) {
        snprintf(err, errcap, "host: load: cannot write %s: %s", k->path, strerror(errno));
        st = KF_ERR_IO;
        goto free_k;
    }

    dlerror();
    k->dl = dlopen(k->path, RTLD_NOW | RTLD_LOCAL);
    if (!k->dl) {
        const char *why = dlerror();
        snprintf(err, errcap, "host: load: dlopen failed: %s", why ? why : "unknown error");
        st = KF_ERR_KERNEL;
        goto free_k;
    }
    pin_openmp_runtime();
    *(void **)&k->tramp = dlsym(k->dl, "kf_tramp");
    if (!k->tramp) {
        snprintf(err, errcap, "host: load: the shared object has no kf_tramp (not built by the "
                              "host backend?)");
        st = KF_ERR_KERNEL;
        goto close_dl;
    }
    *out = (kf_compiled *)k;
    return KF_OK;

close_dl:
    dlclose(k->dl);
free_k:
    if (k->fd >= 0) close(k->fd);
    if (k->tmpdir[0]) remove_dir(k->tmpdir);
    free(k);
    return st;
}

static int host_launch(void *self, kf_compiled *kc, void *const *ptrs, int n, void *stream)
{
    (void)self;
    (void)stream; /* host kernels run synchronously on the calling thread (plus OpenMP) */
    host_kernel *k = (host_kernel *)kc;
    if (!k || k->magic != HOST_MAGIC || !ptrs || n != k->n_args) return -1;
    return k->tramp(ptrs);
}

static void host_unload(void *self, kf_compiled *kc)
{
    (void)self;
    host_kernel *k = (host_kernel *)kc;
    if (!k) return;
    if (k->magic != HOST_MAGIC) {
        KF_ERROR("host compiler: unload of a kernel this backend did not load");
        return;
    }
    dlclose(k->dl);
    /* If the object stayed loaded after all (something holds a reference), its name must stay
     * unique: keep the fd (or file) rather than let a later image be mistaken for it. */
    void *still = dlopen(k->path, RTLD_NOW | RTLD_NOLOAD);
    if (still) {
        dlclose(still);
        KF_DEBUG("host compiler: %s still loaded after dlclose; keeping it", k->path);
    } else {
        if (k->fd >= 0) close(k->fd);
        if (k->tmpdir[0]) remove_dir(k->tmpdir);
    }
    k->magic = 0;
    free(k);
}

static void host_destroy(void *self)
{
    host_self *h = self;
    if (!h) return;
    pthread_mutex_destroy(&h->lock);
    free(h->omp_err);
    free(h);
}

kf_status kf_compiler_host_create(kf_compiler_i *out, const char *cc)
{
    if (!out) return KF_ERR_INVALID;
    memset(out, 0, sizeof *out);
    if (!cc || !*cc) cc = getenv("CC");
    if (!cc || !*cc) cc = "cc";
    host_self *h = calloc(1, sizeof *h);
    if (!h) return KF_ERR_NOMEM;
    if (strlen(cc) >= sizeof h->cc_buf) {
        free(h);
        return KF_ERR_INVALID;
    }
    /* "ccache gcc" works: the command is split on blanks (never given to a shell) */
    strcpy(h->cc_buf, cc);
    for (char *save = NULL, *t = strtok_r(h->cc_buf, " \t", &save); t;
         t = strtok_r(NULL, " \t", &save)) {
        if (h->cc_argc == HOST_CC_WORDS) {
            free(h);
            return KF_ERR_INVALID;
        }
        h->cc_argv[h->cc_argc++] = t;
    }
    if (h->cc_argc == 0) {
        free(h);
        return KF_ERR_INVALID;
    }
    h->timeout_ms = HOST_TIMEOUT_MS;
    const char *t = getenv("KFORGE_CC_TIMEOUT");
    if (t && *t) {
        char *end;
        double sec = strtod(t, &end);
        if (*end == 0 && sec >= 0.1 && sec <= 3600)
            h->timeout_ms = (int)(sec * 1000);
        else
            KF_WARN("KFORGE_CC_TIMEOUT=%s ignored: seconds in 0.1..3600 expected", t);
    }
    pthread_mutex_init(&h->lock, NULL);

    *out = (kf_compiler_i){
        /* .name      = */ "host",
        /* .toolchain = */ host_toolchain,
        /* .arch      = */ host_arch,
        /* .compile   = */ host_compile,
        /* .load      = */ host_load,
        /* .launch    = */ host_launch,
        /* .unload    = */ host_unload,
        /* .destroy   = */ host_destroy,
        /* .self      = */ h,
    };
    return KF_OK;
}
