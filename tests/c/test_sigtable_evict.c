/* The signature table stays bounded: far more distinct signatures than slots never fill it, the
 * cost per lookup stays flat, hot, pinned, kernel-holding and capture-requested slots survive
 * the churn, recycled slots change generation, their counters land in the evicted totals, and
 * concurrent readers never see a pinned slot change signature under them. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/c/check.h"
#include "common/signature.h"
#include "plugin/sigtable.h"

typedef struct key {
    uint8_t bytes[40];
    uint32_t len;
    uint64_t hash;
} key;

/* Distinct keys built like real signatures (an op name, then an int). */
static void make_key(key *k, const char *op, int64_t v)
{
    kf_sig *s = malloc(sizeof *s);
    if (!s) abort();
    kf_sig_begin(s, op);
    kf_sig_int(s, v);
    memcpy(k->bytes, s->buf, s->len);
    k->len = s->len;
    k->hash = kf_sig_hash(s->buf, s->len);
    free(s);
}

static kf_slot *get(kf_sigtable *t, const key *k)
{
    return kf_sigtable_get(t, k->hash, k->bytes, k->len, 0, KF_DEV_CPU, 0);
}

static int holds(kf_slot *s, const key *k)
{
    return atomic_load(&s->hash) == k->hash && s->len == k->len && s->key &&
           memcmp(s->key, k->bytes, k->len) == 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct totals {
    uint64_t rows, calls;
} totals;

static void count(kf_slot *s, void *user)
{
    totals *t = user;
    t->rows++;
    t->calls += atomic_load(&s->calls);
}

/* 120,000 distinct signatures through 1,024 slots, with one hot signature among them. */
#define N_CHURN 120000
#define WINDOW 10000

static void test_churn_never_fills(void)
{
    kf_sigtable *t;
    if (!CHECK_EQ_INT(kf_sigtable_create(&t, 10), KF_OK)) return;
    CHECK_EQ_INT(kf_sigtable_capacity(t), 1024);
    key hot;
    make_key(&hot, "aten::_softmax", -1);
    kf_slot *hot_slot = NULL;
    int nulls = 0, moved = 0;
    uint64_t hot_calls = 0;
    static key keys[N_CHURN];
    for (int i = 0; i < N_CHURN; i++) make_key(&keys[i], "aten::add.Tensor", i);
    double t_first = 0, t_last = 0, t0 = now_s();
    for (int i = 0; i < N_CHURN; i++) {
        if (i == WINDOW) t_first = now_s() - t0;
        if (i == N_CHURN - WINDOW) t0 = now_s();
        kf_slot *s = get(t, &keys[i]);
        nulls += s == NULL;
        if (s) {
            atomic_fetch_add(&s->calls, 1);
            kf_slot_unpin(s);
        }
        if (i % 50 == 0) { /* hot: called every 50 new signatures */
            kf_slot *h = get(t, &hot);
            if (!h) {
                nulls++;
                continue;
            }
            if (!hot_slot) hot_slot = h;
            moved += h != hot_slot || !holds(h, &hot);
            atomic_fetch_add(&h->calls, 1);
            hot_calls++;
            kf_slot_unpin(h);
        }
    }
    t_last = now_s() - t0;
    CHECK_EQ_INT(nulls, 0); /* nothing pinned: every insert finds a slot */
    CHECK_EQ_INT(moved, 0); /* the hot signature kept its slot (second chance every time) */
    if (hot_slot) CHECK_EQ_U64(atomic_load(&hot_slot->calls), hot_calls);
    /* the cost per insert stays flat: the last 10,000 (table long full) vs the first 10,000 */
    printf("     first %d inserts %.2f ms, last %d %.2f ms\n", WINDOW, t_first * 1e3, WINDOW,
           t_last * 1e3);
    CHECK(t_last < 4 * t_first + 0.005);

    totals live = {0, 0};
    kf_sigtable_each(t, count, &live);
    kf_evicted host, dev;
    kf_sigtable_evicted(t, &host, &dev);
    CHECK(live.rows <= 1024);
    CHECK(live.rows > 900); /* slots are reused, not lost */
    /* every signature is either live or in the evicted totals, and so is every call */
    CHECK_EQ_U64(live.rows + host.rows, N_CHURN + 1);
    CHECK_EQ_U64(live.calls + host.calls, N_CHURN + hot_calls);
    CHECK_EQ_U64(dev.rows, 0);
    kf_sigtable_reset_evicted(t);
    kf_sigtable_evicted(t, &host, NULL);
    CHECK_EQ_U64(host.rows, 0);
    CHECK_EQ_U64(host.calls, 0);
    kf_sigtable_free(t);
}

/* One set of 16 slots: what must never be recycled is not, and a set with nothing to recycle
 * drops the insert (NULL) without touching anything. */
static void test_survivors(void)
{
    kf_sigtable *t;
    if (!CHECK_EQ_INT(kf_sigtable_create(&t, 4), KF_OK)) return;
    key pinned, with_kernel, wanted;
    make_key(&pinned, "aten::gelu", 1);
    make_key(&with_kernel, "aten::gelu", 2);
    make_key(&wanted, "aten::gelu", 3);
    kf_slot *sp = get(t, &pinned); /* held for the whole test */
    kf_slot *sk = get(t, &with_kernel);
    kf_slot *sw = get(t, &wanted);
    if (!CHECK(sp && sk && sw)) return;
    uint32_t gen_p = kf_slot_gen(sp);
    static kf_kernel dummy; /* never called: only its presence matters */
    atomic_store(&sk->kernel, &dummy);
    atomic_store(&sw->capture_want, 2);
    kf_slot_unpin(sk);
    kf_slot_unpin(sw);
    int nulls = 0;
    for (int i = 0; i < 2000; i++) {
        key k;
        make_key(&k, "aten::silu", i);
        kf_slot *s = get(t, &k);
        nulls += s == NULL;
        CHECK(s != sp && s != sk && s != sw);
        kf_slot_unpin(s);
    }
    CHECK_EQ_INT(nulls, 0);
    CHECK(holds(sp, &pinned) && holds(sk, &with_kernel) && holds(sw, &wanted));
    CHECK_EQ_U64(kf_slot_gen(sp), gen_p);
    CHECK(get(t, &pinned) == sp); /* found again: and now pinned twice */
    kf_slot_unpin(sp);
    kf_slot *f = kf_sigtable_find_hash(t, with_kernel.hash);
    CHECK(f == sk);
    kf_slot_unpin(f);

    /* pin every slot: a new signature gets none, and nothing is recycled */
    kf_slot *held[KF_SIGTABLE_WAYS];
    int n_held = 0;
    for (int i = 0; i < 5000 && n_held < KF_SIGTABLE_WAYS - 3; i++) {
        key k;
        make_key(&k, "aten::mul.Tensor", i);
        kf_slot *s = get(t, &k);
        if (s) held[n_held++] = s;
    }
    CHECK_EQ_INT(n_held, KF_SIGTABLE_WAYS - 3);
    kf_evicted before, after;
    kf_sigtable_evicted(t, &before, NULL);
    key extra;
    make_key(&extra, "aten::relu", 77);
    CHECK(get(t, &extra) == NULL);
    kf_sigtable_evicted(t, &after, NULL);
    CHECK_EQ_U64(after.rows, before.rows);
    for (int i = 0; i < n_held; i++) kf_slot_unpin(held[i]);
    /* once unpinned they are cold (never called): the next new signature gets one of them */
    kf_slot *s = get(t, &extra);
    CHECK(s != NULL);
    kf_slot_unpin(s);
    kf_slot_unpin(sp);
    kf_sigtable_free(t);
}

/* A recycled slot changes generation; a late pin for the old generation is refused. */
static void test_generation(void)
{
    kf_sigtable *t;
    if (!CHECK_EQ_INT(kf_sigtable_create(&t, 4), KF_OK)) return;
    key x;
    make_key(&x, "aten::_softmax", 5);
    kf_slot *s = get(t, &x);
    if (!CHECK(s != NULL)) return;
    uint32_t gen = kf_slot_gen(s);
    CHECK_EQ_INT(kf_slot_pin_gen(s, gen), 1);
    kf_slot_unpin(s);
    atomic_fetch_add(&s->calls, 3);
    kf_slot_unpin(s);
    for (int i = 0; i < 200 && holds(s, &x); i++) {
        key k;
        make_key(&k, "aten::silu", i);
        kf_slot_unpin(get(t, &k));
    }
    CHECK(!holds(s, &x)); /* cold: recycled */
    CHECK(kf_slot_gen(s) != gen);
    CHECK_EQ_INT(kf_slot_pin_gen(s, gen), 0);
    CHECK_EQ_INT(kf_slot_pin_gen(s, kf_slot_gen(s)), 1);
    kf_slot_unpin(s);
    CHECK(kf_sigtable_find_hash(t, x.hash) == NULL);
    kf_evicted host;
    kf_sigtable_evicted(t, &host, NULL);
    CHECK(host.rows >= 1);
    CHECK(host.calls >= 3 && host.fallback >= 3);
    kf_sigtable_free(t);
}

/* Device (CUDA) rows are totalled apart from host rows: their times are not comparable. */
static void test_evicted_by_device(void)
{
    kf_sigtable *t;
    if (!CHECK_EQ_INT(kf_sigtable_create(&t, 4), KF_OK)) return;
    uint64_t calls[2] = {0, 0};
    for (int i = 0; i < 400; i++) {
        key k;
        make_key(&k, "aten::add.Tensor", i);
        int cuda = i % 3 == 0;
        int dev = cuda ? KF_DEV_CUDA : KF_DEV_CPU;
        kf_slot *s = kf_sigtable_get(t, k.hash, k.bytes, k.len, 0, dev, 0);
        if (!CHECK(s != NULL)) continue;
        atomic_fetch_add(&s->calls, (uint64_t)i + 1);
        atomic_fetch_add(&s->fb_timed, 1);
        atomic_fetch_add(&s->fb_time_ns, 1000);
        calls[cuda] += (uint64_t)i + 1;
        kf_slot_unpin(s);
    }
    kf_evicted ev[2];
    kf_sigtable_evicted(t, &ev[0], &ev[1]);
    CHECK(ev[0].rows > 0 && ev[1].rows > 0);
    CHECK_EQ_U64(ev[0].rows + ev[1].rows, 400 - KF_SIGTABLE_WAYS);
    CHECK(ev[0].calls < calls[0] && ev[1].calls < calls[1]);
    CHECK(ev[0].time_ns > 0 && ev[1].time_ns > 0);
    /* each evicted row: 1 us per call times its calls */
    CHECK(ev[0].time_ns == (double)ev[0].fallback * 1000);
    CHECK(ev[1].time_ns == (double)ev[1].fallback * 1000);
    kf_sigtable_free(t);
}

/* ---- concurrency: readers hold pins while other threads churn the same small table ---- */

#define N_THREADS 6
#define N_OPS 150000
#define N_POOL 400

typedef struct churn {
    kf_sigtable *t;
    key pool[N_POOL];
    _Atomic int go;
    _Atomic long changed; /* a pinned slot that stopped holding its key: must stay 0 */
    _Atomic long got, dropped;
} churn;

typedef struct churn_arg {
    churn *c;
    int id;
} churn_arg;

static void *churn_worker(void *p)
{
    churn_arg *a = p;
    churn *c = a->c;
    while (!atomic_load(&c->go)) sched_yield();
    uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(a->id + 1);
    for (int i = 0; i < N_OPS; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        const key *k = &c->pool[x % N_POOL];
        kf_slot *s = get(c->t, k);
        if (!s) {
            atomic_fetch_add(&c->dropped, 1);
            continue;
        }
        atomic_fetch_add(&c->got, 1);
        if (!holds(s, k)) atomic_fetch_add(&c->changed, 1);
        atomic_fetch_add(&s->calls, 1);
        for (volatile int spin = 0; spin < (int)(x % 64); spin++) {
        }
        if (!holds(s, k)) atomic_fetch_add(&c->changed, 1); /* still ours while pinned */
        kf_slot_unpin(s);
    }
    return NULL;
}

typedef struct dup_ctx {
    kf_slot *seen[64];
    int n, dup;
} dup_ctx;

static void find_dups(kf_slot *s, void *user)
{
    dup_ctx *d = user;
    for (int i = 0; i < d->n; i++)
        if (d->seen[i]->len == s->len && memcmp(d->seen[i]->key, s->key, s->len) == 0) d->dup++;
    if (d->n < 64) d->seen[d->n++] = s;
}

static void test_concurrent_churn(void)
{
    static churn c;
    memset(&c, 0, sizeof c);
    if (!CHECK_EQ_INT(kf_sigtable_create(&c.t, 6), KF_OK)) return; /* 64 slots, 400 keys */
    for (int i = 0; i < N_POOL; i++) make_key(&c.pool[i], "aten::native_layer_norm", i);
    pthread_t th[N_THREADS];
    churn_arg args[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        args[i].c = &c;
        args[i].id = i;
        CHECK_EQ_INT(pthread_create(&th[i], NULL, churn_worker, &args[i]), 0);
    }
    atomic_store(&c.go, 1);
    for (int i = 0; i < N_THREADS; i++) pthread_join(th[i], NULL);
    CHECK_EQ_INT(atomic_load(&c.changed), 0);
    CHECK_EQ_INT(atomic_load(&c.got) + atomic_load(&c.dropped), (long)N_THREADS * N_OPS);
    CHECK(atomic_load(&c.got) > (long)N_THREADS * N_OPS / 2); /* drops are the exception */
    /* no signature ended up in two slots, and every call is accounted for */
    dup_ctx d = {{0}, 0, 0};
    kf_sigtable_each(c.t, find_dups, &d);
    CHECK_EQ_INT(d.dup, 0);
    totals live = {0, 0};
    kf_sigtable_each(c.t, count, &live);
    kf_evicted host;
    kf_sigtable_evicted(c.t, &host, NULL);
    CHECK_EQ_U64(live.calls + host.calls, (uint64_t)atomic_load(&c.got));
    /* nothing is left pinned */
    int pinned = 0;
    for (int i = 0; i < N_POOL; i++) {
        kf_slot *s = kf_sigtable_find_hash(c.t, c.pool[i].hash);
        if (s) {
            pinned += (int)((atomic_load(&s->ctl) & 0xffffffffu) != 1);
            kf_slot_unpin(s);
        }
    }
    CHECK_EQ_INT(pinned, 0);
    kf_sigtable_free(c.t);
}

int main(void)
{
    test_churn_never_fills();
    test_survivors();
    test_generation();
    test_evicted_by_device();
    test_concurrent_churn();
    return check_done("test_sigtable_evict");
}
