/* CPU mixture-of-experts ops (Mixtral's feed-forward, Jiang et al. 2024,
 * arXiv:2401.04088): the routing of each token to its top-k experts with
 * renormalized softmax weights, the expert matmul (ggml's mul_mat_id: each
 * token's rows multiplied by its experts' slices of a stacked weight) and
 * the weighted sum of the experts' outputs. Rounding follows llama.cpp's
 * build_moe_ffn on ggml-cpu: soft_max's sum in double, sum_rows in double,
 * the weighted views added one by one in float. */
#include <math.h>

#include "backend/cpu/common.h"

void hl_cpu_moe_route(hl_backend *b, const hl_tensor *logits, hl_tensor *ids, hl_tensor *weights) {
    (void)b;
    const int64_t n_expert = logits->ne[0], k = ids->ne[0], n = logits->ne[1];
    float p[HL_MOE_MAX_EXPERTS];
    for (int64_t t = 0; t < n; t++) {
        const float *x = (const float *)logits->data + t * n_expert;
        int32_t *id = (int32_t *)ids->data + t * k;
        float *w = (float *)weights->data + t * k;
        /* ggml_soft_max: expf(x - max), the sum in double, times (float)(1 / sum) */
        float max = -INFINITY;
        for (int64_t e = 0; e < n_expert; e++) max = x[e] > max ? x[e] : max;
        double sum = 0.0;
        for (int64_t e = 0; e < n_expert; e++) sum += (double)(p[e] = expf(x[e] - max));
        const float inv = (float)(1.0 / sum);
        for (int64_t e = 0; e < n_expert; e++) p[e] *= inv;
        /* top-k, highest first (ggml_argsort_top_k); a tie keeps the lower expert first */
        double wsum = 0.0;
        for (int64_t j = 0; j < k; j++) {
            int32_t best = -1;
            for (int64_t e = 0; e < n_expert; e++) {
                bool taken = false;
                for (int64_t i = 0; i < j; i++) taken |= id[i] == (int32_t)e;
                if (!taken && (best < 0 || p[e] > p[best])) best = (int32_t)e;
            }
            id[j] = best;
            w[j] = p[best];
            wsum += (double)w[j];
        }
        /* ggml_sum_rows, clamped to 2^-14, then ggml_div */
        float s = (float)wsum;
        s = s < 6.103515625e-5f ? 6.103515625e-5f : s;
        for (int64_t j = 0; j < k; j++) w[j] /= s;
    }
}

/* Expert by expert: its tokens gathered (hl_cpu_matmul_rows), so that a
 * prompt reads each expert's weights once per call rather than once per
 * token routed to it. */
void hl_cpu_matmul_id(hl_backend *b, const hl_tensor *w, const hl_tensor *x, const hl_tensor *ids, hl_tensor *y) {
    hl_cpu *cpu = cpu_of(b);
    const int64_t d_in = w->ne[0], d_out = w->ne[1], n_expert = w->ne[2], k = ids->ne[0], n = ids->ne[1];
    const int64_t n_x = x->ne[1]; /* x rows per token: 1 (shared by its experts) or k */
    const size_t slice = hl_row_size(w->type, d_in) * (size_t)d_out; /* bytes of one expert's matrix */
    const int32_t *id = ids->data;
    for (int64_t e = 0; e < n_expert; e++) {
        const hl_tensor we = {
            .type = w->type, .ne = {d_in, d_out, 1, 1}, .data = (uint8_t *)w->data + (size_t)e * slice, .backend = b};
        int64_t m = 0;
        for (int64_t i = 0; i < n * k; i++) { /* result i: token i / k, its expert number i % k */
            if (id[i] != e) continue;
            cpu->moe_x_rows[m] = (int32_t)(i / k * n_x + i % k % n_x);
            cpu->moe_y_rows[m] = (int32_t)i;
            if (++m == cpu->limits.max_tokens) { /* only if ids repeat an expert within a token */
                hl_cpu_matmul_rows(b, &we, x, cpu->moe_x_rows, y, cpu->moe_y_rows, m);
                m = 0;
            }
        }
        if (m > 0) hl_cpu_matmul_rows(b, &we, x, cpu->moe_x_rows, y, cpu->moe_y_rows, m);
    }
}

void hl_cpu_moe_sum(hl_backend *b, const hl_tensor *y, const hl_tensor *weights, hl_tensor *out) {
    (void)b;
    const int64_t d = out->ne[0], k = weights->ne[0], n = weights->ne[1];
    for (int64_t t = 0; t < n; t++) {
        const float *yt = (const float *)y->data + t * k * d, *wt = (const float *)weights->data + t * k;
        float *o = (float *)out->data + t * d;
        for (int64_t i = 0; i < d; i++) {
            float acc = yt[i] * wt[0];
            for (int64_t j = 1; j < k; j++) acc += yt[j * d + i] * wt[j];
            o[i] = acc;
        }
    }
}
