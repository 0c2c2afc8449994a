/* Per-type dequantizers of the OpenCL kernels (OpenCL C 1.2), over the block
 * layouts of src/quant/quant.h and src/quant/quant_k.h, whose comments give
 * the formulas (ggml-common.h and dequantize_row_* in ggml-quants.c are the
 * source); backend/cuda/dequant.cuh is the same code for CUDA. Everything
 * is inlined, so a kernel made for one type (matmul.cl) keeps no branch on
 * the others. Blocks are
 * read as bytes at the offsets of those structs (program.c checks their
 * sizes), F16 scales through vload_half, so no cl_khr_fp16 is needed.
 *
 * The unit is a chunk of 8 consecutive elements of a row: chunk c covers
 * elements [8c, 8c + 8). Plain types (F32, F16, BF16) may end in a partial
 * chunk; quantized rows are whole blocks. The type ids T_* are ggml's,
 * passed as build options by program.c. */

static inline float ld_half(global const uchar *p) { return vload_half(0, (global const half *)p); }

/* 4-bit quant of element e of a 32-block: low nibbles hold 0..15, high 16..31 */
static inline int nibble(global const uchar *qs, int e) { return e < 16 ? qs[e] & 15 : qs[e - 16] >> 4; }

/* bit 4 of element e of Q5_0/Q5_1: bit e of the little-endian uint32 qh */
static inline int bit5(global const uchar *qh, int e) { return ((qh[e / 8] >> (e % 8)) & 1) << 4; }

/* the 6-bit scale and min of sub-block j of Q4_K/Q5_K (hl_q4_K_scale_min) */
static inline void scale_min_k4(global const uchar *s, int j, float *sc, float *m) {
    if (j < 4) {
        *sc = (float)(s[j] & 63);
        *m = (float)(s[j + 4] & 63);
    } else {
        *sc = (float)((s[j + 4] & 15) | (s[j - 4] >> 6) << 4);
        *m = (float)((s[j + 4] >> 4) | (s[j] >> 6) << 4);
    }
}

/* Elements j0 .. j0 + 7 of a 32-element block b (block_q4_0 ... block_q8_0). */
static inline __attribute__((always_inline)) void deq8_32(int type, global const uchar *b, int j0, float *v) {
    if (type == T_Q4_0) { /* d, qs[16] */
        const float d = ld_half(b);
        for (int k = 0; k < 8; k++) v[k] = d * (float)(nibble(b + 2, j0 + k) - 8);
    } else if (type == T_Q4_1) { /* d, m, qs[16] */
        const float d = ld_half(b), m = ld_half(b + 2);
        for (int k = 0; k < 8; k++) v[k] = d * (float)nibble(b + 4, j0 + k) + m;
    } else if (type == T_Q5_0) { /* d, qh[4], qs[16] */
        const float d = ld_half(b);
        for (int k = 0; k < 8; k++) v[k] = d * (float)((nibble(b + 6, j0 + k) | bit5(b + 2, j0 + k)) - 16);
    } else if (type == T_Q5_1) { /* d, m, qh[4], qs[16] */
        const float d = ld_half(b), m = ld_half(b + 2);
        for (int k = 0; k < 8; k++) v[k] = d * (float)(nibble(b + 8, j0 + k) | bit5(b + 4, j0 + k)) + m;
    } else { /* Q8_0: d, qs[32] signed */
        const float d = ld_half(b);
        for (int k = 0; k < 8; k++) v[k] = d * (float)((global const char *)(b + 2))[j0 + k];
    }
}

/* Elements e0 .. e0 + 7 of a 256-element super-block b (e0 a multiple of 8,
 * so the 8 share one sub-block of 16 or 32). */
