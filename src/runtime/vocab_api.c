/* The public vocabulary calls of hearth.h over the model's tokenizer
 * (text/vocab.h). A hearth_detok is an hl_detok behind an opaque name. */
#include "model/model.h"

int32_t hearth_token_bos(const hearth_model *m) { return hl_vocab_bos(m->vocab); }
int32_t hearth_token_eos(const hearth_model *m) { return hl_vocab_eos(m->vocab); }
int32_t hearth_token_eot(const hearth_model *m) { return hl_vocab_eot(m->vocab); }
bool hearth_token_is_eog(const hearth_model *m, int32_t token) { return hl_vocab_is_eog(m->vocab, token); }

hearth_status hearth_tokenize(const hearth_model *m, const char *text, size_t len, bool add_special, bool parse_special,
                              int32_t *tokens, size_t n_max, size_t *n_tokens) {
    if (!m || (!text && len) || !n_tokens || (!tokens && n_max))
        return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_tokenize: NULL argument");
    return hl_vocab_tokenize(m->vocab, text ? text : "", len, add_special, parse_special, tokens, n_max, n_tokens);
}

hearth_status hearth_token_to_piece(const hearth_model *m, int32_t token, bool special, char *buf, size_t size,
                                    size_t *len) {
    if (!m || !len || (!buf && size)) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_token_to_piece: NULL argument");
    return hl_vocab_token_to_piece(m->vocab, token, special, buf, size, len);
}

hearth_status hearth_detok_init(const hearth_model *m, bool special, hearth_detok **out) {
    if (!m || !out) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_detok_init: NULL argument");
    return hl_detok_init(m->vocab, special, (hl_detok **)out);
}

void hearth_detok_free(hearth_detok *d) { hl_detok_free((hl_detok *)d); }

hearth_status hearth_detok_push(hearth_detok *d, int32_t token, char *buf, size_t size, size_t *len) {
    if (!d || !len || (!buf && size)) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_detok_push: NULL argument");
    return hl_detok_push((hl_detok *)d, token, buf, size, len);
}

hearth_status hearth_detok_flush(hearth_detok *d, char *buf, size_t size, size_t *len) {
    if (!d || !len || (!buf && size)) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_detok_flush: NULL argument");
    return hl_detok_flush((hl_detok *)d, buf, size, len);
}

hearth_status hearth_tokenize_rerank(const hearth_model *m, const char *query, size_t query_len, const char *document,
                                     size_t document_len, int32_t *tokens, size_t n_max, size_t *n_tokens) {
    if (!m || (!query && query_len) || (!document && document_len) || !n_tokens || (!tokens && n_max))
        return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_tokenize_rerank: NULL argument");
    return hl_vocab_tokenize_pair(m->vocab, query, query_len, document, document_len, tokens, n_max, n_tokens);
}

hearth_status hearth_tokenize_infill(const hearth_model *m, const hearth_infill *in, int32_t *tokens, size_t n_max,
                                     size_t *n_tokens) {
    if (!m) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_tokenize_infill: NULL model");
    return hl_vocab_tokenize_infill(m->vocab, in, tokens, n_max, n_tokens);
}
