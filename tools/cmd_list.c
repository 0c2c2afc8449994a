/* `hearth list`: the models of the store, one per line (name, quant, size,
 * path), as hearth_model_list() gives them. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cmd_list(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: hearth list\n\nLists the models in the store (HEARTH_MODELS, default ~/.cache/hearth): "
                   "NAME, QUANT, SIZE and PATH.\n");
            return 0;
        }
        fprintf(stderr, "hearth: list takes no argument ('%s'); see hearth list --help\n", argv[i]);
        return 2;
    }
    hearth_stored_model *list;
    size_t n;
    if (hearth_model_list(NULL, &list, &n) != HEARTH_OK) return cli_fail("list");
    int w = 4;
    for (size_t i = 0; i < n; i++)
        if ((int)strlen(list[i].name) > w) w = (int)strlen(list[i].name);
    printf("%-*s  %-8s  %10s  %s\n", w, "NAME", "QUANT", "SIZE", "PATH");
    for (size_t i = 0; i < n; i++)
        printf("%-*s  %-8s  %6.0f MiB  %s\n", w, list[i].name, list[i].quant[0] ? list[i].quant : "-",
               (double)list[i].size / (1 << 20), list[i].path);
    hearth_model_list_free(list, n);
    return 0;
}
