/* Layer placement (see placement.h): the plan, a pure function of sizes and
 * parameters, and its application to a loaded model. */
#include "model/placement.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/log.h"

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

hearth_status hl_placement_plan(const hl_placement_in *in, int8_t *layer_dev, hl_placement *out) {
    *out = (hl_placement){.output_dev = -1};
    for (int32_t il = 0; il < in->n_layer; il++) layer_dev[il] = -1;
    if (in->n_devices == 0 || in->n_gpu_layers == 0) return HEARTH_OK;
    if (in->n_devices > HL_MAX_GPUS) return hl_fail(HEARTH_ERR_INVALID_ARG, "at most %d GPUs are supported", HL_MAX_GPUS);
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
        if (!(share >= 0.0)) return hl_fail(HEARTH_ERR_INVALID_ARG, "tensor_split[%d] = %g must be >= 0", (int)d, share);
        total += share;
        cum[d] = total;
    }
    if (!(total > 0.0)) return hl_fail(HEARTH_ERR_INVALID_ARG, "tensor_split gives no device a share of the layers");
    for (int32_t d = 0; d < in->n_devices; d++) cum[d] /= total;

    const bool output = in->n_gpu_layers < 0 || in->n_gpu_layers > in->n_layer;
    const int32_t n_off = output ? in->n_layer : in->n_gpu_layers;
    for (int32_t il = 0; il < n_off; il++) {
        layer_dev[il] = (int8_t)split_device(cum, in->n_devices, il, n_off);
        out->dev_bytes[layer_dev[il]] += in->layer_bytes[il];
    }
    out->n_offloaded = n_off;
    if (output) {
        /* with the last offloaded block, so the hidden state does not cross again */
        out->output_dev = n_off > 0 ? layer_dev[n_off - 1] : in->main_gpu;
        out->dev_bytes[out->output_dev] += in->output_bytes;
        out->n_offloaded++;
    }
    for (int32_t d = 0; d < in->n_devices; d++) {
        if (out->dev_bytes[d] == 0) continue;
        const size_t need = out->dev_bytes[d] + in->reserve_bytes;
        if (need > in->free_bytes[d])
            return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "%d offloaded layers need %.0f MiB on cuda%d (%.0f MiB of weights + "
                           "%.0f MiB for the context), %.0f MiB free: lower n_gpu_layers or n_ctx", (int)out->n_offloaded,
                           MIB(need), (int)d, MIB(out->dev_bytes[d]), MIB(in->reserve_bytes), MIB(in->free_bytes[d]));
    }
    return HEARTH_OK;
}

/* ------------------------------------------------------------ apply -- */

static size_t aligned(size_t n) { return (n + UPLOAD_ALIGN - 1) & ~(size_t)(UPLOAD_ALIGN - 1); }

/* Bytes of a block's weights (absent optional tensors have no data). */
static size_t layer_bytes(const hl_layer *l) {
    size_t n = 0;
#define ADD_BYTES(name) if (l->name.data) n += aligned(hl_tensor_nbytes(&l->name));
    HL_LAYER_TENSORS(ADD_BYTES)
#undef ADD_BYTES
    return n;
}

/* The weights a device holds, and where the next one goes in its buffer. */
typedef struct upload_cursor {
    hl_backend *b;
    uint8_t *base;
    size_t off;
} upload_cursor;

static hearth_status upload(upload_cursor *c, hl_tensor *t, const char *what, int32_t il) {
    if (!t->data) return HEARTH_OK;
    if (t->ne[1] > 1 && !hl_gpu_supports_type(t->type))
        return hl_fail(HEARTH_ERR_UNSUPPORTED, "layer %d: %s has type %u, which the GPU backend cannot compute; use "
                       "n_gpu_layers 0", (int)il, what, t->type);
    const size_t bytes = hl_tensor_nbytes(t);
    HL_TRY(c->b->iface->upload(c->b, c->base + c->off, t->data, bytes));
    t->data = c->base + c->off;
    t->backend = c->b;
    c->off += aligned(bytes);
    return HEARTH_OK;
}

