/* The lock-free signature table: insert/lookup, full tables, iteration, output layouts, and a
 * concurrent stress test. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    static kf_sig s;
    kf_sig_begin(&s, op);
    kf_sig_int(&s, v);
    memcpy(k->bytes, s.buf, s.len);
    k->len = s.len;
    k->hash = kf_sig_hash(s.buf, s.len);
}

static kf_slot *get(kf_sigtable *t, const key *k)
{
    return kf_sigtable_get(t, k->hash, k->bytes, k->len, 0, KF_DEV_CPU, 0);
}

static void test_create(void)
{
    kf_sigtable *t = (kf_sigtable *)1;
    CHECK_EQ_INT(kf_sigtable_create(&t, 3), KF_ERR_INVALID);
    CHECK(t == NULL);
    t = (kf_sigtable *)1;
    CHECK_EQ_INT(kf_sigtable_create(&t, 25), KF_ERR_INVALID);
    CHECK(t == NULL);
    CHECK_EQ_INT(kf_sigtable_create(&t, 4), KF_OK);
    CHECK(t != NULL);
    kf_sigtable_free(t);
    kf_sigtable_free(NULL); /* a no-op */
}

static void test_insert_lookup(void)
{
    kf_sigtable *t;
    if (!CHECK_EQ_INT(kf_sigtable_create(&t, 8), KF_OK)) return;
    key a, b;
    make_key(&a, "aten::relu", 1);
    make_key(&b, "aten::relu", 2);
    CHECK(a.hash != b.hash);

    kf_slot *sa = kf_sigtable_get(t, a.hash, a.bytes, a.len, KF_SIG_UNSERVABLE, KF_DEV_CUDA, 3);
    kf_slot *sb = get(t, &b);
    CHECK(sa != NULL && sb != NULL);
    CHECK(sa != sb);
    /* the same key finds the same slot, whatever flags/device a later caller passes */
    CHECK(get(t, &a) == sa);
    CHECK(kf_sigtable_get(t, a.hash, a.bytes, a.len, 0, KF_DEV_CPU, 0) == sa);
    CHECK(get(t, &b) == sb);
    /* the slot holds a copy of the key and what the first caller said about it */
    CHECK_EQ_INT(sa->len, a.len);
    CHECK(memcmp(sa->key, a.bytes, a.len) == 0);
    CHECK(sa->key != a.bytes);
    CHECK_EQ_U64(atomic_load(&sa->hash), a.hash);
    CHECK_EQ_INT(sa->flags, KF_SIG_UNSERVABLE);
    CHECK_EQ_INT(sa->device_type, KF_DEV_CUDA);
    CHECK_EQ_INT(sa->device_index, 3);
    CHECK_EQ_U64(atomic_load(&sa->calls), 0);
    CHECK(atomic_load(&sa->kernel) == NULL);
    CHECK(atomic_load(&sa->outs) == NULL);
    /* changing the caller's buffer afterwards does not change the slot */
    key a2 = a;
    a.bytes[a.len - 1] ^= 0x5a;
    CHECK(memcmp(sa->key, a2.bytes, a2.len) == 0);
    CHECK(get(t, &a2) == sa);

    /* find_hash */
    CHECK(kf_sigtable_find_hash(t, a2.hash) == sa);
    CHECK(kf_sigtable_find_hash(t, b.hash) == sb);
    key c;
    make_key(&c, "aten::relu", 3);
    CHECK(kf_sigtable_find_hash(t, c.hash) == NULL);

    /* Two different keys with the same hash: two slots, each found by its bytes. */
    key d = b;
    d.bytes[d.len - 1] ^= 1; /* different bytes, hash forced equal to b's */
    d.hash = b.hash;
    kf_slot *sd = get(t, &d);
    CHECK(sd != NULL && sd != sb);
    CHECK(get(t, &d) == sd);
    CHECK(get(t, &b) == sb);
    CHECK(kf_sigtable_find_hash(t, b.hash) == sb); /* the first one inserted */
    /* Same bytes, different length: different keys. */
    key e = b;
    e.len = b.len - 1;
    kf_slot *se = get(t, &e);
    CHECK(se != NULL && se != sb && se != sd);
    CHECK_EQ_INT(se->len, b.len - 1);

    /* A key of length 0 is a key like any other. */
    kf_slot *z = kf_sigtable_get(t, 12345, (const uint8_t *)"", 0, 0, KF_DEV_CPU, 0);
    CHECK(z != NULL);
    CHECK(kf_sigtable_get(t, 12345, (const uint8_t *)"", 0, 0, KF_DEV_CPU, 0) == z);
    kf_sigtable_free(t);
}

