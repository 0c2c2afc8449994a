/* End to end on the first OpenCL device (PoCL's CPU device in CI; skipped
 * where there is none), named as --device does (hearth_model_params.devices):
 * the tiny model of each architecture (tests/reference/arch) and the
 * default model (its prompt long enough for CLBlast's path) give the CPU's
 * greedy tokens, with prompt logits close,
 * with every layer on OpenCL and with half of them, and with the layers
 * split over two OpenCL devices (tensor_split; the test asks PoCL for two
 * CPU devices, POCL_DEVICES="pthread pthread", unless the variable is set);
 * a device with too little memory (HEARTH_OPENCL_MEM_LIMIT) fails the load
 * with the one-line message and leaves nothing allocated; n_gpu_layers auto
 * on a 400 MiB device takes some of the layers, fewer for a longer context,
 * and that context then fits; an unknown device name is refused. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hearth.h"

#define N_GEN 8
static const char *PROMPT = "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n";
/* SmolLM2's prompt, 52 tokens: its products take CLBlast where the build has it (16 tokens or more,
 * opencl/gemm.c). The tiny random models keep the short one: their logits are so flat that a longer prompt
 * brings near-ties the CPU's 8-bit activations break the other way (mistral-q8_0, with CLBlast or without). */
static const char *PROMPT_LONG = "<|im_start|>system\nYou are a helpful assistant who answers questions about "
                                 "geography in one short sentence.<|im_end|>\n<|im_start|>user\nWhat is the capital "
                                 "of France? Please name the city, the river that flows through it and one famous "
                                 "building.<|im_end|>\n<|im_start|>assistant\n";

typedef struct run_out {
    int32_t tokens[N_GEN];
    float *logits; /* [n_vocab] after the prompt */
    int32_t n_vocab, n_layer;
    hearth_context_memory mem; /* where the weights went */
} run_out;

/* Greedy tokens after `prompt` with ngl layers on `devices`, split in
 * proportions ts (NULL: the default). */
static void greedy(const char *path, const char *prompt, const char *devices, int32_t ngl, const float *ts,
                   run_out *out) {
    hearth_model_params mp = hearth_model_default_params();
    mp.n_gpu_layers = ngl;
    mp.devices = devices;
    mp.tensor_split = ts;
    hearth_model *m;
    CHECK(hearth_model_load(path, &mp, &m) == HEARTH_OK);
    out->n_layer = hearth_model_n_layer(m);
    CHECK(hearth_model_n_gpu_layers(m) == (ngl < 0 ? out->n_layer + 1 : ngl));
    out->n_vocab = hearth_model_n_vocab(m);
    hearth_context_params cp = hearth_context_default_params();
    cp.n_ctx = 256;
    CHECK(hearth_context_memory_plan(m, &cp, &out->mem) == HEARTH_OK);
    hearth_context *ctx;
    CHECK(hearth_context_init(m, &cp, &ctx) == HEARTH_OK);
    int32_t toks[256];
    size_t n;
    CHECK(hearth_tokenize(m, prompt, strlen(prompt), true, true, toks, 256, &n) == HEARTH_OK);
    CHECK(hearth_decode(ctx, toks, (uint32_t)n) == HEARTH_OK);
    out->logits = malloc(sizeof(float) * (size_t)out->n_vocab);
    memcpy(out->logits, hearth_get_logits(ctx), sizeof(float) * (size_t)out->n_vocab);
    for (int g = 0; g < N_GEN; g++) {
        const float *l = hearth_get_logits(ctx);
        int32_t best = 0;
        for (int32_t i = 1; i < out->n_vocab; i++)
            if (l[i] > l[best]) best = i;
        out->tokens[g] = best;
        CHECK(hearth_decode(ctx, &best, 1) == HEARTH_OK);
    }
    hearth_context_free(ctx);
    hearth_model_free(m);
}

static void compare(const char *what, const run_out *a, const run_out *b) {
    CHECK_MSG(memcmp(a->tokens, b->tokens, sizeof a->tokens) == 0, "%s: greedy tokens differ", what);
    double num = 0.0, den = 0.0, max = 0.0;
    for (int32_t i = 0; i < a->n_vocab; i++) {
        const double d = (double)a->logits[i] - b->logits[i];
        num += d * d;
        den += (double)b->logits[i] * b->logits[i];
        max = fabs(d) > max ? fabs(d) : max;
    }
    printf("%s: logits NMSE %.3g, max |diff| %.3f\n", what, num / den, max);
    /* the CPU rounds activations to 8 bits for its integer dot products, OpenCL keeps them in F32: SmolLM2's
     * logits differ by NMSE 9e-4 (all layers) and 2e-3 (half), max 1.1 after the short prompt, 1e-4 and 2e-4,
     * max 0.7 after the long one (PoCL, AVX2); the tokens must agree */
    CHECK_MSG(num / den < 5e-3 && max < 2.0, "%s: logits too far apart", what);
}