static hearth_status upload_all(hearth_model *m, const hl_placement *pl, const size_t *dev_bytes, int32_t n_dev) {
    upload_cursor cur[HL_MAX_GPUS] = {{0}};
    for (int32_t d = 0; d < n_dev; d++) {
        if (dev_bytes[d] == 0) continue;
        const hl_gpu_limits weights_only = {0};
        HL_TRY(hl_gpu_backend_init(d, &weights_only, &m->gpu[d]));
        HL_TRY(m->gpu[d]->iface->alloc(m->gpu[d], dev_bytes[d], &m->gpu_weights[d]));
        cur[d] = (upload_cursor){m->gpu[d], m->gpu_weights[d], 0};
    }
    for (int32_t il = 0; il < m->hp.n_layer; il++) {
        if (m->layer_dev[il] < 0) continue;
        hl_layer *l = &m->layers[il];
        upload_cursor *c = &cur[m->layer_dev[il]];
#define UPLOAD(name) HL_TRY(upload(c, &l->name, #name, il));
        HL_LAYER_TENSORS(UPLOAD)
#undef UPLOAD
    }
    if (pl->output_dev >= 0) {
        HL_TRY(upload(&cur[pl->output_dev], &m->output_norm, "output_norm", m->hp.n_layer));
        HL_TRY(upload(&cur[pl->output_dev], &m->output, "output", m->hp.n_layer));
    }
    return HEARTH_OK;
}

hearth_status hl_placement_apply(hearth_model *m, const hearth_model_params *p) {
    const int32_t n_layer = m->hp.n_layer;
    m->layer_dev = hl_calloc((size_t)n_layer, sizeof *m->layer_dev);
    size_t *bytes = hl_calloc((size_t)n_layer, sizeof *bytes);
    if (!m->layer_dev || !bytes) {
        free(bytes);
        return HEARTH_ERR_OUT_OF_MEMORY;
    }
    for (int32_t il = 0; il < n_layer; il++) bytes[il] = layer_bytes(&m->layers[il]);
    const int32_t n_dev = p->n_gpu_layers != 0 ? hl_gpu_count() : 0; /* no probing for a CPU-only load */
    if (p->n_gpu_layers != 0 && n_dev == 0) hl_gpu_note_fallback();
    size_t free_bytes[HL_MAX_GPUS] = {0};
    for (int32_t d = 0; d < n_dev; d++) {
        hl_gpu_device dev;
        hearth_status st = hl_gpu_device_get(d, &dev);
        if (st != HEARTH_OK) {
            free(bytes);
            return st;
        }
        free_bytes[d] = dev.free_bytes;
    }
    const hl_placement_in in = {
        .n_layer = n_layer, .layer_bytes = bytes,
        .output_bytes = aligned(hl_tensor_nbytes(&m->output_norm)) + aligned(hl_tensor_nbytes(&m->output)),
        .n_gpu_layers = p->n_gpu_layers, .split_mode = p->split_mode, .main_gpu = p->main_gpu,
        .tensor_split = p->tensor_split, .n_devices = n_dev, .free_bytes = free_bytes,
        .reserve_bytes = HL_PLACEMENT_RESERVE,
    };
    hl_placement pl;
    hearth_status st = hl_placement_plan(&in, m->layer_dev, &pl);
    free(bytes);
    if (st != HEARTH_OK) return st;
    m->output_dev = pl.output_dev;
    m->n_gpu_layers = pl.n_offloaded;
    st = upload_all(m, &pl, pl.dev_bytes, n_dev);
    if (st != HEARTH_OK) return st; /* hearth_model_free releases what was made */
    for (int32_t d = 0; d < n_dev; d++) m->gpu_bytes += pl.dev_bytes[d];
    if (m->n_gpu_layers > 0)
        HL_INFO("placed %d/%d layers on the GPU (%.1f MiB of weights)", (int)m->n_gpu_layers, (int)n_layer + 1,
                MIB(m->gpu_bytes));
    return HEARTH_OK;
}

void hl_placement_release(hearth_model *m) {
    for (int32_t d = 0; d < HL_MAX_GPUS; d++) {
        if (!m->gpu[d]) continue;
        m->gpu[d]->iface->free(m->gpu[d], m->gpu_weights[d]);
        hl_gpu_backend_free(m->gpu[d]);
        m->gpu[d] = NULL;
        m->gpu_weights[d] = NULL;
    }
}
