/* Manifests: kf_cache_entry <-> JSON. Parsing is the gate for everything read from disk or from
 * a bundle, so it checks every field's presence, type, length and range, and rejects unknown
 * formats before looking at anything else. */
#include "cache/internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "common/signature.h"

#define MAX_JSON_FIELD (64u << 10) /* launch record, output layout (as compact text) */
#define MAX_SOURCE (1u << 20)

enum { F_NULLABLE = 1, F_NONEMPTY = 2, F_MULTILINE = 4 };

/* The string fields: name, where, longest allowed, flags. */
static const struct str_field {
    const char *name;
    size_t off;
    size_t max;
    int flags;
} STR_FIELDS[] = {
    {"op", offsetof(kf_cache_entry, op), 256, F_NONEMPTY},
    {"signature", offsetof(kf_cache_entry, signature), 8192, 0},
    {"backend", offsetof(kf_cache_entry, backend), 32, F_NONEMPTY},
    {"arch", offsetof(kf_cache_entry, arch), 128, F_NONEMPTY},
    {"toolchain", offsetof(kf_cache_entry, toolchain), 4096, 0},
    {"torch_version", offsetof(kf_cache_entry, torch_version), 128, 0},
    {"plugin_version", offsetof(kf_cache_entry, plugin_version), 64, 0},
    {"source", offsetof(kf_cache_entry, source), MAX_SOURCE, F_NONEMPTY | F_MULTILINE},
    {"compile_options", offsetof(kf_cache_entry, compile_options), 4096, F_NULLABLE},
    {"proposer", offsetof(kf_cache_entry, proposer), 128, F_NULLABLE},
    {"job", offsetof(kf_cache_entry, job), 4096, F_NULLABLE},
    {"disabled_reason", offsetof(kf_cache_entry, disabled_reason), 4096,
     F_NULLABLE | F_MULTILINE},
};

/* Finite and >= 0: errors, tolerances, times. */
static const struct num_field {
    const char *name;
    size_t off;
} NUM_FIELDS[] = {
    {"max_abs_err", offsetof(kf_cache_entry, max_abs_err)},
    {"max_rel_err", offsetof(kf_cache_entry, max_rel_err)},
    {"atol", offsetof(kf_cache_entry, atol)},
    {"rtol", offsetof(kf_cache_entry, rtol)},
    {"eager_us", offsetof(kf_cache_entry, eager_us)},
    {"kernel_us", offsetof(kf_cache_entry, kernel_us)},
    {"created", offsetof(kf_cache_entry, created)},
};

#define N_STR (sizeof STR_FIELDS / sizeof STR_FIELDS[0])
#define N_NUM (sizeof NUM_FIELDS / sizeof NUM_FIELDS[0])

static const char *const OTHER_FIELDS[] = {
    "format", "contract_version", "key", "sig", "launch", "outputs",
    "blob_hash", "blob_size", "disabled", "family", "chain",
};
#define N_OTHER (sizeof OTHER_FIELDS / sizeof OTHER_FIELDS[0])

static char **str_slot(kf_cache_entry *e, size_t off) { return (char **)((char *)e + off); }

void kf_cache_entry_free(kf_cache_entry *e)
{
    if (!e) return;
    for (size_t i = 0; i < N_STR; i++) free(*str_slot(e, STR_FIELDS[i].off));
    free(e->sig);
    free(e->launch);
    free(e->outputs);
    free(e->family);
    free(e->chain);
    free(e);
}

/* ---- entry -> JSON ---- */

static cJSON *embedded(const char *text, const char *what, char *err, size_t cap)
{
    if (!text) return cJSON_CreateNull();
    cJSON *j = cJSON_Parse(text);
    if (!j) kf_errf(err, cap, "%s is not valid JSON", what);
    return j;
}

