/* The chain templates (forge/templates/chain.c, host_chain.c, cuda_chain.c) and the chain job's
 * loading (forge/job/chain.c):
 *  - chains written as job.json (the loader builds each member's signature from the spec),
 *    rendered by host_chain for every knob combination, compiled, run on poisoned outputs and
 *    compared with an independent reference written here (double math, each member's value
 *    rounded to its output dtype as eager stores it): RMSNorm in f32 (pow -> mean -> add ->
 *    rsqrt -> mul -> mul), pointwise f32 (add with a broadcast bias -> gelu -> mul), bf16
 *    (mul by a number -> sigmoid -> add), an in-place head (add_ -> relu), amax -> sub -> exp,
 *    linalg_vector_norm -> clamp_min (-> div) (f32, bf16);
 *    inputs come back unchanged;
 *  - the same chains rendered by cuda_chain (each threads value) compile: NVRTC for sm_90, or
 *    one translation unit with nvcc --ptx (SKIP when neither is here);
 *  - the loader refuses specs that lie (a reference to a later member, an external nobody
 *    reads, a later member writing in place, the head's written input read again, a member
 *    count unlike the outputs'), and the binding refuses what the templates cannot fuse with a
 *    reason naming the member and its op. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "tests/c/check.h"
#include "tests/c/nvcc_ptx.h"
#include "tests/c/nvrtc_find.h"
#include "compile/compiler.h"
#include "common/chain_sig.h"
#include "common/signature.h"
#include "compile/source_check.h"
#include "forge/job/job.h"
#include "forge/templates/chain.h"
#include "forge/templates/template.h"

static kf_compiler_i cc, nv;
static int have_nv;
static const kf_template *host_t, *cuda_t;
static char tmpdir[] = "/tmp/kf_chainXXXXXX";
static FILE *nvcc_tu;
static int nvcc_n;

/* ---- values ---- */

static float bf16_round(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return f;
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    memcpy(&f, &u, 4);
    return f;
}
static double get(const void *p, int dt, int64_t o)
{
    if (dt == KF_F32) return ((const float *)p)[o];
    uint32_t u = (uint32_t)((const uint16_t *)p)[o] << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static void put(void *p, int dt, int64_t o, double v)
{
    if (dt == KF_F32) {
        ((float *)p)[o] = (float)v;
        return;
    }
    float f = bf16_round((float)v);
    uint32_t u;
    memcpy(&u, &f, 4);
    ((uint16_t *)p)[o] = (uint16_t)(u >> 16);
}
static double store_as(int dt, double v) { return dt == KF_F32 ? (double)(float)v : bf16_round((float)v); }

/* ---- a chain case: job.json text, the reference ---- */

#define MAXT 12
typedef struct ccase {
    const char *label;
    const char *json; /* inputs, outputs, scalars, chain: the rest is filled in */
    /* reference: element e of member k's output from the inputs and earlier members' outputs
     * (all as doubles, laid out contiguously as the outputs) */
    void (*ref)(int64_t R, int64_t C, double *const *in, double **out);
    int64_t R, C;
    int dt;     /* the chain's float dtype */
    double rtol;
    int packs;  /* cuda_chain's vec = 1 renders packs (kf_chain_vec_width > 1) */
} ccase;

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

static int count_items(const char *json, const char *key)
{
    const char *p = strstr(json, key);
    if (!p) return 0;
    int n = 0, depth = 0;
    for (p = strchr(p, '['); *p; p++) {
        if (depth == 1 && *p == '{') n++;
        if (*p == '[' || *p == '{') depth++;
        if (*p == ']' || *p == '}') depth--;
        if (depth == 0) break;
    }
    return n;
}

static void cuda_compile(const char *label, const char *src, const char *lj)
{
    char err[256];
    if (!CHECK(kf_source_check_backend(src, "nvrtc", err, sizeof err))) printf("     %s: %s\n", label, err);
    if (have_nv) {
        kf_launch l;
        memset(&l, 0, sizeof l);
        void *blob = NULL;
        size_t len = 0;
        char *log = NULL;
        if (CHECK_EQ_INT(kf_launch_parse(lj, &l, err, sizeof err), KF_OK)) {
            kf_status st = nv.compile(nv.self, src, &l, "sm_90", &blob, &len, &log);
            if (!CHECK_EQ_INT(st, KF_OK) || (log && !CHECK(!strstr(log, "warning"))))
                printf("     %s (cuda): log:\n%s\n--- source ---\n%s\n", label, log ? log : "", src);
        }
        free(blob);
        free(log);
        return;
    }
    if (!nvcc_tu) return;
    nvcc_ptx_append(nvcc_tu, label, nvcc_n, src);
    nvcc_n++;
}

static void run_case(const ccase *c)
{
    int n_in = count_items(c->json, "\"inputs\""), n_out = count_items(c->json, "\"outputs\"");
    char *text = job_text(c->json, n_in, n_out), err[512] = "";
    kf_job *job = load(text, err, sizeof err);
    free(text);
    if (!CHECK(job != NULL)) {
        printf("     %s: %s\n", c->label, err);
        return;
    }
    const kf_job_sig *s = &job->sig;
    kf_chain_bind cb;
    err[0] = 0;
    if (!CHECK(kf_chain_bind_sig(s, &cb, err, sizeof err)) || !CHECK(host_t->applies(s)) ||
        !CHECK(cuda_t->applies(s))) {
        printf("     %s: not applicable: %s\n", c->label, err);
        kf_job_free(job);
        return;
    }
    int64_t R = c->R, C = c->C;
    /* the reference from the inputs as doubles */
    double *rin[MAXT] = {0}, *rout[MAXT] = {0};
    void *orig[MAXT] = {0};
    uint64_t rng = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < s->n_in; i++) {
        int ok;
        int64_t n = (int64_t)(kf_job_span_bytes(&s->in[i], &ok) / (uint64_t)kf_dtype_size(s->in[i].dtype));
        rin[i] = calloc((size_t)n, sizeof(double));
        orig[i] = calloc((size_t)n, 4);
        for (int64_t e = 0; e < n; e++) {
            rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
            double v = ((double)(rng >> 40) / (double)(1ull << 24) - 0.5) * 6;
            put(orig[i], s->in[i].dtype, e, v);
            rin[i][e] = get(orig[i], s->in[i].dtype, e);
        }
    }
    for (int k = 0; k < s->n_out; k++) rout[k] = calloc((size_t)kf_job_tensor_numel(&s->out[k]), sizeof(double));
    c->ref(R, C, rin, rout);

    int combos = 1;
    for (int k = 0; k < host_t->n_knobs; k++) combos *= host_t->knobs[k].n_values;
    for (int combo = 0; combo < combos; combo++) {
        int idx[8] = {0}, v = combo;
        for (int k = 0; k < host_t->n_knobs; k++) {
            idx[k] = v % host_t->knobs[k].n_values;
            v /= host_t->knobs[k].n_values;
        }
        char *src = NULL, *lj = NULL, *log = NULL;
        void *blob = NULL, *bufs[2 * MAXT] = {0};
        size_t len = 0;
        kf_compiled *kc = NULL;
        kf_launch l;
        memset(&l, 0, sizeof l);
        if (!CHECK_EQ_INT(host_t->render(s, idx, &src, &lj, err, sizeof err), KF_OK)) {
            printf("     %s: %s\n", c->label, err);
            break;
        }
        if (!CHECK(kf_source_check_backend(src, "host", err, sizeof err))) printf("     %s: %s\n", c->label, err);
        if (combo == 0 && getenv("KF_TEST_CHAIN_SHOW")) printf("--- %s ---\n%s\n", c->label, src);
        kf_chain_bind hb; /* a folded sum is a vector fold, not one dependent add per element */
        if (kf_chain_bind_sig(s, &hb, NULL, 0) && hb.red >= 0 && hb.red_kind != KF_CHAIN_RED_AMAX)
            CHECK(strstr(src, "#pragma omp simd reduction(+ : acc)") != NULL);
        if (!CHECK_EQ_INT(kf_launch_parse(lj, &l, err, sizeof err), KF_OK)) goto next;
        kf_status st = cc.compile(cc.self, src, &l, NULL, &blob, &len, &log);
        if (!CHECK_EQ_INT(st, KF_OK) || (log && !CHECK(!strstr(log, "warning")))) {
            printf("     %s: compile log:\n%s\n--- source ---\n%s\n", c->label, log ? log : "", src);
            goto next;
        }
        if (!CHECK_EQ_INT(cc.load(cc.self, blob, len, &l, 0, &kc, err, sizeof err), KF_OK)) goto next;
        int na = 0;
        for (int i = 0; i < s->n_in; i++) {
            int ok;
            uint64_t nb = kf_job_span_bytes(&s->in[i], &ok);
            bufs[na] = malloc(nb);
            memcpy(bufs[na], orig[i], nb);
            na++;
        }
        for (int k = 0; k < s->n_out; k++) {
            if (s->out_alias[k]) continue;
            size_t nb = (size_t)kf_job_tensor_numel(&s->out[k]) * (size_t)kf_dtype_size(s->out[k].dtype);
            bufs[na] = malloc(nb);
            memset(bufs[na], 0xff, nb); /* poison: NaN */
            na++;
        }
        if (!CHECK_EQ_INT(cc.launch(cc.self, kc, bufs, na, NULL), 0)) goto next;
        long bad = 0;
        const void *ys[MAXT];
        for (int k = 0, fi = s->n_in; k < s->n_out; k++) {
            const int a = s->out_alias[k]; /* an input written, or an earlier output written again */
            const void *y = ys[k] = a > 0 ? bufs[a - 1] : a < 0 ? ys[-a - 1] : bufs[fi++];
            int64_t n = kf_job_tensor_numel(&s->out[k]);
            for (int64_t e = 0; e < n; e++) {
                double got = get(y, s->out[k].dtype, e), want = rout[k][e];
                int ok = isnan(want) ? isnan(got) : fabs(got - want) <= 1e-6 + c->rtol * fabs(want);
                if (!ok && bad++ < 4)
                    printf("     %s (knobs %d): member %d element %lld: got %.9g, want %.9g\n", c->label,
                           combo, k, (long long)e, got, want);
            }
        }
        for (int i = 0; i < s->n_in; i++) { /* inputs unchanged (but the head's destination) */
            int ok;
            if (s->out_alias[0] == i + 1) continue;
            CHECK(!memcmp(bufs[i], orig[i], kf_job_span_bytes(&s->in[i], &ok)));
        }
        CHECK_EQ_INT(bad, 0);
        if (bad) printf("--- source ---\n%s\n", src);
    next:
        if (kc) cc.unload(cc.self, kc);
        for (int i = 0; i < 2 * MAXT; i++) free(bufs[i]);
        free(blob);
        free(log);
        free(src);
        free(lj);
    }
    /* CUDA: each threads value with each layout (knob indices of rows, vec, warp; warp only
     * matters with rows, and for a group norm without them: a cluster of 8 or 4), packs or not
     * (the grid knob changes the launch only) */
    static const int layouts[][3] = {{0, 0, 0}, {0, 0, 1}, {0, 1, 0}, {0, 1, 1}, {1, 0, 0}, {1, 1, 0}, {1, 0, 1}};
    const int nl = (int)(sizeof layouts / sizeof layouts[0]);
    for (int t = 0; t < nl * cuda_t->knobs[0].n_values; t++) {
        int nt = t % cuda_t->knobs[0].n_values;
        const int *ly = layouts[t / cuda_t->knobs[0].n_values];
        int rows = ly[0], vec = ly[1];
        int idx[8] = {nt, nt % cuda_t->knobs[1].n_values, ly[0], ly[1], ly[2]};
        char *src = NULL, *lj = NULL, label[96];
        snprintf(label, sizeof label, "%s threads=%d rows=%d vec=%d warp=%d", c->label,
                 cuda_t->knobs[0].values[nt], cuda_t->knobs[2].values[rows],
                 cuda_t->knobs[3].values[vec], cuda_t->knobs[4].values[ly[2]]);
        if (CHECK_EQ_INT(cuda_t->render(s, idx, &src, &lj, err, sizeof err), KF_OK)) {
            /* a layer norm after a strided member: the tile walk, unless the rows knob says not */
            int tile = cb.ln >= 0 && (cb.ostrided[0] || cb.st[1][cb.nd - 1] > 1) && cuda_t->knobs[2].values[rows];
            /* packs wherever the case says its rows and alignment allow them (the tile walk: its
             * y, in packs where the norm's weight and bias allow) */
            if (cuda_t->knobs[3].values[vec] && !tile && !CHECK_EQ_INT(strstr(src, "KF_VW") != NULL, c->packs))
                printf("     %s: packs %s\n", label, c->packs ? "expected" : "not expected");
            if (tile && !CHECK(strstr(src, "kf_pack_st(y1 + r * KF_C + c0, o1);")))
                printf("     %s: the tile's y in packs expected\n", label);
            /* a row tail's input in registers wherever no packs are taken (the rows are short) */
            int cached = cb.tail >= 0 && cb.tail_arg < 0 && cb.red < 0 && !cb.gn && !strstr(src, "KF_VW") &&
                         !strstr(src, "KF_TR ");
            /* a layer norm read in packs keeps them in registers, its y stored in packs */
            const int packed = strstr(src, "KF_VW") && !strstr(src, "KF_TR ") &&
                               kf_chain_tail_packs(&cb, s, kf_chain_vec_width(&cb, s));
            if (!CHECK_EQ_INT(strstr(src, "#define KF_PPL") != NULL, packed) ||
                (packed && !CHECK(strstr(src, " + r * KF_C + c0, o") && strstr(src, "kf_x[jp * KF_VW + e] = "))))
                printf("     %s: the norm's input in packed registers %s\n", label, packed ? "expected" : "not expected");
            cached |= packed;
            if (tile && !CHECK(!strstr(lj, "\"smem\":0,") &&
                               (strstr(src, "(kf_xs[kf_tx], c)") != NULL) == cuda_t->knobs[3].values[vec]))
                printf("     %s: the tile's shared memory, or its input staged (vec) or not\n", label);
            /* a dense sum is stored from the tile along the rows, not by phase 0 across them */
            if (tile && !CHECK_EQ_INT(strstr(src, "y0[r * KF_C + c] = kf_xs[kf_i][c];") != NULL, !cb.ostrided[0]))
                printf("     %s: the dense sum's store\n", label);
            if (!CHECK_EQ_INT(strstr(src, "(*const kf_xs)[KF_C + KF_XPAD]") != NULL, tile))
                printf("     %s: the tile walk %s\n", label, tile ? "expected" : "not expected");
            if (!CHECK_EQ_INT(strstr(src, "kf_x[KF_CPL]") != NULL, cached))
                printf("     %s: registers for the tail's input %s\n", label, cached ? "expected" : "not expected");
            if (nt == 0 && vec == 0 && ly[2] == 0 && getenv("KF_TEST_CHAIN_SHOW"))
                printf("--- %s ---\n%s\n", label, src);
            cuda_compile(label, src, lj);
        } else {
            printf("     %s: %s\n", label, err);
        }
        free(src);
        free(lj);
    }
    for (int i = 0; i < MAXT; i++) free(rin[i]), free(rout[i]), free(orig[i]);
    kf_job_free(job);
}

