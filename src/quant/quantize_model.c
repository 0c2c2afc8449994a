/* Model quantization (quantize_model.h, hearth_model_quantize in hearth.h),
 * following llama.cpp's llama_model_quantize_impl (src/llama-quant.cpp):
 *   1. open the input with the validating reader (hl_gguf_open);
 *   2. plan every tensor's output type with the mix rules (quant_mix.c);
 *   3. refuse what cannot work before any file exists: requantizing without
 *      leave, upgrading an already quantized file, types this build cannot
 *      read or write yet;
 *   4. write the output with the streaming writer (gguf_write.c) into a
 *      temporary file: metadata copied with general.file_type and
 *      general.quantization_version set, then each tensor converted slab by
 *      slab (rows dequantized with the source type's to_float, quantized with
 *      the destination's from_float, rows split over the threads) or copied
 *      when its type does not change;
 *   5. rename the finished file into place; on failure the writer deletes it. */
#include "quant/quantize_model.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/status.h"
#include "base/threadpool.h"
#include "gguf/ggml_types.h"
#include "gguf/gguf.h"
#include "gguf/gguf_write.h"
#include "quant/quant.h"
#include "quant/quant_mix.h"

/* GGML_QNT_VERSION (ggml.h): the version of the quantized block layouts. */
#define QNT_VERSION 2
/* Output bytes converted per pass: bounds the memory used, whatever the
 * model size. */
#define SLAB_BYTES (16u << 20)

typedef struct quantizer {
    const hearth_quantize_params *p;
    const hl_mix *mix;
    gguf_file *in;
    size_t n;
    hl_mix_tensor *plan; /* [n] in file order */
    char (*names)[64];   /* [n] NUL-terminated tensor names */
    gguf_writer *w;
    hl_pool *pool;
    int n_threads;
    uint8_t *dst; /* slab of output rows */
    size_t dst_cap;
    float *rows; /* [n_threads][rows_cap] one F32 row per thread */
    size_t rows_cap;
} quantizer;

/* "q4_K" -> "Q4_K" for messages (mix names are upper case). */
static const char *upper_name(uint32_t type, char buf[16]) {
    const ggml_type_info *ti = hl_ggml_type_get(type);
    snprintf(buf, 16, "%s", ti ? ti->name : "?");
    for (char *c = buf; *c; c++) *c = (char)toupper((unsigned char)*c);
    return buf;
}

static bool is_quantized(uint32_t type) { return hl_ggml_type_get(type)->blck_size > 1; }

static double bits_per_weight(uint32_t type) {
    const ggml_type_info *ti = hl_ggml_type_get(type);
    return 8.0 * ti->type_size / ti->blck_size;
}

/* ------------------------------------------------------ model facts -- */

/* An integer fact, or the first element of a per-layer integer array;
 * `def` when absent or of another type. The rules only need rough facts. */
static uint32_t u32_fact(const gguf_file *f, const char *key, uint32_t def) {
    const gguf_kv *kv = hl_gguf_find_kv(f, key);
    if (!kv) return def;
    const gguf_value *v = &kv->value;
    if (v->type == GGUF_TYPE_UINT8 || v->type == GGUF_TYPE_UINT16 || v->type == GGUF_TYPE_UINT32 ||
        v->type == GGUF_TYPE_UINT64)
        return v->v.u64 <= UINT32_MAX ? (uint32_t)v->v.u64 : def;
    if (v->type == GGUF_TYPE_INT8 || v->type == GGUF_TYPE_INT16 || v->type == GGUF_TYPE_INT32 ||
        v->type == GGUF_TYPE_INT64)
        return v->v.i64 >= 0 && v->v.i64 <= UINT32_MAX ? (uint32_t)v->v.i64 : def;
    if (v->type == GGUF_TYPE_ARRAY && v->v.arr.n > 0) {
        if (v->v.arr.elem_type == GGUF_TYPE_UINT32) return hl_gguf_arr_u32(&v->v.arr, 0);
        if (v->v.arr.elem_type == GGUF_TYPE_INT32 && hl_gguf_arr_i32(&v->v.arr, 0) >= 0)
            return (uint32_t)hl_gguf_arr_i32(&v->v.arr, 0);
    }
    return def;
}

