// Types of the hearth package (index.js): run GGUF language models from
// Node.js. Every generation is a request to the Model's engine (hearth's
// one scheduler, on its own thread): requests made at once are batched
// together, and the event loop never waits for the model.
//
// Errors: every failure is a HearthError whose `code` names its kind (see
// HearthErrorCode); bad arguments throw synchronously for the sync calls
// and reject for the async ones (a stream throws on its first next()).

/** The kinds of failure, after hearth_status (include/hearth.h). */
export type HearthErrorCode =
  | 'ERR_INVALID_ARG' // a parameter is out of range or of the wrong type
  | 'ERR_IO' // a file could not be opened, read or mapped (e.g. a missing model file, or a model name not in the store while offline)
  | 'ERR_FORMAT' // a file is malformed (not GGUF, truncated, inconsistent)
  | 'ERR_UNSUPPORTED' // valid input hearth cannot run (architecture, tensor type, template feature)
  | 'ERR_OUT_OF_MEMORY' // host or GPU memory ran out (the message gives MiB needed and free)
  | 'ERR_CONTEXT_FULL' // the prompt does not fit a slot's context (raise nCtx)
  | 'ERR_DEVICE' // a GPU failed
  | 'ERR_BUSY' // the engine's wait queue (64 requests) is full: retry later
  | 'ERR_NETWORK' // fetching a model by name failed: host unknown or unreachable, HTTP 401/403/404, cut too often
  | 'ERR_GENERATION' // the forward pass failed during generation
  | 'ERR_CANCELLED' // the request was cancelled other than by its signal or dispose(), or a download was stopped
  | 'ERR_DISPOSED' // the model was disposed (before or during the call)
  | 'ERR_ADDON_NOT_FOUND'; // hearth.node is missing (thrown by require('hearth'))

export class HearthError extends Error {
  constructor(message: string, code: HearthErrorCode);
  readonly name: 'HearthError';
  /** hearth's one-line message says what is wrong and what to do. */
  readonly message: string;
  readonly code: HearthErrorCode;
}

