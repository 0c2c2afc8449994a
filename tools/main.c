/* The `hearth` command: dispatches to one subcommand per file (cmd_*.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *out) {
    fprintf(
        out,
        "hearth %s - run GGUF language models on CPUs and GPUs\n"
        "\n"
        "usage: hearth <command> [options]\n"
        "\n"
        "commands:\n"
        "  run MODEL [PROMPT]   generate text from a prompt (hearth run --help)\n"
        "  chat MODEL           chat with the model, using its chat template (hearth chat --help)\n"
        "  embed MODEL TEXT...  embeddings of texts, one vector per line (hearth embed --help)\n"
        "  rerank MODEL QUERY DOC...  a reranker's scores of documents for a query (hearth rerank --help)\n"
        "  bench MODEL          prompt and generation speed, like llama-bench (hearth bench --help)\n"
        "  info [MODEL]         version, build features, devices; with MODEL, its metadata\n"
        "  quantize IN OUT TYPE convert a model to Q4_0, Q4_K_M, Q8_0, F16 ... (hearth quantize --help)\n"
        "  serve MODEL          OpenAI-compatible HTTP server (hearth serve --help)\n"
        "  pull NAME            download a model into the store (hearth pull --help)\n"
        "  list                 the models in the store\n"
        "  rm NAME              delete a model from the store\n"
        "\n"
        "MODEL is a .gguf file or a model name: llama3.2:1b, hf.co/OWNER/REPO[:QUANT] (or -hf OWNER/REPO[:QUANT]),\n"
        "ollama:NAME[:TAG], an http(s) URL; a name not in the store is downloaded first (--offline: never).\n"
        "\n"
        "  -h, --help           this help\n"
        "  --version            print the version\n",
        HEARTH_VERSION);
}

/* The options every command that takes a MODEL (and pull) accepts:
 * -hf OWNER/REPO[:QUANT] becomes the model hf.co/OWNER/REPO[:QUANT], put
 * first so the command sees it as its MODEL; --offline sets HEARTH_OFFLINE.
 * Returns 0, or 2 after printing the error. */
static int model_name_opts(int *argc, char **argv) {
    int k = 1;
    char *hf = NULL;
    for (int i = 1; i < *argc; i++) {
        if (!strcmp(argv[i], "--offline")) {
            setenv("HEARTH_OFFLINE", "1", 1);
        } else if (!strcmp(argv[i], "-hf") || !strcmp(argv[i], "--hf-repo")) {
            if (i + 1 >= *argc) {
                fprintf(stderr, "hearth: %s needs OWNER/REPO[:QUANT]\n", argv[i]);
                return 2;
            }
            static char name[1024];
            snprintf(name, sizeof name, "hf.co/%s", argv[++i]);
            hf = name;
        } else {
            argv[k++] = argv[i];
        }
    }
    if (hf) {
        memmove(argv + 2, argv + 1, (size_t)(k - 1) * sizeof *argv);
        argv[1] = hf;
        k++;
    }
    argv[k] = NULL;
    *argc = k;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("hearth %s\n", HEARTH_VERSION);
        return 0;
    }
    static const char *const takes_model[] = {"run", "chat", "embed", "rerank", "bench", "info", "serve", "pull"};
    for (size_t i = 0; i < sizeof takes_model / sizeof *takes_model; i++) {
        if (strcmp(cmd, takes_model[i]) != 0) continue;
        int n = argc - 1;
        if (model_name_opts(&n, argv + 1)) return 2;
        argc = n + 1;
    }
    if (!strcmp(cmd, "run")) return cmd_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "chat")) return cmd_chat(argc - 1, argv + 1);
    if (!strcmp(cmd, "embed")) return cmd_embed(argc - 1, argv + 1);
    if (!strcmp(cmd, "rerank")) return cmd_rerank(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench")) return cmd_bench(argc - 1, argv + 1);
    if (!strcmp(cmd, "info")) return cmd_info(argc - 1, argv + 1);
    if (!strcmp(cmd, "quantize")) return cmd_quantize(argc - 1, argv + 1);
    if (!strcmp(cmd, "serve")) return cmd_serve(argc - 1, argv + 1);
    if (!strcmp(cmd, "pull")) return cmd_pull(argc - 1, argv + 1);
    if (!strcmp(cmd, "list")) return cmd_list(argc - 1, argv + 1);
    if (!strcmp(cmd, "rm")) return cmd_rm(argc - 1, argv + 1);
    fprintf(stderr,
            "hearth: unknown command '%s' (commands: run, chat, embed, rerank, bench, info, quantize, serve, pull, "
            "list, rm); see "
            "hearth --help\n",
            cmd);
    return 2;
}
