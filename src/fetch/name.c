/* Model names (fetch.h): which of the forms of hearth_model_resolve() a
 * string is, and the quant tag and split numbering of GGUF file names
 * (llama.cpp's gguf-split names its parts PREFIX-00001-of-00003.gguf,
 * examples/gguf-split/gguf-split.cpp: split_path). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "base/status.h"
#include "fetch/fetch.h"

static bool has_prefix(const char *s, const char *prefix) { return strncasecmp(s, prefix, strlen(prefix)) == 0; }

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcasecmp(s + n - k, suffix) == 0;
}

/* Characters of repository, model and tag names (Hugging Face and Ollama
 * allow letters, digits, '-', '_' and '.'). */
static bool name_chars(const char *s, size_t n) {
    if (n == 0) return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && !strchr("-_.", s[i])) return false;
    return !(n == 1 && s[0] == '.') && !(n == 2 && s[0] == '.' && s[1] == '.');
}

/* Copies s[0..n) into a buffer of `size` bytes; false when it does not fit. */
static bool copy_n(char *dst, size_t size, const char *s, size_t n) {
    if (n >= size) return false;
    memcpy(dst, s, n);
    dst[n] = '\0';
    return true;
}

/* "OWNER/REPO[:QUANT]" after hf.co/. */
static bool parse_hf(const char *s, hl_name *out) {
    const char *colon = strchr(s, ':'), *end = colon ? colon : s + strlen(s);
    const char *slash = memchr(s, '/', (size_t)(end - s));
    if (!slash || memchr(slash + 1, '/', (size_t)(end - slash - 1))) return false;
    if (!name_chars(s, (size_t)(slash - s)) || !name_chars(slash + 1, (size_t)(end - slash - 1))) return false;
    if (colon && !name_chars(colon + 1, strlen(colon + 1))) return false;
    out->kind = HL_NAME_HF;
    return copy_n(out->repo, sizeof out->repo, s, (size_t)(end - s)) &&
           copy_n(out->quant, sizeof out->quant, colon ? colon + 1 : "", colon ? strlen(colon + 1) : 0);
}

/* "[NAMESPACE/]NAME[:TAG]" after ollama: (the registry's default namespace
 * is "library"). */
static bool parse_ollama(const char *s, hl_name *out) {
    const char *colon = strchr(s, ':'), *end = colon ? colon : s + strlen(s);
    const char *slash = memchr(s, '/', (size_t)(end - s));
    const char *model = slash ? slash + 1 : s;
    if (slash && !name_chars(s, (size_t)(slash - s))) return false;
    if (!name_chars(model, (size_t)(end - model)) || (colon && !name_chars(colon + 1, strlen(colon + 1)))) return false;
    out->kind = HL_NAME_OLLAMA;
    return copy_n(out->ns, sizeof out->ns, slash ? s : "library", slash ? (size_t)(slash - s) : 7) &&
           copy_n(out->model, sizeof out->model, model, (size_t)(end - model)) &&
           copy_n(out->tag, sizeof out->tag, colon ? colon + 1 : "latest", colon ? strlen(colon + 1) : 6);
}

hearth_status hl_name_parse(const char *name, hl_name *out) {
    *out = (hl_name){.kind = HL_NAME_PATH};
    if (!name || !*name) return hl_fail(HEARTH_ERR_INVALID_ARG, "the model name is empty");
    if (strlen(name) >= sizeof out->text) return hl_fail(HEARTH_ERR_INVALID_ARG, "the model name is too long");
    strcpy(out->text, name);
    struct stat st;
    if (has_prefix(name, "http://") || has_prefix(name, "https://")) {
        out->kind = HL_NAME_URL;
        return HEARTH_OK;
    }
    if (has_prefix(name, "ollama:")) {
        if (parse_ollama(name + 7, out)) return HEARTH_OK;
        return hl_fail(HEARTH_ERR_INVALID_ARG,
                       "'%s' is not an Ollama name: write ollama:NAME[:TAG] (ollama:llama3.2:1b)", name);
    }
    const char *hf = has_prefix(name, "hf.co/") ? name + 6 : has_prefix(name, "huggingface.co/") ? name + 15 : NULL;
    if (hf) {
        if (parse_hf(hf, out)) return HEARTH_OK;
        return hl_fail(HEARTH_ERR_INVALID_ARG,
                       "'%s' is not a Hugging Face repository: write hf.co/OWNER/REPO[:QUANT] "
                       "(hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M)",
                       name);
    }
    if (stat(name, &st) == 0 || ends_with(name, ".gguf") || strchr(name, '/')) return HEARTH_OK;
    if (hl_catalog_lookup(name, out)) return HEARTH_OK;
    char names[1024];
    hl_catalog_names(names, sizeof names);
    return hl_fail(HEARTH_ERR_INVALID_ARG,
                   "unknown model '%s': give a .gguf file, a catalog name (%s, optionally :QUANT), "
                   "hf.co/OWNER/REPO[:QUANT], ollama:NAME[:TAG] or an http(s) URL",
                   name, names);
}

bool hl_split_name(const char *file, uint32_t *no, uint32_t *count, size_t *prefix_len) {
    /* "-00001-of-00003.gguf" is 20 characters */
    const size_t n = strlen(file);
    if (n < 20 || !ends_with(file, ".gguf")) return false;
    const char *s = file + n - 20;
    unsigned a, b;
    char dash, tail[8];
    if (sscanf(s, "%c%5u-of-%5u%6s", &dash, &a, &b, tail) != 4 || dash != '-' || strcasecmp(tail, ".gguf"))
        return false;
    for (int i = 1; i <= 5; i++)
        if (!isdigit((unsigned char)s[i]) || !isdigit((unsigned char)s[i + 9])) return false;
    if (a < 1 || b < 1 || a > b) return false;
    *no = a;
    *count = b;
    *prefix_len = n - 20;
    return true;
}

void hl_quant_of_file(const char *file, char *out, size_t size) {
    out[0] = '\0';
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    size_t end = strlen(base);
    uint32_t no, count;
    size_t prefix;
    if (hl_split_name(base, &no, &count, &prefix)) end = prefix;
    else if (ends_with(base, ".gguf")) end -= 5;
    size_t start = end;
    while (start > 0 && base[start - 1] != '-' && base[start - 1] != '.') start--;
    const char *w = base + start;
    const size_t len = end - start;
    /* llama.cpp's file type names: Q4_K_M, IQ4_XS, TQ1_0, F16, BF16, F32, MXFP4 */
    const bool looks = len >= 2 && (((w[0] == 'q' || w[0] == 'Q') && isdigit((unsigned char)w[1])) ||
                                    has_prefix(w, "iq") || has_prefix(w, "tq") || has_prefix(w, "f16") ||
                                    has_prefix(w, "f32") || has_prefix(w, "bf16") || has_prefix(w, "mxfp4"));
    if (!looks || len >= size) return;
    for (size_t i = 0; i < len; i++) out[i] = (char)toupper((unsigned char)w[i]);
    out[len] = '\0';
}

uint32_t hl_split_count(const char *file) {
    uint32_t no, count;
    size_t prefix;
    return hl_split_name(file, &no, &count, &prefix) ? count : 1;
}

void hl_split_part_name(const char *first, uint32_t no, uint32_t count, char *buf, size_t size) {
    uint32_t a, b;
    size_t prefix = strlen(first);
    if (!hl_split_name(first, &a, &b, &prefix)) prefix = strlen(first);
    snprintf(buf, size, "%.*s-%05u-of-%05u.gguf", (int)prefix, first, no, count);
}