/** How a model is loaded and its engine set up. Every field is optional. */
export interface ModelOptions {
  /**
   * Layers to place on GPUs: 0 (default) none, N the first N blocks, -1 all
   * of them and the output layer, 'auto' as many as fit in the GPUs' free
   * memory beside the KV cache of nCtx x nSeqMax tokens in typeK/typeV (nCtx unset: one
   * request's default context), 256 MiB of buffers and a 5% margin
   * (`gpuLayers` then says how many). Without a usable GPU the model runs on
   * the CPU and `gpuLayers` reports 0 (see supportsGpuOffload(),
   * systemInfo()). Anything else throws ERR_INVALID_ARG.
   */
  nGpuLayers?: number | 'auto';
  /** With several GPUs: 'layer' (default) spreads runs of layers over them, 'none' puts all on mainGpu; 'row' is not supported yet (ERR_UNSUPPORTED). */
  splitMode?: 'none' | 'layer' | 'row';
  /** With splitMode 'layer': proportions of the offloaded layers per GPU (default: by free memory). */
  tensorSplit?: number[];
  /** The device of splitMode 'none', an index into the devices used (default 0). */
  mainGpu?: number;
  /**
   * Where offloaded layers go, by id, comma-separated ('cuda0', 'opencl0,opencl1';
   * see gpuDevices()). Default: the HEARTH_DEVICE environment variable, else every
   * CUDA device, else every OpenCL GPU (an OpenCL CPU device such as PoCL's only when named).
   */
  devices?: string;
  /**
   * The context of each request in tokens (prompt and generated text); the
   * KV cache holds nCtx × nSeqMax. 0 (default): the model's nCtxTrain, at most 4096.
   */
  nCtx?: number;
  /** Most tokens of one engine step (prompt chunks; default 512). */
  nBatch?: number;
  /**
   * Most tokens of one forward pass (llama.cpp's --ubatch-size; default 512,
   * at most nBatch): a step of more runs in passes of nUbatch, and the
   * activation buffers are sized for it.
   */
  nUbatch?: number;
  /** CPU threads; 0 (default) = the physical cores. */
  nThreads?: number;
  /** Slots: requests generating at once (default 4, at most 256); more wait in a queue of 64. */
  nSeqMax?: number;
  /**
   * Map the file instead of reading it (default true). false reads it into
   * private memory advised as transparent huge pages (Linux): faster CPU
   * decode, a slower load, memory not shared with other processes.
   */
  useMmap?: boolean;
  /** Lock the weights in RAM (default false). */
  useMlock?: boolean;
  /**
   * How attention runs on the CPU (llama.cpp's --flash-attn). 'auto'
   * (default) and 'on' (or true): the tiled FlashAttention path, much faster
   * on long prompts and deep contexts, equal to 'off' within float rounding
   * (a near tie may pick another greedy token). 'off' (or false): llama.cpp's
   * order of operations without flash attention, bit for bit, for
   * comparisons with llama.cpp. Layers on a GPU ignore it.
   */
  flashAttn?: 'auto' | 'on' | 'off' | boolean;
  /**
   * The KV cache's element type for keys (llama.cpp's --cache-type-k): 'f16'
   * (default, 2 bytes an element), 'bf16' (2 bytes), 'q8_0' (34 bytes per 32
   * elements) or 'q4_0' (18 bytes per 32); ggml's numbers 1, 30, 8, 2 too.
   * The quantized types need the model's head size to be a multiple of 32.
   * GPU layers take 'f16' only (another type fails with ERR_UNSUPPORTED when
   * layers are offloaded).
   */
  typeK?: 'f16' | 'bf16' | 'q8_0' | 'q4_0' | number;
  /**
   * The same for values (llama.cpp's --cache-type-v); 'q8_0' and 'q4_0' need
   * flashAttn 'auto' or 'on', as in llama.cpp (ERR_INVALID_ARG otherwise).
   */
  typeV?: 'f16' | 'bf16' | 'q8_0' | 'q4_0' | number;
  /**
   * How rotary positions stretch past the trained context (llama.cpp's
   * --rope-scaling): 'none', 'linear' or 'yarn' (YaRN, arXiv:2309.00071).
   * Default: the model's rope.scaling.type.
   */
  ropeScalingType?: 'none' | 'linear' | 'yarn';
  /** The RoPE theta base (>= 0); 0 (default): the model's rope.freq_base. */
  ropeFreqBase?: number;
  /**
   * The position scale, 1 / the context stretch (llama.cpp's
   * --rope-freq-scale; --rope-scale 4 is 0.25), >= 0; 0 (default): the
   * model's (1 / rope.scaling.factor, or 1). Ignored with ropeScalingType 'none'.
   */
  ropeFreqScale?: number;
  /** YaRN's extrapolation mix (finite); negative (default -1): 1 with YaRN scaling, else 0 (off). */
  yarnExtFactor?: number;
  /** The attention magnitude factor without YaRN (YaRN computes its own; finite); negative (default -1): 1. */
  yarnAttnFactor?: number;
  /** YaRN's ramp end in rotations (finite); negative (default -1): 32. */
  yarnBetaFast?: number;
  /** YaRN's ramp start in rotations (finite); negative (default -1): 1. */
  yarnBetaSlow?: number;
  /**
   * The context in tokens the model was trained with before its scaling, an
   * integer >= 0; 0 (default): the model's rope.scaling.original_context_length,
   * else its context length.
   */
  yarnOrigCtx?: number;
  /**
   * When a generation reaches the end of its slot's context: false (default)
   * it ends (a chat's finish_reason 'length'); true drops the oldest half of the
   * tokens after the first nKeep prompt tokens, re-rotating the cached keys,
   * and goes on (llama-server's --context-shift).
   */
  contextShift?: boolean;
  /** With contextShift: prompt tokens after the BOS always kept; -1 the whole prompt; default 0 (the BOS alone). */
  nKeep?: number;
  /**
   * A Jinja chat template (its text, Hugging Face's format) that chat()
   * renders conversations with, instead of the model's own
   * (tokenizer.chat_template, the default).
   */
  chatTemplate?: string;
}

