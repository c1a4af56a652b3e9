/* The on-disk store: opening (permissions, symlinks, ownership), insert/list/get/read_blob,
 * replace, remove, clear, set_disabled, the generation counter, and every kind of damaged
 * file: corrupted and truncated blobs, truncated and garbage manifests, misnamed manifests,
 * symlinked entries, FIFOs. */
#include <errno.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "tests/c/test_cache_util.h"

static kf_cache *open_rw(const char *dir)
{
    kf_cache *c = NULL;
    kf_status st = kf_cache_open(&c, dir, 0);
    if (!CHECK_EQ_INT(st, KF_OK)) printf("     %s\n", kf_cache_errmsg(c));
    return c;
}

/* A failed open: the handle carries the message, and nothing else works on it. */
static void open_fails(const char *dir, int read_only, kf_status want, const char *msg1,
                       const char *msg2)
{
    kf_cache *c = NULL;
    CHECK_EQ_INT(kf_cache_open(&c, dir, read_only), want);
    if (!CHECK(c != NULL)) return;
    CHECK_CONTAINS(kf_cache_errmsg(c), msg1);
    if (msg2) CHECK_CONTAINS(kf_cache_errmsg(c), msg2);
    char before[1024];
    snprintf(before, sizeof before, "%s", kf_cache_errmsg(c));
    kf_cache_entry **v = (kf_cache_entry **)1;
    int n = -1;
    CHECK_EQ_INT(kf_cache_list(c, &v, &n), KF_ERR_INVALID);
    CHECK(v == NULL && n == 0);
    kf_cache_entry *e = (kf_cache_entry *)1;
    CHECK_EQ_INT(kf_cache_get(c, "0123456789abcdef0123456789abcdef", &e), KF_ERR_INVALID);
    CHECK(e == NULL);
    CHECK_EQ_INT(kf_cache_clear(c), KF_ERR_INVALID);
    CHECK_EQ_U64(kf_cache_generation(c), 0);
    CHECK_EQ_INT(kf_cache_verify(c, NULL, NULL), 1);
    CHECK_STR(kf_cache_errmsg(c), before); /* the reason stays */
    kf_cache_free(c);
}

static void test_open(void)
{
    char *root = tmp_dir();
    char *dir = path_join(root, "a/b/cache");
    log_reset();

    /* read-only does not create */
    open_fails(dir, 1, KF_ERR_NOT_FOUND, "does not exist", dir);
    CHECK(!file_exists(dir));

    kf_cache *c = open_rw(dir);
    struct stat sb;
    CHECK(stat(dir, &sb) == 0 && (sb.st_mode & 0777) == 0700);
    char *ed = path_join(dir, "entries");
    CHECK(stat(ed, &sb) == 0 && (sb.st_mode & 0777) == 0700);
    CHECK_STR(kf_cache_dir(c), dir);
    CHECK_EQ_U64(kf_cache_generation(c), 0);
    kf_cache_entry **v = NULL;
    int n = -1;
    CHECK_EQ_INT(kf_cache_list(c, &v, &n), KF_OK);
    CHECK_EQ_INT(n, 0);
    kf_cache_entries_free(v, n);
    kf_cache_free(c);

    /* reopening an existing cache, read-only too */
    c = open_rw(dir);
    kf_cache_free(c);
    CHECK_EQ_INT(kf_cache_open(&c, dir, 1), KF_OK);
    kf_cache_free(c);

    /* a symlinked cache folder is refused */
    char *link = path_join(root, "link");
    CHECK(symlink(dir, link) == 0);
    open_fails(link, 0, KF_ERR_INVALID, "symbolic link", link);
    open_fails(link, 1, KF_ERR_INVALID, "symbolic link", link);

    /* so is a symlinked entries/ */
    char *dir2 = path_join(root, "c2");
    CHECK(mkdir(dir2, 0700) == 0);
    char *ed2 = path_join(dir2, "entries");
    CHECK(symlink(ed, ed2) == 0);
    open_fails(dir2, 0, KF_ERR_INVALID, "entries is a symbolic link", NULL);

    /* a file where the folder should be */
    char *file = path_join(root, "file");
    write_file(file, "x", 1);
    open_fails(file, 0, KF_ERR_INVALID, "not a directory", file);

    /* a folder owned by someone else */
    char *other = path_join(root, "other");
    CHECK(mkdir(other, 0700) == 0);
    const char *foreign = other;
    if (geteuid() == 0) CHECK(chown(other, 65534, 65534) == 0);
    else foreign = "/"; /* owned by root */
    open_fails(foreign, geteuid() == 0 ? 0 : 1, KF_ERR_INVALID, "not by the current user",
               foreign);

    open_fails("", 0, KF_ERR_INVALID, "no cache folder", NULL);
    CHECK_EQ_INT(kf_cache_open(NULL, dir, 0), KF_ERR_INVALID);
    kf_cache_free(NULL);
    CHECK(kf_cache_errmsg(NULL) != NULL);
    CHECK(kf_cache_dir(NULL) == NULL);
    free(other);
    free(file);
    free(ed2);
    free(dir2);
    free(link);
    free(ed);
    free(dir);
    rm_rf(root);
}

