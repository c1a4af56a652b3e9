/* The CUDA cat template (forge/templates/cuda_cat.c): cuda_cat, and the analysis it shares with
 * host_cat (forge/templates/cat.c).
 *
 * Without NVRTC: applies() on signatures it must accept and on ones it must refuse (type
 * promotion, mismatched sizes, a dim out of range, too many tensors for a launch, an empty
 * output, an output with gaps, out=), the start hook, and every knob combination rendered on
 * every case, its launch record parsed and checked against the effective values the source
 * states (vector width within 16 bytes and the lengths, blocks per part or the grid-stride grid,
 * 64-bit offsets exactly where 32 bits do not reach).
 * With NVRTC (no GPU needed): a deterministic spread of combinations per case, covering every
 * value of every knob plus the all-first-values vector and the start hook's, compiled for sm_90.
 * With a GPU (the compiler's arch() answers): each of those kernels run on random bytes with the
 * output poisoned to 0xff bytes, compared bit for bit with torch.cat's rules written out
 * (tests/c/cat_ref.h), the inputs checked unchanged.
 *
 * Cases: the benchmark models' cats (Gemma 4's KV cache: a legacy empty input and a transposed
 * view; RoPE's rotate_half along the last dim with a sliced input; MMDiT's joint attention along
 * dim 2, transposed views and contiguous), small odd lengths (no vectors), a zero-length input,
 * transposed inputs (element gathers), channels_last along C (the cat dim innermost in memory)
 * and along N, an expanded input (stride 0), four parts, integer, bool and f64 dtypes, negative
 * dims, a one-element output, 2-byte alignment, and (render and compile only) 2^32 elements for
 * 64-bit offsets and 2^45 one-byte elements where blocks per part no longer fit grid.x. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/c/cat_ref.h"
#include "tests/c/check.h"
#include "tests/c/cuda_template_test.h"
#include "tests/c/job_sig_build.h"
#include "common/cuda_driver.h"
#include "compile/compiler.h"
#include "forge/job/job.h"
#include "forge/templates/template.h"

#define MAX_CASES 32

#define ST(...) (int64_t[]){__VA_ARGS__}

static int es_of(int dt)
{
    switch (dt) {
    case KF_F64: case KF_I64: return 8;
    case KF_F32: case KF_I32: return 4;
    case KF_F16: case KF_BF16: case KF_I16: return 2;
    default: return 1;
    }
}

static const char *launch_type(int dt)
{
    switch (dt) {
    case KF_F32: return "float";
    case KF_F16: return "__half";
    case KF_BF16: return "__nv_bfloat16";
    case KF_F64: return "double";
    case KF_I8: return "int8_t";
    case KF_U8: return "uint8_t";
    case KF_I16: return "int16_t";
    case KF_I32: return "int32_t";
    case KF_I64: return "int64_t";
    default: return "bool";
    }
}

/* ---- the cases ---- */

typedef struct ccase {
    char label[200];
    kf_job_sig sig;
    int run; /* 0: render and compile only (too big for the reference) */
} ccase;

static const kf_template *T;
static ccase cases[MAX_CASES];
static int n_cases;

static void add_case(kf_job_sig sig, int run, const char *note)
{
    if (!CHECK(n_cases < MAX_CASES)) return;
    ccase *c = &cases[n_cases++];
    c->sig = sig;
    c->run = run;
    int p = snprintf(c->label, sizeof c->label, "cat %s", kf_dtype_name(sig.out[0].dtype));
    for (int i = 0; i < sig.n_in && p < (int)sizeof c->label; i++) {
        p += snprintf(c->label + p, sizeof c->label - (size_t)p, "%s[", i ? " + " : " ");
        p = label_sizes(c->label, sizeof c->label, p, &sig.in[i]);
        if (p < (int)sizeof c->label) p += snprintf(c->label + p, sizeof c->label - (size_t)p, "]");
    }
    if (p < (int)sizeof c->label)
        snprintf(c->label + p, sizeof c->label - (size_t)p, " dim %lld %s",
                 (long long)kf_job_scalar_find(&sig, "dim")->i, note);
    check_serves(T, &sig, c->label); /* exactly this nvrtc template serves it */
}

