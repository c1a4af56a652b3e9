/* The forge worker's search loop (worker.h): MCTS over proposer candidates, each compiled here,
 * judged by the evaluator child, recorded in the job folder; the winner goes to the cache. */
#include "worker.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "../cache/cache.h"
#include "../cache/internal.h"
#include "../common/log.h"
#include "../common/status.h"
#include "compiler.h"
#include "eval.h"
#include "evaluator.h"
#include "job.h"
#include "llm.h"
#include "mcts.h"
#include "proposer.h"

/* What the tree records for one candidate, beyond the search's own numbers. */
typedef struct wnode {
    int status;
    double latency_us, compile_s, eval_s, elapsed_s;
    double max_abs_err, max_rel_err;
    int failed_case, replayed;
    char *error;
    kf_candidate cand;
    uint64_t src_hash;
} wnode;

/* A previous run's latencies, for a replay (worker.h). */
typedef struct replay {
    double eager_us, roofline_us; /* the earlier run's (0: none) */
    int n;
    uint64_t *hash;
    double *latency;
    int *correct;
} replay;

typedef struct worker {
    const kf_worker_opts *o;
    kf_job *job;
    kf_compiler_i cc;
    int have_cc;
    char arch[64], toolchain[512];
    kf_proposer_i prop;
    int have_prop;
    kf_llm_totals llm; /* the model's requests, tokens and cost (llm / mixed proposers) */
    int have_llm;
    kf_evaluator *ev;
    kf_mcts *tree;
    wnode *nodes;
    int n_nodes, cap_nodes;
    replay rep;
    double t0;
    char stop_reason[128];
    void *best_blob;  /* the blob of the best verified node so far */
    size_t best_blob_len;
    int best_id;
} worker;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static char *path_in(const char *dir, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *path_in(const char *dir, const char *fmt, ...)
{
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    return kf_aprintf("%s/%s", dir, name);
}

/* Write a whole file through a temp name + rename, so readers (the UI, a replay) never see half. */
static int write_file(const char *path, const void *data, size_t len)
{
    char *tmp = kf_aprintf("%s.tmp%ld", path, (long)getpid());
    if (!tmp) return -1;
    FILE *f = fopen(tmp, "wb");
    int ok = f && fwrite(data, 1, len, f) == len;
    if (f && fclose(f) != 0) ok = 0;
    if (ok && rename(tmp, path) != 0) ok = 0;
    if (!ok) unlink(tmp);
    free(tmp);
    return ok ? 0 : -1;
}

static int write_text(const char *dir, const char *name, const char *text)
{
    char *p = path_in(dir, "%s", name);
    int rc = p ? write_file(p, text ? text : "", text ? strlen(text) : 0) : -1;
    if (rc) KF_WARN("worker: cannot write %s/%s: %s", dir, name, strerror(errno));
    free(p);
    return rc;
}

static int write_json(const char *dir, const char *name, cJSON *doc)
{
    char *text = cJSON_Print(doc);
    int rc = text ? write_text(dir, name, text) : -1;
    free(text);
    return rc;
}

/* ---- replay ---- */

static void replay_free(replay *r)
{
    free(r->hash), free(r->latency), free(r->correct);
    memset(r, 0, sizeof *r);
}

static kf_status replay_load(replay *r, const char *dir, char *err, size_t cap)
{
    char *p = path_in(dir, "tree.json");
    FILE *f = p ? fopen(p, "rb") : NULL;
    free(p);
    if (!f) return kf_fail(err, cap, KF_ERR_IO, "--timings-from %s: no tree.json there", dir);
    char *text = NULL;
    size_t len = 0, capb = 0;
    for (;;) {
        if (len + 65536 > capb) {
            capb = capb ? capb * 2 : 1 << 20;
            if (capb > (64u << 20)) break;
            char *t = realloc(text, capb + 1);
            if (!t) break;
            text = t;
        }
        size_t n = fread(text + len, 1, capb - len, f);
        len += n;
        if (n == 0) break;
    }
    fclose(f);
    cJSON *doc = text ? cJSON_ParseWithLength(text, len) : NULL;
    free(text);
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(doc, "nodes");
    if (!cJSON_IsArray(nodes)) {
        cJSON_Delete(doc);
        return kf_fail(err, cap, KF_ERR_INVALID, "--timings-from %s: tree.json has no nodes", dir);
    }
    const cJSON *eager = cJSON_GetObjectItemCaseSensitive(doc, "eager_us");
    r->eager_us = cJSON_IsNumber(eager) && eager->valuedouble > 0 ? eager->valuedouble : 0;
    const cJSON *roof = cJSON_GetObjectItemCaseSensitive(doc, "roofline_us");
    r->roofline_us = cJSON_IsNumber(roof) && roof->valuedouble > 0 ? roof->valuedouble : 0;
    int n = cJSON_GetArraySize(nodes);
    r->hash = calloc((size_t)n + 1, sizeof *r->hash);
    r->latency = calloc((size_t)n + 1, sizeof *r->latency);
    r->correct = calloc((size_t)n + 1, sizeof *r->correct);
    if (!r->hash || !r->latency || !r->correct) {
        cJSON_Delete(doc);
        replay_free(r);
        return kf_fail(err, cap, KF_ERR_NOMEM, "out of memory");
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, nodes)
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(it, "source_hash");
        const cJSON *lat = cJSON_GetObjectItemCaseSensitive(it, "latency_us");
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(it, "status");
        if (!cJSON_IsNumber(id) || id->valueint < 0 || id->valueint >= n || !cJSON_IsString(h))
            continue;
        int i = id->valueint;
        r->hash[i] = strtoull(h->valuestring, NULL, 16);
        r->latency[i] = cJSON_IsNumber(lat) ? lat->valuedouble : 0;
        r->correct[i] = cJSON_IsString(st) && (!strcmp(st->valuestring, "verified") ||
                                               !strcmp(st->valuestring, "slower") ||
                                               !strcmp(st->valuestring, "flagged"));
    }
    r->n = n;
    cJSON_Delete(doc);
    return KF_OK;
}

