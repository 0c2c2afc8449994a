/* hearth_embed and hearth_rerank: pooled embeddings of texts, or a
 * reranker's scores of query-document pairs, through one embeddings context
 * made for the call. The texts (pairs) are tokenized with special tokens and run
 * several at once, each a sequence of its own in one batch; a batch holds
 * at most EMBED_SEQS texts and as many as EMBED_TOKENS tokens of the
 * longest text allow, so the context's KV cache (n_seq_max sequences of the
 * longest text) stays within max(EMBED_TOKENS, longest) cells; n_ubatch =
 * n_batch, so a batch (an encoder's sequences) runs in one pass. */
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "hearth.h"

#define EMBED_TOKENS 2048
#define EMBED_SEQS 64

typedef struct embed_plan {
    size_t n;
    int32_t **tokens; /* [n] */
    size_t *n_tokens; /* [n] */
    size_t longest;
} embed_plan;

static void plan_free(embed_plan *p) {
    for (size_t i = 0; p->tokens && i < p->n; i++) free(p->tokens[i]);
    free(p->tokens);
    free(p->n_tokens);
}

/* The texts [first, end) of the batch starting at `first` (one text at least); *n_tok their tokens. */
static size_t batch_end(const embed_plan *p, size_t first, size_t *n_tok) {
    size_t per = p->longest >= EMBED_TOKENS ? 1 : EMBED_TOKENS / p->longest, end = first, tok = 0;
    if (per > EMBED_SEQS) per = EMBED_SEQS;
    while (end < p->n && end - first < per) tok += p->n_tokens[end++];
    *n_tok = tok;
    return end;
}

/* Tokens of item i of a call (a text, or a reranker's pair) into tokens[0, n_max). */
typedef hearth_status (*tokenize_fn)(const hearth_model *m, const void *arg, size_t i, int32_t *tokens, size_t n_max,
                                     size_t *n_tokens);

typedef struct texts_arg {
    const char *const *texts;
    const size_t *lens;
} texts_arg;

static size_t text_len(const char *const *texts, const size_t *lens, size_t i) {
    return lens ? lens[i] : strlen(texts[i]);
}

static hearth_status tokenize_text(const hearth_model *m, const void *arg, size_t i, int32_t *tokens, size_t n_max,
                                   size_t *n_tokens) {
    const texts_arg *a = arg;
    return hearth_tokenize(m, a->texts[i], text_len(a->texts, a->lens, i), true, true, tokens, n_max, n_tokens);
}

typedef struct pairs_arg {
    const char *query;
    size_t query_len;
    texts_arg docs;
} pairs_arg;

static hearth_status tokenize_pair(const hearth_model *m, const void *arg, size_t i, int32_t *tokens, size_t n_max,
                                   size_t *n_tokens) {
    const pairs_arg *a = arg;
    return hearth_tokenize_rerank(m, a->query, a->query_len, a->docs.texts[i], text_len(a->docs.texts, a->docs.lens, i),
                                  tokens, n_max, n_tokens);
}

/* `what` names an item in messages ("text", "document"). */
static hearth_status tokenize_all(const hearth_model *m, tokenize_fn fn, const void *arg, const char *what,
                                  embed_plan *p) {
    const int32_t n_ctx_train = hearth_model_n_ctx_train(m);
    p->tokens = calloc(p->n, sizeof *p->tokens);
    p->n_tokens = calloc(p->n, sizeof *p->n_tokens);
    if (!p->tokens || !p->n_tokens) return HEARTH_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < p->n; i++) {
        size_t n_max = 64; /* most sentences; a longer item is tokenized again with its count */
        hearth_status st = HEARTH_ERR_BUFFER_TOO_SMALL;
        for (int tries = 0; st == HEARTH_ERR_BUFFER_TOO_SMALL && tries < 2; tries++) {
            free(p->tokens[i]);
            if (!(p->tokens[i] = malloc(n_max * sizeof **p->tokens))) return HEARTH_ERR_OUT_OF_MEMORY;
            st = fn(m, arg, i, p->tokens[i], n_max, &p->n_tokens[i]);
            n_max = p->n_tokens[i];
        }
        if (st != HEARTH_OK) return st;
        if (p->n_tokens[i] == 0)
            return hl_fail(HEARTH_ERR_INVALID_ARG, "%s %zu is empty: it gives no token to embed", what, i);
        if (n_ctx_train > 0 && p->n_tokens[i] > (size_t)n_ctx_train)
            return hl_fail(HEARTH_ERR_CONTEXT_FULL,
                           "%s %zu is %zu tokens, longer than the model's context of %d tokens: shorten or split it",
                           what, i, p->n_tokens[i], (int)n_ctx_train);
        if (p->n_tokens[i] > p->longest) p->longest = p->n_tokens[i];
    }
    return HEARTH_OK;
}

