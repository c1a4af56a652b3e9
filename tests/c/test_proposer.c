/* The builtin proposer and the sabotage wrapper (forge/propose/proposer.h).
 *
 * Builtin, on a host softmax f32 signature: one starting point per applicable template at its
 * first knob values; every child changes exactly one knob of its parent; no combination twice;
 * proposing below every node until each says KF_ERR_NOT_FOUND covers the whole knob grid; the
 * same seed gives the same proposals and other seeds other orders; no template -> NOT_FOUND.
 * Sabotage: exactly every Nth candidate is rewritten, cycling crash/hang/oob, the rest pass
 * through untouched; rewritten sources pass the static source check, and host ones still compile
 * (also for a kernel whose parameter list is a macro); CUDA sources get the damage at the start of
 * the kernel body (and compile with NVRTC when it is there). */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/c/check.h"
#include "tests/c/job_sig_build.h"
#include "tests/c/nvrtc_find.h"
#include "compile/compiler.h"
#include "forge/eval/eval.h"
#include "forge/search/mcts.h"
#include "forge/propose/proposer.h"

/* ---- signatures (as tests/c/test_templates_host.c builds them) ---- */

static kf_job_tensor t32(int ndim, const int64_t *sizes)
{
    kf_job_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = KF_F32;
    t.ndim = ndim;
    int64_t st = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        t.sizes[d] = sizes[d];
        t.strides[d] = st;
        st *= sizes[d];
    }
    t.align = 16;
    return t;
}

static kf_job_sig softmax_sig(int dtype)
{
    kf_job_sig s;
    memset(&s, 0, sizeof s);
    snprintf(s.op, sizeof s.op, "aten::_softmax");
    s.n_in = s.n_out = 1;
    s.in[0] = t32(2, (int64_t[]){8, 37});
    s.in[0].dtype = dtype;
    s.out[0] = s.in[0];
    sig_add_scalar(&s, "dim", 'i')->i = -1;
    sig_add_scalar(&s, "half_to_float", 'b')->i = 0;
    return s;
}

/* native_layer_norm(x[6,37], [37], weight, bias, eps): its kernel is `kf_kernel(KF_PARAMS)` */
static kf_job_sig layer_norm_sig(void)
{
    kf_job_sig s;
    memset(&s, 0, sizeof s);
    snprintf(s.op, sizeof s.op, "aten::native_layer_norm");
    s.in[s.n_in++] = t32(2, (int64_t[]){6, 37});
    s.in[s.n_in++] = t32(1, (int64_t[]){37});
    s.in[s.n_in++] = t32(1, (int64_t[]){37});
    kf_job_scalar *ns = sig_add_scalar(&s, "normalized_shape", 'l');
    ns->n = 1;
    ns->v[0] = 37;
    sig_add_scalar(&s, "eps", 'd')->d = 1e-5;
    s.n_out = 3;
    s.out[0] = s.in[0];
    s.out[1] = s.out[2] = t32(2, (int64_t[]){6, 1});
    return s;
}

/* ---- what the proposals look like ---- */

typedef struct prop_rec {
    int id, parent;
    char tmpl[64];
    int knobs[16], n_knobs;
    char change[160];
    char *source;
} prop_rec;

static const kf_template *find_template(const char *name)
{
    for (int i = 0; kf_builtin_templates[i]; i++)
        if (!strcmp(kf_builtin_templates[i]->name, name)) return kf_builtin_templates[i];
    return NULL;
}

/* The template and knob values from meta_json, in the template's knob order. */
static int parse_meta(const char *meta, prop_rec *r, char *mutated, size_t cap)
{
    cJSON *o = cJSON_Parse(meta);
    int ok = 0;
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "template");
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(o, "knobs");
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, "mutated");
    const kf_template *tp = cJSON_IsString(t) ? find_template(t->valuestring) : NULL;
    if (tp && cJSON_IsObject(k) && cJSON_GetArraySize(k) == tp->n_knobs) {
        snprintf(r->tmpl, sizeof r->tmpl, "%s", tp->name);
        r->n_knobs = tp->n_knobs;
        ok = 1;
        for (int i = 0; i < tp->n_knobs; i++) {
            const cJSON *v = cJSON_GetObjectItemCaseSensitive(k, tp->knobs[i].name);
            if (!cJSON_IsNumber(v)) ok = 0;
            else r->knobs[i] = v->valueint;
        }
    }
    snprintf(mutated, cap, "%s", cJSON_IsString(m) ? m->valuestring : "");
    cJSON_Delete(o);
    return ok;
}