/* ---- the tree on disk ---- */

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
    cJSON_AddNumberToObject(o, "visits", m.visits);
    if (isfinite(m.best_us)) cJSON_AddNumberToObject(o, "subtree_best_us", m.best_us);
    else cJSON_AddNullToObject(o, "subtree_best_us");
    cJSON_AddBoolToObject(o, "exhausted", m.exhausted);
    cJSON_AddBoolToObject(o, "pruned", m.pruned);
    return o;
}

static void write_tree(const worker *w)
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
    write_json(j->dir, "tree.json", doc);
    cJSON_Delete(doc);
}

/* The fastest correct node that is not flagged (what result.json calls best), or -1. */
static int trusted_best(const worker *w)
{
    int best = -1;
    for (int i = 0; i < w->n_nodes; i++) {
        const wnode *n = &w->nodes[i];
        if (n->status != KF_NODE_VERIFIED && n->status != KF_NODE_SLOWER) continue;
        if (best < 0 || n->latency_us < w->nodes[best].latency_us) best = i;
    }
    return best;
}

static void progress(const worker *w, const char *event, int id, const char *extra_json)
{
    int best = trusted_best(w);
    char line[1024];
    int n = snprintf(line, sizeof line,
                     "{\"event\":\"%s\",\"node\":%d,\"status\":\"%s\",\"latency_us\":%.4g,"
                     "\"best_us\":%.4g,\"eager_us\":%.4g,\"iteration\":%d,\"iterations\":%d,"
                     "\"elapsed_s\":%.3f%s%s}\n",
                     event, id, id >= 0 ? kf_node_status_name(w->nodes[id].status) : "",
                     id >= 0 && kf_node_status_correct(w->nodes[id].status) ? w->nodes[id].latency_us : 0,
                     best >= 0 ? w->nodes[best].latency_us : 0, w->job->eager_us, w->n_nodes,
                     w->job->search.iterations, now_s() - w->t0, extra_json ? "," : "",
                     extra_json ? extra_json : "");
    if (n < 0) return;
    size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    if (w->o->progress) {
        fwrite(line, 1, len, w->o->progress);
        fflush(w->o->progress);
    }
    char *p = path_in(w->job->dir, "progress.jsonl");
    FILE *f = p ? fopen(p, "ab") : NULL;
    if (f) fwrite(line, 1, len, f), fclose(f);
    free(p);
}

