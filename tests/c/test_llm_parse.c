/* The LLM proposer's parsers (forge/llm/llm.h): the answer parser (one kernel + one launch record),
 * the wire-format body parser, the price table, the prompt's byte budget, and a bounded
 * deterministic mutation fuzz loop over the corpus in tests/fuzz/llm_answer (a few seconds). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compile/compiler.h"
#include "forge/llm/llm.h"
#include "tests/c/check.h"
#include "tests/fuzz/llm_parse_one.h"

#define REC "```json\n{\"entry\": \"kf_kernel\", \"grid\": [1,1,1], \"block\": [1,1,1], \"smem\": 0, " \
            "\"args\": [\"const float*\", \"float*\"]}\n```\n"
#define SRC "```c\nvoid kf_kernel(const float *x, float *y) { y[0] = x[0]; }\n```\n"

static int refused(const char *text, const char *why_part)
{
    char *s = (char *)1, *l = (char *)1, err[512] = "";
    kf_status st = kf_llm_parse_answer(text, &s, &l, err, sizeof err);
    int ok = st == KF_ERR_INVALID && !s && !l && strstr(err, why_part);
    if (!ok) printf("  refused(%s): st %d err '%s'\n", why_part, st, err);
    return ok;
}

static void test_answers(void)
{
    char *s, *l, err[512];
    CHECK(kf_llm_parse_answer("Sure.\n" SRC "and\n" REC, &s, &l, err, sizeof err) == KF_OK);
    CHECK(s && strstr(s, "kf_kernel(const float") && !strstr(s, "```"));
    CHECK(l && strstr(l, "\"const float*\"") && strstr(l, "\"entry\":\"kf_kernel\""));
    free(s), free(l);
    /* an untagged block that is a JSON record counts as the record; ~~~ is not a fence */
    CHECK(kf_llm_parse_answer(SRC "```\n{\"entry\":\"kf_kernel\",\"grid\":[1,1,1],\"block\":[1,1,1],"
                              "\"smem\":0,\"args\":[\"float const *\",\"float*\"]}\n```\n",
                              &s, &l, err, sizeof err) == KF_OK);
    free(s), free(l);
    CHECK(refused("no code at all", "no kernel"));
    CHECK(refused(REC, "no kernel"));
    CHECK(refused(SRC, "no launch record"));
    CHECK(refused(SRC SRC REC, "2 code blocks"));
    CHECK(refused(SRC REC REC, "2 launch records"));
    CHECK(refused("```c\nvoid kf_kernel(void) {}\n", "never closed"));
    CHECK(refused(SRC "```json\n{\"entry\": \"kf_kernel\", grid: 1}\n```\n", "launch record"));
    CHECK(refused(SRC "```json\n{\"entry\": \"main\", \"grid\": [1,1,1], \"block\": [1,1,1], "
                      "\"smem\": 0, \"args\": [\"float*\"]}\n```\n", "does not define"));
    CHECK(refused(SRC "```json\n{\"entry\": \"kf_kernel\", \"grid\": [1,1,1], \"block\": [1,1,1], "
                      "\"smem\": 0, \"args\": [\"float*); system(\\\"x\\\"\"]}\n```\n", "launch record"));
    CHECK(refused("```c\n```\n" REC, "empty"));
    /* a huge source is refused by size, not parsed */
    size_t big = KF_LLM_SOURCE_MAX + 100;
    char *t = malloc(big + 512);
    if (t) {
        strcpy(t, "```c\nvoid kf_kernel(float *y) {}\n");
        size_t n = strlen(t);
        memset(t + n, 'x', big);
        strcpy(t + n + big, "\n```\n" REC);
        CHECK(refused(t, "bytes"));
        free(t);
    }
}

static void test_bodies(void)
{
    kf_llm_reply r;
    char err[256];
    const char *oa = "{\"choices\":[{\"message\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}],"
                     "\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":3}}";
    CHECK(kf_llm_parse_body(KF_LLM_OPENAI, oa, strlen(oa), &r, err, sizeof err) == KF_OK);
    CHECK(r.text && !strcmp(r.text, "hi") && r.in_tokens == 12 && r.out_tokens == 3);
    CHECK(!strcmp(r.finish, "stop"));
    kf_llm_reply_clear(&r);
    const char *an = "{\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}],"
                     "\"usage\":{\"input_tokens\":7,\"output_tokens\":9}}";
    CHECK(kf_llm_parse_body(KF_LLM_ANTHROPIC, an, strlen(an), &r, err, sizeof err) == KF_OK);
    CHECK(r.text && !strcmp(r.text, "a\nb\n") && r.in_tokens == 7 && r.out_tokens == 9);
    kf_llm_reply_clear(&r);
    const char *e = "{\"error\":{\"message\":\"overloaded\"}}";
    CHECK(kf_llm_parse_body(KF_LLM_ANTHROPIC, e, strlen(e), &r, err, sizeof err) == KF_ERR_INVALID);
    CHECK(strstr(err, "overloaded") != NULL);
    CHECK(kf_llm_parse_body(KF_LLM_OPENAI, "{not", 4, &r, err, sizeof err) == KF_ERR_INVALID);
    CHECK(kf_llm_parse_body(KF_LLM_OPENAI, "[]", 2, &r, err, sizeof err) == KF_ERR_INVALID);
    const char *empty = "{\"choices\":[{\"message\":{\"content\":\"  \"}}],\"usage\":{\"prompt_tokens\":5}}";
    CHECK(kf_llm_parse_body(KF_LLM_OPENAI, empty, strlen(empty), &r, err, sizeof err) == KF_ERR_INVALID);
    CHECK(r.in_tokens == 5 && !r.text); /* tokens spent on an empty answer still count */
}

