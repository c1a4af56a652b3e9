/* Bundles: export/import round trip, op filters, read-only bundle caches, and hostile bundles
 * (path escapes, checksums, truncation, out-of-range offsets, overlaps, unpaired members,
 * inconsistent manifests), each rejected with a clear message and nothing installed. */
#include <stdint.h>

#include <cjson/cJSON.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "tests/c/test_cache_util.h"

#define N_SRC 5
static const char *const SRC_OPS[N_SRC] = {"aten::_softmax", "aten::_softmax", "aten::gelu",
                                           "aten::gelu", "aten::silu"};
static test_entry g_src[N_SRC];

static kf_cache *open_rw(const char *dir)
{
    kf_cache *c = NULL;
    if (!CHECK_EQ_INT(kf_cache_open(&c, dir, 0), KF_OK)) printf("     %s\n", kf_cache_errmsg(c));
    return c;
}

static kf_cache *make_source(const char *dir)
{
    kf_cache *c = open_rw(dir);
    for (int i = 0; i < N_SRC; i++) {
        test_entry_init(&g_src[i], SRC_OPS[i], 40 + i);
        CHECK_EQ_INT(test_insert(c, &g_src[i]), KF_OK);
    }
    CHECK_EQ_INT(kf_cache_set_disabled(c, g_src[3].key_hex, 1, "flaky"), KF_OK);
    return c;
}

static int n_entries(kf_cache *c)
{
    kf_cache_entry **v = NULL;
    int n = -1;
    if (kf_cache_list(c, &v, &n) != KF_OK) return -1;
    kf_cache_entries_free(v, n);
    return n;
}

/* Everything in `a` is in `b`, the same, with the same blob. */
static void same_entries(kf_cache *a, kf_cache *b, int expect)
{
    kf_cache_entry **v = NULL;
    int n = 0;
    CHECK_EQ_INT(kf_cache_list(a, &v, &n), KF_OK);
    CHECK_EQ_INT(n, expect);
    for (int i = 0; i < n; i++) {
        kf_cache_entry *e = NULL;
        if (!CHECK_EQ_INT(kf_cache_get(b, v[i]->key_hex, &e), KF_OK)) continue;
        CHECK_STR(e->op, v[i]->op);
        CHECK_STR(e->source, v[i]->source);
        CHECK_STR(e->launch, v[i]->launch);
        CHECK_STR(e->blob_hash, v[i]->blob_hash);
        CHECK(e->created == v[i]->created);
        CHECK_EQ_INT(e->disabled, v[i]->disabled);
        CHECK_STR(e->disabled_reason, v[i]->disabled_reason);
        void *p1 = NULL, *p2 = NULL;
        size_t l1 = 0, l2 = 0;
        CHECK_EQ_INT(kf_cache_read_blob(a, v[i], &p1, &l1), KF_OK);
        CHECK_EQ_INT(kf_cache_read_blob(b, e, &p2, &l2), KF_OK);
        CHECK(l1 == l2 && p1 && p2 && memcmp(p1, p2, l1) == 0);
        free(p1);
        free(p2);
        kf_cache_entry_free(e);
    }
    kf_cache_entries_free(v, n);
}

