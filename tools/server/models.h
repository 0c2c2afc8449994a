/* The models a server serves (hearth serve MODEL..., --models-dir): each
 * one a name and a file, loaded on demand into its own engine, kept while
 * requests hold it, unloaded when idle past its keep-alive or to make room
 * (--models-max, least recently used first; or when the next model's load
 * runs out of memory). A model that is loading makes its requests wait; a
 * load that fails answers them with its reason and leaves the others
 * serving. Thread-safe; acquire may block (call it from a worker). */
#ifndef HEARTH_SERVER_MODELS_H
#define HEARTH_SERVER_MODELS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>

#include "hearth.h"
#include "oai_request.h"
#include "server.h"

typedef struct hl_models hl_models;
typedef struct hl_served hl_served; /* one model of the list */

/* The list of cfg->models; NULL when memory or a thread cannot be had. */
hl_models *hl_models_new(const hl_server_config *cfg);
/* Unloads every model (no request may hold one) and frees the list. */
void hl_models_free(hl_models *ms);

/* The model a request names (NULL: the first one); a model not in the list
 * is the first one too when the server serves one model and strict is
 * false, else 404. Loads it when it is not loaded (waiting for a load under
 * way, or for room under --models-max), and holds it: *engine stays valid
 * until hl_models_release. False with *err (404, 500 the load failed, 503
 * the server stops). */
bool hl_models_acquire(hl_models *ms, const char *name, hl_served **out, hl_error *err);
/* The most recently used loaded model, held, or NULL when none is loaded.
 * Never blocks. */
hl_served *hl_models_current(hl_models *ms);
/* Lets go of a model acquired; keep_alive_s >= 0 sets how long it stays
 * loaded once idle (0: unloaded now), < 0 forever; NAN keeps its setting. */
void hl_models_release(hl_models *ms, hl_served *s, double keep_alive_s);

hearth_engine *hl_served_engine(const hl_served *s);
const char *hl_served_name(const hl_served *s);

/* Each model of the list, for listings: name, path, size of its file
 * (bytes), and while loaded its engine (held until hl_models_list_end) and
 * when it expires (Unix seconds; 0 never). */
typedef struct hl_model_info {
    const char *name, *path;
    long long file_size;
    hearth_engine *engine; /* NULL: not loaded */
    double expires_at;
    hl_served *held; /* (for hl_models_list_end) */
} hl_model_info;
/* Fills *out with n entries (malloc'd; loaded ones held); false when memory runs out. */
bool hl_models_list(hl_models *ms, hl_model_info **out, size_t *n);
void hl_models_list_end(hl_models *ms, hl_model_info *list, size_t n);

/* Serves one more model (a pulled one) under name, or finds the one served
 * under it; NULL when the list is full (HL_MODELS_ADDED_MAX more than the
 * command gave) or memory runs out. */
hl_served *hl_models_add(hl_models *ms, const char *name, const char *path);
/* Stops serving the model `name` (unloading it): false when there is none
 * or requests hold it or it is loading. */
bool hl_models_forget(hl_models *ms, const char *name);

/* Ollama's keep_alive: a number of seconds, or a duration string ("5m",
 * "1h30m", "10s", "500ms"); negative: forever. False with *err (400). */
bool hl_keep_alive_parse(const cJSON *v, double *seconds, hl_error *err);

#endif
