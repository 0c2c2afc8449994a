/* The OpenCL program of a device: the kernel sources (kernels/NAME.cl, embedded
 * at build time by cmake/embed.cmake) compiled at the first use on the
 * device and cached on disk, since compilers such as PoCL's take seconds.
 * The cache file is named by a hash of everything the binary depends on
 * (platform, device, driver version, build options, sources) and lives in
 * $XDG_CACHE_HOME/hearth/opencl (default ~/.cache/hearth/opencl); a binary
 * the driver refuses is rebuilt from source and rewritten. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/opencl/common.h"
#include "base/log.h"
#include "gguf/ggml_types.h"
#include "quant/quant.h"
#include "quant/quant_k.h"

/* dequant.cl reads blocks at these structs' offsets */
_Static_assert(sizeof(block_q4_0) == 18 && sizeof(block_q4_1) == 20 && sizeof(block_q5_0) == 22 &&
                   sizeof(block_q5_1) == 24 && sizeof(block_q8_0) == 34,
               "32-element block layouts of dequant.cl");
_Static_assert(sizeof(block_q2_K) == 84 && sizeof(block_q3_K) == 110 && sizeof(block_q4_K) == 144 &&
                   sizeof(block_q5_K) == 176 && sizeof(block_q6_K) == 210,
               "K-quant block layouts of dequant.cl");

/* generated from kernels/NAME.cl (CMakeLists.txt); dequant first: the others use it */
extern const char hl_ocl_src_dequant[], hl_ocl_src_matmul[], hl_ocl_src_rows[], hl_ocl_src_norm_rope[],
    hl_ocl_src_attention[], hl_ocl_src_elementwise[], hl_ocl_src_moe[];

#define N_SOURCES 7

static const char *const sources[N_SOURCES] = {hl_ocl_src_dequant,   hl_ocl_src_matmul,    hl_ocl_src_rows,
                                               hl_ocl_src_norm_rope, hl_ocl_src_attention, hl_ocl_src_elementwise,
                                               hl_ocl_src_moe};

/* -cl-std, the matmul's work-items per row and ggml's type ids, the T_* of dequant.cl. */
static void build_options(const hl_ocl_dev *d, char *buf, size_t size) {
    snprintf(buf, size,
             "-cl-std=CL1.2 -DMV_LANES=%d -DT_F32=%d -DT_F16=%d -DT_BF16=%d -DT_Q4_0=%d -DT_Q4_1=%d -DT_Q5_0=%d "
             "-DT_Q5_1=%d -DT_Q8_0=%d -DT_Q2_K=%d -DT_Q3_K=%d -DT_Q4_K=%d -DT_Q5_K=%d -DT_Q6_K=%d",
             hl_ocl_mv_lanes(d), GGML_TYPE_F32, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q4_0, GGML_TYPE_Q4_1,
             GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q8_0, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q4_K,
             GGML_TYPE_Q5_K, GGML_TYPE_Q6_K);
}

/* 64-bit FNV-1a (Fowler, Noll, Vo; http://www.isthe.com/chongo/tech/comp/fnv/) over s, NUL included,
 * so that "ab" + "c" and "a" + "bc" differ. */
static uint64_t fnv1a(uint64_t h, const char *s) {
    do h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    while (*s++);
    return h;
}

/* The cache file of this device's program, or "" when no directory can be made. */
static void cache_path(const hl_ocl_dev *d, const char *options, char *path, size_t size) {
    uint64_t h = 0xcbf29ce484222325ull;
    h = fnv1a(fnv1a(fnv1a(h, d->name), d->version), options);
    for (int i = 0; i < N_SOURCES; i++) h = fnv1a(h, sources[i]);
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char dir[512];
    int len = xdg && *xdg     ? snprintf(dir, sizeof dir, "%.400s", xdg)
              : home && *home ? snprintf(dir, sizeof dir, "%.400s/.cache", home)
                              : 0;
    *path = '\0';
    if (len <= 0) return;
    static const char *const parts[] = {"", "/hearth", "/opencl"};
    for (int i = 0; i < 3; i++) {
        len += snprintf(dir + len, sizeof dir - (size_t)len, "%s", parts[i]);
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) return;
    }
    snprintf(path, size, "%s/%016llx.bin", dir, (unsigned long long)h);
}

