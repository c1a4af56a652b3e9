/* The chain templates' binding and the text both backends share (chain.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "forge/templates/chain.h"
#include "forge/templates/template.h"

static int why_(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int why_(char *why, size_t cap, const char *fmt, ...)
{
    if (why && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, cap, fmt, ap);
        va_end(ap);
    }
    return 0;
}

static int is_float(int dt)
{
    return dt == KF_F32 || dt == KF_F16 || dt == KF_BF16 || dt == KF_F64;
}

/* a last-dim keepdim sum / mean / amax / 2-norm of one float tensor, in its dtype: its kind; 0:
 * not a reduction; -1: one the templates do not fuse (why says so) */
static int red_kind_of(const kf_job_sig *m, char *why, size_t cap, int k)
{
    int kind = !strcmp(m->op, "aten::sum.dim_IntList")    ? KF_CHAIN_RED_SUM
             : !strcmp(m->op, "aten::mean.dim")           ? KF_CHAIN_RED_MEAN
             : !strcmp(m->op, "aten::amax")               ? KF_CHAIN_RED_AMAX
             : !strcmp(m->op, "aten::linalg_vector_norm") ? KF_CHAIN_RED_NORM2
                                                          : KF_CHAIN_RED_NONE;
    if (!kind) return 0;
    const kf_job_tensor *x = &m->in[0], *y = &m->out[0];
    const kf_job_scalar *dim = kf_job_scalar_find(m, "dim"), *kd = kf_job_scalar_find(m, "keepdim");
    const kf_job_scalar *dt = kf_job_scalar_find(m, "dtype");
    if (m->n_in != 1 || !is_float(x->dtype) || y->dtype != x->dtype || x->ndim < 1)
        return -1 + why_(why, cap, "member %d (%s): the reduction must take one float tensor and give "
                              "its dtype", k, m->op);
    if (kind == KF_CHAIN_RED_NORM2) {
        const kf_job_scalar *ord = kf_job_scalar_find(m, "ord");
        if (!ord || !((ord->kind == 'i' && ord->i == 2) || (ord->kind == 'd' && ord->d == 2.0)))
            return -1 + why_(why, cap, "member %d (%s): only ord=2 is fused", k, m->op);
    }
    int nd = x->ndim;
    if (!dim || dim->kind != 'l' || dim->n != 1 || (dim->v[0] != -1 && dim->v[0] != nd - 1) ||
        !kd || kd->kind != 'b' || !kd->i || (dt && dt->kind != 'n'))
        return -1 + why_(why, cap, "member %d (%s): only a reduction of the last dim with "
                              "keepdim=True (and no dtype=) is fused", k, m->op);
    int ok = y->ndim == nd && y->sizes[nd - 1] == 1;
    for (int d = 0; ok && d + 1 < nd; d++) ok = y->sizes[d] == x->sizes[d];
    if (!ok) return -1 + why_(why, cap, "member %d (%s): unexpected output shape", k, m->op);
    return kind;
}

static int same_sizes(const kf_job_tensor *t, int nd, const int64_t *sz)
{
    if (t->ndim != nd) return 0;
    for (int d = 0; d < nd; d++)
        if (t->sizes[d] != sz[d]) return 0;
    return 1;
}

/* member k's (first) output and whether it aliases an input */
static const kf_job_tensor *mout(const kf_chain_bind *b, const kf_job_sig *sig, int k)
{
    return &sig->out[b->ch->out0[k]];
}

static int malias(const kf_chain_bind *b, const kf_job_sig *sig, int k)
{
    return sig->out_alias[b->ch->out0[k]];
}

static const char *tail_noun(const kf_chain_bind *b)
{
    return b->sm >= 0 ? "softmax" : b->gn ? "group norm" : "layer norm";
}

/* What a row tail (a norm or a softmax, chain.h) needs of its place: no reduction or other tail
 * before it, and an earlier member's phase-0 output or a kernel input as its input (`verb` says
 * what it does to it); 0 with why set otherwise. */
static int tail_placed(kf_chain_bind *b, int k, const char *noun, const char *verb,
                       char *why, size_t cap)
{
    const kf_job_member *jm = &b->ch->m[k];
    if (b->tail >= 0)
        return why_(why, cap, "member %d (%s): a %s after a row tail (member %d)", k, jm->sig.op,
                    noun, b->tail);
    if (b->red >= 0)
        return why_(why, cap, "member %d (%s): a %s after a reduction (member %d)", k, jm->sig.op,
                    noun, b->red);
    if (jm->ref[0].kind == KF_CHAIN_MEMBER && b->phase[jm->ref[0].a] != 0)
        return why_(why, cap, "member %d (%s): it must %s an earlier member's output or a kernel "
                              "input", k, jm->sig.op, verb);
    b->tail_arg = jm->ref[0].kind == KF_CHAIN_MEMBER ? -1 : kf_job_chain_arg(b->ch, k, 0);
    b->pb[k].dest_in = -1; /* not a pointwise member: writes no input */
    return 1;
}

/* A row tail's input and first output: the chain's full shape, both in one of f32, f16, bf16. */
static int tail_float_full(const kf_chain_bind *b, const kf_job_sig *m)
{
    const kf_job_tensor *x = &m->in[0];
    return (x->dtype == KF_F32 || x->dtype == KF_F16 || x->dtype == KF_BF16) &&
           m->out[0].dtype == x->dtype && same_sizes(x, b->nd, b->full) &&
           same_sizes(&m->out[0], b->nd, b->full);
}

/* A norm's (member k's) weight and bias, each optional, [c] from outside the chain in the
 * input's dtype (or f32 where f32_ok), into ln_w / ln_b; its mean and rstd outputs, `stats`
 * floats each, contiguous. 0 with why set otherwise. */
static int norm_args(kf_chain_bind *b, int k, int64_t c, int f32_ok, int64_t stats, char *why, size_t cap)
{
    const kf_job_sig *m = &b->ch->m[k].sig;
    static const char *const names[] = {"input", "weight", "bias"};
    static const int optional[] = {0, 1, 1};
    int idx[3];
    if (kf_template_tensor_args(m, names, optional, 3, idx) < 0)
        return why_(why, cap, "member %d (%s): which of weight and bias are given is unclear", k, m->op);
    int *dest[3] = {NULL, &b->ln_w, &b->ln_b};
    for (int a = 1; a < 3; a++) {
        *dest[a] = -1;
        if (idx[a] < 0) continue;
        const kf_job_tensor *p = &m->in[idx[a]];
        int arg = kf_job_chain_arg(b->ch, k, idx[a]);
        if (arg < 0 || p->ndim != 1 || p->sizes[0] != c ||
            (p->dtype != m->in[0].dtype && !(f32_ok && p->dtype == KF_F32)))
            return why_(why, cap, "member %d (%s): its weight and bias must be [C] tensors from outside "
                                  "the chain, in its dtype%s", k, m->op, f32_ok ? " or f32" : "");
        *dest[a] = arg;
    }
    for (int j = 1; j < 3; j++) {
        const kf_job_tensor *t = &m->out[j];
        if (!is_float(t->dtype) || t->dtype == KF_F64 || kf_job_tensor_numel(t) != stats ||
            !kf_job_tensor_contiguous(t))
            return why_(why, cap, "member %d (%s): unexpected mean / rstd outputs", k, m->op);
    }
    return 1;
}

/* native_layer_norm (chain.h): the last dim of the chain's full shape, its input an earlier
 * member's output or a kernel input, weight and bias of [C] from outside the chain; pointwise
 * members may follow */
static int ln_bind(kf_chain_bind *b, int k, char *why, size_t cap)
{
    const kf_job_sig *m = &b->ch->m[k].sig;
    if (m->n_out != 3)
        return why_(why, cap, "member %d (%s): a layer norm is fused with its mean and rstd", k, m->op);
    if (!tail_placed(b, k, "layer norm", "normalize", why, cap)) return 0;
    if (!tail_float_full(b, m))
        return why_(why, cap, "member %d (%s): it must normalize the chain's full shape in f32, "
                              "f16 or bf16", k, m->op);
    const kf_job_scalar *ns = kf_job_scalar_find(m, "normalized_shape");
    const kf_job_scalar *eps = kf_job_scalar_find(m, "eps");
    if (!ns || ns->kind != 'l' || ns->n != 1 || ns->v[0] != b->C || !eps ||
        (eps->kind != 'd' && eps->kind != 'i') || (eps->kind == 'd' && !isfinite(eps->d)))
        return why_(why, cap, "member %d (%s): only the last dim is normalized (normalized_shape "
                              "[C], a finite eps)", k, m->op);
    b->ln_eps = eps->kind == 'd' ? eps->d : (double)eps->i;
    if (!norm_args(b, k, b->C, 1, b->R, why, cap)) return 0;
    b->ln = b->tail = k;
    b->phase[k] = 3;
    return 1;
}

/* native_group_norm (chain.h): an [N, C, ...] chain (3 dims or more, its input an earlier
 * member's output or a kernel input), weight and bias of [C] from outside the chain; pointwise
 * members may follow.
 * The walk's rows run over F's outer dims in order, so a group (n, g) is rows
 * [(n * group + g) * RG, + RG) with RG = C / group x the rows of one channel. */
static int gn_bind(kf_chain_bind *b, int k, char *why, size_t cap)
{
    const kf_job_sig *m = &b->ch->m[k].sig;
    if (m->n_out != 3)
        return why_(why, cap, "member %d (%s): a group norm is fused with its mean and rstd", k, m->op);
    if (!tail_placed(b, k, "group norm", "normalize", why, cap)) return 0;
    if (!tail_float_full(b, m) || b->nd < 3)
        return why_(why, cap, "member %d (%s): it must normalize the chain's full shape, [N, C, "
                              "...] of 3 dims or more, in f32, f16 or bf16", k, m->op);
    const kf_job_scalar *sn = kf_job_scalar_find(m, "N"), *sc = kf_job_scalar_find(m, "C");
    const kf_job_scalar *shw = kf_job_scalar_find(m, "HxW"), *sg = kf_job_scalar_find(m, "group");
    const kf_job_scalar *eps = kf_job_scalar_find(m, "eps");
    int64_t hw = 1;
    for (int d = 2; d < b->nd; d++) hw *= b->full[d];
    if (!sn || !sc || !shw || !sg || sn->kind != 'i' || sc->kind != 'i' || shw->kind != 'i' ||
        sg->kind != 'i' || sn->i != b->full[0] || sc->i != b->full[1] || shw->i != hw ||
        sg->i < 1 || sc->i % sg->i || !eps || (eps->kind != 'd' && eps->kind != 'i') ||
        (eps->kind == 'd' && !isfinite(eps->d)))
        return why_(why, cap, "member %d (%s): N, C and HxW must be the input's, group divide C, "
                              "eps be finite", k, m->op);
    b->ln_eps = eps->kind == 'd' ? eps->d : (double)eps->i;
    if (!norm_args(b, k, sc->i, 0, sn->i * sg->i, why, cap)) return 0;
    b->gn = 1;
    b->gn_ch = sc->i;
    b->gn_ng = sn->i * sg->i;
    b->gn_rpc = hw / b->C;
    b->gn_rg = sc->i / sg->i * b->gn_rpc;
    b->ln = b->tail = k;
    b->phase[k] = 3;
    return 1;
}

