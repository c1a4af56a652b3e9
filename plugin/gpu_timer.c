#include "plugin/gpu_timer.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cuda_driver.h"
#include "common/log.h"

#define KF_GPU_TIMER_PAIRS 64

enum { PAIR_FREE = 0, PAIR_STARTED = 1, PAIR_PENDING = 2 };

typedef struct pair {
    kf_cu_event start, end;
    void *ctx; /* events belong to the context they were created in */
    int state;
    int served;
    void *user;
    uint64_t tag;
} pair;

struct kf_gpu_timer {
    pthread_mutex_t lock;
    int tried_load;
    int loaded;
    kf_cuda_driver cu; /* common/cuda_driver.h */
    char status[160];
    kf_gpu_timer_done_fn done;
    int cursor; /* where the next bounded collect starts */
    pair pairs[KF_GPU_TIMER_PAIRS];
};

kf_status kf_gpu_timer_create(kf_gpu_timer **out, kf_gpu_timer_done_fn done)
{
    kf_gpu_timer *t = calloc(1, sizeof *t);
    if (!t) return KF_ERR_NOMEM;
    pthread_mutex_init(&t->lock, NULL);
    t->done = done;
    snprintf(t->status, sizeof t->status, "not loaded yet");
    *out = t;
    return KF_OK;
}

void kf_gpu_timer_free(kf_gpu_timer *t)
{
    if (!t) return;
    /* Events are not destroyed: at process exit the driver may already be gone, and the
     * context owns them anyway. The library handle stays open for the same reason. */
    pthread_mutex_destroy(&t->lock);
    free(t);
}

/* Under t->lock. */
static int load_driver(kf_gpu_timer *t)
{
    if (t->tried_load) return t->loaded;
    t->tried_load = 1;
    t->loaded = kf_cuda_driver_open(&t->cu, NULL, t->status, sizeof t->status) == KF_OK;
    if (t->loaded) t->status[0] = 0;
    return t->loaded;
}

int kf_gpu_timer_capturing(kf_gpu_timer *t, void *stream)
{
    int capturing = 1;
    pthread_mutex_lock(&t->lock);
    if (load_driver(t) && t->cu.stream_is_capturing(stream, &capturing) != KF_CU_SUCCESS)
        capturing = 1;
    pthread_mutex_unlock(&t->lock);
    return capturing != 0;
}

const char *kf_gpu_timer_status(kf_gpu_timer *t)
{
    return t->status;
}

/* Driver calls such as event queries, made while any thread captures a CUDA graph in global
 * mode, would invalidate that capture: this thread works in relaxed capture mode meanwhile. */
static int relaxed_begin(kf_gpu_timer *t, int *saved)
{
    *saved = KF_CU_STREAM_CAPTURE_MODE_RELAXED;
    return t->cu.thread_exchange_capture_mode(saved) == KF_CU_SUCCESS;
}

static void relaxed_end(kf_gpu_timer *t, int *saved)
{
    t->cu.thread_exchange_capture_mode(saved);
}

/* Under t->lock and relaxed capture mode: hand finished pairs to the callback, querying at most
 * `limit` pending ones (a driver call each), round robin from where the last collect stopped. */
static void collect(kf_gpu_timer *t, int limit)
{
    for (int k = 0; k < KF_GPU_TIMER_PAIRS && limit > 0; k++) {
        const int i = (t->cursor + k) % KF_GPU_TIMER_PAIRS;
        pair *p = &t->pairs[i];
        if (p->state != PAIR_PENDING) continue;
        limit--;
        t->cursor = (i + 1) % KF_GPU_TIMER_PAIRS;
        kf_cu_result r = t->cu.event_query(p->end);
        if (r == KF_CU_ERROR_NOT_READY) continue;
        float ms = 0;
        if (r == KF_CU_SUCCESS && t->cu.event_elapsed_time(&ms, p->start, p->end) == KF_CU_SUCCESS && ms >= 0)
            t->done(p->user, p->tag, p->served, (uint64_t)((double)ms * 1e6));
        p->state = PAIR_FREE;
    }
}