static int knob_index(const kf_template *t, int k, int value)
{
    for (int i = 0; i < t->knobs[k].n_values; i++)
        if (t->knobs[k].values[i] == value) return i;
    return -1;
}

/* Propose below every node, breadth first, until each says NOT_FOUND. Records every proposal
 * (recs[id]); returns how many. Checks the shape of every candidate on the way. */
static int walk_all(uint64_t seed, prop_rec *recs, int cap, int check)
{
    kf_job_sig sig = softmax_sig(KF_F32);
    kf_proposer_i p;
    char err[512];
    if (!CHECK_EQ_INT(kf_proposer_builtin_create(&sig, "host", seed, &p, err, sizeof err), KF_OK))
        return 0;
    CHECK_STR(p.name, "builtin");
    int n = 0;
    for (int q = -1; q < n; q++) { /* q = -1: the root */
        int parent = q < 0 ? KF_MCTS_ROOT : q;
        for (;;) {
            kf_candidate c;
            memset(&c, 0x5a, sizeof c); /* propose must not read what was there */
            kf_status st = p.propose(p.self, parent, n, &c, err, sizeof err);
            if (st != KF_OK) {
                if (check) {
                    CHECK_EQ_INT(st, KF_ERR_NOT_FOUND);
                    CHECK(err[0] != 0);
                }
                kf_candidate_clear(&c);
                break;
            }
            if (n == cap) {
                kf_candidate_clear(&c);
                CHECK(!"more proposals than the grid holds");
                goto out;
            }
            prop_rec *r = &recs[n];
            memset(r, 0, sizeof *r);
            r->id = n, r->parent = parent;
            char mutated[64];
            int meta_ok = parse_meta(c.meta_json, r, mutated, sizeof mutated);
            snprintf(r->change, sizeof r->change, "%s", c.change);
            r->source = c.source;
            c.source = NULL;
            if (check) {
                CHECK(meta_ok);
                CHECK_STR(c.proposer, "builtin");
                CHECK_STR(c.backend, "host");
                CHECK_STR(c.origin, r->tmpl);
                kf_launch l;
                CHECK_EQ_INT(kf_launch_parse(c.launch_json, &l, err, sizeof err), KF_OK);
                CHECK_CONTAINS(r->source, "kf_kernel");
                const kf_template *t = find_template(r->tmpl);
                if (parent == KF_MCTS_ROOT) {
                    /* each template at its first values, then random vectors not seen yet */
                    char want[160], want_random[160];
                    snprintf(want, sizeof want, "start: %s", r->tmpl);
                    snprintf(want_random, sizeof want_random, "start: %s (random knobs)", r->tmpl);
                    CHECK_STR(mutated, "");
                    if (strcmp(c.change, want_random) != 0) {
                        CHECK_STR(c.change, want);
                        for (int k = 0; t && k < t->n_knobs; k++)
                            CHECK_EQ_INT(r->knobs[k], t->knobs[k].values[0]);
                    }
                } else if (t) {
                    /* exactly one knob differs from the parent, and the change line says which */
                    const prop_rec *pr = &recs[parent];
                    CHECK_STR(r->tmpl, pr->tmpl);
                    int diff = 0, dk = -1;
                    for (int k = 0; k < t->n_knobs; k++)
                        if (r->knobs[k] != pr->knobs[k]) diff++, dk = k;
                    CHECK_EQ_INT(diff, 1);
                    if (dk >= 0) {
                        char want[160];
                        snprintf(want, sizeof want, "%s %d -> %d", t->knobs[dk].name,
                                 pr->knobs[dk], r->knobs[dk]);
                        CHECK_STR(c.change, want);
                        CHECK_STR(mutated, t->knobs[dk].name);
                    }
                }
            }
            kf_candidate_clear(&c);
            n++;
        }
    }
out:
    p.destroy(p.self);
    return n;
}

