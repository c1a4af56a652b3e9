/* The evaluator child and its parent's side of the protocol (evaluator.h).
 *
 * The parent starts `EXE --eval JOB_DIR` with posix_spawn (its stdin and stdout are pipes, its
 * stderr is ours) and waits for one line, {"ready": true} or {"ready": false, "error": ...}. A
 * request is one JSON line {"id": n, "blob": path, "launch": "<launch record text>"}; the reply is
 * one JSON line with the same id and the kf_eval_result fields, plus "fatal": true when the child
 * is about to exit because its CUDA context broke. Anything else the child does (dies, hangs,
 * writes garbage or an endless line) is noticed by the parent, which kills and reaps it, marks the
 * candidate and starts a fresh child for the next one. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/spawn.h"
#include "forge/eval/evaluator.h"


#define LINE_MAX_BYTES (64 * 1024)
#define START_TIMEOUT_MS (300 * 1000) /* loading every case (and CUDA) can take a while */
#define EXIT_GRACE_MS 2000            /* for a child that said it is leaving, or at free */
#define BLOB_MAX ((size_t)1 << 30)

/* ---- a bounded line reader on a file descriptor ---- */

typedef struct linebuf {
    int fd;
    size_t len;
    char buf[LINE_MAX_BYTES + 1];
} linebuf;

enum { RL_OK, RL_TIMEOUT, RL_EOF, RL_TOOLONG, RL_ERROR };

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The next line (without its '\n', NUL-terminated, in *line: valid until the next call), waiting
 * until `deadline` (ms, CLOCK_MONOTONIC; < 0: forever). A line longer than LINE_MAX_BYTES is
 * RL_TOOLONG: the reader is then unusable. */
static int read_line(linebuf *lb, int64_t deadline, char **line, size_t *consumed)
{
    for (;;) {
        char *nl = memchr(lb->buf, '\n', lb->len);
        if (nl) {
            *nl = 0;
            *line = lb->buf;
            *consumed = (size_t)(nl - lb->buf) + 1;
            return RL_OK;
        }
        if (lb->len >= LINE_MAX_BYTES) return RL_TOOLONG;
        int wait_ms = -1;
        if (deadline >= 0) {
            int64_t left = deadline - now_ms();
            if (left <= 0) return RL_TIMEOUT;
            wait_ms = left > 1000 ? 1000 : (int)left;
        }
        struct pollfd p = {.fd = lb->fd, .events = POLLIN};
        int pr = poll(&p, 1, wait_ms);
        if (pr < 0 && errno != EINTR) return RL_ERROR;
        if (pr <= 0) continue;
        ssize_t n = read(lb->fd, lb->buf + lb->len, LINE_MAX_BYTES - lb->len);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n < 0) return RL_ERROR;
        if (n == 0) return RL_EOF;
        lb->len += (size_t)n;
    }
}

/* Drop the line read_line returned. */
static void line_done(linebuf *lb, size_t consumed)
{
    memmove(lb->buf, lb->buf + consumed, lb->len - consumed);
    lb->len -= consumed;
}

/* Write all of `s` to fd before `deadline` (< 0: forever). A reader that is gone gives EPIPE,
 * never SIGPIPE: the signal is blocked for this thread while writing, and one raised by our write
 * is taken back before unblocking. 0 on success, else an errno. */
static int write_all(int fd, const char *s, size_t n, int64_t deadline)
{
    sigset_t pipe_set, old, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    sigpending(&pending);
    int was_pending = sigismember(&pending, SIGPIPE);
    int rc = 0;
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w > 0) {
            s += w, n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && errno != EAGAIN) {
            rc = errno;
            break;
        }
        int wait_ms = -1;
        if (deadline >= 0) {
            int64_t left = deadline - now_ms();
            if (left <= 0) {
                rc = ETIMEDOUT;
                break;
            }
            wait_ms = left > 1000 ? 1000 : (int)left;
        }
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        poll(&p, 1, wait_ms);
    }
    if (!was_pending) {
        sigpending(&pending);
        if (sigismember(&pending, SIGPIPE)) {
            struct timespec zero = {0, 0};
            while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR) {
            }
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

/* "killed by signal SIGSEGV (Segmentation fault)" / "exited with status 3" */
static void describe_end(int status, char *buf, size_t cap)
{
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
        const char *abbrev = sigabbrev_np(sig);
#else
        const char *abbrev = NULL;
#endif
        const char *desc = strsignal(sig);
        if (abbrev)
            snprintf(buf, cap, "killed by signal SIG%s (%s)", abbrev, desc ? desc : "?");
        else
            snprintf(buf, cap, "killed by signal %d (%s)", sig, desc ? desc : "?");
    } else if (WIFEXITED(status)) {
        snprintf(buf, cap, "exited with status %d", WEXITSTATUS(status));
    } else {
        snprintf(buf, cap, "ended abnormally (wait status 0x%x)", status);
    }
}

