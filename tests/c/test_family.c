/* Shape families: launch-time sizes in launch records (compile/launch.c) and the family record
 * and matching of plugin/family.c: which calls a family entry serves, and which records are
 * refused. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/signature.h"
#include "compile/compiler.h"
#include "plugin/family.h"

static const char *const LAUNCH =
    "{\"entry\":\"kf_kernel\",\"args\":[\"const float*\",\"float*\"],"
    "\"ints\":[\"numel(t0)/size(t0,-1)\"]}";
static const char *const FAMILY =
    "{\"tensors\":[0,1],\"free_dims\":[0],\"min\":1,\"max\":100000,\"multiple_of\":1}";

/* _softmax(x, dim, half_to_float) with x of `rows` x `cols` floats, row stride `rs`. */
static void softmax_sig(kf_sig *s, int dtype, int64_t rows, int64_t cols, int64_t rs, int64_t dim)
{
    kf_tensor t;
    memset(&t, 0, sizeof t);
    t.data = (void *)(uintptr_t)0x10000;
    t.dtype = dtype;
    t.ndim = 2;
    t.sizes[0] = rows, t.sizes[1] = cols;
    t.strides[0] = rs, t.strides[1] = 1;
    t.device_type = KF_DEV_CPU;
    kf_sig_begin(s, "aten::_softmax");
    kf_sig_call_device(s, KF_DEV_CPU);
    kf_sig_tensor(s, &t);
    kf_sig_int(s, dim);
    kf_sig_bool(s, 0);
}

static kf_out_layout out_layout(int64_t rows, int64_t cols)
{
    kf_out_layout l;
    memset(&l, 0, sizeof l);
    l.n = 1;
    l.o[0].alias_arg = -1;
    l.o[0].dtype = KF_F32;
    l.o[0].ndim = 2;
    l.o[0].sizes[0] = rows, l.o[0].sizes[1] = cols;
    l.o[0].strides[0] = cols, l.o[0].strides[1] = 1;
    return l;
}

static void test_launch_ints(void)
{
    kf_launch l;
    char err[256];
    CHECK_EQ_INT(kf_launch_parse(LAUNCH, &l, err, sizeof err), KF_OK);
    CHECK_EQ_INT(l.n_args, 2);
    CHECK_EQ_INT(l.n_ints, 1);
    int64_t a[3] = {4, 6, 10}, b[3] = {4, 6, 10}, v[KF_LAUNCH_MAX_INTS] = {0};
    kf_dims d[2] = {{3, a}, {3, b}};
    CHECK_EQ_INT(kf_launch_ints(&l, d, 2, v), KF_OK);
    CHECK_EQ_INT(v[0], 24); /* rows of a [4,6,10] tensor */
    CHECK_EQ_INT(kf_launch_ints(&l, d, 0, v), KF_ERR_INVALID); /* no such argument */
    kf_launch m;
    CHECK_EQ_INT(kf_launch_parse("{\"entry\":\"k\",\"args\":[\"float*\",\"float*\"],"
                                 "\"ints\":[\"size(t1, -2)\",\"numel(t1)\",\"size(t0,0)/size(t1,2)\"]}",
                                 &m, err, sizeof err), KF_OK);
    CHECK_EQ_INT(m.n_ints, 3);
    b[2] = 4; /* size(t0,0) / size(t1,2) = 4 / 4 */
    CHECK_EQ_INT(kf_launch_ints(&m, d, 2, v), KF_OK);
    CHECK_EQ_INT(v[0], 6);
    CHECK_EQ_INT(v[1], 96);
    CHECK_EQ_INT(v[2], 1);
    b[2] = 3; /* 4 / 3 is not exact: not launched */
    CHECK_EQ_INT(kf_launch_ints(&m, d, 2, v), KF_ERR_INVALID);
    b[2] = 0; /* a division by zero */
    CHECK_EQ_INT(kf_launch_ints(&m, d, 2, v), KF_ERR_INVALID);
    static const char *const bad[] = {
        "[\"numel(t2)\"]",          /* not a pointer argument */
        "[\"numel(t0)+1\"]",        /* no other operator */
        "[\"size(t0,9)\"]",         /* no such dim */
        "[\"size(t0)\"]",           /* size needs a dim */
        "[\"rows\"]",
        "[3]",
        "\"numel(t0)\"",
        "[\"numel(t0)\",\"numel(t0)\",\"numel(t0)\",\"numel(t0)\",\"numel(t0)\"]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char json[256];
        snprintf(json, sizeof json, "{\"entry\":\"k\",\"args\":[\"float*\",\"float*\"],\"ints\":%s}",
                 bad[i]);
        if (!CHECK_EQ_INT(kf_launch_parse(json, &m, err, sizeof err), KF_ERR_INVALID))
            printf("     accepted %s\n", json);
    }
    /* as many pointers and ints as a launch can take, no more */
    CHECK_EQ_INT(kf_launch_parse("{\"entry\":\"k\",\"args\":[\"float*\",\"float*\",\"float*\","
                                 "\"float*\",\"float*\",\"float*\",\"float*\",\"float*\",\"float*\","
                                 "\"float*\",\"float*\",\"float*\",\"float*\",\"float*\",\"float*\"],"
                                 "\"ints\":[\"numel(t0)\",\"numel(t1)\"]}",
                                 &m, err, sizeof err), KF_ERR_INVALID);
}

