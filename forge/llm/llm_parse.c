/* A model's reply -> one kernel source + one launch record (llm.h). The reply is untrusted text:
 * anything but exactly one code block and one launch record is refused with a reason the model
 * can act on (it goes back into the next prompt as feedback). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "compile/compiler.h"
#include "forge/llm/llm.h"

#define MAX_BLOCKS 16

typedef struct block {
    const char *info, *body; /* info string after the fence; body after the fence line */
    size_t info_len, body_len;
} block;

/* every refusal here is an invalid input */
#define bad(err, cap, ...) kf_fail(err, cap, KF_ERR_INVALID, __VA_ARGS__)

/* The fence at the start of line `p` (up to 3 spaces of indent): its length (>= 3), else 0. */
static size_t fence_at(const char *p)
{
    int ind = 0;
    while (*p == ' ' && ind < 3) p++, ind++;
    size_t n = 0;
    while (p[n] == '`') n++;
    return n >= 3 ? n + (size_t)ind : 0;
}

static const char *line_end(const char *p)
{
    const char *e = strchr(p, '\n');
    return e ? e : p + strlen(p);
}

/* Split the text into fenced blocks. -1: a block is never closed; -2: more than MAX_BLOCKS. */
static int find_blocks(const char *text, block *b, int *n)
{
    *n = 0;
    const char *p = text;
    while (*p) {
        const char *e = line_end(p);
        size_t f = fence_at(p);
        if (f) {
            if (*n == MAX_BLOCKS) return -2;
            block *k = &b[(*n)++];
            k->info = p + f;
            while (k->info < e && (*k->info == ' ' || *k->info == '`')) k->info++;
            k->info_len = (size_t)(e - k->info);
            while (k->info_len && (k->info[k->info_len - 1] == '\r' || k->info[k->info_len - 1] == ' '))
                k->info_len--;
            k->body = *e ? e + 1 : e;
            const char *q = k->body;
            for (;;) {
                if (!*q) return -1;
                const char *qe = line_end(q);
                if (fence_at(q)) {
                    k->body_len = (size_t)(q - k->body);
                    p = *qe ? qe + 1 : qe;
                    break;
                }
                q = *qe ? qe + 1 : qe;
            }
            continue;
        }
        p = *e ? e + 1 : e;
    }
    return 0;
}

static int info_is(const block *k, const char *word)
{
    size_t n = strlen(word);
    return k->info_len >= n && !strncmp(k->info, word, n) &&
           (k->info_len == n || k->info[n] == ' ' || k->info[n] == '{');
}

/* a block without a language whose body is a JSON object naming an entry is a launch record too */
static int looks_like_record(const block *k)
{
    if (k->info_len) return 0;
    size_t i = 0;
    while (i < k->body_len && (k->body[i] == ' ' || k->body[i] == '\n' || k->body[i] == '\r')) i++;
    if (i == k->body_len || k->body[i] != '{') return 0;
    cJSON *d = cJSON_ParseWithLength(k->body, k->body_len);
    int yes = cJSON_IsObject(d) && cJSON_GetObjectItemCaseSensitive(d, "entry");
    cJSON_Delete(d);
    return yes;
}

/* `name(` as an identifier somewhere in src */
static int defines(const char *src, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = strstr(src, name); p; p = strstr(p + 1, name)) {
        char before = p == src ? ' ' : p[-1];
        const char *q = p + n;
        while (*q == ' ' || *q == '\t' || *q == '\n') q++;
        int ident_before = before == '_' || (before >= 'a' && before <= 'z') ||
                           (before >= 'A' && before <= 'Z') || (before >= '0' && before <= '9');
        if (!ident_before && *q == '(') return 1;
    }
    return 0;
}

static char *normalized_record(const kf_launch *l)
{
    cJSON *d = cJSON_CreateObject();
    if (!d) return NULL;
    cJSON_AddStringToObject(d, "entry", l->entry);
    int g[3] = {(int)l->grid[0], (int)l->grid[1], (int)l->grid[2]};
    int b[3] = {(int)l->block[0], (int)l->block[1], (int)l->block[2]};
    cJSON_AddItemToObject(d, "grid", cJSON_CreateIntArray(g, 3));
    cJSON_AddItemToObject(d, "block", cJSON_CreateIntArray(b, 3));
    cJSON_AddNumberToObject(d, "smem", l->smem);
    cJSON *a = cJSON_AddArrayToObject(d, "args");
    for (int i = 0; i < l->n_args; i++) cJSON_AddItemToArray(a, cJSON_CreateString(l->arg_types[i]));
    char *s = cJSON_PrintUnformatted(d);
    cJSON_Delete(d);
    return s;
}

kf_status kf_llm_parse_answer(const char *text, char **source, char **launch_json, char *err,
                              size_t cap)
{
    *source = *launch_json = NULL;
    if (!text) return bad(err, cap, "empty reply");
    block b[MAX_BLOCKS];
    int n;
    int rc = find_blocks(text, b, &n);
    if (rc == -1) return bad(err, cap, "a ``` code block is never closed (reply cut off?)");
    if (rc == -2) return bad(err, cap, "more than %d ``` blocks: send exactly two (the kernel, "
                                       "then the launch record)", MAX_BLOCKS);
    int code = -1, rec = -1, n_code = 0, n_rec = 0;
    for (int i = 0; i < n; i++) {
        if (info_is(&b[i], "json") || looks_like_record(&b[i])) {
            rec = i, n_rec++;
        } else {
            code = i, n_code++;
        }
    }
    if (n_code == 0) return bad(err, cap, "no kernel: the reply has no ``` code block with the source");
    if (n_code > 1)
        return bad(err, cap, "%d code blocks: send exactly one kernel source in one ``` block", n_code);
    if (n_rec == 0)
        return bad(err, cap, "no launch record: add one ```json block {\"entry\": ..., \"grid\": ..., "
                             "\"block\": ..., \"smem\": ..., \"args\": [...]}");
    if (n_rec > 1) return bad(err, cap, "%d launch records: send exactly one ```json block", n_rec);
    const block *c = &b[code], *r = &b[rec];
    if (c->body_len == 0) return bad(err, cap, "the kernel code block is empty");
    if (c->body_len > KF_LLM_SOURCE_MAX)
        return bad(err, cap, "the kernel source is %zu bytes, more than the %u allowed", c->body_len,
                   KF_LLM_SOURCE_MAX);
    if (r->body_len > 16384) return bad(err, cap, "the launch record is larger than 16 KiB");
    char *rtext = strndup(r->body, r->body_len);
    if (!rtext) return bad(err, cap, "out of memory");
    kf_launch l;
    char why[256];
    kf_status st = kf_launch_parse(rtext, &l, why, sizeof why);
    free(rtext);
    if (st != KF_OK) return bad(err, cap, "%s", why);
    char *src = strndup(c->body, c->body_len);
    if (!src) return bad(err, cap, "out of memory");
    if (strlen(src) != c->body_len) { /* cannot happen from a C string; kept for the invariant */
        free(src);
        return bad(err, cap, "the kernel source contains a NUL byte");
    }
    if (!defines(src, l.entry)) {
        free(src);
        return bad(err, cap, "the source does not define the entry \"%s\" the launch record names",
                   l.entry);
    }
    char *norm = normalized_record(&l);
    if (!norm) {
        free(src);
        return bad(err, cap, "out of memory");
    }
    *source = src, *launch_json = norm;
    return KF_OK;
}
