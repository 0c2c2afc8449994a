/* hearth_model_list() and hearth_model_remove() (hearth.h): what the store
 * holds, named so that each name resolves back to its file, and deleting a
 * model by any of its names. Neither touches the network. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/status.h"
#include "fetch/fetch.h"

void hearth_model_list_free(hearth_stored_model *list, size_t n) {
    for (size_t i = 0; list && i < n; i++) {
        free(list[i].name);
        free(list[i].quant);
        free(list[i].path);
    }
    free(list);
}

static uint64_t file_size(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

/* The name of the model at `rel` (a path under the store), or false for a
 * file that is not a model's first file or whole (a split model missing a
 * part). *size sums the parts. */
static bool describe(const char *root, const char *rel, char *name, size_t size, char *quant, size_t qsize,
                     uint64_t *bytes) {
    char full[4096];
    snprintf(full, sizeof full, "%s/%s", root, rel);
    hl_quant_of_file(rel, quant, qsize);
    *bytes = file_size(full);
    char a[256], b[256], c[256];
    int used = 0;
    if (sscanf(rel, "ollama/%255[^/]/%255[^/]/%255[^/]%n", a, b, c, &used) == 3 && !rel[used]) {
        c[strlen(c) - 5] = '\0'; /* ".gguf" */
        if (strcmp(a, "library") == 0) snprintf(name, size, "ollama:%s:%s", b, c);
        else snprintf(name, size, "ollama:%s/%s:%s", a, b, c);
        return true;
    }
    if (sscanf(rel, "url/%255[^/]/%n", a, &used) == 1) {
        snprintf(name, size, "%s://%s", a, rel + used);
        return true;
    }
    if (sscanf(rel, "hf/%255[^/]/%255[^/]/%n", a, b, &used) != 2) return false;
    const char *file = rel + used;
    const uint32_t parts = hl_split_count(file);
    uint32_t no = 1, count;
    size_t prefix;
    if (parts > 1 && hl_split_name(file, &no, &count, &prefix) && no != 1) return false;
    for (uint32_t k = 2; k <= parts; k++) {
        char part[4096];
        hl_split_part_name(full, k, parts, part, sizeof part);
        const uint64_t s = file_size(part);
        if (!s) return false;
        *bytes += s;
    }
    char repo[520];
    snprintf(repo, sizeof repo, "%s/%s", a, b);
    if (!quant[0] || !hl_catalog_name_of(repo, quant, name, size))
        snprintf(name, size, "hf.co/%s%s%s", repo, quant[0] ? ":" : "", quant);
    return true;
}

static int by_name(const void *x, const void *y) {
    return strcmp(((const hearth_stored_model *)x)->name, ((const hearth_stored_model *)y)->name);
}

hearth_status hearth_model_list(const hearth_fetch_params *p, hearth_stored_model **out, size_t *n) {
    hl_clear_error();
    if (!out || !n) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_model_list: out or n is NULL");
    *out = NULL;
    *n = 0;
    char root[2048];
    HL_TRY(hl_store_root(p, root, sizeof root));
    char **rels = NULL;
    size_t count = 0;
    HL_TRY(hl_store_scan(root, &rels, &count));
    hearth_stored_model *list = count ? hl_calloc(count, sizeof *list) : NULL;
    hearth_status st = count && !list ? HEARTH_ERR_OUT_OF_MEMORY : HEARTH_OK;
    size_t k = 0;
    for (size_t i = 0; i < count && st == HEARTH_OK; i++) {
        char name[1024], quant[64], full[4096];
        uint64_t bytes;
        if (!describe(root, rels[i], name, sizeof name, quant, sizeof quant, &bytes)) continue;
        snprintf(full, sizeof full, "%s/%s", root, rels[i]);
        list[k] = (hearth_stored_model){
            .name = strdup(name), .quant = strdup(quant), .size = bytes, .path = strdup(full)};
        if (!list[k].name || !list[k].quant || !list[k].path) st = hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory");
        k++;
    }
    for (size_t i = 0; i < count; i++) free(rels[i]);
    free(rels);
    if (st != HEARTH_OK) {
        hearth_model_list_free(list, k);
        return st;
    }
    if (k) qsort(list, k, sizeof *list, by_name);
    *out = k ? list : NULL;
    if (!k) free(list);
    *n = k;
    return HEARTH_OK;
}

/* Deletes path, path.partial and path.lock; *found when any existed. */
static hearth_status remove_file(const char *path, bool *found) {
    static const char *const suffixes[] = {"", ".partial", ".lock"};
    for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++) {
        char f[4200];
        snprintf(f, sizeof f, "%s%s", path, suffixes[i]);
        if (unlink(f) == 0) *found |= i < 2; /* a lock file alone is no model */
        else if (errno != ENOENT) return hl_fail(HEARTH_ERR_IO, "cannot delete '%s': %s", f, strerror(errno));
    }
    return HEARTH_OK;
}

hearth_status hearth_model_remove(const char *name, const hearth_fetch_params *p) {
    hl_clear_error();
    hl_name n;
    if (!name) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_model_remove: name is NULL");
    HL_TRY(hl_name_parse(name, &n));
    if (n.kind == HL_NAME_PATH)
        return hl_fail(HEARTH_ERR_INVALID_ARG,
                       "'%s' is a path, not a model in the store: hearth rm deletes only what "
                       "hearth pulled (see hearth list)",
                       name);
    char root[2048], dest[4096];
    HL_TRY(hl_store_root(p, root, sizeof root));
    bool found = false;
    if (n.kind == HL_NAME_HF) {
        char *file = NULL;
        HL_TRY(hl_store_hf_local(&n, root, &file));
        /* a catalog name's pinned file may be there in part only */
        const char *target = file ? file : n.file[0] ? n.file : NULL;
        const uint32_t parts = target ? hl_split_count(target) : 0;
        hearth_status st = HEARTH_OK;
        for (uint32_t k = 1; k <= parts && st == HEARTH_OK; k++) {
            char part[600];
            if (parts > 1) hl_split_part_name(target, k, parts, part, sizeof part);
            else snprintf(part, sizeof part, "%s", target);
            st = hl_store_path(root, &n, part, dest, sizeof dest);
            if (st == HEARTH_OK) st = remove_file(dest, &found);
        }
        free(file);
        HL_TRY(st);
    } else {
        HL_TRY(hl_store_path(root, &n, NULL, dest, sizeof dest));
        HL_TRY(remove_file(dest, &found));
    }
    if (!found)
        return hl_fail(HEARTH_ERR_IO, "'%s' is not in the model store (%s)%s; see hearth list", name, root,
                       n.kind == HL_NAME_OLLAMA ? " (a model of the Ollama store is Ollama's: ollama rm removes it)"
                                                : "");
    return HEARTH_OK;
}
