/* The nvrtc compile backend: CUDA C++ -> cubin for one exact arch, loaded with the driver API.
 *
 * Both libnvrtc and libcuda are opened at run time and their few entry points declared here, so
 * nothing needs CUDA to build. The driver is optional: without it (a machine with no GPU, or a
 * build host) compile still works when the caller names the arch ("sm_90"); arch, load and
 * launch then fail with KF_ERR_CUDA.
 *
 * Source contract: the program defines `extern "C" __global__ void <entry>(...)` and includes
 * what it uses (<cuda_bf16.h>, <cuda_fp16.h>); nothing is prepended. Shape constants arrive as
 * #defines the caller puts in front. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cuda_driver.h"
#include "common/log.h"
#include "compile/compiler.h"

/* ---- NVRTC, declared by hand (nvrtc.h is not needed to build) ---- */

typedef int nvrtc_result;
typedef struct nvrtc_prog *nvrtc_program;
enum { NVRTC_SUCCESS = 0 };

typedef struct nvrtc_api {
    nvrtc_result (*version)(int *major, int *minor);
    const char *(*get_error_string)(nvrtc_result r);
    nvrtc_result (*create_program)(nvrtc_program *prog, const char *src, const char *name,
                                   int n_headers, const char *const *headers,
                                   const char *const *include_names);
    nvrtc_result (*destroy_program)(nvrtc_program *prog);
    nvrtc_result (*compile_program)(nvrtc_program prog, int n_options,
                                    const char *const *options);
    nvrtc_result (*get_program_log_size)(nvrtc_program prog, size_t *size);
    nvrtc_result (*get_program_log)(nvrtc_program prog, char *log);
    nvrtc_result (*get_cubin_size)(nvrtc_program prog, size_t *size);
    nvrtc_result (*get_cubin)(nvrtc_program prog, char *cubin);
} nvrtc_api;

#define NV_MAX_DEVICES 64
#define NV_SMEM_DEFAULT_MAX (48 * 1024) /* above this a kernel must opt in */
#define NV_MAGIC 0x6b666e76u           /* "kfnv": catches a kernel from another backend */

/* Fixed options besides the arch and include path; recorded in the toolchain id. No
 * --use_fast_math: results must match eager, so expf & co. stay exact. */
static const char *const nv_flags[] = {"-std=c++17", "-default-device"};

typedef struct nv_self {
    void *nvrtc_lib;
    nvrtc_api rt;
    int nvrtc_major, nvrtc_minor;
    char *include_dir; /* NULL: none */
    char headers_id[96];

    int have_driver; /* 0: compile only */
    kf_cuda_driver cu;
    int driver_version;
    char driver_err[512];

    pthread_mutex_t lock; /* guards the primary contexts */
    kf_cu_context prim[NV_MAX_DEVICES];
    kf_cu_device prim_dev[NV_MAX_DEVICES];
} nv_self;

typedef struct nv_kernel {
    unsigned magic;
    kf_cu_context ctx;
    kf_cu_module mod;
    kf_cu_function fn;
    unsigned grid[3], block[3], smem;
    int n_args;
    kf_launch gl; /* the record's n_ints and grid_from: grid.x at each launch */
} nv_kernel;

static const char *nv_errstr(const nv_self *s, nvrtc_result r)
{
    const char *e = s->rt.get_error_string(r);
    return e ? e : "unknown NVRTC error";
}

static const char *cu_err(const nv_self *s, kf_cu_result r, char *buf, size_t cap)
{
    return kf_cuda_strerror(&s->cu, r, buf, cap);
}

/* "sm_90", "sm_100", "sm_90a", "sm_100f": the only shapes we pass to --gpu-architecture. */
static int valid_arch(const char *a)
{
    if (!a || strncmp(a, "sm_", 3)) return 0;
    const char *p = a + 3;
    int digits = 0;
    while (*p >= '0' && *p <= '9') p++, digits++;
    if (digits < 2 || digits > 3) return 0;
    if (*p == 'a' || *p == 'f') p++;
    return *p == 0;
}

/* ---- toolchain / arch ---- */

