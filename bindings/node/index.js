'use strict';
/* hearth for Node.js: run GGUF language models from JavaScript.
 *
 *   const { Model } = require('hearth');
 *   const model = await Model.load('SmolLM2-135M-Instruct.Q4_1.gguf');
 *   console.log(await model.generate('The capital of France is', { maxTokens: 16 }));
 *
 * A thin layer over the native addon hearth.node (bindings/node/src/, C on
 * Node-API), which is itself a client of hearth's C library: every
 * generate, stream and chat is a request to the Model's hearth_engine, the
 * one scheduler that batches them; its thread generates, so the event loop
 * never waits for the model. This file adds what is JavaScript's: the
 * Model class, async iteration, AbortSignal, OpenAI-shaped chat results
 * (tool calls too), and OpenAI's structured-output and tool options as the
 * JSON text the library takes. index.d.ts documents the API (types, units,
 * defaults, errors). */

const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');

/** Every failure: hearth's one-line message and a code ('ERR_IO', ...). */
class HearthError extends Error {
  constructor(message, code) {
    super(message);
    this.name = 'HearthError';
    this.code = code;
  }
}

/* The addon: $HEARTH_NODE_ADDON when set; else hearth.node beside this file
 * (an installed package carries it there); else the repository's release
 * build (build/hearth.node, two folders up). */
function loadAddon() {
  const candidates = process.env.HEARTH_NODE_ADDON
    ? [path.resolve(process.env.HEARTH_NODE_ADDON)]
    : [path.join(__dirname, 'hearth.node'), path.join(__dirname, '..', '..', 'build', 'hearth.node')];
  const found = candidates.find((p) => fs.existsSync(p));
  if (!found) {
    throw new HearthError(
      `hearth.node not found (looked for ${candidates.join(', ')}): build it with scripts/build.sh, ` +
        'or set HEARTH_NODE_ADDON to its path',
      'ERR_ADDON_NOT_FOUND',
    );
  }
  return require(found);
}

const native = loadAddon();
native.setErrorClass(HearthError);

const kAdopt = Symbol('adopt a native model handle');

function disposedError() {
  return new HearthError('the model has been disposed', 'ERR_DISPOSED');
}

/* The function the addon calls when a request has news: it resolves the
 * promise the request's reader awaits, if any. It is made out here so that
 * it holds `waiting` alone: the addon keeps it strongly, and were it a
 * closure in requestText it would keep the request's handle alive too, and
 * an abandoned stream could never be collected (and so cancelled). */
function waker(waiting) {
  return () => {
    const resolve = waiting.resolve;
    waiting.resolve = null;
    if (resolve) resolve();
  };
}

function invalid(message) {
  return new HearthError(message, 'ERR_INVALID_ARG');
}

/* A JSON Schema as JSON text: an object or boolean is serialized, a string
 * is taken as JSON text. */
function schemaText(what, schema) {
  if (typeof schema === 'string') return schema;
  const object = schema && typeof schema === 'object' && !Array.isArray(schema);
  if (object || typeof schema === 'boolean') return JSON.stringify(schema);
  throw invalid(`${what} must be a JSON Schema (an object or its JSON text)`);
}

/* The schema text OpenAI's response_format asks for; null for 'text'. */
function responseFormatSchema(format) {
  if (format == null || format.type === 'text') return null;
  if (format.type === 'json_object') return '{"type":"object"}';
  if (format.type !== 'json_schema') {
    throw invalid("options.responseFormat must be { type: 'text' | 'json_object' | 'json_schema', ... }");
  }
  const spec = format.json_schema;
  if (!spec || typeof spec !== 'object' || spec.schema === undefined) {
    throw invalid('options.responseFormat.json_schema must be an object with a schema ({ name, schema, strict })');
  }
  return schemaText('options.responseFormat.json_schema.schema', spec.schema);
}

