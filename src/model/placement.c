/* Layer placement (see placement.h): the plan, a pure function of sizes and
 * parameters, and its application to a loaded model, which asks each
 * device (supports_op) whether it runs each block before planning. */
#include "model/placement.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/ops.h"
#include "base/log.h"
#include "base/progress.h"
#include "quant/quant.h"

#define MIB(b) ((double)(b) / (1 << 20))
#define UPLOAD_ALIGN 256 /* bytes; cudaMalloc's alignment, for every tensor in a device buffer */

/* The device of offloaded block i (0 <= i < n_off) under a layer split:
 * the first d whose cumulative share exceeds i / n_off (llama.cpp's
 * upper_bound over the normalized tensor_split). */
static int32_t split_device(const double *cum, int32_t n_dev, int32_t i, int32_t n_off) {
    const double at = (double)i / (double)n_off;
    for (int32_t d = 0; d < n_dev; d++)
        if (at < cum[d]) return d;
    return n_dev - 1;
}

static bool host_only(const hl_placement_in *in, int32_t il) { return in->host_only && in->host_only[il]; }

/* The plan for n_gpu_layers = ngl (not AUTO), its memory unchecked. */
static hearth_status plan_count(const hl_placement_in *in, int32_t ngl, int8_t *layer_dev, hl_placement *out) {
    *out = (hl_placement){.output_dev = -1};
    for (int32_t il = 0; il < in->n_layer; il++) layer_dev[il] = -1;
    if (in->n_devices == 0 || ngl == 0) return HEARTH_OK;
    if (in->n_devices > HL_MAX_GPUS)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "at most %d GPUs are supported", HL_MAX_GPUS);
    if (in->split_mode == HEARTH_SPLIT_ROW)
        return hl_fail(HEARTH_ERR_UNSUPPORTED, "split_mode row (matrices split over GPUs) is not supported yet; use "
                                               "split_mode layer");
    if (in->main_gpu < 0 || in->main_gpu >= in->n_devices)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "main_gpu %d does not exist (%d GPUs usable)", (int)in->main_gpu,
                       (int)in->n_devices);

    /* cumulative shares of the devices: all on main_gpu, or in proportion */
    double cum[HL_MAX_GPUS], total = 0.0;
    for (int32_t d = 0; d < in->n_devices; d++) {
        double share = in->split_mode == HEARTH_SPLIT_NONE ? (d == in->main_gpu)
                       : in->tensor_split                  ? (double)in->tensor_split[d]
                                                           : (double)in->free_bytes[d];
        if (!(share >= 0.0))
            return hl_fail(HEARTH_ERR_INVALID_ARG, "tensor_split[%d] = %g must be >= 0", (int)d, share);
        total += share;
        cum[d] = total;
    }
    if (!(total > 0.0)) return hl_fail(HEARTH_ERR_INVALID_ARG, "tensor_split gives no device a share of the layers");
    for (int32_t d = 0; d < in->n_devices; d++) cum[d] /= total;

    const bool output = ngl < 0 || ngl > in->n_layer;
    const int32_t n_asked = output ? in->n_layer : ngl;
    int32_t n_run = 0; /* the blocks asked for that the devices run */
    for (int32_t il = 0; il < n_asked; il++) n_run += !host_only(in, il);
    out->n_pinned = n_asked - n_run + (output && host_only(in, in->n_layer));
    /* Each run of blocks on one device is a stage of the pipeline, and
     * blocks kept on the host between offloaded ones open more. Past
     * HL_MAX_STAGES - 2 runs (room for a last one on the host and one for
     * the output layer) the remaining blocks stay on the host. */
    int32_t runs = 0, prev = -2, last = -1;
    bool capped = false;
    for (int32_t il = 0, k = 0; il < in->n_layer; il++) {
        int32_t d = il < n_asked && !host_only(in, il) ? split_device(cum, in->n_devices, k++, n_run) : -1;
        if (d != prev && runs + 1 > HL_MAX_STAGES - 2) capped = true;
        if (capped) d = -1;
        if (d != prev) runs++, prev = d;
        layer_dev[il] = (int8_t)d;
        if (d < 0) continue;
        out->dev_bytes[d] += in->layer_bytes[il];
        out->dev_blocks[d]++;
        out->n_offloaded++;
        last = d;
    }
    out->n_capped = n_run - out->n_offloaded;
    if (output && !host_only(in, in->n_layer)) {
        if (capped) {
            out->n_capped++;
        } else { /* with the last offloaded block, so the hidden state does not cross again */
            out->output_dev = last >= 0 ? last : in->main_gpu;
            out->dev_bytes[out->output_dev] += in->output_bytes;
            out->n_offloaded++;
        }
    }
    return HEARTH_OK;
}

