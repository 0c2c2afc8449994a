'use strict';
// Loading, the model's facts, the vocabulary, module functions, and errors:
// every failure is a HearthError with hearth's message and the right code.
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { top, hearth, MODEL } = require('./common');
const { Model, HearthError } = hearth;

test('new Model and Model.load give the same facts and metadata', async () => {
  const a = new Model(MODEL);
  const b = await Model.load(MODEL, { nCtx: 1024, nSeqMax: 2, nThreads: 1 });
  assert.ok(b instanceof Model);
  for (const m of [a, b]) {
    assert.strictEqual(m.nLayer, 30);
    assert.strictEqual(m.nCtxTrain, 8192);
    assert.strictEqual(m.nVocab, 49152);
    assert.strictEqual(m.gpuLayers, 0); // no GPU in this build or machine, or none asked for
    assert.strictEqual(m.name, 'SmolLM2-135M-Instruct.Q4_1.gguf');
    assert.match(m.description, /^llama 135M Q4_1$/);
    assert.strictEqual(m.metadata['general.architecture'], 'llama');
    assert.strictEqual(m.metadata['llama.block_count'], '30');
    assert.ok(!('tokenizer.ggml.tokens' in m.metadata), 'arrays are left out, as llama.cpp does');
  }
  assert.strictEqual(b.nCtx, 1024); // each request's
  assert.strictEqual(b.stats().kvSize, 2048);
  assert.strictEqual(b.nSeqMax, 2);
  a.dispose();
  b.dispose();
});

test('useMmap false (the file read into huge pages) gives the mapped model\'s greedy text', async () => {
  const opts = { maxTokens: 12, temperature: 0 };
  const mapped = new Model(MODEL);
  const read = await Model.load(MODEL, { useMmap: false, useMlock: true });
  const prompt = 'The capital of France is';
  assert.strictEqual(await read.generate(prompt, opts), await mapped.generate(prompt, opts));
  mapped.dispose();
  read.dispose();
});

test('tokenize and detokenize round-trip', () => {
  const m = new Model(MODEL);
  const ids = m.tokenize('Hello world');
  assert.deepStrictEqual(ids, [19556, 905]);
  assert.strictEqual(m.detokenize(ids), 'Hello world');
  const chat = m.tokenize('<|im_start|>user');
  assert.strictEqual(chat[0], m.tokenize('<|im_start|>')[0]);
  assert.ok(m.tokenize('<|im_start|>', { parseSpecial: false }).length > 1);
  assert.strictEqual(m.detokenize(chat), 'user'); // control tokens render as nothing by default
  assert.strictEqual(m.detokenize(chat, { special: true }), '<|im_start|>user');
  assert.throws(() => m.detokenize([1e9]), { name: 'HearthError', code: 'ERR_INVALID_ARG' });
  m.dispose();
});

test('module functions describe the machine', () => {
  assert.strictEqual(typeof hearth.supportsGpuOffload(), 'boolean');
  const devices = hearth.gpuDevices();
  assert.ok(Array.isArray(devices));
  assert.ok(!hearth.supportsGpuOffload() || devices.length > 0);
  for (const d of devices) {
    assert.ok(d.totalMemory > 0 && typeof d.name === 'string' && typeof d.isGpu === 'boolean');
    assert.match(d.id, /^(cuda|opencl)\d+$/);
    assert.ok(d.id.startsWith(d.backend) && d.backendLabel.toLowerCase() === d.backend);
  }
  assert.match(hearth.systemInfo(), /^hearth \d+\.\d+\.\d+; cpu: /);
});

test('devices picks where layers go: a tiny model on an OpenCL device gives the CPU\'s greedy text', async (t) => {
  const tiny = path.join(top, 'tests', 'reference', 'arch', 'llama3-f32.gguf');
  const ocl = hearth.gpuDevices().find((d) => d.id.startsWith('opencl'));
  if (!ocl) return t.skip('no OpenCL device');
  const cpu = new Model(tiny, { nCtx: 64 });
  const dev = new Model(tiny, { nCtx: 64, nGpuLayers: -1, devices: ocl.id });
  assert.strictEqual(dev.gpuLayers, dev.nLayer + 1);
  const opts = { maxTokens: 8, temperature: 0 };
  assert.strictEqual(await dev.generate('Hello', opts), await cpu.generate('Hello', opts));
  cpu.dispose();
  dev.dispose();
  assert.throws(() => new Model(tiny, { nGpuLayers: -1, devices: 'nosuchdevice0' }), { code: 'ERR_INVALID_ARG' });
  const fit = new Model(tiny, { nCtx: 64, nGpuLayers: 'auto', devices: ocl.id });
  assert.strictEqual(fit.gpuLayers, fit.nLayer + 1); // a tiny model fits whole
  fit.dispose();
});

