#include "plugin/config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Set and not one of 0 / false / no / off (any case). */
static int env_flag(const char *name)
{
    const char *s = getenv(name);
    return s && *s && strcmp(s, "0") != 0 && strcasecmp(s, "false") != 0 &&
           strcasecmp(s, "no") != 0 && strcasecmp(s, "off") != 0;
}

static long env_long(const char *name, long dflt, long lo, long hi)
{
    const char *s = getenv(name);
    if (!s || !*s) return dflt;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end || v < lo || v > hi) return dflt;
    return v;
}

static double env_double(const char *name, double dflt, double lo, double hi)
{
    const char *s = getenv(name);
    if (!s || !*s) return dflt;
    char *end;
    double v = strtod(s, &end);
    if (*end || !(v >= lo && v <= hi)) return dflt;
    return v;
}

static int valid_op_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '.' || c == ':';
}

void kf_config_set_ops(kf_config *cfg, const char *list)
{
    cfg->n_ops = 0;
    cfg->bad_ops[0] = 0;
    const char *p = list;
    while (*p) {
        while (*p == ',' || isspace((unsigned char)*p)) p++;
        if (!*p) break;
        const char *start = p;
        while (*p && *p != ',') p++;
        size_t n = (size_t)(p - start);
        while (n && isspace((unsigned char)start[n - 1])) n--;
        char name[KF_OP_NAME_MAX];
        int has_ns = n >= 2 && memmem(start, n, "::", 2) != NULL;
        int ok = n > 0 && n + (has_ns ? 0 : 6) < sizeof name;
        for (size_t i = 0; ok && i < n; i++) ok = valid_op_char(start[i]);
        const char *why = "malformed";
        if (ok) {
            snprintf(name, sizeof name, "%s%.*s", has_ns ? "" : "aten::", (int)n, start);
            int dup = 0;
            for (int i = 0; i < cfg->n_ops; i++) dup |= !strcmp(cfg->ops[i], name);
            if (dup) continue; /* keep the first */
            if (cfg->n_ops < KF_MAX_OPS) {
                strcpy(cfg->ops[cfg->n_ops++], name);
                continue;
            }
            why = "too many ops";
        }
        size_t used = strlen(cfg->bad_ops);
        snprintf(cfg->bad_ops + used, sizeof cfg->bad_ops - used, "%s'%.*s' (%s)",
                 used ? ", " : "", (int)(n > 40 ? 40 : n), start, why);
    }
}

void kf_config_from_env(kf_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->disable = env_flag("KFORGE_DISABLE");
    cfg->tune = env_flag("KFORGE_TUNE");
    cfg->record = cfg->tune || env_flag("KFORGE_RECORD");
    cfg->sample_every = (int)env_long("KFORGE_SAMPLE_EVERY", 16, 1, 1 << 20);
    cfg->eager_every = (int)env_long("KFORGE_EAGER_SAMPLE_EVERY", 4, 0, 1 << 20);
    cfg->typed = (int)env_long("KFORGE_TYPED", 1, 0, 1);
    cfg->chain_deferred = env_flag("KFORGE_CHAIN_DEFERRED");
    cfg->observer_prob = env_double("KFORGE_OBSERVER_SAMPLE", 1.0, 1e-6, 1.0);
    const char *ops = getenv("KFORGE_OPS");
    if (ops && *ops) { /* empty is the same as unset: the default list */
        kf_config_set_ops(cfg, ops);
    } else {
        for (int i = 0; kf_default_ops[i] && i < KF_MAX_OPS; i++)
            strcpy(cfg->ops[cfg->n_ops++], kf_default_ops[i]);
    }
    const char *v = getenv("KFORGE_VALIDATE");
    cfg->validate = !v || !*v || !strcmp(v, "first") ? KF_VALIDATE_FIRST
                    : !strcmp(v, "always")           ? KF_VALIDATE_ALWAYS
                    : !strcmp(v, "off")              ? KF_VALIDATE_OFF
                                                     : -1;
    if (cfg->validate < 0) {
        /* an unknown mode must not silently weaken the check: keep the default, say so */
        cfg->validate = KF_VALIDATE_FIRST;
        snprintf(cfg->bad_env, sizeof cfg->bad_env,
                 "KFORGE_VALIDATE='%.20s' is not first|always|off; using first", v);
    }
    const char *ic = getenv("KFORGE_INTERCEPT");
    cfg->intercept_all = cfg->record || (ic && !strcmp(ic, "all"));
    if (ic && *ic && strcmp(ic, "all") && strcmp(ic, "cached") && !cfg->bad_env[0])
        snprintf(cfg->bad_env, sizeof cfg->bad_env,
                 "KFORGE_INTERCEPT='%.20s' is not all|cached; using cached", ic);
    const char *dir = getenv("KFORGE_CACHE_DIR");
    const char *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    if (dir && *dir)
        snprintf(cfg->cache_dir, sizeof cfg->cache_dir, "%s", dir);
    else if (xdg && *xdg)
        snprintf(cfg->cache_dir, sizeof cfg->cache_dir, "%s/kernel_forge", xdg);
    else if (home && *home)
        snprintf(cfg->cache_dir, sizeof cfg->cache_dir, "%s/.cache/kernel_forge", home);
    const char *b = getenv("KFORGE_CACHE");
    if (b) snprintf(cfg->bundle, sizeof cfg->bundle, "%s", b);
    const char *nv = getenv("KFORGE_NVRTC");
    if (nv) snprintf(cfg->nvrtc, sizeof cfg->nvrtc, "%s", nv);
    const char *inc = getenv("KFORGE_CUDA_INCLUDE");
    if (inc) snprintf(cfg->cuda_include, sizeof cfg->cuda_include, "%s", inc);
    cfg->reload_every_ms = (int)env_long("KFORGE_RELOAD_MS", 1000, 0, 3600 * 1000);
    /* rounded up to a power of two, 16 .. 2^24 */
    long sigs = env_long("KFORGE_SIGNATURES", 0, 1, 1L << 24);
    cfg->sigtable_log2 = 0;
    if (sigs) {
        cfg->sigtable_log2 = 4;
        while ((1L << cfg->sigtable_log2) < sigs) cfg->sigtable_log2++;
    }
}
