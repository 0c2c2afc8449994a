/* What an architecture is and what it is built from: the hl_arch table (its
 * name, norm, the weights it declares and its block), the declarations of
 * weights (hl_weight_decl) and the runs of them several architectures share,
 * the shared blocks (hl_llama_layer, hl_gpt2_layer) and the LayerNorm
 * families' hyperparameters, and the binding of declared weights by tensor
 * name (bind.c). */
#ifndef HEARTH_MODEL_ARCH_H
#define HEARTH_MODEL_ARCH_H

#include <stddef.h>

#include "backend/backend.h"
#include "model/forward.h"
#include "model/layer.h"

/* A size a declared weight's shape is given in, resolved from the
 * hyperparameters at binding (bind.c). */
typedef enum hl_dim {
    HL_DIM_NONE,        /* past the tensor's last dimension */
    HL_DIM_EMBD,        /* n_embd */
    HL_DIM_Q,           /* n_head * head_dim: a row of queries */
    HL_DIM_KV,          /* n_head_kv * head_dim: a row of keys or values */
    HL_DIM_HEAD,        /* head_dim */
    HL_DIM_FF,          /* n_ff */
    HL_DIM_VOCAB,       /* n_vocab */
    HL_DIM_CTX_TRAIN,   /* n_ctx_train: a learned position per row */
    HL_DIM_ROT_HALF,    /* rope.n_rot / 2: one frequency factor per rotated pair */
    HL_DIM_EXPERT,      /* n_expert: stacked experts */
    HL_DIM_TOKEN_TYPES, /* n_token_types */
    HL_DIM_CLS_OUT,     /* n_cls_out: a classification head's outputs */
    HL_DIM_PARTS,       /* the sum of a fused tensor's parts (hl_weight_decl.part) */
} hl_dim;

/* How a declaration binds (hl_weight_decl.flags). */
enum {
    HL_W_OPTIONAL = 1,     /* absent from the file: the weight stays absent (data NULL) */
    HL_W_UNLESS_BOUND = 2, /* skipped where an earlier declaration bound its weight (the separate attn_q
                              after a fused attn_qkv, the token embeddings as the output matrix when the
                              file has none of its own); required otherwise unless HL_W_OPTIONAL */
    HL_W_WITH_PREV = 4,    /* required where the previous declaration bound its weight, skipped where not
                              (a LayerNorm's bias with its optional weight) */
    HL_W_SHARED = 8,       /* a block weight stored once for every block, named without "blk.N." */
    HL_W_DENSE = 16,       /* only in a model without experts (hp.n_expert == 0) */
    HL_W_MOE = 32,         /* only in a mixture of experts (hp.n_expert > 0) */
};

/* One weight an architecture declares: a tensor of the file under
 * llama.cpp's name (llama-arch.cpp), its shape, whether it is required, the
 * op it feeds, and the field it is bound to. A fused tensor of the file
 * (part[0] set; its split dimension, the last, declared HL_DIM_PARTS) is
 * bound as views of consecutive row ranges (elements, for a vector) of
 * sizes part[i] to field[i], each an ordinary weight to the backends. */
typedef struct hl_weight_decl {
    const char *name; /* "attn_q.weight"; a block's is bound as "blk.N.<name>" */
    hl_dim ne[3];     /* ggml order, ne0 first; HL_DIM_NONE past the last (a vector is {d}) */
    hl_op feeds;      /* what placement asks each device about it (supports_op): MATMUL, MATMUL_ID,
                           RMS_NORM, LAYER_NORM (weight and bias), ADD (a bias), ROPE (frequency factors),
                           GET_ROWS (embeddings, on the host) */
    unsigned flags;   /* HL_W_* */
    size_t field[3];  /* offsetof the hl_tensor it binds: in hl_layer for a block's weight, in
                           hearth_model for the input's and the output layer's */
    hl_dim part[3];   /* a fused tensor's parts, HL_DIM_NONE past the last; all NONE: not fused */
} hl_weight_decl;