int kf_gpu_timer_start(kf_gpu_timer *t, void *stream, void *user, uint64_t tag, int served)
{
    int token = -1, saved;
    pthread_mutex_lock(&t->lock);
    if (!load_driver(t)) goto unlock;
    if (!relaxed_begin(t, &saved)) goto unlock;
    /* never time a call that is being captured into a CUDA graph: it does not run now */
    int capturing = 0;
    if (t->cu.stream_is_capturing(stream, &capturing) != KF_CU_SUCCESS || capturing) goto out;
    /* a few per sample: with the GPU far behind, querying all of them cost every timed call
     * microseconds of the host time a model needs to issue its work */
    collect(t, 4);
    kf_cu_context ctx = NULL;
    if (t->cu.ctx_get_current(&ctx) != KF_CU_SUCCESS || !ctx) goto out;
    int fresh = -1;
    for (int i = 0; i < KF_GPU_TIMER_PAIRS; i++) {
        pair *p = &t->pairs[i];
        if (p->state != PAIR_FREE) continue;
        if (p->start && p->ctx == ctx) {
            token = i;
            break;
        }
        if (!p->start && fresh < 0) fresh = i;
    }
    if (token < 0 && fresh >= 0) {
        pair *p = &t->pairs[fresh];
        if (t->cu.event_create(&p->start, 0 /* CU_EVENT_DEFAULT */) != KF_CU_SUCCESS) {
            p->start = NULL;
            goto out;
        }
        if (t->cu.event_create(&p->end, 0 /* CU_EVENT_DEFAULT */) != KF_CU_SUCCESS) {
            t->cu.event_destroy(p->start);
            p->start = NULL;
            goto out;
        }
        p->ctx = ctx;
        token = fresh;
    }
    if (token < 0) goto out;
    if (t->cu.event_record(t->pairs[token].start, stream) != KF_CU_SUCCESS) {
        token = -1;
        goto out;
    }
    t->pairs[token].state = PAIR_STARTED;
    t->pairs[token].user = user;
    t->pairs[token].tag = tag;
    t->pairs[token].served = served;
out:
    relaxed_end(t, &saved);
unlock:
    pthread_mutex_unlock(&t->lock);
    return token;
}

void kf_gpu_timer_stop(kf_gpu_timer *t, int token, void *stream)
{
    if (token < 0 || token >= KF_GPU_TIMER_PAIRS) return;
    pthread_mutex_lock(&t->lock);
    pair *p = &t->pairs[token];
    int saved;
    if (p->state == PAIR_STARTED && relaxed_begin(t, &saved)) {
        p->state = t->cu.event_record(p->end, stream) == KF_CU_SUCCESS ? PAIR_PENDING : PAIR_FREE;
        relaxed_end(t, &saved);
    }
    pthread_mutex_unlock(&t->lock);
}

void kf_gpu_timer_cancel(kf_gpu_timer *t, int token)
{
    if (token < 0 || token >= KF_GPU_TIMER_PAIRS) return;
    pthread_mutex_lock(&t->lock);
    if (t->pairs[token].state == PAIR_STARTED) t->pairs[token].state = PAIR_FREE;
    pthread_mutex_unlock(&t->lock);
}

void kf_gpu_timer_poll(kf_gpu_timer *t, int wait)
{
    int saved;
    kf_cu_event ends[KF_GPU_TIMER_PAIRS];
    int n = 0;
    pthread_mutex_lock(&t->lock);
    int loaded = t->loaded;
    for (int i = 0; loaded && wait && i < KF_GPU_TIMER_PAIRS; i++)
        if (t->pairs[i].state == PAIR_PENDING) ends[n++] = t->pairs[i].end;
    pthread_mutex_unlock(&t->lock);
    if (!loaded || !relaxed_begin(t, &saved)) return;
    /* Wait outside the lock: the model's next kf_gpu_timer_start must not wait for its own
     * stream to drain. Events live as long as the timer; one recorded again meanwhile only
     * makes this wait for later work. */
    for (int i = 0; i < n; i++) t->cu.event_synchronize(ends[i]);
    pthread_mutex_lock(&t->lock);
    collect(t, KF_GPU_TIMER_PAIRS);
    pthread_mutex_unlock(&t->lock);
    relaxed_end(t, &saved);
}
