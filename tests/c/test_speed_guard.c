/* The speed guard as the dispatch path drives it: eager samples on a served signature (how often
 * a timed call runs eager instead of the kernel), the early and the marginal verdicts, a new
 * kernel judged on its own samples, and detaching a kernel once (launch failure). */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/c/check.h"
#include "plugin/config.h"
#include "plugin/plugin.h"
#include "common/signature.h"
#include "plugin/sigtable.h"
#include "tests/c/test_runtime_util.h"

static kf_runtime *new_runtime(const char *eager_every)
{
    return test_runtime(eager_every, "test_speed_guard");
}

static int ok_kernel(void *user, const kf_tensor *t, int n, void *stream)
{
    (void)user, (void)t, (void)n, (void)stream;
    return 0;
}

/* relu(f32[rows,16]) on the CPU, seen once by eager, outputs learned, a kernel registered. */
static kf_slot *served_slot(kf_runtime *rt, kf_sig *s, int64_t rows)
{
    kf_tensor t;
    memset(&t, 0, sizeof t);
    t.data = (void *)(uintptr_t)0x10000;
    t.dtype = KF_F32;
    t.ndim = 2;
    t.sizes[0] = rows;
    t.sizes[1] = 16;
    t.strides[0] = 16;
    t.strides[1] = 1;
    kf_sig_begin(s, "aten::relu");
    kf_sig_tensor(s, &t);
    kf_call c;
    kf_dispatch_begin(rt, s, &c);
    if (!CHECK(c.slot != NULL)) return NULL;
    c.time_it = 0; /* no sample: the tests give each side a fixed time */
    kf_out_layout l;
    memset(&l, 0, sizeof l);
    l.n = 1;
    l.o[0].alias_arg = -1;
    l.o[0].dtype = KF_F32;
    l.o[0].ndim = 2;
    l.o[0].sizes[0] = rows;
    l.o[0].sizes[1] = 16;
    l.o[0].strides[0] = 16;
    l.o[0].strides[1] = 1;
    kf_dispatch_learn_outputs(c.slot, &l);
    kf_dispatch_end(rt, &c, 0, NULL);
    CHECK_EQ_INT(kf_register_kernel(rt, kf_slot_key(c.slot), ok_kernel, NULL), KF_OK);
    kf_reset_stats(rt);
    return c.slot;
}

/* One call as torch_ext makes it, with a fixed time per side: served_ns when the kernel serves,
 * eager_ns otherwise. Returns 1 when it was served. */
static int call(kf_runtime *rt, const kf_sig *s, uint64_t served_ns, uint64_t eager_ns)
{
    kf_call c;
    kf_dispatch_begin(rt, s, &c);
    if (c.eager_sample) c.kernel = NULL; /* what torch_ext does on the CPU */
    const int served = c.kernel != NULL, timed = c.time_it;
    c.time_it = 0; /* dispatch_end only counts: the sample is added by hand, with a fixed time */
    kf_dispatch_end(rt, &c, served, NULL);
    if (timed) kf_slot_add_sample(c.slot, served, served ? served_ns : eager_ns);
    return served;
}

static void test_eager_samples_on_a_served_signature(void)
{
    kf_runtime *rt = new_runtime(NULL);
    static kf_sig s;
    kf_slot *slot = served_slot(rt, &s, 3);
    if (!slot) return;
    int served = 0, eager = 0;
    for (int i = 0; i < 1600; i++) call(rt, &s, 1000, 1000) ? served++ : eager++;
    /* the first 3 calls and one in 16 are timed: 103; one timed call in 4 runs eager */
    CHECK(eager >= 103 / 4 - 1 && eager <= 103 / 4 + 1);
    CHECK_EQ_INT(served + eager, 1600);
    CHECK(atomic_load(&slot->kernel) != NULL); /* as fast as eager: kept */
    /* the first eager sample comes early: the second timed call */
    kf_reset_stats(rt);
    kf_call c;
    kf_dispatch_begin(rt, &s, &c);
    CHECK(c.time_it && !c.eager_sample);
    c.time_it = 0;
    kf_dispatch_end(rt, &c, 1, NULL);
    kf_slot_add_sample(c.slot, 1, 1000);
    kf_dispatch_begin(rt, &s, &c);
    CHECK(c.time_it && c.eager_sample);
    kf_dispatch_cancel(rt, &c);
    kf_runtime_free(rt);

    /* 0: never */
    rt = new_runtime("0");
    slot = served_slot(rt, &s, 3);
    eager = 0;
    for (int i = 0; slot && i < 1600; i++) eager += !call(rt, &s, 1000, 1000);
    CHECK_EQ_INT(eager, 0);
    kf_runtime_free(rt);
}