static cJSON *entry_to_cjson(const kf_cache_entry *e, char *err, size_t cap)
{
    char hex[KF_KEY_HEX], bh[KF_KEY_HEX];
    char *sighex = NULL;
    cJSON *root = cJSON_CreateObject();
    if (!root) goto fail_nomem;
    int ok = 1;
#define ADD(x) ok &= (x) != NULL
#define ADD_STR(name, v) ADD((v) ? cJSON_AddStringToObject(root, name, v) : cJSON_AddNullToObject(root, name))
    ADD(cJSON_AddNumberToObject(root, "format", e->format));
    ADD(cJSON_AddNumberToObject(root, "contract_version", e->contract_version));
    kf_cache_key_hex(e->key, hex);
    ADD(cJSON_AddStringToObject(root, "key", hex));
    ADD_STR("op", e->op);
    ADD_STR("signature", e->signature);
    if (e->sig) {
        if (e->sig_len > KF_SIG_MAX_BYTES) {
            kf_errf(err, cap, "sig is %u bytes (limit %d)", e->sig_len, KF_SIG_MAX_BYTES);
            goto fail;
        }
        sighex = malloc(2 * (size_t)e->sig_len + 1);
        if (!sighex) goto fail_nomem;
        kf_hex_encode(e->sig, e->sig_len, sighex);
    }
    ADD_STR("sig", sighex);
    ADD_STR("backend", e->backend);
    ADD_STR("arch", e->arch);
    ADD_STR("toolchain", e->toolchain);
    ADD_STR("torch_version", e->torch_version);
    ADD_STR("plugin_version", e->plugin_version);
    ADD_STR("compile_options", e->compile_options);
    cJSON *launch = embedded(e->launch, "launch", err, cap);
    if (!launch) goto fail;
    cJSON_AddItemToObject(root, "launch", launch);
    cJSON *outputs = embedded(e->outputs, "outputs", err, cap);
    if (!outputs) goto fail;
    cJSON_AddItemToObject(root, "outputs", outputs);
    if (e->family) { /* written only when there is one: older readers see nothing new */
        cJSON *family = embedded(e->family, "family", err, cap);
        if (!family) goto fail;
        cJSON_AddItemToObject(root, "family", family);
    }
    if (e->chain) {
        cJSON *chain = embedded(e->chain, "chain", err, cap);
        if (!chain) goto fail;
        cJSON_AddItemToObject(root, "chain", chain);
    }
    for (size_t i = 0; i < N_NUM; i++)
        ADD(cJSON_AddNumberToObject(root, NUM_FIELDS[i].name,
                                    *(const double *)((const char *)e + NUM_FIELDS[i].off)));
    ADD_STR("proposer", e->proposer);
    ADD_STR("job", e->job);
    snprintf(bh, sizeof bh, "%.32s", e->blob_hash);
    ADD(cJSON_AddStringToObject(root, "blob_hash", bh));
    ADD(cJSON_AddNumberToObject(root, "blob_size", (double)e->blob_size));
    ADD(cJSON_AddBoolToObject(root, "disabled", e->disabled != 0));
    ADD_STR("disabled_reason", e->disabled_reason);
    ADD_STR("source", e->source);
#undef ADD_STR
#undef ADD
    if (!ok) goto fail_nomem;
    free(sighex);
    return root;

fail_nomem:
    kf_errf(err, cap, "out of memory");
fail:
    free(sighex);
    cJSON_Delete(root);
    return NULL;
}

char *kf_cache_entry_to_json(const kf_cache_entry *e)
{
    if (!e) return NULL;
    cJSON *root = entry_to_cjson(e, NULL, 0);
    if (!root) return NULL;
    char *s = cJSON_Print(root);
    cJSON_Delete(root);
    return s;
}

/* ---- JSON -> entry ---- */

static int get_int(const cJSON *j, double lo, double hi, double *v)
{
    if (!cJSON_IsNumber(j)) return 0;
    double d = j->valuedouble;
    /* range first, so the cast that tests for a whole number is defined (no libm here) */
    if (!isfinite(d) || d < lo || d > hi || d != (double)(int64_t)d) return 0;
    *v = d;
    return 1;
}

static int str_ok(const char *s, size_t n, int multiline)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch >= 0x20 && ch != 0x7f) continue;
        if (multiline && (ch == '\n' || ch == '\t' || ch == '\r')) continue;
        return 0;
    }
    return 1;
}

/* A name the manifest must not repeat: which one of the known fields, or -1. */
static int known_index(const char *name)
{
    for (size_t i = 0; i < N_STR; i++)
        if (!strcmp(name, STR_FIELDS[i].name)) return (int)i;
    for (size_t i = 0; i < N_NUM; i++)
        if (!strcmp(name, NUM_FIELDS[i].name)) return (int)(N_STR + i);
    for (size_t i = 0; i < N_OTHER; i++)
        if (!strcmp(name, OTHER_FIELDS[i])) return (int)(N_STR + N_NUM + i);
    return -1;
}