/* What llama_model::load_hparams would tell llama-quant.cpp. */
static hearth_status model_facts(const quantizer *q, hl_mix_model *m) {
    gguf_str arch = {"", 0};
    HL_TRY(hl_gguf_get_str(q->in, "general.architecture", false, &arch));
    char key[160];
#define ARCH_KEY(suffix)                                                                                               \
    (snprintf(key, sizeof key, "%.*s." suffix, (int)(arch.len < 100 ? arch.len : 100), arch.data), key)
    uint32_t n_head = u32_fact(q->in, ARCH_KEY("attention.head_count"), 0);
    uint32_t n_head_kv = u32_fact(q->in, ARCH_KEY("attention.head_count_kv"), n_head);
    uint32_t n_layer = u32_fact(q->in, ARCH_KEY("block_count"), 0);
    uint32_t n_expert = u32_fact(q->in, ARCH_KEY("expert_count"), 0);
#undef ARCH_KEY
    if (n_layer == 0) { /* no block_count: count the blk.N. layers */
        for (size_t i = 0; i < q->n; i++) {
            int il = -1;
            if (sscanf(q->names[i], "blk.%d.", &il) == 1 && il >= 0 && (uint32_t)il >= n_layer)
                n_layer = (uint32_t)il + 1;
        }
    }
    *m = (hl_mix_model){
        .falcon = hl_gguf_str_eq(arch, "falcon"),
        /* llama_quant_model_from_metadata: only LLM_TYPE_70B matters */
        .is_70b = hl_gguf_str_eq(arch, "llama") && n_layer == 80 && n_head != n_head_kv,
        .n_gqa = n_head_kv ? n_head / n_head_kv : 0,
        .n_expert = n_expert,
        .n_layer = n_layer == 0          ? 1
                   : n_layer > INT32_MAX ? INT32_MAX
                                         : (int32_t)n_layer,
    };
    return HEARTH_OK;
}

/* --------------------------------------------------------------- plan -- */

static hearth_status make_plan(quantizer *q) {
    q->n = (size_t)hl_gguf_n_tensors(q->in);
    q->plan = hl_calloc(q->n, sizeof *q->plan);
    q->names = hl_calloc(q->n, sizeof *q->names);
    if (!q->plan || !q->names) return HEARTH_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < q->n; i++) {
        const gguf_tensor *t = hl_gguf_tensor_at(q->in, i);
        /* the reader guarantees at most 63 bytes and no NUL */
        memcpy(q->names[i], t->name.data, (size_t)t->name.len);
        q->names[i][t->name.len] = '\0';
        q->plan[i] = (hl_mix_tensor){.name = q->names[i], .n_dims = t->n_dims, .ne0 = t->ne[0], .type = t->type};
    }
    hl_mix_model m;
    HL_TRY(model_facts(q, &m));
    return hl_mix_plan(q->mix, &m, q->plan, q->n);
}

/* The input's quantization for messages: its general.file_type when that is
 * a quantized mix, else its most common quantized tensor type by elements. */
static const char *input_kind(const quantizer *q, char buf[16]) {
    uint32_t ft = UINT32_MAX;
    if (hl_gguf_get_u32(q->in, "general.file_type", false, &ft) != HEARTH_OK) hl_clear_error();
    const hl_mix *mix = hl_mix_by_ftype(ft);
    if (mix && is_quantized(hl_mix_base(mix))) return hl_mix_name(mix);
    double elems[GGML_TYPE_COUNT] = {0};
    uint32_t best = GGML_TYPE_F32;
    for (size_t i = 0; i < q->n; i++) {
        const gguf_tensor *t = hl_gguf_tensor_at(q->in, i);
        if (!is_quantized(t->type)) continue;
        elems[t->type] += (double)t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        if (best == GGML_TYPE_F32 || elems[t->type] > elems[best]) best = t->type;
    }
    return upper_name(best, buf);
}

/* Converting a quantized tensor again cannot bring back what was rounded away
 * (to more bits) and compounds two rounding errors (to as many or fewer), so
 * it is refused unless allow_requantize (llama.cpp's --allow-requantize),
 * which still has uses: a requantized file has the speed of the real one. */
