/* One candidate checked outside a search; compute-sanitizer memcheck (eval_check.h). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/fsio.h"
#include "common/log.h"
#include "common/status.h"
#include "forge/eval/eval_check.h"
#include "forge/eval/evaluator.h"

#define TEXT_MAX ((size_t)4 << 20)
#define MEMCHECK_EXIT_GRACE_MS 60000 /* the tool writes its summary after the child leaves */

/* A whole file as a NUL-terminated string (at most TEXT_MAX bytes), or NULL. */
static char *read_text(const char *path)
{
    char *buf = NULL, err[128];
    size_t n;
    return kf_read_file(path, TEXT_MAX, &buf, &n, err, sizeof err) == KF_OK ? buf : NULL;
}

static int executable(const char *p)
{
    struct stat sb;
    return p && *p && stat(p, &sb) == 0 && S_ISREG(sb.st_mode) && access(p, X_OK) == 0;
}

int kf_memcheck_find(char *out, size_t cap)
{
    const char *env = getenv("KFORGE_COMPUTE_SANITIZER");
    if (env) {
        if (!*env || !strcmp(env, "0")) {
            snprintf(out, cap, "KFORGE_COMPUTE_SANITIZER=%s turns it off", env);
            return 0;
        }
        if (executable(env)) return snprintf(out, cap, "%s", env), 1;
        snprintf(out, cap, "KFORGE_COMPUTE_SANITIZER=%s is not an executable file", env);
        return 0;
    }
    static const char def[] = "/usr/local/cuda/bin/compute-sanitizer";
    if (executable(def)) return snprintf(out, cap, "%s", def), 1;
    const char *path = getenv("PATH");
    while (path && *path) {
        size_t n = strcspn(path, ":");
        char cand[4096];
        if (n && snprintf(cand, sizeof cand, "%.*s/compute-sanitizer", (int)n, path) <
                     (int)sizeof cand &&
            executable(cand))
            return snprintf(out, cap, "%s", cand), 1;
        path += n + (path[n] == ':');
    }
    snprintf(out, cap, "compute-sanitizer not found ($KFORGE_COMPUTE_SANITIZER, %s, PATH)", def);
    return 0;
}

/* memcheck's count from "ERROR SUMMARY: N errors" (-1: none), its first report in detail. */
static int parse_log(const char *log, char *detail, size_t cap)
{
    detail[0] = 0;
    if (!log) return -1;
    const char *sum = strstr(log, "ERROR SUMMARY: ");
    for (const char *l = log; *l;) {
        size_t n = strcspn(l, "\n");
        static const char pre[] = "========= ";
        if (!detail[0] && n > sizeof pre - 1 && !strncmp(l, pre, sizeof pre - 1) &&
            strncmp(l + sizeof pre - 1, "COMPUTE-SANITIZER", 17) &&
            strncmp(l + sizeof pre - 1, "ERROR SUMMARY", 13) && l[sizeof pre - 1] != ' ')
            snprintf(detail, cap, "%.*s", (int)(n - (sizeof pre - 1)), l + sizeof pre - 1);
        l += n + (l[n] == '\n');
    }
    return sum ? atoi(sum + 15) : -1;
}