/* ---- the parent ---- */

#define PREFIX_MAX 16

struct kf_evaluator {
    char *job_dir, *exe;
    char *prefix[PREFIX_MAX + 1]; /* a wrapper the child runs under (NULL-terminated) */
    int exit_grace_ms;
    pid_t pid; /* 0: no child */
    int to_child;
    linebuf from;
    int restarts;
    double next_id;
};

kf_status kf_evaluator_create(const kf_job *job, const char *exe, kf_evaluator **out, char *err,
                              size_t errcap)
{
    char dummy[1];
    if (!err || !errcap) err = dummy, errcap = sizeof dummy;
    err[0] = 0;
    if (out) *out = NULL;
    if (!job || !job->dir || !exe || !*exe || !out) {
        snprintf(err, errcap, "evaluator: missing argument");
        return KF_ERR_INVALID;
    }
    kf_evaluator *ev = calloc(1, sizeof *ev);
    if (!ev) goto nomem;
    ev->job_dir = strdup(job->dir);
    ev->exe = strdup(exe);
    if (!ev->job_dir || !ev->exe) goto nomem;
    ev->to_child = ev->from.fd = -1;
    ev->next_id = 1;
    ev->exit_grace_ms = EXIT_GRACE_MS;
    *out = ev;
    return KF_OK;
nomem:
    if (ev) free(ev->job_dir), free(ev->exe);
    free(ev);
    snprintf(err, errcap, "evaluator: out of memory");
    return KF_ERR_NOMEM;
}

/* End the child: SIGKILL unless it is leaving by itself within `grace_ms`; always reaped. The
 * wait status goes to *status. */
static void child_end(kf_evaluator *ev, int grace_ms, int *status)
{
    int st = 0;
    if (ev->to_child >= 0) close(ev->to_child);
    if (ev->from.fd >= 0) close(ev->from.fd);
    ev->to_child = ev->from.fd = -1;
    ev->from.len = 0;
    if (ev->pid <= 0) return;
    int64_t deadline = now_ms() + grace_ms;
    int reaped = 0;
    while (grace_ms > 0) {
        pid_t w = waitpid(ev->pid, &st, WNOHANG);
        if (w == ev->pid || (w < 0 && errno != EINTR)) {
            reaped = 1;
            break;
        }
        if (now_ms() >= deadline) break;
        struct timespec ts = {0, 5 * 1000000};
        nanosleep(&ts, NULL);
    }
    if (!reaped) {
        kill(-ev->pid, SIGKILL); /* its process group: anything a kernel started goes too */
        kill(ev->pid, SIGKILL);
        while (waitpid(ev->pid, &st, 0) < 0 && errno == EINTR) {
        }
    }
    ev->pid = 0;
    if (status) *status = st;
}

static void set_result(kf_eval_result *res, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_result(kf_eval_result *res, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->error, sizeof res->error, fmt, ap);
    va_end(ap);
    res->status = status;
}

static kf_status code_from_int(int c)
{
    return c > 0 && c <= KF_ERR_IO ? (kf_status)c : KF_ERR_IO;
}

