/* The chat page (webui/index.html, compiled in by CMake as hl_webui_html):
 * GET / answers it to browsers unless --no-webui (server.c's admit). */
#include <stdlib.h>
#include <string.h>

#include "server_impl.h"

/* webui_data.c, generated at build time from webui/index.html: its bytes and a NUL. */
extern const char hl_webui_html[];

void hl_handle_webui(hl_call *call, hl_reply *rep) {
    (void)call;
    char *page = strdup(hl_webui_html);
    *rep = (hl_reply){.status = page ? 200 : 0,
                      .api = rep->api,
                      .content_type = "text/html; charset=utf-8",
                      .body = page,
                      .len = page ? strlen(page) : 0};
}
