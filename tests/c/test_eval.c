/* Job loading (forge/job/job.h), verification and timing of candidates (forge/eval/eval.h) on the host
 * backend, value comparison per dtype, the static source check, and, when a GPU and NVRTC are
 * present, the CUDA path. Every job folder is written here, with reference outputs computed
 * here. */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/c/check.h"
#include "forge/eval/eval_impl.h"
#include "forge/templates/template.h"
#include "tests/c/test_eval_util.h"

#define ROWS 4
#define COLS 1000
#define N (ROWS * COLS)

static char base[256];
static kf_compiler_i hcc;

/* compile + load + kf_eval_run; 0 when it got that far */
static int eval_src(kf_compiler_i *cc, const char *arch, kf_eval *ev, const char *src,
                    const char *launch, kf_eval_result *res, kf_status *st)
{
    kf_launch l;
    void *blob = NULL;
    size_t len = 0;
    memset(res, 0, sizeof *res);
    res->status = -1;
    if (compile_blob(cc, arch, src, launch, &l, &blob, &len)) return -1;
    kf_compiled *k = NULL;
    char err[512];
    if (!CHECK_EQ_INT(cc->load(cc->self, blob, len, &l, 0, &k, err, sizeof err), KF_OK)) {
        printf("     load: %s\n", err);
        free(blob);
        return -1;
    }
    *st = kf_eval_run(ev, cc, k, &l, res);
    cc->unload(cc->self, k);
    free(blob);
    return 0;
}

/* A host relu kernel over N elements with `extra` code inside the loop (after y[i] is set) and
 * `after` after it. */
static char *relu_src(const char *extra, const char *after, const char *bound)
{
    char *s = NULL;
    int n = asprintf(&s,
                     "#include <math.h>\n#define KF_N %d\n"
                     "void kf_kernel(const float *x, float *y)\n{\n"
                     "    for (int i = 0; i < %s; i++) {\n"
                     "        float v = x[i];\n"
                     "        y[i] = v > 0 ? v : (v != v ? v : 0.0f);\n"
                     "        %s\n"
                     "    }\n    %s\n}\n",
                     N, bound ? bound : "KF_N", extra ? extra : "", after ? after : "");
    return n > 0 ? s : NULL;
}

static kf_eval_result run_relu(kf_eval *ev, const char *extra, const char *after,
                               const char *bound)
{
    kf_eval_result res;
    kf_status st = KF_OK;
    char *src = relu_src(extra, after, bound);
    if (eval_src(&hcc, NULL, ev, src, HOST_UNARY_LAUNCH, &res, &st) == 0)
        CHECK_EQ_INT(st, KF_OK);
    free(src);
    return res;
}

static void show(const char *what, const kf_eval_result *r)
{
    printf("  %-14s %-13s case %d  %s\n", what, kf_node_status_name(r->status), r->failed_case,
           r->error);
}

/* ---- job.json ---- */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *s = calloc(1, 1 << 16);
    size_t n = fread(s, 1, (1 << 16) - 1, f);
    s[n] = 0;
    fclose(f);
    return s;
}

