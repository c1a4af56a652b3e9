#include "common/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The log sink is process-wide by nature (like ggml_log_set): one callback for every subsystem.
 * The callback and its user pointer are published together through one atomic pointer. */
typedef struct kf_log_sink {
    kf_log_fn fn;
    void *user;
} kf_log_sink;

static _Atomic(kf_log_sink *) g_sink;
static _Atomic int g_level = -1;

/* Messages logged while the library loads, before the Python package could install its sink,
 * are held here when KFORGE_LOG_DEFER is set (the package sets it around its own load) and
 * replayed into the sink; a plain torch.ops.load_library prints them to stderr at once. */
#define KF_LOG_DEFER_MAX 32
static struct {
    pthread_mutex_t lock;
    int n;
    int level[KF_LOG_DEFER_MAX];
    char *msg[KF_LOG_DEFER_MAX];
} g_deferred = {PTHREAD_MUTEX_INITIALIZER, 0, {0}, {0}};

int kf_log_level_from_env(void)
{
    const char *s = getenv("KFORGE_LOG");
    if (!s || !*s) return KF_LOG_WARNING;
    if (!strcmp(s, "debug")) return KF_LOG_DEBUG;
    if (!strcmp(s, "info")) return KF_LOG_INFO;
    if (!strcmp(s, "warning") || !strcmp(s, "warn")) return KF_LOG_WARNING;
    if (!strcmp(s, "error")) return KF_LOG_ERROR;
    return KF_LOG_WARNING;
}

void kf_set_log_level(int level)
{
    atomic_store(&g_level, level);
}

int kf_log_enabled(int level)
{
    int cur = atomic_load_explicit(&g_level, memory_order_relaxed);
    if (cur < 0) {
        cur = kf_log_level_from_env();
        atomic_store(&g_level, cur);
    }
    return level >= cur;
}

void kf_set_log_callback(kf_log_fn fn, void *user)
{
    kf_log_sink *next = NULL;
    if (fn) {
        next = malloc(sizeof *next);
        if (!next) return;
        next->fn = fn;
        next->user = user;
    }
    /* The old sink is leaked on purpose: another thread may be calling it right now, and a
     * process sets its sink a handful of times at most. */
    atomic_store(&g_sink, next);
    if (!next) return;
    pthread_mutex_lock(&g_deferred.lock);
    for (int i = 0; i < g_deferred.n; i++) {
        next->fn(g_deferred.level[i], g_deferred.msg[i], next->user);
        free(g_deferred.msg[i]);
    }
    g_deferred.n = 0;
    pthread_mutex_unlock(&g_deferred.lock);
}

static int defer(int level, const char *msg)
{
    const char *d = getenv("KFORGE_LOG_DEFER");
    if (!d || strcmp(d, "1") != 0) return 0;
    pthread_mutex_lock(&g_deferred.lock);
    if (g_deferred.n < KF_LOG_DEFER_MAX) {
        g_deferred.msg[g_deferred.n] = strdup(msg);
        if (g_deferred.msg[g_deferred.n]) g_deferred.level[g_deferred.n++] = level;
    }
    pthread_mutex_unlock(&g_deferred.lock);
    return 1;
}

char *kf_aprintf(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return strdup(buf);
}

void kf_log(int level, const char *fmt, ...)
{
    if (!kf_log_enabled(level)) return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    kf_log_sink *sink = atomic_load(&g_sink);
    if (sink) {
        sink->fn(level, buf, sink->user);
        return;
    }
    if (defer(level, buf)) return;
    static const char *names[] = {"debug", "info", "warning", "error"};
    fprintf(stderr, "kforge %s: %s\n", names[level < 0 ? 0 : level > 3 ? 3 : level], buf);
}
