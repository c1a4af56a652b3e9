/* The two wire formats (llm.h): request bodies built and response bodies read with cJSON. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/status.h"
#include "forge/llm/llm.h"

/* every refusal here is an invalid input */
#define bad(err, cap, ...) kf_fail(err, cap, KF_ERR_INVALID, __VA_ARGS__)

static cJSON *message(const char *role, const char *text)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "role", role);
    cJSON_AddStringToObject(m, "content", text);
    return m;
}

char *kf_llm_request_body(const kf_llm_config *c, const char *system, const char *user)
{
    cJSON *doc = cJSON_CreateObject();
    if (!doc) return NULL;
    cJSON_AddStringToObject(doc, "model", c->model);
    cJSON_AddNumberToObject(doc, "max_tokens", c->max_tokens);
    cJSON_AddNumberToObject(doc, "temperature", c->temperature);
    cJSON *msgs = cJSON_AddArrayToObject(doc, "messages");
    if (c->api == KF_LLM_ANTHROPIC) {
        cJSON_AddStringToObject(doc, "system", system);
    } else {
        cJSON_AddItemToArray(msgs, message("system", system));
    }
    cJSON_AddItemToArray(msgs, message("user", user));
    char *s = cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    return s;
}

void kf_llm_reply_clear(kf_llm_reply *r)
{
    if (!r) return;
    free(r->text);
    memset(r, 0, sizeof *r);
}

static long long count(const cJSON *usage, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(usage, name);
    return cJSON_IsNumber(v) && v->valuedouble >= 0 && v->valuedouble < 1e15 ? (long long)v->valuedouble : 0;
}

/* An API error object ({"error": {"message": ...}} or {"error": "..."}) as a reason. */
static int api_error(const cJSON *doc, char *err, size_t cap)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(doc, "error");
    if (!e || cJSON_IsNull(e)) return 0;
    const cJSON *m = cJSON_IsObject(e) ? cJSON_GetObjectItemCaseSensitive(e, "message") : e;
    bad(err, cap, "the API answered with an error: %.300s",
        cJSON_IsString(m) ? m->valuestring : "(no message)");
    return 1;
}

kf_status kf_llm_parse_body(int api, const char *body, size_t len, kf_llm_reply *out, char *err,
                            size_t cap)
{
    memset(out, 0, sizeof *out);
    if (!body || !len) return bad(err, cap, "empty response body");
    cJSON *doc = cJSON_ParseWithLength(body, len);
    if (!doc) return bad(err, cap, "the response body is not JSON");
    kf_status st = KF_ERR_INVALID;
    if (!cJSON_IsObject(doc)) {
        bad(err, cap, "the response body is not a JSON object");
        goto free_doc;
    }
    if (api_error(doc, err, cap)) goto free_doc;
    const cJSON *usage = cJSON_GetObjectItemCaseSensitive(doc, "usage");
    const char *text = NULL;
    const cJSON *fin = NULL;
    size_t total = 0;
    if (api == KF_LLM_ANTHROPIC) {
        out->in_tokens = count(usage, "input_tokens") + count(usage, "cache_read_input_tokens") +
                         count(usage, "cache_creation_input_tokens");
        out->out_tokens = count(usage, "output_tokens");
        fin = cJSON_GetObjectItemCaseSensitive(doc, "stop_reason");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(doc, "content"), *part;
        if (!cJSON_IsArray(content)) {
            bad(err, cap, "no \"content\" array in the Anthropic response");
            goto free_doc;
        }
        cJSON_ArrayForEach(part, content) /* join the text parts */
        {
            const cJSON *t = cJSON_GetObjectItemCaseSensitive(part, "text");
            const cJSON *ty = cJSON_GetObjectItemCaseSensitive(part, "type");
            if (cJSON_IsString(t) && (!cJSON_IsString(ty) || !strcmp(ty->valuestring, "text")))
                total += strlen(t->valuestring) + 1;
        }
        out->text = malloc(total + 1);
        if (!out->text) {
            bad(err, cap, "out of memory");
            goto free_doc;
        }
        out->text[0] = 0;
        size_t at = 0;
        cJSON_ArrayForEach(part, content)
        {
            const cJSON *t = cJSON_GetObjectItemCaseSensitive(part, "text");
            const cJSON *ty = cJSON_GetObjectItemCaseSensitive(part, "type");
            if (!cJSON_IsString(t) || (cJSON_IsString(ty) && strcmp(ty->valuestring, "text"))) continue;
            size_t n = strlen(t->valuestring);
            memcpy(out->text + at, t->valuestring, n);
            at += n;
            out->text[at++] = '\n';
            out->text[at] = 0;
        }
        text = out->text;
    } else {
        out->in_tokens = count(usage, "prompt_tokens");
        out->out_tokens = count(usage, "completion_tokens");
        const cJSON *choices = cJSON_GetObjectItemCaseSensitive(doc, "choices");
        const cJSON *c0 = cJSON_IsArray(choices) ? cJSON_GetArrayItem(choices, 0) : NULL;
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(c0, "message");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
        fin = cJSON_GetObjectItemCaseSensitive(c0, "finish_reason");
        if (!cJSON_IsString(content)) {
            bad(err, cap, "no choices[0].message.content string in the OpenAI-style response");
            goto free_doc;
        }
        out->text = strdup(content->valuestring);
        if (!out->text) {
            bad(err, cap, "out of memory");
            goto free_doc;
        }
        text = out->text;
    }
    if (cJSON_IsString(fin)) snprintf(out->finish, sizeof out->finish, "%s", fin->valuestring);
    if (!text[strspn(text, " \t\r\n")]) {
        bad(err, cap, "the model's reply is empty (finish reason \"%s\")", out->finish);
        goto free_doc;
    }
    st = KF_OK;
free_doc:
    cJSON_Delete(doc);
    if (st != KF_OK) {
        long long i = out->in_tokens, o = out->out_tokens; /* tokens were still spent */
        kf_llm_reply_clear(out);
        out->in_tokens = i, out->out_tokens = o;
    }
    return st;
}
