/* Ollama's API beside generation (docs/api.md of ollama/ollama): GET /
 * ("Ollama is running"), GET /api/version, GET /api/tags and GET /api/ps
 * (the models served, and those loaded), POST /api/show (a model's
 * details, metadata and template), and POST /api/embed and /api/embeddings
 * on an embedding model (through the engine's batching, as /v1/embeddings). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server_impl.h"

#define HL_OLLAMA_VERSION "0.12.0" /* the Ollama API version whose shapes these follow */

void hl_handle_ollama_root(hl_call *call, hl_reply *rep) {
    (void)call;
    char *s = strdup("Ollama is running");
    *rep = (hl_reply){.status = s ? 200 : 0,
                      .api = rep->api,
                      .content_type = "text/plain; charset=utf-8",
                      .body = s,
                      .len = s ? strlen(s) : 0};
}

void hl_handle_ollama_version(hl_call *call, hl_reply *rep) {
    (void)call;
    cJSON *o = cJSON_CreateObject();
    if (o && !cJSON_AddStringToObject(o, "version", HL_OLLAMA_VERSION)) {
        cJSON_Delete(o);
        o = NULL;
    }
    hl_reply_json(rep, 200, o);
}

/* "llama 135M Q4_1" (hearth_model_desc) into family, size and quantization. */
static bool add_details(cJSON *obj, const hearth_model *m) {
    char family[64] = "", size[32] = "", quant[32] = "";
    sscanf(hearth_model_desc(m), "%63s %31s %31s", family, size, quant);
    cJSON *d = cJSON_CreateObject(), *families = cJSON_CreateArray();
    bool ok = d && families && cJSON_AddItemToObject(obj, "details", d);
    if (!ok) cJSON_Delete(d);
    ok = ok && cJSON_AddItemToObject(d, "families", families);
    if (!ok) cJSON_Delete(families);
    return ok && cJSON_AddStringToObject(d, "parent_model", "") && cJSON_AddStringToObject(d, "format", "gguf") &&
           cJSON_AddStringToObject(d, "family", family) && cJSON_AddItemToArray(families, cJSON_CreateString(family)) &&
           cJSON_AddStringToObject(d, "parameter_size", size) &&
           cJSON_AddStringToObject(d, "quantization_level", quant);
}

static bool add_time(cJSON *o, const char *key, time_t t) {
    char at[40];
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return cJSON_AddStringToObject(o, key, at) != NULL;
}

/* A model as /api/tags lists it (ps: as /api/ps lists a loaded one); the
 * details of one not loaded are its format only. */
static cJSON *model_entry(const hl_model_info *info, bool ps) {
    const hearth_model *m = info->engine ? hearth_engine_model(info->engine) : NULL;
    cJSON *o = cJSON_CreateObject();
    bool ok = o && cJSON_AddStringToObject(o, "name", info->name) && cJSON_AddStringToObject(o, "model", info->name) &&
              cJSON_AddNumberToObject(o, "size", m ? (double)hearth_model_size(m) : (double)info->file_size) &&
              cJSON_AddStringToObject(o, "digest", "");
    if (ok && m) ok = add_details(o, m);
    else if (ok) {
        cJSON *d = cJSON_AddObjectToObject(o, "details");
        ok = d && cJSON_AddStringToObject(d, "format", "gguf");
    }
    /* a model kept loaded has no expiry to report but a far one */
    ok = ok && (ps ? (info->expires_at ? add_time(o, "expires_at", (time_t)info->expires_at)
                                       : cJSON_AddStringToObject(o, "expires_at", "2318-01-01T00:00:00Z") != NULL) &&
                         cJSON_AddNumberToObject(o, "size_vram",
                                                 hearth_model_n_gpu_layers(m) > 0 ? (double)hearth_model_size(m) : 0)
                   : add_time(o, "modified_at", time(NULL)));
    if (ok) return o;
    cJSON_Delete(o);
    return NULL;
}