/* The CPU, all layers and half of them on `dev`. */
static void check_model(const char *path, const char *prompt, const char *dev) {
    run_out cpu, all, some;
    greedy(path, prompt, NULL, 0, NULL, &cpu);
    const int32_t half = (cpu.n_layer + 1) / 2; /* the tiny models have one layer */
    greedy(path, prompt, dev, -1, NULL, &all);
    greedy(path, prompt, dev, half, NULL, &some);
    const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    char what[256];
    snprintf(what, sizeof what, "%s: all layers on %s vs CPU", name, dev);
    compare(what, &all, &cpu);
    snprintf(what, sizeof what, "%s: %d layers on %s vs CPU", name, (int)half, dev);
    compare(what, &some, &cpu);
    free(cpu.logits);
    free(all.logits);
    free(some.logits);
}

/* Every layer split over devices a and b one to two: the CPU's tokens, and
 * each device holds weights in about that proportion. */
static void test_split(const char *path, const char *a, const char *b) {
    static const float ts[2] = {1.0f, 2.0f};
    char devs[64];
    snprintf(devs, sizeof devs, "%s,%s", a, b);
    run_out cpu, split;
    greedy(path, PROMPT_LONG, NULL, 0, NULL, &cpu);
    greedy(path, PROMPT_LONG, devs, -1, ts, &split);
    char what[256];
    snprintf(what, sizeof what, "layers split 1:2 over %s vs CPU", devs);
    compare(what, &split, &cpu);
    const hearth_memory_device *d = split.mem.device; /* [0] the host, then each device with layers */
    CHECK_MSG(split.mem.n_devices == 3 && !strcmp(d[1].id, a) && !strcmp(d[2].id, b),
              "devices with layers: %d (%s, %s)", (int)split.mem.n_devices, d[1].id, d[2].id);
    const double share = (double)d[2].weights / (double)(d[1].weights + d[2].weights);
    printf("%s: %s holds %.0f MiB of weights, %s %.0f MiB\n", what, d[1].id, (double)d[1].weights / 1048576.0, d[2].id,
           (double)d[2].weights / 1048576.0);
    CHECK_MSG(share > 0.5 && share < 0.85, "%s holds %.2f of the offloaded weights, not about 2/3", d[2].id, share);
    free(cpu.logits);
    free(split.logits);
}

/* Too little device memory: the one-line message, and nothing left allocated. */
static void test_too_little_memory(const char *path, const char *dev, int32_t index) {
    setenv("HEARTH_OPENCL_MEM_LIMIT", "16", 1); /* MiB: less than the default model's weights */
    hearth_model_params mp = hearth_model_default_params();
    mp.n_gpu_layers = -1;
    mp.devices = dev;
    hearth_model *m;
    CHECK(hearth_model_load(path, &mp, &m) == HEARTH_ERR_OUT_OF_MEMORY && m == NULL);
    const char *msg = hearth_last_error();
    CHECK_MSG(strstr(msg, dev) && strstr(msg, "MiB free") && strstr(msg, "lower n_gpu_layers or n_ctx") &&
                  !strchr(msg, '\n'),
              "message: %s", msg);
    hearth_gpu_info info;
    CHECK(hearth_gpu_device_info(index, &info) == HEARTH_OK && info.total_bytes == 16u << 20);
    CHECK_MSG(info.free_bytes == info.total_bytes, "%llu of %llu bytes free after the failed load",
              (unsigned long long)info.free_bytes, (unsigned long long)info.total_bytes);
    unsetenv("HEARTH_OPENCL_MEM_LIMIT");
    mp.devices = "opencl99";
    CHECK(hearth_model_load(path, &mp, &m) == HEARTH_ERR_INVALID_ARG && strstr(hearth_last_error(), dev));
}

/* n_gpu_layers auto on a device of 400 MiB (HEARTH_OPENCL_MEM_LIMIT): the
 * default model's 30 blocks do not all fit beside 256 MiB of buffers and the
 * KV cache of fit_n_ctx tokens (6 MiB a block at 8192); the layers chosen
 * leave room for that context, a longer one gets fewer, and a quantized
 * cache type (fit_type_k / fit_type_v) more. */