/* Runs the plan; item i's first n_out pooled floats go to out + i * n_out. */
static hearth_status run_batches(hearth_model *m, const embed_plan *p, const hearth_context_params *params,
                                 int32_t pooling, int32_t n_out, float *out) {
    size_t max_seqs = 0, max_tok = 0;
    for (size_t first = 0, end, tok; first < p->n; first = end) {
        end = batch_end(p, first, &tok);
        if (end - first > max_seqs) max_seqs = end - first;
        if (tok > max_tok) max_tok = tok;
    }
    hearth_context_params cp = params ? *params : hearth_context_default_params();
    cp.embeddings = true;
    cp.pooling_type = pooling;
    cp.n_seq_max = (uint32_t)max_seqs;
    cp.n_ctx = (uint32_t)(p->longest * max_seqs);
    cp.n_batch = cp.n_ubatch = (uint32_t)max_tok;
    hearth_context *ctx = NULL;
    HL_TRY(hearth_context_init(m, &cp, &ctx));
    int32_t *token = malloc(max_tok * sizeof *token), *seq = malloc(max_tok * sizeof *seq);
    hearth_status st = token && seq ? HEARTH_OK : HEARTH_ERR_OUT_OF_MEMORY;
    for (size_t first = 0, end, tok; st == HEARTH_OK && first < p->n; first = end) {
        end = batch_end(p, first, &tok);
        size_t k = 0;
        for (size_t i = first; i < end; i++)
            for (size_t t = 0; t < p->n_tokens[i]; t++, k++) {
                token[k] = p->tokens[i][t];
                seq[k] = (int32_t)(i - first);
            }
        hearth_kv_seq_rm(ctx, -1, 0, -1); /* each batch's texts start their sequences afresh */
        st = hearth_decode_batch(ctx, &(hearth_batch){.n_tokens = (int32_t)k, .token = token, .seq_id = seq});
        for (size_t i = first; st == HEARTH_OK && i < end; i++)
            memcpy(out + i * (size_t)n_out, hearth_get_embeddings_seq(ctx, (int32_t)(i - first)),
                   (size_t)n_out * sizeof *out);
    }
    free(token);
    free(seq);
    hearth_context_free(ctx);
    return st;
}

hearth_status hearth_embed(hearth_model *model, const char *const *texts, const size_t *lens, size_t n_texts,
                           const hearth_context_params *params, float *out) {
    hl_clear_error();
    if (!model || (n_texts > 0 && (!texts || !out)))
        return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_embed: NULL model, texts or out");
    const int32_t asked = params ? params->pooling_type : HEARTH_POOLING_UNSPECIFIED;
    const int32_t pooling = asked != HEARTH_POOLING_UNSPECIFIED ? asked : hearth_model_pooling_type(model);
    if (pooling == HEARTH_POOLING_NONE)
        return hl_fail(HEARTH_ERR_INVALID_ARG, asked == HEARTH_POOLING_NONE
                                                   ? "pooling none gives no vector per text: use mean, cls or last"
                                                   : "the model has no pooling of its own (pooling_type none; a "
                                                     "generation model?): give pooling last or mean");
    if (pooling == HEARTH_POOLING_RANK)
        return hl_fail(HEARTH_ERR_INVALID_ARG,
                       "pooling rank gives a reranker's scores of query-document pairs, not a vector per text: "
                       "score them with hearth_rerank, or give pooling mean, cls or last for embeddings");
    if (n_texts == 0) return HEARTH_OK;
    const texts_arg arg = {texts, lens};
    embed_plan p = {.n = n_texts};
    hearth_status st = tokenize_all(model, tokenize_text, &arg, "text", &p);
    if (st == HEARTH_OK) st = run_batches(model, &p, params, pooling, hearth_model_n_embd(model), out);
    plan_free(&p);
    return st;
}

hearth_status hearth_rerank(hearth_model *model, const char *query, size_t query_len, const char *const *documents,
                            const size_t *doc_lens, size_t n_docs, const hearth_context_params *params, float *scores) {
    hl_clear_error();
    if (!model || (!query && query_len) || (n_docs > 0 && (!documents || !scores)))
        return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_rerank: NULL model, query, documents or scores");
    if (hearth_model_n_cls_out(model) <= 0)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "the model has no classification head (cls.output): it is not a "
                                               "reranker; rerank with a cross-encoder such as bge-reranker");
    if (n_docs == 0) return HEARTH_OK;
    const pairs_arg arg = {query, query_len, {documents, doc_lens}};
    embed_plan p = {.n = n_docs};
    hearth_status st = tokenize_all(model, tokenize_pair, &arg, "document", &p);
    if (st == HEARTH_OK) st = run_batches(model, &p, params, HEARTH_POOLING_RANK, 1, scores);
    plan_free(&p);
    return st;
}