/* The first device used whose share does not fit its free memory, or -1;
 * *need is that share: the weights and the reserve, and when fitting
 * (AUTO) the blocks' context memory and a twentieth of the free memory. */
static int32_t first_short(const hl_placement_in *in, const hl_placement *pl, bool fitting, size_t *need) {
    for (int32_t d = 0; d < in->n_devices; d++) {
        if (pl->dev_bytes[d] == 0) continue;
        *need = pl->dev_bytes[d] + in->reserve_bytes;
        if (fitting) *need += (size_t)pl->dev_blocks[d] * in->layer_ctx_bytes + in->free_bytes[d] / 20;
        if (*need > in->free_bytes[d]) return d;
    }
    return -1;
}

hearth_status hl_placement_plan(const hl_placement_in *in, int8_t *layer_dev, hl_placement *out) {
    size_t need = 0;
    if (in->n_gpu_layers == HEARTH_N_GPU_LAYERS_AUTO) {
        for (int32_t n = in->n_layer + 1; n > 0; n--) { /* n_layer + 1: every block and the output layer */
            HL_TRY(plan_count(in, n, layer_dev, out));
            if (first_short(in, out, true, &need) < 0) return HEARTH_OK;
        }
        return plan_count(in, 0, layer_dev, out);
    }
    HL_TRY(plan_count(in, in->n_gpu_layers, layer_dev, out));
    const int32_t d = first_short(in, out, false, &need);
    if (d < 0) return HEARTH_OK;
    char dev[32];
    if (in->names) snprintf(dev, sizeof dev, "%s", in->names[d]);
    else snprintf(dev, sizeof dev, "device %d", (int)d);
    return hl_fail(HEARTH_ERR_OUT_OF_MEMORY,
                   "%d offloaded layers need %.0f MiB on %s (%.0f MiB of weights + %.0f MiB "
                   "for the context), %.0f MiB free: lower n_gpu_layers or n_ctx, or use n_gpu_layers auto",
                   (int)out->n_offloaded, MIB(need), dev, MIB(out->dev_bytes[d]), MIB(in->reserve_bytes),
                   MIB(in->free_bytes[d]));
}

/* ------------------------------------------------------------ apply -- */

static size_t aligned(size_t n) { return (n + UPLOAD_ALIGN - 1) & ~(size_t)(UPLOAD_ALIGN - 1); }

/* Bytes of one KV cache row of n elements in hearth_kv_type t (0: F16). */
static size_t kv_row_bytes(int32_t t, int64_t n) { return hl_row_size(t ? (uint32_t)t : GGML_TYPE_F16, n); }

/* Bytes of a block's weights (absent optional tensors have no data). */
static size_t layer_bytes(const hl_layer *l) {
    size_t n = 0;
#define ADD_BYTES(name)                                                                                                \
    if (l->name.data) n += aligned(hl_tensor_nbytes(&l->name));
    HL_LAYER_TENSORS(ADD_BYTES)
#undef ADD_BYTES
    return n;
}

/* ------------------------------------------------ what a device runs -- */

/* Whether device b runs weight t (declared by d) as the op it feeds; a
 * rope frequency factor with the rope of block il. If not, `why` names it. */
static bool runs_weight(const hearth_model *m, const hl_backend *b, const hl_weight_decl *d, const hl_tensor *t,
                        int32_t il, char *why, size_t size) {
    const hl_hparams *hp = &m->hp;
    const hl_tensor x = {.type = GGML_TYPE_F32, .ne = {t->ne[0], 1, 1, 1}};
    const hl_tensor y = {.type = GGML_TYPE_F32, .ne = {t->ne[1], 1, 1, 1}};
    const hl_tensor ids = {.type = GGML_TYPE_I32, .ne = {1, 1, 1, 1}};
    const hl_tensor q = {.type = GGML_TYPE_F32, .ne = {(int64_t)hp->n_head * hp->head_dim, 1, 1, 1}};
    hl_op_desc desc = {.op = d->feeds};
    switch (d->feeds) {
    case HL_OP_MATMUL: desc.t[0] = t, desc.t[1] = &x, desc.t[2] = &y; break;
    case HL_OP_MATMUL_ID: desc.t[0] = t, desc.t[1] = &x, desc.t[2] = &ids, desc.t[3] = &y; break;
    case HL_OP_RMS_NORM: desc.t[0] = &x, desc.t[1] = t, desc.t[2] = &x; break;
    case HL_OP_LAYER_NORM: desc.t[0] = &x, desc.t[1] = t, desc.t[2] = t, desc.t[3] = &x; break;
    case HL_OP_ADD: desc.t[0] = &x, desc.t[1] = t; break;
    case HL_OP_ROPE:
        desc.t[0] = &q, desc.t[1] = t, desc.n_head = hp->n_head;
        desc.rope = hl_layer_is_swa(hp, il) ? &hp->rope_swa : &hp->rope;
        break;
    default: return true; /* GET_ROWS: the input's, which stays on the host */
    }
    if (hl_supports_op(b, &desc)) return true;
    const ggml_type_info *ti = hl_ggml_type_get(t->type);
    snprintf(why, size, "no %s kernel for %s (%s {%lld, %lld})", hl_op_name(d->feeds), d->name, ti ? ti->name : "?",
             (long long)t->ne[0], (long long)t->ne[1]);
    return false;
}

