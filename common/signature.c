#include "common/signature.h"

#include <cjson/cJSON.h>

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* Item tags of the canonical encoding. */
enum {
    TAG_TENSOR = 'T',
    TAG_TLIST = 'L',
    TAG_INT = 'I',
    TAG_DOUBLE = 'D',
    TAG_BOOL = 'B',
    TAG_STR = 'S',
    TAG_NONE = 'N',
    TAG_ILIST = 'J',
    TAG_DEVICE = 'V',
    TAG_WRAPPED = 'W',
    TAG_OPAQUE = '?',
    TAG_TRUNC = 'X',
};

#define KF_SIG_STR_MAX 48
#define KF_ALIGN_CAP_LOG2 4 /* alignments above 16 bytes are all "16" */

/* Room for a whole item of n bytes, with one byte left for the truncation marker; when it does
 * not fit, the marker is written at this item boundary and nothing more is ever added. */
static int reserve(kf_sig *s, size_t n)
{
    if (s->flags & KF_SIG_TRUNCATED) return -1;
    if (s->len + n + 1 > KF_SIG_MAX_BYTES) {
        s->flags |= KF_SIG_TRUNCATED;
        s->buf[s->len++] = TAG_TRUNC;
        return -1;
    }
    return 0;
}

/* Only after reserve() said the whole item fits. */
static void raw(kf_sig *s, const void *p, size_t n)
{
    memcpy(s->buf + s->len, p, n);
    s->len += (uint32_t)n;
}

static void raw_u8(kf_sig *s, uint8_t v) { raw(s, &v, 1); }

void kf_sig_begin(kf_sig *s, const char *op)
{
    s->len = 0;
    s->flags = 0;
    s->n_tensors = 0;
    s->device_type = KF_DEV_CPU; /* until a tensor says otherwise */
    s->device_index = 0;
    s->device_known = 0;
    s->type_fixed = 0;
    size_t n = strlen(op);
    if (n > 255) n = 255;
    reserve(s, 1 + n); /* always fits */
    raw_u8(s, (uint8_t)n);
    raw(s, op, n);
}

void kf_sig_head_make(kf_sig_head *h, const char *op)
{
    memset(h, 0, sizeof *h);
    h->op = op;
    size_t n = strlen(op);
    if (n + 1 > KF_SIG_HEAD_MAX) return;
    h->bytes[0] = (uint8_t)n;
    memcpy(h->bytes + 1, op, n);
    h->len = (uint32_t)(n + 1);
}

void kf_sig_begin_head(kf_sig *s, const kf_sig_head *h)
{
    if (!h->len) {
        kf_sig_begin(s, h->op);
        return;
    }
    s->flags = 0;
    s->n_tensors = 0;
    s->device_type = KF_DEV_CPU;
    s->device_index = 0;
    s->device_known = 0;
    s->type_fixed = 0;
    _Static_assert(KF_SIG_HEAD_MAX <= KF_SIG_MAX_BYTES, "a head fits any signature");
    memcpy(s->buf, h->bytes, KF_SIG_HEAD_MAX);
    s->len = h->len;
}

static uint8_t align_log2(const void *p)
{
    const uintptr_t a = (uintptr_t)p | ((uintptr_t)1 << KF_ALIGN_CAP_LOG2); /* NULL: the cap */
    return (uint8_t)__builtin_ctzll((unsigned long long)a);
}

static int tensor_dims(kf_sig *s, int ndim)
{
    int nd = ndim < 0 ? 0 : ndim;
    if (nd > KF_MAX_DIMS) {
        /* never produced by torch_ext (it checks); keep the encoding exact anyway */
        s->flags |= KF_SIG_UNSERVABLE;
        nd = KF_MAX_DIMS;
    }
    return nd;
}

/* Under a reservation of 5 + 16 * nd bytes. */
static void put_tensor_body(kf_sig *s, int dtype, int device_type, int device_index, const void *data,
                            int nd, const int64_t *sizes, const int64_t *strides)
{
    uint8_t head[5] = {(uint8_t)dtype, (uint8_t)device_type, (uint8_t)device_index,
                       align_log2(data), (uint8_t)nd};
    raw(s, head, sizeof head);
    /* element by element: nd is small, and a fixed-size copy needs no call to memcpy */
    uint8_t *p = s->buf + s->len;
    for (int i = 0; i < nd; i++) memcpy(p + 8 * i, &sizes[i], 8);
    p += 8 * nd;
    for (int i = 0; i < nd; i++) memcpy(p + 8 * i, &strides[i], 8);
    s->len += (uint32_t)(16 * nd);
    kf_sig_device_hint(s, device_type, device_index);
    /* a tensor on another device than the call's (a CPU scalar in a CUDA call, cuda:1 in a
     * cuda:0 copy_): eager moves or synchronizes across devices; a kernel would get a pointer
     * it must not touch. kf_sig_unservable_reason says the same in words. */
    if (device_type != s->device_type || device_index != s->device_index)
        s->flags |= KF_SIG_UNSERVABLE;
    s->n_tensors++;
    if (s->n_tensors > KF_SIG_MAX_TENSORS) s->flags |= KF_SIG_UNSERVABLE;
}