static kf_status nv_toolchain(void *self, char *out, size_t cap)
{
    nv_self *s = self;
    if (!out || !cap) return KF_ERR_INVALID;
    char drv[32];
    if (s->have_driver)
        snprintf(drv, sizeof drv, "%d", s->driver_version);
    else
        snprintf(drv, sizeof drv, "none");
    int n = snprintf(out, cap, "nvrtc %d.%d; driver %s; flags: %s %s%s%s", s->nvrtc_major,
                     s->nvrtc_minor, drv, nv_flags[0], nv_flags[1],
                     s->include_dir ? "; headers " : "", s->include_dir ? s->headers_id : "");
    return n > 0 && (size_t)n < cap ? KF_OK : KF_ERR_INVALID;
}

static kf_status nv_arch(void *self, int device_index, char *out, size_t cap)
{
    nv_self *s = self;
    char eb[160];
    if (!out || !cap) return KF_ERR_INVALID;
    if (!s->have_driver) {
        snprintf(out, cap, "nvrtc: no CUDA driver to ask for the arch: %s", s->driver_err);
        return KF_ERR_CUDA;
    }
    kf_cu_device dev;
    int major = 0, minor = 0;
    kf_cu_result r = s->cu.device_get(&dev, device_index);
    if (r == KF_CU_SUCCESS)
        r = s->cu.device_get_attribute(&major, KF_CU_DEV_ATTR_COMPUTE_CAPABILITY_MAJOR, dev);
    if (r == KF_CU_SUCCESS)
        r = s->cu.device_get_attribute(&minor, KF_CU_DEV_ATTR_COMPUTE_CAPABILITY_MINOR, dev);
    if (r != KF_CU_SUCCESS) {
        snprintf(out, cap, "nvrtc: device %d: %s", device_index, cu_err(s, r, eb, sizeof eb));
        return KF_ERR_CUDA;
    }
    int n = snprintf(out, cap, "sm_%d%d", major, minor);
    return n > 0 && (size_t)n < cap ? KF_OK : KF_ERR_INVALID;
}

/* ---- compile ---- */

static kf_status nv_compile(void *self, const char *source, const kf_launch *launch,
                            const char *arch, void **blob, size_t *blob_len, char **log)
{
    nv_self *s = self;
    kf_status st;
    nvrtc_result r;
    nvrtc_program prog = NULL;
    char *incl = NULL, *plog = NULL;
    char arch_buf[64], opt_arch[96];
    if (log) *log = NULL;
    if (blob) *blob = NULL;
    if (blob_len) *blob_len = 0;
    if (!source || !launch || !blob || !blob_len) {
        if (log) *log = strdup("nvrtc: compile: missing argument");
        return KF_ERR_INVALID;
    }
    if (!arch) {
        /* no arch named: the one of device 0, if there is a driver to ask */
        st = nv_arch(s, 0, arch_buf, sizeof arch_buf);
        if (st != KF_OK) {
            if (log) *log = kf_aprintf("nvrtc: compile: no arch given; %s", arch_buf);
            return st;
        }
        arch = arch_buf;
    }
    if (!valid_arch(arch)) {
        if (log) *log = kf_aprintf("nvrtc: compile: arch \"%.40s\" is not a real GPU arch like sm_90",
                                arch);
        return KF_ERR_INVALID;
    }
    snprintf(opt_arch, sizeof opt_arch, "--gpu-architecture=%s", arch);

    const char *opts[4];
    int n_opts = 0;
    opts[n_opts++] = opt_arch;
    opts[n_opts++] = nv_flags[0];
    opts[n_opts++] = nv_flags[1];
    if (s->include_dir) {
        size_t n = strlen(s->include_dir) + 32;
        incl = malloc(n);
        if (!incl) {
            if (log) *log = strdup("nvrtc: out of memory");
            return KF_ERR_NOMEM;
        }
        snprintf(incl, n, "--include-path=%s", s->include_dir);
        opts[n_opts++] = incl;
    }

    r = s->rt.create_program(&prog, source, "kf_kernel.cu", 0, NULL, NULL);
    if (r != NVRTC_SUCCESS) {
        if (log) *log = kf_aprintf("nvrtc: nvrtcCreateProgram failed: %s", nv_errstr(s, r));
        st = KF_ERR_KERNEL;
        goto free_incl;
    }
    nvrtc_result cr = s->rt.compile_program(prog, n_opts, opts);

    /* the log, in every case: warnings on success, errors on failure */
    size_t log_size = 0;
    if (s->rt.get_program_log_size(prog, &log_size) == NVRTC_SUCCESS && log_size > 0) {
        plog = malloc(log_size + 1);
        if (plog && s->rt.get_program_log(prog, plog) == NVRTC_SUCCESS) {
            plog[log_size] = 0;
        } else {
            free(plog);
            plog = NULL;
        }
    }
    if (cr != NVRTC_SUCCESS) {
        if (log) {
            const char *head = "nvrtc: compile failed";
            const char *why = nv_errstr(s, cr);
            size_t n = strlen(head) + strlen(why) + (plog ? strlen(plog) : 0) + 8;
            *log = malloc(n);
            if (*log) snprintf(*log, n, "%s (%s)\n%s", head, why, plog ? plog : "");
        }
        st = KF_ERR_KERNEL;
        goto destroy_prog;
    }

    size_t cubin_size = 0;
    r = s->rt.get_cubin_size(prog, &cubin_size);
    if (r != NVRTC_SUCCESS || cubin_size == 0) {
        if (log)
            *log = kf_aprintf("nvrtc: no cubin produced for %s (%s)", arch,
                           r != NVRTC_SUCCESS ? nv_errstr(s, r) : "empty");
        st = KF_ERR_KERNEL;
        goto destroy_prog;
    }
    char *cubin = malloc(cubin_size);
    if (!cubin) {
        if (log) *log = strdup("nvrtc: out of memory");
        st = KF_ERR_NOMEM;
        goto destroy_prog;
    }
    r = s->rt.get_cubin(prog, cubin);
    if (r != NVRTC_SUCCESS) {
        free(cubin);
        if (log) *log = kf_aprintf("nvrtc: nvrtcGetCUBIN failed: %s", nv_errstr(s, r));
        st = KF_ERR_KERNEL;
        goto destroy_prog;
    }
    *blob = cubin;
    *blob_len = cubin_size;
    if (log) {
        *log = plog ? plog : strdup("");
        plog = NULL;
    }
    st = KF_OK;

destroy_prog:
    s->rt.destroy_program(&prog);
free_incl:
    free(plog);
    free(incl);
    return st;
}