static hearth_status check_requantize(const quantizer *q) {
    bool requant = false, more_bits = false;
    for (size_t i = 0; i < q->n; i++) {
        const hl_mix_tensor *t = &q->plan[i];
        if (t->new_type == t->type || !is_quantized(t->type)) continue;
        requant = true;
        more_bits |= bits_per_weight(t->new_type) > bits_per_weight(t->type);
    }
    if (!requant) return HEARTH_OK;
    char kind[16];
    if (!q->p->allow_requantize && more_bits)
        return hl_fail(HEARTH_ERR_INVALID_ARG,
                       "input is already %s; quantizing it to %s cannot "
                       "restore precision: start from an F16/F32/BF16 file",
                       input_kind(q, kind), hl_mix_name(q->mix));
    if (!q->p->allow_requantize)
        return hl_fail(HEARTH_ERR_INVALID_ARG,
                       "input is already %s; requantizing it to %s adds a "
                       "second rounding error: start from an F16/F32/BF16 file, or allow it "
                       "(--allow-requantize)",
                       input_kind(q, kind), hl_mix_name(q->mix));
    HL_WARN("input is already %s: requantizing it to %s gives a worse model than quantizing the "
            "F16/F32/BF16 original",
            input_kind(q, kind), hl_mix_name(q->mix));
    return HEARTH_OK;
}

/* Every conversion needs the source's to_float and the destination's
 * from_float (hl_quant_get); formats land in src/quant/ one by one. */
static hearth_status check_types(const quantizer *q) {
    char a[16], b[16];
    for (size_t i = 0; i < q->n; i++) {
        const hl_mix_tensor *t = &q->plan[i];
        if (t->new_type != t->type && !hl_quant_get(t->new_type))
            return hl_fail(HEARTH_ERR_UNSUPPORTED, "type %s needs %s, which this build cannot write yet",
                           hl_mix_name(q->mix), upper_name(t->new_type, a));
    }
    for (size_t i = 0; i < q->n; i++) {
        const hl_mix_tensor *t = &q->plan[i];
        if (t->new_type != t->type && !hl_quant_get(t->type))
            return hl_fail(HEARTH_ERR_UNSUPPORTED,
                           "tensor '%s' is %s, which this build cannot read yet "
                           "(to convert it to %s)",
                           t->name, upper_name(t->type, a), upper_name(t->new_type, b));
    }
    return HEARTH_OK;
}

/* ---------------------------------------------------------- convert -- */

/* Threads a conversion uses at most (more would only contend for memory). */
#define MAX_CONVERT_THREADS 256

typedef struct convert_job {
    hl_to_float_fn to_float;
    hl_from_float_fn from_float;
    const uint8_t *src; /* first row of the slab */
    size_t src_row, dst_row;
    uint8_t *dst;
    int64_t ne0, nrows;
    float *rows;                      /* [nth][ne0] */
    int64_t bad[MAX_CONVERT_THREADS]; /* per share: first row (in the slab) with NaN/inf, or -1 */
} convert_job;

static void convert_task(void *arg, int ith, int nth) {
    convert_job *j = arg;
    float *row = j->rows + (size_t)ith * (size_t)j->ne0;
    long long r0, r1;
    hl_split(j->nrows, ith, nth, &r0, &r1);
    j->bad[ith] = -1;
    for (long long r = r0; r < r1; r++) {
        j->to_float(j->src + (size_t)r * j->src_row, row, j->ne0);
        for (int64_t c = 0; c < j->ne0; c++) {
            if (!isfinite(row[c])) {
                j->bad[ith] = r;
                return;
            }
        }
        j->from_float(row, j->dst + (size_t)r * j->dst_row, j->ne0);
    }
}

static hearth_status grow(void **buf, size_t *cap, size_t need) {
    if (need <= *cap) return HEARTH_OK;
    free(*buf);
    *buf = hl_malloc(need);
    *cap = *buf ? need : 0;
    return *buf ? HEARTH_OK : HEARTH_ERR_OUT_OF_MEMORY;
}