/** Options of Model.embed(). Every field is optional. */
export interface EmbedOptions {
  /**
   * Scale each vector to unit L2 norm (default true, as sentence-transformers'
   * Normalize and llama.cpp's server do: the dot product of two is then
   * their cosine similarity); false gives the pooled vector as it is.
   */
  normalize?: boolean;
  /**
   * How a text's token states become one vector: null or undefined (the
   * default) the model's own (the GGUF's pooling_type: mean for
   * all-MiniLM), 'mean', 'cls' (the first token's) or 'last' (the last
   * token's, as decoder embedding models need). A generation model has no
   * pooling of its own: give 'last' or 'mean'. 'none' is refused (it gives
   * no vector per text).
   */
  pooling?: 'mean' | 'cls' | 'last' | 'none' | null;
}

/** Sampling and limits of one request. Every field is optional. */
export interface GenerateOptions {
  /** Tokens to generate at most; -1 (default): until an end-of-generation token or a full slot context. */
  maxTokens?: number;
  /** Softmax temperature; 0 or less = greedy (argmax). Default 0.8. */
  temperature?: number;
  /** Keep the k most likely tokens; 0 or less disables. Default 40. */
  topK?: number;
  /** Nucleus sampling: smallest set with probability >= topP, in (0, 1]; 1 disables. Default 0.95. */
  topP?: number;
  /** Drop tokens below minP x the top probability, in [0, 1]; 0 disables. Default 0.05. */
  minP?: number;
  /** Penalty on the last repeatLastN tokens (> 0); 1 disables (default). */
  repeatPenalty?: number;
  /** How many recent tokens the penalties see. Default 64. */
  repeatLastN?: number;
  /** OpenAI's presence penalty in [-2, 2]. Default 0. */
  presencePenalty?: number;
  /** OpenAI's frequency penalty in [-2, 2]. Default 0. */
  frequencyPenalty?: number;
  /** Random seed (integer up to 2^53, or a BigInt below 2^64); equal seeds give equal text. Default: a fresh one per request. */
  seed?: number | bigint;
  /** Stop strings: the text ends before the first one (which is not included). */
  stop?: string | string[];
  /** Keep generating past end-of-generation tokens (until maxTokens or a full slot context; default false). */
  ignoreEos?: boolean;
  /**
   * OpenAI's logit_bias: { "token id": bias }, each bias (a finite number) added to that token's logit
   * before sampling; -100 or less bans the token. A key that is not a token id, or an id outside the
   * vocabulary, rejects with ERR_INVALID_ARG. Default: none.
   */
  logitBias?: Record<number | string, number>;
  /**
   * GBNF rules (llama.cpp's notation, start rule `root`): only tokens the grammar admits are sampled,
   * and the text ends only where it is a whole sentence of it (finish_reason 'grammar' when the
   * grammar admits no token at all). Rules that do not compile reject with ERR_INVALID_ARG and the
   * library's "grammar line L column C: ..." message.
   */
  grammar?: string;
  /**
   * A JSON Schema (an object, or its JSON text): the text is JSON the schema accepts, through the
   * grammar jsonSchemaToGrammar() gives. A keyword outside the supported subset rejects with
   * ERR_INVALID_ARG naming it. At most one of grammar, jsonSchema and (chat) a JSON responseFormat.
   */
  jsonSchema?: JsonSchema | string;
  /** Cancels the request (within one engine step); the call then rejects / the iterator throws signal.reason. */
  signal?: AbortSignal;
}

/** A JSON Schema as an object (or true / false). */
export type JsonSchema = { [key: string]: unknown } | boolean;

/** OpenAI's response_format: plain text (the default), any JSON object, or JSON a schema accepts. */
export type ResponseFormat =
  | { type: 'text' }
  | { type: 'json_object' }
  | { type: 'json_schema'; json_schema: { name?: string; schema: JsonSchema | string; strict?: boolean; description?: string } };

