#include "common/status.h"

#include <stdarg.h>
#include <stdio.h>

const char *kf_status_str(kf_status s)
{
    switch (s) {
    case KF_OK: return "ok";
    case KF_ERR_INVALID: return "invalid argument";
    case KF_ERR_NOMEM: return "out of memory";
    case KF_ERR_FULL: return "table full";
    case KF_ERR_NOT_FOUND: return "not found";
    case KF_ERR_UNSUPPORTED: return "unsupported";
    case KF_ERR_KERNEL: return "kernel failed";
    case KF_ERR_CUDA: return "CUDA error";
    case KF_ERR_IO: return "I/O error";
    case KF_ERR_BUSY: return "busy";
    }
    return "unknown status";
}

const char *kf_version(void)
{
    return KF_VERSION_STRING;
}

void kf_errf(char *err, size_t cap, const char *fmt, ...)
{
    if (!err || !cap) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
}

kf_status kf_fail(char *err, size_t cap, kf_status st, const char *fmt, ...)
{
    if (err && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, cap, fmt, ap);
        va_end(ap);
    }
    return st;
}