static void test_prices(void)
{
    kf_llm_price p;
    char err[256];
    CHECK(kf_llm_price_lookup("claude-sonnet-4-5", NULL, &p, err, sizeof err) == KF_OK && p.known);
    CHECK(p.in_per_mtok == 3.0 && p.out_per_mtok == 15.0);
    CHECK(kf_llm_cost_usd(&p, 1000000, 100000) == 3.0 + 1.5);
    CHECK(kf_llm_price_lookup("gpt-4o-mini-2024", NULL, &p, err, sizeof err) == KF_OK);
    CHECK(p.in_per_mtok == 0.15); /* the longest prefix wins over "gpt-4o" */
    CHECK(kf_llm_price_lookup("my-local-llama", NULL, &p, err, sizeof err) == KF_OK && !p.known);
    CHECK(kf_llm_price_lookup("x", "/nonexistent/prices.json", &p, err, sizeof err) == KF_ERR_IO);
}

static const char *fake_env_vals[][2] = {
    {"KFORGE_LLM_URL", "http://127.0.0.1:1/"}, {"KFORGE_LLM_MODEL", "m"},
    {"KFORGE_LLM_API", "anthropic"}, {"KFORGE_LLM_API_KEY", " k-123\n"}, {"KFORGE_LLM_RETRIES", "2"},
};
static const char *fake_env(const char *n)
{
    for (size_t i = 0; i < sizeof fake_env_vals / sizeof fake_env_vals[0]; i++)
        if (!strcmp(fake_env_vals[i][0], n)) return fake_env_vals[i][1];
    return NULL;
}
static const char *empty_env(const char *n) { (void)n; return NULL; }

static void test_config(void)
{
    kf_llm_config c;
    char err[256];
    CHECK(kf_llm_config_from_env(&c, fake_env, err, sizeof err) == KF_OK);
    CHECK(!strcmp(c.url, "http://127.0.0.1:1") && c.api == KF_LLM_ANTHROPIC && c.retries == 2);
    CHECK(c.api_key && !strcmp(c.api_key, "k-123"));
    char *body = kf_llm_request_body(&c, "sys", "user");
    CHECK(body && strstr(body, "\"system\":\"sys\"") && !strstr(body, "k-123"));
    free(body);
    kf_llm_config_clear(&c);
    CHECK(c.api_key == NULL);
    CHECK(kf_llm_config_from_env(&c, empty_env, err, sizeof err) == KF_ERR_INVALID);
    CHECK(strstr(err, "KFORGE_LLM_URL") != NULL);
    kf_llm_config_clear(&c);
}

/* ---- bounded mutation fuzzing: no crash, no leak, no sanitizer report ---- */

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *b = malloc(65536);
    *len = b ? fread(b, 1, 65536, f) : 0;
    fclose(f);
    return b;
}

static void test_fuzz(void)
{
    static const char *const tokens[] = {"```", "```json\n", "```c\n", "\n", "{", "}", "\"entry\"",
                                         "kf_kernel(", "\"args\":[", "\\", "\"", "[1,1,1]", "\0"};
    char *corpus[32];
    size_t clen[32];
    int nc = 0;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", __FILE__);
    char *slash = strrchr(dir, '/');
    if (slash) strcpy(slash, "/../fuzz/llm_answer");
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) && nc < 32) {
        if (e->d_name[0] == '.') continue;
        char p[1400];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if ((corpus[nc] = read_all(p, &clen[nc]))) nc++;
    }
    if (d) closedir(d);
    const char *seed = "x " SRC REC;
    corpus[nc] = strdup(seed), clen[nc] = strlen(seed), nc++;
    printf("fuzz: %d corpus entries from %s\n", nc, dir);
    uint64_t s = 0x1234567;
    char buf[70000];
    clock_t t0 = clock();
    long runs = 0;
    while ((double)(clock() - t0) / CLOCKS_PER_SEC < 3.0 && runs < 200000) {
        int c = (int)(rng(&s) % (uint64_t)nc);
        size_t n = clen[c] < sizeof buf - 64 ? clen[c] : sizeof buf - 64;
        memcpy(buf, corpus[c], n);
        int edits = 1 + (int)(rng(&s) % 6);
        for (int k = 0; k < edits && n; k++) {
            size_t at = rng(&s) % n;
            switch (rng(&s) % 4) {
            case 0: buf[at] = (char)rng(&s); break;             /* flip a byte */
            case 1: memmove(buf + at, buf + at + 1, n - at - 1), n--; break; /* drop one */
            case 2: n = at; break;                                /* truncate */
            default: {                                            /* insert a token */
                const char *tk = tokens[rng(&s) % (sizeof tokens / sizeof tokens[0])];
                size_t tl = strlen(tk) ? strlen(tk) : 1;
                if (n + tl >= sizeof buf) break;
                memmove(buf + at + tl, buf + at, n - at);
                memcpy(buf + at, tk, tl);
                n += tl;
            }
            }
        }
        llm_parse_one(buf, n);
        runs++;
    }
    printf("fuzz: %ld runs\n", runs);
    CHECK(runs > 100);
    for (int i = 0; i < nc; i++) free(corpus[i]);
}

int main(void)
{
    test_answers();
    test_bodies();
    test_prices();
    test_config();
    test_fuzz();
    return check_done("llm_parse");
}