/* Whether device b runs every weight the architecture declares for block il
 * (il == n_layer: the output layer's) and the rope, cache store and
 * attention of the block's shapes on the context's F16 cache. If not, `why`
 * says what it lacks. */
static bool runs_block(const hearth_model *m, const hl_backend *b, int32_t il, char *why, size_t size) {
    const hl_hparams *hp = &m->hp;
    const bool output = il == hp->n_layer;
    const void *base = output ? (const void *)m : (const void *)&m->layers[il];
    for (const hl_weight_decl *d = output ? m->arch->output : m->arch->block; d->name; d++)
        for (int i = 0; i < 3 && (i == 0 || d->part[i] != HL_DIM_NONE); i++) {
            const hl_tensor *t = (const hl_tensor *)((const uint8_t *)base + d->field[i]);
            if (t->data && !runs_weight(m, b, d, t, il, why, size)) return false;
        }
    if (output) return true;
    const int64_t q_dim = (int64_t)hp->n_head * hp->head_dim, kv_dim = (int64_t)hp->n_head_kv * hp->head_dim;
    const hl_tensor q = {.type = GGML_TYPE_F32, .ne = {q_dim, 1, 1, 1}};
    hl_tensor out = q;
    const hl_tensor k = {.type = GGML_TYPE_F32, .ne = {kv_dim, 1, 1, 1}};
    const hl_tensor cache = {.type = GGML_TYPE_F16, .ne = {kv_dim, 1, 1, 1}};
    const hl_attn_args a = {.q = &q,
                            .k_cache = &cache,
                            .v_cache = &cache,
                            .out = &out,
                            .n_head = hp->n_head,
                            .n_head_kv = hp->n_head_kv,
                            .head_dim = hp->head_dim,
                            .n_swa = hl_layer_window(hp, il),
                            .scale = hp->attn_scale,
                            .max_bias = hp->max_alibi_bias,
                            .bidirectional = m->arch->bidirectional};
    const hl_op_desc ops[] = {
        {.op = HL_OP_ROPE,
         .t = {&q},
         .n_head = hp->n_head,
         .rope = hl_layer_is_swa(hp, il) ? &hp->rope_swa : &hp->rope},
        {.op = HL_OP_STORE_ROWS, .t = {&k, &cache}},
        {.op = HL_OP_ATTENTION, .t = {&q, &cache, &cache, &out}, .attn = &a},
    };
    for (size_t i = hp->rope.mode == HL_ROPE_NONE; i < sizeof ops / sizeof ops[0]; i++) /* ops[0]: rope */
        if (!hl_supports_op(b, &ops[i])) {
            snprintf(why, size, "no %s kernel for this model's shapes (%d heads of %d, %d KV heads)",
                     hl_op_name(ops[i].op), (int)hp->n_head, (int)hp->head_dim, (int)hp->n_head_kv);
            return false;
        }
    return true;
}

/* Marks host_only[il] for each block asked for (il < n_asked; il ==
 * n_layer: the output layer, when asked) that some device cannot run, and
 * logs which tensor or op and why. */
static void find_host_only(const hearth_model *m, int32_t n_dev, int32_t n_asked, bool output, bool *host_only) {
    for (int32_t il = 0; il <= m->hp.n_layer; il++) {
        if (il < m->hp.n_layer ? il >= n_asked : !output) continue;
        for (int32_t d = 0; d < n_dev && !host_only[il]; d++) {
            char why[160];
            if (runs_block(m, m->gpu[d], il, why, sizeof why)) continue;
            host_only[il] = true;
            if (il < m->hp.n_layer)
                HL_WARN("layer %d stays on the CPU: %s has %s", (int)il, hl_backend_name(m->gpu[d]), why);
            else HL_WARN("the output layer stays on the CPU: %s has %s", hl_backend_name(m->gpu[d]), why);
        }
    }
}

