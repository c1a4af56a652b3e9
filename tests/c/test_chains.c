/* Chain recording (plugin/chains.h): runs linked by dataflow are counted under their identity;
 * a call without a link, a call that cannot be served and the length limit end a run. */
#include <cjson/cJSON.h>
#include <stdlib.h>

#include "check.h"
#include "common/chain_sig.h"
#include "common/hex.h"
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
    char *text = kf_chains_json_doc(c, min_calls, NULL, NULL);
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

/* Test signatures: key k is op "t::k<k>" taking (k >> 8) f32[4] tensors; KEY_LN is a layer norm. */
#define KEY_LN 0x1ee
#define KEY_MEAN 0x1ef
#define KEY_CAT 0x2ef
#define KEY_POOL 0x1f0
static int lookup(void *user, uint64_t key, kf_chain_member_info *out)
{
    (void)user;
    if (key == 0xdead) return 0; /* evicted */
    char op[32];
    snprintf(op, sizeof op, "t::k%llx", (unsigned long long)key);
    if (key == KEY_LN) snprintf(op, sizeof op, "aten::native_layer_norm");
    if (key == KEY_MEAN) snprintf(op, sizeof op, "aten::mean.dim");
    if (key == KEY_CAT) snprintf(op, sizeof op, "aten::cat");
    if (key == KEY_POOL) snprintf(op, sizeof op, "aten::max_pool2d_with_indices");
    kf_sig s;
    kf_sig_begin(&s, op);
    kf_tensor t = {.dtype = KF_F32, .ndim = 1, .sizes = {4}, .strides = {1}};
    for (uint64_t i = 0; i < key >> 8; i++) kf_sig_tensor(&s, &t);
    snprintf(out->op, sizeof out->op, "%s", op);
    snprintf(out->signature, sizeof out->signature, "%s(...)", op);
    memcpy(out->sig, s.buf, s.len);
    out->sig_len = s.len;
    return 1;
}

/* One run of calls from..n-1: call k of signature keys[k] reads a[k] (and b[k]: a key's bits
 * above 8 are its tensor inputs) and writes out0 + k, the layer norm's mean and rstd at extra and
 * extra + 1; then the run is flushed. */
static void observe_run(kf_chains *c, kf_chain_rec *r, const uint64_t *keys, const uintptr_t *a,
                        const uintptr_t *b, int from, int n, uintptr_t out0, uintptr_t extra)
{
    uintptr_t in[2], outs[3] = {0, extra, extra + 1};
    for (int k = from; k < n; k++) {
        in[0] = a[k], in[1] = b[k], outs[0] = out0 + (uintptr_t)k;
        kf_chain_observe(c, r, keys[k], KF_CHAIN_SERVABLE, in, (int)(keys[k] >> 8), outs,
                         keys[k] == KEY_LN ? 3 : keys[k] == KEY_POOL ? 2 : 1);
    }
    kf_chain_flush(c, r);
}

static cJSON *only_chain(kf_chains *c)
{
    char *text = kf_chains_json_doc(c, 1, lookup, NULL);
    cJSON *doc = text ? cJSON_Parse(text) : NULL;
    free(text);
    cJSON *ch = cJSON_DetachItemFromArray(cJSON_GetObjectItem(doc, "chains"), 0);
    cJSON_Delete(doc);
    return ch;
}

static const char *ref_text(cJSON *spec, int m, int i, char *buf)
{
    cJSON *ins = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(spec, "members"), m), "inputs");
    char *t = cJSON_PrintUnformatted(cJSON_GetArrayItem(ins, i));
    snprintf(buf, 64, "%s", t ? t : "?");
    free(t);
    return buf;
}

/* RMSNorm-like: pow(x) -> mean -> add(mean, w) -> mul(x, rsq) -> mul(y, w): x is the head's
 * input at later members, w one external used twice, the same tensor both times. */
