/* The `llm` proposer (llm.h, proposer.h): asks a language model for a child of a node, with what
 * the search has learnt so far in the prompt; the answer is parsed here and verified like any
 * other candidate by the worker. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "forge/job/job.h"
#include "forge/propose/proposer_llm.h"

#define MAX_NODE_ID (1 << 24)
#define PROMPT_BUDGET 49152 /* bytes of user message */
#define REPLY_KEPT (1u << 20)

typedef struct llm {
    const kf_job *job;
    kf_llm_config cfg;
    kf_llm_price price;
    kf_llm_totals *totals;
    uint64_t rng;
    kf_llm_node *nodes;
    int n_nodes; /* ids below this have a slot */
} llm;

static const char *env(const char *name) { return getenv(name); }

static kf_llm_node *slot(llm *l, int id)
{
    if (id < 0 || id >= MAX_NODE_ID) return NULL;
    if (id >= l->n_nodes) {
        int cap = id + 64;
        kf_llm_node *n = realloc(l->nodes, (size_t)cap * sizeof *n);
        if (!n) return NULL;
        memset(n + l->n_nodes, 0, (size_t)(cap - l->n_nodes) * sizeof *n);
        for (int i = l->n_nodes; i < cap; i++) n[i].parent = -1;
        l->nodes = n, l->n_nodes = cap;
    }
    return &l->nodes[id];
}

void kf_proposer_llm_note(void *self, int id, int parent, const kf_candidate *c)
{
    llm *l = self;
    kf_llm_node *n = slot(l, id);
    if (!n) return;
    free(n->source), free(n->launch_json);
    n->parent = parent < 0 ? -1 : parent;
    n->source = c->source ? strdup(c->source) : NULL;
    n->launch_json = c->launch_json ? strdup(c->launch_json) : NULL;
    snprintf(n->proposer, sizeof n->proposer, "%s", c->proposer);
    snprintf(n->change, sizeof n->change, "%s", c->change);
}

/* the prompt and the reply of a node, for the tree view (never the key: it is only in a header) */
static void save(const llm *l, int id, const char *ext, const char *text)
{
    char *p = kf_aprintf("%s/candidates/%d.%s", l->job->dir, id, ext);
    FILE *f = p ? fopen(p, "wb") : NULL;
    if (f) {
        size_t n = strlen(text);
        fwrite(text, 1, n < REPLY_KEPT ? n : REPLY_KEPT, f);
        fclose(f);
    }
    free(p);
}

static void account(llm *l, const kf_llm_call_info *info, const kf_llm_reply *r)
{
    kf_llm_totals *t = l->totals;
    t->requests += info->attempts;
    t->calls++;
    t->in_tokens += r->in_tokens;
    t->out_tokens += r->out_tokens;
    t->cost_usd = kf_llm_cost_usd(&l->price, t->in_tokens, t->out_tokens);
}