void kf_sig_tensor(kf_sig *s, const kf_tensor *t)
{
    kf_sig_tensor_parts(s, t->dtype, t->device_type, t->device_index, t->data, t->ndim, t->sizes,
                        t->strides);
}

void kf_sig_tensor_parts(kf_sig *s, int dtype, int device_type, int device_index, const void *data,
                         int ndim, const int64_t *sizes, const int64_t *strides)
{
    int nd = tensor_dims(s, ndim);
    if (reserve(s, 1 + 5 + 16 * (size_t)nd)) return;
    raw_u8(s, TAG_TENSOR);
    put_tensor_body(s, dtype, device_type, device_index, data, nd, sizes, strides);
}

void kf_sig_tensor_list(kf_sig *s, const kf_tensor *ts, int n)
{
    uint16_t cnt = (uint16_t)(n < 0 ? 0 : n > 65535 ? 65535 : n);
    if (reserve(s, 3)) return;
    raw_u8(s, TAG_TLIST);
    raw(s, &cnt, sizeof cnt);
    for (int i = 0; i < cnt; i++) {
        int nd = tensor_dims(s, ts[i].ndim);
        if (reserve(s, 5 + 16 * (size_t)nd)) return;
        put_tensor_body(s, ts[i].dtype, ts[i].device_type, ts[i].device_index, ts[i].data, nd,
                        ts[i].sizes, ts[i].strides);
    }
}

void kf_sig_int(kf_sig *s, int64_t v)
{
    if (reserve(s, 9)) return;
    raw_u8(s, TAG_INT);
    raw(s, &v, sizeof v);
}

void kf_sig_double(kf_sig *s, double v)
{
    if (reserve(s, 9)) return;
    raw_u8(s, TAG_DOUBLE);
    raw(s, &v, sizeof v); /* bit pattern: -0.0 and 0.0 are different signatures, as they should */
}

void kf_sig_bool(kf_sig *s, int v)
{
    if (reserve(s, 2)) return;
    raw_u8(s, TAG_BOOL);
    raw_u8(s, v ? 1 : 0);
}

void kf_sig_str(kf_sig *s, const char *v)
{
    size_t n = strlen(v);
    if (n > KF_SIG_STR_MAX) {
        /* a long string cannot be stored exactly: hash it so the signature stays exact */
        s->flags |= KF_SIG_UNSERVABLE;
        uint64_t h = XXH3_64bits(v, n);
        if (reserve(s, 10)) return;
        raw_u8(s, TAG_STR);
        raw_u8(s, 255);
        raw(s, &h, sizeof h);
        return;
    }
    if (reserve(s, 2 + n)) return;
    raw_u8(s, TAG_STR);
    raw_u8(s, (uint8_t)n);
    raw(s, v, n);
}

void kf_sig_none(kf_sig *s)
{
    if (reserve(s, 1)) return;
    raw_u8(s, TAG_NONE);
}

void kf_sig_int_list(kf_sig *s, const int64_t *v, int n)
{
    uint16_t cnt = (uint16_t)(n < 0 ? 0 : n > 65535 ? 65535 : n);
    if (reserve(s, 3 + sizeof(int64_t) * cnt)) return;
    raw_u8(s, TAG_ILIST);
    raw(s, &cnt, sizeof cnt);
    if (cnt) raw(s, v, sizeof(int64_t) * cnt);
}

void kf_sig_device(kf_sig *s, int type, int index)
{
    uint8_t b[3] = {TAG_DEVICE, (uint8_t)type, (uint8_t)index};
    if (reserve(s, sizeof b)) return;
    raw(s, b, sizeof b);
}

void kf_sig_wrapped(kf_sig *s, int dtype, double fvalue, int64_t ivalue)
{
    /* servable: the kernel never gets it (its value is compiled in, as a job's scalar under the
     * argument's name, forge/job/sig.h); the exact bits make 1e-6 and 2e-6 two signatures */
    if (dtype != KF_F64 && dtype != KF_I64 && dtype != KF_BOOL) s->flags |= KF_SIG_UNSERVABLE;
    if (reserve(s, 10)) return;
    raw_u8(s, TAG_WRAPPED);
    raw_u8(s, (uint8_t)dtype);
    if (dtype == KF_F64)
        raw(s, &fvalue, sizeof fvalue);
    else
        raw(s, &ivalue, sizeof ivalue);
}

