/* The job folder's records (worker_impl.h): tree.json, result.json, progress.jsonl, llm_usage.json. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsio.h"
#include "common/log.h"
#include "common/status.h"
#include "forge/worker/worker_impl.h"

char *kf_worker_path(const char *dir, const char *fmt, ...)
{
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    return kf_aprintf("%s/%s", dir, name);
}

int kf_worker_write_text(const char *dir, const char *name, const char *text)
{
    char *p = kf_worker_path(dir, "%s", name), err[256] = "out of memory";
    kf_status st = p ? kf_write_file(p, text ? text : "", text ? strlen(text) : 0, err, sizeof err)
                     : KF_ERR_NOMEM;
    if (st != KF_OK) KF_WARN("worker: cannot write %s/%s: %s", dir, name, err);
    free(p);
    return st == KF_OK ? 0 : -1;
}

int kf_worker_write_json(const char *dir, const char *name, cJSON *doc)
{
    char *text = cJSON_Print(doc);
    int rc = text ? kf_worker_write_text(dir, name, text) : -1;
    free(text);
    return rc;
}

static cJSON *node_json(const worker *w, int id)
{
    const wnode *n = &w->nodes[id];
    kf_mcts_node m;
    kf_mcts_node_get(w->tree, id, &m);
    cJSON *o = cJSON_CreateObject();
    char hash[17];
    snprintf(hash, sizeof hash, "%016llx", (unsigned long long)n->src_hash);
    cJSON_AddNumberToObject(o, "id", id);
    cJSON_AddNumberToObject(o, "parent", m.parent);
    cJSON_AddNumberToObject(o, "depth", m.depth);
    cJSON_AddStringToObject(o, "status", kf_node_status_name(n->status));
    if (kf_node_status_correct(n->status)) {
        cJSON_AddNumberToObject(o, "latency_us", n->latency_us);
        cJSON_AddNumberToObject(o, "speedup", w->job->eager_us / n->latency_us);
    } else {
        cJSON_AddNullToObject(o, "latency_us");
        cJSON_AddNullToObject(o, "speedup");
    }
    cJSON_AddStringToObject(o, "error", n->error ? n->error : "");
    cJSON_AddStringToObject(o, "proposer", n->cand.proposer);
    cJSON_AddStringToObject(o, "origin", n->cand.origin);
    cJSON_AddStringToObject(o, "change", n->cand.change);
    cJSON *meta = n->cand.meta_json ? cJSON_Parse(n->cand.meta_json) : NULL;
    cJSON_AddItemToObject(o, "meta", meta ? meta : cJSON_CreateObject());
    cJSON_AddStringToObject(o, "backend", n->cand.backend);
    cJSON_AddStringToObject(o, "source_hash", hash);
    char file[64];
    snprintf(file, sizeof file, "candidates/%d%s", id, strcmp(n->cand.backend, "nvrtc") ? ".c" : ".cu");
    cJSON_AddStringToObject(o, "source_file", file);
    snprintf(file, sizeof file, "candidates/%d.launch.json", id);
    cJSON_AddStringToObject(o, "launch_file", file);
    snprintf(file, sizeof file, "candidates/%d.log", id);
    cJSON_AddStringToObject(o, "log_file", file);
    cJSON_AddNumberToObject(o, "max_abs_err", n->max_abs_err);
    cJSON_AddNumberToObject(o, "max_rel_err", n->max_rel_err);
    cJSON_AddNumberToObject(o, "failed_case", n->failed_case);
    cJSON_AddNumberToObject(o, "compile_s", n->compile_s);
    cJSON_AddNumberToObject(o, "eval_s", n->eval_s);
    cJSON_AddNumberToObject(o, "elapsed_s", n->elapsed_s);
    cJSON_AddBoolToObject(o, "latency_replayed", n->replayed);
    if (n->memchecked) cJSON_AddItemToObject(o, "memcheck", kf_memcheck_json(&n->mc));
    cJSON_AddNumberToObject(o, "visits", m.visits);
    if (isfinite(m.best_us)) cJSON_AddNumberToObject(o, "subtree_best_us", m.best_us);
    else cJSON_AddNullToObject(o, "subtree_best_us");
    cJSON_AddBoolToObject(o, "exhausted", m.exhausted);
    cJSON_AddBoolToObject(o, "pruned", m.pruned);
    return o;
}

void kf_worker_write_tree(const worker *w)
{
    const kf_job *j = w->job;
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "op", j->op);
    cJSON_AddStringToObject(doc, "signature", j->signature);
    cJSON_AddStringToObject(doc, "backend", j->backend);
    cJSON_AddStringToObject(doc, "arch", w->arch);
    cJSON_AddNumberToObject(doc, "eager_us", j->eager_us);
    cJSON_AddNumberToObject(doc, "roofline_us", j->roofline_us);
    cJSON_AddNumberToObject(doc, "seed", (double)j->search.seed);
    cJSON_AddStringToObject(doc, "proposer", w->prop.name ? w->prop.name : "");
    cJSON *arr = cJSON_AddArrayToObject(doc, "nodes");
    for (int i = 0; i < w->n_nodes; i++) cJSON_AddItemToArray(arr, node_json(w, i));
    kf_worker_write_json(j->dir, "tree.json", doc);
    cJSON_Delete(doc);
}

int kf_worker_trusted_best(const worker *w)
{
    int best = -1;
    for (int i = 0; i < w->n_nodes; i++) {
        const wnode *n = &w->nodes[i];
        if (n->status != KF_NODE_VERIFIED && n->status != KF_NODE_SLOWER) continue;
        if (best < 0 || n->latency_us < w->nodes[best].latency_us) best = i;
    }
    return best;
}

void kf_worker_progress(const worker *w, const char *event, int id, const char *extra_json)
{
    int best = kf_worker_trusted_best(w);
    char line[1024];
    int n = snprintf(line, sizeof line,
                     "{\"event\":\"%s\",\"node\":%d,\"status\":\"%s\",\"latency_us\":%.4g,"
                     "\"best_us\":%.4g,\"eager_us\":%.4g,\"iteration\":%d,\"iterations\":%d,"
                     "\"elapsed_s\":%.3f%s%s}\n",
                     event, id, id >= 0 ? kf_node_status_name(w->nodes[id].status) : "",
                     id >= 0 && kf_node_status_correct(w->nodes[id].status) ? w->nodes[id].latency_us : 0,
                     best >= 0 ? w->nodes[best].latency_us : 0, w->job->eager_us, w->n_nodes,
                     w->job->search.iterations, kf_now_s() - w->t0, extra_json ? "," : "",
                     extra_json ? extra_json : "");
    if (n < 0) return;
    size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    if (w->o->progress) {
        fwrite(line, 1, len, w->o->progress);
        fflush(w->o->progress);
    }
    char *p = kf_worker_path(w->job->dir, "progress.jsonl");
    FILE *f = p ? fopen(p, "ab") : NULL;
    if (f) fwrite(line, 1, len, f), fclose(f);
    free(p);
}

static cJSON *llm_json(const worker *w)
{
    const kf_llm_totals *t = &w->llm;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "api", t->api);
    cJSON_AddStringToObject(o, "model", t->model);
    cJSON_AddNumberToObject(o, "calls", t->calls);
    cJSON_AddNumberToObject(o, "failed_calls", t->failed_calls);
    cJSON_AddNumberToObject(o, "requests", t->requests);
    cJSON_AddNumberToObject(o, "input_tokens", (double)t->in_tokens);
    cJSON_AddNumberToObject(o, "output_tokens", (double)t->out_tokens);
    cJSON_AddNumberToObject(o, "cost_usd", t->cost_usd);
    cJSON_AddBoolToObject(o, "price_known", t->price_known);
    cJSON_AddNumberToObject(o, "usd_per_mtok_input", t->in_per_mtok);
    cJSON_AddNumberToObject(o, "usd_per_mtok_output", t->out_per_mtok);
    cJSON_AddNumberToObject(o, "budget_usd", w->o->llm_budget_usd > 0 ? w->o->llm_budget_usd : 0);
    cJSON_AddNumberToObject(o, "max_requests", w->o->llm_max_requests > 0 ? w->o->llm_max_requests : 0);
    return o;
}

void kf_worker_write_result(worker *w, const char *status, const char *key_hex, const char *detail)
{
    const kf_job *j = w->job;
    cJSON *doc = cJSON_CreateObject();
    int best = kf_worker_trusted_best(w), flagged = -1; /* and the fastest flagged one */
    int counts[KF_NODE_STATUS_COUNT] = {0};
    for (int i = 0; i < w->n_nodes; i++) {
        const wnode *n = &w->nodes[i];
        counts[n->status]++;
        if (n->status == KF_NODE_FLAGGED &&
            (flagged < 0 || n->latency_us < w->nodes[flagged].latency_us))
            flagged = i;
    }
    cJSON_AddStringToObject(doc, "status", status);
    cJSON_AddStringToObject(doc, "detail", detail ? detail : "");
    cJSON_AddStringToObject(doc, "op", j->op);
    cJSON_AddStringToObject(doc, "signature", j->signature);
    cJSON_AddStringToObject(doc, "backend", j->backend);
    cJSON_AddStringToObject(doc, "arch", w->arch);
    cJSON_AddNumberToObject(doc, "eager_us", j->eager_us);
    cJSON_AddNumberToObject(doc, "roofline_us", j->roofline_us);
    if (best >= 0) {
        double b = w->nodes[best].latency_us;
        cJSON_AddNumberToObject(doc, "best_us", b);
        cJSON_AddNumberToObject(doc, "speedup", j->eager_us / b);
        cJSON_AddNumberToObject(doc, "best_node", best);
        if (j->roofline_us > 0) cJSON_AddNumberToObject(doc, "roofline_fraction", j->roofline_us / b);
    } else {
        cJSON_AddNullToObject(doc, "best_us");
        cJSON_AddNullToObject(doc, "speedup");
        cJSON_AddNullToObject(doc, "best_node");
    }
    if (flagged >= 0) { /* not trusted, never inserted: shown for review */
        cJSON_AddNumberToObject(doc, "flagged_best_us", w->nodes[flagged].latency_us);
        cJSON_AddNumberToObject(doc, "flagged_best_node", flagged);
    }
    if (key_hex && key_hex[0]) cJSON_AddStringToObject(doc, "cache_key", key_hex);
    else cJSON_AddNullToObject(doc, "cache_key");
    cJSON_AddNumberToObject(doc, "iterations", w->n_nodes);
    cJSON_AddStringToObject(doc, "stop_reason", w->stop_reason);
    cJSON_AddNumberToObject(doc, "wall_s", kf_now_s() - w->t0);
    cJSON_AddNumberToObject(doc, "slept_s", w->slept_s); /* the duty cycle's (--duty) */
    cJSON_AddNumberToObject(doc, "busy_s", kf_worker_busy_s(w)); /* what the duty counts */
    cJSON_AddNumberToObject(doc, "gated_s", w->gated_s); /* of which --gate waits */
    cJSON_AddNumberToObject(doc, "evaluator_restarts", w->ev ? kf_evaluator_restarts(w->ev) : 0);
    cJSON_AddNumberToObject(doc, "seed", (double)j->search.seed);
    cJSON_AddStringToObject(doc, "proposer", j->search.proposer);
    if (w->have_llm) cJSON_AddItemToObject(doc, "llm", llm_json(w));
    cJSON *c = cJSON_AddObjectToObject(doc, "node_counts");
    for (int s = 1; s < KF_NODE_STATUS_COUNT; s++)
        if (counts[s]) cJSON_AddNumberToObject(c, kf_node_status_name(s), counts[s]);
    kf_worker_write_json(j->dir, "result.json", doc);
    cJSON_Delete(doc);
}

void kf_worker_write_llm_usage(const worker *w)
{
    if (!w->have_llm) return;
    cJSON *o = llm_json(w);
    kf_worker_write_json(w->job->dir, "llm_usage.json", o);
    cJSON_Delete(o);
}
