/* The forge worker's search loop (worker.h): MCTS over proposer candidates, each compiled here,
 * judged by the evaluator child, recorded in the job folder; the winner goes to the cache. */
#include "forge/worker/worker_impl.h"

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

#include "cache/cache.h"
#include "common/fsio.h"
#include "common/hex.h"
#include "common/log.h"
#include "common/status.h"
#include "compile/compiler.h"
#include "forge/eval/eval.h"
#include "forge/eval/evaluator.h"
#include "forge/job/job.h"
#include "forge/propose/proposer_llm.h"
#include "forge/search/mcts.h"
#include "forge/propose/proposer.h"

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

/* A CUDA node's blob once under compute-sanitizer memcheck (eval_check.h), the outcome in its
 * record; memcheck errors make it OOB. Skipped (and said so) without the tool. */
static void memcheck_node(worker *w, int id, const void *blob, size_t blob_len)
{
    wnode *n = &w->nodes[id];
    const kf_job *j = w->job;
    if (strcmp(j->backend, "nvrtc")) return;
    char *blob_path = kf_worker_path(j->dir, "candidates/%d.memcheck.blob", id);
    char *log_path = kf_worker_path(j->dir, "candidates/%d.memcheck.log", id);
    char werr[256];
    n->memchecked = 1;
    if (!blob_path || !log_path ||
        kf_write_file(blob_path, blob, blob_len, werr, sizeof werr) != KF_OK) {
        snprintf(n->mc.detail, sizeof n->mc.detail, "cannot write the blob to the job folder");
    } else {
        kf_eval_result r;
        kf_memcheck_run(j, w->o->exe, blob_path, n->cand.launch_json,
                        10 * j->search.candidate_timeout_s + 60, log_path, &r, &n->mc);
        if (n->mc.ran && n->mc.errors > 0) {
            n->status = KF_NODE_OOB;
            free(n->error);
            n->error = kf_aprintf("compute-sanitizer memcheck: %d errors, the first: %s",
                                  n->mc.errors, n->mc.detail);
        }
    }
    if (blob_path) unlink(blob_path);
    free(blob_path);
    free(log_path);
}

/* Compiled candidates of this job folder, JOB_DIR/blobs/<hash>.blob, the hash over the source,
 * the launch record, the architecture and the toolchain: a later search of the same job (the
 * online tuner's deep pass after its ramp pass) does not compile its start points again. */
static char *blob_path_of(const worker *w, const wnode *n)
{
    uint64_t seed = XXH3_64bits(n->cand.launch_json, strlen(n->cand.launch_json)) ^
                    XXH3_64bits(w->arch, strlen(w->arch)) * 31 ^
                    XXH3_64bits(w->toolchain, strlen(w->toolchain)) * 131;
    uint64_t h = XXH3_64bits_withSeed(n->cand.source, strlen(n->cand.source), seed);
    return kf_worker_path(w->job->dir, "blobs/%016llx.blob", (unsigned long long)h);
}

static kf_status cached_blob(const worker *w, const wnode *n, void **blob, size_t *len, char **log)
{
    char *path = blob_path_of(w, n), err[256];
    char *buf = NULL;
    kf_status st = path ? kf_read_file(path, (uint64_t)1 << 30, &buf, len, err, sizeof err)
                        : KF_ERR_NOMEM;
    if (st == KF_OK && !*len) st = KF_ERR_INVALID, free(buf), buf = NULL;
    if (st == KF_OK) {
        *blob = buf;
        *log = kf_aprintf("compiled by an earlier search of this job (%s)", strrchr(path, '/') + 1);
    }
    free(path);
    return st;
}

static void keep_blob(const worker *w, const wnode *n, const void *blob, size_t len)
{
    char *dir = kf_worker_path(w->job->dir, "blobs"), *path = blob_path_of(w, n), err[256];
    if (dir && path && (mkdir(dir, 0700) == 0 || errno == EEXIST))
        kf_write_file(path, blob, len, err, sizeof err); /* a failure only costs a compile later */
    free(dir);
    free(path);
}

/* --gate: the candidate is compiled; its timing waits for the tuner's go (worker.h). */
static void gate_wait(worker *w, int id)
{
    if (!w->o->gate || w->gate_closed || !w->o->progress) return;
    double t = kf_now_s();
    fprintf(w->o->progress, "{\"event\":\"gate\",\"node\":%d}\n", id);
    fflush(w->o->progress);
    char line[64];
    if (!fgets(line, sizeof line, stdin)) w->gate_closed = 1;
    double waited = kf_now_s() - t;
    w->gated_s += waited;
    w->slept_s += waited; /* idle, as a duty sleep is: the next node owes that much less */
}

