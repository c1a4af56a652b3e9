/* Cache keys and manifests: key determinism and sensitivity, hex parsing, JSON round trip, and
 * the validation of every kind of bad field. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tests/c/test_cache_util.h"

static kf_key_inputs base_inputs(const uint8_t *sig, uint32_t n)
{
    kf_key_inputs in = {sig, n, "nvrtc", "sm_90", "nvrtc 13.0", "2.11.0", KF_VERSION_STRING,
                        KF_CONTRACT_VERSION};
    return in;
}

static int same(kf_cache_key a, kf_cache_key b) { return a.hi == b.hi && a.lo == b.lo; }

static void test_keys(void)
{
    uint8_t sig[] = {14, 'a', 't', 'e', 'n', ':', ':', '_', 's', 'o', 'f', 't', 'm', 'a', 'x', 'I', 1};
    kf_key_inputs in = base_inputs(sig, sizeof sig);
    kf_cache_key k = kf_cache_key_compute(&in), k2 = kf_cache_key_compute(&in);
    CHECK(same(k, k2));
    CHECK(k.hi || k.lo);

    /* every input changes the key */
    kf_key_inputs v;
    uint8_t sig2[sizeof sig];
    memcpy(sig2, sig, sizeof sig);
    sig2[sizeof sig - 1] ^= 1;
    v = in; v.sig = sig2;                  CHECK(!same(k, kf_cache_key_compute(&v)));
    v = in; v.sig_len--;                   CHECK(!same(k, kf_cache_key_compute(&v)));
    v = in; v.backend = "host";            CHECK(!same(k, kf_cache_key_compute(&v)));
    v = in; v.arch = "sm_80";              CHECK(!same(k, kf_cache_key_compute(&v)));
    v = in; v.toolchain = "nvrtc 12.8";    CHECK(!same(k, kf_cache_key_compute(&v)));
    v = in; v.torch_version = "2.10.0";    CHECK(!same(k, kf_cache_key_compute(&v)));
    v = in; v.plugin_version = "0.1.1";    CHECK(!same(k, kf_cache_key_compute(&v)));
    v = in; v.contract_version = 2;        CHECK(!same(k, kf_cache_key_compute(&v)));

    /* length prefixes: moving a character between neighbours changes the key */
    kf_key_inputs a = in, b = in;
    a.backend = "nvrtcs"; a.arch = "m_90";
    CHECK(!same(k, kf_cache_key_compute(&a)));
    a = in; a.toolchain = "x"; a.torch_version = "yz";
    b = in; b.toolchain = "xy"; b.torch_version = "z";
    CHECK(!same(kf_cache_key_compute(&a), kf_cache_key_compute(&b)));

    /* hex: 32 lowercase digits, hi then lo, and back */
    char hex[KF_KEY_HEX];
    kf_cache_key_hex((kf_cache_key){0x0123456789abcdefULL, 0xfedcba9876543210ULL}, hex);
    CHECK_STR(hex, "0123456789abcdeffedcba9876543210");
    kf_cache_key p;
    CHECK_EQ_INT(kf_cache_key_parse(hex, &p), KF_OK);
    CHECK_EQ_U64(p.hi, 0x0123456789abcdefULL);
    CHECK_EQ_U64(p.lo, 0xfedcba9876543210ULL);
    kf_cache_key_hex(k, hex);
    CHECK_EQ_INT(strlen(hex), 32);
    CHECK_EQ_INT(kf_cache_key_parse(hex, &p), KF_OK);
    CHECK(same(p, k));

    CHECK_EQ_INT(kf_cache_key_parse("0123456789ABCDEFfedcba9876543210", &p), KF_ERR_INVALID);
    CHECK_EQ_INT(kf_cache_key_parse("0123456789abcdeffedcba987654321", &p), KF_ERR_INVALID);
    CHECK_EQ_INT(kf_cache_key_parse("0123456789abcdeffedcba98765432100", &p), KF_ERR_INVALID);
    CHECK_EQ_INT(kf_cache_key_parse("0123456789abcdeffedcba987654321g", &p), KF_ERR_INVALID);
    CHECK_EQ_INT(kf_cache_key_parse("../../0123456789abcdeffedcba9876", &p), KF_ERR_INVALID);
    CHECK_EQ_INT(kf_cache_key_parse("", &p), KF_ERR_INVALID);
    CHECK_EQ_INT(kf_cache_key_parse(NULL, &p), KF_ERR_INVALID);
}