static kf_status parse_embedded(const cJSON *root, const char *name, int allow_null,
                                char **out, char *err, size_t cap)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, name);
    if (!j) {
        kf_errf(err, cap, "missing field \"%s\"", name);
        return KF_ERR_INVALID;
    }
    if (cJSON_IsNull(j) && allow_null) return KF_OK;
    /* the launch record is an object; the output layout an object or an array */
    int ok = allow_null ? cJSON_IsObject(j) || cJSON_IsArray(j) : cJSON_IsObject(j);
    if (!ok) {
        kf_errf(err, cap, "field \"%s\" must be a JSON %s", name,
                allow_null ? "object, array or null" : "object");
        return KF_ERR_INVALID;
    }
    char *s = cJSON_PrintUnformatted(j);
    if (!s) {
        kf_errf(err, cap, "out of memory");
        return KF_ERR_NOMEM;
    }
    if (strlen(s) > MAX_JSON_FIELD) {
        kf_errf(err, cap, "field \"%s\" is too long (%zu bytes, limit %u)", name, strlen(s),
                MAX_JSON_FIELD);
        cJSON_free(s);
        return KF_ERR_INVALID;
    }
    /* cJSON's allocator may not be ours: hand the caller a malloc'ed copy */
    *out = strdup(s);
    cJSON_free(s);
    if (!*out) {
        kf_errf(err, cap, "out of memory");
        return KF_ERR_NOMEM;
    }
    return KF_OK;
}

static kf_status parse_fields(const cJSON *root, kf_cache_entry *e, char *err, size_t cap)
{
    const cJSON *j;
    double d;
#define FIELD(name)                                                         \
    do {                                                                    \
        j = cJSON_GetObjectItemCaseSensitive(root, name);                   \
        if (!j) {                                                           \
            kf_errf(err, cap, "missing field \"%s\"", name);                \
            return KF_ERR_INVALID;                                          \
        }                                                                   \
    } while (0)

    FIELD("format");
    if (!get_int(j, -1e9, 1e9, &d)) {
        kf_errf(err, cap, "field \"format\" must be an integer");
        return KF_ERR_INVALID;
    }
    if (d != KF_CACHE_FORMAT) {
        kf_errf(err, cap, "unsupported manifest format %.0f (this build reads format %d)", d,
                KF_CACHE_FORMAT);
        return KF_ERR_INVALID;
    }
    e->format = (int)d;
    FIELD("contract_version");
    if (!get_int(j, -1e9, 1e9, &d)) {
        kf_errf(err, cap, "field \"contract_version\" must be an integer");
        return KF_ERR_INVALID;
    }
    if (d != KF_CONTRACT_VERSION) {
        kf_errf(err, cap, "unsupported kernel contract version %.0f (this build uses %d)", d,
                KF_CONTRACT_VERSION);
        return KF_ERR_INVALID;
    }
    e->contract_version = (int)d;

    FIELD("key");
    if (!cJSON_IsString(j) || kf_cache_key_parse(j->valuestring, &e->key) != KF_OK) {
        kf_errf(err, cap, "field \"key\" must be 32 lowercase hex digits");
        return KF_ERR_INVALID;
    }
    kf_cache_key_hex(e->key, e->key_hex);

    for (size_t i = 0; i < N_STR; i++) {
        const struct str_field *f = &STR_FIELDS[i];
        FIELD(f->name);
        if (cJSON_IsNull(j) && (f->flags & F_NULLABLE)) continue;
        if (!cJSON_IsString(j)) {
            kf_errf(err, cap, "field \"%s\" must be a string%s", f->name,
                    f->flags & F_NULLABLE ? " or null" : "");
            return KF_ERR_INVALID;
        }
        size_t n = strlen(j->valuestring);
        if (n > f->max) {
            kf_errf(err, cap, "field \"%s\" is too long (%zu bytes, limit %zu)", f->name, n,
                    f->max);
            return KF_ERR_INVALID;
        }
        if (n == 0 && (f->flags & F_NONEMPTY)) {
            kf_errf(err, cap, "field \"%s\" is empty", f->name);
            return KF_ERR_INVALID;
        }
        if (!str_ok(j->valuestring, n, f->flags & F_MULTILINE)) {
            kf_errf(err, cap, "field \"%s\" contains control characters", f->name);
            return KF_ERR_INVALID;
        }
        char *s = strdup(j->valuestring);
        if (!s) {
            kf_errf(err, cap, "out of memory");
            return KF_ERR_NOMEM;
        }
        *str_slot(e, f->off) = s;
    }

    FIELD("sig");
    size_t n = cJSON_IsString(j) ? strlen(j->valuestring) : 0;
    if (!n || n % 2 || n > 2 * (size_t)KF_SIG_MAX_BYTES) {
        kf_errf(err, cap, "field \"sig\" must be a hex string of 1 to %d bytes",
                KF_SIG_MAX_BYTES);
        return KF_ERR_INVALID;
    }
    e->sig = malloc(n / 2);
    if (!e->sig) {
        kf_errf(err, cap, "out of memory");
        return KF_ERR_NOMEM;
    }
    if (kf_hex_decode(j->valuestring, n, e->sig)) {
        kf_errf(err, cap, "field \"sig\" is not lowercase hex");
        return KF_ERR_INVALID;
    }
    e->sig_len = (uint32_t)(n / 2);

    kf_status st = parse_embedded(root, "launch", 0, &e->launch, err, cap);
    if (st != KF_OK) return st;
    st = parse_embedded(root, "outputs", 1, &e->outputs, err, cap);
    if (st != KF_OK) return st;
    /* optional; its meaning is checked against the entry where it is used (plugin/family.c) */
    j = cJSON_GetObjectItemCaseSensitive(root, "family");
    if (j && !cJSON_IsNull(j)) {
        if (!cJSON_IsObject(j)) {
            kf_errf(err, cap, "field \"family\" must be a JSON object or null");
            return KF_ERR_INVALID;
        }
        st = parse_embedded(root, "family", 0, &e->family, err, cap);
        if (st != KF_OK) return st;
    }
    /* optional, the same way: its meaning is checked where chains are served (plugin/chains.h) */
    j = cJSON_GetObjectItemCaseSensitive(root, "chain");
    if (j && !cJSON_IsNull(j)) {
        if (!cJSON_IsObject(j)) {
            kf_errf(err, cap, "field \"chain\" must be a JSON object or null");
            return KF_ERR_INVALID;
        }
        st = parse_embedded(root, "chain", 0, &e->chain, err, cap);
        if (st != KF_OK) return st;
    }

    for (size_t i = 0; i < N_NUM; i++) {
        FIELD(NUM_FIELDS[i].name);
        if (!cJSON_IsNumber(j) || !isfinite(j->valuedouble) || j->valuedouble < 0) {
            kf_errf(err, cap, "field \"%s\" must be a finite number >= 0", NUM_FIELDS[i].name);
            return KF_ERR_INVALID;
        }
        *(double *)((char *)e + NUM_FIELDS[i].off) = j->valuedouble;
    }

    FIELD("blob_hash");
    if (!cJSON_IsString(j) || !kf_is_hex32(j->valuestring, strlen(j->valuestring))) {
        kf_errf(err, cap, "field \"blob_hash\" must be 32 lowercase hex digits");
        return KF_ERR_INVALID;
    }
    memcpy(e->blob_hash, j->valuestring, KF_KEY_HEX);
    FIELD("blob_size");
    if (!get_int(j, 0, KF_CACHE_MAX_BLOB, &d)) {
        kf_errf(err, cap, "field \"blob_size\" must be an integer from 0 to %u",
                KF_CACHE_MAX_BLOB);
        return KF_ERR_INVALID;
    }
    e->blob_size = (uint64_t)d;
    FIELD("disabled");
    if (!cJSON_IsBool(j)) {
        kf_errf(err, cap, "field \"disabled\" must be true or false");
        return KF_ERR_INVALID;
    }
    e->disabled = cJSON_IsTrue(j);
#undef FIELD
    return KF_OK;
}

