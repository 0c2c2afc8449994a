/* The registry's one list of entries (see registry.h): the host's (the CPU
 * backend), then the backends that can offload, in the order their devices
 * are numbered. A backend the build lacks keeps an entry that says why, so
 * the reasons a machine has no offload device name every backend. Adding a
 * backend is one entry here. */
#include "backend/registry.h"

#include "backend/cuda/cuda_backend.h"
#include "backend/host.h"
#include "backend/opencl/opencl_backend.h"

/* The entry of a backend left out of the build: `needs` is what its
 * detection looks for, `option` the CMake switch (HEARTH_<option>). */
#define HL_MISSING(name_, label_, needs, option)                                                                       \
    &(const hl_backend_reg) {                                                                                          \
        .name = name_, .label = label_,                                                                                \
        .missing = "this build has no " label_ " backend (built without " needs " or with -DHEARTH_" option "=OFF)"    \
    }

static const hl_backend_reg *const entries[] = {
    &hl_cpu_backend,
#ifdef HEARTH_HAVE_CUDA
    &hl_cuda_backend,
#else
    HL_MISSING("cuda", "CUDA", "nvcc", "CUDA"),
#endif
#ifdef HEARTH_HAVE_OPENCL
    &hl_opencl_backend,
#else
    HL_MISSING("opencl", "OpenCL", "OpenCL headers", "OPENCL"),
#endif
};

#define N_ENTRIES (int)(sizeof entries / sizeof entries[0])

const hl_backend_reg *hl_backend_reg_at(int k) {
    for (int i = 0; i < N_ENTRIES && k >= 0; i++)
        if (!entries[i]->host && k-- == 0) return entries[i];
    return NULL;
}

const hl_backend_reg *hl_backend_reg_host(void) {
    int i = 0;
    while (!entries[i]->host) i++; /* the list has one */
    return entries[i];
}

int32_t hl_backend_reg_devices(const hl_backend_reg *r, const char **reason) {
    if (!r->missing) return r->device_count(reason);
    *reason = r->missing;
    return 0;
}