void kf_sig_call_device(kf_sig *s, int type)
{
    s->device_type = type;
    s->type_fixed = 1;
}

void kf_sig_device_hint(kf_sig *s, int type, int index)
{
    if (s->device_known || (s->type_fixed && type != s->device_type)) return;
    s->device_known = 1;
    s->device_type = type;
    s->device_index = index;
}

void kf_sig_opaque(kf_sig *s, const char *type_name)
{
    s->flags |= KF_SIG_UNSERVABLE;
    size_t n = strlen(type_name);
    if (n > KF_SIG_STR_MAX) n = KF_SIG_STR_MAX;
    if (reserve(s, 2 + n)) return;
    raw_u8(s, TAG_OPAQUE);
    raw_u8(s, (uint8_t)n);
    raw(s, type_name, n);
}

uint64_t kf_sig_hash(const uint8_t *buf, uint32_t len)
{
    uint64_t h = XXH3_64bits(buf, len);
    return h ? h : 1; /* 0 marks an empty table slot */
}

size_t kf_sig_op_name(const uint8_t *buf, uint32_t len, char *out, size_t cap)
{
    if (cap == 0) return 0;
    out[0] = 0;
    if (len < 1) return 0;
    size_t n = buf[0];
    if (n + 1 > len) n = len - 1;
    if (n >= cap) n = cap - 1;
    memcpy(out, buf + 1, n);
    out[n] = 0;
    return n;
}

/* ---- formatting ---- */

typedef struct fmt_out {
    char *p;
    size_t cap, len;
} fmt_out;

static void emit(fmt_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(fmt_out *o, const char *fmt, ...)
{
    if (o->len >= o->cap) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->p + o->len, o->cap - o->len, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    o->len += (size_t)n;
    if (o->len >= o->cap) o->len = o->cap - 1;
}

/* Shortest text that reads back as the same double, always with a '.' or exponent. */
static void emit_double(fmt_out *o, double v)
{
    char tmp[40];
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v) break;
    }
    if (!strpbrk(tmp, ".eni")) strcat(tmp, ".0");
    emit(o, "%s", tmp);
}

typedef struct reader {
    const uint8_t *b;
    uint32_t len, pos;
} reader;

static int take(reader *r, void *dst, size_t n)
{
    if (r->pos + n > r->len) return -1;
    memcpy(dst, r->b + r->pos, n);
    r->pos += (uint32_t)n;
    return 0;
}

static int fmt_tensor(reader *r, fmt_out *o)
{
    uint8_t head[5];
    int64_t sizes[KF_MAX_DIMS], strides[KF_MAX_DIMS];
    if (take(r, head, sizeof head)) return -1;
    int nd = head[4];
    if (nd > KF_MAX_DIMS) return -1;
    if (take(r, sizes, 8u * nd) || take(r, strides, 8u * nd)) return -1;
    emit(o, "%s[", kf_dtype_name(head[0]));
    int family = 0; /* a negative size: a shape family's free dim, printed "*" (contiguous) */
    for (int i = 0; i < nd; i++) {
        if (sizes[i] < 0) family = 1, emit(o, "%s*", i ? "," : "");
        else emit(o, "%s%" PRId64, i ? "," : "", sizes[i]);
    }
    emit(o, "]");
    int contiguous = 1;
    uint64_t expect = 1; /* unsigned: a damaged encoding may hold any sizes */
    for (int i = nd - 1; i >= 0; i--) {
        if (sizes[i] != 1 && (uint64_t)strides[i] != expect) contiguous = 0;
        expect *= (uint64_t)sizes[i];
    }
    if (!contiguous && !family) {
        emit(o, " s=(");
        for (int i = 0; i < nd; i++) emit(o, "%s%" PRId64, i ? "," : "", strides[i]);
        emit(o, ")");
    }
    if (head[3] < KF_ALIGN_CAP_LOG2) emit(o, " align=%d", 1 << head[3]);
    return 0;
}

