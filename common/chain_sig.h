/* A chain's canonical bytes (docs/chains.md): its cache key input, its job's "sig_hex" and its
 * cache entry's "sig", computed from its spec (one JSON object, untrusted when read back):
 *
 *   {"version": 1, "n_head_inputs": H, "n_ext": E,
 *    "members": [{"op", "signature", "sig_hex", "inputs": [["head", i] | ["member", m, o] |
 *                                                          ["ext", e], ...]}, ...],
 *    "views": [[e, i, byte offset], ...],   (optional: external e is a view of the head's
 *                                           input i, at that offset in its storage)
 *    "deferred": true}                      (optional: served in deferred mode)
 *
 * Bytes: "KFCHAIN1", u8 n_members, then per member u32 little-endian sig_len, the member's
 * signature bytes, u8 n_inputs, then per input 3 bytes (kind 0 head / 1 member / 2 ext, a, b);
 * with views, 'V', u8 n_views, per view u8 e, u8 i, i64 little-endian byte offset; deferred, 'D'.
 * Other fields of the spec ("signature", the chain's own "sig_hex") are not part of them. */
#ifndef KF_COMMON_CHAIN_SIG_H
#define KF_COMMON_CHAIN_SIG_H

#include <stddef.h>
#include <stdint.h>

#include "kforge.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KF_CHAIN_SPEC_MAX_MEMBERS 12
#define KF_CHAIN_SPEC_MAX_INPUTS 16 /* tensor inputs of one member, and the head's */
#define KF_CHAIN_SPEC_MAX_EXT 64
#define KF_CHAIN_SPEC_MAX_OUTPUTS 8 /* outputs of one member an input may name */

enum { KF_CHAIN_IN_HEAD = 0, KF_CHAIN_IN_MEMBER = 1, KF_CHAIN_IN_EXT = 2 };

/* Validates spec_json (every field above, refs in range: "member" names an earlier member,
 * member 0 reads exactly ["head", 0..H-1], each member's op matches its signature bytes) and
 * writes its canonical bytes to *out (malloc'ed, caller frees). On KF_ERR_INVALID, err says why. */
kf_status kf_chain_sig_bytes(const char *spec_json, uint8_t **out, uint32_t *out_len, char *err,
                             size_t err_cap);
/* The same for a parsed spec (a cJSON object). */
struct cJSON;
kf_status kf_chain_sig_bytes_obj(const struct cJSON *spec, uint8_t **out, uint32_t *out_len,
                                 char *err, size_t err_cap);

#ifdef __cplusplus
}
#endif
#endif