static void test_auto(const char *path, const char *dev) {
    setenv("HEARTH_OPENCL_MEM_LIMIT", "400", 1);
    hearth_model_params mp = hearth_model_default_params();
    mp.n_gpu_layers = HEARTH_N_GPU_LAYERS_AUTO;
    mp.devices = dev;
    int32_t n_fit[2] = {0, 0};
    const uint32_t n_ctx[2] = {8192, 16384};
    for (int i = 0; i < 2; i++) {
        mp.fit_n_ctx = n_ctx[i];
        hearth_model *m;
        CHECK(hearth_model_load(path, &mp, &m) == HEARTH_OK);
        n_fit[i] = hearth_model_n_gpu_layers(m);
        CHECK_MSG(n_fit[i] > 0 && n_fit[i] <= hearth_model_n_layer(m), "auto placed %d layers for n_ctx %u",
                  (int)n_fit[i], n_ctx[i]);
        hearth_context_params cp = hearth_context_default_params();
        cp.n_ctx = n_ctx[i];
        hearth_context *ctx;
        CHECK_MSG(hearth_context_init(m, &cp, &ctx) == HEARTH_OK, "n_ctx %u beside %d auto layers: %s", n_ctx[i],
                  (int)n_fit[i], hearth_last_error());
        int32_t tok = 1;
        CHECK(hearth_decode(ctx, &tok, 1) == HEARTH_OK);
        hearth_context_free(ctx);
        hearth_model_free(m);
    }
    CHECK_MSG(n_fit[1] < n_fit[0], "auto: %d layers for n_ctx 8192, %d for 16384", (int)n_fit[0], (int)n_fit[1]);
    /* a q8_0 cache (0.53x the bytes) leaves room for more layers; the context is not made (OpenCL caches f16) */
    mp.fit_type_k = mp.fit_type_v = HEARTH_KV_Q8_0;
    hearth_model *m;
    CHECK(hearth_model_load(path, &mp, &m) == HEARTH_OK);
    const int32_t n_q8 = m ? hearth_model_n_gpu_layers(m) : 0;
    CHECK_MSG(n_q8 > n_fit[1], "auto: %d layers for n_ctx 16384 with a q8_0 cache, %d with f16", (int)n_q8,
              (int)n_fit[1]);
    hearth_model_free(m);
    mp.fit_type_v = 7; /* no hearth_kv_type */
    CHECK(hearth_model_load(path, &mp, &m) == HEARTH_ERR_INVALID_ARG && strstr(hearth_last_error(), "fit_type_v 7"));
    printf("auto on %s of 400 MiB: %d layers for n_ctx 8192, %d for 16384, %d for 16384 with a q8_0 cache\n", dev,
           (int)n_fit[0], (int)n_fit[1], (int)n_q8);
    unsetenv("HEARTH_OPENCL_MEM_LIMIT");
}

int main(void) {
    setenv("POCL_DEVICES", "pthread pthread", 0); /* before the first probe; a device list given outside stands */
    const char *path = check_model_path();
    int32_t index = -1, second = -1; /* the first two OpenCL devices */
    hearth_gpu_info info, other;
    for (int32_t i = 0; i < hearth_gpu_device_count() && second < 0; i++) {
        hearth_gpu_info g;
        if (hearth_gpu_device_info(i, &g) != HEARTH_OK || strncmp(g.id, "opencl", 6) != 0) continue;
        if (index < 0) index = i, info = g;
        else second = i, other = g;
    }
    if (index < 0) {
        printf("SKIP: no OpenCL device (%s)\n", hearth_build_info());
        return 77;
    }
    const char *dev = info.id;
    printf("on %s: %s\n", dev, info.name);
    static const char *const arch[] = {"llama3-f32",
                                       "mistral-q8_0",
                                       "qwen2-f16",
                                       "qwen3-q8_0",
                                       "gemma3-f16",
                                       "gemma3-q8_0",
                                       "tinyphi-f16",
                                       "tinyphi-q8_0",
                                       "gpt2-f16",
                                       "gpt2-q8_0",
                                       "starcoder2-f16",
                                       "starcoder2-q8_0",
                                       "gptneox-f16",
                                       "gptneox-q8_0",
                                       "mpt-f16",
                                       "mpt-q8_0",
                                       "bloom-f16",
                                       "bloom-q8_0",
                                       "falcon-f16",
                                       "falcon-q8_0",
                                       "mixtral-f16",
                                       "mixtral-q8_0",
                                       "gptj-f16",
                                       "gptj-q8_0",
                                       "mistral-window-q8_0",
                                       "starcoder2-window-f16"};
    for (size_t i = 0; i < sizeof arch / sizeof arch[0]; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "reference/arch/%s.gguf", arch[i]);
        check_model(check_test_path(rel), PROMPT, dev);
    }
    check_model(path, PROMPT_LONG, dev);
    if (second >= 0) test_split(path, dev, other.id);
    else
        printf("SKIP the split over two OpenCL devices: only %s is here (POCL_DEVICES=%s)\n", dev,
               getenv("POCL_DEVICES"));
    test_too_little_memory(path, dev, index);
    test_auto(path, dev);
    return check_report();
}