/* A complete entry, as a manifest read back would have it. */
static void full_entry(test_entry *t)
{
    test_entry_init(t, "aten::_softmax", 7);
    kf_cache_entry *e = &t->e;
    e->format = KF_CACHE_FORMAT;
    e->contract_version = KF_CONTRACT_VERSION;
    kf_cache_key_parse(t->key_hex, &e->key);
    memcpy(e->key_hex, t->key_hex, KF_KEY_HEX);
    memcpy(e->blob_hash, "00112233445566778899aabbccddeeff", KF_KEY_HEX);
    e->blob_size = t->blob_len;
    e->disabled = 1;
    e->disabled_reason = (char *)"failed the first-use check:\nmax_abs_err 3.5";
    e->created = 1764400000.123456;
}

static void test_round_trip(void)
{
    test_entry t;
    full_entry(&t);
    char *json = kf_cache_entry_to_json(&t.e);
    if (!CHECK(json != NULL)) return;
    /* launch and outputs are embedded, not strings */
    CHECK_CONTAINS(json, "\"launch\":");
    CHECK(strstr(json, "\"launch\":\t\"") == NULL && strstr(json, "\"launch\": \"") == NULL);
    CHECK_CONTAINS(json, "\"format\":");

    kf_cache_entry *e = NULL;
    char err[512];
    if (!CHECK_EQ_INT(kf_cache_entry_from_json(json, strlen(json), &e, err, sizeof err), KF_OK)) {
        printf("     %s\n", err);
        free(json);
        return;
    }
    const kf_cache_entry *a = &t.e;
    CHECK_STR(e->key_hex, t.key_hex);
    CHECK_EQ_U64(e->key.hi, a->key.hi);
    CHECK_EQ_U64(e->key.lo, a->key.lo);
    CHECK_EQ_INT(e->format, KF_CACHE_FORMAT);
    CHECK_EQ_INT(e->contract_version, KF_CONTRACT_VERSION);
    CHECK_STR(e->op, a->op);
    CHECK_STR(e->signature, a->signature);
    CHECK_EQ_INT(e->sig_len, a->sig_len);
    CHECK(e->sig && memcmp(e->sig, a->sig, a->sig_len) == 0);
    CHECK_STR(e->backend, a->backend);
    CHECK_STR(e->arch, a->arch);
    CHECK_STR(e->toolchain, a->toolchain);
    CHECK_STR(e->torch_version, a->torch_version);
    CHECK_STR(e->plugin_version, a->plugin_version);
    CHECK_STR(e->source, a->source);
    CHECK_STR(e->launch, a->launch);
    CHECK_STR(e->compile_options, a->compile_options);
    CHECK_STR(e->outputs, a->outputs);
    CHECK(e->max_abs_err == a->max_abs_err && e->max_rel_err == a->max_rel_err);
    CHECK(e->atol == a->atol && e->rtol == a->rtol);
    CHECK(e->eager_us == a->eager_us && e->kernel_us == a->kernel_us);
    CHECK_STR(e->proposer, a->proposer);
    CHECK_STR(e->job, a->job);
    CHECK_STR(e->blob_hash, a->blob_hash);
    CHECK_EQ_U64(e->blob_size, a->blob_size);
    CHECK_EQ_INT(e->disabled, 1);
    CHECK_STR(e->disabled_reason, a->disabled_reason);
    CHECK(e->created == a->created);

    /* stable: the parsed entry prints the same text */
    char *again = kf_cache_entry_to_json(e);
    CHECK_STR(again, json);
    free(again);
    kf_cache_entry_free(e);
    free(json);

    /* optional strings survive as NULL */
    t.e.compile_options = NULL;
    t.e.proposer = NULL;
    t.e.job = NULL;
    t.e.outputs = NULL;
    t.e.disabled = 0;
    t.e.disabled_reason = NULL;
    json = kf_cache_entry_to_json(&t.e);
    CHECK_EQ_INT(kf_cache_entry_from_json(json, strlen(json), &e, err, sizeof err), KF_OK);
    if (e) {
        CHECK(e->compile_options == NULL && e->proposer == NULL && e->job == NULL);
        CHECK(e->outputs == NULL && e->disabled_reason == NULL && e->disabled == 0);
        kf_cache_entry_free(e);
    }
    free(json);

    /* bad embedded JSON cannot be serialized */
    t.e.launch = (char *)"{not json";
    CHECK(kf_cache_entry_to_json(&t.e) == NULL);
    kf_cache_entry_free(NULL); /* a no-op */
}

