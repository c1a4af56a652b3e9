/* Chain recording (chains.h). */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/chain_sig.h"
#include "common/hex.h"
#include "common/signature.h"
#include "plugin/chains.h"

/* src[0] of an input that is no member's output: one of the head's inputs (src[1] = which), or
 * an external tensor (src[1] = its number: a weight, the residual, anything made before). */
#define FROM_VIEW 0xfd /* a view of a head input: src[1] = the run's view number */
#define FROM_HEAD 0xfe
#define FROM_OUTSIDE 0xff
#define MAX_EXT (KF_CHAIN_MAX * KF_CHAIN_MAX_IO)
#define MAX_VIEW 8

/* One chain's identity: for member m, its key, whether it writes in place and, for each input,
 * the member and output it came from, or FROM_HEAD / FROM_OUTSIDE and a number. */
typedef struct chain_shape {
    int n;
    uint64_t key[KF_CHAIN_MAX];
    uint8_t n_in[KF_CHAIN_MAX];
    uint8_t writes[KF_CHAIN_MAX];
    uint8_t n_out[KF_CHAIN_MAX]; /* not hashed: a member's key fixes its op's outputs */
    uint8_t src[KF_CHAIN_MAX][KF_CHAIN_MAX_IO][2];
    int n_view; /* FROM_VIEW v: head input view_head[v], view_off[v] bytes from its storage's */
    uint8_t view_head[MAX_VIEW];
    int64_t view_off[MAX_VIEW];
} chain_shape;

/* One observed call's arguments: a call held back while a run is open (see observe_views), to
 * be appended to the run or replayed as if it had come alone; a member's, to observe the run
 * again from another head (resplit). */
#define MAX_SIDE 2
typedef struct call_args {
    uint64_t key, now;
    unsigned flags;
    int n_in, n_out, has_seen, has_storage;
    uintptr_t in[KF_CHAIN_MAX_IO], storage[KF_CHAIN_MAX_IO], out[KF_CHAIN_MAX_IO];
    uint64_t seen_at[KF_CHAIN_MAX_IO];
    int64_t off[KF_CHAIN_MAX_IO];
} call_args;

struct kf_chain_rec {
    chain_shape run;
    call_args side[MAX_SIDE];
    int n_side, replaying;
    call_args member[KF_CHAIN_MAX]; /* each member's call: its inputs, outputs, flags */
    int n_head, n_ext;
    uintptr_t head_in[KF_CHAIN_MAX_IO];
    uintptr_t head_storage[KF_CHAIN_MAX_IO];
    int64_t head_off[KF_CHAIN_MAX_IO];
    uintptr_t view[MAX_VIEW]; /* the run's views, by identity */
    uintptr_t ext[MAX_EXT];
    uint8_t fresh[KF_CHAIN_MAX]; /* member m read a fresh external in this run */
    uint64_t ext_at[KF_CHAIN_MAX]; /* when the thread first saw member m's newest external */
    int have_ages;                 /* ext_at and now are known (kf_chain_observe_at) */
    uint64_t now;
};

typedef struct chain_entry {
    uint64_t id; /* 0: free */
    chain_shape shape;
    uint64_t calls;
    uint64_t fresh[KF_CHAIN_MAX]; /* runs in which member m read a fresh external */
    uint64_t unpredicted[KF_CHAIN_MAX]; /* ... one made since the thread's last run of it began */
    const kf_chain_rec *last_rec; /* the thread of its last run, and when that run began */
    uint64_t last_start;
} chain_entry;

struct kf_chains {
    pthread_mutex_t lock;
    int deferred; /* KFORGE_CHAIN_DEFERRED: specs whose externals are taken at their members */
    int cap; /* a power of two */
    int used;
    uint64_t dropped;
    chain_entry *e;
};

kf_status kf_chains_create(kf_chains **out, int capacity)
{
    *out = NULL;
    int cap = 16;
    while (cap < capacity && cap < (1 << 20)) cap *= 2;
    kf_chains *c = calloc(1, sizeof *c);
    if (!c) return KF_ERR_NOMEM;
    c->e = calloc((size_t)cap, sizeof *c->e);
    if (!c->e) {
        free(c);
        return KF_ERR_NOMEM;
    }
    c->cap = cap;
    pthread_mutex_init(&c->lock, NULL);
    *out = c;
    return KF_OK;
}

void kf_chains_free(kf_chains *c)
{
    if (!c) return;
    pthread_mutex_destroy(&c->lock);
    free(c->e);
    free(c);
}

void kf_chains_set_deferred(kf_chains *c, int on)
{
    if (c) c->deferred = on;
}

void kf_chains_reset(kf_chains *c)
{
    if (!c) return;
    pthread_mutex_lock(&c->lock);
    memset(c->e, 0, (size_t)c->cap * sizeof *c->e);
    c->used = 0;
    c->dropped = 0;
    pthread_mutex_unlock(&c->lock);
}

kf_chain_rec *kf_chain_rec_create(void) { return calloc(1, sizeof(kf_chain_rec)); }

void kf_chain_rec_free(kf_chain_rec *r) { free(r); }

