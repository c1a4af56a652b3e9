/* The canonical chain bytes (common/chain_sig.h): their exact layout, and specs refused as
 * untrusted input (bad refs, op not matching the signature, wrong head inputs). */
#include <cjson/cJSON.h>
#include <stdlib.h>

#include "check.h"
#include "common/chain_sig.h"
#include "common/hex.h"
#include "common/signature.h"

/* Hex of a signature `op(f32[4] x n_tensors)`. */
static char *sig_hex(const char *op, int n_tensors, uint32_t *len)
{
    kf_sig s;
    kf_sig_begin(&s, op);
    kf_tensor t = {.dtype = KF_F32, .ndim = 1, .sizes = {4}, .strides = {1}};
    for (int i = 0; i < n_tensors; i++) kf_sig_tensor(&s, &t);
    char *hex = malloc(2 * (size_t)s.len + 1);
    kf_hex_encode(s.buf, s.len, hex);
    *len = s.len;
    return hex;
}

/* {"version":1,... } for mul(head0, head1) -> add(member0.0, ext0), with `second` as the second
 * member's inputs and `op1` as its op name. */
static char *spec_text(const char *op1, const char *second, int n_ext, uint32_t *l0, uint32_t *l1)
{
    char *h0 = sig_hex("aten::mul.Tensor", 2, l0), *h1 = sig_hex("aten::add.Tensor", 2, l1);
    size_t cap = strlen(h0) + strlen(h1) + 512;
    char *text = malloc(cap);
    snprintf(text, cap,
             "{\"version\":1,\"n_head_inputs\":2,\"n_ext\":%d,\"members\":["
             "{\"op\":\"aten::mul.Tensor\",\"signature\":\"mul(..)\",\"sig_hex\":\"%s\","
             "\"inputs\":[[\"head\",0],[\"head\",1]]},"
             "{\"op\":\"%s\",\"sig_hex\":\"%s\",\"inputs\":%s}]}",
             n_ext, h0, op1, h1, second);
    free(h0);
    free(h1);
    return text;
}

static void test_bytes(void)
{
    uint32_t l0, l1;
    char *text = spec_text("aten::add.Tensor", "[[\"member\",0,0],[\"ext\",0]]", 1, &l0, &l1);
    uint8_t *b = NULL;
    uint32_t n = 0;
    char err[256];
    CHECK_EQ_INT(kf_chain_sig_bytes(text, &b, &n, err, sizeof err), KF_OK);
    CHECK_EQ_INT(n, 8 + 1 + (4 + l0 + 1 + 6) + (4 + l1 + 1 + 6));
    if (b && n > 9) {
        CHECK(!memcmp(b, "KFCHAIN1", 8));
        CHECK_EQ_INT(b[8], 2);
        CHECK_EQ_INT(b[9] | b[10] << 8 | b[11] << 16 | b[12] << 24, l0); /* little endian */
        const uint8_t *m0 = b + 13 + l0;
        CHECK_EQ_INT(m0[0], 2);
        CHECK(!memcmp(m0 + 1, (uint8_t[]){0, 0, 0, 0, 1, 0}, 6));
        const uint8_t *m1 = m0 + 7 + 4 + l1;
        CHECK_EQ_INT(m1[0], 2);
        CHECK(!memcmp(m1 + 1, (uint8_t[]){1, 0, 0, 2, 0, 0}, 6));
    }
    /* the same spec parsed, with a chain sig_hex and other fields: the same bytes */
    cJSON *spec = cJSON_Parse(text);
    cJSON_AddStringToObject(spec, "sig_hex", "00");
    uint8_t *b2 = NULL;
    uint32_t n2 = 0;
    CHECK_EQ_INT(kf_chain_sig_bytes_obj(spec, &b2, &n2, err, sizeof err), KF_OK);
    CHECK(n2 == n && b && b2 && !memcmp(b, b2, n));
    cJSON_Delete(spec);
    free(b2);
    free(b);
    free(text);
}

static void refused(const char *op1, const char *second, int n_ext, const char *want)
{
    uint32_t l0, l1;
    char *text = spec_text(op1, second, n_ext, &l0, &l1);
    uint8_t *b = (uint8_t *)1;
    uint32_t n = 1;
    char err[256] = "";
    CHECK_EQ_INT(kf_chain_sig_bytes(text, &b, &n, err, sizeof err), KF_ERR_INVALID);
    CHECK(b == NULL && n == 0);
    if (!CHECK(strstr(err, want) != NULL)) printf("  err: %s\n", err);
    free(text);
}

