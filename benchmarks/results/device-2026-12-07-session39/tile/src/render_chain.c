#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include "compile/compiler.h"
#include "common/chain_sig.h"
#include "common/signature.h"
#include "forge/job/job.h"
#include "forge/templates/chain.h"
#include "forge/templates/template.h"

static char tmpdir[] = "/tmp/kf_rcXXXXXX";
extern const kf_template kf_tmpl_cuda_chain;
static kf_job *load(const char *json, char *err, size_t cap)
{
    char dir[256], path[300];
    static int n;
    snprintf(dir, sizeof dir, "%s/j%d", tmpdir, n++);
    mkdir(dir, 0700);
    snprintf(path, sizeof path, "%s/job.json", dir);
    FILE *f = fopen(path, "w");
    fputs(json, f);
    fclose(f);
    kf_job *job = NULL;
    kf_job_load(dir, &job, err, cap);
    return job;
}

/* a job.json around the case's fields: each member's sig_hex (its op's signature head) and the
 * chain's canonical bytes as the job's sig_hex ("00" when the spec is refused there) */
static char *job_text(const char *fields, int n_in, int n_out)
{
    char ins[256] = "", outs[256] = "", *wrapped = malloc(strlen(fields) + 3);
    sprintf(wrapped, "{%s}", fields);
    cJSON *f = cJSON_Parse(wrapped), *m;
    free(wrapped);
    cJSON *spec = cJSON_GetObjectItem(f, "chain");
    const int has_layout = cJSON_GetObjectItem(f, "outputs_layout") != NULL;
    cJSON_ArrayForEach(m, cJSON_GetObjectItem(spec, "members"))
    {
        static kf_sig sg;
        const cJSON *op = cJSON_GetObjectItem(m, "op");
        kf_sig_begin(&sg, cJSON_IsString(op) ? op->valuestring : "?");
        char hex[600];
        for (uint32_t i = 0; i < sg.len; i++) sprintf(hex + 2 * i, "%02x", sg.buf[i]);
        cJSON_AddStringToObject(m, "sig_hex", hex);
    }
    uint8_t *bytes = NULL;
    uint32_t nb = 0;
    char why[256], *sig_hex;
    if (kf_chain_sig_bytes_obj(spec, &bytes, &nb, why, sizeof why) == KF_OK) {
        sig_hex = malloc(2 * (size_t)nb + 1);
        for (uint32_t i = 0; i < nb; i++) sprintf(sig_hex + 2 * i, "%02x", bytes[i]);
        free(bytes);
    } else {
        sig_hex = strdup("00");
    }
    char *body = cJSON_PrintUnformatted(f);
    cJSON_Delete(f);
    body[strlen(body) - 1] = 0; /* the fields without their braces */
    for (int i = 0; i < n_in; i++)
        snprintf(ins + strlen(ins), sizeof ins - strlen(ins), "%s\"i%d.bin\"", i ? "," : "", i);
    for (int i = 0; i < n_out; i++)
        snprintf(outs + strlen(outs), sizeof outs - strlen(outs), "%s\"o%d.bin\"", i ? "," : "", i);
    size_t cap = strlen(body) + strlen(sig_hex) + 1024;
    char *t = malloc(cap);
    snprintf(t, cap,
             "{\"format\": 1, \"op\": \"kforge::chain\", \"signature\": \"chain\", \"sig_hex\": "
             "\"%s\", \"torch_version\": \"x\", %s\"backend\": \"host\", "
             "\"device_index\": 0, %s, \"cases\": [{\"kind\": \"random\", \"inputs\": [%s], "
             "\"outputs\": [%s]}], \"eager_us\": 1, \"bytes_moved\": 1, \"bandwidth_gbs\": 0, "
             "\"atol\": 1e-5, \"rtol\": 1e-5}",
             sig_hex, has_layout ? "" : "\"outputs_layout\": [], ", body + 1, ins, outs);
    free(body);
    free(sig_hex);
    return t;
}

int main(int argc, char **argv)
{
    mkdtemp(tmpdir);
    FILE *f = fopen(argv[1], "r"); static char buf[1 << 16]; size_t n = fread(buf, 1, sizeof buf - 1, f); buf[n] = 0; fclose(f);
    char err[512] = "";
    kf_job *job = load(job_text(buf, atoi(argv[2]), atoi(argv[3])), err, sizeof err);
    if (!job) { printf("load: %s\n", err); return 1; }
    int idx[8] = {0};
    for (int i = 4; i < argc; i++) idx[i - 4] = atoi(argv[i]);
    char *s = NULL, *lj = NULL;
    if (kf_tmpl_cuda_chain.render(&job->sig, idx, &s, &lj, err, sizeof err) != KF_OK) { printf("render: %s\n", err); return 1; }
    printf("%s\n// launch %s\n", s, lj);
    return 0;
}
