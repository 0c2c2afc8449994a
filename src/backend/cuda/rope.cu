// Rotary position embeddings (RoFormer, Su et al. 2021, arXiv:2104.09864)
// with ggml's conventions (backend.h hl_rope_params): pair i of a head
// (0 <= i < n_rot / 2) is rotated by theta_i = p * freq_scale *
// base^(-2i/n_rot) / ff[i], the pair being (x[2i], x[2i+1]) in NORMAL mode
// and (x[i], x[i + n_rot/2]) in NEOX mode; dimensions past n_rot are left
// alone. theta is computed as ggml's CUDA kernel does: p * theta_scale^i.
#include "backend/cuda/common.cuh"

#define ROPE_THREADS 256

// One thread per (token, head, pair); x F32 {n_head * hd, n}, in place.
static __global__ void rope_kernel(float *x, int n_head, int hd, int n_rot, bool neox, const int32_t *pos,
                            float theta_scale, float freq_scale, const float *__restrict__ ff, int64_t n_pairs) {
    const int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= n_pairs) return;
    const int half = n_rot / 2;
    const int i = (int)(idx % half);
    const int64_t head = idx / half; // token * n_head + h
    const int t = (int)(head / n_head);
    float theta = (float)pos[t] * powf(theta_scale, (float)i);
    if (ff) theta /= ff[i];
    theta *= freq_scale;
    float s, c;
    sincosf(theta, &s, &c);
    float *v = x + head * hd;
    const int i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
    const float a = v[i0], b = v[i1];
    v[i0] = a * c - b * s;
    v[i1] = a * s + b * c;
}

// The two pairings rope_kernel knows.
bool hl_cuda_rope_runs(const hl_rope_params *p) { return p->mode == HL_ROPE_NORMAL || p->mode == HL_ROPE_NEOX; }

void hl_cuda_rope(hl_backend *b, hl_tensor *x, int32_t n_head, const hl_rope_params *p, const hl_tensor *freq_factors) {
    hl_cuda *cu = cuda_of(b);
    if (!hl_cuda_enter(cu)) return;
    if (!hl_cuda_rope_runs(p)) {
        hl_cuda_record(cu, HEARTH_ERR_UNSUPPORTED, "cuda%d: rope mode %d is not supported", cu->index, (int)p->mode);
        return;
    }
    const int hd = (int)(x->ne[0] / n_head);
    const int64_t n_pairs = x->ne[1] * n_head * (p->n_rot / 2);
    const float theta_scale = powf(p->freq_base, -2.0f / (float)p->n_rot);
    const int32_t *pos = cuda_pos(cu);
    rope_kernel<<<cuda_blocks(n_pairs, ROPE_THREADS), ROPE_THREADS, 0, cu->stream>>>(
        (float *)x->data, n_head, hd, p->n_rot, p->mode == HL_ROPE_NEOX, pos, theta_scale, p->freq_scale,
        freq_factors ? (const float *)freq_factors->data : NULL, n_pairs);
    CU_LAUNCHED(cu);
}
