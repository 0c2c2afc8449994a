/* hearth.h — the public C API of hearth, an inference engine for GGUF language
 * models. Everything users touch (the `hearth` command, later the server and the
 * language bindings) is a client of this header.
 *
 * Conventions
 * - Fallible calls return hearth_status. On failure, hearth_last_error() holds a
 *   one-line message saying what is wrong and what to do. The library never
 *   exits the process and prints nothing unless a log callback is set.
 * - Handles are opaque and come in _load/_free or _init/_free pairs. Passing NULL
 *   to a _free function is a no-op.
 * - Token ids are int32 indices into the model's vocabulary [0, n_vocab).
 * - Thread safety: a hearth_model is immutable after load and may be shared by
 *   any number of threads and contexts. A hearth_context, hearth_sampler and
 *   hearth_detok must each be used by one thread at a time. The last-error
 *   message is per thread.
 */
#ifndef HEARTH_H
#define HEARTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HEARTH_VERSION "0.1.0"

/* Marks the library's exported functions. libhearth is compiled with
 * -fvisibility=hidden, so the functions declared here are the only symbols a
 * shared libhearth exports; everything internal is hl_* and stays hidden. */
#ifndef HEARTH_API
#if defined(__GNUC__) || defined(__clang__)
#define HEARTH_API __attribute__((visibility("default")))
#else
#define HEARTH_API
#endif
#endif

/* ---------------------------------------------------------------- status -- */

typedef enum hearth_status {
    HEARTH_OK = 0,
    HEARTH_ERR_INVALID_ARG = 1,      /* a parameter is out of range or NULL */
    HEARTH_ERR_IO = 2,               /* a file could not be opened, read or mapped */
    HEARTH_ERR_FORMAT = 3,           /* a file is malformed (truncated, hostile, inconsistent) */
    HEARTH_ERR_UNSUPPORTED = 4,      /* valid input hearth cannot run (architecture, tensor type) */
    HEARTH_ERR_OUT_OF_MEMORY = 5,    /* host or device allocation failed */
    HEARTH_ERR_CONTEXT_FULL = 6,     /* the tokens do not fit in n_ctx */
    HEARTH_ERR_BUFFER_TOO_SMALL = 7, /* a caller's buffer is too small; the size needed is reported */
    HEARTH_ERR_DEVICE = 8,           /* a compute device failed or is missing */
    HEARTH_ERR_BUSY = 9,             /* an engine's queue is full: retry later */
    HEARTH_ERR_NETWORK =
        10, /* a download failed: host unknown or unreachable, refused (HTTP 401/403/404 ...), cut too often */
    HEARTH_ERR_CANCELLED = 11, /* a progress callback returned false */
} hearth_status;

/* The message of the last failure on the calling thread ("" if none). The
 * string is owned by the library and valid until the next hearth call on this
 * thread. Thread-safe. */
HEARTH_API const char *hearth_last_error(void);

/* A static, human-readable name for a status ("bad file format"). Thread-safe. */
HEARTH_API const char *hearth_status_str(hearth_status st);

/* --------------------------------------------------------------- logging -- */

typedef enum hearth_log_level {
    HEARTH_LOG_DEBUG = 0,
    HEARTH_LOG_INFO = 1,
    HEARTH_LOG_WARN = 2,
    HEARTH_LOG_ERROR = 3,
} hearth_log_level;

/* Receives one message without a trailing newline; `msg` is valid only during
 * the call. May be called from any library thread. */
typedef void (*hearth_log_fn)(hearth_log_level level, const char *msg, void *user);

/* Sets the process-wide log callback (NULL: silence, the default). Not
 * thread-safe: call it before other hearth calls. */
HEARTH_API void hearth_log_set(hearth_log_fn fn, void *user);

/* ------------------------------------------------------------ build info -- */

/* A static string describing the build: version, SIMD level used at run time,
 * backends compiled in. Example: "hearth 0.1.0; cpu: avx2 fma f16c; backends: cpu".
 * Thread-safe. */
HEARTH_API const char *hearth_build_info(void);

/* Number of physical CPU cores (the default n_threads), at least 1. */
HEARTH_API int32_t hearth_cpu_physical_cores(void);

/* Number of devices hearth can offload layers to, numbered CUDA first, then
 * OpenCL: the CUDA devices visible to the process (CUDA_VISIBLE_DEVICES
 * applies) that this build has kernels for, then every device of every
 * OpenCL platform (GPUs, and CPU devices such as PoCL's, which take layers
 * only when named: hearth_model_params.devices). Each has a name,
 * hearth_gpu_info.id: "cuda0" ..., "opencl0" ... (its number within its
 * backend). 0 when the build has neither backend, no driver or device is
 * present, or the environment variable HEARTH_FORCE_CPU is set (to
 * anything but "0"). The first call probes the drivers (milliseconds to a
 * second); later calls return the same answer. Thread-safe. */
HEARTH_API int32_t hearth_gpu_device_count(void);

/* Why no device takes offloaded layers by default (see
 * hearth_model_params.devices), as a string valid until the next call on
 * this thread (e.g. "this build has no CUDA backend ...; OpenCL: only CPU
 * devices, used when named", "HEARTH_FORCE_CPU is set"); NULL when one
 * does. Thread-safe. */
HEARTH_API const char *hearth_gpu_unavailable_reason(void);

typedef struct hearth_gpu_info {
    char name[256];         /* "NVIDIA H100 80GB HBM3"; OpenCL: "<device> (<platform>)" */
    int32_t cc_major;       /* CUDA compute capability, e.g. 9; 0 for OpenCL */
    int32_t cc_minor;       /* e.g. 0 */
    uint64_t free_bytes;    /* device memory free now, bytes (OpenCL: total less what hearth holds) */
    uint64_t total_bytes;   /* device memory, bytes */
    char id[24];            /* "cuda0", "opencl1": the name hearth_model_params.devices takes */
    int32_t compute_units;  /* CUDA multiprocessors, OpenCL compute units */
    bool is_gpu;            /* false for an OpenCL CPU device (used only when named) */
    char backend[16];       /* the backend that drives it: "cuda", "opencl" (id is this and
                                the device's number within the backend) */
    char backend_label[16]; /* the same as messages and llama-bench's backends column name
                                it: "CUDA", "OpenCL" */
} hearth_gpu_info;

/* Facts of GPU `device` (0 <= device < hearth_gpu_device_count()) into *out;
 * free_bytes is measured at the call. Errors: INVALID_ARG (NULL out, device
 * out of range), DEVICE (the driver failed). Thread-safe. */
HEARTH_API hearth_status hearth_gpu_device_info(int32_t device, hearth_gpu_info *out);

/* The weight types a device multiplies with, as its backend answers:
 * ggml's type names separated by spaces (e.g. "f32 f16 bf16 q4_0 ... q6_K")
 * into buf, NUL-terminated. device -1 is the CPU, 0 <= device <
 * hearth_gpu_device_count() a GPU. A model load keeps the layers whose
 * weights a GPU cannot multiply on the CPU. Errors: INVALID_ARG (NULL buf,
 * device out of range), BUFFER_TOO_SMALL (size; 256 bytes hold every
 * type), OUT_OF_MEMORY, DEVICE. Thread-safe. */
HEARTH_API hearth_status hearth_device_weight_types(int32_t device, char *buf, size_t size);

/* Whether model layers go to a device by default in this process (a CUDA
 * device, an OpenCL GPU, or what HEARTH_DEVICE names; see
 * hearth_model_params.devices). Thread-safe. */
HEARTH_API bool hearth_supports_gpu_offload(void);

/* Whether hearth_model_params.use_mmap can map model files (POSIX builds:
 * true). Thread-safe. */
HEARTH_API bool hearth_supports_mmap(void);

/* Whether hearth_model_params.use_mlock can lock weights in RAM (POSIX
 * builds: true; the lock may still fail at load under RLIMIT_MEMLOCK, which
 * is logged as a warning). Thread-safe. */
HEARTH_API bool hearth_supports_mlock(void);

/* -------------------------------------------------------------- progress -- */

/* Progress of a long operation: a download (hearth_model_resolve()) or a
 * model load that uploads weights to a GPU. */
typedef struct hearth_progress {
    const char *what; /* what is being done: a file name, or "load" */
    uint64_t done;    /* bytes done (for a resumed download, counting the bytes it already had) */
    uint64_t total;   /* bytes in all; 0 when not known (yet) */
    double rate;      /* bytes per second, smoothed over the last seconds; 0 until measured */
    double eta;       /* seconds left at that rate; -1 when not known */
    double elapsed;   /* seconds since the operation started */
    bool finished;    /* the last report of the operation (done == total when it succeeded) */
} hearth_progress;

/* Receives reports on the thread doing the work, about ten a second and a
 * last one with finished true; `p` is valid only during the call. Return true
 * to go on, false to cancel: the operation then fails with
 * HEARTH_ERR_CANCELLED (a download keeps its partial file for the next try). */
typedef bool (*hearth_progress_fn)(const hearth_progress *p, void *user);

/* ----------------------------------------------------------------- model -- */

typedef struct hearth_model hearth_model;

typedef enum hearth_split_mode {
    HEARTH_SPLIT_NONE = 0,  /* the whole model on main_gpu */
    HEARTH_SPLIT_LAYER = 1, /* layers spread over GPUs in tensor_split proportions */
    HEARTH_SPLIT_ROW = 2,   /* matrices split by rows over GPUs */
} hearth_split_mode;

/* n_gpu_layers: as many layers as fit (hearth_model_params.fit_n_ctx). */
#define HEARTH_N_GPU_LAYERS_AUTO (-2)

typedef struct hearth_model_params {
    /* Layers to place on GPUs: 0 = CPU only, N = the first N blocks (the
     * rest run on the CPU, the hidden state crossing between them), -1 or
     * more than n_layer = every block and the output layer (final norm and
     * output matrix), HEARTH_N_GPU_LAYERS_AUTO = the most layers (counting
     * the output layer as the last) whose weights fit in the devices' free
     * memory together with a context of fit_n_ctx tokens and a margin (see
     * fit_n_ctx); hearth_model_n_gpu_layers() tells how many that was.
     * Token embeddings stay in host memory. Without a usable GPU the model
     * runs on the CPU, "CUDA unavailable (<reason>); running on CPU" is
     * logged once per process (warn), and hearth_model_n_gpu_layers()
     * reports 0. Values below -2 are INVALID_ARG. */
    int32_t n_gpu_layers;
    /* With n_gpu_layers AUTO: the context, in tokens over all sequences,
     * that must fit beside the layers; 0 (default) = the context default
     * (n_ctx_train, at most 4096). Each offloaded block then needs its
     * weights plus its KV cache of fit_n_ctx positions (fit_n_ctx rows of
     * n_head_kv x head_dim elements for K in fit_type_k and for V in
     * fit_type_v: 2 bytes an element for F16 and BF16, 34 bytes per 32 for
     * Q8_0, 18 for Q4_0), and each device keeps 256 MiB more free for
     * buffers (cuBLAS, scratch, activations) and 1/20 of its free memory as
     * a margin. Ignored otherwise. */
    uint32_t fit_n_ctx;
    /* With n_gpu_layers AUTO: the KV cache types (hearth_kv_type) the
     * context will have (hearth_context_params.type_k / type_v); 0 (default)
     * = F16. Another value is INVALID_ARG at load. Ignored otherwise. */
    int32_t fit_type_k, fit_type_v;
    /* How offloaded layers spread over several GPUs: NONE = all on main_gpu;
     * LAYER = consecutive runs of layers in tensor_split proportions; ROW is
     * not supported yet (UNSUPPORTED at load). */
    hearth_split_mode split_mode;
    int32_t main_gpu; /* device index for SPLIT_NONE */
    /* per-device proportions [number of devices in `devices`], or NULL for
     * proportions of each device's free memory; not retained */
    const float *tensor_split;
    /* The devices offloaded layers go to, by name, comma-separated
     * ("cuda0", "opencl0,opencl1"; hearth_gpu_info.id), in the order that
     * main_gpu and tensor_split index; or NULL: the environment variable
     * HEARTH_DEVICE, or when unset every CUDA device, else every OpenCL GPU
     * (an OpenCL CPU device such as PoCL's only when named). An unknown
     * name fails the load with INVALID_ARG, listing the devices. Not
     * retained. */
    const char *devices;
    bool use_mmap;   /* map the file instead of reading it (default true). false reads it
                                   into private memory advised as transparent huge pages (Linux):
                                   faster CPU decode (fewer TLB misses), a slower load, memory not
                                   shared with other processes; HEARTH_ERR_OUT_OF_MEMORY when the
                                   file does not fit */
    bool use_mlock;  /* lock the weights in RAM (default false) */
    bool vocab_only; /* load only the vocabulary (tokenize without weights) */
    /* Reports the bytes of weights uploaded to GPUs (what = "load"), or NULL;
     * not called when no layer is offloaded. Returning false cancels the
     * load (HEARTH_ERR_CANCELLED). */
    hearth_progress_fn progress;
    void *progress_user;
} hearth_model_params;

