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
 * Model class, async iteration, AbortSignal, OpenAI-shaped chat results.
 * index.d.ts documents the API (types, units, defaults, errors). */

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

/* One request to the engine, as an async generator of text. Nothing is
 * submitted until the first next(); `end` receives the last take() result
 * ({finish, promptTokens, completionTokens ...}). break / return() and the
 * signal cancel the request (hearth_engine_cancel: it ends within one
 * engine step). */
async function* requestText(model, handle, prompt, messages, options, end) {
  const signal = options && options.signal;
  if (signal) signal.throwIfAborted();
  const waiting = { resolve: null };
  const request = native.submit(handle, prompt, messages, options, waker(waiting));
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
      if (got.text) yield got.text;
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

function usageOf(end) {
  return {
    prompt_tokens: end.promptTokens,
    completion_tokens: end.completionTokens,
    total_tokens: end.promptTokens + end.completionTokens,
  };
}

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

  /** The engine's counters (requests, tokens, seconds, KV cells in use). */
  stats() {
    return native.modelStats(this.#handle);
  }

  /** The text generated after `prompt`. */
  async generate(prompt, options = {}) {
    let text = '';
    for await (const piece of requestText(this, this.#handle, prompt, null, options, {})) text += piece;
    return text;
  }

  /** The text generated after `prompt`, as it is made. */
  stream(prompt, options = {}) {
    return requestText(this, this.#handle, prompt, null, options, {});
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
    for await (const piece of requestText(this, this.#handle, null, messages, options, end)) content += piece;
    return {
      ...head,
      choices: [{ index: 0, message: { role: 'assistant', content }, logprobs: null, finish_reason: end.finish }],
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
    const text = requestText(this, this.#handle, null, messages, options, end);
    let first = true;
    for await (const piece of text) {
      yield chunk(first ? { role: 'assistant', content: piece } : { content: piece }, null);
      first = false;
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
};
