/* Embeddings through the public API (hearth.h): all-MiniLM-L6-v2 (bert,
 * HEARTH_MODEL_MINILM, made by scripts/fetch_model.sh minilm) against
 * tests/reference/embedding_reference.json (make_embedding_reference.py:
 * llama.cpp 0.3.36's mean-pooled vectors on the same GGUF, and an
 * independent float64 numpy pass of the sentence-transformers model on its
 * safetensors, and sentence-transformers' own encode() of the model; 50
 * texts), token ids taken from the fixture:
 *   - each text's pooled vector (embd_normalize off) against both
 *     references: cosine >= 0.9999, and against llama.cpp within 2e-3 per
 *     element (the same F16 weights and tanh GELU);
 *   - each text's vector against sentence-transformers': cosine >= 0.9999;
 *   - retrieval: for each of the fixture's 8 queries (its vector against
 *     sentence-transformers' too), hearth's 3 nearest texts by cosine, in
 *     order, are sentence-transformers';
 *   - normalised vectors have unit length and the same direction;
 *   - all texts in one batch (one sequence each) equal each text alone
 *     (within 1e-5: kernels take other sums for other batch sizes);
 *   - CLS and LAST pooling are the first and last token's hidden state
 *     (hearth_get_embeddings_ith), NONE pools nothing, MEAN is their mean;
 *   - hearth_embed over texts equals a context per text, and refuses NULL
 *     texts and a text over the context;
 *   - a generation context on the encoder and a logits read on an
 *     embeddings context are refused; a decoder (HEARTH_MODEL, SmolLM2)
 *     embeds with LAST pooling into unit vectors.
 * Skips (77) without the MiniLM model. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "hearth.h"
#include "json_file.h"

#define MAX_TEXTS 64
#define MAX_QUERIES 16
#define MAX_TOKENS 512

typedef struct ref_text {
    const char *name;
    int32_t tokens[MAX_TOKENS];
    int32_t n;
    const cJSON *llama_cpp, *numpy, *st; /* st: sentence-transformers' vector */
} ref_text;

static double cosine(const float *a, const cJSON *b, int32_t n) {
    double ab = 0.0, aa = 0.0, bb = 0.0;
    const cJSON *e = b->child;
    for (int32_t i = 0; i < n && e; i++, e = e->next) {
        ab += (double)a[i] * e->valuedouble;
        aa += (double)a[i] * a[i];
        bb += e->valuedouble * e->valuedouble;
    }
    return ab / sqrt(aa * bb);
}

static double max_diff(const float *a, const cJSON *b, int32_t n) {
    double worst = 0.0;
    const cJSON *e = b->child;
    for (int32_t i = 0; i < n && e; i++, e = e->next) worst = fmax(worst, fabs((double)a[i] - e->valuedouble));
    return worst;
}

