/* The LLM proposer's parts (docs/architecture.md, "MCTS": the `llm` proposer).
 *
 *   llm_config.c   configuration from the environment (KFORGE_LLM_*); the API key lives only in
 *                  kf_llm_config.api_key, is sent only in a request header, and is wiped on clear
 *   llm_wire.c     request bodies and response bodies of the two wire formats (cJSON): OpenAI-
 *                  compatible /v1/chat/completions and Anthropic /v1/messages
 *   llm_http.c     one HTTPS POST over libcurl (llm_http_stub.c when built without libcurl)
 *   llm_client.c   a chat request with retries: exponential backoff with jitter on 429, 5xx,
 *                  timeouts and dropped connections, honouring Retry-After
 *   llm_parse.c    a model's reply -> exactly one kernel source + one launch record, or a reason
 *   llm_prompt.c   the prompt: op, signature, contract, parent, timings, lineage, failures
 *   llm_cost.c     tokens -> dollars, per model, from a built-in table or KFORGE_LLM_PRICES
 *
 * Everything a model or a server sends is untrusted: sizes are bounded, every field is checked,
 * and a bad answer is a status with a reason (it becomes a node's error), never a crash. */
#ifndef KF_FORGE_LLM_H
#define KF_FORGE_LLM_H

#include <stddef.h>
#include <stdint.h>

#include "kforge.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { KF_LLM_OPENAI = 0, KF_LLM_ANTHROPIC = 1 };

typedef struct kf_llm_config {
    char url[512];             /* base URL: "https://api.openai.com", "http://127.0.0.1:8080" */
    int api;                   /* KF_LLM_OPENAI | KF_LLM_ANTHROPIC */
    char model[128];
    char *api_key;             /* malloc'ed, NULL: none; never logged nor written anywhere */
    double connect_timeout_s;  /* KFORGE_LLM_CONNECT_TIMEOUT_S (10) */
    double timeout_s;          /* KFORGE_LLM_TIMEOUT_S: one request, total (300) */
    int retries;               /* KFORGE_LLM_RETRIES: extra attempts after the first (4) */
    double backoff_s;          /* KFORGE_LLM_BACKOFF_S: first backoff (1); doubles, +-50% jitter */
    double max_wait_s;         /* the longest one wait may be, Retry-After included (60) */
    size_t max_response;       /* KFORGE_LLM_MAX_RESPONSE_BYTES (4 MiB) */
    int max_tokens;            /* KFORGE_LLM_MAX_TOKENS: output tokens asked for (8192) */
    double temperature;        /* KFORGE_LLM_TEMPERATURE (0.7) */
} kf_llm_config;

/* Read KFORGE_LLM_URL (required), KFORGE_LLM_API (openai), KFORGE_LLM_MODEL (required),
 * KFORGE_LLM_API_KEY or KFORGE_LLM_API_KEY_FILE (optional: local servers need none) and the
 * tuning variables above. `getenv_fn` is getenv (tests pass their own). */
kf_status kf_llm_config_from_env(kf_llm_config *c, const char *(*getenv_fn)(const char *),
                                 char *err, size_t errcap);
/* Wipes and frees the key; NULL-safe. */
void kf_llm_config_clear(kf_llm_config *c);

/* ---- wire formats (llm_wire.c) ---- */

/* The request body (malloc'ed JSON) for a system + user message. */
char *kf_llm_request_body(const kf_llm_config *c, const char *system, const char *user);

typedef struct kf_llm_reply {
    char *text;          /* malloc'ed: the model's text (content parts joined) */
    long long in_tokens, out_tokens; /* from the usage fields (0 when absent) */
    char finish[32];     /* "stop", "length", "end_turn", "max_tokens", ... */
} kf_llm_reply;
void kf_llm_reply_clear(kf_llm_reply *r);

/* A response body -> reply. KF_ERR_INVALID with a reason when it is not that format's JSON,
 * carries an error object, or holds no text. */
kf_status kf_llm_parse_body(int api, const char *body, size_t len, kf_llm_reply *out, char *err,
                            size_t errcap);

/* ---- transport (llm_http.c / llm_http_stub.c) ---- */

typedef struct kf_http_result {
    long status;          /* HTTP status; 0: no response (see kind) */
    int kind;             /* KF_HTTP_* */
    char *body;           /* malloc'ed, NUL-terminated (may be NULL) */
    size_t body_len;
    double retry_after_s; /* from Retry-After (seconds form), -1: absent */
} kf_http_result;