static void free_recs(prop_rec *recs, int n)
{
    for (int i = 0; i < n; i++) free(recs[i].source);
}

static void test_builtin_walk(void)
{
    /* what the table offers for this signature */
    kf_job_sig sig = softmax_sig(KF_F32);
    int n_expect_starts = 0, grid = 0;
    const char *first_names[8];
    for (int i = 0; kf_builtin_templates[i]; i++) {
        const kf_template *t = kf_builtin_templates[i];
        if (strcmp(t->backend, "host") || !t->applies(&sig)) continue;
        if (n_expect_starts < 8) first_names[n_expect_starts] = t->name;
        n_expect_starts++;
        int combos = 1;
        for (int k = 0; k < t->n_knobs; k++) combos *= t->knobs[k].n_values;
        grid += combos;
    }
    CHECK(n_expect_starts >= 1);
    CHECK(find_template("host_row_softmax") != NULL);

    static prop_rec recs[4096];
    int n = walk_all(11, recs, 4096, 1);
    /* every combination of every applicable template, each once */
    CHECK_EQ_INT(n, grid);
    int starts = 0, dups = 0;
    for (int i = 0; i < n; i++) {
        if (recs[i].parent == KF_MCTS_ROOT && !strstr(recs[i].change, "(random knobs)")) {
            if (starts < 8) CHECK_STR(recs[i].tmpl, first_names[starts]);
            starts++;
        }
        for (int j = 0; j < i; j++)
            if (!strcmp(recs[i].tmpl, recs[j].tmpl) &&
                !memcmp(recs[i].knobs, recs[j].knobs, sizeof recs[i].knobs))
                dups++;
    }
    CHECK_EQ_INT(starts, n_expect_starts);
    CHECK_EQ_INT(dups, 0);

    /* neighbouring values first: below a start, every knob moves one index step before any
     * knob jumps two */
    const kf_template *t = find_template(recs[0].tmpl);
    int saw_jump = 0, step_after_jump = 0;
    for (int i = 0; i < n && t; i++) {
        if (recs[i].parent != 0) continue;
        for (int k = 0; k < t->n_knobs; k++) {
            int d = abs(knob_index(t, k, recs[i].knobs[k]) - knob_index(t, k, recs[0].knobs[k]));
            if (d >= 2) saw_jump = 1;
            if (d == 1 && saw_jump) step_after_jump = 1;
        }
    }
    CHECK(!step_after_jump);
    free_recs(recs, n);
}

static void test_builtin_determinism(void)
{
    static prop_rec a[4096], b[4096], c[4096];
    int na = walk_all(5, a, 4096, 0), nb = walk_all(5, b, 4096, 0);
    CHECK_EQ_INT(na, nb);
    int same = na == nb;
    for (int i = 0; same && i < na; i++)
        same = a[i].parent == b[i].parent && !strcmp(a[i].change, b[i].change) &&
               !strcmp(a[i].source, b[i].source);
    CHECK(same);
    /* another seed walks the same grid in another order */
    int differs = 0;
    for (uint64_t seed = 6; seed < 12 && !differs; seed++) {
        int nc = walk_all(seed, c, 4096, 0);
        CHECK_EQ_INT(nc, na);
        for (int i = 0; i < nc && i < na; i++)
            if (strcmp(a[i].source, c[i].source) || a[i].parent != c[i].parent) differs = 1;
        free_recs(c, nc);
    }
    CHECK(differs);
    free_recs(a, na);
    free_recs(b, nb);
}

