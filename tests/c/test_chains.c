/* Chain recording (plugin/chains.h): runs linked by dataflow are counted under their identity;
 * a call without a link, a call that cannot be served and the length limit end a run. */
#include <cjson/cJSON.h>
#include <stdlib.h>

#include "check.h"
#include "plugin/chains.h"

/* One call of signature `key` reading `in` (ids) and writing `out`. */
static void call(kf_chains *c, kf_chain_rec *r, uint64_t key, uintptr_t in0, uintptr_t in1,
                 uintptr_t out)
{
    uintptr_t in[2] = {in0, in1}, o[1] = {out};
    kf_chain_observe(c, r, key, 1, in, in1 ? 2 : 1, o, 1);
}

static cJSON *listing(kf_chains *c, uint64_t min_calls)
{
    char *text = kf_chains_json_doc(c, min_calls);
    cJSON *doc = text ? cJSON_Parse(text) : NULL;
    free(text);
    return doc;
}

/* x -> add(x, w) -> relu -> mul(relu, x) , then the next iteration starts from new x */
static void rms_like(kf_chains *c, kf_chain_rec *r, uintptr_t base)
{
    uintptr_t x = base, w = 7, a = base + 1, b = base + 2, m = base + 3;
    call(c, r, 0xA, x, w, a);
    call(c, r, 0xB, a, 0, b);
    call(c, r, 0xC, b, x, m);
}

static void test_recurring_chain(void)
{
    kf_chains *c;
    CHECK_EQ_INT(kf_chains_create(&c, 64), KF_OK);
    kf_chain_rec *r = kf_chain_rec_create();
    for (int i = 0; i < 5; i++) rms_like(c, r, 100 + 10 * (uintptr_t)i);
    kf_chain_flush(c, r);
    cJSON *doc = listing(c, 3);
    cJSON *chains = cJSON_GetObjectItem(doc, "chains");
    CHECK_EQ_INT(cJSON_GetArraySize(chains), 1);
    cJSON *ch = cJSON_GetArrayItem(chains, 0);
    CHECK_EQ_INT(cJSON_GetObjectItem(ch, "calls")->valuedouble, 5);
    cJSON *members = cJSON_GetObjectItem(ch, "members");
    CHECK_EQ_INT(cJSON_GetArraySize(members), 3);
    CHECK(!strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(members, 0), "key")->valuestring,
                  "000000000000000a"));
    /* mul's inputs: relu's output (member 1, output 0), then x from outside */
    cJSON *ins = cJSON_GetObjectItem(cJSON_GetArrayItem(members, 2), "inputs");
    CHECK_EQ_INT(cJSON_GetArrayItem(cJSON_GetArrayItem(ins, 0), 0)->valueint, 1);
    CHECK(cJSON_IsNull(cJSON_GetArrayItem(ins, 1)));
    cJSON_Delete(doc);
    /* below min_calls: not listed */
    doc = listing(c, 6);
    CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "chains")), 0);
    cJSON_Delete(doc);
    kf_chains_reset(c);
    doc = listing(c, 1);
    CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "chains")), 0);
    cJSON_Delete(doc);
    kf_chain_rec_free(r);
    kf_chains_free(c);
}

static void test_runs_end(void)
{
    kf_chains *c;
    CHECK_EQ_INT(kf_chains_create(&c, 64), KF_OK);
    kf_chain_rec *r = kf_chain_rec_create();
    /* an unservable call between two linked calls: two runs of one call, no chain */
    call(c, r, 1, 10, 0, 11);
    uintptr_t in[1] = {11}, out[1] = {12};
    kf_chain_observe(c, r, 2, 0, in, 1, out, 1);
    call(c, r, 3, 12, 0, 13);
    kf_chain_flush(c, r);
    cJSON *doc = listing(c, 1);
    CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "chains")), 0);
    cJSON_Delete(doc);
    /* a long run is cut at KF_CHAIN_MAX members */
    uintptr_t id = 1000;
    for (int i = 0; i < KF_CHAIN_MAX + 3; i++, id++) call(c, r, 50 + (uint64_t)i, id, 0, id + 1);
    kf_chain_flush(c, r);
    doc = listing(c, 1);
    cJSON *chains = cJSON_GetObjectItem(doc, "chains");
    CHECK_EQ_INT(cJSON_GetArraySize(chains), 2);
    int sizes = 0;
    for (int i = 0; i < cJSON_GetArraySize(chains); i++)
        sizes += cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetArrayItem(chains, i), "members"));
    CHECK_EQ_INT(sizes, KF_CHAIN_MAX + 3);
    cJSON_Delete(doc);
    kf_chain_rec_free(r);
    kf_chains_free(c);
}

static void test_full_table_drops(void)
{
    kf_chains *c;
    CHECK_EQ_INT(kf_chains_create(&c, 16), KF_OK);
    kf_chain_rec *r = kf_chain_rec_create();
    for (uint64_t k = 0; k < 40; k++) { /* 40 different two-call chains into 16 slots */
        call(c, r, 100 + k, 1, 0, 2);
        call(c, r, 200 + k, 2, 0, 3);
        kf_chain_flush(c, r);
    }
    cJSON *doc = listing(c, 1);
    int listed = cJSON_GetArraySize(cJSON_GetObjectItem(doc, "chains"));
    CHECK(listed == 12); /* three quarters of 16 */
    CHECK_EQ_INT(cJSON_GetObjectItem(doc, "dropped")->valuedouble, 40 - listed);
    cJSON_Delete(doc);
    kf_chain_rec_free(r);
    kf_chains_free(c);
}

int main(void)
{
    test_recurring_chain();
    test_runs_end();
    test_full_table_drops();
    return check_done("chains");
}
