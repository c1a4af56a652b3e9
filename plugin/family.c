#include "plugin/family.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/signature.h"
#include "plugin/runtime.h"
#include "plugin/served.h"

#define FAMILY_EXTENT_MAX ((int64_t)1 << 62)

static kf_status bad(char *err, size_t cap, const char *fmt, const char *what)
{
    if (err && cap) snprintf(err, cap, fmt, what);
    return KF_ERR_INVALID;
}

/* A whole number in [lo, hi]. */
static int json_int(const cJSON *v, int64_t lo, int64_t hi, int64_t *out)
{
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < (double)lo ||
        v->valuedouble > (double)hi || v->valuedouble != floor(v->valuedouble))
        return 0;
    *out = (int64_t)v->valuedouble;
    return 1;
}

/* An array of distinct integers in [0, hi) as a bit mask; 0 when malformed or empty. */
static uint32_t json_mask(const cJSON *a, int hi)
{
    uint32_t m = 0;
    int n = cJSON_IsArray(a) ? cJSON_GetArraySize(a) : 0;
    if (n < 1 || n > hi) return 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, a)
    {
        int64_t i;
        if (!json_int(v, 0, hi - 1, &i) || (m >> i) & 1u) return 0;
        m |= 1u << i;
    }
    return m;
}

/* torch's is_contiguous: row-major strides, a dim of size 1 may have any stride. */
static int contiguous(int nd, const int64_t *sizes, const int64_t *strides)
{
    int64_t expect = 1;
    for (int d = nd - 1; d >= 0; d--) {
        if (sizes[d] < 0) return 0;
        if (sizes[d] != 1 && strides[d] != expect) return 0;
        if (sizes[d] && expect > INT64_MAX / sizes[d]) return 0;
        expect *= sizes[d];
    }
    return 1;
}

/* The kernel arguments of a call: its tensor arguments, then its fresh outputs. */
typedef struct fam_args {
    int n;
    int ndim[KF_LAUNCH_MAX_ARGS];
    const int64_t *sizes[KF_LAUNCH_MAX_ARGS], *strides[KF_LAUNCH_MAX_ARGS];
} fam_args;

/* One argument against the family: the entry's (e_*) and the call's dims. vals[d] collects the
 * free dims' sizes (-1: not seen yet). 1 when it fits. */
static int arg_fits(const kf_family *f, int k, int nd, const int64_t *es, const int64_t *est,
                    const int64_t *cs, const int64_t *cst, int64_t *vals)
{
    if (!((f->tensors >> k) & 1u))
        return !memcmp(es, cs, 8u * (unsigned)nd) && !memcmp(est, cst, 8u * (unsigned)nd);
    for (int d = 0; d < nd; d++) {
        if ((f->free_dims >> d) & 1u) {
            if (vals[d] < 0) vals[d] = cs[d];
            if (cs[d] != vals[d]) return 0;
        } else if (cs[d] != es[d]) {
            return 0;
        }
    }
    return contiguous(nd, cs, cst);
}

