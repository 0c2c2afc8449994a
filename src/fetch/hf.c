/* Hugging Face repositories (fetch.h): the file listing of the Hub's API,
 * GET {HF_ENDPOINT}/api/models/{repo}/tree/main?recursive=true, a JSON array
 * of {"type": "file", "path", "size", "lfs": {"oid": sha256, "size"}}
 * (huggingface_hub's HfApi.list_repo_tree), and the choice of a model file
 * by its quant tag as llama.cpp's -hf does (common/arg.cpp,
 * common_get_hf_file: the tag, default Q4_K_M, then the first .gguf). */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/status.h"
#include "fetch/fetch.h"

const char *hl_hf_endpoint(char *buf, size_t size) {
    return hl_http_base_url("HF_ENDPOINT", "https://huggingface.co", buf, size);
}

void hl_hf_files_free(hl_hf_file *files, size_t n) {
    for (size_t i = 0; files && i < n; i++) free(files[i].path);
    free(files);
}

static bool is_hex64(const char *s) {
    if (!s || strlen(s) != 64) return false;
    for (int i = 0; i < 64; i++)
        if (!isxdigit((unsigned char)s[i])) return false;
    return true;
}

static hearth_status parse_listing(const char *repo, const char *body, hl_hf_file **files, size_t *n) {
    cJSON *root = cJSON_Parse(body);
    if (!cJSON_IsArray(root)) {
        cJSON_Delete(root);
        return hl_fail(HEARTH_ERR_FORMAT,
                       "the file listing of %s is not a JSON array: is HF_ENDPOINT a Hugging Face Hub?", repo);
    }
    const int count = cJSON_GetArraySize(root);
    hl_hf_file *out = hl_calloc((size_t)count + 1, sizeof *out);
    size_t k = 0;
    const cJSON *e;
    hearth_status st = out ? HEARTH_OK : HEARTH_ERR_OUT_OF_MEMORY;
    cJSON_ArrayForEach(e, root) {
        if (st != HEARTH_OK) break;
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(e, "type"),
                    *path = cJSON_GetObjectItemCaseSensitive(e, "path");
        const cJSON *size = cJSON_GetObjectItemCaseSensitive(e, "size"),
                    *lfs = cJSON_GetObjectItemCaseSensitive(e, "lfs");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "file") != 0) continue;
        if (!cJSON_IsString(path) || !cJSON_IsNumber(size) || size->valuedouble < 0) {
            st = hl_fail(HEARTH_ERR_FORMAT, "the file listing of %s has an entry without a path or size", repo);
            break;
        }
        const cJSON *oid = cJSON_GetObjectItemCaseSensitive(lfs, "oid");
        out[k].path = strdup(path->valuestring);
        out[k].size = (uint64_t)size->valuedouble;
        if (cJSON_IsString(oid) && is_hex64(oid->valuestring)) strcpy(out[k].sha256, oid->valuestring);
        if (!out[k++].path) st = hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory");
    }
    cJSON_Delete(root);
    if (st != HEARTH_OK) {
        hl_hf_files_free(out, k);
        return st;
    }
    *files = out;
    *n = k;
    return HEARTH_OK;
}

hearth_status hl_hf_list(const char *repo, hl_hf_file **files, size_t *n) {
    char ep[512], url[1024];
    snprintf(url, sizeof url, "%s/api/models/%s/tree/main?recursive=true", hl_hf_endpoint(ep, sizeof ep), repo);
    char *body;
    size_t len;
    HL_TRY(hl_http_get(url, "application/json", &body, &len));
    hearth_status st = parse_listing(repo, body, files, n);
    free(body);
    return st;
}

static bool ends_gguf(const char *s) {
    const size_t n = strlen(s);
    return n >= 5 && strcasecmp(s + n - 5, ".gguf") == 0;
}

/* Whether the file name (after the last '/') holds `tag` as a word: not
 * preceded by a letter or digit, nor followed by one or by '_' (so Q4_K
 * does not pick Q4_K_M). */
static bool has_tag(const char *path, const char *tag) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const size_t n = strlen(tag);
    for (const char *s = base; *s; s++) {
        if (strncasecmp(s, tag, n) != 0) continue;
        const char after = s[n];
        if ((s == base || !isalnum((unsigned char)s[-1])) && !isalnum((unsigned char)after) && after != '_')
            return true;
    }
    return false;
}

/* A model's first (or only) file: a .gguf that is not part 2+ of a split
 * model, nor a multimodal projector. */
static bool is_model_file(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    uint32_t no, count;
    size_t prefix;
    if (!ends_gguf(base) || strncasecmp(base, "mmproj", 6) == 0) return false;
    return !hl_split_name(base, &no, &count, &prefix) || no == 1;
}

static long first_with(const char *const *paths, size_t n, const char *tag) {
    long best = -1;
    for (size_t i = 0; i < n; i++)
        if (is_model_file(paths[i]) && (!tag || has_tag(paths[i], tag)) &&
            (best < 0 || strcmp(paths[i], paths[best]) < 0))
            best = (long)i;
    return best;
}

long hl_hf_select(const char *const *paths, size_t n, const char *quant) {
    if (quant && *quant) return first_with(paths, n, quant);
    long i = first_with(paths, n, "Q4_K_M");
    if (i < 0) i = first_with(paths, n, "Q4_0");
    return i >= 0 ? i : first_with(paths, n, NULL);
}
