/* The chain speed guard (plugin/chainserve.h, docs/chains.md): which heads are timed, when a head
 * runs its members eager for want of their eager samples, and the verdict of the kernel's time
 * against the sum of its members' fastest calls, each eager or by its own kernel (the per-op
 * guard's rule). */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/hex.h"
#include "common/signature.h"
#include "plugin/chainserve.h"
#include "plugin/config.h"
#include "plugin/plugin.h"
#include "tests/c/test_runtime_util.h"

static void sig_of(kf_sig *s, const char *op, int cols)
{
    kf_sig_begin(s, op);
    kf_tensor t = {.dtype = KF_F32, .ndim = 2, .sizes = {4, cols}, .strides = {cols, 1}};
    kf_sig_tensor(s, &t);
}

static char *hex_of(const kf_sig *s)
{
    char *hex = malloc(2 * (size_t)s->len + 1);
    kf_hex_encode(s->buf, s->len, hex);
    return hex;
}

/* exp -> neg on f32[4, cols], enabled (as if its first-use check passed). */
static kf_chain_entry *add_chain(kf_runtime *rt, int cols)
{
    kf_sig a, b;
    sig_of(&a, "aten::exp", cols);
    sig_of(&b, "aten::neg", cols);
    char *h0 = hex_of(&a), *h1 = hex_of(&b);
    char spec[2048], outs[512], err[256];
    snprintf(spec, sizeof spec,
             "{\"version\":1,\"n_head_inputs\":1,\"n_ext\":0,\"members\":["
             "{\"op\":\"aten::exp\",\"sig_hex\":\"%s\",\"inputs\":[[\"head\",0]]},"
             "{\"op\":\"aten::neg\",\"sig_hex\":\"%s\",\"inputs\":[[\"member\",0,0]]}]}",
             h0, h1);
    snprintf(outs, sizeof outs,
             "[{\"member\":0,\"alias_arg\":-1,\"dtype\":1,\"sizes\":[4,%d],\"strides\":[%d,1]},"
             "{\"member\":1,\"alias_arg\":-1,\"dtype\":1,\"sizes\":[4,%d],\"strides\":[%d,1]}]",
             cols, cols, cols, cols);
    free(h0);
    free(h1);
    if (!CHECK_EQ_INT(kf_chainserve_add(rt, spec, outs, NULL, 0, NULL, 1e-5, 1e-5, "", err, sizeof err), KF_OK))
        printf("  %s\n", err);
    kf_chain_entry *e = kf_chainserve_find(rt, kf_sig_hash(a.buf, a.len));
    if (e) kf_chain_entry_enable(e);
    return e;
}

/* One eager call of each member, sampled at `ns` (as a member run eager: observe, check). */
static void eager_members(kf_runtime *rt, int cols, uint64_t ns)
{
    const char *ops[] = {"aten::exp", "aten::neg"};
    for (int m = 0; m < 2; m++) {
        kf_sig s;
        sig_of(&s, ops[m], cols);
        kf_call c;
        kf_dispatch_begin(rt, &s, &c);
        if (!CHECK(c.slot != NULL)) continue;
        c.time_it = 0; /* the sample is added by hand, with a fixed time */
        kf_dispatch_end(rt, &c, 0, NULL);
        kf_slot_add_sample(c.slot, 0, ns);
        kf_dispatch_done(rt, &c);
    }
}

static kf_runtime *new_runtime(const char *eager_every)
{
    return test_runtime(eager_every, "chain_guard");
}

static int has(kf_runtime *rt, const char *what)
{
    char *json = kf_chain_entries_json(rt);
    const int found = json && strstr(json, what);
    if (!found) printf("  %s not in %s\n", what, json ? json : "(null)");
    free(json);
    return found;
}

static void test_the_shared_verdict(void)
{
    CHECK(!kf_speed_slower(KF_SPEED_EARLY_SAMPLES - 1, 100000, 1000)); /* too few samples */
    CHECK(kf_speed_slower(KF_SPEED_EARLY_SAMPLES, 2100, 1000));
    CHECK(!kf_speed_slower(KF_SPEED_EARLY_SAMPLES, 1900, 1000)); /* only far slower, early */
    CHECK(kf_speed_slower(KF_SPEED_MIN_SAMPLES, 1060, 1000));
    CHECK(!kf_speed_slower(KF_SPEED_MIN_SAMPLES, 1040, 1000));
    CHECK(!kf_speed_slower(KF_SPEED_MIN_SAMPLES, 5000, 0)); /* no eager sample: no verdict */
}

/* A head that would serve: timed on the entry's first 3 and every 16th; one timed head in
 * KFORGE_EAGER_SAMPLE_EVERY (4) runs the members instead, with or without their samples: eager,
 * or every other time (once each has an eager sample) each by its own kernel. */