/* `text` with the first `from` replaced by `to` (malloc'ed). */
static char *replace(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    if (!CHECK(at != NULL)) {
        printf("     '%s' not in the job text\n", from);
        return strdup(text);
    }
    size_t n = strlen(text) - strlen(from) + strlen(to) + 1;
    char *s = malloc(n);
    snprintf(s, n, "%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
    return s;
}

static void expect_bad(const char *dir, const char *json, kf_status want, const char *msg)
{
    char path[4200], err[512];
    snprintf(path, sizeof path, "%s/job.json", dir);
    CHECK(write_bytes(path, json, strlen(json)) == 0);
    kf_job *job = (kf_job *)1;
    kf_status st = kf_job_load(dir, &job, err, sizeof err);
    CHECK_EQ_INT(st, want);
    CHECK(job == NULL);
    if (!CHECK_CONTAINS(err, msg)) printf("     for: %.300s\n", json);
}

static void test_job_load(void)
{
    char dir[4200], neg[4200], err[512];
    make_relu_job(base, "relu", "host", ROWS, COLS, 16, 0, dir, sizeof dir);
    kf_job *job = NULL;
    if (!CHECK_EQ_INT(kf_job_load(dir, &job, err, sizeof err), KF_OK)) {
        printf("     %s\n", err);
        return;
    }
    CHECK(job->dir[0] == '/');
    CHECK_STR(job->op, "aten::relu");
    CHECK_STR(job->sig.op, "aten::relu");
    CHECK_STR(job->backend, "host");
    CHECK_STR(job->sig_hex, "0a0b");
    CHECK_STR(job->outputs_layout, "[{\"alias_arg\":-1}]");
    CHECK_EQ_INT(job->sig.n_in, 1);
    CHECK_EQ_INT(job->sig.n_out, 1);
    CHECK_EQ_INT(job->sig.in[0].dtype, KF_F32);
    CHECK_EQ_INT(job->sig.in[0].ndim, 2);
    CHECK_EQ_INT(job->sig.in[0].sizes[1], COLS);
    CHECK_EQ_INT(job->sig.in[0].strides[0], COLS);
    CHECK_EQ_INT(job->sig.in[0].align, 16);
    CHECK_EQ_INT(job->sig.out_alias[0], 0);
    CHECK_EQ_INT(job->n_cases, 2);
    CHECK(job->cases[0].recorded && !job->cases[1].recorded);
    char want[4300];
    snprintf(want, sizeof want, "%s/cases/c1_out0.bin", job->dir);
    CHECK_STR(job->cases[1].out_path[0], want);
    CHECK(fabs(job->roofline_us - 32000.0 / (100 * 1e3)) < 1e-12);
    /* a host job's candidates and copy probe run from warm caches: only 2x faster is untrusted */
    CHECK(!strcmp(job->backend, "host") && kf_job_trust_floor_us(job) == 0.5 * job->roofline_us);
    CHECK(job->atol == 1e-5 && job->rtol == 1e-5);
    CHECK(job->call_floor_us == 0); /* absent: none */
    /* search defaults, except bench_reps */
    CHECK_EQ_INT(job->search.iterations, 50);
    CHECK_EQ_U64(job->search.seed, 1);
    CHECK(job->search.margin == 0.03 && job->search.candidate_timeout_s == 10);
    CHECK_EQ_INT(job->search.bench_reps, 5);
    CHECK_EQ_INT(job->search.flush_l2, 1);
    CHECK_STR(job->search.proposer, "builtin");
    CHECK_STR(job->search.cache_dir, "");
    kf_job_free(job);

    char jp[4300];
    snprintf(jp, sizeof jp, "%s/job.json", dir);
    char *good = slurp(jp);
    if (!CHECK(good != NULL)) return;
    job_dir_make(base, "neg", neg, sizeof neg);

    /* scalars of every kind, the in-place form, explicit search fields */
    char *s1 = replace(good, "\"scalars\":[]",
                       "\"scalars\":[{\"name\":\"dim\",\"kind\":\"i\",\"value\":-1},"
                       "{\"name\":\"eps\",\"kind\":\"d\",\"value\":1e-5},"
                       "{\"name\":\"half_to_float\",\"kind\":\"b\",\"value\":true},"
                       "{\"name\":\"approximate\",\"kind\":\"s\",\"value\":\"tanh\"},"
                       "{\"name\":\"weight\",\"kind\":\"n\"},"
                       "{\"name\":\"end\",\"kind\":\"i\",\"value\":9223372036854775807},"
                       "{\"name\":\"normalized_shape\",\"kind\":\"l\",\"value\":[1000,3]}]");
    char *s2 = replace(s1, "\"alias\":-1", "\"alias\":0");
    char *s3 = replace(s2, "\"search\":{\"bench_reps\":5}",
                       "\"search\":{\"iterations\":7,\"seed\":42,\"margin\":0.1,"
                       "\"time_budget_s\":30,\"candidate_timeout_s\":2.5,\"bench_reps\":9,"
                       "\"flush_l2\":false,\"proposer\":\"llm\",\"cache_dir\":\"/tmp/kfc\"}");
    char *s5 = replace(s3, "\"bandwidth_gbs\":100", "\"bandwidth_gbs\":0,\"call_floor_us\":1.25");
    char *s4 = replace(s5, "\"kind\":\"random\"", "\"kind\":\"example\"");
    CHECK(write_bytes(jp, s4, strlen(s4)) == 0);
    if (CHECK_EQ_INT(kf_job_load(dir, &job, err, sizeof err), KF_OK)) {
        CHECK_EQ_INT(job->sig.n_scalars, 7);
        const kf_job_scalar *sc = job->sig.scalars;
        CHECK(sc[0].kind == 'i' && sc[0].i == -1 && !strcmp(sc[0].name, "dim"));
        CHECK(sc[1].kind == 'd' && sc[1].d == 1e-5);
        CHECK(sc[2].kind == 'b' && sc[2].i == 1);
        CHECK(sc[3].kind == 's' && !strcmp(sc[3].s, "tanh"));
        CHECK(sc[4].kind == 'n');
        CHECK(sc[5].kind == 'i' && sc[5].i == INT64_MAX);
        CHECK(sc[6].kind == 'l' && sc[6].n == 2 && sc[6].v[0] == 1000 && sc[6].v[1] == 3);
        CHECK(kf_job_scalar_find(&job->sig, "approximate") == &sc[3]);
        CHECK_EQ_INT(job->sig.out_alias[0], 1); /* is in[0] */
        CHECK_EQ_INT(job->search.iterations, 7);
        CHECK_EQ_U64(job->search.seed, 42);
        CHECK(job->search.margin == 0.1 && job->search.time_budget_s == 30);
        CHECK(job->search.candidate_timeout_s == 2.5);
        CHECK_EQ_INT(job->search.bench_reps, 9);
        CHECK_EQ_INT(job->search.flush_l2, 0);
        CHECK_STR(job->search.proposer, "llm");
        CHECK_STR(job->search.cache_dir, "/tmp/kfc");
        CHECK(job->roofline_us == 0); /* bandwidth unknown */
        CHECK(job->call_floor_us == 1.25);
        CHECK(kf_job_trust_floor_us(job) == 0);
        CHECK(job->cases[1].recorded); /* an example is real data too */
        kf_job_free(job);
    } else {
        printf("     %s\n", err);
    }
    CHECK(write_bytes(jp, good, strlen(good)) == 0);
    free(s1), free(s2), free(s3), free(s4), free(s5);

    /* every kind of bad input names its field */
    static const struct {
        const char *from, *to, *msg;
    } bads[] = {
        {"\"format\":1", "\"format\":2", "\"format\" must be 1"},
        {"\"op\":\"aten::relu\",", "", "\"op\" is missing"},
        {"\"op\":\"aten::relu\"", "\"op\":7", "\"op\" must be a string"},
        {"\"sig_hex\":\"0a0b\"", "\"sig_hex\":\"0xz\"", "sig_hex"},
        {"\"outputs_layout\":[{\"alias_arg\":-1}],", "", "\"outputs_layout\" is missing"},
        {"[{\"alias_arg\":-1}]", "{\"alias_arg\":-1}", "\"outputs_layout\" must be an array"},
        {"\"backend\":\"host\"", "\"backend\":\"metal\"", "\"backend\" must be"},
        {"\"device_index\":0", "\"device_index\":-1", "device_index"},
        {"\"dtype\":\"f32\"", "\"dtype\":\"f33\"", "inputs[0].dtype \"f33\" is not a dtype"},
        {"\"dtype\":\"f32\"", "\"dtype\":\"?\"", "inputs[0].dtype"},
        {"\"sizes\":[4,1000]", "\"sizes\":[-4,1000]", "inputs[0].sizes[0] must be a non-neg"},
        {"\"sizes\":[4,1000]", "\"sizes\":[4.5,1000]", "inputs[0].sizes[0]"},
        {"\"strides\":[1000,1]", "\"strides\":[1000,-1]", "inputs[0].strides[1]"},
        {"\"strides\":[1000,1]", "\"strides\":[1]", "inputs[0].strides has 1 entries"},
        {"\"sizes\":[4,1000],\"strides\":[1000,1]",
         "\"sizes\":[1,1,1,1,1,1,1,1,1],\"strides\":[1,1,1,1,1,1,1,1,1]",
         "inputs[0].sizes has 9 dims, at most 8"},
        {"\"sizes\":[4,1000],\"strides\":[1000,1]",
         "\"sizes\":[4294967296,4294967296,4],\"strides\":[4294967296,4294967296,1]",
         "inputs[0]: the strided span overflows"},
        {"\"sizes\":[4,1000],\"strides\":[1000,1]",
         "\"sizes\":[8589934592],\"strides\":[1]", "more than the 17179869184 allowed"},
        {"\"align\":16", "\"align\":3", "inputs[0].align must be"},
        {",\"align\":16", "", "inputs[0].align is missing"},
        {"\"alias\":-1", "\"alias\":1", "outputs[0].alias must be -1 or an index"},
        {",\"alias\":-1", "", "outputs[0].alias is missing"},
        {"\"outputs\":[{\"dtype\":\"f32\",\"sizes\":[4,1000],\"strides\":[1000,1],\"alias\":-1}]",
         "\"outputs\":[{\"dtype\":\"f32\",\"sizes\":[4,1000],\"strides\":[1,4],\"alias\":0}]",
         "outputs[0].alias: the output's dtype/sizes/strides differ from inputs[0]"},
        {"\"outputs\":[{", "\"outputs\":[],\"x\":[{", "\"outputs\" must have at least one"},
        {"\"scalars\":[]", "\"scalars\":[{\"name\":\"dim\",\"kind\":\"x\",\"value\":1}]",
         "scalars[0] (dim).kind"},
        {"\"scalars\":[]", "\"scalars\":[{\"name\":\"dim\",\"kind\":\"i\",\"value\":0.5}]",
         "scalars[0] (dim).value must be an integer"},
        {"\"scalars\":[]", "\"scalars\":[{\"name\":\"s\",\"kind\":\"s\",\"value\":"
                           "\"0123456789012345678901234567890123456789\"}]",
         "scalars[0] (s).value must be a string of at most 31"},
        {"\"scalars\":[]", "\"scalars\":[{\"name\":\"a\",\"kind\":\"n\"},{\"name\":\"a\","
                           "\"kind\":\"n\"}]",
         "scalars[1].name \"a\" repeats"},
        {"\"c0_in0.bin\"", "\"../c0_in0.bin\"",
         "cases[0].inputs[0] \"../c0_in0.bin\" is not a plain"},
        {"\"c0_in0.bin\"", "\"/etc/passwd\"", "cases[0].inputs[0] \"/etc/passwd\""},
        {"\"c1_out0.bin\"", "\"sub/c1.bin\"", "cases[1].outputs[0]"},
        {"\"c1_out0.bin\"", "\"..\"", "cases[1].outputs[0]"},
        {"\"inputs\":[\"c0_in0.bin\"]", "\"inputs\":[\"c0_in0.bin\",\"c1_in0.bin\"]",
         "cases[0].inputs has 2 file names, the signature has 1"},
        {"\"kind\":\"recorded\"", "\"kind\":\"real\"", "cases[0].kind"},
        {"\"eager_us\":10", "\"eager_us\":-1", "\"eager_us\" must be a number"},
        {"\"eager_us\":10", "\"eager_us\":10,\"call_floor_us\":-1",
         "\"call_floor_us\" must be a number in [0, 1e6]"},
        {"\"atol\":1e-5,", "", "\"atol\" is missing"},
        {"\"bench_reps\":5", "\"bench_reps\":0", "search.bench_reps"},
        {"\"bench_reps\":5", "\"bench_reps\":5,\"cache_dir\":\"rel/dir\"", "search.cache_dir"},
        {"\"bench_reps\":5", "\"bench_reps\":5,\"flush_l2\":1", "search.flush_l2"},
        {"\"bench_reps\":5", "\"bench_reps\":5,\"candidate_timeout_s\":0",
         "search.candidate_timeout_s"},
    };
    for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
        char *j = replace(good, bads[i].from, bads[i].to);
        expect_bad(neg, j, KF_ERR_INVALID, bads[i].msg);
        free(j);
    }
    /* a tensor list's elements are inputs each: more than KF_JOB_MAX_TENSORS are refused, and
     * so are more inputs and fresh outputs than a launch record takes; 15 + 1 pass the count */
    static const char one[] =
        "{\"dtype\":\"f32\",\"sizes\":[4,1000],\"strides\":[1000,1],\"align\":16}";
    char from[128], to[2048];
    snprintf(from, sizeof from, "\"inputs\":[%s]", one);
    static const struct {
        int n;
        const char *msg;
    } many[] = {
        {17, "\"inputs\" has 17 entries, at most 16 (a tensor list counts each element)"},
        {16, "16 inputs and 1 fresh output: a kernel takes at most 16 tensors"},
        {15, "cases[0].inputs has 1 file names, the signature has 15 inputs"},
    };
    for (size_t m = 0; m < sizeof many / sizeof many[0]; m++) {
        int p = snprintf(to, sizeof to, "\"inputs\":[");
        for (int i = 0; i < many[m].n; i++)
            p += snprintf(to + p, sizeof to - (size_t)p, "%s%s", i ? "," : "", one);
        snprintf(to + p, sizeof to - (size_t)p, "]");
        char *j = replace(good, from, to);
        expect_bad(neg, j, KF_ERR_INVALID, many[m].msg);
        free(j);
    }
    char *nocases = strdup(good);
    char *c = strstr(nocases, "\"cases\":[");
    if (CHECK(c != NULL)) {
        char *end = strstr(c, "]}]") + 3;
        memmove(c + 10, end, strlen(end) + 1);
        c[9] = ']';
        expect_bad(neg, nocases, KF_ERR_INVALID, "\"cases\" has 0 entries");
    }
    free(nocases);
    expect_bad(neg, "{\"format\": 1, \"op\": ", KF_ERR_INVALID, "not valid JSON");
    expect_bad(neg, "[1, 2]", KF_ERR_INVALID, "must be an object");
    char *trail = replace(good, "\"search\"", "\"search\"");
    size_t tl = strlen(trail);
    trail = realloc(trail, tl + 8);
    strcpy(trail + tl, " {}");
    expect_bad(neg, trail, KF_ERR_INVALID, "not valid JSON");
    free(trail);
    char missing[4300];
    snprintf(missing, sizeof missing, "%s/nope", base);
    job = (kf_job *)1;
    CHECK_EQ_INT(kf_job_load(missing, &job, err, sizeof err), KF_ERR_NOT_FOUND);
    CHECK(job == NULL);
    CHECK_CONTAINS(err, "nope");

    /* case files: the exact size, a regular file, no symlink (found by kf_eval_create) */
    CHECK_EQ_INT(kf_job_load(dir, &job, err, sizeof err), KF_OK);
    char cf[4300], moved[4300];
    snprintf(cf, sizeof cf, "%s/cases/c1_in0.bin", dir);
    snprintf(moved, sizeof moved, "%s/cases/saved.bin", dir);
    CHECK(rename(cf, moved) == 0);
    float small[10] = {0};
    CHECK(write_bytes(cf, small, sizeof small) == 0);
    kf_eval *ev = (kf_eval *)1;
    CHECK_EQ_INT(kf_eval_create(job, &ev, err, sizeof err), KF_ERR_INVALID);
    CHECK(ev == NULL);
    CHECK_CONTAINS(err, "c1_in0.bin: 40 bytes, the tensor's span is 16000");
    unlink(cf);
    CHECK(symlink(moved, cf) == 0);
    CHECK(kf_eval_create(job, &ev, err, sizeof err) != KF_OK);
    CHECK_CONTAINS(err, "symbolic link");
    unlink(cf);
    CHECK(mkdir(cf, 0700) == 0);
    CHECK_EQ_INT(kf_eval_create(job, &ev, err, sizeof err), KF_ERR_INVALID);
    CHECK_CONTAINS(err, "not a regular file");
    rmdir(cf);
    CHECK_EQ_INT(kf_eval_create(job, &ev, err, sizeof err), KF_ERR_NOT_FOUND);
    CHECK(rename(moved, cf) == 0);
    CHECK_EQ_INT(kf_eval_create(job, &ev, err, sizeof err), KF_OK);
    kf_eval_free(ev);
    kf_job_free(job);
    free(good);
}

