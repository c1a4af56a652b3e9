/* The dispatch path as torch_ext drives it: runtime creation, call counting and timing, stats
 * JSON, the signature probe, kernel registration and launch, observed ops, concurrency. */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/c/check.h"
#include "plugin/config.h"
#include "plugin/plugin.h"
#include "common/signature.h"
#include "plugin/sigtable.h"

/* ---- helpers ---- */

static void clear_env(void)
{
    static const char *const vars[] = {"KFORGE_DISABLE", "KFORGE_TUNE", "KFORGE_RECORD",
                                       "KFORGE_SAMPLE_EVERY", "KFORGE_OBSERVER_SAMPLE",
                                       "KFORGE_OPS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) unsetenv(vars[i]);
}

static kf_runtime *new_runtime(void)
{
    static kf_config cfg;
    clear_env();
    kf_config_from_env(&cfg);
    kf_runtime *rt = NULL;
    if (!CHECK_EQ_INT(kf_runtime_create(&rt, &cfg), KF_OK) || !CHECK(rt != NULL)) {
        printf("cannot create a runtime; giving up\n");
        exit(check_done("test_dispatch"));
    }
    return rt;
}

static kf_tensor tensor2(int dev_type, int dev_index, int64_t rows, int64_t cols)
{
    kf_tensor t;
    memset(&t, 0, sizeof t);
    t.data = (void *)(uintptr_t)0x10000;
    t.dtype = KF_F32;
    t.ndim = 2;
    t.sizes[0] = rows;
    t.sizes[1] = cols;
    t.strides[0] = cols;
    t.strides[1] = 1;
    t.device_type = dev_type;
    t.device_index = dev_index;
    return t;
}

/* _softmax(f32[rows,8], dim=-1, half_to_float=False) on the CPU */
static void softmax_sig(kf_sig *s, int64_t rows)
{
    kf_tensor t = tensor2(KF_DEV_CPU, 0, rows, 8);
    kf_sig_begin(s, "aten::_softmax");
    kf_sig_tensor(s, &t);
    kf_sig_int(s, -1);
    kf_sig_bool(s, 0);
}

static void unary_sig(kf_sig *s, const char *op, int64_t rows)
{
    kf_tensor t = tensor2(KF_DEV_CPU, 0, rows, 16);
    kf_sig_begin(s, op);
    kf_sig_tensor(s, &t);
}

static void add_sig(kf_sig *s, int64_t rows)
{
    kf_tensor t = tensor2(KF_DEV_CPU, 0, rows, 16);
    kf_sig_begin(s, "aten::add.Tensor");
    kf_sig_tensor(s, &t);
    kf_sig_tensor(s, &t);
    kf_sig_int(s, 1);
}

static uint64_t key_of(const kf_sig *s) { return kf_sig_hash(s->buf, s->len); }

/* One complete eager call, as torch_ext makes it. Returns what begin said. */
static kf_call call_eager(kf_runtime *rt, const kf_sig *s)
{
    kf_call c;
    kf_dispatch_begin(rt, s, &c);
    kf_dispatch_start(rt, &c, 0, NULL);
    kf_dispatch_end(rt, &c, 0, NULL);
    return c;
}

static cJSON *stats(kf_runtime *rt)
{
    char *text = kf_stats_json(rt);
    if (!CHECK(text != NULL)) return cJSON_CreateObject();
    cJSON *doc = cJSON_Parse(text);
    CHECK(doc != NULL);
    kf_free(text);
    return doc ? doc : cJSON_CreateObject();
}

static cJSON *row_for(cJSON *doc, uint64_t key)
{
    char hex[17];
    snprintf(hex, sizeof hex, "%016" PRIx64, key);
    cJSON *rows = cJSON_GetObjectItemCaseSensitive(doc, "rows");
    cJSON *r;
    cJSON_ArrayForEach(r, rows)
    {
        cJSON *k = cJSON_GetObjectItemCaseSensitive(r, "key");
        if (cJSON_IsString(k) && !strcmp(k->valuestring, hex)) return r;
    }
    return NULL;
}

static double num(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!cJSON_IsNumber(v)) {
        printf("     (no number \"%s\")\n", name);
        return -12345.0;
    }
    return v->valuedouble;
}

static const char *str(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int boolean(const cJSON *obj, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return cJSON_IsBool(v) ? cJSON_IsTrue(v) : -1;
}

static int n_rows(const cJSON *doc)
{
    return cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(doc, "rows"));
}

static kf_out_layout layout_like(int64_t rows, int64_t cols)
{
    kf_out_layout l;
    memset(&l, 0, sizeof l);
    l.n = 1;
    l.o[0].alias_arg = -1;
    l.o[0].dtype = KF_F32;
    l.o[0].ndim = 2;
    l.o[0].sizes[0] = rows;
    l.o[0].sizes[1] = cols;
    l.o[0].strides[0] = cols;
    l.o[0].strides[1] = 1;
    return l;
}

/* A test kernel: records how it was called. */
typedef struct kernel_log {
    _Atomic int calls;
    void *user;
    int n;
    void *data0, *data1;
    void *stream;
    int ret;
} kernel_log;