static void test_builtin_errors(void)
{
    char err[512] = "";
    kf_proposer_i p;
    kf_job_sig sig = softmax_sig(KF_F64); /* no host template computes double softmax */
    CHECK_EQ_INT(kf_proposer_builtin_create(&sig, "host", 1, &p, err, sizeof err),
                 KF_ERR_NOT_FOUND);
    CHECK_CONTAINS(err, "no host template applies");
    CHECK_CONTAINS(err, "aten::_softmax");
    err[0] = 0;
    sig = softmax_sig(KF_F32);
    snprintf(sig.op, sizeof sig.op, "aten::frobnicate");
    CHECK_EQ_INT(kf_proposer_builtin_create(&sig, "host", 1, &p, err, sizeof err),
                 KF_ERR_NOT_FOUND);
    CHECK(err[0] != 0);
    CHECK_EQ_INT(kf_proposer_builtin_create(NULL, "host", 1, &p, err, sizeof err), KF_ERR_INVALID);

    sig = softmax_sig(KF_F32);
    CHECK_EQ_INT(kf_proposer_builtin_create(&sig, "host", 1, &p, err, sizeof err), KF_OK);
    kf_candidate c;
    /* a parent it never proposed */
    CHECK_EQ_INT(p.propose(p.self, 3, 0, &c, err, sizeof err), KF_ERR_INVALID);
    CHECK_CONTAINS(err, "node 3");
    CHECK_EQ_INT(p.propose(p.self, KF_MCTS_ROOT, -4, &c, err, sizeof err), KF_ERR_INVALID);
    /* child ids far apart are fine (per-node state grows) */
    CHECK_EQ_INT(p.propose(p.self, KF_MCTS_ROOT, 5000, &c, err, sizeof err), KF_OK);
    kf_candidate_clear(&c);
    CHECK_EQ_INT(p.propose(p.self, 5000, 70000, &c, err, sizeof err), KF_OK);
    kf_candidate_clear(&c);
    kf_candidate_clear(NULL);
    p.feedback(p.self, 70000, "wrong", 0, "case 0: mismatch");
    p.destroy(p.self);
}

/* ---- sabotage ---- */

static kf_compiler_i host_cc;
static int have_host_cc;

static int host_compiles(const char *src, const char *launch_json)
{
    if (!have_host_cc) return 1;
    kf_launch l;
    char err[256];
    if (kf_launch_parse(launch_json, &l, err, sizeof err) != KF_OK) return 0;
    void *blob = NULL;
    size_t len = 0;
    char *log = NULL;
    kf_status st = host_cc.compile(host_cc.self, src, &l, NULL, &blob, &len, &log);
    if (st != KF_OK) printf("     compile log:\n%s\n--- source ---\n%s\n", log ? log : "", src);
    free(blob);
    free(log);
    return st == KF_OK;
}

static void test_sabotage_every_nth(void)
{
    kf_job_sig sig = softmax_sig(KF_F32);
    char err[512];
    kf_proposer_i ref, inner, sab;
    CHECK_EQ_INT(kf_proposer_builtin_create(&sig, "host", 3, &ref, err, sizeof err), KF_OK);
    CHECK_EQ_INT(kf_proposer_builtin_create(&sig, "host", 3, &inner, err, sizeof err), KF_OK);
    CHECK_EQ_INT(kf_proposer_sabotage_create(inner, "crash,hang,oob", 3, &sab, err, sizeof err),
                 KF_OK);
    CHECK_STR(sab.name, "sabotage(builtin)");

    static const char *const modes[] = {"crash", "hang", "oob"};
    static const char *const marks[] = {"*(volatile int *)0 = 1;", "while (kf_spin) {}",
                                        "- 1) = 0x5a;"};
    int n = 0, sabotaged = 0, mismatches = 0, compiled = 0;
    for (int q = -1; q < n; q++) {
        int parent = q < 0 ? KF_MCTS_ROOT : q;
        for (;;) {
            kf_candidate a, b;
            kf_status sa = ref.propose(ref.self, parent, n, &a, err, sizeof err);
            kf_status sb = sab.propose(sab.self, parent, n, &b, err, sizeof err);
            CHECK_EQ_INT(sa, sb);
            if (sa != KF_OK || sb != KF_OK) {
                kf_candidate_clear(&a);
                kf_candidate_clear(&b);
                break;
            }
            n++;
            sab.feedback(sab.self, n - 1, "verified", 1.0, "");
            CHECK_STR(b.launch_json, a.launch_json);
            CHECK_STR(b.origin, a.origin);
            if (n % 3) {
                if (strcmp(a.source, b.source) || strcmp(a.change, b.change) ||
                    strcmp(a.meta_json, b.meta_json))
                    mismatches++;
            } else {
                const char *mode = modes[sabotaged % 3];
                char want[200];
                snprintf(want, sizeof want, "sabotaged: %s (%s)", mode, a.change);
                CHECK_STR(b.change, want);
                CHECK(strcmp(a.source, b.source) != 0);
                CHECK_CONTAINS(b.source, marks[sabotaged % 3]);
                if (sabotaged % 3 == 2) CHECK_CONTAINS(b.source, "+ 16777216L) = 0x5a;");
                CHECK_CONTAINS(b.source, "kf_sabotaged_entry(kf_a0, kf_a1, kf_i0);"); /* softmax: rows at launch */
                cJSON *m = cJSON_Parse(b.meta_json);
                const cJSON *s = cJSON_GetObjectItemCaseSensitive(m, "sabotage");
                CHECK(cJSON_IsString(s) && !strcmp(s->valuestring, mode));
                CHECK(cJSON_GetObjectItemCaseSensitive(m, "knobs") != NULL);
                cJSON_Delete(m);
                /* it passes the static source check, so it reaches the evaluator ... */
                char why[256];
                if (!CHECK(kf_source_check(b.source, why, sizeof why))) printf("     %s\n", why);
                /* ... and still builds: it fails when run, not when compiled */
                if (sabotaged < 6) {
                    CHECK(host_compiles(b.source, b.launch_json));
                    compiled++;
                }
                sabotaged++;
            }
            kf_candidate_clear(&a);
            kf_candidate_clear(&b);
        }
    }
    CHECK(n >= 12);
    CHECK_EQ_INT(sabotaged, n / 3);
    CHECK_EQ_INT(mismatches, 0);
    printf("sabotage: %d of %d candidates rewritten, %d compiled%s\n", sabotaged, n, compiled,
           have_host_cc ? "" : " (SKIP: no host compiler)");
    ref.destroy(ref.self);
    sab.destroy(sab.self); /* destroys the inner proposer too (ASan: no leak, no double free) */
}

