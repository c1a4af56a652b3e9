/* kforge-worker: the forge worker process (forge/worker/worker.h). No libtorch.
 *
 *   kforge-worker JOB_DIR [--iterations N] [--seed S] [--margin F] [--time-budget SECONDS]
 *                 [--timeout SECONDS] [--cache DIR | --no-insert] [--timings-from JOB_DIR]
 *                 [--progress] [--sabotage crash,hang,oob [--sabotage-every N]]
 *                 [--proposer builtin|llm|mixed] [--llm-budget-usd USD] [--llm-max-requests N]
 *                 [--starts-only] [--better-than US] [--duty F] [--duty-credit S] [--nice N]
 *                 [--cores N] [--gate] [--parent PID]
 *   kforge-worker --check JOB_DIR SOURCE_FILE LAUNCH_FILE   (one candidate: forge/eval/eval_check.h)
 *   kforge-worker --eval JOB_DIR      (internal: the evaluator child) */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "forge/eval/eval_check.h"
#include "forge/eval/evaluator.h"
#include "forge/worker/worker.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: kforge-worker JOB_DIR [--iterations N] [--seed S] [--margin F]\n"
            "                     [--time-budget SECONDS] [--timeout SECONDS]\n"
            "                     [--cache DIR | --no-insert] [--timings-from JOB_DIR] [--progress]\n"
            "                     [--sabotage crash,hang,oob [--sabotage-every N]]\n"
            "                     [--proposer builtin|llm|mixed] [--llm-budget-usd USD]\n"
            "                     [--llm-max-requests N] [--starts-only] [--better-than US]\n"
            "                     [--duty F] [--duty-credit S]\n"
            "                     [--nice N] [--cores N] [--gate] [--parent PID]\n"
            "Runs the kernel search for one job folder (written by kernel_forge) and inserts a\n"
            "verified winner into the cache. See README, \"Tuning\".\n");
}

static void log_to_stderr(int level, const char *msg, void *user)
{
    (void)user;
    static const char *const names[] = {"debug", "info", "warning", "error"};
    if (level < KF_LOG_INFO) return;
    fprintf(stderr, "kforge-worker: %s: %s\n", names[level & 3], msg);
}

/* --nice / --cores: lower this process's priority and keep it (and every child: the compiler,
 * the evaluator) to the last `cores` CPUs it may use, so that a model beside it keeps the rest. */
static void limit_self(int nice_inc, int cores)
{
    if (nice_inc > 0) {
        errno = 0;
        int cur = getpriority(PRIO_PROCESS, 0);
        if (errno == 0 && setpriority(PRIO_PROCESS, 0, cur + nice_inc) != 0)
            fprintf(stderr, "kforge-worker: --nice %d: %s\n", nice_inc, strerror(errno));
    }
    cpu_set_t set, keep;
    if (cores <= 0 || sched_getaffinity(0, sizeof set, &set) != 0) return;
    CPU_ZERO(&keep);
    for (int c = CPU_SETSIZE - 1, n = 0; c >= 0 && n < cores; c--)
        if (CPU_ISSET(c, &set)) CPU_SET(c, &keep), n++;
    if (sched_setaffinity(0, sizeof keep, &keep) != 0)
        fprintf(stderr, "kforge-worker: --cores %d: %s\n", cores, strerror(errno));
}

static int parse_num(const char *flag, const char *v, double lo, double *out)
{
    char *end;
    errno = 0;
    double d = v ? strtod(v, &end) : 0;
    if (!v || errno || end == v || *end || !(d >= lo)) {
        fprintf(stderr, "kforge-worker: %s needs a number >= %g, not '%s'\n", flag, lo, v ? v : "");
        return -1;
    }
    *out = d;
    return 0;
}