kf_status kf_memcheck_run(const kf_job *job, const char *exe, const char *blob_path,
                          const char *launch_json, double timeout_s, const char *log_path,
                          kf_eval_result *res, kf_memcheck_result *mc)
{
    if (!mc) return KF_ERR_INVALID;
    memset(mc, 0, sizeof *mc);
    if (!job || !exe || !blob_path || !launch_json || !log_path || !res) {
        snprintf(mc->detail, sizeof mc->detail, "memcheck: missing argument");
        return KF_ERR_INVALID;
    }
    if (strcmp(job->backend, "nvrtc")) {
        snprintf(mc->detail, sizeof mc->detail, "a %s kernel: memcheck is for CUDA kernels",
                 job->backend);
        return KF_OK;
    }
    char tool[4096], err[512];
    if (!kf_memcheck_find(tool, sizeof tool)) {
        snprintf(mc->detail, sizeof mc->detail, "%s", tool);
        return KF_OK;
    }
    static const char env_tool[] = "/usr/bin/env"; /* sets KFORGE_EVAL_EXACT for the child only */
    if (!executable(env_tool)) {
        snprintf(mc->detail, sizeof mc->detail, "%s is missing", env_tool);
        return KF_OK;
    }
    const char *prefix[] = {env_tool, "KFORGE_EVAL_EXACT=1", tool, "--tool", "memcheck",
                            "--log-file", log_path, "--print-limit", "10", NULL};
    kf_evaluator *ev = NULL;
    unlink(log_path);
    if (kf_evaluator_create(job, exe, &ev, err, sizeof err) != KF_OK ||
        kf_evaluator_set_prefix(ev, prefix, MEMCHECK_EXIT_GRACE_MS) != KF_OK) {
        snprintf(mc->detail, sizeof mc->detail, "memcheck: %s", ev ? "bad prefix" : err);
        kf_evaluator_free(ev);
        return KF_OK;
    }
    double t0 = kf_now_s();
    kf_evaluator_run(ev, blob_path, launch_json, timeout_s, res);
    kf_evaluator_free(ev); /* waits for the tool to write its summary */
    mc->seconds = kf_now_s() - t0;
    mc->ran = 1;
    char *log = read_text(log_path);
    struct stat sb;
    mc->errors = parse_log(log, mc->detail, sizeof mc->detail);
    if (!log && stat(log_path, &sb) == 0 && (size_t)sb.st_size > TEXT_MAX) {
        /* only a run with very many errors writes that much: its summary is not to be missed */
        mc->errors = 1;
        snprintf(mc->detail, sizeof mc->detail, "memcheck wrote more than %zu bytes to %s",
                 TEXT_MAX, log_path);
    } else if (mc->errors < 0)
        snprintf(mc->detail, sizeof mc->detail, "no ERROR SUMMARY in %s (the run: %s %s)",
                 log_path, kf_node_status_name(res->status), res->error);
    free(log);
    return KF_OK;
}

static void add_result(cJSON *doc, const kf_eval_result *r)
{
    cJSON_AddStringToObject(doc, "status", kf_node_status_name(r->status));
    cJSON_AddStringToObject(doc, "error", r->error);
    cJSON_AddNumberToObject(doc, "failed_case", r->failed_case);
    cJSON_AddNumberToObject(doc, "max_abs_err", r->max_abs_err);
    cJSON_AddNumberToObject(doc, "max_rel_err", r->max_rel_err);
    cJSON_AddNumberToObject(doc, "median_us", r->median_us);
}