static void test_full(void)
{
    kf_sigtable *t;
    if (!CHECK_EQ_INT(kf_sigtable_create(&t, 4), KF_OK)) return;
    key keys[17];
    kf_slot *slots[16];
    for (int i = 0; i < 17; i++) make_key(&keys[i], "aten::add.Tensor", i * 7919);
    for (int i = 0; i < 16; i++) {
        slots[i] = get(t, &keys[i]);
        CHECK(slots[i] != NULL);
        for (int j = 0; j < i; j++) CHECK(slots[i] != slots[j]);
    }
    CHECK(get(t, &keys[16]) == NULL);
    CHECK(kf_sigtable_find_hash(t, keys[16].hash) == NULL);
    for (int i = 0; i < 16; i++) {
        CHECK(get(t, &keys[i]) == slots[i]);
        CHECK(kf_sigtable_find_hash(t, keys[i].hash) == slots[i]);
    }
    CHECK(get(t, &keys[16]) == NULL); /* still full */
    kf_sigtable_free(t);
}

typedef struct visit_ctx {
    kf_slot *seen[64];
    int n;
    int dup;
} visit_ctx;

static void visit(kf_slot *s, void *user)
{
    visit_ctx *v = user;
    for (int i = 0; i < v->n; i++)
        if (v->seen[i] == s) v->dup++;
    if (v->n < 64) v->seen[v->n] = s;
    v->n++;
}

static void test_each(void)
{
    kf_sigtable *t;
    if (!CHECK_EQ_INT(kf_sigtable_create(&t, 6), KF_OK)) return;
    visit_ctx v = {0};
    kf_sigtable_each(t, visit, &v);
    CHECK_EQ_INT(v.n, 0);

    key keys[40];
    kf_slot *slots[40];
    for (int i = 0; i < 40; i++) {
        make_key(&keys[i], "aten::mul.Tensor", i);
        slots[i] = get(t, &keys[i]);
        get(t, &keys[i]); /* a second lookup must not add a slot */
    }
    memset(&v, 0, sizeof v);
    kf_sigtable_each(t, visit, &v);
    CHECK_EQ_INT(v.n, 40);
    CHECK_EQ_INT(v.dup, 0);
    for (int i = 0; i < 40; i++) {
        int found = 0;
        for (int j = 0; j < v.n && j < 64; j++) found += v.seen[j] == slots[i];
        CHECK_EQ_INT(found, 1);
    }
    kf_sigtable_free(t);
}

