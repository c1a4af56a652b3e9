/* Loading a job folder (job.h). job.json and the case files are untrusted: every field is checked
 * for type and range before it reaches a fixed-size array, and every error names the field. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/chain_sig.h"
#include "compile/compiler.h" /* KF_LAUNCH_MAX_ARGS */
#include "forge/job/job.h"

#define JOB_JSON_MAX (4u << 20) /* job.json is a few KB; refuse to parse megabytes of junk */
#define CASE_NAME_MAX 255
#define JOB_DEVICE_MAX 1024

uint64_t kf_job_span_bytes(const kf_job_tensor *t, int *ok)
{
    int dummy;
    if (!ok) ok = &dummy;
    *ok = 0;
    if (!t || t->ndim < 0 || t->ndim > KF_MAX_DIMS) return 0;
    int es = kf_dtype_size(t->dtype);
    if (!es) return 0;
    for (int d = 0; d < t->ndim; d++)
        if (t->sizes[d] < 0 || t->strides[d] < 0) return 0;
    for (int d = 0; d < t->ndim; d++)
        if (t->sizes[d] == 0) {
            *ok = 1; /* empty: addresses nothing */
            return 0;
        }
    /* last element's offset = sum (size-1)*stride; unsigned with explicit overflow checks */
    uint64_t last = 0;
    for (int d = 0; d < t->ndim; d++) {
        uint64_t step = (uint64_t)(t->sizes[d] - 1), stride = (uint64_t)t->strides[d];
        if (stride && step > UINT64_MAX / stride) return 0;
        uint64_t add = step * stride;
        if (last > UINT64_MAX - add) return 0;
        last += add;
    }
    if (last == UINT64_MAX || last + 1 > UINT64_MAX / (uint64_t)es) return 0;
    *ok = 1;
    return (last + 1) * (uint64_t)es;
}

kf_status kf_job_read_case_file(const char *path, void *buf, uint64_t len, char *err, size_t errcap)
{
    char dummy[1];
    if (!err || !errcap) err = dummy, errcap = sizeof dummy;
    if (!path || (!buf && len)) {
        snprintf(err, errcap, "case file: missing argument");
        return KF_ERR_INVALID;
    }
    /* O_NOFOLLOW: a symlink in cases/ could point anywhere; the job must hold its own bytes */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        snprintf(err, errcap, "case file %s: %s", path,
                 errno == ELOOP ? "is a symbolic link" : strerror(errno));
        return errno == ENOENT ? KF_ERR_NOT_FOUND : KF_ERR_IO;
    }
    kf_status st = KF_ERR_IO;
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        snprintf(err, errcap, "case file %s: %s", path, strerror(errno));
        goto close_fd;
    }
    if (!S_ISREG(sb.st_mode)) {
        snprintf(err, errcap, "case file %s: not a regular file", path);
        st = KF_ERR_INVALID;
        goto close_fd;
    }
    if ((uint64_t)sb.st_size != len) {
        snprintf(err, errcap, "case file %s: %lld bytes, the tensor's span is %llu", path,
                 (long long)sb.st_size, (unsigned long long)len);
        st = KF_ERR_INVALID;
        goto close_fd;
    }
    char *p = buf;
    uint64_t got = 0;
    while (got < len) {
        size_t want = len - got > (1u << 30) ? (1u << 30) : (size_t)(len - got);
        ssize_t n = read(fd, p + got, want);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n <= 0) {
            snprintf(err, errcap, "case file %s: %s after %llu of %llu bytes", path,
                     n < 0 ? strerror(errno) : "ended early", (unsigned long long)got,
                     (unsigned long long)len);
            goto close_fd;
        }
        got += (uint64_t)n;
    }
    st = KF_OK;
close_fd:
    close(fd);
    return st;
}

/* ---- job.json ---- */

typedef struct loader {
    char *err;
    size_t errcap;
} loader;