/* Declarations of a block weight (HL_W) and of a model weight (HL_M) of
 * shape {ne0, ne1}: HL_W("attn_q.weight", wq, EMBD, Q, MATMUL, 0). A
 * vector's ne1 is NONE. */
#define HL_W(name_, field_, ne0, ne1, op, flags_)                                                                      \
    {                                                                                                                  \
        .name = (name_), .ne = {HL_DIM_##ne0, HL_DIM_##ne1}, .feeds = HL_OP_##op, .flags = (flags_), .field = {        \
            offsetof(hl_layer, field_)                                                                                 \
        }                                                                                                              \
    }
#define HL_M(name_, field_, ne0, ne1, op, flags_)                                                                      \
    {                                                                                                                  \
        .name = (name_), .ne = {HL_DIM_##ne0, HL_DIM_##ne1}, .feeds = HL_OP_##op, .flags = (flags_), .field = {        \
            offsetof(struct hearth_model, field_)                                                                      \
        }                                                                                                              \
    }

/* Runs of declarations several architectures share. */

/* q, k and v as separate weights with their optional biases (llama.cpp's
 * create_tensor_qkv), each skipped where a fused attn_qkv bound it */
#define HL_DECL_QKV                                                                                                    \
    HL_W("attn_q.weight", wq, EMBD, Q, MATMUL, HL_W_UNLESS_BOUND),                                                     \
        HL_W("attn_k.weight", wk, EMBD, KV, MATMUL, HL_W_UNLESS_BOUND),                                                \
        HL_W("attn_v.weight", wv, EMBD, KV, MATMUL, HL_W_UNLESS_BOUND),                                                \
        HL_W("attn_q.bias", bq, Q, NONE, ADD, HL_W_OPTIONAL | HL_W_UNLESS_BOUND),                                      \
        HL_W("attn_k.bias", bk, KV, NONE, ADD, HL_W_OPTIONAL | HL_W_UNLESS_BOUND),                                     \
        HL_W("attn_v.bias", bv, KV, NONE, ADD, HL_W_OPTIONAL | HL_W_UNLESS_BOUND)

/* the fused attn_qkv {n_embd, q_dim + 2 kv_dim} and its bias where the file
 * has them, as views wq, wk, wv (bq, bk, bv); then HL_DECL_QKV for a file
 * with separate ones */
#define HL_DECL_QKV_FUSED                                                                                              \
    {.name = "attn_qkv.weight",                                                                                        \
     .ne = {HL_DIM_EMBD, HL_DIM_PARTS},                                                                                \
     .feeds = HL_OP_MATMUL,                                                                                            \
     .flags = HL_W_OPTIONAL,                                                                                           \
     .field = {offsetof(hl_layer, wq), offsetof(hl_layer, wk), offsetof(hl_layer, wv)},                                \
     .part = {HL_DIM_Q, HL_DIM_KV, HL_DIM_KV}},                                                                        \
        {.name = "attn_qkv.bias",                                                                                      \
         .ne = {HL_DIM_PARTS},                                                                                         \
         .feeds = HL_OP_ADD,                                                                                           \
         .flags = HL_W_OPTIONAL,                                                                                       \
         .field = {offsetof(hl_layer, bq), offsetof(hl_layer, bk), offsetof(hl_layer, bv)},                            \
         .part = {HL_DIM_Q, HL_DIM_KV, HL_DIM_KV}},                                                                    \
        HL_DECL_QKV

/* the SwiGLU (GeGLU) feed-forward of a dense block */
#define HL_DECL_GLU_FFN                                                                                                \
    HL_W("ffn_gate.weight", ffn_gate, EMBD, FF, MATMUL, HL_W_DENSE),                                                   \
        HL_W("ffn_up.weight", ffn_up, EMBD, FF, MATMUL, HL_W_DENSE),                                                   \
        HL_W("ffn_down.weight", ffn_down, FF, EMBD, MATMUL, HL_W_DENSE)

/* the GELU feed-forward of the LayerNorm families, its biases as `bias`
 * says (0: required, HL_W_OPTIONAL) */