/* native_batch_norm in eval (chain.h): a phase-0 member of an [N, C, ...] chain, its input of the
 * chain's full shape (an earlier member's output or a kernel input), its running stats (and the
 * weight and bias, each optional) [C] from outside the chain, read by channel; its save_mean and
 * save_invstd outputs empty (the CPU's eval) or [C] (CUDA's: kf_chain_emit_prologue writes them). */
static int bn_bind(kf_chain_bind *b, int k, char *why, size_t cap)
{
    const kf_job_sig *m = &b->ch->m[k].sig;
    static const char *const names[] = {"input", "weight", "bias", "running_mean", "running_var"};
    static const int optional[] = {0, 1, 1, 0, 0};
    const kf_job_scalar *tr = kf_job_scalar_find(m, "training"), *eps = kf_job_scalar_find(m, "eps");
    if (!tr || tr->kind != 'b' || tr->i || !eps || (eps->kind != 'd' && eps->kind != 'i') ||
        (eps->kind == 'd' && !isfinite(eps->d)))
        return why_(why, cap, "member %d (%s): only eval (training false, a finite eps) is fused", k, m->op);
    if (b->nd < 2 || m->n_out != 3)
        return why_(why, cap, "member %d (%s): an [N, C, ...] chain", k, m->op);
    for (int j = 1; j < 3; j++) { /* eval's save_mean / save_invstd: empty (CPU) or [C] (CUDA) */
        const kf_job_tensor *t = &m->out[j];
        const int64_t n = kf_job_tensor_numel(t);
        if (n && (n != b->full[1] || t->ndim != 1 || !kf_job_tensor_contiguous(t) || !is_float(t->dtype) ||
                  t->dtype == KF_F64))
            return why_(why, cap, "member %d (%s): its save_mean and save_invstd must be empty or "
                                  "[C] float", k, m->op);
    }
    const int dt = m->in[0].dtype;
    if ((dt != KF_F32 && dt != KF_F16 && dt != KF_BF16) || m->out[0].dtype != dt ||
        !same_sizes(&m->in[0], b->nd, b->full) || !same_sizes(&m->out[0], b->nd, b->full))
        return why_(why, cap, "member %d (%s): it must normalize the chain's full shape in f32, f16 "
                              "or bf16", k, m->op);
    if (kf_template_tensor_args(m, names, optional, 5, b->bn_in[k]) < 0)
        return why_(why, cap, "member %d (%s): which of its tensors are given is unclear", k, m->op);
    for (int a = 1; a < 5; a++) {
        const int li = b->bn_in[k][a];
        if (li < 0) continue;
        const kf_job_tensor *p = &m->in[li];
        const int arg = kf_job_chain_arg(b->ch, k, li);
        if (arg < 0 || p->ndim != 1 || p->sizes[0] != b->full[1] || !is_float(p->dtype) || p->dtype == KF_F64)
            return why_(why, cap, "member %d (%s): its weight, bias and running stats must be [C] "
                                  "float tensors from outside the chain", k, m->op);
        b->chan[arg] = 1;
    }
    b->pb[k].dest_in = -1; /* not a pointwise member: writes no input */
    b->bn[k] = 1;
    b->bn_eps[k] = eps->kind == 'd' ? eps->d : (double)eps->i;
    b->phase[k] = 0;
    return 1;
}

/* _softmax of the last dim (chain.h): of an earlier member's output of the chain's full shape,
 * in its dtype (f32, f16, bf16; no half_to_float); pointwise members may follow it (its epilogue) */
static int sm_bind(kf_chain_bind *b, int k, char *why, size_t cap)
{
    const kf_job_chain *ch = b->ch;
    const kf_job_sig *m = &ch->m[k].sig;
    if (m->n_out != 1 || m->n_in != 1)
        return why_(why, cap, "member %d (%s): only a softmax of one tensor is fused", k, m->op);
    if (!tail_placed(b, k, "softmax", "take", why, cap)) return 0;
    const kf_job_scalar *dim = kf_job_scalar_find(m, "dim"), *hf = kf_job_scalar_find(m, "half_to_float");
    if (!tail_float_full(b, m) || !dim || dim->kind != 'i' ||
        (dim->i != -1 && dim->i != b->nd - 1) || (hf && (hf->kind != 'b' || hf->i)))
        return why_(why, cap, "member %d (%s): only a softmax of the last dim of the chain's full "
                              "shape, in f32, f16 or bf16 (no half_to_float), is fused", k, m->op);
    b->sm = b->tail = k;
    b->phase[k] = 3;
    return 1;
}

/* Kernel input i is read on part p's columns (-1: the full row); one domain per input. */
static int input_on(kf_chain_bind *b, int i, int p)
{
    if (b->in_part[i] != -1 && b->in_part[i] != p) return 0;
    b->in_part[i] = p;
    return 1;
}

/* Member k, an aten::cat of the last dim with the chain's full shape: its parts (each a kernel
 * input or a segment member read by nothing else), marked before the members are bound. */
static int cat_bind(kf_chain_bind *b, const kf_job_sig *sig, int k, char *why, size_t cap)
{
    const kf_job_chain *ch = b->ch;
    const kf_job_sig *m = &ch->m[k].sig;
    const kf_job_tensor *y = mout(b, sig, k);
    const kf_job_scalar *ds = kf_job_scalar_find(m, "dim");
    if (b->cat >= 0) return why_(why, cap, "member %d (aten::cat): a second cat", k);
    if (!same_sizes(y, b->nd, b->full) || !ds || ds->kind != 'i' || y->ndim < 1 ||
        (ds->i < 0 ? ds->i + y->ndim : ds->i) != y->ndim - 1)
        return why_(why, cap, "member %d (aten::cat): not a cat of the last dim with the chain's "
                              "shape", k);
    int64_t off = 0;
    for (int i = 0; i < m->n_in; i++) {
        const kf_job_tensor *x = &m->in[i];
        if (x->dtype != y->dtype || x->ndim != y->ndim || x->sizes[x->ndim - 1] <= 0)
            return why_(why, cap, "member %d (aten::cat): input %d is empty, of another dtype "
                                  "or rank", k, i);
        for (int d = 0; d + 1 < x->ndim; d++)
            if (x->sizes[d] != y->sizes[d])
                return why_(why, cap, "member %d (aten::cat): input %d's sizes", k, i);
        const kf_chain_ref *r = &ch->m[k].ref[i];
        b->part_off[i] = off;
        b->part_len[i] = x->sizes[x->ndim - 1];
        b->part_member[i] = r->kind == KF_CHAIN_MEMBER ? r->a : -1;
        b->part_arg[i] = r->kind == KF_CHAIN_MEMBER ? -1 : kf_job_chain_arg(ch, k, i);
        off += b->part_len[i];
        if (r->kind != KF_CHAIN_MEMBER) {
            if (!input_on(b, b->part_arg[i], i))
                return why_(why, cap, "member %d (aten::cat): input %d is read on other columns "
                                      "too", k, i);
            continue;
        }
        const int a = r->a;
        for (int j = a + 1; j < b->n; j++)
            for (int q = 0; q < ch->m[j].sig.n_in; q++)
                if ((j != k || q != i) && ch->m[j].ref[q].kind == KF_CHAIN_MEMBER && ch->m[j].ref[q].a == a)
                    return why_(why, cap, "member %d (aten::cat): its part %d (member %d) is read "
                                          "by member %d too", k, i, a, j);
        if (b->seg_part[a] >= 0 || mout(b, sig, a)->dtype != y->dtype || malias(b, sig, a))
            return why_(why, cap, "member %d (aten::cat): part %d (member %d)", k, i, a);
        b->seg_part[a] = i;
        for (int q = 0; q < ch->m[a].sig.n_in; q++) {
            const int arg = kf_job_chain_arg(ch, a, q);
            if (arg >= 0 && !input_on(b, arg, i))
                return why_(why, cap, "member %d (%s): its input %d is read on other columns too",
                            a, ch->m[a].sig.op, q);
        }
    }
    if (off != b->C || m->n_in < 1 || m->n_in > KF_JOB_MAX_TENSORS)
        return why_(why, cap, "member %d (aten::cat): its parts do not make the row", k);
    b->cat = k;
    b->n_parts = m->n_in;
    return 1;
}

/* Whether pointwise member k gives one value per column: its output [C] (leading sizes 1) on a
 * chain of more than one row, each input a kernel input that varies along the row alone or such
 * a member. */
static int col_member(kf_chain_bind *b, const kf_job_sig *sig, int k)
{
    const kf_job_member *jm = &b->ch->m[k];
    const kf_job_tensor *y = mout(b, sig, k);
    if (b->R < 2 || y->ndim < 1 || y->ndim > b->nd || y->sizes[y->ndim - 1] != b->C) return 0;
    for (int d = 0; d + 1 < y->ndim; d++)
        if (y->sizes[d] != 1) return 0;
    for (int i = 0; i < jm->sig.n_in; i++) {
        if (jm->ref[i].kind == KF_CHAIN_MEMBER) {
            if (!b->col[jm->ref[i].a]) return 0;
            continue;
        }
        const kf_job_tensor *t = &jm->sig.in[i];
        for (int d = 0; d + 1 < t->ndim; d++)
            if (t->sizes[d] != 1) return 0;
    }
    return b->col[k] = 1;
}

/* Each per-column member's phase: its readers', which must be pointwise members of one phase
 * (a member nobody reads: phase 0). Last first, so that a per-column reader has its own. */
static int col_phases(kf_chain_bind *b, char *why, size_t cap)
{
    const kf_job_chain *ch = b->ch;
    for (int k = b->n - 1; k >= 0; k--) {
        if (!b->col[k]) continue;
        if (b->tail >= 0 || b->cat >= 0)
            return why_(why, cap, "member %d (%s): one value per column in a chain with a row "
                                  "tail or a cat", k, ch->m[k].sig.op);
        int ph = -1;
        for (int j = k + 1; j < b->n; j++)
            for (int i = 0; i < ch->m[j].sig.n_in; i++) {
                if (ch->m[j].ref[i].kind != KF_CHAIN_MEMBER || ch->m[j].ref[i].a != k) continue;
                if (j == b->red || (b->phase[j] != 0 && b->phase[j] != 2) || (ph >= 0 && b->phase[j] != ph))
                    return why_(why, cap, "member %d (%s): its value per column is read by member "
                                          "%d (%s), which cannot take it there", k, ch->m[k].sig.op,
                                j, ch->m[j].sig.op);
                ph = b->phase[j];
            }
        b->phase[k] = ph < 0 ? 0 : ph;
    }
    return 1;
}

static void permute(int64_t *v, const int *perm, int nd)
{
    int64_t t[KF_MAX_DIMS];
    for (int d = 0; d < nd; d++) t[d] = v[perm[d]];
    memcpy(v, t, (size_t)nd * sizeof *v);
}

/* A chain of pointwise members walks F's dims in the memory order of F's tensor (a channels_last
 * [N, C, H, W] as N, H, W, C): rows of the logical last dim would stride across memory, every
 * thread of a warp touching another cache line. Outputs row-major in that order are stored as
 * r * KF_C + c; the others through their strides. */
