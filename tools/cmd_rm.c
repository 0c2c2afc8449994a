/* `hearth rm NAME...`: deletes models from the store (hearth_model_remove()). */
#include <stdio.h>
#include <string.h>

#include "cli.h"

int cmd_rm(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "hearth: rm needs a model NAME (see hearth list)\n");
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        printf("usage: hearth rm NAME...\n\nDeletes each model (a name as hearth list shows it, or any name that "
               "resolves to it) from the store.\n");
        return 0;
    }
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        if (hearth_model_remove(argv[i], NULL) != HEARTH_OK) rc = cli_fail("rm");
        else printf("deleted %s\n", argv[i]);
    }
    return rc;
}