#define HL_DECL_GELU_FFN(bias)                                                                                         \
    HL_W("ffn_up.weight", ffn_up, EMBD, FF, MATMUL, 0), HL_W("ffn_up.bias", ffn_up_b, FF, NONE, ADD, bias),            \
        HL_W("ffn_down.weight", ffn_down, FF, EMBD, MATMUL, 0),                                                        \
        HL_W("ffn_down.bias", ffn_down_b, EMBD, NONE, ADD, bias)

/* the input of a decoder: token embeddings */
#define HL_DECL_TOKEN_EMBD HL_M("token_embd.weight", tok_embd, EMBD, VOCAB, GET_ROWS, 0)

/* the output layer: its norm (RMSNorm, or LayerNorm where the norm's bias
 * is declared after it), then the output matrix, or the token embeddings
 * where the file has none (tied) */
#define HL_DECL_OUTPUT(norm_op)                                                                                        \
    HL_M("output_norm.weight", output_norm, EMBD, NONE, norm_op, 0),                                                   \
        HL_M("output.weight", output, EMBD, VOCAB, MATMUL, HL_W_OPTIONAL),                                             \
        HL_M("token_embd.weight", output, EMBD, VOCAB, MATMUL, HL_W_UNLESS_BOUND)

/* the output layer of the LayerNorm families: HL_DECL_OUTPUT and the final
 * norm's bias, required (0) or HL_W_OPTIONAL as `bias` says */
#define HL_DECL_LN_OUTPUT(bias)                                                                                        \
    HL_DECL_OUTPUT(LAYER_NORM), HL_M("output_norm.bias", output_norm_b, EMBD, NONE, LAYER_NORM, bias)

/* gpt2's block, as the LayerNorm families lay it out: LayerNorm, attn_qkv
 * (or q, k, v), the output projection, LayerNorm, the GELU feed-forward;
 * every bias required (0) or HL_W_OPTIONAL as `bias` says */
#define HL_DECL_LN_BLOCK(bias)                                                                                         \
    HL_W("attn_norm.weight", attn_norm, EMBD, NONE, LAYER_NORM, 0),                                                    \
        HL_W("attn_norm.bias", attn_norm_b, EMBD, NONE, LAYER_NORM, bias), HL_DECL_QKV_FUSED,                          \
        HL_W("attn_output.weight", wo, Q, EMBD, MATMUL, 0), HL_W("attn_output.bias", bo, EMBD, NONE, ADD, bias),       \
        HL_W("ffn_norm.weight", ffn_norm, EMBD, NONE, LAYER_NORM, 0),                                                  \
        HL_W("ffn_norm.bias", ffn_norm_b, EMBD, NONE, LAYER_NORM, bias), HL_DECL_GELU_FFN(bias)

/* An encoder's optional classification head (a reranker's: llama.cpp's
 * cls, cls_b, cls_out, cls_out_b of bert-like models), read on the host by
 * pooling RANK (runtime/embeddings.c): declared GET_ROWS so that placement
 * asks no device about them and they stay in host memory (they are not
 * HL_OUTPUT_TENSORS, which move with the output layer). */
#define HL_DECL_CLS_HEAD                                                                                               \
    HL_M("cls.weight", cls, EMBD, EMBD, GET_ROWS, HL_W_OPTIONAL),                                                      \
        HL_M("cls.bias", cls_b, EMBD, NONE, GET_ROWS, HL_W_OPTIONAL),                                                  \
        HL_M("cls.output.weight", cls_out, EMBD, CLS_OUT, GET_ROWS, HL_W_OPTIONAL),                                    \
        HL_M("cls.output.bias", cls_out_b, CLS_OUT, NONE, GET_ROWS, HL_W_OPTIONAL)

/* A list of declarations, ended by HL_DECL_END. */
#define HL_DECL_END                                                                                                    \
    { .name = NULL }

