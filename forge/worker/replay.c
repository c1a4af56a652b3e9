/* An earlier run's latencies for --timings-from (worker.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/fsio.h"
#include "common/status.h"
#include "forge/worker/worker_impl.h"

void kf_worker_replay_free(replay *r)
{
    free(r->hash), free(r->latency), free(r->correct);
    memset(r, 0, sizeof *r);
}

kf_status kf_worker_replay_load(replay *r, const char *dir, char *err, size_t cap)
{
    char *p = kf_worker_path(dir, "tree.json"), *text = NULL, why[256] = "out of memory";
    size_t len = 0;
    kf_status rd = p ? kf_read_file(p, 64u << 20, &text, &len, why, sizeof why) : KF_ERR_NOMEM;
    free(p);
    if (rd != KF_OK) return kf_fail(err, cap, KF_ERR_IO, "--timings-from %s: no tree.json there (%s)", dir, why);
    cJSON *doc = text ? cJSON_ParseWithLength(text, len) : NULL;
    free(text);
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(doc, "nodes");
    if (!cJSON_IsArray(nodes)) {
        cJSON_Delete(doc);
        return kf_fail(err, cap, KF_ERR_INVALID, "--timings-from %s: tree.json has no nodes", dir);
    }
    const cJSON *eager = cJSON_GetObjectItemCaseSensitive(doc, "eager_us");
    r->eager_us = cJSON_IsNumber(eager) && eager->valuedouble > 0 ? eager->valuedouble : 0;
    const cJSON *roof = cJSON_GetObjectItemCaseSensitive(doc, "roofline_us");
    r->roofline_us = cJSON_IsNumber(roof) && roof->valuedouble > 0 ? roof->valuedouble : 0;
    int n = cJSON_GetArraySize(nodes);
    r->hash = calloc((size_t)n + 1, sizeof *r->hash);
    r->latency = calloc((size_t)n + 1, sizeof *r->latency);
    r->correct = calloc((size_t)n + 1, sizeof *r->correct);
    if (!r->hash || !r->latency || !r->correct) {
        cJSON_Delete(doc);
        kf_worker_replay_free(r);
        return kf_fail(err, cap, KF_ERR_NOMEM, "out of memory");
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, nodes)
    {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(it, "source_hash");
        const cJSON *lat = cJSON_GetObjectItemCaseSensitive(it, "latency_us");
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(it, "status");
        if (!cJSON_IsNumber(id) || id->valueint < 0 || id->valueint >= n || !cJSON_IsString(h))
            continue;
        int i = id->valueint;
        r->hash[i] = strtoull(h->valuestring, NULL, 16);
        r->latency[i] = cJSON_IsNumber(lat) ? lat->valuedouble : 0;
        r->correct[i] = cJSON_IsString(st) && (!strcmp(st->valuestring, "verified") ||
                                               !strcmp(st->valuestring, "slower") ||
                                               !strcmp(st->valuestring, "flagged"));
    }
    r->n = n;
    cJSON_Delete(doc);
    return KF_OK;
}