/** OpenAI's function tool definition. */
export interface Tool {
  type: 'function';
  function: {
    name: string;
    description?: string;
    /** A JSON Schema of the arguments (an object schema); the call's arguments always validate against it. */
    parameters?: JsonSchema;
  };
}

/** 'auto' (text or calls), 'none' (text only), 'required' (at least one call), or exactly one function, by name or in OpenAI's object form. */
export type ToolChoice = 'auto' | 'none' | 'required' | string | { type: 'function'; function: { name: string } };

/** Options of chat(): those of generate() and OpenAI's structured-output and tool fields. */
export interface ChatOptions extends GenerateOptions {
  /**
   * OpenAI's response_format: { type: 'json_object' } makes the content a JSON object,
   * { type: 'json_schema', json_schema: { name, schema, strict } } JSON the schema accepts (as jsonSchema).
   * Default { type: 'text' }.
   */
  responseFormat?: ResponseFormat;
  /**
   * Functions the model may call, shown to it through its chat template (the call format,
   * Hermes/Qwen <tool_call>, Llama 3, Mistral or a generic JSON form, follows the template). Calls come
   * back in message.tool_calls with finish_reason 'tool_calls', streamed as delta.tool_calls. Default: none
   * ([] too). Bad definitions (no name, a parameters schema that does not compile) reject with
   * ERR_INVALID_ARG naming the tool. Tools exclude grammar, jsonSchema and a JSON responseFormat.
   */
  tools?: Tool[];
  /** Default 'auto'. Only with tools (ERR_INVALID_ARG otherwise); a name that is not among the tools rejects with ERR_INVALID_ARG. */
  toolChoice?: ToolChoice;
  /** Whether the model may make several calls in one turn. Default true. */
  parallelToolCalls?: boolean;
}

/** A call the model made (OpenAI's shape); arguments is JSON text its function's parameters schema accepts. */
export interface ToolCall {
  id: string; // "call_" and 24 letters or digits
  type: 'function';
  function: { name: string; arguments: string };
}

/** A streamed part of a call: id, type and name in the call's first delta, then the arguments' text in pieces. */
export interface ToolCallDelta {
  index: number; // the call's place in message.tool_calls
  id?: string;
  type?: 'function';
  function: { name?: string; arguments: string };
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool' | string;
  /** Text, null (an assistant message with only tool_calls), or text parts (joined with newlines). */
  content: string | null | { type: 'text'; text: string }[];
  /** An assistant's earlier calls (arguments as JSON text or an object). */
  tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string | object } }[];
  /** A 'tool' message: the call it answers, and the function's name. */
  tool_call_id?: string;
  name?: string;
  /** Every other field reaches the chat template as given. */
  [field: string]: unknown;
}

/** 'tool_calls': the model called tools; 'grammar': the grammar admitted no further token. */
export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'grammar';

/** OpenAI's chat.completion object. */
export interface ChatCompletion {
  id: string; // "chatcmpl-..."
  object: 'chat.completion';
  created: number; // Unix time, seconds
  model: string; // the model file's name
  choices: [
    {
      index: 0;
      /** content is null when the model only called tools. */
      message: { role: 'assistant'; content: string | null; tool_calls?: ToolCall[] };
      logprobs: null;
      finish_reason: FinishReason;
    },
  ];
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}

/**
 * OpenAI's chat.completion.chunk object: the first carries the role, the last the finish_reason and an
 * empty delta; each tool-call delta comes in a chunk of its own.
 */
export interface ChatCompletionChunk {
  id: string;
  object: 'chat.completion.chunk';
  created: number;
  model: string;
  choices: [
    {
      index: 0;
      delta: { role?: 'assistant'; content?: string | null; tool_calls?: [ToolCallDelta] };
      logprobs: null;
      finish_reason: FinishReason | null;
    },
  ];
}

/** The engine's counters (hearth_engine_stats). */
export interface EngineStats {
  nSlots: number;
  nRunning: number; // requests in slots
  nWaiting: number; // requests queued for a slot
  nRequests: number; // requests finished, any reason
  nPromptTokens: number; // prompt tokens decoded (reused ones not counted)
  nCachedTokens: number; // prompt tokens reused from a slot's cache
  nGeneratedTokens: number;
  promptSeconds: number;
  generationSeconds: number;
  kvUsed: number; // KV cells holding tokens
  kvSize: number; // nCtx × nSeqMax
}