typedef struct hl_arch {
    const char *name;   /* general.architecture */
    hl_op norm;         /* the output layer's norm and the epsilon's key: HL_OP_RMS_NORM
                         (attention.layer_norm_rms_epsilon) or HL_OP_LAYER_NORM (attention.layer_norm_epsilon) */
    bool bidirectional; /* an encoder's: every token attends to its whole sequence (hl_layer_attn);
                           false: a decoder's causal attention */
    /* The weights, bound in order (so a later declaration can fall back on
     * an earlier one): the input's (host), each block's, the output
     * layer's. Every tensor of the file must be one of them. */
    const hl_weight_decl *input, *block, *output;
    /* Reads the hyperparameters into m->hp (hl_hparams_read, then the
     * architecture's own keys). Errors: FORMAT, UNSUPPORTED. */
    hearth_status (*hparams)(hearth_model *m);
    /* Runs block `il` on the residual stream w->x {n_embd, n} of the pass's
     * tokens (their positions set on b with set_positions), in place,
     * writing their keys and values into the layer's KV cache. Every tensor
     * it touches lives on backend b; every op goes through the checked
     * calls of backend/ops.h, whose refusal (INVALID_ARG, UNSUPPORTED) it
     * returns at once. */
    hearth_status (*layer)(const hearth_model *m, hl_backend *b, hl_work *w, int32_t il);
} hl_arch;

/* The architectures hearth knows, in lookup order (archs.c); NULL past the last. */
const hl_arch *hl_arch_at(size_t i);

/* The block of the LayerNorm families (gpt2.c), shared by starcoder2,
 * gptneox, falcon, mpt, bloom and gptj: LayerNorm with the bias the layer
 * has, attention with the q/k/v biases the layer has and rope where the
 * model has one (hp.rope.mode), output projection with its bias where the
 * layer has one, LayerNorm (ffn_norm), GELU feed-forward with the biases it
 * has; the residual as hp.residual lays it out. */
hearth_status hl_gpt2_layer(const hearth_model *m, hl_backend *b, hl_work *w, int32_t il);

/* The hyperparameters of the LayerNorm families: hl_hparams_read with
 * `rope_mode`, and n_head * head size = n_embd, as their {n_embd, n_embd}
 * attn_output needs. Errors: as hl_hparams_read; FORMAT. */
hearth_status hl_layer_norm_hparams(hearth_model *m, hl_rope_mode rope_mode);

/* The post-norm encoder block of bert (bert.c), shared by nomic-bert:
 * q, k, v from the residual stream with the biases the layer has, rope
 * where the model has one (hp.rope.mode), bidirectional attention, the
 * output projection with its bias where the layer has one, x = LN(x +
 * attn); then a SwiGLU feed-forward where the layer has ffn_gate (nomic-bert)
 * or a GELU one with the biases it has (bert), x = LN(x + ffn). */
hearth_status hl_bert_layer(const hearth_model *m, hl_backend *b, hl_work *w, int32_t il);

/* The hyperparameters of the bert family: hl_layer_norm_hparams with
 * `rope_mode`, tokenizer.ggml.token_type_count (2 when absent) and the
 * classification head's outputs n_cls_out: <arch>.classifier.output_labels'
 * length where the file names them, else cls.output.weight's rows, else 1
 * for a head of cls.weight alone (llama.cpp's default), else 0. Errors:
 * as hl_layer_norm_hparams; FORMAT. */
hearth_status hl_bert_hparams(hearth_model *m, hl_rope_mode rope_mode);

/* The pre-norm block of llama (llama.c), shared by qwen2, qwen3 and phi3:
 * RMSNorm, attention with the optional q/k/v biases, per-head QK-norm and
 * rope frequency factors the layer has (hl_layer_freq_factors), the scale on
 * the queries where hp->scale_q says so, RMSNorm, SwiGLU feed-forward or a
 * mixture of experts where the layer has a router. */
hearth_status hl_llama_layer(const hearth_model *m, hl_backend *b, hl_work *w, int32_t il);

/* Binds the architecture's declared weights (m->arch's input, block and
 * output lists) for every block, checking each shape and that the host
 * computes each type. Errors: FORMAT (missing tensor, wrong shape),
 * UNSUPPORTED (type), OUT_OF_MEMORY. */
hearth_status hl_model_bind(hearth_model *m);

#endif