static kf_status bad(loader *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static kf_status bad(loader *L, const char *fmt, ...)
{
    int n = snprintf(L->err, L->errcap, "job.json: ");
    if (n >= 0 && (size_t)n < L->errcap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(L->err + n, L->errcap - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return KF_ERR_INVALID;
}

static kf_status nomem(loader *L)
{
    snprintf(L->err, L->errcap, "job.json: out of memory");
    return KF_ERR_NOMEM;
}

/* An integral JSON number in [lo, hi]. JSON numbers arrive as doubles: beyond 2^53 they are no
 * longer exact, and 2^63 (the nearest double to INT64_MAX, torch's "no end" sentinel) is read as
 * INT64_MAX. */
static int get_int(const cJSON *v, int64_t lo, int64_t hi, int64_t *out)
{
    if (!cJSON_IsNumber(v)) return 0;
    double d = v->valuedouble;
    if (!isfinite(d) || d != floor(d)) return 0;
    int64_t x;
    if (d >= 9223372036854775808.0) {
        if (d > 9223372036854775808.0) return 0;
        x = INT64_MAX;
    } else if (d < -9223372036854775808.0) {
        return 0;
    } else {
        x = (int64_t)d;
    }
    if (x < lo || x > hi) return 0;
    *out = x;
    return 1;
}

/* A finite JSON number in [lo, hi]. */
static int get_num(const cJSON *v, double lo, double hi, double *out)
{
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo ||
        v->valuedouble > hi)
        return 0;
    *out = v->valuedouble;
    return 1;
}

static const cJSON *field(const cJSON *obj, const char *name)
{
    return cJSON_GetObjectItemCaseSensitive(obj, name);
}

/* A required string field: strdup'ed into *out; at most maxlen bytes, non-empty if nonempty. */
static kf_status req_str(loader *L, const cJSON *obj, const char *name, size_t maxlen,
                         int nonempty, char **out)
{
    const cJSON *v = field(obj, name);
    if (!v) return bad(L, "\"%s\" is missing", name);
    if (!cJSON_IsString(v) || !v->valuestring) return bad(L, "\"%s\" must be a string", name);
    size_t n = strlen(v->valuestring);
    if (nonempty && n == 0) return bad(L, "\"%s\" must not be empty", name);
    if (n > maxlen) return bad(L, "\"%s\" is longer than %zu bytes", name, maxlen);
    *out = strdup(v->valuestring);
    return *out ? KF_OK : nomem(L);
}

static kf_status req_num(loader *L, const cJSON *obj, const char *name, double lo, double hi,
                         double *out)
{
    const cJSON *v = field(obj, name);
    if (!v) return bad(L, "\"%s\" is missing", name);
    if (!get_num(v, lo, hi, out))
        return bad(L, "\"%s\" must be a number in [%g, %g]", name, lo, hi);
    return KF_OK;
}

/* One tensor of "inputs"/"outputs"; `what` is "inputs[2]". */
static kf_status parse_tensor(loader *L, const cJSON *o, const char *what, int need_align,
                              kf_job_tensor *t)
{
    memset(t, 0, sizeof *t);
    if (!cJSON_IsObject(o)) return bad(L, "%s must be an object", what);
    const cJSON *dt = field(o, "dtype");
    if (!dt) return bad(L, "%s.dtype is missing", what);
    if (!cJSON_IsString(dt)) return bad(L, "%s.dtype must be a string", what);
    t->dtype = kf_dtype_from_name(dt->valuestring);
    if (!t->dtype)
        return bad(L, "%s.dtype \"%.32s\" is not a dtype (f32 f16 bf16 f64 i8 u8 i16 i32 i64 "
                      "bool c64 c128 f8e4m3 f8e5m2)",
                   what, dt->valuestring);

    const cJSON *sz = field(o, "sizes"), *st = field(o, "strides");
    if (!sz) return bad(L, "%s.sizes is missing", what);
    if (!st) return bad(L, "%s.strides is missing", what);
    if (!cJSON_IsArray(sz)) return bad(L, "%s.sizes must be an array", what);
    if (!cJSON_IsArray(st)) return bad(L, "%s.strides must be an array", what);
    int nd = cJSON_GetArraySize(sz);
    if (nd > KF_MAX_DIMS) return bad(L, "%s.sizes has %d dims, at most %d", what, nd, KF_MAX_DIMS);
    if (cJSON_GetArraySize(st) != nd)
        return bad(L, "%s.strides has %d entries, sizes has %d", what, cJSON_GetArraySize(st), nd);
    t->ndim = nd;
    for (int d = 0; d < nd; d++) {
        if (!get_int(cJSON_GetArrayItem(sz, d), 0, INT64_MAX, &t->sizes[d]))
            return bad(L, "%s.sizes[%d] must be a non-negative integer", what, d);
        if (!get_int(cJSON_GetArrayItem(st, d), 0, INT64_MAX, &t->strides[d]))
            return bad(L, "%s.strides[%d] must be a non-negative integer", what, d);
    }
    int ok;
    uint64_t span = kf_job_span_bytes(t, &ok);
    if (!ok) return bad(L, "%s: the strided span overflows", what);
    if (span > KF_JOB_MAX_BYTES)
        return bad(L, "%s: the strided span is %llu bytes, more than the %llu allowed", what,
                   (unsigned long long)span, (unsigned long long)KF_JOB_MAX_BYTES);

    const cJSON *al = field(o, "align");
    if (!al && need_align) return bad(L, "%s.align is missing", what);
    if (al) {
        int64_t a;
        if (!get_int(al, 0, 16, &a) || (a & (a - 1)))
            return bad(L, "%s.align must be 0 (unknown) or 1, 2, 4, 8, 16", what);
        t->align = (int)a;
    }
    return KF_OK;
}

static kf_status parse_tensors(loader *L, const cJSON *root, const char *name, int max,
                               kf_job_tensor *ts, int *n)
{
    const cJSON *arr = field(root, name);
    if (!arr) return bad(L, "\"%s\" is missing", name);
    if (!cJSON_IsArray(arr)) return bad(L, "\"%s\" must be an array", name);
    int cnt = cJSON_GetArraySize(arr);
    if (cnt > max)
        return bad(L, "\"%s\" has %d entries, at most %d (a tensor list counts each element)",
                   name, cnt, max);
    for (int i = 0; i < cnt; i++) {
        char what[32];
        snprintf(what, sizeof what, "%s[%d]", name, i);
        kf_status s = parse_tensor(L, cJSON_GetArrayItem(arr, i), what, !strcmp(name, "inputs"),
                                   &ts[i]);
        if (s != KF_OK) return s;
    }
    *n = cnt;
    return KF_OK;
}

static int same_layout(const kf_job_tensor *a, const kf_job_tensor *b)
{
    if (a->dtype != b->dtype || a->ndim != b->ndim) return 0;
    for (int d = 0; d < a->ndim; d++)
        if (a->sizes[d] != b->sizes[d] || a->strides[d] != b->strides[d]) return 0;
    return 1;
}

static kf_status parse_aliases(loader *L, const cJSON *root, kf_job_sig *sig)
{
    const cJSON *arr = field(root, "outputs");
    for (int j = 0; j < sig->n_out; j++) {
        const cJSON *a = field(cJSON_GetArrayItem(arr, j), "alias");
        int64_t k;
        if (!a) return bad(L, "outputs[%d].alias is missing", j);
        if (!get_int(a, -1, sig->n_in - 1, &k))
            return bad(L, "outputs[%d].alias must be -1 or an index into inputs (0..%d)", j,
                       sig->n_in - 1);
        sig->out_alias[j] = (int)k + 1; /* JSON -1/index -> 0 fresh, k+1 */
        /* A fresh output comes from torch's allocator (at::empty_strided when served): at least
         * 16-byte aligned, as the kernels may assume; one written in place is its input. */
        sig->out[j].align = k < 0 ? 16 : sig->in[k].align;
        const cJSON *ao = field(cJSON_GetArrayItem(arr, j), "alias_output");
        if (ao) { /* a chain member writing an earlier member's output in place (chain.h) */
            int64_t o;
            if (k >= 0 || !get_int(ao, 0, j - 1, &o) || sig->out_alias[o] != 0 ||
                !same_layout(&sig->out[j], &sig->out[o]))
                return bad(L, "outputs[%d].alias_output must be a fresh earlier output laid out as "
                              "it is, on an output whose alias is -1", j);
            sig->out_alias[j] = -(int)o - 1;
            sig->out[j].align = sig->out[o].align;
            continue;
        }
        if (k < 0) continue;
        for (int i = 0; i < j; i++)
            if (sig->out_alias[i] == sig->out_alias[j])
                return bad(L, "outputs[%d].alias: input %d is already outputs[%d]", j, (int)k, i);
        if (!same_layout(&sig->out[j], &sig->in[k]))
            return bad(L, "outputs[%d].alias: the output's dtype/sizes/strides differ from "
                          "inputs[%d], which it is written through",
                       j, (int)k);
    }
    return KF_OK;
}

/* The entries of "scalars" whose name starts with `prefix` (all of them for ""), the prefix
 * stripped (a chain job's "m2.dim" is member 2's "dim"). */
static kf_status parse_scalars(loader *L, const cJSON *root, const char *prefix, kf_job_sig *sig)
{
    const cJSON *arr = field(root, "scalars");
    if (!arr) return bad(L, "\"scalars\" is missing");
    if (!cJSON_IsArray(arr)) return bad(L, "\"scalars\" must be an array");
    int cnt = 0, all = cJSON_GetArraySize(arr);
    size_t pl = strlen(prefix);
    for (int ai = 0; ai < all; ai++) {
        const cJSON *o = cJSON_GetArrayItem(arr, ai);
        const cJSON *nm = field(o, "name");
        if (pl && (!cJSON_IsString(nm) || strncmp(nm->valuestring, prefix, pl))) continue;
        int i = cnt++;
        if (cnt > KF_JOB_MAX_SCALARS)
            return bad(L, "\"scalars\" has more than %d entries%s%s", KF_JOB_MAX_SCALARS,
                       pl ? " named " : "", prefix);
        kf_job_scalar *s = &sig->scalars[i];
        memset(s, 0, sizeof *s);
        if (!cJSON_IsObject(o)) return bad(L, "scalars[%d] must be an object", ai);
        const cJSON *kd = field(o, "kind"), *v = field(o, "value");
        if (!cJSON_IsString(nm) || !nm->valuestring[pl] ||
            strlen(nm->valuestring + pl) >= sizeof s->name)
            return bad(L, "scalars[%d].name must be a string of 1..%zu bytes", ai,
                       sizeof s->name - 1);
        strcpy(s->name, nm->valuestring + pl);
        for (int j = 0; j < i; j++)
            if (!strcmp(sig->scalars[j].name, s->name))
                return bad(L, "scalars[%d].name \"%s\" repeats scalars[%d]", i, s->name, j);
        if (!cJSON_IsString(kd) || strlen(kd->valuestring) != 1 ||
            !strchr("idbsnl", kd->valuestring[0]))
            return bad(L, "scalars[%d] (%s).kind must be one of \"i\" \"d\" \"b\" \"s\" \"n\" "
                          "\"l\"",
                       i, s->name);
        s->kind = kd->valuestring[0];
        const char *nmv = s->name;
        /* a Python number in a tensor's place (sig.h): a number, never in "inputs" */
        const cJSON *wr = field(o, "wrapped");
        if (wr && !cJSON_IsBool(wr))
            return bad(L, "scalars[%d] (%s).wrapped must be a boolean", ai, nmv);
        if (cJSON_IsTrue(wr) && !strchr("idb", s->kind))
            return bad(L, "scalars[%d] (%s): a wrapped Python number has kind \"d\", \"i\" or "
                          "\"b\"", ai, nmv);
        switch (s->kind) {
        case 'i':
            if (!get_int(v, INT64_MIN, INT64_MAX, &s->i))
                return bad(L, "scalars[%d] (%s).value must be an integer", ai, nmv);
            break;
        case 'd':
            if (!get_num(v, -HUGE_VAL, HUGE_VAL, &s->d))
                return bad(L, "scalars[%d] (%s).value must be a finite number", ai, nmv);
            break;
        case 'b':
            if (!cJSON_IsBool(v)) return bad(L, "scalars[%d] (%s).value must be a boolean", ai, nmv);
            s->i = cJSON_IsTrue(v) ? 1 : 0;
            break;
        case 's':
            if (!cJSON_IsString(v) || strlen(v->valuestring) >= sizeof s->s)
                return bad(L, "scalars[%d] (%s).value must be a string of at most %zu bytes", ai,
                           nmv, sizeof s->s - 1);
            strcpy(s->s, v->valuestring);
            break;
        case 'n':
            if (v && !cJSON_IsNull(v))
                return bad(L, "scalars[%d] (%s): kind \"n\" (None) takes no value", ai, nmv);
            break;
        case 'l':
            if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) > KF_MAX_DIMS)
                return bad(L, "scalars[%d] (%s).value must be an array of at most %d integers", i,
                           nmv, KF_MAX_DIMS);
            s->n = cJSON_GetArraySize(v);
            for (int k = 0; k < s->n; k++)
                if (!get_int(cJSON_GetArrayItem(v, k), INT64_MIN, INT64_MAX, &s->v[k]))
                    return bad(L, "scalars[%d] (%s).value[%d] must be an integer", i, nmv, k);
            break;
        }
    }
    sig->n_scalars = cnt;
    return KF_OK;
}

