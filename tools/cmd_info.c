/* `hearth info [MODEL]`: version, build features (SIMD level, backends) and
 * the devices found; with MODEL, the model's facts and metadata. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static void print_devices(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    printf("devices:\n");
    printf("  cpu: %d physical cores, %.1f GiB RAM\n", (int)hearth_cpu_physical_cores(),
           (double)pages * (double)page / (1u << 30));
    int n_gpu = (int)hearth_gpu_device_count();
    if (n_gpu == 0) printf("  gpu: none (no GPU backend in this build)\n");
}

static int print_model(const char *path) {
    hearth_model *m;
    if (hearth_model_load(path, NULL, &m) != HEARTH_OK) return cli_fail(path);
    char name[256];
    size_t len;
    if (hearth_model_meta_str(m, "general.name", name, sizeof name, &len) != HEARTH_OK) snprintf(name, sizeof name, "?");
    printf("model: %s\n", path);
    printf("  name: %s\n  description: %s\n", name, hearth_model_desc(m));
    printf("  parameters: %llu\n  size: %.1f MiB\n", (unsigned long long)hearth_model_n_params(m),
           (double)hearth_model_size(m) / (1 << 20));
    printf("  n_layer: %d\n  n_embd: %d\n  n_vocab: %d\n  n_ctx_train: %d\n", (int)hearth_model_n_layer(m),
           (int)hearth_model_n_embd(m), (int)hearth_model_n_vocab(m), (int)hearth_model_n_ctx_train(m));
    printf("  layers on GPU: %d\n", (int)hearth_model_n_gpu_layers(m));
    hearth_model_free(m);
    return 0;
}

int cmd_info(int argc, char **argv) {
    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        printf("usage: hearth info [MODEL]\n\nPrints the version, build features and devices; with MODEL, the model's facts.\n");
        return 0;
    }
    if (argc > 2) {
        fprintf(stderr, "hearth: info takes at most one MODEL argument\n");
        return 2;
    }
    cli_log_init(false);
    printf("%s\n", hearth_build_info());
    print_devices();
    return argc == 2 ? print_model(argv[1]) : 0;
}
