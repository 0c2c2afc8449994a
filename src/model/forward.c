/* The forward pass shared by every architecture: embedding lookup on the
 * host (plus learned position embeddings where the model has them), the
 * blocks in order on the backends of their stages (each
 * architecture supplies its block), then the final norm and output matrix
 * for the last token; the pipeline of stages a placement implies; and the
 * query/key/value projections the blocks share. */
#include "backend/ops.h"
#include "model/model.h"

_Static_assert(2 * HL_MAX_STAGES <= HL_GRAPH_KEYS, "a graph record per stage and logits (hl_forward)");

hearth_status hl_attn_qkv(const hearth_model *m, hl_backend *b, hl_work *w, const hl_layer *l) {
    const hl_tensor *weights[3] = {&l->wq, &l->wk, &l->wv};
    hl_tensor *out[3] = {&w->q, &w->k, &w->v};
    HL_TRY(hl_matmul_n(b, 3, weights, &w->xb, out));
    if (l->bq.data) HL_TRY(hl_add(b, &w->q, &l->bq));
    if (l->bk.data) HL_TRY(hl_add(b, &w->k, &l->bk));
    if (l->bv.data) HL_TRY(hl_add(b, &w->v, &l->bv));
    if (l->attn_q_norm.data) HL_TRY(hl_rms_norm(b, &w->q, &l->attn_q_norm, m->hp.norm_eps, &w->q));
    if (l->attn_k_norm.data) HL_TRY(hl_rms_norm(b, &w->k, &l->attn_k_norm, m->hp.norm_eps, &w->k));
    return HEARTH_OK;
}

hl_attn_args hl_layer_attn(const hearth_model *m, hl_work *w, int32_t il, float scale) {
    const hl_hparams *hp = &m->hp;
    return (hl_attn_args){
        .q = &w->q,
        .k_cache = &w->k_cache[il],
        .v_cache = &w->v_cache[il],
        .out = &w->att,
        .n_head = hp->n_head,
        .n_head_kv = hp->n_head_kv,
        .head_dim = hp->head_dim,
        .n_swa = hl_layer_window(hp, il),
        .scale = scale,
        .max_bias = hp->max_alibi_bias,
        .bidirectional = m->arch->bidirectional,
    };
}

/* A view of rows [r, r+n) of a 2-D F32 activation, with the capacity left
 * after row r. */
static hl_tensor rows_of(const hl_tensor *t, int64_t r, int64_t n) {
    hl_tensor v = *t;
    const size_t skip = (size_t)(r * t->ne[0]) * sizeof(float);
    v.data = (float *)t->data + r * t->ne[0];
    v.ne[1] = n;
    if (t->capacity) v.capacity = t->capacity > skip ? t->capacity - skip : 1; /* 1: nothing fits */
    return v;
}

hl_work *hl_work_outputs(const hearth_model *m, int32_t il, hl_work *w, hl_work *view) {
    if (il != m->hp.n_layer - 1 || w->out_tail == 0) return w;
    *view = *w;
    const int64_t n = w->x.ne[1] - w->out_tail;
#define VIEW_ROWS(name, width) view->name = rows_of(&w->name, w->out_tail, n);
    HL_WORK_ACTIVATIONS(VIEW_ROWS)
#undef VIEW_ROWS
    view->out_tail = 0;
    return view;
}

/* The first of the pass's output rows where they are its last n_out rows
 * and 1 <= n_out < n, else 0 (hl_work.out_tail). */
static int32_t out_tail(const hl_pass *pass) {
    if (pass->n_out < 1 || pass->n_out >= pass->n) return 0;
    const int32_t first = pass->n - pass->n_out;
    for (int32_t j = 0; j < pass->n_out; j++)
        if (pass->out[j] != first + j) return 0;
    return first;
}

void hl_pipeline_init(const hearth_model *m, hl_backend *host, hl_work *host_work, hl_backend *const *gpu,
                      hl_work *gpu_work, hl_pipeline *out) {
    *out = (hl_pipeline){.host = host, .host_work = host_work};
    int32_t dev = -2; /* device of the open stage; none yet */
    for (int32_t il = 0; il <= m->hp.n_layer; il++) {
        /* il == n_layer stands for the output layer: it opens a stage of
         * its own only where it sits on another device than the last block */
        const int32_t d = il < m->hp.n_layer ? m->layer_dev[il] : m->output_dev;
        if (d != dev) {
            out->stage[out->n_stages++] = (hl_stage){
                .b = d < 0 ? host : gpu[d], .w = d < 0 ? host_work : &gpu_work[d], .il0 = il, .il1 = il};
            dev = d;
        }
        if (il < m->hp.n_layer) out->stage[out->n_stages - 1].il1 = il + 1;
    }
}

typedef struct stage_pass {
    const hearth_model *m;
    const hl_stage *s;
    const hl_pass *pass;
    bool logits; /* this stage ends the pass with the output layer */
} stage_pass;

