"""The `hearth` command: help, info, generation output, and one-line errors with
a non-zero exit for every kind of bad input (never a crash or a hang)."""
import json
import os
import struct
import sys

import pytest
from conftest import ROOT

RUN_OPTIONS = ["-p", "--prompt", "-f", "--file", "-n", "--n-predict", "--temp", "--top-k", "--top-p",
               "--min-p", "--repeat-penalty", "--seed", "-t", "--threads", "-c", "--ctx-size", "-b",
               "--batch-size", "-ngl", "--n-gpu-layers", "--device", "-fa", "--flash-attn", "-v", "--verbose", "--no-parse-special",
               "--no-mmap", "--mlock"]


def one_line_error(res):
    err = res.stderr.decode().strip()
    assert res.returncode not in (0, -6, -11), (res.returncode, err)  # no success, no abort/segfault
    assert err and "\n" not in err, err
    assert res.stdout == b""
    return err


def test_help_lists_every_option(run_hearth):
    top = run_hearth("--help")
    assert top.returncode == 0 and b"run MODEL" in top.stdout and b"info" in top.stdout
    res = run_hearth("run", "--help")
    assert res.returncode == 0
    text = res.stdout.decode()
    for opt in RUN_OPTIONS:
        assert opt in text, opt


def test_info(run_hearth, model_path):
    res = run_hearth("info")
    assert res.returncode == 0
    out = res.stdout.decode()
    assert out.startswith("hearth 0.1.0") and "backends: cpu" in out and "cpu:" in out
    # the CPU backend's answer (supports_op) for every weight type it has matmul kernels for
    cpu_types = "f32 f16 q4_0 q4_1 q5_0 q5_1 q8_0 q2_K q3_K q4_K q5_K q6_K bf16"
    assert f"weight types: {cpu_types}\n" in out
    res = run_hearth("info", model_path)
    assert res.returncode == 0
    assert "n_layer: 30" in res.stdout.decode() and "llama" in res.stdout.decode()


def greedy_case():
    ref = json.loads((ROOT / "tests/reference/greedy/smollm2.json").read_text())
    eog = {0, 2}  # <|endoftext|>, <|im_end|> in SmolLM2's vocabulary
    return next(c for c in ref["cases"] if not eog & {s["token"] for s in c["steps"]})


def test_greedy_text_equals_llama_cpp(run_hearth, model_path):
    case = greedy_case()
    # -fa off: llama.cpp's arithmetic (the fixture is llama.cpp without flash attention)
    res = run_hearth("run", model_path, case["prompt"], "-n", "64", "--temp", "0", "-fa", "off")
    assert res.returncode == 0, res.stderr.decode()
    assert res.stdout.decode() == case["text"]  # stdout carries only the generated text
    summary = res.stderr.decode()
    assert "load" in summary and "prompt" in summary and "tok/s" in summary


def test_no_mmap_and_mlock_same_text(run_hearth, model_path):
    """--no-mmap reads the model into memory (huge pages), --mlock locks it:
    the same greedy text as the mapped file."""
    case = greedy_case()
    for extra in (["--no-mmap"], ["--no-mmap", "--mlock"], ["--mlock"]):
        res = run_hearth("run", model_path, case["prompt"], "-n", "16", "--temp", "0", "-fa", "off", *extra)
        assert res.returncode == 0, res.stderr.decode()
        assert case["text"].startswith(res.stdout.decode()) and res.stdout, extra


def test_same_seed_same_text(run_hearth, model_path):
    args = ("run", model_path, "Once upon a time, a dragon", "-n", "24", "--temp", "1.0", "--seed", "1234")
    a, b = run_hearth(*args), run_hearth(*args)
    assert a.returncode == 0 and a.stdout == b.stdout and a.stdout
    c = run_hearth(*args[:-1], "99")
    assert c.returncode == 0 and c.stdout != a.stdout


def test_prompt_file_and_stop_at_n_predict(run_hearth, model_path, tmp_path):
    p = tmp_path / "prompt.txt"
    p.write_text("The capital of France is")
    res = run_hearth("run", model_path, "-f", p, "-n", "3", "--temp", "0", "-t", "1", "-c", "64", "-b", "2")
    assert res.returncode == 0, res.stderr.decode()
    assert "generated 3 tokens" in res.stderr.decode()
    assert res.stdout.decode().startswith(" Paris")


def test_n_gpu_layers_without_gpu_says_so_once(run_hearth, model_path):
    res = run_hearth("run", model_path, "Hi", "-n", "2", "-ngl", "-1", env={**os.environ, "HEARTH_FORCE_CPU": "1"})
    assert res.returncode == 0
    gpu_lines = [l for l in res.stderr.decode().splitlines() if "cuda unavailable" in l.lower()]
    assert len(gpu_lines) == 1 and "running on CPU" in gpu_lines[0], gpu_lines


