/* The served models (see models.h). One mutex guards the list; loads and
 * unloads run outside it, a model's state saying what is under way. */
#include "models.h"

#include "clock.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* Models hl_models_add may add while the server runs (pulled ones). */
#define HL_MODELS_ADDED_MAX 256

typedef enum hl_served_state { HL_UNLOADED, HL_LOADING, HL_READY } hl_served_state;

struct hl_served {
    const char *name, *path;
    bool added; /* by hl_models_add: name and path are owned */
    bool gone;  /* forgotten (hl_models_forget): no longer served */
    hl_served_state state;
    hearth_model *model;
    hearth_engine *engine;
    int users;           /* requests holding it */
    double last_used;    /* monotonic seconds it was last let go (or loaded) */
    double keep_alive_s; /* idle this long: unloaded; < 0: never */
    unsigned n_failed;   /* loads that failed; the last one's reason in error */
    hl_error error;
};

struct hl_models {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* a load ended, a model was let go, or stop */
    pthread_t reaper;
    bool quit;
    const hl_server_config *cfg;
    size_t n, cap; /* entries never move: requests hold pointers to them */
    hl_served list[];
};

/* Outside the lock: the engine first (its thread stops), then the model. */
static void unload(const char *name, hearth_model *model, hearth_engine *engine) {
    if (!model) return;
    hearth_engine_free(engine);
    hearth_model_free(model);
    fprintf(stderr, "hearth: unloaded %s\n", name);
}

/* Under the lock: takes s out of service (its memory goes with unload()). */
static void take_out(hl_served *s, hearth_model **model, hearth_engine **engine) {
    *model = s->model;
    *engine = s->engine;
    s->model = NULL;
    s->engine = NULL;
    s->state = HL_UNLOADED;
}

/* Under the lock: the least recently used loaded model nobody holds, or NULL. */
static hl_served *idle_lru(hl_models *ms, const hl_served *except) {
    hl_served *best = NULL;
    for (size_t i = 0; i < ms->n; i++) {
        hl_served *s = &ms->list[i];
        if (s != except && s->state == HL_READY && !s->users && (!best || s->last_used < best->last_used)) best = s;
    }
    return best;
}

static size_t n_loaded(const hl_models *ms) {
    size_t k = 0;
    for (size_t i = 0; i < ms->n; i++) k += ms->list[i].state != HL_UNLOADED;
    return k;
}

/* Unloads models idle past their keep-alive, once a second. */
static void *reaper_main(void *arg) {
    hl_models *ms = arg;
    pthread_mutex_lock(&ms->mu);
    while (!ms->quit) {
        const double t = hl_now_s();
        for (size_t i = 0; i < ms->n; i++) {
            hl_served *s = &ms->list[i];
            if (s->state != HL_READY || s->users || s->keep_alive_s < 0 || t - s->last_used < s->keep_alive_s) continue;
            hearth_model *model;
            hearth_engine *engine;
            take_out(s, &model, &engine);
            pthread_mutex_unlock(&ms->mu);
            unload(s->name, model, engine);
            pthread_mutex_lock(&ms->mu);
            pthread_cond_broadcast(&ms->cv);
        }
        hl_cond_wait_until(&ms->cv, &ms->mu, t + 1.0);
    }
    pthread_mutex_unlock(&ms->mu);
    return NULL;
}

hl_models *hl_models_new(const hl_server_config *cfg) {
    const size_t cap = cfg->n_models + HL_MODELS_ADDED_MAX;
    hl_models *ms = calloc(1, sizeof *ms + cap * sizeof ms->list[0]);
    if (!ms) return NULL;
    ms->cfg = cfg;
    ms->n = cfg->n_models;
    ms->cap = cap;
    for (size_t i = 0; i < ms->n; i++)
        ms->list[i] = (hl_served){
            .name = cfg->models[i].name, .path = cfg->models[i].path, .keep_alive_s = cfg->keep_alive_s};
    bool ok = hl_cond_init_monotonic(&ms->cv);
    if (ok && pthread_mutex_init(&ms->mu, NULL) != 0) {
        pthread_cond_destroy(&ms->cv);
        ok = false;
    }
    if (ok && pthread_create(&ms->reaper, NULL, reaper_main, ms) != 0) {
        pthread_cond_destroy(&ms->cv);
        pthread_mutex_destroy(&ms->mu);
        ok = false;
    }
    if (!ok) {
        free(ms);
        return NULL;
    }
    return ms;
}

