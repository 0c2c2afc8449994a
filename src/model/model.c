/* Model loading: opens and validates the GGUF file, picks the architecture,
 * loads the vocabulary, binds the weights, and answers the public model
 * getters of hearth.h. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/host.h"
#include "backend/ops.h"
#include "base/log.h"
#include "gguf/ggml_types.h"
#include "model/model.h"
#include "model/placement.h"
#include "quant/quant.h"

hearth_model_params hearth_model_default_params(void) {
    return (hearth_model_params){
        .n_gpu_layers = 0,
        .fit_n_ctx = 0,
        .split_mode = HEARTH_SPLIT_LAYER,
        .main_gpu = 0,
        .tensor_split = NULL,
        .devices = NULL,
        .use_mmap = true,
        .use_mlock = false,
        .vocab_only = false,
    };
}

static hearth_status find_arch(const gguf_file *f, const hl_arch **out) {
    gguf_str name;
    HL_TRY(hl_gguf_get_str(f, "general.architecture", true, &name));
    for (size_t i = 0; hl_arch_at(i); i++)
        if (hl_gguf_str_eq(name, hl_arch_at(i)->name)) {
            *out = hl_arch_at(i);
            return HEARTH_OK;
        }
    char supported[256] = "";
    for (size_t i = 0; hl_arch_at(i); i++)
        snprintf(supported + strlen(supported), sizeof supported - strlen(supported), "%s%s", i ? ", " : "",
                 hl_arch_at(i)->name);
    return hl_fail(HEARTH_ERR_UNSUPPORTED, "unknown model architecture '%.*s' (supported: %s)",
                   (int)(name.len > 64 ? 64 : name.len), name.data, supported);
}

/* Memory for a file read whole: whole 2 MiB pages, advised (Linux) as
 * transparent huge pages, so that decode's streams through the weights need
 * a TLB entry per 2 MiB instead of per 4 KiB (the kernel otherwise backs
 * malloc'd memory with 4 KiB pages where THP is "madvise", the default of
 * many distributions); bench/results/2026-11-29-huge-pages-cpu-avx2.md
 * measures it against the same weights mapped in small pages. */
#define HUGE_PAGE ((size_t)2 << 20)
static void *alloc_huge(size_t size) {
    const size_t rounded = (size + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    void *p = aligned_alloc(HUGE_PAGE, rounded ? rounded : HUGE_PAGE);
#ifdef MADV_HUGEPAGE
    if (p) (void)madvise(p, rounded, MADV_HUGEPAGE); /* advice: without THP the pages stay small */
#endif
    return p;
}

/* Reads a whole file into memory (use_mmap = false). */
static hearth_status read_whole_file(const char *path, void **data, size_t *size) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return hl_fail(HEARTH_ERR_IO, "cannot open '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
        close(fd);
        return hl_fail(HEARTH_ERR_IO, "'%s' is a directory, not a GGUF file", path);
    }
    *size = (size_t)st.st_size;
    *data = alloc_huge(*size);
    if (!*data) {
        close(fd);
        return hl_fail(HEARTH_ERR_OUT_OF_MEMORY,
                       "cannot read '%s' into memory: %zu MiB not available; free memory or load it mapped (use_mmap)",
                       path, *size >> 20);
    }
    size_t done = 0;
    while (done < *size) {
        ssize_t r = read(fd, (char *)*data + done, *size - done);
        if (r <= 0) {
            close(fd);
            free(*data);
            *data = NULL;
            return hl_fail(HEARTH_ERR_IO, "cannot read '%s': %s", path, r < 0 ? strerror(errno) : "unexpected end");
        }
        done += (size_t)r;
    }
    close(fd);
    return HEARTH_OK;
}

static int cmp_addr(const void *a, const void *b) {
    const uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return (x > y) - (x < y);
}

/* Every tensor of the file must be bound to a weight, as llama.cpp requires
 * ("wrong number of tensors"): one left over belongs to a variant of the
 * architecture (an output bias, experts ...) whose computation hearth would
 * silently leave out. */
