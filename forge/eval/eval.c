/* Verifying and timing a candidate (eval.h): the flow that both backends share. Where buffers
 * live and how a kernel runs is the backend's (eval_host.c, eval_cuda.c); comparing values is
 * eval_compare.c's. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "forge/eval/eval_impl.h"

static const char *const status_names[KF_NODE_STATUS_COUNT] = {
    [KF_NODE_PENDING] = "pending",         [KF_NODE_VERIFIED] = "verified",
    [KF_NODE_SLOWER] = "slower",           [KF_NODE_FLAGGED] = "flagged",
    [KF_NODE_REJECTED] = "rejected",       [KF_NODE_COMPILE_ERROR] = "compile_error",
    [KF_NODE_LOAD_ERROR] = "load_error",   [KF_NODE_WRONG] = "wrong",
    [KF_NODE_UNTOUCHED] = "untouched",     [KF_NODE_INPUT_WRITTEN] = "input_written",
    [KF_NODE_OOB] = "oob",                 [KF_NODE_CRASH] = "crash",
    [KF_NODE_TIMEOUT] = "timeout",
};

/* appended to "case N (random" for a placement (the end one is the default, unnamed) */
static const char *const place_names[EV_PLACES] = {", data at the end", ", data at the start"};

const char *kf_node_status_name(int status)
{
    return status >= 0 && status < KF_NODE_STATUS_COUNT ? status_names[status] : "unknown";
}

int kf_node_status_correct(int status)
{
    return status == KF_NODE_VERIFIED || status == KF_NODE_SLOWER || status == KF_NODE_FLAGGED;
}

/* ---- create / free ---- */

/* The alignment a buffer's data pointer gets: the recorded one, at least the element's (what
 * torch guarantees when nothing was recorded). */
static int buffer_align(const kf_job_tensor *t)
{
    int es = kf_dtype_size(t->dtype);
    int a = t->align > 0 ? t->align : es;
    if (a < es && es <= 16) a = es;
    return a > 0 ? a : 1;
}

void kf_eval_free(kf_eval *ev)
{
    if (!ev) return;
    const kf_job *job = ev->job;
    if (ev->be) {
        for (int i = 0; i < KF_JOB_MAX_TENSORS; i++)
            if (ev->in[i].arg) ev->be->release(ev, &ev->in[i]);
        for (int j = 0; j < KF_JOB_MAX_OUTPUTS; j++)
            if (ev->out[j].arg) ev->be->release(ev, &ev->out[j]);
        ev->be->close(ev);
    }
    for (int c = 0; c < job->n_cases; c++) {
        for (int i = 0; i < KF_JOB_MAX_TENSORS; i++)
            if (!ev->case_in_shared[c][i]) free(ev->case_in[c][i]);
        for (int j = 0; j < KF_JOB_MAX_OUTPUTS; j++) free(ev->case_out[c][j]);
    }
    free(ev);
}

size_t kf_ev_page(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    return pg > 0 ? (size_t)pg : 4096;
}

size_t kf_ev_case_len(uint64_t span)
{
    size_t pg = kf_ev_page();
    return ((size_t)(span ? span : 1) + pg - 1) / pg * pg;
}

/* Read one case file into a fresh buffer: whole pages (at least one, so empty spans are fine),
 * which the CUDA backend pins in place for fast copies. */
static kf_status load_case(const char *path, const kf_job_tensor *t, unsigned char **out,
                           char *err, size_t errcap)
{
    uint64_t span = kf_job_span_bytes(t, NULL);
    if (span > SIZE_MAX - 2 * kf_ev_page()) {
        snprintf(err, errcap, "case file %s: too large for this machine", path);
        return KF_ERR_NOMEM;
    }
    *out = aligned_alloc(kf_ev_page(), kf_ev_case_len(span));
    if (!*out) {
        snprintf(err, errcap, "out of memory for case file %s (%llu bytes)", path,
                 (unsigned long long)span);
        return KF_ERR_NOMEM;
    }
    return kf_job_read_case_file(path, *out, span, err, errcap);
}

/* An earlier case whose input i is the same file as case c's, or -1. */
static int earlier_case(const kf_job *job, int c, int i)
{
    for (int k = 0; k < c; k++)
        if (!strcmp(job->cases[k].in_path[i], job->cases[c].in_path[i])) return k;
    return -1;
}