/* ---- the chains ---- */

#define T2(dt, r, c) "{\"dtype\": \"" dt "\", \"sizes\": [" #r ", " #c "], \"strides\": [" #c ", 1], \"align\": 16}"
#define O2(dt, r, c, a) "{\"dtype\": \"" dt "\", \"sizes\": [" #r ", " #c "], \"strides\": [" #c ", 1], \"alias\": " #a "}"
#define T1(dt, c) "{\"dtype\": \"" dt "\", \"sizes\": [" #c "], \"strides\": [1], \"align\": 16}"

/* RMSNorm, f32 [6, 40]: x.pow(2).mean(-1, keepdim) + 1e-6 -> rsqrt -> x * r -> * w */
static const char rms_json[] =
    "\"inputs\": [" T2("f32", 6, 40) ", " T1("f32", 40) "], "
    "\"outputs\": [" O2("f32", 6, 40, -1) ", " O2("f32", 6, 1, -1) ", " O2("f32", 6, 1, -1) ", "
    O2("f32", 6, 1, -1) ", " O2("f32", 6, 40, -1) ", " O2("f32", 6, 40, -1) "], "
    "\"scalars\": [{\"name\": \"m0.exponent\", \"kind\": \"d\", \"value\": 2.0}, "
    "{\"name\": \"m1.dim\", \"kind\": \"l\", \"value\": [-1]}, "
    "{\"name\": \"m1.keepdim\", \"kind\": \"b\", \"value\": true}, "
    "{\"name\": \"m1.dtype\", \"kind\": \"n\"}, "
    "{\"name\": \"m2.other\", \"kind\": \"d\", \"value\": 1e-6, \"wrapped\": true}, "
    "{\"name\": \"m2.alpha\", \"kind\": \"i\", \"value\": 1}], "
    "\"chain\": {\"version\": 1, \"n_head_inputs\": 1, \"n_ext\": 1, \"members\": ["
    "{\"op\": \"aten::pow.Tensor_Scalar\", \"inputs\": [[\"head\", 0]]}, "
    "{\"op\": \"aten::mean.dim\", \"inputs\": [[\"member\", 0, 0]]}, "
    "{\"op\": \"aten::add.Tensor\", \"inputs\": [[\"member\", 1, 0]]}, "
    "{\"op\": \"aten::rsqrt\", \"inputs\": [[\"member\", 2, 0]]}, "
    "{\"op\": \"aten::mul.Tensor\", \"inputs\": [[\"head\", 0], [\"member\", 3, 0]]}, "
    "{\"op\": \"aten::mul.Tensor\", \"inputs\": [[\"member\", 4, 0], [\"ext\", 0]]}]}";

static void rms_ref(int64_t R, int64_t C, double *const *in, double **out)
{
    for (int64_t r = 0; r < R; r++) {
        double s = 0;
        for (int64_t c = 0; c < C; c++) {
            double x = in[0][r * C + c];
            out[0][r * C + c] = (float)(x * x);
            s += out[0][r * C + c];
        }
        out[1][r] = (float)(s / (double)C);
        out[2][r] = (float)(out[1][r] + (double)(float)1e-6);
        out[3][r] = (float)(1 / sqrt(out[2][r]));
        for (int64_t c = 0; c < C; c++) {
            out[4][r * C + c] = (float)(in[0][r * C + c] * out[3][r]);
            out[5][r * C + c] = (float)(out[4][r * C + c] * in[1][c]);
        }
    }
}

/* transformers' RMSNorm on a bf16 model, whole: x.to(f32) -> pow(2).mean(-1, keepdim) + 1e-6 ->
 * rsqrt -> x * r -> .to(bf16) -> w * that */
#define TO_COPY(m, code)                                                                           \
    "{\"name\": \"m" #m ".dtype\", \"kind\": \"i\", \"value\": " #code "}, "                     \
    "{\"name\": \"m" #m ".layout\", \"kind\": \"n\"}, {\"name\": \"m" #m ".device\", \"kind\": \"n\"}, " \
    "{\"name\": \"m" #m ".pin_memory\", \"kind\": \"n\"}, "                                        \
    "{\"name\": \"m" #m ".non_blocking\", \"kind\": \"b\", \"value\": false}, "                     \
    "{\"name\": \"m" #m ".memory_format\", \"kind\": \"n\"}"
static const char rmsc_json[] =
    "\"inputs\": [" T2("bf16", 6, 40) ", " T1("bf16", 40) "], "
    "\"outputs\": [" O2("f32", 6, 40, -1) ", " O2("f32", 6, 40, -1) ", " O2("f32", 6, 1, -1) ", "
    O2("f32", 6, 1, -1) ", " O2("f32", 6, 1, -1) ", " O2("f32", 6, 40, -1) ", " O2("bf16", 6, 40, -1) ", "
    O2("bf16", 6, 40, -1) "], "
    "\"scalars\": [" TO_COPY(0, 6) ", {\"name\": \"m1.exponent\", \"kind\": \"d\", \"value\": 2.0}, "
    "{\"name\": \"m2.dim\", \"kind\": \"l\", \"value\": [-1]}, "
    "{\"name\": \"m2.keepdim\", \"kind\": \"b\", \"value\": true}, "
    "{\"name\": \"m2.dtype\", \"kind\": \"n\"}, "
    "{\"name\": \"m3.other\", \"kind\": \"d\", \"value\": 1e-6, \"wrapped\": true}, "
    "{\"name\": \"m3.alpha\", \"kind\": \"i\", \"value\": 1}, " TO_COPY(6, 15) "], "
    "\"chain\": {\"version\": 1, \"n_head_inputs\": 1, \"n_ext\": 1, \"members\": ["
    "{\"op\": \"aten::_to_copy\", \"inputs\": [[\"head\", 0]]}, "
    "{\"op\": \"aten::pow.Tensor_Scalar\", \"inputs\": [[\"member\", 0, 0]]}, "
    "{\"op\": \"aten::mean.dim\", \"inputs\": [[\"member\", 1, 0]]}, "
    "{\"op\": \"aten::add.Tensor\", \"inputs\": [[\"member\", 2, 0]]}, "
    "{\"op\": \"aten::rsqrt\", \"inputs\": [[\"member\", 3, 0]]}, "
    "{\"op\": \"aten::mul.Tensor\", \"inputs\": [[\"member\", 0, 0], [\"member\", 4, 0]]}, "
    "{\"op\": \"aten::_to_copy\", \"inputs\": [[\"member\", 5, 0]]}, "
    "{\"op\": \"aten::mul.Tensor\", \"inputs\": [[\"ext\", 0], [\"member\", 6, 0]]}]}";

static void rmsc_ref(int64_t R, int64_t C, double *const *in, double **out)
{
    for (int64_t r = 0; r < R; r++) {
        double s = 0;
        for (int64_t c = 0; c < C; c++) {
            double x = out[0][r * C + c] = in[0][r * C + c]; /* bf16 -> f32: exact */
            out[1][r * C + c] = (float)(x * x);
            s += out[1][r * C + c];
        }
        out[2][r] = (float)(s / (double)C);
        out[3][r] = (float)(out[2][r] + (double)(float)1e-6);
        out[4][r] = (float)(1 / sqrt(out[3][r]));
        for (int64_t c = 0; c < C; c++) {
            out[5][r * C + c] = (float)(out[0][r * C + c] * out[4][r]);
            out[6][r * C + c] = store_as(KF_BF16, out[5][r * C + c]);
            out[7][r * C + c] = store_as(KF_BF16, (float)(in[1][c] * out[6][r * C + c]));
        }
    }
}

/* pointwise f32 [4*8, 16] as [4, 8, 16]: (x + b) -> gelu -> * y */
static const char pw_json[] =
    "\"inputs\": [{\"dtype\": \"f32\", \"sizes\": [4, 8, 16], \"strides\": [128, 16, 1], \"align\": 16}, "
    T1("f32", 16) ", {\"dtype\": \"f32\", \"sizes\": [4, 8, 16], \"strides\": [128, 16, 1], \"align\": 16}], "
    "\"outputs\": [{\"dtype\": \"f32\", \"sizes\": [4, 8, 16], \"strides\": [128, 16, 1], \"alias\": -1}, "
    "{\"dtype\": \"f32\", \"sizes\": [4, 8, 16], \"strides\": [128, 16, 1], \"alias\": -1}, "
    "{\"dtype\": \"f32\", \"sizes\": [4, 8, 16], \"strides\": [128, 16, 1], \"alias\": -1}], "
    "\"scalars\": [{\"name\": \"m0.alpha\", \"kind\": \"i\", \"value\": 1}, "
    "{\"name\": \"m1.approximate\", \"kind\": \"s\", \"value\": \"none\"}], "
    "\"chain\": {\"version\": 1, \"n_head_inputs\": 2, \"n_ext\": 1, \"members\": ["
    "{\"op\": \"aten::add.Tensor\", \"inputs\": [[\"head\", 0], [\"head\", 1]]}, "
    "{\"op\": \"aten::gelu\", \"inputs\": [[\"member\", 0, 0]]}, "
    "{\"op\": \"aten::mul.Tensor\", \"inputs\": [[\"member\", 1, 0], [\"ext\", 0]]}]}";