/* ------------------------------------------------------------ upload -- */

/* The weights a device holds, and where the next one goes in its buffer;
 * `done` counts the bytes uploaded to every device, for progress reports. */
typedef struct upload_cursor {
    hl_backend *b;
    uint8_t *base;
    size_t off;
    hl_progress *progress;
    uint64_t *done;
} upload_cursor;

static hearth_status upload(upload_cursor *c, hl_tensor *t) {
    if (!t->data) return HEARTH_OK;
    const size_t bytes = hl_tensor_nbytes(t);
    HL_TRY(hl_upload(c->b, c->base + c->off, t->data, bytes));
    t->data = c->base + c->off;
    t->backend = c->b;
    c->off += aligned(bytes);
    *c->done += aligned(bytes);
    if (!hl_progress_report(c->progress, *c->done, false))
        return hl_fail(HEARTH_ERR_CANCELLED, "model load cancelled by the progress callback");
    return HEARTH_OK;
}

/* Into one buffer per device that got weights, held by m->gpu[d]; reports
 * the bytes to p->progress. */
static hearth_status upload_all(hearth_model *m, const hl_placement *pl, int32_t n_dev, const hearth_model_params *p) {
    upload_cursor cur[HL_MAX_GPUS] = {{0}};
    uint64_t total = 0, done = 0;
    for (int32_t d = 0; d < n_dev; d++) total += pl->dev_bytes[d];
    hl_progress progress;
    hl_progress_init(&progress, total ? p->progress : NULL, p->progress_user, "load", total);
    for (int32_t d = 0; d < n_dev; d++) {
        if (pl->dev_bytes[d] == 0) continue;
        HL_TRY(hl_buffer_alloc(m->gpu[d], pl->dev_bytes[d], &m->gpu_weights[d]));
        cur[d] = (upload_cursor){m->gpu[d], m->gpu_weights[d], 0, &progress, &done};
    }
    for (int32_t il = 0; il < m->hp.n_layer; il++) {
        if (m->layer_dev[il] < 0) continue;
        hl_layer *l = &m->layers[il];
        upload_cursor *c = &cur[m->layer_dev[il]];
#define UPLOAD(name) HL_TRY(upload(c, &l->name));
        HL_LAYER_TENSORS(UPLOAD)
#undef UPLOAD
    }
    if (pl->output_dev >= 0) {
#define UPLOAD_OUTPUT(name) HL_TRY(upload(&cur[pl->output_dev], &m->name));
        HL_OUTPUT_TENSORS(UPLOAD_OUTPUT)
#undef UPLOAD_OUTPUT
    }
    hl_progress_report(&progress, done, true);
    return HEARTH_OK;
}

/* The free memory and name of each selected device (m->gpu_id), and a
 * weight-only instance on each to ask what it runs and, if it gets layers,
 * to hold them. */
static hearth_status open_devices(hearth_model *m, int32_t n_dev, size_t *free_bytes, char (*names)[24]) {
    for (int32_t d = 0; d < n_dev; d++) {
        hl_gpu_device dev;
        HL_TRY(hl_gpu_device_get(m->gpu_id[d], &dev));
        free_bytes[d] = dev.free_bytes;
        memcpy(names[d], dev.id, sizeof dev.id);
        const hl_gpu_limits weights_only = {0};
        HL_TRY(hl_gpu_backend_init(m->gpu_id[d], &weights_only, &m->gpu[d]));
    }
    return HEARTH_OK;
}