kf_status kf_eval_create(const kf_job *job, kf_eval **out, char *err, size_t errcap)
{
    char dummy[1];
    if (!err || !errcap) err = dummy, errcap = sizeof dummy;
    err[0] = 0;
    if (out) *out = NULL;
    if (!job || !out || !job->backend) {
        snprintf(err, errcap, "eval: missing argument");
        return KF_ERR_INVALID;
    }
    const ev_backend *be = !strcmp(job->backend, "host")    ? &kf_ev_host_backend
                           : !strcmp(job->backend, "nvrtc") ? &kf_ev_cuda_backend
                                                            : NULL;
    if (!be) {
        snprintf(err, errcap, "eval: unknown backend \"%s\"", job->backend);
        return KF_ERR_UNSUPPORTED;
    }
    kf_eval *ev = calloc(1, sizeof *ev);
    if (!ev) {
        snprintf(err, errcap, "eval: out of memory");
        return KF_ERR_NOMEM;
    }
    ev->job = job;
    ev->cur_case = ev->cur_place = -1;
    ev->n_places = EV_PLACES;
    const char *exact = getenv("KFORGE_EVAL_EXACT");
    ev->exact = exact && !strcmp(exact, "1");
    kf_status st;
    /* the case files first: a broken job should not cost a CUDA initialization */
    for (int c = 0; c < job->n_cases; c++) {
        for (int i = 0; i < job->sig.n_in; i++) {
            const int same = earlier_case(job, c, i);
            if (same >= 0) {
                ev->case_in[c][i] = ev->case_in[same][i];
                ev->case_in_shared[c][i] = 1;
            } else if ((st = load_case(job->cases[c].in_path[i], &job->sig.in[i], &ev->case_in[c][i],
                                       err, errcap))) {
                goto free_ev;
            }
        }
        for (int j = 0; j < job->sig.n_out; j++)
            if ((st = load_case(job->cases[c].out_path[j], &job->sig.out[j],
                                &ev->case_out[c][j], err, errcap)))
                goto free_ev;
    }
    if ((st = be->open(ev, err, errcap))) goto free_ev;
    ev->be = be;
    for (int i = 0; i < job->sig.n_in; i++) {
        ev->in[i].span = kf_job_span_bytes(&job->sig.in[i], NULL);
        ev->in[i].align = buffer_align(&job->sig.in[i]);
        if ((st = be->alloc(ev, &ev->in[i], err, errcap))) goto free_ev;
    }
    for (int j = 0; j < job->sig.n_out; j++) {
        if (job->sig.out_alias[j]) continue;
        ev->out[j].span = kf_job_span_bytes(&job->sig.out[j], NULL);
        ev->out[j].align = buffer_align(&job->sig.out[j]);
        if ((st = be->alloc(ev, &ev->out[j], err, errcap))) goto free_ev;
    }
    if (be->allocated) be->allocated(ev);
    *out = ev;
    return KF_OK;

free_ev:
    kf_eval_free(ev);
    return st;
}

static const char *case_kind(const kf_job *job, int c)
{
    return job->cases[c].recorded ? "recorded" : "random";
}

/* ---- faults in a guard page (async-signal-safe: no stdio, no allocation) ---- */

typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;

static void put_s(sbuf *b, const char *s)
{
    while (*s && b->n + 1 < b->cap) b->p[b->n++] = *s++;
    b->p[b->n] = 0;
}

static void put_u(sbuf *b, uint64_t v)
{
    char d[24];
    int k = 0;
    do d[k++] = (char)('0' + v % 10), v /= 10;
    while (v);
    while (k && b->n + 1 < b->cap) b->p[b->n++] = d[--k];
    b->p[b->n] = 0;
}

