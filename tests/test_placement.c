/* Layer placement (model/placement.c) with made-up devices: n_gpu_layers
 * 0 / N / -1 / more than n_layer, layer split in tensor_split or free-memory
 * proportions, SPLIT_NONE on main_gpu, the refusals (row split, bad
 * main_gpu or tensor_split), and too little device memory, whose message
 * must give the figures and the advice; blocks a device cannot run
 * (host_only) staying on the host, the others sharing the devices, and
 * past HL_MAX_STAGES runs the rest staying too; n_gpu_layers AUTO taking the
 * most layers whose weights, context share and margin fit. Then a real load
 * on this machine: with no usable GPU, -1 and auto run on the CPU and report
 * 0 layers offloaded. */
#include <string.h>

#include "check.h"
#include "hearth.h"
#include "model/placement.h"

#define N_LAYER 30
#define MIB ((size_t)1 << 20)

static size_t layer_bytes[N_LAYER];
static int8_t dev[N_LAYER];

static hl_placement_in base(int32_t ngl, int32_t n_devices, const size_t *free_bytes) {
    return (hl_placement_in){.n_layer = N_LAYER,
                             .layer_bytes = layer_bytes,
                             .output_bytes = 50 * MIB,
                             .n_gpu_layers = ngl,
                             .split_mode = HEARTH_SPLIT_LAYER,
                             .main_gpu = 0,
                             .tensor_split = NULL,
                             .n_devices = n_devices,
                             .free_bytes = free_bytes,
                             .reserve_bytes = 100 * MIB};
}

static int count_on(int d) {
    int n = 0;
    for (int i = 0; i < N_LAYER; i++) n += dev[i] == d;
    return n;
}

static void test_counts(void) {
    const size_t big[2] = {(size_t)8 << 30, (size_t)8 << 30};
    hl_placement pl;
    hl_placement_in in = base(-1, 0, big); /* no devices: everything on the host */
    CHECK(hl_placement_plan(&in, dev, &pl) == HEARTH_OK && count_on(-1) == N_LAYER && pl.output_dev == -1 &&
          pl.n_offloaded == 0);
    in = base(0, 1, big);
    CHECK(hl_placement_plan(&in, dev, &pl) == HEARTH_OK && count_on(-1) == N_LAYER && pl.n_offloaded == 0);
    in = base(10, 1, big); /* the first 10 blocks */
    CHECK(hl_placement_plan(&in, dev, &pl) == HEARTH_OK && count_on(0) == 10 && dev[9] == 0 && dev[10] == -1 &&
          pl.output_dev == -1 && pl.n_offloaded == 10 && pl.dev_bytes[0] == 10 * 10 * MIB);
    in = base(N_LAYER, 1, big); /* every block, not the output layer */
    CHECK(hl_placement_plan(&in, dev, &pl) == HEARTH_OK && count_on(0) == N_LAYER && pl.output_dev == -1 &&
          pl.n_offloaded == N_LAYER);
    for (int32_t ngl = -1; ngl <= N_LAYER + 5; ngl += N_LAYER + 2) { /* -1 and 31: everything */
        in = base(ngl, 1, big);
        CHECK(hl_placement_plan(&in, dev, &pl) == HEARTH_OK && count_on(0) == N_LAYER && pl.output_dev == 0 &&
              pl.n_offloaded == N_LAYER + 1 && pl.dev_bytes[0] == N_LAYER * 10 * MIB + 50 * MIB);
    }
}

static void test_splits(void) {
    const size_t free_bytes[3] = {(size_t)3 << 30, (size_t)1 << 30, (size_t)4 << 30};
    hl_placement pl;
    const float split[3] = {1.0f, 3.0f, 0.0f};
    hl_placement_in in = base(-1, 3, free_bytes);
    in.tensor_split = split; /* a quarter, three quarters, nothing */
    CHECK(hl_placement_plan(&in, dev, &pl) == HEARTH_OK);
    CHECK(count_on(0) == 8 && count_on(1) == 22 && count_on(2) == 0 && dev[7] == 0 && dev[8] == 1);
    CHECK(pl.output_dev == 1 && pl.dev_bytes[2] == 0);
    in = base(-1, 2, free_bytes); /* NULL: in proportion to free memory, 3:1 */
    CHECK(hl_placement_plan(&in, dev, &pl) == HEARTH_OK && count_on(0) == 23 && count_on(1) == 7);
    for (int i = 1; i < N_LAYER; i++) CHECK(dev[i] >= dev[i - 1]); /* contiguous runs */
    in = base(12, 3, free_bytes);
    in.split_mode = HEARTH_SPLIT_NONE;
    in.main_gpu = 2;
    CHECK(hl_placement_plan(&in, dev, &pl) == HEARTH_OK && count_on(2) == 12 && count_on(-1) == 18);
}

