/* Bundles: many entries in one file, for shipping a warmed cache to another machine.
 *
 *   offset 0   "KFBUNDLE"                  magic
 *          8   u32 LE format               KF_CACHE_FORMAT
 *         12   u32 LE index length L
 *         16   XXH3-128 of the index       16 bytes, high half first, both big-endian
 *         32   index, L bytes of JSON      {"format":1,"members":[{"name":"<key>.json",
 *                                           "offset":N,"size":N,"xxh128":"<hex>"},...]}
 *     32 + L   member data                 offsets are relative to here
 *
 * A bundle is untrusted input: everything is checked (names, bounds, overlaps, checksums, every
 * manifest against its blob) before any of it is used, and any problem rejects the whole file. */
#include "cache/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "common/log.h"

#define MAGIC "KFBUNDLE"
#define HEADER 32
#define MAX_INDEX (64u << 20)
#define MAX_MEMBERS 400000
#define ERRCAP (KF_CACHE_ERR_MAX / 2)

typedef struct member {
    char name[40];
    char key[KF_KEY_HEX];
    int kind; /* 1 manifest, 2 blob */
    uint64_t off, size;
    char hash[KF_KEY_HEX];
} member;

static uint32_t rd_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void wr_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i);
}

static void hash_bytes(const void *p, size_t n, uint8_t out[16])
{
    XXH128_hash_t h = XXH3_128bits(n ? p : "", n);
    for (int i = 0; i < 8; i++) {
        out[i] = (uint8_t)(h.high64 >> (56 - 8 * i));
        out[8 + i] = (uint8_t)(h.low64 >> (56 - 8 * i));
    }
}

void kf_bundle_free(kf_bundle *b)
{
    if (!b) return;
    for (int i = 0; i < b->n; i++) kf_cache_entry_free(b->entries[i].e);
    free(b->entries);
    free(b->data);
    free(b);
}

static int cmp_bundle_entry(const void *a, const void *b)
{
    return strcmp(((const kf_bundle_entry *)a)->e->key_hex, ((const kf_bundle_entry *)b)->e->key_hex);
}

const kf_bundle_entry *kf_bundle_find(const kf_bundle *b, const char *key_hex)
{
    kf_cache_entry probe;
    memset(&probe, 0, sizeof probe);
    snprintf(probe.key_hex, sizeof probe.key_hex, "%.32s", key_hex);
    kf_bundle_entry k = {.e = &probe};
    return b->n ? bsearch(&k, b->entries, (size_t)b->n, sizeof k, cmp_bundle_entry) : NULL;
}

static int cmp_off(const void *a, const void *b)
{
    const member *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp(((const member *)a)->name, ((const member *)b)->name);
}

static int get_u64(const cJSON *j, uint64_t *v)
{
    if (!cJSON_IsNumber(j)) return 0;
    double d = j->valuedouble;
    /* d == d rules out NaN; the bound keeps the value exact */
    if (!(d == d) || d < 0 || d > 9007199254740992.0 || d != (double)(uint64_t)d) return 0;
    *v = (uint64_t)d;
    return 1;
}

