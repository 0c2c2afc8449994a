/* Ollama models (fetch.h). An Ollama model is an OCI-style image: a manifest
 * (Docker's image manifest v2, schema 2) whose layers include one of media
 * type application/vnd.ollama.image.model, the GGUF file, stored as a blob
 * named by its sha256 digest. The registry serves
 * GET /v2/NAMESPACE/NAME/manifests/TAG and /v2/NAMESPACE/NAME/blobs/DIGEST
 * (the OCI distribution spec); a local Ollama store keeps
 * manifests/registry.ollama.ai/NAMESPACE/NAME/TAG and blobs/sha256-HEX
 * (ollama's server/modelpath.go). */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/status.h"
#include "fetch/fetch.h"

#define MODEL_LAYER "application/vnd.ollama.image.model"
#define MANIFEST_V2 "application/vnd.docker.distribution.manifest.v2+json"

const char *hl_ollama_registry(char *buf, size_t size) {
    return hl_http_base_url("OLLAMA_REGISTRY", "https://registry.ollama.ai", buf, size);
}

hearth_status hl_ollama_model_layer(const char *manifest, size_t len, char sha256[HL_SHA256_HEX], uint64_t *size) {
    cJSON *root = cJSON_ParseWithLength(manifest, len);
    const cJSON *layer;
    hearth_status st = hl_fail(HEARTH_ERR_FORMAT, "the Ollama manifest has no layer of type " MODEL_LAYER
                                                  " (is it a model, and is OLLAMA_REGISTRY an Ollama registry?)");
    cJSON_ArrayForEach(layer, cJSON_GetObjectItemCaseSensitive(root, "layers")) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(layer, "mediaType");
        const cJSON *digest = cJSON_GetObjectItemCaseSensitive(layer, "digest");
        const cJSON *sz = cJSON_GetObjectItemCaseSensitive(layer, "size");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, MODEL_LAYER) != 0) continue;
        const char *d = cJSON_IsString(digest) ? digest->valuestring : "";
        bool hex = strncmp(d, "sha256:", 7) == 0 && strlen(d) == 7 + 64;
        for (int i = 7; hex && i < 7 + 64; i++) hex = isxdigit((unsigned char)d[i]) != 0;
        if (!hex || !cJSON_IsNumber(sz) || sz->valuedouble < 0) {
            st = hl_fail(HEARTH_ERR_FORMAT, "the Ollama manifest's model layer has no sha256 digest or size");
            break;
        }
        memcpy(sha256, d + 7, 65);
        *size = (uint64_t)sz->valuedouble;
        hl_clear_error();
        st = HEARTH_OK;
        break;
    }
    cJSON_Delete(root);
    return st;
}

/* Puts "WHERE: " before the last error message. */
static hearth_status prefix_error(hearth_status st, const char *where) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", hearth_last_error());
    return hl_fail(st, "%s: %s", where, msg);
}

/* Reads a whole small file; NULL when it is missing. */
static char *read_small(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    if (fseek(f, 0, SEEK_END) == 0) {
        const long n = ftell(f);
        if (n >= 0 && n < (1 << 24) && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1))) {
            *len = fread(buf, 1, (size_t)n, f);
            buf[*len] = '\0';
        }
    }
    fclose(f);
    return buf;
}

hearth_status hl_ollama_local(const hl_name *n, char **path) {
    *path = NULL;
    const char *env = getenv("OLLAMA_MODELS"), *home = getenv("HOME");
    char root[1024], file[2048];
    if (env && *env) snprintf(root, sizeof root, "%s", env);
    else if (home && *home) snprintf(root, sizeof root, "%s/.ollama/models", home);
    else return HEARTH_OK;
    snprintf(file, sizeof file, "%s/manifests/registry.ollama.ai/%s/%s/%s", root, n->ns, n->model, n->tag);
    size_t len = 0;
    char *manifest = read_small(file, &len);
    if (!manifest) return HEARTH_OK;
    char sha[HL_SHA256_HEX];
    uint64_t size;
    hearth_status st = hl_ollama_model_layer(manifest, len, sha, &size);
    free(manifest);
    if (st != HEARTH_OK) return prefix_error(st, file);
    snprintf(file, sizeof file, "%s/blobs/sha256-%s", root, sha);
    struct stat sb;
    if (stat(file, &sb) != 0 || (uint64_t)sb.st_size != size) return HEARTH_OK; /* an unfinished Ollama pull */
    if (!(*path = strdup(file))) return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory");
    return HEARTH_OK;
}

hearth_status hl_ollama_remote(const hl_name *n, char sha256[HL_SHA256_HEX], uint64_t *size) {
    char reg[512], url[1024];
    snprintf(url, sizeof url, "%s/v2/%s/%s/manifests/%s", hl_ollama_registry(reg, sizeof reg), n->ns, n->model, n->tag);
    char *body;
    size_t len;
    HL_TRY(hl_http_get(url, MANIFEST_V2, &body, &len));
    hearth_status st = hl_ollama_model_layer(body, len, sha256, size);
    free(body);
    if (st != HEARTH_OK) return prefix_error(st, url);
    return HEARTH_OK;
}
