/* Token sampling: logit bias and grammar (sampler_grammar.c), repetition penalty (CTRL, Keskar et al. 2019,
 * arXiv:1909.05858), top-k (Fan et al. 2018), nucleus/top-p (Holtzman et al.
 * 2019, arXiv:1904.09751), min-p (Nguyen et al. 2024, arXiv:2407.01082) and
 * temperature, in llama.cpp's default order, with a seeded xoshiro256**
 * generator so that equal seeds give equal text. All buffers are allocated at
 * init; sampling without a grammar does not allocate. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "model/model.h"
#include "runtime/sampler_grammar.h"

typedef struct candidate {
    int32_t id;
    float logit;
} candidate;

struct hearth_sampler {
    hearth_sampler_params p;
    int32_t n_vocab;
    candidate *cand;   /* [n_vocab] */
    float *top_logits; /* [n_vocab]: logits left by top-k, for top-p's normaliser */
    int32_t n_top;
    float *weights;  /* [n_vocab]: unnormalised probabilities of the draw */
    int32_t *count;  /* [n_vocab] occurrences in the recent tokens, during the penalty pass */
    int32_t *recent; /* ring of the last repeat_last_n tokens */
    int32_t n_recent, recent_head;
    uint64_t rng[4];
    hl_constraint con; /* logit bias and grammar */
};

hearth_sampler_params hearth_sampler_default_params(void) {
    return (hearth_sampler_params){
        .temp = 0.8f,
        .top_k = 40,
        .top_p = 0.95f,
        .min_p = 0.05f,
        .repeat_penalty = 1.0f,
        .repeat_last_n = 64,
        .seed = 0xC0FFEE,
    };
}

