/* The host CPU as the CPU backend's device: run-time detection of the x86
 * SIMD extensions the CPU kernels use, and the kernel level they allow.
 * Detection reads CPUID and checks with XGETBV that the OS saves the AVX
 * and AVX-512 registers (device.c). On other architectures every flag is
 * false. */
#ifndef HEARTH_BACKEND_CPU_DEVICE_H
#define HEARTH_BACKEND_CPU_DEVICE_H

#include <stdbool.h>

#include "backend/host.h" /* hl_cpu_features_str */

typedef struct hl_cpu_features {
    bool avx2, fma, f16c;
    bool avx512f, avx512bw, avx512vl, avx512vnni;
    bool zen; /* an AMD Zen core (AuthenticAMD or HygonGenuine, family 17h or later): a
                 kernel choice (vec_dot_f_avx2.c), not a feature */
} hl_cpu_features;

/* Kernel levels, each a superset of the one before. */
typedef enum hl_cpu_level {
    HL_CPU_SCALAR = 0, /* portable C, the oracle */
    HL_CPU_AVX2 = 1,   /* AVX2 + FMA + F16C (Haswell, Zen 1 and later) */
    HL_CPU_AVX512 = 2, /* AVX2 level + AVX-512 F, BW, VL and VNNI (Ice Lake, Zen 4 and later) */
    HL_CPU_LEVEL_COUNT
} hl_cpu_level;

/* The features of the CPU running this process. Thread-safe. */
hl_cpu_features hl_cpu_features_get(void);

/* The highest level this CPU supports (and this build compiled), capped by
 * the environment variable HEARTH_CPU ("scalar", "avx2", "avx512"; read once)
 * so that tests and benchmarks can run a lower level. Thread-safe. */
hl_cpu_level hl_cpu_level_best(void);

/* "scalar", "avx2", "avx512". */
const char *hl_cpu_level_name(hl_cpu_level level);

#endif