static void test_refusals(void) {
    const size_t free_bytes[2] = {(size_t)8 << 30, (size_t)8 << 30};
    hl_placement pl;
    hl_placement_in in = base(-1, 2, free_bytes);
    in.split_mode = HEARTH_SPLIT_ROW;
    CHECK(hl_placement_plan(&in, dev, &pl) == HEARTH_ERR_UNSUPPORTED && strstr(hearth_last_error(), "row"));
    in = base(-1, 2, free_bytes);
    in.main_gpu = 2;
    CHECK(hl_placement_plan(&in, dev, &pl) == HEARTH_ERR_INVALID_ARG && strstr(hearth_last_error(), "main_gpu"));
    const float zeros[2] = {0.0f, 0.0f}, negative[2] = {1.0f, -1.0f};
    in = base(-1, 2, free_bytes);
    in.tensor_split = zeros;
    CHECK(hl_placement_plan(&in, dev, &pl) == HEARTH_ERR_INVALID_ARG);
    in.tensor_split = negative;
    CHECK(hl_placement_plan(&in, dev, &pl) == HEARTH_ERR_INVALID_ARG);
}

static void test_too_little_memory(void) {
    const size_t small[1] = {200 * MIB}; /* 30 x 10 MiB + 50 MiB + 100 MiB reserve do not fit */
    hl_placement pl;
    hl_placement_in in = base(-1, 1, small);
    CHECK(hl_placement_plan(&in, dev, &pl) == HEARTH_ERR_OUT_OF_MEMORY);
    const char *msg = hearth_last_error();
    CHECK_MSG(strstr(msg, "450 MiB") && strstr(msg, "200 MiB free") && strstr(msg, "lower n_gpu_layers or n_ctx"),
              "message: %s", msg);
    in = base(10, 1, small); /* 100 MiB + the reserve fit */
    CHECK(hl_placement_plan(&in, dev, &pl) == HEARTH_OK && count_on(0) == 10);
}

/* AUTO: 10 MiB blocks bringing 20 MiB of context each, a 50 MiB output
 * layer, 100 MiB reserve and a twentieth of the free memory as margin. */
static void test_auto(void) {
    hl_placement pl;
    const size_t big[1] = {(size_t)8 << 30};
    hl_placement_in in = base(HEARTH_N_GPU_LAYERS_AUTO, 1, big);
    in.layer_ctx_bytes = 20 * MIB;
    CHECK(hl_placement_plan(&in, dev, &pl) == HEARTH_OK && count_on(0) == N_LAYER && pl.output_dev == 0 &&
          pl.n_offloaded == N_LAYER + 1);
    /* 1000 MiB: 1000 - 100 - 50 = 850 MiB for 30 MiB blocks: 28 (the output layer would need all 30 first) */
    const size_t mid[1] = {1000 * MIB};
    in.free_bytes = mid;
    CHECK(hl_placement_plan(&in, dev, &pl) == HEARTH_OK && count_on(0) == 28 && dev[27] == 0 && dev[28] == -1 &&
          pl.output_dev == -1 && pl.n_offloaded == 28 && pl.dev_blocks[0] == 28);
    const size_t small[1] = {200 * MIB}; /* 200 - 100 - 10 = 90: 3 blocks exactly */
    in.free_bytes = small;
    CHECK(hl_placement_plan(&in, dev, &pl) == HEARTH_OK && count_on(0) == 3 && pl.n_offloaded == 3);
    const size_t tiny[1] = {100 * MIB}; /* the reserve alone fills it: nothing offloaded, and no error */
    in.free_bytes = tiny;
    CHECK(hl_placement_plan(&in, dev, &pl) == HEARTH_OK && count_on(-1) == N_LAYER && pl.n_offloaded == 0 &&
          pl.output_dev == -1);
    /* two devices sharing the blocks by free memory: each device's share fits, one block more would not */
    const size_t two[2] = {700 * MIB, 400 * MIB};
    in = base(HEARTH_N_GPU_LAYERS_AUTO, 2, two);
    in.layer_ctx_bytes = 20 * MIB;
    CHECK(hl_placement_plan(&in, dev, &pl) == HEARTH_OK && pl.n_offloaded > 0 && pl.n_offloaded < N_LAYER);
    const int32_t n_fit = pl.n_offloaded;
    for (int d = 0; d < 2; d++)
        CHECK_MSG(pl.dev_bytes[d] + pl.dev_blocks[d] * 20 * MIB + 100 * MIB + two[d] / 20 <= two[d],
                  "device %d: %zu MiB of weights, %d blocks", d, pl.dev_bytes[d] / MIB, (int)pl.dev_blocks[d]);
    in.n_gpu_layers = n_fit + 1;
    CHECK(hl_placement_plan(&in, dev, &pl) == HEARTH_OK);
    bool short_one = false;
    for (int d = 0; d < 2; d++)
        short_one |= pl.dev_bytes[d] + pl.dev_blocks[d] * 20 * MIB + 100 * MIB + two[d] / 20 > two[d];
    CHECK_MSG(short_one, "auto took %d blocks, and %d fit as well", (int)n_fit, (int)n_fit + 1);
}

