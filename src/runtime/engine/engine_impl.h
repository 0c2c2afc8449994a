/* The engine's state, shared by its files: engine.c (creation, the thread,
 * the step), request.c (submitting, cancelling, the wait queue), output.c
 * (sampling a request's token and turning it into pieces: logprobs, UTF-8,
 * stop strings), embed.c (an embeddings engine's requests and step) and
 * stats.c (counters and latency histograms).
 *
 * Locking: `mu` guards the queue, the cancel flags, the published slot
 * states and the counters. The engine thread owns the context and the
 * slots' working state and calls piece callbacks without holding `mu`, so
 * a callback may call hearth_engine_cancel() or hearth_engine_submit(). */
#ifndef HEARTH_RUNTIME_ENGINE_IMPL_H
#define HEARTH_RUNTIME_ENGINE_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/clock.h"
#include "hearth.h"
#include "runtime/toolcall/toolcall.h"

typedef struct hl_request {
    uint64_t id;
    int32_t *prompt; /* [n_prompt] */
    int32_t n_prompt;
    int32_t max_tokens; /* -1: until the slot is full */
    hearth_sampler *smpl;
    char **stop; /* [n_stop] NUL-terminated, non-empty */
    size_t n_stop;
    bool logprobs, ignore_eos;
    int32_t top_logprobs;
    hearth_piece_fn on_piece;
    void *user;
    /* with tools: the split of the text into content and calls, and the
     * request's own detokenizer (special tokens written out: the format's
     * markers, such as Mistral's [TOOL_CALLS], are special tokens) */
    hl_tool_parser *tools;
    hearth_detok *detok;
    double t_submit, t_last; /* seconds (monotonic): submitted, last token sampled */
    bool cancel;             /* under mu */
    bool paused;             /* under mu: hearth_engine_pause() */
    struct hl_request *next; /* the wait queue */
} hl_request;

typedef struct hl_slot {
    int32_t seq;         /* its sequence in the context (= slot id) */
    hl_request *req;     /* NULL: idle */
    bool cancel, paused; /* copied from req->cancel, req->paused at the step's start */
    hearth_slot_state state;
    int32_t *cache; /* [n_ctx_seq] the tokens whose KV the sequence holds: cache[0, n_past) */
    uint32_t n_past;
    /* after a context shift, cache[0, n_exact) alone holds the KV a fresh
     * decode of its tokens would: later requests reuse no more */
    bool shifted;
    uint32_t n_exact;
    int32_t n_cached; /* prompt tokens reused from the cache */
    int32_t n_generated;
    int32_t next;       /* GENERATE: the sampled token the next step decodes */
    int32_t out;        /* this step: the batch index of its logits, -1: none */
    uint64_t last_used; /* the step it last ran in (least recently used goes first) */
    hearth_detok *detok;
    char *hold; /* [cap_hold] text held back: it could still begin a stop string */
    size_t n_hold, cap_hold;
} hl_slot;

/* An embedding call (embed.c), on its caller's stack while it waits: its
 * sequences are queued as hl_embed_seq items; the engine thread counts them
 * down and wakes the caller when n_left reaches 0. */
typedef struct hl_embed_call {
    int32_t n_left;   /* under mu */
    hearth_status st; /* under mu: the first failure of its sequences */
    char err[512];    /* its message */
} hl_embed_call;

typedef struct hl_embed_seq {
    hl_embed_call *call;
    const int32_t *tokens; /* [n_tokens], the caller's */
    int32_t n_tokens;
    float *out; /* [n_embd], the caller's */
    struct hl_embed_seq *next;
} hl_embed_seq;

/* Exponential moving averages of step costs, seconds: they size the prompt
 * chunk of a step that also decodes running streams. */
typedef struct hl_step_cost {
    double decode_step;  /* a step of generating tokens only */
    double prompt_token; /* one prompt token of a step */
} hl_step_cost;

struct hearth_engine {
    hearth_model *model;
    hearth_context *ctx;
    char *chat_template; /* NULL: the model's */
    int32_t n_slots, n_batch, n_queue_max;
    uint32_t n_ctx_seq;
    bool context_shift; /* hearth_engine_params' */
    int32_t n_keep;
    hl_slot *slots; /* [n_slots] */
    /* one step's batch, [n_batch] */
    int32_t *tok, *pos, *seq;
    int8_t *want;
    hl_request **admit; /* [n_slots] requests taking a slot this step */
    hl_step_cost cost;
    uint64_t step;

    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    bool quit;
    hl_request *head, *tail;   /* waiting, first come first served */
    int32_t n_waiting, n_idle; /* n_idle: slots without a request (as of the last step) */
    uint64_t next_id;
    hearth_engine_stats stats; /* under mu */
    hearth_slot_info *info;    /* [n_slots] published after each step, under mu */

    /* an embeddings engine (params.ctx.embeddings): embed.c's queue */
    bool embeddings;
    int32_t pooling, n_embd;     /* the context's pooling (resolved), a sequence's floats (n_cls_out for RANK) */
    int32_t n_embd_batch;        /* tokens of one step: n_batch and n_ubatch (a sequence is whole in a pass) */
    hl_embed_seq *ehead, *etail; /* under mu: sequences waiting, first come first served */
    int32_t n_embed_callers;     /* under mu: threads inside hearth_engine_embed*() */
    pthread_cond_t embed_done;   /* a call's sequences are done, or a caller left */
};

/* request.c */
void hl_request_free(hl_request *r);
/* Unlinks and returns the first waiting request (mu held), or NULL. */
hl_request *hl_queue_pop(hearth_engine *e);

/* output.c */
/* Sends the request's last piece: `pc` (its finish, token, logprobs,
 * error) with the text the slot still holds; frees the request and makes
 * the slot idle. */
void hl_slot_finish(hearth_engine *e, hl_slot *s, hearth_piece pc);
/* Samples the slot's next token from `logits` and delivers it. */
void hl_slot_sample(hearth_engine *e, hl_slot *s, const float *logits);
/* The last piece of a request that never reached a slot. */
void hl_request_cancelled(hl_request *r);

/* embed.c */
/* Under mu: whether embedding sequences wait. */
bool hl_embed_pending(const hearth_engine *e);
/* One step of an embeddings engine (mu not held): the waiting sequences,
 * up to n_slots and n_batch tokens, in one forward pass. */
void hl_embed_step(hearth_engine *e);
/* At the thread's end: every waiting sequence's call ends CANCELLED. */
void hl_embed_cancel_all(hearth_engine *e);
/* In hearth_engine_free, after the thread ended: waits for the callers
 * still inside hearth_engine_embed*() to leave. */
void hl_embed_drain(hearth_engine *e);

/* stats.c */
void hl_stats_init(hearth_engine_stats *st, int32_t n_slots, uint32_t n_ctx);
void hl_hist_observe(hearth_histogram *h, double seconds);

#endif
