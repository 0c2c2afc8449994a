/* Layer placement: which device holds each block of the model, decided once
 * at load from n_gpu_layers, split_mode, main_gpu, tensor_split and the free
 * memory of each device (hl_placement_plan, pure and unit-tested with made-up
 * devices), then carried out by uploading each layer's weights to its device
 * (hl_placement_apply). As in llama.cpp, the token embeddings stay on the
 * host, n_gpu_layers counts the output layer (final norm + output matrix)
 * as layer n_layer + 1, and a layer split gives each device a contiguous
 * share of the offloaded layers in tensor_split proportions. A block a
 * device cannot run (its backend's supports_op refuses one of its weights,
 * or its attention or rope) stays on the host, and the load log says which
 * tensor and why. */
#ifndef HEARTH_MODEL_PLACEMENT_H
#define HEARTH_MODEL_PLACEMENT_H

#include "backend/gpu.h"
#include "model/model.h"

/* Device memory a load leaves free beside the weights for the contexts
 * (cuBLAS, scratch, KV cache); contexts check their exact needs. */
#define HL_PLACEMENT_RESERVE ((size_t)256 << 20)

typedef struct hl_placement_in {
    int32_t n_layer;
    const size_t *layer_bytes; /* [n_layer] weight bytes of each block */
    size_t output_bytes;       /* final norm + output matrix */
    int32_t n_gpu_layers;      /* 0 none; N the first N blocks (N > n_layer: all + output); -1 all + output;
                                   HEARTH_N_GPU_LAYERS_AUTO the most that fit (layer_ctx_bytes) */
    hearth_split_mode split_mode;
    int32_t main_gpu;          /* the device of SPLIT_NONE */
    const float *tensor_split; /* [n_devices] proportions, or NULL: proportional to free memory */
    int32_t n_devices;
    const size_t *free_bytes; /* [n_devices] free memory of each device now */
    size_t reserve_bytes;     /* left free on each device used, for contexts (KV cache, buffers) */
    size_t layer_ctx_bytes;   /* AUTO: what each offloaded block adds to a context (its KV cache) */
    const char *const *names; /* [n_devices] "cuda0", "opencl1" for messages, or NULL: "device <d>" */
    const bool *host_only;    /* [n_layer + 1] blocks (and at n_layer the output layer) that must stay
                                   on the host because a device cannot run them, or NULL: none */
} hl_placement_in;

typedef struct hl_placement {
    int32_t n_offloaded;             /* blocks on GPUs, plus 1 when the output layer is */
    int32_t output_dev;              /* device of the output layer, -1 = host */
    size_t dev_bytes[HL_MAX_GPUS];   /* weights placed on each device */
    int32_t dev_blocks[HL_MAX_GPUS]; /* blocks placed on each device */
    int32_t n_pinned;                /* layers asked for that stay on the host (host_only) */
    int32_t n_capped;                /* layers asked for and runnable that stay on the host because
                                         the pinned ones split the rest into too many stages */
} hl_placement;

/* Fills layer_dev[n_layer] (device of each block, -1 = host) and *out. With
 * no devices every layer stays on the host. The blocks asked for but
 * host_only stay on the host and the others share the devices as if they
 * were absent; each run of consecutive blocks on one device is a pipeline
 * stage, and where they would make more than HL_MAX_STAGES the remaining
 * blocks stay on the host (n_capped). With n_gpu_layers AUTO: the largest
 * count (n_layer + 1 = every block and the output layer, down to 0) whose
 * plan leaves, on every device used, reserve_bytes, layer_ctx_bytes per
 * block there and 1/20 of its free memory free. Errors: INVALID_ARG
 * (main_gpu out of range, negative or all-zero tensor_split), UNSUPPORTED
 * (row split), OUT_OF_MEMORY (a device's share plus the reserve exceeds its
 * free memory; the message gives both and says to lower n_gpu_layers or
 * n_ctx; never with AUTO). */
hearth_status hl_placement_plan(const hl_placement_in *in, int8_t *layer_dev, hl_placement *out);

/* Plans the model's placement from `p` and the usable GPUs, after asking
 * each GPU's backend (supports_op) whether it runs each block asked for;
 * then uploads the weights of every offloaded layer (and the output layer)
 * into one buffer per device and rebinds those tensors to it. Logs the
 * fallback when GPU layers are asked for and no GPU is usable, and each
 * block kept on the host with the tensor or op the device lacks. On error
 * what was allocated is freed by hl_placement_release. Errors: those of
 * hl_placement_plan, DEVICE, OUT_OF_MEMORY. */
hearth_status hl_placement_apply(hearth_model *m, const hearth_model_params *p);

/* Frees the model's device buffers and weight-holding backends. */
void hl_placement_release(hearth_model *m);

#endif
