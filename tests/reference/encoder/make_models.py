#!/usr/bin/env python3
"""Writes the tiny random-weight encoders of tests/reference/encoder/ with
gguf-py, for tests/test_tiny_encoders.c; make_references.py records
llama.cpp's hidden states, pooled vectors and reranker scores for them.

Usage: python3 tests/reference/encoder/make_models.py [--minilm FILE] [--out DIR]
(needs numpy and gguf-py 0.19.0, and models/all-minilm-l6-v2-f16.gguf from
scripts/fetch_model.sh minilm for the vocabulary; writes every model of
MODELS into DIR, by default this folder). The committed files are this
script's output byte for byte: a change to a model or to the order of its
draws changes its file and its reference.

The models (n_embd 32, 4 heads of 8, context_length 128):
  tiny-bert-f32          bert (llama.cpp's LLM_ARCH_BERT, as
                         scripts/convert_bert.py writes all-MiniLM): token,
                         token-type (2 rows) and position embeddings with a
                         LayerNorm; 2 post-norm layers with separate attn_q/k/v
                         and every bias, GELU feed-forward of 64; pooling mean;
                         no classification head (pooling rank refuses it)
  tiny-nomic-bert-f32    nomic-bert (LLM_ARCH_NOMIC_BERT, as llama.cpp's
                         converter writes nomic-embed-text-v1.5): no position
                         embeddings, NEOX rope with rope.freq_base 1000 over
                         whole heads, fused attn_qkv and attn_output without
                         biases, SwiGLU feed-forward (ffn_gate, ffn_up,
                         ffn_down) of 64 without biases; 3 layers; pooling mean
  tiny-nomic-bert-q8_0   the same shape in Q8_0 (token embeddings included;
                         norms and token types F32), 2 layers, rope base 10000
  tiny-reranker-f32      bert with a classification head as a cross-encoder
                         (bge-reranker, ms-marco-MiniLM) has it: cls {32, 32}
                         and cls.bias (the pooler: tanh), cls.output {32, 1}
                         and its bias; bert.classifier.output_labels
                         ["LABEL_0"], pooling_type rank; 2 layers
  tiny-reranker-f16      the same in F16 (the head's matrices too, as the
                         converter leaves 2-D tensors: cls.output.weight
                         {32, 1} F16), 2 labels ["negative", "positive"], so
                         pooling rank gives 2 scores
Weights are N(0, sigma) (embeddings rms 0.4, matrices 0.2, 0.15 into the
feed-forward's down), LayerNorm weights ~N(1, 0.1), biases ~N(0, 0.1). The
vocabulary is a subset of all-MiniLM-L6-v2's WordPiece vocabulary, kept in
its order: [PAD], [UNK], [CLS], [SEP], [MASK], the printable ASCII
characters (word-initial and ## forms, so every English text tokenizes
without [UNK]) and the 400 words and pieces of ids 1996..2395 (the most
frequent), with all-MiniLM's tokenizer keys (tokenizer.ggml.model "bert",
pre "bert-bge", add_bos and add_eos true, add_sep false: [CLS] text [SEP],
and a reranker's pair [CLS] query [SEP] document [SEP] in llama.cpp's
server)."""
import argparse
import string
from pathlib import Path

import gguf
import numpy as np

HERE = Path(__file__).resolve().parent
N_EMBD, N_HEAD, N_FF, N_CTX = 32, 4, 64, 128

MODELS = [
    dict(name="tiny-bert-f32", arch="bert", type="F32", n_layer=2, pooling=1, seed=4101),
    dict(name="tiny-nomic-bert-f32", arch="nomic-bert", type="F32", n_layer=3, pooling=1, rope_base=1000.0, seed=4102),
    dict(name="tiny-nomic-bert-q8_0", arch="nomic-bert", type="Q8_0", n_layer=2, pooling=1, rope_base=10000.0,
         seed=4103),
    dict(name="tiny-reranker-f32", arch="bert", type="F32", n_layer=2, pooling=4, labels=["LABEL_0"], seed=4104),
    dict(name="tiny-reranker-f16", arch="bert", type="F16", n_layer=2, pooling=4, labels=["negative", "positive"],
         seed=4105),
]

FILE_TYPE = {"F32": 0, "F16": 1, "Q8_0": 7}


