/* The encoders (bert, nomic-bert) and pooling RANK on the tiny random-weight
 * models of tests/reference/encoder/ (make_models.py) against llama.cpp's
 * values in encoder_reference.json (make_references.py: llama-cpp-python
 * 0.3.36, each sequence decoded alone, flash attention off), token ids from
 * the fixture:
 *   - every token's hidden state (pooling none, hearth_get_embeddings_ith)
 *     and the pooled vector of every sequence under mean, cls and last
 *     (embd_normalize off), within max_diff_for the model's type;
 *   - the rerankers' scores of query-document pairs under pooling rank
 *     (n_cls_out of them: 1 and 2), the pair's tokens as llama.cpp's server
 *     formats them, raw with embd_normalize on too;
 *   - all sequences (pairs) in one batch, a sequence each, equal to each
 *     alone (within 1e-5: kernels take other sums for other batch sizes);
 *   - hearth_model_n_cls_out and hearth_model_pooling_type against the
 *     files; pooling rank refused (INVALID_ARG) for a model without a
 *     classification head, and by hearth_embed.
 * max_diff_for says what the bounds allow for. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hearth.h"
#include "json_file.h"

#define MAX_SEQS 8
#define MAX_TOKENS 128
#define MAX_EMBD 64

/* max |hearth - llama.cpp| allowed per element of a hidden state or pooled
 * vector, by the model's weight type. llama.cpp's encoders attend over F32
 * K and V (no KV cache), hearth's over its F16 cache: on the F32 nomic-bert
 * llama.cpp agrees with a float64 numpy pass within 2e-6 and hearth within
 * 1e-3, and a BF16 cache (8 times coarser) puts hearth 10 times further
 * off, so the cache is what the F32 bound allows for; bert's GELU adds
 * llama.cpp's F16 table (1.5e-3 from the exact tanh form). Q8_0: both
 * quantize the activations to Q8_0 for every product, and a rounding that
 * flips there moves a hidden state by a step of its block's scale:
 * llama.cpp is up to 7e-2 from an exact float64 pass over the same
 * dequantized weights, hearth up to 6e-2 from llama.cpp. The rerankers' scores
 * keep half the bound. */
static double max_diff_for(const char *type) {
    if (!strcmp(type, "F32")) return 2e-3;
    if (!strcmp(type, "F16")) return 3e-3;
    return 8e-2;
}

typedef struct seq {
    int32_t tokens[MAX_TOKENS];
    int32_t n;
} seq;

static int read_seqs(const cJSON *list, seq *out) {
    int n = 0;
    for (const cJSON *s = list ? list->child : NULL; s && n < MAX_SEQS; s = s->next, n++) {
        out[n].n = 0;
        for (const cJSON *t = cJSON_GetObjectItem(s, "tokens")->child; t && out[n].n < MAX_TOKENS; t = t->next)
            out[n].tokens[out[n].n++] = t->valueint;
    }
    return n;
}

static double diff(const float *a, const cJSON *b, int32_t n) {
    double worst = 0.0;
    int32_t i = 0;
    for (const cJSON *e = b->child; i < n && e; i++, e = e->next)
        worst = fmax(worst, fabs((double)a[i] - e->valuedouble));
    return i == n ? worst : INFINITY;
}

static hearth_context *context(hearth_model *m, uint32_t n_seq, int32_t pooling, bool normalize) {
    hearth_context_params p = hearth_context_default_params();
    p.embeddings = true;
    p.pooling_type = pooling;
    p.embd_normalize = normalize;
    p.n_seq_max = n_seq;
    p.n_ctx = MAX_TOKENS * n_seq;
    p.n_batch = MAX_TOKENS * n_seq;
    p.n_threads = 2;
    hearth_context *c = NULL;
    const hearth_status st = hearth_context_init(m, &p, &c);
    CHECK_MSG(st == HEARTH_OK, "%s", hearth_last_error());
    return c;
}

/* Decodes s alone in sequence 0 (cleared first); false on an error. */
static bool decode_one(hearth_context *c, const seq *s) {
    hearth_kv_seq_rm(c, 0, 0, -1);
    const hearth_status st = hearth_decode(c, s->tokens, (uint32_t)s->n);
    CHECK_MSG(st == HEARTH_OK, "%s", hearth_last_error());
    return st == HEARTH_OK;
}

/* Every sequence in one batch, sequence i in seq i, against each alone:
 * n_out floats of hearth_get_embeddings_seq. */