static inline __attribute__((always_inline)) void deq8_k(int type, global const uchar *b, int e0, float *v) {
    if (type == T_Q2_K) { /* scales[16], qs[64], d, dmin */
        const int s = b[e0 / 16];
        const float dl = ld_half(b + 80) * (float)(s & 15), ml = ld_half(b + 82) * (float)(s >> 4);
        for (int k = 0; k < 8; k++) {
            const int e = e0 + k;
            v[k] = dl * (float)((b[16 + 32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3) - ml;
        }
    } else if (type == T_Q3_K) { /* hmask[32], qs[64], scales[12], d; hl_q3_K_scale */
        global const uchar *sc = b + 96;
        const int i = e0 / 16;
        const int lo = i < 8 ? sc[i] & 15 : sc[i - 8] >> 4;
        const float dl = ld_half(b + 108) * (float)((lo | ((sc[8 + i % 4] >> (2 * (i / 4))) & 3) << 4) - 32);
        for (int k = 0; k < 8; k++) {
            const int e = e0 + k;
            const int q = (b[32 + 32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
            v[k] = dl * (float)(q - (((b[e % 32] >> (e / 32)) & 1) ? 0 : 4));
        }
    } else if (type == T_Q4_K || type == T_Q5_K) { /* d, dmin, scales[12], (Q5_K: qh[32],) qs[128] */
        float sc, m;
        scale_min_k4(b + 4, e0 / 32, &sc, &m);
        const float d1 = ld_half(b) * sc, m1 = ld_half(b + 2) * m;
        global const uchar *qs = b + (type == T_Q4_K ? 16 : 48);
        for (int k = 0; k < 8; k++) {
            const int e = e0 + k;
            const uchar byte = qs[32 * (e / 64) + e % 32];
            int q = e % 64 < 32 ? byte & 15 : byte >> 4;
            if (type == T_Q5_K) q += 16 * ((b[16 + e % 32] >> (e / 32)) & 1);
            v[k] = d1 * (float)q - m1;
        }
    } else { /* Q6_K: ql[128], qh[64], scales[16] signed, d */
        const float dl = ld_half(b + 208) * (float)((global const char *)(b + 192))[e0 / 16];
        for (int k = 0; k < 8; k++) {
            const int e = e0 + k, h = e / 128, r = e % 128;
            const uchar l = b[64 * h + r % 64];
            const int lo = r < 64 ? l & 15 : l >> 4;
            const int hi = (b[128 + 32 * h + r % 32] >> (2 * (r / 32))) & 3;
            v[k] = dl * (float)((lo | hi << 4) - 32);
        }
    }
}

/* Bytes of a block of `type` (blocks of 32, then super-blocks of 256). */
static inline int block_bytes(int type) {
    return type == T_Q4_0 ? 18 : type == T_Q4_1 ? 20 : type == T_Q5_0 ? 22 : type == T_Q5_1 ? 24 : type == T_Q8_0 ? 34
         : type == T_Q2_K ? 84 : type == T_Q3_K ? 110 : type == T_Q4_K ? 144 : type == T_Q5_K ? 176 : 210;
}

/* Chunk c of a row of d elements of `type` into v; returns how many of v
 * are elements (8, fewer only at the end of a plain row). */
static inline __attribute__((always_inline)) int dequant8(int type, global const uchar *row, long d, long c, float *v) {
    if (type == T_F32 || type == T_F16 || type == T_BF16) {
        const long i0 = 8 * c;
        const int n = d - i0 < 8 ? (int)(d - i0) : 8;
        for (int k = 0; k < n; k++)
            v[k] = type == T_F32   ? ((global const float *)row)[i0 + k]
                   : type == T_F16 ? vload_half(i0 + k, (global const half *)row)
                                   : as_float((uint)((global const ushort *)row)[i0 + k] << 16); /* BF16: the high half */
        return n;
    }
    const bool k_quant = type == T_Q2_K || type == T_Q3_K || type == T_Q4_K || type == T_Q5_K || type == T_Q6_K;
    const int per_block = k_quant ? 32 : 4; /* chunks per block */
    global const uchar *b = row + (c / per_block) * block_bytes(type);
    if (k_quant) deq8_k(type, b, (int)(c % per_block) * 8, v);
    else deq8_32(type, b, (int)(c % per_block) * 8, v);
    return 8;
}

/* A tensor argument: its buffer and the byte offset of its data there. */
#define AT(type, buf, off) ((global type *)((global uchar *)(buf) + (off)))
#define AT_C(type, buf, off) ((global const type *)((global const uchar *)(buf) + (off)))
