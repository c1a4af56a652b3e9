/* What every proposer shares (proposer.h). */
#include "forge/propose/proposer.h"

#include <stdlib.h>
#include <string.h>

#include "compile/compiler.h"

char *kf_candidate_family(const kf_candidate *c, const kf_job_sig *sig)
{
    kf_launch l;
    if (!c || !c->launch_json || strcmp(c->proposer, "builtin") ||
        kf_launch_parse(c->launch_json, &l, NULL, 0) != KF_OK || !l.n_ints)
        return NULL;
    for (const kf_template *const *t = kf_builtin_templates; *t; t++)
        if (!strcmp((*t)->name, c->origin)) return kf_template_family(*t, sig);
    return NULL;
}

void kf_candidate_clear(kf_candidate *c)
{
    if (!c) return;
    free(c->source);
    free(c->launch_json);
    free(c->meta_json);
    memset(c, 0, sizeof *c);
}
