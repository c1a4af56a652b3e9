/* Importing a bundle: host entries are rebuilt from their source (never installed as shipped),
 * refused ones are skipped with a warning, a locally disabled entry stays disabled; and a bad
 * entry in a cache folder is warned about once per file, not on every reload. */
#include "tests/c/test_cache_util.h"

static kf_cache *open_rw(const char *dir)
{
    kf_cache *c = NULL;
    if (!CHECK_EQ_INT(kf_cache_open(&c, dir, 0), KF_OK)) printf("     %s\n", kf_cache_errmsg(c));
    return c;
}

static char *blob_of(kf_cache *c, const char *key, size_t *len)
{
    kf_cache_entry *e = NULL;
    void *p = NULL;
    *len = 0;
    if (kf_cache_get(c, key, &e) == KF_OK) kf_cache_read_blob(c, e, &p, len);
    kf_cache_entry_free(e);
    return p;
}

static int g_rebuilds;

/* test_rebuild, but refusing the entry whose source says "#13" */
static kf_status picky_rebuild(void *user, const kf_cache_entry *e, void **blob, size_t *len,
                               char *err, size_t cap)
{
    g_rebuilds++;
    if (strstr(e->source, " #13\n")) {
        snprintf(err, cap, "the source check refused it (test)");
        return KF_ERR_INVALID;
    }
    return test_rebuild(user, e, blob, len, err, cap);
}

static void test_host_blobs_are_rebuilt(const char *root)
{
    char *sd = path_join(root, "src"), *dd = path_join(root, "dst"), *b = path_join(root, "b.kfb");
    kf_cache *src = open_rw(sd), *dst = open_rw(dd);
    /* a host entry whose blob is not what its source builds (a blob of another kernel) */
    test_entry evil, good, picky, dev;
    test_entry_init(&evil, "aten::gelu", 11);
    static const char shipped[] = "\x7f" "ELF: some other kernel's shared object";
    CHECK_EQ_INT(kf_cache_insert(src, &evil.e, shipped, sizeof shipped, NULL), KF_OK);
    test_entry_init(&good, "aten::silu", 12);
    CHECK_EQ_INT(test_insert(src, &good), KF_OK);
    test_entry_init(&picky, "aten::relu", 13);
    CHECK_EQ_INT(test_insert(src, &picky), KF_OK);
    test_entry_init(&dev, "aten::_softmax", 14);
    dev.e.backend = (char *)"nvrtc";
    kf_key_inputs in = {dev.e.sig, dev.e.sig_len, "nvrtc", dev.e.arch, dev.e.toolchain,
                        dev.e.torch_version, dev.e.plugin_version, KF_CONTRACT_VERSION};
    kf_cache_key_hex(kf_cache_key_compute(&in), dev.key_hex);
    CHECK_EQ_INT(test_insert(src, &dev), KF_OK);
    int n = -1;
    CHECK_EQ_INT(kf_cache_export(src, b, NULL, 0, &n), KF_OK);
    CHECK_EQ_INT(n, 4);

    /* no rebuild: no host entry is installed, the cubin is */
    log_reset();
    CHECK_EQ_INT(kf_cache_import(dst, b, NULL, NULL, &n), KF_OK);
    CHECK_EQ_INT(n, 1);
    kf_cache_entry *e = NULL;
    CHECK_EQ_INT(kf_cache_get(dst, evil.key_hex, &e), KF_ERR_NOT_FOUND);
    CHECK_EQ_INT(kf_cache_get(dst, dev.key_hex, &e), KF_OK);
    kf_cache_entry_free(e);
    CHECK_EQ_INT(g_log.n_warn, 3);
    CHECK_CONTAINS(g_log.all, evil.key_hex);
    CHECK_CONTAINS(g_log.all, "never used as shipped");

    /* with a rebuild: what is installed is what the source builds, not what was shipped */
    log_reset();
    g_rebuilds = 0;
    CHECK_EQ_INT(kf_cache_import(dst, b, picky_rebuild, NULL, &n), KF_OK);
    CHECK_EQ_INT(g_rebuilds, 3);
    CHECK_EQ_INT(n, 3); /* evil (rebuilt), good, dev; not picky */
    size_t len = 0;
    char *got = blob_of(dst, evil.key_hex, &len);
    CHECK(got && len == evil.blob_len && !memcmp(got, evil.blob, len));
    CHECK(!(got && len == sizeof shipped && !memcmp(got, shipped, len)));
    free(got);
    CHECK_EQ_INT(kf_cache_get(dst, picky.key_hex, &e), KF_ERR_NOT_FOUND);
    CHECK_EQ_INT(g_log.n_warn, 1);
    CHECK_CONTAINS(g_log.last, picky.key_hex);
    CHECK_CONTAINS(g_log.last, "the source check refused it (test)");
    CHECK_EQ_INT(kf_cache_verify(dst, NULL, NULL), 0);

    kf_cache_free(src);
    kf_cache_free(dst);
    free(sd);
    free(dd);
    free(b);
}

