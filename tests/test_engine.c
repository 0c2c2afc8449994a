/* The engine (hearth_engine) on the default model: ten prompts served at
 * once through four slots give llama.cpp's greedy tokens and text
 * (tests/reference/greedy/smollm2.json, made by llama.cpp through
 * llama-cpp-python), so a request's output does not depend on what else is
 * in the batch; stop strings never leak into pieces; log-probabilities;
 * prefix reuse from a finished request and from a running one; cancelling
 * while waiting, during prefill and during decode; a full queue; a prompt
 * longer than a slot; and freeing an engine with requests running. */
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "hearth.h"
#include "json_file.h"

#define MAX_TOKENS 1024

/* What one request received. */
typedef struct collect {
    char text[16384];
    size_t len;
    int32_t tokens[MAX_TOKENS];
    int n_tokens, n_pieces, n_final;
    hearth_finish_reason finish;
    int32_t n_prompt, n_cached;
    uint64_t id;                       /* the request id the pieces carry */
    bool logprobs_ok;                  /* every piece's logprob and top list were consistent */
    hearth_token_logprob first_top[5]; /* the first token's most likely alternatives */
    int cancel_after;                  /* > 0: return false from this piece on */
    hearth_engine *pause_engine;       /* with pause_after > 0: pause the request at that piece */
    int pause_after;
    bool done;
} collect;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;

static bool on_piece(const hearth_piece *p, void *user) {
    collect *c = user;
    pthread_mutex_lock(&mu);
    if (c->len + p->len < sizeof c->text) {
        memcpy(c->text + c->len, p->text, p->len);
        c->len += p->len;
    }
    if (p->token >= 0 && c->n_tokens < MAX_TOKENS) c->tokens[c->n_tokens++] = p->token;
    if (p->n_top > 0) {
        bool ok = p->logprob <= 0.0f && p->top[0].logprob <= 0.0f && p->logprob <= p->top[0].logprob + 1e-5f;
        for (int32_t i = 1; i < p->n_top; i++) ok = ok && p->top[i].logprob <= p->top[i - 1].logprob;
        c->logprobs_ok = c->logprobs_ok && ok;
        if (c->n_tokens == 1)
            for (int32_t i = 0; i < p->n_top && i < 5; i++) c->first_top[i] = p->top[i];
    }
    c->n_pieces++;
    c->n_prompt = p->n_prompt;
    c->n_cached = p->n_cached;
    c->id = p->id;
    if (p->finish != HEARTH_FINISH_NONE) {
        c->n_final++;
        c->finish = p->finish;
        c->done = true;
    }
    if (c->pause_after > 0 && c->n_pieces == c->pause_after) hearth_engine_pause(c->pause_engine, p->id, true);
    pthread_cond_broadcast(&cv);
    const bool go_on = !(c->cancel_after > 0 && c->n_pieces >= c->cancel_after);
    pthread_mutex_unlock(&mu);
    return go_on;
}

static void wait_done(collect *c) {
    pthread_mutex_lock(&mu);
    while (!c->done) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
}

/* Waits until c has at least n pieces. */
static void wait_pieces(collect *c, int n) {
    pthread_mutex_lock(&mu);
    while (c->n_pieces < n && !c->done) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
}

/* Waits (at most 2 s) until the engine has published every slot idle: it
 * publishes the slots at the end of a step, after the pieces. */
static void wait_idle(hearth_engine *e, hearth_engine_stats *st) {
    for (int tries = 0; tries < 200; tries++) {
        hearth_engine_stats_get(e, st);
        if (st->n_running == 0) return;
        nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
    }
}

static hearth_request_params greedy(collect *c, int32_t max_tokens) {
    memset(c, 0, sizeof *c);
    c->logprobs_ok = true;
    hearth_request_params p = hearth_request_default_params();
    p.sampling.temp = 0.0f;
    p.max_tokens = max_tokens;
    p.on_piece = on_piece;
    p.user = c;
    return p;
}

