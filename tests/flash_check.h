/* What the tests comparing the tiled attention (flash_attn ON) with the
 * exact one (OFF) share (test_flash_attn.c, test_context_16k.c): the bound
 * on their logits' difference and how it is measured. */
#ifndef HEARTH_TESTS_FLASH_CHECK_H
#define HEARTH_TESTS_FLASH_CHECK_H

#include <math.h>
#include <stdint.h>

/* |on - off| <= FLASH_REL_BOUND * max |logit|. The paths differ by the F16
 * rounding of the probabilities and the order of sums, which 8-bit
 * activations pass on to the logits. Measured (x86-64 AVX2, 2 threads,
 * 2026-11-25): 4e-5 (llama3 F32), 5e-4 and 6e-4 (qwen2, gemma3 F16), 0.011 to
 * 0.020 (Q8_0 models), 0.028 (SmolLM2 Q4_1). */
#define FLASH_REL_BOUND 0.05f

/* max |a - b| / max |b| over n logits (NaN when a difference is NaN). */
static inline float flash_rel_diff(const float *a, const float *b, int32_t n) {
    float d = 0.0f, mx = 1e-6f;
    for (int32_t i = 0; i < n; i++) {
        const float e = fabsf(a[i] - b[i]);
        d = e > d || isnan(e) ? e : d;
        mx = fabsf(b[i]) > mx ? fabsf(b[i]) : mx;
    }
    return d / mx;
}

#endif