/* Parse and check the index; fills m[] (n members) with names, bounds and verified checksums. */
static kf_status parse_index(const uint8_t *data, size_t size, uint32_t ilen, member **out,
                             int *nout, char *err, size_t cap)
{
    char *buf = NULL;
    cJSON *idx = NULL;
    member *m = NULL;
    kf_status st = KF_ERR_IO;
    const uint8_t *base = data + HEADER + ilen;
    const uint64_t avail = size - HEADER - ilen;
    if (memchr(data + HEADER, 0, ilen)) {
        kf_errf(err, cap, "the index contains a NUL byte");
        return KF_ERR_IO;
    }
    buf = malloc((size_t)ilen + 1);
    if (!buf) {
        kf_errf(err, cap, "out of memory");
        return KF_ERR_NOMEM;
    }
    memcpy(buf, data + HEADER, ilen);
    buf[ilen] = '\0';
    idx = cJSON_ParseWithOpts(buf, NULL, 1);
    if (!idx || !cJSON_IsObject(idx)) {
        kf_errf(err, cap, "the index is not a JSON object");
        goto out;
    }
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(idx, "format");
    if (!cJSON_IsNumber(f) || f->valuedouble != KF_CACHE_FORMAT) {
        kf_errf(err, cap, "the index has an unsupported format (this build reads format %d)",
                KF_CACHE_FORMAT);
        goto out;
    }
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(idx, "members");
    if (!cJSON_IsArray(arr)) {
        kf_errf(err, cap, "the index has no \"members\" array");
        goto out;
    }
    int n = cJSON_GetArraySize(arr);
    if (n > MAX_MEMBERS) {
        kf_errf(err, cap, "the index lists %d members (limit %d)", n, MAX_MEMBERS);
        goto out;
    }
    m = calloc((size_t)n + 1, sizeof *m);
    if (!m) {
        kf_errf(err, cap, "out of memory");
        st = KF_ERR_NOMEM;
        goto out;
    }
    int i = 0;
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        char shown[100];
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(it, "name");
        const cJSON *off = cJSON_GetObjectItemCaseSensitive(it, "offset");
        const cJSON *sz = cJSON_GetObjectItemCaseSensitive(it, "size");
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(it, "xxh128");
        if (!cJSON_IsObject(it) || !cJSON_IsString(nm)) {
            kf_errf(err, cap, "index member %d has no name", i);
            goto out;
        }
        size_t nlen = strlen(nm->valuestring);
        kf_printable(nm->valuestring, nlen, shown, sizeof shown);
        /* only <key>.json / <key>.blob: no paths, no escapes, nothing else */
        m[i].kind = nlen < sizeof m[i].name ? kf_entry_name(nm->valuestring, m[i].key) : 0;
        if (!m[i].kind) {
            kf_errf(err, cap, "member name \"%s\" is not <32 hex digits>.json or .blob", shown);
            goto out;
        }
        memcpy(m[i].name, nm->valuestring, nlen + 1);
        if (!get_u64(off, &m[i].off) || !get_u64(sz, &m[i].size)) {
            kf_errf(err, cap, "member %s: offset and size must be integers >= 0", shown);
            goto out;
        }
        if (!cJSON_IsString(h) || !kf_is_hex32(h->valuestring, strlen(h->valuestring))) {
            kf_errf(err, cap, "member %s: xxh128 must be 32 lowercase hex digits", shown);
            goto out;
        }
        memcpy(m[i].hash, h->valuestring, KF_KEY_HEX);
        if (m[i].off > avail || m[i].size > avail - m[i].off) {
            kf_errf(err, cap,
                    "member %s (offset %llu, %llu bytes) runs past the end of the file "
                    "(%llu bytes of member data; truncated?)", shown,
                    (unsigned long long)m[i].off, (unsigned long long)m[i].size,
                    (unsigned long long)avail);
            goto out;
        }
        uint64_t lim = m[i].kind == 1 ? KF_CACHE_MAX_MANIFEST : KF_CACHE_MAX_BLOB;
        if (m[i].size > lim) {
            kf_errf(err, cap, "member %s is too large (%llu bytes, limit %llu)", shown,
                    (unsigned long long)m[i].size, (unsigned long long)lim);
            goto out;
        }
        char got[KF_KEY_HEX];
        kf_hash128_hex(m[i].size ? base + m[i].off : (const uint8_t *)"", m[i].size, got);
        if (strcmp(got, m[i].hash) != 0) {
            kf_errf(err, cap, "member %s: checksum mismatch (corrupted)", shown);
            goto out;
        }
    }
    if (n > 1) {
        qsort(m, (size_t)n, sizeof *m, cmp_off);
        for (int k = 0; k + 1 < n; k++) {
            if (m[k].off + m[k].size > m[k + 1].off) {
                kf_errf(err, cap, "members %s and %s overlap", m[k].name, m[k + 1].name);
                goto out;
            }
        }
        qsort(m, (size_t)n, sizeof *m, cmp_name);
        for (int k = 0; k + 1 < n; k++) {
            if (!strcmp(m[k].name, m[k + 1].name)) {
                kf_errf(err, cap, "member %s appears twice", m[k].name);
                goto out;
            }
        }
    }
    *out = m;
    *nout = n;
    m = NULL;
    st = KF_OK;
