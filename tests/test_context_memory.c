/* n_ubatch and a context's memory on the default model: a long prompt in
 * passes of 64 tokens gives the logits of passes of 512 (bit for bit, both
 * attention paths), a batch split into passes keeps each sequence's logits,
 * hearth_context_memory_plan() reports what hearth_context_init() really
 * allocates (glibc's mallinfo2 before and after) and a KV cache of the
 * model's own shape, the compute buffers follow n_ubatch and not n_batch,
 * and a context larger than the machine's RAM fails at creation with the
 * bytes it needs. */
#include <malloc.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "hearth.h"

/* The long prompt: 1000 tokens (passes of 64 end with 40, so every pass
 * takes the kernels of 8 tokens and more), 250 under HEARTH_TEST_SHORT (the
 * sanitizer runs). */
#define PROMPT_MAX 1000
static int32_t prompt_len = PROMPT_MAX;

static void random_tokens(int32_t *t, int32_t n, int32_t n_vocab, uint32_t seed) {
    for (int32_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u; /* Numerical Recipes' LCG */
        t[i] = (int32_t)((seed >> 8) % (uint32_t)n_vocab);
    }
}

/* The last logits of prompt_len tokens decoded in one hearth_decode call. */
static void prompt_logits(hearth_model *m, const int32_t *toks, uint32_t n_ubatch, int32_t fa, float *out) {
    hearth_context_params cp = hearth_context_default_params();
    cp.n_ctx = 1024;
    cp.n_batch = 1024;
    cp.n_ubatch = n_ubatch;
    cp.n_threads = 2;
    cp.flash_attn = fa;
    hearth_context *ctx;
    CHECK(hearth_context_init(m, &cp, &ctx) == HEARTH_OK);
    if (!ctx) return;
    CHECK(hearth_decode(ctx, toks, (uint32_t)prompt_len) == HEARTH_OK);
    memcpy(out, hearth_get_logits(ctx), sizeof(float) * (size_t)hearth_model_n_vocab(m));
    hearth_context_free(ctx);
}

static void test_ubatch_same_logits(hearth_model *m) {
    const int32_t nv = hearth_model_n_vocab(m);
    int32_t toks[PROMPT_MAX];
    random_tokens(toks, prompt_len, nv, 7);
    float *a = malloc(sizeof(float) * (size_t)nv), *b = malloc(sizeof(float) * (size_t)nv);
    for (int32_t fa = HEARTH_FLASH_ATTN_OFF; fa <= HEARTH_FLASH_ATTN_ON; fa++) {
        prompt_logits(m, toks, 512, fa, a);
        prompt_logits(m, toks, 64, fa, b);
        int32_t differ = 0;
        for (int32_t i = 0; i < nv; i++) differ += a[i] != b[i];
        CHECK_MSG(differ == 0, "flash_attn %d: -ub 64 and -ub 512 differ in %d of %d logits", (int)fa, (int)differ,
                  (int)nv);
    }
    free(a);
    free(b);
}

/* Two sequences in one batch of 24 tokens, each asking for its last
 * token's logits: with n_ubatch 8 they end in different passes (output
 * rows 0 and 1 of passes 2 and 3) and must equal one pass of 24. */
static void batch_logits(hearth_model *m, const int32_t *toks, uint32_t n_ubatch, float *out) {
    hearth_context_params cp = hearth_context_default_params();
    cp.n_ctx = 256;
    cp.n_seq_max = 2;
    cp.n_ubatch = n_ubatch;
    cp.n_threads = 2;
    hearth_context *ctx;
    CHECK(hearth_context_init(m, &cp, &ctx) == HEARTH_OK);
    if (!ctx) return;
    int32_t seq[24];
    int8_t want[24] = {0};
    for (int32_t t = 0; t < 24; t++) seq[t] = t < 13 ? 0 : 1;
    want[12] = want[23] = 1;
    const hearth_batch b = {.n_tokens = 24, .token = toks, .seq_id = seq, .logits = want};
    CHECK(hearth_decode_batch(ctx, &b) == HEARTH_OK);
    const size_t nv = (size_t)hearth_model_n_vocab(m);
    CHECK(hearth_get_logits_ith(ctx, 12) && hearth_get_logits_ith(ctx, 23) && !hearth_get_logits_ith(ctx, 11));
    if (hearth_get_logits_ith(ctx, 12)) memcpy(out, hearth_get_logits_ith(ctx, 12), sizeof(float) * nv);
    if (hearth_get_logits_ith(ctx, 23)) memcpy(out + nv, hearth_get_logits_ith(ctx, 23), sizeof(float) * nv);
    CHECK(hearth_kv_seq_len(ctx, 0) == 13 && hearth_kv_seq_len(ctx, 1) == 11);
    hearth_context_free(ctx);
}

