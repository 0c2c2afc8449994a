/* The forward pass shared by every architecture: embedding lookup, the
 * blocks in order (each architecture supplies its block), then the final
 * norm and output matrix for the last token; and the query/key/value
 * projections the blocks share. */
#include "model/model.h"

void hl_attn_qkv(const hearth_model *m, hl_backend *b, hl_work *w, const hl_layer *l) {
    const hl_backend_i *op = b->iface;
    op->matmul(b, &l->wq, &w->xb, &w->q);
    op->matmul(b, &l->wk, &w->xb, &w->k);
    op->matmul(b, &l->wv, &w->xb, &w->v);
    if (l->bq.data) op->add(b, &w->q, &l->bq);
    if (l->bk.data) op->add(b, &w->k, &l->bk);
    if (l->bv.data) op->add(b, &w->v, &l->bv);
    if (l->attn_q_norm.data) op->rms_norm(b, &w->q, &l->attn_q_norm, m->hp.norm_eps, &w->q);
    if (l->attn_k_norm.data) op->rms_norm(b, &w->k, &l->attn_k_norm, m->hp.norm_eps, &w->k);
}

/* A view of rows [r, r+n) of a 2-D activation. */
static hl_tensor rows_of(const hl_tensor *t, int64_t r, int64_t n) {
    hl_tensor v = *t;
    v.data = (float *)t->data + r * t->ne[0];
    v.ne[1] = n;
    return v;
}

void hl_model_forward(const hearth_model *m, hl_backend *b, hl_work *w, const int32_t *tokens, int32_t n, int32_t pos0,
                      bool logits) {
    const hl_hparams *hp = &m->hp;
    const hl_backend_i *op = b->iface;
    hl_tensor *acts[] = {&w->x, &w->xb, &w->q, &w->k, &w->v, &w->att, &w->gate, &w->up};
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) acts[i]->ne[1] = n;

    op->get_rows(b, &m->tok_embd, tokens, &w->x);
    if (hp->embd_scale != 1.0f) op->scale(b, &w->x, hp->embd_scale);
    for (int32_t il = 0; il < hp->n_layer; il++) m->arch->layer(m, b, w, il, pos0);
    if (logits) {
        hl_tensor last_in = rows_of(&w->x, n - 1, 1);
        op->rms_norm(b, &last_in, &m->output_norm, hp->norm_eps, &w->last);
        op->matmul(b, &m->output, &w->last, &w->logits);
    }
    op->synchronize(b);
}
