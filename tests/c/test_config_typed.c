/* KFORGE_TYPED: the typed fast path is on unless switched off with 0; anything else keeps it. */
#include <stdio.h>
#include <stdlib.h>

#include "tests/c/check.h"
#include "plugin/config.h"

static kf_config cfg; /* large: keep it off the stack */

int main(void)
{
    unsetenv("KFORGE_TYPED");
    kf_config_from_env(&cfg);
    CHECK_EQ_INT(cfg.typed, 1);
    static const struct {
        const char *text;
        int want;
    } cases[] = {{"0", 0}, {"1", 1}, {"", 1}, {"2", 1}, {"no", 1}, {"-1", 1}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setenv("KFORGE_TYPED", cases[i].text, 1);
        kf_config_from_env(&cfg);
        CHECK_EQ_INT(cfg.typed, cases[i].want);
    }
    unsetenv("KFORGE_TYPED");
    return check_done("test_config_typed");
}