static void make_cases(void)
{
    kf_job_tensor x[4];
    kf_job_sig s;
    /* Gemma 4's KV cache: a legacy empty tensor and a [4,4,1024,256] transposed view */
    x[0] = sig_tensor(KF_BF16, SZ(0), 0, 16);
    x[1] = sig_tensor_strided(KF_BF16, SZ(4, 4, 1024, 256), ST(1048576, 256, 1024, 1), 16);
    add_case(sig_cat(2, x, -2), 1, "gemma kv cache");
    /* Gemma 4's rotate_half: [x2, x1] along the last dim, one a slice of a wider tensor */
    x[0] = sig_tensor(KF_BF16, SZ(4, 1024, 8, 128), 0, 16);
    x[1] = sig_tensor_strided(KF_BF16, SZ(4, 1024, 8, 128), ST(2097152, 2048, 256, 1), 16);
    add_case(sig_cat(2, x, -1), 1, "gemma rope");
    /* MMDiT's joint attention: image and text tokens along dim 2, transposed head views */
    x[0] = sig_tensor_strided(KF_BF16, SZ(2, 24, 4096, 64), ST(6291456, 64, 1536, 1), 16);
    x[1] = sig_tensor_strided(KF_BF16, SZ(2, 24, 333, 64), ST(511488, 64, 1536, 1), 16);
    add_case(sig_cat(2, x, 2), 1, "mmdit");
    x[0] = sig_tensor(KF_BF16, SZ(2, 24, 4096, 64), 0, 16);
    x[1] = sig_tensor(KF_BF16, SZ(2, 24, 333, 64), 0, 16);
    add_case(sig_cat(2, x, 2), 1, "mmdit contiguous");
    /* odd lengths along the last dim: no vectors */
    x[0] = sig_tensor(KF_F32, SZ(3, 5), 0, 16);
    x[1] = sig_tensor(KF_F32, SZ(3, 7), 0, 16);
    add_case(sig_cat(2, x, 1), 1, "odd lengths");
    /* a zero-length input between two, the last only 2-byte aligned (gathers) */
    x[0] = sig_tensor(KF_F16, SZ(2, 3, 8), 0, 16);
    x[1] = sig_tensor(KF_F16, SZ(2, 0, 8), 0, 16);
    x[2] = sig_tensor(KF_F16, SZ(2, 5, 8), 0, 2);
    add_case(sig_cat(3, x, 1), 1, "zero length, align 2");
    /* transposed inputs: the output's inner dim is strided in every input */
    x[0] = sig_tensor_strided(KF_F32, SZ(2, 3), ST(1, 2), 16);
    x[1] = sig_tensor_strided(KF_F32, SZ(4, 3), ST(1, 4), 16);
    add_case(sig_cat(2, x, 0), 1, "transposed");
    x[0] = sig_tensor_strided(KF_BF16, SZ(40, 24), ST(1, 40), 16);
    x[1] = sig_tensor_strided(KF_BF16, SZ(40, 16), ST(1, 40), 16);
    add_case(sig_cat(2, x, 1), 1, "transposed, dim 1");
    /* channels_last along C: the cat dim innermost in memory, the output channels_last */
    x[0] = sig_tensor(KF_BF16, SZ(2, 8, 4, 5), 1, 16);
    x[1] = sig_tensor(KF_BF16, SZ(2, 16, 4, 5), 1, 16);
    s = sig_cat(2, x, 1);
    s.out[0] = sig_tensor(KF_BF16, SZ(2, 24, 4, 5), 1, 0);
    add_case(s, 1, "channels_last along C");
    x[0] = sig_tensor(KF_F16, SZ(2, 3, 4, 5), 1, 16);
    x[1] = sig_tensor(KF_F16, SZ(2, 2, 4, 5), 1, 16);
    s = sig_cat(2, x, 1);
    s.out[0] = sig_tensor(KF_F16, SZ(2, 5, 4, 5), 1, 0);
    add_case(s, 1, "channels_last along C, odd");
    x[0] = sig_tensor(KF_F32, SZ(1, 3, 4, 5), 1, 16);
    x[1] = sig_tensor(KF_F32, SZ(2, 3, 4, 5), 1, 16);
    s = sig_cat(2, x, 0);
    s.out[0] = sig_tensor(KF_F32, SZ(3, 3, 4, 5), 1, 0);
    add_case(s, 1, "channels_last along N");
    /* an expanded input: stride 0 */
    x[0] = sig_tensor_strided(KF_F32, SZ(3, 4), ST(0, 1), 16);
    x[1] = sig_tensor(KF_F32, SZ(2, 4), 0, 16);
    add_case(sig_cat(2, x, 0), 1, "expanded");
    x[0] = sig_tensor_strided(KF_BF16, SZ(6, 16), ST(1, 0), 16);
    x[1] = sig_tensor(KF_BF16, SZ(6, 8), 0, 16);
    add_case(sig_cat(2, x, 1), 1, "expanded along the cat dim");
    /* four parts along the last dim */
    x[0] = sig_tensor(KF_BF16, SZ(8, 16), 0, 16);
    x[1] = sig_tensor(KF_BF16, SZ(8, 8), 0, 16);
    x[2] = sig_tensor(KF_BF16, SZ(8, 24), 0, 16);
    x[3] = sig_tensor(KF_BF16, SZ(8, 8), 0, 16);
    add_case(sig_cat(4, x, -1), 1, "four parts");
    /* other dtypes: raw bits of 1, 4 and 8 bytes */
    x[0] = sig_tensor(KF_I64, SZ(5, 3), 0, 16);
    x[1] = sig_tensor(KF_I64, SZ(4, 3), 0, 16);
    add_case(sig_cat(2, x, 0), 1, "int64");
    x[0] = sig_tensor(KF_U8, SZ(37), 0, 16);
    x[1] = sig_tensor(KF_U8, SZ(11), 0, 1);
    add_case(sig_cat(2, x, 0), 1, "uint8 1-D");
    x[0] = sig_tensor(KF_BOOL, SZ(4, 32), 0, 16);
    x[1] = sig_tensor(KF_BOOL, SZ(4, 48), 0, 16);
    add_case(sig_cat(2, x, -1), 1, "bool");
    x[0] = sig_tensor(KF_I32, SZ(3, 2, 4), 0, 16);
    x[1] = sig_tensor(KF_I32, SZ(3, 2, 4), 0, 16);
    add_case(sig_cat(2, x, -3), 1, "int32, dim -3");
    x[0] = sig_tensor(KF_F64, SZ(6, 10), 0, 16);
    x[1] = sig_tensor(KF_F64, SZ(6, 6), 0, 16);
    add_case(sig_cat(2, x, 1), 1, "f64");
    x[0] = sig_tensor(KF_I8, SZ(6, 64), 0, 16);
    x[1] = sig_tensor(KF_I8, SZ(6, 32), 0, 16);
    add_case(sig_cat(2, x, 1), 1, "int8");
    /* one part: a legacy empty tensor and a strided [7,9]; a one-element output */
    x[0] = sig_tensor(KF_F32, SZ(0), 0, 16);
    x[1] = sig_tensor_strided(KF_F32, SZ(7, 9), ST(1, 7), 16);
    add_case(sig_cat(2, x, 0), 1, "one part, transposed");
    x[0] = sig_tensor(KF_F16, SZ(1, 1), 0, 16);
    x[1] = sig_tensor(KF_F16, SZ(1, 0), 0, 16);
    add_case(sig_cat(2, x, 1), 1, "one element");
    /* 2^32 elements: 64-bit offsets; 2^45 bytes: blocks per part overflow grid.x */
    x[0] = sig_tensor(KF_F16, SZ(2, 1073741824), 0, 16);
    x[1] = sig_tensor(KF_F16, SZ(2, 1073741824), 0, 16);
    add_case(sig_cat(2, x, 0), 0, "2^32 elements");
    x[0] = sig_tensor(KF_U8, SZ(3, (int64_t)1 << 42), 0, 16);
    x[1] = sig_tensor(KF_U8, SZ(5, (int64_t)1 << 42), 0, 16);
    add_case(sig_cat(2, x, 0), 0, "2^45 elements");
}

