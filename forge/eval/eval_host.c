/* The host side of the evaluator (eval_impl.h): every buffer in its own mapping between two
 * PROT_NONE pages, its data flush against the back one (EV_PLACE_END: an access past the end
 * faults at once) or right after the front one (EV_PLACE_START: one before the start faults); the
 * slack on the other side (alignment, page rounding) holds canary bytes that are checked after
 * every run and that poison a stray read. Timing is the wall clock around one call. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "forge/eval/eval_impl.h"

static kf_status host_open(kf_eval *ev, char *err, size_t errcap)
{
    (void)ev, (void)err, (void)errcap;
    return KF_OK;
}

static void host_close(kf_eval *ev)
{
    (void)ev;
}

/* Data at the placement, the slack around it filled with the placement's canary. */
static int host_place(kf_eval *ev, ev_buf *b, int where, char *err, size_t errcap)
{
    (void)ev, (void)err, (void)errcap;
    uintptr_t a = (uintptr_t)b->align;
    if (where == EV_PLACE_START) {
        b->data = b->mid; /* page aligned */
    } else {
        /* rounded down to the alignment: the few bytes this may leave after the data are canary */
        uintptr_t end = (uintptr_t)(b->mid + b->mid_len);
        b->data = (unsigned char *)((end - (uintptr_t)b->span) & ~(a - 1));
    }
    b->arg = b->data;
    b->place = where;
    b->canary = where == EV_PLACE_START ? EV_CANARY_START : EV_CANARY_END;
    memset(b->mid, b->canary, (size_t)(b->data - b->mid));
    memset(b->data + b->span, b->canary, (size_t)(b->mid + b->mid_len - (b->data + b->span)));
    return EV_OK;
}

static kf_status host_alloc(kf_eval *ev, ev_buf *b, char *err, size_t errcap)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t a = (size_t)b->align;
    if (b->span > SIZE_MAX / 2 - 4 * page) {
        snprintf(err, errcap, "a %llu-byte buffer does not fit the address space",
                 (unsigned long long)b->span);
        return KF_ERR_NOMEM;
    }
    size_t mid = ((size_t)b->span + a + page - 1) / page * page;
    if (mid < page) mid = page;
    size_t len = mid + 2 * page;
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED) {
        snprintf(err, errcap, "cannot map %zu bytes for a buffer: %s", len, strerror(errno));
        return KF_ERR_NOMEM;
    }
    unsigned char *base = m;
    if (mprotect(base, page, PROT_NONE) != 0 || mprotect(base + page + mid, page, PROT_NONE) != 0) {
        snprintf(err, errcap, "cannot protect a guard page: %s", strerror(errno));
        munmap(m, len);
        return KF_ERR_IO;
    }
    b->map = base;
    b->map_len = len;
    b->mid = base + page;
    b->mid_len = mid;
    host_place(ev, b, EV_PLACE_END, err, errcap);
    return KF_OK;
}

int kf_ev_host_guard_at(const ev_buf *b, uintptr_t addr, int64_t *where)
{
    uintptr_t lo = (uintptr_t)b->map, hi = lo + b->map_len;
    if (!b->map || addr < lo || addr >= hi) return 0;
    if (addr >= (uintptr_t)b->mid && addr < (uintptr_t)(b->mid + b->mid_len)) return 0;
    *where = (int64_t)(addr - (uintptr_t)b->data); /* two's complement: negative before */
    return 1;
}

static void host_release(kf_eval *ev, ev_buf *b)
{
    (void)ev;
    if (b->map) munmap(b->map, b->map_len);
    b->map = b->mid = b->data = NULL;
    b->arg = NULL;
}

static int host_put(kf_eval *ev, ev_buf *b, const void *src, char *err, size_t errcap)
{
    (void)ev, (void)err, (void)errcap;
    if (b->span) memcpy(b->data, src, (size_t)b->span);
    return EV_OK;
}

static int host_poison(kf_eval *ev, ev_buf *b, char *err, size_t errcap)
{
    (void)ev, (void)err, (void)errcap;
    if (b->span) memset(b->data, EV_POISON, (size_t)b->span);
    return EV_OK;
}

static int host_view(kf_eval *ev, ev_buf *b, const unsigned char **out, char *err, size_t errcap)
{
    (void)ev, (void)err, (void)errcap;
    *out = b->data;
    return EV_OK;
}

/* On a hit the canary is rewritten, so the next candidate starts from clean guards. */
static int host_guards(kf_eval *ev, ev_buf *b, int64_t *where, char *err, size_t errcap)
{
    (void)ev, (void)err, (void)errcap;
    unsigned char *lo_end = b->data, *hi = b->data + b->span, *hi_end = b->mid + b->mid_len;
    int hit = 0;
    for (unsigned char *p = b->mid; p < lo_end && !hit; p++)
        if (*p != b->canary) *where = -(int64_t)(b->data - p), hit = 1;
    for (unsigned char *p = hi; p < hi_end && !hit; p++)
        if (*p != b->canary) *where = (int64_t)(p - b->data), hit = 1;
    if (!hit) return EV_OK;
    memset(b->mid, b->canary, (size_t)(lo_end - b->mid));
    memset(hi, b->canary, (size_t)(hi_end - hi));
    return EV_HIT;
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int host_run(kf_eval *ev, kf_compiler_i *cc, kf_compiled *k, void *const *ptrs, int n,
                    double *us, char *err, size_t errcap)
{
    (void)ev;
    double t0 = us ? now_us() : 0;
    int r = cc->launch(cc->self, k, ptrs, n, NULL);
    if (us) *us = now_us() - t0;
    if (r != 0) {
        snprintf(err, errcap, "the host launch failed (%d)", r);
        return EV_LAUNCH;
    }
    return EV_OK;
}

const ev_backend kf_ev_host_backend = {
    /* .name    = */ "host",
    /* .open    = */ host_open,
    /* .close   = */ host_close,
    /* .alloc   = */ host_alloc,
    /* .place   = */ host_place,
    /* .release = */ host_release,
    /* .put     = */ host_put,
    /* .poison  = */ host_poison,
    /* .view    = */ host_view,
    /* .guards  = */ host_guards,
    /* .run     = */ host_run,
    /* .allocated = */ NULL,
};
