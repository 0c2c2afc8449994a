// Integer dot products of quantized weight blocks with Q8_1 activations, the
// inner loop of the decode matrix-vector kernels (matvec.cu), written once as
// __host__ __device__ functions so that tests/test_gpu_vecdot.cu checks them
// on the host against quant/'s reference dequantizers without a GPU. The
// method is llama.cpp's mmvq (ggml-cuda/vecdotq.cuh, quantize.cu): the
// activations are quantized once per matmul to 8 bits per block of 32 with a
// scale d and the block's float sum s, and each weight block is multiplied
// with 4-way byte dot products (dp4a); the per-block scales are applied in
// F32. The split of a block between threads is hearth's: each thread takes a
// chunk of a block whose weight bytes and activations it reads with the
// widest loads the block layout allows (16 bytes for Q4_K and Q5_K, whose
// 144- and 176-byte blocks keep 16-byte alignment; 4 bytes for Q4_1, Q5_1,
// Q2_K; 2 bytes for the 2-byte-aligned Q4_0, Q5_0, Q8_0, Q3_K, Q6_K) and the
// activations always 16 (or 8) bytes at a time.
//
// Activations in Q8_1 (struct of arrays, so the quants stay 16-byte
// aligned): for token t of a row of d elements (d a multiple of 32),
// qs[t * d + i] = round(x[i] / dk) (int8) and ds[t * d / 32 + k] = (dk, sk)
// (float2) for block k: dk = max |x| / 127 over the block, sk = sum of its x
// (llama.cpp's quantize_q8_1 keeps the float sum too; the reference
// quantizer of quant/ stores dk * sum(q) instead).
#pragma once

#include <math.h>
#include <string.h>
#include <vector_types.h>

#include "backend/cuda/dequant.cuh"

// ------------------------------------------------------------ helpers --

// c + the dot product of the 4 signed bytes of a and of b (CUDA's __dp4a).
__host__ __device__ __forceinline__ int vd_dp4a(int a, int b, int c) {
#ifdef __CUDA_ARCH__
    return __dp4a(a, b, c);
#else
    for (int k = 0; k < 4; k++) c += (int)(int8_t)(uint8_t)(a >> 8 * k) * (int)(int8_t)(uint8_t)(b >> 8 * k);
    return c;
#endif
}

// 4 bytes from a 2-byte-aligned address (two 16-bit loads), a 4-byte-aligned
// one, 8 and 16 bytes from 8- and 16-byte-aligned ones. The host reads them
// with memcpy (no aliasing questions); the device with one load each.
__host__ __device__ __forceinline__ int vd_ld2(const uint8_t *p) {
#ifdef __CUDA_ARCH__
    const uint16_t *h = (const uint16_t *)p;
    return (int)((uint32_t)h[0] | (uint32_t)h[1] << 16);
#else
    int v;
    memcpy(&v, p, 4);
    return v;
#endif
}
__host__ __device__ __forceinline__ int vd_ld4(const uint8_t *p) {
#ifdef __CUDA_ARCH__
    return *(const int *)p;
#else
    int v;
    memcpy(&v, p, 4);
    return v;
#endif
}
__host__ __device__ __forceinline__ int2 vd_ld8(const void *p) {
#ifdef __CUDA_ARCH__
    return *(const int2 *)p;
#else
    int2 v;
    memcpy(&v, p, 8);
    return v;
#endif
}
__host__ __device__ __forceinline__ int4 vd_ld16(const void *p) {
#ifdef __CUDA_ARCH__
    return *(const int4 *)p;
#else
    int4 v;
    memcpy(&v, p, 16);
    return v;
#endif
}

__host__ __device__ __forceinline__ float vd_half(uint32_t bits) { return dq_half((hl_half)(bits & 0xffff)); }

#define VD_ONES 0x01010101
#define VD_LO4 0x0F0F0F0F