static int test_kernel(void *user, const kf_tensor *tensors, int n, void *stream)
{
    kernel_log *log = user;
    atomic_fetch_add(&log->calls, 1);
    log->user = user;
    log->n = n;
    log->data0 = n > 0 ? tensors[0].data : NULL;
    log->data1 = n > 1 ? tensors[1].data : NULL;
    log->stream = stream;
    return log->ret;
}

/* The kernel of the threaded test: only counts. */
static int count_kernel(void *user, const kf_tensor *tensors, int n, void *stream)
{
    (void)tensors;
    (void)stream;
    atomic_fetch_add((_Atomic long *)user, 1);
    return n == 2 ? 0 : 1;
}

/* ---- tests ---- */

static void test_runtime_basics(void)
{
    CHECK_STR(kf_version(), KF_VERSION_STRING);
    CHECK(kf_runtime_errmsg(NULL) != NULL && kf_runtime_errmsg(NULL)[0] != 0);
    CHECK_EQ_INT(kf_enabled(NULL), 0);
    kf_set_enabled(NULL, 1); /* harmless */
    CHECK(kf_stats_json(NULL) == NULL);
    CHECK(kf_ops_json(NULL) == NULL);
    kf_reset_stats(NULL);
    CHECK_EQ_INT(kf_register_kernel(NULL, 1, test_kernel, NULL), KF_ERR_INVALID);

    kf_runtime *rt = new_runtime();
    kf_runtime_set_global(rt);
    CHECK(kf_runtime_get() == rt);
    CHECK_EQ_INT(kf_enabled(rt), 1);
    kf_set_enabled(rt, 0);
    CHECK_EQ_INT(kf_enabled(rt), 0);
    kf_set_enabled(rt, 7);
    CHECK_EQ_INT(kf_enabled(rt), 1);
    CHECK_STR(kf_runtime_errmsg(rt), "");
    CHECK_EQ_INT(kf_runtime_config(rt)->sample_every, 16);
    CHECK_EQ_INT(kf_runtime_config(rt)->disable, 0);

    cJSON *doc = stats(rt);
    CHECK_EQ_INT(n_rows(doc), 0);
    CHECK(num(doc, "dropped") == 0);
    CHECK(str(doc, "gpu_timer") != NULL);
    cJSON_Delete(doc);
    kf_runtime_free(rt);
    CHECK(kf_runtime_get() == NULL); /* freeing the global runtime unpublishes it */

    /* KFORGE_DISABLE=1: created, but disabled */
    static kf_config cfg;
    clear_env();
    setenv("KFORGE_DISABLE", "1", 1);
    kf_config_from_env(&cfg);
    clear_env();
    kf_runtime *off = NULL;
    CHECK_EQ_INT(kf_runtime_create(&off, &cfg), KF_OK);
    CHECK_EQ_INT(kf_enabled(off), 0);
    CHECK_EQ_INT(kf_runtime_config(off)->disable, 1);
    char *ops = kf_ops_json(off);
    cJSON *od = cJSON_Parse(ops);
    CHECK_EQ_INT(boolean(od, "enabled"), 0);
    CHECK_EQ_INT(boolean(od, "disabled_by_env"), 1);
    cJSON_Delete(od);
    kf_free(ops);
    kf_runtime_free(off);
}

