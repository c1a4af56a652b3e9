/* Several processes inserting into one cache at once: 4 children each insert 50 entries of
 * their own and 10 of a shared set (same keys, racing), while the parent keeps listing. In the
 * end the cache holds exactly the expected entries, all valid, with no temp files, and the
 * generation counted every insert. */
#include <signal.h>
#include <sys/wait.h>

#include "tests/c/test_cache_util.h"

#define N_CHILD 4
#define N_OWN 50
#define N_SHARED 5
#define SHARED_ROUNDS 2

static char g_op[N_CHILD][32];

/* Returns the number of failed inserts (the child's exit status). */
static int child(const char *dir, int id, int start_fd)
{
    char go;
    if (read(start_fd, &go, 1) < 0) return 100; /* EOF when the parent says go */
    kf_cache *c = NULL;
    if (kf_cache_open(&c, dir, 0) != KF_OK) {
        kf_cache_free(c);
        return 101;
    }
    int failed = 0;
    test_entry t;
    for (int i = 0; i < N_OWN; i++) {
        test_entry_init(&t, g_op[id], i);
        if (test_insert(c, &t) != KF_OK) {
            fprintf(stderr, "child %d: %s\n", id, kf_cache_errmsg(c));
            failed++;
        }
        if (i % 10 == 0) /* the shared keys, interleaved with the others */
            for (int k = 0; k < N_SHARED * SHARED_ROUNDS / 5; k++) {
                test_entry_init(&t, "aten::shared", (i / 10 + k) % N_SHARED);
                if (test_insert(c, &t) != KF_OK) failed++;
            }
    }
    kf_cache_free(c);
    return failed > 99 ? 99 : failed;
}

static void test_concurrent_inserts(void)
{
    char *dir = tmp_dir();
    kf_cache *c = NULL;
    if (!CHECK_EQ_INT(kf_cache_open(&c, dir, 0), KF_OK)) return;
    for (int i = 0; i < N_CHILD; i++) snprintf(g_op[i], sizeof g_op[i], "aten::child%d", i);

    int pfd[2];
    CHECK(pipe(pfd) == 0);
    pid_t pids[N_CHILD];
    for (int i = 0; i < N_CHILD; i++) {
        fflush(stdout);
        pids[i] = fork();
        if (pids[i] == 0) {
            close(pfd[1]);
            _exit(child(dir, i, pfd[0]));
        }
        CHECK(pids[i] > 0);
    }
    close(pfd[0]);
    log_reset();
    close(pfd[1]); /* go */

    /* meanwhile, readers never see a partial entry */
    int lists = 0, alive = N_CHILD, bad = 0;
    int status[N_CHILD] = {0};
    int done[N_CHILD] = {0};
    while (alive) {
        kf_cache_entry **v = NULL;
        int n = 0;
        if (kf_cache_list(c, &v, &n) != KF_OK) bad++;
        for (int i = 0; i < n; i++) {
            void *blob = NULL;
            size_t len = 0;
            if (kf_cache_read_blob(c, v[i], &blob, &len) != KF_OK) bad++;
            free(blob);
        }
        kf_cache_entries_free(v, n);
        lists++;
        for (int i = 0; i < N_CHILD; i++) {
            if (done[i]) continue;
            pid_t r = waitpid(pids[i], &status[i], WNOHANG);
            if (r == pids[i]) {
                done[i] = 1;
                alive--;
            }
        }
        usleep(2000);
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(g_log.n_warn, 0);
    if (g_log.n_warn) printf("     %s\n", g_log.all);
    CHECK(lists > 0);
    for (int i = 0; i < N_CHILD; i++) {
        CHECK(WIFEXITED(status[i]));
        CHECK_EQ_INT(WEXITSTATUS(status[i]), 0);
    }

    /* exactly the expected set */
    kf_cache_entry **v = NULL;
    int n = 0;
    log_reset();
    CHECK_EQ_INT(kf_cache_list(c, &v, &n), KF_OK);
    CHECK_EQ_INT(n, N_CHILD * N_OWN + N_SHARED);
    CHECK_EQ_INT(g_log.n_warn, 0);
    int found = 0;
    test_entry t;
    for (int id = 0; id < N_CHILD; id++)
        for (int i = 0; i < N_OWN; i++) {
            test_entry_init(&t, g_op[id], i);
            kf_cache_entry *e = NULL;
            if (kf_cache_get(c, t.key_hex, &e) == KF_OK && !strcmp(e->source, t.source)) found++;
            kf_cache_entry_free(e);
        }
    for (int k = 0; k < N_SHARED; k++) {
        test_entry_init(&t, "aten::shared", k);
        kf_cache_entry *e = NULL;
        if (kf_cache_get(c, t.key_hex, &e) == KF_OK) found++;
        kf_cache_entry_free(e);
    }
    CHECK_EQ_INT(found, N_CHILD * N_OWN + N_SHARED);
    kf_cache_entries_free(v, n);
    CHECK_EQ_INT(kf_cache_verify(c, NULL, NULL), 0);
    CHECK_EQ_INT(count_temp_files(dir), 0);
    /* one bump per insert, none lost to a race */
    uint64_t inserts = (uint64_t)N_CHILD * (N_OWN + (N_OWN / 10) * (N_SHARED * SHARED_ROUNDS / 5));
    CHECK_EQ_U64(kf_cache_generation(c), inserts);
    kf_cache_free(c);
    rm_rf(dir);
}

int main(void)
{
    log_install();
    test_concurrent_inserts();
    return check_done("test_cache_concurrency");
}