static void test_spec(void)
{
    kf_chains *c;
    CHECK_EQ_INT(kf_chains_create(&c, 64), KF_OK);
    kf_chain_rec *r = kf_chain_rec_create();
    uintptr_t x = 10, w = 20, in[2], out[1];
    struct { uint64_t key; uintptr_t a, b, o; } calls[] = {
        {0x101, x, 0, 11}, {0x102, 11, 0, 12}, {0x203, 12, w, 13}, {0x204, x, 13, 14}, {0x205, 14, w, 15}};
    for (int k = 0; k < 5; k++) {
        in[0] = calls[k].a, in[1] = calls[k].b, out[0] = calls[k].o;
        kf_chain_observe(c, r, calls[k].key, KF_CHAIN_SERVABLE, in, calls[k].b ? 2 : 1, out, 1);
    }
    kf_chain_flush(c, r);
    cJSON *ch = only_chain(c), *spec = cJSON_GetObjectItem(ch, "spec");
    char buf[64];
    if (CHECK(cJSON_IsObject(spec))) {
        CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(spec, "members")), 5);
        CHECK_EQ_INT(cJSON_GetObjectItem(spec, "n_head_inputs")->valueint, 1);
        CHECK_EQ_INT(cJSON_GetObjectItem(spec, "n_ext")->valueint, 1);
        CHECK(!strcmp(ref_text(spec, 0, 0, buf), "[\"head\",0]"));
        CHECK(!strcmp(ref_text(spec, 2, 0, buf), "[\"member\",1,0]"));
        CHECK(!strcmp(ref_text(spec, 2, 1, buf), "[\"ext\",0]"));
        CHECK(!strcmp(ref_text(spec, 3, 0, buf), "[\"head\",0]"));
        CHECK(!strcmp(ref_text(spec, 4, 1, buf), "[\"ext\",0]"));
        /* the chain's sig_hex is the canonical bytes of the spec itself */
        char *text = cJSON_PrintUnformatted(spec);
        uint8_t *b = NULL;
        uint32_t n = 0;
        CHECK_EQ_INT(kf_chain_sig_bytes(text, &b, &n, NULL, 0), KF_OK);
        char *hex = malloc(2 * (size_t)n + 1);
        kf_hex_encode(b, n, hex);
        CHECK(!strcmp(hex, cJSON_GetObjectItem(spec, "sig_hex")->valuestring));
        free(hex), free(b), free(text);
        cJSON *m1 = cJSON_GetArrayItem(cJSON_GetObjectItem(spec, "members"), 1);
        CHECK(!strcmp(cJSON_GetObjectItem(m1, "op")->valuestring, "t::k102"));
    }
    cJSON_Delete(ch);

    /* a later member that writes in place cuts the spec before it; at member 1: no spec */
    kf_chains_reset(c);
    for (int cut = 1; cut <= 2; cut++) {
        for (int k = 0; k < 4; k++) {
            in[0] = 30 + (uintptr_t)k, out[0] = 31 + (uintptr_t)k;
            kf_chain_observe(c, r, 0x101 + (uint64_t)k, KF_CHAIN_SERVABLE | (k == cut ? KF_CHAIN_WRITES : 0),
                             in, 1, out, 1);
        }
        kf_chain_flush(c, r);
        ch = only_chain(c);
        spec = cJSON_GetObjectItem(ch, "spec");
        CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(ch, "members")), 4); /* all recorded */
        if (cut == 1) {
            CHECK(cJSON_IsNull(spec));
            CHECK(strstr(cJSON_GetObjectItem(ch, "fusable_reason")->valuestring, "writes in place"));
        } else {
            CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(spec, "members")), 2);
        }
        cJSON_Delete(ch);
        kf_chains_reset(c);
    }

    /* a member with three outputs (a layer norm: y, mean, rstd): add -> LN -> add -> LN gives
     * add -> LN (the second add heads the second norm's chain), LN -> add -> LN -> add none; a
     * member reading its rstd (output 2) ends the spec before it; after another op with three
     * outputs (a batch norm) the spec ends, none where it heads */
    for (int variant = 0; variant < 5; variant++) {
        const int head_ln = variant == 1 || variant == 4, rstd = variant == 2, other = variant >= 3;
        const uint64_t norm = other ? 0x102 : KEY_LN;
        uintptr_t outs[3];
        for (int k = 0; k < 4; k++) {
            int ln = (k % 2) != head_ln;
            in[0] = 50 + 4 * (uintptr_t)k, in[1] = 99;
            if (rstd && k == 2) in[1] = 2000 + 1; /* member 1's rstd */
            outs[0] = 54 + 4 * (uintptr_t)k, outs[1] = 1000 + (uintptr_t)k, outs[2] = 2000 + (uintptr_t)k;
            kf_chain_observe(c, r, ln ? norm : 0x203, KF_CHAIN_SERVABLE, in, ln ? 1 : 2, outs,
                             ln ? 3 : 1);
        }
        kf_chain_flush(c, r);
        ch = only_chain(c);
        spec = cJSON_GetObjectItem(ch, "spec");
        CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(ch, "members")), 4);
        if (head_ln) {
            CHECK(cJSON_IsNull(spec));
            CHECK(strstr(cJSON_GetObjectItem(ch, "fusable_reason")->valuestring,
                         other ? "member 0 has 3 outputs (only a layer or group norm"
                               : "member 1 does not join the norm's epilogue"));
        } else {
            CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(spec, "members")), 2);
        }
        cJSON_Delete(ch);
        kf_chains_reset(c);
    }

    /* the norm's epilogue: add -> LN -> mul(y, w) -> relu is one spec; a reduction after the
     * norm (its mean over rows: a pooled output) is not in it */
    for (int red = 0; red < 2; red++) {
        const uint64_t keys[4] = {0x203, KEY_LN, red ? KEY_MEAN : 0x203, 0x102};
        const uintptr_t a[4] = {60, 61, 62, 63}, b[4] = {98, 0, 97, 0};
        observe_run(c, r, keys, a, b, 0, 4, 61, 3000);
        ch = only_chain(c);
        spec = cJSON_GetObjectItem(ch, "spec");
        CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(spec, "members")), red ? 2 : 4);
        cJSON_Delete(ch);
        kf_chains_reset(c);
    }

    /* an op with two outputs that is no norm (a stem's max_pool2d_with_indices) after norm -> relu
     * ends the spec before it: norm -> relu is one */
    {
        const uint64_t keys[3] = {KEY_LN, 0x102, KEY_POOL};
        const uintptr_t a[3] = {70, 71, 72}, b[3] = {0, 0, 0};
        observe_run(c, r, keys, a, b, 0, 3, 71, 5000);
        ch = only_chain(c);
        spec = cJSON_GetObjectItem(ch, "spec");
        CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(spec, "members")), 2);
        cJSON_Delete(ch);
        kf_chains_reset(c);
    }

    /* a cat that a norm reads (a UNet's skip concatenation, then its norm and silu) is not fused
     * with it: cat -> LN -> relu and add -> cat -> LN -> relu give LN -> relu, the norm heading */
    for (int add = 0; add < 2; add++) {
        const uint64_t keys[4] = {0x203, KEY_CAT, KEY_LN, 0x102};
        const uintptr_t a[4] = {80, 81, 82, 83}, b[4] = {96, 95, 0, 0};
        observe_run(c, r, keys, a, b, !add, 4, 81, 4000);
        ch = only_chain(c);
        spec = cJSON_GetObjectItem(ch, "spec");
        CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(spec, "members")), 2);
        CHECK_EQ_INT(cJSON_GetObjectItem(ch, "spec_first")->valuedouble, 1 + add);
        cJSON_Delete(ch);
        kf_chains_reset(c);
    }

    /* a head writing in place (a cast's copy_ into a fresh tensor) is left out when two or more
     * members follow: its written tensor becomes the spec's head input, a weight external 0 */
    {
        struct { uint64_t key; uintptr_t a, b, o; unsigned fl; } run[] = {
            {0x201, 70, 71, 70, KF_CHAIN_WRITES}, {0x102, 70, 0, 72, 0}, {0x203, 72, 99, 73, 0},
            {0x203, 70, 73, 74, 0}};
        for (int k = 0; k < 4; k++) {
            in[0] = run[k].a, in[1] = run[k].b, out[0] = run[k].o;
            kf_chain_observe(c, r, run[k].key, KF_CHAIN_SERVABLE | run[k].fl, in, run[k].b ? 2 : 1,
                             out, 1);
        }
        kf_chain_flush(c, r);
        ch = only_chain(c);
        spec = cJSON_GetObjectItem(ch, "spec");
        if (CHECK(cJSON_IsObject(spec))) {
            CHECK_EQ_INT(cJSON_GetObjectItem(ch, "spec_first")->valueint, 1);
            CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(spec, "members")), 3);
            CHECK_EQ_INT(cJSON_GetObjectItem(spec, "n_head_inputs")->valueint, 1);
            CHECK_EQ_INT(cJSON_GetObjectItem(spec, "n_ext")->valueint, 1);
            CHECK(!strcmp(ref_text(spec, 0, 0, buf), "[\"head\",0]"));
            CHECK(!strcmp(ref_text(spec, 1, 0, buf), "[\"member\",0,0]"));
            CHECK(!strcmp(ref_text(spec, 1, 1, buf), "[\"ext\",0]"));
            CHECK(!strcmp(ref_text(spec, 2, 0, buf), "[\"head\",0]"));
            CHECK(!strcmp(ref_text(spec, 2, 1, buf), "[\"member\",1,0]"));
        }
        cJSON_Delete(ch);
        kf_chains_reset(c);
    }

    /* an evicted member signature, and a member whose recorded inputs do not match its signature */
    for (int bad = 0; bad < 2; bad++) {
        in[0] = 40, out[0] = 41;
        kf_chain_observe(c, r, 0x101, KF_CHAIN_SERVABLE, in, 1, out, 1);
        in[0] = 41, out[0] = 42;
        kf_chain_observe(c, r, bad ? 0x202 : 0xdead, KF_CHAIN_SERVABLE, in, 1, out, 1);
        kf_chain_flush(c, r);
        ch = only_chain(c);
        CHECK(cJSON_IsNull(cJSON_GetObjectItem(ch, "spec")));
        CHECK(strstr(cJSON_GetObjectItem(ch, "fusable_reason")->valuestring,
                     bad ? "could not be followed" : "no longer in the signature table"));
        cJSON_Delete(ch);
        kf_chains_reset(c);
    }

    /* SwiGLU as transformers writes it: silu(gate) -> mul(that, up), up a new tensor every run
     * (a linear's output, which the plugin does not see): no spec. A weight is new only the
     * first time. */
    for (int weight = 0; weight < 2; weight++) {
        for (int k = 0; k < 4; k++) {
            uintptr_t g = 50 + 10 * (uintptr_t)k, up = weight ? 99 : g + 1;
            in[0] = g, out[0] = g + 2;
            kf_chain_observe(c, r, 0x101, KF_CHAIN_SERVABLE | KF_CHAIN_FRESH(0), in, 1, out, 1);
            in[0] = g + 2, in[1] = up, out[0] = g + 3;
            unsigned fresh = !weight || k == 0 ? KF_CHAIN_FRESH(1) : 0;
            kf_chain_observe(c, r, 0x203, KF_CHAIN_SERVABLE | fresh, in, 2, out, 1);
            kf_chain_flush(c, r);
        }
        ch = only_chain(c);
        if (weight) {
            CHECK(cJSON_IsObject(cJSON_GetObjectItem(ch, "spec")));
        } else {
            CHECK(cJSON_IsNull(cJSON_GetObjectItem(ch, "spec")));
            const char *why = cJSON_GetStringValue(cJSON_GetObjectItem(ch, "fusable_reason"));
            if (!CHECK(why && strstr(why, "member 1 reads a tensor new to the plugin in 4 of 4 runs")))
                printf("     reason: %s\n", why ? why : "(none)");
        }
        cJSON_Delete(ch);
        kf_chains_reset(c);
    }

    /* the scale, a mask made in this run by another intercepted call, the softmax: the spec
     * starts at the mask add, both its inputs the head's; such a mask at the end keeps the part
     * before it instead (the longer one) */
    for (int at_end = 0; at_end < 2; at_end++) {
        uint64_t now = 10;
        for (int k = 0; k < 4; k++, now += 3) {
            uint64_t at[2] = {1, 1}, made[2] = {1, 0};
            uintptr_t b = 100 + 10 * (uintptr_t)k;
            if (at_end) { /* a -> b -> c -> mul(fresh) */
                in[0] = b, out[0] = b + 1;
                kf_chain_observe_at(c, r, 0x101, KF_CHAIN_SERVABLE, in, at, 1, out, 1, now++);
                in[0] = b + 1, out[0] = b + 2;
                kf_chain_observe_at(c, r, 0x102, KF_CHAIN_SERVABLE, in, at, 1, out, 1, now++);
                in[0] = b + 2, out[0] = b + 3;
                kf_chain_observe_at(c, r, 0x101, KF_CHAIN_SERVABLE, in, at, 1, out, 1, now++);
                in[0] = b + 3, in[1] = b + 4, out[0] = b + 5, made[1] = now - 1;
                kf_chain_observe_at(c, r, 0x203, KF_CHAIN_SERVABLE, in, made, 2, out, 1, now++);
            } else { /* mul(scores, scale) -> add(that, mask) -> softmax */
                in[0] = b, in[1] = 99, out[0] = b + 1;
                kf_chain_observe_at(c, r, 0x203, KF_CHAIN_SERVABLE | KF_CHAIN_FRESH(0), in, at, 2, out, 1, now++);
                in[0] = b + 1, in[1] = b + 2, out[0] = b + 3, made[1] = now - 1;
                kf_chain_observe_at(c, r, 0x203, KF_CHAIN_SERVABLE, in, made, 2, out, 1, now++);
                in[0] = b + 3, out[0] = b + 4;
                kf_chain_observe_at(c, r, 0x102, KF_CHAIN_SERVABLE, in, at, 1, out, 1, now++);
            }
            kf_chain_flush(c, r);
        }
        ch = only_chain(c);
        cJSON *spec = cJSON_GetObjectItem(ch, "spec");
        if (CHECK(cJSON_IsObject(spec))) {
            CHECK_EQ_INT(cJSON_GetObjectItem(ch, "spec_first")->valueint, at_end ? 0 : 1);
            CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(spec, "members")), at_end ? 3 : 2);
            CHECK_EQ_INT(cJSON_GetObjectItem(spec, "n_head_inputs")->valueint, at_end ? 1 : 2);
            CHECK_EQ_INT(cJSON_GetObjectItem(spec, "n_ext")->valueint, 0);
            char buf[64];
            CHECK(!strcmp(ref_text(spec, 1, 0, buf), "[\"member\",0,0]"));
        }
        cJSON_Delete(ch);
        kf_chains_reset(c);
    }

    /* an external the thread first saw after the previous run of the chain ended (another
     * intercepted call's output made in this run: GPT-2's 0.5 * x) is fresh; a weight seen
     * long before is not. The last run's ages are compared with the run before it. */
    for (int activation = 0; activation < 2; activation++) {
        uint64_t now = 10;
        for (int k = 0; k < 4; k++) {
            uintptr_t b = 300 + 10 * (uintptr_t)k, ext = activation ? b + 5 : 999;
            uint64_t at[2] = {now, activation ? now - 1 : 1};
            in[0] = b, out[0] = b + 1;
            kf_chain_observe_at(c, r, 0x101, KF_CHAIN_SERVABLE, in, at, 1, out, 1, now++);
            in[0] = b + 1, out[0] = b + 2;
            kf_chain_observe_at(c, r, 0x102, KF_CHAIN_SERVABLE, in, at, 1, out, 1, now++);
            in[0] = b + 2, in[1] = ext, out[0] = b + 3;
            at[0] = now;
            kf_chain_observe_at(c, r, 0x203, KF_CHAIN_SERVABLE, in, at, 2, out, 1, now++);
            kf_chain_flush(c, r);
            now += 3; /* other calls between the runs */
        }
        ch = only_chain(c);
        cJSON *spec = cJSON_GetObjectItem(ch, "spec");
        if (CHECK(cJSON_IsObject(spec)))
            CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(spec, "members")), activation ? 2 : 3);
        cJSON_Delete(ch);
        kf_chains_reset(c);
    }

    /* a layer scale, the residual add, a norm-like op reading a weight: the residual is the
     * previous run's add output (first seen during that run, after it began), so the spec starts
     * at the add and keeps the weight, seen long before, as its external */
    {
        uint64_t now = 10, prev_sum_at = 1;
        uintptr_t prev_sum = 50;
        for (int k = 0; k < 4; k++, now += 3) {
            uintptr_t b = 500 + 10 * (uintptr_t)k;
            uint64_t at[2] = {1, 1}, res[2] = {1, prev_sum_at};
            in[0] = b, in[1] = 77, out[0] = b + 1; /* mul(f(x), gamma) */
            kf_chain_observe_at(c, r, 0x203, KF_CHAIN_SERVABLE | KF_CHAIN_FRESH(0), in, at, 2, out, 1, now++);
            in[0] = b + 1, in[1] = prev_sum, out[0] = b + 2; /* add(that, residual) */
            kf_chain_observe_at(c, r, 0x203, KF_CHAIN_SERVABLE, in, res, 2, out, 1, now++);
            prev_sum = b + 2, prev_sum_at = now - 1;
            in[0] = b + 2, in[1] = 88, out[0] = b + 3; /* norm(sum, weight) */
            kf_chain_observe_at(c, r, 0x204, KF_CHAIN_SERVABLE, in, at, 2, out, 1, now++);
            kf_chain_flush(c, r);
        }
        ch = only_chain(c);
        cJSON *spec = cJSON_GetObjectItem(ch, "spec");
        if (CHECK(cJSON_IsObject(spec))) {
            CHECK_EQ_INT(cJSON_GetObjectItem(ch, "spec_first")->valueint, 1);
            CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(spec, "members")), 2);
            CHECK_EQ_INT(cJSON_GetObjectItem(spec, "n_head_inputs")->valueint, 2);
            CHECK_EQ_INT(cJSON_GetObjectItem(spec, "n_ext")->valueint, 1);
        }
        cJSON_Delete(ch);
        kf_chains_reset(c);
    }

    /* started after a member reading an activation of this run, a spec takes none of the run's
     * own tensors as externals (here the run head's input) */
    uint64_t now = 10;
    for (int k = 0; k < 4; k++, now += 3) {
        uintptr_t b = 200 + 10 * (uintptr_t)k;
        uint64_t at[2] = {1, 1}, made[2] = {1, now + 1};
        in[0] = b, out[0] = b + 1;
        kf_chain_observe_at(c, r, 0x101, KF_CHAIN_SERVABLE, in, at, 1, out, 1, now++);
        in[0] = b + 1, in[1] = b + 2, out[0] = b + 3;
        kf_chain_observe_at(c, r, 0x203, KF_CHAIN_SERVABLE, in, made, 2, out, 1, now++);
        in[0] = b + 3, in[1] = b, out[0] = b + 4;
        kf_chain_observe_at(c, r, 0x203, KF_CHAIN_SERVABLE, in, at, 2, out, 1, now++);
        kf_chain_flush(c, r);
    }
    ch = only_chain(c);
    CHECK(cJSON_IsNull(cJSON_GetObjectItem(ch, "spec")));
    cJSON_Delete(ch);
    kf_chains_reset(c);
    kf_chain_rec_free(r);
    kf_chains_free(c);
}

