/* Shared pieces of the `hearth` command: subcommand entry points, strict
 * number parsing for options, logging to stderr, and a clock. */
#ifndef HEARTH_TOOLS_CLI_H
#define HEARTH_TOOLS_CLI_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hearth.h"

int cmd_run(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_embed(int argc, char **argv);
int cmd_rerank(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_pull(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_rm(int argc, char **argv);

/* Parse an option value strictly (the whole string, within [lo, hi]). On
 * failure print "hearth: OPT expects ..., got 'VAL'" to stderr and return false. */
bool cli_parse_int(const char *opt, const char *val, long lo, long hi, long *out);
bool cli_parse_float(const char *opt, const char *val, double lo, double hi, double *out);
bool cli_parse_u64(const char *opt, const char *val, uint64_t *out);

/* A --flash-attn value: on, off or auto (llama.cpp's words), or 1, 0, -1
 * (llama-bench's), into a hearth_flash_attn. On failure prints the error and
 * returns false. */
bool cli_parse_flash_attn(const char *opt, const char *val, int32_t *out);

/* The options `run`, `chat` and `serve` share: -t, -c, -b, -ub, -ngl, -fa, -ctk, -ctv at
 * argv[*i]. Returns 1 when argv[*i] is one of them (its value parsed into
 * ctx or *n_gpu_layers, *i moved past it), 0 when it is not, -2 after
 * printing the error (a missing or bad value; `cmd` names the --help). */
int cli_parse_ctx_opt(int argc, char **argv, int *i, const char *cmd, hearth_context_params *ctx, long *n_gpu_layers);
#define CLI_CACHE_TYPE_HELP                                                                                            \
    "  -ctk, --cache-type-k T   KV cache type of the keys: f16, bf16, q8_0, q4_0 (default f16)\n"                      \
    "  -ctv, --cache-type-v T   KV cache type of the values, the same types; q8_0 and q4_0 need -fa on or\n"           \
    "                           auto (default f16); GPU layers take f16 only\n"

/* The RoPE options (cli_rope.c), llama.cpp's: --rope-scaling, --rope-scale,
 * --rope-freq-base, --rope-freq-scale, --yarn-orig-ctx, --yarn-ext-factor,
 * --yarn-attn-factor, --yarn-beta-fast, --yarn-beta-slow into ctx; returns
 * as cli_parse_ctx_opt (which tries them too). CLI_ROPE_HELP lists them for
 * a --help. */
int cli_parse_rope_opt(int argc, char **argv, int *i, const char *cmd, hearth_context_params *ctx);
#define CLI_ROPE_HELP                                                                                                  \
    "rope (llama.cpp's options; default: the model's):\n"                                                              \
    "  --rope-scaling {none,linear,yarn}  how positions stretch past the trained context\n"                            \
    "  --rope-scale N           context scaling factor: the context grows N times (freq scale 1/N)\n"                  \
    "  --rope-freq-base N       theta base of the rotations\n"                                                         \
    "  --rope-freq-scale N      frequency scale: the context grows 1/N times\n"                                        \
    "  --yarn-orig-ctx N        YaRN: the model's original context (0 = its rope.scaling or training length)\n"        \
    "  --yarn-ext-factor N      YaRN: extrapolation mix (-1 = 1 with YaRN; 0 = full interpolation)\n"                  \
    "  --yarn-attn-factor N     attention magnitude scale (-1 = 1; YaRN uses its own)\n"                               \
    "  --yarn-beta-fast N       YaRN: low correction dim, rotations (-1 = 32)\n"                                       \
    "  --yarn-beta-slow N       YaRN: high correction dim, rotations (-1 = 1)\n"

/* How the weights are held and how offloaded layers spread over the devices
 * (--device): llama.cpp's --no-mmap (read the file into memory instead of
 * mapping it), --mlock (lock the weights in RAM), -ts/--tensor-split
 * A,B,... (proportions, in the order of the devices; "/" separates them
 * too), -mg/--main-gpu N (the device of split mode none) and
 * -sm/--split-mode none|layer (row is refused: the library has no row
 * split). cli_load_init starts from hearth_model_default_params(). */
#define CLI_MAX_SPLIT 16 /* devices a model is offloaded to at most */
typedef struct cli_load {
    float tensor_split[CLI_MAX_SPLIT]; /* 0 for the devices past those given */
    bool has_tensor_split;
    long main_gpu;
    hearth_split_mode split_mode;
    bool use_mmap, use_mlock;
} cli_load;

/* Their lines of each command's --help, after --device's. */
#define CLI_LOAD_HELP                                                                                                  \
    "  -sm, --split-mode MODE   how the layers spread over several devices: layer (runs of layers in\n"                \
    "                           -ts proportions; default) or none (all on -mg); row is not supported\n"                \
    "  -ts, --tensor-split A,B,...  each device's share of the layers, in --device order (default: in\n"               \
    "                           proportion to their free memory)\n"                                                    \
    "  -mg, --main-gpu N        the device of -sm none, an index into --device's list (default 0)\n"                   \
    "  --no-mmap                read the model into memory (transparent huge pages where the kernel\n"                 \
    "                           allows: faster CPU decode) instead of mapping the file; slower to load,\n"             \
    "                           and the memory is not shared with other processes\n"                                   \
    "  --mlock                  lock the weights in RAM so that they are never paged out\n"

void cli_load_init(cli_load *s);
/* Like cli_parse_ctx_opt, for -ts, -mg, -sm, --no-mmap and --mlock into *s. */
int cli_parse_load_opt(int argc, char **argv, int *i, const char *cmd, cli_load *s);
/* Sets mp's split_mode, main_gpu, tensor_split (which points into s: s must
 * outlive the load), use_mmap and use_mlock. */
void cli_load_apply(const cli_load *s, hearth_model_params *mp);
/* Sets what -ngl auto must leave room for: the context cp will have, its
 * tokens (fit_n_ctx) and cache types (fit_type_k, fit_type_v). */
void cli_fit_context(const hearth_context_params *cp, hearth_model_params *mp);

/* Sends library log messages at or above `min_level` to stderr. The level
 * comes from HEARTH_LOG (debug|info|warn|error) when set, else from `verbose`
 * (info) or warn. */
void cli_log_init(bool verbose);

/* The progress line of pulls and model loads on stderr (progress_bar.c). */
typedef struct cli_progress {
    const char *verb; /* "pulling", "loading" */
    bool tty;         /* stderr is a terminal: redraw one line */
    bool quiet_first; /* draw nothing before a second has passed (loads) */
    bool drawn;       /* a line is on screen without its newline */
    double last_line; /* elapsed seconds at the last line off a terminal */
} cli_progress;

void cli_progress_init(cli_progress *b, const char *verb);
/* A hearth_progress_fn drawing onto b (user). Never cancels. */
bool cli_progress_draw(const hearth_progress *p, void *user);

/* Resolves a model name (hearth_model_resolve(): a path, a catalog name,
 * hf.co/..., ollama:..., a URL) into *path (free with hearth_free()),
 * downloading with a progress line. Returns 0, or 1 after printing the error. */
int cli_resolve(const char *name, char **path);

/* Resolves `name` and loads the model with mp (a progress line when the load
 * takes over a second). Returns 0, or 1 after printing the error. */
int cli_model_load(const char *name, hearth_model_params *mp, hearth_model **out);

/* Prints "hearth: <what>: <last error>" to stderr; returns the exit status 1. */
int cli_fail(const char *what);

/* Monotonic time in seconds. */
double cli_now(void);

/* Reads a whole file into a malloc'd, NUL-terminated buffer (*len without the
 * NUL); NULL after printing "hearth: cannot open WHAT 'PATH': ..." to stderr. */
char *cli_read_file(const char *path, const char *what, size_t *len);

/* Writes text to stdout and flushes it (streamed output). Returns 0, or 1
 * after printing the error. */
int cli_emit(const char *buf, size_t len);

/* What cli_generate() samples with and where its text goes. */
typedef struct cli_gen {
    hearth_context *ctx; /* holds the decoded prompt */
    const hearth_model *model;
    hearth_sampler *smpl;
    hearth_detok *detok;
    const volatile sig_atomic_t *stop; /* stop when it becomes nonzero (Ctrl-C), or NULL */
    /* also called with each token's text (tok -1: the bytes the detokenizer
     * held at the end), or NULL; returns 0 or an exit status */
    int (*on_text)(void *user, int32_t tok, const char *text, size_t len);
    void *user;
    /* when the context is full: shift it (hearth_context_shift: keep the
     * first n_keep tokens, drop half of the rest, as llama-cli does) and go
     * on; false: stop there */
    bool context_shift;
    uint32_t n_keep;
} cli_gen;

/* Samples up to `limit` tokens after the decoded prompt, streaming their
 * text to stdout, until an end-of-generation token or *stop; every token but
 * the limit-th is decoded so the next can be sampled (with context_shift,
 * after shifting a full context; a context that cannot shift, n_keep too
 * close to its end, stops there). *n_gen gets the tokens generated.
 * Returns 0, or the exit status after printing the error. */
int cli_generate(const cli_gen *g, long limit, long *n_gen);

/* Options of `hearth run` and `hearth chat` (cmd_run.c parses both). */
typedef struct run_opts {
    const char *model;
    const char *prompt;
    const char *prompt_file;
    const char *chat;          /* --chat MESSAGE: one turn through the chat template */
    const char *system;        /* --system TEXT */
    const char *chat_template; /* --chat-template FILE: instead of the model's */
    long n_predict;
    bool context_shift;             /* run: --context-shift */
    long n_keep;                    /* run: --keep N (-1: the whole prompt) */
    hearth_sampler_params sampling; /* grammar and json_schema: run's --grammar, --json-schema, --json */
    bool seed_set;
    const char *grammar_file; /* run: --grammar-file FILE */
    hearth_context_params ctx;
    long n_gpu_layers;
    cli_load load;
    bool parse_special;
    bool verbose;
} run_opts;

/* Parses `hearth run` (chat false) or `hearth chat` options. Returns 0 to go
 * on, -1 after printing --help, otherwise the exit status (2) after printing
 * the error. */
int cli_parse_run_args(int argc, char **argv, run_opts *o, bool chat);

/* The chat template of --chat-template FILE, or NULL for the model's. */
typedef struct chat_template {
    const hearth_model *model;
    char *tmpl;
} chat_template;

/* Loads the template from `file`, or checks that the model has one. Returns
 * 0 or the exit status after printing the error. */
int chat_template_load(const hearth_model *model, const char *file, chat_template *ct);
void chat_template_free(chat_template *ct);

/* Renders the conversation with the generation prompt into *prompt (free
 * with hearth_chat_free()), ready to tokenize with add_special (a BOS the
 * template wrote is dropped when the tokenizer adds one). Returns 0 or the
 * exit status after printing the error. */
int chat_render(const chat_template *ct, const hearth_chat_message *msgs, size_t n_msgs, char **prompt);

#endif
