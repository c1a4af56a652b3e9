/* The CUDA side of the evaluator (eval_impl.h), through the driver table (common/cuda_driver.h)
 * on the primary context of the job's device.
 *
 * Every buffer is one allocation with EV_DEVICE_GUARD canary bytes before and after the data,
 * checked after every run; what a stray read finds there is the placement's huge value
 * (eval_impl.h), so that such a read changes the output. The data pointer is aligned to exactly the tensor's recorded alignment
 * (not more), so a kernel that assumes wider alignment than the real calls guarantee faults here
 * rather than in the user's process. Kernels run on one blocking stream (ordered after the
 * synchronous copies and memsets on the legacy stream); a timed run is bracketed by CUDA events,
 * after an L2 flush (a 256 MB memset) outside the bracket when the job asks for it.
 *
 * The case data and the host copy that reads buffers back are pinned (page-locked in place):
 * every verified run copies its inputs in and its inputs and outputs back, which from pageable
 * memory took most of a candidate's evaluation for tensors of tens of MB. Pinning is only
 * speed: where it fails, or past pin_budget(), the copies go through pageable memory. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cuda_driver.h"
#include "forge/eval/eval_impl.h"

#define FLUSH_BYTES ((size_t)256 << 20)
#define PIN_MAX ((size_t)8 << 30)
#define PIN_SLOTS (KF_JOB_MAX_CASES * (KF_JOB_MAX_TENSORS + KF_JOB_MAX_OUTPUTS))

typedef struct cuda_state {
    kf_cuda_driver cu;
    kf_cu_device dev;
    kf_cu_context ctx; /* retained primary context, NULL when not */
    kf_cu_stream stream;
    kf_cu_event e0, e1;
    unsigned long long flush; /* scratch for flushing L2, 0 when none */
    unsigned char *scratch;   /* host copy of one buffer's span (view), whole pages */
    size_t scratch_len;
    int scratch_pinned;
    void *pinned[PIN_SLOTS]; /* case buffers registered with the driver */
    int n_pinned;
    size_t pinned_bytes;
    unsigned char guard[EV_DEVICE_GUARD + 256]; /* host copy of one guard region */
    /* exact mode: an allocation after each buffer, freed once all are made, so that unallocated
     * memory follows every buffer and memcheck reports a read past one (it knows allocation
     * bounds only: a read running into the next buffer would look valid to it) */
    unsigned long long spacer[KF_JOB_MAX_TENSORS + KF_JOB_MAX_OUTPUTS];
    int n_spacers;
} cuda_state;

#define SPACER_BYTES ((size_t)1 << 20) /* within the driver's 2 MB chunks, right after a small buffer */

static void cuda_allocated(kf_eval *ev)
{
    cuda_state *s = ev->state;
    for (int i = 0; i < s->n_spacers; i++) s->cu.mem_free(s->spacer[i]);
    s->n_spacers = 0;
}

/* Errors after which the context is unusable (CUDA's "sticky" errors), plus the ones that say
 * the context or driver is gone. */
static int sticky(kf_cu_result r)
{
    switch (r) {
    case 4:   /* CUDA_ERROR_DEINITIALIZED */
    case 214: /* CUDA_ERROR_ECC_UNCORRECTABLE */
    case 700: /* CUDA_ERROR_ILLEGAL_ADDRESS */
    case 702: /* CUDA_ERROR_LAUNCH_TIMEOUT */
    case 709: /* CUDA_ERROR_CONTEXT_IS_DESTROYED */
    case 710: /* CUDA_ERROR_ASSERT (trap) */
    case 714: /* CUDA_ERROR_HARDWARE_STACK_ERROR */
    case 715: /* CUDA_ERROR_ILLEGAL_INSTRUCTION */
    case 716: /* CUDA_ERROR_MISALIGNED_ADDRESS */
    case 717: /* CUDA_ERROR_INVALID_ADDRESS_SPACE */
    case 718: /* CUDA_ERROR_INVALID_PC */
    case 719: /* CUDA_ERROR_LAUNCH_FAILED */
    case 999: /* CUDA_ERROR_UNKNOWN */
        return 1;
    default:
        return 0;
    }
}

