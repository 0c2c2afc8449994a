/* GPU devices for the rest of the library (see gpu.h): the CUDA backend's
 * answers when the build has it, "no GPU backend" otherwise; and the
 * HEARTH_FORCE_CPU switch. */
#include "backend/gpu.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#ifdef HEARTH_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

static bool forced_cpu(void) {
    const char *v = getenv("HEARTH_FORCE_CPU");
    return v && *v && strcmp(v, "0") != 0;
}

int32_t hl_gpu_count(void) {
    if (forced_cpu()) return 0;
#ifdef HEARTH_HAVE_CUDA
    return hl_cuda_device_count(NULL);
#else
    return 0;
#endif
}

const char *hl_gpu_unavailable_reason(void) {
    if (forced_cpu()) return "HEARTH_FORCE_CPU is set";
#ifdef HEARTH_HAVE_CUDA
    const char *reason = NULL;
    return hl_cuda_device_count(&reason) > 0 ? NULL : reason;
#else
    return "this build has no CUDA backend (built without nvcc or with -DHEARTH_CUDA=OFF)";
#endif
}

static pthread_once_t fallback_once = PTHREAD_ONCE_INIT;

static void log_fallback(void) { HL_WARN("CUDA unavailable (%s); running on CPU", hl_gpu_unavailable_reason()); }

void hl_gpu_note_fallback(void) { pthread_once(&fallback_once, log_fallback); }

hearth_status hl_gpu_device_get(int32_t i, hl_gpu_device *out) {
    const int32_t n = hl_gpu_count();
    if (i < 0 || i >= n) return hl_fail(HEARTH_ERR_INVALID_ARG, "GPU device %d does not exist (%d usable)", (int)i, (int)n);
#ifdef HEARTH_HAVE_CUDA
    return hl_cuda_device_get(i, out);
#else
    (void)out;
    return HEARTH_ERR_INVALID_ARG; /* unreachable: n is 0 */
#endif
}

hearth_status hl_gpu_backend_init(int32_t i, const hl_gpu_limits *limits, hl_backend **out) {
    *out = NULL;
    const int32_t n = hl_gpu_count();
    if (i < 0 || i >= n) return hl_fail(HEARTH_ERR_INVALID_ARG, "GPU device %d does not exist (%d usable)", (int)i, (int)n);
#ifdef HEARTH_HAVE_CUDA
    return hl_backend_cuda_init(i, limits, out);
#else
    (void)limits;
    return HEARTH_ERR_INVALID_ARG;
#endif
}

void hl_gpu_backend_free(hl_backend *b) {
#ifdef HEARTH_HAVE_CUDA
    hl_backend_cuda_free(b);
#else
    (void)b; /* never made without a GPU backend */
#endif
}

hearth_status hl_gpu_dequant_host(uint32_t type, const void *src, float *dst, int64_t n) {
#ifdef HEARTH_HAVE_CUDA
    return hl_cuda_dequant_host(type, src, dst, n);
#else
    (void)type, (void)src, (void)dst, (void)n;
    return hl_fail(HEARTH_ERR_UNSUPPORTED, "this build has no GPU backend");
#endif
}
