/* Prompt products of the OpenCL backend through CLBlast (Nugteren 2018,
 * "CLBlast: A Tuned OpenCL BLAS Library", arXiv:1705.05249), built when CMake
 * finds libclblast-dev (HEARTH_HAVE_CLBLAST). For a product of many tokens
 * the weights are dequantized by kernels/matmul.cl's dequant_<type> into F32
 * tiles of rows, and CLBlastSgemm multiplies each tile with the
 * activations (F32 in, F32 out), enqueued on the instance's in-order queue
 * like every op. Fewer tokens, and the weight types the table below leaves
 * out, take the matmul kernels, which read the weights directly.
 *
 * Layouts (row-major, as CLBlast takes them with CLBlastLayoutRowMajor):
 * x {d_in, n} is the n x d_in matrix A; a tile of W {d_in, d_out}, rows
 * [r0, r0 + rows), is the rows x d_in matrix B; y {d_out, n} is n x d_out,
 * so y[:, r0 : r0 + rows] = A B^T: Sgemm(No, Yes, m = n, n = rows, k = d_in)
 * with C at element r0 of y and ldc = d_out.
 *
 * One buffer of limits.gemm_scratch_bytes (what the context planned, so
 * the token loop allocates nothing) holds, for each product, CLBlast's
 * temporary buffer at its start (the padded, transposed operands of its
 * indirect GEMM; none for the direct GEMM it runs for smaller products) and
 * the tile after it, of as many rows as fit beside what CLBlast asks for
 * that shape (CLBlastSGemmTempBufferSize, a formula on the host). A product
 * for which not one row fits takes the matmul kernel. CLBlast compiles its
 * kernels at first use in each process (the OpenCL driver may cache them;
 * PoCL does). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/opencl/common.h" /* first: it sets the OpenCL version clblast_c.h includes CL/cl.h for */
#include <clblast_c.h>
#include "base/log.h"
#include "gguf/ggml_types.h"
#include "quant/quant.h"

/* Products of fewer tokens take the matmul kernels, which read a weight
 * row once per 8 tokens: on PoCL they beat dequantizing for CLBlast below
 * 16 tokens and lose from 16 on (bench/results/2026-11-26-opencl-pocl.md). */
#define GEMM_MIN_TOKENS 16

/* Whether a weight type's prompt products take CLBlast, in the order of
 * hl_ocl_types (ops.c), from one product of SmolLM2's ffn_down at 512
 * tokens, matmul kernel against dequantize + CLBlastSgemm on PoCL
 * (test_backend_ops perf; bench/results/2026-11-26-opencl-pocl.md): every
 * type gains but F16 (the kernel's cheapest read), which ties within the
 * noise and takes CLBlast too. */
static const bool gemm_table[HL_OCL_N_TYPES] = {
    true, /* F32 */
    true, /* F16 */
    true, /* BF16 */
    true, /* Q4_0 */
    true, /* Q4_1 */
    true, /* Q5_0 */
    true, /* Q5_1 */
    true, /* Q8_0 */
    true, /* Q2_K */
    true, /* Q3_K */
    true, /* Q4_K */
    true, /* Q5_K */
    true, /* Q6_K */
};

#define DQ_WG 64 /* the MV_WG of kernels/matmul.cl */

/* Which types take CLBlast: the table, or none with HEARTH_OPENCL_CLBLAST=0
 * (to compare the two paths, or to set a slow CLBlast aside). */
static void choose_types(bool *types) {
    const char *v = getenv("HEARTH_OPENCL_CLBLAST");
    for (int k = 0; k < HL_OCL_N_TYPES; k++) types[k] = !(v && !strcmp(v, "0")) && gemm_table[k];
}

hearth_status hl_ocl_gemm_init(hl_backend *b) {
    hl_ocl *o = ocl_of(b);
    choose_types(o->gemm.types);
    bool any = false;
    for (int k = 0; k < HL_OCL_N_TYPES; k++) any |= o->gemm.types[k];
    if (o->limits.max_tokens < GEMM_MIN_TOKENS || o->limits.gemm_scratch_bytes < sizeof(float) || !any)
        return HEARTH_OK; /* the matmul kernels take every product */
    HL_TRY(hl_ocl_alloc(b, o->limits.gemm_scratch_bytes, &o->gemm.scratch));
    for (int k = 0; k < HL_OCL_N_TYPES; k++) {
        char name[32];
        snprintf(name, sizeof name, "dequant_%s", hl_ggml_type_get(hl_ocl_types[k])->name);
        cl_int e;
        o->gemm.dequant[k] = clCreateKernel(o->dev->program, name, &e);
        CL_TRY(e);
    }
    return HEARTH_OK;
}

void hl_ocl_gemm_free(hl_backend *b) {
    hl_ocl *o = ocl_of(b);
    for (int k = 0; k < HL_OCL_N_TYPES; k++)
        if (o->gemm.dequant[k]) clReleaseKernel(o->gemm.dequant[k]);
    hl_ocl_free(b, o->gemm.scratch);
}

