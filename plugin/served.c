#include "plugin/served.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "plugin/runtime.h"

struct kf_served {
    kf_runtime *rt;
    kf_compiler_i *cc; /* owned by the runtime */
    kf_launch launch;
    void *blob;
    size_t blob_len;
    pthread_mutex_t lock; /* loading only; launches read `loaded` without it */
    _Atomic(kf_compiled *) loaded[KF_MAX_DEVICES];
    _Atomic int load_failed[KF_MAX_DEVICES];
};

kf_status kf_served_create(kf_served **out, kf_runtime *rt, kf_compiler_i *cc, const kf_launch *launch,
                           void *blob, size_t blob_len)
{
    kf_served *s = calloc(1, sizeof *s);
    if (!s) return KF_ERR_NOMEM;
    s->rt = rt;
    s->cc = cc;
    s->launch = *launch;
    s->blob = blob;
    s->blob_len = blob_len;
    pthread_mutex_init(&s->lock, NULL);
    *out = s;
    return KF_OK;
}

kf_kernel *kf_served_kernel(kf_runtime *rt, kf_compiler_i *cc, const kf_launch *launch, void *blob,
                            size_t blob_len)
{
    kf_served *served = NULL;
    kf_kernel *k = calloc(1, sizeof *k);
    if (!k || kf_served_create(&served, rt, cc, launch, blob, blob_len) != KF_OK) {
        free(k);
        free(blob);
        return NULL;
    }
    k->fn = kf_served_launch;
    k->user = served;
    k->served = served;
    return k;
}

void kf_served_free(kf_served *s)
{
    if (!s) return;
    for (int d = 0; d < KF_MAX_DEVICES; d++) {
        kf_compiled *k = atomic_load(&s->loaded[d]);
        /* CUDA modules are left to the driver at exit: the context may already be gone */
        if (k && strcmp(s->cc->name, "host") == 0) s->cc->unload(s->cc->self, k);
    }
    pthread_mutex_destroy(&s->lock);
    free(s->blob);
    free(s);
}

const void *kf_served_blob(const kf_served *s, size_t *len)
{
    *len = s->blob_len;
    return s->blob;
}

static kf_compiled *load_for(kf_served *s, int dev, void *stream, int cuda, int *later)
{
    kf_compiled *k = atomic_load_explicit(&s->loaded[dev], memory_order_acquire);
    if (k || atomic_load_explicit(&s->load_failed[dev], memory_order_relaxed)) return k;
    /* loading a module while the stream is captured into a CUDA graph is not allowed: not a
     * failure, it loads on a call outside the capture */
    if (cuda && kf_gpu_timer_capturing(s->rt->gtimer, stream)) {
        *later = 1;
        return NULL;
    }
    pthread_mutex_lock(&s->lock);
    k = atomic_load(&s->loaded[dev]);
    if (!k) {
        char err[512] = "";
        kf_status st = s->cc->load(s->cc->self, s->blob, s->blob_len, &s->launch, dev, &k, err, sizeof err);
        if (st == KF_OK) {
            atomic_store_explicit(&s->loaded[dev], k, memory_order_release);
        } else {
            k = NULL;
            atomic_store(&s->load_failed[dev], 1); /* once: eager from now on, one warning */
            KF_WARN("cannot load kernel %s (%s) for device %d: %s; using eager", s->launch.entry,
                    s->cc->name, dev, err[0] ? err : kf_status_str(st));
        }
    }
    pthread_mutex_unlock(&s->lock);
    return k;
}

const char *kf_served_backend(const kf_served *s)
{
    return s->cc->name;
}

int kf_served_launch(void *user, const kf_tensor *t, int n, void *stream)
{
    kf_served *s = user;
    if (n != s->launch.n_args || n < 1 || n > KF_LAUNCH_MAX_ARGS) return 10;
    const int cuda = t[0].device_type == KF_DEV_CUDA;
    const int dev = cuda ? t[0].device_index : 0;
    if (dev < 0 || dev >= KF_MAX_DEVICES) return 11;
    int later = 0;
    kf_compiled *k = load_for(s, dev, stream, cuda, &later);
    if (!k) return later ? KF_KERNEL_LATER : 12;
    void *ptrs[KF_LAUNCH_MAX_ARGS];
    for (int i = 0; i < n; i++) ptrs[i] = t[i].data;
    if (s->launch.n_ints) { /* a family kernel: its free sizes, from this call's tensors */
        kf_dims dims[KF_LAUNCH_MAX_ARGS];
        int64_t v[KF_LAUNCH_MAX_INTS];
        for (int i = 0; i < n; i++) dims[i].ndim = t[i].ndim, dims[i].sizes = t[i].sizes;
        if (kf_launch_ints(&s->launch, dims, n, v) != KF_OK) return 13;
        for (int j = 0; j < s->launch.n_ints; j++) ptrs[n + j] = (void *)(intptr_t)v[j];
    }
    return s->cc->launch(s->cc->self, k, ptrs, n + s->launch.n_ints, stream);
}
