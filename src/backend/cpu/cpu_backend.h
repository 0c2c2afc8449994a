/* The CPU backend: host memory, a fork-join thread pool, and the ops of
 * backend.h. Scratch memory (quantized activations, attention scores) is sized
 * once at init from the largest batch so that the token loop never allocates. */
#ifndef HEARTH_CPU_BACKEND_H
#define HEARTH_CPU_BACKEND_H

#include "backend/backend.h"

typedef struct hl_cpu_limits {
    int32_t n_threads;  /* >= 1 */
    int64_t max_tokens; /* most tokens in one op (n_batch) */
    int64_t max_row;    /* longest matmul input row (max of n_embd, n_ff) */
    int64_t n_ctx;      /* longest attention span */
    bool scalar;        /* use the scalar kernels (the oracle) whatever the CPU has: op tests */
} hl_cpu_limits;

/* Errors: INVALID_ARG, OUT_OF_MEMORY, IO (threads). Free with hl_backend_cpu_free. */
hearth_status hl_backend_cpu_init(const hl_cpu_limits *limits, hl_backend **out);
void hl_backend_cpu_free(hl_backend *b);

#endif
