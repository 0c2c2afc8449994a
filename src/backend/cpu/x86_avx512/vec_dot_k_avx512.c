/* AVX-512 VNNI kernels of the K-quants (Q2_K .. Q6_K) against Q8_K
 * activations, put into the AVX-512 table by vec_dot_avx512.c: the entry
 * points of k_kernels_avx512.h's generic decode and panel kernels.
 * Compiled with -mavx512f -mavx512bw -mavx512vl -mavx512vnni; called only after
 * hl_cpu_level_best() says the CPU has them. Each keeps the float order of
 * the AVX2 kernel it replaces (vec_dot_k_avx2.c), which is llama.cpp's:
 * - Q2_K, Q4_K: llama.cpp's repacked q2_K_8x8 / q4_K_8x8 kernels: decode
 *   (vec_dot_4r) in gemv's order, panels in gemv's (fewer than 4 tokens)
 *   and gemm's (4); their 1x1 vec_dot stays the AVX2 one;
 * - Q3_K, Q5_K, Q6_K decode: ggml_vec_dot_q*_K_q8_K's AVX2 order, ggml's
 *   8-lane layout (k_kernels_avx512.h) added into one 8-lane accumulator per
 *   output with one FMA per super-block, summed in hsum_float_8's order;
 * - Q3_K, Q5_K, Q6_K from 8 tokens on (hl_cpu_type_ops.batch): panels in
 *   the order of llama.cpp's tiled kernels. */
#include <immintrin.h>
#include <stdbool.h>

#include "backend/cpu/vec_dot.h"
#include "backend/cpu/x86_avx2/simd16_avx2.h"
#include "backend/cpu/x86_avx512/k_kernels_avx512.h"

/* ---------------------------------------- Q3_K, Q5_K, Q6_K decode order -- */

/* n_rows (1 or 4, a constant after inlining) rows w_stride bytes apart with
 * one token, each as ggml_vec_dot_q3_K/q5_K/q6_K_q8_K adds it
 * (vec_dot_k_avx2.c, v_step): per super-block acc = fma(d_a * d,
 * float(sumi lanes), acc) (Q6_K's -32 in the lanes, k_kernels_avx512.h), and
 * for Q5_K summs = fma(-d_a * dmin, float(imin), summs); the result
 * hsum_float_8(acc) + summs. */
static ALWAYS_INLINE void g_rows(uint32_t type, int n_rows, int64_t n, float *out, const void *w, size_t w_stride,
                                 const block_q8_K *a) {
    __m256 acc[4];
    __m128 summs = _mm_setzero_ps(); /* lane r: row r */
    for (int r = 0; r < n_rows; r++) acc[r] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / HL_QK_K; b++) {
        kd_act x;
        kd_act_load(type, &a[b], &x);
        __m256i imin[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                           _mm256_setzero_si256()};
        float dmin[4] = {0};
        for (int r = 0; r < n_rows; r++) {
            const void *blk = kd_block(type, (const uint8_t *)w + (size_t)r * w_stride, b);
            const __m256i sumi = kd_sumi(type, blk, &x, &imin[r]);
            float d;
            kd_d(type, blk, &d, &dmin[r]);
            acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(a[b].d * d), _mm256_cvtepi32_ps(sumi), acc[r]);
            dmin[r] *= -a[b].d;
        }
        if (type == GGML_TYPE_Q5_K) {
            const __m128i m = hsum4_epi32(imin[0], imin[1], imin[2], imin[3]);
            summs = _mm_fmadd_ps(_mm_loadu_ps(dmin), _mm_cvtepi32_ps(m), summs);
        }
    }
    float sm[4];
    _mm_storeu_ps(sm, summs);
    for (int r = 0; r < n_rows; r++) {
        const float sum = hsum8_ggml(acc[r]);
        out[r] = type == GGML_TYPE_Q5_K ? sum + sm[r] : sum;
    }
}

/* ------------------------------------------------------- entry points -- */

/* vec_dot and vec_dot_4r of type T in ggml's order (g_rows). */
#define GGML_DECODE(T, name)                                                                                           \
    static void dot_##name(int64_t n, float *s, const void *w_row, const void *act_row) {                              \
        g_rows(T, 1, n, s, w_row, 0, act_row);                                                                         \
    }                                                                                                                  \
    static void dot_4r_##name(int64_t n, float s[4], const void *w, size_t w_stride, const void *act_row) {            \
        g_rows(T, 4, n, s, w, w_stride, act_row);                                                                      \
    }

/* vec_dot_4r of type T in llama.cpp's repacked gemv order. */
#define REPACKED_DECODE(T, name)                                                                                       \
    static void dot_4r_##name(int64_t n, float s[4], const void *w, size_t w_stride, const void *act_row) {            \
        kd_repacked_4r(T, n, s, w, w_stride, act_row);                                                                 \
    }

/* pack_panel and panel_dot of type T (k_kernels_avx512.h; no hl_act_aux). */
#define PANELS(T, name) HL_PANEL_ENTRIES(T, name, pk_pack, pk_panel_dot)

REPACKED_DECODE(GGML_TYPE_Q2_K, q2_K)
REPACKED_DECODE(GGML_TYPE_Q4_K, q4_K)
GGML_DECODE(GGML_TYPE_Q3_K, q3_K)
GGML_DECODE(GGML_TYPE_Q5_K, q5_K)
GGML_DECODE(GGML_TYPE_Q6_K, q6_K)
PANELS(GGML_TYPE_Q2_K, q2_K)
PANELS(GGML_TYPE_Q3_K, q3_K)
PANELS(GGML_TYPE_Q4_K, q4_K)
PANELS(GGML_TYPE_Q5_K, q5_K)
PANELS(GGML_TYPE_Q6_K, q6_K)

#define SET_DECODE(ops, name) ((ops)->vec_dot = dot_##name, (ops)->vec_dot_4r = dot_4r_##name)
#define SET_PANELS(ops, name) ((ops)->pack_panel = pack_##name, (ops)->panel_dot = panel_dot_##name)

/* Q2_K and Q4_K run their repacked kernels at every batch size (their AVX2
 * entries have no batch entry); Q3_K, Q5_K and Q6_K ggml's order for decode
 * and the tiled order's panels in their batch entries. */
void hl_cpu_ops_avx512_k_patch(hl_cpu_type_ops *ops, bool batch) {
    if (batch) {
        switch (ops->type) {
        case GGML_TYPE_Q3_K: SET_PANELS(ops, q3_K); break;
        case GGML_TYPE_Q5_K: SET_PANELS(ops, q5_K); break;
        case GGML_TYPE_Q6_K: SET_PANELS(ops, q6_K); break;
        }
        return;
    }
    switch (ops->type) {
    case GGML_TYPE_Q2_K: ops->vec_dot_4r = dot_4r_q2_K, SET_PANELS(ops, q2_K); break;
    case GGML_TYPE_Q4_K: ops->vec_dot_4r = dot_4r_q4_K, SET_PANELS(ops, q4_K); break;
    case GGML_TYPE_Q3_K: SET_DECODE(ops, q3_K); break;
    case GGML_TYPE_Q5_K: SET_DECODE(ops, q5_K); break;
    case GGML_TYPE_Q6_K: SET_DECODE(ops, q6_K); break;
    }
}
