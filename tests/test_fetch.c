/* Models by name, the parts that need no network (src/fetch/): name forms
 * and their one-line refusals, quant tags and split names of GGUF files, the
 * choice of a repository's file by quant, the compiled-in catalog (every
 * entry well formed), store paths that cannot leave the store, and
 * hearth_model_resolve/list/remove on a store made here. The downloads are
 * tested against a fake hub in tests/python/test_pull.py. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "fetch/fetch.h"

extern const char hl_catalog_json[];

static void test_names(void) {
    hl_name n;
    CHECK(hl_name_parse("hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:q4_k_m", &n) == HEARTH_OK);
    CHECK(n.kind == HL_NAME_HF && !strcmp(n.repo, "bartowski/Llama-3.2-1B-Instruct-GGUF") &&
          !strcmp(n.quant, "q4_k_m"));
    CHECK(hl_name_parse("huggingface.co/a/b", &n) == HEARTH_OK && n.kind == HL_NAME_HF && !n.quant[0]);
    CHECK(hl_name_parse("ollama:llama3.2:1b", &n) == HEARTH_OK);
    CHECK(n.kind == HL_NAME_OLLAMA && !strcmp(n.ns, "library") && !strcmp(n.model, "llama3.2") && !strcmp(n.tag, "1b"));
    CHECK(hl_name_parse("ollama:me/mine", &n) == HEARTH_OK && !strcmp(n.ns, "me") && !strcmp(n.tag, "latest"));
    CHECK(hl_name_parse("https://example.com/x/m.gguf?download=true", &n) == HEARTH_OK && n.kind == HL_NAME_URL);
    CHECK(hl_name_parse("models/none.gguf", &n) == HEARTH_OK && n.kind == HL_NAME_PATH);
    CHECK(hl_name_parse("llama3.2:1b", &n) == HEARTH_OK && n.kind == HL_NAME_HF && !strcmp(n.catalog, "llama3.2:1b"));
    CHECK(!strcmp(n.quant, "Q4_K_M") && !strcmp(n.file, "Llama-3.2-1B-Instruct-Q4_K_M.gguf") && strlen(n.sha256) == 64);
    CHECK(hl_name_parse("LLAMA3.2:1B:q8_0", &n) == HEARTH_OK && !strcmp(n.quant, "Q8_0") && !n.file[0]);
    static const char *const bad[] = {"nosuchmodel", "hf.co/onlyowner", "hf.co/a/b/c",    "hf.co/../x",
                                      "ollama:",     "ollama:a b",      "hf.co/a/b:Q4 K", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK_MSG(hl_name_parse(bad[i], &n) == HEARTH_ERR_INVALID_ARG, "%s", bad[i]);
        CHECK_MSG(!strchr(hearth_last_error(), '\n') && strlen(hearth_last_error()) > 10, "%s", hearth_last_error());
    }
}

static void test_file_names(void) {
    static const char *const quants[][2] = {
        {"Llama-3.2-1B-Instruct-Q4_K_M.gguf", "Q4_K_M"},
        {"qwen2.5-0.5b-instruct-q4_k_m.gguf", "Q4_K_M"},
        {"SmolLM2-135M-Instruct.Q4_1.gguf", "Q4_1"},
        {"x-IQ4_XS.gguf", "IQ4_XS"},
        {"gemma-3-4b-it-BF16.gguf", "BF16"},
        {"Q8_0/m-Q8_0-00002-of-00003.gguf", "Q8_0"},
        {"model.gguf", ""},
        {"mmproj-model-f16.gguf", "F16"},
        {"qwen2.5-7b-instruct.gguf", ""},
    };
    for (size_t i = 0; i < sizeof quants / sizeof *quants; i++) {
        char q[32];
        hl_quant_of_file(quants[i][0], q, sizeof q);
        CHECK_MSG(!strcmp(q, quants[i][1]), "%s: %s", quants[i][0], q);
    }
    uint32_t no, count;
    size_t prefix;
    CHECK(hl_split_name("a/m-00002-of-00003.gguf", &no, &count, &prefix) && no == 2 && count == 3 && prefix == 3);
    CHECK(!hl_split_name("m-00004-of-00003.gguf", &no, &count, &prefix));
    CHECK(!hl_split_name("m-0000a-of-00003.gguf", &no, &count, &prefix));
    CHECK(!hl_split_name("m.gguf", &no, &count, &prefix));
    char part[64];
    hl_split_part_name("d/m-00001-of-00003.gguf", 3, 3, part, sizeof part);
    CHECK(!strcmp(part, "d/m-00003-of-00003.gguf"));
}

static void test_select(void) {
    const char *files[] = {"README.md",
                           "m-Q8_0.gguf",
                           "m-Q4_K_S.gguf",
                           "m-Q4_K_M.gguf",
                           "m-Q4_0.gguf",
                           "mmproj-m-Q4_K_M.gguf",
                           "big/m-Q6_K-00002-of-00002.gguf",
                           "big/m-Q6_K-00001-of-00002.gguf"};
    const size_t n = sizeof files / sizeof *files;
    CHECK(hl_hf_select(files, n, "") == 3);      /* Q4_K_M first */
    CHECK(hl_hf_select(files, n, "q4_k") == -1); /* a word: not Q4_K_M's prefix */
    CHECK(hl_hf_select(files, n, "Q4_K_S") == 2);
    CHECK(hl_hf_select(files, n, "Q6_K") == 7); /* a split model by its first part */
    CHECK(hl_hf_select(files, 3, "") == 2);     /* neither Q4_K_M nor Q4_0: the first .gguf by name */
    CHECK(hl_hf_select(files + 1, 4, "") == 2);
    CHECK(hl_hf_select(files + 4, 1, "") == 0); /* Q4_0 */
    CHECK(hl_hf_select(files, 1, "") == -1);
}