/* ---- contexts ---- */

/* The primary context of a device, retained once per backend (released in destroy). */
static kf_status primary_ctx(nv_self *s, int device_index, kf_cu_context *ctx, char *err,
                             size_t errcap)
{
    char eb[160];
    int count = 0;
    kf_cu_result r = s->cu.device_get_count(&count);
    if (r != KF_CU_SUCCESS) {
        snprintf(err, errcap, "nvrtc: cuDeviceGetCount: %s", cu_err(s, r, eb, sizeof eb));
        return KF_ERR_CUDA;
    }
    if (device_index < 0 || device_index >= count || device_index >= NV_MAX_DEVICES) {
        snprintf(err, errcap, "nvrtc: device %d does not exist (%d devices)", device_index, count);
        return KF_ERR_INVALID;
    }
    kf_status st = KF_OK;
    pthread_mutex_lock(&s->lock);
    if (!s->prim[device_index]) {
        kf_cu_device dev;
        r = s->cu.device_get(&dev, device_index);
        if (r == KF_CU_SUCCESS) r = s->cu.primary_ctx_retain(&s->prim[device_index], dev);
        if (r != KF_CU_SUCCESS) {
            s->prim[device_index] = NULL;
            snprintf(err, errcap, "nvrtc: device %d: cannot retain its primary context: %s",
                     device_index, cu_err(s, r, eb, sizeof eb));
            st = KF_ERR_CUDA;
        } else {
            s->prim_dev[device_index] = dev;
        }
    }
    *ctx = s->prim[device_index];
    pthread_mutex_unlock(&s->lock);
    return st;
}

/* Make ctx current if it is not; *pushed says whether ctx_leave must pop. */
static kf_cu_result ctx_enter(nv_self *s, kf_cu_context ctx, int *pushed)
{
    kf_cu_context cur = NULL;
    *pushed = 0;
    if (s->cu.ctx_get_current(&cur) == KF_CU_SUCCESS && cur == ctx) return KF_CU_SUCCESS;
    kf_cu_result r = s->cu.ctx_push_current(ctx);
    if (r == KF_CU_SUCCESS) *pushed = 1;
    return r;
}