static uint64_t shape_id(const chain_shape *s)
{
    uint8_t buf[KF_CHAIN_MAX * (8 + 2 + 2 * KF_CHAIN_MAX_IO) + MAX_VIEW * 9];
    uint32_t len = 0;
    for (int v = 0; v < s->n_view; v++) {
        buf[len++] = s->view_head[v];
        memcpy(buf + len, &s->view_off[v], 8);
        len += 8;
    }
    for (int m = 0; m < s->n; m++) {
        memcpy(buf + len, &s->key[m], 8);
        len += 8;
        buf[len++] = s->n_in[m];
        buf[len++] = s->writes[m];
        for (int i = 0; i < s->n_in[m]; i++) {
            buf[len++] = s->src[m][i][0];
            buf[len++] = s->src[m][i][1];
        }
    }
    uint64_t h = kf_sig_hash(buf, len);
    return h ? h : 1;
}

/* The run r holds, counted: its members' fresh externals, and their unpredicted ones (first seen
 * after the thread's previous run of the same chain began: one made during that run, such as its
 * own output read back as the next place's residual, is another tensor at every place). */
static void count_run(kf_chains *c, const kf_chain_rec *r)
{
    const chain_shape *s = &r->run;
    if (s->n < 2) return;
    uint64_t id = shape_id(s);
    pthread_mutex_lock(&c->lock);
    for (int probe = 0; probe < c->cap; probe++) {
        chain_entry *e = &c->e[(id + (uint64_t)probe) & (uint64_t)(c->cap - 1)];
        if (e->id == id && !memcmp(&e->shape, s, sizeof *s)) {
            e->calls++;
            const int aged = r->have_ages && e->last_rec == r;
            for (int m = 0; m < s->n; m++) {
                e->fresh[m] += r->fresh[m];
                e->unpredicted[m] += aged && r->ext_at[m] >= e->last_start;
            }
            if (r->have_ages) e->last_rec = r, e->last_start = r->member[0].now;
            goto done;
        }
        if (e->id) continue;
        if (c->used * 4 >= c->cap * 3) break; /* keep probes short: three quarters full is full */
        e->id = id;
        e->shape = *s;
        e->calls = 1;
        for (int m = 0; m < KF_CHAIN_MAX; m++) {
            e->fresh[m] = m < s->n ? r->fresh[m] : 0;
            e->unpredicted[m] = 0;
        }
        e->last_rec = r->have_ages ? r : NULL;
        e->last_start = r->member[0].now;
        c->used++;
        goto done;
    }
    c->dropped++;
done:
    pthread_mutex_unlock(&c->lock);
}

static void replay_side(kf_chains *c, kf_chain_rec *r);

void kf_chain_flush(kf_chains *c, kf_chain_rec *r)
{
    if (!c || !r) return;
    replay_side(c, r);
    count_run(c, r);
    memset(&r->run, 0, sizeof r->run);
    memset(r->fresh, 0, sizeof r->fresh);
    memset(r->ext_at, 0, sizeof r->ext_at);
}

/* The latest member with output `id` (`first`: the earliest; in-place members return their
 * input) and which output, in *o, or -1. */
static int member_of(const kf_chain_rec *r, uintptr_t id, int first, int *o)
{
    for (int i = 0; i < r->run.n; i++) {
        const int m = first ? i : r->run.n - 1 - i;
        for (int k = 0; k < r->member[m].n_out; k++)
            if (r->member[m].out[k] == id) return *o = k, m;
    }
    return -1;
}

/* Where input `id` comes from in the run: the latest member with that output (1), a view of a
 * head input (its storage `sto`, at byte offset `off`; 1, numbered on first use), else one of the
 * head's inputs or an external tensor, numbered on first use (0). */
static int find_source(kf_chain_rec *r, uintptr_t id, uintptr_t sto, int64_t off, uint8_t src[2])
{
    int o, m = member_of(r, id, 0, &o);
    if (m >= 0) {
        src[0] = (uint8_t)m;
        src[1] = (uint8_t)o;
        return 1;
    }
    src[0] = FROM_HEAD;
    for (int i = 0; i < r->n_head; i++)
        if (r->head_in[i] == id) {
            src[1] = (uint8_t)i;
            return 0;
        }
    src[0] = FROM_VIEW;
    for (int v = 0; v < r->run.n_view; v++)
        if (r->view[v] == id) {
            src[1] = (uint8_t)v;
            return 1;
        }
    for (int i = 0; sto && i < r->n_head; i++)
        if (r->head_storage[i] == sto && r->run.n_view < MAX_VIEW) {
            int v = r->run.n_view++;
            r->view[v] = id;
            r->run.view_head[v] = (uint8_t)i;
            r->run.view_off[v] = off - r->head_off[i];
            src[1] = (uint8_t)v;
            return 1;
        }
    src[0] = FROM_OUTSIDE;
    int e = 0;
    while (e < r->n_ext && r->ext[e] != id) e++;
    if (e == r->n_ext && r->n_ext < MAX_EXT) r->ext[r->n_ext++] = id;
    src[1] = (uint8_t)e;
    return 0;
}

/* The call starts a new run as its head: its inputs are the head's. */
static void start(kf_chain_rec *r, const uintptr_t *in, const uintptr_t *storage, const int64_t *off,
                  int n_in, uint8_t src[][2])
{
    memset(&r->run, 0, sizeof r->run);
    r->n_ext = 0;
    r->n_head = n_in;
    memcpy(r->head_in, in, (size_t)n_in * sizeof in[0]);
    for (int i = 0; i < n_in; i++) {
        r->head_storage[i] = storage ? storage[i] : 0;
        r->head_off[i] = off ? off[i] : 0;
    }
    for (int i = 0; i < n_in; i++) src[i][0] = FROM_HEAD, src[i][1] = (uint8_t)i;
}

