// The module's entry (see cuda_backend.h): its one exported function, which
// takes the library's host services and returns the table, and the
// forwarders that give the .cu files hl_fail, hl_log, hl_calloc and the type
// table through those services. Device probing is device.cu's, the instance
// backend.cu's.
#include <stdarg.h>
#include <stdio.h>

#include "backend/cuda/common.cuh"

// quant.h (hl_row_size) is C11: its _Static_assert is C++'s static_assert.
#define _Static_assert static_assert
extern "C" {
#include "base/log.h"
#include "quant/quant.h"
}
#undef _Static_assert

// ------------------------------------------------------ host services --

static const hl_cuda_host *host;

extern "C" hearth_status hl_fail(hearth_status st, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return host->fail(st, msg);
}

extern "C" void hl_log(hearth_log_level level, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    host->log(level, msg);
}

extern "C" void *hl_calloc_at(size_t n, size_t size, const char *file, int line) {
    return host->calloc_at(n, size, file, line);
}

extern "C" void *hl_malloc_at(size_t n, const char *file, int line) { return host->malloc_at(n, file, line); }

extern "C" const ggml_type_info *hl_ggml_type_get(uint32_t type) { return host->ggml_type_get(type); }

extern "C" size_t hl_row_size(uint32_t type, int64_t n) { return host->row_size(type, n); }

extern "C" int64_t hl_tensor_nelements(const hl_tensor *t) { return host->tensor_nelements(t); }

// -------------------------------------------------------------- entry --

// The loader calls it once per process (pthread_once), before anything else.
extern "C" __attribute__((visibility("default"))) const hl_cuda_module *hl_cuda_module_entry(uint32_t version,
                                                                                             const hl_cuda_host *h) {
    static hl_cuda_module table = {
        HL_CUDA_MODULE_VERSION, 0, hl_cuda_device_count, hl_cuda_device_get, hl_backend_cuda_init, hl_cuda_dequant_host,
    };
    table.abi = hl_cuda_abi();
    if (version == HL_CUDA_MODULE_VERSION) host = h;
    return &table;
}
