/* AVX-512 VNNI kernels for Q4_1 and Q5_1 weights against Q8_1 activations:
 * decode (vec_dot_4r) and panels (vec_dot.h); put into the AVX-512 table by
 * vec_dot_avx512.c. Compiled with -mavx512f -mavx512bw -mavx512vl
 * -mavx512vnni; called only after hl_cpu_level_best() says the CPU has them.
 *
 * The float order is that of the AVX2 kernels (vec_dot_avx2.c, q8_1_dot =
 * ggml_vec_dot_q4_1_q8_1 / q5_1_q8_1, which llama.cpp runs for these types
 * at every batch size): per result one 8-lane accumulator, lane k summing
 * group k (elements 4k..4k+3) of each block, acc = fma(d_w * d_a,
 * float(isum), acc) per block; m_w * s_a in a separate chain ms = fma(m_w,
 * s_a, ms); the result hsum8_ggml(acc) + ms.
 *
 * Decode: q32_decode_avx512.h's 4-row kernel (two rows per vpdpbusd).
 *
 * Panels: q32_panel_avx512.h's layout with two scale vectors (d, m) and its
 * eight-lane kernel on Q8_1 activations. */
#include <immintrin.h>

#include "backend/cpu/vec_dot.h"
#include "backend/cpu/x86_avx512/q32_decode_avx512.h"
#include "backend/cpu/x86_avx512/q32_panel_avx512.h"
#include "backend/cpu/x86_avx512/simd_avx512.h"

/* ------------------------------------------------------------ decode -- */

static void dot_4r_q4_1(int64_t n, float s[4], const void *w, size_t w_stride, const void *act_row) {
    q32_dot_4r(GGML_TYPE_Q4_1, n, s, w, w_stride, act_row);
}

static void dot_4r_q5_1(int64_t n, float s[4], const void *w, size_t w_stride, const void *act_row) {
    q32_dot_4r(GGML_TYPE_Q5_1, n, s, w, w_stride, act_row);
}

/* ------------------------------------------------------------ panels -- */

static inline __m256i quants_q4_1(const void *row, int64_t b, float *s) {
    const block_q4_1 *w = (const block_q4_1 *)row + b;
    s[0] = _cvtsh_ss(w->d);
    s[HL_PANEL_ROWS] = _cvtsh_ss(w->m);
    return nibbles32(w->qs);
}

static inline __m256i quants_q5_1(const void *row, int64_t b, float *s) {
    const block_q5_1 *w = (const block_q5_1 *)row + b;
    s[0] = _cvtsh_ss(w->d);
    s[HL_PANEL_ROWS] = _cvtsh_ss(w->m);
    return quants5_32(w->qh, w->qs);
}

static void pack_q4_1(int64_t n, void *panel, const void *w, size_t w_stride) {
    panel32_pack(quants_q4_1, 2, n, panel, w, w_stride);
}

static void pack_q5_1(int64_t n, void *panel, const void *w, size_t w_stride) {
    panel32_pack(quants_q5_1, 2, n, panel, w, w_stride);
}

static void panel_dot_q8_1(int64_t n, float *y, size_t y_stride, const void *panel, const void *act, size_t act_stride,
                           const hl_act_aux *aux, size_t aux_stride, int n_tok) {
    panel32_ggml8(true, n, y, y_stride, panel, act, act_stride, aux, aux_stride, n_tok);
}

void hl_cpu_ops_avx512_q1_patch(hl_cpu_type_ops *ops) {
    if (ops->type == GGML_TYPE_Q4_1) {
        ops->vec_dot_4r = dot_4r_q4_1;
        ops->pack_panel = pack_q4_1;
        ops->panel_dot = panel_dot_q8_1;
    } else if (ops->type == GGML_TYPE_Q5_1) {
        ops->vec_dot_4r = dot_4r_q5_1;
        ops->pack_panel = pack_q5_1;
        ops->panel_dot = panel_dot_q8_1;
    }
}
