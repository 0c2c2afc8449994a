"""`hearth quantize`: mixes, output files and bad input.

References are independent of hearth: gguf-py reads every output (metadata,
tensor types) and quantizes the inputs itself for the legacy and float types
(gguf.quants.quantize: the bytes must be equal); the mix rules are checked
against tensor types llama.cpp's own quantizer chose (tables below, recorded
from llama-cpp-python 0.3.36's llama_model_quantize; with llama-cpp-python
installed, the tests also quantize with llama.cpp live, compare byte for byte,
and compare greedy text on the outputs).

Two source models, both F32: tests/reference/tiny/tiny-f32.gguf (32 wide, 2
layers, tied embeddings: every K type falls back to a 32-block type) and a
"wide" model written here with make_tiny_models.write_model (256 wide, 16
layers, GQA 4, untied output, n_ff 320 so ffn_down falls back), which
exercises use_more_bits, the first-layers rules and the K types themselves.

A mix whose types this build cannot write yet (Q5_0, Q5_1 and the K types as
they land in src/quant/) makes hearth fail cleanly; those tests skip with the
reason instead of failing, and run once the type is there.
"""
import ctypes
import os
import re
import struct
import subprocess
import sys

import numpy as np
import pytest
from conftest import ROOT

gguf = pytest.importorskip("gguf")

TINY_DIR = ROOT / "tests" / "reference" / "tiny"
TINY = TINY_DIR / "tiny-f32.gguf"

# llama.cpp's LLAMA_FTYPE_* (general.file_type)
FTYPE = {"Q4_0": 2, "Q4_1": 3, "Q5_0": 8, "Q5_1": 9, "Q8_0": 7, "Q2_K": 10, "Q3_K_M": 12, "Q4_K_S": 14,
         "Q4_K_M": 15, "Q5_K_S": 16, "Q5_K_M": 17, "Q6_K": 18, "F16": 1, "BF16": 32}
MIXES = list(FTYPE)

# Tensor types llama.cpp's quantizer chose for the 2-D tensors. Each mix: (type
# of the tensors not listed, {kind: spec}) where kind is "token_embd",
# "output" or a per-layer tensor ("attn_v" for blk.N.attn_v.weight) and spec is
# "TYPE@LAYERS ... TYPE": the listed layers get those types, the others the
# last one. 1-D tensors (norms) stay F32.
TINY_TYPES = {
    "Q4_0": ("q4_0", {"token_embd": "q8_0"}),  # tied: Q6_K, 32 columns -> fallback Q8_0
    "Q4_1": ("q4_1", {"token_embd": "q8_0"}),
    "Q5_0": ("q5_0", {"token_embd": "q8_0"}),
    "Q5_1": ("q5_1", {"token_embd": "q8_0"}),
    "Q8_0": ("q8_0", {}),
    "Q2_K": ("q4_0", {"token_embd": "q8_0"}),
    "Q3_K_M": ("q4_0", {"token_embd": "q8_0", "attn_output": "q5_0", "attn_v": "q5_1", "ffn_down": "q5_0"}),
    "Q4_K_S": ("q5_0", {"token_embd": "q8_0", "attn_v": "q5_1"}),
    "Q4_K_M": ("q5_0", {"token_embd": "q8_0", "attn_v": "q8_0@1 q5_0", "ffn_down": "q8_0@1 q5_0"}),
    "Q5_K_S": ("q5_1", {"token_embd": "q8_0"}),
    "Q5_K_M": ("q5_1", {"token_embd": "q8_0", "attn_v": "q8_0@1 q5_1", "ffn_down": "q8_0@1 q5_1"}),
    "Q6_K": ("q8_0", {}),
    "F16": ("f16", {}),
    "BF16": ("bf16", {}),
}
MORE_BITS_16 = "0,1,4,7,10,13,14,15"  # use_more_bits(i, 16)
WIDE_TYPES = {
    "Q4_0": ("q4_0", {"output": "q6_K"}),
    "Q4_1": ("q4_1", {"output": "q6_K"}),
    "Q5_0": ("q5_0", {"output": "q6_K"}),
    "Q5_1": ("q5_1", {"output": "q6_K"}),
    "Q8_0": ("q8_0", {}),
    "Q2_K": ("q2_K", {"output": "q6_K", "attn_output": "q3_K", "attn_v": "q4_K", "ffn_down": "q4_0"}),
    "Q3_K_M": ("q3_K", {"output": "q6_K", "attn_output": "q4_K", "attn_v": "q5_K@0,1 q4_K",
                        "ffn_down": "q5_1@0 q5_0"}),
    "Q4_K_S": ("q4_K", {"output": "q6_K", "attn_v": "q5_K@0,1,2,3 q4_K", "ffn_down": "q5_1@0,1 q5_0"}),
    "Q4_K_M": ("q4_K", {"output": "q6_K", "attn_v": f"q6_K@{MORE_BITS_16} q4_K",
                        "ffn_down": f"q8_0@{MORE_BITS_16} q5_0"}),
    "Q5_K_S": ("q5_K", {"output": "q6_K", "ffn_down": "q5_1"}),
    "Q5_K_M": ("q5_K", {"output": "q6_K", "attn_v": f"q6_K@{MORE_BITS_16} q5_K",
                        "ffn_down": f"q8_0@{MORE_BITS_16} q5_1"}),
    "Q6_K": ("q6_K", {"ffn_down": "q8_0"}),
    "F16": ("f16", {}),
    "BF16": ("bf16", {}),
}
WIDE_SPEC = dict(name="wide-f32", type="F32", n_embd=256, n_head=4, n_head_kv=1, n_ff=320, n_layer=16,
                 tied=False, pre="gpt-2")