out:
    free(m);
    cJSON_Delete(idx);
    free(buf);
    return st;
}

kf_status kf_bundle_parse(uint8_t *data, size_t size, const char *what, kf_bundle **out,
                          char *err, size_t cap)
{
    char sub[ERRCAP];
    member *m = NULL;
    int n = 0;
    kf_status st = KF_ERR_IO;
    *out = NULL;
    kf_bundle *b = calloc(1, sizeof *b);
    if (!b) {
        free(data);
        kf_errf(err, cap, "%s: out of memory", what);
        return KF_ERR_NOMEM;
    }
    b->data = data;
    b->size = size;
    if (size < 8 || memcmp(data, MAGIC, 8) != 0) {
        kf_errf(sub, sizeof sub, "not a Kernel Forge bundle (no KFBUNDLE header)");
        goto fail;
    }
    if (size < HEADER) {
        kf_errf(sub, sizeof sub, "truncated (%zu bytes, shorter than the header)", size);
        goto fail;
    }
    uint32_t ver = rd_u32(data + 8), ilen = rd_u32(data + 12);
    if (ver != KF_CACHE_FORMAT) {
        kf_errf(sub, sizeof sub, "unsupported bundle format %u (this build reads format %d)",
                ver, KF_CACHE_FORMAT);
        goto fail;
    }
    if (ilen > MAX_INDEX || ilen > size - HEADER) {
        kf_errf(sub, sizeof sub, "the index (%u bytes) runs past the end of the file (%zu "
                "bytes; truncated?)", ilen, size);
        goto fail;
    }
    uint8_t h[16];
    hash_bytes(data + HEADER, ilen, h);
    if (memcmp(h, data + 16, 16) != 0) {
        kf_errf(sub, sizeof sub, "index checksum mismatch (corrupted)");
        goto fail;
    }
    st = parse_index(data, size, ilen, &m, &n, sub, sizeof sub);
    if (st != KF_OK) goto fail;
    st = KF_ERR_IO;

    /* sorted by name, each key's blob comes right before its manifest */
    const uint8_t *base = data + HEADER + ilen;
    b->entries = calloc((size_t)n / 2 + 1, sizeof *b->entries);
    if (!b->entries) {
        kf_errf(sub, sizeof sub, "out of memory");
        st = KF_ERR_NOMEM;
        goto fail;
    }
    for (int i = 0; i < n;) {
        const member *bl = &m[i], *js = i + 1 < n ? &m[i + 1] : NULL;
        if (bl->kind == 1) {
            kf_errf(sub, sizeof sub, "manifest %s has no blob (%s.blob is missing)", bl->name,
                    bl->key);
            goto fail;
        }
        if (!js || js->kind != 1 || strcmp(js->key, bl->key) != 0) {
            kf_errf(sub, sizeof sub, "blob %s has no manifest", bl->name);
            goto fail;
        }
        i += 2;
        kf_bundle_entry *be = &b->entries[b->n];
        char mer[ERRCAP / 2];
        st = kf_cache_entry_from_json((const char *)base + js->off, (size_t)js->size, &be->e,
                                      mer, sizeof mer);
        if (st == KF_OK) st = kf_entry_check_loaded(be->e, js->key, mer, sizeof mer);
        if (st != KF_OK) {
            kf_errf(sub, sizeof sub, "member %s: %s", js->name, mer);
            if (st != KF_ERR_NOMEM) st = KF_ERR_IO;
            kf_cache_entry_free(be->e);
            be->e = NULL;
            goto fail;
        }
        b->n++;
        st = KF_ERR_IO;
        if (be->e->blob_size != bl->size) {
            kf_errf(sub, sizeof sub, "member %s says blob_size %llu but %s is %llu bytes",
                    js->name, (unsigned long long)be->e->blob_size, bl->name,
                    (unsigned long long)bl->size);
            goto fail;
        }
        if (strcmp(be->e->blob_hash, bl->hash) != 0) {
            kf_errf(sub, sizeof sub, "member %s: the blob's hash is not the manifest's "
                    "blob_hash", bl->name);
            goto fail;
        }
        be->json = (const char *)base + js->off;
        be->json_len = (size_t)js->size;
        be->blob = base + bl->off;
        be->blob_len = (size_t)bl->size;
    }
    free(m);
    *out = b;
    return KF_OK;

fail:
    kf_errf(err, cap, "%s: %s", what, sub);
    free(m);
    kf_bundle_free(b);
    return st;
}

