/* The LLM proposer's prompt (llm.h; docs/architecture.md "MCTS"): the op and its exact signature, the kernel
 * contract, the parent with its time, eager and roofline times, the lineage, the failed siblings
 * ("do not repeat") and compile errors in short. Bounded by a byte budget. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forge/job/chain.h"
#include "forge/job/job.h"
#include "forge/llm/llm.h"
#include "common/strbuf.h"

#define RECENT 8         /* attempts shown in the lineage */
#define ERR_SHOWN 400    /* bytes of one failure's error */

static int is_host(const kf_job *j) { return strcmp(j->backend, "nvrtc") != 0; }

static const char *c_type(const kf_job *j, int dtype)
{
    switch (dtype) {
    case KF_F32: return "float";
    case KF_F64: return "double";
    case KF_F16: return is_host(j) ? "uint16_t" : "__half";
    case KF_BF16: return is_host(j) ? "uint16_t" : "__nv_bfloat16";
    default: return "uint8_t";
    }
}

char *kf_llm_prompt_system(const kf_job *job)
{
    kf_strbuf b = {0};
    kf_strbuf_printf(&b,
        "You are an expert performance engineer. You write one %s kernel at a time for an automatic "
        "search that compiles it, checks it against PyTorch's eager result on several inputs "
        "(including random ones you have not seen), and times it. Correctness is checked strictly: "
        "outputs are pre-filled with a poison pattern, inputs must stay unchanged, out-of-bounds "
        "writes are detected, and sources calling ATen, cuBLAS, cuDNN, system calls or file I/O are "
        "rejected. Answer with exactly one fenced code block holding the complete kernel source and "
        "exactly one fenced ```json block holding its launch record, and nothing else that is "
        "fenced.",
        is_host(job) ? "C11 CPU (compiled with the system C compiler, -O3, OpenMP available)"
                     : "CUDA C++ (compiled with NVRTC)");
    return kf_strbuf_take(&b);
}

static void tensor_line(kf_strbuf *b, const kf_job *j, const char *role, int i, const kf_job_tensor *t)
{
    kf_strbuf_printf(b, "- %s %d: %s [", role, i, kf_dtype_name(t->dtype));
    for (int d = 0; d < t->ndim; d++) kf_strbuf_printf(b, "%s%lld", d ? ", " : "", (long long)t->sizes[d]);
    kf_strbuf_printf(b, "], strides [");
    for (int d = 0; d < t->ndim; d++) kf_strbuf_printf(b, "%s%lld", d ? ", " : "", (long long)t->strides[d]);
    kf_strbuf_printf(b, "] (elements), C type %s\n", c_type(j, t->dtype));
}

static void scalar_value(kf_strbuf *b, const kf_job_scalar *c)
{
    switch (c->kind) {
    case 'i': kf_strbuf_printf(b, "%lld", (long long)c->i); break;
    case 'b': kf_strbuf_printf(b, "%s", c->i ? "True" : "False"); break;
    case 'd': kf_strbuf_printf(b, "%.17g", c->d); break;
    case 's': kf_strbuf_printf(b, "\"%s\"", c->s); break;
    case 'n': kf_strbuf_printf(b, "None"); break;
    default:
        kf_strbuf_printf(b, "[");
        for (int k = 0; k < c->n; k++) kf_strbuf_printf(b, "%s%lld", k ? ", " : "", (long long)c->v[k]);
        kf_strbuf_printf(b, "]");
    }
}

/* A chain job (forge/job/chain.h): its members in order, each as eager computes it, and where
 * each reads its inputs from; every member's result is an output. */
static void chain_section(kf_strbuf *b, const kf_job *j)
{
    const kf_job_chain *ch = j->sig.chain;
    if (!ch) return;
    kf_strbuf_printf(b, "## The chain\nThe kernel computes these %d PyTorch ops in order, each exactly as "
                        "eager PyTorch computes it on its own (its own promotion and accumulation), "
                        "and stores each one's result, rounded to that output's dtype, in its own output "
                        "(the outputs above in member order, a member with several results "
                        "giving them in its op's order). "
                        "A later member reads an earlier one's stored value, not a wider temporary.\n",
                     ch->n_members);
    for (int k = 0; k < ch->n_members; k++) {
        const kf_job_sig *m = &ch->m[k].sig;
        kf_strbuf_printf(b, "%d. `%s`(", k, m->op);
        for (int i = 0; i < m->n_in; i++) {
            const kf_chain_ref *r = &ch->m[k].ref[i];
            if (r->kind == KF_CHAIN_MEMBER) kf_strbuf_printf(b, "%smember %d's output", i ? ", " : "", r->a);
            else kf_strbuf_printf(b, "%sinput %d", i ? ", " : "", kf_job_chain_arg(ch, k, i));
        }
        for (int i = 0; i < m->n_scalars; i++) {
            kf_strbuf_printf(b, "%s%s=", m->n_in + i ? ", " : "", m->scalars[i].name);
            scalar_value(b, &m->scalars[i]);
        }
        kf_strbuf_printf(b, ")\n");
    }
    kf_strbuf_printf(b, "\n");
}