kf_status kf_cache_entry_from_json(const char *json, size_t len, kf_cache_entry **out,
                                   char *err, size_t errcap)
{
    char *buf = NULL;
    cJSON *root = NULL;
    kf_cache_entry *e = NULL;
    kf_status st = KF_ERR_INVALID;
    if (err && errcap) err[0] = '\0';
    if (!out) return KF_ERR_INVALID;
    *out = NULL;
    if (!json) {
        kf_errf(err, errcap, "no manifest text");
        return KF_ERR_INVALID;
    }
    if (len > KF_CACHE_MAX_MANIFEST) {
        kf_errf(err, errcap, "manifest is too large (%zu bytes, limit %u)", len,
                KF_CACHE_MAX_MANIFEST);
        return KF_ERR_INVALID;
    }
    if (memchr(json, 0, len)) {
        kf_errf(err, errcap, "manifest contains a NUL byte");
        return KF_ERR_INVALID;
    }
    /* cJSON wants a terminated string; the caller's bytes need not be one */
    buf = malloc(len + 1);
    if (!buf) {
        kf_errf(err, errcap, "out of memory");
        return KF_ERR_NOMEM;
    }
    memcpy(buf, json, len);
    buf[len] = '\0';
    const char *end = NULL;
    root = cJSON_ParseWithOpts(buf, &end, 1);
    if (!root) {
        size_t at = end && end >= buf && end <= buf + len ? (size_t)(end - buf) : 0;
        kf_errf(err, errcap, "manifest is not valid JSON (at byte %zu of %zu)", at, len);
        goto out;
    }
    if (!cJSON_IsObject(root)) {
        kf_errf(err, errcap, "manifest is not a JSON object");
        goto out;
    }
    /* a repeated field would mean different things to different readers */
    unsigned char seen[N_STR + N_NUM + N_OTHER] = {0};
    for (const cJSON *c = root->child; c; c = c->next) {
        int k = c->string ? known_index(c->string) : -1;
        if (k < 0) continue; /* unknown fields: room for additions within one format */
        if (seen[k]++) {
            kf_errf(err, errcap, "field \"%s\" appears twice", c->string);
            goto out;
        }
    }
    e = calloc(1, sizeof *e);
    if (!e) {
        kf_errf(err, errcap, "out of memory");
        st = KF_ERR_NOMEM;
        goto out;
    }
    st = parse_fields(root, e, err, errcap);
    if (st != KF_OK) goto out;
    *out = e;
    e = NULL;
out:
    kf_cache_entry_free(e);
    cJSON_Delete(root);
    free(buf);
    return st;
}