static void memory_order(kf_chain_bind *b, const kf_job_tensor *F)
{
    const int nd = b->nd;
    if (nd < 2 || F->ndim != nd || b->red >= 0 || b->tail >= 0 || b->cat >= 0) return;
    for (int k = 0; k < b->n; k++)
        if (b->col[k]) return;
    int perm[KF_MAX_DIMS], moved = 0;
    for (int d = 0; d < nd; d++) perm[d] = d;
    /* stable: by stride, largest first; a size-1 dim (any stride) outermost */
    for (int i = 1; i < nd; i++)
        for (int j = i; j > 0; j--) {
            const int a = perm[j - 1], c = perm[j];
            const int64_t ka = F->sizes[a] == 1 ? INT64_MAX : F->strides[a];
            const int64_t kc = F->sizes[c] == 1 ? INT64_MAX : F->strides[c];
            if (kc <= ka) break;
            perm[j - 1] = c, perm[j] = a, moved = 1;
        }
    if (!moved) return;
    int64_t logical[KF_MAX_DIMS], want = 1; /* a dense output's strides on F's dims */
    for (int d = nd - 1; d >= 0; d--) logical[d] = want, want *= b->full[d];
    for (int k = 0; k < b->n; k++) {
        if (!b->ostrided[k]) memcpy(b->ost[k], logical, sizeof logical);
        permute(b->ost[k], perm, nd);
    }
    for (int i = 0; i < KF_JOB_MAX_TENSORS; i++) permute(b->st[i], perm, nd);
    permute(b->full, perm, nd);
    kf_job_tensor y = {.ndim = nd}; /* each output on the walk's dims: row-major or strided */
    memcpy(y.sizes, b->full, sizeof y.sizes);
    for (int k = 0; k < b->n; k++) {
        memcpy(y.strides, b->ost[k], sizeof y.strides);
        b->ostrided[k] = !kf_job_tensor_contiguous(&y);
    }
    b->C = b->full[nd - 1];
    b->R = 1;
    for (int d = 0; d + 1 < nd; d++) b->R *= b->full[d];
}

/* A chain of pointwise members walks rows of at least KF_CHAIN_ROW_MIN elements where the memory
 * allows: the walk's last two dims are one where every input and strided output steps across them
 * as over one dim (an NCHW activation's H and W, a batch norm's [C] broadcast over both), so that
 * a row is a plane, not 28 elements with a row's setup each; no longer, and not down to fewer than
 * KF_CHAIN_ROWS_MIN rows, so that the rows still spread over threads and blocks. */
#define KF_CHAIN_ROW_MIN 512
#define KF_CHAIN_ROWS_MIN 128
static void coalesce(kf_chain_bind *b, const kf_job_sig *sig)
{
    if (b->red >= 0 || b->tail >= 0 || b->cat >= 0) return;
    for (int k = 0; k < b->n; k++)
        if (b->col[k]) return;
    while (b->nd >= 2 && b->C < KF_CHAIN_ROW_MIN) {
        const int d = b->nd - 2, l = b->nd - 1;
        int ok = 1;
        for (int i = 0; ok && i < sig->n_in; i++) ok = b->st[i][d] == b->st[i][l] * b->full[l];
        for (int k = 0; ok && k < b->n; k++) ok = !b->ostrided[k] || b->ost[k][d] == b->ost[k][l] * b->full[l];
        if (!ok || b->R / b->full[d] < KF_CHAIN_ROWS_MIN) return;
        b->R /= b->full[d];
        b->full[d] *= b->full[l];
        for (int i = 0; i < sig->n_in; i++) b->st[i][d] = b->st[i][l];
        for (int k = 0; k < b->n; k++) b->ost[k][d] = b->ost[k][l];
        b->nd--;
        b->C = b->full[d];
    }
}

int kf_chain_bind_sig(const kf_job_sig *sig, kf_chain_bind *b, char *why, size_t cap)
{
    if (!sig || !b) return why_(why, cap, "no signature");
    memset(b, 0, sizeof *b);
    const kf_job_chain *ch = sig->chain;
    if (!ch || strcmp(sig->op, KF_CHAIN_OP)) return why_(why, cap, "not a chain job");
    b->ch = ch;
    b->n = ch->n_members;
    b->red = b->ln = b->ln_w = b->ln_b = b->sm = b->tail = b->tail_arg = b->cat = b->staged = -1;
    for (int k = 0; k < KF_CHAIN_MAX_MEMBERS; k++) b->seg_part[k] = -1, b->store_to[k] = k;
    for (int i = 0; i < KF_JOB_MAX_TENSORS; i++) b->in_part[i] = -1;
    if (b->n < 2 || b->n > KF_CHAIN_MAX_MEMBERS || sig->n_out < b->n)
        return why_(why, cap, "malformed chain");
    /* F: the widest output, or a reduction's input where wider (no member after the reduction
     * keeps its shape: F.normalize's norm -> clamp_min, whose division reads an expand) */
    int widest = 0;
    for (int k = 1; k < b->n; k++)
        if (kf_job_tensor_numel(mout(b, sig, k)) > kf_job_tensor_numel(mout(b, sig, widest))) widest = k;
    const kf_job_tensor *F = mout(b, sig, widest);
    for (int k = 0; k < b->n; k++) {
        const kf_job_sig *m = &ch->m[k].sig;
        if (red_kind_of(m, NULL, 0, k) > 0 && kf_job_tensor_numel(&m->in[0]) > kf_job_tensor_numel(F))
            F = &m->in[0];
    }
    b->nd = F->ndim ? F->ndim : 1;
    for (int d = 0; d < b->nd; d++) b->full[d] = F->ndim ? F->sizes[d] : 1;
    b->C = b->full[b->nd - 1];
    b->R = 1;
    for (int d = 0; d + 1 < b->nd; d++) b->R *= b->full[d];
    if (b->R * b->C <= 0 || b->R * b->C > ((int64_t)1 << 46))
        return why_(why, cap, "%lld elements: nothing to do or too many", (long long)(b->R * b->C));
    int64_t rowsz[KF_MAX_DIMS];
    memcpy(rowsz, b->full, sizeof rowsz);
    rowsz[b->nd - 1] = 1;

    for (int k = 0; k < b->n; k++)
        if (!strcmp(ch->m[k].sig.op, "aten::cat") && !cat_bind(b, sig, k, why, cap)) return 0;
    int have_ct = 0;
    for (int k = 0; k < b->n; k++) {
        const kf_job_sig *m = &ch->m[k].sig;
        const kf_job_tensor *y = mout(b, sig, k);
        if (!kf_job_tensor_contiguous(y)) { /* written in place: dense in memory_order's walk */
            if (y->ndim != b->nd)
                return why_(why, cap, "member %d (%s): its output is not contiguous", k, m->op);
            b->ostrided[k] = 1;
            memcpy(b->ost[k], y->strides, sizeof b->ost[k]);
        }
        if (k == b->cat) continue;
        if (!strcmp(m->op, "aten::native_layer_norm")) {
            if (!ln_bind(b, k, why, cap)) return 0;
            continue;
        }
        if (!strcmp(m->op, "aten::native_group_norm")) {
            if (!gn_bind(b, k, why, cap)) return 0;
            continue;
        }
        if (!strcmp(m->op, "aten::_softmax")) {
            if (!sm_bind(b, k, why, cap)) return 0;
            continue;
        }
        if (!strcmp(m->op, "aten::native_batch_norm")) {
            if (!bn_bind(b, k, why, cap)) return 0;
            const int ct = m->in[0].dtype == KF_F64 ? KF_F64 : KF_F32; /* eager's opmath */
            if (!have_ct) b->ct = ct, have_ct = 1;
            if (b->ct != ct || b->p_bool)
                return why_(why, cap, "member %d (%s): computes in another type than member 0", k, m->op);
            continue;
        }
        if (m->n_out != 1)
            return why_(why, cap, "member %d (%s): %d outputs (only a layer or group norm may have "
                                  "more than one)", k, m->op, m->n_out);
        int rk = red_kind_of(m, why, cap, k);
        if (rk < 0) return 0;
        if (rk && b->tail >= 0)
            return why_(why, cap, "member %d (%s): a reduction after a row tail (member %d)", k,
                        m->op, b->tail);
        if (rk) {
            if (b->red >= 0)
                return why_(why, cap, "member %d (%s): a second reduction (member %d is one)", k,
                            m->op, b->red);
            if (!same_sizes(&m->in[0], b->nd, b->full))
                return why_(why, cap, "member %d (%s): it must reduce the chain's full shape", k, m->op);
            if (ch->m[k].ref[0].kind == KF_CHAIN_MEMBER && b->phase[ch->m[k].ref[0].a] != 0)
                return why_(why, cap, "member %d (%s): reads a row value", k, m->op);
            b->red = k;
            b->red_kind = rk;
            b->phase[k] = 1;
            continue;
        }
        if (!kf_pw_bind_sig(m, &b->pb[k]))
            return why_(why, cap, "member %d (%s): not an op the chain templates fuse (a pointwise-"
                                  "engine op with these dtypes and arguments, or a last-dim "
                                  "sum/mean/amax/2-norm)", k, m->op);
        const kf_pw_bind *pb = &b->pb[k];
        if (!have_ct) b->ct = pb->ct, b->p_bool = pb->ptype == KF_BOOL, have_ct = 1;
        if (pb->ct != b->ct || (pb->ptype == KF_BOOL) != b->p_bool)
            return why_(why, cap, "member %d (%s): computes in another type than member 0", k, m->op);
        if (b->seg_part[k] >= 0) { /* on its part's columns, read by the cat alone */
            for (int i = 0; i < m->n_in; i++)
                if (ch->m[k].ref[i].kind == KF_CHAIN_MEMBER)
                    return why_(why, cap, "member %d (%s): a part of the cat (member %d) that "
                                          "reads another member", k, m->op, b->cat);
            continue;
        }
        int full = same_sizes(y, b->nd, b->full) || (F->ndim == 0 && y->ndim == 0);
        int row = b->red >= 0 && b->C > 1 && same_sizes(y, b->nd, rowsz);
        if (row) {
            for (int i = 0; i < m->n_in; i++)
                if (ch->m[k].ref[i].kind == KF_CHAIN_MEMBER && b->phase[ch->m[k].ref[i].a] != 1)
                    row = 0;
        }
        if (!row && !full && col_member(b, sig, k))
            continue; /* its phase is its readers' (below) */
        if (!row && !full)
            return why_(why, cap, "member %d (%s): its output's shape is neither the chain's, nor "
                                  "one per row after the reduction, nor one per column", k, m->op);
        if (b->tail >= 0) { /* the tail's epilogue: per element as the tail stores it */
            for (int i = 0; i < m->n_in; i++)
                if (ch->m[k].ref[i].kind == KF_CHAIN_MEMBER && b->phase[ch->m[k].ref[i].a] < 3)
                    return why_(why, cap, "member %d (%s): after the %s it may read only the "
                                          "%s's output or a later member's", k, m->op, tail_noun(b),
                                tail_noun(b));
            if (!full)
                return why_(why, cap, "member %d (%s): after the %s its output must have the "
                                      "chain's shape", k, m->op, tail_noun(b));
            b->phase[k] = 4;
            continue;
        }
        b->phase[k] = b->red < 0 ? 0 : row ? 1 : 2;
    }
    if (!have_ct) return why_(why, cap, "no pointwise member");
    if (!col_phases(b, why, cap)) return 0;
    for (int k = 0; k < b->n; k++) /* a layer norm's phase 0 stores strided: whisper's residual */
        if (b->ostrided[k] && (b->red >= 0 || (b->tail >= 0 && (b->ln < 0 || b->gn || b->phase[k]))))
            return why_(why, cap, "member %d (%s): its output is not contiguous (only a chain "
                                  "without a reduction, or the members before a layer norm, store "
                                  "strided outputs)", k, ch->m[k].sig.op);
    for (int k = 0; k < b->n; k++) {
        if (b->bn[k] && (b->red >= 0 || b->tail >= 0 || b->cat >= 0))
            return why_(why, cap, "member %d (%s): a batch norm in a chain with a reduction, a row "
                                  "tail or a cat", k, ch->m[k].sig.op);
        for (int i = 0; !b->bn[k] && i < ch->m[k].sig.n_in; i++) { /* [C] by channel: bn's alone */
            const int arg = kf_job_chain_arg(ch, k, i);
            if (arg >= 0 && b->chan[arg])
                return why_(why, cap, "member %d (%s): reads a batch norm's [C] tensor", k, ch->m[k].sig.op);
        }
    }
    for (int k = 1; k < b->n; k++) { /* an in-place member: its value goes where it writes */
        const int a = sig->out_alias[ch->out0[k]];
        if (a >= 0) continue;
        if (b->red >= 0 || b->tail >= 0 || b->cat >= 0 || b->phase[k] != 0 || b->col[k])
            return why_(why, cap, "member %d (%s): writes in place in a chain with a reduction, a row "
                                  "tail or a cat", k, ch->m[k].sig.op);
        const int root = ch->out_member[-a - 1];
        for (int j = root; j < k; j++)
            if (b->store_to[j] == root) b->dead[j] = 1;
        b->store_to[k] = root;
    }
    if (b->cat >= 0 && (b->red >= 0 || b->tail >= 0))
        return why_(why, cap, "member %d (aten::cat): a cat in a chain with a reduction or a row "
                              "tail", b->cat);
    if (b->red >= 0) {
        int rdt = mout(b, sig, b->red)->dtype;
        if ((rdt == KF_F64) != (b->ct == KF_F64) || b->ct == KF_I64)
            return why_(why, cap, "member %d (%s): accumulates in another type than the chain "
                                  "computes in", b->red, ch->m[b->red].sig.op);
    }
    for (int k = 0; k < b->n; k++) /* an input a part reads is read on no other columns */
        for (int i = 0; b->seg_part[k] < 0 && k != b->cat && i < ch->m[k].sig.n_in; i++) {
            const int arg = kf_job_chain_arg(ch, k, i);
            if (arg >= 0 && b->in_part[arg] >= 0)
                return why_(why, cap, "member %d (%s): reads an input a part of the cat reads", k,
                            ch->m[k].sig.op);
        }
    /* the kernel inputs on F's dims */
    for (int i = 0; i < sig->n_in; i++) {
        const kf_job_tensor *t = &sig->in[i];
        if (b->gn && (i == b->ln_w || i == b->ln_b)) continue; /* read by channel (st 0) */
        if (b->chan[i]) { /* a batch norm's [C]: along F's dim 1 */
            for (int d = 0; d < b->nd; d++) b->st[i][d] = d == 1 ? t->strides[0] : 0;
            continue;
        }
        if (t->ndim > b->nd) return why_(why, cap, "input %d has more dims than the chain", i);
        int off = b->nd - t->ndim;
        for (int d = 0; d < b->nd; d++) {
            if (d < off) { b->st[i][d] = 0; continue; }
            int64_t s = t->sizes[d - off];
            int64_t want = d == b->nd - 1 && b->in_part[i] >= 0 ? b->part_len[b->in_part[i]] : b->full[d];
            if (s != 1 && s != want)
                return why_(why, cap, "input %d does not broadcast to the chain's shape", i);
            b->st[i][d] = s == 1 ? 0 : t->strides[d - off];
        }
    }
    memory_order(b, mout(b, sig, widest));
    coalesce(b, sig);
    for (int k = 0; k < b->n; k++)
        if (b->ostrided[k] && malias(b, sig, k))
            return why_(why, cap, "member %d (%s): its output is not contiguous", k, ch->m[k].sig.op);
    return 1;
}

