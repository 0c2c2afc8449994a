'use strict';
// model.embed() on all-MiniLM-L6-v2 against llama.cpp's vectors
// (tests/reference/embedding_reference.json: mean pooled, not normalised).
// Skips without the model: scripts/fetch_model.sh minilm, or set
// HEARTH_MODEL_MINILM.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { top, hearth, MODEL } = require('./common');
const { Model, HearthError } = hearth;

const MINILM = process.env.HEARTH_MODEL_MINILM || path.join(top, 'models', 'all-minilm-l6-v2-f16.gguf');
const skip = fs.existsSync(MINILM) ? false : `${MINILM} not found: run scripts/fetch_model.sh minilm`;
const REF = JSON.parse(fs.readFileSync(path.join(top, 'tests', 'reference', 'embedding_reference.json'), 'utf8'));
const CASES = ['hello', 'accents_fr', 'long'].map((n) => REF.texts.find((c) => c.name === n));

const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const cosine = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0) / (norm(a) * norm(b));
const maxDiff = (a, b) => Math.max(...Array.from(a, (x, i) => Math.abs(x - b[i])));

test('embed gives llama.cpp\'s vectors, L2-normalised', { skip }, async () => {
  const m = await Model.load(MINILM);
  try {
    assert.strictEqual(m.nEmbd, 384);
    const got = await m.embed(CASES.map((c) => c.text));
    assert.ok(Array.isArray(got) && got.length === 3);
    for (const [i, c] of CASES.entries()) {
      const v = got[i];
      assert.ok(v instanceof Float32Array && v.length === 384);
      assert.ok(Math.abs(norm(v) - 1) < 1e-5, c.name);
      const ref = c.llama_cpp.map((x) => x / norm(c.llama_cpp));
      assert.ok(cosine(v, ref) >= 0.9999, c.name);
      assert.ok(maxDiff(v, ref) < 2e-3, c.name);
    }
    // a string gives one Float32Array, the same as in a batch
    const one = await m.embed(CASES[0].text);
    assert.ok(one instanceof Float32Array && one.length === 384);
    assert.deepStrictEqual(one, got[0]);
    assert.deepStrictEqual(await m.embed([]), []);
  } finally {
    m.dispose();
  }
});

test('embed options: normalize false is the raw vector, pooling overrides', { skip }, async () => {
  const m = new Model(MINILM);
  try {
    const raw = await m.embed(CASES.map((c) => c.text), { normalize: false });
    for (const [i, c] of CASES.entries()) {
      assert.ok(cosine(raw[i], c.llama_cpp) >= 0.9999, c.name);
      assert.ok(Math.abs(norm(raw[i]) - norm(c.llama_cpp)) < 1e-3 * norm(c.llama_cpp), c.name);
    }
    const mean = await m.embed('Hello world', { pooling: 'mean' });
    assert.deepStrictEqual(mean, await m.embed('Hello world'));
    const cls = await m.embed('Hello world', { pooling: 'cls' });
    assert.ok(Math.abs(norm(cls) - 1) < 1e-5 && cosine(cls, mean) < 0.999);
  } finally {
    m.dispose();
  }
});

test('embed errors are HearthErrors with codes', { skip }, async () => {
  const m = new Model(MINILM);
  const rejects = (p, code, re) => assert.rejects(p, (e) => e instanceof HearthError && e.code === code && re.test(e.message));
  await rejects(m.embed(['short', 'word '.repeat(600)]), 'ERR_CONTEXT_FULL', /602 tokens.*512/);
  await rejects(m.embed('x', { pooling: 'max' }), 'ERR_INVALID_ARG', /pooling/);
  await rejects(m.embed('x', { pooling: 'none' }), 'ERR_INVALID_ARG', /none/);
  await rejects(m.embed('x', { normalize: 1 }), 'ERR_INVALID_ARG', /normalize/);
  await rejects(m.embed(['x', 3]), 'ERR_INVALID_ARG', /texts/);
  await rejects(m.embed(42), 'ERR_INVALID_ARG', /texts/);
  await rejects(m.generate('Hello', { maxTokens: 2 }), 'ERR_INVALID_ARG', /embedding model/);
  // disposed while computing: the call still ends, later ones are refused
  const pending = m.embed(CASES.map((c) => c.text));
  m.dispose();
  const got = await pending.catch((e) => e);
  assert.ok(Array.isArray(got) || (got instanceof HearthError), String(got));
  await rejects(m.embed('x'), 'ERR_DISPOSED', /disposed/);
});

test('a generation model embeds with pooling last', { skip: fs.existsSync(MODEL) ? false : 'no model' }, async () => {
  const m = new Model(MODEL, { nCtx: 256 });
  try {
    await assert.rejects(m.embed('Hello'), (e) => e.code === 'ERR_INVALID_ARG' && /pooling/.test(e.message));
    const [a, b] = await m.embed(['Hello', 'The capital of France'], { pooling: 'last' });
    assert.ok(a.length === m.nEmbd && Math.abs(norm(a) - 1) < 1e-4 && cosine(a, b) < 0.9999);
    assert.ok((await m.generate('Hello', { maxTokens: 2, temperature: 0 })).length > 0);
  } finally {
    m.dispose();
  }
});
