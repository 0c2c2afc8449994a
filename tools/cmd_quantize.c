/* `hearth quantize IN.gguf OUT.gguf TYPE [-t N]`: converts a model to a
 * quantization mix (hearth_model_quantize). One progress line per tensor and
 * a summary go to stderr; every failure is one line naming the problem, and
 * leaves no output file behind. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

typedef struct qz_state {
    double t_start;
    uint64_t src_bytes, dst_bytes, n_elements;
    bool line_open; /* a progress line waits for its end */
} qz_state;

static void quantize_usage(FILE *out) {
    fprintf(out,
            "usage: hearth quantize IN.gguf OUT.gguf TYPE [options]\n"
            "       hearth quantize --dry-run IN.gguf TYPE\n"
            "\n"
            "Writes the GGUF model IN.gguf to OUT.gguf with its weights converted to TYPE, with\n"
            "llama.cpp's rules for which tensors get more bits (norms stay F32; the output matrix\n"
            "gets Q6_K or Q8_0; the _M mixes give some layers' attn_v and ffn_down Q6_K).\n"
            "Start from an F32, F16 or BF16 file. OUT.gguf appears only once it is complete.\n"
            "\n"
            "types: Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K_M Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K F16 BF16\n"
            "\n"
            "options:\n"
            "  -t, --threads N        threads converting rows (default: physical cores, %d here)\n"
            "      --allow-requantize convert tensors that are already quantized (quality suffers)\n"
            "      --dry-run          print each tensor's type without writing anything\n"
            "  -h, --help             this help\n",
            hearth_cpu_physical_cores());
}

static void human_size(uint64_t bytes, char *buf, size_t size) {
    if (bytes < 1024) snprintf(buf, size, "%llu B", (unsigned long long)bytes);
    else if (bytes < (1u << 20)) snprintf(buf, size, "%.1f KiB", bytes / 1024.0);
    else if (bytes < (1u << 30)) snprintf(buf, size, "%.1f MiB", bytes / 1048576.0);
    else snprintf(buf, size, "%.2f GiB", bytes / 1073741824.0);
}

/* "[ 12/272] blk.0.attn_q.weight  f32 -> q4_0  576 x 576 ... 1.3 MiB -> 182.2 KiB" */
static void on_progress(const hearth_quantize_progress *p, void *user) {
    qz_state *s = user;
    if (!p->done) {
        char shape[96];
        int len = snprintf(shape, sizeof shape, "%lld", (long long)p->ne[0]);
        for (uint32_t d = 1; d < p->n_dims && len < (int)sizeof shape; d++)
            len += snprintf(shape + len, sizeof shape - (size_t)len, " x %lld", (long long)p->ne[d]);
        int width = snprintf(NULL, 0, "%u", p->n_tensors);
        fprintf(stderr, "[%*u/%u] %-28s %5s -> %-5s %s ...", width, p->i_tensor + 1, p->n_tensors, p->name, p->src_type,
                p->dst_type, shape);
        s->line_open = true;
        return;
    }
    char a[32], b[32];
    human_size(p->src_bytes, a, sizeof a);
    human_size(p->dst_bytes, b, sizeof b);
    fprintf(stderr, " %s -> %s\n", a, b);
    s->line_open = false;
    s->src_bytes += p->src_bytes;
    s->dst_bytes += p->dst_bytes;
    s->n_elements += (uint64_t)p->ne[0] * (uint64_t)p->ne[1] * (uint64_t)p->ne[2] * (uint64_t)p->ne[3];
}

static int fail(qz_state *s) {
    if (s->line_open) fputc('\n', stderr);
    fprintf(stderr, "hearth quantize: %s\n", hearth_last_error());
    return 1;
}

int cmd_quantize(int argc, char **argv) {
    hearth_quantize_params params = hearth_quantize_default_params();
    const char *pos[3];
    int n_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            quantize_usage(stdout);
            return 0;
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            long l;
            if (i + 1 >= argc) {
                fprintf(stderr, "hearth: %s needs a value; see hearth quantize --help\n", a);
                return 2;
            }
            if (!cli_parse_int(a, argv[++i], 1, 1024, &l)) return 2;
            params.n_threads = (int32_t)l;
        } else if (!strcmp(a, "--allow-requantize")) {
            params.allow_requantize = true;
        } else if (!strcmp(a, "--dry-run")) {
            params.dry_run = true;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "hearth: unknown option '%s'; see hearth quantize --help\n", a);
            return 2;
        } else if (n_pos < 3) {
            pos[n_pos++] = a;
        } else {
            fprintf(stderr, "hearth: quantize takes IN.gguf OUT.gguf TYPE; '%s' is one argument too many\n", a);
            return 2;
        }
    }
    int want = params.dry_run ? 2 : 3;
    if (n_pos != want) {
        fprintf(stderr, params.dry_run
                            ? "hearth: quantize --dry-run needs IN.gguf and TYPE; see hearth quantize --help\n"
                            : "hearth: quantize needs IN.gguf, OUT.gguf and TYPE; see hearth quantize --help\n");
        return 2;
    }
    const char *in = pos[0], *out = params.dry_run ? NULL : pos[1], *type = pos[want - 1];
    cli_log_init(false);
    qz_state s = {.t_start = cli_now()};
    if (hearth_ftype_from_name(type, &params.ftype) != HEARTH_OK) return fail(&s);
    params.progress = on_progress;
    params.progress_user = &s;
    if (hearth_model_quantize(in, out, &params) != HEARTH_OK) return fail(&s);

    char a[32], b[32];
    human_size(s.src_bytes, a, sizeof a);
    human_size(s.dst_bytes, b, sizeof b);
    double bpw = s.n_elements ? 8.0 * (double)s.dst_bytes / (double)s.n_elements : 0.0;
    if (params.dry_run) {
        fprintf(stderr, "hearth quantize: dry run: %s would be %s as %s (%.2f bits per weight)\n", in, b,
                hearth_ftype_name(params.ftype), bpw);
        return 0;
    }
    struct stat st_in, st_out;
    if (stat(in, &st_in) == 0 && stat(out, &st_out) == 0) {
        human_size((uint64_t)st_in.st_size, a, sizeof a);
        human_size((uint64_t)st_out.st_size, b, sizeof b);
    }
    fprintf(stderr, "hearth quantize: wrote %s (%s): %s -> %s, %.2f bits per weight, in %.2f s\n", out,
            hearth_ftype_name(params.ftype), a, b, bpw, cli_now() - s.t_start);
    return 0;
}