static hearth_engine *new_engine(hearth_model *m, uint32_t n_slots, uint32_t n_ctx_seq, int32_t n_queue) {
    hearth_engine_params ep = hearth_engine_default_params();
    ep.ctx.n_seq_max = n_slots;
    ep.ctx.n_ctx = n_slots * n_ctx_seq;
    ep.ctx.n_threads = 2;
    ep.ctx.flash_attn = HEARTH_FLASH_ATTN_OFF; /* the greedy cases are llama.cpp's tokens, bit for bit */
    ep.n_queue_max = n_queue;
    hearth_engine *e = NULL;
    hearth_status st = hearth_engine_init(m, &ep, &e);
    CHECK_MSG(st == HEARTH_OK, "engine: %s", hearth_last_error());
    return e;
}

/* Ten prompts at once through four slots (six wait, then join as others
 * end) give llama.cpp's 64 greedy tokens each and its text. */
static void test_reference(hearth_model *m) {
    cJSON *ref = json_file_read(check_test_path("reference/greedy/smollm2.json"));
    CHECK(ref != NULL);
    if (!ref) return;
    hearth_engine *e = new_engine(m, 4, 512, 16);
    static collect got[16];
    const cJSON *cases = cJSON_GetObjectItem(ref, "cases");
    const int n = cJSON_GetArraySize(cases);
    CHECK(n <= 16);
    for (int i = 0; i < n && i < 16; i++) {
        const cJSON *ids = cJSON_GetObjectItem(cJSON_GetArrayItem(cases, i), "prompt_ids");
        int32_t toks[64];
        const int np = cJSON_GetArraySize(ids);
        for (int k = 0; k < np && k < 64; k++) toks[k] = cJSON_GetArrayItem(ids, k)->valueint;
        hearth_request_params p = greedy(&got[i], 64);
        p.tokens = toks;
        p.n_tokens = (size_t)np;
        p.ignore_eos = true; /* llama.cpp's fixture runs 64 steps whatever comes */
        CHECK_MSG(hearth_engine_submit(e, &p, NULL) == HEARTH_OK, "submit: %s", hearth_last_error());
    }
    int equal = 0;
    for (int i = 0; i < n && i < 16; i++) {
        wait_done(&got[i]);
        const cJSON *c = cJSON_GetArrayItem(cases, i);
        const cJSON *steps = cJSON_GetObjectItem(c, "steps");
        bool same = got[i].n_tokens == cJSON_GetArraySize(steps);
        for (int k = 0; same && k < got[i].n_tokens; k++)
            same = got[i].tokens[k] == cJSON_GetObjectItem(cJSON_GetArrayItem(steps, k), "token")->valueint;
        const char *text = cJSON_GetObjectItem(c, "text")->valuestring;
        CHECK_MSG(same, "case %d: tokens differ from llama.cpp's", i);
        CHECK_MSG(got[i].len == strlen(text) && !memcmp(got[i].text, text, got[i].len), "case %d: text differs: '%.*s'",
                  i, (int)got[i].len, got[i].text);
        CHECK(got[i].finish == HEARTH_FINISH_LENGTH && got[i].n_final == 1);
        equal += same;
    }
    printf("engine: %d/%d prompts served four at a time equal llama.cpp's 64 greedy tokens\n", equal, n);
    hearth_engine_stats st;
    wait_idle(e, &st);
    CHECK(st.n_requests == (uint64_t)n && st.n_generated_tokens == (uint64_t)n * 64 && st.n_running == 0);
    CHECK(st.ttft.n == (uint64_t)n && st.inter_token.n == (uint64_t)n * 63);
    CHECK(st.ttft.count[HEARTH_HIST_BUCKETS - 1] == st.ttft.n);
    hearth_engine_free(e);
    cJSON_Delete(ref);
}

static const char *PROMPT = "The quick brown fox jumps over the lazy dog. Then it";

/* A stop string taken from the middle of the free text ends the text just
 * before it; no piece shows any part of it. */
