#include "common/cuda_driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* Look `a` up, then its older name `b` (drivers before the _v2 entry point only have `b`). */
static void *sym2(void *lib, const char *a, const char *b)
{
    void *p = dlsym(lib, a);
    if (!p && b) p = dlsym(lib, b);
    return p;
}

kf_status kf_cuda_driver_open(kf_cuda_driver *d, const char *path, char *err, size_t errcap)
{
    memset(d, 0, sizeof *d);
    if (!path) path = "libcuda.so.1";
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        snprintf(err, errcap, "CUDA driver not available: cannot open %s: %s", path,
                 why ? why : "unknown error");
        return KF_ERR_CUDA;
    }

    /* One row per entry point: where it goes, its current name, an older fallback name. */
    struct {
        void **slot;
        const char *name, *old;
    } const tab[] = {
        {(void **)&d->init, "cuInit", NULL},
        {(void **)&d->driver_get_version, "cuDriverGetVersion", NULL},
        {(void **)&d->get_error_string, "cuGetErrorString", NULL},
        {(void **)&d->get_error_name, "cuGetErrorName", NULL},
        {(void **)&d->device_get, "cuDeviceGet", NULL},
        {(void **)&d->device_get_count, "cuDeviceGetCount", NULL},
        {(void **)&d->device_get_attribute, "cuDeviceGetAttribute", NULL},
        {(void **)&d->primary_ctx_retain, "cuDevicePrimaryCtxRetain", NULL},
        {(void **)&d->primary_ctx_release, "cuDevicePrimaryCtxRelease_v2",
         "cuDevicePrimaryCtxRelease"},
        {(void **)&d->ctx_get_current, "cuCtxGetCurrent", NULL},
        {(void **)&d->ctx_push_current, "cuCtxPushCurrent_v2", "cuCtxPushCurrent"},
        {(void **)&d->ctx_pop_current, "cuCtxPopCurrent_v2", "cuCtxPopCurrent"},
        {(void **)&d->module_load_data, "cuModuleLoadData", NULL},
        {(void **)&d->module_unload, "cuModuleUnload", NULL},
        {(void **)&d->module_get_function, "cuModuleGetFunction", NULL},
        {(void **)&d->func_get_attribute, "cuFuncGetAttribute", NULL},
        {(void **)&d->func_set_attribute, "cuFuncSetAttribute", NULL},
        {(void **)&d->launch_kernel, "cuLaunchKernel", NULL},
        {(void **)&d->stream_is_capturing, "cuStreamIsCapturing", NULL},
        {(void **)&d->thread_exchange_capture_mode, "cuThreadExchangeStreamCaptureMode", NULL},
        {(void **)&d->event_create, "cuEventCreate", NULL},
        {(void **)&d->event_destroy, "cuEventDestroy_v2", "cuEventDestroy"},
        {(void **)&d->event_record, "cuEventRecord", NULL},
        {(void **)&d->event_query, "cuEventQuery", NULL},
        {(void **)&d->event_synchronize, "cuEventSynchronize", NULL},
        {(void **)&d->event_elapsed_time, "cuEventElapsedTime_v2", "cuEventElapsedTime"},
        {(void **)&d->ctx_set_current, "cuCtxSetCurrent", NULL},
        {(void **)&d->ctx_synchronize, "cuCtxSynchronize", NULL},
        {(void **)&d->mem_alloc, "cuMemAlloc_v2", NULL},
        {(void **)&d->mem_free, "cuMemFree_v2", NULL},
        {(void **)&d->memcpy_htod, "cuMemcpyHtoD_v2", NULL},
        {(void **)&d->memcpy_dtoh, "cuMemcpyDtoH_v2", NULL},
        {(void **)&d->memcpy_dtod, "cuMemcpyDtoD_v2", NULL},
        {(void **)&d->memset_d8, "cuMemsetD8_v2", NULL},
        {(void **)&d->memset_d8_async, "cuMemsetD8Async", NULL},
        {(void **)&d->stream_create, "cuStreamCreate", NULL},
        {(void **)&d->stream_destroy, "cuStreamDestroy_v2", NULL},
        {(void **)&d->stream_synchronize, "cuStreamSynchronize", NULL},
        {(void **)&d->mem_host_register, "cuMemHostRegister_v2", "cuMemHostRegister"},
        {(void **)&d->mem_host_unregister, "cuMemHostUnregister", NULL},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
        *tab[i].slot = sym2(lib, tab[i].name, tab[i].old);
        if (!*tab[i].slot) {
            snprintf(err, errcap, "CUDA driver %s lacks %s (driver too old?)", path, tab[i].name);
            memset(d, 0, sizeof *d); /* the library stays mapped: see kf_cuda_driver_close */
            return KF_ERR_CUDA;
        }
    }
    /* optional: a driver without them still runs the evaluator on a default-priority stream */
    d->ctx_get_stream_priority_range =
        (kf_cu_result (*)(int *, int *))sym2(lib, "cuCtxGetStreamPriorityRange", NULL);
    d->stream_create_with_priority =
        (kf_cu_result (*)(kf_cu_stream *, unsigned, int))sym2(lib, "cuStreamCreateWithPriority", NULL);
    d->lib = lib;
    return KF_OK;
}

void kf_cuda_driver_close(kf_cuda_driver *d)
{
    if (d) memset(d, 0, sizeof *d);
}

const char *kf_cuda_strerror(const kf_cuda_driver *d, kf_cu_result r, char *buf, size_t cap)
{
    const char *name = NULL, *desc = NULL;
    if (d && d->lib) {
        if (d->get_error_name(r, &name) != KF_CU_SUCCESS) name = NULL;
        if (d->get_error_string(r, &desc) != KF_CU_SUCCESS) desc = NULL;
    }
    if (name && desc)
        snprintf(buf, cap, "%s (%s)", name, desc);
    else
        snprintf(buf, cap, "CUresult %d", r);
    return buf;
}
