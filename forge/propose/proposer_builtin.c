/* The builtin proposer (proposer.h): walks the knob space of the builtin templates (template.h).
 *
 * Starting points are the applicable templates, one per root proposal, at the knob indices their
 * start() guesses for the signature (their first indices without one), then random knob vectors
 * not proposed yet. A child of node P is P's template with exactly one knob index moved, to the
 * nearest value not yet proposed (ties broken by the seeded PRNG). Every (template, index vector) ever
 * proposed is remembered in a hash set, so no combination is proposed twice anywhere in the tree;
 * a combination that fails to render counts as proposed too. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "forge/search/mcts.h"
#include "forge/propose/proposer.h"
#include "forge/templates/chain.h"

/* An index vector packs into 3 bits per knob; the template's position goes above them. */
#define MAX_KNOBS 16
#define KNOB_BITS 3
_Static_assert(KF_KNOB_MAX_VALUES <= (1 << KNOB_BITS), "knob indices must fit KNOB_BITS");

#define START_TRIES 64       /* index vectors tried per template before giving it up */
#define MAX_NODE_ID (1 << 24) /* per-node state is an array indexed by node id */

typedef struct pnode {
    int valid;
    int tmpl; /* index into b->tmpls */
    signed char idx[MAX_KNOBS];
} pnode;

typedef struct builtin {
    kf_job_sig sig;
    uint64_t rng;
    const kf_template **tmpls; /* the applicable ones, in table order */
    int n_tmpls;
    int next_start; /* the next template to offer as a starting point */
    uint64_t *set;  /* open addressing; 0 = empty slot (keys are never 0) */
    size_t set_cap, set_n;
    pnode *nodes;
    int cap_nodes;
} builtin;

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 33)) * 0xff51afd7ed558ccdull;
    z = (z ^ (z >> 33)) * 0xc4ceb9fe1a85ec53ull;
    return z ^ (z >> 33);
}

static uint64_t combo_key(int tmpl, const signed char *idx, int n_knobs)
{
    uint64_t k = (uint64_t)(tmpl + 1) << (MAX_KNOBS * KNOB_BITS);
    for (int i = 0; i < n_knobs; i++) k |= (uint64_t)idx[i] << (i * KNOB_BITS);
    return k;
}

static int set_has(const builtin *b, uint64_t key)
{
    if (!b->set_cap) return 0;
    for (size_t i = mix(key) & (b->set_cap - 1);; i = (i + 1) & (b->set_cap - 1)) {
        if (b->set[i] == key) return 1;
        if (b->set[i] == 0) return 0;
    }
}

static void set_put_nogrow(uint64_t *set, size_t cap, uint64_t key)
{
    size_t i = mix(key) & (cap - 1);
    while (set[i] && set[i] != key) i = (i + 1) & (cap - 1);
    set[i] = key;
}

/* 0 on out of memory. */
static int set_add(builtin *b, uint64_t key)
{
    if (set_has(b, key)) return 1;
    if ((b->set_n + 1) * 2 > b->set_cap) {
        size_t cap = b->set_cap ? b->set_cap * 2 : 64;
        uint64_t *s = calloc(cap, sizeof *s);
        if (!s) return 0;
        for (size_t i = 0; i < b->set_cap; i++)
            if (b->set[i]) set_put_nogrow(s, cap, b->set[i]);
        free(b->set);
        b->set = s;
        b->set_cap = cap;
    }
    set_put_nogrow(b->set, b->set_cap, key);
    b->set_n++;
    return 1;
}

static int knobs_usable(const kf_template *t)
{
    if (t->n_knobs < 0 || t->n_knobs > MAX_KNOBS || (t->n_knobs && !t->knobs)) return 0;
    for (int k = 0; k < t->n_knobs; k++)
        if (t->knobs[k].n_values < 1 || t->knobs[k].n_values > KF_KNOB_MAX_VALUES) return 0;
    return 1;
}

/* {"template": ..., "knobs": {...}, "mutated": ...} (mutated omitted for a starting point) */
static char *meta_json(const kf_template *t, const int *vals, const char *mutated)
{
    cJSON *o = cJSON_CreateObject(), *knobs = cJSON_CreateObject();
    char *s = NULL;
    if (!o || !knobs) goto out_free;
    if (!cJSON_AddStringToObject(o, "template", t->name)) goto out_free;
    for (int k = 0; k < t->n_knobs; k++)
        if (!cJSON_AddNumberToObject(knobs, t->knobs[k].name, vals[k])) goto out_free;
    cJSON_AddItemToObject(o, "knobs", knobs);
    knobs = NULL;
    if (mutated && !cJSON_AddStringToObject(o, "mutated", mutated)) goto out_free;
    s = cJSON_PrintUnformatted(o);
out_free:
    cJSON_Delete(knobs);
    cJSON_Delete(o);
    return s;
}

