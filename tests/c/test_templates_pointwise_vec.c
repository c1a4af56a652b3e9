/* cuda_pointwise's 128-bit accesses (knob vec, forge/templates/cuda_pointwise.c): which
 * signatures get them (every operand contiguous or a broadcast scalar, aligned to a whole
 * vector: 4 x f32, 8 x f16/bf16, 2 x f64), with how many elements per access; every knob
 * combination renders; the vector and the scalar renders compile with NVRTC (SKIP without it);
 * on a GPU, for each case, the vector kernel's output is bit-identical to the scalar kernel's
 * (the same element expression) and every byte of the output is written exactly once (a
 * poisoned output, the tail included). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tests/c/cuda_template_test.h"
#include "tests/c/job_sig_build.h"
#include "tests/c/nvcc_ptx.h"

typedef struct vcase {
    char label[64];
    kf_job_sig sig;
    int vw; /* the expected elements per access with vec=1 (1: the scalar loop) */
} vcase;

#define MAX_CASES 16
static vcase cases[MAX_CASES];
static int n_cases;
static const kf_template *T;

static void add(const char *label, kf_job_sig s, int vw)
{
    vcase *c = &cases[n_cases++];
    snprintf(c->label, sizeof c->label, "%s", label);
    c->sig = s;
    c->vw = vw;
}

#define TT(dt, align, ...) sig_tensor(dt, SZ(__VA_ARGS__), 0, align)

static void make_cases(void)
{
    kf_job_tensor a = TT(KF_F32, 16, 257, 1031), b = TT(KF_F32, 16, 257, 1031);
    add("f32 mul", sig_binary("aten::mul.Tensor", a, b, a, 0, 0), 4);
    add("f32 add alpha, in place", sig_binary("aten::add_.Tensor", a, b, a, 'd', 0.5), 4);
    /* a [1] tensor broadcast as a scalar: read per element */
    add("f32 mul scalar tensor",
        sig_binary("aten::mul.Tensor", a, TT(KF_F32, 16, 1), a, 0, 0), 4);
    kf_job_tensor h = TT(KF_BF16, 16, 64, 1003);
    add("bf16 rsqrt", sig_unary("aten::rsqrt", h), 8);
    add("f16 sub", sig_binary("aten::sub.Tensor", TT(KF_F16, 16, 9, 8), TT(KF_F16, 16, 9, 8),
                              TT(KF_F16, 16, 9, 8), 'd', 2.0), 8);
    /* bf16 * f32 -> f32: the widest type sets the width, the bf16 operand is read 8 bytes a time */
    add("bf16 x f32", sig_binary("aten::mul.Tensor", TT(KF_BF16, 16, 33, 100),
                                 TT(KF_F32, 16, 33, 100), TT(KF_F32, 0, 33, 100), 0, 0), 4);
    add("f64 exp", sig_unary("aten::exp", TT(KF_F64, 16, 100, 7)), 2);
    add("i32 neg", sig_unary("aten::neg", TT(KF_I32, 16, 50, 51)), 4);
    /* not vectors: an operand only 4-byte aligned, a transposed operand, a row broadcast (the
     * output is not one run of one stride for it), fewer elements than a vector */
    add("f32 misaligned", sig_binary("aten::mul.Tensor", TT(KF_F32, 4, 257, 1031), b, a, 0, 0), 1);
    kf_job_tensor tr = TT(KF_F32, 16, 64, 64);
    tr.strides[0] = 1, tr.strides[1] = 64;
    add("f32 transposed", sig_binary("aten::mul.Tensor", tr, TT(KF_F32, 16, 64, 64),
                                     TT(KF_F32, 0, 64, 64), 0, 0), 1);
    add("f32 row broadcast", sig_binary("aten::mul.Tensor", a, TT(KF_F32, 16, 1031), a, 0, 0), 1);
    add("f32 three", sig_unary("aten::exp", TT(KF_F32, 16, 3)), 1);
}

static void test_renders(void)
{
    int total = knob_combinations(T), idx[MAX_KNOBS];
    int k_vec = -1;
    for (int k = 0; k < T->n_knobs; k++)
        if (!strcmp(T->knobs[k].name, "vec")) k_vec = k;
    if (!CHECK(k_vec >= 0)) return;
    for (int ci = 0; ci < n_cases; ci++) {
        const vcase *c = &cases[ci];
        if (!CHECK(T->applies(&c->sig))) {
            printf("     %s: cuda_pointwise does not apply\n", c->label);
            continue;
        }
        for (int v = 0; v < total; v++) {
            knob_combination(T, v, idx);
            char *src, *lj;
            kf_launch l;
            int ok = begin_render(T, &c->sig, idx, c->label, "kf_kernel(", &src, &lj, &l);
            if (ok < 0) continue;
            int want = T->knobs[k_vec].values[idx[k_vec]] ? c->vw : 1;
            long long vw = src_define(src, "KF_VW", 1), n = src_define(src, "KF_N", 0);
            ok = ok && vw == want && (want == 1) == (strstr(src, "kf_pack_st(p") == NULL);
            /* the grid covers every vector (grid = 0) with KF_NT * KF_UN per block */
            long long nt = src_define(src, "KF_NT", 0), un = src_define(src, "KF_UN", 0);
            long long items = want > 1 ? n / want : n;
            if (T->knobs[2].values[idx[2]] == 0)
                ok = ok && l.grid[0] == (unsigned)((items + nt * un - 1) / (nt * un));
            if (!CHECK(ok)) print_knobs(T, c->label, idx);
            free(src);
            free(lj);
        }
    }
}

