/* The streaming split of generated text into content and OpenAI tool-call
 * deltas. Each format is a few small match programs (below): from content,
 * the programs that open a call (marker, name, arguments key, the '{' that
 * begins the arguments); after a call's arguments, the programs that close
 * it or open the next call of the same block. A program is text in which
 * ' ' is optional JSON whitespace, \x01 a JSON string (the function's
 * name), \x02 a JSON string skipped (Mistral's id), and every other byte
 * itself. The arguments are streamed byte for byte (JSON depth and strings
 * tracked to find where the object ends), GENERIC's {"response": "..."}
 * as its decoded string.
 *
 * Held text and the rule for malformed calls: text that could still begin
 * a marker is held until it cannot (as stop strings are). A call is given
 * (first delta: index, id, name) once its head has matched up to the '{'
 * of its arguments; before that, text that stops matching, or is left
 * unmatched at `final`, is content, so no text is lost. After the
 * arguments, closing markup that does not match goes back to content
 * scanning and markup left unfinished at `final` is dropped. Whitespace at
 * the start of the reply and after a call is held, and dropped when a call
 * or the end follows it. */
#include <stdlib.h>
#include <string.h>

#include "runtime/toolcall/toolcall_impl.h"

enum { ACT_CALL, ACT_RESPONSE, ACT_CLOSE };

typedef struct prog {
    const char *text;
    uint8_t act;
    bool at_start; /* only where the reply starts (nothing but whitespace before) */
} prog;

typedef struct spec {
    const prog *open, *after_call, *after_resp;
    size_t n_open, n_after_call, n_after_resp;
} spec;

#define NAME_ARGS "{ \"name\" : \x01 , \"arguments\" : {"
#define NAME_PARAMS "{ \"name\" : \x01 , \"parameters\" : {"

/* Hermes models also write a bare call as the whole reply (Qwen2.5-Coder
 * does): its closing '}' is held and dropped at the end */
static const prog hermes_open[] = {{"<tool_call> " NAME_ARGS, ACT_CALL, false}, {NAME_ARGS, ACT_CALL, true}};
static const prog hermes_after[] = {{" } </tool_call>", ACT_CLOSE, false}};
static const prog llama3_open[] = {{"<|python_tag|> " NAME_PARAMS, ACT_CALL, false},
                                   {"<|python_tag|> " NAME_ARGS, ACT_CALL, false},
                                   {NAME_PARAMS, ACT_CALL, true},
                                   {NAME_ARGS, ACT_CALL, true}};
static const prog llama3_after[] = {{" }", ACT_CLOSE, false}};
static const prog mistral_open[] = {{"[TOOL_CALLS] [ " NAME_ARGS, ACT_CALL, false}};
static const prog mistral_after[] = {{" } , " NAME_ARGS, ACT_CALL, false},
                                     {" , \"id\" : \x02 } , " NAME_ARGS, ACT_CALL, false},
                                     {" } ]", ACT_CLOSE, false},
                                     {" , \"id\" : \x02 } ]", ACT_CLOSE, false}};
static const prog generic_open[] = {{"{ \"tool_calls\" : [ " NAME_ARGS, ACT_CALL, true},
                                    {"{ \"response\" : \"", ACT_RESPONSE, true}};
static const prog generic_after[] = {{" } , " NAME_ARGS, ACT_CALL, false}, {" } ] }", ACT_CLOSE, false}};
static const prog generic_after_resp[] = {{" }", ACT_CLOSE, false}};

#define N(a) (sizeof(a) / sizeof(a[0]))
static const spec SPECS[] = {
    [HL_TOOLS_GENERIC] = {generic_open, generic_after, generic_after_resp, N(generic_open), N(generic_after),
                          N(generic_after_resp)},
    [HL_TOOLS_HERMES] = {hermes_open, hermes_after, NULL, N(hermes_open), N(hermes_after), 0},
    [HL_TOOLS_LLAMA3] = {llama3_open, llama3_after, NULL, N(llama3_open), N(llama3_after), 0},
    [HL_TOOLS_MISTRAL] = {mistral_open, mistral_after, NULL, N(mistral_open), N(mistral_after), 0},
};