/* Defaults: n_gpu_layers 0, fit_n_ctx 0, fit_type_k and fit_type_v 0 (F16), SPLIT_LAYER, main_gpu 0, tensor_split NULL, devices NULL,
 * use_mmap true, use_mlock false, vocab_only false, no progress callback. */
HEARTH_API hearth_model_params hearth_model_default_params(void);

/* Loads a GGUF model (version 2 or 3) from `path`. The file is validated in
 * full before use. A model split over several files (llama.cpp's
 * gguf-split: NAME-00001-of-00003.gguf ...) is loaded from its first file,
 * the others being found beside it; the parts must agree (split.count,
 * split.no, split.tensors.count). hearth_model_resolve() (below) turns a
 * model name such as "llama3.2:1b" into a path. On success *out owns the model; free it with
 * hearth_model_free(). `params` may be NULL for the defaults.
 * Errors: INVALID_ARG (NULL path/out, bad params), IO (missing file, a
 * directory, unreadable), FORMAT (not GGUF, truncated, malformed or hostile
 * file; the message names the key or tensor), UNSUPPORTED (unknown
 * architecture, tokenizer or tensor type; split_mode ROW; a weight type the
 * GPU backend cannot compute in an offloaded layer), OUT_OF_MEMORY (host, or
 * a GPU's share of the layers does not fit its free memory: the message
 * gives the MiB needed and free and says to lower n_gpu_layers or n_ctx),
 * DEVICE (the GPU driver failed). On error *out is NULL and nothing is
 * leaked, device memory included. Thread-safe (distinct calls share
 * nothing). */
HEARTH_API hearth_status hearth_model_load(const char *path, const hearth_model_params *params, hearth_model **out);

/* Frees a model. Every context made from it must be freed first. */
HEARTH_API void hearth_model_free(hearth_model *model);

/* Model facts (model must be non-NULL; a vocab_only model reports 0 for the
 * weight figures). Pure getters; thread-safe. */
HEARTH_API int32_t hearth_model_n_vocab(const hearth_model *model);
HEARTH_API int32_t hearth_model_n_ctx_train(const hearth_model *model); /* context length trained for */
HEARTH_API int32_t hearth_model_n_embd(const hearth_model *model);
/* The pooling the file gives (<arch>.pooling_type: a hearth_pooling_type,
 * HEARTH_POOLING_NONE when absent). Thread-safe. */
HEARTH_API int32_t hearth_model_pooling_type(const hearth_model *model);
/* Scores a reranker gives per query-document pair under pooling RANK: the
 * outputs of its classification head (llama.cpp's n_cls_out): the length
 * of <arch>.classifier.output_labels where the file names them, else
 * cls.output.weight's rows, else 1 for a head of cls.weight alone; 0 for a
 * model without a classification head, which refuses pooling RANK.
 * Thread-safe. */
HEARTH_API int32_t hearth_model_n_cls_out(const hearth_model *model);
/* Whether the model has an output layer and so can generate text; false
 * for an encoder (bert), which only computes embeddings. Thread-safe. */
HEARTH_API bool hearth_model_can_generate(const hearth_model *model);
HEARTH_API int32_t hearth_model_n_layer(const hearth_model *model);
/* Layers actually on a GPU, counting the output layer as one (n_layer + 1
 * when everything is offloaded); 0 without a usable GPU. */
HEARTH_API int32_t hearth_model_n_gpu_layers(const hearth_model *model);
HEARTH_API uint64_t hearth_model_n_params(const hearth_model *model); /* weights, elements */
HEARTH_API uint64_t hearth_model_size(const hearth_model *model);     /* weights, bytes */
/* A static description like "llama 135M Q4_1"; owned by the model. */
HEARTH_API const char *hearth_model_desc(const hearth_model *model);

/* Copies the string metadata value of `key` (e.g. "general.name",
 * "tokenizer.chat_template") into buf with a terminating NUL.
 * Errors: INVALID_ARG (key absent or not a string), BUFFER_TOO_SMALL (*len set
 * to the length needed, excluding the NUL). *len receives the string length. */
HEARTH_API hearth_status hearth_model_meta_str(const hearth_model *model, const char *key, char *buf, size_t size,
                                               size_t *len);

/* The metadata as llama.cpp's llama_model_meta_* calls give it: every key
 * whose value is not an array (arrays such as the vocabulary are left out),
 * in file order, each value as text (integers in decimal, floats as C's
 * "%f", booleans "true"/"false", strings as they are). Indices are
 * 0 <= i < hearth_model_meta_count(). Both copy calls work like
 * hearth_model_meta_str(): the text and a NUL into buf, *len its length.
 * Errors: INVALID_ARG (NULL model/len, NULL buf with size > 0, i out of
 * range), BUFFER_TOO_SMALL (*len set to the length needed, excluding the
 * NUL). Thread-safe. */
HEARTH_API int32_t hearth_model_meta_count(const hearth_model *model);
HEARTH_API hearth_status hearth_model_meta_key_by_index(const hearth_model *model, int32_t i, char *buf, size_t size,
                                                        size_t *len);
HEARTH_API hearth_status hearth_model_meta_val_str_by_index(const hearth_model *model, int32_t i, char *buf,
                                                            size_t size, size_t *len);

/* ------------------------------------------------------------- vocabulary -- */

/* Special tokens; -1 when the model has none. */
HEARTH_API int32_t hearth_token_bos(const hearth_model *model);
HEARTH_API int32_t hearth_token_eos(const hearth_model *model);
HEARTH_API int32_t hearth_token_eot(const hearth_model *model);
/* True for tokens that end generation (eos, eot and the like). */
HEARTH_API bool hearth_token_is_eog(const hearth_model *model, int32_t token);

/* Converts UTF-8 text (`len` bytes, need not be NUL-terminated) into token ids.
 * add_special: prepend BOS / append EOS as the model's add_bos/add_eos flags say (a WordPiece
 * vocabulary, BERT's: [CLS] before and [SEP] after, always).
 * parse_special: recognise special tokens written in the text ("<|im_start|>");
 * when false they are tokenized as plain text.
 * Writes at most n_max ids to `tokens` and sets *n_tokens to the count
 * (`tokens` may be NULL when n_max is 0, to ask for the count).
 * Errors: INVALID_ARG (NULL pointers, text over 512 MiB), BUFFER_TOO_SMALL
 * (the first n_max ids are written and *n_tokens is the count needed; call
 * again with a larger buffer), OUT_OF_MEMORY, UNSUPPORTED (the pre-tokenizer
 * regex hit PCRE2's match limits on pathological text, or a SentencePiece
 * vocabulary has no byte token for a byte the text needs). Thread-safe. */
HEARTH_API hearth_status hearth_tokenize(const hearth_model *model, const char *text, size_t len, bool add_special,
                                         bool parse_special, int32_t *tokens, size_t n_max, size_t *n_tokens);

/* Tokens of a reranker's query-document pair (pooling RANK), as llama.cpp's
 * server formats them (format_prompt_rerank): BOS where the vocabulary adds
 * one, the query, EOS (or [SEP] without an EOS) where it adds one, [SEP]
 * where it adds one, the document, EOS where it adds one; the query and the
 * document are tokenized without special tokens, none parsed. For a
 * WordPiece vocabulary (BERT cross-encoders) that is [CLS] query [SEP]
 * document; the tokenizer.ggml.add_bos_token / add_eos_token /
 * add_sep_token keys change it. (A file's tokenizer.chat_template.rerank,
 * which decoder rerankers carry, is not used: such models have no RANK
 * pooling here.) Buffer and errors as hearth_tokenize(). Thread-safe. */
HEARTH_API hearth_status hearth_tokenize_rerank(const hearth_model *model, const char *query, size_t query_len,
                                                const char *document, size_t document_len, int32_t *tokens,
                                                size_t n_max, size_t *n_tokens);

/* A fill-in-the-middle request (what llama-server's /infill takes). */
typedef struct hearth_infill_chunk {
    const char *filename; /* NULL: "tmp" */
    const char *text;
} hearth_infill_chunk;

typedef struct hearth_infill {
    const char *prefix;               /* the code before the cursor (UTF-8, NUL-terminated; NULL: "") */
    const char *suffix;               /* the code after it */
    const char *prompt;               /* text the model continues from, after the prefix; NULL: none */
    const hearth_infill_chunk *extra; /* n_extra other files, as context; may be NULL when n_extra is 0 */
    size_t n_extra;
    int32_t n_batch;   /* tokens of a batch: the prefix keeps 3/4, the suffix 1/4 (llama-server's n_batch) */
    int32_t n_ctx;     /* tokens of the slot: the extra context takes what a batch and 2 * n_predict leave */
    int32_t n_predict; /* tokens to generate (-1: unbounded, as llama-server's default) */
} hearth_infill;

/* Tokens of a fill-in-the-middle prompt, as llama.cpp's server builds it
 * (format_prompt_infill): with the model's FIM tokens and the repo-level
 * pattern (Qwen2.5-Coder, arXiv:2409.12186), [FIM_REP]myproject\n
 * [FIM_SEP]name\n text ... [FIM_SEP]filename\n [FIM_PRE]prefix prompt
 * [FIM_SUF]suffix [FIM_MID], each part cut to fit the batch and the slot as
 * hearth_infill says; BOS, where the vocabulary adds one, just before
 * [FIM_PRE]. The prefix, suffix and extra texts are tokenized without
 * special tokens; the prompt with special tokens parsed. Buffer as
 * hearth_tokenize(). Errors:
 * INVALID_ARG (NULL argument, n_batch < 8 or over n_ctx), UNSUPPORTED (the
 * model has no FIM prefix, suffix or middle token), BUFFER_TOO_SMALL,
 * OUT_OF_MEMORY. Thread-safe. */
HEARTH_API hearth_status hearth_tokenize_infill(const hearth_model *model, const hearth_infill *infill, int32_t *tokens,
                                                size_t n_max, size_t *n_tokens);

/* The raw bytes a single token stands for (byte-level tokens decoded; may be a
 * fragment of a UTF-8 character). special: include the text of control tokens
 * ("<|im_end|>"); when false they render as nothing.
 * Errors: INVALID_ARG (token out of range), BUFFER_TOO_SMALL (*len set to the
 * size needed). No NUL is written. Thread-safe. */