/* EV_STICKY with "what: NAME (description)" for a failed driver call of our own. */
static int driver_fail(cuda_state *s, kf_cu_result r, const char *what, char *err, size_t errcap)
{
    char eb[200];
    snprintf(err, errcap, "%s: %s", what, kf_cuda_strerror(&s->cu, r, eb, sizeof eb));
    return EV_STICKY;
}

/* At most PIN_MAX and a quarter of the machine's memory (the online tuner's worker runs beside
 * the user's process). */
static size_t pin_budget(void)
{
    long pages = sysconf(_SC_PHYS_PAGES);
    size_t quarter = pages > 0 ? (size_t)pages / 4 * kf_ev_page() : 0;
    return quarter < PIN_MAX ? quarter : PIN_MAX;
}

/* Pin `len` bytes at p if the budget allows; 1 when pinned. */
static int pin(cuda_state *s, void *p, size_t len)
{
    size_t budget = pin_budget();
    if (len > budget || s->pinned_bytes > budget - len) return 0;
    if (s->cu.mem_host_register(p, len, 0) != KF_CU_SUCCESS) return 0;
    s->pinned_bytes += len;
    return 1;
}

static void pin_cases(kf_eval *ev)
{
    cuda_state *s = ev->state;
    const kf_job *job = ev->job;
    for (int c = 0; c < job->n_cases; c++)
        for (int b = 0; b < job->sig.n_in + job->sig.n_out; b++) {
            int is_in = b < job->sig.n_in;
            const kf_job_tensor *t = is_in ? &job->sig.in[b] : &job->sig.out[b - job->sig.n_in];
            void *p = is_in ? ev->case_in[c][b] : ev->case_out[c][b - job->sig.n_in];
            size_t len = kf_ev_case_len(kf_job_span_bytes(t, NULL));
            if (p && s->n_pinned < PIN_SLOTS && pin(s, p, len)) s->pinned[s->n_pinned++] = p;
        }
}

static void cuda_close(kf_eval *ev)
{
    cuda_state *s = ev->state;
    if (!s) return;
    if (s->cu.lib) {
        if (s->ctx) s->cu.ctx_set_current(s->ctx);
        for (int i = 0; i < s->n_pinned; i++) s->cu.mem_host_unregister(s->pinned[i]);
        if (s->scratch_pinned) s->cu.mem_host_unregister(s->scratch);
        if (s->flush) s->cu.mem_free(s->flush);
        cuda_allocated(ev);
        if (s->e0) s->cu.event_destroy(s->e0);
        if (s->e1) s->cu.event_destroy(s->e1);
        if (s->stream) s->cu.stream_destroy(s->stream);
        if (s->ctx) s->cu.primary_ctx_release(s->dev);
        kf_cuda_driver_close(&s->cu);
    }
    free(s->scratch);
    free(s);
    ev->state = NULL;
}