static void test_batch_split(hearth_model *m) {
    const int32_t nv = hearth_model_n_vocab(m);
    int32_t toks[24];
    random_tokens(toks, 24, nv, 11);
    float *a = calloc(2 * (size_t)nv, sizeof(float)), *b = calloc(2 * (size_t)nv, sizeof(float));
    batch_logits(m, toks, 512, a);
    batch_logits(m, toks, 8, b);
    /* the passes of 8 hold 8, 5 + 3 and 8 tokens of the two sequences:
     * matmuls of other sizes than one of 24, so the logits agree within the
     * rounding of the kernels' orders (test_context: n_batch 3 vs 512) */
    float diff = 0, top = 0;
    for (int32_t i = 0; i < 2 * nv; i++) {
        diff = fmaxf(diff, fabsf(a[i] - b[i]));
        top = fmaxf(top, fabsf(a[i]));
    }
    CHECK_MSG(top > 1.0f && diff < 1e-3f * top, "split batch: max diff %g of %g", diff, top);
    free(a);
    free(b);
}

/* Bytes malloc holds (arena and mmap'd chunks), from glibc. */
static size_t malloc_bytes(void) {
    const struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

static void test_plan_equals_allocation(hearth_model *m) {
    static const struct {
        uint32_t n_ctx, n_batch, n_ubatch, n_seq;
        int32_t fa;
    } cases[] = {{4096, 512, 512, 1, HEARTH_FLASH_ATTN_ON},
                 {32768, 32768, 64, 1, HEARTH_FLASH_ATTN_OFF},
                 {8192, 2048, 2048, 4, HEARTH_FLASH_ATTN_ON}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        hearth_context_params cp = hearth_context_default_params();
        cp.n_ctx = cases[k].n_ctx;
        cp.n_batch = cases[k].n_batch;
        cp.n_ubatch = cases[k].n_ubatch;
        cp.n_seq_max = cases[k].n_seq;
        cp.flash_attn = cases[k].fa;
        cp.n_threads = 2;
        hearth_context_memory mem;
        CHECK(hearth_context_memory_plan(m, &cp, &mem) == HEARTH_OK);
        CHECK(mem.n_devices == 1 && !strcmp(mem.device[0].id, "cpu"));
        CHECK(mem.n_ctx == cases[k].n_ctx && mem.n_ubatch == cases[k].n_ubatch && mem.n_seq_max == cases[k].n_seq);
        CHECK(!strcmp(mem.type_k, "f16") && !strcmp(mem.type_v, "f16"));
        /* the KV cache of SmolLM2-135M: 30 layers x (K and V) x n_ctx cells
         * x 3 KV heads x head size 64, F16 */
        CHECK_MSG(mem.kv_cache == 30ull * 2 * cases[k].n_ctx * 3 * 64 * 2, "kv %llu", (unsigned long long)mem.kv_cache);
        CHECK(mem.weights == hearth_model_size(m));
        CHECK(mem.context == mem.kv_cache + mem.compute && mem.total == mem.weights + mem.context);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
        /* a sanitizer's allocator is not glibc's: mallinfo2 does not see it */
        printf("note: sanitizer build: the allocation is not compared with the plan\n");
        continue;
#endif
        const size_t before = malloc_bytes();
        hearth_context *ctx;
        CHECK(hearth_context_init(m, &cp, &ctx) == HEARTH_OK);
        const size_t grew = malloc_bytes() - before;
        hearth_context_free(ctx);
        /* what the plan leaves out: the context's bookkeeping (a few bytes
         * per n_batch token and layer), the thread pool's, malloc's headers
         * and page rounding of each large buffer */
        const double slack = 256.0 * 1024 + 12.0 * cases[k].n_batch;
        printf("n_ctx %u n_batch %u n_ubatch %u n_seq_max %u: planned %llu bytes, allocated %zu\n", cases[k].n_ctx,
               cases[k].n_batch, cases[k].n_ubatch, cases[k].n_seq, (unsigned long long)mem.context, grew);
        CHECK_MSG((double)grew >= (double)mem.context && (double)grew <= (double)mem.context + slack,
                  "case %zu: the plan says %llu bytes, creation allocated %zu", k, (unsigned long long)mem.context,
                  grew);
    }
}

static void test_compute_follows_ubatch(hearth_model *m) {
    hearth_context_params cp = hearth_context_default_params();
    cp.n_ctx = 32768;
    cp.n_threads = 2;
    uint64_t compute[3];
    const uint32_t ub[3] = {64, 512, 4096};
    hearth_context_memory mem;
    for (int i = 0; i < 3; i++) {
        cp.n_batch = 4096;
        cp.n_ubatch = ub[i];
        CHECK(hearth_context_memory_plan(m, &cp, &mem) == HEARTH_OK);
        compute[i] = mem.compute;
    }
    CHECK(compute[0] < compute[1] && compute[1] < compute[2]);
    /* -c 32768 -b 32768 -ub 512 plans 512-token buffers, as -b 512 does */
    cp.n_batch = 32768;
    cp.n_ubatch = 512;
    CHECK(hearth_context_memory_plan(m, &cp, &mem) == HEARTH_OK && mem.compute == compute[1]);
    CHECK(mem.n_batch == 32768 && mem.n_ubatch == 512);
    /* llama.cpp's rule: n_ubatch 0 or above n_batch is n_batch */
    cp.n_batch = 256;
    cp.n_ubatch = 0;
    CHECK(hearth_context_memory_plan(m, &cp, &mem) == HEARTH_OK && mem.n_ubatch == 256);
    cp.n_ubatch = 100000;
    CHECK(hearth_context_memory_plan(m, &cp, &mem) == HEARTH_OK && mem.n_ubatch == 256);
    /* errors */
    CHECK(hearth_context_memory_plan(NULL, &cp, &mem) == HEARTH_ERR_INVALID_ARG);
    CHECK(hearth_context_memory_plan(m, &cp, NULL) == HEARTH_ERR_INVALID_ARG);
    cp.n_batch = 0;
    CHECK(hearth_context_memory_plan(m, &cp, &mem) == HEARTH_ERR_INVALID_ARG);
    CHECK(hearth_context_memory_plan(m, NULL, &mem) == HEARTH_OK && mem.n_ctx == 4096 && mem.n_ubatch == 512);
}

static void test_too_large_for_ram(hearth_model *m) {
    hearth_context_params cp = hearth_context_default_params();
    cp.n_ctx = 1u << 24; /* the largest n_ctx: a KV cache of 360 GiB */
    hearth_context_memory mem;
    CHECK(hearth_context_memory_plan(m, &cp, &mem) == HEARTH_OK);
    const double ram = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    if ((double)mem.kv_cache <= ram) {
        printf("note: this machine has %.0f GiB of RAM, more than the KV cache of n_ctx 16M: check skipped\n",
               ram / (1u << 30));
        return;
    }
    hearth_context *ctx = (hearth_context *)&ctx;
    CHECK(hearth_context_init(m, &cp, &ctx) == HEARTH_ERR_OUT_OF_MEMORY && ctx == NULL);
    const char *e = hearth_last_error();
    CHECK_MSG(strstr(e, "the context needs 360.") && strstr(e, "GiB (KV cache 360.0 GiB at n_ctx 16777216)") &&
                  strstr(e, "of memory is available: lower n_ctx"),
              "%s", e);
}

int main(void) {
    hearth_model *m;
    CHECK(hearth_model_load(check_model_path(), NULL, &m) == HEARTH_OK);
    if (!m) return check_report();
    if (getenv("HEARTH_TEST_SHORT")) prompt_len = PROMPT_MAX / 4;
    test_ubatch_same_logits(m);
    test_batch_split(m);
    test_plan_equals_allocation(m);
    test_compute_follows_ubatch(m);
    test_too_large_for_ram(m);
    hearth_model_free(m);
    return check_report();
}