static int grow_nodes(builtin *b, int id)
{
    if (id < b->cap_nodes) return 1;
    int cap = b->cap_nodes ? b->cap_nodes : 64;
    while (cap <= id) cap *= 2;
    pnode *p = realloc(b->nodes, (size_t)cap * sizeof *p);
    if (!p) return 0;
    memset(p + b->cap_nodes, 0, (size_t)(cap - b->cap_nodes) * sizeof *p);
    b->nodes = p;
    b->cap_nodes = cap;
    return 1;
}

/* Render (template, idx) into `out` and remember it as node `child_id`. `from`: the parent's
 * indices (NULL for a starting point), `knob`: the one that changed. KF_ERR_NOMEM, or the
 * template's own failure (the caller tries another combination). */
static kf_status emit(builtin *b, int tmpl, const signed char *idx, const signed char *from,
                      int knob, int child_id, kf_candidate *out, char *err, size_t errcap)
{
    const kf_template *t = b->tmpls[tmpl];
    int ki[MAX_KNOBS], vals[MAX_KNOBS];
    for (int k = 0; k < t->n_knobs; k++) ki[k] = idx[k], vals[k] = t->knobs[k].values[idx[k]];
    char *src = NULL, *launch = NULL;
    kf_status st = t->render(&b->sig, ki, &src, &launch, err, errcap);
    if (st != KF_OK) {
        free(src);
        free(launch);
        return st;
    }
    char *meta = meta_json(t, vals, from ? t->knobs[knob].name : NULL);
    if (!meta || !grow_nodes(b, child_id)) {
        free(src);
        free(launch);
        free(meta);
        snprintf(err, errcap, "builtin proposer: out of memory");
        return KF_ERR_NOMEM;
    }
    memset(out, 0, sizeof *out);
    out->source = src;
    out->launch_json = launch;
    out->meta_json = meta;
    snprintf(out->backend, sizeof out->backend, "%s", t->backend);
    snprintf(out->proposer, sizeof out->proposer, "builtin");
    snprintf(out->origin, sizeof out->origin, "%s", t->name);
    if (from)
        snprintf(out->change, sizeof out->change, "%s %d -> %d", t->knobs[knob].name,
                 t->knobs[knob].values[from[knob]], vals[knob]);
    else
        snprintf(out->change, sizeof out->change, "start: %s", t->name);
    pnode *n = &b->nodes[child_id];
    n->valid = 1;
    n->tmpl = tmpl;
    memcpy(n->idx, idx, sizeof n->idx);
    return KF_OK;
}

/* The template's guess for this signature, or all zero; a guess out of range is ignored. */
static void start_vector(const builtin *b, const kf_template *t, signed char *idx)
{
    int g[MAX_KNOBS] = {0};
    if (t->start) t->start(&b->sig, g);
    for (int k = 0; k < t->n_knobs; k++)
        if (g[k] < 0 || g[k] >= t->knobs[k].n_values) return;
    for (int k = 0; k < t->n_knobs; k++) idx[k] = (signed char)g[k];
}

/* The next template at its start vector if that renders (else vectors in odometer order from
 * there, last knob fastest). */