static void test_insert_list_get(void)
{
    char *dir = tmp_dir();
    kf_cache *c = open_rw(dir);
    test_entry t[3];
    const char *ops[3] = {"aten::_softmax", "aten::gelu", "aten::silu"};
    uint64_t gen = kf_cache_generation(c);
    for (int i = 0; i < 3; i++) {
        test_entry_init(&t[i], ops[i], i + 1);
        CHECK_EQ_INT(test_insert(c, &t[i]), KF_OK);
        uint64_t g = kf_cache_generation(c);
        CHECK(g > gen);
        gen = g;
    }
    CHECK_EQ_INT(count_temp_files(dir), 0);

    kf_cache_entry **v = NULL;
    int n = 0;
    log_reset();
    CHECK_EQ_INT(kf_cache_list(c, &v, &n), KF_OK);
    CHECK_EQ_INT(n, 3);
    CHECK_EQ_INT(g_log.n_warn, 0);
    for (int i = 0; i + 1 < n; i++) CHECK(strcmp(v[i]->key_hex, v[i + 1]->key_hex) < 0);
    for (int i = 0; i < 3; i++) {
        kf_cache_entry *e = NULL;
        if (!CHECK_EQ_INT(kf_cache_get(c, t[i].key_hex, &e), KF_OK)) {
            printf("     %s\n", kf_cache_errmsg(c));
            continue;
        }
        CHECK_STR(e->key_hex, t[i].key_hex);
        CHECK_STR(e->op, ops[i]);
        CHECK_STR(e->source, t[i].source);
        CHECK_STR(e->launch, t[i].e.launch);
        CHECK_EQ_U64(e->blob_size, t[i].blob_len);
        CHECK(e->created > 1e9);
        CHECK_EQ_INT(e->format, KF_CACHE_FORMAT);
        CHECK_EQ_INT(e->contract_version, KF_CONTRACT_VERSION);
        void *blob = NULL;
        size_t len = 0;
        CHECK_EQ_INT(kf_cache_read_blob(c, e, &blob, &len), KF_OK);
        CHECK(len == t[i].blob_len && blob && memcmp(blob, t[i].blob, len) == 0);
        free(blob);
        kf_cache_entry_free(e);
    }
    kf_cache_entries_free(v, n);

    kf_cache_entry *e = (kf_cache_entry *)1;
    CHECK_EQ_INT(kf_cache_get(c, "0123456789abcdef0123456789abcdef", &e), KF_ERR_NOT_FOUND);
    CHECK(e == NULL);
    CHECK_CONTAINS(kf_cache_errmsg(c), "0123456789abcdef0123456789abcdef.json");
    CHECK_EQ_INT(kf_cache_get(c, "../../etc/passwd", &e), KF_ERR_INVALID);

    /* a key filled in by the caller must be the key of the entry's fields */
    test_entry w;
    test_entry_init(&w, "aten::relu", 9);
    kf_cache_key_parse(t[0].key_hex, &w.e.key);
    CHECK_EQ_INT(test_insert(c, &w), KF_ERR_INVALID);
    CHECK_CONTAINS(kf_cache_errmsg(c), "kf_cache_key_compute");
    memset(&w.e.key, 0, sizeof w.e.key);
    memcpy(w.e.key_hex, t[0].key_hex, KF_KEY_HEX);
    CHECK_EQ_INT(test_insert(c, &w), KF_ERR_INVALID);
    memcpy(w.e.key_hex, w.key_hex, KF_KEY_HEX);
    kf_cache_key_parse(w.key_hex, &w.e.key);
    CHECK_EQ_INT(test_insert(c, &w), KF_OK); /* the right key is fine */
    CHECK_EQ_INT(kf_cache_remove(c, w.key_hex), KF_OK);

    /* bad entries never reach the disk */
    test_entry b;
    test_entry_init(&b, "aten::relu", 10);
    b.e.op = NULL;
    CHECK_EQ_INT(test_insert(c, &b), KF_ERR_INVALID);
    CHECK_CONTAINS(kf_cache_errmsg(c), "\"op\" must be a string");
    test_entry_init(&b, "aten::relu", 10);
    b.e.launch = (char *)"{\"entry\": ";
    CHECK_EQ_INT(test_insert(c, &b), KF_ERR_INVALID);
    CHECK_CONTAINS(kf_cache_errmsg(c), "launch is not valid JSON");
    test_entry_init(&b, "aten::relu", 10);
    b.e.eager_us = -1;
    CHECK_EQ_INT(test_insert(c, &b), KF_ERR_INVALID);
    CHECK_CONTAINS(kf_cache_errmsg(c), "eager_us");
    CHECK_EQ_INT(kf_cache_insert(c, &b.e, NULL, 5, NULL), KF_ERR_INVALID);
    CHECK_EQ_INT(kf_cache_insert(c, NULL, "x", 1, NULL), KF_ERR_INVALID);
    n = 0;
    CHECK_EQ_INT(kf_cache_list(c, &v, &n), KF_OK);
    CHECK_EQ_INT(n, 3);
    kf_cache_entries_free(v, n);

    /* an empty blob is a blob */
    test_entry z;
    test_entry_init(&z, "aten::zero", 0);
    CHECK_EQ_INT(kf_cache_insert(c, &z.e, NULL, 0, NULL), KF_OK);
    CHECK_EQ_INT(kf_cache_get(c, z.key_hex, &e), KF_OK);
    void *blob = NULL;
    size_t len = 99;
    CHECK_EQ_INT(kf_cache_read_blob(c, e, &blob, &len), KF_OK);
    CHECK_EQ_INT(len, 0);
    free(blob);
    kf_cache_entry_free(e);

    kf_cache_free(c);
    rm_rf(dir);
}