void hl_models_free(hl_models *ms) {
    if (!ms) return;
    pthread_mutex_lock(&ms->mu);
    ms->quit = true;
    pthread_cond_broadcast(&ms->cv);
    pthread_mutex_unlock(&ms->mu);
    pthread_join(ms->reaper, NULL);
    for (size_t i = 0; i < ms->n; i++) {
        hl_served *s = &ms->list[i];
        unload(s->name, s->model, s->engine);
        if (s->added) {
            free((char *)s->name);
            free((char *)s->path);
        }
    }
    pthread_cond_destroy(&ms->cv);
    pthread_mutex_destroy(&ms->mu);
    free(ms);
}

/* Under the lock: the model named `name` ("NAME.gguf" may be named without
 * ".gguf"), or NULL. */
static hl_served *find(hl_models *ms, const char *name) {
    const size_t len = strlen(name);
    for (size_t i = 0; i < ms->n; i++) {
        if (ms->list[i].gone) continue;
        const char *have = ms->list[i].name;
        const size_t n_have = strlen(have);
        if (!strcmp(have, name) || (n_have == len + 5 && !strncmp(have, name, len) && !strcmp(have + len, ".gguf")))
            return &ms->list[i];
    }
    return NULL;
}

/* Under the lock, with s HL_LOADING: loads it, making room first (under
 * --models-max: idle models, least recently used first; then again as long
 * as the load runs out of memory and an idle model is left to unload). */
static bool load(hl_models *ms, hl_served *s, hl_error *err) {
    char msg[512] = "";
    for (;;) {
        hl_served *victim = NULL;
        if (ms->cfg->models_max && n_loaded(ms) > ms->cfg->models_max) victim = idle_lru(ms, s);
        if (victim) {
            hearth_model *model;
            hearth_engine *engine;
            take_out(victim, &model, &engine);
            pthread_mutex_unlock(&ms->mu);
            unload(victim->name, model, engine);
            pthread_mutex_lock(&ms->mu);
            continue;
        }
        if (ms->cfg->models_max && n_loaded(ms) > ms->cfg->models_max) { /* every other one is in use: wait */
            pthread_cond_wait(&ms->cv, &ms->mu);
            if (ms->quit) break;
            continue;
        }
        pthread_mutex_unlock(&ms->mu);
        hearth_model *model = NULL;
        hearth_engine *engine = NULL;
        const double t0 = hl_now_s();
        hearth_status st = ms->cfg->load(ms->cfg->load_user, s->path, &model, &engine, msg, sizeof msg);
        if (st == HEARTH_OK) fprintf(stderr, "hearth: loaded %s (%s) in %.2f s\n", s->name, s->path, hl_now_s() - t0);
        pthread_mutex_lock(&ms->mu);
        if (st == HEARTH_OK) {
            s->model = model;
            s->engine = engine;
            s->state = HL_READY;
            s->last_used = hl_now_s();
            return true;
        }
        if (st != HEARTH_ERR_OUT_OF_MEMORY || !(victim = idle_lru(ms, s))) break;
        take_out(victim, &model, &engine); /* make room and try again */
        pthread_mutex_unlock(&ms->mu);
        unload(victim->name, model, engine);
        pthread_mutex_lock(&ms->mu);
    }
    s->state = HL_UNLOADED;
    if (ms->quit) hl_error_set(err, 503, "server_error", "server_shutting_down", NULL, "the server is shutting down");
    else
        hl_error_set(err, 500, "server_error", "model_load_failed", "model", "cannot load the model '%s' (%s): %s",
                     s->name, s->path, msg[0] ? msg : "unknown error");
    fprintf(stderr, "hearth: %s\n", err->message);
    s->error = *err;
    s->n_failed++;
    return false;
}

