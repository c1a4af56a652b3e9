/* The on-disk store: opening a cache folder, insert/list/get/read_blob/remove/clear/mark, and
 * the generation counter. Writers hold the exclusive flock for the whole change; readers take
 * it shared, so a list never sees an entry half replaced. */
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

#include "common/log.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#define ERRCAP (KF_CACHE_ERR_MAX / 2)

static const char *where(const kf_cache *c) { return c->dir ? c->dir : "(bundle)"; }

/* ---- opening ---- */

/* mkdir -p with 0700 for what we create; errors surface when the final folder is checked. */
static void make_dirs(const char *dir)
{
    char *p = strdup(dir);
    if (!p) return;
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        mkdir(p, 0700);
        *s = '/';
    }
    mkdir(p, 0700);
    free(p);
}

/* Open a folder of the cache: ours, a real directory, not a symlink. */
static kf_status open_dir(int at, const char *path, const char *shown, int *out, char *err,
                          size_t cap)
{
    struct stat ls, fs;
    if (fstatat(at, path, &ls, AT_SYMLINK_NOFOLLOW) < 0) {
        int e = errno;
        kf_errf(err, cap, "%s: %s", shown, e == ENOENT ? "does not exist" : strerror(e));
        return e == ENOENT ? KF_ERR_NOT_FOUND : KF_ERR_IO;
    }
    if (S_ISLNK(ls.st_mode)) {
        kf_errf(err, cap, "%s is a symbolic link; refusing to use it as a cache folder", shown);
        return KF_ERR_INVALID;
    }
    if (!S_ISDIR(ls.st_mode)) {
        kf_errf(err, cap, "%s is not a directory", shown);
        return KF_ERR_INVALID;
    }
    if (ls.st_uid != geteuid()) {
        kf_errf(err, cap,
                "%s is owned by uid %u, not by the current user (uid %u); refusing to use it "
                "as a cache folder", shown, (unsigned)ls.st_uid, (unsigned)geteuid());
        return KF_ERR_INVALID;
    }
    int fd = openat(at, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        kf_errf(err, cap, "%s: cannot open: %s", shown, strerror(errno));
        return KF_ERR_IO;
    }
    /* what we opened must be what we checked */
    if (fstat(fd, &fs) < 0 || fs.st_dev != ls.st_dev || fs.st_ino != ls.st_ino) {
        kf_errf(err, cap, "%s changed while being opened", shown);
        close(fd);
        return KF_ERR_IO;
    }
    *out = fd;
    return KF_OK;
}

kf_status kf_cache_open(kf_cache **out, const char *dir, int read_only)
{
    char shown[600];
    kf_status st = KF_ERR_INVALID;
    if (!out) return KF_ERR_INVALID;
    *out = NULL;
    kf_cache *c = calloc(1, sizeof *c);
    if (!c) return KF_ERR_NOMEM;
    c->dfd = c->efd = -1;
    c->read_only = read_only != 0;
    if (!dir || !*dir) {
        kf_cache_set_err(c, "kf_cache_open: no cache folder given");
        goto fail;
    }
    c->dir = strdup(dir);
    if (!c->dir) {
        kf_cache_set_err(c, "out of memory");
        st = KF_ERR_NOMEM;
        goto fail;
    }
    if (!read_only) make_dirs(dir);
    snprintf(shown, sizeof shown, "cache folder %.500s", dir);
    st = open_dir(AT_FDCWD, dir, shown, &c->dfd, c->err, sizeof c->err);
    if (st != KF_OK) goto fail;
    if (!read_only && mkdirat(c->dfd, "entries", 0700) < 0 && errno != EEXIST) {
        kf_cache_set_err(c, "cache %s: cannot create entries/: %s", dir, strerror(errno));
        st = KF_ERR_IO;
        goto fail;
    }
    snprintf(shown, sizeof shown, "%.500s/entries", dir);
    st = open_dir(c->dfd, "entries", shown, &c->efd, c->err, sizeof c->err);
    if (st != KF_OK) goto fail;
    *out = c;
    return KF_OK;

fail:
    /* like sqlite3_open: the failed handle carries the message until kf_cache_free */
    KF_DEBUG("%s", c->err);
    if (c->efd >= 0) close(c->efd);
    if (c->dfd >= 0) close(c->dfd);
    c->efd = c->dfd = -1;
    *out = c;
    return st;
}