int kf_eval_fault_describe(const kf_eval *ev, const void *addr, char *msg, size_t cap,
                           int *failed_case)
{
    /* only while a kernel runs: a fault of our own code is a crash, not the candidate's OOB */
    if (!ev || ev->be != &kf_ev_host_backend || ev->cur_place < 0 || !msg || !cap) return 0;
    const kf_job_sig *sig = &ev->job->sig;
    for (int b = 0; b < sig->n_in + sig->n_out; b++) {
        int is_in = b < sig->n_in, j = b - sig->n_in;
        if (!is_in && sig->out_alias[j]) continue;
        const ev_buf *buf = is_in ? &ev->in[b] : &ev->out[j];
        int64_t where;
        if (!kf_ev_host_guard_at(buf, (uintptr_t)addr, &where)) continue;
        int c = ev->cur_case, p = ev->cur_place;
        sbuf o = {msg, 0, cap};
        msg[0] = 0;
        if (c >= 0 && c < ev->job->n_cases) {
            put_s(&o, "case "), put_u(&o, (uint64_t)c), put_s(&o, " (");
            put_s(&o, case_kind(ev->job, c));
            if (p > EV_PLACE_END && p < EV_PLACES) put_s(&o, place_names[p]);
            put_s(&o, ")");
        } else {
            put_s(&o, "timed run");
        }
        put_s(&o, is_in ? ": the kernel accessed outside input " : ": the kernel accessed outside "
                                                                  "output ");
        put_u(&o, (uint64_t)(is_in ? b : j));
        if (where < 0) {
            put_s(&o, ": "), put_u(&o, (uint64_t)-where), put_s(&o, " bytes before its start");
        } else {
            put_s(&o, ": at byte "), put_u(&o, (uint64_t)where), put_s(&o, ", past its end (");
            put_u(&o, buf->span), put_s(&o, " bytes)");
        }
        put_s(&o, " (a fault in the guard page)");
        if (failed_case) *failed_case = c;
        return 1;
    }
    return 0;
}

/* ---- run ---- */

/* Element size of a launch-record type ("const __half*" -> 2), 0 if unknown. */
static int arg_elem_size(const char *type, int *is_float, int *is_double)
{
    static const struct {
        const char *name;
        int size;
    } tab[] = {
        {"float", 4},         {"double", 8},        {"__half", 2},  {"__nv_bfloat16", 2},
        {"__nv_fp8_e4m3", 1}, {"__nv_fp8_e5m2", 1}, {"int8_t", 1},  {"uint8_t", 1},
        {"int16_t", 2},       {"uint16_t", 2},      {"int32_t", 4}, {"uint32_t", 4},
        {"int64_t", 8},       {"uint64_t", 8},      {"bool", 1},
    };
    char base[KF_LAUNCH_TYPE_MAX];
    snprintf(base, sizeof base, "%s", strncmp(type, "const ", 6) ? type : type + 6);
    size_t n = strlen(base);
    if (n && base[n - 1] == '*') base[--n] = 0;
    *is_float = !strcmp(base, "float");
    *is_double = !strcmp(base, "double");
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (!strcmp(base, tab[i].name)) return tab[i].size;
    return 0;
}

/* Does argument `a` of the record fit tensor `t`? (Same element size; complex tensors may be
 * taken as float / double pairs.) */
static int arg_fits(const kf_launch *l, int a, const kf_job_tensor *t)
{
    int is_f, is_d, size = arg_elem_size(l->arg_types[a], &is_f, &is_d);
    int es = kf_dtype_size(t->dtype);
    if (size == es) return 1;
    return (t->dtype == KF_C64 && is_f) || (t->dtype == KF_C128 && is_d);
}

static void fail(kf_eval_result *res, int status, int c, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fail(kf_eval_result *res, int status, int c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->error, sizeof res->error, fmt, ap);
    va_end(ap);
    res->status = status;
    res->failed_case = c;
}

/* A backend outcome other than EV_OK -> the node status (and KF_ERR_CUDA for a broken context). */
static kf_status backend_failed(kf_eval_result *res, int rc, int c, const char *when,
                                const char *why)
{
    if (rc == EV_LAUNCH) {
        fail(res, KF_NODE_LOAD_ERROR, c, "%s: %s", when, why);
        return KF_OK;
    }
    fail(res, KF_NODE_CRASH, c, "%s: %s", when, why);
    return KF_ERR_CUDA;
}

