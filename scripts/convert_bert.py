#!/usr/bin/env python3
"""Converts a BERT sentence-transformers folder (model.safetensors, config.json,
tokenizer.json, modules.json + the pooling folder) to GGUF exactly as
llama.cpp's convert_hf_to_gguf.py writes architecture `bert` (class
BertModel; TextModel.set_gguf_parameters, get_vocab_base, prepare_tensors),
with gguf-py and numpy only: no torch, no transformers.

What llama.cpp's converter does and this script repeats:
- hyperparameters: bert.context_length (max_position_embeddings),
  embedding_length, feed_forward_length, block_count, attention.head_count,
  attention.layer_norm_epsilon, attention.causal = false, pooling_type from
  the sentence-transformers Pooling module (mean, cls, last), general.file_type;
- vocabulary: tokenizer.ggml.model "bert", tokenizer.ggml.pre from the hash
  of the tokens of llama.cpp's check text (get_vocab_base_pre), the token
  list rewritten to llama.cpp's "phantom space" form (a CONTROL token as is,
  a "##" continuation without its "##", every other token after U+2581),
  token types (added tokens that are special: CONTROL, other added tokens:
  USER_DEFINED, the rest NORMAL), tokenizer.ggml.token_type_count
  (type_vocab_size), and the special ids and add_* flags gguf-py's
  SpecialVocab reads from the tokenizer files;
- tensors: pooler, position_ids and MLM heads dropped, names mapped by
  gguf-py's TensorNameMap (token_embd, token_types, position_embd,
  token_embd_norm, blk.N.attn_q/k/v, attn_output, attn_output_norm, ffn_up,
  ffn_down, layer_output_norm, each with its bias); with --outtype f16 the
  matrices are F16 and 1-D tensors, norms, biases, position_embd and
  token_types stay F32 (llama.cpp's rule), with f32 everything is F32.

Usage: convert_bert.py MODEL_DIR --outfile OUT.gguf [--outtype f16|f32] [--model-name NAME]
"""
import argparse
import json
import logging
import sys
from hashlib import sha256
from pathlib import Path

import numpy as np

import gguf
from safetensors import safe_open
from tokenizers import Tokenizer

log = logging.getLogger("convert_bert")

# llama.cpp's convert_hf_to_gguf.py get_vocab_base_pre(): the text whose
# token ids identify a tokenizer, and the WordPiece hashes it knows.
CHK_TXT = ('\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n🚀 (normal) 😶\u200d🌫️ (multiple emojis concatenated) ✅ '
           '🦙🦙 3 33 333 3333 33333 333333 3333333 33333333 3.3 3..3 3...3 កាន់តែពិសេសអាច😁 ?我想在apple工作1314151天～ '
           '------======= нещо на Български \'\'\'\'\'\'```````""""......!!!!!!?????? I\'ve been \'told he\'s there, '
           '\'RE you sure? \'M not sure I\'ll make it, \'D you like some tea? We\'Ve a\'lL')
KNOWN_PRE = {
    "0876d13b50744004aa9aeae05e7b0647eac9d801b5ba4668afc01e709c15e19f": "bert-bge",        # BAAI/bge-small-en-v1.5
    "8e62295832751ca1e8f92f2226f403dea30dc5165e448b5bfa05af5340c64ec7": "bert-bge-large",  # BAAI/bge-large-zh-v1.5
}


def load_tokenizer(model_dir: Path) -> Tokenizer:
    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    # what transformers' encode() runs: no padding, no truncation
    tok.no_padding()
    tok.no_truncation()
    return tok


def vocab_pre(tok: Tokenizer) -> str:
    chktok = tok.encode(CHK_TXT, add_special_tokens=True).ids
    chkhsh = sha256(str(chktok).encode()).hexdigest()
    if chkhsh not in KNOWN_PRE:
        raise NotImplementedError(f"unknown tokenizer (chkhsh {chkhsh}): llama.cpp's converter refuses it too; "
                                  "add it to KNOWN_PRE once llama.cpp's get_vocab_base_pre() names it")
    return KNOWN_PRE[chkhsh]