static void test_sabotage_macro_params(void)
{
    /* host_layer_norm declares `void kf_kernel(KF_PARAMS)`: the wrapper needs no names */
    kf_job_sig sig = layer_norm_sig();
    char err[512];
    kf_proposer_i inner, sab;
    if (!CHECK_EQ_INT(kf_proposer_builtin_create(&sig, "host", 1, &inner, err, sizeof err),
                      KF_OK)) {
        printf("     %s\n", err);
        return;
    }
    CHECK_EQ_INT(kf_proposer_sabotage_create(inner, " oob , crash", 1, &sab, err, sizeof err),
                 KF_OK);
    kf_candidate c;
    CHECK_EQ_INT(sab.propose(sab.self, KF_MCTS_ROOT, 0, &c, err, sizeof err), KF_OK);
    CHECK_CONTAINS(c.change, "sabotaged: oob (start: ");
    CHECK_CONTAINS(c.source, "kf_sabotaged_entry(KF_PARAMS)");
    /* the first output is argument 3 (after x, weight, bias); the row count of the shape
     * family comes last, passed on */
    CHECK_CONTAINS(c.source, "void kf_kernel(const void *kf_a0, const void *kf_a1, "
                             "const void *kf_a2, void *kf_a3, void *kf_a4, void *kf_a5, "
                             "long long kf_i0)");
    CHECK_CONTAINS(c.source, "kf_sabotaged_entry(kf_a0, kf_a1, kf_a2, kf_a3, kf_a4, kf_a5, kf_i0);");
    CHECK_CONTAINS(c.source, "(volatile unsigned char *)kf_a3 - 1) = 0x5a;");
    CHECK(host_compiles(c.source, c.launch_json));
    kf_candidate_clear(&c);
    CHECK_EQ_INT(sab.propose(sab.self, 0, 1, &c, err, sizeof err), KF_OK);
    CHECK_CONTAINS(c.change, "sabotaged: crash (");
    CHECK(host_compiles(c.source, c.launch_json));
    kf_candidate_clear(&c);
    sab.destroy(sab.self);
}

/* A fake inner proposer that hands out one fixed CUDA candidate and counts feedback. */
typedef struct fake_cuda {
    const char *source;
    int feedback_calls;
    int destroyed;
} fake_cuda;