/* A case file name: a plain name inside cases/ (no directories, no way out of the folder). */
static int plain_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > CASE_NAME_MAX || s[0] == '.' || strstr(s, "..")) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '/' || c == '\\' || c < 0x20 || c == 0x7f) return 0;
    }
    return 1;
}

static kf_status case_paths(loader *L, const cJSON *c, int ci, const char *key, int want,
                            const char *dir, char **paths)
{
    const cJSON *arr = field(c, key);
    if (!arr) return bad(L, "cases[%d].%s is missing", ci, key);
    if (!cJSON_IsArray(arr)) return bad(L, "cases[%d].%s must be an array", ci, key);
    if (cJSON_GetArraySize(arr) != want)
        return bad(L, "cases[%d].%s has %d file names, the signature has %d %s", ci, key,
                   cJSON_GetArraySize(arr), want, key);
    for (int i = 0; i < want; i++) {
        const cJSON *v = cJSON_GetArrayItem(arr, i);
        if (!cJSON_IsString(v)) return bad(L, "cases[%d].%s[%d] must be a string", ci, key, i);
        if (!plain_name(v->valuestring))
            return bad(L, "cases[%d].%s[%d] \"%.64s\" is not a plain file name (no '/', no '..', "
                          "no leading '.')",
                       ci, key, i, v->valuestring);
        size_t n = strlen(dir) + strlen(v->valuestring) + 8;
        paths[i] = malloc(n);
        if (!paths[i]) return nomem(L);
        snprintf(paths[i], n, "%s/cases/%s", dir, v->valuestring);
    }
    return KF_OK;
}