/* ---- one candidate ---- */

static wnode *new_node(worker *w)
{
    if (w->n_nodes == w->cap_nodes) {
        int cap = w->cap_nodes ? w->cap_nodes * 2 : 64;
        wnode *n = realloc(w->nodes, (size_t)cap * sizeof *n);
        if (!n) return NULL;
        w->nodes = n;
        w->cap_nodes = cap;
    }
    wnode *n = &w->nodes[w->n_nodes];
    memset(n, 0, sizeof *n);
    n->failed_case = -1;
    return n;
}

/* Compile and evaluate the candidate in `n` (node id `id`); fills status, latency, error. */
static void evaluate(worker *w, int id, wnode *n)
{
    const kf_job *j = w->job;
    const char *src = n->cand.source;
    n->src_hash = XXH3_64bits(src, strlen(src));
    char *dir = path_in(j->dir, "candidates");
    const char *ext = strcmp(n->cand.backend, "nvrtc") ? "c" : "cu";
    char name[64];
    snprintf(name, sizeof name, "%d.%s", id, ext);
    write_text(dir, name, src);
    snprintf(name, sizeof name, "%d.launch.json", id);
    write_text(dir, name, n->cand.launch_json);

    char why[512];
    kf_launch launch;
    void *blob = NULL;
    size_t blob_len = 0;
    char *log = NULL;
    double t = now_s();
    if (!kf_source_check_backend(src, w->job->backend, why, sizeof why)) {
        n->status = KF_NODE_REJECTED;
        n->error = strdup(why);
        goto done;
    }
    if (kf_launch_parse(n->cand.launch_json, &launch, why, sizeof why) != KF_OK) {
        n->status = KF_NODE_LOAD_ERROR;
        n->error = strdup(why);
        goto done;
    }
    kf_status st = w->cc.compile(w->cc.self, src, &launch, w->arch, &blob, &blob_len, &log);
    n->compile_s = now_s() - t;
    snprintf(name, sizeof name, "%d.log", id);
    write_text(dir, name, log ? log : "");
    if (st != KF_OK) {
        /* the host compiler's own check of its preprocessor output (macro-built names) */
        int refused = st == KF_ERR_INVALID && log && strstr(log, "compile: refused: ");
        n->status = refused ? KF_NODE_REJECTED : KF_NODE_COMPILE_ERROR;
        n->error = refused ? strdup(strstr(log, "refused: ") + 9)
                           : kf_aprintf("%s compile failed: %.1500s", w->cc.name,
                                        log ? log : kf_status_str(st));
        goto done;
    }
    char *blob_path = path_in(dir, "%d.blob", id);
    if (!blob_path || write_file(blob_path, blob, blob_len) != 0) {
        n->status = KF_NODE_LOAD_ERROR;
        n->error = strdup("cannot write the compiled blob to the job folder");
        free(blob_path);
        goto done;
    }
    kf_eval_result r;
    t = now_s();
    st = kf_evaluator_run(w->ev, blob_path, n->cand.launch_json, j->search.candidate_timeout_s, &r);
    n->eval_s = now_s() - t;
    unlink(blob_path);
    free(blob_path);
    n->status = r.status;
    n->latency_us = r.median_us;
    n->max_abs_err = r.max_abs_err;
    n->max_rel_err = r.max_rel_err;
    n->failed_case = r.failed_case;
    if (r.error[0]) n->error = strdup(r.error);
    if (!kf_node_status_correct(n->status)) goto done;

    if (w->rep.n && id < w->rep.n && w->rep.hash[id] == n->src_hash && w->rep.correct[id] &&
        w->rep.latency[id] > 0) {
        n->latency_us = w->rep.latency[id];
        n->replayed = 1;
    }
    /* Not trusted: more than 10x eager, or faster than moving the bytes at copy bandwidth. */
    if (n->latency_us <= 0 || n->latency_us * 10 < j->eager_us ||
        (j->roofline_us > 0 && n->latency_us < 0.97 * j->roofline_us)) {
        n->status = KF_NODE_FLAGGED;
        free(n->error);
        n->error = kf_aprintf("%.3g us vs eager %.3g us and roofline %.3g us: too fast to trust; "
                              "flagged for review, never inserted",
                              n->latency_us, j->eager_us, j->roofline_us);
    } else if (n->latency_us > j->eager_us * (1.0 - j->search.margin)) {
        n->status = KF_NODE_SLOWER;
    } else {
        n->status = KF_NODE_VERIFIED;
        if (w->best_id < 0 || n->latency_us < w->nodes[w->best_id].latency_us) {
            free(w->best_blob);
            w->best_blob = blob;
            w->best_blob_len = blob_len;
            w->best_id = id;
            blob = NULL;
        }
    }
done:
    free(blob);
    free(log);
    free(dir);
}

