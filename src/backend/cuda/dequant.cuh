// Per-type dequantizers of the CUDA kernels, written once as __host__
// __device__ functions over the block layouts of quant/quant.h and
// quant/quant_k.h (whose comments give the formulas; ggml-common.h and
// dequantize_row_* in ggml-quants.c are the source). Every kernel that reads
// weights (matvec, the F16 tiles for cuBLAS, get_rows) goes through
// dequant_chunk, and hl_cuda_dequant_host runs the same code on the host so
// tests check it against quant/'s reference dequantizers without a GPU.
//
// The unit is a chunk of 8 consecutive elements of a row: chunk c of a row
// covers elements [8c, 8c + 8). A quantized block of QK elements holds QK/8
// chunks. Plain types (F32, F16, BF16) are treated as blocks of 8 elements;
// their rows may end in a partial chunk.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

// quant.h is C11; its layout checks are C11's _Static_assert, which is
// C++'s static_assert.
#define _Static_assert static_assert
extern "C" {
#include "quant/quant.h"
}
#undef _Static_assert

__host__ __device__ __forceinline__ float dq_half(hl_half h) {
#ifdef __CUDA_ARCH__
    return __half2float(__ushort_as_half(h));
#else
    return hl_fp16_to_fp32(h);
#endif
}

__host__ __device__ __forceinline__ float dq_bf16(hl_bf16 h) {
#ifdef __CUDA_ARCH__
    return __uint_as_float((uint32_t)h << 16);
#else
    return hl_bf16_to_fp32(h);
#endif
}

template <uint32_t T> struct qtype;

// ---- plain types: element i of a row

template <> struct qtype<GGML_TYPE_F32> {
    static constexpr bool plain = true;
    __host__ __device__ static float get(const uint8_t *row, int64_t i) { return ((const float *)row)[i]; }
};
template <> struct qtype<GGML_TYPE_F16> {
    static constexpr bool plain = true;
    __host__ __device__ static float get(const uint8_t *row, int64_t i) { return dq_half(((const hl_half *)row)[i]); }
};
template <> struct qtype<GGML_TYPE_BF16> {
    static constexpr bool plain = true;
    __host__ __device__ static float get(const uint8_t *row, int64_t i) { return dq_bf16(((const hl_bf16 *)row)[i]); }
};

// 16 bytes of a row of plain type T as floats (device only: the vector loads
// of matvec_plain and of attention's F16/BF16 cache; one element: qtype<T>::get).
template <uint32_t T> struct plain;
template <> struct plain<GGML_TYPE_F32> {
    static constexpr int per16 = 4;
    __device__ static void get16(const uint8_t *p, float *v) {
        const float4 f = *(const float4 *)p;
        v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
    }
};
template <> struct plain<GGML_TYPE_F16> {
    static constexpr int per16 = 8;
    __device__ static void get16(const uint8_t *p, float *v) {
        const uint4 u = *(const uint4 *)p;
        const uint32_t wd[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const float2 f = __half22float2(*(const __half2 *)&wd[k]);
            v[2 * k] = f.x, v[2 * k + 1] = f.y;
        }
    }
};
template <> struct plain<GGML_TYPE_BF16> {
    static constexpr int per16 = 8;
    __device__ static void get16(const uint8_t *p, float *v) {
        const uint4 u = *(const uint4 *)p;
        const uint32_t wd[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int k = 0; k < 4; k++) {
            v[2 * k] = __uint_as_float(wd[k] << 16);
            v[2 * k + 1] = __uint_as_float(wd[k] & 0xffff0000u);
        }
    }
};

// ---- 32-element types: v[k] = element j0 + k of the block (j0 = 0, 8, 16, 24)

// 4-bit quant of element e: low nibbles hold elements 0..15, high 16..31.
__host__ __device__ __forceinline__ int dq_nibble(const uint8_t *qs, int e) {
    return e < 16 ? qs[e] & 15 : qs[e - 16] >> 4;
}

// Bit 4 of element e of Q5_0/Q5_1: bit e of the little-endian uint32 qh.
__host__ __device__ __forceinline__ int dq_bit5(const uint8_t qh[4], int e) {
    return ((qh[e / 8] >> (e % 8)) & 1) << 4;
}