static hearth_status convert_tensor(quantizer *q, size_t i) {
    const gguf_tensor *t = hl_gguf_tensor_at(q->in, i);
    const hl_mix_tensor *pt = &q->plan[i];
    if (pt->new_type == t->type) return hl_gguf_writer_write(q->w, t->data, (size_t)t->size);

    const int64_t ne0 = t->ne[0], nrows = t->ne[1] * t->ne[2] * t->ne[3];
    convert_job j = {
        .to_float = hl_quant_get(t->type)->to_float,
        .from_float = hl_quant_get(pt->new_type)->from_float,
        .src_row = hl_row_size(t->type, ne0),
        .dst_row = hl_row_size(pt->new_type, ne0),
        .ne0 = ne0,
    };
    int64_t slab_rows = (int64_t)(SLAB_BYTES / j.dst_row);
    if (slab_rows < 1) slab_rows = 1;
    if (slab_rows > nrows) slab_rows = nrows;
    HL_TRY(grow((void **)&q->dst, &q->dst_cap, (size_t)slab_rows * j.dst_row));
    HL_TRY(grow((void **)&q->rows, &q->rows_cap, (size_t)q->n_threads * (size_t)ne0 * sizeof(float)));
    j.dst = q->dst;
    j.rows = q->rows;
    for (int64_t r0 = 0; r0 < nrows; r0 += slab_rows) {
        j.nrows = nrows - r0 < slab_rows ? nrows - r0 : slab_rows;
        j.src = (const uint8_t *)t->data + (size_t)r0 * j.src_row;
        int nth = j.nrows < q->n_threads ? (int)j.nrows : q->n_threads;
        hl_pool_run(q->pool, nth, convert_task, &j);
        for (int k = 0; k < nth; k++) {
            if (j.bad[k] >= 0)
                return hl_fail(HEARTH_ERR_FORMAT,
                               "tensor '%s': row %" PRId64 " holds NaN or infinity: "
                               "the input is damaged",
                               pt->name, r0 + j.bad[k]);
        }
        HL_TRY(hl_gguf_writer_write(q->w, j.dst, (size_t)j.nrows * j.dst_row));
    }
    return HEARTH_OK;
}

/* ------------------------------------------------------------ output -- */

static void report(const quantizer *q, size_t i, bool done) {
    if (!q->p->progress) return;
    const gguf_tensor *t = hl_gguf_tensor_at(q->in, i);
    const hl_mix_tensor *pt = &q->plan[i];
    hearth_quantize_progress pr = {
        .i_tensor = (uint32_t)i,
        .n_tensors = (uint32_t)q->n,
        .name = pt->name,
        .src_type = hl_ggml_type_get(t->type)->name,
        .dst_type = hl_ggml_type_get(pt->new_type)->name,
        .n_dims = t->n_dims,
        .ne = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]},
        .src_bytes = t->size,
        .dst_bytes = (uint64_t)hl_row_size(pt->new_type, t->ne[0]) * (uint64_t)(t->ne[1] * t->ne[2] * t->ne[3]),
        .done = done,
    };
    q->p->progress(&pr, q->p->progress_user);
}

static hearth_status write_header(quantizer *q, const char *out_path) {
    HL_TRY(hl_gguf_writer_create(out_path, 0, &q->w));
    HL_TRY(hl_gguf_writer_copy_kvs(q->w, q->in));
    /* as llama_model_quantize_impl: the new file type and quantization
     * version; a merged file is no longer a split */
    HL_TRY(hl_gguf_writer_set_u32(q->w, "general.quantization_version", QNT_VERSION));
    HL_TRY(hl_gguf_writer_set_u32(q->w, "general.file_type", hl_mix_ftype(q->mix)));
    hl_gguf_writer_remove(q->w, "split.no");
    hl_gguf_writer_remove(q->w, "split.count");
    hl_gguf_writer_remove(q->w, "split.tensors.count");
    for (size_t i = 0; i < q->n; i++) {
        const gguf_tensor *t = hl_gguf_tensor_at(q->in, i);
        HL_TRY(hl_gguf_writer_add_tensor(q->w, q->names[i], q->plan[i].new_type, t->n_dims, t->ne));
    }
    return hl_gguf_writer_begin_data(q->w);
}