/* The program from a cached binary, or NULL (no file, or refused). */
static cl_program from_cache(hl_ocl_dev *d, const char *path, const char *options) {
    FILE *f = *path ? fopen(path, "rb") : NULL;
    if (!f) return NULL;
    unsigned char *bin = NULL;
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (size > 0 && fseek(f, 0, SEEK_SET) == 0 && (bin = malloc((size_t)size)) &&
        fread(bin, 1, (size_t)size, f) != (size_t)size)
        size = -1;
    fclose(f);
    cl_program p = NULL;
    if (size > 0 && bin) {
        const unsigned char *bins[1] = {bin};
        const size_t sizes[1] = {(size_t)size};
        cl_int e, status;
        p = clCreateProgramWithBinary(d->ctx, 1, &d->id, sizes, bins, &status, &e);
        if (e == CL_SUCCESS && status == CL_SUCCESS &&
            clBuildProgram(p, 1, &d->id, options, NULL, NULL) == CL_SUCCESS) {
            free(bin);
            return p;
        }
        if (p) clReleaseProgram(p);
        HL_DEBUG("%s: the cached OpenCL program %s was refused; rebuilding", d->name, path);
    }
    free(bin);
    return NULL;
}

/* Writes the built program's binary to path (through a temporary file, so a
 * reader never sees half of it); failures only cost a rebuild next time. */
static void to_cache(const hl_ocl_dev *d, cl_program p, const char *path) {
    size_t size = 0;
    if (!*path || clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, NULL) != CL_SUCCESS || !size) return;
    unsigned char *bin = malloc(size);
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    FILE *f = bin && clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) == CL_SUCCESS ? fopen(tmp, "wb")
                                                                                                    : NULL;
    const bool ok = f && fwrite(bin, 1, size, f) == size;
    if (f && fclose(f) == 0 && ok && rename(tmp, path) == 0) HL_DEBUG("%s: OpenCL program cached in %s", d->name, path);
    else if (f) remove(tmp);
    free(bin);
}

/* The compiler's log in one line, its first 300 characters. */
static void build_log(const hl_ocl_dev *d, cl_program p, char *buf, size_t size) {
    *buf = '\0';
    clGetProgramBuildInfo(p, d->id, CL_PROGRAM_BUILD_LOG, size, buf, NULL);
    buf[size - 1] = '\0';
    for (char *c = buf; *c; c++)
        if (*c == '\n' || *c == '\r') *c = ' ';
}

hearth_status hl_ocl_program(hl_ocl_dev *d) {
    if (d->program) return HEARTH_OK;
    char options[512], path[640];
    build_options(d, options, sizeof options);
    cache_path(d, options, path, sizeof path);
    d->program = from_cache(d, path, options);
    if (d->program) return HEARTH_OK;
    cl_int e;
    cl_program p = clCreateProgramWithSource(d->ctx, N_SOURCES, (const char **)sources, NULL, &e);
    CL_TRY(e);
    HL_INFO("%s: compiling the OpenCL kernels (once; cached in %s)", d->name,
            *path ? path : "nowhere: no cache directory");
    e = clBuildProgram(p, 1, &d->id, options, NULL, NULL);
    if (e != CL_SUCCESS) {
        char log[300];
        build_log(d, p, log, sizeof log);
        clReleaseProgram(p);
        return hl_fail(HEARTH_ERR_DEVICE, "%s: the OpenCL kernels do not build (%s): %s", d->name, hl_ocl_error_name(e),
                       log);
    }
    to_cache(d, p, path);
    d->program = p;
    return HEARTH_OK;
}
