/* What a context needs in memory before it exists (hearth_context_memory_plan,
 * `hearth info MODEL -c N`), and the check that refuses a context the host
 * cannot hold. Both read context.c's plan (hl_context_plan_dev), the code
 * that sizes the real allocations, so the figures cannot drift from them. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "backend/registry.h"
#include "gguf/ggml_types.h"
#include "runtime/context_impl.h"

_Static_assert(sizeof(((hearth_context_memory *)0)->device) / sizeof(hearth_memory_device) >= 1 + HL_MAX_GPUS,
               "hearth_context_memory.device holds the host and every GPU a model can use");

/* MemAvailable of /proc/meminfo (the kernel's estimate of what can be
 * allocated without swapping), else the free pages; bytes. */
static uint64_t host_available(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[128];
        unsigned long long kib;
        while (fgets(line, sizeof line, f))
            if (sscanf(line, "MemAvailable: %llu kB", &kib) == 1) {
                fclose(f);
                return (uint64_t)kib * 1024;
            }
        fclose(f);
    }
    return (uint64_t)sysconf(_SC_AVPHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* "18.3 GiB", "512.0 MiB", "4.0 KiB" */
static const char *fmt_bytes(uint64_t b, char buf[24]) {
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(buf, 24, u ? "%.1f %s" : "%.0f %s", v, units[u]);
    return buf;
}

hearth_status hl_context_check_host(const hearth_context *c, const hl_ctx_plan_dev *host) {
    const uint64_t need = host->arena + host->scratch, avail = host_available();
    if (need <= avail) return HEARTH_OK;
    char n[24], kv[24], a[24];
    return hl_fail(HEARTH_ERR_OUT_OF_MEMORY,
                   "the context needs %s (KV cache %s at n_ctx %u), %s of memory is "
                   "available: lower n_ctx or n_ubatch",
                   fmt_bytes(need, n), fmt_bytes(host->kv, kv), c->params.n_ctx, fmt_bytes(avail, a));
}

hearth_status hearth_context_memory_plan(const hearth_model *model, const hearth_context_params *params,
                                         hearth_context_memory *out) {
    hl_clear_error();
    if (!model || !out) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_context_memory_plan: model or out is NULL");
    if (!model->layers)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "the model was loaded with vocab_only: it has no weights to run");
    hearth_context c = {.model = (hearth_model *)model};
    HL_TRY(hl_context_resolve(&c, params));
    memset(out, 0, sizeof *out);
    out->n_ctx = c.params.n_ctx;
    out->n_batch = c.params.n_batch;
    out->n_ubatch = c.params.n_ubatch;
    out->n_seq_max = c.params.n_seq_max;
    snprintf(out->type_k, sizeof out->type_k, "%s", hl_ggml_type_get(c.type_k)->name);
    snprintf(out->type_v, sizeof out->type_v, "%s", hl_ggml_type_get(c.type_v)->name);
    for (int d = -1; d < HL_MAX_GPUS; d++) {
        if (d >= 0 && !model->gpu[d]) continue;
        hearth_memory_device *dev = &out->device[out->n_devices++];
        hl_ctx_plan_dev plan;
        hl_context_plan_dev(&c, d, &plan);
        dev->kv_cache = plan.kv;
        dev->compute = plan.arena - plan.kv + plan.scratch;
        if (d < 0) {
            snprintf(dev->id, sizeof dev->id, "%s", hl_backend_reg_host()->name);
            snprintf(dev->backend_label, sizeof dev->backend_label, "%s", hl_backend_reg_host()->label);
            dev->weights = model->n_bytes > model->gpu_bytes ? model->n_bytes - model->gpu_bytes : 0;
            dev->available = host_available();
        } else {
            hl_gpu_device g;
            HL_TRY(hl_gpu_device_get(model->gpu_id[d], &g));
            snprintf(dev->id, sizeof dev->id, "%s", g.id);
            snprintf(dev->backend_label, sizeof dev->backend_label, "%s", g.backend_label);
            dev->weights = model->gpu_dev_bytes[d];
            dev->available = g.free_bytes;
        }
        out->weights += dev->weights;
        out->kv_cache += dev->kv_cache;
        out->compute += dev->compute;
    }
    out->context = out->kv_cache + out->compute;
    out->total = out->weights + out->context;
    return HEARTH_OK;
}