/* The addon's constraints ({grammar, jsonSchema, tools, toolChoice}: text
 * or null) from the options that constrain the text and the tool options.
 * Only shapes are checked here: the library compiles the grammar or schema
 * and checks the tools, and its message names what is wrong. */
function constraintsOf(options) {
  const o = options || {};
  const schema = o.jsonSchema == null ? null : schemaText('options.jsonSchema', o.jsonSchema);
  const schemas = [responseFormatSchema(o.responseFormat), schema].filter((s) => s !== null);
  if (o.grammar != null && typeof o.grammar !== 'string') throw invalid('options.grammar must be a string of GBNF rules');
  if (schemas.length + (o.grammar != null) > 1) {
    throw invalid('give one of options.responseFormat (json_object or json_schema), options.jsonSchema and options.grammar');
  }
  if (o.tools != null && !Array.isArray(o.tools)) {
    throw invalid("options.tools must be an array of { type: 'function', function: { name, parameters } } objects");
  }
  let toolChoice = null;
  if (o.toolChoice != null) {
    toolChoice = typeof o.toolChoice === 'string' ? o.toolChoice : o.toolChoice.function && o.toolChoice.function.name;
    if (typeof toolChoice !== 'string' || !toolChoice) {
      throw invalid(
        "options.toolChoice must be 'auto', 'none', 'required', a function's name or { type: 'function', function: { name } }",
      );
    }
    if (o.tools == null) throw invalid('options.toolChoice is only allowed with options.tools');
  }
  const tools = o.tools && o.tools.length ? JSON.stringify(o.tools) : null;
  return { grammar: o.grammar ?? null, jsonSchema: schemas[0] ?? null, tools, toolChoice: tools ? toolChoice : null };
}

/* The conversation as the JSON text the engine renders: every field of
 * every message is passed on to the chat template (an assistant's
 * tool_calls, a tool message's tool_call_id and name). */
function messagesJson(messages) {
  if (!Array.isArray(messages)) throw invalid('messages must be an array of { role, content } objects');
  messages.forEach((m, i) => {
    if (!m || typeof m !== 'object' || typeof m.role !== 'string') throw invalid(`messages[${i}].role must be a string`);
    const c = m.content;
    const parts = Array.isArray(c) && c.every((p) => p && p.type === 'text' && typeof p.text === 'string');
    if (typeof c !== 'string' && c !== null && !parts) {
      throw invalid(`messages[${i}].content must be a string, null or an array of { type: 'text', text } parts`);
    }
  });
  return JSON.stringify(messages);
}

/* One request to the engine, as an async generator of what take() gives
 * ({text, toolCalls, ...}, each with text or tool-call deltas). Nothing is
 * submitted until the first next(); `end` receives the last take() result
 * ({finish, promptTokens, completionTokens ...}). break / return() and the
 * signal cancel the request (hearth_engine_cancel: it ends within one
 * engine step). */
async function* requestPieces(model, handle, prompt, messages, options, end) {
  const signal = options && options.signal;
  if (signal) signal.throwIfAborted();
  const waiting = { resolve: null };
  const conversation = messages === null ? null : messagesJson(messages);
  const request = native.submit(handle, prompt, conversation, options, constraintsOf(options), waker(waiting));
  const abort = () => native.cancel(request);
  if (signal) signal.addEventListener('abort', abort);
  try {
    for (;;) {
      if (signal && signal.aborted) throw signal.reason;
      const got = native.take(request);
      if (got === null) {
        await new Promise((resolve) => {
          waiting.resolve = resolve;
        });
        continue;
      }
      if (got.finish === 'cancelled') {
        if (signal && signal.aborted) throw signal.reason;
        throw model.disposed ? disposedError() : new HearthError('the request was cancelled', 'ERR_CANCELLED');
      }
      if (got.finish === 'error') throw new HearthError(got.error, 'ERR_GENERATION');
      if (got.text || got.toolCalls.length) yield got;
      if (got.finish) {
        Object.assign(end, got);
        return;
      }
    }
  } finally {
    if (signal) signal.removeEventListener('abort', abort);
    native.cancel(request); /* a no-op once it has ended */
  }
}

