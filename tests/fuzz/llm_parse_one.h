/* One input through everything that parses what a language model or its API sends back (the
 * answer parser, the launch-record parser, both wire formats' bodies): the libFuzzer target
 * (fuzz_llm_parse.c) and the bounded mutation run of tests/c/test_llm_parse.c, which CI runs
 * without clang, share it. */
#ifndef KF_TESTS_FUZZ_LLM_PARSE_ONE_H
#define KF_TESTS_FUZZ_LLM_PARSE_ONE_H

#include <stdlib.h>
#include <string.h>

#include "compile/compiler.h"
#include "forge/llm/llm.h"

static inline void llm_parse_one(const char *data, size_t len)
{
    char *t = malloc(len + 1);
    if (!t) return;
    memcpy(t, data, len);
    t[len] = 0;
    char *s, *l, err[256];
    if (kf_llm_parse_answer(t, &s, &l, err, sizeof err) == KF_OK) free(s), free(l);
    kf_launch la;
    (void)kf_launch_parse(t, &la, err, sizeof err);
    kf_llm_reply r;
    for (int api = 0; api < 2; api++)
        if (kf_llm_parse_body(api, t, len, &r, err, sizeof err) == KF_OK) kf_llm_reply_clear(&r);
    free(t);
}

#endif