/* /api/tags: every model served; /api/ps: the loaded ones. */
static void list(hl_call *call, hl_reply *rep, bool ps) {
    hl_model_info *infos;
    size_t n;
    if (!hl_models_list(call->srv->models, &infos, &n)) {
        hl_reply_json(rep, 200, NULL); /* the out-of-memory answer */
        return;
    }
    cJSON *root = cJSON_CreateObject(), *arr = root ? cJSON_AddArrayToObject(root, "models") : NULL;
    bool ok = arr != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        if (ps && !infos[i].engine) continue;
        cJSON *m = model_entry(&infos[i], ps);
        ok = m && cJSON_AddItemToArray(arr, m);
        if (!ok) cJSON_Delete(m);
    }
    hl_models_list_end(call->srv->models, infos, n);
    if (!ok) {
        cJSON_Delete(root);
        root = NULL;
    }
    hl_reply_json(rep, 200, root);
}

void hl_handle_ollama_tags(hl_call *call, hl_reply *rep) { list(call, rep, false); }
void hl_handle_ollama_ps(hl_call *call, hl_reply *rep) { list(call, rep, true); }

/* model_info: the GGUF's metadata (strings and numbers as the file has
 * them, arrays left out as Ollama leaves out the tokenizer's unless verbose). */
static bool add_model_info(cJSON *obj, const hearth_model *m) {
    cJSON *info = cJSON_CreateObject();
    if (!info || !cJSON_AddItemToObject(obj, "model_info", info)) {
        cJSON_Delete(info);
        return false;
    }
    char key[256], val[1024];
    size_t len;
    for (int32_t i = 0; i < hearth_model_meta_count(m); i++) {
        if (hearth_model_meta_key_by_index(m, i, key, sizeof key, &len) != HEARTH_OK) continue;
        if (hearth_model_meta_val_str_by_index(m, i, val, sizeof val, &len) != HEARTH_OK) continue;
        if (val[0] == '[' || !strncmp(key, "tokenizer.", 10)) continue; /* arrays, the template */
        char *end;
        const double x = strtod(val, &end);
        if (!(*end == '\0' && end != val ? cJSON_AddNumberToObject(info, key, x)
                                         : cJSON_AddStringToObject(info, key, val)))
            return false;
    }
    return true;
}

void hl_handle_ollama_show(hl_call *call, hl_reply *rep) {
    hl_error err = {0};
    cJSON *req = hl_json_parse_object(call->body, call->len, &err);
    const char *name = NULL;
    if (!req || !hl_json_str(req, "model", &name, &err) || (!name && !hl_json_str(req, "name", &name, &err))) {
        cJSON_Delete(req);
        hl_reply_error(rep, &err);
        return;
    }
    const hearth_model *m = hearth_engine_model(call->engine);
    char *tmpl = NULL;
    hearth_model_chat_template(m, &tmpl); /* none: "" */
    cJSON *o = cJSON_CreateObject(), *caps = cJSON_CreateArray();
    bool ok = o && caps && cJSON_AddItemToObject(o, "capabilities", caps);
    if (!ok) cJSON_Delete(caps);
    const bool embeds = hearth_engine_embeddings(call->engine);
    ok = ok && cJSON_AddItemToArray(caps, cJSON_CreateString(embeds ? "embedding" : "completion")) &&
         (embeds || cJSON_AddItemToArray(caps, cJSON_CreateString("tools"))) &&
         cJSON_AddStringToObject(o, "modelfile", "") && cJSON_AddStringToObject(o, "parameters", "") &&
         cJSON_AddStringToObject(o, "template", tmpl ? tmpl : "") && add_details(o, m) && add_model_info(o, m);
    free(tmpl);
    cJSON_Delete(req);
    hl_reply_json(rep, 200, ok ? o : (cJSON_Delete(o), NULL));
}

/* /api/embed: input a string or strings -> {"model", "embeddings": [[...]],
 * "total_duration", "load_duration", "prompt_eval_count"}; truncate (default
 * true) cuts inputs to a slot, false refuses them. /api/embeddings (the
 * older form): prompt a string -> {"embedding": [...]}. */