/* ---- the cache ---- */

static kf_status insert_winner(worker *w, char key_hex[KF_KEY_HEX], char *err, size_t cap)
{
    const kf_job *j = w->job;
    const wnode *n = &w->nodes[w->best_id];
    kf_cache *c = NULL;
    kf_cache_entry e = {0};
    size_t hexlen = strlen(j->sig_hex);
    kf_status st = KF_ERR_NOMEM;
    e.sig_len = (uint32_t)(hexlen / 2);
    e.sig = malloc(e.sig_len ? e.sig_len : 1);
    if (!e.sig) goto out;
    if (hexlen % 2 || kf_hex_decode(j->sig_hex, hexlen, e.sig)) {
        st = kf_fail(err, cap, KF_ERR_INVALID, "job.json: sig_hex is not hex");
        goto out;
    }
    e.op = j->op, e.signature = j->signature, e.backend = j->backend, e.arch = w->arch;
    e.toolchain = w->toolchain, e.torch_version = j->torch_version;
    e.plugin_version = KF_VERSION_STRING, e.source = n->cand.source;
    e.launch = n->cand.launch_json, e.compile_options = w->toolchain;
    e.outputs = j->outputs_layout;
    e.max_abs_err = n->max_abs_err, e.max_rel_err = n->max_rel_err;
    e.atol = j->atol, e.rtol = j->rtol;
    e.eager_us = j->eager_us, e.kernel_us = n->latency_us;
    e.proposer = (char *)n->cand.proposer, e.job = j->dir, e.disabled_reason = "";
    st = kf_cache_open(&c, j->search.cache_dir, 0);
    if (st == KF_OK) st = kf_cache_insert(c, &e, w->best_blob, w->best_blob_len);
    if (st != KF_OK) {
        kf_fail(err, cap, st, "cache %s: %s", j->search.cache_dir,
                c ? kf_cache_errmsg(c) : "out of memory");
        goto out;
    }
    /* the key is computed by the insert; list to learn it */
    kf_key_inputs in = {e.sig, e.sig_len, e.backend, e.arch, e.toolchain, e.torch_version,
                        e.plugin_version, KF_CONTRACT_VERSION};
    kf_cache_key_hex(kf_cache_key_compute(&in), key_hex);
out:
    kf_cache_free(c);
    free(e.sig);
    return st;
}

static cJSON *llm_json(const worker *w);

static void write_result(worker *w, const char *status, const char *key_hex, const char *detail)
{
    const kf_job *j = w->job;
    cJSON *doc = cJSON_CreateObject();
    int best = trusted_best(w), flagged = -1; /* and the fastest flagged one */
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
    cJSON_AddNumberToObject(doc, "wall_s", now_s() - w->t0);
    cJSON_AddNumberToObject(doc, "evaluator_restarts", w->ev ? kf_evaluator_restarts(w->ev) : 0);
    cJSON_AddNumberToObject(doc, "seed", (double)j->search.seed);
    cJSON_AddStringToObject(doc, "proposer", j->search.proposer);
    if (w->have_llm) cJSON_AddItemToObject(doc, "llm", llm_json(w));
    cJSON *c = cJSON_AddObjectToObject(doc, "node_counts");
    for (int s = 1; s < KF_NODE_STATUS_COUNT; s++)
        if (counts[s]) cJSON_AddNumberToObject(c, kf_node_status_name(s), counts[s]);
    write_json(j->dir, "result.json", doc);
    cJSON_Delete(doc);
}

/* ---- setup and the loop ---- */