static void test_helpers(void)
{
    static const char *const names[] = {"f32", "f16", "bf16", "f64", "i8",   "u8",     "i16",
                                        "i32", "i64", "bool", "c64", "c128", "f8e4m3", "f8e5m2"};
    static const int sizes[] = {4, 2, 2, 8, 1, 1, 2, 4, 8, 1, 8, 16, 1, 1};
    for (int d = KF_F32; d < KF_DTYPE_COUNT; d++) {
        CHECK_EQ_INT(kf_dtype_from_name(names[d - 1]), d);
        CHECK_STR(kf_dtype_name(d), names[d - 1]);
        CHECK_EQ_INT(kf_dtype_size(d), sizes[d - 1]);
    }
    CHECK_EQ_INT(kf_dtype_from_name("float32"), KF_DTYPE_UNKNOWN);
    CHECK_EQ_INT(kf_dtype_from_name("?"), KF_DTYPE_UNKNOWN);
    CHECK_EQ_INT(kf_dtype_size(99), 0);

    kf_job_tensor t = {.dtype = KF_F32, .ndim = 2, .sizes = {2, 3}, .strides = {3, 1}};
    int ok = 0;
    CHECK_EQ_U64(kf_job_span_bytes(&t, &ok), 24);
    CHECK(ok);
    t.strides[0] = 1, t.strides[1] = 2; /* column-major: last element at 1 + 4 */
    CHECK_EQ_U64(kf_job_span_bytes(&t, &ok), 24);
    t.strides[0] = 8; /* padded rows: 8 + 2 + 1 */
    t.strides[1] = 1;
    CHECK_EQ_U64(kf_job_span_bytes(&t, &ok), 44);
    t.sizes[0] = 0; /* empty */
    CHECK_EQ_U64(kf_job_span_bytes(&t, &ok), 0);
    CHECK(ok);
    kf_job_tensor e = {.dtype = KF_BF16, .ndim = 1, .sizes = {5}, .strides = {0}}; /* expanded */
    CHECK_EQ_U64(kf_job_span_bytes(&e, &ok), 2);
    kf_job_tensor s = {.dtype = KF_F64, .ndim = 0};
    CHECK_EQ_U64(kf_job_span_bytes(&s, &ok), 8);
    CHECK(ok);
    e.strides[0] = -1;
    CHECK_EQ_U64(kf_job_span_bytes(&e, &ok), 0);
    CHECK(!ok);
    kf_job_tensor big = {.dtype = KF_F64, .ndim = 2, .sizes = {INT64_MAX, 2},
                         .strides = {INT64_MAX, 1}};
    CHECK_EQ_U64(kf_job_span_bytes(&big, &ok), 0);
    CHECK(!ok);

    CHECK_STR(kf_node_status_name(KF_NODE_VERIFIED), "verified");
    CHECK_STR(kf_node_status_name(KF_NODE_INPUT_WRITTEN), "input_written");
    CHECK_STR(kf_node_status_name(KF_NODE_COMPILE_ERROR), "compile_error");
    CHECK_STR(kf_node_status_name(KF_NODE_TIMEOUT), "timeout");
    CHECK(kf_node_status_correct(KF_NODE_SLOWER) && kf_node_status_correct(KF_NODE_FLAGGED));
    CHECK(!kf_node_status_correct(KF_NODE_WRONG) && !kf_node_status_correct(KF_NODE_PENDING));

    /* trust: PVT-v2's layer norm over 32 channels on an H100, eager 221 us, roofline 9.16 us */
    kf_job j = {.backend = "nvrtc", .eager_us = 221, .roofline_us = 9.16};
    CHECK(kf_job_trusts(&j, 30) && kf_job_trusts(&j, 15));  /* 24x eager, at bandwidth */
    CHECK(!kf_job_trusts(&j, 8.8) && !kf_job_trusts(&j, 0)); /* beats the roofline */
    CHECK(kf_job_trusts(&j, 40));    /* 5.5x eager */
    j.roofline_us = 2;               /* 14.7x eager at 7.5x its roofline: a timing error */
    CHECK(!kf_job_trusts(&j, 15) && kf_job_trusts(&j, 8));
    j.roofline_us = 0;               /* the roofline unknown: 10x is the limit */
    CHECK(kf_job_trusts(&j, 23) && !kf_job_trusts(&j, 21));
    j.call_floor_us = 3;             /* the host's call floor counts toward the candidate */
    CHECK(kf_job_trusts(&j, 20) && !kf_job_trusts(&j, 19));
    kf_job_chain two = {.n_members = 2};
    j.chain_def = &two, j.call_floor_us = 0; /* a chain: 10x per member */
    CHECK(kf_job_trusts(&j, 11.1) && !kf_job_trusts(&j, 11));
}