/* ---- text ---- */

static void store_expr(kf_strbuf *s, int dt, int cuda, const char *v)
{
    if (dt == KF_F16 || dt == KF_BF16) {
        if (cuda) kf_strbuf_printf(s, "kf_from_f<%s>((float)(%s))", kf_pw_ctype(dt, 1), v);
        else kf_strbuf_printf(s, "%s((float)(%s))", dt == KF_F16 ? "kf_pw_f2h" : "kf_pw_f2bf", v);
    } else {
        kf_strbuf_printf(s, "((%s)(%s))", kf_pw_ctype(dt, cuda), v);
    }
}

static void load_expr(kf_strbuf *s, int dt, int cuda, const char *v)
{
    if (dt == KF_F16 || dt == KF_BF16) {
        if (cuda) kf_strbuf_printf(s, "(kf_ct)kf_to_f(%s)", v);
        else kf_strbuf_printf(s, "(kf_ct)%s(%s)", dt == KF_F16 ? "kf_pw_h2f" : "kf_pw_bf2f", v);
    } else {
        kf_strbuf_printf(s, "(kf_ct)(%s)", v);
    }
}

/* CUDA: kf_ct v as a dt output stores it, read back */
static void load_stored(kf_strbuf *s, int dt, const char *v)
{
    kf_strbuf t = {0};
    store_expr(&t, dt, 1, v);
    load_expr(s, dt, 1, t.p);
    kf_strbuf_free(&t);
}

void kf_chain_emit_defs(kf_strbuf *s, const kf_chain_bind *b, int cuda, const char *fnq)
{
    const kf_job_chain *ch = b->ch;
    kf_strbuf_printf(s, "/* chain of %d:", b->n);
    for (int k = 0; k < b->n; k++)
        kf_strbuf_printf(s, " %s%s (phase %d)", k ? "->" : "", ch->m[k].sig.op, b->phase[k]);
    kf_strbuf_printf(s, " */\n");
    kf_pw_emit_math(s, b->ct, b->p_bool, cuda);
    for (int k = 0; k < b->n; k++) {
        if (k == b->red || k == b->tail || k == b->cat || b->bn[k]) continue;
        char sfx[8];
        snprintf(sfx, sizeof sfx, "_m%d", k);
        kf_pw_emit_op(s, &b->pb[k], cuda, sfx);
    }
    kf_strbuf_printf(s, "#define KF_R %lldLL\n#define KF_C %lldLL\n", (long long)b->R, (long long)b->C);
    if (b->red >= 0) {
        static const char *const init[] = {"", "(kf_ct)0", "(kf_ct)0", "(-(kf_ct)KF_PW_INF)", "(kf_ct)0"};
        static const char *const fin[] = {"", "(a)", "((a) / (kf_ct)KF_C)", "(a)", "kf_sqrt(a)"};
        /* KF_RMAP: what an element adds to the fold (its square for the 2-norm) */
        kf_strbuf_printf(s, "#define KF_RINIT %s\n#define KF_RCOMB(a, b) %s\n"
                            "#define KF_RFINAL(a) %s\n#define KF_RMAP(v) %s\n",
                         init[b->red_kind],
                         b->red_kind == KF_CHAIN_RED_AMAX ? "kf_pw_max(a, b)" : "((a) + (b))",
                         fin[b->red_kind], b->red_kind == KF_CHAIN_RED_NORM2 ? "((v) * (v))" : "(v)");
    }
    if (b->tail >= 0) /* the tail's block sums */
        kf_strbuf_printf(s, "#define KF_RINIT (kf_ct)0\n#define KF_RCOMB(a, b) ((a) + (b))\n");
    if (b->ln >= 0) kf_strbuf_printf(s, "#define KF_LN_EPS %.17g\n", b->ln_eps);
    if (b->gn)
        kf_strbuf_printf(s, "#define KF_NG %lldLL\n#define KF_RG %lldLL\n#define KF_RPC %lldLL\n"
                            "#define KF_CH %lldLL\n",
                         (long long)b->gn_ng, (long long)b->gn_rg, (long long)b->gn_rpc,
                         (long long)b->gn_ch);
    /* row r's base offset in each input: r over F's outer dims, the innermost fastest */
    int n_in = ch->n_head + ch->n_ext;
    for (int i = 0; i < n_in; i++) {
        kf_strbuf_printf(s, "%s long long kf_rb%d(long long r)\n{\n    long long o = 0;\n", fnq, i);
        for (int d = b->nd - 2; d >= 0; d--)
            kf_strbuf_printf(s, "    o += (r %% %lldLL) * %lldLL;\n    r /= %lldLL;\n",
                             (long long)b->full[d], (long long)b->st[i][d], (long long)b->full[d]);
        kf_strbuf_printf(s, "    (void)r;\n    return o;\n}\n");
    }
    for (int k = 0; k < b->n; k++) { /* a strided output's row base */
        if (!b->ostrided[k]) continue;
        kf_strbuf_printf(s, "%s long long kf_ob%d(long long r)\n{\n    long long o = 0;\n", fnq, k);
        for (int d = b->nd - 2; d >= 0; d--)
            kf_strbuf_printf(s, "    o += (r %% %lldLL) * %lldLL;\n    r /= %lldLL;\n",
                             (long long)b->full[d], (long long)b->ost[k][d], (long long)b->full[d]);
        kf_strbuf_printf(s, "    (void)r;\n    return o;\n}\n");
    }
}

void kf_chain_emit_rowbases(kf_strbuf *s, const kf_chain_bind *b, const char *ind)
{
    int n_in = b->ch->n_head + b->ch->n_ext;
    for (int i = 0; i < n_in; i++)
        kf_strbuf_printf(s, "%sconst long long rb%d = kf_rb%d(r);\n", ind, i, i);
    for (int k = 0; k < b->n; k++)
        if (b->ostrided[k]) kf_strbuf_printf(s, "%sconst long long ob%d = kf_ob%d(r);\n", ind, k, k);
}

/* Where member k stores the element at column `col` of row r (len: its row's length). */
static void out_at(char *buf, size_t cap, const kf_chain_bind *b, int k, const char *col, int64_t len)
{
    if (b->ostrided[k]) snprintf(buf, cap, "ob%d + %s * %lldLL", k, col, (long long)b->ost[k][b->nd - 1]);
    else if (len == b->C) snprintf(buf, cap, "r * KF_C + %s", col);
    else snprintf(buf, cap, "r * %lldLL + %s", (long long)len, col);
}

/* the pointer a member's output is stored through */
static void out_ptr(char *buf, size_t cap, const kf_chain_bind *b, int k)
{
    const kf_pw_bind *pb = &b->pb[k];
    if (k == 0 && k != b->red && pb->dest_in >= 0) snprintf(buf, cap, "p%d", pb->dest_in);
    else if (b->store_to[k] != k) out_ptr(buf, cap, b, b->store_to[k]);
    else snprintf(buf, cap, "y%d", k);
}

int kf_chain_member_dtype(const kf_chain_bind *b, int k)
{
    return b->ch->m[k].sig.out[0].dtype;
}

/* where member k's external input li is read: its pointer and offset, or under vec (cuda_chain's
 * vector layout, kf_chain_emit_phase_vec) element e of its pack a<i> (a broadcast along the row:
 * the row's one value) */
