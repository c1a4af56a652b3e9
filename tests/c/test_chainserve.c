/* Chain entries (plugin/chainserve.h): validated as untrusted input, attached to their head
 * signature, refused for good, and the drop-rate guard (mispredicted runs count as completed). */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/hex.h"
#include "common/signature.h"
#include "plugin/chainserve.h"
#include "plugin/config.h"
#include "plugin/plugin.h"

static char *hex_of(const char *op, uint64_t *key)
{
    kf_sig s;
    kf_sig_begin(&s, op);
    kf_tensor t = {.dtype = KF_F32, .ndim = 2, .sizes = {4, 8}, .strides = {8, 1}};
    kf_sig_tensor(&s, &t);
    char *hex = malloc(2 * (size_t)s.len + 1);
    kf_hex_encode(s.buf, s.len, hex);
    *key = kf_sig_hash(s.buf, s.len);
    return hex;
}

/* exp(head0) -> neg(member 0) with `ref` as neg's input */
static char *spec(const char *ref, uint64_t *head_key)
{
    uint64_t k1;
    char *h0 = hex_of("aten::exp", head_key), *h1 = hex_of("aten::neg", &k1);
    char *text = malloc(strlen(h0) + strlen(h1) + 400);
    sprintf(text,
            "{\"version\":1,\"n_head_inputs\":1,\"n_ext\":0,\"members\":["
            "{\"op\":\"aten::exp\",\"sig_hex\":\"%s\",\"inputs\":[[\"head\",0]]},"
            "{\"op\":\"aten::neg\",\"sig_hex\":\"%s\",\"inputs\":[%s]}]}",
            h0, h1, ref);
    free(h0);
    free(h1);
    return text;
}

#define OUT(m, alias) \
    "{\"member\":" #m ",\"alias_arg\":" #alias ",\"dtype\":1,\"sizes\":[4,8],\"strides\":[8,1]}"

static kf_runtime *new_runtime(void)
{
    static kf_config cfg;
    unsetenv("KFORGE_DISABLE");
    kf_config_from_env(&cfg);
    kf_runtime *rt = NULL;
    if (!CHECK_EQ_INT(kf_runtime_create(&rt, &cfg), KF_OK)) exit(check_done("chainserve"));
    return rt;
}

static kf_status add(kf_runtime *rt, const char *sp, const char *outs, char *err)
{
    return kf_chainserve_add(rt, sp, outs, NULL, 0, NULL, 1e-5, 1e-5, "", err, 256);
}

static void test_validation(void)
{
    kf_runtime *rt = new_runtime();
    uint64_t head;
    char err[256];
    char *good = spec("[\"member\",0,0]", &head);
    CHECK(!kf_chainserve_active(rt));
    const char *outs_bad[] = {
        "[" OUT(0, -1) "]",                 /* member 1 has no layout */
        "[" OUT(1, -1) "," OUT(0, -1) "]", /* out of order */
        "[" OUT(0, -1) "," OUT(1, 0) "]",  /* a later member writing an argument */
        "[" OUT(0, 0) "," OUT(1, -1) "]",  /* an in-place head: not served yet */
        "[" OUT(0, -1) "," OUT(2, -1) "]", /* no such member */
        "[{\"alias_arg\":-1,\"dtype\":1,\"sizes\":[4,8],\"strides\":[8,1]}," OUT(1, -1) "]",
        "{}",
    };
    for (size_t i = 0; i < sizeof outs_bad / sizeof outs_bad[0]; i++) {
        err[0] = 0;
        if (!CHECK_EQ_INT(add(rt, good, outs_bad[i], err), KF_ERR_INVALID) || !CHECK(err[0]))
            printf("  outputs %zu: %s\n", i, err);
    }
    /* neg reading exp's second output, which it does not have */
    char *bad_ref = spec("[\"member\",0,1]", &head);
    CHECK_EQ_INT(add(rt, bad_ref, "[" OUT(0, -1) "," OUT(1, -1) "]", err), KF_ERR_INVALID);
    CHECK(strstr(err, "does not have") != NULL);
    /* a cache entry whose sig is not its own chain's bytes */
    CHECK_EQ_INT(kf_chainserve_add(rt, good, "[" OUT(0, -1) "," OUT(1, -1) "]", (const uint8_t *)"KFCHAIN1", 8,
                                   NULL, 1e-5, 1e-5, "", err, sizeof err),
                 KF_ERR_INVALID);
    CHECK(strstr(err, "canonical bytes") != NULL);
    CHECK(!kf_chainserve_active(rt) && kf_chainserve_find(rt, head) == NULL);

    CHECK_EQ_INT(add(rt, good, "[" OUT(0, -1) "," OUT(1, -1) "]", err), KF_OK);
    kf_chain_entry *e = kf_chainserve_find(rt, head);
    if (CHECK(e != NULL)) {
        const kf_chain_def *d = kf_chain_entry_def(e);
        CHECK_EQ_INT(d->n, 2);
        CHECK_EQ_INT(d->n_outputs, 2);
        CHECK_EQ_INT(d->ref[1][0][0], KF_CHAIN_IN_MEMBER);
        CHECK(!strcmp(d->ops, "exp -> neg"));
        CHECK_EQ_INT(kf_chain_entry_state(e), KF_CHAIN_CHECKING);
        kf_chain_entry_enable(e);
        CHECK_EQ_INT(kf_chain_entry_state(e), KF_CHAIN_SERVING);
        CHECK_EQ_INT(kf_chain_entry_refuse(e, rt, "a test", 0), 1);
        CHECK_EQ_INT(kf_chain_entry_refuse(e, rt, "again", 0), 0); /* warned once */
        CHECK(kf_chainserve_find(rt, head) == NULL);
        char *json = kf_chain_entries_json(rt);
        CHECK(json && strstr(json, "\"state\":\"refused\"") && strstr(json, "\"reason\":\"a test\""));
        free(json);
    }
    free(good);
    free(bad_ref);
    kf_runtime_free(rt);
}