void kf_chain_observe(kf_chains *c, kf_chain_rec *r, uint64_t key, unsigned flags,
                      const uintptr_t *in, int n_in, const uintptr_t *out, int n_out)
{
    kf_chain_observe_at(c, r, key, flags, in, NULL, n_in, out, n_out, 0);
}

void kf_chain_observe_at(kf_chains *c, kf_chain_rec *r, uint64_t key, unsigned flags,
                         const uintptr_t *in, const uint64_t *seen_at, int n_in,
                         const uintptr_t *out, int n_out, uint64_t now)
{
    kf_chain_observe_views(c, r, key, flags, in, seen_at, NULL, NULL, n_in, out, n_out, now);
}

/* Whether id is an output of the held-back calls / of the run's members. */
static int side_output(const kf_chain_rec *r, uintptr_t id)
{
    for (int k = 0; k < r->n_side; k++)
        for (int o = 0; o < r->side[k].n_out; o++)
            if (r->side[k].out[o] == id) return 1;
    return 0;
}
static int member_output(const kf_chain_rec *r, uintptr_t id)
{
    int o;
    return member_of(r, id, 0, &o) >= 0;
}

static void args_set(call_args *a, uint64_t key, unsigned flags, const uintptr_t *in,
                     const uint64_t *seen_at, const uintptr_t *storage, const int64_t *byte_off,
                     int n_in, const uintptr_t *out, int n_out, uint64_t now)
{
    a->key = key, a->flags = flags, a->now = now, a->n_in = n_in, a->n_out = n_out;
    a->has_seen = seen_at != NULL, a->has_storage = storage != NULL;
    memcpy(a->in, in, (size_t)n_in * sizeof in[0]);
    memcpy(a->out, out, (size_t)n_out * sizeof out[0]);
    for (int i = 0; i < n_in; i++) {
        a->seen_at[i] = seen_at ? seen_at[i] : 0;
        a->storage[i] = storage ? storage[i] : 0;
        a->off[i] = byte_off ? byte_off[i] : 0;
    }
}

static void append(kf_chains *c, kf_chain_rec *r, uint64_t key, unsigned flags, const uintptr_t *in,
                   const uint64_t *seen_at, const uintptr_t *storage, const int64_t *byte_off,
                   int n_in, const uintptr_t *out, int n_out, uint64_t now, int side);

static void append_args(kf_chains *c, kf_chain_rec *r, const call_args *a, int side)
{
    append(c, r, a->key, a->flags, a->in, a->has_seen ? a->seen_at : NULL,
           a->has_storage ? a->storage : NULL, a->has_storage ? a->off : NULL, a->n_in, a->out,
           a->n_out, a->now, side);
}

/* The held-back calls, observed in order as if they had not been held (a run of their own). */
static void replay_side(kf_chains *c, kf_chain_rec *r)
{
    call_args held[MAX_SIDE];
    const int n = r->n_side;
    memcpy(held, r->side, (size_t)n * sizeof held[0]);
    r->n_side = 0;
    r->replaying = 1;
    for (int k = 0; k < n; k++) append_args(c, r, &held[k], 0);
    r->replaying = 0;
}

/* The run observed again as two: members before k (counted), then k on, from k as a head. */
static void resplit(kf_chains *c, kf_chain_rec *r, int k)
{
    call_args calls[KF_CHAIN_MAX];
    const int n = r->run.n;
    memcpy(calls, r->member, (size_t)n * sizeof calls[0]);
    memset(&r->run, 0, sizeof r->run);
    memset(r->fresh, 0, sizeof r->fresh);
    memset(r->ext_at, 0, sizeof r->ext_at);
    r->replaying = 1;
    for (int j = 0; j < n; j++) {
        if (j == k) kf_chain_flush(c, r);
        append_args(c, r, &calls[j], j != 0 && j != k); /* each was linked: it stays */
    }
    r->replaying = 0;
}

/* A view of member m's output (over its storage, not the tensor: rotary's halves of a q that an
 * RMSNorm chain made, Gemma's and Qwen 3's q_norm) links to nothing; the run starting at the
 * first later member that reads that output itself (rotary's q * cos) takes it as a head input,
 * whose views do link. That member, or 0. */
static int view_head_at(const kf_chain_rec *r, const uintptr_t *in, const uintptr_t *storage, int n_in)
{
    for (int i = 0; storage && i < n_in; i++) {
        int o, m = storage[i] && storage[i] != in[i] ? member_of(r, storage[i], 1, &o) : -1;
        if (m < 0) continue;
        for (int j = m + 1; j < r->run.n; j++)
            for (int q = 0; q < r->member[j].n_in; q++)
                if (r->member[j].in[q] == storage[i]) return j;
        return 0;
    }
    return 0;
}

/* A call that may join the open run without reading its outputs: a pure function of tensors the
 * thread has seen before (a weight's cast, Gemma's `weight.float()` between its RMSNorm's
 * multiplies), one output, no write. */
