'use strict';
// model.rerank() on the tiny BERT cross-encoder
// (tests/reference/encoder/tiny-reranker-f32.gguf) against llama.cpp's
// scores (tests/reference/encoder/encoder_reference.json).
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { top, hearth } = require('./common');
const { Model, HearthError } = hearth;

const ENCODERS = path.join(top, 'tests', 'reference', 'encoder');
const DATA = JSON.parse(fs.readFileSync(path.join(ENCODERS, 'encoder_reference.json'), 'utf8'));
const REC = (DATA.models || DATA).find((m) => m.rank && m.file.endsWith('-f32.gguf'));
const FILE = path.join(ENCODERS, path.basename(REC.file));
const QUERY = REC.rank.pairs[0].query;
const DOCS = REC.rank.pairs.map((p) => p.document);
const SCORES = REC.rank.scores.map((s) => s[0]);
// |hearth - llama.cpp| a score may differ by: hearth attends over its F16 KV
// cache, llama.cpp over F32 K and V, and llama.cpp's GELU goes through an F16
// table (tests/test_tiny_encoders.c: max_diff_for, half the F32 bound)
const close = (got, want) => Math.abs(got - want) <= 1e-3;

test('rerank gives llama.cpp\'s scores', async () => {
  const m = await Model.load(FILE);
  try {
    const got = await m.rerank(QUERY, DOCS);
    assert.ok(got instanceof Float32Array && got.length === DOCS.length);
    for (const [i, want] of SCORES.entries()) assert.ok(close(got[i], want), `${got[i]} vs ${want}`);
    const alone = await m.rerank(QUERY, [DOCS[0]]);
    assert.ok(close(alone[0], SCORES[0]));
    assert.strictEqual((await m.rerank(QUERY, [])).length, 0);
    await assert.rejects(m.rerank(3, ['a']), (e) => e instanceof HearthError && e.code === 'ERR_INVALID_ARG');
    await assert.rejects(m.rerank('q', 'a'), (e) => e instanceof HearthError && e.code === 'ERR_INVALID_ARG');
    await assert.rejects(m.rerank('q', ['a', 3]), (e) => e instanceof HearthError && e.code === 'ERR_INVALID_ARG');
    await assert.rejects(m.embed('a'), (e) => e instanceof HearthError && e.code === 'ERR_INVALID_ARG');
  } finally {
    m.dispose();
  }
});

test('a model without a classification head does not rerank', async () => {
  const m = await Model.load(path.join(ENCODERS, 'tiny-bert-f32.gguf'));
  try {
    await assert.rejects(m.rerank('q', ['a']),
      (e) => e instanceof HearthError && e.code === 'ERR_INVALID_ARG' && /classification head/.test(e.message));
  } finally {
    m.dispose();
  }
});
