/* Internals of the candidate evaluator (eval.h), shared by eval.c (the verification and timing
 * flow), eval_host.c and eval_cuda.c (where the buffers live and how a kernel runs) and
 * eval_compare.c (comparing values per dtype). Not a public interface. */
#ifndef KF_FORGE_EVAL_IMPL_H
#define KF_FORGE_EVAL_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "common/match.h"
#include "forge/eval/eval.h"

/* Bytes around every buffer (any other value there = an OOB write), also what a stray read
 * finds there: a huge value (f16 61280, f32/bf16 1.3e36, f64 4.6e285), positive with the data
 * placed at the end, negative at the start. Not NaN: fmaxf, fminf and comparisons skip a NaN, so
 * an off-by-one row maximum would pass; a huge value of either sign breaks maxima, minima, sums
 * and exp. */
#define EV_CANARY_END 0x7b
#define EV_CANARY_START 0xfb
#define EV_POISON 0xff          /* fresh outputs before every verified run */
#define EV_DEVICE_GUARD 4096    /* canary bytes before and after a device buffer */
#define EV_WARMUP 3

/* Outcome of a backend operation. */
enum {
    EV_OK = 0,
    EV_HIT,    /* guards: a canary byte changed */
    EV_LAUNCH, /* the kernel would not launch (configuration): LOAD_ERROR */
    EV_STICKY, /* the device (context) is broken, or a driver call failed: CRASH, restart */
};

/* Where a buffer's data sits (every case runs with each, END first): END ends flush against
 * the host's back guard page (a read past the end faults), START begins right after the front
 * one (a read before the start faults). On the device both sides are canary bytes, the placement
 * picks their value. */
enum { EV_PLACE_END = 0, EV_PLACE_START = 1, EV_PLACES = 2 };

/* One argument buffer: a tensor's strided span with guards around it. */
typedef struct ev_buf {
    uint64_t span;   /* bytes the tensor addresses (kf_job_span_bytes) */
    int align;       /* the data pointer is aligned to this (power of two) */
    void *arg;       /* what the kernel receives: a host pointer or a CUdeviceptr */
    int place;       /* EV_PLACE_* */
    unsigned char canary; /* EV_CANARY_END or _START, as placed */
    /* host: [guard page][slack | data | slack][guard page], slack filled with the canary */
    unsigned char *map, *mid, *data;
    size_t map_len, mid_len;
    /* device: data at dbase + doff, canary bytes in [dbase, dbase+doff) and dtail after the span
     * (both 0 when exact) */
    unsigned long long dbase;
    size_t dlen, doff, dtail;
} ev_buf;

/* Where buffers live and how a kernel runs. Every int-returning slot returns EV_*; err gets the
 * reason for anything but EV_OK. */
typedef struct ev_backend {
    const char *name; /* the compiler backend it pairs with: "host" | "nvrtc" */
    kf_status (*open)(kf_eval *ev, char *err, size_t errcap);
    void (*close)(kf_eval *ev);
    /* b->span and b->align are set; fills the rest, placed at EV_PLACE_END. */
    kf_status (*alloc)(kf_eval *ev, ev_buf *b, char *err, size_t errcap);
    /* Move the data to EV_PLACE_* (b->arg may change; the data bytes are not kept) and fill the
     * guards with that placement's canary. */
    int (*place)(kf_eval *ev, ev_buf *b, int where, char *err, size_t errcap);
    void (*release)(kf_eval *ev, ev_buf *b);
    int (*put)(kf_eval *ev, ev_buf *b, const void *src, char *err, size_t errcap);
    int (*poison)(kf_eval *ev, ev_buf *b, char *err, size_t errcap);
    /* The buffer's span as host bytes (valid until the next view). */
    int (*view)(kf_eval *ev, ev_buf *b, const unsigned char **out, char *err, size_t errcap);
    /* EV_HIT when a canary byte changed (the guards are then rewritten); *where = its offset
     * from the data start (negative: before it). */
    int (*guards)(kf_eval *ev, ev_buf *b, int64_t *where, char *err, size_t errcap);
    /* Run the kernel once to completion; when `us` is non-NULL, time that one run. */
    int (*run)(kf_eval *ev, kf_compiler_i *cc, kf_compiled *k, void *const *ptrs, int n,
               double *us, char *err, size_t errcap);
    /* Optional: every buffer is allocated (the CUDA backend frees its exact mode's spacers). */
    void (*allocated)(kf_eval *ev);
} ev_backend;

extern const ev_backend kf_ev_host_backend;
extern const ev_backend kf_ev_cuda_backend;

struct kf_eval {
    const kf_job *job;
    const ev_backend *be;
    void *state; /* the backend's */
    ev_buf in[KF_JOB_MAX_TENSORS];
    ev_buf out[KF_JOB_MAX_OUTPUTS]; /* fresh outputs only; an aliased one lives in in[] */
    unsigned char *case_in[KF_JOB_MAX_CASES][KF_JOB_MAX_TENSORS];
    /* 1: case_in[c][i] is an earlier case's buffer (the same file: write_job keeps a large gather
     * source once), not freed with this case */
    unsigned char case_in_shared[KF_JOB_MAX_CASES][KF_JOB_MAX_TENSORS];
    unsigned char *case_out[KF_JOB_MAX_CASES][KF_JOB_MAX_OUTPUTS];
    /* device buffers allocated to exactly their span, no canary bytes (KFORGE_EVAL_EXACT=1, set
     * for the child that runs under compute-sanitizer, which sees only allocation bounds) */
    int exact;
    int n_places; /* EV_PLACES; 1 (END only) lets a test measure what the second costs */
    /* what runs now, for kf_eval_fault_describe (a signal handler reads them) */
    volatile int cur_case, cur_place; /* -1: none / the timed runs */
};

/* The host's page size, and the bytes a case buffer of `span` bytes takes: whole pages, at least
 * one (eval.c allocates case data page-aligned, so that a backend can pin it in place). */
size_t kf_ev_page(void);
size_t kf_ev_case_len(uint64_t span);

/* Host buffers: 1 when addr lies in one of b's guard pages, *where its offset from the data
 * start (negative: before it). Only reads b: safe in a signal handler. */
int kf_ev_host_guard_at(const ev_buf *b, uintptr_t addr, int64_t *where);

/* ---- eval_compare.c ---- */

typedef struct ev_cmp {
    int64_t n;          /* elements compared */
    int64_t bad;        /* outside the tolerance (or NaN/Inf misplaced, or ints differing) */
    int64_t poisoned;   /* of those, still holding the poison bytes */
    int64_t first_bad, first_poisoned;
    double first_got, first_exp;
    int64_t worst_at;   /* the bad element with the largest |got - expected| */
    double worst_abs;
    double max_abs, max_rel; /* over finite pairs */
} ev_cmp;

/* Compare every element the tensor addresses; gaps in the span are skipped. Elements are numbered
 * in memory order for a dense tensor (its span holds exactly its elements), else in logical order. */
void kf_ev_compare(const kf_job_tensor *t, const unsigned char *got, const unsigned char *exp,
                   double atol, double rtol, ev_cmp *c);
/* The value of one element as a double (ints converted, NaN kept); complex: the real part. */

#endif