static kf_family *parse(const char *json, int64_t rows, const char *launch_json, char *err,
                        size_t cap, kf_status *st)
{
    kf_sig s;
    softmax_sig(&s, KF_F32, rows, 1000, 1000, -1);
    kf_out_layout o = out_layout(rows, 1000);
    kf_launch l;
    kf_launch_parse(launch_json, &l, NULL, 0);
    kf_family *f = NULL;
    *st = kf_family_parse(json, s.buf, s.len, &o, &l, &f, err, cap);
    return f;
}

static int member(const kf_family *f, int dtype, int64_t rows, int64_t cols, int64_t rs,
                  int64_t dim, kf_out_layout o, int64_t *extent)
{
    kf_sig s;
    softmax_sig(&s, dtype, rows, cols, rs, dim);
    return kf_family_match(f, s.buf, s.len, &o, extent);
}

static void test_matching(void)
{
    char err[256];
    kf_status st;
    kf_family *f = parse(FAMILY, 64, LAUNCH, err, sizeof err, &st);
    if (!CHECK_EQ_INT(st, KF_OK)) {
        printf("     %s\n", err);
        return;
    }
    CHECK_STR(f->text, "_softmax(f32[*,1000], -1, False)");
    const char *names[] = {"self", "dim", "half_to_float"};
    kf_family_format(f, names, 3);
    CHECK_STR(f->text, "_softmax(f32[*,1000], dim=-1, half_to_float=False)");
    int64_t x = 0;
    CHECK(member(f, KF_F32, 64, 1000, 1000, -1, out_layout(64, 1000), &x) && x == 64);
    CHECK(member(f, KF_F32, 37, 1000, 1000, -1, out_layout(37, 1000), &x) && x == 37);
    CHECK(member(f, KF_F32, 1, 1000, 1000, -1, out_layout(1, 1000), &x) && x == 1);
    CHECK(member(f, KF_F32, 1, 1000, 7, -1, out_layout(1, 1000), &x)); /* size-1 dim: any stride */
    /* not members: another row length, dtype, dim; a strided input; rows beyond the limit;
     * outputs that are not the input's rows or not contiguous; an empty call */
    CHECK(!member(f, KF_F32, 64, 999, 999, -1, out_layout(64, 999), NULL));
    CHECK(!member(f, KF_F16, 37, 1000, 1000, -1, out_layout(37, 1000), NULL));
    CHECK(!member(f, KF_F32, 37, 1000, 1000, 1, out_layout(37, 1000), NULL));
    CHECK(!member(f, KF_F32, 37, 1000, 2000, -1, out_layout(37, 1000), NULL));
    CHECK(!member(f, KF_F32, 100001, 1000, 1000, -1, out_layout(100001, 1000), NULL));
    CHECK(!member(f, KF_F32, 37, 1000, 1000, -1, out_layout(38, 1000), NULL));
    CHECK(!member(f, KF_F32, 0, 1000, 1000, -1, out_layout(0, 1000), NULL));
    kf_out_layout strided = out_layout(37, 1000);
    strided.o[0].strides[0] = 1001;
    CHECK(!member(f, KF_F32, 37, 1000, 1000, -1, strided, NULL));
    kf_out_layout two = out_layout(37, 1000);
    two.n = 2;
    two.o[1] = two.o[0];
    CHECK(!member(f, KF_F32, 37, 1000, 1000, -1, two, NULL));
    /* the alignment of the data is part of the signature, and stays fixed */
    kf_sig s;
    softmax_sig(&s, KF_F32, 37, 1000, 1000, -1);
    kf_out_layout o37 = out_layout(37, 1000);
    CHECK(kf_family_match(f, s.buf, s.len, &o37, NULL));
    kf_tensor t;
    memset(&t, 0, sizeof t);
    t.data = (void *)(uintptr_t)0x10004, t.dtype = KF_F32, t.ndim = 2;
    t.sizes[0] = 37, t.sizes[1] = 1000, t.strides[0] = 1000, t.strides[1] = 1;
    kf_sig_begin(&s, "aten::_softmax");
    kf_sig_call_device(&s, KF_DEV_CPU);
    kf_sig_tensor(&s, &t);
    kf_sig_int(&s, -1);
    kf_sig_bool(&s, 0);
    CHECK(!kf_family_match(f, s.buf, s.len, &o37, NULL));
    /* another op with the very same arguments */
    kf_sig_begin(&s, "aten::_log_softmax");
    kf_sig_call_device(&s, KF_DEV_CPU);
    t.data = (void *)(uintptr_t)0x10000;
    kf_sig_tensor(&s, &t);
    kf_sig_int(&s, -1);
    kf_sig_bool(&s, 0);
    CHECK(!kf_family_match(f, s.buf, s.len, &o37, NULL));
    kf_family_free(f);

    /* divisibility */
    f = parse("{\"tensors\":[0,1],\"free_dims\":[0],\"min\":8,\"max\":1024,\"multiple_of\":8}", 64,
              LAUNCH, err, sizeof err, &st);
    if (CHECK_EQ_INT(st, KF_OK)) {
        CHECK(!member(f, KF_F32, 37, 1000, 1000, -1, out_layout(37, 1000), NULL));
        CHECK(member(f, KF_F32, 40, 1000, 1000, -1, out_layout(40, 1000), NULL));
        CHECK(!member(f, KF_F32, 1032, 1000, 1000, -1, out_layout(1032, 1000), NULL));
    }
    kf_family_free(f);
}

