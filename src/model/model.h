/* A loaded model (struct hearth_model): the GGUF file, hyperparameters
 * (hparams.h), weights bound as tensors (layer.h), the vocabulary, the
 * architecture that runs them (arch.h) and their placement on devices
 * (placement.h). Architectures (one file each, listed in archs.c: llama.c,
 * qwen2.c, qwen3.c, gemma3.c, phi3.c, gpt2.c, starcoder2.c, gptneox.c,
 * mpt.c, bloom.c, falcon.c, gptj.c, bert.c, nomic_bert.c) read their
 * hyperparameters with the shared readers of hparams.c, declare their
 * weights (bound by bind.c) and name the block that runs them over backend
 * ops; forward.h runs the blocks. Includes the model layer's other
 * headers, so its users need only this one. */
#ifndef HEARTH_MODEL_H
#define HEARTH_MODEL_H

#include <stdatomic.h>

#include "backend/backend.h"
#include "backend/gpu.h"
#include "gguf/gguf.h"
#include "grammar/grammar.h"
#include "model/arch.h"
#include "model/forward.h"
#include "model/hparams.h"
#include "model/layer.h"
#include "text/vocab.h"

struct hearth_model {
    gguf_file *gguf;
    void *file_copy; /* the file read into memory when use_mmap is false */
    hl_vocab *vocab;
    const hl_arch *arch;
    hl_hparams hp;
    hl_tensor tok_embd;             /* {n_embd, n_vocab} */
    hl_tensor output_norm;          /* F32 {n_embd} */
    hl_tensor output_norm_b;        /* F32 {n_embd}: the final LayerNorm's bias (arch->norm LayerNorm), or absent */
    hl_tensor pos_embd;             /* {n_embd, n_ctx_train}: learned position embeddings (gpt2), or absent */
    hl_tensor tok_norm, tok_norm_b; /* F32 {n_embd}: LayerNorm of the token embeddings (bloom, bert), or absent */
    hl_tensor tok_types; /* {n_embd, n_token_types}: token-type embeddings (bert; every token is type 0), or absent */
    hl_tensor output;    /* {n_embd, n_vocab}; tok_embd when tied */
    hl_tensor output_b;  /* F32 {n_vocab}: the output matrix's bias (gptj's lm_head), or absent */
    /* a reranker's classification head (HL_DECL_CLS_HEAD), each absent or
     * in host memory: cls {n_embd, n_embd} and cls_b F32 {n_embd}, then
     * cls_out {n_embd, n_cls_out} and cls_out_b F32 {n_cls_out} */
    hl_tensor cls, cls_b, cls_out, cls_out_b;
    hl_layer *layers; /* [n_layer] */
    /* a CPU instance that holds no scratch: load asks it (supports_op)
     * whether the host computes each weight */
    hl_backend *host;
    /* placement (model/placement.c): weights of offloaded layers live in
     * gpu_weights[d], held by the weight-only backend gpu[d] */
    int8_t *layer_dev;    /* [n_layer] GPU of each block, -1 = host */
    int32_t output_dev;   /* GPU of output_norm and output, -1 = host */
    int32_t n_gpu_layers; /* blocks on GPUs, +1 when the output layer is */
    size_t gpu_bytes;     /* weights on GPUs */
    hl_backend *gpu[HL_MAX_GPUS];
    int32_t gpu_id[HL_MAX_GPUS]; /* device (gpu.h's number) of each gpu[d]: the selection, in order */
    void *gpu_weights[HL_MAX_GPUS];
    uint64_t n_params, n_bytes;
    char desc[128];
    size_t gpu_dev_bytes[HL_MAX_GPUS]; /* weights on each gpu[d] (placement's figures) */
    /* the vocabulary's token trie for grammars, built by the first sampler
     * that needs it (runtime/sampler_grammar.c) and published atomically */
    _Atomic(hl_token_trie *) trie;
};

#endif
