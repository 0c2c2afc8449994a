/* The token loop `hearth run` and `hearth chat` share: after a prompt has
 * been decoded, sample from the last logits, stop at an end-of-generation
 * token, stream each token's text to stdout as it comes, and decode the
 * token so that the next one can be sampled. */
#include <stdio.h>

#include "cli.h"

int cli_emit(const char *buf, size_t len) {
    if (len && (fwrite(buf, 1, len, stdout) != len || fflush(stdout) != 0)) {
        fprintf(stderr, "hearth: cannot write to stdout\n");
        return 1;
    }
    return 0;
}

static int emit(const cli_gen *g, int32_t tok, const char *text, size_t len) {
    if (cli_emit(text, len)) return 1;
    return g->on_text ? g->on_text(g->user, tok, text, len) : 0;
}

/* With context_shift and a full context, drops half of what follows the
 * kept tokens (hearth_context_shift_half, llama-cli's rule); false when
 * there is nothing to drop. */
static bool make_room(const cli_gen *g, int *rc) {
    if (!g->context_shift || hearth_context_n_past(g->ctx) < hearth_context_n_ctx(g->ctx)) return true;
    const hearth_status st = hearth_context_shift_half(g->ctx, 0, g->n_keep, NULL);
    if (st == HEARTH_ERR_CONTEXT_FULL) {
        fprintf(stderr, "\nhearth: the context is full and keeping %u tokens leaves nothing to drop: stopped\n",
                g->n_keep);
        return false;
    }
    if (st != HEARTH_OK) {
        *rc = cli_fail("context shift");
        return false;
    }
    return true;
}

int cli_generate(const cli_gen *g, long limit, long *n_gen) {
    char piece[4096]; /* far above any vocabulary's longest piece; a bigger one is an error */
    size_t len;
    int rc = 0;
    *n_gen = 0;
    while (*n_gen < limit && !(g->stop && *g->stop)) {
        int32_t tok = hearth_sampler_sample(g->smpl, hearth_get_logits(g->ctx));
        if (tok == HEARTH_TOKEN_NONE) {
            fprintf(stderr, "\nhearth: the grammar admits no token of the vocabulary here: stopped\n");
            break;
        }
        if (hearth_token_is_eog(g->model, tok)) break;
        (*n_gen)++;
        if (hearth_detok_push(g->detok, tok, piece, sizeof piece, &len) != HEARTH_OK) return cli_fail("detokenize");
        if (emit(g, tok, piece, len)) return 1;
        if (*n_gen == limit) break;
        if (!make_room(g, &rc)) {
            if (rc) return rc;
            break;
        }
        if (hearth_decode(g->ctx, &tok, 1) != HEARTH_OK) return cli_fail("generate");
    }
    if (hearth_detok_flush(g->detok, piece, sizeof piece, &len) != HEARTH_OK) return cli_fail("detokenize");
    return emit(g, -1, piece, len);
}