hearth_status hl_placement_apply(hearth_model *m, const hearth_model_params *p) {
    const int32_t n_layer = m->hp.n_layer;
    int32_t n_dev = 0; /* no probing for a CPU-only load */
    if (p->n_gpu_layers != 0) HL_TRY(hl_gpu_select(p->devices, m->gpu_id, &n_dev));
    if (p->n_gpu_layers != 0 && n_dev == 0) hl_gpu_note_fallback();
    m->layer_dev = hl_calloc((size_t)n_layer, sizeof *m->layer_dev);
    size_t *bytes = hl_calloc((size_t)n_layer, sizeof *bytes);
    bool *host_only = hl_calloc((size_t)n_layer + 1, sizeof *host_only);
    if (!m->layer_dev || !bytes || !host_only) {
        free(bytes);
        free(host_only);
        return HEARTH_ERR_OUT_OF_MEMORY;
    }
    for (int32_t il = 0; il < n_layer; il++) bytes[il] = layer_bytes(&m->layers[il]);
    size_t free_bytes[HL_MAX_GPUS] = {0};
    char names[HL_MAX_GPUS][24] = {""};
    const char *name_of[HL_MAX_GPUS];
    for (int32_t d = 0; d < HL_MAX_GPUS; d++) name_of[d] = names[d];
    hearth_status st = open_devices(m, n_dev, free_bytes, names);
    const bool output = p->n_gpu_layers < 0 || p->n_gpu_layers > n_layer; /* AUTO: may be every layer */
    if (st == HEARTH_OK) find_host_only(m, n_dev, output ? n_layer : p->n_gpu_layers, output, host_only);
    const bool fit = p->n_gpu_layers == HEARTH_N_GPU_LAYERS_AUTO;
    const uint32_t fit_n_ctx = p->fit_n_ctx ? p->fit_n_ctx : hl_default_n_ctx(&m->hp);
    const int64_t kv_dim = (int64_t)m->hp.n_head_kv * m->hp.head_dim;
    const hl_placement_in in = {
        .n_layer = n_layer,
        .layer_bytes = bytes,
#define OUTPUT_BYTES(name) +aligned(hl_tensor_nbytes(&m->name))
        .output_bytes = 0 HL_OUTPUT_TENSORS(OUTPUT_BYTES),
#undef OUTPUT_BYTES
        .n_gpu_layers = p->n_gpu_layers,
        .split_mode = p->split_mode,
        .main_gpu = p->main_gpu,
        .tensor_split = p->tensor_split,
        .n_devices = n_dev,
        .free_bytes = free_bytes,
        .reserve_bytes = HL_PLACEMENT_RESERVE,
        .host_only = host_only,
        .names = name_of,
        /* K and V, fit_n_ctx rows of n_head_kv x head_dim in the fit types */
        .layer_ctx_bytes = (size_t)fit_n_ctx *
                           (kv_row_bytes(p->fit_type_k, kv_dim) + kv_row_bytes(p->fit_type_v, kv_dim)),
    };
    hl_placement pl;
    if (st == HEARTH_OK) st = hl_placement_plan(&in, m->layer_dev, &pl);
    free(bytes);
    free(host_only);
    if (st != HEARTH_OK) return st; /* hearth_model_free releases what was made */
    for (int32_t d = 0; d < n_dev; d++)
        if (pl.dev_bytes[d] == 0) { /* the device got no layers */
            hl_gpu_backend_free(m->gpu[d]);
            m->gpu[d] = NULL;
        }
    m->output_dev = pl.output_dev;
    m->n_gpu_layers = pl.n_offloaded;
    HL_TRY(upload_all(m, &pl, n_dev, p));
    for (int32_t d = 0; d < n_dev; d++) {
        m->gpu_bytes += pl.dev_bytes[d];
        m->gpu_dev_bytes[d] = pl.dev_bytes[d];
    }
    if (pl.n_capped > 0)
        HL_WARN("%d layers stay on the CPU: between the layers a GPU cannot run, the pipeline would need more than "
                "%d stages",
                (int)pl.n_capped, HL_MAX_STAGES);
    char used[HL_MAX_GPUS * 26] = "";
    for (int32_t d = 0, len = 0; d < n_dev; d++)
        if (pl.dev_bytes[d] > 0)
            len += snprintf(used + len, sizeof used - (size_t)len, "%s%s", len ? ", " : "", names[d]);
    if (fit && n_dev > 0)
        HL_INFO("n_gpu_layers auto: %d of %d layers fit with room for a context of %u tokens (%.1f MiB of KV cache a "
                "layer) and %.0f MiB of buffers",
                (int)m->n_gpu_layers, (int)n_layer + 1, fit_n_ctx, MIB(in.layer_ctx_bytes), MIB(HL_PLACEMENT_RESERVE));
    if (m->n_gpu_layers > 0)
        HL_INFO("placed %d/%d layers on %s (%.1f MiB of weights)%s", (int)m->n_gpu_layers, (int)n_layer + 1, used,
                MIB(m->gpu_bytes), pl.n_pinned ? "; see above for the layers kept on the CPU" : "");
    return HEARTH_OK;
}

void hl_placement_release(hearth_model *m) {
    for (int32_t d = 0; d < HL_MAX_GPUS; d++) {
        if (!m->gpu[d]) continue;
        hl_buffer_free(m->gpu[d], m->gpu_weights[d]);
        hl_gpu_backend_free(m->gpu[d]);
        m->gpu[d] = NULL;
        m->gpu_weights[d] = NULL;
    }
}
