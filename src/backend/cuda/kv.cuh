// The KV cache's element types on the GPU (llama.cpp's -ctk / -ctv: F16,
// BF16, Q8_0, Q4_0; F32 too for store_rows) as templates on the ggml type:
// kv<T>::put writes a unit (an element, or a block of 32) from floats with
// the bytes the CPU backend writes (hl_cpu_cache_from_float: F16 and BF16
// rounded to nearest even, Q8_0 by llama.cpp's x86 CPU quantizer, Q4_0 by
// the reference one), so that store_rows and the K-shift give the CPU's
// bytes; kv_load8 reads 8 elements of a head for attention (dequant.cuh's
// dequantizers; 16-byte loads for the 2-byte types); kv_query rounds a query
// element to K's vec-dot type as the CPU does. The writers are __host__
// __device__: test_gpu_kv checks them on the host against the CPU backend.
#pragma once

#include <math.h>

#include "backend/cuda/dequant.cuh"

// ---- roundings shared by the host and the device

// F32 to F16 / BF16, to nearest even (quant.h's converters on the host).
__host__ __device__ __forceinline__ hl_half kv_f16(float x) {
#ifdef __CUDA_ARCH__
    return __half_as_ushort(__float2half_rn(x));
#else
    return hl_fp32_to_fp16(x);
#endif
}

__host__ __device__ __forceinline__ hl_bf16 kv_bf16(float x) {
#ifdef __CUDA_ARCH__
    return __bfloat16_as_ushort(__float2bfloat16_rn(x));
#else
    return hl_fp32_to_bf16(x);
#endif
}

// a * b + c with the product rounded before the sum, as the C library's
// quantizers compute it (C11 without contraction): nvcc would fuse them into
// one fma, which rounds once and can move a quant across its rounding edge.
__host__ __device__ __forceinline__ float kv_mul_add(float a, float b, float c) {
#ifdef __CUDA_ARCH__
    return __fadd_rn(__fmul_rn(a, b), c);
#else
    volatile float p = a * b; // no host contraction either
    return p + c;
#endif
}

// Q8_0 as llama.cpp's x86 CPU quantizer (vec_dot.h hl_act_q8_0_from_float):
// for a block of amax = max |x|, q = x * (127 / amax) rounded half to even
// and d = amax / 127 (the reference quantizer multiplies by 1 / d and rounds
// halves away from zero). Divisions are IEEE on the device (no fast math).
__host__ __device__ __forceinline__ float kv_q8_id(float amax) { return amax != 0.0f ? 127.0f / amax : 0.0f; }
__host__ __device__ __forceinline__ int kv_q8(float x, float id) { return (int)rintf(x * id); } // |q| <= 127

// The value element x takes in a Q8_0 block of max |x| = amax, so written
// and dequantized (d times q, exact in F32).
__host__ __device__ __forceinline__ float kv_q8_value(float x, float amax) {
    return dq_half(kv_f16(amax / 127.0f)) * (float)kv_q8(x, kv_q8_id(amax));
}

// ---- writers: kv<T>::put(x, y) writes unit y (kv<T>::n elements) from x[0, n)

template <uint32_t T> struct kv;