export class Model {
  /**
   * Loads a GGUF model and starts its engine, blocking the calling thread
   * for the load (use Model.load() to keep the event loop running). `path`
   * is a .gguf file or a model name as the hearth command takes it
   * ('llama3.2:1b', 'hf.co/OWNER/REPO:QUANT', 'ollama:NAME:TAG', an http(s)
   * URL), downloaded into the model store (HEARTH_MODELS, default
   * ~/.cache/hearth) first when it is not there (ERR_UNKNOWN for a
   * network failure, with hearth's one-line message).
   * Throws HearthError: ERR_IO (missing or unreadable file), ERR_FORMAT (not
   * GGUF, truncated, malformed), ERR_UNSUPPORTED, ERR_OUT_OF_MEMORY,
   * ERR_INVALID_ARG (bad options), ERR_DEVICE.
   */
  constructor(path: string, options?: ModelOptions);
  /** Loads on a worker thread; rejects with the constructor's errors. */
  static load(path: string, options?: ModelOptions): Promise<Model>;

  /** The model file's base name. */
  readonly name: string;
  /** E.g. "llama 135M Q4_1". */
  readonly description: string;
  readonly nLayer: number;
  /** Context length the model was trained for, tokens. */
  readonly nCtxTrain: number;
  /** The context of each request, tokens. */
  readonly nCtx: number;
  /** Slots (requests generating at once). */
  readonly nSeqMax: number;
  readonly nVocab: number;
  readonly nEmbd: number;
  /** Weights, elements. */
  readonly nParams: number;
  /** Weights, bytes. */
  readonly size: number;
  /** Layers on a GPU, counting the output layer as one (nLayer + 1 when all are); 0 on the CPU. */
  readonly gpuLayers: number;
  /** GGUF metadata, every non-array key with its value as text (as llama.cpp gives it). */
  readonly metadata: Readonly<Record<string, string>>;
  readonly disposed: boolean;

  /** Token ids of `text`; addSpecial (default true) adds BOS/EOS as the model says, parseSpecial (default true) reads "<|im_start|>"-like text as special tokens. */
  tokenize(text: string, options?: { addSpecial?: boolean; parseSpecial?: boolean }): number[];
  /** The text of `tokens` (invalid UTF-8 replaced by U+FFFD); special (default false) includes control tokens' text. */
  detokenize(tokens: number[], options?: { special?: boolean }): string;
  stats(): EngineStats;

  /**
   * Embeddings: one Float32Array of nEmbd floats for a string, or an array
   * of them (in the texts' order; [] for []) for an array of strings.
   * Each text is tokenized with the model's special tokens ([CLS] ... [SEP]
   * for BERT), its tokens' hidden states pooled into one vector and scaled
   * to unit L2 norm by the library; several texts run together in one batch,
   * each as a sequence of its own, on a worker thread in a context of the
   * call's own (the loader's nThreads, flashAttn and cache types). An
   * embedding model (bert: all-MiniLM, bge, e5, gte) loads without an
   * engine: generate(), stream() and chat() on it throw ERR_INVALID_ARG.
   * Rejects with HearthError: ERR_INVALID_ARG (texts not strings, a text
   * that gives no token, a bad option, pooling none given or the model's),
   * ERR_CONTEXT_FULL (a text longer than nCtxTrain tokens),
   * ERR_OUT_OF_MEMORY, ERR_DEVICE; ERR_DISPOSED after dispose() (a model
   * disposed while it computes stays until it ends).
   */
  embed(texts: string, options?: EmbedOptions): Promise<Float32Array>;
  embed(texts: string[], options?: EmbedOptions): Promise<Float32Array[]>;
  /**
   * A reranker's relevance score of each document for `query`: one
   * Float32Array with a score per document, in the documents' order
   * (Float32Array(0) for []). The model must be a cross-encoder with a
   * classification head (a GGUF whose pooling_type is rank, such as
   * bge-reranker); each pair is tokenized as llama.cpp's server does it
   * ([CLS] query [SEP] document for BERT) and the score is the head's raw
   * logit (higher is more relevant; 1 / (1 + exp(-score)) is a probability
   * for single-label cross-encoders), as llama-server's relevance_score.
   * Runs on a worker thread like embed(). Rejects with HearthError:
   * ERR_INVALID_ARG (query not a string, documents not an array of
   * strings, a model without a classification head), ERR_CONTEXT_FULL (a
   * pair longer than nCtxTrain tokens), ERR_OUT_OF_MEMORY, ERR_DEVICE;
   * ERR_DISPOSED after dispose().
   */
  rerank(query: string, documents: string[]): Promise<Float32Array>;