static void test_verdicts(void)
{
    kf_runtime *rt = new_runtime(NULL);
    static kf_sig far, marginal, close;
    kf_slot *a = served_slot(rt, &far, 5), *b = served_slot(rt, &marginal, 6),
            *c = served_slot(rt, &close, 7);
    if (!a || !b || !c) return;
    /* 10x slower: stopped after KF_SPEED_EARLY_SAMPLES served samples, ~50 calls */
    int served = 0;
    for (int i = 0; i < 1000; i++) served += call(rt, &far, 10000, 1000);
    CHECK(atomic_load(&a->kernel) == NULL);
    CHECK_EQ_INT(atomic_load(&a->stopped), KF_STOP_SLOWER);
    CHECK(atomic_load(&a->served_slower));
    CHECK(served >= KF_SPEED_EARLY_SAMPLES && served <= 64);
    /* 1.5x slower: not on the early verdict, stopped once there are KF_SPEED_MIN_SAMPLES */
    served = 0;
    for (int i = 0; i < 1000; i++) served += call(rt, &marginal, 1500, 1000);
    CHECK(atomic_load(&b->kernel) == NULL);
    CHECK(served > 64 && served <= 320);
    /* within 5%: kept */
    for (int i = 0; i < 3000; i++) call(rt, &close, 1040, 1000);
    CHECK(atomic_load(&c->kernel) != NULL);
    CHECK_EQ_INT(atomic_load(&c->stopped), KF_STOP_NONE);

    /* a new kernel on the stopped signature is judged on its own samples, not the old ones */
    CHECK_EQ_INT(kf_register_kernel(rt, kf_slot_key(a), ok_kernel, NULL), KF_OK);
    CHECK_EQ_INT(atomic_load(&a->stopped), KF_STOP_NONE);
    for (int i = 0; i < 1000; i++) call(rt, &far, 900, 1000);
    CHECK(atomic_load(&a->kernel) != NULL);
    kf_runtime_free(rt);
}

static void test_launch_failure_detaches_once(void)
{
    kf_runtime *rt = new_runtime(NULL);
    static kf_sig s;
    kf_slot *slot = served_slot(rt, &s, 9);
    if (!slot) return;
    kf_call c1, c2;
    kf_dispatch_begin(rt, &s, &c1);
    kf_dispatch_begin(rt, &s, &c2); /* two calls hold the kernel when both fail */
    CHECK(c1.kernel != NULL && c1.kernel == c2.kernel);
    CHECK_EQ_INT(kf_dispatch_launch_failed(rt, &c1), 1); /* this one warns */
    CHECK_EQ_INT(kf_dispatch_launch_failed(rt, &c2), 0);
    CHECK(atomic_load(&slot->kernel) == NULL);
    CHECK_EQ_INT(atomic_load(&slot->stopped), KF_STOP_LAUNCH_FAILED);
    kf_dispatch_begin(rt, &s, &c1);
    CHECK(c1.kernel == NULL);
    kf_runtime_free(rt);
}

int main(void)
{
    test_eager_samples_on_a_served_signature();
    test_verdicts();
    test_launch_failure_detaches_once();
    return check_done("test_speed_guard");
}
