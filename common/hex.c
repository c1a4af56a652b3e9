/* Hex (hex.h). */
#include "common/hex.h"

int kf_hex_digit(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

void kf_hex_encode(const uint8_t *p, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    out[2 * n] = '\0';
}

int kf_hex_decode(const char *hex, size_t n, uint8_t *out)
{
    if (n % 2) return -1;
    for (size_t i = 0; i < n; i += 2) {
        int a = kf_hex_digit(hex[i]), b = kf_hex_digit(hex[i + 1]);
        if (a < 0 || b < 0) return -1;
        out[i / 2] = (uint8_t)(a << 4 | b);
    }
    return 0;
}
