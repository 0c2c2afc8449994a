/* `hearth pull NAME...`: downloads models into the store (or finds them
 * there) with a progress line, and prints each one's path on stdout. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cmd_pull(int argc, char **argv) {
    int n = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: hearth pull [--offline] NAME...\n\n"
                   "Downloads each model into the store (HEARTH_MODELS, default ~/.cache/hearth) unless it is there,\n"
                   "verifies it, and prints its path. NAME is a catalog name (llama3.2:1b, qwen2.5:0.5b:Q8_0 ...),\n"
                   "hf.co/OWNER/REPO[:QUANT] (or -hf OWNER/REPO[:QUANT]), ollama:NAME[:TAG] or an http(s) URL of a\n"
                   ".gguf file. An interrupted pull resumes where it stopped. See README.md, Models by name.\n");
            return 0;
        }
        if (argv[i][0] == '-') {
            fprintf(stderr, "hearth: unknown option '%s'; see hearth pull --help\n", argv[i]);
            return 2;
        }
        n++;
    }
    if (!n) {
        fprintf(stderr, "hearth: pull needs a model NAME; see hearth pull --help\n");
        return 2;
    }
    cli_log_init(false);
    for (int i = 1; i < argc; i++) {
        char *path;
        if (cli_resolve(argv[i], &path)) return 1;
        printf("%s\n", path);
        hearth_free(path);
    }
    return 0;
}
