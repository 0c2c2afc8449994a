/* The quantization mixes and llama.cpp's rules for which tensor gets which
 * type. Source: llama.cpp src/llama-quant.cpp (the copy vendored by
 * llama-cpp-python 0.3.36), functions tensor_allows_quantization,
 * tensor_get_category, llama_tensor_get_type_impl, tensor_type_fallback,
 * llama_tensor_get_type and llama_ftype_get_default_type. Only the branches
 * that can fire for the mixes below are here (the IQ, TQ, MXFP4 mixes and the
 * imatrix-only rules are not), with imatrix, --pure and the type overrides
 * off, as in a plain `llama-quantize IN OUT TYPE`.
 *
 * The per-mix part is the table `mixes`; the rules shared by all mixes
 * (output and tied embeddings, MoE, 70B, fallbacks) are in tensor_type(). */
#include "quant/quant_mix.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/status.h"
#include "gguf/ggml_types.h"

#define BASE GGML_TYPE_COUNT          /* the mix's base type */
#define NO_TYPE (GGML_TYPE_COUNT + 1) /* this tier of a rule does not exist */

/* A per-layer choice, in the shape llama-quant.cpp writes them. For layer i
 * of n (the tensor's rank among its kind, see tensor_type()):
 *   i < first_n, or i < n / first_div  -> first
 *   use_more_bits(i, n)                -> more
 *   otherwise                          -> rest
 * (first_n / first_div 0, more NO_TYPE: that tier is absent.) */
typedef struct layer_rule {
    uint8_t first_n, first_div;
    uint16_t first, more, rest;
} layer_rule;

#define KEEP                                                                                                           \
    { 0, 0, NO_TYPE, NO_TYPE, BASE }
#define ALWAYS(t)                                                                                                      \
    { 0, 0, NO_TYPE, NO_TYPE, t }
#define MORE_BITS(t)                                                                                                   \
    { 0, 0, NO_TYPE, t, BASE }
#define FIRST_N(n, t, rest)                                                                                            \
    { n, 0, t, NO_TYPE, rest }
#define FIRST_DIV(d, t, more, rest)                                                                                    \
    { 0, d, t, more, rest }

struct hl_mix {
    const char *name;
    uint32_t ftype;       /* llama.h enum llama_ftype */
    uint32_t base;        /* llama_ftype_get_default_type */
    layer_rule attn_v;    /* attn_v / attn_qkv / attn_kv_b (category_is_attn_v) */
    uint16_t attn_v_gqa4; /* attn_v type when n_gqa >= 4, before attn_v (Q2_K) */
    layer_rule ffn_down;
    layer_rule ffn_down_falcon;
    uint16_t attn_output;      /* not Falcon; BASE = unchanged */
    uint16_t attn_output_moe8; /* not Falcon, n_expert == 8 */
};

/* Q = GGML_TYPE_Q..., to keep the rows on a line each. */
#define Q(t) GGML_TYPE_##t