static void pw_ref(int64_t R, int64_t C, double *const *in, double **out)
{
    for (int64_t e = 0; e < R * C; e++) {
        double a = (float)(in[0][e] + in[1][e % C]);
        double g = (float)(a * 0.5 * (1 + erf(a / sqrt(2.0))));
        out[0][e] = a;
        out[1][e] = g;
        out[2][e] = (float)(g * in[2][e]);
    }
}

/* rotary as transformers writes it, f32 q [12, 16]: q * cos + cat(-x2, x1) * sin, x1 and x2 the
 * halves of q (as a job takes them: externals of their own, strided as the views are) */
#define V2(r, c) "{\"dtype\": \"f32\", \"sizes\": [" #r ", " #c "], \"strides\": [16, 1], \"align\": 4}"
static const char rot_json[] =
    "\"inputs\": [" T2("f32", 12, 16) ", " T1("f32", 16) ", " V2(12, 8) ", " V2(12, 8) ", " T1("f32", 16) "], "
    "\"outputs\": [" O2("f32", 12, 16, -1) ", " O2("f32", 12, 8, -1) ", " O2("f32", 12, 16, -1) ", "
    O2("f32", 12, 16, -1) ", " O2("f32", 12, 16, -1) "], "
    "\"scalars\": [{\"name\": \"m2.dim\", \"kind\": \"i\", \"value\": -1}, "
    "{\"name\": \"m4.alpha\", \"kind\": \"i\", \"value\": 1}], "
    "\"chain\": {\"version\": 1, \"n_head_inputs\": 2, \"n_ext\": 3, \"members\": ["
    "{\"op\": \"aten::mul.Tensor\", \"inputs\": [[\"head\", 0], [\"head\", 1]]}, "
    "{\"op\": \"aten::neg\", \"inputs\": [[\"ext\", 0]]}, "
    "{\"op\": \"aten::cat\", \"inputs\": [[\"member\", 1, 0], [\"ext\", 1]]}, "
    "{\"op\": \"aten::mul.Tensor\", \"inputs\": [[\"member\", 2, 0], [\"ext\", 2]]}, "
    "{\"op\": \"aten::add.Tensor\", \"inputs\": [[\"member\", 0, 0], [\"member\", 3, 0]]}], "
    "\"views\": [[0, 0, 32], [1, 0, 0]]}";

static void rot_ref(int64_t R, int64_t C, double *const *in, double **out)
{
    for (int64_t r = 0; r < R; r++)
        for (int64_t c = 0; c < C; c++) {
            const int64_t e = r * C + c;
            out[0][e] = (float)(in[0][e] * in[1][c]);
            if (c < C / 2) out[1][r * (C / 2) + c] = -in[2][r * 16 + c];
            out[2][e] = c < C / 2 ? -in[2][r * 16 + c] : in[3][r * 16 + c - C / 2];
            out[3][e] = (float)(out[2][e] * in[4][c]);
            out[4][e] = (float)(out[0][e] + out[3][e]);
        }
}

/* bf16 [8, 40] (rows of at least 32: cuda_chain's block-per-row layout too): x * 2.5 -> sigmoid
 * -> + y, each stored as bf16 */
static const char bf_json[] =
    "\"inputs\": [" T2("bf16", 8, 40) ", " T2("bf16", 8, 40) "], "
    "\"outputs\": [" O2("bf16", 8, 40, -1) ", " O2("bf16", 8, 40, -1) ", " O2("bf16", 8, 40, -1) "], "
    "\"scalars\": [{\"name\": \"m0.other\", \"kind\": \"d\", \"value\": 2.5, \"wrapped\": true}, "
    "{\"name\": \"m2.alpha\", \"kind\": \"i\", \"value\": 1}], "
    "\"chain\": {\"version\": 1, \"n_head_inputs\": 1, \"n_ext\": 1, \"members\": ["
    "{\"op\": \"aten::mul.Tensor\", \"inputs\": [[\"head\", 0]]}, "
    "{\"op\": \"aten::sigmoid\", \"inputs\": [[\"member\", 0, 0]]}, "
    "{\"op\": \"aten::add.Tensor\", \"inputs\": [[\"member\", 1, 0], [\"ext\", 0]]}]}";

static void bf_ref(int64_t R, int64_t C, double *const *in, double **out)
{
    for (int64_t e = 0; e < R * C; e++) {
        out[0][e] = store_as(KF_BF16, (float)(in[0][e] * 2.5));
        out[1][e] = store_as(KF_BF16, (float)(1 / (1 + exp(-out[0][e]))));
        out[2][e] = store_as(KF_BF16, (float)(out[1][e] + in[1][e]));
    }
}

/* in-place head: x.add_(y) -> relu */
static const char inpl_json[] =
    "\"inputs\": [" T2("f32", 5, 12) ", " T2("f32", 5, 12) "], "
    "\"outputs\": [" O2("f32", 5, 12, 0) ", " O2("f32", 5, 12, -1) "], "
    "\"scalars\": [{\"name\": \"m0.alpha\", \"kind\": \"i\", \"value\": 1}], "
    "\"chain\": {\"version\": 1, \"n_head_inputs\": 2, \"n_ext\": 0, \"members\": ["
    "{\"op\": \"aten::add_.Tensor\", \"inputs\": [[\"head\", 0], [\"head\", 1]]}, "
    "{\"op\": \"aten::relu\", \"inputs\": [[\"member\", 0, 0]]}]}";

static void inpl_ref(int64_t R, int64_t C, double *const *in, double **out)
{
    for (int64_t e = 0; e < R * C; e++) {
        out[0][e] = (float)(in[0][e] + in[1][e]);
        out[1][e] = out[0][e] < 0 ? 0 : out[0][e];
    }
}

/* amax(x, -1, keepdim) -> x - m -> exp (softmax's numerator) */
static const char amax_json[] =
    "\"inputs\": [" T2("f32", 7, 33) "], "
    "\"outputs\": [" O2("f32", 7, 1, -1) ", " O2("f32", 7, 33, -1) ", " O2("f32", 7, 33, -1) "], "
    "\"scalars\": [{\"name\": \"m0.dim\", \"kind\": \"l\", \"value\": [1]}, "
    "{\"name\": \"m0.keepdim\", \"kind\": \"b\", \"value\": true}, "
    "{\"name\": \"m1.alpha\", \"kind\": \"i\", \"value\": 1}], "
    "\"chain\": {\"version\": 1, \"n_head_inputs\": 1, \"n_ext\": 0, \"members\": ["
    "{\"op\": \"aten::amax\", \"inputs\": [[\"head\", 0]]}, "
    "{\"op\": \"aten::sub.Tensor\", \"inputs\": [[\"head\", 0], [\"member\", 0, 0]]}, "
    "{\"op\": \"aten::exp\", \"inputs\": [[\"member\", 1, 0]]}]}";

static void amax_ref(int64_t R, int64_t C, double *const *in, double **out)
{
    for (int64_t r = 0; r < R; r++) {
        double m = -INFINITY;
        for (int64_t c = 0; c < C; c++) m = fmax(m, in[0][r * C + c]);
        out[0][r] = m;
        for (int64_t c = 0; c < C; c++) {
            out[1][r * C + c] = (float)(in[0][r * C + c] - m);
            out[2][r * C + c] = (float)exp(out[1][r * C + c]);
        }
    }
}

/* F.normalize without its expand: x / x.norm(2, -1, keepdim).clamp_min(1e-12), [R, 33] */
#define NORM2_JSON(dt, ord)                                                                       \
    "\"inputs\": [" T2(dt, 7, 33) "], "                                                           \
    "\"outputs\": [" O2(dt, 7, 1, -1) ", " O2(dt, 7, 1, -1) ", " O2(dt, 7, 33, -1) "], "           \
    "\"scalars\": [" ord ", {\"name\": \"m0.dim\", \"kind\": \"l\", \"value\": [-1]}, "           \
    "{\"name\": \"m0.keepdim\", \"kind\": \"b\", \"value\": true}, "                               \
    "{\"name\": \"m0.dtype\", \"kind\": \"n\"}, "                                                   \
    "{\"name\": \"m1.min\", \"kind\": \"d\", \"value\": 1e-12}], "                                 \
    "\"chain\": {\"version\": 1, \"n_head_inputs\": 1, \"n_ext\": 0, \"members\": ["                 \
    "{\"op\": \"aten::linalg_vector_norm\", \"inputs\": [[\"head\", 0]]}, "                          \
    "{\"op\": \"aten::clamp_min\", \"inputs\": [[\"member\", 0, 0]]}, "                              \
    "{\"op\": \"aten::div.Tensor\", \"inputs\": [[\"head\", 0], [\"member\", 1, 0]]}]}"
static const char norm2_json[] = NORM2_JSON("f32", "{\"name\": \"m0.ord\", \"kind\": \"d\", \"value\": 2.0}");
static const char norm2bf_json[] = NORM2_JSON("bf16", "{\"name\": \"m0.ord\", \"kind\": \"i\", \"value\": 2}");

/* F.normalize records norm -> clamp_min alone (its division reads an expand of the clamp): no
 * output of the chain's full shape, which is the norm's input */
static const char norm2c_json[] =
    "\"inputs\": [" T2("f32", 7, 33) "], "
    "\"outputs\": [" O2("f32", 7, 1, -1) ", " O2("f32", 7, 1, -1) "], "
    "\"scalars\": [{\"name\": \"m0.ord\", \"kind\": \"d\", \"value\": 2.0}, "
    "{\"name\": \"m0.dim\", \"kind\": \"l\", \"value\": [-1]}, "
    "{\"name\": \"m0.keepdim\", \"kind\": \"b\", \"value\": true}, "
    "{\"name\": \"m0.dtype\", \"kind\": \"n\"}, "
    "{\"name\": \"m1.min\", \"kind\": \"d\", \"value\": 1e-12}], "
    "\"chain\": {\"version\": 1, \"n_head_inputs\": 1, \"n_ext\": 0, \"members\": ["
    "{\"op\": \"aten::linalg_vector_norm\", \"inputs\": [[\"head\", 0]]}, "
    "{\"op\": \"aten::clamp_min\", \"inputs\": [[\"member\", 0, 0]]}]}";

static void norm2_ref_(int dt, int div, int64_t R, int64_t C, double *const *in, double **out)
{
    for (int64_t r = 0; r < R; r++) {
        double s = 0;
        for (int64_t c = 0; c < C; c++) s += in[0][r * C + c] * in[0][r * C + c];
        out[0][r] = store_as(dt, sqrt(s));
        out[1][r] = store_as(dt, fmax(out[0][r], 1e-12));
        for (int64_t c = 0; div && c < C; c++) out[2][r * C + c] = store_as(dt, in[0][r * C + c] / out[1][r]);
    }
}
static void norm2_ref(int64_t R, int64_t C, double *const *in, double **out) { norm2_ref_(KF_F32, 1, R, C, in, out); }
static void norm2bf_ref(int64_t R, int64_t C, double *const *in, double **out) { norm2_ref_(KF_BF16, 1, R, C, in, out); }
static void norm2c_ref(int64_t R, int64_t C, double *const *in, double **out) { norm2_ref_(KF_F32, 0, R, C, in, out); }

/* the residual add, then a layer norm of the last dim: x + h -> native_layer_norm(., [40], w, b) */
static const char ln_json[] =
    "\"inputs\": [" T2("f32", 6, 40) ", " T2("f32", 6, 40) ", " T1("f32", 40) ", " T1("f32", 40) "], "
    "\"outputs\": [" O2("f32", 6, 40, -1) ", " O2("f32", 6, 40, -1) ", " O2("f32", 6, 1, -1) ", "
    O2("f32", 6, 1, -1) "], "
    "\"scalars\": [{\"name\": \"m0.alpha\", \"kind\": \"i\", \"value\": 1}, "
    "{\"name\": \"m1.normalized_shape\", \"kind\": \"l\", \"value\": [40]}, "
    "{\"name\": \"m1.eps\", \"kind\": \"d\", \"value\": 1e-5}], "
    "\"chain\": {\"version\": 1, \"n_head_inputs\": 2, \"n_ext\": 2, \"members\": ["
    "{\"op\": \"aten::add.Tensor\", \"inputs\": [[\"head\", 0], [\"head\", 1]]}, "
    "{\"op\": \"aten::native_layer_norm\", \"inputs\": [[\"member\", 0, 0], [\"ext\", 0], [\"ext\", 1]]}]}";

