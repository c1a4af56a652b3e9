/* Fault injection by swapping the table (proposer.h): a proposer that passes its inner proposer's
 * candidates through and rewrites every `every`-th one so that its kernel crashes, hangs or writes
 * out of bounds, so tests can watch the worker survive each.
 *
 * Host C: the entry is renamed and a new entry with the launch record's argument list does the
 * damage first, then calls the original. That needs no parameter names, so it also works for a
 * kernel declared as `void kf_kernel(KF_PARAMS)`.
 * CUDA (a __global__ can't call a __global__): the damage goes at the start of the entry's body;
 * out-of-bounds needs the name of the first output parameter, read from the parameter list.
 *
 * The launch record names no sizes, so "out of bounds" is one byte just before the first output
 * (guards and canaries sit on both sides of a buffer) and one (1 << 22) elements past its start,
 * far beyond any buffer of a test job. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compile/compiler.h"
#include "forge/propose/proposer.h"
#include "forge/templates/template.h"

#define MAX_MODES 16
#define INNER_NAME "kf_sabotaged_entry"

typedef enum mode { MODE_CRASH, MODE_HANG, MODE_OOB } mode;
static const char *const mode_names[] = {"crash", "hang", "oob"};

typedef struct sabotage {
    kf_proposer_i inner;
    mode modes[MAX_MODES];
    int n_modes;
    int every;
    long n_passed; /* candidates the inner proposer produced */
    long n_done;   /* of those, sabotaged (picks the next mode) */
    char name[48];
} sabotage;

/* ---- a small C/C++ scanner: comments, literals and directives are not code ---- */

static int is_ident_start(char c)
{
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
static int is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }

/* Past a comment or literal starting at s[i], else i itself. */
static size_t skip_opaque(const char *s, size_t i)
{
    if (s[i] == '/' && s[i + 1] == '*') {
        const char *e = strstr(s + i + 2, "*/");
        return e ? (size_t)(e - s) + 2 : strlen(s);
    }
    if (s[i] == '/' && s[i + 1] == '/') {
        while (s[i] && s[i] != '\n') i++;
        return i;
    }
    if (s[i] == '"' || s[i] == '\'') {
        char q = s[i++];
        while (s[i] && s[i] != q && s[i] != '\n') i += s[i] == '\\' && s[i + 1] ? 2 : 1;
        return s[i] == q ? i + 1 : i;
    }
    return i;
}