static kf_status parse_cases(loader *L, const cJSON *root, kf_job *job)
{
    const cJSON *arr = field(root, "cases");
    if (!arr) return bad(L, "\"cases\" is missing");
    if (!cJSON_IsArray(arr)) return bad(L, "\"cases\" must be an array");
    int cnt = cJSON_GetArraySize(arr);
    if (cnt < 1 || cnt > KF_JOB_MAX_CASES)
        return bad(L, "\"cases\" has %d entries, 1..%d expected", cnt, KF_JOB_MAX_CASES);
    for (int i = 0; i < cnt; i++) {
        const cJSON *c = cJSON_GetArrayItem(arr, i);
        job->n_cases = i + 1; /* so kf_job_free releases what this case allocates */
        if (!cJSON_IsObject(c)) return bad(L, "cases[%d] must be an object", i);
        const cJSON *k = field(c, "kind");
        if (!cJSON_IsString(k) || (strcmp(k->valuestring, "recorded") &&
                                   strcmp(k->valuestring, "example") &&
                                   strcmp(k->valuestring, "random")))
            return bad(L, "cases[%d].kind must be \"recorded\", \"example\" or \"random\"", i);
        /* an example (kernel_forge.tune's arguments) is real data too */
        job->cases[i].recorded = strcmp(k->valuestring, "random") != 0;
        kf_status s = case_paths(L, c, i, "inputs", job->sig.n_in, job->dir, job->cases[i].in_path);
        if (s == KF_OK)
            s = case_paths(L, c, i, "outputs", job->sig.n_out, job->dir, job->cases[i].out_path);
        if (s != KF_OK) return s;
    }
    return KF_OK;
}