/* Held markup longer than this stops matching (a runaway name). */
#define MAX_HELD 4096

enum { ST_CONTENT, ST_MATCH, ST_ARGS, ST_RESP };

typedef struct call_info {
    char id[32];
    char *name;
} call_info;

/* One delta of this push: arguments are args[off, off + len). */
typedef struct pdelta {
    int32_t index;
    bool first;
    size_t off, len;
} pdelta;

struct hl_tool_parser {
    const spec *sp;
    uint64_t seed;
    int state;
    const prog *alts; /* ST_MATCH: the programs tried at pos */
    size_t n_alts;
    bool from_content; /* ST_MATCH: opening a call (failing gives content) */
    bool at_start;     /* no content given yet */
    bool hold_ws;      /* whitespace in content is held (start, after a call) */
    hl_str in;         /* input not yet consumed: in.p[pos, in.n) */
    size_t pos;
    size_t mark; /* ST_MATCH: where the programs start (after held whitespace) */
    int depth;   /* ST_ARGS: JSON nesting inside the arguments */
    bool in_str, esc;
    call_info *calls;
    int32_t n_calls, cap_calls;
    /* this push's output */
    hl_str content, args;
    pdelta *pd;
    size_t n_pd, cap_pd;
    hearth_tool_call_delta *out;
    size_t cap_out;
};

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

typedef enum { M_FAIL, M_PARTIAL, M_FULL } mres;

/* Matches program `pr` against s[0, n): *used bytes on M_FULL; the \x01
 * string's contents (between the quotes) in [*name_at, +*name_len). */
static mres match(const char *pr, const char *s, size_t n, size_t *used, size_t *name_at, size_t *name_len) {
    size_t i = 0;
    for (; *pr; pr++) {
        if (*pr == ' ') {
            while (i < n && is_ws(s[i])) i++;
            if (i == n) return M_PARTIAL;
        } else if (*pr == '\x01' || *pr == '\x02') {
            if (i == n) return M_PARTIAL;
            if (s[i++] != '"') return M_FAIL;
            const size_t start = i;
            for (;; i++) {
                if (i == n) return M_PARTIAL;
                if ((unsigned char)s[i] < 0x20) return M_FAIL;
                if (s[i] == '"') break;
                if (s[i] == '\\' && ++i == n) return M_PARTIAL;
            }
            if (*pr == '\x01') *name_at = start, *name_len = i - start;
            i++;
        } else {
            if (i == n) return M_PARTIAL;
            if (s[i++] != *pr) return M_FAIL;
        }
    }
    *used = i;
    return M_FULL;
}

/* The literal a program begins with (its marker): its length. */
static size_t marker_len(const char *pr) {
    size_t n = 0;
    while (pr[n] && pr[n] != ' ' && pr[n] != '\x01' && pr[n] != '\x02') n++;
    return n;
}

static hearth_status emit_content(hl_tool_parser *p, const char *s, size_t n) {
    if (n) p->at_start = false;
    return hl_str_put(&p->content, s, n);
}

static hearth_status emit_args(hl_tool_parser *p, const char *s, size_t n) {
    const int32_t idx = p->n_calls - 1;
    if (!p->n_pd || p->pd[p->n_pd - 1].index != idx) {
        if (p->n_pd == p->cap_pd) {
            size_t cap = p->cap_pd ? p->cap_pd * 2 : 8;
            pdelta *pd = realloc(p->pd, cap * sizeof *pd);
            if (!pd) return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory for tool-call deltas");
            p->pd = pd;
            p->cap_pd = cap;
        }
        p->pd[p->n_pd++] = (pdelta){idx, false, p->args.n, 0};
    }
    p->pd[p->n_pd - 1].len += n;
    return hl_str_put(&p->args, s, n);
}