/* Bytes of temporary buffer CLBlast's GEMM of m x n x k (ldc) asks for,
 * rounded up to TEMP_ALIGN (where the tile starts); SIZE_MAX when the query fails. */
#define TEMP_ALIGN 256
static size_t temp_bytes(hl_ocl *o, int64_t m, int64_t n, int64_t k, int64_t ldc) {
    size_t need = 0;
    const CLBlastStatusCode s = CLBlastSGemmTempBufferSize(CLBlastLayoutRowMajor, CLBlastTransposeNo,
                                                           CLBlastTransposeYes, (size_t)m, (size_t)n, (size_t)k, 0,
                                                           (size_t)k, 0, (size_t)k, 0, (size_t)ldc, &o->queue, &need);
    return s == CLBlastSuccess ? (need + TEMP_ALIGN - 1) / TEMP_ALIGN * TEMP_ALIGN : SIZE_MAX;
}

/* Rows of W per tile of a product y {d_out, n} = x {d_in, n} W^T, with in
 * *temp the bytes of CLBlast's buffer before the tile; 0 when not one row fits. */
static int64_t tile_rows(hl_ocl *o, int64_t d_in, int64_t d_out, int64_t n, size_t *temp) {
    const size_t budget = o->limits.gemm_scratch_bytes, row = sizeof(float) * (size_t)d_in;
    int64_t rows = (int64_t)(budget / row) < d_out ? (int64_t)(budget / row) : d_out;
    while (rows > 0) {
        *temp = temp_bytes(o, n, rows, d_in, d_out);
        if (*temp <= budget && (size_t)rows * row <= budget - *temp) break;
        const int64_t fit = *temp < budget ? (int64_t)((budget - *temp) / row) : 0;
        rows = fit < rows ? fit : rows - 1; /* fewer rows ask for less temporary buffer */
    }
    /* the last, shorter tile must fit the same split */
    const int64_t last = rows > 0 ? d_out - (d_out - 1) / rows * rows : 0;
    return rows > 0 && temp_bytes(o, n, last, d_in, d_out) <= *temp ? rows : 0;
}

bool hl_ocl_gemm(hl_ocl *o, int type_index, const hl_tensor *w, const hl_tensor *x, hl_tensor *y) {
    const int64_t d_in = w->ne[0], d_out = w->ne[1], n = x->ne[1];
    if (!o->gemm.scratch || n < GEMM_MIN_TOKENS || !o->gemm.types[type_index]) return false;
    size_t temp = 0;
    const int64_t rows = tile_rows(o, d_in, d_out, n, &temp);
    if (rows < 1) {
        HL_DEBUG("%s: a product of %lld x %lld x %lld does not fit %zu bytes of GEMM scratch beside CLBlast's buffer: "
                 "the matmul kernel takes it",
                 o->name, (long long)n, (long long)d_out, (long long)d_in, o->limits.gemm_scratch_bytes);
        return false;
    }
    hl_ocl_ref xr, yr, scratch;
    if (o->status != HEARTH_OK || !hl_ocl_ref_of(o, x->data, &xr) || !hl_ocl_ref_of(o, y->data, &yr) ||
        !hl_ocl_ref_of(o, o->gemm.scratch, &scratch))
        return true; /* the first error is what synchronize reports */
    const cl_ulong stride = (cl_ulong)hl_row_size(w->type, d_in);
    void *tile = (uint8_t *)o->gemm.scratch + temp;
    for (int64_t r0 = 0; r0 < d_out && o->status == HEARTH_OK; r0 += rows) {
        const cl_long nr = d_out - r0 < rows ? d_out - r0 : rows, k = d_in;
        const hl_ocl_arg args[] = {OCL_DATA((const uint8_t *)w->data + (cl_ulong)r0 * stride), OCL_VAL(stride),
                                   OCL_DATA(tile), OCL_VAL(k), OCL_VAL(nr)};
        hl_ocl_launch(o, o->gemm.dequant[type_index], (size_t[]){(size_t)((k + 7) / 8 * nr), 1}, (size_t[]){DQ_WG, 1},
                      1, 5, args);
        if (o->status != HEARTH_OK) break;
        /* CLBlast's offsets count elements; its temporary buffer is the scratch from its start */
        const CLBlastStatusCode g = CLBlastSgemmWithTempBuffer(
            CLBlastLayoutRowMajor, CLBlastTransposeNo, CLBlastTransposeYes, (size_t)n, (size_t)nr, (size_t)d_in, 1.0f,
            xr.mem, xr.off / sizeof(float), (size_t)d_in, scratch.mem, (scratch.off + temp) / sizeof(float),
            (size_t)d_in, 0.0f, yr.mem, yr.off / sizeof(float) + (size_t)r0, (size_t)d_out, &o->queue, NULL,
            scratch.mem);
        if (g != CLBlastSuccess)
            hl_ocl_record(o, HEARTH_ERR_DEVICE, "%s: CLBlastSgemm of %lld x %lld x %lld failed: CLBlast status %d",
                          o->name, (long long)n, (long long)nr, (long long)d_in, (int)g);
    }
    return true;
}