int kf_job_stagnation(const kf_job_search *s)
{
    if (s->stagnation >= 0) return s->stagnation;
    /* most bests are a template's start point; on the H200 the latest gains of 5-7% came
     * 20 candidates after the one before (softmax, group norm) */
    return s->iterations / 2 > 10 ? s->iterations / 2 : 10;
}

static kf_status parse_search(loader *L, const cJSON *root, kf_job_search *s)
{
    s->iterations = 50;
    s->stagnation = -1;
    s->seed = 1;
    s->margin = 0.03;
    s->time_budget_s = 0;
    s->candidate_timeout_s = 10;
    s->bench_reps = 20;
    s->flush_l2 = 1;
    const cJSON *o = field(root, "search");
    const char *proposer = "builtin", *cache_dir = "";
    if (o && !cJSON_IsObject(o)) return bad(L, "\"search\" must be an object");
    if (o) {
        const cJSON *v;
        int64_t x;
        if ((v = field(o, "iterations"))) {
            if (!get_int(v, 1, 1000000, &x))
                return bad(L, "search.iterations must be an integer in [1, 1000000]");
            s->iterations = (int)x;
        }
        if ((v = field(o, "stagnation"))) {
            if (!get_int(v, 0, 1000000, &x))
                return bad(L, "search.stagnation must be an integer in [0, 1000000] (0: never)");
            s->stagnation = (int)x;
        }
        if ((v = field(o, "seed"))) {
            if (!get_int(v, 0, INT64_MAX, &x))
                return bad(L, "search.seed must be a non-negative integer");
            s->seed = (uint64_t)x;
        }
        /* negative: accept kernels up to that much slower than eager (for tests of the pipeline) */
        if ((v = field(o, "margin")) && !get_num(v, -100, 0.99, &s->margin))
            return bad(L, "search.margin must be a number in [-100, 0.99]");
        if ((v = field(o, "time_budget_s")) && !get_num(v, 0, 1e7, &s->time_budget_s))
            return bad(L, "search.time_budget_s must be a number in [0, 1e7] (0: none)");
        if ((v = field(o, "candidate_timeout_s")) &&
            (!get_num(v, 0, 3600, &s->candidate_timeout_s) || s->candidate_timeout_s <= 0))
            return bad(L, "search.candidate_timeout_s must be a number in (0, 3600]");
        if ((v = field(o, "bench_reps"))) {
            if (!get_int(v, 1, 100000, &x))
                return bad(L, "search.bench_reps must be an integer in [1, 100000]");
            s->bench_reps = (int)x;
        }
        if ((v = field(o, "flush_l2"))) {
            if (!cJSON_IsBool(v)) return bad(L, "search.flush_l2 must be a boolean");
            s->flush_l2 = cJSON_IsTrue(v);
        }
        if ((v = field(o, "proposer"))) {
            if (!cJSON_IsString(v) || (strcmp(v->valuestring, "builtin") &&
                                       strcmp(v->valuestring, "llm") &&
                                       strcmp(v->valuestring, "mixed")))
                return bad(L, "search.proposer must be \"builtin\", \"llm\" or \"mixed\"");
            proposer = v->valuestring;
        }
        if ((v = field(o, "cache_dir"))) {
            if (!cJSON_IsString(v) || strlen(v->valuestring) > PATH_MAX)
                return bad(L, "search.cache_dir must be a string (\"\": do not insert)");
            if (v->valuestring[0] && v->valuestring[0] != '/')
                return bad(L, "search.cache_dir must be an absolute path or \"\"");
            cache_dir = v->valuestring;
        }
    }
    s->proposer = strdup(proposer);
    s->cache_dir = strdup(cache_dir);
    return s->proposer && s->cache_dir ? KF_OK : nomem(L);
}

