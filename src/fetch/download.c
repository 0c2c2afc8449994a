/* One download into the store (fetch.h, hl_download_file()):
 *  - a lock file DEST.lock held with flock(2) for the whole download, so
 *    concurrent pulls of one file (threads or processes) share one transfer:
 *    the later ones wait, then find DEST;
 *  - bytes go to DEST.partial; a partial file left by a cut is resumed with
 *    an HTTP Range request (RFC 9110 14.2; a 200 answer means the server
 *    ignored it: start over), its bytes hashed first so the sha256 (OpenSSL
 *    EVP) covers the whole file;
 *  - the free disk space is checked once the size is known;
 *  - a cut (no more bytes, a reset) or a stall (no byte for
 *    HEARTH_STALL_TIMEOUT seconds, watched from libcurl's progress callback,
 *    which runs at least once a second also when no data comes) is retried
 *    HEARTH_RETRIES times with backoff 1, 2, 4 ... 30 s;
 *  - the size and sha256 are checked before rename(2) gives the file its
 *    final name, so DEST is always complete and verified. */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "fetch/fetch.h"

typedef struct xfer {
    const hl_download *d;
    char partial[4096];
    FILE *f;        /* the partial file, appended to */
    EVP_MD_CTX *md; /* has hashed exactly the `have` bytes of the file */
    uint64_t have;
    uint64_t total;                 /* expected size: d->size, or from the answer's Content-Length; 0 unknown */
    bool started;                   /* the current attempt has delivered its first bytes */
    char server_sha[HL_SHA256_HEX]; /* from X-Linked-Etag, else "" */
    double stall_after;             /* seconds without a byte that make a stall */
    double last_byte_t;             /* monotonic time of the last byte (or of the attempt's start) */
    uint64_t last_have;
    bool stalled;
    hearth_status st; /* why a callback stopped the transfer */
} xfer;

/* Empties the partial file and the hash (the server sent the whole file). */
static hearth_status restart(xfer *x) {
    if (ftruncate(fileno(x->f), 0) != 0 || fseek(x->f, 0, SEEK_SET) != 0)
        return hl_fail(HEARTH_ERR_IO, "cannot truncate '%s': %s", x->partial, strerror(errno));
    x->have = 0;
    return EVP_DigestInit_ex(x->md, EVP_sha256(), NULL) ? HEARTH_OK
                                                        : hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "sha256 init failed");
}

static hearth_status check_space(const xfer *x, uint64_t total) {
    if (total <= x->have) return HEARTH_OK;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", x->partial);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    struct statvfs vfs;
    if (statvfs(dir, &vfs) != 0) return HEARTH_OK; /* cannot tell: the write will say */
    const uint64_t avail = (uint64_t)vfs.f_bavail * vfs.f_frsize, need = total - x->have;
    if (avail >= need) return HEARTH_OK;
    return hl_fail(HEARTH_ERR_IO,
                   "not enough disk space in '%s': the download needs %.1f MiB more, %.1f MiB are free: free some "
                   "space or set HEARTH_MODELS to a folder on another disk",
                   dir, (double)need / (1 << 20), (double)avail / (1 << 20));
}

/* The first bytes of an answer: a 200 to a range request restarts the file;
 * the size, once known, is checked against the disk's free space. */
static hearth_status on_start(xfer *x, CURL *c) {
    long code = 0;
    curl_off_t len = -1;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_getinfo(c, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &len);
    if (code == 200 && x->have > 0) HL_TRY(restart(x));
    if (!x->total && len >= 0) x->total = x->have + (uint64_t)len;
    return check_space(x, x->total);
}

typedef struct cb {
    xfer *x;
    CURL *c;
} cb;

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *user) {
    cb *b = user;
    xfer *x = b->x;
    const size_t n = size * nmemb;
    if (!x->started) {
        x->started = true;
        if ((x->st = on_start(x, b->c)) != HEARTH_OK) return 0;
    }
    if (x->total && x->have + n > x->total) {
        x->st = hl_fail(HEARTH_ERR_FORMAT, "%s: the server sent more than the %llu bytes expected", x->d->url,
                        (unsigned long long)x->total);
        return 0;
    }
    if (fwrite(ptr, 1, n, x->f) != n) {
        x->st = hl_fail(HEARTH_ERR_IO, "cannot write '%s': %s", x->partial, strerror(errno));
        return 0;
    }
    EVP_DigestUpdate(x->md, ptr, n);
    x->have += n;
    return n;
}

/* X-Linked-Etag: the sha256 of a Hugging Face LFS file (huggingface_hub's
 * file_download.py reads it the same way); quotes and W/ are stripped. */
