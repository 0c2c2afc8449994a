"""hearth.Model: a GGUF model and the engine that serves its requests.

Every call that generates (generate, stream, chat and their async forms) is
one request to the model's engine, hearth's one scheduler (include/hearth.h,
``hearth_engine``): requests from several threads or tasks run together in
batches, up to ``n_seq_max`` at once, the rest wait in a queue. hearth
computes on its own threads without the GIL.
"""

from __future__ import annotations

import asyncio
import inspect
import math
import os
import secrets
from typing import Any, AsyncIterator, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import _chat, _hearth, _structured
from ._structured import ResponseFormat, Schema, ToolChoice
from .errors import GenerationError, HearthError, InvalidArgumentError

Prompt = Union[str, Sequence[int]]
Message = Mapping[str, Any]
Tool = Mapping[str, Any]


def _check_int(name: str, value: Any, low: int, optional: bool = False, high: Optional[int] = None) -> int:
    if value is None and optional:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise InvalidArgumentError(f"{name} must be an int {bound}{' or None' if optional else ''}, got {value!r}", 1)
    return value


_FLASH_ATTN = {None: -1, "auto": -1, True: 1, "on": 1, False: 0, "off": 0}  # hearth_flash_attn
_N_GPU_LAYERS_AUTO = -2  # HEARTH_N_GPU_LAYERS_AUTO


_ROPE_SCALING = {None: -1, "none": 0, "linear": 1, "yarn": 2}  # hearth_rope_scaling, llama.cpp's values

_POOLING = {None: -1, "none": 0, "mean": 1, "cls": 2, "last": 3}  # hearth_pooling_type, llama.cpp's values

_KV_TYPES = {"f16": 1, "q4_0": 2, "q8_0": 8, "bf16": 30}  # hearth_kv_type: ggml's type ids, as llama.cpp's


def _kv_type(name: str, value: Union[int, str]) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value in _KV_TYPES.values():
        return value  # llama-cpp-python's GGML_TYPE_* numbers
    if isinstance(value, str) and value in _KV_TYPES:
        return _KV_TYPES[value]
    raise InvalidArgumentError(f"{name} must be 'f16', 'bf16', 'q8_0' or 'q4_0' (or ggml's 1, 30, 8, 2), "
                               f"got {value!r}", 1)


def _rope_scaling(value: Union[None, int, str]) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value in _ROPE_SCALING.values():
        return value  # llama-cpp-python's LLAMA_ROPE_SCALING_TYPE_*
    if (value is None or isinstance(value, str)) and value in _ROPE_SCALING:
        return _ROPE_SCALING[value]
    raise InvalidArgumentError("rope_scaling_type must be None, 'none', 'linear', 'yarn' or -1, 0, 1, 2, "
                               f"got {value!r}", 1)


