/* Split models (gguf.h, hl_gguf_attach_parts()): llama.cpp's gguf-split
 * (examples/gguf-split/gguf-split.cpp) writes a model as whole GGUF files
 * PREFIX-00001-of-0000N.gguf ... each carrying split.no (0-based, uint16),
 * split.count (uint16) and split.tensors.count (int32, the tensors of all
 * files); the first file holds the model's metadata. The parts are opened
 * and validated like any GGUF file, then the first file's tensor tables are
 * replaced by tables over all of them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "gguf/gguf_impl.h"

#define SUFFIX_LEN 20 /* "-00001-of-00003.gguf" */

static int cmp_name(const void *a, const void *b) {
    const gguf_tensor *x = *(const gguf_tensor *const *)a, *y = *(const gguf_tensor *const *)b;
    return hl_gguf_str_cmp(x->name, y->name.data, (size_t)y->name.len);
}

/* The path of part `no` (1-based) of `count`, from the first's path. */
static hearth_status part_path(const char *first, uint32_t no, uint32_t count, char *buf, size_t size) {
    const size_t n = strlen(first);
    char want[32];
    snprintf(want, sizeof want, "-00001-of-%05u.gguf", count);
    if (n < SUFFIX_LEN || strcmp(first + n - SUFFIX_LEN, want) != 0)
        return hl_fail(HEARTH_ERR_FORMAT,
                       "GGUF file '%s' is the first of a split model of %u files but is not named PREFIX%s, so its "
                       "other files cannot be found",
                       first, count, want);
    if (snprintf(buf, size, "%.*s-%05u-of-%05u.gguf", (int)(n - SUFFIX_LEN), first, no, count) >= (int)size)
        return hl_fail(HEARTH_ERR_IO, "GGUF file '%s': path too long", first);
    return HEARTH_OK;
}

/* Checks the split keys of part `no` (1-based) of `count`. */
static hearth_status check_part(const gguf_file *part, uint32_t no, uint32_t count) {
    uint32_t pno = UINT32_MAX, pcount = 0;
    HL_TRY(hl_gguf_get_u32(part, "split.no", true, &pno));
    HL_TRY(hl_gguf_get_u32(part, "split.count", true, &pcount));
    if (pno != no - 1 || pcount != count)
        return hl_fail(HEARTH_ERR_FORMAT,
                       "%s: split.no %u of split.count %u, expected %u of %u: the files of the split "
                       "model do not belong together",
                       part->origin, pno, pcount, no - 1, count);
    return HEARTH_OK;
}

/* The tensor tables of f replaced by tables over f's and its parts'. */
static hearth_status merge(gguf_file *f, uint64_t total) {
    gguf_tensor *all = hl_calloc((size_t)total, sizeof *all);
    const gguf_tensor **by_name = hl_calloc((size_t)total, sizeof *by_name);
    if (!all || !by_name) {
        free(all);
        free(by_name);
        return HEARTH_ERR_OUT_OF_MEMORY;
    }
    uint64_t k = 0;
    for (uint32_t p = 0; p <= f->n_parts; p++) {
        const gguf_file *src = p == 0 ? f : f->parts[p - 1];
        memcpy(all + k, src->tensors, (size_t)src->n_tensors * sizeof *all);
        k += src->n_tensors;
    }
    for (uint64_t i = 0; i < total; i++) by_name[i] = &all[i];
    qsort(by_name, (size_t)total, sizeof *by_name, cmp_name);
    free(f->tensors);
    free(f->tensor_by_name);
    f->tensors = all;
    f->tensor_by_name = by_name;
    f->n_tensors = total;
    for (uint64_t i = 1; i < total; i++)
        if (cmp_name(&by_name[i - 1], &by_name[i]) == 0)
            return hl_fail(HEARTH_ERR_FORMAT, "%s: tensor '%.*s' is in two files of the split model", f->origin,
                           (int)(by_name[i]->name.len > 64 ? 64 : by_name[i]->name.len), by_name[i]->name.data);
    return HEARTH_OK;
}

hearth_status hl_gguf_attach_parts(gguf_file *f, const char *path) {
    uint32_t count = 1, no = 0;
    int32_t n_tensors = -1;
    HL_TRY(hl_gguf_get_u32(f, "split.count", false, &count));
    if (count <= 1) return HEARTH_OK;
    HL_TRY(hl_gguf_get_u32(f, "split.no", true, &no));
    HL_TRY(hl_gguf_get_i32(f, "split.tensors.count", true, &n_tensors));
    if (no != 0)
        return hl_fail(HEARTH_ERR_FORMAT,
                       "%s is file %u of a split model of %u: load the first file (-00001-of-%05u.gguf)", f->origin,
                       no + 1, count, count);
    if (count > 99999) return hl_fail(HEARTH_ERR_FORMAT, "%s: split.count %u is over 99999", f->origin, count);
    if (!(f->parts = hl_calloc(count - 1, sizeof *f->parts))) return HEARTH_ERR_OUT_OF_MEMORY;
    uint64_t total = f->n_tensors;
    for (uint32_t k = 2; k <= count; k++) {
        char part[4096];
        HL_TRY(part_path(path, k, count, part, sizeof part));
        HL_TRY(hl_gguf_open(part, &f->parts[f->n_parts]));
        gguf_file *opened = f->parts[f->n_parts++]; /* closed with f from here on */
        HL_TRY(check_part(opened, k, count));
        total += opened->n_tensors;
    }
    if (n_tensors < 0 || total != (uint64_t)n_tensors)
        return hl_fail(HEARTH_ERR_FORMAT, "%s: the %u files hold %llu tensors, split.tensors.count says %d", f->origin,
                       count, (unsigned long long)total, (int)n_tensors);
    return merge(f, total);
}