/* the norm of each row of h (member 0's stored output) into y, mean, rstd; w, b may be NULL */
static void norm_ref(int64_t R, int64_t C, int dt, double eps, const double *h, const double *w,
                     const double *b, double *y, double *mean, double *rstd)
{
    for (int64_t r = 0; r < R; r++) {
        double s = 0, q = 0;
        for (int64_t c = 0; c < C; c++) s += h[r * C + c];
        const double m = s / (double)C;
        for (int64_t c = 0; c < C; c++) q += (h[r * C + c] - m) * (h[r * C + c] - m);
        const double rs = 1 / sqrt(q / (double)C + (double)(float)eps);
        mean[r] = (float)m;
        rstd[r] = (float)rs;
        for (int64_t c = 0; c < C; c++)
            y[r * C + c] = store_as(dt, (h[r * C + c] - m) * rs * (w ? w[c] : 1) + (b ? b[c] : 0));
    }
}

static void ln_ref(int64_t R, int64_t C, double *const *in, double **out)
{
    for (int64_t e = 0; e < R * C; e++) out[0][e] = (float)(in[0][e] + in[1][e]);
    norm_ref(R, C, KF_F32, 1e-5, out[0], in[2], in[3], out[1], out[2], out[3]);
}

/* Whisper's residual stream, transposed from its convolutions: x [2, 24, 40] with strides
 * [960, 1, 24] plus a contiguous h, the sum stored with x's strides (eager's layout), then
 * native_layer_norm(., [40], w, b) stored contiguous; cuda_chain's tile walk */
#define TX3(dt, what) "{\"dtype\": \"" dt "\", \"sizes\": [2, 24, 40], \"strides\": [960, 1, 24], " what "}"
#define X3(dt, what) "{\"dtype\": \"" dt "\", \"sizes\": [2, 24, 40], \"strides\": [960, 40, 1], " what "}"
/* the chain over inputs laid out L0 and L1, the sum laid out LO (TX3 or X3), the weight W */
#define TLN_JSON(dt, L0, L1, LO) TLN_JSON_(dt, L0, L1, LO, T1(dt, 40))
#define TLN_JSON_(dt, L0, L1, LO, W)                                                               \
    "\"inputs\": [" L0(dt, "\"align\": 16") ", " L1(dt, "\"align\": 16") ", " W ", " T1(dt, 40) "], " \
    "\"outputs\": [" LO(dt, "\"alias\": -1") ", " X3(dt, "\"alias\": -1") ", "                           \
    "{\"dtype\": \"f32\", \"sizes\": [2, 24, 1], \"strides\": [24, 1, 1], \"alias\": -1}, "                  \
    "{\"dtype\": \"f32\", \"sizes\": [2, 24, 1], \"strides\": [24, 1, 1], \"alias\": -1}], "                 \
    "\"scalars\": [{\"name\": \"m0.alpha\", \"kind\": \"i\", \"value\": 1}, "                              \
    "{\"name\": \"m1.normalized_shape\", \"kind\": \"l\", \"value\": [40]}, "                               \
    "{\"name\": \"m1.eps\", \"kind\": \"d\", \"value\": 1e-5}], "                                          \
    "\"chain\": {\"version\": 1, \"n_head_inputs\": 2, \"n_ext\": 2, \"members\": ["                          \
    "{\"op\": \"aten::add.Tensor\", \"inputs\": [[\"head\", 0], [\"head\", 1]]}, "                             \
    "{\"op\": \"aten::native_layer_norm\", \"inputs\": [[\"member\", 0, 0], [\"ext\", 0], [\"ext\", 1]]}]}"
static const char tln_json[] = TLN_JSON("f32", TX3, X3, TX3);
static const char tlnbf_json[] = TLN_JSON("bf16", TX3, X3, TX3);
/* its weight 2-byte aligned: the tile walk's y element by element */
static const char tlnbfw_json[] = TLN_JSON_("bf16", TX3, X3, TX3,
                                            "{\"dtype\": \"bf16\", \"sizes\": [40], \"strides\": [1], \"align\": 2}");
/* the contiguous h first: the sum dense, its one strided input x read along the tile's rows */
static const char tlnd_json[] = TLN_JSON("bf16", X3, TX3, X3);

static void tln_ref_(int dt, double *const *in, double **out)
{
    double h[2 * 24 * 40];
    for (int64_t e = 0; e < 2 * 24 * 40; e++) { /* e = (b, t, c) in row-major order */
        const int64_t b = e / 960, t = e / 40 % 24, c = e % 40, xo = b * 960 + c * 24 + t;
        out[0][xo] = h[e] = store_as(dt, in[0][xo] + in[1][e]);
    }
    norm_ref(48, 40, dt, 1e-5, h, in[2], in[3], out[1], out[2], out[3]);
}
static void tlnd_ref(int64_t R, int64_t C, double *const *in, double **out)
{
    for (int64_t e = 0; e < R * C; e++) { /* e = (b, t, c) in row-major order */
        const int64_t b = e / 960, t = e / 40 % 24, c = e % 40;
        out[0][e] = store_as(KF_BF16, in[0][e] + in[1][b * 960 + c * 24 + t]);
    }
    norm_ref(R, C, KF_BF16, 1e-5, out[0], in[2], in[3], out[1], out[2], out[3]);
}
static void tln_ref(int64_t R, int64_t C, double *const *in, double **out) { (void)R, (void)C, tln_ref_(KF_F32, in, out); }
static void tlnbf_ref(int64_t R, int64_t C, double *const *in, double **out) { (void)R, (void)C, tln_ref_(KF_BF16, in, out); }

/* bf16, no bias: x * 0.5 -> native_layer_norm(., [24], w, None), mean and rstd in f32 (CUDA's) */
static const char lnbf_json[] =
    "\"inputs\": [" T2("bf16", 8, 24) ", " T1("bf16", 24) "], "
    "\"outputs\": [" O2("bf16", 8, 24, -1) ", " O2("bf16", 8, 24, -1) ", " O2("f32", 8, 1, -1) ", "
    O2("f32", 8, 1, -1) "], "
    "\"scalars\": [{\"name\": \"m0.other\", \"kind\": \"d\", \"value\": 0.5, \"wrapped\": true}, "
    "{\"name\": \"m1.normalized_shape\", \"kind\": \"l\", \"value\": [24]}, "
    "{\"name\": \"m1.bias\", \"kind\": \"n\"}, "
    "{\"name\": \"m1.eps\", \"kind\": \"d\", \"value\": 1e-6}], "
    "\"chain\": {\"version\": 1, \"n_head_inputs\": 1, \"n_ext\": 1, \"members\": ["
    "{\"op\": \"aten::mul.Tensor\", \"inputs\": [[\"head\", 0]]}, "
    "{\"op\": \"aten::native_layer_norm\", \"inputs\": [[\"member\", 0, 0], [\"ext\", 0]]}]}";

static void lnbf_ref(int64_t R, int64_t C, double *const *in, double **out)
{
    for (int64_t e = 0; e < R * C; e++) out[0][e] = store_as(KF_BF16, in[0][e] * 0.5);
    norm_ref(R, C, KF_BF16, 1e-6, out[0], in[1], NULL, out[1], out[2], out[3]);
}

/* a UNet block's time embedding added, then a group norm: x[2, 8, 5] + t[2, 8, 1] ->
 * native_group_norm(., w[8], b[8], N=2, C=8, HxW=5, group=4); host only */
#define GN3(what) "{\"dtype\": \"f32\", \"sizes\": [2, 8, 5], \"strides\": [40, 5, 1], " what "}"
/* its inputs, the add's and the norm's outputs, scalars, and the two members */
#define GN_INPUTS                                                                                  \
    "\"inputs\": [" GN3("\"align\": 16") ", {\"dtype\": \"f32\", \"sizes\": [2, 8, 1], \"strides\": "   \
    "[8, 1, 1], \"align\": 16}, " T1("f32", 8) ", " T1("f32", 8) "], "
#define GN_OUTPUTS                                                                                 \
    GN3("\"alias\": -1") ", " GN3("\"alias\": -1") ", " O2("f32", 2, 4, -1) ", " O2("f32", 2, 4, -1)
#define GN_SCALARS                                                                                 \
    "\"scalars\": [{\"name\": \"m0.alpha\", \"kind\": \"i\", \"value\": 1}, "                              \
    "{\"name\": \"m1.N\", \"kind\": \"i\", \"value\": 2}, {\"name\": \"m1.C\", \"kind\": \"i\", \"value\": 8}, " \
    "{\"name\": \"m1.HxW\", \"kind\": \"i\", \"value\": 5}, {\"name\": \"m1.group\", \"kind\": \"i\", \"value\": 4}, " \
    "{\"name\": \"m1.eps\", \"kind\": \"d\", \"value\": 1e-5}], "
#define GN_MEMBERS                                                                                 \
    "\"chain\": {\"version\": 1, \"n_head_inputs\": 2, \"n_ext\": 2, \"members\": ["                     \
    "{\"op\": \"aten::add.Tensor\", \"inputs\": [[\"head\", 0], [\"head\", 1]]}, "                          \
    "{\"op\": \"aten::native_group_norm\", \"inputs\": [[\"member\", 0, 0], [\"ext\", 0], [\"ext\", 1]]}"
static const char gn_json[] = GN_INPUTS "\"outputs\": [" GN_OUTPUTS "], " GN_SCALARS GN_MEMBERS "]}";

/* the group norm of gn_json's [2, 8, 5] (4 groups of 2 channels x 5) of x into y, mean, rstd */
static void group_norm_ref(int64_t n, int64_t C, const double *x, const double *w, const double *b,
                           double *y, double *mean, double *rstd)
{
    const int64_t ch = 8, per = 10;
    for (int64_t g = 0; g < n / per; g++) {
        double s = 0, q = 0;
        for (int64_t e = g * per; e < (g + 1) * per; e++) s += x[e];
        const double m = s / (double)per;
        for (int64_t e = g * per; e < (g + 1) * per; e++) q += (x[e] - m) * (x[e] - m);
        const double rs = 1 / sqrt(q / (double)per + (double)(float)1e-5);
        mean[g] = (float)m;
        rstd[g] = (float)rs;
        for (int64_t e = g * per; e < (g + 1) * per; e++)
            y[e] = (float)((x[e] - m) * rs * w[(e / C) % ch] + b[(e / C) % ch]);
    }
}

static void gn_ref(int64_t R, int64_t C, double *const *in, double **out)
{
    for (int64_t e = 0; e < R * C; e++) out[0][e] = (float)(in[0][e] + in[1][e / C]);
    group_norm_ref(R * C, C, out[0], in[2], in[3], out[1], out[2], out[3]);
}

/* the same block's norm then its activation, the norm mid-chain: x + t -> group norm -> silu;
 * outputs in member order, the norm's mean and rstd in its place (outputs_layout's marks) */
#define LAYOUT(...) "\"outputs_layout\": [" __VA_ARGS__ "], "
#define M(k) "{\"member\": " #k "}"
static const char gns_json[] =
    LAYOUT(M(0) ", " M(1) ", " M(1) ", " M(1) ", " M(2))
    GN_INPUTS "\"outputs\": [" GN_OUTPUTS ", " GN3("\"alias\": -1") "], " GN_SCALARS GN_MEMBERS
    ", {\"op\": \"aten::silu\", \"inputs\": [[\"member\", 1, 0]]}]}";

static double silu_ref(double v) { return (float)(v / (1 + exp(-v))); }

static void gns_ref(int64_t R, int64_t C, double *const *in, double **out)
{
    gn_ref(R, C, in, out);
    for (int64_t e = 0; e < R * C; e++) out[4][e] = silu_ref(out[1][e]);
}