def vocab_base(model_dir: Path, tok: Tokenizer, vocab_size: int) -> tuple[list[str], list[int]]:
    """get_vocab_base(): tokens by id, [PAD<i>] for holes, and their types."""
    added = {t["id"]: t for t in json.loads((model_dir / "tokenizer.json").read_text(encoding="utf-8"))["added_tokens"]}
    reverse = {i: t for t, i in tok.get_vocab(with_added_tokens=True).items()}
    assert max(reverse) < vocab_size, "token ids beyond config.json's vocab_size"
    tokens, types = [], []
    for i in range(vocab_size):
        if i not in reverse:
            tokens.append(f"[PAD{i}]")
            types.append(gguf.TokenType.UNUSED)
            continue
        text = reverse[i]
        if i in added:
            if not added[i]["normalized"]:
                text = tok.decode(tok.encode(text, add_special_tokens=False).ids, skip_special_tokens=False)
            if added[i]["special"] or looks_special(text):
                types.append(gguf.TokenType.CONTROL)
            else:
                text = text.replace("\u2581", " ")
                types.append(gguf.TokenType.USER_DEFINED)
        else:
            types.append(gguf.TokenType.NORMAL)
        tokens.append(text)
    return tokens, types


def looks_special(text: str) -> bool:
    """does_token_look_special(): added tokens some models forget to mark special."""
    return (text in ("<pad>", "<mask>", "<2mass>", "[@BOS@]")
            or (text.startswith("<|") and text.endswith("|>"))
            or (text.startswith("<\uff5c") and text.endswith("\uff5c>"))
            or (text.startswith("<unused") and text.endswith(">")))


def phantom(text: str, toktype: int) -> str:
    """BertModel.set_vocab()'s rewriting of a WordPiece token."""
    if toktype == gguf.TokenType.CONTROL:
        return text
    if text.startswith("##"):
        return text[2:]
    return "\u2581" + text


def pooling_type(model_dir: Path):
    """_try_set_pooling_type(): from the sentence-transformers Pooling module, or None."""
    modules = model_dir / "modules.json"
    if not modules.is_file():
        return None
    path = next((m["path"] for m in json.loads(modules.read_text()) if m["type"] == "sentence_transformers.models.Pooling"),
                None)
    if path is None:
        return None
    pooling = json.loads((model_dir / path / "config.json").read_text())
    if pooling["pooling_mode_mean_tokens"]:
        return gguf.PoolingType.MEAN
    if pooling["pooling_mode_cls_token"]:
        return gguf.PoolingType.CLS
    if pooling.get("pooling_mode_lasttoken"):
        return gguf.PoolingType.LAST
    raise NotImplementedError("Only MEAN, CLS, and LAST pooling types supported")


def tensor_type(new_name: str, n_dims: int, outtype: str) -> gguf.GGMLQuantizationType:
    """prepare_tensors()'s choice for an unquantized output type."""
    F32, F16 = gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16
    if outtype == "f32" or n_dims <= 1 or new_name.endswith("_norm.weight") or not new_name.endswith(".weight"):
        return F32
    if new_name in ("position_embd.weight", "token_types.weight"):  # POS_EMBD, TOKEN_TYPES: always F32
        return F32
    return F16


def skip_tensor(name: str) -> bool:
    """BertModel.filter_tensors(): what an embedding model does not use."""
    return (name in ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias")
            or name.startswith("cls.predictions") or name.startswith("cls.seq_relationship"))


