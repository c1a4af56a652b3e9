/* Status codes with messages: a failing call writes why into the caller's error buffer and
 * returns its status (kforge.h has the codes and kf_status_str). */
#ifndef KF_COMMON_STATUS_H
#define KF_COMMON_STATUS_H

#include <stddef.h>

#include "kforge.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The formatted message into err[0..cap) (nothing when err is NULL or cap is 0). */
void kf_errf(char *err, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* kf_errf, then return st: `return kf_fail(err, cap, KF_ERR_INVALID, "...", ...);` */
kf_status kf_fail(char *err, size_t cap, kf_status st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#ifdef __cplusplus
}
#endif
#endif
