/* The host CPU as the CPU backend's device: CPUID-based feature detection
 * for choosing the CPU kernels at run time, the kernel level it allows, and
 * the registry's host entry (hl_cpu_backend). */
#include "backend/cpu/device.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

/* XCR0: which register states the OS saves (Intel SDM vol. 1, 13.3). */
static uint64_t xgetbv0(void) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t)hi << 32 | lo;
}

/* CPUID leaf 0's vendor string (EBX, EDX, ECX) and the family in leaf 1's
 * EAX, leaf1_eax (bits 8-11, plus bits 20-27 where those are 0xf; AMD's
 * family 17h is Zen 1 and 2, 19h Zen 3 and 4, 1Ah Zen 5). */
static bool is_zen(unsigned leaf1_eax) {
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
    char vendor[13];
    memcpy(vendor, &b, 4), memcpy(vendor + 4, &d, 4), memcpy(vendor + 8, &c, 4);
    vendor[12] = 0;
    if (strcmp(vendor, "AuthenticAMD") != 0 && strcmp(vendor, "HygonGenuine") != 0) return false;
    const unsigned base = leaf1_eax >> 8 & 0xf, family = base == 0xf ? 0xf + (leaf1_eax >> 20 & 0xff) : base;
    return family >= 0x17;
}
#endif

/* CPUID leaf 1 (ECX: FMA bit 12, OSXSAVE 27, AVX 28, F16C 29) and leaf 7
 * (EBX: AVX2 bit 5, AVX512F 16, AVX512BW 30, AVX512VL 31; ECX: AVX512_VNNI
 * 11), each counted only when the OS saves the registers it needs (XCR0 bits
 * 1-2 for AVX, 5-7 for AVX-512). Read directly rather than through
 * __builtin_cpu_supports, which not every compiler knows all names of. */
static hl_cpu_features detect(void) {
    hl_cpu_features f = {0};
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & 1u << 27) || !(c & 1u << 28)) return f;
    const uint64_t xcr0 = xgetbv0();
    if ((xcr0 & 0x6) != 0x6) return f;
    f.zen = is_zen(a);
    f.fma = c >> 12 & 1;
    f.f16c = c >> 29 & 1;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
    f.avx2 = b >> 5 & 1;
    if ((xcr0 & 0xe0) == 0xe0) {
        f.avx512f = b >> 16 & 1;
        f.avx512bw = b >> 30 & 1;
        f.avx512vl = b >> 31 & 1;
        f.avx512vnni = c >> 11 & 1;
    }
#endif
    return f;
}

/* CPUID traps to the hypervisor in a VM (microseconds), and kernels are looked
 * up per op: detect once. */
static hl_cpu_features detected;
static pthread_once_t detect_once = PTHREAD_ONCE_INIT;

static void detect_init(void) { detected = detect(); }

hl_cpu_features hl_cpu_features_get(void) {
    pthread_once(&detect_once, detect_init);
    return detected;
}

static hl_cpu_level best_level;
static pthread_once_t level_once = PTHREAD_ONCE_INIT;

static void level_init(void) {
    const hl_cpu_features f = hl_cpu_features_get();
    hl_cpu_level level = HL_CPU_SCALAR;
#if defined(__x86_64__) || defined(__i386__)
    if (f.avx2 && f.fma && f.f16c) level = HL_CPU_AVX2;
    if (level == HL_CPU_AVX2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512vnni) level = HL_CPU_AVX512;
#else
    (void)f;
#endif
    const char *cap = getenv("HEARTH_CPU");
    for (int l = HL_CPU_SCALAR; cap && l < (int)level; l++) {
        if (strcmp(cap, hl_cpu_level_name((hl_cpu_level)l)) == 0) level = (hl_cpu_level)l;
    }
    best_level = level;
}

hl_cpu_level hl_cpu_level_best(void) {
    pthread_once(&level_once, level_init);
    return best_level;
}

const char *hl_cpu_level_name(hl_cpu_level level) {
    switch (level) {
    case HL_CPU_SCALAR: return "scalar";
    case HL_CPU_AVX2: return "avx2";
    case HL_CPU_AVX512: return "avx512";
    default: return "unknown";
    }
}

static char features_str[128];
static pthread_once_t features_once = PTHREAD_ONCE_INIT;

static void features_str_init(void) {
    const hl_cpu_features f = hl_cpu_features_get();
    const struct {
        bool on;
        const char *name;
    } flags[] = {
        {f.avx2, "avx2"},
        {f.fma, "fma"},
        {f.f16c, "f16c"},
        {f.avx512f, "avx512f"},
        {f.avx512bw, "avx512bw"},
        {f.avx512vl, "avx512vl"},
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

/* The registry's host entry (registry.h): one device, the machine itself. */
static int32_t host_device_count(const char **reason) {
    if (reason) *reason = NULL;
    return 1;
}

static hearth_status host_init(int32_t device, const hl_gpu_limits *limits, hl_backend **out) {
    *out = NULL;
    if (device != 0 || limits->max_tokens != 0)
        return hl_fail(HEARTH_ERR_INVALID_ARG,
                       "the host's registry entry makes only weight-holding instances of "
                       "device 0 (max_tokens 0); compute instances come from hl_backend_cpu_init");
    return hl_backend_cpu_init(&(hl_cpu_limits){.max_tokens = 0}, out);
}

const hl_backend_reg hl_cpu_backend = {
    .name = "cpu",
    .label = "CPU",
    .build = "cpu",
    .host = true,
    .device_count = host_device_count,
    .init = host_init,
};