static void test_counts(kf_runtime *rt)
{
    static const char *const names[] = {"self", "dim", "half_to_float"};
    CHECK(kf_runtime_add_op(rt, "aten::_softmax", names, 3) >= 0);
    static kf_sig s;
    softmax_sig(&s, 4);
    uint64_t key = key_of(&s);

    int timed = 0, null_slots = 0, kernels = 0;
    kf_slot *slot = NULL;
    for (int i = 0; i < 100; i++) {
        kf_call c = call_eager(rt, &s);
        timed += c.time_it;
        null_slots += c.slot == NULL;
        kernels += c.kernel != NULL;
        if (!slot) slot = c.slot;
        if (c.slot != slot) null_slots++;
    }
    CHECK_EQ_INT(null_slots, 0);
    CHECK_EQ_INT(kernels, 0);
    /* one call in sample_every is timed (the implementation also times the first few) */
    CHECK(timed >= 100 / 16 && timed <= 100 / 16 + 3);

    cJSON *doc = stats(rt);
    CHECK_EQ_INT(n_rows(doc), 1);
    cJSON *r = row_for(doc, key);
    if (CHECK(r != NULL)) {
        CHECK_STR(str(r, "op"), "aten::_softmax");
        CHECK_STR(str(r, "signature"), "_softmax(f32[4,8], dim=-1, half_to_float=False)");
        CHECK_STR(str(r, "device"), "cpu");
        CHECK(num(r, "calls") == 100);
        CHECK(num(r, "fallback") == 100);
        CHECK(num(r, "served") == 0);
        CHECK(num(r, "timed_calls") == timed);
        double ms = num(r, "time_ms"), us = num(r, "eager_us");
        CHECK(ms >= 0);
        CHECK(us >= 0);
        /* time_ms is the sampled per-call time scaled to all calls */
        CHECK(ms <= us * 100 / 1000 * 1.000001 + 1e-9 && ms >= us * 100 / 1000 * 0.999999 - 1e-9);
        CHECK(num(r, "served_us") < 0); /* no served sample */
        CHECK_EQ_INT(boolean(r, "intercepted"), 1);
        CHECK_EQ_INT(boolean(r, "servable"), 1);
        CHECK_EQ_INT(boolean(r, "has_kernel"), 0);
        CHECK_STR(str(r, "time_source"), "host-wall");
    }
    CHECK(num(doc, "dropped") == 0);
    cJSON_Delete(doc);

    /* reset: counts go to zero (and zero-call rows are left out) */
    kf_reset_stats(rt);
    if (CHECK(slot != NULL)) {
        CHECK_EQ_U64(atomic_load(&slot->calls), 0);
        CHECK_EQ_U64(kf_slot_fallback(slot), 0);
        CHECK_EQ_U64(atomic_load(&slot->fb_timed), 0);
        CHECK_EQ_U64(atomic_load(&slot->fb_time_ns), 0);
    }
    doc = stats(rt);
    CHECK(row_for(doc, key) == NULL);
    CHECK_EQ_INT(n_rows(doc), 0);
    cJSON_Delete(doc);
    kf_call c = call_eager(rt, &s);
    CHECK(c.slot == slot);
    CHECK_EQ_INT(c.time_it, 1); /* counting starts over: the first call is timed again */
    doc = stats(rt);
    r = row_for(doc, key);
    if (CHECK(r != NULL)) {
        CHECK(num(r, "calls") == 1);
        CHECK(num(r, "fallback") == 1);
        CHECK(num(r, "timed_calls") == 1);
    }
    cJSON_Delete(doc);

    /* a call that did not complete: counted, but its timing sample is dropped */
    static kf_sig s2;
    softmax_sig(&s2, 5);
    kf_dispatch_begin(rt, &s2, &c);
    CHECK_EQ_INT(c.time_it, 1);
    kf_dispatch_start(rt, &c, 0, NULL);
    kf_dispatch_cancel(rt, &c);
    kf_dispatch_end(rt, &c, 0, NULL);
    doc = stats(rt);
    r = row_for(doc, key_of(&s2));
    if (CHECK(r != NULL)) {
        CHECK(num(r, "calls") == 1);
        CHECK(num(r, "timed_calls") == 0);
        CHECK(num(r, "time_ms") == 0);
    }
    cJSON_Delete(doc);

    /* ops_json lists the registered op */
    char *ops = kf_ops_json(rt);
    cJSON *od = cJSON_Parse(ops);
    if (CHECK(od != NULL)) {
        CHECK_EQ_INT(boolean(od, "enabled"), 1);
        CHECK(num(od, "sample_every") == 16);
        cJSON *arr = cJSON_GetObjectItemCaseSensitive(od, "ops");
        CHECK_EQ_INT(cJSON_GetArraySize(arr), 1);
        CHECK_STR(str(cJSON_GetArrayItem(arr, 0), "op"), "aten::_softmax");
    }
    cJSON_Delete(od);
    kf_free(ops);
}

static void test_cuda_counts(kf_runtime *rt)
{
    /* A CUDA signature is counted the same way; its timing goes through the GPU timer, which
     * takes no sample here (no driver, or a NULL stream outside any context). */
    kf_tensor t = tensor2(KF_DEV_CUDA, 1, 4, 16);
    static kf_sig s;
    kf_sig_begin(&s, "aten::gelu");
    kf_sig_tensor(&s, &t);
    kf_sig_str(&s, "none");
    for (int i = 0; i < 20; i++) call_eager(rt, &s);
    cJSON *doc = stats(rt);
    cJSON *r = row_for(doc, key_of(&s));
    if (CHECK(r != NULL)) {
        CHECK(num(r, "calls") == 20);
        CHECK(num(r, "fallback") == 20);
        CHECK_STR(str(r, "device"), "cuda:1");
        CHECK_STR(str(r, "time_source"), "cuda-events");
        CHECK_STR(str(r, "signature"), "gelu(f32[4,16], 'none')");
        CHECK(num(r, "time_ms") >= 0);
    }
    cJSON_Delete(doc);
}

static void test_enabled(kf_runtime *rt)
{
    kf_set_enabled(rt, 0);
    CHECK_EQ_INT(kf_enabled(rt), 0);
    kf_set_enabled(rt, 1);
    CHECK_EQ_INT(kf_enabled(rt), 1);
}

static kf_runtime *g_rt;

static void *dispatch_relu_once(void *p)
{
    call_eager(g_rt, (const kf_sig *)p);
    return NULL;
}

