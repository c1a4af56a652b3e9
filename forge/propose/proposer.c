/* What every proposer shares (proposer.h). */
#include "forge/propose/proposer.h"

#include <stdlib.h>
#include <string.h>

void kf_candidate_clear(kf_candidate *c)
{
    if (!c) return;
    free(c->source);
    free(c->launch_json);
    free(c->meta_json);
    memset(c, 0, sizeof *c);
}