test('a missing file rejects with HearthError ERR_IO', async () => {
  const missing = path.join(os.tmpdir(), 'hearth-no-such-model.gguf');
  assert.throws(() => new Model(missing), (e) => e instanceof HearthError && e.code === 'ERR_IO' && e.message.includes(missing));
  await assert.rejects(Model.load(missing), (e) => e instanceof HearthError && e.code === 'ERR_IO');
});

test('a file that is not GGUF rejects with HearthError ERR_FORMAT', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hearth-node-'));
  const bad = path.join(dir, 'garbage.gguf');
  fs.writeFileSync(bad, Buffer.from('this is not a GGUF file at all\x00\x01\x02'));
  try {
    assert.throws(() => new Model(bad), { name: 'HearthError', code: 'ERR_FORMAT' });
    await assert.rejects(Model.load(bad), (e) => e instanceof HearthError && e.code === 'ERR_FORMAT' && !e.message.includes('\n'));
  } finally {
    fs.rmSync(dir, { recursive: true });
  }
});

test('bad options and arguments throw ERR_INVALID_ARG naming them', async () => {
  assert.throws(() => new Model(MODEL, { nGpuLayers: 'all' }), { code: 'ERR_INVALID_ARG', message: /nGpuLayers/ });
  assert.throws(() => new Model(MODEL, { nCtx: -1 }), { code: 'ERR_INVALID_ARG', message: /nCtx/ });
  assert.throws(() => new Model(MODEL, { nUbatch: 0 }), { code: 'ERR_INVALID_ARG', message: /nUbatch/ });
  for (const [name, value] of [['yarnOrigCtx', -1], ['yarnOrigCtx', 2 ** 31], ['ropeFreqScale', -0.5], ['ropeFreqBase', '1e4'],
    ['yarnBetaFast', NaN], ['yarnExtFactor', Infinity], ['ropeScalingType', 'ntk'], ['ropeScalingType', 2], ['nKeep', -2],
    ['contextShift', 'yes']]) {
    assert.throws(() => new Model(MODEL, { [name]: value }), { code: 'ERR_INVALID_ARG', message: new RegExp(name) }, `${name}: ${value}`);
  }
  assert.throws(() => new Model(MODEL, { splitMode: 'diagonal' }), { code: 'ERR_INVALID_ARG', message: /splitMode/ });
  assert.throws(() => new Model(42), { code: 'ERR_INVALID_ARG', message: /path must be a string/ });
  await assert.rejects(Model.load(MODEL, { useMmap: 'yes' }), { code: 'ERR_INVALID_ARG', message: /useMmap/ });
  assert.throws(() => new Model(MODEL, { flashAttn: 'fast' }), { code: 'ERR_INVALID_ARG', message: /flashAttn/ });
  await assert.rejects(Model.load(MODEL, { flashAttn: 1 }), { code: 'ERR_INVALID_ARG', message: /flashAttn/ });
  assert.throws(() => new Model(MODEL, { chatTemplate: 42 }), { code: 'ERR_INVALID_ARG', message: /chatTemplate/ });
  const m = new Model(MODEL);
  await assert.rejects(m.generate('x', { maxTokens: 1.5 }), { code: 'ERR_INVALID_ARG', message: /maxTokens/ });
  await assert.rejects(m.generate('x', { topP: 2 }), { code: 'ERR_INVALID_ARG', message: /top_p/ });
  await assert.rejects(m.generate('x', { seed: -1 }), { code: 'ERR_INVALID_ARG', message: /seed/ });
  await assert.rejects(m.generate('x', { stop: [''] }), { code: 'ERR_INVALID_ARG', message: /stop/ });
  await assert.rejects(m.generate('x', { ignoreEos: 'yes' }), { code: 'ERR_INVALID_ARG', message: /ignoreEos/ });
  await assert.rejects(m.generate(7), { code: 'ERR_INVALID_ARG', message: /prompt must be a string/ });
  await assert.rejects(m.chat([{ role: 'user' }]), { code: 'ERR_INVALID_ARG', message: /messages\[0\]\.content/ });
  assert.throws(() => m.tokenize(null), { code: 'ERR_INVALID_ARG' });
  m.dispose();
});

test('a prompt longer than a slot rejects with ERR_CONTEXT_FULL', async () => {
  const m = new Model(MODEL, { nCtx: 64, nSeqMax: 1 });
  await assert.rejects(m.generate('word '.repeat(100)), { code: 'ERR_CONTEXT_FULL' });
  m.dispose();
});

test('a disposed model throws ERR_DISPOSED; dispose is idempotent', async () => {
  const m = new Model(MODEL);
  m.dispose();
  m.dispose();
  assert.strictEqual(m.disposed, true);
  assert.strictEqual(m.nLayer, 30); // facts read at load stay
  assert.throws(() => m.tokenize('x'), { code: 'ERR_DISPOSED' });
  await assert.rejects(m.generate('x'), { code: 'ERR_DISPOSED' });
  if (typeof Symbol.dispose === 'symbol') {
    const n = new Model(MODEL);
    n[Symbol.dispose]();
    assert.strictEqual(n.disposed, true);
  }
});