/* With the store served: adds the model of hearth's store named `name`
 * (one pulled since the server started) to the list, if there is one. */
static void add_from_store(hl_models *ms, const char *name) {
    hearth_stored_model *stored = NULL;
    size_t n = 0;
    if (!ms->cfg->store || hearth_model_list(NULL, &stored, &n) != HEARTH_OK) return;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(stored[i].name, name)) hl_models_add(ms, stored[i].name, stored[i].path);
    hearth_model_list_free(stored, n);
}

bool hl_models_acquire(hl_models *ms, const char *name, hl_served **out, hl_error *err) {
    *out = NULL;
    pthread_mutex_lock(&ms->mu);
    if (name && !find(ms, name)) {
        pthread_mutex_unlock(&ms->mu);
        add_from_store(ms, name);
        pthread_mutex_lock(&ms->mu);
    }
    hl_served *s = name ? find(ms, name) : &ms->list[0];
    const bool single = ms->cfg->n_models == 1 && !ms->cfg->store;
    if (!s && single && !ms->cfg->strict_model) s = &ms->list[0]; /* any name: llama-server's single-model mode */
    if (!s || s->gone) {
        hl_error_set(err, 404, "invalid_request_error", "model_not_found", "model",
                     "the model '%s' does not exist: this server serves %s'%s'%s (GET /v1/models lists them)",
                     name ? name : "", single ? "only " : "", ms->list[0].name, single ? "" : " and others");
        pthread_mutex_unlock(&ms->mu);
        return false;
    }
    bool ok = true;
    s->users++; /* held from here: not unloaded under a load that waits */
    while (ok && s->state != HL_READY) {
        if (ms->quit) {
            hl_error_set(err, 503, "server_error", "server_shutting_down", NULL, "the server is shutting down");
            ok = false;
        } else if (s->state == HL_LOADING) { /* another request loads it: its outcome is ours */
            const unsigned n_failed = s->n_failed;
            while (s->state == HL_LOADING) pthread_cond_wait(&ms->cv, &ms->mu);
            if (s->n_failed != n_failed) {
                *err = s->error;
                ok = false;
            }
        } else {
            s->state = HL_LOADING;
            ok = load(ms, s, err);
            pthread_cond_broadcast(&ms->cv);
        }
    }
    if (!ok) s->users--;
    pthread_mutex_unlock(&ms->mu);
    if (ok) *out = s;
    return ok;
}

hl_served *hl_models_current(hl_models *ms) {
    pthread_mutex_lock(&ms->mu);
    hl_served *best = NULL;
    for (size_t i = 0; i < ms->n; i++) {
        hl_served *s = &ms->list[i];
        if (s->state == HL_READY && !s->gone && (!best || s->last_used > best->last_used)) best = s;
    }
    if (best) best->users++;
    pthread_mutex_unlock(&ms->mu);
    return best;
}

void hl_models_release(hl_models *ms, hl_served *s, double keep_alive_s) {
    if (!s) return;
    pthread_mutex_lock(&ms->mu);
    s->users--;
    s->last_used = hl_now_s();
    if (!isnan(keep_alive_s)) s->keep_alive_s = keep_alive_s;
    hearth_model *model = NULL;
    hearth_engine *engine = NULL;
    if (s->users == 0 && s->keep_alive_s == 0 && s->state == HL_READY) take_out(s, &model, &engine);
    pthread_cond_broadcast(&ms->cv);
    pthread_mutex_unlock(&ms->mu);
    unload(s->name, model, engine);
}

hearth_engine *hl_served_engine(const hl_served *s) { return s->engine; }
const char *hl_served_name(const hl_served *s) { return s->name; }