static hearth_context *embeddings_context(hearth_model *m, uint32_t n_seq, int32_t pooling, bool normalize) {
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

/* Embeds text t alone in sequence 0 (cleared first); returns the pooled vector. */
static const float *embed_one(hearth_context *c, const ref_text *t) {
    hearth_kv_seq_rm(c, 0, 0, -1);
    const hearth_status st = hearth_decode(c, t->tokens, (uint32_t)t->n);
    CHECK_MSG(st == HEARTH_OK, "%s: %s", t->name, hearth_last_error());
    return st == HEARTH_OK ? hearth_get_embeddings_seq(c, 0) : NULL;
}

static void check_references(hearth_model *m, const ref_text *texts, int n_texts, int32_t n_embd) {
    hearth_context *raw = embeddings_context(m, 1, HEARTH_POOLING_UNSPECIFIED, false);
    hearth_context *unit = embeddings_context(m, 1, HEARTH_POOLING_UNSPECIFIED, true);
    if (!raw || !unit) return;
    double worst_cos = 1.0, worst_diff = 0.0;
    for (int i = 0; i < n_texts; i++) {
        const float *e = embed_one(raw, &texts[i]);
        if (!e) continue;
        const double c_llama = cosine(e, texts[i].llama_cpp, n_embd), c_numpy = cosine(e, texts[i].numpy, n_embd);
        const double d = max_diff(e, texts[i].llama_cpp, n_embd);
        CHECK_MSG(c_llama >= 0.9999 && c_numpy >= 0.9999 && d <= 2e-3,
                  "%s: cosine %.7f with llama.cpp, %.7f with numpy, max |diff| %.3g from llama.cpp", texts[i].name,
                  c_llama, c_numpy, d);
        worst_cos = fmin(worst_cos, fmin(c_llama, c_numpy));
        worst_diff = fmax(worst_diff, d);
        float copy[1024];
        memcpy(copy, e, (size_t)n_embd * sizeof *e);
        const float *u = embed_one(unit, &texts[i]);
        if (!u) continue;
        double norm = 0.0, dot = 0.0, raw_norm = 0.0;
        for (int32_t k = 0; k < n_embd; k++) {
            norm += (double)u[k] * u[k];
            dot += (double)u[k] * copy[k];
            raw_norm += (double)copy[k] * copy[k];
        }
        CHECK_MSG(fabs(norm - 1.0) < 1e-5 && dot / sqrt(raw_norm) > 0.999999, "%s: normalised |e|^2 = %.7f",
                  texts[i].name, norm);
    }
    printf("%d texts: worst cosine %.7f, worst max |diff| from llama.cpp %.3g\n", n_texts, worst_cos, worst_diff);
    hearth_context_free(raw);
    hearth_context_free(unit);
}

/* Reads a fixture entry's name, tokens and vectors. */
static void read_ref_text(const cJSON *t, ref_text *r) {
    r->name = cJSON_GetObjectItem(t, "name")->valuestring;
    for (const cJSON *id = cJSON_GetObjectItem(t, "tokens")->child; id && r->n < MAX_TOKENS; id = id->next)
        r->tokens[r->n++] = id->valueint;
    r->llama_cpp = cJSON_GetObjectItem(t, "llama_cpp");
    r->numpy = cJSON_GetObjectItem(t, "numpy");
    r->st = cJSON_GetObjectItem(t, "sentence_transformers");
}

/* Each text's vector against sentence-transformers' (cosine >= 0.9999);
 * then each query's 3 nearest texts by hearth's vectors (cosine) are, in
 * order, the ones sentence-transformers' vectors give (the fixture's top). */
static void check_sentence_transformers(hearth_model *m, const ref_text *texts, int n_texts, const cJSON *retrieval,
                                        int32_t n_embd) {
    hearth_context *c = embeddings_context(m, 1, HEARTH_POOLING_UNSPECIFIED, true);
    static float docs[MAX_TEXTS][1024];
    static ref_text queries[MAX_QUERIES];
    if (!c) return;
    double worst = 1.0;
    for (int i = 0; i < n_texts; i++) {
        CHECK_MSG(texts[i].st != NULL, "%s: no sentence_transformers vector", texts[i].name);
        const float *e = embed_one(c, &texts[i]);
        if (!e || !texts[i].st) continue;
        memcpy(docs[i], e, (size_t)n_embd * sizeof *e);
        const double cs = cosine(e, texts[i].st, n_embd);
        CHECK_MSG(cs >= 0.9999, "%s: cosine %.7f with sentence-transformers", texts[i].name, cs);
        worst = fmin(worst, cs);
    }
    const cJSON *qs = cJSON_GetObjectItem(retrieval, "queries");
    const int top_k = cJSON_GetObjectItem(retrieval, "top_k")->valueint;
    CHECK(cJSON_GetArraySize(qs) == 8 && top_k == 3);
    int n_q = 0, agree = 0;
    for (const cJSON *q = qs ? qs->child : NULL; q && n_q < MAX_QUERIES; q = q->next, n_q++) {
        ref_text *r = &queries[n_q];
        read_ref_text(q, r);
        const float *e = embed_one(c, r);
        if (!e) continue;
        const double cs = cosine(e, r->st, n_embd);
        CHECK_MSG(cs >= 0.9999, "query %s: cosine %.7f with sentence-transformers", r->name, cs);
        worst = fmin(worst, cs);
        int best[3] = {-1, -1, -1}; /* hearth's top 3, best first (the vectors are unit length) */
        double score[3] = {-2.0, -2.0, -2.0};
        for (int d = 0; d < n_texts; d++) {
            double dot = 0.0;
            for (int32_t k = 0; k < n_embd; k++) dot += (double)e[k] * docs[d][k];
            for (int r3 = 0; r3 < 3; r3++) {
                if (dot <= score[r3]) continue;
                for (int s3 = 2; s3 > r3; s3--) {
                    score[s3] = score[s3 - 1];
                    best[s3] = best[s3 - 1];
                }
                score[r3] = dot;
                best[r3] = d;
                break;
            }
        }
        const cJSON *want = cJSON_GetObjectItem(q, "top");
        bool same = cJSON_GetArraySize(want) == 3;
        for (int r3 = 0; same && r3 < 3; r3++) same = cJSON_GetArrayItem(want, r3)->valueint == best[r3];
        agree += same;
        CHECK_MSG(same, "query %s: hearth's top 3 are %s, %s, %s (%.4f %.4f %.4f); sentence-transformers' %s", r->name,
                  texts[best[0]].name, texts[best[1]].name, texts[best[2]].name, score[0], score[1], score[2],
                  cJSON_PrintUnformatted(cJSON_GetObjectItem(q, "top_names")));
    }
    printf("sentence-transformers: worst cosine %.7f over %d texts and %d queries; top 3 equal for %d of %d queries\n",
           worst, n_texts, n_q, agree, n_q);
    hearth_context_free(c);
}

/* Every text in one batch, one sequence each, equals each text alone. */
static void check_batch(hearth_model *m, const ref_text *texts, int n_texts, int32_t n_embd) {
    const int n = n_texts < 8 ? n_texts : 8;
    hearth_context *one = embeddings_context(m, 1, HEARTH_POOLING_MEAN, false);
    hearth_context *many = embeddings_context(m, (uint32_t)n, HEARTH_POOLING_MEAN, false);
    if (!one || !many) return;
    int32_t tokens[8 * MAX_TOKENS], seq[8 * MAX_TOKENS], n_tok = 0;
    for (int i = 0; i < n; i++)
        for (int32_t t = 0; t < texts[i].n; t++, n_tok++) {
            tokens[n_tok] = texts[i].tokens[t];
            seq[n_tok] = i;
        }
    const hearth_batch b = {.n_tokens = n_tok, .token = tokens, .seq_id = seq};
    const hearth_status st = hearth_decode_batch(many, &b);
    CHECK_MSG(st == HEARTH_OK, "%s", hearth_last_error());
    for (int i = 0; i < n && st == HEARTH_OK; i++) {
        float batched[1024];
        memcpy(batched, hearth_get_embeddings_seq(many, i), (size_t)n_embd * sizeof(float));
        const float *alone = embed_one(one, &texts[i]);
        double worst = 0.0;
        for (int32_t k = 0; alone && k < n_embd; k++) worst = fmax(worst, fabs((double)batched[k] - alone[k]));
        CHECK_MSG(alone && worst <= 1e-5, "%s: batched and alone differ by %.3g", texts[i].name, worst);
    }
    CHECK(hearth_get_embeddings_seq(many, n) == NULL || n == 8); /* a sequence the batch did not have */
    hearth_context_free(one);
    hearth_context_free(many);
}

/* CLS, LAST and NONE against the hidden states of the tokens; MEAN their mean. */
static void check_poolings(hearth_model *m, const ref_text *t, int32_t n_embd) {
    const int32_t poolings[] = {HEARTH_POOLING_CLS, HEARTH_POOLING_LAST, HEARTH_POOLING_MEAN, HEARTH_POOLING_NONE};
    for (size_t p = 0; p < sizeof poolings / sizeof *poolings; p++) {
        hearth_context *c = embeddings_context(m, 1, poolings[p], false);
        if (!c) continue;
        const float *e = embed_one(c, t);
        if (poolings[p] == HEARTH_POOLING_NONE) {
            CHECK(e == NULL && hearth_get_embeddings_ith(c, 0) != NULL);
        } else {
            double worst = 0.0;
            for (int32_t k = 0; e && k < n_embd; k++) {
                double want = 0.0;
                if (poolings[p] == HEARTH_POOLING_CLS) want = hearth_get_embeddings_ith(c, 0)[k];
                else if (poolings[p] == HEARTH_POOLING_LAST) want = hearth_get_embeddings_ith(c, t->n - 1)[k];
                else {
                    for (int32_t i = 0; i < t->n; i++) want += hearth_get_embeddings_ith(c, i)[k];
                    want /= t->n;
                }
                worst = fmax(worst, fabs(e[k] - want));
            }
            CHECK_MSG(e && worst <= 1e-6, "pooling %d: differs by %.3g from the tokens' hidden states",
                      (int)poolings[p], worst);
        }
        CHECK(hearth_get_logits_ith(c, 0) == NULL && hearth_get_logits(c) == NULL);
        hearth_context_free(c);
    }
}

/* hearth_embed over texts: the first texts' vectors equal their contexts'
 * (normalised by default); NULL texts and a text over the context are refused. */
static void check_embed_call(hearth_model *m, int32_t n_embd) {
    const char *texts[3] = {"Hello world", "A man is eating food.", "Un café, s'il vous plaît"};
    static float out[3 * 1024], alone[1024];
    CHECK_MSG(hearth_embed(m, texts, NULL, 3, NULL, out) == HEARTH_OK, "%s", hearth_last_error());
    hearth_context *c = embeddings_context(m, 1, HEARTH_POOLING_UNSPECIFIED, true);
    for (int i = 0; c && i < 3; i++) {
        int32_t toks[64];
        size_t n = 0;
        CHECK(hearth_tokenize(m, texts[i], strlen(texts[i]), true, true, toks, 64, &n) == HEARTH_OK);
        hearth_kv_seq_rm(c, 0, 0, -1);
        CHECK(hearth_decode(c, toks, (uint32_t)n) == HEARTH_OK);
        memcpy(alone, hearth_get_embeddings_seq(c, 0), (size_t)n_embd * sizeof(float));
        double worst = 0.0;
        for (int32_t k = 0; k < n_embd; k++) worst = fmax(worst, fabs((double)out[i * n_embd + k] - alone[k]));
        CHECK_MSG(worst <= 1e-5, "hearth_embed text %d differs by %.3g from its context", i, worst);
    }
    hearth_context_free(c);
    CHECK(hearth_embed(m, NULL, NULL, 1, NULL, out) == HEARTH_ERR_INVALID_ARG);
    char *long_text = malloc(6 * 600 + 1);
    for (int i = 0; i < 600; i++) memcpy(long_text + 5 * i, "word ", 5);
    long_text[5 * 600] = '\0';
    const char *too_long[1] = {long_text};
    CHECK(hearth_embed(m, too_long, NULL, 1, NULL, out) == HEARTH_ERR_CONTEXT_FULL);
    CHECK(strstr(hearth_last_error(), "602 tokens") != NULL);
    free(long_text);
}

/* The encoder cannot generate; a decoder embeds. */
static void check_models(hearth_model *bert) {
    CHECK(!hearth_model_can_generate(bert));
    CHECK(hearth_model_pooling_type(bert) == HEARTH_POOLING_MEAN);
    hearth_context *c = NULL;
    CHECK(hearth_context_init(bert, NULL, &c) == HEARTH_ERR_INVALID_ARG && c == NULL);
    CHECK(strstr(hearth_last_error(), "embedding model") != NULL);
    hearth_context_params p = hearth_context_default_params();
    p.embeddings = true;
    p.pooling_type = HEARTH_POOLING_RANK;
    CHECK(hearth_context_init(bert, &p, &c) == HEARTH_ERR_INVALID_ARG && c == NULL); /* no classification head */
    p.pooling_type = 7;
    CHECK(hearth_context_init(bert, &p, &c) == HEARTH_ERR_INVALID_ARG);

    const char *path = getenv("HEARTH_MODEL");
    hearth_model *dec = NULL;
    if (!path || hearth_model_load(path, NULL, &dec) != HEARTH_OK) return; /* the default model's tests say why */
    CHECK(hearth_model_can_generate(dec));
    hearth_context *e = embeddings_context(dec, 1, HEARTH_POOLING_LAST, true);
    const int32_t n_embd = hearth_model_n_embd(dec);
    int32_t toks[16];
    size_t n = 0;
    CHECK(hearth_tokenize(dec, "The cat sat on the mat.", 23, true, false, toks, 16, &n) == HEARTH_OK);
    if (e && hearth_decode(e, toks, (uint32_t)n) == HEARTH_OK) {
        const float *v = hearth_get_embeddings_seq(e, 0), *last = hearth_get_embeddings_ith(e, (int32_t)n - 1);
        double norm = 0.0, last_norm = 0.0, dot = 0.0;
        for (int32_t k = 0; v && last && k < n_embd; k++) {
            norm += (double)v[k] * v[k];
            last_norm += (double)last[k] * last[k];
            dot += (double)v[k] * last[k];
        }
        CHECK_MSG(v && fabs(norm - 1.0) < 1e-5 && dot / sqrt(last_norm) > 0.999999, "decoder: |e|^2 = %.7f", norm);
    }
    hearth_context_free(e);
    hearth_model_free(dec);
}

int main(void) {
    const char *path = check_model_path_from("HEARTH_MODEL_MINILM");
    cJSON *ref = json_file_read(check_test_path("reference/embedding_reference.json"));
    CHECK(ref != NULL);
    if (!ref) return check_report();
    hearth_model *m = NULL;
    hearth_status st = hearth_model_load(path, NULL, &m);
    CHECK_MSG(st == HEARTH_OK, "%s", hearth_last_error());
    if (st != HEARTH_OK) return check_report();
    const int32_t n_embd = hearth_model_n_embd(m);
    CHECK(n_embd == cJSON_GetObjectItem(ref, "n_embd")->valueint && n_embd <= 1024);
    static ref_text texts[MAX_TEXTS];
    int n_texts = 0;
    for (const cJSON *t = cJSON_GetObjectItem(ref, "texts")->child; t && n_texts < MAX_TEXTS; t = t->next)
        read_ref_text(t, &texts[n_texts++]);
    CHECK(n_texts >= 16);
    CHECK(n_texts == 50);
    check_references(m, texts, n_texts, n_embd);
    const cJSON *retrieval = cJSON_GetObjectItem(ref, "retrieval");
    CHECK(retrieval != NULL);
    if (retrieval) check_sentence_transformers(m, texts, n_texts, retrieval, n_embd);
    check_batch(m, texts, n_texts, n_embd);
    check_poolings(m, &texts[1], n_embd);
    check_embed_call(m, n_embd);
    check_models(m);
    hearth_model_free(m);
    cJSON_Delete(ref);
    return check_report();
}