static void test_local_disabled_is_kept(const char *root)
{
    char *sd = path_join(root, "src2"), *dd = path_join(root, "dst2"), *b = path_join(root, "c.kfb");
    kf_cache *src = open_rw(sd), *dst = open_rw(dd);
    test_entry x, y;
    test_entry_init(&x, "aten::gelu", 21);
    test_entry_init(&y, "aten::gelu", 22);
    CHECK_EQ_INT(test_insert(src, &x), KF_OK);
    CHECK_EQ_INT(test_insert(src, &y), KF_OK);
    int n = -1;
    CHECK_EQ_INT(kf_cache_export(src, b, NULL, 0, &n), KF_OK);
    CHECK_EQ_INT(kf_cache_import(dst, b, test_rebuild, NULL, &n), KF_OK);
    /* here x failed its first-use check */
    CHECK_EQ_INT(kf_cache_set_disabled(dst, x.key_hex, 1, "disagrees with eager here"), KF_OK);
    CHECK_EQ_INT(kf_cache_import(dst, b, test_rebuild, NULL, &n), KF_OK);
    CHECK_EQ_INT(n, 2);
    kf_cache_entry *e = NULL;
    if (CHECK_EQ_INT(kf_cache_get(dst, x.key_hex, &e), KF_OK)) {
        CHECK_EQ_INT(e->disabled, 1);
        CHECK_STR(e->disabled_reason, "disagrees with eager here");
    }
    kf_cache_entry_free(e);
    if (CHECK_EQ_INT(kf_cache_get(dst, y.key_hex, &e), KF_OK)) CHECK_EQ_INT(e->disabled, 0);
    kf_cache_entry_free(e);
    /* a bundle's own disabled entry stays disabled too */
    CHECK_EQ_INT(kf_cache_set_disabled(src, y.key_hex, 1, "flaky there"), KF_OK);
    CHECK_EQ_INT(kf_cache_export(src, b, NULL, 0, &n), KF_OK);
    CHECK_EQ_INT(kf_cache_import(dst, b, test_rebuild, NULL, &n), KF_OK);
    if (CHECK_EQ_INT(kf_cache_get(dst, y.key_hex, &e), KF_OK)) {
        CHECK_EQ_INT(e->disabled, 1);
        CHECK_STR(e->disabled_reason, "flaky there");
    }
    kf_cache_entry_free(e);
    CHECK_EQ_INT(kf_cache_verify(dst, NULL, NULL), 0);
    kf_cache_free(src);
    kf_cache_free(dst);
    free(sd);
    free(dd);
    free(b);
}

static int list_count(kf_cache *c)
{
    kf_cache_entry **v = NULL;
    int n = -1;
    if (kf_cache_list(c, &v, &n) != KF_OK) return -1;
    kf_cache_entries_free(v, n);
    return n;
}

static void test_bad_entry_warned_once(const char *root)
{
    char *d = path_join(root, "bad");
    kf_cache *c = open_rw(d);
    test_entry a, bad;
    test_entry_init(&a, "aten::gelu", 31);
    test_entry_init(&bad, "aten::gelu", 32);
    CHECK_EQ_INT(test_insert(c, &a), KF_OK);
    CHECK_EQ_INT(test_insert(c, &bad), KF_OK);
    char *jp = entry_path(d, bad.key_hex, "json");
    CHECK_EQ_INT(write_file(jp, "{\"format\": 1", 12), 0);
    log_reset();
    for (int i = 0; i < 5; i++) CHECK_EQ_INT(list_count(c), 1); /* five reloads */
    CHECK_EQ_INT(g_log.n_warn, 1);
    CHECK_CONTAINS(g_log.last, bad.key_hex);
    /* another problem in the same file is news */
    CHECK_EQ_INT(write_file(jp, "[]", 2), 0);
    CHECK_EQ_INT(list_count(c), 1);
    CHECK_EQ_INT(list_count(c), 1);
    CHECK_EQ_INT(g_log.n_warn, 2);
    /* a second handle (another process) says it once too */
    kf_cache *c2 = open_rw(d);
    CHECK_EQ_INT(list_count(c2), 1);
    CHECK_EQ_INT(list_count(c2), 1);
    CHECK_EQ_INT(g_log.n_warn, 3);
    kf_cache_free(c2);
    kf_cache_free(c);
    free(jp);
    free(d);
}

int main(void)
{
    log_install();
    char *root = tmp_dir();
    test_host_blobs_are_rebuilt(root);
    test_local_disabled_is_kept(root);
    test_bad_entry_warned_once(root);
    rm_rf(root);
    return check_done("test_cache_import");
}
