/* The launch record parser. Records are untrusted (an LLM or a bundle may have written them), and
 * their types end up pasted into generated C, so everything is checked against fixed lists and
 * normalized to one spelling before anyone sees it. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "compile/compiler.h"

/* ints travel in the pointer array as values (compiler.h) */
_Static_assert(sizeof(void *) == sizeof(int64_t), "launch-time sizes need 64-bit pointers");

/* A record is a few hundred bytes; refuse to parse megabytes of junk. */
#define LAUNCH_JSON_MAX 16384

/* CUDA limits for every GPU we target (compute capability >= 7.0). */
#define BLOCK_THREADS_MAX 1024u
#define BLOCK_Z_MAX 64u
#define GRID_X_MAX 2147483647u
#define GRID_YZ_MAX 65535u
#define SMEM_MAX (227u * 1024u) /* the largest opt-in dynamic shared memory (sm_90) */

/* Element types an argument pointer may have. */
static const char *const elem_types[] = {
    "float",   "double",  "__half",  "__nv_bfloat16", "__nv_fp8_e4m3", "__nv_fp8_e5m2",
    "int8_t",  "uint8_t", "int16_t", "uint16_t",      "int32_t",       "uint32_t",
    "int64_t", "uint64_t", "bool",
};

static kf_status fail(char *err, size_t errcap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static kf_status fail(char *err, size_t errcap, const char *fmt, ...)
{
    if (err && errcap) {
        int n = snprintf(err, errcap, "launch record: ");
        if (n >= 0 && (size_t)n < errcap) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(err + n, errcap - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return KF_ERR_INVALID;
}

static int is_ident(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n > max) return 0;
    if (!(s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z'))) return 0;
    for (size_t i = 1; i < n; i++) {
        char c = s[i];
        if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9')))
            return 0;
    }
    return 1;
}

/* Normalize "const float *", "float const*", " float* " to "const float*" / "float*".
 * Returns 0 if the spelling is not `[const] T *` or `T const *` with T in elem_types. */
static int normalize_type(const char *in, char *out, size_t cap)
{
    /* Tokens: identifiers and '*'; anything else (parentheses, quotes, ';') is rejected. */
    char tok[4][KF_LAUNCH_TYPE_MAX];
    int nt = 0;
    const char *p = in;
    while (*p) {
        if (*p == ' ' || *p == '\t') {
            p++;
            continue;
        }
        if (nt == 4) return 0;
        if (*p == '*') {
            strcpy(tok[nt++], "*");
            p++;
            continue;
        }
        size_t n = 0;
        while (*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
               (*p >= '0' && *p <= '9')) {
            if (n + 1 >= sizeof tok[0]) return 0;
            tok[nt][n++] = *p++;
        }
        if (n == 0) return 0; /* a character that is neither space, '*' nor identifier */
        tok[nt++][n] = 0;
    }
    int is_const = 0;
    const char *base = NULL;
    if (nt == 2 && !strcmp(tok[1], "*")) {
        base = tok[0];
    } else if (nt == 3 && !strcmp(tok[0], "const") && !strcmp(tok[2], "*")) {
        base = tok[1], is_const = 1;
    } else if (nt == 3 && !strcmp(tok[1], "const") && !strcmp(tok[2], "*")) {
        base = tok[0], is_const = 1;
    } else {
        return 0;
    }
    for (size_t i = 0; i < sizeof elem_types / sizeof elem_types[0]; i++) {
        if (strcmp(base, elem_types[i])) continue;
        int n = snprintf(out, cap, "%s%s*", is_const ? "const " : "", elem_types[i]);
        return n > 0 && (size_t)n < cap;
    }
    return 0;
}

/* Three integers in [1, max[i]]. */
static kf_status parse_dim3(const cJSON *a, const char *key, const unsigned max[3],
                            unsigned out[3], char *err, size_t errcap)
{
    if (!cJSON_IsArray(a)) return fail(err, errcap, "\"%s\" must be an array of 3 integers", key);
    int n = cJSON_GetArraySize(a);
    if (n != 3)
        return fail(err, errcap, "\"%s\" must have exactly 3 entries, not %d", key, n);
    int i = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, a)
    {
        if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble))
            return fail(err, errcap, "\"%s\"[%d] must be an integer", key, i);
        if (v->valuedouble < 1 || v->valuedouble > (double)max[i])
            return fail(err, errcap, "\"%s\"[%d] = %.17g is outside 1..%u", key, i,
                        v->valuedouble, max[i]);
        out[i] = (unsigned)v->valuedouble;
        i++;
    }
    return KF_OK;
}

/* "numel(tK)" or "size(tK,D)" at *p (spaces allowed between tokens); advances *p. */
static int parse_term(const char **p, int n_args, int *arg, int *dim)
{
    const char *s = *p;
    int numel = 0;
    while (*s == ' ') s++;
    if (!strncmp(s, "numel(", 6)) numel = 1, s += 6;
    else if (!strncmp(s, "size(", 5)) s += 5;
    else return 0;
    while (*s == ' ') s++;
    if (*s++ != 't' || *s < '0' || *s > '9') return 0;
    int k = 0;
    while (*s >= '0' && *s <= '9' && k < 100) k = 10 * k + (*s++ - '0');
    if (k >= n_args) return 0;
    while (*s == ' ') s++;
    int d = KF_LAUNCH_NUMEL;
    if (!numel) {
        if (*s++ != ',') return 0;
        while (*s == ' ') s++;
        int neg = *s == '-';
        if (neg) s++;
        if (*s < '0' || *s > '9') return 0;
        d = 0;
        while (*s >= '0' && *s <= '9' && d < 100) d = 10 * d + (*s++ - '0');
        if (neg) d = -d;
        if (d < -KF_MAX_DIMS || d >= KF_MAX_DIMS) return 0;
        while (*s == ' ') s++;
    }
    if (*s++ != ')') return 0;
    *arg = k, *dim = d;
    *p = s;
    return 1;
}

/* "ints": launch-time sizes, each `term` or `term / term` (compiler.h). */
static kf_status parse_ints(const cJSON *ints, kf_launch *l, char *err, size_t errcap)
{
    if (!cJSON_IsArray(ints)) return fail(err, errcap, "\"ints\" must be an array of strings");
    int n = cJSON_GetArraySize(ints);
    if (n > KF_LAUNCH_MAX_INTS)
        return fail(err, errcap, "\"ints\" has %d entries, at most %d", n, KF_LAUNCH_MAX_INTS);
    const cJSON *it;
    cJSON_ArrayForEach(it, ints)
    {
        kf_launch_int *v = &l->ints[l->n_ints];
        const char *p = cJSON_IsString(it) ? it->valuestring : NULL;
        int ok = p && strlen(p) < 64 && parse_term(&p, l->n_args, &v->arg, &v->dim);
        v->den_arg = -1, v->den_dim = 0;
        while (ok && *p == ' ') p++;
        if (ok && *p == '/') {
            p++;
            ok = parse_term(&p, l->n_args, &v->den_arg, &v->den_dim);
            while (ok && *p == ' ') p++;
        }
        if (!ok || *p)
            return fail(err, errcap,
                        "ints[%d] must be \"numel(tK)\", \"size(tK,D)\" or one divided by "
                        "another, with K a pointer argument and |D| < %d",
                        l->n_ints, KF_MAX_DIMS);
        l->n_ints++;
    }
    if (l->n_args + l->n_ints > KF_LAUNCH_MAX_ARGS)
        return fail(err, errcap, "%d pointer arguments and %d ints: more than %d in all",
                    l->n_args, l->n_ints, KF_LAUNCH_MAX_ARGS);
    return KF_OK;
}

/* "grid_from": [i, per, mul] (compiler.h); after "ints". */
static kf_status parse_grid_from(const cJSON *g, kf_launch *l, char *err, size_t errcap)
{
    static const double hi[3] = {KF_LAUNCH_MAX_INTS - 1, 1 << 20, 64};
    double v[3];
    int n = cJSON_IsArray(g) ? cJSON_GetArraySize(g) : 0;
    for (int k = 0; k < 3 && n == 3; k++) {
        const cJSON *e = cJSON_GetArrayItem(g, k);
        v[k] = cJSON_IsNumber(e) ? e->valuedouble : -1.0;
        if (v[k] != floor(v[k]) || v[k] < (k ? 1 : 0) || v[k] > hi[k]) n = 0;
    }
    if (n != 3 || (int)v[0] >= l->n_ints)
        return fail(err, errcap, "\"grid_from\" must be [i, per, mul] with i one of the ints, "
                    "1 <= per <= %d, 1 <= mul <= 64", 1 << 20);
    l->grid_int = (int)v[0];
    l->grid_per = (unsigned)v[1];
    l->grid_mul = (unsigned)v[2];
    return KF_OK;
}

kf_status kf_launch_grid_x(const kf_launch *l, const int64_t *ints, unsigned *gx)
{
    if (!l->grid_per) {
        *gx = l->grid[0];
        return KF_OK;
    }
    if (l->grid_int < 0 || l->grid_int >= l->n_ints || !l->grid_mul) return KF_ERR_INVALID;
    int64_t v = ints[l->grid_int];
    if (v < 1) return KF_ERR_INVALID;
    int64_t blocks = (v - 1) / l->grid_per + 1;
    if (blocks > (int64_t)(GRID_X_MAX / l->grid_mul)) return KF_ERR_INVALID;
    *gx = (unsigned)blocks * l->grid_mul;
    return KF_OK;
}

static int term_value(const kf_dims *t, int n, int arg, int dim, int64_t *v)
{
    if (arg < 0 || arg >= n || t[arg].ndim < 0 || t[arg].ndim > KF_MAX_DIMS) return 0;
    if (dim == KF_LAUNCH_NUMEL) {
        int64_t p = 1;
        for (int d = 0; d < t[arg].ndim; d++) {
            int64_t s = t[arg].sizes[d];
            if (s < 0 || (s && p > INT64_MAX / s)) return 0;
            p *= s;
        }
        *v = p;
        return 1;
    }
    int d = dim < 0 ? dim + t[arg].ndim : dim;
    if (d < 0 || d >= t[arg].ndim || t[arg].sizes[d] < 0) return 0;
    *v = t[arg].sizes[d];
    return 1;
}

kf_status kf_launch_ints(const kf_launch *l, const kf_dims *t, int n, int64_t *out)
{
    for (int i = 0; i < l->n_ints; i++) {
        const kf_launch_int *v = &l->ints[i];
        int64_t a, b = 1;
        if (!term_value(t, n, v->arg, v->dim, &a)) return KF_ERR_INVALID;
        if (v->den_arg >= 0 && (!term_value(t, n, v->den_arg, v->den_dim, &b) || b == 0 || a % b))
            return KF_ERR_INVALID;
        out[i] = a / b;
    }
    return KF_OK;
}

kf_status kf_launch_parse(const char *json, kf_launch *out, char *err, size_t errcap)
{
    if (err && errcap) err[0] = 0;
    if (!json || !out) return fail(err, errcap, "no record given");
    size_t len = strnlen(json, LAUNCH_JSON_MAX + 1);
    if (len > LAUNCH_JSON_MAX)
        return fail(err, errcap, "longer than %d bytes", LAUNCH_JSON_MAX);

    /* cJSON would cut a string at an escaped NUL ("k\u0000x" reads as "k"): refuse them all */
    if (strcasestr(json, "\\u0000")) return fail(err, errcap, "contains an escaped NUL (\\u0000)");

    kf_launch l;
    memset(&l, 0, sizeof l);
    l.grid[0] = l.grid[1] = l.grid[2] = 1;
    l.block[0] = l.block[1] = l.block[2] = 1;

    kf_status st = KF_OK;
    /* len + 1 takes the terminator in, so trailing garbage after the object is an error */
    cJSON *root = cJSON_ParseWithLengthOpts(json, len + 1, NULL, 1);
    if (!root) return fail(err, errcap, "not valid JSON (or text after the object)");
    if (!cJSON_IsObject(root)) {
        st = fail(err, errcap, "must be a JSON object");
        goto free_root;
    }

    /* Known keys only, each at most once (cJSON keeps duplicates; which one wins is a guess). */
    static const char *const keys[] = {"entry", "grid", "block", "smem", "args", "ints",
                                       "grid_from"};
    enum { N_KEYS = sizeof keys / sizeof keys[0] };
    const cJSON *seen[N_KEYS] = {0};
    const cJSON *it;
    cJSON_ArrayForEach(it, root)
    {
        size_t k = 0;
        while (k < N_KEYS && strcmp(it->string, keys[k])) k++;
        if (k == N_KEYS) {
            char shown[40];
            snprintf(shown, sizeof shown, "%s", it->string);
            st = fail(err, errcap,
                      "unknown key \"%s%s\" (allowed: entry, grid, block, smem, args, ints, "
                      "grid_from)",
                      shown, strlen(it->string) >= sizeof shown ? "..." : "");
            goto free_root;
        }
        if (seen[k]) {
            st = fail(err, errcap, "key \"%s\" given twice", keys[k]);
            goto free_root;
        }
        seen[k] = it;
    }
    const cJSON *entry = seen[0], *grid = seen[1], *block = seen[2], *smem = seen[3],
                *args = seen[4], *ints = seen[5], *grid_from = seen[6];

    if (!entry || !cJSON_IsString(entry)) {
        st = fail(err, errcap, "\"entry\" (a string) is required");
        goto free_root;
    }
    if (!is_ident(entry->valuestring, KF_ENTRY_MAX - 1)) {
        st = fail(err, errcap, "\"entry\" must be a C identifier of at most %d characters",
                  KF_ENTRY_MAX - 1);
        goto free_root;
    }
    strcpy(l.entry, entry->valuestring);

    /* grid and block default to [1,1,1]: the host backend ignores them. */
    if (grid) {
        static const unsigned gmax[3] = {GRID_X_MAX, GRID_YZ_MAX, GRID_YZ_MAX};
        st = parse_dim3(grid, "grid", gmax, l.grid, err, errcap);
        if (st != KF_OK) goto free_root;
    }
    if (block) {
        static const unsigned bmax[3] = {BLOCK_THREADS_MAX, BLOCK_THREADS_MAX, BLOCK_Z_MAX};
        st = parse_dim3(block, "block", bmax, l.block, err, errcap);
        if (st != KF_OK) goto free_root;
        unsigned long long threads = (unsigned long long)l.block[0] * l.block[1] * l.block[2];
        if (threads > BLOCK_THREADS_MAX) {
            st = fail(err, errcap, "block has %llu threads, more than %u", threads,
                      BLOCK_THREADS_MAX);
            goto free_root;
        }
    }
    if (smem) {
        if (!cJSON_IsNumber(smem) || smem->valuedouble != floor(smem->valuedouble) ||
            smem->valuedouble < 0 || smem->valuedouble > SMEM_MAX) {
            st = fail(err, errcap, "\"smem\" must be an integer number of bytes in 0..%u",
                      SMEM_MAX);
            goto free_root;
        }
        l.smem = (unsigned)smem->valuedouble;
    }

    if (!args || !cJSON_IsArray(args)) {
        st = fail(err, errcap, "\"args\" (an array of pointer types) is required");
        goto free_root;
    }
    int n = cJSON_GetArraySize(args);
    if (n < 1 || n > KF_LAUNCH_MAX_ARGS) {
        st = fail(err, errcap, "\"args\" must have 1..%d entries, not %d", KF_LAUNCH_MAX_ARGS, n);
        goto free_root;
    }
    cJSON_ArrayForEach(it, args)
    {
        if (!cJSON_IsString(it)) {
            st = fail(err, errcap, "args[%d] must be a string", l.n_args);
            goto free_root;
        }
        if (!normalize_type(it->valuestring, l.arg_types[l.n_args], KF_LAUNCH_TYPE_MAX)) {
            char shown[48];
            snprintf(shown, sizeof shown, "%s", it->valuestring);
            st = fail(err, errcap,
                      "args[%d] = \"%s%s\" is not an allowed pointer type (\"[const] T*\" with T "
                      "one of float, double, __half, __nv_bfloat16, __nv_fp8_e4m3, "
                      "__nv_fp8_e5m2, [u]int{8,16,32,64}_t, bool)",
                      l.n_args, shown, strlen(it->valuestring) >= sizeof shown ? "..." : "");
            goto free_root;
        }
        l.n_args++;
    }
    if (ints) {
        st = parse_ints(ints, &l, err, errcap);
        if (st != KF_OK) goto free_root;
    }
    if (grid_from) {
        st = parse_grid_from(grid_from, &l, err, errcap);
        if (st != KF_OK) goto free_root;
    }
    *out = l;

free_root:
    cJSON_Delete(root);
    return st;
}
