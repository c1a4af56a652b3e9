/* Sampled device time of intercepted CUDA calls, measured with CUDA events on the caller's stream
 * and read back lazily: nothing here ever waits for the user's stream on the hot path.
 *
 * The CUDA driver is opened at run time (dlopen), so the plugin loads on machines without CUDA. */
#ifndef KF_PLUGIN_GPU_TIMER_H
#define KF_PLUGIN_GPU_TIMER_H

#include <stdint.h>

#include "kforge.h"

typedef struct kf_gpu_timer kf_gpu_timer;

/* Called with each finished measurement: the `user` and `tag` given to start, and the elapsed
 * ns. */
typedef void (*kf_gpu_timer_done_fn)(void *user, uint64_t tag, int served, uint64_t ns);

kf_status kf_gpu_timer_create(kf_gpu_timer **out, kf_gpu_timer_done_fn done);
void kf_gpu_timer_free(kf_gpu_timer *t);

/* Start a measurement on `stream`; returns a token >= 0, or -1 when no sample is taken (driver
 * missing, stream capturing into a CUDA graph, all event pairs busy, any driver error). */
int kf_gpu_timer_start(kf_gpu_timer *t, void *stream, void *user, uint64_t tag, int served);
void kf_gpu_timer_stop(kf_gpu_timer *t, int token, void *stream);
void kf_gpu_timer_cancel(kf_gpu_timer *t, int token);
/* Collect finished measurements; wait for all pending ones when `wait` is set (stats only). */
void kf_gpu_timer_poll(kf_gpu_timer *t, int wait);
/* 1 when `stream` is being captured into a CUDA graph, or when that cannot be told. */
int kf_gpu_timer_capturing(kf_gpu_timer *t, void *stream);
/* Whether a CUDA driver was found ("" or the reason it was not). */
const char *kf_gpu_timer_status(kf_gpu_timer *t);

#endif