static void test_catalog(void) {
    cJSON *root = cJSON_Parse(hl_catalog_json);
    const cJSON *e, *models = cJSON_GetObjectItemCaseSensitive(root, "models");
    CHECK(cJSON_GetArraySize(models) >= 16);
    cJSON_ArrayForEach(e, models) {
        hl_name n;
        CHECK_MSG(hl_catalog_lookup(e->string, &n) && n.kind == HL_NAME_HF && strchr(n.repo, '/'), "%s", e->string);
        const cJSON *f;
        cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(e, "files")) {
            const cJSON *sha = cJSON_GetObjectItemCaseSensitive(f, "sha256");
            const cJSON *file = cJSON_GetObjectItemCaseSensitive(f, "file");
            CHECK_MSG(cJSON_IsString(file) && (!sha || (cJSON_IsString(sha) && strlen(sha->valuestring) == 64)), "%s",
                      e->string);
            char q[32];
            hl_quant_of_file(file->valuestring, q, sizeof q);
            CHECK_MSG(!strcmp(q, f->string), "%s: %s carries %s", e->string, file->valuestring, q);
        }
    }
    cJSON_Delete(root);
    char name[64];
    CHECK(hl_catalog_name_of("Qwen/Qwen2.5-0.5B-Instruct-GGUF", "Q4_K_M", name, sizeof name) &&
          !strcmp(name, "qwen2.5:0.5b"));
    CHECK(hl_catalog_name_of("Qwen/Qwen2.5-0.5B-Instruct-GGUF", "Q8_0", name, sizeof name) &&
          !strcmp(name, "qwen2.5:0.5b:Q8_0"));
    CHECK(!hl_catalog_name_of("nobody/Nothing", "Q8_0", name, sizeof name));
}

