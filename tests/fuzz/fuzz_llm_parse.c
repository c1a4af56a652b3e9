/* libFuzzer target for everything that parses what a language model or its API sends back: the
 * answer parser (one kernel source, one launch record), the launch-record parser, and both wire
 * formats' response bodies. Built with clang (-DKF_FUZZ=ON); scripts/test.sh runs it for a
 * bounded time over the corpus in tests/fuzz/llm_answer when clang is installed. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "forge/compiler.h"
#include "forge/llm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    char *t = malloc(len + 1);
    if (!t) return 0;
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
    return 0;
}