/* a ResNet block's first norm, which heads its chain (its input from outside): group norm -> silu */
static const char gnh_json[] =
    LAYOUT(M(0) ", " M(0) ", " M(0) ", " M(1))
    "\"inputs\": [" GN3("\"align\": 16") ", " T1("f32", 8) ", " T1("f32", 8) "], "
    "\"outputs\": [" GN3("\"alias\": -1") ", " O2("f32", 2, 4, -1) ", " O2("f32", 2, 4, -1) ", "
    GN3("\"alias\": -1") "], "
    "\"scalars\": [{\"name\": \"m0.N\", \"kind\": \"i\", \"value\": 2}, {\"name\": \"m0.C\", \"kind\": \"i\", \"value\": 8}, "
    "{\"name\": \"m0.HxW\", \"kind\": \"i\", \"value\": 5}, {\"name\": \"m0.group\", \"kind\": \"i\", \"value\": 4}, "
    "{\"name\": \"m0.eps\", \"kind\": \"d\", \"value\": 1e-5}], "
    "\"chain\": {\"version\": 1, \"n_head_inputs\": 3, \"n_ext\": 0, \"members\": ["
    "{\"op\": \"aten::native_group_norm\", \"inputs\": [[\"head\", 0], [\"head\", 1], [\"head\", 2]]}, "
    "{\"op\": \"aten::silu\", \"inputs\": [[\"member\", 0, 0]]}]}";

static void gnh_ref(int64_t R, int64_t C, double *const *in, double **out)
{
    group_norm_ref(R * C, C, in[0], in[1], in[2], out[0], out[1], out[2]);
    for (int64_t e = 0; e < R * C; e++) out[3][e] = silu_ref(out[0][e]);
}

/* bf16, the norm heading: native_layer_norm(x, [24], w, b) -> gelu -> * s (s from outside) */
static const char lnh_json[] =
    LAYOUT(M(0) ", " M(0) ", " M(0) ", " M(1) ", " M(2))
    "\"inputs\": [" T2("bf16", 8, 24) ", " T1("bf16", 24) ", " T1("bf16", 24) ", " T2("bf16", 8, 24) "], "
    "\"outputs\": [" O2("bf16", 8, 24, -1) ", " O2("f32", 8, 1, -1) ", " O2("f32", 8, 1, -1) ", "
    O2("bf16", 8, 24, -1) ", " O2("bf16", 8, 24, -1) "], "
    "\"scalars\": [{\"name\": \"m0.normalized_shape\", \"kind\": \"l\", \"value\": [24]}, "
    "{\"name\": \"m0.eps\", \"kind\": \"d\", \"value\": 1e-5}, "
    "{\"name\": \"m1.approximate\", \"kind\": \"s\", \"value\": \"none\"}], "
    "\"chain\": {\"version\": 1, \"n_head_inputs\": 3, \"n_ext\": 1, \"members\": ["
    "{\"op\": \"aten::native_layer_norm\", \"inputs\": [[\"head\", 0], [\"head\", 1], [\"head\", 2]]}, "
    "{\"op\": \"aten::gelu\", \"inputs\": [[\"member\", 0, 0]]}, "
    "{\"op\": \"aten::mul.Tensor\", \"inputs\": [[\"member\", 1, 0], [\"ext\", 0]]}]}";

static void lnh_ref(int64_t R, int64_t C, double *const *in, double **out)
{
    norm_ref(R, C, KF_BF16, 1e-5, in[0], in[1], in[2], out[0], out[1], out[2]);
    for (int64_t e = 0; e < R * C; e++) {
        out[3][e] = store_as(KF_BF16, 0.5 * out[0][e] * (1 + erf(out[0][e] / sqrt(2.0))));
        out[4][e] = store_as(KF_BF16, out[3][e] * in[3][e]);
    }
}

/* an attention mask added, then a softmax of the last dim: x + mask[40] -> _softmax(., -1) */
static const char sm_json[] =
    "\"inputs\": [" T2("f32", 6, 40) ", " T1("f32", 40) "], "
    "\"outputs\": [" O2("f32", 6, 40, -1) ", " O2("f32", 6, 40, -1) "], "
    "\"scalars\": [{\"name\": \"m0.alpha\", \"kind\": \"i\", \"value\": 1}, "
    "{\"name\": \"m1.dim\", \"kind\": \"i\", \"value\": -1}, "
    "{\"name\": \"m1.half_to_float\", \"kind\": \"b\", \"value\": false}], "
    "\"chain\": {\"version\": 1, \"n_head_inputs\": 2, \"n_ext\": 0, \"members\": ["
    "{\"op\": \"aten::add.Tensor\", \"inputs\": [[\"head\", 0], [\"head\", 1]]}, "
    "{\"op\": \"aten::_softmax\", \"inputs\": [[\"member\", 0, 0]]}]}";

/* softmax of each row of h (member 0's stored output) into y */
static void softmax_ref(int64_t R, int64_t C, int dt, const double *h, double *y)
{
    for (int64_t r = 0; r < R; r++) {
        double m = -INFINITY, s = 0;
        for (int64_t c = 0; c < C; c++) m = fmax(m, h[r * C + c]);
        for (int64_t c = 0; c < C; c++) s += exp(h[r * C + c] - m);
        for (int64_t c = 0; c < C; c++) y[r * C + c] = store_as(dt, exp(h[r * C + c] - m) / s);
    }
}

static void sm_ref(int64_t R, int64_t C, double *const *in, double **out)
{
    for (int64_t e = 0; e < R * C; e++) out[0][e] = (float)(in[0][e] + in[1][e % C]);
    softmax_ref(R, C, KF_F32, out[0], out[1]);
}

/* bf16, scaled first: x * 0.125 -> _softmax(., 1) */
static const char smbf_json[] =
    "\"inputs\": [" T2("bf16", 8, 24) "], "
    "\"outputs\": [" O2("bf16", 8, 24, -1) ", " O2("bf16", 8, 24, -1) "], "
    "\"scalars\": [{\"name\": \"m0.other\", \"kind\": \"d\", \"value\": 0.125, \"wrapped\": true}, "
    "{\"name\": \"m1.dim\", \"kind\": \"i\", \"value\": 1}, "
    "{\"name\": \"m1.half_to_float\", \"kind\": \"b\", \"value\": false}], "
    "\"chain\": {\"version\": 1, \"n_head_inputs\": 1, \"n_ext\": 0, \"members\": ["
    "{\"op\": \"aten::mul.Tensor\", \"inputs\": [[\"head\", 0]]}, "
    "{\"op\": \"aten::_softmax\", \"inputs\": [[\"member\", 0, 0]]}]}";

static void smbf_ref(int64_t R, int64_t C, double *const *in, double **out)
{
    for (int64_t e = 0; e < R * C; e++) out[0][e] = store_as(KF_BF16, in[0][e] * 0.125);
    softmax_ref(R, C, KF_BF16, out[0], out[1]);
}

/* transformers' eager attention in bf16: x + mask[40] -> _to_copy(f32, layout=0, as a job has
 * it) -> _softmax(., -1) -> _to_copy(bf16), the cast back the softmax's epilogue */
static const char smc_json[] =
    "\"inputs\": [" T2("bf16", 6, 40) ", " T1("bf16", 40) "], "
    "\"outputs\": [" O2("bf16", 6, 40, -1) ", " O2("f32", 6, 40, -1) ", " O2("f32", 6, 40, -1) ", "
    O2("bf16", 6, 40, -1) "], "
    "\"scalars\": [{\"name\": \"m0.alpha\", \"kind\": \"i\", \"value\": 1}, "
    "{\"name\": \"m1.dtype\", \"kind\": \"i\", \"value\": 6}, "
    "{\"name\": \"m1.layout\", \"kind\": \"i\", \"value\": 0}, {\"name\": \"m1.device\", \"kind\": \"n\"}, "
    "{\"name\": \"m1.pin_memory\", \"kind\": \"n\"}, "
    "{\"name\": \"m1.non_blocking\", \"kind\": \"b\", \"value\": false}, "
    "{\"name\": \"m1.memory_format\", \"kind\": \"n\"}, "
    "{\"name\": \"m2.dim\", \"kind\": \"i\", \"value\": -1}, "
    "{\"name\": \"m2.half_to_float\", \"kind\": \"b\", \"value\": false}, " TO_COPY(3, 15) "], "
    "\"chain\": {\"version\": 1, \"n_head_inputs\": 2, \"n_ext\": 0, \"members\": ["
    "{\"op\": \"aten::add.Tensor\", \"inputs\": [[\"head\", 0], [\"head\", 1]]}, "
    "{\"op\": \"aten::_to_copy\", \"inputs\": [[\"member\", 0, 0]]}, "
    "{\"op\": \"aten::_softmax\", \"inputs\": [[\"member\", 1, 0]]}, "
    "{\"op\": \"aten::_to_copy\", \"inputs\": [[\"member\", 2, 0]]}]}";

static void smc_ref(int64_t R, int64_t C, double *const *in, double **out)
{
    for (int64_t e = 0; e < R * C; e++) {
        out[0][e] = store_as(KF_BF16, (float)(in[0][e] + in[1][e % C]));
        out[1][e] = out[0][e];
    }
    softmax_ref(R, C, KF_F32, out[1], out[2]);
    for (int64_t e = 0; e < R * C; e++) out[3][e] = store_as(KF_BF16, out[2][e]);
}

/* Gemma's RMSNorm in bf16: x.float() -> pow 2 -> mean -> add -> pow -0.5 -> mul, then the
 * weight's cast w.float() (one value per column, stored by row 0) -> mul by it -> cast back */
#define O1(dt, c) "{\"dtype\": \"" dt "\", \"sizes\": [" #c "], \"strides\": [1], \"alias\": -1}"
static const char gem_json[] =
    "\"inputs\": [" T2("bf16", 6, 40) ", " T1("bf16", 40) "], "
    "\"outputs\": [" O2("f32", 6, 40, -1) ", " O2("f32", 6, 40, -1) ", " O2("f32", 6, 1, -1) ", "
    O2("f32", 6, 1, -1) ", " O2("f32", 6, 1, -1) ", " O2("f32", 6, 40, -1) ", " O1("f32", 40) ", "
    O2("f32", 6, 40, -1) ", " O2("bf16", 6, 40, -1) "], "
    "\"scalars\": [" TO_COPY(0, 6) ", {\"name\": \"m1.exponent\", \"kind\": \"d\", \"value\": 2.0}, "
    "{\"name\": \"m2.dim\", \"kind\": \"l\", \"value\": [-1]}, "
    "{\"name\": \"m2.keepdim\", \"kind\": \"b\", \"value\": true}, "
    "{\"name\": \"m2.dtype\", \"kind\": \"n\"}, "
    "{\"name\": \"m3.other\", \"kind\": \"d\", \"value\": 1e-6, \"wrapped\": true}, "
    "{\"name\": \"m3.alpha\", \"kind\": \"i\", \"value\": 1}, "
    "{\"name\": \"m4.exponent\", \"kind\": \"d\", \"value\": -0.5}, " TO_COPY(6, 6) ", "
    TO_COPY(8, 15) "], "
    "\"chain\": {\"version\": 1, \"n_head_inputs\": 1, \"n_ext\": 1, \"members\": ["
    "{\"op\": \"aten::_to_copy\", \"inputs\": [[\"head\", 0]]}, "
    "{\"op\": \"aten::pow.Tensor_Scalar\", \"inputs\": [[\"member\", 0, 0]]}, "
    "{\"op\": \"aten::mean.dim\", \"inputs\": [[\"member\", 1, 0]]}, "
    "{\"op\": \"aten::add.Tensor\", \"inputs\": [[\"member\", 2, 0]]}, "
    "{\"op\": \"aten::pow.Tensor_Scalar\", \"inputs\": [[\"member\", 3, 0]]}, "
    "{\"op\": \"aten::mul.Tensor\", \"inputs\": [[\"member\", 0, 0], [\"member\", 4, 0]]}, "
    "{\"op\": \"aten::_to_copy\", \"inputs\": [[\"ext\", 0]]}, "
    "{\"op\": \"aten::mul.Tensor\", \"inputs\": [[\"member\", 5, 0], [\"member\", 6, 0]]}, "
    "{\"op\": \"aten::_to_copy\", \"inputs\": [[\"member\", 7, 0]]}]}";

