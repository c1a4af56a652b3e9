/* The CUDA driver API, opened at run time.
 *
 * Nothing here needs cuda.h: the few types and entry points we use are declared by hand, so the
 * C core builds and loads on machines without CUDA. A kf_cuda_driver is a plain table owned by
 * its user (no global state); open it once, then call through it. */
#ifndef KF_COMMON_CUDA_DRIVER_H
#define KF_COMMON_CUDA_DRIVER_H

#include <stddef.h>

#include "kforge.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef int kf_cu_result; /* CUresult */
typedef int kf_cu_device; /* CUdevice */
typedef void *kf_cu_context;
typedef void *kf_cu_module;
typedef void *kf_cu_function;
typedef void *kf_cu_stream;
typedef void *kf_cu_event;

enum {
    KF_CU_SUCCESS = 0,
    KF_CU_ERROR_NOT_READY = 600,
    KF_CU_ERROR_STREAM_CAPTURE_IMPLICIT = 906,
};

/* CUdevice_attribute values we query. */
enum {
    KF_CU_DEV_ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
    KF_CU_DEV_ATTR_COMPUTE_CAPABILITY_MAJOR = 75,
    KF_CU_DEV_ATTR_COMPUTE_CAPABILITY_MINOR = 76,
};

/* CUfunction_attribute values we use. */
enum {
    KF_CU_FUNC_ATTR_MAX_THREADS_PER_BLOCK = 0,
    KF_CU_FUNC_ATTR_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8,
};

/* CUstreamCaptureStatus / CUstreamCaptureMode */
enum { KF_CU_STREAM_CAPTURE_STATUS_NONE = 0, KF_CU_STREAM_CAPTURE_STATUS_ACTIVE = 1 };
enum { KF_CU_STREAM_CAPTURE_MODE_RELAXED = 2 };

typedef struct kf_cuda_driver {
    void *lib; /* libcuda.so.1; NULL until kf_cuda_driver_open succeeds */

    kf_cu_result (*init)(unsigned flags);
    kf_cu_result (*driver_get_version)(int *version);
    kf_cu_result (*get_error_string)(kf_cu_result r, const char **s);
    kf_cu_result (*get_error_name)(kf_cu_result r, const char **s);

    kf_cu_result (*device_get)(kf_cu_device *dev, int ordinal);
    kf_cu_result (*device_get_count)(int *count);
    kf_cu_result (*device_get_attribute)(int *value, int attrib, kf_cu_device dev);

    kf_cu_result (*primary_ctx_retain)(kf_cu_context *ctx, kf_cu_device dev);
    kf_cu_result (*primary_ctx_release)(kf_cu_device dev);
    kf_cu_result (*ctx_get_current)(kf_cu_context *ctx);
    kf_cu_result (*ctx_push_current)(kf_cu_context ctx);
    kf_cu_result (*ctx_pop_current)(kf_cu_context *ctx);

    kf_cu_result (*module_load_data)(kf_cu_module *mod, const void *image);
    kf_cu_result (*module_unload)(kf_cu_module mod);
    kf_cu_result (*module_get_function)(kf_cu_function *fn, kf_cu_module mod, const char *name);
    kf_cu_result (*func_get_attribute)(int *value, int attrib, kf_cu_function fn);
    kf_cu_result (*func_set_attribute)(kf_cu_function fn, int attrib, int value);
    kf_cu_result (*launch_kernel)(kf_cu_function fn, unsigned gx, unsigned gy, unsigned gz,
                                  unsigned bx, unsigned by, unsigned bz, unsigned smem,
                                  kf_cu_stream stream, void **params, void **extra);

    kf_cu_result (*stream_is_capturing)(kf_cu_stream stream, int *status);
    kf_cu_result (*thread_exchange_capture_mode)(int *mode);

    kf_cu_result (*event_create)(kf_cu_event *ev, unsigned flags);
    kf_cu_result (*event_destroy)(kf_cu_event ev);
    kf_cu_result (*event_record)(kf_cu_event ev, kf_cu_stream stream);
    kf_cu_result (*event_query)(kf_cu_event ev);
    kf_cu_result (*event_synchronize)(kf_cu_event ev);
    kf_cu_result (*event_elapsed_time)(float *ms, kf_cu_event start, kf_cu_event end);

    /* memory and streams (the forge worker's evaluator; device pointers as CUdeviceptr) */
    kf_cu_result (*ctx_set_current)(kf_cu_context ctx);
    kf_cu_result (*ctx_synchronize)(void);
    kf_cu_result (*mem_alloc)(unsigned long long *dptr, size_t bytes);
    kf_cu_result (*mem_free)(unsigned long long dptr);
    kf_cu_result (*memcpy_htod)(unsigned long long dst, const void *src, size_t bytes);
    kf_cu_result (*memcpy_dtoh)(void *dst, unsigned long long src, size_t bytes);
    kf_cu_result (*memcpy_dtod)(unsigned long long dst, unsigned long long src, size_t bytes);
    kf_cu_result (*memset_d8)(unsigned long long dst, unsigned char v, size_t n);
    kf_cu_result (*memset_d8_async)(unsigned long long dst, unsigned char v, size_t n,
                                    kf_cu_stream stream);
    kf_cu_result (*stream_create)(kf_cu_stream *stream, unsigned flags);
    kf_cu_result (*stream_destroy)(kf_cu_stream stream);
    kf_cu_result (*stream_synchronize)(kf_cu_stream stream);
    /* optional (NULL when the driver lacks them): the evaluator's low-priority stream */
    kf_cu_result (*ctx_get_stream_priority_range)(int *least, int *greatest);
    kf_cu_result (*stream_create_with_priority)(kf_cu_stream *stream, unsigned flags, int priority);
    /* page-locking host memory in place, so copies to and from it run at full bus speed */
    kf_cu_result (*mem_host_register)(void *p, size_t bytes, unsigned flags);
    kf_cu_result (*mem_host_unregister)(void *p);
} kf_cuda_driver;

/* dlopen libcuda.so.1 (`path` NULL) or `path`, and resolve every entry point above. Does not call
 * cuInit. On failure *d is zeroed and err says why (KF_ERR_CUDA). */
kf_status kf_cuda_driver_open(kf_cuda_driver *d, const char *path, char *err, size_t errcap);

/* Forget the table. The library stays mapped on purpose: the driver runs threads of its own
 * after cuInit, and other users in the process (torch) share the same handle. */
void kf_cuda_driver_close(kf_cuda_driver *d);

/* "CUDA_ERROR_INVALID_VALUE (invalid argument)" or "CUresult 999" when the driver cannot name it.
 * Writes into buf and returns it. */
const char *kf_cuda_strerror(const kf_cuda_driver *d, kf_cu_result r, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif
