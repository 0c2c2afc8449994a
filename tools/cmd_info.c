/* `hearth info [MODEL]`: version, build features (SIMD level, backends) and
 * the devices found with the weight types each multiplies; with MODEL, the
 * model's facts and the memory a context of the given -c/-b/-ub/-np/-fa
 * needs (hearth_context_memory_plan), before any is made. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* "    weight types: ..." as the device's backend answers. */
static void print_weight_types(int32_t device) {
    char types[512];
    if (hearth_device_weight_types(device, types, sizeof types) == HEARTH_OK) printf("    weight types: %s\n", types);
    else printf("    weight types: ? (%s)\n", hearth_last_error());
}

static void print_devices(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    printf("devices:\n");
    printf("  cpu: %d physical cores, %.1f GiB RAM\n", (int)hearth_cpu_physical_cores(),
           (double)pages * (double)page / (1u << 30));
    print_weight_types(-1);
    const int n_gpu = (int)hearth_gpu_device_count();
    const char *why = hearth_gpu_unavailable_reason();
    if (n_gpu == 0) printf("  gpu: none (%s)\n", why);
    for (int i = 0; i < n_gpu; i++) {
        hearth_gpu_info g;
        if (hearth_gpu_device_info(i, &g) != HEARTH_OK) {
            printf("  device %d: %s\n", i, hearth_last_error());
            continue;
        }
        char kind[64];
        if (g.cc_major > 0) snprintf(kind, sizeof kind, "compute capability %d.%d", (int)g.cc_major, (int)g.cc_minor);
        else snprintf(kind, sizeof kind, "%s %s", g.backend_label, g.is_gpu ? "GPU" : "CPU device, used when named");
        printf("  %s: %s, %s, %d compute units, %.0f MiB free of %.0f MiB\n", g.id, g.name, kind, (int)g.compute_units,
               (double)g.free_bytes / (1 << 20), (double)g.total_bytes / (1 << 20));
        print_weight_types(i);
    }
    if (n_gpu > 0 && why) printf("  offload by default: none (%s)\n", why);
    printf("supports: gpu_offload %s, mmap %s, mlock %s\n", hearth_supports_gpu_offload() ? "yes" : "no",
           hearth_supports_mmap() ? "yes" : "no", hearth_supports_mlock() ? "yes" : "no");
}

/* "18.3 GiB", "512.0 MiB" */
static const char *fmt_bytes(uint64_t b, char buf[24]) {
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int u = 0;
    for (; v >= 1024 && u < 4; u++) v /= 1024;
    snprintf(buf, 24, u ? "%.1f %s" : "%.0f %s", v, units[u]);
    return buf;
}

/* What a context with cp needs, per device and in all. */
static int print_memory(const hearth_model *m, const hearth_context_params *cp) {
    hearth_context_memory mem;
    if (hearth_context_memory_plan(m, cp, &mem) != HEARTH_OK) return cli_fail("context");
    char w[24], kv[24], c[24], t[24], a[24];
    printf("context: n_ctx %u, n_batch %u, n_ubatch %u, n_seq_max %u, KV cache %s/%s\n", mem.n_ctx, mem.n_batch,
           mem.n_ubatch, mem.n_seq_max, mem.type_k, mem.type_v);
    for (int32_t i = 0; i < mem.n_devices; i++) {
        const hearth_memory_device *d = &mem.device[i];
        printf("  %s: weights %s, KV cache %s, compute %s (%s available)\n", d->id, fmt_bytes(d->weights, w),
               fmt_bytes(d->kv_cache, kv), fmt_bytes(d->compute, c), fmt_bytes(d->available, a));
    }
    printf("  total: %s (weights %s, KV cache %s, compute %s)\n", fmt_bytes(mem.total, t), fmt_bytes(mem.weights, w),
           fmt_bytes(mem.kv_cache, kv), fmt_bytes(mem.compute, c));
    return 0;
}

static int print_model(const char *path, int32_t n_gpu_layers, const hearth_context_params *cp) {
    hearth_model_params mp = hearth_model_default_params();
    mp.n_gpu_layers = n_gpu_layers;
    cli_fit_context(cp, &mp);
    hearth_model *m;
    if (cli_model_load(path, &mp, &m)) return 1;
    char name[256];
    size_t len;
    if (hearth_model_meta_str(m, "general.name", name, sizeof name, &len) != HEARTH_OK)
        snprintf(name, sizeof name, "?");
    printf("model: %s\n", path);
    printf("  name: %s\n  description: %s\n", name, hearth_model_desc(m));
    printf("  parameters: %llu\n  size: %.1f MiB\n", (unsigned long long)hearth_model_n_params(m),
           (double)hearth_model_size(m) / (1 << 20));
    printf("  n_layer: %d\n  n_embd: %d\n  n_vocab: %d\n  n_ctx_train: %d\n", (int)hearth_model_n_layer(m),
           (int)hearth_model_n_embd(m), (int)hearth_model_n_vocab(m), (int)hearth_model_n_ctx_train(m));
    printf("  layers on GPU: %d\n", (int)hearth_model_n_gpu_layers(m));
    const int rc = print_memory(m, cp);
    hearth_model_free(m);
    return rc;
}

int cmd_info(int argc, char **argv) {
    const char *model = NULL;
    long ngl = 0, n_seq = 1;
    hearth_context_params cp = hearth_context_default_params();
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: hearth info [MODEL [-ngl N] [-c N] [-b N] [-ub N] [-np N] [-fa MODE] [-ctk T] [-ctv T] "
                   "[-t N]]\n\n"
                   "Prints the version, build features, devices and what the build supports; with MODEL, the "
                   "model's facts,\nhow many of its layers a load places on the GPU (-ngl N, -1 = all, auto), and the "
                   "memory a context needs\n(weights, KV cache, compute buffers; per device and in all) for the "
                   "context options of hearth run\n(-c, -b, -ub, -fa, -ctk, -ctv, -t) and -np, --parallel N sequences "
                   "(the "
                   "slots of hearth serve; default 1).\n");
            return 0;
        }
        const int shared = cli_parse_ctx_opt(argc, argv, &i, "info", &cp, &ngl);
        if (shared < 0) return 2;
        if (shared) continue;
        if (!strcmp(argv[i], "-np") || !strcmp(argv[i], "--parallel")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "hearth: %s needs a value\n", argv[i]);
                return 2;
            }
            if (!cli_parse_int(argv[i], argv[i + 1], 1, 256, &n_seq)) return 2;
            i++;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "hearth: unknown option '%s'; see hearth info --help\n", argv[i]);
            return 2;
        } else if (!model) {
            model = argv[i];
        } else {
            fprintf(stderr, "hearth: info takes at most one MODEL argument\n");
            return 2;
        }
    }
    cli_log_init(false);
    printf("%s\n", hearth_build_info());
    print_devices();
    cp.n_seq_max = (uint32_t)n_seq;
    return model ? print_model(model, (int32_t)ngl, &cp) : 0;
}
