/* A reader in nowait mode (the plugin's reload) never waits for the folder's lock: while another
 * process holds it, list/get/read_blob fail at once with KF_ERR_BUSY and a message saying so,
 * and they work again once it is released. A reader without nowait still waits. */
#include <errno.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>

#include "tests/c/test_cache_util.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A child that takes the exclusive flock on <dir>/lock, says so on `ready`, and holds it until
 * `release` is closed. */
static pid_t hold_lock(const char *dir, int *release_w)
{
    int ready[2], release[2];
    if (pipe(ready) < 0 || pipe(release) < 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        close(ready[0]);
        close(release[1]);
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

typedef struct waiter {
    kf_cache *c;
    _Atomic int done;
    kf_status st;
    int n;
} waiter;

static void *wait_list(void *p)
{
    waiter *w = p;
    kf_cache_entry **es = NULL;
    w->st = kf_cache_list(w->c, &es, &w->n);
    kf_cache_entries_free(es, w->n);
    atomic_store(&w->done, 1);
    return NULL;
}

static void test_busy_then_free(void)
{
    char *dir = tmp_dir();
    kf_cache *rw = NULL, *ro = NULL, *ro_wait = NULL;
    if (!CHECK_EQ_INT(kf_cache_open(&rw, dir, 0), KF_OK)) goto out;
    test_entry t;
    test_entry_init(&t, "aten::_softmax", 3);
    if (!CHECK_EQ_INT(test_insert(rw, &t), KF_OK)) goto out;
    CHECK_EQ_INT(kf_cache_open(&ro, dir, 1), KF_OK);
    CHECK_EQ_INT(kf_cache_open(&ro_wait, dir, 1), KF_OK);
    kf_cache_set_nowait(ro, 1);
    kf_cache_set_nowait(NULL, 1); /* a no-op */

    kf_cache_entry **es = NULL, *one = NULL;
    int n = 0;
    CHECK_EQ_INT(kf_cache_list(ro, &es, &n), KF_OK); /* nobody holds it: as usual */
    CHECK_EQ_INT(n, 1);
    kf_cache_entries_free(es, n);

    int release = -1;
    pid_t holder = hold_lock(dir, &release);
    if (!CHECK(holder > 0)) goto out;
    double t0 = now_s();
    CHECK_EQ_INT(kf_cache_list(ro, &es, &n), KF_ERR_BUSY);
    CHECK(es == NULL && n == 0);
    CHECK(strstr(kf_cache_errmsg(ro), "locked by another process") != NULL);
    CHECK_EQ_INT(kf_cache_get(ro, t.key_hex, &one), KF_ERR_BUSY);
    CHECK(one == NULL);
    void *blob = NULL;
    size_t len = 0;
    kf_cache_entry fake = t.e;
    snprintf(fake.key_hex, sizeof fake.key_hex, "%s", t.key_hex);
    CHECK_EQ_INT(kf_cache_read_blob(ro, &fake, &blob, &len), KF_ERR_BUSY);
    CHECK(blob == NULL);
    CHECK(now_s() - t0 < 0.5); /* at once: no waiting */

    /* a reader without nowait waits until the holder lets go */
    waiter w = {ro_wait, 0, KF_ERR_INVALID, 0};
    pthread_t th;
    CHECK_EQ_INT(pthread_create(&th, NULL, wait_list, &w), 0);
    struct timespec pause = {0, 200 * 1000 * 1000};
    nanosleep(&pause, NULL);
    CHECK_EQ_INT(atomic_load(&w.done), 0);
    close(release);
    int status = 0;
    waitpid(holder, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    pthread_join(th, NULL);
    CHECK_EQ_INT(w.st, KF_OK);
    CHECK_EQ_INT(w.n, 1);

    /* released: the nowait reader reads again */
    CHECK_EQ_INT(kf_cache_list(ro, &es, &n), KF_OK);
    CHECK_EQ_INT(n, 1);
    if (n == 1) {
        CHECK_EQ_INT(kf_cache_read_blob(ro, es[0], &blob, &len), KF_OK);
        CHECK_EQ_U64(len, t.blob_len);
        free(blob);
    }
    kf_cache_entries_free(es, n);
    CHECK_EQ_INT(kf_cache_get(ro, t.key_hex, &one), KF_OK);
    kf_cache_entry_free(one);
out:
    kf_cache_free(rw);
    kf_cache_free(ro);
    kf_cache_free(ro_wait);
    rm_rf(dir);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    test_busy_then_free();
    return check_done("test_cache_nowait");
}