# Relative RMS error of a tensor's dequantized values against the F32 source,
# at most (about 1.3 x the worst llama.cpp's own quantization gives on the
# wide model's random weights).
MAX_REL_ERROR = {"q2_K": 0.40, "q3_K": 0.20, "q4_K": 0.10, "q5_K": 0.05, "q6_K": 0.025, "q4_0": 0.11,
                 "q4_1": 0.10, "q5_0": 0.055, "q5_1": 0.05, "q8_0": 0.008, "f16": 0.001, "bf16": 0.005,
                 "f32": 0.0}
# types gguf-py can quantize: their bytes must equal hearth's
GGUF_PY_QUANTIZES = {"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "f16", "bf16"}


def type_name(qtype):
    """ggml's type name ("q4_K") for a gguf-py GGMLQuantizationType."""
    name = qtype.name.lower()
    return name[:-2] + "_K" if name.endswith("_k") else name


def expected_types(table, mix, reader):
    base, kinds = table[mix]
    out = {}
    for t in reader.tensors:
        if len(t.shape) < 2:
            out[t.name] = "f32"
            continue
        m = re.fullmatch(r"blk\.(\d+)\.(\w+)\.weight", t.name)
        kind = m.group(2) if m else t.name.removesuffix(".weight")
        spec = kinds.get(kind, base).split()
        out[t.name] = spec[-1]
        for part in spec[:-1]:
            typ, layers = part.split("@")
            if m and int(m.group(1)) in {int(x) for x in layers.split(",")}:
                out[t.name] = typ
    return out


def output_types(path):
    return {t.name: type_name(t.tensor_type) for t in gguf.GGUFReader(str(path)).tensors}


def field_bytes(field):
    return b"".join(p.tobytes() for p in field.parts)


def skip_if_not_writable(res, mix):
    err = res.stderr.decode()
    if res.returncode != 0 and "cannot write yet" in err:
        pytest.skip(f"{mix}: {err.strip().splitlines()[-1]}")


def one_line_error(res):
    err = res.stderr.decode().strip()
    assert res.returncode not in (0, -6, -11), (res.returncode, err)  # no success, no abort/segfault
    assert err and "\n" not in err, err
    assert res.stdout == b""
    return err


def files_in(folder):
    return sorted(p.name for p in folder.iterdir())


@pytest.fixture(scope="session")
def wide_model(tmp_path_factory):
    sys.path.insert(0, str(TINY_DIR))
    try:
        from make_tiny_models import write_model
    finally:
        sys.path.pop(0)
    return write_model(WIDE_SPEC, tmp_path_factory.mktemp("wide"), np.random.default_rng(20240611))


@pytest.fixture(scope="session")
def quantized(hearth_bin, tmp_path_factory):
    """quantized(src, mix) -> path of hearth's output (made once per session),
    or a skip when this build cannot write the mix yet."""
    cache, folder = {}, tmp_path_factory.mktemp("quantized")

    def get(src, mix):
        key = (str(src), mix)
        if key not in cache:
            out = folder / f"{src.stem}-{mix}.gguf"
            res = subprocess.run([str(hearth_bin), "quantize", src, out, mix], capture_output=True, timeout=120)
            cache[key] = (out, res)
        out, res = cache[key]
        skip_if_not_writable(res, mix)
        assert res.returncode == 0, res.stderr.decode()
        return out
    return get


def dry_run_types(run_hearth, src, mix):
    res = run_hearth("quantize", "--dry-run", src, mix)
    assert res.returncode == 0, res.stderr.decode()
    return {m.group(1): m.group(2) for m in re.finditer(r"\] (\S+)\s+\S+ -> (\S+) ", res.stderr.decode())}


# ------------------------------------------------------------------ mixes --

@pytest.mark.parametrize("mix", MIXES)
def test_tiny_output(quantized, mix):
    """Metadata carried over, general.file_type set, tensor types as llama.cpp
    chose them, and the bytes gguf-py's quantizer gives for each tensor."""
    out = quantized(TINY, mix)
    src, dst = gguf.GGUFReader(str(TINY)), gguf.GGUFReader(str(out))
    skip = {"general.file_type", "general.quantization_version", "GGUF.kv_count"}
    src_fields = [k for k in src.fields if k not in skip]
    assert [k for k in dst.fields if k not in skip] == src_fields  # same keys, same order
    for k in src_fields:
        assert dst.fields[k].types == src.fields[k].types, k
        assert field_bytes(dst.fields[k]) == field_bytes(src.fields[k]), k
    assert dst.fields["general.file_type"].contents() == FTYPE[mix]
    assert dst.fields["general.quantization_version"].contents() == 2
    assert output_types(out) == expected_types(TINY_TYPES, mix, src)

    src_tensors = {t.name: t for t in src.tensors}
    for t in dst.tensors:
        ref = np.array(src_tensors[t.name].data, dtype=np.float32)
        typ = type_name(t.tensor_type)
        if typ == "f32":
            assert t.data.tobytes() == ref.tobytes(), t.name
            continue
        if typ in GGUF_PY_QUANTIZES:
            want = gguf.quants.quantize(ref, t.tensor_type)
            assert t.data.tobytes() == want.tobytes(), (t.name, typ)
            assert np.array_equal(gguf.quants.dequantize(t.data, t.tensor_type),
                                  gguf.quants.dequantize(want, t.tensor_type)), t.name
        got = gguf.quants.dequantize(t.data, t.tensor_type).reshape(ref.shape)
        err = np.sqrt(np.mean((got - ref) ** 2)) / np.sqrt(np.mean(ref ** 2))
        assert err <= MAX_REL_ERROR[typ], (t.name, typ, err)


@pytest.mark.parametrize("mix", MIXES)
def test_tiny_output_runs(quantized, run_hearth, mix):
    out = quantized(TINY, mix)
    res = run_hearth("run", out, "hello world", "-n", "8", "--temp", "0")
    if res.returncode != 0 and b"cannot compute yet" in res.stderr:
        pytest.skip(res.stderr.decode().strip())
    assert res.returncode == 0, res.stderr.decode()
    assert "generated" in res.stderr.decode()


@pytest.mark.parametrize("mix", MIXES)
def test_mix_rules_wide(run_hearth, wide_model, mix):
    """The types the rules choose (--dry-run writes nothing, so this runs
    before the K types land) are llama.cpp's: use_more_bits layers, GQA,
    output Q6_K, ffn_down's fallbacks."""
    plan = dry_run_types(run_hearth, wide_model, mix)
    assert plan == expected_types(WIDE_TYPES, mix, gguf.GGUFReader(str(wide_model)))


def test_dry_run_writes_nothing(run_hearth, tmp_path):
    res = run_hearth("quantize", "--dry-run", TINY, "Q4_K_M")
    assert res.returncode == 0 and "dry run" in res.stderr.decode()
    assert len(re.findall(r"^\[\s*\d+/20\]", res.stderr.decode(), re.M)) == 20


@pytest.mark.parametrize("mix", ["Q5_0", "Q5_1", "Q2_K", "Q3_K_M", "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K"])
def test_wide_output(quantized, run_hearth, wide_model, mix):
    """K types for real: the output's types are the plan's and every tensor
    dequantizes close to the F32 source; gguf-py's bytes where it can
    quantize the type."""
    out = quantized(wide_model, mix)
    src = {t.name: np.array(t.data, dtype=np.float32) for t in gguf.GGUFReader(str(wide_model)).tensors}
    assert output_types(out) == expected_types(WIDE_TYPES, mix, gguf.GGUFReader(str(wide_model)))
    for t in gguf.GGUFReader(str(out)).tensors:
        typ = type_name(t.tensor_type)
        if typ in GGUF_PY_QUANTIZES:
            assert t.data.tobytes() == gguf.quants.quantize(src[t.name], t.tensor_type).tobytes(), t.name
        got = gguf.quants.dequantize(t.data, t.tensor_type).reshape(src[t.name].shape)
        err = np.sqrt(np.mean((got - src[t.name]) ** 2)) / np.sqrt(np.mean(src[t.name] ** 2))
        assert err <= MAX_REL_ERROR[typ], (t.name, typ, err)
    res = run_hearth("run", out, "hello world", "-n", "4", "--temp", "0")
    if res.returncode != 0 and b"cannot compute yet" in res.stderr:
        return  # writable but not yet runnable: the file checks above stand
    assert res.returncode == 0, res.stderr.decode()


def test_threads_give_identical_files(run_hearth, wide_model, tmp_path):
    a, b = tmp_path / "t1.gguf", tmp_path / "t5.gguf"
    assert run_hearth("quantize", wide_model, a, "Q8_0", "-t", "1").returncode == 0
    assert run_hearth("quantize", wide_model, b, "Q8_0", "--threads", "5").returncode == 0
    assert a.read_bytes() == b.read_bytes()


def test_progress_and_summary(run_hearth, tmp_path):
    res = run_hearth("quantize", TINY, tmp_path / "o.gguf", "q4_0")  # type names are case-insensitive
    assert res.returncode == 0 and res.stdout == b""
    lines = res.stderr.decode().splitlines()
    assert len(lines) == 21
    assert re.match(r"\[ 3/20\] blk\.0\.attn_q\.weight +f32 -> q4_0 +32 x 32 \.\.\. 4\.0 KiB -> 576 B$", lines[2])
    assert re.match(r"hearth quantize: wrote .*o\.gguf \(Q4_0\): 140\.\d KiB -> \d+\.\d KiB, .* bits per weight, "
                    r"in \d+\.\d\d s$", lines[-1])


def test_every_metadata_type_and_alignment(run_hearth, tmp_path):
    """The writer copies every value type (nested and string arrays
    included) so that gguf-py reads the same fields, and keeps
    general.alignment."""
    src, out = tmp_path / "every.gguf", tmp_path / "every-q8.gguf"
    w = gguf.GGUFWriter(str(src), "llama")
    V = gguf.GGUFValueType
    for key, val, vtype in [("t.u8", 200, V.UINT8), ("t.i8", -100, V.INT8), ("t.u16", 60000, V.UINT16),
                            ("t.i16", -30000, V.INT16), ("t.u32", 4_000_000_000, V.UINT32),
                            ("t.i32", -2_000_000_000, V.INT32), ("t.f32", 1.5, V.FLOAT32), ("t.bool", True, V.BOOL),
                            ("t.str", "h\u00e9llo", V.STRING), ("t.u64", 2**63 + 5, V.UINT64),
                            ("t.i64", -(2**62), V.INT64), ("t.f64", 3.25e-300, V.FLOAT64)]:
        w.add_key_value(key, val, vtype)
    w.add_array("a.i32", [-1, 7, 2**31 - 1])
    w.add_array("a.f32", [0.5, -2.0])
    w.add_array("a.str", ["a", "", "ccc"])
    w.add_array("a.bool", [True, False])
    w.add_array("a.nested", [[1, 2], [3]])
    w.add_array("a.nested_str", [["x"], ["y", "zz"]])
    w.add_custom_alignment(64)
    rng = np.random.default_rng(1)
    w.add_tensor("blk.0.attn_norm.weight", np.ones(40, dtype=np.float32))
    w.add_tensor("blk.0.attn_q.weight", rng.normal(size=(3, 64)).astype(np.float32))
    w.add_tensor("blk.0.ffn_up.weight", rng.normal(size=(5, 96)).astype(np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    res = run_hearth("quantize", src, out, "Q8_0")
    assert res.returncode == 0, res.stderr.decode()
    a, b = gguf.GGUFReader(str(src)), gguf.GGUFReader(str(out))
    skip = {"general.file_type", "general.quantization_version", "GGUF.kv_count"}
    assert [k for k in a.fields if k not in skip] == [k for k in b.fields if k not in skip]
    for k in a.fields:
        if k not in skip:
            assert b.fields[k].types == a.fields[k].types, k
            assert field_bytes(b.fields[k]) == field_bytes(a.fields[k]), k
            assert b.fields[k].contents() == a.fields[k].contents(), k
    assert output_types(out) == {"blk.0.attn_norm.weight": "f32", "blk.0.attn_q.weight": "q8_0",
                                 "blk.0.ffn_up.weight": "q8_0"}
    assert all(t.data_offset % 64 == 0 for t in b.tensors)
    assert b.data_offset % 64 == 0
    q = {t.name: t for t in b.tensors}
    want = gguf.quants.quantize(np.array(a.tensors[2].data, dtype=np.float32), gguf.GGMLQuantizationType.Q8_0)
    assert q["blk.0.ffn_up.weight"].data.tobytes() == want.tobytes()  # F16 source dequantized first


def test_in_place(run_hearth, tmp_path):
    p = tmp_path / "m.gguf"
    p.write_bytes(TINY.read_bytes())
    res = run_hearth("quantize", p, p, "Q8_0")
    assert res.returncode == 0, res.stderr.decode()
    assert files_in(tmp_path) == ["m.gguf"]
    assert gguf.GGUFReader(str(p)).fields["general.file_type"].contents() == 7


# -------------------------------------------------------- requantization --

def test_requantize_to_more_bits_refused(run_hearth, tmp_path):
    err = one_line_error(run_hearth("quantize", TINY_DIR / "tiny-q4_1.gguf", tmp_path / "o.gguf", "Q8_0"))
    assert err == ("hearth quantize: input is already Q4_1; quantizing it to Q8_0 cannot restore precision: "
                   "start from an F16/F32/BF16 file")
    err = one_line_error(run_hearth("quantize", TINY_DIR / "tiny-q8_0.gguf", tmp_path / "o.gguf", "F16"))
    assert "input is already Q8_0; quantizing it to F16 cannot restore precision" in err
    assert files_in(tmp_path) == []
    # allowed on request (a requantized file still measures the speed of the type), with a warning
    res = run_hearth("quantize", TINY_DIR / "tiny-q4_1.gguf", tmp_path / "o.gguf", "Q8_0", "--allow-requantize")
    assert res.returncode == 0 and "requantizing" in res.stderr.decode()
    assert files_in(tmp_path) == ["o.gguf"]


def test_requantize_to_fewer_bits_needs_leave(run_hearth, tmp_path):
    src, out = TINY_DIR / "tiny-q8_0.gguf", tmp_path / "o.gguf"
    err = one_line_error(run_hearth("quantize", src, out, "Q4_0"))
    assert "input is already Q8_0; requantizing it to Q4_0" in err and "--allow-requantize" in err
    assert files_in(tmp_path) == []
    res = run_hearth("quantize", src, out, "Q4_0", "--allow-requantize")
    assert res.returncode == 0, res.stderr.decode()
    assert "warn" in res.stderr.decode() and "requantizing" in res.stderr.decode()
    types = set(output_types(out).values())
    assert types == {"q4_0", "q8_0", "f32"}  # untied output stays Q8_0: already its rule's type


def test_same_type_is_a_copy(run_hearth, tmp_path):
    src, out = TINY_DIR / "tiny-q8_0.gguf", tmp_path / "o.gguf"
    res = run_hearth("quantize", src, out, "Q8_0")
    assert res.returncode == 0, res.stderr.decode()
    a = {t.name: t.data.tobytes() for t in gguf.GGUFReader(str(src)).tensors}
    assert {t.name: t.data.tobytes() for t in gguf.GGUFReader(str(out)).tensors} == a


# -------------------------------------------------------------- bad input --

def test_help(run_hearth):
    top = run_hearth("--help")
    assert top.returncode == 0 and b"quantize IN OUT TYPE" in top.stdout
    res = run_hearth("quantize", "--help")
    assert res.returncode == 0
    for word in ["-t", "--threads", "--allow-requantize", "--dry-run", *MIXES]:
        assert word in res.stdout.decode(), word


def test_unknown_type_lists_the_valid_ones(run_hearth, tmp_path):
    err = one_line_error(run_hearth("quantize", TINY, tmp_path / "o.gguf", "Q4_X"))
    assert "unknown type 'Q4_X'" in err
    for mix in MIXES:
        assert mix in err
    assert files_in(tmp_path) == []


@pytest.mark.parametrize("args,needle", [
    ([], "needs IN.gguf, OUT.gguf and TYPE"),
    (["a.gguf", "b.gguf"], "needs IN.gguf, OUT.gguf and TYPE"),
    (["a.gguf", "b.gguf", "Q4_0", "extra"], "one argument too many"),
    (["a.gguf", "b.gguf", "Q4_0", "-t", "0"], "-t"),
    (["a.gguf", "b.gguf", "Q4_0", "-t", "x"], "-t"),
    (["a.gguf", "b.gguf", "Q4_0", "-t"], "needs a value"),
    (["a.gguf", "b.gguf", "Q4_0", "--bogus"], "unknown option"),
    (["--dry-run", "a.gguf", "b.gguf", "Q4_0"], "--dry-run needs IN.gguf and TYPE"),
])
def test_bad_arguments(run_hearth, args, needle):
    assert needle in one_line_error(run_hearth("quantize", *args))


def test_output_folder_missing(run_hearth, tmp_path):
    out = tmp_path / "no" / "such" / "o.gguf"
    err = one_line_error(run_hearth("quantize", TINY, out, "Q4_0"))
    assert str(out) in err and "does not exist" in err
    assert files_in(tmp_path) == []


def test_output_parent_is_a_file(run_hearth, tmp_path):
    (tmp_path / "file").write_text("x")
    err = one_line_error(run_hearth("quantize", TINY, tmp_path / "file" / "o.gguf", "Q4_0"))
    assert "is not a folder" in err
    assert files_in(tmp_path) == ["file"]


def test_output_is_a_directory(run_hearth, tmp_path):
    err = one_line_error(run_hearth("quantize", TINY, tmp_path, "Q4_0"))
    assert "is a directory" in err
    assert files_in(tmp_path) == []


def test_output_folder_read_only(run_hearth, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("running as root: a read-only folder is still writable")
        err = one_line_error(run_hearth("quantize", TINY, ro / "o.gguf", "Q4_0"))
        assert str(ro / "o.gguf") in err and "Permission denied" in err
        assert files_in(ro) == []
    finally:
        ro.chmod(0o755)


def test_output_on_a_read_only_filesystem(run_hearth):
    """/proc refuses new files even to root."""
    err = one_line_error(run_hearth("quantize", TINY, "/proc/hearth-test.gguf", "Q4_0"))
    assert "/proc/hearth-test.gguf" in err and "cannot create" in err


def test_input_missing(run_hearth, tmp_path):
    err = one_line_error(run_hearth("quantize", tmp_path / "nope.gguf", tmp_path / "o.gguf", "Q4_0"))
    assert "nope.gguf" in err and "No such file" in err
    assert files_in(tmp_path) == []


def test_input_not_gguf(run_hearth, tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("hello, this is not a model\n" * 10)
    assert "not a GGUF file" in one_line_error(run_hearth("quantize", p, tmp_path / "o.gguf", "Q4_0"))
    assert files_in(tmp_path) == ["notes.txt"]


@pytest.mark.parametrize("data,needle", [
    (b"GGUF" + struct.pack("<IQQ", 3, 2**63, 0), "n_tensors"),
    (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 2**64 - 2) + b"abc", "GGUF"),
    (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 17) + b"general.alignment" +
     struct.pack("<II", 4, 0), "alignment"),
])
def test_input_hostile(run_hearth, tmp_path, data, needle):
    p = tmp_path / "hostile.gguf"
    p.write_bytes(data)
    assert needle in one_line_error(run_hearth("quantize", p, tmp_path / "o.gguf", "Q4_0"))
    assert files_in(tmp_path) == ["hostile.gguf"]


def test_input_truncated(run_hearth, tmp_path):
    p = tmp_path / "cut.gguf"
    p.write_bytes(TINY.read_bytes()[:100_000])
    err = one_line_error(run_hearth("quantize", p, tmp_path / "o.gguf", "Q4_0"))
    assert "truncated" in err
    assert files_in(tmp_path) == ["cut.gguf"]


def test_type_not_writable_yet_leaves_nothing(run_hearth, tmp_path, wide_model):
    """Any mix this build cannot write yet fails before a file exists, naming
    the type it lacks."""
    for mix in MIXES:
        res = run_hearth("quantize", wide_model, tmp_path / "o.gguf", mix)
        if res.returncode != 0:
            err = one_line_error(res)
            assert re.fullmatch(rf"hearth quantize: type {mix} needs \w+, which this build cannot write yet", err)
            assert files_in(tmp_path) == []
            return
        (tmp_path / "o.gguf").unlink()
    pytest.skip("this build writes every mix")


def test_type_not_readable_leaves_nothing(run_hearth, tmp_path):
    """The same check for the source side: a tensor type hearth cannot convert
    from (F64 has no reference conversion) fails before a file exists."""
    src = tmp_path / "f64.gguf"
    w = gguf.GGUFWriter(str(src), "llama")
    w.add_tensor("blk.0.attn_q.weight", np.ones((4, 64), dtype=np.float64))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    err = one_line_error(run_hearth("quantize", src, tmp_path / "o.gguf", "Q8_0"))
    assert err == ("hearth quantize: tensor 'blk.0.attn_q.weight' is F64, which this build cannot read yet "
                   "(to convert it to Q8_0)")
    assert files_in(tmp_path) == ["f64.gguf"]


def test_failure_midway_leaves_nothing(run_hearth, tmp_path):
    """A tensor with NaN, after others were written: the error names it, and
    neither the output nor its temporary file remains."""
    src = tmp_path / "nan.gguf"
    w = gguf.GGUFWriter(str(src), "llama")
    good = np.random.default_rng(2).normal(size=(64, 256)).astype(np.float32)
    bad = good.copy()
    bad[40, 7] = np.nan
    w.add_tensor("blk.0.attn_q.weight", good)
    w.add_tensor("blk.0.attn_k.weight", good)
    w.add_tensor("blk.0.attn_v.weight", bad)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    res = run_hearth("quantize", src, tmp_path / "o.gguf", "Q8_0")
    assert res.returncode == 1
    lines = res.stderr.decode().splitlines()
    assert lines[-1] == ("hearth quantize: tensor 'blk.0.attn_v.weight': row 40 holds NaN or infinity: "
                         "the input is damaged"), lines
    assert len(lines) == 4  # two tensors done, the third's line ended, the error
    assert files_in(tmp_path) == ["nan.gguf"]


# ------------------------------------------ llama.cpp (local, not in CI) --

def llama_cpp_quantize(src, dst, mix):
    llama_cpp = pytest.importorskip("llama_cpp")
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = FTYPE[mix]
    params.nthread = 2
    assert llama_cpp.llama_model_quantize(str(src).encode(), str(dst).encode(), ctypes.byref(params)) == 0


@pytest.mark.parametrize("model", ["tiny", "wide"])
@pytest.mark.parametrize("mix", MIXES)
def test_same_as_llama_cpp(run_hearth, quantized, wide_model, tmp_path, model, mix):
    """llama.cpp quantizes the same input: the same tensor types (--dry-run,
    so every mix is checked now), and where hearth can write the mix the same
    bytes (hearth's quantizers are ggml's reference ones) and metadata."""
    src = TINY if model == "tiny" else wide_model
    ref = tmp_path / "ref.gguf"
    llama_cpp_quantize(src, ref, mix)
    assert dry_run_types(run_hearth, src, mix) == output_types(ref)
    out = quantized(src, mix)
    want = {t.name: t.data.tobytes() for t in gguf.GGUFReader(str(ref)).tensors}
    assert {t.name: t.data.tobytes() for t in gguf.GGUFReader(str(out)).tensors} == want
    a, b = gguf.GGUFReader(str(ref)).fields, gguf.GGUFReader(str(out)).fields
    assert {k: field_bytes(f) for k, f in a.items()} == {k: field_bytes(f) for k, f in b.items()}


@pytest.mark.parametrize("mix", MIXES)
def test_llama_cpp_runs_the_output(quantized, run_hearth, mix):
    """The output loads in llama.cpp, and greedy text from it equals `hearth
    run --temp 0` on the same file."""
    pytest.importorskip("llama_cpp")
    from llama_cpp import Llama
    out = quantized(TINY, mix)
    prompt = "the quick brown fox"
    res = run_hearth("run", out, prompt, "-n", "12", "--temp", "0", "-fa", "off")  # llama.cpp's arithmetic
    if res.returncode != 0 and b"cannot compute yet" in res.stderr:
        pytest.skip(res.stderr.decode().strip())
    assert res.returncode == 0, res.stderr.decode()
    llm = Llama(model_path=str(out), n_ctx=64, n_threads=2, verbose=False)
    text = llm.create_completion(prompt, max_tokens=12, temperature=0.0, repeat_penalty=1.0)["choices"][0]["text"]
    assert res.stdout.decode() == text