static void check_batched(hearth_model *m, const char *name, const seq *seqs, int n, int32_t pooling, int32_t n_out) {
    hearth_context *one = context(m, 1, pooling, false), *many = context(m, (uint32_t)n, pooling, false);
    static int32_t tokens[MAX_SEQS * MAX_TOKENS], ids[MAX_SEQS * MAX_TOKENS];
    int32_t n_tok = 0;
    for (int i = 0; i < n; i++)
        for (int32_t t = 0; t < seqs[i].n; t++, n_tok++) tokens[n_tok] = seqs[i].tokens[t], ids[n_tok] = i;
    const hearth_batch b = {.n_tokens = n_tok, .token = tokens, .seq_id = ids};
    hearth_status st = one && many ? hearth_decode_batch(many, &b) : HEARTH_ERR_INVALID_ARG;
    CHECK_MSG(st == HEARTH_OK, "%s: %s", name, hearth_last_error());
    double worst = 0.0;
    for (int i = 0; i < n && st == HEARTH_OK; i++) {
        float batched[MAX_EMBD];
        const float *v = hearth_get_embeddings_seq(many, i);
        CHECK(v != NULL);
        if (!v) continue;
        memcpy(batched, v, (size_t)n_out * sizeof *batched);
        const float *alone = decode_one(one, &seqs[i]) ? hearth_get_embeddings_seq(one, 0) : NULL;
        CHECK(alone != NULL);
        for (int32_t k = 0; alone && k < n_out; k++) worst = fmax(worst, fabs((double)batched[k] - alone[k]));
    }
    CHECK_MSG(worst <= 1e-5, "%s pooling %d: %d sequences in one batch differ from each alone by %.3g", name,
              (int)pooling, n, worst);
    hearth_context_free(one);
    hearth_context_free(many);
}

/* Pooling rank: refused without a head, else the pairs' scores. Returns the worst difference. */
static double check_rank(hearth_model *m, const char *name, const cJSON *ref, int32_t n_cls_out, double tol) {
    const cJSON *rank = cJSON_GetObjectItem(ref, "rank");
    hearth_context_params p = hearth_context_default_params();
    p.embeddings = true;
    p.pooling_type = HEARTH_POOLING_RANK;
    hearth_context *c = NULL;
    if (n_cls_out == 0) {
        const hearth_status st = hearth_context_init(m, &p, &c);
        CHECK_MSG(st == HEARTH_ERR_INVALID_ARG && c == NULL && strstr(hearth_last_error(), "classification head"),
                  "%s: pooling rank without a head: status %d, %s", name, (int)st, hearth_last_error());
        CHECK(rank == NULL);
        return 0.0;
    }
    CHECK(rank != NULL);
    if (!rank) return INFINITY;
    seq pairs[MAX_SEQS];
    const int n = read_seqs(cJSON_GetObjectItem(rank, "pairs"), pairs);
    CHECK(n >= 3);
    double worst = 0.0;
    for (int normalize = 0; normalize < 2; normalize++) {         /* scores are never normalised */
        c = context(m, 1, HEARTH_POOLING_UNSPECIFIED, normalize); /* the file's: rank */
        const cJSON *scores = cJSON_GetObjectItem(rank, "scores")->child;
        for (int i = 0; c && i < n && scores; i++, scores = scores->next) {
            const float *v = decode_one(c, &pairs[i]) ? hearth_get_embeddings_seq(c, 0) : NULL;
            CHECK(v != NULL && hearth_get_embeddings_ith(c, 0) != NULL);
            const double d = v ? diff(v, scores, n_cls_out) : INFINITY;
            CHECK_MSG(d <= tol, "%s pair %d: scores differ from llama.cpp's by %.3g (first %g, want %g)", name, i, d,
                      v ? v[0] : NAN, scores->child->valuedouble);
            worst = fmax(worst, d);
        }
        hearth_context_free(c);
    }
    check_batched(m, name, pairs, n, HEARTH_POOLING_RANK, n_cls_out);
    /* hearth_embed computes embeddings, not scores: it points to hearth_rerank */
    const char *text = "the cat sat on the mat.";
    float out[MAX_EMBD];
    const hearth_status st = hearth_embed(m, &text, NULL, 1, NULL, out);
    CHECK_MSG(st == HEARTH_ERR_INVALID_ARG && strstr(hearth_last_error(), "hearth_rerank"),
              "%s: hearth_embed with pooling rank: status %d, %s", name, (int)st, hearth_last_error());
    return worst;
}

