/* Tuning jobs as seen from the plugin: the decoded arguments of a signature, and requests to
 * copy its next real calls (torch_ext does the copying; kernel_forge writes the job folder). */
#include <inttypes.h>

#include "plugin/runtime.h"

char *kf_signature_args_json(kf_runtime *rt, uint64_t key)
{
    if (!rt) return NULL;
    kf_slot *s = kf_runtime_seen_slot(rt, key);
    if (!s) return NULL;
    char op[KF_OP_NAME_MAX];
    kf_sig_op_name(s->key, s->len, op, sizeof op);
    const char *names[KF_MAX_ARGNAMES];
    int n = 0;
    pthread_mutex_lock(&rt->lock);
    const kf_op_info *info = kf_runtime_find_op(rt, op);
    if (info)
        for (n = 0; n < info->n_args; n++) names[n] = info->argnames[n];
    char *out = kf_sig_args_json(s->key, s->len, names, n);
    pthread_mutex_unlock(&rt->lock);
    kf_slot_unpin(s);
    if (!out) kf_runtime_set_error(rt, "signature %016" PRIx64 " cannot be decoded", key);
    return out;
}

kf_status kf_capture_request(kf_runtime *rt, uint64_t key, int n)
{
    if (!rt || n < 0) return KF_ERR_INVALID;
    kf_slot *s = kf_sigtable_find_hash(rt->sigs, key);
    if (s && !(s->flags & KF_SLOT_OBSERVED)) {
        atomic_store(&s->capture_want, n); /* keeps the slot from being recycled meanwhile */
        kf_slot_unpin(s);
        return KF_OK;
    }
    kf_slot_unpin(s);
    /* not seen yet (kforge warmup asks before the script runs): wait for its first call */
    kf_status st = KF_OK;
    pthread_mutex_lock(&rt->lock);
    int k = atomic_load(&rt->n_capture_pending);
    if (k < KF_MAX_CAPTURE_PENDING) {
        rt->capture_pending[k].key = key;
        rt->capture_pending[k].n = n;
        atomic_store(&rt->n_capture_pending, k + 1);
    } else {
        kf_runtime_set_error(rt, "too many capture requests are waiting (%d)", KF_MAX_CAPTURE_PENDING);
        st = KF_ERR_FULL;
    }
    pthread_mutex_unlock(&rt->lock);
    return st;
}

void kf_tuning_apply_pending(kf_runtime *rt, kf_slot *s)
{
    uint64_t key = kf_slot_key(s);
    pthread_mutex_lock(&rt->lock);
    int k = atomic_load(&rt->n_capture_pending);
    for (int i = 0; i < k; i++) {
        if (rt->capture_pending[i].key != key) continue;
        atomic_store(&s->capture_want, rt->capture_pending[i].n);
        rt->capture_pending[i] = rt->capture_pending[k - 1];
        atomic_store(&rt->n_capture_pending, k - 1);
        break;
    }
    pthread_mutex_unlock(&rt->lock);
}