// sum over 4 ints of dp4a(v[i], u[i]) and of the u bytes (for offsets)
struct vd_sums {
    int dot, sum_u;
};
__host__ __device__ __forceinline__ vd_sums vd_dot4(int v0, int v1, int v2, int v3, int4 u) {
    vd_sums r;
    r.dot = vd_dp4a(v3, u.w, vd_dp4a(v2, u.z, vd_dp4a(v1, u.y, vd_dp4a(v0, u.x, 0))));
    r.sum_u = vd_dp4a(VD_ONES, u.w, vd_dp4a(VD_ONES, u.z, vd_dp4a(VD_ONES, u.y, vd_dp4a(VD_ONES, u.x, 0))));
    return r;
}

// Bits 0..3 of b to bit 4 of bytes 0..3 (the fifth bit of 4 Q5 quants).
__host__ __device__ __forceinline__ int vd_bit4(uint32_t b) {
    return (int)(((b & 1) << 4) | ((b & 2) << 11) | ((b & 4) << 18) | ((b & 8) << 25));
}

// The 6-bit scale and min of sub-block j of Q4_K/Q5_K (hl_q4_K_scale_min's
// formula) from the 12 scale bytes held in three words s0, s1, s2: bytes j %
// 4 of each word, combined by whether j < 4 (selects, no branches).
__host__ __device__ __forceinline__ void vd_scale_min_k4(uint32_t s0, uint32_t s1, uint32_t s2, int j, int *sc,
                                                         int *m) {
    const int sh = 8 * (j & 3);
    const int b0 = (int)((s0 >> sh) & 0xff), b1 = (int)((s1 >> sh) & 0xff), b2 = (int)((s2 >> sh) & 0xff);
    *sc = j < 4 ? b0 & 63 : (b2 & 15) | (b0 >> 6) << 4;
    *m = j < 4 ? b1 & 63 : (b2 >> 4) | (b1 >> 6) << 4;
}

// ------------------------------------------------------ quantization --

// The Q8_1 scale of a block whose largest |x| is amax, and the quant of x.
__host__ __device__ __forceinline__ float vd_q8_scale(float amax) { return amax / 127.0f; }
__host__ __device__ __forceinline__ int8_t vd_q8(float x, float d) {
    return d == 0.0f ? (int8_t)0 : (int8_t)roundf(x / d);
}

// ------------------------------------------------- block dot products --

// vq<T>::dot(block, c, aq, ads): the part of dot(weight block, activations)
// that chunk c (0 <= c < nc) of the block covers; summed over c it is the
// block's dot product. aq: the block's qk activation quants (16-byte
// aligned); ads: its qk / 32 (d, s) pairs.
template <uint32_t T> struct vq;

