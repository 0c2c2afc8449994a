/* The catalog of short model names (fetch.h): data/catalog.json, compiled
 * into the library as the string hl_catalog_json by cmake/embed.cmake. Its
 * shape is described in the file itself. It is parsed at each lookup (a few
 * kilobytes; lookups are rare), so nothing is shared between threads. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "fetch/fetch.h"

extern const char hl_catalog_json[];

/* The "models" object of the catalog, or NULL (a catalog that does not parse
 * is a build bug: test_fetch checks it). Free the root. */
static const cJSON *models(cJSON **root) {
    *root = cJSON_Parse(hl_catalog_json);
    return cJSON_GetObjectItemCaseSensitive(*root, "models");
}

static const char *str_of(const cJSON *obj, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Fills out from entry `e` for quant tag `quant` ("" = the entry's). */
static bool fill(const cJSON *e, const char *name, const char *quant, hl_name *out) {
    const char *repo = str_of(e, "repo"), *def = str_of(e, "quant");
    if (!repo || !def || strlen(repo) >= sizeof out->repo || strlen(name) >= sizeof out->catalog) return false;
    if (!*quant) quant = def;
    if (strlen(quant) >= sizeof out->quant) return false;
    out->kind = HL_NAME_HF;
    strcpy(out->repo, repo);
    strcpy(out->catalog, name);
    for (size_t i = 0; quant[i]; i++)
        out->quant[i] = (char)(quant[i] >= 'a' && quant[i] <= 'z' ? quant[i] - 32 : quant[i]);
    out->quant[strlen(quant)] = '\0';
    const cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(e, "files")) {
        if (strcasecmp(f->string, quant) != 0) continue;
        const char *file = str_of(f, "file"), *sha = str_of(f, "sha256");
        if (file && strlen(file) < sizeof out->file) strcpy(out->file, file);
        if (file && sha && strlen(sha) == 64) strcpy(out->sha256, sha);
    }
    return true;
}

bool hl_catalog_lookup(const char *name, hl_name *out) {
    cJSON *root;
    const cJSON *e, *all = models(&root);
    bool hit = false;
    cJSON_ArrayForEach(e, all) {
        const size_t n = strlen(e->string);
        if (strncasecmp(name, e->string, n) != 0) continue;
        if (name[n] == '\0') hit = fill(e, e->string, "", out);
        else if (name[n] == ':' && name[n + 1]) hit = fill(e, e->string, name + n + 1, out);
        if (hit) break;
    }
    cJSON_Delete(root);
    return hit;
}

void hl_catalog_names(char *buf, size_t size) {
    cJSON *root;
    const cJSON *e, *all = models(&root);
    size_t used = 0;
    buf[0] = '\0';
    cJSON_ArrayForEach(e, all) {
        int k = snprintf(buf + used, size - used, "%s%s", used ? ", " : "", e->string);
        if (k < 0 || (size_t)k >= size - used) break;
        used += (size_t)k;
    }
    cJSON_Delete(root);
}

bool hl_catalog_name_of(const char *repo, const char *quant, char *buf, size_t size) {
    cJSON *root;
    const cJSON *e, *all = models(&root);
    bool hit = false;
    cJSON_ArrayForEach(e, all) {
        const char *r = str_of(e, "repo"), *def = str_of(e, "quant");
        if (!r || !def || strcasecmp(r, repo) != 0) continue;
        if (strcasecmp(def, quant) == 0) snprintf(buf, size, "%s", e->string);
        else snprintf(buf, size, "%s:%s", e->string, quant);
        hit = true;
        if (strcasecmp(def, quant) == 0) break;
    }
    cJSON_Delete(root);
    return hit;
}
