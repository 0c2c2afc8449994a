/* The CPU backend as the rest of the library sees it, like gpu.h for GPUs:
 * instances on the host (the CPU backend is built into every build), the
 * CPU facts for the build info, and its registry entry. What an instance
 * can run is asked of it (supports_op); nothing outside src/backend/cpu/
 * includes that folder's headers, except the tests of its kernels. */
#ifndef HEARTH_BACKEND_HOST_H
#define HEARTH_BACKEND_HOST_H

#include "backend/backend.h"
#include "backend/registry.h"

/* What an instance's scratch is sized for (quantized activations, attention
 * scores): the token loop never allocates. */
typedef struct hl_cpu_limits {
    int32_t n_threads;  /* >= 1 */
    int64_t max_tokens; /* most tokens in one op (n_batch); 0: an instance with no
                           threads or scratch, which holds weights and answers
                           supports_op but runs no op */
    int64_t max_row;    /* longest matmul input row (max of n_embd, n_ff, n_head * head_dim) */
    int64_t n_ctx;      /* longest attention span */
    bool scalar;        /* use the scalar kernels (the oracle) whatever the CPU has: op tests */
    bool flash_attn;    /* attention by tiles with an online softmax (backend/cpu/flash_attn.c)
                           rather than in llama.cpp's order without flash attention */
} hl_cpu_limits;

/* Errors: INVALID_ARG, OUT_OF_MEMORY, IO (threads). Free with hl_backend_cpu_free
 * (NULL is a no-op; the instance's iface->free too). */
hearth_status hl_backend_cpu_init(const hl_cpu_limits *limits, hl_backend **out);
/* Bytes of scratch an instance with these limits allocates (hl_backend_cpu_init
 * allocates exactly these buffers); 0 for max_tokens 0. Pure. */
size_t hl_cpu_scratch_bytes(const hl_cpu_limits *limits);
void hl_backend_cpu_free(hl_backend *b);

/* The detected SIMD features as a static string, e.g. "avx2 fma f16c avx512f
 * avx512bw avx512vl avx512vnni", or "none". Thread-safe. */
const char *hl_cpu_features_str(void);

/* The registry's host entry (registry.h; cpu/device.c): its one device is
 * this machine; its init makes instances that only hold weights. */
extern const hl_backend_reg hl_cpu_backend;

#endif