/* Guards of every buffer: 1 and res filled when one was written. */
static int check_guards(kf_eval *ev, kf_eval_result *res, int c, const char *when, int *rc,
                        char *err, size_t errcap)
{
    const kf_job_sig *sig = &ev->job->sig;
    *rc = EV_OK;
    for (int b = 0; b < sig->n_in + sig->n_out; b++) {
        int is_in = b < sig->n_in, j = b - sig->n_in;
        if (!is_in && sig->out_alias[j]) continue;
        ev_buf *buf = is_in ? &ev->in[b] : &ev->out[j];
        int64_t where = 0;
        int r = ev->be->guards(ev, buf, &where, err, errcap);
        if (r == EV_HIT) {
            if (where < 0)
                fail(res, KF_NODE_OOB, c,
                     "%s: the kernel wrote outside %s %d: %" PRId64 " bytes before its start",
                     when, is_in ? "input" : "output", is_in ? b : j, -where);
            else
                fail(res, KF_NODE_OOB, c,
                     "%s: the kernel wrote outside %s %d: at byte %" PRId64 ", past its end (%llu "
                     "bytes)",
                     when, is_in ? "input" : "output", is_in ? b : j, where,
                     (unsigned long long)buf->span);
            return 1;
        }
        if (r != EV_OK) {
            *rc = r;
            return 1;
        }
    }
    return 0;
}

/* " (member m, its op)" for output j of a chain job, "" for one op: which call of the chain a
 * mismatch is in. */
static const char *member_of(const kf_job *job, int j, char *buf, size_t cap)
{
    const kf_job_chain *ch = job->chain_def;
    if (!ch || ch->n_members < 1) return "";
    const int m = ch->out_member[j];
    snprintf(buf, cap, " (member %d, %s)", m, ch->m[m].sig.op);
    return buf;
}

/* Verify one case after its run: inputs unchanged, then every output against eager. Returns 1
 * when it failed (res filled), -1 with *rc on a backend failure. */
