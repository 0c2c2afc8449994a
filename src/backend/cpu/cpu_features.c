/* CPUID-based feature detection for choosing the CPU kernels at run time. */
#include "backend/cpu/cpu_features.h"

#include <pthread.h>
#include <string.h>

hl_cpu_features hl_cpu_features_get(void) {
    hl_cpu_features f = {0};
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init(); /* needed if called before constructors run */
    f.avx2 = __builtin_cpu_supports("avx2");
    f.fma = __builtin_cpu_supports("fma");
    f.f16c = __builtin_cpu_supports("f16c");
    f.avx512f = __builtin_cpu_supports("avx512f");
    f.avx512bw = __builtin_cpu_supports("avx512bw");
    f.avx512vl = __builtin_cpu_supports("avx512vl");
    f.avx512vnni = __builtin_cpu_supports("avx512vnni");
#endif
    return f;
}

hl_cpu_level hl_cpu_level_best(void) {
    const hl_cpu_features f = hl_cpu_features_get();
    return f.avx2 && f.fma && f.f16c ? HL_CPU_AVX2 : HL_CPU_SCALAR;
}

const char *hl_cpu_level_name(hl_cpu_level level) {
    switch (level) {
    case HL_CPU_SCALAR: return "scalar";
    case HL_CPU_AVX2: return "avx2";
    default: return "unknown";
    }
}

static char features_str[128];
static pthread_once_t features_once = PTHREAD_ONCE_INIT;

static void features_str_init(void) {
    const hl_cpu_features f = hl_cpu_features_get();
    const struct { bool on; const char *name; } flags[] = {
        {f.avx2, "avx2"},         {f.fma, "fma"},           {f.f16c, "f16c"},
        {f.avx512f, "avx512f"},   {f.avx512bw, "avx512bw"}, {f.avx512vl, "avx512vl"},
        {f.avx512vnni, "avx512vnni"},
    };
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        if (!flags[i].on) continue;
        if (features_str[0]) strcat(features_str, " ");
        strcat(features_str, flags[i].name);
    }
    if (!features_str[0]) strcpy(features_str, "none");
}

const char *hl_cpu_features_str(void) {
    pthread_once(&features_once, features_str_init);
    return features_str;
}