/* ---- comparing values per dtype ---- */

static void test_compare(void)
{
    /* decoding */
    unsigned char b[8];
    uint16_t h;
    h = 0x3c00, memcpy(b, &h, 2);
    CHECK(kf_decode_value(KF_F16, b) == 1.0);
    h = 0xc000, memcpy(b, &h, 2);
    CHECK(kf_decode_value(KF_F16, b) == -2.0);
    h = 0x0001, memcpy(b, &h, 2);
    CHECK(kf_decode_value(KF_F16, b) == ldexp(1, -24));
    h = 0x7c00, memcpy(b, &h, 2);
    CHECK(isinf(kf_decode_value(KF_F16, b)));
    h = 0x7e00, memcpy(b, &h, 2);
    CHECK(isnan(kf_decode_value(KF_F16, b)));
    h = 0x3f80, memcpy(b, &h, 2);
    CHECK(kf_decode_value(KF_BF16, b) == 1.0);
    h = 0xc0a0, memcpy(b, &h, 2);
    CHECK(kf_decode_value(KF_BF16, b) == -5.0);
    b[0] = 0x38;
    CHECK(kf_decode_value(KF_F8E4M3, b) == 1.0);
    b[0] = 0x7f;
    CHECK(isnan(kf_decode_value(KF_F8E4M3, b)));
    b[0] = 0x7e; /* the largest e4m3fn: 448 */
    CHECK(kf_decode_value(KF_F8E4M3, b) == 448.0);
    b[0] = 0x3c;
    CHECK(kf_decode_value(KF_F8E5M2, b) == 1.0);
    b[0] = 0x7c;
    CHECK(isinf(kf_decode_value(KF_F8E5M2, b)));
    int32_t i32 = -7;
    memcpy(b, &i32, 4);
    CHECK(kf_decode_value(KF_I32, b) == -7.0);

    /* f16 within / outside tolerance, NaN and Inf placement */
    kf_job_tensor t = {.dtype = KF_F16, .ndim = 1, .sizes = {5}, .strides = {1}};
    uint16_t exp[5] = {0x3c00, 0x4000, 0x7e00, 0x7c00, 0x0000};  /* 1 2 nan inf 0 */
    uint16_t got[5] = {0x3c01, 0x4000, 0x7e00, 0x7c00, 0x0000};  /* 1+2^-10 */
    ev_cmp c;
    kf_ev_compare(&t, (unsigned char *)got, (unsigned char *)exp, 1e-3, 1e-3, &c);
    CHECK_EQ_INT(c.n, 5);
    CHECK_EQ_INT(c.bad, 0);
    CHECK(fabs(c.max_abs - ldexp(1, -10)) < 1e-12);
    kf_ev_compare(&t, (unsigned char *)got, (unsigned char *)exp, 1e-4, 1e-4, &c);
    CHECK_EQ_INT(c.bad, 1);
    CHECK_EQ_INT(c.first_bad, 0);
    got[0] = 0x3c00;
    got[2] = 0x3c00; /* a number where eager has NaN */
    kf_ev_compare(&t, (unsigned char *)got, (unsigned char *)exp, 1, 1, &c);
    CHECK_EQ_INT(c.bad, 1);
    CHECK_EQ_INT(c.first_bad, 2);
    got[2] = 0x7e00;
    got[3] = 0xfc00; /* -inf where eager has +inf */
    kf_ev_compare(&t, (unsigned char *)got, (unsigned char *)exp, 1, 1, &c);
    CHECK_EQ_INT(c.bad, 1);
    got[3] = 0x7c00;
    got[4] = 0x7e00; /* NaN where eager has 0 */
    kf_ev_compare(&t, (unsigned char *)got, (unsigned char *)exp, 1, 1, &c);
    CHECK_EQ_INT(c.bad, 1);
    got[4] = 0xffff; /* the poison */
    kf_ev_compare(&t, (unsigned char *)got, (unsigned char *)exp, 1, 1, &c);
    CHECK_EQ_INT(c.poisoned, 1);
    CHECK_EQ_INT(c.first_poisoned, 4);

    /* integers and bools exact, whatever the tolerance */
    kf_job_tensor ti = {.dtype = KF_I64, .ndim = 1, .sizes = {3}, .strides = {1}};
    int64_t ie[3] = {1, (int64_t)1 << 60, -5}, ig[3] = {1, ((int64_t)1 << 60) + 1, -5};
    kf_ev_compare(&ti, (unsigned char *)ig, (unsigned char *)ie, 100, 100, &c);
    CHECK_EQ_INT(c.bad, 1);
    CHECK_EQ_INT(c.first_bad, 1);
    kf_job_tensor tb = {.dtype = KF_BOOL, .ndim = 1, .sizes = {3}, .strides = {1}};
    uint8_t be[3] = {1, 0, 1}, bg[3] = {1, 0, 2};
    kf_ev_compare(&tb, bg, be, 1, 1, &c);
    CHECK_EQ_INT(c.bad, 1);

    /* strided: only the addressed elements count (the gap holds anything) */
    kf_job_tensor ts = {.dtype = KF_F32, .ndim = 2, .sizes = {2, 2}, .strides = {3, 1}};
    float se[5] = {1, 2, 123, 3, 4}, sg[5] = {1, 2, -7, 3, 4};
    kf_ev_compare(&ts, (unsigned char *)sg, (unsigned char *)se, 0, 0, &c);
    CHECK_EQ_INT(c.n, 4);
    CHECK_EQ_INT(c.bad, 0);
    sg[3] = 3.5f;
    kf_ev_compare(&ts, (unsigned char *)sg, (unsigned char *)se, 0, 0, &c);
    CHECK_EQ_INT(c.first_bad, 2); /* element [1][0] */

    /* complex: both parts compared */
    kf_job_tensor tc = {.dtype = KF_C64, .ndim = 1, .sizes = {2}, .strides = {1}};
    float ce[4] = {1, 2, 3, 4}, cg[4] = {1, 2, 3, 4.5f};
    kf_ev_compare(&tc, (unsigned char *)cg, (unsigned char *)ce, 0.1, 0, &c);
    CHECK_EQ_INT(c.bad, 1);
    CHECK_EQ_INT(c.first_bad, 1);
}

