/* kf_strbuf (strbuf.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/strbuf.h"

void kf_strbuf_printf(kf_strbuf *b, const char *fmt, ...)
{
    if (b->oom) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->len;
        int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? room : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if (b->p && (size_t)n < room) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + (size_t)n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
}

char *kf_strbuf_take(kf_strbuf *b)
{
    char *p = b->oom ? NULL : b->p;
    if (b->oom) free(b->p);
    memset(b, 0, sizeof *b);
    return p;
}

void kf_strbuf_free(kf_strbuf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}