static void test_stop(hearth_engine *e) {
    static collect free_run, stopped;
    /* twice: both runs then reuse the prompt from the cache (a prompt's last
     * token decoded alone may round its logits differently than in a batch) */
    for (int i = 0; i < 2; i++) {
        hearth_request_params p = greedy(&free_run, 48);
        p.prompt = PROMPT;
        p.ignore_eos = true;
        CHECK(hearth_engine_submit(e, &p, NULL) == HEARTH_OK);
        wait_done(&free_run);
    }
    CHECK(free_run.len > 20);
    /* a stop string spanning what are likely two tokens, from the middle */
    char stop[8];
    const size_t at = free_run.len / 2;
    memcpy(stop, free_run.text + at, 5);
    stop[5] = '\0';
    const char *first = strstr(free_run.text, stop);
    const size_t want = (size_t)(first - free_run.text);
    const char *stops[2] = {"\x01never", stop};
    hearth_request_params p = greedy(&stopped, 48);
    p.prompt = PROMPT;
    p.ignore_eos = true;
    p.stop = stops;
    p.n_stop = 2;
    CHECK(hearth_engine_submit(e, &p, NULL) == HEARTH_OK);
    wait_done(&stopped);
    CHECK_MSG(stopped.len == want && !memcmp(stopped.text, free_run.text, want), "stop '%s': got '%.*s'", stop,
              (int)stopped.len, stopped.text);
    CHECK(stopped.finish == HEARTH_FINISH_STOP);
}

/* With logprobs the chosen greedy token is the most likely one. */
static void test_logprobs(hearth_engine *e) {
    static collect c;
    hearth_request_params p = greedy(&c, 8);
    p.prompt = PROMPT;
    p.logprobs = true;
    p.top_logprobs = 5;
    CHECK(hearth_engine_submit(e, &p, NULL) == HEARTH_OK);
    wait_done(&c);
    CHECK(c.logprobs_ok && c.n_tokens >= 1);
    p.top_logprobs = HEARTH_MAX_TOP_LOGPROBS + 1;
    CHECK(hearth_engine_submit(e, &p, NULL) == HEARTH_ERR_INVALID_ARG);
}

/* Runs one greedy request to its end. */
static void run_one(hearth_engine *e, collect *c, const char *prompt, int32_t max_tokens) {
    hearth_request_params p = greedy(c, max_tokens);
    p.prompt = prompt;
    p.ignore_eos = true;
    CHECK_MSG(hearth_engine_submit(e, &p, NULL) == HEARTH_OK, "submit: %s", hearth_last_error());
    wait_done(c);
}

static bool same_tokens(const collect *a, const collect *b) {
    return a->n_tokens == b->n_tokens && !memcmp(a->tokens, b->tokens, sizeof(int32_t) * (size_t)a->n_tokens);
}

/* A prompt that repeats or continues a finished request's prompt decodes
 * only what is new, and one that continues a running request's prompt gets
 * its cells copied; each gives the tokens of a fresh engine. */
static void test_prefix(hearth_model *m) {
    static collect r0, r1, r2, fresh, a, b;
    const char *q = "Once upon a time, in a land far away, there lived a";
    const char *q2 = "Once upon a time, in a land far away, there lived a king who had three daughters.";
    hearth_engine *e = new_engine(m, 2, 512, 4);
    run_one(e, &r0, PROMPT, 12);
    run_one(e, &r1, PROMPT, 12);
    /* the last prompt token is decoded again, alone: its cells and logits
     * round differently than in the prompt's pass, so later tokens may too */
    CHECK(r0.n_cached == 0 && r1.n_cached == r1.n_prompt - 1 && r0.tokens[0] == r1.tokens[0]);
    /* a running request's prompt copied into the idle slot */
    hearth_request_params p = greedy(&a, -1);
    p.prompt = q;
    p.ignore_eos = true;
    uint64_t ida;
    CHECK(hearth_engine_submit(e, &p, &ida) == HEARTH_OK);
    wait_pieces(&a, 2);
    run_one(e, &b, q2, 12);
    /* (" king" is also the running request's first generated token) */
    CHECK_MSG(b.n_cached >= a.n_prompt, "cached %d, the running prompt has %d", b.n_cached, a.n_prompt);
    hearth_engine_cancel(e, ida);
    wait_done(&a);
    /* the finished one's prompt continued */
    run_one(e, &r2, q2, 12);
    CHECK(r2.n_cached == r2.n_prompt - 1 && same_tokens(&b, &r2));
    hearth_engine_free(e);
    e = new_engine(m, 1, 512, 4);
    run_one(e, &fresh, q2, 12);
    CHECK(fresh.n_cached == 0 && same_tokens(&fresh, &b));
    hearth_engine_free(e);
}