static void ctx_leave(nv_self *s, int pushed)
{
    kf_cu_context dummy;
    if (pushed) s->cu.ctx_pop_current(&dummy);
}

/* ---- load / launch / unload ---- */

static kf_status nv_load(void *self, const void *blob, size_t blob_len, const kf_launch *launch,
                         int device_index, kf_compiled **out, char *err, size_t errcap)
{
    nv_self *s = self;
    char eb[160];
    kf_status st;
    kf_cu_result r;
    if (out) *out = NULL;
    if (!blob || !launch || !out || blob_len < 64 || memcmp(blob, "\x7f" "ELF", 4) != 0) {
        snprintf(err, errcap, "nvrtc: load: not a cubin (missing or bad blob)");
        return KF_ERR_INVALID;
    }
    if (launch->n_args < 1 || launch->n_args > KF_LAUNCH_MAX_ARGS ||
        strnlen(launch->entry, KF_ENTRY_MAX) == KF_ENTRY_MAX) {
        snprintf(err, errcap, "nvrtc: load: malformed launch record");
        return KF_ERR_INVALID;
    }
    if (!s->have_driver) {
        snprintf(err, errcap, "nvrtc: load: no CUDA driver: %s", s->driver_err);
        return KF_ERR_CUDA;
    }
    kf_cu_context ctx;
    st = primary_ctx(s, device_index, &ctx, err, errcap);
    if (st != KF_OK) return st;

    nv_kernel *k = calloc(1, sizeof *k);
    if (!k) {
        snprintf(err, errcap, "nvrtc: load: out of memory");
        return KF_ERR_NOMEM;
    }
    k->magic = NV_MAGIC;
    k->ctx = ctx;
    memcpy(k->grid, launch->grid, sizeof k->grid);
    memcpy(k->block, launch->block, sizeof k->block);
    k->smem = launch->smem;
    k->n_args = launch->n_args + launch->n_ints; /* pointers, then launch-time sizes */
    k->gl = *launch;

    /* Relaxed capture mode: our driver calls must not invalidate a graph capture that another
     * thread runs in global mode. */
    int mode = KF_CU_STREAM_CAPTURE_MODE_RELAXED;
    int relaxed = s->cu.thread_exchange_capture_mode(&mode) == KF_CU_SUCCESS;
    int pushed = 0;
    r = ctx_enter(s, ctx, &pushed);
    if (r != KF_CU_SUCCESS) {
        snprintf(err, errcap, "nvrtc: load: cannot make device %d current: %s", device_index,
                 cu_err(s, r, eb, sizeof eb));
        st = KF_ERR_CUDA;
        goto restore_mode;
    }
    /* Callers never load during capture; the legacy stream sees a capture on any blocking
     * stream of the context (IMPLICIT), which is the cheap check there is. */
    int capturing = KF_CU_STREAM_CAPTURE_STATUS_NONE;
    r = s->cu.stream_is_capturing(NULL, &capturing);
    if (r == KF_CU_ERROR_STREAM_CAPTURE_IMPLICIT ||
        (r == KF_CU_SUCCESS && capturing != KF_CU_STREAM_CAPTURE_STATUS_NONE)) {
        snprintf(err, errcap, "nvrtc: load: refused while a CUDA graph is being captured");
        st = KF_ERR_UNSUPPORTED;
        goto leave_ctx;
    }

    r = s->cu.module_load_data(&k->mod, blob);
    if (r != KF_CU_SUCCESS) {
        snprintf(err, errcap, "nvrtc: load: cuModuleLoadData: %s", cu_err(s, r, eb, sizeof eb));
        st = KF_ERR_CUDA;
        k->mod = NULL;
        goto leave_ctx;
    }
    r = s->cu.module_get_function(&k->fn, k->mod, launch->entry);
    if (r != KF_CU_SUCCESS) {
        snprintf(err, errcap,
                 "nvrtc: load: no kernel \"%s\" in the cubin (is it extern \"C\" __global__?): %s",
                 launch->entry, cu_err(s, r, eb, sizeof eb));
        st = KF_ERR_KERNEL;
        goto unload_mod;
    }
    /* A block larger than the kernel's register budget allows would fail at every launch. */
    int max_threads = 0;
    unsigned threads = launch->block[0] * launch->block[1] * launch->block[2];
    r = s->cu.func_get_attribute(&max_threads, KF_CU_FUNC_ATTR_MAX_THREADS_PER_BLOCK, k->fn);
    if (r == KF_CU_SUCCESS && max_threads > 0 && threads > (unsigned)max_threads) {
        snprintf(err, errcap,
                 "nvrtc: load: \"%s\" can run at most %d threads per block (registers), the "
                 "record asks for %u",
                 launch->entry, max_threads, threads);
        st = KF_ERR_UNSUPPORTED;
        goto unload_mod;
    }
    if (launch->smem > NV_SMEM_DEFAULT_MAX) {
        int optin = 0;
        r = s->cu.device_get_attribute(&optin, KF_CU_DEV_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                       s->prim_dev[device_index]);
        if (r == KF_CU_SUCCESS && optin > 0 && launch->smem > (unsigned)optin) {
            snprintf(err, errcap, "nvrtc: load: %u bytes of shared memory, device %d allows %d",
                     launch->smem, device_index, optin);
            st = KF_ERR_UNSUPPORTED;
            goto unload_mod;
        }
        r = s->cu.func_set_attribute(k->fn, KF_CU_FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     (int)launch->smem);
        if (r != KF_CU_SUCCESS) {
            snprintf(err, errcap, "nvrtc: load: cannot allow %u bytes of shared memory: %s",
                     launch->smem, cu_err(s, r, eb, sizeof eb));
            st = KF_ERR_CUDA;
            goto unload_mod;
        }
    }
    ctx_leave(s, pushed);
    if (relaxed) s->cu.thread_exchange_capture_mode(&mode);
    *out = (kf_compiled *)k;
    return KF_OK;

unload_mod:
    s->cu.module_unload(k->mod);
leave_ctx:
    ctx_leave(s, pushed);
restore_mode:
    if (relaxed) s->cu.thread_exchange_capture_mode(&mode);
    free(k);
    return st;
}

