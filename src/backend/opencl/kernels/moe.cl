/* Mixture-of-experts routing and the weighted sum of the experts' outputs
 * (backend.h moe_route, moe_sum; Mixtral as llama.cpp's build_moe_ffn runs
 * it). The expert products themselves are the matmul kernels over one
 * expert's slice (ops.c). Sums here are in float (OpenCL 1.2 devices need
 * not have doubles), where the CPU backend sums in double as ggml does. */

/* One work-item per token: p = softmax(logits {n_expert, n} column t); ids
 * {k, n} = the k experts of highest p, highest first (a tie keeps the
 * lower expert first); weights {k, n} = their p over max(their sum, 2^-14). */
kernel void moe_route(global const uchar *lb, ulong l_off, global uchar *ib, ulong i_off, global uchar *wb, ulong w_off,
                      int n_expert, int k, long n) {
    const long t = get_global_id(0);
    if (t >= n) return;
    global const float *x = AT_C(float, lb, l_off) + t * n_expert;
    global int *ids = AT(int, ib, i_off) + t * k;
    global float *w = AT(float, wb, w_off) + t * k;
    float max = -INFINITY, sum = 0.0f;
    for (int e = 0; e < n_expert; e++) max = fmax(max, x[e]);
    for (int e = 0; e < n_expert; e++) sum += exp(x[e] - max);
    const float inv = 1.0f / sum;
    float top = 0.0f;
    for (int j = 0; j < k; j++) {
        int best = -1;
        float best_p = 0.0f;
        for (int e = 0; e < n_expert; e++) {
            bool taken = false;
            for (int i = 0; i < j; i++) taken |= ids[i] == e;
            const float p = exp(x[e] - max) * inv;
            if (!taken && (best < 0 || p > best_p)) best = e, best_p = p;
        }
        ids[j] = best;
        w[j] = best_p;
        top += best_p;
    }
    top = fmax(top, 6.103515625e-5f);
    for (int j = 0; j < k; j++) w[j] /= top;
}

/* One work-item per output element: out[i, t] = sum over j of y[i, j, t] w[j, t], in order of j. */
kernel void moe_sum(global const uchar *yb, ulong y_off, global const uchar *wb, ulong w_off, global uchar *ob,
                    ulong o_off, long d, int k, long n) {
    const long g = get_global_id(0);
    if (g >= d * n) return;
    const long t = g / d, i = g % d;
    global const float *y = AT_C(float, yb, y_off) + t * k * d + i;
    global const float *w = AT_C(float, wb, w_off) + t * k;
    float acc = y[0] * w[0];
    for (int j = 1; j < k; j++) acc += y[j * d] * w[j];
    AT(float, ob, o_off)[g] = acc;
}
