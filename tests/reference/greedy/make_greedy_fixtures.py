#!/usr/bin/env python3
"""Reference greedy continuations from llama.cpp (through llama-cpp-python) for
tests/test_greedy_reference.c (SmolLM2, the default model) and
tests/test_greedy_models.c (Gemma 3 270M; Qwen2.5-Coder 0.5B, a real qwen2)
and tests/test_greedy_quantized.c (the default model requantized by llama.cpp's
own quantizer to Q4_0, Q8_0 and Q4_K_M: presets smollm2-q4_0 ...; the C test
requantizes with hearth, so it checks hearth's quantizer and the kernels of
those types together) and tests/test_kv_cache_types.c (the default model
with a Q8_0 K and V cache, llama.cpp's -ctk q8_0 -ctv q8_0, with its flash
attention, which a quantized V cache requires: preset smollm2-kv-q8_0).

For each prompt: tokenize it with llama.cpp (add_bos as the model says, special
tokens parsed), evaluate it, then take the argmax token 64 times (never stopping
at end-of-generation tokens), feeding each token back. At every step we store
llama.cpp's argmax and its TOP_K largest logits (id, value), which the C test
compares with hearth's logits for the same sequence.

Usage: python3 tests/reference/greedy/make_greedy_fixtures.py [PRESET] [MODEL] [OUT]
(presets: smollm2, gemma3, qwen2, smollm2-q4_0, smollm2-q8_0, smollm2-q4_k_m,
smollm2-kv-q8_0)
(defaults: smollm2; the preset's model under models/ and its JSON in this folder)
"""
import json
import sys
import tempfile
from pathlib import Path

import llama_cpp
import numpy as np
from llama_cpp import Llama, __version__ as llama_cpp_version

N_PREDICT = 64
TOP_K = 32
N_CTX = 512

PROMPTS = [
    "The capital of France is",
    "<|im_start|>user\nWhat is the boiling point of water in Celsius?<|im_end|>\n<|im_start|>assistant\n",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "Once upon a time, in a small village by the sea,",
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nList three primary colors.<|im_end|>\n<|im_start|>assistant\n",
    "1, 2, 3, 5, 8, 13,",
    "Photosynthesis is the process by which plants",
    "<|im_start|>user\nTranslate 'good morning' into French and Spanish.<|im_end|>\n<|im_start|>assistant\n",
    "The three laws of thermodynamics state that",
    "SELECT name, age FROM users WHERE",
]

# Gemma's chat turns are <start_of_turn>role ... <end_of_turn>; its vocabulary
# adds <bos> (tokenizer.ggml.add_bos_token), which Gemma needs.
GEMMA3_PROMPTS = [
    "The capital of France is",
    "<start_of_turn>user\nWhat is the boiling point of water in Celsius?<end_of_turn>\n<start_of_turn>model\n",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "Once upon a time, in a small village by the sea,",
    "<start_of_turn>user\nList three primary colors.<end_of_turn>\n<start_of_turn>model\n",
    "Photosynthesis is the process by which plants",
    "<start_of_turn>user\nTranslate 'good morning' into French and Spanish.<end_of_turn>\n<start_of_turn>model\n",
    "Les trois lois de la thermodynamique sont",
]

# Four of them (Qwen2.5 speaks ChatML like SmolLM2) keep the longer tests short.
SHORT_PROMPTS = [PROMPTS[0], PROMPTS[1], PROMPTS[2], PROMPTS[9]]

# llama.cpp's ftype numbers (llama.h) for the requantized presets.
REQUANTIZED = {"smollm2-q4_0": 2, "smollm2-q8_0": 7, "smollm2-q4_k_m": 15}

# KV cache types (ggml type ids, llama_context_params.type_k/type_v) of the
# presets that set them; a quantized V cache needs llama.cpp's flash attention.
GGML_TYPE_NAMES = {1: "f16", 2: "q4_0", 8: "q8_0", 30: "bf16"}
KV_TYPES = {"smollm2-kv-q8_0": (8, 8)}

PRESETS = {
    "smollm2": ("models/SmolLM2-135M-Instruct.Q4_1.gguf", "smollm2.json", PROMPTS),
    "gemma3": ("models/gemma-3-270m-q4_k_m.gguf", "gemma3.json", GEMMA3_PROMPTS),
    "qwen2": ("models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf", "qwen2.json", SHORT_PROMPTS),
    **{name: ("models/SmolLM2-135M-Instruct.Q4_1.gguf", name + ".json", SHORT_PROMPTS)
       for name in [*REQUANTIZED, *KV_TYPES]},
}


def requantize(model, ftype, out_dir):
    """The model converted by llama.cpp's quantizer (allow_requantize: the
    default model is Q4_1)."""
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = ftype
    params.allow_requantize = True
    params.nthread = 2
    out = str(Path(out_dir) / f"{Path(model).stem}.requantized-ftype{ftype}.gguf")
    if llama_cpp.llama_model_quantize(model.encode(), out.encode(), params) != 0:
        sys.exit(f"llama.cpp could not quantize {model}")
    return out


def main():
    root = Path(__file__).resolve().parents[3]
    preset = sys.argv[1] if len(sys.argv) > 1 else "smollm2"
    default_model, default_out, prompts = PRESETS[preset]
    model = sys.argv[2] if len(sys.argv) > 2 else str(root / default_model)
    out = sys.argv[3] if len(sys.argv) > 3 else str(Path(__file__).with_name(default_out))
    with tempfile.TemporaryDirectory() as tmp:
        if preset in REQUANTIZED:
            model = requantize(model, REQUANTIZED[preset], tmp)
        write_fixture(model, out, prompts, *KV_TYPES.get(preset, (1, 1)))


def write_fixture(model, out, prompts, type_k, type_v):
    flash_attn = (type_k, type_v) != (1, 1)
    llm = Llama(model_path=model, n_ctx=N_CTX, n_batch=N_CTX, n_threads=2, logits_all=False, flash_attn=flash_attn,
                type_k=type_k, type_v=type_v, verbose=False)
    cases = []
    for prompt in prompts:
        llm.reset()
        prompt_ids = llm.tokenize(prompt.encode(), add_bos=True, special=True)
        llm.eval(prompt_ids)
        steps = []
        for _ in range(N_PREDICT):
            # logits of the last evaluated token, straight from llama.cpp
            ptr = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
            logits = np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).copy()
            top = np.argsort(-logits, kind="stable")[:TOP_K]
            token = int(top[0])
            steps.append({"token": token,
                          "top_ids": [int(i) for i in top],
                          "top_logits": [round(float(logits[i]), 5) for i in top]})
            llm.eval([token])
        cases.append({"prompt": prompt, "prompt_ids": prompt_ids, "steps": steps,
                      "text": llm.detokenize([s["token"] for s in steps]).decode("utf-8", "replace")})
    ref = {"generator": f"llama-cpp-python {llama_cpp_version}, {Path(__file__).name}",
           "model": Path(model).name, "n_predict": N_PREDICT, "top_k": TOP_K, "n_ctx": N_CTX, "cases": cases}
    if flash_attn:  # the fixtures without these keys are f16 caches without flash attention
        ref.update(type_k=GGML_TYPE_NAMES[type_k], type_v=GGML_TYPE_NAMES[type_v], flash_attn=True)
    Path(out).write_text(json.dumps(ref, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(f"wrote {out}: {len(cases)} prompts x {N_PREDICT} tokens")


if __name__ == "__main__":
    main()