HEARTH_API hearth_status hearth_token_to_piece(const hearth_model *model, int32_t token, bool special, char *buf,
                                               size_t size, size_t *len);

/* A streaming detokenizer: turns tokens into bytes that are always whole UTF-8
 * characters, holding back the bytes of an incomplete character until the
 * tokens that complete it arrive. */
typedef struct hearth_detok hearth_detok;

/* Errors: INVALID_ARG, OUT_OF_MEMORY. Free with hearth_detok_free(). */
HEARTH_API hearth_status hearth_detok_init(const hearth_model *model, bool special, hearth_detok **out);
HEARTH_API void hearth_detok_free(hearth_detok *detok);

/* Feeds one token; writes the bytes now complete into buf (no NUL) and sets
 * *len. At most 3 x (longest token piece + 3) bytes come out of one push (a few
 * hundred for common vocabularies). Invalid UTF-8 from the model is replaced
 * with U+FFFD. Does not allocate. Errors: INVALID_ARG (bad token),
 * BUFFER_TOO_SMALL (nothing consumed; *len set to the size needed). */
HEARTH_API hearth_status hearth_detok_push(hearth_detok *detok, int32_t token, char *buf, size_t size, size_t *len);

/* Emits any held bytes (as U+FFFD, since they never completed) and resets. */
HEARTH_API hearth_status hearth_detok_flush(hearth_detok *detok, char *buf, size_t size, size_t *len);

/* ------------------------------------------------------------------ chat -- */

/* One turn of a conversation. Both strings are NUL-terminated UTF-8 and only
 * read during the call. */
typedef struct hearth_chat_message {
    const char *role; /* "system", "user", "assistant" or any role the template knows */
    const char *content;
} hearth_chat_message;

/* Renders a conversation into a prompt with a Jinja chat template (a model's
 * tokenizer.chat_template) the way Hugging Face transformers'
 * apply_chat_template does: jinja2 with trim_blocks and lstrip_blocks, the
 * variables `messages` (a list of {"role", "content"} mappings),
 * `add_generation_prompt`, `bos_token` and `eos_token` (NULL: ""), and the
 * functions raise_exception and strftime_now (the current local time). The
 * interpreter covers the subset real templates use: if/elif/else, for (with
 * loop variables, filters and else), set (also namespace attributes and
 * blocks), macros and call blocks, break/continue, the common filters
 * (trim, tojson, length, join, default, replace, selectattr, map ...), tests
 * (defined, none, string, mapping ...), str and dict methods (startswith,
 * split, strip, items, get ...), indexing and slicing. Case conversions
 * (upper, lower, title) change ASCII letters only.
 * On success *out holds the prompt, NUL-terminated; free it with
 * hearth_chat_free(). Rendering is bounded (16 MiB of output, 256 MiB of
 * memory, 1,000,000 loop iterations, nesting 256 deep), so a hostile template
 * fails instead of exhausting the machine.
 * Errors (with *out NULL): INVALID_ARG (NULL tmpl or out, msgs NULL with
 * n_msgs > 0, a NULL role or content; or the template called
 * raise_exception: the message is the template's own, e.g. "Conversation
 * roles must alternate user/assistant/user/assistant/..."), UNSUPPORTED (a
 * Jinja feature outside the subset: "chat template line N: unsupported Jinja
 * feature 'NAME'"), FORMAT (a syntax error, or a runtime error such as
 * using an undefined value or a limit reached: "chat template line N: ..."),
 * OUT_OF_MEMORY (also past the memory limit). Thread-safe (distinct calls share nothing). */
HEARTH_API hearth_status hearth_chat_apply_template(const char *tmpl, const hearth_chat_message *msgs, size_t n_msgs,
                                                    bool add_generation_prompt, const char *bos_token,
                                                    const char *eos_token, char **out);

/* Frees text returned by hearth_chat_apply_template() or
 * hearth_model_chat_template(). NULL is a no-op. */
HEARTH_API void hearth_chat_free(char *text);

/* Copies the model's chat template (GGUF key tokenizer.chat_template) into
 * *out, NUL-terminated; free it with hearth_chat_free(). *out is NULL (and the
 * call succeeds) when the file has none. Errors: INVALID_ARG (NULL model or
 * out), OUT_OF_MEMORY. Thread-safe. */
HEARTH_API hearth_status hearth_model_chat_template(const hearth_model *model, char **out);

/* Renders `msgs` into a prompt ready for hearth_tokenize(..., add_special
 * true, parse_special true): with `tmpl` (Jinja text) or, when NULL, the
 * model's chat template, the generation prompt, and the model's BOS and EOS
 * texts; when the tokenizer adds BOS itself a BOS the template wrote is
 * dropped, as llama.cpp does, so the tokens start with one BOS. *out as
 * hearth_chat_apply_template(); free it with hearth_chat_free().
 * Errors: those of hearth_chat_apply_template(), and INVALID_ARG when the
 * model has no chat template and tmpl is NULL. Thread-safe. */
HEARTH_API hearth_status hearth_chat_render(const hearth_model *model, const char *tmpl,
                                            const hearth_chat_message *msgs, size_t n_msgs, char **out);

/* As hearth_chat_apply_template(), with the conversation as JSON: `messages`
 * is a JSON array of OpenAI chat messages (objects with "role" and
 * "content", and where present "tool_calls", "tool_call_id", "name" or any
 * other field), passed to the template as transformers'
 * apply_chat_template(messages, tools=tools) passes them: every field as
 * given, except that a tool call's "function.arguments" given as a JSON
 * string is parsed into the object it encodes (the templates write
 * `arguments | tojson`, as vLLM and llama.cpp convert them; text that is not
 * JSON stays text), and content given only as text parts
 * ([{"type": "text", "text": ...}]) is joined into one string with "\n"
 * between the parts. JSON numbers with integral values become ints (1.0
 * is rendered as 1). `tools` is a JSON array of OpenAI tool definitions
 * ({"type": "function", "function": {"name", "description",
 * "parameters"}}), the template's `tools` variable; NULL: tools is None,
 * as transformers passes it. Errors: those of hearth_chat_apply_template(), and
 * INVALID_ARG for JSON that does not parse ("messages: not valid JSON at
 * byte N"), is not an array, or holds a message that is not an object with a
 * string "role". Thread-safe. */
HEARTH_API hearth_status hearth_chat_apply_template_json(const char *tmpl, const char *messages, const char *tools,
                                                         bool add_generation_prompt, const char *bos_token,
                                                         const char *eos_token, char **out);

/* hearth_chat_render() for a conversation in JSON (as
 * hearth_chat_apply_template_json() reads it) with optional tools (NULL:
 * none). On success *out holds the prompt, NUL-terminated; free it with
 * hearth_chat_free(). Errors (with *out NULL): those of
 * hearth_chat_render() and hearth_chat_apply_template_json(). Thread-safe. */
HEARTH_API hearth_status hearth_chat_render_json(const hearth_model *model, const char *tmpl, const char *messages,
                                                 const char *tools, char **out);

/* ------------------------------------------------------------- grammars -- */

/* Converts a JSON Schema (JSON text) into a GBNF grammar (start rule
 * `root`) of the JSON texts the schema accepts, the grammar a sampler's
 * json_schema gets. Every text the grammar accepts is valid for the schema;
 * it may refuse some valid ones (below). Supported: type (object, array,
 * string, number, integer, boolean, null, and lists of types; without type,
 * the keywords present decide), properties (written in the declared order;
 * optional ones may be left out), required (names outside properties too),
 * additionalProperties (false, true or a schema; when absent: no other keys
 * if properties is given, any keys for a bare object, so OpenAI's
 * json_object mode is {"type":"object"}; extra keys are written without
 * escapes), enum, const, anyOf, oneOf (as anyOf: branches should not
 * overlap), allOf of object schemas (properties and required merged) or of
 * one schema, $ref to local JSON pointers such as #/$defs/... or
 * #/definitions/... (recursive schemas too), items, prefixItems (all
 * present up to minItems, later ones optional; no more items unless items
 * says so), minItems, maxItems, minLength, maxLength, pattern (one of
 * pattern, format or lengths per string; a regular-expression subset:
 * literals, escapes, \d \w \s (ASCII), ., classes, groups, alternation,
 * * + ? {m,n}; treated as anchored ^...$), format (date, time, date-time per
 * RFC 3339, uuid), minimum and maximum of integers (any bounds) and of
 * numbers (integer bounds; such numbers have no exponent), exclusiveMinimum
 * and exclusiveMaximum of integers. Integers have at most 16 digits;
 * repetition counts at most 10000; schemas nest at most 64 deep. title,
 * description, examples, default, $schema, $id, $comment, $defs,
 * definitions, deprecated, readOnly, writeOnly and discriminator are read
 * and ignored. Whitespace between tokens is at
 * most one newline and 20 spaces or tabs. *out is NUL-terminated; free it
 * with hearth_grammar_free_text().
 * Errors (with *out NULL): INVALID_ARG (NULL argument, JSON that does not
 * parse: "json_schema: not valid JSON at byte N", a keyword outside the
 * subset: "json_schema at /properties/age: unsupported keyword
 * 'multipleOf'", an unsupported format or pattern construct, named,
 * an unresolvable $ref, an unknown type, contradictory bounds, nesting too
 * deep), OUT_OF_MEMORY. Thread-safe. */
HEARTH_API hearth_status hearth_json_schema_to_grammar(const char *schema, char **out);

/* Checks GBNF text as a sampler would compile it. Errors: INVALID_ARG with
 * "grammar line L column C: ..." (a syntax error, an undefined rule, no
 * `root`, left recursion), OUT_OF_MEMORY. Thread-safe. */
HEARTH_API hearth_status hearth_grammar_check(const char *gbnf);

/* Frees text returned by hearth_json_schema_to_grammar(). NULL is a no-op. */
HEARTH_API void hearth_grammar_free_text(char *text);

/* --------------------------------------------------------------- context -- */

typedef struct hearth_context hearth_context;

/* How attention is computed, llama.cpp's --flash-attn (same values as its
 * llama_flash_attn_type). On the CPU: OFF is llama.cpp's order of
 * operations without flash attention, bit for bit (queries and
 * probabilities rounded to F16, the same sums), for tests and comparisons
 * with llama.cpp. ON is the tiled path (FlashAttention, Dao et al. 2022,
 * arXiv:2205.14135): a block of queries times the query heads of one KV
 * head streams the K/V cache once with an online softmax in F32, and
 * decoding at depth splits the KV length over the threads; much faster on
 * long prompts and deep contexts, equal to OFF within float rounding (not
 * bit for bit: a near tie may pick another greedy token). With either, a
 * sequence's results do not depend on the other sequences of a batch or on
 * n_threads. AUTO (the default) is ON. Layers on a GPU always run the CUDA
 * backend's own flash-style kernel, whatever the value. */
typedef enum hearth_flash_attn {
    HEARTH_FLASH_ATTN_AUTO = -1,
    HEARTH_FLASH_ATTN_OFF = 0,
    HEARTH_FLASH_ATTN_ON = 1,
} hearth_flash_attn;

/* How rotary position embeddings are stretched past the trained context:
 * llama.cpp's llama_rope_scaling_type, with its values. */