static kf_status fake_propose(void *self, int parent, int child_id, kf_candidate *out, char *err,
                              size_t errcap)
{
    fake_cuda *f = self;
    (void)parent, (void)child_id, (void)err, (void)errcap;
    memset(out, 0, sizeof *out);
    out->source = strdup(f->source);
    out->launch_json = strdup("{\"entry\":\"kf_kernel\",\"grid\":[4,1,1],\"block\":[256,1,1],"
                              "\"smem\":0,\"args\":[\"const float*\",\"__half*\"]}");
    out->meta_json = NULL; /* the wrapper makes one */
    snprintf(out->backend, sizeof out->backend, "nvrtc");
    snprintf(out->proposer, sizeof out->proposer, "fake");
    snprintf(out->change, sizeof out->change, "by hand");
    return KF_OK;
}
static void fake_feedback(void *self, int id, const char *status, double latency_us,
                          const char *error)
{
    (void)id, (void)status, (void)latency_us, (void)error;
    ((fake_cuda *)self)->feedback_calls++;
}
static void fake_destroy(void *self) { ((fake_cuda *)self)->destroyed++; }

static const char cuda_src[] =
    "#include <cuda_fp16.h>\n"
    "#define KF_N 1024\n"
    "/* a comment that mentions kf_kernel(x) { not here } */\n"
    "extern \"C\" __global__ void kf_kernel(const float *, __half *);\n"
    "extern \"C\" __global__ void __launch_bounds__(256)\n"
    "kf_kernel(const float* __restrict__ x, __half* __restrict__ y /* out */)\n"
    "{\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < KF_N) y[i] = __float2half(x[i]);\n"
    "}\n";

static void test_sabotage_cuda(void)
{
    fake_cuda f = {cuda_src, 0, 0};
    kf_proposer_i inner = {"fake", fake_propose, fake_feedback, fake_destroy, &f}, sab;
    char err[512];
    CHECK_EQ_INT(kf_proposer_sabotage_create(inner, "crash,hang,oob", 1, &sab, err, sizeof err),
                 KF_OK);
    CHECK_STR(sab.name, "sabotage(fake)");

    kf_compiler_i nv;
    int have_nvrtc = kf_compiler_nvrtc_create(&nv, NULL, nvrtc_find_include(), err, sizeof err) ==
                     KF_OK;
    if (!have_nvrtc) printf("SKIP compiling sabotaged CUDA: %s\n", err);

    static const char *const marks[] = {"__trap();", "while (kf_spin) {}",
                                        "*((volatile unsigned char *)y - 1) = 0x5a;"};
    for (int i = 0; i < 3; i++) {
        kf_candidate c;
        if (!CHECK_EQ_INT(sab.propose(sab.self, KF_MCTS_ROOT, i, &c, err, sizeof err), KF_OK)) {
            printf("     %s\n", err);
            continue;
        }
        /* the damage sits at the start of the definition's body, not in the comment or the
         * declaration */
        const char *def = strstr(c.source, "kf_kernel(const float* __restrict__ x");
        const char *mark = strstr(c.source, marks[i]);
        const char *body = strstr(c.source, "int i = blockIdx.x");
        CHECK(def && mark && body && def < mark && mark < body);
        CHECK_CONTAINS(c.source, "extern \"C\" __global__ void kf_kernel(const float *, __half *);");
        if (i == 2) CHECK_CONTAINS(c.source, "+ 8388608L) = 0x5a;"); /* 2-byte elements */
        CHECK(c.meta_json && strstr(c.meta_json, "\"sabotage\""));
        char why[256];
        if (!CHECK(kf_source_check(c.source, why, sizeof why))) printf("     %s\n", why);
        if (have_nvrtc) {
            kf_launch l;
            CHECK_EQ_INT(kf_launch_parse(c.launch_json, &l, err, sizeof err), KF_OK);
            void *blob = NULL;
            size_t len = 0;
            char *log = NULL;
            kf_status st = nv.compile(nv.self, c.source, &l, "sm_90", &blob, &len, &log);
            if (!CHECK_EQ_INT(st, KF_OK)) printf("     log: %s\n%s\n", log ? log : "", c.source);
            free(blob);
            free(log);
        }
        kf_candidate_clear(&c);
        sab.feedback(sab.self, i, "crash", 0, "signal 11");
    }
    CHECK_EQ_INT(f.feedback_calls, 3);
    if (have_nvrtc) nv.destroy(nv.self);
    sab.destroy(sab.self);
    CHECK_EQ_INT(f.destroyed, 1);

    /* out of bounds needs the output's name: a macro parameter list cannot give it */
    f.source = "extern \"C\" __global__ void kf_kernel(KF_PARAMS) { }\n";
    f.destroyed = 0;
    CHECK_EQ_INT(kf_proposer_sabotage_create(inner, "oob", 1, &sab, err, sizeof err), KF_OK);
    kf_candidate c;
    CHECK_EQ_INT(sab.propose(sab.self, KF_MCTS_ROOT, 0, &c, err, sizeof err), KF_ERR_UNSUPPORTED);
    CHECK_CONTAINS(err, "argument 1");
    CHECK(c.source == NULL && c.launch_json == NULL);
    sab.destroy(sab.self);
    CHECK_EQ_INT(f.destroyed, 1);
}

