/* Cache keys (XXH3-128 over every input that can change a kernel) and small shared helpers. */
#include "cache/internal.h"

#include <stdio.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* Bumped if the encoding below ever changes, so old and new keys can never collide. */
static const char KEY_DOMAIN[] = "kforge-cache-key-v1";

static void put_u32(XXH3_state_t *st, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    XXH3_128bits_update(st, b, sizeof b);
}

/* Length-prefixed, so ("ab","c") and ("a","bc") differ. NULL counts as "" (the manifest keeps
 * the distinction, the key does not need to). */
static void put_bytes(XXH3_state_t *st, const void *p, size_t n)
{
    put_u32(st, (uint32_t)n);
    if (n) XXH3_128bits_update(st, p, n);
}

static void put_str(XXH3_state_t *st, const char *s)
{
    put_bytes(st, s, s ? strlen(s) : 0);
}

kf_cache_key kf_cache_key_compute(const kf_key_inputs *in)
{
    XXH3_state_t st;
    XXH3_128bits_reset(&st);
    XXH3_128bits_update(&st, KEY_DOMAIN, sizeof KEY_DOMAIN - 1);
    put_bytes(&st, in->sig, in->sig ? in->sig_len : 0);
    put_str(&st, in->backend);
    put_str(&st, in->arch);
    put_str(&st, in->toolchain);
    put_str(&st, in->torch_version);
    put_str(&st, in->plugin_version);
    put_u32(&st, (uint32_t)in->contract_version);
    XXH128_hash_t h = XXH3_128bits_digest(&st);
    return (kf_cache_key){.hi = h.high64, .lo = h.low64};
}

kf_cache_key kf_cache_entry_key(const kf_cache_entry *e)
{
    kf_key_inputs in = {
        .sig = e->sig, .sig_len = e->sig_len, .backend = e->backend, .arch = e->arch,
        .toolchain = e->toolchain, .torch_version = e->torch_version,
        .plugin_version = e->plugin_version, .contract_version = e->contract_version,
    };
    return kf_cache_key_compute(&in);
}

void kf_cache_key_hex(kf_cache_key k, char out[KF_KEY_HEX])
{
    static const char digits[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        out[i] = digits[(k.hi >> (60 - 4 * i)) & 15];
        out[16 + i] = digits[(k.lo >> (60 - 4 * i)) & 15];
    }
    out[32] = '\0';
}

int kf_is_hex32(const char *s, size_t n)
{
    if (n != 32) return 0;
    for (size_t i = 0; i < 32; i++)
        if (kf_hex_digit(s[i]) < 0) return 0;
    return 1;
}

kf_status kf_cache_key_parse(const char *hex, kf_cache_key *out)
{
    if (!hex || !out || strnlen(hex, 33) != 32 || !kf_is_hex32(hex, 32)) return KF_ERR_INVALID;
    uint64_t hi = 0, lo = 0;
    for (int i = 0; i < 16; i++) {
        hi = hi << 4 | (uint64_t)kf_hex_digit(hex[i]);
        lo = lo << 4 | (uint64_t)kf_hex_digit(hex[16 + i]);
    }
    out->hi = hi;
    out->lo = lo;
    return KF_OK;
}

void kf_hash128_hex(const void *p, size_t n, char out[KF_KEY_HEX])
{
    XXH128_hash_t h = XXH3_128bits(p, n);
    kf_cache_key_hex((kf_cache_key){.hi = h.high64, .lo = h.low64}, out);
}

void kf_cache_blob_hash(const void *blob, size_t blob_len, char out[KF_KEY_HEX])
{
    kf_hash128_hex(blob_len ? blob : "", blob_len, out);
}

int kf_entry_name(const char *name, char key_hex[KF_KEY_HEX])
{
    if (strnlen(name, 38) != 37 || !kf_is_hex32(name, 32)) return 0;
    int kind = !strcmp(name + 32, ".json") ? 1 : !strcmp(name + 32, ".blob") ? 2 : 0;
    if (kind) {
        memcpy(key_hex, name, 32);
        key_hex[32] = '\0';
    }
    return kind;
}

void kf_printable(const char *s, size_t n, char *out, size_t cap)
{
    if (!cap) return;
    size_t i = 0, j = 0;
    for (; i < n && j + 4 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        out[j++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
    }
    if (i < n && j + 3 < cap) {
        memcpy(out + j, "...", 3);
        j += 3;
    }
    out[j] = '\0';
}

void kf_cache_set_err(kf_cache *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
}