void kf_cache_free(kf_cache *c)
{
    if (!c) return;
    if (c->efd >= 0) close(c->efd);
    if (c->dfd >= 0) close(c->dfd);
    kf_bundle_free(c->bundle);
    free(c->warned);
    free(c->dir);
    free(c);
}

const char *kf_cache_errmsg(const kf_cache *c)
{
    return c ? c->err : "the cache was not opened";
}

const char *kf_cache_dir(const kf_cache *c)
{
    return c ? c->dir : NULL;
}

void kf_cache_set_nowait(kf_cache *c, int on)
{
    if (c) c->nowait = on != 0;
}

static int writable(kf_cache *c, const char *what)
{
    if (!c->read_only) return 1;
    kf_cache_set_err(c, "cache %s: %s: the cache is read-only", where(c), what);
    return 0;
}

/* ---- generation ---- */

static int parse_gen(const char *s, size_t n, uint64_t *v)
{
    uint64_t x = 0;
    size_t i = 0;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
        if (x > (UINT64_MAX - 9) / 10) return 0;
        x = x * 10 + (uint64_t)(s[i] - '0');
    }
    if (i == 0 || (i < n && !(s[i] == '\n' && i + 1 == n))) return 0;
    *v = x;
    return 1;
}

static uint64_t read_gen(kf_cache *c)
{
    char *buf = NULL, err[64];
    size_t n = 0;
    uint64_t v = 0;
    if (kf_read_at(c->dfd, "generation", 64, &buf, &n, err, sizeof err) == KF_OK &&
        !parse_gen(buf, n, &v))
        v = 0;
    free(buf);
    return v;
}

uint64_t kf_cache_generation(kf_cache *c)
{
    if (!kf_cache_usable(c) || c->bundle) return 0; /* a bundle never changes */
    return read_gen(c);
}

kf_status kf_cache_bump_generation(kf_cache *c)
{
    char text[32], err[ERRCAP];
    int n = snprintf(text, sizeof text, "%" PRIu64 "\n", read_gen(c) + 1);
    kf_piece p = {text, (size_t)n};
    kf_status st = kf_write_atomic(c->dfd, "generation", 0600, &p, 1, &c->tmp_seq, err, sizeof err);
    if (st != KF_OK) kf_cache_set_err(c, "cache %s: generation: %s", c->dir, err);
    return st;
}

/* ---- reading entries ---- */

/* Load and validate entries/<key>.json; with check_blob, also that its blob is there with the
 * right size (cheap: no hashing). The message names the file. */