static void test_probe(kf_runtime *rt)
{
    static kf_sig relu, relu2, add, relu_;
    unary_sig(&relu, "aten::relu", 4);
    unary_sig(&relu2, "aten::relu", 8);
    unary_sig(&relu_, "aten::relu_", 4);
    add_sig(&add, 4);
    uint64_t key = 77;

    /* no probe running */
    CHECK_EQ_INT(kf_probe_end(rt, &key), KF_ERR_NOT_FOUND);

    kf_probe_begin(rt, "aten::relu");
    kf_call c = call_eager(rt, &add);
    CHECK(c.slot != NULL);
    call_eager(rt, &relu_); /* another op whose name starts the same */
    c = call_eager(rt, &relu);
    CHECK(c.kernel == NULL);
    call_eager(rt, &relu2); /* only the first matching call is captured */
    CHECK_EQ_INT(kf_probe_end(rt, &key), KF_OK);
    CHECK_EQ_U64(key, key_of(&relu));
    CHECK(key != key_of(&add));
    CHECK_EQ_INT(kf_probe_end(rt, &key), KF_ERR_NOT_FOUND);

    /* no matching call: not found */
    kf_probe_begin(rt, "aten::relu");
    call_eager(rt, &add);
    call_eager(rt, &relu_);
    CHECK_EQ_INT(kf_probe_end(rt, &key), KF_ERR_NOT_FOUND);

    /* the probe belongs to the thread that began it */
    g_rt = rt;
    kf_probe_begin(rt, "aten::relu");
    pthread_t th;
    CHECK_EQ_INT(pthread_create(&th, NULL, dispatch_relu_once, &relu), 0);
    pthread_join(th, NULL);
    CHECK_EQ_INT(kf_probe_end(rt, &key), KF_ERR_NOT_FOUND);
    kf_probe_begin(rt, "aten::relu");
    CHECK_EQ_INT(pthread_create(&th, NULL, dispatch_relu_once, &relu), 0);
    pthread_join(th, NULL);
    call_eager(rt, &relu2);
    CHECK_EQ_INT(kf_probe_end(rt, &key), KF_OK);
    CHECK_EQ_U64(key, key_of(&relu2));

    /* the probed call counts like any other */
    cJSON *doc = stats(rt);
    cJSON *r = row_for(doc, key_of(&relu));
    CHECK(r && num(r, "calls") == 3 && num(r, "fallback") == 3);
    cJSON_Delete(doc);
}

static void test_register(kf_runtime *rt)
{
    static kf_sig relu;
    unary_sig(&relu, "aten::relu", 32);
    uint64_t key = key_of(&relu);
    static kernel_log log;
    memset(&log, 0, sizeof log);

    /* never seen */
    CHECK_EQ_INT(kf_register_kernel(rt, 0x1234abcdull, test_kernel, &log), KF_ERR_NOT_FOUND);
    CHECK_CONTAINS(kf_runtime_errmsg(rt), "000000001234abcd");
    CHECK_EQ_INT(kf_register_kernel(rt, 0x1234abcdull, NULL, NULL), KF_ERR_NOT_FOUND);

    /* seen, but eager's outputs were never recorded */
    kf_call c = call_eager(rt, &relu);
    if (!CHECK(c.slot != NULL)) return;
    char hex[17];
    snprintf(hex, sizeof hex, "%016" PRIx64, key);
    CHECK_EQ_INT(kf_register_kernel(rt, key, test_kernel, &log), KF_ERR_UNSUPPORTED);
    CHECK_CONTAINS(kf_runtime_errmsg(rt), hex);
    kf_dispatch_begin(rt, &relu, &c);
    CHECK(c.kernel == NULL);
    CHECK(c.outs == NULL);
    kf_dispatch_end(rt, &c, 0, NULL);

    /* eager's outputs learned: registration works and the next call may be served */
    kf_dispatch_begin(rt, &relu, &c);
    kf_dispatch_start(rt, &c, 0, NULL);
    kf_out_layout lay = layout_like(32, 16);
    kf_dispatch_learn_outputs(c.slot, &lay);
    kf_dispatch_end(rt, &c, 0, NULL);
    kf_out_layout other = layout_like(99, 99);
    kf_dispatch_learn_outputs(c.slot, &other); /* first layout wins */
    CHECK_EQ_INT(kf_register_kernel(rt, key, test_kernel, &log), KF_OK);

    kf_dispatch_begin(rt, &relu, &c);
    if (CHECK(c.kernel != NULL) && CHECK(c.outs != NULL)) {
        CHECK_EQ_INT(c.outs->n, 1);
        CHECK_EQ_INT(c.outs->o[0].sizes[0], 32);
        CHECK_EQ_INT(c.outs->o[0].sizes[1], 16);
        CHECK_EQ_INT(c.outs->o[0].alias_arg, -1);
        kf_dispatch_start(rt, &c, 1, NULL);
        kf_tensor ts[2] = {tensor2(KF_DEV_CPU, 0, 32, 16), tensor2(KF_DEV_CPU, 0, 32, 16)};
        ts[0].data = (void *)(uintptr_t)0xA000;
        ts[1].data = (void *)(uintptr_t)0xB000;
        int rc = kf_kernel_launch(c.kernel, ts, 2, (void *)(uintptr_t)0x77);
        CHECK_EQ_INT(rc, 0);
        CHECK_EQ_INT(atomic_load(&log.calls), 1);
        CHECK(log.user == &log);
        CHECK_EQ_INT(log.n, 2);
        CHECK(log.data0 == (void *)(uintptr_t)0xA000);
        CHECK(log.data1 == (void *)(uintptr_t)0xB000);
        CHECK(log.stream == (void *)(uintptr_t)0x77);
        kf_dispatch_end(rt, &c, 1, NULL);
        /* a kernel's failure code comes back to the caller */
        log.ret = 5;
        CHECK_EQ_INT(kf_kernel_launch(c.kernel, ts, 2, NULL), 5);
        log.ret = 0;
    } else {
        kf_dispatch_end(rt, &c, 0, NULL);
    }

    cJSON *doc = stats(rt);
    cJSON *r = row_for(doc, key);
    if (CHECK(r != NULL)) {
        CHECK(num(r, "calls") == 4);
        CHECK(num(r, "served") == 1);
        CHECK(num(r, "fallback") == 3);
        CHECK_EQ_INT(boolean(r, "has_kernel"), 1);
    }
    cJSON_Delete(doc);

    /* a probe always runs eager, even with a kernel */
    kf_probe_begin(rt, "aten::relu");
    kf_dispatch_begin(rt, &relu, &c);
    CHECK(c.kernel == NULL);
    kf_dispatch_end(rt, &c, 0, NULL);
    uint64_t pk;
    CHECK_EQ_INT(kf_probe_end(rt, &pk), KF_OK);
    CHECK_EQ_U64(pk, key);

    /* replace the kernel, then detach it */
    static kernel_log log2;
    memset(&log2, 0, sizeof log2);
    CHECK_EQ_INT(kf_register_kernel(rt, key, test_kernel, &log2), KF_OK);
    kf_dispatch_begin(rt, &relu, &c);
    if (CHECK(c.kernel != NULL)) {
        kf_tensor t = tensor2(KF_DEV_CPU, 0, 32, 16);
        kf_kernel_launch(c.kernel, &t, 1, NULL);
        CHECK_EQ_INT(atomic_load(&log2.calls), 1);
        CHECK_EQ_INT(atomic_load(&log.calls), 2);
    }
    kf_dispatch_end(rt, &c, 0, NULL);
    CHECK_EQ_INT(kf_register_kernel(rt, key, NULL, NULL), KF_OK);
    kf_dispatch_begin(rt, &relu, &c);
    CHECK(c.kernel == NULL);
    CHECK(c.outs != NULL); /* the layout stays known */
    kf_dispatch_end(rt, &c, 0, NULL);
    doc = stats(rt);
    r = row_for(doc, key);
    CHECK(r && boolean(r, "has_kernel") == 0);
    cJSON_Delete(doc);
    /* attach again (the retired ones are freed with the runtime: ASan checks) */
    CHECK_EQ_INT(kf_register_kernel(rt, key, test_kernel, &log), KF_OK);
    kf_dispatch_begin(rt, &relu, &c);
    CHECK(c.kernel != NULL);
    kf_dispatch_end(rt, &c, 0, NULL);
}