/* Parse `text` and expect a rejection whose message contains `want`. */
static int rejects(const char *text, size_t len, const char *want)
{
    kf_cache_entry *e = (kf_cache_entry *)1;
    char err[512] = "";
    kf_status st = kf_cache_entry_from_json(text, len, &e, err, sizeof err);
    int ok = CHECK(st != KF_OK) & CHECK(e == NULL) & CHECK_CONTAINS(err, want);
    if (!ok) printf("     (input %.200s)\n", text);
    if (st == KF_OK) kf_cache_entry_free(e);
    return ok;
}

static cJSON *good_doc(void)
{
    test_entry t;
    full_entry(&t);
    char *json = kf_cache_entry_to_json(&t.e);
    cJSON *doc = cJSON_Parse(json);
    free(json);
    return doc;
}

/* `doc` with field `name` replaced by `v` (NULL: removed), as text. */
static char *with_field(const char *name, cJSON *v)
{
    cJSON *doc = good_doc();
    if (v) cJSON_ReplaceItemInObjectCaseSensitive(doc, name, v);
    else cJSON_DeleteItemFromObjectCaseSensitive(doc, name);
    char *s = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    return s;
}

static void reject_field(const char *name, cJSON *v, const char *want)
{
    char *s = with_field(name, v);
    if (!rejects(s, strlen(s), want)) printf("     (field %s)\n", name);
    free(s);
}