/* A chain job (chain.h): the spec, its members' signatures, their "m<k>." scalars. */
static kf_status parse_chain(loader *L, const cJSON *root, kf_job *job)
{
    const cJSON *spec = field(root, "chain");
    if (!spec) return bad(L, "\"chain\" is missing (op %s)", KF_CHAIN_OP);
    job->chain_def = calloc(1, sizeof *job->chain_def);
    if (!job->chain_def) return nomem(L);
    kf_status s = kf_job_chain_parse(spec, field(root, "outputs_layout"), &job->sig, job->chain_def,
                                     L->err, L->errcap);
    if (s != KF_OK) return s;
    /* the job's key is the chain's canonical bytes: a spec and a sig_hex that disagree would put
     * this kernel under another chain's key */
    uint8_t *bytes = NULL;
    uint32_t n = 0;
    char why[256];
    if (kf_chain_sig_bytes_obj(spec, &bytes, &n, why, sizeof why) != KF_OK)
        return bad(L, "chain: %s", why);
    int same = strlen(job->sig_hex) == 2 * (size_t)n;
    for (uint32_t i = 0; same && i < n; i++) {
        unsigned v;
        same = sscanf(job->sig_hex + 2 * i, "%2x", &v) == 1 && v == bytes[i];
    }
    free(bytes);
    if (!same) return bad(L, "\"sig_hex\" is not the chain's canonical bytes (common/chain_sig.h)");
    job->chain = cJSON_PrintUnformatted(spec);
    if (!job->chain) return nomem(L);
    kf_job_chain *ch = job->chain_def;
    for (int k = 0; k < ch->n_members; k++) {
        char pre[8];
        snprintf(pre, sizeof pre, "m%d.", k);
        if ((s = parse_scalars(L, root, pre, &ch->m[k].sig))) return s;
    }
    const cJSON *arr = field(root, "scalars"), *o;
    cJSON_ArrayForEach(o, arr) { /* every scalar belongs to a member */
        const cJSON *nm = field(o, "name");
        int k = -1, used = 0;
        if (cJSON_IsString(nm) && sscanf(nm->valuestring, "m%d.%n", &k, &used) == 1 && used > 0 &&
            k >= 0 && k < ch->n_members)
            continue;
        return bad(L, "scalars: \"%.32s\" is not named m<member>.<name> of a member (0..%d)",
                   cJSON_IsString(nm) ? nm->valuestring : "?", ch->n_members - 1);
    }
    job->sig.chain = ch;
    return KF_OK;
}

/* "output_tol": [[atol, rtol], ...] per output, optional (else the job's atol/rtol). */
static kf_status parse_output_tol(loader *L, const cJSON *root, kf_job *job)
{
    for (int j = 0; j < KF_JOB_MAX_OUTPUTS; j++) job->out_atol[j] = job->atol, job->out_rtol[j] = job->rtol;
    const cJSON *arr = field(root, "output_tol");
    if (!arr) return KF_OK;
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) != job->sig.n_out)
        return bad(L, "\"output_tol\" must be an array of %d [atol, rtol] pairs", job->sig.n_out);
    for (int j = 0; j < job->sig.n_out; j++) {
        const cJSON *p = cJSON_GetArrayItem(arr, j);
        if (!cJSON_IsArray(p) || cJSON_GetArraySize(p) != 2 ||
            !get_num(cJSON_GetArrayItem(p, 0), 0, 1e30, &job->out_atol[j]) ||
            !get_num(cJSON_GetArrayItem(p, 1), 0, 1e30, &job->out_rtol[j]))
            return bad(L, "output_tol[%d] must be [atol, rtol], numbers in [0, 1e30]", j);
    }
    return KF_OK;
}