/* The text of a request, as an async generator (requestPieces' texts). */
async function* requestText(model, handle, prompt, options) {
  for await (const got of requestPieces(model, handle, prompt, null, options, {})) if (got.text) yield got.text;
}

/* OpenAI's streamed tool-call delta of a take() delta: id, type and name
 * only in a call's first. */
function callDelta(d) {
  const delta = { index: d.index };
  if (d.id !== null) Object.assign(delta, { id: d.id, type: 'function' });
  delta.function = d.name === null ? { arguments: d.arguments } : { name: d.name, arguments: d.arguments };
  return delta;
}

function usageOf(end) {
  return {
    prompt_tokens: end.promptTokens,
    completion_tokens: end.completionTokens,
    total_tokens: end.promptTokens + end.completionTokens,
  };
}

/* hearth_pooling_type by name (null: the model's). */
const POOLING = { null: -1, none: 0, mean: 1, cls: 2, last: 3 };

class Model {
  #handle;
  #info;
  #metadata;
  #disposed = false;

  /**
   * Loads a GGUF model on the calling thread (blocking it for the load);
   * `await Model.load()` loads on a worker thread instead.
   */
  constructor(modelPath, options = {}) {
    this.#handle = modelPath === kAdopt ? options : native.modelLoad(modelPath, options);
    this.#info = Object.freeze(native.modelInfo(this.#handle));
    this.#metadata = Object.freeze(native.modelMetadata(this.#handle));
  }

  /** Loads a GGUF model off the main thread. */
  static async load(modelPath, options = {}) {
    return new Model(kAdopt, await native.modelLoadAsync(modelPath, options));
  }