typedef enum hearth_rope_scaling {
    HEARTH_ROPE_SCALING_UNSPECIFIED = -1, /* the model's rope.scaling.type (default linear) */
    HEARTH_ROPE_SCALING_NONE = 0,         /* never scaled (freq_scale 1) */
    HEARTH_ROPE_SCALING_LINEAR = 1,       /* positions times rope_freq_scale */
    HEARTH_ROPE_SCALING_YARN = 2,         /* YaRN (Peng et al. 2023, arXiv:2309.00071) */
} hearth_rope_scaling;

/* Element types of the KV cache, llama.cpp's --cache-type-k/-v
 * (llama_context_params.type_k/type_v): the values are ggml's type ids, so
 * llama.cpp's numbers work unchanged. Per cell and KV head of head_dim
 * elements: F16 and BF16 take 2 bytes an element, Q8_0 34 bytes per 32
 * elements (8.5 bits), Q4_0 18 bytes per 32 (4.5 bits). A quantized cache
 * needs head_dim a multiple of 32; a quantized V cache needs flash_attn ON
 * or AUTO (llama.cpp refuses it without flash attention too). On the CPU
 * attention reads the cache as it is stored, with the query rounded as
 * llama.cpp converts it for the key type's dot product (Q8_0 blocks for
 * Q8_0 and Q4_0 keys, BF16 for BF16 keys): flash_attn OFF dots each key
 * row with the type's vec_dot kernel; ON converts a tile of 64 key and
 * value rows at a time to F32 for its tile kernels. GPU backends run F16
 * caches only: a context whose GPU layers would need another type fails
 * (hearth_context_init). */
typedef enum hearth_kv_type {
    HEARTH_KV_F16 = 1, /* the default */
    HEARTH_KV_Q4_0 = 2,
    HEARTH_KV_Q8_0 = 8,
    HEARTH_KV_BF16 = 30,
} hearth_kv_type;

/* ggml's name of a hearth_kv_type ("f16", "bf16", "q8_0", "q4_0"); NULL for
 * any other value. Pure. */
HEARTH_API const char *hearth_kv_type_name(int32_t type);

/* The hearth_kv_type named `name` (ggml's names, as llama.cpp's -ctk/-ctv
 * take them: "f16", "bf16", "q8_0", "q4_0") into *out. Errors: INVALID_ARG
 * (NULL argument, or another name; the message lists the accepted ones).
 * Thread-safe. */
HEARTH_API hearth_status hearth_kv_type_from_name(const char *name, int32_t *out);

/* How a context that computes embeddings pools a sequence's hidden states
 * into one vector (llama.cpp's llama_pooling_type, same values). */
typedef enum hearth_pooling_type {
    HEARTH_POOLING_UNSPECIFIED = -1, /* the model's: <arch>.pooling_type, NONE when the file has none */
    HEARTH_POOLING_NONE = 0,         /* no pooled vector: each token's hidden state only */
    HEARTH_POOLING_MEAN = 1,         /* the mean over the sequence's tokens in the batch */
    HEARTH_POOLING_CLS = 2,          /* the sequence's first token in the batch (BERT's [CLS]) */
    HEARTH_POOLING_LAST = 3,         /* the sequence's last token in the batch (decoder embedding models) */
    HEARTH_POOLING_RANK = 4,         /* a reranker's scores: the classification head (cls, tanh, cls.output)
                                        on the sequence's first token, n_cls_out raw logits, never normalised */
} hearth_pooling_type;

typedef struct hearth_context_params {
    uint32_t n_ctx;    /* KV cache length in tokens, over all sequences; 0 = the model's
                            n_ctx_train (capped at 4096) times n_seq_max */
    uint32_t n_batch;  /* most tokens of one decode call (llama.cpp's logical batch); default 512 */
    int32_t n_threads; /* CPU threads; 0 = physical cores */
    /* Sequences the KV cache holds at once (default 1; at most 256). Each
     * sequence owns n_ctx / n_seq_max positions of the one cache buffer (as
     * llama.cpp's server divides n_ctx among its slots; n_ctx is rounded
     * down to a multiple of n_seq_max), and at most n_seq_max tokens of a
     * batch may ask for logits. */
    uint32_t n_seq_max;
    int32_t flash_attn; /* hearth_flash_attn; default HEARTH_FLASH_ATTN_AUTO */
    /* Most tokens of one forward pass (llama.cpp's physical batch,
     * --ubatch-size); default 512, 0 or more than n_batch = n_batch. A
     * decode of more tokens runs in passes of n_ubatch, and the
     * activations and attention scratch are sized for n_ubatch tokens, so
     * a large n_batch costs no memory: n_ctx 32768 with n_batch 32768 and
     * n_ubatch 512 plans 512-token buffers. On the CPU a token's logits do
     * not depend on it once passes hold 8 tokens or more (passes of 64 and
     * of 512 agree bit for bit with either flash_attn); passes of a few
     * tokens take other kernels, whose sums differ in the last bits, as
     * llama.cpp's do. */
    uint32_t n_ubatch;
    /* RoPE overrides, llama.cpp's context parameters with its defaults and
     * sentinels (llama-context.cpp); each sentinel keeps the model's value
     * (the GGUF's <arch>.rope.* keys). rope_freq_scale is 1 / the scaling
     * factor (llama.cpp's --rope-scale N sets 1/N). With scaling NONE the
     * scale is 1 whatever rope_freq_scale says. With YaRN (ext_factor != 0)
     * the attention factor is YaRN's own: 1 + 0.1 ln(1 / freq_scale) overall,
     * times the file's rope.scaling.attn_factor; yarn_attn_factor counts only
     * without it, as in llama.cpp. */
    int32_t rope_scaling_type; /* hearth_rope_scaling; default UNSPECIFIED */
    float rope_freq_base;      /* theta base; 0 (default) = the model's rope.freq_base */
    float rope_freq_scale;     /* 0 (default) = the model's: 1 / rope.scaling.factor, or 1 */
    float yarn_ext_factor;     /* < 0 (default -1) = 1 with YaRN, else 0 */
    float yarn_attn_factor;    /* < 0 (default -1) = 1 */
    float yarn_beta_fast;      /* YaRN ramp end, rotations; < 0 (default -1) = 32 */
    float yarn_beta_slow;      /* YaRN ramp start, rotations; < 0 (default -1) = 1 */
    uint32_t yarn_orig_ctx;    /* tokens; 0 (default) = the model's rope.scaling.original_context_length,
                                  else its context_length */
    int32_t type_k;            /* hearth_kv_type of the K cache; default HEARTH_KV_F16 */
    int32_t type_v;            /* hearth_kv_type of the V cache; default HEARTH_KV_F16 */
    /* Embeddings instead of logits (llama.cpp's embeddings): every token
     * of a batch is an output, its hidden state (after the model's final
     * norm where it has one; n_embd floats) read with
     * hearth_get_embeddings_ith(), and each sequence of the batch pooled
     * into one vector as pooling_type says, read with
     * hearth_get_embeddings_seq(). Default false; an encoder (a model that
     * cannot generate, hearth_model_can_generate) needs it. */
    bool embeddings;
    int32_t pooling_type; /* hearth_pooling_type; default UNSPECIFIED (the model's) */
    bool embd_normalize;  /* pooled vectors scaled to unit L2 norm (as sentence-transformers'
                                  Normalize and llama.cpp's server do); default true */
} hearth_context_params;

HEARTH_API hearth_context_params hearth_context_default_params(void);

/* Creates an inference context: KV cache (n_layer x n_ctx x n_head_kv x
 * head_dim elements each of type_k and of type_v: 2 bytes for F16), every work buffer (sized for n_ubatch tokens) and n_threads - 1 worker threads,
 * all made here so that decoding does not allocate. `params` may be NULL for
 * the defaults. The model must outlive the context; several contexts may share
 * one model. Errors: INVALID_ARG (NULL model, vocab-only model, n_batch 0,
 * n_threads < 0, n_ctx over 16M, flash_attn not a hearth_flash_attn, a
 * rope_scaling_type that is not a hearth_rope_scaling, a rope_freq_base or
 * rope_freq_scale < 0, a YaRN value not finite, a type_k or type_v that is
 * not a hearth_kv_type, a quantized type with head_dim not a multiple of
 * 32, a quantized type_v with flash_attn OFF, a pooling_type that is not a
 * hearth_pooling_type, embeddings false with a model that cannot
 * generate), UNSUPPORTED (a GPU that holds
 * layers has no kernels for type_k/type_v: use F16 or n_gpu_layers 0; pooling
 * RANK), OUT_OF_MEMORY (the message gives the bytes
 * needed; for a GPU, the MiB of KV cache and buffers needed and free on it,
 * and the advice to lower n_gpu_layers or n_ctx; on the host, when the
 * plan of hearth_context_memory_plan() needs more than MemAvailable), IO (a worker thread could
 * not be started), DEVICE (the GPU driver failed). With GPU layers the KV
 * cache of each layer lives on its layer's device and the logits are copied
 * back to host memory. Free with hearth_context_free() before the model. */
HEARTH_API hearth_status hearth_context_init(hearth_model *model, const hearth_context_params *params,
                                             hearth_context **out);
HEARTH_API void hearth_context_free(hearth_context *ctx);

/* The memory of a context on one device, in bytes (hearth_context_memory). */
typedef struct hearth_memory_device {
    char id[24];            /* "cpu" (host memory), or the GPU's id: "cuda0", "opencl1" */
    char backend_label[16]; /* its backend as llama-bench's backends column names it: "CPU",
                               "CUDA", "OpenCL" (hearth_gpu_info.backend_label) */
    uint64_t weights;       /* the model's weights there (on the host: the tensors the CPU runs, mapped
                           from the file unless use_mmap is false; already held by the model) */
    uint64_t kv_cache;      /* the K and V caches of the layers there: n_ctx cells of n_head_kv x head_dim
                           elements of type_k (type_v) per layer */
    uint64_t compute;       /* activations of one n_ubatch-token pass, the output rows, and the backend's
                           scratch (quantized activations, attention scratch, GPU GEMM tiles) */
    uint64_t available;     /* memory there now: MemAvailable (/proc/meminfo) on the host, free bytes on a GPU */
} hearth_memory_device;

/* What a context needs: weights, KV cache and compute buffers, per device
 * and in all (bytes). The figures are those hearth_context_init() allocates
 * (the same planner sizes both); the small bookkeeping arrays of the
 * context (a few bytes per n_batch token) and its worker threads' stacks
 * are left out. */
typedef struct hearth_context_memory {
    uint32_t n_ctx, n_batch, n_ubatch, n_seq_max; /* the resolved parameters the figures are for */
    char type_k[8], type_v[8];                    /* the KV cache's element types, ggml's names ("f16") */
    uint64_t weights, kv_cache, compute;          /* sums over the devices */
    uint64_t total;                               /* weights + kv_cache + compute */
    uint64_t context;                             /* what creating the context adds: kv_cache + compute */
    int32_t n_devices;                            /* entries of device[]: [0] the host, then each GPU with layers */
    hearth_memory_device device[17];
} hearth_context_memory;

/* Plans a context without creating it: fills *out with the memory
 * hearth_context_init(model, params) would need (params NULL: the
 * defaults; n_ctx, n_batch, n_ubatch resolved as the context resolves
 * them). Allocates nothing. hearth_context_init() fails with
 * OUT_OF_MEMORY when the host's share (device[0].kv_cache + compute) is
 * more than device[0].available, and with a GPU's share more than its free
 * memory; the message names the bytes needed and available.
 * Errors: INVALID_ARG (NULL model or out, vocab-only model, parameters
 * hearth_context_init() refuses), DEVICE (a GPU's free memory could not be
 * read). Thread-safe. */
