/* AVX2 + FMA + F16C row kernels (row_kernels.h) that reproduce llama.cpp's
 * x86 AVX-512 arithmetic bit for bit, using ggml's 16-lane operations as
 * spelled in simd16_avx2.h. Compiled with -mavx2 -mfma -mf16c and used only
 * after hl_cpu_level_best() says the CPU has them; -std=c11 keeps GCC from
 * contracting the scalar tails into FMAs that ggml does not do. */
#include <math.h>

#include "backend/cpu/row_kernels.h"
#include "backend/cpu/rope_rotate.h"
#include "backend/cpu/x86_avx2/simd16_avx2.h"

/* ggml_vec_swiglu_f32 (ggml-cpu/vec.cpp): ggml_v_silu(x) * g on whole
 * 16-lane chunks (lane-wise, so 8 lanes at a time is the same), and
 * ggml_silu_f32 = x / (1 + expf(-x)) with libm's expf on the n % 16 tail. */
static void swiglu(int64_t n, float *y, const float *x, const float *g) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        for (int h = 0; h < 16; h += 8) {
            const __m256 s = silu8_ggml(_mm256_loadu_ps(x + i + h));
            _mm256_storeu_ps(y + i + h, _mm256_mul_ps(s, _mm256_loadu_ps(g + i + h)));
        }
    }
    for (; i < n; i++) y[i] = x[i] / (1.0f + expf(-x[i])) * g[i];
}

/* GELU by the F16 table, 8 lanes at a time: F16C's vcvtps2ph rounds to
 * nearest even as hl_fp32_to_fp16 (and ggml's GGML_CPU_FP32_TO_FP16) does,
 * the table is read lane by lane, vcvtph2ps widens exactly; then the -10
 * and 10 ends as the scalar kernel. */
static void gelu(int64_t n, float *x, const hl_half *table) {
    const __m256 lo = _mm256_set1_ps(-10.0f), hi = _mm256_set1_ps(10.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        hl_half h[8];
        _mm_storeu_si128((__m128i *)h, _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
        for (int k = 0; k < 8; k++) h[k] = table[h[k]];
        __m256 g = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h));
        g = _mm256_blendv_ps(g, v, _mm256_cmp_ps(v, hi, _CMP_GE_OQ));
        g = _mm256_blendv_ps(g, _mm256_setzero_ps(), _mm256_cmp_ps(v, lo, _CMP_LE_OQ));
        _mm256_storeu_ps(x + i, g);
    }
    for (; i < n; i++)
        x[i] = x[i] <= -10.0f ? 0.0f : x[i] >= 10.0f ? x[i] : hl_fp16_to_fp32(table[hl_fp32_to_fp16(x[i])]);
}

/* ggml_vec_soft_max_f32: 16 lanes of ggml_v_expf at a time, each chunk
 * reduced in float and added to a double. llama.cpp's rows are the padded
 * cache (a multiple of 256), so a partial last chunk here stands for a full
 * one whose other lanes are masked: -inf, whose exp is 0. */
static double softmax_exp(int64_t n, float *s, float max) {
    const v16 vmax = v16_set1(max);
    double sum = 0.0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        const v16 e = v16_expf(
            (v16){_mm256_sub_ps(_mm256_loadu_ps(s + i), vmax.lo), _mm256_sub_ps(_mm256_loadu_ps(s + i + 8), vmax.hi)});
        v16_store(s + i, e);
        sum += (double)v16_reduce(e);
    }
    if (i < n) {
        float tail[16];
        for (int k = 0; k < 16; k++) tail[k] = i + k < n ? s[i + k] : -INFINITY;
        const v16 e = v16_expf(
            (v16){_mm256_sub_ps(_mm256_loadu_ps(tail), vmax.lo), _mm256_sub_ps(_mm256_loadu_ps(tail + 8), vmax.hi)});
        v16_store(tail, e);
        sum += (double)v16_reduce(e);
        for (int k = 0; i + k < n; k++) s[i + k] = tail[k];
    }
    return sum;
}

/* VEC_DOT: ggml_vec_dot_f16. TINYBLAS: tinyBLAS<16, __m512, ...>::gemm_bloc
 * (llamafile/sgemm.cpp): one 16-lane accumulator, an FMA per 16 elements,
 * then _mm512_reduce_add_ps. */
static float dot_f16(int64_t n, const hl_half *x, const hl_half *y, hl_attn_order order) {
    if (order == HL_ATTN_VEC_DOT) return ggml_dot_f16(n, x, y);
    v16 acc = v16_zero();
    for (int64_t i = 0; i + 16 <= n; i += 16) acc = v16_fma(v16_load_f16(x + i), v16_load_f16(y + i), acc);
    return v16_reduce(acc);
}

/* --------------------------------------------------------------- P * V -- */

