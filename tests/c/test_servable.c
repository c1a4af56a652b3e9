/* The servable rule: which signatures a kernel may serve, why not in words (naming the argument),
 * and the table of writes that schemas do not show (plugin/writes.c). CPU only: devices are
 * plain descriptor fields here. */
#include <stdint.h>
#include <string.h>

#include "tests/c/check.h"
#include "common/signature.h"

static kf_tensor tensor(int dev_type, int dev_index, int64_t n)
{
    kf_tensor t;
    memset(&t, 0, sizeof t);
    t.data = (void *)(uintptr_t)0x1000;
    t.dtype = KF_F32;
    t.ndim = 1;
    t.sizes[0] = n;
    t.strides[0] = 1;
    t.device_type = dev_type;
    t.device_index = dev_index;
    return t;
}

static kf_sig g_s;
static const char *const k_copy_names[] = {"self", "src", "non_blocking"};
static const char *const k_mul_names[] = {"self", "other"};

static int servable(const kf_sig *s) { return !(s->flags & (KF_SIG_TRUNCATED | KF_SIG_UNSERVABLE)); }

static void reason(const kf_sig *s, const char *const *names, int n, char *out, size_t cap)
{
    CHECK_EQ_INT(kf_sig_unservable_reason(s->buf, s->len, s->device_type, s->device_index, names, n,
                                          out, cap), 0);
}

/* y0.copy_(x1): cuda:0 <- cuda:1 */
static void test_cross_gpu_copy(void)
{
    char why[256];
    kf_tensor y0 = tensor(KF_DEV_CUDA, 0, 8), x1 = tensor(KF_DEV_CUDA, 1, 8);
    kf_sig_begin(&g_s, "aten::copy_");
    kf_sig_call_device(&g_s, KF_DEV_CUDA);
    kf_sig_tensor(&g_s, &y0);
    kf_sig_tensor(&g_s, &x1);
    kf_sig_bool(&g_s, 0);
    CHECK(!servable(&g_s));
    CHECK_EQ_INT(g_s.device_type, KF_DEV_CUDA);
    CHECK_EQ_INT(g_s.device_index, 0); /* the call's device: the first tensor's */
    reason(&g_s, k_copy_names, 3, why, sizeof why);
    CHECK_STR(why, "argument 'src' is on cuda:1, the call on cuda:0 (a kernel runs on one device)");

    /* the same on one GPU: servable, and a different signature from the cross-GPU one */
    kf_sig one;
    kf_tensor x0 = tensor(KF_DEV_CUDA, 0, 8);
    kf_sig_begin(&one, "aten::copy_");
    kf_sig_call_device(&one, KF_DEV_CUDA);
    kf_sig_tensor(&one, &y0);
    kf_sig_tensor(&one, &x0);
    kf_sig_bool(&one, 0);
    CHECK(servable(&one));
    CHECK(one.len != g_s.len || memcmp(one.buf, g_s.buf, one.len) != 0);
    reason(&one, k_copy_names, 3, why, sizeof why);
    CHECK_STR(why, "");

    /* both on cuda:1: servable, on device 1 */
    kf_tensor y1 = tensor(KF_DEV_CUDA, 1, 8);
    kf_sig_begin(&one, "aten::copy_");
    kf_sig_call_device(&one, KF_DEV_CUDA);
    kf_sig_tensor(&one, &y1);
    kf_sig_tensor(&one, &x1);
    kf_sig_bool(&one, 0);
    CHECK(servable(&one));
    CHECK_EQ_INT(one.device_index, 1);

    /* a tensor list spanning two GPUs (cat) */
    kf_tensor parts[2] = {x0, x1};
    kf_sig_begin(&g_s, "aten::cat");
    kf_sig_call_device(&g_s, KF_DEV_CUDA);
    kf_sig_tensor_list(&g_s, parts, 2);
    kf_sig_int(&g_s, 0);
    CHECK(!servable(&g_s));
    const char *const cat_names[] = {"tensors", "dim"};
    reason(&g_s, cat_names, 2, why, sizeof why);
    CHECK_STR(why, "argument 'tensors' element 1 is on cuda:1, the call on cuda:0 (a kernel runs on "
                   "one device)");
}