HEARTH_API hearth_status hearth_context_memory_plan(const hearth_model *model, const hearth_context_params *params,
                                                    hearth_context_memory *out);

/* The KV cache length over all sequences, and the positions each sequence
 * owns (n_ctx / n_seq_max), and n_seq_max. Pure getters. */
HEARTH_API uint32_t hearth_context_n_ctx(const hearth_context *ctx);
HEARTH_API uint32_t hearth_context_n_ctx_seq(const hearth_context *ctx);
HEARTH_API uint32_t hearth_context_n_seq_max(const hearth_context *ctx);
/* Whether the CPU runs the tiled attention (flash_attn ON, or AUTO resolved
 * to it). Pure getter. */
HEARTH_API bool hearth_context_flash_attn(const hearth_context *ctx);
/* Tokens of sequence 0 in the KV cache (the position its next token takes). */
HEARTH_API uint32_t hearth_context_n_past(const hearth_context *ctx);

/* Empties the KV cache of every sequence: the next decode starts at position 0. */
HEARTH_API void hearth_context_reset(hearth_context *ctx);

/* Keeps only the first n_past tokens of sequence 0 (a no-op when n_past is
 * not below hearth_context_n_past()): the next decode continues at position
 * n_past, as a chat does when a new prompt shares only a prefix with the
 * tokens already decoded. The logits stay those of the last decode until the
 * next one. The same as hearth_kv_seq_rm(ctx, 0, n_past, -1). */
HEARTH_API void hearth_context_truncate(hearth_context *ctx, uint32_t n_past);

/* Runs the model over `n_tokens` tokens that continue the sequence in the KV
 * cache, in passes of at most n_ubatch tokens (prompt processing as matrix-matrix
 * products; one token is a matrix-vector pass), and keeps the logits of the
 * last token (read them with hearth_get_logits()). Blocks until done; uses the
 * context's n_threads. Does not allocate.
 * Errors: INVALID_ARG (NULL, n_tokens 0, a token id outside [0, n_vocab)),
 * CONTEXT_FULL (n_past + n_tokens > n_ctx): the cache is unchanged; DEVICE
 * (a GPU kernel or copy failed; the message names the call, file and line):
 * the passes before the failing one stay in the cache. */
HEARTH_API hearth_status hearth_decode(hearth_context *ctx, const int32_t *tokens, uint32_t n_tokens);

/* Logits of the last decoded token: float[n_vocab], owned by the context and
 * overwritten by the next decode. NULL before the first decode. After
 * hearth_decode_batch(), the logits of the batch's last token that asked
 * for them. */
HEARTH_API const float *hearth_get_logits(const hearth_context *ctx);

/* ------------------------------------------------ batches and sequences -- */

/* Tokens of one forward pass, each in a sequence of its own choosing (the
 * shape of llama.cpp's llama_batch). Sequences are independent streams in
 * one KV cache: a token attends only to the earlier tokens of its own
 * sequence. The arrays are read during hearth_decode_batch() only. */
typedef struct hearth_batch {
    int32_t n_tokens;
    const int32_t *token; /* [n_tokens] token ids in [0, n_vocab) */
    /* [n_tokens] position of each token in its sequence, or NULL: each
     * token continues its sequence (the sequence's length, then +1 for
     * every later token of it in the batch). A position below the
     * sequence's length first drops the positions from it on. Within a
     * batch a sequence's tokens must take consecutive positions, the first
     * at most the sequence's length. */
    const int32_t *pos;
    const int32_t *seq_id; /* [n_tokens] sequence of each token in [0, n_seq_max), or NULL: all 0 */
    /* [n_tokens] nonzero: keep this token's logits (at most n_seq_max per
     * batch), or NULL: only the last token's */
    const int8_t *logits;
} hearth_batch;

/* Runs one forward pass over the tokens of `batch` (consecutive passes of
 * n_ubatch tokens when it holds more), whatever sequences they belong to:
 * every weight matrix is multiplied once with all of them (decoding N
 * sequences is one matrix-matrix product per weight). Writes
 * each token's key and value into its sequence's cells of the KV cache and
 * keeps the logits of the tokens that ask for them (read them with
 * hearth_get_logits_ith()). Blocks until done; does not allocate.
 * Errors: INVALID_ARG (NULL, n_tokens 0 or over n_batch, a token id outside
 * the vocabulary, a seq_id outside [0, n_seq_max), positions that skip or
 * repeat within a sequence, more than n_seq_max tokens asking for logits;
 * nothing is changed), CONTEXT_FULL (a sequence would pass n_ctx_seq
 * positions; nothing is changed), DEVICE (a GPU kernel or copy failed: each
 * sequence of the batch keeps its cells before the batch's first position
 * in it). */
HEARTH_API hearth_status hearth_decode_batch(hearth_context *ctx, const hearth_batch *batch);

/* Logits of token i of the last batch, float[n_vocab], owned by the
 * context and overwritten by the next decode; NULL when that token did not
 * ask for logits or i is out of range. */
HEARTH_API const float *hearth_get_logits_ith(const hearth_context *ctx, int32_t i);

/* Hidden state of token i of the last batch of an embeddings context,
 * float[n_embd] (hearth_model_n_embd), not normalised, owned by the
 * context and overwritten by the next decode; NULL when the context
 * computes logits or i is out of range. */
HEARTH_API const float *hearth_get_embeddings_ith(const hearth_context *ctx, int32_t i);

/* Pooled embedding of sequence `seq` over its tokens in the last batch,
 * float[n_embd], unit L2 norm unless embd_normalize is false (pooling RANK:
 * float[hearth_model_n_cls_out] scores, not normalised); owned by the
 * context and overwritten by the next decode. NULL when the context
 * computes logits, pools NONE, or the last batch had no token of `seq`.
 * A sequence embeds whole in one batch: with an encoder, clear it
 * (hearth_kv_seq_rm) before embedding another text in it. */
HEARTH_API const float *hearth_get_embeddings_seq(const hearth_context *ctx, int32_t seq);

/* Pooled embeddings of n_texts UTF-8 texts (texts[i] of lens[i] bytes, or
 * NUL-terminated when lens is NULL) into out: float[n_texts * n_embd], text
 * after text. Each text is tokenized with special tokens ([CLS] ... [SEP]
 * for BERT) and embedded whole as a sequence of its own; several texts run
 * in one batch, in a context made for the call from `params` (NULL: the
 * defaults; its threads, flash_attn, cache types, pooling_type and
 * embd_normalize are used, its sizes and sequences set here). The texts
 * and out stay the caller's. Errors: INVALID_ARG (NULL argument, an empty
 * text, pooling NONE given or the model's, with the reason), CONTEXT_FULL
 * (a text longer than the model's n_ctx_train, naming it and its tokens),
 * OUT_OF_MEMORY, DEVICE; as hearth_context_init for bad params. Several
 * threads may embed with one model at once (each call has its own
 * context). */
HEARTH_API hearth_status hearth_embed(hearth_model *model, const char *const *texts, const size_t *lens, size_t n_texts,
                                      const hearth_context_params *params, float *out);

/* Relevance scores of n_docs documents for one query with a reranker (a
 * model with a classification head: hearth_model_n_cls_out > 0) into
 * scores[n_docs]: for document i, the first output of the head over the
 * pair hearth_tokenize_rerank(query, documents[i]) -- the raw logit, as
 * llama-server's /v1/rerank relevance_score (sigmoid(score) is a
 * probability for single-label cross-encoders). The query is query_len
 * bytes of UTF-8, documents[i] doc_lens[i] bytes (NUL-terminated when
 * doc_lens is NULL); they and scores stay the caller's.
 * Pairs run several at once in a context made for the call from `params`
 * (NULL: the defaults; its threads and flash_attn are used, pooling is RANK,
 * sizes and sequences set here). Errors: INVALID_ARG (NULL argument, a model
 * without a classification head), CONTEXT_FULL (a pair longer than the
 * model's n_ctx_train, naming the document), OUT_OF_MEMORY, DEVICE.
 * Several threads may rerank with one model at once. */
HEARTH_API hearth_status hearth_rerank(hearth_model *model, const char *query, size_t query_len,
                                       const char *const *documents, const size_t *doc_lens, size_t n_docs,
                                       const hearth_context_params *params, float *scores);

/* Tokens of sequence `seq` in the KV cache (the position its next token
 * takes); 0 for an empty or out-of-range sequence. */
HEARTH_API uint32_t hearth_kv_seq_len(const hearth_context *ctx, int32_t seq);

/* Removes positions [p0, p1) of sequence `seq` (seq < 0: of every
 * sequence; p1 < 0: to the end). Only the end of a sequence can go: p1
 * must be negative or at least the sequence's length, so that what stays is
 * a prefix (removing all: p0 = 0). Errors: INVALID_ARG (NULL ctx, seq out of
 * range, p0 < 0), UNSUPPORTED (a range that would leave a hole). */
HEARTH_API hearth_status hearth_kv_seq_rm(hearth_context *ctx, int32_t seq, int32_t p0, int32_t p1);

/* Makes sequence `dst` the first n tokens of sequence `src` (n < 0: all of
 * it), copying their KV cells on whatever device each layer lives: a shared
 * system prompt or the n > 1 choices of one prompt are computed once.
 * dst's previous tokens are dropped. Errors: INVALID_ARG (NULL ctx, a
 * sequence out of range, src == dst, n beyond src's length), DEVICE. */
HEARTH_API hearth_status hearth_kv_seq_cp(hearth_context *ctx, int32_t src, int32_t dst, int32_t n);

/* Context shift (llama.cpp's, as llama-cli and llama-server do it when the
 * context fills): drops positions [n_keep, n_keep + n_discard) of sequence
 * `seq` and moves the later ones down by n_discard, their cached keys
 * re-rotated by -n_discard positions (a RoPE of the F16 K cache with the
 * context's rope, YaRN included; llama.cpp's K-shift) and their values
 * moved: nothing is recomputed. Afterwards the sequence holds n_past -
 * n_discard tokens and the next decode continues there; the tokens after the
 * gap attend as if the dropped ones had never been there, up to rounding
 * (the keys were rotated from their stored F16 values). Logits stay those of
 * the last decode. n_discard 0 changes nothing. Runs on every device that
 * holds layers; returns when done. Not thread-safe with other calls on ctx.
 * Errors: INVALID_ARG (NULL ctx, seq out of [0, n_seq_max), n_keep +
 * n_discard beyond the sequence's length): nothing changed; UNSUPPORTED (a
 * backend has no K-shift for the cache or rope mode): nothing changed;
 * DEVICE (a GPU failed midway): the sequence keeps only its first n_keep
 * tokens. */
HEARTH_API hearth_status hearth_context_shift(hearth_context *ctx, int32_t seq, uint32_t n_keep, uint32_t n_discard);

/* The context shift llama-cli and llama-server make when a context fills
 * (their n_discard = (n_past - n_keep) / 2): hearth_context_shift() of
 * sequence `seq` dropping half of the tokens after its first n_keep, n_past
 * being hearth_kv_seq_len(ctx, seq). The engine's context_shift and
 * `hearth run --context-shift` use it. n_keep counts tokens from the
 * sequence's start, BOS included. Writes the number of tokens dropped to
 * *n_discard when n_discard is not NULL (0 on any error). Not thread-safe
 * with other calls on ctx. Errors: INVALID_ARG (NULL ctx, seq out of [0,
 * n_seq_max)), CONTEXT_FULL (n_keep leaves fewer than 2 tokens after it,
 * so half of them is nothing; nothing changed), and hearth_context_shift()'s
 * UNSUPPORTED and DEVICE. */