/* Spawn the child and wait for its ready line. On failure res says why (CRASH). */
static kf_status child_start(kf_evaluator *ev, kf_eval_result *res)
{
    int in[2] = {-1, -1}, outp[2] = {-1, -1};
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(outp, O_CLOEXEC) != 0) {
        set_result(res, KF_NODE_CRASH, "cannot start the evaluator: pipe: %s", strerror(errno));
        if (in[0] >= 0) close(in[0]), close(in[1]);
        return KF_ERR_IO;
    }
    char *argv[PREFIX_MAX + 4];
    int a = 0;
    while (ev->prefix[a]) argv[a] = ev->prefix[a], a++;
    argv[a++] = ev->exe, argv[a++] = (char *)"--eval", argv[a++] = ev->job_dir, argv[a] = NULL;
    pid_t pid;
    int rc = kf_spawn(&pid, argv, 0, (const int[3]){in[0], outp[1], KF_SPAWN_INHERIT});
    close(in[0]);
    close(outp[1]);
    if (rc != 0) {
        close(in[1]);
        close(outp[0]);
        set_result(res, KF_NODE_CRASH, "cannot start the evaluator %s --eval %s: %s", argv[0],
                   ev->job_dir, strerror(rc));
        return KF_ERR_IO;
    }
    ev->pid = pid;
    ev->to_child = in[1];
    ev->from.fd = outp[0];
    ev->from.len = 0;
    fcntl(ev->to_child, F_SETFL, fcntl(ev->to_child, F_GETFL) | O_NONBLOCK);

    char *line, why[160];
    size_t used;
    int st;
    int r = read_line(&ev->from, now_ms() + START_TIMEOUT_MS, &line, &used);
    if (r != RL_OK) {
        child_end(ev, r == RL_EOF ? EXIT_GRACE_MS : 0, &st);
        describe_end(st, why, sizeof why);
        if (r == RL_TIMEOUT)
            set_result(res, KF_NODE_CRASH, "the evaluator did not start within %d s",
                       START_TIMEOUT_MS / 1000);
        else
            set_result(res, KF_NODE_CRASH, "the evaluator %s while starting", why);
        return KF_ERR_IO;
    }
    cJSON *j = cJSON_Parse(line);
    line_done(&ev->from, used);
    const cJSON *ready = cJSON_GetObjectItemCaseSensitive(j, "ready");
    if (cJSON_IsTrue(ready)) {
        cJSON_Delete(j);
        return KF_OK;
    }
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
    const cJSON *code = cJSON_GetObjectItemCaseSensitive(j, "code");
    kf_status ret = code_from_int(cJSON_IsNumber(code) ? code->valueint : KF_ERR_IO);
    if (cJSON_IsString(e))
        set_result(res, KF_NODE_CRASH, "the evaluator cannot start: %s", e->valuestring);
    else
        set_result(res, KF_NODE_CRASH, "the evaluator sent a malformed ready line");
    cJSON_Delete(j);
    child_end(ev, EXIT_GRACE_MS, NULL);
    return ret;
}

static double num_or(const cJSON *o, const char *name, double if_null)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsNumber(v) ? v->valuedouble : if_null;
}

/* Fill res from a reply line; 0 when the line is not a reply to request `id`. */
static int parse_reply(const char *line, double id, kf_eval_result *res, int *fatal)
{
    cJSON *j = cJSON_Parse(line);
    const cJSON *rid = cJSON_GetObjectItemCaseSensitive(j, "id");
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "status");
    const cJSON *er = cJSON_GetObjectItemCaseSensitive(j, "error");
    const cJSON *fc = cJSON_GetObjectItemCaseSensitive(j, "failed_case");
    int status = -1;
    if (cJSON_IsString(st))
        for (int s = 0; s < KF_NODE_STATUS_COUNT; s++)
            if (!strcmp(st->valuestring, kf_node_status_name(s))) status = s;
    if (!cJSON_IsObject(j) || !cJSON_IsNumber(rid) || rid->valuedouble != id || status < 0 ||
        (er && !cJSON_IsString(er)) || !cJSON_IsNumber(fc)) {
        cJSON_Delete(j);
        return 0;
    }
    res->status = status;
    snprintf(res->error, sizeof res->error, "%s", er ? er->valuestring : "");
    res->failed_case = fc->valueint;
    res->max_abs_err = num_or(j, "max_abs_err", INFINITY); /* JSON has no inf: null */
    res->max_rel_err = num_or(j, "max_rel_err", INFINITY);
    res->median_us = num_or(j, "median_us", 0);
    res->min_us = num_or(j, "min_us", 0);
    res->reps = (int)num_or(j, "reps", 0);
    *fatal = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "fatal"));
    cJSON_Delete(j);
    return 1;
}