/* builtin, llm, or both in one tree (DESIGN.md "MCTS"); fills w->prop */
static kf_status make_proposer(worker *w, char *err, size_t cap)
{
    const kf_job_search *s = &w->job->search;
    kf_proposer_i b, l;
    kf_status st;
    if (strcmp(s->proposer, "llm")) {
        st = kf_proposer_builtin_create(&w->job->sig, w->job->backend, s->seed, &b, err, cap);
        /* mixed without a template still has the model */
        if (st != KF_OK && (st != KF_ERR_NOT_FOUND || strcmp(s->proposer, "mixed"))) return st;
        if (st != KF_OK) {
            KF_INFO("worker: %s; the llm proposes alone", err);
            st = kf_proposer_llm_create(w->job, &w->llm, &w->prop, err, cap);
            if (st == KF_OK) w->have_prop = w->have_llm = 1;
            return st;
        }
        if (!strcmp(s->proposer, "builtin")) {
            w->prop = b, w->have_prop = 1;
            return KF_OK;
        }
    }
    st = kf_proposer_llm_create(w->job, &w->llm, &l, err, cap);
    if (st != KF_OK) {
        if (strcmp(s->proposer, "llm") && b.destroy) b.destroy(b.self);
        return st;
    }
    w->have_llm = 1;
    if (!strcmp(s->proposer, "llm")) {
        w->prop = l, w->have_prop = 1;
        return KF_OK;
    }
    st = kf_proposer_mixed_create(b, l, 2, &w->prop, err, cap);
    if (st != KF_OK) {
        b.destroy(b.self), l.destroy(l.self);
        return st;
    }
    w->have_prop = 1;
    return KF_OK;
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

static void write_llm_usage(const worker *w)
{
    if (!w->have_llm) return;
    cJSON *o = llm_json(w);
    write_json(w->job->dir, "llm_usage.json", o);
    cJSON_Delete(o);
}

static kf_status setup(worker *w, char *err, size_t cap)
{
    const kf_worker_opts *o = w->o;
    kf_status st = kf_job_load(o->job_dir, &w->job, err, cap);
    if (st != KF_OK) return st;
    kf_job_search *s = &w->job->search;
    if (o->iterations >= 0) s->iterations = o->iterations;
    if (o->seed >= 0) s->seed = (uint64_t)o->seed;
    if (o->margin >= 0) s->margin = o->margin;
    if (o->time_budget_s >= 0) s->time_budget_s = o->time_budget_s;
    if (o->candidate_timeout_s > 0) s->candidate_timeout_s = o->candidate_timeout_s;
    if (o->cache_dir) {
        char *d = strdup(o->cache_dir);
        if (!d) return kf_fail(err, cap, KF_ERR_NOMEM, "out of memory");
        free(s->cache_dir);
        s->cache_dir = d;
    }
    if (o->proposer && o->proposer[0]) {
        char *p = strdup(o->proposer);
        if (!p) return kf_fail(err, cap, KF_ERR_NOMEM, "out of memory");
        free(s->proposer);
        s->proposer = p;
    }
    if (strcmp(s->proposer, "builtin") && strcmp(s->proposer, "llm") && strcmp(s->proposer, "mixed"))
        return kf_fail(err, cap, KF_ERR_INVALID, "proposer \"%s\": builtin, llm or mixed",
                       s->proposer);

    char *cdir = path_in(w->job->dir, "candidates");
    if (!cdir || (mkdir(cdir, 0700) != 0 && errno != EEXIST)) {
        free(cdir);
        return kf_fail(err, cap, KF_ERR_IO,
                       "cannot create %s/candidates: %s", w->job->dir, strerror(errno));
    }
    free(cdir);
    char *prog = path_in(w->job->dir, "progress.jsonl");
    if (prog) unlink(prog); /* a rerun starts a fresh progress log */
    free(prog);

    if (!strcmp(w->job->backend, "host")) {
        st = kf_compiler_host_create(&w->cc, getenv("CC"));
        if (st != KF_OK) return kf_fail(err, cap, st, "host compiler: %s", kf_status_str(st));
    } else {
        st = kf_compiler_nvrtc_create(&w->cc, getenv("KFORGE_NVRTC"), getenv("KFORGE_CUDA_INCLUDE"),
                                      err, cap);
        if (st != KF_OK) return st;
    }
    w->have_cc = 1;
    st = w->cc.arch(w->cc.self, w->job->device_index, w->arch, sizeof w->arch);
    if (st != KF_OK)
        return kf_fail(err, cap, st, "%s: target architecture: %s", w->cc.name, w->arch);
    st = w->cc.toolchain(w->cc.self, w->toolchain, sizeof w->toolchain);
    if (st != KF_OK) return kf_fail(err, cap, st, "%s: toolchain: %s", w->cc.name, w->toolchain);

    st = make_proposer(w, err, cap);
    if (st != KF_OK) return st;
    if (o->sabotage && o->sabotage[0]) {
        kf_proposer_i wrapped;
        st = kf_proposer_sabotage_create(w->prop, o->sabotage,
                                         o->sabotage_every > 0 ? o->sabotage_every : 3, &wrapped,
                                         err, cap);
        if (st != KF_OK) return st; /* the inner proposer is still ours to destroy */
        w->prop = wrapped;
    }
    if (o->timings_from && o->timings_from[0]) {
        st = replay_load(&w->rep, o->timings_from, err, cap);
        if (st != KF_OK) return st;
        /* a node's status (verified, slower, flagged) is judged against eager and the roofline:
         * replay those too */
        if (w->rep.eager_us > 0) w->job->eager_us = w->rep.eager_us;
        if (w->rep.roofline_us > 0) w->job->roofline_us = w->rep.roofline_us;
    }
    kf_mcts_params p = kf_mcts_default_params(s->iterations, s->seed);
    st = kf_mcts_create(&p, &w->tree);
    if (st != KF_OK) return kf_fail(err, cap, st, "out of memory");
    return kf_evaluator_create(w->job, o->exe, &w->ev, err, cap);
}

static int should_stop(worker *w)
{
    const kf_job *j = w->job;
    if (w->n_nodes >= j->search.iterations) {
        snprintf(w->stop_reason, sizeof w->stop_reason, "iteration budget (%d)", j->search.iterations);
        return 1;
    }
    if (j->search.time_budget_s > 0 && now_s() - w->t0 >= j->search.time_budget_s) {
        snprintf(w->stop_reason, sizeof w->stop_reason, "time budget (%g s)", j->search.time_budget_s);
        return 1;
    }
    if (w->have_llm && w->o->llm_budget_usd > 0 && w->llm.cost_usd >= w->o->llm_budget_usd) {
        snprintf(w->stop_reason, sizeof w->stop_reason, "llm budget ($%.4g of $%.4g)",
                 w->llm.cost_usd, w->o->llm_budget_usd);
        return 1;
    }
    if (w->have_llm && w->o->llm_max_requests > 0 && w->llm.requests >= w->o->llm_max_requests) {
        snprintf(w->stop_reason, sizeof w->stop_reason, "llm request limit (%d)",
                 w->o->llm_max_requests);
        return 1;
    }
    if (w->best_id >= 0 && j->roofline_us > 0 &&
        w->nodes[w->best_id].latency_us <= 1.1 * j->roofline_us) {
        snprintf(w->stop_reason, sizeof w->stop_reason, "within 10%% of the roofline");
        return 1;
    }
    return 0;
}

static void run_loop(worker *w)
{
    int fruitless = 0; /* proposals refused in a row: a guard against a proposer that loops */
    while (!should_stop(w)) {
        int parent;
        if (kf_mcts_select(w->tree, &parent) != KF_OK) {
            snprintf(w->stop_reason, sizeof w->stop_reason, "search space exhausted");
            return;
        }
        wnode *n = new_node(w);
        if (!n) {
            snprintf(w->stop_reason, sizeof w->stop_reason, "out of memory");
            return;
        }
        char why[512];
        kf_status st = w->prop.propose(w->prop.self, parent, w->n_nodes, &n->cand, why, sizeof why);
        int refused = st != KF_OK && st != KF_ERR_NOT_FOUND && st != KF_ERR_NOMEM &&
                      !strcmp(n->cand.proposer, "llm");
        if (refused) { /* the model's answer (or its absence) costs one node, shown with why */
            free(n->cand.source), free(n->cand.launch_json);
            n->cand.source = strdup("");
            n->cand.launch_json = strdup("{}");
            n->error = strdup(why);
            n->status = KF_NODE_REJECTED;
            if (!n->cand.source || !n->cand.launch_json || !n->error) st = KF_ERR_NOMEM;
            else st = KF_OK;
        }
        if (st != KF_OK) {
            kf_candidate_clear(&n->cand);
            if (st != KF_ERR_NOT_FOUND) KF_WARN("worker: proposer: %s", why);
            kf_mcts_exhausted(w->tree, parent);
            if (++fruitless > 100000) {
                snprintf(w->stop_reason, sizeof w->stop_reason, "proposer stopped proposing");
                return;
            }
            continue;
        }
        fruitless = 0;
        int id = w->n_nodes;
        if (!refused) evaluate(w, id, n);
        n->elapsed_s = now_s() - w->t0;
        /* flagged kernels are correct, just not trusted to be inserted: the search may use them */
        int ok = kf_node_status_correct(n->status);
        if (kf_mcts_add(w->tree, parent, ok, ok ? n->latency_us : 0) != id) {
            kf_candidate_clear(&n->cand);
            free(n->error);
            snprintf(w->stop_reason, sizeof w->stop_reason, "out of memory");
            return;
        }
        w->n_nodes++;
        if (w->prop.feedback)
            w->prop.feedback(w->prop.self, id, kf_node_status_name(n->status), n->latency_us,
                             n->error ? n->error : "");
        write_tree(w);
        write_llm_usage(w);
        progress(w, "node", id, NULL);
    }
}

static void worker_free(worker *w)
{
    for (int i = 0; i < w->n_nodes; i++) {
        kf_candidate_clear(&w->nodes[i].cand);
        free(w->nodes[i].error);
    }
    free(w->nodes);
    free(w->best_blob);
    kf_evaluator_free(w->ev);
    kf_mcts_free(w->tree);
    if (w->have_prop && w->prop.destroy) w->prop.destroy(w->prop.self);
    if (w->have_cc && w->cc.destroy) w->cc.destroy(w->cc.self);
    replay_free(&w->rep);
    kf_job_free(w->job);
}

kf_status kf_worker_run(const kf_worker_opts *o, char *err, size_t errcap)
{
    worker w = {.o = o, .best_id = -1};
    w.t0 = now_s();
    kf_status st = setup(&w, err, errcap);
    if (st != KF_OK) {
        if (w.job) { /* the job is readable: say why it did not run where the caller looks */
            cJSON *doc = cJSON_CreateObject();
            cJSON_AddStringToObject(doc, "status", st == KF_ERR_NOT_FOUND ? "no_template" : "failed");
            cJSON_AddStringToObject(doc, "detail", err);
            cJSON_AddNullToObject(doc, "cache_key");
            cJSON_AddNumberToObject(doc, "iterations", 0);
            cJSON_AddNumberToObject(doc, "eager_us", w.job->eager_us);
            write_json(w.job->dir, "result.json", doc);
            cJSON_Delete(doc);
            if (st == KF_ERR_NOT_FOUND) st = KF_OK; /* a finished job: nothing applies */
        }
        worker_free(&w);
        return st;
    }
    write_tree(&w);
    run_loop(&w);
    char key[KF_KEY_HEX] = "", detail[512] = "";
    const char *status;
    if (w.best_id >= 0 && w.job->search.cache_dir[0]) {
        st = insert_winner(&w, key, detail, sizeof detail);
        status = st == KF_OK ? "inserted" : "insert_failed";
        st = KF_OK;
    } else if (w.best_id >= 0) {
        status = "found";
        snprintf(detail, sizeof detail, "not inserted: no cache folder given");
    } else if (kf_mcts_best(w.tree) >= 0) {
        status = "no_faster_kernel";
        snprintf(detail, sizeof detail, "correct kernels found, none faster than eager by %g%%",
                 w.job->search.margin * 100);
    } else {
        status = "no_correct_kernel";
    }
    write_result(&w, status, key, detail);
    char extra[256];
    snprintf(extra, sizeof extra, "\"result\":\"%s\",\"cache_key\":\"%s\"", status, key);
    progress(&w, "done", -1, extra);
    worker_free(&w);
    return st;
}
