/* Host entries that come from a bundle are rebuilt here, never loaded as shipped: a shared object
 * is native code that would run in the user's process (even at dlopen, from .init_array), and a
 * bundle's checksums only prove the file is intact. The rebuild compiles the entry's own source
 * with this machine's host compiler, which checks it (raw and preprocessed) first. */
#ifndef KF_PLUGIN_REBUILD_H
#define KF_PLUGIN_REBUILD_H

#include "cache/cache.h"
#include "compile/compiler.h"

/* The blob for host entry `e`, compiled here by `cc` (a host compiler). Refused (err says why)
 * when the source fails the check or does not compile, or when the entry names another host
 * toolchain or CPU than cc's (its key would never match here). *blob is malloc'ed. */
kf_status kf_rebuild_host_blob(kf_compiler_i *cc, const kf_cache_entry *e, void **blob,
                               size_t *len, char *err, size_t errcap);

/* A kf_cache_rebuild_fn for kf_cache_import: `user` is a kf_rebuilder, whose host compiler is
 * created on the first host entry. */
typedef struct kf_rebuilder {
    kf_compiler_i cc;
    int state; /* 0 not yet, 1 ready, -1 unavailable */
} kf_rebuilder;
kf_status kf_rebuild_for_import(void *user, const kf_cache_entry *e, void **blob, size_t *len,
                                char *err, size_t errcap);
void kf_rebuilder_free(kf_rebuilder *r);

#endif
