/* HTTP over libcurl (fetch.h): the options every request shares, GETs of
 * small documents (listings, manifests), and transfer failures turned into
 * one line that says what to do. Proxies come from the environment as
 * libcurl reads them (http_proxy, https_proxy, no_proxy). */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "fetch/fetch.h"

#define MAX_DOCUMENT (64u << 20)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void global_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }
void hl_http_init(void) { pthread_once(&once, global_init); }

const char *hl_http_base_url(const char *env, const char *fallback, char *buf, size_t size) {
    const char *e = getenv(env);
    snprintf(buf, size, "%s", e && *e ? e : fallback);
    size_t n = strlen(buf);
    while (n > 0 && buf[n - 1] == '/') buf[--n] = '\0';
    return buf;
}

/* Whether url is on HF_ENDPOINT (the token goes there and nowhere else). */
static bool on_hf(const char *url) {
    char ep[512];
    const char *e = hl_hf_endpoint(ep, sizeof ep);
    const size_t n = strlen(e);
    return strncmp(url, e, n) == 0 && (url[n] == '/' || url[n] == '\0');
}

struct curl_slist *hl_http_setup(void *curl, const char *url, const char *accept) {
    CURL *c = curl;
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "hearth/" HEARTH_VERSION);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    struct curl_slist *h = NULL;
    char line[1024];
    const char *token = getenv("HF_TOKEN");
    /* libcurl drops a custom Authorization header when a redirect leaves the
     * host (the Hugging Face CDN gets signed URLs instead) */
    if (token && *token && on_hf(url) && strlen(token) < 900) {
        snprintf(line, sizeof line, "Authorization: Bearer %s", token);
        h = curl_slist_append(h, line);
    }
    if (accept) {
        snprintf(line, sizeof line, "Accept: %s", accept);
        struct curl_slist *more = curl_slist_append(h, line);
        if (more) h = more;
    }
    if (h) curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    return h;
}

hearth_status hl_http_fail(int curl_code, long http_code, const char *url, const char *curl_msg) {
    const bool hf = on_hf(url);
    switch (http_code) {
    case 401:
        return hl_fail(HEARTH_ERR_NETWORK, "%s: HTTP 401 unauthorized: %s", url,
                       hf ? "the repository is private or gated: set HF_TOKEN to an access token "
                            "(https://huggingface.co/settings/tokens)"
                          : "the server wants credentials");
    case 403:
        return hl_fail(HEARTH_ERR_NETWORK, "%s: HTTP 403 forbidden: %s", url,
                       hf ? "accept the model's license on its Hugging Face page, and check that HF_TOKEN's token "
                            "may read the repository"
                          : "the server refuses access to this file");
    case 404:
        return hl_fail(HEARTH_ERR_NETWORK, "%s: HTTP 404 not found: check the name (owner, repository, file, tag)%s",
                       url, hf ? "; a private repository also answers 404 without HF_TOKEN" : "");
    case 416: return hl_fail(HEARTH_ERR_NETWORK, "%s: HTTP 416: the server cannot resume this file", url);
    case 429:
        return hl_fail(HEARTH_ERR_NETWORK, "%s: HTTP 429 too many requests: wait a while and pull again%s", url,
                       hf ? " (a HF_TOKEN raises the limit)" : "");
    default: break;
    }
    if (http_code >= 400)
        return hl_fail(HEARTH_ERR_NETWORK, "%s: HTTP %ld from the server: try again later", url, http_code);
    switch ((CURLcode)curl_code) {
    case CURLE_COULDNT_RESOLVE_HOST:
        return hl_fail(HEARTH_ERR_NETWORK,
                       "%s: cannot resolve the host name (%s): check the network connection, the name or the proxy "
                       "(https_proxy); models already pulled run with --offline",
                       url, curl_msg);
    case CURLE_COULDNT_RESOLVE_PROXY:
        return hl_fail(HEARTH_ERR_NETWORK, "%s: cannot resolve the proxy (%s): check https_proxy / http_proxy", url,
                       curl_msg);
    case CURLE_COULDNT_CONNECT:
        return hl_fail(HEARTH_ERR_NETWORK, "%s: cannot connect (%s): check the network connection or the proxy", url,
                       curl_msg);
    case CURLE_OPERATION_TIMEDOUT:
        return hl_fail(HEARTH_ERR_NETWORK, "%s: the transfer stalled (%s): pull again to resume it", url, curl_msg);
    case CURLE_PEER_FAILED_VERIFICATION:
        return hl_fail(HEARTH_ERR_NETWORK, "%s: TLS certificate not trusted (%s): check the system's CA certificates",
                       url, curl_msg);
    default: return hl_fail(HEARTH_ERR_NETWORK, "%s: %s: pull again to resume", url, curl_msg);
    }
}

typedef struct doc {
    char *data;
    size_t len, cap;
    bool too_big;
} doc;

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *user) {
    doc *d = user;
    const size_t n = size * nmemb;
    if (d->len + n + 1 > MAX_DOCUMENT) {
        d->too_big = true;
        return 0;
    }
    if (d->len + n + 1 > d->cap) {
        size_t cap = d->cap ? d->cap : 4096;
        while (cap < d->len + n + 1) cap *= 2;
        char *p = realloc(d->data, cap);
        if (!p) return 0;
        d->data = p;
        d->cap = cap;
    }
    memcpy(d->data + d->len, ptr, n);
    d->len += n;
    d->data[d->len] = '\0';
    return n;
}

hearth_status hl_http_get(const char *url, const char *accept, char **body, size_t *len) {
    *body = NULL;
    hl_http_init();
    CURL *c = curl_easy_init();
    if (!c) return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "cannot start a libcurl transfer");
    char err[CURL_ERROR_SIZE] = "";
    doc d = {0};
    struct curl_slist *h = hl_http_setup(c, url, accept);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, err);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &d);
    const long stall = hl_env_long("HEARTH_STALL_TIMEOUT", 30, 1, 86400);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, stall);
    const CURLcode rc = curl_easy_perform(c);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    hearth_status st = HEARTH_OK;
    if (d.too_big)
        st = hl_fail(HEARTH_ERR_FORMAT, "%s: the answer is over %u MiB: not a listing", url, MAX_DOCUMENT >> 20);
    else if (rc == CURLE_WRITE_ERROR) st = hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory reading %s", url);
    else if (rc != CURLE_OK || code >= 400) st = hl_http_fail(rc, code, url, err[0] ? err : curl_easy_strerror(rc));
    else if (!d.data && !(d.data = calloc(1, 1))) st = hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory");
    if (st != HEARTH_OK) {
        free(d.data);
        return st;
    }
    *body = d.data;
    *len = d.len;
    return HEARTH_OK;
}
