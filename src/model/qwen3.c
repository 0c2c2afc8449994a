/* The qwen3 architecture (Qwen3, Yang et al. 2025, arXiv:2505.09388), as
 * llama.cpp builds it (src/models/qwen3.cpp): llama's block with a per-head
 * RMSNorm of queries and keys before rope (QK-norm), rope in NEOX mode, and a
 * head size of its own (attention.key_length, e.g. 128 with n_embd 1024 and
 * 16 heads). */
#include "model/model.h"

static hearth_status qwen3_load(hearth_model *m) {
    hl_hparams *hp = &m->hp;
    HL_TRY(hl_hparams_read(m->gguf, "qwen3", HL_ROPE_NEOX, hp));
    HL_TRY(hl_hparams_full_rope("qwen3", hp));
    return hl_model_bind(m, HL_BIND_QK_NORM);
}

const hl_arch hl_arch_qwen3 = {
    .name = "qwen3",
    .load = qwen3_load,
    .layer = hl_llama_layer,
};