static void test_unservable(kf_runtime *rt)
{
    static kernel_log log;
    static kf_sig s;
    kf_out_layout lay = layout_like(4, 16);

    /* an opaque argument */
    kf_tensor t = tensor2(KF_DEV_CPU, 0, 4, 16);
    kf_sig_begin(&s, "aten::bernoulli");
    kf_sig_tensor(&s, &t);
    kf_sig_opaque(&s, "Generator");
    kf_call c;
    kf_dispatch_begin(rt, &s, &c);
    if (!CHECK(c.slot != NULL)) return;
    kf_dispatch_learn_outputs(c.slot, &lay);
    kf_dispatch_end(rt, &c, 0, NULL);
    CHECK_EQ_INT(kf_register_kernel(rt, key_of(&s), test_kernel, &log), KF_ERR_UNSUPPORTED);
    kf_dispatch_begin(rt, &s, &c);
    CHECK(c.kernel == NULL);
    kf_dispatch_end(rt, &c, 0, NULL);
    CHECK_EQ_INT(kf_register_kernel(rt, key_of(&s), NULL, NULL), KF_OK); /* detach: harmless */
    cJSON *doc = stats(rt);
    cJSON *r = row_for(doc, key_of(&s));
    if (CHECK(r != NULL)) {
        CHECK_EQ_INT(boolean(r, "servable"), 0);
        CHECK_EQ_INT(boolean(r, "intercepted"), 1);
        CHECK_STR(str(r, "signature"), "bernoulli(f32[4,16], <Generator>)");
        CHECK(num(r, "calls") == 2);
    }
    cJSON_Delete(doc);

    /* too many tensors */
    kf_tensor ts[KF_SIG_MAX_TENSORS + 1];
    for (int i = 0; i <= KF_SIG_MAX_TENSORS; i++) ts[i] = t;
    kf_sig_begin(&s, "aten::cat");
    kf_sig_tensor_list(&s, ts, KF_SIG_MAX_TENSORS + 1);
    kf_sig_int(&s, 0);
    kf_dispatch_begin(rt, &s, &c);
    if (CHECK(c.slot != NULL)) kf_dispatch_learn_outputs(c.slot, &lay);
    kf_dispatch_end(rt, &c, 0, NULL);
    CHECK_EQ_INT(kf_register_kernel(rt, key_of(&s), test_kernel, &log), KF_ERR_UNSUPPORTED);

    /* a truncated signature */
    static kf_tensor many[200];
    kf_tensor t8 = t;
    t8.ndim = 8;
    for (int i = 0; i < 8; i++) t8.sizes[i] = t8.strides[i] = 1;
    for (int i = 0; i < 200; i++) many[i] = t8;
    kf_sig_begin(&s, "aten::cat");
    kf_sig_tensor_list(&s, many, 200);
    CHECK(s.flags & KF_SIG_TRUNCATED);
    kf_dispatch_begin(rt, &s, &c);
    if (CHECK(c.slot != NULL)) kf_dispatch_learn_outputs(c.slot, &lay);
    kf_dispatch_end(rt, &c, 0, NULL);
    CHECK_EQ_INT(kf_register_kernel(rt, key_of(&s), test_kernel, &log), KF_ERR_UNSUPPORTED);
    kf_dispatch_begin(rt, &s, &c);
    CHECK(c.kernel == NULL);
    kf_dispatch_end(rt, &c, 0, NULL);
    CHECK_EQ_INT(atomic_load(&log.calls), 0);
}