static kf_status propose_start(builtin *b, int child_id, kf_candidate *out, char *err,
                               size_t errcap)
{
    char why[256] = "";
    for (; b->next_start < b->n_tmpls; b->next_start++) {
        int ti = b->next_start;
        const kf_template *t = b->tmpls[ti];
        signed char idx[MAX_KNOBS] = {0};
        start_vector(b, t, idx);
        for (int tries = 0; tries < START_TRIES; tries++) {
            uint64_t key = combo_key(ti, idx, t->n_knobs);
            if (!set_has(b, key)) {
                if (!set_add(b, key)) goto out_nomem;
                kf_status st = emit(b, ti, idx, NULL, 0, child_id, out, why, sizeof why);
                if (st == KF_OK) {
                    b->next_start++;
                    out->first_start = 1;
                    return KF_OK;
                }
                if (st == KF_ERR_NOMEM) goto out_nomem;
                KF_WARN("builtin proposer: %s", why);
            }
            int k = t->n_knobs - 1; /* odometer step */
            for (; k >= 0; k--) {
                if (++idx[k] < t->knobs[k].n_values) break;
                idx[k] = 0;
            }
            if (k < 0) break; /* wrapped around: every vector tried */
        }
    }
    /* Every template has started: more starting points are random unproposed vectors, so a
     * search whose first starts all failed (or that the tree wants to widen) still goes on. */
    for (int tries = 0; b->n_tmpls > 0 && tries < START_TRIES * 4; tries++) {
        int ti = (int)(rng_next(&b->rng) % (uint64_t)b->n_tmpls);
        const kf_template *t = b->tmpls[ti];
        signed char idx[MAX_KNOBS] = {0};
        for (int k = 0; k < t->n_knobs; k++)
            idx[k] = (signed char)(rng_next(&b->rng) % (uint64_t)t->knobs[k].n_values);
        uint64_t key = combo_key(ti, idx, t->n_knobs);
        if (set_has(b, key)) continue;
        if (!set_add(b, key)) goto out_nomem;
        kf_status st = emit(b, ti, idx, NULL, 0, child_id, out, why, sizeof why);
        if (st == KF_OK) {
            snprintf(out->change, sizeof out->change, "start: %s (random knobs)", t->name);
            return KF_OK;
        }
        if (st == KF_ERR_NOMEM) goto out_nomem;
        KF_WARN("builtin proposer: %s", why);
    }
    snprintf(err, errcap, "builtin proposer: every applicable template has been started%s%s",
             why[0] ? "; last render failure: " : "", why);
    return KF_ERR_NOT_FOUND;
out_nomem:
    snprintf(err, errcap, "builtin proposer: out of memory");
    return KF_ERR_NOMEM;
}

/* One knob of the parent's vector moved to the nearest index not yet proposed. */
static kf_status propose_child(builtin *b, int parent, int child_id, kf_candidate *out, char *err,
                               size_t errcap)
{
    if (parent < 0 || parent >= b->cap_nodes || !b->nodes[parent].valid) {
        snprintf(err, errcap, "builtin proposer: node %d was not proposed here", parent);
        return KF_ERR_INVALID;
    }
    const pnode p = b->nodes[parent]; /* a copy: emit() may move the array */
    const kf_template *t = b->tmpls[p.tmpl];
    char why[256] = "";
    for (;;) {
        /* the untried one-knob moves at the smallest distance from the parent */
        int best_dist = KF_KNOB_MAX_VALUES + 1, n_best = 0;
        int cand_k[MAX_KNOBS * KF_KNOB_MAX_VALUES], cand_v[MAX_KNOBS * KF_KNOB_MAX_VALUES];
        signed char idx[MAX_KNOBS];
        memcpy(idx, p.idx, sizeof idx);
        for (int k = 0; k < t->n_knobs; k++) {
            for (int v = 0; v < t->knobs[k].n_values; v++) {
                int dist = abs(v - p.idx[k]);
                if (dist == 0 || dist > best_dist) continue;
                idx[k] = (signed char)v;
                int fresh = !set_has(b, combo_key(p.tmpl, idx, t->n_knobs));
                idx[k] = p.idx[k];
                if (!fresh) continue;
                if (dist < best_dist) best_dist = dist, n_best = 0;
                cand_k[n_best] = k, cand_v[n_best] = v, n_best++;
            }
        }
        if (n_best == 0) {
            snprintf(err, errcap,
                     "builtin proposer: every one-knob change of node %d (%s) was proposed "
                     "already%s%s",
                     parent, t->name, why[0] ? "; last render failure: " : "", why);
            return KF_ERR_NOT_FOUND;
        }
        int pick = (int)(rng_next(&b->rng) % (uint64_t)n_best);
        int k = cand_k[pick];
        idx[k] = (signed char)cand_v[pick];
        if (!set_add(b, combo_key(p.tmpl, idx, t->n_knobs))) {
            snprintf(err, errcap, "builtin proposer: out of memory");
            return KF_ERR_NOMEM;
        }
        kf_status st = emit(b, p.tmpl, idx, p.idx, k, child_id, out, why, sizeof why);
        if (st == KF_OK || st == KF_ERR_NOMEM) {
            if (st == KF_ERR_NOMEM) snprintf(err, errcap, "%s", why);
            return st;
        }
        KF_WARN("builtin proposer: %s", why); /* counted as proposed; try another move */
    }
}

