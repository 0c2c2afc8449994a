/* The model store (fetch.h): where it is, how a name maps to a path inside
 * it, settings from the environment, and walking its folders. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "base/status.h"
#include "fetch/fetch.h"

#define MAX_DEPTH 8 /* folders below a scanned one: hf/OWNER/REPO/SUBDIR/... */

hearth_status hl_store_root(const hearth_fetch_params *p, char *buf, size_t size) {
    const char *dir = p && p->models_dir ? p->models_dir : getenv("HEARTH_MODELS");
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (dir && *dir) n = snprintf(buf, size, "%s", dir);
    else if (xdg && *xdg) n = snprintf(buf, size, "%s/hearth", xdg);
    else if (home && *home) n = snprintf(buf, size, "%s/.cache/hearth", home);
    else return hl_fail(HEARTH_ERR_IO, "no model store: set HEARTH_MODELS (or HOME) to a folder");
    if (n < 0 || (size_t)n >= size) return hl_fail(HEARTH_ERR_IO, "the model store's path is too long");
    while (n > 1 && buf[n - 1] == '/') buf[--n] = '\0';
    return HEARTH_OK;
}

long hl_env_long(const char *name, long def, long lo, long hi) {
    const char *v = getenv(name);
    char *end;
    if (!v || !*v) return def;
    errno = 0;
    const long x = strtol(v, &end, 10);
    return errno || *end || x < lo || x > hi ? def : x;
}

bool hl_store_offline(const hearth_fetch_params *p) {
    const char *v = getenv("HEARTH_OFFLINE");
    return (p && p->offline) || (v && *v && strcmp(v, "0") != 0 && strcasecmp(v, "false") != 0);
}

/* Each '/'-separated component of rel is a plain name (not empty, ".", "..",
 * nor hidden), so the path stays inside the store. */
static bool safe_relative(const char *rel, size_t n) {
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && rel[i] != '/') {
            if (rel[i] == '\0' || rel[i] == '\\') return false;
            continue;
        }
        if (i == start || rel[start] == '.') return false;
        start = i + 1;
    }
    return true;
}

hearth_status hl_store_path(const char *root, const hl_name *n, const char *file, char *buf, size_t size) {
    int k = -1;
    const char *what = n->text;
    if (n->kind == HL_NAME_URL) {
        const char *sep = strstr(n->text, "://");
        const size_t scheme = (size_t)(sep - n->text);
        const char *rest = sep + 3;
        const size_t len = strcspn(rest, "?#");
        if (len > 0 && safe_relative(rest, len) && rest[len - 1] != '/')
            k = snprintf(buf, size, "%s/url/%.*s/%.*s", root, (int)scheme, n->text, (int)len, rest);
    } else if (n->kind == HL_NAME_OLLAMA) {
        k = snprintf(buf, size, "%s/ollama/%s/%s/%s.gguf", root, n->ns, n->model, n->tag);
    } else if (n->kind == HL_NAME_HF && safe_relative(file, strlen(file))) {
        k = snprintf(buf, size, "%s/hf/%s/%s", root, n->repo, file);
    } else {
        what = file;
    }
    if (k < 0)
        return hl_fail(HEARTH_ERR_FORMAT, "'%s' has no file name hearth can store (empty, '..' or hidden parts)", what);
    if ((size_t)k >= size) return hl_fail(HEARTH_ERR_IO, "the store path of '%s' is too long", what);
    return HEARTH_OK;
}

hearth_status hl_mkdirs_for(const char *path) {
    char dir[4096];
    if (snprintf(dir, sizeof dir, "%s", path) >= (int)sizeof dir)
        return hl_fail(HEARTH_ERR_IO, "path too long: %s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) return HEARTH_OK;
    *slash = '\0';
    for (char *s = dir + 1;; s++) {
        const bool end = *s == '\0';
        if (*s == '/' || end) {
            *s = '\0';
            if (mkdir(dir, 0755) != 0 && errno != EEXIST)
                return hl_fail(HEARTH_ERR_IO,
                               "cannot create the folder '%s': %s (set HEARTH_MODELS to a writable folder)", dir,
                               strerror(errno));
            if (end) break;
            *s = '/';
        }
    }
    return HEARTH_OK;
}

typedef struct scan {
    char **paths;
    size_t n, cap;
} scan;

static hearth_status add(scan *s, const char *rel) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 16;
        char **p = realloc(s->paths, cap * sizeof *p);
        if (!p) return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory");
        s->paths = p;
        s->cap = cap;
    }
    if (!(s->paths[s->n] = strdup(rel))) return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory");
    s->n++;
    return HEARTH_OK;
}

/* Adds the .gguf files of root/rel ("" for root) and its folders. */
static hearth_status walk(scan *s, const char *root, const char *rel, int depth) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s%s%s", root, *rel ? "/" : "", rel);
    DIR *d = opendir(dir);
    if (!d)
        return errno == ENOENT || errno == ENOTDIR
                   ? HEARTH_OK
                   : hl_fail(HEARTH_ERR_IO, "cannot read the folder '%s': %s", dir, strerror(errno));
    hearth_status st = HEARTH_OK;
    const struct dirent *e;
    while (st == HEARTH_OK && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char sub[4096], full[4096];
        const int k = snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", e->d_name);
        if (k < 0 || (size_t)k >= sizeof sub || snprintf(full, sizeof full, "%s/%s", root, sub) >= (int)sizeof full)
            continue;
        struct stat sb;
        if (stat(full, &sb) != 0) continue;
        const size_t len = strlen(e->d_name);
        if (S_ISDIR(sb.st_mode) && depth < MAX_DEPTH) st = walk(s, root, sub, depth + 1);
        else if (S_ISREG(sb.st_mode) && len > 5 && strcasecmp(e->d_name + len - 5, ".gguf") == 0) st = add(s, sub);
    }
    closedir(d);
    return st;
}

hearth_status hl_store_scan(const char *dir, char ***paths, size_t *n) {
    scan s = {0};
    hearth_status st = walk(&s, dir, "", 0);
    if (st != HEARTH_OK) {
        for (size_t i = 0; i < s.n; i++) free(s.paths[i]);
        free(s.paths);
        return st;
    }
    *paths = s.paths;
    *n = s.n;
    return HEARTH_OK;
}

static bool is_file(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* Whether every part of `file` is in the store. */
static hearth_status all_parts_here(const hl_name *n, const char *root, const char *file, bool *here) {
    const uint32_t parts = hl_split_count(file);
    *here = true;
    for (uint32_t k = 1; k <= parts && *here; k++) {
        char part[600], dest[4096];
        if (parts > 1) hl_split_part_name(file, k, parts, part, sizeof part);
        else snprintf(part, sizeof part, "%s", file);
        HL_TRY(hl_store_path(root, n, part, dest, sizeof dest));
        *here = is_file(dest);
    }
    return HEARTH_OK;
}

hearth_status hl_store_hf_local(const hl_name *n, const char *root, char **file) {
    *file = NULL;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/hf/%s", root, n->repo);
    char **paths = NULL;
    size_t count = 0;
    HL_TRY(hl_store_scan(dir, &paths, &count));
    const long i = n->file[0] ? -1 : hl_hf_select((const char *const *)paths, count, n->quant);
    const char *pick = n->file[0] ? n->file : i >= 0 ? paths[i] : NULL;
    bool here = false;
    hearth_status st = pick ? all_parts_here(n, root, pick, &here) : HEARTH_OK;
    if (st == HEARTH_OK && here && !(*file = strdup(pick))) st = hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory");
    for (size_t k = 0; k < count; k++) free(paths[k]);
    free(paths);
    return st;
}
