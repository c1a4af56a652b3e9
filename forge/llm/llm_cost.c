/* Tokens -> dollars (llm.h). The built-in prices are list prices in US$ per million tokens at the
 * time of writing; they change, so KFORGE_LLM_PRICES (a JSON file) overrides them. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forge/llm/llm.h"

static const struct { const char *prefix; double in, out; } builtin[] = {
    {"claude-opus-4", 15.0, 75.0},   {"claude-sonnet-4", 3.0, 15.0},
    {"claude-3-7-sonnet", 3.0, 15.0}, {"claude-3-5-sonnet", 3.0, 15.0},
    {"claude-3-5-haiku", 0.8, 4.0},  {"claude-haiku-4", 1.0, 5.0},
    {"gpt-4o-mini", 0.15, 0.6},      {"gpt-4o", 2.5, 10.0},
    {"gpt-4.1-nano", 0.1, 0.4},      {"gpt-4.1-mini", 0.4, 1.6},   {"gpt-4.1", 2.0, 8.0},
    {"gpt-5-mini", 0.25, 2.0},       {"gpt-5", 1.25, 10.0},
    {"o4-mini", 1.1, 4.4},           {"o3", 2.0, 8.0},
};

#define PRICES_FILE_MAX (1u << 20)

static kf_status from_file(const char *model, const char *path, kf_llm_price *out, char *err,
                           size_t cap)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, cap, "KFORGE_LLM_PRICES %s: cannot open", path);
        return KF_ERR_IO;
    }
    char *text = malloc(PRICES_FILE_MAX + 1);
    size_t n = text ? fread(text, 1, PRICES_FILE_MAX + 1, f) : 0;
    fclose(f);
    if (!text || n > PRICES_FILE_MAX) {
        free(text);
        snprintf(err, cap, "KFORGE_LLM_PRICES %s: unreadable or larger than 1 MiB", path);
        return KF_ERR_INVALID;
    }
    cJSON *doc = cJSON_ParseWithLength(text, n);
    free(text);
    if (!cJSON_IsObject(doc)) {
        cJSON_Delete(doc);
        snprintf(err, cap, "KFORGE_LLM_PRICES %s: not a JSON object {\"model\": {\"input\": $/Mtok, "
                           "\"output\": $/Mtok}}", path);
        return KF_ERR_INVALID;
    }
    size_t best = 0;
    const cJSON *it;
    kf_status st = KF_OK;
    cJSON_ArrayForEach(it, doc)
    {
        const cJSON *in = cJSON_GetObjectItemCaseSensitive(it, "input");
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(it, "output");
        if (!cJSON_IsNumber(in) || !cJSON_IsNumber(o) || in->valuedouble < 0 || o->valuedouble < 0) {
            snprintf(err, cap, "KFORGE_LLM_PRICES %s: \"%.64s\" needs numbers input and output >= 0",
                     path, it->string);
            st = KF_ERR_INVALID;
            break;
        }
        size_t len = strlen(it->string);
        if (!strncmp(model, it->string, len) && (len > best || !out->known)) {
            best = len;
            out->in_per_mtok = in->valuedouble, out->out_per_mtok = o->valuedouble, out->known = 1;
        }
    }
    cJSON_Delete(doc);
    return st;
}

kf_status kf_llm_price_lookup(const char *model, const char *prices_path, kf_llm_price *out,
                              char *err, size_t cap)
{
    memset(out, 0, sizeof *out);
    if (prices_path && prices_path[0]) {
        kf_status st = from_file(model, prices_path, out, err, cap);
        if (st != KF_OK || out->known) return st;
    }
    size_t best = 0;
    for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++) {
        size_t len = strlen(builtin[i].prefix);
        if (len > best && !strncmp(model, builtin[i].prefix, len)) {
            best = len;
            out->in_per_mtok = builtin[i].in, out->out_per_mtok = builtin[i].out, out->known = 1;
        }
    }
    return KF_OK;
}

double kf_llm_cost_usd(const kf_llm_price *p, long long in_tokens, long long out_tokens)
{
    return ((double)in_tokens * p->in_per_mtok + (double)out_tokens * p->out_per_mtok) / 1e6;
}