static kf_status cuda_open(kf_eval *ev, char *err, size_t errcap)
{
    char eb[200];
    cuda_state *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errcap, "out of memory");
        return KF_ERR_NOMEM;
    }
    ev->state = s;
    kf_status st = kf_cuda_driver_open(&s->cu, NULL, err, errcap);
    if (st != KF_OK) goto fail;
    int idx = ev->job->device_index, count = 0;
    kf_cu_result r = s->cu.init(0);
    const char *what = "cuInit";
    if (r == KF_CU_SUCCESS) what = "cuDeviceGetCount", r = s->cu.device_get_count(&count);
    if (r == KF_CU_SUCCESS && idx >= count) {
        snprintf(err, errcap, "CUDA device %d does not exist (%d devices)", idx, count);
        st = KF_ERR_CUDA;
        goto fail;
    }
    if (r == KF_CU_SUCCESS) what = "cuDeviceGet", r = s->cu.device_get(&s->dev, idx);
    if (r == KF_CU_SUCCESS) {
        what = "cuDevicePrimaryCtxRetain";
        r = s->cu.primary_ctx_retain(&s->ctx, s->dev);
        if (r != KF_CU_SUCCESS) s->ctx = NULL;
    }
    if (r == KF_CU_SUCCESS) what = "cuCtxSetCurrent", r = s->cu.ctx_set_current(s->ctx);
    /* flags 0: a blocking stream, so it waits for the legacy-stream copies and memsets; at the
     * lowest priority the context offers, so that on a device shared with the model (MPS, or
     * one context) its kernels yield to the model's (across plain contexts the GPU time-slices
     * and priorities do not apply: the worker's duty cycle bounds its share there) */
    if (r == KF_CU_SUCCESS) {
        int least = 0, greatest = 0;
        if (s->cu.stream_create_with_priority && s->cu.ctx_get_stream_priority_range &&
            s->cu.ctx_get_stream_priority_range(&least, &greatest) == KF_CU_SUCCESS) {
            what = "cuStreamCreateWithPriority";
            r = s->cu.stream_create_with_priority(&s->stream, 0, least);
        } else {
            what = "cuStreamCreate", r = s->cu.stream_create(&s->stream, 0);
        }
    }
    if (r == KF_CU_SUCCESS) what = "cuEventCreate", r = s->cu.event_create(&s->e0, 0);
    if (r == KF_CU_SUCCESS) what = "cuEventCreate", r = s->cu.event_create(&s->e1, 0);
    if (r == KF_CU_SUCCESS && ev->job->search.flush_l2) {
        what = "cuMemAlloc (256 MB L2 flush buffer)";
        r = s->cu.mem_alloc(&s->flush, FLUSH_BYTES);
        if (r != KF_CU_SUCCESS) s->flush = 0;
    }
    if (r != KF_CU_SUCCESS) {
        snprintf(err, errcap, "CUDA device %d: %s: %s", idx, what,
                 kf_cuda_strerror(&s->cu, r, eb, sizeof eb));
        st = KF_ERR_CUDA;
        goto fail;
    }
    pin_cases(ev);
    return KF_OK;
fail:
    cuda_close(ev);
    return st;
}

static kf_status cuda_alloc(kf_eval *ev, ev_buf *b, char *err, size_t errcap)
{
    cuda_state *s = ev->state;
    char eb[200];
    /* cuMemAlloc returns >= 256-byte aligned memory: offsetting by `align` makes the data
     * aligned to exactly `align` */
    b->doff = ev->exact ? 0 : EV_DEVICE_GUARD + (b->align < 256 ? (size_t)b->align : 0);
    b->dtail = ev->exact ? 0 : EV_DEVICE_GUARD;
    if (b->span > SIZE_MAX - b->doff - b->dtail - 1) {
        snprintf(err, errcap, "a %llu-byte buffer is too large", (unsigned long long)b->span);
        return KF_ERR_NOMEM;
    }
    b->dlen = b->doff + (size_t)b->span + b->dtail;
    if (!b->dlen) b->dlen = 1; /* cuMemAlloc refuses 0 bytes */
    kf_cu_result r = s->cu.mem_alloc(&b->dbase, b->dlen);
    if (r != KF_CU_SUCCESS) {
        b->dbase = 0;
        snprintf(err, errcap, "cuMemAlloc of %zu bytes: %s", b->dlen,
                 kf_cuda_strerror(&s->cu, r, eb, sizeof eb));
        return KF_ERR_CUDA;
    }
    if (ev->exact && s->n_spacers < (int)(sizeof s->spacer / sizeof s->spacer[0]) &&
        s->cu.mem_alloc(&s->spacer[s->n_spacers], SPACER_BYTES) == KF_CU_SUCCESS)
        s->n_spacers++;
    b->place = EV_PLACE_END;
    b->canary = EV_CANARY_END;
    r = s->cu.memset_d8(b->dbase, b->canary, b->dlen);
    if (r != KF_CU_SUCCESS) {
        snprintf(err, errcap, "cuMemsetD8: %s", kf_cuda_strerror(&s->cu, r, eb, sizeof eb));
        s->cu.mem_free(b->dbase);
        b->dbase = 0;
        return KF_ERR_CUDA;
    }
    b->arg = (void *)(uintptr_t)(b->dbase + b->doff);
    if (b->span > s->scratch_len) {
        size_t len = kf_ev_case_len(b->span);
        unsigned char *p = aligned_alloc(kf_ev_page(), len);
        if (!p) {
            snprintf(err, errcap, "out of memory for a %llu-byte host copy",
                     (unsigned long long)b->span);
            s->cu.mem_free(b->dbase);
            b->dbase = 0;
            return KF_ERR_NOMEM;
        }
        if (s->scratch_pinned) {
            s->cu.mem_host_unregister(s->scratch);
            s->pinned_bytes -= kf_ev_case_len(s->scratch_len);
        }
        free(s->scratch);
        s->scratch = p;
        s->scratch_len = (size_t)b->span;
        s->scratch_pinned = pin(s, p, len);
    }
    return KF_OK;
}