/* ---- NVRTC: the first knob values with vec = 1 and vec = 0 per case ---- */

static kf_compiler_i nv;
static char *srcs[MAX_CASES][2];
static kf_launch launches[MAX_CASES][2];
static void *blobs[MAX_CASES][2];
static size_t lens[MAX_CASES][2];

static void compile_all(void)
{
    for (int ci = 0; ci < n_cases; ci++)
        for (int s = 0; s < 2; s++) {
            int idx[MAX_KNOBS] = {0};
            idx[3] = s; /* vec: index 0 is 1 (vectors), 1 is 0 */
            char *lj = NULL, err[512], *log = NULL;
            if (!CHECK_EQ_INT(T->render(&cases[ci].sig, idx, &srcs[ci][s], &lj, err, sizeof err),
                              KF_OK) ||
                !CHECK_EQ_INT(kf_launch_parse(lj, &launches[ci][s], err, sizeof err), KF_OK)) {
                free(lj);
                continue;
            }
            free(lj);
            kf_status st = nv.compile(nv.self, srcs[ci][s], &launches[ci][s], "sm_90",
                                      &blobs[ci][s], &lens[ci][s], &log);
            if (!CHECK_EQ_INT(st, KF_OK) || !CHECK(log_is_clean(log)))
                printf("     %s vec=%d: %s\n%s\n", cases[ci].label, !s, log ? log : "",
                       srcs[ci][s]);
            free(log);
        }
}

/* ---- the GPU: vector and scalar outputs, byte for byte ---- */

static size_t span_bytes(const kf_job_tensor *t)
{
    int64_t last = 0;
    for (int d = 0; d < t->ndim; d++) last += (t->sizes[d] - 1) * t->strides[d];
    return (size_t)(last + 1) * (size_t)kf_dtype_size(t->dtype);
}

/* runs kernel s of case ci on the inputs `in` (host bytes); the output's bytes in *out */
static int run_one(gpu *G, int ci, int s, unsigned char *const *in, unsigned char **out,
                   size_t *out_len)
{
    const kf_job_sig *sig = &cases[ci].sig;
    int inplace = sig->out_alias[0] == 1;
    kf_compiled *k = NULL;
    char err[512];
    if (!CHECK_EQ_INT(nv.load(nv.self, blobs[ci][s], lens[ci][s], &launches[ci][s], 0, &k, err,
                              sizeof err),
                      KF_OK)) {
        printf("     %s: load: %s\n", cases[ci].label, err);
        return 0;
    }
    unsigned long long d[KF_JOB_MAX_TENSORS + 1] = {0};
    void *ptrs[KF_JOB_MAX_TENSORS + 1];
    int np = 0, ok = 1;
    for (int i = 0; i < sig->n_in; i++) {
        size_t bytes = span_bytes(&sig->in[i]);
        ok &= CHECK_EQ_INT(G->d.mem_alloc(&d[np], bytes), 0);
        ok &= ok && CHECK_EQ_INT(G->d.memcpy_htod(d[np], in[i], bytes), 0);
        ptrs[np] = (void *)(uintptr_t)d[np];
        np++;
    }
    *out_len = span_bytes(&sig->out[0]);
    unsigned long long y = inplace ? d[0] : 0;
    if (!inplace) {
        ok &= CHECK_EQ_INT(G->d.mem_alloc(&d[np], *out_len), 0);
        ok &= ok && CHECK_EQ_INT(G->d.memset_d8(d[np], 0xa5, *out_len), 0); /* poison */
        y = d[np];
        ptrs[np] = (void *)(uintptr_t)d[np];
        np++;
    }
    *out = malloc(*out_len);
    ok = ok && CHECK_EQ_INT(nv.launch(nv.self, k, ptrs, np, NULL), 0) &&
         CHECK_EQ_INT(G->d.ctx_synchronize(), 0) &&
         CHECK_EQ_INT(G->d.memcpy_dtoh(*out, y, *out_len), 0);
    for (int i = 0; i < np; i++)
        if (d[i]) G->d.mem_free(d[i]);
    nv.unload(nv.self, k);
    return ok;
}