/* Gemma's RMSNorm: x.float() -> pow -> mean -> add -> pow(-0.5) -> mul, then weight.float()
 * (a call on a weight alone, held back), then mul(normed, that) -> cast. Qwen 3.5 adds 1.0 to
 * the weight's cast first (`qwen`). The held calls join the run, their weight an external. */
static void test_side_calls(void)
{
    kf_chains *c;
    CHECK_EQ_INT(kf_chains_create(&c, 64), KF_OK);
    kf_chain_rec *r = kf_chain_rec_create();
    char buf[64];
    for (int qwen = 0; qwen < 2; qwen++) {
        for (int k = 0; k < 4; k++) {
            uintptr_t b = 1000 + 100 * (uintptr_t)k, w = 77, in[2], out[1];
            const unsigned S = KF_CHAIN_SERVABLE;
#define OBS(key, fl, a0, a1, o) \
    (in[0] = (a0), in[1] = (a1), out[0] = (o), kf_chain_observe(c, r, key, S | (fl), in, (a1) ? 2 : 1, out, 1))
            OBS(0x101, KF_CHAIN_FRESH(0), b, 0, b + 1);
            OBS(0x102, 0, b + 1, 0, b + 2);
            OBS(0x103, 0, b + 2, 0, b + 3);
            OBS(0x104, 0, b + 3, 0, b + 4);
            OBS(0x102, 0, b + 4, 0, b + 5);
            OBS(0x205, 0, b + 1, b + 5, b + 6);
            OBS(0x106, 0, w, 0, b + 7);
            if (qwen) OBS(0x108, 0, b + 7, 0, b + 8);
            OBS(0x209, 0, b + 6, qwen ? b + 8 : b + 7, b + 9);
            OBS(0x10a, 0, b + 9, 0, b + 10);
#undef OBS
            uintptr_t lin = b + 10, lo = b + 11;
            kf_chain_observe(c, r, 0x1ff, 0, &lin, 1, &lo, 1); /* a linear: not servable */
        }
        cJSON *ch = only_chain(c), *spec = cJSON_GetObjectItem(ch, "spec");
        const int n = 9 + qwen;
        CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(ch, "members")), n);
        if (CHECK(cJSON_IsObject(spec))) {
            CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(spec, "members")), n);
            CHECK_EQ_INT(cJSON_GetObjectItem(spec, "n_ext")->valueint, 1);
            CHECK(!strcmp(ref_text(spec, 6, 0, buf), "[\"ext\",0]")); /* the weight */
            if (qwen) CHECK(!strcmp(ref_text(spec, 7, 0, buf), "[\"member\",6,0]"));
            CHECK(!strcmp(ref_text(spec, n - 2, 0, buf), "[\"member\",5,0]"));
            CHECK(!strcmp(ref_text(spec, n - 2, 1, buf), qwen ? "[\"member\",7,0]" : "[\"member\",6,0]"));
        }
        cJSON_Delete(ch);
        kf_chains_reset(c);
    }
    /* a held call that the next one does not join with the run is replayed as it came: a -> b,
     * then s(w) -> t(s's output, a fresh activation), two chains as without holding */
    for (int k = 0; k < 4; k++) {
        uintptr_t b = 5000 + 100 * (uintptr_t)k, w = 77, in[2] = {b, 0}, out[1] = {b + 1};
        kf_chain_observe(c, r, 0x101, KF_CHAIN_SERVABLE | KF_CHAIN_FRESH(0), in, 1, out, 1);
        in[0] = b + 1, out[0] = b + 2;
        kf_chain_observe(c, r, 0x102, KF_CHAIN_SERVABLE, in, 1, out, 1);
        in[0] = w, out[0] = b + 3;
        kf_chain_observe(c, r, 0x106, KF_CHAIN_SERVABLE, in, 1, out, 1);
        in[0] = b + 3, in[1] = b + 50, out[0] = b + 4;
        kf_chain_observe(c, r, 0x209, KF_CHAIN_SERVABLE | KF_CHAIN_FRESH(1), in, 2, out, 1);
        kf_chain_flush(c, r);
    }
    cJSON *doc = listing(c, 1), *chains = cJSON_GetObjectItem(doc, "chains");
    CHECK_EQ_INT(cJSON_GetArraySize(chains), 2);
    for (int i = 0; i < cJSON_GetArraySize(chains); i++) {
        cJSON *ch = cJSON_GetArrayItem(chains, i);
        CHECK_EQ_INT(cJSON_GetObjectItem(ch, "calls")->valueint, 4);
        CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(ch, "members")), 2);
    }
    cJSON_Delete(doc);
    kf_chain_rec_free(r);
    kf_chains_free(c);
}