static int side_candidate(const kf_chain_rec *r, unsigned flags, int n_in, int n_out)
{
    if (r->run.n < 1 || r->run.n + r->n_side + 2 > KF_CHAIN_MAX || r->n_side >= MAX_SIDE)
        return 0;
    if ((flags & KF_CHAIN_WRITES) || n_out != 1 || n_in < 1) return 0;
    return !(flags & KF_CHAIN_FRESH_MASK(0xffu >> (8 - (n_in < 8 ? n_in : 8))));
}

void kf_chain_observe_views(kf_chains *c, kf_chain_rec *r, uint64_t key, unsigned flags,
                            const uintptr_t *in, const uint64_t *seen_at, const uintptr_t *storage,
                            const int64_t *byte_off, int n_in, const uintptr_t *out, int n_out,
                            uint64_t now)
{
    if (!c || !r) return;
    if (n_in > KF_CHAIN_MAX_IO) n_in = KF_CHAIN_MAX_IO;
    if (n_out > KF_CHAIN_MAX_IO) n_out = KF_CHAIN_MAX_IO;
    if (!(flags & KF_CHAIN_SERVABLE)) { /* a call no kernel can take ends the run and joins none */
        kf_chain_flush(c, r);
        r->n_head = r->n_ext = 0;
        return;
    }
    /* Held-back calls join the run when this call reads both their output and a member's (the
     * weight's cast and the multiply by it); more such calls are held while they read only
     * theirs (Qwen 3.5's `1.0 + weight.float()`); anything else replays them as they came. */
    if (r->n_side) {
        int reads_side = 0, reads_run = 0, fresh = 0;
        for (int i = 0; i < n_in; i++) {
            if (side_output(r, in[i])) reads_side = 1;
            else if (member_output(r, in[i])) reads_run = 1;
            else if (flags & KF_CHAIN_FRESH(i)) fresh = 1;
        }
        if (reads_side && reads_run && r->run.n + r->n_side < KF_CHAIN_MAX) {
            const int n = r->n_side;
            r->n_side = 0;
            for (int k = 0; k < n; k++) append_args(c, r, &r->side[k], 1);
        } else if (reads_side && !reads_run && !fresh && side_candidate(r, flags, n_in, n_out)) {
            args_set(&r->side[r->n_side++], key, flags, in, seen_at, storage, byte_off, n_in, out, n_out, now);
            return;
        } else {
            replay_side(c, r);
        }
    }
    append(c, r, key, flags, in, seen_at, storage, byte_off, n_in, out, n_out, now, 0);
}

/* A full run that the call links to is cut before the last member of the head's signature
 * (Gemma's norm, the residual add, the next norm: 19 calls, where a cut at the limit would end
 * the run in the middle of the second norm and start the next one there). That member, or 0. */
static int full_run_repeat(const kf_chain_rec *r, const uintptr_t *in, int n_in)
{
    if (r->run.n < KF_CHAIN_MAX) return 0;
    int reads = 0;
    for (int i = 0; i < n_in && !reads; i++) reads = member_output(r, in[i]);
    for (int k = r->run.n - 1; reads && k > 0; k--)
        if (r->run.key[k] == r->run.key[0]) return k;
    return 0;
}

static int has_key(const chain_shape *s, uint64_t key)
{
    for (int m = 0; m < s->n; m++)
        if (s->key[m] == key) return 1;
    return 0;
}

/* The call joins the open run when linked to it (or `side`: held back, joined), else ends the
 * run and starts the next one; a call that might join without a link is held back instead. */
static void append(kf_chains *c, kf_chain_rec *r, uint64_t key, unsigned flags, const uintptr_t *in,
                   const uint64_t *seen_at, const uintptr_t *storage, const int64_t *byte_off,
                   int n_in, const uintptr_t *out, int n_out, uint64_t now, int side)
{
    uint8_t src[KF_CHAIN_MAX_IO][2];
    int linked = side, k;
    if (!side && !r->replaying && (k = view_head_at(r, in, storage, n_in)) > 0) resplit(c, r, k);
    if (!side && !r->replaying && (k = full_run_repeat(r, in, n_in)) > 0) resplit(c, r, k);
    int head = 0, outside = 0;
    for (int i = 0; i < n_in && r->run.n > 0 && r->run.n < KF_CHAIN_MAX; i++) {
        if (find_source(r, in[i], storage ? storage[i] : 0, byte_off ? byte_off[i] : 0, src[i])) linked = 1;
        head |= src[i][0] == FROM_HEAD;
        outside |= src[i][0] == FROM_OUTSIDE;
    }
    /* a sibling of the head on its input, reading nothing from outside the run, joins it too
     * (GPT-2's `0.5 * x`, then `x ** 3`); one that also reads an outside tensor does not (the
     * next block's `add(y, bias)` after `add(x, bias)`, or `k * cos` after `q * cos`), nor a
     * signature the run has already: a loop's next step on the same input */
    if (head && !outside && !has_key(&r->run, key)) linked = 1;
    if (!linked && !side && side_candidate(r, flags, n_in, n_out) && r->n_side == 0 && !r->replaying) {
        args_set(&r->side[r->n_side++], key, flags, in, seen_at, storage, byte_off, n_in, out, n_out, now);
        return;
    }
    if (!linked) {
        kf_chain_flush(c, r);
        start(r, in, storage, byte_off, n_in, src);
    }
    int m = r->run.n++;
    args_set(&r->member[m], key, flags, in, seen_at, storage, byte_off, n_in, out, n_out, now);
    for (int i = 0; i < n_in; i++) {
        if (src[i][0] != FROM_OUTSIDE) continue;
        if (flags & KF_CHAIN_FRESH(i)) r->fresh[m] = 1;
        /* seen before this call (one new at it is fresh: a linear's output, a first-forward weight) */
        if (seen_at && !(flags & KF_CHAIN_FRESH(i)) && seen_at[i] > r->ext_at[m])
            r->ext_at[m] = seen_at[i];
    }
    r->have_ages = seen_at != NULL;
    r->now = now;
    r->run.key[m] = key;
    r->run.writes[m] = (flags & KF_CHAIN_WRITES) != 0;
    r->run.n_in[m] = (uint8_t)n_in;
    memcpy(r->run.src[m], src, (size_t)n_in * sizeof src[0]);
    r->run.n_out[m] = (uint8_t)n_out;
}

