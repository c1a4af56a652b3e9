/* The cache folder as `kforge cache` sees it: thin wrappers that need no runtime. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "plugin/cachelink.h"
#include "plugin/family.h"
#include "plugin/rebuild.h"

static kf_status open_dir(kf_cache **c, const char *dir, int read_only, char *err, size_t cap)
{
    kf_status st = kf_cache_open(c, dir, read_only);
    if (st != KF_OK && err) snprintf(err, cap, "%s", kf_cache_errmsg(*c));
    if (st != KF_OK) {
        kf_cache_free(*c);
        *c = NULL;
    }
    return st;
}

/* The entry's shape family as a reader checks it: "family_text" when accepted, else
 * "family_refused" with the reason. Nothing when it has none. */
static void add_family(cJSON *o, const kf_cache_entry *e)
{
    if (!e->family) return;
    kf_launch l;
    kf_out_layout outs;
    kf_family *f = NULL;
    char err[256] = "bad launch record or outputs";
    if (kf_launch_parse(e->launch, &l, NULL, 0) == KF_OK &&
        kf_layout_from_json(e->outputs, &outs) == KF_OK &&
        kf_family_parse(e->family, e->sig, e->sig_len, &outs, &l, &f, err, sizeof err) == KF_OK)
        cJSON_AddStringToObject(o, "family_text", f->text);
    else
        cJSON_AddStringToObject(o, "family_refused", err);
    kf_family_free(f);
}

KF_API char *kf_cache_dir_ls_json(const char *dir)
{
    kf_cache *c = NULL;
    kf_cache_entry **es = NULL;
    int n = 0;
    cJSON *arr = cJSON_CreateArray();
    if (open_dir(&c, dir, 1, NULL, 0) == KF_OK && kf_cache_list(c, &es, &n) == KF_OK) {
        for (int i = 0; i < n; i++) {
            char *js = kf_cache_entry_to_json(es[i]);
            cJSON *o = js ? cJSON_Parse(js) : NULL;
            free(js);
            if (!o) continue;
            /* the listing does not need the sources */
            cJSON_DeleteItemFromObjectCaseSensitive(o, "source");
            add_family(o, es[i]);
            cJSON_AddItemToArray(arr, o);
        }
    }
    kf_cache_entries_free(es, n);
    kf_cache_free(c);
    char *out = cJSON_PrintUnformatted(arr);
    cJSON_Delete(arr);
    return out;
}

KF_API char *kf_cache_dir_show_json(const char *dir, const char *key, char *err, size_t cap)
{
    kf_cache *c = NULL;
    kf_cache_entry *e = NULL;
    char *out = NULL;
    if (open_dir(&c, dir, 1, err, cap) != KF_OK) return NULL;
    if (kf_cache_get(c, key, &e) == KF_OK)
        out = kf_cache_entry_to_json(e);
    else
        snprintf(err, cap, "%s", kf_cache_errmsg(c));
    kf_cache_entry_free(e);
    kf_cache_free(c);
    return out;
}

KF_API kf_status kf_cache_dir_rm(const char *dir, const char *key, char *err, size_t cap)
{
    kf_cache *c = NULL;
    kf_status st = open_dir(&c, dir, 0, err, cap);
    if (st == KF_OK && (st = kf_cache_remove(c, key)) != KF_OK) snprintf(err, cap, "%s", kf_cache_errmsg(c));
    kf_cache_free(c);
    return st;
}

KF_API kf_status kf_cache_dir_set_disabled(const char *dir, const char *key, int disabled,
                                           const char *reason, char *err, size_t cap)
{
    kf_cache *c = NULL;
    kf_status st = open_dir(&c, dir, 0, err, cap);
    if (st == KF_OK && (st = kf_cache_set_disabled(c, key, disabled, reason)) != KF_OK)
        snprintf(err, cap, "%s", kf_cache_errmsg(c));
    kf_cache_free(c);
    return st;
}

KF_API kf_status kf_cache_dir_clear(const char *dir, char *err, size_t cap)
{
    kf_cache *c = NULL;
    kf_status st = open_dir(&c, dir, 0, err, cap);
    if (st == KF_OK && (st = kf_cache_clear(c)) != KF_OK) snprintf(err, cap, "%s", kf_cache_errmsg(c));
    kf_cache_free(c);
    return st;
}

/* `ops_csv`: comma-separated op names, or NULL / "" for all. */
KF_API kf_status kf_cache_dir_export(const char *dir, const char *path, const char *ops_csv, int *n,
                                     char *err, size_t cap)
{
    *n = 0;
    kf_cache *c = NULL;
    kf_status st = open_dir(&c, dir, 1, err, cap);
    if (st != KF_OK) return st;
    char *copy = ops_csv && *ops_csv ? strdup(ops_csv) : NULL;
    const char *ops[64];
    int n_ops = 0;
    for (char *save = NULL, *tok = copy ? strtok_r(copy, ",", &save) : NULL; tok && n_ops < 64;
         tok = strtok_r(NULL, ",", &save))
        ops[n_ops++] = tok;
    st = kf_cache_export(c, path, n_ops ? ops : NULL, n_ops, n);
    if (st != KF_OK) snprintf(err, cap, "%s", kf_cache_errmsg(c));
    free(copy);
    kf_cache_free(c);
    return st;
}

KF_API kf_status kf_cache_dir_import(const char *dir, const char *path, int *n, char *err, size_t cap)
{
    *n = 0;
    kf_cache *c = NULL;
    kf_rebuilder rb = {0}; /* host entries are compiled here from their source */
    kf_status st = open_dir(&c, dir, 0, err, cap);
    if (st == KF_OK && (st = kf_cache_import(c, path, kf_rebuild_for_import, &rb, n)) != KF_OK)
        snprintf(err, cap, "%s", kf_cache_errmsg(c));
    kf_rebuilder_free(&rb);
    kf_cache_free(c);
    return st;
}

static void report_problem(void *user, const char *key_hex, const char *problem)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "key", key_hex ? key_hex : "");
    cJSON_AddStringToObject(o, "problem", problem);
    cJSON_AddItemToArray((cJSON *)user, o);
}

KF_API char *kf_cache_dir_verify_json(const char *dir, char *err, size_t cap)
{
    kf_cache *c = NULL;
    if (open_dir(&c, dir, 1, err, cap) != KF_OK) return NULL;
    cJSON *arr = cJSON_CreateArray();
    kf_cache_verify(c, report_problem, arr);
    kf_cache_free(c);
    char *out = cJSON_PrintUnformatted(arr);
    cJSON_Delete(arr);
    return out;
}