kf_status kf_evaluator_run(kf_evaluator *ev, const char *blob_path, const char *launch_json,
                           double timeout_s, kf_eval_result *res)
{
    if (!res) return KF_ERR_INVALID;
    memset(res, 0, sizeof *res);
    res->failed_case = -1;
    if (!ev || !blob_path || !launch_json || !(timeout_s > 0)) {
        set_result(res, KF_NODE_CRASH, "evaluator: missing argument");
        return KF_ERR_INVALID;
    }
    kf_launch l;
    char err[384];
    if (kf_launch_parse(launch_json, &l, err, sizeof err) != KF_OK) {
        set_result(res, KF_NODE_LOAD_ERROR, "%s", err);
        return KF_OK;
    }

    double id = ev->next_id++;
    cJSON *req = cJSON_CreateObject();
    char *text = NULL;
    if (req && cJSON_AddNumberToObject(req, "id", id) &&
        cJSON_AddStringToObject(req, "blob", blob_path) &&
        cJSON_AddStringToObject(req, "launch", launch_json))
        text = cJSON_PrintUnformatted(req);
    cJSON_Delete(req);
    size_t tl = text ? strlen(text) : 0;
    char *msg = text ? malloc(tl + 2) : NULL;
    if (msg) memcpy(msg, text, tl), msg[tl] = '\n', msg[tl + 1] = 0;
    cJSON_free(text);
    if (!msg) {
        set_result(res, KF_NODE_CRASH, "evaluator: out of memory");
        return KF_ERR_NOMEM;
    }
    if (tl + 1 > LINE_MAX_BYTES) {
        free(msg);
        set_result(res, KF_NODE_LOAD_ERROR, "the request is longer than %d bytes", LINE_MAX_BYTES);
        return KF_OK;
    }

    /* A child that died while idle shows up as a failed write: replace it once. */
    kf_status st = KF_OK;
    int wrc = EPIPE;
    for (int attempt = 0; attempt < 2 && wrc == EPIPE; attempt++) {
        if (!ev->pid && (st = child_start(ev, res)) != KF_OK) goto free_msg;
        wrc = write_all(ev->to_child, msg, tl + 1, now_ms() + START_TIMEOUT_MS);
        if (wrc == EPIPE) {
            child_end(ev, EXIT_GRACE_MS, NULL);
            ev->restarts++;
        }
    }
    if (wrc) {
        child_end(ev, 0, NULL);
        ev->restarts++;
        set_result(res, KF_NODE_CRASH, "cannot send the request to the evaluator: %s",
                   strerror(wrc));
        goto free_msg;
    }

    int64_t deadline = now_ms() + (int64_t)(timeout_s * 1000.0);
    char *line, why[160];
    size_t used;
    int status = 0, fatal = 0;
    int r = read_line(&ev->from, deadline, &line, &used);
    switch (r) {
    case RL_OK:
        if (parse_reply(line, id, res, &fatal)) {
            line_done(&ev->from, used);
            if (fatal) {
                child_end(ev, ev->exit_grace_ms, NULL); /* it is leaving after a CUDA error */
                ev->restarts++;
            } else if (ev->from.len) {
                /* bytes after the reply: something in the child writes to our channel */
                KF_WARN("evaluator: %zu unexpected bytes after a reply; restarting it",
                        ev->from.len);
                child_end(ev, 0, NULL);
                ev->restarts++;
            }
            break;
        }
        child_end(ev, 0, NULL);
        ev->restarts++;
        set_result(res, KF_NODE_CRASH, "the evaluator sent a malformed reply: '%.80s'", line);
        break;
    case RL_TIMEOUT:
        child_end(ev, 0, NULL);
        ev->restarts++;
        set_result(res, KF_NODE_TIMEOUT, "ran past the %g s candidate timeout", timeout_s);
        break;
    case RL_TOOLONG:
        child_end(ev, 0, NULL);
        ev->restarts++;
        set_result(res, KF_NODE_CRASH, "the evaluator sent a line longer than %d bytes",
                   LINE_MAX_BYTES);
        break;
    default: /* EOF or a read error: the child is gone or going */
        child_end(ev, r == RL_EOF ? EXIT_GRACE_MS : 0, &status);
        ev->restarts++;
        describe_end(status, why, sizeof why);
        set_result(res, KF_NODE_CRASH, "evaluator %s", why);
        break;
    }
free_msg:
    free(msg);
    return st;
}