/* ---- verification and timing (host) ---- */

static void test_relu_host(void)
{
    char dir[4200], err[512];
    make_relu_job(base, "relu_eval", "host", ROWS, COLS, 16, 0, dir, sizeof dir);
    kf_job *job = NULL;
    kf_eval *ev = NULL;
    if (!CHECK_EQ_INT(kf_job_load(dir, &job, err, sizeof err), KF_OK)) return;
    if (!CHECK_EQ_INT(kf_eval_create(job, &ev, err, sizeof err), KF_OK)) {
        printf("     %s\n", err);
        kf_job_free(job);
        return;
    }
    /* the buffers honour the alignment, end flush against the guard page */
    CHECK((uintptr_t)ev->in[0].arg % 16 == 0 && (uintptr_t)ev->out[0].arg % 16 == 0);
    CHECK((uintptr_t)((unsigned char *)ev->out[0].arg + N * 4) % (uintptr_t)sysconf(_SC_PAGESIZE) ==
          0);

    kf_eval_result r = run_relu(ev, NULL, NULL, NULL);
    show("good", &r);
    CHECK_EQ_INT(r.status, KF_NODE_VERIFIED);
    CHECK_STR(r.error, "");
    CHECK_EQ_INT(r.failed_case, -1);
    CHECK_EQ_INT(r.reps, 5);
    CHECK(r.median_us > 0 && r.min_us > 0 && r.min_us <= r.median_us);
    CHECK(r.median_us < 1e6);
    CHECK(r.max_abs_err == 0);

    r = run_relu(ev, "if (v > 0) y[i] *= 1.01f;", NULL, NULL);
    show("scaled", &r);
    CHECK_EQ_INT(r.status, KF_NODE_WRONG);
    CHECK_EQ_INT(r.failed_case, 0);
    CHECK_CONTAINS(r.error, "case 0 (recorded), output 0: ");
    CHECK_CONTAINS(r.error, "elements outside atol=1e-05 rtol=1e-05");
    CHECK(r.median_us == 0 && r.reps == 0); /* never timed */

    r = run_relu(ev, "if (i == 1043) y[i] = y[i] + 1.0f;", NULL, NULL);
    show("one wrong", &r);
    CHECK_EQ_INT(r.status, KF_NODE_WRONG);
    CHECK_CONTAINS(r.error, "1 of 4000 elements");
    CHECK_CONTAINS(r.error, "max abs 1 at 1043");

    /* wrong only on the random case (its NaN sits at x[4], the recorded one's at x[3]) */
    r = run_relu(ev, NULL, "if (x[4] != x[4]) y[100] = 5.0f;", NULL);
    show("random wrong", &r);
    CHECK_EQ_INT(r.status, KF_NODE_WRONG);
    CHECK_EQ_INT(r.failed_case, 1);
    CHECK_CONTAINS(r.error, "case 1 (random), output 0: 1 of 4000");

    /* NaN placement: NaN -> 0, and NaN where eager has a number */
    r = run_relu(ev, "if (v != v) y[i] = 0.0f;", NULL, NULL);
    show("nan to 0", &r);
    CHECK_EQ_INT(r.status, KF_NODE_WRONG);
    CHECK_CONTAINS(r.error, "first at 3: got 0, expected nan");
    r = run_relu(ev, "if (i == 5) y[i] = NAN;", NULL, NULL);
    show("extra nan", &r);
    CHECK_EQ_INT(r.status, KF_NODE_WRONG);
    CHECK_CONTAINS(r.error, "got nan");
    r = run_relu(ev, "if (i == 7) y[i] = -INFINITY;", NULL, NULL); /* eager: +inf */
    show("inf sign", &r);
    CHECK_EQ_INT(r.status, KF_NODE_WRONG);

    /* within the tolerance */
    r = run_relu(ev, "if (v == v && v < INFINITY) y[i] += 5e-6f;", NULL, NULL);
    show("within tol", &r);
    CHECK_EQ_INT(r.status, KF_NODE_VERIFIED);
    CHECK(r.max_abs_err > 4e-6 && r.max_abs_err < 6e-6);
    CHECK(r.max_rel_err > 0);

    r = run_relu(ev, NULL, NULL, "KF_N / 2");
    show("half", &r);
    CHECK_EQ_INT(r.status, KF_NODE_UNTOUCHED);
    CHECK_CONTAINS(r.error, "case 0 (recorded), output 0: 2000 of 4000 elements still hold the "
                            "0xff poison");
    CHECK_CONTAINS(r.error, "first at element 2000");

    r = run_relu(ev, NULL, "((float *)x)[17] = 0.0f;", NULL);
    show("input", &r);
    CHECK_EQ_INT(r.status, KF_NODE_INPUT_WRITTEN);
    CHECK_CONTAINS(r.error, "case 0 (recorded), input 0: the kernel changed it");
    CHECK_CONTAINS(r.error, "element 17");

    /* before the start: the slack below the data is canary bytes */
    r = run_relu(ev, NULL, "y[-1] = 1.0f;", NULL);
    show("underflow", &r);
    CHECK_EQ_INT(r.status, KF_NODE_OOB);
    CHECK_CONTAINS(r.error, "outside output 0: 4 bytes before its start");

    /* only on the timed runs (after 2 cases x 2 placements): still caught */
    r = run_relu(ev, NULL, "{ static int calls; if (++calls > 4) y[-2] = 1.0f; }", NULL);
    show("late oob", &r);
    CHECK_EQ_INT(r.status, KF_NODE_OOB);
    CHECK_CONTAINS(r.error, "timed run");
    r = run_relu(ev, NULL, NULL, NULL); /* the guards were repaired after each hit */
    CHECK_EQ_INT(r.status, KF_NODE_VERIFIED);

    /* launch records that do not fit the signature */
    kf_status st;
    static const char three[] = "void kf_kernel(const float *x, float *y, float *z)\n"
                                "{ (void)x; (void)y; (void)z; }\n";
    if (eval_src(&hcc, NULL, ev, three,
                 "{\"entry\":\"kf_kernel\",\"args\":[\"const float*\",\"float*\",\"float*\"]}", &r,
                 &st) == 0) {
        CHECK_EQ_INT(r.status, KF_NODE_LOAD_ERROR);
        CHECK_CONTAINS(r.error, "3 arguments; the signature takes 1 inputs + 1 fresh outputs");
    }
    static const char dbl[] = "void kf_kernel(const double *x, float *y) { (void)x; (void)y; }\n";
    if (eval_src(&hcc, NULL, ev, dbl,
                 "{\"entry\":\"kf_kernel\",\"args\":[\"const double*\",\"float*\"]}", &r,
                 &st) == 0) {
        CHECK_EQ_INT(r.status, KF_NODE_LOAD_ERROR);
        CHECK_CONTAINS(r.error, "argument 0 is \"const double*\", but its tensor holds f32");
    }
    CHECK_EQ_INT(kf_eval_run(ev, &hcc, NULL, NULL, &r), KF_ERR_INVALID);

    /* every builtin template that applies renders a candidate that passes the source check
     * and verifies (the kf_job_sig conventions, end to end) */
    int used = 0;
    for (const kf_template *const *t = kf_builtin_templates; *t; t++) {
        if (strcmp((*t)->backend, job->backend) || !(*t)->applies(&job->sig)) continue;
        for (int pass = 0; pass < 2; pass++) {
            int idx[64] = {0};
            for (int k = 0; pass && k < (*t)->n_knobs; k++) idx[k] = (*t)->knobs[k].n_values - 1;
            char *src = NULL, *launch = NULL;
            if (!CHECK_EQ_INT((*t)->render(&job->sig, idx, &src, &launch, err, sizeof err),
                              KF_OK))
                continue;
            if (!CHECK(kf_source_check_backend(src, "host", err, sizeof err)))
                printf("     %s: %s\n", (*t)->name, err);
            if (eval_src(&hcc, NULL, ev, src, launch, &r, &st) == 0) {
                printf("  template %s knobs %s: %s %.2f us\n", (*t)->name, pass ? "max" : "0",
                       kf_node_status_name(r.status), r.median_us);
                CHECK_EQ_INT(r.status, KF_NODE_VERIFIED);
                used++;
            }
            free(src);
            free(launch);
        }
    }
    CHECK(used >= 2);
    kf_eval_free(ev);
    kf_job_free(job);
}