static void test_observed(kf_runtime *rt)
{
    kf_dispatch_observed(rt, "aten::view", 1500, 1);
    kf_dispatch_observed(rt, "aten::view", 1500, 1);
    kf_dispatch_observed(rt, "aten::view", 1500, 2);
    kf_dispatch_observed(rt, "aten::t", 100, 10);
    static kf_sig s;
    kf_sig_begin(&s, "aten::view");
    uint64_t key = key_of(&s);
    cJSON *doc = stats(rt);
    cJSON *r = row_for(doc, key);
    if (CHECK(r != NULL)) {
        CHECK_STR(str(r, "op"), "aten::view");
        CHECK_STR(str(r, "signature"), "aten::view");
        CHECK_STR(str(r, "device"), "");
        CHECK(num(r, "calls") == 4);
        CHECK(num(r, "fallback") == 4);
        CHECK(num(r, "served") == 0);
        CHECK(num(r, "timed_calls") == 3);
        CHECK(num(r, "eager_us") > 1.4999 && num(r, "eager_us") < 1.5001);
        CHECK(num(r, "time_ms") > 0.0059999 && num(r, "time_ms") < 0.0060001);
        CHECK_EQ_INT(boolean(r, "intercepted"), 0);
        CHECK_EQ_INT(boolean(r, "servable"), 0);
        CHECK_STR(str(r, "time_source"), "host-wall (observer)");
    }
    kf_sig_begin(&s, "aten::t");
    r = row_for(doc, key_of(&s));
    CHECK(r && num(r, "calls") == 10 && boolean(r, "intercepted") == 0);
    cJSON_Delete(doc);
    /* an observed op is not a signature a kernel can serve */
    static kernel_log log;
    CHECK_EQ_INT(kf_register_kernel(rt, key, test_kernel, &log), KF_ERR_NOT_FOUND);
}

/* ---- concurrency ---- */

#define N_THREADS 8
#define N_CALLS 50000
#define N_SIGS 16
#define N_SERVED 4 /* signatures 0..3 have a kernel */

typedef struct mt {
    kf_runtime *rt;
    kf_sig sigs[N_SIGS];
    _Atomic long kernel_calls;
    _Atomic int go, done;
    _Atomic int bad;
    _Atomic long stats_docs;
} mt;

typedef struct mt_arg {
    mt *m;
    int id;
} mt_arg;

static void *mt_worker(void *p)
{
    mt_arg *a = p;
    mt *m = a->m;
    while (!atomic_load(&m->go)) sched_yield();
    kf_tensor ts[2] = {tensor2(KF_DEV_CPU, 0, 4, 16), tensor2(KF_DEV_CPU, 0, 4, 16)};
    for (int i = 0; i < N_CALLS; i++) {
        int k = (i * 7 + a->id) % N_SIGS; /* 7 is odd: every signature equally often */
        kf_call c;
        kf_dispatch_begin(m->rt, &m->sigs[k], &c);
        if (!c.slot || (k < N_SERVED) != (c.kernel != NULL)) atomic_fetch_add(&m->bad, 1);
        int served = 0;
        if (c.kernel) {
            kf_dispatch_start(m->rt, &c, 1, NULL);
            served = kf_kernel_launch(c.kernel, ts, 2, NULL) == 0;
            if (!served) kf_dispatch_cancel(m->rt, &c);
        } else {
            kf_dispatch_start(m->rt, &c, 0, NULL);
        }
        kf_dispatch_end(m->rt, &c, served, NULL);
    }
    return NULL;
}

static void *mt_stats(void *p)
{
    mt *m = p;
    while (!atomic_load(&m->go)) sched_yield();
    while (!atomic_load(&m->done)) {
        char *text = kf_stats_json(m->rt);
        cJSON *doc = text ? cJSON_Parse(text) : NULL;
        if (!doc) {
            atomic_fetch_add(&m->bad, 1);
        } else {
            cJSON *r;
            cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(doc, "rows"))
            {
                double calls = num(r, "calls");
                if (calls < 0 || calls > (double)N_THREADS * N_CALLS / N_SIGS)
                    atomic_fetch_add(&m->bad, 1);
            }
        }
        cJSON_Delete(doc);
        kf_free(text);
        char *ops = kf_ops_json(m->rt);
        if (!ops) atomic_fetch_add(&m->bad, 1);
        kf_free(ops);
        atomic_fetch_add(&m->stats_docs, 1);
    }
    return NULL;
}