static kf_status builtin_propose(void *self, int parent, int child_id, kf_candidate *out,
                                 char *err, size_t errcap)
{
    builtin *b = self;
    char dummy[1];
    if (!err || !errcap) err = dummy, errcap = sizeof dummy;
    err[0] = 0;
    if (!out) {
        snprintf(err, errcap, "builtin proposer: no candidate to fill");
        return KF_ERR_INVALID;
    }
    memset(out, 0, sizeof *out);
    if (child_id < 0 || child_id >= MAX_NODE_ID) {
        snprintf(err, errcap, "builtin proposer: node id %d out of range", child_id);
        return KF_ERR_INVALID;
    }
    if (parent == KF_MCTS_ROOT) return propose_start(b, child_id, out, err, errcap);
    return propose_child(b, parent, child_id, out, err, errcap);
}

/* The builtin walk does not depend on results: the search decides where to expand. */
static void builtin_feedback(void *self, int id, const char *status, double latency_us,
                             const char *error)
{
    (void)self, (void)id, (void)status, (void)latency_us, (void)error;
}

static void builtin_destroy(void *self)
{
    builtin *b = self;
    if (!b) return;
    free(b->tmpls);
    free(b->set);
    free(b->nodes);
    free(b);
}

/* The reasons the templates that serve sig->op give for refusing it, "; "-joined into why. */
static void refusals(const kf_job_sig *sig, const char *backend, char *why, size_t cap)
{
    size_t len = 0;
    for (int i = 0; kf_builtin_templates[i] && len + 1 < cap; i++) {
        const kf_template *t = kf_builtin_templates[i];
        char one[256];
        if (strcmp(t->backend, backend) || !t->why_not || !t->why_not(sig, one, sizeof one))
            continue;
        int n = snprintf(why + len, cap - len, "%s%s", len ? "; " : "", one);
        if (n < 0) break;
        len += (size_t)n < cap - len ? (size_t)n : cap - len - 1;
    }
}

kf_status kf_proposer_builtin_create(const kf_job_sig *sig, const char *backend, uint64_t seed,
                                     kf_proposer_i *out, char *err, size_t errcap)
{
    char dummy[1];
    if (!err || !errcap) err = dummy, errcap = sizeof dummy;
    err[0] = 0;
    if (!out || !sig || !backend) {
        snprintf(err, errcap, "builtin proposer: missing argument");
        return KF_ERR_INVALID;
    }
    memset(out, 0, sizeof *out);
    int n_all = 0;
    while (kf_builtin_templates[n_all]) n_all++;

    builtin *b = calloc(1, sizeof *b);
    if (!b) goto out_nomem;
    b->tmpls = calloc((size_t)n_all + 1, sizeof *b->tmpls);
    if (!b->tmpls) goto out_free;
    b->sig = *sig;
    b->rng = seed;
    for (int i = 0; i < n_all; i++) {
        const kf_template *t = kf_builtin_templates[i];
        if (strcmp(t->backend, backend) || !t->applies(&b->sig)) continue;
        if (!knobs_usable(t)) {
            KF_WARN("builtin proposer: template %s has knobs this proposer cannot walk", t->name);
            continue;
        }
        b->tmpls[b->n_tmpls++] = t;
    }
    if (b->n_tmpls == 0) {
        char why[512] = "";
        if (sig->chain) { /* which member the chain templates cannot fuse */
            kf_chain_bind cb;
            kf_chain_bind_sig(sig, &cb, why, sizeof why);
        } else {
            refusals(sig, backend, why, sizeof why);
        }
        snprintf(err, errcap, "builtin proposer: no %s template applies to this %.64s signature%s%s",
                 backend, sig->op, why[0] ? ": " : "", why);
        builtin_destroy(b);
        return KF_ERR_NOT_FOUND;
    }
    out->name = "builtin";
    out->propose = builtin_propose;
    out->feedback = builtin_feedback;
    out->destroy = builtin_destroy;
    out->self = b;
    return KF_OK;

out_free:
    builtin_destroy(b);
out_nomem:
    snprintf(err, errcap, "builtin proposer: out of memory");
    return KF_ERR_NOMEM;
}