def add_tensors(writer: gguf.GGUFWriter, model_dir: Path, n_layers: int, outtype: str) -> None:
    tmap = gguf.get_tensor_name_map(gguf.MODEL_ARCH.BERT, n_layers)
    with safe_open(str(model_dir / "model.safetensors"), framework="numpy") as st:
        for name in st.keys():
            hf = name[5:] if name.startswith("bert.") else name
            if hf.endswith(".gamma"):
                hf = hf[:-6] + ".weight"
            if hf.endswith(".beta"):
                hf = hf[:-5] + ".bias"
            if skip_tensor(hf):
                continue
            new_name = tmap.get_name(hf, try_suffixes=(".weight", ".bias"))
            if new_name is None:
                raise ValueError(f"Can not map tensor {name!r}")
            data = st.get_tensor(name)
            qtype = tensor_type(new_name, data.ndim, outtype)
            data = data.astype(np.float32 if qtype == gguf.GGMLQuantizationType.F32 else np.float16)
            log.info("%-32s %s -> %s, shape = %s", new_name, st.get_slice(name).get_dtype(), qtype.name,
                     "{" + ", ".join(str(n) for n in reversed(data.shape)) + "}")
            writer.add_tensor(new_name, data, raw_dtype=qtype)


def convert(model_dir: Path, outfile: Path, outtype: str, model_name: str | None) -> None:
    hp = json.loads((model_dir / "config.json").read_text())
    arch = (hp.get("architectures") or ["BertModel"])[0]
    if arch not in ("BertModel", "BertForMaskedLM"):
        raise NotImplementedError(f"{arch}: this converter writes plain BERT encoders only")
    n_layers = hp["num_hidden_layers"]
    writer = gguf.GGUFWriter(path=None, arch=gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.BERT])

    add_tensors(writer, model_dir, n_layers, outtype)

    # prepare_metadata(): general.* from the folder, then the hyperparameters
    total, shared, expert, n_expert = writer.get_total_parameter_count()
    meta = gguf.Metadata.load(None, model_dir, model_name, total)
    if meta.name is None:
        meta.name = model_dir.name
    if meta.size_label is None and total > 0:
        meta.size_label = gguf.size_label(total, shared, expert, n_expert)
    writer.add_type(gguf.GGUFType.MODEL)
    meta.set_gguf_meta_model(writer)

    writer.add_block_count(n_layers)
    writer.add_context_length(hp["max_position_embeddings"])
    writer.add_embedding_length(hp["hidden_size"])
    writer.add_feed_forward_length(hp["intermediate_size"])
    writer.add_head_count(hp["num_attention_heads"])
    writer.add_layer_norm_eps(hp["layer_norm_eps"])
    ftype = gguf.LlamaFileType.ALL_F32 if outtype == "f32" else gguf.LlamaFileType.MOSTLY_F16
    writer.add_file_type(ftype)
    writer.add_causal_attention(False)
    pooling = pooling_type(model_dir)
    if pooling is not None:
        writer.add_pooling_type(pooling)
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)

    # set_vocab()
    tok = load_tokenizer(model_dir)
    tokens, types = vocab_base(model_dir, tok, hp.get("vocab_size", tok.get_vocab_size(with_added_tokens=True)))
    writer.add_token_type_count(hp.get("type_vocab_size", 1))
    writer.add_tokenizer_model("bert")
    writer.add_tokenizer_pre(vocab_pre(tok))
    writer.add_token_list([phantom(t, k) for t, k in zip(tokens, types)])
    writer.add_token_types(types)
    gguf.SpecialVocab(model_dir, n_vocab=len(tokens)).add_to_gguf(writer)

    writer.write_header_to_file(path=outfile)
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file(progress=False)
    writer.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model_dir", type=Path)
    ap.add_argument("--outfile", type=Path, required=True)
    ap.add_argument("--outtype", choices=("f16", "f32"), default="f16")
    ap.add_argument("--model-name", default=None)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    tmp = args.outfile.with_name(args.outfile.name + ".tmp")
    convert(args.model_dir, tmp, args.outtype, args.model_name)
    tmp.replace(args.outfile)
    print(f"convert_bert: wrote {args.outfile}")


if __name__ == "__main__":
    sys.exit(main())