static void test_round_trip(const char *root, kf_cache *src)
{
    char *bundle = path_join(root, "all.kfb");
    int n = -1;
    CHECK_EQ_INT(kf_cache_export(src, bundle, NULL, 0, &n), KF_OK);
    CHECK_EQ_INT(n, N_SRC);

    char *d2 = path_join(root, "dst");
    kf_cache *dst = open_rw(d2);
    n = -1;
    if (!CHECK_EQ_INT(kf_cache_import(dst, bundle, test_rebuild, NULL, &n), KF_OK))
        printf("     %s\n", kf_cache_errmsg(dst));
    CHECK_EQ_INT(n, N_SRC);
    CHECK(kf_cache_generation(dst) > 0);
    same_entries(src, dst, N_SRC);
    CHECK_EQ_INT(kf_cache_verify(dst, NULL, NULL), 0);

    /* importing again replaces, still N entries */
    CHECK_EQ_INT(kf_cache_import(dst, bundle, test_rebuild, NULL, &n), KF_OK);
    CHECK_EQ_INT(n_entries(dst), N_SRC);
    CHECK_EQ_INT(count_temp_files(d2), 0);

    /* a read-only cache cannot import */
    kf_cache *ro = NULL;
    CHECK_EQ_INT(kf_cache_open(&ro, d2, 1), KF_OK);
    CHECK_EQ_INT(kf_cache_import(ro, bundle, test_rebuild, NULL, &n), KF_ERR_INVALID);
    CHECK_CONTAINS(kf_cache_errmsg(ro), "read-only");
    kf_cache_free(ro);

    /* the bundle as a read-only in-memory cache */
    kf_cache *b = NULL;
    CHECK_EQ_INT(kf_cache_open_bundle(&b, bundle), KF_OK);
    if (b) {
        CHECK(kf_cache_dir(b) == NULL);
        CHECK_EQ_U64(kf_cache_generation(b), 0);
        same_entries(src, b, N_SRC);
        same_entries(b, src, N_SRC);
        kf_cache_entry *e = NULL;
        CHECK_EQ_INT(kf_cache_get(b, "0123456789abcdef0123456789abcdef", &e), KF_ERR_NOT_FOUND);
        CHECK_EQ_INT(test_insert(b, &g_src[0]), KF_ERR_INVALID);
        CHECK_CONTAINS(kf_cache_errmsg(b), "read-only");
        CHECK_EQ_INT(kf_cache_remove(b, g_src[0].key_hex), KF_ERR_INVALID);
        CHECK_CONTAINS(kf_cache_errmsg(b), "read-only");
        CHECK_EQ_INT(kf_cache_clear(b), KF_ERR_INVALID);
        CHECK_EQ_INT(kf_cache_set_disabled(b, g_src[0].key_hex, 1, "x"), KF_ERR_INVALID);
        CHECK_EQ_INT(kf_cache_import(b, bundle, test_rebuild, NULL, &n), KF_ERR_INVALID);
        CHECK_EQ_INT(kf_cache_verify(b, NULL, NULL), 0);
        /* a manifest changed by the caller no longer matches the bundle's blob */
        CHECK_EQ_INT(kf_cache_get(b, g_src[0].key_hex, &e), KF_OK);
        if (e) {
            void *p = NULL;
            size_t l = 0;
            e->blob_hash[0] = e->blob_hash[0] == '0' ? '1' : '0';
            CHECK_EQ_INT(kf_cache_read_blob(b, e, &p, &l), KF_ERR_IO);
            kf_cache_entry_free(e);
        }
        /* re-exporting the bundle gives the same bytes: exports are deterministic */
        char *again = path_join(root, "again.kfb");
        CHECK_EQ_INT(kf_cache_export(b, again, NULL, 0, &n), KF_OK);
        size_t l1 = 0, l2 = 0;
        char *x1 = read_file(bundle, &l1), *x2 = read_file(again, &l2);
        CHECK(x1 && x2 && l1 == l2 && memcmp(x1, x2, l1) == 0);
        free(x1);
        free(x2);
        free(again);
        kf_cache_free(b);
    }
    kf_cache_free(dst);
    free(d2);
    free(bundle);
}

static void test_filter(const char *root, kf_cache *src)
{
    char *bundle = path_join(root, "gelu.kfb");
    const char *ops[] = {"aten::gelu"};
    int n = -1;
    CHECK_EQ_INT(kf_cache_export(src, bundle, ops, 1, &n), KF_OK);
    CHECK_EQ_INT(n, 2);
    char *d = path_join(root, "gelu");
    kf_cache *c = open_rw(d);
    CHECK_EQ_INT(kf_cache_import(c, bundle, test_rebuild, NULL, &n), KF_OK);
    CHECK_EQ_INT(n, 2);
    kf_cache_entry **v = NULL;
    int m = 0;
    CHECK_EQ_INT(kf_cache_list(c, &v, &m), KF_OK);
    CHECK_EQ_INT(m, 2);
    for (int i = 0; i < m; i++) CHECK_STR(v[i]->op, "aten::gelu");
    kf_cache_entries_free(v, m);

    const char *two[] = {"aten::silu", "aten::_softmax"};
    CHECK_EQ_INT(kf_cache_export(src, bundle, two, 2, &n), KF_OK);
    CHECK_EQ_INT(n, 3);
    const char *none[] = {"aten::nothing"};
    CHECK_EQ_INT(kf_cache_export(src, bundle, none, 1, &n), KF_OK);
    CHECK_EQ_INT(n, 0);
    kf_cache *b = NULL;
    CHECK_EQ_INT(kf_cache_open_bundle(&b, bundle), KF_OK); /* an empty bundle is fine */
    CHECK_EQ_INT(n_entries(b), 0);
    kf_cache_free(b);
    char *slash = path_join(root, "");
    CHECK_EQ_INT(kf_cache_export(src, slash, NULL, 0, &n), KF_ERR_INVALID); /* a folder */
    CHECK_CONTAINS(kf_cache_errmsg(src), "not a file name");
    free(slash);
    CHECK_EQ_INT(kf_cache_export(src, NULL, NULL, 0, &n), KF_ERR_INVALID);
    kf_cache_free(c);
    free(d);
    free(bundle);
}