def vocabulary(minilm):
    """The token strings and types of the subset (see the docstring) and the
    ids of [PAD], [UNK], [CLS], [SEP], [MASK] in it."""
    r = gguf.GGUFReader(str(minilm))
    tokens = r.fields["tokenizer.ggml.tokens"].contents()
    types = r.fields["tokenizer.ggml.token_type"].contents()
    keep = {0, 100, 101, 102, 103} | set(range(1996, 2396))
    keep |= {i for i, s in enumerate(tokens[:3000])
             if len(s.lstrip("\u2581")) == 1 and s.lstrip("\u2581") in string.printable}
    ids = sorted(keep)
    sub = [tokens[i] for i in ids]
    return sub, [int(types[i]) for i in ids], {name: sub.index(name) for name in
                                             ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")}


class Writer:
    def __init__(self, spec, out_dir, vocab):
        self.spec, self.rng = spec, np.random.default_rng(spec["seed"])
        self.qtype = gguf.GGMLQuantizationType[spec["type"]]
        self.path = out_dir / f"{spec['name']}.gguf"
        arch = spec["arch"]
        w = self.w = gguf.GGUFWriter(str(self.path), arch)
        w.add_type(gguf.GGUFType.MODEL)
        w.add_name(spec["name"])
        w.add_description(f"random weights for hearth's tests (make_models.py, seed {spec['seed']})")
        w.add_block_count(spec["n_layer"])
        w.add_context_length(N_CTX)
        w.add_embedding_length(N_EMBD)
        w.add_feed_forward_length(N_FF)
        w.add_head_count(N_HEAD)
        w.add_layer_norm_eps(1e-12)
        w.add_file_type(FILE_TYPE[spec["type"]])
        w.add_causal_attention(False)
        w.add_pooling_type(gguf.PoolingType(spec["pooling"]))
        if "rope_base" in spec:
            w.add_rope_freq_base(spec["rope_base"])
        if "labels" in spec:
            w.add_classifier_output_labels(spec["labels"])
        w.add_quantization_version(gguf.GGML_QUANT_VERSION)
        tokens, types, special = vocab
        self.n_vocab = len(tokens)
        w.add_token_type_count(2)
        w.add_tokenizer_model("bert")
        w.add_tokenizer_pre("bert-bge")
        w.add_token_list(tokens)
        w.add_token_types(types)
        w.add_bos_token_id(special["[CLS]"])
        w.add_eos_token_id(special["[SEP]"])
        w.add_unk_token_id(special["[UNK]"])
        w.add_sep_token_id(special["[SEP]"])
        w.add_pad_token_id(special["[PAD]"])
        w.add_mask_token_id(special["[MASK]"])
        w.add_add_bos_token(True)
        w.add_add_eos_token(True)
        w.add_add_sep_token(False)

    def matrix(self, name, rows, cols, sigma, qtype=None):
        """A {cols, rows} weight (numpy shape (rows, cols)) in the model's type."""
        data = self.rng.normal(0.0, sigma, size=(rows, cols)).astype(np.float32)
        qtype = self.qtype if qtype is None else qtype
        if qtype == gguf.GGMLQuantizationType.F32:
            self.w.add_tensor(name, data)
        else:
            self.w.add_tensor(name, gguf.quants.quantize(data, qtype), raw_dtype=qtype)

    def vector(self, name, n, mean, sigma):
        self.w.add_tensor(name, (mean + self.rng.normal(0.0, sigma, size=n)).astype(np.float32))

    def layer_norm(self, name):
        self.vector(f"{name}.weight", N_EMBD, 1.0, 0.1)
        self.vector(f"{name}.bias", N_EMBD, 0.0, 0.1)

    def write(self):
        spec, F32 = self.spec, gguf.GGMLQuantizationType.F32
        bert = spec["arch"] == "bert"
        self.matrix("token_embd.weight", self.n_vocab, N_EMBD, 0.4)
        self.matrix("token_types.weight", 2, N_EMBD, 0.4, F32)  # F32, as llama.cpp's converter keeps it
        if bert:
            self.matrix("position_embd.weight", N_CTX, N_EMBD, 0.4, F32)
        self.layer_norm("token_embd_norm")
        for il in range(spec["n_layer"]):
            p = f"blk.{il}."
            if bert:
                for part in ("q", "k", "v"):
                    self.matrix(f"{p}attn_{part}.weight", N_EMBD, N_EMBD, 0.2)
                    self.vector(f"{p}attn_{part}.bias", N_EMBD, 0.0, 0.1)
            else:
                self.matrix(f"{p}attn_qkv.weight", 3 * N_EMBD, N_EMBD, 0.2)
            self.matrix(f"{p}attn_output.weight", N_EMBD, N_EMBD, 0.2)
            if bert:
                self.vector(f"{p}attn_output.bias", N_EMBD, 0.0, 0.1)
            self.layer_norm(f"{p}attn_output_norm")
            if not bert:
                self.matrix(f"{p}ffn_gate.weight", N_FF, N_EMBD, 0.2)
            self.matrix(f"{p}ffn_up.weight", N_FF, N_EMBD, 0.2)
            if bert:
                self.vector(f"{p}ffn_up.bias", N_FF, 0.0, 0.1)
            self.matrix(f"{p}ffn_down.weight", N_EMBD, N_FF, 0.15)
            if bert:
                self.vector(f"{p}ffn_down.bias", N_EMBD, 0.0, 0.1)
            self.layer_norm(f"{p}layer_output_norm")
        if "labels" in spec:
            self.matrix("cls.weight", N_EMBD, N_EMBD, 0.2)
            self.vector("cls.bias", N_EMBD, 0.0, 0.1)
            self.matrix("cls.output.weight", len(spec["labels"]), N_EMBD, 0.3)
            self.vector("cls.output.bias", len(spec["labels"]), 0.0, 0.1)
        w = self.w
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        return self.path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minilm", type=Path, default=HERE.parents[2] / "models" / "all-minilm-l6-v2-f16.gguf")
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args()
    vocab = vocabulary(args.minilm)
    for spec in MODELS:
        path = Writer(spec, args.out, vocab).write()
        print(f"{path}: {path.stat().st_size} bytes, {len(vocab[0])} tokens")


if __name__ == "__main__":
    main()