static void test_replace_remove_clear(void)
{
    char *dir = tmp_dir();
    kf_cache *c = open_rw(dir);
    test_entry a, a2, b;
    test_entry_init(&a, "aten::gelu", 1);
    test_entry_init(&b, "aten::gelu", 2);
    CHECK_EQ_INT(test_insert(c, &a), KF_OK);
    CHECK_EQ_INT(test_insert(c, &b), KF_OK);

    /* replace: same key, new source and blob */
    a2 = a;
    a2.e.sig = a2.sig.buf;
    a2.e.source = a2.source;
    strcpy(a2.source, "// version two\nvoid kf_kernel(void) {}\n");
    memcpy(a2.blob, "a different blob entirely", 25);
    a2.blob_len = 25;
    uint64_t g0 = kf_cache_generation(c);
    CHECK_EQ_INT(test_insert(c, &a2), KF_OK);
    CHECK(kf_cache_generation(c) > g0);
    kf_cache_entry **v = NULL;
    int n = 0;
    CHECK_EQ_INT(kf_cache_list(c, &v, &n), KF_OK);
    CHECK_EQ_INT(n, 2);
    kf_cache_entries_free(v, n);
    kf_cache_entry *e = NULL;
    CHECK_EQ_INT(kf_cache_get(c, a.key_hex, &e), KF_OK);
    if (e) {
        CHECK_STR(e->source, a2.source);
        void *blob = NULL;
        size_t len = 0;
        CHECK_EQ_INT(kf_cache_read_blob(c, e, &blob, &len), KF_OK);
        CHECK(len == 25 && memcmp(blob, a2.blob, 25) == 0);
        free(blob);
        kf_cache_entry_free(e);
    }

    /* set_disabled: a change, kept with its reason; the blob stays readable */
    g0 = kf_cache_generation(c);
    CHECK_EQ_INT(kf_cache_set_disabled(c, b.key_hex, 1, "first-use check failed"), KF_OK);
    CHECK(kf_cache_generation(c) > g0);
    CHECK_EQ_INT(kf_cache_get(c, b.key_hex, &e), KF_OK);
    if (e) {
        CHECK_EQ_INT(e->disabled, 1);
        CHECK_STR(e->disabled_reason, "first-use check failed");
        CHECK_STR(e->source, b.source);
        void *blob = NULL;
        size_t len = 0;
        CHECK_EQ_INT(kf_cache_read_blob(c, e, &blob, &len), KF_OK);
        free(blob);
        kf_cache_entry_free(e);
    }
    CHECK_EQ_INT(kf_cache_set_disabled(c, b.key_hex, 0, "ignored"), KF_OK);
    CHECK_EQ_INT(kf_cache_get(c, b.key_hex, &e), KF_OK);
    if (e) {
        CHECK_EQ_INT(e->disabled, 0);
        CHECK(e->disabled_reason == NULL);
        kf_cache_entry_free(e);
    }
    CHECK_EQ_INT(kf_cache_set_disabled(c, "0123456789abcdef0123456789abcdef", 1, "x"),
                 KF_ERR_NOT_FOUND);
    CHECK_EQ_INT(kf_cache_set_disabled(c, "nope", 1, "x"), KF_ERR_INVALID);

    /* remove */
    g0 = kf_cache_generation(c);
    CHECK_EQ_INT(kf_cache_remove(c, a.key_hex), KF_OK);
    uint64_t g1 = kf_cache_generation(c);
    CHECK(g1 > g0);
    CHECK_EQ_INT(kf_cache_get(c, a.key_hex, &e), KF_ERR_NOT_FOUND);
    char *ap = entry_path(dir, a.key_hex, "blob");
    CHECK(!file_exists(ap));
    free(ap);
    CHECK_EQ_INT(kf_cache_remove(c, a.key_hex), KF_ERR_NOT_FOUND);
    CHECK_EQ_U64(kf_cache_generation(c), g1); /* nothing changed */
    CHECK_EQ_INT(kf_cache_remove(c, "xyz"), KF_ERR_INVALID);

    /* clear: entries and leftover temp files go, the generation moves */
    CHECK_EQ_INT(test_insert(c, &a), KF_OK);
    char *ed = path_join(dir, "entries");
    char *stale = path_join(ed, ".tmp-12345-0-deadbeef.json");
    write_file(stale, "half", 4);
    char *keep = path_join(ed, "README");
    write_file(keep, "not ours", 8);
    CHECK_EQ_INT(count_temp_files(dir), 1);
    n = 0;
    log_reset();
    CHECK_EQ_INT(kf_cache_list(c, &v, &n), KF_OK); /* temp files and strays are ignored */
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_INT(g_log.n_warn, 0);
    kf_cache_entries_free(v, n);
    g0 = kf_cache_generation(c);
    CHECK_EQ_INT(kf_cache_clear(c), KF_OK);
    CHECK(kf_cache_generation(c) > g0);
    CHECK_EQ_INT(kf_cache_list(c, &v, &n), KF_OK);
    CHECK_EQ_INT(n, 0);
    kf_cache_entries_free(v, n);
    CHECK_EQ_INT(count_temp_files(dir), 0);
    CHECK(file_exists(keep)); /* not ours to delete */
    free(keep);
    free(stale);
    free(ed);

    /* a read-only handle reads but never writes */
    CHECK_EQ_INT(test_insert(c, &b), KF_OK);
    kf_cache *ro = NULL;
    CHECK_EQ_INT(kf_cache_open(&ro, dir, 1), KF_OK);
    CHECK_EQ_INT(kf_cache_list(ro, &v, &n), KF_OK);
    CHECK_EQ_INT(n, 1);
    kf_cache_entries_free(v, n);
    CHECK_EQ_INT(test_insert(ro, &a), KF_ERR_INVALID);
    CHECK_CONTAINS(kf_cache_errmsg(ro), "read-only");
    CHECK_EQ_INT(kf_cache_remove(ro, b.key_hex), KF_ERR_INVALID);
    CHECK_EQ_INT(kf_cache_clear(ro), KF_ERR_INVALID);
    CHECK_EQ_INT(kf_cache_set_disabled(ro, b.key_hex, 1, NULL), KF_ERR_INVALID);
    CHECK_EQ_U64(kf_cache_generation(ro), kf_cache_generation(c));
    kf_cache_free(ro);

    /* a garbage generation file reads as 0, and the next change still moves it */
    char *gp = path_join(dir, "generation");
    write_file(gp, "banana", 6);
    CHECK_EQ_U64(kf_cache_generation(c), 0);
    CHECK_EQ_INT(kf_cache_remove(c, b.key_hex), KF_OK);
    CHECK_EQ_U64(kf_cache_generation(c), 1);
    free(gp);

    kf_cache_free(c);
    rm_rf(dir);
}