static void gem_ref(int64_t R, int64_t C, double *const *in, double **out)
{
    for (int64_t c = 0; c < C; c++) out[6][c] = in[1][c]; /* bf16 -> f32: exact */
    for (int64_t r = 0; r < R; r++) {
        double s = 0;
        for (int64_t c = 0; c < C; c++) {
            double x = out[0][r * C + c] = in[0][r * C + c];
            out[1][r * C + c] = (float)(x * x);
            s += out[1][r * C + c];
        }
        out[2][r] = (float)(s / (double)C);
        out[3][r] = (float)(out[2][r] + (double)(float)1e-6);
        out[4][r] = (float)(1 / sqrt(out[3][r]));
        for (int64_t c = 0; c < C; c++) {
            out[5][r * C + c] = (float)(out[0][r * C + c] * out[4][r]);
            out[7][r * C + c] = (float)(out[5][r * C + c] * out[6][c]);
            out[8][r * C + c] = store_as(KF_BF16, out[7][r * C + c]);
        }
    }
}

/* ConvNeXt's layer scale on channels_last bf16 [2, 16, 3, 4]: x * gamma[1, 16, 1, 1] -> + shortcut.
 * The kernel walks memory order (rows of the 16 channels), so buffers and the reference are in
 * that order: element e's channel is e % 16. */
#define CL(dt) "{\"dtype\": \"" dt "\", \"sizes\": [2, 16, 3, 4], \"strides\": [192, 1, 64, 16]"
static const char cl_json[] =
    "\"inputs\": [" CL("bf16") ", \"align\": 16}, {\"dtype\": \"bf16\", \"sizes\": [1, 16, 1, 1], "
    "\"strides\": [16, 1, 1, 1], \"align\": 16}, " CL("bf16") ", \"align\": 16}], "
    "\"outputs\": [" CL("bf16") ", \"alias\": -1}, " CL("bf16") ", \"alias\": -1}], "
    "\"scalars\": [{\"name\": \"m1.alpha\", \"kind\": \"i\", \"value\": 1}], "
    "\"chain\": {\"version\": 1, \"n_head_inputs\": 2, \"n_ext\": 1, \"members\": ["
    "{\"op\": \"aten::mul.Tensor\", \"inputs\": [[\"head\", 0], [\"head\", 1]]}, "
    "{\"op\": \"aten::add.Tensor\", \"inputs\": [[\"member\", 0, 0], [\"ext\", 0]]}]}";

/* the in-place head on channels_last f32: x.add_(y) -> relu (the head's output is x) */
static const char clinpl_json[] =
    "\"inputs\": [" CL("f32") ", \"align\": 16}, " CL("f32") ", \"align\": 16}], "
    "\"outputs\": [" CL("f32") ", \"alias\": 0}, " CL("f32") ", \"alias\": -1}], "
    "\"scalars\": [{\"name\": \"m0.alpha\", \"kind\": \"i\", \"value\": 1}], "
    "\"chain\": {\"version\": 1, \"n_head_inputs\": 2, \"n_ext\": 0, \"members\": ["
    "{\"op\": \"aten::add_.Tensor\", \"inputs\": [[\"head\", 0], [\"head\", 1]]}, "
    "{\"op\": \"aten::relu\", \"inputs\": [[\"member\", 0, 0]]}]}";

static void cl_ref(int64_t R, int64_t C, double *const *in, double **out)
{
    for (int64_t e = 0; e < R * C; e++) {
        out[0][e] = store_as(KF_BF16, (float)(in[0][e] * in[1][e % C]));
        out[1][e] = store_as(KF_BF16, (float)(out[0][e] + in[2][e]));
    }
}

/* eval batch norm heading its chain, then its activation: ResNet's bn -> relu, on [2, 8, 3, 5]
 * f32 (NCHW; the running stats and affine [8] by channel) and on CL's channels_last bf16 */
#define BN4 "{\"dtype\": \"f32\", \"sizes\": [2, 8, 3, 5], \"strides\": [120, 15, 5, 1]"
#define EMPTY "{\"dtype\": \"f32\", \"sizes\": [0], \"strides\": [1], \"alias\": -1}"
#define BN_SCALARS                                                                                 \
    "\"scalars\": [{\"name\": \"m0.training\", \"kind\": \"b\", \"value\": false}, "                    \
    "{\"name\": \"m0.momentum\", \"kind\": \"d\", \"value\": 0.1}, "                                     \
    "{\"name\": \"m0.eps\", \"kind\": \"d\", \"value\": 1e-5}], "
#define BN_MEMBERS(act)                                                                            \
    "\"chain\": {\"version\": 1, \"n_head_inputs\": 5, \"n_ext\": 0, \"members\": ["                     \
    "{\"op\": \"aten::native_batch_norm\", \"inputs\": [[\"head\", 0], [\"head\", 1], [\"head\", 2], "  \
    "[\"head\", 3], [\"head\", 4]]}, {\"op\": \"aten::" act "\", \"inputs\": [[\"member\", 0, 0]]}]}"
static const char bn_json[] =
    LAYOUT(M(0) ", " M(0) ", " M(0) ", " M(1))
    "\"inputs\": [" BN4 ", \"align\": 16}, " T1("f32", 8) ", " T1("f32", 8) ", " T1("f32", 8) ", "
    T1("f32", 8) "], "
    "\"outputs\": [" BN4 ", \"alias\": -1}, " EMPTY ", " EMPTY ", " BN4 ", \"alias\": -1}], "
    BN_SCALARS BN_MEMBERS("relu");
static const char bncl_json[] =
    LAYOUT(M(0) ", " M(0) ", " M(0) ", " M(1))
    "\"inputs\": [" CL("bf16") ", \"align\": 16}, " T1("bf16", 16) ", " T1("bf16", 16) ", "
    T1("f32", 16) ", " T1("f32", 16) "], "
    "\"outputs\": [" CL("bf16") ", \"alias\": -1}, " EMPTY ", " EMPTY ", " CL("bf16") ", \"alias\": -1}], "
    BN_SCALARS BN_MEMBERS("relu");

/* element e of an [N, ch, ...] tensor stored with `strides` (the case's layout): its channel */
static void bn_ref_(int64_t n, int64_t ch, int64_t cstride, int dt, double *const *in, double **out)
{
    for (int64_t e = 0; e < n; e++) {
        const int64_t c = (e / cstride) % ch;
        const float rs = 1.0f / sqrtf((float)in[4][c] + 1e-5f), a = rs * (float)in[1][c];
        const float v = fmaf((float)in[0][e], a, fmaf(-(float)in[3][c], a, (float)in[2][c])); /* the CPU's */
        out[0][e] = store_as(dt, v);
        out[3][e] = out[0][e] < 0 ? 0 : out[0][e];
    }
}
/* deferred mode's in-place activation: bn -> relu_ writes the norm's output again (one buffer,
 * which ends holding relu's values) */
static const char bnip_json[] =
    LAYOUT(M(0) ", " M(0) ", " M(0) ", " M(1))
    "\"inputs\": [" CL("bf16") ", \"align\": 16}, " T1("bf16", 16) ", " T1("bf16", 16) ", "
    T1("f32", 16) ", " T1("f32", 16) "], "
    "\"outputs\": [" CL("bf16") ", \"alias\": -1}, " EMPTY ", " EMPTY ", " CL("bf16")
    ", \"alias\": -1, \"alias_output\": 0}], "
    BN_SCALARS BN_MEMBERS("relu_");
static void bnip_ref(int64_t R, int64_t C, double *const *in, double **out)
{
    bn_ref_(R * C, 16, 1, KF_BF16, in, out);
    memcpy(out[0], out[3], (size_t)(R * C) * sizeof(double));
}
/* the same as CUDA's eval returns it: save_mean and save_invstd [C] f32 (the running mean and
 * the invstd), written too */
#define STAT16 "{\"dtype\": \"f32\", \"sizes\": [16], \"strides\": [1], \"alias\": -1}"
static const char bnst_json[] =
    LAYOUT(M(0) ", " M(0) ", " M(0) ", " M(1))
    "\"inputs\": [" CL("bf16") ", \"align\": 16}, " T1("bf16", 16) ", " T1("bf16", 16) ", "
    T1("f32", 16) ", " T1("f32", 16) "], "
    "\"outputs\": [" CL("bf16") ", \"alias\": -1}, " STAT16 ", " STAT16 ", " CL("bf16")
    ", \"alias\": -1, \"alias_output\": 0}], "
    BN_SCALARS BN_MEMBERS("relu_");
static void bnst_ref(int64_t R, int64_t C, double *const *in, double **out)
{
    bnip_ref(R, C, in, out);
    for (int c = 0; c < 16; c++) out[1][c] = (float)in[3][c], out[2][c] = 1.0f / sqrtf((float)in[4][c] + 1e-5f);
}
/* torchvision's block end in deferred mode: bn -> add_(residual) -> relu_, both in place on the
 * norm's output (one buffer, which ends holding relu's values), CUDA's [C] f32 stats written */
static const char bnblk_json[] =
    LAYOUT(M(0) ", " M(0) ", " M(0) ", " M(1) ", " M(2))
    "\"inputs\": [" CL("bf16") ", \"align\": 16}, " T1("bf16", 16) ", " T1("bf16", 16) ", "
    T1("f32", 16) ", " T1("f32", 16) ", " CL("bf16") ", \"align\": 16}], "
    "\"outputs\": [" CL("bf16") ", \"alias\": -1}, " STAT16 ", " STAT16 ", " CL("bf16")
    ", \"alias\": -1, \"alias_output\": 0}, " CL("bf16") ", \"alias\": -1, \"alias_output\": 0}], "
    "\"scalars\": [{\"name\": \"m0.training\", \"kind\": \"b\", \"value\": false}, "
    "{\"name\": \"m0.momentum\", \"kind\": \"d\", \"value\": 0.1}, "
    "{\"name\": \"m0.eps\", \"kind\": \"d\", \"value\": 1e-5}, "
    "{\"name\": \"m1.alpha\", \"kind\": \"i\", \"value\": 1}], "
    "\"chain\": {\"version\": 1, \"n_head_inputs\": 5, \"n_ext\": 1, \"members\": ["
    "{\"op\": \"aten::native_batch_norm\", \"inputs\": [[\"head\", 0], [\"head\", 1], [\"head\", 2], "
    "[\"head\", 3], [\"head\", 4]]}, "
    "{\"op\": \"aten::add_.Tensor\", \"inputs\": [[\"member\", 0, 0], [\"ext\", 0]]}, "
    "{\"op\": \"aten::relu_\", \"inputs\": [[\"member\", 1, 0]]}]}";
static void bnblk_ref(int64_t R, int64_t C, double *const *in, double **out)
{
    bnst_ref(R, C, in, out); /* the [C] stats */
    bn_ref_(R * C, 16, 1, KF_BF16, in, out); /* out[0]: the norm's value */
    for (int64_t e = 0; e < R * C; e++) {
        out[3][e] = store_as(KF_BF16, (float)(out[0][e] + in[5][e]));
        out[4][e] = out[3][e] < 0 ? 0 : out[3][e];
        out[0][e] = out[3][e] = out[4][e];
    }
}
static void bn_ref(int64_t R, int64_t C, double *const *in, double **out)
{
    bn_ref_(R * C, 8, 15, KF_F32, in, out);
}
static void bncl_ref(int64_t R, int64_t C, double *const *in, double **out)
{
    bn_ref_(R * C, 16, 1, KF_BF16, in, out); /* channels_last: the channel is the fastest dim */
}