static const hl_mix mixes[] = {
    /* Legacy mixes: only the output / tied-embedding rule applies
     * (ffn_down's Q4_0 -> Q4_1 bump needs an imatrix). */
    {"Q4_0", 2, Q(Q4_0), KEEP, NO_TYPE, KEEP, KEEP, BASE, BASE},
    {"Q4_1", 3, Q(Q4_1), KEEP, NO_TYPE, KEEP, KEEP, BASE, BASE},
    {"Q5_0", 8, Q(Q5_0), KEEP, NO_TYPE, KEEP, KEEP, BASE, BASE},
    {"Q5_1", 9, Q(Q5_1), KEEP, NO_TYPE, KEEP, KEEP, BASE, BASE},
    {"Q8_0", 7, Q(Q8_0), KEEP, NO_TYPE, KEEP, KEEP, BASE, BASE},
    /* Q2_K: attn_v "n_gqa() >= 4 ? Q4_K : Q3_K"; ffn_down Q3_K (any arch);
     * attn_output Q3_K. */
    {"Q2_K", 10, Q(Q2_K), ALWAYS(Q(Q3_K)), Q(Q4_K), ALWAYS(Q(Q3_K)), ALWAYS(Q(Q3_K)), Q(Q3_K), Q(Q5_K)},
    /* Q3_K_M: attn_v "i_attention_wv < 2 ? Q5_K : Q4_K"; ffn_down
     * "i_layer < n_layer/16 ? Q5_K : arch != FALCON || use_more_bits ? Q4_K : Q3_K";
     * attn_output Q4_K. */
    {"Q3_K_M", 12, Q(Q3_K), FIRST_N(2, Q(Q5_K), Q(Q4_K)), NO_TYPE, FIRST_DIV(16, Q(Q5_K), NO_TYPE, Q(Q4_K)),
     FIRST_DIV(16, Q(Q5_K), Q(Q4_K), Q(Q3_K)), Q(Q4_K), Q(Q5_K)},
    /* Q4_K_S: attn_v "i_attention_wv < 4 -> Q5_K"; ffn_down "arch != FALCON &&
     * i_layer < n_layer/8 -> Q5_K". */
    {"Q4_K_S", 14, Q(Q4_K), FIRST_N(4, Q(Q5_K), BASE), NO_TYPE, FIRST_DIV(8, Q(Q5_K), NO_TYPE, BASE), KEEP, BASE,
     Q(Q5_K)},
    /* Q4_K_M: attn_v and ffn_down "use_more_bits -> Q6_K"; Falcon's ffn_down
     * "i_layer < n_layer/16 ? Q6_K : use_more_bits ? Q5_K : Q4_K". */
    {"Q4_K_M", 15, Q(Q4_K), MORE_BITS(Q(Q6_K)), NO_TYPE, MORE_BITS(Q(Q6_K)), FIRST_DIV(16, Q(Q6_K), Q(Q5_K), Q(Q4_K)),
     BASE, Q(Q5_K)},
    {"Q5_K_S", 16, Q(Q5_K), KEEP, NO_TYPE, KEEP, KEEP, BASE, BASE},
    /* Q5_K_M: attn_v and ffn_down "use_more_bits -> Q6_K" (any arch). */
    {"Q5_K_M", 17, Q(Q5_K), MORE_BITS(Q(Q6_K)), NO_TYPE, MORE_BITS(Q(Q6_K)), MORE_BITS(Q(Q6_K)), BASE, BASE},
    {"Q6_K", 18, Q(Q6_K), KEEP, NO_TYPE, KEEP, KEEP, BASE, BASE},
    /* Float mixes: ggml_is_quantized() is false, so llama_tensor_get_type
     * applies no rule at all: every quantizable tensor gets the base type. */
    {"F16", 1, Q(F16), KEEP, NO_TYPE, KEEP, KEEP, BASE, BASE},
    {"BF16", 32, Q(BF16), KEEP, NO_TYPE, KEEP, KEEP, BASE, BASE},
};

#define N_MIXES (sizeof mixes / sizeof mixes[0])

size_t hl_mix_count(void) { return N_MIXES; }
const hl_mix *hl_mix_at(size_t i) { return i < N_MIXES ? &mixes[i] : NULL; }
const char *hl_mix_name(const hl_mix *mix) { return mix->name; }
uint32_t hl_mix_ftype(const hl_mix *mix) { return mix->ftype; }
uint32_t hl_mix_base(const hl_mix *mix) { return mix->base; }

const hl_mix *hl_mix_find(const char *name) {
    for (size_t i = 0; name && i < N_MIXES; i++)
        if (strcasecmp(mixes[i].name, name) == 0) return &mixes[i];
    return NULL;
}

const hl_mix *hl_mix_by_ftype(uint32_t ftype) {
    for (size_t i = 0; i < N_MIXES; i++)
        if (mixes[i].ftype == ftype) return &mixes[i];
    return NULL;
}

/* ----------------------------------------------------------- naming -- */

/* tensor_category in llama-quant.cpp (first match wins, in this order). */
typedef enum category {
    CAT_OUTPUT,
    CAT_TOKEN_EMBD,
    CAT_ATTN_V /* attn_qkv, attn_kv_b, attn_v */,
    CAT_ATTN_K,
    CAT_ATTN_Q,
    CAT_ATTN_OUTPUT,
    CAT_FFN_UP,
    CAT_FFN_GATE,
    CAT_FFN_DOWN,
    CAT_OTHER,
} category;