static void ext_src(const kf_chain_bind *b, int k, int li, const char *cix, int vec, char *src,
                    size_t scap, char *off, size_t ocap)
{
    int i = kf_job_chain_arg(b->ch, k, li);
    int64_t sl = b->st[i][b->nd - 1];
    if (i == b->staged) snprintf(src, scap, "kf_xs[kf_tx]"), snprintf(off, ocap, "%s", cix);
    else if (vec && sl == 1) snprintf(src, scap, "a%d.v", i), snprintf(off, ocap, "e");
    else if (vec) snprintf(src, scap, "p%d", i), snprintf(off, ocap, "rb%d", i);
    else snprintf(src, scap, "p%d", i), snprintf(off, ocap, "rb%d + %s * %lldLL", i, cix, (long long)sl);
}

/* phase-0 member m's value read back by a phase-2 member */
static int read_back(const kf_chain_bind *b, int m)
{
    const kf_job_chain *ch = b->ch;
    if (b->phase[m] != 0) return 0;
    for (int k = 0; k < b->n; k++)
        for (int i = 0; b->phase[k] == 2 && i < ch->m[k].sig.n_in; i++)
            if (ch->m[k].ref[i].kind == KF_CHAIN_MEMBER && ch->m[k].ref[i].a == m) return 1;
    return 0;
}

/* Segment member k (phase 0, its inputs kernel inputs) at column c - off of its part: v<k>,
 * stored at r * len + (c - off). */
static void emit_segment(kf_strbuf *s, const kf_chain_bind *b, int k, int cuda, const char *ind)
{
    const kf_pw_bind *pb = &b->pb[k];
    const int p = b->seg_part[k];
    const char *src[KF_PW_MAX_OPS] = {0}, *off[KF_PW_MAX_OPS] = {0};
    char sb[KF_PW_MAX_OPS][16], ob[KF_PW_MAX_OPS][64], cix[48], sfx[8];
    snprintf(cix, sizeof cix, "(c - %lldLL)", (long long)b->part_off[p]);
    snprintf(sfx, sizeof sfx, "_m%d", k);
    for (int q = 0; q < pb->n; q++) {
        int li = pb->in_idx[q];
        if (li < 0) continue;
        ext_src(b, k, li, cix, 0, sb[q], sizeof sb[q], ob[q], sizeof ob[q]);
        src[q] = sb[q];
        off[q] = ob[q];
    }
    kf_strbuf_printf(s, "%sconst %s v%d = KF_ST%s(", ind, kf_pw_ctype(kf_chain_member_dtype(b, k), cuda), k, sfx);
    kf_pw_emit_call_as(s, pb, sfx, src, off);
    char at[96];
    out_at(at, sizeof at, b, k, cix, b->part_len[p]);
    kf_strbuf_printf(s, ");\n%sy%d[%s] = v%d;\n", ind, k, at, k);
}

/* The cat member: per part, the branch of its columns, its value there (the segment member's,
 * computed there, or the kernel input's element as it is: a cat copies bits). */
static void emit_cat(kf_strbuf *s, const kf_chain_bind *b, int cuda, const char *ind, int only)
{
    const int k = b->cat;
    kf_strbuf_printf(s, "%s%s v%d;\n", ind, kf_pw_ctype(kf_chain_member_dtype(b, k), cuda), k);
    char in2[64];
    snprintf(in2, sizeof in2, "%s    ", ind);
    for (int p = 0; p < b->n_parts; p++) {
        const int64_t end = b->part_off[p] + b->part_len[p];
        if (only >= 0 && p != only) continue;
        if (only >= 0) kf_strbuf_printf(s, "%s{\n", ind);
        else if (p + 1 < b->n_parts) kf_strbuf_printf(s, "%s%sif (c < %lldLL) {\n", ind, p ? "} else " : "", (long long)end);
        else kf_strbuf_printf(s, "%s%s{\n", ind, p ? "} else " : "");
        if (b->part_member[p] >= 0) {
            emit_segment(s, b, b->part_member[p], cuda, in2);
            kf_strbuf_printf(s, "%sv%d = v%d;\n", in2, k, b->part_member[p]);
        } else {
            const int i = b->part_arg[p];
            kf_strbuf_printf(s, "%sv%d = p%d[rb%d + (c - %lldLL) * %lldLL];\n", in2, k, i, i,
                             (long long)b->part_off[p], (long long)b->st[i][b->nd - 1]);
        }
    }
    char at[96];
    out_at(at, sizeof at, b, k, "c", b->C);
    kf_strbuf_printf(s, "%s}\n%sy%d[%s] = v%d;\n", ind, ind, k, at, k);
}

/* the tail's input as kf_ct where it is a kernel input (tail_arg): its element (r, c) */
static void tail_in(kf_strbuf *s, const kf_chain_bind *b, int cuda)
{
    const int i = b->tail_arg;
    char x[80];
    snprintf(x, sizeof x, "p%d[rb%d + c * %lldLL]", i, i, (long long)b->st[i][b->nd - 1]);
    load_expr(s, b->ch->m[b->tail].sig.in[0].dtype, cuda, x);
}

/* eager's invstd of a channel whose running var is `var` (kf_ct, float: the binding takes f32,
 * f16 and bf16 inputs only): rsqrtf on CUDA, with eps as a float, as torch's CUDA kernels compute
 * it; 1 / sqrt on the CPU */
static void bn_invstd(kf_strbuf *s, int cuda, const char *var, double eps)
{
    if (cuda) kf_strbuf_printf(s, "rsqrtf(%s + (float)%.17g)", var, eps);
    else kf_strbuf_printf(s, "((kf_ct)1 / kf_sqrt(%s + (kf_ct)%.17g))", var, eps);
}

void kf_chain_emit_prologue(kf_strbuf *s, const kf_chain_bind *b, int cuda, const char *ind)
{
    const kf_job_chain *ch = b->ch;
    for (int k = 0; k < b->n; k++) {
        const kf_job_sig *m = &ch->m[k].sig;
        if (!b->bn[k] || !kf_job_tensor_numel(&m->out[1])) continue;
        const int rm = b->bn_in[k][3], rv = b->bn_in[k][4];
        char v[64];
        kf_strbuf mean = {0}, var = {0}, inv = {0};
        snprintf(v, sizeof v, "p%d[c * %lldLL]", kf_job_chain_arg(ch, k, rm), (long long)m->in[rm].strides[0]);
        load_expr(&mean, m->in[rm].dtype, cuda, v);
        snprintf(v, sizeof v, "p%d[c * %lldLL]", kf_job_chain_arg(ch, k, rv), (long long)m->in[rv].strides[0]);
        load_expr(&var, m->in[rv].dtype, cuda, v);
        bn_invstd(&inv, cuda, var.p, b->bn_eps[k]);
        const long long nc = (long long)m->in[rm].sizes[0]; /* C (F's dims may be permuted by now) */
        if (cuda)
            kf_strbuf_printf(s, "%sfor (long long c = (long long)blockIdx.x * blockDim.x + threadIdx.x; c < "
                                "%lldLL; c += (long long)gridDim.x * blockDim.x) {\n", ind, nc);
        else
            kf_strbuf_printf(s, "%sfor (long long c = 0; c < %lldLL; c++) {\n", ind, nc);
        kf_strbuf_printf(s, "%s    y%d_1[c] = ", ind, k);
        store_expr(s, m->out[1].dtype, cuda, mean.p);
        kf_strbuf_printf(s, ";\n%s    y%d_2[c] = ", ind, k);
        store_expr(s, m->out[2].dtype, cuda, inv.p);
        kf_strbuf_printf(s, ";\n%s}\n", ind);
        kf_strbuf_free(&mean);
        kf_strbuf_free(&var);
        kf_strbuf_free(&inv);
    }
}

/* Batch norm member k in eval: v<k>, its value of element (r, c) as eager computes it in kf_ct,
 * invstd = 1 / sqrt(var + eps): on CUDA fma(w * (x - mean), invstd, b), on the CPU x * alpha + beta
 * with alpha = invstd * w and beta = b - mean * alpha, both multiply-adds fused. */
static void emit_bn(kf_strbuf *s, const kf_chain_bind *b, int k, const char *cix, int cuda, int vec,
                    const char *ind)
{
    const kf_job_member *jm = &b->ch->m[k];
    kf_strbuf x[5] = {{0}};
    for (int a = 0; a < 5; a++) {
        const int li = b->bn_in[k][a];
        char v[112], sp[16], so[64];
        if (li < 0) continue;
        if (jm->ref[li].kind == KF_CHAIN_MEMBER) snprintf(v, sizeof v, "v%d", jm->ref[li].a);
        else ext_src(b, k, li, cix, vec, sp, sizeof sp, so, sizeof so), snprintf(v, sizeof v, "%s[%s]", sp, so);
        load_expr(&x[a], jm->sig.in[li].dtype, cuda, v);
    }
    kf_strbuf_printf(s, "%sconst %s v%d = ", ind, kf_pw_ctype(kf_chain_member_dtype(b, k), cuda), k);
    kf_strbuf e = {0}, inv = {0}, al = {0};
    bn_invstd(&inv, cuda, x[4].p, b->bn_eps[k]);
    if (cuda) { /* torch's contiguous and channels_last kernels: w * (x - mean) * invstd + b, its
                 * multiply-add fused (a member downstream, a residual add, cancels to its ulp) */
        kf_strbuf_printf(&e, "fmaf(%s%s(%s - %s), %s, %s)", x[1].p ? x[1].p : "", x[1].p ? " * " : "",
                         x[0].p, x[3].p, inv.p, x[2].p ? x[2].p : "(kf_ct)0");
    } else { /* the CPU's, its multiply-adds fused as its vectorized kernel's are (host_norm_batch.c):
              * alpha = invstd * w, beta = fma(-mean, alpha, b), y = fma(x, alpha, beta) */
        kf_strbuf_printf(&al, "(%s%s%s)", inv.p, x[1].p ? " * " : "", x[1].p ? x[1].p : "");
        kf_strbuf_printf(&e, "fmaf(%s, %s, fmaf(-%s, %s, %s))", x[0].p, al.p, x[3].p, al.p,
                         x[2].p ? x[2].p : "(kf_ct)0");
    }
    store_expr(s, kf_chain_member_dtype(b, k), cuda, e.p);
    kf_strbuf_free(&inv);
    kf_strbuf_free(&al);
    kf_strbuf_printf(s, ";\n");
    kf_strbuf_free(&e);
    for (int a = 0; a < 5; a++) kf_strbuf_free(&x[a]);
}

/* Pointwise member k: v<k>, its op's element function of its inputs (members' values or kernel
 * inputs' elements), stored as its output's dtype. */
static void emit_pw_value(kf_strbuf *s, const kf_chain_bind *b, int k, const char *cix, int cuda, int vec,
                          const char *ind)
{
    const kf_job_member *jm = &b->ch->m[k];
    char sfx[8];
    snprintf(sfx, sizeof sfx, "_m%d", k);
    const kf_pw_bind *pb = &b->pb[k];
    const char *src[KF_PW_MAX_OPS] = {0}, *off[KF_PW_MAX_OPS] = {0};
    char sb[KF_PW_MAX_OPS][16], ob[KF_PW_MAX_OPS][64];
    for (int q = 0; q < pb->n; q++) {
        int li = pb->in_idx[q];
        if (li < 0) continue;
        const kf_chain_ref *r = &jm->ref[li];
        if (r->kind == KF_CHAIN_MEMBER) {
            snprintf(sb[q], sizeof sb[q], "(&v%d)", r->a);
            snprintf(ob[q], sizeof ob[q], "0");
        } else {
            ext_src(b, k, li, cix, vec, sb[q], sizeof sb[q], ob[q], sizeof ob[q]);
        }
        src[q] = sb[q];
        off[q] = ob[q];
    }
    kf_strbuf_printf(s, "%sconst %s v%d = KF_ST%s(", ind, kf_pw_ctype(kf_chain_member_dtype(b, k), cuda),
                     k, sfx);
    kf_pw_emit_call_as(s, pb, sfx, src, off);
    kf_strbuf_printf(s, ");\n");
}

