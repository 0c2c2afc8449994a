/* Shape helpers shared by every backend (see backend.h). */
#include "backend/backend.h"

#include "gguf/ggml_types.h"

int64_t hl_tensor_nelements(const hl_tensor *t) { return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3]; }

size_t hl_tensor_nbytes(const hl_tensor *t) {
    const ggml_type_info *ti = hl_ggml_type_get(t->type);
    return (size_t)(hl_tensor_nelements(t) / ti->blck_size) * ti->type_size;
}