int kf_family_match(const kf_family *f, const uint8_t *sig, uint32_t len,
                    const kf_out_layout *outs, int64_t *extent)
{
    int64_t vals[KF_MAX_DIMS];
    for (int d = 0; d < KF_MAX_DIMS; d++) vals[d] = -1;
    uint32_t ep = kf_sig_items_begin(f->sig, f->sig_len), cp = kf_sig_items_begin(sig, len);
    /* the op name: the same bytes */
    if (ep != cp || len < cp || memcmp(f->sig, sig, cp)) return 0;
    int k = 0;
    for (;;) {
        kf_sig_item a, b;
        int ra = kf_sig_item_next(f->sig, f->sig_len, &ep, &a);
        int rb = kf_sig_item_next(sig, len, &cp, &b);
        if (ra < 0 || rb < 0 || ra != rb) return 0;
        if (!ra) break;
        if (a.tag != b.tag) return 0;
        if (a.tag != KF_SIG_ITEM_TENSOR) { /* every other argument: the very same bytes */
            if (a.end - a.start != b.end - b.start ||
                memcmp(f->sig + a.start, sig + b.start, a.end - a.start))
                return 0;
            continue;
        }
        if (a.dtype != b.dtype || a.device_type != b.device_type ||
            a.device_index != b.device_index || a.align_log2 != b.align_log2 || a.ndim != b.ndim ||
            k >= KF_LAUNCH_MAX_ARGS ||
            !arg_fits(f, k, a.ndim, a.sizes, a.strides, b.sizes, b.strides, vals))
            return 0;
        k++;
    }
    if (!outs || outs->n != f->outs.n) return 0;
    for (int j = 0; j < outs->n; j++) {
        if (outs->o[j].alias_arg != -1 || outs->o[j].dtype != f->outs.o[j].dtype ||
            outs->o[j].ndim != f->outs.o[j].ndim || k >= KF_LAUNCH_MAX_ARGS ||
            !arg_fits(f, k, f->outs.o[j].ndim, f->outs.o[j].sizes, f->outs.o[j].strides,
                      outs->o[j].sizes, outs->o[j].strides, vals))
            return 0;
        k++;
    }
    int64_t x = 1;
    for (int d = 0; d < KF_MAX_DIMS; d++) {
        if (!((f->free_dims >> d) & 1u)) continue;
        if (vals[d] < 0 || (vals[d] && x > FAMILY_EXTENT_MAX / vals[d])) return 0;
        x *= vals[d];
    }
    if (x < f->min || x > f->max || x % f->multiple_of) return 0;
    if (extent) *extent = x;
    return 1;
}

/* The entry's kernel arguments, for the checks of kf_family_parse. */
static int entry_args(const uint8_t *sig, uint32_t len, const kf_out_layout *outs, fam_args *a,
                      kf_sig_item *items, char *err, size_t cap)
{
    uint32_t p = kf_sig_items_begin(sig, len);
    a->n = 0;
    int r;
    kf_sig_item it;
    while ((r = kf_sig_item_next(sig, len, &p, &it)) == 1) {
        if (it.tag == KF_SIG_ITEM_TLIST)
            return bad(err, cap, "%s", "a signature with a tensor list has no family"), 0;
        if (it.tag != KF_SIG_ITEM_TENSOR) continue;
        if (a->n >= KF_LAUNCH_MAX_ARGS) return bad(err, cap, "%s", "too many tensors"), 0;
        items[a->n] = it;
        a->ndim[a->n] = it.ndim;
        a->sizes[a->n] = items[a->n].sizes;
        a->strides[a->n] = items[a->n].strides;
        a->n++;
    }
    if (r < 0) return bad(err, cap, "%s", "the entry's signature is malformed"), 0;
    for (int j = 0; j < outs->n; j++) {
        if (outs->o[j].alias_arg >= 0)
            return bad(err, cap, "%s", "an op that writes its arguments has no family"), 0;
        if (a->n >= KF_LAUNCH_MAX_ARGS) return bad(err, cap, "%s", "too many tensors"), 0;
        a->ndim[a->n] = outs->o[j].ndim;
        a->sizes[a->n] = outs->o[j].sizes;
        a->strides[a->n] = outs->o[j].strides;
        a->n++;
    }
    return 1;
}