// 32-element blocks: chunk c covers elements 8c .. 8c + 7 and 16 + 8c .. 16 + 8c + 7
// (the low and high nibbles of quant bytes 8c .. 8c + 7). The offset term of
// the block (-8 or -16 times the quants, or + m) multiplies the block's sum
// s; each of the 2 chunks adds half of it.
template <> struct vq<GGML_TYPE_Q4_0> {
    static constexpr int qk = 32, nc = 2;
    using block = block_q4_0;
    __host__ __device__ static float dot(const uint8_t *blk, int c, const int8_t *aq, const float2 *ads) {
        const block *b = (const block *)blk;
        const int v0 = vd_ld2(b->qs + 8 * c), v1 = vd_ld2(b->qs + 8 * c + 4);
        const int2 ul = vd_ld8(aq + 8 * c), uh = vd_ld8(aq + 16 + 8 * c);
        const int s = vd_dp4a(
            (v1 >> 4) & VD_LO4, uh.y,
            vd_dp4a((v0 >> 4) & VD_LO4, uh.x, vd_dp4a(v1 & VD_LO4, ul.y, vd_dp4a(v0 & VD_LO4, ul.x, 0))));
        const float2 a = ads[0];
        return dq_half(b->d) * (a.x * (float)s - 4.0f * a.y);
    }
};
template <> struct vq<GGML_TYPE_Q4_1> {
    static constexpr int qk = 32, nc = 2;
    using block = block_q4_1;
    __host__ __device__ static float dot(const uint8_t *blk, int c, const int8_t *aq, const float2 *ads) {
        const block *b = (const block *)blk;
        const int v0 = vd_ld4(b->qs + 8 * c), v1 = vd_ld4(b->qs + 8 * c + 4);
        const int2 ul = vd_ld8(aq + 8 * c), uh = vd_ld8(aq + 16 + 8 * c);
        const int s = vd_dp4a(
            (v1 >> 4) & VD_LO4, uh.y,
            vd_dp4a((v0 >> 4) & VD_LO4, uh.x, vd_dp4a(v1 & VD_LO4, ul.y, vd_dp4a(v0 & VD_LO4, ul.x, 0))));
        const float2 a = ads[0];
        return dq_half(b->d) * a.x * (float)s + 0.5f * dq_half(b->m) * a.y;
    }
};
template <> struct vq<GGML_TYPE_Q5_0> {
    static constexpr int qk = 32, nc = 2;
    using block = block_q5_0;
    __host__ __device__ static float dot(const uint8_t *blk, int c, const int8_t *aq, const float2 *ads) {
        const block *b = (const block *)blk;
        const int v0 = vd_ld2(b->qs + 8 * c), v1 = vd_ld2(b->qs + 8 * c + 4);
        const uint32_t qh = (uint32_t)vd_ld2(b->qh);
        const int2 ul = vd_ld8(aq + 8 * c), uh = vd_ld8(aq + 16 + 8 * c);
        int s = vd_dp4a((v0 & VD_LO4) | vd_bit4(qh >> (8 * c)), ul.x, 0);
        s = vd_dp4a((v1 & VD_LO4) | vd_bit4(qh >> (8 * c + 4)), ul.y, s);
        s = vd_dp4a(((v0 >> 4) & VD_LO4) | vd_bit4(qh >> (16 + 8 * c)), uh.x, s);
        s = vd_dp4a(((v1 >> 4) & VD_LO4) | vd_bit4(qh >> (20 + 8 * c)), uh.y, s);
        const float2 a = ads[0];
        return dq_half(b->d) * (a.x * (float)s - 8.0f * a.y);
    }
};
template <> struct vq<GGML_TYPE_Q5_1> {
    static constexpr int qk = 32, nc = 2;
    using block = block_q5_1;
    __host__ __device__ static float dot(const uint8_t *blk, int c, const int8_t *aq, const float2 *ads) {
        const block *b = (const block *)blk;
        const int2 v = vd_ld8(b->qs + 8 * c); // 24-byte blocks: qs stays 8-byte aligned
        const uint32_t qh = (uint32_t)vd_ld4(b->qh);
        const int2 ul = vd_ld8(aq + 8 * c), uh = vd_ld8(aq + 16 + 8 * c);
        int s = vd_dp4a((v.x & VD_LO4) | vd_bit4(qh >> (8 * c)), ul.x, 0);
        s = vd_dp4a((v.y & VD_LO4) | vd_bit4(qh >> (8 * c + 4)), ul.y, s);
        s = vd_dp4a(((v.x >> 4) & VD_LO4) | vd_bit4(qh >> (16 + 8 * c)), uh.x, s);
        s = vd_dp4a(((v.y >> 4) & VD_LO4) | vd_bit4(qh >> (20 + 8 * c)), uh.y, s);
        const float2 a = ads[0];
        return dq_half(b->d) * a.x * (float)s + 0.5f * dq_half(b->m) * a.y;
    }
};
// chunk c: elements 16c .. 16c + 15
template <> struct vq<GGML_TYPE_Q8_0> {
    static constexpr int qk = 32, nc = 2;
    using block = block_q8_0;
    __host__ __device__ static float dot(const uint8_t *blk, int c, const int8_t *aq, const float2 *ads) {
        const block *b = (const block *)blk;
        const uint8_t *q = (const uint8_t *)b->qs + 16 * c;
        const int4 u = vd_ld16(aq + 16 * c);
        const vd_sums r = vd_dot4(vd_ld2(q), vd_ld2(q + 4), vd_ld2(q + 8), vd_ld2(q + 12), u);
        return dq_half(b->d) * ads[0].x * (float)r.dot;
    }
};

