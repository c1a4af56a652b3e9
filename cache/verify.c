/* kf_cache_verify: re-read and re-hash everything, one report line per problem. Unlike list,
 * it looks at every file, so unparseable manifests and orphan blobs are reported too. */
#include "cache/internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct verifier {
    kf_cache_report_fn report;
    void *user;
    int problems;
} verifier;

static void problem(verifier *v, const char *key_hex, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void problem(verifier *v, const char *key_hex, const char *fmt, ...)
{
    char msg[KF_CACHE_ERR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    v->problems++;
    if (v->report) v->report(v->user, key_hex, msg);
}

static void check_hash(verifier *v, const kf_cache_entry *e, const char *shown, const void *p,
                       size_t n)
{
    char h[KF_KEY_HEX];
    if ((uint64_t)n != e->blob_size) {
        problem(v, e->key_hex, "%s is %zu bytes, the manifest says %" PRIu64, shown, n,
                e->blob_size);
        return;
    }
    kf_hash128_hex(n ? p : "", n, h);
    if (strcmp(h, e->blob_hash) != 0)
        problem(v, e->key_hex, "%s: content hash %s does not match the manifest's %s", shown, h,
                e->blob_hash);
}

static void verify_bundle(kf_cache *c, verifier *v)
{
    const kf_bundle *b = c->bundle;
    for (int i = 0; i < b->n; i++) {
        const kf_bundle_entry *be = &b->entries[i];
        char err[KF_CACHE_ERR_MAX / 2], shown[80];
        kf_cache_entry *e = NULL;
        kf_status st = kf_cache_entry_from_json(be->json, be->json_len, &e, err, sizeof err);
        if (st == KF_OK) st = kf_entry_check_loaded(e, be->e->key_hex, err, sizeof err);
        if (st != KF_OK) {
            problem(v, be->e->key_hex, "bundle member %s.json: %s", be->e->key_hex, err);
        } else {
            snprintf(shown, sizeof shown, "bundle member %s.blob", e->key_hex);
            check_hash(v, e, shown, be->blob, be->blob_len);
        }
        kf_cache_entry_free(e);
    }
}

static void verify_manifest(kf_cache *c, verifier *v, const char *key)
{
    char name[48], shown[KF_CACHE_ERR_MAX / 2], err[KF_CACHE_ERR_MAX / 2];
    char *buf = NULL, *blob = NULL;
    size_t len = 0, blen = 0;
    kf_cache_entry *e = NULL;
    snprintf(name, sizeof name, "%s.json", key);
    snprintf(shown, sizeof shown, "cache %.300s: entries/%s", c->dir, name);
    kf_status st = kf_read_at(c->efd, name, KF_CACHE_MAX_MANIFEST, &buf, &len, err, sizeof err);
    if (st == KF_ERR_NOT_FOUND) goto out; /* removed since the scan */
    if (st == KF_OK) st = kf_cache_entry_from_json(buf, len, &e, err, sizeof err);
    if (st == KF_OK) st = kf_entry_check_loaded(e, key, err, sizeof err);
    if (st != KF_OK) {
        problem(v, key, "%s: %s", shown, err);
        goto out;
    }
    snprintf(name, sizeof name, "%s.blob", key);
    snprintf(shown, sizeof shown, "cache %.300s: entries/%s", c->dir, name);
    st = kf_read_at(c->efd, name, KF_CACHE_MAX_BLOB, &blob, &blen, err, sizeof err);
    if (st != KF_OK) {
        problem(v, key, "%s: %s", shown, st == KF_ERR_NOT_FOUND ? "is missing" : err);
        goto out;
    }
    check_hash(v, e, shown, blob, blen);
out:
    kf_cache_entry_free(e);
    free(blob);
    free(buf);
}

int kf_cache_verify(kf_cache *c, kf_cache_report_fn report, void *user)
{
    verifier v = {report, user, 0};
    if (!kf_cache_usable(c)) {
        problem(&v, NULL, "%s", c ? c->err : "no cache");
        return v.problems;
    }
    if (c->bundle) {
        verify_bundle(c, &v);
        return v.problems;
    }
    int lk = kf_cache_lock(c, 0);
    if (lk == -1) {
        problem(&v, NULL, "%s", c->err);
        return v.problems;
    }
    int fd = openat(c->efd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        problem(&v, NULL, "cache %s: cannot read entries/: %s", c->dir, strerror(errno));
        if (fd >= 0) close(fd);
        kf_cache_unlock(lk);
        return v.problems;
    }
    struct dirent *de;
    char key[KF_KEY_HEX];
    while ((de = readdir(d))) {
        int kind = kf_entry_name(de->d_name, key);
        if (kind == 1) {
            verify_manifest(c, &v, key);
        } else if (kind == 2) {
            char jname[48];
            struct stat sb;
            snprintf(jname, sizeof jname, "%s.json", key);
            if (fstatat(c->efd, jname, &sb, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
                problem(&v, key, "cache %s: entries/%s is an orphan blob (no manifest)", c->dir,
                        de->d_name);
        }
    }
    closedir(d);
    kf_cache_unlock(lk);
    return v.problems;
}