/* relu_: the output is the input (alias 0), written in place, compared with eager's result */
static void test_inplace(void)
{
    char dir[4200], err[512];
    make_relu_job(base, "relu_inplace", "host", ROWS, COLS, 16, 1, dir, sizeof dir);
    kf_job *job = NULL;
    kf_eval *ev = NULL;
    if (!CHECK_EQ_INT(kf_job_load(dir, &job, err, sizeof err), KF_OK)) return;
    CHECK_EQ_INT(job->sig.out_alias[0], 1);
    if (!CHECK_EQ_INT(kf_eval_create(job, &ev, err, sizeof err), KF_OK)) {
        kf_job_free(job);
        return;
    }
    char src[512];
    kf_eval_result r;
    kf_status st;
    snprintf(src, sizeof src,
             "void kf_kernel(float *x)\n{\n    for (int i = 0; i < %d; i++) {\n"
             "        float v = x[i];\n        x[i] = v > 0 ? v : (v != v ? v : 0.0f);\n"
             "    }\n}\n",
             N);
    if (eval_src(&hcc, NULL, ev, src, HOST_INPLACE_LAUNCH, &r, &st) == 0) {
        show("inplace", &r);
        CHECK_EQ_INT(st, KF_OK);
        CHECK_EQ_INT(r.status, KF_NODE_VERIFIED);
        CHECK_EQ_INT(r.reps, 5);
    }
    /* not writing at all leaves the input there: wrong (not "untouched": no poison in place) */
    if (eval_src(&hcc, NULL, ev, "void kf_kernel(float *x) { (void)x; }\n", HOST_INPLACE_LAUNCH,
                 &r, &st) == 0) {
        show("inplace noop", &r);
        CHECK_EQ_INT(r.status, KF_NODE_WRONG);
    }
    /* passing the output a second time is not the contract */
    if (eval_src(&hcc, NULL, ev, "void kf_kernel(const float *x, float *y) { (void)x, (void)y; }\n",
                 HOST_UNARY_LAUNCH, &r, &st) == 0)
        CHECK_EQ_INT(r.status, KF_NODE_LOAD_ERROR);
    kf_eval_free(ev);
    kf_job_free(job);
}

/* softmax over rows into an output with padded rows (strides [128, 1]): the gaps are not
 * compared; writing as if contiguous is wrong. Inputs aligned to 4 bytes only. */
static void test_strided_softmax(void)
{
    enum { R = 4, C = 100, LD = 128 };
    char dir[4200], err[512];
    job_dir_make(base, "softmax", dir, sizeof dir);
    float x[R * C], y[R * LD];
    for (int c = 0; c < 2; c++) {
        fill_inputs(x, R * C, c + 5);
        for (int i = 0; i < R * C; i++)
            if (!isfinite(x[i])) x[i] = 0.5f; /* keep this one finite */
        memset(y, 0x5a, sizeof y);            /* eager's gap bytes: anything */
        for (int r = 0; r < R; r++) {
            double m = -INFINITY, s = 0;
            for (int j = 0; j < C; j++) m = fmax(m, x[r * C + j]);
            for (int j = 0; j < C; j++) s += exp(x[r * C + j] - m);
            for (int j = 0; j < C; j++) y[r * LD + j] = (float)(exp(x[r * C + j] - m) / s);
        }
        char fn[32];
        snprintf(fn, sizeof fn, "x%d.bin", c);
        job_put_case(dir, fn, x, sizeof x);
        snprintf(fn, sizeof fn, "y%d.bin", c);
        job_put_case(dir, fn, y, ((R - 1) * LD + C) * sizeof(float));
    }
    job_put_json(dir,
                 JOB_HEAD("aten::_softmax", "host")
                 "\"inputs\":[{\"dtype\":\"f32\",\"sizes\":[4,100],\"strides\":[100,1],"
                 "\"align\":4}],"
                 "\"outputs\":[{\"dtype\":\"f32\",\"sizes\":[4,100],\"strides\":[128,1],"
                 "\"alias\":-1}],"
                 "\"scalars\":[{\"name\":\"dim\",\"kind\":\"i\",\"value\":-1},"
                 "{\"name\":\"half_to_float\",\"kind\":\"b\",\"value\":false}],"
                 "\"cases\":[{\"kind\":\"recorded\",\"inputs\":[\"x0.bin\"],\"outputs\":"
                 "[\"y0.bin\"]},{\"kind\":\"random\",\"inputs\":[\"x1.bin\"],\"outputs\":"
                 "[\"y1.bin\"]}]," JOB_TAIL);
    kf_job *job = NULL;
    kf_eval *ev = NULL;
    if (!CHECK_EQ_INT(kf_job_load(dir, &job, err, sizeof err), KF_OK)) {
        printf("     %s\n", err);
        return;
    }
    if (!CHECK_EQ_INT(kf_eval_create(job, &ev, err, sizeof err), KF_OK)) {
        kf_job_free(job);
        return;
    }
    CHECK((uintptr_t)ev->in[0].arg % 4 == 0);
    static const char fmt[] =
        "#include <math.h>\n"
        "void kf_kernel(const float *x, float *y)\n{\n"
        "    for (int r = 0; r < 4; r++) {\n"
        "        float m = -INFINITY, s = 0;\n"
        "        for (int j = 0; j < 100; j++) m = fmaxf(m, x[r * 100 + j]);\n"
        "        for (int j = 0; j < 100; j++) s += expf(x[r * 100 + j] - m);\n"
        "        for (int j = 0; j < 100; j++) y[r * %d + j] = expf(x[r * 100 + j] - m) / s;\n"
        "    }\n}\n";
    char src[1024];
    kf_eval_result r;
    kf_status st;
    snprintf(src, sizeof src, fmt, LD);
    if (eval_src(&hcc, NULL, ev, src, HOST_UNARY_LAUNCH, &r, &st) == 0) {
        show("softmax", &r);
        CHECK_EQ_INT(r.status, KF_NODE_VERIFIED);
        CHECK(r.max_abs_err < 1e-6);
    }
    snprintf(src, sizeof src, fmt, C);
    if (eval_src(&hcc, NULL, ev, src, HOST_UNARY_LAUNCH, &r, &st) == 0) {
        show("contiguous", &r);
        CHECK(r.status == KF_NODE_WRONG || r.status == KF_NODE_UNTOUCHED);
        CHECK_EQ_INT(r.failed_case, 0);
    }
    kf_eval_free(ev);
    kf_job_free(job);
}