@pytest.mark.parametrize("args,needle", [
    (["--temp", "abc"], "--temp"),
    (["--temp", "-1"], "--temp"),
    (["-n", "x"], "-n"),
    (["--top-p", "2"], "--top-p"),
    (["--min-p", "-0.5"], "--min-p"),
    (["-t", "0"], "-t"),
    (["-c", "-5"], "-c"),
    (["-b", "0"], "-b"),
    (["-ngl", "-2"], "-ngl"),
    (["-fa", "maybe"], "-fa"),
    (["--seed", "-1"], "--seed"),
    (["--bogus"], "unknown option"),
    (["--temp"], "needs a value"),
])
def test_bad_option_values(run_hearth, model_path, args, needle):
    err = one_line_error(run_hearth("run", model_path, "hi", *args))
    assert needle in err


def test_missing_model_argument(run_hearth):
    assert "MODEL" in one_line_error(run_hearth("run"))


def test_unknown_command(run_hearth):
    assert "unknown command" in one_line_error(run_hearth("frobnicate"))


def test_missing_file(run_hearth, tmp_path):
    err = one_line_error(run_hearth("run", tmp_path / "nope.gguf", "hi"))
    assert "No such file" in err or "cannot open" in err


def test_directory(run_hearth, tmp_path):
    assert "directory" in one_line_error(run_hearth("run", tmp_path, "hi"))


