/* A fill-in-the-middle prompt, as llama.cpp's server builds it
 * (format_prompt_infill in tools/server/server-common.cpp), with the
 * repo-level pattern of Qwen2.5-Coder (Hui et al. 2024, arXiv:2409.12186):
 *   [FIM_REP]myproject\n [FIM_SEP]filename0\n extra0 ... [FIM_SEP]filename\n
 *   [FIM_PRE]prefix prompt [FIM_SUF]suffix [FIM_MID]
 * (without FIM_REP / FIM_SEP tokens the extra chunks follow a
 * "--- snippet ---" line each). The prefix keeps its last 3/4 of a batch,
 * the suffix its first batch/4 - 2 - prompt tokens, the extra context what
 * the slot has left after a batch and twice n_predict, from its end; BOS,
 * where the vocabulary adds one, goes between the extra context and
 * [FIM_PRE] (llama.cpp inserts the extra context before it). */
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "text/vocab_impl.h"

typedef struct toks {
    int32_t *ids;
    size_t n, cap;
} toks;

static hearth_status grow(toks *t, size_t more) {
    if (t->n + more <= t->cap) return HEARTH_OK;
    size_t cap = t->cap ? t->cap : 64;
    while (cap < t->n + more) cap *= 2;
    int32_t *ids = realloc(t->ids, cap * sizeof *ids);
    if (!ids) return HEARTH_ERR_OUT_OF_MEMORY;
    t->ids = ids;
    t->cap = cap;
    return HEARTH_OK;
}

static hearth_status push(toks *t, int32_t id) {
    HL_TRY(grow(t, 1));
    t->ids[t->n++] = id;
    return HEARTH_OK;
}

/* Appends the tokens of a + b (b may be NULL); no special tokens added. */
static hearth_status add(const hl_vocab *v, toks *t, const char *a, const char *b, bool parse_special) {
    const size_t la = strlen(a), lb = b ? strlen(b) : 0;
    char *text = malloc(la + lb + 1);
    if (!text) return HEARTH_ERR_OUT_OF_MEMORY;
    memcpy(text, a, la);
    if (lb) memcpy(text + la, b, lb);
    text[la + lb] = '\0';
    size_t n = 0;
    hearth_status st = hl_vocab_tokenize(v, text, la + lb, false, parse_special, NULL, 0, &n);
    if (st == HEARTH_ERR_BUFFER_TOO_SMALL || st == HEARTH_OK) st = grow(t, n);
    if (st == HEARTH_OK) st = hl_vocab_tokenize(v, text, la + lb, false, parse_special, t->ids + t->n, n, &n);
    if (st == HEARTH_OK) t->n += n;
    free(text);
    return st;
}

static hearth_status extra_context(const hl_vocab *v, const hearth_infill *in, toks *t) {
    if (v->fim_rep >= 0) {
        HL_TRY(push(t, v->fim_rep));
        HL_TRY(add(v, t, "myproject\n", NULL, false));
    }
    for (size_t i = 0; i < in->n_extra; i++) {
        if (v->fim_sep >= 0) {
            HL_TRY(push(t, v->fim_sep));
            HL_TRY(add(v, t, in->extra[i].filename ? in->extra[i].filename : "tmp", "\n", false));
        } else {
            HL_TRY(add(v, t, "\n\n--- snippet ---\n\n", NULL, false));
        }
        HL_TRY(add(v, t, in->extra[i].text ? in->extra[i].text : "", NULL, false));
    }
    if (v->fim_sep >= 0) {
        HL_TRY(push(t, v->fim_sep));
        HL_TRY(add(v, t, "filename\n", NULL, false));
    }
    return HEARTH_OK;
}

static size_t min_size(long a, size_t b) { return a < 0 ? 0 : (size_t)a < b ? (size_t)a : b; }

static hearth_status build(const hl_vocab *v, const hearth_infill *in, toks *extra, toks *pre, toks *suf, toks *out) {
    toks prompt = {0};
    HL_TRY(extra_context(v, in, extra));
    hearth_status st = add(v, pre, in->prefix ? in->prefix : "", NULL, false);
    if (st == HEARTH_OK) st = add(v, suf, in->suffix ? in->suffix : "", NULL, false);
    if (st == HEARTH_OK && in->prompt) st = add(v, &prompt, in->prompt, NULL, true);
    const long batch = in->n_batch;
    const size_t n_pre = min_size(3 * (batch / 4), pre->n);
    const size_t n_suf = min_size(batch / 4 - (2 + (long)prompt.n), suf->n);
    const size_t n_extra = min_size((long)in->n_ctx - batch - 2L * in->n_predict, extra->n);
    /* out: the extra context's end, BOS, FIM_PRE, the prefix's end, the prompt, FIM_SUF, the suffix's start, FIM_MID */
    if (st == HEARTH_OK) st = grow(out, 4 + n_extra + n_pre + prompt.n + n_suf);
    if (st == HEARTH_OK) {
        if (n_extra) memcpy(out->ids, extra->ids + extra->n - n_extra, n_extra * sizeof *out->ids);
        out->n += n_extra;
        if (v->add_bos) out->ids[out->n++] = v->bos;
        out->ids[out->n++] = v->fim_pre;
        memcpy(out->ids + out->n, pre->ids + pre->n - n_pre, n_pre * sizeof *out->ids);
        out->n += n_pre;
        if (prompt.n) memcpy(out->ids + out->n, prompt.ids, prompt.n * sizeof *out->ids);
        out->n += prompt.n;
        out->ids[out->n++] = v->fim_suf;
        if (n_suf) memcpy(out->ids + out->n, suf->ids, n_suf * sizeof *out->ids);
        out->n += n_suf;
        out->ids[out->n++] = v->fim_mid;
    }
    free(prompt.ids);
    return st;
}

hearth_status hl_vocab_tokenize_infill(const hl_vocab *v, const hearth_infill *in, int32_t *tokens, size_t n_max,
                                       size_t *n_tokens) {
    if (!v || !in || !n_tokens || (!tokens && n_max) || (in->n_extra && !in->extra))
        return hl_fail(HEARTH_ERR_INVALID_ARG, "tokenize infill: NULL argument");
    if (v->fim_pre < 0 || v->fim_suf < 0 || v->fim_mid < 0)
        return hl_fail(HEARTH_ERR_UNSUPPORTED, "this model has no fill-in-the-middle tokens (FIM prefix, suffix and "
                                               "middle): infill needs a code model such as Qwen2.5-Coder");
    if (in->n_batch < 8 || in->n_ctx < in->n_batch)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "tokenize infill: n_batch %d must be 8 or more and at most n_ctx %d",
                       (int)in->n_batch, (int)in->n_ctx);
    toks extra = {0}, pre = {0}, suf = {0}, out = {0};
    hearth_status st = build(v, in, &extra, &pre, &suf, &out);
    if (st == HEARTH_OK) {
        *n_tokens = out.n;
        if (out.n <= n_max) {
            if (out.n) memcpy(tokens, out.ids, out.n * sizeof *tokens);
        } else {
            if (n_max) memcpy(tokens, out.ids, n_max * sizeof *tokens);
            st = hl_fail(HEARTH_ERR_BUFFER_TOO_SMALL,
                         "tokenize infill: the prompt needs %zu tokens, the buffer holds %zu", out.n, n_max);
        }
    }
    free(extra.ids);
    free(pre.ids);
    free(suf.ids);
    free(out.ids);
    return st;
}