/* ---- the static source check ---- */

static void test_source_check(void)
{
    char err[256];
    static const struct {
        const char *src, *backend, *why; /* why NULL: passes */
    } cases[] = {
        {"#include <math.h>\n#include <stdint.h>\nvoid kf_kernel(const float *x, float *y)\n"
         "{ y[0] = expf(x[0]); }\n", "host", NULL},
        {"#include <omp.h>\n#pragma omp parallel for\n/* the format::x of attention */\n"
         "static float at_(float v) { return v; }\n", "host", NULL},
        {"#include <cuda_fp16.h>\n#include <cooperative_groups/reduce.h>\n"
         "extern \"C\" __global__ void kf_kernel(float *y)\n"
         "{ float v; asm volatile(\"mov.b32 %0, 1;\" : \"=f\"(v)); y[0] = v; }\n", NULL, NULL},
        {"#include <cuda_fp8.h>\n__global__ void k() { printf(\"x\"); }\n", "nvrtc", NULL},
        {"void f() { at::Tensor t; }", "host", "calls back into ATen/libtorch ('at::'"},
        {"// c10::Half\nvoid f() {}", "host", "ATen/libtorch"},
        {"#include <ATen/ATen.h>\n", "host", "ATen/libtorch"},
        {"void f() { cublasSgemm(0); }", "nvrtc", "cuBLAS/cuDNN libraries ('cublasSgemm'"},
        {"void f() { CUDNN_x(); }", "nvrtc", "cuBLAS/cuDNN"},
        {"__global__ void k() { cudaDeviceSynchronize(); }", "nvrtc",
         "synchronizes the host ('cudaDeviceSynchronize'"},
        {"void f() { cuStreamSynchronize(0); }", "host", "synchronizes the host"},
        {"void f() { system (\"rm\"); }", "host", "loads code or starts processes ('system'"},
        {"void f() { void *h = dlopen(0, 0); }", "host", "loads code"},
        {"void f() { execvp(\"x\", 0); }", "host", "loads code"},
        {"void f() { fork(); }", "host", "loads code"},
        {"int system_ok(int system) { return system; }", "host", NULL},
        {"#include <stdio.h>\n", "host", "'#include <stdio.h>' (line 1); only #include"},
        {"#include <math.h>\n  #  include \"kernel.h\"\n", "host", "(line 2)"},
        {"#define H <math.h>\n#include H\n", "host", "only #include"},
        {"#include <cooperative_groups/../../etc/passwd>\n", "nvrtc", "only #include"},
        {"%:include <stdlib.h>\n", "host", "only #include"},
        {"#inc\\\nlude <unistd.h>\n", "host", "only #include"},
        {"/* #include <stdio.h> */\n#include <math.h>\n", "host", NULL},
        {"void f(float *y) { __asm__(\"nop\"); }", "host", "inline assembly in host code"},
        {"void f(float *y) { asm(\"nop\"); }", NULL, "inline assembly"},
        {"#define __global__\n__global__ void f() { asm(\"nop\"); }", NULL, "inline assembly"},
        {"void f() { long r = syscall(1, 2); }", "host", "makes system calls ('syscall'"},
        {"void f() { mprotect(0, 0, 7); }", "host", "makes system calls ('mprotect'"},
        {"void f() { exit(0); }", "host", "system calls"},
        {"void f() { FILE *f = 0; }", "host", "does file I/O ('FILE'"},
        {"void f() { fopen(\"/etc/passwd\", \"r\"); }", "host", "does file I/O"},
        {"void f() { int fd = open (\"x\", 0); }", "host", "does file I/O ('open'"},
        {"void f() { write(2, \"x\", 1); }", "host", "file I/O"},
        {"static int open_rows = 3;", "host", NULL},
        {"__attribute__((constructor)) static void init(void) {}", "host", "when it is loaded"},
        {"void f() { const char *s = \"?\?=\"; }", "host", "trigraph"},
        {"void f() { const char *s = \"fopen(FILE)\"; }", "host", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int ok = kf_source_check_backend(cases[i].src, cases[i].backend, err, sizeof err);
        if (!cases[i].why) {
            if (!CHECK(ok)) printf("     refused: %s\n     %s\n", cases[i].src, err);
        } else {
            if (!CHECK(!ok)) printf("     passed: %s\n", cases[i].src);
            CHECK_CONTAINS(err, cases[i].why);
        }
    }
    CHECK(kf_source_check("void f(float *y) { y[0] = 1; }", err, sizeof err));
    CHECK(!kf_source_check("void f(float *y) { asm(\"nop\"); }", err, sizeof err));
    CHECK(!kf_source_check(NULL, err, sizeof err));
}

/* ---- CUDA (only with a GPU and NVRTC) ---- */

static const char *cuda_include(void)
{
    const char *e = getenv("KFORGE_CUDA_INCLUDE");
    if (e && *e) return e;
    struct stat sb;
    return stat("/usr/local/cuda/include/cuda_fp16.h", &sb) == 0 ? "/usr/local/cuda/include" : NULL;
}

static void test_cuda(void)
{
    kf_compiler_i nv;
    char err[512], arch[256];
    if (kf_compiler_nvrtc_create(&nv, NULL, cuda_include(), err, sizeof err) != KF_OK) {
        printf("SKIP cuda: %s\n", err);
        return;
    }
    if (nv.arch(nv.self, 0, arch, sizeof arch) != KF_OK) {
        printf("SKIP cuda: no GPU (%s)\n", arch);
        nv.destroy(nv.self);
        return;
    }
    printf("cuda: %s\n", arch);
    char dir[4200];
    /* align 4: the device data pointer is aligned to exactly 4 bytes, not more */
    make_relu_job(base, "relu_cuda", "nvrtc", ROWS, COLS, 4, 0, dir, sizeof dir);
    kf_job *job = NULL;
    kf_eval *ev = NULL;
    if (!CHECK_EQ_INT(kf_job_load(dir, &job, err, sizeof err), KF_OK)) goto destroy;
    if (!CHECK_EQ_INT(kf_eval_create(job, &ev, err, sizeof err), KF_OK)) {
        printf("     %s\n", err);
        goto free_job;
    }
    CHECK((uintptr_t)ev->in[0].arg % 4 == 0 && (uintptr_t)ev->in[0].arg % 8 != 0);
    char launch[256];
    snprintf(launch, sizeof launch,
             "{\"entry\":\"kf_kernel\",\"grid\":[%d,1,1],\"block\":[256,1,1],\"smem\":0,"
             "\"args\":[\"const float*\",\"float*\"]}",
             (N + 255) / 256);
    static const char fmt[] =
        "#define KF_N %d\n"
        "extern \"C\" __global__ void kf_kernel(const float* x, float* y)\n{\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "    if (i < %s) { float v = x[i]; y[i] = v > 0.f ? v : (v != v ? v : 0.f); }\n"
        "    %s\n}\n";
    static const struct {
        const char *bound, *extra;
        int status;
        const char *msg;
    } ks[] = {
        {"KF_N", "", KF_NODE_VERIFIED, ""},
        {"KF_N", "if (i == 1043) y[i] = 7.f;", KF_NODE_WRONG, "1 of 4000 elements"},
        {"KF_N / 2", "", KF_NODE_UNTOUCHED, "2000 of 4000"},
        {"KF_N", "if (i == 0) ((float*)x)[9] = 1.f;", KF_NODE_INPUT_WRITTEN, "input 0"},
        {"KF_N", "if (i == 0) y[KF_N + 3] = 1.f;", KF_NODE_OOB,
         "at byte 16012, past its end (16000 bytes)"},
        {"KF_N", "if (i == 0) y[-1] = 1.f;", KF_NODE_OOB, "4 bytes before its start"},
    };
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        char src[1024];
        snprintf(src, sizeof src, fmt, N, ks[i].bound, ks[i].extra);
        kf_eval_result r;
        kf_status st;
        if (eval_src(&nv, arch, ev, src, launch, &r, &st) == 0) {
            show("cuda", &r);
            CHECK_EQ_INT(st, KF_OK);
            CHECK_EQ_INT(r.status, ks[i].status);
            CHECK_CONTAINS(r.error, ks[i].msg);
            if (r.status == KF_NODE_VERIFIED) CHECK(r.median_us > 0 && r.reps == 5);
        }
    }
    /* the builtin CUDA templates that apply verify too (with this 4-byte alignment) */
    for (const kf_template *const *t = kf_builtin_templates; *t; t++) {
        if (strcmp((*t)->backend, "nvrtc") || !(*t)->applies(&job->sig)) continue;
        for (int pass = 0; pass < 2; pass++) {
            int idx[64] = {0};
            for (int k = 0; pass && k < (*t)->n_knobs; k++) idx[k] = (*t)->knobs[k].n_values - 1;
            char *src = NULL, *lj = NULL;
            if (!CHECK_EQ_INT((*t)->render(&job->sig, idx, &src, &lj, err, sizeof err), KF_OK))
                continue;
            if (!CHECK(kf_source_check_backend(src, "nvrtc", err, sizeof err)))
                printf("     %s: %s\n", (*t)->name, err);
            kf_eval_result r;
            kf_status st = KF_OK;
            if (eval_src(&nv, arch, ev, src, lj, &r, &st) == 0) {
                printf("  template %s knobs %s: %s %.2f us %s\n", (*t)->name, pass ? "max" : "0",
                       kf_node_status_name(r.status), r.median_us, r.error);
                CHECK_EQ_INT(r.status, KF_NODE_VERIFIED);
            }
            free(src);
            free(lj);
            if (st != KF_OK) goto free_ev; /* the context is gone */
        }
    }
    /* a kernel assuming 16-byte alignment of a 4-byte aligned input: misaligned address, a
     * sticky error: CRASH and KF_ERR_CUDA (the last CUDA test: the context is gone after it) */
    {
        char src[1024];
        snprintf(src, sizeof src,
                 "extern \"C\" __global__ void kf_kernel(const float* x, float* y)\n{\n"
                 "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                 "    if (i < %d / 4) { float4 v = ((const float4*)x)[i]; ((float4*)y)[i] = v; }\n"
                 "}\n",
                 N);
        kf_eval_result r;
        kf_status st = KF_OK;
        if (eval_src(&nv, arch, ev, src, launch, &r, &st) == 0) {
            show("cuda misalign", &r);
            CHECK_EQ_INT(st, KF_ERR_CUDA);
            CHECK_EQ_INT(r.status, KF_NODE_CRASH);
            CHECK_CONTAINS(r.error, "CUDA_ERROR_MISALIGNED_ADDRESS");
        }
    }
free_ev:
    kf_eval_free(ev);
free_job:
    kf_job_free(job);
destroy:
    nv.destroy(nv.self);
}