static void test_host_only(void) {
    const size_t big[2] = {(size_t)8 << 30, (size_t)8 << 30};
    bool pinned[N_LAYER + 1] = {false};
    pinned[3] = pinned[10] = true;
    hl_placement pl;
    hl_placement_in in = base(-1, 1, big);
    in.host_only = pinned;
    CHECK(hl_placement_plan(&in, dev, &pl) == HEARTH_OK);
    CHECK(dev[3] == -1 && dev[10] == -1 && count_on(0) == N_LAYER - 2 && pl.output_dev == 0);
    CHECK(pl.n_offloaded == N_LAYER - 1 && pl.n_pinned == 2 && pl.n_capped == 0 &&
          pl.dev_bytes[0] == (N_LAYER - 2) * 10 * MIB + 50 * MIB);
    in = base(12, 2, big); /* the first 12 blocks but 3 and 10, split in half over two devices */
    in.host_only = pinned;
    CHECK(hl_placement_plan(&in, dev, &pl) == HEARTH_OK);
    CHECK(count_on(0) == 5 && count_on(1) == 5 && dev[3] == -1 && dev[10] == -1 && dev[12] == -1 &&
          pl.n_offloaded == 10 && pl.n_pinned == 2 && pl.output_dev == -1);
    pinned[N_LAYER] = true; /* the output layer */
    in = base(-1, 1, big);
    in.host_only = pinned;
    CHECK(hl_placement_plan(&in, dev, &pl) == HEARTH_OK && pl.output_dev == -1 && pl.n_pinned == 3 &&
          pl.n_offloaded == N_LAYER - 2);
    /* every other block pinned: runs alternate, and past HL_MAX_STAGES - 2 the rest stays */
    for (int i = 0; i <= N_LAYER; i++) pinned[i] = i % 2 == 1;
    CHECK(hl_placement_plan(&in, dev, &pl) == HEARTH_OK);
    int runs = 1;
    for (int i = 1; i < N_LAYER; i++) runs += dev[i] != dev[i - 1];
    CHECK(runs <= HL_MAX_STAGES - 1 && pl.n_capped > 0 && pl.output_dev == -1);
    CHECK(pl.n_offloaded + pl.n_capped == N_LAYER / 2 + 1 && count_on(0) == pl.n_offloaded);
}

/* On this machine: the real load path with every layer asked for. */
static void test_load(void) {
    const char *path = getenv("HEARTH_MODEL");
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f) {
        printf("SKIP load: model not found\n");
        return;
    }
    fclose(f);
    hearth_model_params mp = hearth_model_default_params();
    mp.n_gpu_layers = -1;
    hearth_model *m;
    CHECK(hearth_model_load(path, &mp, &m) == HEARTH_OK);
    if (!hearth_supports_gpu_offload()) { /* no device takes layers by default (an OpenCL CPU device only when named) */
        CHECK(hearth_model_n_gpu_layers(m) == 0);
        CHECK(hearth_gpu_unavailable_reason() != NULL);
        hearth_gpu_info info;
        CHECK(hearth_gpu_device_info(hearth_gpu_device_count(), &info) == HEARTH_ERR_INVALID_ARG);
    } else {
        CHECK(hearth_model_n_gpu_layers(m) == hearth_model_n_layer(m) + 1 && hearth_supports_gpu_offload());
        CHECK(hearth_gpu_unavailable_reason() == NULL);
    }
    CHECK(hearth_supports_mmap() && hearth_supports_mlock());
    hearth_model_free(m);
    mp.n_gpu_layers = HEARTH_N_GPU_LAYERS_AUTO; /* a small model: every layer fits a GPU; none without one */
    CHECK(hearth_model_load(path, &mp, &m) == HEARTH_OK);
    CHECK(hearth_model_n_gpu_layers(m) == (hearth_supports_gpu_offload() ? hearth_model_n_layer(m) + 1 : 0));
    hearth_model_free(m);
    mp.n_gpu_layers = -3;
    CHECK(hearth_model_load(path, &mp, &m) == HEARTH_ERR_INVALID_ARG && strstr(hearth_last_error(), "auto"));
    mp.n_gpu_layers = -1;
    mp.split_mode = HEARTH_SPLIT_ROW; /* refused only where there is a GPU to split over */
    hearth_status st = hearth_model_load(path, &mp, &m);
    CHECK(hearth_supports_gpu_offload() ? st == HEARTH_ERR_UNSUPPORTED : st == HEARTH_OK);
    if (st == HEARTH_OK) hearth_model_free(m);
}

int main(void) {
    for (int i = 0; i < N_LAYER; i++) layer_bytes[i] = 10 * MIB;
    test_counts();
    test_splits();
    test_refusals();
    test_too_little_memory();
    test_auto();
    test_host_only();
    test_load();
    return check_report();
}