static void test_outs(void)
{
    kf_sigtable *t;
    if (!CHECK_EQ_INT(kf_sigtable_create(&t, 4), KF_OK)) return;
    key k;
    make_key(&k, "aten::gelu", 0);
    kf_slot *s = get(t, &k);
    if (!CHECK(s != NULL)) return;

    kf_out_layout l1;
    memset(&l1, 0, sizeof l1);
    l1.n = 1;
    l1.o[0].alias_arg = -1;
    l1.o[0].dtype = KF_F32;
    l1.o[0].ndim = 2;
    l1.o[0].sizes[0] = 4;
    l1.o[0].sizes[1] = 8;
    l1.o[0].strides[0] = 8;
    l1.o[0].strides[1] = 1;
    kf_slot_set_outs(s, &l1);
    const kf_out_layout *o = atomic_load(&s->outs);
    CHECK(o != NULL && o != &l1);
    CHECK(o && memcmp(o, &l1, sizeof l1) == 0);

    kf_out_layout l2 = l1;
    l2.n = 2;
    l2.o[0].dtype = KF_F16;
    l2.o[1].alias_arg = 0;
    kf_slot_set_outs(s, &l2);
    CHECK(atomic_load(&s->outs) == o); /* the first layout stays */
    CHECK(o && o->n == 1 && o->o[0].dtype == KF_F32 && o->o[0].sizes[1] == 8);
    /* the copy is independent of the caller's struct */
    l1.n = 3;
    CHECK(o && o->n == 1);
    kf_sigtable_free(t); /* frees the layout (ASan: no leak) */
}

/* ---- concurrency ---- */

#define N_THREADS 8
#define N_CALLS 200000
#define N_KEYS 64

typedef struct stress {
    kf_sigtable *t;
    key keys[N_KEYS];
    _Atomic int go;
    _Atomic int null_slots;
    _Atomic int bad_slots;
    kf_slot *first[N_THREADS][N_KEYS]; /* the slot each thread saw for each key */
} stress;

typedef struct worker_arg {
    stress *st;
    int id;
} worker_arg;

static void *stress_worker(void *p)
{
    worker_arg *a = p;
    stress *st = a->st;
    /* each thread has its own copy of the key bytes: equality must be by content */
    key local[N_KEYS];
    memcpy(local, st->keys, sizeof local);
    while (!atomic_load(&st->go)) sched_yield();
    uint64_t x = 0x2545F4914F6CDD1Dull * (uint64_t)(a->id + 1);
    for (int i = 0; i < N_CALLS; i++) {
        /* first a pass over all keys in a thread-specific order (so inserts race), then random */
        int k;
        if (i < N_KEYS) {
            k = (i * 37 + a->id * 11) % N_KEYS;
        } else {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            k = (int)(x % N_KEYS);
        }
        kf_slot *s = kf_sigtable_get(st->t, local[k].hash, local[k].bytes, local[k].len, 0,
                                     KF_DEV_CPU, 0);
        if (!s) {
            atomic_fetch_add(&st->null_slots, 1);
            continue;
        }
        if (!st->first[a->id][k])
            st->first[a->id][k] = s;
        else if (st->first[a->id][k] != s)
            atomic_fetch_add(&st->bad_slots, 1);
        atomic_fetch_add(&s->calls, 1);
    }
    return NULL;
}

static void count_slot(kf_slot *s, void *user)
{
    uint64_t *acc = user;
    acc[0]++;
    acc[1] += atomic_load(&s->calls);
}