static void test_plans(void)
{
    kf_runtime *rt = new_runtime(NULL);
    kf_chain_entry *e = add_chain(rt, 8);
    if (!e) return;
    int plans[64];
    for (int i = 0; i < 64; i++) {
        plans[i] = kf_chain_entry_plan(e, 0, NULL);
        if (plans[i] == KF_CHAIN_PLAN_TIMED) kf_chain_entry_add_sample(e, 500);
    }
    /* heads 1..3, 16, 32, 48, 64: timed unless an eager sample is due (no member has one) */
    CHECK_EQ_INT(plans[0], KF_CHAIN_PLAN_TIMED);  /* no kernel sample yet */
    CHECK_EQ_INT(plans[1], KF_CHAIN_PLAN_EAGER);  /* 0 eager heads for 1 kernel sample */
    CHECK_EQ_INT(plans[2], KF_CHAIN_PLAN_TIMED);
    CHECK_EQ_INT(plans[3], KF_CHAIN_PLAN_SERVE);
    CHECK_EQ_INT(plans[15], KF_CHAIN_PLAN_TIMED);
    CHECK_EQ_INT(plans[31], KF_CHAIN_PLAN_TIMED);
    CHECK_EQ_INT(plans[47], KF_CHAIN_PLAN_EAGER); /* 1 eager head, 4 kernel samples: 1 x 3 < 4 */
    CHECK_EQ_INT(plans[63], KF_CHAIN_PLAN_TIMED);
    int served = 0;
    for (int i = 0; i < 64; i++) served += plans[i] == KF_CHAIN_PLAN_SERVE;
    CHECK_EQ_INT(served, 64 - 7);
    CHECK(has(rt, "\"eager_us\":-1") && has(rt, "\"eager_heads\":2") && has(rt, "\"timed\":5"));
    /* once every member has its eager sample, timed heads go on running the members eager at
     * the same ratio (the first samples are cold ones), 1 in 4 of the timed heads */
    eager_members(rt, 8, 1000);
    int eager = 0, members = 0, timed = 0;
    for (int i = 65; i <= 256 * 16; i++) {
        const int p = kf_chain_entry_plan(e, 0, NULL);
        if (i % 16) CHECK_EQ_INT(p, KF_CHAIN_PLAN_SERVE);
        if (p == KF_CHAIN_PLAN_TIMED) kf_chain_entry_add_sample(e, 500), timed++;
        eager += p == KF_CHAIN_PLAN_EAGER;
        members += p == KF_CHAIN_PLAN_MEMBERS;
    }
    /* every other one by the members' own kernels (where they have them) */
    CHECK(eager + members + timed == 256 - 4 && eager + members >= 60 && eager + members <= 66);
    CHECK(eager - members >= -1 && eager - members <= 1);
    CHECK(has(rt, "\"eager_us\":2"));
    kf_runtime_free(rt);

    /* KFORGE_EAGER_SAMPLE_EVERY=0: never run eager for the guard */
    rt = new_runtime("0");
    e = add_chain(rt, 8);
    for (int i = 0; e && i < 256; i++) {
        const int p = kf_chain_entry_plan(e, 0, NULL);
        CHECK(p != KF_CHAIN_PLAN_EAGER);
        if (p == KF_CHAIN_PLAN_TIMED) kf_chain_entry_add_sample(e, 500);
    }
    kf_runtime_free(rt);
}