static int check_case(kf_eval *ev, int c, const char *pl, kf_eval_result *res, int *rc, char *err,
                      size_t errcap)
{
    const kf_job *job = ev->job;
    const kf_job_sig *sig = &job->sig;
    const unsigned char *v;
    for (int i = 0; i < sig->n_in; i++) {
        int aliased = 0;
        for (int j = 0; j < sig->n_out; j++) aliased |= sig->out_alias[j] == i + 1;
        if (aliased) continue; /* written on purpose; checked as an output */
        if ((*rc = ev->be->view(ev, &ev->in[i], &v, err, errcap))) return -1;
        uint64_t span = ev->in[i].span;
        if (span && memcmp(v, ev->case_in[c][i], (size_t)span)) {
            uint64_t at = 0;
            while (v[at] == ev->case_in[c][i][at]) at++;
            fail(res, KF_NODE_INPUT_WRITTEN, c,
                 "case %d (%s%s), input %d: the kernel changed it (first changed byte %llu, "
                 "element %llu of the span)",
                 c, case_kind(job, c), pl, i, (unsigned long long)at,
                 (unsigned long long)(at / (uint64_t)kf_dtype_size(sig->in[i].dtype)));
            return 1;
        }
    }
    for (int j = 0; j < sig->n_out; j++) {
        const int a = sig->out_alias[j]; /* written through an input, or an earlier output */
        ev_buf *buf = a > 0 ? &ev->in[a - 1] : a < 0 ? &ev->out[-a - 1] : &ev->out[j];
        if ((*rc = ev->be->view(ev, buf, &v, err, errcap))) return -1;
        ev_cmp cmp;
        kf_ev_compare(&sig->out[j], v, ev->case_out[c][j], job->out_atol[j], job->out_rtol[j],
                      &cmp);
        if (cmp.max_abs > res->max_abs_err) res->max_abs_err = cmp.max_abs;
        if (cmp.max_rel > res->max_rel_err) res->max_rel_err = cmp.max_rel;
        if (!cmp.bad) continue;
        char mb[96];
        const char *who = member_of(job, j, mb, sizeof mb);
        if (cmp.poisoned) {
            fail(res, KF_NODE_UNTOUCHED, c,
                 "case %d (%s%s), output %d%s: %" PRId64 " of %" PRId64 " elements still hold the "
                 "0xff poison the output was filled with (first at element %" PRId64 ")%s",
                 c, case_kind(job, c), pl, j, who, cmp.poisoned, cmp.n, cmp.first_poisoned,
                 cmp.poisoned < cmp.bad ? "; other elements are wrong too" : "");
        } else {
            fail(res, KF_NODE_WRONG, c,
                 "case %d (%s%s), output %d%s: %" PRId64 " of %" PRId64 " elements outside "
                 "atol=%g rtol=%g (max abs %.3g at %" PRId64 "; first at %" PRId64 ": got %.9g, "
                 "expected %.9g)",
                 c, case_kind(job, c), pl, j, who, cmp.bad, cmp.n, job->out_atol[j], job->out_rtol[j],
                 cmp.worst_abs, cmp.worst_at, cmp.first_bad, cmp.first_got, cmp.first_exp);
        }
        return 1;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Copy case c's inputs into the buffers; poison the fresh outputs when asked. */
static int prepare(kf_eval *ev, int c, int inputs_all, int poison, char *err, size_t errcap)
{
    const kf_job_sig *sig = &ev->job->sig;
    int rc;
    for (int i = 0; i < sig->n_in; i++) {
        int aliased = 0;
        for (int j = 0; j < sig->n_out; j++) aliased |= sig->out_alias[j] == i + 1;
        if (!inputs_all && !aliased) continue;
        if ((rc = ev->be->put(ev, &ev->in[i], ev->case_in[c][i], err, errcap))) return rc;
    }
    for (int j = 0; poison && j < sig->n_out; j++)
        if (!sig->out_alias[j] && (rc = ev->be->poison(ev, &ev->out[j], err, errcap))) return rc;
    return EV_OK;
}

/* Every buffer to placement p; the kernel's arguments (inputs, then fresh outputs) in ptrs. */
static int place_all(kf_eval *ev, int p, void **ptrs, char *err, size_t errcap)
{
    const kf_job_sig *sig = &ev->job->sig;
    int rc, a = 0;
    for (int i = 0; i < sig->n_in; i++) {
        if ((rc = ev->be->place(ev, &ev->in[i], p, err, errcap))) return rc;
        ptrs[a++] = ev->in[i].arg;
    }
    for (int j = 0; j < sig->n_out; j++) {
        if (sig->out_alias[j]) continue;
        if ((rc = ev->be->place(ev, &ev->out[j], p, err, errcap))) return rc;
        ptrs[a++] = ev->out[j].arg;
    }
    return EV_OK;
}

kf_status kf_eval_run(kf_eval *ev, kf_compiler_i *cc, kf_compiled *k, const kf_launch *launch,
                      kf_eval_result *res)
{
    if (!res) return KF_ERR_INVALID;
    memset(res, 0, sizeof *res);
    res->failed_case = -1;
    if (!ev || !cc || !k || !launch) {
        fail(res, KF_NODE_LOAD_ERROR, -1, "eval: missing argument");
        return KF_ERR_INVALID;
    }
    const kf_job *job = ev->job;
    const kf_job_sig *sig = &job->sig;
    if (!cc->name || strcmp(cc->name, ev->be->name)) {
        fail(res, KF_NODE_LOAD_ERROR, -1, "a %s kernel cannot run in a %s job",
             cc->name ? cc->name : "?", ev->be->name);
        return KF_OK;
    }

    /* arguments: the inputs, then the fresh outputs (eval.h / template.h) */
    int n_fresh = 0;
    for (int j = 0; j < sig->n_out; j++) n_fresh += !sig->out_alias[j];
    int n = sig->n_in + n_fresh;
    void *ptrs[KF_LAUNCH_MAX_ARGS];
    const kf_job_tensor *arg_t[KF_LAUNCH_MAX_ARGS];
    if (n <= KF_LAUNCH_MAX_ARGS) {
        int a = 0;
        for (int i = 0; i < sig->n_in; i++, a++) ptrs[a] = ev->in[i].arg, arg_t[a] = &sig->in[i];
        for (int j = 0; j < sig->n_out; j++)
            if (!sig->out_alias[j]) ptrs[a] = ev->out[j].arg, arg_t[a++] = &sig->out[j];
    }
    if (launch->n_args != n || n > KF_LAUNCH_MAX_ARGS) {
        fail(res, KF_NODE_LOAD_ERROR, -1,
             "the launch record has %d arguments; the signature takes %d inputs + %d fresh "
             "outputs",
             launch->n_args, sig->n_in, n_fresh);
        return KF_OK;
    }
    for (int a = 0; a < n; a++)
        if (!arg_fits(launch, a, arg_t[a])) {
            fail(res, KF_NODE_LOAD_ERROR, -1,
                 "argument %d is \"%s\", but its tensor holds %s elements", a,
                 launch->arg_types[a], kf_dtype_name(arg_t[a]->dtype));
            return KF_OK;
        }
    /* a family kernel's launch-time sizes, from the job's shapes (compiler.h) */
    int n_all = n + launch->n_ints;
    if (launch->n_ints) {
        kf_dims dims[KF_LAUNCH_MAX_ARGS];
        int64_t v[KF_LAUNCH_MAX_INTS];
        for (int a = 0; a < n; a++) dims[a].ndim = arg_t[a]->ndim, dims[a].sizes = arg_t[a]->sizes;
        if (kf_launch_ints(launch, dims, n, v) != KF_OK) {
            fail(res, KF_NODE_LOAD_ERROR, -1, "the launch record's ints do not fit the signature");
            return KF_OK;
        }
        for (int j = 0; j < launch->n_ints; j++) ptrs[n + j] = (void *)(intptr_t)v[j];
    }

    /* every case with the data at the end of its buffer, then at the start: a stray read lands
     * in a guard page (host) or on huge canary values (device) in one of them */
    char err[384], when[96];
    int rc, hit;
    for (int p = 0; p < ev->n_places && p < EV_PLACES; p++) {
        if ((rc = place_all(ev, p, ptrs, err, sizeof err)))
            return backend_failed(res, rc, -1, "placing the buffers", err);
        const char *pl = p == EV_PLACE_END ? "" : place_names[p];
        for (int c = 0; c < job->n_cases; c++) {
            snprintf(when, sizeof when, "case %d (%s%s)", c, case_kind(job, c), pl);
            if ((rc = prepare(ev, c, 1, 1, err, sizeof err)))
                return backend_failed(res, rc, c, "preparing the buffers", err);
            ev->cur_case = c, ev->cur_place = p;
            rc = ev->be->run(ev, cc, k, ptrs, n_all, NULL, err, sizeof err);
            ev->cur_case = ev->cur_place = -1;
            if (rc) return backend_failed(res, rc, c, when, err);
            if (check_guards(ev, res, c, when, &rc, err, sizeof err))
                return rc ? backend_failed(res, rc, c, "checking the guards", err) : KF_OK;
            hit = check_case(ev, c, pl, res, &rc, err, sizeof err);
            if (hit < 0) return backend_failed(res, rc, c, "reading the results", err);
            if (hit) return KF_OK;
        }
    }
    if ((rc = place_all(ev, EV_PLACE_END, ptrs, err, sizeof err)))
        return backend_failed(res, rc, -1, "placing the buffers", err);

    /* timing on case 0; an in-place argument gets its input back before every run. Under
     * memcheck (exact mode) one run: it checks the timed path's placement, not the time, and
     * each instrumented rep costs the warm-up seconds per inserted kernel */
    int reps = ev->exact ? 1 : job->search.bench_reps > 0 ? job->search.bench_reps : 1;
    const int warmup = ev->exact ? 0 : EV_WARMUP;
    double *t = malloc((size_t)reps * sizeof *t);
    if (!t) {
        fail(res, KF_NODE_CRASH, -1, "eval: out of memory");
        return KF_ERR_NOMEM;
    }
    kf_status st = KF_OK;
    if ((rc = prepare(ev, 0, 1, 0, err, sizeof err))) {
        st = backend_failed(res, rc, 0, "preparing the timed runs", err);
        goto free_times;
    }
    for (int r = 0; r < warmup + reps; r++) {
        double us = 0;
        if (r && (rc = prepare(ev, 0, 0, 0, err, sizeof err))) {
            st = backend_failed(res, rc, 0, "preparing a timed run", err);
            goto free_times;
        }
        ev->cur_place = EV_PLACE_END;
        rc = ev->be->run(ev, cc, k, ptrs, n_all, &us, err, sizeof err);
        ev->cur_place = -1;
        if (rc) {
            st = backend_failed(res, rc, 0, "timed run", err);
            goto free_times;
        }
        if (check_guards(ev, res, 0, "timed run", &rc, err, sizeof err)) {
            st = rc ? backend_failed(res, rc, 0, "checking the guards", err) : KF_OK;
            goto free_times;
        }
        if (r >= warmup) t[r - warmup] = us;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    res->status = KF_NODE_VERIFIED;
    res->error[0] = 0;
    res->failed_case = -1;
    res->reps = reps;
    res->min_us = t[0];
    res->median_us = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
free_times:
    free(t);
    return st;
}