static void emit_phase_(kf_strbuf *s, const kf_chain_bind *b, int phase, int cuda, const char *ind,
                        const char *store_guard, int vec, int part)
{
    const kf_job_chain *ch = b->ch;
    const char *cix = phase == 1 ? "0" : "c";
    if (phase == 2) { /* phase-0 values read back: this thread stored them */
        for (int m = 0; m < b->n; m++) {
            if (!read_back(b, m)) continue;
            char p[16];
            out_ptr(p, sizeof p, b, m);
            kf_strbuf_printf(s, "%sconst %s v%d = ", ind, kf_pw_ctype(kf_chain_member_dtype(b, m), cuda), m);
            if (vec) kf_strbuf_printf(s, "q%d.v[e];\n", m);
            else kf_strbuf_printf(s, "%s[r * KF_C + c];\n", p);
        }
    }
    for (int k = 0; k < b->n; k++) {
        const kf_job_member *jm = &ch->m[k];
        char p[16];
        out_ptr(p, sizeof p, b, k);
        if (phase == 0 && k == b->red) { /* fold the reduction's input */
            const kf_chain_ref *r = &jm->ref[0];
            char v[112], sp[16], so[64];
            int dt = jm->sig.in[0].dtype;
            if (r->kind == KF_CHAIN_MEMBER) snprintf(v, sizeof v, "v%d", r->a);
            else {
                ext_src(b, k, 0, cix, vec, sp, sizeof sp, so, sizeof so);
                snprintf(v, sizeof v, "%s[%s]", sp, so);
            }
            kf_strbuf_printf(s, "%s{\n%s    const kf_ct kf_rv = ", ind, ind);
            load_expr(s, dt, cuda, v);
            kf_strbuf_printf(s, ";\n%s    acc = KF_RCOMB(acc, KF_RMAP(kf_rv));\n%s}\n", ind, ind);
            continue;
        }
        if (b->phase[k] != phase || k == b->red || b->seg_part[k] >= 0) continue;
        if (k == b->cat) {
            emit_cat(s, b, cuda, ind, part);
            continue;
        }
        if (b->bn[k]) emit_bn(s, b, k, cix, cuda, vec, ind);
        else emit_pw_value(s, b, k, cix, cuda, vec, ind);
        if (b->dead[k]) continue;
        if (phase == 1) kf_strbuf_printf(s, "%s%s%s[r] = v%d;\n", ind, store_guard, p, k);
        else if (vec) kf_strbuf_printf(s, "%so%d.v[e] = v%d;\n", ind, k, k);
        else if (b->col[k]) kf_strbuf_printf(s, "%sif (r == 0) %s[c] = v%d;\n", ind, p, k);
        else {
            char v[16];
            snprintf(v, sizeof v, "v%d", k);
            kf_chain_emit_store(s, b, k, v, ind);
        }
    }
    if (phase == 0 && b->tail >= 0) { /* the norm's sum or the softmax's max, folded */
        char v[16];
        int xm = ch->m[b->tail].ref[0].a;
        snprintf(v, sizeof v, "v%d", xm);
        kf_strbuf x = {0}; /* the tail's input: a kernel input's element, or member xm's value */
        if (b->tail_arg >= 0) tail_in(&x, b, cuda);
        else load_expr(&x, kf_chain_member_dtype(b, xm), cuda, v);
        if (b->ln >= 0)
            kf_strbuf_printf(s, "%skf_s += %s%s;\n", ind, cuda ? "" : "(double)", x.p);
        else /* a NaN is dropped from the max and comes back through its exp in the sum */
            kf_strbuf_printf(s, "%s{\n%s    const kf_ct t = %s;\n%s    kf_m = t > kf_m ? t : kf_m;\n%s}\n",
                             ind, ind, x.p, ind, ind);
        kf_strbuf_free(&x);
    }
}

void kf_chain_emit_phase(kf_strbuf *s, const kf_chain_bind *b, int phase, int cuda,
                         const char *ind, const char *store_guard)
{
    emit_phase_(s, b, phase, cuda, ind, store_guard, 0, -1);
}

void kf_chain_emit_phase_part(kf_strbuf *s, const kf_chain_bind *b, int part, int cuda, const char *ind)
{
    emit_phase_(s, b, 0, cuda, ind, "", 0, part);
}

int kf_chain_vec_width(const kf_chain_bind *b, const kf_job_sig *sig)
{
    if (b->cat >= 0) return 1; /* a pack would straddle the parts */
    for (int k = 0; k < b->n; k++)
        if (b->ostrided[k]) return 1;
    int es = 1;
    for (int k = 0; k < sig->n_out; k++) {
        const int m = b->ch->out_member[k];
        if (m == b->ln && k > b->ch->out0[m]) continue; /* the norm's mean and rstd: one per row */
        if (!sig->out_alias[k] && kf_dtype_size(sig->out[k].dtype) > es) es = kf_dtype_size(sig->out[k].dtype);
    }
    for (int i = 0; i < sig->n_in; i++)
        if (b->st[i][b->nd - 1] == 1 && kf_dtype_size(sig->in[i].dtype) > es)
            es = kf_dtype_size(sig->in[i].dtype);
    int vw = es <= 8 ? 16 / es : 1;
    if (vw < 2 || b->C % vw) return 1;
    for (int i = 0; i < sig->n_in; i++) {
        int64_t sl = b->st[i][b->nd - 1];
        if (sl == 0) continue;
        if (sl != 1 || sig->in[i].align < vw * kf_dtype_size(sig->in[i].dtype)) return 1;
        for (int d = 0; d + 1 < b->nd; d++)
            if (b->st[i][d] % vw) return 1;
    }
    return vw;
}

static void phase_vec(kf_strbuf *s, const kf_chain_bind *b, int phase, int cache, const char *ind)
{
    const kf_job_chain *ch = b->ch;
    int loaded[KF_JOB_MAX_TENSORS] = {0};
    for (int k = 0; k < b->n; k++) { /* the packs of the inputs this phase reads along the row */
        if (b->phase[k] != phase && !(phase == 0 && k == b->red)) continue;
        if (k == b->tail) continue;
        for (int li = 0; li < ch->m[k].sig.n_in; li++) {
            if (ch->m[k].ref[li].kind == KF_CHAIN_MEMBER) continue;
            int i = kf_job_chain_arg(ch, k, li);
            if (i < 0 || loaded[i] || b->st[i][b->nd - 1] != 1) continue;
            loaded[i] = 1;
            const char *t = kf_pw_ctype(ch->m[k].sig.in[li].dtype, 1);
            kf_strbuf_printf(s, "%sconst kf_pack<%s, KF_VW> a%d = *reinterpret_cast<const kf_pack<%s, "
                                "KF_VW> *>(p%d + rb%d + c0);\n", ind, t, i, t, i, i);
        }
    }
    for (int m = 0; phase == 2 && m < b->n; m++) {
        if (!read_back(b, m)) continue;
        const char *t = kf_pw_ctype(kf_chain_member_dtype(b, m), 1);
        char p[16];
        out_ptr(p, sizeof p, b, m);
        kf_strbuf_printf(s, "%sconst kf_pack<%s, KF_VW> q%d = *reinterpret_cast<const kf_pack<%s, "
                            "KF_VW> *>(%s + r * KF_C + c0);\n", ind, t, m, t, p);
    }
    for (int k = 0; k < b->n; k++)
        if (b->phase[k] == phase && k != b->red && k != b->tail && !b->dead[k])
            kf_strbuf_printf(s, "%skf_pack<%s, KF_VW> o%d;\n", ind, kf_pw_ctype(kf_chain_member_dtype(b, k), 1), k);
    char in2[32];
    snprintf(in2, sizeof in2, "%s    ", ind);
    kf_strbuf_printf(s, "#pragma unroll\n%sfor (int e = 0; e < KF_VW; e++) {\n", ind);
    emit_phase_(s, b, phase, 1, in2, "", 1, -1);
    if (cache) {
        char v[16];
        snprintf(v, sizeof v, "v%d", b->ch->m[b->tail].ref[0].a);
        kf_strbuf_printf(s, "%skf_x[jp * KF_VW + e] = ", in2);
        load_expr(s, kf_chain_member_dtype(b, b->ch->m[b->tail].ref[0].a), 1, v);
        kf_strbuf_printf(s, ";\n");
    }
    kf_strbuf_printf(s, "%s}\n", ind);
    for (int k = 0; k < b->n; k++) {
        if (b->phase[k] != phase || k == b->red || k == b->tail || b->dead[k]) continue;
        char p[16];
        out_ptr(p, sizeof p, b, k);
        kf_strbuf_printf(s, "%s%skf_pack_st(%s + %sc0, o%d);\n", ind, b->col[k] ? "if (r == 0) " : "", p,
                         b->col[k] ? "" : "r * KF_C + ", k);
    }
}

void kf_chain_emit_phase_vec(kf_strbuf *s, const kf_chain_bind *b, int phase, const char *ind)
{
    phase_vec(s, b, phase, 0, ind);
}

int kf_chain_tail_packs(const kf_chain_bind *b, const kf_job_sig *sig, int vw)
{
    if (vw < 2 || b->ln < 0 || b->tail != b->ln || b->gn || b->tail_arg >= 0 || b->red >= 0) return 0;
    for (int k = 0; k < b->n; k++)
        if (b->phase[k] == 4) return 0; /* an epilogue's members store element by element */
    for (int a = 0; a < 2; a++) {
        const int i = a ? b->ln_b : b->ln_w;
        if (i >= 0 && (b->st[i][b->nd - 1] != 1 || sig->in[i].align < vw * kf_dtype_size(sig->in[i].dtype)))
            return 0;
    }
    return 1;
}

/* cuda 3's loop over the thread's packs of row r (c0 in scope), "{" left open */
static void packs_loop(kf_strbuf *s, const char *ind)
{
    kf_strbuf_printf(s, "#pragma unroll\n%sfor (int jp = 0; jp < KF_PPL; jp++) {\n"
                        "%s    const long long c0 = ((long long)KF_LANE + (long long)jp * KF_LANES) * KF_VW;\n"
                        "%s    if (c0 >= KF_C) break;\n", ind, ind, ind);
}

void kf_chain_emit_phase_vec_cache(kf_strbuf *s, const kf_chain_bind *b, const char *ind)
{
    packs_loop(s, ind);
    char in2[32];
    snprintf(in2, sizeof in2, "%s    ", ind);
    phase_vec(s, b, 0, 1, in2);
    kf_strbuf_printf(s, "%s}\n", ind);
}