/* Compile and evaluate the candidate in `n` (node id `id`); fills status, latency, error. */
static void evaluate(worker *w, int id, wnode *n)
{
    const kf_job *j = w->job;
    const char *src = n->cand.source;
    n->src_hash = XXH3_64bits(src, strlen(src));
    char *dir = kf_worker_path(j->dir, "candidates");
    const char *ext = strcmp(n->cand.backend, "nvrtc") ? "c" : "cu";
    char name[64];
    snprintf(name, sizeof name, "%d.%s", id, ext);
    kf_worker_write_text(dir, name, src);
    snprintf(name, sizeof name, "%d.launch.json", id);
    kf_worker_write_text(dir, name, n->cand.launch_json);

    char why[512];
    kf_launch launch;
    void *blob = NULL;
    size_t blob_len = 0;
    char *log = NULL;
    double t = kf_now_s();
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
    kf_status st = cached_blob(w, n, &blob, &blob_len, &log);
    if (st != KF_OK) {
        st = w->cc.compile(w->cc.self, src, &launch, w->arch, &blob, &blob_len, &log);
        if (st == KF_OK) keep_blob(w, n, blob, blob_len);
    }
    n->compile_s = kf_now_s() - t;
    if (strcmp(w->job->backend, "host")) w->offdev_s += n->compile_s; /* NVRTC: the CPU only */
    snprintf(name, sizeof name, "%d.log", id);
    kf_worker_write_text(dir, name, log ? log : "");
    if (st != KF_OK) {
        /* the host compiler's own check of its preprocessor output (macro-built names) */
        int refused = st == KF_ERR_INVALID && log && strstr(log, "compile: refused: ");
        n->status = refused ? KF_NODE_REJECTED : KF_NODE_COMPILE_ERROR;
        n->error = refused ? strdup(strstr(log, "refused: ") + 9)
                           : kf_aprintf("%s compile failed: %.1500s", w->cc.name,
                                        log ? log : kf_status_str(st));
        goto done;
    }
    char *blob_path = kf_worker_path(dir, "%d.blob", id);
    char werr[256];
    if (!blob_path || kf_write_file(blob_path, blob, blob_len, werr, sizeof werr) != KF_OK) {
        n->status = KF_NODE_LOAD_ERROR;
        n->error = strdup("cannot write the compiled blob to the job folder");
        free(blob_path);
        goto done;
    }
    gate_wait(w, id);
    kf_eval_result r;
    t = kf_now_s();
    st = kf_evaluator_run(w->ev, blob_path, n->cand.launch_json, j->search.candidate_timeout_s, &r);
    n->eval_s = kf_now_s() - t;
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
    if (!kf_job_trusts(j, n->latency_us)) {
        n->status = KF_NODE_FLAGGED;
        free(n->error);
        n->error = kf_aprintf("%.3g us (call floor %.3g us) vs eager %.3g us and roofline %.3g us: "
                              "too fast to trust; flagged for review, never inserted",
                              n->latency_us, j->call_floor_us, j->eager_us, j->roofline_us);
        memcheck_node(w, id, blob, blob_len);
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
    e.family = kf_candidate_family(&n->cand, &j->sig); /* docs/architecture.md, "Shape families" */
    e.max_abs_err = n->max_abs_err, e.max_rel_err = n->max_rel_err;
    e.atol = j->atol, e.rtol = j->rtol;
    for (int k = 0; k < j->sig.n_out; k++) { /* a chain: its widest output's */
        if (j->out_atol[k] > e.atol) e.atol = j->out_atol[k];
        if (j->out_rtol[k] > e.rtol) e.rtol = j->out_rtol[k];
    }
    e.chain = j->chain; /* op "kforge::chain": its members and dataflow (chain.h) */
    e.eager_us = j->eager_us, e.kernel_us = n->latency_us;
    e.proposer = (char *)n->cand.proposer, e.job = j->dir, e.disabled_reason = "";
    st = kf_cache_open(&c, j->search.cache_dir, 0);
    if (st == KF_OK) st = kf_cache_insert(c, &e, w->best_blob, w->best_blob_len, key_hex);
    if (st != KF_OK) {
        kf_fail(err, cap, st, "cache %s: %s", j->search.cache_dir,
                c ? kf_cache_errmsg(c) : "out of memory");
        goto out;
    }
out:
    kf_cache_free(c);
    free(e.sig);
    free(e.family);
    return st;
}

/* ---- setup and the loop ---- */

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

    char *cdir = kf_worker_path(w->job->dir, "candidates");
    if (!cdir || (mkdir(cdir, 0700) != 0 && errno != EEXIST)) {
        free(cdir);
        return kf_fail(err, cap, KF_ERR_IO,
                       "cannot create %s/candidates: %s", w->job->dir, strerror(errno));
    }
    free(cdir);
    char *prog = kf_worker_path(w->job->dir, "progress.jsonl");
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

    st = kf_proposer_for_job(w->job, &w->llm, &w->prop, &w->have_llm, err, cap);
    w->have_prop = st == KF_OK;
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
        st = kf_worker_replay_load(&w->rep, o->timings_from, err, cap);
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
    if (j->search.time_budget_s > 0 && kf_now_s() - w->t0 >= j->search.time_budget_s) {
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
    int stall = kf_job_stagnation(&j->search);
    if (stall > 0 && kf_mcts_since_improvement(w->tree, 0.01) >= stall &&
        w->n_nodes - 1 - w->last_start >= stall) {
        snprintf(w->stop_reason, sizeof w->stop_reason,
                 "stagnation (%d candidates without a 1%% gain or a new template)", stall);
        return 1;
    }
    return 0;
}

double kf_worker_busy_s(const worker *w)
{
    return kf_now_s() - w->t0 - w->slept_s - w->offdev_s;
}

/* KFORGE_TUNE_DUTY: the worker is busy (kf_worker_busy_s: on a device backend its evaluations,
 * not its NVRTC compiles, which leave the device alone) at most `duty` of the wall time since it
 * started, plus --duty-credit seconds (KFORGE_TUNE_BURST: the first search does not wait for
 * duty accrued); the rest it sleeps, between nodes (a node's compile and evaluation run at full
 * speed, so timings are not stretched by the limit). What the last node leaves owed is not slept
 * here (result.json has busy_s and slept_s; the online tuner pays it before its next search). */
static void duty_sleep(worker *w)
{
    double duty = w->o->duty;
    if (!(duty > 0 && duty < 1)) return;
    double wall = kf_now_s() - w->t0, busy = kf_worker_busy_s(w);
    double credit = w->o->duty_credit > 0 ? w->o->duty_credit : 0;
    double owe = (busy - credit) / duty - wall; /* busy <= credit + duty x wall */
    if (w->job->search.time_budget_s > 0) { /* never sleep past the time budget */
        double left = w->job->search.time_budget_s - (kf_now_s() - w->t0);
        if (owe > left) owe = left;
    }
    if (owe <= 0) return;
    double t = kf_now_s();
    struct timespec ts = {(time_t)owe, (long)((owe - (double)(time_t)owe) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
    w->slept_s += kf_now_s() - t;
}

static void run_loop(worker *w)
{
    int fruitless = 0; /* proposals refused in a row: a guard against a proposer that loops */
    while (!should_stop(w)) {
        int parent = KF_MCTS_ROOT;
        if (w->o->starts_only) {
            /* the ramp pass: every template's start point below the root, nothing deeper */
        } else if (kf_mcts_select(w->tree, &parent) != KF_OK) {
            snprintf(w->stop_reason, sizeof w->stop_reason, "search space exhausted");
            return;
        }
        wnode *n = new_node(w);
        if (!n) {
            snprintf(w->stop_reason, sizeof w->stop_reason, "out of memory");
            return;
        }
        char why[512];
        double tp = kf_now_s();
        kf_status st = w->prop.propose(w->prop.self, parent, w->n_nodes, &n->cand, why, sizeof why);
        w->offdev_s += kf_now_s() - tp; /* an LLM's answer: the network, not the device */
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
        if (w->o->starts_only && (st != KF_OK || !n->cand.first_start)) {
            kf_candidate_clear(&n->cand);
            free(n->error);
            n->error = NULL;
            snprintf(w->stop_reason, sizeof w->stop_reason, "start candidates evaluated");
            return;
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
        if (n->cand.first_start) w->last_start = id;
        if (id > 0) duty_sleep(w); /* never after the last node: its result is not kept waiting */
        if (!refused) evaluate(w, id, n);
        n->elapsed_s = kf_now_s() - w->t0;
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
        kf_worker_write_tree(w);
        kf_worker_write_llm_usage(w);
        kf_worker_progress(w, "node", id, NULL);
    }
}

/* Why no candidate was correct, for result.json's detail: how many ended how, and the first
 * failure (for a chain it names the member whose output differed). */
static void why_none_correct(const worker *w, char *out, size_t cap)
{
    int counts[KF_NODE_STATUS_COUNT] = {0}, first = -1;
    for (int i = 0; i < w->n_nodes; i++) {
        counts[w->nodes[i].status]++;
        if (first < 0 && w->nodes[i].error && w->nodes[i].error[0]) first = i;
    }
    size_t n = (size_t)snprintf(out, cap, "none of %d candidates was correct (", w->n_nodes);
    const char *sep = "";
    for (int st = 1; st < KF_NODE_STATUS_COUNT && n < cap; st++) {
        if (!counts[st]) continue;
        n += (size_t)snprintf(out + n, cap - n, "%s%d %s", sep, counts[st], kf_node_status_name(st));
        sep = ", ";
    }
    if (n < cap) n += (size_t)snprintf(out + n, cap - n, ")");
    if (first >= 0 && n < cap)
        snprintf(out + n, cap - n, "; node %d (%s): %s", first, w->nodes[first].cand.change,
                 w->nodes[first].error);
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
    kf_worker_replay_free(&w->rep);
    kf_job_free(w->job);
}

kf_status kf_worker_run(const kf_worker_opts *o, char *err, size_t errcap)
{
    worker w = {.o = o, .best_id = -1, .last_start = -1};
    w.t0 = kf_now_s();
    kf_status st = setup(&w, err, errcap);
    if (st != KF_OK) {
        if (w.job) { /* the job is readable: say why it did not run where the caller looks */
            cJSON *doc = cJSON_CreateObject();
            cJSON_AddStringToObject(doc, "status", st == KF_ERR_NOT_FOUND ? "no_template" : "failed");
            cJSON_AddStringToObject(doc, "detail", err);
            cJSON_AddNullToObject(doc, "cache_key");
            cJSON_AddNumberToObject(doc, "iterations", 0);
            cJSON_AddNumberToObject(doc, "eager_us", w.job->eager_us);
            kf_worker_write_json(w.job->dir, "result.json", doc);
            cJSON_Delete(doc);
            if (st == KF_ERR_NOT_FOUND) st = KF_OK; /* a finished job: nothing applies */
        }
        worker_free(&w);
        return st;
    }
    kf_worker_write_tree(&w);
    run_loop(&w);
    char key[KF_KEY_HEX] = "", detail[512] = "";
    const char *status;
    int mc_failed = 0, not_better = 0;
    if (w.best_id >= 0 && o->better_than_us > 0 &&
        w.nodes[w.best_id].latency_us > 0.99 * o->better_than_us) {
        not_better = 1; /* the earlier pass's kernel stays: no memcheck, no insert */
        snprintf(detail, sizeof detail, "none 1%% faster than the earlier pass's kernel (%.3g us)",
                 o->better_than_us);
        w.best_id = -1;
    }
    if (w.best_id >= 0) { /* the winner once under memcheck before it can be inserted */
        int id = w.best_id;
        memcheck_node(&w, id, w.best_blob, w.best_blob_len);
        if (w.nodes[id].status == KF_NODE_OOB) {
            w.best_id = -1;
            mc_failed = 1;
            snprintf(detail, sizeof detail, "the fastest kernel (node %d) failed memcheck: %.400s",
                     id, w.nodes[id].error);
        }
        kf_worker_write_tree(&w);
    }
    if (w.best_id >= 0 && w.job->search.cache_dir[0]) {
        st = insert_winner(&w, key, detail, sizeof detail);
        status = st == KF_OK ? "inserted" : "insert_failed";
        st = KF_OK;
    } else if (w.best_id >= 0) {
        status = "found";
        snprintf(detail, sizeof detail, "not inserted: no cache folder given");
    } else if (not_better) {
        status = "no_better_kernel";
    } else if (mc_failed) {
        status = "no_correct_kernel"; /* the one to insert is not: detail says why */
    } else if (kf_mcts_best(w.tree) >= 0) {
        status = "no_faster_kernel";
        snprintf(detail, sizeof detail, "correct kernels found, none faster than eager by %g%%",
                 w.job->search.margin * 100);
    } else {
        status = "no_correct_kernel";
        why_none_correct(&w, detail, sizeof detail);
    }
    kf_worker_write_result(&w, status, key, detail);
    char extra[256];
    snprintf(extra, sizeof extra, "\"result\":\"%s\",\"cache_key\":\"%s\"", status, key);
    kf_worker_progress(&w, "done", -1, extra);
    worker_free(&w);
    return st;
}
