/* Model quantization: GGUF in, GGUF out, every tensor converted to the type
 * its mix says (quant_mix.h). The public entry is hearth_model_quantize() in
 * hearth.h; this is the library-internal name for the same operation.
 *
 * It lives in quant/ (the format layer) rather than model/: it is a
 * file-to-file transform built from the GGUF reader and writer and the block
 * formats, and needs from the model only tensor names and a few metadata
 * numbers, not hearth's model loader (which accepts only architectures hearth
 * can run, while any GGUF model can be quantized). */
#ifndef HEARTH_QUANT_QUANTIZE_MODEL_H
#define HEARTH_QUANT_QUANTIZE_MODEL_H

#include "hearth.h"

/* See hearth_model_quantize(); p must be non-NULL. */
hearth_status hl_quantize_model(const char *in_path, const char *out_path, const hearth_quantize_params *p);

#endif