int kf_evaluator_restarts(const kf_evaluator *ev)
{
    return ev ? ev->restarts : 0;
}

kf_status kf_evaluator_set_prefix(kf_evaluator *ev, const char *const *prefix, int exit_grace_ms)
{
    if (!ev || ev->pid) return KF_ERR_INVALID;
    for (int i = 0; ev->prefix[i]; i++) free(ev->prefix[i]), ev->prefix[i] = NULL;
    for (int i = 0; prefix && prefix[i]; i++) {
        if (i == PREFIX_MAX || !(ev->prefix[i] = strdup(prefix[i]))) {
            for (int k = 0; k < i; k++) free(ev->prefix[k]), ev->prefix[k] = NULL;
            return i == PREFIX_MAX ? KF_ERR_INVALID : KF_ERR_NOMEM;
        }
    }
    ev->exit_grace_ms = exit_grace_ms > 0 ? exit_grace_ms : EXIT_GRACE_MS;
    return KF_OK;
}

void kf_evaluator_free(kf_evaluator *ev)
{
    if (!ev) return;
    child_end(ev, ev->exit_grace_ms, NULL); /* closing its stdin tells it to leave */
    for (int i = 0; ev->prefix[i]; i++) free(ev->prefix[i]);
    free(ev->job_dir);
    free(ev->exe);
    free(ev);
}

/* ---- the child ---- */

static kf_status read_blob(const char *path, void **out, size_t *len, char *err, size_t errcap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errcap, "cannot open the compiled kernel %s: %s", path, strerror(errno));
        return KF_ERR_IO;
    }
    kf_status st = KF_ERR_IO;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size <= 0 ||
        (uint64_t)sb.st_size > BLOB_MAX) {
        snprintf(err, errcap, "the compiled kernel %s is not a regular file of 1 byte..1 GB",
                 path);
        goto close_fd;
    }
    size_t n = (size_t)sb.st_size, got = 0;
    char *p = malloc(n);
    if (!p) {
        snprintf(err, errcap, "out of memory reading %s", path);
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
        snprintf(err, errcap, "short read of %s", path);
        free(p);
        goto close_fd;
    }
    *out = p;
    *len = n;
    st = KF_OK;
close_fd:
    close(fd);
    return st;
}

/* Evaluate one request; returns kf_eval_run's status (KF_ERR_CUDA: the context is gone). */
static kf_status child_eval(const kf_job *job, kf_eval *ev, const char *blob_path,
                            const char *launch_json, kf_eval_result *res)
{
    char err[512];
    void *blob = NULL;
    size_t blob_len = 0;
    kf_launch l;
    kf_compiler_i cc;
    kf_compiled *k = NULL;
    kf_status st = KF_OK;
    memset(res, 0, sizeof *res);
    res->failed_case = -1;
    res->status = KF_NODE_LOAD_ERROR;

    if (kf_launch_parse(launch_json, &l, err, sizeof err) != KF_OK) {
        snprintf(res->error, sizeof res->error, "%s", err);
        return KF_OK;
    }
    if (read_blob(blob_path, &blob, &blob_len, err, sizeof err) != KF_OK) {
        snprintf(res->error, sizeof res->error, "%s", err);
        return KF_OK;
    }
    /* a compiler just for load/launch: cheap, and nothing of it outlives the request */
    kf_status cst;
    if (!strcmp(job->backend, "nvrtc"))
        cst = kf_compiler_nvrtc_create(&cc, getenv("KFORGE_NVRTC"), getenv("KFORGE_CUDA_INCLUDE"),
                                       err, sizeof err);
    else if ((cst = kf_compiler_host_create(&cc, NULL)) != KF_OK)
        snprintf(err, sizeof err, "cannot create the host backend: %s", kf_status_str(cst));
    if (cst != KF_OK) {
        snprintf(res->error, sizeof res->error, "%s", err);
        goto free_blob;
    }
    if (cc.load(cc.self, blob, blob_len, &l, job->device_index, &k, err, sizeof err) != KF_OK) {
        snprintf(res->error, sizeof res->error, "%s", err);
        goto destroy_cc;
    }
    st = kf_eval_run(ev, &cc, k, &l, res);
    cc.unload(cc.self, k);
destroy_cc:
    cc.destroy(cc.self);
free_blob:
    free(blob);
    return st;
}