/* job.json's text: a regular file of sane size. */
static kf_status read_json_text(loader *L, const char *dir, char **out)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/job.json", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        snprintf(L->err, L->errcap, "%s: %s", path, strerror(errno));
        return errno == ENOENT ? KF_ERR_NOT_FOUND : KF_ERR_IO;
    }
    kf_status st = KF_ERR_IO;
    struct stat sb;
    char *text = NULL;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size > JOB_JSON_MAX) {
        snprintf(L->err, L->errcap, "%s: not a regular file of at most %u bytes", path,
                 JOB_JSON_MAX);
        st = KF_ERR_INVALID;
        goto close_fd;
    }
    size_t n = (size_t)sb.st_size, got = 0;
    text = malloc(n + 1);
    if (!text) {
        st = nomem(L);
        goto close_fd;
    }
    while (got < n) {
        ssize_t k = read(fd, text + got, n - got);
        if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    if (got != n) {
        snprintf(L->err, L->errcap, "%s: short read", path);
        free(text);
        goto close_fd;
    }
    text[n] = 0;
    if (memchr(text, 0, n)) {
        snprintf(L->err, L->errcap, "%s: contains a NUL byte", path);
        free(text);
        st = KF_ERR_INVALID;
        goto close_fd;
    }
    *out = text;
    st = KF_OK;
close_fd:
    close(fd);
    return st;
}

static kf_status parse_job(loader *L, const cJSON *root, kf_job *job)
{
    kf_status s;
    int64_t x;
    if (!cJSON_IsObject(root)) return bad(L, "the document must be an object");

    const cJSON *fmt = field(root, "format");
    if (!fmt) return bad(L, "\"format\" is missing");
    if (!get_int(fmt, KF_JOB_FORMAT, KF_JOB_FORMAT, &x))
        return bad(L, "\"format\" must be %d (this worker reads format %d only)", KF_JOB_FORMAT,
                   KF_JOB_FORMAT);

    if ((s = req_str(L, root, "op", sizeof job->sig.op - 1, 1, &job->op))) return s;
    strcpy(job->sig.op, job->op);
    if ((s = req_str(L, root, "signature", 4096, 0, &job->signature))) return s;
    if ((s = req_str(L, root, "sig_hex", 65536, 1, &job->sig_hex))) return s;
    size_t hl = strlen(job->sig_hex);
    if (hl % 2 || strspn(job->sig_hex, "0123456789abcdefABCDEF") != hl)
        return bad(L, "\"sig_hex\" must be an even number of hex digits");
    if ((s = req_str(L, root, "torch_version", 64, 0, &job->torch_version))) return s;

    const cJSON *lay = field(root, "outputs_layout");
    if (!lay) return bad(L, "\"outputs_layout\" is missing");
    if (!cJSON_IsArray(lay)) return bad(L, "\"outputs_layout\" must be an array");
    job->outputs_layout = cJSON_PrintUnformatted(lay);
    if (!job->outputs_layout) return nomem(L);

    if ((s = req_str(L, root, "backend", 16, 1, &job->backend))) return s;
    if (strcmp(job->backend, "host") && strcmp(job->backend, "nvrtc"))
        return bad(L, "\"backend\" must be \"host\" or \"nvrtc\", not \"%s\"", job->backend);
    const cJSON *dev = field(root, "device_index");
    if (!dev) return bad(L, "\"device_index\" is missing");
    if (!get_int(dev, 0, JOB_DEVICE_MAX - 1, &x))
        return bad(L, "\"device_index\" must be an integer in [0, %d]", JOB_DEVICE_MAX - 1);
    job->device_index = (int)x;

    if ((s = parse_tensors(L, root, "inputs", KF_JOB_MAX_TENSORS, job->sig.in, &job->sig.n_in)))
        return s;
    if ((s = parse_tensors(L, root, "outputs", KF_JOB_MAX_OUTPUTS, job->sig.out,
                           &job->sig.n_out)))
        return s;
    if (job->sig.n_out < 1) return bad(L, "\"outputs\" must have at least one entry");
    if ((s = parse_aliases(L, root, &job->sig))) return s;
    /* a kernel takes every input (a tensor list's elements each) and every fresh output as a
     * pointer argument: refuse here what no launch record could take */
    int n_fresh = 0;
    for (int j = 0; j < job->sig.n_out; j++) n_fresh += !job->sig.out_alias[j];
    if (job->sig.n_in + n_fresh > KF_LAUNCH_MAX_ARGS)
        return bad(L, "%d inputs and %d fresh output%s: a kernel takes at most %d tensors",
                   job->sig.n_in, n_fresh, n_fresh == 1 ? "" : "s", KF_LAUNCH_MAX_ARGS);
    for (int j = 0; strcmp(job->op, KF_CHAIN_OP) && j < job->sig.n_out; j++)
        if (job->sig.out_alias[j] < 0) return bad(L, "outputs[%d].alias_output: a chain job's only", j);
    if ((s = !strcmp(job->op, KF_CHAIN_OP) ? parse_chain(L, root, job)
                                           : parse_scalars(L, root, "", &job->sig)))
        return s;
    if ((s = parse_cases(L, root, job))) return s;

    if ((s = req_num(L, root, "eager_us", 0, 1e12, &job->eager_us))) return s;
    const cJSON *floor = field(root, "call_floor_us");
    if (floor && !get_num(floor, 0, 1e6, &job->call_floor_us))
        return bad(L, "\"call_floor_us\" must be a number in [0, 1e6]");
    if ((s = req_num(L, root, "bytes_moved", 0, 1e18, &job->bytes_moved))) return s;
    if ((s = req_num(L, root, "bandwidth_gbs", 0, 1e9, &job->bandwidth_gbs))) return s;
    if ((s = req_num(L, root, "atol", 0, 1e30, &job->atol))) return s;
    if ((s = req_num(L, root, "rtol", 0, 1e30, &job->rtol))) return s;
    if ((s = parse_output_tol(L, root, job))) return s;
    job->roofline_us = job->bytes_moved > 0 && job->bandwidth_gbs > 0
                           ? job->bytes_moved / (job->bandwidth_gbs * 1e3)
                           : 0;
    return parse_search(L, root, &job->search);
}

