/* Matrix products y {d_out, n} = x {d_in, n} times W {d_in, d_out}^T,
 * reading W in its stored type through dequant8; and the dequantizers of
 * prompt products through CLBlast (gemm.c), which write rows of W as F32. MV_LANES work-items take
 * one weight row and up to MV_NT tokens: they read consecutive chunks of
 * the row (neighbours touch neighbouring bytes), each chunk is dequantized
 * once and multiplied with every token's x, and the partial sums meet in
 * local memory. Decode (n = 1) is a matrix-vector product; a prompt
 * dequantizes each row n / MV_NT times. MV_LANES comes from program.c: 64
 * on GPUs (a work-group per row), 1 on CPU devices, where a work-group of
 * MV_WG rows without barriers runs as plain loops (PoCL pays per
 * work-group and per barrier more than a row costs). */
#define MV_NT 8
#define MV_WG 64 /* work-items per group */

/* global (round_up(d_out * MV_LANES, MV_WG), ceil(n / MV_NT)), local (MV_WG, 1) */
static inline __attribute__((always_inline)) void matmul(const int type, global const uchar *w, ulong w_off,
                                                         ulong stride, global const uchar *xb, ulong x_off,
                                                         global uchar *yb, ulong y_off, long d_in, long d_out, long n,
                                                         local float (*red)[MV_WG]) {
    const long row = get_global_id(0) / MV_LANES, t0 = get_group_id(1) * MV_NT;
    const int lane = (int)(get_local_id(0) % MV_LANES), lid = (int)get_local_id(0);
    if (MV_LANES == 1 && row >= d_out) return; /* with lanes, a group is one whole row */
    const int nt = n - t0 < MV_NT ? (int)(n - t0) : MV_NT;
    global const uchar *wr = w + w_off + row * stride;
    global const float *x = AT_C(float, xb, x_off) + t0 * d_in;
    float acc[MV_NT];
    for (int t = 0; t < MV_NT; t++) acc[t] = 0.0f;
    const long n_chunks = (d_in + 7) / 8;
    for (long c = lane; c < n_chunks; c += MV_LANES) {
        float v[8];
        const int k = dequant8(type, wr, d_in, c, v);
        for (int t = 0; t < MV_NT; t++) {
            if (t >= nt) break;
            global const float *xc = x + t * d_in + 8 * c;
            float s = acc[t];
            for (int j = 0; j < k; j++) s = fma(v[j], xc[j], s);
            acc[t] = s;
        }
    }
    global float *y = AT(float, yb, y_off);
    if (MV_LANES == 1) {
        for (int t = 0; t < nt; t++) y[(t0 + t) * d_out + row] = acc[t];
        return;
    }
    for (int t = 0; t < MV_NT; t++) red[t][lid] = acc[t];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = MV_LANES / 2; s > 0; s >>= 1) {
        if (lane < s)
            for (int t = 0; t < MV_NT; t++) red[t][lid] += red[t][lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int t = lid; t < nt; t += MV_LANES) y[(t0 + t) * d_out + row] = red[t][0];
}

/* One kernel per weight type, matmul_<type> (ggml's type names), so that
 * each is compiled for its block layout alone. */
#define MATMUL(name, type)                                                                                            \
    kernel void matmul_##name(global const uchar *w, ulong w_off, ulong stride, global const uchar *xb, ulong x_off, \
                              global uchar *yb, ulong y_off, long d_in, long d_out, long n) {                        \
        local float red[MV_NT][MV_WG]; /* OpenCL C 1.2: local arrays live in kernels */                            \
        matmul(type, w, w_off, stride, xb, x_off, yb, y_off, d_in, d_out, n, red);                                   \
    }
MATMUL(f32, T_F32) MATMUL(f16, T_F16) MATMUL(bf16, T_BF16) MATMUL(q4_0, T_Q4_0) MATMUL(q4_1, T_Q4_1)
MATMUL(q5_0, T_Q5_0) MATMUL(q5_1, T_Q5_1) MATMUL(q8_0, T_Q8_0) MATMUL(q2_K, T_Q2_K) MATMUL(q3_K, T_Q3_K)
MATMUL(q4_K, T_Q4_K) MATMUL(q5_K, T_Q5_K) MATMUL(q6_K, T_Q6_K)

/* Rows of W as F32 for CLBlast's GEMM (gemm.c): t {d_in, rows} from `rows`
 * rows of w, one work-item per 8-element chunk.
 * global (round_up(ceil(d_in / 8) * rows, MV_WG)), local (MV_WG) */
#define DEQUANT(name, type)                                                                                            \
    kernel void dequant_##name(global const uchar *w, ulong w_off, ulong stride, global uchar *tb, ulong t_off,      \
                               long d_in, long rows) {                                                               \
        const long per_row = (d_in + 7) / 8, i = get_global_id(0);                                                   \
        if (i >= per_row * rows) return;                                                                             \
        const long r = i / per_row, c = i % per_row;                                                                 \
        float v[8];                                                                                                  \
        const int k = dequant8(type, w + w_off + r * stride, d_in, c, v);                                           \
        global float *t = AT(float, tb, t_off) + r * d_in + 8 * c;                                                   \
        for (int j = 0; j < k; j++) t[j] = v[j];                                                                     \
    }
DEQUANT(f32, T_F32) DEQUANT(f16, T_F16) DEQUANT(bf16, T_BF16) DEQUANT(q4_0, T_Q4_0) DEQUANT(q4_1, T_Q4_1)
DEQUANT(q5_0, T_Q5_0) DEQUANT(q5_1, T_Q5_1) DEQUANT(q8_0, T_Q8_0) DEQUANT(q2_K, T_Q2_K) DEQUANT(q3_K, T_Q3_K)
DEQUANT(q4_K, T_Q4_K) DEQUANT(q5_K, T_Q5_K) DEQUANT(q6_K, T_Q6_K)