static void test_sabotage_create_errors(void)
{
    fake_cuda f = {cuda_src, 0, 0};
    kf_proposer_i inner = {"fake", fake_propose, fake_feedback, fake_destroy, &f}, sab;
    char err[512];
    CHECK_EQ_INT(kf_proposer_sabotage_create(inner, "crash,explode", 2, &sab, err, sizeof err),
                 KF_ERR_INVALID);
    CHECK_CONTAINS(err, "explode");
    CHECK_EQ_INT(kf_proposer_sabotage_create(inner, "", 2, &sab, err, sizeof err), KF_ERR_INVALID);
    CHECK_EQ_INT(kf_proposer_sabotage_create(inner, "hang", 0, &sab, err, sizeof err),
                 KF_ERR_INVALID);
    CHECK_EQ_INT(f.destroyed, 0); /* on failure the inner proposer stays the caller's */
}

/* A template's start() picks the first proposal's knobs from the shape: few long f32 rows start
 * staged, with 16-byte vectors and an 8-block cluster per row; short rows with 64 threads each. */
static void test_builtin_start_guess(void)
{
    struct {
        int64_t rows, cols;
        int want_rows, want_split;
    } cases[] = {{32, 262144, 1, 8}, {4096, 1024, 4, 1}};
    for (int c = 0; c < 2; c++) {
        kf_job_sig sig = softmax_sig(KF_F32);
        sig.in[0] = t32(2, (int64_t[]){cases[c].rows, cases[c].cols});
        sig.out[0] = sig.in[0];
        kf_proposer_i p;
        char err[256], mutated[64];
        if (!CHECK_EQ_INT(kf_proposer_builtin_create(&sig, "nvrtc", 1, &p, err, sizeof err), KF_OK))
            return;
        kf_candidate cand;
        prop_rec r;
        memset(&r, 0, sizeof r);
        if (CHECK_EQ_INT(p.propose(p.self, KF_MCTS_ROOT, 0, &cand, err, sizeof err), KF_OK)) {
            CHECK(parse_meta(cand.meta_json, &r, mutated, sizeof mutated));
            CHECK_STR(r.tmpl, "cuda_row_softmax");
            /* threads, rows, vec, strategy, split */
            CHECK_EQ_INT(r.knobs[0], 256);
            CHECK_EQ_INT(r.knobs[1], cases[c].want_rows);
            CHECK_EQ_INT(r.knobs[2], 8);
            CHECK_EQ_INT(r.knobs[3], 3);
            CHECK_EQ_INT(r.knobs[4], cases[c].want_split);
            kf_candidate_clear(&cand);
        }
        p.destroy(p.self);
    }
}

int main(void)
{
    have_host_cc = kf_compiler_host_create(&host_cc, getenv("CC")) == KF_OK;
    if (!have_host_cc) printf("SKIP compiling sabotaged host sources: no host compiler\n");
    test_builtin_walk();
    test_builtin_determinism();
    test_builtin_errors();
    test_builtin_start_guess();
    test_sabotage_every_nth();
    test_sabotage_macro_params();
    test_sabotage_cuda();
    test_sabotage_create_errors();
    if (have_host_cc) host_cc.destroy(host_cc.self);
    return check_done("test_proposer");
}
