/* hearth_model_resolve() (hearth.h): a model name to a local file, through
 * the store, the catalog, a Hugging Face listing or an Ollama manifest, and
 * the download of what is missing (fetch.h has the map of src/fetch/). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/log.h"
#include "fetch/fetch.h"

hearth_fetch_params hearth_fetch_default_params(void) {
    return (hearth_fetch_params){.models_dir = NULL, .offline = false, .progress = NULL, .progress_user = NULL};
}

void hearth_free(void *ptr) { free(ptr); }

static bool exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static hearth_status give(const char *path, char **out) {
    if (!(*out = strdup(path))) return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory");
    return HEARTH_OK;
}

static hearth_status offline_missing(const char *name, const char *what, const char *root) {
    return hl_fail(HEARTH_ERR_IO,
                   "%s is not in the model store (%s) and hearth is offline (--offline or HEARTH_OFFLINE): "
                   "pull it with network first (hearth pull %s)",
                   what, root, name);
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static hearth_status download(const char *url, const char *dest, const char *sha, uint64_t size, hl_progress *pr) {
    const hl_download d = {.url = url, .dest = dest, .sha256 = sha, .size = size, .progress = pr};
    return hl_download_file(&d);
}

/* ------------------------------------------------------------ plain -- */

static hearth_status resolve_url(const hl_name *n, const char *root, const hearth_fetch_params *p, char **out) {
    char dest[4096];
    HL_TRY(hl_store_path(root, n, NULL, dest, sizeof dest));
    if (exists(dest)) return give(dest, out);
    if (hl_store_offline(p)) return offline_missing(n->text, n->text, root);
    hl_progress pr;
    hl_progress_init(&pr, p->progress, p->progress_user, base_name(dest), 0);
    HL_TRY(download(n->text, dest, NULL, 0, &pr));
    hl_progress_report(&pr, pr.total, true);
    return give(dest, out);
}

static hearth_status resolve_ollama(const hl_name *n, const char *root, const hearth_fetch_params *p, char **out) {
    HL_TRY(hl_ollama_local(n, out));
    if (*out) return HEARTH_OK; /* the local Ollama store's blob, used in place */
    char dest[4096], sha[HL_SHA256_HEX], reg[512], url[1024];
    HL_TRY(hl_store_path(root, n, NULL, dest, sizeof dest));
    if (exists(dest)) return give(dest, out);
    if (hl_store_offline(p)) return offline_missing(n->text, n->text, root);
    uint64_t size;
    HL_TRY(hl_ollama_remote(n, sha, &size));
    snprintf(url, sizeof url, "%s/v2/%s/%s/blobs/sha256:%s", hl_ollama_registry(reg, sizeof reg), n->ns, n->model, sha);
    hl_progress pr;
    char what[300];
    snprintf(what, sizeof what, "%s:%s", n->model, n->tag);
    hl_progress_init(&pr, p->progress, p->progress_user, what, size);
    HL_TRY(download(url, dest, sha, size, &pr));
    hl_progress_report(&pr, size, true);
    return give(dest, out);
}

/* ------------------------------------------------------ Hugging Face -- */

static const hl_hf_file *find_file(const hl_hf_file *files, size_t n, const char *path) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(files[i].path, path) == 0) return &files[i];
    return NULL;
}

/* The chosen file of the listing (the catalog's, or by quant). */
static hearth_status choose(const hl_name *n, const hl_hf_file *files, size_t count, const hl_hf_file **pick) {
    if (n->file[0]) {
        if ((*pick = find_file(files, count, n->file))) return HEARTH_OK;
        return hl_fail(HEARTH_ERR_NETWORK, "%s has no file %s (the catalog's file for %s): the repository changed",
                       n->repo, n->file, n->catalog);
    }
    const char **paths = hl_malloc((count + 1) * sizeof *paths);
    if (!paths) return HEARTH_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < count; i++) paths[i] = files[i].path;
    const long i = hl_hf_select(paths, count, n->quant);
    free(paths);
    if (i >= 0) {
        *pick = &files[i];
        return HEARTH_OK;
    }
    char list[400] = "";
    for (size_t k = 0; k < count; k++) {
        const size_t len = strlen(files[k].path), used = strlen(list);
        if (len < 5 || strcmp(files[k].path + len - 5, ".gguf") != 0) continue;
        snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", base_name(files[k].path));
    }
    if (!list[0])
        return hl_fail(HEARTH_ERR_NETWORK,
                       "%s has no .gguf file: give a repository of GGUF models (their names end in -GGUF)", n->repo);
    return hl_fail(HEARTH_ERR_NETWORK, "no file of %s carries the quant tag '%s': its files are %s", n->repo, n->quant,
                   list);
}