  get name() { return this.#info.name; }
  get description() { return this.#info.description; }
  get nLayer() { return this.#info.nLayer; }
  get nCtxTrain() { return this.#info.nCtxTrain; }
  get nCtx() { return this.#info.nCtx; }
  get nSeqMax() { return this.#info.nSeqMax; }
  get nVocab() { return this.#info.nVocab; }
  get nEmbd() { return this.#info.nEmbd; }
  get nParams() { return this.#info.nParams; }
  get size() { return this.#info.size; }
  get gpuLayers() { return this.#info.gpuLayers; }
  get metadata() { return this.#metadata; }
  get disposed() { return this.#disposed; }

  tokenize(text, options) {
    return native.tokenize(this.#handle, text, options);
  }

  detokenize(tokens, options) {
    return native.detokenize(this.#handle, tokens, options);
  }

  /**
   * Embeddings of a text (one Float32Array of nEmbd floats) or of an array
   * of texts (an array of them, in order), computed on a worker thread.
   */
  async embed(texts, options = {}) {
    const one = typeof texts === 'string';
    if (!one && !Array.isArray(texts)) {
      throw new HearthError(`texts must be a string or an array of strings (got ${typeof texts})`, 'ERR_INVALID_ARG');
    }
    const opts = options ?? {};
    const pooling = opts.pooling ?? null;
    if (!Object.prototype.hasOwnProperty.call(POOLING, String(pooling))) {
      throw new HearthError(`options.pooling must be 'mean', 'cls', 'last', 'none' or null (got ${String(pooling)})`, 'ERR_INVALID_ARG');
    }
    const normalize = opts.normalize ?? true;
    if (typeof normalize !== 'boolean') {
      throw new HearthError(`options.normalize must be a boolean (got ${typeof normalize})`, 'ERR_INVALID_ARG');
    }
    if (this.#disposed) throw disposedError();
    const list = one ? [texts] : texts;
    if (!list.length) return [];
    const vectors = await native.embed(this.#handle, list, POOLING[String(pooling)], normalize);
    return one ? vectors[0] : vectors;
  }

  /**
   * A reranker's relevance score of each document for `query` (one
   * Float32Array, in the documents' order), computed on a worker thread.
   */
  async rerank(query, documents) {
    if (typeof query !== 'string') {
      throw new HearthError(`query must be a string (got ${typeof query})`, 'ERR_INVALID_ARG');
    }
    if (!Array.isArray(documents)) {
      throw new HearthError(`documents must be an array of strings (got ${typeof documents})`, 'ERR_INVALID_ARG');
    }
    if (this.#disposed) throw disposedError();
    if (!documents.length) return new Float32Array(0);
    return native.rerank(this.#handle, query, documents);
  }

  /** The engine's counters (requests, tokens, seconds, KV cells in use). */
  stats() {
    return native.modelStats(this.#handle);
  }

  /** The text generated after `prompt`. */
  async generate(prompt, options = {}) {
    let text = '';
    for await (const piece of requestText(this, this.#handle, prompt, options)) text += piece;
    return text;
  }

  /** The text generated after `prompt`, as it is made. */
  stream(prompt, options = {}) {
    return requestText(this, this.#handle, prompt, options);
  }

  /**
   * Answers a conversation ([{role, content}], rendered with the model's
   * chat template): an OpenAI-shaped chat.completion, or with
   * { stream: true } an async iterable of chat.completion.chunk objects.
   */
  chat(messages, options = {}) {
    return options && options.stream ? this.#chatChunks(messages, options) : this.#chatCompletion(messages, options);
  }

  async #chatCompletion(messages, options) {
    const head = this.#chatHead('chat.completion');
    const end = {};
    let content = '';
    const calls = [];
    for await (const got of requestPieces(this, this.#handle, null, messages, options, end)) {
      content += got.text;
      for (const d of got.toolCalls) {
        if (d.index === calls.length) calls.push({ id: d.id, type: 'function', function: { name: d.name, arguments: '' } });
        calls[d.index].function.arguments += d.arguments;
      }
    }
    const message = { role: 'assistant', content: calls.length && !content ? null : content };
    if (calls.length) message.tool_calls = calls;
    return {
      ...head,
      choices: [{ index: 0, message, logprobs: null, finish_reason: end.finish }],
      usage: usageOf(end),
    };
  }

  async *#chatChunks(messages, options) {
    const head = this.#chatHead('chat.completion.chunk');
    const chunk = (delta, finish) => ({
      ...head,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    });
    const end = {};
    let first = true;
    for await (const got of requestPieces(this, this.#handle, null, messages, options, end)) {
      if (got.text) yield chunk(first ? { role: 'assistant', content: got.text } : { content: got.text }, null);
      first &&= !got.text;
      /* each tool-call delta in a chunk of its own, as OpenAI streams them */
      for (const d of got.toolCalls) {
        const delta = { tool_calls: [callDelta(d)] };
        yield chunk(first ? { role: 'assistant', content: null, ...delta } : delta, null);
        first = false;
      }
    }
    yield chunk(first ? { role: 'assistant', content: '' } : {}, end.finish);
  }

  #chatHead(object) {
    return {
      id: `chatcmpl-${crypto.randomBytes(8).toString('hex')}`,
      object,
      created: Math.floor(Date.now() / 1000),
      model: this.#info.name,
    };
  }

  /**
   * Frees the model and its engine now: running requests end (their
   * iterators throw HearthError ERR_DISPOSED) and later calls throw
   * ERR_DISPOSED. Idempotent.
   */
  dispose() {
    this.#disposed = true;
    native.modelDispose(this.#handle);
  }
}

if (typeof Symbol.dispose === 'symbol') {
  Model.prototype[Symbol.dispose] = function dispose() {
    this.dispose();
  };
}

module.exports = {
  Model,
  HearthError,
  gpuDevices: () => native.gpuDevices(),
  supportsGpuOffload: () => native.supportsGpuOffload(),
  systemInfo: () => native.systemInfo(),
  jsonSchemaToGrammar: (schema) => native.jsonSchemaToGrammar(schemaText('schema', schema)),
};