/* ---- hand-made bundles ---- */

typedef struct mem {
    const char *name;
    const void *data;
    size_t len;
    int64_t off;   /* -1: where it falls */
    int64_t size;  /* -1: len */
} mem;

static void hash_hex(const void *p, size_t n, char out[33])
{
    XXH128_hash_t h = XXH3_128bits(p, n);
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)h.high64,
             (unsigned long long)h.low64);
}

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i);
}

/* Write a bundle with correct checksums for whatever the members say. */
static void make_bundle(const char *path, const mem *m, int n, uint32_t version)
{
    cJSON *idx = cJSON_CreateObject();
    cJSON_AddNumberToObject(idx, "format", 1);
    cJSON *arr = cJSON_AddArrayToObject(idx, "members");
    size_t off = 0, total = 0;
    for (int i = 0; i < n; i++) {
        char h[33];
        hash_hex(m[i].data, m[i].len, h);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", m[i].name);
        cJSON_AddNumberToObject(o, "offset", (double)(m[i].off >= 0 ? (size_t)m[i].off : off));
        cJSON_AddNumberToObject(o, "size", (double)(m[i].size >= 0 ? (size_t)m[i].size : m[i].len));
        cJSON_AddStringToObject(o, "xxh128", h);
        cJSON_AddItemToArray(arr, o);
        off += m[i].len;
    }
    total = off;
    char *itext = cJSON_PrintUnformatted(idx);
    size_t ilen = strlen(itext);
    uint8_t *buf = malloc(32 + ilen + total);
    memcpy(buf, "KFBUNDLE", 8);
    put_u32(buf + 8, version);
    put_u32(buf + 12, (uint32_t)ilen);
    XXH128_hash_t h = XXH3_128bits(itext, ilen);
    for (int i = 0; i < 8; i++) {
        buf[16 + i] = (uint8_t)(h.high64 >> (56 - 8 * i));
        buf[24 + i] = (uint8_t)(h.low64 >> (56 - 8 * i));
    }
    memcpy(buf + 32, itext, ilen);
    off = 32 + ilen;
    for (int i = 0; i < n; i++) {
        memcpy(buf + off, m[i].data, m[i].len);
        off += m[i].len;
    }
    write_file(path, buf, off);
    free(buf);
    free(itext);
    cJSON_Delete(idx);
}

typedef struct files {
    char *json[N_SRC], *blob[N_SRC];
    size_t jlen[N_SRC], blen[N_SRC];
    char jname[N_SRC][40], bname[N_SRC][40];
} files;

static void load_files(const char *srcdir, files *f)
{
    for (int i = 0; i < N_SRC; i++) {
        char *p = entry_path(srcdir, g_src[i].key_hex, "json");
        f->json[i] = read_file(p, &f->jlen[i]);
        free(p);
        p = entry_path(srcdir, g_src[i].key_hex, "blob");
        f->blob[i] = read_file(p, &f->blen[i]);
        free(p);
        snprintf(f->jname[i], 40, "%s.json", g_src[i].key_hex);
        snprintf(f->bname[i], 40, "%s.blob", g_src[i].key_hex);
    }
}

static void free_files(files *f)
{
    for (int i = 0; i < N_SRC; i++) {
        free(f->json[i]);
        free(f->blob[i]);
    }
}

static int count_entry_files(const char *dir)
{
    char *ed = path_join(dir, "entries");
    int n = 0;
    DIR *d = opendir(ed);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)))
            if (de->d_name[0] != '.') n++;
        closedir(d);
    }
    free(ed);
    return n;
}

/* The bundle at `path` must be refused by import (nothing installed, message naming the file
 * and containing `want`) and by open_bundle. */