static const ccase cases[] = {
    {"gemma rmsnorm bf16 with its weight's cast", gem_json, gem_ref, 6, 40, KF_BF16, 8e-3, 1},
    {"add->cast->softmax->cast bf16", smc_json, smc_ref, 6, 40, KF_BF16, 8e-3, 1},
    {"add->softmax f32", sm_json, sm_ref, 6, 40, KF_F32, 1e-5, 1},
    {"mul->softmax bf16", smbf_json, smbf_ref, 8, 24, KF_BF16, 8e-3, 1},
    {"add->layer_norm f32", ln_json, ln_ref, 6, 40, KF_F32, 1e-5, 1},
    {"mul->layer_norm bf16 (no bias)", lnbf_json, lnbf_ref, 8, 24, KF_BF16, 8e-3, 1},
    {"transposed add->layer_norm f32", tln_json, tln_ref, 48, 40, KF_F32, 1e-5, 0},
    {"transposed add->layer_norm bf16", tlnbf_json, tlnbf_ref, 48, 40, KF_BF16, 8e-3, 0},
    {"add of a transposed input->layer_norm bf16", tlnd_json, tlnd_ref, 48, 40, KF_BF16, 8e-3, 0},
    {"add->group_norm f32", gn_json, gn_ref, 16, 5, KF_F32, 1e-5, 0},
    {"add->group_norm->silu f32", gns_json, gns_ref, 16, 5, KF_F32, 1e-5, 0},
    {"group_norm->silu f32 (the norm heads)", gnh_json, gnh_ref, 16, 5, KF_F32, 1e-5, 0},
    {"layer_norm->gelu->mul bf16 (the norm heads)", lnh_json, lnh_ref, 8, 24, KF_BF16, 8e-3, 0},
    {"rmsnorm f32", rms_json, rms_ref, 6, 40, KF_F32, 1e-5, 1},
    {"rmsnorm bf16 with its casts", rmsc_json, rmsc_ref, 6, 40, KF_BF16, 8e-3, 1},
    {"add->gelu->mul f32", pw_json, pw_ref, 32, 16, KF_F32, 1e-6, 1},
    {"mul->sigmoid->add bf16", bf_json, bf_ref, 8, 40, KF_BF16, 8e-3, 1},
    {"rotary: mul, neg, cat, mul, add f32", rot_json, rot_ref, 12, 16, KF_F32, 1e-6, 0},
    {"add_->relu in place", inpl_json, inpl_ref, 5, 12, KF_F32, 0, 1},
    {"amax->sub->exp", amax_json, amax_ref, 7, 33, KF_F32, 1e-6, 0},
    {"linalg_vector_norm->clamp_min->div f32", norm2_json, norm2_ref, 7, 33, KF_F32, 1e-5, 0},
    {"linalg_vector_norm (ord 2 as an int)->clamp_min->div bf16", norm2bf_json, norm2bf_ref, 7, 33, KF_BF16, 8e-3, 0},
    {"linalg_vector_norm->clamp_min f32 (F.normalize's)", norm2c_json, norm2c_ref, 7, 33, KF_F32, 1e-5, 0},
    {"channels_last mul->add bf16", cl_json, cl_ref, 24, 16, KF_BF16, 8e-3, 1},
    {"channels_last add_->relu in place", clinpl_json, inpl_ref, 24, 16, KF_F32, 0, 1},
    {"batch_norm (eval)->relu f32", bn_json, bn_ref, 48, 5, KF_F32, 1e-6, 0},
    {"channels_last batch_norm (eval)->relu bf16", bncl_json, bncl_ref, 24, 16, KF_BF16, 8e-3, 1},
    {"channels_last batch_norm (eval)->relu_ in place bf16", bnip_json, bnip_ref, 24, 16, KF_BF16, 8e-3, 1},
    {"batch_norm (eval, [C] stats)->relu_ in place bf16", bnst_json, bnst_ref, 24, 16, KF_BF16, 8e-3, 1},
    {"batch_norm (eval)->add_->relu_ in place bf16 (block end)", bnblk_json, bnblk_ref, 24, 16, KF_BF16, 8e-3, 1},
};

/* ---- refusals ---- */

static void expect_load_error(const char *fields, int n_in, int n_out, const char *want)
{
    char *text = job_text(fields, n_in, n_out), err[512] = "";
    kf_job *job = load(text, err, sizeof err);
    free(text);
    if (!CHECK(job == NULL)) kf_job_free(job);
    else if (!CHECK(strstr(err, want) != NULL)) printf("     want \"%s\" in: %s\n", want, err);
}

static char *swap(const char *s, const char *from, const char *to)
{
    const char *p = strstr(s, from);
    CHECK(p != NULL);
    size_t n = strlen(s) - strlen(from) + strlen(to) + 1;
    char *o = malloc(n);
    snprintf(o, n, "%.*s%s%s", (int)(p - s), s, to, p + strlen(from));
    return o;
}

static void expect_unbound(const char *fields, int n_in, int n_out, const char *want)
{
    char *text = job_text(fields, n_in, n_out), err[512] = "";
    kf_job *job = load(text, err, sizeof err);
    free(text);
    if (!CHECK(job != NULL)) {
        printf("     %s\n", err);
        return;
    }
    kf_chain_bind cb;
    err[0] = 0;
    CHECK(!kf_chain_bind_sig(&job->sig, &cb, err, sizeof err));
    CHECK(!host_t->applies(&job->sig) && !cuda_t->applies(&job->sig));
    if (!CHECK(strstr(err, want) != NULL)) printf("     want \"%s\" in: %s\n", want, err);
    for (int i = 0; kf_builtin_templates[i]; i++) /* no one-op template takes a chain either */
        CHECK(!kf_builtin_templates[i]->applies(&job->sig));
    kf_job_free(job);
}

static void test_refusals(void)
{
    /* a strided sum before a softmax: only the members before a layer norm store strided */
    expect_unbound("\"inputs\": [" TX3("f32", "\"align\": 16") ", " X3("f32", "\"align\": 16") "], "
                   "\"outputs\": [" TX3("f32", "\"alias\": -1") ", " X3("f32", "\"alias\": -1") "], "
                   "\"scalars\": [{\"name\": \"m0.alpha\", \"kind\": \"i\", \"value\": 1}, "
                   "{\"name\": \"m1.dim\", \"kind\": \"i\", \"value\": -1}, "
                   "{\"name\": \"m1.half_to_float\", \"kind\": \"b\", \"value\": false}], "
                   "\"chain\": {\"version\": 1, \"n_head_inputs\": 2, \"n_ext\": 0, \"members\": ["
                   "{\"op\": \"aten::add.Tensor\", \"inputs\": [[\"head\", 0], [\"head\", 1]]}, "
                   "{\"op\": \"aten::_softmax\", \"inputs\": [[\"member\", 0, 0]]}]}",
                   2, 2, "member 0 (aten::add.Tensor): its output is not contiguous (only a chain "
                   "without a reduction, or the members before a layer norm, store strided outputs)");
    char *s;
    s = swap(rms_json, "[[\"member\", 2, 0]]", "[[\"member\", 4, 0]]");
    expect_load_error(s, 2, 6, "member 3 (aten::rsqrt): inputs[0]: [\"member\", m, o] must name an earlier");
    free(s);
    s = swap(rms_json, "[[\"member\", 4, 0], [\"ext\", 0]]", "[[\"member\", 4, 0], [\"member\", 0, 0]]");
    expect_load_error(s, 2, 6, "external 0 is read by no member");
    free(s);
    s = swap(rms_json, "[[\"head\", 0]]}, {\"op\": \"aten::mean", "[[\"head\", 1]]}, {\"op\": \"aten::mean");
    expect_load_error(s, 2, 6, "member 0 (aten::pow.Tensor_Scalar): inputs[0]: head input out of range");
    free(s);
    s = swap(inpl_json, "[[\"member\", 0, 0]]", "[[\"head\", 0]]");
    expect_load_error(s, 2, 2, "member 1 (aten::relu): inputs[0] reads the head's input 0, which the head writes in place");
    free(s);
    s = swap(pw_json, "\"alias\": -1}], \"scalars\"", "\"alias\": 0}], \"scalars\"");
    expect_load_error(s, 3, 3, "member 2 (aten::mul.Tensor) writes an input in place: only the head may");
    free(s);
    s = swap(rms_json, ", {\"op\": \"aten::rsqrt\", \"inputs\": [[\"member\", 2, 0]]}, "
                       "{\"op\": \"aten::mul.Tensor\", \"inputs\": [[\"head\", 0], [\"member\", 3, 0]]}, "
                       "{\"op\": \"aten::mul.Tensor\", \"inputs\": [[\"member\", 4, 0], [\"ext\", 0]]}]}", "]}");
    expect_load_error(s, 2, 6, "3 members, but the job has 6 outputs");
    free(s);
    s = swap(amax_json, ", {\"op\": \"aten::exp\", \"inputs\": [[\"member\", 1, 0]]}]}", "]}");
    expect_unbound(s, 1, 3, "member 1 (aten::sub.Tensor): 2 outputs (only a layer or group norm may have more than one");
    free(s);
    s = swap(ln_json, "\"value\": [40]", "\"value\": [6, 40]");
    expect_unbound(s, 4, 4, "member 1 (aten::native_layer_norm): only the last dim is normalized");
    free(s);
    s = swap(gnh_json, "\"aten::silu\"", "\"aten::_softmax\"");
    char *s2 = swap(s, "\"value\": 1e-5}], ", "\"value\": 1e-5}, {\"name\": \"m1.dim\", \"kind\": \"i\", "
                    "\"value\": -1}, {\"name\": \"m1.half_to_float\", \"kind\": \"b\", \"value\": false}], ");
    expect_unbound(s2, 3, 4, "member 1 (aten::_softmax): a softmax after a row tail (member 0)");
    free(s2);
    free(s);
    s = swap(gn_json, "\"m1.group\", \"kind\": \"i\", \"value\": 4", "\"m1.group\", \"kind\": \"i\", \"value\": 3");
    expect_unbound(s, 4, 4, "member 1 (aten::native_group_norm): N, C and HxW must be the input's, group divide C");
    free(s);
    s = swap(rms_json, "\"m2.alpha\"", "\"alpha\"");
    expect_load_error(s, 2, 6, "\"alpha\" is not named m<member>.<name>");
    free(s);
    { /* the job's sig_hex must be the spec's canonical bytes */
        char *t = job_text(pw_json, 3, 3), *h = strstr(t, "4b46434841494e31"), err[512] = "";
        h[16] ^= 1; /* "KFCHAIN1", then the member count: another chain's key */
        kf_job *job = load(t, err, sizeof err);
        if (!CHECK(job == NULL)) kf_job_free(job);
        CHECK(strstr(err, "\"sig_hex\" is not the chain's canonical bytes") != NULL);
        free(t);
    }
    /* loads, but the templates cannot fuse it */
    /* after the softmax, a member reading a value from before it */
    s = swap(smc_json, "[[\"member\", 2, 0]]}]}", "[[\"member\", 0, 0]]}]}");
    expect_unbound(s, 2, 4, "member 3 (aten::_to_copy): after the softmax it may read only the "
                            "softmax's output");
    free(s);
    s = swap(sm_json, "\"value\": -1}", "\"value\": 0}");
    expect_unbound(s, 2, 2, "member 1 (aten::_softmax): only a softmax of the last dim");
    free(s);
    s = swap(sm_json, "\"value\": false}", "\"value\": true}");
    expect_unbound(s, 2, 2, "member 1 (aten::_softmax): only a softmax of the last dim");
    free(s);
    s = swap(rms_json, "\"value\": [-1]", "\"value\": [0]");
    expect_unbound(s, 2, 6, "member 1 (aten::mean.dim): only a reduction of the last dim");
    free(s);
    s = swap(norm2_json, "\"value\": 2.0}", "\"value\": 1.0}");
    expect_unbound(s, 1, 3, "member 0 (aten::linalg_vector_norm): only ord=2 is fused");
    free(s);
}