/* ---- the table, applies() and render refusals ---- */

static void test_table(void)
{
    T = check_template("cuda_cat", 4, 4, 1);
}

static void test_refusals(void)
{
    if (!T) return;
    kf_job_tensor x[KF_JOB_MAX_TENSORS];
    for (int i = 0; i < KF_JOB_MAX_TENSORS; i++) x[i] = sig_tensor(KF_BF16, SZ(4, 8), 0, 16);
    kf_job_sig s = sig_cat(2, x, 1), r;
    CHECK_EQ_INT(nvrtc_applies(&s), 1);
    r = s;
    r.in[1].dtype = KF_F16; /* type promotion */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.in[0].dtype = r.in[1].dtype = KF_F32; /* the output bf16: promoted */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.in[0].dtype = r.in[1].dtype = r.out[0].dtype = KF_C64;
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s; /* a legacy empty input of another dtype: eager promotes over it too */
    r.in[r.n_in++] = sig_tensor(KF_F32, SZ(0), 0, 16);
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r.in[r.n_in - 1].dtype = KF_BF16;
    CHECK_EQ_INT(nvrtc_applies(&r), 1);
    r = s;
    r.in[1].sizes[0] = 3; /* a size other than the cat dim's differs */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.out[0].sizes[1] = 17; /* the lengths do not add up */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    scalar_mut(&r, "dim")->i = 2; /* out of range */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    scalar_mut(&r, "dim")->i = -3;
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    scalar_mut(&r, "dim")->kind = 'n';
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.in[1] = sig_tensor(KF_BF16, SZ(4, 8, 1), 0, 16); /* another ndim */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.out_alias[0] = 1; /* out= */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.out[0].strides[0] = 32; /* gaps in the output */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.out[0].strides[0] = 8; /* overlapping output */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    snprintf(r.op, sizeof r.op, "aten::stack");
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    /* every input skipped, or an empty output */
    kf_job_tensor e[2] = {sig_tensor(KF_BF16, SZ(0), 0, 16), sig_tensor(KF_BF16, SZ(0), 0, 16)};
    r = sig_cat(2, e, 0);
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    e[1] = sig_tensor(KF_BF16, SZ(0, 8), 0, 16);
    r = sig_cat(2, e, 0);
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    /* the dim wraps against the first input that is not legacy empty */
    e[1] = sig_tensor(KF_BF16, SZ(3, 8), 0, 16);
    r = sig_cat(2, e, -1);
    CHECK_EQ_INT(nvrtc_applies(&r), 1);
    /* 15 inputs and the output are 16 kernel arguments: one more is too many */
    r = sig_cat(KF_LAUNCH_MAX_ARGS - 1, x, 0);
    CHECK_EQ_INT(nvrtc_applies(&r), 1);
    r = sig_cat(KF_LAUNCH_MAX_ARGS, x, 0);
    CHECK_EQ_INT(nvrtc_applies(&r), 0);
    r = s;
    r.in[0].strides[0] = -8; /* never from a job file; refused anyway */
    CHECK_EQ_INT(nvrtc_applies(&r), 0);

    /* render refuses what applies() refuses, and bad knob indices */
    char *src = (char *)1, *lj = (char *)1, err[256];
    int idx[MAX_KNOBS] = {0};
    r = s;
    r.in[1].dtype = KF_F16;
    CHECK_EQ_INT(T->render(&r, idx, &src, &lj, err, sizeof err), KF_ERR_UNSUPPORTED);
    CHECK(src == NULL && lj == NULL);
    idx[3] = T->knobs[3].n_values;
    CHECK_EQ_INT(T->render(&s, idx, &src, &lj, err, sizeof err), KF_ERR_INVALID);
    CHECK_CONTAINS(err, T->knobs[3].name);
    CHECK(src == NULL && lj == NULL);
}