/* Gemma's q_norm, then rotary on its output q: q * cos (linked to the norm's run), then -q2 and
 * cat(-q2, q1) read views of q, which link to nothing there: the run is observed again as the
 * norm, and rotary from q * cos, where q is a head input whose views link. */
static void test_views_of_a_member_output(void)
{
    kf_chains *c;
    CHECK_EQ_INT(kf_chains_create(&c, 64), KF_OK);
    kf_chain_rec *r = kf_chain_rec_create();
    for (int k = 0; k < 4; k++) {
        uintptr_t b = 1000 + 100 * (uintptr_t)k, cos = 70, sin = 71;
        uintptr_t in[2], st[2], o[1];
        int64_t off[2];
#define OBS(key, fl, a0, s0, o0, a1, s1, o1, y)                                                      \
    (in[0] = (a0), st[0] = (s0), off[0] = (o0), in[1] = (a1), st[1] = (s1), off[1] = (o1), o[0] = (y), \
     kf_chain_observe_views(c, r, key, KF_CHAIN_SERVABLE | (fl), in, NULL, st, off, (a1) ? 2 : 1, o, 1, 0))
        OBS(0x101, KF_CHAIN_FRESH(0), b, b, 0, 0, 0, 0, b + 1);          /* the norm */
        OBS(0x102, 0, b + 1, b + 1, 0, 0, 0, 0, b + 2);                  /* q = b + 2 */
        OBS(0x203, 0, b + 2, b + 2, 0, cos, cos, 0, b + 3);              /* q * cos */
        OBS(0x104, KF_CHAIN_FRESH(0), b + 50, b + 2, 64, 0, 0, 0, b + 4); /* -q2 */
        OBS(0x205, KF_CHAIN_FRESH(1), b + 4, b + 4, 0, b + 51, b + 2, 0, b + 5); /* cat(-q2, q1) */
        OBS(0x206, 0, b + 5, b + 5, 0, sin, sin, 0, b + 6);
        OBS(0x207, 0, b + 3, b + 3, 0, b + 6, b + 6, 0, b + 7);
#undef OBS
        uintptr_t lin = b + 7, lo = b + 8;
        kf_chain_observe(c, r, 0x1ff, 0, &lin, 1, &lo, 1); /* a linear: not servable */
    }
    char *text = kf_chains_json_doc(c, 1, lookup, NULL);
    cJSON *doc = text ? cJSON_Parse(text) : NULL, *chains = cJSON_GetObjectItem(doc, "chains");
    free(text);
    int sizes[2] = {0, 0}, n = cJSON_GetArraySize(chains);
    CHECK_EQ_INT(n, 2);
    for (int i = 0; i < n && i < 2; i++) {
        cJSON *ch = cJSON_GetArrayItem(chains, i);
        CHECK_EQ_INT(cJSON_GetObjectItem(ch, "calls")->valueint, 4);
        sizes[i] = cJSON_GetArraySize(cJSON_GetObjectItem(ch, "members"));
        if (sizes[i] != 5) continue;
        cJSON *spec = cJSON_GetObjectItem(ch, "spec"), *views = cJSON_GetObjectItem(spec, "views");
        char buf[64];
        if (!CHECK(cJSON_IsObject(spec) && cJSON_GetArraySize(views) == 2)) continue;
        CHECK(!strcmp(ref_text(spec, 1, 0, buf), "[\"ext\",0]")); /* -q2: a view of head input 0 */
        cJSON *v = cJSON_GetArrayItem(views, 0);
        CHECK_EQ_INT(cJSON_GetArrayItem(v, 1)->valueint, 0);
        CHECK_EQ_INT(cJSON_GetArrayItem(v, 2)->valueint, 64);
    }
    CHECK((sizes[0] == 2 && sizes[1] == 5) || (sizes[0] == 5 && sizes[1] == 2));
    cJSON_Delete(doc);
    kf_chain_rec_free(r);
    kf_chains_free(c);
}