static int by_calls(const void *a, const void *b)
{
    const chain_entry *x = *(const chain_entry *const *)a, *y = *(const chain_entry *const *)b;
    return x->calls < y->calls ? 1 : x->calls > y->calls ? -1 : 0;
}

/* Where the spec starting at member s0 takes an input from: one of its head's inputs (kind 0,
 * that input), one of its members (1, member, output) or an external (2, numbered by first use
 * in ext_seen, which holds n_ext sources so far). */
static void spec_ref(const chain_shape *s, int s0, const uint8_t src[2], uint8_t ext_seen[][2],
                     int *n_ext, uint8_t ref[3])
{
    for (int i = 0; i < s->n_in[s0]; i++)
        if (!memcmp(s->src[s0][i], src, 2)) {
            ref[0] = 0, ref[1] = (uint8_t)i, ref[2] = 0;
            return;
        }
    if (src[0] < KF_CHAIN_MAX && src[0] >= s0) {
        ref[0] = 1, ref[1] = (uint8_t)(src[0] - s0), ref[2] = src[1];
        return;
    }
    int e = 0;
    while (e < *n_ext && memcmp(ext_seen[e], src, 2)) e++;
    if (e == *n_ext) memcpy(ext_seen[(*n_ext)++], src, 2);
    ref[0] = 2, ref[1] = (uint8_t)e, ref[2] = 0;
}

/* spec's "sig_hex": its canonical bytes (set again after a change); 0 with *why on failure. */
static int spec_bytes(cJSON *spec, char *why, size_t cap)
{
    uint8_t *bytes = NULL;
    uint32_t len = 0;
    if (kf_chain_sig_bytes_obj(spec, &bytes, &len, why, cap) != KF_OK) return 0;
    char *hex = malloc(2 * (size_t)len + 1);
    if (hex) kf_hex_encode(bytes, len, hex);
    free(bytes);
    cJSON_DeleteItemFromObjectCaseSensitive(spec, "sig_hex");
    if (!hex || !cJSON_AddStringToObject(spec, "sig_hex", hex)) {
        free(hex);
        snprintf(why, cap, "out of memory");
        return 0;
    }
    free(hex);
    return 1;
}

/* Whether member m reads an output of a member from `from` on other than its first (a norm's
 * mean or rstd: a chain kernel's members read first outputs only). */
static int reads_extra(const chain_shape *s, int m, int from)
{
    for (int i = 0; i < s->n_in[m]; i++)
        if (s->src[m][i][0] < FROM_VIEW && s->src[m][i][0] >= from && s->src[m][i][1] > 0) return 1;
    return 0;
}

/* Ops with several outputs that a chain continues after: a norm and its mean and rstd (an eval
 * batch norm's are empty), which the chain templates compute with the pointwise members after it
 * (docs/chains.md). */
static const char *const k_continues[] = {"aten::native_layer_norm", "aten::native_group_norm",
                                          "aten::native_batch_norm"};

/* Whether member m writes in place (an op named `..._`, on its self) an earlier member's first
 * output from `from` on: deferred mode's in-place member (ResNet's bn -> relu_), whose write is
 * the chain's own, done at the last member. */
static int writes_member(const chain_shape *s, int m, int from, kf_chain_lookup_fn lookup, void *user,
                         kf_chain_member_info *mi)
{
    if (!s->writes[m] || s->n_in[m] < 1 || s->src[m][0][0] >= FROM_VIEW || s->src[m][0][0] < from ||
        s->src[m][0][0] >= m || s->src[m][0][1] != 0 || !lookup(user, s->key[m], mi))
        return 0;
    const char *dot = strchr(mi->op, '.'), *end = dot ? dot : mi->op + strlen(mi->op);
    return end > mi->op && end[-1] == '_';
}

static int continues_after(const chain_shape *s, int m, kf_chain_lookup_fn lookup, void *user,
                           kf_chain_member_info *mi)
{
    if (s->n_out[m] <= 1) return 1;
    if (!lookup(user, s->key[m], mi)) return 0;
    for (size_t i = 0; i < sizeof k_continues / sizeof k_continues[0]; i++)
        if (!strcmp(mi->op, k_continues[i])) return 1;
    return 0;
}

/* Whether member m, after a norm, joins the norm's epilogue: one output, no sum of its own (a
 * chain kernel's one reduction is the norm), and not the input of a later norm of the run, which
 * it heads the chain of (add -> LN -> add -> LN is two add -> LN chains). Another op with several
 * outputs reading it (a stem's bn -> relu -> max_pool2d_with_indices) only ends the chain there. */
