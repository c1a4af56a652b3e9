/* Logging through one callback that the Python package routes into `logging`. */
#ifndef KF_COMMON_LOG_H
#define KF_COMMON_LOG_H

#include "kforge.h"

#ifdef __cplusplus
extern "C" {
#endif

void kf_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int kf_log_enabled(int level);
/* A malloc'ed formatted string (at most 1 KiB), for messages handed to callers; NULL if out of
 * memory. */
char *kf_aprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Level named by KFORGE_LOG (debug|info|warning|error), KF_LOG_WARNING when unset or unknown. */
int kf_log_level_from_env(void);

#define KF_DEBUG(...) kf_log(KF_LOG_DEBUG, __VA_ARGS__)
#define KF_INFO(...) kf_log(KF_LOG_INFO, __VA_ARGS__)
#define KF_WARN(...) kf_log(KF_LOG_WARNING, __VA_ARGS__)
#define KF_ERROR(...) kf_log(KF_LOG_ERROR, __VA_ARGS__)

#ifdef __cplusplus
}
#endif
#endif