kf_status kf_bundle_load(const char *path, kf_bundle **out, char *err, size_t cap)
{
    char what[600], sub[ERRCAP];
    char *data = NULL;
    size_t size = 0;
    *out = NULL;
    snprintf(what, sizeof what, "bundle %.500s", path);
    /* the user names the file, so a symlink is fine; a FIFO is not */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        int e = errno;
        kf_errf(err, cap, "%s: cannot open: %s", what, strerror(e));
        return e == ENOENT ? KF_ERR_NOT_FOUND : KF_ERR_IO;
    }
    kf_status st = kf_read_fd(fd, KF_BUNDLE_MAX_SIZE, &data, &size, sub, sizeof sub);
    close(fd);
    if (st != KF_OK) {
        kf_errf(err, cap, "%s: %s", what, sub);
        return st;
    }
    return kf_bundle_parse((uint8_t *)data, size, what, out, err, cap);
}

kf_status kf_cache_open_bundle(kf_cache **out, const char *bundle_path)
{
    if (!out) return KF_ERR_INVALID;
    *out = NULL;
    kf_cache *c = calloc(1, sizeof *c);
    if (!c) return KF_ERR_NOMEM;
    c->dfd = c->efd = -1;
    c->read_only = 1;
    kf_status st = KF_ERR_INVALID;
    if (!bundle_path || !*bundle_path) kf_cache_set_err(c, "kf_cache_open_bundle: no bundle path given");
    else st = kf_bundle_load(bundle_path, &c->bundle, c->err, sizeof c->err);
    /* like kf_cache_open: a failed handle carries the message until kf_cache_free */
    if (st != KF_OK) KF_DEBUG("%s", c->err);
    *out = c;
    return st;
}

/* ---- export ---- */

typedef struct chosen {
    kf_cache_entry *e;
    char *json;
    void *blob;
    size_t blob_len;
} chosen;

/* An item of `ops` is an op name or an entry's key (the fleet cache exports one entry). */
static int wanted(const kf_cache_entry *e, const char *const *ops, int n_ops)
{
    if (n_ops <= 0) return 1;
    for (int i = 0; i < n_ops; i++)
        if (ops[i] && (!strcmp(ops[i], e->op) || !strcmp(ops[i], e->key_hex))) return 1;
    return 0;
}

static kf_status add_member(cJSON *arr, const char *key, const char *ext, uint64_t off,
                            const void *p, size_t n)
{
    char name[48], h[KF_KEY_HEX];
    snprintf(name, sizeof name, "%s.%s", key, ext);
    kf_hash128_hex(n ? p : "", n, h);
    cJSON *m = cJSON_CreateObject();
    if (!m) return KF_ERR_NOMEM;
    cJSON_AddItemToArray(arr, m);
    int ok = cJSON_AddStringToObject(m, "name", name) != NULL;
    ok &= cJSON_AddNumberToObject(m, "offset", (double)off) != NULL;
    ok &= cJSON_AddNumberToObject(m, "size", (double)n) != NULL;
    ok &= cJSON_AddStringToObject(m, "xxh128", h) != NULL;
    return ok ? KF_OK : KF_ERR_NOMEM;
}

