/* Internals shared by the cache's files: the handle, hex and hash helpers, safe file I/O and
 * the in-memory form of a validated bundle. Nothing here is part of the public API. */
#ifndef KF_CACHE_INTERNAL_H
#define KF_CACHE_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cache/cache.h"
#include "common/fsio.h"
#include "common/hex.h"
#include "common/status.h"

#define KF_CACHE_ERR_MAX 1024
#define KF_CACHE_TMP_PREFIX KF_TMP_PREFIX /* temp files: never an entry name, removed by clear */
#define KF_BUNDLE_MAX_SIZE ((uint64_t)16 << 30)

/* One entry of a validated bundle: the parsed manifest plus where its two members lie. */
typedef struct kf_bundle_entry {
    kf_cache_entry *e;
    const char *json; /* member bytes inside kf_bundle.data */
    size_t json_len;
    const uint8_t *blob;
    size_t blob_len;
} kf_bundle_entry;

typedef struct kf_bundle {
    uint8_t *data; /* the whole file */
    size_t size;
    int n;
    kf_bundle_entry *entries; /* sorted by key */
} kf_bundle;

/* A handle is used by one thread at a time (like a SQLite connection); processes coordinate
 * through the lock file, never through shared memory. */
struct kf_cache {
    char *dir;        /* NULL for a bundle */
    int dfd, efd;     /* the folder and entries/ (O_DIRECTORY), -1 for a bundle */
    int read_only;
    int nowait;       /* kf_cache_set_nowait: a held lock is KF_ERR_BUSY, not a wait */
    unsigned tmp_seq; /* makes temp names unique within this handle */
    kf_bundle *bundle;
    struct {
        char key[KF_KEY_HEX];
        uint64_t hash; /* of the message */
    } *warned;        /* bad entries already warned about (kf_cache_list) */
    int n_warned, cap_warned;
    char err[KF_CACHE_ERR_MAX];
};

/* A handle whose open failed carries only its message (kf_cache_errmsg); every other call on
 * it fails and leaves that message alone. */
static inline int kf_cache_usable(const kf_cache *c)
{
    return c && (c->bundle || (c->dfd >= 0 && c->efd >= 0));
}

/* ---- helpers (key.c) ---- */
void kf_cache_set_err(kf_cache *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int kf_is_hex32(const char *s, size_t n); /* exactly n == 32 lowercase hex digits */
void kf_hash128_hex(const void *p, size_t n, char out[KF_KEY_HEX]);
/* The key an entry's own fields give (what kf_cache_key_compute says for them). */
kf_cache_key kf_cache_entry_key(const kf_cache_entry *e);
/* "<32 hex>.json" / "<32 hex>.blob": copies the key into key_hex and returns 1 (json) or
 * 2 (blob); 0 for any other name. */
int kf_entry_name(const char *name, char key_hex[KF_KEY_HEX]);
/* A name from an untrusted source, safe to print: control bytes replaced, length capped. */
void kf_printable(const char *s, size_t n, char *out, size_t cap);

/* ---- the lock (lock.c) ---- */
/* flock on <dir>/lock. Returns the descriptor, -2 when a read-only cache has no usable lock
 * file (readers then go without), KF_LOCK_BUSY when c->nowait and another process holds it, or
 * -1; both with c->err set. kf_lock_status maps a failure to its status. */
#define KF_LOCK_BUSY (-3)
static inline kf_status kf_lock_status(int lk)
{
    return lk == KF_LOCK_BUSY ? KF_ERR_BUSY : KF_ERR_IO;
}
int kf_cache_lock(kf_cache *c, int exclusive);
void kf_cache_unlock(int fd);

/* ---- manifests (manifest.c, store.c) ---- */
/* What a manifest read from a file or a bundle must satisfy beyond kf_cache_entry_from_json:
 * its key is the one in its name, and the one its own fields give. */
kf_status kf_entry_check_loaded(const kf_cache_entry *e, const char *name_key, char *err,
                                size_t cap);
/* The finished entry for a write: key checked (or filled in when zero), blob hash/size and time
 * set from `blob` unless `keep` (an entry that was read back: its blob is already checked),
 * serialized and validated by parsing it back. *json is malloc'ed; out_shallow borrows e's
 * strings. */
kf_status kf_entry_prepare(const kf_cache_entry *e, const void *blob, size_t blob_len, int keep,
                           kf_cache_entry *out_shallow, char **json, char *err, size_t cap);
/* Insert under the exclusive lock (no generation bump: the caller does it once). */
kf_status kf_cache_insert_locked(kf_cache *c, const kf_cache_entry *e, const char *json,
                                 const void *blob, size_t blob_len);
kf_status kf_cache_bump_generation(kf_cache *c);
kf_status kf_cache_list_unlocked(kf_cache *c, kf_cache_entry ***entries, int *n);
/* entries/<key>.json under a lock the caller holds (no message kept on the handle). */
kf_status kf_cache_get_unlocked(kf_cache *c, const char *key_hex, kf_cache_entry **out);
kf_status kf_cache_read_blob_unlocked(kf_cache *c, const kf_cache_entry *e, void **blob,
                                      size_t *len);

/* ---- bundles (bundle.c) ---- */
kf_status kf_bundle_load(const char *path, kf_bundle **out, char *err, size_t cap);
/* Parse an in-memory bundle image (takes ownership of data). */
kf_status kf_bundle_parse(uint8_t *data, size_t size, const char *what, kf_bundle **out,
                          char *err, size_t cap);
void kf_bundle_free(kf_bundle *b);
const kf_bundle_entry *kf_bundle_find(const kf_bundle *b, const char *key_hex);

#endif