/* Two cases naming one input file (write_job keeps a large gather source once): one buffer,
 * freed once (the ASan build would catch a second free), and both cases checked. */
static void test_shared_case_file(void)
{
    char dir[4200], err[512], path[4300], text[4096];
    make_relu_job(base, "relu_shared", "host", ROWS, COLS, 16, 0, dir, sizeof dir);
    snprintf(path, sizeof path, "%s/job.json", dir);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f) fclose(f);
    text[n] = 0;
    char *at = strstr(text, "\"c1_in0.bin\""), *out = strstr(text, "\"c1_out0.bin\"");
    if (!CHECK(at && out)) return;
    at[2] = '0', out[2] = '0'; /* case 1 names case 0's files */
    f = fopen(path, "w");
    CHECK(f && fwrite(text, 1, n, f) == n);
    if (f) fclose(f);
    kf_job *job = NULL;
    kf_eval *ev = NULL;
    if (!CHECK_EQ_INT(kf_job_load(dir, &job, err, sizeof err), KF_OK)) return;
    if (CHECK_EQ_INT(kf_eval_create(job, &ev, err, sizeof err), KF_OK)) {
        CHECK(ev->case_in[1][0] == ev->case_in[0][0] && ev->case_in_shared[1][0] && !ev->case_in_shared[0][0]);
        kf_eval_result r = run_relu(ev, NULL, NULL, NULL);
        CHECK_EQ_INT(r.status, KF_NODE_VERIFIED);
        r = run_relu(ev, "if (i == 1043) y[i] = y[i] + 1.0f;", NULL, NULL);
        CHECK_EQ_INT(r.status, KF_NODE_WRONG);
        kf_eval_free(ev);
    }
    kf_job_free(job);
}

int main(void)
{
    snprintf(base, sizeof base, "/tmp/kfeval-test-XXXXXX");
    if (!mkdtemp(base)) {
        perror("mkdtemp");
        return 1;
    }
    if (kf_compiler_host_create(&hcc, NULL) != KF_OK) {
        printf("cannot create the host compiler\n");
        return 1;
    }
    test_helpers();
    test_compare();
    test_source_check();
    test_job_load();
    test_relu_host();
    test_shared_case_file();
    test_inplace();
    test_strided_softmax();
    test_cuda();
    hcc.destroy(hcc.self);
    rm_rf(base);
    return check_done("test_eval");
}