/* xoshiro256** (Blackman & Vigna 2018), seeded through splitmix64. */
static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(uint64_t s[4]) {
    const uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

static void rng_seed(uint64_t s[4], uint64_t seed) {
    for (int i = 0; i < 4; i++) {
        uint64_t z = (seed += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        s[i] = z ^ (z >> 31);
    }
}

/* uniform in [0, 1) with 53 random bits */
static double rng_uniform(uint64_t s[4]) { return (double)(rng_next(s) >> 11) * 0x1.0p-53; }

hearth_status hearth_sampler_init(const hearth_model *model, const hearth_sampler_params *params,
                                  hearth_sampler **out) {
    if (!out || !model) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_sampler_init: NULL argument");
    *out = NULL;
    hearth_sampler_params p = params ? *params : hearth_sampler_default_params();
    if (!(p.top_p > 0.0f && p.top_p <= 1.0f))
        return hl_fail(HEARTH_ERR_INVALID_ARG, "top_p must be in (0, 1] (got %g)", p.top_p);
    if (!(p.min_p >= 0.0f && p.min_p <= 1.0f))
        return hl_fail(HEARTH_ERR_INVALID_ARG, "min_p must be in [0, 1] (got %g)", p.min_p);
    if (!(p.repeat_penalty > 0.0f) || !isfinite(p.repeat_penalty))
        return hl_fail(HEARTH_ERR_INVALID_ARG, "repeat_penalty must be > 0 (got %g)", p.repeat_penalty);
    if (p.repeat_last_n < 0)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "repeat_last_n must be >= 0 (got %d)", (int)p.repeat_last_n);
    if (!isfinite(p.temp)) return hl_fail(HEARTH_ERR_INVALID_ARG, "temperature must be a finite number");
    if (!(p.presence_penalty >= -2.0f && p.presence_penalty <= 2.0f) ||
        !(p.frequency_penalty >= -2.0f && p.frequency_penalty <= 2.0f))
        return hl_fail(HEARTH_ERR_INVALID_ARG, "presence_penalty and frequency_penalty must be in [-2, 2]");
    hearth_sampler *s = hl_calloc(1, sizeof *s);
    if (!s) return HEARTH_ERR_OUT_OF_MEMORY;
    s->p = p;
    hearth_status st = hl_constraint_init(&s->con, model, &p);
    if (st != HEARTH_OK) {
        free(s);
        return st;
    }
    /* the parameters' pointers are the caller's: the constraint keeps copies */
    s->p.logit_bias = NULL;
    s->p.grammar = s->p.json_schema = NULL;
    s->p.grammar_triggers = NULL;
    s->n_vocab = hearth_model_n_vocab(model);
    s->cand = hl_malloc((size_t)s->n_vocab * sizeof *s->cand);
    s->top_logits = hl_malloc((size_t)s->n_vocab * sizeof *s->top_logits);
    s->weights = hl_malloc((size_t)s->n_vocab * sizeof *s->weights);
    s->count = hl_calloc((size_t)s->n_vocab, sizeof *s->count);
    s->recent = hl_malloc((size_t)(p.repeat_last_n ? p.repeat_last_n : 1) * sizeof *s->recent);
    if (!s->cand || !s->top_logits || !s->weights || !s->count || !s->recent) {
        hearth_sampler_free(s);
        return HEARTH_ERR_OUT_OF_MEMORY;
    }
    hearth_sampler_reset(s);
    *out = s;
    return HEARTH_OK;
}

void hearth_sampler_free(hearth_sampler *s) {
    if (!s) return;
    hl_constraint_free(&s->con);
    free(s->cand);
    free(s->top_logits);
    free(s->weights);
    free(s->count);
    free(s->recent);
    free(s);
}

void hearth_sampler_reset(hearth_sampler *s) {
    s->n_recent = 0;
    s->recent_head = 0;
    rng_seed(s->rng, s->p.seed);
    hl_constraint_reset(&s->con);
}

void hearth_sampler_accept(hearth_sampler *s, int32_t token) {
    if (s->p.repeat_last_n == 0) return;
    s->recent[s->recent_head] = token;
    s->recent_head = (s->recent_head + 1) % s->p.repeat_last_n;
    if (s->n_recent < s->p.repeat_last_n) s->n_recent++;
}

/* The penalties over the recent tokens, once per distinct token, in
 * llama.cpp's order (llama_sampler_penalties): CTRL's (positive logits
 * divided, negative ones multiplied, so the token always becomes less
 * likely), then OpenAI's presence and frequency penalties (minus presence
 * if it occurs, minus frequency times its count). */
static void apply_penalty(hearth_sampler *s) {
    const float rep = s->p.repeat_penalty, presence = s->p.presence_penalty, frequency = s->p.frequency_penalty;
    if (rep == 1.0f && presence == 0.0f && frequency == 0.0f) return;
    for (int32_t i = 0; i < s->n_recent; i++)
        if (s->recent[i] >= 0 && s->recent[i] < s->n_vocab) s->count[s->recent[i]]++;
    for (int32_t i = 0; i < s->n_recent; i++) {
        int32_t id = s->recent[i];
        if (id < 0 || id >= s->n_vocab || !s->count[id]) continue;
        float *l = &s->cand[id].logit; /* candidates are still in id order here */
        if (rep != 1.0f) *l = *l > 0.0f ? *l / rep : *l * rep;
        *l -= (float)s->count[id] * frequency + presence;
        s->count[id] = 0;
    }
}

static int by_logit_desc(const void *a, const void *b) {
    const candidate *x = a, *y = b;
    if (x->logit != y->logit) return x->logit < y->logit ? 1 : -1;
    return x->id - y->id;
}

/* Moves the k largest candidates to the front (quickselect), then sorts them. */
static void keep_top(candidate *c, int32_t n, int32_t k) {
    int32_t lo = 0, hi = n - 1;
    while (lo < hi) {
        candidate pivot = c[(lo + hi) / 2];
        int32_t i = lo, j = hi;
        while (i <= j) {
            while (by_logit_desc(&c[i], &pivot) < 0) i++;
            while (by_logit_desc(&c[j], &pivot) > 0) j--;
            if (i <= j) {
                candidate t = c[i];
                c[i++] = c[j];
                c[j--] = t;
            }
        }
        if (k - 1 <= j) hi = j;
        else if (k - 1 >= i) lo = i;
        else break;
    }
    qsort(c, (size_t)k, sizeof *c, by_logit_desc);
}

/* exp(x) for x <= 0, flushing what would underflow (below e^-87) to 0
 * without libm's slow underflow path. */
static inline float exp_neg(float x) { return x < -87.0f ? 0.0f : expf(x); }

/* Index of the largest logit. */
static int32_t argmax(const candidate *c, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (c[i].logit > c[best].logit) best = i;
    return best;
}

/* Top-p and min-p each keep a prefix of the candidates sorted by logit, so
 * together they keep the shorter prefix. Min-p's is found by a linear filter;
 * only its survivors need sorting for top-p, whose cumulative probabilities
 * are normalised over all candidates left by top-k (as llama.cpp does). */
static int32_t truncate(hearth_sampler *s, int32_t n, bool sorted, float max) {
    if (s->p.min_p > 0.0f) {
        const float floor_logit = max + logf(s->p.min_p);
        int32_t keep = 0;
        for (int32_t i = 0; i < n; i++)
            if (s->cand[i].logit >= floor_logit) s->cand[keep++] = s->cand[i];
        n = keep;
    }
    if (s->p.top_p < 1.0f) {
        double total = 0.0;
        for (int32_t i = 0; i < s->n_top; i++) total += exp_neg(s->top_logits[i] - max);
        /* Without top-k the nucleus is usually a few dozen tokens: sort a
         * growing head until it holds top_p of the mass, not the whole vocabulary. */
        for (int32_t k = 64; !sorted; k *= 4) {
            const int32_t head = k < n ? k : n;
            keep_top(s->cand, n, head);
            double mass = 0.0;
            for (int32_t i = 0; i < head; i++) mass += exp_neg(s->cand[i].logit - max) / total;
            sorted = mass >= s->p.top_p || head == n;
        }
        double cum = 0.0;
        for (int32_t i = 0; i < n; i++) {
            cum += exp_neg(s->cand[i].logit - max) / total;
            if (cum >= s->p.top_p) return i + 1;
        }
    }
    return n;
}

/* Draws from the candidates with probabilities softmax(logit / temp). */
static int32_t draw(hearth_sampler *s, int32_t n, float max) {
    double total = 0.0;
    for (int32_t i = 0; i < n; i++) total += s->weights[i] = exp_neg((s->cand[i].logit - max) / s->p.temp);
    const double r = rng_uniform(s->rng) * total;
    double cum = 0.0;
    for (int32_t i = 0; i < n; i++) {
        cum += s->weights[i];
        if (r < cum) return s->cand[i].id;
    }
    return s->cand[n - 1].id;
}

/* The candidates in id order from the logits with the bias, penalised,
 * then (with a mask) only the allowed ones. Returns their count. */
static int32_t fill(hearth_sampler *s, const float *logits, const uint8_t *allowed) {
    const float *bias = s->con.bias;
    for (int32_t i = 0; i < s->n_vocab; i++) s->cand[i] = (candidate){i, bias ? logits[i] + bias[i] : logits[i]};
    apply_penalty(s);
    if (!allowed) return s->n_vocab;
    int32_t n = 0;
    for (int32_t i = 0; i < s->n_vocab; i++)
        if (allowed[i]) s->cand[n++] = s->cand[i];
    return n;
}

/* Chooses among the first n candidates: argmax, or top-k, top-p, min-p,
 * temperature and a draw. */
static int32_t pick(hearth_sampler *s, int32_t n) {
    if (s->p.temp <= 0.0f) return s->cand[argmax(s->cand, n)].id;
    const bool sorted = s->p.top_k > 0 && s->p.top_k < n;
    if (sorted) {
        keep_top(s->cand, n, s->p.top_k);
        n = s->p.top_k;
    }
    const float max = s->cand[argmax(s->cand, n)].logit;
    /* top-p normalises over the top-k survivors: remember their logits */
    s->n_top = n;
    for (int32_t i = 0; s->p.top_p < 1.0f && i < n; i++) s->top_logits[i] = s->cand[i].logit;
    return draw(s, truncate(s, n, sorted, max), max);
}

int32_t hearth_sampler_sample(hearth_sampler *s, const float *logits) {
    int32_t token = pick(s, fill(s, logits, NULL));
    /* llama.cpp's order: try the token, mask the vocabulary only when the
     * grammar rejects it */
    if (hl_constraint_grammar_on(&s->con) && !hl_constraint_allows(&s->con, token)) {
        const int32_t n = hl_constraint_mask(&s->con);
        if (n <= 0) return HEARTH_TOKEN_NONE;
        token = pick(s, fill(s, logits, s->con.allowed));
    }
    hl_constraint_advance(&s->con, token);
    hearth_sampler_accept(s, token);
    return token;
}