/* A run that fills up (norm, residual add, the next norm: 19 calls) is cut before the last member
 * of its head's signature, not at the limit in the middle of the second norm. */
static void test_full_run_cut_at_a_repeated_head(void)
{
    kf_chains *c;
    CHECK_EQ_INT(kf_chains_create(&c, 64), KF_OK);
    kf_chain_rec *r = kf_chain_rec_create();
    const uint64_t norm[9] = {0x101, 0x102, 0x103, 0x104, 0x105, 0x206, 0x107, 0x208, 0x109};
    for (int k = 0; k < 4; k++) {
        uintptr_t id = 10000 + 1000 * (uintptr_t)k, prev = id, in[2], out[1];
        in[0] = prev, out[0] = ++id;
        kf_chain_observe(c, r, norm[0], KF_CHAIN_SERVABLE | KF_CHAIN_FRESH(0), in, 1, out, 1);
        for (int half = 0; half < 2; half++) {
            for (int m = half ? 0 : 1; m < 9; m++) { /* each member reads the one before */
                in[0] = id, in[1] = 77, out[0] = id + 1;
                kf_chain_observe(c, r, norm[m], KF_CHAIN_SERVABLE, in, (int)(norm[m] >> 8), out, 1);
                id++;
            }
            if (!half) { /* the residual add */
                in[0] = id, in[1] = prev, out[0] = id + 1;
                kf_chain_observe(c, r, 0x20a, KF_CHAIN_SERVABLE, in, 2, out, 1);
                id++;
            }
        }
        uintptr_t lin = id, lo = id + 1;
        kf_chain_observe(c, r, 0x1ff, 0, &lin, 1, &lo, 1);
    }
    cJSON *doc = listing(c, 1), *chains = cJSON_GetObjectItem(doc, "chains");
    int n = cJSON_GetArraySize(chains), sizes = 0;
    CHECK_EQ_INT(n, 2);
    for (int i = 0; i < n; i++) {
        cJSON *ch = cJSON_GetArrayItem(chains, i), *members = cJSON_GetObjectItem(ch, "members");
        CHECK_EQ_INT(cJSON_GetObjectItem(ch, "calls")->valueint, 4);
        CHECK(!strcmp(cJSON_GetObjectItem(cJSON_GetArrayItem(members, 0), "key")->valuestring, "0000000000000101"));
        sizes += cJSON_GetArraySize(members) * (cJSON_GetArraySize(members) == 10 ? 100 : 1);
    }
    CHECK_EQ_INT(sizes, 1009); /* the norm and the residual add (10), the next norm (9) */
    cJSON_Delete(doc);
    kf_chain_rec_free(r);
    kf_chains_free(c);
}