void kf_chain_emit_ln_y_pack(kf_strbuf *s, const kf_chain_bind *b, const char *x, const char *each,
                             const char *ind)
{
    const kf_job_member *jm = &b->ch->m[b->ln];
    const int k = b->ln, ydt = kf_chain_member_dtype(b, k);
    const char *yt = kf_pw_ctype(ydt, 1);
    for (int a = 0; a < 2; a++) {
        const int i = a ? b->ln_b : b->ln_w;
        if (i < 0) continue;
        const char *t = kf_pw_ctype(jm->sig.in[a && b->ln_w >= 0 ? 2 : 1].dtype, 1);
        kf_strbuf_printf(s, "%s    const kf_pack<%s, KF_VW> kf_%c = *reinterpret_cast<const kf_pack<%s, "
                            "KF_VW> *>(p%d + rb%d + c0);\n", ind, t, a ? 'b' : 'w', t, i, i);
    }
    kf_strbuf_printf(s, "%s    kf_pack<%s, KF_VW> o%d;\n#pragma unroll\n"
                        "%s    for (int e = 0; e < KF_VW; e++) {\n"
                        "%s        kf_ct v = (%s - kf_mean) * kf_rstd;\n",
                     ind, yt, k, ind, ind, x);
    for (int a = 0; a < 2; a++) {
        if ((a ? b->ln_b : b->ln_w) < 0) continue;
        kf_strbuf_printf(s, "%s        v %s= ", ind, a ? "+" : "*");
        load_expr(s, jm->sig.in[a && b->ln_w >= 0 ? 2 : 1].dtype, 1, a ? "kf_b.v[e]" : "kf_w.v[e]");
        kf_strbuf_printf(s, ";\n");
    }
    kf_strbuf_printf(s, "%s        o%d.v[e] = ", ind, k);
    store_expr(s, ydt, 1, "v");
    kf_strbuf_printf(s, ";\n%s%s    }\n%s    kf_pack_st(y%d + r * KF_C + c0, o%d);\n", each ? each : "",
                     ind, ind, k, k);
}

/* cuda 3: y from the registers a pack at a time */
static void emit_ln_y_packs(kf_strbuf *s, const kf_chain_bind *b, const char *ind)
{
    packs_loop(s, ind);
    kf_chain_emit_ln_y_pack(s, b, "kf_x[jp * KF_VW + e]", NULL, ind);
    kf_strbuf_printf(s, "%s}\n", ind);
}

int kf_chain_emit_params(kf_strbuf *s, const kf_chain_bind *b, const kf_job_sig *sig, int cuda,
                         char types[][40], const char **args)
{
    int na = 0, dest = b->red != 0 ? b->pb[0].dest_in : -1;
    for (int i = 0; i < sig->n_in; i++) {
        int w = i == dest, dt = sig->in[i].dtype;
        kf_strbuf_printf(s, "%s%s%s *p%d", na ? ", " : "", w ? "" : "const ", kf_pw_ctype(dt, cuda), i);
        snprintf(types[na], 40, "%s%s*", w ? "" : "const ", kf_pw_rectype(dt));
        args[na] = types[na];
        na++;
    }
    for (int j = 0; j < sig->n_out; j++) { /* member m's first output y<m>, its others y<m>_<o> */
        if (sig->out_alias[j]) continue;
        const int dt = sig->out[j].dtype, m = b->ch->out_member[j], o = j - b->ch->out0[m];
        char extra[8] = "";
        if (o) snprintf(extra, sizeof extra, "_%d", o);
        kf_strbuf_printf(s, "%s%s *%sy%d%s", na ? ", " : "", kf_pw_ctype(dt, cuda),
                         cuda ? "__restrict__ " : "restrict ", m, extra);
        snprintf(types[na], 40, "%s*", kf_pw_rectype(dt));
        args[na] = types[na];
        na++;
    }
    return na;
}

void kf_chain_emit_red_value(kf_strbuf *s, const kf_chain_bind *b, int cuda, const char *ind,
                             const char *store_guard)
{
    int k = b->red, dt = kf_chain_member_dtype(b, k);
    kf_strbuf_printf(s, "%sconst %s v%d = ", ind, kf_pw_ctype(dt, cuda), k);
    store_expr(s, dt, cuda, "KF_RFINAL(acc)");
    kf_strbuf_printf(s, ";\n%s%sy%d[r] = v%d;\n", ind, store_guard, k, k);
}

void kf_chain_emit_tail_begin(kf_strbuf *s, const kf_chain_bind *b, int cuda, const char *ind)
{
    if (cuda >= 2 && b->tail >= 0) kf_strbuf_printf(s, "%skf_ct kf_x[KF_CPL];\n", ind);
    if (b->sm >= 0) kf_strbuf_printf(s, "%skf_ct kf_m = -(kf_ct)KF_PW_INF;\n", ind);
    if (b->ln < 0) return;
    if (cuda) kf_strbuf_printf(s, "%skf_ct kf_s = (kf_ct)0, kf_q = (kf_ct)0;\n", ind);
    else kf_strbuf_printf(s, "%sdouble kf_s = 0.0, kf_q = 0.0;\n", ind);
}

const char *kf_chain_tail_simd(const kf_chain_bind *b)
{
    return b->ln >= 0 ? "#pragma omp simd reduction(+ : kf_s)\n"
         : b->sm >= 0 ? "#pragma omp simd reduction(max : kf_m)\n"
                      : NULL;
}

void kf_chain_emit_tail_cache(kf_strbuf *s, const kf_chain_bind *b, const char *ind)
{
    char v[16];
    snprintf(v, sizeof v, "v%d", b->ch->m[b->tail].ref[0].a);
    kf_strbuf_printf(s, "%skf_x[j] = ", ind);
    load_expr(s, kf_chain_member_dtype(b, b->ch->m[b->tail].ref[0].a), 1, v);
    kf_strbuf_printf(s, ";\n");
}

const char *kf_chain_cols_loop(char *buf, size_t cap, int cuda, const char *ind)
{
    if (cuda >= 2)
        snprintf(buf, cap, "#pragma unroll\n%sfor (int j = 0; j < KF_CPL; j++) {\n"
                           "%s    const long long c = KF_COL(j);\n"
                           "%s    if (c >= KF_C) break;", ind, ind, ind);
    else
        snprintf(buf, cap, "%s", cuda ? "for (long long c = KF_LANE; c < KF_C; c += KF_LANES) {"
                                      : "for (long long c = 0; c < KF_C; c++) {");
    return buf;
}

/* the tail's input x as kf_ct: read back from the member that stored it, or (cuda 2) the
 * thread's registers */
static void tail_x(kf_strbuf *sx, const kf_chain_bind *b, int cuda)
{
    int xm = b->ch->m[b->tail].ref[0].a;
    char xp[16], x[128];
    if (cuda >= 2) {
        kf_strbuf_printf(sx, "kf_x[j]");
        return;
    }
    if (b->tail_arg >= 0) {
        tail_in(sx, b, cuda != 0);
        return;
    }
    char at[96];
    out_ptr(xp, sizeof xp, b, xm);
    out_at(at, sizeof at, b, xm, "c", b->C);
    snprintf(x, sizeof x, "%s[%s]", xp, at);
    load_expr(sx, kf_chain_member_dtype(b, xm), cuda, x);
}

/* y = exp(x - max) / sum over the row, x the stored input (eager's math, in kf_ct) */
static void emit_sm(kf_strbuf *s, const kf_chain_bind *b, int cuda, int inline_exp, const char *ind)
{
    const char *ex = inline_exp ? "kf_expf_neg" : "kf_exp";
    int k = b->sm;
    kf_strbuf sx = {0};
    tail_x(&sx, b, cuda);
    char lb[256];
    const char *loop = kf_chain_cols_loop(lb, sizeof lb, cuda, ind);
    const char *simd = cuda ? "" : "#pragma omp simd reduction(+ : kf_e)\n";
    if (cuda) kf_strbuf_printf(s, "%skf_m = kf_chain_row_max(kf_m);\n", ind);
    kf_strbuf_printf(s, "%skf_ct kf_e = (kf_ct)0;\n%s%s%s\n", ind, simd, ind, loop);
    if (cuda == 2) /* the registers take the exp, computed once */
        kf_strbuf_printf(s, "%s    kf_x[j] = %s(kf_x[j] - kf_m);\n%s    kf_e += kf_x[j];\n%s}\n", ind,
                         ex, ind, ind);
    else
        kf_strbuf_printf(s, "%s    kf_e += %s(%s - kf_m);\n%s}\n", ind, ex, sx.p, ind);
    if (cuda) kf_strbuf_printf(s, "%skf_e = kf_chain_row_reduce(kf_e);\n", ind);
    kf_strbuf v = {0};
    if (cuda == 2) kf_strbuf_printf(&v, "kf_x[j] / kf_e");
    else kf_strbuf_printf(&v, "%s(%s - kf_m) / kf_e", ex, sx.p);
    int dt = kf_chain_member_dtype(b, k);
    kf_strbuf_printf(s, "%s%s%s\n%s    const %s v%d = ", cuda ? "" : "#pragma omp simd\n", ind,
                     loop, ind, kf_pw_ctype(dt, cuda != 0), k);
    store_expr(s, dt, cuda != 0, v.p);
    kf_strbuf_printf(s, ";\n%s    y%d[r * KF_C + c] = v%d;\n", ind, k, k);
    char in2[32];
    snprintf(in2, sizeof in2, "%s    ", ind);
    emit_phase_(s, b, 4, cuda != 0, in2, "", 0, -1); /* the epilogue, from the stored value */
    kf_strbuf_printf(s, "%s}\n", ind);
    kf_strbuf_free(&v);
    kf_strbuf_free(&sx);
}

/* A norm's y (kf_ct v, in scope) stored as its output's dtype at (r, c), then per element the
 * members after it (phase 4, its epilogue) from that stored value v<k>; in2: the loop's indent */
static void store_tail_y(kf_strbuf *s, const kf_chain_bind *b, int ydt, int cuda, const char *ind,
                         const char *in2)
{
    const int k = b->ln;
    kf_strbuf_printf(s, "%s%s    const %s v%d = ", ind, in2, kf_pw_ctype(ydt, cuda), k);
    store_expr(s, ydt, cuda, "v");
    kf_strbuf_printf(s, ";\n%s%s    y%d[r * KF_C + c] = v%d;\n", ind, in2, k, k);
    char ep[40];
    snprintf(ep, sizeof ep, "%s%s    ", ind, in2);
    emit_phase_(s, b, 4, cuda, ep, "", 0, -1);
}

const char *kf_chain_group_loop(int cuda)
{
    return cuda ? "for (long long e = KF_GE0; e < KF_RG * KF_C; e += KF_GES) {\n"
                  "            const long long r = g * KF_RG + e / KF_C, c = e % KF_C;"
                : "for (long long r = g * KF_RG; r < (g + 1) * KF_RG; r++) {";
}

/* A group norm's tail (group g in scope): the group's stored input x, its sum folded in phase 0,
 * then the variance pass, mean and rstd per group, y per element with its row's channel's weight
 * and bias. The host: one thread per group, sums in double over the group's rows as a layer
 * norm's row; CUDA: the block's threads over the group's elements (kf_chain_group_loop), in
 * kf_ct, as eager's CUDA group norm. */