kf_status kf_sig_device_of(const uint8_t *buf, uint32_t len, int *type, int *index)
{
    *type = KF_DEV_CPU;
    *index = 0;
    char text[256];
    /* formatting walks and bounds-checks the whole encoding: reuse it as the validator */
    kf_status st = kf_sig_format(buf, len, NULL, 0, text, sizeof text);
    if (st != KF_OK) return st;
    uint32_t pos = 1u + buf[0];
    while (pos < len) {
        uint8_t tag = buf[pos++];
        if (tag == TAG_TENSOR || tag == TAG_TLIST) {
            if (tag == TAG_TLIST) {
                uint16_t cnt;
                if (pos + 2 > len) return KF_ERR_INVALID;
                memcpy(&cnt, buf + pos, 2);
                pos += 2;
                if (cnt == 0) return KF_OK; /* an empty list says nothing */
            }
            if (pos + 3 > len) return KF_ERR_INVALID;
            *type = buf[pos + 1];
            *index = buf[pos + 2];
            return KF_OK;
        }
        /* skip one non-tensor item (the format pass above proved it well-formed) */
        switch (tag) {
        case TAG_INT: case TAG_DOUBLE: pos += 8; break;
        case TAG_BOOL: pos += 1; break;
        case TAG_NONE: case TAG_TRUNC: break;
        case TAG_DEVICE: pos += 2; break;
        case TAG_WRAPPED: pos += 9; break;
        case TAG_STR: pos += 1u + (buf[pos] == 255 ? 8u : buf[pos]); break;
        case TAG_OPAQUE: pos += 1u + buf[pos]; break;
        case TAG_ILIST: {
            uint16_t cnt;
            memcpy(&cnt, buf + pos, 2);
            pos += 2u + 8u * cnt;
            break;
        }
        default: return KF_ERR_INVALID;
        }
    }
    return KF_OK;
}

/* One tensor's head (after its tag or in a list) for the reasons: its device, then skip it. */
static int reason_tensor(reader *r, int dev_type, int dev_index, int *off_device, int *dt, int *di)
{
    uint8_t head[5];
    if (take(r, head, sizeof head) || head[4] > KF_MAX_DIMS) return -1;
    if (r->pos + 16u * head[4] > r->len) return -1;
    r->pos += 16u * head[4];
    *dt = head[1];
    *di = head[2];
    *off_device = head[1] != dev_type || head[2] != dev_index;
    return 0;
}

int kf_sig_unservable_reason(const uint8_t *buf, uint32_t len, int dev_type, int dev_index,
                             const char *const *argnames, int n_argnames, char *out, size_t cap)
{
    fmt_out o = {out, cap, 0};
    reader r = {buf, len, 0};
    if (cap == 0) return -1;
    out[0] = 0;
    uint8_t n;
    if (take(&r, &n, 1) || r.pos + n > r.len) return -1;
    r.pos += n;
    int n_tensors = 0;
    char name[80];
    for (int arg = 0; r.pos < r.len; arg++) {
        uint8_t tag;
        if (take(&r, &tag, 1)) return -1;
        if (arg < n_argnames && argnames && argnames[arg] && argnames[arg][0])
            snprintf(name, sizeof name, "argument '%s'", argnames[arg]);
        else
            snprintf(name, sizeof name, "argument %d", arg);
        int off = 0, dt = 0, di = 0;
        switch (tag) {
        case TAG_TENSOR:
            if (reason_tensor(&r, dev_type, dev_index, &off, &dt, &di)) return -1;
            n_tensors++;
            if (off) {
                emit(&o, "%s is on %s:%d, the call on %s:%d (a kernel runs on one device)", name,
                     kf_device_type_name(dt), di, kf_device_type_name(dev_type), dev_index);
                return 0;
            }
            break;
        case TAG_TLIST: {
            uint16_t cnt;
            if (take(&r, &cnt, 2)) return -1;
            for (int i = 0; i < cnt && r.pos < r.len && r.b[r.pos] != TAG_TRUNC; i++) {
                if (reason_tensor(&r, dev_type, dev_index, &off, &dt, &di)) return -1;
                n_tensors++;
                if (off) {
                    emit(&o, "%s element %d is on %s:%d, the call on %s:%d (a kernel runs on one "
                         "device)", name, i, kf_device_type_name(dt), di,
                         kf_device_type_name(dev_type), dev_index);
                    return 0;
                }
            }
            break;
        }
        case TAG_INT: case TAG_DOUBLE:
            if (r.pos + 8 > r.len) return -1;
            r.pos += 8;
            break;
        case TAG_BOOL:
            if (r.pos + 1 > r.len) return -1;
            r.pos += 1;
            break;
        case TAG_NONE: break;
        case TAG_DEVICE:
            if (r.pos + 2 > r.len) return -1;
            r.pos += 2;
            break;
        case TAG_ILIST: {
            uint16_t cnt;
            if (take(&r, &cnt, 2) || r.pos + 8u * cnt > r.len) return -1;
            r.pos += 8u * cnt;
            break;
        }
        case TAG_STR: {
            uint8_t sl;
            if (take(&r, &sl, 1)) return -1;
            if (sl == 255) {
                emit(&o, "%s is a string longer than %d characters", name, KF_SIG_STR_MAX);
                return 0;
            }
            if (r.pos + sl > r.len) return -1;
            r.pos += sl;
            break;
        }
        case TAG_WRAPPED: {
            uint8_t dt;
            if (take(&r, &dt, 1) || r.pos + 8 > r.len) return -1;
            r.pos += 8;
            if (dt != KF_F64 && dt != KF_I64 && dt != KF_BOOL) {
                emit(&o, "%s is a Python number of type %s, which a kernel cannot take", name,
                     kf_dtype_name(dt));
                return 0;
            }
            break;
        }
        case TAG_OPAQUE: {
            uint8_t sl;
            char sv[KF_SIG_STR_MAX + 1];
            if (take(&r, &sl, 1) || sl > KF_SIG_STR_MAX || take(&r, sv, sl)) return -1;
            sv[sl] = 0;
            emit(&o, "%s is %s, which a kernel cannot take", name, sv);
            return 0;
        }
        case TAG_TRUNC:
            emit(&o, "more arguments than a signature holds (%d bytes): truncated", KF_SIG_MAX_BYTES);
            return 0;
        default: return -1;
        }
    }
    if (n_tensors > KF_SIG_MAX_TENSORS)
        emit(&o, "%d tensors; a kernel takes at most %d", n_tensors, KF_SIG_MAX_TENSORS);
    return 0;
}