static void test_validation(void)
{
    /* the unmodified document is fine */
    cJSON *doc = good_doc();
    char *s = cJSON_PrintUnformatted(doc);
    kf_cache_entry *e = NULL;
    char err[512];
    CHECK_EQ_INT(kf_cache_entry_from_json(s, strlen(s), &e, err, sizeof err), KF_OK);
    kf_cache_entry_free(e);

    /* every field is required */
    for (cJSON *f = doc->child; f; f = f->next) {
        char want[64];
        snprintf(want, sizeof want, "missing field \"%s\"", f->string);
        reject_field(f->string, NULL, want);
    }
    cJSON_Delete(doc);

    /* wrong types */
    reject_field("op", cJSON_CreateNumber(5), "\"op\" must be a string");
    reject_field("source", cJSON_CreateNull(), "\"source\" must be a string");
    reject_field("proposer", cJSON_CreateTrue(), "\"proposer\" must be a string or null");
    reject_field("launch", cJSON_CreateString("{}"), "\"launch\" must be a JSON object");
    reject_field("launch", cJSON_CreateArray(), "\"launch\" must be a JSON object");
    reject_field("outputs", cJSON_CreateString("[]"), "\"outputs\" must be a JSON object");
    reject_field("blob_size", cJSON_CreateString("10"), "blob_size");
    reject_field("blob_size", cJSON_CreateNumber(1.5), "blob_size");
    reject_field("blob_size", cJSON_CreateNumber(-1), "blob_size");
    reject_field("blob_size", cJSON_CreateNumber((double)KF_CACHE_MAX_BLOB + 1), "blob_size");
    reject_field("disabled", cJSON_CreateNumber(1), "\"disabled\" must be true or false");
    reject_field("max_abs_err", cJSON_CreateString("0"), "\"max_abs_err\" must be a finite");
    reject_field("kernel_us", cJSON_CreateNumber(-3), "\"kernel_us\" must be a finite");
    reject_field("format", cJSON_CreateString("1"), "\"format\" must be an integer");
    reject_field("key", cJSON_CreateNumber(1), "\"key\" must be 32 lowercase hex");

    /* bad hex */
    reject_field("key", cJSON_CreateString("0123456789ABCDEF0123456789abcdef"), "\"key\"");
    reject_field("key", cJSON_CreateString("0123456789abcdef"), "\"key\"");
    reject_field("blob_hash", cJSON_CreateString("00112233445566778899aabbccddeef"),
                 "\"blob_hash\" must be 32");
    reject_field("blob_hash", cJSON_CreateString("00112233445566778899aabbccddeefz"),
                 "\"blob_hash\" must be 32");
    reject_field("sig", cJSON_CreateString("abc"), "\"sig\" must be a hex string");
    reject_field("sig", cJSON_CreateString(""), "\"sig\" must be a hex string");
    reject_field("sig", cJSON_CreateString("0g"), "\"sig\" is not lowercase hex");

    /* versions we do not know */
    reject_field("format", cJSON_CreateNumber(2), "unsupported manifest format 2");
    reject_field("contract_version", cJSON_CreateNumber(99),
                 "unsupported kernel contract version 99");

    /* sizes */
    char big[400];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    reject_field("op", cJSON_CreateString(big), "\"op\" is too long");
    reject_field("op", cJSON_CreateString(""), "\"op\" is empty");
    reject_field("op", cJSON_CreateString("aten::x\x01"), "control characters");
    size_t huge_n = (1u << 20) + 10;
    char *huge = malloc(huge_n + 1);
    memset(huge, 'x', huge_n);
    huge[huge_n] = '\0';
    reject_field("source", cJSON_CreateString(huge), "\"source\" is too long");
    free(huge);
    char *sighex = malloc(2 * (KF_SIG_MAX_BYTES + 1) + 1);
    memset(sighex, 'a', 2 * (KF_SIG_MAX_BYTES + 1));
    sighex[2 * (KF_SIG_MAX_BYTES + 1)] = '\0';
    reject_field("sig", cJSON_CreateString(sighex), "\"sig\" must be a hex string");
    free(sighex);

    /* numbers must be finite: JSON cannot say inf, but 1e400 parses to it */
    char *text = with_field("eager_us", cJSON_CreateNumber(123));
    char *at = strstr(text, "\"eager_us\":123");
    if (CHECK(at != NULL)) {
        char *bad = malloc(strlen(text) + 16);
        size_t pre = (size_t)(at - text) + strlen("\"eager_us\":");
        memcpy(bad, text, pre);
        strcpy(bad + pre, "1e400");
        strcat(bad, at + strlen("\"eager_us\":123"));
        rejects(bad, strlen(bad), "\"eager_us\" must be a finite");
        free(bad);
    }

    /* a repeated field */
    char *dup = malloc(strlen(text) + 32);
    strcpy(dup, "{\"op\":\"aten::relu\",");
    strcat(dup, text + 1);
    rejects(dup, strlen(dup), "\"op\" appears twice");
    free(dup);

    /* not a manifest at all */
    rejects("", 0, "not valid JSON");
    rejects("{", 1, "not valid JSON");
    rejects("[1,2]", 5, "not a JSON object");
    rejects("{\"format\":1}", 12, "missing field \"contract_version\"");
    rejects("{}", 2, "missing field \"format\"");
    char withnul[] = "{\"format\":1}\0xx";
    rejects(withnul, sizeof withnul - 1, "NUL byte");
    /* trailing garbage */
    char *trail = malloc(strlen(text) + 8);
    strcpy(trail, text);
    strcat(trail, " x");
    rejects(trail, strlen(trail), "not valid JSON");
    free(trail);
    /* truncated */
    rejects(text, strlen(text) / 2, "not valid JSON");
    /* a length that stops short of a terminated string is respected */
    kf_cache_entry *ok = NULL;
    char *longer = malloc(strlen(text) + 20);
    strcpy(longer, text);
    strcat(longer, "GARBAGE");
    CHECK_EQ_INT(kf_cache_entry_from_json(longer, strlen(text), &ok, err, sizeof err), KF_OK);
    kf_cache_entry_free(ok);
    free(longer);
    /* too large */
    size_t n = KF_CACHE_MAX_MANIFEST + 1;
    char *huge_doc = malloc(n);
    memset(huge_doc, ' ', n);
    rejects(huge_doc, n, "too large");
    free(huge_doc);
    free(text);
    free(s);

    CHECK_EQ_INT(kf_cache_entry_from_json("{}", 2, NULL, err, sizeof err), KF_ERR_INVALID);
    e = (kf_cache_entry *)1;
    CHECK_EQ_INT(kf_cache_entry_from_json(NULL, 0, &e, NULL, 0), KF_ERR_INVALID);
    CHECK(e == NULL);
}

int main(void)
{
    test_keys();
    test_round_trip();
    test_validation();
    return check_done("test_cache_manifest");
}