template <> struct qtype<GGML_TYPE_Q4_0> {
    static constexpr bool plain = false;
    static constexpr int qk = HL_QK;
    using block = block_q4_0;
    __host__ __device__ static void deq8(const block *b, int j0, float v[8]) {
        const float d = dq_half(b->d);
        for (int k = 0; k < 8; k++) v[k] = d * (float)(dq_nibble(b->qs, j0 + k) - 8);
    }
};
template <> struct qtype<GGML_TYPE_Q4_1> {
    static constexpr bool plain = false;
    static constexpr int qk = HL_QK;
    using block = block_q4_1;
    __host__ __device__ static void deq8(const block *b, int j0, float v[8]) {
        const float d = dq_half(b->d), m = dq_half(b->m);
        for (int k = 0; k < 8; k++) v[k] = d * (float)dq_nibble(b->qs, j0 + k) + m;
    }
};
template <> struct qtype<GGML_TYPE_Q5_0> {
    static constexpr bool plain = false;
    static constexpr int qk = HL_QK;
    using block = block_q5_0;
    __host__ __device__ static void deq8(const block *b, int j0, float v[8]) {
        const float d = dq_half(b->d);
        for (int k = 0; k < 8; k++) {
            const int e = j0 + k;
            v[k] = d * (float)((dq_nibble(b->qs, e) | dq_bit5(b->qh, e)) - 16);
        }
    }
};
template <> struct qtype<GGML_TYPE_Q5_1> {
    static constexpr bool plain = false;
    static constexpr int qk = HL_QK;
    using block = block_q5_1;
    __host__ __device__ static void deq8(const block *b, int j0, float v[8]) {
        const float d = dq_half(b->d), m = dq_half(b->m);
        for (int k = 0; k < 8; k++) {
            const int e = j0 + k;
            v[k] = d * (float)(dq_nibble(b->qs, e) | dq_bit5(b->qh, e)) + m;
        }
    }
};
template <> struct qtype<GGML_TYPE_Q8_0> {
    static constexpr bool plain = false;
    static constexpr int qk = HL_QK;
    using block = block_q8_0;
    __host__ __device__ static void deq8(const block *b, int j0, float v[8]) {
        const float d = dq_half(b->d);
        for (int k = 0; k < 8; k++) v[k] = d * (float)b->qs[j0 + k];
    }
};

// ---- K-quants: v[k] = element e0 + k of the super-block (e0 a multiple of
// 8, so the 8 elements share one sub-block of 16 or 32)