/* cuda_chain's packs need every row-wise input aligned to a whole pack and rows of whole packs */
static void test_pack_refusals(void)
{
    const char *variants[2][2] = {
        {T2("bf16", 8, 40), "{\"dtype\": \"bf16\", \"sizes\": [8, 40], \"strides\": [40, 1], \"align\": 4}"},
        {T2("bf16", 8, 40), "{\"dtype\": \"bf16\", \"sizes\": [8, 40], \"strides\": [44, 1], \"align\": 16}"},
    };
    for (int v = 0; v < 2; v++) {
        char *fields = swap(bf_json, variants[v][0], variants[v][1]), err[512] = "";
        char *text = job_text(fields, 2, 3), *src = NULL, *lj = NULL;
        kf_job *job = load(text, err, sizeof err);
        int idx[8] = {0};
        if (CHECK(job != NULL) &&
            CHECK_EQ_INT(cuda_t->render(&job->sig, idx, &src, &lj, err, sizeof err), KF_OK))
            CHECK(!strstr(src, "KF_VW") && strstr(src, "vec=1: one element per access"));
        else
            printf("     pack refusal %d: %s\n", v, err);
        kf_job_free(job);
        free(fields), free(text), free(src), free(lj);
    }
}

/* the tile walk stores y in packs only where the norm's weight and bias are aligned to them: a
 * weight 2 bytes aligned takes the element-by-element y */
static void test_tile_y_scalar(void)
{
    char *text = job_text(tlnbfw_json, 4, 4), err[512] = "", *src = NULL, *lj = NULL;
    kf_job *job = load(text, err, sizeof err);
    int idx[8] = {0, 0, 0, 1, 0}; /* the start: the tile walk, 16 rows, unstaged */
    if (CHECK(job != NULL) && CHECK_EQ_INT(cuda_t->render(&job->sig, idx, &src, &lj, err, sizeof err), KF_OK)) {
        CHECK(strstr(src, "(*const kf_xs)[KF_C + KF_XPAD]") && !strstr(src, "kf_pack_st(y1") &&
              strstr(src, "y1[r * KF_C + c] = "));
        cuda_compile("tile walk, weight 2 bytes aligned", src, lj);
    } else {
        printf("     tile walk, weight 2 bytes aligned: %s\n", err);
    }
    kf_job_free(job);
    free(text), free(src), free(lj);
}

/* warp = 1 on rows of fewer than 32 packs: a group of lanes per row, the fewest that take one pack
 * each (x * 0.5 -> layer norm of 24 bf16: 3 packs of 8, 4 lanes; x + h -> layer norm of 40 f32:
 * 10 packs of 4, 16 lanes), combined within the group; without packs the whole warp */
static void test_warp_lanes(void)
{
    static const struct { const char *json; int n_in, n_out, vec, lanes; } v[] = {
        {lnbf_json, 2, 4, 0, 4}, {ln_json, 4, 4, 0, 16}, {lnbf_json, 2, 4, 1, 32}};
    for (int i = 0; i < 3; i++) {
        char *text = job_text(v[i].json, v[i].n_in, v[i].n_out), err[512] = "", *src = NULL, *lj = NULL;
        kf_job *job = load(text, err, sizeof err);
        int idx[8] = {0, 0, 0, v[i].vec, 0}; /* rows, warp */
        char want[48];
        snprintf(want, sizeof want, "#define KF_LANES %d\n", v[i].lanes);
        if (CHECK(job != NULL) && CHECK_EQ_INT(cuda_t->render(&job->sig, idx, &src, &lj, err, sizeof err), KF_OK)) {
            if (!CHECK(strstr(src, want) && strstr(src, "__shfl_xor_sync(KF_GMASK, v, o)") &&
                       strstr(src, "threadIdx.x / KF_LANES; r < KF_R;")))
                printf("     warp lanes, case %d: %s expected\n", i, want);
            cuda_compile("warp lanes", src, lj);
        } else {
            printf("     warp lanes, case %d: %s\n", i, err);
        }
        kf_job_free(job);
        free(text), free(src), free(lj);
    }
}

/* a chain of pointwise members walks memory order: channels_last [2, 16, 3, 4] as rows of its 16
 * channels (not rows of W = 4, 16 elements apart); an output dense in logical order is then
 * stored through its strides */
static void test_memory_order(void)
{
    char *text = job_text(cl_json, 3, 2), err[512] = "", *src = NULL, *lj = NULL;
    kf_job *job = load(text, err, sizeof err);
    kf_chain_bind cb;
    int idx[8] = {0};
    if (!CHECK(job != NULL) || !CHECK(kf_chain_bind_sig(&job->sig, &cb, err, sizeof err))) {
        printf("     memory order: %s\n", err);
        goto out;
    }
    CHECK_EQ_INT(cb.C, 16);
    CHECK_EQ_INT(cb.R, 24);
    CHECK(!cb.ostrided[0] && !cb.ostrided[1]);
    if (CHECK_EQ_INT(cuda_t->render(&job->sig, idx, &src, &lj, err, sizeof err), KF_OK))
        CHECK(strstr(src, "#define KF_C 16LL") && strstr(src, "KF_VW"));
    kf_job_free(job);
    free(text);
    char *fields = swap(cl_json, "-1}, " CL("bf16") ", \"alias\": -1}]",
                        "-1}, {\"dtype\": \"bf16\", \"sizes\": [2, 16, 3, 4], \"strides\": [192, 12, 4, 1], "
                        "\"alias\": -1}]");
    text = job_text(fields, 3, 2);
    free(fields);
    job = load(text, err, sizeof err);
    if (CHECK(job != NULL) && CHECK(kf_chain_bind_sig(&job->sig, &cb, err, sizeof err))) {
        CHECK(!cb.ostrided[0] && cb.ostrided[1]);
        CHECK_EQ_INT(cb.ost[1][3], 12); /* the channel dim, innermost now */
    }
out:
    kf_job_free(job);
    free(text), free(src), free(lj);
}

/* a group norm's few groups start from a cluster per group (8 blocks under 66 groups, 4 under
 * 264: rows 0, warp 1 / 0), its kernel declared with the cluster's size and its grid whole
 * clusters; many groups from a block each (the first knob values) */
static void test_group_start(void)
{
    static const struct { int n, rows, warp, cl; } v[] = {{2, 1, 0, 8}, {40, 1, 1, 4}, {80, 0, 0, 1}};
    for (int i = 0; i < 3; i++) { /* gn_json at batch n: n x 4 groups */
        char batch[16], nv[48], *f = strdup(gn_json), *g, err[512] = "", *src = NULL, *lj = NULL;
        snprintf(batch, sizeof batch, "[%d, ", v[i].n);
        while (v[i].n != 2 && strstr(f, "[2, ")) g = swap(f, "[2, ", batch), free(f), f = g;
        snprintf(nv, sizeof nv, "\"m1.N\", \"kind\": \"i\", \"value\": %d}", v[i].n);
        g = swap(f, "\"m1.N\", \"kind\": \"i\", \"value\": 2}", nv), free(f), f = g;
        char *text = job_text(f, 4, 4);
        kf_job *job = load(text, err, sizeof err);
        int idx[8] = {0};
        if (!CHECK(job != NULL)) {
            printf("     group start %d: %s\n", v[i].n, err);
        } else {
            cuda_t->start(&job->sig, idx);
            CHECK_EQ_INT(idx[2], v[i].rows);
            CHECK_EQ_INT(idx[4], v[i].warp);
            char want[64];
            snprintf(want, sizeof want, "#define KF_CL %d ", v[i].cl);
            if (CHECK_EQ_INT(cuda_t->render(&job->sig, idx, &src, &lj, err, sizeof err), KF_OK)) {
                CHECK(strstr(src, want) != NULL);
                CHECK_EQ_INT(strstr(src, "__cluster_dims__(KF_CL, 1, 1)") != NULL, v[i].cl > 1);
                char grid[48];
                snprintf(grid, sizeof grid, "\"grid\":[%d,1,1]", v[i].n * 4 * v[i].cl);
                if (!CHECK(strstr(lj, grid) != NULL)) printf("     want %s in %s\n", grid, lj);
            }
        }
        kf_job_free(job);
        free(f), free(text), free(src), free(lj);
    }
}

/* NF-ResNet's block end on channels_last f16 [64, 256, 56, 56]: add -> relu -> mul by a number,
 * each member's output stored. Rendered with packs (rows 1 and 0), its PTX (nvcc; SKIP without
 * it) stores each pack as one vector access: assigned as a struct, the unrolled row loop stored
 * them in 2-byte pieces (96 st.global.u16), 0.43x eager on an H100. */
#define NF16 "{\"dtype\": \"f16\", \"sizes\": [64, 256, 56, 56], \"strides\": [802816, 1, 14336, 256]"
static const char nf_json[] =
    "\"inputs\": [" NF16 ", \"align\": 16}, " NF16 ", \"align\": 16}], "
    "\"outputs\": [" NF16 ", \"alias\": -1}, " NF16 ", \"alias\": -1}, " NF16 ", \"alias\": -1}], "
    "\"scalars\": [{\"name\": \"m0.alpha\", \"kind\": \"i\", \"value\": 1}, "
    "{\"name\": \"m2.other\", \"kind\": \"d\", \"value\": 0.98058, \"wrapped\": true}], "
    "\"chain\": {\"version\": 1, \"n_head_inputs\": 2, \"n_ext\": 0, \"members\": ["
    "{\"op\": \"aten::add.Tensor\", \"inputs\": [[\"head\", 0], [\"head\", 1]]}, "
    "{\"op\": \"aten::relu\", \"inputs\": [[\"member\", 0, 0]]}, "
    "{\"op\": \"aten::mul.Tensor\", \"inputs\": [[\"member\", 1, 0]]}]}";

static void test_pack_stores(void)
{
    char *text = job_text(nf_json, 2, 3), err[512] = "";
    kf_job *job = load(text, err, sizeof err);
    if (!CHECK(job != NULL)) printf("     nf: %s\n", err);
    for (int rows = 0; job && rows < 2; rows++) {
        int idx[8] = {0, 0, rows, 0, 0}; /* threads 256, grid 0, rows 1 / 0, vec 1 */
        char *src = NULL, *lj = NULL, *ptx = NULL;
        if (CHECK_EQ_INT(cuda_t->render(&job->sig, idx, &src, &lj, err, sizeof err), KF_OK) &&
            CHECK(strstr(src, "#define KF_VW 8") && strstr(src, "kf_pack_st(y2 + ")) &&
            (ptx = nvcc_ptx_text("nf", src))) {
            const int vec = count_of(ptx, "st.global.wb.v4.u32"), sc = count_of(ptx, "st.global.u16");
            if (!CHECK(vec >= 3 && sc == 0)) printf("     nf rows=%d: %d vector, %d 2-byte stores\n", rows, vec, sc);
        }
        free(ptx), free(src), free(lj);
    }
    kf_job_free(job);
    free(text);
}

int main(void)
{
    for (int i = 0; kf_builtin_templates[i]; i++) {
        if (!strcmp(kf_builtin_templates[i]->name, "host_chain")) host_t = kf_builtin_templates[i];
        if (!strcmp(kf_builtin_templates[i]->name, "cuda_chain")) cuda_t = kf_builtin_templates[i];
    }
    if (!CHECK(host_t && cuda_t) || !CHECK(mkdtemp(tmpdir) != NULL) ||
        !CHECK_EQ_INT(kf_compiler_host_create(&cc, NULL), KF_OK))
        return check_done("templates_chain");
    CHECK(!host_t->applies(NULL) && !cuda_t->applies(NULL));
    const char *inc = nvrtc_find_include();
    char err[512], path[4096], tu[] = "/tmp/kf_chain_cudaXXXXXX";
    if (inc) {
        kf_status st = kf_compiler_nvrtc_create(&nv, NULL, inc, err, sizeof err);
        if (st != KF_OK && nvrtc_find_wheel(path, sizeof path))
            st = kf_compiler_nvrtc_create(&nv, path, inc, err, sizeof err);
        have_nv = st == KF_OK;
    }
    if (!have_nv) nvcc_tu = nvcc_ptx_open(tu);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) run_case(&cases[i]);
    test_refusals();
    test_pack_refusals();
    test_tile_y_scalar();
    test_warp_lanes();
    test_memory_order();
    test_pack_stores();
    test_group_start();
    if (nvcc_tu) nvcc_ptx_compile(nvcc_tu, tu, nvcc_n);
    if (have_nv) nv.destroy(nv.self);
    cc.destroy(cc.self);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) printf("could not remove %s\n", tmpdir);
    return check_done("templates_chain");
}