/* ---- every knob combination renders a consistent candidate ---- */

static int pow2(long long v) { return v >= 1 && (v & (v - 1)) == 0; }

/* the wrapped dim and each input's length along it (0 for a skipped one) */
static int cat_dim_of(const kf_job_sig *s, int64_t *len)
{
    int64_t dim = kf_job_scalar_find(s, "dim")->i;
    int nd = s->out[0].ndim;
    if (dim < 0) dim += nd;
    for (int i = 0; i < s->n_in; i++)
        len[i] = cat_ref_skipped(&s->in[i]) ? 0 : s->in[i].sizes[dim];
    return (int)dim;
}

static long n_rendered;

static void check_render(const ccase *c, const int *idx, char **src_out, kf_launch *l_out)
{
    char *src, *lj;
    const kf_job_sig *s = &c->sig;
    kf_launch l;
    int ok = begin_render(T, s, idx, c->label, "kf_kernel(", &src, &lj, &l);
    if (ok < 0) return;
    n_rendered++;
    int dt = s->out[0].dtype, es = es_of(dt);
    char want_in[40], want_out[40];
    snprintf(want_in, sizeof want_in, "const %s*", launch_type(dt));
    snprintf(want_out, sizeof want_out, "%s*", launch_type(dt));
    ok = ok && !strcmp(l.entry, "kf_kernel") && l.n_args == s->n_in + 1 &&
         !strcmp(l.arg_types[s->n_in], want_out);
    for (int i = 0; ok && i < s->n_in; i++) ok = !strcmp(l.arg_types[i], want_in);
    ok = ok && l.grid[1] == 1 && l.grid[2] == 1 && l.block[1] == 1 && l.block[2] == 1 &&
         l.smem == 0 && l.grid[0] >= 1;
    /* the effective values the source states */
    long long vw = src_define(src, "KF_VW", 0), un = src_define(src, "KF_UN", 0);
    long long nt = src_define(src, "KF_NT", 0), split = src_define(src, "KF_SPLIT", -1);
    long long n = src_define(src, "KF_N", 0), nvec = src_define(src, "KF_NVEC", 0);
    int knob_vec = T->knobs[0].values[idx[0]], knob_split = T->knobs[3].values[idx[3]];
    int64_t len[KF_JOB_MAX_TENSORS];
    int dim = cat_dim_of(s, len);
    ok = ok && n == kf_job_tensor_numel(&s->out[0]) && pow2(vw) && vw <= knob_vec &&
         vw * es <= 16 && n % vw == 0 && nvec == n / vw &&
         un == T->knobs[1].values[idx[1]] && nt == T->knobs[2].values[idx[2]] &&
         l.block[0] == (unsigned)nt && (split == knob_split || (split == 0 && knob_split == 1));
    /* a vector never straddles two inputs: every length a multiple of it where the cat dim is
     * the output's innermost in memory */
    if (ok && s->out[0].strides[dim] == 1)
        for (int i = 0; i < s->n_in; i++) ok = ok && len[i] % vw == 0;
    long long tile = nt * un;
    if (ok && split) {
        long long blocks = 0;
        for (int i = 0; i < s->n_in; i++) {
            long long part = n / s->out[0].sizes[dim] * len[i] / vw;
            blocks += (part + tile - 1) / tile;
        }
        ok = blocks == (long long)l.grid[0];
    } else if (ok) {
        long long tiles = (nvec + tile - 1) / tile;
        ok = l.grid[0] == (unsigned)(tiles > INT32_MAX ? INT32_MAX : tiles);
        /* blocks per part are dropped only where they would not fit grid.x */
        if (knob_split) ok = ok && tiles > INT32_MAX / 2;
    }
    /* 64-bit offsets exactly where 32 bits do not reach */
    long long reach = n;
    for (int i = 0; i < s->n_in; i++)
        if (len[i] > 0 && cat_ref_span(&s->in[i]) > reach) reach = cat_ref_span(&s->in[i]);
    int wide = strstr(src, "typedef unsigned long long kf_idx;") != NULL;
    ok = ok && wide == (reach >= INT32_MAX);
    if (!CHECK(ok)) {
        print_knobs(T, c->label, idx);
        printf("     record %s; VW %lld split %lld\n", lj, vw, split);
    }
    keep_render(ok, src, lj, &l, src_out, l_out);
}