static void test_verdicts(void)
{
    kf_runtime *rt = new_runtime(NULL);
    kf_chain_entry *far = add_chain(rt, 8), *marginal = add_chain(rt, 16), *fast = add_chain(rt, 24),
                   *unknown = add_chain(rt, 32);
    if (!far || !marginal || !fast || !unknown) return;
    eager_members(rt, 8, 1000);
    eager_members(rt, 16, 1000);
    eager_members(rt, 24, 1000);
    /* eager: 2.0 us per chain. 5 us: detached at the early verdict, once */
    int detached = 0, n = 0;
    while (kf_chain_entry_state(far) == KF_CHAIN_SERVING && n < 100) detached += kf_chain_entry_add_sample(far, 5000), n++;
    CHECK_EQ_INT(n, KF_SPEED_EARLY_SAMPLES);
    CHECK_EQ_INT(detached, 1);
    CHECK_EQ_INT(kf_chain_entry_add_sample(far, 5000), 0);
    CHECK(has(rt, "\"stopped\":\"slower\"") && has(rt, "slower than its members: 5.0 us vs 2.0 us"));
    /* 2.2 us (10% slower): only once there are KF_SPEED_MIN_SAMPLES */
    n = 0;
    while (kf_chain_entry_state(marginal) == KF_CHAIN_SERVING && n < 100) kf_chain_entry_add_sample(marginal, 2200), n++;
    CHECK_EQ_INT(n, KF_SPEED_MIN_SAMPLES);
    /* faster, and one cold first sample: kept */
    kf_chain_entry_add_sample(fast, 50000);
    for (int i = 0; i < 200; i++) CHECK_EQ_INT(kf_chain_entry_add_sample(fast, 800), 0);
    CHECK_EQ_INT(kf_chain_entry_state(fast), KF_CHAIN_SERVING);
    /* no member was ever sampled eager: no verdict, however slow */
    for (int i = 0; i < 200; i++) kf_chain_entry_add_sample(unknown, 1000000);
    CHECK_EQ_INT(kf_chain_entry_state(unknown), KF_CHAIN_SERVING);
    /* the drop-rate guard says it is its own */
    kf_chain_entry *drops = add_chain(rt, 40);
    for (int i = 0; drops && i < KF_CHAIN_GUARD_HEADS; i++) {
        kf_chain_entry_count(drops, rt, KF_CHAIN_HEADS);
        kf_chain_entry_count(drops, rt, KF_CHAIN_DROPPED);
    }
    CHECK(has(rt, "\"stopped\":\"dropped\""));
    kf_runtime_free(rt);
}

static int noop_kernel(void *user, const kf_tensor *tensors, int n, void *stream)
{
    (void)user, (void)tensors, (void)n, (void)stream;
    return 0;
}

/* The verdict weighs the kernel against its members as this process runs them without it: exp
 * eager (10 us) and neg by its own kernel (2 us; eager 10 us), 12 us. A 15 us chain kernel, faster
 * than the members run eager (20 us), is detached; without neg's kernel it stays. */
static void test_members_by_their_kernels(void)
{
    for (int own = 0; own < 2; own++) {
        kf_runtime *rt = new_runtime(NULL);
        kf_chain_entry *e = add_chain(rt, 48);
        if (!e) return;
        eager_members(rt, 48, 10000);
        if (own) { /* neg's own kernel: eager's outputs learnt, registered, a served sample */
            kf_sig s;
            sig_of(&s, "aten::neg", 48);
            kf_call c;
            kf_dispatch_begin(rt, &s, &c);
            kf_dispatch_cancel(rt, &c);
            kf_out_layout l = {.n = 1, .o = {{.alias_arg = -1, .dtype = KF_F32, .ndim = 2,
                                              .sizes = {4, 48}, .strides = {48, 1}}}};
            if (CHECK(c.slot != NULL)) {
                kf_dispatch_learn_outputs(c.slot, &l);
                CHECK_EQ_INT(kf_register_kernel(rt, kf_slot_key(c.slot), noop_kernel, NULL), KF_OK);
                kf_slot_add_sample(c.slot, 1, 2000);
            }
            kf_dispatch_done(rt, &c);
        }
        int stopped = 0;
        for (int i = 0; i < KF_SPEED_MIN_SAMPLES; i++) stopped |= kf_chain_entry_add_sample(e, 15000);
        CHECK_EQ_INT(stopped, own);
        CHECK_EQ_INT(kf_chain_entry_state(e), own ? KF_CHAIN_REFUSED : KF_CHAIN_SERVING);
        CHECK(has(rt, "\"eager_us\":20,") && has(rt, own ? "\"members_us\":12," : "\"members_us\":20,"));
        if (own) CHECK(has(rt, "slower than its members: 15.0 us vs 12.0 us"));
        kf_runtime_free(rt);
    }
}

/* The host clock around a launch; a cancelled one (not launched) is no sample. */
static void test_host_timer(void)
{
    kf_runtime *rt = new_runtime(NULL);
    kf_chain_entry *e = add_chain(rt, 8);
    if (!e) return;
    kf_chain_timer t;
    kf_chain_time_start(e, 0, NULL, &t);
    kf_chain_time_end(e, 0, NULL, &t);
    kf_chain_time_end(e, 1, NULL, &t); /* a second end: nothing */
    CHECK(has(rt, "\"timed\":0") && has(rt, "\"kernel_us\":-1"));
    kf_chain_time_start(e, 0, NULL, &t);
    kf_chain_time_end(e, 1, NULL, &t);
    kf_chain_time_end(e, 1, NULL, &t);
    CHECK(has(rt, "\"timed\":1"));
    kf_runtime_free(rt);
}

int main(void)
{
    test_the_shared_verdict();
    test_plans();
    test_verdicts();
    test_members_by_their_kernels();
    test_host_timer();
    return check_done("chain_guard");
}