static hearth_status check_all_bound(const hearth_model *m) {
#define HL_COUNT_FIELD(name) +1
    const size_t per_layer = 0 HL_LAYER_TENSORS(HL_COUNT_FIELD);
    /* tok_embd, pos_embd, tok_norm, tok_norm_b, tok_types, cls, cls_b, cls_out, cls_out_b, the output
     * layer's, the blocks' */
    const size_t n = 9 HL_OUTPUT_TENSORS(HL_COUNT_FIELD) + (size_t)m->hp.n_layer * per_layer;
#undef HL_COUNT_FIELD
    uintptr_t *bound = hl_malloc(n * sizeof *bound);
    if (!bound) return HEARTH_ERR_OUT_OF_MEMORY;
    size_t k = 0;
    bound[k++] = (uintptr_t)m->tok_embd.data;
#define HL_OUTPUT_ADDR(name) bound[k++] = (uintptr_t)m->name.data;
    HL_OUTPUT_TENSORS(HL_OUTPUT_ADDR)
#undef HL_OUTPUT_ADDR
    bound[k++] = (uintptr_t)m->pos_embd.data;
    bound[k++] = (uintptr_t)m->tok_norm.data;
    bound[k++] = (uintptr_t)m->tok_norm_b.data;
    bound[k++] = (uintptr_t)m->tok_types.data;
    bound[k++] = (uintptr_t)m->cls.data;
    bound[k++] = (uintptr_t)m->cls_b.data;
    bound[k++] = (uintptr_t)m->cls_out.data;
    bound[k++] = (uintptr_t)m->cls_out_b.data;
    for (int32_t il = 0; il < m->hp.n_layer; il++) {
#define HL_ADDR_FIELD(name) bound[k++] = (uintptr_t)m->layers[il].name.data;
        HL_LAYER_TENSORS(HL_ADDR_FIELD)
#undef HL_ADDR_FIELD
    }
    qsort(bound, n, sizeof *bound, cmp_addr);
    hearth_status st = HEARTH_OK;
    for (uint64_t i = 0; i < hl_gguf_n_tensors(m->gguf) && st == HEARTH_OK; i++) {
        const gguf_tensor *t = hl_gguf_tensor_at(m->gguf, i);
        const uintptr_t addr = (uintptr_t)t->data;
        if (!bsearch(&addr, bound, n, sizeof *bound, cmp_addr))
            st = hl_fail(
                HEARTH_ERR_UNSUPPORTED,
                "tensor '%.*s' is not part of the %s architecture as hearth runs it: this variant of the model "
                "is not supported yet",
                (int)(t->name.len > 96 ? 96 : t->name.len), t->name.data, m->arch->name);
    }
    free(bound);
    return st;
}

/* Totals over all tensors, and for the description the file type the file
 * states (general.file_type, e.g. Q4_K_M, as llama.cpp names it) or else the
 * type holding most elements. */
static void describe(hearth_model *m) {
    uint64_t per_type[64] = {0};
    for (uint64_t i = 0; i < hl_gguf_n_tensors(m->gguf); i++) {
        const gguf_tensor *t = hl_gguf_tensor_at(m->gguf, i);
        uint64_t n = (uint64_t)(t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]);
        m->n_params += n;
        m->n_bytes += t->size;
        if (t->n_dims >= 2 && t->type < 64) per_type[t->type] += n;
    }
    uint32_t main_type = 0;
    for (uint32_t t = 0; t < 64; t++)
        if (per_type[t] > per_type[main_type]) main_type = t;
    double p = (double)m->n_params;
    char size[32];
    if (p >= 1e9) snprintf(size, sizeof size, "%.1fB", p / 1e9);
    else if (p >= 1e6) snprintf(size, sizeof size, "%.0fM", p / 1e6);
    else snprintf(size, sizeof size, "%.0fK", p / 1e3);
    uint32_t ftype = UINT32_MAX;
    if (hl_gguf_get_u32(m->gguf, "general.file_type", false, &ftype) != HEARTH_OK) hl_clear_error();
    const char *ftype_name = hearth_ftype_name((hearth_ftype)ftype);
    /* ggml names types in lower case ("q4_1"); users know them as Q4_1 */
    const ggml_type_info *ti = hl_ggml_type_get(main_type);
    char type[16];
    snprintf(type, sizeof type, "%s", ftype_name ? ftype_name : ti ? ti->name : "?");
    for (char *c = type; *c; c++) *c = (char)toupper((unsigned char)*c);
    snprintf(m->desc, sizeof m->desc, "%s %s %s", m->arch->name, size, type);
}

