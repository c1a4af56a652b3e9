/* Lowercase hex, as signatures and cache keys are written in files. */
#ifndef KF_COMMON_HEX_H
#define KF_COMMON_HEX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 0..15 for a lowercase hex digit, else -1 */
int kf_hex_digit(char c);
void kf_hex_encode(const uint8_t *p, size_t n, char *out); /* out: 2n + 1 */
/* Lowercase hex only; n = number of hex digits (even). 0 on success. */
int kf_hex_decode(const char *hex, size_t n, uint8_t *out);

#ifdef __cplusplus
}
#endif
#endif