KF_DEFINE_TEST_RENDER_ALL()

/* The start hook: in range; the models' cats get 16-byte vectors and blocks per part. */
static void test_start(void)
{
    if (!T) return;
    for (int ci = 0; ci < n_cases; ci++) {
        int idx[MAX_KNOBS] = {0};
        T->start(&cases[ci].sig, idx);
        int ok = 1;
        for (int k = 0; k < T->n_knobs; k++)
            ok = ok && idx[k] >= 0 && idx[k] < T->knobs[k].n_values;
        if (!CHECK(ok)) printf("     start of %s out of range\n", cases[ci].label);
    }
    /* case: expected vector width at the start (the largest that fits), by_part */
    static const struct {
        int c, vw, split;
    } want[] = {{0, 8, 1},  {1, 8, 1},  {2, 8, 1},  {3, 8, 1},   {4, 1, 1},
                {5, 8, 1},  {7, 8, 1},  {8, 8, 1},  {9, 1, 1},   {13, 8, 1},
                {15, 1, 1}, {16, 16, 1}, {17, 4, 1}, {18, 2, 1}, {19, 16, 1},
                {20, 1, 1}, {21, 1, 1}, {23, 16, 0}};
    for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
        if (want[w].c >= n_cases) continue;
        const ccase *c = &cases[want[w].c];
        int idx[MAX_KNOBS] = {0};
        char *src = NULL, *lj = NULL, err[256];
        T->start(&c->sig, idx);
        if (CHECK_EQ_INT(T->render(&c->sig, idx, &src, &lj, err, sizeof err), KF_OK)) {
            if (!CHECK_EQ_INT(src_define(src, "KF_VW", 0), want[w].vw) ||
                !CHECK_EQ_INT(src_define(src, "KF_SPLIT", -1), want[w].split))
                printf("     %s\n", c->label);
        }
        free(src), free(lj);
    }
}