static kf_status load_entry(kf_cache *c, const char *key_hex, int check_blob,
                            kf_cache_entry **out, char *err, size_t cap)
{
    char name[48], sub[ERRCAP];
    char *buf = NULL;
    size_t len = 0;
    kf_cache_entry *e = NULL;
    *out = NULL;
    snprintf(name, sizeof name, "%s.json", key_hex);
    kf_status st = kf_read_at(c->efd, name, KF_CACHE_MAX_MANIFEST, &buf, &len, sub, sizeof sub);
    if (st != KF_OK) goto fail;
    st = kf_cache_entry_from_json(buf, len, &e, sub, sizeof sub);
    if (st != KF_OK) {
        if (st != KF_ERR_NOMEM) st = KF_ERR_IO;
        goto fail;
    }
    st = kf_entry_check_loaded(e, key_hex, sub, sizeof sub);
    if (st != KF_OK) goto fail;
    if (check_blob) {
        struct stat sb;
        st = KF_ERR_IO;
        snprintf(name, sizeof name, "%s.blob", key_hex);
        if (fstatat(c->efd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
            kf_errf(sub, sizeof sub, "its blob %s: %s", name,
                    errno == ENOENT ? "is missing" : strerror(errno));
            goto fail;
        }
        if (!S_ISREG(sb.st_mode)) {
            kf_errf(sub, sizeof sub, "its blob %s is not a regular file%s", name,
                    S_ISLNK(sb.st_mode) ? " (symbolic link refused)" : "");
            goto fail;
        }
        if ((uint64_t)sb.st_size != e->blob_size) {
            kf_errf(sub, sizeof sub, "its blob %s is %lld bytes, the manifest says %" PRIu64,
                    name, (long long)sb.st_size, e->blob_size);
            goto fail;
        }
        st = KF_OK;
    }
    free(buf);
    *out = e;
    return KF_OK;

fail:
    kf_errf(err, cap, "cache %s: entries/%s.json: %s", c->dir, key_hex, sub);
    kf_cache_entry_free(e);
    free(buf);
    return st;
}

static int cmp_key(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

/* Keys of every entries/<key>.<ext> (kind 1: json, 2: blob), sorted. */
static kf_status scan(kf_cache *c, int kind, char (**keys)[KF_KEY_HEX], int *n)
{
    char (*k)[KF_KEY_HEX] = NULL;
    int cnt = 0, cap = 0;
    *keys = NULL;
    *n = 0;
    int fd = openat(c->efd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        kf_cache_set_err(c, "cache %s: cannot read entries/: %s", c->dir, strerror(errno));
        if (fd >= 0) close(fd);
        return KF_ERR_IO;
    }
    struct dirent *de;
    char key[KF_KEY_HEX];
    while ((de = readdir(d))) {
        if (kf_entry_name(de->d_name, key) != kind) continue; /* temp files, lock, strays */
        if (cnt == cap) {
            int ncap = cap ? cap * 2 : 64;
            void *nk = realloc(k, (size_t)ncap * sizeof *k);
            if (!nk) {
                free(k);
                closedir(d);
                kf_cache_set_err(c, "out of memory");
                return KF_ERR_NOMEM;
            }
            k = nk;
            cap = ncap;
        }
        memcpy(k[cnt++], key, KF_KEY_HEX);
    }
    closedir(d);
    if (cnt) qsort(k, (size_t)cnt, sizeof *k, cmp_key);
    *keys = k;
    *n = cnt;
    return KF_OK;
}

void kf_cache_entries_free(kf_cache_entry **entries, int n)
{
    if (!entries) return;
    for (int i = 0; i < n; i++) kf_cache_entry_free(entries[i]);
    free(entries);
}

static kf_status list_bundle(kf_cache *c, kf_cache_entry ***out, int *n)
{
    const kf_bundle *b = c->bundle;
    kf_cache_entry **v = calloc((size_t)b->n + 1, sizeof *v);
    if (!v) return KF_ERR_NOMEM;
    for (int i = 0; i < b->n; i++) {
        char err[ERRCAP];
        /* a private copy each time: the caller owns what list returns */
        kf_status st = kf_cache_entry_from_json(b->entries[i].json, b->entries[i].json_len, &v[i],
                                                err, sizeof err);
        if (st != KF_OK) {
            kf_cache_set_err(c, "bundle entry %s: %s", b->entries[i].e->key_hex, err);
            kf_cache_entries_free(v, i);
            return st;
        }
    }
    *out = v;
    *n = b->n;
    return KF_OK;
}

/* "skipping a bad entry" once per file and problem for this handle: a process that reloads
 * the folder every few seconds would otherwise repeat it forever. */
static void warn_once(kf_cache *c, const char *key_hex, const char *err)
{
    uint64_t h = XXH3_64bits(err, strlen(err));
    for (int i = 0; i < c->n_warned; i++)
        if (c->warned[i].hash == h && !strcmp(c->warned[i].key, key_hex)) {
            KF_DEBUG("skipping a bad entry (as before): %s", err);
            return;
        }
    KF_WARN("skipping a bad entry: %s", err);
    if (c->n_warned == c->cap_warned) {
        int cap = c->cap_warned ? 2 * c->cap_warned : 8;
        void *p = realloc(c->warned, (size_t)cap * sizeof *c->warned);
        if (!p) return; /* worst case it is said again */
        c->warned = p;
        c->cap_warned = cap;
    }
    snprintf(c->warned[c->n_warned].key, KF_KEY_HEX, "%s", key_hex);
    c->warned[c->n_warned++].hash = h;
}

kf_status kf_cache_list_unlocked(kf_cache *c, kf_cache_entry ***out, int *n)
{
    if (c->bundle) return list_bundle(c, out, n);
    char (*keys)[KF_KEY_HEX] = NULL;
    int nk = 0, cnt = 0;
    kf_status st = scan(c, 1, &keys, &nk);
    if (st != KF_OK) return st;
    kf_cache_entry **v = calloc((size_t)nk + 1, sizeof *v);
    if (!v) {
        free(keys);
        kf_cache_set_err(c, "out of memory");
        return KF_ERR_NOMEM;
    }
    for (int i = 0; i < nk; i++) {
        char err[KF_CACHE_ERR_MAX];
        st = load_entry(c, keys[i], 1, &v[cnt], err, sizeof err);
        if (st == KF_OK) cnt++;
        else if (st == KF_ERR_NOMEM) goto fail;
        else if (st != KF_ERR_NOT_FOUND) warn_once(c, keys[i], err);
        /* NOT_FOUND: removed since the scan (a reader without the lock) */
    }
    free(keys);
    *out = v;
    *n = cnt;
    return KF_OK;

fail:
    kf_cache_set_err(c, "out of memory");
    kf_cache_entries_free(v, cnt);
    free(keys);
    return KF_ERR_NOMEM;
}

kf_status kf_cache_list(kf_cache *c, kf_cache_entry ***entries, int *n)
{
    if (entries) *entries = NULL;
    if (n) *n = 0;
    if (!kf_cache_usable(c)) return KF_ERR_INVALID;
    if (!entries || !n) {
        kf_cache_set_err(c, "kf_cache_list: no output given");
        return KF_ERR_INVALID;
    }
    int lk = c->bundle ? -2 : kf_cache_lock(c, 0);
    if (lk == -1 || lk == KF_LOCK_BUSY) return kf_lock_status(lk);
    kf_status st = kf_cache_list_unlocked(c, entries, n);
    kf_cache_unlock(lk);
    return st;
}

kf_status kf_cache_get(kf_cache *c, const char *key_hex, kf_cache_entry **out)
{
    if (out) *out = NULL;
    if (!kf_cache_usable(c)) return KF_ERR_INVALID;
    if (!out) {
        kf_cache_set_err(c, "kf_cache_get: no output given");
        return KF_ERR_INVALID;
    }
    kf_cache_key k;
    if (kf_cache_key_parse(key_hex, &k) != KF_OK) {
        kf_cache_set_err(c, "kf_cache_get: not a key (32 lowercase hex digits)");
        return KF_ERR_INVALID;
    }
    if (c->bundle) {
        const kf_bundle_entry *be = kf_bundle_find(c->bundle, key_hex);
        if (!be) {
            kf_cache_set_err(c, "bundle: no entry %s", key_hex);
            return KF_ERR_NOT_FOUND;
        }
        char err[ERRCAP];
        kf_status st = kf_cache_entry_from_json(be->json, be->json_len, out, err, sizeof err);
        if (st != KF_OK) kf_cache_set_err(c, "bundle entry %s: %s", key_hex, err);
        return st;
    }
    int lk = kf_cache_lock(c, 0);
    if (lk == -1 || lk == KF_LOCK_BUSY) return kf_lock_status(lk);
    kf_status st = load_entry(c, key_hex, 1, out, c->err, sizeof c->err);
    kf_cache_unlock(lk);
    return st;
}

kf_status kf_cache_get_unlocked(kf_cache *c, const char *key_hex, kf_cache_entry **out)
{
    char err[KF_CACHE_ERR_MAX];
    return load_entry(c, key_hex, 0, out, err, sizeof err);
}

/* The blob must have exactly the size and hash its manifest names. */
static kf_status check_blob(kf_cache *c, const kf_cache_entry *e, const char *shown,
                            const void *p, size_t n)
{
    if ((uint64_t)n != e->blob_size) {
        kf_cache_set_err(c, "%s is %zu bytes, the manifest says %" PRIu64, shown, n,
                         e->blob_size);
        return KF_ERR_IO;
    }
    char h[KF_KEY_HEX];
    kf_hash128_hex(n ? p : "", n, h);
    if (strncmp(h, e->blob_hash, 32) != 0) {
        kf_cache_set_err(c, "%s: content hash %s does not match the manifest's %.32s "
                         "(corrupted or replaced)", shown, h, e->blob_hash);
        return KF_ERR_IO;
    }
    return KF_OK;
}

kf_status kf_cache_read_blob_unlocked(kf_cache *c, const kf_cache_entry *e, void **blob,
                                      size_t *len)
{
    char shown[KF_CACHE_ERR_MAX / 2], err[ERRCAP];
    char *buf = NULL;
    size_t n = 0;
    if (c->bundle) {
        const kf_bundle_entry *be = kf_bundle_find(c->bundle, e->key_hex);
        if (!be) {
            kf_cache_set_err(c, "bundle: no entry %s", e->key_hex);
            return KF_ERR_NOT_FOUND;
        }
        snprintf(shown, sizeof shown, "bundle member %s.blob", e->key_hex);
        kf_status st = check_blob(c, e, shown, be->blob, be->blob_len);
        if (st != KF_OK) return st;
        buf = malloc(be->blob_len ? be->blob_len : 1);
        if (!buf) {
            kf_cache_set_err(c, "out of memory");
            return KF_ERR_NOMEM;
        }
        if (be->blob_len) memcpy(buf, be->blob, be->blob_len);
        *blob = buf;
        *len = be->blob_len;
        return KF_OK;
    }
    char name[48];
    snprintf(name, sizeof name, "%s.blob", e->key_hex);
    snprintf(shown, sizeof shown, "cache %.400s: entries/%s", c->dir, name);
    kf_status st = kf_read_at(c->efd, name, KF_CACHE_MAX_BLOB, &buf, &n, err, sizeof err);
    if (st != KF_OK) {
        kf_cache_set_err(c, "%s: %s", shown, err);
        return st;
    }
    st = check_blob(c, e, shown, buf, n);
    if (st != KF_OK) {
        free(buf);
        return st;
    }
    *blob = buf;
    *len = n;
    return KF_OK;
}

kf_status kf_cache_read_blob(kf_cache *c, const kf_cache_entry *e, void **blob, size_t *len)
{
    if (blob) *blob = NULL;
    if (len) *len = 0;
    if (!kf_cache_usable(c)) return KF_ERR_INVALID;
    if (!blob || !len || !e || !kf_is_hex32(e->key_hex, strnlen(e->key_hex, KF_KEY_HEX))) {
        kf_cache_set_err(c, "kf_cache_read_blob: no entry with a valid key given");
        return KF_ERR_INVALID;
    }
    int lk = c->bundle ? -2 : kf_cache_lock(c, 0);
    if (lk == -1 || lk == KF_LOCK_BUSY) return kf_lock_status(lk);
    kf_status st = kf_cache_read_blob_unlocked(c, e, blob, len);
    kf_cache_unlock(lk);
    return st;
}

/* ---- changing entries ---- */

kf_status kf_cache_insert_locked(kf_cache *c, const kf_cache_entry *e, const char *json,
                                 const void *blob, size_t blob_len)
{
    char jname[48], bname[48], err[ERRCAP];
    snprintf(jname, sizeof jname, "%s.json", e->key_hex);
    snprintf(bname, sizeof bname, "%s.blob", e->key_hex);
    /* Replacing: the old manifest goes first, so neither a reader nor a crash can ever pair it
     * with the new blob. */
    if (unlinkat(c->efd, jname, 0) < 0 && errno != ENOENT) {
        kf_cache_set_err(c, "cache %s: cannot replace entries/%s: %s", c->dir, jname,
                         strerror(errno));
        return KF_ERR_IO;
    }
    kf_piece pb = {blob_len ? blob : "", blob_len};
    kf_status st = kf_write_atomic(c->efd, bname, 0600, &pb, 1, &c->tmp_seq, err, sizeof err);
    if (st != KF_OK) {
        kf_cache_set_err(c, "cache %s: cannot write entries/%s: %s", c->dir, bname, err);
        return st;
    }
    kf_piece pj = {json, strlen(json)};
    st = kf_write_atomic(c->efd, jname, 0600, &pj, 1, &c->tmp_seq, err, sizeof err);
    if (st != KF_OK) {
        kf_cache_set_err(c, "cache %s: cannot write entries/%s: %s", c->dir, jname, err);
        return st;
    }
    return KF_OK;
}

kf_status kf_cache_insert(kf_cache *c, const kf_cache_entry *e, const void *blob, size_t blob_len,
                          char key_hex[KF_KEY_HEX])
{
    if (key_hex) key_hex[0] = 0;
    if (!kf_cache_usable(c)) return KF_ERR_INVALID;
    if (!e || (!blob && blob_len)) {
        kf_cache_set_err(c, "kf_cache_insert: no entry or no blob given");
        return KF_ERR_INVALID;
    }
    if (!writable(c, "insert")) return KF_ERR_INVALID;
    if (blob_len > KF_CACHE_MAX_BLOB) {
        kf_cache_set_err(c, "cache %s: insert: blob is %zu bytes (limit %u)", c->dir, blob_len,
                         KF_CACHE_MAX_BLOB);
        return KF_ERR_INVALID;
    }
    kf_cache_entry t;
    char *json = NULL, err[KF_CACHE_ERR_MAX - 128];
    kf_status st = kf_entry_prepare(e, blob, blob_len, 0, &t, &json, err, sizeof err);
    if (st != KF_OK) {
        kf_cache_set_err(c, "cache %s: insert: %s", c->dir, err);
        return st;
    }
    int lk = kf_cache_lock(c, 1);
    if (lk < 0) {
        st = KF_ERR_IO;
        goto out_free;
    }
    st = kf_cache_insert_locked(c, &t, json, blob, blob_len);
    if (st == KF_OK) st = kf_cache_bump_generation(c);
    kf_cache_unlock(lk);
    if (st == KF_OK && key_hex) memcpy(key_hex, t.key_hex, KF_KEY_HEX);
out_free:
    free(json);
    return st;
}

kf_status kf_cache_remove(kf_cache *c, const char *key_hex)
{
    if (!kf_cache_usable(c)) return KF_ERR_INVALID;
    kf_cache_key k;
    if (kf_cache_key_parse(key_hex, &k) != KF_OK) {
        kf_cache_set_err(c, "kf_cache_remove: not a key (32 lowercase hex digits)");
        return KF_ERR_INVALID;
    }
    if (!writable(c, "remove")) return KF_ERR_INVALID;
    int lk = kf_cache_lock(c, 1);
    if (lk < 0) return KF_ERR_IO;
    kf_status st = KF_OK;
    int removed = 0;
    static const char *const ext[] = {"json", "blob"}; /* manifest first: no entry w/o blob */
    for (int i = 0; i < 2; i++) {
        char name[48];
        snprintf(name, sizeof name, "%s.%s", key_hex, ext[i]);
        if (unlinkat(c->efd, name, 0) == 0) removed++;
        else if (errno != ENOENT) {
            kf_cache_set_err(c, "cache %s: cannot remove entries/%s: %s", c->dir, name,
                             strerror(errno));
            st = KF_ERR_IO;
            break;
        }
    }
    if (removed) {
        fsync(c->efd);
        kf_status g = kf_cache_bump_generation(c);
        if (st == KF_OK) st = g;
    } else if (st == KF_OK) {
        kf_cache_set_err(c, "cache %s: no entry %s", c->dir, key_hex);
        st = KF_ERR_NOT_FOUND;
    }
    kf_cache_unlock(lk);
    return st;
}

kf_status kf_cache_clear(kf_cache *c)
{
    if (!kf_cache_usable(c)) return KF_ERR_INVALID;
    if (!writable(c, "clear")) return KF_ERR_INVALID;
    int lk = kf_cache_lock(c, 1);
    if (lk < 0) return KF_ERR_IO;
    kf_status st = KF_OK;
    /* manifests first, then blobs, then temp files: under the lock every temp file is a
     * leftover of a writer that died */
    for (int pass = 1; pass <= 3 && st == KF_OK; pass++) {
        int fd = openat(c->efd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d) {
            kf_cache_set_err(c, "cache %s: cannot read entries/: %s", c->dir, strerror(errno));
            if (fd >= 0) close(fd);
            st = KF_ERR_IO;
            break;
        }
        struct dirent *de;
        char key[KF_KEY_HEX];
        while ((de = readdir(d))) {
            int kind = kf_entry_name(de->d_name, key);
            int tmp = !strncmp(de->d_name, KF_CACHE_TMP_PREFIX, strlen(KF_CACHE_TMP_PREFIX));
            if (!(pass < 3 ? kind == pass : tmp)) continue;
            if (unlinkat(c->efd, de->d_name, 0) < 0 && errno != ENOENT) {
                kf_cache_set_err(c, "cache %s: cannot remove entries/%s: %s", c->dir,
                                 de->d_name, strerror(errno));
                st = KF_ERR_IO;
                break;
            }
        }
        closedir(d);
    }
    fsync(c->efd);
    kf_status g = kf_cache_bump_generation(c);
    if (st == KF_OK) st = g;
    kf_cache_unlock(lk);
    return st;
}

kf_status kf_cache_set_disabled(kf_cache *c, const char *key_hex, int disabled, const char *reason)
{
    if (!kf_cache_usable(c)) return KF_ERR_INVALID;
    kf_cache_key k;
    if (kf_cache_key_parse(key_hex, &k) != KF_OK) {
        kf_cache_set_err(c, "kf_cache_set_disabled: not a key (32 lowercase hex digits)");
        return KF_ERR_INVALID;
    }
    if (!writable(c, "set_disabled")) return KF_ERR_INVALID;
    kf_cache_entry *e = NULL;
    char *json = NULL, err[KF_CACHE_ERR_MAX - 128];
    int lk = kf_cache_lock(c, 1);
    if (lk < 0) return kf_lock_status(lk);
    kf_status st = load_entry(c, key_hex, 0, &e, c->err, sizeof c->err);
    if (st != KF_OK) goto out;
    free(e->disabled_reason);
    e->disabled_reason = NULL;
    e->disabled = disabled != 0;
    if (disabled && reason && !(e->disabled_reason = strdup(reason))) {
        kf_cache_set_err(c, "out of memory");
        st = KF_ERR_NOMEM;
        goto out;
    }
    /* serialized through prepare, so a bad reason is refused before anything is written */
    kf_cache_entry t;
    st = kf_entry_prepare(e, NULL, 0, 1, &t, &json, err, sizeof err);
    if (st != KF_OK) {
        kf_cache_set_err(c, "cache %s: set_disabled: %s", c->dir, err);
        goto out;
    }
    char name[48];
    snprintf(name, sizeof name, "%s.json", key_hex);
    kf_piece p = {json, strlen(json)};
    st = kf_write_atomic(c->efd, name, 0600, &p, 1, &c->tmp_seq, err, sizeof err);
    if (st != KF_OK) {
        kf_cache_set_err(c, "cache %s: cannot write entries/%s: %s", c->dir, name, err);
        goto out;
    }
    st = kf_cache_bump_generation(c);
out:
    kf_cache_unlock(lk);
    free(json);
    kf_cache_entry_free(e);
    return st;
}
