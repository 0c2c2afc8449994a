/* AVX-512 VNNI kernels for Q4_K and Q6_K weights against Q8_K activations:
 * Q4_K decode and panels, Q6_K batch panels (k_avx512.h has the
 * panels; Q6_K decode is in vec_dot_k2_avx512.c); put into the AVX-512 table by vec_dot_avx512.c. Compiled with
 * -mavx512f -mavx512bw -mavx512vl -mavx512vnni; called only after
 * hl_cpu_level_best() says the CPU has them.
 *
 * llama.cpp multiplies Q4_K through its repacked kernels (repack.cpp,
 * q4_K_8x8; see vec_dot_k_avx2.c): per output, exact integer totals isum =
 * sum(sc * q * a) and imin = sum(m * bsums) over parts of a super-block go
 * into two FMA chains, acc += float(isum) * (d * d_a) and accm +=
 * float(imin) * (dmin * d_a), and the result is acc - accm. Its gemv takes
 * the whole super-block as the part, which is the decode order here. Q6_K
 * from 8 tokens on: llama.cpp's tiled kernels (vec_dot_k_avx2.c). */
#include <immintrin.h>
#include <stdbool.h>

#include "backend/cpu/k_avx512.h"
#include "backend/cpu/vec_dot.h"

static void pack_q4_K(int64_t n, void *panel, const void *w, size_t w_stride) {
    pk_pack(GGML_TYPE_Q4_K, n, panel, w, w_stride);
}

static void panel_dot_q4_K(int64_t n, float *y, size_t y_stride, const void *panel, const void *act,
                           size_t act_stride, const hl_act_aux *aux, size_t aux_stride, int n_tok) {
    (void)aux, (void)aux_stride;
    pk_panel_dot(GGML_TYPE_Q4_K, n, y, y_stride, panel, act, act_stride, n_tok);
}

static void pack_q6_K(int64_t n, void *panel, const void *w, size_t w_stride) {
    pk_pack(GGML_TYPE_Q6_K, n, panel, w, w_stride);
}

static void panel_dot_q6_K(int64_t n, float *y, size_t y_stride, const void *panel, const void *act,
                           size_t act_stride, const hl_act_aux *aux, size_t aux_stride, int n_tok) {
    (void)aux, (void)aux_stride;
    pk_panel_dot(GGML_TYPE_Q6_K, n, y, y_stride, panel, act, act_stride, n_tok);
}

static void dot_4r_q4_K(int64_t n, float s[4], const void *w, size_t w_stride, const void *act_row) {
    kd_repacked_4r(GGML_TYPE_Q4_K, n, s, w, w_stride, act_row);
}

void hl_cpu_ops_avx512_k_patch(hl_cpu_type_ops *ops, bool batch) {
    if (ops->type == GGML_TYPE_Q4_K && !batch) {
        ops->vec_dot_4r = dot_4r_q4_K;
        ops->pack_panel = pack_q4_K;
        ops->panel_dot = panel_dot_q4_K;
    }
    if (ops->type == GGML_TYPE_Q6_K && batch) {
        ops->pack_panel = pack_q6_K;
        ops->panel_dot = panel_dot_q6_K;
    }
}