/* ---- compile a spread of combinations with NVRTC (cuda_template_test.h) ---- */

KF_DEFINE_TEST_JOBS()

/* ---- with a GPU ---- */

typedef struct gcase {
    int ok;
    size_t in_bytes[KF_JOB_MAX_TENSORS], out_bytes;
    unsigned char *host[KF_JOB_MAX_TENSORS]; /* the inputs as uploaded */
    unsigned long long base[KF_JOB_MAX_TENSORS + 1], dev[KF_JOB_MAX_TENSORS + 1];
    unsigned char *ref, *got;
} gcase;

static void gcase_free(gpu *G, gcase *g)
{
    for (int i = 0; i <= KF_JOB_MAX_TENSORS; i++)
        if (g->base[i]) G->d.mem_free(g->base[i]);
    for (int i = 0; i < KF_JOB_MAX_TENSORS; i++) free(g->host[i]);
    free(g->ref);
    free(g->got);
    memset(g, 0, sizeof *g);
}

/* Random bytes for every input's span (misaligned by its recorded alignment below 16), the
 * output's reference. */
static void gcase_make(gpu *G, const ccase *c, gcase *g)
{
    const kf_job_sig *s = &c->sig;
    int es = es_of(s->out[0].dtype);
    memset(g, 0, sizeof *g);
    g->out_bytes = (size_t)kf_job_tensor_numel(&s->out[0]) * (size_t)es;
    for (int i = 0; i <= s->n_in; i++) {
        size_t bytes = i < s->n_in ? (size_t)cat_ref_span(&s->in[i]) * (size_t)es : g->out_bytes;
        if (!CHECK_EQ_INT(G->d.mem_alloc(&g->base[i], bytes + 32), 0)) return;
        g->dev[i] = g->base[i];
        if (i == s->n_in) continue;
        g->in_bytes[i] = bytes;
        if (s->in[i].align > 0 && s->in[i].align < 16) g->dev[i] += (unsigned)s->in[i].align;
        g->host[i] = malloc(bytes + 1);
        for (size_t b = 0; b < bytes; b++) g->host[i][b] = (unsigned char)(urand() * 256.0);
        if (bytes) CHECK_EQ_INT(G->d.memcpy_htod(g->dev[i], g->host[i], bytes), 0);
    }
    g->ref = malloc(g->out_bytes);
    g->got = malloc(g->out_bytes);
    cat_ref(s, es, (const unsigned char *const *)g->host, g->ref);
    g->ok = 1;
}