/* Cancelling a waiting request, one reading its prompt, one generating
 * (by id and by the callback's return): each ends CANCELLED once and every
 * slot is idle afterwards. */
static void test_cancel(hearth_model *m) {
    hearth_engine *e = new_engine(m, 1, 2048, 1);
    static char long_prompt[8192];
    long_prompt[0] = '\0';
    for (int i = 0; i < 60; i++) strcat(long_prompt, "Lorem ipsum dolor sit amet, consectetur adipiscing elit. ");
    static collect a, b, c, d;
    hearth_request_params p = greedy(&a, -1);
    p.prompt = PROMPT;
    p.ignore_eos = true;
    uint64_t ida, idb;
    CHECK(hearth_engine_submit(e, &p, &ida) == HEARTH_OK);
    wait_pieces(&a, 2);
    p = greedy(&b, 8);
    p.prompt = PROMPT;
    CHECK(hearth_engine_submit(e, &p, &idb) == HEARTH_OK); /* waits: one slot */
    p = greedy(&c, 8);
    p.prompt = PROMPT;
    CHECK(hearth_engine_submit(e, &p, NULL) == HEARTH_ERR_BUSY); /* the queue holds one */
    CHECK(strstr(hearth_last_error(), "busy") != NULL);
    hearth_engine_cancel(e, idb);
    wait_done(&b);
    CHECK(b.finish == HEARTH_FINISH_CANCELLED && b.n_tokens == 0 && b.n_final == 1 && b.id == idb);
    hearth_engine_cancel(e, ida);
    wait_done(&a);
    CHECK(a.finish == HEARTH_FINISH_CANCELLED && a.n_final == 1 && a.id == ida && ida != idb);
    /* during prefill: cancelled right after submit, the long prompt is still being read */
    p = greedy(&c, 8);
    p.prompt = long_prompt;
    uint64_t idc;
    CHECK(hearth_engine_submit(e, &p, &idc) == HEARTH_OK);
    hearth_engine_cancel(e, idc);
    wait_done(&c);
    CHECK(c.finish == HEARTH_FINISH_CANCELLED && c.n_tokens == 0);
    /* the callback says stop after 3 pieces */
    p = greedy(&d, 32);
    p.prompt = PROMPT;
    p.ignore_eos = true;
    d.cancel_after = 3;
    CHECK(hearth_engine_submit(e, &p, NULL) == HEARTH_OK);
    wait_done(&d);
    CHECK(d.finish == HEARTH_FINISH_CANCELLED && d.n_pieces == 4 && d.n_final == 1);
    /* the slot is free: a new request runs */
    static collect f;
    p = greedy(&f, 4);
    p.prompt = PROMPT;
    CHECK(hearth_engine_submit(e, &p, NULL) == HEARTH_OK);
    wait_done(&f);
    CHECK(f.finish == HEARTH_FINISH_LENGTH && f.n_tokens == 4);
    hearth_engine_stats st;
    wait_idle(e, &st);
    hearth_slot_info info[2];
    size_t n = 0;
    hearth_engine_slots(e, info, 2, &n);
    CHECK(n == 1 && info[0].state == HEARTH_SLOT_IDLE && info[0].request_id == 0);
    hearth_engine_free(e);
}

/* A request that pauses itself gets no piece until it is resumed, while
 * another request runs to its end; resumed, it gives the tokens it would
 * have given unpaused. Freeing the engine ends a paused request. */