/* The folder holding `path` (opened) and the file name within it. */
static kf_status open_parent(const char *path, int *dfd, const char **name)
{
    const char *slash = strrchr(path, '/');
    *name = slash ? slash + 1 : path;
    if (!**name || !strcmp(*name, ".") || !strcmp(*name, "..")) return KF_ERR_INVALID;
    char *dir = slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
    if (!dir) return KF_ERR_NOMEM;
    *dfd = open(*dir ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    return *dfd < 0 ? KF_ERR_IO : KF_OK;
}

kf_status kf_cache_export(kf_cache *c, const char *bundle_path, const char *const *ops, int n_ops,
                          int *n_exported)
{
    kf_cache_entry **v = NULL;
    chosen *ch = NULL;
    kf_piece *pieces = NULL;
    cJSON *idx = NULL;
    char *itext = NULL;
    int n = 0, nc = 0, dfd = -1;
    if (n_exported) *n_exported = 0;
    if (!kf_cache_usable(c)) return KF_ERR_INVALID;
    if (!bundle_path || !*bundle_path || (n_ops > 0 && !ops)) {
        kf_cache_set_err(c, "kf_cache_export: no bundle path or op list given");
        return KF_ERR_INVALID;
    }
    int lk = c->bundle ? -2 : kf_cache_lock(c, 0);
    if (lk == -1) return KF_ERR_IO;
    kf_status st = kf_cache_list_unlocked(c, &v, &n);
    if (st != KF_OK) {
        kf_cache_unlock(lk);
        return st;
    }
    ch = calloc((size_t)n + 1, sizeof *ch);
    if (!ch) {
        kf_cache_unlock(lk);
        st = KF_ERR_NOMEM;
        goto out_nomem;
    }
    for (int i = 0; i < n; i++) {
        if (!wanted(v[i], ops, n_ops)) continue;
        chosen *x = &ch[nc];
        kf_status bs = kf_cache_read_blob_unlocked(c, v[i], &x->blob, &x->blob_len);
        if (bs == KF_ERR_NOMEM) {
            kf_cache_unlock(lk);
            st = bs;
            goto out_nomem;
        }
        if (bs != KF_OK) {
            KF_WARN("export: skipping entry %s: %s", v[i]->key_hex, c->err);
            continue;
        }
        x->e = v[i];
        x->json = kf_cache_entry_to_json(v[i]);
        nc++;
        if (!x->json) {
            kf_cache_unlock(lk);
            st = KF_ERR_NOMEM;
            goto out_nomem;
        }
    }
    kf_cache_unlock(lk);

    /* the index, then the pieces in the same order as their offsets */
    idx = cJSON_CreateObject();
    cJSON *arr = idx ? cJSON_AddArrayToObject(idx, "members") : NULL;
    if (!arr || !cJSON_AddNumberToObject(idx, "format", KF_CACHE_FORMAT)) goto out_nomem;
    uint64_t off = 0;
    for (int i = 0; i < nc; i++) {
        size_t jl = strlen(ch[i].json);
        if (add_member(arr, ch[i].e->key_hex, "json", off, ch[i].json, jl) != KF_OK) goto out_nomem;
        off += jl;
        if (add_member(arr, ch[i].e->key_hex, "blob", off, ch[i].blob, ch[i].blob_len) != KF_OK)
            goto out_nomem;
        off += ch[i].blob_len;
    }
    itext = cJSON_PrintUnformatted(idx);
    if (!itext) goto out_nomem;
    size_t ilen = strlen(itext);
    if (ilen > MAX_INDEX || off > KF_BUNDLE_MAX_SIZE) {
        kf_cache_set_err(c, "export: the bundle would be too large");
        st = KF_ERR_INVALID;
        goto out;
    }
    uint8_t header[HEADER];
    memcpy(header, MAGIC, 8);
    wr_u32(header + 8, KF_CACHE_FORMAT);
    wr_u32(header + 12, (uint32_t)ilen);
    hash_bytes(itext, ilen, header + 16);
    pieces = calloc(2 * (size_t)nc + 2, sizeof *pieces);
    if (!pieces) goto out_nomem;
    int np = 0;
    pieces[np++] = (kf_piece){header, HEADER};
    pieces[np++] = (kf_piece){itext, ilen};
    for (int i = 0; i < nc; i++) {
        pieces[np++] = (kf_piece){ch[i].json, strlen(ch[i].json)};
        pieces[np++] = (kf_piece){ch[i].blob, ch[i].blob_len};
    }
    const char *name;
    st = open_parent(bundle_path, &dfd, &name);
    if (st != KF_OK) {
        kf_cache_set_err(c, "export: %s: %s", bundle_path,
                         st == KF_ERR_INVALID ? "not a file name" : strerror(errno));
        goto out;
    }
    char err[ERRCAP];
    unsigned seq = 0;
    st = kf_write_atomic(dfd, name, 0644, pieces, np, &seq, err, sizeof err);
    if (st != KF_OK) {
        kf_cache_set_err(c, "export: %s: %s", bundle_path, err);
        goto out;
    }
    if (n_exported) *n_exported = nc;
    goto out;

out_nomem:
    kf_cache_set_err(c, "export: out of memory");
    st = KF_ERR_NOMEM;
out:
    if (dfd >= 0) close(dfd);
    free(pieces);
    if (itext) cJSON_free(itext);
    cJSON_Delete(idx);
    for (int i = 0; i < nc; i++) {
        free(ch[i].json);
        free(ch[i].blob);
    }
    free(ch);
    kf_cache_entries_free(v, n);
    return st;
}

/* ---- import ---- */

/* A host entry's blob built here; the shallow entry t gets its hash and size. KF_OK or a
 * reason in err (the entry is then skipped). */
static kf_status rebuilt(const kf_bundle_entry *be, kf_cache_rebuild_fn rebuild, void *user,
                         kf_cache_entry *t, void **blob, size_t *len, char *err, size_t cap)
{
    *blob = NULL;
    *len = 0;
    if (!rebuild) {
        kf_errf(err, cap, "no compiler was given to rebuild it here");
        return KF_ERR_UNSUPPORTED;
    }
    kf_status st = rebuild(user, be->e, blob, len, err, cap);
    if (st == KF_OK && (!*blob || !*len || *len > KF_CACHE_MAX_BLOB)) {
        kf_errf(err, cap, "the rebuild gave no usable blob");
        st = KF_ERR_KERNEL;
    }
    if (st != KF_OK) {
        free(*blob);
        *blob = NULL;
        return st;
    }
    *t = *be->e;
    kf_hash128_hex(*blob, *len, t->blob_hash);
    t->blob_size = *len;
    return KF_OK;
}

/* Under the lock: an entry disabled here keeps that (and its reason) when the bundle brings the
 * same key enabled. *local holds the local manifest, whose strings t may now borrow. */
static kf_status keep_local_disabled(kf_cache *c, kf_cache_entry *t, char **json,
                                     kf_cache_entry **local, char *err, size_t cap)
{
    *local = NULL;
    if (t->disabled || kf_cache_get_unlocked(c, t->key_hex, local) != KF_OK) return KF_OK;
    if (!(*local)->disabled) return KF_OK;
    kf_cache_entry u = *t, shallow;
    u.disabled = 1;
    u.disabled_reason = (*local)->disabled_reason;
    char *j = NULL;
    kf_status st = kf_entry_prepare(&u, NULL, 0, 1, &shallow, &j, err, cap);
    if (st != KF_OK) return st;
    free(*json);
    *json = j;
    *t = shallow;
    return KF_OK;
}

kf_status kf_cache_import(kf_cache *c, const char *bundle_path, kf_cache_rebuild_fn rebuild,
                          void *user, int *n_installed)
{
    kf_bundle *b = NULL;
    char **json = NULL;
    kf_cache_entry *t = NULL, **local = NULL;
    void **built = NULL;
    size_t *built_len = NULL;
    char err[ERRCAP];
    if (n_installed) *n_installed = 0;
    if (!kf_cache_usable(c)) return KF_ERR_INVALID;
    if (!bundle_path || !*bundle_path) {
        kf_cache_set_err(c, "kf_cache_import: no bundle path given");
        return KF_ERR_INVALID;
    }
    if (c->read_only) {
        kf_cache_set_err(c, "cache %s: import: the cache is read-only",
                         c->dir ? c->dir : "(bundle)");
        return KF_ERR_INVALID;
    }
    kf_status st = kf_bundle_load(bundle_path, &b, c->err, sizeof c->err);
    if (st != KF_OK) return st;
    /* everything is serialized and checked (host code rebuilt) before the first file is written */
    size_t m = (size_t)b->n + 1;
    json = calloc(m, sizeof *json);
    t = calloc(m, sizeof *t);
    local = calloc(m, sizeof *local);
    built = calloc(m, sizeof *built);
    built_len = calloc(m, sizeof *built_len);
    if (!json || !t || !local || !built || !built_len) {
        kf_cache_set_err(c, "import: out of memory");
        st = KF_ERR_NOMEM;
        goto out;
    }
    for (int i = 0; i < b->n; i++) {
        const kf_bundle_entry *be = &b->entries[i];
        kf_cache_entry host;
        const kf_cache_entry *e = be->e;
        if (!strcmp(e->backend, "host")) {
            st = rebuilt(be, rebuild, user, &host, &built[i], &built_len[i], err, sizeof err);
            if (st == KF_ERR_NOMEM) goto nomem;
            if (st != KF_OK) {
                KF_WARN("bundle %.400s: host entry %s (%s) not installed: its shared object is "
                        "never used as shipped, and %s", bundle_path, e->key_hex, e->signature,
                        err);
                continue;
            }
            e = &host;
        }
        st = kf_entry_prepare(e, NULL, 0, 1, &t[i], &json[i], err, sizeof err);
        if (st != KF_OK) {
            kf_cache_set_err(c, "bundle %.400s: %s", bundle_path, err);
            goto out;
        }
    }
    st = KF_OK;
    int lk = kf_cache_lock(c, 1);
    if (lk < 0) {
        st = KF_ERR_IO;
        goto out;
    }
    int done = 0;
    for (int i = 0; i < b->n && st == KF_OK; i++) {
        if (!json[i]) continue; /* skipped above */
        st = keep_local_disabled(c, &t[i], &json[i], &local[i], err, sizeof err);
        if (st != KF_OK) {
            kf_cache_set_err(c, "bundle %.400s: %s", bundle_path, err);
            break;
        }
        const void *blob = built[i] ? built[i] : b->entries[i].blob;
        size_t len = built[i] ? built_len[i] : b->entries[i].blob_len;
        st = kf_cache_insert_locked(c, &t[i], json[i], blob, len);
        if (st == KF_OK) done++;
    }
    if (done) {
        kf_status g = kf_cache_bump_generation(c);
        if (st == KF_OK) st = g;
    }
    kf_cache_unlock(lk);
    if (n_installed) *n_installed = done;
    goto out;

nomem:
    kf_cache_set_err(c, "import: out of memory");
out:
    for (int i = 0; b && i < b->n; i++) {
        if (json) free(json[i]);
        if (local) kf_cache_entry_free(local[i]);
        if (built) free(built[i]);
    }
    free(json);
    free(t);
    free(local);
    free(built);
    free(built_len);
    kf_bundle_free(b);
    return st;
}