/* a CPU tensor (not a wrapped number) in a CUDA call, before the first CUDA tensor */
static void test_cpu_tensor_in_cuda_call(void)
{
    char why[256];
    kf_tensor c = tensor(KF_DEV_CPU, 0, 1), g = tensor(KF_DEV_CUDA, 2, 8);
    kf_sig_begin(&g_s, "aten::mul.Tensor");
    kf_sig_call_device(&g_s, KF_DEV_CUDA);
    kf_sig_tensor(&g_s, &c);
    kf_sig_tensor(&g_s, &g);
    CHECK(!servable(&g_s));
    CHECK_EQ_INT(g_s.device_index, 2);
    reason(&g_s, k_mul_names, 2, why, sizeof why);
    CHECK_STR(why, "argument 'self' is on cpu:0, the call on cuda:2 (a kernel runs on one device)");
}

/* mul.Tensor(f32[8], 2.0): the 2.0 is a wrapped Python number, compiled into the kernel */
static void test_wrapped_number(void)
{
    char why[256];
    kf_tensor x = tensor(KF_DEV_CPU, 0, 8);
    kf_sig_begin(&g_s, "aten::mul.Tensor");
    kf_sig_call_device(&g_s, KF_DEV_CPU);
    kf_sig_tensor(&g_s, &x);
    kf_sig_wrapped(&g_s, KF_F64, 2.0, 0);
    CHECK(servable(&g_s));
    CHECK_EQ_INT(g_s.n_tensors, 1); /* the kernel takes self only */
    reason(&g_s, k_mul_names, 2, why, sizeof why);
    CHECK_STR(why, "");

    /* in a CUDA call: the number is a CPU tensor, yet the call stays on the real tensor's GPU */
    kf_tensor g = tensor(KF_DEV_CUDA, 1, 8);
    kf_sig_begin(&g_s, "aten::mul.Tensor");
    kf_sig_call_device(&g_s, KF_DEV_CUDA);
    kf_sig_wrapped(&g_s, KF_I64, 0, 3); /* a wrapped `self`, before the tensor */
    kf_sig_tensor(&g_s, &g);
    CHECK(servable(&g_s));
    CHECK_EQ_INT(g_s.device_type, KF_DEV_CUDA);
    CHECK_EQ_INT(g_s.device_index, 1);

    /* every other rule still holds: a real 0-dim CPU tensor beside it stays unservable */
    kf_tensor c = tensor(KF_DEV_CPU, 0, 1);
    c.ndim = 0;
    kf_sig_begin(&g_s, "aten::add.Tensor");
    kf_sig_call_device(&g_s, KF_DEV_CUDA);
    kf_sig_tensor(&g_s, &g);
    kf_sig_tensor(&g_s, &c);
    kf_sig_wrapped(&g_s, KF_BOOL, 0, 1);
    CHECK(!servable(&g_s));
    const char *const add_names[] = {"self", "other", "alpha"};
    reason(&g_s, add_names, 3, why, sizeof why);
    CHECK_STR(why, "argument 'other' is on cpu:0, the call on cuda:1 (a kernel runs on one device)");

    /* a wrapped number of a dtype torch_ext never describes exactly (complex) is not served */
    kf_sig_begin(&g_s, "aten::mul.Tensor");
    kf_sig_call_device(&g_s, KF_DEV_CPU);
    kf_sig_tensor(&g_s, &x);
    kf_sig_wrapped(&g_s, KF_C128, 0.0, 0);
    CHECK(!servable(&g_s));
    reason(&g_s, k_mul_names, 2, why, sizeof why);
    CHECK_STR(why, "argument 'other' is a Python number of type c128, which a kernel cannot take");
    /* without names: the position */
    reason(&g_s, NULL, 0, why, sizeof why);
    CHECK_CONTAINS(why, "argument 1 is a Python number");

    /* the plain two-tensor call stays servable */
    kf_tensor y = tensor(KF_DEV_CPU, 0, 8);
    kf_sig_begin(&g_s, "aten::mul.Tensor");
    kf_sig_call_device(&g_s, KF_DEV_CPU);
    kf_sig_tensor(&g_s, &x);
    kf_sig_tensor(&g_s, &y);
    CHECK(servable(&g_s));
}