double kf_job_trust_floor_us(const kf_job *job)
{
    return job->roofline_us * (strcmp(job->backend, "host") ? 0.97 : 0.5);
}

int kf_job_trusts(const kf_job *job, double latency_us)
{
    const double max_x = 10.0 * (job->chain_def ? job->chain_def->n_members : 1);
    const int tenfold = (latency_us + job->call_floor_us) * max_x < job->eager_us;
    const int at_bandwidth = job->roofline_us > 0 && latency_us <= 4.0 * job->roofline_us;
    return latency_us > 0 && latency_us >= kf_job_trust_floor_us(job) && (!tenfold || at_bandwidth);
}

kf_status kf_job_load(const char *dir, kf_job **out, char *err, size_t errcap)
{
    char dummy[1];
    if (!err || !errcap) err = dummy, errcap = sizeof dummy;
    err[0] = 0;
    if (out) *out = NULL;
    if (!dir || !*dir || !out) {
        snprintf(err, errcap, "job: missing argument");
        return KF_ERR_INVALID;
    }
    loader L = {err, errcap};
    kf_status st;
    char *text = NULL;
    cJSON *root = NULL;
    kf_job *job = calloc(1, sizeof *job);
    if (!job) return nomem(&L);

    job->dir = realpath(dir, NULL);
    if (!job->dir) {
        snprintf(err, errcap, "job folder %s: %s", dir, strerror(errno));
        st = errno == ENOENT ? KF_ERR_NOT_FOUND : KF_ERR_IO;
        goto free_job;
    }
    if ((st = read_json_text(&L, job->dir, &text))) goto free_job;
    const char *end = NULL;
    root = cJSON_ParseWithOpts(text, &end, 1); /* 1: nothing may follow the document */
    if (!root) {
        long off = end && end >= text ? (long)(end - text) : -1;
        st = bad(&L, "not valid JSON (near byte %ld)", off);
        goto free_text;
    }
    st = parse_job(&L, root, job);
    cJSON_Delete(root);
free_text:
    free(text);
free_job:
    if (st != KF_OK) {
        kf_job_free(job);
        return st;
    }
    *out = job;
    return KF_OK;
}

void kf_job_free(kf_job *job)
{
    if (!job) return;
    for (int c = 0; c < job->n_cases && c < KF_JOB_MAX_CASES; c++) {
        for (int i = 0; i < KF_JOB_MAX_TENSORS; i++) free(job->cases[c].in_path[i]);
        for (int i = 0; i < KF_JOB_MAX_OUTPUTS; i++) free(job->cases[c].out_path[i]);
    }
    free(job->dir);
    free(job->op);
    free(job->signature);
    free(job->sig_hex);
    free(job->torch_version);
    free(job->outputs_layout);
    free(job->backend);
    free(job->chain);
    free(job->chain_def);
    free(job->search.proposer);
    free(job->search.cache_dir);
    free(job);
}