static void expect_rejected(const char *path, kf_cache *dst, const char *dstdir, const char *want,
                            int line)
{
    uint64_t g = kf_cache_generation(dst);
    int n = -1;
    kf_status st = kf_cache_import(dst, path, test_rebuild, NULL, &n);
    int ok = CHECK(st != KF_OK);
    ok &= CHECK_EQ_INT(n, 0);
    ok &= CHECK_CONTAINS(kf_cache_errmsg(dst), want);
    ok &= CHECK_CONTAINS(kf_cache_errmsg(dst), path);
    ok &= CHECK_EQ_INT(count_entry_files(dstdir), 0);
    ok &= CHECK_EQ_U64(kf_cache_generation(dst), g);
    kf_cache *b = NULL;
    ok &= CHECK(kf_cache_open_bundle(&b, path) != KF_OK);
    ok &= CHECK_CONTAINS(kf_cache_errmsg(b), want);
    ok &= CHECK_EQ_INT(n_entries(b), -1);
    kf_cache_free(b);
    if (!ok) printf("     (case at line %d: %s)\n", line, kf_cache_errmsg(dst));
}
#define REJECTED(want) expect_rejected(path, dst, dstdir, want, __LINE__)

static void test_hostile(const char *root, const char *srcdir, kf_cache *src)
{
    files f;
    load_files(srcdir, &f);
    char *path = path_join(root, "evil.kfb");
    char *dstdir = path_join(root, "victim");
    kf_cache *dst = open_rw(dstdir);
    mem pair[2] = {{f.jname[0], f.json[0], f.jlen[0], -1, -1},
                   {f.bname[0], f.blob[0], f.blen[0], -1, -1}};

    /* sanity: the hand-made bundle of a good pair is accepted */
    make_bundle(path, pair, 2, 1);
    kf_cache *b = NULL;
    CHECK_EQ_INT(kf_cache_open_bundle(&b, path), KF_OK);
    CHECK_EQ_INT(n_entries(b), 1);
    kf_cache_free(b);

    /* names: path escapes and anything not <key>.json|blob, next to a good pair */
    const char *bad_names[] = {"../../x", "/etc/passwd", "entries/x.json", "",
                               "0123456789ABCDEF0123456789abcdef.json",
                               "0123456789abcdef0123456789abcdef.json.bak",
                               "0123456789abcdef0123456789abcdef.exe",
                               "../0123456789abcdef0123456789ab.json", "generation", "lock"};
    for (size_t i = 0; i < sizeof bad_names / sizeof *bad_names; i++) {
        mem m[3] = {pair[0], pair[1], {bad_names[i], "x", 1, -1, -1}};
        make_bundle(path, m, 3, 1);
        REJECTED("is not <32 hex digits>.json or .blob");
        if (bad_names[i][0]) REJECTED(bad_names[i]);
    }
    /* and nothing escaped */
    char *esc = path_join(root, "x");
    CHECK(!file_exists(esc));
    free(esc);

    /* a flipped byte anywhere in a member, or in the index */
    int n = -1;
    CHECK_EQ_INT(kf_cache_export(src, path, NULL, 0, &n), KF_OK);
    size_t len = 0;
    char *good = read_file(path, &len);
    flip_byte(path, -1); /* the last blob */
    REJECTED("checksum mismatch");
    write_file(path, good, len);
    flip_byte(path, (long)len - 200); /* inside some member */
    REJECTED("checksum mismatch");
    write_file(path, good, len);
    flip_byte(path, 40); /* the index */
    REJECTED("index checksum mismatch");
    write_file(path, good, len);
    flip_byte(path, 2); /* the magic */
    REJECTED("not a Kernel Forge bundle");

    /* truncated: in the data, in the index, in the header */
    write_file(path, good, len - 10);
    REJECTED("runs past the end of the file");
    write_file(path, good, 100);
    REJECTED("runs past the end of the file");
    write_file(path, good, 20);
    REJECTED("truncated (20 bytes, shorter than the header)");
    write_file(path, good, 0);
    REJECTED("not a Kernel Forge bundle");
    free(good);

    /* unknown format version */
    make_bundle(path, pair, 2, 7);
    REJECTED("unsupported bundle format 7");

    /* offsets and sizes */
    mem m2[2] = {pair[0], pair[1]};
    m2[1].off = (int64_t)1 << 40;
    make_bundle(path, m2, 2, 1);
    REJECTED("runs past the end of the file");
    m2[1] = pair[1];
    m2[1].size = (int64_t)f.blen[0] + 100000;
    make_bundle(path, m2, 2, 1);
    REJECTED("runs past the end of the file");
    m2[1] = pair[1];
    m2[1].off = 0; /* on top of the manifest */
    m2[1].size = (int64_t)f.blen[0];
    m2[1].data = f.json[0]; /* whose first bytes it then "is", checksum and all */
    m2[1].len = f.blen[0];
    make_bundle(path, m2, 2, 1);
    REJECTED("overlap");

    /* unpaired members */
    mem only_json[1] = {pair[0]};
    make_bundle(path, only_json, 1, 1);
    REJECTED("has no blob");
    mem only_blob[1] = {pair[1]};
    make_bundle(path, only_blob, 1, 1);
    REJECTED("has no manifest");
    mem three[3] = {pair[0], pair[1], {f.jname[1], f.json[1], f.jlen[1], -1, -1}};
    make_bundle(path, three, 3, 1);
    REJECTED("has no blob");
    mem dup[4] = {pair[0], pair[1], pair[1], pair[1]};
    make_bundle(path, dup, 4, 1);
    REJECTED("appears twice");

    /* manifest vs blob: another entry's blob under this key */
    mem swapped[2] = {pair[0], {f.bname[0], f.blob[1], f.blen[1], -1, -1}};
    make_bundle(path, swapped, 2, 1);
    REJECTED("hash is not the manifest's blob_hash");
    char longer[512];
    memcpy(longer, f.blob[0], f.blen[0]);
    memcpy(longer + f.blen[0], "more", 4);
    mem grown[2] = {pair[0], {f.bname[0], longer, f.blen[0] + 4, -1, -1}};
    make_bundle(path, grown, 2, 1);
    REJECTED("blob_size");

    /* a manifest under another key's name */
    mem renamed[2] = {{f.jname[1], f.json[0], f.jlen[0], -1, -1},
                      {f.bname[1], f.blob[0], f.blen[0], -1, -1}};
    make_bundle(path, renamed, 2, 1);
    REJECTED("does not match its name");

    /* a manifest that does not parse, or fails validation */
    mem junk[2] = {{f.jname[0], "{\"format\": 1, ", 14, -1, -1}, pair[1]};
    make_bundle(path, junk, 2, 1);
    REJECTED("not valid JSON");
    char *v2 = strdup(f.json[0]);
    char *fmt = strstr(v2, "\"format\":\t1");
    if (CHECK(fmt != NULL)) fmt[strlen("\"format\":\t")] = '9';
    mem future[2] = {{f.jname[0], v2, f.jlen[0], -1, -1}, pair[1]};
    make_bundle(path, future, 2, 1);
    REJECTED("unsupported manifest format 9");
    free(v2);

    /* a corrupt index that still has the right checksum */
    make_bundle(path, NULL, 0, 1);
    {
        size_t l = 0;
        char *x = read_file(path, &l);
        const char *idx = "{\"format\":1,\"members\":{}}";
        size_t il = strlen(idx);
        uint8_t *buf = malloc(32 + il);
        memcpy(buf, x, 32);
        put_u32(buf + 12, (uint32_t)il);
        XXH128_hash_t h = XXH3_128bits(idx, il);
        for (int i = 0; i < 8; i++) {
            buf[16 + i] = (uint8_t)(h.high64 >> (56 - 8 * i));
            buf[24 + i] = (uint8_t)(h.low64 >> (56 - 8 * i));
        }
        memcpy(buf + 32, idx, il);
        write_file(path, buf, 32 + il);
        REJECTED("no \"members\" array");
        free(buf);
        free(x);
    }

    /* a file that is not there */
    char *missing = path_join(root, "missing.kfb");
    n = -1;
    CHECK_EQ_INT(kf_cache_import(dst, missing, test_rebuild, NULL, &n), KF_ERR_NOT_FOUND);
    CHECK_CONTAINS(kf_cache_errmsg(dst), missing);
    free(missing);

    CHECK_EQ_INT(n_entries(dst), 0);
    kf_cache_free(dst);
    free(dstdir);
    free(path);
    free_files(&f);
}

int main(void)
{
    log_install();
    char *root = tmp_dir();
    char *srcdir = path_join(root, "src");
    kf_cache *src = make_source(srcdir);
    test_round_trip(root, src);
    test_filter(root, src);
    test_hostile(root, srcdir, src);
    kf_cache_free(src);
    free(srcdir);
    rm_rf(root);
    return check_done("test_cache_bundle");
}