HEARTH_API hearth_status hearth_context_shift_half(hearth_context *ctx, int32_t seq, uint32_t n_keep,
                                                   uint32_t *n_discard);

/* ------------------------------------------------------------- sampling -- */

typedef struct hearth_sampler hearth_sampler;

/* One entry of a logit bias: `bias` is added to token `token`'s logit. */
typedef struct hearth_logit_bias {
    int32_t token;
    float bias;
} hearth_logit_bias;

/* What hearth_sampler_sample() returns when the grammar admits no token of
 * the vocabulary at this point (the request cannot go on). */
#define HEARTH_TOKEN_NONE (-1)

typedef struct hearth_sampler_params {
    float temp;            /* <= 0: greedy (argmax). Default 0.8 */
    int32_t top_k;         /* keep the k most likely; <= 0 disables. Default 40 */
    float top_p;           /* nucleus: smallest set with probability >= top_p; 1 disables. Default 0.95 */
    float min_p;           /* drop tokens with p < min_p * p_max; 0 disables. Default 0.05 */
    float repeat_penalty;  /* CTRL-style penalty on recent tokens; 1 disables. Default 1.0 */
    int32_t repeat_last_n; /* how many recent tokens the penalties see. Default 64 */
    /* OpenAI's penalties over the same recent tokens: a token's logit drops
     * by presence_penalty if it occurs and by frequency_penalty times its
     * count. 0 disables (default); each in [-2, 2]. */
    float presence_penalty;
    float frequency_penalty;
    uint64_t seed; /* random seed; equal seeds give equal samples. Default 0xC0FFEE */
    /* Added to a token's logit before every other sampler (OpenAI's
     * logit_bias): n_logit_bias entries, copied at init; a bias of -100 or
     * less bans the token. Default none. */
    const hearth_logit_bias *logit_bias;
    size_t n_logit_bias;
    /* A GBNF grammar (start rule `root`; see hearth_grammar_check()) or a
     * JSON Schema (hearth_json_schema_to_grammar()), at most one, compiled
     * at init: only tokens whose bytes the grammar can accept at that point
     * are sampled, and end-of-generation tokens only where the text is a
     * whole sentence of it. Default NULL: no grammar. */
    const char *grammar;
    const char *json_schema;
    /* A lazy grammar: with n_grammar_triggers > 0 the grammar applies from
     * the first place the generated text holds one of these strings (which
     * begins the grammar's sentence); before it, tokens are free. */
    const char *const *grammar_triggers;
    size_t n_grammar_triggers;
} hearth_sampler_params;

HEARTH_API hearth_sampler_params hearth_sampler_default_params(void);

/* Creates a sampler for `model`'s vocabulary. Errors: INVALID_ARG (top_p
 * outside (0,1], min_p outside [0,1], repeat_penalty <= 0, repeat_last_n < 0,
 * presence or frequency penalty outside [-2, 2], a logit_bias token outside
 * the vocabulary or a bias that is not finite, both grammar and
 * json_schema, a grammar or schema that does not compile: its message with
 * line and column, an empty trigger), OUT_OF_MEMORY. The first sampler
 * with a grammar over a model builds the model's token trie (once; about
 * as long as tokenizing the vocabulary). The parameters' strings and arrays
 * are copied (or compiled) at init; `model` must outlive the sampler. Free
 * with hearth_sampler_free(). */
HEARTH_API hearth_status hearth_sampler_init(const hearth_model *model, const hearth_sampler_params *params,
                                             hearth_sampler **out);
HEARTH_API void hearth_sampler_free(hearth_sampler *smpl);

/* Picks the next token from `logits` (float[n_vocab], not modified) applying,
 * in llama.cpp's default order: the logit bias, repetition, presence and
 * frequency penalties, top-k, top-p, min-p (these three on the untempered
 * distribution), temperature, then a draw from the remaining tokens (or the
 * argmax when temp <= 0). Records the token for the repetition penalty.
 * With a grammar the token is also checked against it: a token it rejects
 * is masked with every other token it rejects and the draw is made again
 * (llama.cpp's order: the check costs a few microseconds, the mask a walk
 * of the vocabulary's trie, done only on a rejection), and the grammar
 * advances over the chosen token's bytes. Returns the token id, or
 * HEARTH_TOKEN_NONE when the grammar admits no token. Does not allocate
 * without a grammar. */
HEARTH_API int32_t hearth_sampler_sample(hearth_sampler *smpl, const float *logits);

/* Records tokens the sampler did not choose (the prompt) for the repetition
 * penalty. */
HEARTH_API void hearth_sampler_accept(hearth_sampler *smpl, int32_t token);

/* Forgets the recent tokens and re-seeds the random generator. */
HEARTH_API void hearth_sampler_reset(hearth_sampler *smpl);

/* ---------------------------------------------------------------- engine -- */

/* The engine is hearth's one scheduler, shared by every client (the
 * `hearth` command, the server, the Python and Node packages). It owns a
 * context with one KV-cache sequence per slot and a thread that runs steps:
 * each step is one forward pass over a token for every request that is
 * generating plus chunks of the prompts being read (continuous batching with
 * chunked prefill, so running streams keep producing while a long prompt is
 * read). A request joins at the next step; requests beyond the slots wait in
 * a bounded queue, first come first served. A request whose prompt starts
 * with tokens already in a slot's cache (a chat's earlier turns, a shared
 * system prompt) decodes only the tokens past them. */
typedef struct hearth_engine hearth_engine;

typedef struct hearth_engine_params {
    /* The context: n_seq_max is the number of slots (requests generating
     * at once; default 4); n_ctx the KV cache over all slots (0: each slot
     * gets the model's n_ctx_train capped at 4096); n_batch the most tokens
     * of one step (default 512); n_threads. */
    hearth_context_params ctx;
    int32_t n_queue_max; /* requests that may wait for a slot; default 64 */
    /* A Jinja chat template for chat requests, copied; NULL: the model's
     * tokenizer.chat_template. */
    const char *chat_template;
    /* When a generation reaches the end of its slot's context: false
     * (default) ends it with HEARTH_FINISH_LENGTH; true shifts the slot's
     * context instead (hearth_context_shift: the first n_keep prompt tokens
     * after the BOS stay, half of the rest is dropped, as llama-server's
     * --context-shift does) and the generation goes on. A slot's cache after
     * a shift is reused by later requests only up to its kept tokens. */
    bool context_shift;
    int32_t n_keep; /* -1: the whole prompt; default 0 (the BOS alone) */
} hearth_engine_params;

/* Defaults: context defaults with n_seq_max 4, n_queue_max 64, the model's
 * chat template. */
HEARTH_API hearth_engine_params hearth_engine_default_params(void);

/* Creates an engine over `model` (which must outlive it) and starts its
 * thread. `params` may be NULL for the defaults.
 * Errors: INVALID_ARG (NULL model or out, vocab-only model, n_queue_max < 0,
 * bad context params), UNSUPPORTED (a chat template that does not parse),
 * OUT_OF_MEMORY, IO (the thread could not start), DEVICE: as
 * hearth_context_init(). With params->ctx.embeddings the engine computes
 * embeddings only (hearth_engine_embed()). Free with hearth_engine_free(). */
HEARTH_API hearth_status hearth_engine_init(hearth_model *model, const hearth_engine_params *params,
                                            hearth_engine **out);

/* Cancels every request (each gets its final piece, finish CANCELLED;
 * waiting hearth_engine_embed() calls return CANCELLED), stops the thread
 * and frees the engine. Must not be called from a piece callback. NULL is
 * a no-op. */
HEARTH_API void hearth_engine_free(hearth_engine *engine);

/* Why a request ended. */
typedef enum hearth_finish_reason {
    HEARTH_FINISH_NONE = 0,       /* not yet: more pieces follow */
    HEARTH_FINISH_STOP = 1,       /* an end-of-generation token or a stop string */
    HEARTH_FINISH_LENGTH = 2,     /* max_tokens generated, or the slot's context is full */
    HEARTH_FINISH_CANCELLED = 3,  /* hearth_engine_cancel(), a callback returned false, or the engine was freed */
    HEARTH_FINISH_ERROR = 4,      /* the forward pass failed: see hearth_piece.error */
    HEARTH_FINISH_TOOL_CALLS = 5, /* the model called tools (hearth_piece.tool_calls) and stopped */
    HEARTH_FINISH_GRAMMAR = 6,    /* the grammar admits no token of the vocabulary here: the text ends */
} hearth_finish_reason;

/* OpenAI's finish_reason text of `f`: "stop", "length", "cancelled",
 * "error", "tool_calls", "grammar"; NULL for NONE or a value that is not
 * one. Static; thread-safe. */
HEARTH_API const char *hearth_finish_reason_str(hearth_finish_reason f);

/* The most alternatives a piece reports (OpenAI's top_logprobs limit). */
#define HEARTH_MAX_TOP_LOGPROBS 20

typedef struct hearth_token_logprob {
    int32_t token;
    float logprob; /* natural log of the probability under the model's distribution */
} hearth_token_logprob;

/* A part of a tool call the model is making, in the order OpenAI streams
 * them: a call's first delta has its id and name, later ones the next bytes
 * of its arguments (a JSON object's text); put together, the arguments
 * parse as JSON and validate against the tool's parameters schema. */
typedef struct hearth_tool_call_delta {
    int32_t index;         /* the call's place among the message's calls, from 0 */
    const char *id;        /* in the call's first delta: "call_" and 24 letters or digits; else NULL */
    const char *name;      /* in the call's first delta: the function's name; else NULL */
    const char *arguments; /* the next arguments_len bytes of the arguments (not NUL-terminated) */
    size_t arguments_len;
} hearth_tool_call_delta;

/* What a request produced since its last piece. Every pointer is valid only
 * during the callback. */
typedef struct hearth_piece {
    /* New text (not NUL-terminated), always whole UTF-8 characters and never
     * any part of a stop string; may be empty (text held back while it
     * could still begin a stop string). */
    const char *text;
    size_t len;
    /* The token sampled at this step, or -1 (a final piece that only flushes
     * held text or reports an end). The end-of-generation token that ends a
     * request is reported here with no text. */
    int32_t token;
    /* With hearth_request_params.logprobs: the token's log-probability
     * (log-softmax of the raw logits, before any sampler) and the n_top most
     * likely tokens, most likely first. */
    float logprob;
    int32_t n_top;
    const hearth_token_logprob *top;
    /* With tools: the tool-call deltas of this piece (text then holds
     * only what the model wrote outside its calls; no call markup). */
    int32_t n_tool_calls;
    const hearth_tool_call_delta *tool_calls;
    hearth_finish_reason finish; /* NONE but in the request's last piece */
    const char *error;           /* with FINISH_ERROR: the one-line message; else NULL */
    const char *stop;            /* with FINISH_STOP by a stop string: that string (the request's copy, valid
                                    during the callback); NULL for an end-of-generation token */
    int32_t n_prompt;            /* the request's prompt tokens */
    int32_t n_cached;            /* of which reused from a slot's cache (not decoded) */
    int32_t n_generated;         /* tokens sampled so far, this one included */
    uint64_t id;                 /* the request's id (as hearth_engine_submit() gave it) */
} hearth_piece;

/* Receives a request's pieces on the engine's thread, in order. Return true
 * to go on, false to cancel the request. It must return quickly (every
 * request of the engine waits for it) and must not call hearth_engine_free.
 * Every accepted request gets exactly one last piece (finish != NONE), even
 * when cancelled; after it `user` is no longer used. */
typedef bool (*hearth_piece_fn)(const hearth_piece *piece, void *user);