// K-quants with 2-bit low quants (Q2_K, Q3_K): chunk c = 2h + g covers quant
// bytes qs[32h + 16g + l] (l < 16), which hold the elements 128h + 32k + 16g
// + l at bits 2k (k < 4): 4 sub-blocks of 16 (8h + 2k + g), each half of
// activation block 4h + k.
template <> struct vq<GGML_TYPE_Q2_K> {
    static constexpr int qk = 256, nc = 4;
    using block = block_q2_K;
    __host__ __device__ static float dot(const uint8_t *blk, int c, const int8_t *aq, const float2 *ads) {
        const block *b = (const block *)blk;
        const int h = c / 2, g = c % 2;
        const uint8_t *q = b->qs + 32 * h + 16 * g;
        const int w0 = vd_ld4(q), w1 = vd_ld4(q + 4), w2 = vd_ld4(q + 8), w3 = vd_ld4(q + 12);
        float sd = 0.0f, sm = 0.0f;
        for (int k = 0; k < 4; k++) {
            const int sc = b->scales[8 * h + 2 * k + g];
            const int4 u = vd_ld16(aq + 32 * (4 * h + k) + 16 * g);
            const int sh = 2 * k;
            const vd_sums r = vd_dot4((w0 >> sh) & 0x03030303, (w1 >> sh) & 0x03030303, (w2 >> sh) & 0x03030303,
                                      (w3 >> sh) & 0x03030303, u);
            const float da = ads[4 * h + k].x;
            sd += da * (float)(r.dot * (sc & 15));
            sm += da * (float)(r.sum_u * (sc >> 4));
        }
        return dq_half(b->d) * sd - dq_half(b->dmin) * sm;
    }
};
template <> struct vq<GGML_TYPE_Q3_K> {
    static constexpr int qk = 256, nc = 4;
    using block = block_q3_K;
    __host__ __device__ static float dot(const uint8_t *blk, int c, const int8_t *aq, const float2 *ads) {
        const block *b = (const block *)blk;
        const int h = c / 2, g = c % 2;
        const uint8_t *q = b->qs + 32 * h + 16 * g, *hm = b->hmask + 16 * g;
        const int w0 = vd_ld2(q), w1 = vd_ld2(q + 4), w2 = vd_ld2(q + 8), w3 = vd_ld2(q + 12);
        const int m0 = vd_ld2(hm), m1 = vd_ld2(hm + 4), m2 = vd_ld2(hm + 8), m3 = vd_ld2(hm + 12);
        float sum = 0.0f;
        for (int k = 0; k < 4; k++) {
            const int i = 8 * h + 2 * k + g; // sub-block: its 6-bit scale (hl_q3_K_scale)
            const int lo = i < 8 ? b->scales[i] & 15 : b->scales[i - 8] >> 4;
            const int sc = (lo | ((b->scales[8 + i % 4] >> (2 * (i / 4))) & 3) << 4) - 32;
            const int4 u = vd_ld16(aq + 32 * (4 * h + k) + 16 * g);
            const int sh = 2 * k, hb = 4 * h + k;
            // q + 4 * hbit in 0..7; the element is q - 4 * !hbit = that - 4
            const vd_sums r = vd_dot4(((w0 >> sh) & 0x03030303) | ((m0 >> hb) & VD_ONES) << 2,
                                      ((w1 >> sh) & 0x03030303) | ((m1 >> hb) & VD_ONES) << 2,
                                      ((w2 >> sh) & 0x03030303) | ((m2 >> hb) & VD_ONES) << 2,
                                      ((w3 >> sh) & 0x03030303) | ((m3 >> hb) & VD_ONES) << 2, u);
            sum += ads[4 * h + k].x * (float)((r.dot - 4 * r.sum_u) * sc);
        }
        return dq_half(b->d) * sum;
    }
};