static void embed(hl_call *call, hl_reply *rep, bool legacy) {
    hl_error err = {0};
    hl_embed_inputs in = {0};
    float *vecs = NULL;
    cJSON *req = NULL;
    const char *name = NULL;
    bool truncate = true;
    if (!hearth_engine_embeddings(call->engine) || hearth_engine_pooling_type(call->engine) == HEARTH_POOLING_RANK) {
        hl_error_set(&err, 400, "invalid_request_error", "model_not_embedding", "model",
                     "this model does not support embeddings: start hearth serve with an embedding model (or with "
                     "--embeddings and a --pooling for a decoder)");
        goto fail;
    }
    /* options: how the server loads the model, set by its flags; keep_alive: read by server.c */
    static const char *const embed_fields[] = {"model", "input", "truncate", "options", "keep_alive"};
    static const char *const legacy_fields[] = {"model", "prompt", "options", "keep_alive"};
    if (!(req = hl_json_parse_object(call->body, call->len, &err)) ||
        !hl_json_known_fields(req, legacy ? legacy_fields : embed_fields, legacy ? 4 : 5, &err) ||
        !hl_json_str(req, "model", &name, &err) || !hl_json_bool(req, "truncate", &truncate, &err))
        goto fail;
    const cJSON *input = hl_json_field(req, legacy ? "prompt" : "input");
    if (legacy ? !cJSON_IsString(input)
               : !cJSON_IsString(input) && !(cJSON_IsArray(input) && cJSON_GetArraySize(input) > 0)) {
        hl_error_set(&err, 400, "invalid_request_error", "invalid_value", legacy ? "prompt" : "input",
                     legacy ? "'prompt' must be a string" : "'input' must be a string or a non-empty array of strings");
        goto fail;
    }
    const hearth_model *model = hearth_engine_model(call->engine);
    const int32_t n_embd = hearth_model_n_embd(model);
    if (!hl_embed_read_inputs(model, input, &in, &err)) goto fail;
    const int32_t n_max = (int32_t)hearth_engine_n_ctx_seq(call->engine);
    for (int32_t i = 0; truncate && i < in.n; i++)
        if (in.n_tokens[i] > n_max) { /* keep the start and the closing [SEP] */
            in.tokens[i][n_max - 1] = in.tokens[i][in.n_tokens[i] - 1];
            in.n_total -= in.n_tokens[i] - n_max;
            in.n_tokens[i] = n_max;
        }
    vecs = malloc((size_t)in.n * (size_t)n_embd * sizeof *vecs);
    if (!vecs) {
        hl_error_oom(&err);
        goto fail;
    }
    struct timespec ts0, ts1;
    clock_gettime(CLOCK_MONOTONIC, &ts0);
    hearth_status st = hearth_engine_embed_batch(call->engine, in.n, (const int32_t *const *)in.tokens, in.n_tokens,
                                                 vecs);
    clock_gettime(CLOCK_MONOTONIC, &ts1);
    if (st != HEARTH_OK) {
        hl_embed_error(&err, st, hearth_last_error(), legacy ? "prompt" : "input");
        goto fail;
    }
    const double ns = (double)((int64_t)(ts1.tv_sec - ts0.tv_sec) * 1000000000 + (ts1.tv_nsec - ts0.tv_nsec));
    cJSON *o = cJSON_CreateObject();
    bool ok = o != NULL;
    if (legacy) {
        ok = ok && cJSON_AddItemToObject(o, "embedding", cJSON_CreateFloatArray(vecs, n_embd));
    } else {
        cJSON *arr = ok ? cJSON_AddArrayToObject(o, "embeddings") : NULL;
        ok = arr && cJSON_AddStringToObject(o, "model", name ? name : call->model_name);
        for (int32_t i = 0; ok && i < in.n; i++)
            ok = cJSON_AddItemToArray(arr, cJSON_CreateFloatArray(vecs + (size_t)i * n_embd, n_embd));
        ok = ok && cJSON_AddNumberToObject(o, "total_duration", ns) && cJSON_AddNumberToObject(o, "load_duration", 0) &&
             cJSON_AddNumberToObject(o, "prompt_eval_count", (double)in.n_total);
    }
    cJSON_Delete(req);
    hl_embed_inputs_free(&in);
    free(vecs);
    hl_reply_json(rep, 200, ok ? o : (cJSON_Delete(o), NULL));
    return;
fail:
    cJSON_Delete(req);
    hl_embed_inputs_free(&in);
    free(vecs);
    hl_reply_error(rep, &err);
}

void hl_handle_ollama_embed(hl_call *call, hl_reply *rep) { embed(call, rep, false); }
void hl_handle_ollama_embeddings(hl_call *call, hl_reply *rep) { embed(call, rep, true); }
