/* The GPU kernels' dequantizers (src/backend/cuda/dequant.cuh), run on the
 * host, against the reference dequantizers of quant/ (bit-exact with ggml
 * and gguf-py) for every weight type the GPU backend computes with, on
 * random blocks quantized by the reference quantizers. This checks the
 * block-layout formulas of the kernels without a GPU; builds without CUDA
 * skip it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/gpu.h"
#include "check.h"
#include "quant/quant.h"

int main(void) {
    static const uint32_t types[] = {
        GGML_TYPE_F32,  GGML_TYPE_F16,  GGML_TYPE_BF16, GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1,
        GGML_TYPE_Q8_0, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K,
    };
    const int64_t n = 4 * 256;
    float *x = malloc(sizeof(float) * n), *want = malloc(sizeof(float) * n), *got = malloc(sizeof(float) * n);
    uint8_t *q = malloc(hl_row_size(GGML_TYPE_F32, n));
    int status = 0;
    uint64_t s = 12345;
    for (int64_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((double)(s >> 11) * 0x1p-53 * 8.0 - 4.0) * (i % 97 == 0 ? 10.0f : 1.0f);
    }
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        const hl_quant_traits *tr = hl_quant_get(types[t]);
        tr->from_float(x, q, n);
        tr->to_float(q, want, n);
        const hearth_status st = hl_gpu_dequant_host(types[t], q, got, n);
        if (st == HEARTH_ERR_UNSUPPORTED && t == 0) {
            printf("SKIP: %s\n", hearth_last_error());
            status = 77;
            break;
        }
        CHECK_MSG(st == HEARTH_OK, "%s: %s", hl_ggml_type_get(types[t])->name, hearth_last_error());
        /* the same formulas; float contraction may move the last bit */
        int bad = 0;
        for (int64_t i = 0; i < n; i++) bad += !(fabsf(got[i] - want[i]) <= 1e-6f * (1.0f + fabsf(want[i])));
        CHECK_MSG(bad == 0, "%s: %d of %lld elements differ", hl_ggml_type_get(types[t])->name, bad, (long long)n);
    }
    if (status == 0) {
        CHECK(hl_gpu_dequant_host(GGML_TYPE_Q4_0, q, got, 33) == HEARTH_ERR_INVALID_ARG);
        CHECK(hl_gpu_dequant_host(GGML_TYPE_IQ2_XXS, q, got, 256) == HEARTH_ERR_UNSUPPORTED);
    }
    free(x);
    free(want);
    free(got);
    free(q);
    return status ? status : check_report();
}