/* The data stays where it is (canary bytes on both sides already); only their value changes. */
static int cuda_place(kf_eval *ev, ev_buf *b, int where, char *err, size_t errcap)
{
    cuda_state *s = ev->state;
    unsigned char canary = where == EV_PLACE_START ? EV_CANARY_START : EV_CANARY_END;
    b->place = where;
    if (canary == b->canary) return EV_OK;
    kf_cu_result r = b->doff ? s->cu.memset_d8(b->dbase, canary, b->doff) : KF_CU_SUCCESS;
    if (r == KF_CU_SUCCESS && b->dtail)
        r = s->cu.memset_d8(b->dbase + b->doff + b->span, canary, b->dtail);
    if (r != KF_CU_SUCCESS) return driver_fail(s, r, "cuMemsetD8 (guard)", err, errcap);
    b->canary = canary;
    return EV_OK;
}

static void cuda_release(kf_eval *ev, ev_buf *b)
{
    cuda_state *s = ev->state;
    if (s && b->dbase) s->cu.mem_free(b->dbase);
    b->dbase = 0;
    b->arg = NULL;
}

static int cuda_put(kf_eval *ev, ev_buf *b, const void *src, char *err, size_t errcap)
{
    cuda_state *s = ev->state;
    if (!b->span) return EV_OK;
    kf_cu_result r = s->cu.memcpy_htod(b->dbase + b->doff, src, (size_t)b->span);
    return r == KF_CU_SUCCESS ? EV_OK : driver_fail(s, r, "cuMemcpyHtoD", err, errcap);
}

static int cuda_poison(kf_eval *ev, ev_buf *b, char *err, size_t errcap)
{
    cuda_state *s = ev->state;
    if (!b->span) return EV_OK;
    kf_cu_result r = s->cu.memset_d8(b->dbase + b->doff, EV_POISON, (size_t)b->span);
    return r == KF_CU_SUCCESS ? EV_OK : driver_fail(s, r, "cuMemsetD8", err, errcap);
}

static int cuda_view(kf_eval *ev, ev_buf *b, const unsigned char **out, char *err, size_t errcap)
{
    cuda_state *s = ev->state;
    *out = s->scratch;
    if (!b->span) return EV_OK;
    kf_cu_result r = s->cu.memcpy_dtoh(s->scratch, b->dbase + b->doff, (size_t)b->span);
    return r == KF_CU_SUCCESS ? EV_OK : driver_fail(s, r, "cuMemcpyDtoH", err, errcap);
}