static void test_gpu(void)
{
    gpu G;
    if (!gpu_open(&G)) return;
    int same = 0;
    for (int ci = 0; ci < n_cases; ci++) {
        const kf_job_sig *sig = &cases[ci].sig;
        if (!blobs[ci][0] || !blobs[ci][1]) continue;
        unsigned char *in[KF_JOB_MAX_TENSORS] = {0};
        for (int i = 0; i < sig->n_in; i++) { /* random bits: NaN, inf, denormals included */
            size_t bytes = span_bytes(&sig->in[i]);
            in[i] = malloc(bytes);
            for (size_t e = 0; e < bytes; e++) in[i][e] = (unsigned char)(urand() * 256);
        }
        unsigned char *o[2] = {0};
        size_t n[2] = {0};
        if (run_one(&G, ci, 0, in, &o[0], &n[0]) && run_one(&G, ci, 1, in, &o[1], &n[1])) {
            int eq = CHECK(n[0] == n[1] && !memcmp(o[0], o[1], n[0]));
            /* every element written: no poison pattern left in a fresh output's elements */
            if (sig->out_alias[0] == 0 && kf_dtype_size(sig->out[0].dtype) >= 4) {
                size_t es = (size_t)kf_dtype_size(sig->out[0].dtype), left = 0;
                for (size_t e = 0; e + es <= n[0]; e += es) {
                    size_t p = 0;
                    while (p < es && o[0][e + p] == 0xa5) p++;
                    left += p == es;
                }
                eq &= CHECK_EQ_INT(left, 0);
            }
            if (!eq) printf("     %s: vector and scalar outputs differ\n", cases[ci].label);
            same += eq;
        }
        for (int i = 0; i < sig->n_in; i++) free(in[i]);
        free(o[0]);
        free(o[1]);
    }
    printf("ran %d cases on the GPU, vector and scalar kernels bit-identical in %d\n", n_cases,
           same);
    gpu_close(&G);
}

/* Each vector render's PTX (nvcc, SKIP without it): the vector loop, unrolled, stores one vector
 * access per pack (a pack assigned as a struct can come out as an access per element: the
 * chain kernel's did, test_templates_chain.c), the tail its one scalar store. */
static void test_vector_stores(void)
{
    if (system("nvcc --version >/dev/null 2>&1") != 0) {
        printf("SKIP the vector renders' PTX: no nvcc here\n");
        return;
    }
    for (int ci = 0; ci < n_cases; ci++) {
        if (cases[ci].vw == 1) continue;
        int idx[MAX_KNOBS] = {0}, esz = kf_dtype_size(cases[ci].sig.out[0].dtype);
        char *src = NULL, *lj = NULL, err[256], *ptx = NULL;
        if (!CHECK_EQ_INT(T->render(&cases[ci].sig, idx, &src, &lj, err, sizeof err), KF_OK) ||
            !(ptx = nvcc_ptx_text(cases[ci].label, src))) {
            free(src), free(lj);
            continue;
        }
        const char *scalar = esz == 2 ? "st.global.u16" : esz == 4 ? "st.global.f32" : "st.global.f64";
        if (esz == 4 && cases[ci].sig.out[0].dtype == KF_I32) scalar = "st.global.u32";
        int vec = count_of(ptx, "st.global.v") + count_of(ptx, "st.global.wb.v"), sc = count_of(ptx, scalar);
        if (!CHECK(vec >= 1 && sc <= 1))
            printf("     %s: %d vector and %d scalar (%s) stores\n", cases[ci].label, vec, sc, scalar);
        free(ptx), free(src), free(lj);
    }
}

int main(void)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    T = find_template("cuda_pointwise");
    if (!CHECK(T != NULL)) return check_done("templates_pointwise_vec");
    make_cases();
    test_renders();
    test_vector_stores();
    if (open_nvrtc(&nv)) {
        compile_all();
        char arch[256];
        if (nv.arch(nv.self, 0, arch, sizeof arch) == KF_OK) {
            printf("GPU: %s\n", arch);
            test_gpu();
        } else {
            printf("SKIP running: %s\n", arch);
        }
        nv.destroy(nv.self);
    } else { /* no NVRTC: the same renders through nvcc */
        const char *srcv[2 * MAX_CASES], *labels[2 * MAX_CASES];
        char lab[2 * MAX_CASES][80];
        int n = 0;
        for (int ci = 0; ci < n_cases; ci++)
            for (int s = 0; s < 2; s++) {
                int idx[MAX_KNOBS] = {0};
                idx[3] = s;
                char *lj = NULL, err[256];
                if (!CHECK_EQ_INT(T->render(&cases[ci].sig, idx, &srcs[ci][s], &lj, err,
                                            sizeof err),
                                  KF_OK))
                    continue;
                free(lj);
                snprintf(lab[n], sizeof lab[n], "%s vec=%d", cases[ci].label, !s);
                labels[n] = lab[n];
                srcv[n++] = srcs[ci][s];
            }
        nvcc_ptx_all(srcv, labels, n);
    }
    for (int ci = 0; ci < n_cases; ci++)
        for (int s = 0; s < 2; s++) free(srcs[ci][s]), free(blobs[ci][s]);
    return test_done(&t0, "templates_pointwise_vec");
}
