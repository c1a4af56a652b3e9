/* Signatures: the exact description of one intercepted call, as canonical bytes.
 *
 * torch_ext appends the call's arguments in schema order; the bytes are hashed with XXH3 for the
 * table lookup and compared in full on a hit, so two calls share a signature only if every size,
 * stride, dtype, device, alignment and scalar is the same. */
#ifndef KF_PLUGIN_SIGNATURE_H
#define KF_PLUGIN_SIGNATURE_H

#include <stddef.h>
#include <stdint.h>

#include "common/dtype.h"
#include "kforge.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KF_SIG_MAX_BYTES 2048
#define KF_SIG_MAX_TENSORS 16 /* tensors a served kernel can take */

enum {
    KF_SIG_TRUNCATED = 1u << 0,   /* did not fit: recorded, never served */
    KF_SIG_UNSERVABLE = 1u << 1,  /* an argument type we cannot pass to a kernel */
};

typedef struct kf_sig {
    uint32_t len;
    uint32_t flags;
    int n_tensors;
    int device_known;  /* device_index is settled */
    int type_fixed;    /* device_type came from kf_sig_call_device */
    int device_type, device_index; /* of the first tensor argument; CPU when none */
    uint8_t buf[KF_SIG_MAX_BYTES];
} kf_sig;

void kf_sig_begin(kf_sig *s, const char *op);
/* An op's first bytes, made once (kf_sig_head_make) so that kf_sig_begin_head starts a signature
 * with one fixed-size copy: no strlen, and no variable-length copy, which the compiler inlines as
 * `rep movs` (a third of a pass-through call's own time in the plugin on the CPU machine). */
#define KF_SIG_HEAD_MAX 64
typedef struct kf_sig_head {
    uint8_t bytes[KF_SIG_HEAD_MAX]; /* kf_sig_begin's bytes, zero-padded */
    uint32_t len;                   /* 0: the name is too long, kf_sig_begin_head calls kf_sig_begin */
    const char *op;
} kf_sig_head;
void kf_sig_head_make(kf_sig_head *h, const char *op); /* keeps `op` (it must outlive h) */
void kf_sig_begin_head(kf_sig *s, const kf_sig_head *h);
void kf_sig_tensor(kf_sig *s, const kf_tensor *t);
/* The same bytes as kf_sig_tensor, from a tensor's parts (no kf_tensor to fill first: the
 * interceptors describe a torch tensor straight from its own size and stride arrays). */
void kf_sig_tensor_parts(kf_sig *s, int dtype, int device_type, int device_index, const void *data,
                         int ndim, const int64_t *sizes, const int64_t *strides);
void kf_sig_tensor_list(kf_sig *s, const kf_tensor *ts, int n);
void kf_sig_int(kf_sig *s, int64_t v);
void kf_sig_double(kf_sig *s, double v);
void kf_sig_bool(kf_sig *s, int v);
void kf_sig_str(kf_sig *s, const char *v);
void kf_sig_none(kf_sig *s);
void kf_sig_int_list(kf_sig *s, const int64_t *v, int n);
void kf_sig_device(kf_sig *s, int type, int index);
/* A Python number that torch wrapped into a 0-dim tensor (`x + 1e-6`): its dtype (KF_F64, KF_I64
 * or KF_BOOL) and value (bit pattern) both change the result, so both are part of the signature.
 * Servable: a kernel never takes it as a tensor, its value is compiled in (a job's scalar under
 * the argument's name, forge/job/sig.h), and the call's device comes from the real tensors.
 * Printed as `other=1e-06 (wrapped f64)`. Any other dtype makes the signature unservable. */
void kf_sig_wrapped(kf_sig *s, int dtype, double fvalue, int64_t ivalue);
/* An argument type the signature cannot describe exactly (generator, complex scalar, ...): the
 * signature stays usable for recording, but is never served. */
void kf_sig_opaque(kf_sig *s, const char *type_name);
/* The call's device type, from the dispatch key that received it (torch_ext knows it): a CPU
 * scalar tensor among CUDA tensors must not make a CUDA call look like a CPU one. Without it,
 * the first tensor argument decides. */
void kf_sig_call_device(kf_sig *s, int type);
/* A tensor argument's device (also for tensors described only opaquely): the first one of the
 * call's device type gives the call's device index. */
void kf_sig_device_hint(kf_sig *s, int type, int index);

uint64_t kf_sig_hash(const uint8_t *buf, uint32_t len);

/* Device of the first tensor in an encoding (CPU/0 when it has none); KF_ERR_INVALID when the
 * encoding is malformed. Used for signatures read back from the cache. */
kf_status kf_sig_device_of(const uint8_t *buf, uint32_t len, int *type, int *index);

/* Why a signature with KF_SIG_TRUNCATED or KF_SIG_UNSERVABLE is never served, in words that name
 * the argument: "argument 'other' is a Python number (...)". (dev_type, dev_index) is the call's
 * device (kf_sig's). Writes "" and returns 0 when the encoding shows no reason (a servable one);
 * -1 on a malformed encoding. */
int kf_sig_unservable_reason(const uint8_t *buf, uint32_t len, int dev_type, int dev_index,
                             const char *const *argnames, int n_argnames, char *out, size_t cap);

/* Op name stored at the head of an encoding ("aten::add.Tensor"); returns its length. */
size_t kf_sig_op_name(const uint8_t *buf, uint32_t len, char *out, size_t cap);

/* Human-readable form: `_softmax(bf16[8,16] s=(1,8), dim=-1, half_to_float=False)`. Tensor
 * arguments are printed bare, other arguments as name=value when `argnames` has a name for that
 * position. Returns KF_ERR_INVALID on a malformed encoding (which would be a bug). */
kf_status kf_sig_format(const uint8_t *buf, uint32_t len, const char *const *argnames,
                        int n_argnames, char *out, size_t cap);

/* The arguments as JSON (kf_signature_args_json in kforge.h); NULL on a malformed encoding. */
char *kf_sig_args_json(const uint8_t *buf, uint32_t len, const char *const *argnames, int n_argnames);

const char *kf_device_type_name(int type);

/* Walking an encoding item by item (shape families compare a call with a family's signature).
 * An item is one argument: its tag, bytes [start, end) (tag included) and, for a tensor
 * (KF_SIG_ITEM_TENSOR), its head and dims, the sizes at byte sizes_at. A tensor list
 * (KF_SIG_ITEM_TLIST) and every other argument are bytes only. kf_sig_format prints a negative
 * size as "*" (a family's free dim). */
#define KF_SIG_ITEM_TENSOR 'T'
#define KF_SIG_ITEM_TLIST 'L'
typedef struct kf_sig_item {
    uint8_t tag;
    uint32_t start, end, sizes_at;
    int dtype, device_type, device_index, align_log2, ndim;
    int64_t sizes[KF_MAX_DIMS], strides[KF_MAX_DIMS];
} kf_sig_item;
/* The position of the first item (after the op name). */
uint32_t kf_sig_items_begin(const uint8_t *buf, uint32_t len);
/* The item at *pos, advancing *pos: 1, 0 at the end, -1 on a malformed encoding. */
int kf_sig_item_next(const uint8_t *buf, uint32_t len, uint32_t *pos, kf_sig_item *it);
/* The tensors of an encoding as a kernel takes them (a tensor list's elements in its place):
 * their count (-1: malformed), and tensor k's head and dims in *out when out is not NULL and
 * k is in range (k < 0: count only). */
int kf_sig_tensors(const uint8_t *buf, uint32_t len, int k, kf_sig_item *out);

#ifdef __cplusplus
}
#endif
#endif