enum { KF_HTTP_OK = 0, KF_HTTP_TIMEOUT, KF_HTTP_CONNECT, KF_HTTP_DROPPED, KF_HTTP_TOO_BIG,
       KF_HTTP_OTHER, KF_HTTP_UNAVAILABLE };

/* POST `body` to `url` with the given extra header lines ("Name: value"). KF_OK when a response
 * arrived (any status); otherwise the kind says what went wrong and err describes it. Never
 * includes header values in err. */
kf_status kf_http_post(const char *url, const char *const *headers, int n_headers,
                       const char *body, double connect_timeout_s, double timeout_s,
                       size_t max_response, kf_http_result *out, char *err, size_t errcap);
void kf_http_result_clear(kf_http_result *r);
/* 1 when built with libcurl. */
int kf_http_available(void);

/* ---- a chat request with retries (llm_client.c) ---- */

typedef struct kf_llm_call_info {
    int attempts;          /* requests sent */
    long last_status;      /* last HTTP status (0: none) */
    double waited_s;       /* seconds spent in backoff */
} kf_llm_call_info;

/* Send system + user, retrying as described above; `seed` feeds the jitter. On failure err says
 * why (status, kind, attempts) and never contains the key. */
kf_status kf_llm_chat(const kf_llm_config *c, const char *system, const char *user, uint64_t *seed,
                      kf_llm_reply *out, kf_llm_call_info *info, char *err, size_t errcap);

/* ---- the model's answer (llm_parse.c) ---- */

#define KF_LLM_SOURCE_MAX (512u * 1024u) /* a kernel source larger than this is refused */

/* Exactly one fenced code block with the kernel (``` or ```c / ```cuda / ```cpp ...) and exactly
 * one launch record: a fenced ```json block, checked by kf_launch_parse. The source must define
 * the entry the record names. On success *source and *launch_json are malloc'ed (the record
 * normalized); otherwise both are NULL and err says what was wrong, in words a model can act on. */
kf_status kf_llm_parse_answer(const char *text, char **source, char **launch_json, char *err,
                              size_t errcap);

/* ---- cost (llm_cost.c) ---- */

typedef struct kf_llm_price {
    double in_per_mtok, out_per_mtok; /* US dollars per million tokens */
    int known;                        /* 0: model not in the table (cost counted as 0) */
} kf_llm_price;

/* The price of `model`: from the JSON file `prices_path` when given ({"model": {"input": 3.0,
 * "output": 15.0}, ...}, longest matching prefix wins), else the built-in table. */
kf_status kf_llm_price_lookup(const char *model, const char *prices_path, kf_llm_price *out,
                              char *err, size_t errcap);
double kf_llm_cost_usd(const kf_llm_price *p, long long in_tokens, long long out_tokens);


/* ---- the prompt (llm_prompt.c) ---- */

/* What the search knows about one node, as the prompt shows it. */
typedef struct kf_llm_node {
    int parent;                 /* -1: a starting point */
    char proposer[16];          /* "builtin" | "llm" */
    char status[24];            /* "" until evaluated; then "verified", "wrong", ... */
    double latency_us;          /* when correct */
    char change[160];
    char *source, *launch_json, *error; /* malloc'ed; error may be NULL */
} kf_llm_node;

struct kf_job;
/* The system and user messages for a child of `parent` (-1: a fresh start), given the nodes
 * 0..n-1 known so far. The user message stays under `budget` bytes (sections are shortened in
 * order of importance: contract and parent first, then failures, then lineage). */
char *kf_llm_prompt_system(const struct kf_job *job);
char *kf_llm_prompt_user(const struct kf_job *job, const kf_llm_node *nodes, int n, int parent,
                         size_t budget);

/* ---- what the llm proposer (forge/propose/proposer_llm.c) spent ---- */

typedef struct kf_llm_totals {
    int requests;               /* HTTP requests sent, retries included */
    int calls, failed_calls;    /* proposals asked of the model; those that got no usable reply */
    long long in_tokens, out_tokens;
    double cost_usd;
    int price_known;
    double in_per_mtok, out_per_mtok;
    char model[128], api[16];
} kf_llm_totals;

#ifdef __cplusplus
}
#endif
#endif