static size_t on_header(char *line, size_t size, size_t nmemb, void *user) {
    xfer *x = user;
    const size_t n = size * nmemb;
    static const char key[] = "x-linked-etag:";
    if (n > sizeof key && strncasecmp(line, key, sizeof key - 1) == 0) {
        const char *v = line + sizeof key - 1;
        while (*v == ' ' || *v == 'W' || *v == '/' || *v == '"') v++;
        size_t k = 0;
        while (k < 64 && v + k < line + n && strchr("0123456789abcdefABCDEF", v[k]) && v[k]) k++;
        if (k == 64 && (v + k == line + n || !strchr("0123456789abcdefABCDEF", v[k]) || !v[k])) {
            memcpy(x->server_sha, v, 64);
            x->server_sha[64] = '\0';
        }
    }
    return n;
}

static int on_progress(void *user, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
    (void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
    xfer *x = user;
    const double now = hl_now();
    if (x->have != x->last_have) {
        x->last_have = x->have;
        x->last_byte_t = now;
    } else if (now - x->last_byte_t > x->stall_after) {
        x->stalled = true;
        return 1;
    }
    if (!x->d->progress) return 0;
    if (!x->d->progress->total && x->total) x->d->progress->total = x->d->progress->base + x->total;
    return hl_progress_report(x->d->progress, x->have, false) ? 0 : 1;
}

/* Transient failures worth another try: cuts, stalls, resets, 5xx, 429. */
static bool transient(CURLcode rc, long code) {
    if (rc == CURLE_HTTP_RETURNED_ERROR) return code >= 500 || code == 429 || code == 408;
    return rc == CURLE_PARTIAL_FILE || rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_RECV_ERROR ||
           rc == CURLE_SEND_ERROR || rc == CURLE_GOT_NOTHING || rc == CURLE_COULDNT_CONNECT || rc == CURLE_HTTP2 ||
           rc == CURLE_HTTP2_STREAM || rc == CURLE_SSL_CONNECT_ERROR;
}

/* One transfer from x->have on. *again: the failure is transient. */
static hearth_status attempt(xfer *x, bool *again) {
    *again = false;
    CURL *c = curl_easy_init();
    if (!c) return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "cannot start a libcurl transfer");
    char err[CURL_ERROR_SIZE] = "";
    cb b = {x, c};
    struct curl_slist *h = hl_http_setup(c, x->d->url, NULL);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, err);
    curl_easy_setopt(c, CURLOPT_FAILONERROR, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
    curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(c, CURLOPT_XFERINFODATA, x);
    if (x->have) curl_easy_setopt(c, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)x->have);
    x->started = false;
    x->st = HEARTH_OK;
    x->stalled = false;
    x->last_have = x->have;
    x->last_byte_t = hl_now();
    const CURLcode rc = curl_easy_perform(c);
    long code = 0;
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    if (fflush(x->f) != 0) return hl_fail(HEARTH_ERR_IO, "cannot write '%s': %s", x->partial, strerror(errno));
    if (x->st != HEARTH_OK) return x->st;
    if (x->stalled) {
        *again = true;
        return hl_fail(HEARTH_ERR_NETWORK, "%s: the transfer stalled (no byte for %.0f s): pull again to resume",
                       x->d->url, x->stall_after);
    }
    if (rc == CURLE_ABORTED_BY_CALLBACK) return hl_fail(HEARTH_ERR_CANCELLED, "download of %s cancelled", x->d->url);
    if (rc == CURLE_HTTP_RETURNED_ERROR && code == 416 && x->have) {
        /* the range starts at or past the end: the partial file is whole
         * (verified next) or longer than the file now is (start over) */
        if (x->total && x->have == x->total) return HEARTH_OK;
        *again = true;
        HL_TRY(restart(x));
        return hl_fail(HEARTH_ERR_NETWORK, "%s: the server refused to resume", x->d->url);
    }
    if (rc != CURLE_OK) {
        *again = transient(rc, code);
        return hl_http_fail(rc, code, x->d->url, err[0] ? err : curl_easy_strerror(rc));
    }
    if (x->total && x->have < x->total) {
        *again = true;
        return hl_fail(HEARTH_ERR_NETWORK, "%s: the connection ended after %llu of %llu bytes: pull again to resume",
                       x->d->url, (unsigned long long)x->have, (unsigned long long)x->total);
    }
    return HEARTH_OK;
}

/* Sleeps `seconds` in steps, going on reporting progress (so a callback can
 * cancel during the wait). */
static bool backoff(xfer *x, double seconds) {
    for (double t = 0; t < seconds; t += 0.1) {
        nanosleep(&(struct timespec){0, 100000000L}, NULL);
        if (x->d->progress && !hl_progress_report(x->d->progress, x->have, false)) return false;
    }
    return true;
}