typedef struct hearth_request_params {
    /* The prompt: exactly one of tokens (n_tokens ids), prompt (UTF-8 text,
     * tokenized with add_special and parse_special), messages (a
     * conversation rendered by the engine's chat template with the
     * generation prompt, as hearth_chat_render() does) or messages_json
     * (below). Copied at submit. */
    const int32_t *tokens;
    size_t n_tokens;
    const char *prompt;
    const hearth_chat_message *messages;
    size_t n_messages;
    /* Or the conversation as a JSON array of OpenAI chat messages
     * (hearth_chat_apply_template_json()), the form that carries tool calls
     * and tool results. Copied at submit. */
    const char *messages_json;
    /* Tools the model may call (chat requests): a JSON array of OpenAI tool
     * definitions, given to the chat template; NULL: none. The tool-call
     * format is chosen from the chat template (Hermes/Qwen <tool_call>,
     * Llama 3.x JSON and <|python_tag|>, Mistral [TOOL_CALLS], or a generic
     * JSON form for templates that take no tools); the model's calls come
     * back parsed in hearth_piece.tool_calls, their arguments constrained by
     * a grammar built from each tool's parameters schema. */
    const char *tools_json;
    /* "auto" (NULL too: text or calls, the grammar switching on at the
     * format's opening marker), "none" (text only, the tools still shown to
     * the template), "required" (at least one call) or a function's name
     * (exactly that function). */
    const char *tool_choice;
    bool parallel_tool_calls;       /* may make several calls in one turn; default true */
    int32_t max_tokens;             /* tokens to generate at most; -1 (default): until the slot's context is full */
    hearth_sampler_params sampling; /* as hearth_sampler_init() */
    const char *const *stop;        /* n_stop stop strings (non-empty), copied; the text ends before the first */
    size_t n_stop;
    bool logprobs;            /* report each token's log-probability */
    int32_t top_logprobs;     /* and this many alternatives, 0..HEARTH_MAX_TOP_LOGPROBS */
    bool ignore_eos;          /* keep generating past end-of-generation tokens */
    hearth_piece_fn on_piece; /* required */
    void *user;
} hearth_request_params;

/* Defaults: no prompt, max_tokens -1, sampler defaults, no stop strings,
 * no logprobs, no tools, parallel_tool_calls true. */
HEARTH_API hearth_request_params hearth_request_default_params(void);

/* Queues a request and returns at once; its pieces arrive through
 * p->on_piece on the engine's thread. *id (may be NULL) receives an id for
 * hearth_engine_cancel(), unique within the engine.
 * Errors (the callback is then never called): INVALID_ARG (an embeddings
 * engine, no prompt or more than one, an empty prompt, a token out of the vocabulary, NULL
 * on_piece, top_logprobs out of range, an empty stop string, bad sampling
 * parameters: the sampler's message; tools that are not an array of
 * function definitions with a name, a parameters schema that does not
 * compile, tool_choice naming no given tool, tools with a prompt that is
 * not a conversation, tools with a grammar), CONTEXT_FULL (the prompt does not
 * leave room to generate in a slot: "the prompt is N tokens and a slot
 * holds M"), BUSY (n_queue_max requests are already waiting), UNSUPPORTED
 * or FORMAT (the chat template failed; its message), OUT_OF_MEMORY.
 * Thread-safe. */
HEARTH_API hearth_status hearth_engine_submit(hearth_engine *engine, const hearth_request_params *p, uint64_t *id);

/* Asks request `id` to stop: it gets its last piece (finish CANCELLED)
 * within one step and its slot is free for the next. Unknown or finished
 * ids are ignored. Thread-safe; may be called from a piece callback. */
HEARTH_API void hearth_engine_cancel(hearth_engine *engine, uint64_t id);

/* Pauses (paused true) or resumes request `id`'s generation: a paused
 * request keeps its slot and cached tokens but takes no part in the steps
 * (a prompt being read goes on; no new token is sampled) until it is
 * resumed or cancelled, while the engine's other requests go on. This is
 * backpressure for a client that reads slower than the engine produces:
 * pause when the client's buffer is full, resume when it has been read.
 * Unknown or finished ids are ignored. Thread-safe; may be called from a
 * piece callback (a piece callback that pauses receives no further piece
 * until the resume). */
HEARTH_API void hearth_engine_pause(hearth_engine *engine, uint64_t id, bool paused);

/* Embeddings through the engine. An engine made with params.ctx.embeddings
 * true (an encoder such as bert needs it; a decoder may have it) computes
 * embeddings only: its thread batches the waiting sequences of every caller
 * (up to n_slots sequences and min(n_batch, n_ubatch) tokens a step) into
 * one forward pass, each sequence in a slot of its own from position 0, and
 * clears the slot after. Such an engine refuses hearth_engine_submit()
 * (INVALID_ARG), and a generation engine refuses these calls. */
HEARTH_API bool hearth_engine_embeddings(const hearth_engine *engine);

/* The pooling an embeddings engine computes (a hearth_pooling_type, the
 * model's when params.ctx.pooling_type was UNSPECIFIED): with
 * HEARTH_POOLING_RANK the engine is a reranker and each sequence gives
 * hearth_model_n_cls_out floats (feed it hearth_tokenize_rerank pairs);
 * -1 for NULL or a generation engine. Thread-safe. */
HEARTH_API int32_t hearth_engine_pooling_type(const hearth_engine *engine);

/* Embeds the sequence tokens[0..n_tokens) and blocks until its pooled
 * vector is in out: float[n_embd] (hearth_model_n_embd), pooled as the
 * context's pooling_type says (the model's by default: mean for
 * all-MiniLM), unit L2 norm unless params.ctx.embd_normalize is false;
 * with pooling RANK, float[n_cls_out] scores (hearth_model_n_cls_out).
 * `tokens` is the caller's (with the model's special tokens, such as BERT's
 * [CLS] and [SEP]: hearth_tokenize with add_special) and is read until the
 * call returns; `out` is the caller's, written only on success.
 * Errors: INVALID_ARG (NULL engine, tokens or out; n_tokens < 1; a token
 * outside the vocabulary; more tokens than a sequence takes: "input 0 is N
 * tokens and an embedding takes at most M", M being the slot's context
 * n_ctx / n_seq_max or min(n_batch, n_ubatch) when smaller; an engine that
 * generates text; pooling NONE, which gives no vector per sequence), BUSY
 * (n_queue_max + n_slots calls are already waiting), CANCELLED
 * (hearth_engine_free() began before the vector was computed), DEVICE or
 * OUT_OF_MEMORY (the forward pass failed: "the forward pass failed: ...").
 * Thread-safe; must not be called from a piece callback. */
HEARTH_API hearth_status hearth_engine_embed(hearth_engine *engine, const int32_t *tokens, int32_t n_tokens,
                                             float *out);

/* Embeds n_seqs sequences at once (tokens[i][0..n_tokens[i]) for i in
 * [0, n_seqs)) into out: float[n_seqs * n_embd], sequence i's vector at
 * out + i * n_embd (n_cls_out in place of n_embd with pooling RANK). The sequences join the engine's queue together and run
 * in as few steps as the slots and the batch allow; the call returns when
 * all are done. Every sequence is checked before any is queued: errors as
 * hearth_engine_embed(), the message naming the input ("input 3 is ...");
 * with a failed forward pass `out` is partly written. Counts as one call
 * for BUSY. Thread-safe. */
HEARTH_API hearth_status hearth_engine_embed_batch(hearth_engine *engine, int32_t n_seqs, const int32_t *const *tokens,
                                                   const int32_t *n_tokens, float *out);

/* The prompt text of a chat request (messages or messages_json, with its
 * tools) as the engine renders it for submit: its chat template (or the one
 * the engine was given), the tools' prompt, the generation prompt. On
 * success *text holds it, NUL-terminated; free it with hearth_chat_free().
 * Errors (*text NULL): INVALID_ARG (NULL argument, no conversation, tools
 * without messages_json, a conversation or tools the template refuses),
 * FORMAT (the template failed), OUT_OF_MEMORY. Thread-safe. */
HEARTH_API hearth_status hearth_engine_render(const hearth_engine *engine, const hearth_request_params *params,
                                              char **text);

/* Tokens the request's prompt would take, prepared exactly as
 * hearth_engine_submit() prepares it (the chat template, the tools' prompt,
 * special tokens) without submitting it: Anthropic's count_tokens. Only the
 * prompt fields and tools of `params` are read; on_piece may be NULL.
 * Errors: INVALID_ARG (NULL argument, no prompt or several, a template or
 * tools the engine refuses), FORMAT (the chat template failed on the
 * conversation), OUT_OF_MEMORY. Thread-safe. */
HEARTH_API hearth_status hearth_engine_count_tokens(const hearth_engine *engine, const hearth_request_params *params,
                                                    int32_t *n_tokens);

/* Latency histogram with fixed buckets (Prometheus style). */
#define HEARTH_HIST_BUCKETS 14
typedef struct hearth_histogram {
    double le[HEARTH_HIST_BUCKETS];      /* upper bounds in seconds, ascending; the last is +inf */
    uint64_t count[HEARTH_HIST_BUCKETS]; /* observations <= le[i] (cumulative, as Prometheus) */
    uint64_t n;                          /* observations */
    double sum;                          /* their sum, seconds */
} hearth_histogram;

typedef struct hearth_engine_stats {
    int32_t n_slots;
    int32_t n_running;           /* requests in slots */
    int32_t n_waiting;           /* requests queued for a slot */
    uint64_t n_requests;         /* requests finished, any reason */
    uint64_t n_prompt_tokens;    /* prompt tokens decoded (cached ones not counted) */
    uint64_t n_cached_tokens;    /* prompt tokens reused from the cache */
    uint64_t n_generated_tokens; /* tokens sampled */
    double prompt_seconds;       /* time in steps, shared out over the tokens by kind */
    double generation_seconds;
    uint32_t kv_used;             /* KV cells holding tokens, all slots */
    uint32_t kv_size;             /* n_ctx */
    hearth_histogram ttft;        /* submit to first token, seconds */
    hearth_histogram inter_token; /* between a request's consecutive tokens, seconds */
} hearth_engine_stats;

/* A snapshot of the engine's counters. Thread-safe. */
HEARTH_API void hearth_engine_stats_get(hearth_engine *engine, hearth_engine_stats *out);

typedef enum hearth_slot_state {
    HEARTH_SLOT_IDLE = 0,
    HEARTH_SLOT_PREFILL = 1, /* reading its prompt */
    HEARTH_SLOT_GENERATE = 2,
} hearth_slot_state;

typedef struct hearth_slot_info {
    int32_t id;
    hearth_slot_state state;
    uint64_t request_id; /* 0 when idle */
    int32_t n_prompt, n_cached, n_generated;
    uint32_t n_past; /* tokens in the slot's KV cache (kept after a request for reuse) */
    uint32_t n_ctx;  /* the slot's positions */
} hearth_slot_info;

/* Fills out[0..min(n_max, n_slots)) with the slots' state and sets *n to
 * n_slots. Thread-safe. */
HEARTH_API void hearth_engine_slots(hearth_engine *engine, hearth_slot_info *out, size_t n_max, size_t *n);

/* The model the engine runs. */
HEARTH_API const hearth_model *hearth_engine_model(const hearth_engine *engine);
/* Tokens one slot holds (the context's n_ctx / n_seq_max): a request's prompt
 * and generation together; 0 for NULL. Thread-safe. */
HEARTH_API uint32_t hearth_engine_n_ctx_seq(const hearth_engine *engine);

/* -------------------------------------------------------------- quantize -- */

