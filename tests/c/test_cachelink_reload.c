/* The runtime's cache reload never waits for the folder's lock: with an entry inserted and the
 * lock then held by another process, the reload thread's look, an explicit reload and marking
 * an entry disabled (a failed first-use check) return at once without it; the entry is read,
 * and marked, once the lock is released. The thread stops cleanly when the runtime is freed. */
#include <errno.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>

#include "plugin/cachelink.h"
#include "plugin/runtime.h"
#include "tests/c/test_cache_util.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A child that inserts one entry, then takes the exclusive flock on <dir>/lock (as a stopped
 * writer would hold it), says so on `ready`, and holds it until `release` is closed. */
static pid_t insert_and_hold(const char *dir, int *release_w)
{
    int ready[2], release[2];
    if (pipe(ready) < 0 || pipe(release) < 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(ready[0]);
        close(release[1]);
        kf_cache *c = NULL;
        test_entry t;
        test_entry_init(&t, "aten::_softmax", 9);
        if (kf_cache_open(&c, dir, 0) != KF_OK || test_insert(c, &t) != KF_OK) _exit(1);
        kf_cache_free(c);
        char *lock = path_join(dir, "lock");
        int fd = open(lock, O_RDWR | O_CREAT, 0600);
        if (fd < 0 || flock(fd, LOCK_EX) < 0) _exit(1);
        if (write(ready[1], "L", 1) != 1) _exit(1);
        char b;
        while (read(release[0], &b, 1) < 0 && errno == EINTR) {
        }
        _exit(0);
    }
    close(ready[1]);
    close(release[0]);
    char b = 0;
    if (read(ready[0], &b, 1) != 1 || b != 'L') pid = -1;
    close(ready[0]);
    *release_w = release[1];
    return pid;
}

static int attached(kf_runtime *rt)
{
    pthread_mutex_lock(&rt->cache_lock);
    int n = rt->n_attached;
    pthread_mutex_unlock(&rt->cache_lock);
    return n;
}

/* Wake the reload thread now, as a call would once KFORGE_RELOAD_MS passed. */
static double nudge(kf_runtime *rt)
{
    double t0 = now_s();
    atomic_store(&rt->next_check_ns, 0);
    kf_cachelink_poll(rt);
    return now_s() - t0;
}

static void test_held_lock(void)
{
    char *dir = tmp_dir();
    char *entries = path_join(dir, "entries");
    mkdir(entries, 0700);
    free(entries);
    setenv("KFORGE_CACHE_DIR", dir, 1);
    setenv("KFORGE_RELOAD_MS", "3600000", 1); /* the thread looks only when nudged */
    static kf_config cfg;
    kf_config_from_env(&cfg);
    unsetenv("KFORGE_CACHE_DIR");
    unsetenv("KFORGE_RELOAD_MS");
    kf_runtime *rt = NULL;
    if (!CHECK_EQ_INT(kf_runtime_create(&rt, &cfg), KF_OK)) goto out;
    kf_runtime_open_cache(rt, "2.11.0");
    CHECK_EQ_INT(atomic_load(&rt->reloader_on), 1);
    CHECK_EQ_INT(attached(rt), 0); /* an empty cache */

    int release = -1;
    pid_t holder = insert_and_hold(dir, &release);
    if (!CHECK(holder > 0)) goto out;
    CHECK(nudge(rt) < 0.01); /* a poll never waits */
    sleep_ms(300);
    CHECK_EQ_INT(attached(rt), 0); /* the thread saw the new generation, found the lock held */
    double t0 = now_s();
    CHECK_EQ_INT(kf_reload_cache(rt), 0); /* an explicit reload does not wait either */
    CHECK(now_s() - t0 < 0.2);
    pthread_mutex_lock(&rt->cache_lock);
    CHECK_EQ_INT(rt->reload_retry, 1);
    pthread_mutex_unlock(&rt->cache_lock);
    test_entry t;
    test_entry_init(&t, "aten::_softmax", 9); /* the child's entry */
    t0 = now_s();
    kf_cachelink_disable_entry(rt, t.key_hex, "disagreed with eager (test)");
    CHECK(now_s() - t0 < 0.2);
    pthread_mutex_lock(&rt->lock);
    CHECK_EQ_INT(rt->n_to_disable, 1); /* left for the reload thread */
    pthread_mutex_unlock(&rt->lock);

    close(release);
    int status = 0;
    waitpid(holder, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* released: the thread's next look reads the entry (looked at once: attached or refused,
     * here refused, as it was built for another toolchain) */
    nudge(rt);
    int n = 0;
    for (int i = 0; i < 1000 && (n = attached(rt)) == 0; i++) sleep_ms(10);
    CHECK_EQ_INT(n, 1);
    pthread_mutex_lock(&rt->cache_lock);
    CHECK_EQ_INT(rt->reload_retry, 0);
    pthread_mutex_unlock(&rt->cache_lock);
    kf_cache *ro = NULL;
    kf_cache_entry *e = NULL;
    int disabled = 0;
    for (int i = 0; i < 1000 && !disabled; i++) { /* up to 10 s: a loaded machine, ASan */
        if (i % 50 == 49) nudge(rt);
        kf_cache_free(ro);
        ro = NULL;
        if (kf_cache_open(&ro, dir, 1) == KF_OK && kf_cache_get(ro, t.key_hex, &e) == KF_OK)
            disabled = e->disabled;
        kf_cache_entry_free(e);
        e = NULL;
        if (!disabled) sleep_ms(10);
    }
    kf_cache_free(ro);
    CHECK_EQ_INT(disabled, 1);
    pthread_mutex_lock(&rt->lock);
    CHECK_EQ_INT(rt->n_to_disable, 0);
    pthread_mutex_unlock(&rt->lock);
out:
    kf_runtime_free(rt); /* joins the thread */
    rm_rf(dir);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    test_held_lock();
    return check_done("test_cachelink_reload");
}