static int gpu_run(gpu *G, kernel_job *j, gcase *g)
{
    const kf_job_sig *s = &cases[j->c].sig;
    char name[400], err[512];
    kernel_job_name(j, name, sizeof name);
    kf_compiled *k = NULL;
    if (!CHECK_EQ_INT(nv.load(nv.self, j->blob, j->len, &j->l, 0, &k, err, sizeof err), KF_OK)) {
        printf("     %s: load: %s\n", name, err);
        return 0;
    }
    void *ptrs[KF_JOB_MAX_TENSORS + 1];
    for (int i = 0; i <= s->n_in; i++) ptrs[i] = (void *)(uintptr_t)g->dev[i];
    CHECK_EQ_INT(G->d.memset_d8(g->dev[s->n_in], 0xff, g->out_bytes), 0);
    int good = 0;
    if (CHECK_EQ_INT(nv.launch(nv.self, k, ptrs, s->n_in + 1, NULL), 0) &&
        CHECK_EQ_INT(G->d.ctx_synchronize(), 0)) {
        CHECK_EQ_INT(G->d.memcpy_dtoh(g->got, g->dev[s->n_in], g->out_bytes), 0);
        long bad = 0;
        int es = es_of(s->out[0].dtype);
        for (size_t b = 0; b < g->out_bytes; b += (size_t)es) {
            if (!memcmp(g->got + b, g->ref + b, (size_t)es)) continue;
            if (bad++ == 0) printf("     %s: element %zu differs\n", name, b / (size_t)es);
        }
        for (int i = 0; i < s->n_in; i++) { /* the inputs unchanged */
            if (!g->in_bytes[i]) continue;
            unsigned char *back = malloc(g->in_bytes[i]);
            CHECK_EQ_INT(G->d.memcpy_dtoh(back, g->dev[i], g->in_bytes[i]), 0);
            bad += memcmp(back, g->host[i], g->in_bytes[i]) != 0;
            free(back);
        }
        good = CHECK_EQ_INT(bad, 0);
    }
    nv.unload(nv.self, k);
    return good;
}

KF_DEFINE_TEST_GPU(cases[ci].run)

int main(void)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    rng_state = 0x636174u;
    test_table();
    test_refusals();
    make_cases();
    test_start();
    test_render_all();
    if (T) nvrtc_levels(&nv, make_jobs, jobs, &n_jobs, test_gpu);
    free_jobs(jobs, n_jobs);
    return test_done(&t0, "templates_cuda_cat");
}
