/* Helpers shared by the cache tests: temp folders, sample entries, captured log lines. */
#ifndef KF_TESTS_TEST_CACHE_UTIL_H
#define KF_TESTS_TEST_CACHE_UTIL_H

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/cache.h"
#include "tests/c/check.h"
#include "common/signature.h"

/* ---- temp folders ---- */

static inline char *tmp_dir(void)
{
    char tmpl[] = "/tmp/kfcache-test-XXXXXX";
    char *d = mkdtemp(tmpl);
    return d ? strdup(d) : NULL;
}

static inline int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(p) < 0 ? 0 : 0; /* keep going */
}

static inline void rm_rf(char *dir)
{
    if (!dir) return;
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(dir);
}

static inline char *path_join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 2;
    char *p = malloc(n);
    snprintf(p, n, "%s/%s", a, b);
    return p;
}

static inline char *entry_path(const char *dir, const char *key_hex, const char *ext)
{
    char rel[80];
    snprintf(rel, sizeof rel, "entries/%s.%s", key_hex, ext);
    return path_join(dir, rel);
}

static inline int write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    size_t w = fwrite(p, 1, n, f);
    return fclose(f) == 0 && w == n ? 0 : -1;
}

static inline char *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)sz + 1);
    *n = fread(p, 1, (size_t)sz, f);
    p[*n] = '\0';
    fclose(f);
    return p;
}

static inline int file_exists(const char *path)
{
    struct stat sb;
    return lstat(path, &sb) == 0;
}

/* Flip one byte of a file in place. */
static inline int flip_byte(const char *path, long off)
{
    FILE *f = fopen(path, "r+b");
    if (!f) return -1;
    fseek(f, off, off < 0 ? SEEK_END : SEEK_SET);
    int c = fgetc(f);
    fseek(f, -1, SEEK_CUR);
    fputc(c ^ 0x5a, f);
    return fclose(f);
}

/* ---- sample entries (strings borrowed, never freed) ---- */

typedef struct test_entry {
    kf_cache_entry e;
    kf_sig sig;
    char source[512];
    char blob[512];
    size_t blob_len;
    char key_hex[KF_KEY_HEX];
} test_entry;

static inline void test_entry_init(test_entry *t, const char *op, int seed)
{
    memset(t, 0, sizeof *t);
    kf_sig_begin(&t->sig, op);
    kf_sig_int(&t->sig, seed);
    snprintf(t->source, sizeof t->source,
             "// %s #%d\n#define KF_ROWS %d\nvoid kf_kernel(const float *x, float *y) {}\n", op,
             seed, seed);
    t->blob_len = (size_t)snprintf(t->blob, sizeof t->blob, "BLOB:%s:%d:", op, seed) + 40;
    for (size_t i = 0; i < 40; i++) t->blob[t->blob_len - 40 + i] = (char)(i * 7 + seed);
    kf_cache_entry *e = &t->e;
    e->op = (char *)op;
    e->signature = (char *)"_softmax(f32[8,16], dim=-1)";
    e->sig = t->sig.buf;
    e->sig_len = t->sig.len;
    e->backend = (char *)"host";
    e->arch = (char *)"x86_64";
    e->toolchain = (char *)"cc: gcc 12.2.0; -O3";
    e->torch_version = (char *)"2.11.0";
    e->plugin_version = (char *)KF_VERSION_STRING;
    e->source = t->source;
    e->launch = (char *)"{\"entry\":\"kf_kernel\",\"grid\":[1,1,1],\"block\":[128,1,1],\"smem\":0,"
                        "\"args\":[\"const float*\",\"float*\"]}";
    e->compile_options = (char *)"-O3";
    e->outputs = (char *)"[{\"dtype\":1,\"sizes\":[8,16],\"strides\":[16,1]}]";
    e->max_abs_err = 1.5e-7;
    e->max_rel_err = 2.25e-6;
    e->atol = 1e-5;
    e->rtol = 1e-5;
    e->eager_us = 12.5;
    e->kernel_us = 3.25;
    e->proposer = (char *)"builtin";
    e->job = (char *)"job-0001";
    kf_key_inputs in = {e->sig, e->sig_len, e->backend, e->arch, e->toolchain,
                        e->torch_version, e->plugin_version, KF_CONTRACT_VERSION};
    kf_cache_key_hex(kf_cache_key_compute(&in), t->key_hex);
}

static inline kf_status test_insert(kf_cache *c, test_entry *t)
{
    return kf_cache_insert(c, &t->e, t->blob, t->blob_len, NULL);
}

/* The stand-in for the host compiler in kf_cache_import: "builds" a test entry's blob from its
 * source (the op and seed test_entry_init wrote there), as the real rebuild compiles it. */
static inline kf_status test_rebuild(void *user, const kf_cache_entry *e, void **blob,
                                     size_t *len, char *err, size_t cap)
{
    (void)user;
    const char *at = e->source ? strstr(e->source, " #") : NULL;
    int seed;
    if (!at || sscanf(at + 2, "%d", &seed) != 1) {
        snprintf(err, cap, "not a test entry's source");
        return KF_ERR_INVALID;
    }
    test_entry t;
    test_entry_init(&t, e->op, seed);
    *blob = malloc(t.blob_len);
    if (!*blob) return KF_ERR_NOMEM;
    memcpy(*blob, t.blob, t.blob_len);
    *len = t.blob_len;
    return KF_OK;
}

/* ---- captured log lines (the sink is set once per process: LeakSanitizer and the
 * intentionally leaked old sink do not mix) ---- */

typedef struct log_capture {
    pthread_mutex_t lock;
    int n_warn;
    char last[1024];
    char all[16384];
} log_capture;

static log_capture g_log __attribute__((unused)) = {PTHREAD_MUTEX_INITIALIZER, 0, "", ""};

static inline void log_sink(int level, const char *msg, void *user)
{
    (void)user;
    pthread_mutex_lock(&g_log.lock);
    if (level >= KF_LOG_WARNING) {
        g_log.n_warn++;
        snprintf(g_log.last, sizeof g_log.last, "%s", msg);
        size_t used = strlen(g_log.all);
        if (used + strlen(msg) + 2 < sizeof g_log.all)
            snprintf(g_log.all + used, sizeof g_log.all - used, "%s\n", msg);
    }
    pthread_mutex_unlock(&g_log.lock);
}

static inline void log_install(void)
{
    kf_set_log_callback(log_sink, NULL);
}

static inline void log_reset(void)
{
    pthread_mutex_lock(&g_log.lock);
    g_log.n_warn = 0;
    g_log.last[0] = g_log.all[0] = '\0';
    pthread_mutex_unlock(&g_log.lock);
}

/* How many entries/ files look like temp files. */
static inline int count_temp_files(const char *dir)
{
    char *ed = path_join(dir, "entries");
    int n = 0;
    DIR *d = opendir(ed);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)))
            if (!strncmp(de->d_name, ".tmp", 4)) n++;
        closedir(d);
    }
    free(ed);
    return n;
}

#endif