// Q4_K and Q5_K: chunk c = 2p + h covers quant bytes qs[32p + 16h + l] (l <
// 16, one 16-byte load), whose low nibbles are elements 64p + 16h + l
// (sub-block 2p) and high nibbles 64p + 32 + 16h + l (sub-block 2p + 1):
// half of activation blocks 2p and 2p + 1 each, so each chunk adds half of
// their min terms. The 16 header bytes (d, dmin, scales) are one load too.
template <> struct vq<GGML_TYPE_Q4_K> {
    static constexpr int qk = 256, nc = 8;
    using block = block_q4_K;
    __host__ __device__ static float dot(const uint8_t *blk, int c, const int8_t *aq, const float2 *ads) {
        const int p = c / 2, h = c % 2;
        const int4 hd = vd_ld16(blk);                       // d, dmin, scales[12]
        const int4 w = vd_ld16(blk + 16 + 32 * p + 16 * h); // qs
        const int4 u0 = vd_ld16(aq + 64 * p + 16 * h), u1 = vd_ld16(aq + 64 * p + 32 + 16 * h);
        const vd_sums r0 = vd_dot4(w.x & VD_LO4, w.y & VD_LO4, w.z & VD_LO4, w.w & VD_LO4, u0);
        const vd_sums r1 = vd_dot4((w.x >> 4) & VD_LO4, (w.y >> 4) & VD_LO4, (w.z >> 4) & VD_LO4, (w.w >> 4) & VD_LO4,
                                   u1);
        int sc0, m0, sc1, m1;
        vd_scale_min_k4((uint32_t)hd.y, (uint32_t)hd.z, (uint32_t)hd.w, 2 * p, &sc0, &m0);
        vd_scale_min_k4((uint32_t)hd.y, (uint32_t)hd.z, (uint32_t)hd.w, 2 * p + 1, &sc1, &m1);
        const float2 a0 = ads[2 * p], a1 = ads[2 * p + 1];
        const float sd = a0.x * (float)(r0.dot * sc0) + a1.x * (float)(r1.dot * sc1);
        const float sm = a0.y * (float)m0 + a1.y * (float)m1;
        return vd_half((uint32_t)hd.x) * sd - 0.5f * vd_half((uint32_t)hd.x >> 16) * sm;
    }
};
template <> struct vq<GGML_TYPE_Q5_K> {
    static constexpr int qk = 256, nc = 8;
    using block = block_q5_K;
    __host__ __device__ static float dot(const uint8_t *blk, int c, const int8_t *aq, const float2 *ads) {
        const int p = c / 2, h = c % 2;
        const int4 hd = vd_ld16(blk);                       // d, dmin, scales[12]
        const int4 qh = vd_ld16(blk + 16 + 16 * h);         // fifth bits of elements e % 32 = 16h + l
        const int4 w = vd_ld16(blk + 48 + 32 * p + 16 * h); // qs
        const int4 u0 = vd_ld16(aq + 64 * p + 16 * h), u1 = vd_ld16(aq + 64 * p + 32 + 16 * h);
        const int s0 = 2 * p, s1 = 2 * p + 1; // element e's fifth bit is bit e / 32
        const vd_sums r0 = vd_dot4(
            (w.x & VD_LO4) | ((qh.x >> s0) & VD_ONES) << 4, (w.y & VD_LO4) | ((qh.y >> s0) & VD_ONES) << 4,
            (w.z & VD_LO4) | ((qh.z >> s0) & VD_ONES) << 4, (w.w & VD_LO4) | ((qh.w >> s0) & VD_ONES) << 4, u0);
        const vd_sums r1 = vd_dot4(((w.x >> 4) & VD_LO4) | ((qh.x >> s1) & VD_ONES) << 4,
                                   ((w.y >> 4) & VD_LO4) | ((qh.y >> s1) & VD_ONES) << 4,
                                   ((w.z >> 4) & VD_LO4) | ((qh.z >> s1) & VD_ONES) << 4,
                                   ((w.w >> 4) & VD_LO4) | ((qh.w >> s1) & VD_ONES) << 4, u1);
        int sc0, m0, sc1, m1;
        vd_scale_min_k4((uint32_t)hd.y, (uint32_t)hd.z, (uint32_t)hd.w, s0, &sc0, &m0);
        vd_scale_min_k4((uint32_t)hd.y, (uint32_t)hd.z, (uint32_t)hd.w, s1, &sc1, &m1);
        const float2 a0 = ads[s0], a1 = ads[s1];
        const float sd = a0.x * (float)(r0.dot * sc0) + a1.x * (float)(r1.dot * sc1);
        const float sm = a0.y * (float)m0 + a1.y * (float)m1;
        return vd_half((uint32_t)hd.x) * sd - 0.5f * vd_half((uint32_t)hd.x >> 16) * sm;
    }
};