/* llama.cpp forms each output dimension d as one dot product over the cache
 * positions j of V^T row d with P. Position j goes to a fixed lane of a fixed
 * accumulator: for ggml_vec_dot_f16, lane j % 16 of accumulator (j / 16) % 4,
 * 64 "classes"; for tinyBLAS, lane j % 16 of its single accumulator, 16
 * classes. Each class is a chain of FMAs in position order. hearth's V rows
 * are per position, so here one FMA per position updates the class's
 * accumulators for a block of dimensions at once; the classes are combined
 * at the end in ggml's order. */

#define PV_DIMS 64 /* dimensions per block: 64 classes x 64 floats = 16 KiB */
#define PV_CLASSES_MAX 64

/* Combines the classes of one group of lanes. cls(k) is the value of class k
 * (an 8-dimension vector); ggml reduces accumulators (0 + 2) + (1 + 3), then
 * the 16 lanes as _mm512_reduce_add_ps. */
static inline __m256 pv_reduce8(const float (*acc)[PV_DIMS], int n_cls, int32_t d) {
    __m256 t[16];
    for (int l = 0; l < 16; l++) {
        const __m256 a0 = _mm256_loadu_ps(&acc[l][d]);
        if (n_cls == 16) {
            t[l] = a0;
            continue;
        }
        const __m256 a1 = _mm256_loadu_ps(&acc[16 + l][d]), a2 = _mm256_loadu_ps(&acc[32 + l][d]);
        const __m256 a3 = _mm256_loadu_ps(&acc[48 + l][d]);
        t[l] = _mm256_add_ps(_mm256_add_ps(a0, a2), _mm256_add_ps(a1, a3));
    }
    for (int l = 0; l < 8; l++) t[l] = _mm256_add_ps(t[l], t[l + 8]);
    for (int l = 0; l < 4; l++) t[l] = _mm256_add_ps(t[l], t[l + 4]);
    return _mm256_add_ps(_mm256_add_ps(t[0], t[2]), _mm256_add_ps(t[1], t[3]));
}

/* The same for one dimension (head sizes that are not a multiple of 8). */
static inline float pv_reduce1(const float (*acc)[PV_DIMS], int n_cls, int32_t d) {
    float t[16];
    for (int l = 0; l < 16; l++) {
        t[l] = n_cls == 16 ? acc[l][d] : (acc[l][d] + acc[32 + l][d]) + (acc[16 + l][d] + acc[48 + l][d]);
    }
    for (int l = 0; l < 8; l++) t[l] += t[l + 8];
    for (int l = 0; l < 4; l++) t[l] += t[l + 4];
    return (t[0] + t[2]) + (t[1] + t[3]);
}

/* Dimensions [d0, d0 + nd) of the output. */
static void pv_block(int64_t n, const hl_half *p, const void *v, size_t v_stride, int32_t d0, int32_t nd, int n_cls,
                     float *out) {
    float acc[PV_CLASSES_MAX][PV_DIMS];
    for (int c = 0; c < n_cls; c++)
        for (int32_t d = 0; d < nd; d++) acc[c][d] = 0.0f;
    const int32_t nd8 = nd & ~7;
    for (int64_t j = 0; j < n; j++) {
        const hl_half *row = (const hl_half *)((const char *)v + (size_t)j * v_stride) + d0;
        const float pj = hl_fp16_to_fp32(p[j]);
        const __m256 pv8 = _mm256_set1_ps(pj);
        float *a = acc[j % n_cls];
        int32_t d = 0;
        for (; d < nd8; d += 8) {
            const __m256 vd = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(row + d)));
            _mm256_storeu_ps(a + d, _mm256_fmadd_ps(vd, pv8, _mm256_loadu_ps(a + d)));
        }
        for (; d < nd; d++) a[d] = fmaf(hl_fp16_to_fp32(row[d]), pj, a[d]);
    }
    int32_t d = 0;
    for (; d < nd8; d += 8) _mm256_storeu_ps(out + d0 + d, pv_reduce8((const float(*)[PV_DIMS])acc, n_cls, d));
    for (; d < nd; d++) out[d0 + d] = pv_reduce1((const float(*)[PV_DIMS])acc, n_cls, d);
}

static void pv(int64_t n, const hl_half *p, const void *v, size_t v_stride, int32_t hd, float *out,
               hl_attn_order order) {
    const int n_cls = order == HL_ATTN_TINYBLAS ? 16 : 64;
    for (int32_t d0 = 0; d0 < hd; d0 += PV_DIMS) {
        pv_block(n, p, v, v_stride, d0, hd - d0 < PV_DIMS ? hd - d0 : PV_DIMS, n_cls, out);
    }
}

const hl_cpu_kernels hl_cpu_kernels_avx2 = {
    .swiglu = swiglu,
    .gelu = gelu,
    .softmax_exp = softmax_exp,
    .dot_f16 = dot_f16,
    .pv = pv,
    .rope_rotate = hl_rope_rotate,
};