static void test_pause(hearth_model *m) {
    static collect plain, a, b, c;
    hearth_request_params p = greedy(&plain, 12);
    p.prompt = PROMPT;
    p.ignore_eos = true;
    hearth_engine *e = new_engine(m, 2, 512, 4); /* a fresh cache for each of the two runs compared */
    CHECK(hearth_engine_submit(e, &p, NULL) == HEARTH_OK);
    wait_done(&plain);
    hearth_engine_free(e);
    e = new_engine(m, 2, 512, 4);
    p = greedy(&a, 12);
    p.prompt = PROMPT;
    p.ignore_eos = true;
    a.pause_engine = e;
    a.pause_after = 3;
    uint64_t ida;
    CHECK(hearth_engine_submit(e, &p, &ida) == HEARTH_OK);
    wait_pieces(&a, 3);
    p = greedy(&b, 8);
    p.prompt = "The three laws of thermodynamics";
    CHECK(hearth_engine_submit(e, &p, NULL) == HEARTH_OK);
    wait_done(&b);
    pthread_mutex_lock(&mu);
    CHECK_MSG(a.n_pieces == 3 && !a.done, "paused request got %d pieces", a.n_pieces);
    pthread_mutex_unlock(&mu);
    CHECK(b.finish == HEARTH_FINISH_LENGTH && b.n_tokens == 8);
    hearth_engine_pause(e, ida, false);
    wait_done(&a);
    CHECK(a.finish == HEARTH_FINISH_LENGTH && a.n_tokens == plain.n_tokens);
    CHECK(!memcmp(a.tokens, plain.tokens, sizeof(int32_t) * (size_t)plain.n_tokens));
    /* paused until the engine is freed: its last piece says cancelled */
    p = greedy(&c, 12);
    p.prompt = PROMPT;
    c.pause_engine = e;
    c.pause_after = 1;
    CHECK(hearth_engine_submit(e, &p, NULL) == HEARTH_OK);
    wait_pieces(&c, 1);
    hearth_engine_free(e);
    CHECK(c.done && c.finish == HEARTH_FINISH_CANCELLED && c.n_final == 1);
}

/* Argument errors and prompts too long for a slot; freeing an engine with
 * a request running and one waiting ends both CANCELLED. */
static void test_errors_and_free(hearth_model *m) {
    hearth_engine *e = new_engine(m, 1, 64, 4);
    static collect a, b;
    hearth_request_params p = greedy(&a, 8);
    CHECK(hearth_engine_submit(e, &p, NULL) == HEARTH_ERR_INVALID_ARG); /* no prompt */
    p.prompt = "";                                                      /* SmolLM2 adds no BOS: no tokens */
    CHECK(hearth_engine_submit(e, &p, NULL) == HEARTH_ERR_INVALID_ARG);
    p = greedy(&a, 8);
    int32_t bad = hearth_model_n_vocab(m);
    p.tokens = &bad;
    p.n_tokens = 1;
    CHECK(hearth_engine_submit(e, &p, NULL) == HEARTH_ERR_INVALID_ARG);
    static char long_prompt[4096];
    long_prompt[0] = '\0';
    for (int i = 0; i < 20; i++) strcat(long_prompt, "one two three four five six seven. ");
    p = greedy(&a, 8);
    p.prompt = long_prompt;
    CHECK(hearth_engine_submit(e, &p, NULL) == HEARTH_ERR_CONTEXT_FULL);
    CHECK(strstr(hearth_last_error(), "a slot holds 64") != NULL);
    const char *empty[1] = {""};
    p = greedy(&a, 8);
    p.prompt = PROMPT;
    p.stop = empty;
    p.n_stop = 1;
    CHECK(hearth_engine_submit(e, &p, NULL) == HEARTH_ERR_INVALID_ARG);
    /* generating until the slot is full ends LENGTH */
    p = greedy(&a, -1);
    p.prompt = PROMPT;
    p.ignore_eos = true;
    CHECK(hearth_engine_submit(e, &p, NULL) == HEARTH_OK);
    wait_done(&a);
    CHECK(a.finish == HEARTH_FINISH_LENGTH && a.n_prompt + a.n_tokens == 65);
    /* freed while running and waiting */
    p = greedy(&a, -1);
    p.prompt = PROMPT;
    p.ignore_eos = true;
    CHECK(hearth_engine_submit(e, &p, NULL) == HEARTH_OK);
    wait_pieces(&a, 1);
    p = greedy(&b, 8);
    p.prompt = PROMPT;
    CHECK(hearth_engine_submit(e, &p, NULL) == HEARTH_OK);
    hearth_engine_free(e);
    CHECK(a.done && a.finish == HEARTH_FINISH_CANCELLED && a.n_final == 1);
    CHECK(b.done && b.finish == HEARTH_FINISH_CANCELLED && b.n_final == 1);
}

