/* What the worker's files share (worker.c: the loop; records.c: the job folder's tree.json,
 * result.json, progress.jsonl, llm_usage.json; replay.c: an earlier run's latencies). */
#ifndef KF_FORGE_WORKER_IMPL_H
#define KF_FORGE_WORKER_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/clock.h"
#include "compile/compiler.h"
#include "forge/eval/eval_check.h"
#include "forge/eval/evaluator.h"
#include "forge/job/job.h"
#include "forge/propose/proposer_llm.h"
#include "forge/search/mcts.h"
#include "forge/worker/worker.h"

/* What the tree records for one candidate, beyond the search's own numbers. */
typedef struct wnode {
    int status;
    double latency_us, compile_s, eval_s, elapsed_s;
    double max_abs_err, max_rel_err;
    int failed_case, replayed;
    char *error;
    kf_candidate cand;
    uint64_t src_hash;
    int memchecked;         /* mc holds a memcheck attempt (winner and flagged CUDA nodes) */
    kf_memcheck_result mc;
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
    double slept_s; /* the duty cycle's sleeps so far (kf_worker_opts.duty), gate waits included */
    double gated_s; /* of which waits at the gate (kf_worker_opts.gate) */
    double offdev_s; /* proposals, and compiles for a device backend: work that leaves the
                      * device alone, which the duty cycle does not count (duty_sleep) */
    int gate_closed; /* the gate's input ended: time without asking */
    char stop_reason[128];
    void *best_blob;  /* the blob of the best verified node so far */
    size_t best_blob_len;
    int best_id;
    int last_start; /* the last node that started a template (-1: none) */
} worker;

/* ---- worker.c ---- */
/* What the duty cycle counts: the wall time less sleeps and off-device work (offdev_s). */
double kf_worker_busy_s(const worker *w);

/* ---- records.c ---- */
/* "<dir>/<name>" (malloc'ed) or NULL */
char *kf_worker_path(const char *dir, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Atomic writes into the job folder (readers, the UI or a replay, never see half a file); a
 * failure is logged and returns -1. */
int kf_worker_write_text(const char *dir, const char *name, const char *text);
int kf_worker_write_json(const char *dir, const char *name, cJSON *doc);
void kf_worker_write_tree(const worker *w);
void kf_worker_write_result(worker *w, const char *status, const char *key_hex, const char *detail);
void kf_worker_write_llm_usage(const worker *w);
/* One JSON line to o->progress and JOB_DIR/progress.jsonl. */
void kf_worker_progress(const worker *w, const char *event, int id, const char *extra_json);
/* The fastest correct node that is not flagged (what result.json calls best), or -1. */
int kf_worker_trusted_best(const worker *w);

/* ---- replay.c ---- */
kf_status kf_worker_replay_load(replay *r, const char *dir, char *err, size_t cap);
void kf_worker_replay_free(replay *r);

#endif