kf_status kf_sig_format(const uint8_t *buf, uint32_t len, const char *const *argnames,
                        int n_argnames, char *out, size_t cap)
{
    fmt_out o = {out, cap, 0};
    reader r = {buf, len, 0};
    if (cap == 0) return KF_ERR_INVALID;
    out[0] = 0;
    uint8_t n;
    char name[256];
    if (take(&r, &n, 1) || take(&r, name, n)) return KF_ERR_INVALID;
    name[n] = 0;
    const char *shortname = strstr(name, "::");
    emit(&o, "%s(", shortname ? shortname + 2 : name);
    for (int arg = 0; r.pos < r.len; arg++) {
        uint8_t tag;
        if (take(&r, &tag, 1)) return KF_ERR_INVALID;
        if (arg) emit(&o, ", ");
        if (tag != TAG_TENSOR && tag != TAG_TLIST && tag != TAG_TRUNC && arg < n_argnames &&
            argnames[arg] && argnames[arg][0])
            emit(&o, "%s=", argnames[arg]);
        switch (tag) {
        case TAG_TENSOR:
            if (fmt_tensor(&r, &o)) return KF_ERR_INVALID;
            break;
        case TAG_TLIST: {
            uint16_t cnt;
            if (take(&r, &cnt, 2)) return KF_ERR_INVALID;
            emit(&o, "[");
            for (int i = 0; i < cnt && r.pos < r.len; i++) {
                if (r.b[r.pos] == TAG_TRUNC) break;
                if (i) emit(&o, ", ");
                if (fmt_tensor(&r, &o)) return KF_ERR_INVALID;
            }
            emit(&o, "]");
            break;
        }
        case TAG_INT: {
            int64_t v;
            if (take(&r, &v, 8)) return KF_ERR_INVALID;
            emit(&o, "%" PRId64, v);
            break;
        }
        case TAG_DOUBLE: {
            double v;
            if (take(&r, &v, 8)) return KF_ERR_INVALID;
            emit_double(&o, v);
            break;
        }
        case TAG_BOOL: {
            uint8_t v;
            if (take(&r, &v, 1)) return KF_ERR_INVALID;
            emit(&o, "%s", v ? "True" : "False");
            break;
        }
        case TAG_STR: {
            uint8_t sl;
            char sv[KF_SIG_STR_MAX + 1];
            if (take(&r, &sl, 1)) return KF_ERR_INVALID;
            if (sl == 255) {
                uint64_t h;
                if (take(&r, &h, 8)) return KF_ERR_INVALID;
                emit(&o, "'<str #%016" PRIx64 ">'", h);
                break;
            }
            if (sl > KF_SIG_STR_MAX || take(&r, sv, sl)) return KF_ERR_INVALID;
            sv[sl] = 0;
            emit(&o, "'%s'", sv);
            break;
        }
        case TAG_WRAPPED: {
            uint8_t dt;
            uint8_t v[8];
            if (take(&r, &dt, 1) || take(&r, v, 8)) return KF_ERR_INVALID;
            if (dt == KF_F64) {
                double d;
                memcpy(&d, v, 8);
                emit_double(&o, d);
            } else {
                int64_t i;
                memcpy(&i, v, 8);
                if (dt == KF_BOOL)
                    emit(&o, "%s", i ? "True" : "False");
                else
                    emit(&o, "%" PRId64, i);
            }
            /* named like a scalar, marked: it stands where the schema has a tensor */
            emit(&o, " (wrapped %s)", kf_dtype_name(dt));
            break;
        }
        case TAG_NONE:
            emit(&o, "None");
            break;
        case TAG_ILIST: {
            uint16_t cnt;
            if (take(&r, &cnt, 2)) return KF_ERR_INVALID;
            emit(&o, "[");
            for (int i = 0; i < cnt; i++) {
                int64_t v;
                if (take(&r, &v, 8)) return KF_ERR_INVALID;
                emit(&o, "%s%" PRId64, i ? "," : "", v);
            }
            emit(&o, "]");
            break;
        }
        case TAG_DEVICE: {
            uint8_t d[2];
            if (take(&r, d, 2)) return KF_ERR_INVALID;
            if (d[1] == 255) emit(&o, "%s", kf_device_type_name(d[0])); /* no index */
            else emit(&o, "%s:%d", kf_device_type_name(d[0]), d[1]);
            break;
        }
        case TAG_OPAQUE: {
            uint8_t sl;
            char sv[KF_SIG_STR_MAX + 1];
            if (take(&r, &sl, 1) || sl > KF_SIG_STR_MAX || take(&r, sv, sl)) return KF_ERR_INVALID;
            sv[sl] = 0;
            emit(&o, "<%s>", sv);
            break;
        }
        case TAG_TRUNC:
            emit(&o, "...");
            r.pos = r.len;
            break;
        default:
            return KF_ERR_INVALID;
        }
    }
    emit(&o, ")");
    return KF_OK;
}