static int nv_launch(void *self, kf_compiled *kc, void *const *ptrs, int n, void *stream)
{
    nv_self *s = self;
    nv_kernel *k = (nv_kernel *)kc;
    if (!k || k->magic != NV_MAGIC || !ptrs || n != k->n_args) return -1;
    /* cuLaunchKernel wants the address of each argument value */
    void *params[KF_LAUNCH_MAX_ARGS];
    for (int i = 0; i < n; i++) params[i] = (void *)&ptrs[i];
    /* a family kernel's grid follows its launch-time extent (compiler.h, "grid_from") */
    int64_t iv[KF_LAUNCH_MAX_INTS];
    for (int j = 0; j < k->gl.n_ints; j++) iv[j] = (int64_t)(intptr_t)ptrs[k->gl.n_args + j];
    unsigned gx;
    if (kf_launch_grid_x(&k->gl, iv, &gx) != KF_OK) return -1;
    int pushed;
    kf_cu_result r = ctx_enter(s, k->ctx, &pushed);
    if (r != KF_CU_SUCCESS) return r;
    r = s->cu.launch_kernel(k->fn, gx, k->grid[1], k->grid[2], k->block[0], k->block[1],
                            k->block[2], k->smem, stream, params, NULL);
    ctx_leave(s, pushed);
    return r;
}

static void nv_unload(void *self, kf_compiled *kc)
{
    nv_self *s = self;
    nv_kernel *k = (nv_kernel *)kc;
    if (!k) return;
    if (k->magic != NV_MAGIC) {
        KF_ERROR("nvrtc: unload of a kernel this backend did not load");
        return;
    }
    int mode = KF_CU_STREAM_CAPTURE_MODE_RELAXED;
    int relaxed = s->cu.thread_exchange_capture_mode(&mode) == KF_CU_SUCCESS;
    int pushed;
    if (ctx_enter(s, k->ctx, &pushed) == KF_CU_SUCCESS) {
        kf_cu_result r = s->cu.module_unload(k->mod);
        if (r != KF_CU_SUCCESS) {
            char eb[160];
            KF_WARN("nvrtc: cuModuleUnload: %s", cu_err(s, r, eb, sizeof eb));
        }
        ctx_leave(s, pushed);
    }
    if (relaxed) s->cu.thread_exchange_capture_mode(&mode);
    k->magic = 0;
    free(k);
}