static void check_model(const cJSON *ref) {
    const char *file = cJSON_GetObjectItem(ref, "file")->valuestring;
    const char *type = cJSON_GetObjectItem(ref, "type")->valuestring;
    char rel[256];
    snprintf(rel, sizeof rel, "reference/encoder/%s", file);
    hearth_model *m = NULL;
    hearth_model_params mp = hearth_model_default_params();
    mp.n_gpu_layers = 0;
    const hearth_status st = hearth_model_load(check_test_path(rel), &mp, &m);
    CHECK_MSG(st == HEARTH_OK, "%s: %s", file, hearth_last_error());
    if (st != HEARTH_OK) return;
    const int32_t n_embd = hearth_model_n_embd(m), n_cls_out = hearth_model_n_cls_out(m);
    CHECK(n_embd == cJSON_GetObjectItem(ref, "n_embd")->valueint && n_embd <= MAX_EMBD);
    CHECK_MSG(n_cls_out == cJSON_GetObjectItem(ref, "n_cls_out")->valueint, "%s: n_cls_out %d", file, (int)n_cls_out);
    CHECK(hearth_model_pooling_type(m) == cJSON_GetObjectItem(ref, "pooling_type")->valueint);
    CHECK(!hearth_model_can_generate(m));
    const double tol = max_diff_for(type);
    seq seqs[MAX_SEQS];
    const int n = read_seqs(cJSON_GetObjectItem(ref, "sequences"), seqs);
    CHECK(n >= 4);

    /* pooling none: every token's hidden state */
    double worst_hidden = 0.0;
    hearth_context *c = context(m, 1, HEARTH_POOLING_NONE, false);
    const cJSON *hidden = cJSON_GetObjectItem(ref, "hidden")->child;
    for (int s = 0; c && s < n && hidden; s++, hidden = hidden->next) {
        if (!decode_one(c, &seqs[s])) continue;
        CHECK(hearth_get_embeddings_seq(c, 0) == NULL);
        const cJSON *row = hidden->child;
        for (int32_t t = 0; t < seqs[s].n; t++, row = row ? row->next : NULL) {
            const float *h = hearth_get_embeddings_ith(c, t);
            const double d = h && row ? diff(h, row, n_embd) : INFINITY;
            CHECK_MSG(d <= tol, "%s sequence %d token %d: hidden state differs from llama.cpp's by %.3g", file, s,
                      (int)t, d);
            worst_hidden = fmax(worst_hidden, d);
        }
    }
    hearth_context_free(c);

    /* mean, cls, last */
    static const struct {
        const char *name;
        int32_t pooling;
    } poolings[] = {{"mean", HEARTH_POOLING_MEAN}, {"cls", HEARTH_POOLING_CLS}, {"last", HEARTH_POOLING_LAST}};
    double worst_pooled = 0.0;
    for (size_t p = 0; p < sizeof poolings / sizeof *poolings; p++) {
        c = context(m, 1, poolings[p].pooling, false);
        const cJSON *want = cJSON_GetObjectItem(cJSON_GetObjectItem(ref, "pooled"), poolings[p].name)->child;
        for (int s = 0; c && s < n && want; s++, want = want->next) {
            const float *v = decode_one(c, &seqs[s]) ? hearth_get_embeddings_seq(c, 0) : NULL;
            const double d = v ? diff(v, want, n_embd) : INFINITY;
            CHECK_MSG(d <= tol, "%s sequence %d: %s pooling differs from llama.cpp's by %.3g", file, s,
                      poolings[p].name, d);
            worst_pooled = fmax(worst_pooled, d);
        }
        hearth_context_free(c);
    }
    check_batched(m, file, seqs, n, HEARTH_POOLING_MEAN, n_embd);
    check_batched(m, file, seqs, n, HEARTH_POOLING_CLS, n_embd);

    const double worst_rank = check_rank(m, file, ref, n_cls_out, tol / 2);
    printf("%-24s %-4s max |diff| from llama.cpp: hidden %.3g, pooled %.3g", file, type, worst_hidden, worst_pooled);
    if (n_cls_out) printf(", rank scores %.3g (%d each, bound %.0e)", worst_rank, (int)n_cls_out, tol / 2);
    printf(" (bound %.0e)\n", tol);
    hearth_model_free(m);
}

int main(void) {
    cJSON *ref = json_file_read(check_test_path("reference/encoder/encoder_reference.json"));
    CHECK(ref != NULL);
    if (!ref) return check_report();
    int n_models = 0;
    for (const cJSON *m = cJSON_GetObjectItem(ref, "models")->child; m; m = m->next, n_models++) check_model(m);
    CHECK(n_models == 5);
    cJSON_Delete(ref);
    return check_report();
}