static void test_refused(void)
{
    static const struct {
        const char *json, *why;
    } bad[] = {
        {"[1,2]", "object"},
        {"{\"tensors\":[0,1],\"free_dims\":[0],\"min\":1,\"max\":9,\"multiple_of\":1,\"x\":1}",
         "unknown key"},
        {"{\"tensors\":[0,1],\"free_dims\":[0],\"min\":1,\"max\":99,\"min\":1,\"multiple_of\":1}",
         "twice"},
        {"{\"tensors\":[0,2],\"free_dims\":[0],\"min\":1,\"max\":99,\"multiple_of\":1}",
         "does not take"},
        {"{\"tensors\":[0,0],\"free_dims\":[0],\"min\":1,\"max\":99,\"multiple_of\":1}",
         "distinct"},
        {"{\"tensors\":[],\"free_dims\":[0],\"min\":1,\"max\":99,\"multiple_of\":1}", "non-empty"},
        {"{\"tensors\":[0,1],\"free_dims\":[2],\"min\":1,\"max\":99,\"multiple_of\":1}",
         "does not have"},
        {"{\"tensors\":[0,1],\"free_dims\":[0],\"min\":9,\"max\":2,\"multiple_of\":1}", "min <="},
        {"{\"tensors\":[0,1],\"free_dims\":[0],\"min\":1,\"max\":99,\"multiple_of\":0}", "integers"},
        {"{\"tensors\":[0,1],\"free_dims\":[0],\"min\":1.5,\"max\":99,\"multiple_of\":1}",
         "integers"},
        {"{\"tensors\":[0,1],\"free_dims\":[0],\"min\":100,\"max\":200,\"multiple_of\":1}",
         "not a member"},
        {"{\"tensors\":[0,1],\"free_dims\":[0,1],\"min\":1,\"max\":99999999,\"multiple_of\":7}",
         "not a member"},
    };
    char err[256];
    kf_status st;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kf_family *f = parse(bad[i].json, 64, LAUNCH, err, sizeof err, &st);
        CHECK(f == NULL);
        if (!CHECK_EQ_INT(st, KF_ERR_INVALID)) continue;
        if (!CHECK(strstr(err, bad[i].why) != NULL)) printf("     %s: %s\n", bad[i].json, err);
    }
    /* a kernel that reads no size at launch serves its own signature only */
    kf_family *f = parse(FAMILY, 64, "{\"entry\":\"kf_kernel\",\"args\":[\"const float*\",\"float*\"]}",
                         err, sizeof err, &st);
    CHECK(f == NULL);
    CHECK_EQ_INT(st, KF_ERR_INVALID);
    CHECK_CONTAINS(err, "ints");
    /* a strided entry: its free dims would move its strides */
    kf_sig s;
    softmax_sig(&s, KF_F32, 64, 1000, 1024, -1);
    kf_out_layout o = out_layout(64, 1000);
    kf_launch l;
    kf_launch_parse(LAUNCH, &l, NULL, 0);
    CHECK_EQ_INT(kf_family_parse(FAMILY, s.buf, s.len, &o, &l, &f, err, sizeof err), KF_ERR_INVALID);
    CHECK_CONTAINS(err, "contiguous");
    /* an op that writes its argument */
    softmax_sig(&s, KF_F32, 64, 1000, 1000, -1);
    o.o[0].alias_arg = 0;
    CHECK_EQ_INT(kf_family_parse(FAMILY, s.buf, s.len, &o, &l, &f, err, sizeof err), KF_ERR_INVALID);
    /* a malformed signature */
    o = out_layout(64, 1000);
    s.buf[s.len - 2] = 'Q';
    CHECK_EQ_INT(kf_family_parse(FAMILY, s.buf, s.len, &o, &l, &f, err, sizeof err), KF_ERR_INVALID);
    CHECK_EQ_INT(kf_family_parse(NULL, s.buf, s.len, &o, &l, &f, err, sizeof err), KF_ERR_INVALID);
}

int main(void)
{
    test_launch_ints();
    test_matching();
    test_refused();
    return check_done("test_family");
}