static void nv_destroy(void *self)
{
    nv_self *s = self;
    if (!s) return;
    if (s->have_driver)
        for (int i = 0; i < NV_MAX_DEVICES; i++)
            if (s->prim[i]) s->cu.primary_ctx_release(s->prim_dev[i]);
    kf_cuda_driver_close(&s->cu);
    /* libnvrtc (and its builtins) stay mapped: NVRTC keeps process-wide state (allocator pools,
     * exit handlers) that must not outlive its code. dlopen of the same library again later
     * returns the same mapping. */
    pthread_mutex_destroy(&s->lock);
    free(s->include_dir);
    free(s);
}

/* ---- create ---- */

static void *sym(void *lib, const char *name, int *missing)
{
    void *p = dlsym(lib, name);
    if (!p) *missing = 1;
    return p;
}

/* NVRTC dlopens libnvrtc-builtins.so.X.Y at its first compile and relies on its own RUNPATH
 * ($ORIGIN) to find it. That search is lost when dlopen is intercepted (ASan) or when libnvrtc
 * came from an explicit path, so load it from libnvrtc's own directory first; NVRTC's later
 * dlopen by soname then finds it loaded. Missing is not an error here: NVRTC will say. */
static void preload_builtins(nv_self *s)
{
    Dl_info info;
    if (!dladdr(*(void **)&s->rt.version, &info) || !info.dli_fname) return;
    const char *slash = strrchr(info.dli_fname, '/');
    if (!slash) return;
    char p[4200];
    snprintf(p, sizeof p, "%.*s/libnvrtc-builtins.so.%d.%d", (int)(slash - info.dli_fname),
             info.dli_fname, s->nvrtc_major, s->nvrtc_minor);
    if (!dlopen(p, RTLD_NOW | RTLD_LOCAL)) KF_DEBUG("nvrtc: no %s (%s)", p, dlerror());
}

/* Open NVRTC from `path`, else $KFORGE_NVRTC, else the usual sonames. */
static kf_status open_nvrtc(nv_self *s, const char *path, char *err, size_t errcap)
{
    static const char *const names[] = {
        "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
        /* CUDA images often leave the toolkit's lib dir out of the loader path */
        "/usr/local/cuda/lib64/libnvrtc.so.13", "/usr/local/cuda/lib64/libnvrtc.so.12",
        "/usr/local/cuda/lib64/libnvrtc.so",
    };
    const char *env = getenv("KFORGE_NVRTC");
    char last[256] = "";
    if (path || (env && *env)) {
        const char *p = path ? path : env;
        s->nvrtc_lib = dlopen(p, RTLD_NOW | RTLD_LOCAL);
        if (!s->nvrtc_lib) {
            const char *why = dlerror();
            snprintf(err, errcap, "NVRTC not available: cannot open %s%s: %s", p,
                     path ? "" : " (from KFORGE_NVRTC)", why ? why : "unknown error");
            return KF_ERR_CUDA;
        }
    } else {
        for (size_t i = 0; i < sizeof names / sizeof names[0] && !s->nvrtc_lib; i++) {
            s->nvrtc_lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
            if (!s->nvrtc_lib) {
                const char *why = dlerror();
                snprintf(last, sizeof last, "%s", why ? why : "");
            }
        }
        if (!s->nvrtc_lib) {
            snprintf(err, errcap,
                     "NVRTC not available: none of libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so "
                     "(loader path or /usr/local/cuda/lib64) could be opened; set KFORGE_NVRTC to "
                     "its path (last error: %s)",
                     last);
            return KF_ERR_CUDA;
        }
    }
    int missing = 0;
    nvrtc_api *a = &s->rt;
    *(void **)&a->version = sym(s->nvrtc_lib, "nvrtcVersion", &missing);
    *(void **)&a->get_error_string = sym(s->nvrtc_lib, "nvrtcGetErrorString", &missing);
    *(void **)&a->create_program = sym(s->nvrtc_lib, "nvrtcCreateProgram", &missing);
    *(void **)&a->destroy_program = sym(s->nvrtc_lib, "nvrtcDestroyProgram", &missing);
    *(void **)&a->compile_program = sym(s->nvrtc_lib, "nvrtcCompileProgram", &missing);
    *(void **)&a->get_program_log_size = sym(s->nvrtc_lib, "nvrtcGetProgramLogSize", &missing);
    *(void **)&a->get_program_log = sym(s->nvrtc_lib, "nvrtcGetProgramLog", &missing);
    *(void **)&a->get_cubin_size = sym(s->nvrtc_lib, "nvrtcGetCUBINSize", &missing);
    *(void **)&a->get_cubin = sym(s->nvrtc_lib, "nvrtcGetCUBIN", &missing);
    if (missing) {
        snprintf(err, errcap, "NVRTC library lacks an entry point we need (older than 11.1?)");
        dlclose(s->nvrtc_lib); /* never called into: safe to close */
        s->nvrtc_lib = NULL;
        return KF_ERR_CUDA;
    }
    if (a->version(&s->nvrtc_major, &s->nvrtc_minor) != NVRTC_SUCCESS) {
        snprintf(err, errcap, "NVRTC: nvrtcVersion failed");
        return KF_ERR_CUDA;
    }
    preload_builtins(s);
    return KF_OK;
}

