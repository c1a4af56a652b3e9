/* A runtime for the speed-guard tests: the environment's sampling settings cleared, eager
 * samples one in `eager_every` (NULL: the default). Exits the test on failure. */
#ifndef KF_TESTS_TEST_RUNTIME_UTIL_H
#define KF_TESTS_TEST_RUNTIME_UTIL_H

#include <stdlib.h>

#include "tests/c/check.h"
#include "plugin/config.h"
#include "plugin/plugin.h"

static kf_runtime *test_runtime(const char *eager_every, const char *test_name)
{
    static kf_config cfg;
    unsetenv("KFORGE_DISABLE");
    unsetenv("KFORGE_SAMPLE_EVERY");
    if (eager_every)
        setenv("KFORGE_EAGER_SAMPLE_EVERY", eager_every, 1);
    else
        unsetenv("KFORGE_EAGER_SAMPLE_EVERY");
    kf_config_from_env(&cfg);
    kf_runtime *rt = NULL;
    if (!CHECK_EQ_INT(kf_runtime_create(&rt, &cfg), KF_OK)) exit(check_done(test_name));
    return rt;
}

#endif