bool hl_models_list(hl_models *ms, hl_model_info **out, size_t *n) {
    pthread_mutex_lock(&ms->mu);
    hl_model_info *list = calloc(ms->n ? ms->n : 1, sizeof *list);
    size_t k = 0;
    const double t = hl_now_s(), wall = (double)time(NULL);
    for (size_t i = 0; list && i < ms->n; i++) {
        hl_served *s = &ms->list[i];
        if (s->gone) continue;
        hl_model_info *info = &list[k++];
        *info = (hl_model_info){.name = s->name, .path = s->path, .held = s};
        if (s->state != HL_READY) continue;
        s->users++;
        info->engine = s->engine;
        if (s->keep_alive_s >= 0) info->expires_at = wall + s->keep_alive_s - (s->users > 1 ? 0 : t - s->last_used);
    }
    pthread_mutex_unlock(&ms->mu);
    if (!list) return false;
    for (size_t i = 0; i < k; i++) {
        struct stat st;
        list[i].file_size = stat(list[i].path, &st) == 0 ? (long long)st.st_size : 0;
    }
    *out = list;
    *n = k;
    return true;
}

void hl_models_list_end(hl_models *ms, hl_model_info *list, size_t n) {
    pthread_mutex_lock(&ms->mu);
    for (size_t i = 0; i < n; i++)
        if (list[i].engine) list[i].held->users--;
    pthread_cond_broadcast(&ms->cv);
    pthread_mutex_unlock(&ms->mu);
    free(list);
}

hl_served *hl_models_add(hl_models *ms, const char *name, const char *path) {
    pthread_mutex_lock(&ms->mu);
    hl_served *s = find(ms, name);
    if (!s && ms->n < ms->cap) {
        char *n = strdup(name), *p = strdup(path);
        if (n && p) {
            s = &ms->list[ms->n++];
            *s = (hl_served){.name = n, .path = p, .added = true, .keep_alive_s = ms->cfg->keep_alive_s};
        } else {
            free(n);
            free(p);
        }
    }
    pthread_mutex_unlock(&ms->mu);
    return s;
}

bool hl_models_forget(hl_models *ms, const char *name) {
    pthread_mutex_lock(&ms->mu);
    hl_served *s = find(ms, name);
    hearth_model *model = NULL;
    hearth_engine *engine = NULL;
    const bool idle = s && !s->users && s->state != HL_LOADING;
    if (idle) {
        if (s->state == HL_READY) take_out(s, &model, &engine);
        s->gone = true;
    }
    pthread_mutex_unlock(&ms->mu);
    if (model) unload(s->name, model, engine);
    return idle;
}

bool hl_duration_parse(const char *p, double *seconds) {
    char *end;
    const double plain = strtod(p, &end);
    if (end != p && *end == '\0') {
        *seconds = plain;
        return true;
    }
    double total = 0;
    bool negative = *p == '-', any = false;
    if (*p == '-' || *p == '+') p++;
    while (*p) {
        char *end;
        const double x = strtod(p, &end);
        if (end == p) return false;
        p = end;
        double unit;
        if (!strncmp(p, "ms", 2)) unit = 1e-3, p += 2;
        else if (*p == 'h') unit = 3600, p++;
        else if (*p == 'm') unit = 60, p++;
        else if (*p == 's') unit = 1, p++;
        else return false;
        total += x * unit;
        any = true;
    }
    *seconds = negative ? -total : total;
    return any;
}

bool hl_keep_alive_parse(const cJSON *v, double *seconds, hl_error *err) {
    if (cJSON_IsNumber(v)) {
        *seconds = v->valuedouble;
        return true;
    }
    if (cJSON_IsString(v) && hl_duration_parse(v->valuestring, seconds)) return true;
    hl_error_set(err, 400, "invalid_request_error", "invalid_value", "keep_alive",
                 "'keep_alive' must be a number of seconds or a duration such as \"5m\" or \"1h30m\" (negative: "
                 "keep the model loaded)");
    return false;
}