/* GPT-2's tanh GELU, `0.5 * x * (1 + tanh(c * (x + 0.044715 * x ** 3)))`: `x ** 3` reads only
 * the head's input, not its output, and joins the run (a call reading neither starts the next
 * one); the last multiply then reads member 0's output, and the whole is one chain of 8. */
static void test_head_input_links(void)
{
    kf_chains *c;
    CHECK_EQ_INT(kf_chains_create(&c, 64), KF_OK);
    kf_chain_rec *r = kf_chain_rec_create();
    for (int k = 0; k < 4; k++) {
        uintptr_t x = 100 + 20 * (uintptr_t)k, o = x + 1;
        call(c, r, 0x101, x, 0, o);          /* half = x * 0.5 */
        call(c, r, 0x102, x, 0, o + 1);      /* p = x ** 3 */
        call(c, r, 0x103, o + 1, 0, o + 2);  /* p * 0.044715 */
        call(c, r, 0x204, x, o + 2, o + 3);  /* x + that */
        call(c, r, 0x105, o + 3, 0, o + 4);  /* * sqrt(2 / pi) */
        call(c, r, 0x106, o + 4, 0, o + 5);  /* tanh */
        call(c, r, 0x107, o + 5, 0, o + 6);  /* 1 + that */
        call(c, r, 0x208, o, o + 6, o + 7);  /* half * that */
        call(c, r, 0x109, 999 + (uintptr_t)k, 0, 1999 + (uintptr_t)k); /* unlinked: the next run */
    }
    /* a loop's steps on one input: each its own run (the signature is in the run already) */
    for (int k = 0; k < 4; k++) {
        call(c, r, 0x10a, 5000, 0, 5001 + 2 * (uintptr_t)k);
        call(c, r, 0x10b, 5001 + 2 * (uintptr_t)k, 0, 5002 + 2 * (uintptr_t)k);
    }
    kf_chain_flush(c, r);
    char *text = kf_chains_json_doc(c, 1, lookup, NULL);
    cJSON *doc = text ? cJSON_Parse(text) : NULL;
    free(text);
    cJSON *chains = cJSON_GetObjectItem(doc, "chains");
    CHECK_EQ_INT(cJSON_GetArraySize(chains), 2);
    const int gelu = cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetArrayItem(chains, 0), "members")) == 8 ? 0 : 1;
    cJSON *ch = cJSON_DetachItemFromArray(chains, gelu);
    cJSON *loop = cJSON_GetArrayItem(chains, 0);
    CHECK_EQ_INT(cJSON_GetObjectItem(loop, "calls")->valuedouble, 4);
    CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(loop, "members")), 2);
    cJSON_Delete(doc);
    cJSON *spec = cJSON_GetObjectItem(ch, "spec");
    char buf[64];
    CHECK_EQ_INT(cJSON_GetObjectItem(ch, "calls")->valuedouble, 4);
    if (CHECK(cJSON_IsObject(spec))) {
        CHECK_EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItem(spec, "members")), 8);
        CHECK_EQ_INT(cJSON_GetObjectItem(spec, "n_ext")->valueint, 0);
        CHECK(!strcmp(ref_text(spec, 1, 0, buf), "[\"head\",0]"));
        CHECK(!strcmp(ref_text(spec, 3, 0, buf), "[\"head\",0]"));
        CHECK(!strcmp(ref_text(spec, 7, 0, buf), "[\"member\",0,0]"));
        CHECK(!strcmp(ref_text(spec, 7, 1, buf), "[\"member\",6,0]"));
    }
    cJSON_Delete(ch);
    kf_chain_rec_free(r);
    kf_chains_free(c);
}

int main(void)
{
    test_recurring_chain();
    test_runs_end();
    test_full_table_drops();
    test_spec();
    test_side_calls();
    test_views_of_a_member_output();
    test_full_run_cut_at_a_repeated_head();
    test_head_input_links();
    return check_done("chains");
}