static int joins_epilogue(const chain_shape *s, int m, kf_chain_lookup_fn lookup, void *user,
                          kf_chain_member_info *mi)
{
    if (s->n_out[m] > 1) return 0;
    for (int j = m + 1; j < s->n; j++)
        for (int i = 0; s->n_out[j] > 1 && i < s->n_in[j]; i++)
            if (s->src[j][i][0] == m && continues_after(s, j, lookup, user, mi)) return 0;
    return lookup(user, s->key[m], mi) && !kf_op_accumulates(mi->op);
}

/* Whether member m is a cat whose output the next member, a norm, reads (a UNet's skip
 * concatenation before its norm): no chain kernel fuses a cat with a norm, so a fusable part
 * ends before that cat, and one may start after it (best_spec), the norm heading. */
static int cat_before_norm(const chain_shape *s, int m, kf_chain_lookup_fn lookup, void *user,
                           kf_chain_member_info *mi)
{
    if (m + 1 >= s->n || s->n_out[m + 1] <= 1) return 0;
    int reads = 0;
    for (int i = 0; i < s->n_in[m + 1]; i++) reads |= s->src[m + 1][i][0] == m;
    return reads && lookup(user, s->key[m], mi) && !strcmp(mi->op, "aten::cat");
}

/* The end of the fusable part that starts at member `from` (make_spec's cuts). */
static int fusable_end(const chain_shape *s, int from, int inplace, kf_chain_lookup_fn lookup, void *user,
                       kf_chain_member_info *mi)
{
    int n = from + 1, norm = s->n_out[from] > 1;
    if (cat_before_norm(s, from, lookup, user, mi)) return n;
    while (n < s->n && (!s->writes[n] || (inplace && writes_member(s, n, from, lookup, user, mi))) &&
           !reads_extra(s, n, from) &&
           !cat_before_norm(s, n, lookup, user, mi) &&
           continues_after(s, n - 1, lookup, user, mi) &&
           (!norm || joins_epilogue(s, n, lookup, user, mi))) {
        norm |= s->n_out[n] > 1;
        n++;
    }
    return n;
}

/* The spec of chain shape `s` (chain_sig.h) from member `from`, ending before member `limit`
 * at the latest, or NULL with *why set: its fusable part (cut before the first later member
 * that writes in place or reads another output than a member's first, a layer norm's mean or
 * rstd, and after a member with several outputs other than a norm), each member's signature
 * looked up. A head that
 * writes in place is left out when what follows it still makes a chain: a bf16 RMSNorm's cast
 * (`copy_` into a fresh tensor) then pow -> mean -> add -> rsqrt -> mul, where the head's
 * written tensor becomes the spec head's input. With from > 0 (after a member that reads what
 * the head cannot predict) the spec head takes that member's inputs; a later member may read from
 * outside only a tensor from outside the run that the head could predict in most runs (best_spec
 * ends the part before any other), not the run's own (its head's input, an earlier member's
 * output), which is another tensor at every run. */
