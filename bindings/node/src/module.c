/* The addon's entry: the functions index.js calls, as one table. These
 * are internal (index.js wraps them in the Model class and checks nothing
 * twice); the public API is index.js's, documented in index.d.ts. */
#include "addon.h"

static const struct {
    const char *name;
    napi_callback fn;
} exports_table[] = {
    {"setErrorClass", hn_set_error_class},
    {"modelLoad", hn_model_load},
    {"modelLoadAsync", hn_model_load_async},
    {"modelInfo", hn_model_info},
    {"modelMetadata", hn_model_metadata},
    {"modelStats", hn_model_stats},
    {"modelDispose", hn_model_dispose},
    {"tokenize", hn_tokenize},
    {"embed", hn_embed},
    {"rerank", hn_rerank},
    {"detokenize", hn_detokenize},
    {"submit", hn_submit},
    {"take", hn_take},
    {"cancel", hn_cancel},
    {"gpuDevices", hn_gpu_devices},
    {"supportsGpuOffload", hn_supports_gpu_offload},
    {"systemInfo", hn_system_info},
    {"jsonSchemaToGrammar", hn_json_schema_to_grammar},
};

NAPI_MODULE_INIT() {
    for (size_t i = 0; i < sizeof exports_table / sizeof exports_table[0]; i++) {
        napi_value fn;
        HN_CALL(napi_create_function(env, exports_table[i].name, NAPI_AUTO_LENGTH, exports_table[i].fn, NULL, &fn));
        HN_CALL(napi_set_named_property(env, exports, exports_table[i].name, fn));
    }
    return exports;
}