/* Quantization mixes ("file types"). The values are llama.cpp's LLAMA_FTYPE_*
 * (llama.h) and go into the output's general.file_type. A mix is a base type
 * plus llama.cpp's rules (src/llama-quant.cpp) for the tensors that get
 * another: 1-D tensors (norms) stay as they are; the output matrix (or the
 * token embeddings when they double as it) gets Q6_K, or Q8_0 in the Q8_0 mix
 * and when its rows do not fit Q6_K's 256-element blocks; the _M mixes give
 * some layers' attn_v and ffn_down more bits; K types fall back to a
 * 32-element type for rows that are not a multiple of 256. */
typedef enum hearth_ftype {
    HEARTH_FTYPE_MOSTLY_F16 = 1,
    HEARTH_FTYPE_MOSTLY_Q4_0 = 2,
    HEARTH_FTYPE_MOSTLY_Q4_1 = 3,
    HEARTH_FTYPE_MOSTLY_Q8_0 = 7,
    HEARTH_FTYPE_MOSTLY_Q5_0 = 8,
    HEARTH_FTYPE_MOSTLY_Q5_1 = 9,
    HEARTH_FTYPE_MOSTLY_Q2_K = 10,
    HEARTH_FTYPE_MOSTLY_Q3_K_M = 12,
    HEARTH_FTYPE_MOSTLY_Q4_K_S = 14,
    HEARTH_FTYPE_MOSTLY_Q4_K_M = 15,
    HEARTH_FTYPE_MOSTLY_Q5_K_S = 16,
    HEARTH_FTYPE_MOSTLY_Q5_K_M = 17,
    HEARTH_FTYPE_MOSTLY_Q6_K = 18,
    HEARTH_FTYPE_MOSTLY_BF16 = 32,
} hearth_ftype;

/* The mix named `name` ("Q4_K_M", case-insensitive). Errors: INVALID_ARG
 * (NULL, or an unknown name: the message lists the valid ones). Thread-safe. */
HEARTH_API hearth_status hearth_ftype_from_name(const char *name, hearth_ftype *out);

/* The static name of a mix ("Q4_K_M"), or NULL for a value that is not one.
 * Thread-safe. */
HEARTH_API const char *hearth_ftype_name(hearth_ftype ftype);

/* One tensor of a quantization, reported to the progress callback twice:
 * before it is converted (done false) and once its bytes are written (done
 * true). All pointers are valid only during the call. */
typedef struct hearth_quantize_progress {
    uint32_t i_tensor; /* 0-based, in file order */
    uint32_t n_tensors;
    const char *name;     /* "blk.0.attn_q.weight" */
    const char *src_type; /* ggml type names: "f32", "q4_K" ... */
    const char *dst_type; /* equal to src_type: copied unchanged */
    uint32_t n_dims;
    int64_t ne[4];      /* elements per dimension; ne[0] is the row length */
    uint64_t src_bytes; /* size in the input */
    uint64_t dst_bytes; /* size in the output */
    bool done;
} hearth_quantize_progress;

/* Called on the thread that called hearth_model_quantize(). */
typedef void (*hearth_quantize_progress_fn)(const hearth_quantize_progress *p, void *user);

typedef struct hearth_quantize_params {
    hearth_ftype ftype; /* the mix; default Q8_0 (llama.cpp's default) */
    int32_t n_threads;  /* threads converting rows; 0 = physical cores */
    /* Allow converting tensors that are already quantized (the result is
     * worse than quantizing the F16/F32 original: two rounding errors, and
     * more bits cannot restore what was lost; it still runs at the speed of
     * its type). Default false, as llama-quantize's --allow-requantize. */
    bool allow_requantize;
    /* Decide every tensor's type and report it through `progress`, but write
     * nothing (out_path may be NULL); types this build cannot write yet are
     * allowed. Default false. */
    bool dry_run;
    hearth_quantize_progress_fn progress; /* NULL: no reports */
    void *progress_user;
} hearth_quantize_params;

/* Defaults: Q8_0, n_threads 0, allow_requantize false, dry_run false, no
 * progress callback. */
HEARTH_API hearth_quantize_params hearth_quantize_default_params(void);

/* Reads the GGUF model at in_path and writes it to out_path with its 2-D
 * weights converted to the mix params->ftype (see hearth_ftype), metadata
 * copied, general.file_type and general.quantization_version (2) set, split
 * keys removed, and the input's general.alignment kept. Works for any
 * architecture; tensors are converted row by row (dequantized to F32, then
 * quantized with hearth's reference quantizers, bit-exact with ggml's),
 * rows split over n_threads threads, and streamed to the output one slab at
 * a time (memory: about 16 MiB plus one row per thread, not the model).
 * The output appears only when complete: it is written to a temporary file
 * "OUT.tmp-XXXXXX" in out_path's folder and renamed at the end; on any
 * failure nothing is left behind. An existing out_path is replaced; out_path
 * may equal in_path. `params` may be NULL for the defaults.
 * Errors: INVALID_ARG (NULL paths, an unknown ftype, n_threads < 0; an input
 * already quantized, unless allow_requantize), IO (input
 * missing or unreadable; output folder missing or not writable, out_path a
 * directory; a write failed, e.g. disk full; the message names the path),
 * FORMAT (input not GGUF, truncated, hostile: the reader's message; a tensor
 * holding NaN or infinity), UNSUPPORTED (split files; the mix needs a type
 * this build cannot write yet: "type Q4_K_M needs Q4_K, which this build
 * cannot write yet"; a tensor type it cannot read), OUT_OF_MEMORY.
 * Thread-safe (distinct calls share nothing); the library prints nothing. */
HEARTH_API hearth_status hearth_model_quantize(const char *in_path, const char *out_path,
                                               const hearth_quantize_params *params);

/* -------------------------------------------------------- models by name -- */

/* Where models come from and go. The store is one folder: a name maps to one
 * file in it (hf/OWNER/REPO/FILE, ollama/NAMESPACE/NAME/TAG.gguf,
 * url/SCHEME/HOST/PATH). Environment variables read at each call:
 * HEARTH_MODELS (the store), HEARTH_OFFLINE=1, HF_ENDPOINT (default
 * https://huggingface.co), HF_TOKEN (sent as "Authorization: Bearer" to
 * HF_ENDPOINT only), OLLAMA_REGISTRY (default https://registry.ollama.ai),
 * OLLAMA_MODELS (a local Ollama store; default ~/.ollama/models),
 * HEARTH_STALL_TIMEOUT (seconds without a byte before a download is retried,
 * default 30), HEARTH_RETRIES (retries of a cut or stalled download, default
 * 5, with backoff 1, 2, 4 ... 30 s); proxies as libcurl reads them
 * (https_proxy, no_proxy ...). */
typedef struct hearth_fetch_params {
    /* The store; NULL: $HEARTH_MODELS, else $XDG_CACHE_HOME/hearth, else
     * ~/.cache/hearth. Created when a download needs it. */
    const char *models_dir;
    bool offline;                /* never use the network (also when HEARTH_OFFLINE=1) */
    hearth_progress_fn progress; /* download reports (what = the file's name), or NULL */
    void *progress_user;
} hearth_fetch_params;

/* Defaults: models_dir NULL, offline false, no progress callback. */
HEARTH_API hearth_fetch_params hearth_fetch_default_params(void);

/* Turns a model name into the path of a local GGUF file, downloading it into
 * the store first when it is not there (unless offline). Names:
 * - a path to a file (returned as it is, also when it does not exist:
 *   hearth_model_load() then says so), or anything ending in ".gguf";
 * - "http(s)://HOST/.../FILE.gguf": that file (verified when the server
 *   gives its sha256 as Hugging Face does, in X-Linked-Etag);
 * - "hf.co/OWNER/REPO[:QUANT]" (or huggingface.co/...): the .gguf file of
 *   the repository whose name carries the quant tag (case-insensitive;
 *   default Q4_K_M, then Q4_0, then the first by name), from the repository's
 *   listing (HF_ENDPOINT/api/models/OWNER/REPO/tree/main), verified against
 *   the listing's LFS sha256; a split model's files are all fetched;
 * - a catalog name shipped with hearth (data/catalog.json), e.g.
 *   "llama3.2:1b", "qwen2.5:0.5b", with ":QUANT" for another quant
 *   ("llama3.2:1b:Q8_0");
 * - "ollama:NAME[:TAG]" (TAG default "latest"): from the local Ollama store
 *   when it has it (the path of its blob, used in place), else from the
 *   Ollama registry (/v2/library/NAME/manifests/TAG, the model layer's blob,
 *   verified by its digest).
 * A download goes to FILE.partial beside its final name, resumes from a
 * partial file (HTTP Range), is retried on a cut or stall, checks the free
 * disk space first, and is renamed to its final name only after its size
 * and sha256 check out; a lock file (FILE.lock, flock) makes concurrent
 * calls for one file, in any process, share one download.
 * On success *path_out is a malloc'd path (the first file of a split
 * model); free it with hearth_free(). `p` may be NULL for the defaults.
 * Errors (*path_out NULL): INVALID_ARG (NULL name or path_out, a name of
 * none of the forms above: the message lists them and the catalog),
 * IO (offline and not in the store: the message names the missing file;
 * the store cannot be created or written; not enough disk space: the MiB
 * needed and free), NETWORK (host unknown or unreachable, HTTP 401/403/404
 * and other refusals, each with what to do; no quant in the repository
 * matches: the message lists the files; cut or stalled after every retry:
 * the partial file is kept for the next call to resume), FORMAT (the
 * download's size or sha256 is wrong: it is deleted; a listing or manifest
 * that is not what the protocol says), CANCELLED (the progress callback
 * returned false), OUT_OF_MEMORY. Thread-safe (distinct calls share
 * nothing but the store's locks). */
HEARTH_API hearth_status hearth_model_resolve(const char *name, const hearth_fetch_params *p, char **path_out);

/* Frees memory the library returned to the caller where a call says so
 * (hearth_model_resolve()'s path). NULL is a no-op. */
HEARTH_API void hearth_free(void *ptr);

/* One model in the store. Every string is owned by the list. */
typedef struct hearth_stored_model {
    char *name;    /* a name that resolves to it: "llama3.2:1b", "hf.co/OWNER/REPO:Q4_K_M", "ollama:NAME:TAG", a URL */
    char *quant;   /* the quant tag of its file name ("Q4_K_M"), "" when it has none */
    uint64_t size; /* bytes, all files of a split model together */
    char *path;    /* the file (a split model's first file) */
} hearth_stored_model;

/* The complete models of the store (partial downloads left out), sorted by
 * name, into *out (n entries; NULL when 0); free with
 * hearth_model_list_free(). A missing store is an empty list. Errors:
 * INVALID_ARG (NULL out or n), IO (the store cannot be read),
 * OUT_OF_MEMORY. Thread-safe. */
HEARTH_API hearth_status hearth_model_list(const hearth_fetch_params *p, hearth_stored_model **out, size_t *n);
HEARTH_API void hearth_model_list_free(hearth_stored_model *list, size_t n);

/* Deletes the model `name` (any name form hearth_model_resolve() takes that
 * maps into the store) from the store: its file(s), and a partial download
 * with its lock file. Never touches the network or files outside the store
 * (a local path, a model in the Ollama store). Errors: INVALID_ARG (NULL or
 * unknown name; a name outside the store), IO (not in the store: the message
 * says so; a file could not be deleted). Thread-safe; removing a model that
 * another process is downloading makes that download fail. */
HEARTH_API hearth_status hearth_model_remove(const char *name, const hearth_fetch_params *p);

#ifdef __cplusplus
}
#endif

#endif