static int send_json(int fd, cJSON *j)
{
    char *text = j ? cJSON_PrintUnformatted(j) : NULL;
    if (!text) return -1;
    size_t n = strlen(text);
    int rc = write_all(fd, text, n, -1) || write_all(fd, "\n", 1, -1) ? -1 : 0;
    cJSON_free(text);
    return rc;
}

static int send_reply(int fd, double id, const kf_eval_result *r, int fatal)
{
    cJSON *j = cJSON_CreateObject();
    if (!j) return -1;
    cJSON_AddNumberToObject(j, "id", id);
    cJSON_AddStringToObject(j, "status", kf_node_status_name(r->status));
    cJSON_AddStringToObject(j, "error", r->error);
    cJSON_AddNumberToObject(j, "failed_case", r->failed_case);
    cJSON_AddNumberToObject(j, "max_abs_err", r->max_abs_err);
    cJSON_AddNumberToObject(j, "max_rel_err", r->max_rel_err);
    cJSON_AddNumberToObject(j, "median_us", r->median_us);
    cJSON_AddNumberToObject(j, "min_us", r->min_us);
    cJSON_AddNumberToObject(j, "reps", r->reps);
    cJSON_AddBoolToObject(j, "fatal", fatal);
    int rc = send_json(fd, j);
    cJSON_Delete(j);
    return rc;
}

/* A host candidate's access to a guard page ends the child by SIGSEGV/SIGBUS; the handler turns
 * it into an OOB reply (the child then leaves, as after a CUDA error) when the address is one of
 * the evaluator's guard pages, and lets any other fault kill the child as before. A handler gets
 * no argument, hence this file-level state; the child runs one request at a time. */
static struct {
    const kf_eval *ev;
    int fd;
    volatile sig_atomic_t active;
    volatile uint64_t id;
} fault_ctx;

static size_t put_str(char *o, size_t n, size_t cap, const char *s)
{
    while (*s && n + 1 < cap) o[n++] = *s++;
    return n;
}

static size_t put_int(char *o, size_t n, size_t cap, int64_t v)
{
    char d[24];
    int k = 0;
    uint64_t u = v < 0 ? (uint64_t)-v : (uint64_t)v;
    do d[k++] = (char)('0' + u % 10), u /= 10;
    while (u);
    if (v < 0 && n + 1 < cap) o[n++] = '-';
    while (k && n + 1 < cap) o[n++] = d[--k];
    return n;
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)uc;
    char msg[400], line[640];
    int c = -1;
    if (!fault_ctx.active || !kf_eval_fault_describe(fault_ctx.ev, si->si_addr, msg, sizeof msg, &c))
        return; /* SA_RESETHAND restored the default: the access faults again and kills us */
    size_t n = put_str(line, 0, sizeof line, "{\"id\":");
    n = put_int(line, n, sizeof line, (int64_t)fault_ctx.id);
    n = put_str(line, n, sizeof line, ",\"status\":\"oob\",\"error\":\"");
    n = put_str(line, n, sizeof line, msg); /* digits, letters, spaces, ()-,: only */
    n = put_str(line, n, sizeof line, "\",\"failed_case\":");
    n = put_int(line, n, sizeof line, c);
    n = put_str(line, n, sizeof line, ",\"max_abs_err\":0,\"max_rel_err\":0,\"fatal\":true}\n");
    for (size_t off = 0; off < n;) {
        ssize_t w = write(fault_ctx.fd, line + off, n - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        off += (size_t)w;
    }
    _exit(4);
}