/* ---- decoding to JSON (for tuning jobs) ---- */

static cJSON *int_array(const int64_t *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v[i]));
    return a;
}

static int args_tensor(reader *r, cJSON *o)
{
    uint8_t head[5];
    int64_t sizes[KF_MAX_DIMS], strides[KF_MAX_DIMS];
    if (take(r, head, sizeof head) || head[4] > KF_MAX_DIMS) return -1;
    int nd = head[4];
    if (take(r, sizes, 8u * nd) || take(r, strides, 8u * nd)) return -1;
    cJSON_AddStringToObject(o, "kind", "tensor");
    cJSON_AddStringToObject(o, "dtype", kf_dtype_name(head[0]));
    cJSON_AddItemToObject(o, "sizes", int_array(sizes, nd));
    cJSON_AddItemToObject(o, "strides", int_array(strides, nd));
    cJSON_AddNumberToObject(o, "align", 1 << head[3]);
    cJSON_AddStringToObject(o, "device", kf_device_type_name(head[1]));
    cJSON_AddNumberToObject(o, "device_index", head[2]);
    return 0;
}

/* One argument's item; -1 on a malformed encoding. */
static int args_item(reader *r, uint8_t tag, cJSON *o)
{
    switch (tag) {
    case TAG_TENSOR: return args_tensor(r, o);
    case TAG_TLIST: {
        uint16_t cnt;
        if (take(r, &cnt, 2)) return -1;
        cJSON_AddStringToObject(o, "kind", "tensor_list");
        /* a kernel takes the elements as tensor arguments of their own, in list order */
        cJSON *ts = cJSON_AddArrayToObject(o, "tensors");
        for (int i = 0; i < cnt && r->pos < r->len && r->b[r->pos] != TAG_TRUNC; i++) {
            cJSON *t = cJSON_CreateObject();
            cJSON_AddItemToArray(ts, t);
            if (args_tensor(r, t)) return -1;
        }
        return 0;
    }
    case TAG_INT: case TAG_DOUBLE: {
        int64_t i;
        double d;
        if (take(r, tag == TAG_INT ? (void *)&i : (void *)&d, 8)) return -1;
        cJSON_AddStringToObject(o, "kind", tag == TAG_INT ? "i" : "d");
        cJSON_AddNumberToObject(o, "value", tag == TAG_INT ? (double)i : d);
        if (tag == TAG_INT && (i > (1LL << 53) || i < -(1LL << 53))) return -1; /* not exact in JSON */
        if (tag == TAG_DOUBLE && !isfinite(d)) cJSON_AddStringToObject(o, "text", d != d ? "nan" : d > 0 ? "inf" : "-inf");
        return 0;
    }
    case TAG_BOOL: {
        uint8_t v;
        if (take(r, &v, 1)) return -1;
        cJSON_AddStringToObject(o, "kind", "b");
        cJSON_AddBoolToObject(o, "value", v);
        return 0;
    }
    case TAG_STR: {
        uint8_t sl;
        char sv[KF_SIG_STR_MAX + 1];
        if (take(r, &sl, 1)) return -1;
        if (sl == 255) {
            uint64_t h;
            if (take(r, &h, 8)) return -1;
            cJSON_AddStringToObject(o, "kind", "opaque");
            return 0;
        }
        if (sl > KF_SIG_STR_MAX || take(r, sv, sl)) return -1;
        sv[sl] = 0;
        cJSON_AddStringToObject(o, "kind", "s");
        cJSON_AddStringToObject(o, "value", sv);
        return 0;
    }
    case TAG_NONE: cJSON_AddStringToObject(o, "kind", "n"); return 0;
    case TAG_ILIST: {
        uint16_t cnt;
        if (take(r, &cnt, 2)) return -1;
        cJSON *a = cJSON_AddArrayToObject(o, "value");
        cJSON_AddStringToObject(o, "kind", "l");
        for (int i = 0; i < cnt; i++) {
            int64_t v;
            if (take(r, &v, 8)) return -1;
            cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v));
        }
        return 0;
    }
    case TAG_DEVICE: {
        uint8_t d[2];
        if (take(r, d, 2)) return -1;
        cJSON_AddStringToObject(o, "kind", "device");
        cJSON_AddStringToObject(o, "device", kf_device_type_name(d[0]));
        cJSON_AddNumberToObject(o, "device_index", d[1] == 255 ? -1 : d[1]); /* -1: none */
        return 0;
    }
    case TAG_WRAPPED: {
        /* "scalar": the job scalar's kind it becomes ('d' f64, 'i' i64, 'b' bool), with its
         * value; a non-finite float also as "text" (JSON has no inf/nan) */
        uint8_t dt;
        uint8_t v[8];
        if (take(r, &dt, 1) || take(r, v, 8)) return -1;
        cJSON_AddStringToObject(o, "kind", "wrapped");
        cJSON_AddStringToObject(o, "dtype", kf_dtype_name(dt));
        if (dt == KF_F64) {
            double d;
            memcpy(&d, v, 8);
            cJSON_AddStringToObject(o, "scalar", "d");
            cJSON_AddNumberToObject(o, "value", isfinite(d) ? d : 0.0);
            if (!isfinite(d))
                cJSON_AddStringToObject(o, "text", d != d ? "nan" : d > 0 ? "inf" : "-inf");
        } else if (dt == KF_I64 || dt == KF_BOOL) {
            int64_t i;
            memcpy(&i, v, 8);
            if (dt == KF_BOOL) {
                cJSON_AddStringToObject(o, "scalar", "b");
                cJSON_AddBoolToObject(o, "value", i != 0);
            } else {
                if (i > (1LL << 53) || i < -(1LL << 53)) return -1; /* not exact in JSON */
                cJSON_AddStringToObject(o, "scalar", "i");
                cJSON_AddNumberToObject(o, "value", (double)i);
            }
        }
        return 0;
    }
    case TAG_OPAQUE: {
        uint8_t sl;
        char sv[KF_SIG_STR_MAX + 1];
        if (take(r, &sl, 1) || sl > KF_SIG_STR_MAX || take(r, sv, sl)) return -1;
        cJSON_AddStringToObject(o, "kind", "opaque");
        return 0;
    }
    default: return -1;
    }
}

