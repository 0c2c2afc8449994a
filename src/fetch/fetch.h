/* Models by name (hearth_model_resolve() and the store calls of hearth.h):
 * the pieces src/fetch/ is made of and how they meet.
 *
 *   name.c      a name -> what it means (hl_name)
 *   catalog.c   short names from data/catalog.json (compiled in)
 *   hf.c        a Hugging Face repository's listing; picking the quant's file(s)
 *   ollama.c    Ollama manifests: the registry's and a local Ollama store's
 *   store.c     the store folder: paths, settings from the environment, list, remove
 *   http.c      libcurl requests for small documents; HTTP failures as one line
 *   download.c  one file: lock, free space, resume, retry, sha256, atomic rename
 *   resolve.c   hearth_model_resolve(): the above put together */
#ifndef HEARTH_FETCH_H
#define HEARTH_FETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/progress.h"
#include "hearth.h"

#define HL_SHA256_HEX 65 /* 64 hex digits and a NUL */

/* ------------------------------------------------------------ name.c -- */

typedef enum hl_name_kind {
    HL_NAME_PATH,   /* a local file */
    HL_NAME_URL,    /* http(s)://... */
    HL_NAME_HF,     /* a Hugging Face repository (from hf.co/... or the catalog) */
    HL_NAME_OLLAMA, /* ollama:NAME[:TAG] */
} hl_name_kind;

typedef struct hl_name {
    hl_name_kind kind;
    char text[1024];            /* PATH: the path; URL: the URL */
    char repo[256];             /* HF: "OWNER/REPO" */
    char quant[64];             /* HF: the quant tag asked for ("" = the default order) */
    char file[512];             /* HF: the file when the catalog names it, else "" */
    char sha256[HL_SHA256_HEX]; /* HF: the catalog's sha256 of `file`, else "" */
    char catalog[64];           /* HF from the catalog: its short name ("llama3.2:1b"), else "" */
    char ns[128];               /* OLLAMA: namespace ("library") */
    char model[128];            /* OLLAMA: model name */
    char tag[128];              /* OLLAMA: tag ("latest") */
} hl_name;

/* Parses `name` (the forms of hearth_model_resolve()). INVALID_ARG with the
 * list of forms and catalog names for anything else. */
hearth_status hl_name_parse(const char *name, hl_name *out);

/* The quant tag in a GGUF file name, upper-cased, into out ("" when none):
 * the last '-' or '.' separated word before ".gguf" (and before a split
 * suffix) when it looks like one (Q4_K_M, IQ4_XS, F16, BF16 ...). */
void hl_quant_of_file(const char *file, char *out, size_t size);

/* A split file name "PREFIX-00001-of-00003.gguf" (llama.cpp's gguf-split
 * naming): *no (1-based), *count and the length of PREFIX. False when the
 * name is not one. */
bool hl_split_name(const char *file, uint32_t *no, uint32_t *count, size_t *prefix_len);

/* The number of files of a model whose (first) file is `file`: count for
 * a split name, else 1. */
uint32_t hl_split_count(const char *file);

/* The name of part `no` of `count` of the split model whose first file is
 * `first` (same folder and prefix). */
void hl_split_part_name(const char *first, uint32_t no, uint32_t count, char *buf, size_t size);

/* ---------------------------------------------------------- catalog.c -- */

/* Looks `name` up in the catalog: a short name, or one with ":QUANT". On a
 * hit fills out (kind HF, repo, quant, and file/sha256 when the catalog has
 * them) and returns true. */
bool hl_catalog_lookup(const char *name, hl_name *out);

/* The catalog's names, comma-separated, into buf (for messages). */
void hl_catalog_names(char *buf, size_t size);

/* The catalog name of a stored file of repository `repo` with quant tag
 * `quant`, into buf: "NAME" for the entry's default quant, "NAME:QUANT"
 * for another. False when no entry has that repository. */
bool hl_catalog_name_of(const char *repo, const char *quant, char *buf, size_t size);

/* --------------------------------------------------------------- hf.c -- */

typedef struct hl_hf_file {
    char *path; /* in the repository, may hold '/' */
    uint64_t size;
    char sha256[HL_SHA256_HEX]; /* the LFS object id; "" for a file not in LFS */
} hl_hf_file;

/* The files of a repository (recursive listing), into *files (n entries);
 * free with hl_hf_files_free(). Errors: NETWORK (with what to do), FORMAT. */
hearth_status hl_hf_list(const char *repo, hl_hf_file **files, size_t *n);
void hl_hf_files_free(hl_hf_file *files, size_t n);

/* Picks the model among `paths` (n names): for `quant` the .gguf whose file
 * name carries it as a word (case-insensitive), for "" Q4_K_M, then Q4_0,
 * then the first .gguf by name; a split model is named by its first file, other
 * parts and mmproj files are skipped. Returns the index, or -1. */