def test_not_gguf(run_hearth, tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("hello, this is not a model\n" * 10)
    assert "not a GGUF file" in one_line_error(run_hearth("run", p, "hi"))


@pytest.mark.parametrize("keep", [3, 20, 1000, 5_000_000, 90_000_000])
def test_truncated(run_hearth, model_path, tmp_path, keep):
    p = tmp_path / "cut.gguf"
    with open(model_path, "rb") as f:
        p.write_bytes(f.read(keep))
    err = one_line_error(run_hearth("run", p, "hi"))
    assert "GGUF" in err or "truncated" in err


def gguf_header(n_tensors, n_kv, kvs=b""):
    return b"GGUF" + struct.pack("<IQQ", 3, n_tensors, n_kv) + kvs


def gguf_string(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


@pytest.mark.parametrize("name,data,needle", [
    ("n_tensors overflow", gguf_header(2**63, 0), "tensor"),
    ("n_kv overflow", gguf_header(0, 2**62), "key"),
    ("string length overflow", gguf_header(0, 1, struct.pack("<Q", 2**64 - 2) + b"abc"), ""),
    ("bad alignment", gguf_header(0, 1, gguf_string("general.alignment") + struct.pack("<II", 4, 0)), "alignment"),
    ("array count overflow", gguf_header(0, 1, gguf_string("tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, 2**61)),
     "tokenizer.ggml.tokens"),
])
def test_hostile_gguf(run_hearth, tmp_path, name, data, needle):
    p = tmp_path / "hostile.gguf"
    p.write_bytes(data)
    err = one_line_error(run_hearth("run", p, "hi"))
    assert needle in err, (name, err)


def test_unsupported_architecture(run_hearth, tmp_path):
    gguf = pytest.importorskip("gguf")
    p = tmp_path / "mamba.gguf"
    w = gguf.GGUFWriter(str(p), "mamba9")
    w.add_block_count(1)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    err = one_line_error(run_hearth("run", p, "hi"))
    assert "mamba9" in err
    supported = err.split("supported: ")[1].rstrip(")").split(", ")
    assert {"llama", "qwen2", "qwen3", "gemma3", "phi3"} <= set(supported), err


def arch_model_spec(key):
    """The tiny model named `key`, or else the first of architecture `key`,
    of tests/reference/arch/make_models.py's MODELS, and its write_model."""
    sys.path.insert(0, str(ROOT / "tests" / "reference" / "arch"))
    import make_models
    return make_models.find(key), make_models.write_model


@pytest.mark.parametrize("arch,key", [
    ("llama", "llama.attention.head_count"),
    ("qwen2", "qwen2.block_count"),
    ("qwen3", "qwen3.feed_forward_length"),
    ("gemma3", "gemma3.embedding_length"),
    ("phi3", "phi3.attention.layer_norm_rms_epsilon"),
    ("phi3", "phi3.context_length"),
])
def test_missing_metadata_key(run_hearth, tmp_path, arch, key):
    """A file whose metadata lacks a key its family needs names the key."""
    pytest.importorskip("gguf")
    import numpy as np
    spec, write_model = arch_model_spec(arch)
    p = write_model(dict(spec, name=f"{arch}-without-key", omit_keys=[key]), tmp_path, np.random.default_rng(0))
    err = one_line_error(run_hearth("run", p, "hi"))
    assert f"missing key '{key}'" in err, err


def test_phi3_without_attention_weights(run_hearth, tmp_path):
    """A phi3 file with neither the fused attn_qkv nor attn_q/k/v names the
    tensor it lacks and the architecture."""
    pytest.importorskip("gguf")
    import numpy as np
    spec, write_model = arch_model_spec("phi3")
    assert spec["fused_qkv"]
    # sliding_window 0: no warning that the window is ignored before the error
    p = write_model(dict(spec, name="phi3-no-qkv", sliding_window=0), tmp_path, np.random.default_rng(0))
    data = p.read_bytes()
    assert data.count(b"blk.1.attn_qkv.weight") == 1
    p.write_bytes(data.replace(b"blk.1.attn_qkv.weight", b"blk.1.attn_xyz.weight"))  # same length
    err = one_line_error(run_hearth("run", p, "hi"))
    assert "blk.1.attn_q.weight" in err and "phi3" in err, err


def test_tensor_the_architecture_lacks(run_hearth, tmp_path):
    """A tensor no weight of the architecture takes (here qwen3's QK-norm in a
    qwen2 file) is refused by name, as llama.cpp refuses such files."""
    pytest.importorskip("gguf")
    import numpy as np
    spec, write_model = arch_model_spec("qwen2")
    spec = dict(spec, name="qwen2-with-qk-norm", qk_norm=True)
    p = write_model(spec, tmp_path, np.random.default_rng(0))
    err = one_line_error(run_hearth("run", p, "hi"))
    assert "blk.0.attn_q_norm.weight" in err and "qwen2" in err


def test_prompt_longer_than_context(run_hearth, model_path):
    err = one_line_error(run_hearth("run", model_path, "word " * 200, "-c", "32"))
    assert "context" in err and "-c" in err


def test_empty_prompt_starts_from_bos(run_hearth, model_path):
    res = run_hearth("run", model_path, "", "-n", "4", "--temp", "0")
    assert res.returncode == 0 and "prompt 1 tokens" in res.stderr.decode()


@pytest.mark.parametrize("model,arch,key,tensor", [
    ("gpt2", "gpt2", "gpt2.attention.layer_norm_epsilon", "position_embd.weight"),
    ("starcoder2", "starcoder2", "starcoder2.attention.head_count", "blk.1.ffn_up.bias"),
    ("gptneox", "gptneox", "gptneox.use_parallel_residual", "output_norm.bias"),
    ("falcon-f16", "falcon", "falcon.attention.layer_norm_epsilon", "blk.1.ffn_down.weight"),
    ("falcon-q8_0", "falcon", "falcon.block_count", "blk.1.attn_norm_2.bias"),
    ("mpt-f16", "mpt", "mpt.attention.layer_norm_epsilon", "blk.1.ffn_up.weight"),
    ("mpt-q8_0", "mpt", "mpt.block_count", "blk.1.attn_output.weight"),
    ("bloom-f16", "bloom", "bloom.attention.head_count", "token_embd_norm.bias"),
    ("bloom-q8_0", "bloom", "bloom.feed_forward_length", "blk.1.ffn_norm.bias"),
    ("mixtral-f16", "llama", "llama.expert_used_count", "blk.1.ffn_down_exps.weight"),
    ("mixtral-q8_0", "llama", "llama.expert_used_count", "blk.0.ffn_gate_inp.weight"),
    ("gptj-f16", "gptj", "gptj.attention.layer_norm_epsilon", "output.bias"),
    ("gptj-q8_0", "gptj", "gptj.block_count", "blk.1.ffn_down.bias"),
])
def test_family_incomplete(run_hearth, tmp_path, model, arch, key, tensor):
    """A file of the LayerNorm, falcon, ALiBi, mixture-of-experts and gptj
    families (tests/reference/arch/make_models.py)
    without a metadata key or a tensor its family needs (Falcon-40B's
    attn_norm_2 with its bias, bloom's embedding norm and biases, a Mixtral
    router or expert stack: as llama.cpp asks; gptj's lm_head and fc_out
    biases) names the key or the tensor and the architecture."""
    pytest.importorskip("gguf")
    import numpy as np
    spec, write_model = arch_model_spec(model)
    p = write_model(dict(spec, name=f"{model}-without-key", omit_keys=[key]), tmp_path, np.random.default_rng(0))
    err = one_line_error(run_hearth("run", p, "hi"))
    assert f"missing key '{key}'" in err, err
    p = write_model(dict(spec, name=f"{model}-without-tensor"), tmp_path, np.random.default_rng(0))
    data = p.read_bytes()
    assert data.count(tensor.encode()) == 1
    p.write_bytes(data.replace(tensor.encode(), tensor[:-1].encode() + b"X"))  # same length
    err = one_line_error(run_hearth("run", p, "hi"))
    assert f"'{tensor}' is missing" in err and arch in err, err


def test_moe_expert_counts(run_hearth, tmp_path):
    """A Mixtral-style llama file without expert_count is a dense llama file,
    which lacks ffn_gate; more experts used than there are is refused with
    both counts."""
    pytest.importorskip("gguf")
    import numpy as np
    spec, write_model = arch_model_spec("mixtral-f16")
    p = write_model(dict(spec, name="mixtral-dense", omit_keys=["llama.expert_count"]), tmp_path,
                    np.random.default_rng(0))
    err = one_line_error(run_hearth("run", p, "hi"))
    assert "'blk.0.ffn_gate.weight' is missing" in err, err
    p = write_model(dict(spec, name="mixtral-too-many", n_expert_used=5), tmp_path, np.random.default_rng(0))
    err = one_line_error(run_hearth("run", p, "hi"))
    assert "expert_count = 4 and expert_used_count = 5" in err, err
