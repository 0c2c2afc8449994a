/* Throughput of one CPU panel kernel alone (vec_dot.h): one thread packs a
 * panel of 16 random weight rows of a type and runs n_tok tokens against
 * it again and again, as a matmul's thread does for each of its panels;
 * prints the median and best of 15 timings in GMAC/s (multiply-adds of
 * weight by activation per second). For comparing kernel versions on one
 * core (pin it with taskset); a model's speed is hearth bench's.
 * Build: cc -O2 -Isrc -Iinclude bench/panel_bench.c build/libhearth.a
 *        -lpcre2-8 -lcjson -lcurl -lssl -lcrypto -lm -lpthread -ldl -o build/panel_bench
 * Usage: build/panel_bench TYPE N [N_TOK] [LEVEL] [OFFSET]
 *   TYPE a ggml type number (1 F16, 8 Q8_0, 12 Q4_K ...), N the row length,
 *   N_TOK the tokens (default 64), LEVEL avx2 or avx512 (default avx2),
 *   OFFSET the panel's bytes past a 64-byte boundary (default 0, as the
 *   engine's; 16, where glibc's mmapped blocks start, splits half of the
 *   32-byte loads across cache lines).
 *   The level's batch kernels where it has them (hl_cpu_type_ops.batch). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_time.h"

#include "backend/cpu/vec_dot.h"
#include "quant/quant.h"

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s TYPE N [N_TOK] [avx2|avx512] [OFFSET]\n", argv[0]);
        return 2;
    }
    const uint32_t type = (uint32_t)atoi(argv[1]);
    const int64_t n = atoll(argv[2]);
    const int n_tok = argc > 3 ? atoi(argv[3]) : 64;
    const hl_cpu_level level = argc > 4 && strcmp(argv[4], "avx512") == 0 ? HL_CPU_AVX512 : HL_CPU_AVX2;
    const int offset = argc > 5 ? atoi(argv[5]) : 0;
    const hl_cpu_type_ops *ops = hl_cpu_type_ops_at(type, level);
    if (ops && ops->batch) ops = ops->batch;
    const hl_quant_traits *q = hl_quant_get(type);
    const size_t w_row = hl_row_size(type, n);
    if (offset < 0 || offset > 4096) {
        fprintf(stderr, "%s: OFFSET must be 0..4096 bytes\n", argv[0]);
        return 2;
    }
    if (!ops || !ops->panel_dot || !q || w_row == 0 || n_tok < 1) {
        fprintf(stderr, "%s: no %s panel kernel for type %u at n %lld\n", argv[0], hl_cpu_level_name(level), type,
                (long long)n);
        return 1;
    }
    const int group = ops->panel_block ? n_tok : 4; /* the tokens one panel_dot call takes */
    const size_t a_row = hl_row_size(ops->vec_dot_type, n);
    uint8_t *w = malloc(w_row * HL_PANEL_ROWS), *act = malloc(a_row * (size_t)n_tok);
    float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * HL_PANEL_ROWS * (size_t)n_tok);
    hl_act_aux *aux = ops->act_aux ? malloc(sizeof *aux * (size_t)n_tok * (size_t)(n / HL_QK)) : NULL;
    uint8_t *panel_mem = aligned_alloc(64, HL_PANEL_BYTES(n) + 4096), *panel = panel_mem + offset;
    srand(1);
    for (int r = 0; r < HL_PANEL_ROWS + n_tok; r++) {
        for (int64_t i = 0; i < n; i++) x[i] = (float)rand() / (float)RAND_MAX - 0.5f;
        if (r < HL_PANEL_ROWS) q->from_float(x, w + (size_t)r * w_row, n);
        else ops->act_from_float(x, act + (size_t)(r - HL_PANEL_ROWS) * a_row, n);
    }
    for (int t = 0; aux && t < n_tok; t++)
        ops->act_aux(n, aux + (size_t)t * (size_t)(n / HL_QK), act + (size_t)t * a_row);
    ops->pack_panel(n, panel, w, w_row);
    const int reps = (int)(3e8 / ((double)n * HL_PANEL_ROWS * n_tok)) + 1; /* about 0.01-0.03 s a timing */
    double gmacs[15];
    for (int k = 0; k < 15; k++) {
        const double t0 = bench_now();
        for (int i = 0; i < reps; i++)
            for (int t = 0; t < n_tok; t += group)
                ops->panel_dot(n, y + (size_t)t * HL_PANEL_ROWS, HL_PANEL_ROWS, panel, act + (size_t)t * a_row, a_row,
                               aux ? aux + (size_t)t * (size_t)(n / HL_QK) : NULL, (size_t)(n / HL_QK),
                               n_tok - t < group ? n_tok - t : group);
        gmacs[k] = (double)reps * (double)n * HL_PANEL_ROWS * n_tok / (bench_now() - t0) * 1e-9;
    }
    bench_sort(gmacs, 15);
    printf("%s %s panel, n %lld, %d tokens, offset %d: median %.1f, best %.1f GMAC/s\n", hl_cpu_level_name(level),
           hl_ggml_type_get(type)->name, (long long)n, n_tok, offset, gmacs[7], gmacs[14]);
    free(w);
    free(act);
    free(x);
    free(y);
    free(aux);
    free(panel_mem);
    return 0;
}
