'use strict';
// Generation through the engine: greedy text equal to `hearth run`'s (with
// either flashAttn, the rope and YaRN overrides, a context shift), the event loop running during generation, four streams
// at once equal to one at a time, ignoreEos, chat results in OpenAI's
// shape, a chatTemplate of one's own.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const { execFileSync } = require('node:child_process');
const { hearth, MODEL, HEARTH_BIN, PROMPTS, LONG_PROMPT, collect } = require('./common');
const { Model } = hearth;

const model = new Model(MODEL);
test.after(() => model.dispose());

test('greedy text equals `hearth run --temp 0`', { skip: !fs.existsSync(HEARTH_BIN) && `${HEARTH_BIN} not built` }, async () => {
  for (const prompt of PROMPTS.slice(0, 4)) {
    const want = execFileSync(HEARTH_BIN, ['run', MODEL, prompt, '-n', '32', '--temp', '0'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    assert.ok(want.length > 0);
    assert.strictEqual(await model.generate(prompt, { maxTokens: 32, temperature: 0 }), want, `prompt ${JSON.stringify(prompt)}`);
  }
});

test('flashAttn off and on give `hearth run -fa off` and `-fa on`', { skip: !fs.existsSync(HEARTH_BIN) && `${HEARTH_BIN} not built` }, async () => {
  const prompt = PROMPTS[1];
  for (const [fa, same] of [['off', false], ['on', true]]) {
    const want = execFileSync(HEARTH_BIN, ['run', MODEL, prompt, '-n', '64', '--temp', '0', '-fa', fa], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    for (const flashAttn of [fa, same]) {
      const m = new Model(MODEL, { flashAttn });
      assert.strictEqual(await m.generate(prompt, { maxTokens: 64, temperature: 0 }), want, `flashAttn ${flashAttn}`);
      m.dispose();
    }
  }
});

test('typeK and typeV give `hearth run -ctk` and `-ctv`; bad types throw naming them', { skip: !fs.existsSync(HEARTH_BIN) && `${HEARTH_BIN} not built` }, async () => {
  const prompt = PROMPTS[0];
  const want = execFileSync(HEARTH_BIN, ['run', MODEL, prompt, '-n', '32', '--temp', '0', '-ctk', 'q8_0', '-ctv', 'q4_0'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const m = new Model(MODEL, { typeK: 'q8_0', typeV: 2 }); // ggml's number for q4_0
  assert.strictEqual(await m.generate(prompt, { maxTokens: 32, temperature: 0 }), want);
  m.dispose();
  for (const [name, value] of [['typeK', 'q5_0'], ['typeV', 3], ['typeK', true]]) {
    assert.throws(() => new Model(MODEL, { [name]: value }), { code: 'ERR_INVALID_ARG', message: new RegExp(name) }, `${name}: ${value}`);
  }
  // llama.cpp refuses a quantized V cache without flash attention too
  assert.throws(() => new Model(MODEL, { typeV: 'q8_0', flashAttn: 'off' }), { code: 'ERR_INVALID_ARG', message: /flash_attn/ });
});

// Model options and the `hearth run` flags that mean the same (llama.cpp's
// --rope-* / --yarn-*; SmolLM2's file says rope.freq_base 1e5, no scaling).
const ROPE_OVERRIDES = [
  [{ ropeFreqScale: 0.5 }, ['--rope-freq-scale', '0.5']],
  [
    { ropeScalingType: 'yarn', ropeFreqScale: 0.25, ropeFreqBase: 50000, yarnOrigCtx: 2048, yarnBetaFast: 16, yarnBetaSlow: 2 },
    ['--rope-scaling', 'yarn', '--rope-freq-scale', '0.25', '--rope-freq-base', '50000', '--yarn-orig-ctx', '2048',
      '--yarn-beta-fast', '16', '--yarn-beta-slow', '2'],
  ],
  [
    { ropeScalingType: 'linear', ropeFreqScale: 0.5, yarnExtFactor: 0.5, yarnAttnFactor: 0.9 },
    ['--rope-scaling', 'linear', '--rope-freq-scale', '0.5', '--yarn-ext-factor', '0.5', '--yarn-attn-factor', '0.9'],
  ],
];

async function ropeText(prompt, opts) {
  const m = new Model(MODEL, { flashAttn: 'off', ...opts });
  try {
    return await m.generate(prompt, { maxTokens: 32, temperature: 0 });
  } finally {
    m.dispose();
  }
}

test('rope and YaRN options reach the library: other text, `hearth run`\'s with the same flags', async () => {
  const prompt = 'The capital of France is';
  const plain = await ropeText(prompt, {});
  for (const [opts, flags] of ROPE_OVERRIDES) {
    const text = await ropeText(prompt, opts);
    assert.notStrictEqual(text, plain, JSON.stringify(opts));
    if (!fs.existsSync(HEARTH_BIN)) continue;
    const want = execFileSync(HEARTH_BIN, ['run', MODEL, prompt, '-n', '32', '--temp', '0', '-fa', 'off', ...flags], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    assert.strictEqual(text, want, JSON.stringify(opts));
  }
  // the model's own base, and a scale that scaling 'none' ignores: the plain text
  assert.strictEqual(await ropeText(prompt, { ropeFreqBase: 100000, ropeScalingType: 'none', ropeFreqScale: 0.5 }), plain);
});

test('contextShift goes past a full context, as `hearth run --context-shift` does', async () => {
  const prompt = 'Once upon a time';
  const texts = [];
  for (const contextShift of [false, true]) {
    const m = new Model(MODEL, { nCtx: 64, nSeqMax: 1, contextShift, nKeep: 2 });
    texts.push(await m.generate(prompt, { maxTokens: 150, temperature: 0 }));
    // without the shift: every cell decoded, then one last token sampled
    const room = 64 - m.tokenize(prompt).length + 1;
    assert.strictEqual(m.stats().nGeneratedTokens, contextShift ? 150 : room, `contextShift ${contextShift}`);
    m.dispose();
  }
  if (!fs.existsSync(HEARTH_BIN)) return;
  const want = execFileSync(HEARTH_BIN, ['run', MODEL, prompt, '-n', '150', '--temp', '0', '-c', '64', '--context-shift', '--keep', '2'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  assert.strictEqual(texts[1], want);
});

test('a timer keeps firing while a generation runs', async () => {
  let ticks = 0;
  let last = Date.now();
  let maxGap = 0;
  const timer = setInterval(() => {
    const now = Date.now();
    maxGap = Math.max(maxGap, now - last);
    last = now;
    ticks++;
  }, 5);
  const t0 = Date.now();
  const text = await model.generate(LONG_PROMPT, { maxTokens: 64, temperature: 0 });
  const elapsed = Date.now() - t0;
  clearInterval(timer);
  assert.ok(text.length > 0);
  assert.ok(ticks >= 5, `only ${ticks} ticks in ${elapsed} ms of generation`);
  assert.ok(maxGap < 250, `the event loop stalled for ${maxGap} ms`);
});

test('four streams at once give the texts of one at a time', async () => {
  const prompts = PROMPTS.slice(0, 4);
  const opts = { maxTokens: 24, temperature: 0 };
  const alone = [];
  for (const p of prompts) alone.push(await collect(model.stream(p, opts)));
  let peak = 0;
  const probe = setInterval(() => {
    peak = Math.max(peak, model.stats().nRunning);
  }, 2);
  const together = await Promise.all(prompts.map((p) => collect(model.stream(p, opts))));
  clearInterval(probe);
  assert.deepStrictEqual(together, alone);
  assert.ok(peak >= 2, `at most ${peak} request(s) ran at once`);
});

test('sampling: equal seeds give equal text, stop strings cut the text', async () => {
  const opts = { maxTokens: 24, temperature: 1.0, seed: 1234 };
  const a = await model.generate('Once upon a time', opts);
  assert.strictEqual(await model.generate('Once upon a time', { ...opts, seed: 1234n }), a);
  const full = await model.generate(LONG_PROMPT, { maxTokens: 32, temperature: 0 });
  const cut = await model.generate(LONG_PROMPT, { maxTokens: 32, temperature: 0, stop: '\n' });
  assert.strictEqual(cut, full.slice(0, full.indexOf('\n')));
});

test('ignoreEos generates past the end-of-generation token', async () => {
  const messages = [{ role: 'user', content: 'Say hi.' }];
  const ended = await model.chat(messages, { maxTokens: 64, temperature: 0 });
  assert.strictEqual(ended.choices[0].finish_reason, 'stop', 'the reply should end before 64 tokens');
  const going = await model.chat(messages, { maxTokens: 64, temperature: 0, ignoreEos: true });
  assert.strictEqual(going.choices[0].finish_reason, 'length');
  assert.strictEqual(going.usage.completion_tokens, 64);
  assert.ok(going.choices[0].message.content.startsWith(ended.choices[0].message.content));
});

test('chat returns an OpenAI chat.completion', async () => {
  const messages = [{ role: 'user', content: 'What is the capital of France?' }];
  const r = await model.chat(messages, { maxTokens: 16, temperature: 0 });
  assert.match(r.id, /^chatcmpl-[0-9a-f]+$/);
  assert.strictEqual(r.object, 'chat.completion');
  assert.ok(Number.isInteger(r.created) && Math.abs(r.created - Date.now() / 1000) < 60);
  assert.strictEqual(r.model, 'SmolLM2-135M-Instruct.Q4_1.gguf');
  assert.strictEqual(r.choices.length, 1);
  const [c] = r.choices;
  assert.strictEqual(c.index, 0);
  assert.strictEqual(c.message.role, 'assistant');
  assert.ok(c.message.content.length > 0);
  assert.ok(['stop', 'length'].includes(c.finish_reason));
  assert.strictEqual(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  assert.ok(r.usage.completion_tokens <= 16 && r.usage.prompt_tokens > 5);
  if (c.finish_reason === 'length') assert.strictEqual(r.usage.completion_tokens, 16);
});

test('chat with stream: true yields chunks that add up to the same answer', async () => {
  const messages = [{ role: 'user', content: 'What is the capital of France?' }];
  const whole = await model.chat(messages, { maxTokens: 16, temperature: 0 });
  const chunks = [];
  for await (const c of model.chat(messages, { maxTokens: 16, temperature: 0, stream: true })) chunks.push(c);
  assert.ok(chunks.length >= 2);
  const ids = new Set(chunks.map((c) => c.id));
  assert.strictEqual(ids.size, 1);
  for (const c of chunks) assert.strictEqual(c.object, 'chat.completion.chunk');
  assert.strictEqual(chunks[0].choices[0].delta.role, 'assistant');
  const last = chunks[chunks.length - 1].choices[0];
  assert.deepStrictEqual(last.delta, {});
  assert.strictEqual(last.finish_reason, whole.choices[0].finish_reason);
  for (const c of chunks.slice(0, -1)) assert.strictEqual(c.choices[0].finish_reason, null);
  assert.strictEqual(chunks.map((c) => c.choices[0].delta.content || '').join(''), whole.choices[0].message.content);
});

test('chatTemplate replaces the model\'s chat template', async () => {
  const m = new Model(MODEL, { chatTemplate: '{{ messages[0].content }}' }); // the bare text, no roles
  const opts = { maxTokens: 16, temperature: 0 };
  const r = await m.chat([{ role: 'user', content: LONG_PROMPT }], opts);
  assert.strictEqual(r.choices[0].message.content, await model.generate(LONG_PROMPT, opts));
  assert.strictEqual(r.usage.prompt_tokens, model.tokenize(LONG_PROMPT).length);
  m.dispose();
});
