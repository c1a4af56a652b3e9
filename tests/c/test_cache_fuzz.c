/* Fuzz-style robustness: random and mutated bytes fed to the manifest parser and to the bundle
 * reader (through a temp file). Nothing may crash or leak (this also runs under ASan+UBSan);
 * whatever is accepted must be usable: a parsed manifest prints and parses again, an opened
 * bundle lists and reads. KF_FUZZ_ITERS overrides the iteration count, KF_FUZZ_SEED the
 * random seed. */
#include <stdint.h>

#include <cjson/cJSON.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "tests/c/test_cache_util.h"

static uint64_t g_rng = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

static size_t rnd_below(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

static const char *const TOKENS[] = {
    "{", "}", "[", "]", ",", ":", "\"", "null", "true", "false", "0", "-1", "1e400", "1.5",
    "\"format\":1", "\"key\":", "\"sig\":\"\"", "\\u0000", "\\", "9007199254740993", "\"\"",
    "{\"a\":[[[[[[[[[[]]]]]]]]]]}", "\"launch\":{}", "\"outputs\":[]", "\xff", "\x01",
};

/* Mutate buf[0..*len) in place (capacity cap). */
static void mutate(uint8_t *buf, size_t *len, size_t cap)
{
    int rounds = 1 + (int)rnd_below(4);
    for (int r = 0; r < rounds; r++) {
        size_t n = *len;
        switch (rnd_below(7)) {
        case 0: /* flip a bit */
            if (n) buf[rnd_below(n)] ^= (uint8_t)(1u << rnd_below(8));
            break;
        case 1: /* random byte */
            if (n) buf[rnd_below(n)] = (uint8_t)rnd();
            break;
        case 2: /* truncate */
            *len = rnd_below(n + 1);
            break;
        case 3: { /* delete a range */
            if (!n) break;
            size_t a = rnd_below(n), b = a + rnd_below(n - a + 1);
            memmove(buf + a, buf + b, n - b);
            *len = n - (b - a);
            break;
        }
        case 4: { /* insert a token */
            const char *t = TOKENS[rnd_below(sizeof TOKENS / sizeof *TOKENS)];
            size_t tl = strlen(t), at = rnd_below(n + 1);
            if (n + tl > cap) break;
            memmove(buf + at + tl, buf + at, n - at);
            memcpy(buf + at, t, tl);
            *len = n + tl;
            break;
        }
        case 5: { /* duplicate a range */
            if (!n) break;
            size_t a = rnd_below(n), l = rnd_below(n - a + 1);
            if (n + l > cap) break;
            size_t at = rnd_below(n + 1);
            uint8_t *tmp = malloc(l + 1);
            memcpy(tmp, buf + a, l);
            memmove(buf + at + l, buf + at, n - at);
            memcpy(buf + at, tmp, l);
            free(tmp);
            *len = n + l;
            break;
        }
        default: /* overwrite a number-looking spot with a huge one */
            if (n > 8) memcpy(buf + rnd_below(n - 8), "99999999", 8);
            break;
        }
    }
}

static int fuzz_iters(int dflt)
{
    const char *s = getenv("KF_FUZZ_ITERS");
    int n = s ? atoi(s) : 0;
    return n > 0 ? n : dflt;
}

static void fuzz_manifest(int iters)
{
    test_entry t;
    test_entry_init(&t, "aten::_softmax", 3);
    t.e.format = KF_CACHE_FORMAT;
    t.e.contract_version = KF_CONTRACT_VERSION;
    kf_cache_key_parse(t.key_hex, &t.e.key);
    memcpy(t.e.blob_hash, "00112233445566778899aabbccddeeff", KF_KEY_HEX);
    char *seed = kf_cache_entry_to_json(&t.e);
    size_t seed_len = strlen(seed), cap = seed_len * 3 + 256;
    uint8_t *buf = malloc(cap);
    int accepted = 0, rejected = 0;
    for (int it = 0; it < iters; it++) {
        size_t len;
        if (it % 10 == 0) { /* pure noise */
            len = rnd_below(300);
            for (size_t i = 0; i < len; i++) buf[i] = (uint8_t)rnd();
        } else {
            memcpy(buf, seed, seed_len);
            len = seed_len;
            mutate(buf, &len, cap);
        }
        kf_cache_entry *e = NULL;
        char err[256];
        if (kf_cache_entry_from_json((const char *)buf, len, &e, err, sizeof err) == KF_OK) {
            accepted++;
            char *again = kf_cache_entry_to_json(e);
            kf_cache_entry *e2 = NULL;
            int ok = again && kf_cache_entry_from_json(again, strlen(again), &e2, err,
                                                       sizeof err) == KF_OK;
            if (!CHECK(ok)) printf("     re-parse failed: %s\n", err);
            kf_cache_entry_free(e2);
            free(again);
            kf_cache_entry_free(e);
        } else {
            rejected++;
            CHECK(e == NULL);
            if (!err[0]) CHECK(!"a rejection without a message");
        }
    }
    printf("manifest fuzz: %d accepted, %d rejected\n", accepted, rejected);
    CHECK(rejected > 0);
    CHECK(accepted > 0); /* some mutations land in places that do not matter */
    free(buf);
    free(seed);
}

/* Recompute the header's index checksum, so mutations of the index reach the parser. */
static void fix_index_hash(uint8_t *b, size_t len)
{
    if (len < 32 || memcmp(b, "KFBUNDLE", 8)) return;
    uint32_t il = (uint32_t)b[12] | (uint32_t)b[13] << 8 | (uint32_t)b[14] << 16 |
                  (uint32_t)b[15] << 24;
    if (il > len - 32) return;
    XXH128_hash_t h = XXH3_128bits(b + 32, il);
    for (int i = 0; i < 8; i++) {
        b[16 + i] = (uint8_t)(h.high64 >> (56 - 8 * i));
        b[24 + i] = (uint8_t)(h.low64 >> (56 - 8 * i));
    }
}

static void fuzz_bundle(int iters)
{
    char *root = tmp_dir();
    char *srcdir = path_join(root, "src"), *dstdir = path_join(root, "dst");
    char *path = path_join(root, "fuzz.kfb");
    kf_cache *src = NULL, *dst = NULL;
    CHECK_EQ_INT(kf_cache_open(&src, srcdir, 0), KF_OK);
    CHECK_EQ_INT(kf_cache_open(&dst, dstdir, 0), KF_OK);
    for (int i = 0; i < 3; i++) {
        test_entry t;
        test_entry_init(&t, i ? "aten::gelu" : "aten::silu", i);
        CHECK_EQ_INT(test_insert(src, &t), KF_OK);
    }
    int n = 0;
    CHECK_EQ_INT(kf_cache_export(src, path, NULL, 0, &n), KF_OK);
    size_t seed_len = 0;
    char *seed = read_file(path, &seed_len);
    const uint8_t *hd = (const uint8_t *)seed;
    uint32_t il = (uint32_t)hd[12] | (uint32_t)hd[13] << 8 | (uint32_t)hd[14] << 16 |
                  (uint32_t)hd[15] << 24;
    size_t cap = seed_len * 3 + 256;
    uint8_t *buf = malloc(cap);
    int opened = 0, imported = 0;
    for (int it = 0; it < iters; it++) {
        memcpy(buf, seed, seed_len);
        size_t len = seed_len;
        int mode = (int)rnd_below(4);
        if (mode == 0) {
            mutate(buf, &len, cap); /* anywhere */
        } else if (mode == 1 || mode == 2) {
            /* only the index, with its checksum fixed, to get past the first gate */
            size_t ilen = il, rest = seed_len - 32 - il;
            uint8_t *idx = malloc(cap);
            memcpy(idx, seed + 32, ilen);
            mutate(idx, &ilen, cap - 32 - rest);
            memcpy(buf + 32, idx, ilen);
            memcpy(buf + 32 + ilen, seed + 32 + il, rest);
            buf[12] = (uint8_t)ilen;
            buf[13] = (uint8_t)(ilen >> 8);
            buf[14] = (uint8_t)(ilen >> 16);
            buf[15] = (uint8_t)(ilen >> 24);
            free(idx);
            if (mode == 2) mutate(buf + 32 + ilen, &rest, rest); /* and the data */
            len = 32 + ilen + rest;
            fix_index_hash(buf, len);
        } else {
            for (size_t i = 32; i < len; i++) /* a few flips after a valid header */
                if (rnd_below(len) < 2) buf[i] ^= (uint8_t)rnd();
            fix_index_hash(buf, len);
        }
        write_file(path, buf, len);
        kf_cache *b = NULL;
        if (kf_cache_open_bundle(&b, path) == KF_OK) {
            opened++;
            kf_cache_entry **v = NULL;
            int m = 0;
            CHECK_EQ_INT(kf_cache_list(b, &v, &m), KF_OK);
            for (int i = 0; i < m; i++) {
                void *p = NULL;
                size_t l = 0;
                CHECK_EQ_INT(kf_cache_read_blob(b, v[i], &p, &l), KF_OK);
                free(p);
            }
            kf_cache_entries_free(v, m);
            CHECK_EQ_INT(kf_cache_verify(b, NULL, NULL), 0);
        } else {
            CHECK(kf_cache_errmsg(b)[0] != '\0');
        }
        kf_cache_free(b); /* failed handles too */
        if (it % 25 == 0) {
            int k = 0;
            if (kf_cache_import(dst, path, test_rebuild, NULL, &k) == KF_OK) imported++;
        }
    }
    printf("bundle fuzz: %d of %d opened, %d imports accepted\n", opened, iters, imported);
    CHECK(opened < iters);
    CHECK_EQ_INT(kf_cache_verify(dst, NULL, NULL), 0);
    free(buf);
    free(seed);
    kf_cache_free(src);
    kf_cache_free(dst);
    free(path);
    free(dstdir);
    free(srcdir);
    rm_rf(root);
}

static void quiet(int level, const char *msg, void *user)
{
    (void)level;
    (void)msg;
    (void)user; /* thousands of expected warnings */
}

int main(void)
{
    kf_set_log_callback(quiet, NULL);
    const char *seed = getenv("KF_FUZZ_SEED");
    if (seed && strtoull(seed, NULL, 0)) g_rng = strtoull(seed, NULL, 0);
    fuzz_manifest(fuzz_iters(4000));
    fuzz_bundle(fuzz_iters(3000));
    return check_done("test_cache_fuzz");
}