def _check_float(name: str, value: Any, low: Optional[float] = None) -> float:
    """A finite real number (at least `low` when given)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or \
            (low is not None and value < low):
        bound = f" >= {low}" if low is not None else ""
        raise InvalidArgumentError(f"{name} must be a finite number{bound}, got {value!r}", 1)
    return float(value)


def _logit_bias(logit_bias: Optional[Mapping[Union[int, str], float]]) -> List[Tuple[int, float]]:
    """OpenAI's {token id: bias} (ids as ints, or as digit strings as JSON
    keys come) as (token, bias) pairs; the library checks the ids against
    the vocabulary."""
    if logit_bias is None:
        return []
    if not isinstance(logit_bias, Mapping):
        raise InvalidArgumentError(f"logit_bias must be a dict of token id -> bias, got {logit_bias!r}", 1)
    pairs = []
    for token, bias in logit_bias.items():
        if isinstance(token, str) and token.isascii() and token.isdigit():
            token = int(token)
        if isinstance(token, bool) or not isinstance(token, int) or not 0 <= token < 2**31:
            raise InvalidArgumentError(f"logit_bias keys must be token ids (ints >= 0), got {token!r}", 1)
        pairs.append((token, _check_float(f"logit_bias[{token}]", bias)))
    return pairs


def _flash_attn(value: Union[None, bool, str]) -> int:
    try:
        return _FLASH_ATTN[value]
    except (KeyError, TypeError):
        raise InvalidArgumentError(f"flash_attn must be None, True, False, 'auto', 'on' or 'off', got {value!r}",
                                   1) from None


class _Piece:
    """What one read of a request gives: new text, and the end when it came."""

    __slots__ = ("text", "finish", "n_prompt", "n_generated", "calls")

    def __init__(self, got: Tuple[str, Optional[str], Optional[str], int, int, int,
                                  List[Tuple[int, Optional[str], Optional[str], str]]]) -> None:
        # calls: tool-call deltas (index, id, name, arguments), id and name only in a call's first
        self.text, self.finish, error, self.n_prompt, _n_cached, self.n_generated, self.calls = got
        if self.finish == "error":
            raise GenerationError(error or "generation failed", 0)
        if self.finish == "cancelled":
            raise HearthError("the request was cancelled: the model was closed while it ran", 0)


class Model:
    """A GGUF model loaded by hearth, ready to generate and to embed.

    An embedding model (an encoder such as bert: all-MiniLM, bge, e5, gte)
    loads without the generation engine: :meth:`embed` works, and
    :meth:`generate`, :meth:`stream` and :meth:`chat` raise
    InvalidArgumentError.

    Args:
        path: the ``.gguf`` file (str or os.PathLike), or a model name as the
            ``hearth`` command takes it ("llama3.2:1b", "hf.co/OWNER/REPO:QUANT",
            "ollama:NAME:TAG", an http(s) URL), downloaded into the model store
            (HEARTH_MODELS, default ~/.cache/hearth) first when it is not there.
        n_gpu_layers: blocks to place on GPUs: 0 (default) CPU only, N the
            first N, -1 every block and the output layer, "auto" as many as
            fit in the GPUs' free memory beside the KV cache of
            ``n_ctx * n_seq_max`` tokens in ``type_k``/``type_v`` (n_ctx
            None: one sequence's default context), 256 MiB of buffers and a 5% margin (``gpu_layers``
            then says how many). Without a usable GPU the model runs on the
            CPU (``gpu_layers`` then reads 0).
        n_ctx: the context of each request in tokens (prompt plus generated
            text); None: the model's training context, capped at 4096.
        n_batch: the most tokens one engine step decodes (default 512).
        n_ubatch: the most tokens of one forward pass (default 512; at most
            n_batch): a step of more runs in passes of n_ubatch, and the
            activation buffers are sized for it (llama.cpp's --ubatch-size).
        n_threads: CPU threads; None: the physical cores.
        main_gpu: the index, among the devices used, for single-device loads.
        tensor_split: per-GPU proportions of the offloaded layers (a sequence
            of floats); None: in proportion to each GPU's free memory.
        use_mmap: map the file instead of reading it (default True). False
            reads it into private memory advised as transparent huge pages
            (Linux): faster CPU decode, a slower load, memory not shared
            with other processes; OutOfMemoryError when it does not fit.
        use_mlock: lock the weights in RAM (default False).
        chat_template: a Jinja chat template for :meth:`chat`; None: the
            model's own (``tokenizer.chat_template``).
        n_seq_max: requests that generate at once (default 4); more wait in
            a queue of 64. The KV cache holds ``n_ctx * n_seq_max`` tokens.
        devices: where offloaded layers go, by id, comma-separated ("cuda0",
            "opencl0,opencl1"; see :func:`hearth.gpu_devices`); None: the
            HEARTH_DEVICE environment variable, else every CUDA device, else
            every OpenCL GPU.
        progress: called with a dict (``what``: the file or "load",
            ``done`` / ``total`` bytes, ``rate`` bytes/s, ``eta`` and
            ``elapsed`` seconds, ``finished``) about ten times a second
            while a model name downloads or weights upload to a GPU;
            returning False cancels (CancelledError; a download keeps its
            partial file), an exception it raises propagates.
        flash_attn: the CPU attention (llama.cpp's ``--flash-attn``): None or
            "auto" (default) and True / "on" run the tiled FlashAttention
            path, fast on long contexts; False / "off" runs llama.cpp's
            order of operations without flash attention, bit for bit (for
            comparisons with llama.cpp). GPU layers ignore it.
        rope_scaling_type: how rotary positions stretch past the trained
            context (llama.cpp's ``--rope-scaling``): None (default) the
            model's ``rope.scaling.type``, "none", "linear" or "yarn" (YaRN,
            arXiv:2309.00071); llama-cpp-python's -1, 0, 1, 2 work too.
        rope_freq_base: the RoPE theta base; 0.0 (default) the model's
            ``rope.freq_base``.
        rope_freq_scale: the position scale, 1 / the context stretch
            (llama.cpp's ``--rope-freq-scale``; ``--rope-scale 4`` is 0.25);
            0.0 (default) the model's (1 / ``rope.scaling.factor``, or 1).
            Ignored with rope_scaling_type "none".
        yarn_ext_factor: YaRN's extrapolation mix; negative (default -1.0):
            1.0 with YaRN scaling, else 0.0 (off).
        yarn_attn_factor: the attention magnitude factor without YaRN
            (YaRN computes its own); negative (default -1.0): 1.0.
        yarn_beta_fast: YaRN's ramp end, in rotations; negative (default
            -1.0): 32.0.
        yarn_beta_slow: YaRN's ramp start, in rotations; negative (default
            -1.0): 1.0.
        yarn_orig_ctx: the context, in tokens, the model was trained with
            before its scaling; 0 (default) the model's
            ``rope.scaling.original_context_length``, else its context length.
        context_shift: when a generation reaches the end of its context:
            False (default) it ends (finish reason "length"); True drops the
            oldest half of the tokens after the first ``n_keep`` prompt
            tokens, re-rotating the cached keys, and goes on (llama-server's
            ``--context-shift``).
        n_keep: with context_shift, the prompt tokens after the BOS that are
            always kept; -1 the whole prompt; default 0 (the BOS alone).
        type_k: the KV cache's element type for keys (llama.cpp's
            ``--cache-type-k``): "f16" (default, 2 bytes an element), "bf16"
            (2 bytes), "q8_0" (34 bytes per 32 elements) or "q4_0" (18 bytes
            per 32); llama-cpp-python's ggml numbers 1, 30, 8, 2 work too.
            The quantized types need the model's head size to be a multiple
            of 32. GPU layers take "f16" only (another type raises
            UnsupportedError when layers are offloaded).
        type_v: the same for values (``--cache-type-v``); "q8_0" and "q4_0"
            need flash_attn None, "auto", True or "on", as in llama.cpp.

    Raises:
        ModelFileError: the file is missing or unreadable.
        ModelFormatError: the file is not a valid GGUF model.
        UnsupportedError: an architecture or tensor type hearth cannot run.
        OutOfMemoryError: the weights or the KV cache do not fit (host or GPU).
        InvalidArgumentError: a parameter is out of range or of the wrong
            type (the message names it).
        DeviceError: the GPU driver failed.

    A Model may be shared by any number of threads; use it as a context
    manager, or call :meth:`close`, to free its memory (GPU memory too) at
    once.
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"], n_gpu_layers: Union[int, str] = 0,
                 n_ctx: Optional[int] = None,
                 n_batch: int = 512, n_threads: Optional[int] = None, main_gpu: int = 0,
                 tensor_split: Optional[Sequence[float]] = None, use_mmap: bool = True, use_mlock: bool = False,
                 chat_template: Optional[str] = None, n_seq_max: int = 4,
                 flash_attn: Union[None, bool, str] = None, devices: Optional[str] = None,
                 progress: Optional[Callable[[Dict[str, Any]], Optional[bool]]] = None,
                 n_ubatch: int = 512, rope_scaling_type: Union[None, int, str] = None,
                 rope_freq_base: float = 0.0, rope_freq_scale: float = 0.0, yarn_ext_factor: float = -1.0,
                 yarn_attn_factor: float = -1.0, yarn_beta_fast: float = -1.0, yarn_beta_slow: float = -1.0,
                 yarn_orig_ctx: int = 0, context_shift: bool = False, n_keep: int = 0,
                 type_k: Union[int, str] = "f16", type_v: Union[int, str] = "f16") -> None:
        if n_gpu_layers == "auto":
            n_gpu_layers = _N_GPU_LAYERS_AUTO
        elif isinstance(n_gpu_layers, str):
            raise InvalidArgumentError(f"n_gpu_layers must be an int >= -1 or 'auto', got {n_gpu_layers!r}", 1)
        else:
            _check_int("n_gpu_layers", n_gpu_layers, -1)
        _check_int("main_gpu", main_gpu, 0)
        self._engine = _hearth.open(
            os.fspath(path), n_gpu_layers=n_gpu_layers, main_gpu=main_gpu,
            tensor_split=None if tensor_split is None else [float(x) for x in tensor_split],
            use_mmap=bool(use_mmap), use_mlock=bool(use_mlock), n_ctx=_check_int("n_ctx", n_ctx, 1, True),
            n_batch=_check_int("n_batch", n_batch, 1), n_threads=_check_int("n_threads", n_threads, 1, True),
            n_seq_max=_check_int("n_seq_max", n_seq_max, 1), chat_template=chat_template,
            flash_attn=_flash_attn(flash_attn), devices=devices, progress=progress,
            n_ubatch=_check_int("n_ubatch", n_ubatch, 1), rope_scaling_type=_rope_scaling(rope_scaling_type),
            rope_freq_base=_check_float("rope_freq_base", rope_freq_base, 0.0),
            rope_freq_scale=_check_float("rope_freq_scale", rope_freq_scale, 0.0),
            yarn_ext_factor=_check_float("yarn_ext_factor", yarn_ext_factor),
            yarn_attn_factor=_check_float("yarn_attn_factor", yarn_attn_factor),
            yarn_beta_fast=_check_float("yarn_beta_fast", yarn_beta_fast),
            yarn_beta_slow=_check_float("yarn_beta_slow", yarn_beta_slow),
            yarn_orig_ctx=_check_int("yarn_orig_ctx", yarn_orig_ctx, 0, high=2**31 - 1),
            context_shift=bool(context_shift), n_keep=_check_int("n_keep", n_keep, -1, high=2**31 - 1),
            type_k=_kv_type("type_k", type_k), type_v=_kv_type("type_v", type_v))
        self.path = os.fspath(path)
        self._info: Dict[str, Any] = self._engine.info()
        self._chat_template = chat_template

    @classmethod
    def load(cls, path: Union[str, "os.PathLike[str]"], **kwargs: Any) -> "Model":
        """The same as ``Model(path, **kwargs)``."""
        return cls(path, **kwargs)

    # ---------------------------------------------------------------- facts

    @property
    def gpu_layers(self) -> int:
        """Layers actually on a GPU (the output layer counts as one); 0 without a GPU."""
        return int(self._info["gpu_layers"])

    @property
    def n_layer(self) -> int:
        """Transformer blocks."""
        return int(self._info["n_layer"])

    @property
    def n_ctx_train(self) -> int:
        """The context length the model was trained for, in tokens."""
        return int(self._info["n_ctx_train"])

    @property
    def n_ctx(self) -> int:
        """The context of each request, in tokens."""
        return int(self._info["n_ctx"])

    @property
    def n_seq_max(self) -> int:
        """Requests that generate at once."""
        return int(self._info["n_seq_max"])

    @property
    def n_embd(self) -> int:
        """Width of the hidden state."""
        return int(self._info["n_embd"])

    @property
    def n_vocab(self) -> int:
        """Tokens in the vocabulary."""
        return int(self._info["n_vocab"])

    @property
    def metadata(self) -> Dict[str, str]:
        """The GGUF metadata whose values are not arrays, each value as text
        (as llama.cpp's ``llama_model_meta_*`` give it), in file order."""
        return self._engine.metadata()

    @property
    def chat_template(self) -> Optional[str]:
        """The Jinja template :meth:`chat` uses: the one given, else the model's (None if it has none)."""
        return self._chat_template if self._chat_template is not None else self._engine.chat_template()

    def stats(self) -> Dict[str, Any]:
        """The engine's counters now: ``n_slots``, ``n_running`` and
        ``n_waiting`` requests, ``n_requests`` finished, ``n_prompt_tokens``
        decoded, ``n_cached_tokens`` reused, ``n_generated_tokens``,
        ``prompt_seconds`` and ``generation_seconds`` spent, ``kv_used`` of
        ``kv_size`` KV cells."""
        return self._engine.stats()

    def __repr__(self) -> str:
        return f"hearth.Model({self.path!r}, {self._info['desc']}, gpu_layers={self.gpu_layers})"

    # --------------------------------------------------------------- tokens

    def tokenize(self, text: Union[str, bytes], add_special: bool = True, parse_special: bool = True) -> List[int]:
        """Token ids of ``text``. ``add_special``: add BOS/EOS as the model's
        flags say; ``parse_special``: read special tokens written in the
        text (``"<|im_start|>"``) as such."""
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        return self._engine.tokenize(data, add_special, parse_special)

    def detokenize(self, tokens: Sequence[int], special: bool = False) -> str:
        """The text of ``tokens`` (invalid UTF-8 becomes U+FFFD). ``special``:
        include the text of control tokens such as ``"<|im_end|>"``."""
        return self._engine.detokenize(list(tokens), special)

    # ----------------------------------------------------------- embeddings

    def _embed(self, texts: Union[str, Sequence[str]], normalize: bool, pooling: Optional[str]) -> Tuple[bytes, int, int]:
        """The vectors as native float32 bytes, their width and count."""
        if pooling not in _POOLING:
            raise InvalidArgumentError(f"pooling must be None, 'mean', 'cls', 'last' or 'none', got {pooling!r}", 1)
        items = [texts] if isinstance(texts, str) else list(texts)
        for i, text in enumerate(items):
            if not isinstance(text, str):
                raise InvalidArgumentError(f"texts must be a str or a sequence of str; item {i} is {text!r}", 1)
        data, n_embd = self._engine.embed([t.encode("utf-8") for t in items], _POOLING[pooling], bool(normalize))
        return data, n_embd, len(items)

    def embed(self, texts: Union[str, Sequence[str]], normalize: bool = True,
              pooling: Optional[str] = None) -> Union[List[float], List[List[float]]]:
        """Embeddings of texts: one vector of :attr:`n_embd` floats per text.

        Each text is tokenized with the model's special tokens (``[CLS] ...
        [SEP]`` for BERT), its tokens' hidden states are pooled into one
        vector by the library, and the vector is scaled to unit L2 norm (so
        the dot product of two is their cosine similarity). Several texts
        run together in one batch, each as a sequence of its own; the
        result does not depend on which texts share a batch.

        Args:
            texts: a str (one vector back) or a sequence of str (a list of
                vectors, in the same order; [] gives []).
            normalize: scale each vector to unit L2 norm (default True, as
                sentence-transformers' Normalize and llama.cpp's server);
                False gives the pooled vector as it is.
            pooling: how a text's token states become one vector: None (the
                default) the model's own (the GGUF's ``pooling_type``: mean
                for all-MiniLM), "mean", "cls" (the first token's) or "last"
                (the last token's, as decoder embedding models need). A
                generation model has no pooling of its own: give "last" or
                "mean". "none" is refused (it gives no vector per text).

        Returns:
            A list of ``n_embd`` floats for a str, else a list of such lists.

        Raises:
            InvalidArgumentError: a text that is not a str or gives no token,
                a bad pooling, pooling none (given, or the model's), or the
                model is closed.
            ContextFullError: a text longer than the model's context
                (:attr:`n_ctx_train` tokens).
            OutOfMemoryError, DeviceError: as the library's context creation.

        Thread-safe: each call computes in a context of its own, without
        the GIL, beside the model's generation requests.
        """
        from array import array
        data, n_embd, n = self._embed(texts, normalize, pooling)
        flat = array("f")
        flat.frombytes(data)
        rows = [flat[i * n_embd:(i + 1) * n_embd].tolist() for i in range(n)]
        return rows[0] if isinstance(texts, str) else rows

    def embed_numpy(self, texts: Union[str, Sequence[str]], normalize: bool = True,
                    pooling: Optional[str] = None) -> Any:
        """:meth:`embed` as a numpy array of float32: shape ``(n_embd,)`` for a
        str, ``(len(texts), n_embd)`` for a sequence. numpy is imported
        here only (hearth does not depend on it): ImportError without it."""
        import numpy
        data, n_embd, n = self._embed(texts, normalize, pooling)
        out = numpy.frombuffer(data, dtype=numpy.float32).reshape(n, n_embd).copy()
        return out[0] if isinstance(texts, str) else out

    def rerank(self, query: str, documents: Sequence[str]) -> List[float]:
        """A reranker's relevance score of each document for the query.

        The model must be a cross-encoder with a classification head (a GGUF
        whose ``pooling_type`` is rank, such as bge-reranker). Each pair is
        tokenized by the library as llama.cpp's server does it (``[CLS]
        query [SEP] document`` for BERT) and scored by the head; the pairs
        run together in batches.

        Args:
            query: the query, a str.
            documents: a sequence of str ([] gives []).

        Returns:
            One float per document, in the order given: the head's raw logit
            (higher is more relevant; ``1 / (1 + exp(-score))`` is a
            probability for single-label cross-encoders), as llama-server's
            ``relevance_score``. Sort by it to rank.

        Raises:
            InvalidArgumentError: query or a document not a str, a model
                without a classification head, or the model is closed.
            ContextFullError: a pair longer than the model's context
                (:attr:`n_ctx_train` tokens).
            OutOfMemoryError, DeviceError: as the library's context creation.

        Thread-safe, as :meth:`embed`.
        """
        from array import array
        if not isinstance(query, str):
            raise InvalidArgumentError(f"query must be a str, got {query!r}", 1)
        if isinstance(documents, str):
            raise InvalidArgumentError("documents must be a sequence of str, not one str", 1)
        items = list(documents)
        for i, doc in enumerate(items):
            if not isinstance(doc, str):
                raise InvalidArgumentError(f"documents must be a sequence of str; item {i} is {doc!r}", 1)
        scores = array("f")
        scores.frombytes(self._engine.rerank(query.encode("utf-8"), [d.encode("utf-8") for d in items]))
        return scores.tolist()

    # ------------------------------------------------------------- requests

    def _submit(self, prompt: Any, kind: str, max_tokens: Optional[int], temperature: float, top_k: int,
                top_p: float, min_p: float, repeat_penalty: float, seed: Optional[int],
                stop: Union[None, str, Sequence[str]], presence_penalty: float, frequency_penalty: float,
                ignore_eos: bool, logit_bias: Optional[Mapping[Union[int, str], float]], grammar: Optional[str],
                json_schema: Optional[Schema], response_format: Optional[ResponseFormat] = None,
                tools: Optional[Sequence[Tool]] = None, tool_choice: Optional[ToolChoice] = None,
                parallel_tool_calls: bool = True) -> Any:
        if kind == "text" and not isinstance(prompt, str):
            kind, prompt = "tokens", [int(t) for t in prompt]
        if max_tokens is None:
            max_tokens = -1
        elif _check_int("max_tokens", max_tokens, -1) == 0:
            raise InvalidArgumentError("max_tokens must be positive, or -1 / None for 'until the context is full'", 1)
        stops = [stop] if isinstance(stop, str) else list(stop or [])
        if seed is None:
            seed = secrets.randbits(64)
        grammar, schema = _structured.constraint(response_format, json_schema, grammar)
        return self._engine.submit(prompt, kind, max_tokens, float(temperature), int(top_k), float(top_p),
                                   float(min_p), float(repeat_penalty), float(presence_penalty),
                                   float(frequency_penalty), int(seed) & (2**64 - 1), stops, bool(ignore_eos),
                                   _logit_bias(logit_bias), grammar, schema, _structured.tools_json(tools),
                                   _structured.tool_choice_name(tool_choice, tools), bool(parallel_tool_calls))

    @staticmethod
    def _pieces(req: Any) -> Iterator[_Piece]:
        """A request's pieces as they arrive; leaving early cancels it."""
        try:
            while True:
                piece = _Piece(req.next())
                yield piece
                if piece.finish:
                    return
        finally:
            req.cancel()

    @staticmethod
    async def _apieces(req: Any) -> AsyncIterator[_Piece]:
        """The same for asyncio: waits on the request's descriptor, never blocking the loop."""
        loop = asyncio.get_running_loop()
        arrived = asyncio.Event()
        fd = req.fileno()
        loop.add_reader(fd, arrived.set)
        try:
            while True:
                got = req.poll()
                if got is None:
                    await arrived.wait()
                    arrived.clear()
                    continue
                piece = _Piece(got)
                yield piece
                if piece.finish:
                    return
        finally:
            loop.remove_reader(fd)
            req.cancel()

    def generate(self, prompt: Prompt, max_tokens: Optional[int] = 128, temperature: float = 0.8, top_k: int = 40,
                 top_p: float = 0.95, min_p: float = 0.05, repeat_penalty: float = 1.0, seed: Optional[int] = None,
                 stop: Union[None, str, Sequence[str]] = None, presence_penalty: float = 0.0,
                 frequency_penalty: float = 0.0, ignore_eos: bool = False,
                 logit_bias: Optional[Mapping[Union[int, str], float]] = None, grammar: Optional[str] = None,
                 json_schema: Optional[Schema] = None) -> str:
        """Generates text that continues ``prompt`` and returns it.

        Args:
            prompt: text (tokenized with BOS as the model wants and special
                tokens parsed) or a sequence of token ids.
            max_tokens: tokens to generate at most; None or -1: until an
                end-of-generation token or the request's context is full.
            temperature: 0 is greedy (the most likely token each step).
            top_k, top_p, min_p: truncation samplers (<= 0, 1, 0 disable them).
            repeat_penalty: CTRL-style penalty on the last 64 tokens (1 disables).
            seed: for the random draws; None: a fresh random seed.
            stop: a string or strings that end the text (not included).
            presence_penalty, frequency_penalty: OpenAI's, in [-2, 2].
            ignore_eos: keep generating past end-of-generation tokens.
            logit_bias: ``{token id: bias}`` (OpenAI's; ids as ints or digit
                strings): each bias, a finite number, is added to the token's
                logit before sampling; -100 or less bans the token.
            grammar: GBNF rules (llama.cpp's format, start rule ``root``): only
                tokens the grammar admits are sampled, and the text ends only
                where it is a whole sentence of it (finish reason "grammar"
                when the grammar admits no token at all).
            json_schema: a JSON Schema (a dict, its JSON text, or a pydantic
                model class): the text is JSON the schema accepts, through the
                grammar :func:`hearth.json_schema_to_grammar` gives (its subset
                of JSON Schema). At most one of grammar and json_schema.

        Raises:
            InvalidArgumentError: a bad parameter or the model is closed; a
                grammar or schema that does not compile (the library's
                message: "grammar line L column C: ...", or the schema's path
                and the unsupported keyword); a logit_bias token outside the
                vocabulary.
            ContextFullError: the prompt leaves no room in a request's context.
            BusyError: too many requests are waiting.
            GenerationError: a forward pass failed.
        KeyboardInterrupt (Ctrl-C) cancels the request and leaves the model usable.
        """
        req = self._submit(prompt, "text", max_tokens, temperature, top_k, top_p, min_p, repeat_penalty, seed, stop,
                           presence_penalty, frequency_penalty, ignore_eos, logit_bias, grammar, json_schema)
        return "".join(p.text for p in self._pieces(req))

    def stream(self, prompt: Prompt, max_tokens: Optional[int] = 128, temperature: float = 0.8, top_k: int = 40,
               top_p: float = 0.95, min_p: float = 0.05, repeat_penalty: float = 1.0, seed: Optional[int] = None,
               stop: Union[None, str, Sequence[str]] = None, presence_penalty: float = 0.0,
               frequency_penalty: float = 0.0, ignore_eos: bool = False,
               logit_bias: Optional[Mapping[Union[int, str], float]] = None, grammar: Optional[str] = None,
               json_schema: Optional[Schema] = None) -> Iterator[str]:
        """Like :meth:`generate`, but a generator that yields the text in
        pieces (whole UTF-8 characters) as they are decoded. Leaving the loop
        (``break``, an exception, or closing the generator) cancels the
        request. The request is queued at once, before the first piece is asked for."""
        req = self._submit(prompt, "text", max_tokens, temperature, top_k, top_p, min_p, repeat_penalty, seed, stop,
                           presence_penalty, frequency_penalty, ignore_eos, logit_bias, grammar, json_schema)
        return (p.text for p in self._pieces(req) if p.text)

    def chat(self, messages: Sequence[Message], stream: bool = False, max_tokens: Optional[int] = None,
             temperature: float = 0.8, top_k: int = 40, top_p: float = 0.95, min_p: float = 0.05,
             repeat_penalty: float = 1.0, seed: Optional[int] = None, stop: Union[None, str, Sequence[str]] = None,
             presence_penalty: float = 0.0, frequency_penalty: float = 0.0, ignore_eos: bool = False,
             response_format: Optional[ResponseFormat] = None, tools: Optional[Sequence[Tool]] = None,
             tool_choice: Optional[ToolChoice] = None, parallel_tool_calls: bool = True,
             logit_bias: Optional[Mapping[Union[int, str], float]] = None, grammar: Optional[str] = None,
             json_schema: Optional[Schema] = None) -> Any:
        """Answers a conversation, rendered with the chat template.

        Args:
            messages: OpenAI-style ``[{"role": "user", "content": "Hi"}, ...]``
                (content a str, None, or a list of ``{"type": "text", "text":
                ...}`` parts, joined with newlines). Every field reaches the
                chat template as given:
                an assistant's ``tool_calls`` (``[{"id", "type": "function",
                "function": {"name", "arguments"}}]``, arguments a JSON str or
                a dict) and a ``"tool"`` message's ``tool_call_id`` and ``name``.
            stream: False: return an OpenAI ``chat.completion`` dict
                (``choices[0]["message"]["content"]``, ``finish_reason``,
                ``usage``); True: a generator of ``chat.completion.chunk`` dicts.
            response_format: OpenAI's ``{"type": "text"}`` (the default),
                ``{"type": "json_object"}`` (the content is a JSON object) or
                ``{"type": "json_schema", "json_schema": {"name": ...,
                "schema": {...}, "strict": True}}`` (JSON the schema accepts, as
                ``json_schema`` below); or a pydantic model class, for its
                ``model_json_schema()``. At most one of response_format (JSON),
                json_schema and grammar.
            tools: OpenAI's tool definitions, ``[{"type": "function",
                "function": {"name", "description", "parameters": {JSON
                Schema}}}]``, shown to the model through its chat template;
                None or [] for none. The model's calls come back in
                ``message["tool_calls"]`` (``[{"id", "type": "function",
                "function": {"name", "arguments"}}]``, arguments a JSON str
                that the function's parameters schema accepts; content None
                when the model wrote only calls) with finish reason
                "tool_calls"; streamed, as ``delta["tool_calls"]`` chunks
                (``[{"index", "id", "type", "function": {"name",
                "arguments"}}]``, id, type and name in a call's first chunk,
                the arguments' text running on over the next). The call format
                (Hermes/Qwen ``<tool_call>``, Llama 3, Mistral, or a generic
                JSON form) follows the chat template. Tools exclude
                response_format, json_schema and grammar.
            tool_choice: "auto" (None too: text or calls), "none" (text only),
                "required" (at least one call), or a function by its name or
                as ``{"type": "function", "function": {"name": ...}}``
                (exactly that function). Only with tools.
            parallel_tool_calls: whether the model may make several calls in
                one turn (default True).
            the rest: as :meth:`generate` (max_tokens None: until the model stops).

        Raises: as :meth:`generate`, and UnsupportedError / ModelFormatError
        when the chat template fails, InvalidArgumentError when the model has
        none, or for tools the library refuses (its message names the tool
        and field: a missing name, a parameters schema that does not compile,
        a tool_choice naming no given tool). Values JSON cannot hold in
        messages or tools raise TypeError (ValueError for NaN).
        """
        req = self._submit(_chat.messages_json(messages), "chat", max_tokens, temperature, top_k, top_p, min_p,
                           repeat_penalty, seed, stop, presence_penalty, frequency_penalty, ignore_eos, logit_bias,
                           grammar, json_schema, response_format, tools, tool_choice, parallel_tool_calls)
        reply = _chat.Reply(req.id, self.path)
        if stream:
            return (chunk for p in self._pieces(req) for chunk in reply.chunks(p))
        for p in self._pieces(req):
            reply.add(p)
        return reply.completion()

    # ---------------------------------------------------------------- async

    async def astream(self, prompt: Prompt, **kwargs: Any) -> AsyncIterator[str]:
        """:meth:`stream` for asyncio: ``async for piece in model.astream(...)``.
        Waits without blocking the event loop; leaving the loop cancels."""
        req = self._submit(prompt, "text", **self._sampling(Model.stream, kwargs))
        async for p in self._apieces(req):
            if p.text:
                yield p.text

    async def agenerate(self, prompt: Prompt, **kwargs: Any) -> str:
        """:meth:`generate` for asyncio (``await model.agenerate(...)``)."""
        return "".join([piece async for piece in self.astream(prompt, **kwargs)])

    async def achat(self, messages: Sequence[Message], **kwargs: Any) -> Dict[str, Any]:
        """:meth:`chat` for asyncio, returning the ``chat.completion`` dict."""
        req = self._submit(_chat.messages_json(messages), "chat", **self._sampling(Model.chat, kwargs))
        reply = _chat.Reply(req.id, self.path)
        async for p in self._apieces(req):
            reply.add(p)
        return reply.completion()

    @staticmethod
    def _sampling(like: Callable[..., Any], kwargs: Dict[str, Any]) -> Dict[str, Any]:
        """The request options of ``like`` (stream or chat) with its defaults,
        overridden by kwargs; an unknown name raises TypeError as a call would."""
        bound = inspect.signature(like).bind_partial(**kwargs)
        bound.apply_defaults()
        return {k: v for k, v in bound.arguments.items() if k not in ("self", "prompt", "messages", "stream")}

    # -------------------------------------------------------------- closing

    def close(self) -> None:
        """Frees the model and its engine now (GPU memory too). Requests
        still running end; later calls raise InvalidArgumentError."""
        self._engine.close()

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