static void test_drop_guard(void)
{
    kf_runtime *rt = new_runtime();
    uint64_t head;
    char err[256], *sp = spec("[\"member\",0,0]", &head);
    CHECK_EQ_INT(add(rt, sp, "[" OUT(0, -1) "," OUT(1, -1) "]", err), KF_OK);
    kf_chain_entry *e = kf_chainserve_find(rt, head);
    int refused = 0;
    /* dropped more often than completed, but fewer than 32 heads: kept */
    for (int i = 0; i < KF_CHAIN_GUARD_HEADS - 1; i++) {
        kf_chain_entry_count(e, rt, KF_CHAIN_HEADS);
        refused |= kf_chain_entry_count(e, rt, i % 3 ? KF_CHAIN_DROPPED : KF_CHAIN_COMPLETED);
    }
    CHECK(!refused && kf_chain_entry_state(e) == KF_CHAIN_CHECKING);
    kf_chain_entry_count(e, rt, KF_CHAIN_HEADS);
    CHECK_EQ_INT(kf_chain_entry_count(e, rt, KF_CHAIN_DROPPED), 1);
    CHECK_EQ_INT(kf_chain_entry_state(e), KF_CHAIN_REFUSED);
    char *json = kf_chain_entries_json(rt);
    CHECK(json && strstr(json, "dropped before its last member"));
    free(json);
    /* skipped heads (predicted drops, no launch) count towards the 32: a few drops, no
     * completion, then skips is refused at the 32nd; skips with more completions are kept */
    kf_chain_entry *e2 = NULL, *e3 = NULL;
    char *sp2 = spec("[\"member\",0,0]", &head);
    CHECK_EQ_INT(add(rt, sp2, "[" OUT(0, -1) "," OUT(1, -1) "]", err), KF_OK);
    e2 = kf_chainserve_find(rt, head);
    for (int i = 0; i < 4; i++) kf_chain_entry_count(e2, rt, KF_CHAIN_HEADS), kf_chain_entry_count(e2, rt, KF_CHAIN_DROPPED);
    refused = 0;
    for (int i = 4; i < KF_CHAIN_GUARD_HEADS; i++) refused += kf_chain_entry_count(e2, rt, KF_CHAIN_SKIPPED);
    CHECK_EQ_INT(refused, 1);
    CHECK_EQ_INT(kf_chain_entry_state(e2), KF_CHAIN_REFUSED);
    CHECK_EQ_INT(add(rt, sp2, "[" OUT(0, -1) "," OUT(1, -1) "]", err), KF_OK);
    e3 = kf_chainserve_find(rt, head);
    CHECK(e3 && e3 != e2);
    for (int i = 0; i < 3 * KF_CHAIN_GUARD_HEADS; i++) {
        kf_chain_entry_count(e3, rt, KF_CHAIN_HEADS);
        kf_chain_entry_count(e3, rt, i < 2 ? KF_CHAIN_DROPPED : KF_CHAIN_COMPLETED);
        CHECK(!kf_chain_entry_count(e3, rt, KF_CHAIN_SKIPPED));
    }
    CHECK_EQ_INT(kf_chain_entry_state(e3), KF_CHAIN_CHECKING);
    /* the first forward of a model running the chain at 40 places, each with its own weight:
     * every launched head mispredicts and completes observed, then one place drops: kept */
    CHECK_EQ_INT(add(rt, sp2, "[" OUT(0, -1) "," OUT(1, -1) "]", err), KF_OK);
    kf_chain_entry *e4 = kf_chainserve_find(rt, head);
    CHECK(e4 && e4 != e3);
    for (int i = 0; i < 40; i++)
        kf_chain_entry_count(e4, rt, KF_CHAIN_HEADS), kf_chain_entry_count(e4, rt, KF_CHAIN_MISPREDICTED);
    kf_chain_entry_count(e4, rt, KF_CHAIN_HEADS);
    CHECK(!kf_chain_entry_count(e4, rt, KF_CHAIN_DROPPED));
    CHECK_EQ_INT(kf_chain_entry_state(e4), KF_CHAIN_CHECKING);
    json = kf_chain_entries_json(rt);
    CHECK(json && strstr(json, "\"mispredicted\":40"));
    free(json);
    free(sp2);
    free(sp);
    kf_runtime_free(rt);
}

int main(void)
{
    test_validation();
    test_drop_guard();
    return check_done("chainserve");
}