static hearth_status issue_stage(void *arg) {
    const stage_pass *p = arg;
    const hearth_model *m = p->m;
    hl_backend *b = p->s->b;
    hl_work *w = p->s->w;
    for (int32_t il = p->s->il0; il < p->s->il1; il++) HL_TRY(m->arch->layer(m, b, w, il));
    if (!p->logits) return HEARTH_OK;
    const int32_t r0 = p->pass->out_row0, n_out = p->pass->n_out;
    const hl_tensor last = rows_of(&w->last, r0, n_out);
    if (!m->output_norm.data) { /* an encoder's hidden states as they are */
        hl_tensor rows = last;
        return hl_get_rows(b, &w->x, p->pass->out, &rows);
    }
    for (int32_t j = 0; j < n_out; j++) {
        hl_tensor in = rows_of(&w->x, p->pass->out[j], 1), out = rows_of(&w->last, r0 + j, 1);
        const hl_tensor *bias = m->output_norm_b.data ? &m->output_norm_b : NULL; /* mpt's may be absent */
        HL_TRY(m->arch->norm == HL_OP_LAYER_NORM ? hl_layer_norm(b, &in, &m->output_norm, bias, m->hp.norm_eps, &out)
                                                 : hl_rms_norm(b, &in, &m->output_norm, m->hp.norm_eps, &out));
    }
    if (p->pass->embd) return HEARTH_OK;
    hl_tensor logits = rows_of(&w->logits, r0, n_out);
    HL_TRY(hl_matmul(b, &m->output, &last, &logits));
    return m->output_b.data ? hl_add(b, &logits, &m->output_b) : HEARTH_OK; /* gptj's lm_head bias */
}

static void set_tokens(hl_work *w, const hl_pass *pass) {
#define SET_N(name, width) w->name.ne[1] = pass->n;
    HL_WORK_ACTIVATIONS(SET_N)
#undef SET_N
    w->last.ne[1] = w->logits.ne[1] = pass->n_out;
    w->out_tail = out_tail(pass);
}

/* Moves the hidden state to the next stage's activations, through the host. */
static hearth_status cross(const hl_pipeline *p, const hl_stage *from, const hl_stage *to) {
    const size_t bytes = hl_tensor_nbytes(&to->w->x);
    float *host_x = p->host_work->x.data;
    if (from) {
        HL_TRY(hl_synchronize(from->b));
        if (from->w != p->host_work) HL_TRY(hl_download(from->b, host_x, from->w->x.data, bytes));
    }
    return to->w == p->host_work ? HEARTH_OK : hl_upload(to->b, to->w->x.data, host_x, bytes);
}

hearth_status hl_model_forward(const hearth_model *m, const hl_pipeline *p, const hl_pass *pass) {
    hl_backend *host = p->host;
    const int32_t n = pass->n;
    set_tokens(p->host_work, pass);
    HL_TRY(hl_get_rows(host, &m->tok_embd, pass->tokens, &p->host_work->x));
    if (m->hp.embd_scale != 1.0f) HL_TRY(hl_scale(host, &p->host_work->x, m->hp.embd_scale));
    if (m->tok_types.data) { /* bert: every token is of type 0, whose row is added (llama.cpp's type_row0) */
        hl_tensor row0 = rows_of(&p->host_work->xb, 0, 1);
        HL_TRY(hl_get_rows(host, &m->tok_types, (const int32_t[]){0}, &row0));
        HL_TRY(hl_add(host, &p->host_work->x, &row0));
    }
    if (m->pos_embd.data) { /* learned position embeddings (gpt2, bert), by way of xb */
        for (int32_t t = 0; t < n; t++)
            if (pass->pos[t] >= m->pos_embd.ne[1])
                return hl_fail(HEARTH_ERR_CONTEXT_FULL,
                               "position %d: %s has learned position embeddings for %lld "
                               "positions only (its context_length); use n_ctx <= %lld per sequence",
                               (int)pass->pos[t], m->arch->name, (long long)m->pos_embd.ne[1],
                               (long long)m->pos_embd.ne[1]);
        HL_TRY(hl_get_rows(host, &m->pos_embd, pass->pos, &p->host_work->xb));
        HL_TRY(hl_add(host, &p->host_work->x, &p->host_work->xb));
    }
    if (m->tok_norm.data) /* bloom: LayerNorm of the embeddings (llama.cpp's inp_norm) */
        HL_TRY(hl_layer_norm(host, &p->host_work->x, &m->tok_norm, &m->tok_norm_b, m->hp.norm_eps, &p->host_work->x));
    const hl_stage *prev = NULL;
    for (int32_t i = 0; i < p->n_stages; i++) {
        const hl_stage *s = &p->stage[i];
        set_tokens(s->w, pass);
        if (s->w != (prev ? prev->w : p->host_work)) HL_TRY(cross(p, prev, s));
        HL_TRY(hl_set_positions(s->b, pass->pos, pass->row0, n));
        stage_pass sp = {m, s, pass, pass->n_out > 0 && i == p->n_stages - 1};
        /* the output rows of a one-token pass starting at row 0 are always
         * {0}: the record holds (a later pass of a split batch runs eagerly).
         * One record per stage and logits: a GPU that runs two stages (blocks
         * kept on the host between them) must not replay the first's. */
        HL_TRY(n == 1 && pass->out_row0 == 0 ? hl_graph_run(s->b, 2 * i + sp.logits, issue_stage, &sp)
                                             : issue_stage(&sp));
        prev = s;
    }
    HL_TRY(hl_synchronize(prev->b));
    if (pass->n_out > 0 && prev->w != p->host_work) {
        const hl_tensor *from = pass->embd ? &prev->w->last : &prev->w->logits;
        const hl_tensor *to = pass->embd ? &p->host_work->last : &p->host_work->logits;
        const size_t row = (size_t)from->ne[0] * sizeof(float), skip = (size_t)pass->out_row0 * row;
        HL_TRY(
            hl_download(prev->b, (uint8_t *)to->data + skip, (uint8_t *)from->data + skip, (size_t)pass->n_out * row));
    }
    return hl_synchronize(host);
}