static void test_store_paths(void) {
    hl_name n;
    char path[512];
    CHECK(hl_name_parse("http://127.0.0.1:8080/a/b.gguf?x=1", &n) == HEARTH_OK);
    CHECK(hl_store_path("/s", &n, NULL, path, sizeof path) == HEARTH_OK &&
          !strcmp(path, "/s/url/http/127.0.0.1:8080/a/b.gguf"));
    static const char *const escapes[] = {"http://h/../x.gguf", "http://h/a//b.gguf", "http://h/", "https://../x"};
    for (size_t i = 0; i < sizeof escapes / sizeof *escapes; i++) {
        CHECK(hl_name_parse(escapes[i], &n) == HEARTH_OK);
        CHECK_MSG(hl_store_path("/s", &n, NULL, path, sizeof path) == HEARTH_ERR_FORMAT, "%s", escapes[i]);
    }
    CHECK(hl_name_parse("hf.co/a/b", &n) == HEARTH_OK);
    CHECK(hl_store_path("/s", &n, "Q4/m.gguf", path, sizeof path) == HEARTH_OK && !strcmp(path, "/s/hf/a/b/Q4/m.gguf"));
    CHECK(hl_store_path("/s", &n, "../../etc/m.gguf", path, sizeof path) == HEARTH_ERR_FORMAT);
    CHECK(hl_store_path("/s", &n, ".hidden.gguf", path, sizeof path) == HEARTH_ERR_FORMAT);
}

/* resolve offline, list and remove over a store made here */
static void test_store(void) {
    char dir[] = "/tmp/hearth-test-fetch-XXXXXX", path[256];
    CHECK(mkdtemp(dir) != NULL);
    hearth_fetch_params p = hearth_fetch_default_params();
    p.models_dir = dir;
    p.offline = true;
    char *out = NULL;
    CHECK(hearth_model_resolve("hf.co/o/r:Q8_0", &p, &out) == HEARTH_ERR_IO && !out);
    CHECK(strstr(hearth_last_error(), "offline") != NULL);
    snprintf(path, sizeof path, "%s/hf/o/r/r-Q8_0.gguf", dir);
    CHECK(hl_mkdirs_for(path) == HEARTH_OK);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite("GGUF", 1, 4, f) == 4 && fclose(f) == 0);
    snprintf(path, sizeof path, "%s/hf/o/r/r-Q8_0.gguf.partial", dir); /* a partial download is no model */
    f = fopen(path, "wb");
    CHECK(f && fclose(f) == 0);
    CHECK(hearth_model_resolve("hf.co/o/r", &p, &out) == HEARTH_OK && out && strstr(out, "/hf/o/r/r-Q8_0.gguf"));
    hearth_free(out);
    hearth_stored_model *list;
    size_t n;
    CHECK(hearth_model_list(&p, &list, &n) == HEARTH_OK && n == 1);
    if (n == 1) CHECK(!strcmp(list[0].name, "hf.co/o/r:Q8_0") && !strcmp(list[0].quant, "Q8_0") && list[0].size == 4);
    hearth_model_list_free(list, n);
    CHECK(hearth_model_remove("models/x.gguf", &p) == HEARTH_ERR_INVALID_ARG);
    CHECK(hearth_model_remove("hf.co/o/r:Q8_0", &p) == HEARTH_OK);
    CHECK(hearth_model_remove("hf.co/o/r:Q8_0", &p) == HEARTH_ERR_IO);
    CHECK(access(path, F_OK) != 0);
    CHECK(hearth_model_list(&p, &list, &n) == HEARTH_OK && n == 0 && !list);
    p.models_dir = "/nonexistent/store";
    CHECK(hearth_model_list(&p, &list, &n) == HEARTH_OK && n == 0);
    CHECK(hearth_model_resolve(NULL, &p, &out) == HEARTH_ERR_INVALID_ARG);
    CHECK(hearth_model_resolve("x.gguf", NULL, NULL) == HEARTH_ERR_INVALID_ARG);
    snprintf(path, sizeof path, "rm -rf %s", dir);
    CHECK(system(path) == 0);
}

int main(void) {
    test_names();
    test_file_names();
    test_select();
    test_catalog();
    test_store_paths();
    test_store();
    return check_report();
}
