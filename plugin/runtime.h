/* The runtime: the one struct that holds all of the plugin's state. torch_ext creates it when the
 * library loads and hands it plain C descriptors; Python reaches it through include/kforge.h. */
#ifndef KF_PLUGIN_RUNTIME_H
#define KF_PLUGIN_RUNTIME_H

#include <pthread.h>
#include <stdatomic.h>

#include "cache/cache.h"
#include "compile/compiler.h"
#include "plugin/chains.h"
#include "plugin/config.h"
#include "plugin/gpu_timer.h"
#include "kforge.h"
#include "plugin/plugin.h"
#include "plugin/sigtable.h"

#define KF_MAX_ARGNAMES 16
#define KF_ARGNAME_MAX 24
#define KF_SIGTABLE_LOG2 14 /* 16384 signature slots unless KFORGE_SIGNATURES says otherwise */

typedef struct kf_op_info {
    char name[KF_OP_NAME_MAX];
    int n_args;
    char argnames[KF_MAX_ARGNAMES][KF_ARGNAME_MAX];
    char keys[32];      /* dispatch keys it is intercepted on: "CPU,CUDA" */
    char skipped[192];  /* why it is not intercepted on some key, if so */
} kf_op_info;

#define KF_MAX_CAPTURE_PENDING 256
#define KF_MAX_TO_DISABLE 16

struct kf_runtime {
    _Atomic int enabled;
    _Atomic int chains_off;    /* kf_set_chains_enabled(0): no chain head starts */
    kf_config cfg;
    kf_sigtable *sigs;
    kf_chains *chains;         /* recurring runs of calls (chains.h), recorded while observer_on */
    kf_gpu_timer *gtimer;
    pthread_mutex_t lock; /* ops[] edits and the retired-kernel list; never on the hot path */
    int n_ops;
    kf_op_info ops[KF_MAX_OPS];
    kf_kernel *retired;
    _Atomic uint64_t dropped;  /* calls not recorded: no slot of their set could be recycled */
    _Atomic uint64_t total_calls; /* moves on every intercepted call (kf_total_calls; racy) */
    _Atomic int observer_on;   /* set by torch_ext when its op observer is installed */
    _Atomic int probes;        /* signature probes under way (any thread): calls look at t_probe */
    void *ext;                 /* torch_ext's registrations (C++), owned by torch_ext */
    _Atomic int poison;        /* fill fresh outputs with 0xff before a kernel runs (verification) */
    _Atomic int check_faults;  /* testing: first-use checks still to fail (kf_fail_next_checks) */
    char torch_version[32];
    char errmsg[256];

    /* The cache link (plugin/cachelink.c), all under cache_lock; the hot path only reads
     * cuda_pending and next_check_ns, and takes cache_lock only with trylock. */
    pthread_mutex_t cache_lock;
    kf_cache *cache;           /* the cache folder, when it exists */
    kf_cache *bundle;          /* KFORGE_CACHE=FILE */
    uint64_t cache_gen;
    _Atomic uint64_t next_check_ns;
    _Atomic int cuda_pending;  /* nvrtc entries wait for the first CUDA call */
    kf_cache_entry **pending;  /* entries not attached yet (nvrtc before any CUDA call) */
    int n_pending;
    /* keys attached (or refused) in this process, with the blob they had: an entry replaced in
     * the folder (a deeper search's winner, same key) is attached again; elsewhere: refused as
     * built for another environment (arch, compiler or its flags, torch or plugin version) */
    struct kf_attached { char key[KF_KEY_HEX], blob[KF_KEY_HEX]; int bundle, elsewhere; } *attached;
    int n_attached, cap_attached;
    /* cfg.ops the listed entries are for (kf_cachelink_entry_ops), noted as they are listed;
     * bit 1 folder, 2 bundle: its last listing failed, so every op is wanted */
    unsigned char entry_ops[KF_MAX_OPS];
    int entry_ops_unlisted;
    _Atomic unsigned char op_cached[KF_MAX_OPS]; /* entry_ops or unlisted, read without the lock */
    kf_compiler_i compilers[2]; /* [0] host, [1] nvrtc */
    int compiler_state[2];      /* 0 not tried, 1 ready, -1 unavailable */
    char toolchain[2][512];
    int reload_retry;           /* an entry met the cache's lock held elsewhere: look again */
    /* The reload thread (cachelink.c): reload_stop under reload_mu, woken by reload_cond. */
    pthread_t reloader;
    _Atomic int reloader_on;
    pthread_mutex_t reload_mu;
    pthread_cond_t reload_cond;
    int reload_stop;
    /* Entries to mark disabled once the folder's lock is free (cachelink.c), under `lock`. */
    struct kf_disable_req { char key[KF_KEY_HEX]; char reason[160]; } to_disable[KF_MAX_TO_DISABLE];
    int n_to_disable;

    /* Capture requests for signatures not seen yet (plugin/tuning.c), under `lock`; the hot
     * path only reads n_capture_pending. */
    struct { uint64_t key; int n; } capture_pending[KF_MAX_CAPTURE_PENDING];
    _Atomic int n_capture_pending;

    /* Shape families (plugin/family.c): a list prepended under `lock`, read without it; fam_gen
     * counts additions (0: none, so a slot's fam_seen of 0 means "nothing to look at"). */
    _Atomic(struct kf_family *) families;
    _Atomic uint32_t fam_gen;

    /* Chain entries (plugin/chainserve.c): prepended under `lock`, read without it. */
    _Atomic(struct kf_chain_entry *) chain_entries;
};

/* A slot was just looked up: give it a capture request that was waiting for it. */
void kf_tuning_apply_pending(kf_runtime *rt, kf_slot *s);

const kf_op_info *kf_runtime_find_op(const kf_runtime *rt, const char *name);
/* The slot of an intercepted signature seen under `key`, pinned (kf_slot_unpin it), or NULL
 * with the runtime's error set. */
kf_slot *kf_runtime_seen_slot(kf_runtime *rt, uint64_t key);

#endif