typedef struct report_log {
    int n;
    char text[8192];
} report_log;

static void on_report(void *user, const char *key_hex, const char *problem)
{
    report_log *r = user;
    r->n++;
    size_t used = strlen(r->text);
    snprintf(r->text + used, sizeof r->text - used, "%s: %s\n", key_hex ? key_hex : "-",
             problem);
}

static void test_corrupt_blob(void)
{
    char *dir = tmp_dir();
    kf_cache *c = open_rw(dir);
    test_entry a, b;
    test_entry_init(&a, "aten::silu", 1);
    test_entry_init(&b, "aten::silu", 2);
    CHECK_EQ_INT(test_insert(c, &a), KF_OK);
    CHECK_EQ_INT(test_insert(c, &b), KF_OK);
    report_log r = {0, ""};
    CHECK_EQ_INT(kf_cache_verify(c, on_report, &r), 0);

    char *bp = entry_path(dir, a.key_hex, "blob");
    flip_byte(bp, 10);
    kf_cache_entry *e = NULL;
    CHECK_EQ_INT(kf_cache_get(c, a.key_hex, &e), KF_OK); /* same size: only the hash knows */
    void *blob = (void *)1;
    size_t len = 0;
    if (e) {
        CHECK_EQ_INT(kf_cache_read_blob(c, e, &blob, &len), KF_ERR_IO);
        CHECK(blob == NULL);
        CHECK_CONTAINS(kf_cache_errmsg(c), "hash");
        CHECK_CONTAINS(kf_cache_errmsg(c), a.key_hex);
        kf_cache_entry_free(e);
    }
    r.n = 0;
    r.text[0] = '\0';
    CHECK_EQ_INT(kf_cache_verify(c, on_report, &r), 1);
    CHECK_EQ_INT(r.n, 1);
    CHECK_CONTAINS(r.text, a.key_hex);
    CHECK_CONTAINS(r.text, "hash");

    /* truncated blob: list skips it (size), verify and read_blob report it */
    char *bb = entry_path(dir, b.key_hex, "blob");
    CHECK(truncate(bb, 5) == 0);
    kf_cache_entry **v = NULL;
    int n = 0;
    log_reset();
    CHECK_EQ_INT(kf_cache_list(c, &v, &n), KF_OK);
    CHECK_EQ_INT(n, 1); /* a: size still right */
    CHECK_EQ_INT(g_log.n_warn, 1);
    CHECK_CONTAINS(g_log.last, b.key_hex);
    CHECK_CONTAINS(g_log.last, "bytes, the manifest says");
    kf_cache_entries_free(v, n);
    r.n = 0;
    r.text[0] = '\0';
    CHECK_EQ_INT(kf_cache_verify(c, on_report, &r), 2);
    CHECK_CONTAINS(r.text, b.key_hex);

    /* orphan blob */
    char *bj = entry_path(dir, b.key_hex, "json");
    unlink(bj);
    r.n = 0;
    r.text[0] = '\0';
    CHECK_EQ_INT(kf_cache_verify(c, on_report, &r), 2);
    CHECK_CONTAINS(r.text, "orphan blob");
    free(bj);
    free(bb);
    free(bp);
    kf_cache_free(c);
    rm_rf(dir);
}