  /** The text generated after `prompt` (tokenized with special tokens). */
  generate(prompt: string, options?: GenerateOptions): Promise<string>;
  /**
   * The text as it is generated (each value is one or more pieces, whole
   * UTF-8 characters). Generation starts at the first next() and runs on
   * the engine's thread; a consumer that falls 32 pieces behind pauses its
   * request until it reads again (memory stays bounded; the request keeps
   * its slot, and the Model's other requests go on meanwhile). `break` or
   * the signal cancels it, paused or not.
   */
  stream(prompt: string, options?: GenerateOptions): AsyncIterableIterator<string>;
  /**
   * Answers a conversation rendered with the model's chat template (every field of every message
   * reaches it). Messages of the wrong shape reject with ERR_INVALID_ARG naming the message.
   */
  chat(messages: ChatMessage[], options?: ChatOptions & { stream?: false }): Promise<ChatCompletion>;
  chat(messages: ChatMessage[], options: ChatOptions & { stream: true }): AsyncIterableIterator<ChatCompletionChunk>;

  /**
   * Frees the model and its engine now (memory, threads, GPU memory).
   * Running requests end: their promises reject and iterators throw
   * HearthError ERR_DISPOSED; later calls throw ERR_DISPOSED. Idempotent.
   * A model left undisposed is freed when garbage collected or at exit.
   */
  dispose(): void;
  [Symbol.dispose](): void;
}

export interface GpuDevice {
  index: number;
  id: string; // "cuda0", "opencl1": what the devices option takes
  name: string; // "NVIDIA H100 80GB HBM3"; OpenCL: "<device> (<platform>)"
  isGpu: boolean; // false for an OpenCL CPU device (PoCL's), used only when named
  computeCapability: string; // CUDA's, "9.0"; "0.0" for OpenCL
  computeUnits: number; // CUDA multiprocessors or OpenCL compute units
  freeMemory: number; // bytes, at the call
  totalMemory: number; // bytes
  backend: string; // the backend that drives it, "cuda" or "opencl" (id's prefix)
  backendLabel: string; // the same as messages print it: "CUDA", "OpenCL"
}

/** The devices hearth can offload layers to, CUDA first, then OpenCL; [] without one. */
export function gpuDevices(): GpuDevice[];
/** Whether nGpuLayers can put layers on a GPU in this process. */
export function supportsGpuOffload(): boolean;
/** One line: version, SIMD level, backends built in, CPU cores, and the GPU state (or why there is none). */
export function systemInfo(): string;
/**
 * The GBNF grammar (start rule root) of the JSON texts a JSON Schema accepts: the grammar jsonSchema
 * and responseFormat constrain the text with. The subset: type, properties, required,
 * additionalProperties, enum, const, anyOf, oneOf, allOf of objects, $ref to #/$defs or #/definitions,
 * items, prefixItems, minItems/maxItems, minLength/maxLength, pattern, format (date, time, date-time,
 * uuid), integer minimum/maximum; annotations (title, description ...) are ignored. Throws HearthError
 * ERR_INVALID_ARG with the library's message for text that is not JSON, a keyword outside the subset
 * ("json_schema at /properties/age: unsupported keyword 'multipleOf'") or a $ref that does not resolve.
 */
export function jsonSchemaToGrammar(schema: JsonSchema | string): string;