static cJSON *make_spec(const chain_shape *s, int from, int limit, int inplace, kf_chain_lookup_fn lookup,
                        void *user, kf_chain_member_info *mi, int *first, char *why, size_t cap)
{
    int s0 = from, n = fusable_end(s, from, inplace, lookup, user, mi);
    if (s->writes[from] && s->n > from + 2 && !s->writes[from + 1]) {
        int n1 = fusable_end(s, from + 1, inplace, lookup, user, mi);
        if (n1 - (from + 1) >= 2) s0 = from + 1, n = n1;
    }
    const int cut = n <= limit; /* the fusable part ends first, not the caller's limit */
    if (n > limit) n = limit;
    *first = s0;
    if (n - s0 < 2) {
        if (cut && n == s->n)
            snprintf(why, cap, "fewer than two members from member %d", s0);
        else if (cut && s->n_out[n - 1] > 1 && !continues_after(s, n - 1, lookup, user, mi))
            snprintf(why, cap, "member %d has %d outputs (only a layer or group norm is followed "
                               "by more members)", n - 1, s->n_out[n - 1]);
        else if (cut && (cat_before_norm(s, n - 1, lookup, user, mi) ||
                         cat_before_norm(s, n, lookup, user, mi)))
            snprintf(why, cap, "a cat that a norm reads (member %d or %d): no chain kernel fuses "
                               "the two", n - 1, n);
        else if (cut && !s->writes[n] && !reads_extra(s, n, s0))
            snprintf(why, cap, "member %d does not join the norm's epilogue (a second norm, a "
                               "reduction, or the next norm's input)", n);
        else if (cut && !s->writes[n])
            snprintf(why, cap, "member %d reads another output than the first of a member (a chain "
                               "kernel's members read first outputs only)", n);
        else if (cut)
            snprintf(why, cap, "member %d writes in place (only the head may; in deferred mode, an "
                               "in-place op on a member's output too)", n);
        else
            why[0] = 0; /* the caller says why it set the limit */
        return NULL;
    }
    cJSON *spec = cJSON_CreateObject(), *members = cJSON_AddArrayToObject(spec, "members");
    if (!members) goto oom;
    cJSON_AddNumberToObject(spec, "version", 1);
    int n_ext = 0;
    uint8_t ext_seen[MAX_EXT][2];
    for (int m = s0; m < n; m++) {
        if (!lookup(user, s->key[m], mi)) {
            snprintf(why, cap, "member %d's signature is no longer in the signature table", m);
            goto fail;
        }
        /* the recorded inputs must be the signature's tensors, in order (a list's in its place) */
        const int tensors = kf_sig_tensors(mi->sig, mi->sig_len, -1, NULL);
        if (tensors != s->n_in[m]) {
            snprintf(why, cap, "member %d (%s): its tensor inputs could not be followed", m, mi->op);
            goto fail;
        }
        cJSON *mem = cJSON_CreateObject();
        if (!mem) goto oom;
        cJSON_AddItemToArray(members, mem);
        char *hex = malloc(2 * (size_t)mi->sig_len + 1);
        if (!hex) goto oom;
        kf_hex_encode(mi->sig, mi->sig_len, hex);
        cJSON_AddStringToObject(mem, "op", mi->op);
        cJSON_AddStringToObject(mem, "signature", mi->signature);
        cJSON_AddStringToObject(mem, "sig_hex", hex);
        free(hex);
        cJSON *ins = cJSON_AddArrayToObject(mem, "inputs");
        if (!ins) goto oom;
        for (int i = 0; i < s->n_in[m]; i++) {
            uint8_t r[3] = {0, (uint8_t)i, 0}; /* the head's own inputs, in order */
            if (m > s0) spec_ref(s, s0, s->src[m][i], ext_seen, &n_ext, r);
            if (from > 0 && r[0] == 2 && s->src[m][i][0] != FROM_OUTSIDE) {
                snprintf(why, cap, "member %d reads an activation of the run from outside a spec that "
                         "starts at member %d", m, s0);
                goto fail;
            }
            cJSON *ref = cJSON_CreateArray();
            if (!ref) goto oom;
            cJSON_AddItemToArray(ins, ref);
            cJSON_AddItemToArray(ref, cJSON_CreateString(r[0] == 0 ? "head" : r[0] == 2 ? "ext" : "member"));
            if (r[0] == 1) cJSON_AddItemToArray(ref, cJSON_CreateNumber(r[1])); /* member */
            cJSON_AddItemToArray(ref, cJSON_CreateNumber(r[0] == 1 ? r[2] : r[1]));
        }
    }
    cJSON_AddNumberToObject(spec, "n_head_inputs", s->n_in[s0]);
    cJSON_AddNumberToObject(spec, "n_ext", n_ext);
    cJSON *views = NULL;
    for (int e = 0; e < n_ext; e++) {
        if (ext_seen[e][0] != FROM_VIEW) continue;
        const int v = ext_seen[e][1];
        if (s0 > 0) { /* a view of the run head's input, which this spec's head does not take */
            snprintf(why, cap, "a member reads a view of member 0's input, outside a spec that "
                               "starts at member %d", s0);
            goto fail;
        }
        if (!views && !(views = cJSON_AddArrayToObject(spec, "views"))) goto oom;
        cJSON *w = cJSON_CreateArray();
        if (!w) goto oom;
        cJSON_AddItemToArray(views, w);
        cJSON_AddItemToArray(w, cJSON_CreateNumber(e));
        cJSON_AddItemToArray(w, cJSON_CreateNumber(s->view_head[v]));
        cJSON_AddItemToArray(w, cJSON_CreateNumber((double)s->view_off[v]));
    }
    if (spec_bytes(spec, why, cap)) return spec;
    goto fail;
oom:
    snprintf(why, cap, "out of memory");
fail:
    cJSON_Delete(spec);
    return NULL;
}

/* Whether member m read, in more than half of the chain's runs, an external new to the thread
 * (a linear's output) or one made since the thread's previous run of the chain. */
static int fresh_mostly(const chain_entry *e, int m)
{
    return 2 * e->fresh[m] > e->calls;
}
static int unpredicted(const chain_entry *e, int m)
{
    return 2 * e->unpredicted[m] > e->calls || fresh_mostly(e, m);
}

/* The longest spec of e, or NULL with *why. Serving predicts each external at the head from the
 * tensors of an earlier run, which can never hold an activation made since: the fusable part
 * from the start, and when a member after the head reads an unpredicted external, the parts
 * between such members, each starting at one (its inputs are then the spec head's, taken at the
 * call). A member that read a tensor
 * new to the thread in most runs (a linear's output: SwiGLU's mul) cuts the same way; a weight
 * new only in its first forward does not (most runs are later ones). A part also starts at a
 * norm after a cat (cat_before_norm). */
