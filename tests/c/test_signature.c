/* Signatures: canonical encoding, hashing, formatting, truncation, robustness of the decoder. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/c/check.h"
#include "common/signature.h"

/* ---- helpers ---- */

static kf_tensor tensor(int dtype, int ndim, const int64_t *sizes, uintptr_t data, int dev_type,
                        int dev_index)
{
    kf_tensor t;
    memset(&t, 0, sizeof t);
    t.data = (void *)data;
    t.dtype = dtype;
    t.ndim = ndim;
    t.device_type = dev_type;
    t.device_index = dev_index;
    int64_t stride = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        t.sizes[i] = sizes[i];
        t.strides[i] = stride;
        stride *= sizes[i];
    }
    return t;
}

static int same_sig(const kf_sig *a, const kf_sig *b)
{
    return a->len == b->len && memcmp(a->buf, b->buf, a->len) == 0;
}

static uint64_t sig_hash(const kf_sig *s) { return kf_sig_hash(s->buf, s->len); }

static kf_status fmt(const kf_sig *s, const char *const *names, int n, char *out, size_t cap)
{
    return kf_sig_format(s->buf, s->len, names, n, out, cap);
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* ---- canonical encoding ---- */

/* Every field of a call that must be part of the signature. */
typedef struct variant {
    const char *op;
    int dtype, dev_type, dev_index;
    uintptr_t data;
    int64_t sizes[3], strides[3];
    int64_t ival;
    double dval;
    int bval;
    const char *sval;
    int opt_is_int; /* the optional argument: None, or the int `opt` */
    int64_t opt;
    int64_t ilist[3];
    int n_ilist;
    int n_tlist;
    int w_dtype; /* wrapped scalar */
    double w_f;
    int64_t w_i;
} variant;

static variant base_variant(void)
{
    variant v = {
        .op = "aten::foo.bar",
        .dtype = KF_F32, .dev_type = KF_DEV_CPU, .dev_index = 0,
        .data = 0x1000,
        .sizes = {2, 3, 4}, .strides = {12, 4, 1},
        .ival = 7, .dval = 0.0, .bval = 0, .sval = "mean",
        .opt_is_int = 0, .opt = 0,
        .ilist = {1, 2, 3}, .n_ilist = 3,
        .n_tlist = 2,
        .w_dtype = KF_F64, .w_f = 2.0, .w_i = 0,
    };
    return v;
}

static void build(kf_sig *s, const variant *v)
{
    kf_tensor t;
    memset(&t, 0, sizeof t);
    t.data = (void *)v->data;
    t.dtype = v->dtype;
    t.ndim = 3;
    t.device_type = v->dev_type;
    t.device_index = v->dev_index;
    memcpy(t.sizes, v->sizes, sizeof v->sizes);
    memcpy(t.strides, v->strides, sizeof v->strides);
    kf_tensor list[4];
    for (int i = 0; i < 4; i++) list[i] = t;

    kf_sig_begin(s, v->op);
    kf_sig_tensor(s, &t);
    kf_sig_int(s, v->ival);
    kf_sig_double(s, v->dval);
    kf_sig_bool(s, v->bval);
    kf_sig_str(s, v->sval);
    if (v->opt_is_int)
        kf_sig_int(s, v->opt);
    else
        kf_sig_none(s);
    kf_sig_int_list(s, v->ilist, v->n_ilist);
    kf_sig_tensor_list(s, list, v->n_tlist);
    kf_sig_wrapped(s, v->w_dtype, v->w_f, v->w_i);
}

static kf_sig g_a, g_b; /* 2 KiB each: keep them off the stack */

static void expect_differs(const variant *v, const char *what)
{
    variant base = base_variant();
    build(&g_a, &base);
    build(&g_b, v);
    int ok = CHECK(!same_sig(&g_a, &g_b));
    ok &= CHECK(sig_hash(&g_a) != sig_hash(&g_b));
    if (!ok) printf("     (changed field: %s)\n", what);
}

static void expect_same(const variant *v, const char *what)
{
    variant base = base_variant();
    build(&g_a, &base);
    build(&g_b, v);
    int ok = CHECK(same_sig(&g_a, &g_b));
    ok &= CHECK_EQ_U64(sig_hash(&g_a), sig_hash(&g_b));
    if (!ok) printf("     (changed field: %s)\n", what);
}

static void test_canonical(void)
{
    variant v = base_variant();
    /* Same arguments: byte-identical, whatever was in the buffers before. */
    memset(&g_a, 0xAB, sizeof g_a);
    memset(&g_b, 0x00, sizeof g_b);
    build(&g_a, &v);
    build(&g_b, &v);
    CHECK(same_sig(&g_a, &g_b));
    CHECK_EQ_U64(sig_hash(&g_a), sig_hash(&g_b));
    CHECK_EQ_INT(g_a.flags, 0); /* a wrapped number is servable (test_servable.c) */
    CHECK_EQ_INT(g_a.flags, g_b.flags);
    CHECK_EQ_INT(g_a.n_tensors, 1 + 2);
    CHECK_EQ_INT(g_a.device_type, KF_DEV_CPU);
    CHECK_EQ_INT(g_a.device_index, 0);
    CHECK(g_a.len > 0 && g_a.len <= KF_SIG_MAX_BYTES);
    CHECK(sig_hash(&g_a) != 0);

#define DIFF(field_edit)                  \
    do {                                  \
        variant w = base_variant();       \
        field_edit;                       \
        expect_differs(&w, #field_edit);  \
    } while (0)
    DIFF(w.sizes[1] = 5);
    DIFF((w.sizes[0] = 3, w.strides[0] = 12)); /* size alone */
    DIFF(w.strides[0] = 24);
    DIFF(w.strides[2] = 2);
    DIFF(w.dtype = KF_F16);
    DIFF(w.dtype = KF_BF16);
    DIFF(w.dev_type = KF_DEV_CUDA);
    DIFF(w.dev_index = 1);
    DIFF(w.data = 0x1004);  /* 4-byte aligned f32 vs 16-byte aligned */
    DIFF(w.data = 0x1008);
    DIFF(w.data = 0x1002);
    DIFF(w.ival = 8);
    DIFF(w.ival = -7);
    DIFF(w.dval = -0.0);    /* 0.0 vs -0.0 */
    DIFF(w.dval = 1e-300);
    DIFF(w.bval = 1);
    DIFF(w.sval = "sum");
    DIFF(w.sval = "mea");
    DIFF(w.sval = "");
    DIFF((w.opt_is_int = 1, w.opt = 0)); /* None vs 0 */
    DIFF(w.ilist[2] = 4);
    DIFF(w.n_ilist = 2);
    DIFF(w.n_ilist = 0);
    DIFF(w.n_tlist = 3);
    DIFF(w.n_tlist = 1);
    DIFF(w.n_tlist = 0);
    DIFF(w.op = "aten::foo.baz");
    DIFF(w.op = "aten::foo");
    DIFF(w.w_f = 2.5);
    DIFF((w.w_dtype = KF_I64, w.w_i = 2)); /* 2.0 vs 2 */
    DIFF((w.w_dtype = KF_BOOL, w.w_i = 1));
    DIFF((w.w_f = 1e-6)); /* exact values: 1e-6 and 2e-6 are two signatures */
    {
        variant a = base_variant(), b = base_variant();
        a.w_f = 1e-6;
        b.w_f = 2e-6;
        build(&g_a, &a);
        build(&g_b, &b);
        CHECK(!same_sig(&g_a, &g_b));
        CHECK(sig_hash(&g_a) != sig_hash(&g_b));
        b.w_f = -0.0; /* the bit pattern: -0.0 is not 0.0 */
        a.w_f = 0.0;
        build(&g_a, &a);
        build(&g_b, &b);
        CHECK(!same_sig(&g_a, &g_b));
    }
#undef DIFF

    /* Only the alignment of the data pointer is part of the signature, not the address. */
    variant w = base_variant();
    w.data = 0x2000;
    expect_same(&w, "data 0x1000 -> 0x2000 (both 16-aligned)");
    w.data = 0x1010;
    expect_same(&w, "data 0x1000 -> 0x1010 (both 16-aligned)");
    w = base_variant();
    w.data = 0x1040; /* 64-aligned still counts as 16 */
    expect_same(&w, "data 0x1000 -> 0x1040");

    /* A device of its own kind (kf_sig_device) is part of the signature too. */
    kf_sig_begin(&g_a, "aten::to.device");
    kf_sig_device(&g_a, KF_DEV_CUDA, 0);
    kf_sig_begin(&g_b, "aten::to.device");
    kf_sig_device(&g_b, KF_DEV_CUDA, 1);
    CHECK(!same_sig(&g_a, &g_b));
    CHECK(sig_hash(&g_a) != sig_hash(&g_b));

    /* Item boundaries are unambiguous: int then bool differs from bool then int. */
    kf_sig_begin(&g_a, "aten::x");
    kf_sig_int(&g_a, 1);
    kf_sig_bool(&g_a, 1);
    kf_sig_begin(&g_b, "aten::x");
    kf_sig_bool(&g_b, 1);
    kf_sig_int(&g_b, 1);
    CHECK(!same_sig(&g_a, &g_b));

    /* A tensor vs a one-element tensor list of the same tensor. */
    int64_t sz[2] = {4, 8};
    kf_tensor t = tensor(KF_F32, 2, sz, 0x1000, KF_DEV_CPU, 0);
    kf_sig_begin(&g_a, "aten::x");
    kf_sig_tensor(&g_a, &t);
    kf_sig_begin(&g_b, "aten::x");
    kf_sig_tensor_list(&g_b, &t, 1);
    CHECK(!same_sig(&g_a, &g_b));
}

static void test_device_fields(void)
{
    int64_t sz[1] = {4};
    kf_tensor cpu = tensor(KF_F32, 1, sz, 0x1000, KF_DEV_CPU, 0);
    kf_tensor cuda = tensor(KF_F32, 1, sz, 0x1000, KF_DEV_CUDA, 3);
    kf_sig_begin(&g_a, "aten::add.Tensor");
    kf_sig_tensor(&g_a, &cuda);
    kf_sig_tensor(&g_a, &cpu);
    CHECK_EQ_INT(g_a.device_type, KF_DEV_CUDA); /* the first tensor argument's */
    CHECK_EQ_INT(g_a.device_index, 3);
    CHECK_EQ_INT(g_a.n_tensors, 2);

    /* the first tensor may come inside a list */
    kf_sig_begin(&g_a, "aten::cat");
    kf_sig_tensor_list(&g_a, &cuda, 1);
    kf_sig_int(&g_a, 0);
    CHECK_EQ_INT(g_a.device_type, KF_DEV_CUDA);
    CHECK_EQ_INT(g_a.device_index, 3);

    /* signature.h: "of the first tensor argument; CPU when none" */
    kf_sig_begin(&g_a, "aten::scalar_only");
    kf_sig_int(&g_a, 1);
    CHECK_EQ_INT(g_a.n_tensors, 0);
    CHECK_EQ_INT(g_a.device_type, KF_DEV_CPU);
    CHECK_EQ_INT(g_a.device_index, 0);
}

/* ---- formatting ---- */

static void test_format(void)
{
    char out[512];
    int64_t sz[2] = {4, 8};

    /* the example of the brief / signature.h */
    static const char *const softmax_names[] = {"self", "dim", "half_to_float"};
    kf_tensor t = tensor(KF_F32, 2, sz, 0x1000, KF_DEV_CPU, 0);
    kf_sig_begin(&g_a, "aten::_softmax");
    kf_sig_tensor(&g_a, &t);
    kf_sig_int(&g_a, -1);
    kf_sig_bool(&g_a, 0);
    CHECK_EQ_INT(fmt(&g_a, softmax_names, 3, out, sizeof out), KF_OK);
    CHECK_STR(out, "_softmax(f32[4,8], dim=-1, half_to_float=False)");
    /* without argument names: bare values */
    CHECK_EQ_INT(fmt(&g_a, NULL, 0, out, sizeof out), KF_OK);
    CHECK_STR(out, "_softmax(f32[4,8], -1, False)");
    /* fewer names than arguments; empty and NULL names are skipped */
    static const char *const partial[] = {"self", ""};
    CHECK_EQ_INT(fmt(&g_a, partial, 2, out, sizeof out), KF_OK);
    CHECK_STR(out, "_softmax(f32[4,8], -1, False)");
    static const char *const with_null[] = {"self", NULL, "half_to_float"};
    CHECK_EQ_INT(fmt(&g_a, with_null, 3, out, sizeof out), KF_OK);
    CHECK_STR(out, "_softmax(f32[4,8], -1, half_to_float=False)");

    /* the bf16 example of signature.h */
    int64_t sz2[2] = {8, 16};
    kf_tensor tb = tensor(KF_BF16, 2, sz2, 0x1000, KF_DEV_CUDA, 0);
    tb.strides[0] = 1;
    tb.strides[1] = 8;
    kf_sig_begin(&g_a, "aten::_softmax");
    kf_sig_tensor(&g_a, &tb);
    kf_sig_int(&g_a, -1);
    kf_sig_bool(&g_a, 0);
    CHECK_EQ_INT(fmt(&g_a, softmax_names, 3, out, sizeof out), KF_OK);
    CHECK_STR(out, "_softmax(bf16[8,16] s=(1,8), dim=-1, half_to_float=False)");

    /* transposed [4,4]: strides print */
    int64_t sq[2] = {4, 4};
    kf_tensor tt = tensor(KF_F32, 2, sq, 0x1000, KF_DEV_CPU, 0);
    tt.strides[0] = 1;
    tt.strides[1] = 4;
    kf_sig_begin(&g_a, "aten::relu");
    kf_sig_tensor(&g_a, &tt);
    CHECK_EQ_INT(fmt(&g_a, NULL, 0, out, sizeof out), KF_OK);
    CHECK_STR(out, "relu(f32[4,4] s=(1,4))");

    /* size-1 dims do not break contiguity whatever their stride */
    int64_t s41[2] = {4, 1};
    kf_tensor t41 = tensor(KF_F16, 2, s41, 0x1000, KF_DEV_CPU, 0);
    t41.strides[1] = 99;
    kf_sig_begin(&g_a, "aten::relu");
    kf_sig_tensor(&g_a, &t41);
    CHECK_EQ_INT(fmt(&g_a, NULL, 0, out, sizeof out), KF_OK);
    CHECK_STR(out, "relu(f16[4,1])");

    /* 0-dim tensor, and misaligned data pointers */
    kf_tensor t0 = tensor(KF_F64, 0, NULL, 0x1000, KF_DEV_CPU, 0);
    kf_tensor ta4 = tensor(KF_F32, 2, sz, 0x1004, KF_DEV_CPU, 0);
    kf_tensor ta2 = tensor(KF_F16, 2, sz, 0x1002, KF_DEV_CPU, 0);
    kf_tensor ta1 = tensor(KF_U8, 2, sz, 0x1001, KF_DEV_CPU, 0);
    kf_tensor ta8 = tensor(KF_I64, 2, sz, 0x1008, KF_DEV_CPU, 0);
    kf_tensor tnull = tensor(KF_BOOL, 2, sz, 0, KF_DEV_CPU, 0);
    kf_sig_begin(&g_a, "aten::foo");
    kf_sig_tensor(&g_a, &t0);
    kf_sig_tensor(&g_a, &ta4);
    kf_sig_tensor(&g_a, &ta2);
    kf_sig_tensor(&g_a, &ta1);
    kf_sig_tensor(&g_a, &ta8);
    kf_sig_tensor(&g_a, &tnull);
    CHECK_EQ_INT(fmt(&g_a, NULL, 0, out, sizeof out), KF_OK);
    CHECK_STR(out, "foo(f64[], f32[4,8] align=4, f16[4,8] align=2, u8[4,8] align=1, "
                   "i64[4,8] align=8, bool[4,8])");

    /* doubles: shortest round-trip text, always with '.' or an exponent */
    kf_sig_begin(&g_a, "aten::foo");
    kf_sig_double(&g_a, 2.0);
    kf_sig_double(&g_a, 1e-05);
    kf_sig_double(&g_a, 0.1);
    kf_sig_double(&g_a, -0.0);
    kf_sig_double(&g_a, 0.0);
    kf_sig_double(&g_a, 100000.0);
    kf_sig_double(&g_a, 1e6);
    kf_sig_double(&g_a, 1.0 / 3.0);
    kf_sig_double(&g_a, -1.5);
    CHECK_EQ_INT(fmt(&g_a, NULL, 0, out, sizeof out), KF_OK);
    CHECK_STR(out, "foo(2.0, 1e-05, 0.1, -0.0, 0.0, 100000.0, 1e+06, 0.3333333333333333, -1.5)");

    /* every other item kind */
    int64_t il[3] = {1, -2, 3};
    int64_t s2[1] = {2}, s3[1] = {3};
    kf_tensor lst[2] = {tensor(KF_F32, 1, s2, 0x1000, KF_DEV_CPU, 0),
                        tensor(KF_F32, 1, s3, 0x1000, KF_DEV_CPU, 0)};
    static const char *const names[] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"};
    kf_sig_begin(&g_a, "myns::op"); /* the namespace is dropped, whatever it is */
    kf_sig_str(&g_a, "mean");        /* a */
    kf_sig_none(&g_a);               /* b */
    kf_sig_int_list(&g_a, il, 3);    /* c */
    kf_sig_int_list(&g_a, il, 0);    /* d */
    kf_sig_bool(&g_a, 1);            /* e */
    kf_sig_device(&g_a, KF_DEV_CUDA, 1); /* f */
    kf_sig_tensor_list(&g_a, lst, 2);    /* g: lists are printed bare */
    kf_sig_tensor_list(&g_a, lst, 0);    /* h */
    kf_sig_opaque(&g_a, "Generator");    /* i */
    kf_sig_int(&g_a, INT64_MIN);         /* j */
    kf_sig_str(&g_a, "");                /* k */
    CHECK_EQ_INT(fmt(&g_a, names, 11, out, sizeof out), KF_OK);
    CHECK_STR(out, "op(a='mean', b=None, c=[1,-2,3], d=[], e=True, f=cuda:1, [f32[2], f32[3]], "
                   "[], i=<Generator>, j=-9223372036854775808, k='')");

    /* an op name without a namespace prints whole */
    kf_sig_begin(&g_a, "plain");
    CHECK_EQ_INT(fmt(&g_a, NULL, 0, out, sizeof out), KF_OK);
    CHECK_STR(out, "plain()");

    /* wrapped numbers print their value by name, marked as wrapped with their dtype */
    static const char *const add_names[] = {"self", "other", "alpha"};
    kf_tensor t4 = tensor(KF_F32, 1, sz, 0x1000, KF_DEV_CPU, 0);
    kf_sig_begin(&g_a, "aten::add.Tensor");
    kf_sig_tensor(&g_a, &t4);
    kf_sig_wrapped(&g_a, KF_F64, 2.5, 0);
    kf_sig_int(&g_a, 1);
    CHECK_EQ_INT(fmt(&g_a, add_names, 3, out, sizeof out), KF_OK);
    CHECK_STR(out, "add.Tensor(f32[4], other=2.5 (wrapped f64), alpha=1)"); /* overload stays */
    CHECK_EQ_INT(g_a.flags, 0); /* servable */
    CHECK_EQ_INT(g_a.n_tensors, 1); /* the number is no kernel argument */
    kf_sig_begin(&g_a, "aten::mul.Tensor");
    kf_sig_wrapped(&g_a, KF_F64, 2.0, 0);
    kf_sig_wrapped(&g_a, KF_I64, 0.0, -3);
    kf_sig_wrapped(&g_a, KF_BOOL, 0.0, 1);
    kf_sig_wrapped(&g_a, KF_BOOL, 0.0, 0);
    kf_sig_wrapped(&g_a, KF_F64, 1e-05, 0);
    CHECK_EQ_INT(fmt(&g_a, NULL, 0, out, sizeof out), KF_OK);
    CHECK_STR(out, "mul.Tensor(2.0 (wrapped f64), -3 (wrapped i64), True (wrapped bool), "
                   "False (wrapped bool), 1e-05 (wrapped f64))");
    kf_sig_begin(&g_a, "aten::mul.Tensor"); /* a wrapped number of another dtype: never served */
    kf_sig_wrapped(&g_a, KF_C128, 0.0, 0);
    CHECK_EQ_INT(g_a.flags, KF_SIG_UNSERVABLE);

    /* a long string is stored as a hash (exact, but unservable) and printed as such */
    const char *longs = "a string that is much longer than forty-eight characters, surely";
    kf_sig_begin(&g_a, "aten::foo");
    kf_sig_str(&g_a, longs);
    CHECK(g_a.flags & KF_SIG_UNSERVABLE);
    CHECK(!(g_a.flags & KF_SIG_TRUNCATED));
    CHECK_EQ_INT(fmt(&g_a, NULL, 0, out, sizeof out), KF_OK);
    CHECK(strncmp(out, "foo('<str #", 11) == 0 && ends_with(out, ">')") && strlen(out) == 11 + 16 + 3);
    kf_sig_begin(&g_b, "aten::foo");
    kf_sig_str(&g_b, "a string that is much longer than forty-eight characters, surelY");
    CHECK(!same_sig(&g_a, &g_b)); /* the hash keeps it exact */
    /* a 48-character string is stored as is */
    const char *s48 = "012345678901234567890123456789012345678901234567";
    kf_sig_begin(&g_a, "aten::foo");
    kf_sig_str(&g_a, s48);
    CHECK_EQ_INT(g_a.flags, 0);
    CHECK_EQ_INT(fmt(&g_a, NULL, 0, out, sizeof out), KF_OK);
    CHECK_STR(out, "foo('012345678901234567890123456789012345678901234567')");

    /* small output buffers: truncated, always terminated, a prefix of the full text */
    kf_sig_begin(&g_a, "aten::_softmax");
    kf_sig_tensor(&g_a, &t);
    kf_sig_int(&g_a, -1);
    kf_sig_bool(&g_a, 0);
    const char *full = "_softmax(f32[4,8], dim=-1, half_to_float=False)";
    for (size_t cap = 1; cap <= strlen(full) + 2; cap++) {
        char *small = malloc(cap); /* exact size, so ASan sees any overrun */
        kf_status st = fmt(&g_a, softmax_names, 3, small, cap);
        size_t want = strlen(full) < cap - 1 ? strlen(full) : cap - 1;
        if (!CHECK(st == KF_OK && strlen(small) == want && strncmp(small, full, want) == 0))
            printf("     cap %zu: \"%s\"\n", cap, small);
        free(small);
    }
    CHECK_EQ_INT(fmt(&g_a, softmax_names, 3, out, 0), KF_ERR_INVALID);
}

static void test_op_name(void)
{
    char name[64];
    kf_sig_begin(&g_a, "aten::_softmax");
    int64_t sz[1] = {3};
    kf_tensor t = tensor(KF_F32, 1, sz, 0x1000, KF_DEV_CPU, 0);
    kf_sig_tensor(&g_a, &t);
    CHECK_EQ_INT(kf_sig_op_name(g_a.buf, g_a.len, name, sizeof name), 14);
    CHECK_STR(name, "aten::_softmax");
    CHECK_EQ_INT(kf_sig_op_name(g_a.buf, g_a.len, name, 5), 4);
    CHECK_STR(name, "aten");
    /* a buffer shorter than the name it announces */
    CHECK_EQ_INT(kf_sig_op_name(g_a.buf, 5, name, sizeof name), 4);
    CHECK_STR(name, "aten");
    /* an op name longer than 255 bytes is cut to 255 */
    char longop[300];
    memset(longop, 'a', sizeof longop - 1);
    longop[sizeof longop - 1] = 0;
    kf_sig_begin(&g_a, longop);
    CHECK_EQ_INT(g_a.len, 256);
    char big[300];
    CHECK_EQ_INT(kf_sig_op_name(g_a.buf, g_a.len, big, sizeof big), 255);
    char out[512];
    CHECK_EQ_INT(fmt(&g_a, NULL, 0, out, sizeof out), KF_OK);
    CHECK_EQ_INT(strlen(out), 255 + 2);
}

static void test_dtype_names(void)
{
    CHECK_STR(kf_dtype_name(KF_F32), "f32");
    CHECK_STR(kf_dtype_name(KF_BF16), "bf16");
    CHECK_STR(kf_dtype_name(KF_F8E5M2), "f8e5m2");
    CHECK_STR(kf_dtype_name(-1), "?");
    CHECK_STR(kf_dtype_name(KF_DTYPE_COUNT), "?");
    for (int d = 0; d < KF_DTYPE_COUNT; d++) CHECK(kf_dtype_name(d) != NULL);
    CHECK_EQ_INT(kf_dtype_size(KF_F32), 4);
    CHECK_EQ_INT(kf_dtype_size(KF_BF16), 2);
    CHECK_EQ_INT(kf_dtype_size(KF_C128), 16);
    CHECK_EQ_INT(kf_dtype_size(KF_C64), 8);
    CHECK_EQ_INT(kf_dtype_size(KF_BOOL), 1);
    CHECK_EQ_INT(kf_dtype_size(KF_DTYPE_UNKNOWN), 0);
    CHECK_STR(kf_device_type_name(KF_DEV_CPU), "cpu");
    CHECK_STR(kf_device_type_name(KF_DEV_CUDA), "cuda");
    CHECK_STR(kf_device_type_name(KF_DEV_OTHER), "other");
}

/* ---- truncation and unservable signatures ---- */

static void test_truncation(void)
{
    static kf_tensor ts[200];
    int64_t sz[8] = {2, 3, 4, 5, 6, 7, 8, 9};
    for (int i = 0; i < 200; i++) ts[i] = tensor(KF_F32, 8, sz, 0x1000, KF_DEV_CPU, 0);
    char out[8192];

    /* The brief's case, then the same with every op-name length that moves the point where the
     * buffer runs out through a whole tensor body (5 + 64 + 64 bytes). */
    int bad_format = 0;
    for (int oplen = 9; oplen < 9 + 140; oplen++) {
        char op[160];
        memcpy(op, "aten::cat", 9);
        memset(op + 9, 'x', (size_t)(oplen - 9));
        op[oplen] = 0;
        kf_sig_begin(&g_a, op);
        kf_sig_tensor_list(&g_a, ts, 200);
        kf_sig_int(&g_a, 0); /* after truncation, nothing more is added */
        int ok = CHECK(g_a.flags & KF_SIG_TRUNCATED);
        ok &= CHECK(g_a.len <= KF_SIG_MAX_BYTES);
        ok &= CHECK(g_a.len > KF_SIG_MAX_BYTES - 140);
        ok &= CHECK_EQ_INT(g_a.buf[g_a.len - 1], 'X'); /* the truncation marker ends it */
        kf_status st = fmt(&g_a, NULL, 0, out, sizeof out);
        if (st != KF_OK || !ends_with(out, "...)")) bad_format++;
        if (oplen == 9) {
            ok &= CHECK_EQ_INT(st, KF_OK);
            ok &= CHECK(ends_with(out, "...)"));
            ok &= CHECK(strncmp(out, "cat([f32[2,3,4,5,6,7,8,9], ", 27) == 0);
        }
        if (!ok) printf("     op name length %d: %s -> \"%s\"\n", oplen, kf_status_str(st), out);
        /* deterministic: the same call truncates the same way */
        kf_sig_begin(&g_b, op);
        kf_sig_tensor_list(&g_b, ts, 200);
        kf_sig_int(&g_b, 0);
        CHECK(same_sig(&g_a, &g_b));
    }
    /* Every truncated signature must stay readable (it is recorded and shown in the stats). */
    if (!CHECK_EQ_INT(bad_format, 0))
        printf("     %d of 140 truncated tensor-list signatures could not be formatted\n",
               bad_format);

    /* Scalars running out of room: 300 ints (9 bytes each), again at every offset. */
    bad_format = 0;
    for (int oplen = 1; oplen <= 18; oplen++) {
        char op[32];
        memset(op, 'y', (size_t)oplen);
        op[oplen] = 0;
        kf_sig_begin(&g_a, op);
        for (int i = 0; i < 300; i++) kf_sig_int(&g_a, i);
        CHECK(g_a.flags & KF_SIG_TRUNCATED);
        CHECK(g_a.len <= KF_SIG_MAX_BYTES);
        CHECK_EQ_INT(g_a.buf[g_a.len - 1], 'X');
        kf_status st = fmt(&g_a, NULL, 0, out, sizeof out);
        if ((st != KF_OK || !ends_with(out, ", ...)")) && bad_format++ < 3) {
            printf("     %d ints, op name length %d: %s -> \"...%s\"\n", 300, oplen,
                   kf_status_str(st), strlen(out) > 40 ? out + strlen(out) - 40 : out);
        }
    }
    CHECK_EQ_INT(bad_format, 0);

    /* Other items after a truncation do not grow the buffer or clear the flag. */
    kf_sig_begin(&g_a, "aten::cat");
    kf_sig_tensor_list(&g_a, ts, 200);
    uint32_t len = g_a.len;
    kf_sig_bool(&g_a, 1);
    kf_sig_none(&g_a);
    kf_sig_str(&g_a, "x");
    kf_sig_double(&g_a, 1.0);
    kf_sig_device(&g_a, 0, 0);
    kf_sig_wrapped(&g_a, KF_F64, 1.0, 0);
    kf_sig_opaque(&g_a, "Generator");
    int64_t il[2] = {1, 2};
    kf_sig_int_list(&g_a, il, 2);
    kf_sig_tensor(&g_a, &ts[0]);
    CHECK_EQ_INT(g_a.len, len);
    CHECK(g_a.flags & KF_SIG_TRUNCATED);

    /* A long int list truncates too. */
    static int64_t many[600];
    kf_sig_begin(&g_a, "aten::view");
    kf_sig_int_list(&g_a, many, 600);
    CHECK(g_a.flags & KF_SIG_TRUNCATED);
    CHECK(g_a.len <= KF_SIG_MAX_BYTES);

    /* Exactly full: a signature that fits to the last byte but one is not truncated. */
    char op[256];
    /* header 1 + n, then one int list item of 1 + 2 + 8k bytes; choose sizes to end at 2047 */
    int k = 250;                                        /* 2003 bytes of int list */
    int n = KF_SIG_MAX_BYTES - 1 - (1 + 2 + 8 * k) - 1; /* 2047 - 2003 - 1 = 43 */
    memset(op, 'z', (size_t)n);
    op[n] = 0;
    kf_sig_begin(&g_a, op);
    kf_sig_int_list(&g_a, many, k);
    CHECK_EQ_INT(g_a.flags, 0);
    CHECK_EQ_INT(g_a.len, KF_SIG_MAX_BYTES - 1);
    kf_sig_none(&g_a); /* one more byte would leave no room for the marker */
    CHECK(g_a.flags & KF_SIG_TRUNCATED);
    CHECK_EQ_INT(g_a.len, KF_SIG_MAX_BYTES);
}

static void test_unservable(void)
{
    int64_t sz[1] = {4};
    kf_tensor ts[KF_SIG_MAX_TENSORS + 1];
    for (int i = 0; i <= KF_SIG_MAX_TENSORS; i++)
        ts[i] = tensor(KF_F32, 1, sz, 0x1000, KF_DEV_CPU, 0);

    kf_sig_begin(&g_a, "aten::normal");
    kf_sig_tensor(&g_a, &ts[0]);
    CHECK_EQ_INT(g_a.flags, 0);
    kf_sig_opaque(&g_a, "Generator");
    CHECK(g_a.flags & KF_SIG_UNSERVABLE);
    CHECK(!(g_a.flags & KF_SIG_TRUNCATED));
    char out[256];
    CHECK_EQ_INT(fmt(&g_a, NULL, 0, out, sizeof out), KF_OK);
    CHECK_STR(out, "normal(f32[4], <Generator>)");
    /* the opaque type is part of the signature */
    kf_sig_begin(&g_b, "aten::normal");
    kf_sig_tensor(&g_b, &ts[0]);
    kf_sig_opaque(&g_b, "ComplexScalar");
    CHECK(!same_sig(&g_a, &g_b));

    /* exactly KF_SIG_MAX_TENSORS tensors: servable; one more: not */
    kf_sig_begin(&g_a, "aten::cat");
    kf_sig_tensor_list(&g_a, ts, KF_SIG_MAX_TENSORS);
    CHECK_EQ_INT(g_a.flags, 0);
    CHECK_EQ_INT(g_a.n_tensors, KF_SIG_MAX_TENSORS);
    kf_sig_begin(&g_a, "aten::cat");
    kf_sig_tensor_list(&g_a, ts, KF_SIG_MAX_TENSORS + 1);
    CHECK(g_a.flags & KF_SIG_UNSERVABLE);
    CHECK(!(g_a.flags & KF_SIG_TRUNCATED));
    CHECK_EQ_INT(g_a.n_tensors, KF_SIG_MAX_TENSORS + 1);
    /* counted across separate tensor arguments too */
    kf_sig_begin(&g_a, "aten::many");
    for (int i = 0; i < KF_SIG_MAX_TENSORS; i++) kf_sig_tensor(&g_a, &ts[i]);
    CHECK_EQ_INT(g_a.flags, 0);
    kf_sig_tensor(&g_a, &ts[0]);
    CHECK(g_a.flags & KF_SIG_UNSERVABLE);

    /* more dims than a kf_tensor can hold */
    kf_tensor wide = ts[0];
    wide.ndim = KF_MAX_DIMS + 1;
    kf_sig_begin(&g_a, "aten::relu");
    kf_sig_tensor(&g_a, &wide);
    CHECK(g_a.flags & KF_SIG_UNSERVABLE);
    CHECK_EQ_INT(fmt(&g_a, NULL, 0, out, sizeof out), KF_OK);

    /* begin clears the flags of a previous use */
    kf_sig_begin(&g_a, "aten::relu");
    CHECK_EQ_INT(g_a.flags, 0);
    CHECK_EQ_INT(g_a.n_tensors, 0);
}

/* ---- the decoder on damaged input ---- */

static kf_status fmt_copy(const uint8_t *src, uint32_t len, char *out, size_t cap)
{
    static const char *const names[] = {"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k",
                                        "l", "m", "n", "o", "p", "q"};
    uint8_t *b = malloc(len ? len : 1); /* exactly `len` readable bytes for ASan */
    if (len) memcpy(b, src, len);
    /* a buffer of size 0 still gets a distinct allocation; len 0 must not be read at all */
    kf_status st = kf_sig_format(b, len, names, 17, out, cap);
    free(b);
    return st;
}

static void test_damaged(void)
{
    static kf_sig s;
    uint32_t boundary[64];
    int nb = 0;
    int64_t sz[3] = {2, 3, 5};
    kf_tensor t = tensor(KF_F16, 3, sz, 0x1002, KF_DEV_CUDA, 1);
    kf_tensor lst[3] = {t, t, t};
    lst[1].strides[0] = 1;
    int64_t il[4] = {3, 1, 4, 1};

#define ITEM(call)              \
    do {                        \
        call;                   \
        boundary[nb++] = s.len; \
    } while (0)
    kf_sig_begin(&s, "aten::everything.overload");
    boundary[nb++] = s.len;
    ITEM(kf_sig_tensor(&s, &t));
    ITEM(kf_sig_tensor_list(&s, lst, 3));
    ITEM(kf_sig_int(&s, -42));
    ITEM(kf_sig_double(&s, 0.125));
    ITEM(kf_sig_bool(&s, 1));
    ITEM(kf_sig_str(&s, "reduce"));
    ITEM(kf_sig_str(&s, "a string well over forty-eight characters long, hashed in the key"));
    ITEM(kf_sig_none(&s));
    ITEM(kf_sig_int_list(&s, il, 4));
    ITEM(kf_sig_device(&s, KF_DEV_CUDA, 2));
    ITEM(kf_sig_wrapped(&s, KF_F64, -2.5, 0));
    ITEM(kf_sig_wrapped(&s, KF_I64, 0, 9));
    ITEM(kf_sig_opaque(&s, "Generator"));
#undef ITEM
    CHECK(!(s.flags & KF_SIG_TRUNCATED));

    char out[2048];
    CHECK_EQ_INT(fmt_copy(s.buf, s.len, out, sizeof out), KF_OK);
    CHECK(ends_with(out, ", m=<Generator>)"));

    /* Every prefix: KF_OK or KF_ERR_INVALID, and KF_OK at each item boundary. */
    int bad = 0, n_ok = 0, n_invalid = 0;
    for (uint32_t l = 0; l <= s.len; l++) {
        kf_status st = fmt_copy(s.buf, l, out, sizeof out);
        if (st == KF_OK)
            n_ok++;
        else if (st == KF_ERR_INVALID)
            n_invalid++;
        else
            bad++;
        int at_boundary = 0;
        for (int i = 0; i < nb; i++) at_boundary |= boundary[i] == l;
        if (at_boundary && st != KF_OK) {
            bad++;
            printf("     prefix %u (an item boundary) -> %s\n", l, kf_status_str(st));
        }
        if (l == 0 && st != KF_ERR_INVALID) bad++;
        if (l > 0 && l < boundary[0] && st != KF_ERR_INVALID) bad++; /* inside the op name */
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(n_ok >= nb);
    CHECK(n_invalid > (int)s.len / 2);

    /* Every single-byte corruption, with values that matter to the decoder. */
    static const uint8_t vals[] = {0, 1, 8, 9, 0x7f, 0x80, 0xfe, 0xff, 'T', 'L', 'I', 'D', 'B',
                                   'S', 'N', 'J', 'V', 'W', '?', 'X', 48, 49, 255};
    uint8_t *copy = malloc(s.len);
    bad = 0;
    for (uint32_t pos = 0; pos < s.len; pos++) {
        for (size_t v = 0; v < sizeof vals; v++) {
            memcpy(copy, s.buf, s.len);
            copy[pos] = vals[v];
            kf_status st = fmt_copy(copy, s.len, out, sizeof out);
            if (st != KF_OK && st != KF_ERR_INVALID) bad++;
            if (strlen(out) >= sizeof out) bad++;
        }
    }
    CHECK_EQ_INT(bad, 0);

    /* Random garbage, with a small output buffer as well. */
    uint64_t x = 0x9E3779B97F4A7C15ull;
    bad = 0;
    for (int iter = 0; iter < 20000; iter++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint32_t len = (uint32_t)(x % 96);
        uint8_t garbage[96];
        uint64_t y = x;
        for (uint32_t i = 0; i < len; i++) {
            y = y * 6364136223846793005ull + 1442695040888963407ull;
            uint8_t b = (uint8_t)(y >> 56);
            /* bias towards valid tags and small lengths so deeper paths are reached */
            if ((y & 3) == 0) b = "TLIDBSNJVW?X"[(y >> 8) % 12];
            else if ((y & 3) == 1) b = (uint8_t)((y >> 8) % 10);
            garbage[i] = b;
        }
        char small[24];
        kf_status st = fmt_copy(garbage, len, (iter & 1) ? small : out,
                                (iter & 1) ? sizeof small : sizeof out);
        if (st != KF_OK && st != KF_ERR_INVALID) bad++;
    }
    CHECK_EQ_INT(bad, 0);
    free(copy);

    /* kf_sig_op_name on damaged input: never past `len` */
    char name[300];
    for (uint32_t l = 0; l <= 8; l++) {
        uint8_t *b = malloc(l ? l : 1);
        if (l) memcpy(b, s.buf, l);
        if (l) b[0] = 200; /* announces more than there is */
        size_t n = kf_sig_op_name(b, l, name, sizeof name);
        CHECK(n <= (l ? l - 1 : 0));
        free(b);
    }
}

/* kf_sig_tensor_parts writes exactly kf_sig_tensor's bytes and flags (the interceptors use it) */
static void test_tensor_parts(void)
{
    const int64_t sizes[3] = {2, 3, 5};
    const uintptr_t datas[3] = {0x1000, 0x1004, 0x1002};
    for (int d = 0; d < 3; d++) {
        kf_tensor t = tensor(KF_F32, d + 1, sizes, datas[d], d == 2 ? KF_DEV_CUDA : KF_DEV_CPU, d == 2);
        t.strides[0] = 7; /* not contiguous: strides are taken as given */
        kf_sig a, b;
        kf_sig_begin(&a, "aten::add.Tensor");
        kf_sig_begin(&b, "aten::add.Tensor");
        kf_sig_call_device(&a, KF_DEV_CPU);
        kf_sig_call_device(&b, KF_DEV_CPU);
        kf_sig_tensor(&a, &t);
        kf_sig_tensor_parts(&b, t.dtype, t.device_type, t.device_index, t.data, t.ndim, t.sizes,
                            t.strides);
        CHECK(same_sig(&a, &b));
        CHECK_EQ_INT(a.flags, b.flags);
        CHECK_EQ_INT(a.n_tensors, b.n_tensors);
        CHECK_EQ_INT(a.device_index, b.device_index);
    }
}

/* kf_sig_begin_head gives kf_sig_begin's bytes and state, whatever the name's length (one that
 * does not fit a head goes the long way), and a signature built after it is the same. */
static void test_head(void)
{
    char longname[300];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    /* 62 and 63 characters: the last name that fits a head, and the first that does not */
    const char *ops[] = {"aten::relu", "", "aten::_native_batch_norm_legit_no_training", "x",
                         longname, longname + 299 - 62, longname + 299 - 63};
    static kf_sig a, b;
    int64_t sz[2] = {4, 8}, st[2] = {8, 1};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        const char *op = ops[i];
        kf_sig_head h;
        kf_sig_head_make(&h, op);
        CHECK_EQ_INT(h.len != 0, strlen(op) + 1 <= KF_SIG_HEAD_MAX);
        memset(&a, 0x5a, sizeof a);
        memset(&b, 0xa5, sizeof b);
        kf_sig_begin(&a, op);
        kf_sig_begin_head(&b, &h);
        kf_sig_tensor_parts(&a, KF_F32, KF_DEV_CPU, 0, (void *)64, 2, sz, st);
        kf_sig_tensor_parts(&b, KF_F32, KF_DEV_CPU, 0, (void *)64, 2, sz, st);
        CHECK_EQ_INT(a.len, b.len);
        CHECK(a.flags == b.flags && a.n_tensors == b.n_tensors && a.device_type == b.device_type &&
              a.device_index == b.device_index && a.device_known == b.device_known &&
              a.type_fixed == b.type_fixed);
        CHECK(!memcmp(a.buf, b.buf, a.len));
    }
}

int main(void)
{
    test_head();
    test_tensor_parts();
    test_canonical();
    test_device_fields();
    test_format();
    test_op_name();
    test_dtype_names();
    test_truncation();
    test_unservable();
    test_damaged();
    return check_done("test_signature");
}