/* Part k (0-based) of the chosen file in the listing, or NULL. */
static const hl_hf_file *part_of(const hl_hf_file *files, size_t count, const hl_hf_file *pick, uint32_t k) {
    const uint32_t parts = hl_split_count(pick->path);
    if (parts == 1) return pick;
    char name[600];
    hl_split_part_name(pick->path, k + 1, parts, name, sizeof name);
    return find_file(files, count, name);
}

/* Downloads every part of the chosen file that the store lacks. */
static hearth_status fetch_parts(const hl_name *n, const char *root, const hearth_fetch_params *p,
                                 const hl_hf_file *files, size_t count, const hl_hf_file *pick) {
    const uint32_t parts = hl_split_count(pick->path);
    uint64_t total = 0;
    for (uint32_t k = 0; k < parts; k++) {
        const hl_hf_file *f = part_of(files, count, pick, k);
        if (!f)
            return hl_fail(HEARTH_ERR_NETWORK, "%s lacks part %u of the split model %s", n->repo, k + 1, pick->path);
        total += f->size;
    }
    char ep[512], url[2048], dest[4096];
    hl_progress pr;
    hl_progress_init(&pr, p->progress, p->progress_user, base_name(pick->path), total);
    for (uint32_t k = 0; k < parts; k++) {
        const hl_hf_file *f = part_of(files, count, pick, k);
        HL_TRY(hl_store_path(root, n, f->path, dest, sizeof dest));
        if (!exists(dest)) {
            /* the catalog's sha256 pins its file; else the listing's LFS oid */
            const char *sha = n->sha256[0] && parts == 1 ? n->sha256 : f->sha256;
            if (!sha[0]) HL_WARN("%s/%s is not in LFS: no sha256 to verify it with", n->repo, f->path);
            snprintf(url, sizeof url, "%s/%s/resolve/main/%s", hl_hf_endpoint(ep, sizeof ep), n->repo, f->path);
            HL_TRY(download(url, dest, sha, f->size, &pr));
        }
        pr.base += f->size;
    }
    pr.base = 0;
    hl_progress_report(&pr, total, true);
    return HEARTH_OK;
}

static hearth_status resolve_hf(const hl_name *n, const char *root, const hearth_fetch_params *p, char **out) {
    char *file = NULL, dest[4096];
    const bool offline = hl_store_offline(p);
    /* a pinned file (the catalog's) or an offline call decide from the store */
    if (n->file[0] || offline) {
        HL_TRY(hl_store_hf_local(n, root, &file));
        if (!file && offline) {
            char what[1024];
            snprintf(what, sizeof what, "%s%s%s", n->file[0] ? n->file : n->repo, n->quant[0] && !n->file[0] ? ":" : "",
                     n->file[0] ? "" : n->quant);
            return offline_missing(n->catalog[0] ? n->catalog : n->text, what, root);
        }
    }
    if (!file) {
        hl_hf_file *files = NULL;
        size_t count = 0;
        const hl_hf_file *pick = NULL;
        hearth_status st = hl_hf_list(n->repo, &files, &count);
        if (st == HEARTH_ERR_NETWORK) {
            /* no network: a model the store has still runs */
            char msg[512];
            snprintf(msg, sizeof msg, "%s", hearth_last_error());
            if (hl_store_hf_local(n, root, &file) == HEARTH_OK && file) HL_WARN("%s; using the copy in the store", msg);
            else st = hl_fail(st, "%s", msg);
        }
        if (!file && st == HEARTH_OK) st = choose(n, files, count, &pick);
        if (!file && st == HEARTH_OK) st = fetch_parts(n, root, p, files, count, pick);
        if (!file && st == HEARTH_OK && !(file = strdup(pick->path)))
            st = hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory");
        hl_hf_files_free(files, count);
        if (st != HEARTH_OK) {
            free(file);
            return st;
        }
    }
    hearth_status st = hl_store_path(root, n, file, dest, sizeof dest);
    free(file);
    HL_TRY(st);
    return give(dest, out);
}

hearth_status hearth_model_resolve(const char *name, const hearth_fetch_params *params, char **path_out) {
    hl_clear_error();
    if (!path_out) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_model_resolve: path_out is NULL");
    *path_out = NULL;
    if (!name) return hl_fail(HEARTH_ERR_INVALID_ARG, "hearth_model_resolve: name is NULL");
    const hearth_fetch_params p = params ? *params : hearth_fetch_default_params();
    hl_name n;
    HL_TRY(hl_name_parse(name, &n));
    if (n.kind == HL_NAME_PATH) return give(n.text, path_out);
    char root[2048];
    HL_TRY(hl_store_root(&p, root, sizeof root));
    if (n.kind == HL_NAME_URL) return resolve_url(&n, root, &p, path_out);
    if (n.kind == HL_NAME_OLLAMA) return resolve_ollama(&n, root, &p, path_out);
    return resolve_hf(&n, root, &p, path_out);
}
