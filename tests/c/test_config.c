/* Settings from the environment and the intercept list parser. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/c/check.h"
#include "plugin/config.h"

static kf_config cfg; /* large: keep it off the stack */

static void clear_env(void)
{
    static const char *const vars[] = {"KFORGE_DISABLE", "KFORGE_TUNE", "KFORGE_RECORD",
                                       "KFORGE_SAMPLE_EVERY", "KFORGE_OBSERVER_SAMPLE",
                                       "KFORGE_OPS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
}

static int n_default_ops(void)
{
    int n = 0;
    while (kf_default_ops[n]) n++;
    return n;
}

static int has_op(const kf_config *c, const char *name)
{
    for (int i = 0; i < c->n_ops; i++)
        if (!strcmp(c->ops[i], name)) return 1;
    return 0;
}

static void test_set_ops(void)
{
    memset(&cfg, 0x5a, sizeof cfg); /* set_ops must not depend on prior contents */
    kf_config_set_ops(&cfg, "relu, aten::add.Tensor ,,mul.Tensor");
    CHECK_EQ_INT(cfg.n_ops, 3);
    CHECK_STR(cfg.ops[0], "aten::relu");
    CHECK_STR(cfg.ops[1], "aten::add.Tensor");
    CHECK_STR(cfg.ops[2], "aten::mul.Tensor");
    CHECK_STR(cfg.bad_ops, "");

    /* duplicates are dropped (after the namespace is added), the first stays in place */
    kf_config_set_ops(&cfg, "relu,gelu, aten::relu ,relu,silu");
    CHECK_EQ_INT(cfg.n_ops, 3);
    CHECK_STR(cfg.ops[0], "aten::relu");
    CHECK_STR(cfg.ops[1], "aten::gelu");
    CHECK_STR(cfg.ops[2], "aten::silu");
    CHECK_STR(cfg.bad_ops, "");

    /* malformed entries are reported, the rest kept */
    kf_config_set_ops(&cfg, "relu,bad op!,gelu");
    CHECK_EQ_INT(cfg.n_ops, 2);
    CHECK_STR(cfg.ops[0], "aten::relu");
    CHECK_STR(cfg.ops[1], "aten::gelu");
    CHECK_CONTAINS(cfg.bad_ops, "bad op!");
    CHECK(!strstr(cfg.bad_ops, "relu") && !strstr(cfg.bad_ops, "gelu"));
    kf_config_set_ops(&cfg, "a-b, relu ,x/y;z");
    CHECK_EQ_INT(cfg.n_ops, 1);
    CHECK_STR(cfg.ops[0], "aten::relu");
    CHECK_CONTAINS(cfg.bad_ops, "a-b");
    CHECK_CONTAINS(cfg.bad_ops, "x/y;z");
    /* a fresh parse forgets the previous bad entries */
    kf_config_set_ops(&cfg, "relu");
    CHECK_EQ_INT(cfg.n_ops, 1);
    CHECK_STR(cfg.bad_ops, "");

    /* other namespaces are kept as they are; overload names with '.' and '_' are fine */
    kf_config_set_ops(&cfg, "myns::fused_op.out,_softmax,\tnative_layer_norm\n");
    CHECK_EQ_INT(cfg.n_ops, 3);
    CHECK_STR(cfg.ops[0], "myns::fused_op.out");
    CHECK_STR(cfg.ops[1], "aten::_softmax");
    CHECK_STR(cfg.ops[2], "aten::native_layer_norm");

    /* empty lists */
    kf_config_set_ops(&cfg, "");
    CHECK_EQ_INT(cfg.n_ops, 0);
    CHECK_STR(cfg.bad_ops, "");
    kf_config_set_ops(&cfg, " , ,, ");
    CHECK_EQ_INT(cfg.n_ops, 0);
    CHECK_STR(cfg.bad_ops, "");

    /* a name that fits (with "aten::") is kept whole; one that does not is reported */
    char list[512];
    char name56[57];
    memset(name56, 'n', 56);
    name56[56] = 0;
    kf_config_set_ops(&cfg, name56);
    CHECK_EQ_INT(cfg.n_ops, 1);
    CHECK_EQ_INT(strlen(cfg.ops[0]), 6 + 56);
    CHECK(strncmp(cfg.ops[0], "aten::", 6) == 0);
    char name100[101];
    memset(name100, 'q', 100);
    name100[100] = 0;
    snprintf(list, sizeof list, "relu,%s", name100);
    kf_config_set_ops(&cfg, list);
    CHECK_EQ_INT(cfg.n_ops, 1);
    CHECK(strlen(cfg.bad_ops) > 0 && strlen(cfg.bad_ops) < sizeof cfg.bad_ops);
    CHECK_CONTAINS(cfg.bad_ops, "qqqq");
    for (int i = 0; i < cfg.n_ops; i++) CHECK(strlen(cfg.ops[i]) < KF_OP_NAME_MAX);

    /* more ops than fit: the first KF_MAX_OPS are kept */
    static char big[8192];
    big[0] = 0;
    for (int i = 0; i < KF_MAX_OPS + 10; i++) {
        char one[32];
        snprintf(one, sizeof one, "%sop%d", i ? "," : "", i);
        strcat(big, one);
    }
    kf_config_set_ops(&cfg, big);
    CHECK_EQ_INT(cfg.n_ops, KF_MAX_OPS);
    CHECK_STR(cfg.ops[0], "aten::op0");
    char last[32], first_dropped[48];
    snprintf(last, sizeof last, "aten::op%d", KF_MAX_OPS - 1);
    snprintf(first_dropped, sizeof first_dropped, "'op%d' (too many ops)", KF_MAX_OPS);
    CHECK_STR(cfg.ops[KF_MAX_OPS - 1], last);
    CHECK_CONTAINS(cfg.bad_ops, first_dropped); /* dropped ones are reported */

    /* many bad entries: bad_ops stays a terminated string within its buffer */
    big[0] = 0;
    for (int i = 0; i < 100; i++) strcat(big, i ? ",bad entry!" : "bad entry!");
    kf_config_set_ops(&cfg, big);
    CHECK_EQ_INT(cfg.n_ops, 0);
    CHECK(memchr(cfg.bad_ops, 0, sizeof cfg.bad_ops) != NULL);
    CHECK_CONTAINS(cfg.bad_ops, "bad entry!");
}

static void test_env_defaults(void)
{
    clear_env();
    memset(&cfg, 0x5a, sizeof cfg);
    kf_config_from_env(&cfg);
    CHECK_EQ_INT(cfg.disable, 0);
    CHECK_EQ_INT(cfg.record, 0);
    CHECK_EQ_INT(cfg.tune, 0);
    CHECK_EQ_INT(cfg.sample_every, 16);
    CHECK(cfg.observer_prob == 1.0);
    CHECK_STR(cfg.bad_ops, "");
    /* the default list, in order */
    int n = n_default_ops();
    CHECK(n > 0 && n <= KF_MAX_OPS);
    CHECK_EQ_INT(cfg.n_ops, n);
    for (int i = 0; i < n && i < cfg.n_ops; i++) CHECK_STR(cfg.ops[i], kf_default_ops[i]);
    CHECK(has_op(&cfg, "aten::_softmax"));
    CHECK(has_op(&cfg, "aten::native_layer_norm"));
    CHECK(has_op(&cfg, "aten::add.Tensor"));
    CHECK(has_op(&cfg, "aten::relu"));

    /* every default entry is itself a valid, namespaced, non-duplicate list entry */
    static char list[4096];
    list[0] = 0;
    for (int i = 0; i < n; i++) {
        CHECK(strlen(kf_default_ops[i]) < KF_OP_NAME_MAX);
        CHECK(strncmp(kf_default_ops[i], "aten::", 6) == 0);
        if (i) strcat(list, ",");
        strcat(list, kf_default_ops[i]);
    }
    static kf_config parsed;
    kf_config_set_ops(&parsed, list);
    CHECK_EQ_INT(parsed.n_ops, n);
    CHECK_STR(parsed.bad_ops, "");
    for (int i = 0; i < n && i < parsed.n_ops; i++) CHECK_STR(parsed.ops[i], kf_default_ops[i]);
}

static void test_env_flags(void)
{
    clear_env();
    setenv("KFORGE_DISABLE", "1", 1);
    kf_config_from_env(&cfg);
    CHECK_EQ_INT(cfg.disable, 1);
    CHECK_EQ_INT(cfg.record, 0);
    static const char *const off[] = {"0", "", "false", "no", "off", "False", "NO", "OFF"};
    for (size_t i = 0; i < sizeof off / sizeof off[0]; i++) {
        setenv("KFORGE_DISABLE", off[i], 1);
        kf_config_from_env(&cfg);
        if (!CHECK_EQ_INT(cfg.disable, 0)) printf("     KFORGE_DISABLE='%s'\n", off[i]);
    }
    static const char *const on[] = {"1", "yes", "true", "2"};
    for (size_t i = 0; i < sizeof on / sizeof on[0]; i++) {
        setenv("KFORGE_DISABLE", on[i], 1);
        kf_config_from_env(&cfg);
        if (!CHECK_EQ_INT(cfg.disable, 1)) printf("     KFORGE_DISABLE='%s'\n", on[i]);
    }
    unsetenv("KFORGE_DISABLE");

    /* KFORGE_TUNE implies recording */
    setenv("KFORGE_TUNE", "1", 1);
    kf_config_from_env(&cfg);
    CHECK_EQ_INT(cfg.tune, 1);
    CHECK_EQ_INT(cfg.record, 1);
    CHECK_EQ_INT(cfg.disable, 0);
    setenv("KFORGE_RECORD", "0", 1); /* cannot switch recording off under tuning */
    kf_config_from_env(&cfg);
    CHECK_EQ_INT(cfg.tune, 1);
    CHECK_EQ_INT(cfg.record, 1);
    unsetenv("KFORGE_TUNE");
    kf_config_from_env(&cfg);
    CHECK_EQ_INT(cfg.tune, 0);
    CHECK_EQ_INT(cfg.record, 0);

    setenv("KFORGE_RECORD", "1", 1);
    kf_config_from_env(&cfg);
    CHECK_EQ_INT(cfg.record, 1);
    CHECK_EQ_INT(cfg.tune, 0);
    setenv("KFORGE_TUNE", "0", 1);
    kf_config_from_env(&cfg);
    CHECK_EQ_INT(cfg.record, 1);
    CHECK_EQ_INT(cfg.tune, 0);
    clear_env();
}

static void test_env_numbers(void)
{
    clear_env();
    static const struct {
        const char *text;
        int want;
    } cases[] = {
        {"4", 4},        {"1", 1},     {"1000", 1000}, {"1048576", 1048576},
        {"0", 16},       {"-3", 16},   {"abc", 16},    {"12x", 16},
        {"", 16},        {"1048577", 16}, {"99999999999999999999", 16}, {"2.5", 16},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setenv("KFORGE_SAMPLE_EVERY", cases[i].text, 1);
        kf_config_from_env(&cfg);
        if (!CHECK_EQ_INT(cfg.sample_every, cases[i].want))
            printf("     KFORGE_SAMPLE_EVERY='%s'\n", cases[i].text);
        CHECK(cfg.sample_every >= 1); /* never 0: it is a divisor */
    }
    unsetenv("KFORGE_SAMPLE_EVERY");
    kf_config_from_env(&cfg);
    CHECK_EQ_INT(cfg.sample_every, 16);

    static const struct {
        const char *text;
        double want;
    } probs[] = {
        {"0.25", 0.25}, {"1", 1.0}, {"1e-3", 1e-3}, {"", 1.0},
        {"2", 1.0},     {"-0.5", 1.0}, {"nan", 1.0}, {"x", 1.0},
    };
    for (size_t i = 0; i < sizeof probs / sizeof probs[0]; i++) {
        setenv("KFORGE_OBSERVER_SAMPLE", probs[i].text, 1);
        kf_config_from_env(&cfg);
        if (!CHECK(cfg.observer_prob == probs[i].want))
            printf("     KFORGE_OBSERVER_SAMPLE='%s' -> %g\n", probs[i].text, cfg.observer_prob);
    }
    clear_env();
}

static void test_env_ops(void)
{
    clear_env();
    setenv("KFORGE_OPS", "relu, aten::add.Tensor ,,mul.Tensor,relu,bad op!", 1);
    kf_config_from_env(&cfg);
    CHECK_EQ_INT(cfg.n_ops, 3);
    CHECK_STR(cfg.ops[0], "aten::relu");
    CHECK_STR(cfg.ops[1], "aten::add.Tensor");
    CHECK_STR(cfg.ops[2], "aten::mul.Tensor");
    CHECK_CONTAINS(cfg.bad_ops, "bad op!");
    CHECK(!has_op(&cfg, "aten::_softmax"));
    /* unset again: back to the defaults, and no stale bad entries */
    unsetenv("KFORGE_OPS");
    kf_config_from_env(&cfg);
    CHECK_EQ_INT(cfg.n_ops, n_default_ops());
    CHECK(has_op(&cfg, "aten::_softmax"));
    CHECK_STR(cfg.bad_ops, "");
    /* set but empty is the same as unset */
    setenv("KFORGE_OPS", "", 1);
    kf_config_from_env(&cfg);
    CHECK_EQ_INT(cfg.n_ops, n_default_ops());
    clear_env();
}

int main(void)
{
    test_set_ops();
    test_env_defaults();
    test_env_flags();
    test_env_numbers();
    test_env_ops();
    return check_done("test_config");
}
