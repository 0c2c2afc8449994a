/* The `hearth` command: dispatches to one subcommand per file (cmd_*.c). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *out) {
    fprintf(out,
            "hearth %s - run GGUF language models on CPUs and GPUs\n"
            "\n"
            "usage: hearth <command> [options]\n"
            "\n"
            "commands:\n"
            "  run MODEL [PROMPT]   generate text from a prompt (hearth run --help)\n"
            "  chat MODEL           chat with the model, using its chat template (hearth chat --help)\n"
            "  bench MODEL          prompt and generation speed, like llama-bench (hearth bench --help)\n"
            "  info [MODEL]         version, build features, devices; with MODEL, its metadata\n"
            "  quantize IN OUT TYPE convert a model to Q4_0, Q4_K_M, Q8_0, F16 ... (hearth quantize --help)\n"
            "  serve MODEL          OpenAI-compatible HTTP server (hearth serve --help)\n"
            "\n"
            "  -h, --help           this help\n"
            "  --version            print the version\n",
            HEARTH_VERSION);
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
    if (!strcmp(cmd, "run")) return cmd_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "chat")) return cmd_chat(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench")) return cmd_bench(argc - 1, argv + 1);
    if (!strcmp(cmd, "info")) return cmd_info(argc - 1, argv + 1);
    if (!strcmp(cmd, "quantize")) return cmd_quantize(argc - 1, argv + 1);
    if (!strcmp(cmd, "serve")) return cmd_serve(argc - 1, argv + 1);
    fprintf(stderr, "hearth: unknown command '%s' (commands: run, chat, bench, info, quantize, serve); see hearth --help\n", cmd);
    return 2;
}
