/* The qwen2 architecture (Qwen2 / Qwen2.5, Yang et al. 2024, arXiv:2407.10671;
 * also DeepSeek-R1's Qwen distillations), as llama.cpp builds it
 * (src/models/qwen2.cpp): llama's block with biases on the q, k and v
 * projections and rope in NEOX mode (halves of the head rotate together). */
#include "model/model.h"

static hearth_status qwen2_load(hearth_model *m) {
    hl_hparams *hp = &m->hp;
    HL_TRY(hl_hparams_read(m->gguf, "qwen2", HL_ROPE_NEOX, hp));
    HL_TRY(hl_hparams_full_rope("qwen2", hp));
    /* the biases are optional, as in llama.cpp; hl_model_bind binds them */
    return hl_model_bind(m, 0);
}

const hl_arch hl_arch_qwen2 = {
    .name = "qwen2",
    .load = qwen2_load,
    .layer = hl_llama_layer,
};