static void test_bad_manifests(void)
{
    char *dir = tmp_dir();
    kf_cache *c = open_rw(dir);
    enum { N = 7 };
    test_entry t[N];
    for (int i = 0; i < N; i++) {
        test_entry_init(&t[i], "aten::native_layer_norm", 100 + i);
        CHECK_EQ_INT(test_insert(c, &t[i]), KF_OK);
    }
    /* 0: truncated manifest */
    char *p0 = entry_path(dir, t[0].key_hex, "json");
    CHECK(truncate(p0, 100) == 0);
    /* 1: garbage */
    char *p1 = entry_path(dir, t[1].key_hex, "json");
    const char garbage[] = "\x89PNG\r\n\x1a\n garbage \xff\xfe";
    write_file(p1, garbage, sizeof garbage - 1);
    /* 2: its manifest under another entry's name (6 removed to make room) */
    char *p2 = entry_path(dir, t[2].key_hex, "json");
    char *p6 = entry_path(dir, t[6].key_hex, "json");
    char *b6 = entry_path(dir, t[6].key_hex, "blob");
    unlink(p6);
    unlink(b6);
    CHECK(rename(p2, p6) == 0);
    char *b2 = entry_path(dir, t[2].key_hex, "blob");
    char *b2to6 = entry_path(dir, t[6].key_hex, "blob");
    CHECK(link(b2, b2to6) == 0);
    /* 3: a field edited, so the key no longer matches the fields */
    char *p3 = entry_path(dir, t[3].key_hex, "json");
    size_t len = 0;
    char *text = read_file(p3, &len);
    char *arch = strstr(text, "\"x86_64\"");
    if (CHECK(arch != NULL)) memcpy(arch, "\"aarch6\"", 8);
    write_file(p3, text, len);
    free(text);
    /* 4: a symlink to a copy of a good manifest */
    char *p4 = entry_path(dir, t[4].key_hex, "json");
    char *copy = path_join(dir, "outside.json");
    CHECK(rename(p4, copy) == 0);
    CHECK(symlink(copy, p4) == 0);
    /* 5 stays good; plus a FIFO with an entry's name (must not hang) */
    char fifo_key[KF_KEY_HEX] = "ffffffffffffffffffffffffffffffff";
    char *pf = entry_path(dir, fifo_key, "json");
    CHECK(mkfifo(pf, 0600) == 0);

    kf_cache_entry **v = NULL;
    int n = 0;
    for (int round = 0; round < 2; round++) { /* one warning per bad file, the first time */
        log_reset();
        CHECK_EQ_INT(kf_cache_list(c, &v, &n), KF_OK);
        CHECK_EQ_INT(n, 1);
        if (n == 1) CHECK_STR(v[0]->key_hex, t[5].key_hex);
        kf_cache_entries_free(v, n);
        CHECK_EQ_INT(g_log.n_warn, round ? 0 : 6);
        if (round) continue;
        const char *names[] = {t[0].key_hex, t[1].key_hex, t[6].key_hex, t[3].key_hex,
                               t[4].key_hex, fifo_key};
        for (int i = 0; i < 6; i++) CHECK_CONTAINS(g_log.all, names[i]);
        CHECK_CONTAINS(g_log.all, "not valid JSON (at byte");
        CHECK_CONTAINS(g_log.all, "does not match its name");
        CHECK_CONTAINS(g_log.all, "is not the key of its signature");
        CHECK_CONTAINS(g_log.all, "symbolic link");
        CHECK_CONTAINS(g_log.all, "not a regular file");
    }

    /* get refuses each of them with a message naming the file */
    kf_cache_entry *e = NULL;
    CHECK_EQ_INT(kf_cache_get(c, t[4].key_hex, &e), KF_ERR_IO);
    CHECK_CONTAINS(kf_cache_errmsg(c), "symbolic link");
    CHECK_EQ_INT(kf_cache_get(c, t[6].key_hex, &e), KF_ERR_IO);
    CHECK_CONTAINS(kf_cache_errmsg(c), t[6].key_hex);
    CHECK_EQ_INT(kf_cache_get(c, t[1].key_hex, &e), KF_ERR_IO);
    CHECK(e == NULL);

    /* a symlinked blob is refused too */
    char *b5 = entry_path(dir, t[5].key_hex, "blob");
    char *bcopy = path_join(dir, "outside.blob");
    CHECK(rename(b5, bcopy) == 0);
    CHECK(symlink(bcopy, b5) == 0);
    log_reset();
    CHECK_EQ_INT(kf_cache_list(c, &v, &n), KF_OK);
    CHECK_EQ_INT(n, 0);
    kf_cache_entries_free(v, n);
    CHECK_CONTAINS(g_log.all, "symbolic link refused");

    /* verify sees all of it: 0, 1, fifo, 6 (misnamed), 3, 4, 5 (blob), orphan blob of 2 */
    report_log r = {0, ""};
    CHECK_EQ_INT(kf_cache_verify(c, on_report, &r), 8);
    CHECK_CONTAINS(r.text, "orphan blob");
    CHECK_CONTAINS(r.text, t[2].key_hex);

    free(bcopy);
    free(b5);
    free(pf);
    free(copy);
    free(p4);
    free(p3);
    free(b2to6);
    free(b2);
    free(b6);
    free(p6);
    free(p2);
    free(p1);
    free(p0);
    kf_cache_free(c);
    rm_rf(dir);
}

int main(void)
{
    log_install();
    test_open();
    test_insert_list_get();
    test_replace_remove_clear();
    test_corrupt_blob();
    test_bad_manifests();
    return check_done("test_cache_store");
}