int main(int argc, char **argv)
{
    kf_set_log_callback(log_to_stderr, NULL);
    if (argc == 3 && !strcmp(argv[1], "--eval")) return kf_evaluator_child_main(argv[2]);

    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        fprintf(stderr, "kforge-worker: cannot find its own executable: %s\n", strerror(errno));
        return 1;
    }
    exe[n] = 0;
    if (argc == 5 && !strcmp(argv[1], "--check")) return kf_check_main(exe, argv[2], argv[3], argv[4]);
    kf_worker_opts o = {.exe = exe, .iterations = -1, .seed = -1, .margin = -1,
                        .time_budget_s = -1, .candidate_timeout_s = -1};
    int nice_inc = 0, cores = 0;
    pid_t parent = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double d;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--iterations")) {
            if (parse_num(a, v, 1, &d)) return 2;
            o.iterations = (int)d, i++;
        } else if (!strcmp(a, "--seed")) {
            if (parse_num(a, v, 0, &d)) return 2;
            o.seed = (long long)d, i++;
        } else if (!strcmp(a, "--margin")) {
            if (parse_num(a, v, 0, &d)) return 2;
            o.margin = d, i++;
        } else if (!strcmp(a, "--time-budget")) {
            if (parse_num(a, v, 0, &d)) return 2;
            o.time_budget_s = d, i++;
        } else if (!strcmp(a, "--timeout")) {
            if (parse_num(a, v, 0.01, &d)) return 2;
            o.candidate_timeout_s = d, i++;
        } else if (!strcmp(a, "--sabotage-every")) {
            if (parse_num(a, v, 1, &d)) return 2;
            o.sabotage_every = (int)d, i++;
        } else if (!strcmp(a, "--llm-budget-usd")) {
            if (parse_num(a, v, 0, &d)) return 2;
            o.llm_budget_usd = d, i++;
        } else if (!strcmp(a, "--llm-max-requests")) {
            if (parse_num(a, v, 1, &d)) return 2;
            o.llm_max_requests = (int)d, i++;
        } else if (!strcmp(a, "--proposer") && v) {
            if (strcmp(v, "builtin") && strcmp(v, "llm") && strcmp(v, "mixed")) {
                fprintf(stderr, "kforge-worker: --proposer builtin|llm|mixed, not '%s'\n", v);
                return 2;
            }
            o.proposer = v, i++;
        } else if (!strcmp(a, "--cache") && v) {
            o.cache_dir = v, i++;
        } else if (!strcmp(a, "--no-insert")) {
            o.cache_dir = "";
        } else if (!strcmp(a, "--timings-from") && v) {
            o.timings_from = v, i++;
        } else if (!strcmp(a, "--sabotage") && v) {
            o.sabotage = v, i++;
        } else if (!strcmp(a, "--duty")) {
            if (parse_num(a, v, 0, &d)) return 2;
            o.duty = d, i++;
        } else if (!strcmp(a, "--duty-credit")) {
            if (parse_num(a, v, 0, &d)) return 2;
            o.duty_credit = d, i++;
        } else if (!strcmp(a, "--nice")) {
            if (parse_num(a, v, 0, &d)) return 2;
            nice_inc = (int)d, i++;
        } else if (!strcmp(a, "--cores")) {
            if (parse_num(a, v, 0, &d)) return 2;
            cores = (int)d, i++;
        } else if (!strcmp(a, "--parent")) {
            if (parse_num(a, v, 1, &d)) return 2;
            parent = (pid_t)d, i++;
        } else if (!strcmp(a, "--better-than")) {
            if (parse_num(a, v, 0, &d)) return 2;
            o.better_than_us = d, i++;
        } else if (!strcmp(a, "--starts-only")) {
            o.starts_only = 1;
        } else if (!strcmp(a, "--gate")) {
            o.gate = 1;
        } else if (!strcmp(a, "--progress")) {
            o.progress = stdout;
        } else if (a[0] != '-' && !o.job_dir) {
            o.job_dir = a;
        } else {
            fprintf(stderr, "kforge-worker: unknown or incomplete option '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (!o.job_dir) {
        usage(stderr);
        return 2;
    }
    /* Die with the process that started it: the online tuner's worker must not outlive the
     * model's process (its search would go on beside whatever uses the GPU next), nor a
     * warm-up's its kforge. --parent names it, so that one already gone is noticed too. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (parent > 0 && getppid() != parent) return 1;
    limit_self(nice_inc, cores);
    char err[1024] = "";
    kf_status st = kf_worker_run(&o, err, sizeof err);
    if (st != KF_OK) {
        fprintf(stderr, "kforge-worker: %s: %s\n", o.job_dir, err[0] ? err : kf_status_str(st));
        return 1;
    }
    return 0;
}
