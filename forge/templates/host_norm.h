/* What the host normalization templates share (host_norm_util.c), private to the host_norm*.c
 * files: the reasons their why_not() gives, and the offset functions of strided inputs. */
#ifndef KF_FORGE_TEMPLATES_HOST_NORM_H
#define KF_FORGE_TEMPLATES_HOST_NORM_H

#include <stddef.h>

#include "forge/templates/template.h"

/* "name: <fmt>" into why (when why is not NULL); returns 0, so a check can `return` it. */
int kf_host_norm_why(char *why, size_t cap, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Every input and output is a contiguous f32 tensor of the shape shown in the reason; the first
 * one that is not, said in why. `what` names the tensor ("weight"). */
int kf_host_norm_f32(const kf_job_tensor *t, const char *what, char *why, size_t cap,
                     const char *name);
/* Emits `static inline int64_t name(int64_t i)`: the element offset in t of logical index i
 * over dims [from, to) in row-major order; size-1 dims are dropped and dims that merge (outer
 * stride = inner stride * inner size) merged, so the divisions, by constants, are as few as
 * the layout allows. */
void kf_host_norm_emit_offset(kf_strbuf *b, const char *name, const kf_job_tensor *t, int from,
                              int to);
#endif