static hearth_status load(const char *path, const hearth_model_params *p, hearth_model *m) {
    if (p->use_mmap) {
        HL_TRY(hl_gguf_open(path, &m->gguf));
    } else {
        size_t size = 0;
        HL_TRY(read_whole_file(path, &m->file_copy, &size));
        HL_TRY(hl_gguf_open_memory(m->file_copy, size, &m->gguf));
    }
    HL_TRY(hl_gguf_attach_parts(m->gguf, path));
    HL_TRY(find_arch(m->gguf, &m->arch));
    HL_TRY(hl_vocab_load(m->gguf, &m->vocab));
    m->hp.n_vocab = hl_vocab_n_tokens(m->vocab);
    if (p->vocab_only) return HEARTH_OK;
    HL_TRY(hl_backend_cpu_init(&(hl_cpu_limits){.max_tokens = 0}, &m->host));
    HL_TRY(m->arch->hparams(m));
    HL_TRY(hl_model_bind(m));
    HL_TRY(check_all_bound(m));
    describe(m);
    if (p->use_mlock) {
        size_t size;
        const void *data = hl_gguf_data(m->gguf, &size);
        if (mlock(data, size) != 0)
            HL_WARN("use_mlock: could not lock %zu MiB in RAM (%s); raise RLIMIT_MEMLOCK (ulimit -l)", size >> 20,
                    strerror(errno));
    }
    HL_TRY(hl_placement_apply(m, p));
    HL_INFO("loaded %s: %d layers, n_embd %d, n_vocab %d, %.1f MiB of weights", m->desc, m->hp.n_layer, m->hp.n_embd,
            m->hp.n_vocab, (double)m->n_bytes / (1 << 20));
    return HEARTH_OK;
}

hearth_status hearth_model_load(const char *path, const hearth_model_params *params, hearth_model **out) {
    hl_clear_error();
    if (!out) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_model_load: out is NULL");
    *out = NULL;
    if (!path) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_model_load: path is NULL");
    hearth_model_params p = params ? *params : hearth_model_default_params();
    if (p.n_gpu_layers < HEARTH_N_GPU_LAYERS_AUTO)
        return hl_fail(HEARTH_ERR_INVALID_ARG,
                       "n_gpu_layers must be -2 (auto: as many as fit), -1 (all), 0 or a "
                       "layer count (got %d)",
                       (int)p.n_gpu_layers);
    if (p.n_gpu_layers == HEARTH_N_GPU_LAYERS_AUTO)
        for (int i = 0; i < 2; i++) {
            const int32_t t = i ? p.fit_type_v : p.fit_type_k;
            if (t != 0 && !hl_kv_type_name(t))
                return hl_fail(HEARTH_ERR_INVALID_ARG,
                               "%s %d is not a KV cache type: use a hearth_kv_type (f16, bf16, "
                               "q8_0, q4_0) or 0 for f16",
                               i ? "fit_type_v" : "fit_type_k", (int)t);
        }
    hearth_model *m = hl_calloc(1, sizeof *m);
    if (!m) return HEARTH_ERR_OUT_OF_MEMORY;
    m->output_dev = -1;
    hearth_status st = load(path, &p, m);
    if (st != HEARTH_OK) {
        hearth_model_free(m);
        return st;
    }
    *out = m;
    return HEARTH_OK;
}

void hearth_model_free(hearth_model *m) {
    if (!m) return;
    hl_placement_release(m);
    hl_backend_cpu_free(m->host);
    free(m->layer_dev);
    hl_vocab_free(m->vocab);
    hl_token_trie_free(atomic_load(&m->trie));
    hl_gguf_close(m->gguf);
    free(m->file_copy);
    free(m->layers);
    free(m);
}

int32_t hearth_model_n_vocab(const hearth_model *m) { return m->hp.n_vocab; }
int32_t hearth_model_n_ctx_train(const hearth_model *m) { return m->hp.n_ctx_train; }
int32_t hearth_model_n_embd(const hearth_model *m) { return m->hp.n_embd; }
int32_t hearth_model_pooling_type(const hearth_model *m) { return m->hp.pooling_type; }
int32_t hearth_model_n_cls_out(const hearth_model *m) { return m->hp.n_cls_out; }
bool hearth_model_can_generate(const hearth_model *m) { return m->output.data != NULL; }
int32_t hearth_model_n_layer(const hearth_model *m) { return m->hp.n_layer; }
int32_t hearth_model_n_gpu_layers(const hearth_model *m) { return m->n_gpu_layers; }
uint64_t hearth_model_n_params(const hearth_model *m) { return m->n_params; }
uint64_t hearth_model_size(const hearth_model *m) { return m->n_bytes; }
const char *hearth_model_desc(const hearth_model *m) { return m->desc; }