// Q6_K: chunk c = 4h + g covers ql[64h + 16g + l] and qh[32h + 16(g % 2) + l]
// (l < 16): low nibbles are elements 128h + 16g + l (sub-block 8h + g, high
// bits at shift 2(g / 2)), high nibbles 128h + 64 + 16g + l (sub-block 8h +
// 4 + g, shift 2(2 + g / 2)); each a half of one activation block.
template <> struct vq<GGML_TYPE_Q6_K> {
    static constexpr int qk = 256, nc = 8;
    using block = block_q6_K;
    __host__ __device__ static float dot(const uint8_t *blk, int c, const int8_t *aq, const float2 *ads) {
        const block *b = (const block *)blk;
        const int h = c / 4, g = c % 4;
        const uint8_t *ql = b->ql + 64 * h + 16 * g, *qh = b->qh + 32 * h + 16 * (g % 2);
        const int l0 = vd_ld2(ql), l1 = vd_ld2(ql + 4), l2 = vd_ld2(ql + 8), l3 = vd_ld2(ql + 12);
        const int h0 = vd_ld2(qh), h1 = vd_ld2(qh + 4), h2 = vd_ld2(qh + 8), h3 = vd_ld2(qh + 12);
        const int4 u0 = vd_ld16(aq + 128 * h + 16 * g), u1 = vd_ld16(aq + 128 * h + 64 + 16 * g);
        const int sa = 2 * (g / 2), sb = sa + 4;
        const vd_sums r0 = vd_dot4(
            (l0 & VD_LO4) | ((h0 >> sa) & 0x03030303) << 4, (l1 & VD_LO4) | ((h1 >> sa) & 0x03030303) << 4,
            (l2 & VD_LO4) | ((h2 >> sa) & 0x03030303) << 4, (l3 & VD_LO4) | ((h3 >> sa) & 0x03030303) << 4, u0);
        const vd_sums r1 = vd_dot4(((l0 >> 4) & VD_LO4) | ((h0 >> sb) & 0x03030303) << 4,
                                   ((l1 >> 4) & VD_LO4) | ((h1 >> sb) & 0x03030303) << 4,
                                   ((l2 >> 4) & VD_LO4) | ((h2 >> sb) & 0x03030303) << 4,
                                   ((l3 >> 4) & VD_LO4) | ((h3 >> sb) & 0x03030303) << 4, u1);
        // quants are q - 32
        const float s = ads[4 * h + g / 2].x * (float)((r0.dot - 32 * r0.sum_u) * b->scales[8 * h + g]) +
                        ads[4 * h + 2 + g / 2].x * (float)((r1.dot - 32 * r1.sum_u) * b->scales[8 * h + 4 + g]);
        return dq_half(b->d) * s;
    }
};

// Calls F::template run<T>(args...) for the types with a vq<T>; false for
// any other.
// clang-format off
#define HL_VQ_TYPES(X)                                                                                        \
    X(GGML_TYPE_Q4_0) X(GGML_TYPE_Q4_1) X(GGML_TYPE_Q5_0) X(GGML_TYPE_Q5_1) X(GGML_TYPE_Q8_0) X(GGML_TYPE_Q2_K) \
    X(GGML_TYPE_Q3_K) X(GGML_TYPE_Q4_K) X(GGML_TYPE_Q5_K) X(GGML_TYPE_Q6_K)
// clang-format on

template <typename F, typename... A> static bool dispatch_vq(uint32_t type, A &&...args) {
    switch (type) {
// clang-format off
#define HL_VQ_CASE(T)                                                                                          \
    case T:                                                                                                    \
        F::template run<T>(args...);                                                                           \
        return true;
        HL_VQ_TYPES(HL_VQ_CASE)
// clang-format on
#undef HL_VQ_CASE
    default: return false;
    }
}
