/* The architectures hearth runs, in lookup order: adding one is its file
 * and one line here. */
#include "model/model.h"

extern const hl_arch hl_arch_llama, hl_arch_qwen2, hl_arch_qwen3, hl_arch_gemma3, hl_arch_phi3, hl_arch_gpt2,
    hl_arch_starcoder2, hl_arch_gptneox, hl_arch_mpt, hl_arch_bloom, hl_arch_falcon, hl_arch_gptj, hl_arch_bert,
    hl_arch_nomic_bert;

static const hl_arch *const archs[] = {
    &hl_arch_llama,  &hl_arch_qwen2,      &hl_arch_qwen3,   &hl_arch_gemma3,     &hl_arch_phi3,
    &hl_arch_gpt2,   &hl_arch_starcoder2, &hl_arch_gptneox, &hl_arch_mpt,        &hl_arch_bloom,
    &hl_arch_falcon, &hl_arch_gptj,       &hl_arch_bert,    &hl_arch_nomic_bert,
};

const hl_arch *hl_arch_at(size_t i) { return i < sizeof archs / sizeof archs[0] ? archs[i] : NULL; }
