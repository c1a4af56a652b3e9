/* libFuzzer target for everything that parses what a language model or its API sends back: the
 * answer parser (one kernel source, one launch record), the launch-record parser, and both wire
 * formats' response bodies. Built with clang (-DKF_FUZZ=ON); scripts/test.sh runs it for a
 * bounded time over the corpus in tests/fuzz/llm_answer when clang is installed. */
#include <stdint.h>

#include "tests/fuzz/llm_parse_one.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
    llm_parse_one((const char *)data, len);
    return 0;
}
