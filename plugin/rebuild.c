#include "plugin/rebuild.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

kf_status kf_rebuild_host_blob(kf_compiler_i *cc, const kf_cache_entry *e, void **blob,
                               size_t *len, char *err, size_t errcap)
{
    *blob = NULL;
    *len = 0;
    char here[512];
    if (cc->toolchain(cc->self, here, sizeof here) != KF_OK) {
        snprintf(err, errcap, "the host compiler is unavailable: %s", here);
        return KF_ERR_UNSUPPORTED;
    }
    if (strcmp(here, e->toolchain) != 0) {
        snprintf(err, errcap, "it was built with another compiler (%.200s; here: %.200s)",
                 e->toolchain, here);
        return KF_ERR_UNSUPPORTED;
    }
    if (cc->arch(cc->self, 0, here, sizeof here) != KF_OK || strcmp(here, e->arch) != 0) {
        snprintf(err, errcap, "it was built for another CPU (%.200s; here: %.200s)", e->arch, here);
        return KF_ERR_UNSUPPORTED;
    }
    kf_launch launch;
    if (kf_launch_parse(e->launch, &launch, here, sizeof here) != KF_OK) {
        snprintf(err, errcap, "its launch record: %s", here);
        return KF_ERR_INVALID;
    }
    char *log = NULL;
    kf_status st = cc->compile(cc->self, e->source, &launch, e->arch, blob, len, &log);
    if (st != KF_OK) {
        snprintf(err, errcap, "its source was not rebuilt: %.700s", log ? log : kf_status_str(st));
        free(*blob);
        *blob = NULL;
        *len = 0;
    }
    free(log);
    return st;
}

kf_status kf_rebuild_for_import(void *user, const kf_cache_entry *e, void **blob, size_t *len,
                                char *err, size_t errcap)
{
    kf_rebuilder *r = user;
    if (r->state == 0) r->state = kf_compiler_host_create(&r->cc, getenv("CC")) == KF_OK ? 1 : -1;
    if (r->state < 0) {
        snprintf(err, errcap, "no host compiler could be set up ($CC)");
        return KF_ERR_UNSUPPORTED;
    }
    return kf_rebuild_host_blob(&r->cc, e, blob, len, err, errcap);
}

void kf_rebuilder_free(kf_rebuilder *r)
{
    if (r && r->state > 0) r->cc.destroy(r->cc.self);
}