static cJSON *best_spec(const chain_entry *e, kf_chain_lookup_fn lookup, void *user,
                        kf_chain_member_info *mi, int *first, char *why, size_t cap, int deferred)
{
    cJSON *best = NULL;
    int best_n = 0, fm = -1;
    /* deferred mode (opt-in): a chain whose later members read what the head cannot have (a
     * linear's output: SwiGLU) or write an earlier member's output in place (ResNet's bn ->
     * relu_) is one spec, its kernel launched at the last member */
    if (deferred) {
        char w[256] = "";
        int f = 0, needs = 0;
        cJSON *spec = make_spec(&e->shape, 0, e->shape.n, 1, lookup, user, mi, &f, w, sizeof w);
        const int n = spec ? cJSON_GetArraySize(cJSON_GetObjectItem(spec, "members")) : 0;
        for (int m = 1; f == 0 && m < n; m++)
            needs |= unpredicted(e, m) || writes_member(&e->shape, m, 0, lookup, user, mi);
        if (needs) {
            cJSON_AddTrueToObject(spec, "deferred");
            if (spec_bytes(spec, why, cap)) return *first = 0, spec;
        }
        cJSON_Delete(spec);
    }
    for (int from = 0; from < e->shape.n - 1; from++) {
        if (from > 0 && !unpredicted(e, from) && !cat_before_norm(&e->shape, from - 1, lookup, user, mi))
            continue;
        int limit = from + 1;
        while (limit < e->shape.n && !unpredicted(e, limit)) limit++;
        if (from == 0 && limit < e->shape.n) fm = limit;
        char w[256] = "";
        int f = 0;
        const int own = from == 0 && limit == e->shape.n; /* its reason is the chain's */
        cJSON *spec = make_spec(&e->shape, from, limit, 0, lookup, user, mi, &f, own ? why : w,
                                own ? cap : sizeof w);
        const int n = spec ? cJSON_GetArraySize(cJSON_GetObjectItem(spec, "members")) : 0;
        if (n > best_n) {
            cJSON_Delete(best);
            best = spec, best_n = n, *first = f;
        } else {
            cJSON_Delete(spec);
        }
    }
    if (!best && fm >= 0) { /* the reason: what ends the part from the start without the limit */
        int f = 0;
        cJSON_Delete(make_spec(&e->shape, 0, e->shape.n, 0, lookup, user, mi, &f, why, cap));
    }
    if (!best && fm >= 0 && !why[0] && fresh_mostly(e, fm))
        snprintf(why, cap, "member %d reads a tensor new to the plugin in %" PRIu64 " of %" PRIu64
                 " runs (an activation from an op it does not see, e.g. a linear's output): the "
                 "head cannot predict it", fm, e->fresh[fm], e->calls);
    else if (!best && fm >= 0 && !why[0])
        snprintf(why, cap, "member %d reads a tensor the head cannot predict in %" PRIu64 " of %" PRIu64
                 " runs (made since the chain's previous run)", fm, e->unpredicted[fm], e->calls);
    return best;
}

char *kf_chains_json_doc(kf_chains *c, uint64_t min_calls, kf_chain_lookup_fn lookup, void *user)
{
    if (!c) return NULL;
    char *text = NULL;
    cJSON *doc = cJSON_CreateObject(), *list = doc ? cJSON_AddArrayToObject(doc, "chains") : NULL;
    kf_chain_member_info *mi = malloc(sizeof *mi);
    pthread_mutex_lock(&c->lock);
    chain_entry **sorted = calloc((size_t)c->used + 1, sizeof *sorted);
    int n = 0;
    for (int i = 0; sorted && i < c->cap; i++)
        if (c->e[i].id && c->e[i].calls >= min_calls) sorted[n++] = &c->e[i];
    if (!list || !sorted || !mi) goto out;
    qsort(sorted, (size_t)n, sizeof *sorted, by_calls);
    for (int k = 0; k < n; k++) {
        const chain_entry *e = sorted[k];
        cJSON *ch = cJSON_CreateObject();
        if (!ch) goto out;
        cJSON_AddItemToArray(list, ch);
        char hex[17];
        snprintf(hex, sizeof hex, "%016" PRIx64, e->id);
        cJSON_AddStringToObject(ch, "id", hex);
        cJSON_AddNumberToObject(ch, "calls", (double)e->calls);
        cJSON *members = cJSON_AddArrayToObject(ch, "members");
        for (int m = 0; members && m < e->shape.n; m++) {
            cJSON *mem = cJSON_CreateObject(), *ins = mem ? cJSON_AddArrayToObject(mem, "inputs") : NULL;
            if (!ins) {
                cJSON_Delete(mem);
                goto out;
            }
            cJSON_AddItemToArray(members, mem);
            snprintf(hex, sizeof hex, "%016" PRIx64, e->shape.key[m]);
            cJSON_AddStringToObject(mem, "key", hex);
            cJSON_AddBoolToObject(mem, "writes", e->shape.writes[m]);
            for (int i = 0; i < e->shape.n_in[m]; i++) {
                const uint8_t *s = e->shape.src[m][i];
                if (s[0] >= FROM_VIEW) {
                    cJSON_AddItemToArray(ins, cJSON_CreateNull());
                } else {
                    const int pair[2] = {s[0], s[1]};
                    cJSON_AddItemToArray(ins, cJSON_CreateIntArray(pair, 2));
                }
            }
        }
        char why[320] = "";
        int first = 0;
        cJSON *spec = lookup ? best_spec(e, lookup, user, mi, &first, why, sizeof why, c->deferred) : NULL;
        if (!lookup) snprintf(why, sizeof why, "no signature table");
        if (spec) {
            cJSON_AddItemToObject(ch, "spec", spec);
            cJSON_AddNumberToObject(ch, "spec_first", first);
        } else {
            cJSON_AddNullToObject(ch, "spec");
            cJSON_AddStringToObject(ch, "fusable_reason", why);
        }
    }
    cJSON_AddNumberToObject(doc, "dropped", (double)c->dropped);
    text = cJSON_PrintUnformatted(doc);
out:
    pthread_mutex_unlock(&c->lock);
    free(sorted);
    free(mi);
    cJSON_Delete(doc);
    return text;
}