static category category_of(const char *name) {
    if (!strcmp(name, "output.weight")) return CAT_OUTPUT;
    if (!strcmp(name, "token_embd.weight") || !strcmp(name, "per_layer_token_embd.weight")) return CAT_TOKEN_EMBD;
    if (strstr(name, "attn_qkv.weight") || strstr(name, "attn_kv_b.weight") || strstr(name, "attn_v.weight"))
        return CAT_ATTN_V;
    if (strstr(name, "attn_k.weight")) return CAT_ATTN_K;
    if (strstr(name, "attn_q.weight")) return CAT_ATTN_Q;
    if (strstr(name, "attn_output.weight")) return CAT_ATTN_OUTPUT;
    if (strstr(name, "ffn_up")) return CAT_FFN_UP;
    if (strstr(name, "ffn_gate")) return CAT_FFN_GATE;
    if (strstr(name, "ffn_down")) return CAT_FFN_DOWN;
    return CAT_OTHER;
}

/* Parts of names that tensor_allows_quantization() keeps unquantized (the
 * architecture-independent list; GLM5-next's own list is not here). */
static const char *const keep_substrings[] = {
    "_norm.weight",
    "ffn_gate_inp.weight",
    "ffn_gate_tid2eid.weight",
    "altup",
    "laurel",
    "per_layer_model_proj",
    "ssm_conv1d",
    "shortconv.conv.weight",
    "indexer.k_proj.weight",
    "indexer.q_proj.weight",
    "time_mix_first.weight",
    "time_mix_w0.weight",
    "time_mix_w1.weight",
    "time_mix_w2.weight",
    "time_mix_v0.weight",
    "time_mix_v1.weight",
    "time_mix_v2.weight",
    "time_mix_a0.weight",
    "time_mix_a1.weight",
    "time_mix_a2.weight",
    "time_mix_g1.weight",
    "time_mix_g2.weight",
    "time_mix_decay_w1.weight",
    "time_mix_decay_w2.weight",
    "time_mix_lerp_fused.weight",
    "attn_rel_b.weight",
    ".position_embd",
    "sam.pos_embd",
    "sam.neck.",
    "sam.net_",
    ".rel_pos",
    ".patch_embd",
    ".patch_merger",
    "a.rvq.codebook",
    "mm.a.code_embd",
};

/* tensor_allows_quantization: 2-D and up, name ends in "weight", not a norm,
 * positional embedding (LLM_TENSOR_POS_EMBD) or token types (BERT). */
static bool allows_quantization(const hl_mix_tensor *t) {
    if (t->n_dims < 2) return false;
    size_t len = strlen(t->name);
    if (len < 6 || strcmp(t->name + len - 6, "weight") != 0) return false;
    if (!strcmp(t->name, "position_embd.weight") || !strcmp(t->name, "token_types.weight")) return false;
    for (size_t i = 0; i < sizeof keep_substrings / sizeof keep_substrings[0]; i++)
        if (strstr(t->name, keep_substrings[i])) return false;
    return true;
}

/* "blk.N." -> N, else -1 (weight_name_comparer, layer_info). */
static int layer_of(const char *name) {
    int il = -1;
    if (sscanf(name, "blk.%d.", &il) != 1) il = -1;
    return il;
}

/* ------------------------------------------------------------ rules -- */

/* llama_tensor_get_type_impl's use_more_bits: the first and last eighth of
 * the layers, and every third layer in between. */