/* With context_shift a generation goes past its slot's context (the slot
 * shifts, hearth_context_shift) and ends at max_tokens; a later request on
 * that slot reuses only the kept prefix, so it gives what a fresh engine
 * gives. */
static void test_context_shift(hearth_model *m) {
    hearth_engine_params ep = hearth_engine_default_params();
    ep.ctx.n_seq_max = 1;
    ep.ctx.n_ctx = 64;
    ep.ctx.n_threads = 2;
    ep.ctx.flash_attn = HEARTH_FLASH_ATTN_OFF;
    ep.context_shift = true;
    ep.n_keep = 4;
    hearth_engine *e = NULL;
    CHECK_MSG(hearth_engine_init(m, &ep, &e) == HEARTH_OK, "engine: %s", hearth_last_error());
    if (!e) return;
    static collect a, b, fresh;
    hearth_request_params p = greedy(&a, 150);
    p.prompt = PROMPT;
    p.ignore_eos = true;
    CHECK(hearth_engine_submit(e, &p, NULL) == HEARTH_OK);
    wait_done(&a);
    CHECK_MSG(a.finish == HEARTH_FINISH_LENGTH && a.n_tokens == 150, "finish %d after %d tokens", (int)a.finish,
              a.n_tokens);
    p = greedy(&b, 16);
    p.prompt = PROMPT;
    CHECK(hearth_engine_submit(e, &p, NULL) == HEARTH_OK);
    wait_done(&b);
    hearth_engine_free(e);
    e = new_engine(m, 1, 64, 4);
    p = greedy(&fresh, 16);
    p.prompt = PROMPT;
    CHECK(hearth_engine_submit(e, &p, NULL) == HEARTH_OK);
    wait_done(&fresh);
    hearth_engine_free(e);
    CHECK_MSG(b.n_cached <= 4 + 1 && same_tokens(&b, &fresh), "after a shift: %d cached, tokens %s", (int)b.n_cached,
              same_tokens(&b, &fresh) ? "equal" : "differ");
}

/* A conversation goes through the model's chat template. */
static void test_chat(hearth_model *m, hearth_engine *e) {
    static collect c;
    const hearth_chat_message msgs[1] = {{"user", "What is the capital of France?"}};
    hearth_request_params p = greedy(&c, 16);
    p.messages = msgs;
    p.n_messages = 1;
    CHECK(hearth_engine_submit(e, &p, NULL) == HEARTH_OK);
    wait_done(&c);
    char *text = NULL;
    CHECK(hearth_chat_render(m, NULL, msgs, 1, &text) == HEARTH_OK);
    size_t n = 0;
    int32_t toks[256];
    CHECK(hearth_tokenize(m, text, strlen(text), true, true, toks, 256, &n) == HEARTH_OK);
    CHECK(c.n_prompt == (int32_t)n && c.len > 0);
    hearth_chat_free(text);
}

int main(void) {
    hearth_model *m = NULL;
    if (hearth_model_load(check_model_path(), NULL, &m) != HEARTH_OK) {
        fprintf(stderr, "load: %s\n", hearth_last_error());
        return 1;
    }
    /* HEARTH_TEST_SHORT (the sanitizer runs, where decoding is slow):
     * only the tests where threads meet (cancel, queue, free) */
    if (!getenv("HEARTH_TEST_SHORT")) {
        test_reference(m);
        hearth_engine *e = new_engine(m, 2, 512, 8);
        test_stop(e);
        test_logprobs(e);
        test_chat(m, e);
        hearth_engine_free(e);
        test_prefix(m);
    }
    test_cancel(m);
    test_pause(m);
    test_errors_and_free(m);
    test_context_shift(m);
    hearth_model_free(m);
    return check_report();
}