kf_status kf_family_parse(const char *json, const uint8_t *sig, uint32_t sig_len,
                          const kf_out_layout *outs, const kf_launch *launch, kf_family **out,
                          char *err, size_t errcap)
{
    *out = NULL;
    if (err && errcap) err[0] = 0;
    kf_status st = KF_ERR_INVALID;
    kf_family *f = NULL;
    cJSON *root = json ? cJSON_Parse(json) : NULL;
    if (!cJSON_IsObject(root)) {
        bad(err, errcap, "%s", "not a JSON object");
        goto out;
    }
    static const char *const keys[] = {"tensors", "free_dims", "min", "max", "multiple_of"};
    const cJSON *v[5] = {0}, *it;
    cJSON_ArrayForEach(it, root)
    {
        size_t k = 0;
        while (k < 5 && strcmp(it->string, keys[k])) k++;
        if (k == 5 || v[k]) {
            bad(err, errcap, k == 5 ? "unknown key \"%.40s\"" : "key \"%.40s\" given twice",
                it->string);
            goto out;
        }
        v[k] = it;
    }
    f = calloc(1, sizeof *f);
    if (!f) {
        st = KF_ERR_NOMEM;
        goto out;
    }
    f->tensors = json_mask(v[0], KF_LAUNCH_MAX_ARGS);
    f->free_dims = json_mask(v[1], KF_MAX_DIMS);
    if (!f->tensors || !f->free_dims) {
        bad(err, errcap, "%s", "\"tensors\" and \"free_dims\" must be non-empty lists of distinct "
            "argument and dim indices");
        goto out;
    }
    if (!json_int(v[2], 1, FAMILY_EXTENT_MAX, &f->min) ||
        !json_int(v[3], 1, FAMILY_EXTENT_MAX, &f->max) ||
        !json_int(v[4], 1, FAMILY_EXTENT_MAX, &f->multiple_of) || f->min > f->max) {
        bad(err, errcap, "%s", "\"min\", \"max\", \"multiple_of\" must be integers, "
            "1 <= min <= max");
        goto out;
    }
    /* by construction: a kernel serves other shapes only if it reads its sizes at launch */
    if (!launch || launch->n_ints < 1) {
        bad(err, errcap, "%s", "its launch record reads no size at launch (\"ints\")");
        goto out;
    }
    fam_args a;
    kf_sig_item items[KF_LAUNCH_MAX_ARGS];
    if (!outs || !entry_args(sig, sig_len, outs, &a, items, err, errcap)) goto out;
    if (f->tensors >> a.n) {
        bad(err, errcap, "%s", "\"tensors\" names an argument the kernel does not take");
        goto out;
    }
    for (int k = 0; k < a.n; k++) {
        if (!((f->tensors >> k) & 1u)) continue;
        if (f->free_dims >> a.ndim[k]) {
            bad(err, errcap, "%s", "\"free_dims\" names a dim a listed tensor does not have");
            goto out;
        }
        if (!contiguous(a.ndim[k], a.sizes[k], a.strides[k])) {
            bad(err, errcap, "%s", "a listed tensor is not contiguous in the entry's signature");
            goto out;
        }
    }
    f->sig = malloc(sig_len ? sig_len : 1);
    if (!f->sig) {
        st = KF_ERR_NOMEM;
        goto out;
    }
    memcpy(f->sig, sig, sig_len);
    f->sig_len = sig_len;
    f->outs = *outs;
    /* the entry's own signature is a member (shared free sizes, extent in range) */
    if (!kf_family_match(f, sig, sig_len, outs, NULL)) {
        bad(err, errcap, "%s", "the entry's own signature is not a member (free dims differ "
            "between the listed tensors, or its extent is out of range)");
        goto out;
    }
    kf_family_format(f, NULL, 0);
    *out = f;
    f = NULL;
    st = KF_OK;
out:
    kf_family_free(f);
    cJSON_Delete(root);
    return st;
}

void kf_family_free(kf_family *f)
{
    if (!f) return;
    free(f->sig);
    free(f);
}

void kf_family_format(kf_family *f, const char *const *argnames, int n_argnames)
{
    uint8_t *masked = malloc(f->sig_len ? f->sig_len : 1);
    snprintf(f->text, sizeof f->text, "?");
    if (!masked) return;
    memcpy(masked, f->sig, f->sig_len);
    uint32_t p = kf_sig_items_begin(masked, f->sig_len);
    kf_sig_item it;
    int k = 0;
    const int64_t star = -1;
    while (kf_sig_item_next(masked, f->sig_len, &p, &it) == 1) {
        if (it.tag != KF_SIG_ITEM_TENSOR) continue;
        if ((f->tensors >> k++) & 1u)
            for (int d = 0; d < it.ndim; d++)
                if ((f->free_dims >> d) & 1u) memcpy(masked + it.sizes_at + 8u * (unsigned)d, &star, 8);
    }
    if (kf_sig_format(masked, f->sig_len, argnames, n_argnames, f->text, sizeof f->text) != KF_OK)
        snprintf(f->text, sizeof f->text, "?");
    free(masked);
}