/* The OOB handler on an alternate stack (a stack overflow faults too, and must still end us). */
static void install_fault_handler(void *altstack, size_t len)
{
    stack_t ss = {.ss_sp = altstack, .ss_size = len, .ss_flags = 0};
    if (!altstack || sigaltstack(&ss, NULL) != 0) return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
}

static int send_ready(int fd, int ok, kf_status code, const char *error)
{
    cJSON *j = cJSON_CreateObject();
    if (!j) return -1;
    cJSON_AddBoolToObject(j, "ready", ok);
    if (!ok) {
        cJSON_AddStringToObject(j, "error", error);
        cJSON_AddNumberToObject(j, "code", code);
    }
    int rc = send_json(fd, j);
    cJSON_Delete(j);
    return rc;
}

int kf_evaluator_child_main(const char *job_dir)
{
    /* Die with the parent; a candidate's fault must end this process by its signal (so the
     * parent can name it), so drop any handler (a sanitizer's) that would turn it into an exit
     * code. A parent that went away shows up as EPIPE, not SIGPIPE. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
    for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) signal(faults[i], SIG_DFL);
    signal(SIGPIPE, SIG_IGN);

    /* Our channel moves off fds 0/1, which get /dev/null and stderr: a kernel that prints
     * cannot corrupt the protocol. */
    int req = fcntl(0, F_DUPFD_CLOEXEC, 3), rep = fcntl(1, F_DUPFD_CLOEXEC, 3);
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (req < 0 || rep < 0 || devnull < 0) return 2;
    dup2(devnull, 0);
    close(devnull);
    dup2(2, 1);

    int code = 0;
    char err[512];
    kf_job *job = NULL;
    kf_eval *ev = NULL;
    linebuf *lb = NULL;
    size_t alt_len = 64 * 1024;
    void *altstack = malloc(alt_len);
    kf_status st = kf_job_load(job_dir, &job, err, sizeof err);
    if (st == KF_OK) st = kf_eval_create(job, &ev, err, sizeof err);
    if (st == KF_OK && !(lb = calloc(1, sizeof *lb))) {
        st = KF_ERR_NOMEM;
        snprintf(err, sizeof err, "out of memory");
    }
    if (st != KF_OK) {
        send_ready(rep, 0, st, err);
        code = 2;
        goto free_all;
    }
    if (send_ready(rep, 1, KF_OK, NULL) != 0) goto free_all;
    lb->fd = req;
    fault_ctx.ev = ev;
    fault_ctx.fd = rep;

    for (;;) {
        char *line;
        size_t used;
        int r = read_line(lb, -1, &line, &used);
        if (r == RL_EOF) break; /* the parent is done with us */
        if (r != RL_OK) {
            code = 2;
            break;
        }
        cJSON *j = cJSON_Parse(line);
        line_done(lb, used);
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(j, "id");
        const cJSON *blob = cJSON_GetObjectItemCaseSensitive(j, "blob");
        const cJSON *launch = cJSON_GetObjectItemCaseSensitive(j, "launch");
        if (!cJSON_IsNumber(id) || !cJSON_IsString(blob) || !cJSON_IsString(launch)) {
            cJSON_Delete(j);
            code = 2; /* the parent is ours: a bad request means a bug, not a candidate */
            break;
        }
        kf_eval_result res;
        fault_ctx.id = (uint64_t)id->valuedouble;
        install_fault_handler(altstack, alt_len); /* SA_RESETHAND: again for every request */
        fault_ctx.active = 1;
        st = child_eval(job, ev, blob->valuestring, launch->valuestring, &res);
        fault_ctx.active = 0;
        int fatal = st == KF_ERR_CUDA;
        int sent = send_reply(rep, id->valuedouble, &res, fatal);
        cJSON_Delete(j);
        if (sent != 0) break;
        if (fatal) {
            code = 3;
            break;
        }
    }
free_all:
    free(lb);
    kf_eval_free(ev); /* also after a CUDA error: the driver calls fail harmlessly */
    signal(SIGSEGV, SIG_DFL); /* no handler left to run on the alternate stack */
    signal(SIGBUS, SIG_DFL);
    stack_t off = {.ss_flags = SS_DISABLE};
    sigaltstack(&off, NULL);
    free(altstack);
    kf_job_free(job);
    close(req);
    close(rep);
    return code;
}