/* Opens (or creates) the partial file and hashes what it holds. */
static hearth_status open_partial(xfer *x) {
    snprintf(x->partial, sizeof x->partial, "%s.partial", x->d->dest);
    if (!(x->f = fopen(x->partial, "a+b")))
        return hl_fail(HEARTH_ERR_IO, "cannot write '%s': %s (set HEARTH_MODELS to a writable folder)", x->partial,
                       strerror(errno));
    if (!(x->md = EVP_MD_CTX_new()) || !EVP_DigestInit_ex(x->md, EVP_sha256(), NULL))
        return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "sha256 init failed");
    enum { CHUNK = 1 << 20 };
    unsigned char *chunk = hl_malloc(CHUNK);
    if (!chunk) return HEARTH_ERR_OUT_OF_MEMORY;
    rewind(x->f);
    size_t r;
    while ((r = fread(chunk, 1, CHUNK, x->f)) > 0) {
        EVP_DigestUpdate(x->md, chunk, r);
        x->have += r;
    }
    free(chunk);
    if (ferror(x->f)) return hl_fail(HEARTH_ERR_IO, "cannot read '%s': %s", x->partial, strerror(errno));
    if (x->d->size && x->have > x->d->size) HL_TRY(restart(x));
    if (x->have) HL_INFO("resuming %s at %llu bytes", x->d->dest, (unsigned long long)x->have);
    return HEARTH_OK;
}

/* Size and sha256 of the complete partial file, then its final name. */
static hearth_status finish(xfer *x) {
    if (x->d->size && x->have != x->d->size) {
        unlink(x->partial);
        return hl_fail(HEARTH_ERR_FORMAT, "%s: got %llu bytes, expected %llu: deleted; pull again", x->d->url,
                       (unsigned long long)x->have, (unsigned long long)x->d->size);
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    EVP_DigestFinal_ex(x->md, md, &md_len);
    char got[HL_SHA256_HEX];
    for (unsigned i = 0; i < 32; i++) snprintf(got + 2 * i, 3, "%02x", md[i]);
    const char *want = x->d->sha256 && *x->d->sha256 ? x->d->sha256 : x->server_sha[0] ? x->server_sha : NULL;
    if (want && strcasecmp(want, got) != 0) {
        unlink(x->partial);
        return hl_fail(HEARTH_ERR_FORMAT,
                       "%s: sha256 mismatch (expected %s, got %s): the download is corrupt and was deleted; pull again",
                       x->d->url, want, got);
    }
    if (!want) HL_WARN("%s: no sha256 known for this file: it is not verified", x->d->url);
    if (fsync(fileno(x->f)) != 0 || rename(x->partial, x->d->dest) != 0)
        return hl_fail(HEARTH_ERR_IO, "cannot move '%s' to '%s': %s", x->partial, x->d->dest, strerror(errno));
    return HEARTH_OK;
}

static hearth_status download_locked(xfer *x) {
    HL_TRY(open_partial(x));
    x->total = x->d->size;
    x->stall_after = (double)hl_env_long("HEARTH_STALL_TIMEOUT", 30, 1, 86400);
    HL_TRY(check_space(x, x->total));
    const long retries = hl_env_long("HEARTH_RETRIES", 5, 0, 1000);
    bool again = false;
    for (long k = 0; !x->total || x->have < x->total; k++) {
        hearth_status st = attempt(x, &again);
        if (st == HEARTH_OK) break;
        if (!again || k >= retries) return st;
        const double wait = k < 5 ? (double)(1L << k) : 30.0;
        HL_WARN("%s; retrying in %.0f s (%ld of %ld)", hearth_last_error(), wait, k + 1, retries);
        if (!backoff(x, wait)) return hl_fail(HEARTH_ERR_CANCELLED, "download of %s cancelled", x->d->url);
    }
    if (x->d->progress) {
        if (!x->d->progress->total) x->d->progress->total = x->d->progress->base + x->have;
        hl_progress_report(x->d->progress, x->have, false);
    }
    return finish(x);
}

hearth_status hl_download_file(const hl_download *d) {
    hl_http_init();
    HL_TRY(hl_mkdirs_for(d->dest));
    char lock[4096];
    snprintf(lock, sizeof lock, "%s.lock", d->dest);
    const int fd = open(lock, O_CREAT | O_RDWR | O_CLOEXEC, 0644);
    if (fd < 0)
        return hl_fail(HEARTH_ERR_IO, "cannot create '%s': %s (set HEARTH_MODELS to a writable folder)", lock,
                       strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        HL_INFO("waiting for another download of %s", d->dest);
        if (flock(fd, LOCK_EX) != 0) {
            close(fd);
            return hl_fail(HEARTH_ERR_IO, "cannot lock '%s': %s", lock, strerror(errno));
        }
    }
    hearth_status st = HEARTH_OK;
    struct stat sb;
    if (stat(d->dest, &sb) != 0) { /* else another download finished it while we waited */
        xfer x = {.d = d};
        st = download_locked(&x);
        if (x.f) fclose(x.f);
        EVP_MD_CTX_free(x.md);
    }
    close(fd);
    return st;
}
