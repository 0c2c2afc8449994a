'use strict';
// What the Node package's tests share: the package under test (index.js
// here, loading $HEARTH_NODE_ADDON or the repository's build/hearth.node),
// the default model, the `hearth` command for reference texts, and small
// helpers.
const fs = require('node:fs');
const path = require('node:path');

const top = path.resolve(__dirname, '..', '..', '..');
const hearth = require('..');

const MODEL = process.env.HEARTH_MODEL || path.join(top, 'models', 'SmolLM2-135M-Instruct.Q4_1.gguf');
const HEARTH_BIN = process.env.HEARTH_BIN || path.join(top, 'build', 'hearth');

/* llama.cpp's greedy fixture (tests/reference/greedy/smollm2.json): its
 * prompts are the ones the C tests compare hearth with llama.cpp on. */
const PROMPTS = JSON.parse(fs.readFileSync(path.join(top, 'tests', 'reference', 'greedy', 'smollm2.json'), 'utf8')).cases.map(
  (c) => c.prompt,
);

/* A prompt whose greedy continuation runs 300+ tokens without an
 * end-of-generation token on the default model. */
const LONG_PROMPT = 'The capital of France is';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function collect(iterable) {
  let text = '';
  for await (const piece of iterable) text += piece;
  return text;
}

/* Waits until cond() holds, polling every 10 ms, at most `ms`; returns cond(). */
async function until(cond, ms) {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await sleep(10);
  return cond();
}

module.exports = { top, hearth, MODEL, HEARTH_BIN, PROMPTS, LONG_PROMPT, sleep, collect, until };
