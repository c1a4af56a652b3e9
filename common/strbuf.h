/* A growing string: printf-appends, remembering an out-of-memory and stopping there, so a long
 * render checks for failure once at the end. */
#ifndef KF_COMMON_STRBUF_H
#define KF_COMMON_STRBUF_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A growing string for rendering; on out-of-memory it remembers the failure and stops. */
typedef struct kf_strbuf {
    char *p;
    size_t len, cap;
    int oom;
} kf_strbuf;
void kf_strbuf_printf(kf_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Hand the text over (malloc'ed, caller frees) or NULL after an out-of-memory; resets `b`. */
char *kf_strbuf_take(kf_strbuf *b);
void kf_strbuf_free(kf_strbuf *b);

#ifdef __cplusplus
}
#endif
#endif