void kf_family_add(kf_runtime *rt, const kf_cache_entry *e, kf_served *served,
                   const kf_launch *launch, const kf_out_layout *outs)
{
    kf_family *f = NULL;
    char err[256];
    kf_status st = kf_family_parse(e->family, e->sig, e->sig_len, outs, launch, &f, err, sizeof err);
    if (st != KF_OK) {
        KF_WARN("cache entry %s (%s): its family record is refused (%s); it serves its own "
                "signature only", e->key_hex, e->signature, st == KF_ERR_NOMEM ? "out of memory" : err);
        return;
    }
    snprintf(f->key_hex, sizeof f->key_hex, "%s", e->key_hex);
    f->atol = e->atol, f->rtol = e->rtol;
    f->kernel_us = e->kernel_us, f->eager_us = e->eager_us;
    f->served = served;
    const kf_op_info *op = kf_runtime_find_op(rt, e->op);
    if (op) {
        const char *names[KF_MAX_ARGNAMES];
        for (int i = 0; i < op->n_args; i++) names[i] = op->argnames[i];
        kf_family_format(f, names, op->n_args);
    }
    pthread_mutex_lock(&rt->lock);
    f->next = atomic_load(&rt->families);
    atomic_store_explicit(&rt->families, f, memory_order_release);
    /* every slot looks again (once) at its next call */
    atomic_fetch_add_explicit(&rt->fam_gen, 1, memory_order_release);
    pthread_mutex_unlock(&rt->lock);
    KF_INFO("cache entry %s also serves the family %s", e->key_hex, f->text);
}

void kf_family_free_all(kf_runtime *rt)
{
    kf_family *f = atomic_load(&rt->families);
    while (f) {
        kf_family *next = f->next;
        kf_family_free(f);
        f = next;
    }
    atomic_store(&rt->families, NULL);
}

static void detach_member(kf_slot *s, void *user)
{
    const kf_family *f = user;
    kf_kernel *k = atomic_load(&s->kernel);
    if (k && k->family == f) atomic_compare_exchange_strong(&s->kernel, &k, NULL);
}

void kf_family_disable(kf_runtime *rt, const char *key_hex)
{
    for (kf_family *f = atomic_load(&rt->families); f; f = f->next) {
        if (strcmp(f->key_hex, key_hex) || atomic_exchange(&f->refused, 1)) continue;
        kf_sigtable_each(rt->sigs, detach_member, f);
    }
}

kf_kernel *kf_family_attach(kf_runtime *rt, kf_slot *s, const kf_out_layout *outs)
{
    uint32_t gen = atomic_load_explicit(&rt->fam_gen, memory_order_acquire);
    uint32_t seen = atomic_load_explicit(&s->fam_seen, memory_order_relaxed);
    /* one look per slot and family generation; a detached kernel is not put back */
    if (seen == gen || !atomic_compare_exchange_strong(&s->fam_seen, &seen, gen) ||
        atomic_load(&s->stopped) != KF_STOP_NONE)
        return NULL;
    kf_family *f = atomic_load_explicit(&rt->families, memory_order_acquire);
    for (; f; f = f->next)
        if (!atomic_load(&f->refused) && kf_family_match(f, s->key, s->len, outs, NULL)) break;
    if (!f) return NULL;
    kf_kernel *k = calloc(1, sizeof *k);
    if (!k) return NULL;
    k->fn = kf_served_launch;
    k->user = f->served;
    k->atol = f->atol, k->rtol = f->rtol;
    k->family = f;
    /* this shape's own first-use check (KFORGE_VALIDATE), as for any entry */
    atomic_store(&k->checked, rt->cfg.validate == KF_VALIDATE_OFF);
    pthread_mutex_lock(&rt->lock);
    kf_kernel *expect = NULL;
    int put = atomic_compare_exchange_strong(&s->kernel, &expect, k); /* an exact entry wins */
    if (put) {
        k->retired_next = rt->retired;
        rt->retired = k;
        atomic_store(&s->sv_min_ns, 0);
        atomic_store(&s->guard_n, 0);
    }
    pthread_mutex_unlock(&rt->lock);
    if (!put) {
        free(k);
        return NULL;
    }
    char text[256];
    if (kf_sig_format(s->key, s->len, NULL, 0, text, sizeof text) != KF_OK) snprintf(text, sizeof text, "?");
    KF_INFO("serving %s by the family %s (cache entry %s)", text, f->text, f->key_hex);
    return k;
}