static size_t skip_space(const char *s, size_t i)
{
    for (;;) {
        while (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') i++;
        size_t j = skip_opaque(s, i);
        if (j == i || (s[i] != '/')) return i;
        i = j;
    }
}

/* The next identifier at or after *pos outside comments and literals: its start (or -1), its
 * length, and whether it sits in a preprocessor directive. *pos moves past it. */
typedef struct scanner {
    const char *s;
    size_t pos;
    int bol, directive;
} scanner;

static long next_ident(scanner *sc, size_t *len, int *in_directive)
{
    const char *s = sc->s;
    size_t i = sc->pos;
    while (s[i]) {
        char c = s[i];
        if (c == '\n') {
            if (!(i > 0 && s[i - 1] == '\\')) sc->directive = 0;
            sc->bol = 1;
            i++;
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\\') {
            i++;
        } else if (c == '#' && sc->bol) {
            sc->directive = 1, sc->bol = 0;
            i++;
        } else if (skip_opaque(s, i) != i) {
            i = skip_opaque(s, i);
            sc->bol = 0;
        } else if (c >= '0' && c <= '9') { /* a number: 0x1f and 1e5f hold no identifier */
            while (is_ident_char(s[i]) || s[i] == '.') i++;
            sc->bol = 0;
        } else if (is_ident_start(c)) {
            size_t j = i;
            while (is_ident_char(s[j])) j++;
            *len = j - i;
            *in_directive = sc->directive;
            sc->pos = j;
            sc->bol = 0;
            return (long)i;
        } else {
            sc->bol = 0;
            i++;
        }
    }
    sc->pos = i;
    return -1;
}

/* The matching ')' of the '(' at s[open], or 0. */
static size_t match_paren(const char *s, size_t open)
{
    int depth = 0;
    for (size_t i = open; s[i];) {
        size_t j = skip_opaque(s, i);
        if (j != i) {
            i = j;
            continue;
        }
        if (s[i] == '(') depth++;
        if (s[i] == ')' && --depth == 0) return i;
        i++;
    }
    return 0;
}

/* The definition of `entry`: offsets of its '(' and ')' and of its body's '{'. 0 if none. */
static int find_definition(const char *s, const char *entry, size_t *lp, size_t *rp,
                           size_t *body)
{
    scanner sc = {s, 0, 1, 0};
    size_t len, elen = strlen(entry);
    int dir;
    long at;
    while ((at = next_ident(&sc, &len, &dir)) >= 0) {
        if (dir || len != elen || memcmp(s + at, entry, elen)) continue;
        size_t l = skip_space(s, sc.pos);
        if (s[l] != '(') continue;
        size_t r = match_paren(s, l);
        if (!r) return 0;
        size_t b = skip_space(s, r + 1);
        if (s[b] != '{') continue; /* a declaration or a call */
        *lp = l, *rp = r, *body = b;
        return 1;
    }
    return 0;
}

/* The name of parameter `want` in the list s(lp..rp), when the list spells `n_args` named
 * parameters. 0 if it does not (a macro, unnamed parameters). */
static int param_name(const char *s, size_t lp, size_t rp, int want, int n_args, char *name,
                      size_t cap)
{
    static const char *const quals[] = {"const", "volatile", "restrict", "__restrict__",
                                        "__restrict"};
    int idx = 0, depth = 0, found = 0;
    size_t start = lp + 1;
    for (size_t i = lp + 1; i <= rp; i++) {
        size_t j = skip_opaque(s, i);
        if (j != i) {
            i = j - 1;
            continue;
        }
        char c = s[i];
        if (c == '(' || c == '[' || c == '<') depth++;
        if ((c == ')' || c == ']' || c == '>') && i < rp) depth--;
        if (!((c == ',' && depth == 0) || i == rp)) continue;
        /* one parameter in s[start, i): its last identifier that follows a '*' (or, without a
         * '*', the last of at least two identifiers) and is not a qualifier */
        char last[KF_ENTRY_MAX] = "";
        int n_ids = 0, after_star = 0, ok = 0;
        for (size_t k = start; k < i;) {
            size_t m = skip_opaque(s, k);
            if (m != k) {
                k = m;
            } else if (s[k] == '[') {
                break; /* `T name[]`: the name came before */
            } else if (s[k] == '*' || s[k] == '&') {
                after_star = 1, ok = 0, k++;
            } else if (is_ident_start(s[k])) {
                size_t e = k;
                while (e < i && is_ident_char(s[e])) e++;
                int qual = 0;
                for (size_t q = 0; q < sizeof quals / sizeof quals[0]; q++)
                    if (e - k == strlen(quals[q]) && !memcmp(s + k, quals[q], e - k)) qual = 1;
                if (!qual && e - k < sizeof last) {
                    memcpy(last, s + k, e - k);
                    last[e - k] = 0;
                    n_ids++;
                    ok = after_star || n_ids >= 2;
                }
                k = e;
            } else {
                k++;
            }
        }
        if (idx == want && ok && last[0]) {
            snprintf(name, cap, "%s", last);
            found = 1;
        }
        idx++;
        start = i + 1;
    }
    return found && idx == n_args;
}

/* ---- the damage ---- */

static int elem_size(const char *type)
{
    static const struct {
        const char *base;
        int size;
    } sizes[] = {{"double", 8}, {"int64_t", 8}, {"uint64_t", 8}, {"__half", 2},
                 {"__nv_bfloat16", 2}, {"int16_t", 2}, {"uint16_t", 2}, {"int8_t", 1},
                 {"uint8_t", 1}, {"bool", 1}, {"__nv_fp8", 1}};
    const char *base = strncmp(type, "const ", 6) ? type : type + 6;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (!strncmp(base, sizes[i].base, strlen(sizes[i].base))) return sizes[i].size;
    return 4;
}

/* The statements that do the damage, with `ptr` the first output pointer (oob only). */
static void damage(kf_strbuf *b, mode md, int cuda, const char *ptr, int esize)
{
    switch (md) {
    case MODE_CRASH:
        kf_strbuf_printf(b, "    %s\n", cuda ? "__trap();" : "*(volatile int *)0 = 1;");
        break;
    case MODE_HANG:
        kf_strbuf_printf(b, "    { volatile int kf_spin = 1; while (kf_spin) {} }\n");
        break;
    case MODE_OOB:
        if (cuda)
            kf_strbuf_printf(b, "    if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0 &&\n"
                                "        threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0)\n");
        kf_strbuf_printf(b,
                         "    {\n"
                         "        *((volatile unsigned char *)%s - 1) = 0x5a;\n"
                         "        *((volatile unsigned char *)%s + %ldL) = 0x5a;\n"
                         "    }\n",
                         ptr, ptr, (long)esize << 22);
        break;
    }
}

/* The rewritten source from `b`, or KF_ERR_NOMEM. */
static kf_status take(kf_strbuf *b, char **out, char *err, size_t errcap)
{
    *out = kf_strbuf_take(b);
    if (*out) return KF_OK;
    snprintf(err, errcap, "sabotage: out of memory");
    return KF_ERR_NOMEM;
}

/* CUDA: the damage at the start of the entry's body. */
static kf_status rewrite_cuda(const char *src, const kf_launch *l, int out_arg, mode md,
                              char **out, char *err, size_t errcap)
{
    size_t lp, rp, body;
    if (!find_definition(src, l->entry, &lp, &rp, &body)) {
        snprintf(err, errcap, "sabotage: no definition of %s in the source", l->entry);
        return KF_ERR_UNSUPPORTED;
    }
    char ptr[KF_ENTRY_MAX] = "";
    if (md == MODE_OOB &&
        !param_name(src, lp, rp, out_arg, l->n_args + l->n_ints, ptr, sizeof ptr)) {
        snprintf(err, errcap, "sabotage: cannot read the name of argument %d of %s", out_arg,
                 l->entry);
        return KF_ERR_UNSUPPORTED;
    }
    kf_strbuf b = {0};
    kf_strbuf_printf(&b, "%.*s\n    /* kernel forge sabotage: %s */\n", (int)(body + 1), src,
                     mode_names[md]);
    damage(&b, md, 1, ptr, out_arg >= 0 ? elem_size(l->arg_types[out_arg]) : 4);
    kf_strbuf_printf(&b, "%s", src + body + 1);
    return take(&b, out, err, errcap);
}

/* Host C: rename the entry everywhere, then a new entry does the damage and calls it. */
static kf_status rewrite_host(const char *src, const kf_launch *l, int out_arg, mode md,
                              char **out, char *err, size_t errcap)
{
    kf_strbuf b = {0};
    scanner sc = {src, 0, 1, 0};
    size_t len, elen = strlen(l->entry), copied = 0;
    int dir, renamed = 0;
    long at;
    while ((at = next_ident(&sc, &len, &dir)) >= 0) {
        if (len != elen || memcmp(src + at, l->entry, elen)) continue;
        kf_strbuf_printf(&b, "%.*s%s", (int)((size_t)at - copied), src + copied, INNER_NAME);
        copied = (size_t)at + len;
        renamed++;
    }
    if (!renamed) {
        kf_strbuf_free(&b);
        snprintf(err, errcap, "sabotage: the source never names %s", l->entry);
        return KF_ERR_UNSUPPORTED;
    }
    kf_strbuf_printf(&b, "%s\n\n/* ---- kernel forge sabotage: %s ---- */\nvoid %s(", src + copied,
                     mode_names[md], l->entry);
    for (int i = 0; i < l->n_args; i++)
        kf_strbuf_printf(&b, "%s%svoid *kf_a%d", i ? ", " : "",
                         strncmp(l->arg_types[i], "const ", 6) ? "" : "const ", i);
    for (int j = 0; j < l->n_ints; j++) kf_strbuf_printf(&b, ", long long kf_i%d", j);
    kf_strbuf_printf(&b, ")\n{\n");
    char ptr[16] = "";
    snprintf(ptr, sizeof ptr, "kf_a%d", out_arg);
    damage(&b, md, 0, ptr, out_arg >= 0 ? elem_size(l->arg_types[out_arg]) : 4);
    kf_strbuf_printf(&b, "    %s(", INNER_NAME);
    for (int i = 0; i < l->n_args; i++) kf_strbuf_printf(&b, "%skf_a%d", i ? ", " : "", i);
    for (int j = 0; j < l->n_ints; j++) kf_strbuf_printf(&b, ", kf_i%d", j);
    kf_strbuf_printf(&b, ");\n}\n");
    return take(&b, out, err, errcap);
}

/* meta_json with "sabotage": mode added (a fresh object if there was none or it was not one). */
static char *meta_with(const char *meta, mode md)
{
    cJSON *o = meta ? cJSON_Parse(meta) : NULL;
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        o = cJSON_CreateObject();
    }
    char *s = NULL;
    if (o && cJSON_AddStringToObject(o, "sabotage", mode_names[md]))
        s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

static kf_status sabotage_candidate(sabotage *sb, kf_candidate *c, char *err, size_t errcap)
{
    mode md = sb->modes[sb->n_done % sb->n_modes];
    kf_launch l;
    char why[256];
    if (!c->source || kf_launch_parse(c->launch_json, &l, why, sizeof why) != KF_OK) {
        snprintf(err, errcap, "sabotage: the candidate has no usable source or launch record: %s",
                 c->source ? why : "no source");
        return KF_ERR_INVALID;
    }
    int out_arg = -1;
    for (int i = 0; i < l.n_args && out_arg < 0; i++)
        if (strncmp(l.arg_types[i], "const ", 6)) out_arg = i;
    if (md == MODE_OOB && out_arg < 0) {
        snprintf(err, errcap, "sabotage: oob needs an output, and every argument is const");
        return KF_ERR_INVALID;
    }
    int cuda = !strcmp(c->backend, "nvrtc") || strstr(c->source, "__global__");
    char *src = NULL;
    kf_status st = cuda ? rewrite_cuda(c->source, &l, out_arg, md, &src, err, errcap)
                        : rewrite_host(c->source, &l, out_arg, md, &src, err, errcap);
    if (st != KF_OK) return st;
    char *meta = meta_with(c->meta_json, md);
    if (!meta) {
        free(src);
        snprintf(err, errcap, "sabotage: out of memory");
        return KF_ERR_NOMEM;
    }
    free(c->source);
    c->source = src;
    free(c->meta_json);
    c->meta_json = meta;
    char was[sizeof c->change];
    memcpy(was, c->change, sizeof was);
    snprintf(c->change, sizeof c->change, "sabotaged: %s%s%.140s%s", mode_names[md],
             was[0] ? " (" : "", was, was[0] ? ")" : "");
    sb->n_done++;
    return KF_OK;
}

static kf_status sabotage_propose(void *self, int parent, int child_id, kf_candidate *out,
                                  char *err, size_t errcap)
{
    sabotage *sb = self;
    char dummy[1];
    if (!err || !errcap) err = dummy, errcap = sizeof dummy;
    kf_status st = sb->inner.propose(sb->inner.self, parent, child_id, out, err, errcap);
    if (st != KF_OK) return st;
    if (++sb->n_passed % sb->every) return KF_OK;
    st = sabotage_candidate(sb, out, err, errcap);
    if (st != KF_OK) kf_candidate_clear(out);
    return st;
}

static void sabotage_feedback(void *self, int id, const char *status, double latency_us,
                              const char *error)
{
    sabotage *sb = self;
    if (sb->inner.feedback) sb->inner.feedback(sb->inner.self, id, status, latency_us, error);
}

static void sabotage_destroy(void *self)
{
    sabotage *sb = self;
    if (!sb) return;
    if (sb->inner.destroy) sb->inner.destroy(sb->inner.self);
    free(sb);
}

static int parse_modes(sabotage *sb, const char *modes, char *err, size_t errcap)
{
    const char *p = modes;
    while (*p) {
        while (*p == ' ' || *p == ',') p++;
        if (!*p) break;
        size_t n = strcspn(p, ", ");
        int found = -1;
        for (int m = 0; m < 3; m++)
            if (n == strlen(mode_names[m]) && !strncmp(p, mode_names[m], n)) found = m;
        if (found < 0) {
            snprintf(err, errcap, "sabotage: unknown mode \"%.*s\" (crash, hang, oob)", (int)n, p);
            return 0;
        }
        if (sb->n_modes == MAX_MODES) {
            snprintf(err, errcap, "sabotage: more than %d modes", MAX_MODES);
            return 0;
        }
        sb->modes[sb->n_modes++] = (mode)found;
        p += n;
    }
    if (!sb->n_modes) {
        snprintf(err, errcap, "sabotage: no mode given (crash, hang, oob)");
        return 0;
    }
    return 1;
}

kf_status kf_proposer_sabotage_create(kf_proposer_i inner, const char *modes, int every,
                                      kf_proposer_i *out, char *err, size_t errcap)
{
    char dummy[1];
    if (!err || !errcap) err = dummy, errcap = sizeof dummy;
    err[0] = 0;
    if (!out || !modes || !inner.propose) {
        snprintf(err, errcap, "sabotage: missing argument");
        return KF_ERR_INVALID;
    }
    if (every < 1) {
        snprintf(err, errcap, "sabotage: every must be at least 1, not %d", every);
        return KF_ERR_INVALID;
    }
    sabotage *sb = calloc(1, sizeof *sb);
    if (!sb) {
        snprintf(err, errcap, "sabotage: out of memory");
        return KF_ERR_NOMEM;
    }
    if (!parse_modes(sb, modes, err, errcap)) {
        free(sb); /* the inner proposer stays the caller's */
        return KF_ERR_INVALID;
    }
    sb->inner = inner;
    sb->every = every;
    snprintf(sb->name, sizeof sb->name, "sabotage(%s)", inner.name ? inner.name : "?");
    memset(out, 0, sizeof *out);
    out->name = sb->name;
    out->propose = sabotage_propose;
    out->feedback = sabotage_feedback;
    out->destroy = sabotage_destroy;
    out->self = sb;
    return KF_OK;
}