/* ---- checks and preparation shared by the store and bundles ---- */

kf_status kf_entry_check_loaded(const kf_cache_entry *e, const char *name_key, char *err,
                                size_t cap)
{
    if (strcmp(e->key_hex, name_key) != 0) {
        kf_errf(err, cap, "its key %s does not match its name", e->key_hex);
        return KF_ERR_IO;
    }
    kf_cache_key k = kf_cache_entry_key(e);
    if (k.hi != e->key.hi || k.lo != e->key.lo) {
        char want[KF_KEY_HEX];
        kf_cache_key_hex(k, want);
        kf_errf(err, cap,
                "its key %s is not the key of its signature, backend, arch, toolchain and "
                "versions (%s)", e->key_hex, want);
        return KF_ERR_IO;
    }
    return KF_OK;
}

kf_status kf_entry_prepare(const kf_cache_entry *e, const void *blob, size_t blob_len,
                           int keep, kf_cache_entry *t, char **json, char *err, size_t cap)
{
    cJSON *root = NULL;
    kf_cache_entry *check = NULL;
    char sub[KF_CACHE_ERR_MAX / 2];
    kf_status st = KF_ERR_INVALID;
    *json = NULL;
    *t = *e; /* shallow: the strings stay the caller's */
    if (!t->format) t->format = KF_CACHE_FORMAT;
    if (!t->contract_version) t->contract_version = KF_CONTRACT_VERSION;
    kf_cache_key k = kf_cache_entry_key(t);
    char want[KF_KEY_HEX];
    kf_cache_key_hex(k, want);
    /* a caller may give the key, its hex, both or neither; what is given must be right */
    int have_key = e->key.hi || e->key.lo, have_hex = e->key_hex[0] != '\0';
    if ((have_key && (e->key.hi != k.hi || e->key.lo != k.lo)) ||
        (have_hex && strncmp(e->key_hex, want, 32) != 0)) {
        char have[KF_KEY_HEX];
        kf_cache_key_hex(e->key, have);
        kf_errf(err, cap,
                "entry key %.32s is not kf_cache_key_compute of its own sig, backend, arch, "
                "toolchain and versions (%s)", have_hex ? e->key_hex : have, want);
        return KF_ERR_INVALID;
    }
    t->key = k;
    memcpy(t->key_hex, want, KF_KEY_HEX);
    if (!keep) {
        kf_hash128_hex(blob_len ? blob : "", blob_len, t->blob_hash);
        t->blob_size = blob_len;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        t->created = (double)ts.tv_sec + ts.tv_nsec * 1e-9;
    }
    root = entry_to_cjson(t, sub, sizeof sub);
    if (!root) {
        kf_errf(err, cap, "entry %s: %s", want, sub);
        goto out;
    }
    *json = cJSON_Print(root);
    if (!*json) {
        kf_errf(err, cap, "out of memory");
        st = KF_ERR_NOMEM;
        goto out;
    }
    /* never write what a reader would refuse */
    st = kf_cache_entry_from_json(*json, strlen(*json), &check, sub, sizeof sub);
    if (st != KF_OK) {
        kf_errf(err, cap, "entry %s rejected: %s", want, sub);
        goto out;
    }
    st = KF_OK;
out:
    kf_cache_entry_free(check);
    cJSON_Delete(root);
    if (st != KF_OK) {
        cJSON_free(*json);
        *json = NULL;
    }
    return st;
}