static void emit_gn(kf_strbuf *s, const kf_chain_bind *b, int cuda, const char *ind)
{
    const kf_job_member *jm = &b->ch->m[b->ln];
    int k = b->ln;
    int ydt = kf_chain_member_dtype(b, k), mdt = jm->sig.out[1].dtype, rdt = jm->sig.out[2].dtype;
    kf_strbuf sx = {0}, sw = {0}, sb = {0};
    tail_x(&sx, b, cuda);
    char wv[96], bv[96];
    if (b->ln_w >= 0) {
        snprintf(wv, sizeof wv, "p%d[kf_ch * %lldLL]", b->ln_w, (long long)jm->sig.in[1].strides[0]);
        load_expr(&sw, jm->sig.in[1].dtype, cuda, wv);
    }
    if (b->ln_b >= 0) {
        const int bi = b->ln_w >= 0 ? 2 : 1;
        snprintf(bv, sizeof bv, "p%d[kf_ch * %lldLL]", b->ln_b, (long long)jm->sig.in[bi].strides[0]);
        load_expr(&sb, jm->sig.in[bi].dtype, cuda, bv);
    }
    /* the host's loops over the group's rows then their columns; CUDA's one over its elements;
     * the rows' input offsets where they read a kernel input (x itself, or the epilogue's) */
    const char *loop = kf_chain_group_loop(cuda);
    char in1[40];
    snprintf(in1, sizeof in1, "%s    ", ind);
    kf_strbuf rb = {0};
    int epilogue = 0;
    for (int e = k + 1; e < b->n; e++) epilogue |= b->phase[e] == 4;
    if (b->tail_arg >= 0 || epilogue) kf_chain_emit_rowbases(&rb, b, in1);
    const char *rbx = b->tail_arg >= 0 ? rb.p : ""; /* the variance pass reads x alone */
    if (cuda)
        kf_strbuf_printf(s, "%skf_s = kf_chain_group_reduce(kf_s);\n"
                            "%sconst kf_ct kf_mean = kf_s / (kf_ct)(KF_RG * KF_C);\n"
                            "%s%s\n%s%s    const kf_ct d = %s - kf_mean;\n%s    kf_q += d * d;\n%s}\n"
                            "%skf_q = kf_chain_group_reduce(kf_q);\n"
                            "%sconst kf_ct kf_rstd = rsqrtf(kf_q / (kf_ct)(KF_RG * KF_C) + "
                            "(kf_ct)KF_LN_EPS);\n%sif (KF_GE0 == 0) {\n",
                         ind, ind, ind, loop, rbx, ind, sx.p, ind, ind, ind, ind, ind);
    else
        kf_strbuf_printf(s, "%sconst double kf_md = kf_s / (double)(KF_RG * KF_C);\n"
                            "%s%s\n%s#pragma omp simd reduction(+ : kf_q)\n"
                            "%s    for (long long c = 0; c < KF_C; c++) {\n"
                            "%s        const double d = (double)%s - kf_md;\n%s        kf_q += d * d;\n"
                            "%s    }\n%s}\n"
                            "%sconst kf_ct kf_mean = (kf_ct)kf_md, kf_ml = (kf_ct)(kf_md - (double)kf_mean);\n"
                            "%sconst kf_ct kf_rstd = (kf_ct)(1.0 / sqrt(kf_q / (double)(KF_RG * KF_C) + "
                            "(double)(float)KF_LN_EPS));\n%s{\n",
                         ind, ind, loop, rbx, ind, ind, sx.p, ind, ind, ind, ind, ind, ind);
    kf_strbuf_printf(s, "%s    y%d_1[g] = ", ind, k);
    store_expr(s, mdt, cuda, "kf_mean");
    kf_strbuf_printf(s, ";\n%s    y%d_2[g] = ", ind, k);
    store_expr(s, rdt, cuda, "kf_rstd");
    kf_strbuf_printf(s, ";\n%s}\n%s%s\n%s    const long long kf_ch = (r / KF_RPC) %% KF_CH;\n", ind, ind,
                     loop, ind);
    kf_strbuf_printf(s, "%s    const kf_ct kf_w = %s, kf_b = %s;\n", ind, b->ln_w >= 0 ? sw.p : "(kf_ct)1",
                     b->ln_b >= 0 ? sb.p : "(kf_ct)0");
    if (rb.p) kf_strbuf_printf(s, "%s", rb.p);
    const char *in2 = cuda ? "" : "    "; /* the host's column loop inside the row's */
    if (!cuda) kf_strbuf_printf(s, "#pragma omp simd\n%s    for (long long c = 0; c < KF_C; c++) {\n", ind);
    if (cuda) { /* eager's CUDA math: from mean and rstd as stored (bf16 rounds the mean: a
                 * shift of up to rstd x its ulp), y = x * a + b with per-channel a = rstd * w,
                 * b = -a * mean + beta; (x - mean) * rstd without weight and bias, and
                 * (x - mean) * rstd * w + beta where HxW is 1 */
        kf_strbuf_printf(s, "%s    const kf_ct kf_mq = ", ind);
        load_stored(s, mdt, "kf_mean");
        kf_strbuf_printf(s, ", kf_rq = ");
        load_stored(s, rdt, "kf_rstd");
        kf_strbuf_printf(s, ";\n");
        if (b->gn_rpc * b->C == 1)
            kf_strbuf_printf(s, "%s    const kf_ct v = (%s - kf_mq) * kf_rq * kf_w + kf_b;\n", ind, sx.p);
        else if (b->ln_w < 0 && b->ln_b < 0)
            kf_strbuf_printf(s, "%s    const kf_ct v = (%s - kf_mq) * kf_rq;\n", ind, sx.p);
        else
            kf_strbuf_printf(s, "%s    const kf_ct kf_a = kf_rq * kf_w, kf_o = -kf_a * kf_mq + kf_b;\n"
                                "%s    const kf_ct v = %s * kf_a + kf_o;\n", ind, ind, sx.p);
    } else
        kf_strbuf_printf(s, "%s%s    const kf_ct v = (%s - kf_mean - kf_ml) * kf_rstd * kf_w + kf_b;\n",
                         ind, in2, sx.p);
    store_tail_y(s, b, ydt, cuda, ind, in2);
    if (!cuda) kf_strbuf_printf(s, "%s    }\n", ind);
    kf_strbuf_printf(s, "%s}\n", ind);
    kf_strbuf_free(&rb);
    kf_strbuf_free(&sx);
    kf_strbuf_free(&sw);
    kf_strbuf_free(&sb);
}

/* A layer norm's y at (r, c) from its input x (kf_ct), kf_mean and kf_rstd (the host's kf_ml
 * too) and the row bases in scope: weight and bias applied, stored, then its epilogue */
static void emit_ln_y(kf_strbuf *s, const kf_chain_bind *b, int cuda, const char *x, const char *ind)
{
    const kf_job_member *jm = &b->ch->m[b->ln];
    const int w = b->ln_w, bi = b->ln_b;
    char v[96];
    kf_strbuf_printf(s, "%s    kf_ct v = (%s - kf_mean%s) * kf_rstd;\n", ind, x, cuda ? "" : " - kf_ml");
    for (int a = 0; a < 2; a++) {
        const int arg = a ? bi : w;
        if (arg < 0) continue;
        kf_strbuf e = {0};
        snprintf(v, sizeof v, "p%d[rb%d + c * %lldLL]", arg, arg, (long long)b->st[arg][b->nd - 1]);
        load_expr(&e, jm->sig.in[a && w >= 0 ? 2 : 1].dtype, cuda, v);
        kf_strbuf_printf(s, "%s    v %s= %s;\n", ind, a ? "+" : "*", e.p);
        kf_strbuf_free(&e);
    }
    store_tail_y(s, b, kf_chain_member_dtype(b, b->ln), cuda, ind, "");
}

void kf_chain_emit_tail(kf_strbuf *s, const kf_chain_bind *b, int cuda, int inline_exp,
                        const char *ind)
{
    if (b->gn) {
        emit_gn(s, b, cuda != 0, ind);
        return;
    }
    if (b->sm >= 0) {
        emit_sm(s, b, cuda, inline_exp, ind);
        return;
    }
    if (b->ln < 0) return;
    const kf_job_member *jm = &b->ch->m[b->ln];
    int k = b->ln, lp = cuda;
    int mdt = jm->sig.out[1].dtype, rdt = jm->sig.out[2].dtype;
    kf_strbuf sx = {0};
    tail_x(&sx, b, cuda);
    cuda = cuda != 0;
    char lb[256];
    const char *loop = kf_chain_cols_loop(lb, sizeof lb, lp, ind);
    if (cuda) { /* float math as eager's CUDA kernel, the block's threads over the row */
        kf_strbuf_printf(s, "%skf_s = kf_chain_row_reduce(kf_s);\n"
                            "%sconst kf_ct kf_mean = kf_s / (kf_ct)KF_C;\n"
                            "%s%s\n%s    const kf_ct d = %s - kf_mean;\n%s    kf_q += d * d;\n%s}\n"
                            "%skf_q = kf_chain_row_reduce(kf_q);\n"
                            "%sconst kf_ct kf_rstd = rsqrtf(kf_q / (kf_ct)KF_C + (kf_ct)KF_LN_EPS);\n",
                         ind, ind, ind, loop, ind, sx.p, ind, ind, ind, ind);
    } else { /* double sums, one thread per row, as the per-op host layer norm */
        kf_strbuf_printf(s, "%sconst double kf_md = kf_s / (double)KF_C;\n"
                            "#pragma omp simd reduction(+ : kf_q)\n"
                            "%s%s\n%s    const double d = (double)%s - kf_md;\n%s    kf_q += d * d;\n%s}\n"
                            "%sconst kf_ct kf_mean = (kf_ct)kf_md, kf_ml = (kf_ct)(kf_md - (double)kf_mean);\n"
                            "%sconst kf_ct kf_rstd = (kf_ct)(1.0 / sqrt(kf_q / (double)KF_C + "
                            "(double)(float)KF_LN_EPS));\n",
                         ind, ind, loop, ind, sx.p, ind, ind, ind, ind);
    }
    const char *guard = cuda ? "if (KF_LANE == 0) " : "";
    kf_strbuf_printf(s, "%s%s{\n%s    y%d_1[r] = ", ind, guard, ind, k);
    store_expr(s, mdt, cuda, "kf_mean");
    kf_strbuf_printf(s, ";\n%s    y%d_2[r] = ", ind, k);
    store_expr(s, rdt, cuda, "kf_rstd");
    kf_strbuf_printf(s, ";\n%s}\n", ind);
    if (lp == 3) {
        emit_ln_y_packs(s, b, ind);
    } else {
        kf_strbuf_printf(s, "%s%s%s\n", cuda ? "" : "#pragma omp simd\n", ind, loop);
        emit_ln_y(s, b, cuda, sx.p, ind);
        kf_strbuf_printf(s, "%s}\n", ind);
    }
    kf_strbuf_free(&sx);
}

void kf_chain_emit_store(kf_strbuf *s, const kf_chain_bind *b, int k, const char *v, const char *ind)
{
    char p[16], at[96];
    out_ptr(p, sizeof p, b, k);
    out_at(at, sizeof at, b, k, "c", b->C);
    kf_strbuf_printf(s, "%s%s[%s] = %s;\n", ind, p, at, v);
}

void kf_chain_emit_tile_x(kf_strbuf *s, const kf_chain_bind *b, const char *xs)
{
    load_expr(s, kf_chain_member_dtype(b, b->ch->m[b->ln].ref[0].a), 1, xs);
}

void kf_chain_emit_ln_tile_y(kf_strbuf *s, const kf_chain_bind *b, const char *xs, const char *ind)
{
    kf_strbuf x = {0};
    kf_chain_emit_tile_x(&x, b, xs);
    emit_ln_y(s, b, 1, x.p, ind);
    kf_strbuf_free(&x);
}