/* every other unservable kind has a reason too, and a reason agrees with the flags */
static void test_other_reasons(void)
{
    char why[256];
    kf_tensor x = tensor(KF_DEV_CPU, 0, 8);
    kf_sig_begin(&g_s, "aten::bernoulli");
    kf_sig_tensor(&g_s, &x);
    kf_sig_opaque(&g_s, "Generator");
    CHECK(!servable(&g_s));
    const char *const names[] = {"self", "generator"};
    reason(&g_s, names, 2, why, sizeof why);
    CHECK_STR(why, "argument 'generator' is Generator, which a kernel cannot take");

    char long_str[80];
    memset(long_str, 'a', sizeof long_str - 1);
    long_str[sizeof long_str - 1] = 0;
    kf_sig_begin(&g_s, "aten::x");
    kf_sig_str(&g_s, long_str);
    reason(&g_s, NULL, 0, why, sizeof why);
    CHECK_CONTAINS(why, "argument 0 is a string longer than");

    kf_sig_begin(&g_s, "aten::x");
    for (int i = 0; i < KF_SIG_MAX_TENSORS + 1; i++) kf_sig_tensor(&g_s, &x);
    CHECK(!servable(&g_s));
    reason(&g_s, NULL, 0, why, sizeof why);
    CHECK_CONTAINS(why, "17 tensors; a kernel takes at most 16");

    kf_sig_begin(&g_s, "aten::x");
    int64_t many[300] = {0};
    for (int i = 0; i < 8 && !(g_s.flags & KF_SIG_TRUNCATED); i++) kf_sig_int_list(&g_s, many, 300);
    CHECK(g_s.flags & KF_SIG_TRUNCATED);
    reason(&g_s, NULL, 0, why, sizeof why);
    CHECK_CONTAINS(why, "truncated");

    /* a malformed encoding is an error, not a reason */
    uint8_t bad[] = {3, 'a', 'b', 'c', 'T', 1};
    CHECK_EQ_INT(kf_sig_unservable_reason(bad, sizeof bad, KF_DEV_CPU, 0, NULL, 0, why, sizeof why), -1);
}

/* damaged encodings (cache files are untrusted): never read out of bounds (ASan), never crash */
static void test_reason_of_damaged_encodings(void)
{
    char why[256];
    kf_tensor x = tensor(KF_DEV_CUDA, 0, 8), y = tensor(KF_DEV_CUDA, 1, 8);
    kf_tensor parts[2] = {x, y};
    kf_sig_begin(&g_s, "aten::x");
    kf_sig_tensor(&g_s, &x);
    kf_sig_tensor_list(&g_s, parts, 2);
    kf_sig_str(&g_s, "abc");
    int64_t il[3] = {1, 2, 3};
    kf_sig_int_list(&g_s, il, 3);
    kf_sig_device(&g_s, KF_DEV_CUDA, 0);
    kf_sig_wrapped(&g_s, KF_F64, 0.5, 0);
    kf_sig_wrapped(&g_s, KF_C64, 0.0, 0);
    kf_sig_opaque(&g_s, "Generator");
    uint8_t buf[KF_SIG_MAX_BYTES];
    uint64_t rng = 12345;
    int errors = 0;
    for (uint32_t cut = 0; cut <= g_s.len; cut++) /* every truncation */
        errors += kf_sig_unservable_reason(g_s.buf, cut, KF_DEV_CUDA, 0, NULL, 0, why, sizeof why) < 0;
    for (int round = 0; round < 20000; round++) { /* random byte flips */
        memcpy(buf, g_s.buf, g_s.len);
        for (int k = 0; k < 3; k++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            buf[(rng >> 33) % g_s.len] = (uint8_t)(rng >> 20);
        }
        kf_sig_unservable_reason(buf, g_s.len, KF_DEV_CUDA, 0, NULL, 0, why, sizeof why);
        CHECK(strlen(why) < sizeof why);
    }
    CHECK(errors > 0);
}

static void test_hidden_writes_table(void)
{
    uint32_t args = 123;
    int when = 7;
    CHECK_EQ_INT(kf_op_hidden_writes("aten::native_batch_norm", &args, &when), 1);
    CHECK_EQ_INT(args, (1u << 3) | (1u << 4)); /* running_mean, running_var */
    CHECK_EQ_INT(when, 5);                      /* training */
    CHECK_EQ_INT(kf_op_hidden_writes("aten::cudnn_batch_norm", &args, &when), 1);
    CHECK_EQ_INT(args, (1u << 3) | (1u << 4));
    CHECK_EQ_INT(when, 5);
    /* eval-only batch norm writes nothing; its schema is right about it */
    CHECK_EQ_INT(kf_op_hidden_writes("aten::_native_batch_norm_legit_no_training", &args, &when), 0);
    CHECK_EQ_INT(args, 0);
    CHECK_EQ_INT(when, -1);
    CHECK_EQ_INT(kf_op_hidden_writes("aten::add_.Tensor", &args, &when), 0);
    CHECK_EQ_INT(kf_op_hidden_writes(NULL, &args, &when), 0);
}

int main(void)
{
    test_cross_gpu_copy();
    test_cpu_tensor_in_cuda_call();
    test_wrapped_number();
    test_other_reasons();
    test_reason_of_damaged_encodings();
    test_hidden_writes_table();
    return check_done("test_servable");
}