static void test_threads(void)
{
    static mt m;
    memset(&m, 0, sizeof m);
    m.rt = new_runtime();
    for (int k = 0; k < N_SIGS; k++) softmax_sig(&m.sigs[k], 100 + k);
    /* signatures 0..N_SERVED-1: seen once by eager (layout learned), then given a kernel */
    for (int k = 0; k < N_SERVED; k++) {
        kf_call c;
        kf_dispatch_begin(m.rt, &m.sigs[k], &c);
        kf_out_layout lay = layout_like(100 + k, 8);
        if (CHECK(c.slot != NULL)) kf_dispatch_learn_outputs(c.slot, &lay);
        kf_dispatch_end(m.rt, &c, 0, NULL);
        CHECK_EQ_INT(kf_register_kernel(m.rt, key_of(&m.sigs[k]), count_kernel, (void *)&m.kernel_calls),
                     KF_OK);
    }
    kf_reset_stats(m.rt);

    pthread_t th[N_THREADS], st;
    mt_arg args[N_THREADS];
    CHECK_EQ_INT(pthread_create(&st, NULL, mt_stats, &m), 0);
    for (int i = 0; i < N_THREADS; i++) {
        args[i].m = &m;
        args[i].id = i;
        CHECK_EQ_INT(pthread_create(&th[i], NULL, mt_worker, &args[i]), 0);
    }
    atomic_store(&m.go, 1);
    for (int i = 0; i < N_THREADS; i++) pthread_join(th[i], NULL);
    atomic_store(&m.done, 1);
    pthread_join(st, NULL);

    CHECK_EQ_INT(atomic_load(&m.bad), 0);
    CHECK(atomic_load(&m.stats_docs) > 0);
    const double per_sig = (double)N_THREADS * N_CALLS / N_SIGS;
    CHECK_EQ_INT(atomic_load(&m.kernel_calls), (long long)(N_SERVED * per_sig));
    cJSON *doc = stats(m.rt);
    CHECK_EQ_INT(n_rows(doc), N_SIGS);
    CHECK(num(doc, "dropped") == 0);
    double total = 0;
    int wrong = 0;
    for (int k = 0; k < N_SIGS; k++) {
        cJSON *r = row_for(doc, key_of(&m.sigs[k]));
        if (!r) {
            wrong++;
            continue;
        }
        double calls = num(r, "calls"), sv = num(r, "served"), fb = num(r, "fallback");
        total += calls;
        int want_served = k < N_SERVED;
        if (calls != per_sig || sv != (want_served ? per_sig : 0) ||
            fb != (want_served ? 0 : per_sig) || num(r, "time_ms") < 0) {
            wrong++;
            printf("     signature %d: calls %.0f served %.0f fallback %.0f\n", k, calls, sv, fb);
        }
    }
    CHECK_EQ_INT(wrong, 0);
    CHECK(total == (double)N_THREADS * N_CALLS);
    cJSON_Delete(doc);
    kf_runtime_free(m.rt);
}

static cJSON *evicted_host(cJSON *doc)
{
    cJSON *t = cJSON_GetObjectItem(doc, "table");
    return cJSON_GetObjectItem(cJSON_GetObjectItem(t, "evicted"), "host");
}

/* A signature table with no slot to recycle (every one pinned by a call still in flight): calls
 * are dropped and counted, never crash. Once the calls are done, slots are recycled and nothing
 * is dropped however many signatures come, with the evicted rows' calls kept in the totals. */