static void test_refused(void)
{
    refused("aten::add.Tensor", "[[\"member\",1,0],[\"ext\",0]]", 1, "an input is not"); /* itself */
    refused("aten::add.Tensor", "[[\"member\",0,0],[\"ext\",1]]", 1, "an input is not"); /* e >= E */
    refused("aten::add.Tensor", "[[\"head\",2],[\"ext\",0]]", 1, "an input is not");
    refused("aten::add.Tensor", "[[\"member\",0,0.5],[\"ext\",0]]", 1, "an input is not");
    refused("aten::add.Tensor", "[[\"weird\",0],[\"ext\",0]]", 1, "an input is not");
    refused("aten::add.Tensor", "[\"member\",0,0]", 1, "an input is not");
    refused("aten::sub.Tensor", "[[\"member\",0,0],[\"ext\",0]]", 1, "differs from its signature");
    refused("aten::add.Tensor", "[[\"member\",0,0],[\"ext\",0]]", 65, "out of range");
    const char *bad[] = {
        "not json",
        "[]",
        "{\"version\":2,\"n_head_inputs\":0,\"n_ext\":0,\"members\":[]}",
        "{\"version\":1,\"n_head_inputs\":0,\"n_ext\":0,\"members\":[{}]}",
        "{\"version\":1,\"n_head_inputs\":1,\"n_ext\":0,\"members\":[{\"op\":\"a\",\"sig_hex\":\"0\","
        "\"inputs\":[]},{\"op\":\"a\",\"sig_hex\":\"0\",\"inputs\":[]}]}",
        "{\"version\":1,\"n_head_inputs\":0,\"n_ext\":0,\"members\":[{\"op\":\"a\",\"sig_hex\":\"0161\","
        "\"inputs\":[]},{\"op\":\"a\",\"sig_hex\":\"0161\",\"inputs\":[]}]}", /* valid: control */
        "{\"version\":1,\"n_head_inputs\":1,\"n_ext\":0,\"members\":[{\"op\":\"a\",\"sig_hex\":\"0161\","
        "\"inputs\":[[\"ext\",0]]},{\"op\":\"a\",\"sig_hex\":\"0161\",\"inputs\":[]}]}",
        "{\"version\":1,\"n_head_inputs\":0,\"n_ext\":0,\"members\":[{\"op\":\"a\",\"sig_hex\":\"0161\","
        "\"inputs\":[]},{\"op\":\"a\",\"sig_hex\":\"01GG\",\"inputs\":[]}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint8_t *b = NULL;
        uint32_t n = 0;
        char err[256] = "";
        kf_status st = kf_chain_sig_bytes(bad[i], &b, &n, err, sizeof err);
        if (i == 5) {
            CHECK_EQ_INT(st, KF_OK);
        } else if (!CHECK_EQ_INT(st, KF_ERR_INVALID) || !CHECK(err[0])) {
            printf("  spec %zu\n", i);
        }
        free(b);
    }
}

/* "views" (external e is a view of head input i at a byte offset): appended after the members
 * as 'V', their count, then e, i and the offset (i64 little endian); malformed ones refused. */
static void test_views(void)
{
    uint32_t l0, l1;
    char *text = spec_text("aten::add.Tensor", "[[\"member\",0,0],[\"ext\",0]]", 1, &l0, &l1);
    cJSON *spec = cJSON_Parse(text);
    uint8_t *plain = NULL, *b = NULL;
    uint32_t np = 0, n = 0;
    char err[256] = "";
    CHECK_EQ_INT(kf_chain_sig_bytes_obj(spec, &plain, &np, err, sizeof err), KF_OK);
    cJSON_AddItemToObject(spec, "views", cJSON_Parse("[[0, 1, -128]]"));
    CHECK_EQ_INT(kf_chain_sig_bytes_obj(spec, &b, &n, err, sizeof err), KF_OK);
    if (CHECK_EQ_INT(n, np + 12) && b && plain) {
        CHECK(!memcmp(b, plain, np));
        const uint8_t want[12] = {'V', 1, 0, 1, 0x80, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
        CHECK(!memcmp(b + np, want, sizeof want));
    }
    free(b);
    const char *bad[] = {"[]", "[[1, 0, 0]]", "[[0, 2, 0]]", "[[0, 0, 0.5]]", "[[0, 0]]",
                         "[[0, 0, 0], [0, 1, 0]]", "{}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cJSON_ReplaceItemInObject(spec, "views", cJSON_Parse(bad[i]));
        b = NULL;
        err[0] = 0;
        if (!CHECK_EQ_INT(kf_chain_sig_bytes_obj(spec, &b, &n, err, sizeof err), KF_ERR_INVALID) ||
            !CHECK(b == NULL && strstr(err, "view")))
            printf("  views %s: %s\n", bad[i], err);
        free(b);
    }
    cJSON_Delete(spec);
    free(plain);
    free(text);
}

int main(void)
{
    test_bytes();
    test_refused();
    test_views();
    return check_done("chain_sig");
}
