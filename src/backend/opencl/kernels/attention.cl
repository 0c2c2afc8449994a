/* Causal attention over the F16 KV cache, flash-attention style (Dao et al.
 * 2022, arXiv:2205.14135), as backend/cuda/attention.cu: one work-group per
 * (query head, token) walks the visible positions in tiles of ATT_TILE,
 * keeping a running maximum m, a running sum l of exp(s - m) and the output
 * accumulator, rescaled by exp(m_old - m_new) when the maximum grows (the
 * online softmax of Milakov & Gimelshein 2018, arXiv:1805.02867). Only a
 * tile of scores lives in local memory: nothing of size n_ctx x n_ctx.
 *
 * Token t sits at position p = pos[t] of the sequence whose cells start at
 * row0[t] and sees its positions [lo, p] (lo = p - n_swa + 1 with a sliding
 * window). Query head h reads KV head h / (n_head / n_head_kv) (grouped-query
 * attention, Ainslie et al. 2023, arXiv:2305.13245). With max_bias > 0,
 * ALiBi adds slope(h) * -(p - j) to the score of position j (backend.h
 * hl_alibi_slope: ggml's m0/m1 rule). */
#define ATT_TILE 64 /* = the work-group size: work-item j scores position j of a tile */
#define ATT_MAX_HEAD_DIM 512
#define ATT_DIMS (ATT_MAX_HEAD_DIM / ATT_TILE) /* output dims per work-item */

/* global (n_head * ATT_TILE, n), local (ATT_TILE, 1); q, out F32 {n_head * hd, n};
 * k, v F16 {n_head_kv * hd, n_ctx}; pos[0..max_tokens) then row0[...] */
kernel void attention(global const uchar *qb, ulong q_off, global const uchar *kb, ulong k_off, global const uchar *vb,
                      ulong v_off, global uchar *ob, ulong o_off, int n_head, int n_head_kv, int hd,
                      global const int *pos_of, long max_tokens, int n_swa, float scale, float max_bias) {
    local float q_s[ATT_MAX_HEAD_DIM];
    local float p_s[ATT_TILE];
    const int h = (int)get_group_id(0), t = (int)get_group_id(1), tid = (int)get_local_id(0);
    const long q_dim = (long)n_head * hd, kv_dim = (long)n_head_kv * hd;
    const int pos = pos_of[t];
    const long kv0 = (long)pos_of[max_tokens + t] * kv_dim + (long)(h / (n_head / n_head_kv)) * hd;
    global const half *k = AT_C(half, kb, k_off) + kv0;
    global const half *v = AT_C(half, vb, v_off) + kv0;
    const int lo = n_swa > 0 && pos - n_swa + 1 > 0 ? pos - n_swa + 1 : 0;
    global const float *q = AT_C(float, qb, q_off) + t * q_dim + (long)h * hd;
    for (int d = tid; d < hd; d += ATT_TILE) q_s[d] = q[d];
    float acc[ATT_DIMS];
    for (int i = 0; i < ATT_DIMS; i++) acc[i] = 0.0f;
    float m = -INFINITY, l = 0.0f; /* the same in every work-item */
    float slope = 0.0f;
    if (max_bias > 0.0f) {
        int nl2 = 1; /* the largest power of two <= n_head */
        while (nl2 * 2 <= n_head) nl2 *= 2;
        slope = h < nl2 ? pow(pow(2.0f, -max_bias / (float)nl2), (float)(h + 1))
                        : pow(pow(2.0f, -(max_bias / 2.0f) / (float)nl2), (float)(2 * (h - nl2) + 1));
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int j0 = lo; j0 <= pos; j0 += ATT_TILE) {
        const int n = pos + 1 - j0 < ATT_TILE ? pos + 1 - j0 : ATT_TILE;
        if (tid < n) {
            global const half *kr = k + (long)(j0 + tid) * kv_dim;
            float dot = 0.0f;
            for (int d = 0; d < hd; d++) dot = fma(q_s[d], vload_half(d, kr), dot);
            p_s[tid] = dot * scale + slope * (float)(j0 + tid - pos);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        float tile_max = -INFINITY;
        for (int j = 0; j < n; j++) tile_max = fmax(tile_max, p_s[j]);
        const float m_new = fmax(m, tile_max); /* finite: the tile has a visible position */
        const float corr = exp(m - m_new);     /* 0 on the first tile (m = -inf) */
        barrier(CLK_LOCAL_MEM_FENCE);          /* every work-item has read the scores */
        p_s[tid] = tid < n ? exp(p_s[tid] - m_new) : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        float tile_sum = 0.0f;
        for (int j = 0; j < n; j++) tile_sum += p_s[j];
        l = l * corr + tile_sum;
        m = m_new;
        for (int i = 0; i < ATT_DIMS; i++) {
            const int d = tid + i * ATT_TILE;
            if (d >= hd) break;
            float a = acc[i] * corr;
            for (int j = 0; j < n; j++) a = fma(p_s[j], vload_half((long)(j0 + j) * kv_dim + d, v), a);
            acc[i] = a;
        }
        barrier(CLK_LOCAL_MEM_FENCE); /* the tile's probabilities are used up */
    }
    global float *out = AT(float, ob, o_off) + t * q_dim + (long)h * hd;
    for (int i = 0; i < ATT_DIMS; i++) {
        const int d = tid + i * ATT_TILE;
        if (d < hd) out[d] = acc[i] / l;
    }
}