static void test_table_full(void)
{
    setenv("KFORGE_SIGNATURES", "10", 1); /* rounded up: one set of 16 slots */
    kf_runtime *rt = new_runtime();
    unsetenv("KFORGE_SIGNATURES");
    static kf_sig s;
    int null_slots = 0;
    const int cap = KF_SIGTABLE_WAYS;
    kf_call held[KF_SIGTABLE_WAYS];
    for (int i = 0; i < cap; i++) {
        kf_sig_begin(&s, "aten::mul.Tensor");
        kf_sig_int(&s, i);
        kf_dispatch_begin(rt, &s, &held[i]);
        null_slots += held[i].slot == NULL;
        kf_dispatch_end(rt, &held[i], 0, NULL); /* not done: the slot stays pinned */
    }
    CHECK_EQ_INT(null_slots, 0);
    kf_sig_begin(&s, "aten::mul.Tensor");
    kf_sig_int(&s, -1);
    kf_call c = call_eager(rt, &s);
    CHECK(c.slot == NULL);
    CHECK(c.kernel == NULL);
    kf_dispatch_cancel(rt, &c);
    kf_dispatch_done(rt, &c);
    kf_dispatch_observed(rt, "aten::never_seen", 10, 1);
    cJSON *doc = stats(rt);
    CHECK(num(doc, "dropped") == 2);
    CHECK_EQ_INT(n_rows(doc), cap);
    cJSON *table = cJSON_GetObjectItem(doc, "table");
    CHECK(num(table, "capacity") == cap);
    CHECK(num(table, "occupied") == cap);
    cJSON_Delete(doc);

    for (int i = 0; i < cap; i++) {
        kf_dispatch_done(rt, &held[i]);
        CHECK(held[i].slot == NULL);
        kf_dispatch_done(rt, &held[i]); /* a second time: a no-op */
    }
    null_slots = 0;
    for (int i = 0; i < 1000; i++) {
        kf_sig_begin(&s, "aten::mul.Tensor");
        kf_sig_int(&s, 1000 + i);
        c = call_eager(rt, &s);
        null_slots += c.slot == NULL;
        kf_dispatch_done(rt, &c);
    }
    CHECK_EQ_INT(null_slots, 0);
    doc = stats(rt);
    CHECK(num(doc, "dropped") == 2);
    CHECK(n_rows(doc) <= cap);
    double calls = 0;
    cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItem(doc, "rows")) calls += num(r, "calls");
    cJSON *ev = evicted_host(doc);
    CHECK(num(ev, "rows") + n_rows(doc) == 1000 + cap);
    CHECK(calls + num(ev, "calls") == 1000 + cap); /* every call is in a row or the totals */
    CHECK(num(ev, "fallback") == num(ev, "calls"));
    CHECK(num(ev, "time_ms") > 0);
    cJSON_Delete(doc);
    kf_reset_stats(rt);
    doc = stats(rt);
    CHECK(num(doc, "dropped") == 0);
    CHECK_EQ_INT(n_rows(doc), 0);
    ev = evicted_host(doc);
    CHECK(num(ev, "rows") == 0 && num(ev, "calls") == 0);
    cJSON_Delete(doc);
    kf_runtime_free(rt);
}

/* A cold first sample (10 ms: lazy kernel loading) does not make a 10 us op look hot: the
 * per-call estimate leaves it out once there are other samples; a lone sample still counts. */
static void test_cold_first_sample(kf_runtime *rt)
{
    static kf_sig s;
    softmax_sig(&s, 7);
    kf_call c = call_eager(rt, &s);
    if (!CHECK(c.slot != NULL)) return;
    kf_reset_stats(rt);
    atomic_store(&c.slot->calls, 4);
    kf_slot_add_sample(c.slot, 0, 10000000);
    cJSON *doc = stats(rt);
    cJSON *r = row_for(doc, key_of(&s));
    if (CHECK(r != NULL)) CHECK(num(r, "eager_us") > 9999 && num(r, "eager_us") < 10001);
    cJSON_Delete(doc);
    for (int i = 0; i < 3; i++) kf_slot_add_sample(c.slot, 0, 10000);
    doc = stats(rt);
    r = row_for(doc, key_of(&s));
    if (CHECK(r != NULL)) {
        CHECK(num(r, "eager_us") > 9.99 && num(r, "eager_us") < 10.01);
        CHECK(num(r, "time_ms") > 0.0399 && num(r, "time_ms") < 0.0401); /* 4 calls x 10 us */
        CHECK(num(r, "timed_calls") == 4);
    }
    cJSON_Delete(doc);
    kf_reset_stats(rt);
}

/* One sample stretched 1000x by other work on the machine (a preempted thread) does not make
 * its row's estimated time, and so its share of the recording, 250 times the others': the mean
 * counts at most 4x the fastest sample there. eager_us still reports the plain mean. */
static void test_outlier_sample(kf_runtime *rt)
{
    static kf_sig s;
    softmax_sig(&s, 9);
    kf_call c = call_eager(rt, &s);
    if (!CHECK(c.slot != NULL)) return;
    kf_reset_stats(rt);
    atomic_store(&c.slot->calls, 8);
    for (int i = 0; i < 4; i++) kf_slot_add_sample(c.slot, 0, i == 2 ? 10000000 : 10000);
    cJSON *doc = stats(rt);
    cJSON *r = row_for(doc, key_of(&s));
    if (CHECK(r != NULL)) {
        CHECK(num(r, "eager_us") > 3000); /* (10 ms + 10 us x 2) / 3 */
        CHECK(num(r, "time_ms") > 0.3199 && num(r, "time_ms") < 0.3201); /* 8 calls x 4 x 10 us */
    }
    cJSON_Delete(doc);
    kf_reset_stats(rt);
}

int main(void)
{
    test_runtime_basics();

    kf_runtime *rt = new_runtime();
    kf_runtime_set_global(rt);
    CHECK(kf_runtime_get() == rt);
    test_counts(rt);
    test_cold_first_sample(rt);
    test_outlier_sample(rt);
    test_cuda_counts(rt);
    test_enabled(rt);
    test_probe(rt);
    test_register(rt);
    test_unservable(rt);
    test_observed(rt);
    kf_runtime_free(rt);
    CHECK(kf_runtime_get() == NULL);

    test_threads();
    test_table_full();
    return check_done("test_dispatch");
}