static void contract(kf_strbuf *b, const kf_job *j)
{
    const kf_job_sig *s = &j->sig;
    kf_strbuf_printf(b, "## Task\nWrite a kernel for `%s` with exactly this signature (the kernel is "
                        "specialized to it, so shapes and scalars are compile-time constants):\n"
                        "`%s`\n\n## Arguments, in this order\n", j->op, j->signature);
    int arg = 0;
    for (int i = 0; i < s->n_in; i++) tensor_line(b, j, "input", arg++, &s->in[i]);
    for (int i = 0; i < s->n_out; i++) {
        if (s->out_alias[i] > 0) {
            kf_strbuf_printf(b, "- output %d is input %d, written in place (not passed again)\n", i,
                             s->out_alias[i] - 1);
            continue;
        }
        if (s->out_alias[i] < 0) {
            kf_strbuf_printf(b, "- output %d is output %d, written again in place by its member (not "
                                "passed again; it ends holding this member's value)\n", i, -s->out_alias[i] - 1);
            continue;
        }
        tensor_line(b, j, "output", arg++, &s->out[i]);
    }
    if (s->n_scalars && !s->chain) kf_strbuf_printf(b, "Non-tensor arguments (bake them in as constants):\n");
    for (int i = 0; i < s->n_scalars && !s->chain; i++) { /* a chain's are its members' (below) */
        kf_strbuf_printf(b, "- %s = ", s->scalars[i].name);
        scalar_value(b, &s->scalars[i]);
        kf_strbuf_printf(b, "\n");
    }
    kf_strbuf_printf(b, "Tolerance: atol %g, rtol %g; NaN/Inf must appear where eager has them.\n\n",
                     j->atol, j->rtol);
    chain_section(b, j);
    kf_strbuf_printf(b, "## Kernel contract\n");
    if (is_host(j))
        kf_strbuf_printf(b,
            "- C11. Entry: `void kf_kernel(<one typed pointer per argument, in the order above>)`, "
            "inputs as `const T *`.\n- Allowed includes: math.h, stdint.h, stddef.h, string.h, "
            "float.h, limits.h, omp.h, all before any macro but `#define KF_...`. No I/O, no system "
            "calls, no allocation needed; no attributes, asm, extern declarations, or pragmas "
            "but `#pragma omp`.\n"
            "- Launch record: {\"entry\": \"kf_kernel\", \"grid\": [1,1,1], \"block\": [1,1,1], "
            "\"smem\": 0, \"args\": [\"const float*\", ..., \"float*\"]} (grid/block unused on CPU).\n");
    else
        kf_strbuf_printf(b,
            "- CUDA C++ for NVRTC. Entry: `extern \"C\" __global__ void kf_kernel(<one typed pointer "
            "per argument, in the order above>)`.\n- Allowed includes: cuda_fp16.h, cuda_bf16.h, "
            "cuda_fp8.h, cooperative_groups.h, math.h, stdint.h. No host code, no library calls.\n"
            "- Launch record: {\"entry\": \"kf_kernel\", \"grid\": [x,y,z], \"block\": [x,y,z], "
            "\"smem\": dynamic shared bytes, \"args\": [\"const float*\", ..., \"float*\"]}.\n");
    kf_strbuf_printf(b, "- Every output element must be written; inputs must not be written.\n\n");
}

static void timing(kf_strbuf *b, const kf_job *j)
{
    kf_strbuf_printf(b, "## Timings\n- eager (PyTorch): %.4g us\n", j->eager_us);
    if (j->roofline_us > 0)
        kf_strbuf_printf(b, "- roofline: %.4g us (%.0f bytes read+written at %.0f GB/s copy "
                            "bandwidth: the op is bound by memory traffic)\n",
                         j->roofline_us, j->bytes_moved, j->bandwidth_gbs);
    kf_strbuf_printf(b, "A kernel must beat eager by %.0f%% to be kept.\n\n", j->search.margin * 100);
}

static int failed(const kf_llm_node *n)
{
    return n->status[0] && strcmp(n->status, "verified") && strcmp(n->status, "slower") &&
           strcmp(n->status, "flagged");
}