template <> struct qtype<GGML_TYPE_Q2_K> {
    static constexpr bool plain = false;
    static constexpr int qk = HL_QK_K;
    using block = block_q2_K;
    __host__ __device__ static void deq8(const block *b, int e0, float v[8]) {
        const int s = b->scales[e0 / 16];
        const float dl = dq_half(b->d) * (float)(s & 15), ml = dq_half(b->dmin) * (float)(s >> 4);
        for (int k = 0; k < 8; k++) {
            const int e = e0 + k;
            const int q = (b->qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
            v[k] = dl * (float)q - ml;
        }
    }
};
template <> struct qtype<GGML_TYPE_Q3_K> {
    static constexpr bool plain = false;
    static constexpr int qk = HL_QK_K;
    using block = block_q3_K;
    __host__ __device__ static void deq8(const block *b, int e0, float v[8]) {
        const int i = e0 / 16; // 6-bit scale of sub-block i (hl_q3_K_scale)
        const int lo = i < 8 ? b->scales[i] & 15 : b->scales[i - 8] >> 4;
        const int sc = lo | ((b->scales[8 + i % 4] >> (2 * (i / 4))) & 3) << 4;
        const float dl = dq_half(b->d) * (float)(sc - 32);
        for (int k = 0; k < 8; k++) {
            const int e = e0 + k;
            const int q = (b->qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
            const int hbit = (b->hmask[e % 32] >> (e / 32)) & 1;
            v[k] = dl * (float)(q - (hbit ? 0 : 4));
        }
    }
};

// The 6-bit scale and min of sub-block j of Q4_K/Q5_K (hl_q4_K_scale_min).
__host__ __device__ __forceinline__ void dq_scale_min_k4(const uint8_t *s, int j, int *sc, int *m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | (s[j - 4] >> 6) << 4;
        *m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

template <> struct qtype<GGML_TYPE_Q4_K> {
    static constexpr bool plain = false;
    static constexpr int qk = HL_QK_K;
    using block = block_q4_K;
    __host__ __device__ static void deq8(const block *b, int e0, float v[8]) {
        int sc, m;
        dq_scale_min_k4(b->scales, e0 / 32, &sc, &m);
        const float d1 = dq_half(b->d) * (float)sc, m1 = dq_half(b->dmin) * (float)m;
        for (int k = 0; k < 8; k++) {
            const int e = e0 + k;
            const uint8_t byte = b->qs[32 * (e / 64) + e % 32];
            v[k] = d1 * (float)(e % 64 < 32 ? byte & 15 : byte >> 4) - m1;
        }
    }
};
template <> struct qtype<GGML_TYPE_Q5_K> {
    static constexpr bool plain = false;
    static constexpr int qk = HL_QK_K;
    using block = block_q5_K;
    __host__ __device__ static void deq8(const block *b, int e0, float v[8]) {
        int sc, m;
        dq_scale_min_k4(b->scales, e0 / 32, &sc, &m);
        const float d1 = dq_half(b->d) * (float)sc, m1 = dq_half(b->dmin) * (float)m;
        for (int k = 0; k < 8; k++) {
            const int e = e0 + k;
            const uint8_t byte = b->qs[32 * (e / 64) + e % 32];
            const int q = (e % 64 < 32 ? byte & 15 : byte >> 4) + 16 * ((b->qh[e % 32] >> (e / 32)) & 1);
            v[k] = d1 * (float)q - m1;
        }
    }
};
template <> struct qtype<GGML_TYPE_Q6_K> {
    static constexpr bool plain = false;
    static constexpr int qk = HL_QK_K;
    using block = block_q6_K;
    __host__ __device__ static void deq8(const block *b, int e0, float v[8]) {
        const float dl = dq_half(b->d) * (float)b->scales[e0 / 16];
        for (int k = 0; k < 8; k++) {
            const int e = e0 + k, h = e / 128, r = e % 128;
            const uint8_t l = b->ql[64 * h + r % 64];
            const int lo = r < 64 ? l & 15 : l >> 4;
            const int hi = (b->qh[32 * h + r % 32] >> (2 * (r / 32))) & 3;
            v[k] = dl * (float)((lo | hi << 4) - 32);
        }
    }
};

// Chunk c of a row of d elements into v; returns how many of v are elements
// (8, fewer only at the end of a plain row). Quantized rows hold whole blocks.
template <uint32_t T>
__host__ __device__ __forceinline__ int dequant_chunk(const uint8_t *row, int64_t d, int64_t c, float v[8]) {
    using Q = qtype<T>;
    if constexpr (Q::plain) {
        const int64_t i0 = 8 * c;
        const int n = d - i0 < 8 ? (int)(d - i0) : 8;
        for (int k = 0; k < n; k++) v[k] = Q::get(row, i0 + k);
        return n;
    } else {
        constexpr int per_block = Q::qk / 8;
        const typename Q::block *b = (const typename Q::block *)row + c / per_block;
        Q::deq8(b, (int)(c % per_block) * 8, v);
        return 8;
    }
}

// Chunks in a row of d elements.
__host__ __device__ __forceinline__ int64_t dq_chunks(int64_t d) { return (d + 7) / 8; }

// Calls F::template run<T>(args...) for the weight types the CUDA backend
// computes with; false for any other type.
// clang-format off
#define HL_CUDA_TYPES(X)                                                                                      \
    X(GGML_TYPE_F32) X(GGML_TYPE_F16) X(GGML_TYPE_BF16) X(GGML_TYPE_Q4_0) X(GGML_TYPE_Q4_1) X(GGML_TYPE_Q5_0) \
    X(GGML_TYPE_Q5_1) X(GGML_TYPE_Q8_0) X(GGML_TYPE_Q2_K) X(GGML_TYPE_Q3_K) X(GGML_TYPE_Q4_K)                 \
    X(GGML_TYPE_Q5_K) X(GGML_TYPE_Q6_K)
// clang-format on

template <typename F, typename... A> static bool dispatch_type(uint32_t type, A &&...args) {
    switch (type) {
// clang-format off
#define HL_CUDA_CASE(T)                                                                                        \
    case T:                                                                                                    \
        F::template run<T>(args...);                                                                           \
        return true;
        HL_CUDA_TYPES(HL_CUDA_CASE)
// clang-format on
#undef HL_CUDA_CASE
    default: return false;
    }
}