/* Compile, verify, memcheck: what check.json says, in *r and *mc. */
static void check(const kf_job *job, const char *exe, const char *src, const char *launch_json,
                  kf_eval_result *r, kf_memcheck_result *mc, double *eval_s)
{
    char err[512], arch[128], *log = NULL, *blob_path = NULL, *mc_log = NULL;
    void *blob = NULL;
    size_t blob_len = 0;
    kf_launch l;
    kf_compiler_i cc = {0};
    kf_evaluator *ev = NULL;
    memset(r, 0, sizeof *r);
    r->failed_case = -1;
    snprintf(mc->detail, sizeof mc->detail, "not reached");
    if (!kf_source_check_backend(src, job->backend, err, sizeof err)) {
        r->status = KF_NODE_REJECTED;
        snprintf(r->error, sizeof r->error, "%s", err);
        return;
    }
    if (kf_launch_parse(launch_json, &l, err, sizeof err) != KF_OK) {
        r->status = KF_NODE_LOAD_ERROR;
        snprintf(r->error, sizeof r->error, "%s", err);
        return;
    }
    kf_status st = !strcmp(job->backend, "host")
                       ? kf_compiler_host_create(&cc, getenv("CC"))
                       : kf_compiler_nvrtc_create(&cc, getenv("KFORGE_NVRTC"),
                                                  getenv("KFORGE_CUDA_INCLUDE"), err, sizeof err);
    if (st != KF_OK) {
        r->status = KF_NODE_COMPILE_ERROR;
        snprintf(r->error, sizeof r->error, "no %s compiler: %s", job->backend,
                 cc.self ? kf_status_str(st) : err);
        return;
    }
    if ((st = cc.arch(cc.self, job->device_index, arch, sizeof arch)) == KF_OK)
        st = cc.compile(cc.self, src, &l, arch, &blob, &blob_len, &log);
    if (st != KF_OK) {
        r->status = KF_NODE_COMPILE_ERROR;
        snprintf(r->error, sizeof r->error, "%s compile failed: %.400s", cc.name,
                 log ? log : arch);
        goto destroy;
    }
    blob_path = kf_aprintf("%s/check.blob", job->dir);
    mc_log = kf_aprintf("%s/check.memcheck.log", job->dir);
    char werr[256];
    int wrote = blob_path && kf_write_file(blob_path, blob, blob_len, werr, sizeof werr) == KF_OK;
    if (!wrote || !mc_log) {
        r->status = KF_NODE_LOAD_ERROR;
        snprintf(r->error, sizeof r->error, "cannot write the compiled kernel to %s",
                 blob_path ? blob_path : job->dir);
        goto destroy;
    }
    double t0 = kf_now_s();
    if (kf_evaluator_create(job, exe, &ev, err, sizeof err) != KF_OK) {
        r->status = KF_NODE_CRASH;
        snprintf(r->error, sizeof r->error, "%s", err);
        goto destroy;
    }
    kf_evaluator_run(ev, blob_path, launch_json, job->search.candidate_timeout_s, r);
    kf_evaluator_free(ev);
    *eval_s = kf_now_s() - t0;
    if (!kf_node_status_correct(r->status)) {
        snprintf(mc->detail, sizeof mc->detail, "not run: the kernel did not verify");
        goto destroy;
    }
    kf_eval_result mr;
    kf_memcheck_run(job, exe, blob_path, launch_json, 10 * job->search.candidate_timeout_s + 60,
                    mc_log, &mr, mc);
    if (mc->ran && mc->errors > 0) {
        r->status = KF_NODE_OOB;
        snprintf(r->error, sizeof r->error, "compute-sanitizer memcheck: %d errors, the first: %s",
                 mc->errors, mc->detail);
    }
destroy:
    if (blob_path) unlink(blob_path);
    free(blob_path);
    free(mc_log);
    free(blob);
    free(log);
    if (cc.destroy) cc.destroy(cc.self);
}

cJSON *kf_memcheck_json(const kf_memcheck_result *mc)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddBoolToObject(o, "ran", mc->ran);
    if (mc->ran) cJSON_AddNumberToObject(o, "errors", mc->errors);
    else cJSON_AddNullToObject(o, "errors");
    cJSON_AddNumberToObject(o, "seconds", mc->seconds);
    cJSON_AddStringToObject(o, "detail", mc->detail);
    return o;
}

int kf_check_main(const char *exe, const char *job_dir, const char *source_path,
                  const char *launch_path)
{
    char err[512];
    kf_job *job = NULL;
    int code = 2;
    char *src = read_text(source_path), *launch = read_text(launch_path);
    if (!src || !launch) {
        fprintf(stderr, "kforge-worker --check: cannot read %s\n", src ? launch_path : source_path);
        goto out;
    }
    if (kf_job_load(job_dir, &job, err, sizeof err) != KF_OK) {
        fprintf(stderr, "kforge-worker --check: %s\n", err);
        goto out;
    }
    kf_eval_result r;
    kf_memcheck_result mc = {0};
    double eval_s = 0;
    check(job, exe, src, launch, &r, &mc, &eval_s);
    cJSON *doc = cJSON_CreateObject();
    add_result(doc, &r);
    cJSON_AddNumberToObject(doc, "eval_s", eval_s);
    cJSON_AddItemToObject(doc, "memcheck", kf_memcheck_json(&mc));
    char *text = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    char *path = kf_aprintf("%s/check.json", job_dir);
    char werr[256];
    int ok = text && path && kf_write_file(path, text, strlen(text), werr, sizeof werr) == KF_OK;
    if (ok) {
        printf("%s\n", text);
        code = 0;
    } else {
        fprintf(stderr, "kforge-worker --check: cannot write %s\n", path ? path : job_dir);
    }
    free(path);
    cJSON_free(text);
out:
    kf_job_free(job);
    free(src);
    free(launch);
    return code;
}