/* the first lines of an error that say "error" (compile logs are long), else its start */
static void error_summary(kf_strbuf *b, const char *e)
{
    if (!e || !e[0]) {
        kf_strbuf_printf(b, "(no message)");
        return;
    }
    int shown = 0;
    size_t used = 0;
    for (const char *p = e; *p && shown < 4 && used < ERR_SHOWN;) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        if (memmem(p, len, "error", 5)) {
            if (len > 200) len = 200;
            kf_strbuf_printf(b, "%s%.*s", shown ? " | " : "", (int)len, p);
            shown++, used += len;
        }
        p = nl ? nl + 1 : p + len;
    }
    if (!shown) kf_strbuf_printf(b, "%.*s", ERR_SHOWN, e);
}

static void fenced(kf_strbuf *b, const kf_job *j, const char *src, size_t max)
{
    size_t n = strlen(src);
    kf_strbuf_printf(b, "```%s\n%.*s%s\n```\n", is_host(j) ? "c" : "cuda", (int)(n < max ? n : max),
                     src, n > max ? "\n/* ... (cut to fit the prompt) */" : "");
}

char *kf_llm_prompt_user(const kf_job *j, const kf_llm_node *nodes, int n, int parent, size_t budget)
{
    kf_strbuf b = {0};
    contract(&b, j);
    timing(&b, j);
    int best = -1;
    for (int i = 0; i < n; i++)
        if (!failed(&nodes[i]) && nodes[i].status[0] && strcmp(nodes[i].status, "flagged") &&
            (best < 0 || nodes[i].latency_us < nodes[best].latency_us))
            best = i;
    size_t src_max = budget / 3;
    if (parent >= 0 && parent < n) {
        const kf_llm_node *p = &nodes[parent];
        kf_strbuf_printf(&b, "## Improve this kernel (node %d, %s, %.4g us, %.2fx eager)\n", parent,
                         p->status, p->latency_us, p->latency_us > 0 ? j->eager_us / p->latency_us : 0);
        if (p->source) fenced(&b, j, p->source, src_max);
        if (p->launch_json) kf_strbuf_printf(&b, "```json\n%s\n```\n\n", p->launch_json);
    } else if (best >= 0) {
        kf_strbuf_printf(&b, "## Start a new approach. The best so far (node %d, %.4g us) for reference:\n",
                         best, nodes[best].latency_us);
        if (nodes[best].source) fenced(&b, j, nodes[best].source, src_max);
        kf_strbuf_printf(&b, "\n");
    } else {
        kf_strbuf_printf(&b, "## Write a first correct and fast kernel.\n\n");
    }
    /* failed children of the same parent: do not repeat */
    int shown = 0;
    for (int i = n - 1; i >= 0 && b.len < budget * 3 / 4 && shown < RECENT; i--) {
        if (nodes[i].parent != parent || !failed(&nodes[i])) continue;
        if (!shown++) kf_strbuf_printf(&b, "## Failed attempts from here: do not repeat them\n");
        kf_strbuf_printf(&b, "- node %d (%s, %s): %s: ", i, nodes[i].proposer, nodes[i].change,
                         nodes[i].status);
        error_summary(&b, nodes[i].error);
        kf_strbuf_printf(&b, "\n");
    }
    if (shown) kf_strbuf_printf(&b, "\n");
    /* the lineage: best so far and recent attempts, improved or regressed against their parent */
    shown = 0;
    for (int i = n - 1; i >= 0 && b.len < budget * 7 / 8 && shown < RECENT; i--) {
        if (!nodes[i].status[0]) continue;
        if (!shown++) {
            kf_strbuf_printf(&b, "## Recent attempts (newest first)\n");
            if (best >= 0) kf_strbuf_printf(&b, "Best so far: node %d at %.4g us.\n", best, nodes[best].latency_us);
        }
        const kf_llm_node *m = &nodes[i];
        const char *trend = "";
        if (!failed(m) && m->parent >= 0 && m->parent < n && !failed(&nodes[m->parent]) &&
            nodes[m->parent].latency_us > 0)
            trend = m->latency_us < nodes[m->parent].latency_us ? ", improved" : ", regressed";
        kf_strbuf_printf(&b, "- node %d <- %d (%s: %.100s): %s", i, m->parent, m->proposer, m->change,
                         m->status);
        if (!failed(m)) kf_strbuf_printf(&b, " %.4g us%s\n", m->latency_us, trend);
        else {
            kf_strbuf_printf(&b, ": ");
            error_summary(&b, m->error);
            kf_strbuf_printf(&b, "\n");
        }
    }
    kf_strbuf_printf(&b, "\n## Answer format\nOne ```%s block with the whole source, then one ```json "
                         "block with the launch record. Nothing else in code fences.\n",
                     is_host(j) ? "c" : "cuda");
    if (b.len > budget && !b.oom) { /* the mandatory parts alone are over: cut the tail */
        b.p[budget] = 0;
        b.len = budget;
    }
    return kf_strbuf_take(&b);
}
