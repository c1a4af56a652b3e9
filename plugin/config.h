/* Settings read once from the environment when the plugin loads. */
#ifndef KF_PLUGIN_CONFIG_H
#define KF_PLUGIN_CONFIG_H

#ifdef __cplusplus
extern "C" {
#endif

#define KF_MAX_OPS 192 /* the default list holds ~110 (plugin/oplist.c) */
#define KF_OP_NAME_MAX 64

typedef struct kf_config {
    int disable;           /* KFORGE_DISABLE=1: load, intercept nothing */
    int record;            /* KFORGE_RECORD=1 or KFORGE_TUNE=1: also observe ops outside the list */
    int tune;              /* KFORGE_TUNE=1 */
    int intercept_all;     /* every op of the list from the start: KFORGE_INTERCEPT=all, recording
                            * or tuning; else ("cached") only ops with a cache entry, the rest when
                            * recording or tuning begins (torch_ext/registration.cpp) */
    int sample_every;      /* KFORGE_SAMPLE_EVERY: time one call in N per signature (default 16) */
    int eager_every;       /* KFORGE_EAGER_SAMPLE_EVERY: of a served signature's timed calls, one in
                            * N runs eager, for the speed guard (default 4; 0: never) */
    int typed;             /* KFORGE_TYPED=0: boxed interceptors only (default 1: the typed fast
                            * path for the common schemas, torch_ext/typed.cpp) */
    double observer_prob;  /* KFORGE_OBSERVER_SAMPLE: share of non-intercepted calls observed */
    int n_ops;             /* the intercept list: KFORGE_OPS or the default list */
    char ops[KF_MAX_OPS][KF_OP_NAME_MAX];
    char bad_ops[256];     /* KFORGE_OPS entries that were malformed (for a warning) */
    char bad_env[128];     /* another setting that was not understood (for a warning) */
    char cache_dir[1024];  /* KFORGE_CACHE_DIR, default $XDG_CACHE_HOME/kernel_forge */
    char bundle[1024];     /* KFORGE_CACHE=FILE: a bundle loaded read-only at startup */
    int validate;          /* KFORGE_VALIDATE: KF_VALIDATE_FIRST (default), _ALWAYS, _OFF */
    char nvrtc[1024];      /* KFORGE_NVRTC: libnvrtc to open ("" = search) */
    char cuda_include[1024]; /* KFORGE_CUDA_INCLUDE: CUDA headers for NVRTC ("" = none) */
    int reload_every_ms;   /* KFORGE_RELOAD_MS: how often the cache's generation is looked at */
    int sigtable_log2;     /* KFORGE_SIGNATURES: slots of the signature table, log2 (0: default) */
    int chain_deferred;    /* KFORGE_CHAIN_DEFERRED=1: chains whose kernel runs at their last
                            * member (opt-in: docs/chains.md, "Deferred mode") */
} kf_config;

enum { KF_VALIDATE_OFF = 0, KF_VALIDATE_FIRST = 1, KF_VALIDATE_ALWAYS = 2 };

void kf_config_from_env(kf_config *cfg);
/* Parse a comma-separated op list into cfg->ops; names without a namespace get "aten::". */
void kf_config_set_ops(kf_config *cfg, const char *list);

/* The default intercept list (plugin/oplist.c). */
extern const char *const kf_default_ops[];

#ifdef __cplusplus
}
#endif
#endif