char *kf_sig_args_json(const uint8_t *buf, uint32_t len, const char *const *argnames, int n_argnames)
{
    reader r = {buf, len, 0};
    uint8_t n;
    char name[256];
    if (take(&r, &n, 1) || take(&r, name, n)) return NULL;
    name[n] = 0;
    cJSON *doc = cJSON_CreateObject(), *args = cJSON_CreateArray();
    cJSON_AddStringToObject(doc, "op", name);
    cJSON_AddItemToObject(doc, "args", args);
    int bad = 0;
    for (int arg = 0; r.pos < r.len && !bad; arg++) {
        uint8_t tag;
        if (take(&r, &tag, 1)) {
            bad = 1;
            break;
        }
        if (tag == TAG_TRUNC) {
            cJSON_AddBoolToObject(doc, "truncated", 1);
            break;
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", arg < n_argnames && argnames[arg] ? argnames[arg] : "");
        bad = args_item(&r, tag, o) != 0;
        cJSON_AddItemToArray(args, o);
    }
    char *out = bad ? NULL : cJSON_PrintUnformatted(doc);
    cJSON_Delete(doc);
    return out;
}

const char *kf_device_type_name(int type)
{
    switch (type) {
    case KF_DEV_CPU: return "cpu";
    case KF_DEV_CUDA: return "cuda";
    default: return "other";
    }
}

/* ---- items (shape families, plugin/family.c) ---- */

uint32_t kf_sig_items_begin(const uint8_t *buf, uint32_t len)
{
    return len ? 1u + buf[0] : 0;
}

/* Bytes of a tensor body at b[0..avail): 5 + 16 * ndim, or 0 when it does not fit. */
static uint32_t tensor_body_len(const uint8_t *b, uint32_t avail)
{
    if (avail < 5 || b[4] > KF_MAX_DIMS) return 0;
    uint32_t n = 5u + 16u * b[4];
    return n <= avail ? n : 0;
}

static void tensor_head(const uint8_t *b, kf_sig_item *it)
{
    it->dtype = b[0], it->device_type = b[1], it->device_index = b[2];
    it->align_log2 = b[3], it->ndim = b[4];
    memcpy(it->sizes, b + 5, 8u * (uint32_t)it->ndim);
    memcpy(it->strides, b + 5 + 8u * (uint32_t)it->ndim, 8u * (uint32_t)it->ndim);
}

int kf_sig_tensors(const uint8_t *buf, uint32_t len, int k, kf_sig_item *out)
{
    int n = 0, r;
    kf_sig_item it;
    for (uint32_t pos = kf_sig_items_begin(buf, len); (r = kf_sig_item_next(buf, len, &pos, &it)) == 1;) {
        if (it.tag == KF_SIG_ITEM_TENSOR) {
            if (n++ == k && out) *out = it;
        } else if (it.tag == KF_SIG_ITEM_TLIST) {
            uint16_t cnt;
            uint32_t p = it.start + 3;
            memcpy(&cnt, buf + it.start + 1, 2);
            for (int i = 0; i < cnt && p < it.end && buf[p] != TAG_TRUNC; i++, n++) {
                if (n == k && out) {
                    memset(out, 0, sizeof *out);
                    out->tag = KF_SIG_ITEM_TENSOR;
                    tensor_head(buf + p, out);
                }
                p += tensor_body_len(buf + p, it.end - p);
            }
        }
    }
    return r == 0 ? n : -1;
}

int kf_sig_item_next(const uint8_t *buf, uint32_t len, uint32_t *pos, kf_sig_item *it)
{
    uint32_t p = *pos;
    if (p >= len) return 0;
    memset(it, 0, sizeof *it);
    it->tag = buf[p];
    it->start = p++;
    uint32_t avail = len - p, n = 0;
    switch (it->tag) {
    case TAG_TENSOR: {
        n = tensor_body_len(buf + p, avail);
        if (!n) return -1;
        it->dtype = buf[p], it->device_type = buf[p + 1], it->device_index = buf[p + 2];
        it->align_log2 = buf[p + 3], it->ndim = buf[p + 4];
        it->sizes_at = p + 5;
        memcpy(it->sizes, buf + p + 5, 8u * (uint32_t)it->ndim);
        memcpy(it->strides, buf + p + 5 + 8u * (uint32_t)it->ndim, 8u * (uint32_t)it->ndim);
        break;
    }
    case TAG_TLIST: {
        uint16_t cnt;
        if (avail < 2) return -1;
        memcpy(&cnt, buf + p, 2);
        n = 2;
        for (int i = 0; i < cnt && p + n < len && buf[p + n] != TAG_TRUNC; i++) {
            uint32_t t = tensor_body_len(buf + p + n, len - p - n);
            if (!t) return -1;
            n += t;
        }
        break;
    }
    case TAG_INT: case TAG_DOUBLE: n = 8; break;
    case TAG_BOOL: n = 1; break;
    case TAG_NONE: case TAG_TRUNC: n = 0; break;
    case TAG_DEVICE: n = 2; break;
    case TAG_WRAPPED: n = 9; break;
    case TAG_STR: n = avail ? 1u + (buf[p] == 255 ? 8u : buf[p]) : 1; break;
    case TAG_OPAQUE: n = avail ? 1u + buf[p] : 1; break;
    case TAG_ILIST: {
        uint16_t cnt;
        if (avail < 2) return -1;
        memcpy(&cnt, buf + p, 2);
        n = 2u + 8u * cnt;
        break;
    }
    default: return -1;
    }
    if (n > avail) return -1;
    it->end = p + n;
    *pos = it->end;
    return 1;
}