static hearth_status run(quantizer *q, const char *in_path, const char *out_path) {
    HL_TRY(hl_gguf_open(in_path, &q->in));
    uint32_t n_split = 1;
    HL_TRY(hl_gguf_get_u32(q->in, "split.count", false, &n_split));
    if (n_split > 1)
        return hl_fail(HEARTH_ERR_UNSUPPORTED,
                       "'%s' is one of %u split files: merge them first "
                       "(llama-gguf-split --merge)",
                       in_path, n_split);
    HL_TRY(make_plan(q));
    HL_TRY(check_requantize(q));
    size_t n_fallback = 0;
    for (size_t i = 0; i < q->n; i++) {
        if (!q->plan[i].fallback) continue;
        n_fallback++;
        HL_INFO("%s: %" PRId64 " columns are not a multiple of the block size of the type the rules "
                "give it: falling back to %s",
                q->plan[i].name, q->plan[i].ne0, hl_ggml_type_get(q->plan[i].new_type)->name);
    }
    if (q->p->dry_run) {
        for (size_t i = 0; i < q->n; i++) {
            report(q, i, false);
            report(q, i, true);
        }
        return HEARTH_OK;
    }
    HL_TRY(check_types(q));

    q->n_threads = q->p->n_threads > 0 ? q->p->n_threads : (int)hl_cpu_physical_cores();
    if (q->n_threads > MAX_CONVERT_THREADS) q->n_threads = MAX_CONVERT_THREADS;
    HL_TRY(hl_pool_init(q->n_threads, &q->pool));
    HL_TRY(write_header(q, out_path));
    for (size_t i = 0; i < q->n; i++) {
        report(q, i, false);
        HL_TRY(convert_tensor(q, i));
        report(q, i, true);
    }
    HL_TRY(hl_gguf_writer_commit(q->w));
    if (n_fallback)
        HL_INFO("%zu of %zu tensors needed a fallback type (as llama.cpp's tensor_type_fallback)", n_fallback, q->n);
    return HEARTH_OK;
}

hearth_status hl_quantize_model(const char *in_path, const char *out_path, const hearth_quantize_params *p) {
    const hl_mix *mix = hl_mix_by_ftype((uint32_t)p->ftype);
    if (!mix) return hl_fail(HEARTH_ERR_INVALID_ARG, "quantize: %d is not a quantization type", (int)p->ftype);
    if (p->n_threads < 0)
        return hl_fail(HEARTH_ERR_INVALID_ARG, "quantize: n_threads is %d (0 = all cores)", (int)p->n_threads);
    quantizer q = {.p = p, .mix = mix};
    hearth_status st = run(&q, in_path, out_path);
    hl_gguf_writer_free(q.w); /* deletes the temporary file unless committed */
    hl_pool_free(q.pool);
    hl_gguf_close(q.in);
    free(q.plan);
    free(q.names);
    free(q.dst);
    free(q.rows);
    return st;
}

/* ------------------------------------------------------------ public -- */

hearth_quantize_params hearth_quantize_default_params(void) {
    return (hearth_quantize_params){.ftype = HEARTH_FTYPE_MOSTLY_Q8_0};
}

const char *hearth_ftype_name(hearth_ftype ftype) {
    const hl_mix *mix = hl_mix_by_ftype((uint32_t)ftype);
    return mix ? hl_mix_name(mix) : NULL;
}

hearth_status hearth_ftype_from_name(const char *name, hearth_ftype *out) {
    if (!out) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_ftype_from_name: out is NULL");
    const hl_mix *mix = hl_mix_find(name);
    if (mix) {
        *out = (hearth_ftype)hl_mix_ftype(mix);
        return HEARTH_OK;
    }
    char list[256] = "";
    for (size_t i = 0; i < hl_mix_count(); i++) {
        size_t len = strlen(list);
        snprintf(list + len, sizeof list - len, "%s%s", i ? ", " : "", hl_mix_name(hl_mix_at(i)));
    }
    return hl_fail(HEARTH_ERR_INVALID_ARG, "unknown type '%s' (valid types: %s)", name ? name : "(null)", list);
}

hearth_status hearth_model_quantize(const char *in_path, const char *out_path, const hearth_quantize_params *params) {
    hearth_quantize_params def = hearth_quantize_default_params();
    const hearth_quantize_params *p = params ? params : &def;
    if (!in_path) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_model_quantize: in_path is NULL");
    if (!out_path && !p->dry_run) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_model_quantize: out_path is NULL");
    hl_clear_error();
    return hl_quantize_model(in_path, out_path, p);
}