/* What the headers in include_dir are: "cuda 13000" from cuda.h, else the path itself. */
static void describe_headers(nv_self *s)
{
    snprintf(s->headers_id, sizeof s->headers_id, "%.90s", s->include_dir);
    char p[4200];
    snprintf(p, sizeof p, "%s/cuda.h", s->include_dir);
    FILE *f = fopen(p, "r");
    if (!f) return;
    char line[256];
    int v;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, " #define CUDA_VERSION %d", &v) == 1) {
            snprintf(s->headers_id, sizeof s->headers_id, "cuda %d", v);
            break;
        }
    }
    fclose(f);
}

/* The driver is optional: record why it is missing, for arch/load to report. */
static void open_driver(nv_self *s)
{
    char eb[160];
    if (kf_cuda_driver_open(&s->cu, NULL, s->driver_err, sizeof s->driver_err) != KF_OK) return;
    kf_cu_result r = s->cu.init(0);
    if (r == KF_CU_SUCCESS) r = s->cu.driver_get_version(&s->driver_version);
    if (r != KF_CU_SUCCESS) {
        snprintf(s->driver_err, sizeof s->driver_err, "cuInit: %s", cu_err(s, r, eb, sizeof eb));
        kf_cuda_driver_close(&s->cu);
        return;
    }
    s->have_driver = 1;
}

kf_status kf_compiler_nvrtc_create(kf_compiler_i *out, const char *nvrtc_path,
                                   const char *include_dir, char *err, size_t errcap)
{
    char dummy[1];
    if (!err || !errcap) err = dummy, errcap = sizeof dummy;
    err[0] = 0;
    if (!out) {
        snprintf(err, errcap, "nvrtc: no output table");
        return KF_ERR_INVALID;
    }
    memset(out, 0, sizeof *out);
    nv_self *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errcap, "nvrtc: out of memory");
        return KF_ERR_NOMEM;
    }
    pthread_mutex_init(&s->lock, NULL);
    kf_status st = open_nvrtc(s, nvrtc_path, err, errcap);
    if (st != KF_OK) goto fail;
    if (include_dir && *include_dir) {
        s->include_dir = strdup(include_dir);
        if (!s->include_dir) {
            snprintf(err, errcap, "nvrtc: out of memory");
            st = KF_ERR_NOMEM;
            goto fail;
        }
        describe_headers(s);
    }
    open_driver(s);
    if (!s->have_driver)
        KF_INFO("nvrtc %d.%d: compile only (%s)", s->nvrtc_major, s->nvrtc_minor, s->driver_err);

    *out = (kf_compiler_i){
        /* .name      = */ "nvrtc",
        /* .toolchain = */ nv_toolchain,
        /* .arch      = */ nv_arch,
        /* .compile   = */ nv_compile,
        /* .load      = */ nv_load,
        /* .launch    = */ nv_launch,
        /* .unload    = */ nv_unload,
        /* .destroy   = */ nv_destroy,
        /* .self      = */ s,
    };
    return KF_OK;

fail:
    nv_destroy(s);
    return st;
}