static kf_status llm_propose(void *self, int parent, int child_id, kf_candidate *out, char *err,
                             size_t cap)
{
    llm *l = self;
    memset(out, 0, sizeof *out);
    snprintf(out->proposer, sizeof out->proposer, "llm");
    snprintf(out->origin, sizeof out->origin, "%s", l->cfg.model);
    snprintf(out->backend, sizeof out->backend, "%s", l->job->backend);
    if (!slot(l, child_id) || (parent >= 0 && !slot(l, parent))) {
        snprintf(err, cap, "llm proposer: node id out of range or out of memory");
        return KF_ERR_NOMEM;
    }
    char *sys = kf_llm_prompt_system(l->job);
    char *user = kf_llm_prompt_user(l->job, l->nodes, child_id, parent, PROMPT_BUDGET);
    if (!sys || !user) {
        free(sys), free(user);
        snprintf(err, cap, "llm proposer: out of memory");
        return KF_ERR_NOMEM;
    }
    save(l, child_id, "prompt.md", user);
    kf_llm_reply r;
    kf_llm_call_info info;
    char why[1024];
    kf_status st = kf_llm_chat(&l->cfg, sys, user, &l->rng, &r, &info, why, sizeof why);
    free(sys), free(user);
    account(l, &info, &r);
    out->meta_json = kf_aprintf("{\"model\":\"%s\",\"attempts\":%d,\"http_status\":%ld,"
                                "\"in_tokens\":%lld,\"out_tokens\":%lld,\"waited_s\":%.3f,"
                                "\"finish\":\"%s\"}",
                                l->cfg.model, info.attempts, info.last_status, r.in_tokens,
                                r.out_tokens, info.waited_s, r.finish);
    if (st != KF_OK) {
        l->totals->failed_calls++;
        snprintf(out->change, sizeof out->change, "llm: no usable answer");
        snprintf(err, cap, "%s", why);
        kf_llm_reply_clear(&r);
        return st == KF_ERR_INVALID ? KF_ERR_INVALID : KF_ERR_IO;
    }
    save(l, child_id, "reply.md", r.text);
    st = kf_llm_parse_answer(r.text, &out->source, &out->launch_json, why, sizeof why);
    kf_llm_reply_clear(&r);
    if (st != KF_OK) {
        l->totals->failed_calls++;
        snprintf(out->change, sizeof out->change, "llm: answer refused");
        snprintf(err, cap, "llm reply refused: %s", why);
        return KF_ERR_INVALID;
    }
    if (parent >= 0) snprintf(out->change, sizeof out->change, "llm rewrite of node %d", parent);
    else snprintf(out->change, sizeof out->change, "start: llm (%.48s)", l->cfg.model);
    kf_proposer_llm_note(l, child_id, parent, out);
    return KF_OK;
}

static void llm_feedback(void *self, int id, const char *status, double latency_us, const char *error)
{
    llm *l = self;
    kf_llm_node *n = slot(l, id);
    if (!n) return;
    snprintf(n->status, sizeof n->status, "%s", status);
    n->latency_us = latency_us;
    free(n->error);
    n->error = error && error[0] ? strndup(error, 4096) : NULL;
}

static void llm_destroy(void *self)
{
    llm *l = self;
    if (!l) return;
    for (int i = 0; i < l->n_nodes; i++)
        free(l->nodes[i].source), free(l->nodes[i].launch_json), free(l->nodes[i].error);
    free(l->nodes);
    kf_llm_config_clear(&l->cfg);
    free(l);
}

kf_status kf_proposer_llm_create(const kf_job *job, kf_llm_totals *totals, kf_proposer_i *out,
                                 char *err, size_t cap)
{
    llm *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, cap, "out of memory");
        return KF_ERR_NOMEM;
    }
    l->job = job, l->totals = totals, l->rng = job->search.seed * 0x9e3779b97f4a7c15ull + 1;
    kf_status st = kf_llm_config_from_env(&l->cfg, env, err, cap);
    if (st == KF_OK) st = kf_llm_price_lookup(l->cfg.model, getenv("KFORGE_LLM_PRICES"), &l->price, err, cap);
    if (st == KF_OK && !kf_http_available()) {
        snprintf(err, cap, "kforge-worker was built without libcurl: the llm proposer is not "
                           "available (install the libcurl headers and rebuild)");
        st = KF_ERR_UNSUPPORTED;
    }
    if (st != KF_OK) {
        llm_destroy(l);
        return st;
    }
    memset(totals, 0, sizeof *totals);
    snprintf(totals->model, sizeof totals->model, "%s", l->cfg.model);
    snprintf(totals->api, sizeof totals->api, "%s", l->cfg.api == KF_LLM_ANTHROPIC ? "anthropic" : "openai");
    totals->price_known = l->price.known;
    totals->in_per_mtok = l->price.in_per_mtok, totals->out_per_mtok = l->price.out_per_mtok;
    *out = (kf_proposer_i){
        /* .name = */ "llm",
        /* .propose = */ llm_propose,
        /* .feedback = */ llm_feedback,
        /* .destroy = */ llm_destroy,
        /* .self = */ l,
    };
    return KF_OK;
}