template <> struct kv<GGML_TYPE_F32> {
    using unit = float;
    static constexpr int n = 1;
    __host__ __device__ static void put(const float *x, unit *y) { *y = *x; }
};
template <> struct kv<GGML_TYPE_F16> {
    using unit = hl_half;
    static constexpr int n = 1;
    __host__ __device__ static void put(const float *x, unit *y) { *y = kv_f16(*x); }
};
template <> struct kv<GGML_TYPE_BF16> {
    using unit = hl_bf16;
    static constexpr int n = 1;
    __host__ __device__ static void put(const float *x, unit *y) { *y = kv_bf16(*x); }
};
template <> struct kv<GGML_TYPE_Q8_0> {
    using unit = block_q8_0;
    static constexpr int n = HL_QK;
    __host__ __device__ static void put(const float *x, unit *y) {
        float amax = 0.0f;
        for (int j = 0; j < HL_QK; j++) amax = fmaxf(amax, fabsf(x[j]));
        const float id = kv_q8_id(amax);
        for (int j = 0; j < HL_QK; j++) y->qs[j] = (int8_t)kv_q8(x[j], id);
        y->d = kv_f16(amax / 127.0f);
    }
};
// ggml's quantize_row_q4_0_ref (quant_legacy.c hl_q4_0_from_float): max the
// first element of largest |x|, d = max / -8, q = min(15, trunc(x / d + 8.5)).
template <> struct kv<GGML_TYPE_Q4_0> {
    using unit = block_q4_0;
    static constexpr int n = HL_QK;
    __host__ __device__ static void put(const float *x, unit *y) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < HL_QK; j++)
            if (amax < fabsf(x[j])) amax = fabsf(x[j]), max = x[j];
        const float d = max / -8.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        y->d = kv_f16(d);
        for (int j = 0; j < HL_QK / 2; j++) {
            const int q0 = (int)kv_mul_add(x[j], id, 8.5f), q1 = (int)kv_mul_add(x[j + HL_QK / 2], id, 8.5f);
            y->qs[j] = (uint8_t)((q0 > 15 ? 15 : q0) | ((q1 > 15 ? 15 : q1) << 4));
        }
    }
};

// Bytes of n elements of a cache of type T (n whole units).
template <uint32_t T> __host__ __device__ __forceinline__ int64_t kv_bytes(int64_t n) {
    return n / kv<T>::n * (int64_t)sizeof(typename kv<T>::unit);
}

// ---- attention's reads

// Chunk c (elements [8c, 8c + 8)) of a head that starts at byte `head` of a
// cache of type T. F16 and BF16 chunks are 16 aligned bytes (heads of whole
// chunks in a 16-byte aligned cache); Q8_0 and Q4_0 blocks (34 and 18 bytes)
// are only 2-byte aligned, so dequant.cuh reads their bytes one by one.
template <uint32_t T> __device__ __forceinline__ void kv_load8(const uint8_t *head, int c, float f[8]) {
    if constexpr (qtype<T>::plain) {
        plain<T>::get16(head + 16 * c, f);
    } else {
        using Q = qtype<T>;
        constexpr int per_block = Q::qk / 8;
        Q::deq8((const typename Q::block *)head + c / per_block, (c % per_block) * 8, f);
    }
}

// Query element x as the CPU's attention rounds it for a K cache of type T
// (to K's vec-dot type: cpu/attention.c, cpu/flash_attn.c): BF16 for BF16;
// Q8_0 blocks for Q8_0 and Q4_0, with the CPU quantizer above, so that each
// score is the product the CPU sums. Kept in F32 for F16 (the F16 kernel's
// measured bounds against the CPU's F16 query hold). For the quantized
// types all 32 lanes of a warp call it together on one block's 32
// consecutive elements (lane i on element i).
template <uint32_t T> __device__ __forceinline__ float kv_query(float x) {
    if constexpr (T == GGML_TYPE_F16) {
        return x;
    } else if constexpr (T == GGML_TYPE_BF16) {
        return dq_bf16(kv_bf16(x));
    } else {
        float amax = fabsf(x);
        for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
        return kv_q8_value(x, amax);
    }
}

// ---- dispatch

// Calls F::template run<T>(args...) for the cache types attention and the
// K-shift read (hearth_kv_type); false for any other type.
template <typename F, typename... A> static bool kv_dispatch(uint32_t type, A &&...args) {
    switch (type) {
    case GGML_TYPE_F16: F::template run<GGML_TYPE_F16>(args...); return true;
    case GGML_TYPE_BF16: F::template run<GGML_TYPE_BF16>(args...); return true;
    case GGML_TYPE_Q8_0: F::template run<GGML_TYPE_Q8_0>(args...); return true;
    case GGML_TYPE_Q4_0: F::template run<GGML_TYPE_Q4_0>(args...); return true;
    default: return false;
    }
}

// Whether a cache of `type` with rows (or heads) of n elements is one of
// those types in whole units.
static inline bool kv_type_runs(uint32_t type, int64_t n) {
    switch (type) {
    case GGML_TYPE_F16:
    case GGML_TYPE_BF16: return n > 0;
    case GGML_TYPE_Q8_0:
    case GGML_TYPE_Q4_0: return n > 0 && n % HL_QK == 0;
    default: return false;
    }
}
