/* The rotary embedding of the GPU kernels (src/backend/cuda/rope.cuh), run
 * on the host (no GPU needed): rope_store ropes K one element at a time
 * (`roped`, each element from the row's values before the rope, so a cache
 * unit never waits on another thread) where the rope op turns Q a pair at a
 * time in place (`rope_pair`, what test_backend_ops has checked on GPUs
 * against the CPU). Both must give the same bits for every element: the
 * pairing of NORMAL and NEOX, dimensions past a partial n_rot left alone,
 * frequency factors, YaRN, heads whose length is no power of two, several
 * tokens at their own positions. Built by nvcc whenever the build has CUDA
 * (tests/CMakeLists.txt). */
#include <stdio.h>
#include <string.h>

#include "backend/cuda/rope.cuh"

#include "check.h"

#define N_HEAD 3
#define N_TOK 4
#define MAX_HD 128

static uint64_t rng = 2029;
static float uniform(void) { return (float)((double)(check_splitmix64(&rng) >> 11) * 0x1p-53) * 4.0f - 2.0f; }

/* Elements of N_TOK rows of N_HEAD heads of hd where roped() differs from rope_pair(). */
static int differing(int mode, int hd, int n_rot, bool ff, bool yarn) {
    static const int32_t pos[N_TOK] = {0, 7, 513, 4095};
    const int64_t d = (int64_t)N_HEAD * hd;
    static float x[N_TOK * N_HEAD * MAX_HD], paired[N_TOK * N_HEAD * MAX_HD], factors[MAX_HD / 2];
    for (int64_t i = 0; i < N_TOK * d; i++) x[i] = uniform();
    for (int i = 0; i < n_rot / 2; i++) factors[i] = 1.0f + 0.5f * (uniform() + 2.0f);
    const hl_rope_params p = {.n_rot = n_rot,
                              .mode = mode,
                              .freq_base = 500000.0f,
                              .freq_scale = yarn ? 0.25f : 1.0f,
                              .n_ctx_orig = 4096,
                              .ext_factor = yarn ? 1.0f : 0.0f,
                              .attn_factor = 1.0f,
                              .beta_fast = 32.0f,
                              .beta_slow = 1.0f};
    const rope_args a = rope_args_of(&p, N_HEAD, hd, ff ? factors : NULL);
    memcpy(paired, x, sizeof(float) * (size_t)(N_TOK * d));
    for (int64_t i = 0; i < (int64_t)N_TOK * N_HEAD * (n_rot / 2); i++) rope_pair(paired, a, pos, i);
    int bad = 0;
    for (int t = 0; t < N_TOK; t++)
        for (int64_t j = 0; j < d; j++) {
            const float r = roped(x + t * d, a, (float)pos[t], j);
            bad += memcmp(&r, &paired[t * d + j], sizeof r) != 0;
        }
    return bad;
}

int main(void) {
    static const int shapes[][2] = {{64, 64}, {96, 64}, {128, 32}, {80, 80}}; /* head_dim, n_rot */
    int runs = 0;
    for (int mode = 0; mode <= 2; mode += 2)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int ff = 0; ff < 2; ff++)
                for (int yarn = 0; yarn < 2; yarn++) {
                    const int bad = differing(mode, shapes[s][0], shapes[s][1], ff, yarn);
                    CHECK_MSG(bad == 0, "%s head_dim %d n_rot %d%s%s: %d elements differ from the paired rope",
                              mode == HL_ROPE_NEOX ? "neox" : "normal", shapes[s][0], shapes[s][1],
                              ff ? " freq_factors" : "", yarn ? " yarn" : "", bad);
                    runs++;
                }
    printf("roped: %d shapes, every element the paired rope's bits\n", runs);
    return check_report();
}
