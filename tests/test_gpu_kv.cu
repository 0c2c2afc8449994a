/* The KV cache writers of the GPU kernels (src/backend/cuda/kv.cuh:
 * kv<T>::put for store_rows and the K-shift, kv_q8_value for the query of
 * attention over a Q8_0 or Q4_0 K cache), run on the host (no GPU needed),
 * against what the CPU backend writes (hl_cpu_cache_from_float's choice:
 * the CPU's vec-dot converter where the type is its own vec-dot type, else
 * quant/'s reference quantizer), byte for byte, at the scalar level and at
 * the best one this CPU has, for every cache type. Rows mix random values,
 * large and tiny ones, zero blocks, exact halves (where Q8_0's two
 * roundings part), Q4_0 blocks whose largest magnitude comes twice with
 * both signs, and values on Q4_0's truncation edges. The GPU runs the same
 * code with its products and sums rounded as the host's (kv_mul_add), so
 * test_backend_ops' store_rows and rope_shift cases can ask for the CPU's
 * bytes. Built by nvcc whenever the build has CUDA (tests/CMakeLists.txt). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "backend/cuda/kv.cuh"

extern "C" {
#include "backend/cpu/vec_dot.h"
}

#include "check.h"

#define N (32 * 64) /* elements per row: 64 blocks of 32, 8 of each kind below */

static uint64_t rng = 2026;
static float uniform(void) { return (float)((double)(check_splitmix64(&rng) >> 11) * 0x1p-53); } /* [0, 1) */

/* Block b of the row: kind b % 8. */
static void fill(float *x) {
    for (int b = 0; b < N / 32; b++) {
        float *v = x + 32 * b;
        for (int j = 0; j < 32; j++) v[j] = 2.0f * uniform() - 1.0f;
        switch (b % 8) {
        case 1:
            for (int j = 0; j < 32; j++) v[j] *= 1000.0f;
            break;
        case 2:
            for (int j = 0; j < 32; j++) v[j] = 0.0f;
            break;
        case 3: /* amax 127: id = 1, so x * id = k + 1/2 exactly: halves to even vs away from zero */
            v[0] = 127.0f;
            for (int j = 1; j < 32; j++) v[j] = (float)(j - 16) + 0.5f;
            break;
        case 4: v[5] = -1.5f, v[9] = 1.5f; break; /* Q4_0's max: the first of largest magnitude, negative */
        case 5: v[5] = 1.5f, v[9] = -1.5f; break; /* ... positive */
        case 6:
            for (int j = 0; j < 32; j++) v[j] *= 1e-6f;
            break; /* F16 scales below 2^-14 */
        case 7:    /* max -1: d = 1/8, id = 8, x * id + 8.5 lands on integers and halves */
            for (int j = 0; j < 32; j++) v[j] = (float)((j * 7) % 33 - 16) / 16.0f;
            v[0] = -1.0f;
            break;
        default: break;
        }
    }
}

/* What the CPU writes into a cache of `type` with these kernels (cpu/backend.c hl_cpu_cache_from_float). */
static hl_from_float_fn cpu_writer(const hl_cpu_type_ops *ops, uint32_t type) {
    return ops && ops->vec_dot_type == type ? ops->act_from_float : hl_quant_get(type)->from_float;
}

namespace {
struct check_put {
    template <uint32_t T> static void run(const float *x) {
        using K = kv<T>;
        const char *name = hl_ggml_type_get(T)->name;
        const size_t bytes = (size_t)kv_bytes<T>(N);
        static uint8_t want[N * 4], got[N * 4];
        for (int u = 0; u < N / K::n; u++) K::put(x + u * K::n, (typename K::unit *)got + u);
        const hl_cpu_type_ops *levels[2] = {hl_cpu_type_ops_scalar(T), hl_cpu_type_ops_get(T)};
        for (int l = 0; l < 2; l++) {
            cpu_writer(levels[l], T)(x, want, N);
            size_t bad = 0, first = 0;
            for (size_t i = 0; i < bytes; i++)
                if (got[i] != want[i] && bad++ == 0) first = i;
            CHECK_MSG(bad == 0, "%s (%s level): %zu of %zu bytes differ from the CPU's, the first at byte %zu", name,
                      l ? "best" : "scalar", bad, bytes, first);
        }
        printf("%-4s kv<T>::put: %zu bytes, the CPU's at the scalar and best levels\n", name, bytes);
    }
};
} // namespace

int main(void) {
    static float x[N];
    fill(x);
    CHECK(kv_dispatch<check_put>(GGML_TYPE_F16, x));
    CHECK(kv_dispatch<check_put>(GGML_TYPE_BF16, x));
    CHECK(kv_dispatch<check_put>(GGML_TYPE_Q8_0, x));
    CHECK(kv_dispatch<check_put>(GGML_TYPE_Q4_0, x));
    CHECK(!kv_dispatch<check_put>(GGML_TYPE_Q4_1, x));
    check_put::run<GGML_TYPE_F32>(x);

    /* the query of attention over a quantized K: each element's value in
     * the CPU's Q8_0 block (its vec-dot type for Q8_0 and Q4_0), exactly */
    static block_q8_0 q8[N / 32];
    static float want[N];
    hl_cpu_type_ops_scalar(GGML_TYPE_Q8_0)->act_from_float(x, q8, N);
    hl_quant_get(GGML_TYPE_Q8_0)->to_float(q8, want, N);
    int bad = 0;
    for (int b = 0; b < N / 32; b++) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[32 * b + j]));
        for (int j = 0; j < 32; j++) bad += kv_q8_value(x[32 * b + j], amax) != want[32 * b + j];
    }
    CHECK_MSG(bad == 0, "kv_q8_value: %d of %d query elements differ from the CPU's Q8_0 query", bad, N);
    printf("kv_q8_value: %d query elements, the CPU's Q8_0 values\n", N);
    return check_report();
}