static bool use_more_bits(int i, int n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

static uint32_t apply_rule(const layer_rule *r, int i, int n, uint32_t cur) {
    uint32_t t;
    if ((r->first_n && i < r->first_n) || (r->first_div && i < n / r->first_div)) t = r->first;
    else if (r->more != NO_TYPE && use_more_bits(i, n)) t = r->more;
    else t = r->rest;
    return t == BASE ? cur : t;
}

static uint32_t blck(uint32_t type) { return hl_ggml_type_get(type)->blck_size; }

static bool is_quantized(uint32_t type) { return blck(type) > 1; }

/* tensor_type_fallback: when ne0 is not a multiple of the type's block size,
 * the 256-element K types fall back to a 32-element type of about as many
 * bits; a 32-element type (or a fallback that still does not fit) to F16. */
static uint32_t fallback_type(uint32_t type, int64_t ne0, bool *fell_back) {
    if (ne0 % blck(type) == 0) return type;
    *fell_back = true;
    uint32_t r;
    switch (type) {
    case GGML_TYPE_Q2_K:
    case GGML_TYPE_Q3_K: r = GGML_TYPE_Q4_0; break;
    case GGML_TYPE_Q4_K: r = GGML_TYPE_Q5_0; break;
    case GGML_TYPE_Q5_K: r = GGML_TYPE_Q5_1; break;
    case GGML_TYPE_Q6_K: r = GGML_TYPE_Q8_0; break;
    default: r = type; break; /* block size 32 already */
    }
    return ne0 % blck(r) == 0 ? r : GGML_TYPE_F16;
}

/* Per-plan state: llama-quant.cpp's quantize_state_impl counters. */
typedef struct plan_state {
    const hl_mix *mix;
    const hl_mix_model *m;
    bool tied; /* has_tied_embeddings: no output.weight */
    int n_attn_v, i_attn_v, i_ffn_down;
} plan_state;

/* llama_tensor_get_type_impl for a quantized mix. */
static uint32_t rules_type(plan_state *s, const hl_mix_tensor *t, category cat) {
    const hl_mix *mix = s->mix;
    const hl_mix_model *m = s->m;
    uint32_t type = mix->base;
    if (cat == CAT_OUTPUT || (s->tied && cat == CAT_TOKEN_EMBD)) {
        /* the output matrix (or the embeddings that double as it) */
        if (m->falcon || t->ne0 % blck(type) != 0) type = GGML_TYPE_Q8_0;
        else if (type != GGML_TYPE_Q8_0) type = GGML_TYPE_Q6_K;
    } else if (cat == CAT_TOKEN_EMBD) {
        /* token_embd rules exist only for IQ / TQ mixes */
    } else if (cat == CAT_ATTN_V) {
        if (mix->attn_v_gqa4 != NO_TYPE && m->n_gqa >= 4) type = mix->attn_v_gqa4;
        else type = apply_rule(&mix->attn_v, s->i_attn_v, s->n_attn_v, type);
        /* "8 heads sharing the same attn_v weights" in the 70B model */
        if (m->is_70b && (type == GGML_TYPE_Q3_K || type == GGML_TYPE_Q4_K)) type = GGML_TYPE_Q5_K;
        if (m->n_expert == 8) type = GGML_TYPE_Q8_0;
        s->i_attn_v++;
    } else if (cat == CAT_ATTN_K) {
        if (m->n_expert == 8) type = GGML_TYPE_Q8_0;
    } else if (cat == CAT_FFN_DOWN) {
        /* layer_info: the tensor's layer from its name when there are experts
         * (they are not consecutive), else the running count */
        int il = s->i_ffn_down;
        if (m->n_expert > 1 && layer_of(t->name) >= 0) il = layer_of(t->name);
        type = apply_rule(m->falcon ? &mix->ffn_down_falcon : &mix->ffn_down, il, m->n_layer, type);
        s->i_ffn_down++;
    } else if (cat == CAT_ATTN_OUTPUT && !m->falcon) {
        uint32_t r = m->n_expert == 8 ? mix->attn_output_moe8 : mix->attn_output;
        if (r != BASE) type = r;
    }
    return type;
}

/* llama_tensor_get_type. */
static void tensor_type(plan_state *s, hl_mix_tensor *t) {
    t->fallback = false;
    if (!allows_quantization(t)) {
        t->new_type = t->type;
        return;
    }
    if (!is_quantized(s->mix->base)) {
        t->new_type = s->mix->base;
        return;
    }
    uint32_t type = rules_type(s, t, category_of(t->name));
    t->new_type = fallback_type(type, t->ne0, &t->fallback);
}

typedef struct order_key {
    int layer;
    const char *name;
    size_t i;
} order_key;

/* weight_name_comparer (llama-model-loader.h): by layer, then by name. */
static int cmp_order(const void *a, const void *b) {
    const order_key *x = a, *y = b;
    if (x->layer != y->layer) return x->layer < y->layer ? -1 : 1;
    return strcmp(x->name, y->name);
}

hearth_status hl_mix_plan(const hl_mix *mix, const hl_mix_model *model, hl_mix_tensor *t, size_t n) {
    plan_state s = {.mix = mix, .m = model, .tied = true};
    /* init_quantize_state_counters: over every tensor, by name */
    for (size_t i = 0; i < n; i++) {
        category c = category_of(t[i].name);
        if (c == CAT_ATTN_V) s.n_attn_v++;
        if (c == CAT_OUTPUT) s.tied = false;
    }
    order_key *order = hl_calloc(n, sizeof *order);
    if (!order) return HEARTH_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < n; i++) order[i] = (order_key){layer_of(t[i].name), t[i].name, i};
    qsort(order, n, sizeof *order, cmp_order);
    for (size_t k = 0; k < n; k++) tensor_type(&s, &t[order[k].i]);
    free(order);
    return HEARTH_OK;
}