static void test_stress(void)
{
    static stress st;
    memset(&st, 0, sizeof st);
    if (!CHECK_EQ_INT(kf_sigtable_create(&st.t, 8), KF_OK)) return; /* 256 slots, 25% full */
    for (int i = 0; i < N_KEYS; i++) make_key(&st.keys[i], "aten::native_layer_norm", i);

    pthread_t th[N_THREADS];
    worker_arg args[N_THREADS];
    for (int i = 0; i < N_THREADS; i++) {
        args[i].st = &st;
        args[i].id = i;
        CHECK_EQ_INT(pthread_create(&th[i], NULL, stress_worker, &args[i]), 0);
    }
    atomic_store(&st.go, 1);
    for (int i = 0; i < N_THREADS; i++) pthread_join(th[i], NULL);

    CHECK_EQ_INT(atomic_load(&st.null_slots), 0);
    CHECK_EQ_INT(atomic_load(&st.bad_slots), 0);
    /* every thread saw the same slot for each key */
    int disagree = 0;
    for (int k = 0; k < N_KEYS; k++)
        for (int i = 1; i < N_THREADS; i++) disagree += st.first[i][k] != st.first[0][k];
    CHECK_EQ_INT(disagree, 0);

    uint64_t acc[2] = {0, 0};
    kf_sigtable_each(st.t, count_slot, acc);
    CHECK_EQ_U64(acc[0], N_KEYS); /* exactly one slot per key */
    CHECK_EQ_U64(acc[1], (uint64_t)N_THREADS * N_CALLS);

    /* each key's count is exact: replay every thread's sequence of keys */
    uint64_t expect[N_KEYS] = {0};
    for (int id = 0; id < N_THREADS; id++) {
        uint64_t x = 0x2545F4914F6CDD1Dull * (uint64_t)(id + 1);
        for (int i = 0; i < N_CALLS; i++) {
            int k;
            if (i < N_KEYS) {
                k = (i * 37 + id * 11) % N_KEYS;
            } else {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                k = (int)(x % N_KEYS);
            }
            expect[k]++;
        }
    }
    int wrong = 0;
    for (int k = 0; k < N_KEYS; k++) {
        kf_slot *s = get(st.t, &st.keys[k]);
        if (!s || atomic_load(&s->calls) != expect[k]) {
            wrong++;
            printf("     key %d: %llu calls, expected %llu\n", k,
                   s ? (unsigned long long)atomic_load(&s->calls) : 0ull,
                   (unsigned long long)expect[k]);
        }
        if (s && s != st.first[0][k]) wrong++;
        if (s && (s->len != st.keys[k].len || memcmp(s->key, st.keys[k].bytes, s->len))) wrong++;
    }
    CHECK_EQ_INT(wrong, 0);
    kf_sigtable_free(st.t);
}

/* Many threads inserting many distinct keys at once into the same sets of a table (not so full
 * that a set overflows: these slots stay pinned, nothing can be recycled). */
typedef struct fill_arg {
    kf_sigtable *t;
    int id;
    _Atomic int *go;
    kf_slot *got[240];
} fill_arg;

static void key_local(key *k, int64_t v)
{
    kf_sig *s = malloc(sizeof *s);
    kf_sig_begin(s, "aten::silu");
    kf_sig_int(s, v);
    memcpy(k->bytes, s->buf, s->len);
    k->len = s->len;
    k->hash = kf_sig_hash(s->buf, s->len);
    free(s);
}

static void *fill_worker(void *p)
{
    fill_arg *a = p;
    while (!atomic_load(a->go)) sched_yield();
    for (int i = 0; i < 240; i++) {
        key k;
        key_local(&k, (i + a->id * 60) % 240); /* overlapping ranges */
        a->got[(i + a->id * 60) % 240] =
            kf_sigtable_get(a->t, k.hash, k.bytes, k.len, 0, KF_DEV_CPU, 0);
    }
    return NULL;
}

static void test_concurrent_fill(void)
{
    kf_sigtable *t;
    if (!CHECK_EQ_INT(kf_sigtable_create(&t, 10), KF_OK)) return; /* 1024 slots, 240 keys */
    _Atomic int go = 0;
    static fill_arg args[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        memset(&args[i], 0, sizeof args[i]);
        args[i].t = t;
        args[i].id = i;
        args[i].go = &go;
        pthread_create(&th[i], NULL, fill_worker, &args[i]);
    }
    atomic_store(&go, 1);
    for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
    int bad = 0;
    for (int k = 0; k < 240; k++) {
        if (!args[0].got[k]) bad++;
        for (int i = 1; i < 4; i++) bad += args[i].got[k] != args[0].got[k];
    }
    CHECK_EQ_INT(bad, 0);
    uint64_t acc[2] = {0, 0};
    kf_sigtable_each(t, count_slot, acc);
    CHECK_EQ_U64(acc[0], 240);
    kf_sigtable_free(t);
}

int main(void)
{
    test_create();
    test_insert_lookup();
    test_full();
    test_each();
    test_outs();
    test_stress();
    test_concurrent_fill();
    return check_done("test_sigtable");
}