static int cuda_guards(kf_eval *ev, ev_buf *b, int64_t *where, char *err, size_t errcap)
{
    cuda_state *s = ev->state;
    /* the region before the data, then the one after it */
    const unsigned long long start[2] = {b->dbase, b->dbase + b->doff + b->span};
    const size_t len[2] = {b->doff, b->dtail};
    for (int g = 0; g < 2; g++) {
        if (!len[g]) continue;
        kf_cu_result r = s->cu.memcpy_dtoh(s->guard, start[g], len[g]);
        if (r != KF_CU_SUCCESS) return driver_fail(s, r, "cuMemcpyDtoH (guard)", err, errcap);
        for (size_t i = 0; i < len[g]; i++)
            if (s->guard[i] != b->canary) {
                *where = g == 0 ? -(int64_t)(b->doff - i) : (int64_t)(b->span + i);
                /* rewrite both, so the next candidate starts from clean guards */
                r = len[0] ? s->cu.memset_d8(start[0], b->canary, len[0]) : KF_CU_SUCCESS;
                if (r == KF_CU_SUCCESS && len[1])
                    r = s->cu.memset_d8(start[1], b->canary, len[1]);
                if (r != KF_CU_SUCCESS) return driver_fail(s, r, "cuMemsetD8 (guard)", err, errcap);
                return EV_HIT;
            }
    }
    return EV_OK;
}

static int cuda_run(kf_eval *ev, kf_compiler_i *cc, kf_compiled *k, void *const *ptrs, int n,
                    double *us, char *err, size_t errcap)
{
    cuda_state *s = ev->state;
    char eb[200];
    kf_cu_result r;
    if (us && s->flush) {
        r = s->cu.memset_d8_async(s->flush, 0, FLUSH_BYTES, s->stream);
        if (r != KF_CU_SUCCESS) return driver_fail(s, r, "L2 flush (cuMemsetD8Async)", err, errcap);
    }
    if (us && (r = s->cu.event_record(s->e0, s->stream)) != KF_CU_SUCCESS)
        return driver_fail(s, r, "cuEventRecord", err, errcap);
    int lr = cc->launch(cc->self, k, ptrs, n, s->stream);
    if (lr != 0) {
        if (lr < 0) {
            snprintf(err, errcap, "the launch was refused (arguments do not match the record)");
            return EV_LAUNCH;
        }
        snprintf(err, errcap, "cuLaunchKernel: %s", kf_cuda_strerror(&s->cu, lr, eb, sizeof eb));
        return sticky(lr) ? EV_STICKY : EV_LAUNCH;
    }
    if (us) {
        r = s->cu.event_record(s->e1, s->stream);
        if (r == KF_CU_SUCCESS) r = s->cu.event_synchronize(s->e1);
    } else {
        r = s->cu.stream_synchronize(s->stream);
    }
    if (r != KF_CU_SUCCESS) {
        /* the kernel itself failed: whatever the code, the context is not to be trusted */
        snprintf(err, errcap, "%s", kf_cuda_strerror(&s->cu, r, eb, sizeof eb));
        return EV_STICKY;
    }
    if (us) {
        float ms = 0;
        r = s->cu.event_elapsed_time(&ms, s->e0, s->e1);
        if (r != KF_CU_SUCCESS) return driver_fail(s, r, "cuEventElapsedTime", err, errcap);
        *us = (double)ms * 1e3;
    }
    return EV_OK;
}

const ev_backend kf_ev_cuda_backend = {
    /* .name    = */ "nvrtc",
    /* .open    = */ cuda_open,
    /* .close   = */ cuda_close,
    /* .alloc   = */ cuda_alloc,
    /* .place   = */ cuda_place,
    /* .release = */ cuda_release,
    /* .put     = */ cuda_put,
    /* .poison  = */ cuda_poison,
    /* .view    = */ cuda_view,
    /* .guards  = */ cuda_guards,
    /* .run     = */ cuda_run,
    /* .allocated = */ cuda_allocated,
};