/* "call_" and 24 letters or digits from the seed and the call's index. */
static void make_id(uint64_t seed, int32_t index, char *id) {
    static const char alnum[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    uint64_t state = seed ^ ((uint64_t)(uint32_t)index * 0xd1342543de82ef95u), z = 0;
    memcpy(id, "call_", 5);
    for (int i = 0; i < 24; i++) {
        if (i % 6 == 0) { /* splitmix64; 6 draws of 62 use 36 of its bits */
            z = (state += 0x9e3779b97f4a7c15u);
            z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
            z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
            z ^= z >> 31;
        }
        id[5 + i] = alnum[z % 62];
        z /= 62;
    }
    id[29] = '\0';
}

/* Starts call n_calls named by the JSON string contents s[0, n). */
static hearth_status begin_call(hl_tool_parser *p, const char *s, size_t n) {
    if (p->n_calls == p->cap_calls) {
        int32_t cap = p->cap_calls ? p->cap_calls * 2 : 4;
        call_info *c = realloc(p->calls, (size_t)cap * sizeof *c);
        if (!c) return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory for tool calls");
        p->calls = c;
        p->cap_calls = cap;
    }
    call_info *c = &p->calls[p->n_calls];
    if (!(c->name = hl_malloc(n + 1))) return HEARTH_ERR_OUT_OF_MEMORY;
    size_t w = 0; /* names are plain (setup.c); an escape keeps the escaped byte */
    for (size_t i = 0; i < n; i++) c->name[w++] = s[i] == '\\' && i + 1 < n ? s[++i] : s[i];
    c->name[w] = '\0';
    make_id(p->seed, p->n_calls, c->id);
    p->n_calls++;
    HL_TRY(emit_args(p, "{", 1));
    p->pd[p->n_pd - 1].first = true;
    p->state = ST_ARGS;
    p->depth = 1;
    p->in_str = p->esc = false;
    return HEARTH_OK;
}

static void to_match(hl_tool_parser *p, const prog *alts, size_t n, bool from_content) {
    p->state = ST_MATCH;
    p->mark = p->pos;
    p->alts = alts;
    p->n_alts = n;
    p->from_content = from_content;
}

/* Content up to the next marker (held while it may be one). Returns
 * whether it moved on. */
static hearth_status step_content(hl_tool_parser *p, bool *moved) {
    const char *s = p->in.p;
    const size_t n = p->in.n;
    size_t i = p->pos;
    for (; i < n; i++) {
        bool hold = false;
        for (size_t a = 0; a < p->sp->n_open; a++) {
            const prog *pr = &p->sp->open[a];
            if (pr->at_start && !p->at_start) continue;
            const size_t ml = marker_len(pr->text), avail = n - i < ml ? n - i : ml;
            if (memcmp(s + i, pr->text, avail)) continue;
            if (avail < ml) {
                hold = true;
                continue;
            }
            if (!p->hold_ws) {
                HL_TRY(emit_content(p, s + p->pos, i - p->pos));
                p->pos = i;
            }
            to_match(p, p->sp->open, p->sp->n_open, true);
            p->mark = i;
            *moved = true;
            return HEARTH_OK;
        }
        if (hold) break;
        if (p->hold_ws && is_ws(s[i])) continue;
        p->hold_ws = p->at_start = false;
    }
    if (!p->hold_ws && i > p->pos) {
        HL_TRY(emit_content(p, s + p->pos, i - p->pos));
        p->pos = i;
    }
    *moved = false;
    return HEARTH_OK;
}

/* The programs at pos: an action on a full match, or a fallback. */
static hearth_status step_match(hl_tool_parser *p, bool *moved) {
    const char *s = p->in.p + p->mark;
    const size_t n = p->in.n - p->mark;
    bool partial = false;
    *moved = true;
    for (size_t a = 0; a < p->n_alts; a++) {
        const prog *pr = &p->alts[a];
        if (pr->at_start && !p->at_start) continue;
        size_t used = 0, name_at = 0, name_len = 0;
        const mres r = match(pr->text, s, n, &used, &name_at, &name_len);
        if (r == M_PARTIAL) partial = true;
        if (r != M_FULL) continue;
        p->pos = p->mark + used; /* held whitespace before a call is dropped */
        p->hold_ws = false;
        if (pr->act == ACT_CALL) return begin_call(p, s + name_at, name_len);
        if (pr->act == ACT_RESPONSE) {
            p->state = ST_RESP;
            return HEARTH_OK;
        }
        p->state = ST_CONTENT; /* ACT_CLOSE */
        p->at_start = false;
        p->hold_ws = true;
        return HEARTH_OK;
    }
    if (partial && n <= MAX_HELD) {
        *moved = false;
        return HEARTH_OK;
    }
    if (p->from_content) { /* not a call: held whitespace and the marker's first byte (ASCII) are content */
        HL_TRY(emit_content(p, p->in.p + p->pos, p->mark + 1 - p->pos));
        p->pos = p->mark + 1;
        p->hold_ws = false;
    }
    p->state = ST_CONTENT;
    return HEARTH_OK;
}

static hearth_status step_args(hl_tool_parser *p, bool *moved) {
    const char *s = p->in.p;
    size_t i = p->pos;
    *moved = false;
    while (i < p->in.n && p->depth > 0) {
        const char c = s[i++];
        if (p->esc) p->esc = false;
        else if (p->in_str) {
            if (c == '\\') p->esc = true;
            else if (c == '"') p->in_str = false;
        } else if (c == '"') p->in_str = true;
        else if (c == '{' || c == '[') p->depth++;
        else if (c == '}' || c == ']') p->depth--;
    }
    HL_TRY(emit_args(p, s + p->pos, i - p->pos));
    p->pos = i;
    if (p->depth == 0) {
        to_match(p, p->sp->after_call, p->sp->n_after_call, false);
        *moved = true;
    }
    return HEARTH_OK;
}

static int hexval(char c) {
    return c >= '0' && c <= '9'   ? c - '0'
           : c >= 'a' && c <= 'f' ? c - 'a' + 10
           : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                  : -1;
}

/* \uXXXX at s (6 bytes): the code unit, or -1. */
static long hex4(const char *s) {
    long v = 0;
    if (s[0] != '\\' || s[1] != 'u') return -1;
    for (int k = 2; k < 6; k++) {
        const int h = hexval(s[k]);
        if (h < 0) return -1;
        v = v * 16 + h;
    }
    return v;
}

static size_t utf8_put(unsigned long cp, char *o) {
    if (cp < 0x80) return o[0] = (char)cp, 1;
    if (cp < 0x800) return o[0] = (char)(0xC0 | cp >> 6), o[1] = (char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000)
        return o[0] = (char)(0xE0 | cp >> 12), o[1] = (char)(0x80 | (cp >> 6 & 0x3F)),
               o[2] = (char)(0x80 | (cp & 0x3F)), 3;
    o[0] = (char)(0xF0 | cp >> 18), o[1] = (char)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (char)(0x80 | (cp >> 6 & 0x3F)), o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* GENERIC's response string, decoded into content. An escape is decoded
 * once all of it has come (a surrogate pair needs both halves); an invalid
 * one is given as written. */
static hearth_status step_resp(hl_tool_parser *p, bool *moved) {
    const char *s = p->in.p;
    const size_t n = p->in.n;
    size_t i = p->pos;
    *moved = false;
    while (i < n && s[i] != '"') {
        size_t run = i;
        while (run < n && s[run] != '"' && s[run] != '\\') run++;
        HL_TRY(emit_content(p, s + i, run - i));
        i = run;
        if (i == n || s[i] == '"') break;
        if (i + 1 == n) break; /* the escape's next byte has not come */
        static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
        const char esc = s[i + 1];
        const char *e = esc ? strchr(from, esc) : NULL;
        char buf[4];
        size_t len = 2, adv = 2;
        memcpy(buf, s + i, 2); /* an invalid escape: as written */
        if (esc == 'u') {
            if (n - i < 6) break;
            const long hi = hex4(s + i);
            long cp = hi;
            if (hi >= 0xD800 && hi < 0xDC00) { /* a high surrogate: its low half follows */
                if (n - i < 12) break;
                const long lo = hex4(s + i + 6);
                if (lo >= 0xDC00 && lo < 0xE000) cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00), adv = 12;
            }
            if (cp >= 0 && !(cp >= 0xD800 && cp < 0xE000)) {
                len = utf8_put((unsigned long)cp, buf);
                if (adv == 2) adv = 6;
            }
        } else if (e) {
            buf[0] = to[e - from];
            len = 1;
        }
        HL_TRY(emit_content(p, buf, len));
        i += adv;
    }
    p->pos = i;
    if (i < n && s[i] == '"') {
        p->pos++;
        to_match(p, p->sp->after_resp, p->sp->n_after_resp, false);
        *moved = true;
    }
    return HEARTH_OK;
}

hearth_status hl_tool_parser_init(hl_tool_format f, uint64_t id_seed, hl_tool_parser **out) {
    *out = NULL;
    hl_tool_parser *p = hl_calloc(1, sizeof *p);
    if (!p) return HEARTH_ERR_OUT_OF_MEMORY;
    p->sp = &SPECS[f <= HL_TOOLS_MISTRAL ? f : HL_TOOLS_GENERIC];
    p->seed = id_seed;
    p->at_start = p->hold_ws = true;
    *out = p;
    return HEARTH_OK;
}

void hl_tool_parser_free(hl_tool_parser *p) {
    if (!p) return;
    for (int32_t i = 0; i < p->n_calls; i++) free(p->calls[i].name);
    free(p->calls);
    free(p->in.p);
    free(p->content.p);
    free(p->args.p);
    free(p->pd);
    free(p->out);
    free(p);
}

/* At the end: held content is given (whitespace held after a call or
 * before anything is dropped), an unmatched call opening is content,
 * unfinished closing markup is dropped. */
static hearth_status finish(hl_tool_parser *p) {
    const char *s = p->in.p + p->pos;
    const size_t n = p->in.n - p->pos;
    bool all_ws = true;
    for (size_t i = 0; i < n; i++) all_ws = all_ws && is_ws(s[i]);
    if ((p->state == ST_CONTENT && !(p->hold_ws && all_ws)) || (p->state == ST_MATCH && p->from_content))
        HL_TRY(emit_content(p, s, n));
    p->pos = p->in.n;
    return HEARTH_OK;
}

static hearth_status build_output(hl_tool_parser *p, hl_tool_output *out) {
    if (p->n_pd > p->cap_out) {
        hearth_tool_call_delta *o = realloc(p->out, p->n_pd * sizeof *o);
        if (!o) return hl_fail(HEARTH_ERR_OUT_OF_MEMORY, "out of memory for tool-call deltas");
        p->out = o;
        p->cap_out = p->n_pd;
    }
    for (size_t i = 0; i < p->n_pd; i++) {
        const pdelta *d = &p->pd[i];
        p->out[i] = (hearth_tool_call_delta){d->index, d->first ? p->calls[d->index].id : NULL,
                                             d->first ? p->calls[d->index].name : NULL, p->args.p + d->off, d->len};
    }
    *out = (hl_tool_output){p->content.p ? p->content.p : "", p->content.n, p->out, (int32_t)p->n_pd};
    return HEARTH_OK;
}

hearth_status hl_tool_parser_push(hl_tool_parser *p, const char *text, size_t len, bool final, hl_tool_output *out) {
    *out = (hl_tool_output){"", 0, NULL, 0};
    p->content.n = p->args.n = p->n_pd = 0;
    if (p->pos) { /* drop what earlier pushes consumed */
        memmove(p->in.p, p->in.p + p->pos, p->in.n - p->pos);
        p->in.n -= p->pos;
        p->mark -= p->pos;
        p->pos = 0;
    }
    HL_TRY(hl_str_put(&p->in, text, len));
    for (bool moved = true; moved;) {
        switch (p->state) {
        case ST_CONTENT: HL_TRY(step_content(p, &moved)); break;
        case ST_MATCH: HL_TRY(step_match(p, &moved)); break;
        case ST_ARGS: HL_TRY(step_args(p, &moved)); break;
        default: HL_TRY(step_resp(p, &moved)); break;
        }
    }
    if (final) HL_TRY(finish(p));
    return build_output(p, out);
}

int32_t hl_tool_parser_n_calls(const hl_tool_parser *p) { return p->n_calls; }