long hl_hf_select(const char *const *paths, size_t n, const char *quant);

/* HF_ENDPOINT without a trailing '/', or https://huggingface.co. */
const char *hl_hf_endpoint(char *buf, size_t size);

/* ----------------------------------------------------------- ollama.c -- */

/* The model layer of an Ollama image manifest (JSON text): its digest's hex
 * into sha256 and its size. FORMAT when the manifest has none. */
hearth_status hl_ollama_model_layer(const char *manifest, size_t len, char sha256[HL_SHA256_HEX], uint64_t *size);

/* The blob of ns/model:tag in the local Ollama store (OLLAMA_MODELS, else
 * ~/.ollama/models), malloc'd into *path; NULL when the store lacks it. */
hearth_status hl_ollama_local(const hl_name *n, char **path);

/* Fetches the manifest of ns/model:tag from OLLAMA_REGISTRY: the model
 * layer's sha256 and size. Errors: NETWORK, FORMAT. */
hearth_status hl_ollama_remote(const hl_name *n, char sha256[HL_SHA256_HEX], uint64_t *size);

/* OLLAMA_REGISTRY without a trailing '/', or https://registry.ollama.ai. */
const char *hl_ollama_registry(char *buf, size_t size);

/* ------------------------------------------------------------ store.c -- */

/* The store's folder (p->models_dir, HEARTH_MODELS, XDG_CACHE_HOME/hearth,
 * HOME/.cache/hearth), without a trailing '/'. IO when none can be named. */
hearth_status hl_store_root(const hearth_fetch_params *p, char *buf, size_t size);

/* Whether to stay off the network: p->offline or HEARTH_OFFLINE. */
bool hl_store_offline(const hearth_fetch_params *p);

/* The store path of a URL, an Ollama name or a Hugging Face file (`file`
 * in repository n->repo). FORMAT for a component that could escape the
 * store ("..", empty). */
hearth_status hl_store_path(const char *root, const hl_name *n, const char *file, char *buf, size_t size);

/* The file of Hugging Face model n (its path in the repository, malloc'd
 * into *file) that the store holds whole, all parts of a split model
 * present: the catalog's file, or the choice hl_hf_select() makes among the
 * repository's files in the store. NULL when there is none. */
hearth_status hl_store_hf_local(const hl_name *n, const char *root, char **file);

/* Creates every missing folder above `path`. */
hearth_status hl_mkdirs_for(const char *path);

/* An environment variable as a number within [lo, hi], else `def`. */
long hl_env_long(const char *name, long def, long lo, long hi);

/* The .gguf files under `dir` (recursively, paths relative to it, complete
 * files only), malloc'd into *paths (n entries; free each and the array). A
 * missing folder gives none. */
hearth_status hl_store_scan(const char *dir, char ***paths, size_t *n);

/* ------------------------------------------------------------- http.c -- */

/* Starts libcurl once per process (thread-safe). */
void hl_http_init(void);

/* The URL in environment variable `env`, else `fallback`, without a
 * trailing '/', into buf. */
const char *hl_http_base_url(const char *env, const char *fallback, char *buf, size_t size);

/* GETs a small document (at most 64 MiB) into a malloc'd, NUL-terminated
 * *body. `accept` may be NULL; the bearer token goes to HF_ENDPOINT only.
 * Errors: NETWORK (the message says what to do), OUT_OF_MEMORY. */
hearth_status hl_http_get(const char *url, const char *accept, char **body, size_t *len);

/* The failure of a transfer as one line: a libcurl error (DNS, connect,
 * timeout) or an HTTP status (401/403/404 with what to do). */
hearth_status hl_http_fail(int curl_code, long http_code, const char *url, const char *curl_msg);

/* Sets what every request shares on a libcurl easy handle: the URL,
 * redirects, user agent, connect timeout, the token for HF_ENDPOINT and
 * `accept`. Returns the header list to free with curl_slist_free_all() after
 * the transfer (may be NULL). */
struct curl_slist *hl_http_setup(void *curl, const char *url, const char *accept);

/* --------------------------------------------------------- download.c -- */

typedef struct hl_download {
    const char *url;
    const char *dest;      /* the final path (in the store) */
    const char *sha256;    /* expected hex digest, or NULL: the server's X-Linked-Etag when it is one */
    uint64_t size;         /* expected bytes, 0 when unknown */
    hl_progress *progress; /* may be NULL */
} hl_download;

/* Downloads d->url to d->dest as hearth_model_resolve() describes (lock,
 * free space, resume, retries, verification, atomic rename). A dest that
 * exists once the lock is held is kept as it is. */
hearth_status hl_download_file(const hl_download *d);

#endif
